"""Plotly figures shared by the pages. Figures stay small: at most a few hundred curves."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

MAX_CURVES_DRAWN = 300
# Up to this many points a polyline is drawn as SVG: each WebGL trace makes the browser create
# a WebGL context on every redraw (~120 ms measured per slider change, software-rendered),
# while an SVG path of a few thousand points costs a few ms. Beyond it WebGL pays off.
SVG_MAX_POINTS = 20_000
# The Data page's preview: a sample of curves over the pointwise quantile envelope of all of
# them (300 curves as one trace was a 760 KB figure sent on every rerun of the page).
PREVIEW_CURVES = 40
ANALYST_LABEL = "non-private estimate (analyst view: do not publish)"
PRIVATE_COLOR = "#1f77b4"
ANALYST_COLOR = "#d62728"
RAW_MEAN_LABEL = "raw mean of the curves (analyst view: the target's bias is the gap)"
RAW_MEAN_COLOR = "#7f7f7f"


def stacked_curves(grid: np.ndarray, curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All curves as one polyline separated by NaN gaps: one WebGL trace, not n traces."""
    n, m = curves.shape
    x = np.tile(np.append(grid, np.nan), n)
    y = np.hstack([curves, np.full((n, 1), np.nan)]).ravel()
    return x, y


def line_trace_type(n_points: int) -> str:
    """Plotly trace type for one polyline of ``n_points``: SVG "scatter" unless it is large."""
    return "scatter" if n_points <= SVG_MAX_POINTS else "scattergl"


def add_curves(fig: go.Figure, grid, curves, *, name: str, color: str, width: float = 1.0,
               opacity: float = 1.0) -> None:
    """Add many curves to ``fig`` as a single trace (SVG, or WebGL when very many points)."""
    x, y = stacked_curves(np.asarray(grid), np.asarray(curves))
    trace = go.Scatter if line_trace_type(x.size) == "scatter" else go.Scattergl
    fig.add_trace(trace(x=x, y=y, mode="lines", line=dict(width=width, color=color), opacity=opacity,
                        name=name, hoverinfo="skip"))


def curve_subset(n: int, limit: int = MAX_CURVES_DRAWN, seed: int = 0) -> np.ndarray:
    """Indices of the curves drawn: all of them, or a fixed random subset of ``limit``."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, limit, replace=False))


def curves_figure(grid, curves, *, title: str, color: str = "rgba(31,119,180,0.35)", name: str = "curves",
                  x_title: str | None = None, y_title: str | None = None) -> go.Figure:
    """The curves; axis titles default to the session's t label and value unit."""
    x_title, y_title = x_title or t_title(), y_title or value_title()
    fig = go.Figure()
    add_curves(fig, grid, curves, name=name, color=color)
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=420,
                      margin=dict(l=10, r=10, t=50, b=10), showlegend=True)
    return fig


def add_band(fig: go.Figure, grid, lower, upper, *, name: str, color: str = "rgba(31,119,180,0.2)") -> None:
    grid = np.asarray(grid)
    fig.add_trace(go.Scatter(x=np.concatenate([grid, grid[::-1]]),
                             y=np.concatenate([np.asarray(upper), np.asarray(lower)[::-1]]),
                             fill="toself", fillcolor=color, line=dict(width=0), name=name, hoverinfo="skip"))


def add_line(fig: go.Figure, grid, values, *, name: str, color: str, dash: str | None = None,
             width: float = 2.5) -> None:
    fig.add_trace(go.Scatter(x=np.asarray(grid), y=np.asarray(values), mode="lines", name=name,
                             line=dict(color=color, width=width, dash=dash)))


def _curves_spec(grid, curves, *, name: str, color: str, width: float = 1.0, opacity: float = 1.0) -> dict:
    x, y = stacked_curves(np.asarray(grid), np.asarray(curves))
    return {"type": line_trace_type(x.size), "x": x, "y": y, "mode": "lines", "line": {"width": width, "color": color},
            "opacity": opacity, "name": name, "hoverinfo": "skip"}


def _line_spec(grid, values, *, name: str, color: str, dash: str | None = None, width: float = 2.5) -> dict:
    line = {"color": color, "width": width}
    if dash is not None:
        line["dash"] = dash
    return {"type": "scatter", "x": np.asarray(grid), "y": np.asarray(values), "mode": "lines", "name": name,
            "line": line}


