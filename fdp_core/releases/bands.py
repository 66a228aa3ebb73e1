"""Uncertainty bands for a released mean curve (METHODS.md 18).

Two bands, two different questions:

* the **privacy band** mu~ +- q_Z w_Z(t): where the noise may have put the curve, around the
  non-private smoothed estimate. Public: it needs only the noise law (Gaussian or Laplace
  coefficients, simulated), never the data.
* the **confidence band** mu~ +- q w(t) for the population's smoothed mean m_S = c + S E[Y - c]:
  mu~ - m_S = S (Ybar - E Y) + Z, sampling plus noise. The sampling part needs the covariance
  Sigma of a person's clipped, centred curve: it is released privately (the second moment of
  METHODS 13) with a public share of the budget, Sigma~ = PSD part of (S2~ - m m^T), m the
  released mean's coefficients. The rest is post-processing of the two releases.

q is the (1 - alpha) quantile of sup_t |G(t) + Z(t)| / w(t) over simulated draws
(G ~ N(0, S Sigma~ S^T / n), Z from the mechanism's own law), w the pointwise sd of G + Z:
a simultaneous band whose width follows the local uncertainty. The simulation uses a fixed
public seed, so the same releases give the same band.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..budget.privacy_events import composed_total
from .covariance import CovarianceRelease, CovarianceSettings, plan_covariance_release, symmetrise
from ..data.loading import FunctionalData, unit_interval
from ..errors import ParameterError
from ..params import check_positive
from .estimators import lattice_interpolation_matrix
from .mean import MeanRelease, MeanSettings, analyst_view, plan_mean_release, release_record
from ..registry import mean_mechanism
from ..registry.covariance import REGISTRY as COVARIANCE_REGISTRY

N_DRAWS = 4000  # simulated draws of sup |G + Z| / w: the quantile's Monte Carlo error is ~1% of q at 0.95
SIMULATION_SEED = 20_261_127  # public and fixed: the band is a deterministic function of the releases
PRIVACY_BAND_WORDS = "where the noise may have put this curve"
CONFIDENCE_BAND_WORDS = "where the population's smoothed mean lies, given sampling and noise"
MEAN_BAND_WORDS = ("where the population mean itself lies, given sampling and noise, if the declared smoothness "
                   "bound holds")
COVERS = ("the population's smoothed mean m_S = c + S E[Y - c] (Y a person's curve after the public range clip, "
          "centring, L2 clip at tau and person averaging), not E[Y] itself: the smoothing bias (I - S) E[Y - c] is "
          "outside (with a smoothness bound, mean_lower / mean_upper cover E[Y]: mean_band_covers)")
MEAN_BAND_COVERS = ("the population mean E[Y] (Y as above) itself, under the declared public bound "
                    "||E[Y] - c||_{H(C^eta)} <= B (c the public centre): an assumption, stated, not checked")
CLIPPING_ASSUMPTION = ("clipping bias is zero only if every person's curves lie in the declared range and norm bound: "
                       "an assumption, stated, not checked")
# Penalty of the second moment behind the band (the covariance release's default). A smaller one shrinks
# less but noises the high-order entries more, and the PSD projection turns that noise into a positive bias
# (wider bands: 1.5 times the oracle at phi = 1e-6 on S1, 1.02-1.06 at 1e-3); S then shrinks those
# components anyway (benchmarks/bench_coverage.py measures both effects).
BAND_SECOND_MOMENT_PHI = 1e-3
# The mean band's candidate penalties, as fractions of the release's own (METHODS 25): 1 down to 1e-6 in half decades.
UNDERSMOOTHING = tuple(10.0 ** -np.arange(0.0, 6.5, 0.5))
FILTER_KAPPAS = tuple(10.0 ** np.arange(-1.0, 2.5, 0.5))  # the filters' variance weights (about q^2 at 0.95: 5-10)
DESHRINK_FROM = 0.5  # the released mean's shrinkage s_l is undone where s_l >= this (released_covariance)


@dataclass(frozen=True)
class Band:
    """A simultaneous band on the grid: centre +- quantile * sd(t)."""

    lower: np.ndarray
    upper: np.ndarray
    quantile: float  # q: the (1 - alpha) quantile of sup_t |draw(t)| / sd(t)
    sd: np.ndarray  # w(t): the pointwise sd of what the band covers

    @property
    def half_width(self) -> np.ndarray:
        return (self.upper - self.lower) / 2.0


# --------------------------------------------------------------------------- the simulation

def sup_quantile(draws: np.ndarray, sd: np.ndarray, level: float) -> float:
    """The ``level`` quantile of max_t |draw(t)| / sd(t); points with sd = 0 are exact (left out)."""
    visible = sd > 0
    if not visible.any():
        return 0.0
    return float(np.quantile(np.max(np.abs(draws[:, visible]) / sd[visible], axis=1), level))


def psd_root(matrix: np.ndarray) -> np.ndarray:
    """R with R R^T = the PSD part of a symmetric matrix (negative eigenvalues set to 0)."""
    values, vectors = np.linalg.eigh(symmetrise(matrix))
    return vectors * np.sqrt(np.clip(values, 0.0, None))


def psd_part(matrix: np.ndarray) -> np.ndarray:
    """The nearest PSD matrix in Frobenius norm: negative eigenvalues set to 0."""
    root = psd_root(matrix)
    return root @ root.T


def simultaneous_band(plan: MeanRelease, values: np.ndarray, sampling_cov: np.ndarray | None, level: float, *,
                      n_draws: int = N_DRAWS, seed: int = SIMULATION_SEED, gain: np.ndarray | None = None) -> Band:
    """values +- q w(t) for G + Z: G ~ N(0, sampling_cov) in the release's coefficients (None: no sampling
    part, the privacy band), Z the release's own noise (Gaussian or Laplace coefficients), multiplied
    coefficient by coefficient by ``gain`` when the band's centre re-weights the release (the mean band)."""
    rng = np.random.default_rng(seed)
    synthesis = plan.synthesis
    gain = np.ones(plan.noise_scales.size) if gain is None else np.asarray(gain, dtype=float)
    noise_var = plan.family.variance_factor * (gain * plan.noise_scales)**2
    coefficients = plan.noise_coefficients(rng, n_draws) * gain
    cov = np.diag(noise_var)
    if sampling_cov is not None:
        coefficients = coefficients + rng.standard_normal((n_draws, noise_var.size)) @ psd_root(sampling_cov).T
        cov = cov + sampling_cov
    sd = np.sqrt(np.clip(np.einsum("ik,kl,il->i", synthesis, cov, synthesis), 0.0, None))
    q = sup_quantile(coefficients @ synthesis.T, sd, level)
    return Band(values - q * sd, values + q * sd, q, sd)


