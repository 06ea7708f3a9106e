"""Values that parse but cannot be meant warn, naming the file, line, key and the likely unit.

The issue "Never a wrong answer", case 4b: ``latency: 500`` is 500 seconds and ``compute: 120`` is
120 FLOP/s; both loaded silently and gave a confident, wrong answer. ``codesign.spec.plausible.RANGES``
is the one table of plausible ranges; a value outside its range is one stderr line
``codesign: warning: file:line: key: ...; did you mean "500 ns"?``, never an error, never on stdout.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT

from codesign import load_problem
from codesign.cli import main
from codesign.errors import InputWarning
from codesign.spec import units as U
from codesign.spec.plausible import RANGES, implausible, range_of

QUICK = (ROOT / "problems/quickstart.yaml").read_text()


def variant(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """The quickstart problem with one value changed; returns the file and the line of the change."""
    assert old in QUICK, old
    text = QUICK.replace(old, new, 1)
    p = tmp_path / "p.yaml"
    p.write_text(text)
    line = next(i + 1 for i, ln in enumerate(text.splitlines()) if new.splitlines()[-1] in ln)
    return p, line


@pytest.mark.parametrize("old,new,key,phrase", [
    ("latency: 500 ns}", "latency: 500}", "topology.dims[0].latency",
     '500 (500 s) is implausible for a link latency, expected at most 1 ms; a missing unit? did you mean "500 ns"?'),
    ("bandwidth: 25 GB/s", "bandwidth: 25 KB/s", "topology.dims[1].bandwidth",
     '25 KB/s is implausible for a bandwidth, expected 1 MB/s to 100 TB/s; a wrong unit? did you mean "25 GB/s"?'),
    ("hbm_bandwidth: 900 GB/s", "hbm_bandwidth: 900 PB/s", "npu.hbm_bandwidth",
     'did you mean "900 GB/s"?'),
    ("compute: 120 TFLOP/s", "compute: 120", "npu.compute",
     '120 (120 FLOP/s) is implausible for a compute rate, expected 1 GFLOP/s to 1000 PFLOP/s; a missing unit? '
     'did you mean "120 TFLOP/s"?'),
    ("size: 512 KiB", "size: 512", "engine.sram[0].size",
     '512 (512 B) is implausible for an SRAM size, expected 1 KiB to 1 TiB; a missing unit? did you mean "512 KiB"?'),
    ("size: 2 MiB", "size: 2 PiB", "engine.sram[1].size", 'a wrong unit? did you mean "2 MiB"?'),
    ("forward: 40 us", "forward: 40", "workload.layers[0].forward", 'did you mean "40 us"?'),
    ("endpoint_delay: 10 ns", "endpoint_delay: 10", "engine.endpoint_delay", 'did you mean "10 ns"?'),
    ("area_budget: 3 mm^2", "area_budget: 300000", "engine.area_budget", 'did you mean "300000 um^2"?'),
], ids=["latency", "bandwidth-low", "bandwidth-high", "compute", "sram-low", "sram-high", "compute-time",
        "endpoint-delay", "area"])
def test_implausible_value_warns_with_file_line_key_and_unit(tmp_path, capsys, old, new, key, phrase):
    p, line = variant(tmp_path, old, new)
    assert main(["validate", str(p)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"{p}: valid.")
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"codesign: warning: {p}:{line}: {key}: "), lines[0]
    assert phrase in lines[0], lines[0]
    with pytest.warns(InputWarning, match=re.escape(f"{p}:{line}: {key}: ")):
        load_problem(p)


def test_plausible_values_do_not_warn(tmp_path, capsys):
    """Every shipped problem (the paper's cases too) is plausible throughout."""
    files = sorted((ROOT / "problems").glob("*.yaml")) + sorted((ROOT / "problems/paper").glob("*.yaml"))
    assert len(files) > 50
    for f in files:
        assert main(["validate", str(f)]) == 0, f
        _, err = capsys.readouterr()
        assert err == "", err


def test_an_error_is_shown_alone(tmp_path, capsys):
    """A file with an error shows that one line: its warnings are held until the file loads."""
    text = QUICK.replace("latency: 500 ns}", "latency: 500}").replace("type: ace", "type: acee")
    p = tmp_path / "p.yaml"
    p.write_text(text)
    assert main(["validate", str(p)]) == 2
    _, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and err.startswith("codesign: error: ") and "engine.type" in err


def test_json_stays_pure_json(tmp_path, capsys):
    p, line = variant(tmp_path, "endpoint_delay: 10 ns\n", "endpoint_delay: 10 ns\n  fixed_power: 5000\n")
    assert main(["solve", str(p), "--json", "--no-validate"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["status"] == "optimal"
    assert err.splitlines() == [f"codesign: warning: {p}:{line}: engine.fixed_power: 5000 (5000 W) is "
                                'implausible for a power, expected at most 1000 W; a missing unit? did you mean '
                                '"5000 mW"?']


def test_the_table_has_the_issues_ranges():
    def bounds(dim, key):
        r = range_of(dim, key)
        return r.lo, r.hi
    assert bounds(U.SECONDS, "latency") == (None, 1e-3)
    assert bounds(U.BYTES_PER_S, "bandwidth") == bounds(U.BYTES_PER_S, "hbm_bandwidth") == (1e6, 100e12)
    assert bounds(U.FLOP_PER_S, "compute")[0] == 1e9
    assert bounds(U.BYTES, "size") == (2.0**10, 2.0**40)
    assert range_of(U.SECONDS, "time_limit") is None  # a solver limit may be anything
    assert all(r.typical > 0 and (r.lo is None or r.lo <= r.typical) and (r.hi is None or r.typical <= r.hi)
               for r in RANGES)
    assert implausible(1e-3, U.SECONDS, "latency", "1 ms") is None  # the bounds themselves are plausible
    assert implausible(0.0, U.SECONDS, "latency", 0) is None  # zero is "none", not a missing unit
