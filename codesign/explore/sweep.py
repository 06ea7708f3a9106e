"""Sensitivity sweeps: solve a problem at every point of a parameter grid, stream results, resume.

    df = sweep("problems/quickstart.yaml", {"topology.dims[1].bandwidth": "25GB/s,50GB/s,100GB/s"},
               out="results.csv")

The steps: ``plan`` edits the problem's YAML document at each point and validates it (so a wrong path
or value is one SpecError before anything runs), ``run_plan`` sends the validated problems (data, never
Pyomo models, which do not pickle) to an executor -- a local process pool by default, or Dask -- in
chunks that keep a worker on neighbouring points (``lanes``, with more than one worker) or in batches planned ahead
(``points.batches``), so that points that differ only in budgets share a worker (their master, replays, cuts
and answers, ``pipeline.solve.Family``), and appends each finished point to the results CSV as one line, so a sweep
killed at any moment, even by SIGKILL, keeps every point its workers returned. A point's key is a
digest of its problem's content (not its spelling: "25GB/s" and 25e9 are the same point) and of the
solve options; a rerun skips keys already in
the file. A failed point is a row with status ``error`` and its message; the sweep goes on.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import pickle
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError, shown
from ..pipeline.solution import Solution, design_keys
from ..pipeline.solve import Extra
from ..problem.load import parse_problem
from ..problem.model import Problem
from ..spec.yamlfile import load_yaml
from .executors import bad_workers, make_runner
from .lanes import Lanes
from .params import MAX_POINTS, Param, apply, canonical, check_path, get_value, params_from
from .points import (
    RESULT_COLUMNS,
    BatchTask,
    Check,
    PointTask,
    batches,
    larger_budgets_first,
    run_batch,
    run_point,
    solution_row,
)
from .results import ResultsFile

if TYPE_CHECKING:
    import pandas as pd

MODES = ("grid", "one_at_a_time")
#: Key paths that only change the master's right-hand sides: points that differ in these alone are one family
#: (``pipeline.solve.Family``), batched together so that a worker shares the master, the replays, the cuts and
#: the answers.
BUDGET_PATHS = ("engine.area_budget", "engine.power_budget")
TAIL_COLUMNS = ("evaluations", "master_solves", "worker", "wall_s")


def _validate_point(problem: Problem, solution: Solution) -> dict[str, Any]:
    from ..pipeline.validation import validate
    v = validate(problem, solution)
    return {"simulated_s": v.simulated_s, "sim_rel_diff": v.rel_diff, "sim_flagged": v.flagged}


#: Replay each point's solution in the simulator (``codesign.pipeline.validation``): the simulated period (s), its
#: difference from the MILP's relative to it, and whether that exceeds the validation tolerance.
VALIDATE = Check("validate", ("simulated_s", "sim_rel_diff", "sim_flagged"), _validate_point)


@dataclass
class Point:
    """One point of a sweep: the raw values set (``values``), the parameter varied (one-at-a-time mode),
    its validated problem, its key, and the canonical value of every swept path at the point."""

    index: int
    values: dict[str, Any]
    varied: str | None
    problem: Problem
    key: str
    columns: dict[str, Any]


@dataclass
class Plan:
    """A validated sweep: every point's problem, before anything runs."""

    file: str
    params: list[Param]
    mode: str
    points: list[Point]
    columns: list[str]
    time_limit: float | None = None
    extra: Extra | None = None
    checks: tuple[Check, ...] = ()


@dataclass
class Progress:
    """Passed to the ``progress`` callback: once before the first point (``row`` None), then per finished point."""

    done: int
    total: int
    cached: int
    failed: int
    elapsed_s: float
    row: dict[str, Any] | None = None


# ---------------------------------------------------------------- planning

def _name(fn: Any) -> str | None:
    if fn is None:
        return None
    if hasattr(fn, "func"):  # functools.partial: its repr holds an address, which would change every run
        return f"partial({_name(fn.func)}, {fn.args!r}, {sorted(fn.keywords.items())!r})"
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


_LEAVES = frozenset((str, int, float, bool, type(None)))
_FIELDS: dict[type, tuple[str, ...] | None] = {}  # per type: its dataclass fields' names, None if not one


def _fields(t: type) -> tuple[str, ...] | None:
    """A dataclass type's field names (None for any other type), looked up once per type."""
    if t not in _FIELDS:
        _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t)) if dataclasses.is_dataclass(t) else None
    return _FIELDS[t]


