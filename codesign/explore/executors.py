"""Where a sweep's points run: in this process, a local process pool, or a Dask cluster.

Each runner takes the points' tasks (validated problems: data, not Pyomo models) and yields
(task, row) as each point finishes, in finishing order. A runner calls ``fn(task)`` for each task:
``run_point`` (a sweep's point; sweeps pass ``run_batch``, whose row holds a batch's rows) unless it is
given another module-level function that takes a task with a ``key`` and returns a row, never raising
(the ACE study's cases, ``codesign.study.run.run_task``). Solves never share a process: HiGHS through
Pyomo crashes when two solves run in threads of one process, so pool workers and Dask workers run
one point at a time (a lock in ``run_point`` guards the case of a multi-threaded Dask worker too).

With more than one worker, a sweep hands its points out as workers free up, each worker walking its own
lane of neighbouring points (``lanes.Lanes``): on the local pool a pool of one process per lane
(``PoolRunner.run_dynamic``), on Dask an actor per lane (``DaskRunner.run_dynamic``), whose calls skip the
scheduler's task machinery. One worker, or a caller's ``concurrent.futures`` executor, runs
the batches planned ahead (``points.batches``).

The local pool starts its workers from a fork server that has imported codesign once (workers start in
milliseconds, and never inherit a HiGHS that has already run in the parent), and is kept for the next
sweep of as many workers when a sweep ends well (``PoolRunner``). Each worker watches the
sweep's process and exits when it is gone, so a killed sweep leaves no workers behind. If a worker dies
(a crash inside the solver), the pool is restarted and the unfinished points are resubmitted; a point
whose pool broke ``MAX_ATTEMPTS`` times runs once more in a pool of its own, and only if that breaks too
is it recorded as failed (a broken pool fails every point pending in it, not only the culprit).
"""
from __future__ import annotations

import atexit
import itertools
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import SolverError, SpecError, shown
from .points import error_row, run_point

MAX_ATTEMPTS = 3
#: The most workers a sweep or a study takes (our bound): far beyond a cluster's worth, and small enough that the
#: planner's per-worker tables cannot exhaust memory, as 10^9 did.
MAX_WORKERS = 100_000


