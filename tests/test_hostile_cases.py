"""Issue 26: each hostile case found from outside, as a regression test.

Contract (fdp_core/errors.py, README "Bad input"): one specific line on stderr, exit status
2, nothing written, within seconds; never a traceback, a hang or a silent wrong result.
The CLI runs in-process (fdp_core.cli.main) under a SIGALRM time limit.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import warnings
from pathlib import Path

import numpy as np
import pytest

from fdp_core import cli
from fdp_core.budget.accounting import Ledger
from fdp_core.publish import export
from fdp_core.data.loading import load_curves, to_wide_csv
from fdp_core.errors import DataError
from fdp_core.releases.mean import MeanSettings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WIDE = FIXTURES / "wide.csv"
MEAN = ["--kernel", "gaussian", "--rho", "0.01", "--epsilon", "1", "--delta", "1e-6", "--tau", "5"]
BAD_PG_URL = "postgresql://:::@@@/??"
CLI_LIMIT_S = 10  # the bound for one CLI refusal


# One SIGALRM time limit for every hostile-input test (tests/test_hostile_input.py).
from test_hostile_input import Hang, time_limit  # noqa: E402,F401


def run_cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit(CLI_LIMIT_S):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a warning line before the error is a defect too
            try:
                code = cli.main([str(a) for a in argv])
            except SystemExit as exc:
                code = exc.code
    return code, out.getvalue(), err.getvalue()


def refused(argv, *fragments, out_dir: Path | None = None) -> str:
    """Assert the one-line refusal (exit 2, nothing written) and return the message."""
    code, stdout, stderr = run_cli(argv)
    lines = stderr.strip().splitlines()
    assert code == 2, f"exit {code}: {stderr}"
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    if out_dir is not None:
        assert not out_dir.exists() or not any(out_dir.iterdir()), "files written on a refusal"
    return lines[0]


@pytest.fixture
def config_yaml(tmp_path) -> Path:
    """A valid exported config.yaml (mean release) and its data file."""
    data = tmp_path / "data.csv"
    data.write_text(WIDE.read_text())
    fd = load_curves(data)
    settings = MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-6, tau=5.0, phi=1e-2)
    release = export.commit_mean(Ledger(3.0, 1e-5), fd, settings, data_label="data.csv")
    export.export_folder(release, tmp_path / "original", Ledger(3.0, 1e-5))
    return tmp_path / "original" / "config.yaml"


# --------------------------------------------------------------------------- tracebacks

@pytest.mark.parametrize("text, fragment", [("[" * 5000 + "]" * 5000, "nested too deeply"),
                                            ("{a: " * 5000 + "1" + "}" * 5000, "nested too deeply"),
                                            ("a:\n" + "".join(" " * i + "-\n" for i in range(300)), "nested too deeply"),
                                            # 4.5 MB of indentation: refused by its size before it is parsed
                                            ("a:\n" + "".join(" " * i + "-\n" for i in range(3000)), "the limit for a config")])
def test_deeply_nested_replay_config_is_one_line(tmp_path, text, fragment):
    config = tmp_path / "deep.yaml"
    config.write_text(text)
    refused(["replay", config, "--data", WIDE, "--out", tmp_path / "out", "--no-ledger"], fragment,
            out_dir=tmp_path / "out")


@pytest.mark.parametrize("command", [["ledger", "init", "--epsilon", "1", "--delta", "1e-6"], ["ledger", "show"]])
def test_malformed_postgres_url_in_ledger_commands(command):
    message = refused(command + ["--data", WIDE, "--ledger", BAD_PG_URL], "malformed PostgreSQL ledger URL")
    assert ":::@@@" not in message  # the URL may hold a password: not echoed


def test_malformed_postgres_url_in_replay(tmp_path, config_yaml):
    refused(["replay", config_yaml, "--data", WIDE, "--out", tmp_path / "out", "--ledger", BAD_PG_URL],
            "malformed PostgreSQL ledger URL", out_dir=tmp_path / "out")


@pytest.mark.parametrize("url", ["postgresql://[::1", "postgres://%zz@h/db", "postgresql://h/db?sslmode"])
def test_other_malformed_postgres_urls(url):
    refused(["ledger", "show", "--data", WIDE, "--ledger", url], "malformed PostgreSQL ledger URL")


# --------------------------------------------------------------------------- special files (hangs)

@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


def test_dev_zero_is_refused_before_reading(tmp_path):
    refused(["release", "mean", "--preview", "--data", "/dev/zero", "--out", tmp_path / "out", *MEAN], "is a device",
            out_dir=tmp_path / "out")


def test_named_pipe_is_refused_before_reading(tmp_path, fifo):
    refused(["release", "mean", "--preview", "--data", fifo, "--out", tmp_path / "out", *MEAN], "is a named pipe",
            out_dir=tmp_path / "out")
    refused(["ledger", "init", "--data", fifo, "--epsilon", "1", "--delta", "1e-6"], "is a named pipe")


def test_named_pipe_as_replay_config_or_data(tmp_path, fifo, config_yaml):
    refused(["replay", fifo, "--data", WIDE, "--no-ledger"], "is a named pipe, not a config file")
    refused(["replay", config_yaml, "--data", fifo, "--no-ledger", "--out", tmp_path / "out"], "is a named pipe",
            out_dir=tmp_path / "out")


def test_socket_is_refused(tmp_path):
    path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(DataError, match="is a socket"):
            load_curves(path)


def test_symlink_to_a_regular_file_still_loads(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(WIDE)
    assert load_curves(link).n == load_curves(WIDE).n


def test_wide_csv_round_trip_unaffected(tmp_path):
    fd = load_curves(WIDE)
    path = tmp_path / "again.csv"
    path.write_text(to_wide_csv(fd))
    np.testing.assert_array_equal(load_curves(path).data_matrix, fd.data_matrix)


# --------------------------------------------------------------------------- silent wrong data

def _numeric_wide(n: int = 6, m: int = 8, header=None) -> str:
    rng = np.random.default_rng(3)
    grid = header or [f"{t:g}" for t in np.linspace(0, 1, m)]
    rows = [",".join(f"{v:.5f}" for v in rng.normal(size=len(grid))) for _ in range(n)]
    return ",".join(grid) + "\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("text", [_numeric_wide() + _numeric_wide(),  # numbers only: the fast path reads it
                                  WIDE.read_text() + WIDE.read_text()])  # metadata columns too
def test_a_repeated_header_line_is_refused(tmp_path, text):
    path = tmp_path / "joined.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=r"row \d+ repeats the header line"):
        load_curves(path)
    refused(["release", "mean", "--preview", "--data", path, "--out", tmp_path / "out", *MEAN], "repeats the header line",
            out_dir=tmp_path / "out")


def test_a_repeated_header_line_is_refused_in_a_wide_file(tmp_path):
    # The case: a wide export (hundreds of grid points) concatenated with itself.
    text = _numeric_wide(n=20, m=500)
    with pytest.raises(DataError, match="row 22 repeats the header line"):
        load_curves((text + text).encode())


def test_a_curve_equal_to_its_grid_but_spelt_otherwise_still_loads():
    # The identity curve t -> t, written with other digits than the header: data, not a header.
    text = _numeric_wide(m=5) + "0.0,0.250,0.50,0.750,1.0\n"
    fd = load_curves(text.encode())
    np.testing.assert_array_equal(fd.data_matrix[-1], fd.grid_points)


def test_a_repeated_header_line_is_refused_by_the_streaming_engine(tmp_path):
    path = tmp_path / "joined.csv"
    path.write_text(_numeric_wide() + _numeric_wide())
    refused(["release", "mean", "--preview", "--data", path, "--out", tmp_path / "out", "--engine", "stream", *MEAN],
            "repeats the header line", out_dir=tmp_path / "out")


# --------------------------------------------------------------------------- wrong cause (files above MAX_SLOW_BYTES)

def _pyarrow_csv(path: Path, n: int = 400, m: int = 50) -> Path:
    """A wide CSV as pyarrow's own writer writes it: every header cell quoted."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(1)
    table = pa.table({f"{t:g}": rng.normal(size=n) for t in np.linspace(0, 1, m)})
    pacsv.write_csv(table, str(path))
    assert path.read_bytes().startswith(b'"0","0.0204082"')
    return path


