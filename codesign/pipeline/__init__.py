"""One solve, end to end: the design search, the master MILP against the simulator (``search``), driven
by ``solve`` in three public stages (``build``, ``run``, ``assign``); the answer as a Solution
(``solution``); an independent replay of a solution (``validation``); and the prices of the design's
resources (``shadow``). Import the modules themselves: ``codesign.pipeline.solve`` is the module,
``codesign.pipeline.solve.solve`` (or ``codesign.solve``) the function."""
