"""Bad input never shows a traceback: one message naming the file, the key path and the expectation, exit 2.

Each case starts from a valid minimal problem (the ``doc`` fixture), changes one thing, writes it to
tmp_path, and checks both ``codesign.load_problem`` (the SpecError's file, path, line and text) and
``codesign validate`` in-process (status 2, exactly one stderr line ``codesign: error: ...``).
"""
from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import codesign
from codesign import SpecError, load_problem
from codesign.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"

MINIMAL: dict[str, Any] = {  # small on purpose: PyYAML's pure-Python composer dominates this file's runtime
    "name": "mini",
    "workload": {
        "name": "two-layer",
        "parallelism": "data",
        "layers": [
            {"name": "fc1", "forward": "10 us", "input_grad": "10 us", "weight_grad": "10 us",
             "weight_grad_comm": {"collective": "all_reduce", "bytes": "4 MiB"}},
            {"name": "fc2", "forward": "10 us",
             "weight_grad_comm": {"collective": "all_reduce", "bytes": "2 MiB", "dims": [0, 1]}},
        ],
    },
    "topology": {"dims": [
        {"name": "local", "kind": "ring", "size": 4, "bandwidth": "100 GB/s"},
        {"name": "global", "kind": "ring", "size": 4, "bandwidth": "25 GB/s"},
    ]},
    "npu": {"compute": "120 TFLOP/s", "hbm_bandwidth": "900 GB/s", "cores": 16},
    "engine": {
        "type": "ace", "area_budget": "3 mm^2",
        "sram": [{"size": "512 KiB", "area": "0.25 mm^2"}, {"size": "2 MiB", "area": "0.9 mm^2"}],
        "alu": [{"rate": "100 GB/s", "area": "0.3 mm^2"}, {"rate": "400 GB/s", "area": "1.2 mm^2"}],
        "dma": [{"bandwidth": "100 GB/s", "area": "0.2 mm^2"}, {"bandwidth": "400 GB/s", "area": "0.8 mm^2"}],
    },
    "objective": {"minimize": "iteration_time"},
    "schedule": {"chunks": 2},
}

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when present: keeps the file fast
ASTRA_LINE = "conv{i} -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\n"


# ------------------------------------------------------------------ helpers

@pytest.fixture
def doc() -> dict[str, Any]:
    """A fresh, valid minimal problem as a plain dict (mutate it, then ``write`` it)."""
    return copy.deepcopy(MINIMAL)


