"""Bingham samplers for the exponential mechanism of private PCA (METHODS.md section 5).

Three samplers, all for densities proportional to exp(tr(V^T A V)) with respect to the
uniform measure:

* :func:`sample_vector_bingham` -- exact rejection sampling of the vector Bingham
  exp(v^T A v) on the unit sphere S^(p-1), with the angular central Gaussian (ACG)
  envelope of Kent, Ganeiber & Mardia (2018, "A new unified approach for the simulation
  of a wide class of directional distributions", JCGS).
* :func:`sample_bingham_deflation` -- sequential deflation for k > 1: v_j exact from a
  vector Bingham on the orthogonal complement of v_1..v_(j-1), each step with its own
  matrix (its own epsilon_j). Every step is exact; the composite is a *different*
  mechanism from the matrix Bingham, accounted for by composition.
* :func:`sample_matrix_bingham_gibbs` -- the matrix Bingham etr(V^T A V) on the Stiefel
  manifold by Gibbs sampling (Hoff 2009, "Simulation of the matrix Bingham-von
  Mises-Fisher distribution", JCGS): columns in random order, each full conditional a
  vector Bingham on the complement of the other columns, drawn with the exact ACG
  sampler. The chain's output is only approximately distributed as the target, so a
  release made with it is approximate DP.

The matrix A of private PCA's exponential mechanism (:func:`exponential_mechanism_from_gram`)
and the public ordering of a Gibbs frame (:func:`order_subspace`) live here too: the sampler
entries of ``fdp_core/registry/pca.py`` build their draws from this module alone.

The ACG rejection step, in the form used throughout
----------------------------------------------------
Let A be q x q symmetric and s > lambda_max(A). Propose y ~ N(0, (s I - A)^-1) and
x = y / ||y|| (an ACG draw with matrix Omega proportional to s I - A), and accept with
probability exp(h(t)), where t = x^T (s I - A) x and

    h(t) = (q/2) (log w - w + 1),   w = 2 t / q.

Since log w <= w - 1, h <= 0 for every x: the envelope is valid for *any* s above the
largest eigenvalue, and the accepted x has density proportional to exp(x^T A x).
(Derivation: on the sphere exp(x^T A x) = e^s exp(-t) and the ACG density is
proportional to t^(-q/2), so the log ratio is -t + (q/2) log t + const; its maximum over
t > 0 is at t = q/2, and subtracting it gives h.) Writing lam_i = max(a) - a_i for the
eigenvalues a of A and s = max(a) + b/2, this is exactly the Kent-Ganeiber-Mardia test

    log U < -u + (q - b)/2 + (q/2) log(b (1 + 2u/b) / q),   u = sum_i lam_i x_i^2,

with proposal y_i ~ N(0, 1 / (1 + 2 lam_i / b)). The efficient choice solves
sum_i 1/(b + 2 lam_i) = 1 for b in [1, q], equivalently tr((s I - A)^-1) = 2. Fixing
b = 1 instead makes acceptance collapse in the weakly concentrated regime (small n eps).
The worst-case acceptance rate of the optimal b is about sqrt(2 / (e q)).

Floating point: these samplers use numpy's Generator and floating-point arithmetic; no
hardened (e.g. discretised) version of Bingham sampling exists, which exports must state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas, lapack

from ..errors import ParameterError

from ..threads import single_blas_thread  # noqa: F401  (re-exported: pca.py and the app import it from here)

# ---------------------------------------------------------------------------------------
# Envelope parameters and the acceptance test
# ---------------------------------------------------------------------------------------


def solve_acg_b(lam: np.ndarray) -> float:
    """Solve sum_i 1/(b + 2 lam_i) = 1 for b in [1, q] (Kent, Ganeiber & Mardia 2018).

    ``lam`` are the shifted eigenvalues lam_i = max(a) - a_i >= 0 (one of them is 0). The
    left side decreases in b, is >= 1 at b = 1 (the zero term alone gives 1) and <= 1 at
    b = q (every term is <= 1/q), so the root exists and is unique in [1, q].
    """
    return float(_solve_acg_b_rows(np.asarray(lam, dtype=float)[None, :])[0])


def _solve_acg_b_rows(lam: np.ndarray) -> np.ndarray:
    """:func:`solve_acg_b` for every row of lam (n, q).

    g(b) = 1 / sum_i 1/(b + 2 lam_i) is concave and increasing (a harmonic sum of affine
    functions) with g(1) <= 1, so Newton's method on g(b) = 1 from b = 1 increases
    monotonically to the root without overshooting.
    """
    two_lam = 2.0 * lam
    b = np.ones(lam.shape[0])
    for _ in range(200):
        t = 1.0 / (b[:, None] + two_lam)
        s1 = t.sum(axis=1)
        step = np.maximum((s1 * s1 - s1) / (t * t).sum(axis=1), 0.0)
        b += step
        # Any b > 0 gives an exact sampler; the root only maximises acceptance, so a
        # relative precision of 1e-9 is far more than enough.
        if step.max() <= 1e-9:
            break
    return np.minimum(b, lam.shape[1])


def log_envelope_ratio(x: np.ndarray, lam: np.ndarray, b: float) -> np.ndarray:
    """log of target / (M * envelope) at unit vectors ``x`` (rows), in A's eigenbasis.

    Target exp(-u), u = sum_i lam_i x_i^2 (that is exp(x^T A x) up to the constant
    exp(max a)); envelope the ACG with Omega = I + 2 diag(lam)/b; M the smallest constant
    making the ratio <= 1. Returns -u + (q - b)/2 + (q/2) log(b (1 + 2u/b) / q), which is
    <= 0 for every unit x, every lam >= 0 and every b > 0; the rejection step accepts
    a proposal x with probability exp(this value).
    """
    x = np.asarray(x, dtype=float)
    lam = np.asarray(lam, dtype=float)
    q = lam.size
    u = (x * x) @ lam
    return -u + (q - b) / 2.0 + (q / 2.0) * np.log((b + 2.0 * u) / q)


def _rejection_cost(t: np.ndarray, q: int) -> np.ndarray:
    """-h(t) = (q/2)(w - 1 - log w) >= 0, w = 2t/q: minus the log acceptance probability."""
    w = (2.0 / q) * t
    return (q / 2.0) * (w - 1.0 - np.log(w))


def _check_symmetric(A, name: str = "A") -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ParameterError(f"{name} must be a square matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ParameterError(f"{name} has non-finite entries")
    scale = max(1.0, float(np.max(np.abs(A))))
    if np.max(np.abs(A - A.T)) > 1e-8 * scale:
        raise ParameterError(f"{name} must be symmetric")
    return (A + A.T) / 2.0


def _rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


# ---------------------------------------------------------------------------------------
# Exact vector Bingham
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VectorBinghamDraws:
    """Exact draws of the vector Bingham exp(v^T A v) on the unit sphere."""

    samples: np.ndarray  # (size, p) unit vectors
    acceptance_rate: float  # proposals passing the test / proposals made
    n_proposed: int
    b: float  # the solved envelope parameter


def _sample_diagonal(lam: np.ndarray, b: float, size: int, rng: np.random.Generator):
    """Exact draws of exp(-sum_i lam_i x_i^2) on S^(q-1) (coordinates of A's eigenbasis).

    Returns (samples, proposals made, proposals that passed the test); proposals in the
    last batch beyond the ``size`` needed are tested too, so passed / made is an unbiased
    estimate of the acceptance probability even for size = 1.
    """
    q = lam.size
    if q == 1:
        return rng.choice([-1.0, 1.0], size=(size, 1)), size, size
    sd = 1.0 / np.sqrt(1.0 + 2.0 * lam / b)
    out = np.empty((size, q))
    filled, proposed, passed = 0, 0, 0
    while filled < size:
        need = size - filled
        # A pilot batch first, then batches sized from the acceptance rate seen so far.
        batch = min(2 * need + 32, 4096) if proposed == 0 else int(min(1.05 * need / rate + 32, 2_000_000))
        y = rng.standard_normal((batch, q)) * sd
        x = y / np.sqrt(np.einsum("ij,ij->i", y, y))[:, None]
        keep = np.log(rng.random(batch)) < log_envelope_ratio(x, lam, b)
        accepted = x[keep][:need]
        out[filled:filled + accepted.shape[0]] = accepted
        filled += accepted.shape[0]
        proposed += batch
        passed += int(np.count_nonzero(keep))
        rate = max(passed / proposed, 1e-3)
    return out, proposed, passed


def sample_vector_bingham(A, size: int = 1, rng=None) -> VectorBinghamDraws:
    """Exact draws of the vector Bingham density proportional to exp(v^T A v) on S^(p-1).

    Eigendecompose A = Q diag(a) Q^T, set lam_i = max(a) - a_i >= 0, solve
    sum_i 1/(b + 2 lam_i) = 1 for b in [1, p] and run the ACG rejection sampler of Kent,
    Ganeiber & Mardia (2018) in batches (see the module docstring). Exact: no MCMC.

    Parameters
    ----------
    A : (p, p) symmetric array
    size : number of independent draws
    rng : numpy Generator or seed
    """
    A = _check_symmetric(A)
    size = int(size)
    if size < 1:
        raise ParameterError(f"size must be >= 1, got {size}")
    rng = _rng(rng)
    a, Q = np.linalg.eigh(A)
    lam = np.maximum(a[-1] - a, 0.0)
    b = solve_acg_b(lam)
    x, proposed, passed = _sample_diagonal(lam, b, size, rng)
    return VectorBinghamDraws(samples=x @ Q.T, acceptance_rate=passed / proposed, n_proposed=proposed, b=b)


# ---------------------------------------------------------------------------------------
# Sequential deflation (exact, k > 1)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeflationDraws:
    """Draws of the sequential-deflation mechanism: each column exact given the previous."""

    samples: np.ndarray  # (size, p, k), orthonormal columns
    acceptance_rates: np.ndarray  # (k,) per step, pooled over draws


def complement_basis(V: np.ndarray) -> np.ndarray:
    """Orthonormal basis N (p x (p - j)) of the orthogonal complement of the columns of V.

    Works on stacks too: V of shape (..., p, j) gives N of shape (..., p, p - j).
    """
    p, j = V.shape[-2:]
    if j == 0:
        return np.broadcast_to(np.eye(p), V.shape[:-2] + (p, p))
    Q, _ = np.linalg.qr(V, mode="complete")
    return Q[..., j:]


def _sample_diagonal_rows(lam: np.ndarray, b: np.ndarray, rng: np.random.Generator):
    """One exact draw of exp(-sum_i lam_ri x_i^2) per row r (the KGM test, vectorised)."""
    n, q = lam.shape
    sd = 1.0 / np.sqrt(1.0 + 2.0 * lam / b[:, None])
    out = np.empty((n, q))
    todo = np.arange(n)
    proposed = passed = 0
    reps = max(4, int(2.0 * math.sqrt(math.e * q / 2.0)))  # ~2 / worst-case acceptance
    while todo.size:
        y = rng.standard_normal((todo.size, reps, q)) * sd[todo, None, :]
        x = y / np.sqrt(np.einsum("nrq,nrq->nr", y, y))[:, :, None]
        u = np.einsum("nrq,nq->nr", x * x, lam[todo])
        bt = b[todo, None]
        log_ratio = -u + (q - bt) / 2.0 + (q / 2.0) * np.log((bt + 2.0 * u) / q)
        hit = np.log(rng.random((todo.size, reps))) < log_ratio
        first = hit.argmax(axis=1)
        ok = hit[np.arange(todo.size), first]
        out[todo[ok]] = x[ok, first[ok]]
        proposed += hit.size
        passed += int(np.count_nonzero(hit))
        todo = todo[~ok]
    return out, proposed, passed


def sample_bingham_deflation(matrices, rng=None, size: int = 1) -> DeflationDraws:
    """Sequential deflation: v_j exact from exp(w^T N_j^T B_j N_j w) on the complement.

    ``matrices`` is the list B_1..B_k of p x p symmetric matrices, one per component;
    for private PCA B_j = (eps_j/2) X^T X - (gamma/2) Cinv with the *step's own* eps_j.
    N_j is an orthonormal basis of the complement of v_1..v_(j-1); the draw does not
    depend on which basis (the restricted Bingham is invariant under rotations within
    the complement), so any complete QR basis serves. Each step is the exact KGM sampler
    of :func:`sample_vector_bingham`, vectorised over the ``size`` independent draws.
    """
    Bs = [_check_symmetric(B, f"matrix {j + 1}") for j, B in enumerate(matrices)]
    if not Bs:
        raise ParameterError("deflation needs at least one matrix")
    p = Bs[0].shape[0]
    k = len(Bs)
    if any(B.shape != (p, p) for B in Bs):
        raise ParameterError("all deflation matrices must have the same shape")
    if k >= p:
        raise ParameterError(f"k = {k} components need dimension p > k, got p = {p}")
    rng = _rng(rng)
    size = int(size)
    if size < 1:
        raise ParameterError(f"size must be >= 1, got {size}")
    out = np.empty((size, p, k))
    passed = np.zeros(k)
    proposed = np.zeros(k)
    chunk = max(1, 2_000_000 // (p * p))  # bound the memory of the stacked bases
    for start in range(0, size, chunk):
        n = min(chunk, size - start)
        V = np.empty((n, p, 0))
        for j, B in enumerate(Bs):
            if j == 0:
                a, E = np.linalg.eigh(B)
                a, E = np.broadcast_to(a, (n, p)), np.broadcast_to(E, (n, p, p))
                N = None
            else:
                N = complement_basis(V)
                a, E = np.linalg.eigh(np.swapaxes(N, 1, 2) @ B @ N)
            lam = np.maximum(a[:, -1:] - a, 0.0)
            x, made, ok = _sample_diagonal_rows(lam, _solve_acg_b_rows(lam), rng)
            w = np.einsum("nij,nj->ni", E, x)
            v = w if N is None else np.einsum("nij,nj->ni", N, w)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            V = np.concatenate([V, v[:, :, None]], axis=2)
            passed[j] += ok
            proposed[j] += made
        out[start:start + n] = V
    return DeflationDraws(samples=out, acceptance_rates=passed / proposed)


# ---------------------------------------------------------------------------------------
# Matrix Bingham by Gibbs sampling (approximate)
# ---------------------------------------------------------------------------------------

# A tracked envelope's first shift above the Rayleigh quotient, in units of b/2 (see
# _EnvelopeTracker.envelope; gibbs_compiled.py uses the same value).
MARGIN = 1.5


@dataclass(frozen=True)
class GibbsDraws:
    """Output of the matrix Bingham Gibbs chain (approximate: a Markov chain)."""

    sample: np.ndarray  # (p, k) final state: what a release uses
    samples: np.ndarray  # (n_kept, p, k) states kept after burn-in, every thin-th sweep
    trace: np.ndarray  # (n_sweeps, k) v_l^T A v_l after each sweep (log-density = row sum)
    acceptance_rate: float  # inner exact sampler, accepted / proposed over the chain
    n_sweeps: int
    burn_in: int
    thin: int
    # conditionals whose envelope needed an eigendecomposition (the small-k compiled chain: its safe shift)
    n_spectral_solves: int


def _cholesky(M: np.ndarray):
    L, info = lapack.dpotrf(M, lower=1, clean=1)
    return L if info == 0 else None


def _acg_draw(L: np.ndarray, rng: np.random.Generator, batch: int, limit: int | None = None):
    """One exact draw from exp(-x^T L L^T x) on S^(q-1), L lower triangular.

    Propose y = L^-T z, z ~ N(0, I) (so y ~ N(0, (L L^T)^-1), x = y/||y|| is ACG) and
    accept with probability exp(h(t)), t = x^T L L^T x = ||z||^2 / ||y||^2 (module
    docstring). With L L^T = s I - AS this samples exp(x^T AS x). Returns (x, examined);
    x is None when ``limit`` proposals were examined without an acceptance (the caller
    then rebuilds a better envelope; stopping early does not bias the draw, since the
    next attempt starts afresh).
    """
    q = L.shape[0]
    # y = L^-T z through the explicit inverse: a triangular solve with many right-hand
    # sides (trsm) is pathologically slow in a multi-threaded OpenBLAS at these sizes.
    Linv_T = lapack.dtrtri(L, lower=1)[0].T
    examined = 0
    while limit is None or examined < limit:
        z = rng.standard_normal((q, batch))
        y = Linv_T @ z
        ny2 = np.add.reduce(y * y, axis=0)
        # log U < h(t) with U uniform  <=>  E > -h(t) with E = -log U ~ Exp(1).
        hit = rng.standard_exponential(batch) > _rejection_cost(np.add.reduce(z * z, axis=0) / ny2, q)
        i = int(hit.argmax())
        if hit[i]:
            # Proposals after the first acceptance are discarded unexamined.
            return y[:, i] / math.sqrt(ny2[i]), examined + i + 1
        examined += batch
    return None, examined


class _EnvelopeTracker:
    """Near-optimal ACG shifts for the stream of Gibbs conditionals, without a spectrum each.

    Any s > lambda_max(AS) gives an exact sampler (module docstring); a Cholesky factor
    of s I - AS certifies the inequality, so the choice of s affects only the acceptance
    rate. The KGM-optimal value is s = theta_max + b/2 with b solving
    sum_i 1/(b + 2 (theta_max - theta_i)) = 1 over the spectrum theta of AS. A full
    eigendecomposition per conditional would dominate a Gibbs sweep, but the other
    columns move little per sweep, so for each column we keep b and the top eigenvector u
    of its last conditional (in the coordinates of A's eigenbasis, where it stays
    meaningful while the complement basis S changes): theta_max is estimated by the
    Rayleigh quotient of S^T u (a lower bound, accurate to second order), one step of
    inverse iteration with the fresh Cholesky factor refreshes u, and b is recomputed
    from the spectrum every ``refresh`` conditionals of the column or whenever the
    estimate fails (Cholesky failure, lost eigenvector).
    """

    # b changes slowly along the chain and the tracked shift has a margin: a refresh every 256
    # conditionals keeps the envelope near-optimal (the Ritz start catches the jumps).
    refresh = 256

    def __init__(self, q: int, k: int):
        self.eye = np.eye(q)
        self.b = [1.0] * k
        self.u: list[np.ndarray | None] = [None] * k
        self.age = [0] * k
        self.spectral_solves = 0

    def envelope(self, AS: np.ndarray, S: np.ndarray, column: int):
        """(L, tracked): L the Cholesky factor of s I - AS, s > lambda_max certified.

        ``tracked`` is False when L came from the spectrum (KGM-optimal s), True when it
        came from the tracked eigenvector (near-optimal s; the caller bounds the number of
        proposals and falls back to :meth:`spectral` if the guess turns out poor).
        """
        u = self.u[column]
        if u is None or self.age[column] >= self.refresh:
            return self.spectral(AS, S, column), False
        x = S.T @ u
        nx = math.sqrt(float(x @ x))
        rho = float(x @ (AS @ x)) / (nx * nx) if nx >= 0.5 else -math.inf
        if nx >= 0.5:
            x /= nx
        # Two more candidates, the one with the largest Rayleigh quotient starts: the column's
        # current value (e1 in S's coordinates) and the projection of A's top eigenvector (the
        # last coordinate: a is ascending) onto the complement. With a dominant eigenvalue (DTI)
        # that direction is shared by all columns, so the conditional's top eigenvector moves
        # with the others; the projection follows it, the tracked vector does not.
        if AS[0, 0] > rho:
            x, rho = self.eye[0].copy(), float(AS[0, 0])
        top = S[-1].copy()
        nt = math.sqrt(float(top @ top))
        if nt > 1e-3:
            top /= nt
            rho_top = float(top @ (AS @ top))
            if rho_top > rho:
                x, rho = top, rho_top
        half_b = self.b[column] / 2.0
        # The first shift has a margin: s = rho + MARGIN * b/2 holds for theta_max up to
        # (MARGIN - 1) b/2 above the quotient (a stale eigenvector, a near-degenerate top of
        # the spectrum), and costs little acceptance since KGM's acceptance is flat near its
        # optimal b (about 5% at 1.5 b).
        first = MARGIN * half_b
        # rho, a Rayleigh quotient, is <= theta_max, with an error second order in x's.
        L = _cholesky((rho + first) * self.eye - AS)
        if L is None:
            # theta_max > rho + first: restart from the top Ritz pair of AS on x, e1 and A's
            # top k + 1 eigenvectors projected (see _ritz_start), then retry.
            x, rho = _ritz_start(AS, S, x, len(self.b))
            L = _cholesky((rho + first) * self.eye - AS)
            if L is None:
                return self.spectral(AS, S, column), False
        # s = rho + first > theta_max is now certified. One inverse-iteration step refreshes
        # the eigenvector; if the refined quotient shows that rho was low (s closer than b/4
        # to theta_max, i.e. a too-small effective b), re-factor at the refined value.
        x = lapack.dpotrs(L, x, lower=1)[0]
        x /= math.sqrt(float(x @ x))
        rho_new = float(x @ (AS @ x))
        if rho + first - rho_new < 0.5 * half_b:
            L_new = _cholesky((rho_new + half_b) * self.eye - AS)
            if L_new is not None:
                L = L_new
        self.age[column] += 1
        self._remember(S, x, column)
        return L, True

    def spectral(self, AS: np.ndarray, S: np.ndarray, column: int) -> np.ndarray:
        """KGM-optimal envelope from the spectrum (also resets the tracked state).

        Eigenvalues only; the top eigenvector for tracking comes from inverse iteration
        with the envelope's own factor, which converges fast because s sits just b/2
        above theta_max.
        """
        self.spectral_solves += 1
        theta = np.linalg.eigvalsh(AS)
        b = solve_acg_b(theta[-1] - theta)
        self.b[column] = b
        self.age[column] = 1
        s = float(theta[-1] + b / 2.0)
        for bump in (0.0, 1e-12, 1e-9, 1e-6, 1e-3):
            # Rounding can make s I - AS numerically singular when b is ~1 and the
            # spectrum is wide; a slightly larger s is equally valid (only less efficient).
            s_try = s + bump * max(1.0, abs(s))
            L = _cholesky(s_try * self.eye - AS)
            if L is not None:
                break
        else:
            raise FloatingPointError("cannot factor the ACG envelope matrix")
        u = self.u[column]
        x = np.ones(AS.shape[0]) if u is None else S.T @ u + 1e-3
        for _ in range(3):
            x = lapack.dpotrs(L, x, lower=1)[0]
            x /= math.sqrt(float(x @ x))
        self._remember(S, x, column)
        return L

    def _remember(self, S: np.ndarray, x: np.ndarray, column: int) -> None:
        self.u[column] = S @ x  # unnormalised: envelope() normalises its projection anyway


def _ritz_start(AS: np.ndarray, S: np.ndarray, tracked, k: int):
    """(x, rho): the top Ritz pair of AS on the span of ``tracked`` (or nothing), e1 and the
    rows p-1, ..., p-k-1 of S (A's top eigenvectors projected: a is ascending); rho is a
    Rayleigh quotient, so <= theta_max(AS).

    The matrix Bingham only sees the subspace, so A's top directions are shared by all columns
    and a conditional's top eigenvector moves with the other columns (DTI's dominant
    eigenvalue): the projections of A's top eigenvectors follow it where a tracked vector
    does not. Used when the tracked start fails to certify its envelope, instead of an
    eigendecomposition."""
    q = AS.shape[0]
    Y = np.zeros((k + 3, q))
    Y[0, 0] = 1.0
    Y[1:k + 2] = S[-1:-k - 2:-1]
    if tracked is not None:
        Y[k + 2] = tracked
        m = k + 3
    else:
        m = k + 2
    Q = lapack.dgeqrf(Y[:m].T[:, :q])  # Householder QR: (qr, tau, work, info)
    Q = lapack.dorgqr(Q[0], Q[1])[0]
    vals, vecs = np.linalg.eigh(Q.T @ AS @ Q)
    x = Q @ vecs[:, -1]
    x /= math.sqrt(float(x @ x))
    return x, float(x @ (AS @ x))


def _random_stiefel(p: int, k: int, rng: np.random.Generator) -> np.ndarray:
    Q, R = np.linalg.qr(rng.standard_normal((p, k)))
    return Q * np.sign(np.diag(R))


def sample_matrix_bingham_gibbs(A, k: int, rng=None, *, n_sweeps: int = 20_000, burn_in: int | None = None,
                                thin: int | None = None, init="random", compiled: bool | None = None) -> GibbsDraws:
    """Gibbs sampler for the matrix Bingham etr(V^T A V), V p x k orthonormal (Hoff 2009).

    One sweep updates every column once, in a fresh random order; the full conditional
    of column l given the others is the vector Bingham exp(v^T A v) on the unit sphere of
    the complement of the other columns (dimension q = p - k + 1), drawn *exactly* with
    the ACG sampler, so no inner chain can return non-finite values (the known failure of
    the coordinate-scan port when q is small). The chain is only approximately at its
    target after finitely many sweeps: a release made with it is approximate DP.

    Parameters
    ----------
    A : (p, p) symmetric array
    k : number of columns, 1 <= k < p
    n_sweeps : total sweeps (default 20,000)
    burn_in : sweeps discarded before keeping states (default n_sweeps // 10)
    thin : keep every thin-th state after burn-in (default so that ~100 are kept)
    init : "random" (uniform on the Stiefel manifold), "mode" (top-k eigenvectors of A;
        perturbed randomly so the chain never starts exactly on an eigenvector) or an
        explicit (p, k) orthonormal array.
    compiled : run the numba-compiled chain (gibbs_compiled.py; 4x to 15x faster per sweep) or
        the Python one. Default: compiled when numba is installed and the chain is long enough
        to repay loading it (n_sweeps * k >= 30,000) or it is already loaded. Same chain,
        different random streams. With k = 1 neither runs: every sweep is an iid exact draw
        (:func:`_one_column_chain`), so ``init`` and ``compiled`` do not matter there.
    """
    A = _check_symmetric(A)
    p = A.shape[0]
    k = int(k)
    if not 1 <= k < p:
        raise ParameterError(f"need 1 <= k < p for the Gibbs sampler, got k = {k}, p = {p}")
    n_sweeps = int(n_sweeps)
    if n_sweeps < 1:
        raise ParameterError(f"n_sweeps must be >= 1, got {n_sweeps}")
    burn_in = n_sweeps // 10 if burn_in is None else int(burn_in)
    if not 0 <= burn_in < n_sweeps:
        raise ParameterError(f"burn_in must be in [0, n_sweeps), got {burn_in}")
    thin = max(1, (n_sweeps - burn_in) // 100) if thin is None else int(thin)
    if thin < 1:
        raise ParameterError(f"thin must be >= 1, got {thin}")
    rng = _rng(rng)

    # Work in A's eigenbasis, where A = diag(a): restricted matrices cost one product.
    a, U = np.linalg.eigh(A)
    if isinstance(init, str):
        if init == "random":
            V0 = _random_stiefel(p, k, rng)
        elif init == "mode":
            V0 = U[:, ::-1][:, :k] + 1e-3 * rng.standard_normal((p, k))
            V0, _ = np.linalg.qr(V0)
        else:
            raise ParameterError(f"init must be 'random', 'mode' or a (p, k) array, got {init!r}")
    else:
        V0 = np.asarray(init, dtype=float)
        if V0.shape != (p, k) or not np.allclose(V0.T @ V0, np.eye(k), atol=1e-8):
            raise ParameterError(f"init must be a ({p}, {k}) matrix with orthonormal columns")
    Z = U.T @ V0  # state in eigen-coordinates

    # A sweep is a long chain of tiny dense operations (q x q with q = p - k + 1): with a
    # multi-threaded BLAS each one pays thread start-up and, on a busy machine, spin-waits
    # that slow the chain down by an order of magnitude. One BLAS thread for the chain.
    from . import gibbs_compiled  # lazy: numba (optional), only when the compiled chain runs

    if k == 1:
        return _one_column_chain(a, U, rng, n_sweeps, burn_in, thin)
    if compiled is None:
        compiled = gibbs_compiled.worth_it(n_sweeps, k)
    with single_blas_thread():
        if compiled:
            return GibbsDraws(**gibbs_compiled.gibbs_chain(a, U, Z, rng, n_sweeps, burn_in, thin))
        return _gibbs_chain(a, U, Z, rng, n_sweeps, burn_in, thin)


def _one_column_chain(a, U, rng, n_sweeps, burn_in, thin) -> GibbsDraws:
    """The chain for k = 1, all sweeps at once.

    With one column the full conditional is the whole target (the complement of no other
    column is the whole sphere), so each sweep draws exp(v^T A v) exactly, independently of
    the state: the chain *is* a sequence of iid exact vector Bingham draws. Drawing them in
    vectorised batches (the KGM sampler of :func:`sample_vector_bingham`) gives the same
    law without a sweep loop or per-sweep envelope.
    """
    lam = np.maximum(a[-1] - a, 0.0)
    x, proposed, passed = _sample_diagonal(lam, solve_acg_b(lam), n_sweeps, rng)
    kept = np.arange(burn_in + thin - 1, n_sweeps, thin)
    return GibbsDraws(sample=U @ x[-1][:, None], samples=(x[kept] @ U.T)[:, :, None], trace=((x * x) @ a)[:, None],
                      acceptance_rate=passed / proposed, n_sweeps=n_sweeps, burn_in=burn_in, thin=thin,
                      n_spectral_solves=1)


def _gibbs_chain(a, U, Z, rng, n_sweeps, burn_in, thin) -> GibbsDraws:
    """The sweeps of :func:`sample_matrix_bingham_gibbs`, in A's eigen-coordinates (A = diag(a))."""
    a_column = a[:, None]
    p, k = Z.shape
    q = p - k + 1
    # S holds [v_l, N0]: N0 (columns 1..q-1) is an orthonormal basis of the complement of
    # *all* current columns, so [v_l, N0] spans the complement of the other columns.
    S = np.empty((p, q), order="F")
    S[:, 1:] = complement_basis(Z)
    tracker = _EnvelopeTracker(q, k)
    n_kept = len(range(burn_in + thin - 1, n_sweeps, thin))
    kept = np.empty((n_kept, p, k))
    trace = np.empty((n_sweeps, k))
    e1 = np.zeros(q)
    e1[0] = 1.0
    i_kept, accepted, proposed, batch = 0, 0, 0, 16
    # KGM's worst-case acceptance is about sqrt(2/(e q)); a tracked envelope still without
    # an acceptance after ~40 times the expected count is abandoned for the optimal one.
    limit = int(40 * math.sqrt(math.e * q / 2.0)) + 16
    for sweep in range(n_sweeps):
        for l in rng.permutation(k):
            S[:, 0] = Z[:, l]
            AS = S.T @ (a_column * S)
            L, tracked = tracker.envelope(AS, S, l)
            w, examined = _acg_draw(L, rng, batch, limit if tracked else None)
            proposed += examined
            if w is None:
                # Tracked guess was poor (acceptance far below KGM's); take the optimum.
                w, examined = _acg_draw(tracker.spectral(AS, S, l), rng, batch)
                proposed += examined
            accepted += 1
            batch = int(min(max(2.5 * proposed / accepted, 4), 256))
            Z[:, l] = S @ w
            # Householder reflection H (symmetric, orthogonal) with H e1 = sigma w: the
            # columns 2..q of S H stay orthonormal, span the same space and are
            # orthogonal to the new column. sigma = -sign(w_0) keeps ||h|| >= 1.
            h = e1 + w if w[0] > 0 else e1 - w
            blas.dger(-2.0 / float(h @ h), S @ h, h, a=S, overwrite_a=1)
        if sweep % 64 == 63:
            # Re-orthonormalise against slow rounding drift of the running bases.
            Z, R = np.linalg.qr(Z)
            Z *= np.sign(np.diag(R))
            S[:, 1:] = complement_basis(Z)
        trace[sweep] = a @ (Z * Z)
        if sweep >= burn_in and (sweep - burn_in) % thin == thin - 1:
            kept[i_kept] = U @ Z
            i_kept += 1
    return GibbsDraws(sample=U @ Z, samples=kept, trace=trace, acceptance_rate=accepted / proposed,
                      n_sweeps=n_sweeps, burn_in=burn_in, thin=thin,
                      n_spectral_solves=tracker.spectral_solves)


# ---------------------------------------------------------------------------------------
# The exponential mechanism's matrix, and the frame of a matrix Bingham draw
# ---------------------------------------------------------------------------------------


def exponential_mechanism_from_gram(gram: np.ndarray, epsilon: float, gamma: float, prior_variances) -> np.ndarray:
    """A = (eps/2) G - (gamma/2) diag(1/c) with G = sum_p M_p, each M_p PSD with trace <= 1
    (a person's average of x x^T over rows in the unit ball): replacing one person moves
    tr(V^T G V) by at most 1, so the exponential mechanism keeps sensitivity 1."""
    c = np.asarray(prior_variances, dtype=float)
    return (epsilon / 2.0) * np.asarray(gram, dtype=float) - np.diag((gamma / 2.0) / c)


def order_subspace(V: np.ndarray, cinv: np.ndarray) -> np.ndarray:
    """Rotate an orthonormal frame to the principal axes of V^T Cinv V, smoothest first.

    The matrix Bingham density depends on V only through V V^T, so the Gibbs chain's
    columns are an arbitrary frame of the private subspace. Ordering them by the public
    base term (smallest V^T Cinv V first = smoothest) is post-processing with public
    information only; ordering by the data would not be.
    """
    _, R = np.linalg.eigh(V.T @ (cinv[:, None] * V))
    return V @ R
