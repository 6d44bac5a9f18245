"""The first iteration as MIOpen spends it (``SampleSpec.startup``): Finds that miss the
Find-Db and measure the solvers, kernels compiled or loaded from the binary cache, tuning
searches with their heartbeats, and, in every iteration, each convolution's
``LogConvolutionExecution`` line with the Find-Db time of the solution it ran.

Why this exists: the question a ROCm user asks first is "why is my first iteration so
slow", and the log's answer is spread over these lines (``docs/formats.md``
§10.2).  ``miotui --demo`` replays such a log so that the startup view has something to
show, and the tests decode it against what was generated.

Modelling choices, stated because a reader of the log can see them:

* The job runs with ``MIOPEN_FIND_MODE=NORMAL`` (the log's banner says so) and
  ``MIOPEN_FIND_ENFORCE=SEARCH`` (the environment, not the log): every Find regenerates its
  Find-Db record (``Find-db regenerating.``), and a solver the Perf-Db has no record for is
  tuned; here that is the first problem each tunable solver meets (four searches).
* A Find measures the chosen solver and one to three others, worst first (each
  ``EvaluateInvokers`` line improves on the best so far, as the §10.2 form shows).
* A kernel is built once per process for each (file, build options): the first time MIOpen
  needs it, the binary cache either has it (``Successfully loaded``, about 40% of them:
  built by an earlier job) or it is compiled (``Unable to load`` ... ``Saving binary``, the
  compile's duration in the elapsed-time field of the ``Saving`` line); later uses are
  served from memory and log nothing.  Assembly kernels take 0.15-0.4 s to build, OpenCL
  ones 0.3-1.5 s, HIP ones 1.5-6 s.
* Batch norm, pooling and activation build their kernels on their first call per shape.
* Tuning: ``Searching the best solution among N...``, a ``Monitor`` heartbeat every ~3 s
  with progress and ETA, then ``Done``; the tuned config is what later executions of that
  problem report as ``Config(from_perf_db)``.

Only ``SampleSpec.startup`` logs take these paths; every other log is unchanged.
"""

from __future__ import annotations

import random

from miotui.samplegen.network import BNLayer, Call, ConvLayer, Layer, PoolLayer
from miotui.samplegen.render_base import Rec, RendererBase, cpp_double

_MCPU = "-mcpu=gfx90a:sramecc+:xnack-"
_ASM = f"-Wa,-defsym,ROCM_METADATA_VERSION=5 {_MCPU}"
#: solvers whose Perf-Db record is missing on this machine: the first problem each meets is tuned
TUNABLE = {"ConvAsmImplicitGemmGTCDynamicFwdXdlops": (768, 1184), "ConvAsmImplicitGemmGTCDynamicBwdXdlops": (512, 896),
           "ConvAsmImplicitGemmGTCDynamicWrwXdlops": (1024, 1536), "ConvBinWinogradRxSf2x3g1": (48, 64)}
#: seconds between two ``Monitor`` heartbeats (MIOpen's generic search prints one every 3 s)
HEARTBEAT_MS = 3000.0
#: the find-mode banner MIOpen prints once per process
FIND_MODE_BANNER = "MIOPEN_FIND_MODE = NORMAL(1)"


def _build_ms(rng: random.Random, kernel_file: str) -> float:
    if kernel_file.endswith(".s.o"):
        return rng.uniform(150.0, 400.0)
    if kernel_file.endswith(".cl.o"):
        return rng.uniform(300.0, 1500.0)
    return rng.uniform(1500.0, 6000.0)


def _conv_shape_args(layer: ConvLayer) -> str:
    x, y = layer.x, layer.y
    return (f"-DMLO_N_INPUTS={x.c} -DMLO_N_OUTPUTS={layer.k} -DMLO_IN_HEIGHT={x.h} -DMLO_IN_WIDTH={x.w} "
            f"-DMLO_OUT_HEIGHT={y.h} -DMLO_OUT_WIDTH={y.w} -DMLO_FILTER_SIZE0={layer.r} -DMLO_FILTER_STRIDE0="
            f"{layer.stride} -DMLO_FILTER_PAD0={layer.pad} -DMIOPEN_USE_FP32=1 {_MCPU}")


