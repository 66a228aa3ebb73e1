"""The settings' field metadata (fdp_core.settings_fields) and everything generated from it.

- The command-line contract: every command's flags, required flags, mutually exclusive groups
  and choices are pinned here as written before the options were generated; the default of
  every generated option is the dataclass default, except the few listed where the command
  line decides differently.
- ``command_line`` round trip: the generated line, parsed by the real parser and turned into
  settings by the command's own code, gives the settings back (every settings class).
- Replay configs: ``config_of`` -> YAML -> ``settings_from_config`` gives the settings back;
  unknown keys are refused.
- Page controls: defaults come from the dataclass (or the page's declared start); every page
  (Mean, Trade-offs, Density, Components, Release, Covariance & regression) draws every control
  key the metadata names for it, pages name keys by field, and a key nobody set is refused,
  not defaulted.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, fields, replace
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from fdp_core.publish.bundle import config_yaml
from fdp_core.cli import _attach_negative_lists, build_parser
from fdp_core.commands import release_kde_counts, release_pca, release_synthetic, select
from fdp_core.releases.covariance import CENTRINGS, COVARIANCE_MECHANISMS, CovarianceSettings
from fdp_core.errors import ParameterError
from fdp_core.releases.kde import KDE_BOUNDS, KDE_MECHANISMS, KdeSettings
from fdp_core.kernels import KERNEL_NAMES
from fdp_core.releases.mean import BAND_FIELDS, MEAN_MECHANISMS, MeanSettings
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.releases.pca import PCA_BASES, PCA_SAMPLERS, PcaSettings
from fdp_core.explore.private_selection import SELECTION_MECHANISMS
from fdp_core.releases.regression import RegressionSettings
from fdp_core.sensitivity import BOUNDS, COVARIANCE_GAUSSIAN_BOUNDS
from fdp_core.settings_fields import (Control, command_line, config_of, option, options_of, page_defaults,
                                      page_keys, page_settings, settings_from_args, settings_from_config)

APP = str(Path(__file__).resolve().parents[1] / "app.py")
DATA = ["--data", "--grid", "--id-column", "--missing", "--t-column", "--transpose", "--value-column"]
ENGINE = ["--chunk-rows", "--engine", "--scheduler"]
OUTPUT = ["--out", "--seed"]
MEAN = ["--K", "--M", "--bound", "--calibration", "--delta", "--epsilon", "--eta", "--hi", "--kernel", "--lo",
        "--mechanism", "--n-public", "--nu", "--person-column", "--phi", "--psi", "--reference", "--rho", "--tau",
        "--tau-from-data", "--value-range"]

# What every charged release command adds (issue 36): a preview instead of a charge, the ledger and budget to charge.
PUBLISH = ["--budget-name", "--ledger", "--preview"]

# The command-line contract as it was before the options were generated from the metadata (plus PUBLISH).
FLAGS = {
    "release mean": DATA + ENGINE + OUTPUT + MEAN + ["--band-share", "--confidence-band", "--no-post-processing",
                                                     "--smoothness-bound", "--preview"] + [
        # the sparse route (METHODS 20) and its persistent budget
        "--basis-size", "--budget-name", "--domain", "--ledger", "--output-points", "--sparse", "--sparse-gamma",
        "--sparse-kappa", "--sparse-noise"],
    "release kde": DATA + ENGINE + OUTPUT + PUBLISH + [
        "--bandwidth", "--bandwidth-from-data", "--bound", "--box", "--calibration", "--delta", "--epsilon", "--eta",
        "--feature", "--grid-size", "--kernel", "--mechanism", "--n-public", "--no-post-processing", "--nu", "--person-column",
        "--rho",
        "--value-range"],
    "release kde-counts": OUTPUT + [
        "--bandwidth", "--bound", "--box", "--calibration", "--counts", "--delta", "--epsilon", "--eta",
        "--grid-size", "--kernel", "--mechanism", "--no-post-processing", "--nu", "--rho"],
    "release pca": DATA + ENGINE + OUTPUT + PUBLISH + [
        "--basis", "--centring", "--epsilon", "--epsilon-split", "--gamma", "--gibbs-burn-in", "--gibbs-sweeps",
        "--gibbs-thin", "--k", "--kernel", "--n-public", "--nu", "--p", "--person-column", "--reference",
        "--released-mean", "--rho", "--sampler", "--tau", "--tau-from-data", "--value-range"],
    "release covariance": DATA + OUTPUT + PUBLISH + [
        "--bound", "--calibration", "--centre", "--centring", "--components", "--delta", "--epsilon", "--eta",
        "--gamma", "--kernel", "--mechanism", "--n-public", "--nu", "--person-column", "--phi", "--rho", "--tau",
        "--value-range"],
    "release regression": DATA + OUTPUT + PUBLISH + [
        "--B", "--calibration", "--centre", "--covariates", "--delta", "--epsilon", "--eta", "--gamma", "--kappa",
        "--kernel", "--n-public", "--nu", "--person-column", "--phi", "--rho", "--tau", "--value-range"],
    "tradeoff": DATA + OUTPUT + MEAN + ["--mc-draws", "--param", "--quantiles", "--values"],
    "select": DATA + [
        "--bound", "--budget-name", "--delta", "--epsilon", "--eta", "--folds", "--kernel", "--ledger",
        "--mechanism", "--n-public", "--no-ledger", "--nu", "--out", "--penalties", "--person-column", "--reference",
        "--rho", "--rhos", "--select-epsilon", "--tau", "--value-range"],
    "release synthetic": DATA + OUTPUT + [
        "--bound", "--calibration", "--centre", "--delta", "--epsilon", "--eta", "--gamma", "--kernel", "--mechanism",
        "--n-public", "--n-synthetic", "--nu", "--person-column", "--phi", "--rho", "--tau", "--value-range"],
    "ledger init": DATA + ["--dataset", "--delta", "--epsilon", "--filter", "--ledger", "--n-policy", "--name",
                           "--new-dataset", "--person-column", "--reason", "--sparse", "--split", "--value-range"],
    "ledger complete": ["--entry", "--ledger", "--out", "--release", "--staged"],
    "plan": ["--budget-name", "--commit", "--data", "--grid", "--ledger", "--new-dataset", "--out", "--reason",
             "--stand-in"],
    "ledger show": DATA + ["--ledger", "--name", "--person-column"],
    "replay": ["--budget-name", "--data", "--ledger", "--missing", "--new-dataset", "--no-ledger", "--out", "--reason"],
    # several sites' committed means, one curve (METHODS 26): post-processing, no ledger
    "combine": ["--labels", "--out", "--sampling-variance"],
}
REQUIRED = {
    "release mean": {"--data", "--epsilon", "--kernel", "--out", "--rho"},
    "release kde": {"--box", "--data", "--epsilon", "--feature", "--out"},
    "release kde-counts": {"--box", "--counts", "--epsilon", "--out"},
    "release pca": {"--data", "--epsilon", "--out"},
    "release covariance": {"--data", "--epsilon", "--kernel", "--out", "--rho"},
    "release regression": {"--B", "--covariates", "--data", "--epsilon", "--kernel", "--out", "--rho"},
    "release synthetic": {"--data", "--epsilon", "--kernel", "--out", "--rho"},
    "tradeoff": {"--data", "--out", "--param", "--values"},
    "select": {"--data", "--epsilon", "--out", "--penalties", "--rhos", "--select-epsilon"},
    "ledger init": {"--data", "--delta", "--epsilon"},
    "ledger show": {"--data"},
    "ledger complete": set(),
    "replay": {"--data"},
    "plan": set(),
    "combine": {"--out"},
}
# (flags, one of them required)
EXCLUSIVE = {
    "release mean": [({"--tau", "--tau-from-data"}, False)],
    "release kde": [({"--bandwidth", "--bandwidth-from-data"}, False)],
    "release pca": [({"--tau", "--tau-from-data"}, False)],
    "release covariance": [({"--centre", "--value-range"}, True)],
    "release synthetic": [({"--centre", "--value-range"}, True)],
    "release regression": [({"--centre", "--value-range"}, True)],
    "tradeoff": [({"--tau", "--tau-from-data"}, False)],
    "ledger complete": [({"--entry", "--release"}, True)],
}
CHOICES = {
    "release mean": {"--mechanism": MEAN_MECHANISMS, "--bound": BOUNDS},
    "release kde": {"--mechanism": KDE_MECHANISMS, "--bound": KDE_BOUNDS},
    "release kde-counts": {"--mechanism": KDE_MECHANISMS, "--bound": KDE_BOUNDS},
    "release pca": {"--basis": PCA_BASES, "--sampler": PCA_SAMPLERS, "--centring": ("none", "public")},
    "release covariance": {"--mechanism": COVARIANCE_MECHANISMS, "--bound": COVARIANCE_GAUSSIAN_BOUNDS,
                           "--centring": CENTRINGS},
    "release regression": {},
    "tradeoff": {"--mechanism": MEAN_MECHANISMS + ("all",), "--bound": BOUNDS},
    "select": {"--mechanism": SELECTION_MECHANISMS},
}
# Where the command line's default is not the dataclass default: tau is decided by the value
# range or the data, PCA's centring by --value-range and --released-mean.
CLI_DEFAULTS = {("release mean", "tau"): None, ("release pca", "tau"): None, ("release pca", "centring"): None,
                ("tradeoff", "tau"): None, ("select", "tau"): None}
# The settings class and generated fields of every command that generates options.
GENERATED = {
    "release mean": (MeanSettings, None),
    "release kde": (KdeSettings, None),
    "release kde-counts": (KdeSettings, release_kde_counts.FIELDS),
    "release pca": (PcaSettings, None),
    "release covariance": (CovarianceSettings, None),
    "release synthetic": (CovarianceSettings, release_synthetic.FIELDS),
    "release regression": (RegressionSettings, None),
    "tradeoff": (MeanSettings, [name for name, _ in options_of(MeanSettings)
                                if name not in ("mechanism", "raw_release") and name not in BAND_FIELDS]),
    "select": (MeanSettings, select.FIELDS),
}


def _leaf_parsers(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
        return
    for name, sub in subs[0].choices.items():
        yield from _leaf_parsers(sub, path + (name,))


PARSERS = dict(_leaf_parsers(build_parser()))


def _actions(parser) -> dict:
    return {flag: a for a in parser._actions for flag in a.option_strings if flag not in ("-h", "--help")}


def test_every_command_is_pinned():
    assert set(PARSERS) == set(FLAGS)


@pytest.mark.parametrize("command", sorted(FLAGS))
def test_flags_required_and_exclusive_groups_are_the_contract(command):
    parser = PARSERS[command]
    actions = _actions(parser)
    assert sorted(actions) == sorted(FLAGS[command])
    assert {flag for flag, a in actions.items() if a.required} == REQUIRED[command]
    groups = [({flag for a in g._group_actions for flag in a.option_strings}, g.required)
              for g in parser._mutually_exclusive_groups]
    assert sorted(groups, key=str) == sorted(EXCLUSIVE.get(command, []), key=str)


@pytest.mark.parametrize("command", sorted(CHOICES))
def test_choices_are_the_constants(command):
    actions = _actions(PARSERS[command])
    for flag, choices in {**CHOICES[command], "--kernel": KERNEL_NAMES}.items():
        assert tuple(actions[flag].choices) == tuple(choices), flag
    if "--calibration" in actions:
        assert tuple(actions["--calibration"].choices) == CALIBRATIONS


@pytest.mark.parametrize("command", sorted(GENERATED))
def test_generated_defaults_are_the_dataclass_defaults(command):
    cls, names = GENERATED[command]
    parser = PARSERS[command]
    defaults = {f.name: f.default for f in fields(cls)}
    by_dest = {a.dest: a for a in parser._actions}
    for name, opt in options_of(cls, names):
        action = by_dest[opt.dest_of(name)]
        if action.required or (opt.required and opt.group):  # required: no default at all
            assert parser.get_default(action.dest) is None, name
        else:
            want = CLI_DEFAULTS.get((command, name), defaults[name])
            assert parser.get_default(action.dest) == want, (command, name)


def test_the_cli_defaults_that_differ_are_declared_in_the_metadata():
    """tau's None and PCA's centring None are what the metadata says, not an accident of argparse."""
    assert dict(options_of(MeanSettings))["tau"].cli_default is None
    assert dict(options_of(PcaSettings))["tau"].cli_default is None
    assert dict(options_of(PcaSettings))["centring"].cli_default is None


def test_settings_classes_keep_their_fields_and_defaults():
    """Metadata only: the same field names and defaults as the releases were written with."""
    assert {f.name: f.default for f in fields(MeanSettings)} == {
        "mechanism": "gaussian", "kernel": "matern52", "rho": 0.1, "nu": None, "eta": 1.5, "phi": 1e-3,
        "epsilon": 1.0, "delta": 1e-5, "tau": None, "tau_from_data": False, "bound": "tight",
        "calibration": "analytic", "psi": 1e-3, "M": 20, "K": 20, "lo": None, "hi": None, "value_range": None,
        "reference": None, "person_column": None, "n_public": None, "confidence_band": None, "band_share": 0.2,
        "smoothness_bound": None, "raw_release": False}
    assert {f.name: f.default for f in fields(PcaSettings)}["centring"] is None  # the range decides (__post_init__)
    assert PcaSettings().centring == "none" and PcaSettings(value_range=(0, 1)).centring == "public"
    assert {f.name: f.default for f in fields(KdeSettings)}["box"] == ((0.0, 1.0),)


# --------------------------------------------------------------------------- command lines

def _parse(line: str):
    words = shlex.split(line)
    assert words[:3] == ["python", "-m", "fdp_core"]
    return build_parser().parse_args(_attach_negative_lists(words[3:]))


def _pca_from_args(args):
    return settings_from_args(PcaSettings, args, centring=release_pca.centring_of(args))


ROUND_TRIPS = [
    ("release mean", MeanSettings(tau=None), lambda a: settings_from_args(MeanSettings, a)),
    ("release mean", MeanSettings(mechanism="iclp-ar", kernel="matern", rho=0.25, nu=2.5, eta=2.0, phi=0.3,
                                  epsilon=0.123456789, delta=1e-7, tau=2.5, bound="paper", calibration="classical",
                                  psi=1e-6, M=7, K=9, lo=-3.5, hi=-1.25, value_range=(-5.0, 40.0),
                                  person_column="person id", n_public=120),
     lambda a: settings_from_args(MeanSettings, a)),
    ("release mean", MeanSettings(tau=None, tau_from_data=True, mechanism="frl"),
     lambda a: settings_from_args(MeanSettings, a)),
    ("release kde", KdeSettings(box=((-1.0, 2.0),), epsilon=0.5),
     lambda a: settings_from_args(KdeSettings, a)),
    ("release kde", KdeSettings(mechanism="iclp", box=((0.0, 1.0), (-2.0, 3.5)), epsilon=3.0, delta=1e-3,
                                grid_size=32, bound="paper", calibration="classical", kernel="gaussian", rho=0.05,
                                nu=None, eta=2.5, person_column="site", value_range=(0.0, 10.0)),
     lambda a: settings_from_args(KdeSettings, a)),
    ("release kde", KdeSettings(epsilon=2.0, bandwidth=0.123, grid_size=100),
     lambda a: settings_from_args(KdeSettings, a)),
    ("release kde", KdeSettings(epsilon=2.0, data_dependent_bandwidth=True),
     lambda a: settings_from_args(KdeSettings, a)),
    ("release pca", PcaSettings(tau=None, value_range=(0.0, 1.0), centring="public"), _pca_from_args),
    ("release pca", PcaSettings(tau=0.5, value_range=(0.0, 1.0), centring="none"), _pca_from_args),
    ("release pca", PcaSettings(k=2, basis="fourier", p=9, epsilon=0.5, gamma=0.0, sampler="deflation",
                                epsilon_split=(0.375, 0.125), tau=3.0), _pca_from_args),
    ("release pca", PcaSettings(k=3, kernel="exponential", rho=0.4, sampler="gibbs", gibbs_sweeps=100,
                                gibbs_burn_in=10, gibbs_thin=4, tau=None, tau_from_data=True,
                                person_column="id", n_public=50), _pca_from_args),
    ("release pca", PcaSettings(tau=1.5, centring="released-mean"), _pca_from_args),
    ("release covariance", CovarianceSettings(centre=0.0, tau=1.0),
     lambda a: settings_from_args(CovarianceSettings, a)),
    ("release covariance", CovarianceSettings(mechanism="iclp", kernel="gaussian", rho=0.2, nu=None, eta=2.0,
                                              phi=0.01, epsilon=4.0, delta=1e-6, bound="sqrt2",
                                              calibration="classical", lo=-1.0, hi=1.0, centring="released-mean",
                                              gamma=0.4, person_column="p", n_public=10),
     lambda a: settings_from_args(CovarianceSettings, a)),
    ("release regression", RegressionSettings(covariates=("case",), bound_b=2.0, centre=-0.5, tau=2.0),
     lambda a: settings_from_args(RegressionSettings, a)),
    ("release regression", RegressionSettings(covariates=("case", "sex=male"), bound_b=3.5, kernel="matern",
                                              nu=1.5, rho=0.3, epsilon=2.0, lo=60.0, hi=200.0, gamma=0.5,
                                              kappa=0.1, calibration="classical"),
     lambda a: settings_from_args(RegressionSettings, a)),
]


@pytest.mark.parametrize("command,settings,from_args", ROUND_TRIPS,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(ROUND_TRIPS)])
def test_command_line_gives_the_settings_back(command, settings, from_args):
    inputs = (("--data", "FILE"),) + ((("--feature", "value:0.25,value:0.75"),) if command == "release kde" else ())
    line = command_line(command, settings, inputs=inputs)
    assert from_args(_parse(line)) == settings, line


def test_command_line_writes_only_what_differs_from_the_command_default():
    # Python's unit-ball tau (no range declared) is spelled out: the command line refuses an undeclared tau.
    assert command_line("release mean", MeanSettings(tau=None), inputs=(("--data", "FILE"),)) == (
        "python -m fdp_core release mean --data FILE --kernel matern52 --rho 0.1 --epsilon 1.0 --tau 1.0 "
        "--out OUT_DIR")
    assert command_line("release mean", MeanSettings(value_range=(0.0, 1.0)), inputs=(("--data", "FILE"),)) == (
        "python -m fdp_core release mean --data FILE --kernel matern52 --rho 0.1 --epsilon 1.0 "
        "--value-range=0.0,1.0 --out OUT_DIR")
    # PCA's default centring follows the value range: written only when it differs.
    public = PcaSettings(value_range=(0.0, 1.0), centring="public", tau=None)
    assert "--centring" not in command_line("release pca", public)
    assert "--centring none" in command_line("release pca", replace(public, centring="none"))


def test_command_line_spells_files_and_switches():
    line = command_line("release pca", PcaSettings(centring="released-mean", tau=None))
    assert "--released-mean RELEASED_MEAN_CSV" in line and "--centring" not in line
    assert "--reference REFERENCE_CSV" in command_line(
        "release mean", MeanSettings(value_range=(0.0, 1.0), reference=((0.0, 0.5), (1.0, 0.5))))
    # A switch replaces its group's value: the data-derived tau a page holds is not written.
    line = command_line("release mean", MeanSettings(tau=0.87, tau_from_data=True))
    assert "--tau-from-data" in line and "--tau " not in line


def test_command_line_refuses_what_the_command_line_cannot_say():
    with pytest.raises(ParameterError, match="sample-mean"):
        command_line("release pca", PcaSettings(centring="sample-mean"))
    with pytest.raises(ParameterError, match="None"):
        command_line("release mean", MeanSettings(kernel=None))


def test_quotes_make_hostile_text_one_word():
    settings = MeanSettings(tau=None, person_column="it's $HOME; rm -rf")
    args = _parse(command_line("release mean", settings, inputs=(("--data", "my file.csv"),)))
    assert args.data == "my file.csv" and settings_from_args(MeanSettings, args) == settings


def test_tradeoff_and_select_build_mean_settings_from_their_options():
    args = _parse("python -m fdp_core tradeoff --data F --param epsilon --values 1 --out O --mechanism frl iclp-qr "
                  "--M 7 --value-range=-1,1")
    assert settings_from_args(MeanSettings, args, mechanism="frl") == MeanSettings(mechanism="frl", M=7, tau=None,
                                                                                  value_range=(-1.0, 1.0))
    # select's own --bound (the score's sensitivity) is not the mean's bound.
    args = _parse("python -m fdp_core select --data F --epsilon 1 --penalties 1 --rhos 0.2 --select-epsilon 1 "
                  "--out O --bound linear --rho 0.7 --tau 1")
    settings = settings_from_args(MeanSettings, args, fields=select.FIELDS, rho=0.2)
    assert settings.bound == MeanSettings.bound and settings.rho == 0.2


def test_a_bad_list_is_a_one_line_parameter_error():
    args = _parse("python -m fdp_core release pca --data F --epsilon 1 --out O --epsilon-split a,b")
    with pytest.raises(ParameterError, match="--epsilon-split must be a comma list of numbers"):
        _pca_from_args(args)


# --------------------------------------------------------------------------- replay configs

CONFIG_CASES = [settings for _, settings, _ in ROUND_TRIPS] + [
    MeanSettings(value_range=(0.0, 1.0), reference=((0.0, 0.25), (0.5, 0.5), (1.0, 0.75))),
    PcaSettings(centring="released-mean"),
]


@pytest.mark.parametrize("settings", CONFIG_CASES, ids=[f"{type(s).__name__}-{i}" for i, s in enumerate(CONFIG_CASES)])
def test_config_gives_the_settings_back(settings):
    text = config_yaml({"settings": config_of(settings)})
    loaded = yaml.safe_load(text)["settings"]
    assert settings_from_config(type(settings), loaded) == settings


def test_config_refuses_unknown_keys_and_scalars_for_lists():
    with pytest.raises(ParameterError, match=r"unknown setting\(s\) sigma \(known: mechanism, kernel"):
        settings_from_config(MeanSettings, {"mechanism": "gaussian", "sigma": 3})
    with pytest.raises(ParameterError, match="settings.epsilon_split must be a list, got 0.5"):
        settings_from_config(PcaSettings, {"epsilon_split": 0.5})


def test_config_of_is_plain_data():
    config = config_of(KdeSettings(box=((0.0, 1.0), (2.0, 3.0))))
    assert config["box"] == [[0.0, 1.0], [2.0, 3.0]]
    assert list(config) == [f.name for f in fields(KdeSettings)]


# --------------------------------------------------------------------------- page controls

# Every (settings class, page family) with controls, and the session-state defaults the pages
# declared by hand before the metadata held them: the pages start where they started.
PAGE_DEFAULTS = {
    (MeanSettings, "mean"): {
        "mean_mechanism": "gaussian", "mean_bound": "tight", "mean_calibration": "analytic", "mean_log_psi": -3.0,
        "mean_M": 20, "mean_K": 20, "mean_lo": 0.0, "mean_hi": 1.0},
    (KdeSettings, "density"): {
        "density_mechanism": "gaussian", "density_bandwidth": 0.1, "density_h_silverman": False,
        "density_calibration": "analytic"},
    (KdeSettings, "release"): {"rel_kde_mechanism": "gaussian", "rel_kde_box": "0,2", "rel_kde_bandwidth": 0.0},
    (PcaSettings, "components"): {
        "pca_k": 1, "pca_basis": "kernel", "pca_gamma": 1.0, "pca_sampler": "exact", "pca_centring": "none",
        "pca_sweeps": 2000, "pca_thin": 0},
    (PcaSettings, "release"): {
        "rel_pca_k": 1, "rel_pca_basis": "kernel", "rel_pca_gamma": 1.0, "rel_pca_sampler": "deflation",
        "rel_pca_sweeps": 2000},
    (CovarianceSettings, "covariance"): {
        "cov_mechanism": "gaussian", "cov_bound": "kyfan", "cov_centre": 0.5, "cov_centring": "released-mean",
        "cov_gamma": 0.2},
    (RegressionSettings, "covariance"): {"reg_B": 2.0, "reg_gamma": 0.3, "reg_kappa": 0.05},
}
# What the untouched controls give: the dataclass defaults but where a page starts elsewhere.
UNTOUCHED = {
    (MeanSettings, "mean"): MeanSettings(lo=0.0, hi=1.0),
    (KdeSettings, "density"): KdeSettings(bandwidth=0.1),
    (KdeSettings, "release"): KdeSettings(box=((0.0, 2.0),)),  # bandwidth 0: the default rule (None)
    (PcaSettings, "components"): PcaSettings(sampler="exact", gibbs_sweeps=2000),  # thin 0: automatic (None)
    (PcaSettings, "release"): PcaSettings(sampler="deflation", gibbs_sweeps=2000),
    (CovarianceSettings, "covariance"): CovarianceSettings(centre=0.5, centring="released-mean"),
    (RegressionSettings, "covariance"): RegressionSettings(),
}
PAGES = sorted(PAGE_DEFAULTS, key=lambda cp: (cp[0].__name__, cp[1]))
PAGE_IDS = [f"{cls.__name__}-{page}" for cls, page in PAGES]
CONTROL_KEYS = [(cls, page, key) for cls, page in PAGES for key in PAGE_DEFAULTS[cls, page]]


def test_every_control_is_pinned():
    found = {(cls, c.page) for cls in (MeanSettings, KdeSettings, PcaSettings, CovarianceSettings,
                                       RegressionSettings)
             for _, opt in options_of(cls) for c in opt.controls}
    assert found == set(PAGE_DEFAULTS)


@pytest.mark.parametrize("cls,page", PAGES, ids=PAGE_IDS)
def test_page_defaults_come_from_the_dataclass(cls, page):
    assert page_defaults(cls, page) == PAGE_DEFAULTS[cls, page]
    assert page_settings(cls, page, page_defaults(cls, page)) == UNTOUCHED[cls, page]


def test_keys_are_unique_across_pages():
    """Two controls under one key would overwrite each other in the session."""
    keys = [key for cls, page in PAGES for key in page_keys(cls, page).values()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("cls,page,key", CONTROL_KEYS, ids=[f"{c.__name__}-{p}-{k}" for c, p, k in CONTROL_KEYS])
def test_a_key_nobody_set_is_refused_not_defaulted(cls, page, key):
    state = page_defaults(cls, page)
    state[key + "_renamed"] = state.pop(key)
    with pytest.raises(KeyError, match=f"'{key}'.*renamed"):
        page_settings(cls, page, state)


def test_a_misspelt_page_family_or_a_second_control_on_one_page_is_an_error():
    with pytest.raises(KeyError, match="no page control on page family 'densty'"):
        page_keys(KdeSettings, "densty")
    with pytest.raises(ValueError, match="unknown page family"):
        Control("densty", "density_x")

    @dataclass(frozen=True)
    class Twice:
        h: float = option(0.1, controls=(Control("density", "h_a"), Control("density", "h_b")))

    with pytest.raises(ValueError, match=r"Twice.h has two controls on page family 'density'"):
        page_defaults(Twice, "density")


def test_page_settings_read_every_control():
    state = {**page_defaults(MeanSettings, "mean"), "mean_mechanism": "bernstein", "mean_bound": "paper",
             "mean_calibration": "classical", "mean_log_psi": -2.0, "mean_M": 3.0, "mean_K": 4, "mean_lo": -1,
             "mean_hi": 2}
    settings = page_settings(MeanSettings, "mean", state, epsilon=0.5)
    assert settings == MeanSettings(mechanism="bernstein", bound="paper", calibration="classical", psi=0.01, M=3,
                                    K=4, lo=-1.0, hi=2.0, epsilon=0.5)
    assert isinstance(settings.M, int) and isinstance(settings.lo, float)


def test_the_release_page_reads_its_density_and_components_controls():
    state = {"rel_kde_mechanism": "iclp", "rel_kde_box": "-1,2,0,3", "rel_kde_bandwidth": 0.25}
    assert page_settings(KdeSettings, "release", state) == KdeSettings(mechanism="iclp", box=((-1.0, 2.0), (0.0, 3.0)),
                                                                        bandwidth=0.25)
    with pytest.raises(ParameterError):  # the page shows it as "Cannot prepare this release"
        page_settings(KdeSettings, "release", {**state, "rel_kde_box": "2,1"})
    state = {"rel_pca_k": 2.0, "rel_pca_basis": "fourier", "rel_pca_gamma": 0, "rel_pca_sampler": "gibbs",
             "rel_pca_sweeps": 300.0}
    settings = page_settings(PcaSettings, "release", state, centring="public")
    assert settings == PcaSettings(k=2, basis="fourier", gamma=0.0, sampler="gibbs", gibbs_sweeps=300,
                                   centring="public")
    assert isinstance(settings.k, int) and isinstance(settings.gamma, float)


def test_page_given_fields_win_over_their_controls():
    """A value the page composes (the Density page's rule h, a sampler named once k is known)."""
    state = page_defaults(KdeSettings, "density")
    assert page_settings(KdeSettings, "density", state, bandwidth=None).bandwidth is None
    state = {**page_defaults(PcaSettings, "components"), "pca_thin": 5}
    assert page_settings(PcaSettings, "components", state).gibbs_thin == 5
    assert page_settings(PcaSettings, "components", state, sampler="deflation", gibbs_thin=None) == PcaSettings(
        sampler="deflation", gibbs_sweeps=2000)


def test_covariance_and_regression_controls():
    state = {**page_defaults(CovarianceSettings, "covariance"), "cov_mechanism": "iclp", "cov_bound": "sqrt2",
             "cov_centre": -1, "cov_centring": "public", "cov_gamma": 0.35}
    assert page_settings(CovarianceSettings, "covariance", state, tau=2.0) == CovarianceSettings(
        mechanism="iclp", bound="sqrt2", centre=-1.0, centring="public", gamma=0.35, tau=2.0)
    # A declared value range replaces the centre control's value.
    assert page_settings(CovarianceSettings, "covariance", state, centre=None, lo=0.0, hi=1.0).centre is None
    state = {"reg_B": 3, "reg_gamma": 0.5, "reg_kappa": 0.1}
    settings = page_settings(RegressionSettings, "covariance", state, covariates=("group=B",))
    assert settings == RegressionSettings(covariates=("group=B",), bound_b=3.0, gamma=0.5, kappa=0.1)
    assert isinstance(settings.bound_b, float)


def test_pages_name_controls_by_field_never_by_a_literal_key():
    """pages/ and fdp_ui/ write a control's key as KEYS[field]: a literal copy would keep the old
    key when the metadata's key is renamed."""
    import io
    import tokenize

    keys = {key for cls, page in PAGES for key in page_keys(cls, page).values()}
    root = Path(APP).parent
    found = []
    for path in [root / "app.py", *sorted((root / "pages").glob("*.py")), *sorted((root / "fdp_ui").glob("*.py"))]:
        for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if token.type == tokenize.STRING and token.string.strip("\"'") in keys:
                found.append(f"{path.name}:{token.start[0]} {token.string}")
    assert not found, found


WIDGETS = ("selectbox", "radio", "slider", "select_slider", "number_input", "toggle", "checkbox", "text_input",
           "multiselect")


def _widget_keys(at) -> set:
    return {w.key for kind in WIDGETS for w in getattr(at, kind)}


def _page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(path)
    at.run()
    assert not at.exception, at.exception
    return at


def _missing(at, cls, page) -> set:
    assert not at.exception, at.exception
    return set(page_keys(cls, page).values()) - _widget_keys(at)


def test_mean_and_tradeoff_pages_draw_every_control_the_metadata_names():
    """A control drawn under another key than the metadata's would leave the Release page
    committing the default: the pages must hold every key."""
    at = _page("pages/mean.py")
    at.toggle(key="mean_compare").set_value(True).run()  # every mechanism: every control shown
    assert not _missing(at, MeanSettings, "mean")
    at.switch_page("pages/tradeoffs.py").run()
    at.session_state["to_options_open"] = True  # the mechanism options: a lazy expander, drawn while open
    at.run()
    assert _missing(at, MeanSettings, "mean") <= {page_keys(MeanSettings, "mean")["mechanism"]}


def test_density_page_draws_every_control_the_metadata_names():
    at = _page("pages/density.py")
    assert not _missing(at, KdeSettings, "density")


def test_components_page_draws_every_control_the_metadata_names():
    at = _page("pages/components.py")
    at.session_state["pca_sweeps"] = 100  # a short chain: the Gibbs controls show with the sampler
    at.radio(key="pca_sampler").set_value("gibbs").run()
    assert not _missing(at, PcaSettings, "components")


def test_release_page_draws_every_density_and_components_control():
    at = _page("pages/release.py")
    at.radio(key="rel_kind").set_value("kde").run()
    assert not _missing(at, KdeSettings, "release")
    at.radio(key="rel_kind").set_value("pca").run()
    assert not _missing(at, PcaSettings, "release")


def test_covariance_page_draws_every_covariance_and_regression_control():
    at = _page("pages/covariance.py")  # no declared value range: the centre control is shown
    assert not _missing(at, CovarianceSettings, "covariance")
    assert not _missing(at, RegressionSettings, "covariance")
