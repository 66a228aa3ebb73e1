"""The Data page's two charts (the curves preview and the L2 norms histogram), drawn on the server
as SVG pictures and shown with ``st.image``.

Why no chart library here: the Data page is every session's first page, and Streamlit loads a
chart library's script only when a chart of its kind first appears. Plotly's is 4.7 MB;
Vega-Lite's is 0.8 MB in about 25 files, and parsing and running it held a new session's first
page back by 0.6 s on this 2-core machine (benchmarks/bench_app_start.py, side by side: new
session median 2.3 s with the Vega-Lite preview, 1.7 s with these pictures). A preview needs no
zoom or hover; the analysis pages keep their interactive Plotly charts.

Why a picture (a data: URL in an <img>) and not SVG inside markdown: an image cannot run script
or touch the page, and markdown never parses the axis names the user typed.

What the preview shows is what the Plotly and Vega-Lite previews showed: with more than
``PREVIEW_CURVES`` curves, the pointwise 5-95% and 25-75% envelopes and the median of all of
them, under a fixed random sample of curves (the same sample as the other pages' figures);
otherwise every curve. The histogram shows 40 bins of the norms and tau as a dashed red rule.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

import numpy as np

from .plots import PREVIEW_CURVES, curve_subset

BAND_COLORS = {0.05: "#d9d9d9", 0.25: "#b3b3b3"}  # pointwise 5-95% and 25-75% envelopes
CURVE_COLOR = "#1f77b4"
MEDIAN_COLOR = "#555555"
TAU_COLOR = "#d62728"
BAR_COLOR = "#7f7f7f"
# Points per drawn line: a picture about 900 px wide shows no more, and 40 curves of 200 points
# keep the picture near 100 KB (issue 25: no figure above 200 KB), whatever the grid's size.
MAX_POINTS = 200
WIDTH = 900  # the curves preview spans the page; the histogram shares its row with text
HISTOGRAM_WIDTH = 600
FONT = 'font-family="sans-serif" font-size="13"'
# Characters XML 1.0 forbids (a control character in a typed axis name would break the picture).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value) -> str:
    """Text as SVG content: escaped, so a typed axis name cannot become markup."""
    return html.escape(_NOT_XML.sub("", str(value)), quote=True)


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """About ``count`` round tick values (steps of 1, 2 or 5 times a power of ten) in [lo, hi]."""
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return [lo]
    raw = span / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = power * next(f for limit, f in ((1.5, 1), (3, 2), (7, 5), (math.inf, 10)) if raw / power < limit)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
    return [0.0 if abs(t) < step * 1e-9 else t for t in ticks]  # no "-0"


def _tick_label(value: float) -> str:
    return f"{value:.6g}"


def _padded(lo: float, hi: float, pad: float = 0.0) -> tuple[float, float]:
    """A non-empty range around [lo, hi], widened by ``pad`` of its span on each side."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0, 1.0
    if hi <= lo:
        half = max(abs(lo) * 0.05, 0.5)
        return lo - half, hi + half
    span = hi - lo
    return lo - pad * span, hi + pad * span


@dataclass(frozen=True)
class _Frame:
    """A plot area of ``width`` x ``height`` pixels (top-left at left, top) showing
    [x0, x1] x [y0, y1]; SVG's y axis points down."""

    x0: float
    x1: float
    y0: float
    y1: float
    left: float = 70.0
    top: float = 40.0
    width: float = WIDTH - 90.0  # 20 px right of the plot
    height: float = 300.0

    def px(self, x):
        return self.left + (np.asarray(x, dtype=float) - self.x0) / (self.x1 - self.x0) * self.width

    def py(self, y):
        return self.top + (self.y1 - np.asarray(y, dtype=float)) / (self.y1 - self.y0) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height


def _path(xs, ys) -> str:
    """An SVG path through the points, broken where a value is missing."""
    parts, pen_down = [], False
    for x, y in zip(xs, ys):
        if not (math.isfinite(x) and math.isfinite(y)):
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{x:.1f} {y:.1f}")
        pen_down = True
    return "".join(parts)


