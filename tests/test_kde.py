"""Private KDEs (METHODS.md 4) and per-curve features: the specification as tests.

Sensitivity audits check the claimed Delta against independent computations through the
*estimator* (never through the sensitivity code), noise conformance whitens draws against
the claimed covariance / Laplace scales (with a mis-scaled control that must be rejected),
and black-box audits (fdp_core.explore.audit) must pass at the calibrated scale and flag 0.9x noise.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.spatial.distance import cdist

from fdp_core.explore.audit import audit_pair
from fdp_core.releases.box import (DATA_DEPENDENT_BANDWIDTH, box_widths, check_box, clip_to_box, default_bandwidth, kde_grids,
                          parse_box, silverman_bandwidth)
from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.errors import DataError, ParameterError
from fdp_core.data.features import (Feature, average_weights, extract_features, feature_values, parse_feature,
                               parse_feature_spec)
from fdp_core.releases.kde import (KDE_MECHANISM_LABELS, KDE_MECHANISMS, KdeSettings, analyst_view, plan_kde_release,
                          release_record, release_table)
from fdp_core.kernels import kernel_matrix, trapezoid_weights
from fdp_core.mechanisms.calibration import analytic_sigma, classical_sigma
from fdp_core.mechanisms.hall_kde import rbf_gram_eigh
from fdp_core.mechanisms.iclp_kde import iclp_axis
from fdp_core.registry.kde import REGISTRY as KDE_REGISTRY
from fdp_core.sensitivity import hall_sensitivities, iclp_sensitivity
from fdp_core.data.simulate import HALL_EXAMPLE, hall_mixture_points, mixture_2d_points
from fdp_core.engines.stream import kde_mode


def hall_kde(points, box, **options):
    """Hall's Gaussian-process KDE, planned as the app and the CLI plan it (registry entry "gaussian")."""
    return plan_kde_release(points, KdeSettings(mechanism="gaussian", box=box, **options))


def iclp_kde(points, box, **options):
    """ICLP-KDE, planned as the app and the CLI plan it (registry entry "iclp")."""
    return plan_kde_release(points, KdeSettings(mechanism="iclp", box=box, **options))


# --------------------------------------------------------------------------- features

def _curves(grid, n=6, seed=0, metadata=None):
    rng = np.random.default_rng(seed)
    grid = np.asarray(grid, dtype=float)
    values = rng.normal(size=(n, 1)) + rng.normal(size=(n, 1)) * grid + rng.normal(size=(n, 1)) * np.sin(grid)
    return from_arrays(grid, values, metadata=metadata)


def test_parse_feature_specs_and_canonical_round_trip():
    assert parse_feature("value:0.5") == Feature("value", (0.5,))
    assert parse_feature(" mean:0.2:0.8 ") == Feature("mean", (0.2, 0.8))
    assert parse_feature("l2norm") == Feature("l2norm")
    assert parse_feature("MAX") == Feature("max")
    assert parse_feature("column:age group") == Feature("column", ("age group",))
    two = parse_feature_spec("value:0.25,value:0.75")
    assert two == (Feature("value", (0.25,)), Feature("value", (0.75,)))
    for f in (*two, Feature("mean", (0.1, 0.3)), Feature("max"), Feature("column", ("age",))):
        assert parse_feature(f.spec) == f


@pytest.mark.parametrize("spec, message", [
    ("median", "unknown feature 'median'"),
    ("value", "value:T0"),
    ("value:abc", "T0 must be a number"),
    ("mean:0.8:0.2", "U < V"),
    ("mean:0.2", "mean:U:V"),
    ("max:3", "takes no argument"),
    ("column:", "column:NAME"),
    ("max,max,max", "at most two"),
    ("", "empty feature"),
])
def test_parse_feature_errors_are_specific(spec, message):
    with pytest.raises(ParameterError, match=message):
        parse_feature_spec(spec)


def test_features_on_a_nonuniform_original_grid():
    # Berkeley-like ages: uneven spacing, domain not [0, 1].
    grid = np.array([1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 18.0])
    fd = _curves(grid, n=5)
    X = fd.data_matrix
    value = feature_values(fd, parse_feature("value:4.2"))
    np.testing.assert_allclose(value, [np.interp(4.2, grid, x) for x in X], rtol=1e-12)
    # Average of the piecewise-linear interpolant: compare with a fine trapezoid integral.
    fine = np.linspace(2.5, 15.0, 200001)
    expected = np.array([np.trapezoid(np.interp(fine, grid, x), fine) / 12.5 for x in X])
    np.testing.assert_allclose(feature_values(fd, parse_feature("mean:2.5:15")), expected, rtol=1e-8)
    # L2 norm uses the unit-rescaled trapezoid weights (same as tau), not the original units.
    unit_w = trapezoid_weights((grid - 1.0) / 17.0)
    np.testing.assert_allclose(feature_values(fd, parse_feature("l2norm")), np.sqrt((X**2) @ unit_w), rtol=1e-12)
    np.testing.assert_allclose(feature_values(fd, parse_feature("max")), X.max(axis=1))
    # A linear curve's average over [u, v] is its midpoint value, whatever the grid.
    w = average_weights(grid, 1.1, 17.3)
    np.testing.assert_allclose(w @ (3.0 + 2.0 * grid), 3.0 + 2.0 * (1.1 + 17.3) / 2, rtol=1e-12)


