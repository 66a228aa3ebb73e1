"""Density page: private kernel density estimates (METHODS.md section 4).

The observations are a fixed per-curve feature of the current curves (or a numeric metadata
column), or a built-in example. Hall et al.'s Gaussian-process KDE ((epsilon, delta)-DP) and
ICLP-KDE (pure epsilon-DP) release the density on a public grid over a public box: 1-d
sanitized densities against the analyst-view KDE, 2-d heatmaps or surfaces.
"""

import hashlib
from dataclasses import asdict, replace

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.releases import kde
from fdp_core.releases.box import DEFAULT_GRID_SIZE, check_box
from fdp_core.errors import FdpError
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.data.features import extract_features, parse_feature, person_features
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.releases.postprocess import finish_density
from fdp_core.data.preprocess import identifier_columns, repeated_id_columns
from fdp_core.registry.kde import REGISTRY as KDE_REGISTRY
from fdp_core.registry.kde import kde_mechanism
from fdp_core.sensitivity import KDE_BOUNDS
from fdp_core.data.simulate import HALL_EXAMPLE, hall_mixture_points, mixture_2d_points, mixture_density
from fdp_core.settings_fields import command_line, page_defaults, page_keys, page_values
from fdp_core.explore.verdict import density_verdict
from fdp_ui import density_defaults, kde_plots, plots, sidebar, state, verdict_box

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
# The mechanisms and how each is shown come from the registry (fdp_core/registry/kde.py).
COMPARE_ALL = "both"  # the menu choice that shows every mechanism side by side (not a mechanism)
MECHANISMS = {**{name: m.menu for name, m in KDE_REGISTRY.items()},
              COMPARE_ALL: "compare both" if len(KDE_REGISTRY) == 2 else "compare all"}
# The KdeSettings fields one widget holds (mechanism, bandwidth, Silverman, calibration): keys and
# defaults from the field metadata (fdp_core/releases/kde.py). Box, grid and bound are composed below.
PAGE = "density"
KEYS = page_keys(kde.KdeSettings, PAGE)
GRID_SLIDERS = {1: ("density_grid_1d", 16, 1000, 8), 2: ("density_grid_2d", 8, 96, 4)}
MAX_DRAWS_1D, MAX_PANELS_2D = 30, 3
# Monte Carlo draws behind the 95% radii: a 64 x 64 noise field costs 16x a 512-point curve.
RADIUS_DRAWS = {1: 4000, 2: 1000}
BOX_FLAG = ("box read off the data (min/max of the feature): the release is not differentially private")
HELP = {
    "source": "A per-curve feature must be a fixed functional (one curve moves one observation), so the KDE "
              "sensitivities apply with one curve = one individual.",
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
    "literature": "Hall et al.'s setting: epsilon = 1, delta = 0.1, h = 0.1, a 1000-point grid on [0, 1], "
                  "their sqrt 2 bound with classical calibration. Sets the sidebar's epsilon and delta.",
}

st.title("Density (private KDE)")
ds = state.current()
g = sidebar.render()
fd = ds.fd
domain = fd.domain


def _box_keys(d: int) -> list[tuple[str, str]]:
    return [(f"density_lo{a}", f"density_hi{a}") for a in range(1, d + 1)]


def _bound_key(entry) -> str:
    """Each mechanism has its own bound selector (the page compares them side by side)."""
    return f"density_{entry.page_key}_bound"


def _apply_source_defaults() -> None:
    """Built-in examples start from their design's box, bandwidth and grid; data features from an
    empty box (the user types a public one)."""
    ss = st.session_state
    example = EXAMPLES.get(ss["density_source"])
    for a, (lo_key, hi_key) in enumerate(_box_keys(2)):
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


