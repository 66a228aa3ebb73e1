"""Trade-off sweeps of the mean releases: error along one parameter, Monte Carlo bands, the
inverse question "which epsilon reaches this accuracy?" and the PCA variance ratio against
epsilon (METHODS.md sections 2, 3, 5, 7).

The error of one plan is in accuracy.py; the sweeps exploit three structural facts instead
of re-planning every point:

* pure epsilon-DP mechanisms (Laplace noise) have every scale proportional to 1/epsilon,
  so E||release - estimate||^2 scales as epsilon^-2 and delta plays no role;
* the Gaussian mechanism has sigma = Delta * c(epsilon, delta) (calibration.py is scale-free
  in Delta), so only sigma changes along an epsilon or delta sweep;
* every sensitivity of METHODS.md 2-3 is proportional to 1/n (replace-one neighbours), so
  the noise variance scales as n^-2 at fixed tau (the "public n" sweep).

Smoothing parameters (phi/psi, eta, rho) change the estimator and the sensitivity, so those
sweeps plan each value (the eigenbasis is cached per rho, so only the first sweep over rho
pays the O(m^3) eigendecompositions); the Gaussian mechanism and ICLP-QR have a vectorised
closed form for phi/psi and eta, checked against a full plan at run time. A mechanism whose
registry entry does not read a parameter gets a flat curve, checked the same way.

Monte Carlo bands use common random numbers: one array of standard noise per mechanism,
rescaled for every swept value, so the bands are smooth in the parameter. They are
exploration aids (numpy generator: idealised real-arithmetic DP), never releases.

Errors against the truth (simulated data with a known mean mu) are
||mu_hat - mu||^2 + E||release - mu_hat||^2 for the data at hand: the noise is independent
of the data, so the cross term has mean zero. These numbers look at the data (the estimate
and the truth): they are an analyst view, not DP. The figures are in tradeoff_figures.py.

>>> with_parameter(MeanSettings(), "phi", 0.5).psi  # one penalty sweep covers phi and psi
0.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .accuracy import (ACCURACY_METRICS, CLOSED_FORM_MECHANISMS, accuracy_metric, has_orthonormal_basis,
                       noise_scale_factor, noise_sq_norms, penalised_noise_scales, sq_l2_distance, standard_noise)
from ..data.loading import DATA_DEPENDENT_TAU, FunctionalData, data_derived_tau
from ..errors import FdpError, ParameterError
from ..releases.estimators import shrinkage
from ..kernels import eigenbasis
from ..limits import MAX_MC_DRAWS, check_at_most
from ..releases.mean import MEAN_MECHANISMS, MeanRelease, MeanSettings, plan_mean_release, resolve_tau
from ..params import check_choice
from ..data.preprocess import prepare_curves
from ..registry import MEAN_REGISTRY, mean_mechanism
from ..threads import small_problem

SWEEP_PARAMS = ("epsilon", "delta", "phi", "rho", "eta", "n")
PARAM_LABELS = {
    "epsilon": "epsilon (privacy loss)",
    "delta": "delta (Gaussian mechanism only)",
    "phi": "phi / psi (penalty)",
    "rho": "rho (kernel range)",
    "eta": "eta (smoothness exponent)",
    "n": "n (number of curves, public)",
}
EPSILON_SEARCH_RANGE = (1e-3, 1e3)

# The settings fields holding a smoothing penalty (phi of the Gaussian mechanism, psi of the
# ICLP means): the "phi" sweep sets them all. The eigenbasis mechanisms with a penalty have
# a smoothing sweep that skips re-planning (checked against a full plan at run time).
PENALTY_FIELDS = tuple(dict.fromkeys(m.penalty for m in MEAN_REGISTRY.values() if m.penalty is not None))
_FAST_SMOOTHING_MECHANISMS = tuple(name for name, m in MEAN_REGISTRY.items() if m.penalty is not None)


# --------------------------------------------------------------------------- settings helpers

def settings_for(settings: MeanSettings, mechanism: str) -> MeanSettings:
    """The same public choices with another mechanism."""
    return replace(settings, mechanism=mechanism)


def with_parameter(settings: MeanSettings, param: str, value: float) -> MeanSettings:
    """Settings with one swept parameter changed.

    "phi" sets every penalty field (phi of the Gaussian mechanism, psi of the ICLP means), so
    one sweep covers every penalised mechanism; the others ignore it.
    """
    check_choice("parameter", param, SWEEP_PARAMS[:-1])
    if param == "phi":
        return replace(settings, **{field: float(value) for field in PENALTY_FIELDS})
    return replace(settings, **{param: float(value)})


def penalty_field(mechanism: str) -> str:
    """The settings field holding a mechanism's penalty: psi for the ICLP means, phi otherwise."""
    return mean_mechanism(mechanism).penalty or "phi"


