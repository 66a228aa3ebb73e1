"""The mean mechanisms, one registry entry each (METHODS.md 2-3).

An entry is everything fdp needs to know about a mechanism without branching on its name or on a
flag standing for it (its basis, fdp_core/registry/mean_basis.py, carries what Bernstein does differently):
its label and privacy type, which settings fields it reads (and how they are validated),
which penalty it smooths with (PSS and the commit's float-error bound read it), and how it
turns the clipped mean's coefficients into estimate + noise (sensitivity, calibration, noise
scales, closed-form error) with the guarantee it gives. ``mean.plan_mean_release`` dispatches
to the entry's :attr:`MeanMechanism.basis`, whose kernel eigenbasis calls :attr:`MeanMechanism.plan_noise`;
records add :meth:`MeanMechanism.record_fields`.

Adding a mechanism: write its noise function under ``fdp_core/mechanisms/``, its bounds in
``sensitivity.py``, then one entry here (docs/ARCHITECTURE.md has the whole checklist).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ParameterError
from ..releases.estimators import shrinkage
from ..limits import MAX_BERNSTEIN_K, check_at_most
from ..mechanisms.calibration import GaussianCalibration
from ..mechanisms.families import NoiseFamily, noise_family
from ..mechanisms.gaussian import gaussian_mean_noise
from ..params import check_bound_value, check_choice, check_count, check_delta, check_eta, check_finite, check_positive
from .mean_basis import BERNSTEIN_LATTICE, KERNEL_EIGENBASIS, MeanBasis, NoisePlan
from ..sensitivity import (gaussian_mean_sensitivity_paper, gaussian_mean_sensitivity_tight,
                           iclp_qr_sensitivity_paper, iclp_qr_sensitivity_tight)



@dataclass(frozen=True)
class MeanMechanism:
    """One mean mechanism: metadata, its own validation and its noise plan."""

    name: str
    label: str
    noise: str  # coefficient noise family: "gaussian" | "laplace"
    penalty: str | None  # the MeanSettings field of its smoothing penalty ("phi", "psi"), or None
    quadratic_penalty: bool  # linear shrinkage s_l in [0, 1]: PSS (METHODS 6), PCV and private selection apply
    basis: MeanBasis  # the kernel eigenbasis (tau ball) or Bernstein's lattice on [lo, hi]: sums, plan, words
    fields: tuple  # the MeanSettings fields it reads beyond kernel, rho, epsilon, bound, tau
    validate: Callable  # validate(settings): raise ParameterError on a bad field
    plan_noise: Callable | None = None  # plan_noise(settings, eigenvalues, n_kept, coefs, tau, n) -> NoisePlan
    # worst_case(settings, eigenvalues, tau, n) -> (direction, background coefficients, description): the
    # neighbouring pair the black-box audit uses (fdp_core/explore/audit.py); None for Bernstein's lattice.
    worst_case: Callable | None = None
    # shrinkage_sensitivity(bound, eigenvalues, shrink, tau, n, eta, penalty) -> Delta of the linear-shrinkage
    # mean shrink * xbar: the quadratic-penalty mechanisms' own bound, for closed forms that skip re-planning
    # (accuracy.penalised_noise_scales: sweeps, PCV, private selection); None for the other mechanisms.
    shrinkage_sensitivity: Callable | None = None
    # band_shrinkage(settings, eigenvalues, noise_scales) -> s_l on every kept eigenfunction (0 beyond the
    # release's): the linear smoother S of the confidence band (fdp_core/releases/bands.py, METHODS 18); None for the
    # Bernstein lattice, whose smoother bands.py builds from the lattice. band_note says how exact it is.
    band_shrinkage: Callable | None = None
    band_note: str = "S is the mechanism's own linear smoother: the band's normal approximation is the only one"
    band_linear: bool = True  # False: S is a linearisation (the smoothing-bias bound of METHODS 18 does not apply)
    # How the app shows it (plain words; the formulas are in docs/METHODS.md).
    color: str = "#1f77b4"
    bound_help: str = ""  # what "tight" and "paper" mean for this mechanism
    bound_names: tuple = (("tight", "tight"), ("paper", "paper"))  # (bound, name shown)
    sensitivity_norm_label: str = ""
    scale_rule: str = ""  # how the noise scale follows from the sensitivity
    error_rule: str = ""  # the closed form of the expected squared L2 error
    sensitivity_help: str = ""  # what the sensitivity's norm measures

    def bound_name(self, bound: str) -> str:
        return dict(self.bound_names).get(bound, bound)

    @property
    def family(self) -> NoiseFamily:
        return noise_family(self.noise)

    @property
    def noise_variance_factor(self) -> float:
        """Variance of the noise per unit scale squared: 1 (Gaussian sd) or 2 (Laplace scale b: 2 b^2)."""
        return self.family.variance_factor

    @property
    def privacy(self) -> str:
        return self.family.privacy

    @property
    def pss(self) -> bool:
        """Privacy-safe selection's theory holds (quadratic penalties only; never ICLP-AR)."""
        return self.quadratic_penalty

    @property
    def uses_delta(self) -> bool:
        return self.family.uses_delta

    def expected_sq_l2_error(self, scales: np.ndarray) -> float:
        """Closed form on an orthonormal basis: sigma^2 sum lambda (Gaussian), sum 2 b_l^2 (Laplace)."""
        scales = np.asarray(scales, dtype=float)
        return float(self.noise_variance_factor * np.sum(scales**2))

    def record_fields(self, settings, plan) -> dict:
        """The publishable fields this mechanism adds to a release record (public inputs only)."""
        out = {"privacy": self.privacy}
        if self.uses_delta:
            return out
        g = plan.guarantee
        out.update(delta_note="delta does not apply: pure epsilon-DP (delta = 0); settings.delta is ignored",
                   laplace_scales=plan.noise_scales, sensitivity_l1=plan.sensitivity,
                   sensitivity_tight=g.sensitivity_for("tight"), sensitivity_paper=g.sensitivity_for("paper"),
                   bound_label=g.bound_label)
        if self.penalty == "psi":
            out.update(sensitivity_l1c=plan.sensitivity, psi=settings.psi)
        if "n_active" in g.details:
            out["n_active"] = g.details["n_active"]
        if "M" in self.fields:
            out["M"] = int(settings.M)
        if "K" in self.fields:
            lo, hi = settings.bernstein_range
            out.update(K=int(settings.K), lo=float(lo), hi=float(hi))
        return out


