"""Registered data sets (METHODS.md 22, issue 21): a budget belongs to the people, not to the bytes.

Variants of the DTI data a custodian meets (re-exports, rounding, units, subsets, supersets,
layouts) are all charged to the one registered budget, on both engines (the sketch read from
the loaded curves and chunk by chunk); other studies and simulated data are not matched. A
ledger written by schema 1 opens with its budgets intact.
"""

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from fdp_core.budget.accounting import pure_entry
from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.budget.datasets import open_budget, resolve
from fdp_core.errors import ParameterError
from fdp_core.budget.ledger_store import SCHEMA_VERSION, BudgetSpec, LedgerStore
from fdp_core.data import sketch
from fdp_core.engines.stream import sketch_of_stream
from fdp_core.publish.release import to_json

sys.path.insert(0, str(Path(__file__).parent))
from dataset_variants import unrelated, variants  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
FIXTURE_V1 = Path(__file__).parent / "fixtures" / "ledger_schema_v1.sqlite3"


def _load(path, options):
    options = {k: v for k, v in options.items() if k != "person"}
    return load_curves(path, **options)


def _vectors(path, options, engine):
    if engine == "local":
        return sketch.sketch_of(_load(path, options))
    return sketch_of_stream(path, chunk_rows=37, **{k: v for k, v in options.items() if k != "person"})


@pytest.mark.parametrize("engine", ["local", "stream"])
def test_variants_of_one_data_set_are_charged_to_its_one_budget(shared_data, tmp_path, engine):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    dti = shared_data / "dti_cca.csv"
    store = LedgerStore(url)
    registered = resolve(store, load_curves(dti), unit={"person_column": "subject"}, dataset="DTI-2026",
                         source="cli", data_label="dti_cca.csv")
    registered.ensure(BudgetSpec(1000.0, 0.0))
    cases = variants(dti, tmp_path)
    assert len(cases) >= 20
    table = []
    for name, (path, options) in cases.items():
        person = options.get("person", "subject")
        fd = _load(path, options)
        budget = resolve(store, fd, unit=None if person is None else {"person_column": person}, source="cli",
                         data_label=path.name, vectors=_vectors(path, options, engine))
        assert budget.fingerprint == registered.fingerprint, name
        assert budget.match is not None and budget.match["dataset"] == "DTI-2026", name
        budget.reserve(pure_entry("mean", "frl", epsilon=1.0, label=name))
        table.append((name, budget.match["dataset"], budget.match["k"], budget.match["n"], budget.match["score"]))
    shown = store.show(registered.fingerprint)
    assert len(shown["entries"]) == len(cases) and shown["spent"]["epsilon"] == pytest.approx(len(cases))
    assert shown["dataset"]["name"] == "DTI-2026" and shown["dataset"]["person_column"] == "subject"
    # Every distinct file is a version of the one data set: when, n, why; never the sketch.
    assert len(shown["versions"]) >= 15 and "sketch" not in json.dumps(shown["versions"])
    assert [d.name for d in store.datasets()] == ["DTI-2026"]
    # Unrelated data: no match, a registration of their own.
    others = unrelated(shared_data, ROOT, tmp_path)
    assert len(others) >= 4
    for name, (path, options) in others.items():
        fd = _load(path, options)
        with pytest.raises(ParameterError, match="match none of the 1 data set"):  # never a silent fresh budget
            resolve(store, fd, source="cli", data_label=path.name, vectors=_vectors(path, options, engine))
        budget = resolve(store, fd, source="cli", data_label=path.name, vectors=_vectors(path, options, engine),
                         new_dataset=True, reason="another study")
        assert budget.match is None and budget.fingerprint != registered.fingerprint, name
        assert budget.registration.new is not None, name
        table.append((name, "(new registration)", 0, fd.data_matrix.shape[0], 0.0))
    print(f"\nvariants table ({engine} engine): variant -> matched data set, k of n curves, score")
    for name, dataset, k, n, score in table:
        print(f"  {name:45s} -> {dataset:20s} {k:4d} of {n:4d}  {score:.3f}")


