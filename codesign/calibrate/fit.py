"""Fitting a platform profile to measurements: collective curves, and a GPU's compute model to single-node
training runs. Both are least-absolute-relative-deviation fits, LPs on HiGHS (``milp.fit.l1_fit``).

- ``fit_link``: a network's bandwidth, per-step latency, per-phase latency and buffer bandwidth from
  measured all-reduce times (nccl-tests): the time codesign gives an all-reduce of S bytes on a dimension
  of p GPUs (``platform.costs.link_time``) is linear in 1/bandwidth, the two latencies and 1/buffer
  bandwidth, so one LP fits them exactly in that model, every octave of message size weighed alike;
- ``fit_compute``: ``gemm_efficiency``, ``memory_efficiency``, ``kernel_overhead_s``, ``host_overhead_s`` and
  ``exchange_overhead_s`` from measured iteration times, starting from the profile's values (the fit is local).
  A simulated iteration is piecewise linear in (1/gemm_efficiency, 1/memory_efficiency, the overheads) where
  the schedule does not change, so the fit is a sequence of LPs, each over the period's linearization at
  the last fit (finite differences of the simulation itself), inside a trust region that shrinks until the
  fit stops improving.
Multi-node training runs are never fitted to: they are what ``codesign accuracy`` judges predictions by.
"""
from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import SpecError
from ..milp.fit import l1_fit
from ..platform.collectives import phases
from ..platform.compute import ComputeModel, gemm_time
from ..platform.costs import link_time
from ..platform.endpoint import NPU
from ..platform.topology import Dim, Topology
from ..problem.platforms import Cluster, Link
from ..spec.files import read_user_file
from ..workload.llm_kernels import gemm
from ..workload.model import Comm
from .predict import Unsupported, predict
from .runs import Run


@dataclass(frozen=True)
class Sample:
    """One measured collective: GPUs, buffer bytes (nccl-tests' size), seconds."""

    gpus: int
    bytes: float
    seconds: float


def read_nccl(path: str | Path, gpus: int | None = None) -> list[Sample]:
    """An nccl-tests all-reduce table as CSV (size in bytes first, the out-of-place time in ns fourth); the
    GPU count from ``gpus`` or the file's name (``..._<N>gpu.csv``)."""
    file = str(path)
    if gpus is None:
        m = re.search(r"(\d+)gpu", Path(file).name)
        if not m:
            raise SpecError("cannot tell the GPU count from the name (expected ..._<N>gpu.csv); give --gpus",
                            file=file)
        gpus = int(m.group(1))
    out = []
    rows = csv.reader(io.StringIO(read_user_file(path, what="nccl-tests table (CSV)")))
    for i, row in enumerate(rows, start=1):
        if i == 1 and row and not row[0].strip().isdigit():
            continue  # the header
        try:
            size, ns = float(row[0]), float(row[3])
        except (IndexError, ValueError):
            raise SpecError(f"expected size in bytes, count, type, time in ns, ...; got {','.join(row)[:60]!r}",
                            file=file, line=i) from None
        if not (size > 0 and ns > 0 and math.isfinite(size) and math.isfinite(ns)):
            raise SpecError("size and time must be numbers > 0", file=file, line=i)
        out.append(Sample(gpus, size, ns * 1e-9))
    if not out:
        raise SpecError("no measurements", file=file)
    return out


def _allreduce_terms(s: Sample, algorithm: str) -> tuple[float, float, float, float]:
    """The seconds an all-reduce of ``s.bytes`` on a switch of ``s.gpus`` takes per unit of each link
    parameter (1/bandwidth, latency per step and hop, latency per phase, 1/buffer_bandwidth): its time is
    linear in them, so these are ``costs.link_time`` itself with one parameter at 1 and the others at 0."""
    comm = Comm("all_reduce", s.bytes)
    inf = math.inf
    units = ((1.0, 0.0, 0.0, None), (inf, 1.0, 0.0, None), (inf, 0.0, 1.0, None), (inf, 0.0, 0.0, 1.0))
    out = []
    for bw, lat, phase, buf in units:
        topo = Topology((Dim("fit", "switch", s.gpus, 1, bw, lat, algorithm, phase, buf),))
        out.append(sum(link_time(p, topo, 0.0) for p in phases(comm, topo)))
    return out[0], out[1], out[2], out[3]


def octave_weights(samples: Sequence[Sample]) -> list[float]:
    """Each sample's weight in the fit: 1/its time (a relative error) over the samples of its GPU count in
    its octave of size, so that every octave of message size counts alike: nccl-tests tables step sizes
    evenly (1 MiB apart), which would give the sizes above 512 MiB half the weight, while the collectives of a
    training iteration span 1 MiB to gigabytes."""
    key = [(s.gpus, math.floor(math.log2(s.bytes))) for s in samples]
    count: dict[tuple[int, int], int] = {}
    for k in key:
        count[k] = count.get(k, 0) + 1
    return [1.0 / (s.seconds * count[k]) for s, k in zip(samples, key)]


