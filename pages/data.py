"""Data page: choose the curves (built-in example, upload, or a simulation) and inspect them.

The source widgets are in fdp_ui/data_source.py, the unit of privacy and the public range in
data_bounds.py, the view of the loaded curves in data_summary.py.
"""

import streamlit as st

from fdp_ui import data_bounds, data_source, data_summary, sealed, sidebar, sparse_state, state, steps
from fdp_ui import ledger as ledger_ui

st.title("Data")
st.caption("The unit of privacy is a person: neighbouring data sets differ in one person's data. Without a person "
           "column every curve counts as a different person.")

data_source.render()
ds = state.current()
refused = data_source.render_refusal(ds)
state.person_column(ds)  # pre-selects a likely person column for a new data set

sealed.render_panel()  # issue 29: explore on a public stand-in, read the private file at commit
data_bounds.render(ds)
# Sparse data in use are what the Release page commits: their own registration box.
if sparse_state.active():
    from fdp_ui import sparse_release  # lazy: sparse data's own registration, only while they are in use

    sparse_release.render_dataset_choice(st.container())
else:
    ledger_ui.render_dataset_choice(st.container())

settings = sidebar.render()
data_summary.render(ds, settings, refused)
steps.render_bounds_section(settings.tau, settings.tau_from_data)
