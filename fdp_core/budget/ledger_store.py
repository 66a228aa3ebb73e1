"""The persistent privacy-budget ledger: budgets and charges in a database (METHODS.md 8).

One small interface over two engines: an embedded SQLite file by default (Python's
sqlite3) and PostgreSQL for a shared deployment (psycopg 3). One URL selects it:

* ``--ledger URL`` on the command line, else the environment variable ``FDP_LEDGER_URL``,
  else the default file ``$XDG_DATA_HOME/fdp/ledger.sqlite3`` (``~/.local/share/fdp/...``);
* ``sqlite:///relative/path.sqlite3``, ``sqlite:////absolute/path.sqlite3`` (SQLAlchemy's
  spelling) or a plain file path; ``postgresql://user:password@host:port/database``.

A budget is keyed by a data set's fingerprint (:mod:`fdp_core.data.fingerprint`) and a name
("default" unless the custodian creates another one). It is created once (total epsilon,
delta, composition filter, optional split) and then only spent: nothing here raises or
resets it.

Check-and-charge is one transaction, before any noise is drawn: ``BEGIN IMMEDIATE`` on
SQLite (one writer at a time), ``SELECT ... FOR UPDATE`` on the budget row on PostgreSQL.
Inside it the budget and every entry are loaded into an in-memory
:class:`fdp_core.budget.accounting.Ledger`, whose :meth:`~fdp_core.budget.accounting.Ledger.check` does
the arithmetic (basic or zCDP filter, split), and the entry is inserted as ``reserved``.
The caller draws the noise, writes the release, then marks the entry ``complete``. A crash
in between leaves the reservation: budget may be lost, never spent twice. Reserved
entries count as spent.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import unicodedata
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from .accounting import FILTERS, NEIGHBOURING, Ledger, LedgerEntry
from ..errors import BudgetError, LedgerError, ParameterError, shown

ENV_VAR = "FDP_LEDGER_URL"
SCHEMA_COMPONENT = "fdp.ledger"
SCHEMA_VERSION = 3
DEFAULT_BUDGET = "default"
STATUSES = ("reserved", "complete")
SOURCES = ("app", "cli", "library")
# SQLite waits this long for another writer's transaction before giving up.
_SQLITE_BUSY_SECONDS = 60.0
# An advisory-lock key that serialises schema creation on PostgreSQL ("fdpl" in ASCII).
_PG_SCHEMA_LOCK = 0x6664706C
_NAME_MAX = 100
_SQLITE_SUFFIXES = (".sqlite3", ".sqlite", ".db")


def default_path() -> Path:
    """Where the app keeps its ledger when no URL is given (XDG data directory)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fdp" / "ledger.sqlite3"


def resolve_url(url: str | None = None) -> str:
    """The ledger URL in force: the argument, else FDP_LEDGER_URL, else the default file."""
    for candidate in (url, os.environ.get(ENV_VAR)):
        if candidate is not None and str(candidate).strip():
            return str(candidate).strip()
    return f"sqlite:///{default_path()}"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


# Characters a name may not hold: controls (Cc), format characters (Cf: the bidirectional
# overrides and isolates U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, zero-width characters),
# surrogates (Cs: what Python makes of bytes that are not UTF-8, e.g. $'bad\xff' on the command
# line) and private-use characters (Co). A right-to-left override shows a name in reports and
# `ledger show` as other text than it is, so two data sets could look alike.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co"})


def _refused_char(c: str) -> bool:
    return unicodedata.category(c) in _REFUSED_CATEGORIES


def check_name(name: str, what: str = "budget name") -> str:
    """``name`` stripped, if it is 1 to _NAME_MAX printable characters; ParameterError naming ``what``."""
    name = str(name).strip()
    if not name or len(name) > _NAME_MAX or any(_refused_char(c) for c in name):
        raise ParameterError(f"a {what} is 1 to {_NAME_MAX} printable characters, got {shown(name)} (no control, "
                             "bidirectional or invalid UTF-8 characters)")
    return name


def check_dataset_name(name: str) -> str:
    return check_name(name, "data set name")


def printable_name(text: str, fallback: str = "data") -> str:
    """``text`` without the characters a name may not hold (a default name taken from a file name)."""
    kept = "".join(c for c in str(text) if not _refused_char(c)).strip()
    return kept or fallback


@dataclass
class PersistentLedger(Ledger):
    """A snapshot of a stored budget and its entries (reserved ones included).

    Behaves as a :class:`Ledger` for every view (meter, composition, export); its
    ``to_dict`` adds the budget name and where the ledger lives, for ledger.json.
    """

    budget_name: str = DEFAULT_BUDGET
    location: str = ""
    created_utc: str = ""
    dataset: str | None = None  # the registered data set (schema 2)
    dataset_reason: str | None = None  # why it was registered as new data (--new-dataset --reason)

    def to_dict(self, neighbouring: str = NEIGHBOURING) -> dict:
        return {**super().to_dict(neighbouring), "budget_name": self.budget_name, "persistent": True}

    def store_note(self) -> dict:
        """What a release record says about the ledger it was charged to (public inputs only: the
        names the custodian chose and the reason written for a registration)."""
        note = {"persistent": True, "budget_name": self.budget_name, "created_utc": self.created_utc}
        if self.dataset is not None:
            note["dataset"] = self.dataset
        if self.dataset_reason:
            note["dataset_reason"] = self.dataset_reason
        return note


# --------------------------------------------------------------------------- SQL dialects