def ignores(mechanism: str, param: str) -> bool:
    """Whether a mechanism's release does not depend on the smoothing parameter ``param`` by
    construction (read off its registry entry; the sweep checks it against a plan at run time).

    Only a kernel eigenbasis mechanism uses rho (not the lattice one), only a penalised one the
    penalty, and eta only where the entry lists it among the fields it reads.
    """
    entry = mean_mechanism(mechanism)
    if param == "rho":
        return not entry.basis.kernel
    if param == "phi":
        return entry.penalty is None
    return param not in entry.fields


def current_value(settings: MeanSettings, param: str, n: int) -> float:
    """The value of ``param`` that ``settings`` (for its own mechanism) uses now."""
    if param == "n":
        return float(n)
    if param == "phi":
        return float(getattr(settings, penalty_field(settings.mechanism)))
    return float(getattr(settings, param))


def default_values(param: str, n: int, count: int = 40) -> np.ndarray:
    """A sensible sweep grid for each parameter (log-spaced where the parameter acts on a log scale)."""
    check_choice("parameter", param, SWEEP_PARAMS)
    if param == "epsilon":
        return np.logspace(-2, 1, count)
    if param == "delta":
        return np.logspace(-10, -1, count)
    if param == "phi":
        return np.logspace(-8, 2, count)
    if param == "rho":
        return np.logspace(-2.5, 0.3, count)
    if param == "eta":
        return np.linspace(1.0, 4.0, count)
    return np.unique(np.round(np.geomspace(10, max(10 * n, 20), count)).astype(int)).astype(float)


def _check_values(param: str, values) -> np.ndarray:
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0:
        raise ParameterError(f"give at least one value of {param} to sweep")
    if not np.all(np.isfinite(values)):
        raise ParameterError(f"every {param} value must be a finite number")
    if param == "n" and (np.any(values < 1) or np.any(values != np.round(values))):
        raise ParameterError("n values must be whole numbers >= 1")
    return values


# --------------------------------------------------------------------------- trade-off sweeps

@dataclass(frozen=True)
class TradeoffCurve:
    """Error of one mechanism along one parameter sweep (NaN where the setting is invalid)."""

    mechanism: str
    param: str
    values: np.ndarray
    expected_sq_l2_error: np.ndarray  # E||release - estimate||^2, closed form
    quantile_levels: tuple = ()
    mc_quantiles: np.ndarray | None = None  # (len(quantile_levels), len(values)), Monte Carlo
    error_vs_truth: np.ndarray | None = None  # ||mu_hat - mu||^2 + noise variance (analyst view)
    bias_sq: np.ndarray | None = None  # ||mu_hat - mu||^2 (analyst view)
    current: float | None = None  # the parameter's value in the current settings
    current_error: float | None = None
    current_error_vs_truth: float | None = None
    method: str = ""
    notes: tuple = ()  # why some values (or all) are missing
    invalid: str | None = None  # set when no value of the sweep can be planned

    @property
    def ok(self) -> bool:
        return self.invalid is None


