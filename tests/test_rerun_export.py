"""The bundle's release.py and release.ipynb verify the release against its config and the data
(drawing nothing); a new release only with --new-release, charged to a persistent ledger. The
script is run, the notebook validated and executed on the example data; README.txt is checked."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.publish import export, rerun
from fdp_core.budget.accounting import Ledger
from fdp_core.data.loading import load_curves
from fdp_core.releases.mean import MeanSettings

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


def _script(folder, *args, env=None):
    return subprocess.run([sys.executable, str(folder / "release.py"), *map(str, args)], capture_output=True,
                          text=True, env=env or _env(), timeout=120, cwd=folder)


def test_script_verifies_by_default_and_draws_nothing(bundle, tmp_path):
    release, folder = bundle
    before = sorted(p.name for p in folder.iterdir())
    done = _script(folder, EXAMPLE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "verified"
    for what in ("sensitivity", "unit noise scale", "charged epsilon"):
        assert what in done.stdout
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written, nothing drawn


def test_script_reports_a_mismatch_on_other_data(bundle, tmp_path):
    _, folder = bundle
    other = tmp_path / "fewer.csv"
    text = EXAMPLE.read_text().splitlines()
    other.write_text("\n".join(text[:-5]) + "\n")  # five persons fewer: another n, another sensitivity
    done = _script(folder, other)
    assert done.returncode == 1, done.stderr
    assert "MISMATCH n (persons)" in done.stdout and "NOT verified" in done.stdout


def test_script_says_how_to_import_fdp_core(bundle, tmp_path):
    _, folder = bundle
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-I", str(folder / "release.py"), str(EXAMPLE)], capture_output=True,
                          text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "pip install -e ." in done.stderr and "PYTHONPATH" in done.stderr


def test_new_release_only_on_request_and_through_a_persistent_ledger(bundle, tmp_path):
    release, folder = bundle
    assert _script(folder, EXAMPLE, "--ledger", "x").returncode == 2  # a ledger without --new-release: refused
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    out = tmp_path / "rerun"
    done = _script(folder, EXAMPLE, "--new-release", "--ledger", url, "--out", out)
    assert done.returncode == 0, done.stderr
    new = json.loads((out / "release.json").read_text())
    assert new["mechanism"] == release.record["mechanism"] and new["settings"] == release.record["settings"]
    assert new["charged"] == release.record["charged"]  # same settings, same price
    old_values = release.table["value"].to_numpy()
    new_values = pd.read_csv(out / "release.csv")["value"].to_numpy()
    assert old_values.shape == new_values.shape and not np.allclose(old_values, new_values)  # fresh noise
    import sqlite3

    with sqlite3.connect(tmp_path / "ledger.sqlite3") as con:
        assert new["id"] in "\n".join(con.iterdump())  # recorded in the persistent ledger


def test_readme_says_what_each_file_is_and_how_to_verify(bundle):
    _, folder = bundle
    text = (folder / "README.txt").read_text()
    for name in export.BUNDLE_FILES:
        assert f"  {name}" in text, name
    assert "analyst_view.json" in text and "NEVER to be published" in text
    assert "python release.py DATA_FILE" in text and "pip install -e ." in text and "--new-release" in text


def test_script_refuses_bad_data_in_one_line(bundle, tmp_path):
    _, folder = bundle
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    done = _script(folder, bad)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1


def test_notebook_is_valid_nbformat(bundle):
    nbformat = pytest.importorskip("nbformat")
    _, folder = bundle
    notebook = nbformat.read(folder / "release.ipynb", as_version=4)
    nbformat.validate(notebook)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "verify_release(" in code and "NEW_RELEASE = False" in code and "--ledger" in code
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
    for name in ("config.yaml", "release.json"):
        (work / name).write_bytes((folder / name).read_bytes())
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])  # the kernel inherits it
    start = time.monotonic()
    nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}}).execute()
    elapsed = time.monotonic() - start
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "\nverified" in text and "no new release made" in text
    assert not [o for o in outputs if o.output_type == "display_data"]  # draws nothing
    assert not (work / "release_rerun").exists()
    assert elapsed < 30, f"notebook took {elapsed:.1f} s"


def test_default_data_path_from_the_label():
    assert rerun._default_data_path("upload: weather.csv (columns station, day, temp as id, t, value)") == \
        "weather.csv"
    assert rerun._default_data_path("built-in example (example_curves.csv)") == "YOUR_DATA.csv"
    assert rerun._default_data_path(None) == "YOUR_DATA.csv"


def test_notebook_outside_its_folder_says_so_in_one_line(bundle, tmp_path, monkeypatch):
    """Issue 38: run away from config.yaml and release.json, the notebook's check cell stops with one sentence
    naming the missing files (no traceback through verify_release)."""
    nbformat = pytest.importorskip("nbformat")
    _, folder = bundle
    notebook = nbformat.read(folder / "release.ipynb", as_version=4)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    monkeypatch.chdir(tmp_path)  # an empty folder
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    with pytest.raises(SystemExit) as stop:
        exec(compile(code, "release.ipynb", "exec"), {"__name__": "__notebook__"})
    assert "config.yaml, release.json not found" in str(stop.value) and "bundle's folder" in str(stop.value)
