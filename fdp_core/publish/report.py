"""What a stakeholder reads: ledger and risk tables, figures and the self-contained HTML report.

Everything here is built from a :class:`~fdp_core.publish.commit.CommittedRelease` and its ledger:
publishable material only (no data, no non-private estimate).
"""

from __future__ import annotations

import html
import json
import math

import jinja2
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import __version__
from ..budget.accounting import CompositionReport, Ledger, LedgerEntry, basic_composition, cks_delta, compose
from ..budget.privacy_events import composed_total_words
from ..errors import ParameterError
from .commit import (NOT_DP_WARNING, NOTHING_DECLARED, ON_GRID_NOTE, PRE_REGISTERED, SUMMARY_COMMIT_KINDS,
                     CommittedRelease)
from ..explore.risk import approx_dp_power, gdp_power, report_power

ALPHA_SENTENCE = 0.05


# --------------------------------------------------------------------------- ledger and risk views

def native_parameter(entry: LedgerEntry) -> str:
    """The release's own privacy parameter, as the ledger composes it."""
    return entry.event.native()


def ledger_table(ledger: Ledger) -> pd.DataFrame:
    """One row per committed release with its native parameters and its (epsilon, delta) charge."""
    rows = [{"id": e.id, "release": e.label, "kind": e.kind, "mechanism": e.mechanism,
             "native parameter": native_parameter(e), "epsilon": e.epsilon, "delta": e.delta, "rho": e.rho,
             "mu": e.mu, "sampler": e.noise.get("sampler", ""), "committed (UTC)": e.timestamp}
            for e in ledger.entries]
    columns = ["id", "release", "kind", "mechanism", "native parameter", "epsilon", "delta", "rho", "mu", "sampler",
               "committed (UTC)"]
    return pd.DataFrame(rows, columns=columns)


METHOD_LABELS = {"basic": "basic (sum of epsilon and delta)", "gdp+basic": "GDP for Gaussian releases + basic",
                  "zcdp": "zCDP (sum of rho, CKS conversion)"}


def composition_table(report: CompositionReport) -> pd.DataFrame:
    """Every valid total at the target delta, with the one that won (smallest epsilon) marked."""
    present = {t.method: t for t in report.totals}
    rows = []
    for method in ("basic", "gdp+basic", "zcdp"):
        t = present.get(method)
        if t is None:
            why = ("no continuous Gaussian release (discrete-Gaussian exports are accounted in zCDP)"
                   if method == "gdp+basic" else "needs a target delta > 0 and at least one release")
            rows.append({"composition": METHOD_LABELS[method], "epsilon": None, "delta": None,
                         "valid at target delta": False, "best": False, "detail": f"not applicable: {why}"})
            continue
        valid = t.delta <= report.delta_target * (1 + 1e-12)
        rows.append({"composition": METHOD_LABELS[method], "epsilon": t.epsilon, "delta": t.delta,
                     "valid at target delta": valid, "best": report.best is not None and report.best is t,
                     "detail": t.detail})
    return pd.DataFrame(rows)


def entry_power(entry: LedgerEntry, alpha) -> np.ndarray:
    """Largest power of any membership test against this one release at false-positive rate alpha.

    Discrete Gaussian (zCDP): rho-zCDP gives (eps, cks_delta(rho, eps))-DP for every eps,
    so the power is at most the minimum over eps of the (eps, delta) bounds.
    """
    a = np.asarray(alpha, dtype=float)
    if entry.event.gaussian:
        return gdp_power(a, entry.mu)
    best = approx_dp_power(a, entry.epsilon, entry.delta)
    if entry.event.accounted_by_rho:
        for eps in np.linspace(0.0, 3.0 * entry.epsilon + 1.0, 61):
            d = cks_delta(entry.rho, float(eps))
            if d < 1:
                best = np.minimum(best, approx_dp_power(a, float(eps), d))
    return best


def ledger_power(ledger: Ledger, alpha) -> np.ndarray:
    """Power bound for every committed release together (parameters fixed in advance).

    The smaller of the best composed total's bound (risk.report_power) and, when the
    ledger has a zCDP total, the envelope of the (eps, cks_delta(rho_total, eps)) bounds.
    """
    a = np.asarray(alpha, dtype=float)
    report = ledger.composition()
    if report.best is None:
        raise ParameterError("the ledger has no valid total at its delta, so there is no power bound")
    best = report_power(report, a)
    if report.n_approximate == 0 and report.rho_total > 0 and report.delta_target > 0:
        for eps in np.linspace(0.0, 3.0 * report.best.epsilon + 1.0, 61):
            d = cks_delta(report.rho_total, float(eps))
            if d < 1:
                best = np.minimum(best, approx_dp_power(a, float(eps), d))
    return best


