"""What a decoder says about one piece of log text.

Decoders are small functions or classes, one per kind of text (API-trace block,
``Command`` line, level line, MIOpenDriver command/output, Find-Db record).  They all
return a list of these events; the scanner (``miotui.formats.miopen.scan``) adds line numbers
and the thread, and the catalog (``miotui.catalog``) counts them.  Keeping the events
free of positions lets a decoder cache its answer by the exact text it was given:
a training log repeats the same calls every iteration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from miotui.problems import Problem

#: How a problem was seen.  ``execution``: the library ran it (or MIOpenDriver did);
#: ``find``: an algorithm search for it; ``mention``: any other sighting (workspace
#: query, descriptor set-up, Find-Db key, Info line naming it).
ROLES = ("execution", "find", "mention")

#: Where it was seen.  ``execution-log`` is MIOpen's ``LogConvolutionExecution`` line, kept
#: apart from the other level lines (``info``) because one call can log both it and a
#: ``Returning an invoker`` line: two forms of one call, each once per call.
SOURCES = ("api-trace", "command", "info", "execution-log", "driver-command", "driver-output", "find-db",
           "perf-db")


@dataclass(frozen=True)
class Sighting:
    """One problem seen once."""

    problem: Problem
    role: str
    source: str
    warnings: tuple[str, ...] = ()
    #: (name, value) pairs that belong to this sighting: e.g. ("solver", "ConvBinWinogradRxSf2x3g1"),
    #: ("solver_time_ms", "0.0186"), ("find_db", "GemmFwdRest:5.31,91054080,...").
    annotations: tuple[tuple[str, str], ...] = ()
    #: the line repeats what another line already said of the call (MIOpen's "Read record
    #: <key>=..." after its "Looking for key <key>"): counted only for a layer not seen before
    only_if_new: bool = False


@dataclass(frozen=True)
class Annotation:
    """A fact about a layer named elsewhere: MIOpen's chosen algorithm, a driver verdict.

    ``problem`` None means "the layer this thread saw last" (an Info line after a call
    belongs to that call); otherwise it names the layer itself.
    """

    name: str
    value: str
    problem: Optional[Problem] = None


@dataclass(frozen=True)
class Undecoded:
    """MIOpen-looking text that could not be turned into a layer, and why."""

    reason: str


@dataclass(frozen=True)
class OpSeen:
    """A line that says an op ran (or was looked up) but not which layer: a pooling
    invoker's network config has the window, not the input.  Inside a MIOpenDriver run it
    is the run's layer of that op and direction; anywhere else nothing can be said."""

    op: str
    direction: str
    role: str


@dataclass(frozen=True)
class Setting:
    """A setting in force for the whole log (``MIOPEN_FIND_MODE``, a ``miopenSetTuningPolicy``
    call): not a fact about one layer, but about how every Find and tuning search ran."""

    name: str
    value: str


Event = Union[Sighting, Annotation, Undecoded, OpSeen, Setting]
