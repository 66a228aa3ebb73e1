"""``python -m fdp_core release kde``: one sanitized density of a per-curve feature."""

from __future__ import annotations

from ..box import parse_box
from ..features import features_label, person_features
from ..kde import KDE_MECHANISMS, KdeSettings, analyst_view, plan_kde_release, release_record, release_table
from ..mechanisms.calibration import CALIBRATIONS
from ..preprocess import parse_value_range
from ..release import write_release
from ..sensitivity import KDE_BOUNDS
from ._common import (add_data_options, add_engine_options, add_kernel_options, add_output_options, engine_of,
                      load_data, rng_from, stream_options)

PATH = ("release", "kde")
HELP = "release a differentially private density (KDE) of a per-curve feature or a numeric column"


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--feature", required=True,
                        help="per-curve feature: value:T0, mean:U:V, l2norm, max or column:NAME; two joined by ',' "
                             "for a 2-d density (T0, U, V in the units of the file's grid)")
    parser.add_argument("--mechanism", choices=KDE_MECHANISMS, default="gaussian",
                        help="gaussian: Hall et al. GP noise, (epsilon, delta)-DP; iclp: ICLP-KDE, pure epsilon-DP")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) (gaussian mechanism only)")
    parser.add_argument("--box", required=True,
                        help="public box LO,HI (1-d) or LO1,HI1,LO2,HI2 (2-d); observations are clipped to it. "
                             "Write --box=-1,2 when LO is negative")
    bandwidth = parser.add_mutually_exclusive_group()
    bandwidth.add_argument("--bandwidth", type=float, default=None,
                           help="Gaussian bandwidth h > 0 in feature units (default: box width * n^(-1/(4+d)))")
    bandwidth.add_argument("--bandwidth-from-data", action="store_true",
                           help="Silverman's rule (data-dependent: the release is then NOT differentially private)")
    parser.add_argument("--grid-size", type=int, default=None,
                        help="grid points per axis (default 512 in 1-d, 64 in 2-d)")
    add_kernel_options(parser, required=False)
    parser.set_defaults(kernel="matern32")
    parser.add_argument("--eta", type=float, default=1.5, help="ICLP estimation kernel power eta > 1")
    parser.add_argument("--bound", choices=KDE_BOUNDS, default="exact")
    parser.add_argument("--person-column", default=None, metavar="NAME",
                        help="metadata column identifying the person behind each curve: one observation per "
                             "person (the average of their curves' features, each clipped to the box first)")
    parser.add_argument("--value-range", default=None, metavar="LO,HI",
                        help="public range of the curve values: curves are clipped pointwise to it before their "
                             "features are computed")
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="analytic")
    add_engine_options(parser)
    add_output_options(parser)


def settings_from_args(args) -> KdeSettings:
    return KdeSettings(mechanism=args.mechanism, box=parse_box(args.box), epsilon=args.epsilon, delta=args.delta,
                       bandwidth=args.bandwidth, data_dependent_bandwidth=args.bandwidth_from_data,
                       grid_size=args.grid_size, bound=args.bound, calibration=args.calibration, kernel=args.kernel,
                       rho=args.rho, nu=args.nu, eta=args.eta, person_column=args.person_column,
                       value_range=None if args.value_range is None else parse_value_range(args.value_range))


def run(args) -> int:
    settings = settings_from_args(args)
    engine = engine_of(args)
    if engine == "local":
        fd = load_data(args)
        obs = person_features(fd, args.feature, settings.box, person_column=settings.person_column,
                              value_range=settings.value_range)
        points, features, n_dropped = obs.points, obs.features, fd.report.n_dropped
    else:
        if engine == "stream":
            from ..stream import stream_kde_sums

            obs = stream_kde_sums(args.data, settings, args.feature, **stream_options(args))
        else:
            from ..dask_engine import dask_kde_sums

            obs = dask_kde_sums(args.data, settings, args.feature, scheduler=args.scheduler, **stream_options(args))
        points, features, n_dropped = obs.sums, obs.features, obs.n_dropped
    plan = plan_kde_release(points, settings)
    values = plan.sample(rng_from(args), 1)[0]
    record = release_record(plan, feature=features_label(features), seed=args.seed,
                            person_column=settings.person_column, value_range=settings.value_range)
    view = analyst_view(plan, n_dropped=n_dropped, n_curves=obs.n_curves, n_outside_box=obs.n_outside_box)
    write_release(args.out, record, release_table(plan, values), view)
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism} KDE, n={plan.n}, "
          f"expected squared L2 error {plan.expected_sq_l2_error:.4g}); {args.out}/analyst_view.json (with the "
          "clipping counts) is NOT for publication")
    return 0
