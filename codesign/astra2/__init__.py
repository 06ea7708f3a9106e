"""ASTRA-sim 2.x compatibility: its network YAML, system JSON and per-rank Chakra traces, run on its
analytical backends (congestion-unaware and congestion-aware) to the cycle (docs/astra-sim-2.md)."""
