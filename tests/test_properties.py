"""Property-based tests at every boundary (issue 26): loader, every CLI command, replay, app.

Asserted for whatever Hypothesis generates: nothing escapes but the project's own errors
(fdp_core/errors.py); the CLI exits 0 or 2, with one ``error:`` line on 2 and nothing
written (no output files, the ledger file unchanged); each case finishes within a bound
(SIGALRM, since Hypothesis deadlines only report slowness after the call returns).

Profiles (tests/conftest.py): ``ci`` by default (few examples, seconds per property) and
``long`` for a local search: ``HYPOTHESIS_PROFILE=long pytest tests/test_properties.py``.
Inputs that once failed are kept below as ``@example`` regression cases.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fdp_core import cli

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.data.loading import FunctionalData, load_curves, to_wide_csv
from fdp_core.errors import FdpError
from fdp_core.releases.mean import MeanSettings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WIDE = FIXTURES / "wide.csv"
CASE_LIMIT_S = 20.0  # one load, CLI run or app run; beyond it the case counts as a hang


# One SIGALRM time limit for every hostile-input test (tests/test_hostile_input.py).
from test_hostile_input import Hang, time_limit  # noqa: E402,F401


# --------------------------------------------------------------------------- loader

def _valid_wide(n: int = 6, m: int = 7, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    grid = np.linspace(0, 1, m)
    values = np.sin(np.outer(rng.uniform(1, 3, n), grid)) + 0.1 * rng.normal(size=(n, m))
    return to_wide_csv(FunctionalData(grid, values)).encode()


def _valid_parquet() -> bytes:
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(_valid_wide()))
    out = io.BytesIO()
    frame.to_parquet(out, index=False)
    return out.getvalue()


VALID_CSV, VALID_PARQUET = _valid_wide(), _valid_parquet()
HOSTILE_CELLS = [b"", b"nan", b"inf", b"-1e309", b"1e308", b'"', b"\x00", b"\xff\xfe", b",,,", b"\r", b"\n",
                 b"id,t,value", b"0,0.5,1", b"\xe9", b"1_000", b"1,5", b"-"]


@st.composite
def mutated(draw, raw: bytes) -> bytes:
    """A valid file with a few structured edits: bytes replaced, inserted, deleted, lines
    duplicated or dropped, the header repeated, the file cut short."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "dup_line", "drop_line", "header_again",
                                     "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "replace" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(HOSTILE_CELLS) | st.binary(max_size=8))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif kind in ("dup_line", "drop_line", "header_again"):
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            if kind == "dup_line":
                lines.insert(i, lines[i])
            elif kind == "drop_line":
                del lines[i]
            else:
                lines.insert(i, lines[0])
            data = bytearray(b"\n".join(lines))
        else:
            del data[at:]
    return bytes(data)


def load_or_refuse(raw: bytes, **options):
    try:
        with time_limit(CASE_LIMIT_S):
            fd = load_curves(raw, **options)
    except FdpError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        return str(exc)
    assert fd.n >= 2 and fd.m >= 2 and np.all(np.isfinite(fd.data_matrix))
    assert np.all(np.diff(fd.grid_points) > 0)
    return fd


@given(raw=st.binary(max_size=2000))
@example(raw=b"-1e308,1e308\n1,2\n3,5\n")
@example(raw=b"0,1\n1,2\n0,1\n3,4\n")  # a repeated header line
def test_random_bytes_into_the_loader(raw):
    load_or_refuse(raw)


@given(raw=mutated(VALID_CSV), missing=st.sampled_from(["drop", "interpolate"]))
@example(raw=VALID_CSV + VALID_CSV, missing="drop")  # two exports joined: refused, not a curve of grid points
def test_mutated_csv_into_the_loader(raw, missing):
    load_or_refuse(raw, missing=missing)


@given(raw=mutated(VALID_PARQUET))
def test_mutated_parquet_into_the_loader(raw):
    load_or_refuse(raw, name="x.parquet")


# --------------------------------------------------------------------------- every CLI command

