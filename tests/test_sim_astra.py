"""ASTRA-sim 1.0 compatible mode: the event core, hand-computed cases, the shipped samples, bad input.

Hand computations use ASTRA-sim 1.0's analytical rules (docs/astra-sim-1.0.md):
T = int(h * latency + bytes / bw) per message with bw = GB/s x 2^30/1e9 x links (ring, switch) or
x links // (N-1) (fully connected); every packet visits the endpoint for E cycles.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from codesign.astra.algorithms import NetworkTiming
from codesign.astra.inputs import load_astra_network, load_astra_system
from codesign.astra.mode import simulate_astra
from codesign.errors import SpecError
from codesign.sim.events import EventLoop

DATA = Path(__file__).resolve().parent / "data" / "astra"
MIB = 1 << 20
E = 10


# --- small inputs written per test -------------------------------------------------------------------
def net(path: Path, *dims: tuple[str, int, int, float, float], **extra: list) -> Path:
    """dims: (topology, units, links, latency ns, GB/s per link)."""
    d: dict = {"topology-name": "Hierarchical", "dimensions-count": len(dims)}
    for i, key in enumerate(("topologies-per-dim", "units-count", "links-count", "link-latency",
                             "link-bandwidth")):
        d[key] = [x[i] for x in dims]
    d.update(extra)
    path.write_text(json.dumps(d, indent=1))
    return path


def system(path: Path, impl: str, *, policy: str = "LIFO", splits: int = 1, opt: str = "baseline",
           a2a: str | None = None, active: int = 1) -> Path:
    path.write_text(f"scheduling-policy: {policy}\nendpoint-delay: {E}\n"
                    f"active-chunks-per-dimension: {active}\n"
                    f"preferred-dataset-splits: {splits}\nboost-mode: 0\n"
                    f"all-reduce-implementation: {impl}\nall-gather-implementation: {impl}\n"
                    f"reduce-scatter-implementation: {impl}\nall-to-all-implementation: {a2a or impl}\n"
                    f"collective-optimization: {opt}\n")
    return path


def workload(path: Path, parallelism: str, *layers: tuple) -> Path:
    """layers: (name, fwd, fwd comm, fwd bytes, ig, ig comm, ig bytes, wg, wg comm, wg bytes, update)."""
    rows = [" ".join(str(x) for x in (name, -1, *rest)) for name, *rest in layers]
    path.write_text(f"{parallelism}\n{len(rows)}\n" + "\n".join(rows) + "\n")
    return path


def micro(path: Path, ctype: str, nbytes: int) -> Path:
    return workload(path, "MICRO", ("l", 5, "NONE", 0, 5, "NONE", 0, 5, ctype, nbytes, 5))


def ring4(tmp: Path) -> Path:
    """The worked example's network: 1-D ring of 4, 2 links x 25 GB/s, 500 ns: bw = 53.687 B/ns."""
    return net(tmp / "ring4.json", ("Ring", 4, 2, 500, 25))


def fc(tmp: Path, n: int) -> Path:
    """Fully connected, n-1 links of 25 GB/s: one link per peer, bw = 26.8435456 B/ns."""
    return net(tmp / f"fc{n}.json", ("FullyConnected", n, n - 1, 500, 25))


# --- the event core -----------------------------------------------------------------------------------
def test_engine_runs_in_time_then_schedule_order_and_counts():
    eng, seen = EventLoop(), []
    eng.schedule(5, seen.append, "b")
    eng.schedule(1, seen.append, "a")
    eng.schedule(5, seen.append, "c")
    eng.schedule(1, lambda _: eng.schedule_after(4, seen.append, "d"))
    assert eng.run() == 5 and eng.events == 5
    assert seen == ["a", "b", "c", "d"] and eng.now == 5
    with pytest.raises(ValueError):
        eng.schedule(1, seen.append)


