"""Streamlit-side helpers shared by the pages (the library, fdp_core, never imports this)."""