def privacy_band(plan: MeanRelease, values: np.ndarray, level: float, **kwargs) -> Band:
    """Where the noise may have put the curve: the band of Z alone (public, data-free)."""
    return simultaneous_band(plan, values, None, level, **kwargs)


# --------------------------------------------------------------------------- the release's smoother S

def smoother(plan: MeanRelease, eigenfunctions: np.ndarray, eigenvalues: np.ndarray) -> np.ndarray:
    """T (release coefficients x L): the release's estimate coefficients of a centred curve sum_j x_j phi_j(t)
    are T x. Kernel mechanisms: s_l times the projection on the release's eigenfunctions; Bernstein: the
    lattice values of phi_j (linear interpolation at v / K)."""
    mechanism = mean_mechanism(plan.settings.mechanism)
    if not mechanism.basis.kernel:  # Bernstein's lattice
        P = lattice_interpolation_matrix(unit_interval(plan.grid_points), int(plan.settings.K))
        return P.T @ eigenfunctions
    s = mechanism.band_shrinkage(plan.settings, eigenvalues, plan.noise_scales)[: plan.noise_scales.size]
    return s[:, None] * (plan.synthesis.T @ (plan.weights[:, None] * eigenfunctions))


def smoothing_bias_bound(plan: MeanRelease, eigenfunctions: np.ndarray, eigenvalues: np.ndarray,
                         B: float) -> tuple[np.ndarray, float] | None:
    """Pointwise and L2 bounds on the smoothing bias (I - S) E[Y - c] when ||E[Y - c]||_{H(C^eta)} <= B.

    Coefficient l of the bias is (1 - s_l) mu_l; with mu_l = sqrt(x_l) a_l, x_l = lambda_l^eta, sum a_l^2 <= B^2,
    Cauchy-Schwarz gives |bias(t)| <= B sqrt(sum_l x_l (1 - s_l)^2 phi_l(t)^2) and
    ||bias||_L2 <= B sqrt(max_l x_l (1 - s_l)^2) (<= B sqrt(phi) / 2 for the quadratic penalties).
    None when S is not linear (ICLP-AR) or not diagonal in the eigenbasis (Bernstein).
    """
    mechanism = mean_mechanism(plan.settings.mechanism)
    if not mechanism.basis.kernel or not mechanism.band_linear:
        return None
    s = mechanism.band_shrinkage(plan.settings, eigenvalues, plan.noise_scales)
    r = eigenvalues ** float(plan.settings.eta) * (1.0 - s) ** 2
    return B * np.sqrt(eigenfunctions**2 @ r), float(B * np.sqrt(np.max(r)))


