"""Budget ledger and composition (METHODS.md 8), checked against independent computations."""

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from fdp_core.budget.accounting import (
    Ledger, LedgerEntry, approximate_entry, basic_composition, cks_delta, cks_epsilon, compose,
    discrete_gaussian_entry, exponential_entry, gaussian_entry, gdp_composition, gdp_delta, gdp_epsilon,
    pure_entry, zcdp_rho_budget)
from fdp_core.errors import BudgetError, ParameterError
from fdp_core.mechanisms.calibration import analytic_sigma


# ---------------------------------------------------------------- independent references

def gdp_delta_direct(mu, eps):
    """Dong-Roth-Su profile written out with scipy.stats (no log space)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def gdp_epsilon_brentq(mu, delta):
    return optimize.brentq(lambda e: gdp_delta_direct(mu, e) - delta, 0.0, 100.0, xtol=1e-14)


ALPHAS = 1.0 + np.logspace(-6, 7, 200_001)


def cks_log_delta_bruteforce(rho, eps):
    """log of the CKS delta minimised over a dense alpha grid (the formula as printed, not rearranged)."""
    a = ALPHAS
    return float(np.min((a - 1) * (a * rho - eps) - np.log(a - 1) + a * np.log1p(-1 / a)))


def cks_delta_bruteforce(rho, eps):
    return math.exp(cks_log_delta_bruteforce(rho, eps))


def cks_epsilon_bruteforce(rho, delta):
    """eps by root-finding on the brute-force delta (delta(eps) decreases in eps)."""
    return optimize.brentq(lambda e: cks_log_delta_bruteforce(rho, e) - math.log(delta), 0.0, 50.0, xtol=1e-12)


# ---------------------------------------------------------------- conversions

@pytest.mark.parametrize("mu,eps", [(0.5, 0.0), (0.5, 1.0), (1.0, 0.3), (2.0, 2.5), (0.1, 0.05)])
def test_gdp_delta_matches_direct_formula(mu, eps):
    assert gdp_delta(mu, eps) == pytest.approx(gdp_delta_direct(mu, eps), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("mu,delta", [(0.5, 1e-5), (1.0, 1e-6), (3.0, 1e-3), (0.2, 0.05)])
def test_gdp_epsilon_is_the_root_and_safe(mu, delta):
    eps = gdp_epsilon(mu, delta)
    assert eps == pytest.approx(gdp_epsilon_brentq(mu, delta), rel=1e-9)
    assert gdp_delta_direct(mu, eps) <= delta * (1 + 1e-9)
    assert gdp_delta_direct(mu, eps * (1 - 1e-6)) > delta


def test_gdp_epsilon_is_zero_when_delta_is_loose():
    # delta(0) = 2 Phi(mu/2) - 1: any larger delta needs no epsilon at all.
    mu = 0.1
    assert gdp_epsilon(mu, 2 * stats.norm.cdf(mu / 2) - 1 + 1e-6) == 0.0


@pytest.mark.parametrize("rho,delta", [(0.125, 1e-6), (0.01, 1e-5), (1.0, 1e-9), (0.0005, 1e-3), (5.0, 1e-5)])
def test_cks_epsilon_against_bruteforce_alpha_grid(rho, delta):
    eps = cks_epsilon(rho, delta)
    assert eps == pytest.approx(cks_epsilon_bruteforce(rho, delta), rel=1e-6)
    # The returned epsilon really achieves the target delta under the printed formula.
    assert cks_delta_bruteforce(rho, eps) <= delta * (1 + 1e-5)
    assert cks_delta(rho, eps) == pytest.approx(delta, rel=1e-6)
    # Tighter than Bun-Steinke's rho + 2 sqrt(rho log(1/delta)), never tighter than rho.
    assert rho < eps < rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_cks_epsilon_matches_opendp_conversion():
    """OpenDP's make_zCDP_to_approxDP implements the same CKS bound, independently (Rust)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3)
    for scale, delta in [(2.0, 1e-6), (0.7, 1e-5), (10.0, 1e-8)]:
        meas = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale, k=-52))
        rho = 0.5 / scale**2
        assert cks_epsilon(rho, delta) == pytest.approx(meas.map(1.0).epsilon(delta), rel=1e-6)


