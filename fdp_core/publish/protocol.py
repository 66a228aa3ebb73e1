"""The commit protocol: reserve -> draw -> write -> complete, one public API for every kind of release.

Every commit (mean, mean with bands, density, components, covariance, regression, sparse mean,
parameter selection) spends budget the same way (METHODS.md 8-9):

1. **reserve**: the release's ledger entries, priced before any noise is drawn, are checked
   together against the budget: an in-memory :class:`Ledger` by :func:`check_parts`, a persistent
   :class:`fdp_core.budget.ledger_store.StoredBudget` by charging EVERY part for good in one locked
   transaction (:func:`reserve_parts`: one row per part sharing one release id, or none; METHODS.md 23).
   A release that does not fit raises BudgetError here: nothing drawn, nothing recorded;
2. **draw**: fresh noise from OS entropy (:func:`draw`: the exact discrete sampler on the 2^k
   grid; the exponential mechanism's samplers draw inside their kind's hook), then
   :func:`settle` records the entry in an in-memory ledger;
3. **write**: the publishable record, tables and config (the kind's hook), then the caller's
   ``write`` (a bundle folder, the app's session);
4. **complete**: every stored entry is marked complete in one transaction once the release exists
   (:func:`complete`); a crash before leaves every part ``reserved``, which counts as spent, and
   ``ledger complete --release ID`` finishes it.

A kind takes part through its :class:`Steps` (``quote``: plan and price; ``build``: the record from
what was drawn; ``draw`` only for a kind without an exact discrete sampler; ``check``: refusals
before any plan), run by :func:`run_steps`. :func:`commit_release` runs the four steps for any kind
of the registry :mod:`fdp_core.publish.kinds` (each kind's hook runs its Steps with :func:`run_steps`);
the per-kind functions (``commit_mean``, ``commit_kde``, ``commit_pca``, ``commit_covariance``,
``commit_regression``, ``commit_mean_with_band``, ``commit_sparse_mean``, and each part of
``commit_plan``) are thin wrappers of :func:`run_steps`. This module imports no kind of release, so
every kind's module can use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..budget.accounting import Ledger, LedgerEntry, basic_composition, compose
from ..budget.charging import charge, settle  # settle: the in-memory ledger records the entry after the draw
from ..mechanisms.discrete import DiscretePlan
from ..mechanisms.families import NoiseFamily


@dataclass(frozen=True)
class PendingCommit:
    """What a commit will cost, computed without drawing noise (the UI shows it first).

    ``values``/``scales`` are the coefficients to release and their noise scales (only the
    noisy ones; ``active`` marks them among all coefficients). ``values`` is NON-PRIVATE:
    it never leaves this object except through the sampler.
    """

    kind: str
    mechanism: str
    family: NoiseFamily
    plan: object = field(repr=False)  # MeanRelease, KdeRelease, ...
    noise_plan: DiscretePlan = field(repr=False)
    entry: LedgerEntry = field(repr=False)
    values: np.ndarray = field(repr=False)
    scales: np.ndarray = field(repr=False)
    active: np.ndarray = field(repr=False)
    scaled_sensitivity: float = 0.0
    float_error_bound: float = 0.0
    context: dict = field(default_factory=dict, repr=False)  # kind-specific inputs (feature spec, ...)


@dataclass(frozen=True)
class CommitRequest:
    """One commit's inputs, the same shape for every kind.

    ``data``: FunctionalData (curves) or SparseData (a sparse mean); ``settings``: the kind's
    settings object; ``inputs``: what a kind needs beyond its settings (a density's ``feature``;
    the components' ``released_mean`` and ``released_mean_id``); ``looked_at``/``pre_registered``:
    what the session looked at before the commit (the report states it).

    Parameters
    ----------
    data : FunctionalData or SparseData
    settings : the kind's settings object
    label, data_label : str
        The ledger entry's label and the data set's name in the report.
    granularity_exp : int, optional
        The exact discrete sampler's grid 2^k (default: the finest that covers the float error).
    looked_at : sequence, optional
        What the session looked at before committing (stated in the report).
    pre_registered : bool
        The settings were fixed before looking at the data.
    inputs : mapping
        A density's ``feature``; the components' ``released_mean`` and ``released_mean_id``.

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> from fdp_core.publish import kinds
    >>> t = np.linspace(0, 1, 20)
    >>> curves = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 40), 1 + t) / 2)
    >>> request = CommitRequest(curves, fdp.MeanSettings(value_range=(0, 1), epsilon=1.0))
    >>> quote = kinds.quote("mean", request)          # the charge, before any draw
    >>> release = kinds.commit("mean", fdp.Ledger(2.0, 1e-4), request)
    >>> release.entry.epsilon == quote.entry.epsilon
    True
    """

    data: object
    settings: object
    label: str = ""
    data_label: str = ""
    granularity_exp: int | None = None
    looked_at: tuple | list | None = None
    pre_registered: bool = False
    inputs: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Quote:
    """What a commit will cost and how it will draw, known before any noise is drawn.

    ``entries``: every ledger entry the commit charges (two for a release in two parts);
    ``pendings``: the exact discrete parts, planned (their values are NON-PRIVATE and reach the
    commit only through the sampler); ``flags``: data-dependent settings in use; ``sampler_note``:
    the sampler in words, for the page.
    """

    entries: tuple[LedgerEntry, ...]
    pendings: tuple[PendingCommit, ...] = ()
    flags: tuple[str, ...] = ()
    sampler_note: str = ""

    @property
    def entry(self) -> LedgerEntry:
        """The first part's entry (the one a new stored budget is created with)."""
        return self.entries[0]


