"""Bingham samplers (METHODS.md 5 and 10): moments against quadrature, the envelope bound,
and every sampler against an independent exact reference.

References are deliberately naive and share no code with the samplers: quadrature in polar
or spherical coordinates, and rejection sampling from the *uniform* distribution (on the
sphere, on the sphere of a complement, on the Stiefel manifold) with the trivial bound
exp(trace - max). Comparisons use z-scores of the entries of E[v v^T] or E[V V^T], with
batch means for the Gibbs chain; each comparison has a mis-specified control that must
be rejected, so a test cannot pass by lacking power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import brentq
from scipy.stats import ortho_group

from fdp_core.errors import ParameterError
from fdp_core.mechanisms import bingham
from fdp_core.mechanisms.bingham import (log_envelope_ratio, sample_bingham_deflation,
                                         sample_matrix_bingham_gibbs, sample_vector_bingham, solve_acg_b)

Z_LIMIT = 4.5  # per-entry z-score limit; over <= 110 entries P(false alarm) < 1e-3


def _rotated(eigenvalues, seed):
    Q = ortho_group.rvs(len(eigenvalues), random_state=seed)
    return Q @ np.diag(eigenvalues) @ Q.T


def _upper(M):
    i, j = np.triu_indices(M.shape[-1])
    return M[..., i, j]


def _iid_mean_se(stat):
    return stat.mean(axis=0), stat.std(axis=0, ddof=1) / math.sqrt(stat.shape[0])


def _batch_mean_se(stat, n_batches=50):
    """Mean and batch-means standard error of a Markov chain's statistic (rows = time)."""
    usable = stat.shape[0] - stat.shape[0] % n_batches
    batches = stat[:usable].reshape(n_batches, -1, stat.shape[1]).mean(axis=1)
    return stat.mean(axis=0), batches.std(axis=0, ddof=1) / math.sqrt(n_batches)


def _max_z(mean_a, se_a, mean_b, se_b):
    return float(np.max(np.abs(mean_a - mean_b) / np.sqrt(se_a**2 + se_b**2)))


# --------------------------------------------------------------------------- envelope

def test_solve_acg_b_is_the_root_in_1_to_q():
    rng = np.random.default_rng(0)
    for q in (2, 3, 10, 40):
        for scale in (1e-3, 0.3, 3.0, 300.0):
            lam = np.concatenate([[0.0], rng.exponential(scale, q - 1)])
            b = solve_acg_b(lam)
            ref = brentq(lambda x: np.sum(1.0 / (x + 2 * lam)) - 1.0, 1.0 - 1e-12, q + 1e-12)
            assert 1.0 <= b <= q
            assert b == pytest.approx(ref, rel=1e-9)
    assert solve_acg_b(np.zeros(7)) == pytest.approx(7.0)  # uniform: the envelope is exact
    assert solve_acg_b(np.array([0.0, 1e12, 1e12])) == pytest.approx(1.0, abs=1e-9)


def test_envelope_ratio_never_exceeds_one_and_is_tight():
    """log(target / (M envelope)) <= 0 at every point, and M is the smallest such constant."""
    rng = np.random.default_rng(1)
    for trial in range(60):
        p = int(rng.integers(2, 41))
        scale = 10.0 ** rng.uniform(-3, 4)
        a = rng.normal(0, scale, p)
        lam = a.max() - a
        b = solve_acg_b(lam)
        x = rng.standard_normal((4000, p))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        # Add eigen-directions and, where it exists, a point at the maximiser u* = (p - b)/2.
        pts = [x, np.eye(p)]
        u_star = (p - b) / 2
        order = np.argsort(lam)
        lo, hi = order[0], order[-1]
        if lam[hi] >= u_star:
            mix = np.zeros(p)
            mix[hi] = math.sqrt(u_star / lam[hi]) if lam[hi] > 0 else 0.0
            mix[lo] = math.sqrt(1 - mix[hi] ** 2)
            pts.append(mix[None, :])
        pts = np.vstack(pts)
        ratio = log_envelope_ratio(pts, lam, b)
        # Independent computation: log target - log ACG kernel - log M, with M found by a
        # dense numerical maximisation over u >= 0 of exp(-u) (1 + 2u/b)^(p/2).
        u = (pts**2) @ lam
        log_target = -u
        log_acg = -(p / 2) * np.log1p(2 * u / b)
        u_grid = np.concatenate([np.linspace(0, 2 * p, 200_001), [u_star] if u_star > 0 else []])
        log_m = np.max(-u_grid + (p / 2) * np.log1p(2 * u_grid / b))
        assert np.allclose(ratio, log_target - log_acg - log_m, atol=1e-6)
        assert ratio.max() <= 1e-12, (trial, p, scale)
        if lam[hi] >= u_star:
            assert ratio.max() == pytest.approx(0.0, abs=1e-9)  # attained: M is not loose