def test_feature_errors_on_data():
    meta = pd.DataFrame({"age": [30, 41, 52, 63, 70], "sex": ["f", "m", "f", "m", "f"],
                         "score": [1.0, np.nan, 2.0, 3.0, 4.0]})
    fd = _curves(np.linspace(0, 2, 11), n=5, metadata=meta)
    points, feats = extract_features(fd, "column:age,value:1.0")
    assert points.shape == (5, 2) and feats[0].kind == "column"
    np.testing.assert_array_equal(points[:, 0], [30, 41, 52, 63, 70])
    with pytest.raises(ParameterError, match=r"outside the curves' domain \[0, 2\]"):
        feature_values(fd, parse_feature("value:2.5"))
    with pytest.raises(ParameterError, match="outside"):
        feature_values(fd, parse_feature("mean:-1:1"))
    with pytest.raises(DataError, match=r"no column 'height' \(metadata columns: age, sex, score\)"):
        feature_values(fd, parse_feature("column:height"))
    with pytest.raises(DataError, match="'sex' is not numeric"):
        feature_values(fd, parse_feature("column:sex"))
    with pytest.raises(DataError, match="1 missing value"):
        feature_values(fd, parse_feature("column:score"))


def test_features_on_real_dti_data(shared_data):
    fd = load_curves(shared_data / "dti_cca.csv")
    points, _ = extract_features(fd, "mean:0.2:0.8,column:visit")
    assert points.shape == (fd.n, 2) and np.all(np.isfinite(points))
    with pytest.raises(DataError, match="not numeric"):
        extract_features(fd, "column:sex")


# --------------------------------------------------------------------------- boxes, clipping, bandwidth

def test_box_parsing_and_errors():
    assert parse_box("0,1") == ((0.0, 1.0),)
    assert parse_box("-1,2,0,5") == ((-1.0, 2.0), (0.0, 5.0))
    assert check_box(((0, 1), (2, 3))) == ((0.0, 1.0), (2.0, 3.0))
    for bad, message in [("1,0", "lo < hi"), ("0,1,2", "2 numbers"), ("a,b", "comma-separated"),
                         ("0,inf", "finite")]:
        with pytest.raises(ParameterError, match=message):
            parse_box(bad)


def test_clip_to_box_counts_and_refuses_all_outside():
    clip = clip_to_box([-0.5, 0.2, 0.7, 1.3, 1.0], (0, 1))
    np.testing.assert_array_equal(clip.points[:, 0], [0.0, 0.2, 0.7, 1.0, 1.0])
    assert clip.n_clipped == 2
    clip2 = clip_to_box([[0.5, 2.0], [0.5, 0.5], [-1, -1]], (0, 1, 0, 1))
    assert clip2.n_clipped == 2
    with pytest.raises(DataError, match="all 3 observations lie outside the box"):
        clip_to_box([2.0, 3.0, 4.0], (0, 1))
    with pytest.raises(DataError, match="NaN or infinite"):
        clip_to_box([0.1, np.nan], (0, 1))
    with pytest.raises(DataError, match="2-d"):
        hall_kde(np.zeros((4, 2)), (0, 1), epsilon=1, delta=0.1)


def test_bandwidth_rules_and_flags():
    assert default_bandwidth((0, 2), 100) == pytest.approx(2 * 100 ** (-0.2))
    assert default_bandwidth((0, 1, 0, 4), 64) == pytest.approx(2 * 64 ** (-1 / 6))
    pts = hall_mixture_points(200, seed=3)
    release = hall_kde(pts, (0, 1), epsilon=1, delta=0.1, grid_size=64)
    assert release.bandwidth == pytest.approx(200 ** (-0.2)) and release.data_dependent_flags == ()
    flagged = hall_kde(pts, (0, 1), epsilon=1, delta=0.1, grid_size=64, data_dependent_bandwidth=True)
    assert flagged.bandwidth == pytest.approx(silverman_bandwidth(pts))
    assert flagged.data_dependent_flags == (DATA_DEPENDENT_BANDWIDTH,)
    assert flagged.guarantee.details["differentially_private"] is False
    record = release_record(flagged)
    assert record["data_dependent_flags"] == [DATA_DEPENDENT_BANDWIDTH] and not record["differentially_private"]
    for h in (0.0, -0.1, float("nan")):
        with pytest.raises(ParameterError, match="bandwidth"):
            hall_kde(pts, (0, 1), epsilon=1, delta=0.1, bandwidth=h, grid_size=32)
    with pytest.raises(ParameterError, match="not both"):
        hall_kde(pts, (0, 1), epsilon=1, delta=0.1, bandwidth=0.1, data_dependent_bandwidth=True)
    with pytest.raises(ParameterError, match="rho and eta"):
        plan_kde_release(pts, KdeSettings(mechanism="iclp", bandwidth=0.1))
    for bad in dict(grid_size=2), dict(grid_size=10.5), dict(epsilon=0), dict(delta=0), dict(bound="tight"):
        with pytest.raises(ParameterError):
            hall_kde(pts, (0, 1), **{"epsilon": 1, "delta": 0.1, "bandwidth": 0.1, **bad})
    with pytest.raises(ParameterError, match="eta must be > 1"):
        iclp_kde(pts, (0, 1), epsilon=1, eta=1.0, grid_size=16)


