"""Least-absolute-deviation fits as linear programs on HiGHS: what ``codesign calibrate`` fits a platform
profile's parameters with (docs/accuracy.md, "Calibration").

Minimize sum_i w_i |A_i x - b_i| over lo <= x <= hi: each residual is split into e+_i - e-_i >= 0, so the
problem is an LP (an L1 fit weighs every measurement alike against outliers far less than least squares,
and with w_i = 1 / b_i it minimizes the sum of relative errors, the figure predictions are judged by).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .highs import new_highs, own_scheduler


@dataclass(frozen=True)
class L1Fit:
    """The fitted ``x``, the objective sum_i w_i |A_i x - b_i| and HiGHS's status text."""

    x: tuple[float, ...]
    objective: float
    status: str


def l1_fit(A: Sequence[Sequence[float]], b: Sequence[float], w: Sequence[float] | None = None,
           lo: Sequence[float] | None = None, hi: Sequence[float] | None = None) -> L1Fit:
    """Solve min_x sum_i w_i |A_i x - b_i|, lo <= x <= hi (defaults: w 1, x unbounded), on HiGHS."""
    import highspy

    A_ = np.asarray(A, dtype=float)
    b_ = np.asarray(b, dtype=float)
    m, n = A_.shape
    if b_.shape != (m,):
        raise ValueError(f"A has {m} rows but b has {b_.size} values")
    w_ = np.ones(m) if w is None else np.asarray(w, dtype=float)
    inf = highspy.kHighsInf
    lo_ = np.full(n, -inf) if lo is None else np.asarray(lo, dtype=float)
    hi_ = np.full(n, inf) if hi is None else np.asarray(hi, dtype=float)
    with own_scheduler():
        h = new_highs()
        # columns: x (n), then e+ (m), e- (m)
        cost = np.concatenate([np.zeros(n), w_, w_])
        lower = np.concatenate([lo_, np.zeros(2 * m)])
        upper = np.concatenate([hi_, np.full(2 * m, inf)])
        h.addVars(n + 2 * m, lower, upper)
        h.changeColsCost(n + 2 * m, np.arange(n + 2 * m, dtype=np.int32), cost)
        # rows: A_i x - e+_i + e-_i = b_i
        starts, index, value = [], [], []
        for i in range(m):
            starts.append(len(index))
            nz = np.nonzero(A_[i])[0]
            index.extend(int(j) for j in nz)
            value.extend(float(A_[i, j]) for j in nz)
            index.extend((n + i, n + m + i))
            value.extend((-1.0, 1.0))
        h.addRows(m, b_, b_, len(index), np.asarray(starts, dtype=np.int32), np.asarray(index, dtype=np.int32),
                  np.asarray(value, dtype=float))
        h.run()
        status = h.modelStatusToString(h.getModelStatus())
        sol = np.asarray(h.getSolution().col_value[:n], dtype=float)
        objective = float(h.getInfo().objective_function_value)
    return L1Fit(tuple(float(v) for v in sol), objective, status)