def write(tmp_path: Path, d: Any, name: str = "problem.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.dump(d, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True))
    return p


def line_of(path: Path, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line of ``path`` that contains ``needle``."""
    hits = [i + 1 for i, ln in enumerate(path.read_text().splitlines()) if needle in ln]
    assert len(hits) >= nth, f"{needle!r} not in {path}"
    return hits[nth - 1]


def expect_error(path: Path, capsys: pytest.CaptureFixture, *, key: str | None, phrase: str,
                 line: int | None = None, file: str | None = None, argv: list[str] | None = None,
                 key_prefix: bool = False) -> SpecError:
    """load_problem raises SpecError(file, key, phrase[, line]); the CLI prints one line and returns 2.

    ``line=None`` leaves the line unchecked; ``key_prefix`` accepts a deeper key path below ``key``.
    """
    file = str(path) if file is None else file
    with pytest.raises(SpecError) as ei:
        load_problem(path)
    e = ei.value
    msg = str(e)
    assert e.file == file
    if line is None:
        assert re.match(re.escape(file) + r"(:\d+)?: ", msg), msg
    else:
        assert msg.startswith(f"{file}:{line}: "), msg
        assert e.line == line, msg
    if key_prefix:
        assert e.path is not None and e.path.startswith(key), msg
    else:
        assert e.path == key, msg
    if e.path is not None:
        assert f": {e.path}: " in msg, msg
    assert phrase in e.detail, msg
    assert "\n" not in msg

    rc = main(argv or ["validate", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0] == f"codesign: error: {msg}"
    assert out == ""
    return e


def dim(d: dict, i: int) -> dict:
    return d["topology"]["dims"][i]


def layer(d: dict, i: int) -> dict:
    return d["workload"]["layers"][i]


# ------------------------------------------------------------------ the valid starting point and shipped problems

def test_minimal_problem_is_valid(tmp_path, doc, capsys):
    path = write(tmp_path, doc)
    p = load_problem(path)
    assert p.name == "mini" and len(p.workload.layers) == 2 and p.topology.npus == 16
    assert p.topology.dims[1].link_bandwidth == 25e9
    assert p.workload.layers[1].weight_grad_comm.dims == (0, 1)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith(f"{path}: valid.")


@pytest.mark.parametrize("name", ["quickstart.yaml", "resnet50_ace_torus3d.yaml"])
def test_shipped_problems_validate(name, capsys):
    path = PROBLEMS / name
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith(f"{path}: valid.")


def test_quickstart_loads_expected_values():
    p = load_problem(PROBLEMS / "quickstart.yaml")
    assert p.name == "quickstart"
    assert [la.name for la in p.workload.layers] == ["fc1", "fc2", "fc3", "fc4"]
    assert p.workload.parallelism == "data"
    assert p.workload.layers[0].forward.time_s == pytest.approx(40e-6)
    assert p.workload.layers[0].weight_grad_comm.bytes == 8 * 2**20
    assert p.topology.shape == "4x4" and p.topology.npus == 16
    assert [d.link_bandwidth for d in p.topology.dims] == [100e9, 25e9]
    assert p.topology.dims[0].latency == pytest.approx(500e-9)
    assert p.npu.compute_flops == 120e12 and p.npu.hbm_bandwidth == 900e9 and p.npu.cores == 80
    assert p.engine.kind == "ace" and p.engine.area_budget_mm2 == 3.0
    assert p.engine.options("sram")[0].value == 512 * 2**10  # KiB is binary
    assert p.engine.options("dma")[0].value == 100e9           # GB/s is decimal
    assert p.engine.endpoint_delay_s == pytest.approx(10e-9)
    assert p.schedule.order == "lifo" and p.solver.profile == "default"


def test_resnet_problem_loads_expected_values():
    p = load_problem(PROBLEMS / "resnet50_ace_torus3d.yaml")
    assert p.name == "resnet50-ace-4x4x4"
    assert len(p.workload.layers) == 54
    assert p.workload.layers[0].name == "conv1"
    assert p.workload.layers[0].forward.time_s == pytest.approx(13003e-9)  # 1 GHz cycles
    assert p.workload.layers[0].weight_grad_comm.collective == "all_reduce"
    assert p.workload.layers[0].weight_grad_comm.bytes == 37632
    assert len(p.topology.dims) == 3 and p.topology.npus == 64 and p.topology.shape == "4x4x4"
    assert p.topology.dims[0].link_bandwidth == 32 * 2**30
    assert [d.link_bandwidth for d in p.topology.dims[1:]] == [16 * 2**30, 16 * 2**30]
    assert all(d.links == 2 and d.latency == pytest.approx(1e-9) for d in p.topology.dims)
    assert p.npu.compute_flops == 125e12 and p.npu.compute_hbm_utilization == 0.5
    # the engine's catalog is calibration that others tune; only its shape is pinned here
    assert p.engine.kind == "ace" and set(p.engine.resources) == {"sram", "alu", "dma"}
    assert all(len(opts) >= 2 for opts in p.engine.resources.values())


# ------------------------------------------------------------------ file-level problems

def test_missing_file(tmp_path, capsys):
    path = tmp_path / "nope.yaml"
    expect_error(path, capsys, key=None, phrase="file not found")


def test_directory_instead_of_file(tmp_path, capsys):
    path = tmp_path / "adir.yaml"
    path.mkdir()
    expect_error(path, capsys, key=None, phrase="is a directory, expected a YAML problem file")


def test_not_utf8(tmp_path, capsys):
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    expect_error(path, capsys, key=None, phrase="cannot read: not UTF-8 text (byte 7)")


@pytest.mark.parametrize("text,line,phrase", [
    ("name: x\nworkload:\n  name: a: b\n", 3, "malformed YAML: mapping values are not allowed here"),
    ("name: x\nworkload:\n  layers: [a, b\ntopology: {}\n", 4, "malformed YAML: expected ',' or ']'"),
    ("name: x\nworkload:\n\tlayers: 1\n", 3, "malformed YAML: found character '\\t' that cannot start any token"),
    ("name: x\ndescription: 'abc\n", 3, "malformed YAML: found unexpected end of stream"),
    ("name: x\nx: !!python/object:os.system {}\n", 2, "malformed YAML: could not determine a constructor"),
    ("name: x\ndescription: a\nname: y\n", 3, "duplicate key 'name'"),
], ids=["mapping-value", "flow-seq", "tab", "quote", "python-tag", "duplicate-key"])
def test_malformed_yaml_names_its_line(tmp_path, capsys, text, line, phrase):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    expect_error(path, capsys, key=None, phrase=phrase, line=line)


def test_unhashable_yaml_key(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nfoo: {[1, 2]: 3}\n")
    expect_error(path, capsys, key=None, phrase="", line=2)


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_file(tmp_path, capsys, text):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    expect_error(path, capsys, key="(top level)", phrase="the file is empty; expected the sections workload")


def test_top_level_not_a_mapping(tmp_path, capsys):
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    expect_error(path, capsys, key="(top level)", phrase="expected a mapping with keys name, description, workload",
                 line=None)


# ------------------------------------------------------------------ unknown keys

def test_unknown_key_suggests_nearest(tmp_path, doc, capsys):
    dim(doc, 1)["bandwith"] = dim(doc, 1).pop("bandwidth")
    path = write(tmp_path, doc)
    e = expect_error(path, capsys, key="topology.dims[1].bandwith",
                     phrase="unknown key 'bandwith'; did you mean 'bandwidth'?", line=line_of(path, "bandwith:"))
    assert e.detail == "unknown key 'bandwith'; did you mean 'bandwidth'?"


@pytest.mark.parametrize("where,bad,good,key", [
    (lambda d: d, "topolgy", "topology", "topolgy"),
    (lambda d: d["engine"], "are_budget", "area_budget", "engine.are_budget"),
    (lambda d: d["npu"], "hbm_bandwith", "hbm_bandwidth", "npu.hbm_bandwith"),
    (lambda d: layer(d, 0), "weight_grad_com", "weight_grad_comm", "workload.layers[0].weight_grad_com"),
    (lambda d: d["engine"]["sram"][1], "sise", "size", "engine.sram[1].sise"),
    (lambda d: d["schedule"], "chunk", "chunks", "schedule.chunk"),
], ids=["top", "engine", "npu", "layer", "option", "schedule"])
def test_unknown_key_everywhere(tmp_path, doc, capsys, where, bad, good, key):
    m = where(doc)
    m[bad] = m.pop(good)
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase=f"unknown key {bad!r}; did you mean {good!r}?",
                 line=line_of(path, f"{bad}:"))


def test_unknown_key_without_a_near_one_lists_valid_keys(tmp_path, doc, capsys):
    doc["npu"]["zzz"] = 1
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="npu.zzz", line=line_of(path, "zzz:"),
                 phrase="unknown key 'zzz'; valid keys: compute, hbm_bandwidth, cores, core_reduce_rate, "
                        "compute_hbm_utilization, profile, hbm_capacity, compute_model")


# ------------------------------------------------------------------ missing required keys

@pytest.mark.parametrize("drop,key,phrase,needle", [
    (lambda d: dim(d, 1).pop("bandwidth"), "topology.dims[1].bandwidth", "missing required key 'bandwidth'",
     "name: global"),
    (lambda d: dim(d, 0).pop("size"), "topology.dims[0].size", "missing required key 'size'", "name: local"),
    (lambda d: d.pop("engine"), "engine", "missing required key 'engine'", "name: mini"),
    (lambda d: d.pop("topology"), "topology", "missing required key 'topology'", "name: mini"),
    (lambda d: layer(d, 1).pop("name"), "workload.layers[1].name", "missing required key 'name'", "- forward: 10 us"),
    (lambda d: layer(d, 0)["weight_grad_comm"].pop("bytes"), "workload.layers[0].weight_grad_comm.bytes",
     "missing required key 'bytes'", "collective: all_reduce"),
    (lambda d: d["engine"].pop("dma"), "engine.dma", "missing required key 'dma'", "type: ace"),
    (lambda d: d["engine"]["alu"][0].pop("rate"), "engine.alu[0].rate", "missing required key 'rate'",
     "area: 0.3 mm^2"),
    (lambda d: d["engine"].pop("type"), "engine.type", "missing required key; expected one of baseline, ace, ideal",
     "area_budget:"),
], ids=["dim-bandwidth", "dim-size", "engine", "topology", "layer-name", "comm-bytes", "dma", "option-rate",
        "engine-type"])
def test_missing_required_key(tmp_path, doc, capsys, drop, key, phrase, needle):
    drop(doc)
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase=phrase, line=line_of(path, needle))


def test_workload_without_layers_or_astra(tmp_path, doc, capsys):
    del doc["workload"]["layers"]
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload", phrase="expected either 'astra: <file>' or 'layers: [...]'",
                 line=line_of(path, "name: two-layer"))


# ------------------------------------------------------------------ wrong types

@pytest.mark.parametrize("change,key,phrase,needle", [
    (lambda d: dim(d, 0).update(size="four"), "topology.dims[0].size",
     "expected a whole number, got the text 'four'", "size: four"),
    (lambda d: dim(d, 0).update(size=4.5), "topology.dims[0].size", "expected a whole number, got 4.5", "size: 4.5"),
    (lambda d: dim(d, 1).update(links=True), "topology.dims[1].links", "expected a whole number, got the boolean True",
     "links: true"),
    (lambda d: d["npu"].update(cores="many"), "npu.cores", "expected a whole number, got the text 'many'",
     "cores: many"),
    (lambda d: dim(d, 0).update(kind="torus"), "topology.dims[0].kind",
     "expected one of ring, fully_connected, switch, got the text 'torus'", "kind: torus"),
    (lambda d: layer(d, 0)["weight_grad_comm"].update(collective="allreduce"),
     "workload.layers[0].weight_grad_comm.collective",
     "expected one of all_reduce, reduce_scatter, all_gather, all_to_all, got the text 'allreduce'; "
     "did you mean 'all_reduce'?", "collective: allreduce"),
    (lambda d: d["workload"].update(layers="fc1"), "workload.layers", "expected a list, got the text 'fc1'",
     "layers: fc1"),
    (lambda d: layer(d, 1).update(name=7), "workload.layers[1].name", "expected text, got the number 7", "name: 7"),
    (lambda d: dim(d, 1).update(bandwidth=True), "topology.dims[1].bandwidth",
     'expected a bandwidth such as "25 GB/s", got a boolean', "bandwidth: true"),
    (lambda d: d["schedule"].update(order="random"), "schedule.order",
     "expected one of lifo, fifo, optimize, got the text",
     "order: random"),
    (lambda d: d["workload"].update(parallelism="dataa"), "workload.parallelism", "did you mean 'data'?",
     "parallelism: dataa"),
    (lambda d: layer(d, 0)["weight_grad_comm"].update(dims="some"), "workload.layers[0].weight_grad_comm.dims",
     "expected 'all' or a non-empty list of dimension indices, got the text 'some'", "dims: some"),
    (lambda d: d.update(solver={"gap": "small"}), "solver.gap",
     "expected a number, got the text 'small'", "gap: small"),
    (lambda d: d["objective"].update(minimize="latency"), "objective.minimize",
     "expected one of iteration_time, area, power", "minimize: latency"),
], ids=["size-text", "size-fraction", "links-bool", "cores-text", "kind", "collective", "layers-text", "name-number",
        "bandwidth-bool", "order", "parallelism", "comm-dims", "gap", "minimize"])
def test_wrong_type(tmp_path, doc, capsys, change, key, phrase, needle):
    change(doc)
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase=phrase, line=line_of(path, needle))


@pytest.mark.parametrize("section,value,key,phrase", [
    ("topology", 5, "topology",
     "expected a mapping with keys dims, cost_budget, cost_unit, tolerance, got the number 5"),
    ("npu", [1], "npu", "expected a mapping with keys compute, hbm_bandwidth"),
    ("schedule", "lifo", "schedule", "expected a mapping with keys order, chunks, overlap, got the text 'lifo'"),
    ("engine", "ace", "engine", "expected a mapping with 'type: baseline | ace | ideal', got the text 'ace'"),
])
def test_section_of_wrong_type(tmp_path, doc, capsys, section, value, key, phrase):
    doc[section] = value
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase=phrase, line=None)


def test_section_of_wrong_type_has_its_line(tmp_path, doc, capsys):
    doc["topology"] = 5
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="topology", phrase="expected a mapping", line=line_of(path, "topology: 5"))


def test_presolve_must_be_a_boolean(tmp_path, doc, capsys):
    doc["solver"] = {"presolve": "no"}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="solver.presolve", phrase="expected", line=line_of(path, "presolve:"))


@pytest.mark.parametrize("value,phrase", [(["25 GB", "50 GB/s"], 'expected a bandwidth such as "25 GB/s"'),
                                          ({"a": 1}, "unknown key 'a'")], ids=["list", "mapping"])
def test_unit_value_of_container_type_reads_well(tmp_path, doc, capsys, value, phrase):
    # a list (options) and a mapping (a range) are bandwidths' own forms; what is in them is checked
    dim(doc, 1)["bandwidth"] = value
    path = write(tmp_path, doc)
    e = expect_error(path, capsys, key="topology.dims[1].bandwidth", phrase=phrase, key_prefix=True)
    assert "YList" not in e.detail and "YMap" not in e.detail


# ------------------------------------------------------------------ units that do not parse or have the wrong dimension

@pytest.mark.parametrize("change,key,phrase,needle", [
    (lambda d: dim(d, 1).update(bandwidth="25 GB"), "topology.dims[1].bandwidth",
     "expected a bandwidth such as \"25 GB/s\", got '25 GB', which is a size (bytes)", "bandwidth: 25 GB"),
    (lambda d: dim(d, 0).update(latency="5 GB/s"), "topology.dims[0].latency",
     "expected a time such as \"500 ns\", got '5 GB/s', which is a bandwidth (B/s)", "latency: 5 GB/s"),
    (lambda d: d["engine"]["sram"][1].update(size="4 MiB/s"), "engine.sram[1].size",
     "expected a size such as \"4 MiB\", got '4 MiB/s', which is a bandwidth (B/s)", "size: 4 MiB/s"),
    (lambda d: d["npu"].update(compute="120 TFLOP"), "npu.compute",
     "expected a compute rate such as \"120 TFLOP/s\", got '120 TFLOP', which is an amount of compute (FLOP)",
     "compute: 120 TFLOP"),
    (lambda d: layer(d, 0).update(forward="10 GB"), "workload.layers[0].forward",
     "expected a time such as \"500 ns\", got '10 GB', which is a size (bytes) (or a mapping with flops and bytes)",
     "forward: 10 GB"),
    (lambda d: layer(d, 1)["weight_grad_comm"].update(bytes="2 ms"), "workload.layers[1].weight_grad_comm.bytes",
     "which is a time (s)", "bytes: 2 ms"),
    (lambda d: d["engine"].update(area_budget="3 W"), "engine.area_budget",
     "expected an area such as \"1.5 mm^2\", got '3 W', which is a power (W)", "area_budget: 3 W"),
    (lambda d: d["engine"]["dma"][0].update(area="0.2 W"), "engine.dma[0].area", "which is a power (W)",
     "area: 0.2 W"),
    (lambda d: dim(d, 1).update(bandwidth="fast"), "topology.dims[1].bandwidth",
     "expected a bandwidth such as \"25 GB/s\", got 'fast'", "bandwidth: fast"),
    (lambda d: dim(d, 1).update(bandwidth="25 gb/s"), "topology.dims[1].bandwidth",
     "unknown unit 'gb/s' in '25 gb/s'; expected a bandwidth", "bandwidth: 25 gb/s"),
    (lambda d: d["engine"].update(endpoint_delay="10 nanoseconds"), "engine.endpoint_delay",
     "unknown unit 'nanoseconds'", "endpoint_delay:"),
    (lambda d: dim(d, 0).update(bandwidth=math.inf), "topology.dims[0].bandwidth", "finite", "bandwidth: .inf"),
], ids=["bw-as-size", "latency-as-bw", "sram-as-bw", "compute-as-flop", "forward-as-size", "comm-bytes-as-time",
        "area-as-power", "option-area", "garbage", "unknown-unit", "unknown-time-unit", "inf"])
def test_bad_unit(tmp_path, doc, capsys, change, key, phrase, needle):
    change(doc)
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase=phrase, line=line_of(path, needle))


def test_overflowing_unit_string_is_rejected(tmp_path, doc, capsys):
    dim(doc, 1)["bandwidth"] = "1e400 GB/s"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="topology.dims[1].bandwidth", phrase="finite",
                 line=line_of(path, "bandwidth: 1e400"))


# ------------------------------------------------------------------ zero / negative sizes, bandwidths, counts

@pytest.mark.parametrize("change,key,phrase,needle", [
    (lambda d: dim(d, 1).update(bandwidth=0), "topology.dims[1].bandwidth", "expected a bandwidth > 0, got 0",
     "bandwidth: 0"),
    (lambda d: dim(d, 1).update(bandwidth="-25 GB/s"), "topology.dims[1].bandwidth",
     "expected a bandwidth > 0, got '-25 GB/s'", "bandwidth: -25"),
    (lambda d: dim(d, 0).update(latency="-1 ns"), "topology.dims[0].latency", "expected a time >= 0, got '-1 ns'",
     "latency: -1 ns"),
    (lambda d: layer(d, 0)["weight_grad_comm"].update(bytes="0 MiB"), "workload.layers[0].weight_grad_comm.bytes",
     "expected a size > 0, got '0 MiB'", "bytes: 0 MiB"),
    (lambda d: layer(d, 0).update(forward="-10 us"), "workload.layers[0].forward", "expected a time >= 0",
     "forward: -10 us"),
    (lambda d: dim(d, 0).update(size=-2), "topology.dims[0].size", "expected a whole number >= 0, got -2",
     "size: -2"),
    (lambda d: dim(d, 1).update(links=0), "topology.dims[1].links", "expected a whole number >= 1, got 0", "links: 0"),
    (lambda d: d["npu"].update(cores=0), "npu.cores", "expected a whole number >= 1, got 0", "cores: 0"),
    (lambda d: d["npu"].update(hbm_bandwidth="0 GB/s"), "npu.hbm_bandwidth", "expected a bandwidth > 0",
     "hbm_bandwidth: 0"),
    (lambda d: d["npu"].update(compute=-1), "npu.compute", "expected a compute rate > 0, got -1", "compute: -1"),
    (lambda d: d["engine"]["sram"][0].update(size="0 KiB"), "engine.sram[0].size", "expected a size > 0",
     "size: 0 KiB"),
    (lambda d: d["engine"]["alu"][1].update(rate="-400 GB/s"), "engine.alu[1].rate", "expected a bandwidth > 0",
     "rate: -400"),
    (lambda d: d["engine"].update(area_budget="0 mm^2"), "engine.area_budget", "expected an area > 0",
     "area_budget: 0"),
    (lambda d: d["engine"]["sram"][0].update(area="-1 mm^2"), "engine.sram[0].area", "expected an area >= 0",
     "area: -1 mm^2"),
    (lambda d: d["schedule"].update(chunks=0), "schedule.chunks", "expected a whole number >= 1, got 0", "chunks: 0"),
    (lambda d: d["objective"].update(iteration_time_target="0 ms"), "objective.iteration_time_target",
     "expected a time > 0", "iteration_time_target:"),
    (lambda d: d.update(solver={"time_limit": "0 s"}), "solver.time_limit", "expected a time > 0", "time_limit:"),
    (lambda d: d.update(solver={"threads": 0}), "solver.threads", "expected a whole number >= 1, got 0", "threads:"),
], ids=["bw-zero", "bw-negative", "latency-negative", "comm-bytes-zero", "compute-negative", "size-negative",
        "links-zero", "cores-zero", "hbm-zero", "flops-negative", "sram-zero", "alu-negative", "budget-zero",
        "area-negative", "chunks-zero", "target-zero", "time-limit-zero", "threads-zero"])
def test_zero_or_negative(tmp_path, doc, capsys, change, key, phrase, needle):
    change(doc)
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase=phrase, line=line_of(path, needle))


@pytest.mark.parametrize("size", [1, 0])
def test_dimension_without_peers(tmp_path, doc, capsys, size):
    dim(doc, 1)["size"] = size
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="topology.dims[1].size",
                 phrase=f"a dimension needs at least 2 NPUs for its collectives to have peers, got {size}",
                 line=line_of(path, f"size: {size}"))


def test_halving_doubling_needs_power_of_two(tmp_path, doc, capsys):
    dim(doc, 0).update(size=6, algorithm="halving_doubling")
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="topology.dims[0].algorithm",
                 phrase="halving_doubling needs a power-of-two size, got 6", line=line_of(path, "algorithm:"))


# ------------------------------------------------------------------ empty design space / empty lists

@pytest.mark.parametrize("resource,example", [("sram", "size"), ("alu", "rate"), ("dma", "bandwidth")])
def test_empty_design_space(tmp_path, doc, capsys, resource, example):
    doc["engine"][resource] = []
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=f"engine.{resource}",
                 phrase="empty design space: list at least one option "
                        f"(e.g. {{{example}: ..., area: ..., power: ...}})",
                 line=line_of(path, f"{resource}: []"))


@pytest.mark.parametrize("change,key,needle", [
    (lambda d: d["topology"].update(dims=[]), "topology.dims", "dims: []"),
    (lambda d: d["workload"].update(layers=[]), "workload.layers", "layers: []"),
])
def test_empty_lists(tmp_path, doc, capsys, change, key, needle):
    change(doc)
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=key, phrase="expected a non-empty list", line=line_of(path, needle))


# ------------------------------------------------------------------ specific checks from the issue

def test_engine_type_typo(tmp_path, doc, capsys):
    doc["engine"]["type"] = "acee"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="engine.type",
                 phrase="expected one of baseline, ace, ideal, got the text 'acee'; did you mean 'ace'?",
                 line=line_of(path, "type: acee"))


def test_engine_key_of_another_engine_type(tmp_path, doc, capsys):
    doc["engine"]["type"] = "ideal"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="engine.sram", phrase="unknown key 'sram'; valid keys: type, endpoint_delay",
                 line=line_of(path, "sram:"))


@pytest.mark.parametrize("what", ["area", "power"])
def test_objective_without_target(tmp_path, doc, capsys, what):
    doc["objective"] = {"minimize": what}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="objective.iteration_time_target",
                 phrase=f"minimizing {what} needs an iteration-time target (e.g. '2 ms')",
                 line=line_of(path, f"minimize: {what}"))


def test_a_target_while_minimizing_iteration_time_is_said_and_dropped(tmp_path, doc, capsys):
    """The search minimizes the time and would ignore the target without a word: the file is told, one warning line,
    and the problem goes on without the target (a sweep over objective.minimize keeps working)."""
    from codesign.cli import main
    doc["objective"] = {"minimize": "iteration_time", "iteration_time_target": "300 us"}
    path = write(tmp_path, doc)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"codesign: warning: {path}:{line_of(path, 'iteration_time_target:')}: "
                   "objective.iteration_time_target: ignored: minimizing iteration time takes no target (a target "
                   "goes with minimize: area, power or network_cost)"]
    from codesign.problem.load import load_problem
    with pytest.warns(Warning):
        assert load_problem(str(path)).objective.iteration_time_target_s is None


def test_dma_not_below_hbm(tmp_path, doc, capsys):
    doc["engine"]["dma"].append({"bandwidth": "1 TB/s", "area": "2 mm^2"})
    path = write(tmp_path, doc)
    # the line and the leaf of the path are pinned by the next test
    expect_error(path, capsys, key="engine.dma[2]", key_prefix=True,
                 phrase="DMA bandwidth 1 TB/s must be below the NPU's HBM bandwidth 900 GB/s")


def test_dma_equal_to_hbm_single_value(tmp_path, doc, capsys):
    doc["engine"]["dma"] = "900 GB/s"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="engine.dma",
                 phrase="DMA bandwidth 900 GB/s must be below the NPU's HBM bandwidth 900 GB/s",
                 line=line_of(path, "dma: 900 GB/s"))


def test_dma_not_below_hbm_points_at_the_option(tmp_path, doc, capsys):
    doc["engine"]["dma"].append({"bandwidth": "1 TB/s", "area": "2 mm^2"})
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="engine.dma[2].bandwidth", phrase="must be below the NPU's HBM bandwidth",
                 line=line_of(path, "bandwidth: 1 TB/s"))


def test_dma_single_option_list_path(tmp_path, doc, capsys):
    doc["engine"]["dma"] = [{"bandwidth": "1 TB/s", "area": "2 mm^2"}]
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="engine.dma[0].bandwidth", phrase="must be below the NPU's HBM bandwidth",
                 line=line_of(path, "bandwidth: 1 TB/s"))


def test_duplicate_layer_names(tmp_path, doc, capsys):
    layer(doc, 1)["name"] = "fc1"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.layers[1].name", phrase="layer name 'fc1' is used twice",
                 line=line_of(path, "name: fc1", 2))


@pytest.mark.parametrize("dims,index,bad,phrase", [
    ([0, 2], 1, 2, "expected a whole number <= 1, got 2"),
    ([-1], 0, -1, "expected a whole number >= 0, got -1"),
    ([0.5], 0, 0.5, "expected a whole number, got 0.5"),
])
def test_comm_dims_out_of_range(tmp_path, doc, capsys, dims, index, bad, phrase):
    layer(doc, 1)["weight_grad_comm"]["dims"] = dims
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=f"workload.layers[1].weight_grad_comm.dims[{index}]", phrase=phrase,
                 line=line_of(path, f"- {bad}"))


def test_comm_dims_listed_twice(tmp_path, doc, capsys):
    layer(doc, 1)["weight_grad_comm"]["dims"] = [1, 1]
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.layers[1].weight_grad_comm.dims", phrase="a dimension is listed twice",
                 line=line_of(path, "dims:"))


def test_compute_time_and_flops_together(tmp_path, doc, capsys):
    layer(doc, 0)["forward"] = {"time": "1 us", "flops": "1 GFLOP"}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.layers[0].forward",
                 phrase="give either time, or flops and bytes, not both",
                 line=line_of(path, "time: 1 us"))


def test_hybrid_dlrm_yaml_without_last_bottom_layer(tmp_path, doc, capsys):
    doc["workload"]["parallelism"] = "hybrid_dlrm"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.last_bottom_layer",
                 phrase="hybrid_dlrm needs the 0-based index of the last bottom-MLP layer",
                 line=line_of(path, "name: two-layer"))


def test_unknown_solver_profile(tmp_path, doc, capsys):
    doc["solver"] = {"profile": "fastest"}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="solver.profile",
                 phrase="unknown profile 'fastest'; expected default, exact, fast or a YAML path (or "
                 "solvers/fastest.yaml beside the problem",
                 line=line_of(path, "profile: fastest"))


def test_bad_value_in_a_solver_profile_names_the_profile_file(tmp_path, doc, capsys):
    (tmp_path / "solvers").mkdir()
    prof = tmp_path / "solvers" / "mine.yaml"
    prof.write_text("description: mine\ntime_limit: 10 GB\n")
    doc["solver"] = {"profile": "mine"}
    path = write(tmp_path, doc)
    expect_error(path, capsys, file=str(prof), key="time_limit", line=2,
                 phrase="expected a time such as \"500 ns\", got '10 GB', which is a size (bytes)")


# ------------------------------------------------------------------ ASTRA-sim workload files

def astra_problem(tmp_path: Path, doc: dict, text: str, name: str = "wl.txt") -> tuple[Path, str]:
    wl = tmp_path / name
    wl.write_text(text)
    doc["workload"] = {"astra": name, "clock": "1 GHz"}
    return write(tmp_path, doc), str(tmp_path.resolve() / name)


def test_astra_workload_loads(tmp_path, doc, capsys):
    path, _ = astra_problem(tmp_path, doc, "DATA\n2\n" + ASTRA_LINE.format(i=1) + ASTRA_LINE.format(i=2))
    p = load_problem(path)
    assert [la.name for la in p.workload.layers] == ["conv1", "conv2"]
    assert p.workload.layers[0].weight_grad_comm.bytes == 1048576
    assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize("text,line,phrase", [
    ("DATA\n2\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\nconv2 -1 5 NONE 0 5 NONE 0 5 ALLRDUCE 1024 5\n", 4,
     "layer conv2 weight-grad comm type: unknown communication type 'ALLRDUCE'; expected one of NONE, ALLREDUCE"),
    ("DATA\n2\n" + ASTRA_LINE.format(i=1) + "conv2 -1 5 NONE\n", 4, "layer line has 4 fields; expected 12"),
    ("DATA\n1\nconv1 -1 five NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\n", 3,
     "layer conv1 forward compute: expected a number, got 'five'"),
    ("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE -8 5\n", 3,
     "layer conv1 weight-grad comm bytes: expected a whole number >= 0, got '-8'"),
    ("DATA\ntwo\n" + ASTRA_LINE.format(i=1), 2, "layer count: expected a number, got 'two'"),
    ("DATA\n3\n" + ASTRA_LINE.format(i=1), 2, "the layer count says 3 layers but the file has 1 layer lines"),
    ("BOGUS\n1\n" + ASTRA_LINE.format(i=1), 1, "unknown parallelism 'BOGUS'; expected one of DATA, MODEL"),
    ("", 1, "empty workload file; expected the parallelism on line 1"),
    ("DATA\n", 2, "missing the layer count on line 2"),
    ("HYBRID_DLRM\n2\n" + ASTRA_LINE.format(i=1) + ASTRA_LINE.format(i=2), 1,
     "HYBRID_DLRM needs the index of the last bottom-MLP layer after it (e.g. 'HYBRID_DLRM 4')"),
    ("HYBRID_DLRM x\n2\n" + ASTRA_LINE.format(i=1) + ASTRA_LINE.format(i=2), 1,
     "HYBRID_DLRM last bottom layer: expected a number, got 'x'"),
    ("HYBRID_DLRM 4\n2\n" + ASTRA_LINE.format(i=1) + ASTRA_LINE.format(i=2), 1,
     "HYBRID_DLRM 4: the top MLP would start at layer 6 but the file has 2 layers"),
    ("HYBRID_TRANSFORMER\n1\n" + ASTRA_LINE.format(i=1), 1,
     "HYBRID_TRANSFORMER needs 'model_parallel_NPU_group: G' on line 1"),
], ids=["comm-type", "few-fields", "compute-text", "bytes-negative", "count-text", "count-mismatch", "parallelism",
        "empty", "no-count", "dlrm-no-arg", "dlrm-bad-arg", "dlrm-too-few-layers", "transformer-no-group"])
def test_astra_workload_error_names_its_file_and_line(tmp_path, doc, capsys, text, line, phrase):
    path, wl = astra_problem(tmp_path, doc, text)
    e = expect_error(path, capsys, file=wl, key=None, phrase=phrase, line=line)
    assert str(e).startswith(f"{wl}:{line}: ")


def test_astra_workload_file_missing(tmp_path, doc, capsys):
    doc["workload"] = {"astra": "missing.txt"}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.astra", phrase="workload file 'missing.txt' not found (looked in",
                 line=line_of(path, "astra:"))


def test_astra_with_layers_is_rejected(tmp_path, doc, capsys):
    (tmp_path / "wl.txt").write_text("DATA\n1\n" + ASTRA_LINE.format(i=1))
    doc["workload"]["astra"] = "wl.txt"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.parallelism", phrase="not allowed with 'astra'",
                 line=line_of(path, "parallelism:"))


@pytest.mark.parametrize("tok", ["nan", "inf", "1e400"])
def test_astra_non_finite_field(tmp_path, doc, capsys, tok):
    path, wl = astra_problem(tmp_path, doc, "DATA\n1\n" + ASTRA_LINE.format(i=1).replace("1048576", tok))
    expect_error(path, capsys, file=wl, key=None, phrase="layer conv1 weight-grad comm bytes", line=3)


def test_astra_dlrm_error_line_after_blank_lines(tmp_path, doc, capsys):
    path, wl = astra_problem(tmp_path, doc, "\n\nHYBRID_DLRM\n2\n" + ASTRA_LINE.format(i=1) + ASTRA_LINE.format(i=2))
    expect_error(path, capsys, file=wl, key=None, phrase="HYBRID_DLRM needs the index", line=3)


# ------------------------------------------------------------------ the CLI

@pytest.mark.parametrize("limit", ["0", "-1"])
def test_solve_with_non_positive_time_limit(tmp_path, doc, capsys, limit):
    path = write(tmp_path, doc)
    rc = main(["solve", str(path), "--time-limit", limit])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err == "codesign: error: --time-limit must be a positive number of seconds\n"


def test_solve_with_nan_time_limit(tmp_path, doc, capsys, monkeypatch):
    def no_solve(*args, **kwargs):  # keep the test fast: reaching the solver is already the failure
        raise AssertionError("the solve started with --time-limit nan")
    monkeypatch.setattr("codesign.pipeline.solve.solve", no_solve)
    path = write(tmp_path, doc)
    rc = main(["solve", str(path), "--time-limit", "nan"])
    out, err = capsys.readouterr()
    assert rc == 2 and err.startswith("codesign: error: --time-limit")


def test_solve_reports_spec_errors_like_validate(tmp_path, doc, capsys):
    dim(doc, 1)["bandwidth"] = "25 GB"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="topology.dims[1].bandwidth", phrase="which is a size (bytes)",
                 line=line_of(path, "bandwidth: 25 GB"), argv=["solve", str(path)])


def test_spec_error_exit_status_is_2():
    assert SpecError("x").exit_status == 2 and issubclass(SpecError, codesign.CodesignError)
    e = SpecError("expected a size", file="f.yaml", path="a.b[1]", line=7)
    assert str(e) == "f.yaml:7: a.b[1]: expected a size"
    assert str(SpecError("m", path="k")) == "k: m" and str(SpecError("m", file="f")) == "f: m"


def test_engine_type_typo_is_pointed_at(tmp_path, doc, capsys):
    doc["engine"]["tpye"] = doc["engine"].pop("type")
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="engine.type", phrase="'tpye' is there: a typo?", line=line_of(path, "tpye:"))


def test_yaml_1_1_exponent_without_dot_is_a_number(tmp_path, doc):
    # YAML 1.1 reads 1e-4 as text; a user writing gap: 1e-4 means the number
    (tmp_path / "p.yaml").write_text(write(tmp_path, doc).read_text() + "solver:\n  gap: 1e-4\n")
    assert codesign.load_problem(tmp_path / "p.yaml").solver.mip_gap == 1e-4


def test_workload_builder_gnmt(tmp_path, doc):
    doc["workload"] = {"builder": "gnmt", "args": {"batch_per_npu": 8, "src_len": 10, "tgt_len": 10}}
    p = codesign.load_problem(write(tmp_path, doc))
    assert p.workload.name == "gnmt" and len(p.workload.layers) == 13
    assert sum(ly.weight_grad_comm.bytes for ly in p.workload.layers if ly.weight_grad_comm) == 4 * 160_671_297


def test_workload_builder_bad_argument(tmp_path, doc, capsys):
    doc["workload"] = {"builder": "gnmt", "args": {"batch_per_np": 8}}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.args.batch_per_np", phrase="did you mean 'batch_per_npu'?",
                 line=line_of(path, "batch_per_np:"))


@pytest.mark.parametrize("key,value,phrase", [
    ("batch_per_npu", float("inf"), "expected a whole number, got the number inf"),
    ("batch_per_npu", True, "expected a whole number, got the boolean True"),
    ("batch_per_npu", 0.5, "expected a whole number, got 0.5"),
    ("batch_per_npu", 10**30, "expected a whole number <= 2.14748e+09"),
    ("act_bytes", -1.0, "expected a number >= 0, got -1.0"),
    ("share_embedding", "yes", "expected true or false, got the text 'yes'"),
], ids=["inf", "bool", "fraction", "huge", "negative", "not-bool"])
def test_workload_builder_argument_types(tmp_path, doc, capsys, key, value, phrase):
    """A builder's arguments are checked against its signature: '.inf' or 'true' is not a batch size."""
    doc["workload"] = {"builder": "gnmt", "args": {key: value}}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key=f"workload.args.{key}", phrase=phrase, line=line_of(path, f"{key}:"))


def test_workload_builder_with_layers_is_rejected(tmp_path, doc, capsys):
    doc["workload"]["builder"] = "gnmt"
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.layers", phrase="not allowed with 'builder'",
                 line=line_of(path, "layers:"))


