"""Commit of a sparse mean (METHODS.md 20) with exact discrete noise, like every other kind.

The sparse mean releases two noisy parts, the pooled Gram matrix A (J x J, all entries noised,
then symmetrised) and the vector b (J). Each goes through the same plan -> check -> draw ->
record path as the mean (fdp_core/publish/commit.py): exact discrete noise on the 2^k grid from OpenDP
with the scaled sensitivity (mu = Delta / sigma for Gaussian noise, epsilon for Laplace noise).
Both parts are checked against the budget together before either is drawn, so a refusal records
nothing; the ledger then holds two entries. The floored solve and the curve are post-processing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .commit import CONFIG_SCHEMA, CommittedRelease, PendingCommit, UNIT_ROUNDOFF, budget_config, \
    common_record, discrete_plan, granularity_for, looked_at_field
from .protocol import CommitRequest, Quote, Steps, combined_charge, quote_of, run_steps
from .. import limits
from ..budget.accounting import discrete_entry
from ..settings_fields import config_of
from ..releases.sparse import SparseRelease, SparseSettings, plan_sparse_release, sparse_analyst_view, sparse_release_record
from ..data.sparse_data import SparseData

MAX_VISITS_FOR_BOUND = limits.MAX_VISITS_FOR_BOUND  # public allowance for visits per person in the float-error bound

SPARSE_ACCURACY = ("Per-entry noise scale of A {scale_a:.4g} and of b {scale_b:.4g} (data-free); the curve "
                   "beta~ = (A~ floored at kappa + penalty)^-1 b~ is post-processing.")


def _part(plan: SparseRelease, part: str, values: np.ndarray, scale: float, sensitivity: float, bound: float,
          label: str, granularity_exp: int | None) -> PendingCommit:
    """One of the two parts as a pending commit (draws nothing)."""
    family = plan.family
    g = plan.guarantee.details[part]
    values = np.asarray(values, dtype=float).ravel()
    scales = np.full(values.shape, float(scale))
    active = np.ones(values.shape, dtype=bool)
    error_bound = bound / scale  # float error of the accumulated sums, in noise scales
    k = granularity_for(error_bound, granularity_exp)
    d_in = family.scaled_sensitivity(sensitivity, scale, g.epsilon)
    noise_plan = discrete_plan(family, values.size, d_in, k)
    mechanism = f"sparse-{family.name} ({part})"
    entry = discrete_entry(noise_plan, "mean", mechanism, delta=family.delta_or_none(g.delta),
                           sensitivity=sensitivity, sensitivity_norm=g.sensitivity_norm,
                           label=f"{label} (sparse mean, {part})".strip())
    return PendingCommit("mean", mechanism, family, plan, noise_plan, entry, values, scales, active,
                         float(d_in), float(error_bound))


def prepare_sparse_commit(data: SparseData | None, settings: SparseSettings, *, label: str = "",
                          granularity_exp: int | None = None, statistics=None) -> list[PendingCommit]:
    """The A and b parts of a sparse mean release as pending commits; draws nothing."""
    plan = plan_sparse_release(data, settings, statistics=statistics)
    st = plan.statistics
    # |phi_j phi_l| <= R2 and |y - c| phi_l <= h sqrt(R2); a person's average over m_i visits and the
    # average over n persons err by about (m_i + n + 20) unit roundoffs times those bounds. The bound
    # (it sets the grid and is published) must not depend on the data beyond the public n, so m_i
    # enters through the public cap MAX_VISITS_FOR_BOUND, not the observed visit counts.
    steps = (MAX_VISITS_FOR_BOUND + st.n + 20) * UNIT_ROUNDOFF
    r2 = plan.basis.r2
    base = label or "sparse mean"
    part_a = _part(plan, "A", st.A, plan.scale_a, plan.sensitivity_a, steps * r2, base, granularity_exp)
    part_b = _part(plan, "b", st.b, plan.scale_b, plan.sensitivity_b,
                   steps * plan.settings.half_width * np.sqrt(r2), base, granularity_exp)
    return [part_a, part_b]


def quote_sparse(request: CommitRequest) -> Quote:
    """The A and b parts of a sparse mean, planned and priced; nothing drawn."""
    return quote_of(prepare_sparse_commit(request.data, request.settings, label=request.label,
                                          granularity_exp=request.granularity_exp,
                                          statistics=request.inputs.get("statistics")))


def build_sparse(request: CommitRequest, quote: Quote, draws, ledger) -> CommittedRelease:
    """The sparse mean's publishable record from its two drawn parts (the solve is post-processing)."""
    data, label, data_label = request.data, request.label, request.data_label
    pendings = list(quote.pendings)
    plan: SparseRelease = pendings[0].plan
    J = plan.basis.n_basis
    raw_a = draws[0][0].reshape(J, J)
    noisy_a, noisy_b = (raw_a + raw_a.T) / 2.0, draws[1][0]
    beta = plan.coefficients(noisy_a[None], noisy_b[None])[0]
    values = plan.curves(beta[None])[0]
    table = pd.DataFrame({"t": plan.output_grid, "value": values})
    record = sparse_release_record(plan, values)
    record.update(common_record(pendings[1], draws[1][1], ledger, label=label or "sparse mean",
                                 data_label=data_label))
    record["route"] = "sparse"
    record["a_entry"] = pendings[0].entry.to_dict()
    # record["charged"] (like release.entry) is the b part's alone: the whole release's charge is both parts'.
    record["part_entries"] = [p.entry.to_dict() for p in pendings]
    record["charged_total"] = combined_charge(p.entry for p in pendings)
    record["noise_sampler"]["post_processing"] = ("A~ symmetrised (A~ + A~^T)/2, eigenvalues floored at kappa, "
                                                  "penalised solve beta~; mean = centre + phi(t) beta~ on the "
                                                  "output grid")
    record["data"].update(n=plan.n, n_unit="persons")
    i, j = np.divmod(np.arange(J * J), J)
    coef = pd.concat([
        pd.DataFrame({"part": "A", "row": i + 1, "column": j + 1, "noisy": True, "noise_scale": plan.scale_a,
                      "unit_value": draws[0][1].unit_values, "value": draws[0][0]}),
        pd.DataFrame({"part": "b", "row": np.arange(1, J + 1), "column": 0, "noisy": True,
                      "noise_scale": plan.scale_b, "unit_value": draws[1][1].unit_values, "value": noisy_b}),
        pd.DataFrame({"part": "beta", "row": np.arange(1, J + 1), "column": 0, "noisy": False,
                      "noise_scale": 0.0, "unit_value": np.nan, "value": beta})], ignore_index=True)
    config = {"schema": CONFIG_SCHEMA, "kind": "sparse", "settings": config_of(plan.settings),
              "data": {"label": data_label, "n": plan.n, "n_unit": "persons"},
              "export": {"granularity_exp": pendings[0].noise_plan.granularity_exp},
              "budget": budget_config(ledger), "replays": pendings[1].entry.id}
    record["part_entry_ids"] = [p.entry.id for p in pendings]
    record["looked_at_before_commit"] = looked_at_field(request.looked_at,
                                                         pre_registered=request.pre_registered)
    accuracy = SPARSE_ACCURACY.format(scale_a=plan.scale_a * draws[0][1].unit_noise_scale,
                                      scale_b=plan.scale_b * draws[1][1].unit_noise_scale)
    analyst = sparse_analyst_view(plan, values, data)
    return CommittedRelease("mean", pendings[1].entry, record, table, coef, config, {}, accuracy, analyst)


