"""A master rebound to another link time (``Master.rebind``, ``Family.adopt``): where two problems differ only in
the bandwidth or latency of a dimension the design does not choose, the rebound master is the one a build
makes (HiGHS is handed the same arrays, bit for bit) and answers as it does; anything else is refused and
leaves the master as it was."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import codesign.milp.master as master_module
from codesign.explore.sweep import plan, run_plan
from codesign.milp.data import model_data
from codesign.milp.master import Master
from codesign.pipeline.solve import solve
from codesign.problem.load import load_problem
from codesign.problem.model import SolverSpec

QUICK = ROOT / "problems" / "quickstart.yaml"
GNMT = ROOT / "problems" / "gnmt_ace_torus2d.yaml"
LIBRA = ROOT / "problems" / "libra" / "gpt3_3d.yaml"
SPEC = SolverSpec(time_limit_s=30.0, mip_gap=1e-9)
PROBLEMS = {QUICK: load_problem(QUICK), GNMT: load_problem(GNMT)}


def _at(problem, d: int, scale: float = 1.0, latency: float | None = None):
    """``problem`` with dimension d's link bandwidth times ``scale`` and, if given, its latency (s)."""
    dims = list(problem.topology.dims)
    dim = dims[d]
    dims[d] = dataclasses.replace(dim, link_bandwidth=dim.link_bandwidth * scale,
                                  latency=dim.latency if latency is None else latency)
    return dataclasses.replace(problem, topology=dataclasses.replace(problem.topology, dims=tuple(dims)))


def _record(master: Master) -> list:
    """What the master hands HiGHS at a (re)start: every call's arrays, the held rows, as plain values."""
    calls, ncols, nrows, held, sense, offset = master.compiled.built
    out = [ncols, nrows, sense, offset]
    for name, args in calls:
        out.append(name)
        out.extend(np.asarray(a).tolist() for a in args)
    out.extend(np.asarray(a).tolist() for a in (held.member, held.rows, held.starts, held.index, held.value,
                                                 held.lo, held.hi))
    return out


def _same_floats(a, b) -> bool:
    """Equal, nested lists of floats compared bit for bit (nan equal to nan)."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_floats(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(sorted(PROBLEMS)), d=st.integers(0, 1),
       a=st.floats(0.05, 20.0), b=st.floats(0.05, 20.0), latency=st.sampled_from([None, 0.0, 2e-7, 3e-6]))
def test_a_rebound_master_is_the_one_a_build_makes(path, d, a, b, latency):
    p = PROBLEMS[path]
    used = Master(model_data(_at(p, d, a)))
    used.solve(SPEC, 30.0)  # floors, a floor row and an incumbent that the rebind must drop
    md = model_data(_at(p, d, b, latency))
    assert used.rebind(md)
    fresh = Master(md)
    fresh.compile()
    assert _same_floats(_record(used), _record(fresh))
    assert used.max_phase_us == fresh.max_phase_us
    assert used.intervals == {} and not used.model.interval and not used.model.visited
    for key, (ks, rel, due) in fresh._release_due.items():
        ks2, rel2, due2 = used._release_due[key]
        assert ks == ks2 and np.array_equal(rel, rel2) and np.array_equal(due, due2)
    x, y = used.solve(SPEC, 30.0), fresh.solve(SPEC, 30.0)
    assert x.status == y.status == "optimal"
    assert x.objective == pytest.approx(y.objective, rel=1e-9)
    assert np.array_equal(used._floors(), fresh._floors(), equal_nan=True)


def test_a_rebound_master_under_tighter_budgets_answers_as_a_fresh_one():
    """A rebind restarts for the new problem's budgets (``restart``): options the tighter budget rules out are
    held at 0, and the optimum is the fresh master's."""
    p = PROBLEMS[QUICK]
    used = Master(model_data(p))
    used.solve(SPEC, 30.0)
    q = _at(p, 1, 0.3)
    q = dataclasses.replace(q, engine=dataclasses.replace(q.engine, area_budget_mm2=2.0))
    assert used.rebind(model_data(q))
    fresh = Master(model_data(q))
    x, y = used.solve(SPEC, 30.0), fresh.solve(SPEC, 30.0)
    assert x.status == y.status == "optimal"
    assert x.objective == pytest.approx(y.objective, rel=1e-9)
    assert x.objective > used.P


