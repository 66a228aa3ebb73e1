"""``python -m fdp_core release kde-counts``: a sanitized density from a value,count table (METHODS.md 15)."""

from __future__ import annotations

from ..data.counts import load_counts
from ..releases.kde import KdeSettings, plan_kde_release, release_record, release_table
from ..releases.postprocess import finish_density
from ..publish.release import write_release
from ..settings_fields import add_options, settings_from_args
from ._common import add_output_options, rng_from

PATH = ("release", "kde-counts")
HELP = "release a differentially private density from a value,count table (one individual per count unit)"


# The density options that make sense without curves (no feature, person or value range).
FIELDS = ("mechanism", "epsilon", "delta", "box", "bandwidth", "grid_size", "kernel", "rho", "nu", "eta", "bound",
          "calibration", "raw_release")


def configure(parser) -> None:
    parser.add_argument("--counts", required=True, help="CSV with the columns value,count")
    add_options(parser, KdeSettings, fields=FIELDS, overrides={
        "box": {"help": "public range LO,HI of the values; values are clipped to it"},
        "bandwidth": {"help": "Gaussian bandwidth h > 0 in value units (default: box width * n^(-1/5))"},
        "grid_size": {"help": "grid points (default 512)"}})
    add_output_options(parser)


def run(args) -> int:
    settings = settings_from_args(KdeSettings, args, fields=FIELDS)
    points = load_counts(args.counts)
    plan = plan_kde_release(points, settings)
    finished = finish_density(plan.sample(rng_from(args), 1)[0], plan.weights, settings)  # free post-processing
    record = release_record(plan, feature="value (from a value,count table: one individual per count unit)",
                            seed=args.seed, raw_release=settings.raw_release)
    record["source"] = "counts"
    write_release(args.out, record, release_table(plan, finished.values), finished.analyst_fields(plan.weights))
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism} KDE from counts, "
          f"n={plan.n} individuals)")
    return 0
