"""codesign: co-design of compute-communication overlap for distributed DL training platforms.

Python API:
    problem = codesign.load_problem("problems/quickstart.yaml")
    solution = codesign.solve(problem, time_limit=30, extra=my_constraints)
"""
from .errors import CodesignError, InfeasibleError, SolverError, SpecError
from .pipeline import solve
from .problem import Problem
from .solution import Solution
from .spec import load_problem, parse_problem

__all__ = ["load_problem", "parse_problem", "solve", "Problem", "Solution", "CodesignError", "SpecError", "InfeasibleError",
           "SolverError"]
__version__ = "0.1.0"
