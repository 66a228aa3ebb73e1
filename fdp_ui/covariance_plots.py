"""The Covariance & regression page's three figures, written as plain plotly specs.

The page drew them with ``make_subplots``, ``add_trace`` and ``update_*``: plotly validated every
property on every call, ~10 ms per ``make_subplots`` alone, on every rerun of the page (issue 40).
Here each figure is one spec wrapped without validation; the layout is what
``make_subplots(rows=1, cols=k, subplot_titles=...)`` writes (horizontal spacing 0.2 / k, titles as
paper annotations of size 16). tests/test_covariance_plots.py checks each figure against the
validated builders it replaces and validates every property with plotly's validator.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .plots import ANALYST_COLOR, ANALYST_LABEL, PRIVATE_COLOR, t_title

EM_COLOR = "#2ca02c"
# Plotly.js knows no "_r" scales (plotly.py's validator expands them): the expanded list, computed once.
SURFACE_COLORSCALE = [list(stop) for stop in go.Heatmap(colorscale="RdBu_r").colorscale]


def panels_layout(k: int, titles, *, height: int, margin: dict) -> tuple[dict, list[tuple[str, str]]]:
    """One row of k panels as make_subplots lays them out, and each panel's (xref, yref)."""
    spacing = 0.2 / k
    width = (1.0 - spacing * (k - 1)) / k
    layout = {"height": height, "margin": margin, "annotations": []}
    refs = []
    for j in range(k):
        x0 = j * (width + spacing)
        suffix = "" if j == 0 else str(j + 1)
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": [x0, x0 + width]}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": [0.0, 1.0]}
        layout["annotations"].append({"font": {"size": 16}, "showarrow": False, "text": titles[j],
                                      "x": x0 + width / 2, "xanchor": "center", "xref": "paper", "y": 1.0,
                                      "yanchor": "bottom", "yref": "paper"})
        refs.append((f"x{suffix}", f"y{suffix}"))
    return layout, refs


def surfaces_figure(grid, surfaces, scale: float, *, colorbar: str = "C(s, t)") -> go.Figure:
    """Two covariance surfaces side by side on one colour scale (non-private, private)."""
    layout, refs = panels_layout(2, ("non-private (analyst view: do not publish)", "private release C~"),
                                 height=420, margin=dict(l=10, r=10, t=40, b=10))
    data = []
    for col, (surface, ref) in enumerate(zip(surfaces, refs), start=1):
        # float32 surfaces as binary arrays: a colour needs no more digits; 1/3 of the bytes, 1/5 the CPU (issue 40)
        data.append({"type": "heatmap", "x": np.asarray(grid), "y": np.asarray(grid),
                     "z": np.asarray(surface).astype(np.float32), "zmin": -scale, "zmax": scale,
                     "colorscale": SURFACE_COLORSCALE, "showscale": col == 2, "xaxis": ref[0], "yaxis": ref[1],
                     "colorbar": {"title": {"text": colorbar}}})
        suffix = "" if col == 1 else str(col)
        layout[f"xaxis{suffix}"]["title"] = {"text": f"t ({t_title()})"}
        if col == 1:
            layout["yaxis"]["title"] = {"text": f"s ({t_title()})"}
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def components_figure(grid, k: int, routes) -> go.Figure:
    """k panels of eigenfunctions; ``routes``: (name, functions (m, >=k) or None, colour, dash) per route, the
    last one the reference each column's sign is aligned to."""
    layout, refs = panels_layout(k, [f"component {j + 1}" for j in range(k)], height=360,
                                 margin=dict(l=10, r=10, t=40, b=10))
    reference = routes[-1][1]
    data = []
    for j, ref in enumerate(refs):
        for name, functions, color, dash in routes:
            if functions is None:
                continue
            f = functions[:, j] * (1.0 if functions[:, j] @ reference[:, j] >= 0 else -1.0)
            line = {"color": color} if dash is None else {"color": color, "dash": dash}
            data.append({"type": "scatter", "x": np.asarray(grid), "y": f, "mode": "lines", "name": name,
                         "showlegend": j == 0, "line": line, "xaxis": ref[0], "yaxis": ref[1]})
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def regression_figure(grid, labels, band: dict, beta: np.ndarray, ols: np.ndarray) -> go.Figure:
    """One panel per coefficient function: its noise band, the private beta~ and the OLS (analyst view)."""
    grid = np.asarray(grid)
    layout, refs = panels_layout(len(labels), [f"beta: {label}" for label in labels], height=380,
                                 margin=dict(l=10, r=10, t=40, b=10))
    data = []
    for j, ref in enumerate(refs):
        axes = {"xaxis": ref[0], "yaxis": ref[1], "showlegend": j == 0}
        data.append({"type": "scatter", "x": np.concatenate([grid, grid[::-1]]),
                     "y": np.concatenate([np.asarray(band["upper"][j]), np.asarray(band["lower"][j])[::-1]]),
                     "fill": "toself", "fillcolor": "rgba(31,119,180,0.2)", "line": {"width": 0},
                     "name": "95% noise band (analyst view)", "hoverinfo": "skip", **axes})
        data.append({"type": "scatter", "x": grid, "y": np.asarray(beta[j]), "mode": "lines", "name": "private beta~",
                     "line": {"color": PRIVATE_COLOR, "width": 2.5}, **axes})
        data.append({"type": "scatter", "x": grid, "y": np.asarray(ols[j]), "mode": "lines",
                     "name": "OLS, " + ANALYST_LABEL, "line": {"color": ANALYST_COLOR, "width": 2.5, "dash": "dash"},
                     **axes})
    return go.Figure({"data": data, "layout": layout}, _validate=False)
