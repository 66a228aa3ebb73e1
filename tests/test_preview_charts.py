"""The Data page's pictures (fdp_ui/preview_charts.py): well-formed SVG, the same information as
the chart-library previews they replace (envelopes and median of all curves, a fixed sample drawn
over them, the norms with tau marked), drawn where the data say (read back from the pixels), a
picture below 200 KB, and typed axis names that stay text."""

import base64
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from fdp_ui import plots, preview_charts

NS = {"s": "http://www.w3.org/2000/svg"}


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on anything that is not well-formed XML


def _texts(root) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter("{%s}text" % NS["s"])]


def _points(d: str) -> np.ndarray:
    """(x, y) pixel pairs of an SVG path written by the module (M/L commands only)."""
    return np.array([[float(x), float(y)] for x, y in re.findall(r"[ML]([-\d.]+) ([-\d.]+)", d)])


def _plot_area(root) -> tuple[float, float, float, float]:
    """(x, y, width, height) of the plot area: the grey frame every chart draws around it."""
    frame = [r for r in root.findall("s:rect", NS) if r.get("stroke") == "#888888"][0]
    return tuple(float(frame.get(k)) for k in ("x", "y", "width", "height"))


def _y_ticks(root, area) -> dict[float, float]:
    """Pixel row -> value of the y tick labels (right-aligned, left of the plot area)."""
    left = area[0]
    return {float(t.get("y")) - 4: float(t.text) for t in root.iter("{%s}text" % NS["s"])
            if t.get("text-anchor") == "end" and float(t.get("x")) == left - 6}


def _to_values(pixels_y, ticks: dict[float, float]) -> np.ndarray:
    """Invert the y scale from two tick labels (independent of the module's own scale)."""
    (p0, v0), (p1, v1) = sorted(ticks.items())[0], sorted(ticks.items())[-1]
    return v0 + (np.asarray(pixels_y) - p0) * (v1 - v0) / (p1 - p0)


def test_many_curves_are_summarised_by_envelopes_median_and_a_sample():
    rng = np.random.default_rng(1)
    grid = np.linspace(0, 1, 93)
    curves = rng.normal(size=(2000, 93)).cumsum(axis=1)
    svg = preview_charts.curves_preview_svg(grid, curves, title="All curves", x_title="day", y_title="temp")
    root = _tree(svg)
    texts = _texts(root)
    assert texts[0] == "All curves" and "day" in texts and "temp" in texts
    assert texts[-4:] == ["pointwise 5%-95% of all 2000 curves", "pointwise 25%-75% of all 2000 curves",
                          "pointwise median", f"{plots.PREVIEW_CURVES} curves (random sample)"]
    marks = root.find("s:g[@clip-path]", NS)
    bands = marks.findall("s:path", NS)[:2]
    curve_paths = marks.find("s:g", NS).findall("s:path", NS)
    median = marks.findall("s:path", NS)[2]
    assert len(curve_paths) == plots.PREVIEW_CURVES
    ticks = _y_ticks(root, _plot_area(root))
    assert len(ticks) >= 3
    rows = plots.curve_subset(2000, plots.PREVIEW_CURVES, 0)  # the Plotly figures' sample (same seed)
    # Pixels are written to 0.1 px: read back, every drawn value is within a pixel's worth of the data.
    per_pixel = abs(np.diff(sorted(ticks.values()))[0] / np.diff(sorted(ticks))[0])
    for path, row in zip(curve_paths, rows):
        np.testing.assert_allclose(_to_values(_points(path.get("d"))[:, 1], ticks), curves[row], atol=per_pixel)
    np.testing.assert_allclose(_to_values(_points(median.get("d"))[:, 1], ticks), np.median(curves, axis=0),
                               atol=per_pixel)
    outer = _to_values(_points(bands[0].get("d"))[:, 1], ticks)  # upper edge left to right, lower back
    np.testing.assert_allclose(outer[:93], np.quantile(curves, 0.95, axis=0), atol=per_pixel)
    np.testing.assert_allclose(outer[93:][::-1], np.quantile(curves, 0.05, axis=0), atol=per_pixel)


def test_few_curves_are_all_drawn_without_envelopes():
    curves = np.arange(30.0).reshape(10, 3)
    root = _tree(preview_charts.curves_preview_svg([0.0, 0.5, 1.0], curves, title="All curves", x_title="t",
                                                   y_title="value"))
    assert _texts(root)[-1] == "10 curves" and not any("pointwise" in t for t in _texts(root))
    marks = root.find("s:g[@clip-path]", NS)
    assert len(marks.find("s:g", NS).findall("s:path", NS)) == 10 and not marks.findall("s:path", NS)


