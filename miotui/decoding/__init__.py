"""Whole logs decoded into a catalog: sources and formats put together.

``miotui decode``, ``miotui diff`` and the app's start read whole files through here: one
file or many (``parallel``), one big file in byte ranges (``ranges``), and profiler traces
joined to the logs they time (``whole.join_traces``).  Following a growing log is
:mod:`miotui.sources.follow`, handed :data:`miotui.formats.FORMATS`.
"""
