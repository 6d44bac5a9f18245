"""Rendering calls as log records: device addresses, the per-log state, generic pieces
(API blocks, command lines, Info lines) and the descriptor set-up calls.

The call kinds are rendered by :class:`miotui.samplegen.render.Renderer`, which adds the
convolution calls (``render_conv``) and the other layers' calls (``render_ops``) to this
base.  Every method renders every format: the formats differ in details of one call,
not in which calls they show.
"""

from __future__ import annotations

import random
from typing import Iterable, Sequence

from miotui.samplegen.network import CALL_KINDS, BNLayer, Call, ConvLayer, Layer, PoolLayer, Tensor
from miotui.samplegen.signatures import FORMAT_VERSION, SIGS
from miotui.samplegen.spec import SampleSpec

# --------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------

_ALIGN = 512
SEGMENT = 0x2000000  # 32 MiB: a caching-allocator segment


class Memory:
    """Device and host addresses that repeat like a caching allocator's.

    Weights (and their gradients) live in a persistent region; activations, gradients and
    BN statistics are bump-allocated in op order from an arena.  A *variant* moves every
    activation allocated after a cut point to another segment, which is how a caching
    allocator's reuse drifts between iterations.
    """

    def __init__(self, rng: random.Random, layers: Sequence[Layer]) -> None:
        # x86-64 user space ends at 0x7fffffffffff; ROCm maps device memory high in it.
        self.weights_base = 0x7F1000000000 + rng.randrange(0x10, 0xE0) * 0x100000000
        self.act_base = self.weights_base - rng.randrange(0x20, 0x80) * 0x10000000
        self.host_stack = 0x7FFC00000000 + rng.randrange(0x1000000, 0xFFFFFFF) * 0x10
        self.worker_stack = self.weights_base + 0x1E0000000 + rng.randrange(0x1000, 0xFFFF) * 0x1000
        self.alpha_main = self.host_stack + 0x4C
        self.alpha_worker = self.worker_stack + 0xA6C
        self._persist: dict[tuple[str, str], int] = {}
        self._act: dict[tuple[str, str], tuple[int, int]] = {}
        #: (layer, role) -> the allocation it shares: a layer's input is the previous
        #: layer's output, and its output gradient the next layer's input gradient.
        self.alias: dict[tuple[str, str], tuple[str, str]] = {}
        for prev, cur in zip(layers, layers[1:], strict=False):
            if prev.y == cur.x:
                self.alias[(cur.name, "x")] = (prev.name, "y")
                self.alias[(prev.name, "dy")] = (cur.name, "dx")
        self._next_w = self.weights_base
        self._next_a = self.act_base
        self.shift: tuple[int, int] = (1 << 62, 0)   # (cut index, offset)
        self._ws: dict[int, int] = {}
        self._next_ws = self.act_base - 0x40000000

    @property
    def activations(self) -> int:
        """How many activation allocations have been made (a variant's cut point is one of them)."""
        return len(self._act)

    @staticmethod
    def _size(t: Tensor, elem: int = 4) -> int:
        return (t.elements * elem + _ALIGN - 1) // _ALIGN * _ALIGN

    def persistent(self, layer: Layer, role: str, t: Tensor) -> int:
        key = (layer.name, role)
        if key not in self._persist:
            self._persist[key] = self._next_w
            self._next_w += max(self._size(t), _ALIGN)
        return self._persist[key]

    def act(self, layer: Layer, role: str, t: Tensor) -> int:
        key = self.alias.get((layer.name, role), (layer.name, role))
        entry = self._act.get(key)
        if entry is None:
            entry = self._act[key] = (self._next_a, len(self._act))
            self._next_a += max(self._size(t), _ALIGN)
        addr, index = entry
        if index >= self.shift[0]:
            addr += self.shift[1]
        return addr

    def workspace(self, size: int) -> int | None:
        if size == 0:
            return None
        if size not in self._ws:
            self._ws[size] = self._next_ws
            self._next_ws -= (size + SEGMENT - 1) // SEGMENT * SEGMENT
        return self._ws[size]


