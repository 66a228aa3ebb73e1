"""Small eigendecompositions run on one BLAS thread whatever the host process set up (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from fdp_core import kernels  # noqa: E402
from fdp_core.mechanisms import hall_kde  # noqa: E402


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


@pytest.mark.parametrize("call", ["eigenbasis", "rbf"])
def test_small_eigh_runs_single_threaded(monkeypatch, call):
    seen = []
    real = np.linalg.eigh

    def spy(a, *args, **kwargs):
        seen.append(_blas_threads())
        return real(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "eigh", spy)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if call == "eigenbasis":
            kernels._eigenbasis_cached.cache_clear()
            kernels.eigenbasis("matern52", 0.137, np.linspace(0, 1, 93))
        else:
            hall_kde._rbf_gram_eigh_cached.cache_clear()
            hall_kde.rbf_gram_eigh(np.linspace(0, 1, 97), 0.0731)
        assert seen and all(t == [1] * len(t) for t in seen), seen
        assert all(t == 2 for t in _blas_threads())  # restored afterwards