def sampler_note(pending: PendingCommit) -> str:
    """The exact discrete sampler of a planned part, in words (shown before the commit)."""
    return (f"Sampler: {pending.noise_plan.sampler}, grid 2^{pending.noise_plan.granularity_exp}, "
            f"{int(pending.active.sum())} noisy coefficients, unit noise scale "
            f"{pending.noise_plan.unit_noise_scale:.9g} (sensitivity inflation for the grid applied).")


def quote_of(pendings) -> Quote:
    """The quote of a release made of exact discrete parts (the first part speaks for the sampler)."""
    pendings = tuple(pendings)
    return Quote(tuple(p.entry for p in pendings), pendings,
                 tuple(getattr(pendings[0].plan, "data_dependent_flags", ())), sampler_note(pendings[0]))


# --------------------------------------------------------------------------- 1. reserve

class Reservation:
    """A stored budget on which every part of one release was reserved in one transaction.

    The protocol's per-part :func:`reserve` then only confirms that the part is one of those
    reserved (the charge happened already); anything else is the stored budget's (delegated).
    """

    def __init__(self, account, entries, *, release_id: str | None = None):
        entries = list(entries)
        self.account = account
        self.ids = frozenset(e.id for e in entries)
        self.release_id = str(release_id or entries[0].id)
        self.snapshot = account.reserve_all(entries, release_id=self.release_id)

    def reserve(self, entry: LedgerEntry):
        if entry.id not in self.ids:
            raise RuntimeError(f"ledger entry {entry.id} is not part of release {self.release_id}'s reservation")
        return self.snapshot

    def __getattr__(self, name):
        return getattr(self.account, name)


def reserve_parts(account, entries):
    """Charge every part of a release at once on a stored budget (a :class:`Reservation`; BudgetError,
    nothing recorded, when they do not fit together); an in-memory Ledger or an existing
    reservation is returned as it is (checked part by part, see :func:`check_parts`)."""
    if isinstance(account, (Ledger, Reservation)):
        return account
    return Reservation(account, [getattr(e, "entry", e) for e in entries])


