"""Release & audit: set the budget, commit releases with vetted noise, export them, audit the mechanism."""

import math
from dataclasses import replace

import pandas as pd
import streamlit as st

from fdp_core.publish import export

from fdp_core.budget import ledger_store
from fdp_core.budget.accounting import KINDS
from fdp_core.errors import FdpError
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.bands import mean_part
from fdp_core.releases.mean import MECHANISM_LABELS, MeanSettings
from fdp_core.releases.pca import PcaSettings
from fdp_core.registry import mean_mechanism, pure_mechanism_names
from fdp_core.explore.presets import DISCLAIMER, PRESETS
from fdp_core.settings_fields import page_defaults, page_keys, page_settings
from fdp_ui import ledger as ledger_ui
from fdp_ui import commit_checks, mean_controls, plots, sealed, sidebar, state

COMMIT_MESSAGE_KEY = "rel_commit_message"
RANGE_REQUIRED = ("Declare a public value range first (Data page: the lowest and highest possible curve values, "
                  "chosen from domain knowledge, then tick 'I declare this range public'): without it the clipping "
                  "and centring would have to come from the data.")
EXPORT_CACHE_KEY = "rel_export_cache"
AUDIT_KEY = "rel_audit_result"
# The density and components controls: the settings fields' keys and defaults come from their
# metadata (fdp_core/releases/kde.py, fdp_core/releases/pca.py, page family "release"); the feature and the
# committed mean to centre by are inputs of the commit, not settings.
PAGE = "release"
KDE_KEYS = page_keys(KdeSettings, PAGE)
PCA_KEYS = page_keys(PcaSettings, PAGE)
FEATURE_KEY, MEAN_ID_KEY = "rel_kde_feature", "rel_pca_mean"
CONTROL_DEFAULTS = {**page_defaults(KdeSettings, PAGE), **page_defaults(PcaSettings, PAGE), FEATURE_KEY: "l2norm",
                    MEAN_ID_KEY: "none"}

ss = st.session_state
# The release commits the mean exactly as previewed on the Mean page (its controls, kept alive
# while this page is open) with the global settings of the sidebar.
mean_controls.keep()
led = ledger_ui.get()
# Budget widgets always show the ledger in force: the stored budget (fixed), else the draft,
# which the widgets' callback keeps equal to them (a data set switched to one without a
# stored budget shows its draft, never a previous data set's stored values).
budget_values = {"rel_budget_epsilon": led.epsilon_total, "rel_budget_delta": led.delta_total,
                 "rel_filter": led.filter, "rel_split_on": led.split is not None,
                 **{f"rel_split_{k}": (1.0 if led.split is None else round(100 * led.split[k], 6))
                    for k in ("mean", "kde", "pca")}}
for key, value in {**budget_values, **CONTROL_DEFAULTS}.items():
    ss[key] = value if key in budget_values else ss.get(key, value)

st.title("Release & audit")
ds = state.current()
g = sidebar.render()
led = ledger_ui.get()

st.info("**Previews cost nothing.** The curves on the other pages are the analyst's view: drawn with numpy "
        "(idealised real-arithmetic DP), never exported, and not counted against the budget. **A commit is a "
        "release:** it always draws fresh noise from OS entropy with an exact discrete sampler (OpenDP), spends "
        "budget, and is what you can download. A release that does not fit the remaining budget is refused before "
        "any noise is drawn.")

# --------------------------------------------------------------------------- 1. budget
st.header("1. Privacy budget")
if g.tutorial:
    st.info("Tutorial: the budget is the total privacy loss you accept for this data set, across every session, "
            "server restart and command-line replay. Every commit spends part of it; the ledger adds the costs up "
            "(the sidebar meter shows what is left). Choose it before the first commit: the first commit stores it "
            "and from then on it is fixed, because a budget raised after seeing results would no longer be a "
            "guarantee.")
stored_names = ledger_ui.budget_names()
if ss.get(ledger_ui.NAME_KEY) not in stored_names:
    ss[ledger_ui.NAME_KEY] = ledger_store.DEFAULT_BUDGET
st.selectbox("budget of this data set", stored_names, key=ledger_ui.NAME_KEY,
             help="Budgets are created once per data set. The custodian can create another named budget on the "
                  f"command line: {ledger_ui.NEW_BUDGET_COMMAND}")