def test_weak_concentration_keeps_high_acceptance():
    """Solving for b (not fixing b = 1) keeps acceptance near 1 when A is nearly isotropic."""
    A = _rotated(np.linspace(-0.05, 0.05, 40), seed=2)
    draws = sample_vector_bingham(A, 20_000, np.random.default_rng(3))
    assert draws.acceptance_rate > 0.9
    assert draws.b > 30
    # The b = 1 envelope on the same target accepts far less often (the collapse avoided).
    lam = np.linalg.eigvalsh(A)
    lam = lam.max() - lam
    x = np.random.default_rng(4).standard_normal((20_000, 40)) / np.sqrt(1 + 2 * lam)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert np.mean(np.exp(log_envelope_ratio(x, lam, 1.0))) < 0.05


# --------------------------------------------------------------------------- moments vs quadrature

def _moments_p2(A):
    def integrand(theta, i, j):
        x = np.array([math.cos(theta), math.sin(theta)])
        return x[i] * x[j] * math.exp(x @ A @ x)
    z = integrate.quad(lambda t: math.exp(np.array([math.cos(t), math.sin(t)]) @ A
                                          @ np.array([math.cos(t), math.sin(t)])), 0, 2 * math.pi, limit=200)[0]
    return np.array([[integrate.quad(integrand, 0, 2 * math.pi, args=(i, j), limit=200)[0] / z
                      for j in range(2)] for i in range(2)])


def _moments_p3(A):
    def point(theta, phi):  # theta polar angle in [0, pi], phi in [0, 2 pi)
        return np.array([math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta)])

    def weight(phi, theta, i=None, j=None):
        x = point(theta, phi)
        w = math.exp(x @ A @ x) * math.sin(theta)
        return w if i is None else w * x[i] * x[j]

    opts = dict(epsabs=1e-11, epsrel=1e-10)
    z = integrate.dblquad(weight, 0, math.pi, 0, 2 * math.pi, **opts)[0]
    out = np.empty((3, 3))
    for i in range(3):
        for j in range(i, 3):
            out[i, j] = out[j, i] = integrate.dblquad(weight, 0, math.pi, 0, 2 * math.pi, args=(i, j),
                                                      **opts)[0] / z
    return out


@pytest.mark.parametrize("eigs", [(2.0, -1.0), (12.0, 0.0), (0.1, 0.0)])
def test_vector_bingham_moments_p2_match_quadrature(eigs):
    A = _rotated(eigs, seed=5)
    draws = sample_vector_bingham(A, 200_000, np.random.default_rng(6)).samples
    mean, se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", draws, draws)))
    exact = _upper(_moments_p2(A))
    assert np.max(np.abs(mean - exact) / se) < Z_LIMIT
    # Control: the same comparison rejects draws made for a mis-scaled matrix.
    wrong = sample_vector_bingham(0.8 * A if eigs[0] > 1 else 5 * A, 200_000, np.random.default_rng(7)).samples
    w_mean, w_se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", wrong, wrong)))
    assert np.max(np.abs(w_mean - exact) / w_se) > Z_LIMIT


