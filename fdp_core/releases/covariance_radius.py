"""The covariance release's 95% Hilbert-Schmidt error radius by Monte Carlo, cheap per epsilon (issue 40).

Every covariance mechanism's noise has scales c sqrt(lambda_j lambda_l) (c = sigma, or Delta_1 / epsilon)
and a released mean's noise has scales b u (u its shape, b its largest scale). The Monte Carlo of
:meth:`CovarianceRelease.hs_error_radius` draws, chunk by chunk from one fixed seed, standard (L, L)
matrices and (with a released mean) standard L-vectors; everything it needs from those draws that
involves neither c, b nor the data is computed here once per noise shape, draw count and seed and
cached (keyed by public numbers only: the eigenvalues and the mean's unit shape). A move of epsilon,
of gamma, or another data set on the same kernel and grid then costs O(draws x L), not draws x L x L
fresh normals: the derivation is in docs/METHODS.md (covariance accuracy).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache, wraps

import numpy as np

from ..mechanisms.families import noise_family

HS_CHUNK_ENTRIES = 2**19  # matrix entries per Monte Carlo chunk (4 MB of float64)
MC_SEED = 12345  # the radius's fixed seed: a public, reproducible accuracy statement


def symmetrise(matrix: np.ndarray) -> np.ndarray:
    """(A + A^T) / 2 over the last two axes: the symmetric part every covariance draw is released as."""
    return (matrix + np.swapaxes(matrix, -1, -2)) / 2.0


def noise_root(eigenvalues: np.ndarray) -> np.ndarray:
    """sqrt(lambda_j lambda_l): the shape every covariance mechanism's noise scales share (registry/covariance.py)."""
    lam = np.asarray(eigenvalues, dtype=float)
    return np.sqrt(np.outer(lam, lam))


def noise_factor(scales: np.ndarray, eigenvalues: np.ndarray) -> float | None:
    """c with scales = c sqrt(lambda_j lambda_l) (sigma, or Delta_1 / epsilon), or None if they are not of that shape."""
    root = noise_root(eigenvalues)
    if root.size == 0 or root.shape != np.shape(scales) or not root[0, 0] > 0:
        return None
    factor = float(scales[0, 0] / root[0, 0])
    return factor if np.allclose(scales, factor * root, rtol=1e-12, atol=0.0) else None


def computed_once(cached):
    """Wrap an lru_cache'd function so that concurrent callers with the same arguments wait for one
    computation: ten sessions opening the page together on a cold server would otherwise each run the same
    Monte Carlo (and hold its chunks) at once. Different arguments still run in parallel."""
    locks: dict = {}
    guard = threading.Lock()

    @wraps(cached)
    def call(*args):
        with guard:
            lock, waiting = locks.get(args, (threading.Lock(), 0))
            locks[args] = (lock, waiting + 1)
        try:
            with lock:
                return cached(*args)
        finally:
            with guard:  # the key's lock is dropped once no caller holds or waits for it
                lock, waiting = locks[args]
                if waiting == 1:
                    del locks[args]
                else:
                    locks[args] = (lock, waiting - 1)

    call.cache_info, call.cache_clear = cached.cache_info, cached.cache_clear
    return call


