"""Black-box audit of a mean released with its confidence band: the mean and the second moment together
(METHODS.md 18), at the claimed total epsilon (and delta), with an under-noised control.

One neighbouring pair feeds both parts: n - 1 curves at the public centre c and one curve that differs,
c + x vs c + y with x, y coefficient vectors in the kernel's eigenbasis (||x||, ||y|| <= tau). The output
is the concatenation of the two parts' noised coefficients with independent noise, so the pair's
log-likelihood ratio is the sum of the parts' (the Neyman-Pearson statistic of both outputs jointly) and
:func:`fdp_core.explore.summary_audit.audit_coefficient_noise` audits it as one release.

Which pair? Only public inputs (settings, grid, n) choose it:

* Gaussian parts: the audit's power grows with the pair's composed mu = ||(c - c') / sigma||_2 over both
  parts, so the pair maximising it is audited (x vs -x along the mean's worst direction unless the
  second moment's share is large).
* Laplace parts (pure epsilon-DP): the privacy loss is the sum of |c_i - c'_i| / b_i, but maximising that
  sum is not maximising power. The loss is only seen on the event that every moved coordinate lands on
  the far side, which has probability about 2^-k for k moved coordinates: a pair that moves the mean on
  one coefficient and the second moment on two entries (x = tau (cos t e_j + sin t e_k),
  y = tau (-cos t e_j + sin t e_k)) is far easier to audit than the loss maximiser, which moves ~70
  coordinates a little. So the candidates (the mean's worst direction, single coefficients, those
  mixed pairs, e_j vs e_k, and the loss maximiser found by local search) are ranked by how visible a
  ``control_factor`` under-noised mechanism would be on them: a Monte Carlo of the pair's likelihood
  ratio under the public noise law, with its own seed (independent of the audit's draws, so the test
  stays valid).

Coordinates the pair does not move add exactly zero to the statistic and are left out (speed only).
The control multiplies every noise scale by ``control_factor`` (0.7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..budget.privacy_events import gdp_epsilon, gdp_mu
from ..data.loading import FunctionalData
from ..errors import ParameterError
from ..registry import mean_mechanism
from ..releases.bands import BandPlan, mean_part, plan_band_release, smoother
from ..releases.covariance import product_shrinkage
from ..releases.mean import MeanSettings
from .audit import AuditResult
from .summary_audit import SummaryAudit, audit_coefficient_noise

# Audit delta for the Gaussian parts: the same 0.05 as the regression audits. A larger delta puts
# the tested epsilon where the Gaussian's likelihood ratio has mass, so 1e5 draws have power;
# the profile of the composed mu is exact, so no delta is too large to be a valid test.
AUDIT_DELTA = 0.05
MIX_ANGLES = np.pi * np.arange(1, 8) / 16  # t in the mixed pairs tau (+/- cos t e_j + sin t e_k)
SELECTION_SEED = 7_777  # the pair's Monte Carlo ranking: never the audit's own seed
N_RANK_DRAWS = 100_000  # likelihood-ratio draws per finalist pair when ranking Laplace pairs
N_FINALISTS = 12

__all__ = ["AUDIT_DELTA", "BandAudit", "audit_band_release", "composed_gdp", "epsilon_lower_bound", "gdp_mu"]


def composed_gdp(settings: MeanSettings, plan: BandPlan) -> tuple[float, float]:
    """(mu, epsilon at AUDIT_DELTA) of the two Gaussian parts together: mu = sqrt(mu1^2 + mu2^2) exactly."""
    cov = plan.second_moment.guarantee
    mu = float(np.hypot(gdp_mu(mean_part(settings).epsilon, plan.mean.delta), gdp_mu(float(cov.epsilon), float(cov.delta))))
    return mu, gdp_epsilon(mu, AUDIT_DELTA)


def epsilon_lower_bound(result: AuditResult) -> float:
    """The epsilon the audited event proves (with probability >= 1 - 2 alpha): log((p_L - delta) / q_U), at the
    audit's delta; 0 when the event proves nothing. Flagged exactly when this exceeds the tested epsilon."""
    if result.p_lower <= result.delta or result.q_upper <= 0:
        return 0.0
    return float(max(0.0, math.log((result.p_lower - result.delta) / result.q_upper)))


