"""What a log format is to the rest of miotui: a name, a test of its text, and a scanner.

Why a record and not a base class: a format's code (its line classes, its grammar, its
scanner) shares nothing with another format's, and the reader needs only these facts to
choose one.  Each format package defines one ``FORMAT`` and :data:`miotui.formats.FORMATS`
lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional, Protocol

if TYPE_CHECKING:
    from miotui.catalog import Catalog


class Role(Enum):
    """What a file in the format gives: layers of its own, or times for a log's layers."""
    LOG = "log"                    # calls: layers of its own (MIOpen, cuDNN)
    TRACE = "trace"                # a profiler trace: layers with measured times; beside a log, joined to it
    KERNEL_TRACE = "kernel trace"  # kernel dispatches only: joined to a log beside it by call order


class Scanner(Protocol):
    """Text in, catalog entries out: fed a stream's UTF-8 text in pieces of any size."""

    def feed(self, data: bytes) -> None: ...

    def finish(self) -> None: ...


@dataclass(frozen=True)
class Format:
    """One log format.

    ``claims`` is asked of text: a log's first bytes, or the complete lines a followed log
    has so far.  It must be cheap and must not claim another format's text; the registry
    asks traces first, then logs, and falls back to the first format (MIOpen's).
    ``scanner`` makes the format's scanner for a catalog and a file label; None for a
    format that only joins times to a log (``Role.KERNEL_TRACE``).  ``host_label`` finds
    the host name or rank tag a piece of its text carries, where the format has one.
    ``sources`` are the source names its scanner gives the layers it finds (``Event.source``:
    a layer remembers where it was seen), and ``translation`` the note shown beside a
    MIOpenDriver command made from such a layer when the command is not the log's own.
    ``line_pattern`` (a regular expression, searched in one line) says a line is the
    library's own, so ``miotui record`` keeps it out of the job's pane."""
    name: str                   # the registry's key: "miopen", "cudnn", ...
    label: str                  # what the status bar and ``decode`` say: "MIOpen", "cuDNN", ...
    role: Role
    claims: Callable[[bytes], bool]
    scanner: Optional[Callable[["Catalog", str], Scanner]] = None
    host_label: Optional[Callable[[bytes], Optional[str]]] = None
    sources: frozenset[str] = frozenset()
    translation: Optional[str] = None
    line_pattern: Optional[str] = None


class FormatRegistry(tuple):
    """The formats miotui reads, in order; the first is the one a log is read as when no
    other claims it.  Handed to the follower (``miotui.sources.follow.LogReader``), which
    may not import a format: it asks this object to tell and to scan."""

    def __new__(cls, formats: Iterable[Format]) -> "FormatRegistry":
        self = super().__new__(cls, tuple(formats))
        if not self:
            raise ValueError("a registry needs a default format")
        names = [f.name for f in self]
        if len(set(names)) != len(names):
            raise ValueError(f"format names repeat: {names}")
        return self

    @property
    def default(self) -> Format:
        return self[0]

    def _asked(self) -> Iterator[Format]:
        """The order claims are asked in: a trace's kernel names can look like a cuDNN log's
        text, so structured traces first; then logs, the default last."""
        yield from (f for f in self if f.role is not Role.LOG)
        yield from (f for f in self[1:] if f.role is Role.LOG)
        yield self.default

    def by_name(self, name: str) -> Format:
        """The format called ``name``; KeyError names the ones there are."""
        for fmt in self:
            if fmt.name == name:
                return fmt
        raise KeyError(f"no format {name!r}; there are {', '.join(f.name for f in self)}")

    def claimed(self, head: bytes) -> Optional[Format]:
        """The format that claims ``head`` (a file's first bytes), or None."""
        for fmt in self._asked():
            if fmt.claims(head):
                return fmt
        return None

    def choose(self, head: bytes) -> Format:
        """The format ``head`` is in: the one that claims it, else the default."""
        return self.claimed(head) or self.default

    def told(self, lines: bytes) -> bool:
        """Whether complete lines of a log tell its format (a followed log's text is held,
        unscanned, until they do: ``miotui.sources.head_choice``)."""
        return any(fmt.claims(lines) for fmt in self._asked() if fmt.role is Role.LOG)

    def scanner_for(self, head: bytes, catalog: "Catalog", file: str = "") -> Scanner:
        """The scanner of the format ``head`` (a log's first bytes) is in; the catalog notes
        the format's label (``Catalog.formats``: the status bar shows it) once there is text.
        Where ``head`` holds the text of more than one log format (a MIOpen log and a cuDNN log
        written to one file), every piece goes to each of their scanners: each reads its own
        lines and passes over the other's, so no format's layers are lost."""
        claiming = [f for f in self._asked() if f.claims(head)]   # each format asked once
        fmt = claiming[0] if claiming else self.default
        if fmt.scanner is None:   # a kernel trace read as a log: it has no layers of its own
            fmt = self.default
        others = [f for f in claiming if f is not fmt and f.role is Role.LOG and fmt.role is Role.LOG]
        if head:
            for chosen in (fmt, *others):
                catalog.formats.setdefault(chosen.label)
        assert fmt.scanner is not None
        first = fmt.scanner(catalog, file)
        if not others:
            return first
        return MixedScanner(first, [f.scanner(UncountedCatalog(catalog), file) for f in others
                                    if f.scanner is not None])

    def format_of(self, sources: Iterable[str]) -> Format:
        """The format a layer seen in ``sources`` (its snapshot's) was read from: the first
        other than the default that gave one of them, else the default."""
        seen = set(sources)
        for fmt in self[1:]:
            if fmt.sources & seen:
                return fmt
        return self.default

    def translation(self, sources: Iterable[str]) -> Optional[str]:
        """The note beside the MIOpenDriver command of a layer seen in ``sources`` where the
        command was made from another library's call (None for MIOpen's own)."""
        return self.format_of(sources).translation

    def line_pattern(self) -> str:
        """One regular expression for a line any log format's library wrote (``miotui record``
        hands it to the job's processes, which may not import miotui)."""
        return "|".join(f"(?:{f.line_pattern})" for f in self if f.line_pattern)

    def host_label(self, data: bytes) -> Optional[str]:
        """The host name or rank tag a piece of log text carries, by the first format that finds one."""
        for fmt in self:
            if fmt.host_label is not None:
                label = fmt.host_label(data)
                if label is not None:
                    return label
        return None


class UncountedCatalog:
    """A catalog as a second scanner of the same text sees it: the first scanner counts the
    bytes and lines read and says when the input ended; everything else goes through."""

    def __init__(self, catalog: "Catalog") -> None:
        self._catalog = catalog

    def __getattr__(self, name: str):
        return getattr(self._catalog, name)

    def read_bytes(self, count: int) -> None:
        pass

    def read_lines(self, count: int) -> None:
        pass

    def input_ended(self) -> None:
        pass


class MixedScanner:
    """Several log formats in one file: each piece is fed to every format's scanner in turn
    (each skips the other's lines, as it skips a framework's chatter), the first one counting
    the input.  Line numbers agree, as every scanner sees every line."""

    def __init__(self, first: Scanner, others: list) -> None:
        self.scanners = [first, *others]

    @property
    def line_no(self) -> int:
        return getattr(self.scanners[0], "line_no", 0)

    def feed(self, data: bytes) -> None:
        for scanner in self.scanners:
            scanner.feed(data)

    def finish(self) -> None:
        for scanner in self.scanners:
            scanner.finish()
