"""Shared fixtures. Real data lives in ../shared/data (never copied into the project)."""

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """Folder of the real data sets; skips the test cleanly when ../shared is absent."""
    if not (SHARED_DATA / "dti_cca.csv").exists():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA
