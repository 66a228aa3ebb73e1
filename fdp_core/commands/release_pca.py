"""``python -m fdp_core release pca``: private functional principal components."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from ..releases.pca import PcaSettings, analyst_view, private_pca, release_record
from ..data.preprocess import file_persons
from ..publish.release import write_release
from ..settings_fields import add_options, settings_from_args
from ._common import (add_data_options, add_engine_options, add_output_options, engine_of, load_data, rng_from,
                      stream_options)
from .publishing import add_publish_options, charge_and_publish, in_memory, no_budget_to_find, preview_note, previewing

PATH = ("release", "pca")
HELP = "release private functional principal components (exponential mechanism, epsilon-DP)"


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, PcaSettings)
    parser.add_argument("--released-mean", default=None,
                        help="centre the curves by a released mean: a release.csv written by 'release mean' "
                             "(its budget counts separately); default: no centring")
    add_engine_options(parser)
    add_output_options(parser)
    add_publish_options(parser)


def _released_mean(path: str, grid: np.ndarray) -> np.ndarray:
    table = pd.read_csv(path)
    if list(table.columns[:2]) != ["t", "value"]:
        raise DataError(f"{path}: a released mean needs columns t, value (a release.csv of 'release mean'), "
                        f"got {', '.join(map(str, table.columns))}")
    if table.shape[0] != grid.size or not np.allclose(table["t"].to_numpy(float), grid, rtol=1e-9, atol=1e-12):
        raise DataError(f"{path}: the released mean's grid ({table.shape[0]} points) is not the data grid "
                        f"({grid.size} points)")
    return table["value"].to_numpy(float)


def _released_id(path: str | None) -> str | None:
    """The id of the committed mean whose release.csv centres the curves (its release.json beside it)."""
    if path is None:
        return None
    beside = Path(path).with_name("release.json")
    try:
        return json.loads(beside.read_text()).get("id") if beside.is_file() else None
    except (OSError, ValueError):
        return None


def centring_of(args) -> str:
    """PcaSettings.centring from --centring and --released-mean (the default follows --value-range)."""
    if args.released_mean:
        if args.centring == "public":
            raise ParameterError("--centring public and --released-mean are two different centres: choose one")
        return "released-mean"
    if args.centring is not None:
        return args.centring
    return "public" if args.value_range is not None else "none"


def run(args) -> int:
    settings = settings_from_args(PcaSettings, args, centring=centring_of(args)).validated()
    preview = previewing(args)
    engine = engine_of(args)
    if not preview and not no_budget_to_find(args):  # charged first (the exponential mechanism's own sampler)
        in_memory(args, engine)
        fd = load_data(args)
        mean = None if args.released_mean is None else _released_mean(args.released_mean, fd.grid_points)
        charged = charge_and_publish(args, "components", fd, settings,
                                     inputs={"released_mean": mean, "released_mean_id": _released_id(args.released_mean)})
        if charged is not None:
            return charged  # else no budget: this plain run is a preview (said on screen and in its files)
    if engine == "local":
        fd = load_data(args)
        mean = None if args.released_mean is None else _released_mean(args.released_mean, fd.grid_points)
        result = private_pca(fd, settings, rng_from(args), released_mean=mean)
        n_dropped = fd.report.n_dropped
        n_unusable = file_persons(fd, settings.bounds.person_column).n_unusable
    else:
        from ..engines.stream import open_source  # lazy: light `--help`

        n_unusable = None  # the streamed engines count persons, not these (analyst view)
        grid = open_source(args.data, **stream_options(args)).grid
        mean = None if args.released_mean is None else _released_mean(args.released_mean, grid)
        if engine == "stream":
            from ..engines.stream import stream_pca_sums  # lazy: light `--help`

            sums, n_dropped = stream_pca_sums(args.data, settings, released_mean=mean, with_report=True,
                                              **stream_options(args))
        else:
            from ..engines.dask_engine import dask_pca_sums  # lazy: light `--help`

            sums, n_dropped = dask_pca_sums(args.data, settings, released_mean=mean, scheduler=args.scheduler,
                                            with_report=True, **stream_options(args))
        result = private_pca(sums, settings, rng_from(args))
    record = release_record(result, seed=args.seed)
    if mean is not None:
        record["released_mean_file"] = str(args.released_mean)
    table = pd.DataFrame({"t": result.grid_points,
                          **{f"pc{l + 1}": result.components[:, l] for l in range(result.k)}})
    write_release(args.out, record, table, analyst_view(result, n_dropped=n_dropped, n_unusable=n_unusable))
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({record['sampler']}, k={result.k}, "
          f"p={result.p}, n={result.n}); {args.out}/analyst_view.json (variance ratio {result.variance_ratio:.3f}, "
          "not private) is NOT for publication")
    preview_note(args.out)
    return 0