def test_engine_run_until_leaves_later_events_queued():
    eng, seen = EventLoop(), []
    for t in (1, 2, 3):
        eng.schedule(t, seen.append, t)
    assert eng.run(until=2) == 2 and seen == [1, 2] and eng.pending() == 1
    eng.run()
    assert seen == [1, 2, 3]


# --- hand-computed collectives --------------------------------------------------------------------------
def test_worked_example_is_32367_ns(tmp_path):
    # T = int(500 + 262144 / 53.687) = 5382; all-reduce 10 + 6 x (5382 + 10) = 32362; + update 5
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", MIB), ring4(tmp_path),
                       system(tmp_path / "s.txt", "ring"))
    assert r.finish_time_ns == 32367
    assert r.compute_time_ns == 0 and r.exposed_comm_time_ns == 32367
    assert r.layers[0].wg_comm_ns == 32367


def test_direct_all_reduce_on_fully_connected(tmp_path):
    # c/N = 262144: T = int(500 + 9765.625) = 10265; direct: E + 2 (T + E) = 20560; + update 5
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", MIB), fc(tmp_path, 4),
                       system(tmp_path / "s.txt", "direct"))
    assert r.finish_time_ns == 10 + 2 * (10265 + 10) + 5 == 20565


def test_halving_doubling_on_eight_npus(tmp_path):
    # messages 512, 256, 128 KiB each way: T = 20031, 10265, 5382 (int(500 + m / 26.8435456))
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", MIB), fc(tmp_path, 8),
                       system(tmp_path / "s.txt", "halvingDoubling"))
    assert r.finish_time_ns == 10 + 2 * ((20031 + 10) + (10265 + 10) + (5382 + 10)) + 5 == 71431


def test_large_reduce_messages_pay_astra_processing(tmp_path):
    # 1 MiB messages: T = 20031; the 3 reduce-scatter receives each pay 3 x floor(1 MiB / 500000) = 6
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", 4 * MIB), ring4(tmp_path),
                       system(tmp_path / "s.txt", "ring"))
    assert r.finish_time_ns == 10 + 6 * (20031 + 10) + 3 * 6 + 5 == 120279


def test_a_remainder_becomes_one_more_chunk(tmp_path):
    # ASTRA cuts S into chunks of S // k and one more with what is left: 1 MiB + 1 byte in 2 splits
    # is 2 chunks of 512 KiB (10 + 6 x (2941 + 10) = 17716 each) and a 1-byte chunk whose ring
    # messages are 1 // 4 = 0 bytes (10 + 6 x (500 + 10) = 3070), served in turn on the one ring
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", MIB + 1), ring4(tmp_path),
                       system(tmp_path / "s.txt", "ring", splits=2))
    assert r.chunks == 3
    assert r.finish_time_ns == 2 * 17716 + 3070 + 5


def test_two_active_chunks_per_dimension_run_side_by_side(tmp_path):
    # the analytical network never queues messages, so two chunk-phases on one ring overlap fully
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", MIB), ring4(tmp_path),
                       system(tmp_path / "s.txt", "ring", splits=2, active=2))
    assert r.finish_time_ns == 17716 + 5


def test_all_to_all_runs_one_phase_per_dimension(tmp_path):
    # ring all-to-all: E + N(N-1)/2 (T(c/N) + E) per dimension, each on the full chunk
    network = net(tmp_path / "n.json", ("Ring", 4, 2, 500, 25), ("Ring", 2, 2, 500, 25))
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLTOALL", MIB), network,
                       system(tmp_path / "s.txt", "ring_ring"))
    dim0 = 10 + 6 * (5382 + 10)        # 4 NPUs, 256 KiB messages
    dim1 = 10 + 1 * (10265 + 10)       # 2 NPUs, 512 KiB messages
    assert r.finish_time_ns == dim0 + dim1 + 5 == 42652


