"""Citations of the format documentation hold: every ``docs/formats.md §N`` the code cites is
a section of docs/formats.md, and no module cites a document the repository does not have.

Why: docstrings say where a grammar is described ("the key's layout, docs/formats.md §7.1");
a citation of a section that was renumbered away, or of notes that live only on the machine
they were written on, sends a contributor nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "formats.md"
#: where code is read for citations (test data are program output, not code)
CODE_DIRS = ("miotui", "tests", "benchmarks")
SKIP_DIRS = {"data", "__pycache__", "snapshots"}

#: a section number after ``docs/formats.md`` (``§7.1``, ``§9.2-9.5``, ``§2-§5``, ``§4, §7.3``)
_REF = r"§\d+(?:\.\d+)*(?:\s*-\s*§?\d+(?:\.\d+)*)?"
_CITATION_RE = re.compile(rf"docs/formats\.md`*\s*((?:{_REF})(?:\s*(?:,|and|;)\s*{_REF})*)")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)*")
#: a bare ``§N`` (in a module that cites docs/formats.md, it is that document's), not an issue's
_BARE_RE = re.compile(f"({_REF})")
#: an issue's section (``issue 19 §6``), taken out of the text before bare signs are read
_ISSUE_REF_RE = re.compile(rf"issue \d+,? {_REF}")
_HEADING_RE = re.compile(r"^#{1,4} (\d+(?:\.\d+)*)\.? ", re.M)
#: names of .md files a module mentions
_MD_NAME_RE = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b")


def _code_files() -> list[Path]:
    files = []
    for top in CODE_DIRS:
        for path in sorted((ROOT / top).rglob("*.py")):
            if SKIP_DIRS.isdisjoint(path.relative_to(ROOT).parts) and path != Path(__file__).resolve():
                files.append(path)
    return files


def _sections() -> set[str]:
    return set(_HEADING_RE.findall(DOC.read_text(encoding="utf-8")))


def _numbers(refs: str) -> list[str]:
    """Every section number a citation names (both ends of a range)."""
    return _NUMBER_RE.findall(refs)


def _repo_md_files() -> list[str]:
    """The repository's .md files, as paths from its root."""
    out = []
    for path in ROOT.rglob("*.md"):
        parts = path.relative_to(ROOT).parts
        if any(p.startswith(".") or "venv" in p or p == "node_modules" for p in parts):
            continue
        out.append("/".join(parts))
    return out


def test_the_format_document_exists_with_numbered_sections():
    assert DOC.is_file(), "docs/formats.md is cited by the code and must be in the repository"
    sections = _sections()
    assert {str(n) for n in range(1, 16)} <= sections, sorted(sections)


def test_every_cited_section_is_a_heading_of_docs_formats_md():
    sections = _sections() if DOC.is_file() else set()
    missing = []
    cited = 0
    for path in _code_files():
        text = path.read_text(encoding="utf-8")
        for m in _CITATION_RE.finditer(text):
            for number in _numbers(m.group(1)):
                cited += 1
                if number not in sections:
                    missing.append(f"{path.relative_to(ROOT)}: docs/formats.md §{number}")
    assert cited >= 20, f"only {cited} citations of docs/formats.md sections found: is the pattern right?"
    assert not missing, "cited sections that docs/formats.md does not have:\n" + "\n".join(missing)


def test_the_documents_own_cross_references_are_its_sections():
    text = DOC.read_text(encoding="utf-8")
    sections = _sections()
    dangling = sorted({n for m in _BARE_RE.finditer(text) for n in _numbers(m.group(1))} - sections)
    assert not dangling, f"docs/formats.md refers to sections it does not have: {dangling}"


def test_bare_section_signs_in_a_module_that_cites_the_document_are_its_sections():
    """A module whose docstring cites docs/formats.md says ``§7.3`` further down for the same
    document; those must exist too (issue numbers' sections, ``issue 19 §6``, are not)."""
    sections = _sections() if DOC.is_file() else set()
    missing = []
    for path in _code_files():
        text = path.read_text(encoding="utf-8")
        if "docs/formats.md" not in text:
            continue
        text = _ISSUE_REF_RE.sub("", text)
        for m in _BARE_RE.finditer(text):
            for number in _numbers(m.group(1)):
                if number not in sections:
                    line = text.count("\n", 0, m.start()) + 1
                    missing.append(f"{path.relative_to(ROOT)}:{line}: §{number}")
    assert not missing, "section signs that docs/formats.md does not have:\n" + "\n".join(missing)


def test_no_module_cites_a_document_the_repository_does_not_have():
    """The research notes the code was written from (``miopen_formats.md``, ...) were never
    in the repository; a citation must name a file that is, by its path or its tail."""
    repo = _repo_md_files()
    absent = []
    for path in _code_files():
        for name in set(_MD_NAME_RE.findall(path.read_text(encoding="utf-8"))):
            name = name.lstrip("./")
            if not any(f == name or f.endswith("/" + name) for f in repo):
                absent.append(f"{path.relative_to(ROOT)}: {name}")
    assert not absent, "documents cited but not in the repository:\n" + "\n".join(sorted(absent))


def test_the_pattern_finds_each_citation_form():
    """The citation pattern reads every form the code uses (else the checks above pass on
    nothing)."""
    text = ("(``docs/formats.md`` §9.2-9.5) docs/formats.md §2-§5, §8 "
            "docs/formats.md §4, §7.3-7.4 and docs/formats.md §11")
    found = [n for m in _CITATION_RE.finditer(text) for n in _numbers(m.group(1))]
    assert found == ["9.2", "9.5", "2", "5", "8", "4", "7.3", "7.4", "11"]
    assert [m.group(1) for m in _BARE_RE.finditer(_ISSUE_REF_RE.sub("", "issue 19 §6 and §7.3"))] == ["§7.3"]
