"""One set of defaults: a release planned from Python equals the command line's (issue 44).

The command line derives tau from --value-range ((hi - lo)/2) and centres PCA at the range's
midpoint; Python's settings classes follow the same rule (params.default_l2_clip and
PcaSettings.__post_init__), so the same inputs give the same public record field by field.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import fdp_core as fdp
from fdp_core import cli
from fdp_core.releases import mean as mean_release
from fdp_core.releases import pca as pca_release

# Public, deterministic fields of the records (the noise, the seed and time stamps differ by design).
MEAN_FIELDS = ("mechanism", "kernel", "rho", "eta", "phi", "epsilon", "delta", "tau", "n", "m", "unit_of_privacy",
               "person_column", "value_range", "centre", "sensitivity", "sigma", "expected_sq_l2_error",
               "l2_error_radius_95")
PCA_FIELDS = ("k", "basis", "kernel", "rho", "epsilon", "gamma", "tau", "n", "centring", "unit_of_privacy",
              "person_column", "value_range")


def _cli_record(argv, out: Path) -> dict:
    try:
        code = cli.main([str(a) for a in argv] + ["--out", str(out)])
    except SystemExit as exc:  # argparse
        code = exc.code
    assert code in (0, None), argv
    return json.loads((out / "release.json").read_text())


def _same(python: dict, command_line: dict, names) -> None:
    for name in names:
        if name not in python and name not in command_line:
            continue
        a, b = python.get(name), command_line.get(name)
        if isinstance(a, float) or isinstance(b, float):
            assert a == pytest.approx(b, rel=1e-9, abs=0.0), name
        else:
            assert a == b, name


@pytest.fixture
def dti(shared_data):
    return shared_data / "dti_cca.csv"


def test_python_mean_with_a_range_has_the_command_lines_tau_and_error(dti, tmp_path):
    fd = fdp.load_curves(dti)
    settings = fdp.MeanSettings(value_range=(0, 1), person_column="subject", epsilon=1.0, delta=1e-5)
    assert settings.tau is None  # the range decides, at plan time
    plan = fdp.plan_mean_release(fd, settings)
    assert plan.tau == pytest.approx(0.5)
    python = mean_release.release_record(plan, plan.sample(np.random.default_rng(0), 1)[0])
    command_line = _cli_record(["release", "mean", "--data", dti, "--kernel", "matern52", "--rho", "0.1", "--person-column", "subject", "--value-range",
                                "0,1", "--epsilon", "1", "--delta", "1e-5"], tmp_path / "out")
    _same(python, command_line, MEAN_FIELDS)
    assert command_line["tau"] == 0.5 and python["expected_sq_l2_error"] == pytest.approx(
        command_line["expected_sq_l2_error"], rel=1e-9)


def _example():
    return fdp.load_curves(Path(__file__).resolve().parents[1] / "data" / "example_curves.csv")


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp-qr", "frl"])
def test_every_mean_mechanism_agrees_on_the_example(mechanism, tmp_path):
    path = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"
    settings = fdp.MeanSettings(mechanism=mechanism, value_range=(-2, 2), epsilon=2.0)
    plan = fdp.plan_mean_release(_example(), settings)
    python = mean_release.release_record(plan, plan.sample(np.random.default_rng(0), 1)[0])
    command_line = _cli_record(["release", "mean", "--data", path, "--kernel", "matern52", "--rho", "0.1", "--mechanism", mechanism, "--value-range=-2,2",
                                "--epsilon", "2"], tmp_path / "out")
    _same(python, command_line, MEAN_FIELDS)
    assert python["tau"] == 2.0


def test_python_pca_centres_at_the_range_and_takes_its_tau(tmp_path):
    path = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"
    settings = fdp.PcaSettings(value_range=(-2, 2), epsilon=2.0, k=1)
    assert settings.centring == "public" and fdp.PcaSettings().centring == "none"
    result = fdp.private_pca(_example(), settings, np.random.default_rng(0))
    python = pca_release.release_record(result)
    command_line = _cli_record(["release", "pca", "--data", path, "--kernel", "matern52", "--rho", "0.1", "--value-range=-2,2", "--epsilon", "2", "--k", "1"],
                               tmp_path / "out")
    _same(python, command_line, PCA_FIELDS)
    assert python["tau"] == command_line["tau"] == 2.0


def test_without_a_range_python_takes_the_unit_ball_and_the_command_line_refuses(tmp_path, capsys):
    assert fdp.MeanSettings().tau == 1.0 and fdp.PcaSettings().tau == 1.0
    assert fdp.MeanSettings(tau_from_data=True).tau is None
    path = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"
    code = cli.main(["release", "mean", "--data", str(path), "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1",
                     "--out", str(tmp_path / "o")])
    assert code == 2 and "tau (the public L2 norm bound) is required" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- three fronts: the app too

def _app_commit(kind: str, page: str, setup=None):
    """Explore ``kind`` on its page of the app (built-in example data, range declared), commit the
    draft from the Release page; returns (the draft's settings, the committed record, its inputs)."""
    from streamlit.testing.v1 import AppTest

    from fdp_ui import drafts
    from test_release_flow import acknowledge, declare_range

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.run()
    declare_range(at)
    at.switch_page(page).run()
    if setup is not None:
        setup(at)
    assert not at.exception, at.exception
    draft = at.session_state[drafts.DRAFTS_KEY][kind]
    at.switch_page("pages/release.py").run()
    at.radio(key="rel_kind").set_value(kind).run()
    acknowledge(at)
    at.button(key="rel_commit").click().run()
    assert not at.exception, at.exception
    release = at.session_state["fdp_releases"][-1]
    return draft.settings, json.loads(json.dumps(release.record, default=str)), dict(getattr(draft, "inputs", None) or {})


def _python_commit(kind: str, settings, inputs) -> dict:
    from fdp_core.publish import kinds
    from fdp_core.publish.protocol import CommitRequest

    release = kinds.commit(kind, fdp.Ledger(50.0, 1e-3), CommitRequest(_example(), settings, inputs=inputs))
    return json.loads(json.dumps(release.record, default=str))


def _cli_from_settings(command: str, settings, inputs, out: Path) -> dict:
    import shlex

    from fdp_core.settings_fields import command_line

    line = command_line(command, settings, inputs=(("--data", str(_example_path())),) + tuple(inputs), out=str(out))
    return _cli_record(shlex.split(line)[3:-2], out)


def _example_path() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"


KIND_FIELDS = {"mean": MEAN_FIELDS, "pca": PCA_FIELDS,
               "kde": ("mechanism", "epsilon", "delta", "n", "box", "bandwidth", "sensitivity", "sigma",
                       "expected_sq_l2_error", "unit_of_privacy", "person_column", "feature")}


@pytest.mark.parametrize("kind,page,command", [("mean", "pages/mean.py", "release mean"),
                                               ("pca", "pages/components.py", "release pca"),
                                               ("kde", "pages/density.py", "release kde")])
def test_app_python_and_command_line_give_the_same_record(kind, page, command, tmp_path):
    setup = (lambda at: at.radio(key="density_source").set_value("curves").run()) if kind == "kde" else None
    settings, app, inputs = _app_commit(kind, page, setup)
    python = _python_commit({"kde": "density", "pca": "components"}.get(kind, kind), settings, inputs)
    cli_inputs = (("--feature", inputs["feature"]),) if kind == "kde" else ()
    command_line = _cli_from_settings(command, settings, cli_inputs, tmp_path / "out")
    for name in KIND_FIELDS[kind]:
        if name in app or name in python or name in command_line:
            assert app.get(name) == python.get(name) or app.get(name) == pytest.approx(python.get(name), rel=1e-9), name
            assert command_line.get(name) == python.get(name) or command_line.get(name) == pytest.approx(
                python.get(name), rel=1e-9), name