def test_a_big_csv_with_a_quoted_header_loads(tmp_path, monkeypatch):
    # Above MAX_SLOW_BYTES (200 MB; lowered here) only the fast reader may read a file.
    from fdp_core.data import loading as data

    path = _pyarrow_csv(tmp_path / "pyarrow.csv")
    monkeypatch.setattr(data, "MAX_SLOW_BYTES", path.stat().st_size // 10)
    fd = load_curves(path)
    assert (fd.n, fd.m) == (400, 50)


@pytest.mark.parametrize("head, cause", [(b"\n", "starts with a blank line"), (b'"a\nb",', "spans lines"),
                                         (b"\xe9", "is not UTF-8")])
def test_a_big_csv_the_fast_reader_cannot_read_is_refused_with_its_cause(tmp_path, monkeypatch, head, cause):
    from fdp_core.data import loading as data

    path = tmp_path / "big.csv"
    body = _numeric_wide(n=200, m=20)
    path.write_bytes(head + body.encode())
    monkeypatch.setattr(data, "MAX_SLOW_BYTES", 1000)
    with pytest.raises(DataError, match=cause):
        load_curves(path)


# --------------------------------------------------------------------------- untidy output

LABELS = ["C:\\new\\x", 'say """hi"""', "two\nlines", "{release_id} {0}", "ends with \\", "<script>alert(1)</script>",
          "# heading [link](http://x) *bold* `code`", "\x00\x1b[31m"]


@pytest.mark.parametrize("label", LABELS)
def test_the_bundle_script_parses_whatever_the_label(label):
    import ast

    from fdp_core.publish import rerun

    text = rerun.script_text("abc123", label, "upload: C:\\new\\x.csv")
    tree = ast.parse(text)  # raised SyntaxError for C:\new\x in the docstring
    constants = {node.targets[0].id: node.value.value for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)}
    assert constants["RELEASE_LABEL"] == label