# --------------------------------------------------------------------------- validation

def _validate_gaussian(s) -> None:
    check_positive("phi", s.phi)
    check_delta(s.delta)
    check_eta(s.eta)


def _validate_iclp_qr(s) -> None:
    check_positive("psi", s.psi)
    if check_finite("eta", s.eta) <= 1:
        raise ParameterError(f"ICLP-QR needs eta > 1, got {s.eta!r}: Lin & Reimherr's quadratic-penalty "
                             "mean and its l1-C sensitivity bound are established only for a penalty in "
                             "H(C^eta) with eta > 1 (use eta > 1, or ICLP-AR, which allows eta = 1)")


def _validate_iclp_ar(s) -> None:
    check_positive("psi", s.psi)
    check_eta(s.eta)


def _validate_frl(s) -> None:
    check_count("M (number of FRL eigenfunctions)", s.M)


def _validate_truncated_gaussian(s) -> None:
    check_count("M (number of eigenfunctions)", s.M)
    check_delta(s.delta)


def _validate_bernstein(s) -> None:
    check_at_most("K (Bernstein lattice size)", check_count("K (Bernstein lattice size)", s.K),
                  MAX_BERNSTEIN_K, "the basis has K + 1 binomial terms per grid point")
    blo, bhi = s.bernstein_range
    if blo is None or bhi is None:
        raise ParameterError("the Bernstein mechanism needs a public value range: set lo and hi "
                             "(--lo/--hi or --value-range), bounds on every curve value chosen without "
                             "looking at the data")
    lo, hi = check_bound_value("lo", blo), check_bound_value("hi", bhi)
    if lo >= hi:
        raise ParameterError(f"the Bernstein value range needs lo < hi, got lo = {blo!r}, hi = {bhi!r}")


# --------------------------------------------------------------------------- noise plans

# ``s`` is validated MeanSettings (MeanSettings.validated, at the boundary): the planners trust its
# epsilon and delta (GaussianCalibration.of_validated) instead of re-checking them.

