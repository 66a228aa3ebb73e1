"""Function-on-scalar regression (METHODS.md 14): sensitivities attained and never exceeded, black-box
audits of T1 and T2 with 0.7x controls, closed-form errors, covariates, CLI, DTI example."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fdp_core.cli import main
from fdp_core.data.loading import FunctionalData, load_curves
from fdp_core.errors import DataError, ParameterError
from fdp_core.releases.regression import (RegressionSettings, bands, covariate_matrix, floored_inverse,
                                 plan_regression_release)
from fdp_core.explore.summary_audit import audit_regression_mechanism, regression_worst_pair

GRID = np.linspace(0, 1, 20)


def _settings(**kw):
    base = dict(covariates=("a", "b"), bound_b=np.sqrt(2.0), kernel="matern52", rho=0.3, phi=1e-3, centre=0.0,
                tau=1.0, epsilon=1.0, delta=0.05, gamma=0.5)
    base.update(kw)
    return RegressionSettings(**base)


def _random_data(rng, n, q1=2):
    meta = pd.DataFrame(rng.normal(0, 1, (n, q1)), columns=["a", "b"][:q1])
    return FunctionalData(GRID, rng.normal(0, 0.5, (n, GRID.size)), metadata=meta)


def test_design_keeps_the_intercept_and_clips_the_rest():
    meta = pd.DataFrame({"case": [0, 1, 1, 5], "sex": ["male", "female", "male", "female"]})
    X, clipped, labels = covariate_matrix(meta, ("case", "sex=male"), 1.75)
    assert labels == ["intercept", "case", "sex=male"]
    np.testing.assert_array_equal(X[:, 0], 1.0)
    assert np.all(np.linalg.norm(X, axis=1) <= 1.75)
    assert clipped == 1 and X[1, 1] == 1 and X[2, 2] == 1
    with pytest.raises(DataError, match="LEVEL"):
        covariate_matrix(meta, ("sex",), 2.0)
    with pytest.raises(DataError, match="not in the file"):
        covariate_matrix(meta, ("age",), 2.0)
    with pytest.raises(ParameterError, match="B must exceed 1"):
        _settings(bound_b=1.0).validated()


def test_sensitivities_never_exceeded_by_random_replacements():
    rng = np.random.default_rng(0)
    s = _settings(bound_b=2.0)
    for _ in range(30):
        d = _random_data(rng, 12)
        values, meta = d.data_matrix.copy(), d.metadata.copy()
        values[-1] = rng.normal(0, 3, GRID.size)
        meta.iloc[-1] = rng.normal(0, 3, 2)
        p = plan_regression_release(d, s)
        p2 = plan_regression_release(FunctionalData(GRID, values, metadata=meta), s)
        assert np.linalg.norm(p.t1 - p2.t1) <= p.t1_sensitivity * (1 + 1e-9)
        assert np.sqrt(np.sum((p.t2 - p2.t2) ** 2 / p.eigenvalues)) <= p.t2_sensitivity * (1 + 1e-9)


@pytest.mark.parametrize("part", ["t1", "t2"])
def test_worst_pair_attains_the_bound(part):
    s = _settings()
    d, d_prime = regression_worst_pair(s, GRID, 10, part)
    p, p2 = plan_regression_release(d, s), plan_regression_release(d_prime, s)
    if part == "t1":
        assert np.linalg.norm(p.t1 - p2.t1) == pytest.approx(p.t1_sensitivity, rel=1e-6)
    else:
        shift = np.sqrt(np.sum((p.t2 - p2.t2) ** 2 / p.eigenvalues))
        assert shift == pytest.approx(p.t2_sensitivity, rel=1e-6)


@pytest.mark.parametrize("part", ["t1", "t2"])
def test_black_box_audit_passes_and_flags_the_07_control(part):
    audit = audit_regression_mechanism(_settings(), GRID, 10, part, n_select=40_000, n_test=150_000)
    assert audit.attained_fraction == pytest.approx(1.0, rel=1e-6)
    assert not audit.result.flagged, audit.result
    assert audit.control.flagged, audit.control


def test_closed_form_errors_match_monte_carlo():
    plan = plan_regression_release(_random_data(np.random.default_rng(1), 30), _settings(delta=1e-5))
    t1, t2 = plan.sample_statistics(np.random.default_rng(2), 4000)
    assert np.mean(np.sum((t1 - plan.t1) ** 2, axis=(1, 2))) == pytest.approx(plan.expected_sq_error_t1, rel=0.05)
    assert np.mean(np.sum((t2 - plan.t2) ** 2, axis=(1, 2))) == pytest.approx(plan.expected_sq_error_t2, rel=0.05)


def test_floored_inverse_and_noiseless_limit_recover_ols():
    T = np.array([[1.0, 0.5], [0.5, -0.2]])
    inv = floored_inverse(T, 0.1)
    assert np.all(np.linalg.eigvalsh(np.linalg.inv(inv)) >= 0.1 - 1e-12)
    rng = np.random.default_rng(3)
    meta = pd.DataFrame({"a": rng.integers(0, 2, 200).astype(float)})
    beta = np.vstack([np.sin(np.pi * GRID) * 0.3, 0.2 * GRID])
    X = np.column_stack([np.ones(200), meta["a"]])
    Y = X @ beta + rng.normal(0, 0.01, (200, GRID.size))
    s = RegressionSettings(covariates=("a",), bound_b=2.0, kernel="matern52", rho=0.3, phi=1e-9, centre=0.0,
                           tau=5.0, epsilon=1.0, kappa=1e-6)
    plan = plan_regression_release(FunctionalData(GRID, Y, metadata=meta), s)
    # With a negligible penalty the non-private estimator is OLS projected on the kept eigenfunctions.
    np.testing.assert_allclose(plan.nonprivate_functions(), plan.ols(), atol=2e-3)


def test_cli_files(tmp_path):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.normal(0.5, 0.1, (40, GRID.size)), columns=[f"{t:g}" for t in GRID])
    frame.insert(0, "group", rng.integers(0, 2, 40))
    frame.insert(1, "sex", rng.choice(["f", "m"], 40))
    path = tmp_path / "curves.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "reg"
    code = main(["release", "regression", "--preview", "--data", str(path), "--covariates", "group,sex=m", "--B", "1.8",
                 "--kernel", "matern52", "--rho", "0.2", "--epsilon", "2", "--value-range", "0,1", "--out", str(out)])
    assert code == 0
    table = pd.read_csv(out / "release.csv")
    assert list(table.columns) == ["t", "beta_intercept", "beta_group", "beta_sex=m"]
    record = json.loads((out / "release.json").read_text())
    view = json.loads((out / "analyst_view.json").read_text())
    assert "n_clipped" not in json.dumps(record) and "ols" not in record
    assert set(view["ols"]) == {"intercept", "group", "sex=m"}
    assert "NOT FOR PUBLICATION" in view["warning"] and view["publishable"] is False
    assert record["publishable"] is False and record["preview"] is True  # --preview: nothing charged
    assert record["guarantee"]["t1"]["epsilon"] == pytest.approx(0.6)


def test_dti_case_and_sex(shared_data):
    fd = load_curves(shared_data / "dti_cca.csv")
    s = RegressionSettings(covariates=("case", "sex=male"), bound_b=np.sqrt(3.0), rho=0.1, epsilon=5.0,
                           lo=0.2, hi=0.9, gamma=0.5, kappa=0.1)
    plan = plan_regression_release(fd, s)
    ols = plan.ols()
    assert ols[1].mean() < 0  # MS lowers fractional anisotropy along the corpus callosum (non-private)
    b = bands(plan, np.random.default_rng(0), 100)
    assert b["lower"].shape == (3, fd.m) and np.all(b["upper"] >= b["lower"])


def test_person_level_regression_bounds():
    rng = np.random.default_rng(8)
    persons = np.repeat(np.arange(5), 2)
    s = _settings(bound_b=2.0, person_column="subject", n_public=6)
    for _ in range(20):
        meta = pd.DataFrame({"subject": persons, "a": rng.normal(0, 1, 10), "b": rng.normal(0, 1, 10)})
        values = rng.normal(0, 0.5, (10, GRID.size))
        meta2, values2 = meta.copy(), values.copy()
        meta2.loc[persons == 4, ["a", "b"]] = rng.normal(0, 3, (2, 2))
        values2[persons == 4] = rng.normal(0, 3, (2, GRID.size))
        p = plan_regression_release(FunctionalData(GRID, values, metadata=meta), s)
        p2 = plan_regression_release(FunctionalData(GRID, values2, metadata=meta2), s)
        assert p.n == 6
        assert np.linalg.norm(p.t1 - p2.t1) <= p.t1_sensitivity * (1 + 1e-9)
        assert np.sqrt(np.sum((p.t2 - p2.t2) ** 2 / p.eigenvalues)) <= p.t2_sensitivity * (1 + 1e-9)
