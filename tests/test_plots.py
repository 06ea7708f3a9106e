"""The pictures: a simulated period's timeline drawn as one bar per collective's stretch on a row, not one
per chunk-phase (at 1024 chunks a period holds some 300,000 chunk-phases; a matplotlib patch each took
minutes and gigabytes)."""
from __future__ import annotations

import dataclasses

from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

import codesign
from codesign.platform.endpoint import Design
from codesign.report.plots import _bars, timeline_png
from codesign.sim.replay import simulate

US = 1e-6


@st.composite
def timelines(draw):
    """Rows of back-to-back or spaced tasks, each of a few collectives, listed in any order."""
    out = []
    for row in ("compute", "dim0", "dim1"):
        t = 0.0
        for _ in range(draw(st.integers(0, 30))):
            t += draw(st.sampled_from([0.0, 0.0, 0.5, 2.0]))  # mostly back to back
            d = draw(st.sampled_from([0.25, 1.0, 3.0]))
            name = draw(st.sampled_from(["c0", "c1"]))
            out.append((row, name, "compute" if row == "compute" else "comm", t * US, (t + d) * US))
            t += d
    return draw(st.permutations(out))


@settings(max_examples=60, deadline=None)
@given(timelines())
def test_bars_cover_the_same_time_and_merge_only_a_collectives_back_to_back_stretch(tl):
    bars = _bars(tl)
    for row in {r for r, *_ in tl}:
        mine = sorted((s, e, name) for r, name, _, s, e in tl if r == row)
        drawn = sorted(x for (r, _), spans in bars.items() if r == row for x in spans)
        assert abs(sum(w for _, w in drawn) - sum((e - s) / US for s, e, _ in mine)) < 1e-6
        # a bar ends where the next task starts only if that task is another collective's
        breaks = sum(1 for a, b in zip(mine, mine[1:]) if not (a[1] == b[0] and a[2] == b[2]))
        assert len(drawn) == breaks + 1


def test_a_thousand_chunks_per_collective_draw_as_their_collectives(tmp_path):
    p = codesign.load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    p = dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, chunks=1024))
    res = simulate(p, Design("ace", {"sram": 8 * 2**20, "alu": 128e9, "dma": 128e9}))
    bars = _bars(res.timeline)
    dim0 = sum(1 for row, *_ in res.timeline if row == "dim0")
    # dim0 serves each collective's chunk-phases back to back (a bar per collective's stretch); dim1 and dim2
    # wait between them for the chunks' phases on dim0, so their bars stay apart
    assert dim0 > 10_000 and len(bars[("dim0", "comm")]) < dim0 / 20
    assert sum(len(spans) for spans in bars.values()) < len(res.timeline)
    timeline_png(res, p, tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 10_000
