"""AppTest: the Principal components page driven like a user (every control, the Awan et al.
simulation, centring by a committed mean, bad input), with the numbers on screen checked
against fdp_core.releases.pca for the same demo seed and every figure checked by plotly's validator."""

import shlex
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

pca = pytest.importorskip("fdp_core.releases.pca", reason="the private PCA library (fdp_core.releases.pca) is not available")

from fdp_core.data.loading import DATA_DEPENDENT_TAU, from_arrays, load_curves  # noqa: E402
from fdp_ui.plots import ANALYST_LABEL  # noqa: E402
from fdp_ui.state import EXAMPLE_FILE, Dataset  # noqa: E402
from plotly_json import plotly_array  # noqa: E402
from test_release_flow import commit  # noqa: E402
from chart_specs import chart_figures, chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
SEED = 42  # the sidebar's default demo seed
SALT = 40  # pages/components.py: preview draw i uses the sidebar generator with salt 40 + i
EXAMPLE = load_curves(EXAMPLE_FILE)
SIDEBAR = dict(kernel="matern52", rho=0.1, nu=None, epsilon=1.0, tau=1.0)  # sidebar defaults


def _page(dataset: Dataset | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    if dataset is not None:
        at.session_state["dataset"] = dataset
    at.run()
    at.switch_page("pages/components.py")
    at.run()
    _ok(at)
    return at


def _ok(at) -> None:
    assert not at.exception, at.exception


def _set(at, kind: str, key: str, value) -> AppTest:
    getattr(at, kind)(key=key).set_value(value)
    at.run()
    _ok(at)
    return at


def _errors(at) -> str:
    return " | ".join(e.value for e in _problems(at))


def _problems(at) -> list:
    """Error boxes other than a red accuracy verdict (fdp_core/explore/verdict.py colours those)."""
    return [e for e in at.error if not e.value.startswith("Not useful at this epsilon")]


def _charts(at) -> list[dict]:
    specs = chart_figures(at)
    for spec in specs:
        go.Figure(spec)  # plotly's validator: the page builds its specs without it, for speed
    return specs


def _metrics_table(at):
    tables = [d.value for d in at.dataframe if "variance ratio" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def _expected(fd, draws: int, **settings) -> list:
    s = pca.PcaSettings(**{**SIDEBAR, **settings})
    return [pca.private_pca(fd, s, np.random.default_rng([SEED, SALT + i])) for i in range(draws)]


def _check_numbers(at, expected: list) -> None:
    table = _metrics_table(at)
    assert len(table) == len(expected)
    np.testing.assert_array_equal(table["variance ratio"], [r.variance_ratio for r in expected])
    np.testing.assert_array_equal(table["subspace distance"], [r.subspace_distance for r in expected])
    np.testing.assert_array_equal(table["acceptance rate"], [r.diagnostics["acceptance_rate"] for r in expected])
    metric = {m.label: m.value for m in at.metric}
    assert metric["variance ratio (draw 1)"] == f"{expected[0].variance_ratio:.4g}"
    assert metric["subspace distance (draw 1)"] == f"{expected[0].subspace_distance:.4g}"


def _open_diagnostics(at) -> AppTest:
    """The sampler diagnostics are a lazy expander (fdp_ui/layout.py): built only while open."""
    at.session_state["pca_diagnostics_open"] = True
    at.run()
    _ok(at)
    return at


def test_default_page_matches_fdp_core_and_labels_the_analyst_view():
    at = _page()
    assert not any("Acceptance rate" in m.value for m in at.markdown)  # diagnostics closed by default
    assert len(_charts(at)) == 3
    _open_diagnostics(at)
    assert not _problems(at)
    expected = _expected(EXAMPLE, 3, k=1, basis="kernel")
    _check_numbers(at, expected)
    first = expected[0]
    assert any(c.value.startswith(f"p = **{first.p}**: smallest p explaining") for c in at.caption)
    assert any("Guarantee: epsilon-DP" in i.value for i in at.info)
    assert any(pca.FLOATING_POINT_NOTE in c.value for c in at.caption)
    assert any("not private (analyst-side diagnostic)" in m.value for m in at.markdown)

    components, perturbation, scree = _charts(at)
    traces = {t["name"]: t for t in components["data"]}
    np.testing.assert_allclose(plotly_array(traces[ANALYST_LABEL]["y"]), first.nonprivate_components[:, 0])
    # Draw 1 is shown sign-aligned to the non-private component (display only).
    shown = plotly_array(traces["private draw 1"]["y"])
    sign = np.sign(first.coefficients[:, 0] @ first.nonprivate_coefficients[:, 0])
    np.testing.assert_allclose(shown, sign * first.components[:, 0])
    assert shown @ first.nonprivate_components[:, 0] >= 0
    # mean +/- 2 sd x component around the analyst-view sample mean, sd from the library's scree.
    lines = {t["name"]: plotly_array(t["y"]) for t in perturbation["data"]}
    mean = EXAMPLE.data_matrix.mean(axis=0)
    np.testing.assert_allclose(lines["sample mean (analyst view: do not publish)"], mean)
    np.testing.assert_allclose(lines["mean + 2 sd x private component"],
                               mean + 2 * first.tau * np.sqrt(first.scree[0]) * shown)
    np.testing.assert_allclose(plotly_array(scree["data"][0]["y"]), first.explained_variance_ratio[:20])
    assert "analyst view" in scree["layout"]["title"]["text"]
    assert any(f"Acceptance rate of the rejection sampler (draw 1): **{first.diagnostics['acceptance_rate']:.4g}**"
               in m.value for m in at.markdown)


def test_fourier_basis_p_k_gamma_draws_and_the_deflation_split():
    at = _page()
    _set(at, "radio", "pca_basis", "fourier")
    assert at.number_input(key="pca_p").value == 13  # the library's rule on the 27-point grid
    _set(at, "number_input", "pca_p", 10)
    _set(at, "slider", "pca_k", 3)
    _set(at, "number_input", "pca_gamma", 0.0)
    _set(at, "slider", "pca_draws", 2)
    assert not _problems(at), _errors(at)
    _check_numbers(at, _expected(EXAMPLE, 2, k=3, basis="fourier", p=10, gamma=0.0, sampler="deflation"))
    split = next(d.value for d in at.dataframe if "eps_1" in d.value.columns)
    np.testing.assert_allclose(split.iloc[0].to_numpy(dtype=float), [1 / 3] * 3)
    assert any("exact: sequential deflation" in o for o in at.radio(key="pca_sampler").options)
    assert len(_charts(at)[0]["layout"]["annotations"]) == 3  # one panel per component

    _set(at, "radio", "pca_split", "custom")
    _set(at, "number_input", "pca_w2", 2.0)
    expected = _expected(EXAMPLE, 2, k=3, basis="fourier", p=10, gamma=0.0, sampler="deflation",
                         epsilon_split=(0.25, 0.5, 0.25))
    _check_numbers(at, expected)
    assert any("split as eps_1 = 0.25, eps_2 = 0.5, eps_3 = 0.25" in i.value for i in at.info)
    _open_diagnostics(at)
    rates = ", ".join(f"v_{j}: {a:.4g}" for j, a in enumerate(expected[0].diagnostics["acceptance_rates"], 1))
    assert any(rates in m.value for m in at.markdown)


def test_gibbs_is_labelled_approximate_with_trace_burn_in_and_thinning():
    at = _page()
    _set(at, "slider", "pca_k", 2)
    # The Gibbs controls appear with the sampler; set them first so no 2000-sweep chain runs here.
    for key, value in {"pca_sweeps": 200, "pca_burn_pct": 20, "pca_thin": 5}.items():
        at.session_state[key] = value
    _set(at, "radio", "pca_sampler", "gibbs")
    assert at.slider(key="pca_sweeps").value == 200 and at.slider(key="pca_burn_pct").value == 20
    assert at.number_input(key="pca_thin").value == 5
    _set(at, "slider", "pca_draws", 10)  # capped: each Gibbs draw is a full chain
    assert not _problems(at), _errors(at)
    assert len(_charts(at)) == 3  # the trace is in the diagnostics expander, closed by default
    _open_diagnostics(at)
    assert "approximate DP" in at.radio(key="pca_sampler").options[1]
    expected = _expected(EXAMPLE, 3, k=2, basis="kernel", sampler="gibbs", gibbs_sweeps=200, gibbs_burn_in=40,
                         gibbs_thin=5)
    _check_numbers(at, expected)
    assert any(w.value.startswith("**Approximate DP**") for w in at.warning)
    assert any(m.value.startswith("**Approximate DP.**") and "200 sweeps, burn-in 40, thin 5" in m.value
               for m in at.markdown)
    charts = _charts(at)
    assert len(charts) == 4
    assert all("(approximate DP)" in t["name"] for t in charts[0]["data"] if "private draw" in t["name"])
    trace = charts[3]
    assert "approximate DP" in trace["layout"]["title"]["text"]
    assert trace["layout"]["shapes"][0]["x1"] == 40  # burn-in shaded
    np.testing.assert_allclose(plotly_array(trace["data"][0]["y"]), expected[0].diagnostics["trace"][:, 0])
    assert any("200 sweeps, burn-in 40, thin 5" in m.value for m in at.markdown)


def test_sample_mean_centring_and_tau_from_data_are_flagged_not_dp():
    at = _page()
    _set(at, "radio", "pca_centring", "sample-mean")
    assert "sample mean (NOT DP" in at.radio(key="pca_centring").options[2]
    assert pca.SAMPLE_MEAN_CENTRING in _errors(at)
    assert any(e.value.startswith("**NOT differentially private**") for e in at.error)
    _check_numbers(at, _expected(EXAMPLE, 3, centring="sample-mean"))
    _set(at, "checkbox", "g_tau_from_data", True)
    assert DATA_DEPENDENT_TAU in _errors(at)


def test_centring_by_a_mean_committed_on_the_release_page():
    at = _page()
    _set(at, "radio", "pca_centring", "released-mean")
    assert any("needs a committed mean release" in i.value for i in at.info)
    assert not chart_specs(at)  # no release without its centre

    # Committing a mean needs a declared public value range (Data page); tau stays the sidebar's.
    at.session_state["data_range_lo"], at.session_state["data_range_hi"] = -1.5, 1.5
    at.session_state["data_range_declared"] = True
    at.session_state["g_tau_from_range"] = False
    at.switch_page("pages/release.py").run()
    commit(at)  # the Mean page's default: a Gaussian mean
    _ok(at)
    release = at.session_state["fdp_releases"][0]
    at.switch_page("pages/components.py").run()
    _set(at, "radio", "pca_centring", "released-mean")
    assert not _problems(at), _errors(at)
    assert at.selectbox(key="pca_mean_id").value == release.id
    mean = release.table["value"].to_numpy()
    s = pca.PcaSettings(**SIDEBAR, centring="released-mean", value_range=(-1.5, 1.5))
    expected = [pca.private_pca(EXAMPLE, s, np.random.default_rng([SEED, SALT + i]), released_mean=mean)
                for i in range(3)]
    _check_numbers(at, expected)
    assert any(f"epsilon {release.entry.epsilon:.4g}" in c.value and "already in the ledger" in c.value
               for c in at.caption)
    lines = {t["name"]: plotly_array(t["y"]) for t in _charts(at)[1]["data"]}
    np.testing.assert_allclose(lines[f"released mean ({release.id})"], mean)


def test_awan_simulation_uses_the_papers_settings_and_shows_its_flag():
    at = _page()
    _set(at, "radio", "pca_source", "awan")
    assert at.radio(key="pca_basis").value == "fourier"
    assert at.number_input(key="pca_p").value == 40 and at.slider(key="pca_k").value == 1
    _set(at, "number_input", "pca_awan_n", 200)
    _set(at, "number_input", "pca_awan_seed", 3)
    assert pca.AWAN_RESCALING_FLAG in _errors(at)
    grid, values, flags = pca.simulate_fpca_awan(200, 3)
    fd = from_arrays(grid, values)
    s = pca.PcaSettings(**SIDEBAR, basis="fourier", p=40)
    expected = [pca.private_pca(fd, s, np.random.default_rng([SEED, SALT + i]), data_dependent_flags=flags)
                for i in range(3)]
    _check_numbers(at, expected)
    assert expected[0].data_dependent_flags == flags
    assert len(_charts(at)) == 3
    # Centring by a committed mean is refused for the simulation (no mean belongs to it).
    _set(at, "radio", "pca_centring", "released-mean")
    assert any("no committed mean belongs to it" in i.value for i in at.info)


@pytest.mark.parametrize("controls, message", [
    ((("radio", "pca_basis", "fourier"), ("number_input", "pca_p", 2), ("slider", "pca_k", 2)),
     "k = 2 components need a basis dimension p > k, got p = 2"),
    ((("number_input", "pca_gamma", -1.0),), "gamma (base-measure strength) must be a finite number >= 0, got -1.0"),
    ((("slider", "pca_k", 2), ("radio", "pca_split", "custom"), ("number_input", "pca_w1", 0.0)),
     "epsilon_split entry must be > 0, got 0.0"),
    ((("radio", "pca_basis", "fourier"), ("number_input", "pca_p", 500)),
     "a Fourier basis with p = 500 functions needs at least p + 1 = 501 grid points"),
])
def test_bad_input_shows_the_library_message_and_no_release(controls, message):
    at = _page()
    for kind, key, value in controls:
        _set(at, kind, key, value)
    assert message in _errors(at)
    assert _errors(at).startswith("Cannot compute the private components:")
    assert not chart_specs(at)


def test_fewer_curves_than_components_is_refused():
    tiny = from_arrays(EXAMPLE.grid_points, EXAMPLE.data_matrix[:2])
    at = _page(Dataset(tiny, "tiny upload", "upload"))
    _set(at, "slider", "pca_k", 3)
    assert "private PCA with k = 3 components needs at least k = 3 curves, the data have 2" in _errors(at)


def test_fresh_randomness_draws_anew_on_every_rerun():
    at = _page()
    _set(at, "radio", "g_seed_mode", "fresh randomness")
    first = _metrics_table(at)["variance ratio"].to_numpy()
    at.run()
    _ok(at)
    assert not np.array_equal(first, _metrics_table(at)["variance ratio"].to_numpy())


def _command_settings(at):
    from fdp_core.cli import build_parser
    from fdp_core.commands.release_pca import centring_of
    from fdp_core.settings_fields import settings_from_args

    if not at.session_state["pca_command_open"]:  # a lazy expander (fdp_ui/layout.py): built while open
        at.session_state["pca_command_open"] = True
        at.run()
    command = next(c.value for c in at.code if c.value.startswith("python -m fdp_core release pca"))
    args = build_parser().parse_args(shlex.split(command)[3:])
    return settings_from_args(pca.PcaSettings, args, centring=centring_of(args))


def test_command_line_expander_gives_the_settings_of_the_page():
    at = _page()
    _set(at, "radio", "pca_basis", "fourier")
    _set(at, "number_input", "pca_p", 9)
    _set(at, "slider", "pca_k", 2)
    _set(at, "radio", "pca_split", "custom")
    _set(at, "number_input", "pca_w1", 3.0)
    _set(at, "select_slider", "g_epsilon", 0.5)
    assert _command_settings(at) == pca.PcaSettings(**{**SIDEBAR, "epsilon": 0.5}, k=2, basis="fourier", p=9,
                                                    sampler="deflation", epsilon_split=(0.375, 0.125))
    _set(at, "radio", "pca_basis", "kernel")
    at.session_state["pca_sweeps"] = 100
    _set(at, "radio", "pca_sampler", "gibbs")
    _set(at, "number_input", "pca_thin", 4)
    assert _command_settings(at) == pca.PcaSettings(**{**SIDEBAR, "epsilon": 0.5}, k=2, sampler="gibbs",
                                                    gibbs_sweeps=100, gibbs_burn_in=10, gibbs_thin=4)


def test_a_declared_range_makes_its_centre_the_default_centring():
    """Safe default (issue 28): with a declared public range the page centres at its centre (free), not 'none'."""
    at = _page()
    assert at.radio(key="pca_centring").value == "none"  # nothing declared: nothing public to centre at
    at.session_state["data_range_lo"], at.session_state["data_range_hi"] = -1.5, 1.5
    at.session_state["data_range_declared"] = True
    at.session_state["g_tau_from_range"] = False  # tau stays the sidebar's 1.0
    at.run()
    _ok(at)
    assert at.radio(key="pca_centring").value == "public"
    _check_numbers(at, _expected(EXAMPLE, 3, centring="public", value_range=(-1.5, 1.5)))
    # The user's own choice is kept.
    _set(at, "radio", "pca_centring", "none")
    at.run()
    assert at.radio(key="pca_centring").value == "none"


def test_record_and_command_are_built_only_while_their_expanders_are_open():
    at = _page()
    assert len(at.json) == 0 and not any(c.value.startswith("python -m fdp_core") for c in at.code)
    at.session_state["pca_record_open"] = True
    at.run()
    _ok(at)
    (record,) = at.json
    assert '"epsilon"' in record.proto.body
    at.session_state["pca_record_open"] = False
    at.run()
    assert len(at.json) == 0


def _empty_columns(at) -> int:
    """Columns sent with nothing in them (an empty column is still an element the browser renders)."""
    def walk(node) -> int:
        children = getattr(node, "children", None)
        if not isinstance(children, dict):
            return 0
        empty = int(getattr(node, "type", None) == "column" and not children)
        return empty + sum(walk(child) for child in children.values())
    return walk(at.main)


def test_the_sampler_row_sends_only_the_columns_its_controls_fill():
    at = _page()
    assert _empty_columns(at) == 0  # k = 1, exact: the sampler radio alone, no columns
    _set(at, "slider", "pca_k", 2)  # sequential deflation: the sampler and the epsilon split
    assert _empty_columns(at) == 0
    _set(at, "radio", "pca_split", "custom")  # and the weights
    assert _empty_columns(at) == 0
    assert [w.key for w in at.number_input if w.key.startswith("pca_w")] == ["pca_w1", "pca_w2"]
    for key, value in {"pca_sweeps": 200, "pca_burn_pct": 20, "pca_thin": 5}.items():
        at.session_state[key] = value
    _set(at, "radio", "pca_sampler", "gibbs")  # the chain's three controls fill the row
    assert _empty_columns(at) == 0
    assert at.slider(key="pca_sweeps").value == 200 and at.number_input(key="pca_thin").value == 5
    _set(at, "radio", "pca_sampler", "exact")
    assert _empty_columns(at) == 0 and at.radio(key="pca_split").value == "custom"
