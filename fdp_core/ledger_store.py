"""The persistent privacy-budget ledger: budgets and charges in a database (METHODS.md 8).

One small interface over two engines: an embedded SQLite file by default (Python's
sqlite3) and PostgreSQL for a shared deployment (psycopg 3). One URL selects it:

* ``--ledger URL`` on the command line, else the environment variable ``FDP_LEDGER_URL``,
  else the default file ``$XDG_DATA_HOME/fdp/ledger.sqlite3`` (``~/.local/share/fdp/...``);
* ``sqlite:///relative/path.sqlite3``, ``sqlite:////absolute/path.sqlite3`` (SQLAlchemy's
  spelling) or a plain file path; ``postgresql://user:password@host:port/database``.

A budget is keyed by a data set's fingerprint (:mod:`fdp_core.fingerprint`) and a name
("default" unless the custodian creates another one). It is created once (total epsilon,
delta, composition filter, optional split) and then only spent: nothing here raises or
resets it.

Check-and-charge is one transaction, before any noise is drawn: ``BEGIN IMMEDIATE`` on
SQLite (one writer at a time), ``SELECT ... FOR UPDATE`` on the budget row on PostgreSQL.
Inside it the budget and every entry are loaded into an in-memory
:class:`fdp_core.accounting.Ledger`, whose :meth:`~fdp_core.accounting.Ledger.check` does
the arithmetic (basic or zCDP filter, split), and the entry is inserted as ``reserved``.
The caller draws the noise, writes the release, then marks the entry ``complete``. A crash
in between leaves the reservation: budget may be lost, never spent twice. Reserved
entries count as spent.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from .accounting import FILTERS, Ledger, LedgerEntry
from .errors import BudgetError, LedgerError, ParameterError, shown

ENV_VAR = "FDP_LEDGER_URL"
SCHEMA_COMPONENT = "fdp.ledger"
SCHEMA_VERSION = 1
DEFAULT_BUDGET = "default"
STATUSES = ("reserved", "complete")
SOURCES = ("app", "cli", "library")
# Each migration takes a database from version v to v + 1 (none yet: version 1 is the first).
MIGRATIONS: dict[int, tuple[str, ...]] = {}
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


def check_name(name: str) -> str:
    name = str(name).strip()
    if not name or len(name) > _NAME_MAX or any(ord(c) < 32 for c in name):
        raise ParameterError(f"a budget name is 1 to {_NAME_MAX} printable characters, got {shown(name)}")
    return name


@dataclass
class PersistentLedger(Ledger):
    """A snapshot of a stored budget and its entries (reserved ones included).

    Behaves as a :class:`Ledger` for every view (meter, composition, export); its
    ``to_dict`` adds the budget name and where the ledger lives, for ledger.json.
    """

    budget_name: str = DEFAULT_BUDGET
    location: str = ""
    created_utc: str = ""

    def to_dict(self) -> dict:
        return {**super().to_dict(), "budget_name": self.budget_name, "persistent": True}

    def store_note(self) -> dict:
        """What a release record says about the ledger it was charged to."""
        return {"persistent": True, "budget_name": self.budget_name, "created_utc": self.created_utc}


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
    ),
}
_BUDGET_COLUMNS = ("id", "fingerprint", "name", "content", "unit", "epsilon_total", "delta_total", "filter", "split",
                   "data_label", "created_by", "created_utc")
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


class LedgerStore:
    """Budgets and their entries in one database (SQLite file or PostgreSQL).

    Every method opens its own connection and transaction, so one store object may be
    shared by threads (app sessions) and the database by processes (CLI runs).
    """

    def __init__(self, url: str | None = None):
        self.url = resolve_url(url)
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
        self._ensure_schema()

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
    def _ensure_schema(self) -> None:
        with self._lock:
            if self._ready:
                return
            journal = "wal"
            with self._transaction(write=True) as s:
                if self.dialect == "sqlite":
                    journal = s.one("PRAGMA journal_mode")[0]
                    tables = {r[0] for r in s.all("SELECT name FROM sqlite_master WHERE type = 'table'")}
                else:
                    s.execute("SELECT pg_advisory_xact_lock(?)", (_PG_SCHEMA_LOCK,))
                    tables = {r[0] for r in s.all("SELECT table_name FROM information_schema.tables "
                                                  "WHERE table_schema = current_schema()")}
                version = self._stored_version(s, tables)
                if version is None:
                    for statement in _DDL[self.dialect]:
                        s.execute(statement)
                    s.execute("INSERT INTO schema_version (component, version, updated_utc) VALUES (?, ?, ?)",
                              (SCHEMA_COMPONENT, SCHEMA_VERSION, _now()))
                else:
                    self._migrate(s, version)
            if self.dialect == "sqlite" and journal != "wal":
                # Write-ahead logging: readers (the app's meter) never wait for a writer.
                conn = self._connect()
                try:
                    with contextlib.suppress(sqlite3.OperationalError):
                        conn.execute("PRAGMA journal_mode=WAL")
                finally:
                    conn.close()
            self._ready = True

    def _stored_version(self, s: _Session, tables: set) -> int | None:
        if "schema_version" not in tables:
            ours = {"fdp_budgets", "fdp_entries"} & tables
            if ours:
                raise LedgerError(f"ledger {self.location} has fdp tables but no schema_version table: unknown "
                                  "schema, refusing to use it")
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
            for statement in MIGRATIONS[version]:
                s.execute(statement)
            version += 1
            s.execute("UPDATE schema_version SET version = ?, updated_utc = ? WHERE component = ?",
                      (version, _now(), SCHEMA_COMPONENT))

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

    def _snapshot(self, budget: dict, entries: list[dict]) -> PersistentLedger:
        split = None if budget["split"] is None else json.loads(budget["split"])
        return PersistentLedger(float(budget["epsilon_total"]), float(budget["delta_total"]), split, budget["filter"],
                                [LedgerEntry.from_dict(json.loads(e["entry"])) for e in entries],
                                budget_name=budget["name"], location=self.location,
                                created_utc=budget["created_utc"])

    def ledger(self, fingerprint: str, name: str = DEFAULT_BUDGET) -> PersistentLedger | None:
        """The budget and its entries as a Ledger, or None when no such budget exists."""
        with self._transaction(write=False) as s:
            budget = self._budget_row(s, fingerprint, check_name(name))
            if budget is None:
                return None
            return self._snapshot(budget, self._entry_rows(s, budget["id"]))

    def budget_names(self, fingerprint: str) -> list[str]:
        with self._transaction(write=False) as s:
            return [r[0] for r in s.all("SELECT name FROM fdp_budgets WHERE fingerprint = ? ORDER BY id",
                                        (fingerprint,))]

    def other_units(self, fingerprint: str, content: str) -> list[str]:
        """Unit settings of budgets on the same curves under another unit of privacy."""
        with self._transaction(write=False) as s:
            rows = s.all("SELECT DISTINCT unit FROM fdp_budgets WHERE content = ? AND fingerprint <> ?",
                         (content, fingerprint))
        return sorted(r[0] for r in rows)

    def show(self, fingerprint: str, name: str = DEFAULT_BUDGET) -> dict:
        """JSON-ready {"budget", "spent", "remaining", "entries"} (what ``ledger show`` prints)."""
        name = check_name(name)
        with self._transaction(write=False) as s:
            budget = self._budget_row(s, fingerprint, name)
            if budget is None:
                raise LedgerError(f"no budget '{name}' for this data set in the ledger {self.location}; create it "
                                  "with: python -m fdp_core ledger init --data PATH --epsilon E --delta D")
            rows = self._entry_rows(s, budget["id"])
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
        }

    # -- writing -------------------------------------------------------------------
    def create_budget(self, fingerprint: str, spec: BudgetSpec, *, name: str = DEFAULT_BUDGET, content: str = "",
                      unit: str = "{}", data_label: str = "", created_by: str = "library",
                      exist_ok: bool = False) -> tuple[PersistentLedger, bool]:
        """Create a budget once; returns (the stored budget, whether this call created it).

        An existing budget is never changed: with ``exist_ok`` it is returned as stored
        (whatever ``spec`` says), otherwise LedgerError.
        """
        name = check_name(name)
        spec.ledger()  # validation before anything is written
        if spec.filter not in FILTERS:  # pragma: no cover - Ledger() already refuses it
            raise ParameterError(f"filter must be one of {FILTERS}")
        split = None if spec.split is None else json.dumps({k: float(v) for k, v in spec.split.items()},
                                                           sort_keys=True)
        with self._transaction(write=True) as s:
            inserted = s.one("INSERT INTO fdp_budgets (fingerprint, name, content, unit, epsilon_total, delta_total, "
                             "filter, split, data_label, created_by, created_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                             "ON CONFLICT (fingerprint, name) DO NOTHING RETURNING id",
                             (fingerprint, name, content or fingerprint, unit, float(spec.epsilon_total),
                              float(spec.delta_total), spec.filter, split, str(data_label), created_by, _now()))
            budget = self._budget_row(s, fingerprint, name)
            entries = self._entry_rows(s, budget["id"])
        was_created = inserted is not None
        if not was_created and not exist_ok:
            stored = self._snapshot(budget, entries)
            raise LedgerError(f"a budget '{name}' already exists for this data set (epsilon {stored.epsilon_total:g}, "
                              f"delta {stored.delta_total:g}, {stored.filter} filter, created "
                              f"{budget['created_utc']}); a budget is created once and never changed: choose "
                              "another --name for a new one")
        return self._snapshot(budget, entries), was_created

    def reserve(self, fingerprint: str, entry: LedgerEntry, *, name: str = DEFAULT_BUDGET, source: str = "library",
                data_label: str = "") -> PersistentLedger:
        """Check-and-charge in one locked transaction; returns the ledger including ``entry``.

        Raises BudgetError (nothing recorded) when the entry does not fit, LedgerError when
        the budget does not exist.
        """
        name = check_name(name)
        if source not in SOURCES:
            raise ParameterError(f"source must be one of {SOURCES}, got {source!r}")
        with self._transaction(write=True) as s:
            budget = self._budget_row(s, fingerprint, name, lock=True)
            if budget is None:
                raise LedgerError(f"no budget '{name}' for this data set in the ledger {self.location}")
            ledger = self._snapshot(budget, self._entry_rows(s, budget["id"]))
            ledger.commit(entry)  # Ledger.check's arithmetic; raises BudgetError when it does not fit
            s.execute("INSERT INTO fdp_entries (budget_id, entry_id, status, kind, mechanism, curve, epsilon, delta, "
                      "rho, mu, label, entry, source, data_label, reserved_utc) "
                      "VALUES (?, ?, 'reserved', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (budget["id"], entry.id, entry.kind, entry.mechanism, entry.curve, entry.epsilon, entry.delta,
                       entry.rho, entry.mu, entry.label, json.dumps(entry.to_dict(), sort_keys=True), source,
                       str(data_label), _now()))
        return ledger

    def complete(self, entry_id: str) -> None:
        """Mark a reserved entry complete (its release has been written)."""
        with self._transaction(write=True) as s:
            cur = s.execute("UPDATE fdp_entries SET status = 'complete', completed_utc = ? "
                            "WHERE entry_id = ? AND status = 'reserved'", (_now(), str(entry_id)))
            if cur.rowcount != 1:
                raise LedgerError(f"no reserved ledger entry {entry_id!r} to complete")


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
    """One budget of one data set in a store: what a commit charges (see export.commit_*)."""

    store: LedgerStore
    fingerprint: str
    name: str = DEFAULT_BUDGET
    source: str = "library"
    data_label: str = ""
    content: str = ""
    unit: str = "{}"
    _created: bool = field(default=False, repr=False)

    def __post_init__(self):
        self.name = check_name(self.name)

    def ledger(self) -> PersistentLedger | None:
        return self.store.ledger(self.fingerprint, self.name)

    def ensure(self, spec: BudgetSpec) -> tuple[PersistentLedger, bool]:
        """The stored budget, created from ``spec`` if it does not exist yet (never changed)."""
        return self.store.create_budget(self.fingerprint, spec, name=self.name, content=self.content, unit=self.unit,
                                        data_label=self.data_label, created_by=self.source, exist_ok=True)

    def reserve(self, entry: LedgerEntry) -> PersistentLedger:
        return self.store.reserve(self.fingerprint, entry, name=self.name, source=self.source,
                                  data_label=self.data_label)

    def complete(self, entry_id: str) -> None:
        self.store.complete(entry_id)


def open_budget(url: str | None, fd, *, unit: Mapping | None = None, name: str = DEFAULT_BUDGET,
                source: str = "library", data_label: str = "") -> StoredBudget:
    """The budget ``name`` of the data set ``fd`` (with its unit settings) in the ledger at ``url``."""
    from .fingerprint import canonical_unit, fingerprint

    return StoredBudget(LedgerStore(url), fingerprint(fd, unit), name, source, data_label,
                        content=fingerprint(fd, None), unit=canonical_unit(unit))


__all__ = ["BudgetError", "BudgetSpec", "DEFAULT_BUDGET", "ENV_VAR", "LedgerStore", "PersistentLedger",
           "StoredBudget", "default_path", "open_budget", "resolve_url"]
