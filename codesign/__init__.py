"""codesign: co-design of compute-communication overlap for distributed DL training platforms.

Python API:
    problem = codesign.load_problem("problems/quickstart.yaml")
    solution = codesign.solve(problem, time_limit=30, extra=my_constraints)
    results = codesign.sweep(problem, {"topology.dims[1].bandwidth": "25GB/s,50GB/s"})  # a DataFrame
"""
from .errors import CodesignError, InfeasibleError, SolverError, SpecError
from .explore.pareto import pareto_front
from .pipeline.shadow import shadow_prices
from .pipeline.solution import Solution
from .pipeline.solve import solve
from .problem.load import load_problem, parse_problem
from .problem.model import Problem
from .explore.sweep import sweep  # pandas and matplotlib are imported inside, on first use

__all__ = ["load_problem", "parse_problem", "solve", "sweep", "pareto_front", "shadow_prices", "Problem", "Solution",
           "CodesignError", "SpecError", "InfeasibleError", "SolverError"]
__version__ = "0.1.0"
