"""Exact solvers for the weighted linear SVR that EXS fits (epsilon 0), in place of per-document scikit-learn
`LinearSVR` (liblinear) fits: the same problem solved to its exact optimum, with no tolerance to choose.

The problem is scikit-learn's `LinearSVR(epsilon=0, C, fit_intercept=True, intercept_scaling=1)` with
`sample_weight=w`: with x̃ = [x, 1] (the intercept is a penalised last coefficient, as in liblinear) and c_i = C·w_i,

    L1 loss ("epsilon_insensitive"):          min_v ½‖v‖² + Σ c_i |y_i − x̃_i·v|
    L2 loss ("squared_epsilon_insensitive"):  min_v ½‖v‖² + Σ c_i (y_i − x̃_i·v)²

Both are strictly convex, so the minimiser is unique and any exact method gives the same coefficients; liblinear
stops at a tolerance (tol 1e-4) and lands short of it (within 2 % of the largest coefficient in
tests/test_explain_lime.py). Run to a tight tolerance, liblinear agrees with these solvers to 1e-7 of the largest
coefficient (tested there).

- L2 loss: the normal equations (I + 2·X̃ᵀCX̃) v = 2·X̃ᵀCy, one Cholesky solve.
- L1 loss: Huber smoothing with continuation, then an exact finish (the finite smoothing idea of Madsen and
  Nielsen, 1993). For μ > 0 the smoothed loss c·h_μ(r) (r²/2μ for |r| ≤ μ, |r| − μ/2 beyond) is minimised by a
  damped Newton method (piecewise quadratic: a few steps). Its solution names the set E of samples the optimum
  interpolates (|r| ≤ μ) and the signs of the others; the KKT conditions of the L1 problem are then solved
  exactly, v = u + X̃_Eᵀα with u = Σ_{i∉E} c_i·sign(r_i)·x̃_i and X̃_E v = y_E, and CHECKED: |α_i| ≤ c_i on E and
  every other residual keeps its sign. A checked solution is the optimum (it satisfies the optimality
  conditions); otherwise μ shrinks tenfold and Newton continues. If no check passes (e.g. more tied samples than
  coefficients, as on 0/1 labels whose best fit is a constant) the solver says so and the caller falls back to
  liblinear.
  After the first stage only the rows near interpolation take part in the Newton steps (`WORKING_SET`); the
  finish always checks every row. Between Newton steps the Hessian's Cholesky factor follows the few rows that
  enter or leave the quadratic zone by rank-one updates (`MAX_UPDATES`), so most steps need no refactorisation;
  the gradient follows each step by an update over the rows that left their piece of ψ rather than a pass over
  every row; and the line search is Newton's method on the piecewise linear slope.
  The result is the finish's, which depends only on the pattern it certifies (E and the signs), not on the path
  that found it, so the Newton steps' own rounding (the line search's partial sums, the factor's updates) does not
  reach the coefficients (tests/test_explain_lime.py: the working-set path and the full path give the same bits).
  What a fit costs in an audit: benchmarks/lime_phases.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Relative tolerances of the exact finish's checks (residual signs and dual bounds): rounding, not approximation.
CHECK_TOL = 1e-9


def l2_svr(X: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Coefficients [β…, b] of the L2-loss linear SVR with epsilon 0 (see the module doc): (F + 1,)."""
    n, n_features = X.shape
    root = np.sqrt(2.0 * c)
    S = np.empty((n, n_features + 1))
    _scaled_with_ones(np.ascontiguousarray(X, dtype=np.float64), root, S)
    gram = S.T @ S  # symmetric rank-k update
    gram[np.diag_indices_from(gram)] += 1.0
    return np.linalg.solve(gram, S.T @ (root * y))


@njit(cache=True, nogil=True)
def _scaled_with_ones(X, root, out):  # pragma: no cover - compiled
    """out = [X, 1]·root[:, None] (the rows of X̃ scaled), in one pass without temporaries (same bits)."""
    n, n_features = X.shape
    for i in range(n):
        r = root[i]
        for f in range(n_features):
            out[i, f] = X[i, f] * r
        out[i, n_features] = 1.0 * r


