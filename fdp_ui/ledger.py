"""The privacy-budget ledger in the app: the data set's stored budget, the draft before it, the meter.

The ledger lives in a database (:mod:`fdp_core.budget.ledger_store`: a SQLite file by default,
PostgreSQL when ``FDP_LEDGER_URL`` says so), shared by every browser session, every server
restart and the command line. A budget belongs to a registered data set (METHODS.md 22: the
data are matched to the registrations by fingerprint, else by content sketch; the Data page
says which, and registers a near-match as new only with a reason) and a budget name. Until the first
commit the budget widgets edit a *draft* kept in the session; the first commit (or the
"create the budget now" button) stores it, and from then on it is fixed: the app can only
spend it. The ledger only changes inside callbacks, which run before the script, so the
sidebar meter drawn at the top of every page shows the state after the user's last action.
"""

from __future__ import annotations

import math

import streamlit as st

from fdp_core.budget import ledger_store
from fdp_core.budget.accounting import KINDS, Ledger, LedgerEntry
from fdp_core.budget.datasets import resolve
from fdp_core.errors import FdpError, LedgerError
from fdp_core.data.fingerprint import canonical_unit, fingerprint, unit_of_privacy
from fdp_core.explore.presets import preset
from fdp_core.data.sketch import sketch_of

from . import choices, sealed, state
from .layout import small

LEDGER_KEY = "fdp_ledger"  # the ledger in force this run: the stored budget's snapshot, or the draft
DRAFT_KEY = "fdp_ledger_draft"  # the budget chosen in the widgets before the data set has a stored one
RELEASES_KEY = "fdp_releases"
MESSAGE_KEY = "fdp_ledger_message"
ERROR_KEY = "fdp_ledger_error"
NAME_KEY = "rel_budget_name"
FINGERPRINT_KEY = "fdp_fingerprint"
SKETCH_KEY = "fdp_sketch"  # the current data's content sketch (data-derived: never exported)
DATASET_CHOICE_KEY = "fdp_dataset_choice"  # the Data page's registration choice (resolve's keyword arguments)
# Where the Data page keeps the unit of privacy (e.g. {"person_column": "subject"}); part of
# the budget's key (fdp_core.data.fingerprint.UNIT_KEYS).
UNIT_KEY = "fdp_unit"
# A default budget that allows a typical exploration: a few commits at the sidebar's default
# epsilon = 1 (a discrete-Gaussian mean is charged about 1.09), and ten Gaussian commits at the
# default delta = 1e-5 before delta runs out (a budget equal to one release's delta is used up
# by the first Gaussian commit).
DEFAULT_EPSILON_TOTAL = 4.0
DEFAULT_DELTA_TOTAL = 1e-4
# A preset's delta is a session total; each release gets a tenth of it, so one Gaussian commit
# does not use it up.
PRESET_RELEASES_PER_DELTA = 10
DELTA_TOTAL_CHOICES = (0.0, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 0.01, 0.05, 0.1)
FILTER_LABELS = {"basic": "basic: sum of epsilon and of delta (default)",
                 "zcdp": "zCDP: sum of rho (tighter for many Gaussian releases; needs delta > 0)"}
KIND_LABELS = {"mean": "mean", "kde": "density (KDE)", "pca": "principal components", "covariance": "covariance",
               "regression": "regression", "tuning": "parameter selection"}
# Budget widgets on the Release page; defaults set here so every page sees the same budget.
BUDGET_DEFAULTS = {"rel_budget_epsilon": DEFAULT_EPSILON_TOTAL, "rel_budget_delta": DEFAULT_DELTA_TOTAL,
                   "rel_filter": "basic", "rel_split_on": False, "rel_split_mean": 1.0, "rel_split_kde": 1.0,
                   "rel_split_pca": 1.0}
NEW_BUDGET_COMMAND = ("python -m fdp_core ledger init --data FILE --epsilon E --delta D --name NEW_NAME "
                      "[--ledger URL]")


@st.cache_resource(show_spinner=False)
def _store(url: str) -> ledger_store.LedgerStore:
    return ledger_store.LedgerStore(url)