# --------------------------------------------------------------------------- the band for E[Y] itself (METHODS 25)

def undersmoothing_candidates(plan: MeanRelease, eigenvalues: np.ndarray) -> list[tuple[float | None, np.ndarray,
                                                                                           np.ndarray]]:
    """(penalty phi_b, effective shrinkage on every eigenfunction, gain on the release's coefficients) per candidate.

    Released coefficient l is s_l Ybar_l + Z_l; multiplying it by g_l = s_b,l / s_l (post-processing) gives
    s_b,l Ybar_l + g_l Z_l: the smoother of the smaller penalty phi_b, its bias (1 - s_b,l) mu_l smaller, its noise
    g_l Z_l larger (g_l <= phi / phi_b). Mechanisms without a penalty (truncations) keep their own smoother."""
    mechanism = mean_mechanism(plan.settings.mechanism)
    kept = plan.noise_scales.size
    s = mechanism.band_shrinkage(plan.settings, eigenvalues, plan.noise_scales)
    if mechanism.penalty is None:
        return [(None, s, np.ones(kept))]
    own = float(getattr(plan.settings, mechanism.penalty))
    out = []
    for fraction in UNDERSMOOTHING:
        smaller = replace(plan.settings, **{mechanism.penalty: own * fraction})
        s_b = mechanism.band_shrinkage(smaller, eigenvalues, plan.noise_scales)
        gain = np.divide(s_b[:kept], s[:kept], out=np.zeros(kept), where=s[:kept] > 0)
        effective = np.zeros(eigenvalues.size)
        effective[:kept] = gain * s[:kept]
        out.append((own * fraction, effective, gain))
    return out


@dataclass(frozen=True)
class MeanBand:
    """The band for E[Y] under ||E[Y - c]||_{H(C^eta)} <= B: centre +- (q w(t) + bias(t))."""

    band: Band  # quantile and sd: the sampling-and-noise part around the centre
    centre: np.ndarray  # the released mean re-weighted to the band's smoother (post-processing)
    family: str  # "penalty" (the smaller penalty phi_b) or "filter" (the per-coefficient filter of filter_candidates)
    parameter: float | None  # phi_b, or kappa for a filter (None: the mechanism's own truncation)
    bias_pointwise: np.ndarray  # B sqrt(sum_l x_l (1 - s_b,l)^2 phi_l(t)^2)
    bias_l2: float
    candidates: int  # how many penalties were compared


