"""rocprofv3 output: the kernel trace (``--kernel-trace``, CSV) and the rocpd SQLite database
(``rocpd``): GPU kernel times joined to a MIOpen log of the same run, by MIOpen's roctx ranges
where the database has them (``ranges``), else by the order of its calls (``join``); ``files``
chooses.  Built against the documented columns and schema; no real rocprofv3 output was
available to this project."""

from miotui.formats.format import Format, Role
from miotui.formats.rocprof.files import join_kernel_file
from miotui.formats.rocprof.join import SOURCE, CallOrder, KernelJoin, join_kernel_trace
from miotui.formats.rocprof.kernel_trace import Dispatch, KernelTraceError, looks_like_kernel_trace, read_kernel_trace
from miotui.formats.rocprof.rocpd import looks_like_rocpd

NAME = "rocprof"


def looks_like_rocprof(head: bytes) -> bool:
    """Whether a file's first bytes are rocprofv3 output miotui joins: the kernel-trace CSV's
    header or a rocpd database."""
    return looks_like_rocpd(head) or looks_like_kernel_trace(head)


FORMAT = Format(NAME, "rocprofv3 kernel trace", Role.KERNEL_TRACE, looks_like_rocprof, sources=frozenset({SOURCE}))


__all__ = ["FORMAT", "NAME", "SOURCE", "CallOrder", "Dispatch", "KernelJoin", "KernelTraceError", "join_kernel_file",
           "join_kernel_trace", "looks_like_kernel_trace", "looks_like_rocpd", "read_kernel_trace"]
