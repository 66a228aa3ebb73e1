"""Plotly figures of the trade-off sweeps (sweeps.py): error against one parameter per
mechanism, and the PCA variance ratio against epsilon. Shared by the CLI report
(``python -m fdp_core tradeoff``) and the Trade-offs page.

>>> figure = tradeoff_figure([])  # no curve: empty axes, log error axis
>>> figure.layout.xaxis.type, figure.layout.yaxis.type
('log', 'log')
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .sweeps import PARAM_LABELS, TradeoffCurve, VarianceRatioCurve

# Parameters that act on a log scale: their sweeps get a log x axis.
LOG_SCALE_PARAMS = ("epsilon", "delta", "phi", "rho", "n")
# Curves are coloured by their position in the figure (a band and its line share a colour).
MECHANISM_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _positive(values: np.ndarray) -> np.ndarray:
    return np.where(np.asarray(values) > 0, values, np.nan)


def tradeoff_figure(curves: list[TradeoffCurve], *, title: str | None = None, show_truth: bool = True,
                    labels: dict | None = None, squared: bool = False):
    """Plotly figure: one closed-form line per mechanism, its Monte Carlo band (first to last
    quantile level), dashed error-vs-truth lines when present, and the current setting marked
    on every curve. Log axes where the parameter acts on a log scale; the error is always on
    a log axis (it spans orders of magnitude along an epsilon sweep).

    The error is drawn as a distance in the curves' own units, the root-mean-square L2 error
    sqrt(E||release - estimate||^2) (band: quantiles of ||release - estimate||), the language of
    every accuracy figure; ``squared=True`` draws the squared figures the formulas use."""
    import plotly.graph_objects as go  # lazy: plotly costs ~0.3 s to import

    labels = labels or {}
    unit = (lambda v: np.asarray(v, dtype=float)) if squared else \
        (lambda v: np.sqrt(np.maximum(np.asarray(v, dtype=float), 0.0)))
    # The traces as plain dicts, handed to one Figure without plotly's per-property validation:
    # add_trace re-validated the figure's whole data on every call, and validating even once
    # cost ~5 ms of every rerun of the Trade-offs page. tests/test_tradeoff_figures.py checks
    # that the validated figure is the same.
    traces = []
    param = curves[0].param if curves else "epsilon"
    for k, c in enumerate(curves):
        if not c.ok:
            continue
        color = MECHANISM_COLORS[k % len(MECHANISM_COLORS)]
        name = labels.get(c.mechanism, c.mechanism)
        x = c.values
        if c.mc_quantiles is not None and len(c.quantile_levels) >= 2:
            lo, hi = unit(c.mc_quantiles[0]), unit(c.mc_quantiles[-1])
            keep = np.isfinite(lo) & np.isfinite(hi)
            band = (f"{name}: Monte Carlo {round(100 * c.quantile_levels[0])}-"
                    f"{round(100 * c.quantile_levels[-1])}%")
            traces.append(dict(type="scatter", x=np.concatenate([x[keep], x[keep][::-1]]), mode="lines",
                               y=np.concatenate([hi[keep], lo[keep][::-1]]), fill="toself",
                               fillcolor=_rgba(color, 0.15), line=dict(width=0), name=band,
                               legendgroup=c.mechanism, hoverinfo="skip", showlegend=False))
        # A log axis cannot show 0 (e.g. ICLP-AR with every component thresholded away: no noise).
        what = "E squared error" if squared else "RMS L2 error"
        hover = f"{name}<br>{param} = %{{x:.4g}}<br>{what} = %{{y:.4g}}<extra></extra>"
        traces.append(dict(type="scatter", x=x, y=_positive(unit(c.expected_sq_l2_error)), mode="lines",
                           name=f"{name}", legendgroup=c.mechanism, line=dict(color=color, width=2.5),
                           hovertemplate=hover))
        if show_truth and c.error_vs_truth is not None:
            traces.append(dict(type="scatter", x=x, y=_positive(unit(c.error_vs_truth)), mode="lines",
                               name=f"{name}: vs truth", legendgroup=c.mechanism,
                               line=dict(color=color, width=1.5, dash="dash")))
        if c.current is not None and c.current_error is not None:
            traces.append(dict(type="scatter", x=[c.current], y=unit([c.current_error]), mode="markers",
                               legendgroup=c.mechanism,
                               marker=dict(symbol="star", size=13, color=color, line=dict(width=1, color="black")),
                               name=f"{name}: current setting", showlegend=False,
                               hovertemplate=f"{name}: current {param} = %{{x:.4g}}<br>"
                                             f"{what} = %{{y:.4g}}<extra></extra>"))
    name = "Expected squared L2 error" if squared else "L2 error (root mean square)"
    layout = dict(
        title=dict(text=title or f"{name} vs {PARAM_LABELS.get(param, param)}"),
        xaxis=dict(title=dict(text=PARAM_LABELS.get(param, param)),
                   type="log" if param in LOG_SCALE_PARAMS else "linear", exponentformat="power"),
        yaxis=dict(title=dict(text="E ||release - estimate||^2 (squared units; L2 over [0, 1])" if squared else
                              "sqrt E ||release - estimate||^2 (units of the curves; L2 over [0, 1])"),
                   type="log", exponentformat="power"),
        height=560, margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(orientation="h", yanchor="top", y=-0.16, xanchor="left", x=0))
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def variance_ratio_figure(curves: list[VarianceRatioCurve], *, current_epsilon: float | None = None):
    """Mean variance ratio per k with its Monte Carlo band, log epsilon axis."""
    import plotly.graph_objects as go  # lazy: plotly costs ~0.3 s to import

    fig = go.Figure()
    for i, c in enumerate(curves):
        if not c.ok:
            continue
        color = MECHANISM_COLORS[i % len(MECHANISM_COLORS)]
        x = c.epsilons
        if len(c.quantile_levels) >= 2:
            fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), mode="lines",
                                     y=np.concatenate([c.quantiles[-1], c.quantiles[0][::-1]]), fill="toself",
                                     fillcolor=_rgba(color, 0.15), line=dict(width=0), hoverinfo="skip",
                                     showlegend=False, legendgroup=str(c.k)))
        fig.add_trace(go.Scatter(x=x, y=c.mean, mode="lines+markers", name=f"k = {c.k} ({c.sampler})",
                                 legendgroup=str(c.k), line=dict(color=color, width=2.5)))
    if current_epsilon is not None:
        fig.add_vline(x=current_epsilon, line=dict(color="grey", dash="dot"),
                      annotation_text=f"current epsilon = {current_epsilon:g}",
                      annotation_position="bottom right")
    fig.update_layout(title="Private PCA: variance ratio against epsilon (Monte Carlo over the exact samplers)",
                      xaxis_title="epsilon (total for the k components)", yaxis_title="variance ratio (1 = best)",
                      height=460, margin=dict(l=10, r=10, t=60, b=10), legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(type="log", exponentformat="power")
    fig.update_yaxes(range=[0, 1.02])
    return fig


@functools.cache
def _viridis_reversed() -> tuple:
    """Viridis reversed as [position, colour] pairs, as plotly's validation writes it: plotly.js
    knows no "_r" names (the Python side expands them), and this figure is not validated."""
    import plotly.graph_objects as go  # lazy: plotly costs ~0.3 s to import

    return go.Heatmap(colorscale="Viridis_r").colorscale


def pcv_figure(penalties, rhos, scores, *, penalty_name: str, marks, title: str):
    """The PCV score surface (log10 penalty x log10 rho) with marked settings (Trade-offs page).

    ``marks``: (name, penalty, rho, marker symbol, colour) per point, shown as markers named in
    the legend (text labels next to marks that sit close together overlap). One Figure from
    specs, not validated (add_trace and update_layout cost 4x the figure itself on every rerun
    of the page, validation ~3 ms more; the validated figure is the same, tests/test_tradeoff_figures.py).
    """
    import plotly.graph_objects as go  # lazy: plotly costs ~0.3 s to import

    data = [dict(type="heatmap", x=np.log10(penalties), y=np.log10(rhos), z=np.log10(scores),
                 colorscale=_viridis_reversed(), colorbar=dict(title=dict(text="log10 score")),
                 hovertemplate=f"log10 {penalty_name} = %{{x:.2f}}<br>log10 rho = %{{y:.2f}}<br>"
                               "log10 PCV score = %{z:.3f}<extra></extra>")]
    for name, pen, rho, symbol, color in marks:
        data.append(dict(type="scatter", x=[math.log10(pen)], y=[math.log10(rho)], mode="markers", name=name,
                         marker=dict(symbol=symbol, size=15, color=color, line=dict(width=1.5, color="black")),
                         hovertemplate=f"{name}<br>log10 {penalty_name} = %{{x:.2f}}<br>log10 rho = "
                                       "%{y:.2f}<extra></extra>"))
    return go.Figure({"data": data, "layout": dict(
        title=dict(text=title), xaxis=dict(title=dict(text=f"log10 {penalty_name}")),
        yaxis=dict(title=dict(text="log10 rho")), height=540, margin=dict(l=70, r=20, t=60, b=60),
        legend=dict(orientation="h", yanchor="top", y=-0.18))}, _validate=False)