def _refused(master: Master, md) -> None:
    before = _record(master)
    floors = master._floors().copy() if master.designs is not None else None
    assert not master.rebind(md)
    assert _same_floats(_record(master), before)
    if floors is not None:
        assert np.array_equal(master._floors(), floors, equal_nan=True)


def test_a_master_is_not_rebound_to_another_workload_or_budget_rows():
    p = PROBLEMS[QUICK]
    used = Master(model_data(p))
    used.solve(SPEC, 30.0)
    chunks = dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, chunks=p.schedule.chunks + 1))
    _refused(used, model_data(chunks))
    no_budget = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=None))
    _refused(used, model_data(no_budget))
    other_npu = dataclasses.replace(p, npu=dataclasses.replace(p.npu, cores=p.npu.cores + 1))
    _refused(used, model_data(other_npu))


def test_an_open_dimension_s_new_bandwidths_are_refused():
    """With a network design space, a dimension's bandwidth options are coefficients of its binaries: another
    set of options is another model."""
    p = load_problem(LIBRA)
    used = Master(model_data(p))
    used.solve(SPEC, 30.0)
    net = p.network
    faster = tuple(tuple(2 * bw for bw in bws) for bws in net.bandwidths)
    _refused(used, model_data(dataclasses.replace(p, network=dataclasses.replace(net, bandwidths=faster))))


def test_a_sweep_along_a_bandwidth_builds_one_master_and_answers_as_solves_alone(tmp_path, monkeypatch):
    builds = []
    init = Master.__init__

    def counted(self, *args, **kwargs):
        builds.append(1)
        init(self, *args, **kwargs)
    monkeypatch.setattr(master_module.Master, "__init__", counted)
    tasks = plan(str(QUICK), {"topology.dims[1].bandwidth": "10GB/s,25GB/s,60GB/s,150GB/s",
                              "engine.area_budget": "2mm^2,3mm^2"})
    df = run_plan(tasks, executor="serial", out=tmp_path / "sweep.csv")
    assert len(builds) == 1  # the first family's; each later one rebinds it
    assert (df["status"] == "optimal").all()
    for point in tasks.points:
        row = df[df["key"] == point.key].iloc[0]
        alone = solve(point.problem)
        assert alone.status == "optimal"
        assert row["iteration_time_s"] == pytest.approx(alone.iteration_time_s, rel=1e-4)
        assert row["area_mm2"] == pytest.approx(alone.area_mm2, rel=1e-12)


def test_a_plan_reads_each_section_no_parameter_edits_once():
    """The points of a plan share the objects of the sections no parameter touches (``load._once``): every
    point's problem equals the problem parsed alone, the untouched sections are one object, the edited ones
    are not, and a warning about an untouched value is still given for every point."""
    import warnings

    from codesign.errors import InputWarning
    from codesign.problem.load import parse_problem
    from codesign.spec.yamlfile import load_yaml

    doc = load_yaml(QUICK)
    doc["workload"]["layers"][0]["forward"] = 40  # a bare number: 40 s, which the reader warns about
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pl = plan(doc, {"topology.dims[1].bandwidth": "10GB/s,25GB/s,60GB/s", "engine.area_budget": "2mm^2,3mm^2"})
    notes = [w for w in seen if issubclass(w.category, InputWarning) and "forward" in str(w.message)]
    assert len(notes) == 1 + len(pl.points)  # the file's base parse, then each point's
    first = pl.points[0].problem
    for pt in pl.points:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alone = parse_problem(_edited(doc, pt.values), "<document>")
        assert pt.problem == alone
        assert pt.problem.workload is first.workload and pt.problem.npu is first.npu
        assert pt.problem.solver is first.solver and pt.problem.schedule is first.schedule
    assert len({id(pt.problem.topology) for pt in pl.points}) == len(pl.points)
    assert len({id(pt.problem.engine) for pt in pl.points}) == len(pl.points)
    # the engine's options are read once though the budget in their section is edited; an edited option is not
    options = {r: {id(pt.problem.engine.resources[r]) for pt in pl.points} for r in first.engine.resources}
    assert all(len(ids) == 1 for ids in options.values()), options
    edited = plan(doc, {"engine.sram[0].area": "0.1mm^2,0.2mm^2"}).points
    assert edited[0].problem.engine.resources["sram"] != edited[1].problem.engine.resources["sram"]
    assert edited[0].problem.engine.resources["alu"] is edited[1].problem.engine.resources["alu"]


