"""The optional PLD total (dp-accounting) and its use as an oracle for the ledger's conversions."""

from __future__ import annotations

import math

import pytest

from fdp_core.budget.accounting import (Ledger, cks_epsilon, compose, exponential_entry, gaussian_entry, gdp_epsilon,
                                 pld_composition, pure_entry)
from fdp_core.mechanisms.calibration import analytic_sigma

pytest.importorskip("dp_accounting")


def _gaussian(eps, delta, sens=1.0):
    return gaussian_entry("mean", "gaussian", sensitivity=sens, sigma=analytic_sigma(sens, eps, delta),
                          epsilon=eps, delta=delta)


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
def test_single_gaussian_matches_the_exact_gdp_conversion(mu):
    entry = gaussian_entry("mean", "gaussian", sensitivity=mu, sigma=1.0, epsilon=50.0, delta=1e-9)
    for delta in (1e-6, 1e-3, 0.05):
        exact = gdp_epsilon(mu, delta)
        pld = pld_composition([entry], delta).epsilon
        assert pld >= exact - 2e-3  # pessimistic discretisation: never below the exact value
        assert pld == pytest.approx(exact, rel=5e-3, abs=2e-3)


def test_gaussian_composition_oracle_for_gdp_and_zcdp():
    entries = [_gaussian(e, 1e-6) for e in (0.3, 0.5, 0.8, 1.0)]
    report = compose(entries, 1e-5, pld=True)
    totals = {t.method: t.epsilon for t in report.totals}
    # Gaussian-only: GDP composition is exact, PLD reproduces it; zCDP (CKS) is an upper bound.
    assert totals["pld"] == pytest.approx(totals["gdp+basic"], rel=5e-3)
    assert totals["zcdp"] >= totals["pld"] - 2e-3
    mu = math.sqrt(sum(e.mu**2 for e in entries))
    assert cks_epsilon(mu**2 / 2, 1e-5) == pytest.approx(totals["zcdp"], rel=1e-9)


def test_pure_releases_never_exceed_basic_composition():
    entries = [pure_entry("kde", "iclp", epsilon=e) for e in (0.1, 0.2, 0.3, 0.4)] + \
              [exponential_entry("pca", "exact", epsilon=0.5)]
    total = pld_composition(entries, 1e-5)
    assert total.epsilon <= sum(e.epsilon for e in entries) + 1e-9
    assert total.epsilon < 1.5  # advanced-composition-like savings with delta > 0


def test_mixed_ledger_pld_is_tighter_and_becomes_the_best_total():
    ledger = Ledger(10.0, 1e-4)
    for eps in (0.5, 0.5, 1.0):
        ledger.commit(_gaussian(eps, 1e-6))
    for eps in (0.3, 0.3, 0.5):
        ledger.commit(pure_entry("covariance", "iclp", epsilon=eps))
    plain = ledger.composition()
    with_pld = ledger.composition(pld=True)
    pld = next(t for t in with_pld.totals if t.method == "pld")
    assert pld.epsilon < plain.best.epsilon
    assert with_pld.best.method == "pld"
    assert "pld" not in {t.method for t in plain.totals}  # optional: off by default
    saving = 1 - pld.epsilon / plain.best.epsilon
    assert 0.02 < saving < 0.5
