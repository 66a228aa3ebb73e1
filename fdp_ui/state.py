"""The current data set, kept in st.session_state and changed only inside callbacks.

Changing the data in a callback (which runs before the script) means the sidebar and the
page of the same run always see the same data set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from fdp_core.data import FunctionalData, load_curves
from fdp_core.errors import FdpError
from fdp_core.simulate import SIMULATIONS, simulate

EXAMPLE_FILE = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"


@dataclass(frozen=True)
class Dataset:
    fd: FunctionalData
    label: str
    kind: str  # "example" | "upload" | "simulation"
    true_mean: object = None  # t -> mu(t) for simulations with a known mean
    flags: tuple = field(default_factory=tuple)


@st.cache_data(show_spinner=False, max_entries=16)
def _load_cached(raw: bytes, name: str, missing: str) -> FunctionalData:
    return load_curves(raw, name=name, missing=missing)


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


def uploaded_dataset(raw: bytes, name: str, missing: str) -> Dataset:
    return Dataset(_load_cached(raw, name, missing), f"upload: {name}", "upload")


def current() -> Dataset:
    if "dataset" not in st.session_state:
        st.session_state["dataset"] = example_dataset()
    return st.session_state["dataset"]


def replace_dataset(make) -> None:
    """Swap in a new data set; on bad input keep the old one and record the message."""
    try:
        st.session_state["dataset"] = make()
        st.session_state.pop("data_error", None)
    except FdpError as exc:
        st.session_state["data_error"] = str(exc)