_DDL = {
    "sqlite": (
        "CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL, "
        "updated_utc TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS fdp_budgets (id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, "
        "name TEXT NOT NULL, content TEXT NOT NULL, unit TEXT NOT NULL, epsilon_total REAL NOT NULL, "
        "delta_total REAL NOT NULL, filter TEXT NOT NULL, split TEXT, data_label TEXT NOT NULL, "
        "created_by TEXT NOT NULL, created_utc TEXT NOT NULL, UNIQUE (fingerprint, name))",
        "CREATE TABLE IF NOT EXISTS fdp_entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, budget_id INTEGER NOT NULL "
        "REFERENCES fdp_budgets(id), entry_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, kind TEXT NOT NULL, "
        "mechanism TEXT NOT NULL, curve TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, rho REAL, "
        "mu REAL, label TEXT NOT NULL, entry TEXT NOT NULL, source TEXT NOT NULL, data_label TEXT NOT NULL, "
        "reserved_utc TEXT NOT NULL, completed_utc TEXT)",
        "CREATE INDEX IF NOT EXISTS fdp_entries_budget ON fdp_entries (budget_id, seq)",
        "CREATE INDEX IF NOT EXISTS fdp_budgets_content ON fdp_budgets (content)",
        "CREATE TABLE IF NOT EXISTS fdp_datasets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, "
        "budget_key TEXT NOT NULL UNIQUE, person_column TEXT, domain TEXT, value_range TEXT, n_policy TEXT, reason TEXT, "
        "created_by TEXT NOT NULL, created_utc TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS fdp_versions (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id INTEGER NOT NULL "
        "REFERENCES fdp_datasets(id), fingerprint TEXT NOT NULL UNIQUE, unit TEXT NOT NULL, n INTEGER, m INTEGER, "
        "score REAL, why TEXT NOT NULL, sketch TEXT, data_label TEXT NOT NULL, created_by TEXT NOT NULL, "
        "created_utc TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS fdp_versions_dataset ON fdp_versions (dataset_id, id)",
    ),
    "postgresql": (
        "CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL, "
        "updated_utc TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS fdp_budgets (id BIGSERIAL PRIMARY KEY, fingerprint TEXT NOT NULL, "
        "name TEXT NOT NULL, content TEXT NOT NULL, unit TEXT NOT NULL, epsilon_total DOUBLE PRECISION NOT NULL, "
        "delta_total DOUBLE PRECISION NOT NULL, filter TEXT NOT NULL, split TEXT, data_label TEXT NOT NULL, "
        "created_by TEXT NOT NULL, created_utc TEXT NOT NULL, UNIQUE (fingerprint, name))",
        "CREATE TABLE IF NOT EXISTS fdp_entries (seq BIGSERIAL PRIMARY KEY, budget_id BIGINT NOT NULL "
        "REFERENCES fdp_budgets(id), entry_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, kind TEXT NOT NULL, "
        "mechanism TEXT NOT NULL, curve TEXT NOT NULL, epsilon DOUBLE PRECISION NOT NULL, "
        "delta DOUBLE PRECISION NOT NULL, rho DOUBLE PRECISION, mu DOUBLE PRECISION, label TEXT NOT NULL, "
        "entry TEXT NOT NULL, source TEXT NOT NULL, data_label TEXT NOT NULL, reserved_utc TEXT NOT NULL, "
        "completed_utc TEXT)",
        "CREATE INDEX IF NOT EXISTS fdp_entries_budget ON fdp_entries (budget_id, seq)",
        "CREATE INDEX IF NOT EXISTS fdp_budgets_content ON fdp_budgets (content)",
        "CREATE TABLE IF NOT EXISTS fdp_datasets (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
        "budget_key TEXT NOT NULL UNIQUE, person_column TEXT, domain TEXT, value_range TEXT, n_policy TEXT, reason TEXT, "
        "created_by TEXT NOT NULL, created_utc TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS fdp_versions (id BIGSERIAL PRIMARY KEY, dataset_id BIGINT NOT NULL "
        "REFERENCES fdp_datasets(id), fingerprint TEXT NOT NULL UNIQUE, unit TEXT NOT NULL, n INTEGER, m INTEGER, "
        "score DOUBLE PRECISION, why TEXT NOT NULL, sketch TEXT, data_label TEXT NOT NULL, created_by TEXT NOT NULL, "
        "created_utc TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS fdp_versions_dataset ON fdp_versions (dataset_id, id)",
    ),
}
_BUDGET_COLUMNS = ("id", "fingerprint", "name", "content", "unit", "epsilon_total", "delta_total", "filter", "split",
                   "data_label", "created_by", "created_utc")
# The key, in an entry's stored JSON, of the release its parts share (one release id, several rows:
# METHODS.md 23); it is not a field of the entry itself.
RELEASE_KEY = "release_id"
_ENTRY_COLUMNS = ("entry_id", "status", "entry", "source", "data_label", "reserved_utc", "completed_utc")


class _Session:
    """One open connection inside one transaction; SQL written with '?' placeholders."""

    def __init__(self, conn, dialect: str):
        self.conn, self.dialect = conn, dialect

    def execute(self, sql: str, params: tuple = ()):
        if self.dialect == "postgresql":
            sql = sql.replace("?", "%s")
        cur = self.conn.cursor()
        cur.execute(sql, params)
        return cur

    def one(self, sql: str, params: tuple = ()):
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: tuple = ()):
        return self.execute(sql, params).fetchall()


# --------------------------------------------------------------------------- the store

