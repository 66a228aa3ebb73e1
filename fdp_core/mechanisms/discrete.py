"""Export-grade noise: exact discrete Laplace / Gaussian on a power-of-two grid, via OpenDP.

Why not numpy: naive floating-point Laplace/Gaussian sampling leaks through the pattern
of representable outputs (Mironov 2012), and a numpy Generator is not a source of fresh
entropy. For anything that leaves the app, noise comes from OpenDP 0.16's vetted
measurements ``make_laplace`` / ``make_gaussian`` on float vectors with an explicit
granularity 2^k. OpenDP

* rounds each input to the nearest multiple of 2^k and adds *exact* discrete Laplace /
  discrete Gaussian noise on that grid (Canonne, Kamath & Steinke 2020 samplers), so
  every output is an integer multiple of 2^k;
* draws its random bits from OpenSSL's ``RAND_bytes`` (a CSPRNG seeded from the
  operating system). The installed wheel is built with OpenDP's ``use-openssl`` feature
  (its binary links ``RAND_bytes``); no numpy generator or seed is involved, so there is
  no way to reproduce an export's noise;
* states its guarantee through its own privacy map, ``measurement.map(d_in)``, which
  already includes the rounding: for a vector of n values the sensitivity grows by
  n 2^k (L1, Laplace) or sqrt(n) 2^k (L2, Gaussian). Laplace reports epsilon (pure DP);
  Gaussian reports rho (zero-concentrated DP: OpenDP offers no other output measure for
  it, and its (epsilon, delta) profile is not the continuous Balle-Wang one).

Heterogeneous scales (METHODS.md 9): coefficient l has its own noise scale b_l (ICLP:
b_l proportional to sqrt(lambda_l); GP mean: sigma sqrt(lambda_l)). OpenDP adds iid
noise, so the release is computed as y_l = x_l / b_l, y~ = y + unit-scale noise, and
x~_l = b_l y~_l (multiplying back is post-processing). The *scaled sensitivity* d_in,
the sensitivity of y in the mechanism's norm, is what the caller supplies:

* Laplace calibrated for epsilon (sum_l |h_l| / b_l <= epsilon for neighbouring
  coefficient differences h): d_in = epsilon;
* Gaussian with sigma_l = sigma s_l and ||h / s||_2 <= Delta: d_in = mu = Delta / sigma.

"On its grid" means: ``record.unit_values`` (y~) are exact multiples of 2^k; the returned
x~ = b * y~ are the same numbers rescaled, exact up to one float rounding of the product.

Sensitivity inflation is applied, not just reported: the unit noise scale is raised from 1
to c = (inflated d_in) / d_in (plus a 2^-40 relative margin), so OpenDP's map reports at
most the target (epsilon = d_in; rho = d_in^2 / 2). The inflated d_in is
d_in + float_allowance, then OpenDP adds its rounding term. float_allowance covers
floating-point error in y (the division y = x / b, and the computation of x itself):
inputs are limited to |y| <= 2^(50 + k), so a relative error up to 2^-48 (16 ulps) moves
a coordinate by at most 2^(k + 2), and a neighbouring difference by at most 2^(k + 3)
beyond the exact one; float_allowance = n 2^(k + 3) (L1) or sqrt(n) 2^(k + 3) (L2), a few
millionths of a noise scale for n = 1000 at k = -30. The limit is data-independent (so c
is), and a release whose scaled values exceed it is refused before any noise is drawn.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import ParameterError, missing_extra
from ..params import check_positive

DEFAULT_GRANULARITY_EXP = -30
# IEEE double rounding: |fl(x) - x| <= u |x|. The callers' float-error bounds on y are in units of it.
UNIT_ROUNDOFF = 2.0**-53
_MIN_K, _MAX_K = -60, 0
# Relative margin on the unit noise scale so that OpenDP's outward-rounded privacy map
# lands at or below the target, never a few ulps above it.
_SCALE_MARGIN = 2.0**-40
ENTROPY = "OpenSSL RAND_bytes inside OpenDP (CSPRNG seeded from the operating system); no seed"


def _opendp():
    try:
        import opendp.prelude as dp
    except ModuleNotFoundError as exc:  # the light install: committed releases need the 'commit' extra
        error = missing_extra(exc, "a committed release (exact discrete noise)")
        if error is None:
            raise
        raise error from None

    dp.enable_features("contrib")
    return dp


def opendp_version() -> str:
    from importlib import metadata  # lazy: ~0.02 s of CPU that an uncharged release (no OpenDP) never needs

    return metadata.version("opendp")


@dataclass(frozen=True)
class DiscretePlan:
    """The privacy side of a discrete release, computed before any noise is drawn."""

    sampler: str  # e.g. "opendp.measurements.make_laplace (discrete Laplace on the 2^k grid)"
    opendp_version: str
    entropy: str
    granularity_exp: int  # k: outputs are integer multiples of 2^k (in unit-scale space)
    granularity: float  # 2^k
    n_coefficients: int
    norm: str  # "l1" (Laplace) or "l2" (Gaussian): the norm of the scaled sensitivity
    scaled_sensitivity: float  # d_in of y = x / b as supplied: epsilon (Laplace) or mu (Gaussian)
    float_allowance: float  # n 2^(k+3) (l1) or sqrt(n) 2^(k+3) (l2): floating-point error in x / b
    rounding_inflation: float  # n 2^k (l1) or sqrt(n) 2^k (l2): OpenDP's grid rounding
    inflated_sensitivity: float  # as implied by OpenDP's map at unit scale
    unit_noise_scale: float  # c >= 1: scale of the noise added to y
    privacy_measure: str  # "max_divergence" (epsilon) or "zero_concentrated_divergence" (rho)
    epsilon: float | None  # OpenDP's map(d_in), Laplace
    rho: float | None  # OpenDP's map(d_in), Gaussian

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DiscreteNoiseRecord(DiscretePlan):
    """A plan plus what was drawn: ``unit_values`` (on the 2^k grid) and the ``scales`` b."""

    unit_values: np.ndarray
    scales: np.ndarray

    def to_dict(self) -> dict:
        out = asdict(self)
        out["unit_values"] = self.unit_values.tolist()
        out["scales"] = self.scales.tolist()
        return out


def _check_k(granularity_exp) -> int:
    if isinstance(granularity_exp, bool) or not isinstance(granularity_exp, (int, np.integer)):
        raise ParameterError(f"granularity_exp must be an integer k (grid 2^k), got {granularity_exp!r}")
    k = int(granularity_exp)
    if not _MIN_K <= k <= _MAX_K:
        raise ParameterError(f"granularity_exp must be between {_MIN_K} and {_MAX_K}, got {k}")
    return k


@dataclass(frozen=True)
class _OpenDpFamily:
    """How one family's OpenDP measurement is built and read (the only family-specific facts here)."""

    norm: str  # the vector norm of the sensitivity: "l1" (Laplace) or "l2" (Gaussian)
    measure: str  # OpenDP's output measure
    reports: str  # the DiscretePlan field holding the reported figure: "epsilon" or "rho"

    def make(self, dp, domain, scale: float, k: int):
        if self.norm == "l1":
            return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale, k=k)
        return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale, k=k)

    def norm_factor(self, n: int) -> float:
        """||(1, ..., 1)|| in this norm: how the per-coordinate rounding adds up over n values."""
        return float(n) if self.norm == "l1" else math.sqrt(n)

    def sensitivity_at_unit(self, reported_at_unit: float) -> float:
        """The sensitivity a unit-scale measurement's privacy figure corresponds to.

        OpenDP's map is linear in 1/scale for Laplace (eps = d / c) and quadratic for Gaussian
        (rho = (d / c)^2 / 2)."""
        return float(reported_at_unit) if self.norm == "l1" else math.sqrt(2.0 * float(reported_at_unit))

    def target(self, d_in: float) -> float:
        """The privacy figure a release of scaled sensitivity d_in is calibrated to: epsilon = d_in, rho = d_in^2 / 2."""
        return d_in if self.norm == "l1" else d_in * d_in / 2.0


