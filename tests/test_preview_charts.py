"""The Data page's Vega-Lite charts (fdp_ui/preview_charts.py): valid Vega-Lite, the same
information as the Plotly preview they replace (envelopes and median of all curves, a fixed
sample drawn over them, the norms with tau marked), and a payload below 200 KB."""

import numpy as np
import pytest
from streamlit import dataframe_util

from fdp_ui import plots, preview_charts

alt = pytest.importorskip("altair")


def _valid(data, spec) -> None:
    from altair.utils.schemapi import validate_jsonschema  # lazy: only for the schema check

    values = data.head(3).astype(object).where(data.head(3).notna(), None).to_dict("records")
    validate_jsonschema({**spec, "data": {"values": values}}, alt.vegalite.v6.schema.core.load_schema())


def test_many_curves_are_summarised_by_envelopes_median_and_a_sample():
    rng = np.random.default_rng(1)
    grid = np.linspace(0, 1, 93)
    curves = rng.normal(size=(2000, 93)).cumsum(axis=1)
    data = preview_charts.curves_preview_data(grid, curves)
    assert len(dataframe_util.convert_pandas_df_to_arrow_bytes(data)) < 200 * 1024  # what the page sends
    series = list(dict.fromkeys(data["series"]))
    assert series == ["pointwise 5%-95% of all 2000 curves", "pointwise 25%-75% of all 2000 curves",
                      "pointwise median", f"{plots.PREVIEW_CURVES} curves (random sample)"]
    outer = data[data.series == series[0]]
    np.testing.assert_allclose(outer["lo"], np.quantile(curves, 0.05, axis=0))
    np.testing.assert_allclose(outer["hi"], np.quantile(curves, 0.95, axis=0))
    np.testing.assert_allclose(data[data.kind == "median"]["y"], np.median(curves, axis=0))
    shown = data[data.kind == "curve"]
    rows = plots.curve_subset(2000, plots.PREVIEW_CURVES, 0)
    assert sorted(set(shown["curve"])) == list(rows)  # the Plotly preview's sample (same seed)
    np.testing.assert_array_equal(shown["y"].to_numpy().reshape(len(rows), 93), curves[rows])
    spec = preview_charts.curves_preview_spec(data, title="All curves", x_title="day", y_title="temp")
    assert spec["layer"][0]["encoding"]["x"]["title"] == "day" and spec["layer"][0]["encoding"]["y"]["title"] == "temp"
    _valid(data, spec)


def test_few_curves_are_all_drawn():
    curves = np.arange(30.0).reshape(10, 3)
    data = preview_charts.curves_preview_data([0.0, 0.5, 1.0], curves)
    assert list(dict.fromkeys(data["series"])) == ["10 curves"] and set(data["kind"]) == {"curve"}
    np.testing.assert_array_equal(data["y"].to_numpy().reshape(10, 3), curves)
    _valid(data, preview_charts.curves_preview_spec(data, title="All curves", x_title="t", y_title="value"))


def test_norms_histogram_counts_every_curve_and_marks_tau():
    norms = np.random.default_rng(2).gamma(2.0, size=500)
    data, spec = preview_charts.norms_histogram_spec(norms, 3.25)
    assert data["curves"].sum() == 500 and len(data) == 40
    assert data["lo"].min() == norms.min() and data["hi"].max() == norms.max()
    assert spec["layer"][1]["data"]["values"] == [{"tau": 3.25}]
    assert spec["layer"][2]["data"]["values"][0]["label"] == "tau = 3.25"
    _valid(data, spec)
