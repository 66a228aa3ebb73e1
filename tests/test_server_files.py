"""The Data page's server-side data folder (FDP_DATA_DIR): big files read on the server in
chunks with a progress bar; the browser can only pick a name from the folder's listing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.data.loading import load_curves
from fdp_core.errors import DataError
from fdp_core.engines.stream import load_with_progress

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(500, 9)), columns=[str(t) for t in np.linspace(0, 1, 9)])
    frame.insert(0, "id", [f"c{i}" for i in range(500)])
    frame.to_parquet(tmp_path / "big.parquet", row_group_size=100)
    frame.to_csv(tmp_path / "big.csv", index=False)
    (tmp_path / "sub").mkdir()
    frame.to_csv(tmp_path / "sub" / "hidden.csv", index=False)
    (tmp_path / "notes.md").write_text("not data")
    monkeypatch.setenv("FDP_DATA_DIR", str(tmp_path))
    return tmp_path


def test_listing_and_resolve_stay_inside_the_folder(folder):
    from fdp_ui import server_files

    assert server_files.allowed_files() == ["big.csv", "big.parquet"]
    assert server_files.resolve("big.csv") == folder.resolve() / "big.csv"
    for name in ("sub/hidden.csv", "../big.csv", "notes.md", "/etc/passwd"):
        with pytest.raises(DataError, match="not one of the files"):
            server_files.resolve(name)


@pytest.mark.parametrize("name", ["big.csv", "big.parquet"])
def test_load_with_progress_equals_load_curves(folder, name):
    seen = []
    fd = load_with_progress(folder / name, progress=lambda f, rows: seen.append((f, rows)), chunk_rows=64)
    expected = load_curves(folder / name)
    np.testing.assert_array_equal(fd.data_matrix, expected.data_matrix)
    assert list(fd.metadata["id"]) == list(expected.metadata["id"])
    assert fd.report.n_read == expected.report.n_read
    assert seen[-1] == (1.0, 500) and len(seen) > 2
    assert all(0.0 <= f <= 1.0 for f, _ in seen)


def test_data_page_loads_a_server_file(folder):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.radio(key="data_source").set_value("server file").run()
    at.selectbox(key="data_server_file").set_value("big.parquet").run()
    at.button(key="data_server_load").click().run()
    assert not at.exception
    assert not at.error
    assert next(m.value for m in at.metric if m.label == "curves n") == "500"


def test_no_server_source_without_the_variable(monkeypatch):
    monkeypatch.delenv("FDP_DATA_DIR", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert "server file" not in at.radio(key="data_source").options