def test_schema_1_ledger_opens_with_budgets_intact_and_gets_a_sketch(tmp_path):
    path = tmp_path / "old.sqlite3"
    shutil.copy(FIXTURE_V1, path)
    url = f"sqlite:///{path}"
    fd = load_curves(EXAMPLE)
    budget = open_budget(url, fd, source="cli", data_label="example_curves.csv")
    assert budget.match["how"] == "fingerprint" and budget.match["dataset"] == "example_curves"
    ledger = budget.ledger()
    assert (ledger.epsilon_total, ledger.delta_total, len(ledger.entries)) == (3.0, 1e-5, 1)
    assert ledger.spent().epsilon == pytest.approx(1.0, rel=1e-9)
    person = open_budget(url, fd, unit={"person_column": "id"}, name="second look")
    assert person.ledger().epsilon_total == 1.5 and person.match["how"] == "fingerprint"
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert conn.execute("SELECT COUNT(*) FROM fdp_versions WHERE sketch IS NULL").fetchone()[0] == 2
    # The first charge after the migration stores the sketch; a variant then matches by content.
    budget.reserve(pure_entry("mean", "frl", epsilon=0.5))
    assert budget.ledger().spent().epsilon == pytest.approx(1.5, rel=1e-9)
    shown = budget.store.show(budget.fingerprint)
    assert shown["budget"]["epsilon_total"] == 3.0 and [e["status"] for e in shown["entries"]] == ["complete",
                                                                                                   "reserved"]
    half = load_curves(EXAMPLE)
    from fdp_core.data.loading import from_arrays
    variant = from_arrays(half.grid_points * 10, half.data_matrix[:40] * 3, name="v")
    matched = open_budget(url, variant)
    assert matched.fingerprint == budget.fingerprint and matched.match["k"] == 40


