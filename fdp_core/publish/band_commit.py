"""Commit of a mean with its confidence band (METHODS.md 18): two ledger entries, then post-processing.

The mean (at 1 - band_share of epsilon and delta) and the second moment (at band_share) are
committed with exact discrete noise like any other release (fdp_core/publish/commit.py,
fdp_core/publish/commit_summaries.py); both entries are checked against the budget before either is
drawn, and the ledger composes them. The bands are computed from the two committed outputs
only, with the committed noise law (the discrete sampler's unit scale c >= 1 included).
"""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pandas as pd

from ..releases.bands import band_record, band_table, confidence_band, mean_part, plan_band_release
from .commit import CommittedRelease, commit_mean, prepare_mean_commit
from .commit_summaries import commit_covariance, prepare_covariance_commit
from .protocol import check_parts
from ..releases.covariance import symmetrise
from ..data.loading import FunctionalData
from ..releases.mean import MeanSettings
from ..settings_fields import config_of


def commit_mean_with_band(ledger, fd: FunctionalData, settings: MeanSettings, *, label: str = "",
                          data_label: str = "", granularity_exp: int | None = None, looked_at=None,
                          pre_registered: bool = False) -> CommittedRelease:
    """Commit the mean and the second moment behind its confidence band; the release carries both bands.

    Raises BudgetError before any draw when the two parts together do not fit the remaining budget.
    """
    plan = plan_band_release(fd, settings)
    part = mean_part(plan.settings)
    label = label or "mean with confidence band"
    mean_pending = prepare_mean_commit(fd, part, label=label, granularity_exp=granularity_exp)
    cov_settings = plan.second_moment.settings
    check_parts(ledger, [mean_pending, *prepare_covariance_commit(fd, cov_settings, label=f"{label}: second moment",
                                                                  granularity_exp=granularity_exp)])
    mean = commit_mean(ledger, fd, part, label=label, data_label=data_label, granularity_exp=granularity_exp,
                       pending=mean_pending, looked_at=looked_at, pre_registered=pre_registered)
    second = commit_covariance(ledger, fd, cov_settings, label=f"{label}: second moment", data_label=data_label,
                               granularity_exp=granularity_exp, looked_at=looked_at, pre_registered=pre_registered)
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
    record["settings"] = asdict(plan.settings)  # the whole budget: a replay splits it again
    config = {**mean.config, "settings": config_of(plan.settings)}
    table = pd.DataFrame(band_table(plan.mean.grid_points, values, bands))
    analyst = {**mean.analyst, "second_moment": second.analyst,
               "nonprivate_estimate_inside_privacy_band": bool(np.all(
                   (plan.mean.estimate >= bands.privacy.lower) & (plan.mean.estimate <= bands.privacy.upper)))}
    return replace(mean, record=record, table=table, config=config, analyst=analyst)
