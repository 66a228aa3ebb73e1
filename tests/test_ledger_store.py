"""The persistent ledger on real engines (SQLite file; PostgreSQL started by the fixtures):
fingerprint invariances, budgets created once, check-and-charge matching the in-memory
Ledger, schema versions, and the race: many processes committing at once never overspend."""

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.budget.accounting import Ledger, gaussian_entry, gdp_epsilon, pure_entry
from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.errors import BudgetError, LedgerError, ParameterError
from fdp_core.data.fingerprint import canonical_unit, fingerprint, unit_of_privacy
from fdp_core.budget.datasets import open_budget
from fdp_core.budget.ledger_store import (SCHEMA_VERSION, BudgetSpec, LedgerStore, PersistentLedger, default_path,
                                   resolve_url)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'race' / 'ledger.sqlite3'}"
    return request.getfixturevalue("postgres_url")


# --------------------------------------------------------------------------- fingerprint

def test_fingerprint_is_the_content_not_the_file(tmp_path):
    fd = load_curves(EXAMPLE)
    a, b = tmp_path / "a.csv", tmp_path / "renamed copy.csv"
    a.write_bytes(EXAMPLE.read_bytes())
    b.write_bytes(EXAMPLE.read_bytes())
    assert fingerprint(load_curves(a)) == fingerprint(load_curves(b)) == fingerprint(fd)
    # Rows shuffled, and the same curves in long format: the same data set.
    rng = np.random.default_rng(1)
    shuffled = from_arrays(fd.grid_points, fd.data_matrix[rng.permutation(fd.n)])
    assert fingerprint(shuffled) == fingerprint(fd)
    long = pd.DataFrame([(i, t, v) for i, row in enumerate(fd.data_matrix) for t, v in zip(fd.grid_points, row)],
                        columns=["id", "t", "value"])
    path = tmp_path / "long.csv"
    long.sample(frac=1.0, random_state=3).to_csv(path, index=False)
    assert fingerprint(load_curves(path)) == fingerprint(fd)


def test_fingerprint_changes_with_any_value_the_grid_or_the_unit():
    fd = load_curves(EXAMPLE)
    base = fingerprint(fd)
    values = fd.data_matrix.copy()
    values[17, 5] = np.nextafter(values[17, 5], np.inf)  # one ulp in one cell
    assert fingerprint(from_arrays(fd.grid_points, values)) != base
    assert fingerprint(from_arrays(fd.grid_points, fd.data_matrix[1:])) != base  # one curve fewer
    assert fingerprint(from_arrays(fd.grid_points * 2, fd.data_matrix)) != base
    assert fingerprint(fd, {"person_column": "id"}) != base
    assert fingerprint(fd, {}) == fingerprint(fd, None) == fingerprint(fd, {"person_column": None}) == base
    # Canonical JSON: key order, tuples vs lists and int-valued floats spelled once.
    assert canonical_unit({"b": (0.0, 1.5), "a": "x"}) == canonical_unit({"a": "x", "b": [0.0, 1.5]})
    assert fingerprint(fd, {"b": (0.0, 1.5), "a": "x"}) == fingerprint(fd, {"a": "x", "b": [0.0, 1.5]})
    with pytest.raises(ParameterError, match="finite"):
        canonical_unit({"value_range": [0.0, float("inf")]})


def test_fingerprint_signed_zero_and_person_labels():
    grid = np.linspace(0, 1, 4)
    values = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], [2.0, 0.5, 0.25, 0.0]])
    negzero = values.copy()
    negzero[0, 0] = -0.0
    assert fingerprint(from_arrays(grid, negzero)) == fingerprint(from_arrays(grid, values))
    meta = pd.DataFrame({"person": ["p1", "p1", "p2"]})
    other = pd.DataFrame({"person": ["p1", "p2", "p2"]})
    unit = {"person_column": "person"}
    with_labels = fingerprint(from_arrays(grid, values, metadata=meta), unit)
    assert with_labels != fingerprint(from_arrays(grid, values, metadata=other), unit)  # grouping is content
    order = [2, 0, 1]  # rows shuffled with their labels: the same persons
    assert with_labels == fingerprint(from_arrays(grid, values[order], metadata=meta.iloc[order]), unit)
    assert unit_of_privacy({"person_column": "person", "value_range": [0, 1]}) == unit
    assert unit_of_privacy({"value_range": [0, 1]}) == {}


def test_fingerprint_of_a_million_cells_is_quick():
    values = np.random.default_rng(0).normal(size=(20_000, 50))
    fd = from_arrays(np.linspace(0, 1, 50), values)
    start = time.perf_counter()
    fingerprint(fd)
    assert time.perf_counter() - start < 2.0


# --------------------------------------------------------------------------- urls and locations

