"""ASTRA-sim 2.x mode: figures of a rebuilt ASTRA-sim 2.x reproduced to the cycle, and its inputs' errors.

tests/data/astra2/issue_figures.json: the micro-benchmark table, the local-mem-bw row and the 8-NPU switch
figures of issue 31; tests/data/astra2/anchors.json: random cases run by a rebuilt 2.x
(benchmarks/astra2_anchors.py). The traces are written here by codesign's own writer.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from codesign.astra2.mode import collective_trace, program_trace, simulate_astra2
from codesign.cli.main import main
from codesign.errors import InputWarning, SpecError

DATA = Path(__file__).parent / "data" / "astra2"
FIG = json.loads((DATA / "issue_figures.json").read_text())


def _inputs(tmp: Path, topology: str, *, splits: int, chunks: int, algo: str = "ring", mem_bw: object = 1600,
            npus: int = 8) -> tuple[str, str, str]:
    net = tmp / "net.yml"
    net.write_text(f"topology: [ {topology} ]\nnpus_count: [ {npus} ]\nbandwidth: [ 50.0 ]  # GB/s\n"
                   "latency: [ 500.0 ]  # ns\n")
    s = {**FIG["base_system"], "active-chunks-per-dimension": chunks, "preferred-dataset-splits": splits,
         **{f"{c}-implementation": [algo] for c in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")}}
    if mem_bw is not None:
        s["local-mem-bw"] = mem_bw
    system = tmp / "sys.json"
    system.write_text(json.dumps(s))
    (tmp / "w").mkdir(exist_ok=True)
    for r in range(npus):
        (tmp / "w" / f"ar.{r}.et").write_bytes(collective_trace(0, FIG["all_reduce_bytes"]))
    return str(net), str(system), str(tmp / "w" / "ar")


@pytest.mark.parametrize("backend", ["congestion-unaware", "congestion-aware"])
def test_micro_benchmark_table_to_the_cycle(tmp_path: Path, backend: str) -> None:
    for a, row in FIG["splits_by_active_chunks"][backend].items():
        for k, want in zip(FIG["splits"], row):
            res = simulate_astra2(*_inputs(tmp_path, "Ring", splits=k, chunks=int(a)), backend=backend)
            assert [r.finish_ns for r in res.ranks] == [want] * 8, (k, a)


def test_local_mem_bw_row(tmp_path: Path) -> None:
    for bw, want in FIG["local_mem_bw"].items():
        mem = None if bw == "absent" else int(bw)
        res = simulate_astra2(*_inputs(tmp_path, "Ring", splits=1, chunks=1, mem_bw=mem))
        assert res.finish_ns == want, bw


def test_switch_figures(tmp_path: Path) -> None:
    for algo, by in FIG["switch"].items():
        for backend, want in by.items():
            res = simulate_astra2(*_inputs(tmp_path, "Switch", splits=1, chunks=1, algo=algo), backend=backend)
            assert res.finish_ns == want, (algo, backend)


#: The anchors replayed here: those of at most this many events (227 of the 257 that 2.x finishes; ~5 s). The 30
#: larger ones are replayed by benchmarks/astra2_anchors.py, which prints how many differ.
MAX_TEST_EVENTS = 20_000


def _anchor_cases() -> list[dict]:
    doc = json.loads((DATA / "anchors.json").read_text())
    return [c for c in doc["cases"] if c["astra2_finish_ns"] is not None and c["codesign_events"] <= MAX_TEST_EVENTS]


def test_random_anchors_of_rebuilt_astra2_every_rank(tmp_path: Path) -> None:
    cases = _anchor_cases()
    assert len(cases) >= 200
    wrong = []
    for c in cases:
        d = tmp_path / c["name"]
        d.mkdir()
        (d / "n.yml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in c["network"].items()))
        (d / "s.json").write_text(json.dumps(c["system"]))
        data = program_trace(c["program"])
        for r in range(len(c["astra2_finish_ns"])):
            (d / f"w.{r}.et").write_bytes(data)
        got = [r.finish_ns for r in simulate_astra2(str(d / "n.yml"), str(d / "s.json"), str(d / "w"),
                                                     backend=c["backend"]).ranks]
        if got != c["astra2_finish_ns"]:
            wrong.append(c["name"])
    assert not wrong


def test_one_point_zero_json_network_is_named_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    net, system, prefix = _inputs(tmp_path, "Ring", splits=1, chunks=1)
    v1 = Path(__file__).parent / "data" / "astra" / "network" / "sample_Switch.json"
    assert main(["simulate", "--astra2-network", str(v1), "--astra2-system", system, "--astra2-workload", prefix]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ASTRA-sim 1.0 analytical network" in err and "topology: [Ring]" in err


def test_bad_yaml_value_names_file_line_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    net, system, prefix = _inputs(tmp_path, "Ring", splits=1, chunks=1)
    Path(net).write_text("topology: [ Ring ]\nnpus_count: [ 1 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    assert main(["simulate", "--astra2-network", net, "--astra2-system", system, "--astra2-workload", prefix]) == 2
    err = capsys.readouterr().err
    assert f"{net}:2: npus_count[0]: expected a whole number > 1" in err


def test_unknown_system_key_is_a_warning_as_in_2x(tmp_path: Path) -> None:
    net, system, prefix = _inputs(tmp_path, "Ring", splits=1, chunks=1)
    doc = json.loads(Path(system).read_text())
    Path(system).write_text(json.dumps({**doc, "no-such-key": 3}))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert simulate_astra2(net, system, prefix).finish_ns == 43025
    assert any(issubclass(x.category, InputWarning) and "no-such-key" in str(x.message) for x in w)


def test_missing_rank_trace_and_aware_multi_dim_are_refused(tmp_path: Path) -> None:
    net, system, prefix = _inputs(tmp_path, "Ring", splits=1, chunks=1)
    Path(f"{prefix}.7.et").unlink()
    with pytest.raises(SpecError, match="no trace ar.7.et"):
        simulate_astra2(net, system, prefix)
    Path(net).write_text("topology: [ Ring, Ring ]\nnpus_count: [ 2, 4 ]\nbandwidth: [ 50, 50 ]\nlatency: [ 1, 1 ]\n")
    Path(f"{prefix}.7.et").write_bytes(collective_trace(0, 1 << 20))
    with pytest.raises(SpecError, match="1 algorithm.s. for a 2-dimensional network"):
        simulate_astra2(net, system, prefix)
    doc = json.loads(Path(system).read_text())
    Path(system).write_text(json.dumps({k: v * 2 if k.endswith("implementation") else v for k, v in doc.items()}))
    assert simulate_astra2(net, system, prefix).finish_ns > 0
    with pytest.raises(SpecError, match="one dimension only"):
        simulate_astra2(net, system, prefix, backend="congestion-aware")


def test_one_collective_at_a_time_per_npu(tmp_path: Path) -> None:
    """Two independent all-reduces: 2.x's HardwareResource runs them one after the other (1.0 overlapped them)."""
    net, system, prefix = _inputs(tmp_path, "Ring", splits=1, chunks=1)
    two = program_trace([{"id": i, "comm_type": 0, "comm_size": 1 << 20} for i in (0, 1)])
    for r in range(8):
        Path(f"{prefix}.{r}.et").write_bytes(two)
    assert simulate_astra2(net, system, prefix).finish_ns == 2 * 43025


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    net, system, prefix = _inputs(tmp_path, "Switch", splits=1, chunks=1, algo="direct")
    assert main(["simulate", "--astra2-network", net, "--astra2-system", system, "--astra2-workload", prefix,
                 "--backend", "congestion-aware", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["finish_time_ns"] == 41329
    assert [r["rank"] for r in doc["ranks"]] == list(range(8))
    assert all(r["finish_time_ns"] == 41329 for r in doc["ranks"])


def test_every_astra2_example_micro_benchmark(tmp_path: Path) -> None:
    """2.x's examples/: each collective on 4, 8 and 16 NPUs (Ring_<n>npus, Ring_4chunks), both backends."""
    doc = json.loads((DATA / "examples.json").read_text())
    assert len(doc["runs"]) == 24
    system = tmp_path / "Ring_4chunks.json"
    system.write_text(json.dumps(doc["system"]))
    for run in doc["runs"]:
        n = run["npus"]
        net = tmp_path / f"Ring_{n}npus.yml"
        net.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in {**doc["network"], "npus_count": [n]}.items()))
        for r in range(n):
            (tmp_path / f"w.{r}.et").write_bytes(collective_trace(run["comm_type"], run["comm_size"]))
        got = simulate_astra2(str(net), str(system), str(tmp_path / "w"), backend=run["backend"])
        assert [r.finish_ns for r in got.ranks] == run["astra2_finish_ns"], run["name"]
