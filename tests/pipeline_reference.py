"""An exact replay of every stage of a pipeline, for tests: Megatron-LM's schedules with its blocking
point-to-point exchanges, each stage its own program (warm-up, 1F1B, cool-down; or GPipe's all forwards
then all backwards), an exchange starting when both neighbours have reached it and taking ``c``; then a
global barrier (the optimizer step waits for every stage, as the gradient-norm all-reduce makes it) and
the optimizer step. Times per stage may differ (the first stage's embedding, the last stage's head)."""
from __future__ import annotations


def megatron_ops(s: int, p: int, m: int, schedule: str) -> list[tuple]:
    """Stage s's program: ('c', 'F'|'B', j) compute, ('x', [messages]) one batched exchange; a message is
    (direction, micro-batch, lower stage of the pair, role)."""
    ops: list[tuple] = []
    first, last = s == 0, s == p - 1

    def recv_fwd(j): return [] if first else [("act", j, s - 1, "recv")]
    def send_fwd(j): return [] if last else [("act", j, s, "send")]
    def recv_bwd(j): return [] if last else [("grad", j, s, "recv")]
    def send_bwd(j): return [] if first else [("grad", j, s - 1, "send")]

    def x(msgs):
        if msgs:
            ops.append(("x", msgs))
    if schedule == "1f1b":   # Megatron's forward_backward_pipelining_without_interleaving
        w = min(p - s - 1, m)
        for j in range(w):
            x(recv_fwd(j))
            ops.append(("c", "F", j))
            x(send_fwd(j))
        rem = m - w
        if rem > 0:
            x(recv_fwd(w))
        for i in range(rem):
            jf, jb = w + i, i
            ops.append(("c", "F", jf))
            x(send_fwd(jf) + recv_bwd(jb))
            ops.append(("c", "B", jb))
            x(send_bwd(jb) if i == rem - 1 else send_bwd(jb) + recv_fwd(jf + 1))
        for jb in range(rem, m):
            x(recv_bwd(jb))
            ops.append(("c", "B", jb))
            x(send_bwd(jb))
    else:                    # GPipe: all forwards, then all backwards, last micro-batch first
        for j in range(m):
            x(recv_fwd(j))
            ops.append(("c", "F", j))
            x(send_fwd(j))
        for j in reversed(range(m)):
            x(recv_bwd(j))
            ops.append(("c", "B", j))
            x(send_bwd(j))
    return ops


def iteration_time(tf: list[float], tb: list[float], c: float, m: int, schedule: str, opt: float = 0.0) -> float:
    """One iteration of p = len(tf) stages: every stage's program from a common start, then the barrier and
    the optimizer step (its time ``opt``)."""
    p = len(tf)
    progs = [megatron_ops(s, p, m, schedule) for s in range(p)]
    t = [0.0] * p
    pc = [0] * p
    post: dict[tuple, dict[str, float]] = {}
    while any(pc[s] < len(progs[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while pc[s] < len(progs[s]):
                op = progs[s][pc[s]]
                if op[0] == "c":
                    t[s] += tf[s] if op[1] == "F" else tb[s]
                    pc[s] += 1
                    moved = True
                    continue
                for (d, j, lo, role) in op[1]:
                    post.setdefault((d, j, lo), {}).setdefault(role, t[s])
                if any(len(post[(d, j, lo)]) < 2 for (d, j, lo, _) in op[1]):
                    break
                t[s] = max(max(post[(d, j, lo)].values()) + c for (d, j, lo, _) in op[1])
                pc[s] += 1
                moved = True
        if not moved:
            raise RuntimeError("the pipeline deadlocked")
    return max(t) + opt