def test_zcdp_rho_budget_is_the_largest_that_fits():
    for eps, delta in [(1.0, 1e-5), (0.3, 1e-7), (5.0, 1e-3)]:
        rho = zcdp_rho_budget(eps, delta)
        assert cks_epsilon(rho, delta) <= eps
        assert cks_epsilon(rho * (1 + 1e-6), delta) > eps


# ---------------------------------------------------------------- native parameters of entries

def test_native_parameters_by_curve():
    g = gaussian_entry("mean", "gp", sensitivity=0.2, sigma=0.8, epsilon=5.0, delta=0.1)
    assert g.mu == pytest.approx(0.25) and g.rho == pytest.approx(0.25**2 / 2)
    p = pure_entry("mean", "iclp_qr", epsilon=0.6)
    assert (p.delta, p.rho) == (0.0, pytest.approx(0.18))
    x = exponential_entry("pca", "bingham_exact", epsilon=0.6)
    assert x.rho == pytest.approx(0.045)  # 0.36 / 8
    a = approximate_entry("pca", "bingham_gibbs", epsilon=0.6)
    assert a.approximate and not p.approximate
    d = discrete_gaussian_entry("mean", "gp_discrete", rho=0.125, delta=1e-6)
    assert d.epsilon == pytest.approx(cks_epsilon_bruteforce(0.125, 1e-6), rel=1e-6)


def test_gaussian_entry_cannot_be_booked_cheaper_than_its_noise():
    sens, eps, delta = 0.3, 1.0, 1e-5
    sigma = analytic_sigma(sens, eps, delta)
    gaussian_entry("mean", "gp", sensitivity=sens, sigma=sigma, epsilon=eps, delta=delta)
    with pytest.raises(ParameterError, match="too small"):
        gaussian_entry("mean", "gp", sensitivity=sens, sigma=0.99 * sigma, epsilon=eps, delta=delta)


def test_inconsistent_entries_are_rejected():
    with pytest.raises(ParameterError, match="rho"):
        LedgerEntry(kind="mean", mechanism="frl", curve="pure", epsilon=1.0, delta=0.0, rho=0.1)
    with pytest.raises(ParameterError, match="delta = 0"):
        LedgerEntry(kind="mean", mechanism="frl", curve="pure", epsilon=1.0, delta=1e-5, rho=0.5)
    with pytest.raises(ParameterError, match="kind"):
        pure_entry("median", "frl", epsilon=1.0)
    with pytest.raises(ParameterError, match="CKS"):  # a zCDP entry claiming a smaller epsilon than rho gives
        LedgerEntry(kind="mean", mechanism="dg", curve="zcdp", epsilon=1.0, delta=1e-6, rho=0.125)
    with pytest.raises(ParameterError):
        pure_entry("mean", "frl", epsilon=float("nan"))


# ---------------------------------------------------------------- composition

def test_basic_composition_sums():
    entries = [pure_entry("mean", "frl", epsilon=0.25), pure_entry("kde", "iclp_kde", epsilon=0.5),
               gaussian_entry("mean", "gp", sensitivity=1.0, sigma=analytic_sigma(1.0, 0.4, 1e-6),
                              epsilon=0.4, delta=1e-6)]
    eps, delta = basic_composition(entries)
    assert eps == pytest.approx(1.15) and delta == pytest.approx(1e-6)


def test_gdp_composition_sqrt_sum_and_basic_rest():
    # mu = 0.3 and 0.4 compose to exactly 0.5; the pure release adds 0.2 by basic composition.
    gs = [gaussian_entry("mean", "gp", sensitivity=mu, sigma=1.0, epsilon=10.0, delta=1e-6) for mu in (0.3, 0.4)]
    rest = [pure_entry("kde", "iclp_kde", epsilon=0.2)]
    total = gdp_composition(gs + rest, 1e-5)
    assert total.epsilon == pytest.approx(gdp_epsilon_brentq(0.5, 1e-5) + 0.2, rel=1e-9)
    assert total.delta == 1e-5
    # A discrete-Gaussian (zCDP) entry is not Gaussian DP: its delta comes off the Gaussian part's.
    dg = discrete_gaussian_entry("mean", "dg", rho=0.01, delta=4e-6)
    total = gdp_composition(gs + [dg], 1e-5)
    assert total.epsilon == pytest.approx(gdp_epsilon_brentq(0.5, 6e-6) + dg.epsilon, rel=1e-9)
    assert gdp_composition(rest, 1e-5) is None


