"""What to generate (:class:`SampleSpec`) and what a complete log holds (:func:`ground_truth`)."""

from __future__ import annotations

from dataclasses import dataclass

from miotui.samplegen.network import GroundTruth, TruthOp, inference_calls, resnet50_layers, training_calls, truth_op

FORMATS = ("trace2018", "trace2x", "trace55", "command", "info")

#: What each format models, for ``--help`` and the demo's status line.
FORMAT_DESCRIPTIONS = {
    "trace2018": "MIOpen 1.7 / ROCm 2.1 API trace + old command lines (TensorFlow 1.x)",
    "trace2x": "MIOpen 2.9 / ROCm 4.0 API trace + Command lines, MPMT thread ids (TensorFlow 2.4)",
    "trace55": "MIOpen 2.20 / ROCm 5.7 API trace, strided tensors, dataType in Set blocks (PyTorch)",
    "command": "ROCm 5.7 Command [LogCmd...] lines only, with PyTorch progress output",
    "info": "ROCm 5.7 Command lines + Info/Info2 lines (MIOPEN_LOG_LEVEL=6 or 5)",
}

# --------------------------------------------------------------------------------------
# Spec and ground truth
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleSpec:
    """What to generate.  ``size`` (bytes) wins over ``iterations`` when given.

    In ``size`` mode the run is cut at the line where the size is reached (a log of a run
    still going), so it has no inference pass; in ``iterations`` mode the log is complete.
    ``elapsed``: add MIOPEN_ENABLE_LOGGING_ELAPSED_TIME's field (not for ``trace2018``,
    which predates it); None = the format's default (on for ``trace2x`` only).
    ``level``: MIOPEN_LOG_LEVEL for the ``info`` format (5 = Info, 6 = Info2).
    ``startup`` (``info`` only): the first iteration as MIOpen spends it, Find-Db misses,
    kernel compiles and binary-cache hits (Info2: level 6), tuning searches with their
    heartbeats, and a ``LogConvolutionExecution`` line per convolution
    (:mod:`miotui.samplegen.render_startup`); it turns the elapsed-time field on unless
    ``elapsed`` is False (an untimed log: counts without durations).
    """

    format: str = "trace55"
    iterations: int = 2
    size: int | None = None
    batch: int = 32
    seed: int = 0
    level: int = 6
    elapsed: bool | None = None
    inference: bool = True
    startup: bool = False

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}")
        if self.iterations < 1:
            raise ValueError("iterations must be at least 1")
        if self.size is not None and self.size < 1:
            raise ValueError("size must be positive")
        if not 1 <= self.batch <= 4096:
            raise ValueError("batch must be between 1 and 4096")
        if self.level not in (5, 6):
            raise ValueError("level must be 5 (Info) or 6 (Info2)")
        if self.elapsed and self.format == "trace2018":
            raise ValueError("MIOpen 1.7 (trace2018) has no elapsed-time field")
        if self.startup and self.format != "info":
            raise ValueError("a first iteration (startup) is written in the info format only (its lines are level "
                             "lines)")

    @property
    def use_elapsed(self) -> bool:
        if self.elapsed is None:
            return self.format == "trace2x" or self.startup
        return self.elapsed


def ground_truth(spec: SampleSpec) -> GroundTruth:
    """How many times each operation is executed and searched in a complete generated log."""
    layers = resnet50_layers(spec.batch)
    execs: dict[TruthOp, int] = {}
    finds: dict[TruthOp, int] = {}
    groups = [training_calls(layers, first=True)]
    if spec.iterations > 1:
        later = training_calls(layers, first=False)
        groups += [later] * (spec.iterations - 1)
    if spec.inference:
        groups.append(inference_calls(layers))
    for calls in groups:
        for call in calls:
            t = truth_op(call)
            if t is None:
                continue
            target = finds if call.kind == "conv_find" else execs
            target[t] = target.get(t, 0) + 1
    return GroundTruth(execs, finds)
