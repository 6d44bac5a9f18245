"""MIOpen level lines (``Info``/``Info2``/... ``[func] message``) -> events.

At ``MIOPEN_LOG_LEVEL`` 5-6 MIOpen explains what it does with each convolution: which
algorithm a run uses (``algo = 3, workspace = 0``), what a Find measured and chose
(``FW Chosen Algorithm: ...``), which Find-Db record it looked up or wrote, which
invoker it reused.  Several of those lines also *name* the problem, as a Find-Db key
or a network config (``docs/formats.md`` §5, §7.1-7.2), which is the only place a
log of only level lines says what the layer was.  This module turns them into:

* ``Sighting`` for lines that name a problem: a ``mention`` for a Db lookup or write or an
  invoker registration; an ``execution`` for ``Returning an invoker for problem ... and
  algorithm ...`` (logged only when a convolution is run) and for the 2026
  ``LogConvolutionExecution`` line (source ``execution-log``: a call at level 6 logs it
  and its invoker line).  A log with ``MIOPEN_ENABLE_LOGGING_CMD`` also has a ``Command``
  line for the same call: the scanner must count the forms of one call as one;
* ``Annotation(name, value)`` with no problem for facts about the call the thread
  made last (the chosen solver, the algorithm a run used);
* ``Undecoded`` when a problem-naming line cannot be read.

A log repeats the same few lines every iteration, and none of these decodings
depends on earlier lines, so results are cached by the exact (function, message) text.
Everything else returns ``[]`` after a couple of string tests, without caching.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from typing import Callable, Optional

from miotui.events import Annotation, Event, OpSeen, Sighting, Undecoded
from miotui.formats.miopen.dbrecords import algorithm_direction, algorithm_number, item_annotations, parse_db_items
from miotui.formats.miopen.keys import (
    Im2ColGeometry,
    ProblemKeyError,
    decode_db_key,
    decode_network_config,
    decode_problem_string,
    read_im2col_key,
)
from miotui.formats.miopen.netconfigs import (
    decode_bn_config,
    decode_softmax_config,
    is_bn_config,
    is_softmax_config,
    read_pool_config,
)
from miotui.problems import ConvProblem

#: Cached decoded messages (cleared when full).
CACHE_SIZE = 50_000
#: problem keys remembered for a driver stats: line whose command is not in the log
_RECENT = 8

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_CHOSEN_RE = re.compile(rf"^(FW|BWD|BWrW) Chosen Algorithm: (\S.*?) , (\d+), ({_NUM})\s*$")
_ALGO_WS_RE = re.compile(r"^algo = (\d+), workspace = (\d+)\s*$")
_SOLVER_ID_RE = re.compile(r"^solver_id = (\S+?)(?:, workspace = (\d+))?\s*$")
_SELECTED_RE = re.compile(rf"^Selected: ([^:]+): (.*): ({_NUM}), (?:workspace_sz|workspce_sz) = (\d+)\s*$")
_FIND_RESULT_RE = re.compile(rf"^(miopen\w+)\t({_NUM})\t(\d+)\s*$")
_LOOKING_RE = re.compile(r"^Looking for key:? (\S+?)(?: in (?:cache for )?file .*)?\s*$")
_SETVALUES_RE = re.compile(r"^(\S+?), content (inserted|overwritten|is the same, not changed): ?(.*)$")
_KEY_START_RE = re.compile(r"^\d+-\d+")
_READ_RECORD_RE = re.compile(r"^Read record (\S+?)=(.*)$")
_INVOKER_RE = re.compile(r"^Returning an invoker for problem (\S+) and (algorithm|solver) (\S+)\s*$")
_REGISTERED_RE = re.compile(r"^Invoker registered for algorithm (\S+) and solver (\S+)\s*$")
_SET_AS_FOUND_RE = re.compile(r"^Solver (\S+) registered as find 1\.0 best for (\S+) in (\S+)\s*$")
_SOLUTION_RE = re.compile(rf"^id: (\d+), algo: (-?\d+), time: ({_NUM}), ws: (\d+), name: (\S+)\s*$")
#: ``Name="value"`` or ``Name=value`` fields; the 2026 form adds where a value came from:
#: ``Config(from_perf_db)="..."``, ``Time(from_find_db)=0.0187``
_EXEC_FIELD_RE = re.compile(r'(\w+)(?:\([^)]*\))?=(?:"([^"]*)"|(\S+))')

_CHOSEN_FUNCS = frozenset({"FindConvFwdAlgorithm", "FindConvBwdDataAlgorithm", "FindConvBwdWeightsAlgorithm",
                           "FillFindReturnParameters"})
_RUN_FUNCS = frozenset({"ConvolutionForward", "ConvolutionBackwardData", "ConvolutionBackwardWeights"})


class LevelDecoder:
    """Stateless apart from its cache; one per scanner."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], list[Event]] = {}
        #: the convolutions the latest level lines named, and the im2col kernel keys they quoted: a
        #: MIOpenDriver ``stats:`` line whose command is not in the log is named by them
        #: (``keys.conv_from_stats``); the only state besides the cache, a few entries long
        self.recent_convs: deque[ConvProblem] = deque(maxlen=_RECENT)
        self.recent_im2col: deque[Im2ColGeometry] = deque(maxlen=_RECENT)
        self._by_func: dict[str, Callable[[str, str], Optional[list[Event]]]] = {
            "EvaluateInvokers": self._evaluate_invokers,
            "DirConvFindCore": self._evaluate_invokers,
            "LogConvolutionExecution": self._execution,
            "GetInvoker": self._invoker,
            "Register": self._registered,
            "SetAsFound1_0": self._set_as_found,
            "GetFound1_0": self._not_found,
            "SetValues": self._set_values,
            "GetValues": self._read_record,
        }

    def decode(self, level: str, func: str, message: str) -> list[Event]:
        """Events for one level line; ``[]`` for lines that say nothing about a layer.

        Never raises: a decoding bug becomes an ``Undecoded`` event.
        """
        if not message:
            return []
        try:
            if "miopenIm2" in message:
                geometry = read_im2col_key(message)
                if geometry is not None:
                    self.recent_im2col.append(geometry)
            handler = self._handler(func, message)
            if handler is None and level in _PROBLEM_LEVELS and _EMBEDDED_START_RE.search(message):
                handler = self._embedded_key
            if handler is None:
                return []
            key = (func, message)
            cached = self._cache.get(key)
            if cached is not None:
                self._remember(cached)
                return cached
            events = handler(func, message.rstrip("\r\n"))
            if events is None:  # not the line the handler expected: nothing to remember
                return []
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = events
            self._remember(events)
            return events
        except Exception as e:  # a decoder bug must not stop a scan
            return [Undecoded(f"level line decoder failed: {type(e).__name__}: {e}")]

    def _remember(self, events: list[Event]) -> None:
        for e in events:
            if isinstance(e, Sighting) and isinstance(e.problem, ConvProblem):
                self.recent_convs.append(e.problem)

    # ------------------------------------------------------------------ dispatch

    def _handler(self, func: str, message: str) -> Optional[Callable[[str, str], Optional[list[Event]]]]:
        """Pick a handler with cheap tests: the function name, then the message start."""
        h = self._by_func.get(func)
        if h is not None:
            return h
        c = message[0]
        if c == "a" and func in _RUN_FUNCS and message.startswith("algo = "):
            return self._algo_ws
        if c == "s" and message.startswith("solver_id = ") and "Immediate" in func:
            return self._solver_id
        if "Chosen Algorithm" in message and (func in _CHOSEN_FUNCS or func.startswith("FindConv")):
            return self._chosen
        if c == "m" and "\t" in message and (func.startswith("FindConv") or func == "FindConvolution"):
            return self._find_result
        if c == "L" and message.startswith("Looking for key"):
            return self._looking
        if c == "R":
            if message.startswith("Returning an invoker for problem "):
                return self._invoker
            if message.startswith("Read record "):
                return self._read_record
        if c == "I" and message.startswith("Invoker registered for algorithm "):
            return self._registered
        if c == "i" and message.startswith("id: ") and ", name: " in message:
            return self._solution
        if c == "[" and message.startswith("[ConvolutionExecution]"):
            return self._execution
        if ", content " in message and (" inserted: " in message or " overwritten: " in message
                                        or "is the same" in message):
            return self._set_values
        if c == "S" and message.startswith("Selected: "):
            return self._evaluate_invokers
        return None

    # ------------------------------------------------------------------ annotations for the last call

    @staticmethod
    def _chosen(func: str, message: str) -> Optional[list[Event]]:
        m = _CHOSEN_RE.match(message)
        if m is None:
            return None
        return [Annotation("solver", m.group(2).strip()), Annotation("workspace", m.group(3)),
                Annotation("solver_time_ms", m.group(4))]

    @staticmethod
    def _algo_ws(func: str, message: str) -> Optional[list[Event]]:
        m = _ALGO_WS_RE.match(message)
        if m is None:
            return None
        return [Annotation("algorithm", m.group(1)), Annotation("workspace", m.group(2))]

    @staticmethod
    def _solver_id(func: str, message: str) -> Optional[list[Event]]:
        m = _SOLVER_ID_RE.match(message)
        if m is None:
            return None
        events: list[Event] = [Annotation("solver", m.group(1))]
        if m.group(2) is not None:
            events.append(Annotation("workspace", m.group(2)))
        return events

    @staticmethod
    def _evaluate_invokers(func: str, message: str) -> Optional[list[Event]]:
        if not message.startswith("Selected: "):
            return None
        m = _SELECTED_RE.match(message)
        if m is None:
            return None
        solver = m.group(1).strip()
        return [Annotation("find_result", f"{solver} {m.group(3)} ms ws={m.group(4)}"), Annotation("solver", solver),
                Annotation("solver_time_ms", m.group(3))]

    @staticmethod
    def _find_result(func: str, message: str) -> Optional[list[Event]]:
        m = _FIND_RESULT_RE.match(message)
        if m is None:
            return None
        return [Annotation("find_result", f"{m.group(1)} {m.group(2)} ms ws={m.group(3)}")]

    @staticmethod
    def _solution(func: str, message: str) -> Optional[list[Event]]:
        m = _SOLUTION_RE.match(message)
        if m is None:
            return None
        return [Annotation("find_result", f"{m.group(5)} {m.group(3)} ms ws={m.group(4)}")]

    # ------------------------------------------------------------------ lines that name a problem

    @staticmethod
    def _mention(decode: Callable[[], object], what: str, text: str,
                 annotations: tuple[tuple[str, str], ...] = (), role: str = "mention") -> list[Event]:
        try:
            decoded = decode()
        except ProblemKeyError as e:
            return [Undecoded(f"{what} {text[:80]!r}: {e}")]
        return [Sighting(p, role, "info", decoded.warnings, annotations)  # type: ignore[attr-defined]
                for p in decoded.problems]  # type: ignore[attr-defined]

    def _looking(self, func: str, message: str) -> Optional[list[Event]]:
        m = _LOOKING_RE.match(message)
        if m is None:
            return None
        key = m.group(1).strip('"')
        if not _is_conv_key(key):
            return None  # batch-norm / fusion / pooling db keys are not conv keys
        return self._mention(lambda: decode_db_key(key), "Find-Db key", key)

    def _set_values(self, func: str, message: str) -> Optional[list[Event]]:
        m = _SETVALUES_RE.match(message)
        if m is None:
            if _KEY_START_RE.match(message):   # "SetValues 96-35-35-1x": the line was cut
                return [Undecoded(f"SetValues line cut short: {message[:80]!r} has no ', content ...'")]
            return None
        key, values = m.group(1), m.group(3)
        if not _is_conv_key(key):
            return None
        items, item_warnings = parse_db_items(values)
        return self._with_warnings(self._mention(lambda: decode_db_key(key), "db key", key,
                                                 item_annotations(items)), item_warnings)

    def _read_record(self, func: str, message: str) -> Optional[list[Event]]:
        m = _READ_RECORD_RE.match(message)
        if m is None:
            return None
        key, values = m.group(1), m.group(2)
        if not _is_conv_key(key):
            return None
        items, item_warnings = parse_db_items(values)
        events = self._with_warnings(self._mention(lambda: decode_db_key(key), "db key", key,
                                                   item_annotations(items)), item_warnings)
        # the record a lookup of the same key just found: that lookup named the layer
        return [dataclasses.replace(e, only_if_new=True) if isinstance(e, Sighting) else e for e in events]

    @staticmethod
    def _with_warnings(events: list[Event], extra: list[str]) -> list[Event]:
        if not extra:
            return events
        return [dataclasses.replace(e, warnings=e.warnings + tuple(extra)) if isinstance(e, Sighting) else e
                for e in events]

    def _invoker(self, func: str, message: str) -> Optional[list[Event]]:
        m = _INVOKER_RE.match(message)
        if m is None:
            return None
        config, kind, name = m.group(1), m.group(2), m.group(3)
        if not _is_conv_config(config):
            return self._other_config(config, "execution" if kind == "algorithm" else "mention", name)
        # "... and algorithm <name>" is logged only by the run paths (ConvolutionForward /
        # BackwardData / BackwardWeights, ExecutePrimitive): the layer is being executed.
        # "... and solver <name>" also comes from Find-Db validation: only a mention.
        role = "execution" if kind == "algorithm" else "mention"
        annotations: tuple[tuple[str, str], ...] = ()
        hint = None
        if kind == "algorithm":
            hint = algorithm_direction(name)
            number = algorithm_number(name)
            if number is not None:
                annotations = (("algorithm", str(number)),)
        else:
            annotations = (("solver", name),)
        return self._mention(lambda: decode_network_config(config, hint), "network config", config, annotations,
                             role)

    def _registered(self, func: str, message: str) -> Optional[list[Event]]:
        m = _REGISTERED_RE.match(message)
        if m is None:
            return None
        config = m.group(1)
        if not _is_conv_config(config):
            return self._other_config(config, "mention", m.group(2))
        return self._mention(lambda: decode_network_config(config), "network config", config)

    def _not_found(self, func: str, message: str) -> Optional[list[Event]]:
        """``No invokers found for <config>``: the layer was looked up (a mention)."""
        if not message.startswith("No invokers found for "):
            return None
        config = message[len("No invokers found for "):].strip()
        if _is_conv_config(config):
            return self._mention(lambda: decode_network_config(config), "network config", config)
        return self._other_config(config, "mention", "")

    def _other_config(self, config: str, role: str, name: str) -> Optional[list[Event]]:
        """A network config of batch norm, softmax or pooling (``miotui.formats.miopen.netconfigs``)."""
        annotations = (("solver", name),) if name and role == "mention" and "Pooling" not in name else ()
        if is_bn_config(config):
            return self._mention(lambda: decode_bn_config(config), "batch-norm network config", config,
                                 annotations, role)
        if is_softmax_config(config):
            return self._mention(lambda: decode_softmax_config(config), "softmax network config", config,
                                 annotations, role)
        pool = read_pool_config(config)
        if pool is not None and role == "execution":
            return [OpSeen("pool", "bwd" if "Backward" in name else "fwd", role)]
        return None

    def _set_as_found(self, func: str, message: str) -> Optional[list[Event]]:
        """``Solver X registered as find 1.0 best for <algorithm> in <network config>``: the
        solver a Find chose for the layer its network config names."""
        m = _SET_AS_FOUND_RE.match(message)
        if m is None:
            return None
        solver, algorithm, config = m.groups()
        if not _is_conv_config(config):
            return self._other_config(config, "mention", solver)
        return self._mention(lambda: decode_network_config(config, algorithm_direction(algorithm)),
                             "network config", config, (("solver", solver),))

    def _embedded_key(self, func: str, message: str) -> Optional[list[Event]]:
        """A Find-Db / Perf-Db problem key quoted inside an Error or Warning line (``Search
        failed for: ...``, ``Invalid config loaded from Perf Db: ...``), maybe glued to the
        solver name that follows it: a mention of that layer, the line itself kept as its
        warning.  A key that does not decode is undecoded with the reason, never dropped."""
        m = _EMBEDDED_START_RE.search(message)
        if m is None:
            return None
        token = _TOKEN_RE.match(message, m.start()).group()[:_MAX_KEY_CHARS]  # type: ignore[union-attr]
        dashed = "-" in token.split("x", 1)[0]
        decode = decode_db_key if dashed else decode_network_config
        error: Optional[ProblemKeyError] = None
        # the key ends where a solver name glued to it begins (an upper-case letter after a letter or digit
        # other than the separator x: ``...-FP32-F|ConvHip...``, ``...xFxDefault|ConvBin...``), or at the
        # token's end; the shortest key that decodes wins (a lenient reading of the glued name is no key)
        ends = [i for i in range(1, len(token)) if token[i].isupper() and token[i - 1] not in "-_x"]
        for end in ends + [len(token)]:
            try:
                decoded = decode(token[:end])
            except ProblemKeyError as e:
                if error is None or token[end - 2:end] in _KEY_ENDS:   # the reason of the likeliest whole key
                    error = e
                continue
            note = f"MIOpen [{func}] {message.strip()[:_MAX_NOTE_CHARS]}"
            return [Sighting(p, "mention", "info", decoded.warnings + (note,)) for p in decoded.problems]
        return [Undecoded(f"problem key in a [{func}] line {token[:80]!r}: {error}")]

    @staticmethod
    def _execution(func: str, message: str) -> Optional[list[Event]]:
        """``[ConvolutionExecution] Problem="conv ..." Solver="X" Config="..." Time=0.0187``."""
        if "Problem=" not in message:
            return None
        fields = {m.group(1): (m.group(2) if m.group(2) is not None else m.group(3))
                  for m in _EXEC_FIELD_RE.finditer(message)}
        problem_text = fields.get("Problem", "")
        try:
            decoded = decode_problem_string(problem_text)
        except ProblemKeyError as e:
            return [Undecoded(f"LogConvolutionExecution: {e}")]
        annotations: list[tuple[str, str]] = []
        solver = fields.get("Solver", "")
        if solver and solver != "N/A":
            annotations.append(("solver", solver))
        time_ms = fields.get("Time", "")
        if time_ms and re.match(rf"^{_NUM}$", time_ms) and float(time_ms) >= 0:   # -1: not in the find-db
            annotations.append(("solver_time_ms", time_ms))
            annotations.append(("find_db_time_ms", time_ms))
        config = fields.get("Config", "")
        if config and config != "N/A":
            annotations.append(("perf_config", f"{solver}:{config}" if solver else config))
        return [Sighting(p, "execution", "execution-log", decoded.warnings, tuple(annotations))
                for p in decoded.problems]


