"""Plan page: budgets from accuracy targets across several statistics (METHODS.md section 21).

Everything on this page is computed from public inputs only (the declared n, grid and range,
the sidebar's kernel and smoothing): no data value is read, so nothing here spends budget.
The plan is downloaded as plan.json plus one replay config per part, and committed here as one
act (fdp_ui.plan_commit: the Release page's checks, the whole plan against the budget, one
bundle) or with `fdp plan PLAN.yaml --data FILE --commit`.
"""

import io
import json
import zipfile

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import yaml

from fdp_core.errors import FdpError
from fdp_core.limits import MAX_GRID_POINTS
from fdp_core.explore.plan import PLAN_KINDS, PLAN_SCHEMA, RADIUS_UNITS, describe, part_configs
from fdp_ui import live_chart, plan_commit, sidebar, state

RULES = ("target", "weight", "epsilon")


def default_rows(value_range, domain) -> pd.DataFrame:
    """The starting plan, in the loaded data's own units (issue 38): the mean's 95% radius 5% of the declared
    range's width, the density's 0.5 of the uniform density's norm on the range (1/sqrt(width)), the density of
    each curve's average over its own domain. Without a declared range: the unit range."""
    lo, hi = value_range or (0.0, 1.0)
    width = float(hi - lo) if hi > lo else 1.0
    a, b = domain
    return pd.DataFrame([
        {"name": "mean curve", "kind": "mean", "rule": "target", "value": float(f"{0.05 * width:.3g}"), "feature": ""},
        {"name": "components", "kind": "pca", "rule": "epsilon", "value": 0.5, "feature": ""},
        {"name": "density of the mean value", "kind": "kde", "rule": "target",
         "value": float(f"{0.5 / np.sqrt(width):.3g}"), "feature": f"mean:{a:g}:{b:g}"},
    ])


st.title("Plan a release by accuracy")
st.caption("State the accuracy each statistic needs (its 95% radius) or a weight or an epsilon: the plan gives "
           "the cheapest budget for each and in total. Computed from public inputs only; no data value is read "
           "and nothing is spent until the plan is committed.")
ds = state.current()
g = sidebar.render()
bounds = state.bounds_settings(ds)

c1, c2, c3 = st.columns(3)
n_default = state.n_persons(ds) if bounds["person_column"] else ds.fd.n
n = c1.number_input("n (persons, declared public)", min_value=2, value=n_default, step=1, key="plan_n",
                    help="The number of persons the release will cover: a public input you declare.")
grid = c2.number_input("grid points", min_value=3, max_value=MAX_GRID_POINTS, value=int(ds.fd.m), step=1,
                       key="plan_grid")
value_range = bounds["value_range"]
c3.metric("public value range", "not declared" if value_range is None else f"{value_range[0]:g} .. {value_range[1]:g}")
if value_range is None:
    st.warning("No public value range is declared (Data page): this plan uses the sidebar's tau and a density box "
               "of 0..1. Declare the range before committing: every statistic's noise is calibrated to it.")

budget_on = st.checkbox("split a total budget between the weighted statistics", key="plan_budget_on")
budget = None
if budget_on:
    b1, b2 = st.columns(2)
    budget = {"epsilon": float(b1.number_input("total epsilon", min_value=0.01, value=2.0, key="plan_eps")),
              "delta": float(b2.number_input("total delta", min_value=0.0, max_value=0.5, value=1e-5, format="%.1e",
                                             key="plan_delta"))}

rows = st.data_editor(default_rows(value_range, ds.fd.domain), num_rows="dynamic", key="plan_rows",
                      use_container_width=True,
                      column_config={
                          "kind": st.column_config.SelectboxColumn("kind", options=list(PLAN_KINDS), required=True),
                          "rule": st.column_config.SelectboxColumn("rule", options=list(RULES), required=True,
                                                                   help="target: a 95% radius; weight: a share of "
                                                                        "the total budget; epsilon: stated"),
                          "value": st.column_config.NumberColumn("value", min_value=0.0, format="%.4g"),
                          "feature": st.column_config.TextColumn("feature (density)",
                                                                 help="e.g. mean:0:1, l2norm, value:0.5")})


