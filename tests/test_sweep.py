"""Sweeps: results equal direct solves, stream to the CSV, resume after any kill, run on a pool or Dask."""
from __future__ import annotations

import csv
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

import codesign
from codesign.explore.points import Check
from codesign.explore.sweep import VALIDATE, plan, sweep

QUICK = str(ROOT / "problems" / "quickstart.yaml")
RESNET = str(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
BW = "topology.dims[1].bandwidth"


def keys_in(path: Path) -> list[str]:
    """The keys of the file's complete lines (a kill may leave a torn last line, which a rerun drops)."""
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].decode().splitlines()
    return [row["key"] for row in csv.DictReader(lines)]


def fail_at_50(model, problem) -> None:
    """An extra hook that fails at one point only (module level, so it pickles to pool workers)."""
    if problem.topology.dims[1].link_bandwidth == 50e9:
        raise RuntimeError("boom at 50 GB/s")


def die_at_50_and_2_mm2(model, problem) -> None:
    """An extra hook that kills its worker process at one point only, as a crash inside the solver would."""
    if problem.topology.dims[1].link_bandwidth == 50e9 and problem.engine.area_budget_mm2 == 2.0:
        os._exit(1)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_that_dies_fails_only_its_own_point_not_its_batch(tmp_path, workers):
    """The two budgets of a bandwidth go to the worker as one batch (one worker), or the points go out in
    lanes (two, ``lanes.Lanes``); the worker dies at one of them. Each point of a batch or chunk that failed
    as a whole runs again alone: only the point that kills its worker fails."""
    params = {BW: "25GB/s,50GB/s,100GB/s" if workers > 1 else "25GB/s,50GB/s", "engine.area_budget": "2mm^2,3mm^2"}
    df = sweep(QUICK, params, workers=workers, out=tmp_path / "r.csv", extra=die_at_50_and_2_mm2)
    assert len(df) == 2 * (1 + workers)
    bad = (df[BW] == 50e9) & (df["engine.area_budget"] == 2.0)
    assert df[bad]["status"].tolist() == ["error"] and "died" in df[bad]["error"].iloc[0]
    assert (df[~bad]["status"] != "error").all(), df[~bad][["status", "error"]]
    assert (df[(df[BW] == 50e9) & ~bad]["status"] == "optimal").all()


def test_a_dask_worker_that_dies_in_a_lane_fails_only_its_own_point(tmp_path):
    """On Dask the lanes are actors (``DaskRunner.run_dynamic``): a worker that dies takes its actor with it, the
    chunk comes back without rows, its points run again alone as Dask tasks, and only the point that kills
    its worker fails (Dask's KilledWorker, after its retries)."""
    pytest.importorskip("dask.distributed")
    params = {BW: "25GB/s,50GB/s,100GB/s", "engine.area_budget": "2mm^2,3mm^2"}
    df = sweep(QUICK, params, executor="dask", workers=2, out=tmp_path / "r.csv", extra=die_at_50_and_2_mm2)
    assert len(df) == 6
    bad = (df[BW] == 50e9) & (df["engine.area_budget"] == 2.0)
    assert df[bad]["status"].tolist() == ["error"] and "died" in df[bad]["error"].iloc[0]
    assert (df[~bad]["status"] == "optimal").all(), df[~bad][["status", "error"]]


