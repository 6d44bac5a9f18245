"""What the app and the CLI show, as plain values: no Textual, no Rich.

The table's rows and its filter language (``layer_model``), where the time goes
(``timing``), the first iteration (``startup_model``), run verdicts in words
(``run_summary``), how numbers are written (``units``) and the poller that gathers them
off the UI thread (``poller``).  Why apart from the widgets: ``miotui decode`` and
``miotui run`` print the same facts the screens show, and must say them the same way;
the import contracts forbid this package to import Textual.
"""
