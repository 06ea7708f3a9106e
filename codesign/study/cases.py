"""The ACE study's cases: platforms, workloads and configurations, and the problem files they become.

Every case is one problem file under ``problems/paper/``, written by ``generate`` (``python -m
codesign.study --generate``) and runnable on its own with ``codesign solve``. The study reads the
files, so a file edited by hand is what runs. Every platform value below is cited, or marked as our
calibration, in ``problems/paper/README.md``; none is tuned per case.

The platform (one for every case; SI units once parsed):
- NPU: V100-class: 125 TFLOP/s, 900 GB/s HBM2, 80 SMs (NVIDIA V100 datasheet); the per-core reduction
  rate (25 GB/s) and compute's HBM draw (0.5) are the project's calibration (problems/*.yaml).
- Network: a hierarchical 3-D torus, ASTRA-sim's vocabulary: ``local`` (in-package; NVLink 2.0-class:
  3 links of 25 GB/s per direction to each of the 2 ring neighbours = a V100's six NVLink 2.0 links,
  DGX-1 V100 whitepaper), ``vertical`` and ``horizontal`` (between packages; TPU v3 ICI-class: 656 Gbit/s
  per ICI link, 4 links per chip, Jouppi et al. CACM 2020, read as 41 GB/s each way). Sizes 16, 32, 64,
  128 NPUs: 4x2x2, 4x4x2, 4x4x4 (ASTRA-sim's sample_Torus3D shape), 4x8x4.
- Link latency 1 ns and endpoint delay 1 ns, 4 chunks per collective, LIFO, ring algorithms,
  hierarchical (localBWAware): ASTRA-sim 1.0's sample_Torus3D.json and sample_torus_sys.txt. The
  latency is the study's most sensitive value, so ``latency`` cases repeat the 64-NPU platform at
  100 ns and 500 ns.
"""
from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError
from ..spec.outputs import replace_file, writing

#: network size -> (local, vertical, horizontal) ring sizes
SHAPES: dict[int, tuple[int, int, int]] = {16: (4, 2, 2), 32: (4, 4, 2), 64: (4, 4, 4), 128: (4, 8, 4)}
DIM_NAMES = ("local", "vertical", "horizontal")
#: per-link bandwidth per direction of each dimension, bytes/s (module docstring: sources)
LINK_BANDWIDTH = {"local": 75e9, "vertical": 41e9, "horizontal": 41e9}
LINKS_PER_DIM = 2             # one to each ring neighbour (ASTRA-sim sample_Torus3D links-count 2)
LATENCY_S = 1e-9              # ASTRA-sim sample_Torus3D link-latency 1 (ns)
ENDPOINT_DELAY_S = 1e-9       # ASTRA-sim sample_torus_sys endpoint-delay 1 cycle of 1 GHz
CHUNKS = 4                    # ASTRA-sim sample_torus_sys preferred-dataset-splits 4
SENSITIVITY_LATENCIES_S = (100e-9, 500e-9)
SENSITIVITY_NPUS = 64

NPU = {"compute": "125 TFLOP/s", "hbm_bandwidth": "900 GB/s", "cores": 80, "core_reduce_rate": "25 GB/s",
       "compute_hbm_utilization": 0.5}

#: workload name -> the problem file's ``workload`` section (paths relative to problems/paper/)
WORKLOADS: dict[str, dict[str, Any]] = {
    "resnet50": {"astra": "../workloads/Resnet50_DataParallel.txt", "clock": "1 GHz"},
    "gnmt": {"builder": "gnmt", "args": {"batch_per_npu": 128, "src_len": 50, "tgt_len": 50}},
    "dlrm": {"astra": "../workloads/DLRM_HybridParallel.txt", "clock": "1 GHz"},
}
WORKLOAD_LABELS = {"resnet50": "ResNet-50", "gnmt": "GNMT", "dlrm": "DLRM"}

