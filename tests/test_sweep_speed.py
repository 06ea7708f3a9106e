"""The fast path of sweeps (families of points that differ only in budgets share the master, the replays, the
cuts and answers; points run in batches) gives the answers of solving each point alone, within the MIP gap;
the progress bar's text and when it shows. Timings are benchmarks/sweep_throughput.py's, not asserted here."""
from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.cli.progress import ProgressBar, format_progress
from codesign.errors import InfeasibleError
from codesign.explore.points import PointTask, batches
from codesign.explore.sweep import VALIDATE, plan, run_plan
from codesign.milp.highs import CompiledModel
from codesign.milp.master import Evaluation, Master, fits_budgets
from codesign.pipeline.solve import Family, model_data, solve
from codesign.problem.load import load_problem

ROOT = Path(__file__).resolve().parent.parent
QUICK = str(ROOT / "problems" / "quickstart.yaml")
#: What a point's answer is at one design: the same, bit for bit, on the fast path and alone.
DESIGN = ("area_mm2", "power_w", "sram_bytes", "alu_rate_bytes_per_s", "dma_bandwidth_bytes_per_s", "compute_time_s",
          "exposed_comm_s", "simulated_s")


def _alone(problem) -> dict:
    """A point solved by itself, as ``codesign solve`` would (no family), in the sweep's row terms."""
    from codesign.explore.points import solution_row
    try:
        sol = solve(problem)
    except InfeasibleError:
        return {"status": "infeasible"}
    row = solution_row(sol)
    row["simulated_s"] = VALIDATE.fn(problem, sol)["simulated_s"]
    return row


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(area=st.lists(st.sampled_from(["0.5mm^2", "0.8mm^2", "1.2mm^2", "2mm^2", "2.35mm^2", "3mm^2", "5mm^2"]),
                     min_size=1, max_size=4, unique=True),
       power=st.sampled_from([None, "1W", "2.5W"]),
       bandwidth=st.lists(st.sampled_from(["10GB/s", "25GB/s", "80GB/s"]), min_size=1, max_size=2, unique=True))
def test_a_sweep_on_the_fast_path_answers_as_each_point_alone(area, power, bandwidth):
    params = {"topology.dims[1].bandwidth": bandwidth, "engine.area_budget": area}
    if power is not None:
        params["engine.power_budget"] = [power]
    pl = plan(QUICK, params, checks=[VALIDATE])
    df = run_plan(pl, executor="serial")  # batches of one family each, families kept in this process
    for pt, (_, row) in zip(pl.points, df.iterrows()):
        same_answer(row, _alone(pt.problem), pt.problem.solver.mip_gap, pt.values)


def same_answer(row, alone: dict, gap: float, where) -> None:
    """``row`` (a family member's) answers as ``alone`` does: the same status; periods within the MIP gap
    of each other, each above the other's bound (both bound the same problem); at the same period, the same
    design and validation, bit for bit; a point settled by another member's answer says so."""
    assert row["status"] == alone["status"], where
    if alone["status"] == "infeasible":
        return
    a, b = row["iteration_time_s"], alone["iteration_time_s"]
    assert abs(a - b) <= gap * max(a, b), (where, a, b)
    assert row["bound_s"] <= b * (1 + 1e-9) and alone["bound_s"] <= a * (1 + 1e-9), where
    assert row["gap"] <= gap + 1e-12 and row["simulated_s"] == a, where
    if a == b:
        for c in DESIGN:
            assert row[c] == alone[c], (where, c, row[c], alone[c])
    if row["master_solves"] == 0:
        assert row["evaluations"] == 0 and "proven by the solve under budgets at least" in row["error"], where


def _lp(master: Master):
    lp = master.compiled.h.getLp()
    return [np.asarray(x) for x in (lp.col_cost_, lp.col_lower_, lp.col_upper_, lp.row_lower_, lp.row_upper_,
                                    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_)] + \
        [np.asarray(lp.integrality_)]


