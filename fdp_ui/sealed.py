"""Sealed mode (issue 29): explore on a public stand-in, read the private file once, at commit.

The officer declares what is public anyway -- the private file's name in the server data
folder (FDP_DATA_DIR, see :mod:`fdp_ui.server_files`), the number of persons, the person
column, the grid (points and domain) and the value range. :func:`start` makes a simulated
stand-in with that design the current data set, so every preview, trade-off curve and plan
is computed on it; :func:`commit_data` reads the private file at commit (counting reads)
and hands it to the Release page with the sealed statement, given only when every recorded
view was on the stand-in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import streamlit as st

from fdp_core.errors import DataError, FdpError
from fdp_core.data.preprocess import file_persons
from fdp_core.data.stand_in import SEALED, all_on_stand_in, matched_stand_in, stand_in_curves, with_person_ids

from . import server_files, state

SIMULATED_CHOICE = "simulated curves with the declared design"
SEALED_KEY = "sealed_design"  # the declared design, a dict; absent outside sealed mode
READS_KEY = "sealed_private_reads"
KIND = "stand-in"


def active() -> bool:
    """True while the current data set is the sealed-mode stand-in."""
    return SEALED_KEY in st.session_state and state.current().kind == KIND


def registered_names() -> tuple[str, ...]:
    """The names the private file's registered data set may have, from its declared file name alone (nothing
    is read): the stem an upload registers ('dti_cca'), then the stem a server file's or a sealed commit's
    label registers ('server file: dti_cca'). Empty outside sealed mode."""
    if not active():
        return ()
    stem = Path(st.session_state[SEALED_KEY]["private_name"]).stem.strip()
    return (stem, f"server file: {stem}") if stem else ()


def reads() -> int:
    """How many times this session read the private file (0 before the commit)."""
    return int(st.session_state.get(READS_KEY, 0))


def start(private_name: str, n: int, person_column: str | None, points: int, domain: tuple[float, float],
          value_range: tuple[float, float], stand_in_name: str | None = None) -> None:
    """Enter sealed mode: the stand-in becomes the current data set and the range is declared.

    ``stand_in_name``: a PUBLIC file of the server data folder to explore instead of simulated
    curves; it must have the declared design (n persons, grid) and must not be the private file.
    """
    server_files.resolve(private_name)  # only a file the operator put in the server folder (nothing read)
    design = {"private_name": private_name, "n": int(n), "person_column": person_column or None,
              "points": int(points), "domain": (float(domain[0]), float(domain[1])),
              "value_range": (float(value_range[0]), float(value_range[1])), "stand_in": stand_in_name or None}
    if stand_in_name:
        if stand_in_name == private_name:
            raise ValueError("the stand-in is the private file itself: choose a public file, or simulated curves")
        from fdp_core.engines.stream import load_with_progress  # lazy: the stream engine, only to read a file

        fd = matched_stand_in(load_with_progress(server_files.resolve(stand_in_name)), n=design["n"],
                              points=design["points"], domain=design["domain"],
                              person_column=design["person_column"], label=stand_in_name)
        label = f"public stand-in {stand_in_name} for {private_name} (sealed mode)"
    else:  # simulated: one curve per person, under the declared column name
        fd = with_person_ids(stand_in_curves(design["n"], design["points"], design["domain"], design["value_range"]),
                             design["person_column"])
        label = f"public stand-in for {private_name} (sealed mode)"
    ds = state.Dataset(fd, label, KIND)
    state.replace_dataset(lambda: ds)
    st.session_state[SEALED_KEY] = design
    st.session_state.setdefault(READS_KEY, 0)
    if not st.session_state.get("session_loaded_own_data"):
        # Only public data (the built-in example, simulations) were shown so far: those views said
        # nothing about the private file. Once any own file was loaded, its views stay on record
        # and the sealed statement is not given.
        st.session_state[state.LOOKED_AT_KEY] = []
    # The person unit and the public range are the declared ones (the stand-in has no other).
    st.session_state[state.PERSON_FOR_KEY] = ds.label
    st.session_state[state.PERSON_KEY] = design["person_column"] or state.NO_PERSON
    st.session_state[state.RANGE_DECLARED_KEY] = True
    st.session_state[state.RANGE_LO_KEY], st.session_state[state.RANGE_HI_KEY] = design["value_range"]


def read_private() -> state.Dataset:
    """Load the private file (counted) and check it against the declared design."""
    design = st.session_state[SEALED_KEY]
    path = server_files.resolve(design["private_name"])
    st.session_state[READS_KEY] = reads() + 1
    from fdp_core.engines.stream import load_with_progress  # lazy: the stream engine, only to read a file

    fd = load_with_progress(path)
    persons = file_persons(fd, design["person_column"]).n_persons
    if persons != design["n"]:
        raise DataError(f"sealed mode: the private file has {persons} persons, not the declared n = {design['n']}; "
                        "nothing was released")
    lo, hi = design["domain"]
    if fd.grid_points.size != design["points"] or not np.allclose([fd.grid_points[0], fd.grid_points[-1]], [lo, hi]):
        raise DataError(f"sealed mode: the private file's grid ({fd.grid_points.size} points on "
                        f"[{fd.grid_points[0]:g}, {fd.grid_points[-1]:g}]) is not the declared one "
                        f"({design['points']} points on [{lo:g}, {hi:g}]); nothing was released")
    return state.Dataset(fd, f"server file: {design['private_name']} (sealed mode)", "upload")


def commit_data(data: state.Dataset, seen: list[str]) -> tuple[state.Dataset, list[str]]:
    """The data set to commit and what to declare as looked at (Release page, inside the commit).

    Outside sealed mode: unchanged. In sealed mode: the private file, read now, and the sealed
    statement when every recorded view was computed on the stand-in.
    """
    if not active():
        return data, seen
    private = read_private()
    return private, ([SEALED] if all_on_stand_in(seen) else seen)


def _start_from_widgets() -> None:
    """Callback (runs before the script, so the sidebar and page see the stand-in at once)."""
    ss = st.session_state
    try:
        choice = ss.get("sealed_stand_in", SIMULATED_CHOICE)
        start(ss["sealed_file"], int(ss["sealed_n"]), ss.get("sealed_person", "").strip() or None,
              int(ss["sealed_points"]), (ss["sealed_a"], ss["sealed_b"]), (ss["sealed_lo"], ss["sealed_hi"]),
              stand_in_name=None if choice == SIMULATED_CHOICE else choice)
        ss.pop("sealed_error", None)
    except (ValueError, FdpError) as exc:
        ss["sealed_error"] = str(exc)


def render_panel() -> None:
    """The Data page's sealed-mode panel: declare the design, start, and the read counter."""
    with st.expander("Sealed mode: explore on a public stand-in", expanded=active()):
        st.caption("Declare the private file's public design; every view is then computed on simulated "
                   "curves with that design (or on a public file with it), and the private file is read once, at commit "
                   "(Release & audit, or the Plan page).")
        files = server_files.allowed_files()
        if not files:
            st.caption("Sealed mode needs the private file in the server data folder (set FDP_DATA_DIR).")
        else:
            st.selectbox("Private file (server data folder)", files, key="sealed_file")
            c1, c2, c3 = st.columns(3)
            c1.number_input("Declared n (persons)", min_value=1, value=100, step=1, key="sealed_n")
            c2.text_input("Person column (empty: one curve per person)", key="sealed_person")
            c3.number_input("Grid points", min_value=2, value=101, step=1, key="sealed_points")
            d1, d2, r1, r2 = st.columns(4)
            d1.number_input("Domain from", value=0.0, key="sealed_a")
            d2.number_input("Domain to", value=1.0, key="sealed_b")
            r1.number_input("Range lower", value=0.0, key="sealed_lo")
            r2.number_input("Range upper", value=1.0, key="sealed_hi")
            st.selectbox("Stand-in to explore", [SIMULATED_CHOICE, *files], key="sealed_stand_in",
                         help="Simulated curves, or a PUBLIC file of the server data folder with the declared n, "
                              "grid and person column (never the private file).")
            st.button("Start sealed mode", key="sealed_start", on_click=_start_from_widgets)
            if st.session_state.get("sealed_error"):
                st.error(st.session_state["sealed_error"])
        if active():
            st.success(f"Sealed mode: exploring the stand-in for {st.session_state[SEALED_KEY]['private_name']}.")
        st.markdown("private file read: " + ("never" if reads() == 0 else "once at commit" if reads() == 1
                                               else f"{reads()} times"))
