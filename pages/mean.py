"""Mean page: the non-private mean against sanitized releases, one mechanism or all of them."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.releases.mean import MEAN_MECHANISMS, MECHANISM_LABELS, accuracy_sentence, plan_mean_release
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.releases.postprocess import finish_mean
from fdp_core.registry import MEAN_REGISTRY, mean_mechanism, truncating_mechanisms
from fdp_core.sensitivity import BOUNDS
from fdp_core.explore.tuning import PSS_MECHANISMS, pss_defaults
from fdp_core.explore.verdict import end_shrinkage_note, mean_verdict
from fdp_ui import (band_panel, compare_plots, mean_controls, plots, reference_curve, sidebar, sparse_view, state,
                    verdict_box)
from fdp_ui.mean_controls import KEYS

LOG_PSI_RANGE = (-8.0, 3.0)
COMPARE_COLORS = {name: m.color for name, m in MEAN_REGISTRY.items()}
# This page's own controls; the settings' controls (mechanism, bound, ...) are in mean_controls.
_DEFAULTS = {"mean_compare": False, "mean_style": "draws", "mean_draws": 20, "mean_compare_draws": 5}

mean_controls.keep()
for key, value in _DEFAULTS.items():
    st.session_state[key] = st.session_state.get(key, value)

st.title("Mean function")
ds = state.current()
g = sidebar.render()
if sparse_view.active():  # sparse curves (a few visits per person): their own release view
    sparse_view.render_mean_section(g)
    st.stop()


def _apply_pss(eta: float, psi: float) -> None:
    sidebar.apply({"g_eta": eta})
    st.session_state[KEYS["psi"]] = float(np.clip(math.log10(psi), *LOG_PSI_RANGE))


top = st.columns([2, 1])
mechanism = top[0].selectbox("mechanism", MEAN_MECHANISMS, key=KEYS["mechanism"], format_func=MECHANISM_LABELS.get,
                             disabled=st.session_state["mean_compare"],
                             help=" ".join(f"{m.label}: {m.privacy} ({m.noise} noise)." for m in MEAN_REGISTRY.values())
                             + " In comparison mode every mechanism is shown.")
compare = top[1].toggle("compare all mechanisms", key="mean_compare",
                        help="Overlay every mechanism's sanitized means at the current settings, with their "
                             "expected errors, sensitivities and noise scales.")
shown = MEAN_MECHANISMS if compare else (mechanism,)

if not compare and not mean_mechanism(mechanism).uses_delta:
    # One delta control only (the sidebar's); a pure mechanism says it does not read it (issue 28).
    st.caption(f"delta = 0: pure epsilon-DP, delta does not apply (the sidebar's delta = {g.delta:g} is used by "
               "Gaussian mechanisms only).")

c1, c2, c3, c4 = st.columns(4)
bound = c1.radio("sensitivity bound", BOUNDS, key=KEYS["bound"], horizontal=True,
                 format_func=lambda b: b if compare else mean_mechanism(mechanism).bound_name(b),
                 help=" ".join(f"{m}: {MEAN_REGISTRY[m].bound_help}" for m in shown) if compare
                 else mean_mechanism(mechanism).bound_help)
calibration = c2.radio("calibration (Gaussian)", CALIBRATIONS, key=KEYS["calibration"], horizontal=True,
                       disabled=not any(MEAN_REGISTRY[m].uses_delta for m in shown),
                       help="analytic (Balle & Wang 2018): the smallest valid sigma, any epsilon. classical: "
                            "sigma = Delta sqrt(2 log(2/delta))/epsilon, valid only for epsilon <= 1.")
if compare:
    style = "draws"
    n_draws = c4.slider("draws per mechanism", 1, 50, key="mean_compare_draws")
else:
    style = c3.radio("show", ("draws", "band"), key="mean_style", horizontal=True,
                     help="Several independent sanitized releases, or their pointwise 5-95% band.")
    n_draws = c4.slider("sanitized draws", 1, 200, key="mean_draws")

if any(MEAN_REGISTRY[m].penalty == "psi" for m in shown):
    left, right = st.columns([2, 1])
    log_psi = left.slider("log10 psi (ICLP penalty)", *LOG_PSI_RANGE, step=0.05, key=KEYS["psi"],
                          help="Penalty of the ICLP means (the sidebar's phi is the Gaussian mechanism's). Larger "
                               "psi = smoother estimate, smaller sensitivity, more bias.")
    if not compare and mechanism in PSS_MECHANISMS:
        n_pss = ds.fd.metadata[g.person_column].astype(str).nunique() if g.person_column \
            else ds.fd.n
        pss_eta, pss_psi = pss_defaults(g.kernel, g.nu, n_pss, g.epsilon, mechanism=mechanism)
        right.button("privacy-safe defaults (PSS)", key="mean_pss", on_click=_apply_pss, args=(pss_eta, pss_psi),
                     help="Data-free choice of eta and psi (Lin & Reimherr): eta = 1 + 2/beta for eigenvalues "
                          "decaying like j^(-beta) (Matern nu: beta = 2 nu + 1; Gaussian kernel: eta = 1.5), "
                          "psi = 1/(n epsilon^2). Offered for the quadratic penalty (ICLP-QR) only.")
        right.caption(f"PSS: eta = {pss_eta:.4g}, psi = {pss_psi:.3g}. Uses n = {n_pss}: valid only if the "
                      "number of persons is public.")
    else:
        right.caption("Privacy-safe defaults (PSS) are not offered here: their theory covers the quadratic penalty "
                      "(ICLP-QR, Gaussian) only; for ICLP-AR they can make the error grow with epsilon.")
    left.caption(f"psi = {10 ** log_psi:.3g}; eta = {g.eta:g} (sidebar). ICLP-QR needs eta > 1.")
if any("M" in MEAN_REGISTRY[m].fields for m in shown):
    st.number_input(f"M ({', '.join(truncating_mechanisms())}: number of eigenfunctions)", min_value=1,
                    max_value=1000, step=1, key=KEYS["M"])
if any(MEAN_REGISTRY[m].lattice for m in shown):
    b1, b2, b3 = st.columns(3)
    b1.number_input("K (Bernstein lattice: K + 1 points)", min_value=1, max_value=500, step=1, key=KEYS["K"])
    b2.number_input("lo (public lower bound of curve values)", format="%.4g", key=KEYS["lo"])
    b3.number_input("hi (public upper bound of curve values)", format="%.4g", key=KEYS["hi"])
    st.caption("Bernstein clips every curve value to [lo, hi] (choose the range from domain knowledge, not from "
               "the data) and ignores tau.")

base = mean_controls.settings(g)
truth = ds.true_mean(ds.fd.grid_points) if ds.true_mean is not None else None


def _privacy_text(plan) -> str:
    return f"epsilon = {g.epsilon:g}, " + (f"delta = {g.delta:g}" if plan.sigma is not None else
                                           "delta = 0 (pure epsilon-DP)")


def _noise_scale_text(plan) -> str:
    if plan.sigma is not None:
        return f"sigma = {plan.sigma:.4g} (Gaussian, sd sigma sqrt(lambda_l))"
    if mean_mechanism(plan.settings.mechanism).lattice:
        return f"lambda = {plan.noise_scales[0]:.4g} (Laplace, {plan.noise_scales.size} lattice values)"
    return f"b_1 = {plan.noise_scales.max():.4g} (Laplace, {int(np.sum(plan.noise_scales > 0))} coefficients)"


def _sensitivity_text(plan) -> str:
    """Plain names in tables; the norms' formulas are in the help texts and docs/METHODS.md."""
    entry = mean_mechanism(plan.settings.mechanism)
    return f"{plan.sensitivity:.4g} ({entry.sensitivity_norm_label}, {entry.bound_name(plan.settings.bound)})"


