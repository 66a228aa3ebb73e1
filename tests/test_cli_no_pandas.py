"""The command line's ``release mean`` on a wide CSV runs without importing pandas (issue 42),
and writes the same bytes as the pandas routes it replaces."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from fdp_core import cli
from fdp_core.cli import main as cli_main
from fdp_core.data import arrow_io
from fdp_core.data.layouts import metadata_frame
from fdp_core.data.loading import FunctionalData, LoadReport, load_curves
from fdp_core.data.meta_columns import MetaColumns
from fdp_core.data.preprocess import FilePersons
from fdp_core.publish.release import _pandas_version, csv_text

ROOT = Path(__file__).resolve().parents[1]
MEAN = ["release", "mean", "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1", "--seed", "1", "--preview"]
# Runs the CLI and reports, at exit, which heavy modules it imported.
RUNNER = ("import runpy, sys\nsys.argv = ['fdp_core'] + sys.argv[1:]\ntry:\n    runpy.run_module('fdp_core', "
          "run_name='__main__')\nexcept SystemExit as exc:\n    print('EXIT', exc.code, 'pandas' in sys.modules, "
          "file=sys.stderr)\n")
VARIANTS = {"person column and range": ["--person-column", "subject", "--value-range", "0,1"],
            "tau from the data": ["--tau-from-data"],
            "confidence band": ["--person-column", "subject", "--value-range", "0,1", "--confidence-band", "0.9"]}


def _files(out: Path) -> dict:
    record = json.loads((out / "release.json").read_text())
    record.pop("created_utc")
    return {"release.json": record, "release.csv": (out / "release.csv").read_bytes(),
            "analyst_view.json": (out / "analyst_view.json").read_bytes()}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_release_mean_imports_no_pandas_and_writes_what_the_pandas_route_writes(variant, shared_data, tmp_path):
    argv = MEAN + ["--data", str(shared_data / "dti_cca.csv"), *VARIANTS[variant]]
    run = subprocess.run([sys.executable, "-c", RUNNER, *argv, "--out", str(tmp_path / "light")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert "EXIT 0 False" in run.stderr, run.stderr[-2000:]  # exit status 0, pandas never imported
    # In this process pandas is loaded, so the loader and the person grouping take their pandas
    # branches (pyarrow's to_numpy, pd.factorize, pd.isna) and the DataFrame is built: same bytes.
    assert cli_main([*argv, "--out", str(tmp_path / "pandas")]) == 0
    assert _files(tmp_path / "light") == _files(tmp_path / "pandas")


def test_release_csv_is_the_bytes_pandas_writes():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.normal(size=500) * 10.0 ** rng.integers(-30, 30, 500),
                             [0.0, -0.0, 0.1, 1 / 3, 1e16, 1e-5, 5e-324, np.nan, np.inf, -np.inf]])
    table = {"t": np.linspace(0, 1, values.size), "value": values, "privacy_lower": values - 1}
    assert csv_text(table) == pd.DataFrame(table).to_csv(index=False)
    odd = {"t": np.arange(3), "a,b": np.ones(3)}  # integers and a name needing quotes: pandas writes it
    assert csv_text(odd) == pd.DataFrame(odd).to_csv(index=False)


COLUMNS = [["1", "02", "-3"], ["1001", "1001", "1002"], ["1", "2.0"], ["+1", "2"], [" 1", "2"], ["1", "1e3"],
           ["99999999999999999999", "1"], ["1", None], ["1", ""], ["S01", "S02"], ["female", "male"], ["inf", "1"],
           ["nan", "NaN"], ["Infinity", "-INF", "2"], ["1E5", "7"], ["e", "1"], ["1_000", "2"], ["0x10", "1"], ["-", "1"], ["1.5", "abc"], ["١٢", "3"]]


@pytest.mark.parametrize("cells", COLUMNS, ids=[" ".join(map(repr, c)) for c in COLUMNS])
def test_metadata_columns_hold_what_the_dataframe_holds(cells):
    meta = MetaColumns({"c": np.array(cells, dtype=object)}, len(cells))
    expected = metadata_frame(pd.DataFrame({"c": np.array(cells, dtype=object)}))["c"].to_numpy(object)
    got = meta.column("c")
    assert [str(v).strip() for v in got] == [str(v).strip() for v in expected]
    assert [type(v) for v in got] == [type(v) for v in expected]
    pd.testing.assert_frame_equal(meta.to_frame(), metadata_frame(pd.DataFrame({"c": np.array(cells, dtype=object)})))


def test_float_columns_read_from_buffers_equal_to_numpy():
    array = pa.array([1.5, None, -0.0, 3.0, None, 7.25, 8.0, None, 9.0, 10.0])
    for column in (array, array.slice(1), array.slice(3, 5), pa.array([2.0, 4.0]), array.slice(0, 0)):
        np.testing.assert_array_equal(arrow_io._float64_values(column), column.to_numpy(zero_copy_only=False))


def test_loaded_metadata_is_a_dataframe_built_on_access(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("subject,sex,0,0.5,1\n01,f,1,2,3\n2,m,2,,4\n3,f,0,1,5\n")
    fd = load_curves(path)
    assert isinstance(fd.metadata, pd.DataFrame) and list(fd.metadata["subject"]) == [1, 3]
    assert isinstance(fd.report.dropped_metadata, pd.DataFrame)
    assert fd.report.dropped_metadata.to_dict("list") == {"subject": [2], "sex": ["m"]}


def test_metadata_defaults_stay_what_they_were():
    fd = FunctionalData(grid_points=np.linspace(0, 1, 3), data_matrix=np.ones((2, 3)))
    assert isinstance(fd.metadata, pd.DataFrame) and fd.metadata.empty
    assert LoadReport("x", 1).dropped_metadata is None
    moved = dataclasses.replace(fd, data_matrix=np.zeros((2, 3)))
    assert isinstance(moved.metadata, pd.DataFrame) and moved.metadata.empty


def test_pandas_version_is_read_without_importing_pandas(monkeypatch):
    monkeypatch.delitem(sys.modules, "pandas")
    assert _pandas_version() == pd.__version__
    assert "pandas" not in sys.modules


def test_file_persons_compact_is_np_unique():
    rng = np.random.default_rng(7)
    for _ in range(100):
        n_persons = int(rng.integers(1, 40))
        index = rng.integers(0, n_persons, size=int(rng.integers(1, 60)))
        persons = FilePersons(index, n_persons)
        codes, positions = persons.compact()
        want_positions, want_codes = np.unique(index, return_inverse=True)
        np.testing.assert_array_equal(codes, want_codes)
        np.testing.assert_array_equal(positions, want_positions)
        assert persons.n_unusable == n_persons - want_positions.size


def _full_parse_assignments(source: str) -> dict:
    found = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("PATH", "HELP")):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                found[node.targets[0].id] = "not a literal"
    return found


HEADS = ['PATH = ("a",)\nHELP = "h"\n\ndef f():\n    return 1\n',
         'PATH = ("a",)\nHELP = "h"\n\ndef f():\n    return 1\n\nPATH = ("b",)\n',
         'PATH = ("a",)\ndef f():\n    pass\nx = 1; HELP = "late"\n',
         'PATH = ("a",)\nDOC = """\ndef not_code():\n"""\nHELP = "h"\n',
         'PATH = ("a",) + X\nHELP = "h"\nclass C:\n    PATH = 3\n',
         '"""doc"""\nimport os\n\n@decorator\ndef f():\n    pass\nHELP: str = "annotated"\n']


@pytest.mark.parametrize("source", [*HEADS, *(p.read_text() for p in sorted((ROOT / "fdp_core" / "commands").glob("*.py")))])
def test_command_table_reads_what_a_full_parse_reads(source):
    got = {k: ("not a literal" if v is cli._NOT_LITERAL else v)
           for k, v in cli._top_level_assignments(source, ("PATH", "HELP")).items()}
    assert got == _full_parse_assignments(source)


# --------------------------------------------------------------------------- small files, one command's branch

# Heavy modules the command line's release mean of a small wide CSV does without: pyarrow (the small
# reader, fdp_core/data/small_csv.py), pandas, scipy, threadpoolctl (BLAS started on one thread), the
# sparse route's modules.
HEAVY = ("pyarrow", "pandas", "scipy", "threadpoolctl", "fdp_core.releases.sparse", "fdp_core.data.sparse_data")
HEAVY_RUNNER = RUNNER.replace("'pandas' in sys.modules", f"sorted(set({HEAVY!r}) & set(sys.modules))")


def _run_light(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HEAVY_RUNNER, *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


@pytest.mark.parametrize("name, options", [("dti_cca.csv", ["--person-column", "subject", "--value-range", "0,1"]),
                                           ("berkeley_growth.csv", ["--value-range", "60,200", "--rho", "0.2"])])
def test_a_small_csv_is_released_without_pyarrow_and_as_the_pyarrow_route_writes(name, options, shared_data, tmp_path,
                                                                                 monkeypatch):
    argv = MEAN + ["--data", str(shared_data / name), *options]
    run = _run_light([*argv, "--out", str(tmp_path / "light")])
    assert "EXIT 0 []" in run.stderr, run.stderr[-2000:]  # exit 0, none of the heavy modules imported
    from fdp_core.data import loading

    monkeypatch.setattr(loading, "SMALL_CSV_BYTES", -1)  # every file through pyarrow, as before
    assert cli_main([*argv, "--out", str(tmp_path / "arrow")]) == 0
    assert _files(tmp_path / "light") == _files(tmp_path / "arrow")


def test_each_command_is_found_from_its_words():
    table = cli._command_table()
    assert len({path for _, path, _ in table}) == len(table)  # one module per command
    for entry in table:
        assert cli._named_command([*entry[1], "--help"]) == entry
    for argv in (["release"], ["ledger", "--help"], ["release", "means"], ["--help"], [], ["ledger"], ["_common"]):
        assert cli._named_command(argv) is None


def _parse_output(parser, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(argv)
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


@pytest.mark.parametrize("path", [entry[1] for entry in cli._command_table()], ids=" ".join)
def test_one_commands_branch_parses_as_the_whole_tree(path, capsys):
    for tail in (["--help"], ["--no-such-option", "1"], []):
        argv = [*path, *tail]
        assert (_parse_output(cli.build_parser(lazy=True, argv=argv), argv, capsys)
                == _parse_output(cli.build_parser(lazy=True), argv, capsys))


@pytest.mark.parametrize("columns", [None, "100", "37", "0", "-5", "wide", ""])
def test_help_is_as_wide_as_argparse_makes_it(columns, monkeypatch, capsys):
    import argparse
    import shutil

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli.terminal_columns() == shutil.get_terminal_size().columns
    argv = ["release", "mean", "--help"]
    ours = _parse_output(cli.build_parser(lazy=True, argv=argv), argv, capsys)
    plain = cli.build_parser(lazy=True, argv=argv)
    for parser in [plain, *(p for a in plain._subparsers._group_actions for p in a.choices.values())]:
        parser.formatter_class = argparse.HelpFormatter
    release = plain._subparsers._group_actions[0].choices["release"]
    for leaf in release._subparsers._group_actions[0].choices.values():
        leaf.formatter_class = argparse.HelpFormatter
    assert ours == _parse_output(plain, argv, capsys)


def test_one_release_computes_its_accuracy_radius_once(shared_data, tmp_path, monkeypatch):
    """release mean asks for the 95% L2 radius three times (record, analyst view, message): the
    Imhof inversion behind it runs once, and gives the same number every time."""
    from fdp_core.mechanisms import calibration, weighted_chi2
    from fdp_core.releases import mean

    calls = []
    monkeypatch.setattr(calibration, "quantile_upper_bound",
                        lambda v, p: calls.append(1) or weighted_chi2.quantile_upper_bound(v, p))
    calibration._quantile_radius.cache_clear()
    mean._unit_radius.cache_clear()
    argv = MEAN + ["--data", str(shared_data / "dti_cca.csv"), *VARIANTS["person column and range"]]
    assert cli_main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert len(calls) == 1
    calibration._quantile_radius.cache_clear()
    mean._unit_radius.cache_clear()
    assert cli_main([*argv, "--out", str(tmp_path / "b")]) == 0  # computed afresh: the same bits
    assert len(calls) == 2 and _files(tmp_path / "a") == _files(tmp_path / "b")
