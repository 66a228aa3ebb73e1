"""Commit and export: budget refusal before any noise, the sampler's grid kept, nothing private leaks,
replay reproduces every parameter with fresh noise, the HTML report renders offline, the audit bites.

The exact sampler draws from OS entropy, so exported values differ between runs; every assertion
below holds for any draw (or fails with negligible probability where stated).
"""

import base64
import concurrent.futures
import io
import json
import math
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.explore import audit

from fdp_core.publish import commit, export
from fdp_core.budget.accounting import Ledger, cks_epsilon, compose
from fdp_core.cli import main
from fdp_core.data.loading import FunctionalData, from_arrays, load_curves, to_wide_csv
from fdp_core.errors import BudgetError, ParameterError
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.mean import MeanSettings, plan_mean_release
from fdp_core.mechanisms import discrete
from fdp_core.releases.postprocess import finish_density, finish_mean
from fdp_core.explore.risk import approx_dp_power, gdp_power

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
ARTIFACTS = ROOT / "artifacts"
MEAN_CASES = {
    "gaussian": MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-6, tau=1.0, phi=1e-2),
    "iclp-qr": MeanSettings(mechanism="iclp-qr", epsilon=1.0, tau=1.0, psi=1e-3),
    "iclp-ar": MeanSettings(mechanism="iclp-ar", epsilon=1.0, tau=1.0, eta=1.5, psi=3e-2),
    "frl": MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8),
    "bernstein": MeanSettings(mechanism="bernstein", epsilon=1.0, K=12, lo=-2.0, hi=2.0),
}


def full_precision_curves(n=40, m=33, seed=11) -> FunctionalData:
    """Curves whose every value has ~17 significant digits, so no exported number equals one by chance."""
    rng = np.random.default_rng(seed)
    grid = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0.02, 0.98, m - 2)]))
    basis = np.array([np.sin((j + 1) * np.pi * grid) / (j + 1) for j in range(6)])
    values = 0.3 + rng.normal(size=(n, 6)) @ basis * 0.2 + 0.01 * rng.normal(size=(n, m))
    return from_arrays(grid, values, name="synthetic")


@pytest.fixture
def spy(monkeypatch):
    """Counts calls of the exact samplers and keeps what they returned."""
    calls = []
    for name in ("discrete_gaussian_release", "discrete_laplace_release"):
        real = getattr(discrete, name)

        def wrapped(*args, _real=real, _name=name, **kwargs):
            out = _real(*args, **kwargs)
            calls.append((_name, out[1]))
            return out

        monkeypatch.setattr(discrete, name, wrapped)
    return calls


@pytest.fixture
def forbid_sampling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the sampler was called for a refused release")

    monkeypatch.setattr(discrete, "discrete_gaussian_release", refuse)
    monkeypatch.setattr(discrete, "discrete_laplace_release", refuse)


# --------------------------------------------------------------------------- budget before noise

@pytest.mark.parametrize("mechanism", ["gaussian", "frl", "bernstein"])
def test_over_budget_release_is_refused_before_any_noise_and_records_nothing(mechanism, forbid_sampling):
    fd = load_curves(EXAMPLE)
    ledger = Ledger(0.5, 1e-5)
    before = json.dumps(ledger.to_dict())
    with pytest.raises(BudgetError, match="release refused, nothing recorded"):
        export.commit_mean(ledger, fd, MEAN_CASES[mechanism])
    assert ledger.entries == [] and json.dumps(ledger.to_dict()) == before


def test_split_share_and_delta_refusals_draw_nothing(forbid_sampling):
    fd = load_curves(EXAMPLE)
    pure_budget = Ledger(5.0, 0.0)  # a pure-DP budget has no delta for a Gaussian release
    with pytest.raises(BudgetError):
        export.commit_mean(pure_budget, fd, MEAN_CASES["gaussian"])
    split = Ledger(5.0, 1e-4, split={"mean": 1.0, "kde": 0.0, "pca": 0.0})
    with pytest.raises(BudgetError, match="'kde' share"):
        export.commit_kde(split, fd, "l2norm", KdeSettings(mechanism="iclp", box=((0.0, 2.0),), epsilon=0.5))
    assert pure_budget.entries == [] and split.entries == []