def _plan_gaussian(s, lam, n_kept, coefs, tau, n) -> NoisePlan:
    return NoisePlan.of(gaussian_mean_noise(lam, coefs, eta=s.eta, phi=s.phi, tau=tau, n=n, epsilon=s.epsilon,
                                            delta=s.delta, bound=s.bound, calibration=s.calibration,
                                            calibrated=GaussianCalibration.of_validated(s.epsilon, s.delta)),
                        n_kept)


def _iclp_planner(name: str):
    """The planner of an ICLP mechanism: ``name``, its noise function in mechanisms/iclp.py."""
    def plan(s, lam, n_kept, coefs, tau, n) -> NoisePlan:
        from ..mechanisms import iclp  # lazy: only when an ICLP mechanism plans (start-up of the others)

        noise = getattr(iclp, name)(lam, coefs, eta=s.eta, psi=s.psi, tau=tau, n=n, epsilon=s.epsilon, bound=s.bound)
        return NoisePlan.of(noise, n_kept)
    return plan


def _first_M(s, n_kept: int, who: str) -> int:
    """M of a truncating mechanism, refused when the kernel keeps fewer eigenfunctions on this grid."""
    M = int(s.M)
    if M > n_kept:
        raise ParameterError(f"{who} with M = {M} needs {M} eigenfunctions, but this kernel keeps only "
                             f"{n_kept} on this grid (eigenvalues above 1e-12 of the largest): "
                             f"choose M <= {n_kept}, a rougher kernel or a smaller rho")
    return M


def _plan_frl(s, lam, n_kept, coefs, tau, n) -> NoisePlan:
    from ..mechanisms.frl import frl_mean_noise  # lazy: only when this mechanism plans (start-up of the others)

    M = _first_M(s, n_kept, "FRL")
    return NoisePlan.of(frl_mean_noise(coefs, M=M, tau=tau, n=n, epsilon=s.epsilon, bound=s.bound), M)


def _plan_truncated_gaussian(s, lam, n_kept, coefs, tau, n) -> NoisePlan:
    from ..mechanisms.truncated_gaussian import truncated_gaussian_mean_noise  # lazy: as FRL's

    M = _first_M(s, n_kept, "The truncated Gaussian mechanism")
    return NoisePlan.of(truncated_gaussian_mean_noise(
        coefs, M=M, tau=tau, n=n, epsilon=s.epsilon, delta=s.delta, calibration=s.calibration,
        calibrated=GaussianCalibration.of_validated(s.epsilon, s.delta)), M)


# --------------------------------------------------------------------------- linear-shrinkage sensitivities

def _gaussian_shrinkage_sensitivity(bound, lam, shrink, tau, n, eta, penalty) -> float:
    if bound == "tight":
        return gaussian_mean_sensitivity_tight(lam, shrink, tau, n)
    return gaussian_mean_sensitivity_paper(tau, n, eta, penalty)


def _iclp_qr_shrinkage_sensitivity(bound, lam, shrink, tau, n, eta, penalty) -> float:
    if bound == "tight":
        return iclp_qr_sensitivity_tight(lam, shrink, tau, n)
    return iclp_qr_sensitivity_paper(lam, shrink, tau, n)


# --------------------------------------------------------------------------- smoothers of the confidence band

def _penalty_band_shrinkage(s, lam, scales):
    """s_l = lambda_l^eta / (lambda_l^eta + penalty), the penalty being the mechanism's own (phi or psi)."""
    return shrinkage(lam, s.eta, getattr(s, MEAN_REGISTRY[s.mechanism].penalty))


def _kept_band_shrinkage(s, lam, scales):
    """1 on the coefficients that carry noise (the first M; ICLP-AR's active set), 0 elsewhere."""
    out = np.zeros(lam.size)
    out[: scales.size] = (np.asarray(scales) > 0).astype(float)
    return out


# --------------------------------------------------------------------------- worst-case pairs (audits)

def _worst_gaussian(s, lam, tau, n):
    direction = np.zeros(lam.size)
    direction[int(np.argmax(shrinkage(lam, s.eta, s.phi) ** 2 / lam))] = 1.0
    return direction, np.zeros(lam.size), ("tau * phi_l vs -tau * phi_l at l = argmax s_l^2 / lambda_l "
                                           "(attains the tight bound)")


