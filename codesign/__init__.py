"""codesign: co-design of compute-communication overlap for distributed DL training platforms.

Python API:
    problem = codesign.load_problem("problems/quickstart.yaml")
    solution = codesign.solve(problem, time_limit=30, extra=my_constraints)
    results = codesign.sweep(problem, {"topology.dims[1].bandwidth": "25GB/s,50GB/s"})  # a DataFrame

The names below are imported on first use, so ``import codesign`` alone imports no solver, graph,
dataframe or plotting library.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import CodesignError, InfeasibleError, SolverError, SpecError

#: Where each lazily imported name lives.
_LAZY = {
    "load_problem": "codesign.problem.load",
    "parse_problem": "codesign.problem.load",
    "solve": "codesign.pipeline.solve",
    "sweep": "codesign.explore.sweep",  # pandas and matplotlib are imported inside, on first use
    "pareto_front": "codesign.explore.pareto",
    "shadow_prices": "codesign.pipeline.shadow",
    "Problem": "codesign.problem.model",
    "Solution": "codesign.pipeline.solution",
}

__all__ = ["load_problem", "parse_problem", "solve", "sweep", "pareto_front", "shadow_prices", "Problem", "Solution",
           "CodesignError", "SpecError", "InfeasibleError", "SolverError"]


def _version() -> str:
    """The installed distribution's version (pyproject.toml is its one source)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("codesign")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    elif name == "__version__":
        value = _version()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
