"""The matrix Bingham Gibbs chain compiled with numba (same algorithm as bingham._gibbs_chain).

Why: a sweep is a long chain of tiny dense operations (q x q, q = p - k + 1); in Python the
interpreter overhead dominates (about 68% of 6 s for 20,000 sweeps at p = 40, k = 3). Here
each column update -- restricted matrix, tracked ACG envelope (Cholesky certificate),
rejection draws, Householder update of the complement basis -- runs as compiled loops.

The chain is the one of :func:`fdp_core.mechanisms.bingham._gibbs_chain`: the same full
conditionals drawn exactly with the same ACG test and the same envelope tracking (Rayleigh
quotient + one inverse-iteration step, spectral refresh every 256 conditionals, Ritz restart), so its
stationary distribution is the matrix Bingham. Its random numbers come from a numpy Generator
(PCG64, seeded from the caller's Generator) used inside the compiled code: numpy's ziggurat
normals cost ~4 ns each there, against ~65 ns for numba's legacy np.random.standard_normal,
and a proposal needs q of them. Reproducible for a seed, but not the same stream as the
Python path (tests compare the two in distribution, not bit for bit).
Rounding drift is removed every 64 sweeps as in Python (the complement basis is rebuilt
from an eigendecomposition of I - Z Z^T rather than a complete QR, which numba lacks).
"""

from __future__ import annotations

import math

import numpy as np

from .numba_cache import cache_dir

try:
    import numba
except ImportError:  # pragma: no cover - pinned in requirements.txt; the Python chain remains
    numba = None
else:
    # A read-only install: numba's cache goes to the user's cache folder (numba_cache.py). Set
    # before the njit decorators below; numba looks CACHE_DIR up when it locates a cache.
    _user_cache = cache_dir()
    if _user_cache is not None:
        numba.config.CACHE_DIR = _user_cache

REFRESH = 256  # conditionals between spectral refreshes of b (bingham._EnvelopeTracker.refresh)
MARGIN = 1.5  # bingham.MARGIN


# Loading the compiled chain from numba's disk cache costs a few seconds per process: worth it
# from about this many column updates. (Compiling it the very first time takes ~30 s: never in
# a user's way, see worth_it.)
AUTO_MIN_UPDATES = 30_000


def available() -> bool:
    return numba is not None


def loaded() -> bool:
    """The compiled chain is ready in this process (compiled or loaded from the disk cache)."""
    return bool(numba is not None and globals().get("_chain") is not None and _chain.signatures)


def cached_on_disk() -> bool:
    """numba's cache (``cache=True``: __pycache__, or $XDG_CACHE_HOME/fdp/numba when that is read-only)
    holds the compiled chain: loading it takes seconds. Without it the first compile takes
    ~30 s. Read through numba's cache object; any surprise from it counts as "not cached"."""
    try:
        return bool(_chain._cache._cache_file._load_index())
    except Exception:
        return False


def compile_now() -> None:
    """Compile the chain (or load it from numba's disk cache) in this process. A one-sweep chain
    on a tiny problem gives numba the same argument types as a real run, so the signature it
    compiles, and caches on disk, is the one every later call uses."""
    if numba is None or loaded() or cached_on_disk():
        return
    a = np.array([2.0, 1.0, 0.0])
    gibbs_chain(a, np.eye(3), np.eye(3)[:, :1], np.random.default_rng(0), 1, 0, 1)


def worth_it(n_sweeps: int, k: int) -> bool:
    """Use the compiled chain: numba is installed and the chain is loaded in this process, or
    it is in numba's disk cache and the chain is long enough to repay loading it.

    Never compile in the user's way: when the chain is neither loaded nor cached (the very
    first PCA after an install or an upgrade would wait ~30 s for numba), this chain runs in
    Python. The app fills the cache ahead, in a background process
    (gibbs_warm_up.warm_up_in_background, from the Principal components page); later long
    chains load the compiled chain from it.
    """
    if numba is None:
        return False
    if loaded():
        return True
    return cached_on_disk() and int(n_sweeps) * int(k) >= AUTO_MIN_UPDATES


