"""``--engine dask``: the streamed sufficient statistics, one task per partition of the file.

Map: each task reads one partition (a byte range of a wide CSV, cut at line ends; or row
groups of a Parquet file), validates it exactly as the loader does and returns its
per-record clipped sums (the accumulators of fdp_core/engines/stream.py) with its counts. Reduce:
pairs of partial sums are added in a tree of tasks. The driver then runs the whole-file
checks and the *same* planning code as every other engine (mean.py, kde.py, pca.py):
sensitivity, calibration and noise happen once, on the driver; workers never see a noise
draw or the seed. Clipping happens inside the map, per record, so no unclipped statistic
ever leaves a worker.

Workers must be able to open the file at the same path (a shared file system); the
scheduler address comes from ``--scheduler tcp://host:8786`` (default: a LocalCluster on
this machine). With a person column, a first map-reduce counts each person's rows and the
counts are shipped to the second (METHODS.md 11, 17).

Limitations: CSV partitions are cut at newline bytes, so quoted fields must not contain
line breaks (as with dask.dataframe.read_csv); long and transposed files are refused
(use --engine stream, which reshapes them in memory).
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import stream
from ..errors import DataError, ParameterError
from ..data.loading import FunctionalData

PARTITION_BYTES = 64 * 2**20
SCHEDULER_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc)://[A-Za-z0-9._\-\[\]:]+:\d{1,5}$")


@dataclass(frozen=True)
class Partition:
    index: int
    kind: str  # "csv" | "parquet"
    path: str
    start: int = 0  # csv: byte range [start, end)
    end: int = 0
    row_groups: tuple = ()  # parquet


class _PartitionReader(stream.BlockReader):
    """One partition of a wide CSV or Parquet file, read in chunks."""

    def __init__(self, part: Partition, layout, delimiter, columns, missing, chunk_rows, name):
        super().__init__(name, layout.grid, missing)
        self.part, self.layout, self.delimiter = part, layout, delimiter
        self.columns, self.chunk_rows = columns, chunk_rows

    def raw_chunks(self):
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        from ..data import arrow_io  # lazy: pyarrow, loaded with the first file read

        part = self.part
        try:
            if part.kind == "csv":
                with open(part.path, "rb") as handle:
                    handle.seek(part.start)
                    raw = handle.read(part.end - part.start)
                read, parse, convert = arrow_io.csv_options(self.layout, self.delimiter)
                read = pacsv.ReadOptions(column_names=read.column_names, skip_rows=0, block_size=read.block_size)
                for batch in pacsv.open_csv(pa.BufferReader(raw), read_options=read, parse_options=parse,
                                            convert_options=convert):
                    yield arrow_io.wide_block(batch, self.layout, strict_inf=False)
                return
            pf = pq.ParquetFile(part.path, pre_buffer=False, buffer_size=1 << 20)
            names = [f"c{i}" for i in range(len(self.columns))]
            for batch in pf.iter_batches(batch_size=self.chunk_rows, row_groups=list(part.row_groups),
                                         columns=self.columns):
                batch = batch.rename_columns(names)
                values = np.empty((batch.num_rows, self.m))
                for j, column in enumerate(self.layout.grid_columns):  # ascending grid order
                    values[:, j] = arrow_io.float_column(batch.column(names[column]), True)
                yield values, arrow_io.string_metadata(batch.select(names[:self.layout.first_numeric]),
                                                        self.layout.meta_names)
        except (pa.ArrowException, arrow_io.Refused, ValueError):
            raise stream.Fallback() from None


def partitions(reader, target_bytes: int = PARTITION_BYTES) -> list[Partition]:
    """Byte ranges (CSV, cut after a newline) or row groups (Parquet) of the file."""
    if isinstance(reader, stream.ParquetReader):
        path = str(reader.src.path)
        n_groups = reader.pf.metadata.num_row_groups
        return [Partition(i, "parquet", path, row_groups=(i,)) for i in range(n_groups)]
    path = str(reader.src.path)
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        handle.readline()  # the header
        start = handle.tell()
        cuts = [start]
        while cuts[-1] < size:
            handle.seek(min(cuts[-1] + target_bytes, size))
            if handle.tell() < size:
                handle.readline()  # to the start of the next line
            cuts.append(min(handle.tell(), size))
    return [Partition(i, "csv", path, cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1) if cuts[i + 1] > cuts[i]]


# --------------------------------------------------------------------------- tasks (run on workers)

def _part_reader(part, meta):
    return _PartitionReader(part, meta["layout"], meta["delimiter"], meta["columns"], meta["missing"],
                            meta["chunk_rows"], meta["name"])


def _count_task(part: Partition, meta: dict, person_column: str) -> pd.Series:
    reader = _part_reader(part, meta)
    tally = stream.Tally(reader.m)
    parts = [pd.Series(stream.person_keys(c.metadata, person_column, reader.name)).value_counts()
             for c in reader.chunks(tally)]
    # Persons whose rows were all dropped count in n with 0 usable rows (METHODS.md 11).
    dropped = pd.concat(tally.dropped_meta, ignore_index=True) if tally.dropped_meta else None
    parts.append(stream.dropped_person_counts(dropped, person_column, reader.name))
    return pd.concat(parts).groupby(level=0).sum()


def _sum_task(part: Partition, meta: dict, template, features, person_column, counts, value_range=None):
    """Per-partition clipped sums: (accumulator, tally)."""

    reader = _part_reader(part, meta)
    tally = stream.Tally(reader.m)
    tally.label = f"partition {part.index + 1}, "
    acc = copy.deepcopy(template)
    for chunk in reader.chunks(tally):
        keys = weights = None
        if person_column:
            keys = stream.person_keys(chunk.metadata, person_column, reader.name)
            weights = stream.person_weights(keys, counts)
        if features is None:
            acc.update(chunk.values, weights)
        else:
            acc.update(stream.kde_features(FunctionalData(reader.grid, chunk.values, chunk.metadata), features,
                                           value_range), keys)
    return acc, tally


def _merge_sums(a, b):
    return a[0].merge(b[0]), a[1].merge(b[1])


def _merge_counts(a, b):
    return pd.concat([a, b]).groupby(level=0).sum()


def _tree_reduce(client, futures, merge):
    """Pairwise reduction in tasks (depth log2 of the number of partitions)."""
    while len(futures) > 1:
        nxt = [client.submit(merge, futures[i], futures[i + 1], pure=False) for i in range(0, len(futures) - 1, 2)]
        if len(futures) % 2:
            nxt.append(futures[-1])
        futures = nxt
    return futures[0].result()


# --------------------------------------------------------------------------- driver

def client_for(scheduler: str | None = None, n_workers: int = 2, processes: bool = False):
    """(Client, cluster or None): connect to ``scheduler`` or start a LocalCluster here."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        raise ParameterError("--engine dask needs the 'distributed' package (pip install distributed)") from None
    if scheduler:
        if not SCHEDULER_ADDRESS.match(str(scheduler)):
            raise ParameterError(f"--scheduler must be an address like tcp://10.0.0.5:8786, got {scheduler!r}")
        try:
            return Client(scheduler, timeout="10s"), None
        except Exception as exc:  # distributed raises OSError, TimeoutError, AssertionError, ... when unreachable
            detail = " ".join(str(exc).split())[:120] or type(exc).__name__
            raise ParameterError(f"cannot reach the Dask scheduler at {scheduler}: {detail}") from None
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=processes, dashboard_address=None)
    return Client(cluster), cluster