def test_fifo_and_lifo_order_the_waiting_chunks(tmp_path):
    # two layers all-reduce 1 MiB in 2 chunks; one chunk: 10 + 6 x (2941 + 10) = 17716 ns.
    # B's wg collective is issued at 32 (its chunk 0 runs at once), A's at 54.
    chunk = 10 + 6 * (2941 + 10)
    wl = workload(tmp_path / "w.txt", "DATA",
                  ("A", 10, "NONE", 0, 10, "NONE", 0, 10, "ALLREDUCE", MIB, 0),
                  ("B", 10, "NONE", 0, 10, "NONE", 0, 10, "ALLREDUCE", MIB, 0))
    lifo = simulate_astra(wl, ring4(tmp_path), system(tmp_path / "l.txt", "ring", splits=2))
    fifo = simulate_astra(wl, ring4(tmp_path), system(tmp_path / "f.txt", "ring", policy="FIFO",
                                                      splits=2))
    assert lifo.finish_time_ns == fifo.finish_time_ns == 32 + 4 * chunk
    # LIFO: B0, A0, A1, B1 - the later collective (layer A) overtakes B's waiting chunk
    assert (lifo.layers[0].wg_comm_ns, lifo.layers[1].wg_comm_ns) == (32 + 3 * chunk - 54, 4 * chunk)
    # FIFO: B0, B1, A0, A1
    assert (fifo.layers[0].wg_comm_ns, fifo.layers[1].wg_comm_ns) == (32 + 4 * chunk - 54, 2 * chunk)


@pytest.mark.parametrize("chunks, expected", [(2, 4), (3, 6)])
def test_local_bw_aware_chunks_pipeline_across_two_dims(tmp_path, chunks, expected):
    # chunk 1 MiB: reduce-scatter and all-gather on dim 0 (256 KiB messages) take
    # D = 10 + 3 x (5382 + 10) = 16186; all-reduce on dim 1 (64 KiB, 250 GB/s) takes 3802 < D.
    # Returning chunks queue behind earlier arrivals of the same collective, so dim 0 runs
    # RS0 RS1 AG0 AG1 (2 chunks) or RS0 RS1 RS2 AG0 AG1 AG2 (3 chunks) back to back.
    network = net(tmp_path / "n.json", ("Ring", 4, 2, 500, 25), ("Ring", 4, 2, 500, 250))
    r = simulate_astra(micro(tmp_path / "w.txt", "ALLREDUCE", chunks * MIB), network,
                       system(tmp_path / "s.txt", "ring_ring", splits=chunks, opt="localBWAware"))
    assert r.finish_time_ns == expected * 16186 + 5
    assert r.chunks == chunks


def test_dlrm_blocking_waits(tmp_path):
    # HYBRID_DLRM 1: embedding (layer 0), bottom (1), top (2); direct on 4 NPUs fully connected:
    # all-to-all of 1 MiB: 10 + 10265 + 10 = 10285; all-reduce 1 MiB: 20560; all-reduce 4 KiB: 1106.
    wl = workload(tmp_path / "w.txt", "HYBRID_DLRM 1",
                  ("emb", 100, "ALLTOALL", MIB, 50, "ALLTOALL", MIB, 80, "NONE", 0, 7),
                  ("bot", 200, "NONE", 0, 60, "NONE", 0, 90, "ALLREDUCE", 4096, 3),
                  ("top", 300, "NONE", 0, 70, "NONE", 0, 110, "ALLREDUCE", MIB, 5))
    r = simulate_astra(wl, fc(tmp_path, 4), system(tmp_path / "s.txt", "direct"))
    emb, bot, top = r.layers
    # forward: all-to-all issued at 100, ready at 100 + 10285 + 7; the top waits from 301
    assert (emb.fwd_comm_ns, emb.fwd_exposed_ns) == (10285 + 7, 100 + 10285 + 7 - 301)
    # backward: top's all-reduce issued at 10804 runs first; the embedding all-to-all issued at
    # 10875 (highest priority) goes next at 31364, ahead of the bottom all-reduce issued at 10966.
    assert top.wg_comm_ns == 20560 + 5
    assert (emb.ig_comm_ns, emb.ig_exposed_ns) == (41649 + 7 - 10875, 41649 + 7 - 11108)
    assert bot.wg_comm_ns == 41649 + 1106 + 3 - 10966
    assert r.finish_time_ns == 41649 + 1106 + 3 == 42758
    assert r.compute_time_ns == 100 + 200 + 300 + 80 + 90 + 110 + 60 + 70