@njit(cache=True, nogil=True)
def _four_dots(X, i0, i1, i2, i3, w, start):  # pragma: no cover - compiled
    """start + X[i]·w for four rows at once: four independent addition chains (so the additions overlap instead of
    waiting on each other), each summed in feature order, so each equals the one-row loop bit for bit."""
    s0 = s1 = s2 = s3 = start
    for f in range(X.shape[1]):
        wf = w[f]
        s0 += X[i0, f] * wf
        s1 += X[i1, f] * wf
        s2 += X[i2, f] * wf
        s3 += X[i3, f] * wf
    return s0, s1, s2, s3


@njit(cache=True, nogil=True)
def _dot(X, i, w, start):  # pragma: no cover - compiled
    """start + X[i]·w, summed in feature order."""
    s = start
    for f in range(X.shape[1]):
        s += X[i, f] * w[f]
    return s


@njit(cache=True, nogil=True)
def _residuals(X, y, v, r):  # pragma: no cover - compiled
    """r = y − X̃v (intercept first, then the features in order), four rows at a time (`_four_dots`)."""
    n = X.shape[0]
    intercept = v[X.shape[1]]
    i = 0
    while i + 4 <= n:
        s0, s1, s2, s3 = _four_dots(X, i, i + 1, i + 2, i + 3, v, intercept)
        r[i] = y[i] - s0
        r[i + 1] = y[i + 1] - s1
        r[i + 2] = y[i + 2] - s2
        r[i + 3] = y[i + 3] - s3
        i += 4
    for k in range(i, n):
        r[k] = y[k] - _dot(X, k, v, intercept)


@njit(cache=True, nogil=True, error_model="numpy")
def _slope(r, q, c, vd, dd, mu, t):  # pragma: no cover - compiled
    """Derivative in t of the smoothed objective at v + t·d (residuals r − t·q; vd = v·d, dd = d·d), and its own
    derivative (the curvature along d at t). ψ = clamp(r/μ, −1, 1) equals the three-way definition bit for bit
    (r > μ gives r/μ ≥ 1); the curvature counts the rows strictly inside the zone. Without branches and with four
    partial sums the loop is not held up by mispredictions and the addition latency."""
    n = r.size
    s0 = s1 = s2 = s3 = 0.0
    k0 = k1 = k2 = k3 = 0.0
    i = 0
    while i + 4 <= n:
        u0 = (r[i] - t * q[i]) / mu
        u1 = (r[i + 1] - t * q[i + 1]) / mu
        u2 = (r[i + 2] - t * q[i + 2]) / mu
        u3 = (r[i + 3] - t * q[i + 3]) / mu
        w0 = c[i] * q[i]
        w1 = c[i + 1] * q[i + 1]
        w2 = c[i + 2] * q[i + 2]
        w3 = c[i + 3] * q[i + 3]
        s0 += w0 * min(max(u0, -1.0), 1.0)
        s1 += w1 * min(max(u1, -1.0), 1.0)
        s2 += w2 * min(max(u2, -1.0), 1.0)
        s3 += w3 * min(max(u3, -1.0), 1.0)
        k0 += w0 * q[i] if abs(u0) < 1.0 else 0.0
        k1 += w1 * q[i + 1] if abs(u1) < 1.0 else 0.0
        k2 += w2 * q[i + 2] if abs(u2) < 1.0 else 0.0
        k3 += w3 * q[i + 3] if abs(u3) < 1.0 else 0.0
        i += 4
    for j in range(i, n):
        u = (r[j] - t * q[j]) / mu
        s0 += c[j] * q[j] * min(max(u, -1.0), 1.0)
        k0 += c[j] * q[j] * q[j] if abs(u) < 1.0 else 0.0
    return vd + t * dd - ((s0 + s1) + (s2 + s3)), dd + ((k0 + k1) + (k2 + k3)) / mu


