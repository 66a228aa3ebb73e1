"""The Release page's ledger section: every release of the budget, its native parameter, the totals."""

from __future__ import annotations

import streamlit as st

from fdp_core.publish import export

from . import ledger as ledger_ui


def render(led) -> None:
    """Section 3 (below its header): the ledger's table, the composed totals and the filter in force."""
    st.dataframe(export.ledger_table(led), hide_index=True, width="stretch", key="rel_ledger_table",
                 column_config={"epsilon": st.column_config.NumberColumn(format="%.4g"),
                                "delta": st.column_config.NumberColumn(format="%.3g"),
                                "rho": st.column_config.NumberColumn(format="%.4g"),
                                "mu": st.column_config.NumberColumn(format="%.4g")})
    report = led.composition()
    # "-" where a composition does not apply (never a raw None).
    st.dataframe(export.composition_table(report).style.format({"epsilon": "{:.4g}", "delta": "{:.3g}"},
                                                               na_rep="-"),
                 hide_index=True, width="stretch", key="rel_composition_table")
    m1, m2, m3 = st.columns(3)
    m1.metric("composed total epsilon", "-" if report.best is None else f"{report.best.epsilon:.4g}",
              help="Minimum over the valid compositions at the total delta.")
    m2.metric("at delta", f"{report.delta_target:g}")
    m3.metric("best composition", "-" if report.best is None else report.best.method)
    if report.approximate_nominal is not None:
        st.warning(f"{report.n_approximate} approximate release(s) (Gibbs sampler) are not covered by these totals; "
                   f"their nominal cost, not a DP claim: epsilon {report.approximate_nominal.epsilon:.4g}, delta "
                   f"{report.approximate_nominal.delta:.3g}. The filter still charges it.")
    for note in report.notes:
        st.caption(note)
    st.caption(f"Filter in force: {ledger_ui.FILTER_LABELS[led.filter]}. Its guarantee is the budget itself: epsilon "
               f"{led.epsilon_total:g}, delta {led.delta_total:g}.")
    st.caption("The ledger cannot be reset from the app: what was published stays published, and its privacy loss "
               "still counts against the people in the data. A data custodian can start another named budget on the "
               f"command line (`{ledger_ui.NEW_BUDGET_COMMAND}`); the records show which budget a release spent.")
