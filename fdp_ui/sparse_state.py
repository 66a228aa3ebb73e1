"""Whether sparse curves are in use, and the session keys of their public domain.

Split from fdp_ui/sparse_view.py so that the pages and the sidebar can ask "are sparse data in
use?" on every run without importing the sparse release, its smoother, its verdict and Plotly:
the Data page of a new server then starts without them (issue 42). sparse_view re-exports these.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

SPARSE_KEY = "sparse_dataset"  # {"data": SparseData, "label": str} while sparse data are in use
DOMAIN_LO, DOMAIN_HI, DOMAIN_DECLARED = "sparse_domain_lo", "sparse_domain_hi", "sparse_domain_declared"
EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "example_sparse.csv"


def active() -> dict | None:
    return st.session_state.get(SPARSE_KEY)


def keep() -> None:
    """Keep the domain declaration across pages (Streamlit drops the state of widgets not drawn in a run)."""
    ss = st.session_state
    for key, default in ((DOMAIN_LO, 0.0), (DOMAIN_HI, 1.0), (DOMAIN_DECLARED, False)):
        ss[key] = ss.get(key, default)


def stop_using() -> None:
    st.session_state.pop(SPARSE_KEY, None)