def test_double_binary_tree_on_the_switch_sample():
    # 4 NPUs behind a switch: T(256 KiB) = int(2 x 500 + 9765.625) + 10 (router) = 10775 (> HBM).
    # Tree 3 -> 1 -> {0, 2}: leaves send at 10, node 1 at 10785 + 10, root answers at 21570 + 10,
    # node 1 forwards at 32355 + 10, leaves done at 43140 + 10 = 43150; 4 chunks in turn; + 5.
    r = simulate_astra(DATA / "workload/microAllReduce.txt", DATA / "network/sample_Switch.json",
                       DATA / "system/sample_a2a_sys.txt")
    assert r.finish_time_ns == 4 * 43150 + 5


def test_loop_transitions_cost_one_cycle_and_update_delay_gates_forward(tmp_path):
    no_comm = workload(tmp_path / "n.txt", "DATA",
                       ("a", 10, "NONE", 0, 30, "NONE", 0, 50, "NONE", 0, 0),
                       ("b", 20, "NONE", 0, 40, "NONE", 0, 60, "NONE", 0, 0))
    one = simulate_astra(no_comm, ring4(tmp_path), system(tmp_path / "s.txt", "ring"))
    # compute 10 + 20 + 60 + 40 + 50 (no input gradient for layer 1) and 5 moves of the loop
    assert (one.compute_time_ns, one.finish_time_ns) == (180, 185)
    assert one.pass_end_ns == (184,)          # layer 1's weight gradient done; the end check is 1 later
    assert simulate_astra(no_comm, ring4(tmp_path), tmp_path / "s.txt", passes=2).finish_time_ns == 370
    gated = workload(tmp_path / "g.txt", "DATA",
                     ("a", 100, "NONE", 0, 0, "NONE", 0, 200, "ALLREDUCE", MIB, 50))
    r = simulate_astra(gated, ring4(tmp_path), tmp_path / "s.txt", passes=2)
    # pass 2's forward waits from 302 until 301 + 32362 + 50; the run ends when pass 2's collective
    # (issued at 32713 + 100 + 1 + 200) and its update are done. ASTRA also counts the end of the run,
    # from pass 2's end (33015) until that collective is done, as layer 1's exposed time: 64822 in all,
    # as ASTRA-sim 1.0's own EndToEnd.csv reports for this input
    assert r.layers[0].wg_exposed_ns == (301 + 32362 + 50 - 302) + (33014 + 32362 + 50 - 33015) == 64822
    assert r.finish_time_ns == 33014 + 32362 + 50
    assert r.layers[0].wg_comm_ns == 2 * (32362 + 50)


def test_message_time_truncates_like_astra(tmp_path):
    path = net(tmp_path / "n.json", ("Ring", 8, 2, 1.5, 16))
    t = NetworkTiming(load_astra_network(path))
    # 3 hops x 1.5 ns truncates to 4 before the 0.58 ns of serialization is added: 4, not 5
    assert t.hops(0, 5) == 3 and t.message_ns(0, 20, 3) == 4
    scaled = net(tmp_path / "h.json", ("Ring", 8, 2, 1.5, 16), **{
        "hbm-latency": [500], "hbm-bandwidth": [370], "hbm-scale": [1]})
    assert NetworkTiming(load_astra_network(scaled)).message_ns(0, 20, 3) == pytest.approx(500 + 20 / 370)


