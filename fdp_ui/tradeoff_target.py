"""The Trade-offs page's target accuracy: the smallest epsilon each mechanism needs to reach
an acceptable error (fdp_core/explore/sweeps.py), and a button that sets it in the sidebar."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fdp_core.explore import sweeps
from fdp_core.explore.accuracy import ACCURACY_LABELS, ACCURACY_METRICS
from fdp_core.explore.verdict import GREEN_SHARE
from fdp_core.releases.mean import MECHANISM_LABELS, MeanSettings

from . import sidebar
from .tradeoff_sweep import data_key


def _cell(value) -> str:
    return "-" if value is None or value != value else f"{value:.4g}"


@st.cache_data(show_spinner=False, max_entries=32)
def _epsilon_for(data_key, settings_key, metric, target, _fd):
    return sweeps.epsilon_for_accuracy(_fd, MeanSettings(**dict(settings_key)), metric, target)


def _apply_epsilon(eps: float) -> None:
    choices = sorted(sidebar.EPSILON_CHOICES)
    # The smallest slider value that still meets the target (rounding down would miss it).
    sidebar.apply({"g_epsilon": next((c for c in choices if c >= eps), choices[-1])})


def render(fd, settings_key: tuple, value_range) -> None:
    st.header("Which epsilon reaches a target accuracy?")
    a, b = st.columns(2)
    metric = a.selectbox("accuracy measure", ACCURACY_METRICS, key="to_metric", format_func=ACCURACY_LABELS.get,
                         help="Against the non-private estimate. Pointwise: max over t of the 95% quantile of "
                              "|release(t) - estimate(t)| (Gaussian: 1.96 sd; Laplace noise: the exact quantile of "
                              "the weighted Laplace sum by characteristic-function inversion). L2 radius for "
                              "Laplace noise: 4000 Monte Carlo draws (fixed seed).")
    target_key = f"to_target_{metric}"
    if target_key not in st.session_state:
        # With a declared range, start from the verdict's green line (fdp_core/explore/verdict.py): 10% of its width.
        green = GREEN_SHARE * (value_range[1] - value_range[0]) if value_range is not None else 0.1
        st.session_state[target_key] = green**2 if metric == "expected_sq_l2" else green
    target = b.number_input("acceptable error (" + ("squared units" if metric == "expected_sq_l2" else
                                                   "units of the curves") + ")",
                            min_value=1e-12, format="%.4g", key=target_key,
                            help="The Mean page's verdict is green when the 95% L2 radius plus the bias is at most "
                                 f"{GREEN_SHARE:.0%} of the declared range's width.")
    results = _epsilon_for(data_key(fd), settings_key, metric, float(target), fd)
    # Pre-formatted cells, not a pandas Styler: a Styler costs 25-60 ms on every rerun.
    table = pd.DataFrame([{"mechanism": MECHANISM_LABELS[r.mechanism],
                           "smallest epsilon": _cell(r.epsilon), "error there": _cell(r.achieved), "note": r.message}
                          for r in results])
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption("Other settings (delta, smoothing, tau) as in the sidebar; search over epsilon in [0.001, 1000]. The "
               "error decreases strictly in epsilon, so the answer is exact: 1% less epsilon misses the target.")
    reachable = {r.mechanism: r.epsilon for r in results if r.epsilon is not None}
    if reachable:
        a, b = st.columns([2, 1])
        if st.session_state["to_apply_mechanism"] not in reachable:
            st.session_state["to_apply_mechanism"] = next(iter(reachable))
        chosen = a.selectbox("use the epsilon of", list(reachable), key="to_apply_mechanism",
                             format_func=MECHANISM_LABELS.get)
        b.button("set epsilon in the sidebar", key="to_apply_epsilon", on_click=_apply_epsilon,
                 args=(reachable[chosen],),
                 help="Snapped up to the next value of the sidebar's epsilon slider.")
