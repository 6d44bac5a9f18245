"""What one log line is, on its own: MIOpen's prefix split off and the line classified.

Every version's line prefix (none, ``MIOpen(HIP):``, ``MIOpen(OpenCL):``, bare ``MIOpen:``, a
thread id, a hostname, the elapsed-time and date fields, other tools' text before it) and
every kind of line (API-trace header, parameter and ``}``, ``Command`` line, level line, old
``miopenX:`` driver line, unprefixed text, db record).  The answer depends only on the
line's text, so the scanner caches it by text: a training log repeats the same lines.
"""

from __future__ import annotations

import re
from typing import Optional

#: The spellings of MIOpen's prefix word, the one place that lists them: ``MIOpen(HIP)`` and
#: ``MIOpen(OpenCL)`` before ROCm 7, bare ``MIOpen`` since (TheRock) and in the oldest logs.
#: Every fast path takes each of them (``clock_fields.lift``); a new spelling goes here.
PREFIX_WORDS = ("MIOpen(HIP)", "MIOpen(OpenCL)", "MIOpen")
#: a regular expression for any of the spellings
PREFIX_WORD_RE = "(?:" + "|".join(re.escape(w) for w in PREFIX_WORDS) + ")"
#: MIOpen's line prefix, every version (the thread id or hostname before it is found separately)
PREFIX_RE = re.compile(PREFIX_WORD_RE + r"(?: *\d+\.\d{3})?(?: \([^)]*\))?: ")
_LEAD_TID_RE = re.compile(r"(?:^|[\s|:])(\d+) $")
_LEVEL_RE = re.compile(r"^(?:\S+ )?(Fatal|Error|Warning|Info2|Info|Trace) \[([^\]]*)\] ?(.*)$", re.S)
_COMMAND_RE = re.compile(r"^Command \[([^\]]*)\] (\S*MIOpenDriver(?:\.exe)?) +(.*)$")
_OLD_COMMAND_RE = re.compile(r"^\s*(miopen\w+): (\S*MIOpenDriver)\s+(.*)$")
_BARE_HEADER_RE = re.compile(r"^\s*[\w:<>]+(?: [\w:<>*&]+)*[ *&](~?[\w:]+)\(.*\)\s*(?:const)?\s*\{\s*$")
_BARE_PARAM_RE = re.compile(r"^\s*([\w.*\[\]>\-]+|\"[^\"]*\") = ?(.*)$")
_FOREIGN_LEAD_RE = re.compile(r"^(?:[\w.-]+\s+\|\s?|\*\*|>\s)")
_DB_RECORD_RE = re.compile(r"^\d+-\d[^=\s]*=")
#: the start of a Find-Db / Perf-Db key (``384-152-104-3x3-...``) on a line with no ``=``: a cut record
_DB_KEY_START_RE = re.compile(r"^\d+-\d+-\d+-\d+x\d+(?:x\d+)?-\d+\S*$")

#: an API header's start with no "{": the line was cut (at the end of the input)
CUT_HEADER_RE = re.compile(r"^\s*(?:miopenStatus_t|void) (?![\w]*::)[^{]*$")
#: how MIOpenDriver's result lines start (a last line that is a piece of one was cut)
RESULT_PHRASES = ("GPU Kernel Time", "GPU Kernel Min Time", "GPU Kernel Avg Time", "Wall-clock Time",
                   "Forward Convolution", "Backward Convolution", "Forward batch norm", "Forward train batch norm",
                   "Forward Inference batch norm", "Backwards prop batch norm", "Forward Pooling",
                   "Backward Pooling", "MIOpen Forward Conv", "MIOpen Backward", "stats: ")

# Line kinds (first element of a classification tuple).
NOISE, HEADER, PARAM, CLOSE, COMMAND, LEVEL, OLD_COMMAND, BARE_HEADER, BARE_PARAM, BARE_CLOSE, \
    TEXT, DB, OTHER, CUT_COMMAND, CUT_DB, SQL, PERF = range(17)