def test_a_restarted_master_holds_the_model_a_fresh_build_compiles():
    p = load_problem(QUICK)
    other = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=2.35))
    used = Master(model_data(p))
    used.solve(p.solver, 10)
    used.add_evaluation(Evaluation({"sram": 1, "alu": 0, "dma": 1}, 500.0))  # a cut, which the restart drops
    used.restart(model_data(other))
    fresh = Master(model_data(other))
    fresh.compiled = CompiledModel(fresh.model)  # what its first solve compiles
    for a, b in zip(_lp(used), _lp(fresh)):  # the same model, before HiGHS runs
        assert a.shape == b.shape and np.array_equal(a, b)
    assert used.compiled.rows == fresh.compiled.rows and len(used.model.visited) == 0
    x, y = used.solve(p.solver, 10), fresh.solve(p.solver, 10)
    assert (x.status, x.objective, x.bound) == (y.status, y.objective, y.bound)
    assert list(used.compiled.h.getSolution().col_value) == list(fresh.compiled.h.getSolution().col_value)
    with pytest.raises(ValueError, match="power_budget"):  # a budget the build did not have is refused
        capped = dataclasses.replace(other, engine=dataclasses.replace(other.engine, power_budget_w=3.0))
        used.restart(model_data(capped))


def test_a_master_restarted_for_tighter_budgets_answers_as_a_fresh_one():
    """Options the member's budgets rule out beyond the build's are held at 0: each master solve, the
    tie-break and the cuts give what a master built for the member gives."""
    p = load_problem(QUICK)
    loose = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=5.0))
    tight = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=0.8))
    from codesign.milp.master import unusable
    assert set(unusable(tight.engine)) > set(unusable(loose.engine))
    used = Master(model_data(loose))
    used.solve(p.solver, 10)
    used.restart(model_data(tight))
    fresh = Master(model_data(tight))
    for cut in (None, Evaluation({"sram": 0, "alu": 0, "dma": 0}, 900.0)):
        if cut is not None:
            used.add_evaluation(cut)
            fresh.add_evaluation(cut)
        x, y = used.solve(p.solver, 10), fresh.solve(p.solver, 10)
        assert (x.status, x.objective) == (y.status, y.objective) and abs(x.bound - y.bound) <= 1e-9 * y.objective
        from codesign.pipeline.search import choice_from
        assert choice_from(used) == choice_from(fresh)
        t = x.objective
        assert used.smallest_at(p.solver, t, 10) and fresh.smallest_at(p.solver, t, 10)
        assert choice_from(used) == choice_from(fresh)
    with pytest.raises(ValueError, match="ruled out"):  # a looser member cannot restart a tight build
        fresh.restart(model_data(loose))


def test_family_membership_and_masters():
    p = load_problem(QUICK)
    fam = Family(p)
    budget = lambda **kw: dataclasses.replace(p, engine=dataclasses.replace(p.engine, **kw))  # noqa: E731
    assert fam.admits(p) and fam.admits(budget(area_budget_mm2=0.8)) and fam.admits(budget(power_budget_w=9.0))
    assert not fam.admits(dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, chunks=2)))
    assert not fam.admits(p, extra=lambda m, q: None)       # a hook's changes cannot be re-applied
    assert not Family.eligible(dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="optimize")))
    # one master per set of budgets and of options they rule out; the replays are the family's (each budget
    # here larger than the one before it or not below it in every budget, so no answer settles another's)
    solve(budget(power_budget_w=9.0), family=fam)
    for b in (2.5, 0.8, 3.0, 0.9):
        solve(budget(area_budget_mm2=b), family=fam)
    # one per set of budgets: 0.8 and 0.9, which rule out the large options, restarted the build at 2.5 with
    # them held at 0
    assert len(fam.masters) == 2
    (area_only,) = [m for k, m in fam.masters.items() if k[:2] == (False, True)]
    assert area_only.ruled_out == frozenset() and area_only.md.problem.engine.area_budget_mm2 == 0.9


def test_members_share_one_master_and_each_design_s_replay():
    p = load_problem(QUICK)
    fam = Family(p)
    first = solve(p, family=fam)
    (master,) = fam.masters.values()
    # a budget the first answer does not fit: solved, on the same master restarted, its designs' replays the
    # family's (the first answer's design among them, evaluated once)
    tight = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=0.99 * first.area_mm2))
    second = solve(tight, family=fam)
    assert second.master_solves > 0 and second.area_mm2 < first.area_mm2
    assert list(fam.masters.values()) == [master] and master.compiled is not None
    assert second.sim is fam.replays[tuple(sorted(second.choice.items()))][2].sim
    assert first.sim is fam.replays[tuple(sorted(first.choice.items()))][2].sim
    # a budget of the answer's area as written (2.9 mm^2 against a sum of 2.9000000000000004): the answer fits
    written = float(f"{first.area_mm2:.6g}")
    assert written < first.area_mm2
    assert solve(dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=written)),
                 family=fam).master_solves == 0