def hex_addr(addr: int | None) -> str:
    return "nullptr" if addr is None else f"0x{addr:x}"


def cpp_double(value: float) -> str:
    """C++ default ostream formatting of a double (6 significant digits)."""
    return f"{value:.6g}"


# miopenConv*Algorithm_t names by direction and enum value (as Info lines print them).
ALGO_NAMES = {
    "fwd": {0: "miopenConvolutionFwdAlgoGEMM", 1: "miopenConvolutionFwdAlgoDirect",
            3: "miopenConvolutionFwdAlgoWinograd", 5: "miopenConvolutionFwdAlgoImplicitGEMM"},
    "bwd": {0: "miopenConvolutionBwdDataAlgoGEMM", 1: "miopenConvolutionBwdDataAlgoDirect",
            3: "miopenConvolutionBwdDataAlgoWinograd", 5: "miopenConvolutionBwdDataAlgoImplicitGEMM"},
    "wrw": {0: "miopenConvolutionBwdWeightsAlgoGEMM", 1: "miopenConvolutionBwdWeightsAlgoDirect",
            3: "miopenConvolutionBwdWeightsAlgoWinograd", 5: "miopenConvolutionBwdWeightsAlgoImplicitGEMM"},
}


def choose_algo(layer: ConvLayer, direction: str, version: str) -> tuple[int, str, int]:
    """(algo enum, solver name, workspace bytes) a plausible Find would pick."""
    r, s = layer.r, layer.stride
    x, y = layer.x, layer.y
    im2col = x.c * r * r * y.h * y.w * 4
    if version == "1.7" or version == "2.9":
        if r == 3 and s == 1:
            return 3, "ConvBinWinogradRxSf2x3" if version == "2.9" else "ConvBinWinogradRxS", 0
        if direction == "fwd":
            if r == 1:
                return 1, "ConvAsm1x1U", 0
            if r == 7:
                return 1, "ConvAsm7x7c3h224w224k64u2v2p3q3f1", 0
            return 0, "gemm", im2col
        if direction == "bwd":
            if r == 1 and s == 1:
                return 1, "ConvAsm1x1U", 0
            return 0, "gemm", im2col if r > 1 else x.c * x.h * x.w * 4
        if r == 1:
            return 1, "ConvAsmBwdWrW1x1", 0
        return 0, "gemm", im2col
    # ROCm 5.7 on gfx90a
    if r == 3 and s == 1 and direction != "wrw":
        return 3, "ConvBinWinogradRxSf2x3g1", 0
    if direction == "fwd":
        if r == 1 and s == 1:
            return 0, "GemmFwd1x1_0_1", 0
        return 5, "ConvAsmImplicitGemmGTCDynamicFwdXdlops", 0
    if direction == "bwd":
        if r == 1 and s == 1:
            return 0, "GemmBwd1x1_stride1", 0
        if r == 1:
            return 0, "GemmBwd1x1_stride2", x.n * x.c * x.h * x.w * 4
        return 5, "ConvAsmImplicitGemmGTCDynamicBwdXdlops", 0
    if r == 1 and s == 1:
        return 0, "GemmWrw1x1_stride1", 0
    if r == 7:
        return 0, "GemmWrwUniversal", im2col
    return 5, "ConvAsmImplicitGemmGTCDynamicWrwXdlops", 0


def conv_time_ms(layer: ConvLayer, direction: str, algo: int, rng: random.Random) -> float:
    """A plausible Find time: FLOPs at 7-16 TFLOP/s by algorithm, with jitter."""
    y = layer.y
    flops = 2.0 * y.n * layer.k * y.h * y.w * layer.x.c * layer.r * layer.r
    rate = {0: 9e9, 1: 7e9, 3: 14e9, 5: 16e9}[algo] * (0.8 if direction == "wrw" else 1.0)
    return flops / rate * rng.uniform(0.9, 1.15) + 0.004


# A rendered record: (thread index, kind, text, delay ms before it).
# kind: "p" = MIOpen line with the format's prefix, "r" = raw line (no prefix).
Rec = tuple[int, str, str, float]



