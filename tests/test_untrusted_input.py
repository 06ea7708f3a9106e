"""Problem files nobody checked: bounded YAML, bounded messages, and one rule for every file a problem names.

The issue "Never a wrong answer", cases 7 and 8: a 1 KB file of nested aliases ("billion laughs") must
not hang ``codesign validate``; an error never quotes a whole value; ``workload.astra`` (and every other
input file) must be a regular file of at most 64 MiB, and ``--confine`` refuses files outside the problem
file's folder. Each case is one line on stderr, ``file[:line]: ...``, exit status 2, and fast.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from conftest import ROOT

from codesign import SpecError, load_problem
from codesign.cli import main
from codesign.errors import QUOTE_LIMIT, shown
from codesign.spec.files import MAX_INPUT_BYTES
from codesign.spec.yamlfile import MAX_ALIAS_NODES, MAX_DEPTH, load_yaml

ASTRA = "DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\n"


def problem_text(workload: str = "{astra: wl.txt}") -> str:
    """The quickstart problem with its workload replaced (an ASTRA-sim file by default)."""
    text = (ROOT / "problems/quickstart.yaml").read_text()
    head, rest = text.split("workload:\n", 1)
    rest = rest[rest.index("topology:"):]
    return f"{head}workload: {workload}\n{rest}"


def one_error(capsys: pytest.CaptureFixture, argv: list[str], started: float | None = None) -> str:
    """Run the CLI in-process; it must exit 2 with one stderr line naming a file; return that line."""
    t0 = time.perf_counter() if started is None else started
    rc = main(argv)
    out, err = capsys.readouterr()
    assert time.perf_counter() - t0 < 10, "took too long"
    assert rc == 2, err
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("codesign: error: "), err
    return lines[0][len("codesign: error: "):]


# ------------------------------------------------------------------ case 7: YAML that expands without bound

def laughs(levels: int = 9) -> str:
    """Nine nested aliases of ten: 10^9 items in under 1 KB, used where a value is read (engine.type)."""
    lines = ["sweep:", '  l0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"  l{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + ("\nworkload: {layers: [{name: a}]}\n"
                               "topology: {dims: [{kind: ring, size: 4, bandwidth: 25 GB/s}]}\n"
                               f"engine: {{type: *a{levels - 1}}}\n")


def test_billion_laughs_is_refused_at_once(tmp_path, capsys):
    p = tmp_path / "laughs.yaml"
    p.write_text(laughs())
    assert p.stat().st_size < 1100
    msg = one_error(capsys, ["validate", str(p)])
    assert re.match(re.escape(str(p)) + r":\d+: the aliases stand for more than ", msg), msg
    assert str(MAX_ALIAS_NODES) in msg


def test_aliases_within_the_limit_still_work(tmp_path):
    text = problem_text().replace("npu:\n", "npu: &n\n", 1) + "x-copy: *n\n"
    doc = load_yaml(_write(tmp_path, "a.yaml", text))
    assert doc["x-copy"] is doc["npu"]


@pytest.mark.parametrize("text,phrase", [
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", f"nested more than {MAX_DEPTH} levels deep"),
    ("a: &x [1, *x]\n", "the alias *x is inside its own anchor"),
    ("a: " + "7" * 5000 + "\n", "a whole number of 5000 digits"),
], ids=["deep", "recursive", "long-int"])
def test_yaml_that_would_crash_is_one_line(tmp_path, capsys, text, phrase):
    p = _write(tmp_path, "p.yaml", text)
    msg = one_error(capsys, ["validate", str(p)])
    assert msg.startswith(f"{p}:1: ") and phrase in msg, msg


def test_nesting_through_aliases_counts(tmp_path, capsys):
    chain = ["a0: &a0 [1]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 3 * MAX_DEPTH)]
    p = _write(tmp_path, "p.yaml", "\n".join(chain) + "\n")
    msg = one_error(capsys, ["validate", str(p)])
    assert f"nested more than {MAX_DEPTH} levels deep (counting through aliases)" in msg


def test_messages_quote_at_most_a_short_prefix(tmp_path, capsys):
    long = "x" * 100_000
    for old, new in [("type: ace", f"type: {long}"), ("bandwidth: 25 GB/s", f"bandwidth: 25 {long}"),
                     ("kind: ring, size: 4, links: 2, bandwidth: 100 GB/s", f"{long}: 1, kind: ring, size: 4"),
                     ("npu:\n", f"npu:\n  {long}: 1\n")]:
        p = _write(tmp_path, "p.yaml", problem_text("{name: x, layers: [{name: a}]}").replace(old, new, 1))
        msg = one_error(capsys, ["validate", str(p)])
        assert len(msg) < len(str(p)) + 300, msg[:400]


def test_shown_cuts_without_walking_the_value():
    big: list = ["lol"] * 10
    for _ in range(8):
        big = [big] * 10  # 10^9 items, shared
    t0 = time.perf_counter()
    text = shown(big)
    assert time.perf_counter() - t0 < 0.1
    assert len(text) <= QUOTE_LIMIT + 3 and text.endswith("...")
    assert shown("abc") == "'abc'" and shown(2.5) == "2.5"
    assert shown(10**5000).startswith("<a number of about 5000 digits")


# ------------------------------------------------------------------ case 8: files a problem names

def _write(folder: Path, name: str, text: str) -> Path:
    p = folder / name
    p.write_text(text)
    return p


def astra_problem(folder: Path, target: str) -> Path:
    return _write(folder, "p.yaml", problem_text("{astra: " + target + "}"))


def astra_line(p: Path) -> int:
    return next(i + 1 for i, ln in enumerate(p.read_text().splitlines()) if "astra:" in ln)


def test_workload_from_dev_zero_is_refused(tmp_path, capsys):
    p = astra_problem(tmp_path, "/dev/zero")
    msg = one_error(capsys, ["validate", str(p)])
    assert msg.startswith(f"{p}:{astra_line(p)}: workload.astra: '/dev/zero': not a regular file"), msg


def test_workload_from_a_fifo_does_not_block(tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe.txt")
    p = astra_problem(tmp_path, "pipe.txt")
    msg = one_error(capsys, ["validate", str(p)])
    assert "not a regular file" in msg, msg


def test_workload_over_the_size_limit_is_refused(tmp_path, capsys):
    with open(tmp_path / "big.txt", "wb") as f:  # sparse: no disk, no time
        f.truncate(MAX_INPUT_BYTES + 1)
    p = astra_problem(tmp_path, "big.txt")
    msg = one_error(capsys, ["validate", str(p)])
    assert f"over the {MAX_INPUT_BYTES // 2**20} MiB an input file may have" in msg, msg


def test_workload_naming_a_system_file_echoes_no_line_of_it(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    p = astra_problem(tmp_path, str(secret))
    msg = one_error(capsys, ["validate", str(p)])
    assert msg.startswith(f"{secret}:1: unknown parallelism "), msg
    assert "/bin/bash" not in msg and "daemon" not in msg


def test_workload_bad_token_is_quoted_short(tmp_path, capsys):
    _write(tmp_path, "wl.txt", ASTRA.replace("ALLREDUCE", "Q" * 1000))
    p = astra_problem(tmp_path, "wl.txt")
    msg = one_error(capsys, ["validate", str(p)])
    assert "unknown communication type 'QQQQ" in msg and "Q" * 40 not in msg, msg


def test_confine_refuses_files_outside_the_problem_folder(tmp_path, capsys):
    inner = tmp_path / "jobs"
    inner.mkdir()
    _write(tmp_path, "wl.txt", ASTRA)
    (inner / "link.txt").symlink_to(tmp_path / "wl.txt")
    for target in ("../wl.txt", str(tmp_path / "wl.txt"), "link.txt"):
        p = astra_problem(inner, target)
        assert main(["validate", str(p)]) == 0  # without --confine the file is read
        capsys.readouterr()
        msg = one_error(capsys, ["validate", "--confine", str(p)])
        assert msg.startswith(f"{p}:{astra_line(p)}: workload.astra: "), msg
        assert "refused: the workload file is outside" in msg and "--confine" in msg, msg
    _write(inner, "wl.txt", ASTRA)
    p = astra_problem(inner, "wl.txt")
    assert main(["validate", "--confine", str(p)]) == 0
    assert load_problem(p, confine=True).workload.layers[0].name == "conv1"


@pytest.mark.parametrize("argv", [["sweep", "--param", "engine.area_budget=4mm^2", "--out", "{out}/s.csv", "--quiet"],
                                  ["pareto", "--out", "{out}/p.png"], ["shadow"]])
def test_confine_holds_for_sweep_pareto_and_shadow(tmp_path, capsys, argv):
    inner = tmp_path / "jobs"
    inner.mkdir()
    _write(tmp_path, "wl.txt", ASTRA)
    p = astra_problem(inner, "../wl.txt")
    msg = one_error(capsys, [a.format(out=tmp_path) for a in argv] + ["--confine", str(p)])
    assert msg.startswith(f"{p}:{astra_line(p)}: workload.astra: "), msg
    assert "refused: the workload file is outside" in msg, msg
    assert not list(tmp_path.glob("*.csv")) and not list(tmp_path.glob("*.png"))  # refused before any output


def test_confine_holds_the_solver_profile_too(tmp_path, capsys):
    _write(tmp_path, "mine.yaml", "time_limit: 5 s\n")
    inner = tmp_path / "jobs"
    inner.mkdir()
    p = _write(inner, "p.yaml", problem_text("{name: x, layers: [{name: a, forward: 1 us}]}").replace(
        "profile: default", "profile: ../mine.yaml"))
    assert load_problem(p).solver.time_limit_s == 5
    with pytest.raises(SpecError, match="solver.profile: '../mine.yaml': refused: the solver profile is outside"):
        load_problem(p, confine=True)
    msg = one_error(capsys, ["solve", "--confine", str(p)])  # refused before any solve
    assert "refused" in msg
    p.write_text(p.read_text().replace("../mine.yaml", "default"))
    assert load_problem(p, confine=True).solver.profile == "default"  # the shipped profiles are always there


@pytest.mark.parametrize("flag", ["--astra-workload", "--astra-network", "--astra-system"])
def test_simulate_astra_inputs_go_through_the_same_rule(flag, capsys):
    data = ROOT / "tests/data/astra"
    inputs = {"--astra-workload": data / "workload/microAllReduce.txt",
              "--astra-network": data / "network/sample_Torus3D.json",
              "--astra-system": data / "system/sample_torus_sys.txt"}
    inputs[flag] = Path("/dev/zero")
    msg = one_error(capsys, ["simulate", *[x for k, v in inputs.items() for x in (k, str(v))]])
    assert msg.startswith("/dev/zero: not a regular file"), msg


def test_simulate_solution_goes_through_the_same_rule(tmp_path, capsys):
    p = _write(tmp_path, "p.yaml", problem_text("{name: x, layers: [{name: a, forward: 1 us}]}"))
    msg = one_error(capsys, ["simulate", str(p), "--solution", "/dev/zero"])
    assert msg.startswith("/dev/zero: not a regular file") and "expected a solution file" in msg, msg
    sol = _write(tmp_path, "sol.json", '{"engine": "ace", "design": {"sram_bytes": "x"}}')
    msg = one_error(capsys, ["simulate", str(p), "--solution", str(sol)])
    assert msg == f"{sol}: design.sram_bytes: expected a number, got 'x'", msg
    inner = tmp_path / "jobs"
    inner.mkdir()
    q = _write(inner, "p.yaml", p.read_text())
    msg = one_error(capsys, ["simulate", "--confine", str(q), "--solution", str(sol)])
    assert msg.startswith(f"{sol}: refused: the solution file is outside "), msg


def test_problem_file_itself_is_bounded(tmp_path, capsys):
    msg = one_error(capsys, ["validate", "/dev/zero"])
    assert msg == "/dev/zero: not a regular file (a device, pipe or socket); expected a YAML problem file"
    with open(tmp_path / "huge.yaml", "wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)
    assert "MiB an input file may have" in one_error(capsys, ["validate", str(tmp_path / "huge.yaml")])


def test_every_input_file_goes_through_read_user_file():
    """No module that reads a user's file opens it another way than spec/files.py's read_user_file."""
    offenders = []
    for f in (ROOT / "codesign").rglob("*.py"):
        if f.parts[-2] in ("milp", "pipeline", "schedule", "report", "explore", "study") or f.name == "files.py":
            continue  # outputs, and packages that read no user file
        if f.relative_to(ROOT).as_posix() == "codesign/cli/clock.py":
            continue  # the process's own /proc/self/stat, for the start of --time-limit's clock
        if re.search(r"(?<![\w.])open\(|\.read_text\(|\.read_bytes\(", f.read_text()):
            offenders.append(str(f.relative_to(ROOT)))
    assert offenders == [], offenders


def test_json_inputs_nested_too_deep_are_one_line(tmp_path, capsys):
    """Python's JSON decoder recurses: a 200 KB '[[[...]]]' was a RecursionError (exit 3)."""
    deep = _write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    data = ROOT / "tests/data/astra"
    msg = one_error(capsys, ["simulate", "--astra-workload", str(data / "workload/microAllReduce.txt"),
                             "--astra-network", str(deep), "--astra-system", str(data / "system/sample_torus_sys.txt")])
    assert msg == f"{deep}: not a network file: JSON nested too deep"
    p = _write(tmp_path, "p.yaml", problem_text("{name: x, layers: [{name: a, forward: 1 us}]}"))
    msg = one_error(capsys, ["simulate", str(p), "--solution", str(deep)])
    assert msg == f"{deep}: not a solution JSON file: JSON nested too deep"


