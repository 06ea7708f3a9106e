"""Replaying a Solution in the simulator, and saying where the MILP's prediction and the replay part.

The MILP abstracts: it serves collectives whole on one network, gives each chunk-phase the endpoint to
itself, and splits the NPU statically. The replay shares the endpoint among the chunk-phases active
at once, lets collectives on different dimensions overlap, slows compute only while communication is
really active, and holds ACE chunks in SRAM. The report names which of these moved the period.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..milp.compute_order import with_compute_order
from ..platform.endpoint import design_of
from ..problem.model import Problem, at_design
from ..schedule.bounds import LowerBound, lower_bound
from ..sim.replay import SimResult, simulate
from ..spec.units import SECONDS, format_quantity
from .solution import Solution

TOLERANCE = 0.05  # relative difference beyond which the prediction is flagged


@dataclass(frozen=True)
class Validation:
    """Predicted (MILP) against simulated period (s), their relative difference, the proven lower bound
    (s) both respect, and the findings that explain the difference, most important first."""

    predicted_s: float
    simulated_s: float
    rel_diff: float
    bound: LowerBound
    findings: tuple[str, ...]
    sim: SimResult

    @property
    def flagged(self) -> bool:
        return abs(self.rel_diff) > TOLERANCE

    def warning(self) -> str:
        t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
        direction = "above" if self.rel_diff > 0 else "below"
        what = "underestimated" if self.rel_diff > 0 else "overestimated"
        head = (f"simulated {t(self.simulated_s)} is {100 * abs(self.rel_diff):.1f}% {direction} the MILP's "
                f"{t(self.predicted_s)}: the MILP {what} ")
        return head + ("; ".join(self.findings) if self.findings else "the iteration (no single cause found)")

    def to_dict(self) -> dict:
        return {"predicted_s": self.predicted_s, "simulated_s": self.simulated_s, "rel_diff": self.rel_diff,
                "lower_bound_s": self.bound.bound_s, "lower_bound_terms_s": self.bound.terms,
                "flagged": self.flagged, "findings": list(self.findings),
                "simulated_compute_s": self.sim.compute_time_s, "simulated_exposed_comm_s": self.sim.exposed_comm_s,
                "utilization": self.sim.utilization, "dim_stretch": self.sim.dim_stretch,
                "sram_peak_bytes": self.sim.sram_peak_bytes, "sram_wait_s": self.sim.sram_wait_s,
                "events": self.sim.events}


def _findings(sol: Solution, sim: SimResult) -> list[str]:
    """What moved the simulated period away from the prediction, in the direction it moved."""
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
    slower = sim.period_s > sol.iteration_time_s
    out: list[tuple[float, str]] = []
    dc = sim.compute_time_s - sol.compute_time_s
    if slower:
        for dim, stretch in sim.dim_stretch.items():
            if stretch > 1.05:
                busy = sim.utilization.get(dim, 0.0)
                out.append((stretch - 1, f"the endpoint bandwidth behind {dim}: its chunk-phases took "
                            f"{100 * (stretch - 1):.0f}% longer than alone, sharing communication's memory and "
                            f"reduction bandwidth with phases on other dimensions ({dim} busy {100 * busy:.0f}% "
                            "of the period)"))
        if dc > 0.01 * sol.compute_time_s:
            out.append((dc / sol.iteration_time_s, f"compute contention: {t(sim.compute_time_s)} of compute per "
                        f"iteration simulated against {t(sol.compute_time_s)} predicted"))
        if sim.sram_wait_s > 0.01 * sol.iteration_time_s:
            out.append((sim.sram_wait_s / sol.iteration_time_s, f"SRAM: a chunk waited {t(sim.sram_wait_s)} on "
                        "average for room"))
    else:
        busiest = max((v for k, v in sim.utilization.items() if k.startswith("dim")), default=0.0)
        out.append((1.0, "the network: collectives overlapped across dimensions, which the MILP serializes "
                    f"(busiest dimension {100 * busiest:.0f}% of the period)"))
        if dc < -0.01 * sol.compute_time_s:
            out.append((-dc / sol.iteration_time_s, f"compute: {t(sim.compute_time_s)} per iteration simulated "
                        f"against {t(sol.compute_time_s)} predicted, using cores and HBM communication left idle"))
    return [msg for _, msg in sorted(out, key=lambda x: -x[0])][:3]


def validate(problem: Problem, sol: Solution, *, iterations: int = 8) -> Validation:
    """Replay ``sol`` (its design, under its dispatch priorities or else the problem's policy) and compare
    the period with the one it reports. A solution fresh from ``solve`` carries its replay, which is used
    as it is; one read back from JSON, or edited, is replayed again."""
    problem, _ = with_compute_order(problem, order=sol.compute_order)  # a task graph's, as the solve chose it
    problem = at_design(problem, sol.choice)  # the network at the solution's bandwidths
    design = design_of(problem.engine, sol.choice)
    sim = sol.sim if sol.sim is not None and iterations == 8 else None
    if sim is None:
        sim = simulate(problem, design, order=sol.priority, iterations=iterations)
    rel = (sim.period_s - sol.iteration_time_s) / sol.iteration_time_s if sol.iteration_time_s else 0.0
    return Validation(sol.iteration_time_s, sim.period_s, rel, lower_bound(problem, design), tuple(_findings(sol, sim)),
                      sim)