def test_compose_reports_each_total_and_the_minimum():
    # 20 small Gaussian releases: GDP wins by far over basic.
    sigma = analytic_sigma(1.0, 0.2, 1e-7)
    gs = [gaussian_entry("mean", "gp", sensitivity=1.0, sigma=sigma, epsilon=0.2, delta=1e-7) for _ in range(20)]
    rep = compose(gs, 1e-5)
    by = {t.method: t for t in rep.totals}
    assert by["basic"].epsilon == pytest.approx(4.0) and by["basic"].delta == pytest.approx(2e-6)
    assert by["gdp+basic"].epsilon == pytest.approx(gdp_epsilon_brentq(math.sqrt(20) / sigma, 1e-5), rel=1e-9)
    assert by["zcdp"].epsilon == pytest.approx(cks_epsilon_bruteforce(20 / sigma**2 / 2, 1e-5), rel=1e-6)
    assert rep.best.method == "gdp+basic"
    assert rep.best.epsilon == min(t.epsilon for t in rep.totals)
    assert rep.gaussian_only and rep.mu_gaussian == pytest.approx(math.sqrt(20) / sigma)

    # 200 tiny Laplace releases: zCDP beats basic (sum 2.0); GDP does not apply.
    ps = [pure_entry("mean", "frl", epsilon=0.01) for _ in range(200)]
    rep = compose(ps, 1e-6)
    assert {t.method for t in rep.totals} == {"basic", "zcdp"}
    assert rep.best.method == "zcdp"
    assert rep.best.epsilon == pytest.approx(cks_epsilon_bruteforce(200 * 0.01**2 / 2, 1e-6), rel=1e-6)
    assert rep.best.epsilon < 2.0

    # One release: basic is exact and wins.
    assert compose([pure_entry("mean", "frl", epsilon=1.0)], 1e-6).best.method == "basic"
    # Pure budget (target delta 0): only basic is valid.
    rep = compose(ps, 0.0)
    assert [t.method for t in rep.totals] == ["basic"] and rep.best.epsilon == pytest.approx(2.0)


def test_totals_whose_deltas_exceed_the_target_are_not_valid():
    # Two releases cheap in epsilon but generous in delta: basic has the smallest epsilon, at the
    # wrong delta.
    gs = [gaussian_entry("mean", "gp", sensitivity=1.0, sigma=analytic_sigma(1.0, 0.1, 1e-3),
                         epsilon=0.1, delta=1e-3) for _ in range(2)]
    rep = compose(gs, 1e-5)
    by = {t.method: t for t in rep.totals}
    assert by["basic"].delta == pytest.approx(2e-3)  # listed, but not a guarantee at delta 1e-5
    assert by["basic"].epsilon < rep.best.epsilon and rep.best.method != "basic"
    # At target delta 0 nothing covers a Gaussian release.
    assert compose(gs, 0.0).best is None


def test_approximate_entries_are_excluded_and_reported_separately():
    exact = [pure_entry("pca", "bingham_exact", epsilon=0.5), pure_entry("mean", "frl", epsilon=0.5)]
    gibbs = approximate_entry("pca", "bingham_gibbs", epsilon=2.0)
    with_gibbs, without = compose(exact + [gibbs], 1e-5), compose(exact, 1e-5)
    assert with_gibbs.totals == without.totals
    assert with_gibbs.n_approximate == 1 and with_gibbs.approximate_nominal.epsilon == 2.0
    assert any("Approximate" in note for note in with_gibbs.notes)
    assert any("fixed before any output" in note for note in with_gibbs.notes)