led = ledger_ui.get()
if ledger_ui.error():
    st.error(f"The ledger database cannot be used, so nothing can be committed: {ledger_ui.error()}")
elif ledger_ui.locked():
    st.caption(f"{ledger_ui.where_text(led)} It can only be spent: not raised, not reset. Back it up by copying "
               "the database (see the README).")
else:
    st.caption(ledger_ui.where_text(led) + " It is shared by every browser session and the command line.")
left, right = st.columns([1, 1])
with left:
    choice = st.selectbox("preset by harm level", [p.name for p in PRESETS], key="rel_preset", index=None,
                          placeholder="choose a harm level (applies at once)", on_change=ledger_ui.apply_chosen_preset)
    chosen = next((p for p in PRESETS if p.name == choice), None)
    if chosen is not None:
        st.caption(f"Session budget epsilon = {chosen.epsilon:g}, delta = {chosen.delta:g}; each release: delta "
                   f"{ledger_ui.nearest_choice(chosen.delta / ledger_ui.PRESET_RELEASES_PER_DELTA, sidebar.DELTA_CHOICES):g}."
                   f" {chosen.description}")
        st.button("apply again", key="rel_apply_preset", on_click=ledger_ui.apply_preset, args=(choice,),
                  help="Sets the session budget and the global epsilon/delta (nearest slider values) in the sidebar.")
    st.caption(f"**{DISCLAIMER}**")
with right:
    disabled = ledger_ui.locked()
    st.number_input("total epsilon", min_value=0.01, max_value=100.0, step=0.1, format="%.4g",
                    key="rel_budget_epsilon", on_change=ledger_ui.update_budget, disabled=disabled)
    st.selectbox("total delta", ledger_ui.DELTA_TOTAL_CHOICES, key="rel_budget_delta",
                 on_change=ledger_ui.update_budget, disabled=disabled, format_func=lambda v: f"{v:g}",
                 help=f"0 = pure epsilon-DP budget: only pure mechanisms ({', '.join(pure_mechanism_names())}) fit.")
    st.radio("privacy filter", list(ledger_ui.FILTER_LABELS), key="rel_filter", on_change=ledger_ui.update_budget,
             disabled=disabled, format_func=ledger_ui.FILTER_LABELS.get,
             help="Parameters chosen after seeing earlier outputs need a filter: a release is refused once the "
                  "running sum would exceed the budget.")
    split_on = st.toggle("split the budget across mean / density / components", key="rel_split_on",
                         on_change=ledger_ui.update_budget, disabled=disabled)
    if split_on:
        cols = st.columns(3)
        for col, kind in zip(cols, ("mean", "kde", "pca")):
            col.number_input(f"weight: {ledger_ui.KIND_LABELS[kind]}", min_value=0.0, max_value=100.0, step=1.0,
                             key=f"rel_split_{kind}", on_change=ledger_ui.update_budget, disabled=disabled)
    if disabled:
        st.caption("The budget is stored and fixed.")
    else:
        st.button("create the budget now (then it is fixed)", key="rel_create_budget",
                  on_click=ledger_ui.create_budget,
                  help="Otherwise the first commit stores it. Either way it can never be raised or reset from the app.")
message = ss.pop(ledger_ui.MESSAGE_KEY, None)
if message:
    getattr(st, message[0])(message[1])
st.caption(ledger_ui.meter_text(led))


# --------------------------------------------------------------------------- 2. commit
def _mean_summary(s: MeanSettings) -> str:
    entry = mean_mechanism(s.mechanism)
    parts = [f"epsilon = {s.epsilon:g}", f"delta = {s.delta:g}" if entry.uses_delta else "delta = 0 (pure)"]
    return ", ".join(parts + entry.basis.settings_summary(entry, s))


def _kde_settings() -> KdeSettings:
    from fdp_core.registry.kde import kde_mechanism

    settings = page_settings(KdeSettings, PAGE, ss, **g.fields_of(KdeSettings))
    if "bandwidth" not in kde_mechanism(settings.mechanism).fields:  # its box is disabled: no bandwidth
        settings = replace(settings, bandwidth=None)
    return settings