if compare:
    draws_by_mechanism, rows = {}, []
    for mech in MEAN_MECHANISMS:
        try:
            plan = plan_mean_release(ds.fd, replace(base, mechanism=mech))
        except FdpError as exc:
            rows.append({"mechanism": MECHANISM_LABELS[mech], "noise (95% radius, L2)": None, "sensitivity": "-",
                         "noise scale": "-", "privacy": "-", "status": f"unavailable: {exc}"})
            continue
        draws_by_mechanism[mech] = finish_mean(plan.sample(g.rng(salt=10 + MEAN_MECHANISMS.index(mech)), n_draws),
                                               plan.settings).values
        rows.append({"mechanism": MECHANISM_LABELS[mech], "noise (95% radius, L2)": plan.l2_error_radius(0.95),
                     "sensitivity": _sensitivity_text(plan), "noise scale": _noise_scale_text(plan),
                     "privacy": plan.privacy, "status": "data-dependent: NOT DP" if plan.data_dependent_flags else "ok"})
    st.plotly_chart(compare_plots.small_multiples(
        ds.fd.grid_points, draws_by_mechanism, labels=MECHANISM_LABELS, colors=COMPARE_COLORS, truth=truth,
        title=f"Every mechanism, epsilon = {g.epsilon:g} (delta = {g.delta:g}: Gaussian only)"),
        width="stretch", key="mean_compare_figure")
    # A static full-width table: every column visible, long cells wrapped, no raw None.
    table = pd.DataFrame(rows)
    table["noise (95% radius, L2)"] = [f"{v:.4g}" if v is not None else "-"
                                       for v in table["noise (95% radius, L2)"]]
    st.table(table.set_index("mechanism").fillna("-"))
    st.caption("Noise: the L2 distance of the release from each mechanism's own non-private estimate that holds "
               "with 95% probability, in the curves' units; it follows from the closed-form expected squared L2 "
               "error: " + "; ".join(f"{m.error_rule} ({m.label.split(' (')[0]})" for m in MEAN_REGISTRY.values())
               + ". The estimators differ (smoothing, truncation, clipping), so compare the pictures against the "
               "truth as well. Previews: idealised real-arithmetic DP.")
    if g.tau_from_data:
        st.error("tau was read off the data: the tau-based releases above are NOT differentially private.")
    st.stop()

