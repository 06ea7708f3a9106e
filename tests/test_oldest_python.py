"""The oldest Python the README names (``requires-python``) has every module codesign's dependencies import.

highspy (1.11-1.16) imports ``typing_extensions`` on Pythons below 3.11 (``Self``) but declares it only below 3.10,
so on Python 3.10 ``import highspy`` failed (ModuleNotFoundError) and nothing could be solved. codesign declares
what its dependencies import without declaring; ``.ci/run`` also installs and solves on the oldest Python.
"""
from __future__ import annotations

import ast
import re
from importlib.util import find_spec
from pathlib import Path

import pytest
from conftest import ROOT

tomllib = pytest.importorskip("tomllib")  # (Python 3.11 on)
pytest.importorskip("packaging.requirements")
from packaging.markers import Marker  # noqa: E402
from packaging.requirements import Requirement  # noqa: E402


def _guarded_imports(source: str) -> dict[str, tuple[int, int]]:
    """{module: (major, minor)} for each ``if sys.version_info >= (major, minor): ... else: import module``."""
    out: dict[str, tuple[int, int]] = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and ast.unparse(node.test.left) == "sys.version_info" and isinstance(node.test.ops[0], ast.GtE)):
            continue
        version = ast.literal_eval(node.test.comparators[0])
        for sub in node.orelse:
            if isinstance(sub, ast.ImportFrom) and sub.module:
                out[sub.module.split(".")[0]] = tuple(version[:2])
            elif isinstance(sub, ast.Import):
                out.update({a.name.split(".")[0]: tuple(version[:2]) for a in sub.names})
    return out


def test_highspys_version_guarded_imports_are_declared_for_the_oldest_python() -> None:
    spec = find_spec("highspy.highs")
    if spec is None or spec.origin is None:
        pytest.skip("highspy has no highs.py module to read")
    guarded = _guarded_imports(Path(spec.origin).read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    oldest = re.fullmatch(r">=\s*(\d+)\.(\d+)", project["requires-python"])
    assert oldest, project["requires-python"]
    declared = [Requirement(r) for r in project["dependencies"]]
    for module, since in guarded.items():
        for minor in range(int(oldest[2]), since[1]):  # every Python we admit that takes the else branch
            env = {"python_version": f"{oldest[1]}.{minor}", "python_full_version": f"{oldest[1]}.{minor}.0"}
            names = {r.name.replace("-", "_").lower() for r in declared
                     if r.marker is None or Marker(str(r.marker)).evaluate(env)}
            assert module.lower() in names, (f"highspy imports {module} on Python {oldest[1]}.{minor}, which "
                                             "pyproject.toml admits, and codesign does not declare it there")
