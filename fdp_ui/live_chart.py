"""Charts that are redrawn in place: every chart of the app (a slider move redraws the Mean,
Principal components and Trade-offs pages' figures; one kind of chart means one plotly.js per tab).

Why not ``st.plotly_chart``: Streamlit 1.67 hashes the whole figure into the chart's element id,
so every slider move that changes a figure tears its chart down and builds a new one (a new
Plotly plot, the Streamlit theme merged into it again, the page around it laid out and painted
again). Measured in headless Chromium on the DTI data (benchmarks/bench_browser_latency.py),
that was 35-90 ms of the browser's main thread per chart per change. Here each chart is a
Streamlit component (``st.components.v2``) with a stable key: the same element receives the new
figure and hands it to ``Plotly.react``, which updates the plot it already has.

The figure travels exactly as ``st.plotly_chart`` would send it (``fig.to_json()``), so tests read
it back the same way (tests/chart_specs.py). plotly.js itself is the copy shipped inside the installed
plotly package, served by Streamlit from that package's folder (a static-files-only v1
component) and loaded once per browser tab; the app sends nothing anywhere else.

The look comes from ``TEMPLATE`` (Streamlit's font, palette and quiet grid on a transparent
background) since Streamlit's chart theme is applied only to its own charts.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v1 as components_v1

# plotly.js as shipped with the plotly package (the version its figures' JSON is written for).
_PLOTLY_FOLDER = str(Path(plotly.__file__).parent / "package_data")


def _serve_plotly_js() -> str:
    """Register the plotly package's folder with the running server (a static-files-only component)
    and return the component's name. Streamlit registers a component only when declared inside a
    script run, with the runtime of that run (each AppTest has its own), while this module is
    imported once per process: so every chart declares it again (idempotent, a few microseconds)."""
    return components_v1.declare_component("plotly_js", path=_PLOTLY_FOLDER).name


PLOTLY_JS_URL = f"component/{_serve_plotly_js()}/plotly.min.js"  # relative: works under a base URL path too

_TEXT, _MUTED, _GRID = "#31333F", "#808495", "#E6EAF1"
_AXIS = dict(gridcolor=_GRID, showline=False, zerolinecolor=_GRID, automargin=True, ticks="",
             tickfont=dict(color=_MUTED), title=dict(font=dict(color=_MUTED)))
TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family='"Source Sans", "Source Sans Pro", sans-serif', size=12, color=_TEXT),
    title=dict(font=dict(size=16, weight="bold"), x=0, xanchor="left", xref="paper"),
    paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
    colorway=["#0068C9", "#83C9FF", "#FF2B2B", "#FFABAB", "#29B09D", "#7DEFA1", "#FF8700", "#FFD16A",
              "#6D3FC0", "#D5DAE5"],
    xaxis=_AXIS, yaxis=_AXIS, legend=dict(bgcolor="rgba(0,0,0,0)"),
    hoverlabel=dict(font=dict(family='"Source Sans", sans-serif')),
))

# Runs in the page (no iframe) each time the element receives data. The plot div and the
# figure last drawn live on the component's own DOM node, so a rerun with an unchanged figure
# costs nothing and a changed one is one Plotly.react on the existing plot.
_JS = """
export default function (component) {
  const { data, parentElement } = component;
  const loadPlotly = () => window.__fdpPlotly || (window.__fdpPlotly = new Promise((resolve, reject) => {
    if (window.Plotly) return resolve(window.Plotly);
    const script = document.createElement("script");
    script.src = new URL(data.src, document.baseURI).href;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => { window.__fdpPlotly = null; reject(new Error("plotly.js did not load")); };
    document.head.appendChild(script);
  }));
  let plot = parentElement.querySelector(".fdp-live-chart");
  if (!plot) {
    plot = document.createElement("div");
    plot.className = "fdp-live-chart";
    plot.style.width = "100%";
    parentElement.appendChild(plot);
    // The column can change width without the window resizing (the sidebar opening): follow it.
    // Only while shown: a plot leaving the page (another page opened) is resized by nobody.
    new ResizeObserver(() => {
      if (window.Plotly && plot._fullLayout && plot.isConnected && plot.offsetParent !== null) {
        window.Plotly.Plots.resize(plot).catch(() => {});
      }
    }).observe(plot);
  }
  if (plot.__fdpSpec === data.spec) return;
  plot.__fdpSpec = data.spec;
  const figure = JSON.parse(data.spec);
  plot.style.height = ((figure.layout && figure.layout.height) || 450) + "px";
  // __fdpDrawn: the figure now on screen (the browser tests and benchmarks wait for it).
  loadPlotly().then((Plotly) => {
    if (plot.__fdpSpec !== data.spec) return;  // a newer figure arrived while plotly.js loaded
    return Plotly.react(plot, figure.data, figure.layout, {responsive: true, displaylogo: false})
      .then(() => { plot.__fdpDrawn = data.spec; });
  }).catch((error) => {
    plot.textContent = "The chart could not be drawn: " + error.message;
    plot.__fdpDrawn = data.spec;
  });
}
"""

_mount = st.components.v2.component("fdp_live_chart", js=_JS, isolate_styles=False)


def show(fig: go.Figure, *, key: str, where=None) -> None:
    """Draw ``fig`` under ``key`` in ``where`` (a column or container; the page by default).

    The key is what keeps the chart in place across reruns: one key per chart of a page."""
    fig.update_layout(template=TEMPLATE)
    _serve_plotly_js()
    with nullcontext() if where is None else where:
        _mount(key=key, data={"spec": fig.to_json(), "src": PLOTLY_JS_URL})