def _pca_settings() -> PcaSettings:
    from fdp_core.registry.pca import pca_sampler, sampler_for

    k = int(ss[PCA_KEYS["k"]])
    sampler = ss[PCA_KEYS["sampler"]]
    if k == 1:  # one component: the choice's sampler for k = 1 (an exact choice means the exact sampler)
        sampler = sampler_for(pca_sampler(sampler).choice, k)
    centring = ("released-mean" if ss[MEAN_ID_KEY] != "none" else
                "public" if g.value_range is not None else "none")
    return page_settings(PcaSettings, PAGE, ss, sampler=sampler, centring=centring, **g.fields_of(PcaSettings))


def _released_mean(release_id: str):
    """Values of a committed mean release (its budget is already in the ledger)."""
    if release_id == "none":
        return None
    release = next(r for r in ledger_ui.releases() if r.id == release_id)
    return release.table["value"].to_numpy()


def _commit(kind: str, inputs: tuple) -> None:
    """Callback: charge the stored budget (one locked transaction), draw, record. Runs before the
    script, so the meter is current. The first commit stores the draft budget."""
    data = state.current()
    seen = state.views_seen()  # the report lists what the session showed before this commit
    unit_blockers, _, declaration = commit_checks.unit_checks(data)
    if unit_blockers:  # the button is disabled then; a stale click is refused the same way
        ss[COMMIT_MESSAGE_KEY] = ("error", "Not committed: " + "; ".join(unit_blockers) + ".")
        return
    try:
        data, seen = sealed.commit_data(data, seen)  # sealed mode: the private file, read only here
        if kind in ("mean", "pca") and inputs[0].value_range is None:
            ss[COMMIT_MESSAGE_KEY] = ("error", RANGE_REQUIRED)
            return
        export.refuse_data_dependent(inputs[1] if kind == "kde" else inputs[0])  # before the draft is stored
        if kind == "mean" and inputs[0].confidence_band is not None:  # the mean and its second moment
            from fdp_core.publish.band_commit import commit_mean_with_band

            settings, text = inputs
            budget, note = ledger_ui.charge_account(
                export.prepare_mean_commit(data.fd, mean_part(settings)).entry, data)
            release = commit_mean_with_band(budget, data.fd, settings, label=text, data_label=data.label,
                                            looked_at=seen)
            for entry_id in release.record["part_entry_ids"][1:]:  # the mean's own entry is completed below
                budget.complete(entry_id)
        elif kind == "mean":
            settings, text = inputs
            pending = export.prepare_mean_commit(data.fd, settings, label=text)
            budget, note = ledger_ui.charge_account(pending.entry, data)
            release = export.commit_mean(budget, data.fd, settings, label=text, data_label=data.label,
                                         pending=pending, looked_at=seen)
        elif kind == "kde":
            feature, settings, text = inputs
            pending = export.prepare_kde_commit(data.fd, feature, settings, label=text)
            budget, note = ledger_ui.charge_account(pending.entry, data)
            release = export.commit_kde(budget, data.fd, feature, settings, label=text, data_label=data.label,
                                        pending=pending, looked_at=seen)
        else:
            settings, text, mean_id = inputs
            budget, note = ledger_ui.charge_account(export.pca_ledger_entry(settings, label=text), data)
            release = export.commit_pca(budget, data.fd, settings, label=text, data_label=data.label,
                                        released_mean=_released_mean(mean_id),
                                        released_mean_id=None if mean_id == "none" else mean_id, looked_at=seen)
        budget.complete(release.id)
    except FdpError as exc:
        ss[COMMIT_MESSAGE_KEY] = ("error", str(exc))
        return
    commit_checks.declare_unit(release, declaration)
    plots.label_release(release)
    ledger_ui.record(release)
    ss["rel_export_choice"] = release.id
    ss[COMMIT_MESSAGE_KEY] = ("success", (f"{note} " if note else "")
                              + f"Committed {release.label} (id {release.id}): charged epsilon "
                                f"{release.entry.epsilon:.4g}, delta {release.entry.delta:.3g} to budget "
                                f"'{budget.name}'. {release.accuracy}")


st.header("2. Commit a release")
if g.tutorial:
    st.info("Tutorial: the commit uses the settings you explored (sidebar and the Mean page). Before you click, the "
            "cost below is computed from the sampler's own privacy map without drawing anything. Clicking draws "
            "the noise once; there is no undo and no second draw for free.")