def _worst_iclp_qr(s, lam, tau, n):
    return (shrinkage(lam, s.eta, s.psi) / np.sqrt(lam), np.zeros(lam.size),
            "+/- tau * a / ||a||, a_l = s_l / sqrt(lambda_l) (Cauchy-Schwarz equality case)")


def _worst_truncated_gaussian(s, lam, tau, n):
    direction = np.zeros(lam.size)
    direction[0] = 1.0
    return direction, np.zeros(lam.size), "tau * phi_1 vs -tau * phi_1 (attains 2 tau / n)"


def _worst_frl(s, lam, tau, n):
    direction = np.zeros(lam.size)
    direction[: int(s.M)] = 1.0
    return direction, np.zeros(lam.size), "+/- tau * (phi_1 + ... + phi_M) / sqrt(M) (attains the tight bound)"


def _worst_iclp_ar(s, lam, tau, n):
    thresholds = s.psi / (2.0 * lam ** (s.eta / 2.0))
    active = np.flatnonzero(thresholds < tau)
    # Background curves sit just above the threshold on as many active components as the tau
    # ball allows (cheapest first), so the pair's difference passes unshrunk.
    lift = np.zeros(lam.size)
    budget = 0.49 * tau**2
    used = []
    for l in active[np.argsort(thresholds[active])]:
        need = (thresholds[l] + 2.0 * tau / n) * n / (n - 1)
        if need**2 > budget:
            break
        lift[l], budget = need, budget - need**2
        used.append(l)
    direction = np.zeros(lam.size)
    direction[used or active[:1]] = 1.0 / np.sqrt(lam[used or active[:1]])
    return direction, lift, ("+/- tau * d / ||d||, d_l = lambda_l^(-1/2) on the lifted active components, over "
                             "background curves above the soft-thresholds (the CS bound is not attained in general)")