def store() -> ledger_store.LedgerStore:
    """The ledger database in force (FDP_LEDGER_URL, else the default file); LedgerError if unusable."""
    return _store(ledger_store.resolve_url())


def location() -> str:
    """Where the ledger lives, in words (or why it cannot be used)."""
    try:
        return store().location
    except FdpError as exc:
        return f"unavailable ({exc})"


def unit_settings() -> dict:
    """The current data set's unit of privacy (the Data page's person column): part of its budget's
    key, the same as the CLI reads from a replayed config's settings."""
    return unit_of_privacy({"person_column": state.person_column()})


def _fingerprints(fd=None) -> tuple[str, str]:
    """(key fingerprint with the unit, curves-only fingerprint), computed once per data set."""
    fd, unit = (state.current().fd if fd is None else fd), unit_settings()
    unit_json = canonical_unit(unit)
    cached = st.session_state.get(FINGERPRINT_KEY)
    if cached is None or cached[0] is not fd or cached[1] != unit_json:
        cached = (fd, unit_json, fingerprint(fd, unit), fingerprint(fd, None))
        st.session_state[FINGERPRINT_KEY] = cached
    return cached[2], cached[3]


def budget_name() -> str:
    return st.session_state.get(NAME_KEY) or ledger_store.DEFAULT_BUDGET


def _sketch(fd=None):
    """The current data's content sketch (computed once per data set; stays in this session and the ledger)."""
    fd = state.current().fd if fd is None else fd
    cached = st.session_state.get(SKETCH_KEY)
    if cached is None or cached[0] is not fd:
        cached = (fd, sketch_of(fd))
        st.session_state[SKETCH_KEY] = cached
    return cached[1]


def account(data=None, *, lookup: bool = False) -> ledger_store.StoredBudget:
    """The budget of the registered data set the current data belong to (it may not exist yet):
    matched by fingerprint or content sketch (METHODS.md 22), or the Data page's choice.

    ``data``: the data set actually committed when it is not the session's current one (sealed
    mode commits the private file, read at commit, while the session shows a public stand-in):
    the charge then goes to the private data's registered data set, never to the stand-in's.
    ``lookup``: for display only; a budget about to be created (a commit) is refused for data matching no
    registration unless the Data page registered them as new with a typed reason (METHODS.md 24)."""
    if data is not None and data is not state.current():
        return resolve(store(), data.fd, unit=unit_settings(), name=budget_name(), source="app",
                       data_label=data.label, vectors=sketch_of(data.fd),
                       fingerprints=(fingerprint(data.fd, unit_settings()), fingerprint(data.fd, None)), lookup=lookup)
    return resolve(store(), state.current().fd, unit=unit_settings(), name=budget_name(), source="app",
                   data_label=state.current().label, vectors=_sketch(), fingerprints=_fingerprints(), lookup=lookup,
                   **_choice())


def _choice(data=None, key: str | None = None) -> dict:
    """The Data page's registration choice for the data now loaded (another data set resets it).
    ``data``, ``key``: the object the choice was made for and its fingerprint key when it is not the
    current curves (sparse data)."""
    saved = st.session_state.get(DATASET_CHOICE_KEY)
    data = state.current().fd if data is None else data
    if not (saved and saved[0] is data):
        return {}
    if saved[1].get("new_dataset") and _registered(saved[1].get("dataset"), key or _fingerprints()[0]):
        # Done: the first commit (or "create the budget now") recorded the registration, so these data now
        # match it exactly; asking for it again would be refused as registering the same data twice.
        st.session_state.pop(DATASET_CHOICE_KEY, None)
        return {}
    return dict(saved[1])


def _registered(name, key: str) -> bool:
    """Whether the ledger holds the data set ``name`` registered for these very data (fingerprint ``key``);
    False for a name taken by other data (resolve then refuses the choice, said on the Data page)."""
    try:
        found = bool(name) and store().dataset_named(ledger_store.check_dataset_name(name))
        return bool(found) and found.budget_key == key
    except FdpError:
        return False


def choice_for(data, key: str) -> dict:
    """The registration choice made on the Data page for ``data`` of fingerprint ``key`` (resolve's arguments)."""
    return _choice(data, key)


