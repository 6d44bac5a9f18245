"""Hostile input and chunking for the cuDNN format: any split of the input gives the same
catalog, and no input crashes the decoder or grows its memory past its caps."""

from __future__ import annotations

import gzip
import lzma
import random
import re
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.formats.cudnn import CudnnScanner
from miotui.formats.cudnn.framing import HEADER_CHARS, LINE_CHARS, RECORD_CHARS, RecordFramer

DATA = Path(__file__).parents[1] / "data" / "cudnn"


def _sample(data: bytes, per_function: int) -> bytes:
    """The first ``per_function`` records of each kind (severity and function), in log order."""
    starts = [m.start() for m in re.finditer(rb"^[IWE]! CuDNN \(v", data, re.M)] + [len(data)]
    seen: Counter = Counter()
    kept = []
    for a, b in zip(starts, starts[1:], strict=False):
        kind = data[a:data.find(b"(", data.find(b" function ", a))]
        seen[kind] += 1
        if seen[kind] <= per_function:
            kept.append(data[a:b])
    return b"".join(kept)


def _corpus() -> bytes:
    """Every form in one text: records of every kind from both ResNet-50 logs (legacy calls
    in three directions, ExecuteInternal, cudnnBackendExecute and its status, Visualize
    JSON, W! records, batch norm, setters), a frontend log's start, and every public
    excerpt (callback form in UTF-8, documentation form, XLA, v1 JSON)."""
    parts = [_sample(gzip.decompress((DATA / "h100" / "cudnn_resnet50_v7.log.gz").read_bytes()), 3),
             _sample(lzma.decompress((DATA / "h100" / "cudnn_resnet50.log.xz").read_bytes()), 3),
             _sample(lzma.decompress((DATA / "h100" / "small_bench.log.xz").read_bytes())[:3_000_000], 30)]
    text = gzip.decompress((DATA / "h100" / "fe_resnet50_amp.log.gz").read_bytes())[:20_000]
    parts.append(text[:text.rfind(b"\n[cudnn_frontend]") + 1])
    for path in sorted((DATA / "public").iterdir()):
        if path.suffix in (".log", ".json"):
            parts.append(path.read_bytes().rstrip(b"\n") + b"\n\n")
    return b"".join(parts)


CORPUS = _corpus()


def fingerprint(scanner: CudnnScanner) -> tuple:
    catalog = scanner.catalog
    layers = tuple((s.problem, s.executions, s.finds, s.mentions, s.first_line, s.last_line, s.annotations,
                    s.annotation_history, s.warnings, s.raw) for s in catalog.layers())
    undecoded = tuple((u.line, u.reason, u.text) for u in catalog.undecoded())
    stats = vars(scanner.stats)
    return layers, undecoded, catalog.lines, catalog.bytes, stats


def decode_in(pieces: list[bytes]) -> CudnnScanner:
    scanner = CudnnScanner(Catalog())
    for piece in pieces:
        scanner.feed(piece)
    scanner.finish()
    return scanner


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


WHOLE = fingerprint(decode_in([CORPUS]))


def test_the_corpus_holds_every_form():
    layers, undecoded, *_ = WHOLE
    ops = {layer[0].op for layer in layers}
    assert {"conv", "bnorm"} <= ops and len(layers) > 10
    assert any(layer[0].dtype == "fp16" for layer in layers)      # the AMP frontend log
    assert any("cudnn_warning" in dict(layer[6]) for layer in layers)
    for kind in (b"function cudnnBackendExecute()", b"cudnnConvolutionBackwardData", b"W! CuDNN", b"Visualize",
                 b"cudnnBatchNormalizationBackwardEx", b"\xe2\x94\x8c Debug", b"[cudnn_frontend]"):
        assert kind in CORPUS


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=len(CORPUS)), max_size=40))
def test_any_split_gives_the_same_catalog(cuts):
    assert fingerprint(decode_in(split_at(CORPUS, cuts))) == WHOLE


def test_byte_at_a_time_over_a_multibyte_record():
    """The callback form's box characters are 3 bytes of UTF-8: split inside them too."""
    text = (DATA / "public" / "08_v92400_callback_julia_cudajl3205.log").read_bytes() + \
        (DATA / "public" / "09_v7501_legacy_findconvfwd_mlmodelscope.log").read_bytes()
    assert fingerprint(decode_in([text[i:i + 1] for i in range(len(text))])) == fingerprint(decode_in([text]))


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=3000))
def test_random_bytes_never_crash(data):
    scanner = decode_in([data])
    assert scanner.catalog.lines >= 0


HEADERS = [b"I! CuDNN (v91900 56) function cudnnBackendExecuteInternal() called:\n",
           b"I! CuDNN (v8005) function cudnnConvolutionForward() called:\n",
           b"W! CuDNN (v91900 56) function cudnnBatchNormalizationForwardTrainingEx() called:\n",
           b"I! CuDNN (v91900 56) function cudnnBackendFinalizeGraphVisualize() called:\n",
           b"[cudnn_frontend] CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR : ConvFwd_eng1, x\n",
           b"\xe2\x94\x8c Debug: CuDNN (v92400 43) function cudnnConvolutionForward() called:\n"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=len(CORPUS) - 1), st.integers(0, 255),
                          st.sampled_from(["flip", "cut", "dup", "header"])), min_size=1, max_size=12))
