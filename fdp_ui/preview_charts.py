"""The Data page's two charts (the curves preview and the L2 norms histogram) as Vega-Lite specs.

Why not Plotly like the other pages: the Data page is every session's first page, and Streamlit
loads a chart library's code only when a chart of that kind first appears. Plotly's is a 4.7 MB
script that a fresh browser needs 1-3 s to parse and run on this 2-core machine before anything
of the page shows (benchmarks/bench_app_start_split.py); Vega-Lite's is about 1 MB. The
information is the same as the Plotly preview's: the pointwise 5-95% and 25-75% envelopes and
median of all curves, a fixed random sample of curves over them, and the norms with tau marked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .plots import PREVIEW_CURVES, curve_subset

BAND_COLORS = {0.05: "#d9d9d9", 0.25: "#b3b3b3"}  # the Plotly preview's greys, as opaque layers
CURVE_COLOR = "#1f77b4"
MEDIAN_COLOR = "#555555"
TAU_COLOR = "#d62728"


def curves_preview_data(grid, curves, *, n_shown: int = PREVIEW_CURVES, seed: int = 0) -> pd.DataFrame:
    """Long table of what the preview draws, one row per point: ``series`` names the legend
    entry, ``kind`` is "band" (``lo`` .. ``hi``), "median" or "curve" (``y``; ``curve`` = its
    row in the data)."""
    grid, curves = np.asarray(grid, dtype=float), np.asarray(curves, dtype=float)
    n, m = curves.shape
    parts = []
    if n > n_shown:
        for lo, hi in ((0.05, 0.95), (0.25, 0.75)):
            lower, upper = np.quantile(curves, [lo, hi], axis=0)
            parts.append(pd.DataFrame({"t": grid, "lo": lower, "hi": upper, "kind": "band", "curve": -1,
                                       "series": f"pointwise {lo:.0%}-{hi:.0%} of all {n} curves"}))
        parts.append(pd.DataFrame({"t": grid, "y": np.median(curves, axis=0), "kind": "median", "curve": -1,
                                   "series": "pointwise median"}))
    rows = curve_subset(n, n_shown, seed)
    name = f"{rows.size} curves" + (" (random sample)" if rows.size < n else "")
    parts.append(pd.DataFrame({"t": np.tile(grid, rows.size), "y": curves[rows].ravel(), "kind": "curve",
                               "curve": np.repeat(rows, m), "series": name}))
    # Categorical labels: sent as Arrow dictionaries, not one string per point (half the bytes).
    return pd.concat(parts, ignore_index=True).astype({"kind": "category", "series": "category"})


def curves_preview_spec(data: pd.DataFrame, *, title: str, x_title: str, y_title: str) -> dict:
    """Layers over ``data`` (from curves_preview_data): bands, then the curves, then the median."""
    series = list(dict.fromkeys(data["series"]))
    palette = [BAND_COLORS[0.05], BAND_COLORS[0.25], MEDIAN_COLOR, CURVE_COLOR] if len(series) == 4 else [CURVE_COLOR]
    color = {"field": "series", "type": "nominal", "title": None, "sort": series,
             "scale": {"domain": series, "range": palette}, "legend": {"orient": "bottom", "columns": 2, "labelLimit": 0}}
    x = {"field": "t", "type": "quantitative", "title": x_title, "scale": {"zero": False, "nice": False}}
    y_scale = {"zero": False}
    return {
        "title": title, "height": 380,
        "layer": [
            {"transform": [{"filter": "datum.kind === 'band'"}], "mark": {"type": "area", "opacity": 1},
             "encoding": {"x": x, "y": {"field": "lo", "type": "quantitative", "title": y_title, "scale": y_scale},
                          "y2": {"field": "hi"}, "color": color}},
            {"transform": [{"filter": "datum.kind === 'curve'"}],
             "mark": {"type": "line", "strokeWidth": 1, "opacity": 0.45},
             "encoding": {"x": x, "y": {"field": "y", "type": "quantitative", "title": y_title, "scale": y_scale},
                          "detail": {"field": "curve", "type": "nominal"}, "color": color}},
            {"transform": [{"filter": "datum.kind === 'median'"}], "mark": {"type": "line", "strokeWidth": 1.5},
             "encoding": {"x": x, "y": {"field": "y", "type": "quantitative", "title": y_title, "scale": y_scale},
                          "color": color}},
        ],
    }


def norms_histogram_spec(norms, tau: float, *, title: str = "L2 norms of the curves") -> tuple[pd.DataFrame, dict]:
    """40 bins of the norms and a dashed rule at tau (the data and the spec)."""
    norms = np.asarray(norms, dtype=float)
    counts, edges = np.histogram(norms, bins=40)
    data = pd.DataFrame({"lo": edges[:-1], "hi": edges[1:], "curves": counts})
    x = {"field": "lo", "type": "quantitative", "title": "||X_i|| (L2 over [0, 1])", "scale": {"zero": False}}
    return data, {
        "title": title, "height": 280,
        "layer": [
            {"mark": {"type": "bar", "color": "#7f7f7f", "binSpacing": 1},
             "encoding": {"x": x, "x2": {"field": "hi"}, "y": {"field": "curves", "type": "quantitative"},
                          "y2": {"datum": 0}}},
            {"data": {"values": [{"tau": float(tau)}]},
             "mark": {"type": "rule", "color": TAU_COLOR, "strokeWidth": 2, "strokeDash": [6, 4]},
             "encoding": {"x": {"field": "tau", "type": "quantitative"}}},
            {"data": {"values": [{"tau": float(tau), "label": f"tau = {tau:.3g}"}]},
             "mark": {"type": "text", "align": "left", "baseline": "top", "dx": 4, "y": 4, "color": TAU_COLOR},
             "encoding": {"x": {"field": "tau", "type": "quantitative"}, "text": {"field": "label"}}},
        ],
    }
