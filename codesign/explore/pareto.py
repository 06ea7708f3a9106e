"""Pareto fronts between two of iteration time, area, power and network cost, by epsilon constraints.

The method: every point of the front is a lexicographic optimum, "minimize y subject to x <= eps, then
minimize x subject to that y", so no point is dominated by another design at the same order. The two
ends come first: the min-y end (minimize y with x free, then x) and the min-x end (minimize x, then y).
Then, with ``points=None`` (the default), the front is walked exactly: from the min-y end, each next
point minimizes y subject to x a hair (1e-4 mm^2 or W) below the last point's x, until x cannot go lower;
the design space is finite, so this finds every corner of the front (designs closer than that hair are
merged; the hair must exceed HiGHS's feasibility tolerance, 1e-6, or a budget of x - 1e-7 admits x).
With ``points=N`` the epsilons are N evenly spaced values from the min-x end to the min-y end instead,
which may skip corners but bounds the number of solves. The problem's own budget on x (and on y) is
lifted to trace the whole front; its other budgets and constraints stay. Its own answer, "as posed", is
marked on the picture.

Epsilon constraints use the problem's own knobs: an area, power or network cost budget, or the
iteration-time target (so no extra hook is needed, and any ``extra`` the caller gives is applied at every
solve). Iteration times are in seconds, area in mm^2, power in W, network cost in the problem's unit.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InfeasibleError, SpecError, shown
from ..pipeline.solution import Solution, design_text
from ..pipeline.solve import Extra, Family, solve
from ..problem.model import Objective, Problem
from .pacing import paced_collections

METRICS = ("iteration_time", "area", "power", "network_cost")
LABELS = {"iteration_time": "iteration time (ms)", "area": "area (mm^2)", "power": "power (W)",
          "network_cost": "network cost"}
SHOW = {"iteration_time": 1e3, "area": 1.0, "power": 1.0, "network_cost": 1.0}  # SI -> the plotted unit
REL = 1e-7     # the lexicographic second stage keeps the first objective within this (as solve's own does)
STEP = 1e-4    # the exact walk asks for x this much below the last point (mm^2 or W; above the MIP tolerance)
#: ... and at least this fraction of it: HiGHS scales a budget row, so a network cost of thousands of
#: dollars needs a hair relative to its size to stay above the feasibility tolerance
REL_STEP = 1e-5
#: The most points a front may ask for (``points``) or walk (``max_points``), our bound on its work: each is one or
#: two solves, so this is hours of solving already; a mistyped 10^8 is refused before the first solve.
MAX_FRONT_POINTS = 1000


def _hair(v: float) -> float:
    return max(STEP, REL_STEP * abs(v))


def metric(s: Solution, name: str) -> float:
    if name == "network_cost":
        return s.network.total if s.network is not None else 0.0
    return {"iteration_time": s.iteration_time_s, "area": s.area_mm2, "power": s.power_w}[name]


def point_text(s: Solution) -> str:
    """A front point's design: the endpoint's, and the network's bandwidths when it has a design space."""
    return design_text(s.design) + (f"; {s.network.text()}" if s.network is not None else "")


@dataclass(frozen=True)
class FrontPoint:
    """One design on the front; ``x``/``y`` in SI (s, mm^2, W)."""

    x: float
    y: float
    solution: Solution
    role: str = ""        # "min-x end", "min-y end" or ""


@dataclass
class ParetoFront:
    """The front (sorted by x), the problem's own answer ("as posed"), and how it was traced."""

    x: str
    y: str
    points: list[FrontPoint]
    as_posed: Solution | None
    method: str
    solves: int
    x_budget: float | None = None
    dropped: int = 0
    notes: list[str] = field(default_factory=list)
    #: where an exact walk stopped at its ``max_points`` before reaching the other end: the (low, high) x (SI)
    #: between which the front was not walked, so no point there is known (the plot draws it dashed)
    untraced: tuple[float, float] | None = None

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame([{self.x: p.x, self.y: p.y, "role": p.role, "iteration_time_s": p.solution.iteration_time_s,
                              "area_mm2": p.solution.area_mm2, "power_w": p.solution.power_w,
                              "network_cost": metric(p.solution, "network_cost"),
                              "design": point_text(p.solution), "status": p.solution.status} for p in self.points])

    def plot(self, path: str | Path) -> Path:
        return plot_front(self, Path(path) if isinstance(path, str) else path)