def test_accepted_commit_draws_once_and_records_the_samplers_privacy_map(spy):
    fd = load_curves(EXAMPLE)
    ledger = Ledger(10.0, 1e-4)
    gaussian = export.commit_mean(ledger, fd, MEAN_CASES["gaussian"])
    assert len(spy) == 1 and spy[0][0] == "discrete_gaussian_release"
    noise = spy[0][1]
    plan = plan_mean_release(fd, MEAN_CASES["gaussian"])
    mu = plan.sensitivity / plan.sigma
    # The ledger holds OpenDP's rho (after inflation: at most mu^2/2), not Delta/sigma.
    assert gaussian.entry.curve == "zcdp" and gaussian.entry.rho == noise.rho
    assert noise.rho <= mu**2 / 2 and noise.rho == pytest.approx(mu**2 / 2, rel=1e-6)
    assert gaussian.entry.epsilon == pytest.approx(cks_epsilon(noise.rho, 1e-6), rel=1e-12)
    assert gaussian.record["noise_sampler"]["scaled_sensitivity"] == pytest.approx(mu, rel=1e-15)
    frl = export.commit_mean(ledger, fd, MEAN_CASES["frl"])
    assert len(spy) == 2 and spy[1][0] == "discrete_laplace_release"
    assert frl.entry.curve == "pure" and frl.entry.epsilon == spy[1][1].epsilon <= 1.0
    assert [e.id for e in ledger.entries] == [gaussian.id, frl.id]
    assert gaussian.record["randomness"] == export.COMMIT_RANDOMNESS and gaussian.record["seed"] is None
    assert gaussian.record["noise_sampler"]["opendp_version"] == discrete.opendp_version()


def test_iclp_ar_inactive_components_are_exact_zeros_without_noise(spy):
    fd = load_curves(EXAMPLE)
    release = export.commit_mean(Ledger(5.0, 1e-5), fd, MEAN_CASES["iclp-ar"])
    coefs = release.coefficients
    n_active = plan_mean_release(fd, MEAN_CASES["iclp-ar"]).guarantee.details["n_active"]
    assert 0 < n_active < len(coefs)
    assert coefs["noisy"].sum() == n_active and spy[0][1].n_coefficients == n_active
    assert (coefs.loc[~coefs["noisy"], ["noise_scale", "unit_value", "value"]] == 0).all().all()


# --------------------------------------------------------------------------- the grid survives export

def _read_csv_exact(text: str) -> pd.DataFrame:
    # Parse every float with Python's float(): exact for shortest round-trip decimals.
    return pd.read_csv(io.StringIO(text), dtype=str).apply(
        lambda col: col.map(lambda v: float(v) if re.fullmatch(r"[-+0-9.eE]+", v) else v))


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp-qr", "bernstein"])
def test_sampler_output_on_its_grid_is_preserved_in_the_exported_csv(mechanism, spy, tmp_path):
    fd = full_precision_curves()
    ledger = Ledger(5.0, 1e-5)
    release = export.commit_mean(ledger, fd, MEAN_CASES[mechanism])
    export.export_folder(release, tmp_path, ledger)
    noise = spy[0][1]
    k = noise.granularity_exp
    coefs = _read_csv_exact((tmp_path / "coefficients.csv").read_text())
    noisy = coefs[coefs["noisy"] == "True"]
    unit = noisy["unit_value"].to_numpy(dtype=float)
    np.testing.assert_array_equal(unit, noise.unit_values)  # bit-exact round trip
    grid_units = np.ldexp(unit, -k)
    assert np.array_equal(grid_units, np.round(grid_units))  # integer multiples of 2^k
    np.testing.assert_array_equal(noisy["value"].to_numpy(dtype=float), noise.unit_values * noise.scales)
    # The curve is post-processing of the exported coefficients on the data grid (then the free
    # projection onto the public range, which the record states).
    plan = plan_mean_release(fd, MEAN_CASES[mechanism])
    curve = _read_csv_exact((tmp_path / "release.csv").read_text())
    np.testing.assert_array_equal(curve["t"].to_numpy(dtype=float), fd.grid_points)
    synthesised = plan.offset + plan.synthesis @ coefs["value"].to_numpy(dtype=float)
    np.testing.assert_allclose(curve["value"].to_numpy(dtype=float), finish_mean(synthesised, plan.settings).values,
                               rtol=1e-12, atol=1e-12)
    record = json.loads((tmp_path / "release.json").read_text())
    assert record["noise_sampler"]["granularity_exp"] == k and "2^granularity_exp" in record["on_grid"]


