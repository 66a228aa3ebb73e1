"""The Release page's export section: the bundle, the report and the analyst view of a committed release."""

from __future__ import annotations

import streamlit as st

from fdp_core.publish import export

from . import ledger as ledger_ui
from . import live_chart
from . import sparse_release

EXPORT_CACHE_KEY = "rel_export_cache"


def _downloads(release, led) -> None:
    cache = st.session_state.setdefault(EXPORT_CACHE_KEY, {})
    cache_key = (release.id, len(led.entries))
    if cache_key not in cache:
        cache.clear()
        cache[cache_key] = (export.export_zip(release, led), export.report_html(release, led))
    zip_bytes, report_text = cache[cache_key]
    d1, d2 = st.columns(2)
    d1.download_button("Download release bundle (zip)", data=zip_bytes, file_name=f"fdp_release_{release.id}.zip",
                       mime="application/zip", key="rel_download", icon=":material/download:", on_click="ignore")
    d1.caption("release.csv, coefficients.csv (the sampler's output on its 2^k grid), release.json (provenance), "
               "config.yaml (replay), ledger.json, report.html.")
    d2.download_button("Download the HTML report only", data=report_text, file_name=f"fdp_report_{release.id}.html",
                       mime="text/html", key="rel_download_report", on_click="ignore")
    d2.download_button("Download the analyst view (NOT for publication)", data=export.analyst_view_json(release),
                       file_name=f"analyst_view_{release.id}.json", mime="application/json",
                       key="rel_download_analyst", on_click="ignore")
    d2.caption("The analyst view holds counts and errors computed from the data without noise (clipped and dropped "
               "curves, bias against the raw mean, sampler diagnostics): for your own checks, never publish. It is "
               "not part of the zip bundle.")


def render(led) -> None:
    """Section 4 (below its header): choose a release committed in this session, download it, read it."""
    committed = ledger_ui.releases()
    if not committed:
        st.caption("Nothing committed in this browser session." + (
            f" The ledger holds {len(led.entries)} earlier release(s) of these data; their files were downloaded (or "
            "written by the command line) when they were committed." if led.entries else ""))
        return
    by_id = {r.id: r for r in committed}
    if st.session_state.get("rel_export_choice") not in by_id:
        st.session_state["rel_export_choice"] = committed[-1].id
    chosen_id = st.selectbox("release", list(by_id), key="rel_export_choice",
                             format_func=lambda i: f"{by_id[i].label} ({i})")
    release = by_id[chosen_id]
    led = sparse_release.ledger_of(release, led)  # a sparse mean spent the sparse data's budget
    _downloads(release, led)
    for flag in release.flags:
        st.error(f"{export.NOT_DP_WARNING}: {flag}")
    for paragraph in export.privacy_statement(release):
        st.markdown(paragraph)
    live_chart.show(export.release_figure(release), key="rel_release_figure")
    (st.success if release.tradeoff else st.info)(release.accuracy)
    f1, f2 = st.columns(2)
    if release.tradeoff:
        live_chart.show(export.tradeoff_figure(release), key="rel_tradeoff_figure", where=f1)
    live_chart.show(export.power_figure(release, led), key="rel_power_figure", where=f2)
    st.caption("Replay on a data file with the same settings and fresh noise: `python -m fdp_core replay "
               "config.yaml --data FILE [--out DIR]`. A replay is a new release with its own cost, charged to the "
               "same budget in the same ledger (FDP_LEDGER_URL, or --ledger URL).")