@pytest.mark.parametrize("eigs", [(1.5, 0.3, -2.0), (25.0, 3.0, 0.0)])
def test_vector_bingham_moments_p3_match_quadrature(eigs):
    A = _rotated(eigs, seed=8)
    draws = sample_vector_bingham(A, 200_000, np.random.default_rng(9)).samples
    assert np.allclose(np.linalg.norm(draws, axis=1), 1.0)
    mean, se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", draws, draws)))
    exact = _upper(_moments_p3(A))
    assert np.max(np.abs(mean - exact) / se) < Z_LIMIT
    wrong = sample_vector_bingham(0.8 * A, 200_000, np.random.default_rng(10)).samples
    w_mean, w_se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", wrong, wrong)))
    assert np.max(np.abs(w_mean - exact) / w_se) > Z_LIMIT


# --------------------------------------------------------------------------- references by naive rejection

def _reference_matrix_bingham(A, k, n, rng):
    """Exact draws of etr(V^T A V) by rejection from Haar-uniform V (bound: top-k eigenvalues)."""
    p = A.shape[0]
    top = np.sum(np.sort(np.linalg.eigvalsh(A))[-k:])
    out = []
    while sum(len(o) for o in out) < n:
        Q, R = np.linalg.qr(rng.standard_normal((200_000, p, k)))
        V = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
        log_w = np.einsum("nil,ij,njl->n", V, A, V) - top
        out.append(V[np.log(rng.random(V.shape[0])) < log_w])
    return np.concatenate(out)[:n]


def _reference_deflation(matrices, n, rng):
    """v_j by rejection from the uniform distribution on the unit sphere of the complement."""
    p = matrices[0].shape[0]
    V = np.zeros((n, p, 0))
    for B in matrices:
        top = np.linalg.eigvalsh(B)[-1]  # >= the largest eigenvalue of any compression
        col = np.empty((n, p))
        todo = np.arange(n)
        while todo.size:
            z = rng.standard_normal((todo.size, p))
            prev = V[todo]
            z -= np.einsum("nil,nl->ni", prev, np.einsum("nil,ni->nl", prev, z))
            z /= np.linalg.norm(z, axis=1, keepdims=True)
            ok = np.log(rng.random(todo.size)) < np.einsum("ni,ij,nj->n", z, B, z) - top
            col[todo[ok]] = z[ok]
            todo = todo[~ok]
        V = np.concatenate([V, col[:, :, None]], axis=2)
    return V


def _projector_stats(V):
    return _upper(np.einsum("nil,njl->nij", V, V))


def test_gibbs_agrees_with_exact_reference_weak_p10():
    A = _rotated(np.linspace(-1.5, 1.5, 10), seed=11)
    k = 2
    ref = _reference_matrix_bingham(A, k, 40_000, np.random.default_rng(12))
    ref_mean, ref_se = _iid_mean_se(_projector_stats(ref))
    chain = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(13), n_sweeps=20_000, burn_in=500, thin=1)
    assert chain.samples.shape == (19_500, 10, 2)
    g_mean, g_se = _batch_mean_se(_projector_stats(chain.samples))
    assert _max_z(g_mean, g_se, ref_mean, ref_se) < Z_LIMIT
    # Power: the same comparison tells this chain apart from the target for 0.6 A.
    wrong = _reference_matrix_bingham(0.6 * A, k, 40_000, np.random.default_rng(14))
    w_mean, w_se = _iid_mean_se(_projector_stats(wrong))
    assert _max_z(g_mean, g_se, w_mean, w_se) > Z_LIMIT


