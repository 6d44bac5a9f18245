"""A cuDNN log into the catalog: records framed, layer calls decoded, sightings counted.

How records become counts (``docs/formats.md`` §11.2-11.3):

* one ``cudnnBackendExecuteInternal()`` record is one convolution run (cuDNN 9, both of
  PyTorch's paths); where a log has none (cuDNN 7/8), each legacy
  ``cudnnConvolution{Forward,BackwardData,BackwardFilter}`` call is.  cuDNN 9's legacy path
  prints both for one run, the legacy call first: an ExecuteInternal record of the problem
  the same thread's last legacy call ran is that call's other form, not a second run;
* ``cudnnFind*`` calls are finds; algorithm and workspace queries and the ``*Visualize``
  graphs are mentions (each engine configuration tried is kept as a note, not counted);
* a ``W!``/``E!`` record under a call's name is a warning or error about the thread's last
  call of that name: a note on its layer, never another call;
* the second record cuDNN 9 prints for a backend call (its ``status:``) is its return;
  a status other than success is counted (``CudnnStats.failed_calls``);
* a call with no decoder is counted and listed as undecoded with its function name.

State is bounded: per-thread and per-address tables are capped, and the cache of decoded
records (a training log repeats the same records every iteration) is cleared when full.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import fields
from typing import Optional

from miotui.catalog import Catalog
from miotui.formats.cudnn.calls import (
    BACKEND_EXECUTE,
    DESCRIPTOR_SETTERS,
    ENGINE_CONFIG,
    EXECUTE_INTERNAL,
    LAYER_CALLS,
    LEGACY_CONV,
    Descriptors,
    Found,
    decode_call,
    known,
)
from miotui.formats.cudnn.fields import HEADER, THREAD, Body, FieldError, parse_body
from miotui.formats.cudnn.framing import Record, RecordFramer
from miotui.formats.cudnn.graphs import FrontendLog, engine_config, graph_part, xla_conv_layer
from miotui.formats.cudnn.layers import Decoded
from miotui.formats.cudnn.plan_timing import Burst, PlanTimings

SOURCE_API = "cudnn-api"
SOURCE_FRONTEND = "cudnn-frontend"
SOURCE_XLA = "tensorflow-xla"
#: a layer seen under any of these came from a cuDNN log (its facts are cuDNN's, its driver
#: command a translation)
SOURCES = frozenset({SOURCE_API, SOURCE_FRONTEND, SOURCE_XLA})
#: decoded records remembered by their text (cleared when over this many, or this many characters)
CACHE_ENTRIES = 4096
CACHE_CHARS = 16 << 20
#: per-thread and per-(thread, call) state kept (cleared when over this many)
THREADS_KEPT = 1024
#: distinct function names counted one by one (the rest under "other")
FUNCTIONS_COUNTED = 512
#: source lines kept with a layer (the catalog keeps at most its own limit)
RAW_LINES = 40


class CudnnStats:
    """What the whole log says beside its layers."""

    def __init__(self) -> None:
        self.records = 0
        self.by_function: Counter[str] = Counter()
        self.versions: Counter[str] = Counter()
        self.warnings = 0
        self.errors = 0
        #: warning/error records whose call was not one miotui read a layer from
        self.unattached = 0
        self.failed_calls = 0
        self.internal_records = 0
        #: ExecuteInternal records of a counted call that could not be read (no shapes)
        self.internal_unread = 0
        #: backend executions that were benchmark mode's timing of candidate plans (finds)
        self.timed_executions = 0
        #: records of layer calls whose layer could not be read (each listed as undecoded)
        self.undecoded = 0
        self.truncated_records = 0
        self.library_config = ""
        self.device = ""

    def count(self, fn: str, severity: str, version: str) -> None:
        self.records += 1
        by_function = self.by_function
        key = fn if severity == "I" else f"{severity}! {fn}"
        n = by_function.get(key)
        if n is None and len(by_function) >= FUNCTIONS_COUNTED:
            key = "other"
            n = by_function.get(key)
        by_function[key] = (n or 0) + 1
        versions = self.versions
        n = versions.get(version)
        if n is not None or len(versions) < 16:
            versions[version] = (n or 0) + 1


def looks_like_cudnn(head: bytes) -> bool:
    """Whether text (a log's first bytes) holds a cuDNN record or a cudnn-frontend line."""
    from miotui.formats.cudnn.framing import ANCHOR
    return ANCHOR.search(head.decode("utf-8", "replace")) is not None


class TextCache(dict):
    """Values by the text they were decoded from, bounded in entries and in the characters
    of its keys (a hostile log of distinct 256 KB records must not fill memory): cleared
    when full, as a training log's records repeat and are soon decoded again."""

    def __init__(self) -> None:
        super().__init__()
        self.chars = 0

    def put(self, key: str, value: object) -> None:
        if len(self) >= CACHE_ENTRIES or self.chars + len(key) > CACHE_CHARS:
            self.clear()
            self.chars = 0
        self[key] = value
        self.chars += len(key)


class CudnnScanner:
    """Feeds one cuDNN log (file, stdin) into a catalog, chunk by chunk: the same
    ``feed``/``finish`` as the MIOpen scanner."""

    def __init__(self, catalog: Catalog, file: str = ""):
        self.catalog = catalog
        self.file = file
        self.stats = CudnnStats()
        self.frontend = FrontendLog()
        self.descriptors = Descriptors()
        self.timings = PlanTimings()
        self._framer = RecordFramer(self._record)
        self._lines_told = 0      # the lines the catalog was told of
        #: thread -> the problem its last legacy convolution or cudnnBackendExecute call ran (its
        #: ExecuteInternal record awaited)
        self._paired_run: dict[str, object] = {}
        #: (thread, function) -> the problem of that thread's last call of it (for W!/E! records)
        self._last: OrderedDict[tuple[str, str], object] = OrderedDict()
        self._cache = TextCache()    # layer call text -> ("ok", Found) / ("error", why) / ("return", None)
        self._parsed = TextCache()   # record body text -> Body

    @property
    def line_no(self) -> int:
        return self._framer.line_no

    @property
    def loose_lines(self) -> int:
        """Lines outside any record (a framework's chatter, a record cut at the log's start)."""
        return self._framer.loose_lines

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self.catalog.writing():
            self.catalog.read_bytes(len(data))
            self._framer.feed(data)
            self._tell_lines()

    def _tell_lines(self) -> None:
        """The lines read since the catalog was last told (it counts every file's)."""
        now = self._framer.line_no
        self.catalog.read_lines(now - self._lines_told)
        self._lines_told = now

    def finish(self) -> None:
        with self.catalog.writing():
            self._framer.finish()
            for burst in self.timings.finish():
                self._count_burst(burst)
            self._tell_lines()
            self.catalog.input_ended()

    # ------------------------------------------------------------------ records

    def _record(self, rec: Record) -> None:
        text = rec.text
        nl = text.find("\n")
        first = text if nl < 0 else text[:nl]
        if rec.dropped_lines or rec.dropped_chars:
            self.stats.truncated_records += 1
        m = HEADER.match(first)
        if m is None:
            if first.startswith(("[cudnn_frontend]", '{"context":')):
                self._frontend(rec, first)
            elif "cuda_dnn.cc:" in first:
                self._xla(rec, first)
            else:
                self._undecoded(rec.line, "a cuDNN record whose header does not parse", first)
            return
        fn = m.group("fn")
        severity = m.group("sev") or "I"
        self.stats.count(fn, severity, m.group("ver"))
        if self.timings.open and fn not in (BACKEND_EXECUTE, EXECUTE_INTERNAL):   # ends its thread's burst
            burst = self.timings.other_record(_thread(text, _trailer(text, len(first) + 1)))
            if burst is not None:
                self._count_burst(burst)
        if severity != "I":
            self._warning(rec, fn, severity)
        elif fn in LAYER_CALLS:
            self._layer_call(rec, fn, first)
        elif fn in DESCRIPTOR_SETTERS:
            if "addr=" in text:   # only a descriptor with an address can be named by it later
                fields = self._parse(text, len(first) + 1)[0].fields
                if "status" not in fields:
                    self.descriptors.record(fn, fields)
        elif known(fn):
            self._known(fn, text)
        else:
            self._undecoded(rec.line, f"cuDNN call {fn}(): no decoder for it (not a layer miotui reads)", first)

    def _known(self, fn: str, text: str) -> None:
        stats = self.stats
        if "status: type=cudnnStatus_t" in text:
            if "CUDNN_STATUS_SUCCESS" not in text:
                stats.failed_calls += 1
        elif fn == "cudnnGraphLibraryConfigInit":
            value = parse_body(text).fields.get("apiLog")
            if isinstance(value, str):
                stats.library_config = value[:40]
        if not stats.device and "deviceName:" in text:
            name = parse_body(text).fields
            handle = name.get("handle")
            prop = handle.get("deviceProp") if hasattr(handle, "get") else None
            if hasattr(prop, "get") and isinstance(prop.get("deviceName"), str):
                stats.device = prop["deviceName"].strip('"')[:80]

    def _layer_call(self, rec: Record, fn: str, first: str) -> None:
        text = rec.text
        body_start = len(first) + 1
        cut = _trailer(text, body_start)
        if fn == BACKEND_EXECUTE:   # its buffers (variantPack) change from run to run, its layer does not
            pack = text.find("variantPack:", body_start, cut)
            cut = cut if pack < 0 else pack
        key = fn + text[body_start:cut]
        engine = ""
        if fn == ENGINE_CONFIG:   # one layer, many engine configurations: cached by its graph
            engine = engine_config(key)
            key = graph_part(key)
        cached = self._cache.get(key)
        if cached is None:
            body = parse_body(text)
            thread = body.thread
            fields = body.fields
            if "status" in fields and fn != EXECUTE_INTERNAL:
                cached = ("return", None)
            else:
                try:
                    cached = ("ok", decode_call(fn, fields, self.descriptors))
                except FieldError as e:
                    cached = ("error", str(e))
            by_address = fn in LEGACY_CONV and "Desc: location=" in key
            if not by_address:
                self._cache.put(key, cached)
        else:
            thread = _thread(text, cut)
        kind, value = cached
        if kind == "error" and fn == EXECUTE_INTERNAL and thread in self._paired_run:
            # the other form of the call just counted, printed without its shapes (cuDNN 9.19
            # does so for some legacy backward-filter calls): recognised, noted on the call's layer
            self.stats.internal_unread += 1
            self.catalog.add_sighting(self._paired_run.pop(thread), "execution", SOURCE_API, rec.line, self.file,
                                      (f"cuDNN printed the ExecuteInternal record of a run of this layer without "
                                       f"its shapes ({value})",), count=False)
            return
        if kind == "error":
            self.stats.undecoded += 1
            self._undecoded(rec.line, f"{fn}(): {value}", first)
            return
        if kind == "return":
            if "CUDNN_STATUS_SUCCESS" not in text:
                self.stats.failed_calls += 1
            return
        if fn == EXECUTE_INTERNAL:
            self.stats.internal_records += 1
        if value is not None:
            if engine:
                value = Found(Decoded(value.decoded.problem, value.decoded.annotations + (("engine_config", engine),),
                                      value.decoded.warnings), value.role)
            self._found(rec, fn, thread, value)

    def _parse(self, text: str, body_start: int) -> tuple[Body, str]:
        """A record's body and its thread; the body (without its trailer, which has the time
        and thread) parsed once per distinct text: setter and warning records repeat every
        iteration.  The caller only reads it."""
        cut = _trailer(text, body_start)
        key = text[body_start:cut]
        body = self._parsed.get(key)
        if body is None:
            body = parse_body(text[:cut])
            self._parsed.put(key, body)
        return body, _thread(text, cut)

    def _found(self, rec: Record, fn: str, thread: str, found: Found) -> None:
        decoded = found.decoded
        problem = decoded.problem
        role = found.role
        count = True
        if role == "config":
            role, count = "mention", False
        elif found.internal:
            paired = self._paired_run.pop(thread, None)
            if paired is not None:   # the call just counted on this thread is this run
                count = False
                if paired != problem:   # one run, one row: the call's, with what differs
                    warnings = (f"the ExecuteInternal record of a run of this layer describes "
                                f"{_differences(paired, problem)}",)
                    decoded = Decoded(paired, decoded.annotations, decoded.warnings + warnings)
                    problem = paired
            else:   # a backend run of its own (no call record before it)
                self._backend_run(rec, fn, thread, decoded)
                return
        elif role == "execution":
            self._paired_run.pop(thread, None)
            if found.paired_run:
                if len(self._paired_run) >= THREADS_KEPT:
                    self._paired_run.clear()
                self._paired_run[thread] = problem
            if fn == BACKEND_EXECUTE:
                self._backend_run(rec, fn, thread, decoded)
                return
        self.catalog.add_sighting(problem, role, SOURCE_API, rec.line, self.file, decoded.warnings,
                                  decoded.annotations, raw=_raw(rec), count=count)
        self._remember(thread, fn, problem)

    def _backend_run(self, rec: Record, fn: str, thread: str, decoded: Decoded) -> None:
        """A backend execution: counted when its burst ends (``plan_timing``)."""
        for burst in self.timings.execution(thread, decoded.problem, decoded.warnings, decoded.annotations,
                                            rec.line, _raw(rec)):
            self._count_burst(burst)
        self._remember(thread, fn, decoded.problem)

    def _count_burst(self, burst: Burst) -> None:
        """A burst of back-to-back executions of one layer: runs, or benchmark mode's timing
        of candidate plans (finds) when its engines differ."""
        notes = burst.annotations
        role = "execution"
        if burst.timing:
            role = "find"
            self.stats.timed_executions += burst.runs
            notes += (("plan_timing", f"{burst.runs} timed executions of {len(burst.solvers)} engines: "
                                      f"{', '.join(burst.solvers)}"),)
        row = self.catalog.add_sighting(burst.problem, role, SOURCE_API, burst.first_line, self.file, burst.warnings,
                                        notes, raw=burst.raw)
        if burst.runs > 1:
            self.catalog.count_again(row, role, burst.last_line, burst.runs - 1, self.file)

    def _remember(self, thread: str, fn: str, problem: object) -> None:
        last = self._last
        last[(thread, fn)] = problem
        last.move_to_end((thread, fn))
        if len(last) > THREADS_KEPT:
            last.popitem(last=False)

    def _warning(self, rec: Record, fn: str, severity: str) -> None:
        body, thread = self._parse(rec.text, rec.text.find("\n") + 1)
        name = "cudnn_warning" if severity == "W" else "cudnn_error"
        if severity == "W":
            self.stats.warnings += 1
        else:
            self.stats.errors += 1
        messages = [m for m in body.messages if not m.startswith("Info:")]
        distinct = list(dict.fromkeys(messages))
        note = " | ".join(distinct)[:400] or "(no message)"
        if body.messages_total > len(body.messages):
            note += f" (+{body.messages_total - len(body.messages)} more)"
        problem = self._last.get((thread, fn))
        if problem is not None:
            self.catalog.add_sighting(problem, "mention", SOURCE_API, rec.line, self.file,
                                      annotations=((name, f"{fn}: {note}"),), count=False)
            return
        self.stats.unattached += 1
        if severity == "E":
            self._undecoded(rec.line, f"cuDNN error in {fn}(): {note}", rec.text.split("\n", 1)[0])

    def _frontend(self, rec: Record, first: str) -> None:
        try:
            found = self.frontend.unit(rec.text)
        except FieldError as e:
            self.stats.undecoded += 1
            self._undecoded(rec.line, f"cudnn-frontend: {e}", first)
            return
        for decoded, role in found:
            self.catalog.add_sighting(decoded.problem, role, SOURCE_FRONTEND, rec.line, self.file, decoded.warnings,
                                      decoded.annotations, raw=_raw(rec))

    def _xla(self, rec: Record, first: str) -> None:
        try:
            decoded = xla_conv_layer(rec.text)
        except FieldError as e:
            self.stats.undecoded += 1
            self._undecoded(rec.line, str(e), first)
            return
        self.catalog.add_sighting(decoded.problem, "mention", SOURCE_XLA, rec.line, self.file, decoded.warnings,
                                  decoded.annotations, raw=_raw(rec))

    def _undecoded(self, line: int, reason: str, text: str) -> None:
        self.catalog.add_undecoded(line, reason, text, self.file)


def _differences(call: object, internal: object) -> str:
    """What an ExecuteInternal record says otherwise than its call: ``fil_layout NHWC (the
    call: NCHW)``."""
    diffs = [f"{f.name} {getattr(internal, f.name)} (the call: {getattr(call, f.name)})" for f in fields(call)
             if getattr(call, f.name) != getattr(internal, f.name, None)] if type(call) is type(internal) else []
    return ", ".join(diffs) if diffs else f"another problem ({getattr(internal, 'key', internal)})"


_TRAILER_PREFIXES = ("", "i! ", "w! ", "e! ", "│ ")


def _trailer(text: str, start: int) -> int:
    """Where a record's ``Time:`` trailer line starts (its end where it has none): what
    follows is the time and thread, which differ between repeats of the same call."""
    at = text.rfind("Time: ", start)
    if at < 0:
        return len(text)
    line = text.rfind("\n", 0, at) + 1
    return line if text[line:at] in _TRAILER_PREFIXES else len(text)


def _thread(text: str, start: int) -> str:
    m = THREAD.search(text, start)
    return m.group(1) if m else ""


def _raw(rec: Record):
    def lines() -> list[tuple[int, str]]:
        return [(rec.line + i, line) for i, line in enumerate(rec.text.split("\n", RAW_LINES)[:RAW_LINES])]
    return lines


def decode_cudnn_bytes(data: bytes, catalog: Optional[Catalog] = None, chunk: int = 1 << 20) -> CudnnScanner:
    """Decode a whole cuDNN log held in memory (tests, benchmarks); the scanner keeps its stats."""
    scanner = CudnnScanner(catalog if catalog is not None else Catalog())
    for i in range(0, len(data), chunk):
        scanner.feed(data[i:i + chunk])
    scanner.finish()
    return scanner
