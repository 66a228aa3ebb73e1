"""The top eigenpairs of a kernel on a long grid (METHODS.md 27).

Above limits.MAX_DENSE_EIGH_POINTS grid points the dense eigendecomposition of the m x m
weighted Gram matrix M = W^1/2 K W^1/2 is the cost of a release (O(m^3), and m^2 floats of
memory: 800 MB at m = 10,000). Here the top L eigenpairs come from a Nystrom extension off a
public sub-grid, refined by one Rayleigh-Ritz step on the whole grid:

1. eigendecompose the kernel on q <= LONG_GRID_SUBGRID evenly spread grid points (dense, O(q^3));
2. extend the top L eigenvectors to every grid point (phi_l(t) = sum_j k(t, s_j) w_j phi_l(s_j) / lambda_l);
3. orthonormalise W^1/2 phi exactly (QR), form the L x L matrix Q^T M Q with the products M Q
   (FFT on a regular grid, where K is Toeplitz; row blocks of K otherwise), and rotate Q by its
   eigenvectors.

Privacy needs no exactness of these eigenpairs, only that the estimator, the noise and the
sensitivity use the same ones: the returned phi are orthonormal in the weighted inner product
to rounding (they are W^-1/2 times an orthogonal matrix's columns), and each lambda_l is the
Rayleigh quotient phi_l^T W K W phi_l exactly (the eigenvalues of Q^T M Q). Their inaccuracy
costs accuracy only. The tail is reported as a public number: trace(M) = k(0) sum_j w_j is known,
and the Ritz values' sum is at most the top L eigenvalues' sum (Ky Fan), so
``tail_trace = trace(M) - sum_l lambda_l`` bounds the eigenvalues left out from above.
"""

from __future__ import annotations

import numpy as np

LONG_GRID_SUBGRID = 1000  # sub-grid points: its dense eigendecomposition costs ~0.15 s
LONG_GRID_COMPONENTS = 200  # at most this many eigenpairs kept (the rest is the stated tail)
_BLOCK_BYTES = 8 << 20  # kernel values formed at once (their temporaries are ~6x this)


def regular_step(grid: np.ndarray) -> float | None:
    """The grid's step when its points are evenly spaced (K is then Toeplitz), else None."""
    gaps = np.diff(grid)
    h = (grid[-1] - grid[0]) / (grid.size - 1)
    return float(h) if np.max(np.abs(gaps - h)) <= 1e-9 * h else None


def kernel_times(kernel_row, grid: np.ndarray, x: np.ndarray) -> np.ndarray:
    """K @ x for the Gram matrix K_ij = k(|t_i - t_j|) on ``grid`` (x of shape (m, r)).

    ``kernel_row(d)`` evaluates k at the distances d. On a regular grid K is a symmetric
    Toeplitz matrix: a circulant embedding of size >= 2m - 1 multiplies it by FFT in
    O(r m log m); on an uneven grid K is formed a block of rows at a time.
    """
    m = grid.size
    h = regular_step(grid)
    if h is None:
        rows = max(1, _BLOCK_BYTES // (8 * m))
        out = np.empty((m, x.shape[1]))
        for start in range(0, m, rows):
            block = kernel_row(np.abs(grid[start:start + rows, None] - grid[None, :]))
            out[start:start + rows] = block @ x
        return out
    from scipy import fft  # lazy: scipy.fft is only needed on long grids; the CLI's start stays light

    first = kernel_row(np.arange(m) * h)
    size = fft.next_fast_len(2 * m - 1, real=True)
    circulant = np.zeros(size)
    circulant[:m] = first
    circulant[size - m + 1:] = first[:0:-1]
    spectrum = fft.rfft(circulant)
    return fft.irfft(spectrum[:, None] * fft.rfft(x, n=size, axis=0), n=size, axis=0)[:m]


def top_eigenpairs(kernel_row, grid: np.ndarray, w: np.ndarray, sub_eigh, rel_tol: float,
                   components: int = LONG_GRID_COMPONENTS, subgrid: int = LONG_GRID_SUBGRID):
    """(lambda, phi, tail_trace) of the top eigenpairs of W^1/2 K W^1/2 on a long grid.

    ``sub_eigh(sub_grid, sub_weights)`` returns the dense (lambda, phi) on a sub-grid, sorted
    descending (the kernels module's own dense path). lambda is sorted descending, each a
    Rayleigh quotient; phi^T W phi = I to rounding; at most ``components`` pairs, those above
    ``rel_tol * lambda_1``.
    """
    m = grid.size
    idx = np.unique(np.round(np.linspace(0, m - 1, min(m, subgrid))).astype(int))
    sub = grid[idx]
    gaps = np.diff(sub)
    ws = np.zeros(sub.size)
    ws[:-1] += gaps / 2.0
    ws[1:] += gaps / 2.0
    ws *= w.sum() / ws.sum()  # the sub-grid integrates the same measure as the grid's weights
    lam_s, phi_s = sub_eigh(sub, ws)
    keep = min(components, int(np.sum(lam_s > rel_tol * lam_s[0])))
    lam_s, phi_s = lam_s[:keep], phi_s[:, :keep]
    # Nystrom extension, one block of grid rows at a time (m x q kernel values).
    ext = np.empty((m, keep))
    coef = (ws[:, None] * phi_s) / lam_s[None, :]
    rows = max(1, _BLOCK_BYTES // (8 * sub.size))
    for start in range(0, m, rows):
        ext[start:start + rows] = kernel_row(np.abs(grid[start:start + rows, None] - sub[None, :])) @ coef
    sw = np.sqrt(w)
    q, _ = np.linalg.qr(sw[:, None] * ext)
    mq = sw[:, None] * kernel_times(kernel_row, grid, sw[:, None] * q)
    a = q.T @ mq
    theta, v = np.linalg.eigh((a + a.T) / 2.0)
    order = np.argsort(theta)[::-1]
    theta, v = theta[order], v[:, order]
    good = theta > max(rel_tol * theta[0], 0.0)
    theta, v = theta[good], v[:, good]
    trace = float(kernel_row(np.zeros(1))[0] * w.sum())
    tail = max(0.0, trace - float(np.sum(theta)))
    phi = (q @ v) / sw[:, None]
    return theta, phi, tail


def tail_sentence(truncation: dict, release: str, target: str, bias: float, norm: str) -> str:
    """The accuracy statement's words for a long grid's tail, one wording for every release.

    ``truncation`` is a release's ``basis_truncation`` (public numbers only: the grid's size and
    the omitted share of the kernel's trace); ``release`` says what the release is on the top-L
    basis, ``target`` what the tail biases, ``bias`` the bound on that bias in ``norm``. The tail
    is a bias, not noise: the sentence keeps it apart from the noise figures.
    """
    return (f" On this {truncation['grid_points']:,}-point grid the release {release}; leaving out the rest "
            f"(eigenvalues summing to at most {truncation['omitted_share_of_trace']:.2g} of the total) biases "
            f"{target} by at most {bias:.3g} in {norm} (not part of the noise figures).")
