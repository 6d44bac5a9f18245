"""The verdict's reference (miotui.execute.oracle*): independent of every backend it checks.

* Its modules import no backend code (an AST check), and a verdict on a non-RNN layer
  never calls the numpy backend's reference.
* It computes the right numbers: against torch's float64 kernels (a third, unrelated
  implementation) for convolutions of every kind, and against the numpy backend's
  float64 run for every other kind.
* A bug injected into a backend's own code path (flipped taps, an off-by-one pad,
  a wrong epsilon, a shifted window, a wrong count) makes that backend's verdict fail;
  with the old reference (the backend's own code in float64) most of these passed.
* A bug injected into the reference makes the verdict fail too.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from miotui.execute import oracle, oracle_basic, oracle_conv, reference
from miotui.execute.oracle import reference_name, reference_outputs
from miotui.execute.protocol import RunSettings
from miotui.execute.runner import clear_cache, run_layer
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    GroupNormProblem,
    LayerNormProblem,
    LRNProblem,
    PoolProblem,
    ProblemError,
    ReduceProblem,
    RNNProblem,
    SoftmaxProblem,
)

EXECUTE = Path(__file__).resolve().parents[2] / "miotui" / "execute"
ORACLE_MODULES = ("oracle_conv", "oracle_basic", "oracle_layers")
#: what the reference modules may import from the package, and which names
ALLOWED = {
    "miotui.problems": None,                     # the problem's definition: any name
    "miotui.execute.layer_shapes": None,         # tensor names and shapes: no math
    "miotui.execute.tensors": {"ReferenceUnsupported"},
    "miotui.execute.threads": {"Cancelled"},
    "miotui.execute.blas": {"blas_threads"},     # BLAS's thread count: no numbers
    "miotui.execute.oracle_conv": None,
}


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def _imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if base.startswith("."):
                base = "miotui.execute" + ("." + node.module if node.module else "")
            if base == "miotui.execute":   # "from miotui.execute import conv": a module each
                out += [(f"miotui.execute.{a.name}", ()) for a in node.names]
            else:
                out.append((base, tuple(a.name for a in node.names)))
    return out


@pytest.mark.parametrize("module", ORACLE_MODULES)
def test_reference_modules_import_no_backend_code(module):
    """The reference shares no code with the backends: it imports nothing of numpy's
    conv / reference / numba / torch / BLAS code, and no third-party kernel library."""
    for name, names in _imports(EXECUTE / f"{module}.py"):
        top = name.split(".")[0]
        if top != "miotui":
            assert top in ("numpy", "math", "os", "concurrent", "dataclasses", "typing", "__future__"), \
                f"{module} imports {name}"
            continue
        assert name in ALLOWED, f"{module} imports {name}: backend code the verdict must not share"
        allowed = ALLOWED[name]
        if allowed is not None:
            assert set(names) <= allowed, f"{module} imports {set(names) - allowed} from {name}"


def test_the_import_check_can_fail(tmp_path):
    """The check above sees the imports a shared-code reference would have."""
    bad = tmp_path / "bad.py"
    bad.write_text("from miotui.execute.conv_forward import conv_forward\nfrom miotui.execute import blas\n"
                   "from . import numba_kernels\n")
    names = [n for n, _ in _imports(bad)]
    assert names == ["miotui.execute.conv_forward", "miotui.execute.blas", "miotui.execute.numba_kernels"]
    assert not any(n in ALLOWED for n in names[:1] + names[2:])
    assert ALLOWED["miotui.execute.blas"] == {"blas_threads"}   # blas: its thread count, nothing else


def _problems():
    yield ConvProblem("fwd", "fp32", 2, 4, 6, (7, 6), (3, 3), (1, 1), (2, 1), (1, 1))
    yield PoolProblem("bwd", "fp32", 2, 3, (8, 7), (3, 3), (1, 1), (2, 2), "max")
    yield BatchNormProblem("bwd", "fp32", 3, 4, (5, 4), "spatial", save=True)
    yield ActivationProblem("bwd", "fp32", 2, 3, (4, 5), 9, 0.5, 1.0, 1.0)
    yield LRNProblem("bwd", "fp32", 2, 6, (5, 5), "cross", 5, 0.01, 0.75, 1.0)
    yield SoftmaxProblem("bwd", "fp32", 2, 5, (3, 4), 2, 1, 1.0)
    yield ReduceProblem("fwd", "fp32", (6, 5, 4), (0, 2), reduce_op=3, indices=True)
    yield LayerNormProblem("bwd", "fp32", (3, 4, 5), normalized_dim=1, mode=1)
    yield GroupNormProblem("fwd", "fp32", (2, 6, 3, 4), num_groups=3, mode=1)
    yield FusionProblem(0, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(2, 1),
                        dilations=(1, 1))


@pytest.mark.parametrize("problem", list(_problems()), ids=lambda p: f"{p.op}-{p.direction}")
def test_every_family_agrees_with_the_backend_and_never_calls_it(problem, monkeypatch):
    """Each family's reference gives the numpy backend's float64 numbers (both right),
    without calling the backend (patched to raise)."""
    inputs = reference.make_inputs(problem, 0)
    expected = reference.run_reference(problem, inputs, precision="fp64")

    def forbidden(*_a, **_k):
        raise AssertionError("the verification reference called the numpy backend")

    monkeypatch.setattr(reference, "run_reference", forbidden)
    got, _ = reference_outputs(problem, inputs)
    assert set(got) == set(expected)
    for name, want in expected.items():
        np.testing.assert_allclose(np.asarray(got[name], dtype=np.float64), np.asarray(want, dtype=np.float64),
                                   rtol=1e-9, atol=1e-12, err_msg=name)
    assert "float64" in reference_name(problem)


def _many_problems():
    """Every variant of every non-conv family the backends run (modes, directions, 2-D/3-D
    pooling, saved/running statistics, NaN in reductions, ...)."""
    for mode in ("max", "avg", "avg_in"):
        for d in ("fwd", "bwd"):
            for size, win, pad, st in (((9, 8), (3, 3), (1, 1), (2, 2)), ((9, 8), (2, 2), (0, 0), (2, 2)),
                                       ((7, 7, 6), (3, 3, 3), (1, 1, 1), (1, 2, 2)), ((9, 8), (5, 5), (2, 2), (3, 3))):
                yield PoolProblem(d, "fp32", 2, 3, size, win, pad, st, mode), None
    for d in ("fwd_train", "fwd_infer", "bwd"):
        for m in ("spatial", "per_activation"):
            for save in (False, True):
                for running in (False, True):
                    yield BatchNormProblem(d, "fp32", 4, 3, (5, 6), m, save=save, running=running), None
    for mode in range(10):
        for d in ("fwd", "bwd"):
            yield ActivationProblem(d, "fp32", 2, 3, (4, 5), mode, 0.7, 1.3, 2.0), None
    for m in ("cross", "within"):
        for d in ("fwd", "bwd"):
            for size in (3, 4, 5):
                yield LRNProblem(d, "fp32", 2, 6, (5, 7), m, size, 0.01, 0.75, 1.0), None
    for alg in (0, 1, 2):
        for mode in (0, 1):
            for d in ("fwd", "bwd"):
                yield SoftmaxProblem(d, "fp32", 2, 5, (3, 4), alg, mode, 1.0), None
    for op in range(8):
        for dims in ((0, 2), (1,), (0, 1, 2)):
            for idx in ((False, True) if op in (2, 3, 4) else (False,)):
                for prop in (False, True):
                    p = ReduceProblem("fwd", "fp32", (6, 5, 4), dims, reduce_op=op, indices=idx, beta=0.5, alpha=1.5,
                                      nan_propagation=prop)
                    yield p, None
                    yield p, "nan"
    for v in ("layernorm", "addlayernorm", "t5layernorm"):
        for d in ("fwd", "bwd"):
            for mode in (0, 1):
                for nd in (1, 2):
                    if not (v == "addlayernorm" and d == "bwd"):
                        yield LayerNormProblem(d, "fp32", (3, 4, 5), normalized_dim=nd, mode=mode, variant=v), None
    for mode in (0, 1):
        yield GroupNormProblem("fwd", "fp32", (2, 6, 3, 4), num_groups=3, mode=mode), None
    for fm in range(7):
        yield FusionProblem(fm, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(2, 1),
                            dilations=(1, 1)), None


_MANY = list(_many_problems())


@pytest.mark.parametrize("problem,twist", _MANY, ids=[f"{p.op}-{p.direction}-{i}" for i, (p, _) in enumerate(_MANY)])
def test_every_variant_agrees_with_the_numpy_backend(problem, twist):
    """Two independent formulations giving the same float64 numbers on every variant
    (the numpy backend's own are checked against torch in test_reference_*.py)."""
    inputs = reference.make_inputs(problem, 0)
    if twist == "nan":   # a NaN and a negative value: MIOpen's NaN rules and signs
        inputs["x"] = inputs["x"].copy()
        inputs["x"][0, 0, 0] = np.nan
        inputs["x"][1, 2, 3] = -0.5
    want = reference.run_reference(problem, inputs, precision="fp64")
    got, _ = reference_outputs(problem, inputs)
    assert set(got) == set(want)
    for name in want:
        w, g = np.asarray(want[name], dtype=np.float64), np.asarray(got[name], dtype=np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        np.testing.assert_allclose(np.nan_to_num(g), np.nan_to_num(w), rtol=1e-9, atol=1e-12, err_msg=name)


# ----------------------------------------------------------------------------- conv against torch

def _torch():
    torch = pytest.importorskip("torch")
    return torch, torch.nn.functional


def _torch_pad(p: ConvProblem) -> list[int]:
    """F.pad's list for the problem's padding, which may be asymmetric (room for every tap after)."""
    c = oracle_conv.plain_conv(p)
    after = [a - b - i for a, b, i in zip(c.padded, c.pads, c.in_sp, strict=True)]
    pad: list[int] = []
    for b, a in zip(reversed(c.pads), reversed(after), strict=True):
        pad += [b, a]
    return pad


def _conv_cases():
    rng = np.random.default_rng(7)
    out = []
    while len(out) < 40:
        nd = int(rng.choice([2, 2, 3]))
        g = int(rng.choice([1, 2, 3]))
        f = tuple(int(v) for v in rng.integers(1, 5, nd))
        try:
            p = ConvProblem("fwd", "fp32", 2, g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3)),
                            tuple(int(v) for v in rng.integers(4, 9, nd)), f,
                            tuple(int(v) for v in rng.integers(0, 3, nd)), tuple(int(v) for v in rng.integers(1, 4, nd)),
                            tuple(int(v) for v in rng.integers(1, 3, nd)), g,
                            pad_mode=str(rng.choice(["default", "default", "same", "valid"])))
            p.validate()
        except ProblemError:
            continue
        out.append(p)
    return out


