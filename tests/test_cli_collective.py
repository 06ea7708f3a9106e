"""``codesign collective``: the bound and the tree packing's analytic time on a graph; bad input is one line,
exit 2."""
from __future__ import annotations

import json

import pytest

from codesign.cli.main import main


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_json_all_gather_attains_forestcoll_optimum(capsys):
    status, out, _ = _run(capsys, "collective", "dgx_a100:nodes=2", "--op", "all_gather", "--bytes", "1MiB",
                          "--json")
    assert status == 0
    r = json.loads(out)
    # ForestColl's optimum on its 2-node A100 graph: 16 GPUs x 13 / 0.6 GB/s (tests/data/forestcoll_allgather.csv)
    assert r["algbw_bytes_per_s"] == pytest.approx(16 * 13 / 0.6 * 1e9, rel=1e-6)
    assert r["bound_s"] == pytest.approx(2**20 / r["algbw_bytes_per_s"], rel=1e-12)
    assert r["schedule_s"] >= r["bound_s"] * (1 - 1e-9) and abs(r["gap"]) < 1e-6
    assert r["status"].startswith("optimal") and r["solve_time_s"] > 0
    assert "simulated_s" not in r  # the time is the packing's analytic one, not a replay


def test_reduce_scatter_and_all_reduce_schedules_are_no_faster_than_their_bounds(capsys):
    for op in ("reduce_scatter", "all_reduce"):
        status, out, _ = _run(capsys, "collective", "mi250:nodes=1", "--op", op, "--bytes", "64MiB", "--json")
        r = json.loads(out)
        assert status == 0 and r["schedule_s"] >= r["bound_bandwidth_s"] * (1 - 1e-9), op


def test_text_output_names_bound_and_schedule(capsys):
    status, out, _ = _run(capsys, "collective", "dgx1", "--bytes", "1MiB")
    assert status == 0 and "bound" in out and "schedule" in out and "not simulated" in out


@pytest.mark.parametrize("content, says", [
    ('{"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"source": "a", "target": "b", "bandwidth": 0}]}',
     "links[0].bandwidth"),
    ("not json", "g.json"),
])
def test_bad_graph_file_is_one_line_exit_2(tmp_path, capsys, content, says):
    p = tmp_path / "g.json"
    p.write_text(content)
    status, out, err = _run(capsys, "collective", str(p))
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err


def test_bad_generator_and_size_exit_2(capsys):
    for argv in (["dgx_a100:nodez=2"], ["dgx1", "--bytes", "lots"], ["dgx1", "--bytes", "0B"]):
        status, _, err = _run(capsys, "collective", *argv)
        assert status == 2 and len(err.strip().splitlines()) == 1, err


def test_the_time_limit_is_the_commands(capsys):
    """A limit that has passed before the command starts: a valid bound, no packing claimed, status says so,
    and the JSON holds null (not a number) where nothing was found."""
    import time

    assert main(["collective", "dragonfly:groups=5,routers=2,globals_per_router=2", "--json", "--time-limit",
                 "0.5"], started=time.perf_counter() - 10) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["status"] == "time limit: no packing yet" and r["schedule_s"] is None and r["gap"] is None
    assert r["bound_s"] > 0 and "time limit" in r["bound_why"]
