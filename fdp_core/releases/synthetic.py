"""Synthetic curves from a released mean and second moment (METHODS.md 19): post-processing.

The covariance release with a released mean (fdp_core/releases/covariance.py, centring "released-mean")
gives mu~ and C~ = S~ - mu~ mu~^T in the kernel eigenbasis. Its PSD part sum_k lambda~_k v~_k v~_k^T
defines a Gaussian model; a synthetic person is

    Y* = c + Phi mu~ + Phi sum_k sqrt(lambda~_k) xi_k v~_k,  xi_k iid N(0, 1),

clipped pointwise to the public range when there is one. No budget beyond the two releases;
the number of synthetic curves is public. The model keeps the mean, the covariance and
Gaussian margins; it cannot keep skewness, clusters, rare shapes or anything finer than the
kernel's eigenbasis. The comparison with the real curves (:func:`compare`) reads the data
without noise: analyst view only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from .bands import DESHRINK_FROM, psd_root
from .covariance import CovarianceRelease, product_shrinkage, symmetrise
from .estimators import shrinkage
from ..limits import MAX_DENSE_EIGH_POINTS

KEEPS = ("the mean curve, the covariance function (in the kernel eigenbasis) and Gaussian margins at every t, "
         "all as released with noise")
CANNOT_KEEP = ("skewness and heavy tails, clusters and subgroups (the model is one Gaussian), rare or extreme shapes, "
               "detail finer than the kernel's eigenfunctions, the link to other columns (ids, covariates, visits), "
               "and the exact values of any real person")
N_COMPARE_POINTS = 5
SUBSPACE_COMPONENTS = 3


def model_covariance(plan: CovarianceRelease, draw: dict) -> np.ndarray:
    """The synthetic model's covariance (coefficients) from one draw of a covariance release with a released mean.

    The release holds S~ = s2 * (C + m m^T) + noise (s2_jl the second moment's shrinkage, m the mean of the
    centred curves) and mu~ = s1 * m + noise. Its own C~ = S~ - mu~ mu~^T keeps (s2_jl - s1_j s1_l) m_j m_l
    of the mean's square, a bias of order ||m||^2 whenever the public centre is far from the mean (ratio 52
    to the empirical covariance's error on S1 at epsilon 8, n = 10^4). Here the mean is de-shrunk where
    s1 >= 1/2 (its noise grows at most 2x) and its square is shrunk like the second moment's:
    S~ - s2 * (m^ m^T), which leaves s2 * C plus noise (post-processing: no budget).
    """
    second, mean = symmetrise(draw["second_moment"][0]), draw["mean"][0]
    s = plan.settings
    s1 = shrinkage(plan.eigenvalues, s.eta, s.phi)
    m = np.where(s1 >= DESHRINK_FROM, mean / np.maximum(s1, DESHRINK_FROM), mean)
    return second - product_shrinkage(plan.eigenvalues, s.eta, s.phi) * np.outer(m, m)


def synthetic_curves(mean: np.ndarray, covariance: np.ndarray, eigenfunctions: np.ndarray, n: int,
                     rng: np.random.Generator, value_range: tuple | None = None) -> np.ndarray:
    """n synthetic curves on the grid, shape (n, m): mean (grid) + Phi (PSD root of covariance) xi.

    Post-processing of released quantities only (METHODS.md 19): no further budget.

    Parameters
    ----------
    mean : array (m,)
        A released mean on the grid.
    covariance : array (L, L)
        A released covariance on the basis ``eigenfunctions`` (made positive semi-definite here).
    eigenfunctions : array (m, L)
        The public basis on the grid.
    n : int
        How many curves to draw.
    rng : Generator
    value_range : (lo, hi), optional
        Clip the synthetic values to the public range.

    Returns
    -------
    ndarray (n, m)

    Examples
    --------
    >>> import numpy as np
    >>> curves = synthetic_curves(np.zeros(4), np.eye(2), np.eye(4)[:, :2], 3, np.random.default_rng(0))
    >>> curves.shape, np.allclose(curves[:, 2:], 0)
    ((3, 4), True)
    """
    root = psd_root(covariance)
    curves = mean + rng.standard_normal((int(n), root.shape[1])) @ (eigenfunctions @ root).T
    if value_range is not None:
        curves = np.clip(curves, *value_range)
    return curves


def _covariance(curves: np.ndarray) -> np.ndarray:
    centred = curves - curves.mean(axis=0)
    return centred.T @ centred / max(curves.shape[0] - 1, 1)


def _top_subspace(cov: np.ndarray, sw: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal top-k eigenvectors of the covariance operator in the weighted inner product."""
    values, vectors = np.linalg.eigh(sw[:, None] * cov * sw[None, :])
    return vectors[:, np.argsort(values)[::-1][:k]]