def power_sentence(power_at_alpha: float, alpha: float = ALPHA_SENTENCE) -> str:
    return (f"An adversary who wrongly accuses at most {alpha:.0%} of non-members can correctly detect at most "
            f"{power_at_alpha:.1%} of members (random guessing detects {alpha:.0%}; no protection at all would "
            "allow 100%).")


def epsilon_headline(release: CommittedRelease) -> tuple[str, str]:
    """One headline epsilon per release, the one charged to the ledger, and a details line naming
    the other epsilons a reader meets (the calibration's, the ledger's composed total)."""
    e = release.entry
    headline = (f"Privacy cost of this release: epsilon = {e.epsilon:.4g}" + (f", delta = {e.delta:.3g}"
                                                                             if e.delta > 0 else " (delta = 0)")
                + " (charged to the ledger).")
    calibrated = release.record.get("epsilon")
    details = []
    total = release.record.get("charged_total")
    if total and len(release.part_entries) > 1:  # several parts (A and b of a sparse mean): all are charged
        return _parts_headline(release, total)
    if isinstance(calibrated, (int, float)) and not math.isclose(float(calibrated), e.epsilon, rel_tol=1e-9):
        details.append(f"the noise was calibrated at epsilon = {float(calibrated):g}; the exact discrete sampler's "
                       f"own privacy map gives the charged {e.epsilon:.4g} (a little more: its privacy map's "
                       "conversion to (epsilon, delta) and its grid and floating-point allowance)")
    details.append("the ledger's composed total over all the budget's releases is a different number (the "
                   "ledger section), usually smaller than the sum of the charges")
    return headline, "Details: " + "; ".join(details) + "."


def _parts_headline(release: CommittedRelease, total: dict) -> tuple[str, str]:
    """The headline of a release made of several ledger entries: the sum of their charges."""
    parts = release.part_entries
    delta = total["delta"]
    each = ", ".join(f"{p.mechanism}: epsilon {p.epsilon:.4g}" + (f", delta {p.delta:.3g}" if p.delta > 0 else "")
                     for p in parts)
    headline = (f"Privacy cost of this release: epsilon = {total['epsilon']:.4g}"
                + (f", delta = {delta:.3g}" if delta > 0 else " (delta = 0)")
                + f" (its {len(parts)} parts together, each charged to the ledger: {each}).")
    details = []
    composed = total.get("composed")
    if composed and composed["epsilon"] < total["epsilon"] * (1 - 1e-9):
        details.append(f"composed by the ledger ({composed['method']}), the parts together guarantee epsilon = "
                       f"{composed['epsilon']:.4g} at delta = {composed['delta']:.3g}, less than the sum")
    details.append("each part's noise was calibrated at its share of the settings' epsilon; the exact discrete "
                   "sampler's own privacy map gives the charges (a little more: its conversion to (epsilon, delta) "
                   "and its grid and floating-point allowance)")
    details.append("the ledger's composed total over all the budget's releases is a different number (the "
                   "ledger section)")
    return headline, "Details: " + "; ".join(details) + "."


def release_guarantee(release: CommittedRelease) -> tuple[float, float]:
    """(epsilon, delta) of the release as a whole: its one entry's, or for several parts the tightest
    total the ledger's composition gives for them together (the sum when nothing tighter applies)."""
    parts = release.part_entries
    if len(parts) == 1:
        return parts[0].epsilon, parts[0].delta
    epsilon, delta = basic_composition(parts)
    best = compose(parts, delta).best
    return (best.epsilon, best.delta) if best is not None else (epsilon, delta)


def release_power(release: CommittedRelease, alpha) -> np.ndarray:
    """Largest power of a membership test against the release: every part it charged together."""
    parts = release.part_entries
    if len(parts) == 1:
        return entry_power(parts[0], alpha)
    epsilon, delta = basic_composition(parts)
    return ledger_power(Ledger(epsilon, delta, entries=list(parts)), alpha)


