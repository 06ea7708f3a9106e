"""One solve, end to end: a problem's durations, its MILP and the network-order fixed point or the
order search (``solve``), the answer as a Solution (``solution``), its replay in the simulator
(``validation``), LIFO/FIFO against the chosen order in the simulator (``order_compare``), and the prices
of the design's resources (``shadow``). Import the modules themselves: ``codesign.pipeline.solve`` is the
module, ``codesign.pipeline.solve.solve`` (or ``codesign.solve``) the function."""
