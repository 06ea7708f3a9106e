"""The command line: ``codesign solve | validate | simulate`` (``main``, which also holds the parser),
``sweep | pareto | shadow`` (``explore``) and ``reproduce`` (``study``); ``simulate_inputs`` reads the
design and order ``codesign simulate`` replays. Subcommand modules import what they run on first use,
so ``codesign --help`` imports no solver."""
from .main import main

__all__ = ["main"]
