"""Plotly figures of the Density page: 1-d sanitized densities and 2-d heatmaps or surfaces.

Figures stay small: at most a few dozen 1-d draws and a handful of 2-d panels reach the browser.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import plots

TRUTH_COLOR = "#2ca02c"
HEATMAP_SCALE = "Viridis"


def density_figure(grid, draws: np.ndarray, estimate: np.ndarray, *, title: str, x_title: str,
                   style: str = "draws", truth: np.ndarray | None = None, color: str = plots.PRIVATE_COLOR,
                   y_range: tuple | None = None) -> go.Figure:
    """Sanitized 1-d densities (spaghetti or pointwise 5-95% band) with the analyst-view KDE.

    ``truth`` is the true density of a simulation, drawn dotted; ``y_range`` lets the
    comparison mode put two mechanisms on the same vertical scale.
    """
    fig = plots.release_figure(grid, draws, estimate, title=title, style=style, x_title=x_title,
                               label="sanitized density", color=color)
    if truth is not None:
        plots.add_line(fig, grid, truth, name="true density (simulation)", color=TRUTH_COLOR, dash="dot", width=2)
    # The zero line as an axis property: add_hline costs about 8 ms per figure.
    fig.update_layout(yaxis=dict(title="density", zeroline=True, zerolinecolor="#7f7f7f", zerolinewidth=1,
                                 range=None if y_range is None else list(y_range)))
    return fig


def common_range(*arrays: np.ndarray, pad: float = 0.04) -> tuple[float, float]:
    """(lo, hi) covering every value of the arrays, padded by ``pad`` of the span."""
    lo = min(float(np.min(a)) for a in arrays)
    hi = max(float(np.max(a)) for a in arrays)
    span = hi - lo if hi > lo else 1.0
    return lo - pad * span, hi + pad * span


def density_panels_figure(grids: tuple, panels: list[tuple[str, np.ndarray]], *, x_titles: tuple[str, str],
                          surface: bool = False) -> go.Figure:
    """2-d densities side by side on one colour scale: heatmaps, or surfaces when ``surface``.

    Each panel's values have shape (G1, G2) indexed [axis 1, axis 2]; plotly draws z[row][col]
    with rows along y, so the arrays are transposed. No figure title: in the app's theme a
    plotly title collides with the two-line panel titles, so the page writes it above the chart.
    """
    zmin, zmax = common_range(*(values for _, values in panels), pad=0.0)
    k = len(panels)
    fig = make_subplots(rows=1, cols=k, subplot_titles=[name for name, _ in panels],
                        specs=[[{"type": "surface" if surface else "xy"}] * k], horizontal_spacing=0.05)
    x, y = np.asarray(grids[0]), np.asarray(grids[1])
    for col, (_, values) in enumerate(panels, start=1):
        z = np.asarray(values).T
        if surface:
            trace = go.Surface(x=x, y=y, z=z, cmin=zmin, cmax=zmax, colorscale=HEATMAP_SCALE, showscale=col == k,
                               colorbar=dict(title="density", len=0.9))
        else:
            trace = go.Heatmap(x=x, y=y, z=z, zmin=zmin, zmax=zmax, colorscale=HEATMAP_SCALE, showscale=col == k,
                               colorbar=dict(title="density", len=0.9),
                               hovertemplate="x1 = %{x:.3g}<br>x2 = %{y:.3g}<br>density = %{z:.3g}<extra></extra>")
        fig.add_trace(trace, row=1, col=col)
        if not surface:
            fig.update_xaxes(title_text=x_titles[0], row=1, col=col)
            fig.update_yaxes(title_text=x_titles[1] if col == 1 else None, row=1, col=col)
    if surface:
        fig.update_scenes(xaxis_title=x_titles[0], yaxis_title=x_titles[1], zaxis_title="density",
                          zaxis_range=[zmin, zmax], aspectmode="cube")
    fig.update_layout(height=440 if surface else 400, margin=dict(l=10, r=10, t=60, b=10))
    return fig