@pytest.mark.parametrize("problem", _conv_cases(), ids=lambda p: f"{p.ndim}d-g{p.groups}-{p.pad_mode}")
def test_conv_forward_matches_torch_float64(problem):
    """The tap sum against torch's float64 conv: groups, dilation, stride, 2-D / 3-D, and
    "same" padding with an even filter (one more pixel after than before)."""
    torch, F = _torch()
    t = reference.make_inputs(problem, 1)
    x, w = (torch.from_numpy(np.asarray(t[n], dtype=np.float64)) for n in ("x", "w"))
    conv = F.conv2d if problem.ndim == 2 else F.conv3d
    want = conv(F.pad(x, _torch_pad(problem)), w, stride=problem.strides, dilation=problem.dilations,
                groups=problem.groups).numpy()
    np.testing.assert_allclose(reference_outputs(problem, t)[0]["y"], want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("direction", ["bwd", "wrw"])
@pytest.mark.parametrize("case", _conv_cases()[:16], ids=lambda p: f"{p.ndim}d-g{p.groups}-{p.pad_mode}")
def test_conv_gradients_match_torch_autograd(case, direction):
    """Backward data and weights are the exact gradients of the (torch-checked) forward:
    torch's float64 autograd through its own conv gives the same dx and dw."""
    torch, F = _torch()
    p = dataclasses.replace(case, direction=direction)
    t = reference.make_inputs(p, 2)
    fwd = reference.make_inputs(case, 2)
    x = torch.from_numpy(np.asarray(fwd["x"], dtype=np.float64)).requires_grad_(True)
    w = torch.from_numpy(np.asarray(t.get("w", fwd["w"]), dtype=np.float64)).requires_grad_(True)
    conv = F.conv2d if case.ndim == 2 else F.conv3d
    y = conv(F.pad(x, _torch_pad(case)), w, stride=case.strides, dilation=case.dilations, groups=case.groups)
    y.backward(torch.from_numpy(np.asarray(t["dy"], dtype=np.float64)))
    ins = {"dy": t["dy"], "w": w.detach().numpy()} if direction == "bwd" else {"x": x.detach().numpy(), "dy": t["dy"]}
    got = reference_outputs(p, ins)[0]
    want = x.grad.numpy() if direction == "bwd" else w.grad.numpy()
    np.testing.assert_allclose(got["dx" if direction == "bwd" else "dw"], want, rtol=1e-10, atol=1e-10)


_TRANS = [  # (nd, filter, pad, stride, dilation, output padding, groups)
    (2, 3, 1, 2, 1, 1, 2), (3, 3, 1, 2, 1, 1, 2), (2, 2, 0, 3, 2, 1, 1), (2, 4, 2, 1, 1, 0, 3),
    (2, 3, 0, 2, 2, 1, 1), (3, 2, 1, 2, 1, 0, 1), (2, 1, 0, 2, 1, 1, 2),
]


@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("geometry", _TRANS, ids=[f"{g[0]}d-f{g[1]}p{g[2]}s{g[3]}d{g[4]}a{g[5]}g{g[6]}" for g in _TRANS])
def test_transposed_conv_matches_torch(direction, geometry):
    """Transposed convolution (groups, dilation, stride, output padding, 2-D / 3-D)
    against torch's float64 conv_transpose and its autograd."""
    torch, F = _torch()
    nd, f, pad, st, dil, adj, g = geometry
    p = ConvProblem(direction, "fp32", 2, 2 * g, 3 * g, (5,) * nd, (f,) * nd, (pad,) * nd, (st,) * nd, (dil,) * nd, g,
                    "trans", (adj,) * nd)
    t = reference.make_inputs(p, 3)
    fwd = reference.make_inputs(dataclasses.replace(p, direction="fwd"), 3)
    x = torch.from_numpy(np.asarray(fwd["x"], dtype=np.float64)).requires_grad_(True)
    w = torch.from_numpy(np.asarray(fwd["w"], dtype=np.float64)).requires_grad_(True)
    tconv = F.conv_transpose2d if nd == 2 else F.conv_transpose3d
    y = tconv(x, w, stride=p.strides, padding=p.pads, output_padding=p.trans_output_pads, groups=p.groups,
              dilation=p.dilations)
    if direction == "fwd":
        np.testing.assert_allclose(reference_outputs(p, fwd)[0]["y"], y.detach().numpy(), rtol=1e-10, atol=1e-10)
        return
    y.backward(torch.from_numpy(np.asarray(t["dy"], dtype=np.float64)))
    if direction == "bwd":
        got = reference_outputs(p, {"dy": t["dy"], "w": fwd["w"]})[0]["dx"]
        np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-10, atol=1e-10)
    else:
        got = reference_outputs(p, {"x": fwd["x"], "dy": t["dy"]})[0]["dw"]
        np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- mutations

