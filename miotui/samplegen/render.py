"""The renderer of one log: every call kind (see :mod:`miotui.samplegen.render_base`)."""

from __future__ import annotations

from miotui.samplegen.render_conv import ConvCalls
from miotui.samplegen.render_ops import LayerCalls


class Renderer(ConvCalls, LayerCalls):
    """Turns calls into log records for one format; holds the per-log state."""