def _invalid_curve(mechanism, param, values, message, levels) -> TradeoffCurve:
    nan = np.full(values.size, np.nan)
    return TradeoffCurve(mechanism, param, values, nan, tuple(levels), None, None, None, method="none",
                         notes=(message,), invalid=message)


def _plan_or_error(fd: FunctionalData, settings: MeanSettings):
    try:
        return plan_mean_release(fd, settings), None
    except FdpError as exc:
        return None, str(exc)


def _quantiles(sq: np.ndarray, levels) -> np.ndarray:
    return np.quantile(sq, levels, axis=0) if len(levels) else np.empty((0,) + sq.shape[1:])


def _truth_error(plan: MeanRelease, truth: np.ndarray) -> float:
    return float(sq_l2_distance(plan.estimate, truth, plan.weights))


def _scaled_sweep(fd, settings, mechanism, param, values, *, truth, mc_draws, levels, rng, n_subsamples):
    """epsilon, delta, n: scale one reference plan (see the module docstring)."""
    s = settings_for(settings, mechanism)
    ref, error = _plan_or_error(fd, s)
    if ref is None and param != "n":
        # The current value itself may be invalid (e.g. classical calibration at epsilon > 1):
        # take the first swept value that plans.
        for v in values:
            ref, _ = _plan_or_error(fd, with_parameter(s, param, v))
            if ref is not None:
                break
    if ref is None:
        return _invalid_curve(mechanism, param, values, error, levels)
    factor = np.full(values.size, np.nan)
    notes = []
    for i, v in enumerate(values.tolist()):
        try:
            if param == "epsilon":
                factor[i] = noise_scale_factor(ref, v)
            elif param == "delta":
                factor[i] = noise_scale_factor(ref, ref.settings.epsilon, v)
            else:
                factor[i] = ref.n / v
        except FdpError as exc:
            notes.append(str(exc))
    expected = ref.expected_sq_l2_error * factor**2
    quantiles = None
    if mc_draws:
        sq = noise_sq_norms(ref, standard_noise(ref, rng, mc_draws))
        quantiles = _quantiles(sq, levels)[:, None] * factor[None, :] ** 2
    bias = vs_truth = None
    if truth is not None:
        bias_ref = _truth_error(ref, truth)
        bias = np.full(values.size, bias_ref)
        if param == "n":
            bias = _subsample_bias(fd, ref.settings, values, truth, n_subsamples, rng)
        vs_truth = bias + expected
    if not ref.family.uses_delta and param == "delta":
        notes.append("pure epsilon-DP mechanism: delta does not apply (delta = 0)")
    base_ok = ref.settings == s
    return TradeoffCurve(
        mechanism, param, values, expected, tuple(levels), quantiles, vs_truth, bias,
        current=current_value(s, param, fd.n),
        current_error=ref.expected_sq_l2_error if base_ok else None,
        current_error_vs_truth=(None if truth is None or not base_ok else _truth_error(ref, truth)
                                + ref.expected_sq_l2_error),
        method="scaling of one planned release", notes=tuple(dict.fromkeys(notes)))


def _subsample_bias(fd, settings, values, truth, n_subsamples, rng) -> np.ndarray:
    """||mu_hat - mu||^2 averaged over random subsets of n curves (n <= the data's n; NaN above)."""
    bias = np.full(values.size, np.nan)
    for i, v in enumerate(values):
        n = int(v)
        if n == fd.n:
            plan, _ = _plan_or_error(fd, settings)
            bias[i] = np.nan if plan is None else _truth_error(plan, truth)
        elif 1 <= n < fd.n:
            errs = []
            for _ in range(n_subsamples):
                idx = np.sort(rng.choice(fd.n, n, replace=False))
                plan, _ = _plan_or_error(FunctionalData(fd.grid_points, fd.data_matrix[idx]), settings)
                if plan is not None:
                    errs.append(_truth_error(plan, truth))
            bias[i] = np.mean(errs) if errs else np.nan
    return bias