def _reduce(kind, source, template, *, features=None, person_column=None, value_range=None, scheduler=None,
            client=None, partition_bytes=PARTITION_BYTES, **options):
    reader = stream.open_source(source, **options)
    if not isinstance(reader, (stream.CsvReader, stream.ParquetReader)):
        raise ParameterError("--engine dask reads wide CSV or Parquet files from a path; for a long or transposed "
                             "file use --engine stream (it reshapes the file in memory)")
    if isinstance(reader, stream.ParquetReader):
        meta = dict(layout=reader.layout, delimiter=None, columns=reader.columns)
    else:
        meta = dict(layout=reader.layout, delimiter=reader.delimiter, columns=None)
    meta.update(missing=reader.missing, chunk_rows=stream.auto_chunk_rows(reader.m, options.get("chunk_rows")),
                name=reader.name)
    parts = partitions(reader, partition_bytes)
    own = client is None
    cluster = None
    if own:
        client, cluster = client_for(scheduler)
    try:
        counts = None
        if person_column:
            counts = _tree_reduce(client, [client.submit(_count_task, p, meta, person_column, pure=False)
                                           for p in parts], _merge_counts)
        template = template(reader)
        futures = [client.submit(_sum_task, p, meta, template, features, person_column, counts, value_range,
                                 pure=False) for p in parts]
        acc, tally = _tree_reduce(client, futures, _merge_sums)
    except stream.Fallback:
        stream.load_or_locate(reader.src, reader.name, reader.missing)  # names the bad row (or accepts)
        raise DataError(f"{reader.name}: a partition holds a value the fast reader refuses (e.g. spaces around "
                        "a missing-value token); re-save the file with plain numbers or use --engine local") from None
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()
    report = tally.finish(reader.name, reader.missing)
    return reader, acc, report, stream.persons_of(counts, tally.n_read, tally.n_kept)


def dask_mean_sums(source, settings, **kwargs):
    settings = settings.validated()
    reader, acc, report, persons = _reduce(
        "mean", source, lambda r: stream.MeanAccumulator(settings, r.grid, r.unit_grid, r.weights),
        person_column=settings.bounds.person_column, **kwargs)
    return acc.sums(persons.n, report.n_dropped, persons.usable)


def dask_pca_sums(source, settings, *, released_mean=None, with_report: bool = False, **kwargs):
    from ..releases.pca import pca_basis, pca_centre  # lazy: scipy.linalg (via releases.pca), only for a streamed PCA

    settings = settings.validated()
    holder = {}

    def template(r):
        centre, holder["flags"] = pca_centre(settings, r.grid, released_mean)
        return stream.PcaAccumulator(settings, pca_basis(settings, r.unit_grid, r.weights), r.grid, r.weights, centre)

    reader, acc, report, persons = _reduce("pca", source, template, person_column=settings.bounds.person_column,
                                           **kwargs)
    sums = acc.sums(persons.n, holder["flags"])
    return (sums, report.n_dropped) if with_report else sums


def dask_kde_sums(source, settings, feature, **kwargs) -> "stream.StreamedFeatures":
    features, box, grid_size = stream.kde_feature_inputs(settings, feature)
    reader, acc, report, persons = _reduce(
        "kde", source, lambda r: stream.KdeAccumulator(settings, box, grid_size, stream.kde_mode(settings)),
        features=features, person_column=getattr(settings, "person_column", None),
        value_range=getattr(settings, "value_range", None), **kwargs)
    n = stream.mechanism_n_public(getattr(settings, "n_public", None), persons.n)
    return stream.StreamedFeatures(acc.sums(n), features, report.n_dropped, acc.n_rows, acc.n_clipped,
                                   persons.n - persons.usable)


__all__ = ["dask_mean_sums", "dask_pca_sums", "dask_kde_sums", "client_for", "partitions"]