def test_near_match_is_new_data_only_with_a_recorded_reason(shared_data, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    dti = shared_data / "dti_cca.csv"
    assert main(["ledger", "init", "--ledger", url, "--data", str(dti), "--person-column", "subject",
                 "--dataset", "DTI-2026", "--value-range", "0,1", "--epsilon", "2", "--delta", "0"]) == 0
    out = capsys.readouterr().out
    assert "data set: 'DTI-2026' (registered)" in out
    frame = __import__("pandas").read_csv(dti)
    subset = tmp_path / "dti_without_one.csv"
    frame.iloc[1:].to_csv(subset, index=False)
    # A near-match is the registered data set: its budget exists already, another name is refused.
    assert main(["ledger", "init", "--ledger", url, "--data", str(subset), "--person-column", "subject",
                 "--epsilon", "50", "--delta", "0"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["ledger", "init", "--ledger", url, "--data", str(subset), "--dataset", "fresh", "--epsilon", "50",
                 "--delta", "0"]) == 2
    err = capsys.readouterr().err
    assert "matches DTI-2026: 375 of 376 curves" in err and "--new-dataset --reason" in err and err.count("\n") == 1
    assert main(["ledger", "init", "--ledger", url, "--data", str(subset), "--dataset", "fresh", "--new-dataset",
                 "--epsilon", "50", "--delta", "0"]) == 2
    assert "--new-dataset needs --reason" in capsys.readouterr().err
    assert main(["ledger", "init", "--ledger", url, "--data", str(subset), "--dataset", "DTI-2027",
                 "--new-dataset", "--reason", "second scan session, different scanner", "--epsilon", "1",
                 "--delta", "0"]) == 0
    assert "although it matches DTI-2026: 375 of 376 curves" in capsys.readouterr().out
    assert main(["ledger", "show", "--ledger", url, "--data", str(subset)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["dataset"]["name"] == "DTI-2027"
    assert shown["dataset"]["reason"] == "second scan session, different scanner"
    assert shown["versions"][0]["why"].startswith("registered as new data although it matches DTI-2026")
    assert shown["match"]["how"] == "fingerprint"
    assert main(["ledger", "show", "--ledger", url, "--data", str(dti), "--person-column", "subject"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["dataset"] == {**shown["dataset"], "name": "DTI-2026", "value_range": [0.0, 1.0],
                                "person_column": "subject", "reason": None}
    assert set(shown) >= {"ledger", "budget", "spent", "remaining", "entries", "dataset", "versions", "match"}


def test_reason_reaches_the_release_record_and_report(tmp_path):
    from fdp_core.publish import export
    from fdp_core.releases.mean import MeanSettings

    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    fd = load_curves(EXAMPLE)
    first = open_budget(url, fd, dataset="example")
    first.ensure(BudgetSpec(5.0, 0.0))
    from fdp_core.data.loading import from_arrays
    near = from_arrays(fd.grid_points, fd.data_matrix[:55], name="near")
    with pytest.raises(ParameterError, match="--new-dataset needs --reason"):
        open_budget(url, near, new_dataset=True)
    budget = open_budget(url, near, dataset="example-b", new_dataset=True, reason="a later wave: new consent")
    budget.spec = BudgetSpec(5.0, 0.0)
    release = export.commit_mean(budget, near, MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8))
    store_note = release.record["ledger_at_commit"]["store"]
    assert store_note["dataset"] == "example-b" and store_note["dataset_reason"] == "a later wave: new consent"
    html = export.report_html(release, budget.last_snapshot)
    assert "a later wave: new consent" in html and "example-b" in html
    # The sketch and the match figures are data-derived: they stay out of the publishable files.
    text = to_json(release.record) + export.config_yaml(release.config) + html
    assert sketch.SKETCH_SCHEME not in text and "containment" not in text


def test_a_refused_charge_registers_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    fd = load_curves(EXAMPLE)
    budget = open_budget(url, fd, dataset="example")
    budget.spec = BudgetSpec(0.5, 0.0)
    with pytest.raises(Exception, match="exceed|budget|remaining"):
        budget.reserve(pure_entry("mean", "frl", epsilon=1.0))
    store = LedgerStore(url)
    assert store.datasets() == [] and store.ledger(budget.fingerprint) is None


# Schema 1 on PostgreSQL, as commit 0dff774 created it (the SQLite fixture's rows are copied in).
PG_SCHEMA_1 = (
    "CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL, updated_utc TEXT NOT NULL)",
    "CREATE TABLE fdp_budgets (id BIGSERIAL PRIMARY KEY, fingerprint TEXT NOT NULL, name TEXT NOT NULL, content TEXT "
    "NOT NULL, unit TEXT NOT NULL, epsilon_total DOUBLE PRECISION NOT NULL, delta_total DOUBLE PRECISION NOT NULL, "
    "filter TEXT NOT NULL, split TEXT, data_label TEXT NOT NULL, created_by TEXT NOT NULL, created_utc TEXT NOT NULL, "
    "UNIQUE (fingerprint, name))",
    "CREATE TABLE fdp_entries (seq BIGSERIAL PRIMARY KEY, budget_id BIGINT NOT NULL REFERENCES fdp_budgets(id), "
    "entry_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, kind TEXT NOT NULL, mechanism TEXT NOT NULL, curve TEXT "
    "NOT NULL, epsilon DOUBLE PRECISION NOT NULL, delta DOUBLE PRECISION NOT NULL, rho DOUBLE PRECISION, mu DOUBLE "
    "PRECISION, label TEXT NOT NULL, entry TEXT NOT NULL, source TEXT NOT NULL, data_label TEXT NOT NULL, "
    "reserved_utc TEXT NOT NULL, completed_utc TEXT)",
)


def test_schema_1_ledger_on_postgres_migrates_with_budgets_intact(postgres_url):
    import psycopg

    with sqlite3.connect(FIXTURE_V1) as old, psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in PG_SCHEMA_1:
            conn.execute(statement)
        for table in ("schema_version", "fdp_budgets", "fdp_entries"):
            cur = old.execute(f"SELECT * FROM {table}")
            keep = [i for i, d in enumerate(cur.description) if d[0] not in ("id", "seq")]  # the sequences number them
            columns = [cur.description[i][0] for i in keep]
            for full in cur.fetchall():
                row = [full[i] for i in keep]
                conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(row))})",
                             row)
    fd = load_curves(EXAMPLE)
    budget = open_budget(postgres_url, fd)
    assert budget.match["how"] == "fingerprint" and budget.ledger().epsilon_total == 3.0
    assert len(budget.ledger().entries) == 1
    assert open_budget(postgres_url, fd, unit={"person_column": "id"}, name="second look").ledger().epsilon_total == 1.5
    budget.reserve(pure_entry("mean", "frl", epsilon=0.5))  # stores the sketch, in one transaction
    assert budget.ledger().spent().epsilon == pytest.approx(1.5, rel=1e-9)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION


def test_replay_of_a_near_copy_says_which_data_set_it_charged(tmp_path, capsys):
    import pandas as pd
    import yaml

    from fdp_core.publish import export
    from fdp_core.budget.accounting import Ledger
    from fdp_core.releases.mean import MeanSettings

    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--dataset", "EX-2026", "--epsilon", "3",
                 "--delta", "0"]) == 0
    release = export.commit_mean(Ledger(3.0, 0.0), load_curves(EXAMPLE),
                                 MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8))
    config = tmp_path / "config.yaml"
    config.write_text(export.config_yaml(release.config))
    frame = pd.read_csv(EXAMPLE)
    near = tmp_path / "re-export.csv"
    frame.iloc[:-1].round(6).sample(frac=1.0, random_state=1).to_csv(near, index=False)
    capsys.readouterr()
    assert main(["replay", str(config), "--data", str(near), "--ledger", url, "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "note: charged to data set 'EX-2026': the file matches EX-2026: 59 of 60 curves (content sketch)" in out
    assert "budget 'default': spent epsilon 1 of 3" in out
    for path in (tmp_path / "r").iterdir():
        text = path.read_text()
        assert "59 of 60" not in text and sketch.SKETCH_SCHEME not in text, path.name
    assert json.loads((tmp_path / "r" / "release.json").read_text())["ledger_at_commit"]["store"]["dataset"] == \
        "EX-2026"
    assert yaml.safe_load(config.read_text())["kind"] == "mean"
    assert not [p for p in tmp_path.iterdir() if ".fdp-staging-" in p.name]  # published, nothing left behind


@pytest.mark.parametrize("design", ["kl", "s1", "s2", "s3", "s4"])
def test_another_seed_of_a_simulation_design_is_other_people(tmp_path, design):
    """Curves of one smooth design lie close together; another draw must not pass for the registered one
    (the ratio test of sketch._found), while a subset of the registered draw still does."""
    from fdp_core.data.loading import from_arrays
    from fdp_core.data.simulate import simulate

    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    first = simulate(design, seed=0)
    open_budget(url, first, dataset=f"{design} seed 0").ensure(BudgetSpec(1.0, 0.0))
    assert open_budget(url, simulate(design, seed=1), lookup=True).match is None
    n = first.data_matrix.shape[0]
    subset = from_arrays(first.grid_points * 3, first.data_matrix[: int(0.9 * n)] * 7 + 1, name="subset")
    assert open_budget(url, subset).match["dataset"] == f"{design} seed 0"


def test_ledger_show_never_migrates_a_schema_1_ledger(tmp_path, capsys):
    """A reading command writes nothing: on a version-1 ledger `ledger show` refuses in one line
    (exit 2) and leaves the file byte for byte; a writing command migrates it, then show reads it."""
    path = tmp_path / "old.sqlite3"
    shutil.copy(FIXTURE_V1, path)
    before = path.read_bytes()
    url = f"sqlite:///{path}"
    assert main(["ledger", "show", "--ledger", url, "--data", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema version 1" in err[0] and "does not migrate" in err[0]
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite3"]
    open_budget(url, load_curves(EXAMPLE), source="cli", data_label="example_curves.csv")  # a writer's store migrates
    assert main(["ledger", "show", "--ledger", url, "--data", str(EXAMPLE)]) == 0
    assert json.loads(capsys.readouterr().out)["spent"]["epsilon"] == pytest.approx(1.0, rel=1e-9)


def test_sparse_files_are_sketched_per_person_and_unrelated_studies_do_not_match():
    """Issue 37: each person's pooled visits is one curve of the sketch (not each observation a 2-point
    line, which made every sparse file alike); a subset in other units matches, another study does not."""
    import numpy as np

    from fdp_core.data.simulate import sparse_design
    from fdp_core.data.sparse_data import from_observations, ledger_sketch

    a, b = sparse_design(300, seed=1), sparse_design(300, seed=2)
    registered = sketch.decode(sketch.encode(ledger_sketch(a)))
    assert registered.n == 300 and not sketch.overlap(ledger_sketch(b), registered).matches
    keep = np.isin(a.ids, np.unique(a.ids)[:240])
    subset = from_observations(a.ids[keep], a.t[keep] * 10, a.y[keep] * 100 + 3)
    found = sketch.overlap(ledger_sketch(subset), registered)
    assert found.matches and found.k >= 230


def test_the_ledger_holds_digest_sets_not_curves_and_small_files_get_no_answer(shared_data, monkeypatch, tmp_path):
    """Issue 37: the stored sketch is keyed digests (no float per curve, no row order), unreadable under
    another key; time reversal and 1 - x land in the same buckets; a file of a few curves is never compared."""
    import numpy as np

    fd = load_curves(shared_data / "dti_cca.csv")
    vectors = sketch.sketch_of(fd)
    text = sketch.encode(vectors)
    assert text.startswith("fdp.sketch/2:376:") and text == sketch.encode(vectors[::-1])  # a set: no row order
    registered = sketch.decode(text)
    assert registered.coarse.dtype == np.dtype("<u8") and np.all(np.diff(registered.coarse.astype(float)) > 0)
    for transformed in (vectors[:, ::-1], -vectors):
        assert sketch.overlap(np.ascontiguousarray(transformed), registered).k == 376
    assert sketch.overlap(vectors[: sketch.MIN_FILE_CURVES - 1], registered).k == 0
    monkeypatch.delenv("FDP_SKETCH_KEY")
    monkeypatch.setenv("FDP_SKETCH_KEY_FILE", str(tmp_path / "cfg" / "sketch.key"))
    assert sketch.overlap(vectors, registered).k == 0  # another key: the digests say nothing
    assert (tmp_path / "cfg" / "sketch.key").stat().st_mode & 0o077 == 0  # created on first use, owner only
    assert sketch.encode(vectors) == sketch.encode(vectors)  # the key file is read back the same


def test_no_path_creates_a_silent_fresh_budget_for_a_transform_of_a_registered_data_set(shared_data, tmp_path,
                                                                                         capsys):
    """Issue 37: with DTI registered, replay on time-reversed values, 1 - x, a circular shift of the grid
    values and the first half of the grid is charged to DTI or refused (exit 2, one line), never a new
    budget; --new-dataset --reason registers unrelated data, and the reason is in every later report."""
    import numpy as np
    import pandas as pd

    from fdp_core.budget.accounting import Ledger
    from fdp_core.data.simulate import simulate
    from fdp_core.publish import export
    from fdp_core.releases.mean import MeanSettings

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    dti = shared_data / "dti_cca.csv"
    assert main(["ledger", "init", "--data", str(dti), "--person-column", "subject", "--dataset", "DTI",
                 "--ledger", url, "--epsilon", "100", "--delta", "1e-3"]) == 0
    release = export.commit_mean(Ledger(100, 1e-3), load_curves(dti), MeanSettings(
        epsilon=1.0, value_range=(0.0, 1.0), person_column="subject"), data_label="dti_cca.csv")
    config = tmp_path / "config.yaml"
    config.write_text(export.config_yaml(release.config))
    base = pd.read_csv(dti)
    grid = list(base.columns[4:])
    values = base[grid].to_numpy(float)
    transforms = {"reversed": base.assign(**dict(zip(grid, values[:, ::-1].T))),
                  "one_minus_x": base.assign(**dict(zip(grid, (1 - values).T))),
                  "shifted": base.assign(**dict(zip(grid, np.roll(values, 23, axis=1).T))),
                  "first_half": base.drop(columns=grid[len(grid) // 2:])}
    capsys.readouterr()
    outcomes = {}
    for name, frame in transforms.items():
        path = tmp_path / f"{name}.csv"
        frame.to_csv(path, index=False)
        code = main(["replay", str(config), "--data", str(path), "--ledger", url, "--out", str(tmp_path / name)])
        out, err = capsys.readouterr()
        outcomes[name] = code
        if code == 0:
            assert "charged to data set 'DTI'" in out, name
        else:
            assert code == 2 and "match none of the 1 data set(s)" in err and "--new-dataset --reason" in err, name
            assert not (tmp_path / name).exists()
    assert outcomes["reversed"] == outcomes["one_minus_x"] == 0  # the sketch is invariant to both
    store = LedgerStore(url)
    assert [d.name for d in store.datasets()] == ["DTI"]  # never a new budget
    sim = simulate("s1")
    sim_path = tmp_path / "sim.csv"
    pd.DataFrame(sim.data_matrix, columns=[f"{t:.6g}" for t in sim.grid_points]).to_csv(sim_path, index=False)
    init = ["ledger", "init", "--data", str(sim_path), "--ledger", url, "--epsilon", "1", "--delta", "1e-5"]
    assert main(init) == 2 and "--new-dataset --reason" in capsys.readouterr().err
    assert main([*init, "--new-dataset", "--reason", "simulated study s1"]) == 0
    assert "simulated study s1" in capsys.readouterr().out
    assert main(["ledger", "show", "--data", str(sim_path), "--ledger", url]) == 0
    assert json.loads(capsys.readouterr().out)["dataset"]["reason"] == "simulated study s1"
    sim_release = export.commit_mean(Ledger(1, 1e-5), sim, MeanSettings(epsilon=0.5, value_range=(-10.0, 10.0)),
                                     data_label="sim.csv")
    sim_config = tmp_path / "sim_config.yaml"
    sim_config.write_text(export.config_yaml(sim_release.config))
    assert main(["replay", str(sim_config), "--data", str(sim_path), "--ledger", url, "--out",
                 str(tmp_path / "sim_out")]) == 0
    assert "reason: simulated study s1" in (tmp_path / "sim_out" / "report.html").read_text()
