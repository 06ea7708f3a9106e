"""The size of a MILP as the solver sees it: a plain record, free of Pyomo, so a Solution carries one
without importing the modelling stack."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSize:
    variables: int
    binaries: int
    constraints: int
