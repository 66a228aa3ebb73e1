"""Trade-offs page: error against every privacy and smoothing parameter, PCV vs PSS tuning,
the epsilon a target accuracy needs, and the PCA variance ratio against epsilon."""

import hashlib
import math
from dataclasses import asdict

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.explore import sweeps, tuning
from fdp_core.explore.accuracy import ACCURACY_LABELS, ACCURACY_METRICS
from fdp_core.errors import FdpError
from fdp_core.releases.mean import MEAN_MECHANISMS, MECHANISM_LABELS, MeanSettings
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.registry import mean_mechanism, truncating_mechanisms
from fdp_core.sensitivity import BOUNDS
from fdp_core.explore.tradeoff_figures import pcv_figure, tradeoff_figure, variance_ratio_figure
from fdp_core.explore.verdict import GREEN_SHARE
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_ui import mean_controls, private_selection, sidebar, sparse_view, state
from fdp_ui.mean_controls import KEYS

PAGE_DEFAULTS = {"to_param": "epsilon", "to_mc": 500, "to_mechanisms": list(MEAN_MECHANISMS),
                 "to_pcv_mechanism": tuning.PCV_MECHANISMS[0], "to_pcv_size": 30, "to_pcv_folds": 10,
                 "to_metric": "l2_radius_95", "to_apply_mechanism": MEAN_MECHANISMS[0], "to_pca": False,
                 "to_pca_draws": 50}
ETA_RANGE = (1.0, 4.0)
PENALTY_SLIDERS = private_selection.PENALTY_SLIDERS
PCV_SIZES = {30: "30 x 30", 15: "15 x 15", 8: "8 x 8 (fast)"}

# Mechanism options are shared with the Mean page (mean_controls: same keys and defaults), so
# "the current setting" marked here is the one the Mean page releases.
mean_controls.keep()
for key, value in PAGE_DEFAULTS.items():
    st.session_state[key] = st.session_state.get(key, value)

st.title("Trade-offs")
ds = state.current()
g = sidebar.render()
if sparse_view.active():  # sparse curves: their own trade-off curves
    sparse_view.render_tradeoffs_section(g)
    st.stop()
fd = ds.fd
truth = ds.true_mean(fd.grid_points) if ds.true_mean is not None else None


def _data_key() -> str:
    """Cache key of the data set (hashing the arrays is cheaper than hashing the object)."""
    h = hashlib.sha1(fd.grid_points.tobytes())
    h.update(fd.data_matrix.tobytes())
    return h.hexdigest()


with st.expander("Mechanism options (shared with the Mean page)"):
    c1, c2, c3 = st.columns(3)
    c1.radio("sensitivity bound", BOUNDS, key=KEYS["bound"], horizontal=True,
             help="tight: the attained (or Cauchy-Schwarz) bound; paper: the published closed form.")
    c2.radio("calibration (Gaussian)", CALIBRATIONS, key=KEYS["calibration"], horizontal=True,
             help="classical is valid for epsilon <= 1 only: its curve stops there.")
    psi_slider = PENALTY_SLIDERS["psi"]
    c3.slider("log10 psi (ICLP penalty)", psi_slider.lo, psi_slider.hi, step=psi_slider.step, key=psi_slider.key)
    c4, c5, c6, c7 = st.columns(4)
    c4.number_input(f"M ({', '.join(truncating_mechanisms())})", min_value=1, max_value=1000, step=1, key=KEYS["M"])
    c5.number_input("K (Bernstein)", min_value=1, max_value=500, step=1, key=KEYS["K"])
    c6.number_input("lo (Bernstein, public)", format="%.4g", key=KEYS["lo"])
    c7.number_input("hi (Bernstein, public)", format="%.4g", key=KEYS["hi"])

settings = mean_controls.settings(g)
settings_key = tuple(asdict(settings).items())
if g.tau_from_data:
    st.error("tau was read off the data: none of the settings below gives a differentially private release.")


@st.cache_data(show_spinner=False, max_entries=32)
def _curves(data_key, settings_key, param, mechanisms, mc_draws, seed, with_truth):
    return sweeps.tradeoff_curves(fd, MeanSettings(**dict(settings_key)), param, sweeps.default_values(param, fd.n),
                                  mechanisms=mechanisms, truth=truth if with_truth else None, mc_draws=mc_draws,
                                  seed=seed)


@st.cache_data(show_spinner=False, max_entries=16)
def _pcv(data_key, settings_key, size, folds):
    s = MeanSettings(**dict(settings_key))
    return tuning.pcv_grid(fd, s, np.logspace(-8, 1, size), np.logspace(-2.5, 0.3, size), folds=folds)