def filter_candidates(plan: MeanRelease, eigenvalues: np.ndarray, variances: np.ndarray,
                      B: float) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """(kappa, effective shrinkage, gain) of the filters e_l = B^2 x_l / (B^2 x_l + kappa v_l / s_l^2), kappa in
    FILTER_KAPPAS.

    Per coefficient, e minimises kappa (v_l / s_l^2) e^2 + B^2 x_l (1 - e)^2: the variance of the re-weighted
    coefficient (v_l its variance at the release's s_l: noise plus sampling) against its share of the squared
    bias bound. Only released quantities enter (the noise law, Sigma~): post-processing."""
    mechanism = mean_mechanism(plan.settings.mechanism)
    kept = plan.noise_scales.size
    s = mechanism.band_shrinkage(plan.settings, eigenvalues, plan.noise_scales)[:kept]
    signal = B * B * eigenvalues[:kept] ** float(plan.settings.eta)
    out = []
    for kappa in FILTER_KAPPAS:
        noise = np.divide(kappa * variances, s**2, out=np.full(kept, np.inf), where=s > 0)
        effective = np.zeros(eigenvalues.size)
        effective[:kept] = np.where(np.isfinite(noise), signal / (signal + noise), 0.0)
        out.append((kappa, effective, np.divide(effective[:kept], s, out=np.zeros(kept), where=s > 0)))
    return out


def mean_band(plan: MeanRelease, eigenfunctions: np.ndarray, eigenvalues: np.ndarray, sigma: np.ndarray,
              values: np.ndarray, level: float, B: float, *, n_draws: int = N_DRAWS,
              seed: int = SIMULATION_SEED) -> MeanBand | None:
    """The narrowest (mean half-width over the grid) of the candidates' bands for E[Y].

    For each candidate smoother S_b (coefficient l: e_l = g_l s_l): |centre_b - E Y| <= |S_b (Ybar - E Y) + g Z| +
    |(I - S_b) E[Y - c]|, the first at most q_b w_b(t) with the level's probability (the simultaneous band of
    g (G + Z), G ~ N(0, T Sigma~ T^T / n): simultaneous_band's construction, its draws shared by the candidates),
    the second at most B sqrt(sum_l x_l (1 - e_l)^2 phi_l(t)^2) (Cauchy-Schwarz, as smoothing_bias_bound). The
    choice reads only the releases and public inputs (post-processing). None when S is not linear and diagonal
    in the eigenbasis (ICLP-AR, Bernstein)."""
    mechanism = mean_mechanism(plan.settings.mechanism)
    if not mechanism.basis.kernel or not mechanism.band_linear:
        return None
    T = smoother(plan, eigenfunctions, eigenvalues)
    sampling = T @ sigma @ T.T / plan.n
    cov = np.diag(plan.family.variance_factor * plan.noise_scales**2) + sampling
    rng = np.random.default_rng(seed)
    draws = plan.noise_coefficients(rng, n_draws) + rng.standard_normal((n_draws, cov.shape[0])) @ psd_root(sampling).T
    coefficients = np.linalg.lstsq(plan.synthesis, values - plan.offset, rcond=None)[0]
    x = eigenvalues ** float(plan.settings.eta)
    candidates = ([("penalty", *c) for c in undersmoothing_candidates(plan, eigenvalues)]
                  + [("filter", *c) for c in filter_candidates(plan, eigenvalues, np.diag(cov), B)])
    best, best_width = None, np.inf
    for family, parameter, effective, gain in candidates:
        r = x * (1.0 - effective) ** 2
        bias = B * np.sqrt(eigenfunctions**2 @ r)
        weighted = plan.synthesis * gain  # the grid values of g-weighted coefficients
        sd = np.sqrt(np.clip(np.einsum("ik,kl,il->i", weighted, cov, weighted), 0.0, None))
        q = sup_quantile((draws * gain) @ plan.synthesis.T, sd, level)
        half = q * sd
        width = float(np.mean(half + bias))
        if width < best_width:
            centre = plan.offset + weighted @ coefficients
            band = Band(centre - half - bias, centre + half + bias, q, sd)
            best, best_width = MeanBand(band, centre, family, parameter, bias, float(B * np.sqrt(np.max(r))),
                                        len(candidates)), width
    return best