def conv_kernel(solver: str, layer: ConvLayer, direction: str) -> tuple[str, str, str] | None:
    """(kernel file, build options, kernel name) a solver builds for a problem; None for a
    solver that calls a library (rocBLAS) and builds nothing of MIOpen's."""
    if solver.startswith("ConvBinWinograd"):
        return ("Conv_Winograd_v21_1_3_gfx9_fp32_f2x3_stride1.s.o", _ASM,
                "miopenSp3AsmConv_v21_1_3_gfx9_fp32_f2x3_stride1")
    if solver.startswith("ConvAsmImplicitGemmGTCDynamic"):
        return f"igemm_{direction}_gtc_gfx90a.s.o", _ASM, f"igemm_{direction}_gtcx2_nchw_fp32"
    if solver.startswith("ConvDirectNaiveConv"):
        return ("naive_conv.cpp.o", f"-DMIOPEN_USE_FP16=0 -DMIOPEN_USE_FP32=1 -DMIOPEN_USE_BFP16=0 {_MCPU}",
                f"naive_conv_{direction}_nchw_float_double_float")
    if solver == "ConvOclDirectFwd1x1":
        return "MIOpenConv1x1S.cl.o", _conv_shape_args(layer), "MIOpenConv1x1"
    if solver == "ConvOclDirectFwd":
        return "MIOpenConvDirUni.cl.o", _conv_shape_args(layer), "MIOpenConvUni"
    if solver == "ConvOclBwdWrW53":
        return "MIOpenConvBwdWrW_LxG_P53.cl.o", _conv_shape_args(layer), "MIOpenCvBwdWrW"
    if solver.startswith("ConvHipImplicitGemmV4R1"):
        x, y = layer.x, layer.y
        return ("gridwise_convolution_implicit_gemm_v4r1_nchw_kcyx_nkhw_lds_double_buffer.cpp.o",
                f"-DCK_PARAM_PROBLEM_N={x.n} -DCK_PARAM_PROBLEM_K={layer.k} -DCK_PARAM_PROBLEM_C={x.c} "
                f"-DCK_PARAM_PROBLEM_HI={x.h} -DCK_PARAM_PROBLEM_WI={x.w} -DCK_PARAM_PROBLEM_HO={y.h} "
                f"-DCK_PARAM_PROBLEM_WO={y.w} -DCK_PARAM_PROBLEM_Y={layer.r} -DCK_PARAM_PROBLEM_X={layer.r} "
                f"-DCK_PARAM_PROBLEM_CONV_DIRECTION_{direction.upper()}=1 {_MCPU}",
                "gridwise_convolution_implicit_gemm_v4r1_nchw_kcyx_nkhw_lds_double_buffer")
    if solver == "GemmWrwUniversal":
        x = layer.x
        return ("MIOpenIm2d2Col.cl.o", f"-DNUM_CH_PER_WG=1 -DNUM_IM_BLKS_X={x.w // 8} -DNUM_IM_BLKS={x.h // 8} "
                f"-DLOCAL_MEM_SIZE=1024 -DSTRIDE_GT_1=1 -DMIOPEN_USE_FP32=1 {_MCPU}", "Im2d2Col")
    return None


def candidates(layer: ConvLayer, direction: str, chosen: str) -> list[str]:
    """The solvers a Find measures besides the chosen one (applicable ones only)."""
    naive = {"fwd": "ConvDirectNaiveConvFwd", "bwd": "ConvDirectNaiveConvBwd", "wrw": "ConvDirectNaiveConvWrw"}
    out = [naive[direction]]
    if direction == "wrw":
        out.append("ConvOclBwdWrW53")
    elif layer.r == 1:
        out.append("ConvOclDirectFwd1x1")
    else:
        out.append("ConvOclDirectFwd")
    if layer.r > 1 and direction != "bwd":
        out.append("ConvHipImplicitGemmV4R1" + {"fwd": "Fwd", "wrw": "WrW"}[direction])
    return [s for s in out if s != chosen]