@njit(cache=True, nogil=True)
def _line_search(r, q, c, v, d, mu, s_zero):  # pragma: no cover - compiled
    """The minimiser in t > 0 of the (convex, piecewise quadratic) smoothed objective along d: the root of its
    increasing, piecewise linear derivative, whose value at 0 is `s_zero` (= g·d < 0, known from the gradient).

    Newton on the derivative: each evaluation also gives its slope there (`_slope`'s curvature), and the root of
    that linear piece is the exact answer whenever the root lies on the same piece (t = 1, the Newton step, when
    no row crosses ±μ), so a search takes a few evaluations, more in late stages, where short steps cross many
    pieces. A candidate outside the bracket of evaluated points is replaced by false position (Illinois), which
    cannot leave it."""
    vd = np.dot(v, d)
    dd = np.dot(d, d)
    enough = 1e-9 * abs(s_zero)
    low, s_low = 0.0, s_zero
    high, s_high = np.inf, np.inf
    t = 1.0
    side = 0
    for _ in range(100):
        s_t, curvature = _slope(r, q, c, vd, dd, mu, t)
        if abs(s_t) <= enough:
            return t
        if s_t < 0.0:
            low, s_low = t, s_t
            if side == -1 and np.isfinite(high):
                s_high *= 0.5
            side = -1
        else:
            high, s_high = t, s_t
            if side == 1:
                s_low *= 0.5
            side = 1
        if np.isfinite(high) and high - low <= 1e-15 * high:
            return 0.5 * (low + high)
        t = t - s_t / curvature  # the root of the linear piece at t (curvature ≥ d·d > 0)
        if not low < t < high:
            t = (low * s_high - high * s_low) / (s_high - s_low)
    return low if not np.isfinite(high) else 0.5 * (low + high)


@njit(cache=True, nogil=True)
def _cholesky_solve(A, b):  # pragma: no cover - compiled
    """Solve A x = b for symmetric A by Cholesky; ok = False when A is not numerically positive definite."""
    m = b.size
    L = np.zeros((m, m))
    if not _cholesky(A, L):
        return np.zeros(m), False
    return _solve_upper(L.T, b), True


@njit(cache=True, nogil=True)
def _finish(X, design, y, c, r, mu):  # pragma: no cover - compiled
    """The exact L1 optimum for the pattern read off residuals r at smoothing mu, and whether it checks out."""
    n, n_features = X.shape
    p = n_features + 1
    inside = np.empty(n, dtype=np.int64)
    m = 0
    u = np.zeros(p)
    for i in range(n):
        if abs(r[i]) <= mu:
            if m == p:
                return u, False  # more interpolated samples than coefficients: not a vertex we can solve for
            inside[m] = i
            m += 1
        else:
            s = c[i] if r[i] > 0 else -c[i]
            for f in range(n_features):
                u[f] += s * X[i, f]
            u[n_features] += s
    A = np.empty((m, m))
    rhs = np.empty(m)
    for a in range(m):
        i = inside[a]
        rhs[a] = y[i] - _dot(X, i, u, u[n_features])
        row = X[i]
        b = a
        while b + 4 <= m:  # the Gram entries 1 + x_i·x_j four at a time (`_four_dots`)
            s0, s1, s2, s3 = _four_dots(X, inside[b], inside[b + 1], inside[b + 2], inside[b + 3], row, 1.0)
            A[a, b] = A[b, a] = s0
            A[a, b + 1] = A[b + 1, a] = s1
            A[a, b + 2] = A[b + 2, a] = s2
            A[a, b + 3] = A[b + 3, a] = s3
            b += 4
        for rest in range(b, m):
            A[a, rest] = A[rest, a] = _dot(X, inside[rest], row, 1.0)
    alpha, ok = _cholesky_solve(A, rhs)
    if not ok:
        return u, False
    v = u.copy()
    for a in range(m):
        i = inside[a]
        if abs(alpha[a]) > c[i] * (1.0 + CHECK_TOL) + 1e-300:
            return v, False
        for f in range(n_features):
            v[f] += alpha[a] * X[i, f]
        v[n_features] += alpha[a]
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(y[i]))
    check = y - design @ v  # only signs are read here: BLAS, not `_residuals`' fixed order
    for i in range(n):
        if abs(r[i]) > mu and check[i] * r[i] < 0.0 and abs(check[i]) > CHECK_TOL * scale:
            return v, False
    return v, True


