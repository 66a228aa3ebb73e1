"""``python -m fdp_core release covariance``: one sanitized covariance function (METHODS.md 13)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..releases.covariance import CovarianceSettings, analyst_view, plan_covariance_release, release_record
from ..errors import ParameterError
from ..limits import MAX_GRID_POINTS, check_at_most
from ..publish.release import to_json, write_release
from ..settings_fields import add_options, settings_from_args
from ._common import add_data_options, add_output_options, load_data, rng_from
from .publishing import add_publish_options, charge_and_publish, preview_note, previewing

PATH = ("release", "covariance")
HELP = "release a differentially private covariance function (second-moment operator in the kernel eigenbasis)"


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, CovarianceSettings)
    parser.add_argument("--components", type=int, default=3,
                        help="number of eigenfunctions of the release shown in analyst_view.json")
    add_output_options(parser)
    add_publish_options(parser)


def run(args) -> int:
    settings = settings_from_args(CovarianceSettings, args)
    if args.components < 1:
        raise ParameterError(f"--components must be >= 1, got {args.components}")
    check_at_most("--components", args.components, MAX_GRID_POINTS, "the release has at most one eigenfunction per "
                  "grid point")
    fd = load_data(args)
    if not previewing(args):  # charged first, exact discrete noise
        charged = charge_and_publish(args, "covariance", fd, settings)
        if charged is not None:
            return charged  # else no budget: this plain run is a preview (said on screen and in its files)
    plan = plan_covariance_release(fd, settings)
    draw = plan.sample(rng_from(args), 1)
    surface = plan.surface(draw["covariance"][0])
    record = release_record(plan, seed=args.seed)
    if draw["mean"] is not None:
        record["released_mean"] = {"t": plan.grid_points,
                                   "value": settings.centre_value + plan.eigenfunctions @ draw["mean"][0]}
    t = plan.surface_points  # the whole grid, or evenly spread points of a long one (never m x m)
    table = pd.DataFrame({"s": np.repeat(t, t.size), "t": np.tile(t, t.size), "value": surface.ravel()})
    view = analyst_view(plan, draw, min(args.components, plan.n_components), fd)
    write_release(args.out, record, table, view)  # analyst_view.json marked not for publication
    print(f"wrote {args.out}/release.json, release.csv (publishable) and analyst_view.json (NOT for publication) "
          f"({settings.mechanism}, n={plan.n}, L={plan.n_components}, expected squared HS error "
          f"{plan.expected_sq_hs_error:.4g})")
    preview_note(args.out)
    if args.components > plan.n_components:
        print(f"note: analyst_view.json shows the L = {plan.n_components} components the release has, not the "
              f"{args.components} asked (--components)")
    return 0