def _scaled_rows(curves: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """Y with Y^T Y = W^1/2 C W^1/2, C the curves' sample covariance: the covariance operator's
    factor, n x m (a long grid's m x m covariance is never formed)."""
    centred = curves - curves.mean(axis=0)
    return centred * sw[None, :] / np.sqrt(max(curves.shape[0] - 1, 1))


def _long_grid_covariance_metrics(real, synthetic, sw, k) -> tuple[float, float, np.ndarray, np.ndarray]:
    """(HS distance, real HS norm, U, V) from the n x m factors alone (exact, no m x m matrix):
    ||A'A - B'B||_F^2 = ||AA'||_F^2 + ||BB'||_F^2 - 2 ||AB'||_F^2, and the top-k eigenvectors of
    Y'Y are Y's top-k right singular vectors."""
    a, b = _scaled_rows(real, sw), _scaled_rows(synthetic, sw)
    aa, bb, ab = (float(np.sum((x @ y.T) ** 2)) for x, y in ((a, a), (b, b), (a, b)))
    top = [np.linalg.svd(y, full_matrices=False)[2][:k].T for y in (a, b)]
    return float(np.sqrt(max(aa + bb - 2.0 * ab, 0.0))), float(np.sqrt(aa)), top[0], top[1]


def compare(real: np.ndarray, synthetic: np.ndarray, grid: np.ndarray, weights: np.ndarray) -> dict:
    """Section 19's metrics: L2 distance of the means, Hilbert-Schmidt distance of the covariances,
    subspace distance of the top 3 components, pointwise Kolmogorov-Smirnov at 5 public t (equally
    spaced quantiles of the grid). NON-PRIVATE (reads the real curves): analyst view only.
    Above MAX_DENSE_EIGH_POINTS grid points the same numbers come from the n x m factors (METHODS 27)."""
    sw = np.sqrt(weights)
    mean_gap = real.mean(axis=0) - synthetic.mean(axis=0)
    k = min(SUBSPACE_COMPONENTS, grid.size)
    if grid.size > MAX_DENSE_EIGH_POINTS:
        hs_distance, hs_real, U, V = _long_grid_covariance_metrics(real, synthetic, sw, k)
    else:
        cov_real, cov_synth = _covariance(real), _covariance(synthetic)
        U, V = _top_subspace(cov_real, sw, k), _top_subspace(cov_synth, sw, k)
        hs_distance = float(np.linalg.norm(sw[:, None] * (cov_real - cov_synth) * sw[None, :]))
        hs_real = float(np.linalg.norm(sw[:, None] * cov_real * sw[None, :]))
    # ||P_U - P_V||_HS / sqrt(2) = sqrt(k - ||U^T V||_F^2): 0 for the same subspace, 1 when orthogonal (per axis).
    subspace = float(np.sqrt(max(k - float(np.sum((U.T @ V) ** 2)), 0.0)))
    index = np.unique(np.round(np.linspace(0, grid.size - 1, N_COMPARE_POINTS)).astype(int))
    ks = [{"t": float(grid[i]), "ks_statistic": float(stats.ks_2samp(real[:, i], synthetic[:, i]).statistic)}
          for i in index]
    return {
        "mean_l2_distance": float(np.sqrt(mean_gap**2 @ weights)),
        "real_mean_l2_norm": float(np.sqrt(real.mean(axis=0) ** 2 @ weights)),
        "covariance_hs_distance": hs_distance,
        "real_covariance_hs_norm": hs_real,
        "subspace_distance_top3": subspace,
        "subspace_distance_meaning": f"sqrt(k - ||U^T V||_F^2), k = {k}: 0 same subspace, sqrt(k) orthogonal",
        "pointwise_ks": ks,
    }


def input_layout(path, t_column: str | None = None) -> str:
    """'long' when the input was a long file (header id,t,value or a named t column), else 'wide'."""
    if t_column is not None:
        return "long"
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        names = [n.lower() for n in pq.read_schema(p).names]
        return "long" if names[:3] == ["id", "t", "value"] else "wide"
    with open(p, newline="") as handle:
        header = handle.readline().strip().lstrip("\ufeff")
    return "long" if [c.strip().lower() for c in header.split(",")][:3] == ["id", "t", "value"] else "wide"


def curves_table(curves: np.ndarray, grid: np.ndarray, layout: str) -> pd.DataFrame:
    """Synthetic curves in the input's layout: wide (id, one column per grid point) or long (id, t, value).
    Ids are synthetic (syn0001, ...): nothing of the input's own columns is copied."""
    ids = [f"syn{i + 1:04d}" for i in range(curves.shape[0])]
    if layout == "long":
        return pd.DataFrame({"id": np.repeat(ids, grid.size), "t": np.tile(grid, len(ids)),
                             "value": curves.ravel()})
    frame = pd.DataFrame(curves, columns=[repr(float(t)) for t in grid])
    frame.insert(0, "id", ids)
    return frame
