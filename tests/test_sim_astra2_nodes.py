"""ASTRA-sim 2.x mode: send/receive and memory nodes, communicator groups, one* algorithms (issue 31).

No rebuilt 2.x was at hand for these, so the expected figures are derived from 2.x's semantics
(docs/astra-sim-2.md): a message's time is the congestion-unaware formula int(hops x latency + bytes / bandwidth),
a memory access int(latency + bytes / bandwidth); a communicator group smaller than the system is one logical
ring of its ranks in file order with the real network's message times, so on a ring where every group neighbour
is two hops away it must finish exactly as the whole system of a ring with twice the latency (which the anchors
of tests/test_sim_astra2.py pin to 2.x); a one* algorithm is one ring of every NPU, so on fully connected
dimensions of equal links it must finish exactly as the plain algorithm on one dimension of all the NPUs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codesign.astra2.mode import program_trace, simulate_astra2
from codesign.cli.main import main
from codesign.workload.chakra_wire import Attr, Node, Trace, encode

S = 1 << 20
BW = 50 * 2**30 / 1e9            # 50 GB/s in bytes per ns
HOP = int(500 + S / BW)           # one ring hop of 1 MiB at 500 ns latency
HOP2 = int(2 * 500 + S / BW)      # two hops (congestion-unaware)
COLLS = {"ALL_REDUCE": 0, "ALL_GATHER": 2, "ALL_TO_ALL": 6, "REDUCE_SCATTER": 7}


def _setup(d: Path, progs: dict[int, list[dict[str, Any]]], *, topo: list[str] | None = None,
           npus: list[int] | None = None, latency: float = 500.0, algos: list[str] | None = None,
           extra: dict[str, Any] | None = None) -> tuple[str, str, str]:
    d.mkdir(parents=True, exist_ok=True)
    npus = npus or [4]
    topo = topo or ["Ring"] * len(npus)
    k = len(npus)
    (d / "n.yml").write_text(f"topology: {json.dumps(topo)}\nnpus_count: {json.dumps(npus)}\n"
                             f"bandwidth: {json.dumps([50.0] * k)}\nlatency: {json.dumps([latency] * k)}\n")
    algos = algos or ["ring"] * len(npus)
    (d / "s.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "endpoint-delay": 10, "preferred-dataset-splits": 4,
        "active-chunks-per-dimension": 2, "local-mem-bw": 1600, "collective-optimization": "localBWAware",
        **{f"{c}-implementation": algos for c in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")},
        **(extra or {})}))
    for r, p in progs.items():
        (d / f"w.{r}.et").write_bytes(p if isinstance(p, bytes) else program_trace(p))
    return str(d / "n.yml"), str(d / "s.json"), str(d / "w")


def _finish(inputs: tuple[str, str, str], **kw: Any) -> list[int]:
    return [r.finish_ns for r in simulate_astra2(*inputs, **kw).ranks]


def _cli(inputs: tuple[str, str, str], capsys: pytest.CaptureFixture, *more: str) -> str:
    net, system, prefix = inputs
    assert main(["simulate", "--astra2-network", net, "--astra2-system", system, "--astra2-workload", prefix,
                 *more]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def _raw(kind: int, attrs: list[Attr]) -> bytes:
    return encode(Trace("0.0.4", (), (Node(id=0, name="n0", type=kind, attrs=tuple(attrs)),)))


# ------------------------------------------------------------------ send / receive
def test_sends_share_the_comm_slot_receives_do_not(tmp_path: Path) -> None:
    """Rank 0 sends to 1, then (the slot being busy until the first arrived) to 2; rank 3's send to 0 goes at
    once beside its posted receive (2.x's HardwareResource never holds a receive). A send ends when its message
    arrived; a receive posted first ends then too."""
    progs = {0: [{"id": 0, "send_to": 1, "comm_size": S}, {"id": 1, "send_to": 2, "comm_size": S},
                 {"id": 2, "recv_from": 3, "comm_size": S}],
             1: [{"id": 0, "recv_from": 0, "comm_size": S}, {"id": 1, "send_to": 3, "comm_size": S, "deps": [0]}],
             2: [{"id": 0, "recv_from": 0, "comm_size": S}],
             3: [{"id": 0, "recv_from": 1, "comm_size": S}, {"id": 1, "send_to": 0, "comm_size": S}]}
    inputs = _setup(tmp_path, progs)
    assert _finish(inputs) == [HOP + HOP2] * 4
    # congestion-aware: store and forward, two links for 0 -> 2 and 1 -> 3, no link waits here
    res = simulate_astra2(*inputs, backend="congestion-aware")
    assert [r.finish_ns for r in res.ranks] == [3 * HOP] * 4
    assert res.ranks[3].comm_time_ns == 3 * HOP      # send and receive nodes count as communication


def test_tags_match_modulo_native_range_and_late_receives_run_at_once(tmp_path: Path) -> None:
    progs = {0: [{"id": 0, "send_to": 1, "comm_size": S, "tag": 500_000_007},
                 {"id": 1, "send_to": 1, "comm_size": S, "tag": 3}],
             1: [{"id": 0, "recv_from": 0, "comm_size": S, "tag": 3},
                 {"id": 1, "recv_from": 0, "comm_size": S, "tag": 7}, {"id": 2, "duration_us": 1, "deps": [0]}],
             2: [{"id": 0, "duration_us": 50}, {"id": 1, "recv_from": 3, "comm_size": S, "deps": [0]}],
             3: [{"id": 0, "send_to": 2, "comm_size": S}]}
    assert _finish(_setup(tmp_path, progs)) == [2 * HOP, 2 * HOP + 1000, 50_000, HOP]


def test_unmatched_receive_is_named_as_a_hang(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    progs = {0: [{"id": 0, "recv_from": 1, "comm_size": S}], 1: [{"id": 0, "duration_us": 1}],
             2: [{"id": 0, "duration_us": 1}], 3: [{"id": 0, "duration_us": 1}]}
    assert "rank 0 never finishes" in _cli(_setup(tmp_path, progs), capsys)


@pytest.mark.parametrize("attrs, says", [
    ([Attr("comm_size", "int64_val", S), Attr("comm_tag", "int32_val", 0)], "comm_dst: missing"),
    ([Attr("comm_dst", "int32_val", 0), Attr("comm_size", "int64_val", S), Attr("comm_tag", "int32_val", 0)],
     "a send to itself"),
    ([Attr("comm_dst", "int32_val", 9), Attr("comm_size", "int64_val", S), Attr("comm_tag", "int32_val", 0)],
     "comm_dst: expected a whole number from 0 to 3"),
    ([Attr("comm_dst", "int32_val", 1), Attr("comm_size", "int64_val", S)], "comm_tag: missing"),
    ([Attr("comm_dst", "int32_val", 1), Attr("comm_size", "int64_val", 0), Attr("comm_tag", "int32_val", 0)],
     "comm_size: expected a whole number from 1"),
    ([Attr("comm_src", "int32_val", 2), Attr("comm_dst", "int32_val", 1), Attr("comm_size", "int64_val", S),
      Attr("comm_tag", "int32_val", 0)], "comm_src: 2, but this is rank 0"),
])
def test_bad_send_nodes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, attrs: list[Attr],
                                     says: str) -> None:
    progs: dict[int, Any] = {r: [{"id": 0, "duration_us": 1}] for r in range(4)}
    progs[0] = _raw(5, [Attr("is_cpu_op", "bool_val", False), *attrs])
    err = _cli(_setup(tmp_path, progs), capsys)
    assert says in err and "w.0.et" in err


def test_comm_node_on_cpu_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    progs: dict[int, Any] = {r: [{"id": 0, "duration_us": 1}] for r in range(4)}
    progs[0] = _raw(6, [Attr("is_cpu_op", "bool_val", True), Attr("comm_src", "int32_val", 1),
                        Attr("comm_size", "int64_val", S), Attr("comm_tag", "int32_val", 0)])
    assert "Comm node should not be on CPU" in _cli(_setup(tmp_path, progs), capsys)


# ------------------------------------------------------------------ memory nodes
def _memory(tmp: Path, doc: dict[str, Any]) -> str:
    (tmp / "m.json").write_text(json.dumps(doc))
    return str(tmp / "m.json")


def test_memory_nodes_per_npu_pool_and_node(tmp_path: Path) -> None:
    one = 100 + 1000 // 10       # remote-mem-latency + tensor_size / remote-mem-bw (B/ns)
    per_npu = {0: [{"id": 0, "mem": "load", "tensor_size": 1000}, {"id": 1, "mem": "store", "tensor_size": 1000}],
               **{r: [{"id": 0, "mem": "load", "tensor_size": 1000}] for r in (1, 2, 3)}}
    inputs = _setup(tmp_path / "a", per_npu)
    # 10.7 B/ns is read as 10 (2.x keeps it in a 64-bit unsigned integer); rank 0's two accesses take the
    # one communication slot in turn, the other NPUs' memories are their own
    mem = _memory(tmp_path, {"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-latency": 100,
                             "remote-mem-bw": 10.7})
    assert _finish(inputs, remote_memory=mem) == [2 * one, one, one, one]
    each = {r: [{"id": 0, "mem": "store", "tensor_size": 1000}] for r in range(4)}
    inputs = _setup(tmp_path / "b", each)
    pool = _memory(tmp_path, {"memory-type": "MEMORY_POOL", "remote-mem-latency": 100, "remote-mem-bw": 10})
    assert _finish(inputs, remote_memory=pool) == [one, 2 * one, 3 * one, 4 * one]
    node = _memory(tmp_path, {"memory-type": "PER_NODE_MEMORY_EXPANSION", "remote-mem-latency": 100,
                              "remote-mem-bw": 10, "num-nodes": 2, "num-npus-per-node": 2})
    assert _finish(inputs, remote_memory=node) == [one, 2 * one, one, 2 * one]


def test_memory_nodes_refused_without_a_memory_that_serves_them(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    inputs = _setup(tmp_path, {r: [{"id": 0, "mem": "load", "tensor_size": 64}] for r in range(4)})
    assert "NO_MEMORY_EXPANSION" in _cli(inputs, capsys)
    small = _memory(tmp_path, {"memory-type": "PER_NODE_MEMORY_EXPANSION", "remote-mem-bw": 10, "num-nodes": 1,
                               "num-npus-per-node": 2})
    assert "num-nodes" in _cli(inputs, capsys, "--astra2-remote-memory", small)
    zero = _memory(tmp_path, {"memory-type": "MEMORY_POOL", "remote-mem-bw": 0})
    assert "remote-mem-bw" in _cli(inputs, capsys, "--astra2-remote-memory", zero)


# ------------------------------------------------------------------ communicator groups
@pytest.mark.parametrize("ctype", list(COLLS))
@pytest.mark.parametrize("algo", ["ring", "direct", "halvingDoubling"])
def test_group_is_a_ring_of_its_ranks_with_the_real_message_times(tmp_path: Path, ctype: str, algo: str) -> None:
    if ctype == "ALL_TO_ALL" and algo == "halvingDoubling":
        pytest.skip("2.x has no halving-doubling all-to-all")
    c = COLLS[ctype]
    groups = tmp_path / "g.json"
    groups.write_text(json.dumps({"1": [0, 2, 4, 6], "2": [1, 3, 5, 7]}))
    both = _setup(tmp_path / "a", {r: [{"id": 0, "comm_type": c, "comm_size": S, "pg_name": 1 + r % 2}]
                                   for r in range(8)}, npus=[8], algos=[algo])
    alone = _setup(tmp_path / "b", {r: [{"id": 0, "comm_type": c, "comm_size": S}] for r in range(4)},
                   latency=1000.0, algos=[algo])
    assert _finish(both, comm_group=str(groups)) == [_finish(alone)[0]] * 8


def test_group_ring_follows_file_order_and_a_full_group_is_the_system(tmp_path: Path) -> None:
    prog = {r: [{"id": 0, "comm_type": 0, "comm_size": S, "pg_name": "1" if r % 2 == 0 else "2"}] for r in range(8)}
    inputs = _setup(tmp_path / "a", prog, npus=[8])
    (tmp_path / "g1.json").write_text(json.dumps({"1": [0, 2, 4, 6], "2": [1, 3, 5, 7]}))
    (tmp_path / "g2.json").write_text(json.dumps({"1": [0, 4, 2, 6], "2": [1, 3, 5, 7]}))
    near = _finish(inputs, comm_group=str(tmp_path / "g1.json"))
    far = _finish(inputs, comm_group=str(tmp_path / "g2.json"))
    assert far[1::2] == near[1::2] and all(f > n for f, n in zip(far[0::2], near[0::2]))
    full = _setup(tmp_path / "b", {r: [{"id": 0, "comm_type": 0, "comm_size": S, "pg_name": "5"}] for r in range(8)},
                  npus=[2, 4], algos=["ring", "direct"])
    plain = _setup(tmp_path / "c", {r: [{"id": 0, "comm_type": 0, "comm_size": S}] for r in range(8)},
                   npus=[2, 4], algos=["ring", "direct"])
    (tmp_path / "g3.json").write_text(json.dumps({"5": [7, 6, 5, 4, 3, 2, 1, 0]}))
    assert _finish(full, comm_group=str(tmp_path / "g3.json")) == _finish(plain)


def test_group_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    inputs = _setup(tmp_path, {r: [{"id": 0, "comm_type": 0, "comm_size": S, "pg_name": "1"}] for r in range(4)})
    assert "no --astra2-comm-group file" in _cli(inputs, capsys)
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"2": [0, 1, 2, 3]}))
    assert "communicator group 1 not found" in _cli(inputs, capsys, "--astra2-comm-group", str(g))
    g.write_text(json.dumps({"1": [0, 1, 2]}))
    assert "does not list rank 3" in _cli(inputs, capsys, "--astra2-comm-group", str(g))
    g.write_text(json.dumps({"0": [0, 1]}))
    assert "group id 0" in _cli(inputs, capsys, "--astra2-comm-group", str(g))


# ------------------------------------------------------------------ one* algorithms
@pytest.mark.parametrize("one, base", [("oneRing", "ring"), ("oneDirect", "direct"),
                                       ("oneHalvingDoubling", "halvingDoubling")])
@pytest.mark.parametrize("ctype", list(COLLS))
def test_one_star_is_one_ring_of_every_npu(tmp_path: Path, one: str, base: str, ctype: str) -> None:
    if ctype == "ALL_TO_ALL" and base == "halvingDoubling":
        pytest.skip("2.x has no halving-doubling all-to-all")
    prog = {r: [{"id": 0, "comm_type": COLLS[ctype], "comm_size": S}] for r in range(8)}
    two_d = _setup(tmp_path / "a", prog, topo=["FullyConnected"] * 2, npus=[2, 4], algos=[one])
    flat = _setup(tmp_path / "b", prog, topo=["FullyConnected"], npus=[8], algos=[base])
    hier = _setup(tmp_path / "c", prog, topo=["FullyConnected"] * 2, npus=[2, 4], algos=[base, base])
    assert _finish(two_d) == _finish(flat) != _finish(hier)


def test_more_algorithms_than_dimensions_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    inputs = _setup(tmp_path, {r: [{"id": 0, "comm_type": 0, "comm_size": S}] for r in range(4)},
                    algos=["ring", "ring"])
    assert "2 algorithms for a 1-dimensional network (2.x asserts)" in _cli(inputs, capsys)


# ------------------------------------------------------------------ double binary tree
def _dbt_times(c: int) -> tuple[int, int, int]:
    """(E, D, P) for a chunk of c bytes: endpoint delay, one fully connected message, a processed bundle's
    local processing (3 x int(c / local-mem-bw))."""
    return 10, int(500 + c / BW), 3 * int(c / 1600e9 * 1e9)


def test_double_binary_tree_timeline_by_hand(tmp_path: Path) -> None:
    """4 fully connected NPUs, one chunk: the first tree (RootMax) is leaves 0 and 2 under 1, under the top 3.
    Leaves: a bundle, up, down, a bundle; 1: both children's processed bundles, up, a processed bundle, down to
    both; 3: a processed bundle, down. Finishes as the state machine of DoubleBinaryTreeAllReduce gives them."""
    prog = {r: [{"id": 0, "comm_type": 0, "comm_size": S}] for r in range(4)}
    e, d, p = _dbt_times(S)
    got = _finish(_setup(tmp_path, prog, topo=["FullyConnected"], algos=["doubleBinaryTree"],
                         extra={"preferred-dataset-splits": 1, "active-chunks-per-dimension": 1}))
    leaf = 5 * e + 4 * d + 3 * p
    assert got == [leaf, 4 * e + 3 * d + 3 * p, leaf, 3 * e + 2 * d + 2 * p]
    two = _setup(tmp_path / "two", {r: prog[r] for r in (0, 1)}, topo=["FullyConnected"], npus=[2],
                 algos=["doubleBinaryTree"], extra={"preferred-dataset-splits": 1, "active-chunks-per-dimension": 1})
    assert _finish(two) == [3 * e + 2 * d + p, 2 * e + d + p]      # leaf 0 under the top 1


def test_double_binary_tree_alternates_its_two_trees(tmp_path: Path) -> None:
    """Two chunks at once: the second takes the RootMin tree (top 0 over 2, leaves 1 and 3), so every rank is a
    leaf of one of them and all finish at the leaf's time (with one tree, 1 and 3 would finish earlier)."""
    prog = {r: [{"id": 0, "comm_type": 0, "comm_size": S}] for r in range(4)}
    e, d, p = _dbt_times(S // 2)
    got = _finish(_setup(tmp_path, prog, topo=["FullyConnected"], algos=["doubleBinaryTree"],
                         extra={"preferred-dataset-splits": 2, "active-chunks-per-dimension": 2}))
    assert got == [5 * e + 4 * d + 3 * p] * 4


def test_double_binary_tree_refusals(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    prog = {r: [{"id": 0, "comm_type": 0, "comm_size": S}] for r in range(6)}
    odd = _setup(tmp_path / "a", prog, npus=[6], algos=["doubleBinaryTree"])
    assert "power-of-two" in _cli(odd, capsys)
    grouped = {r: [{"id": 0, "comm_type": 0, "comm_size": S, "pg_name": "1"}] for r in range(4)}
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"1": [0, 1, 2, 3], "2": [0, 1]}))
    inputs = _setup(tmp_path / "b", grouped, algos=["doubleBinaryTree"])
    assert _finish(inputs, comm_group=str(g))        # a group of every NPU takes the system's trees
    grouped[0] = grouped[1] = [{"id": 0, "comm_type": 0, "comm_size": S, "pg_name": "2"}]
    grouped[2] = grouped[3] = [{"id": 0, "duration_us": 1}]
    inputs = _setup(tmp_path / "c", grouped, algos=["doubleBinaryTree"])
    assert "doubleBinaryTree on communicator group 2" in _cli(inputs, capsys, "--astra2-comm-group", str(g))