@st.cache_data(show_spinner=False, max_entries=32)
def _epsilon_for(data_key, settings_key, metric, target):
    return sweeps.epsilon_for_accuracy(fd, MeanSettings(**dict(settings_key)), metric, target)


# --------------------------------------------------------------------------- error vs one parameter

st.header("Error against one parameter")
a, b, c = st.columns([1, 2, 1])
param = a.selectbox("parameter", sweeps.SWEEP_PARAMS, key="to_param", format_func=sweeps.PARAM_LABELS.get,
                    help="Every other setting stays as in the sidebar. phi/psi sweeps the Gaussian mechanism's phi "
                         "and the ICLP means' psi together; n is the public-n sweep (noise variance times "
                         "(n_data / n)^2; against the truth, random subsets of the data, so it stops at n_data).")
mechanisms = b.multiselect("mechanisms", MEAN_MECHANISMS, key="to_mechanisms", format_func=MECHANISM_LABELS.get)
mc_draws = c.select_slider("Monte Carlo draws", (0, 200, 500, 1000, 2000), key="to_mc",
                           help="Draws per mechanism for the 10-90% band of ||release - estimate||^2 (common random "
                                "numbers along the sweep). 0: closed forms only.")
if truth is not None:
    show_truth = st.toggle("also against the true mean (simulation)", value=True, key="to_truth")
else:
    # Real data: the error against the raw sample mean adds the estimator's bias (smoothing, clipping,
    # centring) to the noise. The raw mean is computed from the data: analyst view, not DP.
    show_truth = st.toggle("also against the raw sample mean (analyst view, not DP)", value=False,
                           key="to_truth_raw")
    if show_truth:
        truth = fd.data_matrix.mean(axis=0)
        state.note_view(NONPRIVATE_VIEWS["tradeoff_truth"])
if not mechanisms:
    st.info("Choose at least one mechanism.")
else:
    curves = _curves(_data_key(), settings_key, param, tuple(mechanisms), mc_draws, g.seed, bool(show_truth))
    st.plotly_chart(tradeoff_figure(curves, labels=MECHANISM_LABELS, show_truth=bool(show_truth)),
                    width="stretch", key="to_curves")
    st.caption("Lines: the root-mean-square error sqrt E||release - estimate||^2, a distance in the curves' units "
               "(L2 over the domain rescaled to [0, 1]; the Mean page's 95% radius is between 1 and 2 times it); bands: "
               "Monte Carlo 10-90% of ||release - estimate||; stars: the current setting. "
               + ("Dashed: sqrt(||estimate - truth||^2 + noise variance) for this data set, truth = "
                  + ("the true mean" if ds.true_mean is not None else "the raw sample mean")
                  + " (analyst view, not DP). " if show_truth else "")
               + "Previews use numpy's generator: idealised real-arithmetic DP.")
    for curve in curves:
        label = MECHANISM_LABELS[curve.mechanism]
        if not curve.ok:
            st.caption(f":orange[{label}: not shown] — {curve.invalid}")
        elif curve.notes:
            st.caption(f"{label}: " + "; ".join(curve.notes))
    with st.expander("table"):
        st.dataframe(sweeps.curves_table(curves, include_truth=bool(show_truth)), hide_index=True, width="stretch")

# --------------------------------------------------------------------------- PCV vs PSS

st.header("Choosing phi and rho: PCV (looks at the data) vs PSS (privacy-safe)")
pcv_choices = [m for m in tuning.PCV_MECHANISMS if m in MEAN_MECHANISMS]
a, b, c = st.columns(3)
pcv_mechanism = a.selectbox("PCV for", pcv_choices, key="to_pcv_mechanism", format_func=MECHANISM_LABELS.get,
                            help="The quadratic-penalty means: phi (Gaussian) or psi (ICLP-QR).")
size = b.radio("grid", list(PCV_SIZES), key="to_pcv_size", format_func=PCV_SIZES.get, horizontal=True)
max_folds = max(2, min(20, fd.n))
st.session_state["to_pcv_folds"] = min(int(st.session_state["to_pcv_folds"]), max_folds)  # small data sets
folds = c.number_input("folds K", min_value=2, max_value=max_folds, step=1, key="to_pcv_folds")
penalty_name = mean_mechanism(pcv_mechanism).penalty  # the settings field: phi or psi
current_penalty = getattr(settings, penalty_name)
pss = tuning.pss_defaults(g.kernel, g.nu, fd.n, g.epsilon, mechanism=pcv_mechanism)


def _snap(value: float, lo: float, hi: float, step: float) -> float:
    return float(np.clip(round(value / step) * step, lo, hi))


