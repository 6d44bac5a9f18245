#!/usr/bin/env python3
"""FAKE MIOpenDriver, for tests only.  It runs no kernel and verifies nothing.

It stands in for AMD's ``MIOpenDriver`` so the miopen-driver backend's real code path
(argv building, launcher prefix, process group, streaming, timeout/cancel, output
parsing) can be tested on machines without ROCm.  It reads the argv the real driver
would get (``conv -n 1 ... -F 1 -V 1 -t 1 -i 10``) and prints what the real driver
prints for it, in the wording of the MIOpen version selected by an env var
(``docs/formats.md`` §9, from MIOpen's ``driver/*.hpp``):

FAKE_MIOPEN_STYLE (default ``rocm61``)
    ``rocm61``  MIOpen >= 3.1: ``PRNG seed``, ``Algorithm: N, Solution: id/name``,
                ``Verifies OK on GPU reference (err < tol)``
    ``rocm42``  MIOpen 2.11-2.15: numbered ``stats:`` line, ``Verifies OK on GPU reference (err)``
    ``2019``    MIOpen 2.0-2.2: ``MIOpenDriver:`` echo, ``Algorithm: N`` only,
                ``Verifies on CPU and GPU (err)``
    ``fail``    as rocm61, but the first direction's check prints ``FAILED: err > tol``
    ``runerror`` the GPU call fails: ``RunForwardGPU() FAILED, rc = 0x7``
    ``hang``    prints its preamble and a ``fake-miopendriver: pid P pgid G child C`` line,
                starts a child process in its process group, then sleeps forever
    ``crash``   prints the algorithm line, then dies of SIGSEGV
    ``noline``  as rocm61, after writing FAKE_MIOPEN_NOLINE_MB megabytes without a newline
                (a driver whose progress output never ends a line)
FAKE_MIOPEN_EXIT        override the exit status (the verdict must come from the output)
FAKE_MIOPEN_IGNORE_TERM ``1``: ignore SIGTERM (tests SIGKILL escalation)
FAKE_MIOPEN_ARGV_FILE   write ``sys.argv`` there as JSON (tests prove argv passing)
FAKE_MIOPEN_LINE_DELAY  seconds to sleep after each line (tests streaming)
FAKE_MIOPEN_NOLINE_MB   megabytes the ``noline`` style writes before its first newline (default 64)
FAKE_MIOPEN_HOSTILE     text (terminal escapes, say) the driver's output carries: in a line of
                        its own after the echo, and after each solver's name (a driver built
                        from a fork, or a wrapper, prints what it likes; the parsing must hold)

Kernel times are derived from the layer's FLOP count at a made-up 40 TFLOP/s, so
different layers print different, plausible numbers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

STYLES = ("rocm61", "rocm42", "2019", "fail", "runerror", "hang", "crash", "noline")

CONV_BASES = {"conv", "convfp16", "convbfp16", "convint8", "convfp32", "convfp8", "convbfp8"}
TOLERANCE = {"conv": 1.5e-06, "convfp32": 1.5e-06, "convint8": 1.5e-06, "convfp16": 0.0082,
             "convbfp16": 0.0656, "convfp8": 0.0555, "convbfp8": 0.0555}
CONV_LONG = {"forw": "F", "batchsize": "n", "in_channels": "c", "in_h": "H", "in_w": "W", "in_d": "!",
             "out_channels": "k", "fil_h": "y", "fil_w": "x", "fil_d": "@", "conv_stride_h": "u",
             "conv_stride_w": "v", "pad_h": "p", "pad_w": "q", "dilation_h": "l", "dilation_w": "j",
             "group_count": "g", "mode": "m", "iter": "i", "verify": "V", "time": "t"}


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    delay = float(os.environ.get("FAKE_MIOPEN_LINE_DELAY", "0") or 0)
    if delay:
        time.sleep(delay)


def parse_flags(args: list[str]) -> dict[str, str]:
    """MIOpenDriver's rule: every flag takes a value; ``--long`` or ``-c``."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        if tok.startswith("--"):
            key = CONV_LONG.get(tok[2:], tok[2:])
        elif tok.startswith("-") and len(tok) >= 2:
            key = tok[1]
        else:
            out("Illegal input flag")
            sys.exit(0)
        flags[key] = args[i + 1] if i + 1 < len(args) else ""
        i += 2
    return flags


def geti(flags: dict[str, str], key: str, default: int) -> int:
    try:
        return int(flags.get(key, default))
    except ValueError:
        return default


