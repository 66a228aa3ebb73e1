"""``python -m fdp_core release kde-counts``: a sanitized density from a value,count table (METHODS.md 15)."""

from __future__ import annotations

from ..box import parse_box
from ..counts import load_counts
from ..kde import KDE_MECHANISMS, KdeSettings, plan_kde_release, release_record, release_table
from ..mechanisms.calibration import CALIBRATIONS
from ..release import write_release
from ..sensitivity import KDE_BOUNDS
from ._common import add_kernel_options, add_output_options, rng_from

PATH = ("release", "kde-counts")
HELP = "release a differentially private density from a value,count table (one individual per count unit)"


def configure(parser) -> None:
    parser.add_argument("--counts", required=True, help="CSV with the columns value,count")
    parser.add_argument("--mechanism", choices=KDE_MECHANISMS, default="gaussian",
                        help="gaussian: Hall et al. GP noise, (epsilon, delta)-DP; iclp: ICLP-KDE, pure epsilon-DP")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) (gaussian mechanism only)")
    parser.add_argument("--box", required=True, help="public range LO,HI of the values; values are clipped to it")
    parser.add_argument("--bandwidth", type=float, default=None,
                        help="Gaussian bandwidth h > 0 in value units (default: box width * n^(-1/5))")
    parser.add_argument("--grid-size", type=int, default=None, help="grid points (default 512)")
    add_kernel_options(parser, required=False)
    parser.set_defaults(kernel="matern32")
    parser.add_argument("--eta", type=float, default=1.5, help="ICLP estimation kernel power eta > 1")
    parser.add_argument("--bound", choices=KDE_BOUNDS, default="exact")
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="analytic")
    add_output_options(parser)


def run(args) -> int:
    settings = KdeSettings(mechanism=args.mechanism, box=parse_box(args.box), epsilon=args.epsilon, delta=args.delta,
                           bandwidth=args.bandwidth, grid_size=args.grid_size, bound=args.bound,
                           calibration=args.calibration, kernel=args.kernel, rho=args.rho, nu=args.nu, eta=args.eta)
    points = load_counts(args.counts)
    plan = plan_kde_release(points, settings)
    values = plan.sample(rng_from(args), 1)[0]
    record = release_record(plan, feature="value (from a value,count table: one individual per count unit)",
                            seed=args.seed)
    record["source"] = "counts"
    write_release(args.out, record, release_table(plan, values))
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism} KDE from counts, "
          f"n={plan.n} individuals)")
    return 0
