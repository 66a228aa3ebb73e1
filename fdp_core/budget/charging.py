"""The budget's side of a commit: charge before any noise is drawn, settle after the draw.

Every kind of release (mean, density, PCA, covariance, regression, sparse, private selection)
goes through these two calls around its one draw (fdp_core/publish/commit.py ``execute``), so
a refused release raises before anything is drawn and a stored budget is charged exactly once.
"""

from __future__ import annotations

from .accounting import Ledger, LedgerEntry


def charge(account, entry: LedgerEntry) -> Ledger:
    """Check (and for a stored budget, charge) ``entry`` before any noise is drawn.

    ``account`` is an in-memory :class:`Ledger` (checked here, committed by :func:`settle`
    after the draw) or a :class:`fdp_core.budget.ledger_store.StoredBudget`, charged here for good in
    one locked transaction: a crash after this point leaves the charge (never a double
    spend). Returns the ledger that describes the release (a stored budget's snapshot).
    """
    if isinstance(account, Ledger):
        account.check(entry)
        return account
    return account.reserve(entry)


def settle(account, ledger: Ledger, entry: LedgerEntry) -> None:
    """After a successful draw: record the entry in an in-memory ledger (a stored one already has it)."""
    if account is ledger:
        ledger.commit(entry)
