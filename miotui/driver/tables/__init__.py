"""MIOpenDriver's command-line grammar, 2017 to today, as data: every family's flags by era.

One generic parser and one writer sit on top of these tables.  The tables say *which* flags a
driver of a given MIOpen version declares; this docstring (and the constants below it) say *how*
that driver's ``InputFlags::Parse`` reads ``argv``, read from ``driver/InputFlags.cpp``,
``driver/driver.hpp`` and ``driver/main.cpp`` at every ROCm/MIOpen tag from 1.0.0 to develop
2d1fd997 (2024-10-24) and from ROCm/rocm-libraries ``projects/miopen/driver`` at 29af1313,
e43568d7 and 07647551 (MIOpen 3.5.x).  Versions are MIOpen versions; ``MIOPEN_FOR_ROCM`` in
``bases`` maps ROCm releases to them.

The parser rules (the same code in every era unless an era is named)
----------------------------------------------------------------------
* ``argv[1]`` is the base argument, checked against one list (``bases.VALID_BASES``) before any
  flag is read.  Missing: ``Invalid Number of Input Arguments`` (``FAILED: `` in front since
  2.18) and the usage text.  Not in the list: ``Invalid Base Input Argument`` (``FAILED: `` since
  2.18) and the usage text.  Both exit 0 up to 3.4 and 1 in the newest driver.  ``-h``,
  ``--help`` and ``-?`` as ``argv[1]`` are *not* in the list, so they hit the same error (the
  branch meant for them is unreachable).  A listed name without a maker prints ``Incorrect
  BaseArg`` (exit 0; newest: thrown, ``Error: ...Incorrect BaseArg``, exit 1).
* ``--version`` (since 2.3) prints ``MIOpen (version: M.m.p)`` and exits 0 before anything else.
* The command echo: up to 2.2 ``MIOpenDriver:`` plus the arguments, printed before the base is
  checked; from 2.3 ``MIOpenDriver`` plus the arguments, after the base and ``--version`` checks.
* Each later argument must start with ``-``; anything else prints ``Illegal input flag`` and the
  flag table, exit 0.
* ``--name value``: the long name is looked up exactly (case-sensitive, including dashes inside
  it such as ``--dim-lengths``).  ``--name=value`` is not split: the lookup of ``name=value``
  fails.  ``--help`` prints the flag table, exit 0.  A long name given as the *last* argument
  reads past the end of the argument vector (undefined behaviour; no check exists in any era).
* ``-X...``: only the character after the dash counts, so ``-input`` is ``-i`` and ``-dims`` is
  ``-d``, ``-F1`` is ``-F`` and the *next* argument is its value (a value is never taken from
  the same token).  ``-h`` (or any ``-h...``) and ``-?`` (or ``-?...``) print the flag table,
  exit 0.  A short flag as the last argument prints the flag table, exit 0.  A lone ``-``
  looks up the NUL character and fails like an unknown flag.
* Every flag takes exactly one value, the next argument, even when it starts with ``-``
  (``-x -1`` is fine; ``-x -y 3`` sets x to ``-y`` and then fails on ``3``).  No flag is boolean.
* Unknown flag, up to 3.4: ``Input Flag: X Not Found !`` (or ``Long Name: name Not Found !``) on
  stdout with no newline, exit 0 -- nothing runs, yet the status is success.  Newest: an
  exception, printed as ``Error: <source file>:<line>: Input Flag: X Not Found!`` (``Long Name:
  name Not Found!``) on stderr, exit 1.
* A flag given twice keeps the last value.  Letters are registered first-come: a second
  declaration of the same letter is dropped with ``Input flag: name (X) already exists !`` (no
  newline) at start-up, and its long name then does not exist (see ``bnorm.SHADOWED_FLAGS``).
  ``h`` is always taken by ``help``.
* Upper-casing (since 2.16): values of flags declared with the upper-case option (conv/fusion
  layouts, bnorm/softmax/layernorm ``layout``) are upper-cased only when given by long name;
  ``-I nhwc`` stays lower case while ``--in_layout nhwc`` becomes ``NHWC``.
* Values are read when the driver asks: ``int`` with C ``atoi`` (``1.5`` -> 1, ``abc`` -> 0,
  ``0x10`` -> 0, empty -> 0, ``0,2`` -> 0); ``float``/``double`` with ``atof`` (``1e-3``,
  ``inf``, ``nan`` accepted, junk -> 0.0); ``str``/``string`` as is.  Flags used as switches
  compare ``== 1`` or ``!= 0`` depending on the driver, so ``-V 2`` means "no verify".
* ``vector`` flags (rnn batch sizes, ctc lengths, dropout lengths, rnn_seq lengths) are read by
  the driver with a stream: integers separated by one ``,`` or space (``4,3,2``).
* Tensor flags (``AddTensorFlag``, type "tensor descriptor"; since 2.16; the margin-loss drivers
  use the type string "tensor" for the same parser): ``A[xB...]`` optionally followed by
  ``,LAYOUT`` or ``,S0xS1...`` (strides when the part after the comma starts with a digit).  Each
  component is read as an integer (``3.5`` reads 3; ``abc`` is an error); more than two comma
  parts is an error; an empty value means "not given".  Errors are exceptions: uncaught (abort)
  up to 3.4, ``Error: ...`` and exit 1 in the newest driver.  ``vector<int>`` is a comma list and
  ``vector<vector<int>>`` comma-separated ``x`` lists (getitem).
* ``-t 1`` / ``--time 1``: kernel times; in the newest driver also one system line after buffer
  allocation, ``Timestamp: ...; Host Name: ...; Operating System: ...; ROCm: <HIP runtime>;
  MIOpen Driver: <library version>; CPU Vendor: ...; CPU Model: ...; RAM Size: N GB; GPU Model:
  <k x name, ...>; AMDGPU Driver: ...`` (``sys_info.hpp``, Linux only).  Because the newest
  ``main.cpp`` reads ``time`` for every base, every newest driver declares ``-t``.
* Directions (``main.cpp``): 1.0-1.2 forward always, backward only for ``--forw 0``; 1.3-1.7
  forward unless ``--forw 2``, backward unless ``--forw 1``; from 1.8 forward when ``F & 1`` or
  ``F == 0``, backward when ``F != 1``.  ``--forw 2`` also runs forward for batch norm (exact
  base ``bnorm`` only up to 2.19, any ``bnorm*`` from 2.20).  The fusion bases never read
  ``--forw`` (forced to 1).  Exit status: 0 up to 2.2 (early return on a failing forward run
  from 2.0); from 2.3 the OR of the run and verification codes.

How the eras are dated
----------------------
``since``/``until`` are MIOpen versions read from ``rocm_setup_version`` at each tag.  Two limits:
(1) rocm-test-09212024 and develop of 2024-10-24 both say 3.3.0, and the ROCm 6.3.0 release
branch was not available, so things added to develop between them (kthvalue, the margin losses,
bnorm ``--layout`` and the fp16fp32 bases) are dated 3.3 although a 6.3.0 build may lack them;
(2) MIOpen 3.4 (ROCm 6.4) was not read, and rocm-libraries history cannot be walked here, so
changes seen only in the newest snapshot are dated 3.5 (or 3.5.1 where a changelog entry or a
dated PR puts them after ROCm 7.0), and the form they replace ends at 3.4 (or 3.5.0).  Each
module's notes give the evidence.

``SUBCOMMANDS`` holds every family; ``subcommand_for_base`` finds one by base argument.  Each
family module may also define ``LOGGED_FLAGS`` and ``LOGGING_DEFECTS`` (what MIOpen's own
``Command`` line prints in each era, and which printed tokens the driver reads differently);
``logged_flags`` and ``logging_defects`` give them per family.
"""

