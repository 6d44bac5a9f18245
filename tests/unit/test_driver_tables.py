"""Consistency of the MIOpenDriver grammar tables (``miotui.driver.tables``).

These checks can fail on a real mistake in the data: two flags of one family sharing a letter
or a long name in the same era (the driver would keep only the first), a base argument that no
family reads (or two families claim), a default the driver's own reader would reject, an era
that ends before it starts, and a ``Command`` line token that the driver of the same era does
not declare without the table saying so.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from miotui.driver import tables
from miotui.driver.spec import Flag, in_era, parse_version
from miotui.driver.tables import bases

TABLE_DIR = Path(tables.__file__).parent


def _v(text: str):
    return parse_version(text) if text else None


def _after(until: str) -> tuple:
    """The first version past an inclusive ``until`` ("3.2" -> 3.3, "3.5.0" -> 3.5.1)."""
    parts = list(parse_version(until))
    parts[-1] += 1
    return tuple(parts)


def _checkpoints(sub) -> list:
    """Every version where something in this family starts, ends or has just ended, plus today's driver."""
    points = {None}
    for item in tuple(sub.flags) + tuple(sub.bases):
        if item.since:
            points.add(parse_version(item.since))
        if item.until:
            points.add(parse_version(item.until))
            points.add(_after(item.until))
    return sorted(points, key=lambda p: (p is None, p or ()))


def _family_ids():
    return [s.family for s in tables.SUBCOMMANDS]


@pytest.mark.parametrize("family", _family_ids())
def test_letters_and_long_names_unique_in_every_era(family):
    sub = tables.subcommand(family)
    for point in _checkpoints(sub):
        flags = sub.flags_in(point)
        shorts = [f.short for f in flags]
        longs = [f.long for f in flags]
        dup_s = {s for s in shorts if shorts.count(s) > 1}
        dup_l = {n for n in longs if longs.count(n) > 1}
        assert not dup_s, f"{family} at {point}: letter(s) {dup_s} declared twice"
        assert not dup_l, f"{family} at {point}: long name(s) {dup_l} declared twice"
        assert tables.HELP_LETTER not in shorts, f"{family} at {point}: -h is reserved for help"


@pytest.mark.parametrize("family", _family_ids())
def test_since_not_after_until(family):
    sub = tables.subcommand(family)
    for item in tuple(sub.flags) + tuple(sub.bases):
        if item.since and item.until:
            assert in_era(parse_version(item.since), item.since, item.until), (
                f"{family}: {item} ends before it starts")


def _all_version_strings():
    for sub in tables.SUBCOMMANDS:
        for item in tuple(sub.flags) + tuple(sub.bases):
            yield item.since
            yield item.until
    for first, last, _ in bases.VALID_BASES:
        yield first
        yield last
    yield from bases.MIOPEN_FOR_ROCM.values()


def test_every_version_string_parses():
    for text in _all_version_strings():
        if text:
            parse_version(text)


_INT = re.compile(r"\s*[+-]?\d")
_DIMS = r"\d+(?:x\d+)*"
_TENSOR = re.compile(rf"{_DIMS}(?:,(?:[A-Za-z]+|{_DIMS}))?")
_VECTOR = re.compile(r"\d+(?:[, ]\d+)*")
_INT_LIST = re.compile(r"-?\d+(?:,-?\d+)*")
_NESTED = re.compile(rf"{_DIMS}(?:,{_DIMS})*")


def _default_ok(flag: Flag) -> bool:
    d, t = flag.default, flag.type
    if t == "int":  # atoi: empty or junk reads 0, so only a leading number counts as a real default
        return d == "" or bool(_INT.match(d))
    if t in ("float", "double"):
        try:
            float(d)
        except ValueError:
            return False
        return True
    if t in ("str", "string"):
        return True
    if t in ("tensor descriptor", "tensor"):
        return d == "" or bool(_TENSOR.fullmatch(d)) or (t == "tensor" and d == "-1")
    if t == "vector":
        return d == "" or bool(_VECTOR.fullmatch(d))
    if t == "vector<int>":
        return bool(_INT_LIST.fullmatch(d))
    if t == "vector<vector<int>>":
        return d == "" or bool(_NESTED.fullmatch(d))
    return False


@pytest.mark.parametrize("family", _family_ids())
def test_defaults_parse_per_type(family):
    sub = tables.subcommand(family)
    for flag in sub.flags:
        assert flag.type in tables.VALUE_READERS, f"{family} --{flag.long}: unknown type {flag.type!r}"
        assert _default_ok(flag), f"{family} --{flag.long}: default {flag.default!r} is not a {flag.type}"


@pytest.mark.parametrize("family", _family_ids())
def test_source_names_files_and_commits(family):
    sub = tables.subcommand(family)
    assert re.search(r"\w+\.(?:hpp|cpp)", sub.source), f"{family}: source names no file"
    assert re.search(r"\b[0-9a-f]{7,40}\b|rocm-\d", sub.source), f"{family}: source names no commit or tag"
    assert sub.summary, f"{family}: no summary"


def _era_points(first: str, last: str, sub=None) -> list:
    """An era's ends, plus the family's own change points inside it."""
    points = [parse_version(first), parse_version(last) if last else None]
    if sub is not None:
        points += [p for p in _checkpoints(sub) if p is not None and in_era(p, first, last)]
    return points


