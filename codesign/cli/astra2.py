"""``codesign simulate --astra2-network N.yml --astra2-system S.json --astra2-workload PREFIX``: ASTRA-sim 2.x's
own inputs run in its analytical semantics (docs/astra-sim-2.md)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import SpecError

FLAGS = ("astra2_network", "astra2_system", "astra2_workload", "astra2_comm_group", "astra2_remote_memory")


def add_arguments(m: Any) -> None:
    """The 2.x flags of ``simulate`` (argparse subparser ``m``)."""
    m.add_argument("--astra2-network", metavar="N.yml", help="ASTRA-sim 2.x analytical network YAML")
    m.add_argument("--astra2-system", metavar="S.json", help="ASTRA-sim 2.x system JSON")
    m.add_argument("--astra2-workload", metavar="PREFIX", help="ASTRA-sim 2.x Chakra traces PREFIX.<rank>.et")
    m.add_argument("--astra2-comm-group", metavar="G.json", help="ASTRA-sim 2.x communicator-group JSON")
    m.add_argument("--astra2-remote-memory", metavar="M.json", help="ASTRA-sim 2.x remote-memory JSON")
    m.add_argument("--backend", choices=("congestion-unaware", "congestion-aware"), default=None,
                   help="with --astra2-*: 2.x's analytical backend (default congestion-unaware)")


def given(args: argparse.Namespace) -> bool:
    return any(getattr(args, f) for f in FLAGS)


def simulate_command(args: argparse.Namespace) -> int:
    from ..astra2.mode import simulate_astra2
    if args.problem or args.astra_workload or args.astra_network or args.astra_system:
        raise SpecError("give either the --astra2-* inputs (ASTRA-sim 2.x) or a problem file / the --astra-* inputs "
                        "(1.0), not both")
    missing = [f"--{f.replace('_', '-')}" for f in FLAGS[:3] if not getattr(args, f)]
    if missing:
        raise SpecError(f"ASTRA-sim 2.x mode needs {', '.join(missing)} (network YAML, system JSON, trace prefix)")
    net = args.astra2_network
    if net.lower().endswith(".json") and not args.astra2_system.lower().endswith(".json"):
        raise SpecError("--astra2-network takes the YAML network; the JSON is the --astra2-system file (swapped?)",
                        file=net)
    res = simulate_astra2(net, args.astra2_system, args.astra2_workload, comm_group=args.astra2_comm_group,
                          remote_memory=args.astra2_remote_memory, backend=args.backend or "congestion-unaware",
                          confine_to=Path.cwd() if args.confine else None)
    d = res.to_dict()
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"ASTRA-sim 2.x mode: {res.npus} NPUs, {res.backend} backend; finish {res.finish_ns} ns "
          f"({res.events} events)")
    print(f"{'ranks':>9}  {'finish ns':>12}  {'compute ns':>11}  {'exposed comm ns':>15}  {'comm ns':>10}  "
          f"{'overlap ns':>10}  collectives")
    for lo, hi, r in _runs(res.ranks):
        span = f"{lo}" if lo == hi else f"{lo}-{hi}"
        print(f"{span:>9}  {r.finish_ns:>12}  {r.compute_ns:>11}  {r.exposed_ns:>15}  {r.comm_time_ns:>10}  "
              f"{r.overlap_ns:>10}  {len(r.collectives)}")
    for n, t, b, s, e in res.ranks[0].collectives:
        print(f"rank 0 collective node {n}: {t} of {b} bytes, {s} .. {e} ns ({e - s} ns)")
    return 0


def _runs(ranks: Any) -> list[tuple[int, int, Any]]:
    """Consecutive ranks with the same figures, as (first, last, one of them): a big system prints a few rows."""
    out: list[tuple[int, int, Any]] = []
    for r in ranks:
        key = (r.finish_ns, r.compute_ns, r.comm_time_ns, r.overlap_ns, len(r.collectives))
        if out and (out[-1][2].finish_ns, out[-1][2].compute_ns, out[-1][2].comm_time_ns, out[-1][2].overlap_ns,
                    len(out[-1][2].collectives)) == key:
            out[-1] = (out[-1][0], r.rank, out[-1][2])
        else:
            out.append((r.rank, r.rank, r))
    return out
