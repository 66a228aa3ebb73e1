"""The Release page's commit section: choose a kind, see its cost, commit it through the commit protocol.

The kinds come from the registry of kinds of release (:mod:`fdp_core.publish.kinds`); their
controls from fdp_ui/release_controls.py. The cost shown is the kind's quote (planned, nothing
drawn); the button's callback re-quotes with the data actually committed (sealed mode reads the
private file only then), charges the stored budget (created from the draft at the first commit),
and runs reserve -> draw -> complete (:func:`fdp_core.publish.kinds.commit`).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from fdp_core.budget.accounting import KINDS
from fdp_core.errors import FdpError
from fdp_core.publish import export, kinds
from fdp_core.publish.protocol import CommitRequest

from . import commit_checks, plots, release_drafts, sealed, sparse_release, sparse_view, state
from . import ledger as ledger_ui
from . import release_controls as controls

COMMIT_MESSAGE_KEY = "rel_commit_message"
RANGE_REQUIRED = ("Declare a public value range first (Data page: the lowest and highest possible curve values, "
                  "chosen from domain knowledge, then tick 'I declare this range public'): without it the clipping "
                  "and centring would have to come from the data.")
KIND_LABELS = {**ledger_ui.KIND_LABELS, "sparse": "sparse mean"}


def _spec(kind: str) -> kinds.ReleaseKind:
    return kinds.release_kind(controls.PAGE_KINDS[kind])


def _success(release, note: str | None, budget, cost: str, verdict: str = "") -> None:
    text = ((f"{note} " if note else "") + f"Committed {release.label} (id {release.id}): charged {cost} to budget "
            f"'{budget.name}'. {release.accuracy}" + (f" {verdict}" if verdict else ""))
    plots.label_release(release)
    ledger_ui.record(release)
    st.session_state["rel_export_choice"] = release.id
    st.session_state[COMMIT_MESSAGE_KEY] = ("success", text)


def _commit(kind: str, choice: controls.Choice, label: str) -> None:
    """Callback: charge the stored budget (one locked transaction), draw, record. Runs before the
    script, so the meter is current. The first commit stores the draft budget."""
    spec = _spec(kind)
    if spec.data == "sparse":
        return _commit_sparse(spec, choice, label)
    ss = st.session_state
    data = state.current()
    seen = state.views_seen()  # the report lists what the session showed before this commit
    unit_blockers, _, declaration = commit_checks.unit_checks(data)
    if unit_blockers:  # the button is disabled then; a stale click is refused the same way
        ss[COMMIT_MESSAGE_KEY] = ("error", "Not committed: " + "; ".join(unit_blockers) + ".")
        return
    try:
        data, seen = sealed.commit_data(data, seen)  # sealed mode: the private file, read only here
        if spec.needs_value_range and choice.settings.value_range is None:
            ss[COMMIT_MESSAGE_KEY] = ("error", RANGE_REQUIRED)
            return
        export.refuse_data_dependent(choice.settings)  # before the draft is stored
        inputs = {**choice.inputs, **(controls.released_mean_inputs(choice.mean_id)
                                      if "released_mean_id" in spec.inputs else {})}
        request = CommitRequest(data.fd, choice.settings, label=label, data_label=data.label, looked_at=seen,
                                inputs=inputs)
        quote = kinds.quote(spec, request)
        budget, note = ledger_ui.charge_account(quote.entry, data)
        # reserve every part -> draw -> complete (the session keeps the release; downloads write it).
        release = kinds.commit(spec, budget, request, quote=quote)
    except FdpError as exc:
        ss[COMMIT_MESSAGE_KEY] = ("error", str(exc))
        return
    commit_checks.declare_unit(release, declaration)
    verdict = release_drafts.stamp(kind, release, choice, state.current())  # never the sealed file's data
    parts = release.part_entries  # every part charged (a band: its mean and second moment)
    _success(release, note, budget, f"epsilon {sum(e.epsilon for e in parts):.4g}, delta "
             f"{sum(e.delta for e in parts):.3g}" + (f" ({len(parts)} parts)" if len(parts) > 1 else ""), verdict)


def _commit_sparse(spec, choice: controls.Choice, label: str) -> None:
    """The sparse mean: its own budget (fdp_ui/sparse_release.py); A and b checked together, then each
    charged and drawn, then both completed."""
    info = sparse_view.active()
    try:
        request = CommitRequest(info["data"], choice.settings, label=label, data_label=info["label"],
                                looked_at=state.views_seen())
        quote = kinds.quote(spec, request)
        budget, note = sparse_release.charge_account(quote)
        release = kinds.commit(spec, budget, request, quote=quote)
    except FdpError as exc:
        st.session_state[COMMIT_MESSAGE_KEY] = ("error", str(exc))
        return
    sparse_release.remember(release, budget)  # its export shows the sparse data's ledger
    verdict = release_drafts.stamp("sparse", release, choice, state.current())
    _success(release, note, budget, sparse_release.combined_cost(quote), verdict)


def _choices() -> tuple[str, ...]:
    """The kinds this page commits: the sparse mean first while sparse data are in use."""
    return (("sparse",) if sparse_view.active() else ()) + KINDS


def _show_flags(kind: str, flags, g) -> None:
    for flag in flags:
        if flag.startswith(export.PCA_HARDENING) or flag.startswith("Gibbs"):
            st.warning(flag + ".")
        else:
            st.error(f"Data-dependent: {flag}. A commit is possible for teaching, but it is NOT differentially "
                     "private and is flagged in every exported file.")
    if kind == "pca" and g.tau_from_data:
        st.error("Data-dependent: tau read off the data. The release is NOT differentially private.")


def _cost(entry, g) -> str:
    cost = (f"This commit will be charged **epsilon {entry.epsilon:.4g}, delta {entry.delta:.3g}** "
            f"({export.native_parameter(entry)}).")
    if entry.event.accounted_by_rho:
        cost += (f" The exact discrete Gaussian is accounted by the rho its privacy map reports; at delta "
                 f"{entry.delta:g} that is epsilon {entry.epsilon:.4g} (CKS conversion), a little more than the "
                 f"continuous calibration's epsilon {g.epsilon:g}.")
    return cost


def _parts_cost(entries) -> str:
    """The one quote of a release in several parts (a band's mean and second moment): each as charged, the total."""
    each = "; ".join(f"{e.label or e.mechanism}: epsilon {e.epsilon:.4g}, delta {e.delta:.3g}" for e in entries)
    return (f"This commit will be charged **epsilon {sum(e.epsilon for e in entries):.4g}, delta "
            f"{sum(e.delta for e in entries):.3g}** in {len(entries)} parts ({each}).")


def _render_sparse(choice, quote, label: str) -> None:
    data = sparse_view.active()["data"]
    st.markdown(f"**Unit of privacy**: a person (column 'id' of the sparse file): n = {data.n} persons, "
                f"{data.n_observations} observations.")
    led = sparse_release.ledger()
    st.caption("The sparse data's own budget. " + ledger_ui.meter_text(led))
    if choice is None:
        st.warning("Declare the public domain of t and the public value range on the Data page first.")
        st.page_link("pages/data.py", label="declare them on the Data page", icon=":material/table:")
    if quote is None:
        return
    for entry in quote.entries:
        st.markdown(f"- {entry.label}: epsilon {entry.epsilon:.4g}, delta {entry.delta:.3g} "
                    f"({export.native_parameter(entry)})")
    st.markdown(f"This commit will be charged **{sparse_release.combined_cost(quote)}** in total.")
    st.caption(quote.sampler_note)
    ack = release_drafts.verdict_section("sparse", choice, None)
    blockers = sparse_release.blockers(choice.settings, quote, led) + ([ack] if ack else [])
    if blockers:
        st.warning("**Commit not possible yet**: " + "; ".join(blockers) + ".")
    st.button(f"Commit: draw fresh noise and record ({sparse_release.combined_cost(quote)})", key="rel_commit",
              type="primary", on_click=_commit, args=("sparse", choice, label), disabled=bool(blockers),
              help="Disabled: " + "; ".join(blockers) if blockers else "Charged to the budget at once; no undo.")


def render(g, ds, led) -> str:
    """Section 2 of the Release page (below its header): kind, controls, cost, readiness, commit button.

    Returns the kind chosen (the page shows the sparse data's ledger while the sparse mean is chosen)."""
    names = {k: release_drafts.label_of(k, KIND_LABELS[k]) for k in _choices()}  # "the mean you explored"
    kind = st.radio("what to commit", tuple(names), key="rel_kind", horizontal=True, format_func=names.get)
    if g.tutorial:
        st.caption("Covariance and regression are committed on the Covariance & regression page, a private "
                   "parameter selection on the Trade-offs page; all of them are charged to this ledger.")
    label = st.text_input("label (optional)", key="rel_label", placeholder="e.g. mean curve for the annual report")
    choice, quote = None, None
    try:
        choice = controls.render(kind, g)
        if choice is not None:
            data = sparse_view.active()["data"] if kind == "sparse" else ds.fd
            quote = kinds.quote(_spec(kind), CommitRequest(data, choice.settings, label=label, inputs=choice.inputs))
    except FdpError as exc:
        st.error(f"Cannot prepare this release: {exc}")
        quote = None
    if kind == "sparse":
        _render_sparse(choice, quote, label)
    else:
        _render_curves(kind, choice, quote, label, g, ds, led)
    message = st.session_state.pop(COMMIT_MESSAGE_KEY, None)
    if message:
        getattr(st, message[0])(message[1])
    release_drafts.show_committed_verdict()
    return kind


def _render_curves(kind, choice, quote, label, g, ds, led) -> None:
    person = g.person_column
    st.markdown("**Unit of privacy**: " + (f"a person (column '{person}'): n = {state.n_persons(ds)} persons, "
                                            f"{ds.fd.n} curves." if person else
                                            f"a curve (every curve is one person): n = {ds.fd.n} curves."))
    if quote is not None and _spec(kind).needs_value_range and g.value_range is None:
        st.warning(RANGE_REQUIRED)
        st.page_link("pages/data.py", label="declare the range on the Data page", icon=":material/table:")
        quote = None
    if quote is None:
        return
    entry = quote.entry
    seen = state.views_seen()
    if seen:
        st.caption("The report of this commit will list what the session looked at before it: " + "; ".join(seen)
                   + ".")
    _show_flags(kind, quote.flags, g)
    st.markdown(_cost(entry, g) if len(quote.entries) == 1 else _parts_cost(quote.entries))
    st.caption(quote.sampler_note)
    ack = release_drafts.verdict_section(kind, choice, ds)  # the verdict beside the cost; amber/red acknowledged
    ready = commit_checks.readiness(kind, g.value_range, led, quote.entries, ds, ledger_ui.error())
    if ack:
        ready = replace(ready, blockers=ready.blockers + (ack,))
    for text in ready.warnings:
        st.warning(text[0].upper() + text[1:] + ".")
    if ready.declaration:
        st.caption(f"Recorded with the release: {ready.declaration}.")
    if not ready.ready:
        st.warning("**Commit not possible yet**: " + "; ".join(ready.blockers) + ".")
        if any("Data page" in b for b in ready.blockers):
            st.page_link("pages/data.py", label="choose on the Data page", icon=":material/table:")
    st.button(f"Commit: draw fresh noise and record ({commit_checks.cost_text(led, quote.entries)})", key="rel_commit",
              type="primary", on_click=_commit, args=(kind, choice, label), disabled=not ready.ready,
              help="Disabled: " + "; ".join(ready.blockers) if not ready.ready else
              "Charged to the budget at once; there is no undo.")
