"""Shared fixtures. Real data lives in ../shared/data (never copied into the project)."""

import os

# Tests run with one BLAS thread, like the app and the CLI (set before numpy loads).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import contextlib  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import uuid  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """Folder of the real data sets; skips the test cleanly when ../shared is absent."""
    if not (SHARED_DATA / "dti_cca.csv").exists():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _private_ledger(tmp_path, monkeypatch):
    """Every test gets its own ledger file: nothing a test commits reaches a user's real ledger
    (~/.local/share/fdp) or another test's budget. Tests that need another URL set their own."""
    monkeypatch.setenv("FDP_LEDGER_URL", f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    # The sketch key (METHODS.md 24): one fixed test key, never the user's key file.
    monkeypatch.setenv("FDP_SKETCH_KEY", "5eed" * 16)


# --------------------------------------------------------------------------- PostgreSQL for the ledger tests

def _postgres_bin() -> Path | None:
    for initdb in sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True):
        return initdb.parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server():
    """Admin URL of a PostgreSQL server: $FDP_TEST_POSTGRES_URL (set by .ci/run), else a
    throw-away cluster started here from Debian's server binaries (initdb, pg_ctl; as the
    postgres user when running as root, since initdb refuses root). Skips, with the reason,
    only where neither exists."""
    url = os.environ.get("FDP_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (no initdb; .ci/run installs Debian's postgresql)")
    root = Path(tempfile.mkdtemp(prefix="fdp_pg_"))
    prefix = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    data, log = root / "data", root / "server.log"

    def run(*cmd):
        subprocess.run(prefix + [str(bindir / cmd[0]), *cmd[1:]], check=True, capture_output=True, timeout=120)

    try:
        run("initdb", "-D", str(data), "-A", "trust", "-U", "fdp", "-E", "UTF8", "--locale=C", "--no-sync")
        run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "60", "start", "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60")
    except (subprocess.CalledProcessError, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        detail = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"could not start a PostgreSQL cluster: {exc} {detail.decode(errors='replace')[-300:]}")
    try:
        yield f"postgresql://fdp@127.0.0.1:{port}/postgres"
    finally:
        with contextlib.suppress(Exception):
            run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """URL of a fresh, empty database on the test server (dropped after the test)."""
    psycopg = pytest.importorskip("psycopg")
    from psycopg.conninfo import conninfo_to_dict

    name = f"fdp_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    info = conninfo_to_dict(postgres_server)
    user = info.get("user", "")
    password = f":{info['password']}" if info.get("password") else ""
    host = info.get("host", "127.0.0.1")
    port = f":{info['port']}" if info.get("port") else ""
    yield f"postgresql://{user}{password}@{host}{port}/{name}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --------------------------------------------------------------------------- Hypothesis profiles

from hypothesis import HealthCheck, settings  # noqa: E402

# "ci" (default): few examples per property, so every property runs in seconds in .ci/run.
# "long": a local search for the next hostile input (HYPOTHESIS_PROFILE=long pytest ...).
# Deadlines are per example; properties with heavier examples (a CLI release, an app run)
# set their own. Failures found are kept as @example cases in the tests themselves.
settings.register_profile("ci", max_examples=8, deadline=5000, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("long", max_examples=400, deadline=20000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