def bad_workers(workers: Any) -> str | None:
    """What is wrong with a worker count, in a message's words; None if nothing: the one rule the command line, a
    ``sweep:`` section and the Python API apply."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        return f"expected a whole number from 1 to {MAX_WORKERS:,}, got {shown(workers)}"
    return None


Row = dict[str, Any]
Task = Any  # a PointTask, or any picklable object with a ``key`` that ``fn`` takes


class SerialRunner:
    """Every point in this process, one after another."""

    description = "this process"

    def __init__(self, fn: Callable[[Task], Row] = run_point) -> None:
        self.fn = fn

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[Task, Row]]:
        for t in tasks:
            yield t, self.fn(t)

    def close(self) -> None:
        pass


def _modules(fn: Callable[[Task], Row]) -> list[str]:
    """The modules a worker imports before its first task: the sweep's and ``fn``'s."""
    return list(dict.fromkeys(["codesign.explore.sweep", fn.__module__]))


def _import_modules(names: list[str]) -> None:
    import importlib
    for name in names:
        importlib.import_module(name)
    _freeze_imports()


_frozen = False


def _freeze_imports() -> None:
    """Put what a worker has imported out of the garbage collector's reach (``gc.freeze``): modules and their
    classes and functions (Pyomo's, pandas's, codesign's) live as long as the worker, yet each full collection
    would walk them all again, about 50 ms in a codesign worker every few quickstart families. What the
    worker makes afterwards is collected as usual. No collection first: it would cost as much, in each new
    worker, as the ones it saves."""
    global _frozen
    if _frozen:  # once: a later freeze (a Dask cluster's next sweep) would also freeze what the sweeps made
        return
    import gc
    gc.freeze()
    _frozen = True


def _watch_driver(pid: int) -> None:
    """Pool worker initializer: exit when the sweep's process is gone (e.g. killed by SIGKILL); freeze the
    imports (``_freeze_imports``)."""
    _freeze_imports()
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, daemon=True, name="codesign-watch-driver").start()


#: The pool kept between sweeps in this process (``PoolRunner``; one at most): by its number of workers, a
#: pool; by ("lanes", n), the n pools of one worker each that ``run_dynamic`` keeps. A new pool's workers
#: cost about 0.1 s before their first point (fork, start-up, the first task's round trip), a fifth of a
#: 40-point quickstart sweep on two workers. A pool that broke, or whose sweep was interrupted, is never
#: kept. ``shutdown_pools`` ends it (at exit, too).
_warm: dict[Any, Any] = {}
_warm_lock = threading.Lock()


def _forget_pools() -> None:
    """In a forked child: the parent's pools are not this process's (their manager threads stay behind)."""
    _warm.clear()


os.register_at_fork(after_in_child=_forget_pools)


def _kept() -> list[Any]:
    """Every pool in ``_warm`` (a pool, or a list of lane pools, a key); call holding ``_warm_lock``."""
    return [ex for v in _warm.values() for ex in (v if isinstance(v, list) else [v])]


def _sound(ex: Any) -> bool:
    """Whether a kept pool can run tasks: not broken, not shut down."""
    return not getattr(ex, "_broken", False) and not getattr(ex, "_shutdown_thread", False)


def shutdown_pools() -> None:
    """End the pools kept between sweeps (``PoolRunner``); the next sweep starts a new one."""
    with _warm_lock:
        pools = _kept()
        _warm.clear()
    for ex in pools:
        ex.shutdown(wait=True)


atexit.register(shutdown_pools)


class PoolRunner:
    """A local process pool of up to ``workers`` processes. With ``keep``, a pool kept by an earlier sweep of
    as many workers runs the tasks, and this one is kept when it ends well (``_warm``). What a worker keeps
    from one sweep to the next is its imports: the first batch of a sweep clears the families and answers
    of the sweep before (``points.run_batch``). Its imports include any module of the caller's that a task
    named (an ``extra`` hook, a check): a module edited and reloaded in the caller would stay as it was in
    the workers, so sweeps keep their pool only when every function a task names is codesign's own."""

    def __init__(self, workers: int, fn: Callable[[Task], Row] = run_point, keep: bool = False) -> None:
        self.workers = workers
        self.fn = fn
        self.keep = keep
        self.description = f"a local pool of up to {workers} process(es)"
        self._ex: Any = None
        self._lanes: list[Any] | None = None  # run_dynamic's pools, one worker each

    def _start(self, workers: int | None = None) -> Any:
        """A new pool of ``workers`` processes (default: the runner's)."""
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(_modules(self.fn))
        return ProcessPoolExecutor(workers or self.workers, mp_context=ctx, initializer=_watch_driver,
                                   initargs=(os.getpid(),))

    def _acquire(self) -> Any:
        """A kept pool of as many workers if there is a sound one (with ``keep``), else a new one (``_start``)."""
        if not self.keep:
            return self._start()
        with _warm_lock:
            ex = _warm.pop(self.workers, None)
        if ex is not None and _sound(ex):
            return ex
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)
        return self._start()

    def _keep(self, ex: Any, key: Any = None) -> None:
        """Keep ``ex`` (a pool, or a list of them) for the next sweep, under ``key`` (default: the number of
        workers); only process pools this runner made, never a test's stand-ins."""
        from concurrent.futures import ProcessPoolExecutor
        pools = ex if isinstance(ex, list) else [ex]
        if not all(isinstance(p, ProcessPoolExecutor) and not getattr(p, "_broken", False) for p in pools):
            for p in pools:
                p.shutdown(wait=True)
            return
        with _warm_lock:
            old = _kept()
            _warm.clear()
            _warm[self.workers if key is None else key] = ex
        for other in old:  # one pool kept in all: idle workers hold their last sweep's families
            other.shutdown(wait=False)

    def _lane_pools(self, n: int) -> list[Any]:
        """``n`` pools of one worker each (``run_dynamic``): the kept ones if sound (with ``keep``), else new."""
        if self.keep:
            with _warm_lock:
                kept = _warm.pop(("lanes", n), None)
            if kept is not None and all(_sound(p) for p in kept):
                return kept
            for p in kept or ():
                p.shutdown(wait=False, cancel_futures=True)
        return [self._start(1) for _ in range(n)]

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[Task, Row]]:
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        pending, attempts, suspects = list(tasks), Counter(), []
        while pending:
            self._ex = self._acquire()
            futures, unsent = {}, []
            for i, t in enumerate(pending):
                try:
                    futures[self._ex.submit(self.fn, t)] = t
                except BrokenProcessPool:  # it broke while the tasks went in: the rest were pending in it
                    unsent = pending[i:]
                    break
            pending = []
            for t in unsent:
                attempts[t.key] += 1
                (pending if attempts[t.key] < MAX_ATTEMPTS else suspects).append(t)
            for f in as_completed(futures):
                t = futures[f]
                try:
                    row = f.result()
                except BrokenProcessPool:
                    attempts[t.key] += 1
                    (pending if attempts[t.key] < MAX_ATTEMPTS else suspects).append(t)
                    continue
                except Exception as e:
                    row = error_row(f"{type(e).__name__}: {e}")
                yield t, row
            if pending:  # it broke
                self._ex.shutdown(wait=False, cancel_futures=True)
            elif self.keep:
                self._keep(self._ex)
            else:
                self._ex.shutdown(wait=True)
            self._ex = None
        # a broken pool fails every task pending in it, not only the one whose worker died: a task that was
        # pending at MAX_ATTEMPTS breaks runs once more in a pool of its own, where a break is its own
        for t in suspects:
            self._ex = self._start()
            try:
                row = self._ex.submit(self.fn, t).result()
            except BrokenProcessPool:
                row = error_row(f"a worker process died {MAX_ATTEMPTS} times while this point was pending, and "
                                "again when it ran alone (a crash in the solver?)")
            except Exception as e:
                row = error_row(f"{type(e).__name__}: {e}")
            self._ex.shutdown(wait=True)
            self._ex = None
            yield t, row

    def run_dynamic(self, first: Sequence[Sequence[Task]], follow: Callable[[Task, Row | None], Task | None]
                    ) -> Iterator[tuple[Task, Row]]:
        """Run ``first`` (per lane, its first tasks, each lane on a pool of one worker of its own), and after
        each task the one ``follow(task, row)`` gives (None: none) on the same lane, submitted before the row
        is yielded: a lane's worker runs its tasks in order (``lanes.Lanes``), whatever else finishes
        meanwhile (with more than one in flight, ``lanes.DEPTH``, it does not wait for the driver between
        them). A task whose worker died comes back as a row without ``rows`` (the caller runs its points
        again, with ``run``), and its lane gets a new worker for the tasks that follow."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        self._lanes = pools = self._lane_pools(len(first))
        futures: dict[Any, tuple[int, Task]] = {}

        def submit(lane: int, t: Task) -> bool:
            for _ in range(2):  # a lane whose worker died gets a new one
                try:
                    futures[pools[lane].submit(self.fn, t)] = (lane, t)
                    return True
                except BrokenProcessPool:
                    pools[lane].shutdown(wait=False, cancel_futures=True)
                    pools[lane] = self._start(1)
            return False  # the lane ends here; its task comes back without rows

        broke = False
        lost = [t for lane, ts in enumerate(first) for t in ts if not submit(lane, t)]
        yield from ((t, error_row("no worker process could take this batch")) for t in lost)
        while futures:
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            back = []
            for f in done:
                lane, t = futures.pop(f)
                try:
                    row = f.result()
                except BrokenProcessPool:
                    broke = True
                    row = error_row("a worker process died while this batch was pending")
                except Exception as e:
                    row = error_row(f"{type(e).__name__}: {e}")
                nxt = follow(t, row)
                back.append((t, row))
                if nxt is not None and not submit(lane, nxt):  # before the rows are recorded: its worker idles
                    broke = True
                    back.append((nxt, error_row("no worker process could take this batch")))
            yield from back
        # (a sweep interrupted mid-way never gets here: ``close`` ends its pools)
        self._lanes = None
        if self.keep and not broke:
            self._keep(pools, ("lanes", len(pools)))
        else:
            for p in pools:
                p.shutdown(wait=True)

    def close(self) -> None:
        if self._ex is not None:  # interrupted mid-sweep: do not wait for points nobody will record
            self._ex.shutdown(wait=False, cancel_futures=True)
            self._ex = None
        for p in self._lanes or ():  # interrupted lanes: their workers would finish a whole chunk first
            for proc in list(getattr(p, "_processes", {}).values()):
                proc.terminate()
            p.shutdown(wait=False, cancel_futures=True)
        self._lanes = None


#: How often, at least, the driver checks while a Dask lane's call is out that the lane's actor is still there
#: (s): a call whose worker left, or no longer holds the actor, may never answer.
WATCH_S = 1.0
#: How long lane actors may take to be made before the lanes (or a lost lane) end (s).
REPLACE_S = 30.0
#: How long a Dask sweep waits with points left and no running worker before it stops and says so (s): longer
#: than a cloud worker takes to start, for a cluster that scales up from none.
NO_WORKER_S = 120.0


class _NoWorkerWatch:
    """While a Dask runner's futures are out, a thread that checks every ``WATCH_S`` that the cluster has a running
    worker; after ``NO_WORKER_S`` without one it cancels the futures left (so the waits on them end) and
    ``check`` raises SolverError saying so. Without it, a cluster whose workers are all gone waits for ever. A
    LocalCluster the runner started itself is not watched: its nannies restart the workers a point kills, which
    on a loaded machine took minutes (a test's killer point), and no one else can take its workers away."""

    def __init__(self, runner: DaskRunner, pending: set[Any]) -> None:
        self.runner, self.pending = runner, pending
        self.fired = False
        self._stop = threading.Event()
        if runner._cluster is None:
            threading.Thread(target=self._watch, daemon=True, name="codesign-dask-no-worker").start()

    def _watch(self) -> None:
        since = None
        while not self._stop.wait(WATCH_S):
            try:
                alive = bool(self.runner._running())
            except Exception:  # (the scheduler itself is gone: the futures fail on their own)
                alive = True
            now = time.monotonic()
            since = None if alive else (since or now)
            if since is not None and now - since >= NO_WORKER_S and self.pending:
                self.fired = True
                self.runner.client.cancel(list(self.pending))
                return

    def check(self) -> None:
        if self.fired:
            raise SolverError(f"{self.runner.description} has had no running worker for {NO_WORKER_S:g} s, with "
                              f"{len(self.pending)} task(s) left: start workers for it (or run without --scheduler) "
                              "and run again; what finished is kept")

    def close(self) -> None:
        self._stop.set()


class _Lane:
    """A lane of ``DaskRunner.run_dynamic``: a Dask actor on one worker, which runs the tasks it is called with
    in order (a worker keeps its families between them, as a local lane's process does)."""

    def __init__(self, fn: Callable[[Task], Row]) -> None:
        self.fn = fn

    def run(self, task: Task) -> Row:
        return self.fn(task)


class DaskRunner:
    """Dask distributed: ``"local"`` (a LocalCluster of ``workers`` single-thread processes), a scheduler
    address, or a Client the caller owns."""

    def __init__(self, target: Any, workers: int | None, fn: Callable[[Task], Row] = run_point) -> None:
        self.fn = fn
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SpecError("Dask is not installed: pip install 'codesign[dask]'") from None
        self._cluster = None
        self._owned = True
        if isinstance(target, Client):
            self.client, self._owned = target, False
            self.description = f"the Dask cluster of {target!r}"
        elif target == "local":
            n = workers or os.cpu_count() or 1
            # silence_logs: shutting the cluster down logs heartbeat errors from its workers; a point's own
            # failure still comes back through its future
            self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                         silence_logs=logging.CRITICAL)
            self.client = Client(self._cluster)
            self.description = f"a Dask LocalCluster of {n} single-thread worker process(es)"
        else:
            try:
                self.client = Client(target, timeout="10s")
            except (OSError, TimeoutError) as e:
                raise SpecError(f"cannot reach the Dask scheduler at {shown(target)}: {e}") from None
            except (ValueError, TypeError) as e:  # not an address at all ('garbage': "missing port number")
                raise SpecError(f"the Dask scheduler {shown(target)} is not an address ({e}); expected 'local' or "
                                "an address such as tcp://host:8786") from None
            self.description = f"the Dask cluster at {target}"
        # every worker imports the solver's modules now, not during its first point: otherwise a worker
        # that the first tasks miss pays a second of imports in the middle of the sweep
        try:
            self.client.run(_import_modules, _modules(fn))
        except ImportError as e:
            self.close()
            raise SpecError(f"the workers of {self.description} cannot import codesign ({e}): install codesign "
                            "where they run") from None

    def _running(self) -> list[str]:
        """The addresses of the cluster's running workers (not paused, not closing), sorted."""
        workers = self.client.scheduler_info()["workers"]
        return sorted(a for a, w in workers.items() if w.get("status", "running") == "running")

    def lane_count(self, wanted: int) -> int:
        """How many lanes ``run_dynamic`` runs for ``wanted``: at most one per running worker (a worker runs every
        actor it holds on one thread, so a second lane there would queue its chunks behind the first's). A
        cluster with no running worker yet (an adaptive one scaling from zero) gets one: the batches."""
        return max(1, min(wanted, len(self._running())))

    def run_dynamic(self, first: Sequence[Sequence[Task]], follow: Callable[[Task, Row | None], Task | None]
                    ) -> Iterator[tuple[Task, Row]]:
        """``PoolRunner.run_dynamic`` on Dask: each lane is an actor (``_Lane``) on a running worker of its own,
        and a task goes to it as an actor call, which skips the scheduler's task machinery (a message the
        scheduler forwards, or none with ``direct_to_workers``): about 3 ms a round trip here, where a task
        submitted through the scheduler took 15 ms (the lanes' chunks lost more to those than they saved in
        master solves). A call whose actor is lost comes back as a row without ``rows`` (the caller runs its
        points again, with ``run``): one that fails with an OSError (its worker died), or whose actor the
        driver finds gone (its worker left, or no longer holds it), which it checks at least every ``WATCH_S``
        (such a call may never answer). The lane then gets a new actor on a running worker that holds no lane,
        or ends (the other lanes take its points). A call that fails on a live actor is that call's failure
        only. The actors are kept on the client for its next sweep (``_kept_lanes``)."""
        import queue

        n = len(first)
        try:
            lanes: list[Any] = self._kept_lanes(n)
        except Exception as e:  # no worker could hold an actor in time: every task comes back without rows
            yield from ((t, error_row(f"no Dask worker could take this lane: {type(e).__name__}: {e}"))
                        for ts in first for t in ts)
            return
        done: queue.Queue = queue.Queue()
        out: dict[int, tuple[int, Task]] = {}  # the calls in flight, by their number
        count = itertools.count()

        def call(number: int, actor: Any, t: Task) -> None:
            try:
                done.put((number, actor.run(t).result()))
            except BaseException as e:  # (the thread's only way to report)
                done.put((number, e))

        def submit(lane: int, t: Task) -> None:
            number = next(count)
            out[number] = (lane, t)
            # a daemon thread per call: an ActorFuture has no as_completed, and a call whose worker froze must not
            # hold the interpreter at exit
            threading.Thread(target=call, args=(number, lanes[lane], t), daemon=True).start()

        def lost(lane: int, alive: set[str]) -> bool:
            a = lanes[lane]
            return a is None or a._address not in alive or a._future.status != "finished"

        def end(lane: int, why: str) -> list[tuple[Task, Row]]:
            """Give up on the lane's calls in flight (their answers, if any come, are ignored); a new actor for it
            on a running worker holding no lane, or None (the lane ends)."""
            gone = [(out.pop(k)[1], error_row(why)) for k, (ln, _) in list(out.items()) if ln == lane]
            lanes[lane] = None
            self.client._codesign_lanes = None  # the kept lanes are no longer the ones made together
            try:
                used = {a._address for a in lanes if a is not None}
                free = [w for w in self._running() if w not in used]
                if free:
                    lanes[lane] = self._actors([free[0]])[0]
            except Exception:
                pass  # (no worker took it in time: the lane ends)
            return gone

        def then(lane: int, t: Task, row: Row, back: list[tuple[Task, Row]]) -> None:
            """``t``'s row, and the lane's next task sent before the rows are recorded (its worker idles meanwhile)."""
            nxt = follow(t, row)
            back.append((t, row))
            if nxt is not None:
                if lanes[lane] is None:
                    back.append((nxt, error_row("no Dask worker could take this lane")))
                else:
                    submit(lane, nxt)

        for lane, ts in enumerate(first):
            for t in ts:
                submit(lane, t)
        watched = time.monotonic()
        while out:
            try:
                got = [done.get(timeout=WATCH_S)]
            except queue.Empty:
                got = []
            back: list[tuple[Task, Row]] = []
            # the answer in hand first: a lane found lost below would otherwise give it up, and its points would
            # be solved again
            for number, result in got:
                if number not in out:
                    continue  # a call given up on before, answering after all
                lane, t = out.pop(number)
                gone: list[tuple[Task, Row]] = []
                if isinstance(result, BaseException):
                    row = error_row(f"{type(result).__name__}: {result}")
                    if isinstance(result, OSError) or lost(lane, set(self._running())):
                        gone = end(lane, "the Dask worker holding this lane was lost")
                else:
                    row = result
                for u, r in [(t, row), *gone]:
                    then(lane, u, r, back)
            if time.monotonic() - watched >= WATCH_S:  # also while other lanes keep answering
                watched = time.monotonic()
                alive = set(self._running())
                for lane in sorted({ln for ln, _ in out.values()}):
                    if lost(lane, alive):  # its calls' answers may never come
                        for t, row in end(lane, "the Dask worker holding this lane was lost"):
                            then(lane, t, row, back)
            yield from back

    def _actors(self, where: Sequence[str]) -> list[Any]:
        """A lane actor on each worker of ``where``, made at once (a round trip each), within ``REPLACE_S``. Made
        with the client current: an actor's handle binds to the current client when it comes back, and one
        bound to another client (the default) would wait for ever."""
        from dask.distributed import wait
        with self.client.as_current():
            futures = [self.client.submit(_Lane, self.fn, actor=True, pure=False, workers=[w]) for w in where]
            try:
                wait(futures, timeout=REPLACE_S)  # (a worker paused or leaving meanwhile would never take one)
            except Exception:
                self.client.cancel(futures)
                raise
            return self.client.gather(futures)

    def _kept_lanes(self, n: int) -> list[Any]:
        """``n`` lane actors, one per running worker: the client's kept ones if they were made for this function
        and these workers and are all alive, else new ones (20-30 ms), kept on the client (an attribute: they
        live and die with it). Kept actors still finishing an interrupted sweep's chunk serve the next sweep
        after it, as new ones would: a worker runs its actors on one thread."""
        addresses = self._running()
        if len(addresses) < n:
            raise RuntimeError(f"{n} lanes and {len(addresses)} running workers")
        key = (self.fn, tuple(addresses), n)
        kept = getattr(self.client, "_codesign_lanes", None)
        if kept is not None and kept[0] == key and all(a._future.status == "finished" and a._address in addresses
                                                       for a in kept[1]):
            return list(kept[1])
        lanes = self._actors(addresses[:n])
        self.client._codesign_lanes = (key, list(lanes))
        return lanes

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[Task, Row]]:
        """Each task as a Dask task. One whose workers died under it (Dask's KilledWorker, after its retries)
        may only have waited on a worker beside the task that killed it: it runs again once, alone on the
        cluster, and only a task that kills its workers then too is recorded as failed."""
        from dask.distributed import KilledWorker, as_completed

        futures = {}
        for t in tasks:
            futures[self.client.submit(self.fn, t, pure=False)] = t
        pending = set(futures)
        watch = _NoWorkerWatch(self, pending)
        suspects = []
        try:
            for f in as_completed(list(futures), loop=self.client.loop):  # (not the default client's: maybe none)
                watch.check()
                pending.discard(f)
                t = futures[f]
                try:
                    row = f.result()
                except KilledWorker:
                    suspects.append(t)
                    continue
                except Exception as e:
                    row = error_row(f"{type(e).__name__}: {e}")
                yield t, row
            for t in suspects:
                f = self.client.submit(self.fn, t, pure=False)
                pending.add(f)
                try:
                    row = f.result()
                except Exception as e:
                    watch.check()
                    row = error_row(f"{type(e).__name__}: {e}")
                finally:
                    pending.discard(f)
                    self.client.cancel([f])
                yield t, row
        finally:
            watch.close()
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        if self._owned:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()


