"""The guard that keeps Streamlit out of its legacy pages/ mode.

Streamlit treats a folder named ``pages/`` next to the entry script as a version-1
multipage app until the first ``st.navigation`` call in the server process
(streamlit/runtime/pages_manager.py sets ``PagesManager.uses_pages_directory`` when the
first session starts; commands/navigation.py clears it). So when the very first request
after a server start is a deep link such as ``/mean``, the legacy runner executes
pages/mean.py alone: file names in the navigation, no wide layout, no step bar, and every
later session inherits the mode. app.py marks each run it enters; a session's first run
that reaches a page without app.py leaves the legacy mode (exactly what ``st.navigation``
does) and reruns, so the same URL is then served through app.py's ``st.navigation``.

Only a session's first run is rerun: on a server the legacy mode can only meet a session's
first run (the first ``st.navigation`` ends it for the process), and a rerun later would
drop the click that caused the run. (Streamlit's AppTest restarts in the legacy mode on
every run, so its later page runs keep running the page alone, as before.)
"""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "app.py"
STARTED_KEY = "_fdp_session_started"

_run = threading.local()  # one script run = one thread; app.py marks the runs it enters


def mark_entered() -> None:
    """Called by app.py on every run, before the page runs."""
    _run.entered = True
    st.session_state[STARTED_KEY] = True


def leave_legacy_mode() -> None:
    """Called at the top of every page (through sidebar.render)."""
    entered = getattr(_run, "entered", False)
    _run.entered = False
    if entered:
        return
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # another Streamlit layout: nothing to fix
        return
    ctx = get_script_run_ctx()
    if ctx is None or Path(ctx.main_script_path).resolve() != ENTRY:
        return  # a page run on its own (AppTest.from_file("pages/x.py")): not the app
    PagesManager.uses_pages_directory = False  # what st.navigation itself does
    if not st.session_state.get(STARTED_KEY):
        st.session_state[STARTED_KEY] = True
        st.rerun()
