"""Measured training runs from a CSV file: one GPT training configuration and its iteration time per row.

The columns are those of vTrain's measured runs (VIA-Research/vTrain, ``data/ground_truth_*.csv``), header
names exactly as there; the optional ones are those of Korthikanti et al.'s Table 5 as docs/accuracy.md
lists them. An error names the file, the row's line and the column, as every input error does (exit 2).
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError
from ..spec.files import read_user_file

#: Required columns (a whole number each, the iteration time a number of milliseconds).
REQUIRED = ("# GPUs", "global batch", "micro batch", "hidden size", "attention heads", "# layers",
            "sequence length", "tensor parallelism", "data parallelism", "pipeline parallelism",
            "iteration time (ms)")
#: Optional columns and their values when absent: vTrain's runs (full recomputation, no sequence parallelism,
#: no interleaving, an MLP of 4h, GPT-2's vocabulary of 50,257 as Megatron's GPT examples use, the gradients'
#: data-parallel reduction after the backward: vTrain's runs have no gradient buckets, Megatron's local DDP
#: of 2022 reduced after the backward).
OPTIONAL = {"Parameters (billion)": None, "vocabulary": 50257, "recompute": "full", "sequence parallel": "no",
            "virtual stages": 1, "ffn hidden size": 0, "overlap grad reduce": "no", "platform": ""}
RECOMPUTE = ("none", "selective", "full")
#: At most this many rows: each is a simulation (about a second at most), a file beyond it is refused.
MAX_ROWS = 5000


@dataclass(frozen=True)
class Run:
    """One measured run: its model, batch and mapping, what it measured (seconds), and where it came from."""

    line: int
    params_billion: float | None
    gpus: int
    global_batch: int
    micro_batch: int
    hidden: int
    heads: int
    layers: int
    seq_len: int
    tp: int
    dp: int
    pp: int
    vocab: int
    recompute: str
    sequence_parallel: bool
    overlap_grad_reduce: bool
    virtual_stages: int
    ffn_hidden: int
    platform: str
    measured_s: float
    file: str = ""

    @property
    def model(self) -> str:
        """The model's name for grouping: its size where the file gives one, else its shape."""
        if self.params_billion is not None:
            return f"{self.params_billion:g}B"
        return f"h{self.hidden}-l{self.layers}-a{self.heads}-s{self.seq_len}"


#: The largest value each whole-number column takes: beyond any run measured (the largest clusters, models and
#: batches by orders of magnitude), so that a typo is refused before it builds a model of 2^40 layers.
HI = {"# GPUs": 10 ** 6, "global batch": 10 ** 8, "micro batch": 10 ** 6, "hidden size": 10 ** 6,
      "attention heads": 10 ** 5, "# layers": 10 ** 5, "sequence length": 10 ** 7, "tensor parallelism": 10 ** 5,
      "data parallelism": 10 ** 6, "pipeline parallelism": 10 ** 5, "vocabulary": 10 ** 8, "virtual stages": 10 ** 3,
      "ffn hidden size": 10 ** 7}


def _whole(file: str, line: int, col: str, raw: str, lo: int = 1) -> int:
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    hi = HI.get(col, 10 ** 6)
    if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
        raise SpecError(f"expected a whole number from {lo} to {hi:,}, got {raw[:60]!r}", file=file, line=line,
                        path=col)
    return int(v)


def _positive(file: str, line: int, col: str, raw: str) -> float:
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 1e-6 <= v <= 1e12):
        raise SpecError(f"expected a number from 1e-6 to 1e12, got {raw[:60]!r}", file=file, line=line, path=col)
    return v


def _row(file: str, line: int, r: dict[str, str]) -> Run:
    def get(col: str) -> str:
        v = r.get(col)
        return str(OPTIONAL.get(col, "")) if v is None or v.strip() == "" else v.strip()

    rec = get("recompute").lower()
    if rec not in RECOMPUTE:
        raise SpecError(f"expected one of {', '.join(RECOMPUTE)}, got {rec[:60]!r}", file=file, line=line,
                        path="recompute")
    sp = get("sequence parallel").lower()
    if sp not in ("yes", "no"):
        raise SpecError(f"expected yes or no, got {sp[:60]!r}", file=file, line=line, path="sequence parallel")
    ov = get("overlap grad reduce").lower()
    if ov not in ("yes", "no"):
        raise SpecError(f"expected yes or no, got {ov[:60]!r}", file=file, line=line, path="overlap grad reduce")
    size = get("Parameters (billion)")
    run = Run(line, _positive(file, line, "Parameters (billion)", size) if size != "None" else None,
              *(_whole(file, line, c, get(c)) for c in REQUIRED[:-1]),
              vocab=_whole(file, line, "vocabulary", get("vocabulary")), recompute=rec,
              sequence_parallel=sp == "yes", overlap_grad_reduce=ov == "yes",
              virtual_stages=_whole(file, line, "virtual stages", get("virtual stages")),
              ffn_hidden=_whole(file, line, "ffn hidden size", get("ffn hidden size"), lo=0),
              platform=get("platform"),
              measured_s=_positive(file, line, "iteration time (ms)", get("iteration time (ms)")) * 1e-3, file=file)
    if run.tp * run.dp * run.pp != run.gpus:
        raise SpecError(f"tensor x data x pipeline parallelism = {run.tp} x {run.dp} x {run.pp} = "
                        f"{run.tp * run.dp * run.pp}, not the {run.gpus} GPUs of '# GPUs'", file=file, line=line,
                        path="# GPUs")
    return run


def read_runs(path: str | Path) -> list[Run]:
    """The runs of a measured-runs CSV file (SpecError naming the file, line and column on bad input)."""
    file = str(path)
    text = read_user_file(path, what="measured runs (CSV)")
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise SpecError(f"missing column(s) {', '.join(repr(c) for c in missing)}; the header must name "
                        f"{', '.join(REQUIRED)}", file=file, line=1, path="(header)")
    unknown = [c for c in header if c not in REQUIRED and c not in OPTIONAL]
    if unknown:
        raise SpecError(f"unknown column {unknown[0][:60]!r}; optional columns: {', '.join(OPTIONAL)}", file=file,
                        line=1, path="(header)")
    runs = []
    for r in reader:
        line = reader.line_num
        if len(runs) >= MAX_ROWS:
            raise SpecError(f"more than {MAX_ROWS} rows; split the file", file=file, line=line, path="(rows)")
        if None in r:
            raise SpecError("more fields than the header names", file=file, line=line, path="(row)")
        runs.append(_row(file, line, r))
    if not runs:
        raise SpecError("no rows below the header", file=file, line=1, path="(rows)")
    return runs