def _choose(data=None, **choice) -> None:
    st.session_state[DATASET_CHOICE_KEY] = (state.current().fd if data is None else data, choice)


def render_dataset_choice(container) -> None:
    """The Data page's registration box: which registered data set these data belong to, and the
    deliberate, recorded act of registering a near-match as new data (a name and a reason)."""
    container.markdown("**Registered data set** (the budget belongs to it, not to this file)")
    choice = _choice()
    try:
        budget = account(lookup=True)
    except FdpError as exc:
        container.error(f"Data set not usable: {exc}")
        if choice and container.button("Undo the data-set choice", key="data_dataset_undo"):
            st.session_state.pop(DATASET_CHOICE_KEY, None)
            st.rerun()
        return
    match = budget.match
    if match and not match.get("registered_as_new"):
        container.info(f"{match['message'][0].upper()}{match['message'][1:]}: releases are charged to its budget.")
        if container.checkbox("These are other people: register them as a new data set", key="data_new_dataset"):
            name = container.text_input("name of the new data set", key="data_new_dataset_name")
            reason = container.text_input("reason (recorded in the ledger and shown in later reports)",
                                          key="data_new_dataset_reason")
            if container.button("Register as a new data set", key="data_new_dataset_confirm",
                                disabled=not (name.strip() and reason.strip())):
                _choose(dataset=name, new_dataset=True, reason=reason)
                st.rerun()
    elif match:
        container.warning(f"Registering as the new data set '{match['registered_as_new']}' although these data "
                          f"{match['message']} (reason: {match['reason']}); recorded with the budget at the first "
                          "commit.")
    elif choice.get("new_dataset"):
        container.warning(f"Registering as the new data set '{budget.dataset_name}' (reason: {choice['reason']}); "
                          "recorded with the budget at the first commit.")
    elif budget.store.datasets():
        ask_new_dataset(container, budget)
    else:
        registered = [d.name for d in budget.store.datasets()]
        new_label = f"new data set '{budget.dataset_name}'"
        picked = container.selectbox("these data match no registered data set", [new_label] + registered,
                                     key="data_dataset_pick",
                                     help="A new data set is registered with its budget at the first commit. "
                                          "Picking a registered one is refused unless these data match it.")
        if picked != new_label:
            _choose(dataset=picked)
            st.rerun()


def ask_new_dataset(container, budget, data=None) -> None:
    """Data matching none of the ledger's registrations: no budget is created for them until the
    custodian registers them as a new data set with a typed reason (recorded, shown in later reports).
    ``data``: what the choice is kept for when not the current curves (sparse data)."""
    registered = [d.name for d in budget.store.datasets()]
    container.warning(f"These data match none of the {len(registered)} registered data set(s) "
                      f"({', '.join(registered[:3])}{', ...' if len(registered) > 3 else ''}): a commit is refused "
                      "until you register them as a new data set, with a reason.")
    name = container.text_input("name of the new data set", value=budget.dataset_name, key="data_unmatched_name")
    reason = container.text_input("reason (recorded in the ledger and shown in later reports)",
                                  key="data_unmatched_reason")
    if container.button("Register as a new data set", key="data_unmatched_confirm",
                        disabled=not (name.strip() and reason.strip())):
        _choose(data, dataset=name, new_dataset=True, reason=reason)
        st.rerun()


def budget_names() -> list[str]:
    """Budgets stored for the current data set (the default one always offered)."""
    try:
        names = store().budget_names(account(lookup=True).fingerprint)
    except FdpError:
        names = []
    return list(dict.fromkeys([ledger_store.DEFAULT_BUDGET, *names, budget_name()]))


def draft() -> Ledger:
    if DRAFT_KEY not in st.session_state:
        st.session_state[DRAFT_KEY] = Ledger(DEFAULT_EPSILON_TOTAL, DEFAULT_DELTA_TOTAL)
    return st.session_state[DRAFT_KEY]


def get() -> Ledger:
    """The ledger in force: the data set's stored budget (read from the database), else the draft."""
    try:
        stored = sealed_ledger() or account(lookup=True).ledger()
        st.session_state.pop(ERROR_KEY, None)
    except FdpError as exc:
        st.session_state[ERROR_KEY] = str(exc)
        stored = None
    led = stored if stored is not None else draft()
    st.session_state[LEDGER_KEY] = led
    return led


