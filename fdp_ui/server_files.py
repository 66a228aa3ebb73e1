"""Big files read on the server: a folder the operator chose, never a path the browser sends.

Browser uploads stay capped (fdp_core.data.loading.MAX_FILE_BYTES, FDP_MAX_UPLOAD_MB). For bigger
files the operator sets ``FDP_DATA_DIR`` to a folder on the server; the Data page then lists
the CSV and Parquet files directly inside it (no sub-folders, no symlinks leaving it) and
loads the chosen one through the streaming reader with a progress bar. The browser only
ever sends a file *name* from that list, so it cannot make the server read anything else.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from fdp_core.errors import DataError, FdpError

SUFFIXES = (".csv", ".txt", ".parquet", ".pq")


def data_dir() -> Path | None:
    text = os.environ.get("FDP_DATA_DIR", "").strip()
    return Path(text).expanduser().resolve() if text else None


def allowed_files() -> list[str]:
    root = data_dir()
    if root is None or not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if p.is_file() and p.suffix.lower() in SUFFIXES and p.resolve().parent == root)


def resolve(name: str) -> Path:
    """The file ``name`` inside FDP_DATA_DIR, refusing anything not in the listing."""
    if name not in allowed_files():
        raise DataError(f"'{name}' is not one of the files in the server data folder")
    return data_dir() / name


def render(missing: str, on_loaded) -> None:
    """The Data page's 'server file' source: pick a file, load it with a progress bar."""
    files = allowed_files()
    if not files:
        st.info(f"No CSV or Parquet files in the server data folder ({data_dir()}).")
        return
    name = st.selectbox("File in the server data folder", files, key="data_server_file")
    size = (data_dir() / name).stat().st_size
    st.caption(f"{size / 2**20:,.0f} MB, read on the server in chunks (FDP_DATA_DIR = {data_dir()}).")
    if st.button("Load", key="data_server_load"):
        bar = st.progress(0.0, text="reading...")
        from fdp_core.engines.stream import load_with_progress  # lazy: the stream engine, only to read a file

        try:
            fd = load_with_progress(resolve(name), missing=missing,
                                    progress=lambda f, rows: bar.progress(f, text=f"{rows:,} curves read"))
        except FdpError as exc:
            st.session_state["data_error"] = str(exc)
        else:
            on_loaded(fd, name)
        bar.empty()