@pytest.mark.parametrize("seq", [[[999, 0]], [], [[3, 0], [2, 0], [1, 0]], [[3, 0], [3, 0], [2, 0], [1, 0], [0, 0]],
                                 [[3, 0.5], [2, 0], [1, 0], [0, 0]], [[3, -1], [2, 0], [1, 0], [0, 0]], "lifo"],
                         ids=["out-of-range", "empty", "missing", "twice", "fraction", "negative", "text"])
def test_solution_priorities_that_do_not_fit_the_problem_are_one_line(tmp_path, capsys, seq):
    """The replay ranks every collective by the saved priorities: one missing was a KeyError (exit 3)."""
    layer = ("{{name: l{}, forward: 10 us, weight_grad: 10 us, "
             "weight_grad_comm: {{collective: all_reduce, bytes: 1 MiB}}}}")
    layers = ", ".join(layer.format(i) for i in range(4))
    p = _write(tmp_path, "p.yaml", problem_text("{name: x, layers: [" + layers + "]}"))
    design = {"sram_bytes": 512 * 2**10, "alu_rate_bytes_per_s": 100e9, "dma_bandwidth_bytes_per_s": 100e9}
    sol = _write(tmp_path, "s.json", json.dumps({"engine": "ace", "design": design, "priority": seq}))
    msg = one_error(capsys, ["simulate", str(p), "--solution", str(sol)])
    assert msg.startswith(f"{sol}: priority: expected "), msg