from __future__ import annotations

from miotui.driver.spec import Subcommand, in_era, parse_version
from miotui.driver.tables import (
    activ,
    adam,
    argmax,
    bases,
    bnorm,
    cat,
    conv,
    ctc,
    dropout,
    fusion,
    gemm,
    getitem,
    glu,
    groupnorm,
    kthvalue,
    layernorm,
    lrn,
    marginloss,
    pool,
    prelu,
    reduce,
    reducecalculation,
    reduceextreme,
    rnn,
    rope,
    softmax,
    sum,
    tensorop,
)

# --------------------------------------------------------------------------- parser facts
#: A single dash followed by a longer word reads only its first letter -- in every era read.
SINGLE_DASH_TAKES_FIRST_LETTER_SINCE = ""
#: ``--name=value`` is never split; the whole ``name=value`` is looked up and fails.
LONG_EQUALS_VALUE_SUPPORTED = False
#: ``-F1`` never means F=1: the value is always the next argument.
ATTACHED_SHORT_VALUE_SUPPORTED = False
#: The next argument is the value even when it starts with a dash.
VALUE_IS_NEXT_ARGUMENT = True
#: Repeating a flag: the last value wins.
REPEATED_FLAG_KEEPS = "last"
#: Declaring a letter twice: the first declaration wins, the later long name disappears.
FIRST_DECLARATION_OF_A_LETTER_WINS = True
#: Letter and tokens that print the flag table and exit 0 (after a valid base argument).
HELP_LETTER = "h"
HELP_TOKENS = ("-h", "--help", "-?")
#: Upper-casing of values given by long name, for flags declared with that option.
UPPERCASE_VIA_LONG_NAME_SINCE = "2.16"
UPPERCASED_FLAGS: dict[str, tuple[str, ...]] = {
    "conv": ("in_layout", "out_layout", "fil_layout"),
    "fusion": ("in_layout", "out_layout", "fil_layout"),
    "bnorm": ("layout",),
    "softmax": ("layout",),
    "layernorm": ("layout",),
}
#: Tensor-descriptor flags (``NxCxHxW[,layout|strides]``) exist from this version.
TENSOR_FLAGS_SINCE = "2.16"
#: How each type string is turned into a value by the driver.
VALUE_READERS: dict[str, str] = {
    "int": "atoi", "float": "atof", "double": "atof", "str": "raw", "string": "raw",
    "vector": "stream of ints split by one ',' or ' '", "tensor descriptor": "tensor", "tensor": "tensor",
    "vector<int>": "comma list of ints", "vector<vector<int>>": "comma list of 'x' lists",
}
#: Unknown flag: (first, last, message template, stream, exit status).
UNKNOWN_SHORT_FLAG: tuple[tuple[str, str, str, str, int], ...] = (
    ("", "3.4", "Input Flag: {flag} Not Found !", "stdout", 0),
    ("3.5", "", "Error: {where}: Input Flag: {flag} Not Found!", "stderr", 1),
)
UNKNOWN_LONG_FLAG: tuple[tuple[str, str, str, str, int], ...] = (
    ("", "3.4", "Long Name: {name} Not Found !", "stdout", 0),
    ("3.5", "", "Error: {where}: Long Name: {name} Not Found!", "stderr", 1),
)
#: A token not starting with '-': message, then the flag table, exit 0 (every era).
ILLEGAL_TOKEN_MESSAGE = "Illegal input flag"
#: Base-argument errors: (first, last, missing-base message, invalid-base message, exit status).
BASE_ARG_ERRORS: tuple[tuple[str, str, str, str, int], ...] = (
    ("", "2.17", "Invalid Number of Input Arguments", "Invalid Base Input Argument", 0),
    ("2.18", "3.4", "FAILED: Invalid Number of Input Arguments", "FAILED: Invalid Base Input Argument", 0),
    ("3.5", "", "FAILED: Invalid Number of Input Arguments", "FAILED: Invalid Base Input Argument", 1),
)
NO_MAKER_MESSAGE = "Incorrect BaseArg"
#: The echo line: (first, last, text before the arguments).
ECHO_PREFIX: tuple[tuple[str, str, str], ...] = (("", "2.2", "MIOpenDriver:"), ("2.3", "", "MIOpenDriver"))
VERSION_OUTPUT = "MIOpen (version: {major}.{minor}.{patch})"
VERSION_ARG_SINCE = bases.VERSION_ARG_SINCE
#: ``--time 1`` also prints the system-information line (newest driver).
SYSINFO_WITH_TIME_SINCE = "3.5"
SYSINFO_FIELDS = ("Timestamp", "Host Name", "Operating System", "ROCm", "MIOpen Driver", "CPU Vendor", "CPU Model",
                  "RAM Size", "GPU Model", "AMDGPU Driver")
