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
y_l is computed to within 2^(k+2); :func:`granularity_for` raises k (coarser grid, a little
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

import math
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata as _metadata

import numpy as np
import pandas as pd

from ..budget.accounting import Ledger, LedgerEntry, discrete_entry
from ..releases.box import check_box
from ..data.loading import FunctionalData, unit_interval
from ..explore.epsilon_tradeoff import kde_epsilon_errors, mean_epsilon_errors
from ..errors import ParameterError
from ..params import short_repr
from .release import numeric_csv
from ..kernels import eigenbasis
from ..releases.mean import MECHANISM_LABELS, MeanRelease, MeanSettings, plan_mean_release
from ..releases.mean import release_record as mean_release_record
from ..releases.estimators import shrinkage
from .views import NONPRIVATE_VIEWS  # noqa: F401 (defined in a light module for the app; named here by export)
from ..mechanisms.families import NoiseFamily, noise_family
from ..mechanisms.discrete import DEFAULT_GRANULARITY_EXP, DiscretePlan
from ..releases.mean import analyst_view as mean_analyst_view
from ..releases.postprocess import finish_density, finish_mean
from ..data.preprocess import file_persons
from ..registry import mean_mechanism
from ..registry.kde import kde_mechanism
from ..registry.pca import pca_sampler
from .release import library_versions, provenance_stamp
# The commit protocol's steps (reserve -> draw -> write -> complete) live in protocol.py.
from .protocol import CommitRequest, PendingCommit, Quote, Steps, quote_of, run_steps
from ..settings_fields import config_of
from ..data.stand_in import SEALED, all_on_stand_in
from ..releases import kde, pca
from ..data.features import features_label, person_features

CONFIG_SCHEMA = "fdp.replay/1"
# Covariance and regression commits live in commit_summaries.py (exact discrete noise, same path).
SUMMARY_COMMIT_KINDS = ("covariance", "regression")
RELEASE_SCHEMA = "fdp.release/1"
BUNDLE_FILES = ("release.csv", "coefficients.csv", "release.json", "config.yaml", "ledger.json", "report.html",
                "release.py", "release.ipynb", "README.txt")
ON_GRID_NOTE = ("coefficients.csv: unit_value = the exact discrete sampler's output, an integer multiple of "
                "2^granularity_exp (shortest round-trip decimal, read back bit-exactly); value = noise_scale * "
                "unit_value. release.csv is the floating-point synthesis of these coefficients on the data grid: "
                "post-processing, same guarantee, not itself on the 2^k grid.")
COMMIT_RANDOMNESS = ("fresh OS entropy (OpenSSL RAND_bytes inside OpenDP); exact discrete sampler; no seed: "
                     "the noise cannot be reproduced")
NOT_DP_WARNING = "data-dependent: this release is NOT differentially private"
# The float error of computing y = c / b must stay within 2^(k+2) (discrete.py's allowance);
# the bound below is kept within 2^(k+1), leaving room for the division's own rounding.
UNIT_ROUNDOFF = 2.0**-53
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

    @property
    def part_entries(self) -> tuple:
        """Every ledger entry this release charged: ``record["part_entries"]`` when it has several parts
        (A and b of a sparse mean), else ``(entry,)``; ``entry`` is then one part only."""
        parts = self.record.get("part_entries")
        return tuple(LedgerEntry.from_dict(d) for d in parts) if parts else (self.entry,)

    @property
    def accuracy_figures(self) -> dict:
        """The accuracy as numbers (``accuracy`` is the sentence): the release record's expected
        squared L2 error and 95% radii (None where a kind has none, e.g. components)."""
        names = ("expected_sq_l2_error", "l2_error_radius_95", "sup_error_radius_95")
        return {name: self.record.get(name) for name in names}

    def __repr__(self) -> str:
        charged = sum(e.epsilon for e in self.part_entries)
        return short_repr("CommittedRelease", kind=self.kind, id=self.id, mechanism=self.entry.mechanism,
                          epsilon_charged=float(charged), **{k: v for k, v in self.accuracy_figures.items()
                                                             if isinstance(v, float)})


def granularity_for(error_bound: float, requested: int | None) -> int:
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


def discrete_plan(family: NoiseFamily, n: int, scaled_sensitivity: float, k: int) -> DiscretePlan:
    """The exact discrete sampler's privacy for n coefficients on the 2^k grid, before any draw."""
    return family.discrete_plan(n, scaled_sensitivity=scaled_sensitivity, granularity_exp=k)


# Settings computed from the data without noise: a release using them is not differentially
# private, so the publication paths (commit, replay) refuse them; they stay in exploration.
DATA_DEPENDENT_SETTINGS = ("tau_from_data", "data_dependent_bandwidth")


def refuse_data_dependent(settings, where: str = "a commit") -> None:
    """ParameterError when ``settings`` (a mapping or a settings object) use a data-dependent setting."""
    get = settings.get if isinstance(settings, dict) else (lambda key: getattr(settings, key, None))
    used = [key for key in DATA_DEPENDENT_SETTINGS if get(key) is True]
    if used:
        raise ParameterError(f"{where} refuses data-dependent settings ({', '.join(used)}: the release would NOT be "
                             "differentially private); they are for exploration only: declare a public value "
                             "instead (tau or a value range, a bandwidth)")


def _coefficient_table(pending: PendingCommit, record, full: np.ndarray, index_columns: dict) -> pd.DataFrame:
    unit = np.zeros(pending.active.shape)
    unit[pending.active] = record.unit_values
    scales = np.zeros(pending.active.shape)
    scales[pending.active] = pending.scales
    return pd.DataFrame({**index_columns, "noisy": pending.active, "noise_scale": scales, "unit_value": unit,
                         "value": full})


def csv_text(frame: pd.DataFrame) -> str:
    """CSV with shortest round-trip floats (repr), so grid values are read back bit-exactly."""
    if all(frame[c].dtype == np.float64 or frame[c].dtype.kind in "iub" for c in frame.columns):
        fast = numeric_csv(frame, nan="nan")  # the same text, without pandas' writer (10^6-row surfaces)
        if fast is not None:
            return fast
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
NOTHING_DECLARED = ("not declared: the caller did not say what was looked at before this commit (the settings may "
                    "have been chosen after looking at the data)")


def looked_at_field(looked_at=None, *, pre_registered: bool = False, sealed: bool = False) -> list[str]:
    """What the session looked at before committing, as the report states it.

    ``looked_at``: the non-private views shown (e.g. "non-private mean overlay", "norms
    histogram", "PCV optimum"); ``pre_registered``: the settings came from a file fixed before
    the data were loaded (replay of a config). Without either, the record says nothing was
    declared rather than claiming that nothing was looked at. ``sealed``: sealed mode (issue 29);
    honoured only when every recorded view was computed on the public stand-in.
    """
    seen = [str(x) for x in dict.fromkeys(looked_at or ())]
    if sealed and all_on_stand_in(seen):
        return [SEALED]
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


def common_record(pending: PendingCommit, record, ledger: Ledger, *, label: str, data_label: str) -> dict:
    """The record fields every exact discrete commit shares: sampler, ledger entry, arithmetic, labels."""
    sampler = record.to_dict()
    sampler.pop("unit_values")
    sampler.pop("scales")
    sampler.update(n_noisy_coefficients=int(pending.active.sum()), n_coefficients=int(pending.active.size),
                   coefficient_noise=pending.family.name, float_error_bound_unit_scale=pending.float_error_bound,
                   scaled_sensitivity_meaning=(
                       "mu = Delta / sigma: L2 sensitivity of coefficients / noise sd" if pending.family.uses_delta
                       else "epsilon: l1 sensitivity of coefficients / Laplace scales"))
    return _base_record(pending.kind, pending.entry, sampler, ledger, label=label, data_label=data_label,
                        arithmetic="exact discrete sampler on a 2^k grid (OpenDP); the released curve is "
                                   "floating-point post-processing of the grid coefficients",
                        on_grid=ON_GRID_NOTE)


def budget_config(ledger: Ledger) -> dict:
    """The replay config's ``budget`` block: the ledger's totals, filter, split and stored budget name."""
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
    mechanism = mean_mechanism(s.mechanism)
    if not mechanism.basis.kernel:  # Bernstein's lattice
        lo, hi = s.bernstein_range
        return (terms + 4) * UNIT_ROUNDOFF * max(abs(lo), abs(hi)) / b
    r = np.ones(plan.noise_scales.size)
    if mechanism.quadratic_penalty:
        lam = eigenbasis(s.kernel, s.rho, unit_interval(plan.grid_points), plan.weights, nu=s.nu).eigenvalues
        r = shrinkage(lam, s.eta, getattr(s, mechanism.penalty))
    return (plan.m + terms + 20) * UNIT_ROUNDOFF * plan.tau * r[active] / b


def missing_policy(fd: FunctionalData) -> str:
    """The missing-value policy to replay with: "interpolate" when the load interpolated any value."""
    return "interpolate" if fd.report.n_interpolated else "drop"


def load_section(fd: FunctionalData) -> dict:
    """How to load the data again for a replay: the missing-value policy and the declared public grid
    (A, B, M) when the curves were interpolated onto one (METHODS.md 24)."""
    section = {"missing": missing_policy(fd)}
    if fd.report.public_grid is not None:
        a, b, m = fd.report.public_grid
        section["grid"] = [float(a), float(b), int(m)]
    return section


def prepare_mean_commit(fd: FunctionalData, settings: MeanSettings, *, label: str = "",
                        granularity_exp: int | None = None, plan: MeanRelease | None = None) -> PendingCommit:
    """Plan a mean commit and its ledger entry; draws nothing.

    Coefficient noise is independent per coefficient with the plan's ``noise_scales``
    (Gaussian: sigma sqrt(lambda_l), scaled sensitivity mu = Delta / sigma; Laplace types:
    b_l calibrated for epsilon, scaled sensitivity epsilon). Coefficients whose scale is 0
    (ICLP-AR's inactive components) are exact zeros for every data set and get no noise.
    ``plan``: the plan of ``fd`` with ``settings`` when the caller already made it (a band's mean part).
    """
    plan = plan if plan is not None else plan_mean_release(fd, settings)
    s = plan.settings
    active = plan.noise_scales > 0
    if not active.any():
        raise ParameterError("this release has no noisy coefficient (every component is an exact zero): "
                             "nothing to commit; lower psi or raise tau")
    if np.any(plan.estimate_coefficients[~active] != 0):
        raise RuntimeError("a coefficient without noise is not an exact zero: refusing (it would leak the data)")
    family = noise_family(plan.noise)
    d_in = family.scaled_sensitivity(plan.sensitivity, plan.sigma, s.epsilon)
    bound = float(np.max(_mean_float_error_bound(plan)))
    k = granularity_for(bound, granularity_exp)
    noise_plan = discrete_plan(family, int(active.sum()), d_in, k)
    entry = discrete_entry(noise_plan, "mean", s.mechanism, delta=family.delta_or_none(s.delta),
                                    sensitivity=plan.sensitivity, sensitivity_norm=plan.guarantee.sensitivity_norm,
                                    label=label or f"mean, {MECHANISM_LABELS[s.mechanism]}")
    return PendingCommit("mean", s.mechanism, family, plan, noise_plan, entry, plan.estimate_coefficients[active],
                         plan.noise_scales[active], active, float(d_in), bound)


def mean_tradeoff(fd: FunctionalData, settings: MeanSettings, n_points: int = 31,
                  plan: MeanRelease | None = None) -> dict:
    """Expected squared L2 error against epsilon (closed form, from one plan).

    The error of every mean mechanism depends on n, tau and the public settings only (not
    on the data values), so the curve is publishable. delta stays fixed for the Gaussian
    mechanism; epsilons a calibration refuses (classical, epsilon > 1) are left out.
    ``plan``: the release already planned with ``settings`` (a commit passes its own), else
    planned here; the other epsilons rescale its noise (fdp_core/explore/epsilon_tradeoff.py).
    """
    chosen = plan if plan is not None else plan_mean_release(fd, settings)
    eps, err = mean_epsilon_errors(chosen, n_points)
    return {"parameter": "epsilon", "epsilon": eps, "expected_sq_l2_error": err,
            "chosen_epsilon": float(settings.epsilon), "chosen_error": chosen.expected_sq_l2_error,
            "metric": "expected squared L2 distance to the non-private estimate (closed form)",
            "fixed": ({"delta": settings.delta} if mean_mechanism(settings.mechanism).uses_delta else {})}


def _accuracy_sentence(l2: float, sup: float | None, what: str = "the non-private estimate") -> str:
    text = f"With 95% probability the release is within {l2:.4g} of {what} in L2 norm"
    if sup is not None:
        text += f"; pointwise, the largest deviation stays below {sup:.4g} with 95% probability"
    return text + "."


def _refuse(request: CommitRequest) -> None:
    refuse_data_dependent(request.settings)  # before anything is planned, charged or drawn


def _quote_mean(request: CommitRequest) -> Quote:
    return quote_of([prepare_mean_commit(request.data, request.settings, label=request.label,
                                         granularity_exp=request.granularity_exp)])


def _build_mean(request: CommitRequest, quote: Quote, draws, ledger: Ledger) -> CommittedRelease:
    """The mean's publishable record from its one drawn part (post-processing only)."""
    fd, data_label, looked_at, pre_registered = (request.data, request.data_label, request.looked_at,
                                                 request.pre_registered)
    pending = quote.pendings[0]
    full, noise, _ = draws[0]
    plan: MeanRelease = pending.plan
    # The public centre added back, then the free projection onto the public range (post-processing).
    finished = finish_mean(plan.offset + plan.synthesis @ full, plan.settings)
    values = finished.values
    c = noise.unit_noise_scale
    l2, sup = plan.l2_error_radius(0.95) * c, plan.sup_error_radius(0.95) * c
    record = mean_release_record(plan, values)
    record.update(common_record(pending, noise, ledger, label=pending.entry.label, data_label=data_label))
    record.update(expected_sq_l2_error=plan.expected_sq_l2_error * c * c, l2_error_radius_95=l2,
                  sup_error_radius_95=sup, accuracy=_accuracy_sentence(l2, sup))
    record["data"].update(n=plan.n, m=plan.m, grid=("the data file's grid (column t)" if fd.report.public_grid is None
                                                    else "the declared public grid (column t)"))
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    basis = mean_mechanism(plan.settings.mechanism).basis
    record["noise_sampler"]["post_processing"] = basis.synthesis_note
    table = pd.DataFrame({"t": plan.grid_points, "value": values})
    index = basis.index(full.size)
    config = {"schema": CONFIG_SCHEMA, "kind": "mean", "settings": config_of(plan.settings),
              "data": {**load_section(fd), "label": data_label, "n": plan.n, "m": plan.m},
              "export": {"granularity_exp": pending.noise_plan.granularity_exp},
              "budget": budget_config(ledger), "replays": pending.entry.id}
    analyst = {**mean_analyst_view(plan), "committed_noise_l2_radius_95": l2, **finished.analyst_fields(plan.weights)}
    return CommittedRelease("mean", pending.entry, record, table, _coefficient_table(pending, noise, full, index),
                            config, mean_tradeoff(fd, plan.settings, plan=plan), record["accuracy"], analyst)


# The mean's steps in the commit protocol (fdp_core/publish/protocol.py; its kind: fdp_core/publish/kinds.py).
MEAN_STEPS = Steps(quote=_quote_mean, build=_build_mean, check=_refuse)


def commit_mean(ledger, fd: FunctionalData, settings: MeanSettings, *, label: str = "",
                data_label: str = "", granularity_exp: int | None = None,
                pending: PendingCommit | None = None, looked_at=None, pre_registered: bool = False) -> CommittedRelease:
    """Commit one sanitized mean: check the budget, draw exact discrete noise, record, describe.

    ``ledger``: an in-memory :class:`Ledger` or a persistent
    :class:`fdp_core.budget.ledger_store.StoredBudget` (charged in one locked transaction before
    the draw; the caller marks the entry complete once the release is written). Raises
    BudgetError (nothing drawn, nothing recorded) when the release does not fit. A thin wrapper of
    the commit protocol (:func:`fdp_core.publish.protocol.run_steps` with :data:`MEAN_STEPS`).

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (a stored one is completed by the caller once written).
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : MeanSettings
    label, data_label : str
        The ledger entry's label and the data set's name in the report.
    granularity_exp : int, optional
        The exact discrete sampler's grid 2^k (default: the finest that covers the float error).
    looked_at : sequence, optional
        What the session looked at before committing (stated in the report).
    pre_registered : bool
        The settings were fixed before looking at the data.

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
    >>> release = commit_mean(ledger, fd, fdp.MeanSettings(value_range=(0, 1)))
    >>> release.kind, release.table.columns.tolist()
    ('mean', ['t', 'value'])
    """
    request = CommitRequest(fd, settings, label=label, data_label=data_label, granularity_exp=granularity_exp,
                            looked_at=looked_at, pre_registered=pre_registered)
    return run_steps(MEAN_STEPS, ledger, request, None if pending is None else quote_of([pending]))


# --------------------------------------------------------------------------- density (KDE)

def prepare_kde_commit(fd: FunctionalData, feature: str, settings, *, label: str = "",
                       granularity_exp: int | None = None) -> PendingCommit:
    """Plan a density commit (a per-curve feature or column, :mod:`fdp_core.data.features`); draws nothing.

    The mechanism's registry entry (fdp_core/registry/kde.py) gives the coefficients to release
    and their independent noise scales (Hall: c = U^T f in the Gram matrix's eigenbasis, sd
    sigma sqrt(lambda~_j); ICLP: the unit-coordinate eigen-coefficients, Laplace scales b_l) and
    the float-error bound; the noise family gives the scaled sensitivity (mu = Delta / sigma
    for Gaussian noise, epsilon for Laplace noise calibrated for it).
    """

    obs = person_features(fd, feature, settings.box, person_column=settings.person_column,
                          value_range=settings.value_range, n_public=settings.n_public)
    points, features = obs.points, obs.features
    plan = kde.plan_kde_release(obs, settings)
    mechanism = kde_mechanism(plan.mechanism)
    family = mechanism.family
    pieces = mechanism.commit_pieces(plan)
    d_in = family.scaled_sensitivity(plan.sensitivity, plan.sigma, settings.epsilon)
    active = np.ones(np.size(pieces.coefficients), dtype=bool)
    k = granularity_for(pieces.float_error_bound, granularity_exp)
    noise_plan = discrete_plan(family, int(active.sum()), d_in, k)
    entry = discrete_entry(noise_plan, "kde", plan.mechanism, delta=family.delta_or_none(settings.delta),
                                    sensitivity=plan.sensitivity, sensitivity_norm=plan.guarantee.sensitivity_norm,
                                    label=label or f"density of {features_label(features)}, "
                                                   f"{mechanism.label.split(',')[0]}")
    return PendingCommit("kde", plan.mechanism, family, plan, noise_plan, entry,
                         np.asarray(pieces.coefficients, dtype=float).ravel(),
                         np.asarray(pieces.scales, dtype=float).ravel(), active, float(d_in),
                         pieces.float_error_bound,
                         context={"feature": features_label(features), "settings": settings, "points": points,
                                  "n_dropped": fd.report.n_dropped, "load": load_section(fd),
                                  "n_curves": obs.n_curves, "n_outside_box": obs.n_outside_box,
                                  "n_unusable": obs.n_unusable,
                                  "coefficient_shape": np.shape(pieces.scales),
                                  "post_processing": mechanism.post_processing})


def kde_tradeoff(points, settings, n_points: int = 15, plan=None) -> dict:
    """Expected squared L2 error of the density release against epsilon (closed form; data-free given n).

    ``plan``: the release already planned with ``settings`` (a commit passes its own), else
    planned here; the other epsilons rescale its noise (fdp_core/explore/epsilon_tradeoff.py).
    """
    chosen = plan if plan is not None else kde.plan_kde_release(points, settings, per_person=True)
    eps, err = kde_epsilon_errors(chosen, kde_mechanism(settings.mechanism).family, settings, n_points)
    return {"parameter": "epsilon", "epsilon": eps, "expected_sq_l2_error": err,
            "chosen_epsilon": float(settings.epsilon), "chosen_error": chosen.expected_sq_l2_error,
            "metric": "expected squared L2 distance to the non-private density (closed form, box coordinates)",
            "fixed": ({"delta": settings.delta} if kde_mechanism(settings.mechanism).uses_delta else {})}


def _kde_radii(plan, factor: float) -> tuple[float, float]:
    """95% L2 and sup radii of the noise field (Monte Carlo over the public noise law, fixed seed)."""
    draws = plan.noise(np.random.default_rng(12345), 2000).reshape(2000, -1) * factor
    w = np.asarray(plan.weights).ravel()
    return (float(np.quantile(np.sqrt((draws**2) @ w), 0.95)),
            float(np.quantile(np.abs(draws).max(axis=1), 0.95)))


def _quote_kde(request: CommitRequest) -> Quote:
    feature = request.inputs.get("feature")
    if not isinstance(feature, str):
        raise ParameterError("a density commit needs a per-curve feature (e.g. 'l2norm' or 'value:0.5')")
    return quote_of([prepare_kde_commit(request.data, feature, request.settings, label=request.label,
                                        granularity_exp=request.granularity_exp)])


def _build_kde(request: CommitRequest, quote: Quote, draws, ledger: Ledger) -> CommittedRelease:
    """The density's publishable record from its one drawn part (post-processing only)."""
    data_label, looked_at, pre_registered = request.data_label, request.looked_at, request.pre_registered
    pending = quote.pendings[0]
    full, noise, _ = draws[0]
    plan = pending.plan
    shape = pending.context["coefficient_shape"]
    settings = pending.context["settings"]
    # The synthesised density, then the free clip at 0 and renormalisation (post-processing).
    finished = finish_density(plan.noise_law.synthesize(full.reshape(shape)), plan.weights, settings)
    values = finished.values
    c = noise.unit_noise_scale
    l2, sup = _kde_radii(plan, c)
    record = kde.release_record(plan, feature=pending.context["feature"], person_column=settings.person_column,
                                value_range=settings.value_range, n_public=settings.n_public,
                                raw_release=settings.raw_release)
    record.update(common_record(pending, noise, ledger, label=pending.entry.label, data_label=data_label))
    record.update(expected_sq_l2_error=plan.expected_sq_l2_error * c * c, l2_error_radius_95=l2,
                  sup_error_radius_95=sup, accuracy=_accuracy_sentence(l2, sup, "the non-private density"))
    record["data"].update(n=plan.n, feature=pending.context["feature"])
    record["looked_at_before_commit"] = looked_at_field(looked_at, pre_registered=pre_registered)
    record["noise_sampler"]["post_processing"] = pending.context["post_processing"]
    table = kde.release_table(plan, values)
    if plan.d == 1:
        index = {"index": np.arange(1, full.size + 1)}
    else:
        i1, i2 = np.unravel_index(np.arange(full.size), shape)
        index = {"index_1": i1 + 1, "index_2": i2 + 1}
    config = {"schema": CONFIG_SCHEMA, "kind": "kde",
              "settings": config_of(replace(settings, box=check_box(settings.box))),
              "data": {**pending.context["load"], "feature": pending.context["feature"],
                       "label": data_label, "n": plan.n},
              "export": {"granularity_exp": pending.noise_plan.granularity_exp},
              "budget": budget_config(ledger), "replays": pending.entry.id}
    analyst = {**kde.analyst_view(plan, n_dropped=pending.context["n_dropped"], n_curves=pending.context["n_curves"],
                                  n_outside_box=pending.context["n_outside_box"],
                                  n_unusable=pending.context.get("n_unusable", 0)),
               "committed_noise_l2_radius_95": l2, **finished.analyst_fields(plan.weights)}
    return CommittedRelease("kde", pending.entry, record, table, _coefficient_table(pending, noise, full, index),
                            config, kde_tradeoff(pending.context["points"], settings, plan=plan), record["accuracy"],
                            analyst)


KDE_STEPS = Steps(quote=_quote_kde, build=_build_kde, check=_refuse)


def commit_kde(ledger, fd: FunctionalData, feature: str, settings, *, label: str = "",
               data_label: str = "", granularity_exp: int | None = None,
               pending: PendingCommit | None = None, looked_at=None, pre_registered: bool = False) -> CommittedRelease:
    """Commit one sanitized density (Hall or ICLP-KDE) through the same check -> draw -> record path
    (a thin wrapper of the commit protocol with :data:`KDE_STEPS`).

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (a stored one is completed by the caller once written).
    fd : FunctionalData
        The curves (NON-PRIVATE).
    feature : str
        The per-curve feature, e.g. ``"mean:0:1"``.
    settings : KdeSettings
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
    >>> commit_kde(ledger, fd, "mean:0:1", fdp.KdeSettings(box=((0.0, 1.0),))).kind
    'kde'
    """
    request = CommitRequest(fd, settings, label=label, data_label=data_label, granularity_exp=granularity_exp,
                            looked_at=looked_at, pre_registered=pre_registered, inputs={"feature": feature})
    return run_steps(KDE_STEPS, ledger, request, None if pending is None else quote_of([pending]))


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


def pca_ledger_entry(settings, *, label: str = "") -> LedgerEntry:
    """The cost of a PCA commit, known from the settings alone (nothing is drawn).

    The sampler's registry entry (fdp_core/registry/pca.py) builds it. Exact and deflation
    samplers: the exponential mechanism, pure epsilon with rho = epsilon^2 / 8 (for deflation one
    entry with the total epsilon = sum eps_j: conservative). Gibbs: an approximate entry (nominal
    epsilon, not a DP claim; the filter still charges it).
    """
    s = settings.validated()
    sampler = pca_sampler(s.sampler_name)
    noise = {"sampler": f"Bingham: {sampler.label}", "hardening": PCA_HARDENING,
             "gamma": float(s.gamma), "epsilon_per_component": list(s.component_epsilons()), "k": int(s.k)}
    label = label or f"{s.k} principal component(s), {sampler.name} sampler"
    return sampler.ledger_entry("pca", sampler.ledger_mechanism, epsilon=s.epsilon, noise=noise, label=label)


def _check_pca(request: CommitRequest) -> None:
    refuse_data_dependent(request.settings)  # before anything is charged or drawn
    settings = request.settings.validated()
    if settings.centring == "released-mean" and request.inputs.get("released_mean") is None:
        raise ParameterError("centring by a released mean needs a committed mean release (commit a mean first)")


def quote_pca(request: CommitRequest) -> Quote:
    """The components' cost (one exponential-mechanism entry, from the settings alone) and the page's notes."""
    settings = request.settings.validated()
    entry = pca_ledger_entry(settings, label=request.label)
    flags = (f"{PCA_HARDENING}: the release is idealised real-arithmetic DP",)
    if entry.approximate:
        flags += (pca_sampler(settings.sampler_name).caveat,)
    note = (f"Sampler: {entry.noise['sampler']}; fresh OS entropy; {PCA_HARDENING.lower()}. "
            "Data-dependent diagnostics (acceptance rate, variance ratio) are never exported.")
    return Quote((entry,), (), flags, note)


def _draw_pca(request: CommitRequest, quote: Quote):
    """The Bingham sampler with fresh OS entropy (no exact discrete sampler exists for it)."""
    return pca.private_pca(request.data, request.settings.validated(), np.random.default_rng(),
                                     released_mean=request.inputs.get("released_mean"))


def _build_pca(request: CommitRequest, quote: Quote, result, ledger: Ledger) -> CommittedRelease:
    """The components' publishable record: everything computed from the raw data is dropped."""
    fd, data_label, settings, entry = request.data, request.data_label, request.settings.validated(), quote.entry
    record = pca.release_record(result)
    for key in PCA_NOT_EXPORTED:
        record.pop(key, None)
    sampler = {"sampler": entry.noise["sampler"], "hardening": PCA_HARDENING,
               "floating_point": result.guarantee.details.get("floating_point"), "approximate": entry.approximate,
               "randomness": RANDOMNESS_PCA}
    record.update(_base_record("pca", entry, sampler, ledger, label=entry.label, data_label=data_label,
                               arithmetic="floating point (numpy); " + PCA_HARDENING, on_grid=PCA_ON_GRID,
                               randomness=RANDOMNESS_PCA))
    caveat = pca_sampler(settings.sampler_name).caveat
    record.update(hardening_note=PCA_HARDENING + (f"; {caveat}" if caveat else ""),
                  accuracy=PCA_ACCURACY + (f" {record['basis_truncation']['statement']}" if "basis_truncation"
                                           in record else ""),
                  released_mean_id=request.inputs.get("released_mean_id"))
    record["data"].update(n=result.n, m=result.m)
    record["looked_at_before_commit"] = looked_at_field(request.looked_at, pre_registered=request.pre_registered)
    columns = {f"component_{j + 1}": result.components[:, j] for j in range(result.k)}
    table = pd.DataFrame({"t": result.grid_points, **columns})
    coefficients = pd.DataFrame({"basis_index": np.arange(1, result.p + 1),
                                 **{f"V_{j + 1}": result.coefficients[:, j] for j in range(result.k)}})
    config = {"schema": CONFIG_SCHEMA, "kind": "pca", "settings": config_of(settings),
              "data": {**load_section(fd), "label": data_label, "n": result.n, "m": result.m},
              "export": {}, "budget": budget_config(ledger), "replays": entry.id}
    analyst = pca.analyst_view(result, n_dropped=fd.report.n_dropped,
                               n_unusable=file_persons(fd, settings.bounds.person_column).n_unusable)
    return CommittedRelease("pca", entry, record, table, coefficients, config, {}, record["accuracy"], analyst)


PCA_STEPS = Steps(quote=quote_pca, build=_build_pca, draw=_draw_pca, check=_check_pca)


def commit_pca(ledger, fd: FunctionalData, settings, *, label: str = "", data_label: str = "",
               released_mean=None, released_mean_id: str | None = None, looked_at=None,
               pre_registered: bool = False) -> CommittedRelease:
    """Commit private principal components: check the budget, draw with fresh entropy, record.

    ``released_mean`` (centring "released-mean") must be a mean committed earlier: its budget
    is already in the ledger. The record drops everything computed from the raw data (the
    analyst-view metrics and the sampler's acceptance rate, which depends on X^T X). A thin
    wrapper of the commit protocol with :data:`PCA_STEPS`.

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (a stored one is completed by the caller once written).
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : PcaSettings
    released_mean, released_mean_id : optional
        A mean committed earlier, to centre at (centring "released-mean").
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
    >>> commit_pca(ledger, fd, fdp.PcaSettings(k=1, value_range=(0, 1))).table.shape
    (20, 2)
    """
    request = CommitRequest(fd, settings, label=label, data_label=data_label, looked_at=looked_at,
                            pre_registered=pre_registered,
                            inputs={"released_mean": released_mean, "released_mean_id": released_mean_id})
    return run_steps(PCA_STEPS, ledger, request)
