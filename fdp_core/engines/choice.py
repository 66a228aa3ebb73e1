"""Which engine reads a file (``--engine auto``) and the streaming engine's chunk sizes.

Apart from fdp_core/engines/stream.py (which re-exports all of it) so that the command line can
word ``--engine``'s help and pick the local engine for a small file without importing the
streaming engine and, through it, pandas (issue 42: ``release mean`` near ``import numpy``).
"""

from __future__ import annotations

import stat
from pathlib import Path

from ..params import check_choice

DEFAULT_CHUNK_ROWS = 65_536  # at most; fewer for wide grids (CHUNK_BYTES)
CHUNK_BYTES = 32 * 2**20  # numeric block of one chunk; a chunk's transform makes ~3 temporaries of this size

ENGINES = ("auto", "local", "stream", "dask")
# --engine auto streams when a file's values could take more than this many bytes in memory.
# The local engine's peak is about 0.3 GB + 4x the values (the data, a centred copy, a clipping
# temporary, Arrow's buffers: 3.2 GB for 10^6 x 93 Parquet, 0.74 GB of values), the streaming
# engine's about one row group (0.36 GB on the same file, 0.38 GB at 10^7 x 93, at about the
# pyarrow floor's time: benchmarks/bench_floors.py). 384 MiB keeps the default's peak within 2 GB
# for any file. (Since Parquet chunks are read as columns, a streamed mean is also lighter and
# faster at 10^5 x 93 Parquet: 0.25 GB and 0.6 s of CPU against 0.47 GB and 1.2 s in memory.)
AUTO_STREAM_BYTES = 384 * 2**20
# A CSV cell takes at least 2 bytes ("1,") and 8 in memory: its values are at most 4x the file.
CSV_VALUE_BYTES_PER_BYTE = 4


def value_bytes_bound(data_path) -> int:
    """An upper bound of the bytes the file's values take as float64: Parquet from its footer
    (rows x columns x 8), any other file CSV_VALUE_BYTES_PER_BYTE x its size. Raises OSError."""
    path = Path(data_path)
    size = path.stat().st_size
    if not stat.S_ISREG(path.stat().st_mode):  # a pipe or a device: never opened here (it could block)
        raise OSError(f"{path} is not a regular file")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1" or path.name.lower().endswith((".parquet", ".pq")):
        try:
            import pyarrow.parquet as pq  # lazy: only a Parquet file's footer is read here

            meta = pq.ParquetFile(path).metadata
            return int(meta.num_rows) * int(meta.num_columns) * 8
        except Exception:  # not readable as Parquet: the loader says why; its size bounds nothing
            return 0
    return size * CSV_VALUE_BYTES_PER_BYTE


def choose_engine(engine: str, data_path) -> str:
    """--engine auto: stream when the file's values could exceed AUTO_STREAM_BYTES in memory
    (:func:`value_bytes_bound`), else the local (in-memory) engine."""
    check_choice("engine", engine, ENGINES)
    if engine != "auto":
        return engine
    try:
        bound = value_bytes_bound(data_path)
    except (OSError, ValueError):  # the loader refuses the path with its own message
        return "local"
    return "stream" if bound > AUTO_STREAM_BYTES else "local"
