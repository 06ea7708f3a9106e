"""Lanes: a sweep's points handed to workers as they free up, each worker walking its own run of neighbouring
points (``explore.lanes``), and the runners that keep each lane on one worker (``run_dynamic``)."""
from __future__ import annotations

import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st

import codesign.explore.lanes as lanes_module
from codesign.explore.lanes import Lanes
from codesign.explore.points import PointTask


def _tasks(sizes: list[int]) -> tuple[list[PointTask], dict[str, int]]:
    family = {f"f{f}p{i}": f for f, n in enumerate(sizes) for i in range(n)}
    return [PointTask(k, None) for k in family], family


def _drain(lanes: Lanes, seed: int, point_s: float = 0.05, first=None):
    """Hand out every chunk (after ``first``, the lanes' first ones), finishing the ones in flight in a random
    order; return the chunks per lane."""
    rnd = random.Random(seed)
    first = lanes.first() if first is None else first
    out: dict[int, list] = {lane: list(chunks) for lane, chunks in enumerate(first)}
    flight = [(lane, b) for lane, chunks in enumerate(first) for b in chunks[:1]]  # a lane runs its chunks in turn
    queued = {lane: list(chunks[1:]) for lane, chunks in enumerate(first)}
    while flight:
        lane, b = flight.pop(rnd.randrange(len(flight)))
        nxt = lanes.follow(b, {"rows": [{"wall_s": point_s} for _ in b.tasks]})
        if nxt is not None:
            queued[lane].append(nxt)
            out[lane].append(nxt)
        if queued[lane]:
            flight.append((lane, queued[lane].pop(0)))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=10), st.integers(1, 5), st.integers(0, 10**6),
       st.sampled_from([0.001, 0.05, 1.0]), st.sampled_from([1, 2, 3]))
def test_every_point_is_handed_out_once_in_runs_of_the_plan_order(sizes, workers, seed, point_s, depth):
    lanes_module.DEPTH, depth = depth, lanes_module.DEPTH
    try:
        _handed_out_once(sizes, workers, seed, point_s)
    finally:
        lanes_module.DEPTH = depth


def _handed_out_once(sizes, workers, seed, point_s):
    tasks, family = _tasks(sizes)
    lanes = Lanes(tasks, lambda t: family[t.key], workers, sweep="s")
    pos = {t.key: i for i, t in enumerate(lanes.seq)}
    out = _drain(lanes, seed, point_s)
    chunks = [b for bs in out.values() for b in bs]
    keys = [t.key for b in chunks for t in b.tasks]
    assert sorted(keys) == sorted(family) and len(keys) == len(set(keys))  # each point once
    assert len(out) == min(workers, len(tasks))
    for b in chunks:
        at = [pos[t.key] for t in b.tasks]
        assert at == list(range(at[0], at[0] + len(at))) and b.key == b.tasks[0].key and b.sweep == "s"
    # the plan's order: a family's points together, families as they first appear
    assert [family[t.key] for t in lanes.seq] == sorted(family[t.key] for t in tasks)


def test_lanes_start_at_families_and_walk_on_until_they_meet(monkeypatch):
    """Five families of ten on two workers (ResNet-50's grid): the lanes start at the first points of the
    families nearest the even split, each continues where it ended, and only where they meet is a family
    shared."""
    monkeypatch.setattr(lanes_module, "DEPTH", 1)
    tasks, family = _tasks([10] * 5)
    lanes = Lanes(tasks, lambda t: family[t.key], 2)
    first = lanes.first()
    assert [[b.key for b in chunks] for chunks in first] == [["f0p0"], ["f2p0"]]
    out = _drain(lanes, seed=1, first=first)
    for bs in out.values():
        ends = [lanes._start[b.key] for b in bs]
        walked = sum(1 for a, b in zip(bs, bs[1:]) if lanes._start[b.key] == lanes._start[a.key] + len(a.tasks))
        assert walked >= len(bs) - 2, ends  # each lane jumps at most once
    shared = {family[t.key] for bs in out.values() for b in bs for t in b.tasks}
    by_lane = [{family[t.key] for b in bs for t in b.tasks} for bs in out.values()]
    assert len(by_lane[0] & by_lane[1]) <= 1 and shared == set(range(5))


def test_chunks_aim_at_the_chunk_time_and_shrink_towards_the_end(monkeypatch):
    monkeypatch.setattr(lanes_module, "DEPTH", 2)
    tasks, family = _tasks([100])
    lanes = Lanes(tasks, lambda t: family[t.key], 2, chunk_s=0.2)
    first = lanes.first()
    assert [len(b.tasks) for chunks in first for b in chunks] == [1, 1, 1, 1]  # no point time known yet
    nxt = lanes.follow(first[0][0], {"rows": [{"wall_s": 0.01}]})
    assert len(nxt.tasks) == 20 and lanes._start[nxt.key] == 2  # 0.2 s at 10 ms a point, after the lane's last
    sizes = [len(nxt.tasks)]
    flight = [first[0][1], first[1][0], first[1][1], nxt]
    while flight:
        b = flight.pop(0)
        n = lanes.follow(b, {"rows": [{"wall_s": 0.01}] * len(b.tasks)})
        if n is not None:
            flight.append(n)
            sizes.append(len(n.tasks))
    assert sizes[-1] <= 2 and max(sizes) <= 25  # at most the points left over twice the workers


def _pid_of(task: PointTask) -> dict:
    """A pool task: which process ran it (and a worker that dies on the key ``die``)."""
    if task.key == "die":
        os._exit(3)
    return {"rows": [{"wall_s": 0.0, "pid": os.getpid()}]}


def test_a_lane_runs_on_one_worker_and_a_dead_worker_is_replaced():
    """``PoolRunner.run_dynamic``: the tasks of a lane run in one process, whatever finishes meanwhile; a
    task whose worker died comes back without rows, and its lane's next task runs on a new worker."""
    from codesign.explore.executors import PoolRunner
    from codesign.explore.points import BatchTask

    seq = {0: [f"a{i}" for i in range(6)], 1: [f"b{i}" for i in range(3)] + ["die", "b4", "b5"]}
    it = {lane: iter(keys) for lane, keys in seq.items()}
    lane_of = {}

    def task(lane: int):
        k = next(it[lane], None)
        if k is None:
            return None
        lane_of[k] = lane
        return BatchTask(k, (PointTask(k, None),))

    runner = PoolRunner(2, fn=_pid_of)
    rows = {}
    try:
        for t, row in runner.run_dynamic([[task(0), task(0)], [task(1)]], lambda t, row: task(lane_of[t.key])):
            rows[t.key] = row
    finally:
        runner.close()
    assert sorted(rows) == sorted(k for keys in seq.values() for k in keys)
    assert "rows" not in rows["die"]
    pids = {k: r["rows"][0]["pid"] for k, r in rows.items() if "rows" in r}
    assert len({pids[k] for k in seq[0]}) == 1  # lane a: one worker throughout
    assert len({pids[k] for k in ("b0", "b1", "b2")}) == 1 and pids["b4"] == pids["b5"] != pids["b0"]
    assert pids["a0"] != pids["b0"]
