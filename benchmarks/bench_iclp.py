"""Pure epsilon-DP mean benchmarks (DESIGN.md performance budget).

    python benchmarks/bench_iclp.py

- 100 ICLP draws (QR and AR) at m = 500 after the eigenbasis is cached: target < 30 ms
- Mean page in comparison mode (all five mechanisms overlaid), rerun after a slider change,
  DTI-size data (the real DTI file when ../shared/data is present, else synthetic n = 382,
  m = 93): target < 200 ms median. Timed with streamlit's AppTest end to end (sidebar, five
  plans, draws, figure and table serialisation; the harness itself adds a few ms).
- The same page's computation path alone (five plans + draws, no Streamlit): for reference,
  to separate the library's share from Streamlit's.
"""

from __future__ import annotations

from dataclasses import replace

# _util first: it pins one BLAS thread, which only works before numpy is loaded.
from _util import ROOT, SHARED_DATA, report, synthetic_curves, timed  # isort: skip

import numpy as np  # noqa: E402

from fdp_core.data.loading import load_curves  # noqa: E402
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release  # noqa: E402

SETTINGS = MeanSettings(kernel="matern52", rho=0.1, eta=1.5, psi=1e-3, tau=1.0, lo=0.0, hi=1.0)


def compare_page_rerun_ms(dataset, repeats: int = 15) -> dict:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["dataset"] = dataset
    at.run()
    at.switch_page("pages/mean.py")
    at.run()
    at.toggle(key="mean_compare").set_value(True).run()
    assert not at.exception, at.exception
    values = iter([0.5, 1.0] * (repeats + 2))

    def change_slider():
        at.select_slider(key="g_epsilon").set_value(next(values)).run()

    result = timed(change_slider, repeats=repeats, warmup=2)
    assert not at.exception, at.exception
    return result


def compare_computation_ms(fd, repeats: int = 30) -> dict:
    rng = np.random.default_rng(0)

    def run():
        for mechanism in MEAN_MECHANISMS:
            plan_mean_release(fd, replace(SETTINGS, mechanism=mechanism)).sample(rng, 5)

    return timed(run, repeats=repeats, warmup=2)


def main() -> None:
    from fdp_ui.state import Dataset

    rows = []
    fd_big = synthetic_curves(2_000, 500)
    rng = np.random.default_rng(0)
    for mechanism in ("iclp-qr", "iclp-ar"):
        plan = plan_mean_release(fd_big, replace(SETTINGS, mechanism=mechanism))
        rows.append({"name": f"100 {mechanism} draws m=500 (cached basis)", "target_ms": 30,
                     **timed(lambda: plan.sample(rng, 100), repeats=200, warmup=10)})

    dti = SHARED_DATA / "dti_cca.csv"
    fd = load_curves(dti) if dti.exists() else synthetic_curves(382, 93)
    label = f"DTI cca (n={fd.n}, m={fd.m})" if dti.exists() else "synthetic DTI-size (n=382, m=93)"
    rows.append({"name": f"comparison page rerun (AppTest), {label}", "target_ms": 200,
                 **compare_page_rerun_ms(Dataset(fd, label, "upload"))})
    rows.append({"name": f"comparison computation only (5 plans + draws), {label}", "target_ms": 200,
                 **compare_computation_ms(fd)})
    report("iclp", rows)


if __name__ == "__main__":
    main()