def _noise_one(s: MeanSettings, basis, xbar: np.ndarray, tau: float, n: int):
    """(estimate coefficients, noise scales) of one eigenbasis mechanism without re-planning:
    the vectorised closed form where there is one, else the entry's own noise plan."""
    lam = basis.eigenvalues
    if s.mechanism in CLOSED_FORM_MECHANISMS:
        penalty = getattr(s, penalty_field(s.mechanism))
        return shrinkage(lam, s.eta, penalty) * xbar, penalised_noise_scales(s, lam, s.eta, penalty, tau, n)[0]
    plan = mean_mechanism(s.mechanism).plan_noise(s, lam, basis.n_components, xbar, tau, n)
    return plan.estimate_coefficients, plan.noise_scales


def _fast_smoothing(fd, s, param, values, want_estimates: bool):
    """phi/psi, eta, rho sweep of an eigenbasis mechanism from its closed form, reusing the
    clipped sample mean and the cached eigenbasis of each rho.

    Returns (expected, scales (V, Lmax) zero-padded, estimates on the grid (V, m) or None,
    valid mask, notes), or None when the mechanism has no fast path or the fast path does not
    reproduce the mechanism's own plan at the first valid value (then the caller re-plans).
    """
    if s.mechanism not in _FAST_SMOOTHING_MECHANISMS:
        return None
    tau, _ = resolve_tau(fd, s)
    grid, weights = fd.unit_grid, fd.weights  # properties: compute once, not per value
    prepared = prepare_curves(fd, s.bounds, tau)  # range clip, centre, L2 clip, person average
    clipped_mean, n_persons = prepared.mean(), prepared.n
    rows, notes = [], []
    for v in values:
        sv = with_parameter(s, param, v)
        try:
            sv.validated()
            basis = eigenbasis(sv.kernel, sv.rho, grid, weights, nu=sv.nu)
            coefs, scales = _noise_one(sv, basis, basis.coefficients(clipped_mean), tau, n_persons)
            rows.append((sv, basis, coefs, scales))
        except FdpError as exc:
            rows.append(None)
            notes.append(str(exc))
    ok = np.array([r is not None for r in rows])
    if not ok.any():
        return None
    first = rows[int(np.flatnonzero(ok)[0])]
    plan, _ = _plan_or_error(fd, first[0])
    if (plan is None or plan.noise_scales.shape != first[3].shape
            or not np.allclose(plan.noise_scales, first[3], rtol=1e-9, atol=0.0)
            or not np.allclose(plan.estimate_coefficients, first[2], rtol=1e-9, atol=1e-15)):
        return None
    width = max(r[3].size for r in rows if r is not None)
    scales = np.zeros((values.size, width))
    for i, r in enumerate(rows):
        if r is not None:
            scales[i, : r[3].size] = r[3]
    expected = np.where(ok, plan.family.variance_factor * np.sum(scales**2, axis=1), np.nan)
    estimates = None
    if want_estimates:
        estimates = np.full((values.size, fd.m), np.nan)
        for i, r in enumerate(rows):
            if r is not None:
                estimates[i] = prepared.centre + r[1].synthesize(r[2])
    return plan, expected, scales, estimates, ok, notes


def _flat_check(fd, s, base, param, values):
    """(valid mask, notes) for a parameter the mechanism ignores, or None when that claim
    fails at run time (the noise changes between the current and the last valid value)."""
    if base is None:
        return None
    ok, notes = np.zeros(values.size, dtype=bool), []
    for i, v in enumerate(values):
        try:
            with_parameter(s, param, v).validated()
            ok[i] = True
        except FdpError as exc:
            notes.append(str(exc))
    if ok.any():
        other, _ = _plan_or_error(fd, with_parameter(s, param, values[np.flatnonzero(ok)[-1]]))
        if (other is None or other.noise_scales.shape != base.noise_scales.shape
                or not np.allclose(other.noise_scales, base.noise_scales, rtol=1e-12)):
            return None
    return ok, notes