def _apply_literature() -> None:
    ex = HALL_EXAMPLE
    sidebar.apply({"g_epsilon": ex["epsilon"], "g_delta": ex["delta"]})
    ss = st.session_state
    ss["density_lo1"], ss["density_hi1"] = ex["box"][0]
    ss.update({"density_h_rule": False, KEYS["data_dependent_bandwidth"]: False, KEYS["bandwidth"]: ex["bandwidth"],
               "density_grid_1d": ex["grid_size"], KEYS["calibration"]: ex["calibration"],
               KEYS["mechanism"]: ex["mechanism"], _bound_key(kde_mechanism(ex["mechanism"])): ex["bound"]})


def _suggest_box(points: np.ndarray) -> None:
    x = points.reshape(len(points), -1)
    for a, (lo_key, hi_key) in enumerate(_box_keys(x.shape[1])):
        lo, hi = float(x[:, a].min()), float(x[:, a].max())
        if not lo < hi:  # a constant feature: any box around the value will do
            lo, hi = lo - 0.5, hi + 0.5
        st.session_state[lo_key], st.session_state[hi_key] = lo, hi
    st.session_state["density_box_flag"] = True


def _numeric_columns() -> list[str]:
    """Numeric metadata columns, id-like ones (the person column, columns with repeated ids) last:
    an id is never the default feature."""
    ids = {g.person_column, *repeated_id_columns(fd.metadata)}
    numeric = [str(c) for c in fd.metadata.columns if pd.api.types.is_numeric_dtype(fd.metadata[c])]
    return sorted(numeric, key=lambda c: c in ids)


def _page_defaults() -> dict:
    a, b = domain
    # Safe default: never an id or person column (fdp_core.data.preprocess.identifier_columns).
    ids = identifier_columns(fd.metadata, g.person_column)
    numeric = [c for c in _numeric_columns() if c not in ids]
    columns = [str(c) for c in fd.metadata.columns if str(c) not in ids]
    column = numeric[0] if numeric else (columns[0] if columns else None)
    return {**page_defaults(kde.KdeSettings, PAGE),
            "density_dim": "1-d", "density_kind_1": "value", "density_kind_2": "value",
            "density_t0_1": a + 0.25 * (b - a), "density_t0_2": a + 0.75 * (b - a),
            "density_u_1": a, "density_v_1": b, "density_u_2": a, "density_v_2": a + 0.5 * (b - a),
            "density_col_1": column, "density_col_2": column,
            "density_box_flag": False, "density_h_rule": True,
            "density_grid_1d": DEFAULT_GRID_SIZE[1], "density_grid_2d": DEFAULT_GRID_SIZE[2],
            **{_bound_key(m): kde.KdeSettings.bound for m in KDE_REGISTRY.values()},
            "density_style": "draws", "density_draws": 10,
            "density_view": "heatmaps", "density_panels": 2, "density_seed": 0,
            "density_n_hall": EXAMPLES["hall"]["n"], "density_n_mixture2d": EXAMPLES["mixture2d"]["n"],
            **{key: None for pair in _box_keys(2) for key in pair}}


if "density_source" not in st.session_state or (
        st.session_state.get("density_source_for") != ds.label and ds.kind != "example"):
    # The user's own curves (an upload or a simulation) are what the page opens on, also when
    # the page was first visited with the built-in example.
    st.session_state["density_source"] = "curves" if ds.kind != "example" else "hall"
    _apply_source_defaults()
st.session_state["density_source_for"] = ds.label
# Re-assigning every stored value keeps the page's choices when the user visits other pages.
for key, value in _page_defaults().items():
    st.session_state[key] = st.session_state.get(key, value)
for key in ("density_t0_1", "density_t0_2", "density_u_1", "density_v_1", "density_u_2", "density_v_2"):
    if not domain[0] <= st.session_state[key] <= domain[1]:  # a new data set with another domain
        st.session_state[key] = _page_defaults()[key]
st.session_state["density_source"] = st.session_state["density_source"]


@st.cache_data(show_spinner=False, max_entries=16)
def _example_points(source: str, n: int, seed: int) -> np.ndarray:
    return EXAMPLES[source]["points"](n, seed)