def test_an_answer_settles_the_smaller_budgets_it_fits_and_no_others():
    from codesign.explore.points import solution_row
    p = load_problem(QUICK)
    at = lambda **kw: dataclasses.replace(p, engine=dataclasses.replace(p.engine, **kw))  # noqa: E731
    fam = Family(p)
    big = solve(at(area_budget_mm2=3.0), family=fam)
    assert big.status == "optimal" and big.master_solves > 0
    fits = solve(at(area_budget_mm2=big.area_mm2, power_budget_w=big.power_w), family=fam)
    assert fits.master_solves == 0 and fits.evaluations == 0 and any("proven by the solve" in n for n in fits.notes)
    assert (fits.choice, fits.iteration_time_s, fits.bound_s, fits.status) == (
        big.choice, big.iteration_time_s, big.bound_s, big.status)
    below = at(area_budget_mm2=0.999 * big.area_mm2)   # the answer no longer fits: solved
    larger = at(area_budget_mm2=3.5)                   # designs the answer's solve never saw: solved
    for q in (below, larger):
        got = solve(q, family=fam)
        assert got.master_solves > 0, q.engine.area_budget_mm2
        row, alone = solution_row(got), _alone(q)
        row["simulated_s"] = VALIDATE.fn(q, got)["simulated_s"]
        same_answer(row, alone, p.solver.mip_gap, q.engine.area_budget_mm2)
    # a member's search holds only the family's designs within its budgets (as its master's own proposals
    # are), with their cuts: below the first answer's area, some of them and not that one
    from codesign.pipeline.solve import build
    for q in (below, at(area_budget_mm2=0.9)):
        fitting = sum(fits_budgets(q, ev.choice) for ev, _, _ in fam.replays.values())
        assert (0 < fitting < len(fam.replays)) if q is below else fitting == 0
        b = build(q, family=fam)
        assert b.search.known == len(b.search.visits) == fitting
        assert all(fits_budgets(q, v.choice) for v in b.search.visits)
        assert len(b.master.evaluations) == fitting
        fam.keep(b.master)


def test_a_hinted_design_is_evaluated_before_the_first_master_solve():
    p = load_problem(QUICK)
    alone = solve(p)
    fam = Family(p)
    fam.hint([{"sram": 0}, {"sram": 9, "alu": 0, "dma": 0}, dict(alone.choice)])  # not designs of it: ignored
    assert fam.hints == [alone.choice]
    got = solve(p, family=fam)
    assert (got.choice, got.iteration_time_s, got.status) == (alone.choice, alone.iteration_time_s, "optimal")
    assert next(iter(fam.replays)) == tuple(sorted(alone.choice.items()))  # the first design replayed


def test_a_new_family_is_hinted_with_the_designs_the_last_one_proposed_not_its_hints():
    """``Family.proposed``: the designs its searches evaluated, in order, not those it was hinted. A worker's
    next family gets those (after the latest answers) and replays them before its first master solve."""
    from codesign.explore import points
    p, slow = (pt.problem for pt in plan(QUICK, {"topology.dims[1].bandwidth": ["25GB/s", "5GB/s"]}).points)
    first = Family(p)
    hinted = {"sram": 0, "alu": 0, "dma": 0}
    first.hint([hinted])
    solve(p, family=first)
    assert first.proposed() and hinted not in first.proposed()
    assert [dict(k) for k in first.replays][1:] == first.proposed()  # the hint first, then the search's
    points.run_batch(points.BatchTask("k", (), sweep="test"))  # a new sweep: the process forgets its families
    try:
        points._families.append(first)
        second = points._family(PointTask("k", slow))
        assert second is not first and second.hints[-len(first.proposed()):] == first.proposed()
        got = solve(slow, family=second)
        alone = solve(slow)
        assert (got.choice, got.iteration_time_s, got.status) == (alone.choice, alone.iteration_time_s, alone.status)
        fitting = [tuple(sorted(c.items())) for c in second.hints if fits_budgets(slow, c)]
        assert list(second.replays)[:len(fitting)] == fitting  # replayed before the first master solve
    finally:
        points.run_batch(points.BatchTask("k", (), sweep="other"))  # this test's family leaves the process