def sealed_ledger() -> Ledger | None:
    """Sealed mode: the stored budget of the registered data set the private file was declared as (issue 38),
    so the meter, the button's cost and the export show the real entries before the file is read. None
    outside sealed mode or before that data set's first commit."""
    for name in sealed.registered_names():
        dataset = store().dataset_named(name)
        if dataset is not None:
            return store().ledger(dataset.budget_key, budget_name())
    return None


def error() -> str | None:
    """Why the ledger database cannot be used (then every commit is refused)."""
    return st.session_state.get(ERROR_KEY)


def releases() -> list:
    """Releases committed in this browser session (oldest first); the ledger keeps every entry."""
    return st.session_state.setdefault(RELEASES_KEY, [])


def record(release) -> None:
    releases().append(release)


def locked() -> bool:
    """The budget is fixed once it is stored: a filter's guarantee needs it fixed."""
    return isinstance(get(), ledger_store.PersistentLedger)


def _budget_from_widgets() -> Ledger:
    ss = st.session_state
    split = None
    if ss.get("rel_split_on"):
        split = {kind: float(ss.get(f"rel_split_{kind}", 1.0)) for kind in KINDS}
    return Ledger(float(ss["rel_budget_epsilon"]), float(ss["rel_budget_delta"]), split, ss["rel_filter"])


def update_budget() -> None:
    """Callback of the budget widgets: rebuild the draft with the new budget."""
    if locked():
        st.session_state[MESSAGE_KEY] = ("error", "This data set's budget is stored and fixed: it cannot be changed "
                                                  "from the app.")
        return
    try:
        st.session_state[DRAFT_KEY] = _budget_from_widgets()
        st.session_state.pop(MESSAGE_KEY, None)
    except FdpError as exc:
        st.session_state[MESSAGE_KEY] = ("error", f"Budget not changed: {exc}")


def _store_draft(budget: ledger_store.StoredBudget) -> str | None:
    """Store the draft as this data set's budget; a note when another session stored one first."""
    others = budget.store.other_units(budget.fingerprint, budget.content)
    if others:
        raise LedgerError("these curves already have a budget under another unit of privacy "
                          f"({'; '.join(others)}); a budget for a new unit is created on the command line: "
                          + NEW_BUDGET_COMMAND)
    stored, created = budget.ensure(ledger_store.BudgetSpec.of(draft()))
    if created:
        return None
    return (f"Another session stored this data set's budget first (epsilon {stored.epsilon_total:g}, delta "
            f"{stored.delta_total:g}); that budget applies.")


def store_draft(budget: ledger_store.StoredBudget) -> str | None:
    """Store the draft as ``budget`` (a budget resolved elsewhere, e.g. the sparse data's: fdp_ui/sparse_release.py)."""
    return _store_draft(budget)


def charge_account(entry: LedgerEntry, data=None) -> tuple[ledger_store.StoredBudget, str | None]:
    """The stored budget a commit charges, created from the draft at the first commit.

    The candidate is checked against the draft first: a release that cannot fit refuses
    without storing anything (the budget then stays editable). ``data``: see :func:`account`.
    """
    budget = account(data)
    if budget.ledger() is not None:
        return budget, None
    draft().check(entry)
    return budget, _store_draft(budget)


def create_budget() -> None:
    """Callback of "create the budget now": store the draft without committing anything."""
    try:
        budget = account()
        note = None if budget.ledger() is not None else _store_draft(budget)
        st.session_state[MESSAGE_KEY] = ("info", note or f"Budget '{budget.name}' stored for this data set: it is "
                                                          "now fixed.")
    except FdpError as exc:
        st.session_state[MESSAGE_KEY] = ("error", f"Budget not stored: {exc}")


def nearest_choice(value: float, choices) -> float:
    """The allowed choice closest to ``value`` on a log scale, never above it when one is not.

    A preset's epsilon is a session total: rounding the per-release epsilon up would make
    the very first release at it exceed the budget.
    """
    positive = [c for c in choices if c > 0]
    below = [c for c in positive if c <= value * (1 + 1e-12)]
    return min(below or positive, key=lambda c: abs(math.log(c) - math.log(value)))