try:
    plan = plan_mean_release(ds.fd, base)
except FdpError as exc:
    st.error(f"Cannot compute this release: {exc}")
    st.stop()

raw_draws = plan.sample(g.rng(salt=1), max(n_draws, 200) if style == "band" else n_draws)
finished = finish_mean(raw_draws, plan.settings)  # the free projection every release gets (fdp_core/releases/postprocess.py)
draws = finished.values
state.note_view(NONPRIVATE_VIEWS["mean_estimate"])
st.plotly_chart(plots.release_figure(ds.fd.grid_points, draws, plan.estimate, style=style, truth=truth,
                                     title=f"{MECHANISM_LABELS[mechanism]}, {_privacy_text(plan)}",
                                     raw_mean=plan.raw_mean),
                width="stretch", key="mean_release")

moved = float(np.mean(finished.values != finished.raw)) if finished.raw.size else 0.0
st.caption("Post-processing of every release (free: the privacy guarantee is unchanged): " + "; ".join(finished.steps)
           + (f". It moved {moved:.0%} of the drawn values shown; the raw draws stay in the analyst view "
              "(analyst_view.json of a release)." if finished.changed else "."),
           help="Switch it off with --no-post-processing on the command line (raw_release in a config). The noise "
                "radii below are those of the release as drawn: projecting onto the range can only shrink them.")
for flag in plan.data_dependent_flags:
    st.error(f"Data-dependent: {flag}")

radius_l2 = plan.l2_error_radius(0.95)
radius_sup = plan.sup_error_radius(0.95)
bias, bias_sup, total = plan.bias(), plan.pointwise_bias(), plan.total_error()
with st.container(border=True, key="mean_accuracy"):
    st.markdown("**Accuracy** (analyst view: computed from the data, not for publication)")
    a1, a2, a3, a4 = st.columns(4)
    a1.metric("noise (95% radius, L2)", f"{radius_l2:.4g}",
              help="The release lies within this L2 distance of the private method's own target, 95% of the time. "
                   f"Pointwise: within {radius_sup:.4g} everywhere, 95% of the time.")
    a2.metric("bias vs raw mean (L2)", f"{bias:.4g}",
              help="||target - plain average of the raw curves||: the smoothing, clipping and centring shift the "
                   "target away from the sample mean (the grey dotted curve against the red dashed one).")
    a3.metric("largest pointwise bias", f"{bias_sup:.4g}",
              help="max over t of |target(t) - raw mean(t)|: where the L2 bias hides a local gap (often at the "
                   "ends of the domain).")
    a4.metric("total (root mean square)", f"{total:.4g}", help="sqrt(bias^2 + expected squared noise).")
    verdict_box.render(mean_verdict(plan, ds.fd))
    st.markdown(f"With 95% probability the release is within **{radius_l2:.4g}** of the non-private estimate "
                f"(L2 norm over the domain rescaled to [0, 1]); pointwise, the largest deviation stays below "
                f"**{radius_sup:.4g}** with 95% probability.")
    (st.warning if bias > math.sqrt(plan.expected_sq_l2_error) else st.info)(
        accuracy_sentence(plan) + (" The bias is larger than the noise: smoothing or clipping, not privacy, "
                                   "dominates the error." if bias > math.sqrt(plan.expected_sq_l2_error) else ""))
    end_note = end_shrinkage_note(plan)
    if end_note:
        st.warning(end_note, icon=":material/straighten:")
    reference_curve.render(ds.label, range_declared=g.value_range is not None)
