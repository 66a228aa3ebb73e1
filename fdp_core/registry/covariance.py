"""The covariance mechanisms, one registry entry each (METHODS.md 13; Lin & Reimherr, appendix C.1).

Both mechanisms noise all L x L entries of the shrunk second moment S in the kernel
eigenbasis, with scales proportional to sqrt(lambda_j lambda_l); they differ in the noise
family and so in the norm the sensitivity is taken in: ``gaussian`` (a GP with covariance
C (x) C, Cameron-Martin norm, (epsilon, delta)-DP) and ``iclp`` (tensor Laplace, l1-C norm,
pure epsilon-DP). An entry holds its label, noise family, the CovarianceSettings fields it
reads and their validation, its sensitivity norm (the audit's worst pair is searched in it),
its noise plan for S and for the released mean, and how the Covariance page shows it.
``covariance.py``, ``summary_audit.py``, ``commit_summaries.py`` and the page read the
entries; none of them branches on a mechanism's name.

>>> covariance_mechanism("iclp").family.privacy, covariance_mechanism("iclp").sensitivity_norm
('epsilon-DP', 'l1c')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..mechanisms.calibration import CALIBRATIONS, GaussianCalibration
from ..mechanisms.families import GAUSSIAN, LAPLACE, NoiseFamily, noise_family
from ..mechanisms.gaussian import gaussian_mean_noise
from ..mechanisms.guarantee import Guarantee
from ..mechanisms.iclp import iclp_qr_mean_noise
from ..params import check_choice, check_delta
from ..sensitivity import (COVARIANCE_GAUSSIAN_BOUND_LABELS, COVARIANCE_GAUSSIAN_BOUNDS,
                           covariance_gaussian_sensitivity_kyfan, covariance_gaussian_sensitivity_sqrt2,
                           covariance_l1c_sensitivity)

ICLP_BOUND_LABEL = "(tau^2/n) min(2 r(A), sqrt(2) ||A||_F) (valid bound, not attained in general)"


@dataclass(frozen=True)
class CovarianceNoise:
    """What a mechanism adds to the L x L second moment: scales, sensitivity and the guarantee of that part."""

    scales: np.ndarray  # (L, L) sd (Gaussian) or Laplace scale b_jl
    sensitivity: float
    sigma: float | None
    guarantee: Guarantee  # of the noised second moment alone, at its share of the budget (privacy, norm, bounds)


@dataclass(frozen=True)
class CovarianceMechanism:
    """One covariance mechanism: metadata, validation, noise plans and display."""

    name: str
    label: str  # how the Covariance page names it
    noise: str  # noise family: "gaussian" | "laplace"
    sensitivity_norm: str  # the norm of its sensitivity (summary_audit.pair_value): "cm" | "l1c"
    fields: tuple  # the CovarianceSettings fields it reads beyond kernel, rho, eta, phi, epsilon, centring
    validate: Callable  # validate(settings): raise ParameterError on a bad field
    # plan_noise(settings, weights A, root = sqrt(lambda_j lambda_l), tau, n, epsilon, delta) -> CovarianceNoise
    plan_noise: Callable
    # plan_mean(settings, eigenvalues, mean coefficients, tau, n, epsilon, delta)
    #   -> (shrunk estimate, noise scales, sensitivity, sigma or None): the released mean's part
    plan_mean: Callable
    scale_label: str  # the page's name for the noise scale it shows

    @property
    def family(self) -> NoiseFamily:
        return noise_family(self.noise)


# --------------------------------------------------------------------------- validation

def _validate_gaussian(s) -> None:
    check_delta(s.delta)
    check_choice("bound", s.bound, COVARIANCE_GAUSSIAN_BOUNDS)
    check_choice("calibration", s.calibration, CALIBRATIONS)


def _validate_iclp(s) -> None:
    """ICLP reads no field beyond the common ones (delta, bound and calibration are ignored)."""


# --------------------------------------------------------------------------- noise plans

def _plan_gaussian(s, A, root, tau, n, epsilon, delta) -> CovarianceNoise:
    sens = {"kyfan": covariance_gaussian_sensitivity_kyfan(A, tau, n),
            "sqrt2": covariance_gaussian_sensitivity_sqrt2(A, tau, n)}
    sensitivity = sens[s.bound]
    # epsilon and delta are the split of settings validated at the boundary (CovarianceSettings.validated):
    # calibrated without re-checking them.
    sigma = GaussianCalibration.of_validated(epsilon, delta).sigma(sensitivity, s.calibration)
    return CovarianceNoise(sigma * root, sensitivity, sigma, Guarantee(
        GAUSSIAN.privacy, float(epsilon), float(delta), sensitivity=sensitivity,
        sensitivity_norm="Cameron-Martin norm of C (x) C", sensitivity_key="sensitivity_cm", sensitivities=sens,
        bound_label=COVARIANCE_GAUSSIAN_BOUND_LABELS[s.bound], gdp_mu=sensitivity / sigma, details={"sigma": sigma}))


def _plan_iclp(s, A, root, tau, n, epsilon, delta) -> CovarianceNoise:
    l1c = covariance_l1c_sensitivity(A, tau, n)
    sensitivity = l1c["bound"]
    return CovarianceNoise(sensitivity * root / epsilon, sensitivity, None, Guarantee(
        LAPLACE.privacy, float(epsilon), 0.0, sensitivity=sensitivity,
        sensitivity_norm="l1-C norm: sum_jl |H_jl| / sqrt(lambda_j lambda_l)", sensitivity_key="sensitivity_l1c",
        sensitivities={"perron": l1c["perron"], "frobenius": l1c["frobenius"]}, bound_label=ICLP_BOUND_LABEL))


def _mean_gaussian(s, lam, xbar, tau, n, epsilon, delta):
    noise = gaussian_mean_noise(lam, xbar, eta=s.eta, phi=s.phi, tau=tau, n=n, epsilon=epsilon, delta=delta,
                                bound="tight", calibration=s.calibration,
                                calibrated=GaussianCalibration.of_validated(epsilon, delta))  # the validated split
    return noise.estimate_coefficients, noise.noise_scales, noise.sensitivity, noise.sigma


def _mean_iclp(s, lam, xbar, tau, n, epsilon, delta):
    # The same penalty phi as the covariance: ICLP-QR's psi.
    noise = iclp_qr_mean_noise(lam, xbar, eta=s.eta, psi=s.phi, tau=tau, n=n, epsilon=epsilon, bound="tight")
    return noise.estimate_coefficients, noise.noise_scales, noise.sensitivity, None


REGISTRY: dict[str, CovarianceMechanism] = {m.name: m for m in (
    CovarianceMechanism("gaussian", "Gaussian (tensor GP), (epsilon, delta)", "gaussian", "cm",
                        fields=("delta", "bound", "calibration"), validate=_validate_gaussian,
                        plan_noise=_plan_gaussian, plan_mean=_mean_gaussian, scale_label="sigma"),
    CovarianceMechanism("iclp", "ICLP (tensor Laplace), epsilon", "laplace", "l1c",
                        fields=(), validate=_validate_iclp, plan_noise=_plan_iclp, plan_mean=_mean_iclp,
                        scale_label="Laplace scale / sqrt(lambda_j lambda_l)"),
)}


def covariance_mechanism(name: str) -> CovarianceMechanism:
    """The registry entry of a covariance mechanism (ParameterError naming the choices otherwise)."""
    return REGISTRY[check_choice("mechanism", name, tuple(REGISTRY))]