# ---------------------------------------------------------------- the ledger (filter)

def test_over_budget_release_is_refused_and_records_nothing():
    ledger = Ledger(1.0, 1e-5)
    ledger.commit(pure_entry("mean", "frl", epsilon=0.6))
    candidate = pure_entry("mean", "iclp_qr", epsilon=0.5)
    with pytest.raises(BudgetError) as err:
        ledger.check(candidate)
    assert "epsilon 0.5" in str(err.value) and "epsilon 0.4" in str(err.value)
    assert "nothing recorded" in str(err.value)
    with pytest.raises(BudgetError):
        ledger.commit(candidate)
    assert len(ledger.entries) == 1 and ledger.spent().epsilon == pytest.approx(0.6)
    ledger.commit(pure_entry("mean", "iclp_qr", epsilon=0.4))  # exactly what remains still fits
    assert ledger.remaining().epsilon == pytest.approx(0.0, abs=1e-12)


def test_floating_point_sums_fill_the_budget_exactly():
    ledger = Ledger(0.3, 0.0)
    for eps in (0.1, 0.2):  # 0.1 + 0.2 = 0.30000000000000004 in floating point
        ledger.commit(pure_entry("mean", "frl", epsilon=eps))
    with pytest.raises(BudgetError):
        ledger.commit(pure_entry("mean", "frl", epsilon=1e-6))


def test_delta_is_filtered_too():
    ledger = Ledger(10.0, 1e-6)
    sigma = analytic_sigma(1.0, 1.0, 1e-5)
    entry = gaussian_entry("mean", "gp", sensitivity=1.0, sigma=sigma, epsilon=1.0, delta=1e-5)
    with pytest.raises(BudgetError, match="delta"):
        ledger.commit(entry)
    assert ledger.entries == []
    with pytest.raises(BudgetError):  # a pure-DP budget admits no Gaussian release
        Ledger(10.0, 0.0).commit(entry)


def test_split_shares_are_enforced():
    ledger = Ledger(1.0, 1e-5, split={"mean": 3, "pca": 1})
    assert ledger.share("mean").epsilon == pytest.approx(0.75) and ledger.share("kde").epsilon == 0
    ledger.commit(pure_entry("mean", "frl", epsilon=0.7))
    with pytest.raises(BudgetError, match="'mean' share"):  # total still has 0.3 left
        ledger.commit(pure_entry("mean", "frl", epsilon=0.1))
    with pytest.raises(BudgetError, match="'kde' share"):
        ledger.commit(pure_entry("kde", "iclp_kde", epsilon=0.01))
    ledger.commit(exponential_entry("pca", "bingham_exact", epsilon=0.25))
    assert len(ledger.entries) == 2
    assert ledger.remaining("mean").epsilon == pytest.approx(0.05)
    assert ledger.remaining("pca").epsilon == pytest.approx(0.0, abs=1e-12)
    usage = ledger.usage()
    assert usage["total"] == pytest.approx(0.95) and usage["mean"] == pytest.approx(0.7 / 0.75)
    assert usage["kde"] == 1.0


def test_split_change_cannot_strand_spending():
    ledger = Ledger(1.0, 1e-5, split={"mean": 1, "pca": 1})
    ledger.commit(pure_entry("mean", "frl", epsilon=0.4))
    with pytest.raises(BudgetError, match="already"):
        ledger.set_split({"mean": 1, "pca": 3})  # mean share would be 0.25 < 0.4 spent
    ledger.set_split({"mean": 2, "pca": 1})
    assert ledger.split["mean"] == pytest.approx(2 / 3)
    with pytest.raises(ParameterError):
        ledger.set_split({"mean": -1})


