"""The ACE study's two definitions of "the best baseline" (issue 29, 18): ours, the fastest of every baseline
configuration, the searched split included; the paper's, the better of its fixed comp-opt and comm-opt splits.
The table shows both, so that what a tuned baseline takes of ACE's gain is read off it."""
from __future__ import annotations

import pytest
from test_reproduce import _row

from codesign.study.report import case_table, headline_table
from codesign.study.run import compare, summarize


def _case(**times):
    return [_row(c, t) for c, t in times.items()]


def test_the_paper_speedup_is_over_the_better_fixed_split_and_ours_over_every_baseline():
    (c,) = compare(_case(baseline=1.8, comm_opt=2.4, comp_opt=2.1, no_overlap=3.0, ideal=1.0, ace=1.5))
    assert c["best_baseline"] == "baseline" and c["speedup"] == pytest.approx(1.8 / 1.5)
    assert c["paper_baseline"] == "comp_opt" and c["speedup_paper"] == pytest.approx(2.1 / 1.5)
    assert c["speedup_paper"] >= c["speedup"]            # ours takes the best of more configurations


def test_without_the_fixed_splits_the_paper_speedup_is_not_made_up():
    (c,) = compare(_case(baseline=1.8, comm_opt=2.4, comp_opt=2.1, ace=1.5)[:1] + [_row("ace", 1.5)]
                   + [_row("comm_opt", 2.0, error="SolverError: x"), _row("comp_opt", 2.0, error="SolverError: x")])
    assert c["speedup"] == pytest.approx(1.2) and c["speedup_paper"] is None
    assert "n/a" in case_table({"comparisons": [c]})


def test_the_table_shows_both_definitions_beside_the_papers_figure():
    s = summarize(_case(baseline=1.8, comm_opt=2.4, comp_opt=2.1, no_overlap=3.0, ideal=1.0, ace=1.5), [])
    w = s["workloads"]["w"]
    assert w["speedup_paper_avg"] == pytest.approx(1.4) and w["speedup_avg"] == pytest.approx(1.2)
    s["paper"] = {**s["paper"], "workloads": {"w": {"speedup_avg": 1.41, "speedup_max": 1.51}}}
    s["hbm_reduction_avg"] = float("nan")
    table = headline_table(s)
    paper_row = next(x for x in table.splitlines() if "the paper's (its fixed comp-opt and comm-opt" in x)
    ours_row = next(x for x in table.splitlines() if "ours (every baseline, the searched split" in x)
    assert paper_row.endswith("| 1.41 (1.51) | 1.40 (1.40) |") and ours_row.endswith("| 1.41 (1.51) | 1.20 (1.20) |")
    assert "1.400 (comp-opt)" in case_table(s)
