"""fdp_core: differentially private release of functional data (no Streamlit inside)."""

__version__ = "0.1.0"
