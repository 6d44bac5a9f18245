"""Turn a stream of log bytes into catalog entries.

The scanner is the one place that knows about *lines*: it carries partial lines across
chunks (so the same code serves a file, stdin and a followed log), strips MIOpen's
line prefix in all its versions (none, ``MIOpen(HIP):``, ``MIOpen(OpenCL):``, bare
``MIOpen:``, thread id, hostname, elapsed time, date, and foreign text before it),
assembles API-trace blocks per thread, and hands each piece of text to the decoder
for its kind.  Decoders never see positions; the scanner adds line numbers and threads.

Speed comes from classifying each distinct line once: a training log repeats the
same lines every iteration, so the classification of a line is cached by its text.
"""

from __future__ import annotations

import time
from typing import Callable, Optional, Sequence

from miotui.catalog import Catalog
from miotui.driver import DriverCommandError, parse_driver_args
from miotui.events import Annotation, Event, OpSeen, Setting, Sighting, Undecoded
from miotui.formats.miopen.calls import FIND_FUNCS, CallRouting, CatJoining
from miotui.formats.miopen.clock_fields import lift, strip_line
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
    classify,
    cut_at_the_end,
)
from miotui.formats.miopen.repeats import COMMAND_CALL, PLAIN, RepeatedLines
from miotui.formats.miopen.startup_lines import StartupRouting, has_clock, read_perf_record
from miotui.formats.miopen.whole_blocks import MAX_BLOCK_LINES, WholeBlocks
from miotui.problems import Problem
from miotui.sources import MAX_LINE

#: Distinct lines whose classification is cached; the cache is cleared when it holds more
#: than LINE_CACHE_SIZE lines or LINE_CACHE_CHARS characters, so it stays under ~50 MB
#: whatever the log (a log of distinct lines just re-classifies them).
LINE_CACHE_SIZE = 100_000
#: the shortest run of repeated Command lines replayed at once (shorter: line by line)
MIN_RUN = 16
LINE_CACHE_CHARS = 24_000_000

class _Block:
    __slots__ = ("header", "params", "first_line", "raw", "style", "tid")

    def __init__(self, header: str, line_no: int, raw: str, tid: str):
        self.header = header
        self.params: list[tuple[str, str]] = []
        self.first_line = line_no
        self.raw = [raw]
        self.style: Optional[str] = None  # "new" (prefixed params) or "old" (bare params)
        self.tid = tid


