"""The Density page's figures: sanitized 1-d densities (draws or band) against the analyst
view, or 2-d heatmaps and surfaces, one per shown mechanism (plots in fdp_ui/kde_plots.py)."""

from __future__ import annotations

import streamlit as st

from fdp_core.registry.kde import kde_mechanism
from fdp_core.releases import kde
from fdp_core.releases.postprocess import finish_density

from . import kde_plots, live_chart, plots


def privacy_text(release) -> str:
    gq = release.guarantee  # delta is 0 in a pure epsilon-DP guarantee
    return f"epsilon = {gq.epsilon:g}, delta = {gq.delta:g}"


def title(release) -> str:
    h = f", h = {release.bandwidth:.3g}" if release.bandwidth is not None else ""
    return f"{kde_mechanism(release.mechanism).short}, {privacy_text(release)}{h}"


def _finished(release, rng, size: int):
    """Free post-processing, as every release gets it: clipped at 0 and renormalised
    (fdp_core/releases/postprocess.py)."""
    return finish_density(release.sample(rng, size), release.weights, kde.KdeSettings()).values


def render(releases: dict, g, view, axis_labels: tuple, truth_of=None) -> None:
    """``truth_of(grid)``: the true density of a built-in 1-d example, else None."""
    first = next(iter(releases.values()))

    def rng(mech: str):
        return g.rng(kde_mechanism(mech).preview_salt)

    if first.d == 1:
        truth = truth_of(first.grid) if truth_of is not None else None
        draws = {m: _finished(r, rng(m), max(view.n_draws, 200) if view.style == "band" else view.n_draws)
                 for m, r in releases.items()}
        y_range = kde_plots.common_range(*draws.values(), *(r.density for r in releases.values()),
                                         *([truth] if truth is not None else [])) if len(releases) > 1 else None
        columns = st.columns(len(releases))
        for column, (mech, release) in zip(columns, releases.items()):
            fig = kde_plots.density_figure(release.grid, draws[mech], release.density, title=title(release),
                                           x_title=axis_labels[0], style=view.style, truth=truth,
                                           color=kde_mechanism(mech).color, y_range=y_range)
            live_chart.show(fig, key=f"density_figure_{mech}", where=column)
    else:
        for mech, release in releases.items():
            sanitized = _finished(release, rng(mech), view.n_panels)
            panels = [(plots.ANALYST_LABEL.replace(" (", "<br>("), release.density)]
            panels += [(f"sanitized draw {i + 1}", values) for i, values in enumerate(sanitized)]
            st.markdown(f"**{title(release)}**")
            live_chart.show(kde_plots.density_panels_figure(release.grids, panels, x_titles=axis_labels,
                                                            surface=view.surface),
                            key=f"density_figure_{mech}")
        st.caption("One colour scale per row, shared by the analyst view and the sanitized draws.")
    st.caption("Sanitized densities are post-processed as every release is (free: privacy unchanged): negative "
               "values set to 0, then rescaled to integrate to 1 over the box. The error radii below are those of "
               "the noise before this step, which can only shrink the negative part.")
