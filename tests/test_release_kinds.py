"""The commit protocol (reserve -> draw -> write -> complete) and the registry of kinds of release."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fdp_core.budget.accounting import Ledger
from fdp_core.budget.datasets import open_budget
from fdp_core.budget.ledger_store import BudgetSpec
from fdp_core.data.loading import load_curves
from fdp_core.data.sparse_data import SPARSE_UNIT, ledger_view, read_long
from fdp_core.errors import BudgetError, ParameterError
from fdp_core.publish import kinds, protocol, replay
from fdp_core.publish.bundle import bundle_files
from fdp_core.publish.commit import BUNDLE_FILES
from fdp_core.publish.protocol import CommitRequest
from fdp_core.releases.covariance import CovarianceSettings
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.mean import MeanSettings
from fdp_core.releases.pca import PcaSettings
from fdp_core.releases.sparse import SparseSettings

ROOT = Path(__file__).resolve().parents[1]
CURVES = load_curves(ROOT / "data" / "example_curves.csv")
SPARSE = read_long(ROOT / "data" / "example_sparse.csv")
MEAN = MeanSettings(mechanism="gaussian", epsilon=0.5, delta=1e-6, value_range=(-3.0, 3.0), phi=1e-2)
REQUESTS = {
    "mean": CommitRequest(CURVES, MEAN, label="a mean"),
    "density": CommitRequest(CURVES, KdeSettings(epsilon=0.5, delta=1e-6, box=(0.0, 4.0)),
                             inputs={"feature": "l2norm"}),
    "components": CommitRequest(CURVES, PcaSettings(k=1, epsilon=0.5, value_range=(-3.0, 3.0))),
    "covariance": CommitRequest(CURVES, CovarianceSettings(kernel="matern52", rho=0.3, lo=-3.0, hi=3.0, epsilon=0.5,
                                                           delta=1e-6, centring="released-mean")),
    "sparse": CommitRequest(SPARSE, SparseSettings(domain=(0.0, 1.0), value_range=(-1.0, 2.0), epsilon=0.5,
                                                   delta=1e-6)),
}


def test_every_replayable_kind_is_a_committing_registry_entry_with_the_bundle_files():
    assert replay.COMMIT_KINDS == ("mean", "kde", "pca", "covariance", "regression", "sparse")
    for name in replay.COMMIT_KINDS:
        kind = kinds.release_kind(name)
        assert kind.commits and kind.config_kind == name and kind.bundle_files == BUNDLE_FILES
        assert replay.SETTINGS_CLASSES[name][1] == kind.settings_class.__name__
    # Kinds published elsewhere say where, and have no commit hook of their own.
    for name in ("selection", "synthetic", "counts"):
        kind = kinds.release_kind(name)
        assert not kind.commits and kind.committed_where
        with pytest.raises(TypeError, match="no commit"):
            protocol.commit_release(kind, Ledger(1.0, 1e-5), CommitRequest(CURVES, MEAN))
    with pytest.raises(ParameterError, match="unknown kind"):
        kinds.release_kind("histogram")


@pytest.mark.parametrize("name", list(REQUESTS))
def test_every_kind_commits_through_the_protocol_charging_what_its_quote_said(name):
    request = REQUESTS[name]
    quote = kinds.quote(name, request)
    # Room for one commit, not two (the basic filter sums the entries).
    ledger = Ledger(1.5 * sum(e.epsilon for e in quote.entries), 1e-5)
    release = kinds.commit(name, ledger, request, quote=quote)
    # The ledger holds exactly the quoted entries' costs, one per part.
    assert len(ledger.entries) == len(quote.entries) == len(protocol.entry_ids(release))
    assert [e.epsilon for e in ledger.entries] == pytest.approx([e.epsilon for e in quote.entries])
    assert set(protocol.entry_ids(release)) == {e.id for e in ledger.entries}
    assert set(bundle_files(release, ledger)) == set(BUNDLE_FILES)
    assert release.config["kind"] == kinds.release_kind(name).config_kind
    # A second commit of the same does not fit: refused before anything is drawn or recorded.
    with pytest.raises(BudgetError):
        kinds.commit(name, ledger, request)
    assert len(ledger.entries) == len(quote.entries)


def test_write_runs_before_complete_and_a_failed_write_leaves_the_entries_reserved(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    budget = open_budget(url, ledger_view(SPARSE), unit=SPARSE_UNIT, source="library")
    budget.ensure(BudgetSpec(1.0, 1e-5, "basic", None))
    seen = []

    def write(release):
        shown = budget.store.show(budget.fingerprint, budget.name)
        seen.append(sorted(e["status"] for e in shown["entries"]))
        raise OSError("disk full")

    with pytest.raises(OSError):
        kinds.commit("sparse", budget, REQUESTS["sparse"], write=write)
    assert seen == [["reserved", "reserved"]]
    shown = budget.store.show(budget.fingerprint, budget.name)
    assert [e["status"] for e in shown["entries"]] == ["reserved", "reserved"]  # spent, never double-spent
    release = kinds.commit("sparse", budget, CommitRequest(SPARSE, REQUESTS["sparse"].settings.__class__(
        domain=(0.0, 1.0), value_range=(-1.0, 2.0), epsilon=0.2, delta=1e-7)))
    shown = budget.store.show(budget.fingerprint, budget.name)
    statuses = {e["id"]: e["status"] for e in shown["entries"]}
    assert all(statuses[i] == "complete" for i in protocol.entry_ids(release)) and len(statuses) == 4


def test_mean_with_bands_quotes_and_charges_both_parts():
    from dataclasses import replace

    request = CommitRequest(CURVES, replace(MEAN, confidence_band=0.95, band_share=0.2))
    quote = kinds.quote("mean", request)
    ledger = Ledger(2.0, 1e-5)
    release = kinds.commit("mean", ledger, request)
    assert len(quote.entries) == len(ledger.entries) >= 2
    assert set(protocol.entry_ids(release)) == {e.id for e in ledger.entries}
    assert "band" in release.record and np.isfinite(release.table["value"]).all()


def test_data_dependent_settings_are_refused_before_any_charge():
    from dataclasses import replace

    ledger = Ledger(1.0, 1e-5)
    with pytest.raises(ParameterError, match="data-dependent"):
        kinds.commit("mean", ledger, CommitRequest(CURVES, replace(MEAN, tau_from_data=True)))
    assert ledger.entries == []


def test_components_centred_by_a_released_mean_need_it_before_any_charge():
    ledger = Ledger(2.0, 1e-5)
    settings = PcaSettings(k=1, epsilon=0.5, value_range=(-3.0, 3.0), centring="released-mean")
    with pytest.raises(ParameterError, match="released mean"):
        kinds.commit("components", ledger, CommitRequest(CURVES, settings))
    assert ledger.entries == []
    mean = kinds.commit("mean", ledger, REQUESTS["mean"])
    inputs = {"released_mean": mean.table["value"].to_numpy(), "released_mean_id": mean.id}
    release = kinds.commit("components", ledger, CommitRequest(CURVES, settings, inputs=inputs))
    assert release.record["released_mean_id"] == mean.id and len(ledger.entries) == 2


def test_the_sparse_report_states_the_combined_charge_of_both_parts():
    from fdp_core.publish.report import epsilon_headline

    ledger = Ledger(1.0, 1e-5)
    release = kinds.commit("sparse", ledger, REQUESTS["sparse"])
    total = sum(e.epsilon for e in ledger.entries)
    headline, _ = epsilon_headline(release)
    assert f"epsilon = {total:.4g}" in headline and "its 2 parts together" in headline
    # The registry's sparse record is the one commit_sparse_mean writes (both parts' ids, their composition).
    assert release.record["charged_total"]["entry_ids"] == [e.id for e in ledger.entries]
