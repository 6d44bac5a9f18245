"""NVIDIA cuDNN logs: the API log (``CUDNN_LOGLEVEL_DBG=3``, cuDNN 7-9, every public form)
and the cudnn-frontend log, decoded into the same problems as MIOpen's logs.

``CudnnScanner`` has the MIOpen scanner's ``feed``/``finish`` and writes to the same
catalog; ``looks_like_cudnn`` says whether a log's first bytes are cuDNN's.  ``FORMAT`` is
this package's entry in ``miotui.formats.FORMATS``.
"""

from miotui.formats.cudnn.scanner import SOURCES, CudnnScanner, CudnnStats, decode_cudnn_bytes, looks_like_cudnn
from miotui.formats.format import Format, Role

NAME = "cudnn"

#: beside a cuDNN layer's MIOpenDriver command, wherever it is shown or written
TRANSLATION = "translated from cuDNN: the same problem for MIOpenDriver, to run it on AMD"


#: a line cuDNN wrote: a record mark (``I!`` headers, ``i!`` fields, warnings, errors) at its start
LINE_PATTERN = r"^[IiWwEe]! "

FORMAT = Format(NAME, "cuDNN", Role.LOG, looks_like_cudnn, CudnnScanner, sources=SOURCES, translation=TRANSLATION,
                line_pattern=LINE_PATTERN)


__all__ = ["FORMAT", "NAME", "SOURCES", "TRANSLATION", "CudnnScanner", "CudnnStats", "decode_cudnn_bytes",
           "looks_like_cudnn"]