def split_prefix(line: str) -> Optional[tuple[str, str]]:
    """(thread key, body) of a MIOpen-prefixed line, or None for any other line."""
    m = PREFIX_RE.search(line)
    if m is None:
        return None
    lead = line[:m.start()]
    tid = ""
    if lead:
        t = _LEAD_TID_RE.search(lead)
        if t:
            tid = t.group(1)
    return tid, line[m.end():]


def classify(line: str) -> tuple:
    """What one line is, independent of context (so the answer can be cached by text)."""
    split = split_prefix(line) if "MIOpen" in line else None
    if split is not None:
        tid, body = split
        if body.startswith("\t"):
            name, sep, value = body[1:].partition(" = ")
            if not sep:
                stripped = body[1:].rstrip()
                if stripped.endswith(" ="):
                    name, value = stripped[:-2], ""
                else:
                    return (OTHER, tid)
            name = name.strip()
            return (PARAM, tid, name, value, (name, value))
        stripped = body.rstrip()
        if stripped == "}":
            return (CLOSE, tid)
        if stripped.endswith("{"):
            # and the text of the block's own "}" line, to look for (see whole_blocks.BlockCache.find);
            # None when the prefix carries MIOpen's elapsed time or date: every "}" line differs
            prefix = line[:len(line) - len(body)]
            timed = any(ch.isdigit() for ch in prefix[prefix.find("MIOpen"):])
            return (HEADER, tid, stripped, None if timed else "\n" + prefix + "}")
        if body.startswith("Command ["):
            m = _COMMAND_RE.match(body.rstrip())
            if m:
                return (COMMAND, tid, m.group(1), m.group(3))
            return (CUT_COMMAND, tid)
        m = _LEVEL_RE.match(body)
        if m:
            return (LEVEL, tid, m.group(1), m.group(2), m.group(3))
        return (OTHER, tid)
    stripped = line.strip()
    if not stripped:
        return (NOISE,)
    lead = _FOREIGN_LEAD_RE.match(stripped)
    if lead:  # docker-compose "name | ", markdown "**": MIOpen's own text follows
        stripped = stripped[lead.end():].strip()
        line = stripped
        if not stripped:
            return (NOISE,)
    if stripped == "}":
        return (BARE_CLOSE,)
    if "MIOpenDriver" in line:
        m = _OLD_COMMAND_RE.match(line)
        if m:
            return (OLD_COMMAND, m.group(1), m.group(3))
    if stripped.endswith("{") and "miopen" in stripped:
        m = _BARE_HEADER_RE.match(stripped)
        if m:
            return (BARE_HEADER, stripped)
    if " = " in stripped or stripped.endswith(" ="):
        m = _BARE_PARAM_RE.match(stripped)
        if m:
            return (BARE_PARAM, m.group(1), m.group(2))
    if stripped[0] in "IC" and stripped.startswith(("INSERT INTO", "CREATE TABLE")) and "config" in stripped[:24]:
        return (SQL, stripped)
    if stripped[0] == "{" and stripped.startswith('{"solution"'):   # MIOPEN_PERFORMANCE_LOGS
        return (PERF, stripped)
    if stripped[0].isdigit():
        if "=" in stripped:
            if _DB_RECORD_RE.match(stripped):
                return (DB, stripped)
        elif _DB_KEY_START_RE.match(stripped):
            return (CUT_DB,)
    return (TEXT, stripped)


def cut_at_the_end(line: str, run_open: bool) -> str:
    """Why the input's last line is MIOpen text cut short by the end of the input (an API
    header before its ``{``; a driver result line while a run's output may follow), or ""."""
    from miotui.driver.output_lines import parse_output_line
    c = classify(line)
    split = split_prefix(line) if c[0] == OTHER else None
    body = split[1] if split else (c[1] if c[0] == TEXT else "")
    if body and CUT_HEADER_RE.match(body):
        return "the input ends inside an API block's header line"
    if c[0] == TEXT and run_open and parse_output_line(c[1]) is None:
        text = c[1]
        if any(phrase.startswith(text) or text.startswith(phrase) for phrase in RESULT_PHRASES):
            return "the input ends inside a MIOpenDriver result line"
    return ""