def conv_numbers(flags: dict[str, str]) -> dict[str, int]:
    n, c, k = geti(flags, "n", 100), geti(flags, "c", 3), geti(flags, "k", 32)
    h, w = geti(flags, "H", 32), geti(flags, "W", 32)
    fy, fx = geti(flags, "y", 3), geti(flags, "x", 3)
    p, q, u, v = geti(flags, "p", 0), geti(flags, "q", 0), geti(flags, "u", 1), geti(flags, "v", 1)
    dh, j, g = geti(flags, "l", 1), geti(flags, "j", 1), geti(flags, "g", 1)
    if flags.get("m", "conv") == "trans":
        ho = (h - 1) * u - 2 * p + dh * (fy - 1) + 1
        wo = (w - 1) * v - 2 * q + j * (fx - 1) + 1
        small = h * w
    else:
        ho = (h + 2 * p - dh * (fy - 1) - 1) // u + 1
        wo = (w + 2 * q - j * (fx - 1) - 1) // v + 1
        small = ho * wo
    flops = 2 * n * c * k * fy * fx * max(small, 1) // max(g, 1)
    return {"n": n, "c": c, "k": k, "ho": max(ho, 1), "wo": max(wo, 1), "fy": fy, "fx": fx, "u": u,
            "flops": flops, "read": 4 * (n * c * h * w + k * c * fy * fx // max(g, 1)),
            "written": 4 * n * k * max(ho, 1) * max(wo, 1)}


def fake_ms(flops: int) -> float:
    return 0.004 + flops / 40e9


def run_conv(base: str, flags: dict[str, str], style: str) -> int:
    f = geti(flags, "F", 0)
    dirs = {0: ("fwd", "bwd", "wrw"), 1: ("fwd",), 2: ("bwd",), 4: ("wrw",), 3: ("fwd", "bwd"),
            5: ("fwd", "wrw"), 6: ("bwd", "wrw")}.get(f, ("fwd",))
    num = conv_numbers(flags)
    tol = TOLERANCE.get(base, 1.5e-06)
    names = {"fwd": ("Forward Conv.", "fwd", "Forward Convolution", 1, 85, "ConvDirectNaiveConvFwd"),
             "bwd": ("Backward Data Conv.", "bwdd", "Backward Convolution Data", 0, 86, "ConvDirectNaiveConvBwd"),
             "wrw": ("Backward Weights Conv.", "bwdw", "Backward Convolution Weights", 0, 87,
                     "ConvDirectNaiveConvWrw")}
    rc = 0
    for i, d in enumerate(dirs):
        what, stat, verify_name, algo, sol_id, sol = names[d]
        if style == "runerror":
            out(f"Run{'Forward' if d == 'fwd' else 'Backward'}GPU() FAILED, rc = 0x7")
            return 7
        if style == "2019":
            out(f"MIOpen {what} Algorithm: {algo}")
        else:
            out(f"MIOpen {what} Algorithm: {algo}, Solution: {sol_id}/{sol}{os.environ.get('FAKE_MIOPEN_HOSTILE', '')}")
        if style == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(5)
        if flags.get("t", "0") == "1":
            ms = fake_ms(num["flops"]) * (1.0 + 0.5 * i)
            out(f"GPU Kernel Time {what} Elapsed: {ms:f} ms (average)")
            out("stats: name, n, c, ho, wo, x, y, k, flopCnt, bytesRead, bytesWritten, GFLOPs, GB/s, timeMs")
            gflops = num["flops"] / ms / 1e6
            gbps = (num["read"] + num["written"]) / ms / 1e6
            if d == "bwd":
                fields = (num["n"], num["c"], num["fy"], num["fx"], num["k"], num["ho"], num["wo"])
            else:
                fields = (num["n"], num["c"], num["ho"], num["wo"], num["fy"], num["fx"], num["k"])
            rd, wr, bw = (0, 0, 0) if d == "wrw" else (num["read"], num["written"], round(gbps))
            out(f"stats: {stat}-conv{num['fy']}x{num['fx']}u{num['u']}, "
                + ", ".join(str(v) for v in fields)
                + f",  {num['flops']}, {rd}, {wr}, {round(gflops)}, {bw}, {ms:f}")
        if flags.get("V", "1") == "1":
            err = 3.1e-07 * (i + 1) if base not in ("convfp16", "convbfp16") else 0.00037644
            if style == "fail" and i == 0:
                out(f"{verify_name} FAILED: 0.0123 > {tol:g}")
                rc = 1
            elif style == "2019":
                out(f"{verify_name} Verifies on CPU and GPU ({err:g})")
            elif style == "rocm42":
                out(f"{verify_name} Verifies OK on GPU reference ({err:g})")
            else:
                out(f"{verify_name} Verifies OK on GPU reference ({err:g} < {tol:g})")
    return rc


def run_other(base: str, flags: dict[str, str], style: str) -> int:
    """pool, bnorm, activ, lrn, softmax: their HEAD lines (§9.6)."""
    n, c, h, w = geti(flags, "n", 32), geti(flags, "c", 3), geti(flags, "H", 32), geti(flags, "W", 32)
    if "W" in flags and "x" in flags.get("W", ""):   # pool --input NxCxHxW[,layout]
        dims = [int(v) for v in flags["W"].split(",")[0].split("x")]
        n, c, h, w = dims[0], dims[1], dims[-2], dims[-1]
    elems = n * c * h * w
    ms = 0.003 + elems * 8 / 1.5e12 * 1e3
    iters = geti(flags, "i", 10)
    f = geti(flags, "F", 0)
    fail = style == "fail"
    if style == "runerror":
        out("RunForwardGPU() FAILED, rc = 0x7")
        return 7
    if base.startswith("bnorm"):
        back = geti(flags, "b", 0)
        if back == 1 and f == 0:
            out(f"GPU Kernel Min Time Backwards Batch Normalization Elapsed: {ms * 0.9:f} ms")
            out(f"GPU Kernel Avg Time Backward Batch Normalization Elapsed: {ms:f} ms")
            if fail:
                out("Backwards prop batch norm verification FAILED on dx: 0.5")
                return 1
            for part in ("dx", "dscale", "dbias"):
                out(f"Backwards prop batch norm verification passed on {part} (1.2e-08)")
            out("Backwards Prop Batch Norm Verifies on CPU and GPU.")
            return 0
        out(f"GPU Kernel Min Time Forward Batch Normalization Elapsed: {ms * 0.9:f} ms")
        out(f"GPU Kernel Avg Time Forward Batch Normalization Elapsed: {ms:f} ms, for {iters} iterations.")
        if fail:
            out("Forward batch norm verification FAILED on output: 0.5")
            return 1
        out("Forward batch norm verification passed on output (2.1e-08)")
        out("Forward Batch Norm Verifies on CPU and GPU.")
        return 0
    dirs = {1: ("Forward",), 2: ("Backward",)}.get(f, ("Forward", "Backward"))
    rc = 0
    for d in dirs:
        if base.startswith("pool"):
            out(f"GPU Kernel Time {d} Pooling Elapsed: {ms:f} ms")
            if fail:
                out(f"{d} Pooling verification FAILED" + (" (0.5, 9)" if d == "Backward" else ""))
                rc = 1
            else:
                out(f"{d} Pooling Verifies on CPU and GPU (0, 9)")
        elif base.startswith("activ"):
            out(f"GPU Kernel Min Time {d} Activation Elapsed: {ms * 0.9:f} ms")
            out(f"GPU Kernel Avg Time {d} Activation Elapsed: {ms:f} ms, for {iters} iterations.")
            if fail:
                out("Difference in neuron layer: 0.5 too large at 3 x 0.1 y 0.6 z 0.1")
                rc = 1
            else:
                out(f"{d} Activation Verifies on CPU and GPU")
        elif base.startswith("lrn"):
            out(f"GPU Kernel Time {d} LRN Elapsed: {ms:f} ms")
            if fail:
                out(f"{d} LRN FAILED: 0.500000")
                rc = 1
            else:
                out(f"{d} LRN Verifies on CPU and GPU (err=0.000001)")
        elif base.startswith("softmax"):
            out(f"GPU Kernel Time {d} Softmax Elapsed: {ms:f} ms")
            if fail:
                out(f"{d} Softmax FAILED: 0.500000")
                rc = 1
            else:
                out(f"{d} Softmax Verifies on CPU and GPU (err=0.000000)")
    return rc


def hang() -> None:
    if os.environ.get("FAKE_MIOPEN_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(60)"])
    out(f"fake-miopendriver: pid {os.getpid()} pgid {os.getpgid(0)} child {child.pid}")
    while True:
        time.sleep(60)


