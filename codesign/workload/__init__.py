"""Workloads: the layer graph of a training iteration, and importers that build it."""
from .model import COLLECTIVES, PARALLELISMS, Comm, Compute, Layer, Workload
from .astra import AstraLayer, AstraWorkload, astra_to_workload, load_astra_workload, parse_astra_workload

__all__ = ["COLLECTIVES", "PARALLELISMS", "Comm", "Compute", "Layer", "Workload", "AstraLayer",
           "AstraWorkload", "astra_to_workload", "load_astra_workload", "parse_astra_workload"]
