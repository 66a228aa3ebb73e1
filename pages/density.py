"""Density page: private kernel density estimates (METHODS.md section 4).

The observations are a fixed per-curve feature of the current curves (or a numeric metadata
column), or a built-in example. Hall et al.'s Gaussian-process KDE ((epsilon, delta)-DP) and
ICLP-KDE (pure epsilon-DP) release the density on a public grid over a public box: 1-d
sanitized densities against the analyst-view KDE, 2-d heatmaps or surfaces.

The widgets live in fdp_ui/density_inputs.py (observations), density_controls.py (box,
bandwidth, grid, mechanism), density_figures.py and density_report.py (accuracy, tables,
guarantee); the 95% radii are fdp_core/releases/kde_radii.py's.
"""

from dataclasses import replace

import streamlit as st

from fdp_core.data.features import person_features
from fdp_core.errors import FdpError
from fdp_core.registry.kde import kde_mechanism
from fdp_core.releases import kde
from fdp_core.explore.verdict import density_verdict
from fdp_ui import density_controls, density_figures, density_inputs, density_report, drafts, sidebar, state

st.title("Density (private KDE)")
ds = state.current()
g = sidebar.render()
fd = ds.fd
density_inputs.init_state(ds, g.person_column)

# --------------------------------------------------------------------------- observations

obs = density_inputs.observations(fd, g.person_column)

# --------------------------------------------------------------------------- box, bandwidth, grid

st.markdown("**Public box, bandwidth and grid**")
box, box_flag = density_controls.box_widgets(obs, g.value_range)
if obs.source == "curves" and (g.person_column or g.value_range):
    # The unit of privacy is a person: each curve's feature is clipped to the box, then a person's
    # features are averaged into one observation (features.person_features, as the commit does).
    try:
        observed = person_features(fd, obs.spec, box, person_column=g.person_column, value_range=g.value_range)
    except FdpError as exc:
        st.error(f"Cannot group the curves by person: {exc}")
        st.stop()
    obs = replace(obs, points=observed.points)
    if g.person_column:
        st.caption(f"{observed.n_curves} curves of {observed.n_persons} persons (column '{g.person_column}') -> "
                   f"{len(obs.points)} observations: each person's features, clipped to the box, averaged.")

shown = density_controls.shown_mechanisms()
choices = density_controls.choice_widgets(g, box, len(obs.points), obs.d, shown)
for mech in shown:
    caption = kde_mechanism(mech).settings_caption(kde.KdeSettings(**dict(choices.settings(mech))), obs.d)
    if caption:
        st.caption(caption)
comparing = st.session_state[density_inputs.KEYS["mechanism"]] == density_controls.COMPARE_ALL
view = density_controls.view_widgets(obs.d, comparing)

releases = density_report.plan_all(obs, choices, shown)
if not releases:
    st.stop()

# --------------------------------------------------------------------------- flags, figures, accuracy

density_report.flags_and_clipping(releases, box, box_flag)
example = density_inputs.EXAMPLES.get(obs.source)
density_figures.render(releases, g, view, obs.axis_labels, truth_of=example and example["truth"])
radii = density_report.radii(releases)
if obs.spec is not None and not comparing:  # the draft the Release page commits (issue 38): a feature of the curves
    mech = shown[0]
    drafts.put_density(ds, g, kde.KdeSettings(**dict(choices.settings(mech))), obs.spec,
                       density_verdict(releases[mech], radii[mech][0]))
density_report.accuracy(releases, radii, obs.source, obs.d)
density_report.details(releases, radii, obs, choices, box_flag)
if obs.spec is not None:
    density_report.command_lines(releases, obs, choices, g)
