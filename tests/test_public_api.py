"""fdp_core's public API (fdp_core/__init__.py): every name resolves, ``__all__`` lists them all,
and every kind of release has its entry points there (issue 27)."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import fdp_core

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(fdp_core._PUBLIC))
def test_every_public_name_resolves_to_its_module(name):
    value = getattr(fdp_core, name)
    assert value is getattr(import_module(f"fdp_core.{fdp_core._PUBLIC[name]}"), name)


def test_all_is_sorted_and_complete():
    assert fdp_core.__all__ == sorted(fdp_core.__all__)
    assert set(fdp_core.__all__) == set(fdp_core._PUBLIC) | {"__version__"}
    assert len(fdp_core.__all__) == len(fdp_core._PUBLIC) + 1 and dir(fdp_core) == fdp_core.__all__


def _entry_points() -> set[str]:
    """Every release's planner and every commit in the library: plan_*_release and commit_*."""
    found = set()
    for path in [*(ROOT / "fdp_core" / "releases").glob("*.py"), *(ROOT / "fdp_core" / "publish").glob("*.py"),
                 ROOT / "fdp_core" / "explore" / "private_selection.py"]:
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            if node.name.startswith("commit_") or (node.name.startswith("plan_") and node.name.endswith("_release")):
                found.add(node.name)
    return found


def test_every_kind_of_release_is_public():
    """Mean, density, components, covariance, regression, counts, selection, sparse, synthetic, bands."""
    entry_points = _entry_points()
    assert {"plan_mean_release", "commit_covariance", "commit_selection", "plan_sparse_release"} <= entry_points
    assert not entry_points - set(fdp_core.__all__), "add to fdp_core._PUBLIC: " + ", ".join(
        sorted(entry_points - set(fdp_core.__all__)))
    for name in ("load_counts", "synthetic_curves", "private_pca", "plan_kde_release", "read_long"):
        assert name in fdp_core.__all__


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'plan_everything'"):
        getattr(fdp_core, "plan_everything")


def test_importing_fdp_core_imports_no_release_module():
    """The API is lazy: ``import fdp_core`` stays cheap (scripts set BLAS threads before numpy loads)."""
    probe = ("import sys, fdp_core\n"
             "print(sorted(m for m in sys.modules if m.startswith('fdp_core.')), 'numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] False"
