"""The sparse mean on the Release page (issue 24): its own stored budget, its readiness, its commit.

Sparse data (fdp_ui/sparse_view.py) have a budget of their own, keyed like the command line's
(``ledger init --sparse``: the observations' ledger view with the unit "a person, by id"), so the
app and ``release mean --sparse --ledger`` spend the same budget. The first commit stores the
draft budget of the Release page's widgets for them, as for gridded curves. A commit goes through
the commit protocol like every kind: both parts (A and b) checked together, each charged and
drawn, then completed.
"""

from __future__ import annotations

import streamlit as st

from fdp_core.budget import ledger_store
from fdp_core.budget.accounting import Ledger
from fdp_core.budget.datasets import resolve
from fdp_core.data.sparse_data import SPARSE_UNIT, ledger_sketch, ledger_view
from fdp_core.data.fingerprint import fingerprint
from fdp_core.errors import FdpError
from fdp_core.limits import MIN_PERSONS_COMMIT
from fdp_core.publish.protocol import Quote, check_parts

from . import commit_checks, sparse_view
from . import ledger as ledger_ui

VIEW_KEY = "sparse_ledger_view"  # (data, its ledger view): fingerprinted once per data set
BUDGETS_KEY = "sparse_release_budgets"  # release id -> the stored budget it charged


def _view(data):
    cached = st.session_state.get(VIEW_KEY)
    if cached is None or cached[0] is not data:
        cached = (data, ledger_view(data))
        st.session_state[VIEW_KEY] = cached
    return cached[1]


def account(*, lookup: bool = False) -> ledger_store.StoredBudget:
    """The stored budget of the sparse data in use (it may not exist yet). A commit (``lookup`` False) is
    refused for observations matching none of a ledger's registrations (METHODS.md 24) unless the Data
    page registered them as a new data set with a typed reason (render_dataset_choice), as the command
    line's ledger init --sparse --new-dataset --reason does."""
    info = sparse_view.active()
    return resolve(ledger_ui.store(), _view(info["data"]), unit=SPARSE_UNIT, name=ledger_ui.budget_name(),
                   source="app", data_label=info["label"], lookup=lookup, vectors=ledger_sketch(info["data"]),
                   **ledger_ui.choice_for(info["data"], fingerprint(_view(info["data"]), SPARSE_UNIT)))


def render_dataset_choice(container) -> None:
    """The Data page's registration box for sparse data: the registered data set their budget belongs
    to, or, on a ledger holding registrations they match none of, their registration as a new data
    set with a name and a typed reason (recorded at the first commit)."""
    container.markdown("**Registered data set** (the budget belongs to it, not to this file)")
    data = sparse_view.active()["data"]
    try:
        budget = account(lookup=True)
    except FdpError as exc:
        container.error(f"Data set not usable: {exc}")
        return
    choice = ledger_ui.choice_for(data, fingerprint(_view(data), SPARSE_UNIT))
    if budget.match:
        container.info(f"{budget.match['message'][0].upper()}{budget.match['message'][1:]}: releases are charged "
                       "to its budget.")
    elif choice.get("new_dataset"):
        container.warning(f"Registering as the new data set '{budget.dataset_name}' (reason: {choice['reason']}); "
                          "recorded with the budget at the first commit.")
    elif budget.store.datasets():
        ledger_ui.ask_new_dataset(container, budget, data)
    else:
        container.info(f"A new data set '{budget.dataset_name}' is registered with its budget at the first commit.")


def ledger() -> Ledger:
    """The sparse data's ledger in force: its stored budget, else the page's draft."""
    try:
        stored = account(lookup=True).ledger()
    except FdpError:
        stored = None
    return stored if stored is not None else ledger_ui.draft()


def blockers(settings, quote: Quote | None, led: Ledger) -> list[str]:
    """Why the sparse mean cannot be committed yet (empty when it can); nothing is charged."""
    out = []
    # The budget the commit charges can be had: the same checks as for gridded curves (commit_checks).
    charge = None if isinstance(led, ledger_store.PersistentLedger) else commit_checks.charge_blocker(account)
    if charge:
        out.append(charge)
    elif ledger_ui.error():
        out.append(f"the ledger database cannot be used ({ledger_ui.error()})")
    if settings is None:
        out.append("no public domain of t or no public value range declared (Data page)")
    n = sparse_view.active()["data"].n
    if n < MIN_PERSONS_COMMIT:
        out.append(f"n = {n} persons is below the minimum of {MIN_PERSONS_COMMIT} for a release from the app")
    if quote is not None:
        try:
            check_parts(led, quote.entries)
        except FdpError as exc:
            out.append("over budget: " + str(exc).removeprefix("release refused, nothing recorded: "))
    return out


def charge_account(quote: Quote) -> tuple[ledger_store.StoredBudget, str | None]:
    """The sparse data's stored budget, created from the draft at the first commit (both parts
    checked against the draft first: a release that cannot fit stores nothing)."""
    budget = account()
    if budget.ledger() is not None:
        return budget, None
    check_parts(ledger_ui.draft(), quote.entries)
    return budget, ledger_ui.store_draft(budget)


def combined_cost(quote: Quote) -> str:
    """The charge of both parts together, in words (the button and the message)."""
    eps = sum(e.epsilon for e in quote.entries)
    delta = sum(e.delta for e in quote.entries)
    return f"epsilon {eps:.4g}, delta {delta:.3g} in {len(quote.entries)} ledger entries (A and b)"


def remember(release, budget: ledger_store.StoredBudget) -> None:
    """Keep which budget a sparse release charged (its export shows that ledger, not the curves')."""
    st.session_state.setdefault(BUDGETS_KEY, {})[release.id] = budget


def ledger_of(release, default: Ledger) -> Ledger:
    """The ledger to export ``release`` with: its sparse budget's, else ``default`` (the curves')."""
    budget = st.session_state.get(BUDGETS_KEY, {}).get(release.id)
    stored = None if budget is None else budget.ledger()
    return stored if stored is not None else default