def test_deflation_agrees_with_sequential_reference_weak_p10():
    base = -0.5 * np.diag(np.linspace(0.2, 2.0, 10))
    data = _rotated(np.linspace(0.0, 4.0, 10), seed=15)
    matrices = [0.6 * data + base, 0.4 * data + base]  # unequal eps split, shared base term
    n = 30_000
    ref = _reference_deflation(matrices, n, np.random.default_rng(16))
    draws = sample_bingham_deflation(matrices, np.random.default_rng(17), n).samples
    assert np.allclose(np.einsum("nil,nim->nlm", draws, draws), np.eye(2), atol=1e-10)

    def stats(V):  # the first component alone, and the subspace: the order matters here
        return np.hstack([_upper(np.einsum("ni,nj->nij", V[:, :, 0], V[:, :, 0])), _projector_stats(V)])

    d_mean, d_se = _iid_mean_se(stats(draws))
    r_mean, r_se = _iid_mean_se(stats(ref))
    assert _max_z(d_mean, d_se, r_mean, r_se) < Z_LIMIT
    # Power: the comparison tells these draws apart from a second step run with the total
    # epsilon instead of its own eps_2.
    swapped = _reference_deflation([matrices[0], data + base], n, np.random.default_rng(18))
    s_mean, s_se = _iid_mean_se(stats(swapped))
    assert _max_z(d_mean, d_se, s_mean, s_se) > Z_LIMIT


def test_gibbs_with_one_column_draws_the_exact_vector_bingham_when_concentrated():
    """k = 1: every Gibbs conditional is the full target, so the chain is iid exact draws.

    This exercises the tracked-eigenvector envelopes (not the spectral fallback) in a
    concentrated case, against the eigendecomposition-based sampler.
    """
    A = _rotated([40.0, 25.0, 5.0, 0.0, -3.0, -30.0], seed=19)
    chain = sample_matrix_bingham_gibbs(A, 1, np.random.default_rng(20), n_sweeps=30_000, burn_in=0, thin=1)
    assert chain.n_spectral_solves < 0.1 * chain.n_sweeps
    exact = sample_vector_bingham(A, 100_000, np.random.default_rng(21)).samples
    c = chain.samples[:, :, 0]
    g_mean, g_se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", c, c)))
    e_mean, e_se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", exact, exact)))
    assert _max_z(g_mean, g_se, e_mean, e_se) < Z_LIMIT


def test_conditional_envelope_stays_exact_for_any_valid_shift():
    """The ACG test is exact for every s > lambda_max, however far from optimal."""
    AS = _rotated([6.0, 2.0, 0.5, -1.0], seed=22)
    top = np.linalg.eigvalsh(AS)[-1]
    rng = np.random.default_rng(23)
    exact = sample_vector_bingham(AS, 100_000, np.random.default_rng(24)).samples
    e_mean, e_se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", exact, exact)))
    for offset in (1e-3, 7.0):
        L = np.linalg.cholesky((top + offset) * np.eye(4) - AS)
        with bingham.single_blas_thread():  # 25,000 tiny solves: threads only add overhead
            draws = np.array([bingham._acg_draw(L, rng, 16)[0] for _ in range(25_000)])
        m, se = _iid_mean_se(_upper(np.einsum("ni,nj->nij", draws, draws)))
        assert _max_z(m, se, e_mean, e_se) < Z_LIMIT, offset


# --------------------------------------------------------------------------- robustness

@pytest.mark.parametrize("p,k", [(2, 1), (3, 2), (6, 5), (11, 10)])
@pytest.mark.parametrize("scale", [0.0, 1e-8, 0.01])
def test_gibbs_never_returns_non_finite_values_when_p_is_k_plus_1(p, k, scale):
    """q = p - k + 1 = 2 and weak concentration: where the coordinate-scan port failed."""
    A = scale * _rotated(np.linspace(-1, 1, p), seed=p)
    for init in ("random", "mode"):
        chain = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(25), n_sweeps=400, burn_in=100, thin=3,
                                            init=init)
        for V in (chain.sample, *chain.samples):
            assert np.all(np.isfinite(V))
            assert np.allclose(V.T @ V, np.eye(k), atol=1e-9)
        assert np.all(np.isfinite(chain.trace))