# The baseline's design space: cores and HBM share given to communication, from compute-optimized
# (2 cores = 2.5% of the SMs, 10% of HBM) to communication-optimized and beyond (32 cores, 80%): our choice.
BASELINE_CORES = (2, 4, 8, 16, 32)
BASELINE_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
COMM_OPT = (16, 0.5)   # a fifth of the SMs and the half of HBM that compute (draw 0.5) leaves idle
COMP_OPT = (2, 0.1)
# ACE's catalog, area and power: the project's calibration (problems/resnet50_ace_torus3d.yaml).
ACE_SRAM = (("256 KiB", 0.12, 0.03), ("512 KiB", 0.23, 0.06), ("1 MiB", 0.45, 0.12), ("2 MiB", 0.9, 0.24),
            ("4 MiB", 1.8, 0.48), ("8 MiB", 3.6, 0.96))
ACE_RATES = (64, 128, 256, 512)  # GB/s; ALU 0.1 W and DMA 0.15 W, both 0.1 mm^2, per 64 GB/s
ACE_AREA_BUDGET = "4 mm^2"
ACE_POWER_BUDGET = "6 W"

#: configuration -> what it is, for tables and file headers
CONFIGS: dict[str, str] = {
    "baseline": "baseline endpoint, overlap; codesign chooses communication's cores and HBM share",
    "comm_opt": f"baseline endpoint, overlap; communication-optimized split fixed at {COMM_OPT[0]} cores, "
                f"{COMM_OPT[1]:.0%} of HBM",
    "comp_opt": f"baseline endpoint, overlap; compute-optimized split fixed at {COMP_OPT[0]} cores, "
                f"{COMP_OPT[1]:.0%} of HBM",
    "no_overlap": "baseline endpoint, no overlap (every collective blocks the next compute task); codesign "
                  "chooses the split",
    "ideal": "ideal endpoint: communication costs the NPU nothing, only the links limit it",
    "ace": f"ACE sized by codesign under {ACE_AREA_BUDGET} and {ACE_POWER_BUDGET}",
}
BASELINES = ("baseline", "comm_opt", "comp_opt", "no_overlap")
#: the all-reduce of the HBM-bandwidth sweep (bytes per NPU) and the network-bandwidth scales it runs at
HBM_ALLREDUCE = "64 MiB"
HBM_ENGINES = ("baseline", "ace", "ideal")
HBM_NET_SCALES = (0.5, 1.0, 2.0)

HEADER = ("# Generated by `python -m codesign.study --generate` (codesign/study/cases.py): edit the\n"
          "# generator, not this file. Every platform value is cited or marked as calibration in\n"
          "# problems/paper/README.md. Run it alone with `codesign solve <this file>`.\n")


@dataclass(frozen=True)
class Case:
    """One configuration of one workload on one network: a problem file.

    ``group`` is ``study`` (the headline grid) or ``latency`` (the sensitivity repeat at another link
    latency, seconds)."""

    workload: str
    npus: int
    config: str
    group: str = "study"
    latency_s: float = LATENCY_S

    @property
    def file(self) -> str:
        """Path relative to problems/paper/."""
        stem = f"{self.workload}_n{self.npus}_{self.config}.yaml"
        if self.group == "study":
            return stem
        return f"latency/{self.workload}_n{self.npus}_lat{_ns(self.latency_s)}ns_{self.config}.yaml"

    @property
    def key(self) -> str:
        return self.file.removesuffix(".yaml")


@dataclass(frozen=True)
class HbmCase:
    """The HBM-bandwidth sweep's micro benchmark (one all-reduce over the whole network) on one engine."""

    npus: int
    engine: str

    @property
    def file(self) -> str:
        return f"hbm/allreduce_n{self.npus}_{self.engine}.yaml"


def _ns(t: float) -> str:
    return f"{t * 1e9:g}"