@dataclass(frozen=True)
class BudgetSpec:
    """What a budget is created with (fixed for good)."""

    epsilon_total: float
    delta_total: float
    filter: str = "basic"
    split: dict | None = None

    def ledger(self) -> Ledger:
        """Validates the spec (the Ledger constructor's checks) and returns an empty ledger."""
        return Ledger(self.epsilon_total, self.delta_total, self.split, self.filter)

    @classmethod
    def of(cls, ledger: Ledger) -> "BudgetSpec":
        return cls(ledger.epsilon_total, ledger.delta_total, ledger.filter,
                   None if ledger.split is None else dict(ledger.split))


@dataclass(frozen=True)
class Dataset:
    """A registered data set (METHODS.md 22): the people a budget belongs to."""

    id: int
    name: str
    budget_key: str  # the fdp_budgets.fingerprint of its budgets (its first version's fingerprint)
    person_column: str | None = None
    domain: list | None = None
    value_range: list | None = None
    n_policy: str | None = None
    reason: str | None = None
    created_by: str = ""
    created_utc: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "person_column": self.person_column, "domain": self.domain,
                "value_range": self.value_range, "n_policy": self.n_policy, "reason": self.reason,
                "created_by": self.created_by, "created_utc": self.created_utc}


@dataclass(frozen=True)
class NewDataset:
    """A registration to create (with the charge or the budget that needs it, in one transaction)."""

    name: str
    person_column: str | None = None
    domain: list | None = None
    value_range: list | None = None
    n_policy: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class NewVersion:
    """A file's version of a data set, recorded with its first charge (fingerprint, size, why, sketch)."""

    fingerprint: str
    unit: str = "{}"
    n: int | None = None
    m: int | None = None
    score: float | None = None
    why: str = ""
    sketch: str | None = None  # data-derived: stays in the database
    data_label: str = ""


@dataclass(frozen=True)
class Registration:
    """Which data set a charge belongs to and what to record about it: an existing registration
    (``dataset``) or a new one (``new``), and the file's version (``version``; None when known)."""

    dataset: Dataset | None = None
    new: NewDataset | None = None
    version: NewVersion | None = None


_DATASET_COLUMNS = ("id", "name", "budget_key", "person_column", "domain", "value_range", "n_policy", "reason",
                    "created_by", "created_utc")
_VERSION_COLUMNS = ("fingerprint", "unit", "n", "m", "score", "why", "data_label", "created_by", "created_utc")


def _stored_entry(text: str) -> LedgerEntry:
    """An entry from its stored JSON (without the release id its parts share)."""
    data = json.loads(text)
    data.pop(RELEASE_KEY, None)
    return LedgerEntry.from_dict(data)


def _dataset(row) -> Dataset:
    d = dict(zip(_DATASET_COLUMNS, row))
    for key in ("domain", "value_range"):
        d[key] = None if d[key] is None else json.loads(d[key])
    return Dataset(**d)


