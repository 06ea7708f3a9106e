"""A sweep's batch runs with the garbage collector's oldest threshold raised (``pacing.paced_collections``), and
the caller's threshold comes back afterwards, whatever ran meanwhile and on however many threads, unless something
set another one meanwhile."""
from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from codesign.explore import pacing, points
from codesign.explore.points import Check, PointTask, run_batch
from codesign.problem.load import load_problem

QUICK = str(Path(__file__).resolve().parent.parent / "problems" / "quickstart.yaml")


@pytest.fixture
def thresholds():
    """The process's thresholds, restored after the test (other tests must not see this one's)."""
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def _seen(problem, solution) -> dict:
    return {"oldest": gc.get_threshold()[2]}


def _sets_young(problem, solution) -> dict:
    """A check that changes the youngest threshold, as a caller's code may while a batch runs."""
    gc.set_threshold(555, *gc.get_threshold()[1:])
    return {}


def test_a_batch_runs_with_the_raised_threshold_and_restores_the_callers(thresholds):
    gc.set_threshold(500, 7, 9)
    task = PointTask("k", load_problem(QUICK), checks=(Check("seen", ("oldest",), _seen),))
    try:
        out = run_batch(points.BatchTask("k", (task, task), sweep="paced"))
        assert [r["oldest"] for r in out["rows"]] == [pacing.OLDEST_THRESHOLD] * 2
        assert all(r["status"] == "optimal" for r in out["rows"])
        assert gc.get_threshold() == (500, 7, 9)
    finally:
        run_batch(points.BatchTask("k", (), sweep="other"))  # the process forgets this test's family


def test_a_change_made_while_a_batch_runs_is_kept(thresholds):
    """A check sets the youngest threshold: it stays after the batch (only the oldest is restored), and an oldest
    threshold set inside the block stays too."""
    gc.set_threshold(500, 7, 9)
    task = PointTask("k", load_problem(QUICK), checks=(Check("young", (), _sets_young),))
    try:
        run_batch(points.BatchTask("k", (task,), sweep="paced"))
        assert gc.get_threshold() == (555, 7, 9)
    finally:
        run_batch(points.BatchTask("k", (), sweep="other"))
    with pacing.paced_collections():
        gc.set_threshold(555, 7, 42)
    assert gc.get_threshold() == (555, 7, 42)


def test_a_higher_threshold_of_the_callers_is_kept(thresholds):
    gc.set_threshold(700, 10, pacing.OLDEST_THRESHOLD * 3)
    with pacing.paced_collections():
        assert gc.get_threshold() == (700, 10, pacing.OLDEST_THRESHOLD * 3)
    assert gc.get_threshold() == (700, 10, pacing.OLDEST_THRESHOLD * 3)


def test_the_threshold_comes_back_when_the_last_of_overlapping_blocks_ends(thresholds):
    """Two threads' blocks overlap, the first to start ends first: the raised threshold stays until the second ends,
    and the first's saved threshold (not the raised one) comes back then."""
    gc.set_threshold(600, 10, 10)
    entered, release = threading.Event(), threading.Event()

    def second() -> None:
        with pacing.paced_collections():
            entered.set()
            release.wait(10)

    t = threading.Thread(target=second)
    with pacing.paced_collections():
        t.start()
        assert entered.wait(10)
    assert gc.get_threshold() == (600, 10, pacing.OLDEST_THRESHOLD)  # the second block still runs
    release.set()
    t.join(10)
    assert gc.get_threshold() == (600, 10, 10)


def test_a_front_solves_with_the_raised_threshold(thresholds, monkeypatch):
    """``codesign pareto``'s solves run paced too: its families stay alive between them."""
    from codesign.explore import pareto
    seen = []
    real = pareto.solve

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold()[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(pareto, "solve", spy)
    gc.set_threshold(700, 10, 10)
    front = pareto.pareto_front(load_problem(QUICK), points=3)
    assert len(seen) == front.solves and set(seen) == {pacing.OLDEST_THRESHOLD}
    assert gc.get_threshold() == (700, 10, 10)


def test_an_exception_in_the_block_restores_the_threshold(thresholds):
    gc.set_threshold(650, 10, 10)
    with pytest.raises(RuntimeError), pacing.paced_collections():
        assert gc.get_threshold() == (650, 10, pacing.OLDEST_THRESHOLD)
        raise RuntimeError("a point's failure")
    assert gc.get_threshold() == (650, 10, 10)
