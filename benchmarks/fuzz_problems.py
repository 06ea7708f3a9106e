"""Fuzz ``codesign validate`` with mutated shipped problems: it must accept (exit 0) or reject with one line.

Each mutation starts from a shipped problem (problems/*.yaml and a sample of problems/paper/*.yaml) and
changes one thing: deletes a key, changes a value's type, puts a unit on the wrong quantity, writes a
negative, zero, huge or non-finite number, misspells a key, duplicates a key, nests deep, adds aliases
(a billion laughs among them), or cuts the file short. ``codesign validate`` runs in-process (through
``codesign.cli.main`` with its output captured) and must exit 0, with nothing on stderr but
``codesign: warning: file:line: ...`` lines, or exit 2 with exactly one error line
``codesign: error: file[:line]: ...`` (after any such warnings); anything else (a traceback, exit 1 or 3,
two error lines) is a finding.
(No ``solve``: validation is what is fuzzed.) tests/test_fuzz_problems.py runs this with a seed; run
it by hand for a larger tally:

    python benchmarks/fuzz_problems.py [--mutations 500] [--seed 1]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: What an error line may start with after "codesign: error: ": a file, then an optional line number.
ERROR_LINE = re.compile(r"^[^:]+:\d+: |^[^:]+: ")
WARNING_LINE = re.compile(r"^codesign: warning: [^:]+:\d+: ")


def sources(rng: random.Random, paper: int = 12) -> dict[str, str]:
    """{name: text} of the problems mutated: every problems/*.yaml and problems/llm/*.yaml (platform profiles,
    the LLM builder's keys) and ``paper`` of problems/paper/*.yaml,
    with relative ASTRA-sim workload paths made absolute so that a copy in another folder still finds them."""
    files = sorted((ROOT / "problems").glob("*.yaml")) + sorted((ROOT / "problems/llm").glob("*.yaml"))
    files += rng.sample(sorted((ROOT / "problems/paper").glob("*.yaml")), paper)
    out = {}
    for f in files:
        text = f.read_text()
        text = re.sub(r"astra: ([^,}\s]+)", lambda m, f=f: f"astra: {(f.parent / m.group(1)).resolve()}", text)
        out[str(f.relative_to(ROOT))] = text
    return out


# ---------------------------------------------------------------- mutations of the parsed document

def _places(doc: Any, path: tuple = ()) -> list[tuple[tuple, Any, Any]]:
    """Every (path, container, key) in the document, depth first."""
    out = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for k, v in items:
        out.append((path + (k,), doc, k))
        out.extend(_places(v, path + (k,)))
    return out


def _typo(rng: random.Random, word: str) -> str:
    w = list(str(word)) or ["x"]
    i = rng.randrange(len(w))
    op = rng.choice(("swap", "drop", "add", "case"))
    if op == "swap" and len(w) > 1:
        j = min(i + 1, len(w) - 1)
        w[i], w[j] = w[j], w[i]
    elif op == "drop" and len(w) > 1:
        del w[i]
    elif op == "case":
        w[i] = w[i].swapcase()
    else:
        w.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz_"))
    return "".join(w)


UNITS = ["25 GB/s", "4 MiB", "500 ns", "120 TFLOP/s", "1.5 mm^2", "2 W", "1 GHz", "2.5 GFLOP", "3 furlongs",
         "25 GB", "25 Gb/s", "10 us/s", "GB/s", "1e3 KiB", "5 %"]
NUMBERS = [-1, 0, -0.5, 1e308, 1.0e+400, -1.0e+400, float("nan"), 10**40, 2**63, 1e-300, "1e999 GB/s", "-5 ns",
           "0 W", "nan GB/s", "inf", ".inf", "1" + "0" * 120, 3.5, 10**6]
TYPES = [None, True, "text", [], {}, [1, 2], {"a": 1}, 7, 0.25, "", [[]], "- x"]


def delete_key(rng: random.Random, doc: Any) -> str:
    path, parent, key = rng.choice([p for p in _places(doc) if isinstance(p[1], dict)])
    del parent[key]
    return f"delete {_text(path)}"


def change_type(rng: random.Random, doc: Any) -> str:
    path, parent, key = rng.choice(_places(doc))
    parent[key] = copy.deepcopy(rng.choice(TYPES))
    return f"type of {_text(path)}"


def wrong_unit(rng: random.Random, doc: Any) -> str:
    spots = [p for p in _places(doc) if isinstance(p[1][p[2]], str) and re.match(r"^\s*[\d.]", p[1][p[2]])]
    path, parent, key = rng.choice(spots or _places(doc))
    parent[key] = rng.choice(UNITS)
    return f"unit of {_text(path)}"


def bad_number(rng: random.Random, doc: Any) -> str:
    spots = [p for p in _places(doc) if isinstance(p[1][p[2]], (int, float, str)) and not isinstance(p[1][p[2]], bool)]
    path, parent, key = rng.choice(spots or _places(doc))
    value = rng.choice(NUMBERS)
    old = parent[key]
    if isinstance(old, str) and rng.random() < 0.5:  # keep the unit, change the number
        m = re.match(r"^\s*[-+\d.eE]+\s*(.*)$", old)
        if m and m.group(1) and isinstance(value, (int, float)):
            value = f"{value} {m.group(1)}"
    parent[key] = value
    return f"number at {_text(path)}"


def misspell_key(rng: random.Random, doc: Any) -> str:
    path, parent, key = rng.choice([p for p in _places(doc) if isinstance(p[1], dict)])
    new = _typo(rng, key)
    items = list(parent.items())
    parent.clear()
    for k, v in items:
        parent[new if k == key else k] = v
    return f"misspell {_text(path)} as {new!r}"


#: Values for the keys issue 29 and 28 added: a platform profile's name, its compute model, the HBM capacity,
#: the LLM builder's sequence parallelism, virtual stages and gradient reduction.
PLATFORM_VALUES: dict[tuple, tuple] = {
    ("npu", "profile"): ("a100-sxm-80gb", "h100-sxm", "no-such-gpu", "../../etc/passwd", "x.yaml", 7, None, [1]),
    ("npu", "hbm_capacity"): ("80 GiB", "1 KiB", "0 GiB", -1, "1e300 GiB", "80 GB/s", True),
    ("npu", "compute_model", "gemm_efficiency"): (0.9, 1e-300, 0, -1, 2, "fast", float("nan")),
    ("npu", "compute_model", "kernel_overhead"): ("5 us", "-3 us", "3 s", "5 GB", 0),
    ("npu", "compute_model", "sms"): (108, 0, -4, 1.5, 10**12),
    ("workload", "args", "sequence_parallel"): (True, False, "yes", 2),
    ("workload", "args", "virtual_stages"): (1, 2, 3, 0, -1, 1.5, 10**9),
    ("workload", "args", "overlap_grad_reduce"): (True, False, None, "no"),
}


def platform_key(rng: random.Random, doc: Any) -> str:
    """Set one of ``PLATFORM_VALUES``'s keys (creating the sections it needs) to one of its values."""
    path = rng.choice(sorted(PLATFORM_VALUES, key=str))
    node = doc
    for k in path[:-1]:
        if not isinstance(node, dict):
            return "nothing (not a mapping)"
        node = node.setdefault(k, {})
    if not isinstance(node, dict):
        return "nothing (not a mapping)"
    node[path[-1]] = rng.choice(PLATFORM_VALUES[path])
    return f"platform key {_text(path)} = {node[path[-1]]!r}"


def _text(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


DOC_MUTATIONS: dict[str, Callable[[random.Random, Any], str]] = {
    "delete_key": delete_key, "change_type": change_type, "wrong_unit": wrong_unit, "bad_number": bad_number,
    "misspell_key": misspell_key, "platform_key": platform_key,
}


# ---------------------------------------------------------------- mutations of the text

def _key_lines(text: str) -> list[int]:
    return [i for i, ln in enumerate(text.splitlines()) if re.match(r"^\s*[A-Za-z_]\w*:", ln)]


def duplicate_key(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    i = rng.choice(_key_lines(text))
    lines.insert(i + 1, lines[i])
    return "\n".join(lines) + "\n", f"duplicate line {i + 1}"


def deep_nesting(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    i = rng.choice(_key_lines(text))
    depth = rng.choice((20, 40, 200, 5000))
    opener, closer = rng.choice((("[", "]"), ("{a: ", "}")))
    key = lines[i].split(":", 1)[0]
    lines[i] = f"{key}: {opener * depth}1{closer * depth}"
    return "\n".join(lines) + "\n", f"nest {depth} deep at line {i + 1}"


def aliases(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    i = rng.choice(_key_lines(text))
    key = lines[i].split(":", 1)[0]
    if rng.random() < 0.5:  # a billion laughs, referenced from a random key
        levels = rng.choice((3, 6, 9))
        laughs = ["sweep:", '  l0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        laughs += [f"  l{j}: &a{j} [" + ",".join([f"*a{j - 1}"] * 10) + "]" for j in range(1, levels)]
        lines[i] = f"{key}: *a{levels - 1}"
        return "\n".join(laughs + lines) + "\n", f"{levels} nested aliases at line {i + 1}"
    if rng.random() < 0.5:  # an alias to its own anchor
        lines[i] = f"{key}: &self [1, *self]"
        return "\n".join(lines) + "\n", f"recursive alias at line {i + 1}"
    j = rng.choice(_key_lines(text))  # one value reused elsewhere, as a user would
    src = lines[j].split(":", 1)
    if not src[1].strip():
        return text, "no-op"
    lines[j] = f"{src[0]}: &v {src[1].strip()}"
    lines[i] = f"{key}: *v" if j < i else lines[i]
    return "\n".join(lines) + "\n", f"alias of line {j + 1} at line {i + 1}"


def cut_short(rng: random.Random, text: str) -> tuple[str, str]:
    n = rng.randrange(len(text))
    return text[:n], f"cut at character {n}"


def garble(rng: random.Random, text: str) -> tuple[str, str]:
    n = rng.randrange(len(text))
    junk = rng.choice(("\t", ":", "- ", "{", "]", "&", "*", "!!python/object:os.system ", "\x00", "%YAML 9\n", "'"))
    return text[:n] + junk + text[n:], f"insert {junk!r} at character {n}"


TEXT_MUTATIONS: dict[str, Callable[[random.Random, str], tuple[str, str]]] = {
    "duplicate_key": duplicate_key, "deep_nesting": deep_nesting, "aliases": aliases, "cut_short": cut_short,
    "garble": garble,
}
KINDS = tuple(DOC_MUTATIONS) + tuple(TEXT_MUTATIONS)


# ---------------------------------------------------------------- running

@dataclass
class Tally:
    """Per kind of mutation: how many were valid (exit 0), rejected (exit 2, one line) and findings."""

    counts: Counter = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def table(self) -> str:
        rows = ["| mutation | runs | valid (exit 0) | rejected (exit 2, one line) | findings |",
                "|---|---|---|---|---|"]
        for kind in KINDS + ("total",):
            c = [self.counts[(k, o)] for k in (KINDS if kind == "total" else (kind,))
                 for o in ("valid", "rejected", "finding")]
            v, r, f = (sum(c[0::3]), sum(c[1::3]), sum(c[2::3]))
            rows.append(f"| {kind} | {v + r + f} | {v} | {r} | {f} |")
        return "\n".join(rows)


def mutate(rng: random.Random, text: str, kind: str) -> tuple[str, str]:
    """The mutated text and a description of the mutation."""
    if kind in TEXT_MUTATIONS:
        return TEXT_MUTATIONS[kind](rng, text)
    doc = yaml.load(text, Loader=_LOADER)
    what = DOC_MUTATIONS[kind](rng, doc)
    return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True), what


class TookTooLong(BaseException):
    """Raised by the alarm inside a validation that hangs (a BaseException, so the CLI does not catch it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Interrupt the block after ``seconds`` (SIGALRM, where there is one): a hang is a finding, not a stuck run."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def alarm(*_: Any) -> None:
        raise TookTooLong(f"more than {seconds:g} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check(path: Path, main: Callable[[list[str]], int], limit_s: float = 20.0) -> tuple[str, str]:
    """Run ``codesign validate path`` in-process; (outcome, detail): valid, rejected or finding."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with time_limit(limit_s), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["validate", str(path)])
    except BaseException as e:  # noqa: BLE001 - the finding is that anything escaped
        return "finding", f"raised {type(e).__name__}: {str(e)[:200]}"
    lines = err.getvalue().splitlines()
    if "Traceback" in err.getvalue() or "Traceback" in out.getvalue():
        return "finding", "traceback: " + err.getvalue()[-300:]
    if rc == 0:
        bad = [ln for ln in lines if not WARNING_LINE.match(ln)]
        return ("finding", f"exit 0 with stderr {bad[:2]}") if bad else ("valid", "")
    if rc == 2:
        # the warnings the file earned before its error (each one located line) stay; then exactly one error
        errors = [ln for ln in lines if not WARNING_LINE.match(ln)]
        if len(errors) != 1 or errors[-1] != lines[-1] or not lines[-1].startswith("codesign: error: "):
            return "finding", f"exit 2 with {len(lines)} stderr lines: {lines[:3]}"
        msg = lines[-1][len("codesign: error: "):]
        return ("rejected", msg) if ERROR_LINE.match(msg) else ("finding", f"exit 2, unlocated: {msg[:200]}")
    return "finding", f"exit {rc}: {err.getvalue()[-300:]}"


def fuzz(mutations: int, seed: int = 1, paper: int = 12) -> Tally:
    """Run ``mutations`` mutations, cycling through the kinds, each on a random shipped problem."""
    from codesign.cli import main

    rng = random.Random(seed)
    texts = sources(rng, paper)
    names = sorted(texts)
    tally = Tally()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="codesign-fuzz-") as tmp:
        for n in range(mutations):
            kind = KINDS[n % len(KINDS)]
            name = rng.choice(names)
            text, what = mutate(rng, texts[name], kind)
            path = Path(tmp) / f"m{n}.yaml"
            path.write_text(text)
            outcome, detail = check(path, main)
            tally.counts[(kind, outcome)] += 1
            if outcome == "finding":
                keep = Path(tmp).parent / f"codesign-fuzz-finding-{seed}-{n}.yaml"
                keep.write_text(text)
                tally.findings.append(f"#{n} {kind} on {name} ({what}): {detail} [kept as {keep}]")
    tally.seconds = time.perf_counter() - t0
    return tally


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutations", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--paper", type=int, default=12, help="problems/paper/*.yaml files sampled")
    a = ap.parse_args()
    t = fuzz(a.mutations, a.seed, a.paper)
    print(f"{t.total} mutations (seed {a.seed}) of {len(sources(random.Random(a.seed), a.paper))} shipped problems "
          f"in {t.seconds:.1f} s ({1e3 * t.seconds / max(t.total, 1):.1f} ms each)")
    print()
    print(t.table())
    for f in t.findings:
        print(f)
    return 1 if t.findings else 0


if __name__ == "__main__":
    sys.exit(main())
