"""Sweep parameters: key paths, values with units, ranges, and validation before any point runs."""
from __future__ import annotations

import copy
import math

import pytest
from conftest import ROOT

from codesign.errors import SpecError
from codesign.explore.params import (
    apply,
    canonical,
    check_path,
    dimension_of,
    parse_param,
    parse_path,
    parse_values,
    path_text,
)
from codesign.explore.sweep import plan, point_key
from codesign.spec.units import BYTES_PER_S
from codesign.spec.yamlfile import load_yaml

QUICK = str(ROOT / "problems" / "quickstart.yaml")


def test_paths_round_trip_and_reject_malformed():
    assert parse_path("topology.dims[1].bandwidth") == ("topology", "dims", 1, "bandwidth")
    assert parse_path(" engine.sram[0].size ") == ("engine", "sram", 0, "size")
    assert path_text(parse_path("topology.dims[10].latency")) == "topology.dims[10].latency"
    for bad in ("", ".engine", "engine..sram", "topology.dims[x]", "topology.dims[1", "engine.area budget", "[0].x"):
        with pytest.raises(SpecError):
            parse_path(bad)


@pytest.mark.parametrize("path, fragment", [
    ("topology.dimz[1].bandwidth", "did you mean 'dims'"),
    ("topology.dims[5].bandwidth", "has 2 item(s)"),
    ("topology.dims.bandwidth", "give an index, e.g. topology.dims[0].bandwidth"),
    ("engine.area_budget.x", "is a value, not a mapping"),
    ("npu[0]", "is not a list"),
])
def test_wrong_paths_name_the_problem(path, fragment):
    doc = load_yaml(QUICK)
    with pytest.raises(SpecError) as e:
        check_path(doc, parse_path(path), file=QUICK)
    assert fragment in str(e.value) and QUICK in str(e.value)


def test_a_new_key_of_an_existing_mapping_is_allowed_and_left_to_the_problem_validation():
    doc = load_yaml(QUICK)
    check_path(doc, parse_path("engine.power_budget"))  # absent from the file, valid in the schema
    with pytest.raises(SpecError, match="did you mean 'power_budget'"):
        plan(QUICK, {"engine.power_budgt": "2W"})


def test_values_lists_and_ranges_keep_units():
    assert parse_values("25GB/s, 50GB/s,100GB/s") == ("25GB/s", "50GB/s", "100GB/s")
    assert parse_values(["25 GB/s", 3]) == ("25 GB/s", 3)
    assert parse_values("1mm^2:8mm^2:8") == tuple(f"{i} mm^2" for i in range(1, 9))
    assert parse_values("1:4:4") == (1, 2, 3, 4)
    assert parse_values("0.5:1:3") == (0.5, 0.75, 1.0)
    logs = [canonical(v) for v in parse_values("log:1GB/s:100GB/s:5")]
    assert logs == pytest.approx([1e9, 10**9.5, 1e10, 10**10.5, 1e11], rel=1e-5)
    assert logs[0] == 1e9 and logs[-1] == 1e11  # the ends are exact
    mixed = [canonical(v) for v in parse_values("512KiB:2MiB:4")]  # ends in different units of one dimension
    assert mixed == pytest.approx([512 * 1024, 1024 * 1024, 1536 * 1024, 2048 * 1024])
    assert dimension_of(parse_values("log:1GB/s:100GB/s:3")) is BYTES_PER_S
    assert dimension_of(("lifo", "fifo")) is None


@pytest.mark.parametrize("spec, fragment", [
    ("1GB/s:2GB:3", "different dimensions"), ("log:0GB/s:1GB/s:3", "positive"), ("1:2:x", "whole number"),
    ("1:2:0", "whole number"), ("1:2", "range"), ("25GB/s,,50GB/s", "empty value"),
    ("1 parsec:2 parsec:3", "unknown unit"),
])
def test_bad_values(spec, fragment):
    with pytest.raises(SpecError, match=fragment):
        parse_values(spec, where="x")


def test_param_text_and_canonical_values():
    p = parse_param("topology.dims[1].bandwidth=25GB/s,50GB/s")
    assert p.path == "topology.dims[1].bandwidth" and p.tokens[2] == 1 and len(p.values) == 2
    with pytest.raises(SpecError, match="PATH=VALUES"):
        parse_param("topology.dims[1].bandwidth")
    assert canonical("25GB/s") == canonical("25 GB/s") == canonical(25e9) == 25e9
    assert canonical("4 MiB") == 4 * 2**20 and canonical("lifo") == "lifo" and canonical("4x4x4") == "4x4x4"
    assert canonical("1.5 mm^2") == 1.5 and math.isclose(canonical("500 ns"), 5e-7)


