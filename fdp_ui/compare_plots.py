"""Comparison of several mechanisms' sanitized draws as small multiples.

One overlay lets the widest mechanism (ICLP-AR's draws can span -8..6 where the others stay
within 0..1) set the y axis and flatten the rest. Here each mechanism gets its own panel;
the panels share one y range taken from the credible mechanisms (spread within a few times
the median spread), and a mechanism far wider than that gets its own scale, said in its
panel title.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import plots

COLUMNS = 3
WIDE_FACTOR = 4.0  # a mechanism whose 5-95% spread exceeds this times the median is "wide"


def _spread(draws: np.ndarray) -> tuple[float, float]:
    lo, hi = np.nanquantile(draws, [0.01, 0.99])
    return float(lo), float(hi)


def shared_range(draws_by_key: dict, extra=()) -> tuple[tuple[float, float], set]:
    """(y range shared by the credible panels, keys of the wide ones)."""
    spans = {k: _spread(d) for k, d in draws_by_key.items()}
    widths = {k: hi - lo for k, (lo, hi) in spans.items()}
    median = float(np.median(list(widths.values()))) if widths else 0.0
    wide = {k for k, w in widths.items() if median > 0 and w > WIDE_FACTOR * median}
    lows = [spans[k][0] for k in spans if k not in wide] + [float(np.nanmin(e)) for e in extra]
    highs = [spans[k][1] for k in spans if k not in wide] + [float(np.nanmax(e)) for e in extra]
    lo, hi = (min(lows), max(highs)) if lows else (0.0, 1.0)
    pad = 0.05 * (hi - lo if hi > lo else 1.0)
    return (lo - pad, hi + pad), wide


def small_multiples(grid, draws_by_key: dict, *, labels: dict, colors: dict, title: str, truth=None,
                    reference=None, reference_name: str = "") -> go.Figure:
    """One panel per key; ``truth`` (dotted) and ``reference`` (e.g. a shared estimate) in every panel."""
    keys = list(draws_by_key)
    rows = max(1, -(-len(keys) // COLUMNS))
    extra = [a for a in (truth, reference) if a is not None]
    y_range, wide = shared_range(draws_by_key, extra)
    titles = []
    for k in keys:
        short = labels[k].split(" (")[0]  # "ICLP-AR (absolute penalty, epsilon)" -> "ICLP-AR": panels are narrow
        if k in wide:
            lo, hi = _spread(draws_by_key[k])
            titles.append(f"{short}: own scale, {lo:.3g} to {hi:.3g}")
        else:
            titles.append(short)
    fig = make_subplots(rows=rows, cols=min(COLUMNS, len(keys)) or 1, subplot_titles=titles,
                        horizontal_spacing=0.06, vertical_spacing=0.16 if rows > 1 else 0.1)
    grid = np.asarray(grid)
    for i, k in enumerate(keys):
        row, col = divmod(i, COLUMNS)
        x, y = plots.stacked_curves(grid, np.asarray(draws_by_key[k]))
        trace = go.Scatter if plots.line_trace_type(x.size) == "scatter" else go.Scattergl
        fig.add_trace(trace(x=x, y=y, mode="lines", line=dict(width=1.1, color=colors[k]), opacity=0.6,
                            name=f"{labels[k]}: {len(draws_by_key[k])} draws", hoverinfo="skip"),
                      row=row + 1, col=col + 1)
        if truth is not None:
            fig.add_trace(go.Scatter(x=grid, y=truth, mode="lines", line=dict(color="#2ca02c", dash="dot", width=2),
                                     name="true mean (simulation)", showlegend=i == 0), row=row + 1, col=col + 1)
        if reference is not None:
            fig.add_trace(go.Scatter(x=grid, y=reference, mode="lines", line=dict(color=plots.ANALYST_COLOR,
                                     dash="dash", width=1.5), name=reference_name, showlegend=i == 0),
                          row=row + 1, col=col + 1)
        fig.update_yaxes(range=None if k in wide else list(y_range), row=row + 1, col=col + 1,
                         title_text=plots.value_title() if col == 0 else None)
        fig.update_xaxes(title_text=plots.t_title() if row == rows - 1 or i + COLUMNS >= len(keys) else None,
                         row=row + 1, col=col + 1)
    fig.update_annotations(font_size=13)
    fig.update_layout(title=title, height=300 * rows + 140, margin=dict(l=60, r=20, t=80, b=60),
                      legend=dict(orientation="h", yanchor="top", y=-0.12 if rows > 1 else -0.25))
    return fig