# --------------------------------------------------------------------------- Hall et al.

def test_hall_estimate_matches_the_gaussian_kde_formula():
    pts1 = hall_mixture_points(50, seed=1)
    r1 = hall_kde(pts1, (0, 1), epsilon=1, delta=0.1, bandwidth=0.07, grid_size=40)
    direct = stats.norm.pdf(r1.grid[:, None], loc=np.clip(pts1, 0, 1)[None, :], scale=0.07).mean(axis=1)
    np.testing.assert_allclose(r1.density, direct, rtol=1e-12)
    pts2 = mixture_2d_points(60, seed=2)
    r2 = hall_kde(pts2, (0, 1, -0.5, 1.5), epsilon=1, delta=0.1, bandwidth=0.15, grid_size=12)
    x1, x2 = np.meshgrid(*r2.grids, indexing="ij")
    c = np.clip(pts2, [0, -0.5], [1, 1.5])
    sq = (x1[..., None] - c[:, 0]) ** 2 + (x2[..., None] - c[:, 1]) ** 2
    np.testing.assert_allclose(r2.density, np.exp(-sq / (2 * 0.15**2)).mean(-1) / (2 * np.pi * 0.15**2), rtol=1e-12)


def _rkhs_distance(x, y, h):
    """||k(., x) - k(., y)||_H for the Gaussian RBF: sqrt(k(x,x) + k(y,y) - 2 k(x,y))."""
    return math.sqrt(2.0 - 2.0 * math.exp(-np.sum((np.asarray(x) - np.asarray(y)) ** 2) / (2 * h * h)))


@pytest.mark.parametrize("box, h", [((0.0, 0.3), 0.1), ((0.0, 1.0, 0.0, 0.5), 0.4)])
def test_hall_box_exact_sensitivity_is_attained_by_opposite_corners(box, h):
    box = check_box(box)
    d, n = len(box), 7
    scale = 1.0 / (n * (2 * np.pi * h * h) ** (d / 2))
    sens = hall_sensitivities(n, h, box)
    lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    assert sens["exact"] == pytest.approx(scale * _rkhs_distance(lo, hi, h), rel=1e-12)
    assert sens["paper"] == pytest.approx(scale * math.sqrt(2), rel=1e-12) and sens["paper"] > sens["exact"]
    rng = np.random.default_rng(0)
    for _ in range(2000):
        x, y = rng.uniform(lo, hi), rng.uniform(lo, hi)
        assert scale * _rkhs_distance(x, y, h) <= sens["exact"] * (1 + 1e-12)
    # On the grid: the Mahalanobis norm of f_D - f_D' under the claimed (floored) covariance
    # is at most Delta and, with the corners on the grid, equal to it (relative 1e-6).
    others = rng.uniform(lo, hi, (n - 1, d))
    rD = hall_kde(np.vstack([lo, others]), box, epsilon=1, delta=0.1, bandwidth=h, grid_size=9)
    rDp = hall_kde(np.vstack([hi, others]), box, epsilon=1, delta=0.1, bandwidth=h, grid_size=9)
    v = (rD.density - rDp.density).ravel()
    gram = rD._noise.covariance() / rD.sigma**2
    assert math.sqrt(v @ np.linalg.solve(gram, v)) == pytest.approx(rD.sensitivity, rel=1e-6)


def test_hall_paper_example_numbers():
    ex = HALL_EXAMPLE
    pts = hall_mixture_points(ex["n"])
    assert pts.shape == (100,)
    r = hall_kde(pts, ex["box"], epsilon=ex["epsilon"], delta=ex["delta"], bandwidth=ex["bandwidth"],
                     grid_size=ex["grid_size"])
    paper = math.sqrt(2) / (100 * math.sqrt(2 * math.pi) * 0.1)
    assert r.guarantee.sensitivity_for("paper") == pytest.approx(paper, rel=1e-12)
    assert r.sigma == pytest.approx(analytic_sigma(r.sensitivity, 1.0, 0.1))
    classical = hall_kde(pts, ex["box"], epsilon=1, delta=0.1, bandwidth=0.1, grid_size=1000,
                             calibration="classical", bound="paper")
    assert classical.sigma == pytest.approx(classical_sigma(paper, 1.0, 0.1)) and classical.sigma > r.sigma
    assert r.density.shape == (1000,) and abs(np.sum(r.density * r.weights) - 1) < 0.02
    with pytest.raises(ParameterError, match="epsilon <= 1"):
        hall_kde(pts, (0, 1), epsilon=2, delta=0.1, bandwidth=0.1, grid_size=50, calibration="classical")


def _direct_rbf_gram(grids, h):
    pts = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, len(grids))
    return np.exp(-cdist(pts, pts, "sqeuclidean") / (2 * h * h))


