"""The schedule of a training iteration at fixed durations: its tasks and their dependencies
(``iteration``), the serial-network replay of a dispatch policy or a fixed network order, whose period the
MILP reproduces exactly (``serial``), and the proven lower bound on any schedule at a design (``bounds``)."""