def _axes(frame: _Frame, *, title: str, x_title: str, y_title: str, y_counts: bool = False) -> list[str]:
    """Title, a light grid at round values, tick labels and the axis titles (``y_counts``:
    whole numbers only on the y axis)."""
    out = [f'<text x="{frame.left:.0f}" y="22" font-weight="bold" font-size="15">{_text(title)}</text>']
    for t in nice_ticks(frame.x0, frame.x1):
        x = float(frame.px(t))
        out.append(f'<line x1="{x:.1f}" y1="{frame.top:.1f}" x2="{x:.1f}" y2="{frame.bottom:.1f}" stroke="#eeeeee"/>')
        out.append(f'<text x="{x:.1f}" y="{frame.bottom + 16:.1f}" text-anchor="middle">{_tick_label(t)}</text>')
    for t in nice_ticks(frame.y0, frame.y1):
        if y_counts and t != int(t):
            continue
        y = float(frame.py(t))
        out.append(f'<line x1="{frame.left:.1f}" y1="{y:.1f}" x2="{frame.left + frame.width:.1f}" y2="{y:.1f}" '
                   'stroke="#eeeeee"/>')
        out.append(f'<text x="{frame.left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">{_tick_label(t)}</text>')
    out.append(f'<rect x="{frame.left:.1f}" y="{frame.top:.1f}" width="{frame.width:.1f}" height="{frame.height:.1f}" '
               'fill="none" stroke="#888888"/>')
    out.append(f'<text x="{frame.left + frame.width / 2:.1f}" y="{frame.bottom + 36:.1f}" '
               f'text-anchor="middle">{_text(x_title)}</text>')
    mid = frame.top + frame.height / 2
    out.append(f'<text x="16" y="{mid:.1f}" text-anchor="middle" transform="rotate(-90 16 {mid:.1f})">'
               f'{_text(y_title)}</text>')
    return out


def _legend(entries: list[tuple[str, str, str]], top: float, left: float) -> tuple[list[str], float]:
    """Legend rows below the plot, two entries a row: (label, colour, "band" or "line").
    Returns the elements and the y just below them."""
    out, row_height, column = [], 20.0, (WIDTH - left) / 2
    for i, (label, color, kind) in enumerate(entries):
        x, y = left + (i % 2) * column, top + (i // 2) * row_height
        if kind == "band":
            out.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="18" height="10" fill="{color}"/>')
        else:
            out.append(f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 18:.1f}" y2="{y - 4:.1f}" stroke="{color}" '
                       'stroke-width="2"/>')
        out.append(f'<text x="{x + 24:.1f}" y="{y:.1f}">{_text(label)}</text>')
    return out, top + math.ceil(len(entries) / 2) * row_height


def _svg(height: float, body: list[str], label: str, width: float = WIDTH) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_text(label)}" {FONT}>'
            f'<rect width="100%" height="100%" fill="white"/>{"".join(body)}</svg>')


def drawn_points(m: int, limit: int = MAX_POINTS) -> np.ndarray:
    """Grid indices drawn: all of them, or ``limit`` evenly spread ones (both ends included)."""
    if m <= limit:
        return np.arange(m)
    return np.unique(np.linspace(0, m - 1, limit).round().astype(int))


