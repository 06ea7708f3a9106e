"""The problem: what one solve is asked (``model``: the workload, topology, NPU, engine, objective,
schedule and solver settings, in SI units) and how a problem file's sections become one, validated
(``load``). The cheap dataclasses and the two loaders are exported here."""
from .load import load_problem, parse_problem
from .model import OBJECTIVES, ORDERS, Objective, Problem, ScheduleSpec, SolverSpec

__all__ = ["Problem", "Objective", "ScheduleSpec", "SolverSpec", "OBJECTIVES", "ORDERS", "load_problem",
           "parse_problem"]