def other_kernel(call: Call) -> tuple[str, str] | None:
    """(kernel file, build options) that a batch-norm, pooling or activation call builds."""
    layer: Layer = call.layer
    x = getattr(layer, "x", None)
    if isinstance(layer, BNLayer) and x is not None:
        shape = (f"-DMIO_BN_N={x.n} -DMIO_BN_C={x.c} -DMIO_BN_HW={x.h * x.w} -DMIO_BN_NHW={x.n * x.h * x.w} "
                 f"-DMIO_BN_VARIANT=2 -DMIOPEN_USE_FP32=1 {_MCPU}")
        name = {"bn_train": "MIOpenBatchNormFwdTrainSpatial", "bn_bwd": "MIOpenBatchNormBwdSpatial",
                "bn_infer": "MIOpenBatchNormFwdInferSpatial"}.get(call.kind)
        return (f"{name}.cl.o", shape) if name else None
    if isinstance(layer, PoolLayer) and x is not None and call.kind in ("pool_fwd", "pool_bwd"):
        return ("MIOpenPoolingND.cl.o" if call.kind == "pool_fwd" else "MIOpenPoolingBwdND.cl.o",
                f"-DMLO_POOLING_OP_ID=1 -DMLO_POOLING_KERNEL_SZ0={layer.win} -DMLO_POOLING_STRIDE0={layer.stride} "
                f"-DMLO_POOLING_N_OUTPUTS={x.c} -DMLO_POOLBWD_INWIDTH={x.w} -DMIOPEN_USE_FP32=1 {_MCPU}")
    if call.kind in ("relu_fwd", "relu_bwd"):
        return ("MIOpenNeuron.cl.o", f"-DMLO_NRN_GROUP_SZ0=256 -DMIOPEN_NRN_OP_ID=3 "
                f"-DMLO_NRN_{'FWD' if call.kind == 'relu_fwd' else 'BWD'}=1 -DMIOPEN_USE_FP32=1 {_MCPU}")
    return None


