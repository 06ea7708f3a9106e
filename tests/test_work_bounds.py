"""Every size a user gives is bounded before the work it would cost, and every cut of the work is said.

Each test gives a size just past its bound and asserts the refusal (exit 2, one line, or a SpecError) came before
the work: no solve, no plan, no file written. None of them times anything (BENCHMARKS.md has the figures).
"""
from __future__ import annotations

import gzip

import pytest
from conftest import ROOT

from codesign import SpecError, load_problem
from codesign.cli.main import main

QUICKSTART = ROOT / "problems/quickstart.yaml"
ASTRA = ROOT / "tests/data/astra"


def _run(capsys, *argv: str) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


# ---------------------------------------------------------------- files

def test_a_yaml_file_over_its_bound_is_not_parsed(tmp_path) -> None:
    """A valid YAML file of more than MAX_YAML_CHARS characters of layers (seconds of parsing per 100 KB) is
    refused by its size alone."""
    from codesign.spec.yamlfile import MAX_YAML_CHARS, load_yaml
    line = "    - {name: fc, forward: 40 us, input_grad: 40 us, weight_grad: 40 us}\n"
    big = tmp_path / "big.yaml"
    big.write_text("workload:\n  layers:\n" + line * (MAX_YAML_CHARS // len(line) + 1))
    with pytest.raises(SpecError, match=r"big.yaml: 1.0 MiB of YAML is over the 1 MiB"):
        load_yaml(big)


def _chakra_problem(tmp_path, trace_name: str) -> str:
    text = QUICKSTART.read_text()
    start, end = text.index("workload:"), text.index("topology:")
    p = tmp_path / "p.yaml"
    p.write_text(text[:start] + f"workload: {{chakra: {trace_name}}}\n" + text[end:])
    return str(p)


@pytest.mark.parametrize("gzipped", [True, False])
def test_a_trace_over_its_bound_is_not_decoded(tmp_path, gzipped) -> None:
    """A gzipped trace inflating past MAX_TRACE_BYTES (0.5 MB inflated to near 512 MiB took 148 s and 9.8 GB) is
    refused once that much is inflated, an uncompressed one by its size, before any message is decoded."""
    from codesign.workload.chakra_wire import MAX_TRACE_BYTES
    data = bytes(MAX_TRACE_BYTES + 1)  # zero-length messages: the most messages per byte
    (tmp_path / "t.0.et").write_bytes(gzip.compress(data, 1) if gzipped else data)
    limit = f"{MAX_TRACE_BYTES // 2**20} MiB a trace may have"
    with pytest.raises(SpecError, match=f"too large a Chakra execution trace: .*{limit}"):
        load_problem(_chakra_problem(tmp_path, "t.0.et"))


def _chain(n: int, *, gathering: bool) -> object:
    """n compute nodes, each followed by a memory node; ``gathering``: each memory node depends on the one before
    it, so it has every compute task before it upstream (pairs grow as n^2), else only its own."""
    from codesign.workload.chakra_wire import NODE_TYPE_IDS, Node, Trace
    comp, mem = NODE_TYPE_IDS["COMP_NODE"], NODE_TYPE_IDS["MEM_LOAD_NODE"]
    nodes = []
    for i in range(n):
        nodes.append(Node(2 * i, f"c{i}", comp, data_deps=(2 * i - 1,) if i else (), duration_micros=10))
        nodes.append(Node(2 * i + 1, f"m{i}", mem, data_deps=(2 * i, 2 * i - 1) if i and gathering else (2 * i,)))
    return Trace("0.0.4", (), tuple(nodes))


def test_dependencies_through_non_compute_nodes_are_bounded(monkeypatch) -> None:
    """A chain of memory nodes that each gather every task before them costs the square of its length to follow
    (3,000 of them: 4.5 million predecessor pairs); past MAX_UPSTREAM_PAIRS the trace is refused, naming the node
    where the bound was passed, while a trace as long whose dependencies do not gather is read."""
    from codesign.workload import chakra
    monkeypatch.setattr(chakra, "MAX_UPSTREAM_PAIRS", 20_000)  # (the same rule at 1/250 of the size)
    ok = chakra.trace_to_workload(_chain(300, gathering=False), file="t.et", name="t", dim_sizes=(4,))
    assert len(ok.task_graph.tasks) == 300
    with pytest.raises(SpecError, match=r"t.et: node \d+ .*more than 20,000 \(node, upstream task\) pairs"):
        chakra.trace_to_workload(_chain(300, gathering=True), file="t.et", name="t", dim_sizes=(4,))


def test_export_chakra_all_npus_is_bounded_before_writing(tmp_path, capsys) -> None:
    """``--all-npus`` on a topology of more NPUs than MAX_TRACE_FILES (4M NPUs wrote 58,000 files before the disk
    filled) writes nothing, not even the --out folder."""
    from codesign.cli.chakra import MAX_TRACE_FILES
    text = QUICKSTART.read_text().replace("size: 4, links: 2, bandwidth: 25 GB/s", "size: 8192, links: 2, "
                                          "bandwidth: 25 GB/s")
    assert 4 * 8192 > MAX_TRACE_FILES
    p = tmp_path / "wide.yaml"
    p.write_text(text)
    out = tmp_path / "traces"
    status, err = _run(capsys, "export-chakra", p, "--out", out, "--all-npus")
    assert status == 2 and "--all-npus: 32,768 NPUs would be 32,768 files" in err, err
    assert not out.exists()


# ---------------------------------------------------------------- counts on the command line and in the API

def test_simulate_passes_and_iterations_are_bounded(capsys) -> None:
    """``--passes 1e9`` and ``--iterations 1e9`` ran for ever; one past each bound is refused (the API too)."""
    from codesign.astra.inputs import MAX_PASSES
    from codesign.astra.mode import simulate_astra
    from codesign.cli.main import MAX_ITERATIONS
    files = (ASTRA / "workload/microAllReduce.txt", ASTRA / "network/sample_Torus3D.json",
             ASTRA / "system/sample_torus_sys.txt")
    status, err = _run(capsys, "simulate", "--astra-workload", files[0], "--astra-network", files[1],
                       "--astra-system", files[2], "--passes", MAX_PASSES + 1)
    assert status == 2 and f"--passes: expected a whole number from 1 to {MAX_PASSES:,}" in err, err
    with pytest.raises(SpecError, match="passes must be a whole number from 1 to"):
        simulate_astra(*files, passes=10**9)
    status, err = _run(capsys, "simulate", QUICKSTART, "--iterations", MAX_ITERATIONS + 1)
    assert status == 2 and f"to {MAX_ITERATIONS:,}, got {MAX_ITERATIONS + 1}" in err, err


def test_pareto_points_are_bounded_before_any_solve(monkeypatch) -> None:
    """``--points 10^8`` (and ``max_points``) past MAX_FRONT_POINTS is refused before the first solve."""
    from codesign.explore import pareto

    def no_solve(*a, **k):
        raise AssertionError("a solve ran before the refusal")
    monkeypatch.setattr(pareto, "solve", no_solve)
    p = load_problem(QUICKSTART)
    with pytest.raises(SpecError, match="--points: expected a whole number from 2 .* to 1000, got 100000000"):
        pareto.pareto_front(p, points=10**8)
    with pytest.raises(SpecError, match="--max-points: expected"):
        pareto.pareto_front(p, max_points=pareto.MAX_FRONT_POINTS + 1)


def test_an_exact_walk_cut_at_its_point_limit_says_so() -> None:
    """The exact walk stopped at 60 points without a word (MSFT-1T's network front jumped from 858.8 $ to 2,993 $
    and the plot drew a false cliff): a cut walk names the untraced stretch in a note, its method and ``untraced``.
    The quickstart's front has 5 corners; a limit of 3 walks the min-time end, one corner and the min-area end."""
    from codesign.explore.pareto import pareto_front
    full = pareto_front(load_problem(QUICKSTART))
    assert len(full.points) == 5 and full.untraced is None and not any("walk" in n for n in full.notes)
    cut = pareto_front(load_problem(QUICKSTART), max_points=3)
    assert len(cut.points) == 3 and "cut at 3 points" in cut.method
    lo, hi = cut.untraced
    assert lo == pytest.approx(full.points[0].x) and hi == pytest.approx(cut.points[1].x)
    assert hi > full.points[1].x  # corners of the full front lie in the stretch the cut walk did not reach
    assert any("stopped at its limit of 3 points" in n and "from 0.75 to 2.25" in n for n in cut.notes), cut.notes


def test_the_sweep_api_refuses_a_worker_count_before_planning(monkeypatch) -> None:
    """``sweep(..., workers=10**9)`` refused only after planning every point and sizing batches for 10^9 workers
    (31 s, 7.9 GB); the command line refused at once. Both refuse before the plan now."""
    from codesign.explore import sweep as S

    def no_plan(*a, **k):
        raise AssertionError("planned before the refusal")
    monkeypatch.setattr(S, "plan", no_plan)
    with pytest.raises(SpecError, match="workers: expected a whole number from 1 to 100,000"):
        S.sweep(str(QUICKSTART), {"engine.area_budget": ["2 mm^2", "3 mm^2"]}, workers=10**9)
