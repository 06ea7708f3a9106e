"""The master's relaxation of the platform (docs/formulation.md, section 3): the phase times, the loads per
period, the SRAM's gated rows and the cycle, each linear in the option binaries (``Relaxation``, a part of
``master.Master``), and the numbers they are made of."""
from __future__ import annotations

import math
from typing import Any

import pyomo.core as pyo

from ..platform.costs import compute_time_terms
from ..platform.network import key as net_key
from ..platform.pools import sram_need
from .data import TIME_UNIT, ModelData
from .designs import within


def nominal_compute_us(md: ModelData) -> list[float]:
    """Each compute task's time at the full NPU (us): what compute takes at least, on any design."""
    npu = md.problem.npu
    return [max(compute_time_terms(c.demand, npu, npu.cores, npu.hbm_bandwidth)) / TIME_UNIT
            for c in md.iteration.computes]


def phase_worst_us(md: ModelData) -> dict[tuple[int, int], float]:
    """Per phase (k, i), the longest a chunk can take there alone on any design (us): the largest of its link
    term's and endpoint terms' values over their options (the SRAM gates' big-M values are made of these)."""
    out = {}
    for k, dem in enumerate(md.demands):
        for i in range(len(dem.phase_dims)):
            worst = max(md.link_term(k, i).coeffs)
            for t in md.phase_terms(k, i):
                worst = max(worst, max(t.coeffs))
            out[k, i] = worst
    return out


#: The most designs the master gives a column each (``Master._design_columns``; our calibration).


