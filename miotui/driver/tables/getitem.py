"""``getitem``: ``GetitemDriver::AddCmdLineArgs`` (MIOpen 3.3+, backward only).

Why a table: this driver is driven almost entirely by digit letters (``-1`` ... ``-6``) and
tensor flags, and the library's own log line for it cannot be parsed by any driver.  Sources:
ROCm/MIOpen ``driver/getitem_driver.hpp`` at rocm-test-09212024 and develop 2d1fd997;
``dm_getitem.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/getitem_driver.hpp`` @07647551.
Logging: ``src/getitem_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

GETITEM = Subcommand(
    family="getitem",
    bases=(
        Base("getitem", "fp32", since="3.3"),
        Base("getitemfp16", "fp16", since="3.3"),
        Base("getitembfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "0", "direction; only backward is implemented", "int", _P, since="3.3"),
        Flag("doutput", "O", "128x128", "output-gradient tensor", "tensor descriptor", _P, since="3.3"),
        Flag("indexs", "D", "128", "shape of each index tensor", "tensor descriptor", _P, since="3.3"),
        Flag("dinput", "N", "128x128", "input-gradient tensor", "tensor descriptor", _P, since="3.3"),
        Flag("indexcount", "1", "1", "number of index tensors", "int", _P, since="3.3"),
        Flag("dimcount", "2", "1", "number of indexed dimensions", "int", _P, since="3.3"),
        Flag("dims", "3", "0", "indexed dimensions, comma list", "vector<int>", _P, since="3.3"),
        Flag("slicecount", "4", "0", "number of slices", "int", _P, since="3.3"),
        Flag("slices", "5", "", "slices, comma-separated groups of 'x'-separated ints", "vector<vector<int>>", _P,
             since="3.3"),
        Flag("offset", "6", "0", "offset into the output", "int", _P, since="3.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
    ),
    source=("ROCm/MIOpen driver/getitem_driver.hpp, dm_getitem.cpp at rocm-test-09212024 and develop 2d1fd997; "
            "ROCm/rocm-libraries projects/miopen/driver/getitem_driver.hpp @07647551"),
    summary="backward of tensor indexing (x[index] gradient scatter)",
    notes="Unchanged from 3.3 to the newest driver.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.3", "", ("LogCmdGetitem: getitemfp16|getitemfp32|getitemf16 (bf16) -doutput ... -index<k> ... -dx ... "
     "-dims... -slice... -offset<N> -F"), ("-doutput", "-index", "-dx", "-dims", "-slice", "-offset", "-F")),
)

_BAD = "no driver flag of that name; a single dash reads only the first letter"

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.3", "", "-doutput", _BAD + " ('d': not declared)"),
    ("3.3", "", "-index", _BAD + " ('i' = --iter)"),
    ("3.3", "", "-dx", _BAD + " ('d': not declared)"),
    ("3.3", "", "-dims", _BAD + " (and printed without a space before the values)"),
    ("3.3", "", "-slice", _BAD + " ('s': not declared)"),
    ("3.3", "", "-offset", _BAD + " ('o': not declared; value glued to the name)"),
)
