"""The trade-off figures (CLI report and Trade-offs page): what each curve draws and where."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fdp_core.explore.sweeps import TradeoffCurve, VarianceRatioCurve
from fdp_core.explore.tradeoff_figures import pcv_figure, tradeoff_figure, variance_ratio_figure
from plotly_json import plotly_array

VALUES = np.array([0.1, 1.0, 10.0])


def _curve(mechanism, param="epsilon", *, bands=True, truth=False, invalid=None, errors=(1.0, 0.1, 0.01)):
    errors = np.asarray(errors, dtype=float)
    return TradeoffCurve(mechanism, param, VALUES, errors, (0.1, 0.9) if bands else (),
                         np.vstack([errors / 2, errors * 2]) if bands else None,
                         errors + 0.5 if truth else None, None, current=1.0, current_error=errors[1],
                         invalid=invalid)


def test_tradeoff_figure_draws_line_band_truth_and_current_per_valid_curve():
    curves = [_curve("gaussian", truth=True), _curve("frl", bands=False), _curve("bernstein", invalid="no lo/hi")]
    figure = tradeoff_figure(curves, labels={"gaussian": "Gaussian"})
    by_group = {}
    for trace in figure.data:
        by_group.setdefault(trace.legendgroup, []).append(trace)
    assert set(by_group) == {"gaussian", "frl"}  # the invalid curve draws nothing
    band, line, truth, star = by_group["gaussian"]
    assert band.fill == "toself"
    # A distance in the curves' units (quantiles of squared norms -> of norms): high, then low reversed.
    np.testing.assert_allclose(plotly_array(band.y), np.sqrt([2.0, 0.2, 0.02, 0.005, 0.05, 0.5]))
    np.testing.assert_allclose(plotly_array(line.y), np.sqrt([1.0, 0.1, 0.01]))
    assert "units of the curves" in figure.layout.yaxis.title.text
    squared = tradeoff_figure(curves, labels={"gaussian": "Gaussian"}, squared=True)
    np.testing.assert_allclose(plotly_array(squared.data[1].y), [1.0, 0.1, 0.01])  # the formulas' squared figure
    assert "squared units" in squared.layout.yaxis.title.text
    assert line.name == "Gaussian" and truth.line.dash == "dash" and star.marker.symbol == "star"
    assert [t.name for t in by_group["frl"]] == ["frl", "frl: current setting"]  # no band, no truth
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"


def test_tradeoff_figure_axes_and_zero_errors():
    (eta,) = tradeoff_figure([_curve("gaussian", "eta", bands=False, errors=(0.0, 1.0, 2.0))]).data[:1]
    assert np.isnan(plotly_array(eta.y)[0])  # a log axis cannot show a zero error
    assert tradeoff_figure([_curve("gaussian", "eta")]).layout.xaxis.type == "linear"


def test_variance_ratio_figure_skips_invalid_k_and_marks_epsilon():
    eps = np.array([0.1, 1.0])
    ok = VarianceRatioCurve(1, eps, np.array([0.3, 0.9]), (0.1, 0.9), np.array([[0.2, 0.8], [0.4, 1.0]]), 20,
                            "exact", p=5)
    bad = VarianceRatioCurve(4, eps, np.full(2, np.nan), (0.1, 0.9), np.full((2, 2), np.nan), 20, "deflation",
                             invalid="p > k")
    figure = variance_ratio_figure([ok, bad], current_epsilon=1.0)
    assert [t.legendgroup for t in figure.data] == ["1", "1"]
    assert figure.data[1].name == "k = 1 (exact)"
    assert any("current epsilon" in a.text for a in figure.layout.annotations)
    with pytest.raises(StopIteration):
        next(a for a in variance_ratio_figure([ok]).layout.annotations)


def _validated_json(figure) -> dict:
    """The figure through plotly's validation (every property checked and coerced), as JSON."""
    import plotly.graph_objects as go

    return json.loads(go.Figure(figure.to_dict()).to_json())


@pytest.mark.parametrize("squared", [False, True])
@pytest.mark.parametrize("param", ["epsilon", "eta"])
def test_tradeoff_figure_is_the_validated_figure(squared, param):
    # Built without plotly's validation (it ran on every rerun of the Trade-offs page): validating
    # it must change nothing, with bands, truth lines, stars, an invalid curve and a zero error.
    curves = [_curve("gaussian", param, truth=True), _curve("frl", param, bands=False, errors=(0.0, 1.0, 2.0)),
              _curve("bernstein", param, invalid="no lo/hi")]
    figure = tradeoff_figure(curves, labels={"gaussian": "Gaussian"}, squared=squared)
    assert json.loads(figure.to_json()) == _validated_json(figure)


def test_pcv_figure_is_the_validated_figure():
    rng = np.random.default_rng(3)
    marks = [("optimum", 1e-3, 0.1, "x", "#d62728"), ("current", 1e-2, 0.3, "star", "white")]
    figure = pcv_figure(np.logspace(-8, 1, 4), np.logspace(-2.5, 0.3, 5), rng.uniform(1, 2, (5, 4)),
                        penalty_name="phi", marks=marks, title="PCV")
    assert json.loads(figure.to_json()) == _validated_json(figure)
    assert [t.type for t in figure.data] == ["heatmap", "scatter", "scatter"]