if numba is not None:
    njit = numba.njit(cache=True, fastmath=False, nogil=True)
    # The inner products of the Cholesky factorisation, the triangular solves and the quadratic
    # forms: reassociating their sums (and fusing multiply-adds) lets LLVM vectorise them. Only
    # the rounding of these sums changes; no NaN/infinity assumptions (the Cholesky's positivity
    # test and the acceptance test keep IEEE semantics).
    fast = numba.njit(cache=True, fastmath={"reassoc", "contract"}, nogil=True)

    @fast
    def _cholesky(M, L):
        """Lower Cholesky factor of M into L; False if M is not (numerically) positive definite."""
        n = M.shape[0]
        for j in range(n):
            s = M[j, j]
            for k in range(j):
                s -= L[j, k] * L[j, k]
            if not s > 0.0:
                return False
            d = math.sqrt(s)
            L[j, j] = d
            for i in range(j + 1, n):
                t = M[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                L[i, j] = t / d
            for i in range(j):
                L[i, j] = 0.0
        return True

    @fast
    def _potrs(L, x):
        """Solve L L^T y = x in place."""
        n = L.shape[0]
        for i in range(n):
            s = x[i]
            for k in range(i):
                s -= L[i, k] * x[k]
            x[i] = s / L[i, i]
        for i in range(n - 1, -1, -1):
            s = x[i]
            for k in range(i + 1, n):
                s -= L[k, i] * x[k]
            x[i] = s / L[i, i]

    @njit
    def _solve_b(lam):
        """KGM's b: sum_i 1/(b + 2 lam_i) = 1, Newton from b = 1 (bingham._solve_acg_b_rows)."""
        b = 1.0
        for _ in range(200):
            s1 = 0.0
            s2 = 0.0
            for v in lam:
                t = 1.0 / (b + 2.0 * v)
                s1 += t
                s2 += t * t
            step = max((s1 * s1 - s1) / s2, 0.0)
            b += step
            if step <= 1e-9:
                break
        return min(b, float(lam.size))

    @fast
    def _quad(x, M):
        q = x.size
        s = 0.0
        for i in range(q):
            t = 0.0
            for j in range(q):
                t += M[i, j] * x[j]
            s += x[i] * t
        return s

    @njit
    def _shifted(AS, s, out):
        q = AS.shape[0]
        for i in range(q):
            for j in range(q):
                out[i, j] = -AS[i, j]
            out[i, i] += s

    @njit
    def _spectral(AS, S, col, bs, us, has_u, ages, L, work, x):
        q = AS.shape[0]
        theta = np.linalg.eigvalsh(AS)
        top = theta[q - 1]
        b = _solve_b(top - theta)
        bs[col] = b
        ages[col] = 1
        s = top + b / 2.0
        ok = False
        for bump in (0.0, 1e-12, 1e-9, 1e-6, 1e-3):
            _shifted(AS, s + bump * max(1.0, abs(s)), work)
            if _cholesky(work, L):
                ok = True
                break
        if not ok:
            raise FloatingPointError("cannot factor the ACG envelope matrix")
        if has_u[col]:
            x[:] = S.T @ us[col] + 1e-3
        else:
            x[:] = 1.0
        for _ in range(3):
            _potrs(L, x)
            x /= math.sqrt(np.dot(x, x))
        us[col] = S @ x
        has_u[col] = True

    @fast
    def _ritz_start(AS, S, x, use_x, k, Y, AY, B, V):
        """bingham._ritz_start in loops (no LAPACK calls: their overhead exceeds the work at
        these sizes): x <- the top Ritz vector; returns its quotient. Y, AY (rows: vectors)
        and B, V (Jacobi's matrix and rotations) are work arrays of k + 3 rows."""
        p, q = S.shape
        m = 0
        for c in range(k + 3):
            if c == 0 and not use_x:
                continue
            row = Y[m]
            if c == 0:
                row[:] = x
            elif c == 1:
                row[:] = 0.0
                row[0] = 1.0
            else:
                row[:] = S[p + 1 - c]  # A's eigenvectors from the top (a is ascending)
            for _ in range(2):  # modified Gram-Schmidt, twice for orthogonality
                for r in range(m):
                    d = 0.0
                    for j in range(q):
                        d += row[j] * Y[r, j]
                    for j in range(q):
                        row[j] -= d * Y[r, j]
            nr = math.sqrt(np.dot(row, row))
            if nr > 1e-6 and m < q:
                row /= nr
                m += 1
        for r in range(m):
            for i in range(q):
                t = 0.0
                for j in range(q):
                    t += AS[i, j] * Y[r, j]
                AY[r, i] = t
        for r in range(m):
            for c in range(m):
                t = 0.0
                for j in range(q):
                    t += Y[r, j] * AY[c, j]
                B[r, c] = t
            for c in range(m):
                V[r, c] = 1.0 if r == c else 0.0
        for r in range(m):  # symmetrise the rounding
            for c in range(r):
                B[r, c] = B[c, r] = 0.5 * (B[r, c] + B[c, r])
        for _ in range(30):  # cyclic Jacobi on the m x m Ritz matrix
            off = 0.0
            scale = 0.0
            for r in range(m):
                scale += B[r, r] * B[r, r]
                for c in range(r):
                    off += B[r, c] * B[r, c]
            if off <= 1e-28 * max(scale, 1e-300):
                break
            for i in range(m - 1):
                for j in range(i + 1, m):
                    if B[i, j] == 0.0:
                        continue
                    theta = (B[j, j] - B[i, i]) / (2.0 * B[i, j])
                    t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                    cs = 1.0 / math.sqrt(t * t + 1.0)
                    sn = t * cs
                    for r in range(m):
                        bri = B[r, i]
                        brj = B[r, j]
                        B[r, i] = cs * bri - sn * brj
                        B[r, j] = sn * bri + cs * brj
                    for r in range(m):
                        bir = B[i, r]
                        bjr = B[j, r]
                        B[i, r] = cs * bir - sn * bjr
                        B[j, r] = sn * bir + cs * bjr
                    for r in range(m):
                        vri = V[r, i]
                        vrj = V[r, j]
                        V[r, i] = cs * vri - sn * vrj
                        V[r, j] = sn * vri + cs * vrj
        top = 0
        for r in range(1, m):
            if B[r, r] > B[top, top]:
                top = r
        x[:] = 0.0
        for r in range(m):
            for j in range(q):
                x[j] += V[r, top] * Y[r, j]
        x /= math.sqrt(np.dot(x, x))
        return _quad(x, AS)

    @njit
    def _envelope(AS, S, col, bs, us, has_u, ages, L, L2, work, x, Y, AY, B, V):
        """(tracked, spectral solves) with L the certified envelope factor (bingham._EnvelopeTracker)."""
        if not has_u[col] or ages[col] >= REFRESH:
            _spectral(AS, S, col, bs, us, has_u, ages, L, work, x)
            return False, 1
        x[:] = S.T @ us[col]
        nx = math.sqrt(np.dot(x, x))
        rho = _quad(x, AS) / (nx * nx) if nx >= 0.5 else -np.inf
        if nx >= 0.5:
            x /= nx
        # The start with the largest quotient among the tracked vector, the current column
        # and the projection of A's top eigenvector (bingham._EnvelopeTracker.envelope).
        if AS[0, 0] > rho:
            x[:] = 0.0
            x[0] = 1.0
            rho = AS[0, 0]
        p = S.shape[0]
        nt = math.sqrt(np.dot(S[p - 1], S[p - 1]))
        if nt > 1e-3:
            top = S[p - 1] / nt
            rho_top = _quad(top, AS)
            if rho_top > rho:
                x[:] = top
                rho = rho_top
        half_b = bs[col] / 2.0
        first = MARGIN * half_b  # bingham._EnvelopeTracker.envelope: a margin above the quotient
        _shifted(AS, rho + first, work)
        if not _cholesky(work, L):
            # theta_max > rho + first: restart from the top Ritz pair on x, e1 and A's top k + 1
            # eigenvectors projected (bingham._ritz_start), then retry.
            rho = _ritz_start(AS, S, x, True, bs.size, Y, AY, B, V)
            _shifted(AS, rho + first, work)
            if not _cholesky(work, L):
                _spectral(AS, S, col, bs, us, has_u, ages, L, work, x)
                return False, 1
        _potrs(L, x)
        x /= math.sqrt(np.dot(x, x))
        rho_new = _quad(x, AS)
        if rho + first - rho_new < 0.5 * half_b:
            _shifted(AS, rho_new + half_b, work)
            if _cholesky(work, L2):
                L[:, :] = L2
        ages[col] += 1
        us[col] = S @ x
        has_u[col] = True
        return True, 0

    @fast
    def _acg_draw(L, limit, w, z, y, R, gen):
        """One exact draw of exp(-x^T L L^T x) on the sphere into w; (found, examined).

        Proposal y = L^-T z (back substitution), z ~ N(0, I); accept when an Exp(1) variable
        exceeds the rejection cost (bingham._acg_draw). R receives L^T, so that the back
        substitution reads rows (contiguous) rather than columns of L."""
        q = L.shape[0]
        for i in range(q):
            for k in range(i, q):
                R[i, k] = L[k, i]
        examined = 0
        while limit < 0 or examined < limit:
            zz = 0.0
            for i in range(q):
                z[i] = gen.standard_normal()
                zz += z[i] * z[i]
            ny2 = 0.0
            for i in range(q - 1, -1, -1):
                s = z[i]
                for k in range(i + 1, q):
                    s -= R[i, k] * y[k]
                y[i] = s / R[i, i]
                ny2 += y[i] * y[i]
            examined += 1
            wq = (2.0 / q) * (zz / ny2)
            cost = (q / 2.0) * (wq - 1.0 - math.log(wq))
            if gen.standard_exponential() > cost:
                r = 1.0 / math.sqrt(ny2)
                for i in range(q):
                    w[i] = y[i] * r
                return True, examined
        return False, examined

    @fast
    def _new_row(a, S, AS, row):
        """Row and column 0 of AS = S^T diag(a) S after S's column 0 changed (rows of S read
        contiguously)."""
        p, q = S.shape
        row[:q] = 0.0
        for i in range(p):
            c = a[i] * S[i, 0]
            for j in range(q):
                row[j] += c * S[i, j]
        for j in range(q):
            AS[0, j] = row[j]
            AS[j, 0] = row[j]

    @fast
    def _reflect(S, AS, Z, l, w, h, g, Sh):
        """Column l becomes S w; the Householder reflection H = I + c h h^T with H e1 = sigma w
        (bingham._gibbs_chain) turns S into S H, whose columns 1.. span the complement of all
        columns, and AS into H AS H (a rank-2 update, O(q^2) instead of O(p q^2))."""
        p, q = S.shape
        if w[0] > 0:
            h[:] = w
        else:
            h[:] = -w
        h[0] += 1.0
        hh = 0.0
        for j in range(q):
            hh += h[j] * h[j]
        c = -2.0 / hh
        for i in range(p):
            t = 0.0
            u = 0.0
            for j in range(q):
                t += S[i, j] * w[j]
                u += S[i, j] * h[j]
            Z[i, l] = t
            Sh[i] = u
        for i in range(p):
            ci = c * Sh[i]
            for j in range(q):
                S[i, j] += ci * h[j]
        beta = 0.0
        for i in range(q):
            t = 0.0
            for j in range(q):
                t += AS[i, j] * h[j]
            g[i] = t
            beta += h[i] * t
        cc = c * c * beta
        for i in range(q):
            chi = c * h[i]
            cgi = c * g[i]
            dhi = cc * h[i]
            for j in range(q):
                AS[i, j] += chi * g[j] + cgi * h[j] + dhi * h[j]

    @njit
    def _restricted(a, S, aS):
        p, q = S.shape
        for i in range(p):
            for j in range(q):
                aS[i, j] = a[i] * S[i, j]
        return S.T @ aS

    @njit
    def _complement(Z, out):
        """Orthonormal basis of the complement of Z's columns (p x (p - k))."""
        p, k = Z.shape
        P = np.eye(p) - Z @ Z.T
        vals, vecs = np.linalg.eigh((P + P.T) / 2.0)
        out[:, :] = vecs[:, k:]

    @njit
    def _chain(a, Z, gen, n_sweeps, burn_in, thin, U, kept, trace):
        p, k = Z.shape
        q = p - k + 1
        S = np.empty((p, q))
        comp = np.empty((p, p - k))
        _complement(Z, comp)
        S[:, 1:] = comp
        bs = np.ones(k)
        us = np.zeros((k, p))
        has_u = np.zeros(k, dtype=np.bool_)
        ages = np.zeros(k, dtype=np.int64)
        L = np.zeros((q, q))
        L2 = np.zeros((q, q))
        LT = np.zeros((q, q))
        order = np.empty(k, dtype=np.int64)
        Y = np.empty((k + 3, q))  # work arrays of the Ritz start
        AY = np.empty((k + 3, q))
        B = np.empty((k + 3, k + 3))
        V = np.empty((k + 3, k + 3))
        a0 = np.empty(p)
        work = np.empty((q, q))
        x = np.empty(q)
        w = np.empty(q)
        z = np.empty(q)
        y = np.empty(q)
        aS = np.empty((p, q))
        h = np.empty(q)
        limit = int(40 * math.sqrt(math.e * q / 2.0)) + 16
        accepted = 0
        proposed = 0
        spectral = 0
        i_kept = 0
        AS = _restricted(a, S, aS)
        g = np.empty(q)
        Sh = np.empty(p)
        for sweep in range(n_sweeps):
            for i in range(k):  # a fresh random order (Fisher-Yates)
                order[i] = i
            for i in range(k - 1, 0, -1):
                j = gen.integers(0, i + 1)
                order[i], order[j] = order[j], order[i]
            for l in order:
                # Column 0 becomes the updated column; the rest of AS = S^T diag(a) S is kept
                # current by the reflections below (O(q^2) instead of O(p q^2) per update).
                S[:, 0] = Z[:, l]
                _new_row(a, S, AS, a0)
                tracked, solves = _envelope(AS, S, l, bs, us, has_u, ages, L, L2, work, x, Y, AY, B, V)
                spectral += solves
                found, examined = _acg_draw(L, limit if tracked else -1, w, z, y, LT, gen)
                proposed += examined
                if not found:
                    _spectral(AS, S, l, bs, us, has_u, ages, L, work, x)
                    spectral += 1
                    found, examined = _acg_draw(L, -1, w, z, y, LT, gen)
                    proposed += examined
                accepted += 1
                _reflect(S, AS, Z, l, w, h, g, Sh)
            if sweep % 64 == 63:
                Q, R = np.linalg.qr(Z)
                for j in range(k):
                    sgn = 1.0 if R[j, j] >= 0 else -1.0
                    Z[:, j] = Q[:, j] * sgn
                _complement(Z, comp)
                S[:, 1:] = comp
                AS = _restricted(a, S, aS)  # drops the rounding drift of the rank-2 updates
            for j in range(k):
                t = 0.0
                for i in range(p):
                    t += a[i] * Z[i, j] * Z[i, j]
                trace[sweep, j] = t
            if sweep >= burn_in and (sweep - burn_in) % thin == thin - 1:
                kept[i_kept] = U @ Z
                i_kept += 1
        return accepted, proposed, spectral


def gibbs_chain(a, U, Z, rng, n_sweeps, burn_in, thin):
    """Run the compiled chain; returns the arguments of bingham.GibbsDraws."""
    p, k = Z.shape
    n_kept = len(range(burn_in + thin - 1, n_sweeps, thin))
    kept = np.empty((n_kept, p, k))
    trace = np.empty((n_sweeps, k))
    # Always a PCG64 Generator: one argument type, so one compiled (and cached) signature.
    gen = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))
    Z = np.ascontiguousarray(Z, dtype=float).copy()
    accepted, proposed, spectral = _chain(np.ascontiguousarray(a, dtype=float), Z, gen, int(n_sweeps), int(burn_in),
                                          int(thin), np.ascontiguousarray(U, dtype=float), kept, trace)
    return dict(sample=U @ Z, samples=kept, trace=trace, acceptance_rate=accepted / proposed, n_sweeps=n_sweeps,
                burn_in=burn_in, thin=thin, n_spectral_solves=int(spectral))
