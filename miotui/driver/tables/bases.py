"""Which base arguments MIOpenDriver accepted in each era, and MIOpen <-> ROCm versions.

Why this is separate from the families: the driver checks ``argv[1]`` against one flat list
(``ParseBaseArg`` in ``driver/driver.hpp``) *before* it looks for a driver class that makes
that base argument (``main.cpp`` up to MIOpen 3.1, ``dm_*.cpp`` makers from 3.2).  The two
lists drifted apart more than once, so "is this base valid" and "which family reads its
flags" are two questions; this module answers the first, the family modules the second.

Read from ROCm/MIOpen tags 1.0.0 ... rocm-6.2.2, rocm-test-09212024 and the last develop
snapshot (2d1fd997, 2024-10-24), and from ROCm/rocm-libraries ``projects/miopen`` at
07647551 (MIOpen 3.5.x) for the newest list.  MIOpen 3.4 (ROCm 6.4) was not read: its era
below is assumed to equal the Oct-2024 list.
"""

from __future__ import annotations

# Each era: (first MIOpen version, last MIOpen version or "" for "still", names accepted).
# ``--version`` is accepted as a base argument from 2.3 on (see VERSION_ARG_SINCE); it is not
# a subcommand, so it is not listed here.
_E_1_0 = frozenset({"conv", "pool", "lrn", "activ", "softmax", "bnorm", "gemm"})
_E_1_1 = _E_1_0 - {"gemm"}
_E_1_2 = _E_1_1 | {"rnn", "gemm"}
_E_1_3 = _E_1_2 | {"convfp16", "poolfp16", "lrnfp16", "activfp16", "softmaxfp16", "bnormfp16"}
_E_1_5 = _E_1_3 | {"CBAInfer", "CBAInferfp16"}
_E_1_8 = _E_1_5 | {"convint8", "rnnfp16"}
_E_2_0 = _E_1_8 | {"convbfp16", "ctc"}
_E_2_1 = _E_2_0 | {"dropout", "dropoutfp16"}
_E_2_3 = _E_2_1 | {"tensorop", "tensoropfp16"}
_E_2_8 = _E_2_3 | {"reduce", "reducefp16"}
_E_2_14 = _E_2_8 | {"reducefp64"}
_E_3_0 = _E_2_14 | {"convfp8", "convbfp8", "rnn_seq", "rnn_seqfp16", "layernorm", "layernormfp16",
                    "layernormbfp16"}
_E_3_1 = _E_3_0 | {"gemmfp16", "sum", "sumfp16", "sumbfp16", "argmax", "argmaxfp16", "argmaxbfp16",
                   "groupnorm", "groupnormfp16", "groupnormbfp16", "cat", "catfp16", "catbfp16"}
_E_3_2 = (_E_3_1 - {"argmax", "argmaxfp16", "argmaxbfp16"}) | {
    "addlayernorm", "addlayernormfp16", "addlayernormbfp16", "t5layernorm", "t5layernormfp16",
    "t5layernormbfp16", "adam", "adamfp16", "ampadam", "reduceextreme", "reduceextremefp16",
    "reduceextremebfp16"}
_E_3_3 = (_E_3_2 - {"CBAInfer", "CBAInferfp16", "convfp8", "convbfp8", "tensoropfp16"}) | {
    "adamw", "adamwfp16", "ampadamw", "transformersadamw", "transformersadamwfp16",
    "transformersampadamw", "getitem", "getitemfp16", "getitembfp16", "reducecalculation",
    "reducecalculationfp16", "reducecalculationbfp16", "rope", "ropefp16", "ropebfp16", "prelu",
    "prelufp16", "prelubfp16",
    # added on develop between rocm-test-09212024 and 2024-10-24, still MIOpen 3.3.0:
    "bnormfp16fp32", "bnormbfp16fp32", "kthvalue", "kthvaluefp16", "kthvaluebfp16", "glu", "glufp16",
    "glubfp16", "softmarginloss", "softmarginlossfp16", "softmarginlossbfp16", "multimarginloss",
    "multimarginlossfp16", "multimarginlossbfp16"}
