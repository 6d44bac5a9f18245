"""The family registry (miotui.families) is complete: every problem type has a record, every
record gives every entry (a function that exists, or a reason it does not apply), and the
code that used to ask isinstance one type after another asks the registry instead."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from miotui import families as F
from miotui.problems import PROBLEM_TYPES, ProblemBase

MIOTUI = Path(__file__).resolve().parents[2] / "miotui"


def _concrete_problem_types() -> set[type]:
    """Every class derived from ProblemBase in miotui.problems (not only those PROBLEM_TYPES lists)."""
    import miotui.problems as P
    found, todo = set(), [ProblemBase]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith(P.__name__) and not inspect.isabstract(sub):
                found.add(sub)
    return found


def missing_entries(family: F.Family) -> list[str]:
    """What a record lacks: an entry that is neither a Ref to a callable nor a NotApplicable
    with a reason (``batch_unit`` is a value: a non-empty text)."""
    bad = []
    for name in F.ENTRIES:
        value = getattr(family, name, None)
        if name == "batch_unit":
            ok = isinstance(value, str) and bool(value)
        elif isinstance(value, F.NotApplicable):
            ok = isinstance(value.why, str) and len(value.why) > 10
        elif isinstance(value, F.Ref):
            try:
                ok = callable(value.resolve())
            except (ImportError, AttributeError):
                ok = False
        else:
            ok = False
        if not ok:
            bad.append(name)
    return bad


def test_every_problem_type_has_one_record():
    types = _concrete_problem_types()
    assert types == set(PROBLEM_TYPES), "PROBLEM_TYPES lists every problem class"
    assert F.families_cover(tuple(types)) == ()
    assert len({f.problem_type for f in F.FAMILIES}) == len(F.FAMILIES), "one record per type"
    assert len({f.name for f in F.FAMILIES}) == len(F.FAMILIES), "one name per family"


@pytest.mark.parametrize("family", F.FAMILIES, ids=lambda f: f.name)
def test_every_record_has_every_entry(family):
    assert missing_entries(family) == []


def test_family_names_are_the_problems_ops():
    """A family's name is its problems' op (the one name every package uses), where the type
    has one op; layer norm's op is its variant (layernorm, addlayernorm, t5layernorm) and the
    generic op's is the op's own name."""
    for family in F.FAMILIES:
        expected = family.problem_type.__dict__.get("op")
        if isinstance(expected, str):
            assert family.name == expected
    assert {f.name for f in F.FAMILIES if not isinstance(f.problem_type.__dict__.get("op"), str)} == \
        {"layernorm", "op"}


#: where each entry's code may live: a Ref names its module as text, which import-linter does
#: not see, so the contracts it would check are checked here (running layers reads no logs: an
#: execute entry must not live in export, which imports a format)
HOME = {"driver_writer": "miotui.driver.commands.", "columns": "miotui.export"}


def test_entries_live_in_the_package_that_calls_them():
    for family in F.FAMILIES:
        for name in F.ENTRIES:
            value = getattr(family, name)
            if isinstance(value, F.Ref):
                assert value.module.startswith(HOME.get(name, "miotui.execute.")), (family.name, name, value)


def test_a_record_lacking_an_entry_is_caught():
    """The check fails for a record whose entry is missing, names a function that does not
    exist, or is not applicable without a reason: it can fail for the bug it guards against."""
    conv = F.FAMILIES[0]
    assert missing_entries(dataclasses.replace(conv, tolerance=None)) == ["tolerance"]
    assert missing_entries(dataclasses.replace(conv, torch_op=F.Ref("miotui.execute.torch_ops", "no_such"))) == \
        ["torch_op"]
    assert missing_entries(dataclasses.replace(conv, oracle=F.Ref("miotui.no_such_module", "x"))) == ["oracle"]
    assert missing_entries(dataclasses.replace(conv, prepare=F.NotApplicable(""))) == ["prepare"]
    assert missing_entries(dataclasses.replace(conv, batch_unit="")) == ["batch_unit"]
    with pytest.raises(TypeError):   # a new entry field without a value cannot even be built
        F.Family(**{f.name: getattr(conv, f.name) for f in dataclasses.fields(F.Family) if f.name != "metric"})


def test_an_unknown_type_is_said_plainly():
    with pytest.raises(F.UnknownFamily, match="not a layer miotui knows: str"):
        F.family_of("conv")


def test_importing_the_registry_imports_no_numeric_library():
    """The app imports it at start-up; its entries import their modules when called."""
    import subprocess
    import sys
    code = ("import sys, miotui.families; bad = [m for m in ('numpy', 'torch', 'numba', 'miotui.execute') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _problem_isinstance_checks(path: Path) -> list[int]:
    """Lines of ``path`` that ask isinstance(x, <a problem class or a tuple of them>)."""
    names = {t.__name__ for t in PROBLEM_TYPES}
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance" and len(node.args) == 2:
            arg = node.args[1]
            used = {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
            if used & names:
                lines.append(node.lineno)
    return lines


#: modules whose per-family behaviour is the registry's: no isinstance chain on problem types
DISPATCHERS = ("execute/reference.py", "execute/oracle.py", "execute/torch_ops.py", "execute/reference_basic.py",
               "execute/oracle_basic.py", "execute/reference_tables.py", "execute/layer_shapes.py",
               "execute/guard.py", "export.py", "driver/commands/__init__.py")


@pytest.mark.parametrize("module", DISPATCHERS)
def test_dispatch_is_by_the_registry(module):
    assert _problem_isinstance_checks(MIOTUI / module) == []