def test_granularity_is_coarsened_when_the_float_error_bound_needs_it():
    fd = load_curves(EXAMPLE)
    mean = export.prepare_mean_commit(fd, MEAN_CASES["gaussian"])
    assert mean.noise_plan.granularity_exp == discrete.DEFAULT_GRANULARITY_EXP
    assert mean.float_error_bound < 2.0 ** (mean.noise_plan.granularity_exp + 1)
    # Hall's floored Gram directions have tiny noise sds: the bound is far above 2^-29 there.
    hall = export.prepare_kde_commit(fd, "l2norm", KdeSettings(mechanism="gaussian", box=((0.0, 2.0),),
                                                               epsilon=1.0, delta=1e-5, grid_size=128))
    k = hall.noise_plan.granularity_exp
    assert hall.float_error_bound > 2.0 ** (discrete.DEFAULT_GRANULARITY_EXP + 1)
    assert k > discrete.DEFAULT_GRANULARITY_EXP and 2.0 ** k < hall.float_error_bound <= 2.0 ** (k + 1)
    # A coarser grid only adds noise: the entry still charges at most the calibrated mu.
    assert hall.noise_plan.rho <= hall.scaled_sensitivity**2 / 2


@pytest.mark.parametrize("box,feature,grid_size", [(((0.0, 2.0),), "l2norm", 40),
                                                   (((0.0, 2.0), (0.0, 2.0)), "value:0.3,value:0.7", 12)])
def test_hall_commit_adds_exactly_the_plans_noise_law_in_its_coefficient_frame(box, feature, grid_size, spy):
    from fdp_core.releases.kde import plan_kde_release
    from fdp_core.data.features import extract_features

    fd = load_curves(EXAMPLE)
    settings = KdeSettings(mechanism="gaussian", box=box, epsilon=1.0, delta=1e-5, grid_size=grid_size)
    release = export.commit_kde(Ledger(5.0, 1e-5), fd, feature, settings)
    plan = plan_kde_release(extract_features(fd, feature)[0], settings)
    noise = plan.noise_law
    axes, sds = noise.axes_vectors, noise.scales
    # Independent N(0, sd_j^2) coefficients in the orthogonal frame U = the plan's noise covariance.
    U = axes[0] if len(axes) == 1 else np.kron(axes[0], axes[1])
    np.testing.assert_allclose((U * sds.ravel() ** 2) @ U.T, noise.covariance(), rtol=1e-9, atol=1e-15)
    # The density as drawn (before the free clip at 0 and renormalisation, kept in the analyst
    # view) maps back to exactly the sampler's unit values, and the coefficients without noise to
    # the non-private density (the transform is the identity on the signal).
    values = np.asarray(release.analyst["raw_release"]).reshape(plan.grid_shape)
    published = release.table["density"].to_numpy().reshape(plan.grid_shape)
    np.testing.assert_allclose(published, finish_density(values, plan.weights, settings).values, atol=1e-12)
    assert published.min() >= 0 and float(np.sum(published * plan.weights)) == pytest.approx(1.0)
    unit = (noise.to_coefficients(values) / sds).ravel()
    np.testing.assert_allclose(unit, spy[0][1].unit_values, rtol=0, atol=1e-6 * np.abs(unit).max())
    np.testing.assert_allclose(noise.synthesize(noise.to_coefficients(plan.density)), plan.density, atol=1e-12)


# --------------------------------------------------------------------------- nothing private leaves

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
SHORT_FORMATS = ("{:.6g}", "{:.8g}", "{:.10g}", "{:.12g}")
LONG_FORMATS = ("{!r}", "{:.15g}", "{:.16g}", "{:.17g}")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _decoded_plotly_arrays(text: str) -> list[float]:
    """Numbers inside plotly's base64 typed arrays ("bdata"), which a text search cannot see."""
    out = []
    for blob, dtype in re.findall(r'"bdata":"([^"]*)","dtype":"([a-z0-9]+)"', text):
        raw = base64.b64decode(json.loads(f'"{blob}"'))
        out.extend(np.frombuffer(raw, dtype=np.dtype(dtype)).astype(float).tolist())
    return out