def test_gibbs_concentrated_p40_k3_is_orthonormal_and_efficient():
    rng = np.random.default_rng(26)
    X = rng.normal(size=(500, 40)) / np.arange(1, 41)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    A = 5.0 * X.T @ X - 0.5 * np.diag(np.arange(1, 41) ** 3.0)
    chain = sample_matrix_bingham_gibbs(A, 3, np.random.default_rng(27), n_sweeps=1500)
    assert np.allclose(chain.sample.T @ chain.sample, np.eye(3), atol=1e-9)
    assert chain.acceptance_rate > 0.08  # KGM's worst case ~ sqrt(2/(e q)) = 0.14 at q = 38
    assert chain.n_spectral_solves < 0.3 * 3 * chain.n_sweeps
    top = np.linalg.eigh(A)[1][:, -3:]
    assert 3 - np.sum((chain.sample.T @ top) ** 2) < 0.2  # concentrated near the top subspace
    assert chain.trace.shape == (1500, 3) and chain.samples.shape[0] == len(range(150 + 13 - 1, 1500, 13))


def test_bad_input_is_refused():
    with pytest.raises(ParameterError, match="symmetric"):
        sample_vector_bingham(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ParameterError, match="non-finite"):
        sample_vector_bingham(np.array([[np.nan, 0.0], [0.0, 0.0]]))
    with pytest.raises(ParameterError, match="k < p"):
        sample_matrix_bingham_gibbs(np.eye(3), 3)
    with pytest.raises(ParameterError, match="p > k"):
        sample_bingham_deflation([np.eye(2), np.eye(2)])
    with pytest.raises(ParameterError, match="burn_in"):
        sample_matrix_bingham_gibbs(np.eye(3), 1, n_sweeps=10, burn_in=10)
    with pytest.raises(ParameterError, match="orthonormal"):
        sample_matrix_bingham_gibbs(np.eye(3), 2, init=np.ones((3, 2)))


def test_compiled_gibbs_agrees_with_the_python_chain_in_distribution():
    """The numba chain (gibbs_compiled.py) and the Python chain target the same law: their
    projector moments agree within batch-means error (not bit for bit: different streams)."""
    from fdp_core.mechanisms import gibbs_compiled

    if not gibbs_compiled.available():
        pytest.skip("numba not installed")
    A = _rotated(np.linspace(-2.0, 3.0, 8), seed=31)
    k = 2
    compiled = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(32), n_sweeps=20_000, burn_in=500, thin=1,
                                           compiled=True)
    python = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(52), n_sweeps=20_000, burn_in=500, thin=1,
                                         compiled=False)
    # 20 batches of 975 sweeps: batch means SEs that also cover the slower-mixing entries.
    c_mean, c_se = _batch_mean_se(_projector_stats(compiled.samples), 20)
    p_mean, p_se = _batch_mean_se(_projector_stats(python.samples), 20)
    assert _max_z(c_mean, c_se, p_mean, p_se) < Z_LIMIT
    ref = _reference_matrix_bingham(A, k, 40_000, np.random.default_rng(35))
    r_mean, r_se = _iid_mean_se(_projector_stats(ref))
    assert _max_z(c_mean, c_se, r_mean, r_se) < Z_LIMIT
    assert np.allclose(compiled.sample.T @ compiled.sample, np.eye(k), atol=1e-9)
    # Power: the same comparison tells the compiled chain apart from the Python chain run on 0.6 A.
    wrong = sample_matrix_bingham_gibbs(0.6 * A, k, np.random.default_rng(34), n_sweeps=20_000, burn_in=500, thin=1,
                                        compiled=False)
    w_mean, w_se = _batch_mean_se(_projector_stats(wrong.samples), 20)
    assert _max_z(c_mean, c_se, w_mean, w_se) > Z_LIMIT
    # Same seed, same compiled chain (reproducible for a seed).
    again = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(32), n_sweeps=300, compiled=True)
    first = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(32), n_sweeps=300, compiled=True)
    assert np.array_equal(again.sample, first.sample)