def main(argv: list[str]) -> int:
    if hasattr(sys.stdout, "reconfigure"):   # the hostile text is not ASCII, whatever the locale
        sys.stdout.reconfigure(encoding="utf-8")
    if os.environ.get("FAKE_MIOPEN_ARGV_FILE"):
        with open(os.environ["FAKE_MIOPEN_ARGV_FILE"], "w", encoding="utf-8") as fh:
            json.dump(argv, fh)
    style = os.environ.get("FAKE_MIOPEN_STYLE", "rocm61")
    if style not in STYLES:
        print(f"fake-miopendriver: unknown FAKE_MIOPEN_STYLE {style!r}; one of {', '.join(STYLES)}",
              file=sys.stderr)
        return 2
    args = argv[1:]
    if args and args[0] == "--version":
        out("MIOpen (version: 3.1.0)")
        return 0
    if not args:
        out("FAILED: Invalid Base Input Argument")
        return 1
    base = args[0]
    out(("MIOpenDriver: " if style == "2019" else "MIOpenDriver ") + " ".join(args))
    if os.environ.get("FAKE_MIOPEN_HOSTILE"):
        out(os.environ["FAKE_MIOPEN_HOSTILE"])
    if style in ("rocm61", "fail", "hang", "crash", "runerror", "noline"):
        out("PRNG seed: 12345678")
    if style == "hang":
        hang()
    if style == "noline":
        chunk = b"#" * (1 << 20)
        for _ in range(int(float(os.environ.get("FAKE_MIOPEN_NOLINE_MB", "64") or 64))):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
        style = "rocm61"
    flags = parse_flags(args[1:])
    if base in CONV_BASES:
        rc = run_conv(base, flags, style)
    elif base.rstrip("0123456789fpb") in ("pool", "bnorm", "activ", "lrn", "softmax") or \
            base.startswith(("pool", "bnorm", "activ", "lrn", "softmax")):
        rc = run_other(base, flags, style)
    else:
        out("FAILED: Invalid Base Input Argument")
        return 1
    if os.environ.get("FAKE_MIOPEN_EXIT"):
        return int(os.environ["FAKE_MIOPEN_EXIT"])
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