class LedgerStore:
    """Budgets and their entries in one database (SQLite file or PostgreSQL).

    Every method opens its own connection and transaction, so one store object may be
    shared by threads (app sessions) and the database by processes (CLI runs).
    """

    def __init__(self, url: str | None = None, *, read_only: bool = False):
        self.url = resolve_url(url)
        # read_only: a reading command's store (ledger show). It never migrates an older schema
        # nor changes the journal mode: it refuses an older ledger in one line instead.
        self.read_only = read_only
        self.dialect, self._target = _parse_url(self.url)
        self._ready = False
        self._lock = threading.Lock()
        if self.dialect == "postgresql":
            try:
                import psycopg  # noqa: F401
            except ImportError:  # pragma: no cover - psycopg is a pinned dependency
                raise LedgerError("a postgresql:// ledger needs the psycopg package (pip install 'psycopg[binary]')") \
                    from None
            _check_conninfo(self._target)
        self._ready = False
        # Reading never creates anything: a missing SQLite file is an empty ledger, and the
        # schema is created by the first write (ledger init, a charge).
        if self._exists():
            self._ensure_schema(create=False)

    def create_schema(self) -> "LedgerStore":
        """Create fdp's tables now (otherwise the first write does); returns the store."""
        self._ensure_schema(create=True)
        return self

    def _exists(self) -> bool:
        return self.dialect == "postgresql" or Path(self._target).exists()

    def _has_schema(self) -> bool:
        """Whether fdp's tables are there to read (checked once they are)."""
        if not self._ready and self._exists():
            self._ensure_schema(create=False)
        return self._ready

    # -- where it lives ------------------------------------------------------------
    @property
    def location(self) -> str:
        """A plain description of where the ledger lives (never a password)."""
        if self.dialect == "sqlite":
            return f"SQLite file {self._target}"
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(self._target)
        host = info.get("host") or "local socket"
        port = f":{info['port']}" if info.get("port") else ""
        user = f"{info['user']}@" if info.get("user") else ""
        return f"PostgreSQL database '{info.get('dbname', '')}' at {user}{host}{port}"

    # -- connections ---------------------------------------------------------------
    def _connect(self):
        if self.dialect == "sqlite":
            path = Path(self._target)
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                conn = sqlite3.connect(str(path), timeout=_SQLITE_BUSY_SECONDS, isolation_level=None)
            except (OSError, sqlite3.Error) as exc:
                raise LedgerError(f"cannot open the ledger {self.location}: {exc}") from None
            return conn
        import psycopg

        try:
            return psycopg.connect(self._target, autocommit=True, connect_timeout=15)
        except psycopg.Error as exc:
            raise LedgerError(f"cannot connect to the ledger {self.location}: {' '.join(str(exc).split())}") from None

    @contextlib.contextmanager
    def _transaction(self, *, write: bool) -> Iterator[_Session]:
        """One transaction; ``write`` takes SQLite's writer lock up front (BEGIN IMMEDIATE)."""
        conn = self._connect()
        try:
            session = _Session(conn, self.dialect)
            if self.dialect == "sqlite":
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield session
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            else:
                with conn.transaction():
                    yield session
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"ledger {self.location}: {exc}") from None
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg"):
                raise LedgerError(f"ledger {self.location}: {' '.join(str(exc).split())}") from None
            raise
        finally:
            conn.close()

    # -- schema --------------------------------------------------------------------
    def _ensure_schema(self, *, create: bool = True) -> None:
        """Check (and migrate) fdp's schema; with ``create``, create it in a database without one."""
        with self._lock:
            if self._ready:
                return
            journal = "wal"
            with self._transaction(write=not self.read_only) as s:
                if self.dialect == "sqlite":
                    journal = s.one("PRAGMA journal_mode")[0]
                    tables = {r[0] for r in s.all("SELECT name FROM sqlite_master WHERE type = 'table'")}
                else:
                    s.execute("SELECT pg_advisory_xact_lock(?)", (_PG_SCHEMA_LOCK,))
                    tables = {r[0] for r in s.all("SELECT table_name FROM information_schema.tables "
                                                  "WHERE table_schema = current_schema()")}
                version = self._stored_version(s, tables)
                if version is None:
                    if not create:
                        return
                    for statement in _DDL[self.dialect]:
                        s.execute(statement)
                    s.execute("INSERT INTO schema_version (component, version, updated_utc) VALUES (?, ?, ?)",
                              (SCHEMA_COMPONENT, SCHEMA_VERSION, _now()))
                elif version < SCHEMA_VERSION and self.read_only:
                    raise LedgerError(f"ledger {self.location} has schema version {version} (this fdp writes "
                                      f"{SCHEMA_VERSION}); a reading command does not migrate it: run a command that "
                                      "writes to it first (ledger init, or a release with --ledger)")
                else:
                    self._migrate(s, version)
            if self.dialect == "sqlite" and journal != "wal" and not self.read_only:
                # Write-ahead logging: readers (the app's meter) never wait for a writer.
                conn = self._connect()
                try:
                    with contextlib.suppress(sqlite3.OperationalError):
                        conn.execute("PRAGMA journal_mode=WAL")
                finally:
                    conn.close()
            self._ready = True

    def _stored_version(self, s: _Session, tables: set) -> int | None:
        tables = {t for t in tables if not str(t).startswith("sqlite_")}
        if "schema_version" not in tables:
            if tables:
                # Another application's database (or fdp tables without their version):
                # fdp never adds its tables beside someone else's.
                raise LedgerError(f"ledger {self.location} holds other tables ({', '.join(sorted(tables)[:5])}) and "
                                  "no schema_version table: not an fdp ledger, refusing to use it")
            return None
        try:
            row = s.one("SELECT version FROM schema_version WHERE component = ?", (SCHEMA_COMPONENT,))
        except Exception as exc:  # a schema_version table of another application
            raise LedgerError(f"ledger {self.location}: its schema_version table is not fdp's ({exc})") from None
        if row is None:
            raise LedgerError(f"ledger {self.location}: schema_version has no '{SCHEMA_COMPONENT}' row: unknown "
                              "schema, refusing to use it")
        version = row[0]
        if not isinstance(version, int) or version < 1:
            raise LedgerError(f"ledger {self.location}: unknown schema version {version!r}")
        if version > SCHEMA_VERSION:
            raise LedgerError(f"ledger {self.location} has schema version {version}, newer than this fdp "
                              f"understands ({SCHEMA_VERSION}): upgrade fdp before using it")
        return version

    def _migrate(self, s: _Session, version: int) -> None:
        while version < SCHEMA_VERSION:
            MIGRATIONS[version](self, s)
            version += 1
            s.execute("UPDATE schema_version SET version = ?, updated_utc = ? WHERE component = ?",
                      (version, _now(), SCHEMA_COMPONENT))

    def _to_version_2(self, s: _Session) -> None:
        """Schema 1 -> 2: the registered data sets. Every existing budget's data set (its fingerprint)
        becomes a registration of its own, holding its budgets exactly as they were; its sketch is
        filled in the first time a file with that fingerprint is seen again."""
        for statement in _DDL[self.dialect]:
            s.execute(statement)  # IF NOT EXISTS: only the new tables are created
        rows = s.all("SELECT fingerprint, MIN(unit), MIN(data_label), MIN(created_by), MIN(created_utc), MIN(id) "
                     "FROM fdp_budgets GROUP BY fingerprint ORDER BY MIN(id)")
        taken = set()
        for fingerprint, unit, label, created_by, created_utc, _ in rows:
            stem = printable_name(Path(str(label or "")).stem)
            name = check_dataset_name(f"{stem[:60]} {fingerprint[:8]}" if stem in taken else stem[:90])
            taken.add(name)
            person = json.loads(unit or "{}").get("person_column")
            dataset_id = s.one("INSERT INTO fdp_datasets (name, budget_key, person_column, domain, value_range, "
                               "n_policy, reason, created_by, created_utc) VALUES (?, ?, ?, NULL, NULL, NULL, NULL, ?, ?) "
                               "RETURNING id", (name, fingerprint, person, created_by, created_utc))[0]
            s.execute("INSERT INTO fdp_versions (dataset_id, fingerprint, unit, n, m, score, why, sketch, data_label, "
                      "created_by, created_utc) VALUES (?, ?, ?, NULL, NULL, 1.0, ?, NULL, ?, ?, ?)",
                      (dataset_id, fingerprint, unit, "registered from an existing budget by the schema-2 migration",
                       str(label or ""), created_by, created_utc))

    def _to_version_3(self, s: _Session) -> None:
        """Schema 2 -> 3 (issue 37): the scheme-1 sketches held a float vector per curve, in row order (a copy
        of the data). They are dropped; each version is sketched again, as keyed digest sets (fdp.sketch/2),
        the first time a file with its fingerprint is seen (as after the schema-2 migration)."""
        s.execute("UPDATE fdp_versions SET sketch = NULL WHERE sketch LIKE ?", ("fdp.sketch/1:%",))

    # -- reading -------------------------------------------------------------------
    def _budget_row(self, s: _Session, fingerprint: str, name: str, *, lock: bool = False):
        sql = f"SELECT {', '.join(_BUDGET_COLUMNS)} FROM fdp_budgets WHERE fingerprint = ? AND name = ?"
        if lock and self.dialect == "postgresql":
            sql += " FOR UPDATE"  # serialises check-and-charge on this budget
        row = s.one(sql, (fingerprint, name))
        return None if row is None else dict(zip(_BUDGET_COLUMNS, row))

    def _entry_rows(self, s: _Session, budget_id: int) -> list[dict]:
        rows = s.all(f"SELECT {', '.join(_ENTRY_COLUMNS)} FROM fdp_entries WHERE budget_id = ? ORDER BY seq",
                     (budget_id,))
        return [dict(zip(_ENTRY_COLUMNS, r)) for r in rows]

    def _snapshot(self, budget: dict, entries: list[dict], s: _Session | None = None) -> PersistentLedger:
        split = None if budget["split"] is None else json.loads(budget["split"])
        dataset = None
        if s is not None:
            row = s.one(f"SELECT {', '.join(_DATASET_COLUMNS)} FROM fdp_datasets WHERE budget_key = ?",
                        (budget["fingerprint"],))
            dataset = None if row is None else _dataset(row)
        return PersistentLedger(float(budget["epsilon_total"]), float(budget["delta_total"]), split, budget["filter"],
                                [_stored_entry(e["entry"]) for e in entries],
                                budget_name=budget["name"], location=self.location,
                                created_utc=budget["created_utc"], dataset=None if dataset is None else dataset.name,
                                dataset_reason=None if dataset is None else dataset.reason)

    def ledger(self, fingerprint: str, name: str = DEFAULT_BUDGET) -> PersistentLedger | None:
        """The budget and its entries as a Ledger, or None when no such budget exists."""
        if not self._has_schema():
            return None
        with self._transaction(write=False) as s:
            budget = self._budget_row(s, fingerprint, check_name(name))
            if budget is None:
                return None
            return self._snapshot(budget, self._entry_rows(s, budget["id"]), s)

    def budget_names(self, fingerprint: str) -> list[str]:
        if not self._has_schema():
            return []
        with self._transaction(write=False) as s:
            return [r[0] for r in s.all("SELECT name FROM fdp_budgets WHERE fingerprint = ? ORDER BY id",
                                        (fingerprint,))]

    def holds_budgets(self) -> bool:
        """Whether any budget is stored at all (a missing SQLite file holds none; nothing is created)."""
        if not self._has_schema():
            return False
        with self._transaction(write=False) as s:
            return s.one("SELECT COUNT(*) FROM fdp_budgets")[0] > 0

    def other_units(self, fingerprint: str, content: str) -> list[str]:
        """Unit settings of budgets on the same curves under another unit of privacy."""
        if not self._has_schema():
            return []
        with self._transaction(write=False) as s:
            rows = s.all("SELECT DISTINCT unit FROM fdp_budgets WHERE content = ? AND fingerprint <> ?",
                         (content, fingerprint))
        return sorted(r[0] for r in rows)

    # -- registered data sets ------------------------------------------------------
    def datasets(self) -> list[Dataset]:
        if not self._has_schema():
            return []
        with self._transaction(write=False) as s:
            return [_dataset(r) for r in s.all(f"SELECT {', '.join(_DATASET_COLUMNS)} FROM fdp_datasets ORDER BY id")]

    def dataset_named(self, name: str) -> Dataset | None:
        return next((d for d in self.datasets() if d.name == name), None)

    def dataset_of_fingerprint(self, fingerprint: str) -> tuple[Dataset, bool] | None:
        """The data set a fingerprint was recorded under, and whether that version has a sketch."""
        if not self._has_schema():
            return None
        with self._transaction(write=False) as s:
            row = s.one(f"SELECT {', '.join('d.' + c for c in _DATASET_COLUMNS)}, v.sketch IS NOT NULL "
                        "FROM fdp_versions v JOIN fdp_datasets d ON d.id = v.dataset_id WHERE v.fingerprint = ?",
                        (fingerprint,))
        return None if row is None else (_dataset(row[:-1]), bool(row[-1]))

    def sketches(self) -> list[tuple[Dataset, list[str]]]:
        """Every registration with the stored sketches of its versions (data-derived: never exported)."""
        if not self._has_schema():
            return []
        with self._transaction(write=False) as s:
            datasets = [_dataset(r) for r in s.all(f"SELECT {', '.join(_DATASET_COLUMNS)} FROM fdp_datasets "
                                                   "ORDER BY id")]
            rows = s.all("SELECT dataset_id, sketch FROM fdp_versions WHERE sketch IS NOT NULL ORDER BY id")
        by_id: dict[int, list[str]] = {}
        for dataset_id, sketch in rows:
            by_id.setdefault(dataset_id, []).append(sketch)
        return [(d, by_id.get(d.id, [])) for d in datasets]

    def versions(self, dataset: Dataset) -> list[dict]:
        """A data set's versions, oldest first: fingerprint, n, m, score, why, when (no sketch)."""
        with self._transaction(write=False) as s:
            rows = s.all(f"SELECT {', '.join(_VERSION_COLUMNS)} FROM fdp_versions WHERE dataset_id = ? ORDER BY id",
                         (dataset.id,))
        return [dict(zip(_VERSION_COLUMNS, r)) for r in rows]

    def _register(self, s: _Session, registration: Registration | None, key: str, created_by: str) -> None:
        """Record a new data set and/or a file's version inside the caller's transaction."""
        if registration is None:
            return
        dataset, new, version = registration.dataset, registration.new, registration.version
        if new is not None:
            row = s.one("INSERT INTO fdp_datasets (name, budget_key, person_column, domain, value_range, n_policy, "
                        "reason, created_by, created_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT DO NOTHING RETURNING id",
                        (check_dataset_name(new.name), key, new.person_column,
                         None if new.domain is None else json.dumps(new.domain),
                         None if new.value_range is None else json.dumps(new.value_range), new.n_policy, new.reason,
                         created_by, _now()))
            stored = s.one(f"SELECT {', '.join(_DATASET_COLUMNS)} FROM fdp_datasets WHERE name = ?", (new.name,))
            if row is None and (stored is None or stored[2] != key):
                raise LedgerError(f"a data set named '{new.name}' is already registered in the ledger {self.location} "
                                  "with other data: choose another --dataset name")
            dataset = _dataset(stored)
        if dataset is None or version is None:
            return
        s.execute("INSERT INTO fdp_versions (dataset_id, fingerprint, unit, n, m, score, why, sketch, data_label, "
                  "created_by, created_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                  (dataset.id, version.fingerprint, version.unit, version.n, version.m, version.score, version.why,
                   version.sketch, str(version.data_label), created_by, _now()))
        if version.sketch is not None:  # a migrated version gets its sketch the first time it is seen
            s.execute("UPDATE fdp_versions SET sketch = ?, n = ?, m = ? WHERE fingerprint = ? AND sketch IS NULL",
                      (version.sketch, version.n, version.m, version.fingerprint))

    def show(self, fingerprint: str, name: str = DEFAULT_BUDGET, *, match: Mapping | None = None) -> dict:
        """JSON-ready {"budget", "spent", "remaining", "entries", "dataset", "versions", "match"}
        (what ``ledger show`` prints; ``match``: how the file was matched to its data set)."""
        name = check_name(name)
        budget = None
        if self._has_schema():
            with self._transaction(write=False) as s:
                budget = self._budget_row(s, fingerprint, name)
                rows = [] if budget is None else self._entry_rows(s, budget["id"])
                found = s.one(f"SELECT {', '.join(_DATASET_COLUMNS)} FROM fdp_datasets WHERE budget_key = ?",
                              (fingerprint,))
        if budget is None:
            raise LedgerError(f"no budget '{name}' for this data set in the ledger {self.location}; create it "
                              "with: python -m fdp_core ledger init --data PATH --epsilon E --delta D")
        dataset = None if found is None else _dataset(found)
        ledger = self._snapshot(budget, rows)
        spent, remaining = ledger.spent(), ledger.remaining()
        return {
            "ledger": self.location,
            "budget": {"name": budget["name"], "fingerprint": budget["fingerprint"],
                       "unit": json.loads(budget["unit"]), "epsilon_total": ledger.epsilon_total,
                       "delta_total": ledger.delta_total, "rho_total": ledger.rho_total, "filter": ledger.filter,
                       "split": ledger.split, "data_label": budget["data_label"], "created_by": budget["created_by"],
                       "created_utc": budget["created_utc"]},
            "spent": {"epsilon": spent.epsilon, "delta": spent.delta, "rho": spent.rho,
                      "n_entries": len(rows), "n_reserved": sum(r["status"] == "reserved" for r in rows)},
            "remaining": {"epsilon": remaining.epsilon, "delta": remaining.delta, "rho": remaining.rho},
            "entries": [{**json.loads(r["entry"]), "status": r["status"], "source": r["source"],
                         "data_label": r["data_label"], "reserved_utc": r["reserved_utc"],
                         "completed_utc": r["completed_utc"]} for r in rows],
            # Added by schema 2 (today's keys above are unchanged): the registered data set the
            # budget belongs to, its versions (no sketch: it never leaves the database) and how
            # this file was matched to it.
            "dataset": None if dataset is None else dataset.to_dict(),
            "versions": [] if dataset is None else self.versions(dataset),
            "match": None if match is None else dict(match),
        }

    # -- writing -------------------------------------------------------------------
    def create_budget(self, fingerprint: str, spec: BudgetSpec, *, name: str = DEFAULT_BUDGET, content: str = "",
                      unit: str = "{}", data_label: str = "", created_by: str = "library",
                      exist_ok: bool = False, registration: Registration | None = None) -> tuple[PersistentLedger, bool]:
        """Create a budget once; returns (the stored budget, whether this call created it).

        An existing budget is never changed: with ``exist_ok`` it is returned as stored
        (whatever ``spec`` says), otherwise LedgerError. ``registration``: the data set (and the
        file's version) recorded in the same transaction.
        """
        name = check_name(name)
        spec.ledger()  # validation before anything is written
        self._ensure_schema(create=True)
        if spec.filter not in FILTERS:  # pragma: no cover - Ledger() already refuses it
            raise ParameterError(f"filter must be one of {FILTERS}")
        split = None if spec.split is None else json.dumps({k: float(v) for k, v in spec.split.items()},
                                                           sort_keys=True)
        with self._transaction(write=True) as s:
            self._register(s, registration, fingerprint, created_by)
            inserted = s.one("INSERT INTO fdp_budgets (fingerprint, name, content, unit, epsilon_total, delta_total, "
                             "filter, split, data_label, created_by, created_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                             "ON CONFLICT (fingerprint, name) DO NOTHING RETURNING id",
                             (fingerprint, name, content or fingerprint, unit, float(spec.epsilon_total),
                              float(spec.delta_total), spec.filter, split, str(data_label), created_by, _now()))
            budget = self._budget_row(s, fingerprint, name)
            entries = self._entry_rows(s, budget["id"])
            snapshot = self._snapshot(budget, entries, s)
            was_created = inserted is not None
            if not was_created and not exist_ok:  # raised inside: the registration is rolled back too
                stored = snapshot
                raise LedgerError(f"a budget '{name}' already exists for this data set (epsilon {stored.epsilon_total:g}, "
                                  f"delta {stored.delta_total:g}, {stored.filter} filter, created "
                                  f"{budget['created_utc']}); a budget is created once and never changed: choose "
                                  "another --name for a new one")
        return snapshot, was_created

    def reserve(self, fingerprint: str, entry: LedgerEntry, **options) -> PersistentLedger:
        """Check-and-charge one entry in one locked transaction (:meth:`reserve_all` of one part)."""
        return self.reserve_all(fingerprint, [entry], **options)

    def reserve_all(self, fingerprint: str, entries, *, name: str = DEFAULT_BUDGET, source: str = "library",
                    data_label: str = "", registration: Registration | None = None, spec: BudgetSpec | None = None,
                    content: str = "", unit: str = "{}", release_id: str | None = None) -> PersistentLedger:
        """Check-and-charge every part of one release in ONE locked transaction (METHODS.md 23);
        returns the ledger including every entry.

        Every part is checked as if the earlier ones were charged, then all are inserted as
        ``reserved`` sharing ``release_id`` (the first entry's id by default), or none is:
        ``registration`` (the data set and the file's version) and, when the budget does not
        exist yet, a budget created from ``spec`` are recorded in the same transaction, so a
        refused release leaves nothing behind. Raises BudgetError (nothing recorded) when the
        parts do not fit together, LedgerError when the budget does not exist and no ``spec`` is given.
        """
        entries = list(entries)
        if not entries:
            raise ParameterError("a release reserves at least one ledger entry")
        release_id = str(release_id or entries[0].id)
        name = check_name(name)
        if source not in SOURCES:
            raise ParameterError(f"source must be one of {SOURCES}, got {source!r}")
        if spec is not None:
            spec.ledger()
        self._ensure_schema(create=True)
        with self._transaction(write=True) as s:
            self._register(s, registration, fingerprint, source)
            budget = self._budget_row(s, fingerprint, name, lock=True)
            if budget is None and spec is not None:
                split = None if spec.split is None else json.dumps({k: float(v) for k, v in spec.split.items()},
                                                                   sort_keys=True)
                s.execute("INSERT INTO fdp_budgets (fingerprint, name, content, unit, epsilon_total, delta_total, "
                          "filter, split, data_label, created_by, created_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                          "ON CONFLICT (fingerprint, name) DO NOTHING",
                          (fingerprint, name, content or fingerprint, unit, float(spec.epsilon_total),
                           float(spec.delta_total), spec.filter, split, str(data_label), source, _now()))
                budget = self._budget_row(s, fingerprint, name, lock=True)
            if budget is None:
                raise LedgerError(f"no budget '{name}' for this data set in the ledger {self.location}")
            ledger = self._snapshot(budget, self._entry_rows(s, budget["id"]), s)
            for entry in entries:  # Ledger.check's arithmetic; raises BudgetError (all rolled back) when one does not fit
                ledger.commit(entry)
            for entry in entries:
                s.execute("INSERT INTO fdp_entries (budget_id, entry_id, status, kind, mechanism, curve, epsilon, "
                          "delta, rho, mu, label, entry, source, data_label, reserved_utc) "
                          "VALUES (?, ?, 'reserved', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (budget["id"], entry.id, entry.kind, entry.mechanism, entry.curve, entry.epsilon,
                           entry.delta, entry.rho, entry.mu, entry.label,
                           json.dumps({**entry.to_dict(), RELEASE_KEY: release_id}, sort_keys=True), source,
                           str(data_label), _now()))
        return ledger

    def complete(self, entry_id: str) -> None:
        """Mark a reserved entry complete (its release has been written)."""
        self.complete_all([entry_id])

    def complete_all(self, entry_ids) -> None:
        """Mark every reserved entry of one release complete in ONE transaction (all or none)."""
        ids = list(dict.fromkeys(str(i) for i in entry_ids))
        self._ensure_schema(create=True)
        with self._transaction(write=True) as s:
            now = _now()
            for entry_id in ids:
                cur = s.execute("UPDATE fdp_entries SET status = 'complete', completed_utc = ? "
                                "WHERE entry_id = ? AND status = 'reserved'", (now, entry_id))
                if cur.rowcount != 1:  # raised inside: the other parts stay reserved too
                    raise LedgerError(f"no reserved ledger entry {entry_id!r} to complete")

    def release_entries(self, release_id: str) -> list[tuple[str, str]]:
        """[(entry id, status), ...] of every part charged with ``release_id`` (the id the parts share, or
        the id of any one of them), in the order reserved."""
        if not self._has_schema():
            return []
        with self._transaction(write=False) as s:
            rows = [(r[0], r[1], json.loads(r[2]).get(RELEASE_KEY)) for r in
                    s.all("SELECT entry_id, status, entry FROM fdp_entries ORDER BY seq")]
        key = next((shared or entry_id for entry_id, _, shared in rows if entry_id == str(release_id)), str(release_id))
        return [(entry_id, status) for entry_id, status, shared in rows if (shared or entry_id) == key]


