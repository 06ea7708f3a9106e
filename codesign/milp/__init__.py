"""The MILPs: the co-design model over a fixed network order (``data``, ``model``), the order problem
of ``order: optimize`` (``order_data``, ``order_model``, ``order_solve``), the flow-shop relaxation and
heuristics for the chunk-grain replay (``flowshop``), the HiGHS interface (``highs``), model sizes
(``size``) and diagnostics. Importing this package imports no solver: each module imports Pyomo or
highspy itself."""
