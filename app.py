"""fdp: differentially private release of functional data (Streamlit entry point).

Run with ``streamlit run app.py``. Every page that uses the session's data draws the shared
sidebar itself (global privacy and smoothing settings, fdp_ui.sidebar), so each page also runs on
its own under AppTest; Combine sites reads only the sites' published files and draws only the
tutorial switch (fdp_ui.sidebar.render_without_settings).
This script runs before every page: it draws what all pages share above them (the step bar
of the guided flow and the page's tutorial), then the page.
"""

from fdp_core import threads

# One BLAS thread: the app's matrices are small (m <= a few hundred) and sessions run
# concurrently; measured on 2 cores, eigh at m = 500 takes 59 ms with one thread and
# 241 ms with two under load. Must be set before numpy is imported (the server has not
# loaded it when this script first runs; then no call needs threadpoolctl).
threads.start_single_blas()

from pathlib import Path  # noqa: E402

import streamlit as st  # noqa: E402

from fdp_ui import layout, navigation, state, steps, tcp_nodelay, tutorial  # noqa: E402

# Before anything is sent: Streamlit's server leaves Nagle's algorithm on, which held each
# response on a reused connection back by 40 ms (fdp_ui/tcp_nodelay.py).
tcp_nodelay.ensure()

# No page_icon and no page icons: a Material icon favicon is fetched from a font CDN, and the
# app makes no outside requests.
st.set_page_config(page_title="fdp: private functional data", layout="wide")

HERE = Path(__file__).resolve().parent
# (file, title): no page icons (see above). A third element, if present, is ignored.
PAGE_SPECS = [
    ("pages/data.py", "Data"),
    ("pages/mean.py", "Mean"),
    ("pages/density.py", "Density"),
    ("pages/components.py", "Principal components"),
    ("pages/covariance.py", "Covariance & regression"),
    ("pages/tradeoffs.py", "Trade-offs"),
    ("pages/plan.py", "Plan"),
    ("pages/release.py", "Release & audit"),
    ("pages/combine.py", "Combine sites"),
]
PATHS = {}  # url path -> file, so the step bar and the tutorial know the page
PAGES = []
for i, (path, title, *_ignored) in enumerate(PAGE_SPECS):
    if (HERE / path).exists():
        PAGES.append(st.Page(path, title=title, default=(i == 0)))
        PATHS[PAGES[-1].url_path] = path

page = st.navigation(PAGES)
navigation.mark_entered()
layout.wrap_labels()
tutorial.sync_with_url()
state.sync_data_with_url()
steps.render(PATHS[page.url_path])
tutorial.render(PATHS[page.url_path])
page.run()
