"""Commit, export and report: turning an exploration into a release (METHODS.md 8-9).

Previews (every page of the app, the ``release`` CLI commands) draw noise with numpy: they
are idealised real-arithmetic DP, for the analyst's eyes only. A **commit** is what may
leave the app, and always goes through the same five steps:

1. plan the release (everything deterministic: estimator, sensitivity, noise scales);
2. ask the exact discrete sampler for its privacy *before drawing* (OpenDP's own privacy
   map, :mod:`fdp_core.mechanisms.discrete`) and turn it into a :class:`LedgerEntry`;
3. ``ledger.check(entry)``: a release that does not fit the remaining budget raises
   :class:`BudgetError` here -- no noise has been drawn and nothing is recorded;
4. draw fresh noise from OS entropy with the exact discrete Laplace / Gaussian sampler on
   the release's coefficients (independent noise per coefficient with the planned scales);
5. record the entry, then build the publishable record.

What is released, and what "on its grid" means. Every mechanism here adds independent
noise to coefficients c_l with scales b_l and then post-processes: the sampler returns
unit values y~_l = c_l / b_l + noise that are **exact integer multiples of 2^k** (k = the
granularity exponent, recorded), and the released coefficients are x~_l = b_l y~_l.
``coefficients.csv`` holds the scales b_l, the unit values y~_l (written with Python's
shortest round-trip repr, so they are read back bit-exactly and stay on the grid) and x~_l.
The curve / density / component in ``release.csv`` is the floating-point synthesis
sum_l x~_l b_l(t) on the data grid: post-processing of the coefficients, so it carries the
same guarantee but its values are *not* themselves multiples of 2^k.

Floating point. OpenDP inflates the sensitivity for its own rounding and fdp adds an
allowance for floating-point error in y = c / b (discrete.py). That allowance assumes each
y_l is computed to within 2^(k+2); :func:`_granularity_for` raises k (coarser grid, a little
more noise) when a data-independent worst-case bound on the error of computing y from the
data is larger than 2^(k+1).

Never exported: the data, the non-private estimate (curve, coefficients, density) and
anything else computed from the data without noise (curves clipped or dropped, curves per
person, sampler diagnostics, errors against the raw mean). The number of persons n is a
public input the user declares (``n_policy``). What is computed from the data goes into
:attr:`CommittedRelease.analyst` (``analyst_view.json``, marked not for publication): never
into the zip bundle; the CLI writes it beside the bundle folder's files, the app offers it as
a separate download.
"""

from __future__ import annotations

import html
import io
import json
import math
import zipfile
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata as _metadata
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import yaml

from . import __version__, rerun
from .accounting import (KINDS, CompositionReport, Ledger, LedgerEntry, approximate_entry, cks_delta,
                         exponential_entry)
from .audit import AuditResult, audit_pair
from .data import MISSING_POLICIES, FunctionalData, load_curves
from .errors import FdpError, ParameterError
from .kernels import eigenbasis
from .mean import GAUSSIAN_MECHANISMS, MECHANISM_LABELS, MeanRelease, MeanSettings, plan_mean_release
from .mean import release_record as mean_release_record
from .estimators import shrinkage
from .mechanisms import discrete as _discrete
from .mechanisms.discrete import DEFAULT_GRANULARITY_EXP, DiscretePlan
from .mean import analyst_view as mean_analyst_view
from .release import ANALYST_VIEW_FILE, analyst_record, library_versions, provenance_stamp, to_json
from .risk import approx_dp_power, gdp_power, report_power

CONFIG_SCHEMA = "fdp.replay/1"
# Covariance and regression commits live in commit_summaries.py (exact discrete noise, same path).
SUMMARY_COMMIT_KINDS = ("covariance", "regression")
RELEASE_SCHEMA = "fdp.release/1"
BUNDLE_FILES = ("release.csv", "coefficients.csv", "release.json", "config.yaml", "ledger.json", "report.html",
                "release.py", "release.ipynb")
ON_GRID_NOTE = ("coefficients.csv: unit_value = the exact discrete sampler's output, an integer multiple of "
                "2^granularity_exp (shortest round-trip decimal, read back bit-exactly); value = noise_scale * "
                "unit_value. release.csv is the floating-point synthesis of these coefficients on the data grid: "
                "post-processing, same guarantee, not itself on the 2^k grid.")
COMMIT_RANDOMNESS = ("fresh OS entropy (OpenSSL RAND_bytes inside OpenDP); exact discrete sampler; no seed: "
                     "the noise cannot be reproduced")
NOT_DP_WARNING = "data-dependent: this release is NOT differentially private"
ALPHA_SENTENCE = 0.05
# The float error of computing y = c / b must stay within 2^(k+2) (discrete.py's allowance);
# the bound below is kept within 2^(k+1), leaving room for the division's own rounding.
_UNIT_ROUNDOFF = 2.0**-53
_MAX_GRANULARITY_EXP = 0


def _versions() -> dict:
    out = dict(library_versions())
    for package in ("opendp", "plotly", "pyyaml"):
        try:
            out[package] = _metadata.version(package)
        except _metadata.PackageNotFoundError:  # pragma: no cover - all are installed dependencies
            out[package] = None
    return out


# --------------------------------------------------------------------------- the committed release

@dataclass(frozen=True)
class CommittedRelease:
    """A release drawn with the exact discrete sampler and recorded in a ledger.

    Everything in it is publishable: ``table`` (release.csv), ``coefficients``
    (coefficients.csv: the sampler's output on its grid), ``record`` (release.json
    provenance), ``config`` (config.yaml, replayable), ``tradeoff`` (expected error against
    epsilon, closed form, data-free). It never holds the data or the non-private estimate.
    """

    kind: str
    entry: LedgerEntry
    record: dict = field(repr=False)
    table: pd.DataFrame = field(repr=False)
    coefficients: pd.DataFrame = field(repr=False)
    config: dict = field(repr=False)
    tradeoff: dict = field(repr=False)
    accuracy: str = ""
    analyst: dict = field(default_factory=dict, repr=False)  # NOT publishable: analyst_view.json

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def label(self) -> str:
        return self.entry.label or f"{self.kind} {self.entry.mechanism}"

    @property
    def flags(self) -> tuple:
        return tuple(self.record.get("data_dependent_flags", ()))


@dataclass(frozen=True)
class PendingCommit:
    """What a commit will cost, computed without drawing noise (the UI shows it first).

    ``values``/``scales`` are the coefficients to release and their noise scales (only the
    noisy ones; ``active`` marks them among all coefficients). ``values`` is NON-PRIVATE:
    it never leaves this object except through the sampler.
    """

    kind: str
    mechanism: str
    family: str  # "gaussian" | "laplace"
    plan: object = field(repr=False)  # MeanRelease, KdeRelease, ...
    noise_plan: DiscretePlan = field(repr=False)
    entry: LedgerEntry = field(repr=False)
    values: np.ndarray = field(repr=False)
    scales: np.ndarray = field(repr=False)
    active: np.ndarray = field(repr=False)
    scaled_sensitivity: float = 0.0
    float_error_bound: float = 0.0
    context: dict = field(default_factory=dict, repr=False)  # kind-specific inputs (feature spec, ...)


def _granularity_for(error_bound: float, requested: int | None) -> int:
    """Finest grid exponent k (>= the requested/default one) whose float allowance covers the bound.

    discrete.py's allowance covers a per-coordinate error of 2^(k+2) in y; the bound must
    stay below 2^(k+1) so the rounding of the division itself also fits.
    """
    k = DEFAULT_GRANULARITY_EXP if requested is None else int(requested)
    if error_bound > 0:
        k = max(k, math.ceil(math.log2(error_bound)) - 1)
    if k > _MAX_GRANULARITY_EXP:
        raise ParameterError(f"the noise is too small relative to the values' floating-point precision (error bound "
                             f"{error_bound:.3g} noise scales): no exact discrete release is possible; use a smaller "
                             "epsilon or a larger tau")
    return k


def _discrete_plan(family: str, n: int, scaled_sensitivity: float, k: int) -> DiscretePlan:
    make = _discrete.discrete_gaussian_plan if family == "gaussian" else _discrete.discrete_laplace_plan
    return make(n, scaled_sensitivity=scaled_sensitivity, granularity_exp=k)


def _draw(pending: PendingCommit):
    """The only place noise is drawn for an export: OpenDP, OS entropy, the 2^k grid."""
    release = (_discrete.discrete_gaussian_release if pending.family == "gaussian"
               else _discrete.discrete_laplace_release)
    noisy, record = release(pending.values, pending.scales, scaled_sensitivity=pending.scaled_sensitivity,
                            granularity_exp=pending.noise_plan.granularity_exp)
    # The release recomputes the plan; it must be the one the ledger was checked with.
    if (record.epsilon, record.rho, record.unit_noise_scale) != (pending.noise_plan.epsilon, pending.noise_plan.rho,
                                                                 pending.noise_plan.unit_noise_scale):
        raise RuntimeError("the sampler's privacy differs from the checked plan: refusing to release")
    return noisy, record


