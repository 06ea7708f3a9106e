"""Discrete-event simulation: a tiny event loop (``events``) and codesign's own chunk-grain replay of
training iterations at a design (``replay``). Times in the replay are in seconds. The ASTRA-sim 1.0
compatible mode, which runs on the same event loop, is ``codesign.astra``."""