#: The newest driver version the tables were read from (rocm-libraries @07647551).
NEWEST_READ = "3.5.1"

# --------------------------------------------------------------------------- flags every newest driver may add
#: Flags the newest ``Driver`` base class can add to a family (driver.cpp @5fae43a4): only the
#: families listed call the helper.  ``-Q`` is HIP-only.
COMMON_NEWEST_FLAGS: dict[str, tuple[str, ...]] = {
    "gpubuffer_check": ("conv", "bnorm"),
    "use_hip_graph": ("conv", "bnorm", "activ"),
}

# --------------------------------------------------------------------------- the tables
_MODULES = (conv, fusion, pool, bnorm, activ, lrn, softmax, rnn, gemm, ctc, dropout, tensorop, reduce, layernorm,
            groupnorm, cat, getitem, kthvalue, prelu, rope, reduceextreme, reducecalculation, adam, glu, marginloss,
            sum, argmax)

SUBCOMMANDS: tuple[Subcommand, ...] = (
    conv.CONV, fusion.FUSION, pool.POOL, bnorm.BNORM, activ.ACTIV, lrn.LRN, softmax.SOFTMAX, rnn.RNN, rnn.RNN_SEQ,
    gemm.GEMM, ctc.CTC, dropout.DROPOUT, tensorop.TENSOROP, reduce.REDUCE, layernorm.LAYERNORM,
    layernorm.ADDLAYERNORM, layernorm.T5LAYERNORM, groupnorm.GROUPNORM, cat.CAT, getitem.GETITEM, kthvalue.KTHVALUE,
    prelu.PRELU, rope.ROPE, reduceextreme.REDUCEEXTREME, reducecalculation.REDUCECALCULATION, adam.ADAM,
    adam.AMPADAM, adam.TRANSFORMERSADAMW, adam.TRANSFORMERSAMPADAMW, glu.GLU, marginloss.SOFTMARGINLOSS,
    marginloss.MULTIMARGINLOSS, sum.SUM, argmax.ARGMAX,
)

