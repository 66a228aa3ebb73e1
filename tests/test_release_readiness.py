"""AppTest: the Release page says before the click why a commit could not be charged (h7).

Each reason the commit's own budget resolution (fdp_core.budget.datasets.resolve) would refuse
with after the click disables the button up front, with one sentence saying what to do:
data matching none of the ledger's registrations (another file registered other data), a
Data page choice of data set that the ledger refuses, and a stored budget that cannot take the
release. Nothing is drawn or written while the button is disabled.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.budget.datasets import open_budget
from fdp_core.budget.ledger_store import BudgetSpec, LedgerStore
from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.mechanisms import discrete

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
EXAMPLE = ROOT / "data" / "example_curves.csv"
UNREGISTERED = "match none of the 1 data set(s) registered in this ledger ('other study')"


@pytest.fixture
def draws(monkeypatch):
    """Every call of the exact samplers (AppTest runs the page in this process)."""
    calls = []
    for name in ("discrete_gaussian_release", "discrete_laplace_release"):
        real = getattr(discrete, name)
        monkeypatch.setattr(discrete, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    return calls


def _other_study():
    """Curves of other people (nothing like the example's), registered by another file's commit."""
    t = np.linspace(0, 1, 30)
    rng = np.random.default_rng(7)
    return from_arrays(t, 5 + np.sin(6 * t) * rng.uniform(1, 3, (40, 1)) + rng.normal(0, 0.3, (40, 30)),
                       name="other_study.csv")


def _release_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state["data_range_lo"], at.session_state["data_range_hi"] = -1.5, 1.5
    at.session_state["data_range_declared"] = True
    at.switch_page("pages/release.py").run()
    assert not at.exception, at.exception
    return at


def _acknowledge(at: AppTest) -> AppTest:
    for box in at.checkbox:
        if box.label.startswith("I publish") and not box.value:
            box.check()
    return at.run()


def _blocked(at: AppTest, reason: str) -> bool:
    """Disabled up front, the reason in the button's help and in the page's warning beside it."""
    button = at.button(key="rel_commit")
    return button.disabled and reason in button.help and any(
        w.value.startswith("**Commit not possible yet**") and reason in w.value for w in at.warning)


def test_data_matching_no_registration_disable_the_commit_until_registered_with_a_reason(draws):
    url = os.environ["FDP_LEDGER_URL"]  # the test's own ledger (conftest)
    open_budget(url, _other_study(), dataset="other study").ensure(BudgetSpec(4.0, 1e-4))
    at = _acknowledge(_release_page())
    assert _blocked(at, UNREGISTERED), (at.button(key="rel_commit").help, [w.value for w in at.warning])
    assert "register them as a new data set with a name and a reason on the Data page" in at.button(key="rel_commit").help
    assert not at.error and draws == []  # nothing refused after a click: nothing was clicked, nothing drawn
    create = at.button(key="rel_create_budget")  # storing the budget alone is refused up front for the same reason
    assert create.disabled and UNREGISTERED in create.help, create.help
    assert [d.name for d in LedgerStore(url).datasets()] == ["other study"]
    # The Data page's registration with a typed reason lifts the blocker; the commit then goes through.
    at.switch_page("pages/data.py").run()
    at.text_input(key="data_unmatched_name").set_value("example 2026").run()
    at.text_input(key="data_unmatched_reason").input("another cohort").run()
    at.button(key="data_unmatched_confirm").click().run()
    at.switch_page("pages/release.py").run()
    _acknowledge(at)
    assert not at.button(key="rel_commit").disabled, at.button(key="rel_commit").help
    at.button(key="rel_commit").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(s.value.startswith("Committed mean") for s in at.success)
    assert draws == ["discrete_gaussian_release"]
    names = {d.name: d for d in LedgerStore(url).datasets()}
    assert set(names) == {"other study", "example 2026"} and names["example 2026"].reason == "another cohort"


def test_a_refused_data_set_choice_disables_the_commit_in_the_apps_words(draws):
    """The Data page's choice (the example registered as new data although its exact curves are registered)
    is refused by the ledger: said beside the button as that, not as a database that cannot be used."""
    url = os.environ["FDP_LEDGER_URL"]
    open_budget(url, load_curves(EXAMPLE), dataset="example").ensure(BudgetSpec(4.0, 1e-4))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    at.checkbox(key="data_new_dataset").check().run()
    at.text_input(key="data_new_dataset_name").set_value("example copy").run()
    at.text_input(key="data_new_dataset_reason").set_value("other people, surely").run()
    at.button(key="data_new_dataset_confirm").click().run()
    at.session_state["data_range_lo"], at.session_state["data_range_hi"] = -1.5, 1.5
    at.session_state["data_range_declared"] = True
    at.switch_page("pages/release.py").run()
    _acknowledge(at)
    reason = "the data set cannot be charged (these exact curves are registered as 'example'"
    assert _blocked(at, reason), (at.button(key="rel_commit").help, [w.value for w in at.warning])
    assert "change the registered data set chosen on the Data page" in at.button(key="rel_commit").help
    assert "ledger database cannot be used" not in at.button(key="rel_commit").help  # said once, as what it is
    assert draws == [] and len(LedgerStore(url).datasets()) == 1


def test_a_stored_budget_too_small_for_the_release_disables_the_commit(draws):
    """The example's budget, stored by another session or the command line, cannot take the release:
    disabled before the click with the ledger's own check; nothing charged."""
    url = os.environ["FDP_LEDGER_URL"]
    budget = open_budget(url, load_curves(EXAMPLE), dataset="example")
    budget.ensure(BudgetSpec(0.5, 1e-4))
    at = _acknowledge(_release_page())
    assert _blocked(at, "over budget: it asks for epsilon"), at.button(key="rel_commit").help
    assert "leaves epsilon 0" in at.button(key="rel_commit").label
    assert draws == [] and budget.ledger().entries == []


def test_curves_with_a_budget_under_another_unit_of_privacy_disable_the_commit(draws):
    """Twelve curves (matched by exact fingerprint only) whose budget was created per person column 'pid'
    on the command line; in the app without that person column they are another unit of privacy: even once
    registered as new on the Data page, no second budget for the same curves is created. Said before the click."""
    import pandas as pd

    from fdp_ui.state import Dataset

    url = os.environ["FDP_LEDGER_URL"]
    t = np.linspace(0, 1, 20)
    fd = from_arrays(t, 0.5 + 0.2 * np.random.default_rng(1).normal(size=(12, 20)), name="small.csv",
                     metadata=pd.DataFrame({"pid": [f"p{i}" for i in range(12)]}))
    open_budget(url, fd, unit={"person_column": "pid"}, dataset="small by pid").ensure(BudgetSpec(2.0, 1e-5))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = Dataset(fd, "upload: small.csv", "upload")
    at.run()
    at.session_state["data_range_lo"], at.session_state["data_range_hi"] = -1.5, 1.5
    at.session_state["data_range_declared"] = True
    at.switch_page("pages/data.py").run()
    at.text_input(key="data_unmatched_reason").input("a second look").run()
    at.button(key="data_unmatched_confirm").click().run()
    at.switch_page("pages/release.py").run()
    _acknowledge(at)
    reason = 'these curves already have a budget under another unit of privacy ({"person_column":"pid"})'
    assert _blocked(at, reason), (at.button(key="rel_commit").help, [w.value for w in at.warning])
    assert "choose that person column on the Data page" in at.button(key="rel_commit").help
    assert draws == [] and [d.name for d in LedgerStore(url).datasets()] == ["small by pid"]
