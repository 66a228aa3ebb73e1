"""Loading, validation, missing values and clipping (METHODS.md section 0)."""

import io
import math

import numpy as np
import pandas as pd
import pytest

from fdp_core.data.loading import (DATA_DEPENDENT_TAU, MAX_FILE_BYTES, clip_to_ball, from_arrays, l2_norms,
                           load_curves, to_wide_csv)
from fdp_core.errors import DataError, ParameterError
from fdp_core.kernels import trapezoid_weights
from fdp_core.releases.mean import MeanSettings, plan_mean_release

# The bad-input corpus: (name, file bytes, expected fragment of the message).
BAD_FILES = [
    ("empty file", b"", "is empty"),
    ("whitespace only", b"  \n\n ", "is empty"),
    ("header only", b"0,0.5,1\n", "no data rows"),
    ("one curve", b"0,0.5,1\n1,2,3\n", "only 1 complete curve"),
    ("non-numeric cells", b"id,0,0.5,1\na,1,2,3\nb,4,x,y\n", "row 3 has 2 non-numeric cell(s) (column(s) 0.5, 1)"),
    ("ragged rows", b"0,0.5,1\n1,2,3\n4,5\n", "row 3 has 2 fields but the header has 3"),
    ("infinite value", b"0,0.5,1\n1,inf,3\n4,5,6\n", "infinite value at t = 0.5"),
    ("duplicate grid", b"0,0.5,0.5\n1,2,3\n4,5,6\n", "duplicate grid points"),
    ("unsorted grid with a duplicate", b"1,0,0.5,0\n1,2,3,4\n4,5,6,7\n", "duplicate grid points in the header (0)"),
    ("constant curves", b"0,0.5,1\n1,1,1\n2,2,2\n", "every curve is constant"),
    ("identical curves", b"0,0.5,1\n1,2,3\n1,2,3\n", "all 2 curves are identical"),
    ("all curves missing", b"0,0.5,1\n1,,3\n,5,6\n", "all 2 curves have missing values"),
    ("no numeric header", b"a,b,c\n1,2,3\n", "no numeric column headers"),
    ("metadata after grid", b"0,0.5,name\n1,2,x\n3,4,y\n", "metadata columns must come before"),
    ("single grid point", b"id,0\na,1\nb,2\n", "at least 2 grid points"),
    ("binary garbage", b"\x00\x01\x02PK", "NUL bytes"),
    ("long: duplicate t", b"id,t,value\na,0,1\na,0,2\nb,0,1\nb,1,2\n", "two values at t = 0"),
    ("long: bad value", b"id,t,value\na,0,1\na,1,zz\n", "non-numeric value"),
    ("long: no overlap", b"id,t,value\na,0,1\na,1,2\nb,2,1\nb,3,2\n", "person-specific times"),
    ("corrupt parquet", b"PAR1garbagePAR1", "could not be read as Parquet"),
    ("duplicate metadata names", b"a,a,0,1\nx,y,1,2\nz,w,3,5\n", "duplicate metadata column name(s) a"),
]


