"""plots.release_figure is written as a plain spec without plotly's validation (it ran on every
rerun of the Mean page): it must be the figure the validated builders give, and a valid one."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from fdp_ui import plots


def _validated(grid, draws, estimate, *, title, style, truth):
    """The figure as the validated helpers build it (what release_figure did before)."""
    fig = go.Figure()
    if style == "band":
        lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
        plots.add_band(fig, grid, lo, hi, name=f"sanitized mean: pointwise 5-95% of {len(draws)} draws")
        plots.add_line(fig, grid, draws[0], name="sanitized mean (one draw)", color=plots.PRIVATE_COLOR, width=1.5)
    else:
        plots.add_curves(fig, grid, draws, name=f"sanitized mean: {len(draws)} draws", color=plots.PRIVATE_COLOR,
                         opacity=0.45)
    if truth is not None:
        plots.add_line(fig, grid, truth, name="true mean (simulation)", color="#2ca02c", dash="dot")
    if estimate is not None:
        plots.add_line(fig, grid, estimate, name=plots.ANALYST_LABEL, color=plots.ANALYST_COLOR, dash="dash")
    fig.update_layout(title=title, xaxis_title="t", yaxis_title="value", height=460,
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", yanchor="bottom", y=-0.35))
    return fig


@pytest.mark.parametrize("style", ["draws", "band"])
@pytest.mark.parametrize("with_truth", [False, True])
def test_release_figure_equals_the_validated_figure(style, with_truth):
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 31)
    draws, estimate = rng.normal(size=(20, 31)), rng.normal(size=31)
    truth = np.sin(grid) if with_truth else None
    fast = plots.release_figure(grid, draws, estimate, title="x", style=style, truth=truth)
    slow = _validated(grid, draws, estimate, title="x", style=style, truth=truth)
    assert json.loads(fast.to_json()) == json.loads(slow.to_json())
    go.Figure(fast.to_dict())  # validates every property


def test_few_curves_are_svg_many_are_webgl():
    grid = np.linspace(0, 1, 100)
    few, many = go.Figure(), go.Figure()
    plots.add_curves(few, grid, np.zeros((20, 100)), name="few", color="red")
    plots.add_curves(many, grid, np.zeros((400, 100)), name="many", color="red")
    assert few.data[0].type == "scatter" and many.data[0].type == "scattergl"
