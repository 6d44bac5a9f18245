"""PyTorch profiler traces (``torch.profiler`` with ``record_shapes=True``, exported as Chrome
JSON, ``.json``/``.json.gz``, TensorBoard's ``*.pt.trace.json``): the layers of the aten ops
with their shapes, and each layer's GPU time from the kernels its calls launched.

``TraceScanner`` has the MIOpen scanner's ``feed``/``finish`` and writes to the same catalog;
``looks_like_trace`` says whether a file's first bytes are a trace's.  ``FORMAT`` is this
package's entry in ``miotui.formats.FORMATS``.
"""

from miotui.formats.format import Format, Role
from miotui.formats.torch_profiler.reader import looks_like_trace
from miotui.formats.torch_profiler.scanner import SOURCE, TraceScanner, TraceStats, decode_trace_bytes

NAME = "torch_profiler"

FORMAT = Format(NAME, "PyTorch profiler", Role.TRACE, looks_like_trace, TraceScanner, sources=frozenset({SOURCE}))


__all__ = ["FORMAT", "NAME", "SOURCE", "TraceScanner", "TraceStats", "decode_trace_bytes", "looks_like_trace"]
