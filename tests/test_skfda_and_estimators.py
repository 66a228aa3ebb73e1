"""scikit-fda in and out, the scikit-learn-style estimators, persons for densities from Python (issue 44)."""

import numpy as np
import pytest

import fdp_core as fdp
from fdp_core.errors import DataError, ParameterError

skfda = pytest.importorskip("skfda")

T = np.linspace(0, 1, 25)


def _curves(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return 0.5 + 0.2 * np.sin(np.pi * T) * (1 + rng.uniform(-0.5, 0.5, (n, 1)))


def test_round_trip_keeps_grid_values_and_persons():
    X = _curves(6)
    fdg = skfda.FDataGrid(X, T, sample_names=["a", "a", "b", "b", "c", "c"], dataset_name="toy")
    fd = fdp.from_skfda(fdg, person_column="subject")
    np.testing.assert_array_equal(fd.grid_points, T)
    np.testing.assert_array_equal(fd.data_matrix, X)
    assert fd.metadata["subject"].tolist() == ["a", "a", "b", "b", "c", "c"]
    back = fdp.to_skfda(fd.grid_points, fd.data_matrix)
    np.testing.assert_array_equal(back.data_matrix[:, :, 0], X)
    np.testing.assert_array_equal(back.grid_points[0], T)


def test_from_skfda_refuses_what_fdp_cannot_release():
    two_d = skfda.FDataGrid(np.zeros((3, 4, 5)), (np.arange(4.0), np.arange(5.0)))
    with pytest.raises(DataError, match="2-dimensional domain"):
        fdp.from_skfda(two_d)
    with pytest.raises(DataError, match="FDataGrid"):
        fdp.from_skfda(np.zeros((3, 4)))
    with pytest.raises(DataError, match="sample_names"):
        fdp.from_skfda(skfda.FDataGrid(_curves(3), T), person_column="subject")


def test_estimators_take_fdatagrid_and_give_skfda_orientation():
    fdg = skfda.FDataGrid(_curves(), T)
    mean = fdp.PrivateMean(epsilon=2.0, bounds=(0, 1), random_state=0).fit(fdg)
    assert mean.tau_ == 0.5 and mean.n_ == 40 and mean.mean_.shape == (25,) and not mean.publishable_
    assert mean.to_skfda().data_matrix.shape == (1, 25, 1)
    pca = fdp.PrivateFPCA(n_components=2, epsilon=2.0, bounds=(0, 1), random_state=0).fit(fdg)
    assert pca.components_.shape == (2, 25) and pca.to_skfda().data_matrix.shape == (2, 25, 1)
    gram = pca.components_ @ np.diag(fdp.from_skfda(fdg).weights) @ pca.components_.T
    np.testing.assert_allclose(gram, np.eye(2), atol=1e-8)  # orthonormal in L2 as rows


def test_a_committed_fit_charges_its_quote():
    fd = fdp.from_arrays(T, _curves(60))
    ledger = fdp.Ledger(5.0, 1e-4)
    est = fdp.PrivateMean(epsilon=1.0, bounds=(0, 1), accountant=ledger)
    quoted = sum(e.epsilon for e in est.quote(fd).entries)
    est.fit(fd)
    assert est.publishable_ and est.release_ is not None
    assert ledger.spent().epsilon == pytest.approx(quoted, rel=1e-12)
    assert quoted > 1.0  # the exact discrete noise charges a little more than the calibrated epsilon
    assert set(est.release_.accuracy_figures) == {"expected_sq_l2_error", "l2_error_radius_95", "sup_error_radius_95"}


def test_densities_of_curves_average_per_person_and_bare_points_with_persons_are_refused():
    X = _curves(6)
    fd = fdp.from_arrays(T, X, metadata={"subject": [1, 1, 2, 2, 3, 3]})
    settings = fdp.KdeSettings(box=((0.0, 1.0),), epsilon=1.0, person_column="subject")
    assert fdp.plan_kde_release(fd, settings, feature="mean:0:1").n == 3
    with pytest.raises(ParameterError, match="needs the curves"):
        fdp.plan_kde_release(np.linspace(0.2, 0.8, 6), settings)
    with pytest.raises(ParameterError, match="feature="):
        fdp.plan_kde_release(fd, settings)
    assert fdp.plan_kde_release(np.linspace(0.2, 0.8, 3), settings, per_person=True).n == 3


def test_raw_mean_averages_persons_with_a_person_column():
    X = _curves(6)
    fd = fdp.from_arrays(T, X, metadata={"subject": [1, 1, 1, 1, 2, 3]})
    plan = fdp.plan_mean_release(fd, fdp.MeanSettings(value_range=(0, 1), person_column="subject"))
    persons = np.vstack([X[:4].mean(0), X[4], X[5]])
    np.testing.assert_allclose(plan.raw_mean, persons.mean(0), rtol=1e-12)


def test_reprs_are_short():
    fd = fdp.from_arrays(T, _curves())
    plan = fdp.plan_mean_release(fd, fdp.MeanSettings(value_range=(0, 1)))
    assert len(repr(plan)) < 300 and "tau=0.5" in repr(plan)
    result = fdp.private_pca(fd, fdp.PcaSettings(value_range=(0, 1), k=1), np.random.default_rng(0))
    assert len(repr(result)) < 300 and result.components_skfda.shape == (1, 25)
