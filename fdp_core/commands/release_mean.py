"""``python -m fdp_core release mean``: one sanitized mean curve."""

from __future__ import annotations

import pandas as pd

from ..mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release, release_record
from ..mechanisms.calibration import CALIBRATIONS
from ..mean import analyst_view
from ..release import write_release
from ..sensitivity import BOUNDS
from ._common import (add_bounds_options, add_data_options, add_engine_options, add_kernel_options,
                      add_output_options, bounds_from_args, engine_of, load_data, rng_from, stream_options)

PATH = ("release", "mean")
HELP = "release a differentially private mean function"


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--mechanism", choices=MEAN_MECHANISMS, default="gaussian",
                        help="gaussian: (epsilon, delta)-DP; iclp-qr, iclp-ar, frl, bernstein: pure epsilon-DP "
                             "(delta ignored)")
    add_kernel_options(parser)
    parser.add_argument("--eta", type=float, default=1.5, help="smoothness exponent eta >= 1")
    parser.add_argument("--phi", type=float, default=1e-3, help="penalty phi > 0 (Gaussian mechanism)")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) for the Gaussian mechanism")
    add_bounds_options(parser)
    tau = parser.add_mutually_exclusive_group()
    tau.add_argument("--tau", type=float,
                     help="public L2 norm bound (after centring); curves are clipped to it. Required without "
                          "--value-range, which implies tau = (HI - LO)/2")
    tau.add_argument("--tau-from-data", action="store_true",
                     help="use the largest centred curve norm (data-dependent: the release is then NOT "
                          "differentially private)")
    parser.add_argument("--bound", choices=BOUNDS, default="tight")
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="analytic")
    parser.add_argument("--psi", type=float, default=1e-3, help="penalty psi > 0 (iclp-qr, iclp-ar)")
    parser.add_argument("--M", type=int, default=20, help="number of eigenfunctions M >= 1 (frl)")
    parser.add_argument("--K", type=int, default=20, help="Bernstein lattice size K >= 1 (K + 1 points)")
    parser.add_argument("--lo", type=float, default=None,
                        help="public lower bound of every curve value (required for bernstein)")
    parser.add_argument("--hi", type=float, default=None,
                        help="public upper bound of every curve value (required for bernstein)")
    add_engine_options(parser)
    add_output_options(parser)


def settings_from_args(args) -> MeanSettings:
    return MeanSettings(mechanism=args.mechanism, kernel=args.kernel, rho=args.rho, nu=args.nu, eta=args.eta,
                        phi=args.phi, epsilon=args.epsilon, delta=args.delta, tau=args.tau,
                        tau_from_data=args.tau_from_data, bound=args.bound, calibration=args.calibration,
                        psi=args.psi, M=args.M, K=args.K, lo=args.lo, hi=args.hi, **bounds_from_args(args))


def run(args) -> int:
    settings = settings_from_args(args)
    engine = engine_of(args)
    if engine == "local":
        data = load_data(args)
    elif engine == "stream":
        from ..stream import stream_mean_sums

        data = stream_mean_sums(args.data, settings, **stream_options(args))
    else:
        from ..dask_engine import dask_mean_sums

        data = dask_mean_sums(args.data, settings, scheduler=args.scheduler, **stream_options(args))
    plan = plan_mean_release(data, settings)
    values = plan.sample(rng_from(args), 1)[0]
    record = release_record(plan, values, seed=args.seed)
    write_release(args.out, record, pd.DataFrame({"t": plan.grid_points, "value": values}), analyst_view(plan))
    unit = "persons" if settings.person_column else "curves"
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism}, n={plan.n} {unit}, "
          f"expected squared L2 error {plan.expected_sq_l2_error:.4g}); {args.out}/analyst_view.json is NOT for "
          "publication")
    return 0
