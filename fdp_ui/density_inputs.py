"""The Density page's observations: a per-curve feature of the current curves, a numeric
metadata column, or a built-in example, and the page's starting values (METHODS.md section 4).

Widget keys all start with ``density_``; the callbacks here (source change, literature
settings, suggested box) write the session state before the widgets are drawn.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.data.features import extract_features, parse_feature
from fdp_core.data.preprocess import identifier_columns, repeated_id_columns
from fdp_core.data.simulate import HALL_EXAMPLE, hall_mixture_points, mixture_2d_points, mixture_density
from fdp_core.errors import FdpError
from fdp_core.registry.kde import REGISTRY as KDE_REGISTRY
from fdp_core.registry.kde import kde_mechanism
from fdp_core.releases import kde
from fdp_core.releases.box import DEFAULT_GRID_SIZE
from fdp_core.settings_fields import page_defaults, page_keys

from . import sidebar

SOURCES = {"curves": "features of the current curves",
           "hall": "built-in: two-bump mixture (Hall et al. 2013), 1-d",
           "mixture2d": "built-in: 2-d Gaussian mixture"}
# What each built-in example starts from, how it draws its observations and, when known, its
# true density. Hall et al. use h = 0.1: the data-free default rule (h = 0.4 at n = 100)
# oversmooths the two bumps into one. The 2-d mixture's components have standard deviations
# 0.08-0.12, so h = 0.05 keeps them apart.
EXAMPLES = {
    "hall": {"box": HALL_EXAMPLE["box"], "bandwidth": HALL_EXAMPLE["bandwidth"], "grid": HALL_EXAMPLE["grid_size"],
             "n": HALL_EXAMPLE["n"], "axes": ("x",), "literature": True,
             "points": lambda n, seed: hall_mixture_points(n, centers=HALL_EXAMPLE["centers"], sd=HALL_EXAMPLE["sd"],
                                                           seed=seed),
             "truth": lambda grid: mixture_density(grid, centers=HALL_EXAMPLE["centers"], sd=HALL_EXAMPLE["sd"]),
             "caption": "Equal mixture of N(0.3, 0.1^2) and N(0.7, 0.1^2) on [0, 1] (Hall, Rinaldo & Wasserman "
                        "2013)."},
    "mixture2d": {"box": ((0.0, 1.0), (0.0, 1.0)), "bandwidth": 0.05, "grid": 64, "n": 500, "axes": ("x1", "x2"),
                  "literature": False, "points": lambda n, seed: mixture_2d_points(n, seed=seed), "truth": None,
                  "caption": "0.6 N((0.3, 0.3), 0.1^2 I) + 0.4 N((0.7, 0.65), diag(0.12^2, 0.08^2)) on [0, 1]^2."},
}
FEATURE_KINDS = {"value": "value at t0", "mean": "average over [u, v]", "l2norm": "L2 norm",
                 "max": "maximum", "column": "metadata column"}
# The KdeSettings fields one widget holds (mechanism, bandwidth, Silverman, calibration): keys and
# defaults from the field metadata (fdp_core/releases/kde.py). Box, grid and bound are composed on the page.
PAGE = "density"
KEYS = page_keys(kde.KdeSettings, PAGE)
GRID_SLIDERS = {1: ("density_grid_1d", 16, 1000, 8), 2: ("density_grid_2d", 8, 96, 4)}
HELP = {
    "source": "A per-curve feature must be a fixed functional (one curve moves one observation), so the KDE "
              "sensitivities apply with one curve = one individual.",
    "literature": "Hall et al.'s setting: epsilon = 1, delta = 0.1, h = 0.1, a 1000-point grid on [0, 1], "
                  "their sqrt 2 bound with classical calibration. Sets the sidebar's epsilon and delta.",
}


@dataclass(frozen=True)
class Observations:
    """What the density is estimated from: ``spec`` is the feature's spec string (None for an example)."""

    source: str
    points: np.ndarray
    axis_labels: tuple
    spec: str | None

    @property
    def d(self) -> int:
        return len(self.axis_labels)

    @cached_property
    def key(self) -> str:
        """A digest of the points: the planned release is cached by it, not by the data set."""
        return points_key(self.points)


def points_key(points: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(points).tobytes()).hexdigest() + f":{points.shape}"


def box_keys(d: int) -> list[tuple[str, str]]:
    return [(f"density_lo{a}", f"density_hi{a}") for a in range(1, d + 1)]


def bound_key(entry) -> str:
    """Each mechanism has its own bound selector (the page compares them side by side)."""
    return f"density_{entry.page_key}_bound"


