"""The pictures as a user reads them (issue 29, 16): nothing drawn past the Gantt chart's period without a
label saying what it is, no kind of task in idle's grey, legends beside the data, never over it, and the study's
bars named under themselves in words."""
from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st

import codesign
from codesign.pipeline.solution import ScheduledTask
from codesign.report.plots import KIND_COLORS, fold, gantt_figure, kind_color, timeline_png


@pytest.fixture(scope="module")
def quickstart():
    p = codesign.load_problem(ROOT / "problems" / "quickstart.yaml")
    return p, codesign.solve(p)


def test_no_kind_of_task_is_drawn_in_idles_grey():
    seen: dict[str, str] = {}
    for kind in [k for k in KIND_COLORS if k != "idle"] + ["a_kind_of_ones_own", "another", "a third"]:
        assert kind_color(kind, seen) != KIND_COLORS["idle"], kind
    assert len({kind_color(k, seen) for k in KIND_COLORS}) == len(KIND_COLORS)


@given(st.lists(st.tuples(st.floats(0, 50), st.floats(0, 40)), max_size=20), st.floats(1, 30))
def test_fold_keeps_every_bar_and_draws_nothing_past_the_period(spans, period):
    inside, past = fold(spans, period)
    assert sum(w for _, w in inside + past) == pytest.approx(sum(w for _, w in spans), rel=1e-9, abs=1e-9)
    for x, w in inside + past:
        assert -1e-9 <= x and x + w <= period * (1 + 1e-9) + 1e-9


def _drawn_x(ax) -> list[float]:
    return [float(v[0]) for c in ax.collections for path in c.get_paths() for v in path.vertices]


def _apart(artist, ax) -> bool:
    """The legend's box and the axes' box do not overlap (drawn, in display pixels)."""
    fig = ax.figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    a, b = artist.get_window_extent(r), ax.get_window_extent(r)
    return a.x0 >= b.x1 - 1 or a.x1 <= b.x0 + 1 or a.y0 >= b.y1 - 1 or a.y1 <= b.y0 + 1


def _late(sol):
    """``sol`` with one more collective, from 0.8 T to 1.7 T: 0.7 T of it runs into the next iteration."""
    T = sol.iteration_time_s
    return dataclasses.replace(sol, schedule=sol.schedule + (ScheduledTask("late.comm", "comm", "fc1", 0.8 * T,
                                                                           1.7 * T),))


def test_gantt_draws_what_runs_past_the_period_at_the_start(quickstart):
    import matplotlib.pyplot as plt
    _, sol = quickstart
    fig, ax, kinds, wrapped = gantt_figure(_late(sol))
    right = ax.get_xlim()[1]                         # the period, in the axis' unit
    assert wrapped and max(_drawn_x(ax)) <= right * (1 + 1e-9)
    plt.close(fig)
    fig, ax, kinds, wrapped = gantt_figure(sol)      # the quickstart's own schedule ends within its period
    assert not wrapped
    plt.close(fig)


def test_gantt_and_timeline_legends_sit_beside_the_data_and_name_the_wrapped_part(quickstart, tmp_path,
                                                                                   monkeypatch):
    import matplotlib.pyplot as plt

    from codesign.platform.endpoint import Design
    from codesign.report import plots
    from codesign.sim.replay import simulate
    p, sol = quickstart
    legends = []
    real_close = plt.close

    def keep(fig):  # look at each figure as written, then free it
        ax = fig.axes[0]
        legend = ax.get_legend()
        legends.append([t.get_text() for t in legend.get_texts()])
        assert _apart(legend, ax), legends[-1]
        real_close(fig)
    monkeypatch.setattr(plt, "close", keep)
    plots.gantt(_late(sol), tmp_path / "g.png")
    timeline_png(simulate(p, Design(p.engine.kind, dict(sol.design))), p, tmp_path / "t.png")
    gantt_labels, timeline_labels = legends
    assert any("runs past the period" in x for x in gantt_labels)
    assert set(timeline_labels) <= set(KIND_COLORS) and "forward" in timeline_labels


def test_breakdown_names_each_bar_in_words_under_it_and_its_legend_covers_no_panel(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from codesign.study.cases import CONFIGS
    from codesign.study.plots import breakdown_png
    rows = [{"group": "study", "error": "", "workload": w, "npus": n, "config": c, "compute_time_s": 1e-3,
             "exposed_comm_s": 0.5e-3} for w in ("resnet50", "gnmt") for n in (16, 32) for c in CONFIGS]
    seen = []
    real_close = plt.close

    def keep(fig):
        for ax in fig.axes:
            names = [t.get_text() for t in ax.get_xticklabels()]
            assert names and not any("_" in x for x in names), names
            assert len(names) == 2 * len(CONFIGS)
            assert all(_apart(leg, ax) for leg in fig.legends)
        seen.append(fig)
        real_close(fig)
    monkeypatch.setattr(plt, "close", keep)
    breakdown_png(rows, tmp_path / "b.png")
    assert seen