def test_a_warning_about_an_option_names_the_line_of_each_points_own_document():
    """An option written as one number may be the very same object in a point's document at another line (or at
    none: a parameter that replaces the whole engine); the plan reads it again there, so that its warning names
    what the point's document says, as the point parsed alone does."""
    import warnings

    from codesign.errors import InputWarning
    from codesign.problem.load import parse_problem
    from codesign.spec.yamlfile import load_yaml

    doc = load_yaml(QUICK)
    doc["engine"]["alu"] = 100  # a bare number: 100 B/s, which the reader warns about (at the line of alu:)
    engines = [{"type": "ace", "area_budget": b, "sram": "2 MiB", "alu": 100, "dma": "400 GB/s"}
               for b in ("2 mm^2", "3 mm^2")]

    def alu_notes(fn):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = fn()
        return out, [str(w.message) for w in seen if issubclass(w.category, InputWarning) and "alu" in str(w.message)]

    pl, notes = alu_notes(lambda: plan(doc, {"engine": engines}))
    for pt in pl.points:
        _, alone = alu_notes(lambda pt=pt: parse_problem(_edited(doc, pt.values), "<document>"))
        assert alone and all(n in notes for n in alone), (alone, notes)
    assert notes[0] != notes[-1]  # the file's own line, then the points' documents, which have none


def _edited(doc, values):
    """``doc`` with the sweep's values set (``explore.params.apply``)."""
    from codesign.explore.params import apply, parse_path
    return apply(doc, {tuple(parse_path(k)): v for k, v in values.items()})


def test_held_rows_an_answer_needed_are_given_again_after_a_rebind_with_the_new_numbers():
    """A restart gives HiGHS again the rows held back (``_Held``) that earlier answers needed; after a rebind,
    those still held are given with the new build's numbers, and the optimum is a fresh master's."""
    p = PROBLEMS[GNMT]
    used = Master(model_data(p))
    used.solve(SPEC, 30.0)
    c = used.compiled
    assert len(c.held.rows) > 5
    c._give(np.flatnonzero(~c.held.given)[:5])
    needed = set(c.held.rows[c.held.given].tolist())
    md = model_data(_at(p, 0, 0.4))
    assert used.rebind(md)
    fresh = Master(md)
    fresh.compile()
    held, record = used.compiled.held, fresh.compiled.built[3]
    assert set(held.rows[held.given].tolist()) == needed & set(record.rows.tolist()) != set()
    for name in ("rows", "starts", "index", "value", "lo", "hi"):
        assert np.array_equal(getattr(held, name), getattr(record, name))
    assert used.compiled.h.getNumRow() == fresh.compiled.h.getNumRow() + int(held.given.sum())
    x, y = used.solve(SPEC, 30.0), fresh.solve(SPEC, 30.0)
    assert x.status == y.status == "optimal"
    assert x.objective == pytest.approx(y.objective, rel=1e-9)


@pytest.mark.parametrize("name", ["global", "\x00workload\x00"])
def test_a_point_s_key_is_the_digest_of_its_whole_json_text(name):
    """``point_key`` writes the workload's JSON once a plan and splices it into the rest: the text is the one
    dumping the whole at once gives, also where a string of the problem holds the splice's placeholder (the
    key then dumps the whole)."""
    import hashlib
    import json

    from codesign.explore.sweep import _fields, _plain, point_key
    from codesign.problem.model import Problem
    from codesign.spec.yamlfile import load_yaml

    doc = load_yaml(QUICK)
    doc["topology"]["dims"][1]["name"] = name
    memo: dict = {}
    for pt in plan(doc, {"engine.area_budget": "2mm^2,3mm^2"}).points:
        d = {n: _plain(getattr(pt.problem, n)) for n in _fields(Problem)}
        for k in ("name", "description", "path"):
            d.pop(k, None)
        d["workload"] = {k: v for k, v in d["workload"].items() if k not in ("source", "name")}
        opts = {"time_limit": 3.0, "extra": None, "checks": []}
        whole = hashlib.sha256(json.dumps([d, opts], sort_keys=True, default=repr).encode()).hexdigest()[:20]
        assert point_key(pt.problem, 3.0, memo=memo) == point_key(pt.problem, 3.0) == whole