MEAN_REGISTRY: dict[str, MeanMechanism] = {m.name: m for m in (
    MeanMechanism("gaussian", "Gaussian process (epsilon, delta)", "gaussian", "phi",
                  quadratic_penalty=True, basis=KERNEL_EIGENBASIS,
                  fields=("eta", "phi", "delta", "calibration"), validate=_validate_gaussian,
                  plan_noise=_plan_gaussian, worst_case=_worst_gaussian,
                  shrinkage_sensitivity=_gaussian_shrinkage_sensitivity, band_shrinkage=_penalty_band_shrinkage,
                  color="#1f77b4",
                  bound_help="tight: the exact worst case over clipped curves (attained). paper: the closed form "
                             "of Mirshani et al. (2019), never smaller.",
                  bound_names=(("tight", "tight (attained)"), ("paper", "paper (Mirshani et al.)")),
                  sensitivity_norm_label="kernel norm", scale_rule="sd sigma sqrt(lambda_l) per coefficient",
                  error_rule="sigma^2 sum(lambda_l)",
                  sensitivity_help="Measured in the Cameron-Martin norm of the kernel C, ||h||^2 = sum_l h_l^2 / "
                                   "lambda_l: the norm in which the Gaussian-process noise's privacy loss is exactly "
                                   "that of a scalar Gaussian mechanism (docs/METHODS.md, section 2)."),
    MeanMechanism("iclp-qr", "ICLP-QR (quadratic penalty, epsilon)", "laplace", "psi",
                  quadratic_penalty=True, basis=KERNEL_EIGENBASIS,
                  fields=("eta", "psi"), validate=_validate_iclp_qr, plan_noise=_iclp_planner("iclp_qr_mean_noise"),
                  worst_case=_worst_iclp_qr, shrinkage_sensitivity=_iclp_qr_shrinkage_sensitivity,
                  band_shrinkage=_penalty_band_shrinkage, color="#ff7f0e",
                  bound_help="tight: Cauchy-Schwarz, attained by a pair of clipped curves. paper: Lin & Reimherr's "
                             "sum, never smaller.",
                  sensitivity_norm_label="weighted l1", scale_rule="b_l = Delta_1 sqrt(lambda_l) / epsilon",
                  error_rule="sum 2 b_l^2"),
    MeanMechanism("iclp-ar", "ICLP-AR (absolute penalty, epsilon)", "laplace", "psi",
                  quadratic_penalty=False, basis=KERNEL_EIGENBASIS,
                  fields=("eta", "psi"), validate=_validate_iclp_ar, plan_noise=_iclp_planner("iclp_ar_mean_noise"),
                  worst_case=_worst_iclp_ar, band_shrinkage=_kept_band_shrinkage, band_linear=False,
                  band_note="soft-thresholding is not linear: the band uses its slope 1 on the active components "
                            "(exact where the population mean's coefficients clear their thresholds)",
                  color="#9467bd",
                  bound_help="tight = the CS bound (valid, not attained in general). paper = the triangle bound "
                             "with lambda^(-1/2) (the paper prints lambda^(-eta/2), which can under-noise: not "
                             "offered).",
                  bound_names=(("tight", "CS bound"), ("paper", "triangle")), sensitivity_norm_label="weighted l1",
                  scale_rule="b_l = Delta_1 sqrt(lambda_l) / epsilon on active components", error_rule="sum 2 b_l^2"),
    MeanMechanism("frl", "FRL (first M eigenfunctions, epsilon)", "laplace", None,
                  quadratic_penalty=False, basis=KERNEL_EIGENBASIS,
                  fields=("M",), validate=_validate_frl, plan_noise=_plan_frl, worst_case=_worst_frl,
                  band_shrinkage=_kept_band_shrinkage,
                  color="#8c564b", bound_help="tight: 2 tau sqrt(M)/n (attained). paper: 2 tau M/n.",
                  sensitivity_norm_label="l1", scale_rule="b = Delta_1 / epsilon on each of the M coefficients",
                  error_rule="sum 2 b_l^2"),
    MeanMechanism("bernstein", "Bernstein polynomial (epsilon)", "laplace", None,
                  quadratic_penalty=False, basis=BERNSTEIN_LATTICE,
                  fields=("K", "lo", "hi"), validate=_validate_bernstein, color="#e377c2",
                  bound_help="One exact bound, (K + 1)(hi - lo)/n: both choices give it.",
                  bound_names=(("tight", "exact"), ("paper", "exact (same)")), sensitivity_norm_label="l1",
                  band_note="S is linear interpolation at the lattice points followed by the Bernstein synthesis",
                  scale_rule="lambda = (K + 1)(hi - lo) / (n epsilon) on each lattice value",
                  error_rule="2 lambda^2 S_K (S_K = sum_v ||b_v||^2)"),
    MeanMechanism("truncated-gaussian", "Truncated Gaussian (first M eigenfunctions, epsilon, delta)", "gaussian",
                  None, quadratic_penalty=False, basis=KERNEL_EIGENBASIS,
                  fields=("M", "delta", "calibration"), validate=_validate_truncated_gaussian,
                  plan_noise=_plan_truncated_gaussian, worst_case=_worst_truncated_gaussian,
                  band_shrinkage=_kept_band_shrinkage, color="#17becf",
                  bound_help="One exact bound, 2 tau / n (Bessel's inequality, attained): both choices give it.",
                  bound_names=(("tight", "exact"), ("paper", "exact (same)")), sensitivity_norm_label="L2",
                  scale_rule="sd sigma on each of the M coefficients", error_rule="M sigma^2",
                  sensitivity_help="Measured in the L2 norm of the first M eigen-coefficients: projecting onto "
                                   "orthonormal functions never lengthens a difference (Bessel), so one person moves "
                                   "them by at most 2 tau / n."),
)}


def truncating_mechanisms() -> tuple:
    """Short names of the mechanisms that read M, the number of eigenfunctions they keep (page labels)."""
    return tuple(m.label.split(" (")[0] for m in MEAN_REGISTRY.values() if "M" in m.fields)


def quadratic_penalty_mechanisms() -> tuple:
    """Names of the mechanisms with linear shrinkage (PSS, closed-form PCV, private selection)."""
    return tuple(name for name, m in MEAN_REGISTRY.items() if m.quadratic_penalty)


def mean_mechanism(name: str) -> MeanMechanism:
    """The registry entry of a mean mechanism (ParameterError naming the choices otherwise)."""
    return MEAN_REGISTRY[check_choice("mechanism", name, tuple(MEAN_REGISTRY))]

REGISTRY = MEAN_REGISTRY  # the name every kind module exports (registry.entries)
