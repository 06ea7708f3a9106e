"""How the driver handles a Dask lane's answers (``executors.DaskRunner.run_dynamic``), on stand-in actors: no cluster
is started."""
from __future__ import annotations


def test_a_dask_lanes_answer_in_hand_is_kept_when_its_worker_is_then_found_gone(monkeypatch):
    """The driver checks for lost lanes while answers come in: an answer already received from a lane whose worker
    the same round finds gone is recorded, not given up and solved again."""
    import types

    from codesign.explore import executors

    class Future:
        status = "finished"

    class Call:
        def __init__(self, row):
            self.row = row

        def result(self):
            return self.row

    class Actor:
        _address, _future = "tcp://gone:1", Future()

        def run(self, task):
            return Call({"rows": [{"status": "optimal", "key": task}]})

    runner = object.__new__(executors.DaskRunner)
    runner.client = types.SimpleNamespace(_codesign_lanes=None)
    monkeypatch.setattr(runner, "_kept_lanes", lambda n: [Actor()], raising=False)
    monkeypatch.setattr(runner, "_running", lambda: [], raising=False)  # the worker has left by the check
    monkeypatch.setattr(runner, "_actors", lambda where: [], raising=False)
    monkeypatch.setattr(executors, "WATCH_S", 0.0)  # the check runs every round
    got = list(runner.run_dynamic([["chunk-1"]], lambda t, row: None))
    assert got == [("chunk-1", {"rows": [{"status": "optimal", "key": "chunk-1"}]})]
