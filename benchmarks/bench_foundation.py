"""Foundation benchmarks (DESIGN.md performance budget).

    python benchmarks/bench_foundation.py

- Mean page rerun after a slider change, DTI-size data (n = 382, m = 93): target < 150 ms median
- Mean page rerun after a slider change, n = 10,000, m = 500: target < 500 ms median
- Eigenbasis at m = 500 (uncached): target < 500 ms
- 100 sanitized draws at m = 500 after caching: target < 30 ms

Page reruns are timed with streamlit's AppTest (the page script end to end, including the
sidebar and the plotly figure serialisation; the test harness adds a few ms).
"""

from __future__ import annotations

from _util import ROOT, SHARED_DATA, report, synthetic_curves, timed  # first: sets BLAS threads

import numpy as np

from fdp_core.data.loading import load_curves
from fdp_core.kernels import _eigenbasis_cached, eigenbasis
from fdp_core.releases.mean import MeanSettings, plan_mean_release


def page_rerun_ms(dataset, repeats: int = 15) -> dict:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["dataset"] = dataset
    at.run()
    at.switch_page("pages/mean.py")
    at.run()
    assert not at.exception, at.exception
    values = iter([0.5, 1.0] * (repeats + 2))

    def change_slider():
        at.select_slider(key="g_epsilon").set_value(next(values)).run()

    return timed(change_slider, repeats=repeats, warmup=2)


def main() -> None:
    from fdp_ui.state import Dataset

    rows = []
    dti = SHARED_DATA / "dti_cca.csv"
    fd_small = load_curves(dti) if dti.exists() else synthetic_curves(382, 93)
    label = "DTI cca (n=376, m=93)" if dti.exists() else "synthetic DTI-size (n=382, m=93)"
    rows.append({"name": f"mean page rerun, {label}", "target_ms": 150,
                 **page_rerun_ms(Dataset(fd_small, label, "upload"))})
    fd_big = synthetic_curves(10_000, 500)
    rows.append({"name": "mean page rerun, n=10,000, m=500", "target_ms": 500,
                 **page_rerun_ms(Dataset(fd_big, "synthetic", "upload"), repeats=10)})

    grid = np.linspace(0, 1, 500)

    def fresh_eigenbasis():
        _eigenbasis_cached.cache_clear()
        eigenbasis("matern52", 0.1, grid)

    rows.append({"name": "eigenbasis m=500 (uncached)", "target_ms": 500, **timed(fresh_eigenbasis, repeats=5)})
    plan = plan_mean_release(fd_big, MeanSettings(kernel="matern52", rho=0.1, tau=1.0))
    rng = np.random.default_rng(0)
    rows.append({"name": "100 GP draws m=500 (cached basis)", "target_ms": 30,
                 **timed(lambda: plan.sample(rng, 100), repeats=30)})
    report("foundation", rows)


if __name__ == "__main__":
    main()