class StartupCalls(RendererBase):
    """What ``SampleSpec.startup`` adds to a log: the first iteration's Finds, compiles and
    searches, and each convolution's ``LogConvolutionExecution`` line."""

    def _lvl(self, lvl: str, fn: str, msg: str, delay: float = 0.0) -> list[Rec]:
        """A level line; where the log's level leaves it out, its time still passes (the
        next line's elapsed field holds it)."""
        recs = self.level(lvl, fn, msg, delay)
        return recs if recs or not delay else [(0, "delay", "", delay)]

    def _startup_state(self) -> None:
        if hasattr(self, "_srng"):
            return
        self._srng = random.Random(f"{self.spec.seed}:startup")
        self._built: set[tuple[str, str]] = set()
        self._found_ms: dict[str, float] = {}
        self._tuned_cfg: dict[str, str] = {}
        self._tuned_solvers: set[str] = set()

    def render(self, call: Call) -> list[Rec]:
        recs = super().render(call)
        if self.spec.startup and call.kind in ("bn_train", "bn_bwd", "bn_infer", "pool_fwd", "pool_bwd",
                                               "relu_fwd", "relu_bwd"):
            kernel = other_kernel(call)
            if kernel is not None:
                recs += self._binary(*kernel)
        return recs

    def _binary(self, kernel_file: str, args: str) -> list[Rec]:
        """A kernel MIOpen needs: nothing when this process built it already, else loaded
        from the binary cache or compiled and saved."""
        self._startup_state()
        if (kernel_file, args) in self._built:
            return []
        self._built.add((kernel_file, args))
        what = f'"{kernel_file}"; args: {args}'
        recs = self._lvl("Info2", "LoadBinary", f"Loading binary for: {what}", self._srng.uniform(0.01, 0.05))
        if self._srng.random() < 0.4:
            return recs + self._lvl("Info2", "LoadBinary", f"Successfully loaded binary for: {what}",
                                     self._srng.uniform(0.3, 2.0))
        recs += self._lvl("Info2", "LoadBinary", f"Unable to load binary for: {what}", self._srng.uniform(0.05, 0.2))
        return recs + self._lvl("Info2", "SaveBinary", f"Saving binary for: {what}",
                                 _build_ms(self._srng, kernel_file))

    def _search(self, solver: str, key: str) -> list[Rec]:
        """A tuning search of ``solver`` for one problem, heartbeats and all."""
        rng = self._srng
        lo, hi = TUNABLE[solver]
        total = rng.randrange(lo, hi + 1, 8)
        per_config = rng.uniform(20.0, 45.0)
        duration = total * per_config
        best_i = rng.randrange(total)
        cfg = ",".join(str(rng.choice(v)) for v in ((16, 32, 64, 128), (32, 64, 128), (4, 8, 16), (1, 2, 4)))
        best = rng.uniform(0.05, 0.6)
        recs = self._lvl("Warning", "GetAllConfigs", f"{solver}: Searching the best solution among {total}...",
                          rng.uniform(1.0, 5.0))
        at = 0.0
        done = 0
        failed = 0
        while at + HEARTBEAT_MS < duration:
            at += HEARTBEAT_MS
            step = min(total, int(at / per_config)) - done
            recent = max(1, step)
            done += step
            failed += 1 if rng.random() < 0.2 else 0
            recent_best = best * rng.uniform(1.0, 1.4)
            eta = (total - done) * per_config / 1000.0
            recs += self._lvl("Warning", "Monitor",
                               f"{done}/{failed}/{total} {cpp_double(best * rng.uniform(1.0, 1.2))}, best within "
                               f"recent {recent}: {cpp_double(recent_best)} #{rng.randrange(total)} {cfg}, "
                               f"ETA:{eta:.1f} sec.", HEARTBEAT_MS + rng.uniform(-40.0, 40.0))
        recs += self._lvl("Warning", "GenericSearch", f"Done: {total}/{failed}/{total}, best #{best_i} "
                           f"{cpp_double(best)} {cfg}", max(1.0, duration - at))
        self._tuned_cfg[key] = cfg
        return recs

    def _startup_find(self, layer: ConvLayer, direction: str, chosen: str, ws: int, ms: float, key: str) -> list[Rec]:
        """Between ``Find-db regenerating.`` and the Find's result: searches, kernels, and
        each solver's measured time, worst first."""
        self._startup_state()
        self._found_ms[key] = ms
        recs: list[Rec] = self._lvl("Info", "TryLoad", "Find-db regenerating.")
        rng = self._srng
        measured = [(s, ms * (rng.uniform(25.0, 60.0) if "Naive" in s else rng.uniform(1.3, 5.0)))
                    for s in candidates(layer, direction, chosen)]
        measured.sort(key=lambda item: -item[1])
        measured.append((chosen, ms))
        if chosen in TUNABLE and chosen not in self._tuned_solvers:
            self._tuned_solvers.add(chosen)
            recs += self._search(chosen, key)
        best = 3.40282e38
        names: dict[str, str] = {}
        for solver, t in measured:
            kernel = conv_kernel(solver, layer, direction)
            name = kernel[2] if kernel else "gemm"
            names[solver] = name
            if kernel is not None:
                recs += self._binary(kernel[0], kernel[1])
            recs += self._lvl("Info", "EvaluateInvokers", f"{solver}: {name}: {cpp_double(t)} < {cpp_double(best)}",
                               rng.uniform(0.5, 4.0))
            best = t
        recs += self._lvl("Info", "EvaluateInvokers",
                           f"Selected: {chosen}: {names[chosen]}: {cpp_double(ms)}, workspce_sz = {ws}")
        return recs

    def _execution_line(self, args: str, solver: str, key: str) -> list[Rec]:
        """``LogConvolutionExecution``: the problem, the solver, its tuned config (``N/A``
        without a Perf-Db record) and the Find-Db time (-1 when the record has none)."""
        self._startup_state()
        ms = self._found_ms.get(key)
        cfg = self._tuned_cfg.get(key, "N/A")
        return self._lvl("Info", "LogConvolutionExecution",
                          f'Problem="{args}" Solver="{solver}" Config(from_perf_db)="{cfg}" '
                          f"Time(from_find_db)={cpp_double(ms) if ms is not None else -1}")