def _plain(obj: Any) -> Any:
    """``obj`` as JSON sees ``dataclasses.asdict(obj)``: dataclasses as dicts of their fields, sequences as
    lists, the rest as it is (``asdict`` deep-copies it first, which costs a millisecond a problem and
    changes nothing JSON writes: the resume keys are the same). Each type's fields are looked up once: a
    sweep point's problem has thousands of values."""
    t = type(obj)
    if t in _LEAVES:
        return obj
    names = _fields(t)
    if names is not None:
        return {n: _plain(getattr(obj, n)) for n in names}
    if isinstance(obj, (list, tuple)):
        return [_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {_plain(k): _plain(v) for k, v in obj.items()}
    return obj


def point_key(problem: Problem, time_limit: float | None = None, extra: Extra | None = None,
              checks: Sequence[Check] = (), memo: dict | None = None) -> str:
    """The resume key: a digest of the problem's content (labels and file paths left out) and the options.
    ``memo``: a dict shared by the points of one plan, which keeps the plain form of a workload they share."""
    wl = problem.workload
    hit = memo.get(("plain", id(wl))) if memo is not None else None
    if hit is None or hit[0] is not wl:
        plain = {k: v for k, v in _plain(wl).items() if k not in ("source", "name")}
        # (the workload kept alive with it, so that its id is not reused)
        hit = (wl, json.dumps(plain, sort_keys=True, default=repr))
        if memo is not None:
            memo["plain", id(wl)] = hit
    d = {n: _WORKLOAD if n == "workload" else _plain(getattr(problem, n)) for n in _fields(Problem)}
    for k in ("name", "description", "path"):
        d.pop(k, None)
    opts = {"time_limit": time_limit, "extra": _name(extra), "checks": [c.name for c in checks]}
    # the workload's JSON written once per plan and put in its place: JSON's text of a value is the same
    # inside a larger one (the same separators, keys sorted at every level), so this is the text of the whole
    text = json.dumps([d, opts], sort_keys=True, default=repr)
    at = text.split(_WORKLOAD_JSON)
    if len(at) != 2:  # (a string of the problem's own holds the placeholder: never in practice)
        d["workload"] = json.loads(hit[1])
        text = json.dumps([d, opts], sort_keys=True, default=repr)
    else:
        text = at[0] + hit[1] + at[1]
    return hashlib.sha256(text.encode()).hexdigest()[:20]


#: What stands for the workload in ``point_key``'s JSON until its own text goes in.
_WORKLOAD = "\x00workload\x00"
_WORKLOAD_JSON = json.dumps(_WORKLOAD)


def load_document(problem: Problem | str | Path | Mapping) -> tuple[Any, str, dict | None]:
    """The problem's YAML document, its file name for messages, and its ``sweep:`` section (removed)."""
    if isinstance(problem, Problem):
        if not problem.path:
            raise SpecError("a sweep edits the problem's YAML document, and this Problem was built in code: "
                            "pass its file path or the document (a dict)")
        problem = problem.path
    if isinstance(problem, (str, Path)):
        doc, file = load_yaml(problem), str(problem)
    elif isinstance(problem, Mapping):
        doc, file = dict(problem), "<document>"
    else:
        raise SpecError(f"expected a Problem, a problem file or a document, got {type(problem).__name__}")
    section = doc.pop("sweep", None) if isinstance(doc, dict) else None
    return doc, file, section


def plan(problem: Problem | str | Path | Mapping, params: Mapping[str, Any] | Iterable[str | Param], *,
         mode: str = "grid", time_limit: float | None = None, extra: Extra | None = None,
         checks: Sequence[Check] = (), solver_profile: str | None = None, confine: bool = False) -> Plan:
    """Every point's validated problem. ``mode``: ``grid`` (every combination) or ``one_at_a_time`` (each
    parameter over its values, the others as the file has them). ``solver_profile`` (overriding the file's) and
    ``confine`` are ``load_problem``'s. Raises SpecError on a wrong path or value."""
    if mode not in MODES:
        raise SpecError(f"expected a sweep mode among {', '.join(MODES)}, got {shown(mode)}")
    doc, file, _ = load_document(problem)
    ps = params_from(params, file=file)
    for p in ps:
        check_path(doc, p.tokens, file=file)
    memo: dict = {}  # what the points share: an ASTRA-sim workload file read once, its plain form (point_key)
    base = parse_problem(doc, file, solver_profile=solver_profile, confine=confine, memo=memo)
    keep_solver = None
    if isinstance(problem, Problem):
        if dataclasses.replace(base, solver=problem.solver) != problem:
            raise SpecError("the Problem differs from its file; a sweep edits the YAML document, so pass the "
                            "edited document (a dict) instead", file=file)
        if not any(p.tokens[0] == "solver" for p in ps):
            keep_solver = problem.solver  # e.g. loaded with another solver profile
    count = math.prod(len(p.values) for p in ps) if mode == "grid" else sum(len(p.values) for p in ps)
    if count > MAX_POINTS:
        raise SpecError(f"{count:,} points ({' x '.join(str(len(p.values)) for p in ps)} values); a sweep plans at "
                        f"most {MAX_POINTS:,}: split it into several sweeps (one results file can hold them all)",
                        file=file)
    if mode == "grid":
        combos = [(dict(zip([p.path for p in ps], vals)), None) for vals in itertools.product(*(p.values for p in ps))]
    else:
        combos = [({p.path: v}, p.path) for p in ps for v in p.values]
    tokens = {p.path: p.tokens for p in ps}
    points = []
    for i, (values, varied) in enumerate(combos):
        point_doc = apply(doc, {tokens[k]: v for k, v in values.items()})
        try:
            prob = parse_problem(point_doc, file, solver_profile=solver_profile, confine=confine, memo=memo)
        except SpecError as e:
            what = ", ".join(f"{k}={v}" for k, v in values.items())
            raise SpecError(f"{e.detail} (at sweep point {what})", file=e.file, path=e.path, line=e.line) from None
        if keep_solver is not None:
            prob = dataclasses.replace(prob, solver=keep_solver)
        cols = {p.path: canonical(values[p.path] if p.path in values else get_value(doc, p.tokens)) for p in ps}
        points.append(Point(i, values, varied, prob, point_key(prob, time_limit, extra, checks, memo), cols))
    keys = design_keys()
    design = [keys[r] for r in keys if any(r in pt.problem.engine.resources for pt in points)]
    network: list[str] = []  # points with open bandwidths: each open dimension's, and the network's cost
    for pt in points:
        net, dims = pt.problem.network, pt.problem.topology.dims
        if net is not None and net.sized:
            network += [c for d in net.sized_dims() if (c := f"{dims[d].name}_link_bandwidth_bytes_per_s")
                        not in network]
    if network:
        network.append("network_cost")
    check_cols = [c for ch in checks for c in ch.columns]
    columns = ["key", "problem", *[p.path for p in ps], *RESULT_COLUMNS, *design, *network, *check_cols,
               *TAIL_COLUMNS]
    return Plan(file, ps, mode, points, columns, time_limit, extra, tuple(checks))


# ---------------------------------------------------------------- running

def run_plan(pl: Plan, *, executor: Any = None, workers: int | None = None, out: str | Path | None = None,
             retry_failed: bool = False, progress: Callable[[Progress], None] | None = None) -> pd.DataFrame:
    """Run the points of ``pl`` not already in ``out`` and return every point's row as a DataFrame (in point
    order, with ``varied`` and ``cached`` columns). See ``sweep`` for the arguments."""
    if workers is not None and (wrong := bad_workers(workers)):  # before the batches, sized by it
        raise SpecError(f"workers: {wrong}")
    retry = {pt.key for pt in pl.points} if retry_failed else set()
    store = ResultsFile(out, pl.columns, retry=retry) if out is not None else None
    try:
        done = dict(store.rows) if store else {}
        todo: dict[str, Point] = {}
        for pt in pl.points:
            if pt.key not in done and pt.key not in todo:
                todo[pt.key] = pt
        tasks = [PointTask(k, pt.problem, pl.time_limit, pl.extra, pl.checks) for k, pt in todo.items()]
        cached = len({pt.key for pt in pl.points} & done.keys())
        state = Progress(0, len(tasks), cached, 0, 0.0)
        t0 = time.perf_counter()
        if progress:
            progress(state)
        if tasks:
            def family_of(t: PointTask) -> tuple:
                return tuple(v for k, v in todo[t.key].columns.items() if k not in BUDGET_PATHS)
            sweep_id = uuid.uuid4().hex
            count = _worker_count(executor, workers)
            work = batches(tasks, family_of, count, order=larger_budgets_first, sweep=sweep_id)
            # a kept pool's workers keep the modules they imported: only where the tasks name codesign's own
            # functions alone (no extra hook, no check of the caller's, which the caller may edit and reload)
            own = pl.extra is None and all((getattr(c.fn, "__module__", None) or "").startswith("codesign.")
                                              for c in pl.checks)
            runner = make_runner(executor, workers, work, fn=run_batch, keep=own)
            n_lanes = runner.lane_count(count) if hasattr(runner, "lane_count") else count
            dynamic = n_lanes > 1 and len(work) > 1 and hasattr(runner, "run_dynamic")
            if dynamic:
                # many workers: chunks handed out as workers free up, each worker walking its lane (lanes.py)
                lanes = Lanes(tasks, family_of, n_lanes, sweep_id, order=larger_budgets_first)
                stream = runner.run_dynamic(lanes.first(), lanes.follow)
            else:
                stream = runner.run(work)  # a failed batch of one point has had its retries (PoolRunner.run)

            def record(task: PointTask, row: dict[str, Any]) -> None:
                pt = todo[task.key]
                full = {"key": task.key, "problem": pt.problem.name, **pt.columns, **row}
                if store:
                    store.append(full)
                done[task.key] = full
                state.done += 1
                state.failed += row.get("status") == "error"
                state.elapsed_s, state.row = time.perf_counter() - t0, full
                if progress:
                    progress(state)
            try:
                # a batch that failed as a whole (its worker died, its future raised) took its points with it,
                # the finished ones too: each runs again alone, once, and only its own failure is recorded
                alone: list[BatchTask] = []
                for batch, result in stream:
                    if "rows" not in result and (len(batch.tasks) > 1 or dynamic):
                        alone.extend(BatchTask(t.key, (t,), sweep_id) for t in batch.tasks)
                        continue
                    for task, row in zip(batch.tasks, result.get("rows") or [result]):
                        record(task, row)
                # a lane that ended early (no worker could take its chunk) left its points to the others; any
                # point no lane ran runs alone too
                held = {t.key for b in alone for t in b.tasks}
                alone.extend(BatchTask(t.key, (t,), sweep_id) for t in tasks
                             if t.key not in done and t.key not in held)
                for batch, result in runner.run(alone) if alone else ():
                    record(batch.tasks[0], (result.get("rows") or [result])[0])
            finally:
                runner.close()
    finally:
        if store:
            store.close()
    return _frame(pl, done, set(todo))


def _worker_count(executor: Any, workers: int | None) -> int:
    """How many workers will run the points, for sizing the batches (a guess for a cluster we did not start)."""
    import os
    if executor == "serial":
        return 1
    if workers:
        return workers
    if hasattr(executor, "nthreads"):  # a dask.distributed.Client
        try:
            return max(1, sum(executor.nthreads().values()))
        except Exception:
            pass
    return os.cpu_count() or 1


def _frame(pl: Plan, rows: Mapping[str, Mapping[str, Any]], fresh: set[str]) -> pd.DataFrame:
    import pandas as pd

    recs = []
    for pt in pl.points:
        r = {c: rows[pt.key].get(c) for c in pl.columns}
        r.update({c: v for c, v in pt.columns.items()})  # this sweep's view of the point
        r["point"] = pt.index
        r["varied"] = pt.varied
        r["cached"] = pt.key not in fresh
        recs.append(r)
    cols = ["point", *(["varied"] if pl.mode == "one_at_a_time" else []), *pl.columns, "cached"]
    df = pd.DataFrame.from_records(recs, columns=cols)
    for c in df.columns:
        if c not in ("key", "problem", "status", "error", "worker", "varied") and df[c].dtype == object:
            try:
                df[c] = pd.to_numeric(df[c])
            except (ValueError, TypeError):
                pass
    return df


def _uses_pickle(executor: Any) -> bool:
    """Whether ``executor`` sends tasks to other processes with the standard pickle (a process pool)."""
    from concurrent.futures import ProcessPoolExecutor
    return executor is None or executor in ("local", "pool") or isinstance(executor, ProcessPoolExecutor)


def sweep(problem: Problem | str | Path | Mapping, params: Mapping[str, Any] | Iterable[str | Param], *,
          mode: str = "grid", executor: Any = None, workers: int | None = None, out: str | Path | None = None,
          time_limit: float | None = None, extra: Extra | None = None, checks: Sequence[Check] = (),
          retry_failed: bool = False, progress: Callable[[Progress], None] | None = None) -> pd.DataFrame:
    """Solve ``problem`` at every point of ``params`` and return a pandas DataFrame, one row per point.

    ``params``: {yaml key path: values} (values: a list, ``"a,b,c"``, ``"a:b:n"``, ``"log:a:b:n"``, with
    units) or ``"PATH=VALUES"`` strings. ``executor``: None or ``"local"`` (a local process pool of
    ``workers`` processes, default one per core), ``"serial"`` (in this process), ``"dask"`` (a Dask
    LocalCluster of ``workers`` single-thread processes), a scheduler address ``"tcp://host:8786"``, a
    ``dask.distributed.Client``, or any ``concurrent.futures.Executor``. ``out``: the results CSV, appended
    as points finish; points already in it are not solved again (``retry_failed`` re-solves its points' ``error`` rows).
    ``time_limit`` (s) and ``extra`` are passed to ``codesign.solve`` at each point; ``extra`` must pickle
    (a module-level function) to run in other processes. Result times are in seconds, area in mm^2.
    """
    if workers is not None and (wrong := bad_workers(workers)):  # before the plan, which validates every point
        raise SpecError(f"workers: {wrong}")
    pl = plan(problem, params, mode=mode, time_limit=time_limit, extra=extra, checks=checks)
    if _uses_pickle(executor):  # Dask's cloudpickle takes lambdas; a process pool's pickle does not
        for what, fn in [("extra", extra), *((f"check {c.name}", c.fn) for c in checks)]:
            try:
                pickle.dumps(fn)
            except Exception as e:
                raise TypeError(f"{what} must pickle to run in worker processes (a module-level function), and "
                                f"{_name(fn)} does not ({e}); use executor='serial' or Dask (cloudpickle)") from None
    return run_plan(pl, executor=executor, workers=workers, out=out, retry_failed=retry_failed, progress=progress)


# ---------------------------------------------------------------- the ``sweep:`` section of a problem file

SECTION_KEYS = ("params", "mode", "workers", "scheduler", "out", "time_limit")


def read_section(section: Any, file: str) -> dict[str, Any]:
    """Validate a problem file's ``sweep:`` section: {params: {path: values}, mode, workers, scheduler, out,
    time_limit}; returns it as a dict (paths of ``out`` relative to the problem file). Errors name the line
    when the section was read from YAML."""
    import difflib

    from ..spec.readers import line_of

    def error(key: str | None, msg: str) -> SpecError:
        return SpecError(msg, file=file, path=f"sweep.{key}" if key else "sweep",
                         line=line_of(section, key) if key else getattr(section, "line", None))

    if not isinstance(section, dict):
        raise SpecError("expected a mapping with keys " + ", ".join(SECTION_KEYS), file=file, path="sweep")
    for k in section:
        if k not in SECTION_KEYS:
            near = difflib.get_close_matches(str(k)[:100], SECTION_KEYS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; valid keys: {', '.join(SECTION_KEYS)}"
            raise SpecError(f"unknown key {shown(k)}{hint}", file=file, path=f"sweep.{str(k)[:40]}",
                            line=line_of(section, k))
    out = dict(section)
    if not isinstance(out.get("params"), dict) or not out["params"]:
        raise error("params", "expected a mapping {key path: values}")
    mode = out.get("mode", "grid")
    if not isinstance(mode, str) or mode not in MODES:
        raise error("mode", f"expected one of {', '.join(MODES)}, got {shown(mode)}")
    w = out.get("workers")
    if w is not None and (wrong := bad_workers(w)):
        raise error("workers", wrong)
    for k in ("scheduler", "out"):
        if k in out and not (isinstance(out[k], str) and out[k].strip()):
            raise error(k, f"expected {'local or tcp://host:port' if k == 'scheduler' else 'a file name'}, got "
                        f"{shown(out[k])}")
    if "out" in out:
        out["out"] = str(Path(file).resolve().parent / out["out"])
    if "time_limit" in out:
        from ..spec.units import SECONDS, UnitError, parse_quantity
        try:
            out["time_limit"] = parse_quantity(out["time_limit"], SECONDS)
        except UnitError as e:
            raise error("time_limit", str(e)) from None
        if not out["time_limit"] > 0:
            raise error("time_limit", f"expected a time > 0, got {shown(section['time_limit'])}")
    return out


__all__ = ["sweep", "plan", "run_plan", "run_point", "point_key", "Plan", "Point", "PointTask", "Check", "VALIDATE",
           "Progress", "read_section", "load_document", "solution_row"]

