"""What a person reads: times in the unit a person picks for their magnitude, lines a terminal holds, the same
names for the same things in every JSON, a headline that quotes the figure that holds, a progress line while a
long solve works; and what the field's tools read: the simulated period as a Chrome/Perfetto trace, MFU and the
split by parallelism for an LLM."""
from __future__ import annotations

import dataclasses
import io
import json
import re
import time

import pytest
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st

from codesign.cli.main import main
from codesign.cli.progress import Ticker
from codesign.spec.units import SECONDS, format_quantity, parse_quantity

QUICKSTART = str(ROOT / "problems" / "quickstart.yaml")


@given(st.floats(min_value=1e-9, max_value=1e5), st.sampled_from([4, 6]), st.booleans())
def test_a_time_is_a_plain_number_in_the_unit_of_its_magnitude(x, digits, negative):
    x = -x if negative else x
    text = format_quantity(x, SECONDS, digits)
    number, unit = text.split(" ")
    assert "e" not in number, text                       # never '1.34493e+07 us'
    assert unit in ("s", "ms", "us", "ns")
    if unit != "s":
        assert 1 <= abs(float(number)) < 1000, text     # '0.5 ms' is '500 us'; '1000 us' is '1 ms'
    assert parse_quantity(text, SECONDS) == pytest.approx(x, rel=10 ** (1 - digits))


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """`codesign solve quickstart --out DIR`: (stdout, DIR)."""
    out = tmp_path_factory.mktemp("q") / "out"
    buf = io.StringIO()
    from contextlib import redirect_stdout
    with redirect_stdout(buf):
        assert main(["solve", QUICKSTART, "--out", str(out)]) == 0
    return buf.getvalue(), out


def test_summary_lines_fit_a_terminal_and_times_read_as_a_person_writes_them(quickstart):
    import codesign
    from codesign.report.text import WIDTH, summary
    text, out = quickstart
    lines = [x for x in text.splitlines() if not x.startswith("wrote ")]  # (paths are as long as they are)
    assert all(len(x) <= WIDTH for x in lines), max(lines, key=len)
    # a 13 s iteration's objective, as an LLM's is: seconds, not 1.34493e+07 us
    problem = codesign.load_problem(QUICKSTART)
    sol = codesign.solve(problem)
    long = dataclasses.replace(sol, objective=13.4493, objective_bound=13.4, iteration_time_s=13.4493)
    shown = summary(long, problem)
    assert "objective 13.4493 s, bound 13.4 s" in shown, shown
    assert not re.search(r"\de[+-]\d", shown.replace("e+", "E")), shown


def test_simulate_json_names_the_design_as_solve_json_does(quickstart, capsys):
    _, out = quickstart
    solved = json.loads((out / "solution.json").read_text())["design"]
    capsys.readouterr()
    assert main(["simulate", QUICKSTART, "--solution", str(out / "solution.json"), "--json"]) == 0
    simulated = json.loads(capsys.readouterr().out)["design"]
    assert simulated == solved


def test_shadow_headline_quotes_the_replayed_step_not_the_dual(capsys):
    assert main(["shadow", QUICKSTART]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"one more .* saves ([\d.]+ \w+) per iteration \(replayed; ([\d.]+ \w+) at the margin\)", last)
    assert m, last
    assert main(["shadow", QUICKSTART, "--json"]) == 0
    prices = json.loads(capsys.readouterr().out)["prices"]
    best = max((p for p in prices if p["plus_step_us"] is not None), key=lambda p: p["plus_step_us"])
    assert parse_quantity(m.group(1), SECONDS) == pytest.approx(best["plus_step_us"] * 1e-6, rel=1e-3)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_ticker_shows_a_line_on_a_terminal_after_its_delay_and_erases_it():
    tty = _Terminal()
    with Ticker("solving p.yaml", tty, after_s=0.0, every_s=0.01) as t:
        t.stage("searching")
        time.sleep(0.1)
    text = tty.getvalue()
    assert "\rsolving p.yaml: searching, 0 s elapsed" in text
    assert text.endswith("\r\x1b[K")                     # erased: the report follows
    pipe = io.StringIO()
    with Ticker("solving p.yaml", pipe, after_s=0.0, every_s=0.01):
        time.sleep(0.05)
    assert pipe.getvalue() == ""                          # a pipe or a log never gets it
    quick = _Terminal()
    with Ticker("solving p.yaml", quick, after_s=5.0):
        pass
    assert quick.getvalue() == ""                         # a short solve prints nothing


def test_trace_json_is_a_chrome_trace_of_the_replayed_period(quickstart):
    from codesign.problem.load import load_problem
    _, out = quickstart
    doc = json.loads((out / "trace.json").read_text())
    period_us = json.loads((out / "solution.json").read_text())["validation"]["simulated_s"] * 1e6
    p = load_problem(QUICKSTART)
    events = doc["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert list(threads.values()) == ["compute"] + [f"{d.name} (dim{i})" for i, d in enumerate(p.topology.dims)]
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["tid"] for e in spans} == set(threads)
    for e in spans:
        assert {"name", "cat", "ts", "dur", "pid", "tid"} <= set(e)
        assert -1e-6 <= e["ts"] and e["ts"] + e["dur"] <= period_us * (1 + 1e-9) and e["dur"] >= 0
    for tid in threads:                                   # a resource serves one thing at a time
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if e["tid"] == tid)
        assert all(a[1] <= b[0] + 1e-6 for a, b in zip(mine, mine[1:])), tid
    busy = sum(e["dur"] for e in spans if e["tid"] == 0)
    compute_us = json.loads((out / "solution.json").read_text())["compute_time_s"] * 1e6
    assert busy == pytest.approx(compute_us, rel=1e-6)


