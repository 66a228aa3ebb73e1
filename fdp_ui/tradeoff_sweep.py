"""The Trade-offs page's shared mean options and its first section: the error against one
privacy or smoothing parameter, per mechanism (curves from fdp_core/explore/sweeps.py)."""

from __future__ import annotations


import streamlit as st

from fdp_core.explore import sweeps
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.registry import truncating_mechanisms
from fdp_core.releases.mean import MEAN_MECHANISMS, MECHANISM_LABELS, MeanSettings
from fdp_core.sensitivity import BOUNDS
from fdp_core.explore.tradeoff_figures import tradeoff_figure

from . import live_chart, private_selection, state
from .layout import lazy_expander
from .mean_controls import KEYS


def data_key(fd) -> str:
    """Cache key of the data set (hashing the arrays is cheaper than hashing the object)."""
    return state.curves_digest(fd)


def mechanism_options() -> None:
    """The Mean page's mechanism options (same keys), so "the current setting" is the Mean page's.

    Drawn only while their expander is open: their values live on in the session state when it
    is closed (mean_controls.keep(), called at the top of the page), so the settings do not change."""
    options = lazy_expander("Mechanism options (shared with the Mean page)", "to_options_open")
    if not options.open:
        return
    with options:
        c1, c2, c3 = st.columns(3)
        c1.radio("sensitivity bound", BOUNDS, key=KEYS["bound"], horizontal=True,
                 help="tight: the attained (or Cauchy-Schwarz) bound; paper: the published closed form.")
        c2.radio("calibration (Gaussian)", CALIBRATIONS, key=KEYS["calibration"], horizontal=True,
                 help="classical is valid for epsilon <= 1 only: its curve stops there.")
        psi_slider = private_selection.PENALTY_SLIDERS["psi"]
        c3.slider("log10 psi (ICLP penalty)", psi_slider.lo, psi_slider.hi, step=psi_slider.step,
                  key=psi_slider.key)
        c4, c5, c6, c7 = st.columns(4)
        c4.number_input(f"M ({', '.join(truncating_mechanisms())})", min_value=1, max_value=1000, step=1,
                        key=KEYS["M"])
        c5.number_input("K (Bernstein)", min_value=1, max_value=500, step=1, key=KEYS["K"])
        c6.number_input("lo (Bernstein, public)", format="%.4g", key=KEYS["lo"])
        c7.number_input("hi (Bernstein, public)", format="%.4g", key=KEYS["hi"])


@st.cache_data(show_spinner="Computing the trade-off curves (shared with every session on these data)...",
               max_entries=32)
def _curves(data_key, settings_key, param, mechanisms, mc_draws, seed, with_truth, _fd, _truth):
    fd = _fd
    return sweeps.tradeoff_curves(fd, MeanSettings(**dict(settings_key)), param, sweeps.default_values(param, fd.n),
                                  mechanisms=mechanisms, truth=_truth if with_truth else None, mc_draws=mc_draws,
                                  seed=seed)


def render(ds, settings_key: tuple, seed) -> None:
    """Error against one parameter: the parameter, the mechanisms, the Monte Carlo band, the truth."""
    fd = ds.fd
    truth = ds.true_mean(fd.grid_points) if ds.true_mean is not None else None
    st.header("Error against one parameter")
    a, b, c = st.columns([1, 2, 1])
    param = a.selectbox("parameter", sweeps.SWEEP_PARAMS, key="to_param", format_func=sweeps.PARAM_LABELS.get,
                        help="Every other setting stays as in the sidebar. phi/psi sweeps the Gaussian mechanism's "
                             "phi and the ICLP means' psi together; n is the public-n sweep (noise variance times "
                             "(n_data / n)^2; against the truth, random subsets of the data, so it stops at n_data).")
    mechanisms = b.multiselect("mechanisms", MEAN_MECHANISMS, key="to_mechanisms", format_func=MECHANISM_LABELS.get)
    mc_draws = c.select_slider("Monte Carlo draws", (0, 200, 500, 1000, 2000), key="to_mc",
                               help="Draws per mechanism for the 10-90% band of ||release - estimate||^2 (common "
                                    "random numbers along the sweep). 0: closed forms only.")
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
        return
    curves = _curves(data_key(fd), settings_key, param, tuple(mechanisms), mc_draws, seed, bool(show_truth),
                     fd, truth)
    live_chart.show(tradeoff_figure(curves, labels=MECHANISM_LABELS, show_truth=bool(show_truth)), key="to_curves")
    lines = ["Lines: the root-mean-square error sqrt E||release - estimate||^2, a distance in the curves' units "
             "(L2 over the domain rescaled to [0, 1]; the Mean page's 95% radius is between 1 and 2 times it); "
             "bands: Monte Carlo 10-90% of ||release - estimate||; stars: the current setting. "
             + ("Dashed: sqrt(||estimate - truth||^2 + noise variance) for this data set, truth = "
                + ("the true mean" if ds.true_mean is not None else "the raw sample mean")
                + " (analyst view, not DP). " if show_truth else "")
             + "Previews use numpy's generator: idealised real-arithmetic DP."]
    for curve in curves:
        label = MECHANISM_LABELS[curve.mechanism]
        if not curve.ok:
            lines.append(f":orange[{label}: not shown] — {curve.invalid}")
        elif curve.notes:
            lines.append(f"{label}: " + "; ".join(curve.notes))
    st.caption("\n\n".join(lines))  # one element: the legend and each curve's note, one paragraph each
    table = lazy_expander("table", "to_table_open")
    if table.open:
        table.dataframe(sweeps.curves_table(curves, include_truth=bool(show_truth)), hide_index=True, width="stretch")
