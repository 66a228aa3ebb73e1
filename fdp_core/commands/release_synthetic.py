"""``python -m fdp_core release synthetic``: synthetic curves from a released mean and second moment
(METHODS.md 19)."""

from __future__ import annotations

import numpy as np

from ..releases.covariance import CovarianceSettings, plan_covariance_release, release_record
from ..errors import ParameterError
from ..publish.release import write_release
from ..settings_fields import add_options, options_of, settings_from_args
from ..releases.synthetic import (CANNOT_KEEP, KEEPS, compare, curves_table, input_layout, model_covariance,
                                  synthetic_curves)
from ._common import add_data_options, add_output_options, load_data, rng_from

PATH = ("release", "synthetic")
HELP = "release a mean and second moment privately and write synthetic curves drawn from them"
# Every covariance option but the centring: synthetic curves need the released mean.
FIELDS = [name for name, _ in options_of(CovarianceSettings) if name != "centring"]


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, CovarianceSettings, fields=FIELDS)
    parser.add_argument("--n-synthetic", type=int, default=None,
                        help="number of synthetic curves (public; default: the public n)")
    add_output_options(parser)


def run(args) -> int:
    settings = settings_from_args(CovarianceSettings, args, fields=FIELDS, centring="released-mean")
    if args.n_synthetic is not None and not 1 <= args.n_synthetic <= 1_000_000:
        raise ParameterError(f"--n-synthetic must be between 1 and 1,000,000, got {args.n_synthetic}")
    fd = load_data(args)
    layout = input_layout(args.data, args.t_column)
    plan = plan_covariance_release(fd, settings)
    rng = rng_from(args)
    draw = plan.sample(rng, 1)
    s = plan.settings
    mean = s.centre_value + plan.eigenfunctions @ draw["mean"][0]
    value_range = None if s.lo is None else (float(s.lo), float(s.hi))
    n_synthetic = plan.n if args.n_synthetic is None else int(args.n_synthetic)
    curves = synthetic_curves(mean, model_covariance(plan, draw), plan.eigenfunctions, n_synthetic, rng, value_range)
    record = release_record(plan, seed=args.seed)
    record.update(release="synthetic", layout=layout, n_synthetic=n_synthetic,
                  model="Y* = mu~ + sum_k sqrt(lambda~_k) xi_k v~_k (PSD part of C~ = S~ - mu~ mu~^T), xi_k iid "
                        "N(0, 1)" + (", clipped pointwise to the public range" if value_range else ""),
                  keeps=KEEPS, cannot_keep=CANNOT_KEEP,
                  post_processing="the synthetic curves are post-processing of the released mean and second moment: "
                                  "no budget beyond the covariance release's epsilon (and delta)",
                  released_mean={"t": plan.grid_points, "value": mean})
    view = {"comparison": compare(fd.data_matrix, curves, fd.grid_points, fd.weights),
            "comparison_note": "synthetic vs the real curves as loaded (before clipping)", "n_clipped": plan.n_clipped}
    write_release(args.out, record, curves_table(curves, plan.grid_points, layout), view)
    print(f"wrote {args.out}/release.csv ({n_synthetic} synthetic curves, {layout} layout) and release.json "
          f"({s.mechanism}, epsilon {s.epsilon:g}: mean {s.gamma:g} of it); {args.out}/analyst_view.json is NOT for "
          "publication")
    return 0