# Each migration takes a database from version v to v + 1.
MIGRATIONS = {1: LedgerStore._to_version_2, 2: LedgerStore._to_version_3}


def _check_conninfo(target: str) -> None:
    """A PostgreSQL URL libpq cannot parse (``postgresql://:::@@@/??``) is bad input, refused
    before any connection; the URL itself is not echoed (it may hold a password)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(target)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).replace(target, "<url>").split())
        raise LedgerError(f"malformed PostgreSQL ledger URL ({reason}); the form is "
                          "postgresql://USER@HOST:PORT/DATABASE") from None


def _parse_url(url: str) -> tuple[str, str]:
    """(dialect, target): an absolute SQLite path or a libpq connection URI."""
    text = url.strip()
    lower = text.lower()
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if lower.startswith(prefix):
            return "postgresql", "postgresql://" + text[len(prefix):]
    if lower.startswith("sqlite:"):
        rest = text[len("sqlite:"):]
        if not rest.startswith("///") or rest == "///":
            raise LedgerError(f"a SQLite ledger URL is sqlite:///relative/path or sqlite:////absolute/path, got {url!r}")
        path = rest[3:]
        if path == ":memory:":
            raise LedgerError("an in-memory SQLite ledger forgets everything: give a file")
        return "sqlite", str(Path(path).expanduser().resolve())
    if "://" in text:
        raise LedgerError(f"unsupported ledger URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST/DATABASE")
    # A bare path must look like a database file, so a stray word (a typo, another option's
    # value) is refused instead of silently creating a new, empty ledger under that name.
    if Path(text).suffix.lower() not in _SQLITE_SUFFIXES:
        raise LedgerError(f"a ledger is a URL (sqlite:///PATH, postgresql://USER@HOST/DATABASE) or a file path ending "
                          f"in {', '.join(_SQLITE_SUFFIXES)}; got {url!r}")
    return "sqlite", str(Path(text).expanduser().resolve())


# --------------------------------------------------------------------------- a budget bound to one data set

@dataclass
class StoredBudget:
    """One budget of one registered data set in a store: what a commit charges (see export.commit_*).

    ``registration``: the data set (new or existing) and this file's version, recorded with the
    first charge; ``spec``: the budget to create at that charge when it does not exist yet
    (replay's config budget); ``match``: how the file was matched to the data set (for messages
    and ``ledger show``). All of it is written in the charge's own transaction, so a refused
    release writes nothing.
    """

    store: LedgerStore
    fingerprint: str
    name: str = DEFAULT_BUDGET
    source: str = "library"
    data_label: str = ""
    content: str = ""
    unit: str = "{}"
    registration: Registration | None = None
    spec: BudgetSpec | None = None
    match: dict | None = None
    last_snapshot: PersistentLedger | None = field(default=None, repr=False)  # what the last charge returned
    _created: bool = field(default=False, repr=False)

    def __post_init__(self):
        self.name = check_name(self.name)

    @property
    def dataset_name(self) -> str | None:
        r = self.registration
        if r is None:
            return None
        return r.new.name if r.new is not None else (r.dataset.name if r.dataset is not None else None)

    def ledger(self) -> PersistentLedger | None:
        return self.store.ledger(self.fingerprint, self.name)

    def ensure(self, spec: BudgetSpec) -> tuple[PersistentLedger, bool]:
        """The stored budget, created from ``spec`` if it does not exist yet (never changed)."""
        return self.store.create_budget(self.fingerprint, spec, name=self.name, content=self.content, unit=self.unit,
                                        data_label=self.data_label, created_by=self.source, exist_ok=True,
                                        registration=self.registration)

    def reserve(self, entry: LedgerEntry) -> PersistentLedger:
        self.last_snapshot = self.store.reserve(self.fingerprint, entry, name=self.name, source=self.source,
                                                data_label=self.data_label, registration=self.registration,
                                                spec=self.spec, content=self.content, unit=self.unit)
        return self.last_snapshot

    def reserve_all(self, entries, *, release_id: str | None = None) -> PersistentLedger:
        """Every part of one release charged in one transaction (all or none)."""
        self.last_snapshot = self.store.reserve_all(self.fingerprint, entries, name=self.name, source=self.source,
                                                    data_label=self.data_label, registration=self.registration,
                                                    spec=self.spec, content=self.content, unit=self.unit,
                                                    release_id=release_id)
        return self.last_snapshot

    def complete(self, entry_id: str) -> None:
        self.store.complete(entry_id)

    def complete_all(self, entry_ids) -> None:
        self.store.complete_all(entry_ids)


__all__ = ["BudgetError", "BudgetSpec", "DEFAULT_BUDGET", "Dataset", "ENV_VAR", "LedgerStore", "NewDataset",
           "NewVersion", "PersistentLedger", "RELEASE_KEY", "Registration", "StoredBudget", "default_path", "resolve_url"]