def _verdict(problem, backend: str):
    res = run_layer(problem, RunSettings(backend=backend, iters=1, warmup=0), use_cache=False)
    assert res.status in ("ok", "failed"), res.message
    return res


def _flip_taps(w):
    return np.ascontiguousarray(w[(Ellipsis,) + (slice(None, None, -1),) * (w.ndim - 2)])


def _mut_numpy_gemm_taps(mp):
    from miotui.execute import conv_forward
    orig = conv_forward.weights_gemm
    mp.setattr(conv_forward, "weights_gemm", lambda w, g: orig(_flip_taps(w), g))


def _mut_numpy_pad_off_by_one(mp):
    from miotui.execute import conv
    orig = conv.conv_geometry
    mp.setattr(conv, "conv_geometry",
               lambda p: dataclasses.replace(orig(p), pad_before=tuple(v + 1 for v in orig(p).pad_before)))


def _mut_numpy_wrw_taps(mp):
    from miotui.execute import conv
    orig = conv.conv_backward_weights
    mp.setattr(conv, "conv_backward_weights", lambda *a: _flip_taps(orig(*a)))


def _mut_numba_taps(mp):
    from miotui.execute import numba_kernels
    orig = numba_kernels.conv_forward
    mp.setattr(numba_kernels, "conv_forward", lambda x, w, g, cancel: orig(x, _flip_taps(w), g, cancel))


