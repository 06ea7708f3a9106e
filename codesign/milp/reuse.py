"""Re-using a compiled master for another problem of a family (docs/sweeps.md, "Masters"): other budgets
(``restart``) or other link times the design does not choose (``rebind``) (``Reuse``, a part of
``master.Master``)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyomo.core as pyo

from .data import ModelData
from .designs import fits_budgets, unusable
from .relaxation import phase_worst_us


class Reuse:
    """Restarting and rebinding ``master.Master`` (whose attributes they read and set)."""

    def restart(self, md: ModelData) -> None:
        """Make this master the model ``Master(md)`` would build and compile, for an ``md`` whose problem differs
        from the one it was built for only in the engine's area and power budgets (the caller's ``Family``
        checks), which set the same budgets and rule out at least the options the build's did. The budgets
        are right-hand sides of the build: the cuts go, the budget rows take the new values, and HiGHS is given
        the build's own calls again (``CompiledModel.restart``), so it holds the model a fresh compile would.
        The options the new budgets rule out beyond the build's stay in its rows, held at 0 by their column
        bounds where a fresh build fixes them out: the same designs and the same values at each, one column
        each more for HiGHS. Call after the first ``solve`` (it compiles)."""
        m, eng = self.model, md.problem.engine
        why = self._unrestartable(eng)
        if why is not None:
            raise ValueError(why)
        out = frozenset(unusable(eng))
        self.md, self.engine = md, eng
        bounds = {}
        for name, budget in (("area_budget", eng.area_budget_mm2), ("power_budget", eng.power_budget_w)):
            con = getattr(m, name, None)
            if con is not None:
                con.set_value(con.body <= budget)
                bounds[id(con)] = (None, budget)
        for name in ("interval", "visited"):  # the cuts (none at the build)
            m.del_component(name)
            setattr(m, name, pyo.ConstraintList())
        self.intervals = {}
        self.evaluations = []
        self._exclusions = []
        c = self.compiled
        cols = {c.col[id(m.y[r, o])]: (0.0, 0.0) for r, o in sorted(out - self.ruled_out)}
        if self.designs is not None:
            self.seen[:] = 0.0
            self.excluded[:] = False
            self._floored = None
        if self.columns:
            cols.update({c.col[id(m.design[d])]: (0.0, ub) for d, ub in self._design_bounds()})
        elif self.designs is not None:  # a table (``tabulate``): which designs the new budgets admit
            self.fits = np.array([fits_budgets(md.problem, self._design_choice(d)) and self.relaxed[d] != np.inf
                                  for d in range(len(self.designs))], dtype=bool)
        c.restart(bounds, cols)

    def rebind(self, md: ModelData) -> bool:
        """Make this master the model ``Master(md)`` would build and compile, restarted for ``md``'s budgets
        (``restart``), where ``md``'s problem differs from the one it was built for only in its topology, in
        ways that change nothing but link times the design does not choose: a sweep along a dimension's
        bandwidth or latency without a network design space (with one, a latency only: the bandwidths are the
        network's, which must be the same). Such a model has the same rows and columns,
        and only these numbers differ: the phase times' lower bounds (their link times) and the big-M values
        of the SRAM's gated rows (made of the phases' longest times, ``phase_worst_us``). Those are written
        again, through the same functions the build uses, and HiGHS is given the build's calls with them
        (``CompiledModel.rebuild``): where a build costs milliseconds of Pyomo, this costs a walk of a few
        rows. The floors and the cuts go (they hold for the old link times). False, and the master as it was,
        where ``md`` differs in anything else, or its budgets could not restart this master. Call after the
        first ``solve`` (it compiles). For masters built without a hook (a family's): rows or bounds a hook
        added stay as it wrote them, for the old link times."""
        if not self._rebinds(md):
            return False
        m, c = self.model, self.compiled
        old_md, old_worst = self.md, self.max_phase_us
        self.md, self.max_phase_us = md, phase_worst_us(md)
        if self._gates() != [key for key, _ in self._gated]:  # a Little's-law row says nothing at one of the two
            self.md, self.max_phase_us = old_md, old_worst
            return False
        cols = {}
        for k, i in m.phase_time:
            link = md.link_term(k, i)
            if self._constant(link):
                v = m.phase_time[k, i]
                v.setlb(max(0.0, link.coeffs[0]))
                cols[c.col[id(v)]] = (float(v.lb), c.inf if v.ub is None else float(v.ub))
        rows = {}
        for key, con in self._gated:
            con.set_value(self._gated_row(key))
            rows[c.row_of[id(con)][0]] = con
        c.rebuild(cols, rows)
        self._release_due = self._interval_data() if self.shape is not None else None
        if self.designs is not None:
            self.relaxed[:] = np.nan
            self.jackson[:] = 0.0
            self.jackson_known[:] = False
            self._completion = None
        self.restart(md)
        return True

    def _rebinds(self, md: ModelData) -> bool:
        """Whether ``rebind`` can make this master ``md``'s (see there)."""
        old = self.md
        po, pn = old.problem, md.problem
        e = pn.engine
        same = dataclasses.replace(pn, topology=po.topology, engine=dataclasses.replace(
            e, area_budget_mm2=po.engine.area_budget_mm2, power_budget_w=po.engine.power_budget_w))
        if same != po or md.cells != old.cells or len(pn.topology.dims) != len(po.topology.dims):
            return False
        if self._unrestartable(e) is not None:
            return False
        m = self.model
        if len(md.demands) != len(old.demands) or any(dataclasses.replace(a, phase_link_s=b.phase_link_s) != b
                                                      for a, b in zip(md.demands, old.demands)):
            return False
        for k, i in m.phase_time:
            a, b = md.link_term(k, i), old.link_term(k, i)
            if a != b and not (self._constant(a) and self._constant(b)):
                return False  # an open dimension's link times are coefficients of its options
        net = pn.network
        if net is None:
            return True
        return md.space == old.space and all(net.option_costs(pn.topology, d) == net.option_costs(po.topology, d)
                                             for d in range(len(net.bandwidths)))

    def _unrestartable(self, engine) -> str | None:
        """Why ``restart`` cannot make this master one for ``engine``'s budgets, or None if it can: it must be
        compiled, set the same budgets, and its build must have ruled out no option those budgets allow."""
        if self.compiled is None:
            return "restart needs a compiled master (solve it once first)"
        if not frozenset(unusable(engine)) >= self.ruled_out:
            return "the new budgets allow options the build ruled out; build a master for them"
        for name, budget in (("area_budget", engine.area_budget_mm2), ("power_budget", engine.power_budget_w)):
            if hasattr(self.model, name) != (budget is not None):
                return f"{name}: the new problem sets it and the built one does not, or the reverse"
        return None