@pytest.mark.parametrize("box, grid_size, h", [((0, 1), 30, 0.15), ((0, 1, 0, 2), 6, 0.5)])
def test_hall_noise_is_the_claimed_gaussian_process(box, grid_size, h):
    box = check_box(box)
    r = hall_kde(np.full((1, len(box)), 0.5), box, epsilon=1, delta=0.1, bandwidth=h, grid_size=grid_size)
    gram = _direct_rbf_gram(r.grids, h)
    # Claimed covariance = sigma^2 (Gram + floor): never smaller, never far off.
    claimed = r._noise.covariance() / r.sigma**2
    assert np.max(np.abs(claimed - gram)) < 1e-8
    assert np.linalg.eigvalsh(claimed - gram).min() > -1e-12
    lam, U = np.linalg.eigh(gram)
    floored = np.maximum(lam, 0) + 1e-10 * lam.max()
    z = r.noise(np.random.default_rng(7), 4000).reshape(4000, -1) / r.sigma
    chi = ((z @ U) ** 2 / floored).sum(axis=1)
    dof = z.shape[1]
    assert stats.kstest(chi, stats.chi2(dof).cdf).pvalue > 1e-3
    # Control: noise that is 0.9x too small must be rejected by the same test.
    assert stats.kstest(chi * 0.81, stats.chi2(dof).cdf).pvalue < 1e-6
    # Closed-form expected squared L2 error (box coordinates) against Monte Carlo.
    mc = np.mean(np.sum(r.weights * r.noise(np.random.default_rng(8), 20000) ** 2, axis=tuple(range(1, r.d + 1))))
    assert mc == pytest.approx(r.expected_sq_l2_error, rel=0.03)


def test_hall_kronecker_gram_matches_direct_decomposition():
    grids = kde_grids(check_box((0, 1, 0, 0.5)), 7)
    h = 0.3
    direct = _direct_rbf_gram(grids, h)
    (l1, U1), (l2, U2) = rbf_gram_eigh(grids[0], h), rbf_gram_eigh(grids[1], h)
    np.testing.assert_allclose(np.kron(U1 * l1, U2 * l2) @ np.kron(U1, U2).T, direct, atol=1e-12)
    np.testing.assert_allclose(np.sort(np.outer(l1, l2).ravel()), np.sort(np.linalg.eigvalsh(direct)), atol=1e-12)


def _audit(sample_d, sample_dp, epsilon, delta):
    return audit_pair(sample_d, sample_dp, epsilon, delta, n_select=50_000, n_test=300_000, alpha=1e-6, seed=11)


def test_hall_black_box_audit_with_negative_control():
    # Worst-case pair: one observation moves between the two ends of the box (attains the
    # box-exact bound). Statistic: projection of the output on the whitened difference
    # direction (the likelihood-ratio statistic of the claimed mechanism).
    others = np.array([0.3, 0.5, 0.6])
    make = dict(box=(0, 1), epsilon=1.0, delta=0.1, bandwidth=0.2, grid_size=12)
    rD, rDp = hall_kde(np.r_[0.0, others], **make), hall_kde(np.r_[1.0, others], **make)
    v = rD.density - rDp.density
    gram = rD._noise.covariance() / rD.sigma**2
    direction = np.linalg.solve(gram, v)
    assert math.sqrt(v @ direction) == pytest.approx(rD.sensitivity, rel=1e-6)

    def sampler(release, scale):
        return lambda rng, size: (release.density + scale * release.noise(rng, size)) @ direction

    assert not _audit(sampler(rD, 1.0), sampler(rDp, 1.0), 1.0, 0.1).flagged
    assert _audit(sampler(rD, 0.9), sampler(rDp, 0.9), 1.0, 0.1).flagged


# --------------------------------------------------------------------------- ICLP-KDE

def _single_point_coefficients(kernel, rho, eta, G, d):
    """Coefficients (unit coordinates, divided by sqrt(lambda)) of the n = 1 estimate at every node,
    computed through the estimator path: the sensitivity code is not used."""
    nodes = np.linspace(0, 1, G)
    if d == 1:
        pts = nodes[:, None]
    else:
        pts = np.stack(np.meshgrid(nodes, nodes, indexing="ij"), axis=-1).reshape(-1, 2)
    rows = []
    for x in pts:
        r = iclp_kde(x[None, :], ((0, 1),) * d, epsilon=1.0, kernel=kernel, rho=rho, eta=eta, grid_size=G)
        lam = r.iclp_axis.basis.eigenvalues
        lam_full = lam if d == 1 else np.outer(lam, lam)
        rows.append((r.coefficients / np.sqrt(lam_full)).ravel())
        sensitivity = r.sensitivity
    return np.array(rows), sensitivity, pts


@pytest.mark.parametrize("kernel, rho, eta, G, d", [
    ("matern32", 0.1, 1.5, 40, 1), ("gaussian", 0.05, 2.0, 30, 1), ("exponential", 0.2, 1.2, 25, 1),
    ("matern52", 0.2, 1.5, 7, 2), ("exponential", 0.3, 2.0, 6, 2)])