def check_parts(account, pendings) -> None:
    """Check every part against the budget as if the earlier parts were already committed.

    ``account``: an in-memory Ledger or a persistent StoredBudget (its current snapshot);
    ``pendings``: PendingCommit or LedgerEntry objects. A :class:`Reservation` holds them all
    already (checked in its one transaction): nothing to check.
    """
    if isinstance(account, Reservation):
        return
    snapshot = account if isinstance(account, Ledger) else account.ledger()
    if snapshot is None:
        return  # no stored budget yet: each part's own charge creates nothing and refuses
    trial = Ledger(snapshot.epsilon_total, snapshot.delta_total, snapshot.split, snapshot.filter,
                   entries=list(snapshot.entries))
    for p in pendings:
        trial.commit(getattr(p, "entry", p))


# reserve: check (and for a stored budget, charge) an entry before any noise is drawn; the
# budget's side of it lives in fdp_core/budget/charging.py (``charge``), shared with the
# private selection.
reserve = charge


# --------------------------------------------------------------------------- 2. draw

def draw(pending: PendingCommit):
    """The only place noise is drawn for an export: OpenDP, OS entropy, the 2^k grid."""
    noisy, record = pending.family.discrete_release(pending.values, pending.scales,
                                                    scaled_sensitivity=pending.scaled_sensitivity,
                                                    granularity_exp=pending.noise_plan.granularity_exp)
    # The release recomputes the plan; it must be the one the ledger was checked with.
    if (record.epsilon, record.rho, record.unit_noise_scale) != (pending.noise_plan.epsilon, pending.noise_plan.rho,
                                                                 pending.noise_plan.unit_noise_scale):
        raise RuntimeError("the sampler's privacy differs from the checked plan: refusing to release")
    return noisy, record


def execute(account, pending: PendingCommit):
    """reserve -> draw -> settle for one exact discrete part. A refused part raises before any noise is drawn.

    Returns (coefficients, sampler record, the ledger to describe the release with).
    """
    ledger = reserve(account, pending.entry)
    noisy, record = draw(pending)
    settle(account, ledger, pending.entry)
    full = np.zeros(pending.active.shape)
    full[pending.active] = noisy
    return full, record, ledger


def execute_parts(account, pendings) -> list:
    """Every part checked together, then each executed in turn: [(coefficients, record, ledger), ...]."""
    pendings = list(pendings)
    if len(pendings) > 1:
        check_parts(account, pendings)
    return [execute(account, p) for p in pendings]


# --------------------------------------------------------------------------- 4. complete

def entry_ids(release) -> list[str]:
    """Every ledger entry a committed release charged (its parts, then its own), each once."""
    return list(dict.fromkeys([*release.record.get("part_entry_ids", ()), release.id]))


def complete(account, release) -> None:
    """Mark every stored entry of ``release`` complete in one transaction (an in-memory ledger committed
    them at the draw)."""
    if isinstance(account, Ledger):
        return
    account.complete_all(entry_ids(release))


# --------------------------------------------------------------------------- the one quote, recorded

def combined_charge(entries) -> dict:
    """The charge of a release made of several ledger entries (a band's mean and second moment, A and b of a sparse mean, ...), JSON-ready.

    ``epsilon``/``delta`` (and ``rho``) are the sums over the parts: what the ledger's basic
    (zCDP) filter spends for them. ``composed`` is the tightest total the ledger's composition
    gives for the parts together at that summed delta (e.g. zCDP for two discrete Gaussian parts),
    the guarantee of the release as a whole; it is never larger than the sum.
    """
    entries = list(entries)
    epsilon, delta = basic_composition(entries)
    rhos = [e.rho for e in entries]
    best = compose(entries, delta).best
    return {"parts": [e.mechanism for e in entries], "entry_ids": [e.id for e in entries], "n_entries": len(entries),
            "epsilon": epsilon, "delta": delta,
            "rho": math.fsum(rhos) if all(r is not None for r in rhos) else None,
            "meaning": "sum over the parts' ledger entries (what the ledger's filter spends)",
            "composed": None if best is None else {"method": best.method, "epsilon": best.epsilon,
                                                   "delta": best.delta, "detail": best.detail}}


def record_quote(release, entries) -> None:
    """Write the one quote of a release in several parts into its record (release.json, the report,
    the bundle's README and its verification read it): every part's entry and their total."""
    entries = list(entries)
    if len(entries) > 1:
        release.record.setdefault("part_entries", [e.to_dict() for e in entries])
        release.record.setdefault("charged_total", combined_charge(entries))