_FAMILIES = {"laplace": _OpenDpFamily("l1", "max_divergence", "epsilon"),
             "gaussian": _OpenDpFamily("l2", "zero_concentrated_divergence", "rho")}


def _measurement(dp, family: str, n: int, scale: float, k: int):
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n)
    return _FAMILIES[family].make(dp, domain, scale, k)


def _plan(family: str, n_coefficients: int, scaled_sensitivity: float, granularity_exp: int):
    dp = _opendp()
    spec = _FAMILIES[family]
    n = int(n_coefficients)
    if n < 1:
        raise ParameterError(f"need at least one coefficient to release, got {n_coefficients!r}")
    d_in = check_positive("scaled_sensitivity", scaled_sensitivity)
    k = _check_k(granularity_exp)
    norm_factor = spec.norm_factor(n)
    float_allowance = norm_factor * 2.0 ** (k + 3)
    d_in_eff = d_in + float_allowance
    # Read the inflated sensitivity at unit scale, then choose the scale c that meets the target.
    inflated = spec.sensitivity_at_unit(_measurement(dp, family, n, 1.0, k).map(d_in_eff))
    target = spec.target(d_in)
    c = inflated / d_in * (1.0 + _SCALE_MARGIN)
    measurement = _measurement(dp, family, n, c, k)
    reported = float(measurement.map(d_in_eff))
    if reported > target:
        raise RuntimeError(f"OpenDP reports {reported!r} > target {target!r} after inflation: a bug in fdp")
    plan = DiscretePlan(
        sampler=(f"opendp.measurements.make_{family} (exact discrete {family.capitalize()} on the 2^k grid, "
                 f"{spec.norm} vector)"),
        opendp_version=opendp_version(), entropy=ENTROPY, granularity_exp=k, granularity=2.0**k,
        n_coefficients=n, norm=spec.norm, scaled_sensitivity=d_in,
        float_allowance=float_allowance, rounding_inflation=norm_factor * 2.0**k, inflated_sensitivity=inflated,
        unit_noise_scale=c, privacy_measure=spec.measure,
        **{"epsilon": None, "rho": None, spec.reports: reported})
    return plan, measurement


