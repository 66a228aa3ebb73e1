"""Every public name of fdp_core is documented in numpydoc with a runnable example (issue 44).

The examples themselves run as doctests (pyproject's --doctest-modules over fdp_core); this file
checks that each public name has them, and that docs/API.md is the current reference.
"""

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import fdp_core

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import make_api  # noqa: E402

NAMES = make_api.public_names()


@pytest.mark.parametrize("name", NAMES)
def test_public_name_has_numpydoc_with_an_example(name):
    if name in make_api.CONSTANTS:
        return  # a dict: described in docs/API.md (it cannot carry its own docstring)
    obj = getattr(fdp_core, name)
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc and ">>>" in doc, f"{name}: no Examples section with a doctest"
    if inspect.isclass(obj) and issubclass(obj, Exception):
        return
    if inspect.isclass(obj):
        assert "Parameters\n----------" in doc or "Attributes\n----------" in doc or "Built by" in doc, (
            f"{name}: no Parameters or Attributes section")
    elif len(inspect.signature(obj).parameters):
        assert "Parameters\n----------" in doc, f"{name}: no Parameters section"


def test_every_public_name_has_a_place_in_the_reference():
    grouped = {n for _, names in make_api.GROUPS for n in names}
    assert set(NAMES) <= grouped, sorted(set(NAMES) - grouped)


def test_docs_api_md_is_current():
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "make_api.py"), "--check"], cwd=ROOT)
    assert done.returncode == 0, "docs/API.md is out of date: run python docs/make_api.py"