#: the levels whose lines may quote a problem key in free text (``Search failed for: <key><Solver>``)
_PROBLEM_LEVELS = frozenset({"Error", "Warning"})
#: where a quoted key starts: a dash-joined Find-Db / Perf-Db key, or an x-joined one (network config)
_EMBEDDED_START_RE = re.compile(r"(?<![\w.-])(?:\d+-\d+-\d+-(?:\d+-)?\d+x\d+(?:x\d+)?-|\d+x\d+x\d+x\d+x\d+x\d+x)")
_TOKEN_RE = re.compile(r"[\w-]+")
#: how a whole key ends: its direction letter
_KEY_ENDS = frozenset({"-F", "-B", "-W", "xF", "xB", "xW"})
#: a key is at most a few dozen fields; what is longer is not tried at every split
_MAX_KEY_CHARS = 256
_MAX_NOTE_CHARS = 300
_CONV_KEY_RE = re.compile(r"^\d+-\d+-\d+-(?:\d+-)?\d+x\d+(?:x\d+)?-")
_CONV_CONFIG_RE = re.compile(r"^\d+x\d+x\d+x\d+x\d+x")


def _is_conv_key(key: str) -> bool:
    return _CONV_KEY_RE.match(key) is not None


def _is_conv_config(config: str) -> bool:
    """A convolution's config has nine or more leading numbers; batch norm's (2025) has five,
    then its layouts."""
    return _CONV_CONFIG_RE.match(config) is not None and not is_bn_config(config)
