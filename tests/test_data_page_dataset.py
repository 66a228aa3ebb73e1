"""AppTest: the Data page's registered data set (issue 21): the match message, and registering a
near-match as new data only with a name and a reason, recorded with the budget."""

from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.budget.datasets import open_budget
from fdp_core.budget.ledger_store import BudgetSpec, LedgerStore
from fdp_ui.state import Dataset

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _data_page(fd, label) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["dataset"] = Dataset(fd, label, "upload")
    at.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, at.exception
    return at


def test_data_page_names_the_matched_data_set_and_registers_a_near_match_only_with_a_reason(shared_data):
    dti = load_curves(shared_data / "dti_cca.csv")
    url = os.environ["FDP_LEDGER_URL"]  # the test's own ledger (conftest)
    open_budget(url, dti, unit={"person_column": "subject"}, dataset="DTI-2026").ensure(BudgetSpec(2.0, 1e-5))
    # A re-export: one curve fewer, values in percent.
    variant = from_arrays(dti.grid_points, dti.data_matrix[1:] * 100, name="dti_percent.csv",
                          metadata=dti.metadata.iloc[1:].reset_index(drop=True))
    at = _data_page(variant, "upload: dti_percent.csv")
    assert any(i.value.startswith("Matches DTI-2026: 375 of 376 curves") for i in at.info), [i.value for i in at.info]
    # The deliberate act: a name and a reason, then the confirmation.
    at.checkbox(key="data_new_dataset").check().run()
    assert at.button(key="data_new_dataset_confirm").disabled
    at.text_input(key="data_new_dataset_name").set_value("DTI-2026 wave 2").run()
    at.text_input(key="data_new_dataset_reason").set_value("new participants, consent 2027").run()
    at.button(key="data_new_dataset_confirm").click().run()
    assert not at.exception, at.exception
    assert any("Registering as the new data set 'DTI-2026 wave 2'" in w.value and "consent 2027" in w.value
               for w in at.warning)
    # Stored with the budget (here: the Release page's "create the budget now"), reason and all.
    at.switch_page("pages/release.py").run()
    at.button(key="rel_create_budget").click().run()
    assert not at.exception, at.exception
    names = {d.name: d for d in LedgerStore(url).datasets()}
    assert set(names) == {"DTI-2026", "DTI-2026 wave 2"}
    assert names["DTI-2026 wave 2"].reason == "new participants, consent 2027"


def test_unrelated_data_match_nothing_on_the_data_page(shared_data):
    url = os.environ["FDP_LEDGER_URL"]
    dti = load_curves(shared_data / "dti_cca.csv")
    open_budget(url, dti, dataset="DTI-2026").ensure(BudgetSpec(2.0, 1e-5))
    at = _data_page(load_curves(shared_data / "berkeley_growth.csv"), "upload: berkeley_growth.csv")
    assert not any("Matches" in i.value for i in at.info)
    # No silent fresh budget (METHODS.md 24): registered only with a typed reason.
    assert any("match none of the 1 registered" in w.value for w in at.warning)
    assert at.button(key="data_unmatched_confirm").disabled
    at.text_input(key="data_unmatched_reason").input("another study").run()
    at.button(key="data_unmatched_confirm").click().run()
    assert any("Registering as the new data set" in w.value and "another study" in w.value for w in at.warning)