band_panel.render(ds.fd, base, g.rng(salt=7))  # privacy band and confidence band (METHODS 18)
gq = plan.guarantee
entry = mean_mechanism(mechanism)
quadrature = (f" ({gq.details['expected_sq_l2_error_quadrature']:.4g} on this grid's quadrature)"
              if "expected_sq_l2_error_quadrature" in gq.details else "")
radii = ("L2 radius by a saddlepoint approximation of the weighted chi-square law; sup radius by 4000 Monte Carlo "
         "draws." if plan.family.uses_delta else "Radii by 4000 Monte Carlo draws.")
st.caption(f"Expected squared L2 error {entry.error_rule} = {plan.expected_sq_l2_error:.4g}{quadrature}. {radii} "
           "Previews: idealised real-arithmetic DP (numpy generator).")

left, right = st.columns(2)
if plan.sigma is not None:
    with left:
        st.markdown("**Sensitivity**: how far one person can move the estimate",
                    help=entry.sensitivity_help or f"Measured in the {gq.sensitivity_norm}.")
        st.dataframe(pd.DataFrame({"bound": [entry.bound_name(b) for b in BOUNDS],
                                   "Delta": [gq.sensitivity_for(b) for b in BOUNDS]}),
                     hide_index=True, width="stretch")
        st.caption(f"n = {plan.n} {'persons' if g.person_column else 'curves'} (after {plan.n_dropped} curves "
                   f"dropped), {plan.n_clipped} curves clipped at tau = {plan.tau:.4g}; {plan.synthesis.shape[1]} "
                   "eigenfunctions kept (analyst view).")
    with right:
        st.markdown("**Noise scale sigma: both bounds x both calibrations**")
        def _sigma_cell(v):  # pre-formatted, not a pandas Styler (~15 ms on every rerun)
            return "refused (epsilon > 1)" if v is None or v != v else f"{v:.4g}"
        rows = [{"bound": b, **{c: _sigma_cell(gq.details["sigma_table"][f"{b}/{c}"]) for c in CALIBRATIONS}}
                for b in BOUNDS]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(f"In use: {bound} / {calibration}, sigma = {plan.sigma:.4g}; privacy curve mu = "
                   f"{gq.gdp_mu:.3g}.", help="mu = sensitivity / sigma: the one number of the Gaussian mechanism's privacy curve (Gaussian differential privacy); it composes as sqrt(mu_1^2 + mu_2^2 + ...). Smaller = more private.")
else:
    plans = {b: plan if b == bound else plan_mean_release(ds.fd, replace(base, bound=b)) for b in BOUNDS}
    with left:
        st.markdown(f"**Sensitivity ({gq.sensitivity_norm})**")
        st.dataframe(pd.DataFrame({"bound": [gq.bound_labels[b] for b in BOUNDS],
                                   "Delta_1": [gq.sensitivity_for(b) for b in BOUNDS]}),
                     hide_index=True, width="stretch")
        if mean_mechanism(mechanism).lattice:
            st.caption(f"n = {plan.n} (after {plan.n_dropped} curves dropped); {plan.n_clipped} have values outside "
                       f"[{base.lo:g}, {base.hi:g}] and are clipped; lattice of {base.K + 1} points.")
        else:
            kept = f"{gq.details['n_active']} of {gq.details['n_components']} components active (the rest released as exact " \
                   f"zeros)" if "n_active" in gq.details else f"{plan.synthesis.shape[1]} basis functions"
            st.caption(f"n = {plan.n} {'persons' if g.person_column else 'curves'} (after {plan.n_dropped} curves "
                       f"dropped), {plan.n_clipped} curves clipped at tau = {plan.tau:.4g}; {kept}.")
    with right:
        st.markdown("**Laplace noise scales: both bounds**")
        st.dataframe(pd.DataFrame({"bound": list(BOUNDS),
                                   "largest b": [p.noise_scales.max() for p in plans.values()],
                                   "smallest b > 0": [p.noise_scales[p.noise_scales > 0].min()
                                                      if np.any(p.noise_scales > 0) else 0.0
                                                      for p in plans.values()],
                                   "E sq. L2 error": [p.expected_sq_l2_error for p in plans.values()]}),
                     hide_index=True, width="stretch")
        st.caption(f"In use: {gq.bound_label}; {mean_mechanism(mechanism).scale_rule}. Laplace scale b: density exp(-|x|/b)/(2b), "
                   "variance 2 b^2.")
