"""Rendering the convolution calls: workspace queries, Find (with its Info lines) and runs."""

from __future__ import annotations

from miotui.samplegen.network import Call, ConvLayer
from miotui.samplegen.render_base import ALGO_NAMES, Rec, choose_algo, conv_time_ms, cpp_double, hex_addr
from miotui.samplegen.render_startup import StartupCalls


class ConvCalls(StartupCalls):
    """The convolution call kinds (``conv_ws``, ``conv_find``, ``conv``)."""

    # convolution ------------------------------------------------------------------------
    def _conv_ptrs(self, layer: ConvLayer, thread: int) -> dict[str, str]:
        m = self.mem
        a, b = self.alpha(thread)
        return {
            "x": hex_addr(m.act(layer, "x", layer.x) if layer.name != "conv1" else m.act(layer, "image", layer.x)),
            "w": hex_addr(m.persistent(layer, "w", layer.w)),
            "y": hex_addr(m.act(layer, "y", layer.y)),
            "dy": hex_addr(m.act(layer, "dy", layer.y)),
            "dx": hex_addr(m.act(layer, "dx", layer.x)),
            "dw": hex_addr(m.persistent(layer, "dw", layer.w)),
            "alpha": a, "beta": b,
        }

    _CONV_API = {
        "fwd": ("miopenConvolutionForward", "miopenFindConvolutionForwardAlgorithm",
                "miopenConvolutionForwardGetWorkSpaceSize", "ConvolutionForward", "FindConvFwdAlgorithm", "FW"),
        "bwd": ("miopenConvolutionBackwardData", "miopenFindConvolutionBackwardDataAlgorithm",
                "miopenConvolutionBackwardDataGetWorkSpaceSize", "ConvolutionBackwardData",
                "FindConvBwdDataAlgorithm", "BWD"),
        "wrw": ("miopenConvolutionBackwardWeights", "miopenFindConvolutionBackwardWeightsAlgorithm",
                "miopenConvolutionBackwardWeightsGetWorkSpaceSize", "ConvolutionBackwardWeights",
                "FindConvBwdWeightsAlgorithm", "BWrW"),
    }

    def _conv_values(self, layer: ConvLayer, thread: int, ws: int) -> dict[str, str]:
        """Every value any convolution API logs; each block picks its own names."""
        p = self._conv_ptrs(layer, thread)
        return {"handle": self.handle, "convDesc": self.conv_desc(layer), "workSpaceSize": str(ws),
             "workSpace": hex_addr(self.mem.workspace(ws)), "alpha": p["alpha"], "beta": p["beta"],
             "xDesc": self.tensor(layer.x), "wDesc": self.tensor(layer.w), "yDesc": self.tensor(layer.y),
             "dyDesc": self.tensor(layer.y), "dxDesc": self.tensor(layer.x), "dwDesc": self.tensor(layer.w),
             "x": p["x"], "w": p["w"], "y": p["y"], "dy": p["dy"], "dx": p["dx"], "dw": p["dw"]}

    def _conv_cmd_args(self, layer: ConvLayer, direction: str) -> str:
        x = layer.x
        base = (f"conv -n {x.n} -c {x.c} -H {x.h} -W {x.w} -k {layer.k} -y {layer.r} -x {layer.r} "
                f"-p {layer.pad} -q {layer.pad} -u {layer.stride} -v {layer.stride} -l 1 -j 1 -m conv -g 1")
        if self.version == "1.7":
            return base + " -t 1"
        return base + f" -F {({'fwd': 1, 'bwd': 2, 'wrw': 4})[direction]} -t 1"

    def _r_conv_ws(self, call: Call) -> list[Rec]:
        layer, d = call.layer, call.direction
        assert isinstance(layer, ConvLayer)
        if not self.trace:
            return []
        values = self._conv_values(layer, call.thread, 0)
        values["workSpaceSize"] = "0"   # the output parameter is printed before the call
        return self.block(self._CONV_API[d][2], values, call.thread)

    def _problem_key(self, layer: ConvLayer, direction: str, sep: str) -> str:
        """Find-db key (``sep='-'``) or network config (``sep='x'``) of ROCm 5.7 (docs/formats.md §7.1, §7.2)."""
        x, y, r = layer.x, layer.y, layer.r
        p, s = layer.pad, layer.stride
        (ic, ih, iw), (oc, oh, ow) = ((x.c, x.h, x.w), (layer.k, y.h, y.w))
        if direction != "fwd":  # B/W problems are stored with in = dy, out = dx
            (ic, ih, iw), (oc, oh, ow) = (oc, oh, ow), (ic, ih, iw)
        dch = {"fwd": "F", "bwd": "B", "wrw": "W"}[direction]
        if sep == "-":
            return f"{ic}-{ih}-{iw}-{r}x{r}-{oc}-{oh}-{ow}-{x.n}-{p}x{p}-{s}x{s}-1x1-0-NCHW-FP32-{dch}"
        return f"{ic}x{ih}x{iw}x{r}x{r}x{oc}x{oh}x{ow}x{x.n}xNCHWxFP32x{p}x{p}x{s}x{s}x1x1x1x{dch}"

    def _r_conv_find(self, call: Call) -> list[Rec]:
        layer, d, th = call.layer, call.direction, call.thread
        assert isinstance(layer, ConvLayer)
        algo, solver, ws = choose_algo(layer, d, self.version)
        api, find_api, _, _, find_fn, tag = self._CONV_API[d]
        ms = conv_time_ms(layer, d, algo, self.rng)
        recs: list[Rec] = []
        if self.trace:
            values = self._conv_values(layer, th, ws)
            values.update(requestAlgoCount="1", returnedAlgoCount="0", perfResults="", exhaustiveSearch="0")
            recs += self.block(find_api, values, th)
        if self.version == "1.7":
            if d == "wrw":  # MIOpen <= 1.8 logged the WrW *Find*, not the WrW run
                recs += self.command("", self._conv_cmd_args(layer, d), th, api=find_api)
        elif self.version == "2.9":
            if d == "wrw":  # 2.1 - ROCm 5.3: the WrW Find is logged as [LogCmdConvolution] -F 4
                recs += self.command("LogCmdConvolution", self._conv_cmd_args(layer, d), th)
        else:
            recs += self.command("LogCmdFindConvolution", self._conv_cmd_args(layer, d), th)
        key = self._problem_key(layer, d, "-")
        recs += self.level("Info", find_fn, f"requestAlgoCount = 1, workspace = {ws}")
        recs += self.level("Info2", "FindRecord", f"Looking for key {key} in file {self.fdb_sys}")
        recs += self.level("Info2", "FindRecordUnsafe", f"Looking for key {key} in file {self.fdb_user}")
        recs += self.level("Info2", "Measure", f"Db::FindRecord time: {cpp_double(self.rng.uniform(0.008, 0.06))} ms")
        if self.spec.startup:   # the Find's compiles, searches and measurements, line by line
            recs += self._startup_find(layer, d, solver, ws, ms, key)
        else:
            recs += self.level("Info", "TryLoad", "Find-db regenerating.")
        recs += self.level("Info", "FindConvolution", f"{ALGO_NAMES[d][algo]}\t{cpp_double(ms)}\t{ws}")
        recs += self.level("Info", find_fn, f"{tag} Chosen Algorithm: {solver} , {ws}, {cpp_double(ms)}")
        if not self.spec.startup:
            # Find compiles kernels and times them: the next line comes much later.
            recs.append((th, "delay", "", self.rng.uniform(150.0, 1800.0)))
        return recs

    def _r_conv(self, call: Call) -> list[Rec]:
        layer, d, th = call.layer, call.direction, call.thread
        assert isinstance(layer, ConvLayer)
        algo, solver, ws = choose_algo(layer, d, self.version)
        api, _, _, run_fn, _, _ = self._CONV_API[d]
        recs: list[Rec] = []
        if self.trace:
            values = self._conv_values(layer, th, ws)
            values["algo"] = str(algo)
            recs += self.block(api, values, th)
        if self.version == "1.7":
            if d != "wrw":
                recs += self.command("", self._conv_cmd_args(layer, d), th, api=api)
        else:  # 2.x and 5.x log every run, -F 1/2/4
            recs += self.command("LogCmdConvolution", self._conv_cmd_args(layer, d), th)
        recs += self.level("Info", run_fn, f"algo = {algo}, workspace = {ws}")
        if self.spec.startup:
            recs += self._execution_line(self._conv_cmd_args(layer, d), solver, self._problem_key(layer, d, "-"))
        recs += self.level("Info2", "GetInvoker", f"Returning an invoker for problem "
                           f"{self._problem_key(layer, d, 'x')} and algorithm {ALGO_NAMES[d][algo]}")
        return recs
