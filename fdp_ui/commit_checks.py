"""What must hold before the app commits a release, in the user's words (issues 28 and 30).

The Release page (and the summary commits of the Covariance and Trade-offs pages) asks
``readiness`` before it offers the commit button: every *blocker* disables the button and is
shown as the reason; *warnings* are shown beside it. The checks read what the user declared on
the Data page (fdp_ui.state) and the ledger in force; they never draw noise.

- Unit of privacy: when a metadata column repeats (several curves per id) a person column
  must be chosen, or the user must declare, deliberately, that every curve is a different
  person. That declaration is recorded with the release (``declare_unit``).
- Plausible persons: a person column that makes fewer than ``MIN_PERSONS_COMMIT`` persons
  blocks the commit; fewer than ``MIN_PERSONS_WARN`` persons, or fewer than
  ``MIN_PERSON_SHARE`` of the curves, is warned (fdp_core.limits).
- A public value range for curve releases (mean, components).
- The budget can be charged at all (``charge_blocker``): the data belong to a registered data set
  or the Data page registered them as new with a typed reason (METHODS.md 24), the Data page's
  choice of data set stands, and no budget of the same curves under another unit of privacy
  blocks a new one. The same resolution the commit makes, asked before the click; nothing written.
- The cost fits what is left of the budget (the ledger's own check, nothing charged).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from fdp_core.budget.accounting import Ledger, LedgerEntry
from fdp_core.budget.datasets import UnregisteredData
from fdp_core.budget.ledger_store import PersistentLedger
from fdp_core.errors import FdpError, LedgerError
from fdp_core.limits import MIN_PERSON_SHARE, MIN_PERSONS_COMMIT, MIN_PERSONS_WARN
from fdp_core.data.meta_columns import metadata_view
from fdp_core.data.preprocess import repeated_id_columns

from . import ledger as ledger_ui
from . import sealed, state

# The deliberate "every curve is a different person" declaration, stored outside any widget
# (fdp_ui.state) with the data set label it was made for: a new data set asks again.
CURVES_ARE_PERSONS_KEY = "data_curves_are_persons"
CURVES_ARE_PERSONS_FOR_KEY = "data_curves_are_persons_for"
RANGE_KINDS = ("mean", "pca")  # releases of curves: clipped and centred by the declared range


@dataclass(frozen=True)
class Readiness:
    blockers: tuple[str, ...]  # each one alone disables the commit button
    warnings: tuple[str, ...]
    declaration: str | None  # recorded with the release (the unit of privacy declared by the user)

    @property
    def ready(self) -> bool:
        return not self.blockers


def curves_declared_persons(ds: state.Dataset | None = None) -> bool:
    """The user declared, for this data set, that every curve is a different person."""
    ds = ds or state.current()
    ss = st.session_state
    return bool(ss.get(CURVES_ARE_PERSONS_KEY)) and ss.get(CURVES_ARE_PERSONS_FOR_KEY) == ds.label


def set_curves_declared_persons(value: bool, ds: state.Dataset | None = None) -> None:
    ds = ds or state.current()
    st.session_state[CURVES_ARE_PERSONS_KEY] = bool(value)
    st.session_state[CURVES_ARE_PERSONS_FOR_KEY] = ds.label


def person_warnings(n_persons: int, n_curves: int, column: str | None) -> list[str]:
    """Plausibility of the persons a person column makes (public minimum and share of the curves)."""
    what = f"the person column '{column}' makes" if column else "the data hold"
    out = []
    if n_persons < MIN_PERSONS_WARN:
        out.append(f"{what} only {n_persons} persons (fewer than {MIN_PERSONS_WARN}): a release over so few persons "
                   "is mostly noise, or close to each person's own curve")
    if column and n_persons < MIN_PERSON_SHARE * n_curves:
        out.append(f"{what} {n_persons} persons from {n_curves} curves (fewer than {MIN_PERSON_SHARE:.0%} of the "
                   f"curves, about {n_curves / max(n_persons, 1):.0f} curves each): is '{column}' a person id, or a "
                   "grouping such as sex or site?")
    return out


def unit_checks(ds: state.Dataset | None = None) -> tuple[list[str], list[str], str | None]:
    """(blockers, warnings, declaration) of the unit of privacy of the data set in use."""
    ds = ds or state.current()
    column = state.person_column(ds)
    n = state.n_persons(ds)
    blockers, declaration = [], None
    repeated = state.remembered("repeated_ids", ds.fd, None, lambda: repeated_id_columns(metadata_view(ds.fd)))
    if column is None and repeated:
        if curves_declared_persons(ds):
            declaration = (f"every curve is a different person: declared by the analyst, although the column "
                           f"'{repeated[0]}' repeats")
        else:
            blockers.append(f"the column '{repeated[0]}' repeats: choose the person column on the Data page, or "
                            "declare there that every curve is a different person")
    if n < MIN_PERSONS_COMMIT:
        blockers.append(f"n = {n} persons is below the minimum of {MIN_PERSONS_COMMIT} for a release from the app"
                        + (f" (is '{column}' a person id?)" if column else ""))
    return blockers, person_warnings(n, ds.fd.n, column), declaration


def _parts(entry) -> list[LedgerEntry]:
    """Every part of a release's quote (one entry, or the quote's entries: a band's mean and second moment)."""
    return [entry] if isinstance(entry, LedgerEntry) else list(entry)