def _smoothing_sweep(fd, settings, mechanism, param, values, *, truth, mc_draws, levels, rng):
    """phi/psi, eta, rho: flat when the mechanism ignores the parameter, closed form for the
    eigenbasis mechanisms, else one plan per value."""
    s = settings_for(settings, mechanism)
    base, base_error = _plan_or_error(fd, s)
    quantiles = bias = None
    flat = _flat_check(fd, s, base, param, values) if ignores(mechanism, param) else None
    if flat is not None:
        ok, notes = flat
        expected = np.where(ok, base.expected_sq_l2_error, np.nan)
        if mc_draws:
            sq = noise_sq_norms(base, standard_noise(base, rng, mc_draws))
            quantiles = np.where(ok[None, :], _quantiles(sq, levels)[:, None], np.nan)
        if truth is not None:
            bias = np.where(ok, _truth_error(base, truth), np.nan)
        method = f"{mechanism} does not use {param}"
        notes = [f"{mechanism} does not depend on {param}"] + notes
    elif (fast := _fast_smoothing(fd, s, param, values, truth is not None)) is not None:
        ref, expected, scales, estimates, ok, notes = fast
        method = "closed form per value (cached eigenbasis)"
        if mc_draws:
            z = standard_noise(ref, rng, mc_draws, scales.shape[1])
            quantiles = _quantiles((z**2) @ (scales.T**2), levels)
            quantiles[:, ~ok] = np.nan
        if truth is not None:
            bias = sq_l2_distance(estimates, truth, fd.weights)
    else:
        method, plans, notes = "one plan per value", [], []
        for v in values:
            plan, error = _plan_or_error(fd, with_parameter(s, param, v))
            plans.append(plan)
            if error:
                notes.append(error)
        valid = [p for p in plans if p is not None]
        if not valid:
            return _invalid_curve(mechanism, param, values, notes[0], levels)
        expected = np.array([np.nan if p is None else p.expected_sq_l2_error for p in plans])
        if mc_draws:
            z = standard_noise(valid[0], rng, mc_draws, max(p.noise_scales.size for p in valid))
            orthonormal = has_orthonormal_basis(valid[0])
            quantiles = np.full((len(levels), values.size), np.nan)
            for i, p in enumerate(plans):
                if p is not None:
                    quantiles[:, i] = _quantiles(noise_sq_norms(p, z, orthonormal), levels)
        if truth is not None:
            bias = np.array([np.nan if p is None else _truth_error(p, truth) for p in plans])
    return TradeoffCurve(
        mechanism, param, values, expected, tuple(levels), quantiles,
        None if bias is None else bias + expected, bias,
        current=current_value(s, param, fd.n),
        current_error=None if base is None else base.expected_sq_l2_error,
        current_error_vs_truth=(None if base is None or truth is None
                                else _truth_error(base, truth) + base.expected_sq_l2_error),
        method=method, notes=tuple(dict.fromkeys(notes)))


