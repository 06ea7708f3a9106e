"""The network order at one design as a MILP in HiGHS: a positional (assignment) formulation of 1|r_j|L_max.

Binary z[k, n] = 1 when collective k is the n-th the network serves; S[n] is the start of position n
(us from the reduction's cut, ``order_data``); L the maximum lateness. At a fixed design the durations
are constants, so every constraint is linear without a single big-M:

    sum_n z[k, n] = 1,  sum_k z[k, n] = 1                      (a permutation)
    S[n]     >= sum_k r_k z[k, n]                             (position n starts after its collective's release)
    S[n + 1] >= S[n] + sum_k p_k z[k, n]                      (one collective at a time)
    L        >= S[n] + sum_k (p_k - d_k) z[k, n]              (lateness of position n)
    minimize L;  T = P + max(0, L)

Strengthening (docs/formulation.md derives each):
  - L >= Horn's preemptive bound, and L >= 0 (the period never drops below the compute);
  - S[n] >= (n+1)-th smallest release, and S[n] >= earliest release + the n shortest durations;
  - immediate selections against the incumbent (order_data.immediate_selections): pairs every
    better order must keep, written as position precedences, and the position windows they imply
    (a collective with a predecessors and b successors sits in positions a..K-1-b), which delete
    z columns before HiGHS sees them;
  - the LP relaxation by column generation (z columns near the incumbent's positions, then every
    column of negative reduced cost): if its bound reaches the cutoff the incumbent is proven without
    branching; otherwise reduced-cost fixing drops the columns no better order can use;
  - the incumbent order as the MIP start, and the incumbent as the objective cutoff.
Built as arrays and passed to highspy directly (``highs.solve_arrays``): a Pyomo build of the same
model costs more than HiGHS's solve of it (BENCHMARKS.md, "MILP scaling").
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .highs import ArrayModel, ArrayResult, solve_arrays
from .order_data import Instance, horn_bound, immediate_selections, starts


@dataclass(frozen=True)
class PositionModel:
    """The arrays plus what is needed to read an order back and to hand HiGHS a start."""

    arrays: ArrayModel
    zk: np.ndarray          # collective of each z column
    zn: np.ndarray          # position of each z column
    n: int
    selections: int         # immediate selections applied (pairs)
    fixed_out: int          # z columns deleted by the position windows
    lmax_lb: float          # the lower bound put on L (us)

    @property
    def s0(self) -> int:
        return len(self.zk)

    @property
    def L(self) -> int:
        return len(self.zk) + self.n

    def order(self, x: np.ndarray) -> list[int]:
        z = x[: self.s0]
        pos = {}
        for j in np.nonzero(z > 0.5)[0]:
            pos[int(self.zn[j])] = int(self.zk[j])
        return [pos[i] for i in range(self.n)]

    def start_vector(self, inst: Instance, seq: list[int]) -> np.ndarray | None:
        """The column values of order ``seq``, or None if the windows exclude it."""
        at = {(k, i): True for i, k in enumerate(seq)}
        x = np.zeros(self.L + 1)
        hit = 0
        for j, (k, n) in enumerate(zip(self.zk, self.zn)):
            if at.get((int(k), int(n))):
                x[j] = 1.0
                hit += 1
        if hit != self.n:
            return None
        st = starts(inst, seq)
        x[self.s0:self.s0 + self.n] = [st[k] for k in seq]
        x[self.L] = max(self.lmax_lb, max(st[k] + inst.proc[k] - inst.due[k] for k in seq))
        return x


def _closure(n: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Transitive closure of the precedence pairs as a boolean matrix (Floyd-Warshall on bits)."""
    reach = np.zeros((n, n), dtype=bool)
    for i, j in pairs:
        reach[i, j] = True
    for k in range(n):
        reach |= reach[:, [k]] & reach[[k], :]
    return reach