# Covariance, regression and parameter selection commit from their own pages (Covariance & regression,
# Trade-offs), into the same ledger; this page builds mean, density and component releases.
kind = st.radio("what to commit", KINDS, key="rel_kind", horizontal=True, format_func=ledger_ui.KIND_LABELS.get)
if g.tutorial:
    st.caption("Covariance and regression are committed on the Covariance & regression page, a private parameter "
               "selection on the Trade-offs page; all of them are charged to this ledger.")
label = st.text_input("label (optional)", key="rel_label", placeholder="e.g. mean curve for the annual report")
entry, inputs, flags, sampler_note = None, None, (), ""
try:
    if kind == "mean":
        settings = mean_controls.settings(g)
        st.markdown(f"**{MECHANISM_LABELS[settings.mechanism]}** with the Mean page's settings: "
                    + _mean_summary(settings) + ".")
        st.page_link("pages/mean.py", label="change the mechanism and its options on the Mean page",
                     icon=":material/show_chart:")
        if st.toggle("with the privacy band and the confidence band", key="rel_band_on",
                     help="Spends a share of epsilon (and delta) on a private second moment: two ledger entries. "
                          "The bands are post-processing (docs/METHODS.md 18)."):
            b1, b2 = st.columns(2)
            settings = replace(settings, confidence_band=b1.select_slider("band level", [0.8, 0.9, 0.95, 0.99],
                                                                          value=0.95, key="rel_band_level"),
                               band_share=b2.slider("second moment's share", 0.05, 0.5, value=0.2, step=0.05,
                                                    key="rel_band_share"))
            st.caption(f"Below: the mean's part (epsilon {settings.epsilon * (1 - settings.band_share):.3g}); the "
                       f"second moment adds epsilon {settings.epsilon * settings.band_share:.3g}.")
        pending = export.prepare_mean_commit(ds.fd, mean_part(settings), label=label)
        inputs = (settings, label)
    elif kind == "kde":
        from fdp_core.releases.kde import KDE_MECHANISM_LABELS, KDE_MECHANISMS
        from fdp_core.registry.kde import kde_mechanism

        c1, c2, c3, c4 = st.columns(4)
        c1.selectbox("density mechanism", KDE_MECHANISMS, key=KDE_KEYS["mechanism"],
                     format_func=lambda m: KDE_MECHANISM_LABELS[m].split(",")[0])
        c2.text_input("per-curve feature", key=FEATURE_KEY,
                      help="value:T0, mean:U:V, l2norm, max or column:NAME; two joined by ',' for a 2-d density.")
        c3.text_input("public box", key=KDE_KEYS["box"],
                      help="LO,HI (1-d) or LO1,HI1,LO2,HI2 (2-d): chosen from domain knowledge, not from the data.")
        c4.number_input("bandwidth h (0 = default rule)", min_value=0.0, format="%.4g", key=KDE_KEYS["bandwidth"],
                        disabled="bandwidth" not in kde_mechanism(ss[KDE_KEYS["mechanism"]]).fields)
        settings = _kde_settings()
        pending = export.prepare_kde_commit(ds.fd, ss[FEATURE_KEY], settings, label=label)
        inputs = (ss[FEATURE_KEY], settings, label)
    else:
        from fdp_core.releases.pca import PCA_BASES, PCA_SAMPLERS
        from fdp_core.registry.pca import pca_sampler

        means = {r.id: r.label for r in ledger_ui.releases() if r.kind == "mean"}
        if ss.get(MEAN_ID_KEY, "none") not in means:
            ss[MEAN_ID_KEY] = "none"
        c1, c2, c3, c4 = st.columns(4)
        c1.number_input("components k", min_value=1, max_value=5, step=1, key=PCA_KEYS["k"])
        c2.selectbox("basis", PCA_BASES, key=PCA_KEYS["basis"])
        c3.selectbox("sampler", PCA_SAMPLERS, key=PCA_KEYS["sampler"], format_func=lambda s: pca_sampler(s).label,
                     help="k = 1 always uses the exact sampler unless Gibbs is chosen.")
        c4.number_input("gamma (base-measure strength)", min_value=0.0, step=0.5, key=PCA_KEYS["gamma"])
        c5, c6 = st.columns(2)
        c5.selectbox("centring", ["none", *means], key=MEAN_ID_KEY,
                     format_func=lambda i: "none" if i == "none" else f"by the committed mean {means[i]} ({i})",
                     help="Centre by a mean released earlier (its budget is already counted), or not at all.")
        c6.number_input("Gibbs sweeps", min_value=100, max_value=200_000, step=1000, key=PCA_KEYS["gibbs_sweeps"],
                        disabled="gibbs_sweeps" not in pca_sampler(ss[PCA_KEYS["sampler"]]).fields)
        settings = _pca_settings()
        pending = None
        entry = export.pca_ledger_entry(settings, label=label)
        flags = (f"{export.PCA_HARDENING}: the release is idealised real-arithmetic DP",)
        if entry.approximate:
            flags += (pca_sampler(settings.sampler_name).caveat,)
        sampler_note = (f"Sampler: {entry.noise['sampler']}; fresh OS entropy; {export.PCA_HARDENING.lower()}. "
                        f"Data-dependent diagnostics (acceptance rate, variance ratio) are never exported.")
        inputs = (settings, label, ss[MEAN_ID_KEY])
    if pending is not None:
        entry = pending.entry
        flags = tuple(getattr(pending.plan, "data_dependent_flags", ()))
        sampler_note = (f"Sampler: {pending.noise_plan.sampler}, grid 2^{pending.noise_plan.granularity_exp}, "
                        f"{int(pending.active.sum())} noisy coefficients, unit noise scale "
                        f"{pending.noise_plan.unit_noise_scale:.9g} (sensitivity inflation for the grid applied).")