# Rows whose residual is more than WORKING_SET × μ away from zero after a smoothing stage sit in the linear part of
# the loss for the next stage (μ shrinks tenfold per stage), so only the other rows are carried through its Newton
# steps. A wide margin, because a row fixed too early makes the stage converge to a pattern the finish cannot
# certify, and then the full path runs again (tests/test_explain_lime.py: the same coefficients as the full path).
WORKING_SET = 100.0


@njit(cache=True, nogil=True)
def l1_svr(X, y, c, start):  # pragma: no cover - compiled
    """Coefficients [β…, b] of the L1-loss linear SVR with epsilon 0 (module doc), from a starting point
    (e.g. the L2-loss solution), and whether the exact finish checked out (False: use another solver).

    After the first smoothing stage, each stage runs its Newton steps on a working set: the rows within
    WORKING_SET × μ of interpolation; the others keep the sign of their residual and enter the gradient as one
    constant vector. Every exact finish still reads and checks ALL rows, so a certified result is the optimum
    whatever the working set; if the working-set path cannot certify one, the full path runs from the start."""
    v, ok = _l1_svr_path(X, y, c, start, WORKING_SET)
    if ok:
        return v, True
    return _l1_svr_path(X, y, c, start, np.inf)


@njit(cache=True, nogil=True)
def _l1_svr_path(X, y, c, start, working_set):  # pragma: no cover - compiled
    """Huber continuation with an exact finish after every stage (module doc); `working_set` = inf: all rows in
    every stage.

    The gradient X̃ᵀψ and the direction's X̃d are BLAS calls; the Hessian's Cholesky factor is updated row by row
    as rows enter and leave the quadratic zone (`_newton_stage`)."""
    n, n_features = X.shape
    p = n_features + 1
    design = np.empty((n, p))  # X̃ = [X, 1]
    for i in range(n):
        for f in range(n_features):
            design[i, f] = X[i, f]
        design[i, n_features] = 1.0
    v = start.copy()
    r = np.empty(n)
    _residuals(X, y, v, r)
    mu = max(np.partition(np.abs(r), min(2 * p, n - 1))[min(2 * p, n - 1)], 1e-12)
    c_total = c.sum()
    psi_c = np.empty(n)
    scaled = np.empty((n, p))
    in_zone = np.zeros(n, dtype=np.bool_)
    factor = np.zeros((p, p))
    changed = np.empty(MAX_UPDATES, dtype=np.int64)
    rows = design  # the working set's rows of X̃, their residuals and weights: all rows in the first stage
    rows_t = design.T  # a transposed view: BLAS reads it in place (a transposed copy costs more than it saves)
    r_rows = r.copy()
    c_rows = c
    fixed = np.zeros(p)  # Σ c_i·sign(r_i)·x̃_i over the rows outside the working set
    for _stage in range(40):
        if not _newton_stage(rows, rows_t, r_rows, c_rows, v, fixed, mu, c_total, psi_c, scaled, in_zone, factor,
                             changed):
            return v, False
        if rows.shape[0] == n:
            r[:] = r_rows
        else:
            r[:] = y - design @ v
        exact, ok = _finish(X, design, y, c, r, mu)
        if ok:
            return exact, True
        mu *= 0.1
        if mu < 1e-14:
            break
        if np.isfinite(working_set):
            rows, r_rows, c_rows, fixed = _working_set(design, r, c, working_set * mu)
            rows_t = rows.T
    return v, False


@njit(cache=True, nogil=True)
def _working_set(design, r, c, reach):  # pragma: no cover - compiled
    """The rows with |r| ≤ reach (their design rows, residuals, weights) and Σ c·sign(r)·x̃ over the others."""
    n, p = design.shape
    inside = np.abs(r) <= reach
    m = int(inside.sum())
    rows = np.empty((m, p))
    r_rows = np.empty(m)
    c_rows = np.empty(m)
    psi_fixed = np.zeros(n)
    j = 0
    for i in range(n):
        if inside[i]:
            rows[j] = design[i]
            r_rows[j] = r[i]
            c_rows[j] = c[i]
            j += 1
        else:
            psi_fixed[i] = c[i] if r[i] > 0 else -c[i]
    return rows, r_rows, c_rows, design.T @ psi_fixed


