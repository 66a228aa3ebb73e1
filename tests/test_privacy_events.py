"""Typed privacy events: one frozen type per privacy curve, read by the accountant and the report."""

import dataclasses
import re
from pathlib import Path

import pytest

from fdp_core.budget import accounting as acc
from fdp_core.errors import ParameterError
from fdp_core.budget.privacy_events import (ApproximateEvent, BoundedRangeEvent, GaussianEvent, PureEvent, ZcdpEvent,
                                     event_of)

ENTRIES = [
    (acc.gaussian_entry("mean", "gaussian", sensitivity=1.0, sigma=2.0, epsilon=1.0, delta=1e-2), GaussianEvent),
    (acc.pure_entry("mean", "iclp-qr", epsilon=0.5), PureEvent),
    (acc.exponential_entry("pca", "exact", epsilon=0.5), BoundedRangeEvent),
    (acc.approximate_entry("pca", "gibbs", epsilon=0.5), ApproximateEvent),
    (acc.LedgerEntry(kind="mean", mechanism="gaussian", curve="zcdp", rho=0.1, delta=1e-5,
                     epsilon=acc.cks_epsilon(0.1, 1e-5)), ZcdpEvent),
]


@pytest.mark.parametrize("entry, cls", ENTRIES, ids=[c.curve for _, c in ENTRIES])
def test_every_entry_carries_the_event_of_its_curve(entry, cls):
    event = entry.event
    assert type(event) is cls and event.curve == entry.curve
    assert (event.epsilon, event.delta, event.rho) == (entry.epsilon, entry.delta, entry.rho)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.epsilon = 0.0
    # The event survives the ledger's JSON round trip (the database stores the curve's name).
    assert type(acc.LedgerEntry.from_dict(entry.to_dict()).event) is cls


def test_an_entry_booked_cheaper_than_its_noise_is_refused_by_its_event():
    with pytest.raises(ParameterError, match="sigma is too small"):
        event_of("gaussian", epsilon=0.1, delta=1e-9, rho=2.0, mu=2.0)
    with pytest.raises(ParameterError, match="CKS conversion"):
        event_of("zcdp", epsilon=0.01, delta=1e-5, rho=1.0, mu=None)
    with pytest.raises(ParameterError, match="curve must be one of"):
        event_of("laplace-ish", epsilon=1.0, delta=0.0, rho=0.5, mu=None)


def test_the_accountant_composes_by_event_not_by_name():
    gaussian, pure = ENTRIES[0][0], ENTRIES[1][0]
    report = acc.compose([gaussian, gaussian, pure], 1e-5)
    assert report.mu_gaussian == pytest.approx(2 ** 0.5 * gaussian.mu)
    assert not report.gaussian_only


# getattr(self, f"_check_{...}") and friends: a method looked up by a formatted name.
FORMATTED_LOOKUP = re.compile(r"""getattr\(\s*self\s*,\s*f["']""")
CURVE_BRANCH = re.compile(r"""\bcurve\b\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{]?\s*["']""")


def test_no_string_dispatch_on_the_curve():
    """Nowhere in the library (the accountant moved to fdp_core/budget/ with issue 27: scan every module)."""
    root = Path(__file__).resolve().parents[1] / "fdp_core"
    sources = sorted(root.rglob("*.py"))
    assert any(path.name == "accounting.py" for path in sources)
    hits = [f"{path.relative_to(root)}:{number}: {line.strip()}" for path in sources
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if FORMATTED_LOOKUP.search(line) or CURVE_BRANCH.search(line.split("#", 1)[0])]
    assert not hits, "string dispatch on a privacy curve or a formatted method name:\n" + "\n".join(hits)
    assert FORMATTED_LOOKUP.search('getattr(self, f"_check_{self.curve}")') and CURVE_BRANCH.search('if curve == "pure":')
    assert CURVE_BRANCH.search('if self.curve in ("pure", "zcdp"):') and not CURVE_BRANCH.search("for curve in (a, b)")