def tradeoff_curves(fd: FunctionalData, settings: MeanSettings, param: str, values, *,
                    mechanisms=None, truth: np.ndarray | None = None, mc_draws: int = 0,
                    quantile_levels=(0.1, 0.9), seed: int | None = 0, n_subsamples: int = 4) -> list[TradeoffCurve]:
    """Expected squared L2 error of every mechanism's release along a sweep of one parameter.

    Parameters
    ----------
    fd, settings : the data and the current public choices (``settings.mechanism`` is ignored:
        every mechanism in ``mechanisms`` is swept, default all of MEAN_MECHANISMS).
    param : one of SWEEP_PARAMS. "phi" sweeps phi and psi together; "n" is the public-n sweep
        (noise variance scales as (n_data / n)^2; see the module docstring).
    values : the swept values.
    truth : the true mean on ``fd.grid_points`` (simulations): adds ||mu_hat - mu||^2 + noise
        variance. For the n sweep the estimate is averaged over ``n_subsamples`` random subsets
        of n curves (n <= the data's n; NaN above, where no data exist).
    mc_draws : Monte Carlo draws per mechanism for the quantile bands (0: none).

    A mechanism that cannot be planned at any swept value (e.g. Bernstein without lo/hi)
    comes back with ``invalid`` set and NaN errors instead of raising.
    """
    check_choice("parameter", param, SWEEP_PARAMS)
    values = _check_values(param, values)
    mechanisms = MEAN_MECHANISMS if mechanisms is None else tuple(mechanisms)
    for mech in mechanisms:
        check_choice("mechanism", mech, MEAN_MECHANISMS)
    if truth is not None:
        truth = np.asarray(truth, dtype=float)
        if truth.shape != (fd.m,):
            raise ParameterError(f"the true mean must have one value per grid point ({fd.m}), got {truth.shape}")
    check_at_most("mc_draws", mc_draws, MAX_MC_DRAWS, "every draw is a vector per mechanism and sweep point")
    levels = tuple(quantile_levels) if mc_draws else ()
    curves = []
    for k, mech in enumerate(mechanisms):
        rng = np.random.default_rng(None if seed is None else [seed, k])
        kwargs = dict(truth=truth, mc_draws=int(mc_draws), levels=levels, rng=rng)
        if param in ("epsilon", "delta", "n"):
            curves.append(_scaled_sweep(fd, settings, mech, param, values, n_subsamples=n_subsamples, **kwargs))
        else:
            curves.append(_smoothing_sweep(fd, settings, mech, param, values, **kwargs))
    return curves


def curves_table(curves: list[TradeoffCurve], *, include_truth: bool = False):
    """Long table (param, value, mechanism, expected_sq_l2_error, mc_q.., [error_vs_truth], note)."""
    import pandas as pd

    # Columns filled in place, then one DataFrame: a frame per curve and pd.concat cost 4x more
    # (the Trade-offs page rebuilds this table on every rerun). A column some curves lack is NaN
    # in their rows, as pd.concat would leave it.
    rows = sum(c.values.size for c in curves)
    columns: dict[str, np.ndarray] = {}
    start = 0
    for c in curves:
        size = c.values.size
        frame = {"param": c.param, "value": c.values, "mechanism": c.mechanism,
                 "expected_sq_l2_error": c.expected_sq_l2_error}
        for j, q in enumerate(c.quantile_levels):
            frame[f"mc_q{round(100 * q):02d}"] = (c.mc_quantiles[j] if c.mc_quantiles is not None
                                                 else np.full(size, np.nan))
        if include_truth:
            frame["error_vs_truth"] = c.error_vs_truth if c.error_vs_truth is not None else np.nan
        frame["note"] = c.invalid or "; ".join(c.notes)
        for name, values in frame.items():
            if name not in columns:
                columns[name] = np.full(rows, np.nan, dtype=object if isinstance(values, str) else float)
            columns[name][start:start + size] = values
        start += size
    return pd.DataFrame(columns)


# --------------------------------------------------------------------------- accuracy -> epsilon

@dataclass(frozen=True)
class EpsilonForAccuracy:
    """Smallest epsilon at which one mechanism meets an accuracy target (None if none in range)."""

    mechanism: str
    metric: str
    target: float
    epsilon: float | None
    achieved: float | None  # the metric at ``epsilon``
    message: str = ""


