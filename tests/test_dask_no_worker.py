"""A Dask sweep whose cluster has no worker left says so and stops, instead of waiting silently for ever."""
from __future__ import annotations

import logging
import time

import pytest

from codesign.errors import SolverError


def test_a_cluster_without_workers_stops_with_a_message(monkeypatch) -> None:
    """A scheduler with no worker: the tasks submitted to it would wait for ever; past NO_WORKER_S (here 0.3 s,
    checked every 0.1 s) they are cancelled and the run raises SolverError naming the cluster."""
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client, LocalCluster

    from codesign.explore import executors
    monkeypatch.setattr(executors, "NO_WORKER_S", 0.3)
    monkeypatch.setattr(executors, "WATCH_S", 0.1)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None, silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster, set_as_default=False) as client:
        runner = executors.DaskRunner(client, None, fn=_row)
        t0 = time.monotonic()
        with pytest.raises(SolverError, match="has had no running worker for 0.3 s, with 2 task"):
            list(runner.run([_Task("a"), _Task("b")]))
        assert time.monotonic() - t0 < 30  # (ended: without the watch it never does)


class _Task:
    def __init__(self, key: str) -> None:
        self.key = key


def _row(task: _Task) -> dict:
    return {"status": "optimal", "key": task.key}
