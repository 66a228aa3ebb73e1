"""Shared fixtures. Real data lives in ../shared/data (never copied into the project)."""

import os

# Tests run with one BLAS thread, like the app and the CLI (set before numpy loads).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

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