def _base_commands(tmp: Path) -> dict[str, list[str]]:
    """A valid argument vector for every command (mutated by the property below)."""
    counts = tmp / "counts.csv"
    counts.write_text("value,count\n1,3\n2,5\n3,1\n")
    mean = ["--epsilon", "1", "--delta", "1e-6", "--tau", "5", "--kernel", "gaussian", "--rho", "0.01"]
    return {
        "release mean": ["release", "mean", "--preview", "--data", str(WIDE), *mean],
        "release pca": ["release", "pca", "--preview", "--data", str(WIDE), "--epsilon", "1", "--tau", "5"],
        "release kde": ["release", "kde", "--preview", "--data", str(WIDE), "--epsilon", "1", "--delta", "1e-6",
                        "--feature", "l2norm", "--box", "0,10"],
        "release kde-counts": ["release", "kde-counts", "--counts", str(counts), "--epsilon", "1", "--box", "0,5"],
        "release covariance": ["release", "covariance", "--preview", "--data", str(WIDE), *mean, "--centre", "0"],
        "release regression": ["release", "regression", "--preview", "--data", str(WIDE), *mean, "--centre", "0", "--B", "2",
                               "--covariates", "site=south"],
        "select": ["select", "--data", str(WIDE), "--epsilon", "1", "--delta", "1e-6", "--tau", "5",
                   "--penalties", "0.001,0.01", "--rhos", "0.01,0.1", "--select-epsilon", "0.5", "--no-ledger"],
        "tradeoff": ["tradeoff", "--data", str(WIDE), "--param", "epsilon", "--values", "0.5,1", *mean],
        "ledger init": ["ledger", "init", "--data", str(WIDE), "--epsilon", "1", "--delta", "1e-6"],
        "ledger show": ["ledger", "show", "--data", str(WIDE)],
    }


HOSTILE_VALUES = ["", "0", "-1", "nan", "inf", "-inf", "1e300", "1e-300", "1e18", "0.9", "abc", "x" * 300,
                  "mean=1,mean=2", "1,2,3", "-1,2", "C:\\new\\x", "/dev/zero", "\x1b[31m", "sex=alien", "--help",
                  "postgresql://:::@@@/??"]
WRITES_OUT = {"release mean", "release pca", "release kde", "release kde-counts", "release covariance",
              "release regression", "select", "tradeoff"}


@st.composite
def argv_edits(draw, base: list[str]):
    """The base vector with a few options dropped, values replaced by hostile ones, or junk added."""
    argv = list(base)
    words = len(base[0:2]) if base[0] in ("release", "ledger") else 1
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "value", "drop", "extra"]))
        options = [i for i in range(words, len(argv)) if argv[i].startswith("--")]
        if kind == "value" and options:
            i = draw(st.sampled_from(options))
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                argv[i + 1] = draw(st.sampled_from(HOSTILE_VALUES) | st.text(max_size=12))
        elif kind == "drop" and options:
            i = draw(st.sampled_from(options))
            del argv[i:i + (2 if i + 1 < len(argv) and not argv[i + 1].startswith("--") else 1)]
        else:
            argv += draw(st.lists(st.sampled_from(HOSTILE_VALUES + ["--epsilon", "--n-public", "--name", "--split",
                                                                    "--quantiles", "--components", "--ledger"]),
                                  min_size=1, max_size=3))
    return argv


def _ledger_digest(path: Path) -> str:
    """What a refusal must not change: the budgets and entries of the ledger (a refused command
    may still have created the empty schema; the ledger commands' own tests cover that)."""
    import sqlite3

    if not path.exists():
        return "absent"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = [list(conn.execute(f"SELECT * FROM {t} ORDER BY 1")) for t in ("fdp_budgets", "fdp_entries")
                if t in tables]
    return "absent" if not any(rows) else hashlib.sha256(repr(rows).encode()).hexdigest()


def run_cli_case(argv: list[str], out: Path, ledger: Path) -> tuple[int, str]:
    before = _ledger_digest(ledger)
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), time_limit(CASE_LIMIT_S):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            code = exc.code
    assert time.perf_counter() - start < CASE_LIMIT_S
    assert code in (0, 2), f"exit {code!r}: {err.getvalue()[-2000:]}"
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 1000, err.getvalue()[:2000]
        assert not out.exists() or not any(out.iterdir()), f"files written on exit 2: {list(out.iterdir())}"
        assert _ledger_digest(ledger) == before, "the ledger changed on exit 2"
    return code, err.getvalue()


COMMANDS = list(_base_commands(Path("/tmp")))


@pytest.mark.parametrize("command", COMMANDS)
def test_the_valid_base_vector_runs(command, tmp_path):
    """The property below mutates these vectors: each must be a working call to start with."""
    argv = _base_commands(tmp_path)[command]
    out = tmp_path / "out"
    if command == "ledger show":  # shows an existing budget
        assert cli.main(_base_commands(tmp_path)["ledger init"]) == 0
    code, err = run_cli_case(argv + (["--out", str(out)] if command in WRITES_OUT else []), out,
                             tmp_path / "ledger.sqlite3")
    assert code == 0, err


@pytest.mark.parametrize("command", COMMANDS)
@settings(deadline=None)  # a CLI release takes a second or more on a busy machine: time_limit bounds it
@given(data=st.data())
def test_random_argument_vectors_exit_0_or_2(command, data, tmp_path):
    base = _base_commands(tmp_path)[command]
    argv = data.draw(argv_edits(base))
    case = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    case.mkdir()
    out = case / "out"
    if command in WRITES_OUT:
        argv = [*argv, "--out", str(out)]
    run_cli_case(argv, out, tmp_path / "ledger.sqlite3")


