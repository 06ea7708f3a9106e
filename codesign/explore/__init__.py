"""Exploring a design space with many solves: sweep parameters and their values (``params``), the sweep's
plan and run (``sweep``), what a worker does with one point (``points``), where points run (``executors``),
the results file that makes sweeps resumable (``results``), their pictures (``plots``), and Pareto fronts
by epsilon constraints (``pareto``). Named ``explore``, not ``sweep``: ``codesign.sweep`` is the
function, and a subpackage of that name would shadow it once imported."""