def _assert_no_private_values(files: dict[str, bytes], private: np.ndarray):
    private = np.unique(np.asarray(private, dtype=float).ravel())
    # Round numbers could be public parameters (0, 1, tau...): the synthetic values never are.
    private = private[(np.abs(private) > 1e-9) & (np.abs(private - np.round(private, 3)) > 1e-9)]
    assert private.size >= 20
    plotly_js = _plotly_js()
    for name, content in files.items():
        text = content.decode("utf-8")
        if name.endswith(".html"):
            assert text.count(plotly_js) == 1, "report.html must inline plotly.js exactly once"
            text = text.replace(plotly_js, "")  # the library's code is data-independent
            assert "<script src=" not in text and "cdn" not in text.lower()
        tokens = {t.lstrip("+") for t in NUMBER.findall(text)}
        floats = {float(t) for t in tokens} | set(_decoded_plotly_arrays(text))
        for x in private:
            assert x not in floats, f"{name} contains the private value {x!r}"
            for fmt in SHORT_FORMATS:
                assert fmt.format(x) not in tokens, f"{name} contains {fmt.format(x)} (private value {x!r})"
            for fmt in LONG_FORMATS:
                assert fmt.format(x) not in text, f"{name} contains {fmt.format(x)} (private value {x!r})"


def _bundle(release, ledger) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(export.export_zip(release, ledger)))
    names = archive.namelist()
    assert sorted(Path(n).name for n in names) == sorted(export.BUNDLE_FILES)
    return {Path(n).name: archive.read(n) for n in names}


@pytest.mark.parametrize("mechanism", list(MEAN_CASES))
def test_mean_exports_contain_no_raw_value_and_no_non_private_estimate(mechanism):
    fd = full_precision_curves()
    ledger = Ledger(5.0, 1e-5)
    release = export.commit_mean(ledger, fd, MEAN_CASES[mechanism])
    plan = plan_mean_release(fd, MEAN_CASES[mechanism])
    private = np.concatenate([fd.data_matrix.ravel(), plan.estimate, plan.estimate_coefficients,
                              fd.clipped_mean(1.0), fd.norms()])
    _assert_no_private_values(_bundle(release, ledger), private)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_density_exports_contain_no_raw_value_feature_or_non_private_density(mechanism):
    from fdp_core.data.features import extract_features
    from fdp_core.releases.kde import plan_kde_release

    fd = full_precision_curves()
    settings = KdeSettings(mechanism=mechanism, box=((0.0, 1.0),), epsilon=1.0, delta=1e-5, grid_size=64)
    ledger = Ledger(5.0, 1e-5)
    release = export.commit_kde(ledger, fd, "mean:0.2:0.8", settings)
    points, _ = extract_features(fd, "mean:0.2:0.8")
    plan = plan_kde_release(points, settings)
    private = [fd.data_matrix.ravel(), points, plan.density.ravel()]
    if plan.coefficients is not None:
        private.append(plan.coefficients.ravel())
    _assert_no_private_values(_bundle(release, ledger), np.concatenate(private))
    assert release.table.shape == (64, 2) and list(release.table.columns) == ["x", "density"]


def test_leak_check_has_power():
    """The same check flags a bundle into which the estimate was written (%.6g, in the JSON)."""
    fd = full_precision_curves()
    ledger = Ledger(5.0, 1e-5)
    release = export.commit_mean(ledger, fd, MEAN_CASES["gaussian"])
    plan = plan_mean_release(fd, MEAN_CASES["gaussian"])
    files = _bundle(release, ledger)
    leaked = dict(files)
    leaked["release.json"] = files["release.json"] + f"\n{plan.estimate[3]:.6g}\n".encode()
    with pytest.raises(AssertionError, match="private value"):
        _assert_no_private_values(leaked, plan.estimate)
    tampered = dict(files)
    tampered["report.html"] = files["report.html"].replace(
        b"</body>", f"<p>{fd.data_matrix[5, 7]!r}</p></body>".encode())
    with pytest.raises(AssertionError, match="private value"):
        _assert_no_private_values(tampered, fd.data_matrix)


def test_data_dependent_tau_is_refused_by_a_commit():
    """Issue 21: data-dependent settings are for exploration; a commit (a publication path) refuses them
    before anything is charged or drawn."""
    fd = load_curves(EXAMPLE)
    ledger = Ledger(5.0, 1e-5)
    from dataclasses import replace

    with pytest.raises(ParameterError, match="refuses data-dependent settings \\(tau_from_data"):
        export.commit_mean(ledger, fd, replace(MEAN_CASES["frl"], tau_from_data=True))
    assert ledger.entries == []