class RendererBase:
    """Turns calls into log records for one format; holds the per-log state."""

    def __init__(self, spec: SampleSpec, layers: Sequence[Layer]) -> None:
        self.spec = spec
        self.fmt = spec.format
        self.version = FORMAT_VERSION[self.fmt]
        self.sigs = SIGS[self.version]
        self.trace = self.fmt.startswith("trace")
        rng = random.Random(f"{spec.seed}:memory")
        self.mem = Memory(rng, layers)
        self.rng = random.Random(f"{spec.seed}:render")
        self.tf = self.fmt in ("trace2018", "trace2x")
        stream = 0x55D0C0000000 + rng.randrange(0x100000, 0xFFFFFF) * 0x10
        self.handle = (f"stream: {hex_addr(stream)}, device_id: 0" if self.fmt == "trace2x"
                       else "stream: 0, device_id: 0")
        self.eps = 0.001 if self.tf else 1e-05
        self.exp_avg = 0.01 if self.tf else 0.1
        self.db_hash = f"{rng.randrange(16 ** 9):09x}"
        self.fdb_user = f"/root/.config/miopen/gfx90a6e.HIP.2_20_0_{self.db_hash}.ufdb.txt"
        self.fdb_sys = "/opt/rocm-5.7.0/share/miopen/db/gfx90a6e.HIP.fdb.txt"
        self._described: set[Tensor] = set()
        self._conv_descs: set[tuple[int, int]] = set()

    # -- generic pieces ----------------------------------------------------------------
    def tensor(self, t: Tensor) -> str:
        return t.new() if self.version == "5.7" else t.old()

    def conv_desc(self, layer: ConvLayer) -> str:
        p, s = layer.pad, layer.stride
        if self.version == "1.7":
            return f"miopenConvolution, {p}, {p}, {s}, {s}, 1, 1, "
        return f"conv2d, miopenConvolution, miopenPaddingDefault, {{{p}, {p}}}, {{{s}, {s}}}, {{1, 1}}, "

    def fresh_tensor(self) -> str:
        return "{}, {}, packed, " if self.version == "5.7" else ""

    def block(self, func: str, values: dict[str, str], thread: int = 0, delay: float = 0.0) -> list[Rec]:
        """An API block: header, one line per logged argument (in macro order), ``}``."""
        header, params = self.sigs[func]
        if self.version == "1.7":
            recs: list[Rec] = [(thread, "p", header, delay)]
            recs += [(thread, "r", f"{name} = {values[name]}", 0.0) for name in params]
            recs.append((thread, "r", "}", 0.0))
            return recs
        recs = [(thread, "p", header, delay)]
        recs += [(thread, "p", f"\t{name} = {values[name]}", 0.0) for name in params]
        recs.append((thread, "p", "}", 0.0))
        return recs

    def command(self, fn: str, args: str, thread: int = 0, api: str = "") -> list[Rec]:
        """A driver command line: ``Command [fn] ./bin/MIOpenDriver ...`` (2.x+), or the
        unprefixed ``<api>: ./bin/MIOpenDriver ...`` of MIOpen 1.x."""
        if self.version == "1.7":
            return [(thread, "r", f"{api}: ./bin/MIOpenDriver {args}", 0.0)]
        if self.fmt == "trace55":
            return []  # API trace only (MIOPEN_ENABLE_LOGGING_CMD unset)
        return [(thread, "p", f"Command [{fn}] ./bin/MIOpenDriver {args}", 0.0)]

    def level(self, lvl: str, fn: str, msg: str, delay: float = 0.0) -> list[Rec]:
        if self.fmt != "info" or (lvl == "Info2" and self.spec.level < 6):
            return []
        return [(0, "p", f"{lvl} [{fn}] {msg}", delay)]

    def alpha(self, thread: int) -> tuple[str, str]:
        base = self.mem.alpha_worker if thread else self.mem.alpha_main
        return hex_addr(base), hex_addr(base - 4)

    # -- calls ---------------------------------------------------------------------------
    def render(self, call: Call) -> list[Rec]:
        if call.kind not in CALL_KINDS:
            raise ValueError(f"unknown call kind {call.kind!r}")
        return getattr(self, "_r_" + call.kind)(call)

    def _setup_tensors(self, layer: Layer, tensors: Iterable[tuple[str, Tensor]]) -> list[Rec]:
        """Create + set a descriptor for each tensor shape not seen before (the framework
        keeps one descriptor per shape)."""
        recs: list[Rec] = []
        if not self.trace:
            return recs
        for _, t in tensors:
            if t in self._described:
                continue
            self._described.add(t)
            recs += self.block("miopenCreateTensorDescriptor", {"tensorDesc": "0"})
            if self.version == "5.7":
                recs += self.block("miopenSetTensorDescriptor", {
                    "tensorDesc": self.fresh_tensor(), "dataType": "1", "nbDims": "4",
                    "dim.values": "{ " + " ".join(map(str, t.lens)) + " }",
                    "stride.values": "{ " + " ".join(map(str, t.strides)) + " }"})
            else:
                recs += self.block("miopenSet4dTensorDescriptor", {
                    "tensorDesc": "", "dataType": "1", "n": str(t.n), "c": str(t.c), "h": str(t.h), "w": str(t.w)})
        return recs

    def _r_setup_conv(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, ConvLayer)
        recs = self._setup_tensors(layer, (("x", layer.x), ("w", layer.w), ("y", layer.y)))
        if not self.trace:
            return recs
        if (layer.pad, layer.stride) in self._conv_descs:
            return recs
        self._conv_descs.add((layer.pad, layer.stride))
        default = ConvLayer("", layer.x, layer.k, layer.r, 1, 0)
        recs += self.block("miopenCreateConvolutionDescriptor", {"convDesc": "0"})
        p, s = str(layer.pad), str(layer.stride)
        names = ("u", "v") if self.version == "1.7" else ("stride_h", "stride_w")
        recs += self.block("miopenInitConvolutionDescriptor", {
            "convDesc": self.conv_desc(default), "c_mode": "0", "pad_h": p, "pad_w": p,
            names[0]: s, names[1]: s, "dilation_h": "1", "dilation_w": "1"})
        return recs

    def _r_setup_bn(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        recs = self._setup_tensors(layer, (("x", layer.x),))
        if not self.trace:
            return recs
        if self.version == "5.7":  # PyTorch sets the scale/bias descriptor itself
            return recs + self._setup_tensors(layer, (("param", layer.param),))
        if layer.param in self._described:
            return recs
        self._described.add(layer.param)
        recs += self.block("miopenCreateTensorDescriptor", {"tensorDesc": "0"})
        recs += self.block("miopenDeriveBNTensorDescriptor", {
            "derivedBnDesc": "", "xDesc": self.tensor(layer.x), "bn_mode": "1"})
        return recs

    def _r_setup_relu(self, call: Call) -> list[Rec]:
        if not self.trace:
            return []
        recs = self.block("miopenCreateActivationDescriptor", {"activDesc": "0"})
        recs += self.block("miopenSetActivationDescriptor", {
            "activDesc": "miopenActivationPASTHRU, , ", "mode": "3",
            "activAlpha": "1", "activBeta": "0", "activGamma": "1"})
        return recs

    def _r_setup_pool(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        recs = self._setup_tensors(layer, (("x", layer.x), ("y", layer.y)))
        if not self.trace:
            return recs
        recs += self.block("miopenCreatePoolingDescriptor", {"poolDesc": "0"})
        names = ("u", "v") if self.version == "1.7" else ("stride_h", "stride_w")
        w, p, s = str(layer.win), str(layer.pad), str(layer.stride)
        recs += self.block("miopenSet2dPoolingDescriptor", {
            "poolDesc": "miopenPoolingMax, , , , ", "mode": str(layer.mode), "windowHeight": w,
            "windowWidth": w, "pad_h": p, "pad_w": p, names[0]: s, names[1]: s})
        return recs
