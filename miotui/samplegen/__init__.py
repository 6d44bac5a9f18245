"""Realistic synthetic MIOpen logs of a ResNet-50 training run.

Why this exists: real MIOpen logs in public issues are short excerpts, while miotui has
to cope with multi-gigabyte logs of whole training runs (and needs a log for
``miotui --demo``).  This module writes such logs, in the shapes MIOpen really prints
(see the MIOpen log formats, ``docs/formats.md`` §2-§5, and the real excerpts in
``tests/data/real_logs/``), at any size and deterministically from a seed.

Five formats, each modelled on one MIOpen release and a framework typical of it:

``trace2018``
    MIOpen 1.7 (ROCm 2.1), TensorFlow 1.x/Keras.  ``MIOPEN_ENABLE_LOGGING=1`` +
    ``MIOPEN_ENABLE_LOGGING_CMD=1``: ``MIOpen(HIP): <pretty function>{`` headers, bare
    ``name = value`` params and ``}``, tensors ``n, c, h, w``, the old convolution
    descriptor ``miopenConvolution, p, q, u, v, l, j, `` and old unprefixed command lines
    ``miopenConvolutionForward: ./bin/MIOpenDriver conv ...``.
``trace2x``
    MIOpen 2.9 (ROCm 4.0), TensorFlow 2.4/Keras.  Every line prefixed, tab-indented
    params, ``handle = stream: ..., device_id: 0``, new convolution descriptor, old tensor
    format, ``Command [LogCmdConvolution] ... -F 1 -t 1`` after execution blocks,
    ``MIOPEN_ENABLE_LOGGING_MPMT`` thread ids (TensorFlow runs the backward-data and
    backward-weights ops of a layer concurrently on two executor threads, so their blocks
    sometimes interleave line by line) and optionally the elapsed-time field.
``trace55``
    MIOpen 2.20 (ROCm 5.7), PyTorch 2.x.  API trace only, tensors printed as
    ``{lens}, {strides}, packed, `` and the data type only in ``miopenSetTensorDescriptor``
    blocks (``dataType = 1``).
``command``
    ROCm 5.7, ``MIOPEN_ENABLE_LOGGING_CMD=1`` only: ``Command [LogCmd...]`` lines
    (conv, bnorm with ``--forw``, pool with ``--input NxCxHxW,strides``, activ) between
    PyTorch noise (tqdm progress bars with ``\\r``, loss prints).
``info``
    ROCm 5.7, ``MIOPEN_ENABLE_LOGGING_CMD=1`` + ``MIOPEN_LOG_LEVEL=6`` (or 5): the command
    lines plus Info/Info2 lines about Find, the chosen algorithm, executions, invokers and
    find-db lookups.

Modelling choices, stated because a reader of the logs can see them:

* The first iteration runs each distinct convolution problem through a workspace query
  and ``miopenFind...`` before executing it (frameworks cache the Find result per
  problem, so a shape repeated in later blocks is only executed); later iterations only
  execute.  The first layer (``conv1``) has no backward-data call: its input needs no
  gradient.  An inference pass (batch-norm inference, pooling without backward) follows
  the training iterations.
* Descriptors are created and set once per distinct shape, in the first iteration (a
  framework that caches them, like TensorFlow or MIGraphX; PyTorch re-creates them per
  call, which would only multiply the same blocks).
* Device pointers come from a bump allocator walked in op order, so they repeat from
  iteration to iteration like a caching allocator's blocks; a few pre-rendered
  iteration variants move part of the activations to another segment, so pointers
  mostly repeat with some variation.  Generating gigabytes therefore costs little more
  than writing them.

Only the standard library is used: this package backs ``sample_logs/generate.py``, the
benchmarks and ``miotui --demo``.  Its modules: ``network`` (ResNet-50 and the
framework's calls, hence the ground truth), ``spec`` (what to generate), ``signatures``
(the API headers per release), ``render_base``/``render_conv``/``render_ops``/``render``
(calls to log records, every format), ``noise`` (the framework's own output),
``generator`` (records to text, iterations, size mode, files) and ``cli``.
"""

from miotui.samplegen.cli import build_parser, main
from miotui.samplegen.generator import (
    DEMO_SPEC,
    Generator,
    demo_log_path,
    generate_text,
    iter_chunks,
    parse_size,
    write_log,
)
from miotui.samplegen.network import (
    CALL_KINDS,
    BNLayer,
    Call,
    ConvLayer,
    GroundTruth,
    Layer,
    PoolLayer,
    ReluLayer,
    Tensor,
    TruthOp,
    inference_calls,
    resnet50_layers,
    training_calls,
    truth_op,
)
from miotui.samplegen.spec import FORMAT_DESCRIPTIONS, FORMATS, SampleSpec, ground_truth

__all__ = ["BNLayer", "CALL_KINDS", "Call", "ConvLayer", "DEMO_SPEC", "FORMATS", "FORMAT_DESCRIPTIONS", "Generator",
           "GroundTruth", "Layer", "PoolLayer", "ReluLayer", "SampleSpec", "Tensor", "TruthOp", "build_parser",
           "demo_log_path", "generate_text", "ground_truth", "inference_calls", "iter_chunks", "main", "parse_size",
           "resnet50_layers", "training_calls", "truth_op", "write_log"]