def _snap_penalty(field: str, penalty: float) -> float:
    """log10 of ``penalty`` on the steps of the slider of settings field ``field`` (phi or psi)."""
    slider = PENALTY_SLIDERS[field]
    return round(_snap(math.log10(penalty), slider.lo, slider.hi, slider.step), slider.digits)


def _apply_pcv(mechanism: str, penalty: float, rho: float) -> None:
    field = mean_mechanism(mechanism).penalty
    sidebar.apply({PENALTY_SLIDERS[field].key: _snap_penalty(field, penalty), "g_rho": float(rho)})


def _apply_pss(eta: float, psi: float) -> None:
    # One PSS penalty for every penalised mean: the sidebar's phi and the Mean page's psi.
    sidebar.apply({"g_eta": round(_snap(eta, *ETA_RANGE, 0.05), 2),
                   **{slider.key: _snap_penalty(field, psi) for field, slider in PENALTY_SLIDERS.items()}})


try:
    pcv = _pcv(_data_key(), tuple(asdict(sweeps.settings_for(settings, pcv_mechanism)).items()), int(size),
               int(folds))
except FdpError as exc:
    pcv = None
    st.warning(f"PCV cannot run with these settings: {exc}")
if pcv is not None:
    state.note_view(NONPRIVATE_VIEWS["pcv"])
    marks = [("PCV optimum (data-dependent: not DP)", pcv.best_penalty, pcv.best_rho, "x", "#d62728"),
             ("current setting", current_penalty, g.rho, "star", "white"),
             ("PSS (privacy-safe) penalty at the current rho", pss[1], g.rho, "diamond", "#17becf")]
    fig = pcv_figure(pcv.penalties, pcv.rhos, pcv.scores, penalty_name=penalty_name, marks=marks,
                     title=f"{pcv.folds}-fold PCV score, {MECHANISM_LABELS[pcv_mechanism]}, eta = {g.eta:g}")
    st.plotly_chart(fig, width="stretch", key="to_pcv_heatmap")
    st.error(f"PCV optimum {penalty_name} = {pcv.best_penalty:.3g}, rho = {pcv.best_rho:.3g}. {pcv.flag}.")
    edges = [f"{name} = {value:.3g} is the grid's {'smallest' if value == grid[0] else 'largest'}"
             for name, value, grid in ((penalty_name, pcv.best_penalty, pcv.penalties), ("rho", pcv.best_rho, pcv.rhos))
             if np.isclose(value, grid[0]) or np.isclose(value, grid[-1])]
    if edges:
        st.warning("The PCV optimum lies on the edge of the grid (" + "; ".join(edges) + "): the best value may lie "
                   "outside the grid searched, so treat it as a bound, not an optimum.")
    st.caption("Score = (1/K) sum_k ||mu_hat(-k) - mean of fold k||^2 + noise variance of the training-fold release "
               "(closed form, no Monte Carlo).")
a, b = st.columns(2)
a.button("apply PCV optimum (not DP)", key="to_apply_pcv", disabled=pcv is None, on_click=_apply_pcv,
         args=(pcv_mechanism, pcv.best_penalty, pcv.best_rho) if pcv is not None else None,
         help="Sets the sidebar's rho and the penalty (phi in the sidebar; psi on the Mean page for ICLP-QR). "
              "The choice looked at the data: releases tuned this way are not differentially private.")
b.button("apply PSS defaults (privacy-safe)", key="to_apply_pss", on_click=_apply_pss, args=pss,
         help="eta = 1 + 2/beta (Matern nu: beta = 2 nu + 1; Gaussian kernel: 1.5) and penalty 1/(n epsilon^2), "
              "set as the sidebar's eta and phi and the ICLP psi. Uses no data, only n (which must be public). For "
              "the quadratic-penalty means (Gaussian, ICLP-QR) only: not valid for ICLP-AR.")
b.caption(f"PSS: eta = {pss[0]:.4g}, penalty = {pss[1]:.3g} (snapped to the sliders' steps). Valid only if n = "
          f"{fd.n} is public.")
private_selection.render(fd, sweeps.settings_for(settings, pcv_mechanism), pcv_mechanism, int(folds), _data_key())

# --------------------------------------------------------------------------- target accuracy -> epsilon

st.header("Which epsilon reaches a target accuracy?")
a, b = st.columns(2)
metric = a.selectbox("accuracy measure", ACCURACY_METRICS, key="to_metric", format_func=ACCURACY_LABELS.get,
                     help="Against the non-private estimate. Pointwise: max over t of the 95% quantile of "
                          "|release(t) - estimate(t)| (Gaussian: 1.96 sd; Laplace noise: the exact quantile of the "
                          "weighted Laplace sum by characteristic-function inversion). L2 radius for Laplace noise: "
                          "4000 Monte Carlo draws (fixed seed).")