_BY_FAMILY = {s.family: s for s in SUBCOMMANDS}
_BY_BASE = {b.name: s for s in SUBCOMMANDS for b in s.bases}
_MODULE_OF = {s.family: m for m in _MODULES for s in vars(m).values() if isinstance(s, Subcommand)}


def subcommand_for_base(name: str) -> Subcommand | None:
    """The family that reads the flags of base argument ``name`` (any era), or None."""
    return _BY_BASE.get(name)


def subcommand(family: str) -> Subcommand | None:
    """The family called ``family`` (``conv``, ``rnn_seq``...), or None."""
    return _BY_FAMILY.get(family)


_VALID_CACHE: dict[tuple[int, ...] | None, frozenset[str]] = {}


def valid_bases(version: tuple[int, ...] | None = None) -> frozenset[str]:
    """The base arguments the driver of ``version`` (None: the newest read) accepts."""
    hit = _VALID_CACHE.get(version)
    if hit is not None:
        return hit
    found: frozenset[str] = frozenset()
    for first, last, names in bases.VALID_BASES:
        if in_era(version, first, last):
            found = names
            break
    if len(_VALID_CACHE) < 256:
        _VALID_CACHE[version] = found
    return found


def is_valid_base(name: str, version: tuple[int, ...] | None = None) -> bool:
    """Whether ``ParseBaseArg`` of ``version`` accepts ``name`` (``--version`` from 2.3)."""
    if name == "--version":
        return version is None or version >= parse_version(VERSION_ARG_SINCE)
    return name in valid_bases(version)


def _per_family(module, attribute: str, family: str) -> tuple:
    value = getattr(module, attribute, ())
    if isinstance(value, dict):
        return tuple(value.get(family, ()))
    return tuple(value)


def logged_flags(family: str) -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """What MIOpen's own ``Command`` line prints for ``family``: (first, last, producer, tokens) per era."""
    module = _MODULE_OF.get(family)
    return _per_family(module, "LOGGED_FLAGS", family) if module else ()


def logging_defects(family: str) -> tuple[tuple[str, str, str, str], ...]:
    """Printed tokens the driver of the same era reads differently: (first, last, token, why)."""
    module = _MODULE_OF.get(family)
    return _per_family(module, "LOGGING_DEFECTS", family) if module else ()


def shadowed_flags(family: str):
    """Flags a family's source declares but InputFlags drops (a letter taken earlier)."""
    module = _MODULE_OF.get(family)
    return tuple(getattr(module, "SHADOWED_FLAGS", ())) if module else ()


__all__ = [
    "SUBCOMMANDS",
    "bases",
    "is_valid_base",
    "logged_flags",
    "logging_defects",
    "shadowed_flags",
    "subcommand",
    "subcommand_for_base",
    "valid_bases",
]
