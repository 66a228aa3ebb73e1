"""One draft per analysis page: the release a page shows, handed to the Release page (issue 38).

What you see is what you commit. The Mean, Density, Principal components pages and the sparse
mean each store the release they show, as settings and commit inputs (feature, box, band share,
mechanism, centring), with the verdict the page drew, under one session-state key no widget owns
(so it survives other pages). The Release page lists the drafts of the data set in use ("the
mean you explored", "the density of value:5.25 you explored") and commits the chosen one exactly;
its own controls are the fallback while no page has been explored.

Two verdicts travel with a draft. ``verdict`` is the page's: for a mean it adds the bias computed
from the data, for components and the sparse mean the whole reading is computed from the data, so
it is shown to the analyst and never written into a publishable file. ``public_verdict`` is read
off public inputs only (the noise radius of a mean or a density against the declared scale); it is
the one release.json, report.html and the bundle's README state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np
import streamlit as st

from fdp_core.explore.verdict import Verdict, mean_verdict
from fdp_core.releases.bands import mean_part
from fdp_core.releases.mean import mean_sums, plan_mean_release

DRAFTS_KEY = "page_drafts"  # {kind: Draft}; the kinds are the Release page's (mean, kde, pca, sparse)
PAGES = {"mean": ("pages/mean.py", "Mean page"), "kde": ("pages/density.py", "Density page"),
         "pca": ("pages/components.py", "Principal components page"), "sparse": ("pages/mean.py", "Mean page")}
# The Mean page's band controls (fdp_ui/band_panel.py): the draft of a mean carries them.
BAND_KEYS = ("band_show", "band_level", "band_share", "band_smoothness")
PUBLIC_BASIS = {"mean": "the 95% L2 noise radius against the declared range's width (public inputs only; the bias "
                        "against the raw mean is computed from the data and is not published)",
                "kde": "the 95% L2 noise radius against the uniform density's L2 norm on the public box (public "
                       "inputs only)"}
NOT_PUBLISHED = {"pca": "the components' verdict reads the variance of the raw data (analyst view): not published",
                 "sparse": "the sparse mean's verdict solves the data's own normal equations (analyst view): not "
                           "published"}


@dataclass(frozen=True)
class Draft:
    """The release one page shows: what the Release page commits when it is chosen."""

    kind: str  # "mean", "kde", "pca" or "sparse"
    settings: object  # MeanSettings (band included), KdeSettings, PcaSettings or SparseSettings
    data_label: str  # the data set it was explored on
    verdict: Verdict | None = None  # the page's verdict (analyst view)
    public_verdict: Verdict | None = None  # from public inputs only: the one the published files state
    inputs: dict = field(default_factory=dict)  # CommitRequest.inputs (a density's feature)
    mean_id: str = "none"  # components centred by this committed mean

    @property
    def what(self) -> str:
        """How the Release page names it."""
        if self.kind == "kde":
            return f"the density of {self.inputs.get('feature', 'a feature')} you explored"
        return {"mean": "the mean you explored", "pca": "the components you explored",
                "sparse": "the sparse mean you explored"}[self.kind]

    @property
    def page(self) -> tuple[str, str]:
        return PAGES[self.kind]

    def record(self) -> dict:
        """What release.json says about the verdict (public inputs only)."""
        if self.public_verdict is not None:
            return self.public_verdict.record(PUBLIC_BASIS[self.kind])
        return {"level": None, "basis": NOT_PUBLISHED.get(self.kind, "no verdict for this release")}


def put(draft: Draft) -> None:
    """Store the page's draft (replacing the page's previous one)."""
    st.session_state.setdefault(DRAFTS_KEY, {})[draft.kind] = draft


def drop(kind: str) -> None:
    """Forget the page's draft (the page cannot show a release now: nothing it showed may be committed)."""
    st.session_state.get(DRAFTS_KEY, {}).pop(kind, None)


def get(kind: str, data_label: str) -> Draft | None:
    """The draft of ``kind`` explored on the data set ``data_label`` (None: not explored on it)."""
    draft = st.session_state.get(DRAFTS_KEY, {}).get(kind)
    return draft if draft is not None and draft.data_label == data_label else None


DRIFT_FIELDS = ("epsilon", "value_range", "person_column")  # the sidebar's fields every kind reads


def drift(draft: Draft, g) -> list[str]:
    """The sidebar's settings that changed since the draft was explored (the draft keeps its own)."""
    now = g.fields_of(type(draft.settings))
    names = {f.name for f in fields(draft.settings)}
    return [f"{name} {getattr(draft.settings, name)!r} -> {value!r}" for name, value in now.items()
            if name in DRIFT_FIELDS and name in names and _differs(getattr(draft.settings, name), value)]


def _differs(a, b) -> bool:
    try:
        return bool(a != b)
    except ValueError:  # arrays (a reference curve): compare element by element
        return not np.array_equal(np.asarray(a), np.asarray(b))


# --------------------------------------------------------------------------- the mean's draft

def with_band(settings):
    """The mean's settings with the Mean page's uncertainty bands when they are on (a share of epsilon
    and delta goes to the second moment: the mean gets the rest, fdp_core.releases.bands.mean_part)."""
    ss = st.session_state
    if not ss.get("band_show"):
        return settings
    smooth = float(ss.get("band_smoothness", 0.0) or 0.0)
    return replace(settings, confidence_band=float(ss.get("band_level", 0.95)),
                   band_share=float(ss.get("band_share", 0.2)), smoothness_bound=smooth if smooth > 0 else None)


@st.cache_resource(show_spinner=False, max_entries=32)
def _mean_sums(data_key: str, settings_repr: str, _fd, _settings):
    return mean_sums(_fd, _settings)


def mean_plan(fd, settings):
    """The plan of the mean's own part: the whole epsilon without bands, its share with them.

    The data's sufficient statistics (range clip, centring, L2 clip, person averages, basis sums) read
    no epsilon or delta: they are kept per data digest and the other settings, so an epsilon move
    plans from them instead of summing the curves again (issue 40; the plan validates the settings)."""
    from fdp_ui.covariance_cache import data_key  # lazy: it loads the covariance and regression modules

    part = mean_part(settings)
    sums = _mean_sums(data_key(fd), repr(replace(part, epsilon=1.0, delta=1e-5)), fd, part)
    return plan_mean_release(sums, part)


def mean_verdicts(plan) -> tuple[Verdict, Verdict]:
    """(the page's verdict with the analyst-view bias, the verdict from the noise alone)."""
    return mean_verdict(plan), mean_verdict(plan, with_bias=False)


# --------------------------------------------------------------------------- the other pages' drafts

def put_density(ds, g, settings, feature: str, verdict: Verdict) -> None:
    """The Density page's release of a feature of the curves: its settings with the sidebar's person
    column and range (the page groups and clips by them as the commit does) and its noise verdict."""
    settings = replace(settings, person_column=g.person_column, value_range=g.value_range)
    put(Draft("kde", settings, ds.label, verdict, verdict, {"feature": feature}))


def put_components(ds, settings, verdict: Verdict, mean_id: str) -> None:
    put(Draft("pca", settings, ds.label, verdict, None, mean_id=mean_id))


def put_sparse(label: str, settings, verdict: Verdict) -> None:
    put(Draft("sparse", settings, label, verdict, None))


__all__ = ["DRAFTS_KEY", "Draft", "drift", "drop", "get", "mean_plan", "mean_verdicts", "put", "put_components",
           "put_density", "put_sparse", "with_band"]
