"""Density page benchmarks (DESIGN.md performance budget).

    python benchmarks/bench_density_page.py

Page reruns after an epsilon change, timed with streamlit's AppTest (the page script end to
end: sidebar, feature extraction from the curves, the release plan, the draws, the figure
serialisation). Data: 10,000 synthetic curves (m = 200); the observations are per-curve
features (1-d: X(0.5); 2-d: (X(0.25), X(0.75))).

- 1-d, n = 10,000, 512-point grid: target < 150 ms median (Hall, ICLP, both)
- 2-d, n = 10,000, 64 x 64 grid: target < 400 ms median (Hall, ICLP, both)

Every timed rerun uses an epsilon not seen before, so the cached release plan misses and the
estimate, sensitivity and noise scale are recomputed; what stays cached is what epsilon does
not touch (eigendecompositions, ICLP Delta_1 per unit n, the Monte Carlo radii per noise
shape). A view-only change (number of draws) and the first visit (every cache cold) are
reported too.
"""

from __future__ import annotations

from _util import ROOT, report, synthetic_curves, timed

from fdp_ui.sidebar import EPSILON_CHOICES

N_CURVES = 10_000
REPEATS, WARMUP = 10, 2
# Distinct epsilon values, none equal to the starting 1.0: with the plan cache cleared before
# each measurement, no timed rerun can hit a cached plan.
EPSILONS = [e for e in EPSILON_CHOICES if e >= 0.1 and e != 1.0][:REPEATS + WARMUP]


def _page(dataset, d: int, mechanism: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["dataset"] = dataset
    at.run()
    at.switch_page("pages/density.py")
    at.run()  # the page first sets itself up for this data set (it empties the box for new curves)
    ss = at.session_state
    ss["density_source"] = "curves"
    ss["density_mechanism"] = mechanism
    if d == 1:
        ss["density_dim"], ss["density_t0_1"], ss["density_grid_1d"] = "1-d", 0.5, 512
        ss["density_lo1"], ss["density_hi1"] = 0.0, 1.2
    else:
        ss["density_dim"], ss["density_grid_2d"] = "2-d", 64
        ss["density_t0_1"], ss["density_t0_2"] = 0.25, 0.75
        for a in (1, 2):
            ss[f"density_lo{a}"], ss[f"density_hi{a}"] = 0.0, 1.2
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("bidi_component")) >= 1  # the live charts (fdp_ui/live_chart.py)
    return at


def epsilon_rerun_ms(dataset, d: int, mechanism: str) -> dict:
    import streamlit as st

    st.cache_resource.clear()  # the page's release plans (the radii cache is st.cache_data: kept)
    at = _page(dataset, d, mechanism)
    values = iter(EPSILONS)

    def change_epsilon():
        at.select_slider(key="g_epsilon").set_value(next(values)).run()

    result = timed(change_epsilon, repeats=REPEATS, warmup=WARMUP)
    assert not at.exception and not at.error
    return result


def draws_rerun_ms(dataset) -> dict:
    at = _page(dataset, 1, "gaussian")
    values = iter([5, 15] * (REPEATS + WARMUP))
    return timed(lambda: at.slider(key="density_draws").set_value(next(values)).run(), repeats=REPEATS,
                 warmup=WARMUP)


def first_visit_ms(dataset) -> dict:
    import streamlit as st

    from fdp_core import sensitivity
    from fdp_core.kernels import _eigenbasis_cached
    from fdp_core.mechanisms import hall_kde, iclp_kde

    def cold():
        st.cache_data.clear()
        st.cache_resource.clear()
        for cache in (hall_kde._rbf_gram_eigh_cached, iclp_kde._iclp_axis_cached,
                      sensitivity._iclp_unit_sensitivity_cached, _eigenbasis_cached):
            cache.cache_clear()
        _page(dataset, 1, "both")

    return timed(cold, repeats=3, warmup=0)


def main() -> None:
    from fdp_ui.state import Dataset

    dataset = Dataset(synthetic_curves(N_CURVES, 200), "synthetic n=10,000", "upload")
    rows = []
    for mechanism in ("gaussian", "iclp", "both"):
        rows.append({"name": f"1-d rerun after epsilon change, {mechanism}, n=10k, G=512", "target_ms": 150,
                     **epsilon_rerun_ms(dataset, 1, mechanism)})
    for mechanism in ("gaussian", "iclp", "both"):
        rows.append({"name": f"2-d rerun after epsilon change, {mechanism}, n=10k, 64x64", "target_ms": 400,
                     **epsilon_rerun_ms(dataset, 2, mechanism)})
    rows.append({"name": "1-d rerun after a draw-count change (cached plan), Hall", "target_ms": 150,
                 **draws_rerun_ms(dataset)})
    rows.append({"name": "1-d first visit, both mechanisms, every cache cold", "target_ms": 3000,
                 **first_visit_ms(dataset)})
    report("density page", rows)


if __name__ == "__main__":
    main()
