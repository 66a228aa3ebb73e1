"""``python -m fdp_core replay CONFIG --data PATH [--out DIR]``: a committed release again, fresh noise.

CONFIG is the config.yaml of an exported release (app download or CLI folder). The replay
uses the same settings, the same exact discrete sampler and grid, and fresh OS entropy, and
is checked against a fresh ledger holding the config's budget: it is a new release and
spends privacy budget of its own.
"""

from __future__ import annotations

from pathlib import Path

from ..data import MISSING_POLICIES
from ..export import data_mismatch, export_folder, parse_config, replay

PATH = ("replay",)
HELP = "replay an exported release's config.yaml on a data file: same settings, fresh exact discrete noise"


def configure(parser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="config.yaml written by an export")
    parser.add_argument("--data", required=True, help="wide CSV, long CSV (id,t,value) or Parquet file")
    parser.add_argument("--missing", choices=MISSING_POLICIES, default=None,
                        help="override the config's missing-value policy (drop or interpolate)")
    parser.add_argument("--out", default=None, help="output folder (default: <config name>_replay next to CONFIG)")


def run(args) -> int:
    config = parse_config(Path(args.config))
    if args.missing is not None:
        config["data"]["missing"] = args.missing
    release, ledger = replay(config, args.data)
    out = Path(args.out) if args.out else Path(args.config).with_name(f"{Path(args.config).stem}_replay")
    export_folder(release, out, ledger, include_analyst_view=True)
    e = release.entry
    print(f"wrote {out}/ (release.csv, coefficients.csv, release.json, config.yaml, ledger.json, report.html; "
          "analyst_view.json is NOT for publication): "
          f"{release.kind} {e.mechanism}, n={release.record.get('n')}, charged epsilon {e.epsilon:.4g}, "
          f"delta {e.delta:.3g}")
    note = data_mismatch(config, release)
    if note:
        print(f"note: {note}")
    return 0