def _limited(problem: Problem, first: str, limits: dict[str, float | None]) -> Problem:
    """``problem`` minimizing ``first`` with the area, power and network cost budgets of ``limits`` (None:
    no budget); an ``iteration_time`` entry (None) drops the problem's own iteration-time target."""
    eng = problem.engine
    area = limits.get("area", eng.area_budget_mm2)
    power = limits.get("power", eng.power_budget_w)
    target = None if "iteration_time" in limits else problem.objective.iteration_time_target_s
    obj = Objective(first, target if first != "iteration_time" else None)
    net = problem.network
    if net is not None and "network_cost" in limits:
        net = dataclasses.replace(net, budget=limits["network_cost"])
    return dataclasses.replace(problem, engine=dataclasses.replace(eng, area_budget_mm2=area, power_budget_w=power),
                               objective=obj, network=net)


#: ``progress(solves, fraction)``: after each solve, how many so far and the share of the front traced (0..1).
FrontProgress = Callable[[int, float], None]


class _Tracer:
    def __init__(self, problem: Problem, time_limit: float | None, extra: Extra | None,
                 progress: FrontProgress | None = None) -> None:
        self.problem, self.time_limit, self.extra, self.solves = problem, time_limit, extra, 0
        self.progress, self.fraction = progress, 0.0
        self.families: list[Family] = []

    def _family(self, problem: Problem) -> Family | None:
        """The family of ``problem`` among this front's solves (made on first use; None if it cannot have one):
        the epsilon solves of one objective differ only in their budgets, so they share their replays, cuts
        and masters (``pipeline.solve.Family``)."""
        if not Family.eligible(problem, self.extra):
            return None
        for f in self.families:
            if f.admits(problem, self.extra):
                return f
        self.families.append(Family(problem))
        del self.families[:-2]  # the epsilon solves of one objective come together
        return self.families[-1]

    def _solve(self, first: str, limits: dict[str, float | None]) -> Solution:
        self.solves += 1
        try:
            q = _limited(self.problem, first, limits)
            with paced_collections():  # the front's families stay alive between its solves
                return solve(q, time_limit=self.time_limit, extra=self.extra, family=self._family(q))
        finally:
            if self.progress:
                self.progress(self.solves, self.fraction)

    def posed(self) -> Solution:
        """The problem as posed, its own budgets and objective."""
        self.solves += 1
        try:
            with paced_collections():
                return solve(self.problem, time_limit=self.time_limit, extra=self.extra)
        finally:
            if self.progress:
                self.progress(self.solves, self.fraction)

    def lex(self, first: str, second: str, limits: dict[str, float | None]) -> Solution:
        """Minimize ``first`` under ``limits``, then ``second`` keeping ``first`` (InfeasibleError if none).

        solve() already breaks ties by area (minimizing time) or by time (minimizing area or power). The one
        other second stage needing a time constraint (power after time) is left out: a time target can be
        unmeetable under the order the fixed point starts from, and the exact walk drops such a point anyway
        when the next epsilon finds the same time at lower power."""
        s = self._solve(first, limits)
        builtin = "area" if first == "iteration_time" else "iteration_time"
        if second == builtin or first == "iteration_time":
            return s
        keep = {**limits, first: metric(s, first) * (1 + REL) + 1e-12}  # an area or power budget: no order issue
        return self._solve(second, keep)


