"""Turn a stream of log bytes into catalog entries.

The scanner is the one place that knows about *lines*: it carries partial lines across
chunks (so the same code serves a file, stdin and a followed log), strips MIOpen's
line prefix in all its versions (none, ``MIOpen(HIP):``, ``MIOpen(OpenCL):``, bare
``MIOpen:``, thread id, hostname, elapsed time, date, and foreign text before it),
assembles API-trace blocks per thread, and hands each piece of text to the decoder
for its kind.  Decoders never see positions; the scanner adds line numbers and threads.

Speed comes from classifying each distinct line once: a training log repeats the
same lines every iteration, so the classification of a line is cached by its text.

The scanner is built from parts it owns, each one concept with its own state: the line cache
(``line_cache``), the call tracker and the cat joiner (``calls``), the first-iteration
attributor and the log's clock (``first_iteration``), the whole-block and repeated-line
replays (``whole_blocks``, ``repeats``), the decoders of each kind of text, and the sink that
hands what they found to the catalog (``sink``).  The scanner frames lines, dispatches each to
the part for its kind and passes what one part says to another as arguments.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from miotui.catalog import Catalog
from miotui.driver import DriverCommandError, parse_driver_args
from miotui.events import Annotation, Event, OpSeen, Setting, Sighting, Undecoded
from miotui.formats.miopen.calls import FIND_FUNCS, CallTracker, CatJoiner
from miotui.formats.miopen.clock_fields import lift, strip_line
from miotui.formats.miopen.first_iteration import FirstIteration
from miotui.formats.miopen.line_cache import LINE_CACHE_CHARS, LINE_CACHE_SIZE, LineCache
from miotui.formats.miopen.lines import (
    BARE_CLOSE,
    BARE_HEADER,
    BARE_PARAM,
    CLOSE,
    COMMAND,
    CUT_COMMAND,
    CUT_DB,
    DB,
    HEADER,
    LEVEL,
    NOISE,
    OLD_COMMAND,
    PARAM,
    PERF,
    SQL,
    TEXT,
    cut_at_the_end,
)
from miotui.formats.miopen.repeats import COMMAND_CALL, PLAIN, LineReplay, RunPlan
from miotui.formats.miopen.sink import CatalogSink
from miotui.formats.miopen.startup_lines import has_clock, read_perf_record, read_startup_line
from miotui.formats.miopen.stretches import Stretch, StretchCache, stretch_threads
from miotui.formats.miopen.whole_blocks import MAX_BLOCK_LINES, BlockCache
from miotui.sources import MAX_LINE

__all__ = ["LogScanner", "LINE_CACHE_SIZE", "LINE_CACHE_CHARS", "MIN_RUN"]

#: the shortest run of repeated Command lines replayed at once (shorter: line by line)
MIN_RUN = 16
#: the shortest run of repeated Command lines an anchor of stretches is picked in (``stretches``)
ANCHOR_RUN = 256


class _Block:
    """One API block being assembled on a thread, line by line."""

    __slots__ = ("header", "params", "first_line", "raw", "style", "tid")

    def __init__(self, header: str, line_no: int, raw: str, tid: str):
        self.header = header
        self.params: list[tuple[str, str]] = []
        self.first_line = line_no
        self.raw = [raw]
        self.style: Optional[str] = None  # "new" (prefixed params) or "old" (bare params)
        self.tid = tid


class LogScanner:
    """Feeds one source (file, stdin, followed log) into a catalog, chunk by chunk."""

    #: Recognise repeated API blocks as whole texts (False: strictly line by line; the
    #: two must give the same catalog, which the tests check).
    whole_blocks = True

    def __init__(self, catalog: Catalog, file: str = ""):
        from miotui.formats.miopen.dbrecords import SqlConfigReader, decode_db_record
        from miotui.formats.miopen.driver_output import DriverLogTracker
        from miotui.formats.miopen.levels import LevelDecoder
        from miotui.formats.miopen.trace import DTYPE_GUESS_WARNING, TraceDecoder
        self.file = file
        self.line_no = 0
        self._carry = b""
        #: the driver tracker answered a line or held a command (then which lines were quieted
        #: matters, and it depends on the cache's history: ``miotui.decoding.ranges`` decodes serially)
        self.driver_answered = False
        self._blocks: dict[str, _Block] = {}
        self._orphan: set[str] = set()
        self._command_cache: dict[tuple[str, str, str], list[Event]] = {}
        self._db_cache: dict[str, Optional[list[Event]]] = {}
        self._driver_line = 0   # the line of the command the driver tracker holds
        self._last_line = ""    # the last whole line read (was the input cut inside it?)
        self._timed: Optional[bool] = None   # MIOpen's lines carry a time field (None: no line yet)
        # the decoders of each kind of text
        self.trace = TraceDecoder()
        self.levels = LevelDecoder()
        self.driver = DriverLogTracker(lambda: (self.levels.recent_convs, self.levels.recent_im2col))
        self.sql = SqlConfigReader()
        self._decode_db_record = decode_db_record
        # the parts that keep what the lines said
        self.sink = CatalogSink(catalog, file)
        self.lines = LineCache()
        self.startup = FirstIteration(self.sink)
        self.calls = CallTracker(self.sink, self.startup, self.driver.current_problem,
                                 frozenset({DTYPE_GUESS_WARNING}))
        self.cat = CatJoiner()
        self.block_cache = BlockCache()
        self.replay = LineReplay(self.calls, self.lines, self.sink)
        self.stretches = StretchCache()
        #: lines that went the general way in ``_each_line`` (a stretch whose lines all were
        #: replayed gets a plan: ``_record_stretch``)
        self.general_lines = 0

    @property
    def catalog(self) -> Catalog:
        """The catalog this scanner writes into (``move_to`` changes it)."""
        return self.sink.catalog

    @property
    def repeat_lines(self) -> bool:
        """Replay plain repeated lines (False: every line the general way; both give the same
        catalog, which the tests check)."""
        return self.replay.enabled

    @repeat_lines.setter
    def repeat_lines(self, on: bool) -> None:
        self.replay.enabled = on

    @property
    def whole_block_hits(self) -> int:
        """Blocks whose events were reused by their text, without the trace decoder (for tests)."""
        return self.block_cache.hits

    @property
    def clock_asked_unknown(self) -> bool:
        """A fact asked for the clock where its value is not known (``FirstIteration``)."""
        return self.startup.clock_asked_unknown

    # ------------------------------------------------------------------ input

    def feed(self, data: bytes) -> None:
        """Consume bytes; a line split across calls is carried to the next call.

        ``\r`` ends a line (progress bars), ``\r\n`` is one line end even when the
        two bytes arrive in different chunks.
        """
        if not data:
            return
        with self.sink.writing():
            self.sink.read_bytes(len(data))
            if self._carry == b"\r":  # a line already ended at this "\r"
                self._carry = b""
                if data.startswith(b"\n"):
                    data = data[1:]
            elif self._carry:
                data = self._carry + data
            cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
            if cut < 0:
                self._carry = self._cap(data)
                return
            if cut == len(data) - 1 and data[cut] == 13:
                self._carry = b"\r"
            else:
                self._carry = self._cap(data[cut + 1:])
            if data[cut] == 10 and cut > 0 and data[cut - 1] == 13:  # "\r\n" is one line end
                cut -= 1
            self._process(memoryview(data)[:cut])  # decoded in place, not copied first
            if self.replay.unsettled_plans:   # stretches replayed by their plan (``_process_text``)
                self.replay.settle()

    def finish(self) -> None:
        """End of input: the last unterminated line counts, open blocks are cut short."""
        with self.sink.writing():
            if self._carry and self._carry != b"\r":
                self._process(self._carry)
                if self.replay.unsettled_plans:
                    self.replay.settle()
            self._carry = b""
            why = cut_at_the_end(self._last_line, self.driver.run_open)
            text = self.driver.held or ""
            events = self.driver.finish()  # the held command, a timing block cut short
            if events:
                self._apply(events, "", self._driver_line, text)
            if why:
                self._undecoded(self.line_no, why, self._last_line)
            for block in list(self._blocks.values()):
                self._undecoded(block.first_line, "API block cut short: no closing '}' before the end of input",
                                block.raw[0])
            self._blocks.clear()
            for tid in list(self.cat.parts):
                self._flush_cat(tid)
            self.calls.finish()
            self.startup.finish()
            self.calls.close_finds(self.line_no)
            self.sink.input_ended()

    def carried_state(self) -> dict[str, object]:
        """What this scanner carries from the lines it read to the lines after them, by name
        (its parts' and decoders' own state included; caches, counters and the clock not):
        two scanners whose carried states are equal read every later line the same way
        (``miotui.decoding.ranges`` checks that where one file is decoded in ranges)."""
        state: dict[str, object] = {
            "file": self.file, "line_no": self.line_no, "carry": self._carry, "blocks": self._blocks,
            "orphan": self._orphan, "driver_line": self._driver_line, "last_line": self._last_line,
            "timed": self._timed, "cat": self.cat.parts, "unsettled": self.replay.unsettled}
        state.update(self.calls.carried_state())
        state.update(self.startup.carried_state())
        for name in ("trace", "levels", "driver", "sql"):
            state[name] = getattr(self, name)
        return state

    def move_to(self, catalog: Catalog) -> None:
        """Go on into ``catalog`` (the range after a warm-up, ``miotui.decoding.ranges``): the rows
        this scanner met are carried over (``Catalog.carry_rows``) and its caches, which hold
        rows, start empty (but for the text lines it quieted)."""
        with self.sink.writing():
            if self.replay.unsettled or self.replay.unsettled_plans:
                self.replay.settle()
            self.calls.moved(self.sink.move_to(catalog))
            self.lines.restart()
            self.block_cache.clear()
            self.stretches.clear()
            self.startup.clock_unknown = bool(self._timed)

    @staticmethod
    def _cap(carry: bytes) -> bytes:
        return carry if len(carry) <= MAX_LINE * 4 else carry[:MAX_LINE * 4]

    def _process(self, data) -> None:
        """Whole lines (bytes-like, without the last line end)."""
        text = str(data, "utf-8", "replace")
        if self._timed is None:
            self._timed = has_clock(text)
            if self._timed:
                self.sink.log_is_timed()
        timed = self._timed
        if timed and not self.whole_blocks:
            self._process_timed_lines(text)
            return
        read = self._process_lifted if timed else self._process_range
        if "\r" not in text:
            read(text, 0, len(text))
            return
        # "\r" and "\r\n" end lines too: the text is handled in "\r"-ended pieces rather
        # than rewritten (a two-character replace costs more than the rest of the scan); a
        # piece between progress bars' "\r"s is then often one iteration's lines (``_process_text``)
        cr = text.find("\r")
        if text.startswith("\r\n", cr):  # CRLF line ends throughout: rewrite once
            text = text.replace("\r\n", "\n")
            if "\r" in text:  # each CR left ends a line ("\r\r\n" became "\r\n": two ends)
                text = text.replace("\r", "\n")
            read(text, 0, len(text))
            return
        start = 0
        while cr >= 0:
            read(text, start, cr, at_cr=True)
            start = cr + 2 if text.startswith("\n", cr + 1) else cr + 1
            cr = text.find("\r", start)
        read(text, start, len(text))

    def _process_timed_lines(self, text: str) -> None:
        """Lines of a log with MIOpen's time fields when the fast paths are off (the reference):
        each line read without its fields, which move the clock first (``clock_fields``)."""
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        for raw in text.split("\n"):
            line, fields = strip_line(raw)
            self.startup.clock_line(fields)
            self._process_lines([line])

    def _process_lifted(self, text: str, pos: int, end: int, at_cr: bool = False) -> None:
        """The lines of ``text[pos:end]`` of a timed log: read without their time fields
        (``clock_fields.lift``), which move the clock."""
        text, fields = lift(text[pos:end] if pos or end < len(text) else text)
        self.startup.clock_chunk(fields, self.line_no)
        self._process_range(text, 0, len(text), at_cr)
        self.startup.clock_chunk_done()

    def _process_range(self, text: str, pos: int, end: int, at_cr: bool = False) -> None:
        """The lines of ``text[pos:end]``: each API block whose text was seen before is
        handled as one unit (``_whole_block``), the other lines one by one.

        Why: an API trace is ~15 lines per call and a training log repeats the same calls
        every iteration; finding a block's ``}`` and looking its whole text up costs a few
        C-level string operations instead of a Python step per line.
        """
        if self.whole_blocks:
            while pos < end:
                # the next line ending in "{" (one-character searches are memchr-fast; a
                # two-character one is ten times slower)
                k = text.find("{", pos, end)
                while k >= 0 and not text.startswith("\n", k + 1, end):
                    k = text.find("{", k + 1, end)
                if k < 0:
                    break
                j = text.rfind("\n", pos, k)
                start = pos if j < 0 else j + 1       # the candidate header line is text[start:k+1]
                if start > pos:
                    self._process_lines(text[pos:start - 1].split("\n"))
                after = self._whole_block(text, start, k + 1, end)
                if after < 0:
                    self._process_lines([text[start:k + 1]])
                    after = k + 2
                pos = after
            if pos > end:  # the last block ended the text
                return
        self._process_text(text, pos, end, at_cr)

    def _process_text(self, text: str, pos: int, end: int, at_cr: bool) -> None:
        """The lines of ``text[pos:end]`` (no API block among them), cut into stretches at
        the anchor line where there is one (``stretches``): a stretch met before is replayed
        whole (``_stretch``), the rest line by line.  ``at_cr``: the text ends at a "\\r" (a
        progress bar's, which may come once per iteration), not where the chunk was cut."""
        stretches = self.stretches
        anchor = stretches.anchor
        if anchor is None or not self.replay.enabled:
            self._process_lines(text[pos:end].split("\n"))
            return
        marker = stretches.marker
        if text.startswith(anchor, pos, end):
            start = pos
        else:
            start = text.find(marker, pos, end) + 1
            if start <= 0:
                self._process_lines(text[pos:end].split("\n"))
                return
            self._process_lines(text[pos:start - 1].split("\n"))
        while True:   # text[start:] begins with the anchor line
            after = text.find(marker, start + len(anchor) - 1, end) + 1
            if not after and not at_cr:   # cut by the end of the chunk: not a stretch met again
                self._process_lines(text[start:end].split("\n"))
                return
            stop = after or text.rfind("\n", start, end) + 1     # the stretch's whole lines
            self._stretch(text[start:stop])
            if not after:   # the stretch ends at a "\r" (a progress bar's)
                self._process_lines(text[stop:end].split("\n"))
                return
            start = after

    def _stretch(self, text: str) -> None:
        """Whole lines (``text`` ends with their last "\\n") from the anchor line to the next:
        replayed by the plan of the same text met before, else read and their plan kept
        (``stretches``): a run of plain Command lines replayed at once, or Command and level
        lines read one by one and recorded; else line by line."""
        stretches = self.stretches
        known = stretches.get(text)
        if known is not None and self._routing_is_common() and self.replay.replay_plan(known.plan, self.line_no + 1):
            self._replayed(known.lines, known.last_line)
            stretches.hit()
            return
        lines = text.split("\n")
        lines.pop()   # the "" after the last "\n"
        if len(lines) >= MIN_RUN and self._routing_is_common():
            run = list(map(self.lines.calls.get, lines))
            if None not in run:
                plan = self.replay.replay_run(run, self.line_no + 1)
                if plan is not None:
                    self._replayed(len(lines), lines[-1])
                    stretches.keep(text, Stretch(plan, len(lines), lines[-1]))
                    return
            else:
                tids = stretch_threads(lines, self.lines.entries)
                if tids:    # Command lines and their calls' level lines (a level-6 log)
                    plan = self._record_stretch(lines, tids)
                    if plan is None:
                        stretches.miss(self.line_no)
                    else:
                        stretches.keep(text, Stretch(plan, len(lines), lines[-1]))
                    return
        stretches.miss(self.line_no)
        self._process_lines(lines)

    def _record_stretch(self, lines: list[str], tids: list[str]) -> Optional[RunPlan]:
        """``lines`` (see ``stretches.stretch_threads``) read one by one, and what they did as a plan
        (``LineReplay.recorded_plan``) where every line was replayed (none went the general
        way); None where one did."""
        replay = self.replay
        if replay.unsettled or replay.unsettled_plans:
            replay.settle()     # what the lines leave unsettled is then theirs alone
        general = self.general_lines
        first = self.line_no + 1
        self._each_line(lines, settle=False)
        plan = replay.recorded_plan(first, tids) if self.general_lines == general else None
        if replay.unsettled:
            replay.settle()
        return plan

    def _replayed(self, count: int, last_line: str) -> None:
        """``count`` lines replayed at once (a run, a stretch), the last of them ``last_line``."""
        self.line_no += count
        self.sink.read_lines(count)
        self._last_line = last_line

    def _process_lines(self, lines: list[str]) -> None:
        """Lines one by one, except runs of repeated Command lines that are calls of their own
        (``LineReplay.replay_run``), looked for where most of the lines are such calls."""
        by_text = self.lines.calls
        if not by_text or len(lines) < 256:
            self._each_line(lines)
            return
        run = list(map(by_text.get, lines))      # each line's plain call, or None
        end = len(lines)
        if run.count(None) > end // 4:   # level-6 logs: a call line, then its info line
            general = self.general_lines
            self._each_line(lines, settle=False)
            # an anchor from lines nearly all replayed: their counts are an iteration's, not
            # those of the first iterations' lines still being learnt
            if end >= ANCHOR_RUN and self.general_lines - general < end // 16 and \
                    self.stretches.may_pick(self.line_no):
                rarest = self.replay.rarest_unsettled()
                line = next((line for line in lines if by_text.get(line) is rarest), None) if rarest else None
                if line is not None:
                    self.stretches.pick(line)
            if self.replay.unsettled:
                self.replay.settle()
            return
        start = i = 0
        while i < end:
            try:
                k = run.index(None, i)    # lines[i:k] are known calls
            except ValueError:
                k = end
            if k - i >= MIN_RUN:
                if i > start:
                    self._each_line(lines[start:i])
                plan = self.replay.replay_run(run[i:k], self.line_no + 1) if self._routing_is_common() else None
                if plan is not None:
                    if k - i >= ANCHOR_RUN and self.stretches.may_pick(self.line_no):
                        self.stretches.pick(lines[i + plan.rarest()])
                    self._replayed(k - i, lines[k - 1])
                    start = k
                else:   # the first line the general way, then look again
                    self._each_line(lines[i:i + 1])
                    start = i = i + 1
                    continue
            i = k + 1
        if start < end:
            self._each_line(lines[start:])
        if self.replay.unsettled:
            self.replay.settle()

    def _each_line(self, lines: list[str], settle: bool = True) -> None:
        """Lines one by one: a plain line replayed (``repeats``), the others dispatched by
        kind; the replayed calls settled at the end unless ``settle`` is False (the caller
        reads them first)."""
        cache = self.lines.entries
        classify_new = self.lines.classify_new
        blocks = self._blocks
        n = self.line_no
        calls = self.calls
        pending, find_open, last_row = calls.pending, calls.find_open, calls.last_row
        replay = self.replay
        replay_call = replay.replay_call
        common = self._routing_is_common()
        for line in lines:
            n += 1
            c = cache.get(line)
            if c is None:
                line, c = classify_new(line)
            kind = c[0]
            if kind == PARAM:
                # The hot path: most lines of an API trace are parameters of an open block.
                block = blocks.get(c[1])
                if block is not None and block.style == "new" and len(block.raw) < MAX_BLOCK_LINES:
                    block.params.append(c[4])
                    block.raw.append(line)
                    continue
            elif kind == NOISE:
                continue
            elif kind == PLAIN:   # a repeated call line (miotui.formats.miopen.repeats), the usual case inline
                if common:
                    plain = c[2]
                    if plain.how is COMMAND_CALL and plain.tid not in find_open:
                        cur = pending.get(plain.tid)
                        if cur is plain.pending and plain.queued and len(plain.sources) == 1:
                            # the same call line again, already queued: replay_call's common case
                            plain.count += 1
                            plain.last = n
                            last_row[plain.tid] = plain.row
                            continue
                        if cur is None or (len(cur) == 1 and "command" in cur[0][2]):
                            replay_call(plain, cur, n)
                            continue
                    if replay.replay(plain, n):
                        continue
                c = c[1]
                kind = c[0]
            self.line_no = n
            self.general_lines += 1
            self._dispatch(kind, c, line, n)
            common = self._routing_is_common()
        if settle and replay.unsettled:
            replay.settle()
        self.line_no = n
        self.sink.read_lines(len(lines))
        if lines:
            self._last_line = lines[-1]

    def _routing_is_common(self) -> bool:
        """No state that changes how a call line is counted (so ``LineReplay`` may replay
        it): no held API block or typed command, no cat call being joined, no MIOpenDriver
        run in progress."""
        calls = self.calls
        return not (calls.held or self.cat.parts or calls.driver_run or self.driver.held is not None)

    def _whole_block(self, text: str, start: int, header_end: int, end: int) -> int:
        """The API block whose header line is ``text[start:header_end]`` as one unit
        (``BlockCache.find``): the position after it, or -1 where the line-by-line path must
        decide."""
        found = self.block_cache.find(text, start, header_end, end, self.lines, self._blocks, self.trace.is_pure)
        if found is None:
            return -1
        entry, after = found
        raw = entry.raw
        tid = entry.tid
        n = self.line_no = self.line_no + 1
        self._begin_call(tid)        # at the header line, as the line path does (it may close a Find)
        self.line_no += len(raw) - 1
        self.sink.read_lines(len(raw))
        events, plain = self.block_cache.events(entry, self.trace.state_version, self._block_events,
                                                self.calls.waits_for_dtype)
        if plain and not self.calls.held:
            # one plain call: what _apply and CallTracker.sighting would decide, without asking them
            self.calls.add(tid, events[0], n, _raw_of(n, raw))
            self.block_cache.share_problem(events, self.sink.problem_of(self.calls.last_row[tid]))
        elif events:
            self._apply(events, tid, n, raw[0], _raw_of(n, raw))
        return after + 1

    # ------------------------------------------------------------------ dispatch

    def _dispatch(self, kind: int, c: tuple, line: str, n: int) -> None:
        if self.driver.held is not None and kind != TEXT and kind != BARE_PARAM:
            self._flush_driver(kind, c, n)
        if kind == PARAM:
            block = self._blocks.get(c[1])
            if block is None:
                self._orphan_line(c[1], n, line)
                return
            block.style = block.style or "new"
            if len(block.raw) < MAX_BLOCK_LINES:
                block.params.append(c[4])
                block.raw.append(line)
            return
        if kind == BARE_PARAM:
            block = self._blocks.get("")
            if block is not None and block.style != "new":
                block.style = "old"
                if len(block.raw) < MAX_BLOCK_LINES:
                    block.params.append((c[1], c[2]))
                    block.raw.append(line)
                return
            self._text(line, c, n)
            return
        if kind == HEADER or kind == BARE_HEADER:
            tid = c[1] if kind == HEADER else ""
            header = c[2] if kind == HEADER else c[1]
            old = self._blocks.get(tid)
            if old is not None:
                self._undecoded(old.first_line, "API block cut short: a new block began before its '}'",
                                old.raw[0])
            self._begin_call(tid)
            self._blocks[tid] = _Block(header, n, line, tid)
            return
        if kind == CLOSE or kind == BARE_CLOSE:
            tid = c[1] if kind == CLOSE else ""
            block = self._blocks.pop(tid, None)
            if block is None:
                self._orphan.discard(tid)
                return
            self.block_cache.bare_close = kind == BARE_CLOSE
            block.raw.append(line)
            self._decode_block(tid, block.header, block.params, block.first_line, block.raw)
            return
        if kind == COMMAND:
            self._command(c[1], c[2], c[3], n, line)
            return
        if kind == LEVEL:
            self._level(c, n, line)
            return
        if kind == OLD_COMMAND:
            self._old_command(c[1], c[2], n, line)
            return
        if kind == CUT_COMMAND:
            self._undecoded(n, "Command line without an MIOpenDriver command (cut short?)", line)
            return
        if kind == SQL:
            events = self.sql.feed(c[1])
            if events:
                self._apply(events, "", n, line)
            return
        if kind == CUT_DB:
            self._undecoded(n, "Find-Db/Perf-Db record cut short: a key with no '=' and no values", line)
            return
        if kind == TEXT or kind == DB:
            self._text(line, c, n)
            return
        if kind == PERF:  # no prefix, no thread: the call of the thread that logged last
            self._apply(read_perf_record(c[1]), self.sink.touched_last(self.calls.last_row), n, line)
            return
        # OTHER: MIOpen-prefixed text of no interest (multi-line descriptor dumps etc.)

    def _level(self, c: tuple, n: int, line: str) -> None:
        """A level line (``MIOpen(HIP): Info [func] message``): a legacy Find's start, a
        first-iteration fact, what the level decoder reads in it."""
        tid, func, message = c[1], c[3], c[4]
        direction = FIND_FUNCS.get(func)
        effect = direction is not None and message.startswith("requestAlgoCount")
        if effect:
            self.calls.open_find(tid, direction, n, line, self.line_no)
        fact = read_startup_line(func, message)
        if fact is not None:
            self.startup.fact(tid, fact, n, *self.calls.startup_layer(tid))
            effect = True
        events = self.levels.decode(c[2], func, message)
        if events:
            self._apply(events, tid, n, line)
        self.replay.register_level(line, c, tid, events, effect)

    def _flush_driver(self, kind: int, c: tuple, n: int) -> None:
        """The typed command the driver tracker held for a line (see its ``held``), before
        anything else is recorded; unless this line is MIOpen's own Command line for the same
        call (MIOpen prints RNN commands to stdout, then logs them)."""
        if kind == COMMAND and self.driver.absorb_logged(c[3]):
            return
        text = self.driver.held or ""
        events = self.driver.flush()
        if events:
            self._apply(events, "", self._driver_line, text)

    def _orphan_line(self, tid: str, n: int, line: str) -> None:
        if tid not in self._orphan:
            self._orphan.add(tid)
            self._undecoded(n, "API block without its header line (log starts mid-block?)", line)

    def _begin_call(self, tid: str) -> None:
        """A new API block starts the thread's next call."""
        if self.driver.held is not None:
            self._flush_driver(HEADER, (), self.line_no)
        self._orphan.discard(tid)
        if self.cat.parts:
            self._flush_cat(tid)
        self.calls.begin_call(tid, self.line_no)

    def _flush_cat(self, tid: str) -> None:
        """The thread's cat call ends (``CatJoiner``): record it."""
        joined = self.cat.flush(tid)
        if joined is not None:
            events, n, line, raw = joined
            self._apply(events, tid, n, line, raw)

    def _decode_block(self, tid: str, header: str, params: Sequence[tuple[str, str]], first_line: int,
                      raw_lines: Sequence[str]) -> None:
        events = self._block_events(header, params)
        if events:
            self._apply(events, tid, first_line, raw_lines[0], _raw_of(first_line, raw_lines))

    def _block_events(self, header: str, params: Sequence[tuple[str, str]]) -> list[Event]:
        try:
            return self.trace.decode_block(header, params)
        except Exception as e:  # a decoder bug must not stop the scan
            return [Undecoded(f"trace decoder failed: {type(e).__name__}: {e}")]

    def _command(self, tid: str, fn: str, args: str, n: int, line: str) -> None:
        if self.cat.parts and fn != "LogCmdCat":
            self._flush_cat(tid)
        key = (fn, args, "")
        events = self._command_cache.get(key)
        seen = events is not None
        if events is None:
            events = _decode_command(args.split(), log_fn=fn, api_name=None, find=fn == "LogCmdFindConvolution")
            if len(self._command_cache) >= LINE_CACHE_SIZE:
                self._command_cache.clear()
            self._command_cache[key] = events
        if fn == "LogCmdCat" and self.cat.part(tid, events, n, line):
            return
        if not self.calls.bare_form_of_traced_call(tid, args, events):
            self._apply(events, tid, n, line)
            if seen:   # a command met before will likely come again: replay it from now on (a log of
                # distinct layers meets each once, and registering every line cost a tenth of its decode)
                self.replay.register_command(line, (COMMAND, tid, fn, args), tid, events)

    def _old_command(self, api: str, args: str, n: int, line: str) -> None:
        key = ("", args, api)
        events = self._command_cache.get(key)
        if events is None:
            events = _decode_command(args.split(), log_fn=None, api_name=api, find="Find" in api)
            if len(self._command_cache) >= LINE_CACHE_SIZE:
                self._command_cache.clear()
            self._command_cache[key] = events
        if not self.calls.bare_form_of_traced_call("", args, events):
            self._apply(events, "", n, line)

    def _text(self, line: str, c: tuple, n: int) -> None:
        """Unprefixed text: MIOpenDriver commands and output, db records, or noise."""
        if c[0] == DB:
            events = self._db_cache.get(line)
            if events is None and line not in self._db_cache:
                try:
                    events = self._decode_db_record(c[1])
                except Exception as e:
                    events = [Undecoded(f"db record decoder failed: {type(e).__name__}: {e}")]
                if len(self._db_cache) < LINE_CACHE_SIZE and len(line) <= 4096:
                    self._db_cache[line] = events
            if events:
                self._apply(events, "", n, line)
                return
        held = self.driver.held
        try:
            events = self.driver.feed(line)
        except Exception as e:
            events = [Undecoded(f"driver output decoder failed: {type(e).__name__}: {e}")]
        if self.driver.held is not None and self.driver.held is not held:
            self._driver_line = n   # the line a held command is recorded at
        if events is not None or self.driver.held is not None:
            self.driver_answered = True
        if events is None:
            if c[0] == TEXT:
                self.lines.quiet(line)
            return
        if events:
            self._apply(events, "", n, line)

    # ------------------------------------------------------------------ events -> parts -> catalog

    def _apply(self, events: list[Event], tid: str, n: int, line: str,
               raw: Optional[Callable[[], list[tuple[int, str]]]] = None) -> None:
        calls = self.calls
        for ev in events:
            if type(ev) is Sighting:
                if calls.find_open and tid in calls.find_open:
                    ev = calls.find_form(tid, ev, n, self.line_no)
                    if ev is None:
                        continue
                calls.sighting(tid, ev, n, raw or (lambda: [(n, line)]))
            elif type(ev) is Annotation:
                if ev.problem is not None:
                    row = self.sink.row_for(ev.problem, n)
                else:
                    if calls.held and calls.held_note(tid, ev.name, ev.value):
                        continue   # belongs to the held call; applied when it is recorded
                    row = calls.last_row.get(tid)
                    if row is None:
                        continue
                self.sink.annotate(row, ev.name, ev.value)
            elif type(ev) is Setting:
                self.sink.setting(ev.name, ev.value)
            elif type(ev) is OpSeen:
                problem = self.driver.current_problem(ev.direction, ev.op)
                if problem is not None:   # the driver run's own library call
                    calls.add(tid, Sighting(problem, ev.role, "info"), n, raw or (lambda: [(n, line)]))
            else:
                self._undecoded(n, ev.reason, line)

    def _undecoded(self, n: int, reason: str, text: str) -> None:
        self.sink.undecoded(n, reason, text)


def _raw_of(first_line: int, raw_lines: Sequence[str]) -> Callable[[], list[tuple[int, str]]]:
    """A block's source lines with their numbers, built only for a new layer."""
    return lambda: [(first_line + i, text) for i, text in enumerate(raw_lines)]


def _decode_command(tokens: list[str], *, log_fn: Optional[str], api_name: Optional[str],
                    find: bool) -> list[Event]:
    try:
        parsed = parse_driver_args(tokens, log_fn=log_fn, api_name=api_name)
    except DriverCommandError as e:
        return [Undecoded(f"MIOpenDriver command: {e}")]
    except Exception as e:  # a decoder bug must not stop the scan
        return [Undecoded(f"MIOpenDriver command decoder failed: {type(e).__name__}: {e}")]
    role = "find" if find else "execution"
    return [Sighting(p, role, "command", parsed.warnings) for p in parsed.problems]