def yaml_load(content: bytes):
    import yaml

    return yaml.safe_load(content.decode())


# --------------------------------------------------------------------------- replay

REPRODUCED = ("mechanism", "epsilon", "delta", "tau", "bound", "calibration", "n", "m", "sensitivity", "sigma",
              "expected_sq_l2_error", "l2_error_radius_95", "laplace_scales", "guarantee", "settings", "privacy",
              "charged", "differentially_private", "data_dependent_flags", "bandwidth", "box", "feature")
SAMPLER_FIELDS = ("sampler", "opendp_version", "granularity_exp", "n_coefficients", "norm", "scaled_sensitivity",
                  "float_allowance", "rounding_inflation", "inflated_sensitivity", "unit_noise_scale", "epsilon", "rho",
                  "n_noisy_coefficients", "coefficient_noise", "privacy_measure")


@pytest.mark.parametrize("kind,case", [("mean", "gaussian"), ("mean", "iclp-qr"), ("mean", "bernstein"),
                                       ("kde", "gaussian"), ("kde", "iclp")])
def test_replay_reproduces_every_parameter_with_fresh_noise(kind, case, tmp_path, capsys):
    fd = full_precision_curves()
    data = tmp_path / "data.csv"
    data.write_text(to_wide_csv(fd))
    ledger = Ledger(3.0, 1e-5)
    if kind == "mean":
        original = export.commit_mean(ledger, load_curves(data), MEAN_CASES[case], data_label="data.csv")
    else:
        original = export.commit_kde(ledger, load_curves(data), "value:0.5",
                                     KdeSettings(mechanism=case, box=((-1.0, 2.0),), epsilon=0.7, delta=1e-6,
                                                 grid_size=50), data_label="data.csv")
    export.export_folder(original, tmp_path / "original", ledger)
    out = tmp_path / "replayed"
    assert main(["replay", str(tmp_path / "original" / "config.yaml"), "--data", str(data), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    first = json.loads((tmp_path / "original" / "release.json").read_text())
    again = json.loads((out / "release.json").read_text())
    for key in REPRODUCED:
        assert again.get(key) == first.get(key), key
    for key in SAMPLER_FIELDS:
        assert again["noise_sampler"][key] == first["noise_sampler"][key], key
    assert again["id"] != first["id"] and again["ledger_at_commit"]["budget"] == first["ledger_at_commit"]["budget"]
    a = pd.read_csv(tmp_path / "original" / "release.csv")
    b = pd.read_csv(out / "release.csv")
    assert a.columns.tolist() == b.columns.tolist() and np.array_equal(a.iloc[:, 0], b.iloc[:, 0])
    assert not np.allclose(a.iloc[:, -1], b.iloc[:, -1])  # fresh noise
    config_a = yaml_load((tmp_path / "original" / "config.yaml").read_bytes())
    config_b = yaml_load((out / "config.yaml").read_bytes())
    assert config_b["settings"] == config_a["settings"] and config_b["export"] == config_a["export"]


def test_replay_notes_other_data_and_refuses_a_release_over_the_configs_budget(tmp_path, capsys):
    fd = load_curves(EXAMPLE)
    ledger = Ledger(1.2, 1e-5)
    release = export.commit_mean(ledger, fd, MEAN_CASES["frl"])
    export.export_folder(release, tmp_path / "orig", ledger)
    smaller = tmp_path / "smaller.csv"
    smaller.write_text(to_wide_csv(from_arrays(fd.grid_points, fd.data_matrix[:30])))
    assert main(["replay", str(tmp_path / "orig" / "config.yaml"), "--data", str(smaller),
                 "--out", str(tmp_path / "r")]) == 0
    assert "note: data differ from the original release: n = 30 (original 60)" in capsys.readouterr().out
    config = yaml_load((tmp_path / "orig" / "config.yaml").read_bytes())
    config["budget"]["epsilon_total"] = 0.5
    small = tmp_path / "small_budget.yaml"
    small.write_text(export.config_yaml(config))
    assert main(["replay", str(small), "--data", str(EXAMPLE), "--out", str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: release refused, nothing recorded") and err.count("\n") == 1
    assert not (tmp_path / "r2").exists()


def _good_config():
    fd = load_curves(EXAMPLE)
    ledger = Ledger(3.0, 1e-5)
    return export.commit_mean(ledger, fd, MEAN_CASES["gaussian"]).config


BAD_CONFIGS = [
    ("not yaml", "schema: [unclosed", "not valid YAML"),
    ("a list", "- 1\n- 2\n", "must be a YAML mapping"),
    ("wrong schema", {"schema": "fdp.replay/0"}, "schema must be"),
    ("unknown key", {"colour": "blue"}, "unknown key(s) colour"),
    ("bad kind", {"kind": "pca-ish"}, "kind must be"),
    ("settings not a mapping", {"settings": [1, 2]}, "'settings' must be a mapping"),
    ("unknown setting", {"settings": {"mechanism": "gaussian", "epsilon": 1, "sigma": 3}}, "bad settings"),
    ("bad epsilon", {"settings": {"mechanism": "gaussian", "epsilon": -1, "tau": 1}}, "epsilon must be > 0"),
    ("bad mechanism", {"settings": {"mechanism": "magic", "tau": 1}}, "mechanism"),
    ("bad missing", {"data": {"missing": "guess"}}, "data.missing must be one of"),
    ("bad granularity", {"export": {"granularity_exp": "fine"}}, "granularity_exp must be an integer"),
    ("no budget", {"budget": None}, "'budget' must be a mapping"),
    ("budget incomplete", {"budget": {"epsilon_total": 1}}, "budget needs epsilon_total and delta_total"),
    ("budget invalid", {"budget": {"epsilon_total": -1, "delta_total": 1e-5}}, "epsilon_total must be > 0"),
    ("kde without feature", {"kind": "kde", "settings": {"mechanism": "iclp", "box": [[0, 1]]}}, "data.feature"),
    ("kde bad box", {"kind": "kde", "settings": {"mechanism": "iclp", "box": [[1, 0]]},
                     "data": {"feature": "l2norm"}}, "need lo < hi"),
]


@pytest.mark.parametrize("name,change,fragment", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_exits_2_with_one_line(name, change, fragment, tmp_path, capsys):
    path = tmp_path / "config.yaml"
    if isinstance(change, str):
        path.write_text(change)
    else:
        config = {**_good_config(), **change}
        path.write_text(export.config_yaml(config))
    assert main(["replay", str(path), "--data", str(EXAMPLE), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and fragment in err, err
    assert not (tmp_path / "out").exists()


def test_replay_missing_config_file_exits_2(tmp_path, capsys):
    assert main(["replay", str(tmp_path / "nope.yaml"), "--data", str(EXAMPLE)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# --------------------------------------------------------------------------- ledger views and risk

@pytest.mark.parametrize("winner", ["zcdp", "basic"])
def test_composition_table_and_ledger_table_match_accounting(winner):
    fd = load_curves(EXAMPLE)
    ledger = Ledger(10.0, 1e-4)
    if winner == "zcdp":  # several small Gaussian releases: rho adds up slower than epsilon
        for _ in range(3):
            export.commit_mean(ledger, fd, MeanSettings(epsilon=0.5, delta=1e-6, tau=1.0, phi=1e-2))
        export.commit_kde(ledger, fd, "l2norm", KdeSettings(mechanism="iclp", box=((0.0, 2.0),), epsilon=0.2))
    else:  # one pure release of epsilon 1 has rho = 0.5: its CKS epsilon exceeds 1
        export.commit_mean(ledger, fd, MEAN_CASES["frl"])
    report = compose(ledger.entries, 1e-4)
    table = export.composition_table(report)
    by_method = {t.method: t for t in report.totals}
    basic = table[table["composition"].str.startswith("basic")].iloc[0]
    assert basic["epsilon"] == by_method["basic"].epsilon == pytest.approx(sum(e.epsilon for e in ledger.entries))
    zcdp = table[table["composition"].str.startswith("zCDP")].iloc[0]
    assert zcdp["epsilon"] == by_method["zcdp"].epsilon == pytest.approx(cks_epsilon(report.rho_total, 1e-4))
    assert report.best.method == winner and table["epsilon"].min() == report.best.epsilon
    assert table.loc[table["best"], "epsilon"].tolist() == [report.best.epsilon]
    gdp = table[table["composition"].str.startswith("GDP")].iloc[0]
    assert gdp["detail"].startswith("not applicable") and not gdp["best"]  # discrete exports are zCDP entries
    rows = export.ledger_table(ledger)
    assert rows["id"].tolist() == [e.id for e in ledger.entries]
    np.testing.assert_array_equal(rows["rho"], [e.rho for e in ledger.entries])
    np.testing.assert_array_equal(rows["epsilon"], [e.epsilon for e in ledger.entries])
    expected_prefix = ["rho = " if e.curve == "zcdp" else "epsilon = " for e in ledger.entries]
    assert [r.startswith(p) for r, p in zip(rows["native parameter"], expected_prefix)] == [True] * len(rows)


def test_zcdp_power_envelope_sits_between_the_gaussian_curve_and_the_epsilon_delta_bound():
    fd = load_curves(EXAMPLE)
    release = export.commit_mean(Ledger(10.0, 1e-4), fd, MEAN_CASES["gaussian"])
    e = release.entry
    alpha = np.linspace(0.0, 1.0, 101)
    envelope = export.entry_power(e, alpha)
    # rho-zCDP admits a Gaussian mechanism with mu = sqrt(2 rho): no valid bound can be below its curve.
    assert np.all(envelope >= gdp_power(alpha, math.sqrt(2 * e.rho)) - 1e-9)
    assert np.all(envelope <= approx_dp_power(alpha, e.epsilon, e.delta) + 1e-12)
    assert np.any(envelope < approx_dp_power(alpha, e.epsilon, e.delta) - 1e-3)  # strictly tighter somewhere


# --------------------------------------------------------------------------- the report in a real browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _render_report(sync_api, path: Path):
    external = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})

            def block(route):
                if not route.request.url.startswith("file://"):
                    external.append(route.request.url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", block)
            page.goto(path.as_uri())
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 3",
                                   timeout=60_000)
            plots = page.evaluate("""Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => ({
                traces: d.data.length,
                drawn: d.querySelectorAll('.scatterlayer .trace path.js-line, .heatmaplayer image').length}))""")
            text = page.inner_text("body")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        finally:
            browser.close()
    return external, plots, text


def test_html_report_opens_offline_in_chromium_and_shows_its_figures(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    fd = load_curves(EXAMPLE)
    ledger = Ledger(3.0, 1e-5)
    export.commit_mean(ledger, fd, MEAN_CASES["frl"])
    release = export.commit_mean(ledger, fd, MEAN_CASES["gaussian"], data_label="example_curves.csv")
    path = export.export_folder(release, tmp_path / "bundle", ledger) / "report.html"
    # Own thread: playwright's sync API refuses to start where another session-scoped sync
    # playwright (tests/browser) already runs an event loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        external, plots, text = pool.submit(_render_report, sync_api, path).result(timeout=180)
    assert external == []  # self-contained: nothing fetched from the network
    assert len(plots) == 3 and all(p["traces"] > 0 and p["drawn"] > 0 for p in plots), plots
    assert plots[1]["traces"] == 2 and plots[2]["traces"] == 3  # trade-off + chosen point; guess, release, session
    assert "rho-zero-concentrated differential privacy" in text and "With 95% probability" in text
    assert "An adversary who wrongly accuses at most 5%" in text
    assert "non-private estimate (analyst view" not in text


# --------------------------------------------------------------------------- audit of the chosen mechanism

def test_audit_passes_the_calibrated_gaussian_and_flags_the_under_noised_control():
    fd = load_curves(EXAMPLE)
    settings = MeanSettings(mechanism="gaussian", epsilon=1.0, delta=0.1, tau=1.0, phi=1e-2)
    outcome = export.audit_mean_mechanism(settings, fd.grid_points, fd.n)
    assert not outcome.result.flagged and outcome.control.flagged
    assert outcome.control_factor == 0.9 and "attains the tight bound" in outcome.pair


def test_audit_pair_attains_the_sensitivity_and_flags_a_pure_mechanism_control():
    fd = load_curves(EXAMPLE)
    settings = MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=2)
    d, d_prime, _ = audit._worst_case_pair(settings, fd.grid_points, fd.n)
    a, b = plan_mean_release(d, settings), plan_mean_release(d_prime, settings)
    # The pair moves the coefficients by exactly the l1 sensitivity: privacy loss epsilon in the tail.
    assert np.sum(np.abs(a.estimate_coefficients - b.estimate_coefficients)) == pytest.approx(a.sensitivity, rel=1e-9)
    outcome = export.audit_mean_mechanism(settings, fd.grid_points, fd.n)
    assert not outcome.result.flagged and outcome.control.flagged


def test_audit_refuses_a_data_dependent_tau():
    with pytest.raises(ParameterError, match="public tau"):
        export.audit_mean_mechanism(MeanSettings(tau_from_data=True), np.linspace(0, 1, 10), 20)


# --------------------------------------------------------------------------- principal components

def _pca():
    return pytest.importorskip("fdp_core.releases.pca")


def test_pca_commit_checks_the_budget_before_sampling(monkeypatch):
    pca = _pca()

    def refuse(*args, **kwargs):
        raise AssertionError("the Bingham sampler ran for a refused release")

    monkeypatch.setattr(pca, "private_pca", refuse)
    ledger = Ledger(0.5, 1e-5)
    with pytest.raises(BudgetError, match="nothing recorded"):
        export.commit_pca(ledger, load_curves(EXAMPLE), pca.PcaSettings(k=1, epsilon=1.0))
    assert ledger.entries == []


@pytest.mark.parametrize("sampler,k", [("exact", 1), ("deflation", 2), ("gibbs", 2)])
def test_pca_commit_records_the_exponential_mechanism_and_exports_nothing_private(sampler, k):
    pca = _pca()
    fd = full_precision_curves()
    settings = pca.PcaSettings(k=k, epsilon=1.0, sampler=sampler, gibbs_sweeps=300)
    ledger = Ledger(5.0, 1e-5)
    release = export.commit_pca(ledger, fd, settings)
    e = release.entry
    if sampler == "gibbs":
        assert e.curve == "approximate" and release.record["differentially_private"] is False
        assert ledger.composition().n_approximate == 1 and ledger.composition().totals[0].epsilon == 0
    else:
        assert e.curve == "bounded_range" and e.rho == pytest.approx(1.0 / 8) and e.epsilon == 1.0
    assert release.record["hardening_note"].startswith("Bingham sampler: not floating-point hardened")
    for key in export.PCA_NOT_EXPORTED:
        assert key not in release.record
    assert list(release.table.columns) == ["t"] + [f"component_{j + 1}" for j in range(k)]
    V = release.coefficients[[f"V_{j + 1}" for j in range(k)]].to_numpy()
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-10)  # an orthonormal frame
    analyst = pca.private_pca(fd, settings, 0)
    private = np.concatenate([fd.data_matrix.ravel(), analyst.nonprivate_components.ravel(),
                              analyst.nonprivate_coefficients.ravel(), analyst.scree])
    files = _bundle(release, ledger)
    _assert_no_private_values(files, private)
    report = files["report.html"].decode()
    assert "Bingham sampler: not floating-point hardened" in report
    # Components and power curve only: no data-free accuracy curve exists for PCA.
    assert 'id="fdp-figure-1"' in report and 'id="fdp-figure-2"' not in report


def test_pca_replay_reproduces_settings_and_a_released_mean_centring_is_refused(tmp_path, capsys):
    pca = _pca()
    fd = load_curves(EXAMPLE)
    ledger = Ledger(5.0, 1e-5)
    mean = export.commit_mean(ledger, fd, MEAN_CASES["frl"])
    centred = export.commit_pca(ledger, fd, pca.PcaSettings(k=1, epsilon=0.5, centring="released-mean"),
                                released_mean=mean.table["value"].to_numpy(), released_mean_id=mean.id)
    assert centred.record["released_mean_id"] == mean.id
    export.export_folder(centred, tmp_path / "centred", ledger)
    assert main(["replay", str(tmp_path / "centred" / "config.yaml"), "--data", str(EXAMPLE)]) == 2
    assert "released mean cannot be replayed" in capsys.readouterr().err
    plain = export.commit_pca(ledger, fd, pca.PcaSettings(k=2, epsilon=1.0, sampler="deflation"))
    export.export_folder(plain, tmp_path / "plain", ledger)
    out = tmp_path / "again"
    assert main(["replay", str(tmp_path / "plain" / "config.yaml"), "--data", str(EXAMPLE), "--out", str(out)]) == 0
    first = json.loads((tmp_path / "plain" / "release.json").read_text())
    again = json.loads((out / "release.json").read_text())
    for key in ("settings", "guarantee", "charged", "k", "p", "basis", "epsilon", "epsilon_per_component", "tau"):
        assert again[key] == first[key], key