def pareto_front(problem: Problem, x: str = "area", y: str = "iteration_time", *, points: int | None = None,
                 time_limit: float | None = None, extra: Extra | None = None, max_points: int = 60,
                 progress: FrontProgress | None = None) -> ParetoFront:
    """Trace the front of ``y`` against ``x`` (each of iteration_time, area, power, network_cost) by epsilon constraints
    (module docstring). ``points``: None walks the front exactly (at most ``max_points`` points: a walk cut there
    says so in ``notes`` and ``untraced``); N uses N evenly spaced epsilons; each at most MAX_FRONT_POINTS.
    ``progress(solves, fraction)`` is called after every solve; the fraction is the share of the epsilon's range
    between the two ends walked so far (the number of corners is not known in advance). Raises SpecError for bad
    metrics and counts, InfeasibleError if no design is feasible."""
    for name, m in (("x", x), ("y", y)):
        if m not in METRICS:
            raise SpecError(f"--{name}: expected one of {', '.join(METRICS)}, got {m!r}")
    if x == y:
        raise SpecError(f"--x and --y must differ, both are {x!r}")
    if "network_cost" in (x, y) and problem.network is None:
        raise SpecError("network_cost: the problem has no network design space (give a dimension a list or range "
                        "of bandwidths and a cost_per_gbps)")
    for flag, n in (("--points", points), ("--max-points", max_points)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_FRONT_POINTS):
            raise SpecError(f"{flag}: expected a whole number from 2 (the two ends) to {MAX_FRONT_POINTS}, got "
                            f"{shown(n)}")
    # the epsilon goes on area or power, never on time (the same front, and no time target; see lex)
    e = y if x == "iteration_time" else x
    o = x if e == y else y
    free: dict[str, float | None] = {x: None, y: None}
    tr = _Tracer(problem, time_limit, extra, progress)
    hi = tr.lex(o, e, free)     # min-o end: the largest e on the front
    lo = tr.lex(e, o, free)     # min-e end
    found = [hi]
    e_lo = metric(lo, e)
    span = metric(hi, e) - e_lo
    cut: Solution | None = None  # the last point walked, when the walk stopped at max_points short of the end
    if points is None:
        cur = hi
        while metric(cur, e) > e_lo + _hair(e_lo):
            if len(found) + 1 >= max_points:  # (the far end, solved already, is one of them)
                cut = cur
                break
            tr.fraction = (metric(hi, e) - metric(cur, e)) / span if span > 0 else 1.0
            try:
                nxt = tr.lex(o, e, {**free, e: metric(cur, e) - _hair(metric(cur, e))})
            except InfeasibleError:
                break
            if metric(nxt, e) >= metric(cur, e):  # no progress (a solver tolerance): stop rather than loop
                break
            found.append(cur := nxt)
        method = f"exact walk of the corners, epsilon on {e}" + (f", cut at {max_points} points" if cut else "")
    else:
        e_hi = metric(hi, e)
        for i in range(1, points - 1):
            eps = e_lo + (e_hi - e_lo) * i / (points - 1)
            tr.fraction = (i - 1) / (points - 2)
            try:
                found.append(tr.lex(o, e, {**free, e: eps * (1 + REL)}))
            except InfeasibleError:
                pass
        method = f"{points} evenly spaced epsilons on {e}"
    found.append(lo)
    tr.fraction = 1.0  # the front is traced; the last solve is the problem as posed
    try:
        posed = tr.posed()
    except InfeasibleError:
        posed = None
    # the answer as posed is a design of the front's problem too (only the plotted budgets were lifted): it is a
    # candidate like the others, so a point it dominates (one a time limit stopped short) leaves the front to it
    front, gone = _nondominated(found + ([posed] if posed is not None else []), x, y)
    dropped = len(gone - ({_key(posed, x, y)} if posed is not None else set()))  # the epsilon solves' points
    pts = [FrontPoint(metric(s, x), metric(s, y), s) for s in front]
    # sorted by x with y falling: the first point is the min-x end and the last the min-y end (the ends'
    # own solves may be dominated: solve()'s tie-break keeps the first stage's answer when it would change
    # the network order)
    short = {m: m.replace("iteration_time", "time") for m in METRICS}

    def role(i: int) -> str:
        names = ([f"min-{short[x]}"] if i == 0 else []) + ([f"min-{short[y]}"] if i == len(pts) - 1 else [])
        status = pts[i].solution.status
        proven = "" if status == "optimal" else f" (not proven: {status})"
        return " and ".join(names) + " end" + proven if names else ""
    pts = [dataclasses.replace(p, role=role(i)) for i, p in enumerate(pts)]
    unproven = sum(p.solution.status != "optimal" for p in pts)
    notes = [f"{unproven} of the {len(pts)} points were not proven optimal (a solve stopped short of its proof, at "
             "its time limit or its gap): a design it did not reach may dominate them"] if unproven else []
    untraced = None
    if cut is not None:
        untraced = tuple(sorted((metric(cut, x), metric(lo, x))))
        notes.append(f"the exact walk stopped at its limit of {max_points} points: the front with {LABELS[e]} from "
                     f"{metric(lo, e) * SHOW[e]:.6g} to {metric(cut, e) * SHOW[e]:.6g} was not walked, so designs "
                     "there may be missing (the plot draws that stretch dashed); raise --max-points or give --points N")
    budget = {"area": problem.engine.area_budget_mm2, "power": problem.engine.power_budget_w,
              "iteration_time": problem.objective.iteration_time_target_s,
              "network_cost": problem.network.budget if problem.network is not None else None}[x]
    return ParetoFront(x, y, pts, posed, method, tr.solves, budget, dropped, notes, untraced)