def _charge(account, entry: LedgerEntry) -> Ledger:
    """Check (and for a stored budget, charge) ``entry`` before any noise is drawn.

    ``account`` is an in-memory :class:`Ledger` (checked here, committed by :func:`_settle`
    after the draw) or a :class:`fdp_core.ledger_store.StoredBudget`, charged here for good in
    one locked transaction: a crash after this point leaves the charge (never a double
    spend). Returns the ledger that describes the release (a stored budget's snapshot).
    """
    if isinstance(account, Ledger):
        account.check(entry)
        return account
    return account.reserve(entry)


def _settle(account, ledger: Ledger, entry: LedgerEntry) -> None:
    """After a successful draw: record the entry in an in-memory ledger (a stored one already has it)."""
    if account is ledger:
        ledger.commit(entry)


def _execute(account, pending: PendingCommit):
    """check (charge) -> draw -> commit. A refused release raises before any noise is drawn.

    Returns (coefficients, sampler record, the ledger to describe the release with).
    """
    ledger = _charge(account, pending.entry)
    noisy, record = _draw(pending)
    _settle(account, ledger, pending.entry)
    full = np.zeros(pending.active.shape)
    full[pending.active] = noisy
    return full, record, ledger


def _coefficient_table(pending: PendingCommit, record, full: np.ndarray, index_columns: dict) -> pd.DataFrame:
    unit = np.zeros(pending.active.shape)
    unit[pending.active] = record.unit_values
    scales = np.zeros(pending.active.shape)
    scales[pending.active] = pending.scales
    return pd.DataFrame({**index_columns, "noisy": pending.active, "noise_scale": scales, "unit_value": unit,
                         "value": full})


