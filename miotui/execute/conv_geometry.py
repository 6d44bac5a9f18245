"""The convolution a ConvProblem runs, and how a run is cut into chunks.

A transposed convolution is run as its underlying convolution (MIOpen's definition):
transposed forward = backward data of the convolution whose input is y and whose output
is x, transposed backward data = that convolution's forward, and transposed backward
weights = its weight gradient with x and dy swapped.  :class:`ConvGeometry` describes
that underlying convolution; :class:`ConvPlan` how many images (and, when one image's
columns do not fit ``chunk_bytes``, how many output rows) each chunk takes.  The
thresholds below choose between the column layouts (see :mod:`miotui.execute.conv_forward`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from miotui.problems import ConvProblem

#: Column-buffer budget per chunk (bytes).  The whole-batch im2col of ResNet-50's
#: largest layers at batch 8 is ~60 MB, so typical layers run in one chunk.
CHUNK_BYTES = 128 << 20

#: Per-image GEMMs are used when a chunk's output spatial size is at least this;
#: below it one long GEMM over (C*R*S, n*Ho*Wo) runs faster (thin GEMMs are slow).
#: The long GEMM costs a transposing copy of the output (and, for 1x1 layers, of the
#: input); measured on ResNet-50's layers at batch 8 (2 cores, OpenBLAS Haswell
#: kernels), per-image GEMMs were 5-15% faster from 28x28 (784) up and within noise
#: at 14x14.
BATCHED_MIN_SPATIAL = 784

#: The same threshold for 1x1 filters (any stride): their per-image GEMM is the whole
#: convolution (stride 1 reads x in place), and it beat the long GEMM by 15-35% at
#: 14x14 and 28x28 (forward and backward data); at 7x7 the long GEMM still wins.
BATCHED_MIN_SPATIAL_1X1 = 128

#: Gather strided convolutions through a phase split of the last axis (see
#: :func:`uses_phases`) when output rows are at least this long and the filter has at
#: least this many taps per stride step along the row.
PHASE_GATHER = True
PHASE_MIN_ROW = 8
PHASE_MIN_TAPS_PER_STRIDE = 2


@dataclass(frozen=True)
class ConvGeometry:
    """The underlying (non-transposed) convolution a ConvProblem runs.

    ``cu``/``ku`` are the underlying convolution's input/output channels, ``in_sp`` its
    input (for a transposed problem: y's spatial size), ``out_sp`` its output.  The input
    is padded by ``pad_before`` and to ``padded`` per axis; only the first ``needed``
    positions take part (``(out-1)*stride + dilation*(filter-1) + 1``).
    """

    n: int
    cu: int
    ku: int
    groups: int
    in_sp: tuple[int, ...]
    out_sp: tuple[int, ...]
    filt: tuple[int, ...]
    strides: tuple[int, ...]
    dils: tuple[int, ...]
    pad_before: tuple[int, ...]

    @property
    def nd(self) -> int:
        return len(self.in_sp)

    @property
    def cg(self) -> int:
        return self.cu // self.groups

    @property
    def kg(self) -> int:
        return self.ku // self.groups

    @property
    def eff(self) -> tuple[int, ...]:
        return tuple(d * (f - 1) + 1 for f, d in zip(self.filt, self.dils, strict=True))

    @property
    def needed(self) -> tuple[int, ...]:
        return tuple((o - 1) * s + e for o, s, e in zip(self.out_sp, self.strides, self.eff, strict=True))

    @property
    def padded(self) -> tuple[int, ...]:
        return tuple(max(nd, p + i) for nd, p, i in zip(self.needed, self.pad_before, self.in_sp, strict=True))

    @property
    def taps(self) -> int:
        return math.prod(self.filt)

    @property
    def q(self) -> int:
        """GEMM reduction length of the forward pass: C/G * prod(filter)."""
        return self.cg * self.taps

    @property
    def out_elems(self) -> int:
        return math.prod(self.out_sp)

    @property
    def is_pointwise(self) -> bool:
        """1x1, stride 1, no padding: the input already is the column matrix."""
        return (all(f == 1 for f in self.filt) and all(s == 1 for s in self.strides)
                and all(p == 0 for p in self.pad_before) and self.in_sp == self.out_sp)

    @property
    def needs_pad(self) -> bool:
        return any(p != 0 for p in self.pad_before) or self.padded != self.in_sp


def conv_geometry(problem: ConvProblem) -> ConvGeometry:
    """Map a ConvProblem (normal or transposed, any pad mode) to its underlying convolution."""
    nd = problem.ndim
    if problem.mode == "trans":
        pads = problem.pads
        return ConvGeometry(problem.n, problem.k, problem.c, problem.groups, problem.out_spatial,
                            problem.in_spatial, problem.filter, problem.strides, problem.dilations, pads)
    out_sp = problem.out_spatial
    if problem.pad_mode == "same":
        # TF/MIOpen "same": total padding so that out = ceil(in/stride); the odd pixel
        # goes after (MIOpenDriver's -z same puts floor(total/2) before).
        pads = []
        for i in range(nd):
            eff = problem.dilations[i] * (problem.filter[i] - 1) + 1
            total = max((out_sp[i] - 1) * problem.strides[i] + eff - problem.in_spatial[i], 0)
            pads.append(total // 2)
        pads_t = tuple(pads)
    elif problem.pad_mode == "valid":
        pads_t = (0,) * nd
    else:
        pads_t = problem.pads
    return ConvGeometry(problem.n, problem.c, problem.k, problem.groups, problem.in_spatial,
                        out_sp, problem.filter, problem.strides, problem.dilations, pads_t)


# ----------------------------------------------------------------------------- conv plan

@dataclass(frozen=True)
class ConvPlan:
    """How a run is chunked: ``images`` per chunk, and ``rows`` of the first output
    spatial axis per chunk (all rows unless a single image's columns exceed the budget)."""

    images: int
    rows: int
    batched: bool
    col_bytes: int
    budget: int

    def chunks(self, g: ConvGeometry) -> list[tuple[int, int, int, int]]:
        out0 = g.out_sp[0]
        return [(n0, min(n0 + self.images, g.n), h0, min(h0 + self.rows, out0))
                for n0 in range(0, g.n, self.images) for h0 in range(0, out0, self.rows)]


def conv_plan(g: ConvGeometry, itemsize: int, chunk_bytes: int) -> ConvPlan:
    per_image = g.cu * g.taps * g.out_elems * itemsize
    if g.is_pointwise:
        per_image = 0  # no column buffer (forward/backward data); wrw copies x per chunk
        per_image_wrw = g.cu * g.out_elems * itemsize
        images = max(1, min(g.n, chunk_bytes // max(per_image_wrw, 1)))
        return ConvPlan(images, g.out_sp[0], g.out_elems >= BATCHED_MIN_SPATIAL_1X1, images * per_image_wrw,
                        chunk_bytes)
    if per_image <= chunk_bytes:
        images = max(1, min(g.n, chunk_bytes // per_image))
        rows = g.out_sp[0]
    else:
        images = 1
        per_row = max(per_image // g.out_sp[0], 1)
        rows = max(1, min(g.out_sp[0], chunk_bytes // per_row))
    chunk_spatial = rows * (g.out_elems // g.out_sp[0])
    one_by_one = all(f == 1 for f in g.filt)
    batched = chunk_spatial >= (BATCHED_MIN_SPATIAL_1X1 if one_by_one else BATCHED_MIN_SPATIAL)
    col_bytes = images * g.cu * g.taps * chunk_spatial * itemsize
    return ConvPlan(images, rows, batched, col_bytes, chunk_bytes)



def uses_phases(g: ConvGeometry) -> bool:
    """Whether the im2col gather goes through a phase split of the last spatial axis.

    With a stride along the last (contiguous) axis, the window view reads every
    stride-th element, and numpy copies such a view one element at a time (measured
    2-6 GB/s).  Splitting each padded row into its ``stride`` phases first (one strided
    copy of the input) turns every filter tap's read into a contiguous run of Wo
    elements.  It pays where the row has many taps per stride step, so that the columns
    are several times the input: ResNet-50's 7x7 stride-2 stem ran ~9% faster forward.
    On 3x3 stride-2 layers the extra copy cost more than it saved (10-15% slower), and
    a 1x1 filter has one tap: those keep the direct gather.
    """
    return (PHASE_GATHER and g.nd >= 2 and g.strides[-1] > 1 and g.filt[-1] > 1
            and g.filt[-1] >= PHASE_MIN_TAPS_PER_STRIDE * g.strides[-1]
            and g.out_sp[-1] >= PHASE_MIN_ROW)


def flipped_geometry(g: ConvGeometry) -> Optional[ConvGeometry]:
    """Backward data at stride 1 as a forward convolution, or None where that does not apply.

    With stride 1 there is nothing to zero-insert: dx is the correlation of dy, padded by
    ``dilation*(filter-1) - pad``, with the filter flipped and its channel axes swapped.
    Its im2col gather runs at copy speed, while col2im's one strided add per tap is ~2x
    slower (measured: 7 ms vs 3 ms on a 64-channel 56x56 layer).  For stride > 1 the
    equivalent forward form would need a zero-inserted dy (stride**2 the work and
    memory), so col2im is used there.
    """
    if g.is_pointwise or any(s != 1 for s in g.strides):
        return None
    pads = tuple(e - 1 - p for e, p in zip(g.eff, g.pad_before, strict=True))
    if any(p < 0 for p in pads):
        return None
    return ConvGeometry(g.n, g.ku, g.cu, g.groups, g.out_sp, g.in_sp, g.filt, g.strides, g.dils, pads)
