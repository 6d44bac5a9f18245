"""``reduce``: ``ReduceDriver::AddCmdLineArgs`` for miopenReduceTensor (MIOpen 2.8+).

Why a table: the library logs more type names than the driver accepts (``reducefp`` for fp32,
``reduceint8``, ``reducebfp16``...), and two defaults were odd strings read by ``atoi``.
Sources: ROCm/MIOpen ``driver/reduce_driver.hpp`` at tags 2.8.0 ... rocm-6.2.2,
rocm-test-09212024, develop 2d1fd997; ``main.cpp``/``dm_reduce.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/reduce_driver.hpp`` @07647551.  Logging: ``src/reducetensor_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

REDUCE = Subcommand(
    family="reduce",
    bases=(
        Base("reduce", "fp32", since="2.8"),
        Base("reducefp16", "fp16", since="2.8"),
        Base("reducefp64", "fp64", since="2.14"),
    ),
    flags=(
        Flag("forw", "F", "1", "direction (forward only)", "int", _P, since="2.8"),
        Flag("DimLengths", "D", "100,60,16,240", "input lengths, comma list", "string", _P, since="2.8"),
        Flag("DimsToReduce", "R", "0,2", "dimensions to reduce, comma list", "string", _P, since="2.8"),
        Flag("ReduceOp", "O", "0,2", "miopenReduceTensorOp_t number (atoi reads the '0' of '0,2')", "int", _P,
             since="2.8", until="3.4"),
        Flag("ReduceOp", "O", "0", "miopenReduceTensorOp_t number (0 add)", "int", _P, since="3.5"),
        Flag("CompType", "C", "1", "compute type, miopenDataType_t number (1 float)", "int", _P, since="2.8"),
        Flag("NanPropagation", "N", "0", "0 no NaN propagation, 1 propagate", "int", _P, since="2.8"),
        Flag("IndicesUsed", "I", "0,1", "1 = also output flattened indices for min/max/amax (atoi reads 0)",
             "int", _P, since="2.8", until="3.4"),
        Flag("IndicesUsed", "I", "0", "1 = also output flattened indices for min/max/amax", "int", _P,
             since="3.5"),
        Flag("alpha", "A", "1.0", "scale of the input", "double", _P, since="2.8"),
        Flag("beta", "B", "0.0", "scale of the prior output", "double", _P, since="2.8"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="2.8"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="2.8"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="2.8"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="2.8"),
        Flag("dump_output", "o", "0", "write buffers to files", "int", _R, since="2.12"),
        Flag("in_data", "d", "", "file with input data", "string", _R, since="2.12"),
        Flag("multithreaded", "m", "0", "1 = parallel CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/reduce_driver.hpp, main.cpp, dm_reduce.cpp at tags 2.8.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "reduce_driver.hpp @07647551"),
    summary="generic tensor reduction (add, mul, min, max, amax, avg, norm1, norm2)",
    notes=("The library logs reducefp (fp32), reduceint, reduceint8, reducebfp16, reducefp8, reducebfp8: "
           "none of them is a driver base; fp32 must be written as 'reduce'. -m/--multithreaded is newest-only."),
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.12", "", ("LogCmdRedux: reduce|reducefp16|reducefp64(2.14+)|reduceint8|reducebfp16 (3.1+ also reducefp, "
     "reduceint, reducefp8, reducebfp8) -A -B -C -D d0,d1,... -I -N -O -R dims"),
     ("-A", "-B", "-C", "-D", "-I", "-N", "-O", "-R")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()
