"""Workloads: the layer graph of a training iteration, and importers that build it."""
from .astra import AstraLayer, AstraWorkload, astra_to_workload, load_astra_workload, parse_astra_workload
from .model import COLLECTIVES, PARALLELISMS, Comm, Compute, Layer, Workload

__all__ = ["COLLECTIVES", "PARALLELISMS", "Comm", "Compute", "Layer", "Workload", "AstraLayer",
           "AstraWorkload", "astra_to_workload", "load_astra_workload", "parse_astra_workload"]
