"""``python -m fdp_core combine SITE_DIR... --out DIR``: several sites' committed means, one curve (METHODS.md 26).

Reads only each site's publishable files (release.json, release.csv, coefficients.csv,
config.yaml, ledger.json), checks each without data (the public quantities re-derived from its
config, its curve rebuilt from its noised coefficients) and that the sites' public settings
agree, then writes the weighted sum. Charges no budget: post-processing of published files.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ParameterError

PATH = ("combine",)
HELP = "combine several sites' committed mean curves into one (post-processing: no budget charged)"


def configure(parser) -> None:
    parser.add_argument("sites", nargs="+", metavar="SITE_DIR", help="a site's committed bundle folder (two or more)")
    parser.add_argument("--out", required=True, help="output folder (created if missing)")
    parser.add_argument("--labels", nargs="+", default=None, metavar="LABEL",
                        help="one label per site, in order (default: the folders' names)")
    parser.add_argument("--sampling-variance", type=float, default=None, metavar="V",
                        help="declared public sampling term v = tr(S Sigma S) for the weights, used when not every "
                             "site released a second moment (default: 0, noise-only weights)")


def run(args) -> int:
    from ..publish.combine import combine_sites  # lazy: numpy/scipy only when the command runs
    from ..publish.combine_files import export_folder  # lazy: as above
    from ..publish.site_bundle import read_dir  # lazy: as above
    from ..budget.ledger_store import check_name  # lazy: as above

    if args.labels is not None and len(args.labels) != len(args.sites):
        raise ParameterError(f"--labels gives {len(args.labels)} labels for {len(args.sites)} sites")
    # Labels given are names (refused when they hold control or bidirectional characters); the
    # folders' names are cleaned of those instead (site_bundle.site_label).
    labels = ([check_name(label, "site label") for label in args.labels] if args.labels is not None
              else [Path(p).resolve().name for p in args.sites])
    combined = combine_sites([read_dir(p, label) for p, label in zip(args.sites, labels)],
                             sampling_variance=args.sampling_variance)
    export_folder(combined, args.out)
    weights = ", ".join(f"{s.label} {w:.4f}" for s, w in zip(combined.sites, combined.weights))
    print(f"wrote {args.out}/ (release.csv, release.json, report.html, README.txt): combined mean of "
          f"{len(combined.sites)} sites, weights {weights}; expected squared L2 error "
          f"{combined.expected_sq_l2_error:.4g} (best single site {min(combined.site_errors):.4g}); "
          f"sampling term v = {combined.sampling_variance:.4g} from {combined.source}; no budget charged")
    return 0
