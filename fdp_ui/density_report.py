"""The Density page's planned releases and what is said about them: data-dependent flags and
clipping, the accuracy (95% radii from fdp_core/releases/kde_radii.py), the sensitivity and
noise tables, the guarantee and the equivalent command line."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.explore.verdict import density_verdict
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.registry.kde import kde_mechanism
from fdp_core.releases import kde, kde_radii
from fdp_core.sensitivity import KDE_BOUNDS
from fdp_core.settings_fields import command_line

from . import state, verdict_box
from .density_figures import privacy_text

BOX_FLAG = ("box read off the data (min/max of the feature): the release is not differentially private")


@st.cache_resource(show_spinner="Computing the estimate and the sensitivity...", max_entries=32)
def _plan(points_key: str, settings_items: tuple, _points: np.ndarray) -> kde.KdeRelease:
    """The planned release (estimate, sensitivity, noise operator), shared by reruns that change
    only the view or the number of draws. Keyed by a digest of the points, not by the data set."""
    return kde.plan_kde_release(_points, kde.KdeSettings(**dict(settings_items)), per_person=True)


def plan(obs, choices, mech: str, bound: str | None = None) -> kde.KdeRelease:
    return _plan(obs.key, choices.settings(mech, bound), obs.points)


def plan_all(obs, choices, shown: tuple) -> dict:
    """Each shown mechanism's planned release; an error box for each that cannot be planned."""
    releases = {}
    for mech in shown:
        try:
            releases[mech] = plan(obs, choices, mech)
        except FdpError as exc:
            entry = kde_mechanism(mech)
            hint = entry.error_hint(kde.KdeSettings(**dict(choices.settings(mech))))
            st.error(f"{entry.short}: cannot compute this density: {str(exc).rstrip('.')}.{hint}")
    return releases


def flags_and_clipping(releases: dict, box, box_flag: bool) -> None:
    first = next(iter(releases.values()))
    state.note_view(NONPRIVATE_VIEWS["density_estimate"])
    flags = ([BOX_FLAG] if box_flag else []) + [f for r in releases.values() for f in r.data_dependent_flags]
    for flag in flags:
        st.error(f"Data-dependent (not DP): {flag}.")
    share = first.n_clipped_box / first.n
    clip_text = (f"n = {first.n} observations; {first.n_clipped_box} ({share:.0%}) lay outside the box "
                 f"{' x '.join(f'[{lo:g}, {hi:g}]' for lo, hi in box)} and were moved to its boundary. The sidebar's "
                 "tau does not apply: the box bounds each observation.")
    (st.warning if share > 0.05 else st.caption)(clip_text + (" That many piles mass on the box's edges: widen "
                                                               "the box." if share > 0.05 else ""))


def radii(releases: dict) -> dict:
    """95% L2 and sup radii per mechanism: Monte Carlo once per noise shape, rescaled for epsilon."""
    if all(kde_radii.is_cached(r) for r in releases.values()):
        return {m: kde_radii.error_radii(r) for m, r in releases.items()}
    with st.spinner("Computing the 95% error radii (Monte Carlo, once per noise shape)..."):
        return {m: kde_radii.error_radii(r) for m, r in releases.items()}


def accuracy(releases: dict, radii_of: dict, source: str, d: int) -> None:
    units = "box units" if source != "curves" else "the feature's units"
    for mech, release in releases.items():
        l2, sup = radii_of[mech]
        # The colour is the verdict's (fdp_core/explore/verdict.py): the radius against the uniform density's norm.
        v = density_verdict(release, l2)
        verdict_box.render(v, extra=f"({kde_mechanism(mech).short})", link_tradeoffs=False)  # that tool is the mean's
        st.markdown(f"**{kde_mechanism(mech).short}**: with 95% probability the sanitized density is within "
                    f"**{l2:.4g}** of the non-private estimate in L2(T) ({units}); the largest pointwise deviation "
                    f"stays below **{sup:.4g}** with 95% probability. Expected squared L2 error, for formulas: "
                    f"{release.expected_sq_l2_error:.4g}.")
    st.caption(f"Expected squared L2 error in closed form (Hall: sigma^2 times the trace of the noise covariance "
               f"under the grid quadrature; ICLP: sum 2 b_l^2 over the box volume). Radii: fdp_core's Monte Carlo "
               f"({kde_radii.RADIUS_DRAWS[d]} draws, fixed seed). Previews: idealised real-arithmetic DP (numpy "
               "generator).")