class LogScanner(CallRouting, CatJoining, WholeBlocks, StartupRouting, RepeatedLines):
    """Feeds one source (file, stdin, followed log) into a catalog, chunk by chunk."""

    #: Recognise repeated API blocks as whole texts (False: strictly line by line; the
    #: two must give the same catalog, which the tests check).
    whole_blocks = True

    def __init__(self, catalog: Catalog, file: str = ""):
        self.catalog = catalog
        self.file = file
        self.line_no = 0
        self._carry = b""
        self._cache: dict[str, tuple] = {}
        self._cache_chars = 0
        #: text lines the driver tracker ignored, cached as NOISE since (skipped while cached,
        #: which can matter later: a carried state, ``carried_state``)
        self._quieted: set[str] = set()
        #: the driver tracker answered a line or held a command (then which lines were quieted
        #: matters, and it depends on the cache's history: ``miotui.decoding.ranges`` decodes serially)
        self.driver_answered = False
        self._blocks: dict[str, _Block] = {}
        self._orphan: set[str] = set()
        # tid -> [(problem, role, sources seen)] of its current call (a list: one or two
        # entries, and no problem hashed per sighting)
        self._pending: dict[str, list[tuple[Problem, str, set[str]]]] = {}
        self._last_row: dict[str, object] = {}
        self._driver_run: dict[str, object] = {}  # tid -> problem of the MIOpenDriver run in progress
        self._find_open: dict[str, list] = {}  # tid -> [direction, problem looked up] of a legacy Find
        self._held: dict[str, tuple] = {}  # tid -> API sighting with a guessed dtype, awaiting its Command line
        self._cat: dict[str, list] = {}   # tid -> the cat Command lines of its call so far
        self._command_cache: dict[tuple[str, str, str], list[Event]] = {}
        self._whole_blocks: dict[str, object] = {}   # block text -> its _BlockEntry, or False
        self._whole_chars = 0
        self._bare_close = False  # the last block ended with a bare "}" (MIOpen 1.x)
        #: blocks whose events were reused by their text, without the trace decoder (for tests)
        self.whole_block_hits = 0
        self._db_cache: dict[str, Optional[list[Event]]] = {}
        self._driver_line = 0   # the line of the command the driver tracker holds
        self._last_line = ""    # the last whole line read (was the input cut inside it?)
        self._unsettled: list = []   # plain lines replayed, their calls not yet on their rows
        self._calls_by_text: dict[str, object] = {}   # a Command line that is a call of its own -> its PlainLine
        self._timed: Optional[bool] = None   # MIOpen's lines carry a time field (None: no line yet)
        self._startup_init()
        from miotui.formats.miopen.dbrecords import SqlConfigReader, decode_db_record
        from miotui.formats.miopen.driver_output import DriverLogTracker
        from miotui.formats.miopen.levels import LevelDecoder
        from miotui.formats.miopen.trace import DTYPE_GUESS_WARNING, TraceDecoder
        self._guess_warnings = frozenset({DTYPE_GUESS_WARNING})
        self.trace = TraceDecoder()
        self.levels = LevelDecoder()
        self.driver = DriverLogTracker(lambda: (self.levels.recent_convs, self.levels.recent_im2col))
        self.sql = SqlConfigReader()
        self._decode_db_record = decode_db_record

    # ------------------------------------------------------------------ input

    def feed(self, data: bytes) -> None:
        """Consume bytes; a line split across calls is carried to the next call.

        ``\r`` ends a line (progress bars), ``\r\n`` is one line end even when the
        two bytes arrive in different chunks.
        """
        if not data:
            return
        with self.catalog.lock:
            self.catalog.bytes += len(data)
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

    def finish(self) -> None:
        """End of input: the last unterminated line counts, open blocks are cut short."""
        with self.catalog.lock:
            if self._carry and self._carry != b"\r":
                self._process(self._carry)
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
            for tid in list(self._cat):
                self._flush_cat(tid)
            for tid in list(self._held):
                self._flush_held(tid)
            self._pending.clear()
            self._startup_finish()
            for tid in list(self._find_open):
                self._close_find(tid)
            self.catalog.finished = time.monotonic()

    #: attributes that only speed the scan up (a cache rebuilt from the lines, a counter):
    #: two scanners may differ there and still read every later line the same way
    SPEED_ONLY = frozenset({"catalog", "_cache", "_cache_chars", "_whole_blocks", "_whole_chars",
                            "whole_block_hits", "_command_cache", "_db_cache", "_calls_by_text",
                            "_guess_warnings", "_decode_db_record", "trace", "levels", "driver", "sql",
                            # the time fields of the chunk being read: all applied between chunks
                            "_chunk_fields", "_chunk_base", "_chunk_next",
                            # the whole-block path's guess at how blocks end (a wrong one: line by line)
                            "_bare_close",
                            # they matter only where the driver tracker answers lines (see there)
                            "_quieted", "driver_answered",
                            # the clock after a warm-up is not the serial one: a range that asks
                            # for it is not trusted (``clock_asked_unknown``), so it is not compared
                            "_clock", "clock_unknown", "clock_asked_unknown"})

    def carried_state(self) -> dict[str, object]:
        """What this scanner carries from the lines it read to the lines after them, by name
        (its decoders' own state included; its caches not): two scanners whose carried
        states are equal read every later line the same way (``miotui.decoding.ranges`` checks
        that where one file is decoded in ranges)."""
        state = {name: value for name, value in vars(self).items() if name not in self.SPEED_ONLY}
        for name in ("trace", "levels", "driver", "sql"):
            state[name] = getattr(self, name)
        return state

    def move_to(self, catalog: Catalog) -> None:
        """Go on into ``catalog`` (the range after a warm-up, ``miotui.decoding.ranges``): the rows
        this scanner met are carried over (``Catalog.carry_rows``) and its caches, which hold
        rows, start empty (but for the text lines it quieted)."""
        with self.catalog.lock:
            if self._unsettled:
                self._settle()
            made = catalog.carry_rows(self.catalog.rows_met())
            self._last_row = {tid: made[id(row)] for tid, row in self._last_row.items()}
            self._cache.clear()
            self._cache_chars = 0
            for line in self._quieted:
                self._cache[line] = (NOISE,)
            self._calls_by_text.clear()
            self._whole_blocks.clear()
            self._whole_chars = 0
            if self.catalog.startup.timed:
                catalog.startup.timed = True
            self.clock_unknown = bool(self._timed)
            self.catalog = catalog

    @staticmethod
    def _cap(carry: bytes) -> bytes:
        return carry if len(carry) <= MAX_LINE * 4 else carry[:MAX_LINE * 4]

    def _process(self, data) -> None:
        """Whole lines (bytes-like, without the last line end)."""
        text = str(data, "utf-8", "replace")
        if self._timed is None:
            self._timed = has_clock(text)
            if self._timed:
                self.catalog.startup.timed = True
        if self._timed:
            self._process_timed(text)
            return
        if "\r" not in text:
            self._process_range(text, 0, len(text))
            return
        # "\r" and "\r\n" end lines too: the text is handled in "\r"-ended pieces rather
        # than rewritten (a two-character replace costs more than the rest of the scan)
        cr = text.find("\r")
        if text.startswith("\r\n", cr):  # CRLF line ends throughout: rewrite once
            text = text.replace("\r\n", "\n")
            if "\r" in text:  # each CR left ends a line ("\r\r\n" became "\r\n": two ends)
                text = text.replace("\r", "\n")
            self._process_range(text, 0, len(text))
            return
        start = 0
        while cr >= 0:
            self._process_range(text, start, cr)
            start = cr + 2 if text.startswith("\n", cr + 1) else cr + 1
            cr = text.find("\r", start)
        self._process_range(text, start, len(text))

    def _process_timed(self, text: str) -> None:
        """Lines of a log with MIOpen's time fields: read without the fields, which move the
        clock (``clock_fields``); line by line when the fast paths are off (the reference)."""
        if "\r" in text:   # "\r\n" and a lone "\r" each end a line
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if self.whole_blocks:
            text, fields = lift(text)
            self._clock_chunk(fields)
            self._process_range(text, 0, len(text))
            self._clock_chunk_done()
            return
        for raw in text.split("\n"):
            line, fields = strip_line(raw)
            self._clock_line(fields)
            self._process_lines([line])

    def _process_range(self, text: str, pos: int, end: int) -> None:
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
        self._process_lines(text[pos:end].split("\n"))

    def _process_lines(self, lines: list[str]) -> None:
        """Lines one by one, except runs of repeated Command lines that are calls of their own
        (``RepeatedLines.replay_run``), looked for where most of the lines are such calls."""
        by_text = self._calls_by_text
        if not by_text or len(lines) < 256:
            self._each_line(lines)
            return
        known = list(map(by_text.__contains__, lines))
        if sum(known) < 0.75 * len(lines):   # level-6 logs: a call line, then its info line
            self._each_line(lines)
            return
        start = i = 0
        end = len(lines)
        while i < end:
            try:
                j = known.index(True, i)
            except ValueError:
                break
            try:
                k = known.index(False, j)
            except ValueError:
                k = end
            if k - j < MIN_RUN:
                i = k
                continue
            if j > start:
                self._each_line(lines[start:j])
            run = list(map(by_text.get, lines[j:k]))
            if None not in run and self._routing_is_common() and self.replay_run(run, self.line_no + 1):
                self.line_no += k - j
                self.catalog.lines += k - j
                self._last_line = lines[k - 1]
            else:   # the first line the general way, then look again
                k = j + 1
                self._each_line(lines[j:k])
            start = i = k
        if start < end:
            self._each_line(lines[start:])
        if self._unsettled:
            self._settle()

    def _each_line(self, lines: list[str]) -> None:
        cache = self._cache
        blocks = self._blocks
        n = self.line_no
        pending, find_open = self._pending, self._find_open
        replay_call = self.replay_call
        last_row = self._last_row
        common = self._routing_is_common()
        for line in lines:
            n += 1
            c = cache.get(line)
            if c is None:
                line, c = self._classify_new(line)
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
                    if self._replay(plain, n):
                        continue
                c = c[1]
                kind = c[0]
            self.line_no = n
            self._dispatch(kind, c, line, n)
            common = self._routing_is_common()
        if self._unsettled:
            self._settle()
        self.line_no = n
        self.catalog.lines += len(lines)
        if lines:
            self._last_line = lines[-1]

    def _classify_new(self, line: str) -> tuple[str, tuple]:
        """Classify a line not in the cache and cache it: (the line as kept, its class)."""
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        c = classify(line)
        self._cache_chars += len(line)
        if len(self._cache) >= LINE_CACHE_SIZE or self._cache_chars > LINE_CACHE_CHARS:
            self._cache.clear()
            self._quieted.clear()
            self._calls_by_text.clear()
            self._cache_chars = len(line)
        self._cache[line] = c
        return line, c

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
            self._bare_close = kind == BARE_CLOSE
            block.raw.append(line)
            self._decode_block(tid, block.header, block.params, block.first_line, block.raw)
            return
        if kind == COMMAND:
            self._command(c[1], c[2], c[3], n, line)
            return
        if kind == LEVEL:
            direction = FIND_FUNCS.get(c[3])
            effect = direction is not None and c[4].startswith("requestAlgoCount")
            if effect:
                self._open_find(c[1], direction, n, line)
            effect = self._startup_line(c[1], c[3], c[4], n) or effect
            events = self.levels.decode(c[2], c[3], c[4])
            if events:
                self._apply(events, c[1], n, line)
            self._register_level(line, c, c[1], events, effect)
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
            rows = self._last_row
            tid = max(rows, key=lambda t: rows[t].version) if rows else ""
            self._apply(read_perf_record(c[1]), tid, n, line)
            return
        # OTHER: MIOpen-prefixed text of no interest (multi-line descriptor dumps etc.)

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
        if self._cat:
            self._flush_cat(tid)
        if self._held:
            self._flush_held(tid)
        self._pending.pop(tid, None)
        if self._find_open:
            self._close_find(tid)

    def _decode_block(self, tid: str, header: str, params: Sequence[tuple[str, str]], first_line: int,
                      raw_lines: Sequence[str]) -> None:
        events = self._block_events(header, params)
        if events:
            self._apply(events, tid, first_line, raw_lines[0], self._raw_of(first_line, raw_lines))

    def _block_events(self, header: str, params: Sequence[tuple[str, str]]) -> list[Event]:
        try:
            return self.trace.decode_block(header, params)
        except Exception as e:  # a decoder bug must not stop the scan
            return [Undecoded(f"trace decoder failed: {type(e).__name__}: {e}")]

    @staticmethod
    def _raw_of(first_line: int, raw_lines: Sequence[str]) -> Callable[[], list[tuple[int, str]]]:
        """The block's source lines with their numbers, built only for a new layer."""
        return lambda: [(first_line + i, text) for i, text in enumerate(raw_lines)]

    def _command(self, tid: str, fn: str, args: str, n: int, line: str) -> None:
        if self._cat and fn != "LogCmdCat":
            self._flush_cat(tid)
        key = (fn, args, "")
        events = self._command_cache.get(key)
        seen = events is not None
        if events is None:
            events = self._decode_command(args.split(), log_fn=fn, api_name=None,
                                          find=fn == "LogCmdFindConvolution")
            if len(self._command_cache) >= LINE_CACHE_SIZE:
                self._command_cache.clear()
            self._command_cache[key] = events
        if fn == "LogCmdCat" and self._cat_part(tid, events, n, line):
            return
        if not self._bare_form_of_traced_call(tid, args, events):
            self._apply(events, tid, n, line)
            if seen:   # a command met before will likely come again: replay it from now on (a log of
                # distinct layers meets each once, and registering every line cost a tenth of its decode)
                self._register_command(line, (COMMAND, tid, fn, args), tid, events)

    def _old_command(self, api: str, args: str, n: int, line: str) -> None:
        key = ("", args, api)
        events = self._command_cache.get(key)
        if events is None:
            events = self._decode_command(args.split(), log_fn=None, api_name=api, find="Find" in api)
            if len(self._command_cache) >= LINE_CACHE_SIZE:
                self._command_cache.clear()
            self._command_cache[key] = events
        if not self._bare_form_of_traced_call("", args, events):
            self._apply(events, "", n, line)

    @staticmethod
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
            if c[0] == TEXT and line in self._cache:
                self._cache[line] = (NOISE,)
                self._quieted.add(line)
            return
        if events:
            self._apply(events, "", n, line)

    # ------------------------------------------------------------------ events -> catalog

    def _apply(self, events: list[Event], tid: str, n: int, line: str,
               raw: Optional[Callable[[], list[tuple[int, str]]]] = None) -> None:
        catalog = self.catalog
        for ev in events:
            if type(ev) is Sighting:
                if self._find_open and tid in self._find_open:
                    ev = self._find_form(tid, ev, n)
                    if ev is None:
                        continue
                self._sighting(tid, ev, n, raw or (lambda: [(n, line)]))
            elif type(ev) is Annotation:
                if ev.problem is not None:
                    row = catalog.row_for(ev.problem, n, self.file)
                else:
                    held = self._held.get(tid)
                    if held is not None:  # belongs to the held call; applied when it is recorded
                        held[3].append((ev.name, ev.value))
                        continue
                    row = self._last_row.get(tid)
                    if row is None:
                        continue
                catalog.annotate(row, ev.name, ev.value)
            elif type(ev) is Setting:
                catalog.startup.set(ev.name, ev.value)
            elif type(ev) is OpSeen:
                problem = self.driver.current_problem(ev.direction, ev.op)
                if problem is not None:   # the driver run's own library call
                    self._add(tid, Sighting(problem, ev.role, "info"), n, raw or (lambda: [(n, line)]))
            else:
                self._undecoded(n, ev.reason, line)

    def _undecoded(self, n: int, reason: str, text: str) -> None:
        self.catalog.add_undecoded(n, reason, text, self.file)


