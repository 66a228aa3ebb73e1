"""The combined release's files: release.csv, release.json, report.html, README.txt (METHODS.md 26).

Everything here is computed from the sites' published files (their noised curves, their public
settings and noise laws), so every file is publishable and nothing is charged.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import jinja2
import markupsafe
import numpy as np
import pandas as pd

from .. import __version__
from .combine import LEVEL, SCHEMA, SOURCES, Combined
from .commit import csv_text
from .release import to_json, write_files

README_NAME = "README.txt"
FILES = ("release.csv", "release.json", "report.html", README_NAME)
BAND_COLUMNS = ("privacy_lower", "privacy_upper", "ci_lower", "ci_upper")

_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("fdp_core", "templates"), autoescape=True,
                                undefined=jinja2.StrictUndefined, trim_blocks=True)


def site_rows(combined: Combined) -> list[dict]:
    """One object per site: who it is, its guarantee, its weight and its own expected error."""
    return [{"label": s.label, "n": s.n, "epsilon": float(s.record["epsilon"]), "delta": float(s.record["delta"]),
             "privacy": s.record.get("privacy"), "mechanism": s.record.get("mechanism"), "weight": float(w),
             "release_id": s.release_id, "noise_expected_sq_l2_error": s.noise_sq_l2_error,
             "expected_sq_l2_error": float(e), "has_second_moment": s.has_bands}
            for s, w, e in zip(combined.sites, combined.weights, combined.site_errors)]


def combined_record(combined: Combined) -> dict:
    first = combined.sites[0]
    s = first.settings
    record = {
        "schema": SCHEMA, "kind": "combined mean", "publishable": True, "differentially_private": True,
        "sites": site_rows(combined),
        "expected_sq_l2_error": combined.expected_sq_l2_error,
        "expected_sq_l2_error_meaning": "E||mu - m_S||^2 = sum_k w_k^2 (v / n_k + E||Z_k||^2): the squared L2 "
                                        "distance to the smoothed population mean m_S, sampling and noise",
        "best_single_site_expected_sq_l2_error": float(np.min(combined.site_errors)),
        "weights": {"rule": "w_k proportional to 1 / (v / n_k + E||Z_k||^2), summing to 1 (METHODS.md 26)",
                    "sampling_variance": combined.sampling_variance,
                    "sampling_variance_meaning": "v = tr(S Sigma S), the sampling term of one person",
                    "sampling_variance_source": combined.source,
                    "sampling_variance_from": SOURCES[combined.source]},
        "combination": "mu(t) = sum_k w_k mu_k(t), mu_k the sites' published curves (release.csv after their "
                       "own post-processing); no further post-processing",
        "budget": "none charged: the combination is post-processing of the sites' published files; each person "
                  "is protected at their own site's guarantee (the sites' epsilons do not add up: the persons "
                  "are disjoint)",
        "assumption": "the sites hold disjoint persons (each person at one site only): an assumption, stated, "
                      "not checked",
        "public_settings": {"kernel": s.kernel, "nu": s.nu, "rho": s.rho, "eta": s.eta, "phi": s.phi,
                            "value_range": s.value_range, "tau": first.plan.tau, "centre": first.record.get("centre"),
                            "m": int(combined.grid.size)},
        "n": int(sum(site.n for site in combined.sites)),
        "library_version": __version__,
    }
    if combined.bands is not None:
        b = combined.bands
        record["band"] = {
            "level": b["level"], "privacy_quantile": b["privacy_quantile"],
            "confidence_quantile": b["confidence_quantile"], "n_draws": b["n_draws"],
            "simulation_seed": b["simulation_seed"],
            "privacy_band": "where the combined noise sum_k w_k Z_k may have put this curve (its law simulated "
                            "from the sites' published noise laws, sup quantile)",
            "confidence_band": "where the smoothed population mean m_S lies, given sampling and noise: sd from the "
                               "sites' noise laws and their sampling variances read off their bands; the quantile "
                               "is a union bound over the grid (valid whatever the sampling correlation, which "
                               "the sites did not publish), never below the Gaussian one",
            "covers": "m_S = c + S E[Y - c], not E[Y]: the smoothing bias is outside",
        }
    return record


def combined_table(combined: Combined) -> pd.DataFrame:
    table = {"t": combined.grid, "value": combined.values}
    if combined.bands is not None:
        table.update({name: combined.bands[name] for name in BAND_COLUMNS})
    return pd.DataFrame(table)


def svg_chart(grid: np.ndarray, curves: dict, band: tuple | None = None, width: int = 640, height: int = 300) -> str:
    """A small line chart as inline SVG (no script): the sites' curves thin, the combined curve bold."""
    ys = np.concatenate([np.asarray(v, dtype=float) for v in curves.values()] + ([*band] if band else []))
    lo, hi = float(np.min(ys)), float(np.max(ys))
    hi = hi if hi > lo else lo + 1.0
    x0, x1 = float(grid[0]), float(grid[-1]) if grid[-1] > grid[0] else float(grid[0]) + 1.0

    def points(values) -> str:
        px = 40 + (np.asarray(grid, dtype=float) - x0) / (x1 - x0) * (width - 60)
        py = height - 30 - (np.asarray(values, dtype=float) - lo) / (hi - lo) * (height - 50)
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py))

    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
             f'<rect x="40" y="20" width="{width - 60}" height="{height - 50}" fill="none" stroke="#ccc"/>',
             f'<text x="2" y="24" font-size="11">{hi:.3g}</text><text x="2" y="{height - 30}" font-size="11">{lo:.3g}</text>',
             f'<text x="40" y="{height - 12}" font-size="11">t = {x0:.3g}</text>'
             f'<text x="{width - 80}" y="{height - 12}" font-size="11">t = {x1:.3g}</text>']
    if band is not None:
        lower_back = " ".join(reversed(points(band[0]).split()))  # the upper edge out, the lower edge back
        parts.append(f'<polygon points="{points(band[1])} {lower_back}" fill="#d62728" fill-opacity="0.15" '
                     'stroke="none"/>')
    for i, (name, values) in enumerate(curves.items()):
        last = i == len(curves) - 1
        colour = "#d62728" if last else colours[i % len(colours)]
        parts.append(f'<polyline points="{points(values)}" fill="none" stroke="{colour}" '
                     f'stroke-width="{2.5 if last else 1.2}"/>')
        parts.append(f'<text x="{width - 15}" y="{36 + 14 * i}" font-size="11" text-anchor="end" fill="{colour}">'
                     f'{markupsafe.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def report_html(combined: Combined, record: dict) -> str:
    curves = {site.label: site.values for site in combined.sites}
    curves["combined"] = combined.values
    band = None if combined.bands is None else (combined.bands["ci_lower"], combined.bands["ci_upper"])
    chart = svg_chart(combined.grid, curves, band)
    return _TEMPLATES.get_template("combine_report.html.j2").render(
        record=record, sites=record["sites"], chart=markupsafe.Markup(chart), level=LEVEL)


def readme_text(record: dict) -> str:
    sites = "\n".join(f"  {s['label']}: release {s['release_id']}, n = {s['n']}, epsilon {s['epsilon']:g}, "
                      f"delta {s['delta']:g}, weight {s['weight']:.4f}" for s in record["sites"])
    return f"""fdp combined mean of {len(record['sites'])} sites

SITES
{sites}

FILES (all publishable)
  release.csv   the combined curve: t, value = sum_k w_k x (site k's published curve){'; bands' if 'band' in record else ''}
  release.json  the sites (label, n, epsilon, delta, weight, release id), the weights' rule and the
                sampling term they used, the expected squared L2 error
  report.html   a readable report of the same (opens offline)
  README.txt    this file

WHAT IT IS
Each site released its own differentially private mean from its own persons and its own budget.
This combination reads only the sites' published files, so it is post-processing: it charges no
budget, and each person keeps the guarantee of the site that holds their data. The sites are
assumed to hold disjoint persons.

HOW TO CHECK
With the sites' bundles at hand:  python -m fdp_core combine SITE_DIR... --out DIR
recomputes these files (the sites' checks need no data; the bands' simulation has a public seed).
"""


def combined_files(combined: Combined) -> dict[str, bytes]:
    record = combined_record(combined)
    files = {"release.csv": csv_text(combined_table(combined)), "release.json": to_json(record),
             "report.html": report_html(combined, record), README_NAME: readme_text(record)}
    return {name: text.encode("utf-8") for name, text in files.items()}


def export_zip(combined: Combined) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in combined_files(combined).items():
            archive.writestr(f"fdp_combined/{name}", content)
    return buffer.getvalue()


def export_folder(combined: Combined, out_dir) -> Path:
    """Every file to a temporary name first, renamed at the end (no half-written bundle)."""
    return write_files(out_dir, combined_files(combined))