@pytest.mark.parametrize("name,raw,fragment", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_give_specific_messages(name, raw, fragment):
    with pytest.raises(DataError) as info:
        load_curves(raw, name="upload.csv")
    assert fragment in str(info.value)


def test_unsorted_grid_columns_are_sorted_with_their_values():
    # The header is public: a grid in any distinct order is read ascending (tests/test_descending_grid.py).
    fd = load_curves(b"0,1,0.5\n1,2,3\n4,5,7\n")
    np.testing.assert_array_equal(fd.grid_points, [0, 0.5, 1])
    np.testing.assert_array_equal(fd.data_matrix, [[1, 3, 2], [4, 7, 5]])


def test_wide_csv_with_metadata():
    fd = load_curves(b"id,group,0,0.5,1\na,x,1,2,3\nb,y,2,3,5\nc,x,0,1,1\n")
    assert (fd.n, fd.m) == (3, 3)
    assert list(fd.metadata.columns) == ["id", "group"]
    np.testing.assert_array_equal(fd.grid_points, [0, 0.5, 1])
    np.testing.assert_array_equal(fd.data_matrix[1], [2, 3, 5])


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_separators_are_detected(sep):
    text = sep.join(["0", "0.5", "1"]) + "\n" + sep.join(["1", "2", "3"]) + "\n" + sep.join(["4", "5", "7"]) + "\n"
    assert load_curves(text.encode()).n == 2


def test_missing_values_drop_and_interpolate_are_counted():
    raw = b"0,0.1,0.5,1\n1,,3,4\n2,3,4,5\n,1,1,2\n5,6,7,8\n"
    dropped = load_curves(raw)
    assert (dropped.n, dropped.report.n_dropped, dropped.report.n_missing_cells) == (2, 2, 2)
    assert dropped.report.dropped_rows == (1, 3)
    filled = load_curves(raw, missing="interpolate")
    # Row 1's gap at t = 0.1 is filled linearly *in t* between t = 0 (1) and t = 0.5 (3), giving
    # 1.4 (by column index it would be 2); row 3 misses its first point and cannot be
    # interpolated without extrapolating.
    assert (filled.n, filled.report.n_interpolated, filled.report.n_dropped) == (3, 1, 1)
    assert filled.data_matrix[0, 1] == pytest.approx(1.4)


def test_long_csv_equals_wide_csv():
    wide = load_curves(b"id,0,0.5,1\na,1,2,3\nb,2,3,5\n")
    long = load_curves(b"id,t,value\nb,1,5\na,0,1\na,0.5,2\na,1,3\nb,0,2\nb,0.5,3\n")
    np.testing.assert_array_equal(wide.grid_points, long.grid_points)
    order = np.argsort(long.metadata["id"].to_numpy())
    np.testing.assert_array_equal(wide.data_matrix, long.data_matrix[order])


def test_long_csv_on_person_specific_times_needs_a_declared_public_grid():
    """METHODS.md 24: the union of the persons' times (0, 0.5, 1 here) is never the published grid."""
    raw = b"id,t,value\na,0,0\na,1,2\nb,0,1\nb,0.5,2\nb,1,3\n"
    with pytest.raises(DataError, match=r"person-specific times.*--grid A,B,M.*--sparse"):
        load_curves(raw)
    fd = load_curves(raw, grid="0,1,5")
    np.testing.assert_array_equal(fd.grid_points, np.linspace(0, 1, 5))
    np.testing.assert_allclose(fd.data_matrix[0], [0, 0.5, 1, 1.5, 2])
    np.testing.assert_allclose(fd.data_matrix[1], [1, 1.5, 2, 2.5, 3])
    assert fd.report.public_grid == (0.0, 1.0, 5) and "declared public grid 0,1,5" in fd.report.messages[0]


def test_a_declared_grid_holds_each_curve_at_its_ends_and_applies_to_wide_files():
    """Beyond a person's first (last) visit the curve is held at its first (last) value: a per-person rule."""
    fd = load_curves(b"id,t,value\na,0.2,1\na,0.6,3\nb,0.1,0\nb,0.3,1\nb,0.9,4\n", grid="0,1,3")
    np.testing.assert_allclose(fd.data_matrix, [[1, 2.5, 3], [0, 2.0, 4]])
    wide = load_curves(b"id,0,1,2\na,0,2,4\nb,1,1,3\n", grid=(0, 2, 5))
    np.testing.assert_allclose(wide.data_matrix, [[0, 1, 2, 3, 4], [1, 1, 1, 2, 3]])
    for bad in ("0,1", "1,0,5", "0,1,1", "0,1,2.5", "0,1,100000", "a,b,c"):
        with pytest.raises(ParameterError):
            load_curves(b"id,0,1,2\na,0,2,4\nb,1,1,3\n", grid=bad)


def test_parquet_and_file_objects(tmp_path):
    frame = pd.DataFrame({"id": ["a", "b", "c"], "0": [1.0, 2, 3], "0.5": [2.0, 2, 1], "1": [3.0, 1, 2]})
    path = tmp_path / "curves.parquet"
    frame.to_parquet(path)
    from_path = load_curves(path)
    from_buffer = load_curves(io.BytesIO(path.read_bytes()), name="curves.parquet")
    np.testing.assert_array_equal(from_path.data_matrix, from_buffer.data_matrix)
    assert from_path.n == 3 and list(from_path.metadata.columns) == ["id"]


def test_round_trip_through_wide_csv():
    fd = load_curves(b"id,0,0.1,0.7,1\na,1,2,3,4\nb,2,3,5,1\n")
    again = load_curves(to_wide_csv(fd).encode())
    np.testing.assert_array_equal(fd.data_matrix, again.data_matrix)
    np.testing.assert_array_equal(fd.grid_points, again.grid_points)


def test_size_limit_rejects_before_reading(tmp_path, monkeypatch):
    """Paths have their own (high, configurable) limit; in-memory uploads keep 200 MB."""
    from fdp_core.data import loading as data

    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    monkeypatch.setattr(data, "MAX_PATH_BYTES", MAX_FILE_BYTES)
    with pytest.raises(DataError, match="limit is 200 MB"):
        load_curves(big)


def test_non_uniform_grid_uses_trapezoid_weights_on_the_unit_domain():
    fd = load_curves(b"0,1,3,10\n1,1,1,2\n0,2,0,1\n")
    np.testing.assert_allclose(fd.unit_grid, [0, 0.1, 0.3, 1.0])
    np.testing.assert_allclose(fd.weights, trapezoid_weights(np.array([0, 0.1, 0.3, 1.0])))
    # ||1||^2 over [0, 1] is 1 whatever the grid.
    assert l2_norms(np.ones((1, 4)), fd.weights)[0] == pytest.approx(1.0)


def test_clipping_projects_onto_the_ball_and_counts():
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 50)
    w = trapezoid_weights(grid)
    values = rng.normal(size=(100, 50)) * rng.uniform(0.1, 3, (100, 1))
    result = clip_to_ball(values, w, 1.0)
    norms_after = l2_norms(result.values, w)
    assert np.all(norms_after <= 1.0)
    inside = result.norms <= 1.0
    assert result.n_clipped == int((~inside).sum()) > 0
    np.testing.assert_array_equal(result.values[inside], values[inside])
    np.testing.assert_allclose(norms_after[~inside], 1.0, rtol=1e-12)
    # Directions are kept.
    cos = np.sum(result.values[~inside] * values[~inside] * w, axis=1) / (norms_after[~inside] * result.norms[~inside])
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)