def discrete_laplace_plan(n_coefficients: int, *, scaled_sensitivity: float,
                          granularity_exp: int = DEFAULT_GRANULARITY_EXP) -> DiscretePlan:
    """Privacy of a discrete-Laplace release (epsilon from OpenDP's map), without drawing noise.

    Use it to build the ledger entry and check it against the budget *before* releasing.
    """
    return _plan("laplace", n_coefficients, scaled_sensitivity, granularity_exp)[0]


def discrete_gaussian_plan(n_coefficients: int, *, scaled_sensitivity: float,
                           granularity_exp: int = DEFAULT_GRANULARITY_EXP) -> DiscretePlan:
    """Privacy of a discrete-Gaussian release (rho from OpenDP's map), without drawing noise."""
    return _plan("gaussian", n_coefficients, scaled_sensitivity, granularity_exp)[0]


def _release(family: str, values, scales, scaled_sensitivity: float, granularity_exp: int):
    x = np.asarray(values, dtype=float)
    b = np.asarray(scales, dtype=float)
    if x.ndim != 1 or b.shape != x.shape:
        raise ParameterError(f"values and scales must be 1-d arrays of the same length, got shapes "
                             f"{np.shape(values)} and {np.shape(scales)}")
    if not np.all(np.isfinite(x)):
        raise ParameterError(f"values contain {int(np.sum(~np.isfinite(x)))} non-finite entries")
    if not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ParameterError("every noise scale must be a finite number > 0 (release exact zeros, without noise, "
                             "for coefficients that carry no signal)")
    plan, measurement = _plan(family, x.size, scaled_sensitivity, granularity_exp)
    k = plan.granularity_exp
    y = x / b
    limit = 2.0 ** (50 + k)
    if np.max(np.abs(y)) > limit:
        raise ParameterError(
            f"a coefficient is more than 2^{50 + k} = {limit:.3g} noise scales from zero, beyond the exact range "
            f"of the 2^{k} grid in double precision; use a larger granularity_exp (e.g. {k + 10})")
    unit_values = np.asarray(measurement(y.tolist()), dtype=float)
    grid_units = np.ldexp(unit_values, -k)
    if not np.array_equal(grid_units, np.round(grid_units)):
        raise RuntimeError("OpenDP returned values off the 2^k grid: refusing to export them")
    record = DiscreteNoiseRecord(**plan.to_dict(), unit_values=unit_values, scales=b.copy())
    return unit_values * b, record


def discrete_laplace_release(values, scales, *, scaled_sensitivity: float,
                             granularity_exp: int = DEFAULT_GRANULARITY_EXP):
    """Release ``values`` with independent Laplace noise of scale ``scales`` (exact, on a 2^k grid).

    Parameters
    ----------
    values, scales : (L,) arrays
        Coefficients to release and their Laplace scales b_l (> 0).
    scaled_sensitivity : float
        L1 sensitivity of values / scales; equals epsilon when the scales were calibrated
        for epsilon. The record's ``epsilon`` (OpenDP's map) is what the ledger records.
    granularity_exp : int
        k of the grid 2^k in unit-scale space.

    Returns
    -------
    (noisy_values, record) : ((L,) array, DiscreteNoiseRecord)
        noisy_values = scales * record.unit_values; record.unit_values are on the grid.
    """
    return _release("laplace", values, scales, scaled_sensitivity, granularity_exp)


def discrete_gaussian_release(values, scales, *, scaled_sensitivity: float,
                              granularity_exp: int = DEFAULT_GRANULARITY_EXP):
    """Release ``values`` with independent Gaussian noise of sd ``scales`` (exact discrete Gaussian, 2^k grid).

    ``scaled_sensitivity`` is the L2 sensitivity of values / scales, i.e. mu = Delta / sigma
    for sigma_l = sigma s_l. The record's ``rho`` is OpenDP's map(d_in): the ledger records
    that, not Delta / sigma. Returns (noisy_values, record) as :func:`discrete_laplace_release`.
    """
    return _release("gaussian", values, scales, scaled_sensitivity, granularity_exp)
