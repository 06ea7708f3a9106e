"""A suite's problem file -> ``Suite``: one ``Problem`` per workload, sharing the platform and design space.

A suite file is a problem file whose ``workload:`` section is replaced by ``workloads:``, a list of
``{name, weight, workload: {...}, iteration_time_target}``; each entry's ``workload`` is read exactly as a
single problem's (``problem.load.parse_problem`` reads a document made of the suite's other sections and
that entry's workload: one place per rule). ``objective.minimize`` takes the suite objectives
(``SUITE_OBJECTIVES``; docs/suites.md)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError, shown
from ..problem.load import TOP_KEYS, parse_problem
from ..problem.model import Problem
from ..spec import units as U
from ..spec.readers import Ctx, choice, items, join_path, line_of, number, quantity, section, text
from ..spec.yamlfile import YMap, load_yaml

#: What a suite minimizes (docs/suites.md): the weighted sum of iteration times, the weighted geometric
#: mean of slowdowns against each workload's own best, the worst slowdown, or the engine's area or power
#: with every workload under its iteration-time target.
SUITE_OBJECTIVES = ("weighted_time", "geomean_slowdown", "max_slowdown", "area", "power")
#: A suite file's top-level keys: a problem file's, with ``workloads`` for ``workload`` (and no sweep yet).
SUITE_KEYS = tuple(k for k in TOP_KEYS if k not in ("workload", "sweep")) + ("workloads",)
ENTRY_KEYS = ("name", "weight", "workload", "iteration_time_target")


@dataclass(frozen=True)
class Suite:
    """Workloads sharing one platform and design space. ``problems[i]`` is workload i alone (its name the
    entry's, objective iteration time); ``weights[i]`` > 0; ``targets_s[i]``: its iteration-time target (s)
    or None; ``objective``: one of ``SUITE_OBJECTIVES``."""

    name: str
    path: str
    problems: tuple[Problem, ...]
    weights: tuple[float, ...]
    targets_s: tuple[float | None, ...]
    objective: str
    description: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.problems)


def is_suite(doc: Any) -> bool:
    """Whether a loaded problem document is a suite (it has ``workloads:``)."""
    return isinstance(doc, dict) and "workloads" in doc


def load_suite(path: str | Path, *, solver_profile: str | None = None, confine: bool = False) -> Suite:
    return parse_suite(load_yaml(path), path, solver_profile=solver_profile, confine=confine)


def parse_suite(doc: Any, path: str | Path, *, solver_profile: str | None = None, confine: bool = False) -> Suite:
    """Validate a suite document. Raises SpecError (file:line: key.path: expected ...) on bad input."""
    ctx = Ctx(str(path), confine=confine)
    if "workload" in doc:
        raise ctx.error("workload", "not allowed with 'workloads' (a suite gives each workload in its list)",
                        line_of(doc, "workload"))
    m = section(ctx, doc, "", SUITE_KEYS, ("workloads", "topology", "engine"))
    objective = _objective(ctx, m)
    lst = items(ctx, m, "workloads", "")
    memo: dict = {}  # the platform's sections are read once, shared by every workload's Problem
    problems, weights, targets, seen = [], [], [], set()
    for i, entry in enumerate(lst):
        ep = f"workloads[{i}]"
        e = section(ctx, entry, ep, ENTRY_KEYS, ("name", "workload"), lst, i)
        name = text(ctx, e, "name", ep)
        if not name:
            raise ctx.error(join_path(ep, "name"), "expected a non-empty name", line_of(e, "name"))
        if name in seen:
            raise ctx.error(join_path(ep, "name"), f"expected a name no other workload has; {shown(name)} is "
                            "used twice", line_of(e, "name"))
        seen.add(name)
        weight = number(ctx, e.get("weight", 1.0), join_path(ep, "weight"), line_of(e, "weight"), lo=0,
                        lo_open=True)
        target = quantity(ctx, e, "iteration_time_target", ep, U.SECONDS) if "iteration_time_target" in e else None
        if objective in ("area", "power") and target is None:
            raise ctx.error(join_path(ep, "iteration_time_target"), f"expected a target: minimizing {objective} "
                            "needs every workload's iteration-time target (e.g. '2 ms')", getattr(e, "line", None))
        problems.append(_entry_problem(ctx, m, e, ep, name, i, path, solver_profile, confine, memo))
        weights.append(weight)
        targets.append(target)
    _supported(ctx, m, problems)
    return Suite(name=text(ctx, m, "name", "") or Path(path).stem, path=str(path), problems=tuple(problems),
                 weights=tuple(weights), targets_s=tuple(targets), objective=objective,
                 description=text(ctx, m, "description", ""))


def _objective(ctx: Ctx, m: YMap) -> str:
    o = m.get("objective")
    if o is None:
        return "weighted_time"
    om = section(ctx, o, "objective", ("minimize", "iteration_time_target"), parent=m, key="objective")
    if "iteration_time_target" in om:
        raise ctx.error("objective.iteration_time_target", "expected each workload's target in its workloads "
                        "entry (workloads[i].iteration_time_target), not one for the suite",
                        line_of(om, "iteration_time_target"))
    return choice(ctx, om, "minimize", "objective", SUITE_OBJECTIVES, default="weighted_time")


def _entry_problem(ctx: Ctx, m: YMap, e: YMap, ep: str, name: str, i: int, path: str | Path,
                   solver_profile: str | None, confine: bool, memo: dict) -> Problem:
    """Workload i alone on the suite's platform, read by the single problem's parser; an error in its
    workload is placed under ``workloads[i]``."""
    sub = YMap({k: v for k, v in m.items() if k not in ("workloads", "objective", "name", "description")})
    sub.line = getattr(m, "line", 0)
    sub.key_lines = dict(getattr(m, "key_lines", {}))
    sub["workload"] = e["workload"]
    sub["name"] = name
    sub.key_lines["workload"] = line_of(e, "workload")
    sub.key_lines["name"] = line_of(e, "name")
    with warnings.catch_warnings(record=True) as held:  # the platform's warnings once, not once per workload
        warnings.simplefilter("always")
        try:
            p = parse_problem(sub, path, solver_profile=solver_profile, confine=confine, memo=memo)
        except SpecError as err:
            if err.path and err.path.startswith("workload"):
                raise SpecError(err.detail, file=err.file, path=f"{ep}.{err.path}", line=err.line) from None
            raise
    said = memo.setdefault("suite warned", set())
    for w in held:
        if str(w.message) not in said:  # (the platform's, said by the first entry, are not said again)
            said.add(str(w.message))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return p


def _supported(ctx: Ctx, m: YMap, problems: list[Problem]) -> None:
    """What a suite's search does not take yet, refused in the file's terms."""
    p = problems[0]
    if p.schedule.order == "optimize":
        raise ctx.error("schedule.order", "expected lifo or fifo in a suite (order: optimize's evaluations are "
                        "bounds, not periods; not supported in suites yet)", line_of(m.get("schedule"), "order"))
    for i, q in enumerate(problems):
        g = getattr(q.workload, "task_graph", None)
        if g is not None and not g.decided:
            raise ctx.error(f"workloads[{i}].workload", "expected a workload with its compute order given: a task "
                            "graph whose order the solve chooses is not supported in suites yet",
                            line_of(m["workloads"][i], "workload"))