def build_positional(inst: Instance, lmax_target: float | None = None) -> PositionModel:
    """The positional MILP of ``inst``; with ``lmax_target`` (the incumbent's L), only orders that beat it
    are kept feasible (immediate selections and windows), so an infeasible model proves the incumbent."""
    K = inst.n
    r, p, d = inst.release, inst.proc, inst.due
    pairs = immediate_selections(inst, lmax_target) if lmax_target is not None else []
    reach = _closure(K, pairs)
    if np.any(np.diag(reach)):  # contradictory selections: nothing beats the incumbent
        reach = np.zeros((K, K), dtype=bool)
        lo, hi = np.zeros(K, int), np.full(K, -1)
    else:
        lo = reach.sum(axis=0)                  # predecessors
        hi = K - 1 - reach.sum(axis=1)          # K - 1 - successors
    zk, zn = [], []
    for k in range(K):
        for pos in range(lo[k], hi[k] + 1):
            zk.append(k)
            zn.append(pos)
    zk_a, zn_a = np.array(zk, dtype=np.int64), np.array(zn, dtype=np.int64)
    nz = len(zk_a)
    S0, L = nz, nz + K
    ncol = nz + K + 1
    rows, cols, vals = [], [], []
    row_lo, row_hi = [], []
    R = 0

    def add_block(rw, cl, vl, lo_, hi_):
        nonlocal R
        rows.append(np.asarray(rw) + R)
        cols.append(np.asarray(cl))
        vals.append(np.asarray(vl, dtype=float))
        row_lo.extend(lo_)
        row_hi.extend(hi_)
        R += len(lo_)

    zidx = np.arange(nz)
    inf = np.inf
    # (a) each collective once, (b) each position once
    add_block(zk_a, zidx, np.ones(nz), [1.0] * K, [1.0] * K)
    add_block(zn_a, zidx, np.ones(nz), [1.0] * K, [1.0] * K)
    # (c) S[n] - sum_k r_k z[k, n] >= 0
    add_block(np.concatenate([zn_a, np.arange(K)]), np.concatenate([zidx, S0 + np.arange(K)]),
              np.concatenate([-r[zk_a], np.ones(K)]), [0.0] * K, [inf] * K)
    # (d) S[n+1] - S[n] - sum_k p_k z[k, n] >= 0
    if K > 1:
        m = zn_a < K - 1
        nn = np.arange(K - 1)
        add_block(np.concatenate([zn_a[m], nn, nn]), np.concatenate([zidx[m], S0 + nn + 1, S0 + nn]),
                  np.concatenate([-p[zk_a[m]], np.ones(K - 1), -np.ones(K - 1)]), [0.0] * (K - 1), [inf] * (K - 1))
    # (e) L - S[n] - sum_k (p_k - d_k) z[k, n] >= 0
    nn = np.arange(K)
    add_block(np.concatenate([zn_a, nn, nn]), np.concatenate([zidx, S0 + nn, np.full(K, L)]),
              np.concatenate([-(p - d)[zk_a], -np.ones(K), np.ones(K)]), [0.0] * K, [inf] * K)
    # (f) precedences i -> j of the transitive reduction: pos(j) - pos(i) >= 1
    red = reach & ~(reach.astype(np.int64) @ reach.astype(np.int64) > 0)
    pi, pj = np.nonzero(red)
    for i, j in zip(pi.tolist(), pj.tolist()):
        ci, cj = np.nonzero(zk_a == i)[0], np.nonzero(zk_a == j)[0]
        add_block(np.zeros(len(ci) + len(cj), int), np.concatenate([cj, ci]),
                  np.concatenate([zn_a[cj], -zn_a[ci]]).astype(float), [1.0], [inf])

    # bounds: z binary; S[n] above the (n+1)-th release and the earliest release plus the n shortest jobs
    col_lo = np.zeros(ncol)
    col_hi = np.ones(ncol)
    rs, ps = np.sort(r), np.concatenate([[0.0], np.cumsum(np.sort(p))])
    col_lo[S0:S0 + K] = np.maximum(rs, rs[0] + ps[:K])
    col_hi[S0:S0 + K + 1] = inf
    horn = horn_bound(inst)
    lmax_lb = max(0.0, horn)
    col_lo[L] = lmax_lb
    integer = np.zeros(ncol, dtype=bool)
    integer[:nz] = True
    cost = np.zeros(ncol)
    cost[L] = 1.0
    arrays = ArrayModel(cost, col_lo, col_hi, integer, np.array(row_lo), np.array(row_hi),
                        np.concatenate(rows), np.concatenate(cols), np.concatenate(vals))
    return PositionModel(arrays, zk_a, zn_a, K, int(red.sum()), K * K - nz, lmax_lb)


@dataclass(frozen=True)
class OrderSolve:
    """One design's order MILP: status (optimal | cutoff | time_limit | error), the best order found by
    HiGHS (None if it found none better than the start), L values (us) and what the model looked like."""

    status: str
    order: list[int] | None
    lmax: float | None
    lmax_bound: float | None
    result: ArrayResult
    model: PositionModel
    lp_bound: float | None
    lp_time_s: float = 0.0
    fixed: int = 0          # z columns dropped by reduced-cost fixing


