"""rocprofv3's kernel trace (``rocprofv3 --kernel-trace --output-format csv``: a file
``<pid>_kernel_trace.csv``), read as the ROCprofiler-SDK documentation gives its columns:

    "Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",
    "Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size",...

one row per kernel dispatch, timestamps in nanoseconds.  Only ``Kernel_Name``,
``Start_Timestamp`` and ``End_Timestamp`` are needed; a row that does not read is counted and
listed with its reason.  No real rocprofv3 output could be made for this project (no AMD GPU):
the reader and its test file follow the documented columns.

Which MIOpen layer family a kernel belongs to is told by MIOpen's kernel names (its own
kernels; rocBLAS/hipBLASLt GEMMs and a framework's elementwise kernels name no family).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Iterator, Optional

REQUIRED = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
#: kernel-name words -> the MIOpen family (``Problem.op``) of the layer that launches it, first match
FAMILIES = (
    (re.compile(r"batchnorm", re.IGNORECASE), "bnorm"),
    (re.compile(r"pooling", re.IGNORECASE), "pool"),
    (re.compile(r"miopenactive|activ_?(fwd|bwd)", re.IGNORECASE), "activ"),
    (re.compile(r"softmax", re.IGNORECASE), "softmax"),
    (re.compile(r"conv|igemm_|winograd|im2col|col2im|subsample|upsample|gridwise_convolution", re.IGNORECASE),
     "conv"),
)
#: a field larger than this is a malformed file, not a kernel name
FIELD_CHARS = 64 * 1024


def kernel_family(name: str) -> Optional[str]:
    for pattern, family in FAMILIES:
        if pattern.search(name):
            return family
    return None


@dataclass(frozen=True)
class Dispatch:
    """One kernel dispatch (``correlation``: the id of the API call that launched it, where
    the trace ties them: the rocpd database)."""

    name: str
    start_ns: int
    end_ns: int
    family: Optional[str]
    correlation: Optional[int] = None

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def looks_like_kernel_trace(head: bytes) -> bool:
    """Whether a file's first line is a rocprofv3 kernel trace's header."""
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    return all(f'"{column}"' in first or column in first.split(",") for column in REQUIRED)


class KernelTraceError(ValueError):
    pass


def read_kernel_trace(text: str, problems: list) -> Iterator[Dispatch]:
    """The dispatches of a kernel trace's text, in the file's order; a row that does not read
    is appended to ``problems`` as (line, reason)."""
    csv.field_size_limit(FIELD_CHARS)
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise KernelTraceError("the kernel trace is empty") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise KernelTraceError(f"not a rocprofv3 kernel trace: no column {', '.join(missing)} in its header")
    at = [header.index(c) for c in REQUIRED]
    line = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            problems.append((reader.line_num, f"kernel trace row: {e}"))
            continue
        line = reader.line_num
        if not row:
            continue
        try:
            name, start, end = (row[i] for i in at)
            start_ns, end_ns = int(start), int(end)
        except (IndexError, ValueError):
            problems.append((line, "kernel trace row without a kernel name and integer timestamps"))
            continue
        if end_ns < start_ns:
            problems.append((line, f"kernel {name[:80]} ends before it starts"))
            continue
        yield Dispatch(name, start_ns, end_ns, kernel_family(name))