def test_iclp_exact_sensitivity_is_the_attained_node_pair_maximum(kernel, rho, eta, G, d):
    coefs, sensitivity, _ = _single_point_coefficients(kernel, rho, eta, G, d)
    brute = cdist(coefs, coefs, "cityblock").max()
    assert sensitivity == pytest.approx(brute, rel=1e-9)
    paper, _ = iclp_sensitivity(1, iclp_axis(kernel, rho, eta, G), d=d, bound="paper")
    assert paper == pytest.approx(2 * np.abs(coefs).sum(axis=1).max(), rel=1e-9) and paper >= sensitivity
    # The reported pair attains it, with n = 5 and a shared remainder of the data set.
    value, pair = iclp_sensitivity(5, iclp_axis(kernel, rho, eta, G), d=d)
    nodes = np.linspace(0, 1, G)
    rest = np.random.default_rng(1).uniform(0, 1, (4, d))
    runs = [iclp_kde(np.vstack([nodes[list(node)], rest]), ((0, 1),) * d, epsilon=1.0, kernel=kernel, rho=rho,
                         eta=eta, grid_size=G) for node in pair]
    lam = runs[0].iclp_axis.basis.eigenvalues
    lam_full = lam if d == 1 else np.outer(lam, lam)
    moved = np.sum(np.abs(runs[0].coefficients - runs[1].coefficients) / np.sqrt(lam_full))
    assert moved == pytest.approx(value, rel=1e-6) and runs[0].sensitivity == pytest.approx(value, rel=1e-12)


def test_iclp_random_pairs_never_exceed_the_sensitivity():
    rng = np.random.default_rng(5)
    for d, G in ((1, 50), (2, 12)):
        box = ((-1.0, 3.0),) * d
        base = rng.uniform(-1, 3, (9, d))
        ref = iclp_kde(base, box, epsilon=1.0, kernel="matern32", rho=0.15, eta=1.5, grid_size=G)
        lam = ref.iclp_axis.basis.eigenvalues
        lam_full = lam if d == 1 else np.outer(lam, lam)
        worst = 0.0
        for _ in range(60):
            other = base.copy()
            other[0] = rng.uniform(-2, 4, d)  # may leave the box: clipping keeps it a neighbour
            r = iclp_kde(other, box, epsilon=1.0, kernel="matern32", rho=0.15, eta=1.5, grid_size=G)
            worst = max(worst, np.sum(np.abs(r.coefficients - ref.coefficients) / np.sqrt(lam_full)))
        assert 0 < worst <= ref.sensitivity * (1 + 1e-12)


def test_iclp_kronecker_eigenpairs_match_direct_decomposition():
    G, rho, eta = 8, 0.3, 1.5
    r = iclp_kde(np.array([[0.2, 0.7]]), (0, 1, 0, 1), epsilon=1.0, kernel="matern52", rho=rho, eta=eta,
                     grid_size=G)
    u = np.linspace(0, 1, G)
    K1 = kernel_matrix("matern52", u, u, rho)
    K = np.kron(K1, K1)  # product kernel on the product grid, row-major node order
    w = np.kron(trapezoid_weights(u), trapezoid_weights(u))
    sw = np.sqrt(w)
    direct = np.sort(np.linalg.eigvalsh(sw[:, None] * K * sw[None, :]))[::-1]
    lam = r.iclp_axis.basis.eigenvalues
    np.testing.assert_allclose(np.sort(np.outer(lam, lam).ravel())[::-1], direct, atol=1e-12)
    phi = np.kron(r.iclp_axis.basis.eigenfunctions, r.iclp_axis.basis.eigenfunctions)
    np.testing.assert_allclose(K @ (w[:, None] * phi), phi * np.outer(lam, lam).ravel(), atol=1e-10)
    np.testing.assert_allclose(phi.T @ (w[:, None] * phi), np.eye(G * G), atol=1e-10)
    # Every bump integrates to 1 over the box (normalisation c(x) = integral K^eta(x, y) dy).
    assert np.sum(r.density * r.weights) == pytest.approx(1.0, rel=1e-10)


def test_iclp_laplace_noise_conformance_and_expected_error():
    r = iclp_kde(hall_mixture_points(80), (-0.5, 1.5), epsilon=0.5, kernel="matern32", rho=0.2, eta=2.0,
                     grid_size=24)
    draws = r.noise(np.random.default_rng(3), 20000)
    z = r.unit_coefficients(draws) / r.laplace_scales
    assert stats.kstest(z.ravel(), stats.laplace.cdf).pvalue > 1e-3
    for l in (0, 1, 5):
        assert stats.kstest(z[:, l], stats.laplace.cdf).pvalue > 1e-3
    # The sqrt 2 pitfall: noise of scale b_l / sqrt 2 must be rejected.
    assert stats.kstest(z.ravel() / math.sqrt(2), stats.laplace.cdf).pvalue < 1e-6
    assert r.laplace_scales == pytest.approx(r.sensitivity * np.sqrt(r.iclp_axis.basis.eigenvalues) / 0.5)
    mc = np.mean(np.sum(r.weights * draws**2, axis=1))
    assert mc == pytest.approx(r.expected_sq_l2_error, rel=0.03)
    assert np.sum(r.density * r.weights) == pytest.approx(1.0, rel=1e-10)