def _restrict(a: ArrayModel, keep: np.ndarray) -> ArrayModel:
    """The model on the columns ``keep`` (sorted indices), as a MILP (or an LP with ``relax``)."""
    remap = -np.ones(len(a.cost), dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    m = remap[a.cols] >= 0
    return ArrayModel(a.cost[keep], a.col_lo[keep], a.col_hi[keep], a.integer[keep], a.row_lo, a.row_hi,
                      a.rows[m], remap[a.cols[m]], a.vals[m])


def column_generation(pm: PositionModel, seq: list[int], *, width: int = 2,
                      time_limit_s: float = 60.0) -> tuple[float | None, np.ndarray | None]:
    """The positional model's LP relaxation by column generation: start from the z columns within
    ``width`` positions of ``seq``, add every column whose reduced cost c_j - A_j^T y is negative, and
    stop when none is. Returns the LP optimum (a valid bound for the full model) and the reduced
    costs of all columns, or (None, None) if an LP did not solve. At K = 200 this takes a fraction of
    a second where the full LP (40,000 columns, about 10,000 dual simplex iterations) takes 15 s."""
    import highspy

    from .highs import _pass, new_highs
    a = pm.arrays
    ncol, nz = len(a.cost), pm.s0
    pos = np.empty(pm.n, dtype=np.int64)
    pos[np.asarray(seq)] = np.arange(pm.n)
    active = np.ones(ncol, dtype=bool)
    active[:nz] = np.abs(pm.zn - pos[pm.zk]) <= width
    t_end = time.perf_counter() + time_limit_s
    widened = False
    while time.perf_counter() < t_end:
        keep = np.nonzero(active)[0]
        h = new_highs()
        h.resetGlobalScheduler(True)
        h.setOptionValue("threads", 1)
        h.setOptionValue("time_limit", max(0.01, t_end - time.perf_counter()))
        _pass(h, _restrict(a, keep), relax=True)
        h.run()
        h.resetGlobalScheduler(True)
        st = h.getModelStatus()
        if st != highspy.HighsModelStatus.kOptimal:
            if widened or st not in (highspy.HighsModelStatus.kInfeasible,):
                return None, None
            active[:] = True  # the start's columns were cut by the windows: fall back to every column
            widened = True
            continue
        y = np.asarray(h.getSolution().row_dual)
        rc = a.cost - np.bincount(a.cols, weights=a.vals * y[a.rows], minlength=ncol)
        obj = h.getInfo().objective_function_value
        neg = ~active & (rc < -1e-9 * max(1.0, abs(obj)))
        if not neg.any():
            return obj, rc
        active |= neg
    return None, None


def solve_positional(inst: Instance, incumbent: list[int], *, time_limit_s: float, rel_gap: float, threads: int,
                     cutoff_lmax: float | None = None, diagnose: bool = False) -> OrderSolve:
    """Search for an order better than ``cutoff_lmax`` (default: the incumbent's L) at this design.

    First the LP relaxation by column generation: if its bound reaches the cutoff, nothing beats the
    incumbent and no branching is needed. Otherwise reduced-cost fixing drops every z column whose
    reduced cost exceeds cutoff - LP bound (no order better than the cutoff can use it: its objective is
    at least the LP bound plus the reduced costs of its columns), and HiGHS solves what is left with the
    incumbent as MIP start. ``rel_gap`` is relative to the period T, so it is converted to an absolute
    gap on L (HiGHS's would be relative to L). ``diagnose`` is accepted for symmetry: the LP bound is
    always computed and reported."""
    from .order_data import lmax as eval_lmax
    t0 = time.perf_counter()
    inc_l = eval_lmax(inst, incumbent)
    target = inc_l if cutoff_lmax is None else min(cutoff_lmax, inc_l)
    target_c = max(target, 0.0)
    pm = build_positional(inst, target_c)
    cut = target_c - 1e-9 * max(1.0, target_c) if target_c > pm.lmax_lb else None
    lp, rc = column_generation(pm, incumbent, time_limit_s=time_limit_s)
    if lp is not None and cut is not None and lp >= cut:
        res = ArrayResult("cutoff", None, lp, None, time.perf_counter() - t0, 0)
        return OrderSolve("cutoff", None, None, lp, res, pm, lp)
    arrays, keep = pm.arrays, np.arange(len(pm.arrays.cost))
    if lp is not None and cut is not None:
        drop = np.zeros(len(keep), dtype=bool)
        drop[:pm.s0] = rc[:pm.s0] > (cut - lp) + 1e-9 * max(1.0, abs(lp))
        keep = np.nonzero(~drop)[0]
        arrays = _restrict(pm.arrays, keep)
    full_start = pm.start_vector(inst, incumbent)
    start = full_start[keep] if full_start is not None and np.all(full_start[np.setdiff1d(
        np.arange(len(full_start)), keep)] == 0) else None
    abs_gap = rel_gap * (inst.compute + target_c)
    rel_on_l = abs_gap / max(target_c, 1e-9)
    left = max(0.01, time_limit_s - (time.perf_counter() - t0))
    res = solve_arrays(arrays, time_limit_s=left, rel_gap=min(rel_on_l, 1.0), threads=threads, start=start,
                       cutoff=cut)
    order = None
    if res.x is not None:
        x = np.zeros(len(pm.arrays.cost))
        x[keep] = res.x
        order = pm.order(x)
    lval = eval_lmax(inst, order) if order is not None else None
    bound = res.bound if res.bound is None or lp is None else max(res.bound, lp)
    return OrderSolve(res.status, order, lval, bound, res, pm, lp, fixed=len(pm.arrays.cost) - len(keep))