@st.cache_resource(show_spinner="Computing the estimate and the sensitivity...", max_entries=32)
def _plan(points_key: str, settings_items: tuple, _points: np.ndarray) -> kde.KdeRelease:
    """The planned release (estimate, sensitivity, noise operator), shared by reruns that change
    only the view or the number of draws. Keyed by a digest of the points, not by the data set."""
    return kde.plan_kde_release(_points, kde.KdeSettings(**dict(settings_items)))


def _noise_scale(release: kde.KdeRelease) -> float:
    return kde_mechanism(release.mechanism).noise_scale(release)


def _noise_shape(release: kde.KdeRelease) -> tuple:
    """Everything the noise depends on except its overall scale.

    Hall: sigma G with G fixed by the grid and h. ICLP: Laplace scales Delta_1 sqrt(lambda_l) /
    epsilon, the lambda_l fixed by the kernel and the grid, divided by the box volume.
    """
    return kde_mechanism(release.mechanism).noise_shape(release)


@st.cache_data(show_spinner="Computing the 95% error radii (Monte Carlo, once per noise shape)...", max_entries=64)
def _unit_radii(noise_shape: tuple, _release: kde.KdeRelease) -> tuple[float, float]:
    scale = _noise_scale(_release)
    draws = RADIUS_DRAWS[_release.d]
    return (_release.l2_error_radius(0.95, draws) / scale, _release.sup_error_radius(0.95, draws) / scale)


def _radii(release: kde.KdeRelease) -> tuple[float, float]:
    """95% L2 and sup radii from fdp_core's Monte Carlo, once per noise shape.

    The noise is its scale times a field whose law does not depend on epsilon, delta, n, the
    bound or the calibration, and the radii use fixed seeds, so they are exactly proportional
    to the scale: an epsilon change costs no new Monte Carlo.
    """
    l2, sup = _unit_radii(_noise_shape(release), release)
    scale = _noise_scale(release)
    return l2 * scale, sup * scale


def _feature_widgets(a: int, container) -> str:
    """Widgets of feature ``a`` (1 or 2); returns its spec string for fdp_core.data.features."""
    lo, hi = domain
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
        numeric = _numeric_columns()
        name = container.selectbox("column", [str(c) for c in fd.metadata.columns], key=f"density_col_{a}",
                                   accept_new_options=True,
                                   help="A numeric metadata column of the file (one value per curve). Numeric "
                                        f"columns here: {', '.join(numeric) or 'none'}.")
        return f"column:{name or ''}"
    container.caption("L2 norm over the grid rescaled to [0, 1] (the norm tau bounds)" if kind == "l2norm"
                      else "largest value of each curve on its grid")
    return kind


def _points_from_curves() -> tuple[np.ndarray, tuple[str, ...], str]:
    d = 1 if st.radio("dimension", ("1-d", "2-d"), key="density_dim", horizontal=True) == "1-d" else 2
    columns = st.columns(2)
    specs = [_feature_widgets(a, columns[a - 1]) for a in range(1, d + 1)]
    try:
        features = tuple(parse_feature(spec) for spec in specs)
        points, features = extract_features(fd, features)
    except FdpError as exc:
        st.error(f"Cannot compute the feature: {exc}")
        st.stop()
    spec = ",".join(f.spec for f in features)
    if not g.person_column:  # with a person column the caption below says how the curves are grouped
        st.caption(f"{fd.n} curves -> {fd.n} observations of `{spec}` (one per curve, one curve = one individual).")
    return points, tuple(f.label for f in features), spec


def _points_from_example(source: str) -> tuple[np.ndarray, tuple[str, ...]]:
    example = EXAMPLES[source]
    c1, c2, c3 = st.columns([1, 1, 2])
    n = int(c1.number_input("n (observations)", min_value=2, max_value=200_000, step=50, key=f"density_n_{source}"))
    seed = int(c2.number_input("data seed", min_value=0, step=1, key="density_seed"))
    if example["literature"]:
        c3.button("literature settings", key="density_literature", on_click=_apply_literature, help=HELP["literature"])
    c3.caption(example["caption"])
    return _example_points(source, n, seed), example["axes"]


