"""Sparse normal equations from a long CSV too big for memory: two passes over chunks (METHODS.md 20).

Pass 1 counts each person's visits inside the domain (m_i; only the counts per id are held);
pass 2 adds every chunk's w phi phi^T and w (y - c) phi with w = 1 / m_i. Memory: one chunk of
rows plus one count per person, whatever the number of observations. The result is the same
SparseStatistics as :func:`fdp_core.releases.sparse.sparse_statistics` on the whole file (up to the
order of floating-point sums), so the release is the same mechanism.
"""

from __future__ import annotations

import numpy as np

from ..data.loading import long_columns
from ..errors import DataError
from ..releases.sparse import SparseSettings, SparseStatistics, accumulate_normal_equations, sparse_basis

DEFAULT_CHUNK_ROWS = 500_000


def _chunks(path, columns, chunk_rows: int):
    import pandas as pd  # lazy: long files only; a wide CSV goes through the command line without pandas

    ident, t, value = columns
    try:
        header = pd.read_csv(path, nrows=0).columns
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: {str(exc).splitlines()[0]}") from None
    lowered = {str(c).strip().lower(): c for c in header}
    picked = []
    for role, col in zip(("id", "t", "value"), columns):
        if str(col).lower() not in lowered:
            raise DataError(f"{path}: no column '{col}' for the {role}")
        picked.append(lowered[str(col).lower()])
    reader = pd.read_csv(path, usecols=picked, dtype={picked[0]: str}, chunksize=int(chunk_rows))
    rows = 1
    for chunk in reader:
        t_values = pd.to_numeric(chunk[picked[1]], errors="coerce").to_numpy(dtype=float)
        y_values = pd.to_numeric(chunk[picked[2]], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(t_values) | ~np.isfinite(y_values))
        if bad.size:
            raise DataError(f"{path}: row {rows + int(bad[0]) + 1} has a missing or non-numeric t or value")
        rows += len(chunk)
        yield chunk[picked[0]].astype(str).str.strip().to_numpy(), t_values, y_values


def stream_sparse_statistics(path, settings: SparseSettings, *, id_column=None, t_column=None, value_column=None,
                             chunk_rows: int = DEFAULT_CHUNK_ROWS) -> SparseStatistics:
    """A and b (averaged over the n persons) of a long CSV read in chunks of ``chunk_rows`` rows."""
    import pandas as pd  # lazy: long files only; a wide CSV goes through the command line without pandas

    s = settings.validated()
    mapping = long_columns(id_column, t_column, value_column)
    columns = (mapping.id, mapping.t, mapping.value) if mapping else ("id", "t", "value")
    basis = sparse_basis(s)
    counts = pd.Series(dtype=float)
    seen_outside: set = set()  # persons with visits outside the domain: they count in n even with none inside
    n_obs = 0
    for ids, t, _ in _chunks(path, columns, chunk_rows):
        u = s.to_unit(t)
        inside = (u >= 0.0) & (u <= 1.0)
        counts = counts.add(pd.Series(ids[inside]).value_counts(), fill_value=0.0)
        if (~inside).any():
            seen_outside.update(ids[~inside])
        n_obs += ids.size
    if n_obs == 0:
        raise DataError(f"{path} has no observations")
    # A person with every visit outside the domain adds A_i = 0, b_i = 0 but still counts in n.
    n = int(len(counts) + len(seen_outside.difference(counts.index)))
    J = basis.n_basis
    A = np.zeros((J, J))
    b = np.zeros(J)
    lo, hi = (float(v) for v in s.value_range)
    n_outside = n_clipped = 0
    for ids, t, y in _chunks(path, columns, chunk_rows):
        u = s.to_unit(t)
        inside = (u >= 0.0) & (u <= 1.0)
        n_outside += int((~inside).sum())
        n_clipped += int(np.sum((y < lo) | (y > hi)))
        m = counts.reindex(ids[inside]).to_numpy(dtype=float)
        accumulate_normal_equations(A, b, basis, s, u[inside], y[inside], 1.0 / m)
    return SparseStatistics((A + A.T) / (2.0 * n), b / n, n, n_obs, n_outside, n_clipped)