def test_first_layer_input_grad_comm_is_rejected(tmp_path, doc, capsys):
    doc["workload"]["layers"][0]["input_grad_comm"] = {"collective": "all_reduce", "bytes": "1 MiB"}
    path = write(tmp_path, doc)
    expect_error(path, capsys, key="workload.layers[0].input_grad_comm", phrase="computes no input gradient")


def test_parse_problem_takes_plain_dicts_and_lists(doc, root):
    """A sweep edits a plain document: every check must work without the loader's line numbers."""
    doc["engine"] = {"type": "baseline", "comm_cores": [2, 4], "comm_hbm_share": [0.1, 0.2]}
    p = codesign.parse_problem(doc, str(root / "problems" / "x.yaml"))
    assert [o.value for o in p.engine.options("comm_cores")] == [2, 4]
    doc["engine"]["comm_cores"] = [2, "four"]
    with pytest.raises(SpecError, match=r"engine\.comm_cores\[1\]: expected a whole number"):
        codesign.parse_problem(doc, str(root / "problems" / "x.yaml"))


def test_line_of_path_finds_the_deepest_key_the_file_has(tmp_path):
    from codesign.spec.readers import line_of_path
    from codesign.spec.yamlfile import load_yaml
    f = tmp_path / "p.yaml"
    f.write_text("a: 1\ntopology:\n  dims:\n    - {name: x, size: 4}\n    - name: y\n      size: 8\n")
    doc = load_yaml(str(f))
    assert line_of_path(doc, "topology.dims[1].size") == 6
    assert line_of_path(doc, "topology.dims[0]") == 4
    assert line_of_path(doc, "topology.dims[7].size") == 3  # no such item: the list's own key
    assert line_of_path(doc, "workload") is None
