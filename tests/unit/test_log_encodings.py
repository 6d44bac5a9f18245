"""Logs in other text encodings than UTF-8 (Windows PowerShell 5.1's ``2> log.txt`` writes
UTF-16 LE with a byte order mark) decode like their UTF-8 text, whole-file, gzipped and
followed; a binary file says so instead of decoding to silence."""

from __future__ import annotations

import codecs
import gzip

import pytest
from follow_support import batches, conv, started_readers, wait_for

from miotui.decoding.whole import decode_paths
from miotui.sources.encoding import TextBytes, sniff

# what PowerShell 5.1 writes for a native command's stderr redirected with 2>: the first
# line as an error record, then the lines as they came, CRLF line ends
POWERSHELL = ("python.exe : " + conv(1).rstrip("\n") + "\r\n"
              "At line:1 char:1\r\n"
              "+ python train.py 2> log.txt\r\n"
              "+ ~~~~~~~~~~~~~~~~~~~~~~~~~~\r\n"
              "    + CategoryInfo          : NotSpecified: (MIOpen(HIP): Co...:String) [], RemoteException\r\n"
              "    + FullyQualifiedErrorId : NativeCommandError\r\n"
              + "".join(conv(n).replace("\n", "\r\n") for n in (1, 2, 3, 2)))
WANT = {1: 2, 2: 2, 3: 1}

ENCODINGS = {
    "utf-16-le-bom": codecs.BOM_UTF16_LE + POWERSHELL.encode("utf-16-le"),
    "utf-16-be-bom": codecs.BOM_UTF16_BE + POWERSHELL.encode("utf-16-be"),
    "utf-16-le": POWERSHELL.encode("utf-16-le"),
    "utf-8-bom": codecs.BOM_UTF8 + POWERSHELL.encode(),
    "utf-32-le-bom": codecs.BOM_UTF32_LE + POWERSHELL.encode("utf-32-le"),
    "utf-8": POWERSHELL.encode(),
}


def layers(cat) -> dict[int, int]:
    return batches(cat)


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_log_in_any_text_encoding_decodes_like_its_utf8_text(tmp_path, name):
    log = tmp_path / "log.txt"
    log.write_bytes(ENCODINGS[name])
    cat = decode_paths([str(log)])
    assert layers(cat) == WANT
    assert cat.undecoded_count == decode_paths([str(_utf8(tmp_path))]).undecoded_count


def _utf8(tmp_path):
    p = tmp_path / "plain.txt"
    p.write_bytes(POWERSHELL.encode())
    return p


def test_a_gzipped_utf16_log_decodes(tmp_path):
    log = tmp_path / "log.txt.gz"
    log.write_bytes(gzip.compress(ENCODINGS["utf-16-le-bom"]))
    assert layers(decode_paths([str(log)])) == WANT


def test_a_followed_utf16_log_is_read_as_it_grows_in_odd_pieces(tmp_path):
    log = tmp_path / "log.txt"
    data = ENCODINGS["utf-16-le-bom"]
    log.write_bytes(data[:7])                       # not even the first character whole
    more = conv(9).replace("\n", "\r\n").encode("utf-16-le")
    with started_readers() as make:
        cat, reader = make([log])
        with open(log, "ab") as fh:
            for at in range(7, len(data), 333):     # odd sizes: characters split between reads
                fh.write(data[at:at + 333])
                fh.flush()
        assert wait_for(lambda: layers(cat) == WANT)
        with open(log, "ab") as fh:
            fh.write(more)
        assert wait_for(lambda: layers(cat) == {**WANT, 9: 1})
        lines = [text for _, _, text in reader.tail(50)]
        assert any("MIOpenDriver conv -n 9" in t for t in lines), "the raw-log tail shows the text, not NULs"
        assert not any("\0" in t for t in lines)


def test_a_gzipped_utf16_log_is_read_by_the_follower(tmp_path):
    log = tmp_path / "log.txt.gz"
    log.write_bytes(gzip.compress(ENCODINGS["utf-16-be-bom"]))
    with started_readers() as make:
        cat, reader = make([log], follow=False)
        assert wait_for(lambda: reader.finished)
        assert layers(cat) == WANT


def test_a_binary_file_says_so_in_decode_and_in_follow(tmp_path):
    log = tmp_path / "core.bin"
    log.write_bytes(bytes(range(256)) * 64 + conv(1).encode())
    cat = decode_paths([str(log)])
    reasons = [r.reason for r in cat.undecoded()]
    assert any("looks binary" in r for r in reasons), reasons
    with started_readers() as make:
        followed, reader = make([log], follow=False)
        assert wait_for(lambda: reader.finished)
        assert any("looks binary" in r.reason for r in followed.undecoded())
    assert layers(cat) == layers(followed)


def test_text_bytes_split_anywhere_gives_the_same_utf8():
    for name, data in ENCODINGS.items():
        whole = TextBytes()
        expected = whole.feed(data) + whole.flush()
        assert expected == POWERSHELL.encode(), name
        for cut in range(0, 80):
            t = TextBytes()
            assert t.feed(data[:cut]) + t.feed(data[cut:]) + t.flush() == expected, (name, cut)


def test_plain_utf8_passes_through_untouched():
    t = TextBytes()
    first = t.feed(b"MIOpen(HIP): x\n")
    piece = b"MIOpen(HIP): " + b"y" * 5000 + b"\n"
    assert first == b"MIOpen(HIP): x\n" and t.feed(piece) is piece
    assert sniff(b"hello world, plain ascii text")[1] == ""


@pytest.mark.parametrize("name", ["utf-16-le-bom", "utf-16-be-bom", "utf-8-bom"])
def test_the_raw_log_pane_shows_a_utf16_log_as_text_at_the_catalogs_line_numbers(tmp_path, name):
    from miotui.sources.context import LogContext
    log = tmp_path / "log.txt"
    log.write_bytes(ENCODINGS[name])
    plain = _utf8(tmp_path)
    want = [(ln.number, ln.text) for ln in LogContext(str(plain), step=2).read(1, 100)]
    ctx = LogContext(str(log), step=2)          # several checkpoints: seeks back and forth
    assert [(ln.number, ln.text) for ln in ctx.read(1, 100)] == want
    assert [(ln.number, ln.text) for ln in ctx.read(8, 2)] == want[7:9]
    assert [(ln.number, ln.text) for ln in ctx.read(2, 1)] == want[1:2]
    three = next(s for s in decode_paths([str(log)]).layers() if s.problem.n == 3)
    assert "-n 3 " in ctx.read(three.first_line, 1)[0].text
    assert ctx.find("conv -n 3 ", 1) == three.first_line
    with open(log, "ab") as fh:                 # a followed log grows
        fh.write(ENCODINGS[name][len(codecs.BOM_UTF8) if name == "utf-8-bom" else 2:][:200])
    assert ctx.index_to_end() > len(want)
