"""Mean-function release pipeline: clip -> eigenbasis -> estimator -> mechanism.

Every mean mechanism of METHODS.md 2-3 releases  sum_l (c_l + noise_l) b_l(t): estimator
coefficients c_l in some basis b_l plus independent noise per coefficient. A
:class:`MeanRelease` holds exactly that, plus the guarantee, so the app, the CLI and the
tests read one record. It holds the non-private estimate for the analyst view; the
release record it writes (:func:`release_record`) never contains it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .data import DATA_DEPENDENT_TAU, FunctionalData, clip_to_ball, data_derived_tau
from .errors import ParameterError
from .kernels import KERNEL_NAMES, eigenbasis
from .mechanisms.calibration import CALIBRATIONS, gaussian_quantile_radius
from .mechanisms.gaussian import gaussian_mean_noise
from .params import check_choice, check_delta, check_epsilon, check_eta, check_positive
from .sensitivity import BOUNDS

GAUSSIAN_MECHANISMS = ("gaussian",)
MEAN_MECHANISMS = ("gaussian",)


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

    def validated(self) -> "MeanSettings":
        check_choice("mechanism", self.mechanism, MEAN_MECHANISMS)
        check_choice("kernel", self.kernel, KERNEL_NAMES)
        check_positive("rho", self.rho)
        check_epsilon(self.epsilon)
        check_positive("phi", self.phi)
        check_choice("bound", self.bound, BOUNDS)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        if self.mechanism in GAUSSIAN_MECHANISMS:
            check_delta(self.delta)
            check_eta(self.eta)
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
    tau: float
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
        gram = self.synthesis.T @ (self.weights[:, None] * self.synthesis)
        orthonormal = np.allclose(gram, np.eye(gram.shape[0]), atol=1e-8)
        if self.noise == "gaussian" and orthonormal:
            return gaussian_quantile_radius(self.noise_scales**2, prob)
        draws = self.noise_coefficients(np.random.default_rng(12345), 4000) @ self.synthesis.T
        return float(np.quantile(np.sqrt((draws**2) @ self.weights), prob))

    def sup_error_radius(self, prob: float = 0.95, n_draws: int = 4000) -> float:
        """r with P(max_t |release(t) - estimate(t)| <= r) ~ prob (Monte Carlo, fixed seed)."""
        draws = self.noise_coefficients(np.random.default_rng(54321), n_draws) @ self.synthesis.T
        return float(np.quantile(np.abs(draws).max(axis=1), prob))


def resolve_tau(fd: FunctionalData, settings: MeanSettings) -> tuple[float, tuple]:
    """The norm bound to clip at, with the data-dependent flag when it was read off the data."""
    if settings.tau_from_data:
        return data_derived_tau(fd), (DATA_DEPENDENT_TAU,)
    return float(settings.tau), ()


def plan_mean_release(fd: FunctionalData, settings: MeanSettings) -> MeanRelease:
    """Validate settings, clip, project and calibrate: everything but the random draw."""
    settings = settings.validated()
    tau, flags = resolve_tau(fd, settings)
    clipped = clip_to_ball(fd.data_matrix, fd.weights, tau)
    basis = eigenbasis(settings.kernel, settings.rho, fd.unit_grid, fd.weights, nu=settings.nu)
    mean_coefs = basis.coefficients(clipped.values.mean(axis=0))
    common = dict(settings=settings, grid_points=fd.grid_points, weights=fd.weights, tau=tau, n=fd.n,
                  n_clipped=clipped.n_clipped, n_dropped=fd.report.n_dropped, data_dependent_flags=flags)
    coefs, scales, sensitivity, sigma, guarantee = gaussian_mean_noise(
        basis.eigenvalues, mean_coefs, eta=settings.eta, phi=settings.phi, tau=tau, n=fd.n,
        epsilon=settings.epsilon, delta=settings.delta, bound=settings.bound, calibration=settings.calibration)
    return MeanRelease(synthesis=basis.eigenfunctions, estimate_coefficients=coefs, noise_scales=scales,
                       noise="gaussian", sensitivity=sensitivity, sigma=sigma,
                       expected_sq_l2_error=float(np.sum(scales**2)), guarantee=guarantee, **common)


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
        "seed": seed,
        "randomness": ("numpy Generator (idealised real-arithmetic DP)" if seed is None else
                       f"numpy Generator with demo seed {seed} (reproducible; idealised real-arithmetic DP)"),
        "settings": asdict(s),
    }
    assert values.shape == (plan.m,)
    return record


def with_settings(plan_settings: MeanSettings, **changes) -> MeanSettings:
    return replace(plan_settings, **changes)