def _csv_text(frame: pd.DataFrame) -> str:
    """CSV with shortest round-trip floats (repr), so grid values are read back bit-exactly."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            out[column] = [repr(float(v)) for v in out[column]]
    return out.to_csv(index=False)


NO_PERSISTENT_LEDGER = {"persistent": False,
                        "note": "no persistent ledger was used: checked against an in-memory ledger only, so "
                                "earlier releases of these data are not counted"}


def ledger_store_note(ledger: Ledger) -> dict:
    """Whether the budget lives in the persistent ledger, and its name (never the data fingerprint)."""
    note = getattr(ledger, "store_note", None)
    return note() if callable(note) else dict(NO_PERSISTENT_LEDGER)


def ledger_state(ledger: Ledger) -> dict:
    """Budget, spending and composition of a ledger, JSON-ready (goes into the provenance)."""
    report = ledger.composition()
    return {
        "store": ledger_store_note(ledger),
        "budget": {"epsilon_total": ledger.epsilon_total, "delta_total": ledger.delta_total,
                   "rho_total": ledger.rho_total, "split": ledger.split, "filter": ledger.filter},
        "spent": asdict(ledger.spent()),
        "remaining": asdict(ledger.remaining()),
        "n_releases": len(ledger.entries),
        "release_ids": [e.id for e in ledger.entries],
        "composition": report.to_dict(),
        "best_total": None if report.best is None else asdict(report.best),
    }


PRE_REGISTERED = "pre-registered: settings fixed before the data were loaded"
# The app's non-private views, as the report names them (fdp_ui.state.note_view records them).
NONPRIVATE_VIEWS = {
    "curves": "the raw curves (Data page)",
    "norms": "the histogram of curve norms and the clipping counts (Data page, sidebar)",
    "range_suggestion": "the data's minimum and maximum (value-range suggestion, Data page)",
    "mean_estimate": "the non-private mean estimate and its bias (Mean page)",
    "tradeoff_truth": "error curves against the non-private estimate (Trade-offs page)",
    "pcv": "the PCV score surface and its optimum (Trade-offs page)",
    "density_estimate": "the non-private density estimate (Density page)",
    "pca_estimate": "the non-private principal components and scree (Components page)",
}
NOTHING_DECLARED = ("not declared: the caller did not say what was looked at before this commit (the settings may "
                    "have been chosen after looking at the data)")


def looked_at_field(looked_at=None, *, pre_registered: bool = False) -> list[str]:
    """What the session looked at before committing, as the report states it.

    ``looked_at``: the non-private views shown (e.g. "non-private mean overlay", "norms
    histogram", "PCV optimum"); ``pre_registered``: the settings came from a file fixed before
    the data were loaded (replay of a config). Without either, the record says nothing was
    declared rather than claiming that nothing was looked at.
    """
    seen = [str(x) for x in dict.fromkeys(looked_at or ())]
    if pre_registered and not seen:
        return [PRE_REGISTERED]
    return seen or [NOTHING_DECLARED]


def _base_record(kind: str, entry: LedgerEntry, sampler: dict, ledger: Ledger, *, label: str, data_label: str,
                 arithmetic: str, on_grid: str, randomness: str = COMMIT_RANDOMNESS) -> dict:
    return {
        "schema": RELEASE_SCHEMA,
        "id": entry.id,
        "label": label,
        "kind": kind,
        "seed": None,
        "randomness": randomness,
        "arithmetic": arithmetic,
        "noise_sampler": sampler,
        "on_grid": on_grid,
        "ledger_entry": entry.to_dict(),
        "charged": {"curve": entry.curve, "epsilon": entry.epsilon, "delta": entry.delta, "rho": entry.rho,
                    "mu": entry.mu},
        "ledger_at_commit": ledger_state(ledger),
        "data": {"label": data_label},
        "files": list(BUNDLE_FILES),
        "created_utc": provenance_stamp()["created_utc"],
        "library_versions": _versions(),
    }


def _common_record(pending: PendingCommit, record, ledger: Ledger, *, label: str, data_label: str) -> dict:
    sampler = record.to_dict()
    sampler.pop("unit_values")
    sampler.pop("scales")
    sampler.update(n_noisy_coefficients=int(pending.active.sum()), n_coefficients=int(pending.active.size),
                   coefficient_noise=pending.family, float_error_bound_unit_scale=pending.float_error_bound,
                   scaled_sensitivity_meaning=(
                       "mu = Delta / sigma: L2 sensitivity of coefficients / noise sd" if pending.family == "gaussian"
                       else "epsilon: l1 sensitivity of coefficients / Laplace scales"))
    return _base_record(pending.kind, pending.entry, sampler, ledger, label=label, data_label=data_label,
                        arithmetic="exact discrete sampler on a 2^k grid (OpenDP); the released curve is "
                                   "floating-point post-processing of the grid coefficients",
                        on_grid=ON_GRID_NOTE)


def _budget_config(ledger: Ledger) -> dict:
    config = {"epsilon_total": ledger.epsilon_total, "delta_total": ledger.delta_total, "filter": ledger.filter,
              "split": None if ledger.split is None else dict(ledger.split)}
    name = getattr(ledger, "budget_name", None)
    if name is not None:
        config["name"] = name  # a replay charges the same named budget
    return config


# --------------------------------------------------------------------------- mean

def _mean_float_error_bound(plan: MeanRelease) -> np.ndarray:
    """Worst-case float error of y_l = c_l / b_l computed from the data, per noisy coefficient.

    Eigen-based means: c_l = r_l <clipped mean, phi_l> with |r_l| <= 1 and the clipped mean
    inside the tau ball, so a sum over n curves and m grid points errs by at most
    (m + n + 20) u tau r_l (r_l = s_l for the penalised means, whose noise scales shrink with
    lambda_l). Bernstein: lattice means of values in [lo, hi] err by (n + 4) u max(|lo|, |hi|).
    """
    s = plan.settings
    active = plan.noise_scales > 0
    b = plan.noise_scales[active]
    # Each person's row is clipped again after averaging (preprocess.prepare_curves), so whatever
    # rounding the range clip, centring and averaging did, every computed row lies in the tau ball
    # (Bernstein: in [lo, hi]); only the sum over the n rows and the projection remain.
    terms = plan.n
    if s.mechanism == "bernstein":
        lo, hi = s.bernstein_range
        return (terms + 4) * _UNIT_ROUNDOFF * max(abs(lo), abs(hi)) / b
    r = np.ones(plan.noise_scales.size)
    if s.mechanism in ("gaussian", "iclp-qr"):
        lam = eigenbasis(s.kernel, s.rho, _unit(plan.grid_points), plan.weights, nu=s.nu).eigenvalues
        r = shrinkage(lam, s.eta, s.phi if s.mechanism == "gaussian" else s.psi)
    return (plan.m + terms + 20) * _UNIT_ROUNDOFF * plan.tau * r[active] / b


def _missing_policy(fd: FunctionalData) -> str:
    return "interpolate" if fd.report.n_interpolated else "drop"


def _unit(grid: np.ndarray) -> np.ndarray:
    return (grid - grid[0]) / (grid[-1] - grid[0])


def prepare_mean_commit(fd: FunctionalData, settings: MeanSettings, *, label: str = "",
                        granularity_exp: int | None = None) -> PendingCommit:
    """Plan a mean commit and its ledger entry; draws nothing.

    Coefficient noise is independent per coefficient with the plan's ``noise_scales``
    (Gaussian: sigma sqrt(lambda_l), scaled sensitivity mu = Delta / sigma; Laplace types:
    b_l calibrated for epsilon, scaled sensitivity epsilon). Coefficients whose scale is 0
    (ICLP-AR's inactive components) are exact zeros for every data set and get no noise.
    """
    plan = plan_mean_release(fd, settings)
    s = plan.settings
    active = plan.noise_scales > 0
    if not active.any():
        raise ParameterError("this release has no noisy coefficient (every component is an exact zero): "
                             "nothing to commit; lower psi or raise tau")
    if np.any(plan.estimate_coefficients[~active] != 0):
        raise RuntimeError("a coefficient without noise is not an exact zero: refusing (it would leak the data)")
    family = "gaussian" if plan.noise == "gaussian" else "laplace"
    d_in = plan.sensitivity / plan.sigma if family == "gaussian" else s.epsilon
    bound = float(np.max(_mean_float_error_bound(plan)))
    k = _granularity_for(bound, granularity_exp)
    noise_plan = _discrete_plan(family, int(active.sum()), d_in, k)
    g = plan.guarantee
    entry = noise_plan.ledger_entry("mean", s.mechanism, delta=s.delta if family == "gaussian" else None,
                                    sensitivity=plan.sensitivity, sensitivity_norm=g.get("sensitivity_norm", ""),
                                    label=label or f"mean, {MECHANISM_LABELS[s.mechanism]}")
    return PendingCommit("mean", s.mechanism, family, plan, noise_plan, entry, plan.estimate_coefficients[active],
                         plan.noise_scales[active], active, float(d_in), bound)


def mean_tradeoff(fd: FunctionalData, settings: MeanSettings, n_points: int = 31) -> dict:
    """Expected squared L2 error against epsilon (closed form, re-planned at each epsilon).

    The error of every mean mechanism depends on n, tau and the public settings only (not
    on the data values), so the curve is publishable. delta stays fixed for the Gaussian
    mechanism; epsilons a calibration refuses (classical, epsilon > 1) are left out.
    """
    grid = np.unique(np.concatenate([np.logspace(-2, 1, n_points), [settings.epsilon]]))
    eps, err = [], []
    for e in grid:
        try:
            plan = plan_mean_release(fd, replace(settings, epsilon=float(e)))
        except FdpError:
            continue
        eps.append(float(e))
        err.append(plan.expected_sq_l2_error)
    chosen = plan_mean_release(fd, settings)
    return {"parameter": "epsilon", "epsilon": eps, "expected_sq_l2_error": err,
            "chosen_epsilon": float(settings.epsilon), "chosen_error": chosen.expected_sq_l2_error,
            "metric": "expected squared L2 distance to the non-private estimate (closed form)",
            "fixed": ({"delta": settings.delta} if settings.mechanism in GAUSSIAN_MECHANISMS else {})}


def _accuracy_sentence(l2: float, sup: float | None, what: str = "the non-private estimate") -> str:
    text = f"With 95% probability the release is within {l2:.4g} of {what} in L2 norm"
    if sup is not None:
        text += f"; pointwise, the largest deviation stays below {sup:.4g} with 95% probability"
    return text + "."


def commit_mean(ledger, fd: FunctionalData, settings: MeanSettings, *, label: str = "",
                data_label: str = "", granularity_exp: int | None = None,
                pending: PendingCommit | None = None, looked_at=None, pre_registered: bool = False) -> CommittedRelease:
    """Commit one sanitized mean: check the budget, draw exact discrete noise, record, describe.

    ``ledger``: an in-memory :class:`Ledger` or a persistent
    :class:`fdp_core.ledger_store.StoredBudget` (charged in one locked transaction before
    the draw; the caller marks the entry complete once the release is written). Raises
    BudgetError (nothing drawn, nothing recorded) when the release does not fit.
    """
    pending = pending or prepare_mean_commit(fd, settings, label=label, granularity_exp=granularity_exp)
    full, noise, ledger = _execute(ledger, pending)
    plan: MeanRelease = pending.plan
    values = plan.offset + plan.synthesis @ full  # the public centre added back: post-processing
    c = noise.unit_noise_scale
    l2, sup = plan.l2_error_radius(0.95) * c, plan.sup_error_radius(0.95) * c
    record = mean_release_record(plan, values)
    record.update(_common_record(pending, noise, ledger, label=pending.entry.label, data_label=data_label))
    record.update(expected_sq_l2_error=plan.expected_sq_l2_error * c * c, l2_error_radius_95=l2,
                  sup_error_radius_95=sup, accuracy=_accuracy_sentence(l2, sup))
    record["data"].update(n=plan.n, m=plan.m, grid="the data file's grid (column t)")
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    record["noise_sampler"]["post_processing"] = (
        "curve(t) = c(t) + sum_l value_l b_l(t) with b_l the eigenfunctions of the kernel on the data grid and c "
        "the public centre (0 without a declared value range)"
        if plan.settings.mechanism != "bernstein" else
        "curve(t) = sum_v value_v C(K, v) t^v (1 - t)^(K - v) on the grid rescaled to [0, 1]")
    table = pd.DataFrame({"t": plan.grid_points, "value": values})
    index = {"index": np.arange(1, full.size + 1)} if plan.settings.mechanism != "bernstein" else \
        {"lattice_point": np.arange(full.size) / (full.size - 1)}
    config = {"schema": CONFIG_SCHEMA, "kind": "mean", "settings": asdict(plan.settings),
              "data": {"missing": _missing_policy(fd), "label": data_label, "n": plan.n, "m": plan.m},
              "export": {"granularity_exp": pending.noise_plan.granularity_exp},
              "budget": _budget_config(ledger), "replays": pending.entry.id}
    analyst = {**mean_analyst_view(plan), "committed_noise_l2_radius_95": l2}
    return CommittedRelease("mean", pending.entry, record, table, _coefficient_table(pending, noise, full, index),
                            config, mean_tradeoff(fd, plan.settings), record["accuracy"], analyst)


# --------------------------------------------------------------------------- density (KDE)

def _kde_module():
    from . import kde

    return kde


def _hall_transform(release):
    """Orthogonal eigenvectors per axis and noise sds: noise = U diag(sd) z exactly as in kde._hall_noise."""
    kde = _kde_module()
    pairs = [kde.rbf_gram_eigh(g, release.bandwidth) for g in release.grids]
    lam = pairs[0][0] if len(pairs) == 1 else np.outer(pairs[0][0], pairs[1][0])
    return tuple(U for _, U in pairs), release.sigma * np.sqrt(kde.floored_eigenvalues(lam))


def _to_coefficients(axes, values):
    if len(axes) == 1:
        return axes[0].T @ values
    return axes[0].T @ values @ axes[1]


def _from_coefficients(axes, coefficients):
    if len(axes) == 1:
        return axes[0] @ coefficients
    return axes[0] @ coefficients @ axes[1].T


def prepare_kde_commit(fd: FunctionalData, feature: str, settings, *, label: str = "",
                       granularity_exp: int | None = None) -> PendingCommit:
    """Plan a density commit (a per-curve feature or column, :mod:`fdp_core.features`); draws nothing.

    Hall (Gaussian): the grid noise sigma G = U diag(sigma sqrt(lambda~)) z, so the release is
    the coefficient vector c = U^T f plus independent Gaussian noise of sd sigma sqrt(lambda~_j);
    its whitened shift is the Mahalanobis norm of the grid difference, at most the RKHS
    sensitivity, so the scaled sensitivity is mu = Delta / sigma. ICLP: the eigen-coefficients
    (unit coordinates) with Laplace scales b_l, scaled sensitivity epsilon.
    """
    from .features import features_label, person_features

    kde = _kde_module()
    obs = person_features(fd, feature, settings.box, person_column=settings.person_column,
                          value_range=settings.value_range)
    points, features = obs.points, obs.features
    plan = kde.plan_kde_release(points, settings)
    n = plan.n
    if plan.mechanism == "gaussian":
        axes, sds = _hall_transform(plan)
        coefficients = _to_coefficients(axes, plan.density)
        family, d_in = "gaussian", plan.sensitivity / plan.sigma
        # c = U^T f: f's entries are at most (2 pi h^2)^(-d/2) and carry a relative error of
        # (n + 10) u; the transform adds (N + 10) u; |U| columns have unit norm.
        N = plan.m
        fmax = (2.0 * math.pi * plan.bandwidth**2) ** (-plan.d / 2.0)
        bound = 4.0 * math.sqrt(N) * fmax * _UNIT_ROUNDOFF * (N + n + 20) / float(np.min(sds))
        scales = sds
    else:
        coefficients = plan.coefficients
        scales = plan.laplace_scales
        family, d_in = "laplace", settings.epsilon
        bump = np.max(np.abs(plan.iclp_axis.bump_coefficients), axis=0)
        r = bump if plan.d == 1 else np.outer(bump, bump)
        G = plan.grids[0].size
        bound = float(np.max((G * plan.d + n + 20) * _UNIT_ROUNDOFF * r / scales))
    active = np.ones(np.size(coefficients), dtype=bool)
    k = _granularity_for(bound, granularity_exp)
    noise_plan = _discrete_plan(family, int(active.sum()), d_in, k)
    g = plan.guarantee
    entry = noise_plan.ledger_entry("kde", plan.mechanism, delta=settings.delta if family == "gaussian" else None,
                                    sensitivity=plan.sensitivity, sensitivity_norm=g.get("sensitivity_norm", ""),
                                    label=label or f"density of {features_label(features)}, "
                                                   f"{kde.KDE_MECHANISM_LABELS[plan.mechanism].split(',')[0]}")
    return PendingCommit("kde", plan.mechanism, family, plan, noise_plan, entry,
                         np.asarray(coefficients, dtype=float).ravel(), np.asarray(scales, dtype=float).ravel(),
                         active, float(d_in), bound,
                         context={"feature": features_label(features), "settings": settings, "points": points,
                                  "n_dropped": fd.report.n_dropped, "missing": _missing_policy(fd),
                                  "n_curves": obs.n_curves, "n_outside_box": obs.n_outside_box})


def kde_tradeoff(points, settings, n_points: int = 15) -> dict:
    """Expected squared L2 error of the density release against epsilon (closed form; data-free given n)."""
    kde = _kde_module()
    grid = np.unique(np.concatenate([np.logspace(-2, 1, n_points), [settings.epsilon]]))
    eps, err = [], []
    for e in grid:
        try:
            plan = kde.plan_kde_release(points, replace(settings, epsilon=float(e)))
        except FdpError:
            continue
        eps.append(float(e))
        err.append(plan.expected_sq_l2_error)
    chosen = kde.plan_kde_release(points, settings)
    return {"parameter": "epsilon", "epsilon": eps, "expected_sq_l2_error": err,
            "chosen_epsilon": float(settings.epsilon), "chosen_error": chosen.expected_sq_l2_error,
            "metric": "expected squared L2 distance to the non-private density (closed form, box coordinates)",
            "fixed": ({"delta": settings.delta} if settings.mechanism == "gaussian" else {})}


def _kde_radii(plan, factor: float) -> tuple[float, float]:
    """95% L2 and sup radii of the noise field (Monte Carlo over the public noise law, fixed seed)."""
    draws = plan.noise(np.random.default_rng(12345), 2000).reshape(2000, -1) * factor
    w = np.asarray(plan.weights).ravel()
    return (float(np.quantile(np.sqrt((draws**2) @ w), 0.95)),
            float(np.quantile(np.abs(draws).max(axis=1), 0.95)))


def commit_kde(ledger, fd: FunctionalData, feature: str, settings, *, label: str = "",
               data_label: str = "", granularity_exp: int | None = None,
               pending: PendingCommit | None = None, looked_at=None, pre_registered: bool = False) -> CommittedRelease:
    """Commit one sanitized density (Hall or ICLP-KDE) through the same check -> draw -> record path."""
    kde = _kde_module()
    pending = pending or prepare_kde_commit(fd, feature, settings, label=label, granularity_exp=granularity_exp)
    full, noise, ledger = _execute(ledger, pending)
    plan = pending.plan
    if plan.mechanism == "gaussian":
        axes, _ = _hall_transform(plan)
        values = _from_coefficients(axes, full.reshape(plan.grid_shape))
    else:
        phi = plan.iclp_axis.basis.eigenfunctions
        volume = float(np.prod(kde.box_widths(plan.box)))
        coefs = full.reshape(plan.laplace_scales.shape)
        values = (coefs @ phi.T if plan.d == 1 else phi @ coefs @ phi.T) / volume
    c = noise.unit_noise_scale
    l2, sup = _kde_radii(plan, c)
    settings = pending.context["settings"]
    record = kde.release_record(plan, feature=pending.context["feature"], person_column=settings.person_column,
                                value_range=settings.value_range)
    record.update(_common_record(pending, noise, ledger, label=pending.entry.label, data_label=data_label))
    record.update(expected_sq_l2_error=plan.expected_sq_l2_error * c * c, l2_error_radius_95=l2,
                  sup_error_radius_95=sup, accuracy=_accuracy_sentence(l2, sup, "the non-private density"))
    record["data"].update(n=plan.n, feature=pending.context["feature"])
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    record["noise_sampler"]["post_processing"] = (
        "density = U c~ (U: eigenvectors of the Gaussian Gram matrix on the grid; U1 C~ U2^T in 2-d)"
        if plan.mechanism == "gaussian" else
        "density = sum_l value_l phi_l(x) / box volume (unit-coordinate eigenfunctions)")
    table = kde.release_table(plan, values)
    if plan.d == 1:
        index = {"index": np.arange(1, full.size + 1)}
    else:
        i1, i2 = np.unravel_index(np.arange(full.size), plan.grid_shape if plan.mechanism == "gaussian"
                                  else plan.laplace_scales.shape)
        index = {"index_1": i1 + 1, "index_2": i2 + 1}
    settings_dict = asdict(settings)
    settings_dict["box"] = [list(b) for b in kde.check_box(settings.box)]
    config = {"schema": CONFIG_SCHEMA, "kind": "kde", "settings": settings_dict,
              "data": {"missing": pending.context["missing"], "feature": pending.context["feature"],
                       "label": data_label, "n": plan.n},
              "export": {"granularity_exp": pending.noise_plan.granularity_exp},
              "budget": _budget_config(ledger), "replays": pending.entry.id}
    analyst = {**kde.analyst_view(plan, n_dropped=pending.context["n_dropped"], n_curves=pending.context["n_curves"],
                                  n_outside_box=pending.context["n_outside_box"]),
               "committed_noise_l2_radius_95": l2}
    return CommittedRelease("kde", pending.entry, record, table, _coefficient_table(pending, noise, full, index),
                            config, kde_tradeoff(pending.context["points"], settings), record["accuracy"], analyst)


# --------------------------------------------------------------------------- principal components

PCA_HARDENING = "Bingham sampler: not floating-point hardened"
PCA_ON_GRID = ("No exact discrete sampler exists for the exponential mechanism: coefficients.csv holds the "
               "private orthonormal matrix V (basis coefficients of the components) as floating-point numbers. "
               + PCA_HARDENING + ".")
PCA_ACCURACY = ("No data-free accuracy statement exists for the exponential mechanism: how close the private "
                "components are to the non-private ones depends on the data's spectrum, so it is not published.")
# Computed from the raw data (or, for the acceptance rate, from the data-dependent matrix A):
# never exported.
PCA_NOT_EXPORTED = ("variance_ratio", "subspace_distance", "acceptance_rate", "not_private")
RANDOMNESS_PCA = ("fresh OS entropy (numpy Generator seeded from the operating system, no seed recorded); "
                  "floating-point Bingham sampler")


def _pca_module():
    from . import pca

    return pca


def pca_ledger_entry(settings, *, label: str = "") -> LedgerEntry:
    """The cost of a PCA commit, known from the settings alone (nothing is drawn).

    Exact and deflation samplers: the exponential mechanism, pure epsilon with rho =
    epsilon^2 / 8 (for deflation one entry with the total epsilon = sum eps_j: conservative).
    Gibbs: an approximate entry (nominal epsilon, not a DP claim; the filter still charges it).
    """
    pca = _pca_module()
    s = settings.validated()
    sampler = s.sampler_name
    noise = {"sampler": f"Bingham: {pca.SAMPLER_LABELS[sampler]}", "hardening": PCA_HARDENING,
             "gamma": float(s.gamma), "epsilon_per_component": list(s.component_epsilons()), "k": int(s.k)}
    label = label or f"{s.k} principal component(s), {sampler} sampler"
    if sampler == "gibbs":
        return approximate_entry("pca", "exponential (Gibbs)", epsilon=s.epsilon, noise=noise, label=label)
    return exponential_entry("pca", "exponential", epsilon=s.epsilon, sensitivity=1.0, noise=noise, label=label)


def commit_pca(ledger, fd: FunctionalData, settings, *, label: str = "", data_label: str = "",
               released_mean=None, released_mean_id: str | None = None, looked_at=None,
               pre_registered: bool = False) -> CommittedRelease:
    """Commit private principal components: check the budget, draw with fresh entropy, record.

    ``released_mean`` (centring "released-mean") must be a mean committed earlier: its budget
    is already in the ledger. The record drops everything computed from the raw data (the
    analyst-view metrics and the sampler's acceptance rate, which depends on X^T X).
    """
    pca = _pca_module()
    settings = settings.validated()
    if settings.centring == "released-mean" and released_mean is None:
        raise ParameterError("centring by a released mean needs a committed mean release (commit a mean first)")
    entry = pca_ledger_entry(settings, label=label)
    account = ledger
    ledger = _charge(account, entry)
    result = pca.private_pca(fd, settings, np.random.default_rng(), released_mean=released_mean)
    _settle(account, ledger, entry)
    record = pca.release_record(result)
    for key in PCA_NOT_EXPORTED:
        record.pop(key, None)
    sampler = {"sampler": entry.noise["sampler"], "hardening": PCA_HARDENING,
               "floating_point": result.guarantee.get("floating_point"), "approximate": entry.approximate,
               "randomness": RANDOMNESS_PCA}
    record.update(_base_record("pca", entry, sampler, ledger, label=entry.label, data_label=data_label,
                               arithmetic="floating point (numpy); " + PCA_HARDENING, on_grid=PCA_ON_GRID,
                               randomness=RANDOMNESS_PCA))
    record.update(hardening_note=PCA_HARDENING + ("; Gibbs sampling (MCMC) is approximate: the nominal epsilon is "
                                                  "not a differential-privacy claim" if entry.approximate else ""),
                  accuracy=PCA_ACCURACY, released_mean_id=released_mean_id)
    record["data"].update(n=result.n, m=result.m)
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    columns = {f"component_{j + 1}": result.components[:, j] for j in range(result.k)}
    table = pd.DataFrame({"t": result.grid_points, **columns})
    coefficients = pd.DataFrame({"basis_index": np.arange(1, result.p + 1),
                                 **{f"V_{j + 1}": result.coefficients[:, j] for j in range(result.k)}})
    settings_dict = asdict(settings)
    if settings_dict.get("epsilon_split") is not None:
        settings_dict["epsilon_split"] = list(settings_dict["epsilon_split"])
    config = {"schema": CONFIG_SCHEMA, "kind": "pca", "settings": settings_dict,
              "data": {"missing": _missing_policy(fd), "label": data_label, "n": result.n, "m": result.m},
              "export": {}, "budget": _budget_config(ledger), "replays": entry.id}
    analyst = pca.analyst_view(result, n_dropped=fd.report.n_dropped)
    return CommittedRelease("pca", entry, record, table, coefficients, config, {}, PCA_ACCURACY, analyst)


# --------------------------------------------------------------------------- ledger and risk views

def native_parameter(entry: LedgerEntry) -> str:
    """The release's own privacy parameter, as the ledger composes it."""
    if entry.curve == "gaussian":
        return f"mu = {entry.mu:.4g} (Gaussian DP)"
    if entry.curve == "zcdp":
        return f"rho = {entry.rho:.4g} (zCDP, discrete Gaussian: the sampler's privacy map)"
    if entry.curve == "pure":
        return f"epsilon = {entry.epsilon:.4g} (pure DP)"
    if entry.curve == "bounded_range":
        return f"epsilon = {entry.epsilon:.4g} (exponential mechanism: rho = epsilon^2/8 = {entry.rho:.4g})"
    return f"epsilon = {entry.epsilon:.4g} nominal (approximate sampler: not a DP claim)"


def ledger_table(ledger: Ledger) -> pd.DataFrame:
    """One row per committed release with its native parameters and its (epsilon, delta) charge."""
    rows = [{"id": e.id, "release": e.label, "kind": e.kind, "mechanism": e.mechanism,
             "native parameter": native_parameter(e), "epsilon": e.epsilon, "delta": e.delta, "rho": e.rho,
             "mu": e.mu, "sampler": e.noise.get("sampler", ""), "committed (UTC)": e.timestamp}
            for e in ledger.entries]
    columns = ["id", "release", "kind", "mechanism", "native parameter", "epsilon", "delta", "rho", "mu", "sampler",
               "committed (UTC)"]
    return pd.DataFrame(rows, columns=columns)


_METHOD_LABELS = {"basic": "basic (sum of epsilon and delta)", "gdp+basic": "GDP for Gaussian releases + basic",
                  "zcdp": "zCDP (sum of rho, CKS conversion)"}


def composition_table(report: CompositionReport) -> pd.DataFrame:
    """Every valid total at the target delta, with the one that won (smallest epsilon) marked."""
    present = {t.method: t for t in report.totals}
    rows = []
    for method in ("basic", "gdp+basic", "zcdp"):
        t = present.get(method)
        if t is None:
            why = ("no continuous Gaussian release (discrete-Gaussian exports are accounted in zCDP)"
                   if method == "gdp+basic" else "needs a target delta > 0 and at least one release")
            rows.append({"composition": _METHOD_LABELS[method], "epsilon": None, "delta": None,
                         "valid at target delta": False, "best": False, "detail": f"not applicable: {why}"})
            continue
        valid = t.delta <= report.delta_target * (1 + 1e-12)
        rows.append({"composition": _METHOD_LABELS[method], "epsilon": t.epsilon, "delta": t.delta,
                     "valid at target delta": valid, "best": report.best is not None and report.best is t,
                     "detail": t.detail})
    return pd.DataFrame(rows)


def entry_power(entry: LedgerEntry, alpha) -> np.ndarray:
    """Largest power of any membership test against this one release at false-positive rate alpha.

    Discrete Gaussian (zCDP): rho-zCDP gives (eps, cks_delta(rho, eps))-DP for every eps,
    so the power is at most the minimum over eps of the (eps, delta) bounds.
    """
    a = np.asarray(alpha, dtype=float)
    if entry.curve == "gaussian":
        return gdp_power(a, entry.mu)
    best = approx_dp_power(a, entry.epsilon, entry.delta)
    if entry.curve == "zcdp":
        for eps in np.linspace(0.0, 3.0 * entry.epsilon + 1.0, 61):
            d = cks_delta(entry.rho, float(eps))
            if d < 1:
                best = np.minimum(best, approx_dp_power(a, float(eps), d))
    return best


def ledger_power(ledger: Ledger, alpha) -> np.ndarray:
    """Power bound for every committed release together (parameters fixed in advance).

    The smaller of the best composed total's bound (risk.report_power) and, when the
    ledger has a zCDP total, the envelope of the (eps, cks_delta(rho_total, eps)) bounds.
    """
    a = np.asarray(alpha, dtype=float)
    report = ledger.composition()
    if report.best is None:
        raise ParameterError("the ledger has no valid total at its delta, so there is no power bound")
    best = report_power(report, a)
    if report.n_approximate == 0 and report.rho_total > 0 and report.delta_target > 0:
        for eps in np.linspace(0.0, 3.0 * report.best.epsilon + 1.0, 61):
            d = cks_delta(report.rho_total, float(eps))
            if d < 1:
                best = np.minimum(best, approx_dp_power(a, float(eps), d))
    return best


def power_sentence(power_at_alpha: float, alpha: float = ALPHA_SENTENCE) -> str:
    return (f"An adversary who wrongly accuses at most {alpha:.0%} of non-members can correctly detect at most "
            f"{power_at_alpha:.1%} of members (random guessing detects {alpha:.0%}; no protection at all would "
            "allow 100%).")


def privacy_statement(release: CommittedRelease) -> list[str]:
    """Plain-language statement of the guarantee, as a list of paragraphs."""
    e = release.entry
    out = []
    if release.flags:
        out.append("WARNING: " + NOT_DP_WARNING + ": " + "; ".join(release.flags) + ".")
    person = release.record.get("person_column")
    unit = (f"one person's data (all curves sharing a value of '{person}')" if person else
            "one individual's curve" if release.kind != "kde" else "one individual's observation")
    if e.curve == "zcdp":
        out.append(f"This release satisfies rho-zero-concentrated differential privacy with rho = {e.rho:.4g}, as "
                   f"reported by the exact discrete Gaussian sampler's own privacy map. That implies "
                   f"(epsilon, delta)-DP with epsilon = {e.epsilon:.4g} at delta = {e.delta:.3g}.")
    elif e.curve in ("pure", "bounded_range"):
        out.append(f"This release satisfies pure epsilon-differential privacy with epsilon = {e.epsilon:.4g} "
                   "(delta = 0).")
    elif e.curve == "gaussian":
        out.append(f"This release satisfies mu-Gaussian differential privacy with mu = {e.mu:.4g}, hence "
                   f"(epsilon, delta)-DP with epsilon = {e.epsilon:.4g}, delta = {e.delta:.3g}.")
    else:
        out.append(f"This release was drawn with an approximate sampler: its nominal epsilon = {e.epsilon:.4g} "
                   "is NOT a differential-privacy claim.")
    out.append(f"In plain words: replacing {unit} by any other changes the probability of any published result "
               f"by at most a factor e^epsilon = {math.exp(e.epsilon):.3g}"
               + (f", except with probability delta = {e.delta:.3g}." if e.delta > 0 else "."))
    p = float(entry_power(e, ALPHA_SENTENCE))
    out.append(power_sentence(p))
    out.append("The guarantee holds whatever else an attacker knows, including every other individual's data, "
               "and for any analysis of the published files. Privacy losses of several releases add up: see the "
               "session ledger below.")
    return out


# --------------------------------------------------------------------------- figures

PRIVATE_COLOR = "#1f77b4"
# Room for tick labels and axis titles (10 px margins clipped them in the report); automargin
# grows a side further when long tick labels need it.
FIGURE_MARGIN = dict(l=80, r=30, t=60, b=70)
_AXIS = dict(automargin=True, title_standoff=12)


def _finish_layout(fig: go.Figure, **layout) -> go.Figure:
    fig.update_layout(margin=FIGURE_MARGIN, **layout)
    fig.update_xaxes(**_AXIS)
    fig.update_yaxes(**_AXIS)
    return fig


def release_figure(release: CommittedRelease) -> go.Figure:
    """The sanitized output only (never the non-private estimate)."""
    t = release.table
    fig = go.Figure()
    if release.kind == "mean":
        fig.add_trace(go.Scatter(x=t["t"].tolist(), y=t["value"].tolist(), mode="lines", name="sanitized mean",
                                 line=dict(color=PRIVATE_COLOR, width=2.5)))
        fig.update_layout(xaxis_title="t", yaxis_title="value")
    elif release.kind == "kde" and "x" in t:
        fig.add_trace(go.Scatter(x=t["x"].tolist(), y=t["density"].tolist(), mode="lines", name="sanitized density",
                                 line=dict(color=PRIVATE_COLOR, width=2.5)))
        fig.update_layout(xaxis_title=release.record.get("feature") or "x", yaxis_title="density")
    elif release.kind == "kde":
        x1, x2 = np.unique(t["x1"]), np.unique(t["x2"])
        z = t["density"].to_numpy().reshape(x1.size, x2.size)
        fig.add_trace(go.Heatmap(x=x1.tolist(), y=x2.tolist(), z=z.T.tolist(), colorscale="Viridis",
                                 name="sanitized density",
                                 colorbar=dict(title="density")))
        names = (release.record.get("feature") or "feature 1,feature 2").split(",")
        fig.update_layout(xaxis_title=names[0], yaxis_title=names[-1])
    elif release.kind == "covariance":
        grid = np.unique(t["t"])
        z = t["value"].to_numpy().reshape(grid.size, grid.size)
        fig.add_trace(go.Heatmap(x=grid.tolist(), y=grid.tolist(), z=z.tolist(), colorscale="RdBu_r", zmid=0.0,
                                 name="sanitized covariance", colorbar=dict(title="C~(s, t)")))
        fig.update_layout(xaxis_title="t", yaxis_title="s")
    else:
        for column in [c for c in t.columns if c != "t"]:
            fig.add_trace(go.Scatter(x=t["t"].tolist(), y=t[column].tolist(), mode="lines", name=column))
        fig.update_layout(xaxis_title="t", yaxis_title="value")
    return _finish_layout(fig, title=f"Sanitized release: {html.escape(release.label)}", height=420)


def tradeoff_figure(release: CommittedRelease) -> go.Figure:
    """Expected error against epsilon for the chosen mechanism, chosen point marked."""
    tr = release.tradeoff
    fig = go.Figure(go.Scatter(x=tr["epsilon"], y=tr["expected_sq_l2_error"], mode="lines",
                               name=release.entry.mechanism, line=dict(color=PRIVATE_COLOR, width=2)))
    # The ledger charges what the exact sampler's privacy map reports (e.g. 1.092 for a discrete
    # Gaussian calibrated at epsilon = 1): the chart names the charged value, not the nominal one.
    charged = release.entry.epsilon
    nominal = tr["chosen_epsilon"]
    name = f"this release: charged epsilon = {charged:.4g}"
    if not math.isclose(charged, nominal, rel_tol=1e-9):
        name += f" (noise calibrated at epsilon = {nominal:g})"
    fig.add_trace(go.Scatter(x=[nominal], y=[tr["chosen_error"]], mode="markers",
                             marker=dict(size=13, color="#d62728", symbol="star"), name=name))
    fixed = ", ".join(f"{k} = {v:g}" for k, v in tr.get("fixed", {}).items())
    return _finish_layout(fig, title="Accuracy against privacy" + (f" ({fixed})" if fixed else ""),
                          xaxis=dict(title="epsilon used to calibrate the noise (log scale)", type="log"),
                          yaxis=dict(title="expected squared L2 error (log scale)", type="log"), height=400,
                          legend=dict(orientation="h", yanchor="top", y=-0.25))


def power_figure(release: CommittedRelease | None, ledger: Ledger | None = None) -> go.Figure:
    """Hypothesis-testing view: the best adversary's power against its false-positive rate."""
    alpha = np.linspace(0.0, 1.0, 201)
    fig = go.Figure(go.Scatter(x=alpha.tolist(), y=alpha.tolist(), mode="lines", name="random guessing",
                               line=dict(color="grey", dash="dot")))
    if release is not None:
        fig.add_trace(go.Scatter(x=alpha.tolist(), y=entry_power(release.entry, alpha).tolist(), mode="lines",
                                 name="this release", line=dict(color=PRIVATE_COLOR, width=2.5)))
    if ledger is not None and ledger.entries:
        report = ledger.composition()
        if report.best is not None:
            fig.add_trace(go.Scatter(x=alpha.tolist(), y=ledger_power(ledger, alpha).tolist(), mode="lines",
                                     name=f"all {len(ledger.entries)} release(s) of the session ({report.best.method})",
                                     line=dict(color="#ff7f0e", width=2, dash="dash")))
    return _finish_layout(fig, title="How well can an adversary tell whether a person is in the data?",
                          xaxis=dict(title="false-positive rate (non-members wrongly accused)", range=[0, 1]),
                          yaxis=dict(title="power (members correctly detected), at most", range=[0, 1.02]),
                          height=420, legend=dict(orientation="h", yanchor="top", y=-0.2))


# --------------------------------------------------------------------------- the HTML report

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;max-width:1000px;
margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em} h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.warn{background:#fdecea;border-left:5px solid #d62728;padding:.6em 1em;font-weight:600}
.ok{background:#eef6ee;border-left:5px solid #2ca02c;padding:.6em 1em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0;max-width:100%} td,th{border:1px solid #ccc;
padding:.25em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere} .small{font-size:.85em;color:#555}
"""


def _rows(pairs) -> str:
    return "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_fmt_value(v))}</td></tr>" for k, v in pairs)


def _fmt_value(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, default=str)
    return str(v)


def _frame_html(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt_value(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f"<table><tr>{head}</tr>{body}</table>"


def report_html(release: CommittedRelease, ledger: Ledger | None = None) -> str:
    """A self-contained HTML report (plotly.js inline: opens offline); sanitized output only."""
    r = release.record
    figures = [release_figure(release), power_figure(release, ledger)]
    if release.tradeoff:
        figures.insert(1, tradeoff_figure(release))
    plots = [fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False},
                         div_id=f"fdp-figure-{i}") for i, fig in enumerate(figures)]
    tradeoff_html = ("<p class='small'>Radii of the noise law (data-free), for the exact noise scales used. The "
                     "trade-off below is the closed-form expected error of this mechanism at other values of epsilon, "
                     f"everything else fixed.</p>{plots[1]}") if release.tradeoff else ""
    power_plot = plots[-1]
    statement = "".join(f"<p>{html.escape(p)}</p>" for p in privacy_statement(release))
    seen = r.get("looked_at_before_commit") or [NOTHING_DECLARED]
    if seen == [PRE_REGISTERED]:
        process = "<p class='ok'>Pre-registered: the settings were fixed before the data were loaded.</p>"
    else:
        process = ("<p>Before this commit the session looked at: " + html.escape("; ".join(seen)) + ". Settings "
                   "chosen after looking at non-private views of the data can leak information that the guarantee "
                   "below does not cover; a pre-registered replay (<code>python -m fdp_core replay</code>) avoids "
                   "this.</p>")
    banner = (f"<p class='warn'>{html.escape(NOT_DP_WARNING)}: {html.escape('; '.join(release.flags))}</p>"
              if release.flags else "") + process
    sampler = r.get("noise_sampler", {})
    params = [("mechanism", r.get("mechanism")), ("kind", release.kind),
              ("unit of privacy", r.get("unit_of_privacy")),
              ("n (persons, " + str(r.get("n_policy") or "declared public") + ")", r.get("n")),
              ("public value range", r.get("value_range")),
              ("epsilon (mechanism calibration)", r.get("epsilon")), ("delta", r.get("delta")),
              ("tau (L2 norm bound)", r.get("tau")), ("sensitivity", r.get("sensitivity")),
              ("sigma", r.get("sigma")), ("bound", r.get("bound")), ("calibration", r.get("calibration")),
              ("charged to the ledger", r.get("charged")), ("expected squared L2 error", r.get("expected_sq_l2_error"))]
    if release.kind in ("mean", "pca") + SUMMARY_COMMIT_KINDS:
        params.append(("settings", r.get("settings")))
    else:
        params += [("feature", r.get("feature")), ("box", r.get("box")), ("bandwidth", r.get("bandwidth"))]
    sampler_rows = [("sampler", sampler.get("sampler")), ("OpenDP version", sampler.get("opendp_version")),
                    ("entropy", sampler.get("entropy")), ("grid 2^k, k =", sampler.get("granularity_exp")),
                    ("noisy coefficients", sampler.get("n_noisy_coefficients")),
                    ("scaled sensitivity (before inflation)", sampler.get("scaled_sensitivity")),
                    ("sensitivity inflation: float allowance + grid rounding",
                     f"{sampler.get('float_allowance', 0):.3g} + {sampler.get('rounding_inflation', 0):.3g}"),
                    ("unit noise scale (inflation applied)", sampler.get("unit_noise_scale")),
                    ("privacy map", f"epsilon = {sampler.get('epsilon')}" if sampler.get("epsilon") is not None
                     else f"rho = {sampler.get('rho')}"),
                    ("post-processing", sampler.get("post_processing"))]
    hardening = r.get("hardening_note")
    ledger_html = ""
    if ledger is not None:
        report = ledger.composition()
        ledger_html = (f"<h2>Session ledger</h2><p>Total budget: epsilon {ledger.epsilon_total:g}, delta "
                       f"{ledger.delta_total:g} ({html.escape(ledger.filter)} filter). "
                       f"{len(ledger.entries)} release(s) committed.</p>" + _frame_html(
                           ledger_table(ledger).drop(columns=["sampler"])) + _frame_html(composition_table(report))
                       + "".join(f"<p class='small'>{html.escape(n)}</p>" for n in report.notes)
                       + (f"<p class='warn'>Approximate releases, nominal total (not a DP claim): epsilon "
                          f"{report.approximate_nominal.epsilon:.4g}, delta {report.approximate_nominal.delta:.3g}</p>"
                          if report.approximate_nominal is not None else ""))
    versions = r.get("library_versions", {})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fdp release report: {html.escape(release.label)}</title>
<style>{_CSS}</style></head><body>
<h1>Differentially private release: {html.escape(release.label)}</h1>
<p class="small">Release {html.escape(release.id)}, created {html.escape(str(r.get('created_utc')))} with fdp
{html.escape(str(versions.get('fdp_core', __version__)))}. Data: {html.escape(str(r.get('data', {}).get('label') or
'-'))}. This report contains the sanitized output only: no data and no non-private estimate.</p>
{banner}
<h2>Privacy statement</h2>{statement}
<h2>Sanitized output</h2>{plots[0]}
<h2>Accuracy</h2><p>{html.escape(release.accuracy)}</p>{tradeoff_html}
<h2>Risk as hypothesis testing</h2><p>An adversary who sees the release tries to decide whether a given person's
data were used. Differential privacy caps the power of every such test at each false-positive rate; the curve
shows the cap. The closer to the diagonal (guessing), the better the protection.</p>{power_plot}
<h2>Parameters</h2><table>{_rows(params)}</table>
<h2>Noise generation</h2><table>{_rows(sampler_rows)}</table>
{f"<p class='warn'>{html.escape(hardening)}</p>" if hardening else ""}
<p class="small">{html.escape(ON_GRID_NOTE)}</p>
{ledger_html}
<h2>Provenance</h2><table>{_rows(sorted(versions.items()))}</table>
<p class="small">Replay with the same settings and fresh noise:
<code>python -m fdp_core replay config.yaml --data YOUR_FILE</code>.</p>
</body></html>
"""


# --------------------------------------------------------------------------- bundle: zip (app) or folder (CLI)

def config_yaml(config: Mapping) -> str:
    return yaml.safe_dump(json.loads(to_json(dict(config))), sort_keys=False, default_flow_style=False)


def bundle_files(release: CommittedRelease, ledger: Ledger | None = None) -> dict[str, bytes]:
    """Every exported file by name (BUNDLE_FILES), as bytes."""
    record = dict(release.record)
    if ledger is not None:
        record["ledger_at_export"] = ledger_state(ledger)
    files = {
        "release.csv": _csv_text(release.table),
        "coefficients.csv": _csv_text(release.coefficients),
        "release.json": to_json(record),
        "config.yaml": config_yaml(release.config),
        "ledger.json": to_json(ledger.to_dict() if ledger is not None else {}),
        "report.html": report_html(release, ledger),
        # Re-run the same release on a data file (fresh noise, through a ledger) and draw the figures.
        rerun.SCRIPT_NAME: rerun.script_text(release.id, release.label, record.get("data", {}).get("label")),
        rerun.NOTEBOOK_NAME: rerun.notebook_text(release.id, release.label, record.get("data", {}).get("label")),
    }
    return {name: text.encode("utf-8") for name, text in files.items()}


def export_zip(release: CommittedRelease, ledger: Ledger | None = None) -> bytes:
    """The bundle as a zip archive in memory (one folder fdp_release_<id>/ inside)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, content in bundle_files(release, ledger).items():
            archive.writestr(f"fdp_release_{release.id}/{name}", content)
    return buffer.getvalue()


def analyst_view_json(release: CommittedRelease) -> bytes:
    """analyst_view.json of a commit: NOT publishable (marked so inside); never part of the zip."""
    return to_json(analyst_record({"release_id": release.id, "kind": release.kind, **release.analyst})).encode("utf-8")


def export_folder(release: CommittedRelease, out_dir, ledger: Ledger | None = None, *,
                  include_analyst_view: bool = False) -> Path:
    """Write the bundle into ``out_dir`` (created); temporary names first, renamed at the end.

    ``include_analyst_view`` adds analyst_view.json (not for publication) beside the bundle's
    files, as every CLI command does; the zip of :func:`export_zip` never contains it.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = bundle_files(release, ledger)
    if include_analyst_view:
        files = {**files, ANALYST_VIEW_FILE: analyst_view_json(release)}
    for name, content in files.items():
        (out / f".{name}.tmp").write_bytes(content)
    for name in files:
        (out / f".{name}.tmp").replace(out / name)
    return out


# --------------------------------------------------------------------------- replay

_CONFIG_KEYS = {"schema", "kind", "settings", "data", "export", "budget", "replays"}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _mapping(config: Mapping, key: str, required: bool = True) -> dict:
    value = config.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise ParameterError(f"config: '{key}' must be a mapping (key: value lines), got {type(value).__name__}")
    return dict(value)


def parse_config(source) -> dict:
    """Read and validate a replay config (a path, YAML text or a mapping); returns the mapping.

    Raises ParameterError with a one-line message on anything malformed.
    """
    if isinstance(source, Mapping):
        config = dict(source)
    else:
        text = Path(source).read_text() if isinstance(source, Path) or (
            isinstance(source, str) and "\n" not in source and Path(source).exists()) else str(source)
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ParameterError(f"config is not valid YAML: {_one_line(exc)}") from None
    if not isinstance(config, Mapping):
        raise ParameterError("config must be a YAML mapping written by fdp's export (config.yaml)")
    if config.get("schema") != CONFIG_SCHEMA:
        raise ParameterError(f"config schema must be '{CONFIG_SCHEMA}', got {config.get('schema')!r}")
    unknown = sorted(set(config) - _CONFIG_KEYS)
    if unknown:
        raise ParameterError(f"config: unknown key(s) {', '.join(map(str, unknown))}")
    if config.get("kind") not in supported_kinds():
        raise ParameterError(f"config: kind must be one of {', '.join(supported_kinds())}, got {config.get('kind')!r}")
    settings = _mapping(config, "settings")
    data = _mapping(config, "data", required=False)
    if data.get("missing", "drop") not in MISSING_POLICIES:
        raise ParameterError(f"config: data.missing must be one of {', '.join(MISSING_POLICIES)}, "
                             f"got {data.get('missing')!r}")
    if config["kind"] == "kde" and not isinstance(data.get("feature"), str):
        raise ParameterError("config: a kde config needs data.feature (e.g. 'l2norm' or 'value:0.5')")
    export = _mapping(config, "export", required=False)
    k = export.get("granularity_exp", DEFAULT_GRANULARITY_EXP)
    if isinstance(k, bool) or not isinstance(k, int):
        raise ParameterError(f"config: export.granularity_exp must be an integer, got {k!r}")
    budget = _mapping(config, "budget")
    _settings_object(config["kind"], settings)
    _budget_ledger(budget)
    return {**config, "settings": settings, "data": data, "export": export, "budget": budget}


def _settings_object(kind: str, settings: dict):
    if kind in SUMMARY_COMMIT_KINDS:
        from .commit_summaries import settings_from_config

        try:
            return settings_from_config(kind, settings)
        except TypeError as exc:
            raise ParameterError(f"config: bad settings for a {kind} release ({_one_line(exc)})") from None
    if kind == "mean":
        cls = MeanSettings
    else:
        cls = _kde_module().KdeSettings if kind == "kde" else _pca_module().PcaSettings
    settings = dict(settings)
    # YAML gives lists; the settings are frozen (hashable) dataclasses: back to tuples.
    if isinstance(settings.get("value_range"), list):
        settings["value_range"] = tuple(settings["value_range"])
    if isinstance(settings.get("reference"), list):
        settings["reference"] = tuple(tuple(p) if isinstance(p, list) else p for p in settings["reference"])
    try:
        obj = cls(**settings)
    except TypeError as exc:
        raise ParameterError(f"config: bad settings for a {kind} release ({_one_line(exc)})") from None
    if kind == "kde":
        return replace(obj, box=_kde_module().check_box(obj.box))
    if kind == "pca":
        if obj.epsilon_split is not None:
            if not isinstance(obj.epsilon_split, (list, tuple)):
                raise ParameterError("config: settings.epsilon_split must be a list of numbers")
            obj = replace(obj, epsilon_split=tuple(obj.epsilon_split))
        if obj.centring == "released-mean":
            raise ParameterError("config: a PCA centred by a released mean cannot be replayed from a file (the "
                                 "released mean is not part of the data); replay the mean and commit the PCA in "
                                 "the app")
    return obj.validated()


def _budget_ledger(budget: dict) -> Ledger:
    unknown = sorted(set(budget) - {"epsilon_total", "delta_total", "filter", "split", "name"})
    if unknown:
        raise ParameterError(f"config: unknown budget key(s) {', '.join(unknown)}")
    if "epsilon_total" not in budget or "delta_total" not in budget:
        raise ParameterError("config: budget needs epsilon_total and delta_total")
    return Ledger(budget["epsilon_total"], budget["delta_total"], budget.get("split"), budget.get("filter", "basic"))


def replay(config, data, *, data_label: str | None = None, ledger=None) -> tuple[CommittedRelease, Ledger]:
    """Commit a new release with a config's settings on ``data`` (path, bytes or FunctionalData), fresh noise.

    ``ledger``: a :class:`fdp_core.ledger_store.StoredBudget` (the persistent budget of these
    data: the CLI's default), an in-memory Ledger, or None for a fresh in-memory ledger with
    the config's budget (then nothing outside this call knows about the release). A replay is
    a new release and spends budget of its own. Returns the release and the ledger after it.
    """
    config = parse_config(config)
    settings = _settings_object(config["kind"], config["settings"])
    missing = config["data"].get("missing", "drop")
    if isinstance(data, FunctionalData):
        fd, label = data, data_label or "array"
    else:
        fd = load_curves(data, missing=missing)
        label = data_label or (Path(data).name if isinstance(data, (str, Path)) else "data")
    ledger = ledger if ledger is not None else _budget_ledger(config["budget"])
    k = config["export"].get("granularity_exp")
    if config["kind"] in SUMMARY_COMMIT_KINDS:
        from .commit_summaries import replay_summary

        release = replay_summary(config["kind"], ledger, fd, settings,
                                 label=f"replay of {config.get('replays', 'a release')}", data_label=label,
                                 granularity_exp=k)
    elif config["kind"] == "mean":
        release = commit_mean(ledger, fd, settings, label=f"replay of {config.get('replays', 'a release')}",
                              data_label=label, granularity_exp=k, pre_registered=True)
    elif config["kind"] == "pca":
        release = commit_pca(ledger, fd, settings, label=f"replay of {config.get('replays', 'a release')}",
                             data_label=label, pre_registered=True)
    else:
        release = commit_kde(ledger, fd, config["data"]["feature"], settings,
                             label=f"replay of {config.get('replays', 'a release')}", data_label=label,
                             granularity_exp=k, pre_registered=True)
    return release, (ledger if isinstance(ledger, Ledger) else ledger.ledger())


def data_mismatch(config: Mapping, release: CommittedRelease) -> str | None:
    """A note when the replayed data differ in size from the original (not an error: a config may be reused)."""
    want = config.get("data", {}) or {}
    got = release.record.get("data", {})
    diffs = [f"{key} = {got.get(key)} (original {want[key]})" for key in ("n", "m")
             if want.get(key) is not None and got.get(key) is not None and want[key] != got[key]]
    return ("data differ from the original release: " + ", ".join(diffs)) if diffs else None


# --------------------------------------------------------------------------- audit of the chosen mean mechanism

@dataclass(frozen=True)
class MechanismAudit:
    """Black-box privacy-loss audit of a mean mechanism on a worst-case pair built from public parameters."""

    mechanism: str
    epsilon: float
    delta: float
    pair: str
    statistic: str
    result: AuditResult
    control: AuditResult
    control_factor: float


def _worst_case_pair(settings: MeanSettings, grid: np.ndarray, n: int) -> tuple[FunctionalData, FunctionalData,
                                                                                   str]:
    """Two data sets differing in one curve, chosen to (nearly) attain the sensitivity.

    Only public inputs: the grid, n and the settings. The other n - 1 curves are zero
    (ICLP-AR: a background curve that lifts the active coefficients above their
    soft-thresholds, so the difference is not thresholded away).
    """
    s = settings.validated()
    grid = np.asarray(grid, dtype=float)
    unit = _unit(grid)
    weights = np.asarray(FunctionalData(grid, np.zeros((1, grid.size))).weights)
    m = grid.size
    background = np.zeros(m)
    if s.mechanism == "bernstein":
        x, x_prime = np.full(m, float(s.hi)), np.full(m, float(s.lo))
        pair = "one curve at hi everywhere vs at lo everywhere (every lattice mean moves by (hi - lo)/n)"
    else:
        basis = eigenbasis(s.kernel, s.rho, unit, weights, nu=s.nu)
        lam, phi = basis.eigenvalues, basis.eigenfunctions
        tau = float(s.tau)
        if s.mechanism == "gaussian":
            direction = np.zeros(lam.size)
            direction[int(np.argmax(shrinkage(lam, s.eta, s.phi) ** 2 / lam))] = 1.0
            pair = "tau * phi_l vs -tau * phi_l at l = argmax s_l^2 / lambda_l (attains the tight bound)"
        elif s.mechanism == "iclp-qr":
            direction = shrinkage(lam, s.eta, s.psi) / np.sqrt(lam)
            pair = "+/- tau * a / ||a||, a_l = s_l / sqrt(lambda_l) (Cauchy-Schwarz equality case)"
        elif s.mechanism == "frl":
            direction = np.zeros(lam.size)
            direction[: int(s.M)] = 1.0
            pair = "+/- tau * (phi_1 + ... + phi_M) / sqrt(M) (attains the tight bound)"
        else:  # iclp-ar
            thresholds = s.psi / (2.0 * lam ** (s.eta / 2.0))
            active = np.flatnonzero(thresholds < tau)
            # Background curves sit just above the threshold on as many active components as
            # the tau ball allows (cheapest first), so the pair's difference passes unshrunk.
            lift = np.zeros(lam.size)
            budget = 0.49 * tau**2
            used = []
            for l in active[np.argsort(thresholds[active])]:
                need = (thresholds[l] + 2.0 * tau / n) * n / (n - 1)
                if need**2 > budget:
                    break
                lift[l], budget = need, budget - need**2
                used.append(l)
            background = phi @ lift
            direction = np.zeros(lam.size)
            direction[used or active[:1]] = 1.0 / np.sqrt(lam[used or active[:1]])
            pair = ("+/- tau * d / ||d||, d_l = lambda_l^(-1/2) on the lifted active components, over background "
                    "curves above the soft-thresholds (the CS bound is not attained in general)")
        x = tau * (phi @ (direction / np.linalg.norm(direction)))
        x_prime = -x
    rest = np.tile(background, (n - 1, 1))
    return (FunctionalData(grid, np.vstack([rest, x])), FunctionalData(grid, np.vstack([rest, x_prime])), pair)


def audit_mean_mechanism(settings: MeanSettings, grid, n: int, *, n_select: int = 50_000, n_test: int = 200_000,
                         alpha: float = 1e-6, seed: int = 0, control_factor: float = 0.9) -> MechanismAudit:
    """Audit the mean mechanism's calibration with :func:`fdp_core.audit.audit_pair`, plus a 0.9x control.

    The statistic is the likelihood-ratio direction of the pair in coefficient space
    (Gaussian: projection on (c - c') / b^2; Laplace: sum_l (|y_l - c'_l| - |y_l - c_l|) / b_l),
    computed from outputs only. The noise is drawn with the plan's numpy sampler
    (idealised arithmetic); the exact discrete sampler has its own conformance tests. The
    control runs the same audit with every noise scale multiplied by ``control_factor``.
    """
    if int(n) < 2:
        raise ParameterError("the audit needs n >= 2 curves")
    # The worst-case pair lives after the per-record transform (centred, person-level rows):
    # the mechanism and its sensitivity are the same, so audit it without the range and persons.
    if settings.mechanism == "bernstein":
        lo, hi = settings.bernstein_range
        settings = replace(settings, lo=lo, hi=hi)
    if settings.tau is None and settings.value_range is not None:
        settings = replace(settings, tau=settings.bounds.default_tau(np.asarray(grid, dtype=float)))
    settings = replace(settings, value_range=None, reference=None, person_column=None, n_public=None)
    if settings.tau_from_data:
        raise ParameterError("the audit needs a public tau (tau from the data is not DP: nothing to audit)")
    d, d_prime, pair = _worst_case_pair(settings, grid, int(n))
    plan, plan_prime = plan_mean_release(d, settings), plan_mean_release(d_prime, settings)
    if not np.allclose(plan.noise_scales, plan_prime.noise_scales, rtol=1e-12, atol=0):
        raise RuntimeError("noise scales depend on the data: the audit pair is not comparable")
    c, c_prime, b = plan.estimate_coefficients, plan_prime.estimate_coefficients, plan.noise_scales
    active = b > 0
    gaussian = plan.noise == "gaussian"
    delta = settings.delta if gaussian else 0.0

    def statistic(y):
        if gaussian:
            t = (y[:, active] - (c + c_prime)[active] / 2.0) @ ((c - c_prime)[active] / b[active] ** 2)
        else:
            t = (np.abs(y[:, active] - c_prime[active]) - np.abs(y[:, active] - c[active])) @ (1.0 / b[active])
        # Rounded to 1e-9: the Laplace statistic has atoms at +/- epsilon whose last-bit rounding
        # differs between the two centres; an event cut through an atom would audit numpy's
        # floating-point artefacts (Mironov 2012, why exports use the exact sampler), not the calibration.
        return np.round(t, 9)

    def sampler(center, factor):
        def draw(rng, size):
            return statistic(center + factor * plan.noise_coefficients(rng, size))
        return draw

    def run(factor):
        return audit_pair(sampler(c, factor), sampler(c_prime, factor), settings.epsilon, delta, n_select=n_select,
                          n_test=n_test, alpha=alpha, seed=seed, chunk=50_000)

    stat = ("likelihood-ratio projection (Gaussian)" if gaussian else
            "Laplace log-likelihood ratio sum_l (|y_l - c'_l| - |y_l - c_l|) / b_l")
    return MechanismAudit(settings.mechanism, settings.epsilon, delta, pair, stat, run(1.0), run(control_factor),
                          control_factor)


def supported_kinds() -> tuple[str, ...]:
    """Kinds a commit supports in this installation (PCA when its library module exists)."""
    from importlib.util import find_spec

    return tuple(k for k in KINDS if k != "pca" or find_spec(f"{__package__}.pca") is not None) + SUMMARY_COMMIT_KINDS
