"""``python -m fdp_core release regression``: function-on-scalar regression coefficients (METHODS.md 14)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..releases.regression import RegressionSettings, analyst_view, plan_regression_release, release_record
from ..publish.release import write_release
from ..settings_fields import add_options, settings_from_args
from ._common import add_data_options, add_output_options, load_data, rng_from
from .publishing import add_publish_options, charge_and_publish, preview_note, previewing

PATH = ("release", "regression")
HELP = "release differentially private function-on-scalar regression coefficients beta_k(t)"


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, RegressionSettings)
    add_output_options(parser)
    add_publish_options(parser)


def run(args) -> int:
    settings = settings_from_args(RegressionSettings, args)
    fd = load_data(args)
    if not previewing(args):  # charged first, exact discrete noise
        charged = charge_and_publish(args, "regression", fd, settings)
        if charged is not None:
            return charged  # else no budget: this plain run is a preview (said on screen and in its files)
    plan = plan_regression_release(fd, settings)
    rng = rng_from(args)
    functions = plan.sample(rng, 1)[0]
    record = release_record(plan, seed=args.seed)
    table = pd.DataFrame({"t": plan.grid_points, **{f"beta_{label}": functions[k]
                                                    for k, label in enumerate(plan.labels)}})
    # analyst_view.json marked not for publication, as for every other kind
    write_release(args.out, record, table, analyst_view(plan, functions, np.random.default_rng()))
    print(f"wrote {args.out}/release.json, release.csv (publishable) and analyst_view.json (NOT for publication) "
          f"(covariates {', '.join(plan.labels)}, n={plan.n})")
    preview_note(args.out)
    return 0
