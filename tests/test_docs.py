"""The documentation stands alone: the repository cites its own docs/ pages, never notes that live outside
it, and every relative link in docs/*.md reaches a file."""
from __future__ import annotations

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