def _mut_numba_pool_pad(mp):
    from miotui.execute import numba_kernels
    orig = numba_kernels.pool_forward
    mp.setattr(numba_kernels, "pool_forward",
               lambda x, mode, win, st, pads, out, cancel: orig(x, mode, win, st, tuple(v + 1 for v in pads), out,
                                                                cancel))


def _mut_torch_pad(mp):
    from miotui.execute import torch_ops
    orig = torch_ops._conv_pads
    mp.setattr(torch_ops, "_conv_pads", lambda p: tuple(tuple(v + 1 if i == 0 else v for v in side)
                                                         for i, side in enumerate(orig(p))))


def _mut_bn_epsilon(mp):
    from miotui.execute import reference_basic
    mp.setattr(reference_basic, "BN_EPSILON", 0.1)


def _mut_pool_count(mp):
    from miotui.execute import reference_pool
    orig = reference_pool._pool_counts
    mp.setattr(reference_pool, "_pool_counts", lambda p: orig(p) + 1)


def _mut_lrn_window(mp):
    from miotui.execute import reference_basic
    orig = reference_basic._window_sum
    mp.setattr(reference_basic, "_window_sum", lambda a, axes, before, after: orig(a, axes, before + 1, after - 1))


def _mut_reduce_order(mp):
    from miotui.execute import reference_reduce
    orig = reference_reduce._slices
    mp.setattr(reference_reduce, "_slices", lambda p, x: orig(p, x)[..., ::-1])