def test_urls_default_location_and_no_password_in_the_location(tmp_path, monkeypatch):
    monkeypatch.delenv("FDP_LEDGER_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "fdp" / "ledger.sqlite3"
    assert resolve_url(None) == f"sqlite:///{tmp_path / 'xdg' / 'fdp' / 'ledger.sqlite3'}"
    monkeypatch.setenv("FDP_LEDGER_URL", "sqlite:///from-env.sqlite3")
    assert resolve_url(None) == "sqlite:///from-env.sqlite3" and resolve_url("x.sqlite3") == "x.sqlite3"
    monkeypatch.chdir(tmp_path)
    assert LedgerStore("sqlite:///rel/l.sqlite3").location == f"SQLite file {tmp_path / 'rel' / 'l.sqlite3'}"
    assert LedgerStore(str(tmp_path / "plain.sqlite3")).location == f"SQLite file {tmp_path / 'plain.sqlite3'}"
    for bad in ("sqlite://x", "sqlite:///:memory:", "mysql://h/db", "column:site", "ledger"):
        with pytest.raises(LedgerError):
            LedgerStore(bad)
    assert not (tmp_path / "column:site").exists() and not (tmp_path / "ledger").exists()


def test_postgres_location_hides_the_password(postgres_url):
    user, rest = postgres_url[len("postgresql://"):].split("@", 1)
    store = LedgerStore(f"postgresql://{user.split(':')[0]}:s3cret@{rest}")  # trust auth ignores it
    assert "s3cret" not in store.location and store.location.startswith("PostgreSQL database 'fdp_test_")


# --------------------------------------------------------------------------- budgets and charges

def test_budget_is_created_once_and_never_changed(ledger_url):
    fd = load_curves(EXAMPLE)
    budget = open_budget(ledger_url, fd, source="cli", data_label="example_curves.csv")
    stored, created = budget.ensure(BudgetSpec(2.0, 1e-5, "zcdp", {"mean": 3, "kde": 1, "pca": 0}))
    assert created and isinstance(stored, PersistentLedger) and {k: w for k, w in stored.split.items() if w} == {"mean": 0.75, "kde": 0.25}
    again, created = budget.ensure(BudgetSpec(50.0, 0.1))
    assert not created and (again.epsilon_total, again.filter) == (2.0, "zcdp")
    with pytest.raises(LedgerError, match=r"already exists .*\(epsilon 2, delta 1e-05, zcdp filter"):
        budget.store.create_budget(budget.fingerprint, BudgetSpec(50.0, 0.1))
    with pytest.raises(ParameterError):  # validated by the in-memory Ledger before anything is written
        budget.store.create_budget(budget.fingerprint, BudgetSpec(-1.0, 0.1), name="other")
    assert budget.store.budget_names(budget.fingerprint) == ["default"]
    other = open_budget(ledger_url, fd, name="annual 2026")
    other.ensure(BudgetSpec(1.0, 0.0))
    assert budget.store.budget_names(budget.fingerprint) == ["default", "annual 2026"]
    # The same curves under another person column are the same people (METHODS.md 22): they match the
    # registered data set and spend its budget, recorded as another version of it.
    person = open_budget(ledger_url, fd, unit={"person_column": "id"})
    assert person.fingerprint == budget.fingerprint and person.content == budget.content
    assert person.match["dataset"] == "example_curves" and person.match["k"] == person.match["n"] == 60
    assert person.ledger().epsilon_total == 2.0


def test_charges_follow_the_in_memory_ledger_exactly(ledger_url):
    """A random sequence of candidates: the store accepts and refuses exactly as Ledger does."""
    fd = load_curves(EXAMPLE)
    rng = np.random.default_rng(5)
    for filt, split in (("basic", None), ("zcdp", {"mean": 2, "kde": 1, "pca": 1})):
        budget = open_budget(ledger_url, fd, name=f"seq-{filt}")
        budget.ensure(BudgetSpec(3.0, 1e-5, filt, split))
        reference = Ledger(3.0, 1e-5, split, filt)
        accepted = 0
        for _ in range(14):
            kind = ["mean", "kde", "pca"][rng.integers(3)]
            if rng.random() < 0.5:
                entry = pure_entry(kind, "frl", epsilon=float(rng.uniform(0.05, 0.9)))
            else:
                sigma = float(rng.uniform(3, 8))
                entry = gaussian_entry(kind, "gaussian", sensitivity=1.0, sigma=sigma,
                                       epsilon=gdp_epsilon(1.0 / sigma, 2e-6), delta=2e-6)
            try:
                reference.check(entry)
                fits = True
            except BudgetError:
                fits = False
            if fits:
                stored = budget.reserve(entry)
                reference.commit(entry)
                accepted += 1
                assert [e.id for e in stored.entries] == [e.id for e in reference.entries]
            else:
                with pytest.raises(BudgetError, match="release refused, nothing recorded"):
                    budget.reserve(entry)
        snapshot = budget.ledger()
        assert 2 <= accepted < 14
        assert snapshot.spent() == reference.spent() and snapshot.usage() == reference.usage()
        assert [e.to_dict() for e in snapshot.entries] == [e.to_dict() for e in reference.entries]


def test_show_reserve_complete_and_entries_json(ledger_url):
    fd = load_curves(EXAMPLE)
    budget = open_budget(ledger_url, fd, source="app", data_label="upload: x.csv")
    budget.ensure(BudgetSpec(2.5, 1e-5))
    first = pure_entry("mean", "frl", epsilon=1.0, label="first")
    second = pure_entry("kde", "iclp", epsilon=0.5, label="second")
    budget.reserve(first)
    budget.reserve(second)
    budget.complete(first.id)
    with pytest.raises(LedgerError, match="no reserved ledger entry"):
        budget.complete(first.id)
    shown = budget.store.show(budget.fingerprint)
    assert set(shown) >= {"budget", "spent", "entries"}
    assert shown["budget"]["epsilon_total"] == 2.5 and shown["budget"]["name"] == "default"
    assert shown["budget"]["fingerprint"] == budget.fingerprint and shown["budget"]["created_by"] == "app"
    assert shown["spent"]["epsilon"] == 1.5 and shown["spent"]["n_reserved"] == 1  # reserved entries are spent
    assert [(e["id"], e["status"], e["source"]) for e in shown["entries"]] == [
        (first.id, "complete", "app"), (second.id, "reserved", "app")]
    assert shown["entries"][0]["data_label"] == "upload: x.csv" and shown["entries"][1]["label"] == "second"
    json.dumps(shown)
    with pytest.raises(BudgetError):  # 1.5 + 1.01 > 2.5
        budget.reserve(pure_entry("mean", "frl", epsilon=1.01))
    with pytest.raises(BudgetError, match="already in the ledger"):
        budget.reserve(second)
    with pytest.raises(LedgerError, match="no budget 'nope'"):
        budget.store.show(budget.fingerprint, "nope")


# --------------------------------------------------------------------------- schema versions

def test_newer_or_unknown_schema_is_refused_with_a_clear_message(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    LedgerStore(url).create_schema()
    conn = sqlite3.connect(tmp_path / "l.sqlite3")
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match=f"schema version {SCHEMA_VERSION + 1}, newer than this fdp understands"):
        LedgerStore(url)
    conn = sqlite3.connect(tmp_path / "l.sqlite3")
    conn.execute("DELETE FROM schema_version")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="unknown schema"):
        LedgerStore(url)
    conn = sqlite3.connect(tmp_path / "l.sqlite3")
    conn.execute("DROP TABLE schema_version")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="no schema_version table"):
        LedgerStore(url)
    (tmp_path / "junk.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError, match="not a database"):
        LedgerStore(str(tmp_path / "junk.sqlite3"))


def test_newer_schema_is_refused_on_postgres(postgres_url):
    import psycopg

    LedgerStore(postgres_url).create_schema()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION + 7,))
    with pytest.raises(LedgerError, match="newer than this fdp"):
        LedgerStore(postgres_url)


