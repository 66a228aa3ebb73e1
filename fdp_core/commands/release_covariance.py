"""``python -m fdp_core release covariance``: one sanitized covariance function (METHODS.md 13)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..covariance import (CENTRINGS, COVARIANCE_MECHANISMS, CovarianceSettings, analyst_view,
                          plan_covariance_release, release_record)
from ..errors import ParameterError
from ..mechanisms.calibration import CALIBRATIONS
from ..preprocess import parse_value_range
from ..release import to_json, write_release
from ..sensitivity import COVARIANCE_GAUSSIAN_BOUNDS
from ._common import add_bounds_options, add_data_options, add_kernel_options, add_output_options, load_data, rng_from

PATH = ("release", "covariance")
HELP = "release a differentially private covariance function (second-moment operator in the kernel eigenbasis)"


def add_centre_options(parser) -> None:
    centre = parser.add_mutually_exclusive_group(required=True)
    centre.add_argument("--centre", type=float, default=None,
                        help="public centre c subtracted from every curve (chosen without looking at the data)")
    centre.add_argument("--value-range", default=None,
                        help="public range LO,HI of every curve value: curves are clipped into it, centred at its "
                             "midpoint, and tau defaults to (HI - LO)/2. Write --value-range=-1,1 when LO < 0")


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--mechanism", choices=COVARIANCE_MECHANISMS, default="gaussian",
                        help="gaussian: tensor GP noise, (epsilon, delta)-DP; iclp: tensor Laplace, pure epsilon-DP")
    add_kernel_options(parser)
    parser.add_argument("--eta", type=float, default=1.5, help="smoothness exponent eta >= 1")
    parser.add_argument("--phi", type=float, default=1e-3, help="penalty phi > 0 of the shrinkage s_jl")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) (gaussian mechanism only)")
    parser.add_argument("--tau", type=float, default=None,
                        help="public L2 bound of the centred curves (required with --centre)")
    parser.add_argument("--bound", choices=COVARIANCE_GAUSSIAN_BOUNDS, default="kyfan",
                        help="Gaussian sensitivity: kyfan (tighter, default) or sqrt2")
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="analytic")
    add_centre_options(parser)
    add_bounds_options(parser, range_and_reference=False)
    parser.add_argument("--centring", choices=CENTRINGS, default="public",
                        help="public: second moment about the centre; released-mean: also release the mean with a "
                             "share --gamma of the budget and subtract its outer product")
    parser.add_argument("--gamma", type=float, default=0.2, help="share of the budget for the released mean")
    parser.add_argument("--components", type=int, default=3,
                        help="number of eigenfunctions of the release shown in analyst_view.json")
    add_output_options(parser)


def settings_from_args(args) -> CovarianceSettings:
    value_range = None if args.value_range is None else parse_value_range(args.value_range)
    lo, hi = value_range if value_range else (None, None)
    return CovarianceSettings(mechanism=args.mechanism, kernel=args.kernel, rho=args.rho, nu=args.nu, eta=args.eta,
                              phi=args.phi, epsilon=args.epsilon, delta=args.delta, tau=args.tau, bound=args.bound,
                              calibration=args.calibration, centre=args.centre, lo=lo, hi=hi,
                              centring=args.centring, gamma=args.gamma,
                              person_column=args.person_column, n_public=args.n_public)


def run(args) -> int:
    settings = settings_from_args(args)
    if args.components < 1:
        raise ParameterError(f"--components must be >= 1, got {args.components}")
    fd = load_data(args)
    plan = plan_covariance_release(fd, settings)
    draw = plan.sample(rng_from(args), 1)
    surface = plan.surface(draw["covariance"][0])
    record = release_record(plan, seed=args.seed)
    if draw["mean"] is not None:
        record["released_mean"] = {"t": plan.grid_points,
                                   "value": settings.centre_value + plan.eigenfunctions @ draw["mean"][0]}
    t = plan.grid_points
    table = pd.DataFrame({"s": np.repeat(t, t.size), "t": np.tile(t, t.size), "value": surface.ravel()})
    out = write_release(args.out, record, table)
    view = analyst_view(plan, draw, min(args.components, plan.n_components), fd)
    (out / "analyst_view.json").write_text(to_json(view))
    print(f"wrote {args.out}/release.json, release.csv (publishable) and analyst_view.json (NOT for publication) "
          f"({settings.mechanism}, n={plan.n}, L={plan.n_components}, expected squared HS error "
          f"{plan.expected_sq_hs_error:.4g})")
    return 0
