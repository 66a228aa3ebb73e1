"""The mean-mechanism registry (fdp_core/registry/mean.py): one entry per mechanism, read by the plumbing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fdp_core import registry
from fdp_core.audit import audit_mean_mechanism
from fdp_core.data import from_arrays
from fdp_core.errors import ParameterError
from fdp_core.mean import (GAUSSIAN_MECHANISMS, MEAN_MECHANISMS, MECHANISM_LABELS, PURE_DP_MECHANISMS, MeanSettings,
                           plan_mean_release, release_record)
from fdp_core.tuning import PSS_MECHANISMS, pss_defaults

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
        or entry.lattice  # Bernstein's basis is not orthonormal: its own closed form
    assert (entry.plan_noise is None) == entry.lattice == (entry.worst_case is None)
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
