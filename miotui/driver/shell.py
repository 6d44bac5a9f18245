"""Typed MIOpenDriver commands as people paste them: every command in a piece of shell text.

Users paste their terminal into bug reports, READMEs and chat, and the same command shows
up in many shapes (each seen in real logs):

* after a shell prompt (``$ ``, ``root@host:/opt/rocm/bin# ``, ``PS C:\\> ``), after env
  assignments (``MIOPEN_FIND_MODE=1 ./bin/MIOpenDriver ...``) or a launcher (``rocprof
  --stats``, ``sudo``), after another tool's prefix (``INFO - ``, docker-compose ``name | ``);
* with ``MIOpenDriver`` at any path, with none, or as ``MIOpenDriver.exe``;
* in single or double quotes, in inline backticks whose closing backtick is glued to the
  last value, or as a Python argv list (``['./bin/MIOpenDriver', 'conv', ...]``);
* chained with ``;``, ``&&``, ``||`` or piped (``| tee out.log``), several on one line;
* glued to the driver's echo of itself when a paste lost its newline
  (``... -F 1MIOpenDriver conv ... -F 1``).

``\\`` continuations are joined by the caller (a line at a time reader), then handed here.
Nothing here decides what the flags mean (``miotui.driver.commands`` does); a value such
as ``$BATCH`` is kept as written, so the parser can say it is a shell variable.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass

#: the executable, at any path, with its ``.exe``; the driver's old echo adds a colon
EXE_RE = re.compile(r"[^\s'\"`;|&()\[\],=]*MIOpenDriver(?:\.exe)?(?::|(?=[\s'\"`;|&)\],]|$))")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: tokens that end a command: the rest of the line is another command or a redirection
_OPERATORS = ("&&", "||", ";", "|", "&", ">", ">>", "<", "2>", "2>>", "&>", "1>", "2>&1")
_QUOTES = "'\"`"


@dataclass(frozen=True)
class ShellCommand:
    """One MIOpenDriver command found in shell text."""

    args: tuple[str, ...]           #: the base argument and its flags, as written
    env: tuple[tuple[str, str], ...] = ()   #: ``NAME=value`` assignments just before it
    exe: str = "MIOpenDriver"       #: the executable as written ("" for a bare argument list)
    how: tuple[str, ...] = ()       #: how the text had to be read (quotes removed, echo split off)
    #: shaped like the driver's echo of its own command line (``MIOpenDriver[:] args`` with no
    #: path, prompt or anything before it, or glued to the previous command): it may be the
    #: echo of a command typed just before, which is then the same run
    echo_shaped: bool = False


def _env_before(prefix: str) -> tuple[tuple[str, str], ...]:
    """``NAME=value`` words right before the executable (after any prompt or launcher)."""
    words = prefix.split()
    env: list[tuple[str, str]] = []
    for word in reversed(words):
        if not _ENV_RE.match(word):
            break
        name, _, value = word.partition("=")
        env.append((name, value.strip(_QUOTES)))
    return tuple(reversed(env))


def _tokens(segment: str) -> list[str]:
    """Shell words of one command's text, up to the first operator."""
    try:
        lexer = shlex.shlex(segment, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # an unbalanced quote (a cut paste): words as written
        words = re.findall(r"[^\s;&|<>]+|[;&|<>]+", segment)
    out: list[str] = []
    for i, word in enumerate(words):
        if word in _OPERATORS or (word and word[0] in ";&|<>"):
            break
        if word.isdigit() and i + 1 < len(words) and words[i + 1][:1] in "<>":
            break   # "2>&1", "1> out.log": a file descriptor, not a value
        out.append(word)
    return out


def _strip_glued(tokens: list[str], how: list[str]) -> list[str]:
    """Drop what a paste glued to the last value: a closing backtick or quote, a ``\\``."""
    while tokens:
        last = tokens[-1]
        stripped = last.rstrip("`'\"\\;,")
        if stripped == last:
            break
        how.append(f"dropped {last[len(stripped):]!r} glued to the last value")
        if stripped:
            tokens[-1] = stripped
            break
        tokens.pop()
    return tokens


#: a flag token: ``-X`` (any non-digit character: MIOpen uses ``-!``, ``-@``, ``-_``...) or ``--name``
_FLAG_TOKEN_RE = re.compile(r"^-(?:-[A-Za-z_][\w-]*(?:=.*)?|[^\d\s.-].*)$")


def _cut_trailing(tokens: list[str], how: list[str]) -> list[str]:
    """Drop what follows the last flag/value pair: a table's other columns, a comment, prose
    (every driver flag takes a value, so a flag is expected at every other position)."""
    i = 1
    while i < len(tokens):
        if not _FLAG_TOKEN_RE.match(tokens[i]):
            if tokens[i] in ("-", "--") or "$" in tokens[i]:
                return tokens   # a cut flag or an unexpanded shell variable: the parser says which
            how.append(f"ignored {' '.join(tokens[i:])[:60]!r} after the last flag")
            return tokens[:i]
        i += 1 if "=" in tokens[i] and tokens[i].startswith("--") else 2
    return tokens


def _argv_list(text: str) -> list[str] | None:
    """A Python argv list around the executable (``['./bin/MIOpenDriver', 'conv', ...]``)."""
    start = text.rfind("[", 0, text.find("MIOpenDriver"))
    end = text.find("]", start)
    if start < 0 or end < 0:
        return None
    try:
        value = ast.literal_eval(text[start:end + 1])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    for i, tok in enumerate(value):
        if EXE_RE.fullmatch(tok):
            return value[i + 1:]
    return None


def find_commands(text: str) -> list[ShellCommand]:
    """Every MIOpenDriver command in ``text`` (one line, continuations already joined),
    in order.  A command is the executable followed by at least one word; what it means
    is not checked here."""
    if "MIOpenDriver" not in text:
        return []
    if "['" in text or '["' in text:
        argv = _argv_list(text)
        if argv is not None:
            return [ShellCommand(tuple(argv), (), "MIOpenDriver", ("read as a Python argv list",))] if argv else []
    found = []   # (start, end, executable) of each occurrence
    for m in EXE_RE.finditer(text):
        start = m.start()
        name_at = start + m.group(0).index("MIOpenDriver")
        if name_at > start and not any(sep in text[start:name_at] for sep in "/\\"):
            start = name_at   # "...-t 1MIOpenDriver ...": the "1" ends the command before
        found.append((start, m.end(), text[start:m.end()].rstrip(":")))
    commands: list[ShellCommand] = []
    for i, (start, exe_end, exe) in enumerate(found):
        how: list[str] = []
        end = found[i + 1][0] if i + 1 < len(found) else len(text)
        if i + 1 < len(found) and end > 0 and not text[end - 1].isspace() and text[end - 1] not in _QUOTES + ";|&":
            how.append("split off the driver's echo glued to this command (a lost newline)")
        segment = text[exe_end:end]
        opener = text[start - 1] if start > 0 else ""
        if opener and opener in _QUOTES:
            close = segment.find(opener)
            if close >= 0:
                segment = segment[:close]
            how.append(f"read inside {opener}...{opener}")
        elif "`" in segment:   # the closing backtick of inline code whose opener is before
            segment = segment[:segment.index("`")]
        tokens = _strip_glued(_tokens(segment), how)
        if not tokens:
            continue
        tokens = _cut_trailing(tokens, how)
        before = text[:start]
        echo_shaped = exe in ("MIOpenDriver", "MIOpenDriver.exe") and (not before.strip() or (
            i > 0 and not before[-1:].isspace()))
        commands.append(ShellCommand(tuple(tokens), _env_before(before.rstrip(_QUOTES)), exe, tuple(how),
                                     echo_shaped))
    return commands


def find_bare_commands(text: str, bases: "frozenset[str] | set[str]") -> list[ShellCommand]:
    """Driver arguments with no executable (``convbfp16 -n 16 -c 288 ...``): command lists,
    benchmark tables, other tools that take MIOpenDriver's syntax, and MIOpen's own stdout
    echo of RNN commands.  A candidate is a known base argument at the start of the line or
    of a backtick span / table cell, followed by a flag."""
    if "MIOpenDriver" in text or "-" not in text:
        return []
    commands: list[ShellCommand] = []
    for m in _BARE_RE.finditer(text):
        if m.group(1) not in bases:
            continue
        how: list[str] = []
        segment = text[m.start(1):]
        opener = text[m.start(1) - 1] if m.start(1) > 0 else ""
        if opener and opener in _QUOTES:
            close = segment.find(opener)
            if close >= 0:
                segment = segment[:close]
            how.append(f"read inside {opener}...{opener}")
        elif "|" in segment:   # a table cell
            segment = segment[:segment.index("|")]
        tokens = _cut_trailing(_strip_glued(_tokens(segment), how), how)
        if len(tokens) >= 2:
            commands.append(ShellCommand(tuple(tokens), (), "", tuple(how)))
    return commands


#: a base argument word followed by a flag, where a bare argument list can start
_BARE_RE = re.compile(r"(?:^|(?<=[`'\"|]))\s*([A-Za-z][\w]*) +-{1,2}[A-Za-z_!@#$%^]")