# Rows entering or leaving the quadratic zone between two Newton steps are applied to the Hessian's Cholesky
# factor as rank-one updates (O(p²) each) when there are at most MAX_UPDATES of them; more, and the factor is
# computed afresh from the zone's rows (O(m·p²)). Late in the path one or two rows change per step.
MAX_UPDATES = 16


@njit(cache=True, nogil=True)
def _newton_stage(rows, rows_t, r, c, v, fixed, mu, c_total, psi_c, scaled, in_zone, factor, changed
                  ):  # pragma: no cover - compiled
    """Damped Newton on the μ-smoothed objective until its gradient vanishes, over the working set's rows (the
    others' constant pull is `fixed`); updates v and the rows' residuals r in place. False if the Hessian is not
    numerically positive definite.

    The Hessian I + Σ_zone (c/μ)·x̃x̃ᵀ is kept as its Cholesky factor: computed at the stage's first step, then
    updated by the rows that entered or left the zone. It is computed afresh when many rows changed, when a
    downdate loses positive definiteness (H ≥ I, so every pivot of the true factor is ≥ 1), and when a step that
    changed no row left a gradient (the direction must then have been inexact).

    After a step t·d the gradient is updated, not recomputed: the objective is quadratic along the step except
    for the rows whose ψ left the piece it was on, so g ← g + t·H·d − X̃ᵀ(their departures) = (1 − t)·g − …
    (H·d = −g), O(p) per crossing row instead of a product with every row. A gradient that looks converged is
    confirmed by computing it afresh (rounding accumulates in the updates; the stage ends only on the fresh one)."""
    m_rows = rows.shape[0]
    p = v.size
    tol = 1e-12 * (1.0 + c_total)
    factored = False
    g = np.zeros(p)
    step = 0.0  # the last step's length: 0 = no step yet, the gradient is computed afresh
    q = np.zeros(m_rows)
    crossed = np.zeros(p)
    for _newton in range(60):
        n_changed = 0
        crossed[:] = 0.0
        for i in range(m_rows):  # c·ψ(r) of the smoothed loss, and which rows changed zone since the last step
            ri = r[i]
            if ri > mu:
                new = c[i]
                inside = False
            elif ri < -mu:
                new = -c[i]
                inside = False
            else:
                new = c[i] * ri / mu
                inside = True
            old = psi_c[i]
            if step > 0.0 and (inside != in_zone[i] or (not inside and new != old)):  # ψ left the last step's piece
                pull = new - (old - step * c[i] * q[i] / mu if in_zone[i] else old)
                for a in range(p):
                    crossed[a] += pull * rows[i, a]
            psi_c[i] = new
            if inside != in_zone[i]:
                in_zone[i] = inside
                if n_changed < MAX_UPDATES:
                    changed[n_changed] = i
                n_changed += 1
        if step > 0.0:  # g + t·H·d − X̃ᵀ(the crossing rows' departures from the linear model), H·d = −g
            g = (1.0 - step) * g - crossed
            if np.abs(g).max() <= tol:  # confirm with the gradient computed afresh (rounding accumulates)
                g = v - fixed - rows_t @ psi_c[:m_rows]
        else:
            g = v - fixed - rows_t @ psi_c[:m_rows]
        if np.abs(g).max() <= tol:
            break
        updated = factored and 0 < n_changed <= MAX_UPDATES
        if updated:
            for k in range(n_changed):
                i = changed[k]
                h = np.sqrt(c[i] / mu)
                if not _rank_one_upper(factor, h * rows[i], in_zone[i]):
                    updated = False
                    break
        if not updated:
            if not _zone_factor(rows, c, mu, in_zone, scaled, factor):
                return False
            factored = True
        d = _solve_upper(factor, -g)
        descent = np.dot(g, d)  # the derivative along d at t = 0
        if descent >= 0.0:
            break
        q = rows @ d
        step = _line_search(r, q, c, v - fixed, d, mu, descent)  # the fixed rows' pull shifts the slope by −fixed·d
        if step <= 0.0:
            break
        v += step * d
        r -= step * q
    return True


