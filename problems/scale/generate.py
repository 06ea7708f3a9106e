"""Write the scale problem: a synthetic 500-layer data-parallel model on 1024 NPUs, ACE sized.

    python problems/scale/generate.py      # rewrites problems/scale/synthetic500_ace_1024npu.yaml

The layers are drawn with a fixed seed: per layer a forward time of 8-48 us (input and weight gradients
the same) and a weight-gradient all-reduce of 1-16 MiB, 1 us of update. The network has four
dimensions, 4 x 4 x 8 rings and a switch of 8 (1024 NPUs); the NPU and the ACE catalog follow the
ResNet-50 problem's calibration. It exists to measure the solver and the simulator at scale, not to
model a published network.
"""
from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 500

HEADER = f"""# A synthetic 500-layer data-parallel model on 1024 NPUs (4x4x8 rings and a switch of 8), ACE sized.
# Written by problems/scale/generate.py (seed {SEED}); every number is ours, chosen to measure the solver and
# the simulator at scale (BENCHMARKS.md), not to model a published network: per layer 8-48 us of compute
# per task and a 1-16 MiB weight-gradient all-reduce. NPU and ACE catalog as in resnet50_ace_torus3d.yaml.
"""

NETWORK = """topology:
  dims:
    - {name: local, kind: ring, size: 4, links: 2, bandwidth: 100 GB/s, latency: 100 ns}
    - {name: vertical, kind: ring, size: 4, links: 2, bandwidth: 50 GB/s, latency: 100 ns}
    - {name: horizontal, kind: ring, size: 8, links: 2, bandwidth: 50 GB/s, latency: 100 ns}
    - {name: pod, kind: switch, size: 8, links: 1, bandwidth: 50 GB/s, latency: 500 ns}
npu: {compute: 125 TFLOP/s, hbm_bandwidth: 900 GB/s, cores: 80, core_reduce_rate: 25 GB/s, compute_hbm_utilization: 0.5}
engine:
  type: ace
  area_budget: 4 mm^2
  power_budget: 6 W
  endpoint_delay: 10 ns
  sram:
    - {size: 1 MiB, area: 0.45 mm^2, power: 0.12 W}
    - {size: 2 MiB, area: 0.9 mm^2, power: 0.24 W}
    - {size: 4 MiB, area: 1.8 mm^2, power: 0.48 W}
    - {size: 8 MiB, area: 3.6 mm^2, power: 0.96 W}
  alu:
    - {rate: 64 GB/s, area: 0.1 mm^2, power: 0.1 W}
    - {rate: 128 GB/s, area: 0.2 mm^2, power: 0.2 W}
    - {rate: 256 GB/s, area: 0.4 mm^2, power: 0.4 W}
  dma:
    - {bandwidth: 64 GB/s, area: 0.1 mm^2, power: 0.15 W}
    - {bandwidth: 128 GB/s, area: 0.2 mm^2, power: 0.3 W}
    - {bandwidth: 256 GB/s, area: 0.4 mm^2, power: 0.6 W}
schedule: {order: lifo, chunks: 4}
solver: {profile: default}
"""


def main() -> Path:
    rnd = random.Random(SEED)
    lines = [HEADER.rstrip(), "name: synthetic500-ace-1024npu",
             "description: synthetic 500-layer data-parallel model on 1024 NPUs, ACE sized under 4 mm^2",
             "workload:", "  name: synthetic500", "  parallelism: data", "  layers:"]
    for i in range(500):
        f = rnd.choice([8, 12, 16, 24, 32, 48])
        b = rnd.choice([1, 2, 4, 4, 8, 8, 16])
        lines.append(f"    - {{name: L{i}, forward: {f} us, input_grad: {f} us, weight_grad: {f} us, update: 1 us, "
                     f"weight_grad_comm: {{collective: all_reduce, bytes: {b} MiB}}}}")
    out = HERE / "synthetic500_ace_1024npu.yaml"
    out.write_text("\n".join(lines) + "\n" + NETWORK)
    return out


if __name__ == "__main__":
    print(main())
