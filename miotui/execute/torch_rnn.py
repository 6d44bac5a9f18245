"""RNNs on torch's own kernels (``torch.nn.RNN``/``LSTM``/``GRU``: cuDNN or MIOpen on a GPU,
ATen's on the CPU), fed MIOpen's tensors.

What is translated, and why it is exact:

* parameters: each direction's blocks of MIOpen's flat buffer become torch's
  ``weight_ih_l{k}[_reverse]``, ``weight_hh_*``, ``bias_ih_*``, ``bias_hh_*``, with the
  gate rows reordered (LSTM i f o g -> i f g o, GRU z r c -> r z n:
  :data:`miotui.execute.rnn_layout.TORCH_FROM_MIOPEN`).  torch's GRU applies the reset
  gate to the hidden product after its bias, as MIOpen does, so only the order differs.
* skip input (MIOpen's ``miopenRNNskip``, which torch lacks): the first layer's input
  matrices are stacked identities, ``x @ I`` being ``x`` exactly; their gradient is
  dropped (MIOpen has no such parameters).
* per-step batch sizes: a ``PackedSequence`` of the rows sorted longest first (MIOpen's
  packed form is torch's), or a plain (T, N, C) tensor when every sample runs every step.

Backward passes: the forward pass runs once when the inputs are prepared (untimed, as
MIOpen's backward reuses the reserve space its forward training call filled), and each
timed call is one ``torch.autograd.grad`` over that graph: the input gradients (backward
data) or the parameter gradients (backward weights).  A training forward runs with the
parameters requiring gradients (so the kernels save what backward needs, as MIOpen's
training forward fills its reserve space); an inference forward under ``no_grad``.
"""

from __future__ import annotations

from typing import Any, Optional

from miotui.execute.layer_shapes import rnn_shapes
from miotui.execute.rnn_layout import seq_packing, torch_gate_rows, weight_views
from miotui.problems import RNNProblem