@pytest.mark.parametrize("label", LABELS)
def test_the_notebook_markdown_escapes_the_label(label):
    import json

    from fdp_core.publish import rerun

    notebook = json.loads(rerun.notebook_text("abc123", label, "upload: <b>x</b>.csv"))
    title = notebook["cells"][0]["source"][0]
    assert title.startswith("# Verify fdp release `abc123`: ")
    shown = title.split(": ", 1)[1].rstrip("\n")
    assert "\n" not in shown and "<" not in shown and ">" not in shown
    for special in "`*_[]()#":
        assert special not in shown.replace("\\" + special, "")
    assert "<b>" not in json.dumps(notebook)


def test_a_huge_budget_name_is_not_echoed(tmp_path):
    name = "x" * 100_000
    message = refused(["ledger", "init", "--data", WIDE, "--epsilon", "1", "--delta", "1e-6", "--name", name],
                      "a budget name is 1 to 100 printable characters", "(100,000 characters)")
    assert len(message) < 300


def test_a_huge_unknown_argument_is_not_echoed():
    message = refused(["release", "mean", "--preview", "--data", WIDE, "--out", "o", *MEAN, "--label", "y" * 100_000],
                      "unrecognized arguments", "(100,000 characters)")
    assert len(message) < 300


@pytest.mark.parametrize("argv, fragment", [
    (["--rho", "1e-300", "--kernel", "matern52"], "rho = 1e-300"),
    (["--rho", "1e-300", "--kernel", "matern32"], None),
    (["--rho", "1e-300", "--kernel", "exponential"], None),
])
def test_no_runtime_warning_lines_before_the_message(tmp_path, argv, fragment):
    # run_cli turns RuntimeWarning into an error: a warning escaping would fail the exit code check
    args = dict(zip(MEAN[::2], MEAN[1::2]))
    args.update(dict(zip(argv[::2], argv[1::2])))
    flat = [x for kv in args.items() for x in kv]
    code, _, stderr = run_cli(["release", "mean", "--preview", "--data", WIDE, "--out", tmp_path / "out", *flat])
    assert code in (0, 2) and "Warning" not in stderr, stderr
    if fragment:
        assert code == 2 and fragment in stderr