def test_random_programs_of_every_node_kind_finish_or_are_refused(tmp_path: Path) -> None:
    """benchmarks/astra2_anchors.py --kinds nodes (the generator a rebuilt 2.x is to check): each case finishes
    on every rank with figures that hang together, or is refused as a SpecError (a hang, or what 2.x crashes
    on); never another exception."""
    import importlib.util
    import random
    import sys

    from codesign.errors import SpecError
    spec = importlib.util.spec_from_file_location("astra2_anchors", Path(__file__).parents[1] / "benchmarks" /
                                                  "astra2_anchors.py")
    assert spec is not None and spec.loader is not None
    mod = sys.modules["astra2_anchors"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng, finished = random.Random(7), 0
    for i in range(40):
        case = mod.random_nodes_case(rng, i)
        folder = tmp_path / case["name"]
        folder.mkdir()
        net, system, prefix = mod.write_inputs(case, folder)
        groups = folder / "groups.json"
        try:
            res = simulate_astra2(str(net), str(system), prefix, backend=case["backend"],
                                  remote_memory=str(folder / "memory.json"),
                                  comm_group=str(groups) if groups.exists() else None)
        except SpecError:
            continue
        finished += 1
        for r in res.ranks:
            assert 0 <= r.compute_ns <= r.finish_ns and r.comm_time_ns <= r.finish_ns and r.overlap_ns >= 0
    assert finished >= 30