# --------------------------------------------------------------------------- observations

source = st.radio("observations", tuple(SOURCES), key="density_source", format_func=SOURCES.get, horizontal=True,
                  on_change=_apply_source_defaults, help=HELP["source"])
spec = None
if source == "curves":
    points, axis_labels, spec = _points_from_curves()
else:
    points, axis_labels = _points_from_example(source)
d = len(axis_labels)
n = len(points)
points_key = hashlib.sha1(np.ascontiguousarray(points).tobytes()).hexdigest() + f":{points.shape}"

# --------------------------------------------------------------------------- box, bandwidth, grid

st.markdown("**Public box, bandwidth and grid**")
if source == "curves" and density_defaults.prefill_box(
        st.session_state, _box_keys(d), [st.session_state[f"density_kind_{a}"] for a in range(1, d + 1)],
        g.value_range):
    st.caption("Box: the public value range declared on the Data page (the feature is a curve value).")
box_columns = st.columns([1, 1] * d + ([2] if source == "curves" else []))
for a, (lo_key, hi_key) in enumerate(_box_keys(d)):
    name = axis_labels[a] if d == 1 else f"axis {a + 1}"
    box_columns[2 * a].number_input(f"lower limit ({name})", format="%.4g", key=lo_key, help=HELP["box"])
    box_columns[2 * a + 1].number_input(f"upper limit ({name})", format="%.4g", key=hi_key, help=HELP["box"])
box_flag = False
if source == "curves":
    box_columns[-1].button("suggest box from the data (not DP)", key="density_suggest_box", on_click=_suggest_box,
                           args=(points,), help=HELP["suggest"])
    box_flag = box_columns[-1].checkbox("box read off the data (not DP)", key="density_box_flag",
                                        help=HELP["box_flag"])
raw_box = [(st.session_state[lo_key], st.session_state[hi_key]) for lo_key, hi_key in _box_keys(d)]
if any(v is None for pair in raw_box for v in pair):
    st.info("Type the public box: limits the feature cannot leave, known without looking at the data (e.g. "
            "the measurement range). The suggest button fills in the data's range, which is not DP.")
    st.stop()
try:
    box = check_box(raw_box, d)
except FdpError as exc:
    st.error(f"Cannot use this box: {exc}")
    st.stop()
if source == "curves" and (g.person_column or g.value_range):
    # The unit of privacy is a person: each curve's feature is clipped to the box, then a person's
    # features are averaged into one observation (features.person_features, as the commit does).
    try:
        observed = person_features(fd, spec, box, person_column=g.person_column, value_range=g.value_range)
    except FdpError as exc:
        st.error(f"Cannot group the curves by person: {exc}")
        st.stop()
    points = observed.points
    n = len(points)
    points_key = hashlib.sha1(np.ascontiguousarray(points).tobytes()).hexdigest() + f":{points.shape}"
    if g.person_column:
        st.caption(f"{observed.n_curves} curves of {observed.n_persons} persons (column '{g.person_column}') -> "
                   f"{n} observations: each person's features, clipped to the box, averaged.")

mechanism = st.session_state[KEYS["mechanism"]]
shown = tuple(KDE_REGISTRY) if mechanism == COMPARE_ALL else (mechanism,)


def _reads(name: str) -> bool:
    """Whether a shown mechanism reads this KdeSettings field (else its widget is disabled)."""
    return any(name in kde_mechanism(m).fields for m in shown)


c1, c2, c3, c4 = st.columns(4)
h_rule = c1.checkbox("default bandwidth rule", key="density_h_rule", help=HELP["h_rule"],
                     disabled=not _reads("bandwidth"))
silverman = c3.checkbox("Silverman h from the data (not DP)", key=KEYS["data_dependent_bandwidth"],
                        help=HELP["silverman"], disabled=not _reads("data_dependent_bandwidth"))
bandwidth_input = c2.number_input("bandwidth h", format="%.4g", step=0.01, key=KEYS["bandwidth"],
                                  help=HELP["bandwidth"], disabled=h_rule or silverman or not _reads("bandwidth"))
