"""scikit-fda in and out: ``FDataGrid`` <-> :class:`~fdp_core.data.loading.FunctionalData`.

scikit-fda is an optional extra (``pip install 'fdp[skfda]'``); it is imported only here, only
when a conversion is asked for. scikit-fda keeps curves as ``data_matrix`` (n, m, 1) on
``grid_points`` (a tuple with one array per domain dimension); fdp keeps (n, m) curves on one
grid, so only one-dimensional domains and values convert.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import DataError
from .loading import FunctionalData, from_arrays, to_skfda  # noqa: F401 (to_skfda: public here)


def from_skfda(fdg, metadata=None, person_column: str | None = None) -> FunctionalData:
    """Curves of a scikit-fda ``FDataGrid`` as fdp's data set.

    Parameters
    ----------
    fdg : skfda.FDataGrid
        Curves on one grid of a one-dimensional domain, with scalar values.
    metadata : DataFrame or mapping of columns, optional
        One row per curve (e.g. a person column, features for densities).
    person_column : str, optional
        The column naming each curve's person. Without ``metadata`` holding it, the curves'
        ``sample_names`` are taken as the persons (so several curves of one person share a name).

    Returns
    -------
    FunctionalData
        The same validation as a loaded file (strictly increasing grid, finite values).

    Examples
    --------
    >>> import numpy as np, skfda
    >>> t = np.linspace(0, 1, 5)
    >>> fdg = skfda.FDataGrid(np.outer([1.0, 2.0, 3.0], t), t, sample_names=["a", "a", "b"])
    >>> fd = from_skfda(fdg, person_column="subject")
    >>> fd.data_matrix.shape, fd.metadata["subject"].tolist()
    ((3, 5), ['a', 'a', 'b'])
    """
    grid_points = getattr(fdg, "grid_points", None)
    data_matrix = getattr(fdg, "data_matrix", None)
    if grid_points is None or data_matrix is None:
        raise DataError(f"from_skfda needs a scikit-fda FDataGrid, got {type(fdg).__name__} (a basis "
                        "representation converts with .to_grid() first)")
    if len(grid_points) != 1:
        raise DataError(f"fdp releases curves of one variable: this FDataGrid has a {len(grid_points)}-dimensional "
                        "domain")
    values = np.asarray(data_matrix, dtype=float)
    if values.ndim == 3:
        if values.shape[2] != 1:
            raise DataError(f"fdp releases scalar curves: this FDataGrid has {values.shape[2]} values per point")
        values = values[:, :, 0]
    if metadata is not None and not isinstance(metadata, pd.DataFrame):
        metadata = pd.DataFrame(metadata)
    if person_column is not None and (metadata is None or person_column not in metadata.columns):
        names = list(getattr(fdg, "sample_names", ()) or ())
        if len(names) != values.shape[0] or any(name is None for name in names):
            raise DataError(f"person_column {person_column!r} is neither a metadata column nor given by the "
                            "FDataGrid's sample_names (one name per curve)")
        metadata = (pd.DataFrame(index=range(values.shape[0])) if metadata is None else metadata.reset_index(drop=True))
        metadata = metadata.assign(**{person_column: names})
    name = getattr(fdg, "dataset_name", None) or "FDataGrid"
    return from_arrays(np.asarray(grid_points[0], dtype=float), values, name=str(name), metadata=metadata)
