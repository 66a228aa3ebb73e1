"""fdp_core.publish.verify: a bundle's numbers are re-derived from its config and the data, drawing nothing."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.publish.commit_summaries import commit_covariance
from fdp_core.releases.covariance import CovarianceSettings
from fdp_core.data.loading import load_curves
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.mean import MeanSettings
from fdp_core.publish.verify import verify_release

EXAMPLE = load_curves(Path(__file__).resolve().parents[1] / "data" / "example_curves.csv")


def _releases():
    ledger = Ledger(10.0, 1e-3)
    yield export.commit_mean(ledger, EXAMPLE, MeanSettings(epsilon=1.0, value_range=(0.0, 1.5), tau=None))
    yield export.commit_mean(ledger, EXAMPLE, MeanSettings(mechanism="iclp-qr", epsilon=0.5, tau=1.0))
    yield export.commit_kde(ledger, EXAMPLE, "max", KdeSettings(box=((0.0, 2.0),), epsilon=0.5))
    yield commit_covariance(ledger, EXAMPLE, CovarianceSettings(centre=0.5, tau=1.0, centring="released-mean",
                                                                gamma=0.2))


@pytest.mark.parametrize("release", list(_releases()), ids=lambda r: f"{r.kind}-{r.entry.mechanism}")
def test_a_release_verifies_and_a_tampered_one_does_not(release):
    result = verify_release(release.config, EXAMPLE, release.record)
    assert result.verified, result.report()
    assert result.report().endswith("verified")
    tampered = copy.deepcopy(release.record)
    tampered["charged"]["epsilon"] *= 0.5  # a release claiming to have cost less than its settings imply
    bad = verify_release(release.config, EXAMPLE, tampered)
    assert not bad.verified and "MISMATCH charged epsilon" in bad.report()
