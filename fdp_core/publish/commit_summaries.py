"""Commits of the covariance and regression releases with exact discrete noise (METHODS.md 9, 13, 14).

Both releases add independent Gaussian or Laplace noise to coefficient arrays with known scales,
so they go through the same plan -> price -> check -> draw -> record path as the mean
(:mod:`fdp_core.publish.export`): y = x / b, exact discrete noise on the 2^k grid from OpenDP with the
scaled sensitivity (mu = Delta / sigma for Gaussian noise, epsilon for Laplace noise), x~ = b y~.
A release with two parts (covariance with a released mean; regression's T1 and T2) charges two
ledger entries; both are checked together before any noise is drawn, so a refusal records nothing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..budget.accounting import Ledger, discrete_entry
from ..releases.covariance import NOT_PUBLISHABLE, CovarianceRelease, CovarianceSettings, plan_covariance_release
from ..releases.covariance import release_record as covariance_record
from ..data.loading import FunctionalData
from ..mechanisms.families import GAUSSIAN, NoiseFamily
from .commit import (CONFIG_SCHEMA, CommittedRelease, UNIT_ROUNDOFF, budget_config,
                     common_record, discrete_plan, granularity_for, load_section, looked_at_field)
from .protocol import CommitRequest, PendingCommit, Quote, Steps, quote_of, run_steps
from ..releases.regression import RegressionSettings, plan_regression_release
from ..releases.regression import release_record as regression_record
from ..settings_fields import config_of

COVARIANCE_ACCURACY = ("Expected squared Hilbert-Schmidt distance of the second-moment part to the non-private "
                       "shrunk estimate (closed form, data-free): {error:.4g}.")
REGRESSION_ACCURACY = ("Expected squared Frobenius error of T1~ {t1:.4g} and summed squared L2 error of T2~'s rows "
                       "{t2:.4g} (closed form, data-free); beta~ = T1~^-1 T2~ is post-processing.")


def _pending(kind: str, mechanism: str, family: NoiseFamily, plan, values, scales, d_in: float, bound: float, delta,
             sensitivity: float, norm: str, label: str, granularity_exp: int | None) -> PendingCommit:
    values, scales = np.asarray(values, dtype=float).ravel(), np.asarray(scales, dtype=float).ravel()
    active = scales > 0
    k = granularity_for(bound, granularity_exp)
    noise_plan = discrete_plan(family, int(active.sum()), d_in, k)
    entry = discrete_entry(noise_plan, kind, mechanism, delta=family.delta_or_none(delta),
                                    sensitivity=sensitivity, sensitivity_norm=norm, label=label)
    return PendingCommit(kind, mechanism, family, plan, noise_plan, entry, values[active], scales[active], active,
                         float(d_in), float(bound))


def prepare_covariance_commit(fd: FunctionalData, settings: CovarianceSettings, *, label: str = "",
                              granularity_exp: int | None = None,
                              plan: CovarianceRelease | None = None) -> list[PendingCommit]:
    """The covariance part (and the released mean's part) as pending commits; draws nothing.

    ``plan``: the plan of ``fd`` with ``settings`` when the caller already made it (a band's second moment).
    """
    plan = plan if plan is not None else plan_covariance_release(fd, settings)
    s = plan.settings
    family = plan.family
    # |S_jl| <= tau^2 and a sum over n curves and m grid points errs by (m + n + 20) u tau^2 per entry.
    err = (plan.grid_points.size + plan.n + 20) * UNIT_ROUNDOFF * plan.tau**2
    eps_cov, delta_cov, eps_mean, delta_mean = s.split()
    d_in = family.scaled_sensitivity(plan.sensitivity, plan.sigma, eps_cov)
    out = [_pending("covariance", s.mechanism, family, plan, plan.estimate, plan.scales, d_in,
                    float(np.max(err / plan.scales)), delta_cov, plan.sensitivity,
                    plan.guarantee.sensitivity_norm, label or f"covariance, {s.mechanism}", granularity_exp)]
    if plan.released_mean:
        d_mean = family.scaled_sensitivity(plan.mean_sensitivity, plan.mean_sigma, eps_mean)
        err_mean = (plan.grid_points.size + plan.n + 20) * UNIT_ROUNDOFF * plan.tau
        out.append(_pending("covariance", f"{s.mechanism} (mean part)", family, plan, plan.mean_estimate,
                            plan.mean_scales, d_mean, float(np.max(err_mean / plan.mean_scales)), delta_mean,
                            plan.mean_sensitivity, "mean part of the covariance release",
                            (label or f"covariance, {s.mechanism}") + ": released mean", granularity_exp))
    return out


def _quote_covariance(request: CommitRequest) -> Quote:
    return quote_of(prepare_covariance_commit(request.data, request.settings, label=request.label,
                                              granularity_exp=request.granularity_exp))


def _build_covariance(request: CommitRequest, quote: Quote, draws, ledger: Ledger) -> CommittedRelease:
    """The covariance's publishable record from its drawn parts (post-processing only)."""
    fd, data_label, looked_at, pre_registered = (request.data, request.data_label, request.looked_at,
                                                 request.pre_registered)
    pendings = list(quote.pendings)
    plan: CovarianceRelease = pendings[0].plan
    L = plan.n_components
    raw = draws[0][0].reshape(L, L)
    second = (raw + raw.T) / 2.0
    mean = draws[1][0] if len(draws) > 1 else None
    covariance = second if mean is None else second - np.outer(mean, mean)
    surface = plan.surface(covariance)
    t, ts = plan.grid_points, plan.surface_points  # a long grid's surface on evenly spread points only
    table = pd.DataFrame({"s": np.repeat(ts, ts.size), "t": np.tile(ts, ts.size), "value": surface.ravel()})
    record = covariance_record(plan)
    record.update(common_record(pendings[0], draws[0][1], ledger, label=pendings[0].entry.label,
                                 data_label=data_label))
    c = draws[0][1].unit_noise_scale
    record["expected_sq_hs_error_second_moment"] = plan.expected_sq_hs_error * c * c
    record["noise_sampler"]["post_processing"] = ("symmetrised (S~ + S~^T)/2" + (" minus mu~ mu~^T" if mean is not None
                                                  else "") + "; surface = Phi C~ Phi^T on the data grid" + ("" if ts.size == t.size else
                                                        f" ({ts.size} evenly spread points of it)"))
    if mean is not None:
        record["mean_entry"] = pendings[1].entry.to_dict()
        record["released_mean"] = {"t": t, "value": plan.settings.centre_value + plan.eigenfunctions @ mean}
    record["data"].update(n=plan.n, m=int(t.size))
    j, l = np.divmod(np.arange(L * L), L)
    coef = pd.DataFrame({"part": "second_moment", "j": j + 1, "l": l + 1, "noisy": pendings[0].active,
                         "noise_scale": plan.scales.ravel(), "unit_value": draws[0][1].unit_values,
                         "value": draws[0][0]})
    if mean is not None:
        coef = pd.concat([coef, pd.DataFrame({"part": "mean", "j": np.arange(1, L + 1), "l": 0,
                                              "noisy": pendings[1].active, "noise_scale": plan.mean_scales,
                                              "unit_value": draws[1][1].unit_values, "value": mean})],
                         ignore_index=True)
    config = {"schema": CONFIG_SCHEMA, "kind": "covariance", "settings": config_of(plan.settings),
              "data": {**load_section(fd), "label": data_label, "n": plan.n, "m": int(t.size)},
              "export": {"granularity_exp": pendings[0].noise_plan.granularity_exp},
              "budget": budget_config(ledger), "replays": pendings[0].entry.id}
    record["part_entry_ids"] = [p.entry.id for p in pendings]
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    accuracy = COVARIANCE_ACCURACY.format(error=record["expected_sq_hs_error_second_moment"])
    if "basis_truncation" in record:  # a long grid's top-L basis: the tail is a bias (METHODS 27)
        tail = record["basis_truncation"]
        accuracy += (f" The release uses the kernel's top {tail['components']} eigenfunctions of this "
                     f"{tail['grid_points']:,}-point grid; the rest biases the covariance by at most "
                     f"{tail['truncation_bias_hs_max']:.3g} in HS norm (not part of the noise figure).")
    analyst = {"warning": NOT_PUBLISHABLE, "n_clipped": plan.n_clipped,
               "hs_distance_to_nonprivate": float(np.linalg.norm(covariance - plan.nonprivate_covariance()))}
    return CommittedRelease("covariance", pendings[0].entry, record, table, coef, config, {}, accuracy, analyst)


# The covariance's steps in the commit protocol (its kind: fdp_core/publish/kinds.py).
COVARIANCE_STEPS = Steps(quote=_quote_covariance, build=_build_covariance)


def commit_covariance(ledger, fd: FunctionalData, settings: CovarianceSettings, *, label: str = "",
                      data_label: str = "", granularity_exp: int | None = None, looked_at=None,
                      pre_registered: bool = False) -> CommittedRelease:
    """Commit a covariance release (and its released mean): every part checked, then charged and drawn.

    ``ledger``: an in-memory Ledger or a persistent StoredBudget (the caller completes the
    entries listed in ``record["part_entry_ids"]`` once the release is written). A thin wrapper of
    the commit protocol with :data:`COVARIANCE_STEPS`.

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (a stored one is completed by the caller once written).
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : CovarianceSettings
    label, data_label, granularity_exp, looked_at, pre_registered
        As for :func:`fdp_core.publish.commit.commit_mean`.

    Returns
    -------
    CommittedRelease
        The publishable release (``table``, ``record``, ``config``) and its ledger entry.

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> t = np.linspace(0, 1, 20)
    >>> rng = np.random.default_rng(0)
    >>> fd = fdp.from_arrays(t, 0.5 + 0.2 * rng.standard_normal((200, 1)) * np.sin(np.pi * t),
    ...                      metadata={"age": np.linspace(-1, 1, 200)})
    >>> ledger = fdp.Ledger(10.0, 1e-4)
    >>> commit_covariance(ledger, fd, fdp.CovarianceSettings(lo=0.0, hi=1.0)).kind
    'covariance'
    """
    request = CommitRequest(fd, settings, label=label, data_label=data_label, granularity_exp=granularity_exp,
                            looked_at=looked_at, pre_registered=pre_registered)
    return run_steps(COVARIANCE_STEPS, ledger, request)


def prepare_regression_commit(fd: FunctionalData, settings: RegressionSettings, *, label: str = "",
                              granularity_exp: int | None = None) -> list[PendingCommit]:
    plan = plan_regression_release(fd, settings)
    s = plan.settings
    g1, g2 = plan.guarantee.details["t1"], plan.guarantee.details["t2"]
    tau = s.curve_settings().tau_value
    err_scale = (plan.grid_points.size + plan.n + 20) * UNIT_ROUNDOFF
    base = label or f"regression on {', '.join(plan.labels[1:])}"
    t1 = _pending("regression", "gaussian (T1)", GAUSSIAN, plan, plan.t1, np.full(plan.t1.shape, plan.t1_sigma),
                  g1.gdp_mu, err_scale * s.bound_b**2 / plan.t1_sigma, g1.delta, g1.sensitivity, g1.sensitivity_norm,
                  base + ": T1", granularity_exp)
    t2 = _pending("regression", "gaussian (T2)", GAUSSIAN, plan, plan.t2, plan.t2_scales, g2.gdp_mu,
                  float(np.max(err_scale * s.bound_b * tau / plan.t2_scales)), g2.delta, g2.sensitivity,
                  g2.sensitivity_norm, base + ": T2", granularity_exp)
    return [t1, t2]


def _quote_regression(request: CommitRequest) -> Quote:
    return quote_of(prepare_regression_commit(request.data, request.settings, label=request.label,
                                              granularity_exp=request.granularity_exp))


def _build_regression(request: CommitRequest, quote: Quote, draws, ledger: Ledger) -> CommittedRelease:
    """The regression's publishable record from T1 and T2 as drawn (post-processing only)."""
    fd, data_label, looked_at, pre_registered = (request.data, request.data_label, request.looked_at,
                                                 request.pre_registered)
    pendings = list(quote.pendings)
    plan = pendings[0].plan
    q, L = plan.q, plan.eigenvalues.size
    t1, t2 = draws[0][0].reshape(q, q), draws[1][0].reshape(q, L)
    t1 = (t1 + t1.T) / 2.0
    functions = plan.coefficient_functions(t1[None], t2[None])[0]
    table = pd.DataFrame({"t": plan.grid_points, **{f"beta_{lab}": functions[k] for k, lab in enumerate(plan.labels)}})
    record = regression_record(plan)
    record.update(common_record(pendings[1], draws[1][1], ledger, label=pendings[1].entry.label,
                                 data_label=data_label))
    record["t1_entry"] = pendings[0].entry.to_dict()
    c1, c2 = draws[0][1].unit_noise_scale, draws[1][1].unit_noise_scale
    record.update(expected_sq_error_t1=plan.expected_sq_error_t1 * c1 * c1,
                  expected_sq_error_t2=plan.expected_sq_error_t2 * c2 * c2)
    record["noise_sampler"]["post_processing"] = ("T1~ symmetrised, eigenvalues floored at kappa, inverted; "
                                                  "beta~ = T1~^-1 T2~ synthesised on the data grid; centre added to "
                                                  "the intercept")
    record["data"].update(n=plan.n, m=int(plan.grid_points.size))
    i1, j1 = np.divmod(np.arange(q * q), q)
    i2, j2 = np.divmod(np.arange(q * L), L)
    coef = pd.concat([
        pd.DataFrame({"part": "T1", "row": i1 + 1, "column": j1 + 1, "noisy": True, "noise_scale": plan.t1_sigma,
                      "unit_value": draws[0][1].unit_values, "value": draws[0][0]}),
        pd.DataFrame({"part": "T2", "row": i2 + 1, "column": j2 + 1, "noisy": True,
                      "noise_scale": plan.t2_scales.ravel(), "unit_value": draws[1][1].unit_values,
                      "value": draws[1][0]})], ignore_index=True)
    config = {"schema": CONFIG_SCHEMA, "kind": "regression", "settings": config_of(plan.settings),
              "data": {**load_section(fd), "label": data_label, "n": plan.n,
                       "m": int(plan.grid_points.size)},
              "export": {"granularity_exp": pendings[0].noise_plan.granularity_exp},
              "budget": budget_config(ledger), "replays": pendings[1].entry.id}
    record["part_entry_ids"] = [p.entry.id for p in pendings]
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    accuracy = REGRESSION_ACCURACY.format(t1=record["expected_sq_error_t1"], t2=record["expected_sq_error_t2"])
    ols = plan.ols()
    analyst = {"warning": NOT_PUBLISHABLE, "n_clipped_curves": plan.n_clipped_curves,
               "n_clipped_covariates": plan.n_clipped_covariates,
               "ols": {lab: ols[k] for k, lab in enumerate(plan.labels)}}
    return CommittedRelease("regression", pendings[1].entry, record, table, coef, config, {}, accuracy, analyst)


REGRESSION_STEPS = Steps(quote=_quote_regression, build=_build_regression)


def commit_regression(ledger, fd: FunctionalData, settings: RegressionSettings, *, label: str = "",
                      data_label: str = "", granularity_exp: int | None = None, looked_at=None,
                      pre_registered: bool = False) -> CommittedRelease:
    """Commit regression coefficients: T1 and T2 checked together, then each charged and drawn
    (a thin wrapper of the commit protocol with :data:`REGRESSION_STEPS`).

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (a stored one is completed by the caller once written).
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : RegressionSettings
    label, data_label, granularity_exp, looked_at, pre_registered
        As for :func:`fdp_core.publish.commit.commit_mean`.

    Returns
    -------
    CommittedRelease
        The publishable release (``table``, ``record``, ``config``) and its ledger entry.

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> t = np.linspace(0, 1, 20)
    >>> rng = np.random.default_rng(0)
    >>> fd = fdp.from_arrays(t, 0.5 + 0.2 * rng.standard_normal((200, 1)) * np.sin(np.pi * t),
    ...                      metadata={"age": np.linspace(-1, 1, 200)})
    >>> ledger = fdp.Ledger(10.0, 1e-4)
    >>> commit_regression(ledger, fd, fdp.RegressionSettings(covariates=("age",), lo=0.0, hi=1.0)).kind
    'regression'
    """
    request = CommitRequest(fd, settings, label=label, data_label=data_label, granularity_exp=granularity_exp,
                            looked_at=looked_at, pre_registered=pre_registered)
    return run_steps(REGRESSION_STEPS, ledger, request)