def study_cases(workloads: tuple[str, ...] = tuple(WORKLOADS), sizes: tuple[int, ...] = tuple(SHAPES),
                latency: bool = True) -> list[Case]:
    """The headline grid (every workload, size and configuration) and, with ``latency``, the sensitivity
    repeat at SENSITIVITY_NPUS (if among ``sizes``) without the ideal endpoint."""
    cases = [Case(w, n, c) for w in workloads for n in sizes for c in CONFIGS]
    if latency and SENSITIVITY_NPUS in sizes:
        cases += [Case(w, SENSITIVITY_NPUS, c, "latency", lat) for lat in SENSITIVITY_LATENCIES_S
                  for w in workloads for c in CONFIGS if c != "ideal"]
    return cases


def hbm_cases(sizes: tuple[int, ...] = tuple(SHAPES)) -> list[HbmCase]:
    return [HbmCase(n, e) for n in sizes for e in HBM_ENGINES]


# ---------------------------------------------------------------- documents

def topology(npus: int, latency_s: float = LATENCY_S) -> dict[str, Any]:
    dims = []
    for name, size in zip(DIM_NAMES, SHAPES[npus]):
        dims.append({"name": name, "kind": "ring", "size": size, "links": LINKS_PER_DIM,
                     "bandwidth": f"{LINK_BANDWIDTH[name] / 1e9:g} GB/s", "latency": f"{_ns(latency_s)} ns"})
    return {"dims": dims}


def _baseline(cores: Any, share: Any) -> dict[str, Any]:
    """A baseline engine; ``cores``/``share`` a value or a tuple of options (no area: the NPU's own)."""
    def opts(v: Any) -> Any:
        return list(v) if isinstance(v, tuple) else v
    return {"type": "baseline", "endpoint_delay": f"{_ns(ENDPOINT_DELAY_S)} ns", "comm_cores": opts(cores),
            "comm_hbm_share": opts(share), "hbm_per_reduce_byte": 5, "hbm_per_copy_byte": 2}


def _ace() -> dict[str, Any]:
    def rate(r: int, watts_per_64: float) -> dict[str, str]:
        return {"area": f"{0.1 * r / 64:g} mm^2", "power": f"{watts_per_64 * r / 64:g} W"}
    return {"type": "ace", "area_budget": ACE_AREA_BUDGET, "power_budget": ACE_POWER_BUDGET,
            "endpoint_delay": f"{_ns(ENDPOINT_DELAY_S)} ns",
            "sram": [{"size": s, "area": f"{a:g} mm^2", "power": f"{p:g} W"} for s, a, p in ACE_SRAM],
            "alu": [{"rate": f"{r} GB/s", **rate(r, 0.1)} for r in ACE_RATES],
            "dma": [{"bandwidth": f"{r} GB/s", **rate(r, 0.15)} for r in ACE_RATES]}


def engine(config: str) -> dict[str, Any]:
    if config in ("baseline", "no_overlap"):
        return _baseline(BASELINE_CORES, BASELINE_SHARES)
    if config == "comm_opt":
        return _baseline(*COMM_OPT)
    if config == "comp_opt":
        return _baseline(*COMP_OPT)
    if config == "ideal":
        return {"type": "ideal", "endpoint_delay": f"{_ns(ENDPOINT_DELAY_S)} ns"}
    if config == "ace":
        return _ace()
    raise ValueError(f"unknown configuration {config!r}")


def case_document(case: Case) -> dict[str, Any]:
    """The problem document of ``case`` (plain dicts and lists, units as strings)."""
    shape = "x".join(map(str, SHAPES[case.npus]))
    wl = dict(WORKLOADS[case.workload])
    if "astra" in wl:  # the ASTRA-sim inputs live in problems/workloads/, relative to the file's folder
        wl["astra"] = "../" * case.file.count("/") + wl["astra"]
    return {
        "name": case.key.replace("/", "-"),
        "description": f"{WORKLOAD_LABELS[case.workload]} on a {shape} torus ({case.npus} NPUs), link latency "
                       f"{_ns(case.latency_s)} ns: {CONFIGS[case.config]}",
        "workload": wl,
        "topology": topology(case.npus, case.latency_s),
        "npu": NPU,
        "engine": engine(case.config),
        "schedule": {"order": "lifo", "chunks": CHUNKS, "overlap": case.config != "no_overlap"},
        "solver": {"profile": "default"},
    }