def apply_source_defaults() -> None:
    """Built-in examples start from their design's box, bandwidth and grid; data features from an
    empty box (the user types a public one)."""
    ss = st.session_state
    example = EXAMPLES.get(ss["density_source"])
    for a, (lo_key, hi_key) in enumerate(box_keys(2)):
        ss[lo_key], ss[hi_key] = (None, None) if example is None or a >= len(example["box"]) else example["box"][a]
    ss["density_box_flag"] = False
    ss[KEYS["data_dependent_bandwidth"]] = False
    if example is None:
        ss["density_h_rule"] = True
        ss["density_grid_1d"], ss["density_grid_2d"] = DEFAULT_GRID_SIZE[1], DEFAULT_GRID_SIZE[2]
        return
    ss["density_h_rule"] = False
    ss[KEYS["bandwidth"]] = example["bandwidth"]
    ss[GRID_SLIDERS[len(example["box"])][0]] = example["grid"]


def apply_literature() -> None:
    ex = HALL_EXAMPLE
    sidebar.apply({"g_epsilon": ex["epsilon"], "g_delta": ex["delta"]})
    ss = st.session_state
    ss["density_lo1"], ss["density_hi1"] = ex["box"][0]
    ss.update({"density_h_rule": False, KEYS["data_dependent_bandwidth"]: False, KEYS["bandwidth"]: ex["bandwidth"],
               "density_grid_1d": ex["grid_size"], KEYS["calibration"]: ex["calibration"],
               KEYS["mechanism"]: ex["mechanism"], bound_key(kde_mechanism(ex["mechanism"])): ex["bound"]})


def suggest_box(points: np.ndarray) -> None:
    x = points.reshape(len(points), -1)
    for a, (lo_key, hi_key) in enumerate(box_keys(x.shape[1])):
        lo, hi = float(x[:, a].min()), float(x[:, a].max())
        if not lo < hi:  # a constant feature: any box around the value will do
            lo, hi = lo - 0.5, hi + 0.5
        st.session_state[lo_key], st.session_state[hi_key] = lo, hi
    st.session_state["density_box_flag"] = True


def numeric_columns(fd, person_column) -> list[str]:
    """Numeric metadata columns, id-like ones (the person column, columns with repeated ids) last:
    an id is never the default feature."""
    ids = {person_column, *repeated_id_columns(fd.metadata)}
    numeric = [str(c) for c in fd.metadata.columns if pd.api.types.is_numeric_dtype(fd.metadata[c])]
    return sorted(numeric, key=lambda c: c in ids)


def _page_defaults(fd, person_column) -> dict:
    a, b = fd.domain
    # Safe default: never an id or person column (fdp_core.data.preprocess.identifier_columns).
    ids = identifier_columns(fd.metadata, person_column)
    numeric = [c for c in numeric_columns(fd, person_column) if c not in ids]
    columns = [str(c) for c in fd.metadata.columns if str(c) not in ids]
    column = numeric[0] if numeric else (columns[0] if columns else None)
    return {**page_defaults(kde.KdeSettings, PAGE),
            "density_dim": "1-d", "density_kind_1": "value", "density_kind_2": "value",
            "density_t0_1": a + 0.25 * (b - a), "density_t0_2": a + 0.75 * (b - a),
            "density_u_1": a, "density_v_1": b, "density_u_2": a, "density_v_2": a + 0.5 * (b - a),
            "density_col_1": column, "density_col_2": column,
            "density_box_flag": False, "density_h_rule": True,
            "density_grid_1d": DEFAULT_GRID_SIZE[1], "density_grid_2d": DEFAULT_GRID_SIZE[2],
            **{bound_key(m): kde.KdeSettings.bound for m in KDE_REGISTRY.values()},
            "density_style": "draws", "density_draws": 10,
            "density_view": "heatmaps", "density_panels": 2, "density_seed": 0,
            "density_n_hall": EXAMPLES["hall"]["n"], "density_n_mixture2d": EXAMPLES["mixture2d"]["n"],
            **{key: None for pair in box_keys(2) for key in pair}}


