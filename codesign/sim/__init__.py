"""Discrete-event simulation: a tiny event core and the ASTRA-sim 1.0 compatible mode (times in ns)."""
from .astra_mode import AstraLayerStats, AstraResult, simulate_astra
from .engine import Engine

__all__ = ["Engine", "simulate_astra", "AstraResult", "AstraLayerStats"]
