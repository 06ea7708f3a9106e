"""The documentation stands alone: the repository cites its own docs/ pages, never notes that live outside
it, and every relative link in docs/*.md reaches a file."""
from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: Names of notes outside the repository (spelled in pieces so this file does not cite them itself).
OUTSIDE = [name.encode() for name in ("PAPER" + ".md", "ASTRA_SIM_1_0_SEMANTICS" + ".md", "DESIGN" + ".md",
                                      "STYLE" + ".md", ".." + "/shared", "shared" + "/reference")]

#: Being rewritten by another change, which moves their citations to docs/ itself; drop each entry once
#: it no longer cites an outside note (a directory entry ends with "/").
PENDING: tuple[str, ...] = ()


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.decode().split("\0") if p]


def _pending(path: str) -> bool:
    return any(path.startswith(p) if p.endswith("/") else path == p for p in PENDING)


def test_no_file_cites_notes_outside_the_repository():
    found = []
    for rel in _tracked():
        if _pending(rel):
            continue
        path = ROOT / rel
        if not path.is_file():        # deleted in the work tree, not yet committed
            continue
        data = path.read_bytes()
        for name in OUTSIDE:
            if name in data:
                line = data[:data.index(name)].count(b"\n") + 1
                found.append(f"{rel}:{line}: {name.decode()}")
    assert not found, "cite docs/paper.md, docs/astra-sim-1.0.md or docs/architecture.md instead:\n" + \
        "\n".join(found)


_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)


def _links(text: str) -> list[str]:
    text = _CODE.sub("", _FENCE.sub("", text))
    return _LINK.findall(text) + _REFERENCE.findall(text)


def test_links_helper_finds_inline_image_and_reference_links_outside_code():
    text = ("See [a](a.md#x) and ![pic](figures/p.png \"title\").\n`[not](code.md)`\n"
            "```\n[not](fenced.md)\n```\n[ref]: ../b.md\n[web](https://example.org)\n")
    assert _links(text) == ["a.md#x", "figures/p.png", "https://example.org", "../b.md"]


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_relative_links_in_docs_resolve_to_files(page: Path):
    broken = []
    for target in _links(page.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue                  # a URL (http:, mailto:) or an anchor in the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.is_file() or ROOT not in path.parents:
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to no file in the repository: {broken}"


# ---------------------------------------------------------------- what the docs show is what the program prints

import shown as _shown  # noqa: E402  (tests/shown.py: the convention and the runner, shared with test_readme)

PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
SHOWN = [s for page in PAGES for s in _shown.shown_outputs(page)]
#: The first words of lines codesign's reports print: an indented block of them shows a command's output, so it
#: must name its command (``<!-- output of: ... -->``) and be checked.
REPORT_LINES = re.compile(r"^    (problem {9}\S|design {10}\S|iteration time  \S|solver {10}(optimal|time_limit|"
                          r"feasible)|replayed {8}\S|Pareto front of |ASTRA-sim 1\.0 mode: )", re.M)


@pytest.mark.parametrize("case", SHOWN, ids=lambda s: f"{s.page}:{s.line}")
def test_each_command_a_page_shows_prints_what_it_shows(case):
    assert case.lines, f"{case.page}:{case.line}: the marked command shows no output block"
    problem = _shown.mismatch(case)
    assert problem is None, problem


def test_every_block_of_report_lines_names_its_command():
    unmarked = []
    for page in PAGES:
        text = page.read_text()
        marked = {s.line for s in _shown.shown_outputs(page)}
        for m in REPORT_LINES.finditer(text):
            line = text[:m.start()].count("\n") + 1
            above = text[:m.start()].split("\n")
            # the marker stands above the block, with at most blank lines and the block's own lines between
            k = len(above) - 2
            while k >= 0 and (not above[k].strip() or above[k].startswith("    ")):
                k -= 1
            if k < 0 or (k + 1) not in marked:
                unmarked.append(f"{page.relative_to(ROOT)}:{line}")
    assert not unmarked, "shown output without '<!-- output of: COMMAND -->' above it: " + ", ".join(unmarked)


def test_the_comparison_catches_a_figure_that_is_not_printed():
    ok = _shown.Shown("t", 1, "codesign validate problems/quickstart.yaml",
                      ("...quickstart.yaml: valid. mlp4: 4 layers",))
    wrong = dataclasses.replace(ok, lines=("...quickstart.yaml: valid. mlp4: 5 layers",))
    assert _shown.mismatch(ok) is None
    assert "prints no line" in _shown.mismatch(wrong)
    assert _shown.pattern("a ... b").match("a 12.3 s b c") and not _shown.pattern("a 1 b").match("a 12 b")


def test_the_shipped_astra_sim_samples_are_astra_sims_own():
    shipped = sorted((ROOT / "problems" / "astra").glob("network/*.json")) + \
        sorted((ROOT / "problems" / "astra").glob("system/*.txt"))
    assert {p.name for p in shipped} >= {"sample_Torus3D.json", "sample_torus_sys.txt"}
    for p in shipped:
        assert p.read_bytes() == (ROOT / "tests" / "data" / "astra" / p.parent.name / p.name).read_bytes(), p
