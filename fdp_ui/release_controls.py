"""The Release page's controls per kind of release: what to commit, as the commit protocol's request.

Each kind the page commits (:data:`fdp_core.publish.kinds.RELEASE_KINDS`: mean, density,
components, and the sparse mean when sparse data are in use) draws its controls here and returns
a :class:`Choice`: the settings and the inputs a commit needs beyond them. The commit callback
(fdp_ui/release_commit.py) turns it into a :class:`fdp_core.publish.protocol.CommitRequest` with
the data actually committed (sealed mode reads the private file only then).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import streamlit as st

from fdp_core.registry import mean_mechanism
from fdp_core.registry.kde import kde_mechanism
from fdp_core.registry.pca import pca_sampler, sampler_for
from fdp_core.releases.kde import KDE_MECHANISM_LABELS, KDE_MECHANISMS, KdeSettings
from fdp_core.releases.mean import MECHANISM_LABELS, MeanSettings
from fdp_core.releases.pca import PCA_BASES, PCA_SAMPLERS, PcaSettings
from fdp_core.settings_fields import page_defaults, page_keys, page_settings

from . import ledger as ledger_ui
from . import mean_controls, release_drafts, sparse_view

# The density and components controls: the settings fields' keys and defaults come from their
# metadata (fdp_core/releases/kde.py, fdp_core/releases/pca.py, page family "release"); the feature and the
# committed mean to centre by are inputs of the commit, not settings.
PAGE = "release"
KDE_KEYS = page_keys(KdeSettings, PAGE)
PCA_KEYS = page_keys(PcaSettings, PAGE)
FEATURE_KEY, MEAN_ID_KEY = "rel_kde_feature", "rel_pca_mean"
CONTROL_DEFAULTS = {**page_defaults(KdeSettings, PAGE), **page_defaults(PcaSettings, PAGE), FEATURE_KEY: "l2norm",
                    MEAN_ID_KEY: "none"}
# The radio's choices (registry names, as the ledger's budget split knows them) and their registry entries.
PAGE_KINDS = {"mean": "mean", "kde": "density", "pca": "components", "sparse": "sparse"}


@dataclass(frozen=True)
class Choice:
    """What the controls chose: the settings, and the commit's other inputs (CommitRequest.inputs).

    ``mean_id``: the committed mean to centre components by ("none": no centring by a released mean);
    the callback reads its values from the session's releases when it commits.
    """

    settings: object
    inputs: dict = field(default_factory=dict)
    mean_id: str = "none"
    draft: object = None  # the page's draft (fdp_ui/drafts.py) this choice commits, if any


def keep_defaults() -> None:
    """Seed the controls' values (kept while other pages are open)."""
    ss = st.session_state
    for key, value in CONTROL_DEFAULTS.items():
        ss[key] = ss.get(key, value)
    sparse_view.keep()  # the sparse domain's declaration (its widgets live on the Data page)


def mean_summary(s: MeanSettings) -> str:
    entry = mean_mechanism(s.mechanism)
    parts = [f"epsilon = {s.epsilon:g}", f"delta = {s.delta:g}" if entry.uses_delta else "delta = 0 (pure)"]
    return ", ".join(parts + entry.basis.settings_summary(entry, s))


def _mean(g) -> Choice:
    settings = mean_controls.settings(g)
    st.markdown(f"**{MECHANISM_LABELS[settings.mechanism]}** with the Mean page's settings: "
                + mean_summary(settings) + ".")
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
    return Choice(settings)


def kde_settings(g) -> KdeSettings:
    settings = page_settings(KdeSettings, PAGE, st.session_state, **g.fields_of(KdeSettings))
    if "bandwidth" not in kde_mechanism(settings.mechanism).fields:  # its box is disabled: no bandwidth
        settings = replace(settings, bandwidth=None)
    return settings


def _kde(g) -> Choice:
    ss = st.session_state
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox("density mechanism", KDE_MECHANISMS, key=KDE_KEYS["mechanism"],
                 format_func=lambda m: KDE_MECHANISM_LABELS[m].split(",")[0])
    c2.text_input("per-curve feature", key=FEATURE_KEY,
                  help="value:T0, mean:U:V, l2norm, max or column:NAME; two joined by ',' for a 2-d density.")
    c3.text_input("public box", key=KDE_KEYS["box"],
                  help="LO,HI (1-d) or LO1,HI1,LO2,HI2 (2-d): chosen from domain knowledge, not from the data.")
    c4.number_input("bandwidth h (0 = default rule)", min_value=0.0, format="%.4g", key=KDE_KEYS["bandwidth"],
                    disabled="bandwidth" not in kde_mechanism(ss[KDE_KEYS["mechanism"]]).fields)
    return Choice(kde_settings(g), {"feature": ss[FEATURE_KEY]})


def pca_settings(g) -> PcaSettings:
    ss = st.session_state
    k = int(ss[PCA_KEYS["k"]])
    sampler = ss[PCA_KEYS["sampler"]]
    if k == 1:  # one component: the choice's sampler for k = 1 (an exact choice means the exact sampler)
        sampler = sampler_for(pca_sampler(sampler).choice, k)
    centring = ("released-mean" if ss[MEAN_ID_KEY] != "none" else
                "public" if g.value_range is not None else "none")
    return page_settings(PcaSettings, PAGE, ss, sampler=sampler, centring=centring, **g.fields_of(PcaSettings))


def _pca(g) -> Choice:
    ss = st.session_state
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
    return Choice(pca_settings(g), mean_id=ss[MEAN_ID_KEY])


def released_mean_inputs(mean_id: str) -> dict:
    """The components' inputs for centring by a committed mean (its budget is already in the ledger)."""
    if mean_id == "none":
        return {"released_mean": None, "released_mean_id": None}
    release = next(r for r in ledger_ui.releases() if r.id == mean_id)
    return {"released_mean": release.table["value"].to_numpy(), "released_mean_id": mean_id}


def _sparse(g) -> Choice | None:
    info = sparse_view.active()
    st.markdown(f"**Sparse mean** of **{info['label']}** ({info['data'].n} persons) with the Mean page's sparse "
                "settings: private normal equations A and b, two ledger entries (docs/METHODS.md 20).")
    st.page_link("pages/mean.py", label="change the basis size, noise and budget share on the Mean page",
                 icon=":material/show_chart:")
    settings = sparse_view.current_settings(g)
    return None if settings is None else Choice(settings)


def _describe_mean(draft) -> str:
    s = draft.settings
    return f"**{MECHANISM_LABELS[s.mechanism]}**: " + mean_summary(s) + release_drafts.band_words(s)


DESCRIBE = {"mean": _describe_mean}
CONTROLS = {"mean": _mean, "kde": _kde, "pca": _pca, "sparse": _sparse}


def render(kind: str, g) -> Choice | None:
    """The draft explored on ``kind``'s page (fdp_ui/drafts.py), else the controls of ``kind`` (a key of
    PAGE_KINDS); None when the choice is not complete yet."""
    return release_drafts.choice(kind, g, Choice, DESCRIBE.get(kind)) or CONTROLS[kind](g)


__all__ = ["CONTROL_DEFAULTS", "Choice", "PAGE_KINDS", "keep_defaults", "kde_settings", "mean_summary", "pca_settings",
           "released_mean_inputs", "render"]
