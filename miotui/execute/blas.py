"""numpy's BLAS: which kernels it uses, and its thread count.

Imported by the package's ``__init__`` before anything imports numpy: the OpenBLAS
kernel hint (:func:`prefer_avx512_openblas`) is read when the library loads.  numpy and
ctypes are imported here only inside functions (the app imports this at start-up).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Optional


def prefer_avx512_openblas() -> Optional[str]:
    """Ask numpy's OpenBLAS for its AVX-512 kernels on CPUs it does not recognise.

    OpenBLAS 0.3.31 (numpy 2.4's wheel) does not know AMD family 26 (Zen 5) and falls
    back to its Haswell (AVX2) kernels: sgemm runs at ~130-210 GFLOP/s on two Zen 5
    cores instead of ~420 with the SkylakeX kernels (measured on this project's
    machines).  ``OPENBLAS_CORETYPE`` is OpenBLAS's documented override; it is read
    when the library loads, so this only helps if numpy has not been imported yet, and
    is only set when the user has not set it and the CPU reports every AVX-512 subset
    the SkylakeX kernels use.  Returns the value set, or None.
    """
    if "numpy" in sys.modules or "OPENBLAS_CORETYPE" in os.environ or sys.platform != "linux":
        return None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            head = fh.read(16384)
    except OSError:
        return None
    vendor = family = ""
    flags: set[str] = set()
    for line in head.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "cpu family" and not family:
            family = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    needed = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}
    if vendor == "AuthenticAMD" and family.isdigit() and int(family) >= 26 and needed <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        return "SkylakeX"
    return None


#: What :func:`prefer_avx512_openblas` set when miotui.execute was first imported.
BLAS_CORETYPE_SET = prefer_avx512_openblas()


def _openblas_paths() -> list[str]:
    import glob

    import numpy as np
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    return glob.glob(os.path.join(libdir, "*openblas*.so*"))


def blas_info() -> dict[str, Any]:
    """Which BLAS numpy uses and which kernels it picked (for benchmark reports)."""
    info: dict[str, Any] = {"coretype_set_by_miotui": BLAS_CORETYPE_SET,
                            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    try:
        import ctypes
        for path in _openblas_paths():
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                         "openblas_get_corename"):
                if hasattr(lib, name):
                    fn = getattr(lib, name)
                    fn.restype = ctypes.c_char_p
                    info["corename"] = fn().decode()
                    break
    except Exception as exc:  # pragma: no cover - informative only
        info["corename_error"] = str(exc)
    return info


class BlasThreads:
    """Set numpy's OpenBLAS thread count through its C API (for the batch split).

    ``openblas_set_num_threads_local`` turned out to change the process-wide count
    too, so the split pins BLAS to one thread for the duration of one run, under a
    lock (a second concurrent run simply does not split), and restores it after.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._set: Optional[Callable[[int], None]] = None
        self._get: Optional[Callable[[], int]] = None
        self.reason: Optional[str] = None
        try:
            import ctypes
            paths = _openblas_paths()
            if not paths:
                self.reason = "numpy's OpenBLAS library not found"
                return
            lib = ctypes.CDLL(paths[0])
            for setter, getter in (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                                   ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                                   ("openblas_set_num_threads", "openblas_get_num_threads")):
                if hasattr(lib, setter) and hasattr(lib, getter):
                    fset, fget = getattr(lib, setter), getattr(lib, getter)
                    fset.argtypes = [ctypes.c_int]
                    fset.restype = None
                    fget.restype = ctypes.c_int
                    self._set, self._get = fset, fget
                    return
            self.reason = "OpenBLAS exposes no thread-count API"
        except Exception as exc:  # pragma: no cover - depends on the numpy build
            self.reason = f"cannot load OpenBLAS: {exc}"

    @property
    def usable(self) -> bool:
        return self._set is not None

    def pin_one(self) -> Optional[int]:
        """Pin BLAS to one thread if no other run holds it; returns the old count or None."""
        if self._set is None or self._get is None or not self.lock.acquire(blocking=False):
            return None
        old = int(self._get())
        self._set(1)
        return old

    def restore(self, old: int) -> None:
        assert self._set is not None
        self._set(old)
        self.lock.release()


_blas_threads: Optional[BlasThreads] = None
_lock = threading.Lock()


def blas_threads() -> BlasThreads:
    """The process's one :class:`BlasThreads` (created on first use)."""
    global _blas_threads
    with _lock:
        if _blas_threads is None:
            _blas_threads = BlasThreads()
        return _blas_threads