def _mut_norm_eps(mp):
    from miotui.execute import reference_norm
    orig = reference_norm._stats
    mp.setattr(reference_norm, "_stats", lambda p, x, dt: orig(dataclasses.replace(p, eps=p.eps * 1e4), x, dt))


def _mut_softmax_alpha(mp):
    from miotui.execute import reference_basic
    orig = reference_basic.softmax
    mp.setattr(reference_basic, "softmax", lambda p, x, dy: orig(dataclasses.replace(p, alpha=p.alpha * 1.01), x, dy))


_CONV = ConvProblem("fwd", "fp32", 2, 8, 8, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1))
_CONV_S2_BWD = ConvProblem("bwd", "fp32", 2, 8, 8, (9, 9), (3, 3), (1, 1), (2, 2), (1, 1))
_CONV_WRW = ConvProblem("wrw", "fp32", 2, 8, 8, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1))
_DEPTHWISE = ConvProblem("fwd", "fp32", 2, 8, 8, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1), 8)
_POOL = PoolProblem("fwd", "fp32", 2, 3, (9, 9), (3, 3), (1, 1), (2, 2), "avg")
_BN = BatchNormProblem("fwd_train", "fp32", 4, 3, (5, 6), "spatial")
_LRN = LRNProblem("fwd", "fp32", 2, 8, (5, 5), "cross", 5, 0.5, 0.75, 1.0)
_REDUCE = ReduceProblem("fwd", "fp32", (6, 5, 4), (2,), reduce_op=3, indices=True)
_LN = LayerNormProblem("fwd", "fp32", (3, 4, 5), normalized_dim=1, mode=1)
_SOFTMAX = SoftmaxProblem("fwd", "fp32", 2, 5, (3, 4), 1, 1, 1.0)