# --------------------------------------------------------------------------- the race

RACE_WORKER = """
import sys, time
from pathlib import Path
from fdp_core.budget.accounting import pure_entry
from fdp_core.errors import BudgetError
from fdp_core.budget.ledger_store import LedgerStore

url, fingerprint_hex, ready, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
store = LedgerStore(url)
entry = pure_entry("mean", "frl", epsilon=1.0)
ready.touch()
while not go.exists():  # every worker charges at the same instant
    time.sleep(0.001)
start = time.perf_counter()
try:
    store.reserve(fingerprint_hex, entry, source="cli")
    outcome = "landed"
except BudgetError:
    outcome = "refused"
print(outcome, time.perf_counter() - start)
"""


@pytest.mark.parametrize("n_processes", [8])
def test_race_many_processes_exactly_three_land(ledger_url, n_processes, tmp_path):
    """Budget for exactly 3 releases, 8 processes charge at the same instant: 3 land, 5 are refused."""
    fd = from_arrays(np.linspace(0, 1, 5), np.arange(15.0).reshape(3, 5))
    budget = open_budget(ledger_url, fd)
    budget.ensure(BudgetSpec(3.0, 0.0))
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", RACE_WORKER, ledger_url, budget.fingerprint,
                               str(tmp_path / f"ready{i}"), str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(n_processes)]
    deadline = time.monotonic() + 180
    while not all((tmp_path / f"ready{i}").exists() for i in range(n_processes)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    go.touch()
    outcomes = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        outcome, seconds = out.split()
        outcomes.append((outcome, float(seconds)))
    assert sum(o == "landed" for o, _ in outcomes) == 3
    assert sum(o == "refused" for o, _ in outcomes) == n_processes - 3
    shown = budget.store.show(budget.fingerprint)
    assert len(shown["entries"]) == 3 and shown["spent"]["epsilon"] == 3.0 <= shown["budget"]["epsilon_total"]
    times = ", ".join(f"{t * 1000:.0f}" for t in sorted(t for _, t in outcomes))
    print(f"race on {ledger_url.split(':')[0]}: {n_processes} processes, 3 landed, {n_processes - 3} refused; "
          f"charge times {times} ms; spent {shown['spent']['epsilon']} of {shown['budget']['epsilon_total']}")