def curves_preview_svg(grid, curves, *, title: str, x_title: str, y_title: str,
                       n_shown: int = PREVIEW_CURVES, seed: int = 0) -> str:
    """The preview as an SVG document: envelopes and median of all curves under a fixed sample of
    ``n_shown`` of them (every curve when there are no more than that)."""
    grid, curves = np.asarray(grid, dtype=float), np.asarray(curves, dtype=float)
    n, m = curves.shape
    rows = curve_subset(n, n_shown, seed)
    bands, median = [], None
    if n > n_shown:
        for lo, hi in ((0.05, 0.95), (0.25, 0.75)):
            lower, upper = np.nanquantile(curves, [lo, hi], axis=0)
            bands.append((f"pointwise {lo:.0%}-{hi:.0%} of all {n} curves", BAND_COLORS[lo], lower, upper))
        median = np.nanmedian(curves, axis=0)
    drawn = [curves[rows]] + [b[2] for b in bands] + [b[3] for b in bands]
    values = np.concatenate([np.ravel(d) for d in drawn])
    values = values[np.isfinite(values)]
    y0, y1 = _padded(*(values.min(), values.max()) if values.size else (0.0, 1.0), pad=0.03)
    frame = _Frame(*_padded(grid.min(), grid.max()), y0, y1)
    keep = drawn_points(m)
    xs = frame.px(grid[keep])

    body = [f'<clipPath id="plot"><rect x="{frame.left}" y="{frame.top}" width="{frame.width}" '
            f'height="{frame.height}"/></clipPath>']
    body += _axes(frame, title=title, x_title=x_title, y_title=y_title)
    marks = []
    for _, color, lower, upper in bands:
        ring = _path(np.concatenate([xs, xs[::-1]]),
                     np.concatenate([frame.py(upper[keep]), frame.py(lower[keep])[::-1]]))
        marks.append(f'<path d="{ring}Z" fill="{color}"/>')
    lines = "".join(f'<path d="{_path(xs, frame.py(row[keep]))}"/>' for row in curves[rows])
    marks.append(f'<g fill="none" stroke="{CURVE_COLOR}" stroke-width="1" stroke-opacity="0.45">{lines}</g>')
    if median is not None:
        marks.append(f'<path d="{_path(xs, frame.py(median[keep]))}" fill="none" stroke="{MEDIAN_COLOR}" '
                     'stroke-width="1.5"/>')
    body.append(f'<g clip-path="url(#plot)">{"".join(marks)}</g>')

    sample = f"{rows.size} curves" + (" (random sample)" if rows.size < n else "")
    entries = [(label, color, "band") for label, color, _, _ in bands]
    entries += ([("pointwise median", MEDIAN_COLOR, "line")] if median is not None else [])
    entries.append((sample, CURVE_COLOR, "line"))
    legend, bottom = _legend(entries, frame.bottom + 62, frame.left)
    return _svg(bottom + 8, body + legend, title)


def norms_histogram_svg(norms, tau: float, *, title: str = "L2 norms of the curves") -> str:
    """40 bins of the norms and a dashed rule at tau (the x range always includes tau)."""
    norms = np.asarray(norms, dtype=float)
    norms = norms[np.isfinite(norms)]
    counts, edges = np.histogram(norms, bins=40) if norms.size else (np.zeros(40, int), np.linspace(0, 1, 41))
    x0, x1 = _padded(min(edges[0], tau), max(edges[-1], tau), pad=0.02)
    frame = _Frame(x0, x1, 0.0, max(int(counts.max()), 1) * 1.08, width=HISTOGRAM_WIDTH - 90.0, height=240.0)
    body = _axes(frame, title=title, x_title="||X_i|| (L2 over [0, 1])", y_title="curves", y_counts=True)
    base = frame.bottom
    bars = []
    for count, lo, hi in zip(counts, edges[:-1], edges[1:]):
        if count:
            left, right, top = float(frame.px(lo)), float(frame.px(hi)), float(frame.py(count))
            bars.append(f'<rect x="{left + 0.5:.1f}" y="{top:.1f}" width="{max(right - left - 1, 0.5):.1f}" '
                        f'height="{base - top:.1f}"/>')
    body.append(f'<g fill="{BAR_COLOR}">{"".join(bars)}</g>')
    x_tau = float(frame.px(tau))
    body.append(f'<line x1="{x_tau:.1f}" y1="{frame.top:.1f}" x2="{x_tau:.1f}" y2="{base:.1f}" stroke="{TAU_COLOR}" '
                'stroke-width="2" stroke-dasharray="6 4"/>')
    right_side = x_tau > frame.left + frame.width * 0.8  # the label goes left of a rule near the right edge
    body.append(f'<text x="{x_tau + (-4 if right_side else 4):.1f}" y="{frame.top + 14:.1f}" fill="{TAU_COLOR}" '
                f'text-anchor="{"end" if right_side else "start"}">{_text(f"tau = {tau:.3g}")}</text>')
    return _svg(frame.bottom + 48, body, title, width=HISTOGRAM_WIDTH)