def _key(s: Solution, x: str, y: str) -> tuple[float, float]:
    """A solution's point, rounded so that one design found twice is one point."""
    return round(metric(s, x), 12), round(metric(s, y), 12)


def _nondominated(sols: list[Solution], x: str, y: str) -> tuple[list[Solution], set[tuple[float, float]]]:
    """Distinct non-dominated points sorted by x; and the points dropped as dominated."""
    uniq: dict[tuple[float, float], Solution] = {}
    for s in sols:
        uniq.setdefault(_key(s, x, y), s)
    out, best_y, dropped = [], float("inf"), set()
    for kx, ky in sorted(uniq):
        if ky < best_y * (1 - 1e-9):
            out.append(uniq[(kx, ky)])
            best_y = ky
        else:
            dropped.add((kx, ky))
    return out, dropped


#: A front of more points than this numbers them on the picture instead of naming their designs.
MAX_NAMED = 8


def plot_front(front: ParetoFront, path: Path) -> Path:
    """The front as a staircase (the best y reachable within each x), its ends and the problem as posed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sx, sy = SHOW[front.x], SHOW[front.y]
    xs = [p.x * sx for p in front.points]
    ys = [p.y * sy for p in front.points]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    gap = front.untraced
    for k in range(len(xs) - 1):  # the staircase, step by step: a stretch the walk did not reach is dashed
        walked = gap is None or not (front.points[k].x >= gap[0] * (1 - 1e-12)
                                     and front.points[k + 1].x <= gap[1] * (1 + 1e-12))
        ax.step(xs[k:k + 2], ys[k:k + 2], where="post", color="#4C72B0" if walked else "#999999",
                linewidth=1.2, alpha=0.7, linestyle="-" if walked else "--",
                label=None if walked else "not walked (the exact walk's point limit)")
    ax.plot(xs, ys, "o", color="#4C72B0", markersize=5, label="Pareto-optimal designs")
    many = len(front.points) > MAX_NAMED  # then each point is numbered as the table and the CSV list it
    for i, (p, px, py) in enumerate(zip(front.points, xs, ys)):
        ax.annotate(str(i + 1) if many else point_text(p.solution), (px, py), textcoords="offset points",
                    xytext=(4, 4), fontsize=6)
    for p, px, py in zip(front.points, xs, ys):
        if p.role:
            ax.plot(px, py, "s", markersize=10, markerfacecolor="none", markeredgecolor="#DD8452", markeredgewidth=1.5)
            ax.annotate(p.role, (px, py), textcoords="offset points", xytext=(4, -11), fontsize=7, color="#DD8452")
    if front.as_posed is not None:
        ax.plot(metric(front.as_posed, front.x) * sx, metric(front.as_posed, front.y) * sy, "*", markersize=15,
                color="#C44E52", label="as posed (the problem's own budgets)")
    if front.x_budget is not None:
        ax.axvline(front.x_budget * sx, color="#C44E52", linestyle="--", linewidth=0.8, label=f"{front.x} budget")
    ax.set_xlabel(LABELS[front.x])
    ax.set_ylabel(LABELS[front.y])
    name = front.as_posed.problem if front.as_posed else (front.points[0].solution.problem if front.points else "")
    ax.set_title(f"{name}: {front.y.replace('_', ' ')} vs {front.x.replace('_', ' ')}, {len(front.points)} points\n"
                 f"({front.method})", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if many:
        ax.text(1.01, 0.7, "point n: the n-th row of\n'codesign pareto' (and --csv)", transform=ax.transAxes,
                fontsize=7, va="top")  # (under the legend, clear of the points' labels)
    fig.tight_layout()
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, format="png", bbox_inches="tight")  # (or to an open file, from the output layer)
    plt.close(fig)
    return path