# --------------------------------------------------------------------------- replay

@pytest.fixture
def exported_config(tmp_path) -> Path:
    fd = load_curves(WIDE)
    settings_ = MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-6, tau=5.0, phi=1e-2)
    release = export.commit_mean(Ledger(3.0, 1e-5), fd, settings_, data_label="wide.csv")
    export.export_folder(release, tmp_path / "original", Ledger(3.0, 1e-5))
    return tmp_path / "original" / "config.yaml"


yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(), st.text(max_size=8))
yaml_values = st.recursive(yaml_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=10)


@st.composite
def config_edits(draw, config: dict) -> str:
    """The exported config with a few values (at any depth) replaced, keys dropped, or raw text."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(max_size=200) | st.sampled_from(["[" * 3000 + "]" * 3000, "&a [*a]", "!!python/none",
                                                             "a: !!binary AAAA", "schema: 1\n" * 3]))
    edited = yaml.safe_load(yaml.safe_dump(config))
    for _ in range(draw(st.integers(1, 3))):
        node, path = edited, []
        while isinstance(node, dict) and node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node, key=str)))
            path.append(key)
            if not isinstance(node[key], dict):
                break
            node = node[key]
        parent = edited
        for key in path[:-1]:
            parent = parent[key]
        if path and draw(st.booleans()):
            parent.pop(path[-1], None)
        elif path:
            parent[path[-1]] = draw(yaml_values)
    return yaml.safe_dump(edited)


@settings(deadline=None)
@given(data=st.data())
def test_random_yaml_into_replay(exported_config, data, tmp_path):
    text = data.draw(config_edits(yaml.safe_load(exported_config.read_text())))
    case = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    case.mkdir()
    config = case / "config.yaml"
    config.write_text(text)
    run_cli_case(["replay", str(config), "--data", str(WIDE), "--out", str(case / "out")], case / "out",
                 tmp_path / "ledger.sqlite3")


# --------------------------------------------------------------------------- app uploads

@settings(max_examples=int(os.environ.get("FDP_APP_EXAMPLES", "3")), deadline=None)
@given(raw=st.one_of(mutated(VALID_CSV), st.binary(max_size=500)))
@example(raw=("," * 30000 + "\n").encode())
def test_random_uploads_through_the_app(raw):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    start = time.process_time()
    with time_limit(CASE_LIMIT_S * 3):
        at.file_uploader(key="data_upload").set_value(("upload.csv", raw, "text/csv")).run()
    assert not at.exception, at.exception
    assert time.process_time() - start < CASE_LIMIT_S
    # Accepted (the data page shows the curves) or refused with one line.
    for error in at.error:
        assert "Traceback" not in error.value


# --------------------------------------------------------------------------- issue 39: plans, names, sparse files, --out

PLAN_BASE = {"schema": "fdp.plan/1", "public": {"n": 142, "grid": 93, "value_range": [0, 1]},
             "statistics": [{"name": "m", "kind": "mean", "settings": {"kernel": "matern52", "rho": 0.1},
                             "epsilon": 0.5}],
             "budget": {"epsilon": 4, "delta": 1e-5}}
_plan_numbers = st.sampled_from(["1e-5", "1e21", "-0", ".5e1", "1_000", "0x10", "1e400", "nan", ".inf", "2.5",
                                 "'1e-5'", "1e", "e5", "142", "10000000"])


@st.composite
def plan_texts(draw) -> str:
    """The README's plan with values replaced by numbers in YAML's odd spellings, by any YAML value,
    keys dropped, or raw text."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(max_size=200) | st.sampled_from(["[" * 3000 + "]" * 3000, "&a [*a]", "statistics: 1"]))
    plan = yaml.safe_load(yaml.safe_dump(PLAN_BASE))
    text_values = {}
    for _ in range(draw(st.integers(1, 3))):
        section = draw(st.sampled_from(["public", "budget", "stat", "stat-settings", "top"]))
        node = {"public": plan["public"], "budget": plan.get("budget") or {}, "top": plan,
                "stat": plan["statistics"][0] if plan.get("statistics") else {},
                "stat-settings": (plan["statistics"][0].get("settings") or {}) if plan.get("statistics") else {}}[section]
        if not isinstance(node, dict) or not node:
            continue
        key = draw(st.sampled_from(sorted(node, key=str)))
        choice = draw(st.integers(0, 2))
        if choice == 0:
            marker = f"@@{len(text_values)}@@"
            text_values[marker] = draw(_plan_numbers)
            node[key] = marker
        elif choice == 1:
            node[key] = draw(yaml_values)
        else:
            node.pop(key, None)
    text = yaml.safe_dump(plan)
    for marker, raw in text_values.items():
        text = text.replace(marker, raw)
    return text


