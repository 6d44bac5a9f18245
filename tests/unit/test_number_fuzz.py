"""No line can take the machine (issue 26): every size read from a log is bounded before
anything is built from it.

The fuzz (``tests/number_fuzz.py``): every numeric flag of every driver subcommand table, and
every number of one block of each log form, set to 0, -1, 2**31, 2**32+1, 10**8 and 10**11;
per line under 2 s, under 200 MB allocated, under 64 KB of output, and nothing raised.  The
suite runs every second case (about 20 s here alone; the cases run in a child process with
a 4 GiB address-space cap, so a regression fails instead of taking the machine);
``benchmarks/fuzz_numbers.py`` runs all of them and every number of every real log.

The named cases are the lines the issue found: ``ctc -n 10000000`` (14 s, 850 MB, 80 MB of
JSON), ``-n 100000000`` (past 8 GB), and the RNN forms.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import number_fuzz as nf  # tests/number_fuzz.py (tests/ is on pytest's pythonpath: pyproject.toml)
import pytest

TESTS = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
import number_fuzz as nf
nf.limit_memory(4.0)
cases = {cases}
bad = []
for c in cases:
    o = nf.check(c)
    if o.failures:
        bad.append([c.name, o.failures])
print(json.dumps(bad))
"""


def run_cases(cases_expr: str, timeout: float = 600) -> list:
    """Run the cases ``cases_expr`` names (Python, evaluated in the child) and return the failures."""
    code = _CHILD.format(tests=str(TESTS), cases=cases_expr)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_every_numeric_flag_and_every_logged_number_sampled():
    bad = run_cases("nf.all_cases()[::2]")
    assert not bad, bad[:10]


def test_the_sample_covers_every_subcommand_and_every_form():
    from miotui.driver.tables import SUBCOMMANDS
    cases = nf.all_cases()[::2]
    bases = {c.name.split()[0] for c in cases if not c.name.startswith(("logged", "form"))}
    assert bases == {s.bases[0].name for s in SUBCOMMANDS if any(f.type in nf.NUMERIC_TYPES
                                                                for f in s.flags_in(None))}
    forms = {c.name.split()[1] for c in cases if c.name.startswith("form")}
    assert len(forms) == len({c.name.split()[1] for c in nf.form_cases()}) >= 20


NAMED = {
    # issue 26: a 46-byte line made decode take 14 s, 850 MB and write 80 MB of JSON
    "ctc -n 10000000": "$ MIOpenDriver ctc -n 10000000 -c 3 -k 5 -l 2",
    "ctc -n 100000000": "$ MIOpenDriver ctc -n 100000000 -c 3 -k 5 -l 2",
    "ctc -n 99999999999": "$ MIOpenDriver ctc -n 99999999999 -c 3 -k 5 -l 2",
    "logged ctc": "MIOpen(HIP): Command [miopenCTCLoss] ./bin/MIOpenDriver  ctc  -a 0 -b 0 -c 28 -m 1 -n 10000000 "
                  "-l 3,4 -k 10,12",
    # issue 27: a loop per layer in flops and weight_count (35 minutes a call)
    "rnn -l 2147483647": "MIOpen(HIP): Command [LogCmdRNN] ./bin/MIOpenDriver rnn -n 256 -W 30 -H 256 -l 2147483647 "
                         "-b 1 -m lstm -p 0 -r 0 -q 0 -k 45 -c 0 -F 1 -t 1 -w 1",
    "rnn_seq -l 2147483647 -n 2147483647": "$ MIOpenDriver rnn_seq -n 2147483647 -W 8 -H 16 -l 2147483647 -m gru "
                                           "-k 5 -K 5,3,2 -F 4",
    # issue 26: per-step batch lists padded to the sequence length
    "rnn -k 2147483647 -n 4,2": "$ MIOpenDriver rnn -n 4,2 -W 8 -H 8 -l 1 -m lstm -k 2147483647 -F 1",
    "rnn -k 2147483647 -n 4": "$ MIOpenDriver rnn -n 4 -W 8 -H 8 -l 1 -m lstm -k 2147483647 -F 1",
    # the most steps whose differing batch sizes are listed: 329 KB of JSON, 131 KB of CSV and of driver
    # commands from this 60-byte line, before the outputs showed the list as the driver takes it
    "rnn -k 65536 -n 4,3": "$ MIOpenDriver rnn -n 4,3 -W 8 -H 8 -l 1 -m lstm -k 65536 -F 1",
}


def test_named_lines_are_bounded():
    expr = "[nf.Case(n, t) for n, t in " + repr(sorted(NAMED.items())) + "]"
    bad = run_cases(expr, timeout=300)
    assert not bad, bad


def _decode_json(text: str) -> dict:
    import io

    from miotui.catalog import Catalog
    from miotui.decode_output import render_to
    from miotui.decoding.whole import decode_stream
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO((text + "\n").encode()))
    buf = io.StringIO()
    render_to(buf, catalog, "json")
    return json.loads(buf.getvalue())


def test_ctc_of_ten_million_samples_is_kept_compact():
    doc = _decode_json(NAMED["ctc -n 10000000"])
    (layer,) = doc["layers"]
    params = dict(layer["problem"]["params"])
    assert params["n"] == "10000000" and params["k"] == "5" and params["l"] == "2"
    assert layer["problem"]["shapes"] == [["probs", [5, 10000000, 4]]]
    assert layer["driver_command"] == "MIOpenDriver ctc -a 0 -b 0 -c 3 -m 1 -n 10000000 -k 5 -l 2"


@pytest.mark.parametrize("line, k", [("$ MIOpenDriver ctc -n 4 -c 3 -k 5,5,5,5 -l 2,3,3", "5"),
                                     ("$ MIOpenDriver ctc -n 2 -c 3 -k 7,6,5 -l 2", "7,6"),
                                     ("$ MIOpenDriver ctc -n 3 -c 3 -k 4,9 -l 2", "4,9")])
def test_ctc_lengths_read_as_the_driver_expands_them(line, k):
    """The compact form reads the same as the driver's expansion (cut to the batch, the last
    value repeating), so one layer typed either way is one row."""
    (layer,) = _decode_json(line)["layers"]
    params = dict(layer["problem"]["params"])
    assert params["k"] == k
    assert layer["problem"]["shapes"][0][1][0] == max(int(v) for v in k.split(","))


def test_rnn_of_two_billion_layers_decodes_with_its_derived_values():
    doc = _decode_json(NAMED["rnn -l 2147483647"])
    (layer,) = doc["layers"]
    assert layer["problem"]["layers"] == 2147483647 and not doc["undecoded"]


def test_rnn_per_step_batches_are_shown_as_the_driver_takes_them():
    doc = _decode_json(NAMED["rnn -k 65536 -n 4,3"])
    (layer,) = doc["layers"]
    assert layer["problem"]["batch"] == [4, 3] and layer["problem"]["seq_len"] == 65536
    assert "-n 4,3 " in layer["driver_command"]