def chunk_size(entries: int) -> int:
    """Draws per chunk for matrices of ``entries`` entries (the stream is drawn in these chunks)."""
    return max(1, HS_CHUNK_ENTRIES // max(1, entries))


@computed_once
@lru_cache(maxsize=32)
def unit_hs_radius(eigenvalue_bytes: bytes, noise: str, prob: float, draws: int) -> float:
    """The prob-quantile of ||sym(E)||_HS for noise of scales sqrt(lambda_j lambda_l) (factor 1), by the same
    Monte Carlo as :meth:`CovarianceRelease.hs_error_radius` (seed, chunks, stream). With a public centre
    the error C~ - C_hat = sym(c E) is positively homogeneous in the common factor c, so the radius of any
    epsilon, delta, n and tau is c times this one: sessions and epsilon moves on the same kernel and grid
    share one draw (issue 40). Keyed by the public eigenvalues, never by data."""
    root = noise_root(np.frombuffer(eigenvalue_bytes))
    family, rng = noise_family(noise), np.random.default_rng(MC_SEED)
    chunk = chunk_size(root.size)
    norms = []
    for start in range(0, draws, chunk):
        errors = symmetrise(family.standard(rng, (min(chunk, draws - start),) + root.shape) * root)
        norms.append(np.sqrt(np.einsum("kij,kij->k", errors, errors)))
    return float(np.quantile(np.concatenate(norms), prob))


@dataclass(frozen=True)
class ReleasedMeanDraws:
    """Per draw k of the released-mean Monte Carlo, at unit scales: S_k = sym(E_k), E_k the (L, L) standard
    draw times sqrt(lambda_j lambda_l), and z_k the L-vector standard draw times the mean's unit shape u.
    Public: functions of the seed and the public shapes only."""

    s_sq: np.ndarray  # (draws,) ||S_k||_HS^2
    z: np.ndarray  # (draws, L) z_k
    z_sq: np.ndarray  # (draws,) |z_k|^2
    s_z: np.ndarray  # (draws, L) S_k z_k
    z_s_z: np.ndarray  # (draws,) z_k^T S_k z_k

    def sq_norms(self, c: float, b: float, m: np.ndarray) -> np.ndarray:
        """||C~_k - C_hat||_HS^2 per draw for covariance factor c, mean factor b and (shrunk) mean m.

        C~_k - C_hat = c S_k - b (m z^T + z m^T) - b^2 z z^T; expanding the square with S symmetric:
        c^2 |S|^2 + 2 b^2 (|m|^2 |z|^2 + (m.z)^2) + b^4 |z|^4 - 4 c b m.(S z) - 2 c b^2 z^T S z
        + 4 b^3 (m.z) |z|^2."""
        m = np.asarray(m, dtype=float)
        mz, msz = self.z @ m, self.s_z @ m
        sq = (c * c * self.s_sq + 2 * b * b * (float(m @ m) * self.z_sq + mz * mz) + b**4 * self.z_sq**2
              - 4 * c * b * msz - 2 * c * b * b * self.z_s_z + 4 * b**3 * mz * self.z_sq)
        return np.maximum(sq, 0.0)  # rounding can push a zero norm a hair below 0


@computed_once
@lru_cache(maxsize=8)  # two (draws, L) arrays an entry: ~3 MB at L = 93, 2,000 draws
def released_mean_draws(eigenvalue_bytes: bytes, unit_bytes: bytes, noise: str, draws: int) -> ReleasedMeanDraws:
    """The public per-draw terms of the released-mean Monte Carlo, drawn in the stream order of the direct
    computation (per chunk: the (size, L, L) matrix draws, then the (size, L) mean draws)."""
    root, unit = noise_root(np.frombuffer(eigenvalue_bytes)), np.frombuffer(unit_bytes)
    family, rng = noise_family(noise), np.random.default_rng(MC_SEED)
    chunk = chunk_size(root.size)
    parts = {name: [] for name in ("s_sq", "z", "s_z", "z_s_z")}
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        S = symmetrise(family.standard(rng, (size,) + root.shape) * root)
        z = family.standard(rng, (size, unit.size)) * unit
        s_z = np.einsum("kij,kj->ki", S, z)
        parts["s_sq"].append(np.einsum("kij,kij->k", S, S))
        parts["z"].append(z)
        parts["s_z"].append(s_z)
        parts["z_s_z"].append(np.einsum("ki,ki->k", z, s_z))
    joined = {name: np.concatenate(values) for name, values in parts.items()}
    joined["z_sq"] = np.einsum("ki,ki->k", joined["z"], joined["z"])
    for array in joined.values():
        array.flags.writeable = False  # shared by every caller of the cache
    return ReleasedMeanDraws(**joined)