except FdpError as exc:
    st.error(f"Cannot prepare this release: {exc}")
    entry = None

person = g.person_column
st.markdown("**Unit of privacy**: " + (f"a person (column '{person}'): n = {state.n_persons(ds)} persons, "
                                        f"{ds.fd.n} curves." if person else
                                        f"a curve (every curve is one person): n = {ds.fd.n} curves."))
if entry is not None and kind in ("mean", "pca") and g.value_range is None:
    st.warning(RANGE_REQUIRED)
    st.page_link("pages/data.py", label="declare the range on the Data page", icon=":material/table:")
    entry = None
if entry is not None:
    seen = state.views_seen()
    if seen:
        st.caption("The report of this commit will list what the session looked at before it: " + "; ".join(seen)
                   + ".")
    for flag in flags:
        if flag.startswith(export.PCA_HARDENING) or flag.startswith("Gibbs"):
            st.warning(flag + ".")
        else:
            st.error(f"Data-dependent: {flag}. A commit is possible for teaching, but it is NOT differentially "
                     "private and is flagged in every exported file.")
    if kind == "pca" and g.tau_from_data:
        st.error("Data-dependent: tau read off the data. The release is NOT differentially private.")
    cost = (f"This commit will be charged **epsilon {entry.epsilon:.4g}, delta {entry.delta:.3g}** "
            f"({export.native_parameter(entry)}).")
    if entry.event.accounted_by_rho:
        cost += (f" The exact discrete Gaussian is accounted by the rho its privacy map reports; at delta "
                 f"{entry.delta:g} that is epsilon {entry.epsilon:.4g} (CKS conversion), a little more than the "
                 f"continuous calibration's epsilon {g.epsilon:g}.")
    st.markdown(cost)
    st.caption(sampler_note)
    ready = commit_checks.readiness(kind, g.value_range, led, entry, ds, ledger_ui.error())
    for text in ready.warnings:
        st.warning(text[0].upper() + text[1:] + ".")
    if ready.declaration:
        st.caption(f"Recorded with the release: {ready.declaration}.")
    if not ready.ready:
        st.warning("**Commit not possible yet**: " + "; ".join(ready.blockers) + ".")
        if any("Data page" in b for b in ready.blockers):
            st.page_link("pages/data.py", label="choose on the Data page", icon=":material/table:")
    st.button(f"Commit: draw fresh noise and record ({commit_checks.cost_text(led, entry)})", key="rel_commit",
              type="primary", on_click=_commit, args=(kind, inputs), disabled=not ready.ready,
              help="Disabled: " + "; ".join(ready.blockers) if not ready.ready else
              "Charged to the budget at once; there is no undo.")
commit_message = ss.pop(COMMIT_MESSAGE_KEY, None)
if commit_message:
    getattr(st, commit_message[0])(commit_message[1])

