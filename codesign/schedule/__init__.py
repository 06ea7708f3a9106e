"""The schedule of a training iteration: its tasks and their dependencies, and the order type for the
network's dispatch priorities (``iteration``), and a proven lower bound on any schedule at a design
(``bounds``)."""
