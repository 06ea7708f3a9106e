"""Add a communication engine from outside the package: one registered ``EngineKind``.

An engine for in-network reduction (in the manner of SHARP, where the switches reduce): the NPU's engine
moves each chunk between HBM and the network with a DMA, as ACE does, keeps it in an on-chip buffer
while it is in flight, and reduces nothing at the endpoint. Its design space is the DMA's bandwidth and
the buffer's size. (Only the endpoint is modelled here: the network algorithm that would let switches
reduce, sending half the bytes on a switch dimension, is the topology's and is left as it is.)

Registering it is all it takes: problem files may then say ``engine: {type: innet, buffer: [...], dma:
[...]}``; the MILP, the simulator, the bounds, the reports and the Solution's JSON read the registry. On
a problem where ACE's ALUs never hold anything back, this engine must replay exactly as ACE does (the
test of this example checks it).

Run:  python examples/in_network_engine.py [problem.yaml]
"""
from __future__ import annotations

import sys
from pathlib import Path

import codesign
from codesign.platform.engines import ENGINES, EngineKind, Resource, register, streaming_memory
from codesign.spec.units import BYTES, BYTES_PER_S
from codesign.spec.yamlfile import load_yaml

HERE = Path(__file__).resolve().parent

INNET = EngineKind(
    "innet", "in-network reduction: a DMA and an on-chip buffer at the endpoint, reductions in the switches",
    (Resource("buffer", "sram", "size", BYTES, "buffer_bytes", "buffer", "on-chip buffer"),
     Resource("dma", "memory", "bandwidth", BYTES_PER_S, "dma_bandwidth_bytes_per_s", "DMA", "engine DMA",
              limits=lambda npu: (0, npu.hbm_bandwidth, True, False), limit_name="the NPU's HBM bandwidth")),
    streaming_memory, reduces=False)


def problems(path: str) -> tuple[codesign.Problem, codesign.Problem]:
    """The problem with its engine swapped for the in-network one, and for an ACE with the same DMA and
    SRAM and ALUs too fast to matter."""
    if "innet" not in ENGINES:
        register(INNET)
    doc = load_yaml(path)
    e = doc.get("engine") if isinstance(doc, dict) else None
    missing = [k for k in ("sram", "dma") if not isinstance(e, dict) or k not in e]
    if missing:
        kind = e.get("type", "ace") if isinstance(e, dict) else "missing"
        raise codesign.SpecError(f"this example builds its engine from an ACE's sram and dma options, and the "
                                 f"problem's {kind} engine has no {' and no '.join(missing)}; give a problem with an "
                                 "ACE engine", file=path, path="engine")
    innet = {**doc, "engine": {"type": "innet", "area_budget": e.get("area_budget", "1000 mm^2"),
                               "endpoint_delay": e.get("endpoint_delay", "0 ns"),
                               "buffer": e["sram"], "dma": e["dma"]}}
    ace = {**doc, "engine": {**innet["engine"], "type": "ace", "sram": e["sram"], "alu": "100 TB/s"}}
    del ace["engine"]["buffer"]
    return codesign.parse_problem(innet, path), codesign.parse_problem(ace, path)


def main(path: str) -> tuple[codesign.Solution, codesign.Solution]:
    innet, ace = problems(path)
    a, b = codesign.solve(innet), codesign.solve(ace)
    print(f"in-network engine  {a.status}: {a.iteration_time_s * 1e6:.2f} us with {a.design_named}")
    print(f"ACE, ALUs ample    {b.status}: {b.iteration_time_s * 1e6:.2f} us with {b.design_named}")
    return a, b


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "quickstart.yaml"))
    except codesign.CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