# --------------------------------------------------------------------------- concentrated spectra (DTI)

# The shape of DTI's mechanism matrix on the Components page's defaults (kernel basis, p = 14,
# epsilon = gamma = tau = 1): one dominant eigenvalue, the rest close together. Its top
# direction is shared by every column of the matrix Bingham, so each conditional's top
# eigenvector moves with the other columns: the case where the tracked envelope used to fall
# back to an eigendecomposition for a quarter of the column updates.
DTI_LIKE = [46.0, -2.5, -3.0, -4.0, -5.5, -8.0]


@pytest.mark.parametrize("compiled", [False, True])
def test_gibbs_with_p_minus_one_columns_is_exact_on_a_dti_like_spectrum(compiled):
    """k = p - 1: etr(V^T A V) = tr(A) - u^T A u for u spanning the complement of V, so V V^T =
    I - u u^T with u exactly the vector Bingham of -A: an exact reference for the chain's
    law on a concentrated spectrum."""
    from fdp_core.mechanisms import gibbs_compiled

    if compiled and not gibbs_compiled.available():
        pytest.skip("numba not installed")
    A = _rotated(DTI_LIKE, seed=41)
    p = A.shape[0]
    chain = sample_matrix_bingham_gibbs(A, p - 1, np.random.default_rng(42), n_sweeps=12_000, burn_in=200, thin=1,
                                        compiled=compiled)
    assert chain.n_spectral_solves < 0.1 * chain.n_sweeps * (p - 1)
    g_mean, g_se = _batch_mean_se(_projector_stats(chain.samples), 20)
    u = sample_vector_bingham(-A, 100_000, np.random.default_rng(43)).samples
    e_mean, e_se = _iid_mean_se(_upper(np.eye(p)[None] - np.einsum("ni,nj->nij", u, u)))
    assert _max_z(g_mean, g_se, e_mean, e_se) < Z_LIMIT
    # Power: the same comparison tells the chain apart from the target for 0.8 A.
    w = sample_vector_bingham(-0.8 * A, 100_000, np.random.default_rng(44)).samples
    w_mean, w_se = _iid_mean_se(_upper(np.eye(p)[None] - np.einsum("ni,nj->nij", w, w)))
    assert _max_z(g_mean, g_se, w_mean, w_se) > Z_LIMIT


@pytest.mark.parametrize("tail", [8, 14])
def test_gibbs_on_a_dti_like_spectrum_rarely_falls_back_and_agrees_between_chains(tail):
    """p = 14 and 20, k = 3 with DTI's spectrum shape: the envelope holds without
    eigendecompositions (beyond the periodic refresh; the small-k route at p = 20: without its
    safe shift) and the compiled and Python chains agree in distribution."""
    from fdp_core.mechanisms import gibbs_compiled

    if not gibbs_compiled.available():
        pytest.skip("numba not installed")
    A = _rotated(DTI_LIKE + list(np.linspace(-9.0, -40.0, tail)), seed=45)
    assert gibbs_compiled._use_lowrank(A.shape[0], 3) == (tail == 14)
    k = 3
    runs = {}
    for compiled, seed in ((True, 46), (False, 47)):
        chain = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(seed), n_sweeps=12_000, burn_in=500, thin=1,
                                            compiled=compiled)
        assert chain.n_spectral_solves < 0.08 * k * chain.n_sweeps, compiled
        assert np.allclose(chain.sample.T @ chain.sample, np.eye(k), atol=1e-9)
        runs[compiled] = _batch_mean_se(_projector_stats(chain.samples), 20)
    assert _max_z(*runs[True], *runs[False]) < Z_LIMIT


# --------------------------------------------------------------------------- small k: the low-rank envelope