# --------------------------------------------------------------------------- 3. ledger
st.header("3. Ledger")
if g.tutorial:
    st.info("Tutorial: each row is one release with its native privacy parameter (mu for continuous Gaussian "
            "noise, rho for the discrete Gaussian, epsilon for pure mechanisms, rho = epsilon^2/8 for the "
            "exponential mechanism). The totals combine them three valid ways; the smallest epsilon wins.")
st.dataframe(export.ledger_table(led), hide_index=True, width="stretch", key="rel_ledger_table",
             column_config={"epsilon": st.column_config.NumberColumn(format="%.4g"),
                            "delta": st.column_config.NumberColumn(format="%.3g"),
                            "rho": st.column_config.NumberColumn(format="%.4g"),
                            "mu": st.column_config.NumberColumn(format="%.4g")})
report = led.composition()
# "-" where a composition does not apply (never a raw None).
st.dataframe(export.composition_table(report).style.format({"epsilon": "{:.4g}", "delta": "{:.3g}"}, na_rep="-"),
             hide_index=True, width="stretch", key="rel_composition_table")
m1, m2, m3 = st.columns(3)
m1.metric("composed total epsilon", "-" if report.best is None else f"{report.best.epsilon:.4g}",
          help="Minimum over the valid compositions at the total delta.")
m2.metric("at delta", f"{report.delta_target:g}")
m3.metric("best composition", "-" if report.best is None else report.best.method)
if report.approximate_nominal is not None:
    st.warning(f"{report.n_approximate} approximate release(s) (Gibbs sampler) are not covered by these totals; "
               f"their nominal cost, not a DP claim: epsilon {report.approximate_nominal.epsilon:.4g}, delta "
               f"{report.approximate_nominal.delta:.3g}. The filter still charges it.")
for note in report.notes:
    st.caption(note)
st.caption(f"Filter in force: {ledger_ui.FILTER_LABELS[led.filter]}. Its guarantee is the budget itself: epsilon "
           f"{led.epsilon_total:g}, delta {led.delta_total:g}.")
st.caption("The ledger cannot be reset from the app: what was published stays published, and its privacy loss "
           "still counts against the people in the data. A data custodian can start another named budget on the "
           f"command line (`{ledger_ui.NEW_BUDGET_COMMAND}`); the records show which budget a release spent.")

# --------------------------------------------------------------------------- 4. export
st.header("4. Export and report")
if g.tutorial:
    st.info("Tutorial: the bundle holds only what was released: the sanitized curve on the data grid, the "
            "sampler's coefficients on its 2^k grid, the provenance (every parameter, the sampler, library "
            "versions), a config to replay the same settings with fresh noise, and a report anyone can open "
            "offline. Never the data, never the non-private estimate.")
committed = ledger_ui.releases()
if not committed:
    st.caption("Nothing committed in this browser session." + (
        f" The ledger holds {len(led.entries)} earlier release(s) of these data; their files were downloaded (or "
        "written by the command line) when they were committed." if led.entries else ""))
else:
    by_id = {r.id: r for r in committed}
    if ss.get("rel_export_choice") not in by_id:
        ss["rel_export_choice"] = committed[-1].id
    chosen_id = st.selectbox("release", list(by_id), key="rel_export_choice",
                             format_func=lambda i: f"{by_id[i].label} ({i})")
    release = by_id[chosen_id]
    cache = ss.setdefault(EXPORT_CACHE_KEY, {})
    cache_key = (release.id, len(led.entries))
    if cache_key not in cache:
        cache.clear()
        cache[cache_key] = (export.export_zip(release, led), export.report_html(release, led))
    zip_bytes, report_text = cache[cache_key]
    d1, d2 = st.columns(2)
    d1.download_button("Download release bundle (zip)", data=zip_bytes, file_name=f"fdp_release_{release.id}.zip",
                       mime="application/zip", key="rel_download", icon=":material/download:", on_click="ignore")
    d1.caption("release.csv, coefficients.csv (the sampler's output on its 2^k grid), release.json (provenance), "
               "config.yaml (replay), ledger.json, report.html.")
    d2.download_button("Download the HTML report only", data=report_text, file_name=f"fdp_report_{release.id}.html",
                       mime="text/html", key="rel_download_report", on_click="ignore")
    d2.download_button("Download the analyst view (NOT for publication)", data=export.analyst_view_json(release),
                       file_name=f"analyst_view_{release.id}.json", mime="application/json",
                       key="rel_download_analyst", on_click="ignore")
    d2.caption("The analyst view holds counts and errors computed from the data without noise (clipped and dropped "
               "curves, bias against the raw mean, sampler diagnostics): for your own checks, never publish. It is "
               "not part of the zip bundle.")
    for flag in release.flags:
        st.error(f"{export.NOT_DP_WARNING}: {flag}")
    for paragraph in export.privacy_statement(release):
        st.markdown(paragraph)
    st.plotly_chart(export.release_figure(release), width="stretch", key="rel_release_figure")
    (st.success if release.tradeoff else st.info)(release.accuracy)
    f1, f2 = st.columns(2)
    if release.tradeoff:
        f1.plotly_chart(export.tradeoff_figure(release), width="stretch", key="rel_tradeoff_figure")
    f2.plotly_chart(export.power_figure(release, led), width="stretch", key="rel_power_figure")
    st.caption("Replay on a data file with the same settings and fresh noise: `python -m fdp_core replay "
               "config.yaml --data FILE [--out DIR]`. A replay is a new release with its own cost, charged to the "
               "same budget in the same ledger (FDP_LEDGER_URL, or --ledger URL).")