# ------------------------------------------------------------------ issue 29, item 7: what --confine writes, lists

@pytest.mark.parametrize("out", ["{outside}/r.csv", "../r.csv", "link/r.csv"], ids=["absolute", "up", "linked"])
def test_confine_holds_a_sweeps_results_file_to_the_problems_folder(tmp_path, capsys, out):
    """A problem's ``sweep.out`` wrote the CSV, its lock and the plots to any path; under --confine it must lie in
    the problem file's folder (links followed), and is refused before any work."""
    inner = tmp_path / "jobs"
    inner.mkdir()
    (inner / "link").symlink_to(tmp_path)
    text = (ROOT / "problems/quickstart.yaml").read_text()
    section = "\nsweep:\n  params:\n    engine.area_budget: [3 mm^2]\n  out: " + out.format(outside=tmp_path) + "\n"
    p = _write(inner, "p.yaml", text + section)
    assert main(["validate", str(p)]) == 0  # without --confine the file may go anywhere
    capsys.readouterr()
    line = next(i + 1 for i, ln in enumerate(p.read_text().splitlines()) if ln.strip().startswith("out:"))
    for argv in (["validate", "--confine", str(p)], ["sweep", "--confine", str(p)]):
        msg = one_error(capsys, argv)
        assert msg == f"{p}:{line}: sweep.out: refused: the results file is outside {inner} (--confine allows only " \
                      "files in the problem file's folder)", msg
    assert sorted(x.name for x in tmp_path.iterdir()) == ["jobs"]  # no CSV, lock or plot
    _write(inner, "p.yaml", text + section.replace(out.format(outside=tmp_path), "r.csv"))
    assert main(["validate", "--confine", str(p)]) == 0


