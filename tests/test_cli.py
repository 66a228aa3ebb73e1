"""CLI contract: bad input -> one-line message, exit status 2, nothing written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fdp_core.cli import main
from test_data import BAD_FILES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"


def _args(data, out, **overrides):
    opts = {"--mechanism": "gaussian", "--kernel": "matern52", "--rho": "0.1", "--eta": "1.5", "--phi": "0.001",
            "--epsilon": "1", "--delta": "1e-5", "--tau": "1", "--bound": "tight", "--calibration": "analytic",
            "--seed": "3"}
    opts.update(overrides)
    args = ["release", "mean", "--preview", "--data", str(data), "--out", str(out)]
    for key, value in opts.items():
        if value is not None:
            args += [key, value]
    return args


@pytest.mark.parametrize("name,raw,fragment", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_exit_2_with_the_specific_message(name, raw, fragment, tmp_path, capsys):
    data = tmp_path / "bad.csv"
    data.write_bytes(raw)
    assert main(_args(data, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and err.startswith("error: ")
    assert not (tmp_path / "out" / "release.json").exists()


@pytest.mark.parametrize("flag,value,fragment", [
    ("--epsilon", "0", "epsilon must be > 0"), ("--epsilon", "-1", "epsilon must be > 0"),
    ("--delta", "0", "delta must be in (0, 1)"), ("--delta", "1", "delta must be in (0, 1)"),
    ("--tau", "0", "tau must be > 0"), ("--tau", "-2", "tau must be > 0"),
    ("--rho", "0", "rho must be > 0"), ("--rho", "-1", "rho must be > 0"),
    ("--phi", "0", "phi must be > 0"), ("--eta", "0.5", "eta must be >= 1"),
    ("--epsilon", "nan", "epsilon must be finite"), ("--rho", "abc", "invalid float value"),
    ("--kernel", "rbf", "invalid choice"), ("--seed", "-1", "--seed must be a non-negative integer"),
])
def test_bad_parameters_exit_2(flag, value, fragment, tmp_path, capsys):
    assert _exit_code(_args(EXAMPLE, tmp_path / "out", **{flag: value})) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def _exit_code(args) -> int:
    """main() returns the status; argparse's own errors exit through SystemExit."""
    try:
        return main(args)
    except SystemExit as exc:
        return exc.code


def test_classical_calibration_refuses_large_epsilon(tmp_path, capsys):
    assert main(_args(EXAMPLE, tmp_path / "o", **{"--epsilon": "2", "--calibration": "classical"})) == 2
    assert "only valid for epsilon <= 1" in capsys.readouterr().err


def test_missing_file(tmp_path, capsys):
    assert main(_args(tmp_path / "nope.csv", tmp_path / "o")) == 2
    assert "file not found" in capsys.readouterr().err


def test_release_mean_round_trip_as_a_subprocess(tmp_path):
    out = tmp_path / "release"
    proc = subprocess.run([sys.executable, "-m", "fdp_core", *_args(EXAMPLE, out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((out / "release.json").read_text())
    for key in ("mechanism", "kernel", "rho", "eta", "phi", "epsilon", "delta", "tau", "bound", "calibration", "n",
                "m", "n_policy", "unit_of_privacy", "sensitivity", "sigma", "expected_sq_l2_error",
                "data_dependent_flags"):
        assert key in record, key
    analyst = json.loads((out / "analyst_view.json").read_text())
    for key in ("n_dropped", "n_clipped"):
        assert key not in record and key in analyst, key
    assert record["n"] == 60 and record["m"] == 27 and record["data_dependent_flags"] == []
    table = (out / "release.csv").read_text().splitlines()
    assert table[0] == "t,value" and len(table) == 28
    # Same seed, same release (demo reproducibility); the raw data never appears.
    again = tmp_path / "again"
    subprocess.run([sys.executable, "-m", "fdp_core", *_args(EXAMPLE, again)], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    assert (again / "release.csv").read_text() == (out / "release.csv").read_text()
    raw_cells = {c for line in EXAMPLE.read_text().splitlines()[1:] for c in line.split(",")[2:]}
    written = (out / "release.csv").read_text() + (out / "release.json").read_text()
    assert not any(cell in written for cell in raw_cells if len(cell) > 4)


def test_bad_input_as_a_subprocess_has_no_traceback(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"0,0.5,1\n1,2\n")
    proc = subprocess.run([sys.executable, "-m", "fdp_core", *_args(bad, tmp_path / "o")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_tau_from_data_is_flagged_in_the_record(tmp_path):
    out = tmp_path / "o"
    assert main(_args(EXAMPLE, out, **{"--tau": None}) + ["--tau-from-data"]) == 0
    record = json.loads((out / "release.json").read_text())
    assert record["data_dependent_flags"] and record["differentially_private"] is False


def test_negative_comma_lists_are_values_not_options(tmp_path):
    """--box -1,2 must reach the command as the box, not be taken for an option name."""
    out = tmp_path / "kde"
    code = _exit_code(["release", "kde", "--preview", "--data", str(EXAMPLE), "--feature", "value:0.5", "--mechanism", "gaussian",
                       "--epsilon", "1", "--delta", "0.1", "--box", "-1,3", "--grid-size", "64", "--seed", "1",
                       "--out", str(out)])
    assert code == 0
    assert json.loads((out / "release.json").read_text())["box"] == [[-1.0, 3.0]]


def _leaf_parsers(parser, path=()):
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _leaf_parsers(sub, path + (name,))


def test_lazy_parser_has_the_same_commands_helps_and_options_as_the_eager_one():
    """main() builds the tree lazily (a command's options are added when it is chosen); the
    result must be the parser the eager build gives, command by command."""
    from fdp_core.cli import build_parser

    eager, lazy = build_parser(), build_parser(lazy=True)
    assert eager.format_help() == lazy.format_help()
    eager_leaves, lazy_leaves = dict(_leaf_parsers(eager)), dict(_leaf_parsers(lazy))
    assert eager_leaves.keys() == lazy_leaves.keys() and len(eager_leaves) >= 10
    for path, parser in eager_leaves.items():
        assert lazy_leaves[path].pending_module is not None  # not configured until used
        assert lazy_leaves[path].format_help() == parser.format_help(), path


def test_help_imports_no_command_module_and_no_scipy(tmp_path):
    """`--help` needs only each command's name and help: importing the command modules (and
    scipy, pandas behind them) made it take ~2 s. `release mean --help` imports only its module."""
    probe = ("import sys, contextlib, io\n"
             "from fdp_core.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
             "print(sorted(m for m in sys.modules if m.startswith(('fdp_core.commands.', 'scipy', 'pandas'))))")
    top = subprocess.run([sys.executable, "-c", probe, "--help"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert top.stdout.strip() == "[]"
    mean = subprocess.run([sys.executable, "-c", probe, "release", "mean", "--help"], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    commands = [m for m in eval(mean.stdout) if m.startswith("fdp_core.commands.")]
    # release mean and its sparse route (a helper module of the same command)
    assert commands == ["fdp_core.commands._common", "fdp_core.commands.publishing", "fdp_core.commands.release_mean",
                        "fdp_core.commands.sparse_mean"]
    assert "scipy.stats" not in mean.stdout


def test_importing_the_mean_module_does_not_import_scipy_stats():
    """scipy.stats costs ~0.4-0.9 s to import; only the Bernstein basis needs it, at call time."""
    probe = "import sys, fdp_core.releases.mean; print('scipy.stats' in sys.modules, 'scipy.spatial' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False False"
