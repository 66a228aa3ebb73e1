"""The Data page's view of the loaded curves: size, grid, what the loader did, every curve
(or a sample over the quantile envelopes), and the L2 norms the clip at tau sees (analyst view)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from fdp_core.data.loading import l2_norms
from fdp_core.data.meta_columns import column_values, metadata_view
from fdp_core.data.preprocess import PublicBounds, range_clipped_centred
from fdp_core.publish.views import NONPRIVATE_VIEWS

from . import intake_panel, plots, preview_charts, state


def _loader_notes(ds) -> None:
    report = ds.fd.report
    notes = [f"read {report.n_read} curves"]
    if report.n_missing_cells:
        notes.append(f"{report.n_missing_cells} missing cells")
    notes.extend(report.messages)
    if report.dropped_rows:
        shown = ", ".join(map(str, report.dropped_rows[:20]))
        notes.append(f"dropped data rows: {shown}{' ...' if len(report.dropped_rows) > 20 else ''}")
    st.info("; ".join(notes))
    for flag in ds.flags:
        st.warning(flag)


def _norms(fd, settings) -> None:
    # The norms the L2 clip sees: after the range clip and centring (uncentred norms when no range is declared).
    centred, _, _ = range_clipped_centred(fd, PublicBounds(**settings.bounds))
    norms = l2_norms(centred, fd.weights)
    left, right = st.columns([3, 2])
    left.image(preview_charts.norms_histogram_svg(norms, settings.tau), width="stretch")
    with right:
        st.markdown(f"**Clipping at tau = {settings.tau:.4g}**: {settings.n_clipped} of {fd.n} curves have a larger "
                    f"L2 norm (after the range clip and centring) and are shrunk onto the ball before any estimate "
                    "is computed.")
        st.markdown(f"Norms range from {norms.min():.4g} to {norms.max():.4g} (analyst view).")
        if settings.tau_from_data:
            st.error("tau is data-dependent: nothing released with it is differentially private.")
        metadata = metadata_view(fd)  # the loader's columns as read: no DataFrame (nor pandas) for a list
        if len(metadata.columns):
            # A list, not st.dataframe: the data grid's 0.6 MB of script would delay a session's first page.
            # Names in bold, not as code: a code span makes every new session fetch a monospace font (90 kB).
            st.markdown("**Metadata columns** (usable as features on the density page)\n\n"
                        + "\n".join(f"- **{_escaped(name)}** ({_kind(metadata, name)})" for name in metadata.columns))


def _escaped(text) -> str:
    """A column name as literal markdown text (its * _ ` [ ] < > # | ~ $ \\ shown as written)."""
    return "".join("\\" + c if c in "\\`*_[]<>#|~$" else c for c in str(text))


def _kind(metadata, name) -> str:
    """'numbers' when every present cell of the column is a number, else 'text'."""
    cells = [v for v in column_values(metadata, name).tolist() if not (v is None or (isinstance(v, float) and v != v))]
    numbers = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                  for v in cells)
    return "numbers" if cells and numbers else "text"


def _preview_svg(fd, **labels) -> str:
    """The curves preview, drawn once per content and labels for all sessions: every new session
    opens on the built-in example, and drawing it (quantile envelopes, SVG text) was a fifth of a
    new session's Data page. Keyed by a hash of the data themselves (hashed once per session and
    data set), never by a name, so no session is shown another data set's curves."""
    digest = state.remembered("preview_digest", fd, None, lambda: state.curves_digest(fd))
    return _cached_preview(digest, tuple(sorted(labels.items())), fd.grid_points, fd.data_matrix)


@st.cache_data(show_spinner=False, max_entries=16)
def _cached_preview(digest: str, labels: tuple, _grid, _curves) -> str:
    return preview_charts.curves_preview_svg(_grid, _curves, **dict(labels))


def render(ds, settings, refused: bool) -> None:
    """After a refused upload the data set still loaded is shown folded away, so it cannot be
    mistaken for the upload's result."""
    fd = ds.fd
    with st.expander(f"Still loaded: {ds.label} (not the refused file)") if refused else st.container():
        st.subheader(("Still loaded: " if refused else "") + ds.label)
        intake_panel.render_axis_labels()
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("curves n", fd.n)
        c2.metric("grid points m", fd.m)
        c3.metric("domain", f"[{fd.domain[0]:g}, {fd.domain[1]:g}]")
        gaps = np.diff(fd.grid_points)
        c4.metric("grid", "even" if np.allclose(gaps, gaps[0], rtol=1e-4) else "uneven",
                  help="Uneven grids use trapezoid quadrature weights in every L2 inner product.")
        _loader_notes(ds)
        summary_note = ("" if fd.n <= plots.PREVIEW_CURVES else
                        f" (a fixed random sample of {plots.PREVIEW_CURVES} over the quantile envelopes of all "
                        f"{fd.n})")
        # A picture drawn here, not a chart library's figure: the first page of a session then
        # does not wait for Plotly's or Vega-Lite's script (fdp_ui/preview_charts.py).
        st.image(_preview_svg(fd, title=f"All curves{summary_note}", x_title=plots.t_title(),
                              y_title=plots.value_title()), width="stretch")
        state.note_view(NONPRIVATE_VIEWS["curves"])
        _norms(fd, settings)
