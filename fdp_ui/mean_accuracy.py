"""The Mean page's single release: sanitized draws against the non-private estimate, the free
post-processing, and the accuracy panel (noise radii, bias, verdict, bands; analyst view)."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from fdp_core.explore.verdict import end_shrinkage_note, mean_verdict
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.registry import mean_mechanism
from fdp_core.releases.mean import MECHANISM_LABELS, accuracy_sentence
from fdp_core.releases.postprocess import finish_mean

from . import band_panel, live_chart, plots, reference_curve, state, verdict_box
from .mean_tables import privacy_text


def figure(plan, fd, g, options, truth) -> None:
    """Sanitized draws (or their band), the free post-processing they get, the data-dependent flags."""
    n_draws = max(options.n_draws, 200) if options.style == "band" else options.n_draws
    raw_draws = plan.sample(g.rng(salt=1), n_draws)
    # The free projection every release gets (fdp_core/releases/postprocess.py).
    finished = finish_mean(raw_draws, plan.settings)
    state.note_view(NONPRIVATE_VIEWS["mean_estimate"])
    live_chart.show(plots.release_figure(fd.grid_points, finished.values, plan.estimate, style=options.style,
                                         truth=truth,
                                         title=f"{MECHANISM_LABELS[options.mechanism]}, {privacy_text(plan, g)}",
                                         raw_mean=plan.raw_mean, y_range=g.value_range),
                    key="mean_release")
    moved = float(np.mean(finished.values != finished.raw)) if finished.raw.size else 0.0
    st.caption("Post-processing of every release (free: the privacy guarantee is unchanged): "
               + "; ".join(finished.steps)
               + (f". It moved {moved:.0%} of the drawn values shown; the raw draws stay in the analyst view "
                  "(analyst_view.json of a release)." if finished.changed else "."),
               help="Switch it off with --no-post-processing on the command line (raw_release in a config). The "
                    "noise radii below are those of the release as drawn: projecting onto the range can only shrink "
                    "them.")
    for flag in plan.data_dependent_flags:
        st.error(f"Data-dependent: {flag}")


def panel(plan, ds, base, g, mechanism: str) -> None:
    """Noise radii, bias, verdict, reference curve and bands; the closed-form error rule."""
    radius_l2 = plan.l2_error_radius(0.95)
    radius_sup = plan.sup_error_radius(0.95)
    bias, bias_sup, total = plan.bias(), plan.pointwise_bias(), plan.total_error()
    bias_dominates = bias > math.sqrt(plan.expected_sq_l2_error)
    with st.container(border=True, key="mean_accuracy"):
        st.markdown("**Accuracy** (analyst view: computed from the data, not for publication)")
        a1, a2, a3, a4 = st.columns(4)
        a1.metric("noise (95% radius, L2)", f"{radius_l2:.4g}",
                  help="The release lies within this L2 distance of the private method's own target, 95% of the "
                       f"time. Pointwise: within {radius_sup:.4g} everywhere, 95% of the time.")
        a2.metric("bias vs raw mean (L2)", f"{bias:.4g}",
                  help="||target - plain average of the raw curves||: the smoothing, clipping and centring shift the "
                       "target away from the sample mean (the grey dotted curve against the red dashed one).")
        a3.metric("largest pointwise bias", f"{bias_sup:.4g}",
                  help="max over t of |target(t) - raw mean(t)|: where the L2 bias hides a local gap (often at the "
                       "ends of the domain).")
        a4.metric("total (root mean square)", f"{total:.4g}", help="sqrt(bias^2 + expected squared noise).")
        verdict_box.render(mean_verdict(plan, ds.fd))
        units = f" ({plots.value_title()} units)" if plots.value_title() != "value" else " (the data's units)"
        st.markdown(f"With 95% probability the release is within **{radius_l2:.4g}**{units} of the non-private "
                    f"estimate (L2 norm over the domain rescaled to [0, 1]); pointwise, the largest deviation stays "
                    f"below **{radius_sup:.4g}**{units} with 95% probability.")
        (st.warning if bias_dominates else st.info)(
            accuracy_sentence(plan) + (" The bias is larger than the noise: smoothing or clipping, not privacy, "
                                       "dominates the error." if bias_dominates else ""))
        end_note = end_shrinkage_note(plan)
        if end_note:
            st.warning(end_note, icon=":material/straighten:")
        reference_curve.render(ds.label, range_declared=g.value_range is not None)
    band_panel.render(ds.fd, base, g.rng(salt=7))  # privacy band and confidence band (METHODS 18)
    gq = plan.guarantee
    entry = mean_mechanism(mechanism)
    quadrature = (f" ({gq.details['expected_sq_l2_error_quadrature']:.4g} on this grid's quadrature)"
                  if "expected_sq_l2_error_quadrature" in gq.details else "")
    radii = ("L2 radius by a saddlepoint approximation of the weighted chi-square law; sup radius by 4000 Monte "
             "Carlo draws." if plan.family.uses_delta else "Radii by 4000 Monte Carlo draws.")
    st.caption(f"Expected squared L2 error {entry.error_rule} = {plan.expected_sq_l2_error:.4g}{quadrature}. {radii} "
               "Previews: idealised real-arithmetic DP (numpy generator).")