def test_mutated_records_never_crash_and_stay_chunk_invariant(mutations):
    """Real records with bytes flipped, lines cut or doubled and headers dropped in: every
    one decoded or listed as undecoded, and the same catalog in any chunking."""
    data = bytearray(CORPUS[:60_000])
    for pos, value, kind in mutations:
        pos %= len(data)
        if kind == "flip":
            data[pos] = value
        elif kind == "cut":
            del data[pos:pos + value * 7]
        elif kind == "dup":
            data[pos:pos] = data[pos:pos + value * 5]
        else:
            data[pos:pos] = HEADERS[value % len(HEADERS)]
    data = bytes(data)
    whole = fingerprint(decode_in([data]))
    rng = random.Random(len(data))
    cuts = [rng.randrange(len(data) + 1) for _ in range(9)]
    assert fingerprint(decode_in(split_at(data, cuts))) == whole


def test_hostile_values_are_undecoded_with_a_reason():
    body = (b"I! CuDNN (v91900 56) function cudnnBackendExecuteInternal() called:\n"
            b"i!     operation: type=internalType; val=CONV_FORWARD;\n"
            b"i!     xDesc: type=cudnnTensorDescriptor_t:\n"
            b"i!         dataType: type=cudnnDataType_t; val=CUDNN_DATA_FLOAT (0);\n"
            b"i!         dimA: type=int; val=[99999999999999999999999,3,-4,\x1b[31m];\n"
            b"i!     wDesc: type=cudnnFilterDescriptor_t:\n"
            b"i!         dimA: type=int; val=[1,1,1,1];\n")
    scanner = decode_in([body * 3])
    assert scanner.catalog.layers() == []
    assert scanner.catalog.undecoded_count == 3
    assert all("not an integer" in u.reason for u in scanner.catalog.undecoded())


def test_memory_is_bounded_by_the_caps():
    """An endless line, an endless record and an endless header are held only up to their caps."""
    held = []
    framer = RecordFramer(held.append)
    framer.feed(b"I! CuDNN (v9) function cudnnX() called:" + b"x" * (3 * HEADER_CHARS) + b"\n")
    for _ in range(40):
        framer.feed(b"i!     " + b"y" * (LINE_CHARS // 8))
        assert len(framer._partial) <= LINE_CHARS
    framer.feed(b"\n" + b"i!     z: type=int; val=1;\n" * (RECORD_CHARS // 10))
    assert sum(len(piece) for piece in framer._open) <= RECORD_CHARS + HEADER_CHARS
    framer.finish()
    (record,) = held
    assert len(record.text) <= RECORD_CHARS + HEADER_CHARS and record.dropped_chars > 5 * LINE_CHARS


def test_many_distinct_threads_and_addresses_stay_bounded():
    """Per-thread and per-address tables are capped whatever the log names."""
    from miotui.formats.cudnn.calls import DESCRIPTORS_KEPT
    from miotui.formats.cudnn.scanner import THREADS_KEPT
    records = []
    for i in range(max(THREADS_KEPT, DESCRIPTORS_KEPT) + 50):
        records.append(f"I! CuDNN (v91900 56) function cudnnSetConvolutionNdDescriptor() called:\n"
                       f"i!     convDesc: location=host; addr=0x{i:x};\ni!     padA: type=int; val=[0,0];\n"
                       f"i! Process=1; Thread={i}; GPU=NULL; Handle=NULL; StreamId=NULL.\n\n"
                       f"W! CuDNN (v91900 56) function cudnnSetConvolutionNdDescriptor() called:\n"
                       f"w!     Warning: CUDNN_STATUS_SUCCESS; Reason: r\n"
                       f"w! Process=1; Thread={i}; GPU=NULL; Handle=NULL; StreamId=NULL.\n\n")
    scanner = decode_in(["".join(records).encode()])
    assert len(scanner.descriptors._by_addr) <= DESCRIPTORS_KEPT
    assert len(scanner._last) <= THREADS_KEPT and scanner.stats.unattached == len(records)


def frame(pieces: list[bytes]) -> list:
    got = []
    framer = RecordFramer(got.append)
    for piece in pieces:
        framer.feed(piece)
    framer.finish()
    return got


def test_an_overlong_line_is_cut_the_same_in_any_chunking():
    """A header line longer than an unterminated line may be held is cut to the same
    prefix whether it arrives whole or in pieces."""
    data = (b"I! CuDNN (v9) function cudnnX() called:" + b"x" * (LINE_CHARS + 5000) + b"\n"
            b"i!     a: type=int; val=1;\n" + b"z" * (LINE_CHARS + 10))
    whole = frame([data])
    assert frame([data[i:i + 4096] for i in range(0, len(data), 4096)]) == whole
    (record,) = whole
    assert record.text.startswith("I! CuDNN (v9) function cudnnX()") and len(record.text) <= RECORD_CHARS


def test_caches_are_bounded_in_characters():
    """Distinct large records (each decoded once) do not pile up in the caches."""
    from miotui.formats.cudnn.scanner import CACHE_CHARS
    filler = "i!     knob: type=int; val=1;\n" * 3000
    records = "".join(f"I! CuDNN (v91900 56) function cudnnBackendExecuteInternal() called:\n"
                      f"i!     operation: type=internalType; val=CONV_FORWARD;\ni!     n{i}: type=int; val={i};\n"
                      + filler for i in range(300))
    scanner = decode_in([records.encode()])
    assert scanner.catalog.undecoded_count == 300
    assert scanner._cache.chars <= CACHE_CHARS and len(records) > CACHE_CHARS
