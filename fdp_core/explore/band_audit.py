"""Black-box audit of a mean released with its confidence band: the mean and the second moment together
(METHODS.md 18), at the claimed total epsilon (and delta), with an under-noised control.

One neighbouring pair feeds both parts: n - 1 curves at the public centre c and one curve that
differs. Candidates: c + x vs c - x (x = tau times the mean mechanism's worst direction, as in
fdp_core/explore/audit.py: the mean's loss is maximal, the second moment does not move), c + x vs c
(both move) and c + tau phi_1 vs c + tau phi_2 (the second moment's P - N shape). Each candidate
is planned with the real planners (:func:`fdp_core.releases.bands.plan_band_release`) and the one whose
privacy loss is largest is audited (Laplace noise: sum |c_i - c'_i| / b_i; Gaussian: the norm of
(c - c') / sigma). The output is the concatenation of the two parts' noised coefficients, with
independent noise, so the pair's log-likelihood ratio is the sum of the parts' and
:func:`fdp_core.explore.summary_audit.audit_coefficient_noise` audits it as one release. The control
multiplies every noise scale by ``control_factor`` (0.7).
"""

from __future__ import annotations

import numpy as np

from ..releases.bands import mean_part, plan_band_release
from ..data.loading import FunctionalData, unit_interval
from ..errors import ParameterError
from ..kernels import eigenbasis
from ..releases.mean import MeanSettings
from ..registry import mean_mechanism
from ..budget.privacy_events import gdp_delta, gdp_epsilon
from .summary_audit import SummaryAudit, audit_coefficient_noise

# Audit delta for the Gaussian parts: the same 0.05 as the regression audits. A larger delta puts
# the tested epsilon where the Gaussian's likelihood ratio has mass, so 1e5 draws have power;
# the profile of the composed mu is exact, so no delta is too large to be a valid test.
AUDIT_DELTA = 0.05


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu with gdp_delta(mu, epsilon) <= delta: the mu-GDP of a Gaussian mechanism tightly
    calibrated to (epsilon, delta) (a Gaussian mechanism is exactly mu-GDP, mu = Delta / sigma, and its
    (epsilon, delta) guarantee holds only if its profile gdp_delta(mu, .) is below delta at epsilon)."""
    if epsilon <= 0 or delta <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * hi:  # gdp_delta increases with mu: bisect, keep the upper (safe) end
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gdp_delta(mid, epsilon) <= delta else (lo, mid)
    return hi


def composed_gdp(settings: MeanSettings, plan) -> tuple[float, float]:
    """(mu, epsilon at AUDIT_DELTA) of the two Gaussian parts together: mu = sqrt(mu1^2 + mu2^2) exactly."""
    cov = plan.second_moment.guarantee
    mu = float(np.hypot(gdp_mu(mean_part(settings).epsilon, plan.mean.delta), gdp_mu(float(cov.epsilon), float(cov.delta))))
    return mu, gdp_epsilon(mu, AUDIT_DELTA)


def _centres_and_scales(plan) -> tuple[np.ndarray, np.ndarray]:
    return (np.concatenate([plan.mean.estimate_coefficients, plan.second_moment.estimate.ravel()]),
            np.concatenate([plan.mean.noise_scales, plan.second_moment.scales.ravel()]))


def audit_band_release(settings: MeanSettings, grid, n: int, *, n_select: int = 50_000, n_test: int = 200_000,
                       alpha: float = 1e-6, seed: int = 0, control_factor: float = 0.7) -> SummaryAudit:
    """Audit the combined release of ``settings`` (a band level, a value range wide enough for the pair, a tau)."""
    s = settings.validated()
    mechanism = mean_mechanism(s.mechanism)
    if s.confidence_band is None or s.value_range is None or s.tau is None or not mechanism.basis.kernel \
            or not mechanism.band_linear:
        raise ParameterError("the band audit needs a confidence band, a value range, a public tau and a kernel "
                             "mechanism with a linear smoother")
    grid = np.asarray(grid, dtype=float)
    weights = FunctionalData(grid, np.zeros((1, grid.size))).weights
    basis = eigenbasis(s.kernel, s.rho, unit_interval(grid), weights, nu=s.nu)
    lam, phi = basis.eigenvalues, basis.eigenfunctions
    lo, hi = (float(v) for v in s.value_range)
    centre, tau = (lo + hi) / 2.0, float(s.tau) * (1 - 1e-6)  # inside the ball: the L2 clip must not act
    direction = mechanism.worst_case(s, lam, tau, int(n))[0]
    x = tau * (phi @ (direction / np.linalg.norm(direction)))
    candidates = {"c + x vs c - x (x: the mean's worst direction)": (x, -x),
                  "c + x vs c": (x, np.zeros_like(x)),
                  "c + tau phi_1 vs c + tau phi_2": (tau * phi[:, 0], tau * phi[:, 1])}
    rest = np.full((int(n) - 1, grid.size), centre)
    best = None
    for label, (a, b) in candidates.items():
        if max(np.abs(a).max(), np.abs(b).max()) > (hi - lo) / 2.0:
            continue  # the range clip would change the pair
        plans = [plan_band_release(FunctionalData(grid, np.vstack([rest, centre + curve])), s) for curve in (a, b)]
        (c, scales), (c_prime, other) = (_centres_and_scales(p) for p in plans)
        if not np.allclose(scales, other, rtol=1e-12, atol=0):
            raise RuntimeError("noise scales depend on the data: the audit pair is not comparable")
        active = scales > 0
        shift = np.abs(c - c_prime)[active] / scales[active]
        loss = float(np.sqrt(np.sum(shift**2)) if plans[0].mean.family.uses_delta else np.sum(shift))
        if best is None or loss > best[0]:
            best = (loss, label, c, c_prime, scales, plans[0])
    if best is None:
        raise ParameterError("every audit pair leaves the public value range: use a wider range or a smaller tau")
    loss, label, c, c_prime, scales, plan = best
    epsilon, delta = float(s.epsilon), plan.mean.delta + float(plan.second_moment.guarantee.delta)
    if plan.mean.family.uses_delta:  # Gaussian parts: test the exact composed GDP profile, not the basic sum
        mu, epsilon = composed_gdp(s, plan)
        delta = AUDIT_DELTA
        label += f"; composed mu {mu:.4g}"
    common = dict(n_select=n_select, n_test=n_test, alpha=alpha, seed=seed)
    run = [audit_coefficient_noise(c, c_prime, scales, plan.mean.family, epsilon, delta, factor=f, **common)
           for f in (1.0, control_factor)]
    return SummaryAudit("mean with confidence band", s.mechanism, epsilon, delta,
                        f"{label}; pair loss {loss:.4g} ({'GDP mu' if plan.mean.family.uses_delta else 'epsilon'})",
                        float("nan"), run[0], run[1], control_factor)
