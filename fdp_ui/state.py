"""The current data set, kept in st.session_state and changed only inside callbacks.

Changing the data in a callback (which runs before the script) means the sidebar and the
page of the same run always see the same data set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitAPIException

from fdp_core.data import FunctionalData, load_curves
from fdp_core.errors import FdpError
from fdp_core.simulate import SIMULATIONS, simulate
from fdp_core.stand_in import stand_in_view

EXAMPLE_FILE = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"


@dataclass(frozen=True)
class Dataset:
    fd: FunctionalData
    label: str
    kind: str  # "example" | "upload" | "simulation"
    true_mean: object = None  # t -> mu(t) for simulations with a known mean
    flags: tuple = field(default_factory=tuple)


@st.cache_data(show_spinner=False, max_entries=16)
def _load_cached(raw: bytes, name: str, missing: str, options: tuple = ()) -> FunctionalData:
    """``options``: load_curves' column mapping or transpose, as sorted (key, value) pairs."""
    return load_curves(raw, name=name, missing=missing, **dict(options))


@st.cache_data(show_spinner=False, max_entries=16)
def _simulate_cached(key: str, params: tuple) -> FunctionalData:
    return simulate(key, **dict(params))


def example_dataset(missing: str = "drop") -> Dataset:
    fd = _load_cached(EXAMPLE_FILE.read_bytes(), EXAMPLE_FILE.name, missing)
    return Dataset(fd, f"built-in example ({EXAMPLE_FILE.name})", "example")


def simulated_dataset(key: str, params: dict) -> Dataset:
    design = SIMULATIONS[key]
    fd = _simulate_cached(key, tuple(sorted(params.items())))
    return Dataset(fd, f"simulation: {design.label}", "simulation", design.true_mean,
                   tuple(getattr(design, "flags", ())))


def uploaded_dataset(raw: bytes, name: str, missing: str, **loader_options) -> Dataset:
    """An uploaded file; ``loader_options`` (id_column, t_column, value_column, transpose) as
    confirmed on the Data page's intake panel."""
    return Dataset(_load_cached(raw, name, missing, tuple(sorted(loader_options.items()))), f"upload: {name}",
                   "upload")


def current() -> Dataset:
    if "dataset" not in st.session_state:
        st.session_state["dataset"] = example_dataset()
    return st.session_state["dataset"]


def replace_dataset(make) -> None:
    """Swap in a new data set; on bad input keep the old one and record the message."""
    try:
        st.session_state["dataset"] = make()
        st.session_state.pop("data_error", None)
        if st.session_state["dataset"].kind not in ("example", "simulation", "stand-in"):
            st.session_state["session_loaded_own_data"] = True  # sealed mode keeps earlier views then
    except FdpError as exc:
        st.session_state["data_error"] = str(exc)


# --------------------------------------------------------------------------- public bounds and person unit

PERSON_KEY = "data_person_column"
PERSON_FOR_KEY = "data_person_for"  # the data set label the person choice was made for
RANGE_DECLARED_KEY = "data_range_declared"
RANGE_LO_KEY, RANGE_HI_KEY = "data_range_lo", "data_range_hi"
NO_PERSON = "(none: every curve is a different person)"
LOOKED_AT_KEY = "session_looked_at"


def _sync_person_choice(ds: Dataset) -> None:
    """Pre-select the likely person column whenever a new data set comes in."""
    from fdp_core.preprocess import likely_person_column

    if st.session_state.get(PERSON_FOR_KEY) != ds.label:
        st.session_state[PERSON_FOR_KEY] = ds.label
        st.session_state[PERSON_KEY] = likely_person_column(ds.fd.metadata) or NO_PERSON
        st.session_state[RANGE_DECLARED_KEY] = False


def person_column(ds: Dataset | None = None) -> str | None:
    ds = ds or current()
    _sync_person_choice(ds)
    choice = st.session_state.get(PERSON_KEY, NO_PERSON)
    return None if choice == NO_PERSON or choice not in ds.fd.metadata.columns else str(choice)


def declared_range() -> tuple[float, float] | None:
    """The public value range the user declared on the Data page, or None."""
    if not st.session_state.get(RANGE_DECLARED_KEY):
        return None
    lo, hi = st.session_state.get(RANGE_LO_KEY), st.session_state.get(RANGE_HI_KEY)
    if lo is None or hi is None or not float(lo) < float(hi):
        return None
    return float(lo), float(hi)


def keep_bounds_alive() -> None:
    """Re-assign the Data page's widget values so they survive on pages that do not draw those
    widgets (Streamlit otherwise drops a widget's state when another page runs)."""
    for key in (PERSON_KEY, RANGE_DECLARED_KEY, RANGE_LO_KEY, RANGE_HI_KEY):
        if key in st.session_state:
            try:
                st.session_state[key] = st.session_state[key]
            except StreamlitAPIException:  # the widget is drawn in this very run: alive anyway
                pass


def bounds_settings(ds: Dataset | None = None) -> dict:
    """value_range and person_column for a settings object (MeanSettings, PcaSettings, KdeSettings)."""
    keep_bounds_alive()
    return {"value_range": declared_range(), "person_column": person_column(ds)}


def note_view(label: str) -> None:
    """Record that the session showed a non-private view of the data (listed in the report at commit)."""
    seen = st.session_state.setdefault(LOOKED_AT_KEY, [])
    if current().kind == "stand-in":  # sealed mode: the view was computed on the public stand-in
        label = stand_in_view(label)
    if label not in seen:
        seen.append(label)


def views_seen() -> list[str]:
    return list(st.session_state.get(LOOKED_AT_KEY, []))
