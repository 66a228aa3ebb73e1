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

Small k (6(k - 1) < q: k <= 6 at p = 40) takes another route to the same
conditionals, :func:`_lowrank_chain`: no complement basis or q x q matrix is kept; k - 1
Householder reflections give s I - A_S as a diagonal plus a rank-2(k-1) term, from which the
KGM-optimal shift, its certificate and O(q k) proposals follow (see the section's comment).
Same ACG test, same full conditionals, hence the same stationary law; it is written in this
file because numba's disk cache of ``_chain`` is invalidated only by changes to this file.
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

    # numba inlines this into each caller (inline="always"), where it is compiled with the caller's
    # floating-point flags: ``fast`` in the Ritz start, IEEE in the low-rank inertia check, as when
    # each had its own copy (the chains stay the same bit for bit).
    @numba.njit(inline="always")
    def _jacobi_sweeps(B, V, n, sweeps, tol):
        """Cyclic Jacobi on the leading n x n block of the symmetric B, in place: B -> diag(theta),
        V (columns) the rotations from the identity. At most ``sweeps`` sweeps; stops when the
        squared off-diagonal mass is at most ``tol`` times the squared diagonal's."""
        for r in range(n):
            for c in range(n):
                V[r, c] = 1.0 if r == c else 0.0
        for _ in range(sweeps):
            off = 0.0
            scale = 0.0
            for r in range(n):
                scale += B[r, r] * B[r, r]
                for c in range(r):
                    off += B[r, c] * B[r, c]
            if off <= tol * max(scale, 1e-300):
                break
            for i in range(n - 1):
                for j in range(i + 1, n):
                    if B[i, j] == 0.0:
                        continue
                    theta = (B[j, j] - B[i, i]) / (2.0 * B[i, j])
                    t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                    cs = 1.0 / math.sqrt(t * t + 1.0)
                    sn = t * cs
                    for r in range(n):
                        bri = B[r, i]
                        brj = B[r, j]
                        B[r, i] = cs * bri - sn * brj
                        B[r, j] = sn * bri + cs * brj
                    for r in range(n):
                        bir = B[i, r]
                        bjr = B[j, r]
                        B[i, r] = cs * bir - sn * bjr
                        B[j, r] = sn * bir + cs * bjr
                    for r in range(n):
                        vri = V[r, i]
                        vrj = V[r, j]
                        V[r, i] = cs * vri - sn * vrj
                        V[r, j] = sn * vri + cs * vrj

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
        for r in range(m):  # symmetrise the rounding
            for c in range(r):
                B[r, c] = B[c, r] = 0.5 * (B[r, c] + B[c, r])
        _jacobi_sweeps(B, V, m, 30, 1e-28)  # the m x m Ritz matrix
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

    # The ACG proposal's normals and its rejection test, shared by the general route's draw (q x q
    # Cholesky factor) and the small-k route's (low-rank factor); inlined (numba, inline="always") so
    # that they are compiled with the draws' own flags, as when each draw had its own copy.
    @numba.njit(inline="always")
    def _standard_normals(z, gen):
        """z ~ N(0, I) from numpy's ziggurat; returns z^T z."""
        zz = 0.0
        for i in range(z.size):
            z[i] = gen.standard_normal()
            zz += z[i] * z[i]
        return zz

    @numba.njit(inline="always")
    def _acg_accept(zz, ny2, y, w, gen):
        """KGM's exact ACG rejection test (bingham._acg_draw) for a proposal y with y^T M y = zz = z^T z
        and |y|^2 = ny2: accept when an Exp(1) variable exceeds the rejection cost, then w = y / |y|."""
        q = y.size
        wq = (2.0 / q) * (zz / ny2)
        cost = (q / 2.0) * (wq - 1.0 - math.log(wq))
        if gen.standard_exponential() > cost:
            r = 1.0 / math.sqrt(ny2)
            for i in range(q):
                w[i] = y[i] * r
            return True
        return False

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
            zz = _standard_normals(z, gen)
            ny2 = 0.0
            for i in range(q - 1, -1, -1):
                s = z[i]
                for k in range(i + 1, q):
                    s -= R[i, k] * y[k]
                y[i] = s / R[i, i]
                ny2 += y[i] * y[i]
            examined += 1
            if _acg_accept(zz, ny2, y, w, gen):
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

    # The sweep's steps shared by both routes, inlined into each (no call per sweep).
    @numba.njit(inline="always")
    def _fresh_order(order, gen):
        """A fresh random order of the k columns for the next sweep (Fisher-Yates)."""
        k = order.size
        for i in range(k):
            order[i] = i
        for i in range(k - 1, 0, -1):
            j = gen.integers(0, i + 1)
            order[i], order[j] = order[j], order[i]

    @numba.njit(inline="always")
    def _reorthonormalise(Z):
        """Drop the rounding drift: Z <- the Q of its QR, with signs that keep each column's direction."""
        Q, R = np.linalg.qr(Z)
        for j in range(Z.shape[1]):
            sgn = 1.0 if R[j, j] >= 0 else -1.0
            Z[:, j] = Q[:, j] * sgn

    @numba.njit(inline="always")
    def _record_sweep(a, Z, U, sweep, burn_in, thin, trace, kept, i_kept):
        """The sweep's trace (z_j^T diag(a) z_j per column) and, past the burn-in every thin-th sweep,
        the kept draw U Z; returns the next kept index."""
        p, k = Z.shape
        for j in range(k):
            t = 0.0
            for i in range(p):
                t += a[i] * Z[i, j] * Z[i, j]
            trace[sweep, j] = t
        if sweep >= burn_in and (sweep - burn_in) % thin == thin - 1:
            kept[i_kept] = U @ Z
            i_kept += 1
        return i_kept

    @njit
    def _complement(Z, out):
        """Orthonormal basis of the complement of Z's columns (p x (p - k))."""
        p, k = Z.shape
        P = np.eye(p) - Z @ Z.T
        vals, vecs = np.linalg.eigh((P + P.T) / 2.0)
        out[:, :] = vecs[:, k:]

    # -------------------------------------------------------------------------------------
    # Small k: the conditional's envelope from a low-rank form (no q x q factorisation)
    # -------------------------------------------------------------------------------------
    #
    # In A's eigen-coordinates (A = diag(a), a ascending) column l's full conditional is the
    # vector Bingham exp(x^T diag(a) x) on the unit sphere of the complement of the other
    # m = k - 1 columns C. m Householder reflections H_j = I - beta_j v_j v_j^T take C onto
    # the last m coordinates; Q = H_0 ... H_(m-1) then has the complement's orthonormal
    # basis S in its first q = p - m columns, and since each reflection changes a symmetric
    # matrix by a rank-2 term (H X H = X - v w^T - w v^T, w = beta X v - beta^2 (v^T X v) v / 2),
    #
    #     M(s) = s I - S^T diag(a) S = Delta + G J G^T,   Delta = diag(s - a_0, ..., s - a_(q-1)),
    #
    # with G = [V, W] (q x 2m: the reflections' v_j and w_j, first q rows) and J = [[0, I], [I, 0]].
    # This is exactly the restricted matrix of the general chain (same S up to the choice of
    # basis, to which the conditional law is invariant), reached in O(p m^2) instead of O(p q^2).
    # The envelope is the same ACG test with the same KGM-optimal shift, tr(M(s)^-1) = 2,
    # found by Newton's method on 1/tr(M(s)^-1) (concave and increasing in s above
    # lambda_max: steps from the left of the root stay valid; steps from the right are clamped)
    # with Woodbury's formula tr(M^-1) = sum 1/Delta - tr(K^-1 G^T Delta^-2 G),
    # K = J + G^T Delta^-1 G; the column's last shift is kept when it is within 5%. A valid s
    # (s > lambda_max, i.e. M positive definite) is certified by the factor used to draw:
    # Delta^(-1/2) G = Qg Rg (Gram-Schmidt, Qg orthonormal q x 2m), E = Rg J Rg^T, so
    # M = Delta^(1/2) (I + Qg E Qg^T) Delta^(1/2), positive definite iff I + E = L L^T has a
    # Cholesky factor (2m x 2m), and then a proposal
    #     y = Delta^(-1/2) (z + Qg (L^-T - I) Qg^T z),   z ~ N(0, I_q),
    # has y ~ N(0, M^-1) with y^T M y = z^T z, as the q x q Cholesky back substitution gives.

    # The low-rank route while its width 2m stays below this share of q (k <= 6 at p = 40): at
    # p = 14, k = 3 (DTI's page defaults, 2m = q/3) the general chain's q x q work is as cheap.
    LOWRANK_MAX_WIDTH = 1.0 / 3.0

    @njit
    def _use_lowrank(p, k):
        return k >= 2 and 2 * (k - 1) < LOWRANK_MAX_WIDTH * (p - k + 1)

    @njit
    def _householders(Z, l, Cw, Vh, betas):
        """Reflections taking the columns other than l onto the last coordinates (rows of Vh)."""
        p, k = Z.shape
        m = k - 1
        c = 0
        for j in range(k):
            if j != l:
                Cw[:, c] = Z[:, j]
                c += 1
        for j in range(m):
            t = p - 1 - j
            nrm = 0.0
            for i in range(t + 1):
                nrm += Cw[i, j] * Cw[i, j]
            nrm = math.sqrt(nrm)
            v = Vh[j]
            v[:] = 0.0
            for i in range(t + 1):
                v[i] = Cw[i, j]
            v[t] += nrm if Cw[t, j] >= 0.0 else -nrm
            vv = 0.0
            for i in range(t + 1):
                vv += v[i] * v[i]
            beta = 2.0 / vv if vv > 0.0 else 0.0
            betas[j] = beta
            for c in range(j + 1, m):
                d = 0.0
                for i in range(t + 1):
                    d += v[i] * Cw[i, c]
                d *= beta
                for i in range(t + 1):
                    Cw[i, c] -= d * v[i]

    @njit
    def _lowrank_terms(a, Vh, betas, Wl, g):
        """w_j of diag(a) -> H_j ... H_0 diag(a) H_0 ... H_j = diag(a) - sum v w^T + w v^T."""
        m, p = Vh.shape
        for j in range(m):
            v = Vh[j]
            for i in range(p):
                g[i] = a[i] * v[i]
            for r in range(j):
                dw = 0.0
                dv = 0.0
                for i in range(p):
                    dw += Wl[r, i] * v[i]
                    dv += Vh[r, i] * v[i]
                for i in range(p):
                    g[i] -= Vh[r, i] * dw + Wl[r, i] * dv
            gam = 0.0
            for i in range(p):
                gam += v[i] * g[i]
            beta = betas[j]
            half = 0.5 * beta * beta * gam
            for i in range(p):
                Wl[j, i] = beta * g[i] - half * v[i]

    @njit
    def _small_solve(K, B, X, piv_work):
        """X = K^-1 B (n x n, Gaussian elimination with partial pivoting); False if singular."""
        n = K.shape[0]
        piv_work[:, :n] = K
        piv_work[:, n:] = B
        w = piv_work
        cols = w.shape[1]
        for j in range(n):
            best = j
            for i in range(j + 1, n):
                if abs(w[i, j]) > abs(w[best, j]):
                    best = i
            if w[best, j] == 0.0:
                return False
            if best != j:
                for c in range(cols):
                    w[j, c], w[best, c] = w[best, c], w[j, c]
            for i in range(j + 1, n):
                f = w[i, j] / w[j, j]
                for c in range(j, cols):
                    w[i, c] -= f * w[j, c]
        for i in range(n - 1, -1, -1):
            for c in range(n, cols):
                s = w[i, c]
                for r in range(i + 1, n):
                    s -= w[i, r] * X[r, c - n]
                X[i, c - n] = s / w[i, i]
        return True

    @njit
    def _jacobi(B, V):
        """Eigen-decomposition of the small symmetric B in place: B -> diag(theta), V (columns). A call
        of its own (not inlined into _woodbury, whose compiled code stays as compact as it was)."""
        _jacobi_sweeps(B, V, B.shape[0], 50, 1e-30)

    @njit
    def _woodbury(a, q, G, s, K, H2, H3, X2, X3, piv_work, E, Vs, check):
        """(f, f', valid) with f = tr(M(s)^-1) and f' its derivative; valid: M(s) is positive
        definite by K's inertia (Haynsworth: with Delta > 0, M > 0 iff K has exactly m positive
        eigenvalues; skipped unless ``check``). G holds the 2m columns as rows (2m x q)."""
        n = G.shape[0]
        m = n // 2
        if not s > a[q - 1]:
            return 0.0, 0.0, False
        K[:, :] = 0.0
        H2[:, :] = 0.0
        H3[:, :] = 0.0
        sd1 = 0.0
        sd2 = 0.0
        for i in range(q):
            d = 1.0 / (s - a[i])
            d2 = d * d
            sd1 += d
            sd2 += d2
            d3 = d2 * d
            for r in range(n):
                gr = G[r, i]
                for c in range(r + 1):
                    t = gr * G[c, i]
                    K[r, c] += t * d
                    H2[r, c] += t * d2
                    H3[r, c] += t * d3
        for r in range(n):
            for c in range(r):
                K[c, r] = K[r, c]
                H2[c, r] = H2[r, c]
                H3[c, r] = H3[r, c]
        for r in range(m):
            K[r, r + m] += 1.0
            K[r + m, r] += 1.0
        if check:
            E[:, :] = K
            _jacobi(E, Vs)
            positive = 0
            for r in range(n):
                if E[r, r] > 0.0:
                    positive += 1
                elif not E[r, r] < 0.0:
                    return 0.0, 0.0, False
            if positive != m:
                return 0.0, 0.0, False
        if not _small_solve(K, H2, X2, piv_work) or not _small_solve(K, H3, X3, piv_work):
            return 0.0, 0.0, False
        tr2 = 0.0
        tr22 = 0.0
        tr3 = 0.0
        for r in range(n):
            tr2 += X2[r, r]
            tr3 += X3[r, r]
            for c in range(n):
                tr22 += X2[r, c] * X2[c, r]
        f = sd1 - tr2
        fp = -sd2 - tr22 + 2.0 * tr3
        return f, fp, f > 0.0 and fp < 0.0

    @njit
    def _lowrank_factor(a, q, G, s, r, Qt, R, E, L, Xm):
        """M(s) = Delta^(1/2) (I + Qg E Qg^T) Delta^(1/2) with Qg orthonormal (q x 2m, stored
        transposed in Qt) and E = Rg J Rg^T (G~ = Delta^(-1/2) G = Qg Rg). r = Delta^(-1/2) and
        Xm = L^-T - I with L L^T = I + E. False unless s > a_(q-1) and the Cholesky factor of
        I + E exists: the certificate that M(s) is positive definite, i.e. s > lambda_max.
        The proposal factor F = Delta^(-1/2) (I + Qg Xm Qg^T) has F F^T = M^-1, F^T M F = I."""
        n = G.shape[0]
        m = n // 2
        for i in range(q):
            t = s - a[i]
            if not t > 0.0:
                return False
            r[i] = 1.0 / math.sqrt(t)
        for j in range(n):  # G~ = Delta^(-1/2) G, then modified Gram-Schmidt twice
            for i in range(q):
                Qt[j, i] = G[j, i] * r[i]
        R[:, :] = 0.0
        for j in range(n):
            row = Qt[j]
            for _ in range(2):
                for t in range(j):
                    d = 0.0
                    for i in range(q):
                        d += Qt[t, i] * row[i]
                    R[t, j] += d
                    for i in range(q):
                        row[i] -= d * Qt[t, i]
            nr = 0.0
            for i in range(q):
                nr += row[i] * row[i]
            nr = math.sqrt(nr)
            R[j, j] = nr
            if nr > 0.0:
                for i in range(q):
                    row[i] /= nr
            # nr == 0: zero row and column in E, so the zero row of Qt never gets a weight.
        for i in range(n):  # I + E, E = Rg J Rg^T
            for j in range(n):
                t = 1.0 if i == j else 0.0
                for h in range(m):
                    t += R[i, h] * R[j, h + m] + R[i, h + m] * R[j, h]
                E[i, j] = t
        if not _cholesky(E, L):
            return False
        for j in range(n):  # Xm = L^-T - I: columns of L^-T by back substitution on L^T
            for i in range(n - 1, -1, -1):
                t = 1.0 if i == j else 0.0
                for h in range(i + 1, n):
                    t -= L[h, i] * Xm[h, j]
                Xm[i, j] = t / L[i, i]
        for j in range(n):
            Xm[j, j] -= 1.0
        return True

    @njit
    def _factor_trace(q, r, Qt, Xm, W, Phi):
        """(tr(M^-1), -tr(M^-2)) from the factor: M^-1 = R (I + Qg Phi Qg^T) R, R = diag(r),
        Phi = (I + Xm)(I + Xm)^T - I, so with W = Qg^T R^2 Qg and W4 = Qg^T R^4 Qg,
        tr(M^-1) = sum r^2 + tr(Phi W) and tr(M^-2) = sum r^4 + 2 tr(Phi W4) + tr(Phi W Phi W)."""
        n = Qt.shape[0]
        for j in range(n):
            for h in range(j + 1):
                t = 0.0
                for i in range(n):
                    t += (Xm[j, i] + (1.0 if i == j else 0.0)) * (Xm[h, i] + (1.0 if i == h else 0.0))
                if j == h:
                    t -= 1.0
                Phi[j, h] = t
                Phi[h, j] = t
        f = 0.0
        g = 0.0
        for i in range(q):
            r2 = r[i] * r[i]
            f += r2
            g += r2 * r2
        for j in range(n):
            for h in range(j + 1):
                w2 = 0.0
                w4 = 0.0
                for i in range(q):
                    t = Qt[j, i] * Qt[h, i] * r[i] * r[i]
                    w2 += t
                    w4 += t * r[i] * r[i]
                W[j, h] = w2
                W[h, j] = w2
                mult = 1.0 if j == h else 2.0
                f += mult * Phi[j, h] * w2
                g += 2.0 * mult * Phi[j, h] * w4
        for j in range(n):
            for h in range(n):
                t = 0.0
                for i in range(n):
                    t += Phi[j, i] * W[i, h]
                E_jh = t
                t = 0.0
                for i in range(n):
                    t += Phi[h, i] * W[i, j]
                g += E_jh * t
        return f, -g

    @njit
    def _lowrank_shift(a, q, G, s0, f0, fp0, rho, K, H2, H3, X2, X3, piv_work, E, Vs):
        """A valid shift with tr(M(s)^-1) within 5% of 2 (KGM's optimum) from s0 (the column's
        last shift; when it is not valid, from a shift above it, at the latest the safe a_max + 1,
        where M(s) >= I: a restart). f0 > 0: s0 is certified and (f0, fp0) are f and f' there.
        Returns (s, restarted).

        Newton's method on 1/tr(M(s)^-1), which is concave and increasing above lambda_max:
        from the left of the root each step stays valid and left of it; from the right a step
        may cross lambda_max, so it is clamped to halfway towards a lower bound of lambda_max
        (rho, the current column's Rayleigh quotient, a_(q-1), or a shift found not valid)."""
        p = a.size
        lo = max(a[q - 1], rho)
        s = s0
        if f0 > 0.0:  # s0 certified by the caller, with f = f0 and f' = fp0 there
            f, fp, ok = f0, fp0, True
        else:
            f, fp, ok = _woodbury(a, q, G, s, K, H2, H3, X2, X3, piv_work, E, Vs, True)
        restarted = False
        if not ok:
            # lambda_max moved above the last shift (the other columns moved): steps above it,
            # doubling, up to the safe shift, which counts as a restart.
            safe = a[p - 1] + 1.0
            step = 0.5
            while not ok:
                if s > lo:
                    lo = s
                s = lo + step
                step *= 2.0
                if not s < safe:
                    restarted = True
                    s = safe
                f, fp, ok = _woodbury(a, q, G, s, K, H2, H3, X2, X3, piv_work, E, Vs, True)
                if restarted and not ok:
                    return s, restarted
        for _ in range(60):
            if abs(f - 2.0) <= 0.1:
                break
            g = 1.0 / f
            s_new = s + (0.5 - g) * (f * f) / (-fp)
            if f < 2.0 and not s_new > lo:
                s_new = 0.5 * (lo + s)
            # From the left of the root (f > 2) a Newton step is valid: no inertia to check
            # (the factor drawn from certifies the final shift in any case).
            f_new, fp_new, ok_new = _woodbury(a, q, G, s_new, K, H2, H3, X2, X3, piv_work, E, Vs, not f > 2.0)
            if ok_new:
                s, f, fp = s_new, f_new, fp_new
            elif s_new < s:
                lo = max(lo, s_new)  # not valid: s_new <= lambda_max
            else:
                break  # rounding at the root from the left: s is valid and near it
        return s, restarted

    @fast
    def _lowrank_draw(q, r, Qt, Xm, w, z, u, v, y, gen):
        """One exact ACG draw with the low-rank factor into w (q); the number examined."""
        n = Qt.shape[0]
        examined = 0
        while True:
            zz = _standard_normals(z, gen)
            for j in range(n):
                t = 0.0
                for i in range(q):
                    t += Qt[j, i] * z[i]
                u[j] = t
            for j in range(n):
                t = 0.0
                for h in range(n):
                    t += Xm[j, h] * u[h]
                v[j] = t
            ny2 = 0.0
            for i in range(q):
                t = z[i]
                for j in range(n):
                    t += Qt[j, i] * v[j]
                y[i] = r[i] * t
                ny2 += y[i] * y[i]
            examined += 1
            if _acg_accept(zz, ny2, y, w, gen):
                return examined

    @njit
    def _lowrank_embed(Z, l, w, Vh, betas, x):
        """Column l becomes Q [w; 0] (the reflections applied last to first)."""
        m, p = Vh.shape
        q = p - m
        for i in range(q):
            x[i] = w[i]
        for i in range(q, p):
            x[i] = 0.0
        for j in range(m - 1, -1, -1):
            d = 0.0
            for i in range(p):
                d += Vh[j, i] * x[i]
            d *= betas[j]
            for i in range(p):
                x[i] -= d * Vh[j, i]
        for i in range(p):
            Z[i, l] = x[i]

    @njit
    def _lowrank_chain(a, Z, gen, n_sweeps, burn_in, thin, U, kept, trace):
        p, k = Z.shape
        m = k - 1
        n = 2 * m
        q = p - m
        Cw = np.empty((p, m))
        Vh = np.empty((m, p))
        Wl = np.empty((m, p))
        betas = np.empty(m)
        g = np.empty(p)
        G = np.empty((n, q))
        K = np.empty((n, n))
        H2 = np.empty((n, n))
        H3 = np.empty((n, n))
        X2 = np.empty((n, n))
        X3 = np.empty((n, n))
        piv_work = np.empty((n, 2 * n))
        E = np.empty((n, n))
        Vs = np.empty((n, n))
        R = np.empty((n, n))
        r = np.empty(q)
        Qt = np.empty((n, q))
        L = np.empty((n, n))
        Xm = np.empty((n, n))
        Phi = np.empty((n, n))
        w = np.empty(q)
        z = np.empty(q)
        u = np.empty(n)
        v = np.empty(n)
        y = np.empty(q)
        x = np.empty(p)
        shifts = np.full(k, -np.inf)
        order = np.empty(k, dtype=np.int64)
        accepted = 0
        proposed = 0
        restarts = 0
        i_kept = 0
        for sweep in range(n_sweeps):
            _fresh_order(order, gen)
            for l in order:
                _householders(Z, l, Cw, Vh, betas)
                _lowrank_terms(a, Vh, betas, Wl, g)
                for j in range(m):
                    for i in range(q):
                        G[j, i] = Vh[j, i]
                        G[j + m, i] = Wl[j, i]
                rho = 0.0
                for i in range(p):
                    rho += a[i] * Z[i, l] * Z[i, l]
                # The column's last shift first: its factor certifies it and gives tr(M^-1) and
                # the derivative; within 5% of KGM's tr(M^-1) = 2 it is kept as it is.
                s = shifts[l]
                f0 = 0.0
                fp0 = 0.0
                keep = False
                if s > a[q - 1] and _lowrank_factor(a, q, G, s, r, Qt, R, E, L, Xm):
                    f0, fp0 = _factor_trace(q, r, Qt, Xm, K, Phi)
                    keep = abs(f0 - 2.0) <= 0.1
                if not keep:
                    s, restarted = _lowrank_shift(a, q, G, shifts[l], f0, fp0, rho, K, H2, H3, X2, X3, piv_work, E, Vs)
                    if not _lowrank_factor(a, q, G, s, r, Qt, R, E, L, Xm):
                        # Not certified (rounding next to lambda_max): the safe shift is valid.
                        restarted = True
                        s = a[p - 1] + 1.0
                        if not _lowrank_factor(a, q, G, s, r, Qt, R, E, L, Xm):
                            raise FloatingPointError("cannot factor the ACG envelope matrix")
                    if restarted:
                        restarts += 1
                    shifts[l] = s
                examined = _lowrank_draw(q, r, Qt, Xm, w, z, u, v, y, gen)
                proposed += examined
                accepted += 1
                _lowrank_embed(Z, l, w, Vh, betas, x)
            if sweep % 64 == 63:
                _reorthonormalise(Z)
            i_kept = _record_sweep(a, Z, U, sweep, burn_in, thin, trace, kept, i_kept)
        return accepted, proposed, restarts

    @njit
    def _chain(a, Z, gen, n_sweeps, burn_in, thin, U, kept, trace):
        p, k = Z.shape
        if _use_lowrank(p, k):
            return _lowrank_chain(a, Z, gen, n_sweeps, burn_in, thin, U, kept, trace)
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
            _fresh_order(order, gen)
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
                _reorthonormalise(Z)
                _complement(Z, comp)
                S[:, 1:] = comp
                AS = _restricted(a, S, aS)  # drops the rounding drift of the rank-2 updates
            i_kept = _record_sweep(a, Z, U, sweep, burn_in, thin, trace, kept, i_kept)
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
