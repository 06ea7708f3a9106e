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


def __getattr__(name: str):
    # sweep, pareto_front and shadow_prices pull in pandas and matplotlib: import them on first use.
    # Importing the submodule codesign.sweep sets this package's 'sweep' to the module, so bind the
    # function over it.
    where = {"sweep": "sweep", "pareto_front": "pareto", "shadow_prices": "shadow"}
    if name not in where:
        raise AttributeError(f"module 'codesign' has no attribute {name!r}")
    import importlib
    fn = getattr(importlib.import_module(f".{where[name]}", __name__), name)
    globals()[name] = fn
    return fn


__all__ = ["load_problem", "parse_problem", "solve", "sweep", "pareto_front", "shadow_prices", "Problem", "Solution", "CodesignError", "SpecError", "InfeasibleError",
           "SolverError"]
__version__ = "0.1.0"
