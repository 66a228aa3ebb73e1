"""Several sites' committed means, one curve (METHODS.md 26): post-processing of published files.

Site k published mu_k = c + S Ybar_k + Z_k with its own (epsilon_k, delta_k), Z_k of known law.
The combination mu = sum_k w_k mu_k (sum w_k = 1) reads nothing but those publications, so it
charges no budget and each person keeps their own site's guarantee. Its error against the
smoothed population mean m_S is E||mu - m_S||^2 = sum_k w_k^2 (v / n_k + E||Z_k||^2), v =
tr(S Sigma S) the sampling term; the weights minimising it are w_k proportional to
1 / (v / n_k + E||Z_k||^2), and the minimum, 1 / sum_k 1 / e_k, is below every site's own e_k.

v comes from the sites' released second moments when every site released one (read off their
bands, :meth:`Site.sampling_variance`), else from a declared public value, else it is 0
(noise-only weights); the record says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm

from ..errors import ParameterError
from ..registry.mean import mean_mechanism
from ..releases.bands import N_DRAWS, SIMULATION_SEED, sup_quantile
from .site_bundle import Site, check_site

SCHEMA = "fdp.combined/1"
LEVEL = 0.95
SOURCES = {"released": "the sites' released second moments (read off their confidence bands; the median of the "
                       "sites' estimates)",
           "declared": "a declared public value (--sampling-variance)",
           "none": "none: noise-only weights (v = 0; the sampling error is not counted)"}


@dataclass(frozen=True)
class Combined:
    """The combined curve, its weights and accuracy; ``bands``: None unless every site has bands."""

    sites: tuple = field(repr=False)
    grid: np.ndarray = field(repr=False)
    values: np.ndarray = field(repr=False)
    weights: np.ndarray
    sampling_variance: float
    source: str
    site_errors: np.ndarray  # e_k = v / n_k + E||Z_k||^2
    expected_sq_l2_error: float
    bands: dict | None = field(default=None, repr=False)


# --------------------------------------------------------------------------- the sites' public settings agree

def _penalty(site: Site) -> float | None:
    entry = mean_mechanism(site.settings.mechanism)
    return None if entry.penalty is None else float(getattr(site.settings, entry.penalty))


def _centre(site: Site):
    r = site.record
    return (r.get("centre"), r.get("centre_value"), r.get("reference_curve"))


# (field named in the refusal, its value for a site); compared in this order.
AGREE = (("kernel", lambda s: (s.settings.kernel, s.settings.nu)), ("rho", lambda s: s.settings.rho),
         ("eta", lambda s: s.settings.eta), ("phi", _penalty), ("grid", lambda s: s.grid),
         ("value range", lambda s: s.settings.value_range and tuple(map(float, s.settings.value_range))),
         ("centre", _centre), ("tau", lambda s: s.plan.tau), ("level of the bands", lambda s: s.record.get(
             "band", {}).get("level")))


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-12)
    return a == b


def check_agreement(sites) -> None:
    """One-line refusal naming the first public setting on which a site differs from the first site."""
    first = sites[0]
    for name, value in AGREE:
        for site in sites[1:]:
            if name == "level of the bands" and not (first.has_bands and site.has_bands):
                continue
            if not _equal(value(first), value(site)):
                raise ParameterError(f"sites {first.label} and {site.label} differ in {name}: combining needs the same "
                                     "public settings (kernel, rho, eta, phi, grid, value range, centre)")
    # Same smoother S (the estimand m_S): the same public probe curve through each site's estimator.
    for site in sites[1:]:
        if not np.allclose(site.smoothed_probe, first.smoothed_probe, rtol=1e-9, atol=1e-12):
            raise ParameterError(f"sites {first.label} and {site.label} differ in smoother: their mechanisms smooth "
                                 "differently (penalty or basis), so they estimate different curves")


# --------------------------------------------------------------------------- weights and the combined curve

def sampling_term(sites, declared: float | None) -> tuple[float, str]:
    """v = tr(S Sigma S) and where it came from (METHODS 26: released, else declared, else 0)."""
    if all(site.has_bands for site in sites):
        # Each site: v_k = n_k * integral of its sampling variance (its band's sd minus its noise's).
        estimates = [site.n * float(site.sampling_variance() @ site.plan.weights) for site in sites]
        return float(np.median(estimates)), "released"
    if declared is not None:
        if not (math.isfinite(declared) and declared >= 0):
            raise ParameterError(f"--sampling-variance must be a finite number >= 0, got {declared!r}")
        return float(declared), "declared"
    return 0.0, "none"


def optimal_weights(n: np.ndarray, noise_errors: np.ndarray, v: float) -> tuple[np.ndarray, np.ndarray, float]:
    """w_k proportional to 1 / e_k, e_k = v / n_k + E||Z_k||^2; returns (w, e, sum_k w_k^2 e_k)."""
    e = v / np.asarray(n, dtype=float) + np.asarray(noise_errors, dtype=float)
    inverse = 1.0 / e
    w = inverse / math.fsum(inverse)
    return w, e, math.fsum(w * w * e)


def combine_sites(sites, *, sampling_variance: float | None = None, level: float = LEVEL) -> Combined:
    """Check each site (data-free) and their agreement, then weigh and combine their published curves."""
    if len(sites) < 2:
        raise ParameterError("combine needs at least two site bundles")
    labels = [site.label for site in sites]
    if len(set(labels)) != len(labels):
        raise ParameterError(f"site labels must differ, got {', '.join(labels)}")
    ids = [site.record.get("id") for site in sites]
    if len(set(ids)) != len(ids):
        raise ParameterError("the same release was given twice: each site contributes once")
    sites = tuple(site if site.plan is not None else check_site(site) for site in sites)
    check_agreement(sites)
    v, source = sampling_term(sites, sampling_variance)
    w, e, error = optimal_weights([s.n for s in sites], [s.noise_sq_l2_error for s in sites], v)
    values = np.einsum("k,km->m", w, np.stack([s.values for s in sites]))
    bands = combined_bands(sites, w, values, level) if all(s.has_bands for s in sites) else None
    return Combined(sites, sites[0].grid, values, w, v, source, e, error, bands)


# --------------------------------------------------------------------------- bands of the combined curve

def combined_bands(sites, w: np.ndarray, values: np.ndarray, level: float, n_draws: int = N_DRAWS) -> dict:
    """Privacy band: the combined noise sum_k w_k Z_k simulated from the sites' laws (sup quantile).
    Confidence band: its sd adds the sites' sampling variances sum_k w_k^2 g_k(t) (read off their
    bands); the sampling part's correlation over t was not published, so the quantile is a union
    bound over the grid (valid whatever that correlation): q with sum_t P(|G(t) + Z(t)| > q w(t)) = alpha,
    each marginal simulated (G(t) normal, Z(t) from the noise law)."""
    rng = np.random.default_rng(SIMULATION_SEED)
    noise = sum(wk * site.noise_draws(rng, n_draws) for wk, site in zip(w, sites))
    noise_var = sum(wk**2 * site.noise_variance() for wk, site in zip(w, sites))
    sampling_var = sum(wk**2 * site.sampling_variance() for wk, site in zip(w, sites))
    sd_z = np.sqrt(noise_var)
    q_z = sup_quantile(noise, sd_z, level)
    sd = np.sqrt(noise_var + sampling_var)
    visible = sd > 0
    total = noise[:, visible] + rng.standard_normal((n_draws, int(visible.sum()))) * np.sqrt(sampling_var[visible])
    ratio = np.sort(np.abs(total) / sd[visible], axis=0)  # per grid point, its marginal's draws in order
    alpha = 1.0 - level
    # Largest exceedance count allowed per point so that the summed tail probabilities stay <= alpha.
    candidates = np.unique(ratio)
    exceed = lambda q: float(np.mean(ratio > q, axis=0).sum())  # noqa: E731
    lo, hi = 0, candidates.size - 1
    while lo < hi:  # smallest candidate q with the union bound <= alpha (exceed is non-increasing in q)
        mid = (lo + hi) // 2
        if exceed(candidates[mid]) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    # Never below the Gaussian union bound: exact when every site is Gaussian (G + Z then is), and the
    # pure sites' heavier tails only raise it; the max also absorbs the simulation's error in that case.
    gaussian_q = float(norm.ppf(1.0 - alpha / (2 * int(visible.sum()))))
    q = max(float(candidates[lo]), gaussian_q)
    return {"privacy_lower": values - q_z * sd_z, "privacy_upper": values + q_z * sd_z,
            "ci_lower": values - q * sd, "ci_upper": values + q * sd, "privacy_quantile": q_z,
            "confidence_quantile": q, "level": level, "n_draws": n_draws, "simulation_seed": SIMULATION_SEED,
            "gaussian_union_bound_quantile": gaussian_q}
