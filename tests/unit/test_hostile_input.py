"""Hostile and broken input, headless: log text never drives the terminal, nothing crashes,
nothing decoded is lost.  (The app's screens have their own catalogue test in test_app.)

Every output path of ``miotui decode`` is fed a catalogue of hostile strings (C0/C1
controls, CSI, OSC 0/8/52 with BEL and ST, DCS, Rich/Textual markup, bidi overrides) in the
places log text reaches the output: a solver name, a warning quoting a flag value, a file
name, an undecoded line.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from miotui.decoding.whole import decode_paths

HOSTILE = [
    "\x1b]0;pwned-title\x07",                      # OSC 0 (title), BEL-terminated
    "\x1b]52;c;aGVsbG8=\x1b\\",                    # OSC 52 (clipboard), ST-terminated
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",   # OSC 8 hyperlink
    "\x1b[2J\x1b[H",                               # CSI: clear the screen
    "\x9b2J",                                      # C1 CSI
    "\x1bP1$r\x1b\\",                              # DCS
    "\x07\x08\x0c\x7f",                            # BEL, BS, FF, DEL
    "[/x]", "[link=http://x]y[/link]", "[@click=app.quit]z[/]",   # markup
    "\u202egnp.exe",                               # bidi override
    "\u2066isolate\u2069",
    "line\u2028sep\u2029soft\u00adhy\U000e0001\U000e0041\U000e007f\u2064",   # invisible: separators, tags
]
FORBIDDEN = ["\x1b", "\x9b", "\x07", "\x08", "\x0c", "\x7f", "\u202e", "\u2066", "\u2028", "\u2029", "\u00ad",
             "\U000e0001", "\U000e0041", "\U000e007f", "\u2064"]


def run_cli(*args: str, stdin: bytes | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miotui", *args], input=stdin, capture_output=True, timeout=120,
                          **kw)


def hostile_log(tmp_path: Path) -> Path:
    lines = []
    for i, h in enumerate(HOSTILE):
        flat = h.replace("\n", " ")
        # a flag value the driver's atoi reads: its text is quoted in the layer's warning
        lines.append(f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {i + 1}{flat} -c 3 -H 8 "
                     f"-W 8 -k 4 -y 3 -x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1")
        # MIOpen's chosen solver, shown in the table's solver column
        lines.append(f"MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: Solver{flat} , 0, 0.5")
        # a cut Command line: undecoded, its text kept
        lines.append(f"MIOpen(HIP): Command [LogCmdConvolution] {flat}")
    path = tmp_path / "hostile\x1b]0;file\x07.log"
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return path


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "driver"])
def test_no_escape_sequence_or_markup_reaches_the_output(tmp_path, fmt):
    log = hostile_log(tmp_path)
    other = tmp_path / "plain.log"
    other.write_text("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 "
                     "-y 3 -x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
    r = run_cli("decode", str(log), str(other), "--format", fmt)     # two files: file names are shown
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    for bad in FORBIDDEN:
        assert bad not in out, (fmt, repr(bad))
    assert not any(0x80 <= ord(ch) <= 0x9f for ch in out)
    if fmt == "table":
        assert "[/x]" in out and "[@click=app.quit]" in out     # shown as text, not interpreted
    if fmt == "json":
        doc = json.loads(out)                                      # the text survives, escaped
        assert any("\x1b" in u["text"] for u in doc["undecoded"])


def test_output_file_gets_the_same_safe_text(tmp_path):
    out = tmp_path / "out.csv"
    r = run_cli("decode", str(hostile_log(tmp_path)), "--format", "csv", "-o", str(out))
    assert r.returncode == 0
    text = out.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\x9b" not in text


def test_csv_cells_are_never_spreadsheet_formulas(tmp_path):
    log = tmp_path / "f.log"
    log.write_text("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 "
                   "-x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
                   "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: =HYPERLINK(\"http://x\") , 0, 0.5\n")
    r = run_cli("decode", str(log), "--format", "csv")
    import csv
    import io
    (row,) = csv.DictReader(io.StringIO(r.stdout.decode()))
    assert row["solver"].startswith("'=HYPERLINK")


def test_a_formula_after_whitespace_or_a_control_is_quoted_too(tmp_path):
    """Spreadsheets skip a leading tab or space before ``=``: a log named
    ``\\t=HYPERLINK(...).log`` (the CSV's files cell) and a solver named
    ``\\x01=HYPERLINK(...)`` were written unquoted."""
    import csv
    import io
    conv = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
            "-p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
    (tmp_path / '\t=HYPERLINK("x").log').write_text(
        conv + 'MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: \x01=HYPERLINK("http://y") , 0, 0.5\n')
    (tmp_path / "b.log").write_text(conv)
    r = run_cli("decode", '\t=HYPERLINK("x").log', "b.log", "--format", "csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (row,) = csv.DictReader(io.StringIO(r.stdout.decode()))
    assert row["files"] == '\'\t=HYPERLINK("x").log;b.log'
    assert row["solver"] == '\'\u2401=HYPERLINK("http://y")'     # the control shown as ␁, and quoted


def test_every_invisible_or_reordering_character_is_shown_as_a_mark():
    """U+2028, the soft hyphen and the tag characters (an invisible copy of ASCII) passed the
    cleaner; now every format character and line/paragraph separator this Python knows is a
    ``<U+XXXX>`` mark, in both modes, and visible text (letters, CJK, emoji) is unchanged."""
    import unicodedata

    from miotui.safe_text import visible
    hidden = [chr(i) for i in range(0x110000) if unicodedata.category(chr(i)) in ("Cf", "Zl", "Zp")]
    hidden += [chr(i) for i in range(0xE0000, 0xE0080)]       # the whole tag block, assigned or not
    for ch in hidden:
        for newlines in (False, True):
            assert visible(ch, newlines=newlines) == f"<U+{ord(ch):04X}>", hex(ord(ch))
    assert visible("soft\u00adhy line\u2028para\u2029 \U000e0001\U000e0041") == \
        "soft<U+00AD>hy line<U+2028>para<U+2029> <U+E0001><U+E0041>"
    plain = "conv Solver_x1 ÄÖ 卷积 \u00a0 😀 ✓"
    assert visible(plain) == plain and visible("a\tb\nc", newlines=True) == "a\tb\nc"


FAKE_DRIVER = str(Path(__file__).parents[1].joinpath("fake_miopendriver.py"))
SMALL = "conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1"


def test_run_shows_the_drivers_lines_with_visible_marks(tmp_path):
    """``miotui run --backend miopen-driver`` streams the driver's lines: a driver printing
    OSC 0 / OSC 52 set the terminal title and wrote the clipboard.  Every line (streamed, in
    the table, in the details) now goes through the same cleaner as the rest."""
    hostile = "".join(HOSTILE).replace("\n", " ")
    env = dict(os.environ, FAKE_MIOPEN_HOSTILE=hostile)
    r = run_cli("run", SMALL, "--backend", "miopen-driver", "--driver", FAKE_DRIVER, "--iters", "2", env=env)
    out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8")
    assert r.returncode == 0, err                 # the verdict still comes from the driver's output
    assert "  | ␛]0;pwned-title␇" in err, err     # the streamed line, shown with marks
    assert "ConvDirectNaiveConvFwd␛]0;pwned-title␇" in out, out   # its solver name in the details
    for text in (out, err):
        for bad in FORBIDDEN:
            assert bad not in text, repr(bad)
        assert not any(0x80 <= ord(ch) <= 0x9f for ch in text)


def test_run_usage_errors_name_a_hostile_file_with_visible_marks(tmp_path):
    r = run_cli("run", "--log", str(tmp_path / "gone\x1b]0;t\x07.log"), "--layer", "1")
    err = r.stderr.decode("utf-8")
    assert r.returncode == 2 and "gone␛]0;t␇.log" in err and "\x1b" not in err, err
    r = run_cli("run", "conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1 -m \x1b]52;c;eA==\x07")
    err = r.stderr.decode("utf-8")
    assert r.returncode == 2 and "\x1b" not in err and "\x07" not in err, err


# ---------------------------------------------------------------- crashes: exit 0 for any input

def test_eighty_digit_dimensions_are_undecoded_not_a_crash(tmp_path):
    big = "9" * 80
    log = tmp_path / "big.log"
    log.write_text(
        f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {big} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
        f"-p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
        f"MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){{\n"
        f"MIOpen(HIP): \txDesc = {{{big}, 4, 8, 8}}, {{256, 64, 8, 1}}, packed, \n"
        f"MIOpen(HIP): \twDesc = {{4, 4, 3, 3}}, {{36, 9, 3, 1}}, packed, \n"
        f"MIOpen(HIP): \tconvDesc = conv2d, miopenConvolution, miopenPaddingDefault, {{1, 1}}, {{1, 1}}, {{1, 1}}, \n"
        f"MIOpen(HIP): }}\n"
        f"{big}-8-8-3x3-4-8-8-1-1x1-1x1-1x1-0-NCHW-FP32-F=GemmFwd1x1_0_1:1,2,3,4\n")
    for fmt in ("table", "csv", "json", "driver"):
        r = run_cli("decode", str(log), "--format", fmt)
        assert r.returncode == 0 and b"Traceback" not in r.stderr, (fmt, r.stderr[-500:])
    catalog = decode_paths([str(log)])
    assert len(catalog) == 0 and catalog.undecoded_count == 3
    assert all(any(why in u.reason for why in ("at most", "out of range", "must be a non-negative"))
               for u in catalog.undecoded())


DATA = Path(__file__).parents[1] / "data"
#: what a careless or hostile edit puts where a log has a number: zero, negative, past 32 and 31
#: bits, digits that are not ASCII (``str.isdigit`` accepts ``²``, ``int`` does not), a fraction, nothing
ODD_NUMBERS = ["0", "-1", "4294967297", "2147483648", "\u00b2", "\u0663", "\uff10", "1.5", ""]


@pytest.mark.parametrize("replacement", ODD_NUMBERS)
def test_any_number_in_any_real_log_replaced_never_breaks_a_decoder(replacement):
    """Every number of every real excerpt (a third of them at a time, so the rest of the log
    still decodes around it) replaced: no decoder raises and none is caught failing.  Found
    an RNN ``-k 0`` (IndexError) and ``-k 4294967297`` (a list of 4 billion batch sizes: the
    process was killed for memory), and ``-n \u00b2`` (ValueError from ``int``)."""
    import io
    import re

    from miotui.catalog import Catalog
    from miotui.decoding.whole import decode_stream
    files = sorted((DATA / "real_logs").glob("*.log")) + sorted((DATA / "regress").glob("*.log"))
    assert len(files) > 100
    broken = []
    for path in files:
        text = path.read_text(errors="replace")
        numbers = list(re.finditer(r"\d+", text))
        for phase in range(3):
            parts, last = [], 0
            for i, m in enumerate(numbers):
                if i % 3 == phase:
                    parts += [text[last:m.start()], replacement]
                    last = m.end()
            catalog = Catalog()
            decode_stream(catalog, io.BytesIO(("".join(parts) + text[last:]).encode()))
            broken += [(path.name, phase, u.reason) for u in catalog.undecoded() if "failed:" in u.reason]
    assert not broken, broken[:5]


def test_an_rnn_of_zero_or_billions_of_steps_is_undecoded_with_its_reason(tmp_path):
    log = tmp_path / "rnn.log"
    line = ("MIOpen(HIP): Command [LogCmdRNN] ./bin/MIOpenDriver rnn -n {n} -W 8 -H 8 -l 1 -b 0 -m lstm -p 0 -r 0 "
            "-k {k} -F 1 -w 1 -t 1\n")
    log.write_text(line.format(n="4", k=0) + line.format(n="4,2", k=2**32 + 1) + line.format(n="4", k=2**32 + 1))
    r = run_cli("decode", str(log), "--format", "json")
    assert r.returncode == 0, r.stderr[-500:]
    doc = json.loads(r.stdout)
    reasons = [u["reason"] for u in doc["undecoded"]]
    assert any("must be at least 1" in why for why in reasons)
    assert any("per-step sizes are not modelled" in why for why in reasons)
    # the same batch every step is one value, however long the sequence (2**32+1 > a C int: out of range)
    assert len(doc["layers"]) + len(reasons) == 3


def test_unwritable_output_and_closed_stdin_are_one_line_and_exit_2(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("nothing\n")
    for args in (("-o", str(tmp_path / "missing" / "out.txt")), ("-o", "/dev/full")):
        r = run_cli("decode", str(log), *args)
        assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"Traceback" not in r.stderr
    with open("/dev/full", "wb") as full:
        r = subprocess.run([sys.executable, "-m", "miotui", "decode", str(log)], stdout=full, stderr=subprocess.PIPE,
                           timeout=60)
    assert r.returncode == 2 and b"Traceback" not in r.stderr and b"No space" in r.stderr
    for argv in (["decode", "-"], ["-"]):
        r = subprocess.run([sys.executable, "-m", "miotui", *argv], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60, preexec_fn=lambda: __import__("os").close(0))
        assert r.returncode == 2 and b"standard input is closed" in r.stderr and b"Traceback" not in r.stderr


# ---------------------------------------------------------------- data loss: a damaged .gz keeps what came before

def _sample(lines: int = 2000) -> bytes:
    return "".join(f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {1 + i % 50} -c 3 -H 8 "
                   f"-W 8 -k 4 -y 3 -x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
                   for i in range(lines)).encode()


def test_a_flipped_byte_in_a_gz_keeps_everything_before_it(tmp_path):
    text = _sample()
    data = bytearray(gzip.compress(text))
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "bad.log.gz"
    path.write_bytes(bytes(data))
    zcat = subprocess.run(["sh", "-c", f"zcat '{path}' 2>/dev/null | wc -l"], capture_output=True, text=True)
    catalog = decode_paths([str(path)])
    assert catalog.lines >= int(zcat.stdout) - 1 > 1000          # what zcat recovers, give or take a cut line
    assert sum(s.executions for s in catalog.layers()) > 1000
    (last,) = catalog.undecoded()[-1:]
    assert "damaged near compressed byte" in last.reason


def test_a_truncated_gz_and_concatenated_members(tmp_path):
    text = _sample(500)
    data = gzip.compress(text)
    (tmp_path / "cut.log.gz").write_bytes(data[: len(data) * 2 // 3])
    cut = decode_paths([str(tmp_path / "cut.log.gz")])
    assert sum(s.executions for s in cut.layers()) > 100
    assert "ends in the middle" in cut.undecoded()[-1].reason
    (tmp_path / "two.log.gz").write_bytes(data + data)
    two = decode_paths([str(tmp_path / "two.log.gz")])
    assert sum(s.executions for s in two.layers()) == 1000 and two.undecoded_count == 0
    (tmp_path / "empty.log.gz").write_bytes(b"")
    assert len(decode_paths([str(tmp_path / "empty.log.gz")])) == 0