def _statistic(row) -> dict:
    smooth = {"kernel": g.kernel, "rho": g.rho, "eta": g.eta}
    # With a declared range, tau follows from it; without one, the sidebar's public tau.
    tau = None if value_range is not None else g.tau
    settings = {"mean": {**smooth, "phi": g.phi, "delta": g.delta, "tau": tau},
                "kde": {"box": [list(value_range or (0.0, 1.0))], "delta": g.delta},
                "covariance": {**smooth, "phi": g.phi, "delta": g.delta,
                               **({} if value_range is not None else {"tau": g.tau, "centre": 0.0})},
                "pca": {"k": 2, "kernel": g.kernel, "rho": g.rho}}[row["kind"]]
    out = {"name": str(row["name"] or row["kind"]), "kind": row["kind"], "settings": settings,
           row["rule"]: float(row["value"])}
    if row["kind"] == "kde":
        out["feature"] = str(row["feature"] or "mean:0:1")
    return out


mapping = {"schema": PLAN_SCHEMA,
           "public": {"n": int(n), "grid": int(grid), "domain": [float(ds.fd.grid_points[0]),
                                                                 float(ds.fd.grid_points[-1])]},
           "statistics": [_statistic(r) for _, r in rows.dropna(subset=["kind", "rule", "value"]).iterrows()]}
if value_range is not None:
    mapping["public"]["value_range"] = list(value_range)
if bounds["person_column"]:
    mapping["public"]["person_column"] = bounds["person_column"]
if budget is not None:
    mapping["budget"] = budget

try:
    plan = plan_commit.plan_of(mapping)  # sealed mode: computed on the public stand-in
except FdpError as exc:
    st.error(str(exc))
    st.stop()

table = pd.DataFrame([{"statistic": p.statistic.name, "kind": p.statistic.kind, "rule": p.statistic.rule,
                       "charged epsilon": p.charged_epsilon, "delta": p.charged_delta,
                       "95% radius": p.radius, "units": RADIUS_UNITS[p.statistic.kind]} for p in plan.parts])
st.dataframe(table, hide_index=True, use_container_width=True)
m1, m2 = st.columns(2)
m1.metric("total epsilon (charged, basic)", f"{plan.basic[0]:.4g}", help="What the ledger's basic filter charges.")
if plan.gdp is not None:
    m2.metric(f"whole plan ({plan.gdp[2]})", f"{plan.gdp[0]:.4g}",
              help="A valid total for the plan as a whole, its parameters being fixed in advance.")
if not plan.fits():
    st.error("The plan costs more than its total budget: raise the targets or the budget.")


def _radius_figure() -> go.Figure:
    """Each statistic's 95% radius against its own epsilon (public), the planned point marked."""
    fig = go.Figure()
    grid = np.geomspace(0.05, 20, 60)
    for part in plan.parts:
        profile = plan.profiles.get(part.statistic.name)
        if profile is None:
            continue
        eps = np.unique(np.append(grid, part.epsilon))
        fig.add_trace(go.Scatter(x=eps, y=[profile.radius(e) / profile.radius(part.epsilon) for e in eps],
                                 mode="lines", name=part.statistic.name))
        fig.add_trace(go.Scatter(x=[part.epsilon], y=[1.0], mode="markers", showlegend=False,
                                 marker={"size": 9}, name=f"{part.statistic.name}: planned"))
    fig.update_layout(title="each statistic's 95% radius against its epsilon (1 = the planned radius)",
                      xaxis={"title": "epsilon of the statistic", "type": "log"},
                      yaxis={"title": "radius / planned radius", "type": "log"}, height=360,
                      margin={"t": 50, "b": 40})
    return fig


live_chart.show(_radius_figure(), key="plan_radius_figure")
with st.expander("the plan in words"):
    st.text("\n".join(describe(plan)))


def _bundle() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("plan.yaml", yaml.safe_dump(mapping, sort_keys=False))
        z.writestr("plan.json", json.dumps(plan.to_dict(), indent=2) + "\n")
        for name, config in part_configs(plan):
            z.writestr(name, yaml.safe_dump(config, sort_keys=False))
    return buf.getvalue()


st.download_button("download the plan (plan.yaml, plan.json, one replay config per part)", _bundle(),
                   file_name="fdp_plan.zip", mime="application/zip", disabled=not plan.fits())
st.caption("Or commit it on the command line: `python -m fdp_core plan plan.yaml --data FILE --commit`. Either "
           "way the whole plan is checked against the budget left and refused whole if it does not fit.")
if plan.fits():
    plan_commit.render(plan, mapping, value_range, ds)
