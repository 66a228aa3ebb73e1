"""The mean-mechanism registry (fdp_core/registry/mean.py): one entry per mechanism, read by the plumbing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fdp_core import registry
from fdp_core.explore.audit import audit_mean_mechanism
from fdp_core.data.loading import from_arrays
from fdp_core.errors import ParameterError
from fdp_core.releases.mean import (GAUSSIAN_MECHANISMS, MEAN_MECHANISMS, MECHANISM_LABELS, PURE_DP_MECHANISMS, MeanSettings,
                           plan_mean_release, release_record)
from fdp_core.explore.tuning import PSS_MECHANISMS, pss_defaults

GRID = np.linspace(0, 1, 21)
FD = from_arrays(GRID, 0.5 + 0.1 * np.random.default_rng(0).standard_normal((30, GRID.size)))
SETTINGS = {"gaussian": MeanSettings(), "iclp-qr": MeanSettings(mechanism="iclp-qr", psi=1e-3),
            "iclp-ar": MeanSettings(mechanism="iclp-ar", psi=0.02, eta=1.0), "frl": MeanSettings(mechanism="frl", M=5),
            "bernstein": MeanSettings(mechanism="bernstein", K=6, lo=0.0, hi=1.0)}


def test_the_cli_contract_keeps_its_mechanism_names_and_order():
    # The CLI contract: these names, in this order, first; new mechanisms extend the list.
    assert MEAN_MECHANISMS[:5] == ("gaussian", "iclp-qr", "iclp-ar", "frl", "bernstein")
    assert GAUSSIAN_MECHANISMS[0] == "gaussian" and set(PURE_DP_MECHANISMS) >= set(MEAN_MECHANISMS[1:5])
    assert set(GAUSSIAN_MECHANISMS) | set(PURE_DP_MECHANISMS) == set(MEAN_MECHANISMS)
    assert set(MECHANISM_LABELS) == set(MEAN_MECHANISMS)
    assert PSS_MECHANISMS == registry.quadratic_penalty_mechanisms() == ("gaussian", "iclp-qr")


@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_entry_plans_records_and_audits_through_the_registry(name):
    entry = registry.mean_mechanism(name)
    plan = plan_mean_release(FD, SETTINGS[name])
    record = release_record(plan, plan.sample(np.random.default_rng(1), 1)[0])
    assert record["privacy"] == entry.privacy and plan.noise == entry.noise
    assert plan.expected_sq_l2_error == pytest.approx(entry.noise_variance_factor * np.sum(plan.noise_scales**2)) \
        or not entry.basis.kernel  # Bernstein's basis is not orthonormal: its own closed form
    # The kernel mechanisms plan in the eigenbasis (plan_noise, worst-case pair); Bernstein's basis plans itself.
    assert (entry.plan_noise is None) == (not entry.basis.kernel) == (entry.worst_case is None)
    assert plan.synthesis.shape == (FD.m, entry.basis.statistic_size(SETTINGS[name], FD.m)
                                    if not entry.basis.kernel else plan.noise_scales.size)
    if entry.penalty is not None:
        assert record["settings"][entry.penalty] == getattr(SETTINGS[name], entry.penalty)


def test_pss_is_offered_only_where_its_theory_holds():
    for name in MEAN_MECHANISMS:
        if registry.mean_mechanism(name).pss:
            pss_defaults("matern52", None, 100, 1.0, mechanism=name)
        else:
            with pytest.raises(ParameterError):
                pss_defaults("matern52", None, 100, 1.0, mechanism=name)


def test_unknown_mechanism_names_the_choices():
    with pytest.raises(ParameterError, match="gaussian, iclp-qr, iclp-ar, frl, bernstein"):
        MeanSettings(mechanism="laplace").validated()


def test_a_new_entry_needs_no_plumbing(monkeypatch):
    """An entry added to the registry alone plans, records and passes its audit (here: the
    Gaussian mechanism under another name), and its 0.9x control is flagged."""
    copy = replace(registry.MEAN_REGISTRY["gaussian"], name="gaussian-copy", label="copy")
    monkeypatch.setitem(registry.MEAN_REGISTRY, "gaussian-copy", copy)
    settings = MeanSettings(mechanism="gaussian-copy", epsilon=1.0, delta=0.1, tau=1.0, phi=1e-2)
    plan = plan_mean_release(FD, settings)
    reference = plan_mean_release(FD, replace(settings, mechanism="gaussian"))
    np.testing.assert_allclose(plan.noise_scales, reference.noise_scales)
    audit = audit_mean_mechanism(settings, GRID, 30)
    assert not audit.result.flagged and audit.control.flagged


# --------------------------------------------------------------------------- PCA samplers (registry/pca.py)

def _pca_fd():
    from fdp_core.releases.pca import simulate_fpca_awan

    grid, values, _ = simulate_fpca_awan(120, seed=2)
    return from_arrays(grid, values)


PCA_COMMON = dict(basis="fourier", p=12, epsilon=2.0, tau=1.0, gibbs_sweeps=200)
PCA_SETTINGS = {"exact": dict(k=1), "deflation": dict(k=2, epsilon_split=(1.5, 0.5)), "gibbs": dict(k=2)}


def test_pca_and_covariance_cli_names_come_from_their_registries():
    from fdp_core.releases.covariance import COVARIANCE_MECHANISMS
    from fdp_core.releases.pca import PCA_SAMPLERS
    from fdp_core.registry.pca import default_sampler, page_choices, sampler_for

    assert PCA_SAMPLERS == tuple(registry.entries("pca")) == ("exact", "deflation", "gibbs")
    assert COVARIANCE_MECHANISMS == tuple(registry.entries("covariance")) == ("gaussian", "iclp")
    # sampler = None and the Components page's two choices: exact for k = 1, deflation above, or the chain.
    assert [default_sampler(k) for k in (1, 2, 5)] == ["exact", "deflation", "deflation"]
    assert page_choices() == ("exact", "gibbs")
    assert [sampler_for("exact", k) for k in (1, 3)] == ["exact", "deflation"] and sampler_for("gibbs", 1) == "gibbs"


@pytest.mark.parametrize("kind,settings_class", [("pca", "PcaSettings"), ("covariance", "CovarianceSettings")])
def test_every_field_an_entry_reads_is_a_settings_field(kind, settings_class):
    from dataclasses import fields

    from fdp_core.releases import covariance, pca

    names = {f.name for f in fields(getattr(pca if kind == "pca" else covariance, settings_class))}
    for entry in registry.entries(kind).values():
        assert set(entry.fields) <= names, entry.name


@pytest.mark.parametrize("name", list(PCA_SETTINGS))
def test_every_sampler_releases_records_and_charges_through_its_entry(name):
    from fdp_core.publish.export import pca_ledger_entry
    from fdp_core.releases.pca import PcaSettings, private_pca, release_record

    entry = registry.mechanism("pca", name)
    settings = PcaSettings(sampler=name, **PCA_SETTINGS[name], **PCA_COMMON)
    result = private_pca(_pca_fd(), settings, 3)
    g = result.guarantee.details
    assert (g["sampler"], g["sampler_label"], result.guarantee.privacy, g["approximate"]) == \
        (name, entry.label, entry.privacy, entry.approximate)
    assert g["epsilon_per_component"] == list(entry.component_epsilons(settings))
    assert ("composition" in g) == entry.splits_epsilon
    record = release_record(result)
    assert record["differentially_private"] is not entry.approximate
    assert {key: record[key] for key in entry.record_fields(result.diagnostics)} == \
        entry.record_fields(result.diagnostics)
    ledger_entry = pca_ledger_entry(settings)
    assert ledger_entry.mechanism == entry.ledger_mechanism and ledger_entry.approximate == entry.approximate
    assert ledger_entry.noise["sampler"] == f"Bingham: {entry.label}"
    text, note = entry.describe_diagnostics(result.diagnostics, result.p)
    assert "**" in text and note  # the page's diagnostics read the draw's own figures


def test_a_new_sampler_needs_no_plumbing(monkeypatch):
    """A sampler added to the registry alone validates, releases, records and is charged (here: deflation
    under another name, which must then give deflation's draw for the same seed)."""
    from fdp_core.publish.export import pca_ledger_entry
    from fdp_core.releases.pca import PcaSettings, private_pca, release_record
    from fdp_core.registry import pca as pca_registry

    copy = replace(pca_registry.REGISTRY["deflation"], name="deflation-copy", label="copy of deflation")
    monkeypatch.setitem(pca_registry.REGISTRY, "deflation-copy", copy)
    settings = PcaSettings(sampler="deflation-copy", **PCA_SETTINGS["deflation"], **PCA_COMMON)
    fd = _pca_fd()
    result = private_pca(fd, settings, 4)
    reference = private_pca(fd, replace(settings, sampler="deflation"), 4)
    np.testing.assert_array_equal(result.coefficients, reference.coefficients)
    assert result.guarantee.details["sampler_label"] == "copy of deflation"
    assert result.guarantee.details["zcdp_rho_sum_components"] == reference.guarantee.details["zcdp_rho_sum_components"]
    assert release_record(result)["sampler"] == "deflation-copy"
    assert pca_ledger_entry(settings).noise["sampler"] == "Bingham: copy of deflation"
    # The validation of the fields it reads comes with it; a split is refused where no entry reads it.
    with pytest.raises(ParameterError, match="add up to epsilon"):
        replace(settings, epsilon_split=(1.0, 0.5)).validated()
    with pytest.raises(ParameterError, match="only to the deflation, deflation-copy sampler"):
        replace(settings, sampler="gibbs").validated()


# --------------------------------------------------------------------------- covariance (registry/covariance.py)

COVARIANCE_SETTINGS = dict(kernel="matern52", rho=0.3, centre=0.5, tau=1.0, epsilon=1.0, delta=1e-5)


@pytest.mark.parametrize("name", ["gaussian", "iclp"])
def test_every_covariance_entry_plans_and_records_through_the_registry(name):
    from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release
    from fdp_core.releases.covariance import release_record as covariance_record

    entry = registry.mechanism("covariance", name)
    settings = CovarianceSettings(mechanism=name, centring="released-mean", **COVARIANCE_SETTINGS)
    plan = plan_covariance_release(FD, settings)
    record = covariance_record(plan)
    assert plan.family == entry.family and record["privacy"] == entry.family.privacy
    assert record["delta"] == entry.family.delta_or_zero(settings.delta)
    assert (plan.sigma is None) != entry.family.uses_delta and (plan.mean_sigma is None) != entry.family.uses_delta
    assert plan.expected_sq_hs_error == pytest.approx(
        entry.family.variance_factor * (np.sum(plan.scales**2) + np.trace(plan.scales**2)) / 2)


def test_a_new_covariance_mechanism_needs_no_plumbing(monkeypatch):
    """An entry added alone plans like the one it copies, and the audit searches its pair in its norm."""
    from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release
    from fdp_core.registry import covariance as covariance_registry
    from fdp_core.explore import summary_audit

    copy = replace(covariance_registry.REGISTRY["iclp"], name="iclp-copy", label="copy")
    monkeypatch.setitem(covariance_registry.REGISTRY, "iclp-copy", copy)
    settings = CovarianceSettings(mechanism="iclp-copy", **COVARIANCE_SETTINGS)
    plan = plan_covariance_release(FD, settings)
    reference = plan_covariance_release(FD, replace(settings, mechanism="iclp"))
    np.testing.assert_array_equal(plan.scales, reference.scales)
    assert plan.sensitivity == reference.sensitivity and plan.noise == "laplace"
    norms = []
    monkeypatch.setattr(summary_audit, "worst_covariance_pair",
                        lambda A, tau, norm, **kw: norms.append(norm) or ("pair", np.eye(len(A))[0] * tau,
                                                                          np.zeros(len(A)), tau**2))
    summary_audit.audit_covariance_mechanism(settings, GRID, 10, n_select=2000, n_test=2000)
    assert norms == ["l1c"]
