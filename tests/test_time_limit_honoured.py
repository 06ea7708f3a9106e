"""A time limit bounds the whole solve: what runs after the search (the answer's bounds and notes) is counted, and
what cannot finish in time is not started."""
from __future__ import annotations

import time

from conftest import ROOT

from codesign import load_problem, parse_problem
from codesign.pipeline import solve as S
from codesign.spec.yamlfile import load_yaml

RANGED = ROOT / "problems/libra/resnet50_3d.yaml"


def _ranged(tmp_path):
    """LIBRA's ResNet-50 problem with every bandwidth a range (a grid 10% apart): its answers carry the bound over
    the continuous ranges, a second MILP built after the search."""
    text = RANGED.read_text()
    for lo, hi in (("50 GB/s", "400 GB/s"), ("25 GB/s", "200 GB/s"), ("3.125 GB/s", "25 GB/s")):
        start = text.index(f"bandwidth: [{lo}")
        end = text.index("]", start) + 1
        text = text[:start] + f"bandwidth: {{min: {lo}, max: {hi}}}" + text[end:]
    p = tmp_path / "ranged.yaml"
    p.write_text(text)
    return parse_problem(load_yaml(p), str(RANGED))  # (its workload file is named relative to problems/libra/)


def test_the_continuous_bound_is_not_started_past_the_deadline(tmp_path, monkeypatch) -> None:
    """Past the deadline the continuous bound's MILP is not even built (building it took over a second past a 6 s
    limit: 8.09 s in all): the answer simply carries no such bound."""
    md = S.model_data(_ranged(tmp_path))

    def no_build(*a, **k):
        raise AssertionError("a master was built past the deadline")
    monkeypatch.setattr(S, "Master", no_build)
    assert S.continuous_bound_us(md, time.perf_counter() - 1.0) is None


def test_the_solve_time_counts_the_making_of_the_answer() -> None:
    """``solve_time_s`` was read before the answer's any-order bound and notes were made, so the time a limit is
    checked against left them out; it now ends when the answer is made."""
    p = load_problem(ROOT / "problems/quickstart.yaml")
    t0 = time.perf_counter()
    sol = S.solve(p, started=t0)
    after = time.perf_counter() - t0
    assert sol.any_order_bound_s is not None  # (the answer's own LP, made after the search)
    assert sol.solve_time_s >= after - 2e-3, (sol.solve_time_s, after)


def test_a_solve_does_not_import_what_its_problem_does_not_use() -> None:
    """The time limit counts the imports: the Chakra codec is imported only where a trace is read."""
    import subprocess
    import sys
    code = ("import sys; from codesign import load_problem; import codesign.pipeline.solve; "
            f"load_problem({str(ROOT / 'problems/quickstart.yaml')!r}); "
            "print(sorted(m for m in sys.modules if m.startswith('codesign.workload.chakra')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_the_clock_of_a_command_starts_with_its_process():
    """A time limit is the whole command's: the interpreter's start and the imports before ``main`` count. A
    process that sleeps 0.4 s before importing codesign is at least 0.4 s old by codesign's clock, and a call
    of main() with its own list (a longer-lived program) counts from the call, not the process's start."""
    import subprocess
    import sys
    code = ("import time; time.sleep(0.4); from codesign.cli.main import process_started; "
            "print(time.perf_counter() - process_started())")
    age = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 0.4 <= age < 30


def test_short_commands_import_only_what_they_need():
    """Start-up is mostly imports: ``validate`` loads no solver, plotting, dataframe or cluster package, and
    ``solve`` only Pyomo's modelling core and HiGHS (not pyomo.environ's plugins, matplotlib, pandas or Dask)."""
    import subprocess
    import sys
    heavy = ("pandas", "matplotlib", "dask", "distributed", "pyomo", "pyomo.environ", "highspy", "scipy")
    code = ("import sys; from codesign.cli.main import main; main(sys.argv[1:]); "
            f"print('loaded:' + ','.join(m for m in {heavy!r} if m in sys.modules))")

    def loaded(*argv: str) -> set[str]:
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
        return set(filter(None, r.stdout.rsplit("loaded:", 1)[1].strip().split(",")))

    assert loaded("validate", str(ROOT / "problems" / "resnet50_ace_torus3d.yaml")) == set()
    assert loaded("solve", str(ROOT / "problems" / "quickstart.yaml")) == {"pyomo", "highspy"}
