"""Rendering batch norm, pooling and activation calls."""

from __future__ import annotations

from miotui.samplegen.network import BNLayer, Call, PoolLayer, ReluLayer, Tensor
from miotui.samplegen.render_base import Rec, RendererBase, cpp_double, hex_addr


class LayerCalls(RendererBase):
    """The call kinds of the other layers (``bn_*``, ``pool_*``, ``relu_*``)."""

    # batch norm -------------------------------------------------------------------------
    def _bn_ptrs(self, layer: BNLayer, thread: int) -> dict[str, str]:
        m = self.mem
        a, b = self.alpha(thread)
        return {"x": hex_addr(m.act(layer, "x", layer.x)), "y": hex_addr(m.act(layer, "y", layer.y)),
                "dy": hex_addr(m.act(layer, "dy", layer.y)), "dx": hex_addr(m.act(layer, "dx", layer.x)),
                "scale": hex_addr(m.persistent(layer, "scale", layer.param)),
                "bias": hex_addr(m.persistent(layer, "bias", layer.param)),
                "rmean": hex_addr(m.persistent(layer, "running_mean", layer.param)),
                "rvar": hex_addr(m.persistent(layer, "running_var", layer.param)),
                "dscale": hex_addr(m.persistent(layer, "dscale", layer.param)),
                "dbias": hex_addr(m.persistent(layer, "dbias", layer.param)),
                "smean": hex_addr(m.act(layer, "save_mean", layer.param)),
                "sinv": hex_addr(m.act(layer, "save_invstd", layer.param)), "alpha": a, "beta": b}

    def _bn_dims(self, layer: BNLayer) -> str:
        x = layer.x
        return f"-n {x.n} -c {x.c} -H {x.h} -W {x.w} -m 1"

    def _r_bn_train(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        p = self._bn_ptrs(layer, call.thread)
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenBatchNormalizationForwardTraining", {
                "handle": self.handle, "bn_mode": "1", "xDesc": self.tensor(layer.x), "x": p["x"],
                "yDesc": self.tensor(layer.y), "y": p["y"], "bnScaleBiasMeanVarDesc": self.tensor(layer.param),
                "bnScale": p["scale"], "bnBias": p["bias"], "expAvgFactor": cpp_double(self.exp_avg),
                "resultRunningMean": p["rmean"], "resultRunningVariance": p["rvar"], "epsilon": cpp_double(self.eps),
                "resultSaveMean": p["smean"], "resultSaveInvVariance": p["sinv"]}, call.thread)
        if self.version == "1.7":
            recs += self.command("", f"bnorm {self._bn_dims(layer)} -s 1 -r 1", call.thread,
                                 api="miopenBatchNormalizationForwardTraining")
        else:
            recs += self.command("LogCmdBNorm", f"bnorm {self._bn_dims(layer)} --forw 1 -b 0 -s 1 -r 1", call.thread)
        return recs

    def _r_bn_bwd(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        p = self._bn_ptrs(layer, call.thread)
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenBatchNormalizationBackward", {
                "handle": self.handle, "bn_mode": "1", "xDesc": self.tensor(layer.x), "x": p["x"],
                "dyDesc": self.tensor(layer.y), "dy": p["dy"], "dxDesc": self.tensor(layer.x), "dx": p["dx"],
                "bnScaleBiasDiffDesc": self.tensor(layer.param), "bnScale": p["scale"],
                "resultBnScaleDiff": p["dscale"], "resultBnBiasDiff": p["dbias"], "epsilon": cpp_double(self.eps),
                "savedMean": p["smean"], "savedInvVariance": p["sinv"]}, call.thread)
        if self.version == "1.7":  # MIOpen 1.7 printed only the base argument here
            recs += self.command("", "bnorm", call.thread, api="miopenBatchNormalizationBackward")
        else:
            recs += self.command("LogCmdBNorm", f"bnorm {self._bn_dims(layer)} --forw 0 -b 1 -r 1", call.thread)
        return recs

    def _r_bn_infer(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        p = self._bn_ptrs(layer, call.thread)
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenBatchNormalizationForwardInference", {
                "handle": self.handle, "bn_mode": "1", "xDesc": self.tensor(layer.x), "x": p["x"],
                "yDesc": self.tensor(layer.y), "y": p["y"], "bnScaleBiasMeanVarDesc": self.tensor(layer.param),
                "bnScale": p["scale"], "bnBias": p["bias"], "estimatedMean": p["rmean"],
                "estimatedVariance": p["rvar"], "epsilon": cpp_double(self.eps)}, call.thread)
        if self.version != "1.7":  # 1.7 logged no command for inference
            recs += self.command("LogCmdBNorm", f"bnorm {self._bn_dims(layer)} --forw 2 -b 0 -s 1", call.thread)
        return recs

    # pooling ----------------------------------------------------------------------------
    def _pool_desc(self, layer: PoolLayer) -> str:
        mode = "miopenPoolingMax" if layer.mode == 0 else "miopenPoolingAverage"
        w, p, s = layer.win, layer.pad, layer.stride
        return f"{mode}, {w}, {w}, {p}, {p}, {s}, {s}, "

    def _pool_ws(self, layer: PoolLayer) -> int:
        return layer.y.elements  # uint8 index per output element (max pooling mask)

    def _pool_cmd(self, layer: PoolLayer, fwd: bool) -> str:
        x = layer.x
        mode = "max" if layer.mode == 0 else "avg"
        w, p, s = layer.win, layer.pad, layer.stride
        if self.version == "1.7":
            return f"pool -n {x.n} -c {x.c} -H {x.h} -W {x.w} -y {w} -x {w} -p {p} -q {p} -u {s} -v {s} -m {mode} -t 1"
        if self.version == "2.9":
            return (f"pool -M 0 -n {x.n} -c {x.c} -H {x.h} -W {x.w} -y {w} -x {w} -p {p} -q {p} -v {s} -u {s} "
                    f"-m {mode} -F {1 if fwd else 2} -t 1")
        st = "x".join(map(str, x.strides))
        return (f"pool -M 0 --input {x.n}x{x.c}x{x.h}x{x.w},{st} -y {w} -x {w} -p {p} -q {p} -v {s} -u {s} "
                f"-m {mode} -F {1 if fwd else 0} -t 1")

    def _r_pool_ws(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        if not self.trace:
            return []
        if self.version == "1.7":
            return self.block("miopenPoolingGetWorkSpaceSize", {"yDesc": self.tensor(layer.y), "workSpaceSize": "0"})
        return self.block("miopenPoolingGetWorkSpaceSizeV2", {
            "poolDesc": self._pool_desc(layer), "yDesc": self.tensor(layer.y), "workSpaceSize": "0"})

    def _r_pool_fwd(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        m = self.mem
        a, b = self.alpha(call.thread)
        train = call.phase == "train"
        ws = self._pool_ws(layer)
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenPoolingForward", {
                "handle": self.handle, "poolDesc": self._pool_desc(layer), "alpha": a,
                "xDesc": self.tensor(layer.x), "x": hex_addr(m.act(layer, "x", layer.x)), "beta": b,
                "yDesc": self.tensor(layer.y), "y": hex_addr(m.act(layer, "y", layer.y)),
                "do_backward": "1" if train else "0",
                "workSpace": hex_addr(m.act(layer, "mask", Tensor(1, 1, 1, ws)) if train else None),
                "workSpaceSize": str(ws if train else 0)}, call.thread)
        recs += self.command("Pooling_logging_cmd", self._pool_cmd(layer, True), call.thread,
                             api="miopenPoolingForward")
        return recs

    def _r_pool_bwd(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        m = self.mem
        a, b = self.alpha(call.thread)
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenPoolingBackward", {
                "handle": self.handle, "poolDesc": self._pool_desc(layer), "alpha": a,
                "yDesc": self.tensor(layer.y), "y": hex_addr(m.act(layer, "y", layer.y)),
                "dyDesc": self.tensor(layer.y), "dy": hex_addr(m.act(layer, "dy", layer.y)),
                "xDesc": self.tensor(layer.x), "x": hex_addr(m.act(layer, "x", layer.x)), "beta": b,
                "dxDesc": self.tensor(layer.x), "dx": hex_addr(m.act(layer, "dx", layer.x)),
                "workSpace": hex_addr(m.act(layer, "mask", Tensor(1, 1, 1, self._pool_ws(layer))))}, call.thread)
        recs += self.command("Pooling_logging_cmd", self._pool_cmd(layer, False), call.thread,
                             api="miopenPoolingBackward")
        return recs

    # activation -------------------------------------------------------------------------
    def _activ_cmd(self, layer: ReluLayer, fwd: bool) -> str:
        x = layer.x
        return f"activ -n {x.n} -c {x.c} -H {x.h} -W {x.w} -m 3 --forw {1 if fwd else 2} -A 1 -B 0 -G 1"

    _ACTIV_DESC = "miopenActivationRELU, 1, 0, 1, "

    def _r_relu_fwd(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, ReluLayer)
        a, b = self.alpha(call.thread)
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenActivationForward", {
                "handle": self.handle, "activDesc": self._ACTIV_DESC, "alpha": a, "xDesc": self.tensor(layer.x),
                "x": hex_addr(self.mem.act(layer, "x", layer.x)), "beta": b, "yDesc": self.tensor(layer.y),
                "y": hex_addr(self.mem.act(layer, "y", layer.y))}, call.thread)
        if self.version != "1.7":  # activation commands exist since MIOpen 2.3
            recs += self.command("LogCmdActivation", self._activ_cmd(layer, True), call.thread)
        return recs

    def _r_relu_bwd(self, call: Call) -> list[Rec]:
        layer = call.layer
        assert isinstance(layer, ReluLayer)
        a, b = self.alpha(call.thread)
        m = self.mem
        recs: list[Rec] = []
        if self.trace:
            recs += self.block("miopenActivationBackward", {
                "handle": self.handle, "activDesc": self._ACTIV_DESC, "alpha": a,
                "yDesc": self.tensor(layer.y), "y": hex_addr(m.act(layer, "y", layer.y)),
                "dyDesc": self.tensor(layer.y), "dy": hex_addr(m.act(layer, "dy", layer.y)),
                "xDesc": self.tensor(layer.x), "x": hex_addr(m.act(layer, "x", layer.x)), "beta": b,
                "dxDesc": self.tensor(layer.x), "dx": hex_addr(m.act(layer, "dx", layer.x))}, call.thread)
        if self.version != "1.7":
            recs += self.command("LogCmdActivation", self._activ_cmd(layer, False), call.thread)
        return recs
