"""Commit of a mean with its confidence band (METHODS.md 18): two ledger entries, then post-processing.

The mean (at 1 - band_share of epsilon and delta) and the second moment (at band_share) are
committed with exact discrete noise like any other release (fdp_core/publish/commit.py,
fdp_core/publish/commit_summaries.py); both entries are checked against the budget before either is
drawn, and the ledger composes them. The bands are computed from the two committed outputs
only, with the committed noise law (the discrete sampler's unit scale c >= 1 included).

The band's part in the commit protocol is :data:`BAND_STEPS` (its quote: the mean's part first,
then the second moment's; its build: the mean's and the second moment's records, then the bands);
:func:`commit_mean_with_band` is a thin wrapper of :func:`fdp_core.publish.protocol.run_steps`.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pandas as pd

from ..budget.accounting import Ledger, LedgerEntry
from ..releases.bands import BandPlan, band_record, band_table, confidence_band, plan_band_release
from .commit import MEAN_STEPS, CommittedRelease, prepare_mean_commit, refuse_data_dependent
from .commit_summaries import COVARIANCE_STEPS, prepare_covariance_commit
from .protocol import CommitRequest, Quote, Steps, combined_charge, quote_of, run_steps
from ..releases.covariance import symmetrise
from ..data.loading import FunctionalData
from ..releases.mean import MeanSettings
from ..settings_fields import config_of


def _label(request: CommitRequest) -> str:
    return request.label or "mean with confidence band"


def quote_band(request: CommitRequest) -> Quote:
    """The mean's part first (the cost the page states), then the second moment's parts; nothing drawn.

    The band's plan rides in the mean part's ``context`` so the build uses the plan that was priced.
    """
    fd, k = request.data, request.granularity_exp
    plan = plan_band_release(fd, request.settings)
    label = _label(request)
    # The band's own plans of both parts are the ones priced and drawn (nothing planned twice).
    mean_pending = prepare_mean_commit(fd, plan.mean.settings, label=label, granularity_exp=k, plan=plan.mean)
    return quote_of([replace(mean_pending, context={"band_plan": plan}),
                     *prepare_covariance_commit(fd, plan.second_moment.settings, label=f"{label}: second moment",
                                                granularity_exp=k, plan=plan.second_moment)])


def _as_of(ledger: Ledger, entry: LedgerEntry) -> Ledger:
    """The ledger as it stood once ``entry`` was recorded.

    An in-memory ledger has recorded the later parts by the time the records are built; the mean's
    record states the ledger at the mean's own charge, as a stored budget's snapshot does.
    """
    ids = [e.id for e in ledger.entries]
    if entry.id not in ids or ids[-1] == entry.id:
        return ledger
    return replace(ledger, entries=list(ledger.entries[:ids.index(entry.id) + 1]))


def _check_band(request: CommitRequest) -> None:
    refuse_data_dependent(request.settings)  # before anything is planned, charged or drawn


def build_band(request: CommitRequest, quote: Quote, draws, ledger: Ledger) -> CommittedRelease:
    """The mean's and the second moment's records from their drawn parts, then the bands (post-processing)."""
    first, *rest = quote.pendings
    plan: BandPlan = first.context["band_plan"]
    settings = request.settings
    label = _label(request)
    mean = MEAN_STEPS.build(request, quote_of([first]), draws[:1], _as_of(draws[0][2], first.entry))
    second = COVARIANCE_STEPS.build(replace(request, label=f"{label}: second moment"), quote_of(rest), draws[1:],
                                    ledger)
    L = plan.second_moment.n_components
    coefs = second.coefficients
    raw = coefs.loc[coefs["part"] == "second_moment", "value"].to_numpy().reshape(L, L)
    # The committed noise is the planned one times the sampler's unit scale c >= 1: the bands use that law.
    c = float(mean.record["noise_sampler"]["unit_noise_scale"])
    committed = replace(plan, mean=replace(plan.mean, noise_scales=plan.mean.noise_scales * c))
    values = mean.table["value"].to_numpy()
    bands = confidence_band(committed, values, symmetrise(raw))
    record = dict(mean.record)
    record.update(epsilon=float(settings.epsilon), delta=plan.mean.delta + float(second.record["delta"]),
                  band=band_record(committed, bands, second.record["guarantee"]),
                  second_moment_entry=second.entry.to_dict(),
                  part_entry_ids=[mean.entry.id, *second.record["part_entry_ids"]])

    record["band"]["unit_noise_scale"] = c
    # The band's total states what the ledger charged (the same numbers as charged_total); the split the noise
    # was calibrated to, and its exact GDP total for continuous Gaussian noise, stay beside it as calibrated_total.
    record["band"]["calibrated_total"] = record["band"]["composed_total"]
    record["band"]["composed_total"] = charged_band_total(combined_charge(quote.entries))
    record["settings"] = asdict(plan.settings)  # the whole budget: a replay splits it again
    config = {**mean.config, "settings": config_of(plan.settings)}
    table = pd.DataFrame(band_table(plan.mean.grid_points, values, bands))
    analyst = {**mean.analyst, "second_moment": second.analyst,
               "nonprivate_estimate_inside_privacy_band": bool(np.all(
                   (plan.mean.estimate >= bands.privacy.lower) & (plan.mean.estimate <= bands.privacy.upper)))}
    return replace(mean, record=record, table=table, config=config, analyst=analyst)


def charged_band_total(charge: dict) -> dict:
    """The band's ``composed_total`` of a committed release, in the schema of ``privacy_events.composed_total``,
    from the ledger's charge of its parts (``protocol.combined_charge``): ``basic`` is the sum the ledger's filter
    spends, ``epsilon`` / ``delta`` / ``method`` the tightest total the ledger composes for them (never above the
    sum), ``ledger`` that composition as the ledger states it."""
    basic = {"epsilon": float(charge["epsilon"]), "delta": float(charge["delta"])}
    out = {"basic": basic, **basic, "method": "basic", "source": "ledger",
           "meaning": "what the ledger charged for the mean and the second moment (charged_total); calibrated_total: "
                      "the split their noise was calibrated to"}
    composed = charge.get("composed")
    if composed is not None:
        out["ledger"] = dict(composed)
        if composed["epsilon"] < basic["epsilon"]:
            out.update(epsilon=float(composed["epsilon"]), delta=float(composed["delta"]), method=composed["method"])
    return out


# The mean with bands in the commit protocol (fdp_core/publish/protocol.py; its kind: the mean's entry
# of fdp_core/publish/kinds.py, chosen when the settings ask for a confidence band).
BAND_STEPS = Steps(quote=quote_band, build=build_band, check=_check_band)


def commit_mean_with_band(ledger, fd: FunctionalData, settings: MeanSettings, *, label: str = "",
                          data_label: str = "", granularity_exp: int | None = None, looked_at=None,
                          pre_registered: bool = False) -> CommittedRelease:
    """Commit the mean and the second moment behind its confidence band; the release carries both bands.

    Raises BudgetError before any draw when the two parts together do not fit the remaining budget.
    A thin wrapper of the commit protocol with :data:`BAND_STEPS`.

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (a stored one is completed by the caller once written).
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : MeanSettings
        With ``confidence_band`` and ``band_share``.
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
    >>> release = commit_mean_with_band(ledger, fd, fdp.MeanSettings(value_range=(0, 1), confidence_band=0.95))
    >>> len(release.record["part_entry_ids"])   # the mean and the second moment
    2
    """
    request = CommitRequest(fd, settings, label=label, data_label=data_label, granularity_exp=granularity_exp,
                            looked_at=looked_at, pre_registered=pre_registered)
    return run_steps(BAND_STEPS, ledger, request)


__all__ = ["BAND_STEPS", "build_band", "charged_band_total", "commit_mean_with_band", "quote_band"]