def bound_from_amplitude(eigenfunctions: np.ndarray, eigenvalues: np.ndarray, eta: float, amplitude: float) -> float:
    """B for "the mean strays from the public centre by a smooth deviation at most ``amplitude`` high" (app words).

    Every f with ||f||_{H(C^eta)} <= B has |f(t)| <= B sqrt(k(t, t)), k(t, t) = sum_l lambda_l^eta phi_l(t)^2
    (Cauchy-Schwarz), with equality for f a multiple of the kernel's own bump k(., t). So B = amplitude /
    sqrt(max_t k(t, t)) is the ball of deviations shaped like the kernel's bumps and at most ``amplitude`` high;
    rougher or several separate deviations of that height have a larger norm (a larger B is then needed).
    Public: the kernel and the grid only, never the data."""
    check_positive("amplitude", amplitude)
    diagonal = eigenfunctions**2 @ (eigenvalues ** float(eta))
    return float(amplitude / np.sqrt(np.max(diagonal)))


# --------------------------------------------------------------------------- the two releases

def mean_part(settings: MeanSettings) -> MeanSettings:
    """The mean's settings at its share (1 - band_share) of epsilon and delta (the whole budget without a band)."""
    if settings.confidence_band is None:
        return settings
    keep = 1.0 - float(settings.band_share)
    return replace(settings, epsilon=settings.epsilon * keep, delta=settings.delta * keep)


def second_moment_settings(settings: MeanSettings, plan: MeanRelease) -> CovarianceSettings:
    """The second moment's public settings, mirroring the mean's: same kernel, unit of privacy, range (or centre
    0) and tau, the covariance mechanism of the same noise family, at band_share of epsilon (and delta)."""
    if settings.reference is not None:
        raise ParameterError("--confidence-band does not support a reference curve yet: centre at the value range's "
                             "midpoint (drop --reference)")
    mechanism = next(name for name, m in COVARIANCE_REGISTRY.items() if m.noise == plan.noise)
    share = float(settings.band_share)
    value_range = settings.value_range
    if not mean_mechanism(settings.mechanism).basis.kernel:  # Bernstein: its own [lo, hi]
        value_range = settings.bernstein_range
    common = dict(mechanism=mechanism, kernel=settings.kernel, rho=settings.rho, nu=settings.nu, eta=settings.eta,
                  phi=BAND_SECOND_MOMENT_PHI, epsilon=settings.epsilon * share, delta=settings.delta * share,
                  person_column=settings.person_column, n_public=settings.n_public, centring="public")
    if value_range is not None:
        return CovarianceSettings(lo=float(value_range[0]), hi=float(value_range[1]), tau=plan.tau, **common)
    return CovarianceSettings(centre=0.0, tau=plan.tau, **common)


@dataclass(frozen=True)
class BandPlan:
    """The two planned releases behind a confidence band (nothing drawn).

    Built by :func:`plan_band_release`: the mean at (1 - band_share) of the budget and the second
    moment at band_share, both planned, nothing drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((200, 1)) * np.sin(np.pi * t)
    >>> band = plan_band_release(from_arrays(t, X), MeanSettings(value_range=(0, 1), confidence_band=0.95))
    >>> round(band.mean.settings.epsilon, 3), round(band.second_moment.settings.epsilon, 3)
    (0.8, 0.2)
    """

    settings: MeanSettings  # as the user gave them (whole budget)
    mean: MeanRelease  # at (1 - band_share) of the budget
    second_moment: CovarianceRelease  # at band_share of the budget, public centring


