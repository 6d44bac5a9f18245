"""A cuDNN record's header and body read into plain values.

The body grammar (``docs/formats.md`` §11.2): ``name: type=T; val=V;`` (a value),
``name: type=T:`` (a nested block, its lines indented 4 more spaces), ``name: location=dev;
addr=0x…;`` (a pointer), ``[i]: …`` (array elements), and a ``Time:``/``Process=`` trailer.
The same body comes with an ``i!``/``w!``/``e!`` tag (cuDNN 7-9), with no tag (the
documentation's form) or as ``│ `` lines of Julia's logger (the callback form, which, like
some pasted logs, has lost its indentation: there a block holds the lines after its opener
until a name repeats or the next opener).

A body becomes a ``Fields`` tree: names to value strings, or to a nested ``Fields``.  Only
the records a layer comes from are parsed; the rest are recognised by their header alone.
Values are strings until a decoder asks for a number or an array, and an array is measured
before it is split (``int_array``), so no field of a hostile record expands into a large
object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union

#: ``I! CuDNN (v91900 56) function cudnnX() called:`` and its documentation and callback forms
HEADER = re.compile(r"^(?:(?P<sev>[IWE])! CuDNN|cuDNN|┌ Debug: CuDNN) \(v(?P<ver>\d{1,9})(?: (?P<build>\d{1,9}))?\) "
                    r"function (?P<fn>[A-Za-z0-9_]{1,200})\(\) called:")
#: the trailer's thread (``Process=491; Thread=491;`` or the docs' ``Process: 1, Thread: 1,``)
THREAD = re.compile(r"Thread[=:] ?(\w{1,32})")
#: an array's text may be at most this long before it is split (``[16,3,224,224]`` is 14)
ARRAY_CHARS = 160
#: and hold at most this many elements
ARRAY_ITEMS = 12
#: messages kept from one warning/error record's traceback
MESSAGES_KEPT = 8
#: nested blocks deeper than this are read as flat values
MAX_DEPTH = 8


class FieldError(ValueError):
    """A field a decoder needs is missing or not what cuDNN writes; the message says which."""


Value = Union[str, "Fields"]


class Fields(dict):
    """One block of a record: name -> value string or nested ``Fields`` (first one wins);
    ``kind`` is the type the block was opened with (``CUDNN_BACKEND_OPERATION_…``)."""

    kind = ""

    def block(self, *names: str) -> Fields:
        """The first of ``names`` that is a nested block (``FieldError`` if none is)."""
        for name in names:
            value = self.get(name)
            if isinstance(value, Fields):
                return value
        present = [n for n in names if n in self]
        if present:
            raise FieldError(f"{present[0]} is {self[present[0]]!r}, not a descriptor the record spells out")
        raise FieldError(f"no {' / '.join(names)} in the record")

    def text(self, *names: str, default: Optional[str] = None) -> str:
        for name in names:
            value = self.get(name)
            if isinstance(value, str):
                return value
        if default is not None:
            return default
        raise FieldError(f"no {' / '.join(names)} in the record")

    def integer(self, *names: str, default: Optional[int] = None) -> int:
        text = self.text(*names, default="" if default is not None else None)
        if text == "" and default is not None:
            return default
        return to_int(names[0], text)

    def array(self, *names: str) -> tuple[int, ...]:
        return int_array(names[0], self.text(*names))


@dataclass
class Body:
    fields: Fields
    thread: str = ""
    #: ``Warning: …; Reason: …`` lines of a traceback, at most MESSAGES_KEPT (``messages_total`` counts all)
    messages: list[str] = field(default_factory=list)
    messages_total: int = 0


def to_int(name: str, text: str) -> int:
    text = text.strip()
    if not 0 < len(text) <= 20 or not (text.isdigit() or (text[0] == "-" and text[1:].isdigit())):
        raise FieldError(f"{name} is {text[:40]!r}, not an integer")
    return int(text)


def int_array(name: str, text: str, items: int = ARRAY_ITEMS) -> tuple[int, ...]:
    """``[16,3,224,224]`` -> (16, 3, 224, 224); measured before it is split (at most
    ``items`` elements: a shape's few, or a batch's sequence lengths)."""
    text = text.strip()
    limit = ARRAY_CHARS * max(1, items // ARRAY_ITEMS)
    if len(text) > limit:
        raise FieldError(f"{name} is an array of {len(text):,} characters (at most {limit:,} are read)")
    if not (text.startswith("[") and text.endswith("]")):
        raise FieldError(f"{name} is {text[:40]!r}, not an array")
    inner = text[1:-1].strip().strip(",")
    if not inner:
        return ()
    if inner.count(",") >= items:
        raise FieldError(f"{name} has more than {items} elements")
    return tuple(to_int(name, part) for part in inner.split(","))


def _value(rest: str) -> Optional[str]:
    """The value of ``type=T; val=V;`` (V), ``location=…; addr=A;`` ("@A"); None for a
    block opener ``type=T:`` (whose T is ``_opened``); "" for anything else (``streamId=…``)."""
    at = rest.find("val=")
    if at >= 0:
        value = rest[at + 4:].rstrip()
        return value[:-1] if value.endswith(";") else value
    at = rest.find("addr=")
    if at >= 0:
        value = rest[at + 5:].rstrip()
        return "@" + (value[:-1] if value.endswith(";") else value)
    if rest.rstrip().endswith(":") and rest.startswith("type="):
        return None
    return ""


def _content(line: str) -> tuple[int, str]:
    """(indent in spaces, text) of a body line in any of the three forms; (-1, "") for a
    line that is not one."""
    if line[:2] in ("i!", "w!", "e!"):
        rest = line[2:]
        stripped = rest.lstrip(" ")
        return max(0, len(rest) - len(stripped) - 1), stripped
    if line[:2] == "│ ":
        return 0, line[2:].strip()
    stripped = line.lstrip(" ")
    if not stripped or stripped[0] in "└┌":
        return -1, ""
    return len(line) - len(stripped), stripped


def parse_body(text: str) -> Body:
    """The record ``text`` (header line first) as a ``Body``."""
    root = Fields()
    body = Body(root)
    lines = text.split("\n")
    items: list[tuple[int, str, str, bool]] = []   # (indent, name, value or a block's type, opens a block)
    for line in lines[1:]:
        indent, content = _content(line.rstrip("\r"))
        if indent < 0 or not content:
            continue
        if content.startswith(("Time:", "Process")):
            if content.startswith("Process"):
                m = THREAD.search(content)
                if m:
                    body.thread = m.group(1)
            continue
        if content.startswith(("Warning:", "Error:", "Info:")):
            body.messages_total += 1
            if len(body.messages) < MESSAGES_KEPT:
                body.messages.append(content[:300])
            continue
        name, sep, rest = content.partition(": ")
        if not sep:
            if content.endswith(":") and " " not in content:   # "name:" alone opens nothing we read
                continue
            continue
        value = _value(rest)
        items.append((indent, name, rest[5:].rstrip()[:-1] if value is None else value, value is None))
    indented = any(item[0] > 0 for item in items)
    stack: list[tuple[int, Fields]] = [(-1, root)]
    for indent, name, value, opens in items:
        if not indented:   # flat: a block ends at the next opener or where a name repeats
            while len(stack) > 1 and (opens or name in stack[-1][1]):
                stack.pop()
            indent = len(stack) - 1
        else:
            while len(stack) > 1 and indent <= stack[-1][0]:
                stack.pop()
        parent = stack[-1][1]
        if opens:
            child = Fields()
            child.kind = value
            if name not in parent:
                parent[name] = child
            if len(stack) < MAX_DEPTH:
                stack.append((indent, child))
        elif name not in parent:
            parent[name] = value
    return body
