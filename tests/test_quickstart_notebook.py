"""examples/quickstart.ipynb runs as a newcomer would run it, in at most 15 lines of fdp calls (issue 44)."""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"


def _code(notebook) -> str:
    return "\n".join(c.source for c in notebook.cells if c.cell_type == "code")


def test_the_newcomers_task_takes_at_most_15_lines_of_fdp_calls():
    nbformat = pytest.importorskip("nbformat")
    code = _code(nbformat.read(NOTEBOOK, as_version=4))
    # a statement that calls fdp (continuation lines of one call count once)
    statements = [line for line in code.splitlines() if re.search(r"\bfdp\.|\.fit\(|\.quote\(", line)]
    assert 0 < len(statements) <= 15, statements


def test_quickstart_executes_on_dti(shared_data, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("FDP_DTI", str(shared_data / "dti_cca.csv"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    charge = float(re.search(r"will charge epsilon ([0-9.]+)", text).group(1))
    assert 1.0 < charge < 1.2  # the exact discrete noise's charge for epsilon 1
    assert "CommittedRelease(kind=mean" in text and "CommittedRelease(kind=kde" in text
    assert "n = 142" in text and "(2, 93)" in text
    spent = float(re.search(r"spent epsilon ([0-9.]+) of 4", text).group(1))
    assert spent > 3.0  # three releases of epsilon 1, each charged a little more