def epsilon_for_accuracy(fd: FunctionalData, settings: MeanSettings, metric: str, target: float, *,
                         mechanisms=None, search_range=EPSILON_SEARCH_RANGE) -> list[EpsilonForAccuracy]:
    """Per mechanism, the smallest epsilon in ``search_range`` whose release meets ``target``.

    Every metric of ACCURACY_METRICS is a fixed multiple of the common noise scale factor
    (squared for the expected squared error), which decreases strictly in epsilon, so the
    answer is the root of a monotone function: closed form for Laplace noise
    (factor = epsilon_ref / epsilon), bisection on log epsilon for the Gaussian calibrations.
    The returned epsilon is rounded up (it meets the target; 1% less does not, unless it is
    the lower end of the range). The other settings (delta, smoothing, tau) stay as given.
    """
    check_choice("metric", metric, ACCURACY_METRICS)
    target = float(target)
    if not (target > 0 and math.isfinite(target)):
        raise ParameterError(f"the accuracy target must be a finite number > 0, got {target!r}")
    lo, hi = map(float, search_range)
    mechanisms = MEAN_MECHANISMS if mechanisms is None else tuple(mechanisms)
    power = 2.0 if metric == "expected_sq_l2" else 1.0
    results = []
    for mech in mechanisms:
        s = settings_for(settings, mech)
        ref, error = _plan_or_error(fd, s)
        if ref is None:
            ref, _ = _plan_or_error(fd, replace(s, epsilon=min(lo * 10, 1.0)))
        if ref is None:
            results.append(EpsilonForAccuracy(mech, metric, target, None, None, error))
            continue
        base = accuracy_metric(ref, metric)
        upper = hi
        gaussian_calibration = ref.family.uses_delta  # sigma = Delta c(epsilon, delta): no closed-form inverse
        if gaussian_calibration and ref.settings.calibration == "classical":
            upper = min(hi, 1.0)  # the classical calibration is valid for epsilon <= 1 only

        def value_at(eps: float) -> float:
            return base * noise_scale_factor(ref, eps) ** power

        # Aim a hair below the target so that re-planning at the answer (same formulas, other
        # rounding) also meets it.
        goal = target * (1.0 - 1e-9)

        if value_at(upper) > target:
            results.append(EpsilonForAccuracy(
                mech, metric, target, None, value_at(upper),
                f"not reachable for epsilon <= {upper:g} (error there: {value_at(upper):.4g})"))
            continue
        if value_at(lo) <= target:
            results.append(EpsilonForAccuracy(mech, metric, target, lo, value_at(lo),
                                              f"already met at the smallest epsilon searched ({lo:g})"))
            continue
        if gaussian_calibration:
            a, b = math.log(lo), math.log(upper)
            while b - a > 1e-10:
                mid = 0.5 * (a + b)
                if value_at(math.exp(mid)) > goal:
                    a = mid
                else:
                    b = mid
            eps = math.exp(b)
        else:
            eps = ref.settings.epsilon * (base / goal) ** (1.0 / power)
        while value_at(eps) > goal:  # rounding: step up until the target provably holds
            eps *= 1.0 + 1e-12
        results.append(EpsilonForAccuracy(mech, metric, target, eps, value_at(eps)))
    return results


# --------------------------------------------------------------------------- PCA: variance ratio vs epsilon

PCA_ANALYST_NOTE = ("the variance ratio compares the private components with the non-private FPCA of the raw "
                    "data: analyst view, not differentially private")


@dataclass(frozen=True)
class VarianceRatioCurve:
    """Monte Carlo law of the PCA variance ratio tr(V~' X'X V~) / tr(V^' X'X V^) along epsilon."""

    k: int
    epsilons: np.ndarray
    mean: np.ndarray
    quantile_levels: tuple
    quantiles: np.ndarray  # (len(quantile_levels), len(epsilons))
    draws: int
    sampler: str
    p: int | None = None
    flags: tuple = ()
    invalid: str | None = None

    @property
    def ok(self) -> bool:
        return self.invalid is None


