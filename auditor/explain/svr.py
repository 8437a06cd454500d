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
  every other residual keeps its sign. E holds at most F + 1 samples (the smallest residuals; far more inside
  means μ is still too coarse to read from). The smoothed pattern is a few samples off (on 700-feature fits, at
  every μ), so the finish is an active-set method on the dual (bounded-variable least squares, Stark & Parker
  1995, with a simplex step when E is full), started from the smoothed solution's duals: each step raises the
  dual objective, on a factorisation updated per step. (Single pivots that jump to each pattern's solution,
  the first version, wander without converging on such fits: the liblinear fallback took 20 s a fit.) A
  checked solution is the optimum (it satisfies the optimality conditions, however the pattern was found);
  otherwise μ shrinks tenfold and Newton continues. If no check passes (e.g. more tied samples than
  coefficients, as on 0/1 labels whose best fit is a constant) the solver says so and the caller falls back to
  liblinear.
  What a fit costs in an audit: benchmarks/lime_phases.py; on a wide audit's own fits: benchmarks/exs_fits.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Relative tolerances of the exact finish's checks (residual signs and dual bounds): rounding, not approximation.
CHECK_TOL = 1e-9
REBUILD = 20  # Newton steps between fresh Hessians within a stage (updated in between: rounding stays small)
STEPS = 300  # active-set steps of the exact finish from a smoothed solution, before smoothing further...
SPARE = 0.2  # ...tried when at most this share more samples lie inside ±μ than there are coefficients (at least 2)
REFRESH = 100  # active-set steps between fresh factorisations (rounding stays small)
START = 1.2  # the first μ takes this many samples per coefficient inside ±μ


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
def _scaled_with_ones(X: np.ndarray, root: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """out = [X, 1]·root[:, None] (the rows of X̃ scaled), in one pass without temporaries (same bits)."""
    n, n_features = X.shape
    for i in range(n):
        r = root[i]
        for f in range(n_features):
            out[i, f] = X[i, f] * r
        out[i, n_features] = 1.0 * r


@njit(cache=True, nogil=True)
def _residuals(X: np.ndarray, y: np.ndarray, v: np.ndarray, r: np.ndarray) -> None:  # pragma: no cover - compiled
    n, n_features = X.shape
    for i in range(n):
        s = v[n_features]
        for f in range(n_features):
            s += X[i, f] * v[f]
        r[i] = y[i] - s


@njit(cache=True, nogil=True)
def _smallest(values: np.ndarray, count: int) -> np.ndarray:  # pragma: no cover - compiled
    """Indices of the `count` smallest values, in increasing order (ties by index): an insertion into a short
    sorted list, because compiling numba's argsort for this costs ~2 s of every cold start."""
    count = max(0, min(count, values.size))
    order = np.empty(count, dtype=np.int64)
    if count == 0:
        return order
    filled = 0
    for i in range(values.size):
        x = values[i]
        if filled == count and not x < values[order[filled - 1]]:
            continue
        j = filled if filled < count else count - 1
        while j > 0 and x < values[order[j - 1]]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
        if filled < count:
            filled += 1
    return order


@njit(cache=True, nogil=True)
def _slope(r: np.ndarray, q: np.ndarray, c: np.ndarray, v: np.ndarray, d: np.ndarray, mu: float,
           t: float) -> float:  # pragma: no cover - compiled
    """Derivative in t of the smoothed objective at v + t·d (residuals r − t·q)."""
    total: float = np.dot(v, d) + t * np.dot(d, d)
    for i in range(r.size):
        ri = r[i] - t * q[i]
        if ri > mu:
            psi = 1.0
        elif ri < -mu:
            psi = -1.0
        else:
            psi = ri / mu
        total -= c[i] * psi * q[i]
    return total


@njit(cache=True, nogil=True)
def _line_search(r: np.ndarray, q: np.ndarray, c: np.ndarray, v: np.ndarray, d: np.ndarray,
                 mu: float) -> float:  # pragma: no cover - compiled
    """The minimiser in t ≥ 0 of the (convex, piecewise quadratic) smoothed objective along d: the root of its
    increasing derivative, bracketed by doubling from the Newton step t = 1, then bisection and false position."""
    low, high = 0.0, 1.0
    s_low = _slope(r, q, c, v, d, mu, 0.0)
    s_high = _slope(r, q, c, v, d, mu, 1.0)
    enough = 1e-9 * abs(s_low)
    for _ in range(60):
        if s_high >= 0.0:
            break
        low, s_low = high, s_high
        high *= 2.0
        s_high = _slope(r, q, c, v, d, mu, high)
    if s_high <= enough:
        return high
    side = 0
    for _ in range(100):  # Illinois false position: exact once the bracket lies on one linear piece of the slope
        t = (low * s_high - high * s_low) / (s_high - s_low)
        s_t = _slope(r, q, c, v, d, mu, t)
        if abs(s_t) <= enough or high - low <= 1e-15 * high:
            return t
        if s_t < 0.0:
            low, s_low = t, s_t
            if side == -1:
                s_high *= 0.5
            side = -1
        else:
            high, s_high = t, s_t
            if side == 1:
                s_low *= 0.5
            side = 1
    return 0.5 * (low + high)


@njit(cache=True, nogil=True)
def _cholesky(A: np.ndarray) -> tuple[np.ndarray, bool]:  # pragma: no cover - compiled
    """A's lower Cholesky factor L (LAPACK's, 7x a loop's speed at 700 features), and ok = False when A is not
    numerically positive definite (a pivot L_jj² at most 1e-12 of the largest diagonal entry). One compiled
    function for every caller: numba compiles LAPACK's wrapper into each function that calls it (~2 s each)."""
    m = A.shape[0]
    largest = 0.0
    for j in range(m):
        largest = max(largest, abs(A[j, j]))
    try:
        L = np.linalg.cholesky(A)
    except Exception:  # not positive definite (or not finite)
        return np.zeros((m, m)), False
    for j in range(m):
        if not L[j, j] * L[j, j] > 1e-12 * largest:
            return L, False
    return L, True


@njit(cache=True, nogil=True)
def _gram(XE: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """X̃_E X̃_Eᵀ (BLAS), in one compiled function for its callers."""
    gram: np.ndarray = XE @ XE.T
    return gram


@njit(cache=True, nogil=True)
def _times(M: np.ndarray, x: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """M x (BLAS), in one compiled function for its callers."""
    product: np.ndarray = M @ x
    return product


@njit(cache=True, nogil=True)
def _add_scaled(y: np.ndarray, a: float, x: np.ndarray) -> None:  # pragma: no cover - compiled
    """y += a·x, by a loop (an array expression compiles its own machinery in every function)."""
    for j in range(y.size):
        y[j] += a * x[j]


@njit(cache=True, nogil=True)
def _cholesky_solve(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:  # pragma: no cover - compiled
    """Solve A x = b for symmetric A by Cholesky (`_cholesky`); ok = False when A is not numerically positive
    definite."""
    m = b.size
    L, ok = _cholesky(A)
    if not ok:
        return np.zeros(m), False
    x = b.copy()
    for i in range(m):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, m):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
    return x, True


@njit(cache=True, nogil=True)
def _checked_pattern(X: np.ndarray, y: np.ndarray, c: np.ndarray,
                     state: np.ndarray) -> tuple[np.ndarray, bool]:  # pragma: no cover - compiled
    """The KKT solution for a pattern (state 0: the sample is interpolated, ±1: its residual has that sign and its
    dual is ±c), solved afresh, and whether it is the optimum: every interpolated sample's dual within its bound,
    every bounded sample's residual of its sign (`CHECK_TOL`: rounding, not approximation)."""
    n, n_features = X.shape
    p = n_features + 1
    m = 0
    for i in range(n):
        if state[i] == 0:
            m += 1
    u = np.zeros(p)
    inside = np.empty(m, dtype=np.int64)
    XE = np.empty((m, p))
    a = 0
    for i in range(n):
        if state[i] == 0:
            inside[a] = i
            for f in range(n_features):
                XE[a, f] = X[i, f]
            XE[a, n_features] = 1.0
            a += 1
        else:
            s = c[i] * state[i]
            for f in range(n_features):
                u[f] += s * X[i, f]
            u[n_features] += s
    A = _gram(XE)
    rhs = np.empty(m)
    for a in range(m):
        xu = 0.0
        for f in range(p):
            xu += XE[a, f] * u[f]
        rhs[a] = y[inside[a]] - xu
    alpha, ok = _cholesky_solve(A, rhs)
    if not ok:
        return u, False
    v = u.copy()
    for a in range(m):
        for f in range(p):
            v[f] += alpha[a] * XE[a, f]
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(y[i]))
    check = np.empty(n)
    _residuals(X, y, v, check)
    for a in range(m):
        if abs(alpha[a]) / max(c[inside[a]], 1e-300) - 1.0 > CHECK_TOL:
            return v, False
    for i in range(n):
        if state[i] != 0 and check[i] * state[i] < 0.0 and abs(check[i]) > CHECK_TOL * scale:
            return v, False
    return v, True


@njit(cache=True, nogil=True)
def _factor(design: np.ndarray, c: np.ndarray, state: np.ndarray, R: np.ndarray, inside: np.ndarray,
            u: np.ndarray) -> tuple[int, float, bool]:  # pragma: no cover - compiled
    """The pattern's parts, from scratch: `inside` (its interpolated samples, in the factor's order), u (the bounded
    samples' Σ c·sign·x̃) and R (upper triangular, RᵀR = X̃_E X̃_Eᵀ); returns m = |E|, the largest diagonal entry
    of X̃_E X̃_Eᵀ, and whether it is numerically positive definite (as `_cholesky_solve` judges)."""
    n, p = design.shape
    m = 0
    for f in range(p):
        u[f] = 0.0
    for i in range(n):
        if state[i] == 0:
            if m == p:
                return m, 0.0, False
            inside[m] = i
            m += 1
        else:
            _add_scaled(u, c[i] * state[i], design[i])
    XE = np.empty((m, p))
    for a in range(m):
        for f in range(p):
            XE[a, f] = design[inside[a], f]
    A = _gram(XE)
    largest = 0.0
    for a in range(m):
        largest = max(largest, A[a, a])
    L, ok = _cholesky(A)
    if not ok:
        return m, largest, False
    for a in range(m):
        for b in range(a, m):
            R[a, b] = L[b, a]
    return m, largest, True


@njit(cache=True, nogil=True)
def _drop(R: np.ndarray, inside: np.ndarray, m: int, k: int) -> None:  # pragma: no cover - compiled
    """Remove the factor's k-th sample in O(m²): without column k, RᵀR loses row and column k, and the rows below
    k (w = R[k, k+1:] and the triangle T under it) give TᵀT + wwᵀ, a rank-one update (no downdate: stable)."""
    w = R[k, k + 1:m].copy()
    for j in range(k + 1, m):
        wj = w[j - k - 1]
        rjj = R[j, j]
        r = np.sqrt(rjj * rjj + wj * wj)
        cos, sin = r / rjj, wj / rjj
        R[j, j] = r
        for t in range(j + 1, m):
            R[j, t] = (R[j, t] + sin * w[t - k - 1]) / cos
            w[t - k - 1] = cos * w[t - k - 1] - sin * R[j, t]
    for i in range(m):  # close the gap: rows below k move up, columns right of k move left
        if i < k:
            for t in range(k + 1, m):
                R[i, t - 1] = R[i, t]
        elif i > k:
            for t in range(i, m):
                R[i - 1, t - 1] = R[i, t]
    for a in range(k, m - 1):
        inside[a] = inside[a + 1]


@njit(cache=True, nogil=True)
def _append(design: np.ndarray, R: np.ndarray, inside: np.ndarray, m: int, i: int,
            largest: float) -> bool:  # pragma: no cover - compiled
    """Add sample i to the factor in O(m·p + m²) (the new column solves Rᵀl = X̃_E x̃_i); False when x̃_i is
    numerically a combination of the samples already in (the new pivot ≤ 1e-12 of the largest diagonal)."""
    x = design[i]
    products = np.empty(m)
    for a in range(m):
        products[a] = np.dot(design[inside[a]], x)
    col = _forward(R, m, products)
    d = np.dot(x, x)
    pivot = d - np.dot(col, col)
    if not pivot > 1e-12 * max(largest, d):
        return False
    for a in range(m):
        R[a, m] = col[a]
    R[m, m] = np.sqrt(pivot)
    inside[m] = i
    return True


@njit(cache=True, nogil=True)
def _forward(R: np.ndarray, m: int, b: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """z with Rᵀz = b (the leading m × m of R, upper triangular), O(m²), reading R by rows."""
    z = b.copy()
    for j in range(m):
        z[j] /= R[j, j]
        for t in range(j + 1, m):
            z[t] -= R[j, t] * z[j]
    return z


@njit(cache=True, nogil=True)
def _factor_solve(R: np.ndarray, m: int, b: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """x with RᵀR x = b (the leading m × m of R): two triangular solves, O(m²)."""
    z = _forward(R, m, b)
    x = np.empty(m)
    for j in range(m - 1, -1, -1):
        s = z[j]
        for t in range(j + 1, m):
            s -= R[j, t] * x[t]
        x[j] = s / R[j, j]
    return x


@njit(cache=True, nogil=True)
def _ascend(X: np.ndarray, design: np.ndarray, y: np.ndarray, c: np.ndarray, state: np.ndarray,
            start: np.ndarray, limit: int) -> tuple[np.ndarray, bool]:  # pragma: no cover - compiled
    """The dual's optimum by a bounded-variable active-set method (Stark & Parker's BVLS, with a simplex step when
    the free set is full), from the feasible duals `start` (|start| ≤ c; the bounded samples' are ±c by `state`).

    The dual, max_α yᵀα − ½‖X̃ᵀα‖² over |α_i| ≤ c_i (v = X̃ᵀα), never decreases: the free samples' duals move
    toward their subspace optimum (X̃_E v = y_E) only as far as the box allows, the first to reach a bound is fixed
    there; at a feasible subspace optimum, the bounded sample whose residual has the wrong sign the furthest is
    freed (or, with as many free samples as coefficients, moved along the dual's null direction until a dual
    reaches a bound). The factorisation of X̃_E X̃_Eᵀ is updated at each change, O(m² + m·p + n·p) a step, and
    rebuilt every `REFRESH`. The verdict is a fresh `_checked_pattern`'s: rounding steers the path, not the result."""
    n, p = design.shape
    R = np.zeros((p, p))
    inside = np.empty(p, dtype=np.int64)
    u = np.empty(p)
    m, largest, ok = _factor(design, c, state, R, inside, u)
    if not ok:
        return np.zeros(p), False
    alpha = np.empty(p)  # the free samples' duals, in the factor's order
    for a in range(m):
        alpha[a] = start[inside[a]]
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(y[i]))
    since_built = 0
    for _step in range(limit):
        b = np.empty(m)
        for a in range(m):
            b[a] = y[inside[a]] - np.dot(design[inside[a]], u)
        best = _factor_solve(R, m, b)
        t, block = 1.0, -1  # the longest step toward the subspace optimum the box allows
        for a in range(m):
            bound = c[inside[a]]
            if abs(best[a]) <= bound * (1.0 + CHECK_TOL):
                continue
            d = best[a] - alpha[a]
            if d == 0.0:
                continue
            ta = ((bound if d > 0.0 else -bound) - alpha[a]) / d
            if ta < t:
                t, block = max(ta, 0.0), a
        if block >= 0:  # the blocking dual stops at its bound and leaves the free set
            for a in range(m):
                alpha[a] += t * (best[a] - alpha[a])
            i = inside[block]
            state[i] = 1 if best[block] > alpha[block] else -1
            _add_scaled(u, c[i] * state[i], design[i])
            _drop(R, inside, m, block)
            for a in range(block, m - 1):
                alpha[a] = alpha[a + 1]
            m -= 1
        else:
            for a in range(m):
                alpha[a] = best[a]
            v = u.copy()
            for a in range(m):
                _add_scaled(v, alpha[a], design[inside[a]])
            check = y - _times(design, v)
            into, worst = -1, CHECK_TOL * scale
            for i in range(n):
                if state[i] != 0 and check[i] * state[i] < 0.0 and abs(check[i]) > worst:
                    worst, into = abs(check[i]), i
            if into < 0:  # a feasible subspace optimum with every residual's sign right: the fresh verdict
                v, optimal = _checked_pattern(X, y, c, state)
                if optimal or since_built == 0:
                    return v, optimal
                since_built = REFRESH
            else:
                i = into
                sign = state[i]
                room = m < p
                if room:
                    largest = max(largest, np.dot(design[i], design[i]))
                    room = _append(design, R, inside, m, i, largest)
                if room:  # freed at its bound: the next subspace optimum moves it inward
                    state[i] = 0
                    _add_scaled(u, -c[i] * sign, design[i])
                    alpha[m] = sign * c[i]
                    m += 1
                else:  # no room: along the null direction (α_i inward, X̃ᵀΔα = 0) until a dual meets a bound
                    col = np.empty(m)
                    for a in range(m):
                        col[a] = np.dot(design[inside[a]], design[i])
                    w = _factor_solve(R, m, col)  # Δα_E = sign·w per unit of α_i moved inward
                    tau, block = 2.0 * c[i], -1
                    for a in range(m):
                        d = sign * w[a]
                        if d > 0.0:
                            ta = (c[inside[a]] - alpha[a]) / d
                        elif d < 0.0:
                            ta = (-c[inside[a]] - alpha[a]) / d
                        else:
                            continue
                        if ta < tau:
                            tau, block = max(ta, 0.0), a
                    for a in range(m):
                        alpha[a] += tau * sign * w[a]
                    if block < 0:  # sample i crossed to its other bound
                        state[i] = -sign
                        _add_scaled(u, -2.0 * c[i] * sign, design[i])
                    else:  # sample i takes the blocking sample's place in the free set
                        j = inside[block]
                        state[j] = 1 if sign * w[block] > 0.0 else -1
                        _add_scaled(u, c[j] * state[j], design[j])
                        _drop(R, inside, m, block)
                        for a in range(block, m - 1):
                            alpha[a] = alpha[a + 1]
                        m -= 1
                        largest = max(largest, np.dot(design[i], design[i]))
                        if _append(design, R, inside, m, i, largest):
                            state[i] = 0
                            _add_scaled(u, -c[i] * sign, design[i])
                            alpha[m] = sign * c[i] - tau * sign
                            m += 1
                        else:
                            since_built = REFRESH
        since_built += 1
        if since_built >= REFRESH:  # a fresh factor (the duals of the free samples are kept)
            kept = np.zeros(n)
            for a in range(m):
                kept[inside[a]] = alpha[a]
            m, largest, ok = _factor(design, c, state, R, inside, u)
            if not ok:
                return np.zeros(p), False
            for a in range(m):
                alpha[a] = kept[inside[a]]
            since_built = 0
    return np.zeros(p), False


@njit(cache=True, nogil=True)
def _finish(X: np.ndarray, design: np.ndarray, y: np.ndarray, c: np.ndarray, r: np.ndarray,
            mu: float, limit: int) -> tuple[np.ndarray, bool]:  # pragma: no cover - compiled
    """The exact L1 optimum from the smoothed solution with residuals r at smoothing mu: its pattern (the p
    smallest residuals inside ±mu interpolated, the others bounded by their signs) and duals start `_ascend`'s
    active-set method, up to `limit` steps; and whether the solution checks out (it then satisfies the optimality
    conditions: it is the optimum, however it was found). Far more samples inside ±mu than coefficients: too
    coarse to start from, smooth further."""
    n, p = X.shape[0], X.shape[1] + 1
    state = np.empty(n, dtype=np.int64)
    for i in range(n):
        state[i] = 1 if r[i] > 0 else -1
    spare = max(2, int(SPARE * p))
    order = _smallest(np.abs(r), p + spare + 1)  # the interpolated samples: |r| ≤ mu, at most the p smallest
    if n > p + spare and abs(r[order[p + spare]]) <= mu:
        return np.zeros(p), False  # far more than p inside: this smoothing is too coarse to read a pattern from
    for j in range(min(p, n)):
        if abs(r[order[j]]) > mu:
            break
        state[order[j]] = 0
    start = np.empty(n)  # the smoothed solution's duals c·ψ(r): feasible, and its v = X̃ᵀ·start
    for i in range(n):
        start[i] = c[i] * min(1.0, max(-1.0, r[i] / mu))
    return _ascend(X, design, y, c, state, start, limit)


@njit(cache=True, nogil=True)
def l1_svr(X: np.ndarray, y: np.ndarray, c: np.ndarray,
           start: np.ndarray) -> tuple[np.ndarray, bool]:  # pragma: no cover - compiled
    """Coefficients [β…, b] of the L1-loss linear SVR with epsilon 0 (module doc), from a starting point
    (e.g. the L2-loss solution), and whether the exact finish checked out (False: use another solver).

    Each Newton step's passes over the n × (F + 1) design are BLAS calls (the gradient X̃ᵀψ, the direction's
    X̃d, the Hessian as a rank-k update of the √(c/μ)-scaled rows inside the quadratic zone). Within a stage (one
    μ) the Hessian changes only by the rows that enter or leave the zone, so it is updated by those and rebuilt
    every `REBUILD` steps; its rounding steers Newton's path only, as the finish reads the pattern alone."""
    n, n_features = X.shape
    p = n_features + 1
    design = np.empty((n, p))  # X̃ = [X, 1], by loops: a slice assignment compiles a shape-error message (~4 s)
    for i in range(n):
        for f in range(n_features):
            design[i, f] = X[i, f]
        design[i, n_features] = 1.0
    design_t = np.ascontiguousarray(design.T)
    v = start.copy()
    r = np.empty(n)
    _residuals(X, y, v, r)
    absr = np.abs(r)
    cut = min(int(START * p), n - 1)
    mu = max(absr[_smallest(absr, cut + 1)[cut]], 1e-12)
    c_total = c.sum()
    psi_c = np.empty(n)
    scaled = np.empty((n, p))
    zone_of = np.zeros(n, dtype=np.bool_)  # who is in the quadratic zone of the Hessian H below
    H = np.empty((p, p))
    for _stage in range(40):
        since_built = REBUILD  # μ changed: the Hessian is built afresh
        for _newton in range(60):
            m = changed = 0
            for i in range(n):  # c·ψ(r) of the smoothed loss, and the rows of the quadratic zone
                ri = r[i]
                if ri > mu:
                    psi_c[i] = c[i]
                elif ri < -mu:
                    psi_c[i] = -c[i]
                else:
                    psi_c[i] = c[i] * ri / mu
                    m += 1
                if (not (ri > mu or ri < -mu)) != zone_of[i]:  # the zone as ψ's branches read it (NaN inside)
                    changed += 1
            g = v - design_t @ psi_c
            largest = 0.0  # np.abs(g).max(), NaN included, without compiling a reduction
            for a in range(p):
                if np.isnan(g[a]):
                    largest = g[a]
                    break
                largest = max(largest, abs(g[a]))
            if largest <= 1e-12 * (1.0 + c_total):
                break
            if since_built >= REBUILD or 2 * changed > m:  # H = I + Σ_zone (c/μ)·x̃x̃ᵀ, from the scaled rows
                m = 0
                for i in range(n):
                    zone_of[i] = not (r[i] > mu or r[i] < -mu)
                    if zone_of[i]:
                        h = np.sqrt(c[i] / mu)
                        for a in range(p):
                            scaled[m, a] = h * design[i, a]
                        m += 1
                zone = scaled[:m]
                H = zone.T @ zone
                for a in range(p):
                    H[a, a] += 1.0
                since_built = 0
            elif changed:  # a few rows entered or left the zone: H ± their terms (rows enter, then leave)
                entered = left = 0
                for i in range(n):
                    inside = not (r[i] > mu or r[i] < -mu)
                    if inside != zone_of[i]:
                        h = np.sqrt(c[i] / mu)
                        row = entered if inside else changed - 1 - left
                        for a in range(p):
                            scaled[row, a] = h * design[i, a]
                        if inside:
                            entered += 1
                        else:
                            left += 1
                        zone_of[i] = inside
                if entered:
                    rows = scaled[:entered]
                    H += rows.T @ rows
                if left:
                    rows = scaled[entered:changed]
                    H -= rows.T @ rows
                since_built += 1
            else:
                since_built += 1
            d, ok = _cholesky_solve(H, -g)
            if not ok:
                return v, False
            if np.dot(g, d) >= 0.0:
                break
            q = design @ d
            t = _line_search(r, q, c, v, d, mu)
            if t <= 0.0:
                break
            v += t * d
            r -= t * q
        exact, ok = _finish(X, design, y, c, r, mu, STEPS)
        if ok:
            return exact, True
        mu *= 0.1
        if mu < 1e-14:
            break
    return v, False