@settings(deadline=None)
@given(text=plan_texts())
@example(text=yaml.safe_dump(PLAN_BASE).replace("1.0e-05", "1e-5"))
@example(text=yaml.safe_dump(PLAN_BASE).replace("n: 142", "n: 1e21"))
def test_random_plan_yaml(text, tmp_path_factory):
    case = tmp_path_factory.mktemp("plan")
    plan = case / "plan.yaml"
    plan.write_text(text)
    run_cli_case(["plan", str(plan), "--out", str(case / "out")], case / "out", case / "ledger.sqlite3")


@settings(deadline=None, max_examples=25)
@given(name=st.text(min_size=0, max_size=120) | st.sampled_from(["bad\udcff", "x\u202ey", "\u2066a", "ok name"]))
def test_random_data_set_names(name, tmp_path_factory):
    """Any name: registered (printable, 1-100 characters) or refused in one line naming the data set
    name, the ledger untouched."""
    case = tmp_path_factory.mktemp("name")
    ledger = case / "ledger.sqlite3"
    if "\x00" in name:  # the OS refuses a NUL in an argument before fdp sees it
        return
    code, err = run_cli_case(["ledger", "init", "--ledger", f"sqlite:///{ledger}", "--dataset", name,
                              "--epsilon", "1", "--delta", "1e-6", "--data", str(WIDE)], case / "out", ledger)
    if code == 2 and name.strip() and len(name.strip()) <= 100 and "--dataset" not in err:
        assert "data set name" in err or "budget name" not in err, err


@st.composite
def sparse_files(draw) -> bytes:
    """Long files: a valid sparse design with rows, cells or the header edited, or raw bytes."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.binary(max_size=600))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    header = draw(st.sampled_from(["id,t,value", "ID;T;Value", "id\tt\tvalue", "value,t,id", "id,t", "id,t,value,x"]))
    sep = ";" if ";" in header else "\t" if "\t" in header else ","
    rows = [header]
    for person in range(draw(st.integers(0, 30))):
        for t in np.sort(rng.uniform(0, 1, draw(st.integers(1, 5)))):
            rows.append(sep.join([f"p{person}", f"{t:.4f}", f"{rng.normal():.3f}"]))
    for _ in range(draw(st.integers(0, 3))):
        if len(rows) > 1:
            rows[draw(st.integers(1, len(rows) - 1))] = draw(st.sampled_from(["", "p1,nan,1", "p1,0.5", ",,",
                                                                              "p1,1e400,2", "p1,0.5,1,2,3", '"']))
    return ("\n".join(rows) + "\n").encode()


@settings(deadline=None)
@given(raw=sparse_files())
def test_random_sparse_long_files(raw):
    """The bounded long-file reader: SparseData with finite observations, or one-line DataError."""
    from fdp_core.data.sparse_data import read_long

    try:
        with time_limit(CASE_LIMIT_S):
            data = read_long(raw, name="upload.csv")
    except FdpError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        return
    assert data.n_observations >= 1 and np.all(np.isfinite(data.t)) and np.all(np.isfinite(data.y))


_out_names = st.sampled_from(["out", "", ".", "..", "a/../b", "/dev/null", "/proc/self/x", "x" * 300, "sub/dir",
                              "name with spaces", "\u202eevil", "wide.csv", "-", "a\nb"])


@settings(deadline=None, max_examples=20)
@given(name=_out_names | st.text(min_size=1, max_size=40))
@example(name="out")
@example(name="wide.csv")  # the input file itself as the output folder
def test_random_out_paths(name, tmp_path_factory):
    """--out: any path gives a release (exit 0) or a one-line refusal (exit 2) with nothing written
    outside the case folder, and never overwrites the input file."""
    case = tmp_path_factory.mktemp("outpath")
    data = case / "wide.csv"
    data.write_bytes(WIDE.read_bytes())
    if "\x00" in name:
        return
    # Absolute paths only from the list above (a generated "/" must not aim a release at the root).
    out = Path(name) if name in ("/dev/null", "/proc/self/x") else case / name.lstrip("/")
    before = data.read_bytes()
    argv = ["release", "mean", "--data", str(data), "--kernel", "gaussian", "--rho", "0.01", "--epsilon", "1",
            "--delta", "1e-6", "--tau", "5", "--out", str(out)]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), time_limit(CASE_LIMIT_S):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    assert code in (0, 2), err.getvalue()[-2000:]
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err.getvalue()[:2000]
    assert data.read_bytes() == before
    if name == "out":
        assert code == 0 and (out / "release.json").exists()  # the base vector works: the property tests something
