"""The bundle's release.py and release.ipynb re-run the release on a data file (fresh noise,
through a ledger) and draw the figures: the script is run, the notebook validated and
executed on the example data."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core import export, rerun
from fdp_core.accounting import Ledger
from fdp_core.data import load_curves
from fdp_core.mean import MeanSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    fd = load_curves(EXAMPLE)
    ledger = Ledger(3.0, 1e-4)
    release = export.commit_mean(ledger, fd, MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-5),
                                 label="example mean", data_label="upload: example_curves.csv")
    folder = export.export_folder(release, tmp_path_factory.mktemp("bundle"), ledger)
    return release, folder


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_bundle_lists_the_script_and_the_notebook(bundle):
    release, folder = bundle
    assert {"release.py", "release.ipynb"} <= set(export.BUNDLE_FILES)
    assert (folder / "release.py").is_file() and (folder / "release.ipynb").is_file()
    assert "example_curves.csv" in (folder / "release.py").read_text()  # the data file it was made from


def test_script_reruns_the_release_with_fresh_noise(bundle, tmp_path):
    release, folder = bundle
    out = tmp_path / "rerun"
    done = subprocess.run([sys.executable, str(folder / "release.py"), str(EXAMPLE), "--out", str(out)],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "charged epsilon" in done.stdout
    new = json.loads((out / "release.json").read_text())
    assert new["mechanism"] == release.record["mechanism"] and new["settings"] == release.record["settings"]
    assert new["charged"] == release.record["charged"]  # same settings, same price
    old_values = release.table["value"].to_numpy()
    new_values = pd.read_csv(out / "release.csv")["value"].to_numpy()
    assert old_values.shape == new_values.shape and not np.allclose(old_values, new_values)  # fresh noise
    for name in ("release_figure.html", "power_figure.html", "tradeoff_figure.html", "report.html"):
        assert (out / name).stat().st_size > 1000, name
    ledger = json.loads((out / "ledger.json").read_text())
    assert len(ledger["entries"]) == 1  # charged to a ledger before the noise was drawn


def test_script_refuses_bad_data_in_one_line(bundle, tmp_path):
    _, folder = bundle
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    done = subprocess.run([sys.executable, str(folder / "release.py"), str(bad), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1


def test_notebook_is_valid_nbformat(bundle):
    nbformat = pytest.importorskip("nbformat")
    _, folder = bundle
    notebook = nbformat.read(folder / "release.ipynb", as_version=4)
    nbformat.validate(notebook)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "export.replay(config, DATA_PATH)" in code and "--ledger" in code
    compile(code, "release.ipynb", "exec")


def test_notebook_executes_on_the_example_data(bundle, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    _, folder = bundle
    notebook = nbformat.read(folder / "release.ipynb", as_version=4)
    notebook.cells[1].source = notebook.cells[1].source.replace("'example_curves.csv'", repr(str(EXAMPLE)))
    work = tmp_path / "nb"
    work.mkdir()
    (work / "config.yaml").write_bytes((folder / "config.yaml").read_bytes())
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])  # the kernel inherits it
    start = time.monotonic()
    nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}}).execute()
    elapsed = time.monotonic() - start
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "charged epsilon" in text and "differential" in text.lower()
    figures = [o for o in outputs if o.output_type == "display_data" and "application/vnd.plotly.v1+json" in o.data]
    assert len(figures) == 3  # release, trade-off, power
    assert (work / "release_rerun" / "release.json").is_file()
    assert elapsed < 30, f"notebook took {elapsed:.1f} s"


def test_default_data_path_from_the_label():
    assert rerun._default_data_path("upload: weather.csv (columns station, day, temp as id, t, value)") == \
        "weather.csv"
    assert rerun._default_data_path("built-in example (example_curves.csv)") == "YOUR_DATA.csv"
    assert rerun._default_data_path(None) == "YOUR_DATA.csv"
