"""Log formats, one package per format (``miotui.formats.cudnn`` for NVIDIA cuDNN logs).

Each package recognises its own text by content and turns it into the events the catalog
takes.  The registry of formats (issue 20's ``FORMATS``) is not built yet; until it is, the
one place that chooses a format is marked in ``miotui.logs.sources``.
"""