def fit_link(samples: Sequence[Sample], algorithm: str = "ring") -> tuple[Link, list[float]]:
    """The bandwidth (B/s), per-step latency (s), per-phase latency (s) and buffer bandwidth (B/s) that fit
    ``samples`` best (the octave-weighted sum of relative errors, ``octave_weights``), and each sample's
    relative error at the fit. One LP: the time ``costs.link_time`` gives is linear in the four (1/bandwidth,
    the latencies, 1/buffer bandwidth). Samples of one GPU count cannot tell the wire bytes from the buffer
    (both proportional to the size) nor a step from a phase (the steps are fixed): those fit the bandwidth and
    the per-step latency only, ASTRA-sim's line."""
    rows = [_allreduce_terms(s, algorithm) for s in samples]
    b = [s.seconds for s in samples]
    full = len({s.gpus for s in samples}) > 1
    hi = None if full else [math.inf, math.inf, 0.0, 0.0]
    fit = l1_fit(rows, b, octave_weights(samples), lo=[1e-15, 0.0, 0.0, 0.0], hi=hi)
    inv_bw, lat, phase, inv_buf = fit.x
    errors = [sum(a * x for a, x in zip(r, fit.x)) / t - 1.0 for r, t in zip(rows, b)]
    return Link(1.0 / inv_bw, lat, algorithm, phase, 1.0 / inv_buf if inv_buf > 0 else None), errors


#: The message-size bands residuals are reported by (bytes, from and below).
BANDS = tuple((2.0 ** a, 2.0 ** b) for a, b in ((20, 22), (22, 24), (24, 26), (26, 28), (28, 31)))


def residuals_by_size(samples: Sequence[Sample], errors: Sequence[float]) -> list[tuple[float, float, float, float]]:
    """Per band of ``BANDS`` holding samples: (from bytes, below bytes, mean, worst absolute relative error)."""
    out = []
    for lo, hi in BANDS:
        e = [abs(x) for s, x in zip(samples, errors) if lo <= s.bytes < hi]
        if e:
            out.append((lo, hi, sum(e) / len(e), max(e)))
    return out


# ---------------------------------------------------------------------------------------------- compute

#: The compute model's fitted parameters as the LP sees them: reciprocals of the efficiencies (times are
#: proportional to them) and the overhead in microseconds (so the LP's columns are of like size).
def _theta(m: ComputeModel) -> tuple[float, ...]:
    return (1.0 / m.gemm_efficiency, 1.0 / m.memory_efficiency, m.kernel_overhead_s * 1e6, m.host_overhead_s * 1e6,
            m.exchange_overhead_s * 1e6)


def _model(m: ComputeModel, th: Sequence[float]) -> ComputeModel:
    return replace(m, gemm_efficiency=1.0 / th[0], memory_efficiency=1.0 / th[1], kernel_overhead_s=th[2] * 1e-6,
                   host_overhead_s=th[3] * 1e-6, exchange_overhead_s=th[4] * 1e-6)


#: Bounds of the fit: efficiencies in [0.2, 1], the kernels' overheads in [0, 100] us, an exchange's host work
#: in [0, 10] ms.
LO, HI = (1.0, 1.0, 0.0, 0.0, 0.0), (5.0, 5.0, 100.0, 100.0, 10_000.0)
#: What the trust region adds to its relative radius, per parameter and unit of radius: an overhead may start
#: at zero, where a relative step alone would never leave it (microseconds).
SLACK = (0.0, 0.0, 4.0, 4.0, 1000.0)
NTH = len(LO)


@dataclass(frozen=True)
class ComputeFit:
    """The fitted model, each run's relative error at it, and the LP iterations taken."""

    model: ComputeModel
    errors: tuple[float, ...]
    iterations: int