@pytest.mark.parametrize("tau", [0, -1, math.nan, math.inf])
def test_tau_must_be_positive_and_finite(tau):
    with pytest.raises(ParameterError, match="tau"):
        clip_to_ball(np.ones((2, 3)), np.ones(3), tau)


def test_data_derived_tau_is_flagged_downstream():
    fd = from_arrays(np.linspace(0, 1, 10), np.random.default_rng(0).normal(size=(5, 10)))
    plan = plan_mean_release(fd, MeanSettings(tau=None, tau_from_data=True))
    assert plan.data_dependent_flags == (DATA_DEPENDENT_TAU,)
    assert plan.tau == pytest.approx(fd.norms().max())
    assert plan.n_clipped == 0


@pytest.mark.parametrize("change,fragment", [
    (dict(epsilon=0), "epsilon must be > 0"), (dict(epsilon=-2), "epsilon must be > 0"),
    (dict(delta=0), "delta must be in (0, 1)"), (dict(delta=1.5), "delta must be in (0, 1)"),
    (dict(tau=0), "tau must be > 0"), (dict(tau=-3), "tau must be > 0"),
    (dict(rho=0), "rho must be > 0"), (dict(rho=-1), "rho must be > 0"), (dict(phi=0), "phi must be > 0"),
    (dict(eta=0.5), "eta must be >= 1"), (dict(kernel="rbf"), "kernel must be one of"),
    (dict(bound="loose"), "bound must be one of"), (dict(calibration="magic"), "calibration must be one of"),
    (dict(epsilon=2, calibration="classical"), "only valid for epsilon <= 1"),
])
def test_bad_parameters_give_specific_messages(change, fragment):
    fd = from_arrays(np.linspace(0, 1, 10), np.random.default_rng(0).normal(size=(5, 10)))
    with pytest.raises(ParameterError) as info:
        plan_mean_release(fd, MeanSettings(**{**dict(tau=1.0), **change}))
    assert fragment in str(info.value)


# ----------------------------------------------------------------- real data

def test_dti_loads_with_six_curves_dropped_and_releases(shared_data):
    fd = load_curves(shared_data / "dti_cca.csv")
    assert (fd.report.n_read, fd.n, fd.m, fd.report.n_dropped) == (382, 376, 93, 6)
    assert fd.report.n_missing_cells == 36
    assert list(fd.metadata.columns) == ["subject", "visit", "case", "sex"]
    plan = plan_mean_release(fd, MeanSettings(kernel="matern52", rho=0.1, tau=0.6, epsilon=1.0, delta=1e-5))
    release = plan.sample(np.random.default_rng(0), 1)[0]
    assert release.shape == (93,) and np.all(np.isfinite(release))
    # The release is close to the estimate at this n and epsilon (a real-data sanity check).
    assert np.sqrt(((release - plan.estimate) ** 2) @ fd.weights) < 3 * np.sqrt(plan.expected_sq_l2_error)


def test_berkeley_growth_non_uniform_ages(shared_data):
    fd = load_curves(shared_data / "berkeley_growth.csv")
    assert (fd.n, fd.m) == (93, 31)
    gaps = np.diff(fd.grid_points)
    assert gaps.min() == pytest.approx(0.25) and gaps.max() == pytest.approx(1.0)
    plan = plan_mean_release(fd, MeanSettings(kernel="gaussian", rho=0.05, phi=1e-7, tau=200.0, epsilon=1.0,
                                                delta=1e-5))
    assert plan.n_clipped == 0
    release = plan.sample(np.random.default_rng(0), 1)[0]
    assert np.all(np.isfinite(release))
    # Heights: the non-private mean rises from ~80 cm to ~170 cm.
    assert 70 < plan.estimate[0] < 95 and 160 < plan.estimate[-1] < 185


@pytest.mark.parametrize("ulps", [-2, -1, 0, 1, 2])
def test_a_tie_at_tau_is_counted_alike_and_still_clipped(ulps):
    """A norm within a few ulps of tau (tau read off the data, another summation order) is not
    counted as clipped on any side of the tie, yet the clip map still brings it to <= tau."""
    grid = np.linspace(0.0, 1.0, 21)
    weights = trapezoid_weights(grid)
    values = np.vstack([np.sin(3 * grid) + 1.0, 0.3 * grid])
    norm = float(l2_norms(values[:1], weights)[0])
    tau = norm
    for _ in range(abs(ulps)):
        tau = np.nextafter(tau, np.inf if ulps > 0 else 0.0)
    result = clip_to_ball(values, weights, tau)
    assert result.n_clipped == 0
    assert np.all(l2_norms(result.values, weights) <= tau)
    assert clip_to_ball(values, weights, norm * 0.999).n_clipped == 1  # a real clip is still counted