@dataclass(frozen=True)
class BandAudit(SummaryAudit):
    """A :class:`SummaryAudit` with the pair's privacy loss and the epsilon each run proves."""

    pair_loss: float = float("nan")  # the pair's loss at the honest scales (epsilon, or GDP mu for Gaussian parts)
    honest_epsilon_lower: float = float("nan")
    control_epsilon_lower: float = float("nan")


# --------------------------------------------------------------------------- the pair, in coefficients

@dataclass(frozen=True)
class _Proxy:
    """The two parts' shifts as functions of the pair (x, y), from the reference plan's public maps:
    mean T (x - y) / n, second moment S * (x x^T - y y^T) / n. Used to rank candidates only: the audited
    centres always come from the real planners."""

    T: np.ndarray
    S: np.ndarray
    scales: np.ndarray  # mean's, then the second moment's L x L, flattened
    n: int
    gaussian: bool

    def shift(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.concatenate([self.T @ (x - y), (self.S * (np.outer(x, x) - np.outer(y, y))).ravel()]) / self.n

    def loss(self, x: np.ndarray, y: np.ndarray) -> float:
        r = np.abs(self.shift(x, y)) / self.scales
        return float(np.sqrt(np.sum(r**2)) if self.gaussian else np.sum(r))


def _loss_maximiser(proxy: _Proxy, tau: float, starts: list[tuple[np.ndarray, np.ndarray]]):
    """Local search (L-BFGS on unnormalised directions) for the pair with the largest joint loss."""
    L = proxy.S.shape[0]

    def unpack(z):
        u, v = z[:L], z[L:]
        return tau * u / max(np.linalg.norm(u), 1e-300), tau * v / max(np.linalg.norm(v), 1e-300)

    best = None
    for x0, y0 in starts:
        res = optimize.minimize(lambda z: -proxy.loss(*unpack(z)), np.concatenate([x0, y0]), method="L-BFGS-B",
                                options={"maxiter": 300})
        x, y = unpack(res.x)
        if best is None or proxy.loss(x, y) > proxy.loss(*best):
            best = (x, y)
    return best


def _candidates(proxy: _Proxy, direction: np.ndarray, tau: float) -> list[tuple[str, np.ndarray, np.ndarray]]:
    L = proxy.S.shape[0]
    eye = np.eye(L)
    x = tau * direction / np.linalg.norm(direction)
    out = [("c + x vs c - x (x: the mean's worst direction)", x, -x), ("c + x vs c", x, np.zeros(L))]
    # The worst direction kept on its k largest coordinates: less loss, but fewer moved coordinates (Laplace).
    order = np.argsort(-np.abs(direction))
    for k in range(1, L):
        kept = np.zeros(L)
        kept[order[:k]] = direction[order[:k]]
        if np.count_nonzero(kept) == k and np.count_nonzero(direction) > k:
            xk = tau * kept / np.linalg.norm(kept)
            out.append((f"c + x_{k} vs c - x_{k} (x_{k}: the worst direction on its {k} largest coefficients)", xk, -xk))
    for j in range(L):
        out += [(f"c + tau phi_{j + 1} vs c - tau phi_{j + 1}", tau * eye[j], -tau * eye[j]),
                (f"c + tau phi_{j + 1} vs c", tau * eye[j], np.zeros(L))]
        for k in range(L):
            if k == j:
                continue
            out.append((f"c + tau phi_{j + 1} vs c + tau phi_{k + 1}", tau * eye[j], tau * eye[k]))
            for t in MIX_ANGLES:
                a, b = tau * math.cos(t) * eye[j], tau * math.sin(t) * eye[k]
                out.append((f"c + tau (cos t phi_{j + 1} + sin t phi_{k + 1}) vs c + tau (-cos t phi_{j + 1} + "
                            f"sin t phi_{k + 1}), t = {t:.4g}", a + b, -a + b))
    rng = np.random.default_rng(SELECTION_SEED)
    starts = [(x + 0.1 * tau * rng.standard_normal(L), -x + 0.1 * tau * rng.standard_normal(L))]
    starts += [tuple(tau * rng.standard_normal((2, L))) for _ in range(3)]
    xm, ym = _loss_maximiser(proxy, tau, starts)
    out.append(("the joint loss maximiser (local search)", xm, ym))
    return out


def _visibility(c: np.ndarray, c_prime: np.ndarray, scales: np.ndarray, family, epsilon: float, delta: float,
                factor: float, rng: np.random.Generator, draws: int) -> float:
    """Monte Carlo of max over threshold events E of P(M(D) in E) - e^eps P(M(D') in E) - delta for the pair's
    likelihood ratio under noise ``factor`` times the calibrated scales (both orders of the pair)."""
    best = -np.inf
    for a, b in ((c, c_prime), (c_prime, c)):
        t_d = family.log_likelihood_ratio(a + factor * scales * family.standard(rng, (draws, scales.size)), a, b, scales)
        t_dp = family.log_likelihood_ratio(b + factor * scales * family.standard(rng, (draws, scales.size)), a, b,
                                           scales)
        thresholds = np.unique(np.round(np.quantile(t_d, np.linspace(0.5, 1.0, 200)), 9))
        sd, sdp = np.sort(t_d), np.sort(t_dp)
        p = 1.0 - np.searchsorted(sd, thresholds - 1e-9, side="left") / draws
        q = 1.0 - np.searchsorted(sdp, thresholds - 1e-9, side="left") / draws
        best = max(best, float(np.max(p - math.exp(epsilon) * q - delta)))
    return best


def _atom_visibility(shift: np.ndarray, scales: np.ndarray, epsilon: float, factor: float) -> float:
    """Laplace: the exact P(D) - e^eps P(D') of the event 'every moved coordinate on the far side'
    (2^-k (1 - e^(eps - loss / factor))): a cheap lower bound on the visibility, to pick the finalists."""
    r = np.abs(shift) / scales
    k = int(np.count_nonzero(r > 1e-12))
    return 0.5**k * (1.0 - math.exp(epsilon - float(np.sum(r)) / factor))


# --------------------------------------------------------------------------- the audit

def _real_pair(s: MeanSettings, grid: np.ndarray, n: int, centre: float, x_curve: np.ndarray, y_curve: np.ndarray):
    """Centres and scales of the combined release on D and D' from the real planners."""
    rest = np.full((n - 1, grid.size), centre)
    plans = [plan_band_release(FunctionalData(grid, np.vstack([rest, centre + curve])), s)
             for curve in (x_curve, y_curve)]
    (c, scales), (c_prime, other) = ((np.concatenate([p.mean.estimate_coefficients, p.second_moment.estimate.ravel()]),
                                      np.concatenate([p.mean.noise_scales, p.second_moment.scales.ravel()]))
                                     for p in plans)
    if not np.allclose(scales, other, rtol=1e-12, atol=0):
        raise RuntimeError("noise scales depend on the data: the audit pair is not comparable")
    return c, c_prime, scales, plans[0]


def audit_band_release(settings: MeanSettings, grid, n: int, *, n_select: int = 200_000, n_test: int = 2_000_000,
                       alpha: float = 1e-6, seed: int = 0, control_factor: float = 0.7) -> BandAudit:
    """Audit the combined release of ``settings`` (a band level, a value range wide enough for the pair, a tau)."""
    s = settings.validated()
    mechanism = mean_mechanism(s.mechanism)
    if s.confidence_band is None or s.value_range is None or s.tau is None or not mechanism.basis.kernel \
            or not mechanism.band_linear:
        raise ParameterError("the band audit needs a confidence band, a value range, a public tau and a kernel "
                             "mechanism with a linear smoother")
    grid = np.asarray(grid, dtype=float)
    n = int(n)
    lo, hi = (float(v) for v in s.value_range)
    centre, tau = (lo + hi) / 2.0, float(s.tau) * (1 - 1e-6)  # inside the ball: the L2 clip must not act
    reference = plan_band_release(FunctionalData(grid, np.full((n, grid.size), centre)), s)
    cov = reference.second_moment
    lam, phi = cov.eigenvalues, cov.eigenfunctions
    family = reference.mean.family
    proxy = _Proxy(smoother(reference.mean, phi, lam), product_shrinkage(lam, cov.settings.eta, cov.settings.phi),
                   np.concatenate([reference.mean.noise_scales, cov.scales.ravel()]), reference.mean.n,
                   family.uses_delta)
    active = proxy.scales > 0
    direction = mechanism.worst_case(s, lam, tau, n)[0]
    candidates = [(label, x, y) for label, x, y in _candidates(proxy, direction, tau)
                  if max(np.abs(phi @ x).max(), np.abs(phi @ y).max()) <= (hi - lo) / 2.0]  # the range clip must not act
    if not candidates:
        raise ParameterError("every audit pair leaves the public value range: use a wider range or a smaller tau")

    epsilon, delta = float(s.epsilon), reference.mean.delta + float(cov.guarantee.delta)
    mu = None
    if family.uses_delta:  # Gaussian parts: test the exact composed GDP profile, not the basic sum
        mu, epsilon = composed_gdp(s, reference)
        delta = AUDIT_DELTA
        ranked = sorted(candidates, key=lambda item: -proxy.loss(item[1], item[2]))[:3]
    else:
        shifts = [(proxy.shift(x, y)[active], label, x, y) for label, x, y in candidates]
        loss_of = [float(np.sum(np.abs(shift) / proxy.scales[active])) for shift, *_ in shifts]
        # A pair whose loss stays below control_factor * epsilon cannot show the control's violation at all.
        visible = [item for item, loss in zip(shifts, loss_of) if loss > control_factor * epsilon * (1 + 1e-6)]
        shortlist = sorted(visible, key=lambda item: -_atom_visibility(item[0], proxy.scales[active], epsilon,
                                                                        control_factor))[:N_FINALISTS]
        shortlist.append(shifts[int(np.argmax(loss_of))])
        ranked = [(label, x, y) for _, label, x, y in shortlist]

    rng = np.random.default_rng(SELECTION_SEED)
    best = None
    for label, x, y in ranked:
        c, c_prime, scales, _ = _real_pair(s, grid, n, centre, phi @ x, phi @ y)
        ratio = np.abs(c - c_prime) / np.where(scales > 0, scales, np.inf)
        # Coordinates the pair leaves in place (up to float rounding in the planners: a shift below 1e-12 noise
        # scales changes the statistic by far less than its 1e-9 rounding) add nothing to the statistic.
        moved = ratio > 1e-12
        ratio = ratio[moved]
        loss = float(np.sqrt(np.sum(ratio**2)) if family.uses_delta else np.sum(ratio))
        score = loss if family.uses_delta else _visibility(c[moved], c_prime[moved], scales[moved], family, epsilon,
                                                           delta, control_factor, rng, N_RANK_DRAWS)
        if best is None or score > best[0]:
            best = (score, label, c[moved], c_prime[moved], scales[moved], loss)
    _, label, c, c_prime, scales, loss = best
    if mu is not None:
        label += f"; composed mu {mu:.4g}"
    common = dict(n_select=n_select, n_test=n_test, alpha=alpha, seed=seed)
    run = [audit_coefficient_noise(c, c_prime, scales, family, epsilon, delta, factor=f, **common)
           for f in (1.0, control_factor)]
    return BandAudit("mean with confidence band", s.mechanism, epsilon, delta,
                     f"{label}; {c.size} coordinates moved; pair loss {loss:.4g} "
                     f"({'GDP mu' if family.uses_delta else 'epsilon'})",
                     float("nan"), run[0], run[1], control_factor, loss, epsilon_lower_bound(run[0]),
                     epsilon_lower_bound(run[1]))
