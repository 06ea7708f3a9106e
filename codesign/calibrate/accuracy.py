"""Predictions against measured runs: each run's error, the mean and worst absolute error, and how well the
predictions rank the runs of each model (Spearman's rank correlation within a model size)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..platform.endpoint import NPU
from ..problem.load import npu as read_npu
from ..problem.platforms import Cluster, cluster, gpu_section
from ..spec.readers import Ctx
from .predict import Unsupported, predict
from .runs import Run


@dataclass(frozen=True)
class Row:
    """One run: measured and predicted seconds and the relative error (None: not predicted, with why)."""

    run: Run
    predicted_s: float | None
    why: str = ""

    @property
    def error(self) -> float | None:
        return None if self.predicted_s is None else self.predicted_s / self.run.measured_s - 1.0


@dataclass(frozen=True)
class Accuracy:
    rows: tuple[Row, ...]
    platform: str
    spearman: dict[str, float | None] = field(default_factory=dict)

    @property
    def errors(self) -> list[float]:
        return [r.error for r in self.rows if r.error is not None]

    @property
    def mean_abs_error(self) -> float | None:
        e = self.errors
        return sum(abs(x) for x in e) / len(e) if e else None

    @property
    def max_abs_error(self) -> float | None:
        e = self.errors
        return max(abs(x) for x in e) if e else None


def platform_of(name: str, base: str | Path = ".") -> tuple[Cluster, NPU]:
    """A cluster profile and its GPU's NPU (its compute model included)."""
    ctx = Ctx(str(Path(base) / "(command line)"))
    cl = cluster(ctx, name)
    pctx, section, gname = gpu_section(Ctx(cl.file), cl.gpu, "gpu", None)
    return cl, replace(read_npu(pctx, section, section, in_profile=True), profile=gname)


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's of the ranks); None for fewer than 3 pairs or a constant side."""
    if len(a) != len(b) or len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return None if va == 0 or vb == 0 else cov / (va * vb)


def accuracy(runs: Sequence[Run], cl: Cluster, gpu: NPU, *, progress: Callable[[int], None] | None = None
             ) -> Accuracy:
    """Predict every run on ``cl`` with ``gpu``, and the figures of merit."""
    rows = []
    for k, r in enumerate(runs):
        try:
            rows.append(Row(r, predict(r, cl, gpu)))
        except Unsupported as e:
            rows.append(Row(r, None, str(e)))
        if progress is not None:
            progress(k + 1)
    by_model: dict[str, list[Row]] = {}
    for row in rows:
        if row.predicted_s is not None:
            by_model.setdefault(row.run.model, []).append(row)
    rho = {m: spearman([x.run.measured_s for x in rs], [x.predicted_s for x in rs]) for m, rs in by_model.items()}
    return Accuracy(tuple(rows), cl.name, rho)


def as_json(acc: Accuracy) -> dict:
    """``codesign accuracy --json``'s document."""
    return {"platform": acc.platform,
            "rows": [{"line": r.run.line, "model": r.run.model, "gpus": r.run.gpus, "tensor_parallel": r.run.tp,
                      "data_parallel": r.run.dp, "pipeline_parallel": r.run.pp, "micro_batch": r.run.micro_batch,
                      "measured_s": r.run.measured_s, "predicted_s": r.predicted_s, "error": r.error,
                      **({"not_predicted": r.why} if r.why else {})} for r in acc.rows],
            "mean_abs_error": acc.mean_abs_error, "max_abs_error": acc.max_abs_error,
            "spearman_within_model": acc.spearman}