def fit_compute(runs: Sequence[Run], cluster: Cluster, gpu: NPU, *, iterations: int = 6,
                progress: Callable[[int, float], None] | None = None, fix_gemm: bool = False) -> ComputeFit:
    """Fit ``gpu``'s compute model to ``runs`` (single-node runs, module docstring); with ``fix_gemm`` its
    ``gemm_efficiency`` stays as given (pinned by GEMM measurements, ``fit_gemm_efficiency``) and the other
    four are fitted."""
    if gpu.compute_model is None:
        raise ValueError("the GPU has no compute model to fit")
    usable = []
    for r in runs:
        try:
            predict(r, cluster, gpu)
            usable.append(r)
        except Unsupported:
            continue
    if not usable:
        raise ValueError("no run codesign can rebuild")

    def times(th: Sequence[float]) -> list[float]:
        g = replace(gpu, compute_model=_model(gpu.compute_model, th))
        return [predict(r, cluster, g) for r in usable]

    meas = [r.measured_s for r in usable]
    fixed = (0,) if fix_gemm else ()
    th = list(_theta(gpu.compute_model))
    th = [v if j in fixed else min(max(v, lo), hi) for j, (v, lo, hi) in enumerate(zip(th, LO, HI))]
    base = times(th)
    best = _objective(base, meas)
    radius = 0.5
    done = 0
    for done in range(1, iterations + 1):
        cols = []
        for j in range(NTH):
            if j in fixed:
                cols.append([0.0] * len(usable))
                continue
            step = max(abs(th[j]) * 0.05, 0.05, SLACK[j] * 0.05)
            probe = list(th)
            probe[j] += step
            cols.append([(t1 - t0) / step for t1, t0 in zip(times(probe), base)])
        A = [[cols[j][i] for j in range(NTH)] for i in range(len(usable))]
        rhs = [m_ - t0 + sum(A[i][j] * th[j] for j in range(NTH)) for i, (m_, t0) in enumerate(zip(meas, base))]
        lo = [th[j] if j in fixed else max(LO[j], th[j] * (1 - radius) - SLACK[j] * radius) for j in range(NTH)]
        hi = [th[j] if j in fixed else min(HI[j], th[j] * (1 + radius) + SLACK[j] * radius) for j in range(NTH)]
        cand = list(l1_fit(A, rhs, [1.0 / m_ for m_ in meas], lo=lo, hi=hi).x)
        got = times(cand)
        score = _objective(got, meas)
        if score < best - 1e-9:
            th, base, best = cand, got, score
        else:
            radius /= 2
        if progress is not None:
            progress(done, best / len(usable))
        if radius < 0.01:
            break
    errors = tuple(t / m_ - 1.0 for t, m_ in zip(base, meas))
    return ComputeFit(_model(gpu.compute_model, th), errors, done)


def _objective(pred: Sequence[float], meas: Sequence[float]) -> float:
    return sum(abs(p / m - 1.0) for p, m in zip(pred, meas))


# ------------------------------------------------------------------------------------------------- GEMMs

@dataclass(frozen=True)
class GemmSample:
    """One measured matrix product (m x k by k x n, 2-byte operands): its achieved FLOP/s, and where it was read."""

    m: int
    n: int
    k: int
    flops_per_s: float
    file: str
    line: int


GEMM_COLUMNS = ("m", "n", "k", "TFLOP/s")


def read_gemms(path: str | Path) -> list[GemmSample]:
    """A CSV of measured products: columns m, n, k, TFLOP/s (a ``source`` column or others are kept for the
    reader and ignored); an error names the file, line and column."""
    file = str(path)
    reader = csv.DictReader(io.StringIO(read_user_file(path, what="GEMM measurements (CSV)")))
    missing = [c for c in GEMM_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise SpecError(f"missing column(s) {', '.join(missing)}; expected {', '.join(GEMM_COLUMNS)}", file=file,
                        line=1, path="(header)")
    out = []
    for r in reader:
        vals = []
        for c in GEMM_COLUMNS:
            try:
                v = float(r[c] or "")
            except ValueError:
                v = math.nan
            if not (math.isfinite(v) and 1 <= v <= 1e7 and (c == "TFLOP/s" or v == int(v))):
                raise SpecError(f"expected {'a number' if c == 'TFLOP/s' else 'a whole number'} from 1 to 1e7, "
                                f"got {(r[c] or '')[:60]!r}", file=file, line=reader.line_num, path=c)
            vals.append(v)
        out.append(GemmSample(int(vals[0]), int(vals[1]), int(vals[2]), vals[3] * 1e12, file, reader.line_num))
    if not out:
        raise SpecError("no rows below the header", file=file, line=1, path="(rows)")
    return out


def fit_gemm_efficiency(gemms: Sequence[GemmSample], model: ComputeModel, hbm_bandwidth: float
                        ) -> tuple[float, list[float]]:
    """The ``gemm_efficiency`` whose products ``platform.compute.gemm_time`` times as measured (least absolute
    relative deviation, one LP over its reciprocal: a product not bound by its bytes takes a time proportional
    to it), and each product's relative error. A product the model holds to its bytes says nothing of it."""
    unit = replace(model, gemm_efficiency=1.0)
    cols, meas = [], []
    for g in gemms:
        kr = gemm("measured", g.m, g.n, g.k, 2.0)
        t1 = gemm_time(kr, unit, hbm_bandwidth)
        if t1 <= kr.bytes / (hbm_bandwidth * model.memory_efficiency) * (1 + 1e-9):
            raise SpecError(f"a {g.m} x {g.n} x {g.k} product is bound by its bytes in the compute model; it cannot "
                            "pin gemm_efficiency", file=g.file, line=g.line, path="m")
        cols.append([t1])
        meas.append(kr.flops / g.flops_per_s)
    fit = l1_fit(cols, meas, [1.0 / t for t in meas], lo=[1.0], hi=[100.0])
    inv = fit.x[0]
    return 1.0 / inv, [c[0] * inv / t - 1.0 for c, t in zip(cols, meas)]