def apply_preset(name: str) -> None:
    """Callback: a harm-level preset sets the session budget and the global epsilon/delta."""
    p = preset(name)
    if not locked():
        st.session_state["rel_budget_epsilon"] = float(p.epsilon)
        st.session_state["rel_budget_delta"] = float(p.delta)
        update_budget()
    else:
        st.session_state[MESSAGE_KEY] = ("warning", "The budget is locked after the first commit; the preset only "
                                                    "set the global epsilon and delta.")
    choices.apply({"g_epsilon": nearest_choice(p.epsilon, choices.EPSILON_CHOICES),
                   "g_delta": nearest_choice(p.delta / PRESET_RELEASES_PER_DELTA, choices.DELTA_CHOICES)})


def apply_chosen_preset() -> None:
    """Callback of the preset selector: a chosen preset applies at once."""
    apply_preset(st.session_state["rel_preset"])


def meter_text(ledger: Ledger) -> str:
    spent, total, left = ledger.spent(), ledger.total(), ledger.remaining()
    text = (f"Budget: spent epsilon {spent.epsilon:.3g} of {total.epsilon:g}, delta {spent.delta:.2g} of "
            f"{total.delta:g} ({len(ledger.entries)} release(s)); remaining epsilon {left.epsilon:.3g}, "
            f"delta {left.delta:.2g}.")
    if ledger.filter == "zcdp":
        text += f" zCDP filter: rho {spent.rho:.3g} of {total.rho:.3g} spent."
    return text


def where_text(ledger: Ledger) -> str:
    """Which budget is in force and where the ledger lives, in words."""
    if isinstance(ledger, ledger_store.PersistentLedger):
        return (f"Ledger: budget '{ledger.budget_name}' of this data set, fixed since {ledger.created_utc[:19]} UTC, "
                f"stored in {ledger.location}.")
    return (f"Ledger: draft budget '{budget_name()}', stored (and then fixed) at the first commit, in "
            f"{location()}.")


def render_meter(container) -> None:
    """Spent / total / remaining budget of the current data set, drawn in the sidebar of every page."""
    ledger = get()
    usage = ledger.usage()
    # The header and which data set's budget this is: one element (each costs the browser time on every rerun).
    container.markdown("**Privacy budget**  \n" + small(f"of the data set **{state.current().label}**"))
    gone = state.gone_after_reload()
    if gone:
        container.warning(f"The page was reloaded: the uploaded data ({gone}) are gone from this session, and their "
                          "budget is kept in the ledger. Upload the same file again to see and spend it; the meter "
                          "below is the budget of the data set loaded now.")
    container.progress(min(max(usage["total"], 0.0), 1.0), text=f"{min(usage['total'], 1.0):.0%} used")
    lines = [meter_text(ledger)]  # one caption, a line each (the error stays its own element, to stand out)
    if error():
        container.caption(lines.pop())
        container.error(f"Ledger unavailable, commits are refused: {error()}")
    else:
        lines.append(where_text(ledger))
    if ledger.split is not None:
        lines.append("Split: " + "; ".join(
            f"{KIND_LABELS[k]} {min(usage[k], 1.0):.0%} of its {ledger.split[k]:.0%} share used" for k in KINDS
            if ledger.split[k] > 0))
    if lines:
        container.caption("  \n".join(lines))
    if usage["total"] >= 1.0 - 1e-9:
        spent, total = ledger.spent(), ledger.total()
        if ledger.filter == "basic" and spent.epsilon < total.epsilon * (1 - 1e-9):
            # Only delta ran out: pure epsilon-DP releases (delta = 0) still fit.
            from fdp_core.registry import pure_mechanism_names  # lazy: the mechanisms, only for this warning

            container.warning(f"Delta budget used up: only pure epsilon-DP releases ({', '.join(pure_mechanism_names())}) "
                              f"can still be committed; epsilon {total.epsilon - spent.epsilon:.3g} remains.")
        else:
            container.warning("Budget exhausted: no further release can be committed.")