default_h = density_defaults.suggested_bandwidth(box, n)
c1.caption(f"rule: h = {default_h:.4g} (Silverman's rule for values spread over the box; data-free)")
grid_key, grid_min, grid_max, grid_step = GRID_SLIDERS[d]
grid_size = c4.slider("grid points" + (" per axis" if d == 2 else ""), grid_min, grid_max, step=grid_step,
                      key=grid_key, help=HELP["grid"])
bandwidth = None if silverman else (default_h if h_rule else bandwidth_input)

# --------------------------------------------------------------------------- mechanism

st.markdown("**Mechanism**")
# One bound selector per mechanism, the calibration next to the first mechanism that reads it.
controls = iter(st.columns([2] + [1] * (len(KDE_REGISTRY) + 1)))
mechanism = next(controls).radio("mechanism", tuple(MECHANISMS), key=KEYS["mechanism"], format_func=MECHANISMS.get,
                                 horizontal=True, label_visibility="collapsed")
bounds, calibration_drawn = {}, False
for name, entry in KDE_REGISTRY.items():
    bounds[name] = next(controls).radio(entry.bound_control, KDE_BOUNDS, key=_bound_key(entry),
                                        horizontal=True, format_func=entry.bound_choices.get, help=entry.bound_help,
                                        disabled=name not in shown)
    if not calibration_drawn and "calibration" in entry.fields:
        next(controls).radio("calibration", CALIBRATIONS, key=KEYS["calibration"], horizontal=True,
                             help=HELP["calibration"], disabled=not _reads("calibration"))
        calibration_drawn = True


def _settings(mech: str, bound: str | None = None) -> tuple:
    """The settings of one mechanism as hashable items: the page's values of the fields it reads
    (the others keep their defaults, so one setting is one cache entry and one command line)."""
    values = {**g.fields_of(kde.KdeSettings), **page_values(kde.KdeSettings, PAGE, st.session_state),
              "bandwidth": None if bandwidth is None else float(bandwidth)}  # the rule's h, the typed h or None
    settings = kde.KdeSettings(mechanism=mech, box=box, epsilon=g.epsilon, grid_size=int(grid_size),
                               bound=bound or bounds[mech], **{f: values[f] for f in kde_mechanism(mech).fields})
    return tuple(asdict(settings).items())


for mech in shown:
    caption = kde_mechanism(mech).settings_caption(kde.KdeSettings(**dict(_settings(mech))), d)
    if caption:
        st.caption(caption)

v1, v2 = st.columns(2)
if d == 1:
    style = v1.radio("show", ("draws", "band"), key="density_style", horizontal=True,
                     help="Several independent sanitized densities, or their pointwise 5-95% band (200 draws).")
    n_draws = v2.slider("sanitized draws" + (" per mechanism" if mechanism == COMPARE_ALL else ""), 1, MAX_DRAWS_1D,
                        key="density_draws", disabled=style == "band")
else:
    surface = v1.radio("view", ("heatmaps", "surfaces"), key="density_view", horizontal=True) == "surfaces"
    n_panels = v2.slider("sanitized draws shown", 1, MAX_PANELS_2D, key="density_panels")


releases = {}
for mech in shown:
    try:
        releases[mech] = _plan(points_key, _settings(mech), points)
    except FdpError as exc:
        entry = kde_mechanism(mech)
        hint = entry.error_hint(kde.KdeSettings(**dict(_settings(mech))))
        st.error(f"{entry.short}: cannot compute this density: {str(exc).rstrip('.')}.{hint}")
if not releases:
    st.stop()

# --------------------------------------------------------------------------- flags and clipping

first = next(iter(releases.values()))
state.note_view(NONPRIVATE_VIEWS["density_estimate"])
flags = ([BOX_FLAG] if box_flag else []) + [f for r in releases.values() for f in r.data_dependent_flags]
for flag in flags:
    st.error(f"Data-dependent (not DP): {flag}.")
