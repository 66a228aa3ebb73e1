"""The current data set, kept in st.session_state and changed only inside callbacks.

Changing the data in a callback (which runs before the script) means the sidebar and the
page of the same run always see the same data set.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st

from fdp_core.data.loading import FunctionalData, load_curves
from fdp_core.errors import FdpError
from fdp_core.data.simulate import SIMULATIONS, design_value_range, simulate
from fdp_core.data.stand_in import stand_in_view
from fdp_core.data.meta_columns import metadata_view
from fdp_core.data.preprocess import likely_person_column, person_codes

EXAMPLE_FILE = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"


@dataclass(frozen=True)
class Dataset:
    fd: FunctionalData
    label: str
    kind: str  # "example" | "upload" | "simulation"
    true_mean: object = None  # t -> mu(t) for simulations with a known mean
    flags: tuple = field(default_factory=tuple)
    # A value range that is a public fact about these data (a simulation design's description),
    # and how it follows; the Data page pre-fills it (never a range read off the data).
    public_range: tuple | None = None
    public_range_note: str = ""


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
    public_range, note = design_value_range(key, **params)
    return Dataset(fd, f"simulation: {design.label}", "simulation", design.true_mean,
                   tuple(getattr(design, "flags", ())), public_range, note)


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
# Every choice made on the Data page is stored under a plain session key that no widget owns,
# and each widget gets a key of its own (``widget_key``): Streamlit drops a widget's state at
# the start of a run on a page that does not draw it, so a choice kept only in its widget
# would be lost when the user clicks "Mean" (issue 28). The widget is seeded from the stored
# choice before it is drawn and copies a change back in its on_change callback.

PERSON_KEY = "data_person_column"
PERSON_FOR_KEY = "data_person_for"  # the data set label the person choice was made for
RANGE_DECLARED_KEY = "data_range_declared"
RANGE_LO_KEY, RANGE_HI_KEY = "data_range_lo", "data_range_hi"
PUBLIC_RANGE_FOR_KEY = "data_public_range_for"  # the public range last pre-filled
MISSING_KEY = "data_missing_policy"  # the missing-value policy the data set in use was loaded with
NO_PERSON = "(none: every curve is a different person)"
LOOKED_AT_KEY = "session_looked_at"


def widget_key(store_key: str) -> str:
    """The key of the Data page widget that edits the choice stored under ``store_key``."""
    return f"{store_key}_input"


def seed_widget(store_key: str, default) -> str:
    """Give the widget of ``store_key`` the stored choice (``default`` on a first visit), just
    before it is drawn; returns the widget's key."""
    ss = st.session_state
    ss[store_key] = ss.get(store_key, default)
    ss[widget_key(store_key)] = ss[store_key]
    return widget_key(store_key)


def store_choice(store_key: str) -> None:
    """on_change callback of a Data page widget: keep its new value under the stored key."""
    st.session_state[store_key] = st.session_state[widget_key(store_key)]


def _sync_person_choice(ds: Dataset) -> None:
    """Pre-select the likely person column whenever a new data set comes in."""

    ss = st.session_state
    previous = ss.get(PERSON_FOR_KEY)
    if previous != ds.label:
        ss[PERSON_FOR_KEY] = ds.label
        ss[PERSON_KEY] = likely_person_column(metadata_view(ds.fd)) or NO_PERSON
        # The range starts empty, or at a public fact about the new data (a simulation's design):
        # never at another data set's range, never at a range read off the data.
        lo, hi = ds.public_range or (None, None)
        if previous is not None:  # a range declared for other data is not declared for these
            ss[RANGE_DECLARED_KEY] = False
            ss[RANGE_LO_KEY], ss[RANGE_HI_KEY] = lo, hi
        else:  # the session's first data set: a range set before (a test, a replayed state) is kept
            ss[RANGE_LO_KEY], ss[RANGE_HI_KEY] = ss.get(RANGE_LO_KEY, lo), ss.get(RANGE_HI_KEY, hi)
    elif (ds.public_range is not None and ss.get(PUBLIC_RANGE_FOR_KEY) != ds.public_range
          and not ss.get(RANGE_DECLARED_KEY)):
        # The same design with other parameters (same label): its public range follows them
        # until the user declares one.
        ss[RANGE_LO_KEY], ss[RANGE_HI_KEY] = ds.public_range
    ss[PUBLIC_RANGE_FOR_KEY] = ds.public_range


