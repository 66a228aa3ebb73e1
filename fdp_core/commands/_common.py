"""Options and steps shared by several commands."""

from __future__ import annotations

import argparse

import numpy as np

from ..data.loading import MISSING_POLICIES, load_curves
from ..errors import ParameterError


def add_data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="wide CSV, long CSV (id,t,value) or Parquet file")
    parser.add_argument("--missing", choices=MISSING_POLICIES, default="drop",
                        help="drop incomplete curves (default) or interpolate interior gaps")
    parser.add_argument("--id-column", default=None,
                        help="long file: the column naming each curve (with --t-column and --value-column)")
    parser.add_argument("--t-column", default=None, help="long file: the column holding the grid point t")
    parser.add_argument("--value-column", default=None, help="long file: the column holding the curve value")
    parser.add_argument("--transpose", action="store_true",
                        help="the CSV has the grid down the first column and one curve per column")
    parser.add_argument("--grid", default=None, metavar="A,B,M",
                        help="declared public grid: M points from A to B that every curve is interpolated onto. A "
                             "long file whose persons are seen at their own times needs it (or --sparse): the "
                             "union of their visit times is never published")


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """--engine and its companions (release mean, kde, pca)."""
    from ..engines.choice import AUTO_STREAM_BYTES, CHUNK_BYTES, DEFAULT_CHUNK_ROWS, ENGINES  # lazy: light --help

    parser.add_argument("--engine", choices=ENGINES, default="auto",
                        help="local: load the file into memory; stream: one pass over chunks (bounded memory); "
                             "dask: partitions on a Dask cluster (--scheduler); auto (default): stream when the "
                             f"file's values could take more than {AUTO_STREAM_BYTES // 2**20} MB in memory (Parquet: "
                             "rows x columns; CSV: 4x its size), else local. All give the same release for a seed")
    parser.add_argument("--scheduler", default=None,
                        help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (--engine dask; default: a local "
                             "cluster of 2 workers on this machine)")
    parser.add_argument("--chunk-rows", type=int, default=None,
                        help="rows per chunk for --engine stream/dask (memory per chunk ~ rows x grid points x "
                             f"8 bytes; default: {CHUNK_BYTES // 2**20} MB of values, at most {DEFAULT_CHUNK_ROWS:,} "
                             "rows)")


def engine_of(args) -> str:
    from ..engines.choice import choose_engine  # lazy: only when a command runs (not the engine: no pandas)

    engine = choose_engine(args.engine, args.data)
    if getattr(args, "grid", None) is not None and engine != "local":
        if args.engine != "auto":
            raise ParameterError("--grid interpolates the curves in memory: use --engine local (or auto)")
        engine = "local"
    if args.scheduler and engine != "dask":
        raise ParameterError("--scheduler applies to --engine dask")
    if args.chunk_rows is not None and args.chunk_rows < 1:
        raise ParameterError(f"--chunk-rows must be a positive integer, got {args.chunk_rows}")
    return engine


def stream_options(args) -> dict:
    options = dict(load_options(args), chunk_rows=args.chunk_rows)
    del options["grid"]  # --grid runs locally (engine_of)
    return options


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=None,
                        help="demo seed for reproducible noise (omit for fresh randomness)")
    parser.add_argument("--out", required=True, help="output folder (created if missing)")


def load_options(args) -> dict:
    """Keyword arguments of load_curves (and of the streaming engine) from the data options."""
    return dict(missing=args.missing, id_column=getattr(args, "id_column", None),
                t_column=getattr(args, "t_column", None), value_column=getattr(args, "value_column", None),
                transpose=getattr(args, "transpose", False), grid=getattr(args, "grid", None))


def load_data(args):
    return load_curves(args.data, **load_options(args))


def rng_from(args) -> np.random.Generator:
    if args.seed is not None and args.seed < 0:
        raise ParameterError(f"--seed must be a non-negative integer, got {args.seed}")
    return np.random.default_rng(args.seed)