def plan_band_release(fd: FunctionalData, settings: MeanSettings) -> BandPlan:
    """The two releases behind a confidence band (METHODS.md 18), planned, nothing drawn.

    Parameters
    ----------
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : MeanSettings
        With ``confidence_band`` (the level) and ``band_share`` (the second moment's share of epsilon and delta).

    Returns
    -------
    BandPlan

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((200, 1)) * np.sin(np.pi * t)
    >>> plan_band_release(from_arrays(t, X), MeanSettings(value_range=(0, 1), confidence_band=0.95)).mean.n
    200
    """
    settings = settings.validated()
    if settings.confidence_band is None:
        raise ParameterError("a confidence band needs its level (confidence_band, e.g. 0.95)")
    mean = plan_mean_release(fd, mean_part(settings))
    return BandPlan(settings, mean, plan_covariance_release(fd, second_moment_settings(settings, mean)))


def released_covariance(plan: BandPlan, values: np.ndarray, second_moment: np.ndarray) -> np.ndarray:
    """Sigma~ = PSD part of (S2~ - m m^T) in the eigenbasis, m the released mean's centred coefficients."""
    cov = plan.second_moment
    centred = values - cov.settings.centre_value
    m = cov.eigenfunctions.T @ (cov.weights * centred)
    mechanism = mean_mechanism(plan.settings.mechanism)
    if mechanism.basis.kernel and mechanism.band_linear:
        # The released mean is S-shrunk: subtracting (s m)(s m)^T would leave (1 - s_l^2) m_l^2 of the mean's
        # own square in Sigma~ (a bias of order 1, not 1/n). Undo the shrinkage where s_l >= 1/2, so the noise
        # it amplifies stays within 4 times the mean's noise variance.
        s = mechanism.band_shrinkage(plan.mean.settings, cov.eigenvalues, plan.mean.noise_scales)
        m = np.where(s >= DESHRINK_FROM, m / np.maximum(s, DESHRINK_FROM), m)
    return psd_part(symmetrise(second_moment) - np.outer(m, m))


@dataclass(frozen=True)
class ConfidenceBand:
    band: Band  # covers m_S
    privacy: Band
    bias_pointwise: np.ndarray | None  # bound on |(I - S) E[Y - c]|(t) for the release's own S, with a smoothness bound
    bias_l2: float | None
    sampling_cov: np.ndarray  # S Sigma~ S^T / n in the release's coefficients (post-processing)
    mean: MeanBand | None = None  # the band for E[Y] itself, with a smoothness bound (METHODS 25)

    @property
    def widened(self) -> Band | None:
        """The band that covers E[Y] itself (under the smoothness bound): the mean band's."""
        return None if self.mean is None else self.mean.band


def confidence_band(plan: BandPlan, values: np.ndarray, second_moment: np.ndarray, **kwargs) -> ConfidenceBand:
    """The bands from the released mean ``values`` (grid) and the released second moment (L x L coefficients).

    Parameters
    ----------
    plan : BandPlan
    values : array (m,)
        The released mean on the grid.
    second_moment : array (L, L)
        The released second moment's coefficients.
    **kwargs
        Options of the band (its Monte Carlo draws).

    Returns
    -------
    ConfidenceBand
        The privacy band and the confidence band (lower and upper curves on the grid).

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((300, 1)) * np.sin(np.pi * t)
    >>> plan = plan_band_release(from_arrays(t, X), MeanSettings(value_range=(0, 1), confidence_band=0.95, epsilon=4.0))
    >>> rng = np.random.default_rng(1)
    >>> band = confidence_band(plan, plan.mean.sample(rng, 1)[0], plan.second_moment.sample(rng)["second_moment"][0])
    >>> bool(np.all(band.band.lower <= band.band.upper))
    True
    """
    s = plan.settings
    level = float(s.confidence_band)
    cov = plan.second_moment
    T = smoother(plan.mean, cov.eigenfunctions, cov.eigenvalues)
    sigma = released_covariance(plan, values, second_moment)
    sampling = T @ sigma @ T.T / plan.mean.n
    bias = population = None
    if s.smoothness_bound is not None:
        B = float(s.smoothness_bound)
        bias = smoothing_bias_bound(plan.mean, cov.eigenfunctions, cov.eigenvalues, B)
        population = mean_band(plan.mean, cov.eigenfunctions, cov.eigenvalues, sigma, values, level, B, **kwargs)
    return ConfidenceBand(simultaneous_band(plan.mean, values, sampling, level, **kwargs),
                          privacy_band(plan.mean, values, level, **kwargs),
                          None if bias is None else bias[0], None if bias is None else bias[1], sampling, population)