# --------------------------------------------------------------------------- 5. audit
st.header("5. Empirical privacy-loss audit")
if g.tutorial:
    st.info("Tutorial: the audit treats the mechanism as a black box. It runs it many times on two data sets that "
            "differ in one curve (the worst case for this mechanism) and checks whether any event is more likely "
            "under one than e^epsilon times the other plus delta. A deliberately under-noised copy (0.9x) is the "
            "control: it shows what a failure looks like when the sample is large enough to see it.")
st.caption("Audits the mean mechanism currently selected (Mean page and sidebar) on a worst-case neighbouring pair "
           "built from public parameters only (grid, n, tau, kernel, penalty): no data are used. Noise from the "
           "numpy sampler with the calibrated scales. Larger samples see smaller violations and take longer.")
runs = st.select_slider("test runs per data set and direction", (100_000, 200_000, 500_000, 1_000_000),
                        value=200_000, key="rel_audit_runs", format_func=lambda v: f"{v:,}")
if st.button("Run the audit", key="rel_audit"):
    try:
        settings = mean_controls.settings(g)
        with st.spinner("auditing..."):
            n_audit = export.prepare_mean_commit(ds.fd, settings).plan.n if settings.value_range is not None \
                or settings.person_column else ds.fd.n
            ss[AUDIT_KEY] = (settings, export.audit_mean_mechanism(settings, ds.fd.grid_points, n_audit,
                                                                   n_select=runs // 4, n_test=runs))
    except FdpError as exc:
        ss[AUDIT_KEY] = (None, str(exc))
if AUDIT_KEY in ss:
    audited_settings, outcome = ss[AUDIT_KEY]
    if audited_settings is None:
        st.error(f"Cannot audit: {outcome}")
    else:
        rows = []
        for name, res in (("calibrated mechanism", outcome.result),
                          (f"control: noise x {outcome.control_factor:g}", outcome.control)):
            rows.append({"run": name, "worst event": res.event, "P(event | D) >= ": res.p_lower,
                         "P(event | D') <= ": res.q_upper,
                         "e^eps P(D') + delta": math.exp(res.epsilon) * res.q_upper + res.delta,
                         "violation": res.violation, "flagged": res.flagged})
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="rel_audit_table")
        st.caption(f"Pair: {outcome.pair}. Statistic: {outcome.statistic}. Flagged = with probability >= "
                   f"1 - 2e-6 the (epsilon = {outcome.epsilon:g}, delta = {outcome.delta:g}) claim is violated.")
        if outcome.result.flagged:
            st.error("The calibrated mechanism was flagged: its noise is too small for the claimed guarantee.")
        else:
            st.success("The calibrated mechanism passed: no event violates the claimed guarantee.")
        if not outcome.control.flagged:
            st.caption("The 0.9x control was not flagged either: with this many runs the audit only sees violations "
                       f"larger than about {3 / math.sqrt(runs):.1g} in probability, and a 10% under-noising at this "
                       "epsilon and delta is smaller. Try more runs; the library's test suite runs the controls where "
                       "they are flagged.")
        if audited_settings != mean_controls.settings(g):
            st.caption("Settings changed since this audit: run it again for the current mechanism.")
