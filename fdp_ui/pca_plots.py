"""Plotly figures of the Principal components page (private FPCA, METHODS.md section 5).

Every figure takes arrays computed by fdp_core.releases.pca; the only arithmetic here is for display:
sign alignment (a component and its negative are the same direction) and mean +/- 2 sd x
component. Figures stay small: at most ten draws per component, a Gibbs trace thinned to at
most ``MAX_TRACE_POINTS`` points per column.

The figures are written as plain plotly specs and wrapped without plotly's per-property
validation: measured on this page, ``make_subplots`` alone costs about 30 ms and validating
three traces about 5 ms, against a page budget of 100 ms per rerun. The app's tests validate
every spec built here with plotly's validator instead (tests/test_components_page.py).
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from . import plots

MAX_TRACE_POINTS = 1000
MAX_SCREE_BARS = 20
DRAWS_COLOR = "rgba(31,119,180,0.35)"
MEAN_COLOR = "#222222"
PLUS_COLOR = "#2ca02c"
MINUS_COLOR = "#ff7f0e"
TRACE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")
_H_SPACE, _V_SPACE = 0.06, 0.18
_MARGIN = dict(l=10, r=10, t=40, b=10)


def align_signs(coefficients: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Signs (+1/-1 per column) that make each private column point like the reference column.

    Display only: v and -v are the same principal direction, and the library's own sign
    convention (largest entry positive) can differ between a draw and the non-private FPCA.
    The comparison uses the non-private components, so the aligned picture is analyst view.
    """
    dots = np.einsum("pk,pk->k", np.asarray(coefficients), np.asarray(reference))
    return np.where(dots < 0, -1.0, 1.0)


def _figure(spec: dict) -> go.Figure:
    return go.Figure(spec, _validate=False)


def _panel_layout(k: int, titles: list[str], x_title: str | None, *, height_per_row: int = 320) -> tuple[dict, list]:
    """Layout of k panels (one row up to 3, else 2 rows of 3) and each panel's (xref, yref).

    The axes domains and the panel titles are what plotly.subplots.make_subplots would write.
    """
    rows, cols = (1, k) if k <= 3 else (2, 3)
    width = (1.0 - (cols - 1) * _H_SPACE) / cols
    height = (1.0 - (rows - 1) * _V_SPACE) / rows
    # The legend sits below the bottom row's axis title: a fixed pixel gap, whatever the height.
    total = height_per_row * rows + 120
    layout = {"height": total, "margin": dict(_MARGIN, b=90), "annotations": [],
              "legend": {"orientation": "h", "yanchor": "top", "y": -95 / (total - 130)}}
    refs = []
    for j in range(k):
        row, col = divmod(j, cols)
        x0 = col * (width + _H_SPACE)
        y1 = 1.0 - row * (height + _V_SPACE)
        suffix = "" if j == 0 else str(j + 1)
        layout[f"xaxis{suffix}"] = {"domain": [x0, min(x0 + width, 1.0)], "anchor": f"y{suffix}",
                                    "title": {"text": x_title or plots.t_title()}}
        layout[f"yaxis{suffix}"] = {"domain": [max(y1 - height, 0.0), y1], "anchor": f"x{suffix}"}
        layout["annotations"].append({"text": titles[j], "x": x0 + width / 2, "y": y1, "xref": "paper",
                                      "yref": "paper", "xanchor": "center", "yanchor": "bottom",
                                      "showarrow": False, "font": {"size": 14}})
        refs.append((f"x{suffix}", f"y{suffix}"))
    return layout, refs


def _line(x, y, *, name: str, ref: tuple, color: str, width: float = 2.0, dash: str | None = None,
          group: str, legend: bool, kind: str = "scatter") -> dict:
    line = {"color": color, "width": width}
    if dash is not None:
        line["dash"] = dash
    return {"type": kind, "x": np.asarray(x), "y": np.asarray(y), "mode": "lines", "name": name, "line": line,
            "xaxis": ref[0], "yaxis": ref[1], "legendgroup": group, "showlegend": legend}


def components_figure(grid, draws: list[np.ndarray], nonprivate: np.ndarray, *, x_title: str | None = None,
                      approximate: bool = False) -> go.Figure:
    """Private components (one panel per component; draw 1 bold, further draws thin) vs the analyst view.

    ``draws`` are (m, k) arrays already sign-aligned to ``nonprivate`` (m, k).
    """
    k = nonprivate.shape[1]
    tag = " (approximate DP)" if approximate else ""
    layout, refs = _panel_layout(k, [f"component {j + 1}" for j in range(k)], x_title)
    data = []
    for j, ref in enumerate(refs):
        first = j == 0
        if len(draws) > 1:
            # All further draws of a component as one polyline (NaN-separated).
            x, y = plots.stacked_curves(np.asarray(grid), np.array([d[:, j] for d in draws[1:]]))
            trace = _line(x, y, name=f"further private draws ({len(draws) - 1}){tag}", ref=ref, color=DRAWS_COLOR,
                          width=1.0, group="rest", legend=first, kind=plots.line_trace_type(x.size))
            trace["hoverinfo"] = "skip"
            data.append(trace)
        data.append(_line(grid, draws[0][:, j], name=f"private draw 1{tag}", ref=ref, color=plots.PRIVATE_COLOR,
                          width=2.5, group="first", legend=first))
        data.append(_line(grid, nonprivate[:, j], name=plots.ANALYST_LABEL, ref=ref, color=plots.ANALYST_COLOR,
                          dash="dash", group="analyst", legend=first))
    return _figure({"data": data, "layout": layout})


