"""Issue 39: a wide file whose grid columns are not ascending is sorted, not refused.

The grid is the file's public column headers, so reading its columns in another order reveals
nothing: every wide reader (the pyarrow CSV path, the cell-by-cell parser, Parquet, the stream
and Dask engines, the app's upload) takes the columns in ascending grid order through one
helper (layouts.ascending_grid, Layout.grid_columns), and the release equals the ascending
file's bit for bit with the same seed. Duplicate grid points are still refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_publishable import _check_pair, _curves, _write, GRID  # noqa: F401

from fdp_core.cli import main
from fdp_core.data import loading
from fdp_core.data.layouts import ascending_grid, read_layout
from fdp_core.data.loading import load_curves
from fdp_core.errors import DataError

APP = str(Path(__file__).resolve().parents[1] / "app.py")
ORDERS = {"descending": lambda m: np.arange(m)[::-1], "shuffled": lambda m: np.random.default_rng(4).permutation(m)}


def _frame(n=40, m=9, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 2.0, m) ** 1.5  # uneven: a wrong permutation changes the weights too
    X = 0.5 + 0.3 * np.sin(np.outer(rng.normal(size=n), t)) + 0.1 * rng.normal(size=(n, m))
    X[3, 4] = np.nan  # an interior gap (kept by interpolate, dropped by drop)
    frame = pd.DataFrame(X, columns=[repr(float(x)) for x in t])
    frame.insert(0, "subject", [f"p{i // 2}" for i in range(n)])
    frame.insert(1, "site", rng.choice(["a", "b"], n))
    return frame


def _reordered(frame: pd.DataFrame, order: np.ndarray) -> pd.DataFrame:
    grid = list(frame.columns[2:])
    return frame[list(frame.columns[:2]) + [grid[k] for k in order]]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("descending")
    frame = _frame()
    out = {}
    for label, order in {"ascending": np.arange(frame.shape[1] - 2), **{k: f(frame.shape[1] - 2)
                                                                         for k, f in ORDERS.items()}}.items():
        reordered = _reordered(frame, order)
        reordered.to_csv(root / f"{label}.csv", index=False)
        reordered.to_parquet(root / f"{label}.parquet", index=False, row_group_size=16)
        out[label] = root / label
    return out


def _same(a, b):
    np.testing.assert_array_equal(a.grid_points, b.grid_points)
    np.testing.assert_array_equal(a.data_matrix, b.data_matrix)
    pd.testing.assert_frame_equal(a.metadata, b.metadata)
    assert (a.report.n_read, a.report.n_dropped, a.report.dropped_rows) == \
        (b.report.n_read, b.report.n_dropped, b.report.dropped_rows)


# --------------------------------------------------------------------------- the shared helper

def test_the_helper_sorts_and_keeps_an_ascending_grid_as_it_is():
    grid, order = ascending_grid(np.array([1.0, 0.5, 0.0]), ["1", "0.5", "0"], "f")
    assert grid.tolist() == [0.0, 0.5, 1.0] and order == (2, 1, 0)
    grid, order = ascending_grid(np.array([0.0, 2.0, 1.0]), ["0", "2", "1"], "f")
    assert grid.tolist() == [0.0, 1.0, 2.0] and order == (0, 2, 1)
    grid, order = ascending_grid(np.array([0.0, 1.0]), ["0", "1"], "f")
    assert order == ()  # the common case: no permutation at all
    layout = read_layout(["id", "x", "1", "0.5", "0"], "f", None)
    assert layout.grid.tolist() == [0.0, 0.5, 1.0] and layout.grid_columns == [4, 3, 2]
    assert read_layout(["id", "0", "1"], "f", None).grid_columns == [1, 2]


@pytest.mark.parametrize("raw,fragment", [
    (b"1,0.5,0.5\n1,2,3\n4,5,6\n", "duplicate grid points in the header (0.5)"),
    (b"2,1,0,1\n1,2,3,4\n4,5,6,7\n", "duplicate grid points in the header (1)"),
    (b"1,inf,0\n1,2,3\n4,5,6\n", "grid point headers must be finite numbers"),
])
def test_duplicates_and_non_finite_grids_are_still_refused_in_one_line(raw, fragment):
    for reader in (lambda: load_curves(raw, name="upload.csv"),
                   lambda: loading._from_rows(loading._csv_rows(raw.decode(), "upload.csv"), "upload.csv", "drop")):
        with pytest.raises(DataError) as info:
            reader()
        assert fragment in str(info.value) and "\n" not in str(info.value)


# --------------------------------------------------------------------------- every reader

@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("missing", ["drop", "interpolate"])
def test_every_loader_path_gives_the_ascending_files_curves(files, order, missing):
    expected = load_curves(files["ascending"].with_suffix(".csv"), missing=missing)
    assert not np.all(np.diff(pd.read_csv(files[order].with_suffix(".csv")).columns[2:].astype(float)) > 0)
    fast_csv = load_curves(files[order].with_suffix(".csv"), missing=missing)
    raw = files[order].with_suffix(".csv").read_bytes()
    slow_csv = loading._from_rows(loading._csv_rows(raw.decode(), "x"), "x", missing)  # the cell-by-cell parser
    parquet = load_curves(files[order].with_suffix(".parquet"), missing=missing)
    # Parquet grid columns stored as text go through the cell-by-cell parser too.
    text_parquet = files[order].parent / f"{order}_text.parquet"
    pd.read_parquet(files[order].with_suffix(".parquet")).astype(str).replace("nan", "").to_parquet(text_parquet)
    for got in (fast_csv, slow_csv, parquet, load_curves(text_parquet, missing=missing)):
        _same(expected, got)


def test_the_fast_path_reads_a_descending_file(files, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("the cell-by-cell parser was used")
    monkeypatch.setattr(loading, "_csv_rows", boom)
    assert load_curves(files["descending"].with_suffix(".csv")).m == 9


def test_a_bad_cell_in_a_descending_file_is_named_by_its_column():
    raw = b"id,1,0.5,0\na,1,2,3\nb,4,x,6\nc,1,1,2\n"
    with pytest.raises(DataError, match=r"row 3 has 1 non-numeric cell\(s\) \(column\(s\) 0.5\), e.g. 'x'"):
        load_curves(raw, name="upload.csv")


def test_a_repeated_descending_header_is_still_caught():
    raw = b"1,0.5,0\n1,2,3\n1,0.5,0\n4,5,7\n"
    with pytest.raises(DataError, match="row 3 repeats the header line"):
        load_curves(raw, name="upload.csv")


def test_a_transposed_file_with_a_descending_grid_is_recognised_and_sorted():
    raw = b"day,Halifax,Montreal\n3,1.0,2.5\n2,1.5,2.0\n1,2.0,1.0\n"
    assert loading.looks_transposed(raw)
    fd = load_curves(raw, transpose=True)
    np.testing.assert_array_equal(fd.grid_points, [1, 2, 3])
    np.testing.assert_array_equal(fd.data_matrix, [[2.0, 1.5, 1.0], [1.0, 2.0, 2.5]])
    assert not loading.looks_transposed(b"day,Halifax,Montreal\n3,1.0,2.5\n1,1.5,2.0\n2,2.0,1.0\n")  # no order


# --------------------------------------------------------------------------- releases, every engine

def _release(data: Path, out: Path, engine: str) -> tuple[dict, str]:
    args = ["release", "mean", "--preview", "--data", str(data), "--kernel", "matern52", "--rho", "0.2",
            "--epsilon", "1", "--value-range", "0,1.5", "--person-column", "subject", "--missing", "interpolate",
            "--seed", "11", "--engine", engine, "--chunk-rows", "16", "--out", str(out)]
    assert main(args) == 0
    record = json.loads((out / "release.json").read_text())
    record.pop("created_utc")
    return record, (out / "release.csv").read_text()


@pytest.mark.parametrize("engine", ["local", "stream", "dask"])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_release_from_a_descending_or_shuffled_file_equals_the_ascending_one(files, tmp_path, engine, suffix):
    if engine == "dask":
        pytest.importorskip("distributed")
    expected = _release(files["ascending"].with_suffix(suffix), tmp_path / "ascending", engine)
    for order in ORDERS:
        assert _release(files[order].with_suffix(suffix), tmp_path / order, engine) == expected, order


@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_the_neighbour_test_holds_on_descending_files(neighbour, tmp_path):
    """tests/test_publishable.py's neighbour test on the same D and D' written with a descending header."""
    meta, values = _curves()
    changed = values.copy()
    if neighbour == "clipped":
        changed[-1] = 5.0
    else:
        changed[-1, 3] = np.nan

    def descending(path, values):
        frame = pd.read_csv(_write(path, meta, values))
        return frame[list(frame.columns[:2]) + list(frame.columns[2:][::-1])].to_csv(path, index=False, na_rep="")

    pair = {"D": tmp_path / "D.csv", neighbour: tmp_path / "N.csv"}
    descending(pair["D"], values)
    descending(pair[neighbour], changed)

    def args_for(which):
        return ["release", "mean", "--preview", "--data", str(pair[which]), "--kernel", "matern52", "--rho", "0.2",
                "--epsilon", "1", "--value-range", "0,1", "--tau", "0.3", "--person-column", "subject",
                "--n-public", str(meta["subject"].nunique()), "--seed", "7"]
    _check_pair(tmp_path, args_for, neighbour, "n_dropped" if neighbour == "dropped" else "n_clipped")


# --------------------------------------------------------------------------- the app

def test_the_data_page_accepts_a_descending_upload(files):
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    raw = files["descending"].with_suffix(".csv").read_bytes()
    at.file_uploader(key="data_upload").set_value(("descending.csv", raw, "text/csv")).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    fd = at.session_state["dataset"].fd
    _same(load_curves(files["ascending"].with_suffix(".csv")), fd)
