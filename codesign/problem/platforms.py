"""Platform profiles: named, cited GPU and cluster descriptions a problem file names (``npu: {profile: NAME}``)
and ``codesign accuracy --platform NAME`` builds its problems on.

A profile is a YAML file: the shipped ones are ``codesign/problem/platforms/NAME.yaml`` (docs/accuracy.md
lists them, their sources and the command that fitted each fitted value); a name ending in .yaml is a
user's file, relative to the problem's folder, which a user makes by copying and editing a shipped one.

- a GPU profile (``kind: gpu``) has an ``npu`` section, the keys of a problem file's ``npu`` section, with
  its ``compute_model`` (``platform.compute.ComputeModel``);
- a cluster profile (``kind: cluster``) names its GPU profile and its two networks: ``intra_node``, the
  GPUs of one node (NVLink through NVSwitch), and ``inter_node`` (InfiniBand, each GPU's share of its
  node's NICs), each a bandwidth per GPU and direction, a latency per message step and the collective
  algorithm, as a topology dimension takes them; and ``node_size``, the GPUs per node.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..platform.topology import ALGORITHMS
from ..spec import units as U
from ..spec.readers import Ctx, choice, join_path, line_of, number, quantity, section, text
from ..spec.yamlfile import YMap, load_yaml

#: The shipped platform profiles (package data).
SHIPPED = Path(__file__).resolve().parent / "platforms"
KINDS = ("gpu", "cluster")
PROFILE_KEYS = ("name", "kind", "description", "sources", "npu", "gpu", "node_size", "intra_node", "inter_node",
                "calibration")


def shipped() -> list[str]:
    """The names of the shipped profiles."""
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def profile_path(ctx: Ctx, ref: str, path: str, line: int | None) -> Path:
    """The file of profile ``ref``: a shipped name, or a .yaml path relative to the problem's folder."""
    if ref.endswith((".yaml", ".yml")):
        p = Path(ref)
        return p if p.is_absolute() else ctx.dir / p
    p = SHIPPED / f"{ref}.yaml"
    if "/" in ref or "\\" in ref or not p.is_file():
        raise ctx.error(path, f"no platform profile {ref!r}; shipped: {', '.join(shipped())} (or a .yaml path)", line)
    return p


def read_profile(ctx: Ctx, ref: Any, path: str, line: int | None, kind: str) -> tuple[Ctx, YMap]:
    """The profile ``ref`` names, parsed and checked to be of ``kind``: (its own Ctx, its top mapping)."""
    if not isinstance(ref, str) or not ref:
        raise ctx.error(path, f"expected the name of a platform profile, got {ref!r}", line)
    file = profile_path(ctx, ref, path, line)
    shipped_file = file.parent == SHIPPED
    pctx = Ctx(str(file))
    doc = load_yaml(file, what="platform profile", confine_to=None if shipped_file else ctx.confine_to)
    m = section(pctx, doc, "", PROFILE_KEYS, ("name", "kind"))
    got = choice(pctx, m, "kind", "", KINDS)
    if got != kind:
        raise ctx.error(path, f"{ref!r} is a {got} profile; expected a {kind} profile", line)
    return pctx, m


def label(pctx: Ctx, m: YMap, ref: str) -> str:
    """The name a profile is reported under: its ``name``, except that a user's copy still under a shipped
    profile's name (copied and edited, not renamed) is reported by its file as the user wrote it, so that
    figures from edited values never pass for the shipped profile's."""
    name = text(pctx, m, "name", "")
    if Path(pctx.file).parent == SHIPPED or name not in shipped():
        return name
    return ref


@dataclass(frozen=True)
class Link:
    """One of a cluster's networks as a topology dimension takes it: bytes/s per GPU and direction, seconds
    per message step, the collective algorithm (``platform.topology.ALGORITHMS``), and the optional NCCL
    terms ``platform.costs.link_time`` reads: seconds per collective phase, bytes/s over a phase's buffer."""

    bandwidth: float
    latency: float
    algorithm: str
    phase_latency: float = 0.0
    buffer_bandwidth: float | None = None


@dataclass(frozen=True)
class Cluster:
    """A cluster profile: its name, its GPU profile's name, GPUs per node, and the two networks."""

    name: str
    gpu: str
    node_size: int
    intra_node: Link
    inter_node: Link
    file: str


#: The keys of a cluster's network (``intra_node``, ``inter_node``).
LINK_KEYS = ("bandwidth", "latency", "algorithm", "phase_latency", "buffer_bandwidth", "description")


def _link(ctx: Ctx, m: YMap, key: str) -> Link:
    s = section(ctx, m.get(key), key, LINK_KEYS, ("bandwidth",), parent=m, key=key)
    return Link(quantity(ctx, s, "bandwidth", key, U.BYTES_PER_S),
                quantity(ctx, s, "latency", key, U.SECONDS, allow_zero=True, default=0.0),
                choice(ctx, s, "algorithm", key, ALGORITHMS, default="ring"),
                quantity(ctx, s, "phase_latency", key, U.SECONDS, allow_zero=True, default=0.0),
                quantity(ctx, s, "buffer_bandwidth", key, U.BYTES_PER_S) if "buffer_bandwidth" in s else None)


def cluster(ctx: Ctx, ref: str, path: str = "--platform", line: int | None = None) -> Cluster:
    """Read the cluster profile ``ref``; errors name its file and key."""
    pctx, m = read_profile(ctx, ref, path, line, "cluster")
    for k in ("gpu", "node_size", "intra_node", "inter_node"):
        if k not in m:
            raise pctx.error(k, "missing required key (a cluster profile names its gpu, node_size, intra_node and "
                             "inter_node)", getattr(m, "line", None))
    gpu = text(pctx, m, "gpu", "gpu")
    profile_path(pctx, gpu, "gpu", line_of(m, "gpu"))   # it exists
    size = int(number(pctx, m["node_size"], "node_size", line_of(m, "node_size"), lo=1, integer=True))
    return Cluster(label(pctx, m, ref), gpu, size, _link(pctx, m, "intra_node"), _link(pctx, m, "inter_node"),
                   pctx.file)


def gpu_section(ctx: Ctx, ref: Any, path: str, line: int | None) -> tuple[Ctx, YMap, str]:
    """The ``npu`` section of GPU profile ``ref`` with its own Ctx, and the profile's name."""
    pctx, m = read_profile(ctx, ref, path, line, "gpu")
    if "npu" not in m:
        raise pctx.error("npu", "missing required key (a GPU profile has an npu section)", getattr(m, "line", None))
    return pctx, m["npu"], label(pctx, m, ref)


def check_not_nested(ctx: Ctx, m: YMap, path: str) -> None:
    """A profile's own npu section names no other profile."""
    if "profile" in m:
        raise ctx.error(join_path(path, "profile"), "a platform profile's npu section cannot name another profile",
                        line_of(m, "profile"))