target_key = f"to_target_{metric}"
if target_key not in st.session_state:
    # With a declared range, start from the verdict's green line (fdp_core/explore/verdict.py): 10% of its width.
    green = GREEN_SHARE * (g.value_range[1] - g.value_range[0]) if g.value_range is not None else 0.1
    st.session_state[target_key] = green**2 if metric == "expected_sq_l2" else green
target = b.number_input("acceptable error (" + ("squared units" if metric == "expected_sq_l2" else
                                               "units of the curves") + ")",
                        min_value=1e-12, format="%.4g", key=target_key,
                        help="The Mean page's verdict is green when the 95% L2 radius plus the bias is at most "
                             f"{GREEN_SHARE:.0%} of the declared range's width.")
results = _epsilon_for(_data_key(), settings_key, metric, float(target))
# Pre-formatted cells, not a pandas Styler: a Styler costs 25-60 ms on every rerun.
table = pd.DataFrame([{"mechanism": MECHANISM_LABELS[r.mechanism],
                       "smallest epsilon": "-" if r.epsilon is None or r.epsilon != r.epsilon else f"{r.epsilon:.4g}",
                       "error there": "-" if r.achieved is None or r.achieved != r.achieved else f"{r.achieved:.4g}",
                       "note": r.message}
                      for r in results])
st.dataframe(table, hide_index=True, width="stretch")
st.caption("Other settings (delta, smoothing, tau) as in the sidebar; search over epsilon in [0.001, 1000]. The error "
           "decreases strictly in epsilon, so the answer is exact: 1% less epsilon misses the target.")
reachable = {r.mechanism: r.epsilon for r in results if r.epsilon is not None}


def _apply_epsilon(eps: float) -> None:
    choices = sorted(sidebar.EPSILON_CHOICES)
    # The smallest slider value that still meets the target (rounding down would miss it).
    sidebar.apply({"g_epsilon": next((c for c in choices if c >= eps), choices[-1])})


if reachable:
    a, b = st.columns([2, 1])
    if st.session_state["to_apply_mechanism"] not in reachable:
        st.session_state["to_apply_mechanism"] = next(iter(reachable))
    chosen = a.selectbox("use the epsilon of", list(reachable), key="to_apply_mechanism",
                         format_func=MECHANISM_LABELS.get)
    b.button("set epsilon in the sidebar", key="to_apply_epsilon", on_click=_apply_epsilon,
             args=(reachable[chosen],),
             help="Snapped up to the next value of the sidebar's epsilon slider.")

# --------------------------------------------------------------------------- PCA

st.header("Principal components: variance ratio against epsilon")
try:
    from fdp_core.releases.pca import PcaSettings
except ImportError:  # the private PCA module is optional in a partial build
    PcaSettings = None
if PcaSettings is None:
    st.caption("Needs the private PCA module (fdp_core.releases.pca), which is not available in this build.")
else:
    a, b = st.columns([1, 2])
    show_pca = a.toggle("compute (Monte Carlo)", key="to_pca",
                        help="Draws private components at 10 epsilons for k = 1, 2, 3: a few seconds.")
    pca_draws = b.select_slider("draws per epsilon", (20, 50, 100, 200), key="to_pca_draws")

    @st.cache_data(show_spinner="Drawing private components...", max_entries=8)
    def _pca_curves(data_key, pca_key, draws, seed):
        return sweeps.pca_variance_ratio_curves(fd, PcaSettings(**dict(pca_key)), np.logspace(-2, 2, 10),
                                                draws=draws, seed=seed)

    if show_pca:
        pca_settings = PcaSettings(kernel=g.kernel, rho=g.rho, nu=g.nu, epsilon=g.epsilon, tau=g.tau,
                                   tau_from_data=g.tau_from_data, **g.bounds)
        pca_curves = _pca_curves(_data_key(), tuple(asdict(pca_settings).items()), int(pca_draws), g.seed)
        st.plotly_chart(variance_ratio_figure(pca_curves, current_epsilon=g.epsilon), width="stretch",
                        key="to_pca_curves")
        for curve in pca_curves:
            if not curve.ok:
                st.caption(f":orange[k = {curve.k}: not shown] — {curve.invalid}")
        p_used = next((c.p for c in pca_curves if c.ok), None)
        st.caption(f"Kernel basis of the sidebar's kernel and rho (p = {p_used}), gamma = 1, no centring, rows "
                   "clipped at tau. k = 1: exact vector Bingham; k > 1: sequential deflation, epsilon split equally "
                   f"over the k components. Line: mean over {pca_draws} draws; band: 10-90%. "
                   f"{sweeps.PCA_ANALYST_NOTE[:1].upper()}{sweeps.PCA_ANALYST_NOTE[1:]}.")