def pca_variance_ratio_curves(fd: FunctionalData, settings, epsilons, *, ks=(1, 2, 3), draws: int = 100,
                              quantile_levels=(0.1, 0.9), seed: int | None = 0) -> list[VarianceRatioCurve]:
    """Variance ratio of private PCA (METHODS.md 5) against epsilon, by Monte Carlo over the exact samplers.

    ``settings`` is a :class:`fdp_core.releases.pca.PcaSettings` (basis, kernel, rho, gamma, tau; no
    centring); for each k the pipeline of :func:`fdp_core.releases.pca.private_pca` is built once (basis,
    clipped coefficient matrix X, the non-private optimum tr of the top-k eigenvalues of X'X)
    and ``draws`` releases are drawn at every epsilon with the exact sampler: the vector Bingham
    for k = 1, sequential deflation with the equal split eps/k for k > 1 (the defaults of
    private_pca; the approximate Gibbs sampler is not used). A k that cannot run comes back
    with ``invalid`` set. The ratio uses the raw data: see PCA_ANALYST_NOTE.
    """
    from ..releases import pca  # lazy: scipy.linalg (PCA sampler), only for the PCA sweep
    from ..mechanisms.bingham import sample_bingham_deflation, sample_vector_bingham  # lazy: as above

    epsilons = np.asarray(epsilons, dtype=float).ravel()
    if epsilons.size == 0 or not np.all(np.isfinite(epsilons)) or np.any(epsilons <= 0):
        raise ParameterError("every epsilon of the PCA curve must be a finite number > 0")
    if int(draws) < 2:
        raise ParameterError(f"draws must be >= 2, got {draws!r}")
    if settings.centring != "none":
        raise ParameterError("the variance-ratio curves are computed without centring (centring 'none')")
    levels = tuple(quantile_levels)
    rng = np.random.default_rng(seed)
    curves = []
    for k in ks:
        s = replace(settings, k=int(k), sampler=None, epsilon_split=None)
        nan = np.full(epsilons.size, np.nan)
        try:
            s.validated()
            if fd.n < k:
                raise ParameterError(f"k = {k} components need at least {k} curves")
            tau = data_derived_tau(fd) if s.tau_from_data else float(s.tau)
            basis = pca.pca_basis(s, fd.unit_grid, fd.weights)
            if k >= basis.p:
                raise ParameterError(f"k = {k} components need a basis dimension p > k, got p = {basis.p}")
        except FdpError as exc:
            curves.append(VarianceRatioCurve(int(k), epsilons, nan, levels, np.full((len(levels), epsilons.size),
                                                                                   np.nan), int(draws),
                                             s.sampler_name, invalid=str(exc)))
            continue
        X, _ = pca.coefficient_matrix(fd.data_matrix, basis.functions, fd.weights, tau)
        gram = X.T @ X
        with small_problem(gram.shape[0]):
            best = float(np.sum(np.linalg.eigvalsh(gram)[::-1][:k]))
        ratios = np.empty((int(draws), epsilons.size))
        for e, eps in enumerate(epsilons.tolist()):
            se = replace(s, epsilon=eps)
            mats = [pca.exponential_mechanism_matrix(X, ej, s.gamma, basis.prior_variances)
                    for ej in se.component_epsilons()]
            if k == 1:
                V = sample_vector_bingham(mats[0], int(draws), rng).samples[:, :, None]
            else:
                V = sample_bingham_deflation(mats, rng, int(draws)).samples
            ratios[:, e] = np.einsum("dil,ij,djl->d", V, gram, V) / best if best > 0 else np.nan
        flags = (DATA_DEPENDENT_TAU,) if s.tau_from_data else ()
        curves.append(VarianceRatioCurve(int(k), epsilons, ratios.mean(axis=0), levels,
                                         np.quantile(ratios, levels, axis=0), int(draws), s.sampler_name,
                                         basis.p, flags))
    return curves