class TorchRNN:
    """One RNN layer set up in torch: the module with MIOpen's parameters loaded, the
    packing of its sequences, and for a backward pass the forward graph to differentiate."""

    def __init__(self, p: RNNProblem, t: dict[str, Any]):
        import torch

        self.p = p
        x = t["x"]
        dev, dt = x.device, x.dtype
        pk = seq_packing(p)
        self.pk = pk
        self.index = torch.from_numpy(pk.index).to(dev)
        self.order = torch.from_numpy(pk.order).to(dev)
        self.inverse = torch.empty_like(self.order)
        self.inverse[self.order] = torch.arange(self.order.numel(), device=dev)
        alive = [b for b in pk.batches if b > 0]
        self.batch_sizes = torch.tensor(alive, dtype=torch.int64)   # PackedSequence wants them on the CPU
        self.uniform = len(alive) == pk.steps and all(b == pk.n for b in alive)
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(p.mode, torch.nn.RNN)
        kw = {} if p.mode in ("lstm", "gru") else {"nonlinearity": p.mode}
        self.module = cls(p.in_size, p.hidden, num_layers=p.layers, bias=p.bias, bidirectional=p.bidirectional,
                          **kw).to(device=dev, dtype=dt)
        self._load(t["w"])
        self.graph: Optional[tuple[list[Any], list[Any], list[Any]]] = None
        if p.direction != "fwd":
            self._build_graph(t)

    # -------------------------------------------------------------- parameters

    def _params(self) -> list[tuple[int, int, str, Any]]:
        """(layer, direction, kind, torch parameter) for every parameter."""
        out = []
        for li in range(self.p.layers):
            for d in range(self.p.directions):
                sfx = f"l{li}" + ("_reverse" if d else "")
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    param = getattr(self.module, f"{kind}_{sfx}", None)
                    if param is not None:
                        out.append((li, d, kind, param))
        return out

    def _skipped(self, li: int, kind: str) -> bool:
        return li == 0 and kind == "weight_ih" and self.p.input_mode == "skip"

    def _load(self, w: Any) -> None:
        import torch
        p = self.p
        rows = torch.from_numpy(torch_gate_rows(p.mode, p.hidden)).to(w.device)
        views = weight_views(p, w)
        with torch.no_grad():
            for li, d, kind, param in self._params():
                if self._skipped(li, kind):
                    eye = torch.eye(p.hidden, dtype=param.dtype, device=param.device)
                    param.copy_(eye.repeat(p.gates, 1))
                    continue
                param.copy_(_miopen_block(views[li], kind, d)[rows])

    def weight_gradient(self, grads: dict[int, Any], like: Any) -> Any:
        """torch's parameter gradients (by ``id`` of the parameter) in MIOpen's flat layout."""
        import torch
        p = self.p
        rows = torch.from_numpy(torch_gate_rows(p.mode, p.hidden)).to(like.device)
        dw = torch.zeros(p.weight_count, dtype=like.dtype, device=like.device)
        views = weight_views(p, dw)
        for li, d, kind, param in self._params():
            if self._skipped(li, kind):
                continue
            _miopen_block(views[li], kind, d)[rows] = grads[id(param)]
        return dw

    # -------------------------------------------------------------- sequences

    def _seq_in(self, a: Any) -> Any:
        """A stored sequence tensor as torch's input: (T, N, C), or a PackedSequence."""
        import torch
        pk = self.pk
        width = a.shape[-1]
        if self.uniform:
            if pk.layout == "batch_padded":
                return a.transpose(0, 1)
            return a.reshape(pk.steps, pk.n, width)
        rows = a.reshape(-1, width) if pk.layout == "packed" else a.reshape(-1, width)[self.index]
        return torch.nn.utils.rnn.PackedSequence(rows, self.batch_sizes)

    def _seq_rows(self, out: Any) -> Any:
        """torch's output as packed rows (or (T, N, C) when uniform)."""
        return out if self.uniform else out.data

    def _seq_out(self, rows: Any, shape: tuple[int, ...]) -> Any:
        """Packed rows (or (T, N, C)) back in the stored ``shape``."""
        import torch
        pk = self.pk
        if self.uniform:
            return (rows.transpose(0, 1) if pk.layout == "batch_padded" else rows).reshape(shape).contiguous()
        if pk.layout == "packed":
            return rows.reshape(shape)
        out = torch.zeros((pk.n * pk.steps, shape[-1]), dtype=rows.dtype, device=rows.device)
        out[self.index] = rows
        return out.reshape(shape)

    def _dy_rows(self, dy: Any) -> Any:
        pk = self.pk
        if self.uniform:
            return (dy.transpose(0, 1) if pk.layout == "batch_padded" else dy).reshape(pk.steps, pk.n, -1)
        flat = dy.reshape(-1, dy.shape[-1])
        return flat if pk.layout == "packed" else flat[self.index]

    def _forward(self, x: Any, hx: Any, cx: Optional[Any]) -> tuple[Any, Any, Optional[Any]]:
        h0 = hx[:, self.order]
        state = (h0, cx[:, self.order]) if cx is not None else h0
        out, hid = self.module(self._seq_in(x), state)
        if isinstance(hid, tuple):
            return self._seq_rows(out), hid[0], hid[1]
        return self._seq_rows(out), hid, None

    # -------------------------------------------------------------- passes

    def _build_graph(self, t: dict[str, Any]) -> None:
        import torch
        p = self.p
        lstm = p.mode == "lstm"
        wrw = p.direction == "wrw"
        leaves: list[Any] = []
        with torch.enable_grad():
            for li, _d, kind, param in self._params():
                param.requires_grad_(wrw and not self._skipped(li, kind))
                if param.requires_grad:
                    leaves.append(param)
            x, hx = t["x"].detach(), t["hx"].detach()
            cx = t["cx"].detach() if lstm else None
            if not wrw:
                x.requires_grad_(True)
                hx.requires_grad_(True)
                leaves = [x, hx]
                if cx is not None:
                    cx.requires_grad_(True)
                    leaves.append(cx)
            rows, hy, cy = self._forward(x, hx, cx)
        outputs = [rows, hy] + ([cy] if cy is not None else [])
        grads = [self._dy_rows(t["dy"]), t["dhy"][:, self.order]]
        if lstm:
            grads.append(t["dcy"][:, self.order])
        self.graph = (outputs, leaves, grads)

    def run(self, t: dict[str, Any]) -> dict[str, Any]:
        import torch
        p = self.p
        _, outs = rnn_shapes(p)
        if p.direction == "fwd":
            train = not p.inference
            with torch.set_grad_enabled(train):
                for param in self.module.parameters():
                    param.requires_grad_(train)
                rows, hy, cy = self._forward(t["x"], t["hx"], t.get("cx"))
            res = {"y": self._seq_out(rows.detach(), outs["y"]), "hy": hy.detach()[:, self.inverse]}
            if cy is not None:
                res["cy"] = cy.detach()[:, self.inverse]
            return res
        assert self.graph is not None
        outputs, leaves, grad_out = self.graph
        grads = torch.autograd.grad(outputs, leaves, grad_out, retain_graph=True)
        if p.direction == "wrw":
            return {"dw": self.weight_gradient({id(leaf): g for leaf, g in zip(leaves, grads, strict=True)},
                                               t["w"])}
        res = {"dx": grads[0], "dhx": grads[1]}
        if len(grads) > 2:
            res["dcx"] = grads[2]
        return res


def _miopen_block(lw: Any, kind: str, d: int) -> Any:
    """One direction's rows of one parameter of a layer (LayerWeights views)."""
    return {"weight_ih": lw.w_in, "weight_hh": lw.r, "bias_ih": lw.b_w, "bias_hh": lw.b_r}[kind][d]


def torch_rnn(p: RNNProblem, t: dict[str, Any], state: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """One pass; ``state`` keeps the module (and a backward pass's forward graph) between
    calls: built on the first call, or ahead by :func:`torch_rnn_prepare`."""
    state = {} if state is None else state
    run = state.get("rnn")
    if run is None:
        run = state["rnn"] = TorchRNN(p, t)
    return run.run(t)


def torch_rnn_prepare(p: RNNProblem, t: dict[str, Any], state: dict[str, Any]) -> None:
    """Set up the module and, for a backward pass, run the forward once (untimed)."""
    state["rnn"] = TorchRNN(p, t)