def test_hints_take_at_most_half_the_time_a_member_has_left(monkeypatch):
    """A family replays its hints before a member's first master solve, but stops once half the time the
    member had left is gone, so slow replays under a tight time limit leave the search time of its own."""
    import itertools
    import time

    from codesign.pipeline.solve import build
    p = load_problem(QUICK)
    fam = Family(p)
    designs = [dict(zip(fam.md.space, c)) for c in itertools.product(*(range(len(o)) for o in fam.md.space.values()))]
    fam.hint(designs)
    assert len(fam.hints) == 8
    real = Family.evaluator

    def slow(self, md):
        evaluate = real(self, md)

        def each(choice):
            time.sleep(0.25)
            return evaluate(choice)
        return each
    monkeypatch.setattr(Family, "evaluator", slow)
    t0 = time.perf_counter()
    b = build(p, family=fam, time_limit=2.0, started=t0)
    assert 1 <= len(fam.replays) <= 4  # 0.25 s each, within about 1 s of the 2
    assert b.search.known == len(fam.replays) and time.perf_counter() - t0 < 1.9


def test_two_builds_of_one_family_never_share_a_master():
    """A kept master leaves the family while a build holds it: built side by side, each member answers
    under its own budgets (a shared master's budget rows would be the last build's)."""
    from codesign.pipeline.solve import assign, build, run
    p = load_problem(QUICK)
    tight = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=2.0))  # same key, other answer
    fam = Family(p)
    solve(p, family=fam)          # the family keeps a compiled master
    loose_b, tight_b = build(p, family=fam), build(tight, family=fam)
    assert loose_b.master is not tight_b.master
    loose, tight_s = assign(loose_b, run(loose_b)), assign(tight_b, run(tight_b))
    assert (loose.choice, loose.iteration_time_s) == (solve(p).choice, solve(p).iteration_time_s)
    assert (tight_s.choice, tight_s.iteration_time_s) == (solve(tight).choice, solve(tight).iteration_time_s)