# The sparse mean's steps in the commit protocol (fdp_core/publish/protocol.py; its kind:
# fdp_core/publish/kinds.py). A and b are checked together before either is charged (run_steps).
SPARSE_STEPS = Steps(quote=quote_sparse, build=build_sparse)


def commit_sparse_mean(ledger, data: SparseData | None, settings: SparseSettings, *, label: str = "",
                       data_label: str = "", granularity_exp: int | None = None, looked_at=None,
                       pre_registered: bool = False, statistics=None) -> CommittedRelease:
    """Commit a sparse mean: A and b checked together, then each charged and drawn.

    ``ledger``: an in-memory Ledger or a persistent StoredBudget (the caller completes the
    entries listed in ``record["part_entry_ids"]`` once the release is written). A thin wrapper of
    the commit protocol with :data:`SPARSE_STEPS`.

    Parameters
    ----------
    ledger : Ledger or StoredBudget
        The budget charged before the draw (both parts, A and b, together).
    data : SparseData or None
        The observations (NON-PRIVATE); None with ``statistics``.
    settings : SparseSettings
    label, data_label, granularity_exp, looked_at, pre_registered
        As for :func:`fdp_core.publish.commit.commit_mean`.
    statistics : SparseStatistics, optional
        A and b accumulated elsewhere (the streamed route).

    Returns
    -------
    CommittedRelease
        Two ledger entries (A and b) in ``part_entries``.

    Examples
    --------
    >>> from pathlib import Path
    >>> import fdp_core as fdp
    >>> data = fdp.read_long(Path(__file__).parents[2] / "data" / "example_sparse.csv")
    >>> release = commit_sparse_mean(fdp.Ledger(10.0, 1e-4), data,
    ...                              fdp.SparseSettings(domain=(0.0, 1.0), value_range=(-1.0, 2.0), epsilon=4.0))
    >>> len(release.part_entries)
    2
    """
    request = CommitRequest(data, settings, label=label, data_label=data_label, granularity_exp=granularity_exp,
                            looked_at=looked_at, pre_registered=pre_registered,
                            inputs={} if statistics is None else {"statistics": statistics})
    return run_steps(SPARSE_STEPS, ledger, request)