# --------------------------------------------------------------------------- the four steps

@dataclass(frozen=True)
class Steps:
    """A kind's part in the protocol; the protocol itself reserves, draws, settles and completes.

    ``quote(request) -> Quote``: plan and price, nothing drawn; ``build(request, quote, draws,
    ledger) -> CommittedRelease``: the publishable record from what was drawn (``draws``: one
    (coefficients, sampler record, ledger) per exact discrete part, or what ``draw`` returned);
    ``draw(request, quote)``: only for kinds without an exact discrete sampler (the exponential
    mechanism's components), called between the reservation and the settlement; ``check(request)``:
    refusals that need no plan, before anything is charged.
    """

    quote: Callable
    build: Callable
    draw: Callable | None = None
    check: Callable | None = None


def run_steps(steps: Steps, account, request: CommitRequest, quote: Quote | None = None):
    """reserve -> draw -> build for one kind's steps (no write, no complete: see :func:`commit_release`).

    Every part is checked together before the first is charged; a refusal raises BudgetError with
    nothing drawn and nothing recorded.
    """
    if steps.check is not None:
        steps.check(request)
    quote = quote if quote is not None else steps.quote(request)
    account = reserve_parts(account, quote.entries)  # a stored budget: every part in one transaction
    if steps.draw is None:
        draws = execute_parts(account, quote.pendings)
        ledger = draws[-1][2]
    else:
        if len(quote.entries) > 1:
            check_parts(account, quote.entries)
        ledger = reserve(account, quote.entry)
        draws = steps.draw(request, quote)
        settle(account, ledger, quote.entry)
    release = steps.build(request, quote, draws, ledger)
    record_quote(release, quote.entries)
    return release


def commit_release(kind, account, request: CommitRequest, *, quote: Quote | None = None,
                   write: Callable | None = None, finish: bool = True):
    """Commit one release of any kind: reserve -> draw -> write -> complete.

    ``kind``: a :class:`fdp_core.publish.kinds.ReleaseKind` (its ``commit`` hook reserves every
    part, draws and builds the publishable record); ``quote``: the kind's quote shown before the
    commit (reused, so the plan the user saw is the plan charged), else computed by the hook;
    ``write``: called with the release before it is completed (a crash in it leaves the entries
    reserved: spent, never double-spent); ``finish=False`` leaves completing to the caller
    (the CLI completes only once its staged files are safe). Raises BudgetError, nothing drawn,
    when the release does not fit.

    Parameters
    ----------
    kind : ReleaseKind
        From :func:`fdp_core.publish.kinds.release_kind`.
    account : Ledger or StoredBudget
    request : CommitRequest
    quote : Quote, optional
        The quote shown before the commit (reused: the charge is the quote).
    write : callable, optional
        Writes the bundle between the draw and the completion.
    finish : bool
        Complete the stored entries here (False: the caller completes them after writing).

    Returns
    -------
    CommittedRelease

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> from fdp_core.publish.kinds import release_kind
    >>> t = np.linspace(0, 1, 20)
    >>> fd = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 100), 1 + t) / 2)
    >>> release = commit_release(release_kind("mean"), fdp.Ledger(4.0, 1e-4),
    ...                          CommitRequest(fd, fdp.MeanSettings(value_range=(0, 1))))
    >>> release.kind
    'mean'
    """
    if kind.commit is None:
        raise TypeError(f"{kind.label} has no commit of its own: {kind.committed_where}")
    release = kind.commit(account, request, quote)
    if write is not None:
        write(release)
    if finish:
        complete(account, release)
    return release


__all__ = ["CommitRequest", "PendingCommit", "Quote", "Reservation", "Steps", "check_parts", "combined_charge",
           "record_quote", "commit_release", "complete", "draw",
           "entry_ids", "execute", "execute_parts", "quote_of", "reserve", "reserve_parts", "run_steps", "sampler_note", "settle"]