def test_every_valid_base_belongs_to_exactly_one_family():
    for first, last, names in bases.VALID_BASES:
        for point in _era_points(first, last):
            for name in names:
                owners = [s.family for s in tables.SUBCOMMANDS
                          if any(b.name == name and in_era(point, b.since, b.until) for b in s.bases)]
                assert len(owners) == 1, f"{name} at {point}: claimed by {owners or 'no family'}"


def test_every_base_era_is_inside_the_valid_list():
    for sub in tables.SUBCOMMANDS:
        for base in sub.bases:
            for point in _checkpoints(sub):
                if point is not None and point < parse_version(bases.VALID_BASES[0][0]):
                    continue
                if in_era(point, base.since, base.until):
                    assert tables.is_valid_base(base.name, point), (
                        f"{sub.family}: {base.name} dated valid at {point} but not in that era's list")


def test_valid_base_eras_are_ordered_and_disjoint():
    previous_last = None
    for first, last, names in bases.VALID_BASES:
        assert names, f"empty era {first}"
        start = parse_version(first)
        if previous_last is not None:
            assert start > previous_last, f"era {first} overlaps the one before"
        previous_last = parse_version(last) if last else (999,)
    assert bases.VALID_BASES[-1][1] == "", "the last era must be open-ended"


def test_newest_order_is_the_last_era():
    order = bases.NEWEST_VALID_ORDER
    assert len(order) == len(set(order))
    assert set(order) == bases.VALID_BASES[-1][2]


def test_subcommand_for_base():
    for sub in tables.SUBCOMMANDS:
        for base in sub.bases:
            assert tables.subcommand_for_base(base.name) is sub
    assert tables.subcommand_for_base("nosuchbase") is None
    assert tables.subcommand_for_base("--version") is None


def test_is_valid_base_by_era():
    assert tables.is_valid_base("gemm", (1, 0, 0))
    assert not tables.is_valid_base("gemm", (1, 1, 0))
    assert not tables.is_valid_base("--version", (2, 2, 1))
    assert tables.is_valid_base("--version", (2, 3, 0))
    assert not tables.is_valid_base("CBAInfer", (3, 3, 0))
    assert tables.is_valid_base("CBAInfer", None)
    assert not tables.is_valid_base("tensoropfp16", None)


def _resolve(token: str, flags) -> bool:
    """Whether the driver finds ``token`` among ``flags`` (long names exactly, short by first letter)."""
    if token.startswith("--"):
        return any(f.long == token[2:] for f in flags)
    return any(f.short == token[1] for f in flags)


def _defect_listed(family: str, token: str, point) -> bool:
    return any(t == token and in_era(point, first, last) for first, last, t, _ in tables.logging_defects(family))


@pytest.mark.parametrize("family", _family_ids())
def test_logged_tokens_are_declared_or_listed_defects(family):
    sub = tables.subcommand(family)
    for first, last, producer, tokens in tables.logged_flags(family):
        assert producer and tokens, f"{family}: empty logged form {first}"
        assert in_era(parse_version(first), first, last)
        for point in _era_points(first, last, sub):
            flags = sub.flags_in(point)
            for token in tokens:
                assert re.fullmatch(r"--?[A-Za-z0-9_][\w-]*", token), f"{family}: odd token {token!r}"
                assert _resolve(token, flags) or _defect_listed(family, token, point), (
                    f"{family} at {point}: logged {token} is neither declared nor a listed defect")


@pytest.mark.parametrize("family", _family_ids())
def test_listed_defects_name_logged_tokens(family):
    logged = {t for _, _, _, tokens in tables.logged_flags(family) for t in tokens}
    for first, last, token, why in tables.logging_defects(family):
        assert token in logged, f"{family}: defect for {token}, which is never logged"
        assert why
        assert in_era(parse_version(first), first, last)


def test_shadowed_flags_collide_with_a_declared_letter():
    shadowed = tables.shadowed_flags("bnorm")
    assert shadowed
    sub = tables.subcommand("bnorm")
    for flag in shadowed:
        point = parse_version(flag.since)
        taken = {f.short for f in sub.flags_in(point)}
        assert flag.short in taken, f"{flag.long}: its letter is free, so it would not be shadowed"
        assert all(f.long != flag.long for f in sub.flags_in(point))


def test_common_newest_flags_are_declared_where_listed():
    for long_name, families in tables.COMMON_NEWEST_FLAGS.items():
        for family in families:
            assert any(f.long == long_name for f in tables.subcommand(family).flags_in(None)), (family, long_name)


def test_uppercased_flags_exist():
    for family, names in tables.UPPERCASED_FLAGS.items():
        declared = {f.long for f in tables.subcommand(family).flags}
        assert set(names) <= declared, family


def test_newest_drivers_all_declare_time():
    """The newest main.cpp reads --time for every base, so every current family must declare it."""
    for name in bases.VALID_BASES[-1][2]:
        sub = tables.subcommand_for_base(name)
        if any(b.name == name and in_era(None, b.since, b.until) for b in sub.bases):
            assert any(f.long == "time" for f in sub.flags_in(None)), name


def test_tables_import_only_spec():
    for path in TABLE_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                allowed = {"__future__", "typing", "miotui.driver.spec"}
                if path.name == "__init__.py":
                    allowed.add("miotui.driver.tables")
                assert node.module in allowed, f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                pytest.fail(f"{path.name} imports {[a.name for a in node.names]}")
        assert len(path.read_text().splitlines()) < 600, f"{path.name} is too long"