def person_column(ds: Dataset | None = None) -> str | None:
    ds = ds or current()
    _sync_person_choice(ds)
    choice = st.session_state.get(PERSON_KEY, NO_PERSON)
    return None if choice == NO_PERSON or choice not in metadata_view(ds.fd).columns else str(choice)


def n_persons(ds: Dataset | None = None) -> int:
    """The n of every sensitivity: persons in the person column, or curves without one."""

    ds = ds or current()
    column = person_column(ds)
    if not column:
        return int(ds.fd.n)
    return remembered("n_persons", ds.fd, column, lambda: person_codes(metadata_view(ds.fd), column, ds.fd.n)[1])


def curves_digest(fd) -> str:
    """A hash of the curves' grid and values: the cache key of what depends on them alone (the Data
    page's preview, the Trade-offs page's sweeps), shared across sessions holding the same curves."""
    h = hashlib.blake2b(digest_size=16)
    values = np.ascontiguousarray(fd.data_matrix, dtype=float)
    h.update(repr(values.shape).encode("ascii"))
    h.update(np.ascontiguousarray(fd.grid_points, dtype=float).tobytes())
    h.update(values.tobytes())
    return h.hexdigest()


def remembered(name: str, fd, key, compute):
    """``compute()``, remembered in this session for the data set ``fd`` (by identity) and ``key``.

    For counts the sidebar and the step bar show on every rerun of every page: they read the
    whole data set (person grouping, clipping) but change only with the data and ``key``.
    """
    slot = f"_remembered_{name}"
    cached = st.session_state.get(slot)
    if cached is not None and cached[0] is fd and cached[1] == key:
        return cached[2]
    value = compute()
    st.session_state[slot] = (fd, key, value)
    return value


def declared_range() -> tuple[float, float] | None:
    """The public value range the user declared on the Data page, or None."""
    if not st.session_state.get(RANGE_DECLARED_KEY):
        return None
    lo, hi = st.session_state.get(RANGE_LO_KEY), st.session_state.get(RANGE_HI_KEY)
    if lo is None or hi is None or not float(lo) < float(hi):
        return None
    return float(lo), float(hi)


def bounds_settings(ds: Dataset | None = None) -> dict:
    """value_range and person_column for a settings object (MeanSettings, PcaSettings, KdeSettings)."""
    return {"value_range": declared_range(), "person_column": person_column(ds)}


# --------------------------------------------------------------------------- after a browser reload
# A reload starts a new session: the uploaded file is gone (the browser does not keep it), the
# built-in example comes in, and the sidebar meter would show the example's budget as if the
# upload's had been reset. The upload's name is kept in the URL (?data=...), so the new session
# can say what happened: the data are gone, their budget is kept in the ledger.
DATA_PARAM = "data"
GONE_KEY = "data_gone_after_reload"


def sync_data_with_url() -> None:
    """Called by app.py before every page: write the uploaded data set's name into the URL, and
    on a new session that finds one there, remember it (``gone_after_reload``)."""
    ss = st.session_state
    if "dataset" not in ss and st.query_params.get(DATA_PARAM):
        ss[GONE_KEY] = st.query_params[DATA_PARAM]
    ds = current()
    if ds.kind == "upload":
        name = ds.label.removeprefix("upload: ")
        ss.pop(GONE_KEY, None)
        if st.query_params.get(DATA_PARAM) != name:
            st.query_params[DATA_PARAM] = name
    elif DATA_PARAM in st.query_params:
        del st.query_params[DATA_PARAM]


def gone_after_reload() -> str | None:
    """The name of the upload a browser reload dropped from this session (None if none)."""
    return None if current().kind == "upload" else st.session_state.get(GONE_KEY)


def note_view(label: str) -> None:
    """Record that the session showed a non-private view of the data (listed in the report at commit)."""
    seen = st.session_state.setdefault(LOOKED_AT_KEY, [])
    if current().kind == "stand-in":  # sealed mode: the view was computed on the public stand-in
        label = stand_in_view(label)
    if label not in seen:
        seen.append(label)


def views_seen() -> list[str]:
    return list(st.session_state.get(LOOKED_AT_KEY, []))