def perturbation_figure(grid, mean: np.ndarray, components: np.ndarray, sds: np.ndarray, *, mean_label: str,
                        x_title: str | None = None) -> go.Figure:
    """mean +/- 2 sd x component, one panel per component (components (m, k), sds (k,))."""
    k = components.shape[1]
    layout, refs = _panel_layout(k, [f"component {j + 1}: 2 sd = {2 * sds[j]:.3g}" for j in range(k)], x_title)
    data = []
    for j, ref in enumerate(refs):
        first = j == 0
        shift = 2.0 * sds[j] * components[:, j]
        data.append(_line(grid, mean, name=mean_label, ref=ref, color=MEAN_COLOR, group="mean", legend=first))
        data.append(_line(grid, mean + shift, name="mean + 2 sd x private component", ref=ref, color=PLUS_COLOR,
                          group="plus", legend=first))
        data.append(_line(grid, mean - shift, name="mean - 2 sd x private component", ref=ref, color=MINUS_COLOR,
                          dash="dot", group="minus", legend=first))
    return _figure({"data": data, "layout": layout})


def scree_figure(explained_variance_ratio: np.ndarray, k: int) -> go.Figure:
    """Non-private scree (analyst view): share of X'X's trace per eigenvalue, the first k marked."""
    share = np.asarray(explained_variance_ratio)[:MAX_SCREE_BARS]
    index = np.arange(1, share.size + 1)
    colors = [plots.ANALYST_COLOR if i <= k else "#c7c7c7" for i in index]
    data = [{"type": "bar", "x": index, "y": share, "marker": {"color": colors}, "name": "share of the trace",
             "hovertemplate": "eigenvalue %{x}: %{y:.3f}<extra></extra>"},
            {"type": "scatter", "x": index, "y": np.cumsum(share), "mode": "lines+markers", "name": "cumulative",
             "line": {"color": "#555555", "width": 1.5}, "marker": {"size": 5}}]
    layout = {"title": {"text": "Scree of the non-private FPCA<br>(analyst view: do not publish)"}, "height": 380,
              "xaxis": {"title": {"text": "eigenvalue index (first k in red)"}},
              "yaxis": {"title": {"text": "share of the trace"}, "range": [0, 1.05]},
              "margin": dict(_MARGIN, t=70), "legend": {"orientation": "h", "yanchor": "top", "y": -0.22}}
    return _figure({"data": data, "layout": layout})


def gibbs_trace_figure(trace: np.ndarray, burn_in: int, thin: int) -> go.Figure:
    """v_l' A v_l per column along the Gibbs chain (the log-density is the row sum), burn-in shaded.

    Long chains are thinned for display to at most ``MAX_TRACE_POINTS`` sweeps per column.
    """
    trace = np.asarray(trace)
    n_sweeps, k = trace.shape
    step = max(1, math.ceil(n_sweeps / MAX_TRACE_POINTS))
    sweeps = np.arange(0, n_sweeps, step)
    data = [_line(sweeps + 1, trace[sweeps, j], name=f"column {j + 1}", ref=("x", "y"),
                  color=TRACE_COLORS[j % len(TRACE_COLORS)], width=1.2, group=f"c{j}", legend=True,
                  kind=plots.line_trace_type(sweeps.size * k))
            for j in range(k)]
    shown = f" (one sweep in {step} shown)" if step > 1 else ""
    layout = {"title": {"text": f"Gibbs chain (approximate DP): v_l' A v_l per sweep{shown}; thin = {thin}"},
              "xaxis": {"title": {"text": "sweep"}}, "yaxis": {"title": {"text": "v_l' A v_l"}}, "height": 340,
              "margin": dict(_MARGIN, t=50), "legend": {"orientation": "h", "yanchor": "top", "y": -0.25}}
    if burn_in > 0:
        layout["shapes"] = [{"type": "rect", "xref": "x", "yref": "paper", "x0": 0, "x1": burn_in, "y0": 0, "y1": 1,
                             "fillcolor": "#7f7f7f", "opacity": 0.15, "line": {"width": 0}}]
        layout["annotations"] = [{"text": "burn-in", "x": 0, "y": 1, "xref": "x", "yref": "paper",
                                  "xanchor": "left", "yanchor": "top", "showarrow": False}]
    return _figure({"data": data, "layout": layout})