class FuturesRunner:
    """Any ``concurrent.futures.Executor`` the caller owns (not shut down here)."""

    def __init__(self, ex: Any, fn: Callable[[Task], Row] = run_point) -> None:
        self.ex = ex
        self.fn = fn
        self.description = type(ex).__name__

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[Task, Row]]:
        from concurrent.futures import as_completed

        futures = {self.ex.submit(self.fn, t): t for t in tasks}
        for f in as_completed(futures):
            try:
                row = f.result()
            except Exception as e:
                row = error_row(f"{type(e).__name__}: {e}")
            yield futures[f], row

    def close(self) -> None:
        pass


def make_runner(executor: Any, workers: int | None, tasks: Sequence[Task] = (),
                fn: Callable[[Task], Row] = run_point, keep: bool = False) -> Any:
    """The runner ``executor`` names (see ``codesign.explore.sweep.sweep``), calling ``fn`` on each task;
    ``keep``: a local pool may be kept for the next sweep and may be a kept one (``PoolRunner``)."""
    from concurrent.futures import Executor

    if workers is not None and (wrong := bad_workers(workers)):
        raise SpecError(f"workers: {wrong}")
    if executor is None or executor in ("local", "pool"):
        # the pool starts a worker only when a task waits for one (forkserver and spawn), so a pool of n
        # runs a smaller sweep on fewer processes, and is kept for the next sweep of n workers
        n = max(1, workers or os.cpu_count() or 1)
        return PoolRunner(n, fn, keep)
    if executor == "serial":
        return SerialRunner(fn)
    if executor == "dask":
        return DaskRunner("local", workers, fn)
    if isinstance(executor, str):
        return DaskRunner(executor, workers, fn)
    if isinstance(executor, Executor):
        return FuturesRunner(executor, fn)
    if type(executor).__module__.startswith("distributed"):
        return DaskRunner(executor, workers, fn)
    raise SpecError(f"unknown executor {executor!r}: expected 'local', 'serial', 'dask', a scheduler address, "
                    "a dask.distributed.Client or a concurrent.futures.Executor")