def test_zcdp_filter_compares_rho_with_the_equivalent_budget():
    ledger = Ledger(1.0, 1e-5, filter="zcdp")
    rho_total = ledger.rho_total
    assert rho_total == pytest.approx(zcdp_rho_budget(1.0, 1e-5))
    # Gaussian releases with rho = rho_total / 4 each: four fit, the fifth is refused.
    mu = math.sqrt(2 * rho_total / 4) * (1 - 1e-9)
    def g():
        return gaussian_entry("mean", "gp", sensitivity=mu, sigma=1.0, epsilon=20.0, delta=1e-9)
    for _ in range(4):
        ledger.commit(g())
    with pytest.raises(BudgetError, match="rho"):
        ledger.commit(g())
    assert len(ledger.entries) == 4
    # The basic filter charges the same entries by their (epsilon, delta) claim instead.
    with pytest.raises(BudgetError):
        Ledger(1.0, 1e-5).commit(g())
    with pytest.raises(ParameterError, match="delta_total > 0"):
        Ledger(1.0, 0.0, filter="zcdp")


def test_the_same_entry_is_not_committed_twice():
    ledger = Ledger(5.0, 1e-5)
    entry = pure_entry("mean", "frl", epsilon=0.1)
    ledger.commit(entry)
    with pytest.raises(BudgetError, match="once"):
        ledger.commit(entry)


def test_json_round_trip():
    ledger = Ledger(2.0, 1e-5, split={"mean": 2, "kde": 1, "pca": 1})
    ledger.commit(gaussian_entry("mean", "gp", sensitivity=0.1, sigma=analytic_sigma(0.1, 0.5, 1e-6),
                                 epsilon=0.5, delta=1e-6, sensitivity_norm="cameron-martin",
                                 noise={"lambda": np.array([0.5, 0.25])}, label="GP mean"))
    ledger.commit(pure_entry("kde", "iclp_kde", epsilon=0.3, sensitivity=0.02, noise={"scales": [0.1, 0.2]}))
    ledger.commit(approximate_entry("pca", "bingham_gibbs", epsilon=0.2, noise={"sweeps": 20000}))
    ledger.commit(discrete_gaussian_entry("mean", "dg", rho=0.001, delta=1e-6))
    text = json.dumps(ledger.to_dict())
    back = Ledger.from_dict(json.loads(text))
    assert back.to_dict() == ledger.to_dict()
    assert back.entries == ledger.entries
    assert back.composition() == ledger.composition()
    assert back.remaining("mean") == ledger.remaining("mean")


def test_from_dict_revalidates():
    ledger = Ledger(1.0, 1e-5)
    ledger.commit(gaussian_entry("mean", "gp", sensitivity=1.0, sigma=analytic_sigma(1.0, 0.5, 1e-6),
                                 epsilon=0.5, delta=1e-6))
    data = json.loads(json.dumps(ledger.to_dict()))
    tampered = json.loads(json.dumps(data))
    tampered["entries"][0]["epsilon"] = 0.1  # cheaper than its sigma allows
    with pytest.raises(ParameterError):
        Ledger.from_dict(tampered)
    shrunk = json.loads(json.dumps(data))
    shrunk["epsilon_total"] = 0.4
    with pytest.raises(BudgetError):
        Ledger.from_dict(shrunk)
    with pytest.raises(ParameterError, match="schema"):
        Ledger.from_dict({**data, "schema": "other/9"})
    with pytest.raises(ParameterError, match="unknown"):
        LedgerEntry.from_dict({**data["entries"][0], "seed": 3})


def test_a_person_level_ledger_json_reads_back_and_other_relations_are_refused():
    """Issue 38: ledger.json of a person-level release says "replace one person"; both wordings of the one
    relation read back, any other relation is refused."""
    from fdp_core.budget.accounting import NEIGHBOURING, PERSON_NEIGHBOURING, Ledger as _Ledger
    from fdp_core.errors import ParameterError as _ParameterError

    ledger = _Ledger(2.0, 1e-5)
    data = ledger.to_dict(PERSON_NEIGHBOURING)
    assert data["neighbouring"].startswith("replace one person") and ledger.to_dict()["neighbouring"] == NEIGHBOURING
    assert _Ledger.from_dict(data).epsilon_total == 2.0
    with pytest.raises(_ParameterError):
        _Ledger.from_dict({**data, "neighbouring": "add or remove one curve"})
    with pytest.raises(_ParameterError):
        ledger.to_dict("add or remove one curve")
