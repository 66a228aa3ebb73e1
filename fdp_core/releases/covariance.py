"""Covariance function release (METHODS.md 13; Lin & Reimherr, appendix C.1).

Pipeline: clip each curve into the public value range (optional), centre by a public value c,
clip to the L2 ball of radius tau, take coefficients x_i in the kernel eigenbasis
(||x_i|| <= tau by Bessel), form the second moment S = (1/n) sum_i x_i x_i^T and shrink it
entrywise with s_jl = (lambda_j lambda_l)^eta / ((lambda_j lambda_l)^eta + phi). Noise goes on
*all* L x L entries (Gaussian: sd sigma sqrt(lambda_j lambda_l), a GP with covariance C (x) C;
ICLP: Laplace of scale Delta_1 sqrt(lambda_j lambda_l) / epsilon), then the matrix is
symmetrised (post-processing). Centring by a released mean (budget split gamma) gives
C~ = S~ - mu~ mu~^T; with a public centre only, the release is the second moment about c.

A :class:`CovarianceRelease` holds the non-private estimate for the analyst view; the
publishable record (:func:`release_record`) never contains it nor any count computed from
the data (those go into :func:`analyst_view`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..data.loading import FunctionalData, beyond_tau, clip_to_ball, from_arrays
from ..errors import DataError, ParameterError
from .. import limits
from .covariance_radius import (MC_SEED, chunk_size, noise_factor, noise_root, released_mean_draws, symmetrise,
                                unit_hs_radius)
from .estimators import shrinkage
from ..kernels import KERNEL_NAMES, eigenbasis
from ..long_grid import tail_sentence
from ..mechanisms.families import NoiseFamily, noise_family
from ..mechanisms.guarantee import Guarantee
from ..params import (check_choice, check_epsilon, check_eta, check_finite, check_open_unit, check_positive,
                      validate_once)
from ..limits import MAX_ABS_VALUE, MAX_TAU, check_at_most
from ..data.preprocess import PublicBounds, declared_n, file_persons, person_row_weights
from ..registry.covariance import REGISTRY as MECHANISM_REGISTRY
from ..registry.covariance import covariance_mechanism
from ..publish.release import randomness_fields
from ..sensitivity import COVARIANCE_GAUSSIAN_BOUNDS, covariance_weights
from ..settings_fields import documented_settings
from ..settings_fields import (CALIBRATION, CENTRE, CENTRE_RANGE, DELTA, EPSILON, ETA, KERNEL, N_PUBLIC, NU,
                              PERSON_COLUMN, RHO, Control, option)

# The release is the L x L coefficient matrix; its surface is written on every point of a grid of at
# most MAX_COVARIANCE_GRID points (release.csv has m^2 rows), on LONG_GRID_SURFACE_POINTS evenly spread
# points of a longer one (250,000 rows: writing 10^6 cost as much CPU as the release itself).
MAX_COVARIANCE_GRID = limits.MAX_COVARIANCE_GRID
LONG_GRID_SURFACE_POINTS = 500
COVARIANCE_MECHANISMS = tuple(MECHANISM_REGISTRY)  # the CLI's --mechanism choices (fdp_core/registry/covariance.py)
CENTRINGS = ("public", "released-mean")
NOT_PUBLISHABLE = "analyst view: computed from the raw data without noise; do not publish"


@documented_settings
@dataclass(frozen=True)
class CovarianceSettings:
    """Every public choice behind a covariance release.

    The centre is public: ``centre`` (a value c) or the midpoint of the public range
    ``lo``/``hi`` (curves are then also clipped pointwise into [lo, hi], and tau defaults
    to (hi - lo)/2, the largest L2 norm a centred curve can have on the unit domain).
    ``centring = "released-mean"`` additionally releases the mean of the centred curves with
    a share ``gamma`` of epsilon (and delta) and subtracts mu~ mu~^T.

    Page controls (``controls``): the Covariance & regression page ("covariance").

    Examples
    --------
    >>> CovarianceSettings(lo=0.0, hi=1.0).tau_value   # the largest centred norm: (hi - lo)/2
    0.5
    """

    mechanism: str = option("gaussian", choices=COVARIANCE_MECHANISMS,
                            help="; ".join(f"{name}: {m.label}" for name, m in MECHANISM_REGISTRY.items()),
                            controls=(Control("covariance", "cov_mechanism"),))
    kernel: str = option("matern52", KERNEL, required=True)
    rho: float = option(0.1, RHO, required=True)
    nu: float | None = option(None, NU)
    eta: float = option(1.5, ETA)
    phi: float = option(1e-3, help="penalty phi > 0 of the shrinkage s_jl")
    epsilon: float = option(1.0, EPSILON, required=True)
    delta: float = option(1e-5, DELTA)
    tau: float | None = option(None, help="public L2 bound of the centred curves (required with --centre)")
    bound: str = option("kyfan", choices=COVARIANCE_GAUSSIAN_BOUNDS,
                        help="Gaussian sensitivity: kyfan (tighter, default) or sqrt2",
                        controls=(Control("covariance", "cov_bound"),))
    calibration: str = option("analytic", CALIBRATION)
    # The page's centre when no value range is declared (with one, the range's midpoint).
    centre: float | None = option(None, CENTRE, controls=(Control("covariance", "cov_centre", default=0.5),))
    lo: float | None = option(None, CENTRE_RANGE)  # --value-range LO,HI sets lo and hi
    hi: float | None = None
    centring: str = option("public", choices=CENTRINGS,
                           help="public: second moment about the centre; released-mean: also release the mean with a "
                                "share --gamma of the budget and subtract its outer product",
                           controls=(Control("covariance", "cov_centring", default="released-mean"),))
    gamma: float = option(0.2, help="share of the budget for the released mean",
                          controls=(Control("covariance", "cov_gamma"),))
    person_column: str | None = option(None, PERSON_COLUMN)
    n_public: int | None = option(None, N_PUBLIC)

    @validate_once
    def validated(self) -> "CovarianceSettings":
        mechanism = covariance_mechanism(self.mechanism)  # its own fields: fdp_core/registry/covariance.py
        check_choice("kernel", self.kernel, KERNEL_NAMES)
        check_positive("rho", self.rho)
        check_positive("phi", self.phi)
        check_eta(self.eta)
        check_epsilon(self.epsilon)
        check_choice("centring", self.centring, CENTRINGS)
        mechanism.validate(self)
        if self.centring == "released-mean":
            check_open_unit("gamma (the mean's share of the budget)", self.gamma)
        has_range = self.lo is not None or self.hi is not None
        if has_range:
            if self.lo is None or self.hi is None:
                raise ParameterError("a public value range needs both lo and hi")
            if check_finite("lo", self.lo) >= check_finite("hi", self.hi):
                raise ParameterError(f"the value range needs lo < hi, got lo = {self.lo!r}, hi = {self.hi!r}")
            if self.centre is not None:
                raise ParameterError("give either a public centre or a public value range (whose midpoint is the "
                                     "centre), not both")
        elif self.centre is None:
            raise ParameterError("the covariance needs a public centre: set centre (--centre VALUE) or a public "
                                 "value range lo, hi (--value-range LO,HI), chosen without looking at the data")
        else:
            check_finite("centre", self.centre)
        if self.tau is None and not has_range:
            raise ParameterError("tau (the public L2 norm bound of the centred curves) is required without a "
                                 "public value range")
        if self.tau is not None:
            check_positive("tau", self.tau)
        check_at_most("tau", self.tau, MAX_TAU, "sensitivities scale with tau^2")
        for name, value in (("centre", self.centre), ("lo", self.lo), ("hi", self.hi)):
            if value is not None:
                check_at_most(f"|{name}|", abs(value), MAX_ABS_VALUE, "squares of the values must stay finite")
        PublicBounds(person_column=self.person_column, n_public=self.n_public).validated()
        return self

    @property
    def centre_value(self) -> float:
        return float(self.centre) if self.centre is not None else (float(self.lo) + float(self.hi)) / 2.0

    @property
    def tau_value(self) -> float:
        return float(self.tau) if self.tau is not None else (float(self.hi) - float(self.lo)) / 2.0

    def split(self) -> tuple[float, float, float, float]:
        """(epsilon, delta) of the covariance part and of the mean part (0, 0 without a released mean)."""
        eps, delta = float(self.epsilon), covariance_mechanism(self.mechanism).family.delta_or_zero(self.delta)
        if self.centring != "released-mean":
            return eps, delta, 0.0, 0.0
        g = float(self.gamma)
        return (1 - g) * eps, (1 - g) * delta, g * eps, g * delta


def centred_clipped_curves(fd: FunctionalData, settings: CovarianceSettings) -> tuple[np.ndarray, int]:
    """Per-record transform: clip into [lo, hi] (if given), subtract c, clip to the tau ball.

    Returns (curves on the grid, number of curves changed by either clipping). Every step
    is a fixed per-curve map, so neighbouring data sets stay neighbouring.
    """
    values = fd.data_matrix
    changed = np.zeros(fd.n, dtype=bool)
    if settings.lo is not None:
        clipped = np.clip(values, settings.lo, settings.hi)
        changed |= np.any(clipped != values, axis=1)
        values = clipped
    result = clip_to_ball(values - settings.centre_value, fd.weights, settings.tau_value)
    changed |= beyond_tau(result.norms, settings.tau_value)
    return result.values, int(changed.sum())


def person_weights(fd: FunctionalData, settings) -> tuple[np.ndarray, int, int]:
    """(w_i = 1 / number of curves of row i's person, n, number of persons P) (METHODS 11).

    sum_i w_i x_i x_i^T = sum_p M_p with M_p the average of the person's x x^T: PSD with trace <= tau^2,
    so M_p - M'_p = P - N (P, N PSD, traces <= tau^2) and every bound of sensitivity.py still holds:
    ||P - N||_F^2 <= ||P||_F^2 + ||N||_F^2 <= 2 tau^4 (tr PN >= 0); the eigenvalues of P - N have
    positive and negative parts of sums <= tau^2, so sum_i mu_i^2 v_i^T diag(c) v_i <= tau^4 (c_1 + c_2);
    and sum_jl A_jl |P_jl| <= sum_jl A_jl sqrt(P_jj P_ll) <= r(A) tr P. n = P, or the declared n_public
    (persons without a usable curve count as zero curves).
    """
    persons = file_persons(fd, settings.person_column)  # the file's persons, usable or not
    codes, P = persons.index, persons.n_persons
    n = declared_n(settings.n_public, P)
    return person_row_weights(codes, P), n, P


def product_shrinkage(eigenvalues: np.ndarray, eta: float, phi: float) -> np.ndarray:
    """s_jl = (lambda_j lambda_l)^eta / ((lambda_j lambda_l)^eta + phi): the entrywise minimiser of
    ||S_hat - S||_F^2 + phi ||S_hat||^2_{H(C^eta (x) C^eta)} (same argument as the mean's shrinkage)."""
    lam = np.asarray(eigenvalues, dtype=float)
    return shrinkage(np.outer(lam, lam).ravel(), eta, phi).reshape(lam.size, lam.size)


def surface_index(m: int) -> np.ndarray:
    """The grid points (indices) the covariance surface is written and drawn on: every point of a grid
    of at most MAX_COVARIANCE_GRID, else LONG_GRID_SURFACE_POINTS evenly spread by index, the ends
    included. Public (it depends on m alone); the surface there is post-processing of the L x L release."""
    if m <= MAX_COVARIANCE_GRID:
        return np.arange(m)
    return np.unique(np.round(np.linspace(0, m - 1, LONG_GRID_SURFACE_POINTS)).astype(int))


@dataclass(frozen=True)
class CovarianceRelease:
    """A planned covariance release: deterministic parts computed, noise drawn on demand.

    Built by :func:`plan_covariance_release`: the public noise law and guarantee; the estimate it
    holds is NON-PRIVATE (analyst view only).

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((80, 1)) * np.sin(np.pi * t)
    >>> plan_covariance_release(from_arrays(t, X), CovarianceSettings(lo=0.0, hi=1.0)).n
    80
    """

    settings: CovarianceSettings
    grid_points: np.ndarray
    weights: np.ndarray
    eigenvalues: np.ndarray
    eigenfunctions: np.ndarray  # (m, L)
    estimate: np.ndarray = field(repr=False)  # (L, L) shrunk second moment: NON-PRIVATE
    scales: np.ndarray = field(repr=False)  # (L, L) noise sd (gaussian) or Laplace scale
    noise: str  # "gaussian" | "laplace"
    mean_estimate: np.ndarray | None = field(repr=False)  # (L,) shrunk mean of the centred curves: NON-PRIVATE
    mean_scales: np.ndarray | None = field(repr=False)
    n: int
    n_clipped: int
    tau: float
    sensitivity: float
    sigma: float | None
    mean_sensitivity: float | None
    mean_sigma: float | None
    guarantee: Guarantee
    coefficients: np.ndarray = field(repr=False)  # (n, L) centred clipped coefficients: NON-PRIVATE
    # A long grid's top-L basis (METHODS 27): grid points, L, the omitted eigenvalues' public bound
    # and the kernel's trace; None on a grid decomposed in full.
    basis_tail: dict | None = None

    @property
    def n_components(self) -> int:
        return int(self.eigenvalues.size)

    @property
    def released_mean(self) -> bool:
        return self.mean_estimate is not None

    @property
    def family(self) -> NoiseFamily:
        return noise_family(self.noise)

    def _draw(self, scales: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.family.standard(rng, (size,) + scales.shape) * scales

    def sample_raw(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """The mechanism's own output before post-processing: (size, L, L), not symmetrised."""
        return self.estimate + self._draw(self.scales, rng, size)

    def sample(self, rng: np.random.Generator, size: int = 1) -> dict:
        """``size`` releases: second moment S~ (symmetrised), mean mu~ (or None) and covariance C~, as
        coefficient matrices in the eigenbasis."""
        second = symmetrise(self.sample_raw(rng, size))
        if not self.released_mean:
            return {"second_moment": second, "mean": None, "covariance": second}
        mean = self.mean_estimate + self._draw(self.mean_scales, rng, size)
        return {"second_moment": second, "mean": mean, "covariance": second - mean[:, :, None] * mean[:, None, :]}

    @property
    def surface_points(self) -> np.ndarray:
        """The grid points the surface is evaluated on (:func:`surface_index`): the whole grid up to
        MAX_COVARIANCE_GRID points; never an m x m array on a long grid (3.2 GB at m = 20,000)."""
        return self.grid_points[surface_index(self.grid_points.size)]

    def surface(self, coefficient_matrix: np.ndarray) -> np.ndarray:
        """sum_jl C_jl phi_j(s) phi_l(t) at s, t in :attr:`surface_points`, shape (q, q)."""
        phi = self.eigenfunctions[surface_index(self.grid_points.size)]
        return phi @ coefficient_matrix @ phi.T

    @property
    def expected_sq_hs_error(self) -> float:
        """E||S~ - S_hat||_HS^2 after symmetrisation (closed form).

        Entry (j, l), j != l, becomes (E_jl + E_lj)/2 with variance v_jl / 2; the diagonal keeps v_jj,
        where v = sd^2 (Gaussian) or 2 b^2 (Laplace). So the error is (sum_jl v_jl + sum_j v_jj) / 2.
        """
        v = self.scales**2 * self.family.variance_factor
        return float((v.sum() + np.trace(v)) / 2.0)

    def hs_error_radius(self, prob: float = 0.95, draws: int = 2000) -> float:
        """r with P(||C~ - C_hat||_HS <= r) ~ prob: the covariance release's error as a distance in
        the units of the covariance (Monte Carlo over the public noise law, fixed seed; the eigenbasis
        is orthonormal, so the HS norm of a surface is the Frobenius norm of its coefficients).

        The draws' public parts are shared per noise shape (fdp_core/releases/covariance_radius.py):
        with a public centre the radius is c times one unit Monte Carlo; with a released mean each
        draw's squared norm is a polynomial in the two scales and the shrunk mean (METHODS 13), so an
        epsilon move costs O(draws x L). Same draws, same stream, same quantile as :meth:`direct_hs_radius`."""
        factor = noise_factor(self.scales, self.eigenvalues)
        if factor is None:  # not of the shared shape (no mechanism today): its own draws
            return self.direct_hs_radius(prob, draws)
        eigenvalue_bytes = np.ascontiguousarray(self.eigenvalues, dtype=float).tobytes()
        if not self.released_mean:  # scales = factor x sqrt(lambda_j lambda_l): one Monte Carlo per noise shape
            return factor * unit_hs_radius(eigenvalue_bytes, self.noise, float(prob), int(draws))
        top = float(np.max(self.mean_scales, initial=0.0))
        # Rounded so that the same shape at another epsilon or gamma hits the cache despite last-bit noise.
        unit = np.round(self.mean_scales / top, 12) if top > 0 else np.zeros_like(self.mean_scales, dtype=float)
        parts = released_mean_draws(eigenvalue_bytes, np.ascontiguousarray(unit, dtype=float).tobytes(),
                                    self.noise, int(draws))
        return float(np.quantile(np.sqrt(parts.sq_norms(factor, top, self.mean_estimate)), prob))

    def direct_hs_radius(self, prob: float = 0.95, draws: int = 2000) -> float:
        """:meth:`hs_error_radius` by drawing every error matrix at its own scales (the reference the shared
        computation is tested against; chunked: ten sessions holding (draws, L, L) each reached gigabytes)."""
        rng, target = np.random.default_rng(MC_SEED), self.nonprivate_covariance()
        chunk = chunk_size(target.size)
        norms = []
        for start in range(0, int(draws), chunk):
            errors = self.sample(rng, min(chunk, int(draws) - start))["covariance"] - target
            norms.append(np.sqrt(np.einsum("kij,kij->k", errors, errors)))
        return float(np.quantile(np.concatenate(norms), prob))

    def nonprivate_covariance(self) -> np.ndarray:
        """Shrunk second moment minus the shrunk mean's outer product (or the second moment alone):
        what the release estimates. NON-PRIVATE: analyst view only."""
        if not self.released_mean:
            return self.estimate
        return self.estimate - np.outer(self.mean_estimate, self.mean_estimate)


def plan_covariance_release(fd: FunctionalData, settings: CovarianceSettings) -> CovarianceRelease:
    """Validate, clip, project, shrink and calibrate: everything but the random draw.

    Parameters
    ----------
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : CovarianceSettings
        The public centre (``centre`` or the range ``lo``/``hi``), tau, kernel, penalty and budget.

    Returns
    -------
    CovarianceRelease
        ``sample(rng)`` draws previews of the covariance on the retained basis.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((80, 1)) * np.sin(np.pi * t)
    >>> plan = plan_covariance_release(from_arrays(t, X), CovarianceSettings(lo=0.0, hi=1.0, epsilon=2.0))
    >>> plan.tau
    0.5
    """
    s = settings.validated()
    tau = s.tau_value
    curves, n_clipped = centred_clipped_curves(fd, s)
    w, n, n_persons = person_weights(fd, s)
    if n < 2:
        raise ParameterError(f"a covariance release needs at least 2 persons, got {n}")
    basis = eigenbasis(s.kernel, s.rho, fd.unit_grid, fd.weights, nu=s.nu)
    lam = basis.eigenvalues
    x = basis.coefficients(curves)
    shrink = product_shrinkage(lam, s.eta, s.phi)
    estimate = shrink * ((x * w[:, None]).T @ x) / n
    A = covariance_weights(lam, shrink)
    eps_cov, delta_cov, eps_mean, delta_mean = s.split()
    root = noise_root(lam)
    mechanism = covariance_mechanism(s.mechanism)
    noise = mechanism.plan_noise(s, A, root, tau, n, eps_cov, delta_cov)
    details = {"epsilon_covariance": eps_cov, "delta_covariance": delta_cov, "n_components": int(lam.size),
               "noise_on": "all L x L entries, then symmetrised (post-processing)", **noise.guarantee.details}
    mean_estimate = mean_scales = mean_sens = mean_sigma = None
    if s.centring == "released-mean":
        xbar = w @ x / n  # (1/n) sum_p (person's average coefficient vector)
        mean_estimate, mean_scales, mean_sens, mean_sigma = mechanism.plan_mean(s, lam, xbar, tau, n, eps_mean,
                                                                                delta_mean)
        details.update(epsilon_mean=eps_mean, delta_mean=delta_mean, mean_sensitivity=mean_sens,
                       mean_sigma=mean_sigma,
                       composition=f"mean ({s.gamma:g} of the budget) + covariance ({1 - s.gamma:g}): the ledger "
                                   "charges both")
    # The release promises the whole budget (both parts); the sensitivity, its norm and bounds are the
    # second moment's, the mean part's figures are in the details.
    guarantee = replace(noise.guarantee, epsilon=float(s.epsilon), delta=mechanism.family.delta_or_zero(s.delta),
                        details=details)
    return CovarianceRelease(settings=s, grid_points=fd.grid_points, weights=fd.weights, eigenvalues=lam,
                             eigenfunctions=basis.eigenfunctions, estimate=estimate, scales=noise.scales,
                             noise=mechanism.noise, mean_estimate=mean_estimate, mean_scales=mean_scales, n=n,
                             n_clipped=n_clipped, tau=tau, sensitivity=noise.sensitivity, sigma=noise.sigma,
                             mean_sensitivity=mean_sens, mean_sigma=mean_sigma,
                             guarantee=guarantee, coefficients=x, basis_tail=basis.tail())


def basis_truncation(plan: CovarianceRelease) -> dict | None:
    """The accuracy statement's tail of a long grid's top-L basis (METHODS 27), public numbers only.

    The Ritz values lambda_l never exceed the true eigenvalues (Cauchy interlacing) and the trace is
    public, so every omitted eigenvalue is at most T = trace - sum_l lambda_l and the largest one at
    most lambda_1 + T. An entry (j, l) of the second moment with j omitted would have been shrunk by
    s_jl <= s(T (lambda_1 + T)) (s increases with the product), and the entries that involve an omitted
    index have HS norm at most ||S||_HS <= tau^2 (an average of x x^T with ||x|| <= tau): leaving them
    out moves S by at most s(T (lambda_1 + T)) tau^2. With a released mean, its omitted part r has
    norm at most rho = s(T) tau (the mean's shrinkage), and mu mu^T moves by
    ||b r^T + r b^T + r r^T||_HS = sqrt(2 |b|^2 |r|^2 + |r|^4) <= sqrt(2 tau^2 rho^2 + rho^4).
    A bias, not noise: it is in no error figure of the noise.
    """
    tail = plan.basis_tail
    if tail is None:
        return None
    s, tau = plan.settings, float(plan.tau)
    T = float(tail["omitted_eigenvalue_sum"])
    top = float(plan.eigenvalues[0]) + T
    entry = float(shrinkage(np.array([T * top]), s.eta, s.phi)[0])
    bias = {"omitted_share_of_trace": T / tail["kernel_trace"], "omitted_entry_shrinkage_max": entry,
            "truncation_bias_hs_second_moment_max": entry * tau**2}
    total = entry * tau**2
    if plan.released_mean:
        r = float(shrinkage(np.array([T]), s.eta, s.phi)[0]) * tau
        outer = math.sqrt(2.0 * tau**2 * r**2 + r**4)
        bias["truncation_bias_l2_mean_max"] = r
        total += outer
    return {**tail, **bias, "truncation_bias_hs_max": total,
            "surface_points": int(surface_index(int(tail["grid_points"])).size)}


def accuracy_sentence(plan: CovarianceRelease) -> str:
    """Plain words: the noise's expected squared HS error, and a long grid's tail as a bias."""
    text = (f"The noise moves the second moment by {math.sqrt(plan.expected_sq_hs_error):.3g} in Hilbert-Schmidt "
            "norm (root mean square) around the private method's own target.")
    truncation = basis_truncation(plan)
    if truncation is not None:
        L = truncation["components"]
        text += tail_sentence(truncation, f"is the {L} x {L} coefficient matrix in the kernel's top {L} eigenfunctions "
                              f"(the surface is written on {truncation['surface_points']:,} evenly spread grid points)",
                              "the covariance", truncation["truncation_bias_hs_max"], "HS norm")
    return text


# --------------------------------------------------------------------------- private FPCA from C~

def eigenfunctions_of(plan: CovarianceRelease, coefficient_matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of a (released) covariance coefficient matrix, as functions on the grid.

    Post-processing of C~: (eigenvalues (k,), functions (m, k) orthonormal in the weighted inner
    product), signs fixed so each function's largest-magnitude grid value is positive.
    """
    values, vectors = np.linalg.eigh(symmetrise(coefficient_matrix))
    order = np.argsort(values)[::-1][:k]
    functions = plan.eigenfunctions @ vectors[:, order]
    idx = np.argmax(np.abs(functions), axis=0)
    functions = functions * np.sign(functions[idx, np.arange(functions.shape[1])])
    return values[order], functions


def variance_ratio(fd: FunctionalData, settings: CovarianceSettings, functions: np.ndarray) -> float:
    """Share of the top-k variance of the centred, clipped curves captured by ``functions`` (m, k).

    tr(F^T C_hat F) / (sum of the top-k eigenvalues of C_hat), C_hat the sample covariance of the
    curves (weighted inner product). In [0, 1]; 1 = the non-private principal subspace.
    NON-PRIVATE (computed from the raw data): analyst view only.
    """
    curves, _ = centred_clipped_curves(fd, settings)
    sw = np.sqrt(fd.weights)
    Z = (curves - curves.mean(axis=0)) * sw
    F, _ = np.linalg.qr(functions * sw[:, None])  # orthonormalise (eigenfunctions already are)
    k = F.shape[1]
    captured = float(np.sum((Z @ F) ** 2)) / fd.n
    top = np.sort(np.linalg.svd(Z, compute_uv=False) ** 2 / fd.n)[::-1][:k]
    return captured / float(np.sum(top)) if np.sum(top) > 0 else 1.0


def exponential_mechanism_components(fd: FunctionalData, settings: CovarianceSettings, k: int,
                                     rng: np.random.Generator) -> np.ndarray:
    """The exponential mechanism's private components (METHODS 5) on the same centred, clipped curves
    at the same *total* epsilon, in the same kernel eigenbasis: the comparison of section 13."""
    from .pca import PcaSettings, private_pca  # lazy: scipy.linalg (PCA sampler), only for the components

    curves, _ = centred_clipped_curves(fd, settings)
    centred = from_arrays(fd.grid_points, curves, name="centred curves", metadata=fd.metadata)
    pca = private_pca(centred, PcaSettings(k=k, basis="kernel", kernel=settings.kernel, rho=settings.rho,
                                           nu=settings.nu, epsilon=settings.epsilon, tau=settings.tau_value,
                                           centring="none", person_column=settings.person_column,
                                           n_public=settings.n_public), rng)
    return pca.components


# --------------------------------------------------------------------------- records

def release_record(plan: CovarianceRelease, *, seed: int | None = None) -> dict:
    """The publishable record: public inputs, the guarantee and data-free error figures only.

    No count computed from the data (n_clipped) appears here: see :func:`analyst_view`. n itself
    is treated as public (the sensitivities use it), as in every fdp release.
    """
    s = plan.settings
    g = plan.guarantee
    record = {
        "release": "covariance",
        "mechanism": s.mechanism,
        "privacy": g.privacy,
        "epsilon": s.epsilon,
        "delta": g.delta,
        "centring": s.centring,
        "centre": s.centre_value,
        "value_range": None if s.lo is None else [float(s.lo), float(s.hi)],
        "tau": plan.tau,
        "n": plan.n,
        "unit_of_privacy": f"person (column '{s.person_column}')" if s.person_column else "curve",
        "n_policy": "declared public (n_public)" if s.n_public is not None else
                    "number of persons with a usable curve, declared public",
        "m": int(plan.grid_points.size),
        "n_components": plan.n_components,
        "sensitivity": plan.sensitivity,
        "sigma": plan.sigma,
        "guarantee": g.record(),
        "expected_sq_hs_error_second_moment": plan.expected_sq_hs_error,
        "released_quantity": ("C~ = S~ - mu~ mu~^T, S~ the second moment and mu~ the mean of the curves centred "
                              "at c" if plan.released_mean else
                              "S~: the second-moment operator of the curves about the public centre c (equals the "
                              "covariance only if the mean is c)"),
        "data_dependent_flags": [],
        "differentially_private": True,
        **randomness_fields(seed),
        "settings": asdict(s),
    }
    points = plan.surface_points.size
    if points < plan.grid_points.size:
        record["surface_grid"] = {"points": int(points), "rule": f"{points} grid points evenly spread by index, the "
                                  "ends included (public: from m alone); the release is the L x L coefficient "
                                  "matrix, its surface there is post-processing"}
    truncation = basis_truncation(plan)
    if truncation is not None:
        record["basis_truncation"] = truncation
    return record


def analyst_view(plan: CovarianceRelease, release: dict, k: int, fd: FunctionalData) -> dict:
    """Quantities computed from the raw data: never publish (clipping count, distance to the non-private
    estimate, eigenvalues of the non-private covariance)."""
    nonprivate = plan.nonprivate_covariance()
    C = release["covariance"][0]
    private_values, private_functions = eigenfunctions_of(plan, C, k)
    np_values, np_functions = eigenfunctions_of(plan, nonprivate, k)
    return {
        "warning": NOT_PUBLISHABLE,
        "n_clipped": plan.n_clipped,
        "n_curves": fd.n, "n_dropped": fd.report.n_dropped, "n_persons": plan.n,
        "n_persons_without_usable_curve": file_persons(fd, plan.settings.person_column).n_unusable,
        "hs_distance_to_nonprivate": float(np.linalg.norm(C - nonprivate)),
        "nonprivate_top_eigenvalues": np_values,
        "private_top_eigenvalues": private_values,
        "variance_ratio_covariance_route": variance_ratio(fd, plan.settings, private_functions),
        "accuracy": accuracy_sentence(plan),
    }
