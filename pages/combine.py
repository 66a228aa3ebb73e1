"""Combine sites page: several sites' committed means, one curve (METHODS.md 26).

A coordinator uploads each site's exported bundle (the zip of the Release page or a CLI folder
zipped); each is checked without data, their public settings must agree, and the weighted sum
is shown and exported. Post-processing of published files: no data is read, no budget spent.
The same from the command line: `python -m fdp_core combine SITE_DIR... --out DIR`.
"""

import streamlit as st

from fdp_core.publish.combine import SOURCES
from fdp_ui import combine_view, live_chart, sidebar

# No settings sidebar (nothing here uses the session's data or settings), but the same start as every
# page: the other pages' settings survive a visit here, and tutorial mode can be switched off here too.
sidebar.render_without_settings()
st.title("Combine sites")
st.caption("Sites that may not pool their data each release their own private mean (same kernel, smoothing, grid, "
           "range and centre). Upload their bundles: the combined curve weighs each by its accuracy. It reads only "
           "what the sites published, so it charges no budget and each person keeps their own site's guarantee.")

files = st.file_uploader("site bundles (zip files exported by each site's commit)", type=["zip"],
                         accept_multiple_files=True, key="combine_uploads")
declared = st.number_input("declared sampling term v (used when not every site released a second moment; 0: "
                           "noise-only weights)", min_value=0.0, value=0.0, format="%.4g", key="combine_v",
                           help="v = tr(S Sigma S): how much one person's curve varies after smoothing. A public "
                                "value you declare, e.g. from an earlier study. Never read off the data.")
named = combine_view.remember(files)
if len(named) < 2:
    st.info("Upload two or more site bundles to combine them.")
    st.stop()

result = combine_view.combine_or_error(named, float(declared) if declared > 0 else None)
if result is None:
    st.stop()
combined, zipped = result

best = float(min(combined.site_errors))
c1, c2, c3 = st.columns(3)
c1.metric("sites", len(combined.sites))
c2.metric("combined expected squared L2 error", f"{combined.expected_sq_l2_error:.4g}",
          delta=f"{combined.expected_sq_l2_error / best - 1:+.0%} vs the best site", delta_color="inverse")
c3.metric("persons in all", int(sum(s.n for s in combined.sites)))
live_chart.show(combine_view.curves_figure(combined), key="combine_chart")
st.dataframe(combine_view.sites_table(combined), hide_index=True, width="stretch")
st.caption(f"Weights proportional to 1 / (v / n_k + E||Z_k||^2). Sampling term v = {combined.sampling_variance:.4g}, "
           f"from {SOURCES[combined.source]}. Errors are expected squared L2 distances to the smoothed population "
           "mean. Each person is protected at their own site's epsilon and delta: the sites hold different persons.")
if combined.bands is None:
    st.caption("No bands: a band needs every site to have released a second moment (a mean with a confidence band).")
st.download_button("download the combined bundle (zip)", zipped, file_name="fdp_combined.zip",
                   mime="application/zip", key="combine_download")