def test_iclp_black_box_audit_with_negative_controls():
    # A setting where one coefficient carries almost all of the worst pair's privacy loss,
    # so the likelihood-ratio statistic has power against 0.9x noise and the sqrt 2 mistake.
    kernel, rho, eta, G = "gaussian", 0.3, 3.0, 10
    _, pair = iclp_sensitivity(1, iclp_axis(kernel, rho, eta, G))
    nodes, others = np.linspace(0, 1, G), np.array([0.25, 0.5, 0.55])
    make = dict(box=(0, 1), epsilon=1.0, kernel=kernel, rho=rho, eta=eta, grid_size=G)
    rD = iclp_kde(np.r_[nodes[pair[0][0]], others], **make)
    rDp = iclp_kde(np.r_[nodes[pair[1][0]], others], **make)
    b, mu, mup = rD.laplace_scales, rD.coefficients, rDp.coefficients
    assert np.sum(np.abs(mu - mup) / b) == pytest.approx(1.0, rel=1e-9)  # the pair uses the full epsilon

    def sampler(release, scale):
        def draw(rng, size):
            c = release.unit_coefficients(release.density + scale * release.noise(rng, size))
            return np.sum((np.abs(c - mup) - np.abs(c - mu)) / b, axis=1)
        return draw

    assert not _audit(sampler(rD, 1.0), sampler(rDp, 1.0), 1.0, 0.0).flagged
    assert _audit(sampler(rD, 0.9), sampler(rDp, 0.9), 1.0, 0.0).flagged
    assert _audit(sampler(rD, 1 / math.sqrt(2)), sampler(rDp, 1 / math.sqrt(2)), 1.0, 0.0).flagged


def test_two_dimensional_paths_run_with_correct_shapes():
    pts = mixture_2d_points(300)
    box = (0.1, 0.9, 0.1, 0.9)
    hall = hall_kde(pts, box, epsilon=1, delta=1e-3, bandwidth=0.3, grid_size=20)
    iclp = iclp_kde(pts, box, epsilon=1, kernel="matern32", rho=0.1, eta=1.5, grid_size=20)
    for r in (hall, iclp):
        assert r.d == 2 and r.grid_shape == (20, 20) and r.density.shape == (20, 20) and r.m == 400
        assert r.sample(np.random.default_rng(0), 3).shape == (3, 20, 20)
        table = release_table(r, r.sample(np.random.default_rng(1), 1)[0])
        assert list(table.columns) == ["x1", "x2", "density"] and len(table) == 400
        assert r.guarantee.details["n"] == 300 and r.n_clipped_box > 0 and "n_clipped_box" not in r.guarantee.record()
    assert iclp.laplace_scales.shape == (20, 20) and iclp.guarantee.details["kernel_form"] == "product of 1-d kernels"
    assert hall.guarantee.sensitivity_for("exact") < hall.guarantee.sensitivity_for("paper")
    # A rectangular box: Hall's density integrates to ~1 when the bandwidth is small.
    small = hall_kde(np.array([[1.0, 3.0], [1.5, 2.0]]), (0, 2, 1, 5), epsilon=1, delta=0.1, bandwidth=0.1,
                         grid_size=81)
    assert np.sum(small.density * small.weights) == pytest.approx(1.0, abs=1e-3)
    # Expected error closed forms against Monte Carlo in 2-d.
    for r in (hall, iclp):
        draws = r.noise(np.random.default_rng(4), 4000)
        assert np.mean(np.sum(r.weights * draws**2, axis=(1, 2))) == pytest.approx(r.expected_sq_l2_error, rel=0.05)
        assert math.sqrt(r.expected_sq_l2_error) < r.l2_error_radius(0.95) < 3 * math.sqrt(r.expected_sq_l2_error)
        assert r.sup_error_radius(0.95) > r.sup_error_radius(0.5) > 0


def test_release_record_never_contains_data_or_estimate():
    pts = hall_mixture_points(50, seed=9)
    r = iclp_kde(pts, (0, 1), epsilon=1, grid_size=32)
    record = release_record(r, feature="column:x", n_dropped=2, seed=5)
    for key in ("mechanism", "epsilon", "delta", "tau", "bound", "calibration", "n", "m", "n_policy",
                "unit_of_privacy", "sensitivity", "sigma", "laplace_scales", "expected_sq_l2_error",
                "data_dependent_flags", "bandwidth", "box", "grid_size", "feature"):
        assert key in record
    view = analyst_view(r, n_dropped=2)  # data-derived counts: analyst view only
    for key in ("n_dropped", "n_clipped"):
        assert key not in record and key in view
    assert view["n_dropped"] == 2 and view["n_clipped"] == r.n_clipped_box
    assert record["delta"] == 0.0 and record["sigma"] is None and len(record["laplace_scales"]) == r.laplace_scales.size
    text = json.dumps({k: (list(v) if isinstance(v, np.ndarray) else v) for k, v in record.items()})
    for secret in list(pts[:5]) + list(r.density[:5]):
        assert repr(float(secret)) not in text


# --------------------------------------------------------------------------- the registry

def test_the_cli_contract_keeps_the_density_mechanism_names():
    assert KDE_MECHANISMS == tuple(KDE_REGISTRY) == ("gaussian", "iclp")
    assert KDE_MECHANISM_LABELS == {name: m.label for name, m in KDE_REGISTRY.items()}
    with pytest.raises(ParameterError, match="mechanism must be one of gaussian, iclp; got 'laplace'"):
        plan_kde_release(hall_mixture_points(20), KdeSettings(mechanism="laplace"))