def privacy_statement(release: CommittedRelease) -> list[str]:
    """Plain-language statement of the guarantee, as a list of paragraphs (the headline epsilon first)."""
    e = release.entry
    out = list(epsilon_headline(release))
    if release.flags:
        out.append("WARNING: " + NOT_DP_WARNING + ": " + "; ".join(release.flags) + ".")
    person = release.record.get("person_column")
    unit = (f"one person's data (all curves sharing a value of '{person}')" if person else
            "one individual's curve" if release.kind != "kde" else "one individual's observation")
    unit = release.record.get("unit_statement") or unit  # a route's own unit (sparse: a person's observations)
    parts = release.part_entries
    if len(parts) == 1:
        out.append(e.event.statement())
    else:
        out.append(f"This release has {len(parts)} noisy parts, each a ledger entry: "
                   + " ".join(f"{p.mechanism}: {p.event.statement()}" for p in parts))
    epsilon, delta = release_guarantee(release)
    out.append(f"In plain words: replacing {unit} by any other changes the probability of any published result "
               f"by at most a factor e^epsilon = {math.exp(epsilon):.3g}"
               + (f", except with probability delta = {delta:.3g}." if delta > 0 else "."))
    p = float(release_power(release, ALPHA_SENTENCE))
    out.append(power_sentence(p))
    out.append("The guarantee holds whatever else an attacker knows, including every other individual's data, "
               "and for any analysis of the published files. Privacy losses of several releases add up: see the "
               "ledger of this data set's budget (the report's 'Session ledger').")
    return out


# --------------------------------------------------------------------------- figures

PRIVATE_COLOR = "#1f77b4"
# Room for tick labels and axis titles (10 px margins clipped them in the report); automargin
# grows a side further when long tick labels need it.
FIGURE_MARGIN = dict(l=80, r=30, t=60, b=70)
_AXIS = dict(automargin=True, title_standoff=12)


def _finish_layout(fig: go.Figure, **layout) -> go.Figure:
    fig.update_layout(margin=FIGURE_MARGIN, **layout)
    fig.update_xaxes(**_AXIS)
    fig.update_yaxes(**_AXIS)
    return fig


def axis_titles(release: CommittedRelease) -> tuple[str, str]:
    """The user's names of the curve argument and the value (the app's Data page, carried in
    record["axis_labels"]; public words, not data), else "t" and "value"."""
    labels = release.record.get("axis_labels") or {}
    return str(labels.get("t") or "t"), str(labels.get("value") or "value")