_E_3_5 = (_E_3_3 - {"sum", "sumfp16", "sumbfp16"}) | {
    "convfp32", "CBAInfer", "CBAInferfp16", "CBAInferbfp16", "CAInfer", "CAInferfp16", "CAInferbfp16",
    "poolbfp16", "softmaxbfp16", "bnormbfp16"}

VALID_BASES: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("1.0", "1.0", _E_1_0),
    ("1.1", "1.1", _E_1_1),
    ("1.2", "1.2", _E_1_2),
    ("1.3", "1.4", _E_1_3),
    ("1.5", "1.7", _E_1_5),
    ("1.8", "1.8", _E_1_8),
    ("2.0", "2.0", _E_2_0),
    ("2.1", "2.2", _E_2_1),
    ("2.3", "2.7", _E_2_3),
    ("2.8", "2.13", _E_2_8),
    ("2.14", "2.20", _E_2_14),
    ("3.0", "3.0", _E_3_0),
    ("3.1", "3.1", _E_3_1),
    ("3.2", "3.2", _E_3_2),
    ("3.3", "3.4", _E_3_3),
    ("3.5", "", _E_3_5),
)

#: ``MIOpenDriver --version`` is in the valid list (and answered before anything else) since 2.3.
VERSION_ARG_SINCE = "2.3"

#: The newest list, in the driver's own order (rocm-libraries driver.hpp @07647551); a writer
#: that wants to mirror the driver's usage text can use it.
NEWEST_VALID_ORDER: tuple[str, ...] = (
    "conv", "convfp16", "convfp32", "convint8", "convbfp16", "CBAInfer", "CBAInferfp16", "CBAInferbfp16",
    "CAInfer", "CAInferfp16", "CAInferbfp16", "pool", "poolfp16", "poolbfp16", "lrn", "lrnfp16", "activ",
    "activfp16", "softmax", "softmaxfp16", "softmaxbfp16", "bnorm", "bnormfp16", "bnormbfp16",
    "bnormfp16fp32", "bnormbfp16fp32", "rnn", "rnnfp16", "rnn_seq", "rnn_seqfp16", "gemm", "gemmfp16",
    "ctc", "dropout", "dropoutfp16", "tensorop", "reduce", "reducefp16", "reducefp64", "layernorm",
    "layernormfp16", "layernormbfp16", "groupnorm", "groupnormfp16", "groupnormbfp16", "cat", "catfp16",
    "catbfp16", "addlayernorm", "addlayernormfp16", "addlayernormbfp16", "t5layernorm", "t5layernormfp16",
    "t5layernormbfp16", "adam", "adamfp16", "ampadam", "reduceextreme", "reduceextremefp16",
    "reduceextremebfp16", "adamw", "adamwfp16", "ampadamw", "transformersadamw", "transformersadamwfp16",
    "transformersampadamw", "getitem", "getitemfp16", "getitembfp16", "reducecalculation",
    "reducecalculationfp16", "reducecalculationbfp16", "rope", "ropefp16", "ropebfp16", "prelu",
    "prelufp16", "prelubfp16", "kthvalue", "kthvaluefp16", "kthvaluebfp16", "glu", "glufp16", "glubfp16",
    "softmarginloss", "softmarginlossfp16", "softmarginlossbfp16", "multimarginloss",
    "multimarginlossfp16", "multimarginlossbfp16",
)