share = first.n_clipped_box / first.n
clip_text = (f"n = {first.n} observations; {first.n_clipped_box} ({share:.0%}) lay outside the box "
             f"{' x '.join(f'[{lo:g}, {hi:g}]' for lo, hi in box)} and were moved to its boundary. The sidebar's tau "
             "does not apply: the box bounds each observation.")
(st.warning if share > 0.05 else st.caption)(clip_text + (" That many piles mass on the box's edges: widen "
                                                           "the box." if share > 0.05 else ""))


# --------------------------------------------------------------------------- figures

def _privacy_text(release) -> str:
    gq = release.guarantee  # delta is 0 in a pure epsilon-DP guarantee
    return f"epsilon = {gq.epsilon:g}, delta = {gq.delta:g}"


def _title(release) -> str:
    h = f", h = {release.bandwidth:.3g}" if release.bandwidth is not None else ""
    return f"{kde_mechanism(release.mechanism).short}, {_privacy_text(release)}{h}"


def _rng(mech: str):
    return g.rng(kde_mechanism(mech).preview_salt)


if d == 1:
    example = EXAMPLES.get(source)
    truth = example["truth"](first.grid) if example is not None and example["truth"] is not None else None
    # Free post-processing, as every release gets it: clipped at 0 and renormalised (fdp_core/releases/postprocess.py).
    draws = {m: finish_density(r.sample(_rng(m), max(n_draws, 200) if style == "band" else n_draws), r.weights,
                               kde.KdeSettings()).values
             for m, r in releases.items()}
    y_range = kde_plots.common_range(*draws.values(), *(r.density for r in releases.values()),
                                     *([truth] if truth is not None else [])) if len(releases) > 1 else None
    columns = st.columns(len(releases))
    for column, (mech, release) in zip(columns, releases.items()):
        fig = kde_plots.density_figure(release.grid, draws[mech], release.density, title=_title(release),
                                       x_title=axis_labels[0], style=style, truth=truth,
                                       color=kde_mechanism(mech).color, y_range=y_range)
        column.plotly_chart(fig, width="stretch", key=f"density_figure_{mech}")
else:
    for mech, release in releases.items():
        sanitized = finish_density(release.sample(_rng(mech), n_panels), release.weights, kde.KdeSettings()).values
        panels = [(plots.ANALYST_LABEL.replace(" (", "<br>("), release.density)]
        panels += [(f"sanitized draw {i + 1}", values) for i, values in enumerate(sanitized)]
        st.markdown(f"**{_title(release)}**")
        st.plotly_chart(kde_plots.density_panels_figure(release.grids, panels, x_titles=axis_labels, surface=surface),
                        width="stretch", key=f"density_figure_{mech}")
    st.caption("One colour scale per row, shared by the analyst view and the sanitized draws.")
st.caption("Sanitized densities are post-processed as every release is (free: privacy unchanged): negative values "
           "set to 0, then rescaled to integrate to 1 over the box. The error radii below are those of the noise "
           "before this step, which can only shrink the negative part.")

# --------------------------------------------------------------------------- accuracy and guarantee

radii = {m: _radii(r) for m, r in releases.items()}
units = "box units" if source != "curves" else "the feature's units"
for mech, release in releases.items():
    l2, sup = radii[mech]
    # The colour is the verdict's (fdp_core/explore/verdict.py): the radius against the uniform density's norm.
    v = density_verdict(release, l2)
    verdict_box.render(v, extra=f"({kde_mechanism(mech).short})", link_tradeoffs=False)  # that tool is the mean's
    st.markdown(f"**{kde_mechanism(mech).short}**: with 95% probability the sanitized density is within **{l2:.4g}** "
                f"of the non-private estimate in L2(T) ({units}); the largest pointwise deviation stays below "
                f"**{sup:.4g}** with 95% probability. Expected squared L2 error, for formulas: "
                f"{release.expected_sq_l2_error:.4g}.")