def test_one_ring_and_one_direct_match_a_single_dimension(tmp_path):
    w = micro(tmp_path / "w.txt", "ALLREDUCE", MIB)
    assert simulate_astra(w, ring4(tmp_path), system(tmp_path / "r.txt", "oneRing")).finish_time_ns == 32367
    assert simulate_astra(w, fc(tmp_path, 4), system(tmp_path / "d.txt", "oneDirect")).finish_time_ns \
        == 20565


# --- the shipped samples --------------------------------------------------------------------------------
SAMPLES = [
    ("Resnet50_DataParallel.txt", "sample_Torus3D.json", "sample_torus_sys.txt"),
    ("DLRM_HybridParallel.txt", "sample_Torus3D.json", "sample_torus_sys.txt"),
    ("DLRM_HybridParallel.txt", "sample_Ring_FullyConnected_Switch.json", "sample_3dim_sys.txt"),
    ("MLP_ModelParallel.txt", "sample_Torus3D.json", "sample_torus_sys.txt"),
    ("microAllToAll.txt", "sample_Switch.json", "sample_a2a_sys.txt"),
    ("microAllReduce.txt", "sample_Torus3D.json", "sample_torus_sys.txt"),
    ("Resnet50_DataParallel.txt", "sample_Ring_FullyConnected_Switch.json", "sample_3dim_sys.txt"),
]


@pytest.mark.parametrize("wl, network, sysf", SAMPLES)
def test_samples_run_and_give_sane_values(wl, network, sysf):
    paths = (DATA / "workload" / wl, DATA / "network" / network, DATA / "system" / sysf)
    one, two = simulate_astra(*paths), simulate_astra(*paths, passes=2)
    for r in (one, two):
        assert r.finish_time_ns >= r.compute_time_ns >= 0
        assert r.exposed_comm_time_ns == r.finish_time_ns - r.compute_time_ns >= 0
        assert r.compute_time_ns == sum(la.fwd_compute_ns + la.ig_compute_ns + la.wg_compute_ns
                                        for la in r.layers)
        assert all(min(la.fwd_exposed_ns, la.ig_exposed_ns, la.wg_exposed_ns) >= 0 for la in r.layers)
        assert r.events > 0 and r.chunks >= r.collectives > 0
    assert two.finish_time_ns > one.finish_time_ns
    if one.parallelism != "MICRO":
        assert len(two.pass_end_ns) == 2 and two.pass_end_ns[-1] < two.finish_time_ns
    assert two.compute_time_ns == 2 * one.compute_time_ns


def test_resnet50_on_the_torus_reports_astra_fields():
    r = simulate_astra(DATA / "workload/Resnet50_DataParallel.txt", DATA / "network/sample_Torus3D.json",
                       DATA / "system/sample_torus_sys.txt")
    assert r.compute_time_ns == 1082450           # the sum of the file's compute columns
    assert r.pass_end_ns == (1082450 + 160,)      # + 160 one-cycle moves of the loop before it
    assert r.npus == 64 and len(r.layers) == 54 and r.collectives == 54 and r.chunks == 4 * 54
    d = r.to_dict()
    for key in ("finish_time_ns", "compute_time_ns", "exposed_comm_time_ns", "events", "layers",
                "avg_chunk_latency_ns", "pass_end_ns"):
        assert key in d
    assert set(d["layers"][0]) == {"name", "fwd_compute_ns", "ig_compute_ns", "wg_compute_ns",
                                   "fwd_exposed_ns", "ig_exposed_ns", "wg_exposed_ns", "fwd_comm_ns",
                                   "ig_comm_ns", "wg_comm_ns"}
    json.dumps(d)


# --- bad input ------------------------------------------------------------------------------------------
def good(tmp: Path) -> tuple[Path, Path, Path]:
    return micro(tmp / "w.txt", "ALLREDUCE", MIB), ring4(tmp), system(tmp / "s.txt", "ring")


def test_missing_files_name_the_file(tmp_path):
    w, n, s = good(tmp_path)
    for args, missing in (((tmp_path / "no.txt", n, s), "no.txt"), ((w, tmp_path / "no.json", s), "no.json"),
                          ((w, n, tmp_path / "no_sys.txt"), "no_sys.txt")):
        with pytest.raises(SpecError, match=missing):
            simulate_astra(*args)