MUTATIONS = [
    ("numpy", _CONV, _mut_numpy_gemm_taps, "flipped taps in numpy's GEMM weights"),
    ("numpy", _CONV_S2_BWD, _mut_numpy_pad_off_by_one, "off-by-one padding in numpy's geometry"),
    ("numpy", _CONV_WRW, _mut_numpy_wrw_taps, "flipped taps in numpy's weight gradient"),
    ("numba", _DEPTHWISE, _mut_numba_taps, "flipped taps in numba's direct conv"),
    ("numba", dataclasses.replace(_POOL, mode="max"), _mut_numba_pool_pad, "off-by-one pad in numba's pooling"),
    ("torch", _CONV, _mut_torch_pad, "off-by-one padding in torch's conv"),
    ("numpy", _BN, _mut_bn_epsilon, "wrong batch-norm epsilon (numpy)"),
    ("torch", _BN, _mut_bn_epsilon, "wrong batch-norm epsilon (torch reads the same constant)"),
    ("numpy", _POOL, _mut_pool_count, "wrong average-pool count"),
    ("numpy", _LRN, _mut_lrn_window, "LRN window shifted by one"),
    ("numpy", _REDUCE, _mut_reduce_order, "reduction scanned backwards (wrong indices)"),
    ("numpy", _LN, _mut_norm_eps, "wrong layer-norm epsilon"),
    ("numpy", _SOFTMAX, _mut_softmax_alpha, "softmax scaled by a wrong alpha"),
]


@pytest.mark.parametrize("backend,problem,mutate,what", MUTATIONS, ids=[m[3] for m in MUTATIONS])
def test_a_bug_in_a_backend_fails_its_verdict(backend, problem, mutate, what, monkeypatch):
    if backend == "numba":
        from miotui.execute import numba_kernels
        if numba_kernels.available() is not None:
            pytest.skip("numba is not installed")
    assert _verdict(problem, backend).status == "ok", "the backend passes before the bug"
    mutate(monkeypatch)
    res = _verdict(problem, backend)
    assert res.status == "failed", f"{what}: {res.message}"
    assert res.verification is not None and not res.verification.ok
    assert res.reference == reference_name(problem)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_bug_in_the_conv_reference_fails_the_verdict(backend, monkeypatch):
    """The reference is checked by the backends as much as they by it: an off-by-one in
    its padding fails a correct backend's verdict."""
    assert _verdict(_CONV, backend).status == "ok"
    orig = oracle_conv._pad
    monkeypatch.setattr(oracle_conv, "_pad", lambda x, c: np.roll(orig(x, c), 1, axis=-1))
    assert _verdict(_CONV, backend).status == "failed"


def test_a_bug_in_the_ops_reference_fails_the_verdict(monkeypatch):
    assert _verdict(_BN, "numpy").status == "ok"
    monkeypatch.setattr(oracle_basic, "BATCHNORM_EPS", 0.1)
    assert _verdict(_BN, "numpy").status == "failed"


# ----------------------------------------------------------------------------- what it is called

def test_run_json_names_the_reference_never_the_backend_algorithm(capsys):
    """``miotui run --json``: verification.reference says what the verdict compared against."""
    from miotui.cli import main
    rc = main(["run", "conv -n 2 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1", "--backend", "numpy",
               "--iters", "1", "--json"])
    res = json.loads(capsys.readouterr().out)["layers"][0]["results"][0]
    assert rc == 0 and res["status"] == "ok"
    ver = res["verification"]
    assert ver["reference"] == "direct float64 tap sum"
    assert "im2col" not in ver["reference"] and "GEMM" not in ver["reference"]
    assert "im2col" in res["engine"]                       # the backend's own algorithm, named apart
    assert "direct float64 tap sum" in ver["how"] and "direct float64 tap sum" in res["message"]


_RNN = RNNProblem("bwd", "fp32", "lstm", (3, 2, 1), 3, 3, 4, layers=2, bidirectional=True)


def test_rnn_verdicts_are_cross_checked():
    """numpy's RNN is checked against torch's float64 RNN and torch's against numpy's:
    neither against itself (the name says which)."""
    _torch()
    assert reference_name(_RNN, "numpy") == oracle.RNN_TORCH
    assert reference_name(_RNN, "torch") == reference_name(_RNN, "miopen-driver") == oracle.RNN_NUMPY
    for backend in ("numpy", "torch"):
        res = _verdict(_RNN, backend)
        assert res.status == "ok" and res.reference == reference_name(_RNN, backend)


def test_a_bug_in_numpys_rnn_fails_its_verdict(monkeypatch):
    """A wrong step in numpy's RNN (the old reference ran the same code and passed it)."""
    _torch()
    from miotui.execute import reference_rnn
    orig = reference_rnn._sigmoid
    monkeypatch.setattr(reference_rnn, "_sigmoid", lambda a: orig(1.01 * a))   # a wrong gate slope
    assert _verdict(_RNN, "numpy").status == "failed"