def test_a_callers_dask_client_sweeps_in_lanes_on_kept_actors(tmp_path):
    """A caller's Client runs a sweep's lanes on actors made once and kept for its next sweep, one lane per
    worker whatever its thread count, and even when it is not Dask's default client (an actor's handle binds to
    the current client: one bound to another would wait for ever; the batches' ``as_completed`` took the default
    client's loop, and failed where there was none). The answers are those of the points solved in this
    process."""
    pytest.importorskip("dask.distributed")
    import logging
    import signal

    from dask.distributed import Client, LocalCluster

    from codesign.explore.executors import DaskRunner
    params = {BW: "10GB/s,25GB/s,60GB/s,150GB/s", "engine.area_budget": "2mm^2,3mm^2"}

    def hung(*_):
        raise TimeoutError("the sweep on a caller's client did not end")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    try:
        with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                          silence_logs=logging.CRITICAL) as cluster, Client(cluster, set_as_default=False) as client:
            other = Client(cluster)  # the default client
            assert DaskRunner(client, None).lane_count(8) == 2  # four threads, two workers: two lanes
            alone = []  # points run as Dask tasks of their own: none, when every lane's chunks come back
            run = DaskRunner.run
            DaskRunner.run = lambda self, tasks: (alone.extend(tasks), run(self, tasks))[1]
            try:
                first = sweep(QUICK, params, executor=client, out=tmp_path / "a.csv")
            finally:
                DaskRunner.run = run
            assert alone == []
            lanes = client._codesign_lanes[1]
            again = sweep(QUICK, {**params, BW: "12GB/s,30GB/s,70GB/s"}, executor=client, out=tmp_path / "b.csv")
            assert len(lanes) == 2 and all(x is y for x, y in zip(client._codesign_lanes[1], lanes))
            assert len(set(first["worker"])) == 2 and set(again["worker"]) <= set(first["worker"])

            def pause(dask_worker):  # (local: pickled by value for the worker)
                from distributed.core import Status
                dask_worker.memory_manager.memory_pause_fraction = False  # (its memory monitor would resume it)
                dask_worker.status = Status.paused
            client.run(pause, workers=[sorted(client.scheduler_info()["workers"])[1]])
            deadline = time.monotonic() + 10
            while DaskRunner(client, None).lane_count(8) != 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert DaskRunner(client, None).lane_count(8) == 1  # a paused worker gets no lane (nor would an actor)
            other.close()  # now there is no default client
            # the batches planned ahead (one worker asked for) on the same client
            batched = sweep(QUICK, {**params, BW: "15GB/s,40GB/s"}, executor=client, workers=1, out=tmp_path / "c.csv")
            assert (batched["status"] == "optimal").all() and len(batched) == 4
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    here = sweep(QUICK, params, executor="serial", out=tmp_path / "serial.csv")
    assert list(first["key"]) == list(here["key"])
    assert (first["status"] == "optimal").all() and (here["status"] == "optimal").all()
    assert np.allclose(first["iteration_time_s"], here["iteration_time_s"], rtol=1e-4)