def _band_spec(grid, lower, upper, *, name: str, color: str = "rgba(31,119,180,0.2)") -> dict:
    grid = np.asarray(grid)
    return {"type": "scatter", "x": np.concatenate([grid, grid[::-1]]),
            "y": np.concatenate([np.asarray(upper), np.asarray(lower)[::-1]]), "fill": "toself", "fillcolor": color,
            "line": {"width": 0}, "name": name, "hoverinfo": "skip"}


def release_figure(grid, draws: np.ndarray, estimate: np.ndarray | None, *, title: str, style: str = "draws",
                   truth: np.ndarray | None = None, x_title: str | None = None, label: str = "sanitized mean",
                   color: str = PRIVATE_COLOR, y_title: str | None = None,
                   raw_mean: np.ndarray | None = None, y_range: tuple | None = None) -> go.Figure:
    """Sanitized draws (spaghetti, or a pointwise 5-95% band) with the analyst-view estimate and,
    when given, the plain average of the raw curves (analyst view: the bias is the gap between the
    two). Axis titles default to the session's t label and value unit. ``y_range``: a fixed value
    axis (the declared public range, padded), so a change of epsilon moves the band, not the ticks.

    Written as a plain plotly spec and wrapped without plotly's per-property validation (it
    cost ~20 ms of every rerun of the Mean page); the same figure as add_band / add_line /
    add_curves build (tests/test_plots_spec.py)."""
    x_title, y_title = x_title or t_title(), y_title or value_title()
    data = []
    if style == "band":
        lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
        data.append(_band_spec(grid, lo, hi, name=f"{label}: pointwise 5-95% of {len(draws)} draws"))
        data.append(_line_spec(grid, draws[0], name=f"{label} (one draw)", color=color, width=1.5))
    else:
        data.append(_curves_spec(grid, draws, name=f"{label}: {len(draws)} draws", color=color, opacity=0.45))
    if truth is not None:
        data.append(_line_spec(grid, truth, name="true mean (simulation)", color="#2ca02c", dash="dot"))
    if estimate is not None:
        data.append(_line_spec(grid, estimate, name=ANALYST_LABEL, color=ANALYST_COLOR, dash="dash"))
    if raw_mean is not None:
        data.append(_line_spec(grid, raw_mean, name=RAW_MEAN_LABEL, color=RAW_MEAN_COLOR, dash="dot"))
    yaxis = {"title": {"text": y_title}}
    if y_range is not None:
        lo, hi = float(y_range[0]), float(y_range[1])
        pad = 0.1 * (hi - lo)
        yaxis.update(range=[lo - pad, hi + pad], autorange=False)
    layout = {"title": {"text": title}, "xaxis": {"title": {"text": x_title}}, "yaxis": yaxis,
              "height": 460, "margin": {"l": 10, "r": 10, "t": 50, "b": 10},
              "legend": {"orientation": "h", "yanchor": "bottom", "y": -0.35}}
    return go.Figure({"data": data, "layout": layout}, _validate=False)


# --------------------------------------------------------------------------- axis names
# The t label and value unit typed on the Data page (or taken from a long file's column
# names), stored outside any widget so they survive page switches.
AXIS_KEYS = ("axis_t_label", "axis_value_unit")


def _session():
    import streamlit as st

    return st.session_state


def set_axis_labels(t_label: str, value_label: str) -> None:
    ss = _session()
    ss[AXIS_KEYS[0]] = str(t_label).strip() or "t"
    ss[AXIS_KEYS[1]] = str(value_label).strip() or "value"


def _stored(key: str, default: str) -> str:
    try:
        return _session().get(key, default)
    except Exception:  # no Streamlit session (a script drawing the figures): the plain names
        return default


def t_title() -> str:
    return _stored(AXIS_KEYS[0], "t")


def value_title() -> str:
    return _stored(AXIS_KEYS[1], "value")


def label_release(release) -> None:
    """Carry the session's axis names into a committed release (record and replay config), so its
    figure, report and re-run notebook say "day of year" and "deg C", not "t" and "value"."""
    labels = {"t": t_title(), "value": value_title()}
    if labels != {"t": "t", "value": "value"}:
        release.record["axis_labels"] = labels
        release.config.setdefault("data", {})["axis_labels"] = labels


def title_surface_axes(fig: go.Figure, columns: int, *, colorbar: str = "covariance") -> None:
    """Axis titles of side-by-side covariance surfaces C(s, t) (both axes are the curve argument)."""
    for col in range(1, columns + 1):
        fig.update_xaxes(title_text=f"t ({t_title()})", row=1, col=col)
        fig.update_yaxes(title_text=f"s ({t_title()})" if col == 1 else None, row=1, col=col)
    fig.update_traces(colorbar=dict(title=colorbar), selector=dict(type="heatmap"))