def test_bad_json_gives_its_line(tmp_path):
    path = tmp_path / "n.json"
    path.write_text('{\n "units-count": [4],\n "links-count": [2,]\n}\n')
    with pytest.raises(SpecError) as e:
        load_astra_network(path)
    assert e.value.line == 3


@pytest.mark.parametrize("extra, match", [
    ({"unit-count": [4]}, "did you mean 'units-count'"),
    ({"link-bandwidth": ["fast"]}, r"link-bandwidth\[0\].*expected a number"),
    ({"units-count": [4, 4]}, "units-count.*2 value.*dimensions-count is 1"),
    ({"topologies-per-dim": ["Torus"]}, r"topologies-per-dim\[0\]: expected one of Ring, FullyConnected"),
    ({"links-count": [1]}, "no bandwidth"),
])
def test_bad_network_values(tmp_path, extra, match):
    path = net(tmp_path / "n.json", ("Ring", 4, 2, 500, 25), **extra)
    w, _, s = good(tmp_path)
    with pytest.raises(SpecError, match=match):
        simulate_astra(w, path, s)


def test_astra_rejects_a_single_link_ring_sample():
    with pytest.raises(SpecError, match=r"links-count\[2\]"):
        simulate_astra(DATA / "workload/microAllReduce.txt",
                       DATA / "network/sample_Ring_FullyConnected_Ring.json",
                       DATA / "system/sample_3dim_sys.txt")


@pytest.mark.parametrize("text, match", [
    ("scheduling-policy: LILO\n", "expected one of LIFO, FIFO"),
    ("endpoint-delay: ten\n", "endpoint-delay.*whole number"),
    ("enpoint-delay: 10\n", "did you mean 'endpoint-delay'"),
    ("all-reduce-implementation: rng\n", "expected one of ring, .*got the text 'rng'; did you mean 'ring'"),
])
def test_bad_system_values(tmp_path, text, match):
    w, n, s = good(tmp_path)
    lines = [ln for ln in s.read_text().splitlines() if not ln.startswith(text.split(":")[0] + ":")]
    s.write_text("\n".join(lines) + "\n" + text)
    with pytest.raises(SpecError, match=match) as e:
        load_astra_system(s)
    assert e.value.line is not None


def test_inconsistent_or_unsupported_inputs(tmp_path):
    w, n, s = good(tmp_path)
    with pytest.raises(SpecError, match="2 algorithm.*1 dimension"):
        simulate_astra(w, n, system(tmp_path / "s2.txt", "ring_ring"))
    with pytest.raises(SpecError, match="power-of-two"):
        simulate_astra(w, net(tmp_path / "n6.json", ("Ring", 6, 2, 500, 25)),
                       system(tmp_path / "hd.txt", "halvingDoubling"))
    with pytest.raises(SpecError, match="cannot be split"):
        simulate_astra(micro(tmp_path / "tiny.txt", "ALLREDUCE", 3), n,
                       system(tmp_path / "k4.txt", "ring", splits=4))
    with pytest.raises(SpecError, match="HYBRID_TRANSFORMER needs 'model_parallel_NPU_group: G' on line 1"):
        simulate_astra(workload(tmp_path / "t.txt", "HYBRID_TRANSFORMER",
                                ("l", 1, "NONE", 0, 1, "NONE", 0, 1, "NONE", 0, 1)), n, s)
    with pytest.raises(SpecError, match="last bottom-MLP layer"):
        simulate_astra(workload(tmp_path / "d.txt", "HYBRID_DLRM 3",
                                ("l", 1, "NONE", 0, 1, "NONE", 0, 1, "NONE", 0, 1)), n, s)
    with pytest.raises(SpecError, match="passes"):
        simulate_astra(w, n, s, passes=0)