def hbm_document(case: HbmCase) -> dict[str, Any]:
    """One all-reduce of HBM_ALLREDUCE over every dimension, no compute. The sweep varies communication's
    HBM bandwidth (baseline: ``comm_hbm_share`` x ``hbm_bandwidth``; ACE: ``dma``) with every other endpoint
    resource ample, so that only memory bandwidth can hold the links back."""
    shape = "x".join(map(str, SHAPES[case.npus]))
    if case.engine == "baseline":
        eng = _baseline(79, 0.5)  # 79 cores: reduction never binds (79 x 25 GB/s)
    elif case.engine == "ace":
        eng = {"type": "ace", "endpoint_delay": f"{_ns(ENDPOINT_DELAY_S)} ns", "sram": "1 GiB", "alu": "10 TB/s",
               "dma": "450 GB/s"}
    else:
        eng = {"type": "ideal", "endpoint_delay": f"{_ns(ENDPOINT_DELAY_S)} ns"}
    return {
        "name": f"hbm-allreduce-n{case.npus}-{case.engine}",
        "description": f"one {HBM_ALLREDUCE} all-reduce on the {shape} torus, {case.engine} endpoint, no compute: "
                       "the micro benchmark of the HBM-bandwidth sweep (nominal 450 GB/s for communication)",
        "workload": {"name": "allreduce", "parallelism": "micro",
                     "layers": [{"name": "allreduce",
                                 "weight_grad_comm": {"collective": "all_reduce", "bytes": HBM_ALLREDUCE}}]},
        "topology": topology(case.npus),
        "npu": NPU,
        "engine": eng,
        "schedule": {"order": "lifo", "chunks": CHUNKS},
        "solver": {"profile": "default"},
    }


def dump(doc: dict[str, Any], comment: str) -> str:
    """YAML text: the header, a comment on the case, then the document (leaf mappings on one line)."""
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=115, allow_unicode=False)
    lines = "".join(f"# {line}\n" for line in textwrap.wrap(comment, 108))
    return HEADER + lines + body


def generate(out_dir: str | Path, *, workloads: tuple[str, ...] = tuple(WORKLOADS),
             sizes: tuple[int, ...] = tuple(SHAPES), latency: bool = True, missing_only: bool = False) -> list[Path]:
    """Write every case's problem file under ``out_dir`` (problems/paper/); returns the paths written.
    Workload paths are relative (``../workloads/``), so ``out_dir`` must sit beside problems/workloads/
    or have its own copy of the ASTRA-sim inputs there. ``missing_only``: write only the files not there
    (what ``codesign reproduce`` does for the cases it lacks). A file there is rewritten only if it is one this
    generator wrote (it begins with ``HEADER``); any other is refused (SpecError), as is a symbolic link."""
    out = Path(out_dir)
    written = []
    for c in study_cases(workloads, sizes, latency):
        text = dump(case_document(c), f"Case: {c.key}. {CONFIGS[c.config]}.")
        written.append(_write(out / c.file, text, missing_only))
    for h in hbm_cases(sizes):
        text = dump(hbm_document(h), f"HBM-bandwidth sweep, micro benchmark on the {h.engine} endpoint "
                                     f"({h.npus} NPUs); codesign.study sweeps its memory bandwidth.")
        written.append(_write(out / h.file, text, missing_only))
    return written


def _write(path: Path, text: str, missing_only: bool) -> Path:
    """``text`` at ``path`` through the output layer, unless a file is there that this generator did not write."""
    if os.path.lexists(path):
        if path.is_symlink():
            raise SpecError(f"{path}: a symbolic link, which codesign does not write through; remove it")
        old = path.read_bytes()
        if missing_only or old == text.encode():
            return path
        if not old.startswith(HEADER.encode()):
            raise SpecError(f"{path}: there and not written by the study's generator (it does not begin with its "
                            "header); it is left as it is: move it away to generate the case")
    path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path, "generating"):
        replace_file(path, lambda f: f.write(text.encode()))
    return path