@pytest.mark.parametrize("name, options", [("gaussian", dict(delta=0.1, bandwidth=0.1)), ("iclp", dict(eta=2.0))])
def test_every_density_entry_is_what_the_plumbing_reads(name, options):
    entry = KDE_REGISTRY[name]
    settings = KdeSettings(mechanism=name, box=((0.0, 1.0),), grid_size=32, bound="paper", **options)
    release = plan_kde_release(hall_mixture_points(60, seed=2), settings)
    g = release.guarantee
    assert (g.details["mechanism"], g.details["mechanism_label"], g.privacy) == (name, entry.label, entry.privacy)
    assert g.bound_label == entry.bound_labels["paper"] and g.delta == (0.1 if entry.uses_delta else 0.0)
    assert g.record()["sensitivity_bound_label"] == g.bound_label  # the published records' historical key
    assert kde_mode(settings) == entry.stream_mode(settings)
    # The commit's pieces: coefficients whose synthesis is the estimate, with the noise law's own scales.
    pieces = entry.commit_pieces(release)
    np.testing.assert_allclose(release.noise_law.synthesize(pieces.coefficients), release.density, atol=1e-10)
    np.testing.assert_array_equal(pieces.scales, release.noise_law.scales)
    assert pieces.coefficients.shape == pieces.scales.shape and pieces.float_error_bound > 0
    if not entry.uses_delta:  # Laplace coefficients on an orthonormal basis: sum 2 b_l^2 over the box volume
        volume = float(np.prod(box_widths(release.box)))
        assert release.expected_sq_l2_error == pytest.approx(
            entry.family.variance_factor * np.sum(pieces.scales**2) / volume, rel=1e-12)
    assert entry.noise_scale(release) > 0 and entry.noise_shape(release)[0] == name


def test_iclp_refusals_live_in_its_registry_entry(monkeypatch):
    entry = KDE_REGISTRY["iclp"]
    with pytest.raises(ParameterError, match=r"eta must be > 1, got 1.0"):
        entry.validate(KdeSettings(mechanism="iclp", eta=1.0))
    with pytest.raises(ParameterError, match="rho and eta"):
        entry.validate(KdeSettings(mechanism="iclp", bandwidth=0.1))
    entry.validate(KdeSettings(mechanism="iclp", eta=1.01))
    assert "Raise eta" in entry.error_hint(KdeSettings(eta=1.0)) and not entry.error_hint(KdeSettings(eta=1.5))
    # The planner asks the entry, before any data is read (the observations here are invalid).
    with pytest.raises(ParameterError, match=r"eta must be > 1, got 1.0"):
        plan_kde_release(np.zeros((3, 5)), KdeSettings(mechanism="iclp", eta=1.0))

    def refuse(settings):
        raise ParameterError("refused by the registry entry")

    monkeypatch.setitem(KDE_REGISTRY, "iclp", replace(entry, validate=refuse))
    with pytest.raises(ParameterError, match="refused by the registry entry"):
        plan_kde_release(hall_mixture_points(20), KdeSettings(mechanism="iclp"))


@pytest.mark.parametrize("original, options", [("gaussian", dict(delta=1e-5, bandwidth=0.2)), ("iclp", {})])
def test_a_new_density_entry_is_planned_streamed_and_committed_without_plumbing(original, options, monkeypatch,
                                                                                tmp_path):
    """An entry added to the registry alone (a copy of an existing one under a new name) goes
    through the planner, the streaming engine and the exact discrete commit unchanged."""
    from fdp_core.publish import export
    from fdp_core.budget.accounting import Ledger
    from fdp_core.engines.stream import stream_kde_sums

    copy = replace(KDE_REGISTRY[original], name=f"{original}-copy", label="a copy, for the test")
    monkeypatch.setitem(KDE_REGISTRY, copy.name, copy)
    settings = KdeSettings(mechanism=copy.name, box=((-3.0, 3.0),), epsilon=1.0, grid_size=24, **options)
    reference = replace(settings, mechanism=original)
    fd = _curves(np.linspace(0, 1, 11), n=40, seed=4)
    points = extract_features(fd, "value:0.5")[0]
    plan, expected = plan_kde_release(points, settings), plan_kde_release(points, reference)
    assert plan.mechanism == copy.name and plan.guarantee.details["mechanism_label"] == "a copy, for the test"
    np.testing.assert_array_equal(plan.density, expected.density)
    assert plan.sensitivity == expected.sensitivity and plan.expected_sq_l2_error == expected.expected_sq_l2_error

    path = tmp_path / "curves.csv"
    frame = pd.DataFrame(fd.data_matrix, columns=[f"{t:g}" for t in fd.grid_points])
    frame.to_csv(path, index=False)
    streamed = stream_kde_sums(path, settings, "value:0.5", chunk_rows=7)
    # The chunks add the copy's own sufficient statistic (node counts or bump sums, never the points).
    assert kde_mode(settings) == KDE_REGISTRY[original].stream_mode(reference) != "points"
    assert streamed.sums.points is None
    np.testing.assert_allclose(plan_kde_release(streamed.sums, settings).density, plan.density, rtol=1e-10,
                               atol=1e-14)

    ledger = Ledger(5.0, 1e-4)
    pending = export.prepare_kde_commit(fd, "value:0.5", settings)
    assert pending.mechanism == copy.name and pending.entry.mechanism == copy.name
    np.testing.assert_array_equal(pending.scales, export.prepare_kde_commit(fd, "value:0.5", reference).scales)
    committed = export.commit_kde(ledger, fd, "value:0.5", settings, pending=pending)
    assert committed.record["mechanism"] == copy.name and len(committed.table) == 24
    assert committed.record["noise_sampler"]["post_processing"] == copy.post_processing