#: Base arguments where the valid list and the makers disagree (the MIOpen#3824 kind of bug).
#: (first, last, name, what happens).  "Incorrect BaseArg" exits 0 up to 3.4 and is a thrown
#: error (``Error: ... Incorrect BaseArg``, exit 1) in the newest driver.
REGISTRATION_MISMATCHES: tuple[tuple[str, str, str, str], ...] = (
    ("1.5", "1.5", "CBAInferfp16", "valid, but main.cpp only makes 'CBAInfer16' (a typo): prints 'Incorrect BaseArg'"),
    ("1.5", "1.5", "CBAInfer16", "made by main.cpp but rejected by the valid list"),
    ("3.3", "3.4", "CBAInfer",
     "dropped from the valid list by 57f4b9547 (getitem PR) while dm_fusion.cpp still makes it"),
    ("3.3", "3.4", "CBAInferfp16", "same as CBAInfer"),
    ("3.3", "3.4", "convfp8", "dropped from the valid list; dm_convfp8.cpp still makes it"),
    ("3.3", "3.4", "convbfp8", "dropped from the valid list; dm_convbfp8.cpp still makes it"),
    ("3.3", "", "tensoropfp16", "dropped from the valid list; dm_tensorop.cpp still makes it (MIOpen#3824)"),
    ("3.3", "3.4", "sum", "still in the valid list after dm_sum.cpp was deleted: 'Incorrect BaseArg'"),
    ("3.3", "3.4", "sumfp16", "same as sum"),
    ("3.3", "3.4", "sumbfp16", "same as sum"),
    ("3.5", "", "convfp8", "not in the newest valid list (maker not re-read)"),
    ("3.5", "", "convbfp8", "not in the newest valid list (maker not re-read)"),
)

#: MIOpen version per ROCm release.  Up to 6.2 from ``rocm_setup_version`` in CMakeLists.txt at
#: the roc-/rocm- tags of ROCm/MIOpen; 6.3 and later from the CHANGELOG in rocm-libraries
#: (``MIOpen 3.x for ROCm y``).  No ROCm tags exist for MIOpen 1.0-1.7.0.
MIOPEN_FOR_ROCM: dict[str, str] = {
    "2.1": "1.7.1", "2.3": "1.8.0", "2.4": "1.8.1", "2.5": "1.8.1", "2.6": "2.0.0", "2.7": "2.0.1",
    "2.8": "2.1.0", "2.9": "2.1.0", "2.10": "2.1.0", "3.0": "2.2.0", "3.1": "2.2.1", "3.3": "2.3.0",
    "3.5": "2.4.0", "3.7": "2.6.0", "3.8": "2.6.0", "3.9": "2.8.0", "3.10": "2.9.0", "4.0": "2.9.0",
    "4.1": "2.10.0", "4.2": "2.11.0", "4.3": "2.12.0", "4.5": "2.14.0", "5.0": "2.15.0", "5.1": "2.16.0",
    "5.2": "2.17.0", "5.3": "2.18.0", "5.4": "2.19.0", "5.5": "2.19.0", "5.6": "2.20.0", "5.7": "2.20.0",
    "6.0": "3.0.0", "6.1": "3.1.0", "6.2": "3.2.0", "6.3": "3.3.0", "6.4": "3.4.0", "7.0": "3.5.0",
    "7.1": "3.5.1", "7.2": "3.5.1", "7.11": "3.5.1",
}

#: Where the sources disagree about the map above (the tag's CMakeLists wins in MIOPEN_FOR_ROCM).
MIOPEN_FOR_ROCM_NOTES: dict[str, str] = {
    "3.8": "CHANGELOG says MIOpen 2.7.0 for ROCm 3.8; the rocm-3.8.0 tag's CMakeLists says 2.6.0",
    "5.7": "CHANGELOG says MIOpen 2.21.0 for ROCm 5.7; the rocm-5.7.0 tag's CMakeLists says 2.20.0",
    "6.0": "CMakeLists writes the version as 3.00.0",
    "6.3": "rocm-test-09212024 (2024-09-20) already says 3.3.0, and so does develop on 2024-10-24: a "
           "'3.3' driver may be either",
}