def band_table(grid: np.ndarray, values: np.ndarray, bands: ConfidenceBand) -> dict:
    """release.csv's columns: t, value first, then the bands (and the mean band with a smoothness bound)."""
    table = {"t": grid, "value": values, "privacy_lower": bands.privacy.lower, "privacy_upper": bands.privacy.upper,
             "ci_lower": bands.band.lower, "ci_upper": bands.band.upper}
    if bands.mean is not None:
        table.update(mean_lower=bands.mean.band.lower, mean_upper=bands.mean.band.upper, mean_centre=bands.mean.centre)
    return table


def band_composed_total(plan: BandPlan) -> dict:
    """The two parts' total (privacy_events.composed_total), from their public settings only."""
    cov = plan.second_moment
    return composed_total([(float(plan.mean.settings.epsilon), plan.mean.delta, plan.mean.family.uses_delta),
                           (float(cov.settings.epsilon), float(cov.guarantee.delta), cov.family.uses_delta)])


def band_record(plan: BandPlan, bands: ConfidenceBand, second_moment_guarantee: dict) -> dict:
    """release.json's ``band`` object: settings, method and the two quantiles (all public or post-processing)."""
    s = plan.settings
    mechanism = mean_mechanism(s.mechanism)
    cov = plan.second_moment
    return {
        "level": float(s.confidence_band),
        "share": float(s.band_share),
        "method": ("simultaneous band by simulation: q = the level quantile of sup_t |G(t) + Z(t)| / w(t), "
                   "G ~ N(0, S Sigma~ S^T / n), Sigma~ the PSD part of the released second moment minus the released "
                   "mean's outer product, Z the mechanism's own noise law; band = value +- q w(t)"),
        "privacy_band": PRIVACY_BAND_WORDS,
        "confidence_band": CONFIDENCE_BAND_WORDS,
        "privacy_quantile": bands.privacy.quantile,
        "confidence_quantile": bands.band.quantile,
        "n_draws": N_DRAWS,
        "simulation_seed": SIMULATION_SEED,
        "smoother": mechanism.band_note,
        "covers": COVERS,
        "assumptions": CLIPPING_ASSUMPTION,
        "epsilon_total": float(s.epsilon),
        "epsilon_mean": float(plan.mean.settings.epsilon),
        "epsilon_second_moment": float(cov.settings.epsilon),
        "delta_mean": plan.mean.delta,
        "delta_second_moment": float(cov.guarantee.delta),
        "composition": "basic: the mean and the second moment are two releases of the same data; their epsilons "
                       "(and deltas) add up to the total",
        # Public: from the parts' settings alone. Gaussian parts: the exact GDP total, cheaper than the basic sum.
        "composed_total": band_composed_total(plan),
        "second_moment": {"mechanism": cov.settings.mechanism, "phi": cov.settings.phi, "tau": cov.tau,
                          "n_components": cov.n_components, "centre": cov.settings.centre_value,
                          "guarantee": second_moment_guarantee},
        "smoothness_bound": s.smoothness_bound,
        "bias_bound_l2": bands.bias_l2,
        "bias_bound_note": (None if s.smoothness_bound is None else
                            "with ||E[Y - c]||_{H(C^eta)} <= B declared public: the release's own smoothing bias "
                            "||(I - S) E[Y - c]||_L2 <= bias_bound_l2 (<= B sqrt(penalty) / 2); mean_lower / "
                            "mean_upper "
                            "are the mean band (mean_band_method)"
                            if bands.bias_l2 is not None else
                            "no smoothing-bias bound for this mechanism (its smoother is not linear and diagonal)"),
        **mean_band_record(bands.mean),
    }


