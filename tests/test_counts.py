"""Densities from counts (METHODS.md 15): loader, one individual per count unit, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.cli import main
from fdp_core.data.counts import count_points, load_counts
from fdp_core.errors import DataError
from fdp_core.releases.kde import KdeSettings, plan_kde_release

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "data" / "example_counts.csv"


def test_example_counts_expand_to_one_value_per_individual():
    table = pd.read_csv(COUNTS)
    points = load_counts(COUNTS)
    assert points.shape == (int(table["count"].sum()), 1)
    assert table["value"].tolist() == list(range(101))
    np.testing.assert_array_equal(np.bincount(points[:, 0].astype(int), minlength=101), table["count"])


def test_density_from_counts_equals_density_of_the_expanded_values():
    frame = pd.DataFrame({"value": [0.1, 0.4, 0.9], "count": [3, 0, 2]})
    points = count_points(frame)
    expanded = np.array([[0.1]] * 3 + [[0.9]] * 2)
    s = KdeSettings(mechanism="iclp", box=((0.0, 1.0),), epsilon=1.0, grid_size=64)
    a, b = plan_kde_release(points, s), plan_kde_release(expanded, s)
    assert a.n == 5 and a.sensitivity == b.sensitivity
    np.testing.assert_allclose(a.density, b.density)


def test_moving_one_count_unit_is_replace_one():
    frame = pd.DataFrame({"value": [0.0, 0.5, 1.0], "count": [4, 4, 4]})
    moved = frame.copy()
    moved.loc[0, "count"] -= 1
    moved.loc[2, "count"] += 1
    a, b = np.sort(count_points(frame)[:, 0]), np.sort(count_points(moved)[:, 0])
    assert a.size == b.size  # n unchanged
    # Multisets differ in exactly one element: remove one 0.0, add one 1.0.
    assert (np.sum(a == 0.0) - np.sum(b == 0.0), np.sum(b == 1.0) - np.sum(a == 1.0)) == (1, 1)
    s = KdeSettings(mechanism="gaussian", box=((0.0, 1.0),), epsilon=1.0, delta=1e-5, bandwidth=0.1, grid_size=200)
    pa, pb = plan_kde_release(a[:, None], s), plan_kde_release(b[:, None], s)
    # The density moves by one bump pair over n: its sup is at most 2 / (n sqrt(2 pi) h).
    assert np.max(np.abs(pa.density - pb.density)) <= 2 / (12 * np.sqrt(2 * np.pi) * 0.1) + 1e-12


@pytest.mark.parametrize("text,match", [("value,n\n1,2\n", "exactly the columns"),
                                        ("value,count\n1,-2\n", "non-negative integer"),
                                        ("value,count\n1,2.5\n", "non-negative integer"),
                                        ("value,count\nx,2\n", "non-numeric"),
                                        ("value,count\n1,0\n", "no individuals")])
def test_bad_tables_are_refused(text, match):
    with pytest.raises(DataError, match=match):
        load_counts(text.encode())


def test_cli_release_from_counts(tmp_path):
    out = tmp_path / "counts"
    assert main(["release", "kde-counts", "--counts", str(COUNTS), "--epsilon", "1", "--box", "0,100",
                 "--bandwidth", "4", "--out", str(out), "--seed", "2"]) == 0
    record = json.loads((out / "release.json").read_text())
    assert record["n"] == int(pd.read_csv(COUNTS)["count"].sum()) and record["source"] == "counts"
    table = pd.read_csv(out / "release.csv")
    assert list(table.columns) == ["x", "density"] and table["x"].iloc[-1] == pytest.approx(100)
    assert main(["release", "kde-counts", "--counts", str(tmp_path / "missing.csv"), "--epsilon", "1",
                 "--box", "0,1", "--out", str(out)]) == 2
