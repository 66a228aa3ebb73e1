"""Streamlit-side helpers shared by the pages (the library, fdp_core, never imports this)."""

from .server_threads import SERVER_BLAS_LIMIT  # noqa: F401  one BLAS thread for the server process (issue 40)
