"""rocprofv3 kernel traces (``--kernel-trace``, CSV): GPU kernel times joined to a MIOpen log of
the same run by the order of its calls (``join``).  Built against the documented columns; no
real rocprofv3 output was available to this project."""

from miotui.formats.format import Format, Role
from miotui.formats.rocprof.join import SOURCE, CallOrder, KernelJoin, join_kernel_trace
from miotui.formats.rocprof.kernel_trace import Dispatch, KernelTraceError, looks_like_kernel_trace, read_kernel_trace

NAME = "rocprof"

FORMAT = Format(NAME, "rocprofv3 kernel trace", Role.KERNEL_TRACE, looks_like_kernel_trace, sources=frozenset({SOURCE}))


__all__ = ["FORMAT", "NAME", "SOURCE", "CallOrder", "Dispatch", "KernelJoin", "KernelTraceError", "join_kernel_trace",
           "looks_like_kernel_trace", "read_kernel_trace"]