def init_state(ds, person_column) -> None:
    """The page's starting values, kept across visits to other pages."""
    ss = st.session_state
    if "density_source" not in ss or (ss.get("density_source_for") != ds.label and ds.kind != "example"):
        # The user's own curves (an upload or a simulation) are what the page opens on, also when
        # the page was first visited with the built-in example.
        ss["density_source"] = "curves" if ds.kind != "example" else "hall"
        apply_source_defaults()
    ss["density_source_for"] = ds.label
    defaults = _page_defaults(ds.fd, person_column)
    # Re-assigning every stored value keeps the page's choices when the user visits other pages.
    for key, value in defaults.items():
        ss[key] = ss.get(key, value)
    domain = ds.fd.domain
    for key in ("density_t0_1", "density_t0_2", "density_u_1", "density_v_1", "density_u_2", "density_v_2"):
        if not domain[0] <= ss[key] <= domain[1]:  # a new data set with another domain
            ss[key] = defaults[key]
    ss["density_source"] = ss["density_source"]


@st.cache_data(show_spinner=False, max_entries=16)
def _example_points(source: str, n: int, seed: int) -> np.ndarray:
    return EXAMPLES[source]["points"](n, seed)


def _feature_widgets(a: int, container, fd, person_column) -> str:
    """Widgets of feature ``a`` (1 or 2); returns its spec string for fdp_core.data.features."""
    lo, hi = fd.domain
    kind = container.selectbox(f"feature {a}", tuple(FEATURE_KINDS), key=f"density_kind_{a}",
                               format_func=FEATURE_KINDS.get)
    if kind == "value":
        t0 = container.number_input("t0", min_value=lo, max_value=hi, format="%.4g", key=f"density_t0_{a}",
                                    help=f"Curve value at t0 (linear interpolation); domain [{lo:g}, {hi:g}].")
        return f"value:{t0!r}"
    if kind == "mean":
        left, right = container.columns(2)
        u = left.number_input("u", min_value=lo, max_value=hi, format="%.4g", key=f"density_u_{a}")
        v = right.number_input("v", min_value=lo, max_value=hi, format="%.4g", key=f"density_v_{a}")
        return f"mean:{u!r}:{v!r}"
    if kind == "column":
        numeric = numeric_columns(fd, person_column)
        # An id (the person column, a column of repeated ids or named like one) is no feature: its codes mean
        # nothing (issue 38). It stays typeable (accept_new_options), and stays listed while it is chosen.
        ids = identifier_columns(fd.metadata, person_column)
        chosen = st.session_state.get(f"density_col_{a}")
        offered = [str(c) for c in fd.metadata.columns if str(c) not in ids or str(c) == chosen]
        numeric = [c for c in numeric if c not in ids]
        name = container.selectbox("column", offered, key=f"density_col_{a}",
                                   accept_new_options=True,
                                   help="A numeric metadata column of the file (one value per curve). Numeric "
                                        f"columns here: {', '.join(numeric) or 'none'}.")
        return f"column:{name or ''}"
    container.caption("L2 norm over the grid rescaled to [0, 1] (the norm tau bounds)" if kind == "l2norm"
                      else "largest value of each curve on its grid")
    return kind


def _from_curves(fd, person_column) -> Observations:
    d = 1 if st.radio("dimension", ("1-d", "2-d"), key="density_dim", horizontal=True) == "1-d" else 2
    columns = st.columns(2)
    specs = [_feature_widgets(a, columns[a - 1], fd, person_column) for a in range(1, d + 1)]
    try:
        features = tuple(parse_feature(spec) for spec in specs)
        points, features = extract_features(fd, features)
    except FdpError as exc:
        st.error(f"Cannot compute the feature: {exc}")
        st.stop()
    spec = ",".join(f.spec for f in features)
    if not person_column:  # with a person column the page's caption says how the curves are grouped
        st.caption(f"{fd.n} curves -> {fd.n} observations of `{spec}` (one per curve, one curve = one individual).")
    return Observations("curves", points, tuple(f.label for f in features), spec)


def _from_example(source: str) -> Observations:
    example = EXAMPLES[source]
    c1, c2, c3 = st.columns([1, 1, 2])
    n = int(c1.number_input("n (observations)", min_value=2, max_value=200_000, step=50, key=f"density_n_{source}"))
    seed = int(c2.number_input("data seed", min_value=0, step=1, key="density_seed"))
    if example["literature"]:
        c3.button("literature settings", key="density_literature", on_click=apply_literature, help=HELP["literature"])
    c3.caption(example["caption"])
    return Observations(source, _example_points(source, n, seed), example["axes"], None)


def observations(fd, person_column) -> Observations:
    """The source radio and its widgets; the observations they give."""
    source = st.radio("observations", tuple(SOURCES), key="density_source", format_func=SOURCES.get,
                      horizontal=True, on_change=apply_source_defaults, help=HELP["source"])
    return _from_curves(fd, person_column) if source == "curves" else _from_example(source)