def release_figure(release: CommittedRelease) -> go.Figure:
    """The sanitized output only (never the non-private estimate)."""
    t = release.table
    t_title, value_title = axis_titles(release)
    fig = go.Figure()
    if release.kind == "mean":
        fig.add_trace(go.Scatter(x=t["t"].tolist(), y=t["value"].tolist(), mode="lines", name="sanitized mean",
                                 line=dict(color=PRIVATE_COLOR, width=2.5)))
        fig.update_layout(xaxis_title=t_title, yaxis_title=value_title)
    elif release.kind == "kde" and "x" in t:
        fig.add_trace(go.Scatter(x=t["x"].tolist(), y=t["density"].tolist(), mode="lines", name="sanitized density",
                                 line=dict(color=PRIVATE_COLOR, width=2.5)))
        fig.update_layout(xaxis_title=release.record.get("feature") or "x", yaxis_title="density")
    elif release.kind == "kde":
        x1, x2 = np.unique(t["x1"]), np.unique(t["x2"])
        z = t["density"].to_numpy().reshape(x1.size, x2.size)
        fig.add_trace(go.Heatmap(x=x1.tolist(), y=x2.tolist(), z=z.T.tolist(), colorscale="Viridis",
                                 name="sanitized density",
                                 colorbar=dict(title="density")))
        names = (release.record.get("feature") or "feature 1,feature 2").split(",")
        fig.update_layout(xaxis_title=names[0], yaxis_title=names[-1])
    elif release.kind == "covariance":
        grid = np.unique(t["t"])
        z = t["value"].to_numpy().reshape(grid.size, grid.size)
        # At most ~500 cells a side, as float32 binary arrays: a figure needs no more, and a 1,000-point
        # surface as lists took ~15 s of CPU in Plotly's validators (a long grid's release, issue 42).
        step = -(-grid.size // 500)
        grid, z = grid[::step], z[::step, ::step].astype(np.float32)
        fig.add_trace(go.Heatmap(x=grid, y=grid, z=z, colorscale="RdBu_r", zmid=0.0,
                                 name="sanitized covariance", colorbar=dict(title="C~(s, t)")))
        fig.update_layout(xaxis_title=f"t: {t_title}", yaxis_title=f"s: {t_title}")
    else:
        for column in [c for c in t.columns if c != "t"]:
            fig.add_trace(go.Scatter(x=t["t"].tolist(), y=t[column].tolist(), mode="lines", name=column))
        fig.update_layout(xaxis_title=t_title, yaxis_title=value_title)
    return _finish_layout(fig, title=f"Sanitized release: {html.escape(release.label)}", height=420)


def tradeoff_figure(release: CommittedRelease) -> go.Figure:
    """Root-mean-square L2 error (the curves' units) against epsilon for the chosen mechanism, chosen
    point marked; the record keeps the squared figures (``expected_sq_l2_error``) the formulas use."""
    tr = release.tradeoff
    fig = go.Figure(go.Scatter(x=tr["epsilon"], y=np.sqrt(np.maximum(tr["expected_sq_l2_error"], 0.0)).tolist(),
                               mode="lines",
                               name=release.entry.mechanism, line=dict(color=PRIVATE_COLOR, width=2)))
    # The ledger charges what the exact sampler's privacy map reports (e.g. 1.092 for a discrete
    # Gaussian calibrated at epsilon = 1): the chart names the charged value, not the nominal one.
    charged = release.entry.epsilon
    nominal = tr["chosen_epsilon"]
    name = f"this release: charged epsilon = {charged:.4g}"
    if not math.isclose(charged, nominal, rel_tol=1e-9):
        name += f" (noise calibrated at epsilon = {nominal:g})"
    fig.add_trace(go.Scatter(x=[nominal], y=[math.sqrt(max(tr["chosen_error"], 0.0))], mode="markers",
                             marker=dict(size=13, color="#d62728", symbol="star"), name=name))
    fixed = ", ".join(f"{k} = {v:g}" for k, v in tr.get("fixed", {}).items())
    return _finish_layout(fig, title="Accuracy against privacy" + (f" ({fixed})" if fixed else ""),
                          xaxis=dict(title="epsilon used to calibrate the noise (log scale)", type="log"),
                          yaxis=dict(title="L2 error, root mean square (units of the data; log scale)",
                                     type="log"), height=400,
                          legend=dict(orientation="h", yanchor="top", y=-0.25))


def power_figure(release: CommittedRelease | None, ledger: Ledger | None = None) -> go.Figure:
    """Hypothesis-testing view: the best adversary's power against its false-positive rate."""
    alpha = np.linspace(0.0, 1.0, 201)
    fig = go.Figure(go.Scatter(x=alpha.tolist(), y=alpha.tolist(), mode="lines", name="random guessing",
                               line=dict(color="grey", dash="dot")))
    if release is not None:
        fig.add_trace(go.Scatter(x=alpha.tolist(), y=release_power(release, alpha).tolist(), mode="lines",
                                 name="this release", line=dict(color=PRIVATE_COLOR, width=2.5)))
    if ledger is not None and ledger.entries:
        report = ledger.composition()
        if report.best is not None:
            fig.add_trace(go.Scatter(x=alpha.tolist(), y=ledger_power(ledger, alpha).tolist(), mode="lines",
                                     name=f"all {len(ledger.entries)} release(s) of the session ({report.best.method})",
                                     line=dict(color="#ff7f0e", width=2, dash="dash")))
    return _finish_layout(fig, title="How well can an adversary tell whether a person is in the data?",
                          xaxis=dict(title="false-positive rate (non-members wrongly accused)", range=[0, 1]),
                          yaxis=dict(title="power (members correctly detected), at most", range=[0, 1.02]),
                          height=420, legend=dict(orientation="h", yanchor="top", y=-0.2))


# --------------------------------------------------------------------------- the HTML report

def _cell(value) -> str:
    """How a value reads in a report table: '-' for missing, 6 significant digits, JSON for structures."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return str(value)


# Autoescape: every value from a record or a label is escaped; only the plotly figures
# (generated by plotly, not from user text) are marked safe in the template.
_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("fdp_core", "templates"),
                                autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True)
_TEMPLATES.filters["cell"] = _cell


def _table(frame: pd.DataFrame) -> dict:
    return {"columns": [str(c) for c in frame.columns], "rows": [list(row) for row in frame.itertuples(index=False)]}


def _ledger_context(ledger: Ledger | None) -> dict | None:
    if ledger is None:
        return None
    report = ledger.composition()
    approx = report.approximate_nominal
    return {"epsilon_total": ledger.epsilon_total, "delta_total": ledger.delta_total, "filter": ledger.filter,
            "n_entries": len(ledger.entries), "entries": _table(ledger_table(ledger).drop(columns=["sampler"])),
            "composition": _table(composition_table(report)), "notes": list(report.notes),
            "approximate": None if approx is None else f"epsilon {approx.epsilon:.4g}, delta {approx.delta:.3g}",
            # The registered data set the budget belongs to, and the custodian's reason when it was
            # registered as new data although it matched another (METHODS.md 22); public inputs.
            "dataset": getattr(ledger, "dataset", None), "dataset_reason": getattr(ledger, "dataset_reason", None)}


def report_html(release: CommittedRelease, ledger: Ledger | None = None) -> str:
    """A self-contained HTML report (plotly.js inline: opens offline); sanitized output only.

    Rendered from ``templates/report.html.j2`` with autoescaping.
    """
    r = release.record
    figures = {"release": release_figure(release),
               "tradeoff": tradeoff_figure(release) if release.tradeoff else None,
               "power": power_figure(release, ledger)}
    plots, drawn = {}, 0
    for key, fig in figures.items():
        plots[key] = None if fig is None else fig.to_html(
            full_html=False, include_plotlyjs=(drawn == 0), config={"displaylogo": False},
            div_id=f"fdp-figure-{drawn}")
        drawn += fig is not None
    seen = r.get("looked_at_before_commit") or [NOTHING_DECLARED]
    sampler = r.get("noise_sampler", {})
    params = [("mechanism", r.get("mechanism")), ("kind", release.kind),
              ("unit of privacy", r.get("unit_of_privacy")),
              ("n (persons, " + str(r.get("n_policy") or "declared public") + ")", r.get("n")),
              ("public value range", r.get("value_range")),
              ("epsilon (mechanism calibration)", r.get("epsilon")), ("delta", r.get("delta")),
              ("tau (L2 norm bound)", r.get("tau")), ("sensitivity", r.get("sensitivity")),
              ("sigma", r.get("sigma")), ("bound", r.get("bound")), ("calibration", r.get("calibration")),
              ("charged to the ledger", r.get("charged")), ("expected squared L2 error", r.get("expected_sq_l2_error"))]
    if r.get("charged_total"):  # several parts: "charged" is the last part's, this is all of them
        params.append(("charged to the ledger, all parts together", r["charged_total"]))
    if r.get("unit_declaration"):  # the analyst's deliberate choice of the unit (fdp_ui.commit_checks)
        params.insert(3, ("unit declared by the analyst", r["unit_declaration"]))
    if release.kind in ("mean", "pca") + SUMMARY_COMMIT_KINDS:
        params.append(("settings", r.get("settings")))
    if isinstance(r.get("band"), dict) and r["band"].get("composed_total"):  # mean with its confidence band
        params.append(("confidence band: both parts together", composed_total_words(r["band"]["composed_total"])))
        if r["band"].get("calibrated_total"):  # a commit: the split the noise was calibrated to, beside the charge
            params.append(("confidence band: the calibrated split", composed_total_words(r["band"]["calibrated_total"])))
    else:
        params += [("feature", r.get("feature")), ("box", r.get("box")), ("bandwidth", r.get("bandwidth"))]
    sampler_rows = [("sampler", sampler.get("sampler")), ("OpenDP version", sampler.get("opendp_version")),
                    ("entropy", sampler.get("entropy")), ("grid 2^k, k =", sampler.get("granularity_exp")),
                    ("noisy coefficients", sampler.get("n_noisy_coefficients")),
                    ("scaled sensitivity (before inflation)", sampler.get("scaled_sensitivity")),
                    ("sensitivity inflation: float allowance + grid rounding",
                     f"{sampler.get('float_allowance', 0):.3g} + {sampler.get('rounding_inflation', 0):.3g}"),
                    ("unit noise scale (inflation applied)", sampler.get("unit_noise_scale")),
                    ("privacy map", f"epsilon = {sampler.get('epsilon')}" if sampler.get("epsilon") is not None
                     else f"rho = {sampler.get('rho')}"),
                    ("post-processing", sampler.get("post_processing"))]
    if r.get("post_processing"):  # the free projection of the output (mean, density), METHODS.md 18
        sampler_rows.append(("then (free post-processing)", "; ".join(r["post_processing"])))
    versions = r.get("library_versions", {})
    return _TEMPLATES.get_template("report.html.j2").render(
        label=release.label, release_id=release.id, created=str(r.get("created_utc")),
        version=str(versions.get("fdp_core", __version__)), data_label=str(r.get("data", {}).get("label") or "-"),
        flags=list(release.flags), not_dp_warning=NOT_DP_WARNING, pre_registered=(seen == [PRE_REGISTERED]),
        looked_at=seen, statement=privacy_statement(release), plots=plots, accuracy=release.accuracy,
        verdict=r.get("verdict"),
        params=params, sampler_rows=sampler_rows, hardening=r.get("hardening_note"), on_grid_note=ON_GRID_NOTE,
        ledger=_ledger_context(ledger), versions=sorted(versions.items()))
