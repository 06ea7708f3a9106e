"""Interval cuts (docs/formulation.md, section 3.5): Jackson's preemptive bound per dimension and per SRAM
option, added lazily where the master's design violates one, and computed at many designs at once for the
floors (``IntervalCuts``, a part of ``master.Master``)."""
from __future__ import annotations

import numpy as np

from ..platform.pools import sram_need
from .data import TIME_UNIT, Term
from .lateness import instance

#: A relative tolerance for "this cut is violated" (the master's T is in microseconds).
VIOLATION = 1e-7


class IntervalCuts:
    """The interval cuts of ``master.Master`` (whose attributes they read and set)."""

    def _interval_data(self):
        """Per dimension: each collective's release and due date shifted by the link time of the phases
        before its first and after its last visit there (constants: the engine does not change a link
        time, and with open bandwidths each dimension's largest is taken, the shortest time, so the shift
        stays a lower bound), from the separable iteration's closed form (lateness.instance, nominal compute)."""
        md = self.md
        K = len(md.demands)
        inst = instance(self.shape, [t * TIME_UNIT for t in self.compute_us], [0.0] * K)
        out = {}
        for d in range(len(md.problem.topology.dims)):
            ks, rel, due = [], [], []
            for k in range(K):
                dims = md.demands[k].phase_dims
                if d not in dims:
                    continue
                on = [i for i, x in enumerate(dims) if x == d]
                link = [s / TIME_UNIT for s in md.demands[k].phase_link_s]
                ks.append(k)
                rel.append(inst.release[k] + sum(link[:on[0]]))
                due.append(inst.due[k] - sum(link[on[-1] + 1:]))
            if ks:
                out[("dim", d)] = (ks, np.array(rel), np.array(due))
        ks = [k for k in range(K) if self.nph[k]]
        out["sram"] = (ks, inst.release[ks], inst.due[ks])
        return out

    def _phase_values_at(self, idx: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
        """``md.phase_values`` at each design of ``idx`` (indices into ``designs``) at once: per (k, i), an
        array over the designs, each entry the same float ``phase_values`` gives at that design."""
        D = self.designs[idx]
        col = {r: j for j, r in enumerate(self.sized)}

        def at(t: Term) -> np.ndarray:
            if t.resource is None or t.resource not in col:
                return np.full(len(idx), t.coeffs[0])
            return np.asarray(t.coeffs)[D[:, col[t.resource]]]
        out = {}
        for k, dem in enumerate(self.md.demands):
            for i in range(len(dem.phase_link_s)):
                v = at(self.md.link_term(k, i))
                for t in self.md.phase_terms(k, i):
                    v = np.maximum(v, at(t))
                out[k, i] = v
        return out

    def _jackson_at(self, idx: np.ndarray) -> np.ndarray:
        """Jackson's bound (us) at each design of ``idx``: the largest P + L_max that ``interval_cuts`` finds
        at the design, over the dimensions and the SRAM (0 where it finds none), computed for all at once."""
        out = np.zeros(len(idx))
        if self._release_due is None or not len(idx):
            return out
        values = self._phase_values_at(idx)
        zero = np.zeros(len(idx))
        for key, (ks, rel, due) in self._release_due.items():
            if key == "sram":
                if self.sram is None:
                    continue
                j = self.sized.index(self.sram) if self.sram in self.sized else None
                opts = self.engine.options(self.sram)
                w = np.array([self.chunks * sum((values[k, i] for i in range(self.nph[k])), zero) for k in ks])
                groups = {}
                for n, d in enumerate(idx):
                    groups.setdefault(int(self.designs[d, j]) if j is not None else 0, []).append(n)
                for o, members in groups.items():
                    S = opts[o].value
                    sel = [n for n, k in enumerate(ks)
                           if sram_need(self.md.demands[k].chunk_bytes, S) > S / 2 * (1 + 1e-12)]
                    if len(sel) >= 2:
                        cols = np.array(members)
                        out[cols] = np.maximum(out[cols], self.P + _best_intervals(rel[sel], due[sel], w[sel][:, cols]))
            else:
                d = key[1]
                if len(ks) < 2:
                    continue
                w = np.array([self.chunks * sum((values[k, i] for i in range(self.nph[k])
                                                 if self.md.demands[k].phase_dims[i] == d), zero) for k in ks])
                out = np.maximum(out, self.P + _best_intervals(rel, due, w))
        return out

    def interval_cuts(self, choice: dict[str, int], T_us: float, max_cuts: int = 8) -> int:
        """Add the interval cuts that the design ``choice`` violates at period ``T_us`` (at most
        ``max_cuts``, the most violated first); return how many were added. No-op unless separable."""
        if self._release_due is None:
            return 0
        if self.columns:
            d = self._design_index.get(tuple(choice[r] for r in self.sized))
            if d is not None and self.jackson_known[d] and self._floored is not None and self._floored[d] > 0:
                return 0  # the floor row holds T at this design above Jackson's bound here already
        found = []
        values = self.md.phase_values(choice)  # (k, i) -> us alone at this design
        for key, (ks, rel, due) in self._release_due.items():
            if key == "sram":
                if self.sram is None:
                    continue
                o = choice[self.sram]
                S = self.engine.options(self.sram)[o].value
                sel = [n for n, k in enumerate(ks)
                       if sram_need(self.md.demands[k].chunk_bytes, S) > S / 2 * (1 + 1e-12)]
                w = np.array([self.chunks * sum(values[k, i] for i in range(self.nph[k])) for k in ks])
                tag = ("sram", o)
            else:
                d = key[1]
                sel = list(range(len(ks)))
                w = np.array([self.chunks * sum(values[k, i] for i in range(self.nph[k])
                                                if self.md.demands[k].phase_dims[i] == d) for k in ks])
                tag = key
            if len(sel) < 2:
                continue
            sel = np.array(sel)
            best = _best_interval(rel[sel], due[sel], w[sel])
            if best is None:
                continue
            a, b, lmax = best
            bound = self.P + lmax
            if bound > T_us * (1 + VIOLATION) + 1e-9:
                members = [ks[sel[n]] for n in range(len(sel))
                           if rel[sel[n]] >= rel[sel[a]] - 1e-12 and due[sel[n]] <= due[sel[b]] + 1e-12]
                found.append((bound, tag, float(rel[sel[a]]), float(due[sel[b]]), tuple(members)))
        found.sort(key=lambda x: -x[0])  # the most violated first
        if found and self.designs is not None:
            d = self._design_index.get(tuple(choice[r] for r in self.sized))
            if d is not None:  # the floor at this design: what the worst cut says there
                self.jackson[d] = max(self.jackson[d], found[0][0])
        added = 0
        for _, tag, ra, db, members in found[:max_cuts]:
            added += self.add_intervals([(tag, ra, db, members)])
        return added

    def add_intervals(self, cuts) -> int:
        """Add interval cuts (``intervals``' values: tag, release, due, members) this master lacks; return how
        many. They depend on the model data only (release and due dates at nominal compute, link times, the
        SRAM gate), so a master of the same data under other budgets may take another's."""
        added = 0
        for tag, ra, db, members in cuts:
            if (tag, members) in self.intervals:
                continue
            self.intervals[tag, members] = (tag, ra, db, members)
            self._add_interval(tag, ra, db, members)
            added += 1
        return added

    def _add_interval(self, tag, ra: float, db: float, members: tuple[int, ...]) -> None:
        m = self.model
        if tag[0] == "dim":
            lhs = sum(self.work(k, tag[1]) for k in members)
            self._cut(m.interval, m.T >= self.P + ra + lhs - db)
        else:
            o = tag[1]
            lhs = sum(self.chunks * self.traversal(k) for k in members)
            big = sum(self.chunks * self._max_traversal(k) for k in members)
            self._cut(m.interval, m.T + self._gate(self.sram, o, big) >= self.P + ra + lhs - db)


def _best_interval(rel: np.ndarray, due: np.ndarray, w: np.ndarray) -> tuple[int, int, float] | None:
    """max over a, b of rel[a] + sum(w[k] : rel[k] >= rel[a], due[k] <= due[b]) - due[b], and its (a, b):
    Jackson's preemptive bound on the maximum lateness of jobs (rel, w, due) on one machine."""
    n = len(rel)
    best = None
    order_due = np.argsort(due, kind="stable")
    for a in range(n):
        mask = rel[order_due] >= rel[a] - 1e-12
        cum = np.cumsum(np.where(mask, w[order_due], 0.0))
        vals = np.where(mask, rel[a] + cum - due[order_due], -np.inf)
        j = int(np.argmax(vals))
        if best is None or vals[j] > best[2]:
            best = (a, int(order_due[j]), float(vals[j]))
    return best


def _best_intervals(rel: np.ndarray, due: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``_best_interval``'s value for each column of ``w`` (jobs x designs), with the same floating-point
    operations in the same order per column."""
    best = np.full(w.shape[1], -np.inf)
    order_due = np.argsort(due, kind="stable")
    wo = w[order_due]
    for a in range(len(rel)):
        mask = rel[order_due] >= rel[a] - 1e-12
        cum = np.cumsum(np.where(mask[:, None], wo, 0.0), axis=0)
        vals = np.where(mask[:, None], rel[a] + cum - due[order_due][:, None], -np.inf)
        best = np.maximum(best, vals.max(axis=0))
    return best