def test_without_torch_the_rnn_reference_says_it_is_not_independent(monkeypatch):
    monkeypatch.setattr(oracle, "_torch_installed", lambda: False)
    assert reference_name(_RNN, "numpy") == oracle.RNN_SELF and "not independent" in oracle.RNN_SELF
    assert _verdict(_RNN, "numpy").reference == oracle.RNN_SELF


def test_pooling_in_chunks_gives_the_same_numbers(monkeypatch):
    """Pooling's reference runs a few images at a time (bounded scratch): any chunk size
    gives the whole batch's numbers."""
    for direction in ("fwd", "bwd"):
        for mode in ("max", "avg"):
            p = PoolProblem(direction, "fp32", 5, 3, (9, 8), (3, 3), (1, 1), (2, 2), mode)
            t = reference.make_inputs(p, 4)
            whole, _ = reference_outputs(p, t)
            monkeypatch.setattr(oracle_basic, "POOL_CHUNK_BYTES", 1)
            parts, _ = reference_outputs(p, t)
            monkeypatch.undo()
            (name, want), = whole.items()
            np.testing.assert_array_equal(parts[name], want)


def test_detail_screen_says_what_the_verdict_compared_against():
    from rich.console import Console

    from miotui.screens.detail_view import runs_renderable
    res = _verdict(_CONV, "numpy")
    console = Console(width=200, record=True)
    console.print(runs_renderable([res], [], ""))
    assert "compared against: direct float64 tap sum" in console.export_text()


def test_conv_reference_split_over_threads_gives_the_same_numbers(monkeypatch):
    """The batch split (one part per core) changes nothing: 1, 2 and 3 parts agree."""
    for direction in ("fwd", "bwd", "wrw"):
        p = ConvProblem(direction, "fp32", 5, 6, 4, (7, 7), (3, 3), (1, 1), (2, 2), (1, 1), 2)
        t = reference.make_inputs(p, 5)
        got = []
        for cores in (1, 2, 3):
            monkeypatch.setattr(oracle_conv, "_cores", lambda c=cores: c)
            got.append(reference_outputs(p, t)[0])
        for other in got[1:]:
            (name, want), = got[0].items()
            np.testing.assert_allclose(other[name], want, rtol=1e-12, atol=1e-12)


def test_conv_reference_stops_when_cancelled():
    import threading

    from miotui.execute.threads import Cancelled
    flag = threading.Event()
    flag.set()
    with pytest.raises(Cancelled):
        reference_outputs(_CONV, reference.make_inputs(_CONV, 0), cancel=flag)


@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
def test_conv_reference_memory_stays_within_what_the_guard_counts(direction):
    """The guard counts the numpy backend's float64 run for verification; the tap sum's
    peak (inputs' float64 copies, output, padded chunk, blocks) stays below it."""
    import tracemalloc
    p = ConvProblem(direction, "fp32", 4, 32, 32, (40, 40), (3, 3), (1, 1), (1, 1), (1, 1))
    t = reference.make_inputs(p, 0)
    tracemalloc.start()
    try:
        reference_outputs(p, t)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    held = sum(a.nbytes for a in t.values())
    assert peak + held <= reference.peak_bytes(p, "fp64")


def test_a_torch_that_does_not_load_falls_back_and_says_so(monkeypatch):
    _torch()

    def broken(*_a):
        raise ImportError("libtorch_cpu.so: cannot open shared object file")

    monkeypatch.setattr(oracle, "_torch_rnn64", broken)
    res = _verdict(_RNN, "numpy")
    assert res.status == "ok" and "not independent" in res.reference and "does not load" in res.reference


def test_the_issue_scenario_a_flipped_filter_in_numpys_gemm_fails_numpy_not_torch(monkeypatch):
    """Issue 19: a flipped filter injected into numpy's GEMM step left numpy 'ok' (its own
    code in float64 agreed with it) and marked the correct torch FAILED.  Now numpy fails
    and torch passes."""
    _torch()
    _mut_numpy_gemm_taps(monkeypatch)
    assert _verdict(_CONV, "numpy").status == "failed"
    assert _verdict(_CONV, "torch").status == "ok"