def mean_band_record(band: MeanBand | None) -> dict:
    """The mean band's keys of release.json's ``band`` object (None without one). Penalty, bias and quantile are
    chosen from the releases (post-processing): they move with the noise."""
    if band is None:
        return {"mean_band": None}
    return {"mean_band": MEAN_BAND_WORDS, "mean_band_covers": MEAN_BAND_COVERS,
            "mean_band_method": ("undersmoothing by post-processing: released coefficient l times g_l = e_l / s_l "
                                 "is the centre mean_centre (e the band's shrinkage); band = mean_centre +- "
                                 "(q_b w_b(t) + B sqrt(sum_l lambda_l^eta (1 - e_l)^2 phi_l(t)^2)), q_b w_b the "
                                 "simultaneous band of the re-weighted sampling and noise; e the narrowest (mean "
                                 "half-width) of the candidates: the shrinkage of the penalty times 10^-k/2 (k = 0.."
                                 f"{len(UNDERSMOOTHING) - 1}) and the filters B^2 x_l / (B^2 x_l + kappa v_l / s_l^2)"),
            "mean_band_family": band.family, "mean_band_parameter": band.parameter, "mean_band_bias_l2": band.bias_l2,
            "mean_band_quantile": band.band.quantile, "mean_band_candidates": band.candidates}


def band_summary(band: dict) -> str:
    """The bands of a release.json ``band`` object in a few words (the CLI's summary line): which columns cover what."""
    words = (f"privacy band (privacy_lower/privacy_upper) and {band['level']:g} confidence band for the smoothed mean "
             "(ci_lower/ci_upper)")
    if band.get("mean_band"):
        words += (f"; band for the population mean E[Y] itself (mean_lower/mean_upper), if ||E[Y] - c||_H <= B = "
                  f"{band['smoothness_bound']:.4g} holds")
    elif band.get("smoothness_bound") is not None:
        words += "; no band for E[Y] itself with this mechanism (its smoother is not linear and diagonal)"
    return words


# --------------------------------------------------------------------------- one preview release (CLI)

def preview_band_release(fd: FunctionalData, settings: MeanSettings, rng: np.random.Generator, *,
                         seed: int | None = None) -> tuple[dict, dict, dict]:
    """Draw the mean and the second moment (numpy previews, like every ``release`` command) and build the bands.

    Returns (release.json record, release.csv columns, analyst view). The record is the mean's, with the
    user's whole budget and settings (so a replay splits it again) and the ``band`` object.
    """
    from dataclasses import asdict

    plan = plan_band_release(fd, settings)
    values = plan.mean.sample(rng, 1)[0]
    second = plan.second_moment.sample(rng, 1)["second_moment"][0]
    bands = confidence_band(plan, values, second)
    record = release_record(plan.mean, values, seed=seed)
    cov = plan.second_moment
    record.update(epsilon=float(settings.epsilon), delta=plan.mean.delta + float(cov.guarantee.delta),
                  settings=asdict(plan.settings),
                  band=band_record(plan, bands, cov.guarantee.record()))
    estimate = plan.mean.estimate
    view = analyst_view(plan.mean)
    view["band"] = {
        "nonprivate_estimate_inside_privacy_band": bool(np.all((estimate >= bands.privacy.lower)
                                                               & (estimate <= bands.privacy.upper))),
        "second_moment_hs_distance_to_nonprivate": float(np.linalg.norm(second - cov.estimate)),
        "n_clipped_second_moment": cov.n_clipped,
    }
    return record, band_table(plan.mean.grid_points, values, bands), view
