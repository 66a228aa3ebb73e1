"""fdp_ui/covariance_plots.py writes the Covariance & regression page's figures as plain specs without
plotly's validation (issue 40): each must be the figure the validated builders gave, and a valid one."""

import base64

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from fdp_ui import covariance_plots, plots
from fdp_ui.plots import ANALYST_COLOR, ANALYST_LABEL, PRIVATE_COLOR


def _plain(value):
    """A figure dict with every array as a list of floats (the two builders encode arrays differently)."""
    if isinstance(value, dict) and "bdata" in value:  # plotly's typed-array encoding of a numpy array
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        if isinstance(shape, str):
            shape = tuple(int(v) for v in shape.split(","))
        return _plain(array if shape is None else array.reshape(shape))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "template"}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return round(float(value), 5)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _same(fast: go.Figure, slow: go.Figure) -> None:
    assert _plain(fast.to_dict()) == _plain(slow.to_dict())
    go.Figure(fast.to_dict())  # validates every property


GRID = np.linspace(0, 1, 12)
RNG = np.random.default_rng(0)


def test_surfaces_figure_equals_make_subplots():
    surfaces = [RNG.normal(size=(12, 12)), RNG.normal(size=(12, 12))]
    slow = make_subplots(rows=1, cols=2, subplot_titles=("non-private (analyst view: do not publish)",
                                                         "private release C~"))
    for col, surface in enumerate(surfaces, start=1):
        slow.add_trace(go.Heatmap(x=GRID, y=GRID, z=surface.astype(np.float32), zmin=-2.0, zmax=2.0,
                                  colorscale="RdBu_r", showscale=col == 2), row=1, col=col)
    slow.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10))
    for col in (1, 2):
        slow.update_xaxes(title_text="t (t)", row=1, col=col)
        slow.update_yaxes(title_text="s (t)" if col == 1 else None, row=1, col=col)
    slow.update_traces(colorbar=dict(title="C(s, t)"), selector=dict(type="heatmap"))
    _same(covariance_plots.surfaces_figure(GRID, surfaces, 2.0), slow)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("with_em", [True, False])
def test_components_figure_equals_make_subplots(k, with_em):
    cov, em, ref = (RNG.normal(size=(12, 3)) for _ in range(3))
    routes = (("eigenfunction of C~", cov, PRIVATE_COLOR, None), ("exponential mechanism", em if with_em else None,
                                                                  "#2ca02c", None), (ANALYST_LABEL, ref, ANALYST_COLOR, "dash"))
    slow = make_subplots(rows=1, cols=k, subplot_titles=[f"component {j + 1}" for j in range(k)])
    for j in range(k):
        for name, functions, color, dash in routes:
            if functions is None:
                continue
            f = functions[:, j] * (1.0 if functions[:, j] @ ref[:, j] >= 0 else -1.0)
            slow.add_trace(go.Scatter(x=GRID.tolist(), y=f.tolist(), mode="lines", name=name, showlegend=j == 0,
                                      line=dict(color=color, dash=dash)), row=1, col=j + 1)
    slow.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10))
    _same(covariance_plots.components_figure(GRID, k, routes), slow)


@pytest.mark.parametrize("q", [1, 2])
def test_regression_figure_equals_make_subplots(q):
    labels = [f"x{j}" for j in range(q)]
    band = {"lower": RNG.normal(size=(q, 12)) - 1, "upper": RNG.normal(size=(q, 12)) + 1}
    beta, ols = RNG.normal(size=(q, 12)), RNG.normal(size=(q, 12))
    slow = make_subplots(rows=1, cols=q, subplot_titles=[f"beta: {label}" for label in labels])
    for j in range(q):
        sub = go.Figure()
        plots.add_band(sub, GRID, band["lower"][j], band["upper"][j], name="95% noise band (analyst view)")
        plots.add_line(sub, GRID, beta[j], name="private beta~", color=PRIVATE_COLOR)
        plots.add_line(sub, GRID, ols[j], name="OLS, " + ANALYST_LABEL, color=ANALYST_COLOR, dash="dash")
        for trace in sub.data:
            trace.showlegend = j == 0
            slow.add_trace(trace, row=1, col=j + 1)
    slow.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10))
    _same(covariance_plots.regression_figure(GRID, labels, band, beta, ols), slow)
