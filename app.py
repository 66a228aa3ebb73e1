"""fdp: differentially private release of functional data (Streamlit entry point).

Run with ``streamlit run app.py``. Every page draws the shared sidebar itself (global privacy
and smoothing settings, fdp_ui.sidebar), so each page also runs on its own under AppTest.
"""

import os

# One BLAS thread: the app's matrices are small (m <= a few hundred) and sessions run
# concurrently; measured on 2 cores, eigh at m = 500 takes 59 ms with one thread and
# 241 ms with two under load. Must be set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import streamlit as st  # noqa: E402

# No page_icon: a Material icon favicon is fetched from a font CDN, and the app makes no outside requests.
st.set_page_config(page_title="fdp: private functional data", layout="wide")

HERE = Path(__file__).resolve().parent
PAGE_SPECS = [
    ("pages/data.py", "Data", ":material/table_chart:"),
    ("pages/mean.py", "Mean", ":material/show_chart:"),
    ("pages/density.py", "Density", ":material/area_chart:"),
    ("pages/components.py", "Principal components", ":material/stacked_line_chart:"),
    ("pages/covariance.py", "Covariance & regression", ":material/grid_on:"),
    ("pages/tradeoffs.py", "Trade-offs", ":material/tune:"),
    ("pages/release.py", "Release & audit", ":material/verified_user:"),
]
PAGES = [st.Page(path, title=title, icon=icon, default=(i == 0))
         for i, (path, title, icon) in enumerate(PAGE_SPECS) if (HERE / path).exists()]

st.navigation(PAGES).run()