def test_a_pool_that_breaks_while_tasks_go_in_loses_none_of_them(monkeypatch):
    """A pool can break (a worker dead) while the runner is still handing it tasks: submit then raises.
    The tasks not yet handed over are pending in a broken pool, run again in a new one, never lost and
    never a traceback. The pool here breaks at its second submit, twice, then works (it runs tasks inline)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from codesign.explore.executors import PoolRunner
    from codesign.explore.points import PointTask
    pools = []

    class Breaking:
        def __init__(self) -> None:
            self.sent, self.breaks = 0, len(pools) < 2
            pools.append(self)

        def submit(self, fn, task):
            self.sent += 1
            if self.breaks and self.sent == 2:
                raise BrokenProcessPool("a worker died")
            f = Future()
            f.set_result(fn(task))
            return f

        def shutdown(self, **kw) -> None:
            pass

    from codesign.explore import executors
    runner = PoolRunner(2, fn=lambda t: {"status": "optimal", "key": t.key})
    monkeypatch.setattr(runner, "_start", Breaking)
    monkeypatch.setattr(executors, "_warm", {})  # no pool kept from an earlier sweep: each pool is a Breaking
    tasks = [PointTask(f"k{i}", None) for i in range(5)]
    rows = dict((t.key, row) for t, row in runner.run(tasks))
    assert sorted(rows) == [t.key for t in tasks] and all(r["status"] == "optimal" for r in rows.values())
    assert len(pools) == 3  # two broken pools, then one that ran the rest


def test_pool_results_equal_direct_solves_and_a_failed_point_does_not_stop_the_sweep(tmp_path):
    params = {BW: "25GB/s,50GB/s,100GB/s", "engine.area_budget": "0.5mm^2,3mm^2"}
    df = sweep(QUICK, params, workers=2, out=tmp_path / "r.csv", extra=fail_at_50)
    assert len(df) == 6 and list(df["point"]) == list(range(6))
    by = {(r[BW], r["engine.area_budget"]): r for _, r in df.iterrows()}
    assert by[(50e9, 3.0)]["status"] == "error" and "boom at 50 GB/s" in by[(50e9, 3.0)]["error"]
    assert by[(25e9, 0.5)]["status"] == "infeasible" and "area budget 0.5 mm^2" in by[(25e9, 0.5)]["error"]
    base = codesign.load_problem(QUICK)
    for bw in (25e9, 100e9):
        dims = list(base.topology.dims)
        dims[1] = dataclasses.replace(dims[1], link_bandwidth=bw)
        topo = dataclasses.replace(base.topology, dims=tuple(dims))
        direct = codesign.solve(dataclasses.replace(base, topology=topo))
        r = by[(bw, 3.0)]
        assert r["status"] == "optimal"
        assert r["iteration_time_s"] == direct.iteration_time_s and r["area_mm2"] == direct.area_mm2
        assert r["sram_bytes"] == direct.design["sram"] and r["dma_bandwidth_bytes_per_s"] == direct.design["dma"]
    assert len(set(keys_in(tmp_path / "r.csv"))) == 6


def test_rerun_skips_done_points_and_extends_the_file(tmp_path):
    out = tmp_path / "r.csv"
    first = sweep(QUICK, {BW: "25GB/s,50GB/s"}, executor="serial", out=out)
    assert not first["cached"].any()
    again = sweep(QUICK, {BW: "25 GB/s, 50 GB/s, 100GB/s"}, executor="serial", out=out)  # other spelling, one more
    assert list(again["cached"]) == [True, True, False]
    assert list(again["iteration_time_s"][:2]) == list(first["iteration_time_s"])  # read back exactly
    # a sweep of another parameter adds its column to the same file; earlier rows keep theirs
    other = sweep(QUICK, {"engine.area_budget": "2.5mm^2"}, executor="serial", out=out)
    assert not other["cached"].any()
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and len({r["key"] for r in rows}) == 4
    assert "engine.area_budget" in rows[0] and rows[0][BW] == "25000000000.0"


def test_retry_failed_solves_error_rows_again_and_keeps_each_key_once(tmp_path):
    out = tmp_path / "r.csv"
    boom = Check("boom", ("seen",), lambda p, s: {"seen": 1.0})
    sweep(QUICK, {BW: "25GB/s,50GB/s"}, executor="serial", out=out, extra=fail_at_50, checks=[boom])
    again = sweep(QUICK, {BW: "25GB/s,50GB/s"}, executor="serial", out=out, extra=fail_at_50, checks=[boom],
                  retry_failed=True)
    assert list(again["cached"]) == [True, False] and list(again["status"]) == ["optimal", "error"]
    assert again["seen"].iloc[0] == 1.0
    assert sorted(keys_in(out)) == sorted(set(keys_in(out))) and len(keys_in(out)) == 2


def test_the_validation_step_replays_each_point_in_the_simulator():
    df = sweep(QUICK, {BW: "25GB/s,100GB/s"}, executor="serial", checks=[VALIDATE])
    assert (df["simulated_s"] > 0).all()
    rel = (df["simulated_s"] - df["iteration_time_s"]) / df["iteration_time_s"]
    assert list(rel) == pytest.approx(list(df["sim_rel_diff"])) and (rel.abs() < 0.2).all()


def test_a_torn_last_line_is_dropped_and_its_point_solved_again(tmp_path):
    out = tmp_path / "r.csv"
    sweep(QUICK, {BW: "25GB/s,50GB/s,100GB/s"}, executor="serial", out=out)
    data = out.read_bytes()
    last = data[:-1].rfind(b"\n") + 1
    out.write_bytes(data[: last + (len(data) - last) // 2])  # the last row cut in half, as a kill mid-write would
    df = sweep(QUICK, {BW: "25GB/s,50GB/s,100GB/s"}, executor="serial", out=out)
    assert int((~df["cached"]).sum()) == 1
    assert len(keys_in(out)) == 3 == len(set(keys_in(out)))
    assert out.read_bytes().endswith(b"\n")


def test_a_lambda_extra_is_refused_for_a_pool_but_runs_serially(tmp_path):
    with pytest.raises(TypeError, match="must pickle"):
        sweep(QUICK, {BW: "25GB/s"}, extra=lambda m, p: None)
    df = sweep(QUICK, {BW: "25GB/s"}, executor="serial", extra=lambda m, p: None)
    assert df["status"].iloc[0] == "optimal"


def test_a_problem_object_keeps_its_solver_profile():
    fast = codesign.load_problem(QUICK, solver_profile="fast")
    pl = plan(fast, {BW: "25GB/s"})
    assert pl.points[0].problem.solver == fast.solver
    edited = dataclasses.replace(fast, name="changed in code")
    with pytest.raises(codesign.SpecError, match="differs from its file"):
        plan(edited, {BW: "25GB/s"})


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except FileNotFoundError:
        return False


def test_sigkill_mid_sweep_then_rerun_has_every_point_exactly_once(tmp_path):
    out = tmp_path / "killed.csv"
    args = [sys.executable, "-m", "codesign", "sweep", QUICK, "--param", f"{BW}=log:5GB/s:200GB/s:20",
            "--param", "engine.area_budget=2mm^2,3mm^2", "--workers", "2", "--out", str(out), "--no-plots", "--quiet"]
    expected = {pt.key for pt in plan(QUICK, {BW: "log:5GB/s:200GB/s:20", "engine.area_budget": "2mm^2,3mm^2"}).points}
    assert len(expected) == 40
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and out.read_bytes().count(b"\n") >= 7:  # the header and at least 6 points
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"the sweep ended before it could be killed: {proc.stderr.read()!r}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done_before = keys_in(out)
        assert 6 <= len(done_before) < 40 and len(set(done_before)) == len(done_before)
        workers = {int(w.rsplit(":", 1)[1]) for w in _column(out, "worker")}
        deadline = time.monotonic() + 5  # pool workers watch the sweep and leave when it is gone
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "pool workers outlived the killed sweep"
    finally:
        if proc.poll() is None:
            proc.kill()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # only this test's own process group, if anything is left
        except ProcessLookupError:
            pass
    r = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    keys = keys_in(out)
    assert len(keys) == 40 and set(keys) == expected
    assert f"{40 - len(done_before)} run now" in r.stdout and f"{len(done_before)} from" in r.stdout


def _column(path: Path, name: str) -> list[str]:
    data = path.read_bytes()
    return [row[name] for row in csv.DictReader(data[: data.rfind(b"\n") + 1].decode().splitlines())]


def test_resnet50_sweep_on_the_local_pool_and_on_dask_give_the_same_results(tmp_path):
    """The issue's acceptance run has 50 points (CODESIGN_FULL_SWEEP=1, about a minute on 2 cores); by default
    10 of them, the first area budgets of the same grid."""
    pytest.importorskip("dask.distributed")
    full = os.environ.get("CODESIGN_FULL_SWEEP") == "1"
    params = {"topology.dims[0].bandwidth": "log:8GiB/s:128GiB/s:5",
              "engine.area_budget": "0.5mm^2:5mm^2:10" if full else "0.5mm^2,1mm^2"}
    pool = sweep(RESNET, params, workers=2, out=tmp_path / "pool.csv")
    dask = sweep(RESNET, params, executor="dask", workers=2, out=tmp_path / "dask.csv")
    assert len(pool) == (50 if full else 10)
    assert list(pool["key"]) == list(dask["key"])
    assert set(pool["worker"]) & set(dask["worker"]) == set() and len(set(dask["worker"])) <= 2
    cols = ["status", "iteration_time_s", "area_mm2", "power_w", "sram_bytes", "alu_rate_bytes_per_s",
            "dma_bandwidth_bytes_per_s", "exposed_comm_s"]
    assert pool[cols].fillna(-1).equals(dask[cols].fillna(-1))
    assert (pool["status"] == "optimal").sum() >= (45 if full else 8)


def test_cli_sweep_section_table_plots_and_one_line_errors(tmp_path):
    text = Path(QUICK).read_text() + (
        "\nsweep:\n  params:\n    topology.dims[1].bandwidth: [25 GB/s, 100 GB/s]\n  mode: one_at_a_time\n"
        "  workers: 2\n  out: out/section.csv\n")
    prob = tmp_path / "p.yaml"
    prob.write_text(text)
    r = subprocess.run([sys.executable, "-m", "codesign", "sweep", str(prob)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "2 points: 2 solved, 0 infeasible, 0 failed" in r.stdout and "optimal" in r.stdout
    png = tmp_path / "out" / "section_topology_dims_1_bandwidth.png"
    assert png.stat().st_size > 10_000 and len(keys_in(tmp_path / "out" / "section.csv")) == 2
    bad = subprocess.run([sys.executable, "-m", "codesign", "sweep", str(prob), "--param",
                          "topology.dimz[1].bandwidth=1GB/s"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert "did you mean 'dims'" in bad.stderr


def test_package_exports_the_functions_not_the_modules():
    import importlib

    import codesign
    first, second = codesign.sweep, codesign.sweep
    importlib.import_module("codesign.explore.sweep")
    assert callable(first) and first is second is codesign.sweep
    assert callable(codesign.pareto_front) and callable(codesign.shadow_prices)


@pytest.mark.parametrize("section,line,phrase", [
    ("  params:\n    topology.dims[1].bandwidth: [25 GB/s]\n  mode: random\n", 3,
     "sweep.mode: expected one of grid, one_at_a_time, got 'random'"),
    ("  params:\n    topology.dims[1].bandwidth: [25 GB/s]\n  workers: 0\n", 3, "sweep.workers: expected a whole"),
    ("  params:\n    topology.dims[1].bandwidth: [25 GB/s]\n  time_limit: 0 s\n", 3, "sweep.time_limit: expected"),
    ("  params:\n    topology.dims[1].bandwidth: [25 GB/s]\n  wokers: 2\n", 3, "sweep.wokers: unknown key 'wokers'"),
    ("  params: {}\n", 1, "sweep.params: expected a mapping {key path: values}"),
    ("  params:\n    topology.dimz[1].bandwidth: [25 GB/s]\n", "topology:",
     "topology.dimz[1].bandwidth: no key 'dimz'"),
    ("  params:\n    topology.dims[1].bandwidth: [25 GB/s, 100 GB]\n", "name: global",
     "topology.dims[1].bandwidth: expected a bandwidth such as \"25 GB/s\", got '100 GB', which is a size"),
], ids=["mode", "workers", "time-limit", "unknown-key", "no-params", "path", "value"])
def test_validate_rejects_the_sweep_sections_that_sweep_rejects(tmp_path, capsys, section, line, phrase):
    """docs/sweeps.md: 'codesign validate' checks a sweep: section with the function 'codesign sweep' uses.
    ``line``: the error's line, counted from the 'sweep:' line, or the line holding that text."""
    from codesign.cli import main

    prob = tmp_path / "p.yaml"
    base = Path(QUICK).read_text()
    prob.write_text(base + "sweep:\n" + section)
    lines = base.splitlines()
    if isinstance(line, str):
        line = next(i + 1 for i, ln in enumerate(lines) if line in ln)
    elif line is not None:
        line += len(lines) + 1
    errors = []
    for argv in (["validate", str(prob)], ["sweep", str(prob), "--out", str(tmp_path / "r.csv")]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1, err
        errors.append(err)
    assert errors[0] == errors[1]
    where = f"{prob}:{line}: " if line else f"{prob}: "
    assert errors[0].startswith(f"codesign: error: {where}{phrase}"), errors[0]
    assert not (tmp_path / "r.csv").exists()


def test_validate_reports_a_good_sweep_section(tmp_path, capsys):
    from codesign.cli import main

    prob = tmp_path / "p.yaml"
    prob.write_text(Path(QUICK).read_text() + "sweep:\n  params:\n    engine.area_budget: 1mm^2:4mm^2:4\n"
                    f"    {BW}: [25 GB/s, 50 GB/s]\n")
    assert main(["validate", str(prob)]) == 0
    out, err = capsys.readouterr()
    assert out.rstrip().endswith(f"; sweep of 8 points (grid) over engine.area_budget, {BW}") and err == ""


def test_dask_workers_that_cannot_import_the_task_code_are_one_error(tmp_path):
    """The Dask runner imports the task's module on every worker when it starts: a worker without it is one
    SpecError naming the cluster, not a traceback per point."""
    pytest.importorskip("dask.distributed")
    from codesign.errors import SpecError
    from codesign.explore.executors import DaskRunner

    def task(t):
        return {}
    task.__module__ = "codesign_not_installed_anywhere"
    with pytest.raises(SpecError, match="cannot import codesign"):
        DaskRunner("local", 1, fn=task)