def _trace_bytes(tmp_path: Path) -> bytes:
    d = tmp_path / "exported"
    assert main(["export-chakra", str(ROOT / "problems/quickstart.yaml"), "--out", str(d)]) == 0
    return (d / "mlp4.0.et").read_bytes()


def test_confine_lists_and_probes_nothing_outside_the_folder(tmp_path, capsys):
    """The Chakra reader listed a folder outside the problem's ("found 2", "found 0") and told a file there from no
    file ("refused" or "no trace"). Under --confine every case is the one refusal, word for word; without it, the
    answers differ as before (the reader is the same)."""
    trace = _trace_bytes(tmp_path)
    capsys.readouterr()
    inner, outside = tmp_path / "jobs", tmp_path / "secret"
    inner.mkdir()
    p = _write(inner, "p.yaml", problem_text("{chakra: ../secret}"))

    def layout(kind: str) -> None:
        for f in (outside, tmp_path / "secret.0.et"):
            if f.is_dir():
                for g in f.iterdir():
                    g.unlink()
                f.rmdir()
            elif f.exists():
                f.unlink()
        if kind in ("two", "none"):
            outside.mkdir()
            for name in ("a.0.et", "b.0.et")[: 2 if kind == "two" else 0]:
                (outside / name).write_bytes(trace)
        elif kind == "prefix":
            (tmp_path / "secret.0.et").write_bytes(trace)
    free, confined = set(), set()
    for kind in ("two", "none", "prefix", "nothing"):
        layout(kind)
        rc = main(["validate", str(p)])
        free.add((rc, capsys.readouterr().err))
        confined.add(one_error(capsys, ["validate", "--confine", str(p)]))
    assert len(free) == 4  # the cases differ, without --confine
    assert len(confined) == 1, confined
    assert "workload.chakra: '../secret': refused: the Chakra trace is outside" in confined.pop()


@pytest.mark.parametrize("there", [True, False], ids=["target-exists", "target-missing"])
def test_confine_tells_nothing_of_where_a_planted_link_points(tmp_path, capsys, there):
    """A prefix's file inside the folder that is a link out of it: refused alike whether its target exists."""
    trace = _trace_bytes(tmp_path)
    capsys.readouterr()
    inner = tmp_path / "jobs"
    inner.mkdir()
    if there:
        (tmp_path / "x.et").write_bytes(trace)
    (inner / "pre.0.et").symlink_to(tmp_path / "x.et")
    p = _write(inner, "p.yaml", problem_text("{chakra: pre}"))
    msg = one_error(capsys, ["validate", "--confine", str(p)])
    assert msg.endswith(f"workload.chakra: 'pre': refused: the Chakra trace is outside {inner} (--confine allows "
                        "only files in the problem file's folder)"), msg