def test_apply_edits_a_copy():
    doc = load_yaml(QUICK)
    new = apply(doc, {parse_path("topology.dims[1].bandwidth"): "50 GB/s"})
    assert new["topology"]["dims"][1]["bandwidth"] == "50 GB/s"
    assert doc["topology"]["dims"][1]["bandwidth"] == "25 GB/s"
    # two paths through one container, a key the file lacks; the original is left as it was, line numbers too
    before = copy.deepcopy(doc)
    both = apply(doc, {parse_path("topology.dims[1].bandwidth"): "9 GB/s", parse_path("topology.dims[0].latency"):
                       "1 us", parse_path("engine.power_budget"): "3 W"})
    assert doc == before and doc.key_lines == before.key_lines
    assert both["topology"]["dims"][1]["bandwidth"] == "9 GB/s" and both["topology"]["dims"][0]["latency"] == "1 us"
    assert both["engine"]["power_budget"] == "3 W" and both["workload"] is doc["workload"]
    assert both["topology"].key_lines == doc["topology"].key_lines


def test_plan_validates_every_point_before_running_and_names_the_point():
    with pytest.raises(SpecError) as e:
        plan(QUICK, {"topology.dims[1].bandwidth": "25GB/s,25GB"})
    msg = str(e.value)
    assert "topology.dims[1].bandwidth" in msg and "which is a size" in msg and "at sweep point" in msg
    with pytest.raises(SpecError, match="given twice"):
        plan(QUICK, ["engine.area_budget=2mm^2", "engine.area_budget=3mm^2"])
    with pytest.raises(SpecError, match="mode"):
        plan(QUICK, {"engine.area_budget": "2mm^2"}, mode="diagonal")


def test_grid_and_one_at_a_time_points():
    params = {"topology.dims[1].bandwidth": "25GB/s,50GB/s,100GB/s", "engine.area_budget": "2mm^2,3mm^2"}
    grid = plan(QUICK, params)
    assert len(grid.points) == 6 and len({pt.key for pt in grid.points}) == 6
    ones = plan(QUICK, params, mode="one_at_a_time")
    assert [pt.varied for pt in ones.points] == ["topology.dims[1].bandwidth"] * 3 + ["engine.area_budget"] * 2
    # a parameter not varied at a point keeps the file's value, and the point's key says so:
    # (25 GB/s, the file's 3 mm^2) is one problem whichever sweep it comes from
    assert ones.points[0].columns == {"topology.dims[1].bandwidth": 25e9, "engine.area_budget": 3.0}
    assert ones.points[0].key == grid.points[1].key
    assert ones.points[4].key == ones.points[0].key  # (file's 25 GB/s, 3 mm^2) again: the same point
    assert ones.points[2].problem.topology.dims[1].link_bandwidth == 100e9


def test_keys_follow_content_not_spelling_or_labels(tmp_path):
    a = plan(QUICK, {"topology.dims[1].bandwidth": ["25GB/s", "50 GB/s"]})
    b = plan(QUICK, {"topology.dims[1].bandwidth": [25e9, "50000 MB/s"]})
    assert [p.key for p in a.points] == [p.key for p in b.points]
    relabeled = tmp_path / "other.yaml"
    relabeled.write_text((ROOT / "problems" / "quickstart.yaml").read_text().replace("name: quickstart", "name: q2"))
    c = plan(str(relabeled), {"topology.dims[1].bandwidth": ["25GB/s"]})
    assert c.points[0].key == a.points[0].key
    p = a.points[0].problem
    assert point_key(p, time_limit=5.0) != point_key(p)            # solve options are part of the key
    assert point_key(p, extra=test_apply_edits_a_copy) != point_key(p)
    d = plan(QUICK, {"engine.endpoint_delay": ["11 ns"], "topology.dims[1].bandwidth": ["25GB/s"]})
    assert d.points[0].key != a.points[0].key                        # and so is every value of the problem


@pytest.mark.parametrize("name", ["quickstart.yaml", "llm/gpt_7b_ace_64npu.yaml", "resnet50_ace_torus3d.yaml",
                                  "libra/gpt3_3d.yaml", "astra/transformer_hybrid_ace_torus3d.yaml"])
def test_keys_are_the_digest_of_the_problem_as_dataclasses_asdict_writes_it(name):
    """The key walks the problem itself rather than through ``dataclasses.asdict`` (a deep copy), and must give
    the digests that files written before keep (a results file resumes by them)."""
    import dataclasses
    import hashlib
    import json

    from codesign.problem.load import load_problem
    p = load_problem(ROOT / "problems" / name)
    d = dataclasses.asdict(p)
    for k in ("name", "description", "path"):
        d.pop(k, None)
    d["workload"].pop("source", None)
    d["workload"].pop("name", None)
    for limit in (None, 5.0):
        text = json.dumps([d, {"time_limit": limit, "extra": None, "checks": []}], sort_keys=True, default=repr)
        assert point_key(p, time_limit=limit) == hashlib.sha256(text.encode()).hexdigest()[:20]