class Relaxation:
    """The rows of the relaxation, built into ``model`` by ``master.Master``'s constructor (whose attributes
    they read: ``md``, ``sized``, ``nph``, ``chunks``, ``compute_us``, ``sram``...)."""

    def _network(self, m: pyo.ConcreteModel) -> None:
        """The network's cost (the problem's unit), linear in the bandwidth binaries, under its budget:
        binaries times constants, so exact (``platform/network.Network.dim_cost``)."""
        net, topo = self.network, self.md.problem.topology
        if net is None:
            m.network_cost = pyo.Expression(expr=0.0)
            return
        total = 0.0
        for d in range(len(net.bandwidths)):
            costs = net.option_costs(topo, d)
            r = net_key(d)
            total = total + (sum(c * m.y[r, o] for o, c in enumerate(costs)) if r in self.sized else costs[0])
        m.network_cost = pyo.Expression(expr=total)
        if net.budget is not None:
            floor = net.min_cost(topo)
            for d in range(len(net.bandwidths)):
                r = net_key(d)
                if r not in self.sized:
                    continue
                costs = net.option_costs(topo, d)
                for o, c in enumerate(costs):  # options no other dimensions' choice can pay for
                    if not within(floor - min(costs) + c, net.budget):
                        m.y[r, o].fix(0)
            m.network_budget = pyo.Constraint(expr=m.network_cost <= net.budget * (1 + 1e-12) + 1e-12)

    def _phases(self, m: pyo.ConcreteModel) -> None:
        md = self.md
        ki = [(k, i) for k in range(len(md.demands)) for i in range(self.nph[k])]
        m.phase_time = pyo.Var(ki, domain=pyo.NonNegativeReals)
        m.phase_bound = pyo.ConstraintList()
        self.max_phase_us = phase_worst_us(md)
        for k, i in ki:
            link = self.lin(md.link_term(k, i))  # a constant, or per option of an open dimension's bandwidth
            if isinstance(link, float):
                m.phase_time[k, i].setlb(max(0.0, link))
            else:
                m.phase_bound.add(m.phase_time[k, i] >= link)
            for t in md.phase_terms(k, i):
                m.phase_bound.add(m.phase_time[k, i] >= self.lin(t))

    def traversal(self, k: int):
        """A chunk's least time through all phases of collective k (us, linear in y)."""
        return sum(self.model.phase_time[k, i] for i in range(self.nph[k]))

    def _max_traversal(self, k: int) -> float:
        return sum(self.max_phase_us[k, i] for i in range(self.nph[k]))

    def work(self, k: int, d: int):
        """Dimension d's work for all chunks of collective k (us, linear in y)."""
        dims = self.md.demands[k].phase_dims
        return self.chunks * sum(self.model.phase_time[k, i] for i in range(self.nph[k]) if dims[i] == d)

    def _gate(self, resource: str, o: int, big_m: float):
        """0 when option o of ``resource`` is chosen, ``big_m`` otherwise (0 for a fixed resource)."""
        if resource not in self.sized:
            return 0.0
        return big_m * (1 - self.model.y[resource, o])

    def _loads(self, m: pyo.ConcreteModel) -> None:
        """Every dimension, every pool and (ACE) the SRAM must carry one iteration's traffic per period."""
        md = self.md
        m.loads = pyo.ConstraintList()
        m.loads.add(m.T >= self.P)
        K = len(md.demands)
        ndims = len(md.problem.topology.dims)
        for d in range(ndims):
            ks = [k for k in range(K) if d in md.demands[k].phase_dims]
            if ks:
                m.loads.add(m.T >= sum(self.work(k, d) for k in ks))
        for term in md.pool_load_terms():
            m.loads.add(m.T >= self.lin(term))
        #: the rows whose big-M values are made of ``max_phase_us`` (``rebind`` writes them again), by the key
        #: ``_gated_row`` takes, in the order of the build
        self._gated: list[tuple[tuple, Any]] = []
        for key in self._gates():
            if key[0] == "hold":
                self._gated.append((key, m.loads.add(self._gated_row(key))))

    def _gates(self) -> list[tuple]:
        """The keys of the SRAM's gated rows the build makes: ("hold", o) per SRAM option o whose Little's-law
        row says something (bytes held), ("waves", k, o) per collective k and option o that passes the SRAM in
        more than one wave; in the order the build adds them within each of its lists."""
        if self.sram is None:
            return []
        opts = self.engine.options(self.sram)
        out = [("hold", o) for o, opt in enumerate(opts) if self._held_big(opt.value) > 0]
        out += [("waves", k, o) for k in range(len(self.md.demands)) if self.nph[k]
                for o, opt in enumerate(opts) if self._waves(k, opt.value) > 1]
        return out

    def _held(self, sram_bytes: float) -> list[float]:
        """Per collective: its chunks' bytes held in an SRAM of ``sram_bytes`` over that SRAM (Little's law)."""
        return [self.chunks * sram_need(dem.chunk_bytes, sram_bytes) / sram_bytes for dem in self.md.demands]

    def _held_big(self, sram_bytes: float) -> float:
        return sum(h * self._max_traversal(k) for k, h in enumerate(self._held(sram_bytes)))

    def _gated_row(self, key: tuple):
        """The gated row ``key`` (``_gates``): the SRAM option's Little's-law load, or a collective's waves."""
        m = self.model
        o = key[-1]
        S = self.engine.options(self.sram)[o].value
        if key[0] == "hold":
            held = self._held(S)
            held_us = sum(h * self.traversal(k) for k, h in enumerate(held) if self.nph[k])
            return m.T + self._gate(self.sram, o, self._held_big(S)) >= held_us
        k = key[1]
        waves = self._waves(k, S)
        big = waves * self._max_traversal(k)
        return m.comm_end[k] + self._gate(self.sram, o, big) >= self._release(k) + waves * self.traversal(k)

    def _release(self, k: int):
        """When collective k is issued: the end of the compute task it follows (us, linear)."""
        after = self.md.iteration.comms[k].issue_after
        return self.model.compute_start[after] + self.compute_us[after]

    def _cycle(self, m: pyo.ConcreteModel) -> None:
        """Compute in program order at full speed; each collective at least its span after its release."""
        md = self.md
        it = md.iteration
        J, K = len(it.computes), len(it.comms)
        m.compute_start = pyo.Var(range(J), domain=pyo.NonNegativeReals)
        m.comm_end = pyo.Var(range(K), domain=pyo.NonNegativeReals)
        m.compute_start[0].fix(0.0)
        p = self.compute_us
        m.cycle = pyo.ConstraintList()
        for j in range(J - 1):
            m.cycle.add(m.compute_start[j + 1] >= m.compute_start[j] + p[j])
        m.cycle.add(m.compute_start[0] + m.T >= m.compute_start[J - 1] + p[J - 1])
        waves: dict[int, list[tuple]] = {}
        for key in self._gates():
            if key[0] == "waves":
                waves.setdefault(key[1], []).append(key)
        for k, c in enumerate(it.comms):
            release = self._release(k)
            for span in self._spans(k):
                m.cycle.add(m.comm_end[k] >= release + span)
            for key in waves.get(k, ()):
                self._gated.append((key, m.cycle.add(self._gated_row(key))))
            shift = m.T if c.next_iteration else 0.0
            m.cycle.add(m.compute_start[c.wait_before] + shift >= m.comm_end[k] + c.delay_s / TIME_UNIT)

    def _spans(self, k: int) -> list:
        """Lower bounds on collective k's span (us): its traversal, and per dimension the phases before
        its first visit, all chunks' work there, and the phases after its last visit."""
        if not self.nph[k]:
            return [0.0]
        dims = self.md.demands[k].phase_dims
        pt = self.model.phase_time
        out = [self.traversal(k)]
        for d in sorted(set(dims)):
            on = [i for i, x in enumerate(dims) if x == d]
            out.append(sum(pt[k, i] for i in range(on[0])) + self.work(k, d)
                       + sum(pt[k, i] for i in range(on[-1] + 1, self.nph[k])))
        return out

    def _waves(self, k: int, sram_bytes: float) -> int:
        """Chunks of collective k pass the SRAM in ceil(chunks / q) waves when only q fit at once."""
        hold = sram_need(self.md.demands[k].chunk_bytes, sram_bytes)
        if hold <= 0:
            return 1
        q = max(1, int(sram_bytes // hold + 1e-9))
        return math.ceil(self.chunks / q)