# --------------------------------------------------------------------------- CLI

def _write_curves(path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    grid = np.linspace(0, 1, 21)
    values = rng.normal(0.5, 0.2, (n, 1)) + 0.3 * np.sin(2 * np.pi * grid) * rng.normal(1, 0.3, (n, 1))
    frame = pd.DataFrame(values, columns=[f"{t:g}" for t in grid])
    frame.insert(0, "age", rng.integers(20, 80, n))
    frame.insert(0, "id", [f"s{i}" for i in range(n)])
    frame.to_csv(path, index=False)
    return values


def test_cli_round_trip(tmp_path):
    cli = pytest.importorskip("fdp_core.cli")
    data = tmp_path / "curves.csv"
    values = _write_curves(data)
    out = tmp_path / "hall"
    code = cli.main(["release", "kde", "--preview", "--data", str(data), "--feature", "value:0.25", "--mechanism", "gaussian",
                     "--epsilon", "1", "--delta", "0.1", "--bandwidth", "0.1", "--box=-1,2", "--grid-size", "64",
                     "--seed", "3", "--out", str(out)])
    assert code == 0
    record = json.loads((out / "release.json").read_text())
    table = pd.read_csv(out / "release.csv")
    assert list(table.columns) == ["x", "density"] and len(table) == 64
    assert record["mechanism"] == "gaussian" and record["m"] == 64 and record["n"] == 40
    assert record["sigma"] > 0 and record["laplace_scales"] is None and "tau" in record
    assert record["feature"] == "value:0.25" and record["box"] == [[-1, 2]]
    # Same seed -> same release: the CSV is reproducible from the JSON's parameters.
    out2 = tmp_path / "hall2"
    cli.main(["release", "kde", "--preview", "--data", str(data), "--feature", "value:0.25", "--mechanism", "gaussian",
              "--epsilon", "1", "--delta", "0.1", "--bandwidth", "0.1", "--box=-1,2", "--grid-size", "64",
              "--seed", "3", "--out", str(out2)])
    pd.testing.assert_frame_equal(table, pd.read_csv(out2 / "release.csv"))
    raw = (out / "release.json").read_text() + (out / "release.csv").read_text()
    assert repr(float(values[0, 5])) not in raw

    out3 = tmp_path / "iclp2d"
    code = cli.main(["release", "kde", "--preview", "--data", str(data), "--feature", "column:age,mean:0.2:0.8", "--mechanism",
                     "iclp", "--epsilon", "2", "--box", "0,100,-1,2", "--grid-size", "16", "--kernel", "matern32",
                     "--rho", "0.2", "--eta", "1.5", "--out", str(out3)])
    assert code == 0
    record = json.loads((out3 / "release.json").read_text())
    assert list(pd.read_csv(out3 / "release.csv").columns) == ["x1", "x2", "density"]
    assert record["delta"] == 0 and record["sigma"] is None and len(record["laplace_scales"]) == 256
    assert record["feature"] == "column:age,mean:0.2:0.8" and record["bound"] == "exact"


@pytest.mark.parametrize("args, message", [
    (["--feature", "median"], "unknown feature"),
    (["--feature", "column:height"], "no column 'height'"),
    (["--feature", "value:5"], "outside"),
    (["--feature", "max", "--bandwidth", "0"], "bandwidth must be > 0"),
    (["--feature", "max", "--box", "5,6"], "outside the box"),
    (["--feature", "max", "--box", "0,1,0,1"], "2-d"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    cli = pytest.importorskip("fdp_core.cli")
    data = tmp_path / "curves.csv"
    _write_curves(data)
    base = ["release", "kde", "--preview", "--data", str(data), "--epsilon", "1", "--delta", "0.1", "--box=-2,3",
            "--out", str(tmp_path / "o")]
    code = cli.main(base + args)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "o" / "release.json").exists()



def test_error_radii_drawn_in_chunks_equal_all_draws_at_once_and_stay_small():
    """Issue 40: the 4000 Monte Carlo draws of the radii come in ~4 MB chunks (same stream, same
    quantiles), not as (4000, 64 x 64) arrays held several times (~375 MB per session)."""
    from chunked_monte_carlo import chunked_equals_unchunked

    from fdp_core.mechanisms.weighted_chi2 import monte_carlo_upper_quantile

    points = np.random.default_rng(0).uniform(0, 1, (200, 2))
    release = plan_kde_release(points, KdeSettings(box=[(0.0, 1.0), (0.0, 1.0)], epsilon=1.0, delta=1e-5))
    draws = release.noise(np.random.default_rng(12345), 4000).reshape(4000, -1)  # the unchunked reference
    # the radius is the 99.9% upper confidence bound on the quantile (issue 41), of the same draws
    expected = monte_carlo_upper_quantile(np.sqrt((draws**2) @ release.weights.ravel()), 0.95)
    del draws
    assert release.m == 64 * 64
    chunked_equals_unchunked(lambda: release.l2_error_radius(0.95), expected, peak_limit=40 * 2**20)