@njit(cache=True, nogil=True)
def _zone_factor(rows, c, mu, in_zone, scaled, factor):  # pragma: no cover - compiled
    """factor = Lᵀ, L the lower Cholesky factor of I + Σ_zone (c/μ)·x̃x̃ᵀ (the zone's √(c/μ)-scaled rows' Gram
    matrix as one BLAS call); False when it is not numerically positive definite. Kept transposed (upper, row
    major) so that a rank-one update walks rows of it, in contiguous memory (`_rank_one_upper`)."""
    m_rows, p = rows.shape
    m = 0
    for i in range(m_rows):
        if in_zone[i]:
            h = np.sqrt(c[i] / mu)
            for a in range(p):
                scaled[m, a] = h * rows[i, a]
            m += 1
    zone = scaled[:m]
    H = zone.T @ zone
    for a in range(p):
        H[a, a] += 1.0
    lower = np.zeros((p, p))
    if not _cholesky(H, lower):
        return False
    factor[:, :] = lower.T
    return True


@njit(cache=True, nogil=True)
def _cholesky(A, L):  # pragma: no cover - compiled
    """L (lower) with L·Lᵀ = A for symmetric A; False when A is not numerically positive definite."""
    m = A.shape[0]
    largest = 0.0
    for j in range(m):
        largest = max(largest, abs(A[j, j]))
    for j in range(m):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if s <= 1e-12 * largest or s <= 0.0:
            return False
        L[j, j] = np.sqrt(s)
        i = j + 1
        while i + 4 <= m:  # four rows at a time: independent chains, each in the same order (the same bits)
            s0, s1, s2, s3 = A[i, j], A[i + 1, j], A[i + 2, j], A[i + 3, j]
            for k in range(j):
                ljk = L[j, k]
                s0 -= L[i, k] * ljk
                s1 -= L[i + 1, k] * ljk
                s2 -= L[i + 2, k] * ljk
                s3 -= L[i + 3, k] * ljk
            L[i, j] = s0 / L[j, j]
            L[i + 1, j] = s1 / L[j, j]
            L[i + 2, j] = s2 / L[j, j]
            L[i + 3, j] = s3 / L[j, j]
            i += 4
        for rest in range(i, m):
            s = A[rest, j]
            for k in range(j):
                s -= L[rest, k] * L[j, k]
            L[rest, j] = s / L[j, j]
    return True


@njit(cache=True, nogil=True)
def _solve_upper(U, b):  # pragma: no cover - compiled
    """x with UᵀU·x = b for upper U (forward, then backward substitution). A lower factor L is passed as its
    transposed view, `_solve_upper(L.T, b)`: the same operations in the same order either way."""
    m = b.size
    x = b.copy()
    for i in range(m):
        s = x[i]
        for k in range(i):
            s -= U[k, i] * x[k]
        x[i] = s / U[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, m):
            s -= U[i, k] * x[k]
        x[i] = s / U[i, i]
    return x


@njit(cache=True, nogil=True)
def _rank_one_upper(U, x, add):  # pragma: no cover - compiled
    """UᵀU ± x·xᵀ in place for the Hessian's factor kept transposed (U = Lᵀ, upper, row major; x is overwritten):
    the classic rotation update, or with `add` False the downdate. Column k of L is row k of U, so the inner loop
    walks contiguous memory; the column's critical path is one square root and one division, 1/U[k, k] being taken
    alongside the square root. False when a downdated pivot falls below 1/2: the Hessians here are ≥ I, so every pivot
    of their true factor is ≥ 1, and a smaller one means rounding has taken over (the caller refactors)."""
    p = x.size
    sign = 1.0 if add else -1.0
    for k in range(p):
        ukk = U[k, k]
        square = ukk * ukk + sign * x[k] * x[k]
        if square < 0.25:
            return False
        rkk = np.sqrt(square)
        inverse = 1.0 / ukk  # computed while the square root is: one division left on the column's critical path
        cos = rkk * inverse
        sin = x[k] * inverse
        scale = ukk / rkk  # 1/cos
        U[k, k] = rkk
        row = U[k]
        for i in range(k + 1, p):
            row[i] = (row[i] + sign * sin * x[i]) * scale
            x[i] = cos * x[i] - sin * row[i]
    return True