st.caption(f"Expected squared L2 error in closed form (Hall: sigma^2 times the trace of the noise covariance under "
           f"the grid quadrature; ICLP: sum 2 b_l^2 over the box volume). Radii: fdp_core's Monte Carlo "
           f"({RADIUS_DRAWS[d]} draws, fixed seed). Previews: idealised real-arithmetic DP (numpy generator).")


def _show_table(rows: list[dict], key: str) -> None:
    """A small table with numbers shown to 4 significant digits (pre-formatted: a pandas Styler
    costs about 10 ms per table on every rerun)."""
    def cell(v):
        return f"{v:.4g}" if isinstance(v, (float, np.floating)) else v
    st.dataframe(pd.DataFrame([{k: cell(v) for k, v in row.items()} for row in rows]), hide_index=True,
                 width="stretch", key=key)


def _sensitivity_table(release) -> None:
    gq = release.guarantee
    mech = release.mechanism
    st.markdown(f"**Sensitivity** ({gq.sensitivity_norm})")
    _show_table([{"bound": kde_mechanism(mech).bound_names[b], "sensitivity": gq.sensitivity_for(b),
                  "in use": "yes" if b == gq.details["sensitivity_bound"] else ""} for b in KDE_BOUNDS],
                key=f"density_sensitivity_{mech}")
    st.caption(f"In use: {gq.bound_label}.")


def _noise_table(release) -> None:
    mech = release.mechanism
    entry = kde_mechanism(mech)
    table = entry.noise_table(release, lambda bound: _plan(points_key, _settings(mech, bound), points))
    st.markdown(table.title)
    _show_table(table.rows, key=f"density_noise_{entry.page_key}")
    st.caption(table.caption, help=table.help)


def _guarantee(release) -> None:
    gq = release.guarantee
    dp = gq.details["differentially_private"] and not box_flag
    statement = (f"{gq.privacy} with {_privacy_text(release)}, for neighbouring data sets that "
                 f"{gq.details['neighbouring']}; sensitivity {gq.sensitivity:.4g} ({gq.details['sensitivity_bound']} "
                 "bound).")
    (st.info if dp else st.error)(("Guarantee: " if dp else "NOT differentially private (data-dependent choices "
                                   "above). Nominal guarantee: ") + statement)
    with st.expander("guarantee record (plain data, as exported)"):
        st.json({**gq.record(), "data_dependent_flags": list(gq.details["data_dependent_flags"])
                 + ([BOX_FLAG] if box_flag else []),
                 "differentially_private": dp})


def _details(release) -> None:
    left, right = st.columns(2)
    with left:
        _sensitivity_table(release)
    with right:
        _noise_table(release)
    _guarantee(release)


if len(releases) > 1:
    rows = [{"mechanism": kde_mechanism(m).short, "privacy": _privacy_text(r), "sensitivity in use": r.sensitivity,
             "noise scale": kde_mechanism(m).noise_scale_text(r),
             "expected sq. L2 error": r.expected_sq_l2_error, "95% L2 radius": radii[m][0],
             "95% sup radius": radii[m][1]} for m, r in releases.items()]
    _show_table(rows, key="density_compare_table")
    st.caption("The two estimators differ (Gaussian bumps of width h vs the K^eta bumps of ICLP), so compare the "
               "pictures as well as the numbers: each error is against the mechanism's own non-private estimate.")
    for tab, (mech, release) in zip(st.tabs([f"{kde_mechanism(m).short} details" for m in releases]),
                                    releases.items()):
        with tab:
            _details(release)
else:
    _details(first)

if spec is not None:
    with st.expander("same release from the command line"):
        for mech in releases:
            # The page turns curves into observations itself; the command line does it from the
            # person column and the value range, so they go on it.
            settings = replace(kde.KdeSettings(**dict(_settings(mech))), person_column=g.person_column,
                               value_range=g.value_range)
            st.code(command_line("release kde", settings, inputs=(("--data", "FILE"), ("--feature", spec))),
                    language="bash")
        st.caption("FILE is the uploaded file; the CLI draws its own noise (fresh, or from --seed).")
