"""Mean-function release pipeline: clip -> eigenbasis -> estimator -> mechanism.

Every mean mechanism of METHODS.md 2-3 releases  sum_l (c_l + noise_l) b_l(t): estimator
coefficients c_l in some basis b_l plus independent noise per coefficient. A
:class:`MeanRelease` holds exactly that, plus the guarantee, so the app, the CLI and the
tests read one record. It holds the non-private estimate for the analyst view; the
release record it writes (:func:`release_record`) never contains it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np

from .data import DATA_DEPENDENT_TAU, FunctionalData, data_derived_tau
from .errors import ParameterError
from .estimators import lattice_interpolation_matrix
from .kernels import KERNEL_NAMES, eigenbasis
from .mechanisms.bernstein import bernstein_expected_sq_l2_error, bernstein_mean_noise
from .mechanisms.calibration import CALIBRATIONS, gaussian_quantile_radius
from .mechanisms.frl import frl_mean_noise
from .mechanisms.gaussian import gaussian_mean_noise
from .mechanisms.iclp import iclp_ar_mean_noise, iclp_qr_mean_noise
from .params import (check_choice, check_count, check_delta, check_epsilon, check_eta, check_finite,
                     check_positive)
from .sensitivity import BOUNDS
from .release import randomness_fields

GAUSSIAN_MECHANISMS = ("gaussian",)
PURE_DP_MECHANISMS = ("iclp-qr", "iclp-ar", "frl", "bernstein")
ICLP_MECHANISMS = ("iclp-qr", "iclp-ar")
MEAN_MECHANISMS = GAUSSIAN_MECHANISMS + PURE_DP_MECHANISMS
MECHANISM_LABELS = {
    "gaussian": "Gaussian process (epsilon, delta)",
    "iclp-qr": "ICLP-QR (quadratic penalty, epsilon)",
    "iclp-ar": "ICLP-AR (absolute penalty, epsilon)",
    "frl": "FRL (first M eigenfunctions, epsilon)",
    "bernstein": "Bernstein polynomial (epsilon)",
}


@dataclass(frozen=True)
class MeanSettings:
    """Every public choice behind a mean release (all of it goes into the provenance)."""

    mechanism: str = "gaussian"
    kernel: str = "matern52"
    rho: float = 0.1
    nu: float | None = None
    eta: float = 1.5
    phi: float = 1e-3
    epsilon: float = 1.0
    delta: float = 1e-5
    tau: float | None = 1.0
    tau_from_data: bool = False
    bound: str = "tight"
    calibration: str = "analytic"
    psi: float = 1e-3  # ICLP penalty
    M: int = 20  # FRL truncation
    K: int = 20  # Bernstein lattice size (K + 1 points)
    lo: float | None = None  # Bernstein: public range of the curve values
    hi: float | None = None

    def validated(self) -> "MeanSettings":
        """Check every field the chosen mechanism uses; delta is ignored by pure epsilon-DP ones."""
        check_choice("mechanism", self.mechanism, MEAN_MECHANISMS)
        check_choice("kernel", self.kernel, KERNEL_NAMES)
        check_positive("rho", self.rho)
        check_epsilon(self.epsilon)
        check_choice("bound", self.bound, BOUNDS)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        if self.mechanism in GAUSSIAN_MECHANISMS:
            check_positive("phi", self.phi)
            check_delta(self.delta)
            check_eta(self.eta)
        if self.mechanism in ICLP_MECHANISMS:
            check_positive("psi", self.psi)
        if self.mechanism == "iclp-qr" and check_finite("eta", self.eta) <= 1:
            raise ParameterError(f"ICLP-QR needs eta > 1, got {self.eta!r}: Lin & Reimherr's quadratic-penalty "
                                 "mean and its l1-C sensitivity bound are established only for a penalty in "
                                 "H(C^eta) with eta > 1 (use eta > 1, or ICLP-AR, which allows eta = 1)")
        if self.mechanism == "iclp-ar":
            check_eta(self.eta)
        if self.mechanism == "frl":
            check_count("M (number of FRL eigenfunctions)", self.M)
        if self.mechanism == "bernstein":
            check_count("K (Bernstein lattice size)", self.K)
            if self.lo is None or self.hi is None:
                raise ParameterError("the Bernstein mechanism needs a public value range: set lo and hi "
                                     "(--lo/--hi), bounds on every curve value chosen without looking at the data")
            lo, hi = check_finite("lo", self.lo), check_finite("hi", self.hi)
            if lo >= hi:
                raise ParameterError(f"the Bernstein value range needs lo < hi, got lo = {self.lo!r}, hi = {self.hi!r}")
            return self  # tau plays no role: values are clipped to [lo, hi] instead
        if not self.tau_from_data:
            if self.tau is None:
                raise ParameterError("tau (the public L2 norm bound) is required unless tau_from_data is set")
            check_positive("tau", self.tau)
        return self


@dataclass(frozen=True)
class MeanRelease:
    """A planned mean release: deterministic parts computed, noise drawn on demand."""

    settings: MeanSettings
    grid_points: np.ndarray
    synthesis: np.ndarray  # (m, L): basis functions b_l on the grid
    weights: np.ndarray  # quadrature weights of the L2 inner product
    estimate_coefficients: np.ndarray = field(repr=False)  # NON-PRIVATE: analyst view only
    noise_scales: np.ndarray = field(repr=False)  # sd (gaussian) or Laplace scale b_l (laplace)
    noise: str  # "gaussian" | "laplace"
    tau: float | None  # None for Bernstein (clips values to [lo, hi] instead)
    n: int
    n_clipped: int
    n_dropped: int
    sensitivity: float
    sigma: float | None
    expected_sq_l2_error: float
    guarantee: dict
    data_dependent_flags: tuple = ()

    @property
    def m(self) -> int:
        return int(self.grid_points.size)

    @property
    def privacy(self) -> str:
        return self.guarantee["privacy"]

    @property
    def delta(self) -> float:
        """delta of the guarantee: 0 for the pure epsilon-DP mechanisms."""
        return self.settings.delta if self.settings.mechanism in GAUSSIAN_MECHANISMS else 0.0

    @property
    def estimate(self) -> np.ndarray:
        """The non-private estimate on the grid. Analyst view: never publish."""
        return self.synthesis @ self.estimate_coefficients

    def noise_coefficients(self, rng: np.random.Generator, size: int) -> np.ndarray:
        shape = (size, self.noise_scales.size)
        if self.noise == "gaussian":
            return rng.standard_normal(shape) * self.noise_scales
        return rng.laplace(0.0, 1.0, shape) * self.noise_scales

    def sample(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """``size`` independent sanitized means on the grid, shape (size, m)."""
        return (self.estimate_coefficients + self.noise_coefficients(rng, size)) @ self.synthesis.T

    def l2_error_radius(self, prob: float = 0.95) -> float:
        """r with P(||release - estimate||_L2 <= r) = prob."""
        return _noise_radius("l2", self, prob)

    def sup_error_radius(self, prob: float = 0.95) -> float:
        """r with P(max_t |release(t) - estimate(t)| <= r) ~ prob (Monte Carlo, fixed seed)."""
        return _noise_radius("sup", self, prob)


def _noise_radius(kind: str, plan: "MeanRelease", prob: float) -> float:
    """Error radii are positively homogeneous in the noise scales: compute them once per
    *shape* of the scale vector (cached) and rescale, so moving epsilon or delta never
    re-runs the Monte Carlo or the saddlepoint search."""
    top = float(np.max(plan.noise_scales, initial=0.0))
    if top == 0.0:
        return 0.0
    # Rounded so that the same shape at another epsilon hits the cache despite last-bit noise.
    unit = np.round(plan.noise_scales / top, 12)
    return top * _unit_radius(kind, plan.noise, unit.tobytes(), np.ascontiguousarray(plan.synthesis).tobytes(),
                              plan.synthesis.shape, plan.weights.tobytes(), float(prob))


@lru_cache(maxsize=256)
def _unit_radius(kind, noise, unit_bytes, synthesis_bytes, shape, weights_bytes, prob) -> float:
    scales = np.frombuffer(unit_bytes)
    synthesis = np.frombuffer(synthesis_bytes).reshape(shape)
    weights = np.frombuffer(weights_bytes)
    if kind == "l2" and noise == "gaussian":
        gram = synthesis.T @ (weights[:, None] * synthesis)
        if np.allclose(gram, np.eye(shape[1]), atol=1e-8):
            return gaussian_quantile_radius(scales**2, prob)
    rng = np.random.default_rng(12345)
    coefs = rng.standard_normal((4000, scales.size)) if noise == "gaussian" else rng.laplace(0.0, 1.0, (4000, scales.size))
    draws = (coefs * scales) @ synthesis.T
    sizes = np.sqrt((draws**2) @ weights) if kind == "l2" else np.abs(draws).max(axis=1)
    return float(np.quantile(sizes, prob))


def resolve_tau(fd: FunctionalData, settings: MeanSettings) -> tuple[float, tuple]:
    """The norm bound to clip at, with the data-dependent flag when it was read off the data."""
    if settings.tau_from_data:
        return data_derived_tau(fd), (DATA_DEPENDENT_TAU,)
    return float(settings.tau), ()


@dataclass(frozen=True)
class MeanSums:
    """Everything a mean release reads from the data (METHODS.md section 17): n and the sum
    of the per-record clipped curves (or, for Bernstein, of their lattice values).

    Computed in memory by :func:`mean_sums` or chunk by chunk by fdp_core/stream.py; the
    planning below is the same code for both."""

    grid_points: np.ndarray
    unit_grid: np.ndarray
    weights: np.ndarray
    n: int
    n_dropped: int
    n_clipped: int
    tau: float | None = None  # the clipping bound the sums were taken at (None: Bernstein)
    clipped_sum: np.ndarray | None = None  # (m,) sum_i X_i min(1, tau / ||X_i||)
    lattice_sum: np.ndarray | None = None  # (K + 1,) Bernstein: sum of range-clipped lattice values
    data_dependent_flags: tuple = ()


def mean_sums(fd: FunctionalData, settings: MeanSettings) -> MeanSums:
    """The sufficient statistics of ``fd`` for ``settings`` (in memory)."""
    settings = settings.validated()
    common = dict(grid_points=fd.grid_points, unit_grid=fd.unit_grid, weights=fd.weights, n=fd.n,
                  n_dropped=fd.report.n_dropped)
    if settings.mechanism == "bernstein":
        lattice = np.clip(fd.data_matrix, settings.lo, settings.hi)
        n_clipped = int(np.sum(np.any(lattice != fd.data_matrix, axis=1)))
        lattice = lattice @ lattice_interpolation_matrix(fd.unit_grid, int(settings.K))
        return MeanSums(n_clipped=n_clipped, lattice_sum=np.add.reduce(lattice, axis=0), **common)
    tau, flags = resolve_tau(fd, settings)
    return MeanSums(n_clipped=fd.n_clipped(tau), tau=tau, clipped_sum=fd.clipped_sum(tau),
                    data_dependent_flags=flags, **common)


def _check_sums(sums: MeanSums, settings: MeanSettings) -> None:
    if settings.mechanism == "bernstein":
        if sums.lattice_sum is None or sums.lattice_sum.size != int(settings.K) + 1:
            raise ParameterError("these sufficient statistics were not taken for the Bernstein lattice of K = "
                                 f"{settings.K}: recompute them with the release settings")
    elif sums.clipped_sum is None or (not settings.tau_from_data and sums.tau != float(settings.tau)):
        raise ParameterError(f"these sufficient statistics were clipped at tau = {sums.tau}, not at the release's "
                             f"tau = {settings.tau}: recompute them with the release settings")


def plan_mean_release(fd: FunctionalData | MeanSums, settings: MeanSettings) -> MeanRelease:
    """Validate settings, clip, project and calibrate: everything but the random draw.

    ``fd`` is the curves, or their :class:`MeanSums` (streamed, or from a Dask reduction)."""
    settings = settings.validated()
    sums = fd if isinstance(fd, MeanSums) else mean_sums(fd, settings)
    _check_sums(sums, settings)
    common = dict(settings=settings, grid_points=sums.grid_points, weights=sums.weights, n=sums.n,
                  n_dropped=sums.n_dropped)
    if settings.mechanism == "bernstein":
        return _plan_bernstein(sums, settings, common)
    tau, flags = sums.tau, sums.data_dependent_flags
    basis = eigenbasis(settings.kernel, settings.rho, sums.unit_grid, sums.weights, nu=settings.nu)
    mean_coefs = basis.coefficients(sums.clipped_sum / sums.n)
    common.update(tau=tau, n_clipped=sums.n_clipped, data_dependent_flags=flags)
    lam, s = basis.eigenvalues, settings
    if s.mechanism == "gaussian":
        coefs, scales, sensitivity, sigma, guarantee = gaussian_mean_noise(
            lam, mean_coefs, eta=s.eta, phi=s.phi, tau=tau, n=sums.n,
            epsilon=s.epsilon, delta=s.delta, bound=s.bound, calibration=s.calibration)
        return MeanRelease(synthesis=basis.eigenfunctions, estimate_coefficients=coefs, noise_scales=scales,
                           noise="gaussian", sensitivity=sensitivity, sigma=sigma,
                           expected_sq_l2_error=float(np.sum(scales**2)), guarantee=guarantee, **common)
    synthesis = basis.eigenfunctions
    if s.mechanism in ICLP_MECHANISMS:
        noise = iclp_qr_mean_noise if s.mechanism == "iclp-qr" else iclp_ar_mean_noise
        coefs, scales, sensitivity, guarantee = noise(lam, mean_coefs, eta=s.eta, psi=s.psi, tau=tau, n=sums.n,
                                                      epsilon=s.epsilon, bound=s.bound)
    else:  # frl
        M = int(s.M)
        if M > basis.n_components:
            raise ParameterError(f"FRL with M = {M} needs {M} eigenfunctions, but this kernel keeps only "
                                 f"{basis.n_components} on this grid (eigenvalues above 1e-12 of the largest): "
                                 f"choose M <= {basis.n_components}, a rougher kernel or a smaller rho")
        coefs, scales, sensitivity, guarantee = frl_mean_noise(mean_coefs, M=M, tau=tau, n=sums.n,
                                                               epsilon=s.epsilon, bound=s.bound)
        synthesis = basis.eigenfunctions[:, :M]
    # Orthonormal basis, independent Laplace(b_l) coefficients of variance 2 b_l^2.
    return MeanRelease(synthesis=synthesis, estimate_coefficients=coefs, noise_scales=scales, noise="laplace",
                       sensitivity=sensitivity, sigma=None, expected_sq_l2_error=float(np.sum(2.0 * scales**2)),
                       guarantee=guarantee, **common)


def _plan_bernstein(sums: MeanSums, s: MeanSettings, common: dict) -> MeanRelease:
    K, lo, hi = int(s.K), float(s.lo), float(s.hi)
    coefs, scales, sensitivity, guarantee, n_clipped, basis = bernstein_mean_noise(
        None, sums.unit_grid, sums.weights, K=K, lo=lo, hi=hi, n=sums.n, epsilon=s.epsilon,
        lattice_means=sums.lattice_sum / sums.n, n_clipped=sums.n_clipped)
    return MeanRelease(synthesis=basis, estimate_coefficients=coefs, noise_scales=scales, noise="laplace",
                       tau=None, n_clipped=n_clipped, sensitivity=sensitivity, sigma=None,
                       expected_sq_l2_error=bernstein_expected_sq_l2_error(K, float(scales[0])),
                       guarantee=guarantee, **common)


def release_record(plan: MeanRelease, values: np.ndarray, *, seed: int | None = None) -> dict:
    """The publishable record of one sanitized mean (never the data or the estimate)."""
    s = plan.settings
    record = {
        "release": "mean",
        "mechanism": s.mechanism,
        "kernel": s.kernel,
        "rho": s.rho,
        "nu": s.nu,
        "eta": s.eta,
        "phi": s.phi,
        "epsilon": s.epsilon,
        "delta": s.delta if s.mechanism in GAUSSIAN_MECHANISMS else 0.0,
        "tau": plan.tau,
        "bound": s.bound,
        "calibration": s.calibration if s.mechanism in GAUSSIAN_MECHANISMS else None,
        "n": plan.n,
        "m": plan.m,
        "n_dropped": plan.n_dropped,
        "n_clipped": plan.n_clipped,
        "sensitivity": plan.sensitivity,
        "sigma": plan.sigma,
        "expected_sq_l2_error": plan.expected_sq_l2_error,
        "l2_error_radius_95": plan.l2_error_radius(0.95),
        "data_dependent_flags": list(plan.data_dependent_flags),
        "differentially_private": not plan.data_dependent_flags,
        "guarantee": plan.guarantee,
        **randomness_fields(seed),
        "settings": asdict(s),
    }
    if s.mechanism in PURE_DP_MECHANISMS:
        g = plan.guarantee
        record["privacy"] = "epsilon-DP"
        record["delta_note"] = "delta does not apply: pure epsilon-DP (delta = 0); settings.delta is ignored"
        record["laplace_scales"] = plan.noise_scales
        record["sensitivity_l1"] = plan.sensitivity
        record["sensitivity_tight"] = g["sensitivity_tight"]
        record["sensitivity_paper"] = g["sensitivity_paper"]
        record["bound_label"] = g["bound_label"]
        if s.mechanism in ICLP_MECHANISMS:
            record["sensitivity_l1c"] = plan.sensitivity
            record["psi"] = s.psi
        if s.mechanism == "iclp-ar":
            record["n_active"] = g["n_active"]
        if s.mechanism == "frl":
            record["M"] = int(s.M)
        if s.mechanism == "bernstein":
            record.update(K=int(s.K), lo=float(s.lo), hi=float(s.hi))
    else:
        record["privacy"] = "(epsilon, delta)-DP"
    assert values.shape == (plan.m,)
    return record


def with_settings(plan_settings: MeanSettings, **changes) -> MeanSettings:
    return replace(plan_settings, **changes)