def _lowrank_pieces(a, Z, l):
    """The compiled chain's reflections and low-rank form of column l's conditional."""
    from fdp_core.mechanisms import gibbs_compiled as gc

    p, k = Z.shape
    m = k - 1
    Vh, Wl, betas = np.empty((m, p)), np.empty((m, p)), np.empty(m)
    gc._householders(Z, l, np.empty((p, m)), Vh, betas)
    gc._lowrank_terms(a, Vh, betas, Wl, np.empty(p))
    Q = np.eye(p)
    for j in range(m):
        Q = Q @ (np.eye(p) - betas[j] * np.outer(Vh[j], Vh[j]))
    return Q, np.vstack([Vh[:, :p - m], Wl[:, :p - m]])


@pytest.mark.parametrize("p,k", [(9, 2), (12, 3), (40, 2), (40, 3), (20, 4)])
def test_lowrank_envelope_is_the_restricted_matrix_and_its_factor_is_exact(p, k):
    """Small k (gibbs_compiled._lowrank_chain): the complement basis, the restricted matrix
    diag(s - a) + G J G^T, Woodbury's tr(M^-1) and its derivative, the positive-definiteness
    certificate and the proposal factor F (F F^T = M^-1, F^T M F = I) against dense linear
    algebra, and tr(M^-1) and its derivative from that factor; the chosen shift is KGM's
    (tr(M^-1) = 2 within 5%)."""
    from fdp_core.mechanisms import gibbs_compiled as gc

    if not gc.available():
        pytest.skip("numba not installed")
    rng = np.random.default_rng(p * 10 + k)
    a = np.sort(5.0 * rng.standard_normal(p))
    Z = np.linalg.qr(rng.standard_normal((p, k)))[0]
    m, l = k - 1, 1
    q, n = p - m, 2 * m
    Q, G = _lowrank_pieces(a, Z, l)
    S = Q[:, :q]
    assert np.abs(S.T @ np.delete(Z, l, axis=1)).max() < 1e-12
    assert np.abs(S.T @ S - np.eye(q)).max() < 1e-12
    AS = S.T @ (a[:, None] * S)
    J = np.block([[np.zeros((m, m)), np.eye(m)], [np.eye(m), np.zeros((m, m))]])
    assert np.abs(np.diag(a[:q]) - G.T @ J @ G - AS).max() < 1e-12 * np.abs(a).max()
    theta_max = np.linalg.eigvalsh(AS)[-1]
    work = [np.empty((n, n)) for _ in range(5)] + [np.empty((n, 2 * n)), np.empty((n, n)), np.empty((n, n))]
    for s in (theta_max + 0.3, theta_max + 5.0, a[-1] + 1.0, theta_max - 0.01, (theta_max + a[q - 1]) / 2):
        valid = s > theta_max
        f, fp, ok = gc._woodbury(a, q, G, s, *work, True)
        r, Qt, Xm = np.empty(q), np.empty((n, q)), np.empty((n, n))
        certified = gc._lowrank_factor(a, q, G, s, r, Qt, np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), Xm)
        assert ok == valid and certified == valid, s - theta_max
        if not valid:
            continue
        M = s * np.eye(q) - AS
        trace = lambda t: np.trace(np.linalg.inv(t * np.eye(q) - AS))  # noqa: E731
        assert f == pytest.approx(trace(s), rel=1e-10)
        assert fp == pytest.approx((trace(s + 1e-6) - trace(s - 1e-6)) / 2e-6, rel=1e-5)
        assert gc._factor_trace(q, r, Qt, Xm, np.empty((n, n)), np.empty((n, n))) == pytest.approx((f, fp), rel=1e-9)
        F = r[:, None] * (np.eye(q) + Qt.T @ Xm @ Qt)
        assert np.abs(F @ F.T - np.linalg.inv(M)).max() < 1e-12 * np.abs(np.linalg.inv(M)).max()
        assert np.abs(F.T @ M @ F - np.eye(q)).max() < 1e-12
    column = Z[:, l]
    for start in (-np.inf, theta_max + 40.0, theta_max + 1e-3, a[-1] + 1.0):
        s, restarted = gc._lowrank_shift(a, q, G, start, 0.0, 0.0, float(column @ (a * column)), *work)
        assert s > theta_max and not (restarted and start > theta_max)
        assert np.trace(np.linalg.inv(s * np.eye(q) - AS)) == pytest.approx(2.0, rel=0.051)
    # The other columns on A's top eigenvectors: the case where a step from the right crosses
    # lambda_max (the shift must come down far below a_max).
    Z = np.eye(p)[:, ::-1][:, :k] + 1e-3 * rng.standard_normal((p, k))
    Z = np.linalg.qr(Z)[0]
    Q, G = _lowrank_pieces(a, Z, 0)
    S = Q[:, :q]
    AS = S.T @ (a[:, None] * S)
    s, _ = gc._lowrank_shift(a, q, G, -np.inf, 0.0, 0.0, float(Z[:, 0] @ (a * Z[:, 0])), *work)
    assert s > np.linalg.eigvalsh(AS)[-1]
    assert np.trace(np.linalg.inv(s * np.eye(q) - AS)) == pytest.approx(2.0, rel=0.051)
    assert np.trace(np.linalg.inv(s * np.eye(q) - AS)) == pytest.approx(2.0, rel=0.051)


