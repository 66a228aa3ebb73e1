"""``python -m fdp_core tradeoff``: error of every mean mechanism along a parameter sweep.

Writes DIR/tradeoff.csv (param, value, mechanism, expected_sq_l2_error, Monte Carlo
quantiles, note) and DIR/tradeoff.html, a self-contained plotly report that opens offline.
The errors against the non-private estimate depend on the data only through n and the grid,
so neither file contains a data value.

``--param n`` is the public-n sweep: every sensitivity is proportional to 1/n, so the
noise variance at n curves is the current one times (n_data / n)^2 (tau and the grid fixed).
"""

from __future__ import annotations

from pathlib import Path

import plotly.io as pio

from ..errors import ParameterError, shown
from ..limits import MAX_MC_DRAWS, MAX_SWEEP_VALUES, check_at_most
from ..releases.mean import BAND_FIELDS, MEAN_MECHANISMS, MECHANISM_LABELS, MeanSettings
from ..publish.release import provenance_stamp, to_json
from ..settings_fields import add_options, options_of, settings_from_args
from ..explore.sweeps import PARAM_LABELS, SWEEP_PARAMS, curves_table, tradeoff_curves
from ..explore.tradeoff_figures import tradeoff_figure
from ._common import add_data_options, load_data

PATH = ("tradeoff",)
HELP = "expected error of every mean mechanism along a sweep of one parameter (CSV + offline HTML)"


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--param", required=True, choices=SWEEP_PARAMS, help="the parameter to sweep")
    parser.add_argument("--values", required=True, nargs="+",
                        help="values of the parameter, space- or comma-separated (e.g. 0.1 0.3 1 or 0.1,0.3,1)")
    parser.add_argument("--mechanism", nargs="+", default=["all"], choices=MEAN_MECHANISMS + ("all",),
                        help="one or more mechanisms, or 'all' (default)")
    # Every mean setting but the mechanism (swept above), the bands and raw_release (errors are those of the
    # release as drawn), none required: the sweep starts from the defaults.
    add_options(parser, MeanSettings, fields=[name for name, _ in options_of(MeanSettings)
                                              if name not in ("mechanism", "raw_release") and name not in BAND_FIELDS],
                required=(), overrides={"tau_from_data": {"help": "use max curve norm (data-dependent: the settings "
                                                                  "are then NOT differentially private)"}})
    parser.add_argument("--mc-draws", type=int, default=2000,
                        help="Monte Carlo draws per mechanism for the quantile bands (0: none)")
    parser.add_argument("--quantiles", type=float, nargs=2, default=(0.1, 0.9), metavar=("LOW", "HIGH"),
                        help="quantile levels of the Monte Carlo band (default 0.1 0.9)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the Monte Carlo draws (omit: fresh)")
    parser.add_argument("--out", required=True, help="output folder (created if missing)")


def parse_values(tokens) -> list[float]:
    """Space- and/or comma-separated numbers."""
    values = []
    for token in tokens:
        for part in str(token).split(","):
            if part.strip():
                try:
                    values.append(float(part))
                except ValueError:
                    raise ParameterError(f"--values: {shown(part.strip())} is not a number") from None
                if len(values) > MAX_SWEEP_VALUES:  # counted while parsing: 10^5 values are refused at once
                    raise ParameterError(f"--values: more than {MAX_SWEEP_VALUES} values; the limit is "
                                         f"{MAX_SWEEP_VALUES} (each is a full release per mechanism, fdp_core/limits.py)")
    if not values:
        raise ParameterError("--values needs at least one number")
    return values


def run(args) -> int:
    values = parse_values(args.values)
    mechanisms = MEAN_MECHANISMS if "all" in args.mechanism else tuple(dict.fromkeys(args.mechanism))
    if args.mc_draws < 0:
        raise ParameterError(f"--mc-draws must be >= 0, got {args.mc_draws}")
    check_at_most("--mc-draws", args.mc_draws, MAX_MC_DRAWS, "every draw is a vector per mechanism and sweep point")
    levels = tuple(args.quantiles)  # LOW HIGH: reversed levels are refused, not silently sorted
    if not 0 < levels[0] < levels[1] < 1:
        raise ParameterError(f"--quantiles must be two levels LOW HIGH with 0 < LOW < HIGH < 1, got "
                             f"{' '.join(f'{q:g}' for q in args.quantiles)}")
    settings = settings_from_args(MeanSettings, args, mechanism=mechanisms[0])
    fd = load_data(args)
    curves = tradeoff_curves(fd, settings, args.param, values, mechanisms=mechanisms, mc_draws=args.mc_draws,
                             quantile_levels=levels, seed=args.seed)
    table = curves_table(curves)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "tradeoff.csv", index=False)
    fig = tradeoff_figure(curves, labels=MECHANISM_LABELS)
    flags = ["tau computed from the data: these settings are NOT differentially private"] if args.tau_from_data else []
    notes = [f"{c.mechanism}: {c.invalid or '; '.join(c.notes)}" for c in curves if c.invalid or c.notes]
    html = pio.to_html(fig, include_plotlyjs=True, full_html=True)
    header = _header_html(args, settings, fd.n, fd.m, flags, notes)
    (out / "tradeoff.html").write_text(html.replace("<body>", "<body>" + header, 1), encoding="utf-8")
    print(f"wrote {out}/tradeoff.csv and {out}/tradeoff.html ({len(mechanisms)} mechanism(s) x "
          f"{len(values)} values of {args.param})")
    return 0


def _header_html(args, settings, n, m, flags, notes) -> str:
    import html

    settings_json = to_json({"param": args.param, "settings": {k: v for k, v in vars(settings).items()
                                                               if k != "mechanism"},
                             "n": n, "m": m, "mc_draws": args.mc_draws, "seed": args.seed, **provenance_stamp()})
    items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
    warnings = "".join(f"<p style='color:#b00'><b>{html.escape(f)}</b></p>" for f in flags)
    return (f"<div style='font-family:sans-serif;max-width:60em;margin:1em'>"
            f"<h2>fdp trade-off: L2 error vs {html.escape(PARAM_LABELS[args.param])}</h2>"
            f"{warnings}"
            "<p>Lines: closed-form root-mean-square error sqrt E||release - non-private estimate||^2 in the "
            "curves' units (L2 over the domain rescaled to [0, 1]; the CSV keeps the squared figure); bands: "
            "Monte Carlo quantiles of ||release - estimate|| over sanitized draws (numpy generator: "
            "idealised real-arithmetic DP, exploration only); stars: the current setting. These numbers depend "
            "on the data only through n and the grid; no data value is in this file."
            + (" For the n sweep the noise variance is scaled as (n_data / n)^2 at fixed tau." if args.param == "n"
               else "")
            + f"</p>{'<ul>' + items + '</ul>' if items else ''}"
            f"<details><summary>settings and provenance</summary><pre>{html.escape(settings_json)}</pre></details>"
            "</div>")
