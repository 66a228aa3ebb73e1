"""``python -m fdp_core release regression``: function-on-scalar regression coefficients (METHODS.md 14)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..mechanisms.calibration import CALIBRATIONS
from ..preprocess import parse_value_range
from ..regression import (RegressionSettings, analyst_view, parse_covariates, plan_regression_release,
                          release_record)
from ..release import to_json, write_release
from ._common import add_bounds_options, add_data_options, add_kernel_options, add_output_options, load_data, rng_from
from .release_covariance import add_centre_options

PATH = ("release", "regression")
HELP = "release differentially private function-on-scalar regression coefficients beta_k(t)"


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--covariates", required=True,
                        help="metadata columns: NAME (numeric) or NAME=LEVEL (indicator of a text level), joined by "
                             "',' (e.g. case,sex=male); an intercept is always included")
    parser.add_argument("--B", type=float, required=True, dest="bound_b",
                        help="public bound B > 1 on ||X_i|| (intercept 1 kept; others clipped to sqrt(B^2 - 1))")
    add_kernel_options(parser)
    parser.add_argument("--eta", type=float, default=1.5, help="smoothness exponent eta >= 1")
    parser.add_argument("--phi", type=float, default=1e-3, help="penalty phi > 0 (shrinkage of T2's columns)")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1)")
    parser.add_argument("--tau", type=float, default=None,
                        help="public L2 bound of the centred curves (required with --centre)")
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="analytic")
    add_centre_options(parser)
    add_bounds_options(parser, range_and_reference=False)
    parser.add_argument("--gamma", type=float, default=0.3, help="share of the budget for T1 (the rest: T2)")
    parser.add_argument("--kappa", type=float, default=0.05, help="public eigenvalue floor of T1~ before inverting")
    add_output_options(parser)


def settings_from_args(args) -> RegressionSettings:
    value_range = None if args.value_range is None else parse_value_range(args.value_range)
    lo, hi = value_range if value_range else (None, None)
    return RegressionSettings(covariates=parse_covariates(args.covariates), bound_b=args.bound_b, kernel=args.kernel,
                              rho=args.rho, nu=args.nu, eta=args.eta, phi=args.phi, epsilon=args.epsilon,
                              delta=args.delta, tau=args.tau, calibration=args.calibration, centre=args.centre,
                              lo=lo, hi=hi, gamma=args.gamma, kappa=args.kappa,
                              person_column=args.person_column, n_public=args.n_public)


def run(args) -> int:
    settings = settings_from_args(args)
    fd = load_data(args)
    plan = plan_regression_release(fd, settings)
    rng = rng_from(args)
    functions = plan.sample(rng, 1)[0]
    record = release_record(plan, seed=args.seed)
    table = pd.DataFrame({"t": plan.grid_points, **{f"beta_{label}": functions[k]
                                                    for k, label in enumerate(plan.labels)}})
    out = write_release(args.out, record, table)
    (out / "analyst_view.json").write_text(to_json(analyst_view(plan, functions, np.random.default_rng())))
    print(f"wrote {args.out}/release.json, release.csv (publishable) and analyst_view.json (NOT for publication) "
          f"(covariates {', '.join(plan.labels)}, n={plan.n})")
    return 0