def test_a_fine_grid_is_thinned_and_the_picture_stays_small():
    rng = np.random.default_rng(3)
    curves = rng.normal(size=(5000, 2000)).cumsum(axis=1)
    svg = preview_charts.curves_preview_svg(np.linspace(0, 1, 2000), curves, title="All curves", x_title="t",
                                            y_title="value")
    data_url = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
    assert len(data_url) < 200 * 1024  # what the page sends (issue 25: no figure above 200 KB)
    path = _tree(svg).find("s:g[@clip-path]/s:g/s:path", NS)
    assert len(_points(path.get("d"))) == preview_charts.MAX_POINTS
    assert list(preview_charts.drawn_points(2000)[[0, -1]]) == [0, 1999]


@pytest.mark.parametrize("name", ['</text><script>alert(1)</script>', 'a & b < c "q" \x07bell', "*x* $y$ _z_"])
def test_typed_axis_names_stay_text(name):
    root = _tree(preview_charts.curves_preview_svg([0, 1], [[0.0, 1.0], [1.0, 2.0]], title=name, x_title=name,
                                                   y_title="v"))
    assert not root.findall(".//s:script", NS)
    assert _texts(root).count(name.replace("\x07", "")) == 2  # title and x axis, verbatim


def test_constant_and_gappy_curves_still_draw():
    root = _tree(preview_charts.curves_preview_svg([0, 1, 2], [[5.0, 5.0, 5.0]], title="t", x_title="t", y_title="v"))
    assert len(_points(root.find("s:g[@clip-path]/s:g/s:path", NS).get("d"))) == 3
    gappy = np.array([[0.0, np.nan, 2.0, 3.0]])
    d = _tree(preview_charts.curves_preview_svg([0, 1, 2, 3], gappy, title="t", x_title="t", y_title="v")).find(
        "s:g[@clip-path]/s:g/s:path", NS).get("d")
    assert d.count("M") == 2 and len(_points(d)) == 3  # the line breaks at the missing value


def _bars_and_rule(svg: str):
    root = _tree(svg)
    area = _plot_area(root)
    bars = root.findall("s:g/s:rect", NS)
    rule = [ln for ln in root.findall("s:line", NS) if ln.get("stroke") == preview_charts.TAU_COLOR][0]
    return root, area, bars, rule


def test_norms_histogram_counts_every_curve_and_marks_tau():
    norms = np.random.default_rng(2).gamma(2.0, size=500)
    root, area, bars, rule = _bars_and_rule(preview_charts.norms_histogram_svg(norms, 3.25))
    ticks = _y_ticks(root, area)
    heights = _to_values([float(b.get("y")) for b in bars], ticks)
    counts, _ = np.histogram(norms, bins=40)
    np.testing.assert_allclose(heights, counts[counts > 0], atol=0.05)
    assert round(heights.sum()) == 500
    assert all(v == int(v) for v in ticks.values())  # counts: whole-number ticks
    assert "tau = 3.25" in _texts(root)
    x_ticks = {float(t.get("x")): float(t.text) for t in root.iter("{%s}text" % NS["s"])
               if t.get("text-anchor") == "middle" and t.text and re.fullmatch(r"[-\d.e+]+", t.text)}
    (p0, v0), (p1, v1) = sorted(x_ticks.items())[0], sorted(x_ticks.items())[-1]
    assert v0 + (float(rule.get("x1")) - p0) * (v1 - v0) / (p1 - p0) == pytest.approx(3.25, abs=0.02)


def test_tau_outside_the_norms_is_still_on_the_chart():
    root, area, bars, rule = _bars_and_rule(preview_charts.norms_histogram_svg([1.0, 1.1, 1.2], 10.0))
    assert area[0] <= float(rule.get("x1")) <= area[0] + area[2]
    assert len(bars) == 3


@pytest.mark.parametrize("lo, hi", [(0.1, 1.25), (-3.0, 7.0), (1e-5, 3e-5), (1e6, 1.7e6), (-0.3, 0.3)])
def test_ticks_are_round_and_inside_the_range(lo, hi):
    ticks = preview_charts.nice_ticks(lo, hi)
    assert 3 <= len(ticks) <= 11 and lo - 1e-12 <= ticks[0] and ticks[-1] <= hi + 1e-12 * abs(hi)
    steps = np.diff(ticks)
    np.testing.assert_allclose(steps, steps[0], rtol=1e-6)
    mantissa = steps[0] / 10 ** np.floor(np.log10(steps[0]))
    assert min(abs(mantissa - f) for f in (1, 2, 5)) < 1e-6
