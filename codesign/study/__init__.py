"""The ACE study (ISCA 2021) reproduced with codesign: its cases and the problem files they become
(``cases``), the metrics computed from each solve, whose answer is a simulated period (``metrics``),
running every case on the sweep's runners and summarizing them beside the paper's numbers (``run``), and
its tables and plots (``report``, ``plots``).
``python -m codesign.study --generate`` rewrites problems/paper/; ``codesign reproduce`` runs the study."""
