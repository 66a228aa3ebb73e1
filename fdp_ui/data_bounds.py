"""The Data page's unit of privacy (the person column, or a declaration that every curve is a
person) and the public value range, both stored outside their widgets (fdp_ui.state)."""

from __future__ import annotations

import streamlit as st

from fdp_core.data.meta_columns import metadata_view
from fdp_core.data.preprocess import NOT_DP_SUGGESTION, curves_per_person, repeated_id_columns, suggested_value_range
from fdp_core.limits import MIN_PERSONS_COMMIT
from fdp_core.publish.views import NONPRIVATE_VIEWS

from . import commit_checks, state


def _person_column(ds) -> None:
    fd = ds.fd
    columns = metadata_view(fd)  # the loader's columns as read: no DataFrame (nor pandas) for the names
    options = [state.NO_PERSON] + [str(c) for c in columns.columns]
    if st.session_state.get(state.PERSON_KEY) not in options:
        st.session_state[state.PERSON_KEY] = state.NO_PERSON
    person = st.selectbox("person column (who each curve belongs to)", options,
                          key=state.seed_widget(state.PERSON_KEY, state.NO_PERSON),
                          on_change=state.store_choice, args=(state.PERSON_KEY,),
                          help="Curves with the same value here belong to one person. Each person's curves are "
                               "clipped and averaged into one, so the guarantee protects persons and n = number of "
                               "persons. n is treated as public (declared).")
    repeated = repeated_id_columns(columns)
    if person == state.NO_PERSON and repeated:
        st.warning(f"Column(s) {', '.join(repr(c) for c in repeated)} have repeated values: if they identify "
                   "persons with several curves, choose one as the person column. Otherwise a person with k curves "
                   "gets only about k times epsilon of protection. Nothing is committed until you choose one or "
                   "declare below that every curve is a different person.")
        ss = st.session_state
        ss["data_curves_are_persons_input"] = commit_checks.curves_declared_persons(ds)
        st.checkbox(f"I declare that every curve is a different person (the repeated values of '{repeated[0]}' do "
                    "not identify persons)", key="data_curves_are_persons_input",
                    on_change=lambda: commit_checks.set_curves_declared_persons(ss["data_curves_are_persons_input"]),
                    help="A deliberate choice, recorded in every release's record and report.")
    if person != state.NO_PERSON:
        import pandas as pd  # lazy: a chosen person column's table; the first Data page starts without pandas

        counts = curves_per_person(fd.metadata, person)
        n_persons = int(counts.sum())
        st.metric("persons n", n_persons, help="The n of every sensitivity (declared public).")
        st.dataframe(pd.DataFrame({"curves per person": counts.index, "persons": counts.values}), hide_index=True)
        st.caption(f"{fd.n} curves of {n_persons} persons (analyst view).")
        for text in commit_checks.person_warnings(n_persons, fd.n, person):
            st.warning(text[0].upper() + text[1:] + ".")
        if n_persons < MIN_PERSONS_COMMIT:
            st.error(f"Fewer than {MIN_PERSONS_COMMIT} persons: the app does not commit a release over them.")


def _value_range(ds) -> None:
    st.markdown("**Public value range** of every curve value, in the data's units: declare it from domain "
                "knowledge (a fraction: 0 to 1; heights: 60 to 200 cm), never from these data.")
    r1, r2 = st.columns(2)
    r1.number_input("lowest possible value", format="%.6g", key=state.seed_widget(state.RANGE_LO_KEY, None),
                    on_change=state.store_choice, args=(state.RANGE_LO_KEY,), placeholder="declare it")
    r2.number_input("highest possible value", format="%.6g", key=state.seed_widget(state.RANGE_HI_KEY, None),
                    on_change=state.store_choice, args=(state.RANGE_HI_KEY,), placeholder="declare it")
    if ds.public_range is not None and (st.session_state[state.RANGE_LO_KEY],
                                        st.session_state[state.RANGE_HI_KEY]) == tuple(ds.public_range):
        st.caption(f"Pre-filled from the simulation design's public description: {ds.public_range_note}. Not read "
                   "off the data; tick the box below to declare it.")
    declared = st.checkbox("I declare this range public (chosen without looking at the data)",
                           key=state.seed_widget(state.RANGE_DECLARED_KEY, False),
                           on_change=state.store_choice, args=(state.RANGE_DECLARED_KEY,),
                           help="Values are clipped to it, curves centred at its midpoint (added back after the "
                                "noise) and tau defaults to half its width. Releases of curves can be committed only "
                                "once a range is declared.")
    lo_v, hi_v = st.session_state[state.RANGE_LO_KEY], st.session_state[state.RANGE_HI_KEY]
    if declared and (lo_v is None or hi_v is None or not lo_v < hi_v):
        st.error("The range needs a lowest and a highest value, lowest < highest; it is not used until then.")
    elif declared:
        st.success(f"Declared public range [{lo_v:g}, {hi_v:g}]: centre {(lo_v + hi_v) / 2:g}, "
                   f"default tau {(hi_v - lo_v) / 2:g}.")
    else:
        st.warning("No range declared: previews are centred at 0 and commits of curves are refused. Choose the "
                   "range from domain knowledge (the possible values, e.g. 0 to 1 for a fraction).")
        # The data's own extremes are shown only on request (issue 38): a range read off them is not DP, and
        # looking at them is recorded in the report of every later commit.
        if st.toggle("show the data's minimum and maximum (analyst view, not DP)", key="data_show_extremes"):
            d_lo, d_hi = suggested_value_range(ds.fd)
            state.note_view(NONPRIVATE_VIEWS["range_suggestion"])
            st.caption(f"The data run from {d_lo:.4g} to {d_hi:.4g} ({NOT_DP_SUGGESTION}).")


def render(ds) -> None:
    st.subheader("Unit of privacy and public bounds")
    unit_col, range_col = st.columns(2)
    with unit_col:
        _person_column(ds)
    with range_col:
        _value_range(ds)
