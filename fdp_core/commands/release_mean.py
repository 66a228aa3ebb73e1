"""``python -m fdp_core release mean``: one sanitized mean curve."""

from __future__ import annotations

import pandas as pd

from ..mean import MeanSettings, analyst_view, plan_mean_release, release_record
from ..postprocess import finish_mean
from ..release import write_release
from ..settings_fields import add_options, settings_from_args
from ._common import (add_data_options, add_engine_options, add_output_options, engine_of, load_data, rng_from,
                      stream_options)

PATH = ("release", "mean")
HELP = "release a differentially private mean function"


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, MeanSettings)
    add_engine_options(parser)
    add_output_options(parser)


def run(args) -> int:
    settings = settings_from_args(MeanSettings, args)
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
    finished = finish_mean(plan.sample(rng_from(args), 1)[0], plan.settings)  # free post-processing
    values = finished.values
    record = release_record(plan, values, seed=args.seed)
    write_release(args.out, record, pd.DataFrame({"t": plan.grid_points, "value": values}),
                  {**analyst_view(plan), **finished.analyst_fields(plan.weights)})
    unit = "persons" if settings.person_column else "curves"
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism}, n={plan.n} {unit}, "
          f"expected squared L2 error {plan.expected_sq_l2_error:.4g}); {args.out}/analyst_view.json is NOT for "
          "publication")
    return 0