def budget_blocker(led: Ledger, entry) -> str | None:
    """Why ``entry`` (one LedgerEntry or every part of a quote) does not fit what is left of ``led``
    (None when it fits); the parts are checked together, nothing is charged."""
    trial = Ledger(led.epsilon_total, led.delta_total, led.split, led.filter, entries=list(led.entries))
    try:
        for part in _parts(entry):
            trial.commit(part)
    except FdpError as exc:
        reason = str(exc).removeprefix("release refused, nothing recorded: ")
        return f"over budget: {reason}"
    return None


def charge_blocker(account) -> str | None:
    """Why a commit could not charge the budget ``account()`` resolves (None when it can), in one sentence
    with what to do: the commit's own resolution (fdp_core.budget.datasets.resolve), asked before the
    click so that the button is disabled up front instead of refusing after it. Nothing is written.

    ``account``: the callable the commit charges through (fdp_ui.ledger.account, or the sparse data's).
    A database that cannot be used is left to the ledger-error blocker (None here)."""
    try:
        budget = account()
        if budget.ledger() is not None:
            return None  # a stored budget: charged as it is
        others = budget.store.other_units(budget.fingerprint, budget.content)
    except UnregisteredData as exc:
        names = ", ".join(f"'{n}'" for n in exc.registered[:3]) + (", ..." if len(exc.registered) > 3 else "")
        return (f"these data match none of the {len(exc.registered)} data set(s) registered in this ledger ({names}), "
                "and no budget is created for them silently: register them as a new data set with a name and a "
                "reason on the Data page if they are other people, or load the registered data")
    except LedgerError:
        return None
    except FdpError as exc:
        return f"the data set cannot be charged ({exc}): change the registered data set chosen on the Data page"
    if others:
        return (f"these curves already have a budget under another unit of privacy ({'; '.join(others)}): choose "
                "that person column on the Data page, or create a budget for this unit on the command line ("
                f"{ledger_ui.NEW_BUDGET_COMMAND})")
    return None


def cost_text(led: Ledger, entry) -> str:
    """The commit button's words: the one quote (every part as the ledger will charge it, METHODS.md 23)
    and what remains after it."""
    parts = _parts(entry)
    eps, delta = sum(p.epsilon for p in parts), sum(p.delta for p in parts)
    left = led.remaining()
    after_eps, after_delta = max(left.epsilon - eps, 0.0), max(left.delta - delta, 0.0)
    each = "" if len(parts) == 1 else f" ({len(parts)} parts: " + " + ".join(f"{p.epsilon:.3g}" for p in parts) + ")"
    return (f"costs epsilon {eps:.3g}, delta {delta:.2g}{each}; leaves epsilon {after_eps:.3g}, "
            f"delta {after_delta:.2g}")


def readiness(kind: str, value_range, led: Ledger | None = None, entry: LedgerEntry | None = None,
              ds: state.Dataset | None = None, ledger_error: str | None = None) -> Readiness:
    """Everything that must hold before a release of ``kind`` is committed."""
    blockers, warnings, declaration = unit_checks(ds)
    charge = current_charge_blocker(led, ds)
    if charge:  # also what made the ledger unreadable (a refused Data page choice): said once, in the app's words
        blockers.append(charge)
    elif ledger_error:
        blockers.append(f"the ledger database cannot be used ({ledger_error})")
    if kind in RANGE_KINDS and value_range is None:
        blockers.append("no public value range declared (Data page: the lowest and highest possible values, then "
                        "'I declare this range public')")
    if led is not None and entry is not None:
        over = budget_blocker(led, entry)
        if over:
            blockers.append(over)
    return Readiness(tuple(blockers), tuple(warnings), declaration)


def current_charge_blocker(led: Ledger | None, ds: state.Dataset | None) -> str | None:
    """``charge_blocker`` for the session's current data. Skipped (None) when the ledger in force is the
    data's stored budget (the commit charges it as it is: no second look-up per rerun) and in sealed
    mode (the private file, read only at the click, is charged; the stand-in never is)."""
    if (ds is not None and ds is not state.current()) or sealed.active():
        return None
    led = led if led is not None else st.session_state.get(ledger_ui.LEDGER_KEY)
    if isinstance(led, PersistentLedger):
        return None
    return charge_blocker(ledger_ui.account)


def declare_unit(release, declaration: str | None) -> None:
    """Record the user's declaration of the unit of privacy with a committed release (release.json
    and the report show it); a public choice, not data."""
    if declaration:
        release.record["unit_declaration"] = declaration
