"""The Density page's public choices: the box, the bandwidth and grid, the mechanism and its
bound, and what to show (METHODS.md section 4). ``DensityChoices.settings`` turns them into
one mechanism's ``KdeSettings``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.registry.kde import REGISTRY as KDE_REGISTRY
from fdp_core.registry.kde import kde_mechanism
from fdp_core.releases import kde
from fdp_core.releases.box import check_box
from fdp_core.sensitivity import KDE_BOUNDS
from fdp_core.settings_fields import page_values

from . import density_defaults
from .density_inputs import GRID_SLIDERS, KEYS, PAGE, box_keys, bound_key, suggest_box

# The mechanisms and how each is shown come from the registry (fdp_core/registry/kde.py).
COMPARE_ALL = "both"  # the menu choice that shows every mechanism side by side (not a mechanism)
MECHANISMS = {**{name: m.menu for name, m in KDE_REGISTRY.items()},
              COMPARE_ALL: "compare both" if len(KDE_REGISTRY) == 2 else "compare all"}
MAX_DRAWS_1D, MAX_PANELS_2D = 30, 3
HELP = {
    "box": "Public box T: every observation is moved to its nearest point in T. Choose it from domain "
           "knowledge (the range the feature can take), never from the data.",
    "suggest": "Fills the box with the feature's min and max. Convenient, but the box then depends on the data, "
               "so the release is NOT differentially private (the page says so while the flag is ticked).",
    "box_flag": "Ticked by the suggest button. Untick it only after replacing the suggested limits by public "
                "ones.",
    "h_rule": "Data-free rule: Silverman's h = 1.06 s n^(-1/(4+d)) for observations spread evenly over the public "
              "box (s = box width / sqrt 12); in 2-d the width is the geometric mean of the sides. Uses only the box "
              "and n.",
    "bandwidth": "Gaussian bandwidth h in the feature's units. Larger h = smoother estimate and less noise "
                 "(the sensitivity falls like h^(-d)), more bias.",
    "silverman": "Silverman's rule reads the data: convenient for teaching, but the release is then NOT "
                 "differentially private.",
    "grid": "Points per axis of the public evaluation grid.",
    "calibration": "analytic (Balle & Wang 2018): the smallest valid sigma. classical: sigma = Delta "
                   "sqrt(2 log(2/delta))/epsilon, valid only for epsilon <= 1.",
}


def box_widgets(obs, value_range) -> tuple[tuple, bool]:
    """The public box (stops the page until one is typed) and whether it was read off the data."""
    d = obs.d
    curves = obs.source == "curves"
    if curves and density_defaults.prefill_box(
            st.session_state, box_keys(d), [st.session_state[f"density_kind_{a}"] for a in range(1, d + 1)],
            value_range):
        st.caption("Box: the public value range declared on the Data page (the feature is a curve value).")
    box_columns = st.columns([1, 1] * d + ([2] if curves else []))
    for a, (lo_key, hi_key) in enumerate(box_keys(d)):
        name = obs.axis_labels[a] if d == 1 else f"axis {a + 1}"
        box_columns[2 * a].number_input(f"lower limit ({name})", format="%.4g", key=lo_key, help=HELP["box"])
        box_columns[2 * a + 1].number_input(f"upper limit ({name})", format="%.4g", key=hi_key, help=HELP["box"])
    box_flag = False
    if curves:
        box_columns[-1].button("suggest box from the data (not DP)", key="density_suggest_box", on_click=suggest_box,
                               args=(obs.points,), help=HELP["suggest"])
        box_flag = box_columns[-1].checkbox("box read off the data (not DP)", key="density_box_flag",
                                            help=HELP["box_flag"])
    raw_box = [(st.session_state[lo_key], st.session_state[hi_key]) for lo_key, hi_key in box_keys(d)]
    if any(v is None for pair in raw_box for v in pair):
        st.info("Type the public box: limits the feature cannot leave, known without looking at the data (e.g. "
                "the measurement range). The suggest button fills in the data's range, which is not DP.")
        st.stop()
    try:
        return check_box(raw_box, d), box_flag
    except FdpError as exc:
        st.error(f"Cannot use this box: {exc}")
        st.stop()


def shown_mechanisms() -> tuple:
    """The mechanisms on screen: the chosen one, or every one when comparing."""
    mechanism = st.session_state[KEYS["mechanism"]]
    return tuple(KDE_REGISTRY) if mechanism == COMPARE_ALL else (mechanism,)


@dataclass(frozen=True)
class DensityChoices:
    """The page's public choices, from which each shown mechanism's settings are composed."""

    g: object  # the sidebar's GlobalSettings
    box: tuple
    grid_size: int
    bandwidth: float | None  # the rule's h, the typed h, or None for Silverman's (data-dependent)
    bounds: dict

    def settings(self, mech: str, bound: str | None = None) -> tuple:
        """The settings of one mechanism as hashable items: the page's values of the fields it reads
        (the others keep their defaults, so one setting is one cache entry and one command line)."""
        values = {**self.g.fields_of(kde.KdeSettings), **page_values(kde.KdeSettings, PAGE, st.session_state),
                  "bandwidth": None if self.bandwidth is None else float(self.bandwidth)}
        settings = kde.KdeSettings(mechanism=mech, box=self.box, epsilon=self.g.epsilon, grid_size=int(self.grid_size),
                                   bound=bound or self.bounds[mech],
                                   **{f: values[f] for f in kde_mechanism(mech).fields})
        return tuple(asdict(settings).items())


def choice_widgets(g, box, n: int, d: int, shown: tuple) -> DensityChoices:
    """Bandwidth, grid, mechanism, bounds and calibration; a disabled widget is one no shown mechanism reads."""

    def reads(name: str) -> bool:
        return any(name in kde_mechanism(m).fields for m in shown)

    c1, c2, c3, c4 = st.columns(4)
    h_rule = c1.checkbox("default bandwidth rule", key="density_h_rule", help=HELP["h_rule"],
                         disabled=not reads("bandwidth"))
    silverman = c3.checkbox("Silverman h from the data (not DP)", key=KEYS["data_dependent_bandwidth"],
                            help=HELP["silverman"], disabled=not reads("data_dependent_bandwidth"))
    bandwidth_input = c2.number_input("bandwidth h", format="%.4g", step=0.01, key=KEYS["bandwidth"],
                                      help=HELP["bandwidth"], disabled=h_rule or silverman or not reads("bandwidth"))
    default_h = density_defaults.suggested_bandwidth(box, n)
    c1.caption(f"rule: h = {default_h:.4g} (Silverman's rule for values spread over the box; data-free)")
    grid_key, grid_min, grid_max, grid_step = GRID_SLIDERS[d]
    grid_size = c4.slider("grid points" + (" per axis" if d == 2 else ""), grid_min, grid_max, step=grid_step,
                          key=grid_key, help=HELP["grid"])
    bandwidth = None if silverman else (default_h if h_rule else bandwidth_input)

    st.markdown("**Mechanism**")
    # One bound selector per mechanism, the calibration next to the first mechanism that reads it.
    controls = iter(st.columns([2] + [1] * (len(KDE_REGISTRY) + 1)))
    next(controls).radio("mechanism", tuple(MECHANISMS), key=KEYS["mechanism"], format_func=MECHANISMS.get,
                         horizontal=True, label_visibility="collapsed")
    bounds, calibration_drawn = {}, False
    for name, entry in KDE_REGISTRY.items():
        bounds[name] = next(controls).radio(entry.bound_control, KDE_BOUNDS, key=bound_key(entry),
                                            horizontal=True, format_func=entry.bound_choices.get,
                                            help=entry.bound_help, disabled=name not in shown)
        if not calibration_drawn and "calibration" in entry.fields:
            next(controls).radio("calibration", CALIBRATIONS, key=KEYS["calibration"], horizontal=True,
                                 help=HELP["calibration"], disabled=not reads("calibration"))
            calibration_drawn = True
    return DensityChoices(g, box, grid_size, bandwidth, bounds)


@dataclass(frozen=True)
class View:
    """What the figures show: 1-d draws or band and how many draws; 2-d heatmaps or surfaces and how many."""

    style: str = "draws"
    n_draws: int = 0
    surface: bool = False
    n_panels: int = 0


def view_widgets(d: int, comparing: bool) -> View:
    v1, v2 = st.columns(2)
    if d == 1:
        style = v1.radio("show", ("draws", "band"), key="density_style", horizontal=True,
                         help="Several independent sanitized densities, or their pointwise 5-95% band (200 draws).")
        n_draws = v2.slider("sanitized draws" + (" per mechanism" if comparing else ""), 1, MAX_DRAWS_1D,
                            key="density_draws", disabled=style == "band")
        return View(style=style, n_draws=n_draws)
    surface = v1.radio("view", ("heatmaps", "surfaces"), key="density_view", horizontal=True) == "surfaces"
    n_panels = v2.slider("sanitized draws shown", 1, MAX_PANELS_2D, key="density_panels")
    return View(surface=surface, n_panels=n_panels)