def _show_table(rows: list[dict], key: str) -> None:
    """A small table with numbers shown to 4 significant digits (pre-formatted: a pandas Styler
    costs about 10 ms per table on every rerun)."""
    def cell(v):
        return f"{v:.4g}" if isinstance(v, (float, np.floating)) else v
    st.dataframe(pd.DataFrame([{k: cell(v) for k, v in row.items()} for row in rows]), hide_index=True,
                 width="stretch", key=key)


def _sensitivity_table(release) -> None:
    gq = release.guarantee
    mech = release.mechanism
    st.markdown(f"**Sensitivity** ({gq.sensitivity_norm})")
    _show_table([{"bound": kde_mechanism(mech).bound_names[b], "sensitivity": gq.sensitivity_for(b),
                  "in use": "yes" if b == gq.details["sensitivity_bound"] else ""} for b in KDE_BOUNDS],
                key=f"density_sensitivity_{mech}")
    st.caption(f"In use: {gq.bound_label}.")


def _noise_table(release, obs, choices) -> None:
    mech = release.mechanism
    entry = kde_mechanism(mech)
    table = entry.noise_table(release, lambda bound: plan(obs, choices, mech, bound))
    st.markdown(table.title)
    _show_table(table.rows, key=f"density_noise_{entry.page_key}")
    st.caption(table.caption, help=table.help)


def _guarantee(release, box_flag: bool) -> None:
    gq = release.guarantee
    dp = gq.details["differentially_private"] and not box_flag
    statement = (f"{gq.privacy} with {privacy_text(release)}, for neighbouring data sets that "
                 f"{gq.details['neighbouring']}; sensitivity {gq.sensitivity:.4g} ({gq.details['sensitivity_bound']} "
                 "bound).")
    (st.info if dp else st.error)(("Guarantee: " if dp else "NOT differentially private (data-dependent choices "
                                   "above). Nominal guarantee: ") + statement)
    with st.expander("guarantee record (plain data, as exported)"):
        st.json({**gq.record(), "data_dependent_flags": list(gq.details["data_dependent_flags"])
                 + ([BOX_FLAG] if box_flag else []),
                 "differentially_private": dp})


def _details(release, obs, choices, box_flag: bool) -> None:
    left, right = st.columns(2)
    with left:
        _sensitivity_table(release)
    with right:
        _noise_table(release, obs, choices)
    _guarantee(release, box_flag)


def details(releases: dict, radii_of: dict, obs, choices, box_flag: bool) -> None:
    """Sensitivity, noise and guarantee of each release; a comparison table and tabs for several."""
    if len(releases) == 1:
        _details(next(iter(releases.values())), obs, choices, box_flag)
        return
    rows = [{"mechanism": kde_mechanism(m).short, "privacy": privacy_text(r), "sensitivity in use": r.sensitivity,
             "noise scale": kde_mechanism(m).noise_scale_text(r),
             "expected sq. L2 error": r.expected_sq_l2_error, "95% L2 radius": radii_of[m][0],
             "95% sup radius": radii_of[m][1]} for m, r in releases.items()]
    _show_table(rows, key="density_compare_table")
    st.caption("The two estimators differ (Gaussian bumps of width h vs the K^eta bumps of ICLP), so compare the "
               "pictures as well as the numbers: each error is against the mechanism's own non-private estimate.")
    for tab, (mech, release) in zip(st.tabs([f"{kde_mechanism(m).short} details" for m in releases]),
                                    releases.items()):
        with tab:
            _details(release, obs, choices, box_flag)


def command_lines(releases: dict, obs, choices, g) -> None:
    with st.expander("same release from the command line"):
        for mech in releases:
            # The page turns curves into observations itself; the command line does it from the
            # person column and the value range, so they go on it.
            settings = replace(kde.KdeSettings(**dict(choices.settings(mech))), person_column=g.person_column,
                               value_range=g.value_range)
            st.code(command_line("release kde", settings, inputs=(("--data", "FILE"), ("--feature", obs.spec))),
                    language="bash")
        st.caption("FILE is the uploaded file; the CLI draws its own noise (fresh, or from --seed).")