def test_trace_json_is_one_of_the_files_out_guards(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "trace.json").write_text("mine")
    assert main(["solve", QUICKSTART, "--out", str(out)]) == 2
    assert "trace.json" in capsys.readouterr().err
    assert (out / "trace.json").read_text() == "mine"


def _small_gpt(tmp_path, **args):
    import yaml
    doc = yaml.safe_load((ROOT / "problems" / "llm" / "gpt_7b_ace_64npu.yaml").read_text())
    doc["workload"]["args"].update(layers=4, hidden=512, heads=8, seq_len=256, vocab=1000, micro_batch=1,
                                   global_batch=32, **args)
    doc["solver"] = {"profile": "fast"}
    path = tmp_path / "gpt.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_mfu_is_the_builders_model_flops_over_time_npus_and_peak(tmp_path):
    """Without pipeline parallelism every NPU runs the program simulated: its MFU times T x NPUs x peak is the
    builder's own count of the model's FLOPs (recomputation off: the count then has none)."""
    import codesign
    from codesign.report.llm import llm_report
    from codesign.workload import llm as L
    args = dict(tensor_parallel=4, pipeline_parallel=1, data_parallel=16, tensor_dims=[0], pipeline_dims=[],
                data_dims=[1, 2], recompute="none", zero=0)
    p = codesign.load_problem(str(_small_gpt(tmp_path, **args)))
    sol = codesign.solve(p)
    r = llm_report(sol, p)
    c = L.config(4, 512, 8, 256, 1000, 0, 1, 32, 4, 1, 16, (0,), (), (1, 2), "1f1b", "none", 0, 2.0, 2.0, 2.0, None)
    total = r.mfu * sol.iteration_time_s * p.topology.npus * p.npu.compute_flops
    assert total == pytest.approx(L.model_flops_per_iteration(c), rel=1e-9)
    assert 0 < r.mfu < 1
    assert r.in_flight_s["pipeline"] == 0 and r.in_flight_s["tensor"] > 0 and r.in_flight_s["data"] > 0
    for k, v in r.in_flight_s.items():
        assert 0 <= r.exposed_s[k] <= v <= sol.iteration_time_s * 2   # (a collective may run into the next)
    from codesign.report.text import summary
    text = summary(sol, p)
    assert f"MFU             {100 * r.mfu:.1f}%" in text and "parallelism     collectives in flight: tensor" in text


def test_no_mfu_for_a_workload_that_is_no_llm(quickstart):
    text, _ = quickstart
    assert "MFU" not in text


def test_solve_json_of_an_llm_carries_its_mfu(tmp_path, capsys):
    path = _small_gpt(tmp_path, tensor_parallel=4, pipeline_parallel=1, data_parallel=16, tensor_dims=[0],
                      pipeline_dims=[], data_dims=[1, 2], recompute="none", zero=0)
    assert main(["solve", str(path), "--json", "--no-validate"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert 0 < doc["llm"]["mfu"] < 1 and set(doc["llm"]["comm_in_flight_s"]) == {"tensor", "pipeline", "data"}


def test_simulate_out_writes_the_trace_too(quickstart, tmp_path, capsys):
    _, out = quickstart
    sim = tmp_path / "sim"
    assert main(["simulate", QUICKSTART, "--solution", str(out / "solution.json"), "--out", str(sim)]) == 0
    doc = json.loads((sim / "trace.json").read_text())
    assert any(e["ph"] == "X" for e in doc["traceEvents"])


def test_mfu_of_a_pipelined_job_counts_every_stage_once(tmp_path):
    """With pipeline parallelism the simulated NPU is the last stage's, which holds the head: the job's MFU
    still counts the whole model once (every stage's layers, the head once) over all NPUs, and recomputation
    (selective here) adds nothing to it."""
    import codesign
    from codesign.report.llm import llm_report
    from codesign.workload import llm as L
    args = dict(tensor_parallel=4, pipeline_parallel=2, data_parallel=8, tensor_dims=[0], pipeline_dims=[1],
                data_dims=[2], recompute="selective", zero=0)
    p = codesign.load_problem(str(_small_gpt(tmp_path, **args)))
    sol = codesign.solve(p)
    r = llm_report(sol, p)
    c = L.config(4, 512, 8, 256, 1000, 0, 1, 32, 4, 2, 8, (0,), (1,), (2,), "1f1b", "none", 0, 2.0, 2.0, 2.0, None)
    total = r.mfu * sol.iteration_time_s * p.topology.npus * p.npu.compute_flops
    assert total == pytest.approx(L.model_flops_per_iteration(c), rel=1e-9)
    assert 0 < r.mfu < 1