def test_lowrank_gibbs_agrees_with_exact_reference_p15_k3():
    """The small-k compiled chain (low-rank envelope, k = 3 at p = 15) against exact draws by
    rejection from the Haar measure."""
    from fdp_core.mechanisms import gibbs_compiled

    if not gibbs_compiled.available():
        pytest.skip("numba not installed")
    assert gibbs_compiled._use_lowrank(15, 3) and gibbs_compiled._use_lowrank(40, 3)
    assert not gibbs_compiled._use_lowrank(14, 3)  # DTI's page defaults: the general route
    A = _rotated(np.linspace(-1.5, 1.5, 15), seed=61)
    k = 3
    chain = sample_matrix_bingham_gibbs(A, k, np.random.default_rng(62), n_sweeps=20_000, burn_in=500, thin=1,
                                        compiled=True)
    assert np.allclose(chain.sample.T @ chain.sample, np.eye(k), atol=1e-9)
    assert chain.n_spectral_solves < 0.02 * k * chain.n_sweeps
    g_mean, g_se = _batch_mean_se(_projector_stats(chain.samples), 20)
    ref = _reference_matrix_bingham(A, k, 30_000, np.random.default_rng(63))
    r_mean, r_se = _iid_mean_se(_projector_stats(ref))
    assert _max_z(g_mean, g_se, r_mean, r_se) < Z_LIMIT
    # Power: the same comparison tells the chain apart from the target for 0.6 A.
    wrong = _reference_matrix_bingham(0.6 * A, k, 30_000, np.random.default_rng(64))
    w_mean, w_se = _iid_mean_se(_projector_stats(wrong))
    assert _max_z(g_mean, g_se, w_mean, w_se) > Z_LIMIT


@pytest.mark.parametrize("scale", [0.0, 1e-8, 0.01, 1e4])
def test_lowrank_gibbs_stays_finite_and_orthonormal_at_any_concentration(scale):
    """No concentration (A = 0: the reflections' w vanish, a zero column in the factor) up to a
    very concentrated A, from a random start and from the mode."""
    from fdp_core.mechanisms import gibbs_compiled

    if not gibbs_compiled.available():
        pytest.skip("numba not installed")
    from fdp_core.mechanisms import gibbs_compiled as gc

    assert gc._use_lowrank(15, 3)
    A = scale * _rotated(np.linspace(-1, 1, 15), seed=65)
    for init in ("random", "mode"):
        chain = sample_matrix_bingham_gibbs(A, 3, np.random.default_rng(66), n_sweeps=400, burn_in=100, thin=3,
                                            init=init, compiled=True)
        for V in (chain.sample, *chain.samples):
            assert np.all(np.isfinite(V))
            assert np.allclose(V.T @ V, np.eye(3), atol=1e-9)
        assert np.all(np.isfinite(chain.trace)) and chain.acceptance_rate > 0.05
