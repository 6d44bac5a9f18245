import sys

from miotui.cli import main

sys.exit(main())
