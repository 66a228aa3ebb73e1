"""The plan's one report and README (issue 29): every part with its charge, the plan's totals, the ledger.

Built from a :class:`fdp_core.publish.plan_commit.CommittedPlan` only: the plan (public
inputs), each part's noised output and its privacy statement, and the ledger. Each part's
own full report stays in its subfolder.
"""

from __future__ import annotations

import math

import jinja2
import pandas as pd

from .. import __version__
from ..data.stand_in import SEALED
from ..explore.plan import RADIUS_UNITS, describe
from .commit import PRE_REGISTERED
from .report import composition_table, ledger_table, privacy_statement, release_figure

README_NAME = "README.txt"

_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("fdp_core", "templates"), autoescape=True,
                                undefined=jinja2.StrictUndefined, trim_blocks=True)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


_TEMPLATES.filters["fmt"] = _fmt


def _table(frame: pd.DataFrame) -> dict:
    return {"columns": [str(c) for c in frame.columns], "rows": [list(row) for row in frame.itertuples(index=False)]}


def parts_table(committed) -> pd.DataFrame:
    """One row per part: what was asked, what it cost, the accuracy it buys (public)."""
    rows = []
    for row, planned in zip(committed.index()["parts"], committed.plan.parts):
        s = planned.statistic
        asked = (f"95% radius <= {s.target:g}" if s.target is not None else
                 f"weight {s.weight:g}" if s.weight is not None else f"epsilon {s.epsilon:g} stated")
        rows.append({"part": row["name"], "kind": row["kind"], "mechanism": row["mechanism"], "asked": asked,
                     "planned 95% radius": planned.radius,
                     "units": RADIUS_UNITS[s.kind].split(" (")[0],
                     "charged epsilon": row["charged_epsilon"], "charged delta": row["charged_delta"],
                     "release id": row["release_id"], "folder": row["folder"] + "/"})
    return pd.DataFrame(rows)


def plan_report_html(committed) -> str:
    """One self-contained HTML page for the whole plan (plotly.js inline once: opens offline)."""
    plan = committed.plan
    parts = []
    for i, (folder, release) in enumerate(committed.parts):
        figure = release_figure(release).to_html(full_html=False, include_plotlyjs=(i == 0),
                                                 config={"displaylogo": False}, div_id=f"fdp-plan-figure-{i}")
        parts.append({"name": plan.parts[i].statistic.name, "folder": folder, "release": release,
                      "statement": privacy_statement(release), "figure": figure})
    eps, delta = committed.charged
    seen = list(committed.looked_at)
    led = committed.ledger
    report = led.composition()
    created = committed.parts[0][1].record.get("created_utc")
    return _TEMPLATES.get_template("plan_report.html.j2").render(
        version=__version__, created=str(created), data_label=committed.data_label, n=plan.design.n,
        sealed=(seen == [SEALED]), pre_registered=(seen == [PRE_REGISTERED]), looked_at=seen,
        summary=_table(parts_table(committed)), charged=(eps, delta), whole=plan.gdp, budget=plan.budget,
        alternatives=list(plan.alternatives), words=describe(plan), parts=parts,
        ledger={"epsilon_total": led.epsilon_total, "delta_total": led.delta_total, "filter": led.filter,
                "n_entries": len(led.entries),
                "entries": _table(ledger_table(led).drop(columns=["sampler"], errors="ignore")),
                "composition": _table(composition_table(report)), "notes": list(report.notes)})


def plan_readme(committed) -> str:
    """README.txt of the plan's bundle: public facts only (ids, kinds, file roles)."""
    lines = [f"fdp release plan: {len(committed.parts)} parts committed as one act on {committed.data_label}",
             "", "PARTS"]
    for (folder, release), planned in zip(committed.parts, committed.plan.parts):
        lines.append(f"  {folder}/  {planned.statistic.name}: {release.kind} release {release.id}, mechanism "
                     f"{release.entry.mechanism}, charged epsilon {release.entry.epsilon:.4g}, delta "
                     f"{release.entry.delta:.3g}")
    eps, delta = committed.charged
    lines += [f"  total charged (basic composition): epsilon {eps:.4g}, delta {delta:.3g}", "", "FILES",
              "  report.html        publishable: one report for the whole plan (every part, its charge, the totals)",
              "  plan.json          publishable: the plan (budgets, planned radii, totals; public inputs only)",
              "  plan.yaml          publishable: the plan as given; commit it again (fresh noise, a new charge) with",
              "                     python -m fdp_core plan plan.yaml --data DATA_FILE --commit",
              "  plan_release.json  publishable: each part's release id, charge and accuracy; what was looked at",
              "  ledger.json        publishable: the privacy ledger after the plan",
              "  part-<i>-<kind>/   publishable: each part's own bundle (release.csv, release.json, config.yaml,",
              "                     report.html, release.py to verify it; see its README.txt)",
              "",
              "NOT to be published: analyst_view.json (in a part's folder when the command line wrote it, marked",
              "\"publishable\": false): counts and errors computed from the data without noise.",
              "",
              "HOW TO VERIFY: in each part's folder run  python release.py DATA_FILE  (draws nothing, spends nothing)."]
    return "\n".join(lines) + "\n"
