"""The directory ``miotui record`` puts first on a multi-rank job's ``PYTHONPATH``: its
``sitecustomize`` gives each rank a log of its own (see ``miotui.record_ranks``).  Nothing
here is imported by miotui itself."""
