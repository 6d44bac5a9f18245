#!/usr/bin/env python3
"""Write a synthetic MIOpen log of a ResNet-50 training run (thin wrapper).

The logic lives in the ``miotui.samplegen`` package so the installed package can use it for
``miotui --demo``; this script only makes it runnable from a checkout without installing.

Examples (from the repository root)::

    python sample_logs/generate.py --format trace55 --iterations 2 --out sample_logs/resnet50_trace55.log
    python sample_logs/generate.py --format trace2x --size 1G --out /tmp/big.log.gz
    python sample_logs/generate.py --format info --level 5 --iterations 3 --out miotui/samples/resnet50_demo.log

The bundled samples are rebuilt with ``python sample_logs/generate.py --rebuild-samples``.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from miotui import samplegen  # noqa: E402  (after the path set-up above)

#: The bundled samples: (path relative to the repository root, spec).  Seed 0 throughout.
BUNDLED = [(f"sample_logs/resnet50_{fmt}.log", samplegen.SampleSpec(format=fmt, iterations=2, batch=32))
           for fmt in samplegen.FORMATS]
BUNDLED.append(("miotui/samples/resnet50_demo.log", samplegen.DEMO_SPEC))


def rebuild_samples() -> int:
    """Regenerate every bundled sample; prints one line per file."""
    for rel, spec in BUNDLED:
        path = os.path.join(_ROOT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        n = samplegen.write_log(spec, path)
        print(f"{rel}: {n} bytes ({spec.format}, {spec.iterations} iterations, batch {spec.batch})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--rebuild-samples"]:
        sys.exit(rebuild_samples())
    sys.exit(samplegen.main(sys.argv[1:]))
