"""The any-order bound: the flow shop's (``flowshop.py``) tightened by SRAM cliques.

When chunks are large against ACE's SRAM the flow shop's per-dimension bounds are weak: a chunk that
holds more than half the SRAM keeps every other such chunk out for its whole traversal, and while it
is in the SRAM a dimension it is not on may idle (one chunk per collective: the 24% gap of issue 33).
The SRAM-clique bound joins the two resources into one machine. Fix a threshold t > SRAM / 2 and
    B = the chunks holding at least t (pairwise they do not fit together: each holds more than half),
    S = the other chunks that do not fit beside the smallest chunk of B (hold + min_B hold > SRAM).
In every replay (sim/replay.py: a chunk holds its SRAM from admission to the end of its last phase,
a dimension serves one chunk-phase at a time, every chunk-phase takes at least its ``alone`` time) the
following intervals never overlap, for any dimension d:
    - each chunk of B from its first phase's start to its last phase's end (at least the sum of its
      alone times): two chunks of B are never in the SRAM together;
    - each phase on d of each chunk of S: while it runs its chunk holds SRAM, so no chunk of B is
      in the SRAM; and d serves one chunk-phase at a time.
So they are jobs of one machine: a B chunk of collective k released at r_k, due d_k, for m x the
sum of its alone times (its m chunks); visit i of an S collective on d released at r_k + the alone
times of the phases before i and due at d_k - those after i, for m x its alone time. Horn's preemptive
bound on that machine's L_max is a lower bound on every order's, and T = P + max(0, L_max) as in
``lateness.py``. With S empty this is the flow shop's ``sram_exclusive`` term. ``order_bound`` is the
maximum of the flow shop's terms and these: still a bound on every order and every replay at the
design. Times in microseconds inside, seconds at the API.
"""
from __future__ import annotations

import math

import numpy as np

from ..platform.endpoint import Design
from ..problem.model import Problem
from ..schedule.bounds import LowerBound
from .data import TIME_UNIT
from .flowshop import FlowShop, bound_terms, flow_shop
from .lateness import Instance, horn_bound

_REL = 1e-12  # holds that fit within rounding are taken to fit: the bound then only weakens


def clique_terms(fs: FlowShop) -> dict[str, float]:
    """The SRAM-clique bound (us) per threshold's best dimension, keyed ``sram_clique:dim<d>``."""
    sram = fs.sram
    if not math.isfinite(sram) or sram <= 0:
        return {}
    b, m, K = fs.base, fs.chunks, len(fs.dims)
    routed = [k for k in range(K) if fs.dims[k]]
    terms: dict[str, float] = {}
    for t in sorted({fs.sram_hold[k] for k in routed if fs.sram_hold[k] > sram / 2 * (1 + _REL)}):
        big = [k for k in routed if fs.sram_hold[k] >= t]
        hmin = min(fs.sram_hold[k] for k in big)
        small = [k for k in routed if fs.sram_hold[k] < t and fs.sram_hold[k] + hmin > sram * (1 + _REL)]
        for d in range(fs.ndims):
            rel = [b.release[k] for k in big]
            work = [m * sum(fs.alone[k]) for k in big]
            due = [b.due[k] for k in big]
            for k in small:
                a = fs.alone[k]
                for i, x in enumerate(fs.dims[k]):
                    if x == d:
                        rel.append(b.release[k] + sum(a[:i]))
                        work.append(m * a[i])
                        due.append(b.due[k] - sum(a[i + 1:]))
            inst = Instance(np.array(rel), np.array(work), np.array(due), b.compute)
            key = f"sram_clique:dim{d}"
            terms[key] = max(terms.get(key, -math.inf), inst.period(horn_bound(inst)))
    return terms


def order_bound(problem: Problem, design: Design) -> LowerBound:
    """The any-order bound at ``design`` (s) for separable iterations: the flow shop's terms and the
    SRAM cliques', whichever is largest; no order and no replay beats it."""
    fs = flow_shop(problem, design)
    terms = {k: v * TIME_UNIT for k, v in {**bound_terms(fs), **clique_terms(fs)}.items()}
    return LowerBound(max(terms.values()), terms)