def test_an_overflowing_grid_span_is_one_line_without_warnings(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("-1e308,1e308\n1,2\n3,5\n")
    refused(["release", "mean", "--preview", "--data", path, "--out", tmp_path / "out", *MEAN], "the grid spans -1e308 to 1e308")


# --------------------------------------------------------------------------- accepted without a word

NO_CENTRE = MEAN + ["--centre", "0"]


@pytest.mark.parametrize("argv, fragments", [
    (["release", "mean", "--preview", *MEAN, "--epsilon", "1e300"], ["epsilon = 1e+300 is above the limit of 1e+06"]),
    (["release", "mean", "--preview", *MEAN, "--n-public", str(10**18)], ["more than 100 times the 12 persons"]),
    (["tradeoff", *MEAN, "--param", "epsilon", "--values", "0.5,1", "--quantiles", "0.9", "0.1"],
     ["LOW HIGH with 0 < LOW < HIGH < 1, got 0.9 0.1"]),
    (["tradeoff", *MEAN, "--param", "epsilon", "--values", "0.5,1", "--quantiles", "0.5", "0.5"], ["LOW HIGH"]),
    (["release", "regression", "--preview", *NO_CENTRE, "--B", "2", "--covariates", "site=alien"],
     ["'site=alien' matches no row", "levels: south, north"]),
    (["release", "covariance", "--preview", *NO_CENTRE, "--components", "1000000"], ["--components", "limit of 2000"]),
])
def test_values_that_void_the_release_are_refused(tmp_path, argv, fragments):
    out = tmp_path / "out"
    refused([*argv, "--data", WIDE, "--out", out], *fragments, out_dir=out)


def test_ledger_init_refuses_a_duplicate_split_and_an_empty_name(tmp_path):
    base = ["ledger", "init", "--data", WIDE, "--epsilon", "1", "--delta", "1e-6"]
    refused([*base, "--split", "mean=1,mean=2"], "names 'mean' twice")
    refused([*base, "--name", ""], "a budget name is 1 to 100 printable characters, got ''")
    code, _, _ = run_cli(["ledger", "show", "--data", WIDE])
    assert code == 2  # nothing was created by the refusals: no budget for these data


def test_epsilon_at_the_documented_maximum_is_accepted():
    from fdp_core import limits
    from fdp_core.params import check_epsilon

    assert check_epsilon(limits.MAX_EPSILON) == limits.MAX_EPSILON
    with pytest.raises(Exception, match="above the limit"):
        check_epsilon(np.nextafter(limits.MAX_EPSILON, np.inf))


def test_n_public_within_the_factor_is_accepted(tmp_path):
    code, stdout, stderr = run_cli(["release", "mean", "--preview", *MEAN, "--n-public", "1200", "--data", WIDE,
                                    "--out", tmp_path / "out"])
    assert code == 0 and "n=1200" in stdout, stderr


def test_more_components_than_the_release_has_get_a_note(tmp_path):
    code, stdout, stderr = run_cli(["release", "covariance", "--preview", *NO_CENTRE, "--components", "500", "--data", WIDE,
                                    "--out", tmp_path / "out"])
    assert code == 0, stderr
    assert "note: analyst_view.json shows the L =" in stdout and "not the 500 asked" in stdout


def test_every_max_constant_lives_in_limits():
    """limits.py is the one table: no other fdp_core module defines a MAX_* number of its own."""
    import re

    root = Path(__file__).resolve().parents[1] / "fdp_core"
    pattern = re.compile(r"^(MAX_\w+)\s*=\s*(\S+)", re.M)
    offenders = [f"{p.relative_to(root)}: {m.group(1)}" for p in root.rglob("*.py") if p.name != "limits.py"
                 for m in pattern.finditer(p.read_text()) if not m.group(2).startswith("limits.")]
    assert not offenders, offenders


# --------------------------------------------------------------------------- found by tests/test_properties.py

@pytest.mark.parametrize("path", ["\x00", "a\x00b.csv"])
def test_a_nul_byte_in_a_path_is_one_line(tmp_path, path):
    refused(["release", "mean", "--preview", "--data", path, "--out", tmp_path / "out", *MEAN], out_dir=tmp_path / "out")
    refused(["replay", path, "--data", WIDE, "--no-ledger"])
    refused(["release", "mean", "--preview", "--data", WIDE, "--out", tmp_path / "out", *MEAN, "--reference", path],
            out_dir=tmp_path / "out")