def test_batches_cut_families_only_where_that_shortens_the_sweep():
    from codesign.explore.points import SETUP, busiest
    sizes = lambda out: [len(b.tasks) for b in out]  # noqa: E731
    fives = [PointTask(f"k{i}", None) for i in range(50)]  # five families of ten (ResNet-50's sweep)
    tens = lambda t: int(t.key[1:]) // 10  # noqa: E731
    out = batches(fives, tens, workers=2)
    assert sizes(out) == [10, 10, 10, 10, 5, 5]  # one family in halves: 25 points and 3 starts each
    assert busiest(out, 2, SETUP) == 25 + 3 * SETUP < busiest(batches(fives, tens, 2, setup=float("inf")), 2, SETUP)
    one = batches(fives, tens, workers=1)  # one worker: nothing to gain from cutting (the five joined in four)
    assert all(len({tens(t) for t in b.tasks}) == len(b.tasks) // 10 for b in one) and sum(sizes(one)) == 50
    assert busiest(batches(fives, tens, workers=2, setup=0.0), 2) == 25  # free starts: an even share
    two = lambda t: int(t.key[1:]) // 25  # noqa: E731  (two families of 25 on four workers: both cut,
    assert sizes(batches(fives, two, workers=4)) == [13, 13, 12, 12]  # though cutting one alone gains nothing)
    assert sizes(batches(fives, lambda t: 0, workers=8)) == [7, 7, 6, 6, 6, 6, 6, 6]
    hundred = [PointTask(f"{f}/{i}", None) for f in range(100) for i in range(100)]  # on 64 workers: all in 3
    assert sizes(batches(hundred, lambda t: t.key.split("/")[0], workers=64)) == [34] * 100 + [33] * 200
    # twenty whole families of two on two workers: joined into eight runs of consecutive families
    pairs = batches(fives[:40], lambda t: int(t.key[1:]) // 2, workers=2)
    assert sizes(pairs) == [6, 6, 6, 6, 4, 4, 4, 4]
    assert sorted(t.key for b in pairs for t in b.tasks) == sorted(t.key for t in fives[:40])
    for b in pairs:  # each a run of whole, consecutive families in the plan's order
        ks = [int(t.key[1:]) for t in b.tasks]
        assert ks == list(range(ks[0], ks[0] + len(ks))) and ks[0] % 2 == 0 and len(ks) % 2 == 0
    backwards = batches(fives, tens, workers=2, order=lambda t: -int(t.key[1:]))
    assert [int(t.key[1:]) for t in backwards[0].tasks] == [19, 18, 17, 16, 15, 14, 13, 12, 11, 10]
    assert [[int(t.key[1:]) for t in b.tasks] for b in backwards[-2:]] == [[9, 8, 7, 6, 5], [4, 3, 2, 1, 0]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=12), st.integers(1, 6), st.sampled_from([0.0, 1.0, 4.0]))
def test_batches_are_whole_families_or_their_equal_parts(sizes, workers, setup):
    """Every point in one batch, batches largest first; either every batch is of one family, a family cut
    only into equal parts (within one point), or, where there are more whole families than
    ``BATCHES_PER_WORKER`` a worker, at most that many batches, each a run of whole consecutive families."""
    from codesign.explore.points import BATCHES_PER_WORKER, _span, busiest
    family = {}
    for f, n in enumerate(sizes):
        family.update({f"f{f}p{i}": f for i in range(n)})
    tasks = [PointTask(k, None) for k in family]
    out = batches(tasks, lambda t: family[t.key], workers, setup=setup)
    assert sorted(t.key for b in out for t in b.tasks) == sorted(family)
    assert [len(b.tasks) for b in out] == sorted((len(b.tasks) for b in out), reverse=True)
    if any(len({family[t.key] for t in b.tasks}) > 1 for b in out):  # joined
        assert len(sizes) > BATCHES_PER_WORKER * workers and len(out) <= BATCHES_PER_WORKER * workers
        # and only where the busiest worker's estimated load, a start for each family, does not rise
        joined = _span([len(b.tasks) + setup * len({family[t.key] for t in b.tasks}) for b in out], workers)
        assert joined <= busiest(batches(tasks, lambda t: family[t.key], workers, setup=float("inf")), workers,
                                 setup) + 1e-9
        for b in out:
            fs = [family[t.key] for t in b.tasks]
            assert fs == sorted(fs) and set(fs) == set(range(fs[0], fs[-1] + 1))
            assert all(fs.count(f) == sizes[f] for f in set(fs))  # whole families
        return
    cut = {}
    for b in out:
        cut.setdefault(family[b.tasks[0].key], []).append(len(b.tasks))
    assert all(max(v) - min(v) <= 1 for v in cut.values())
    whole = batches(tasks, lambda t: family[t.key], workers, setup=float("inf"))
    where = {}
    for n, b in enumerate(whole):
        for t in b.tasks:
            where.setdefault(family[t.key], set()).add(n)
    assert all(len(v) == 1 for v in where.values())  # never cut


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.integers(1, 4), st.sampled_from([0.0, 1.0, 4.0]))
def test_batches_come_near_the_best_cutting(sizes, workers, setup):
    """The estimated sweep within 25% of the shortest any cutting into near-equal parts gives (every one
    tried, each sent out the same way): 1.2 at worst in 3,000 random cases when the rule was set."""
    import heapq
    import itertools

    from codesign.explore.points import busiest
    family = {f"f{f}p{i}": f for f, n in enumerate(sizes) for i in range(n)}
    out = batches([PointTask(k, None) for k in family], lambda t: family[t.key], workers, setup=setup)
    best = float("inf")
    for parts in itertools.product(*(range(1, n + 1) for n in sizes)):
        loads = [0.0] * workers
        for b in sorted((n // k + (i < n % k) for n, k in zip(sizes, parts) for i in range(k)), reverse=True):
            heapq.heapreplace(loads, loads[0] + b + setup)
        best = min(best, max(loads))
    assert busiest(out, workers, setup) <= 1.25 * best


# ------------------------------------------------------------------ the progress bar

def test_progress_text():
    assert format_progress(10, 40, 5.0) == ("[######..................] 10/40 points, 2 points/s, 5 s elapsed, "
                                            "ETA 15 s")
    assert format_progress(0, 40, 0.2) == "[........................] 0/40 points, 0 s elapsed"  # no rate, no ETA yet
    assert format_progress(40, 40, 125.0, failed=2).endswith(
        "40/40 points, 2 failed, 0.32 points/s, 2 min 05 s elapsed")
    # an open-ended count sized by the share of the work done (a Pareto front's range)
    assert format_progress(3, None, 60.0, unit="solves", fraction=0.25) == (
        "[######..................] 3 solves, 0.05 solves/s, 1 min 00 s elapsed, ETA 3 min 00 s")
    assert "ETA" not in format_progress(3, None, 60.0, unit="solves")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_is_quiet_off_a_terminal_unless_asked():
    piped = io.StringIO()
    bar = ProgressBar(piped)
    for i in range(1, 41):
        bar.update(i, 40, i * 0.1)
    bar.close()
    assert piped.getvalue() == ""
    forced = io.StringIO()
    bar = ProgressBar(forced, enabled=True)
    for i in range(1, 41):
        bar.update(i, 40, i * 0.1)
    lines = forced.getvalue().splitlines()  # the first point, then one a tenth
    assert len(lines) == 11 and lines[-1].startswith("[" + "#" * 24 + "] 40/40 points")
    assert "\r" not in forced.getvalue()
    tty = _Tty()
    clock = iter(range(100))
    bar = ProgressBar(tty, clock=lambda: next(clock))  # a terminal: redrawn in place, ended by the last point
    for i in range(1, 4):
        bar.update(i, 3, float(i))
    text = tty.getvalue()
    assert text.count("\r") == 3 and text.endswith("3/3 points, 1 points/s, 3 s elapsed\x1b[K\n")


def test_cli_sweep_bar_goes_to_stderr_only_when_asked(tmp_path, capsys):
    from codesign.cli.main import main
    args = ["sweep", QUICK, "--param", "engine.area_budget=2mm^2,3mm^2", "--workers", "1", "--no-plots"]
    assert main([*args, "--out", str(tmp_path / "a.csv")]) == 0
    quiet = capsys.readouterr()
    assert "points/s" not in quiet.err and "points/s" not in quiet.out
    assert main([*args, "--out", str(tmp_path / "b.csv"), "--progress"]) == 0
    shown = capsys.readouterr()
    assert "2/2 points" in shown.err and "points/s" not in shown.out


def test_a_kept_pool_serves_the_next_sweep_and_its_workers_start_each_sweep_afresh():
    """A sweep's pools (a lane each, ``PoolRunner.run_dynamic``) are kept for the next sweep of as many workers
    (their processes run it), and the first batch of a sweep drops the families of the sweep before: the same
    sweep twice gives the same answers, each family searched again."""
    from codesign.explore import executors
    from codesign.explore.sweep import sweep
    params = {"topology.dims[1].bandwidth": "25GB/s,100GB/s", "engine.area_budget": "2mm^2,3mm^2"}

    def pids(pools) -> set[str]:
        return {str(pid) for p in pools for pid in p._processes}
    executors.shutdown_pools()
    a = sweep(QUICK, params, workers=2)
    kept = executors._warm[("lanes", 2)]
    assert len(kept) == 2 and len(pids(kept)) == 2
    b = sweep(QUICK, params, workers=2)
    assert executors._warm[("lanes", 2)] is kept
    assert {w.split(":")[1] for w in b["worker"]} == pids(kept)
    cols = ["key", "status", "iteration_time_s", "error"]
    assert a[cols].equals(b[cols])
    # each family's first point (the larger budget) searched again: a family kept from the sweep before would
    # have answered it with no master solve (``Family.proven``)
    assert (b.loc[b["engine.area_budget"] == 3.0, "master_solves"] > 0).all()
    executors.shutdown_pools()
    assert not executors._warm
    sweep(QUICK, params, workers=2)
    fresh = executors._warm[("lanes", 2)]
    assert fresh is not kept
    d = sweep(QUICK, params, workers=2, extra=_no_change)  # a hook of the caller's: pools of its own, not kept
    assert executors._warm == {("lanes", 2): fresh}
    assert not {w.split(":")[1] for w in d["worker"]} & pids(fresh)
    executors.shutdown_pools()


def _no_change(model, problem) -> None:
    """An extra hook that changes nothing (module level, so it pickles to pool workers)."""


def test_the_any_order_bound_is_skipped_only_where_asked_and_not_needed():
    problem = load_problem(QUICK)
    assert solve(problem).any_order_bound_s is not None
    assert solve(problem, order_bound=False).any_order_bound_s is None
    optimize = dataclasses.replace(problem, schedule=dataclasses.replace(problem.schedule, order="optimize"))
    sol = solve(optimize, order_bound=False)
    assert sol.any_order_bound_s is not None and any("no order replays faster" in n for n in sol.notes)
    # a member's answer that settles another member (Family.proven) brings the bound when that solve asks
    family = Family(problem)
    roomy = dataclasses.replace(problem, engine=dataclasses.replace(problem.engine, area_budget_mm2=1e3))
    first = solve(roomy, family=family, order_bound=False)
    assert first.any_order_bound_s is None
    again = solve(problem, family=family)
    assert again.master_solves == 0 and again.any_order_bound_s == solve(problem).any_order_bound_s
