"""Numba kernels of SDNA: Stochastic Dual Newton Ascent (Qu, Richtárik, Takáč, Fercoq 2016 [QRTF16]).

SDNA maximises the dual

    D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2,   w(alpha) = X^T alpha / (lam n)

of ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` over a random set ``S``
of ``tau`` coordinates at a time, *exactly* (Algorithm 3, step 6): with
``c = X_S u`` and ``Q = sigma X_S X_S^T / (lam n)`` (``n`` the global row
count, docs/references.md, note N7), the step ``h`` minimises

    Phi(h) = c.h + 1/2 h^T Q h + sum_{j in S} phi_j*(-alpha_j - h_j),

and ``D`` rises by exactly ``-(Phi(h) - Phi(0)) / n`` (docs/references.md, note N7).  With
``sigma = 1`` and ``u = w`` this is the paper's Algorithm 3; with
``sigma = sigma' = K`` and ``u = w + sigma' delta_w_k`` it is the local solver
of a CoCoA+ round on the subproblem ``G_k^{sigma'}`` (docs/references.md, note N7).

The subproblem solvers (docs/references.md, note N7), all on the dense ``tau x tau`` ``Q`` built
once per iteration in float64 by a sparse scatter/gather kernel:

* squared loss: ``(Q + I) h = y_S - c - alpha_S`` by Cholesky (Qu et al. 2016 [QRTF16] §5), with a
  diagonal jitter when the factorisation fails;
* hinge, smoothed hinge, squared hinge: exact projected coordinate descent on
  the cached ``Q``; each coordinate step is the closed-form 1-D dual
  step of :func:`daskdca.losses.dual_update` with margin ``(c + Q h)_j`` and
  curvature ``Q_jj``, so every step raises ``D`` and a singular ``Q``
  (duplicate rows) needs no factorisation; between sweeps, Newton steps on
  the coordinates inside the box (taken only when they lower ``Phi``) make
  it converge on strongly correlated rows (the alternative note N7 names);
* logistic: one such coordinate sweep (it moves every ``b = y alpha`` off the
  boundary 0, where the entropy's derivative is infinite), then damped Newton
  in ``b`` with a fraction-to-boundary rule and Armijo backtracking,
  keeping ``b`` in ``(0, 1)``.

With ``tau = 1`` every solver takes the closed-form SDCA step (docs/references.md, note N7).
The row sets are passed in (one row of ``batches`` per iteration), so the
tests run a NumPy reference on the same sets.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.kernels.sampling import minibatch_indices, stream_seed
from daskdca.losses import (B_MAX, B_MIN, LOGISTIC, SMOOTHED_HINGE, SQUARED, SQUARED_HINGE, conjugate_value,
                             dual_update)

__all__ = ["cholesky_solve", "gram_block", "local_sdna", "sdna_batches", "solve_subproblem"]

# Coordinate descent on the cached Q (docs/references.md, note N7): stop when a sweep moves no
# coordinate by more than CD_TOL * (1 + |alpha_j + h_j|), or after
# CD_MAX_SWEEPS sweeps.  Any number of sweeps raises D (docs/references.md, note N7); the cap
# bounds the O(tau^2) work per sweep when Q is ill-conditioned.
CD_TOL = 1e-14
CD_MAX_SWEEPS = 500
# Active-set Newton steps of the box QP, each after one CD sweep (_box_qp).
BOX_NEWTON_STEPS = 50
# Damped Newton for logistic (docs/references.md, note N7): fraction-to-boundary 0.99, Armijo
# constant 1e-4, at most NEWTON_MAX_ITER steps; stop when no b moves by more
# than NEWTON_TOL.  (Textbook values, Nocedal & Wright 2006 §3.1 and §19.2.)
NEWTON_BOUNDARY = 0.99
NEWTON_ARMIJO = 1e-4
NEWTON_MAX_ITER = 50
NEWTON_TOL = 1e-15
# A Newton decrement below NEWTON_ROUNDING (1 + |Phi|) is under the rounding
# of Phi: the step is then taken without the Armijo test.
NEWTON_ROUNDING = 1e-13
# Cholesky jitter when a pivot is not positive: 1e-12 tr(A) / tau (docs/references.md, note N7),
# multiplied by 100 on each retry.
JITTER = 1e-12
JITTER_GROWTH = 100.0
JITTER_TRIES = 8


@njit(nogil=True, cache=True)
def sdna_batches(random_state, round_index, stream, n_rows, tau, n_iter):
    """``n_iter`` tau-nice sets of ``tau`` rows of ``n_rows``, one per local iteration.

    Iteration ``t`` draws with :func:`~daskdca.kernels.sampling.minibatch_indices`
    from the stream ``(s, t, 0)``, where ``s`` is the 63-bit state of the
    stream ``(random_state, round_index, stream)``: a pure function of the
    round, the partition (or block) and the iteration, whichever worker runs it.
    """
    seed = np.int64(stream_seed(random_state, round_index, stream) >> np.uint64(1))
    out = np.empty((n_iter, tau), dtype=np.int64)
    for t in range(n_iter):
        out[t, :] = minibatch_indices(seed, t, 0, n_rows, tau, 0)
    return out


@njit(nogil=True, cache=True)
def gram_block(indptr, indices, data, rows, scale, scratch, Q):
    """``Q = scale X_S X_S^T`` for the rows ``S = rows`` (float64), by scatter/gather (docs/references.md, note N7).

    ``scratch`` is a zero d-vector and is left zero: row ``a`` is scattered
    into it, rows ``b >= a`` are gathered against it, then row ``a`` is cleared.
    """
    tau = rows.shape[0]
    for a in range(tau):
        i = rows[a]
        for p in range(indptr[i], indptr[i + 1]):
            scratch[indices[p]] += data[p]
        for b in range(a, tau):
            j = rows[b]
            s = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                s += data[p] * scratch[indices[p]]
            Q[a, b] = scale * s
            Q[b, a] = Q[a, b]
        for p in range(indptr[i], indptr[i + 1]):
            scratch[indices[p]] = 0.0


@njit(nogil=True, cache=True)
def _cholesky(A, L, shift):
    """Lower ``L`` with ``L L^T = A + shift I``; False when a pivot is not positive."""
    m = A.shape[0]
    for j in range(m):
        s = A[j, j] + shift
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, m):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
    return True


@njit(nogil=True, cache=True)
def cholesky_solve(A, rhs):
    """``x`` with ``A x = rhs`` for symmetric positive (semi)definite ``A``.

    Cholesky; when a pivot is not positive, retried with a diagonal jitter
    ``1e-12 tr(A) / m``, growing 100x per try (docs/references.md, note N7).
    """
    m = A.shape[0]
    L = np.zeros((m, m))
    shift = 0.0
    trace = 0.0
    for j in range(m):
        trace += abs(A[j, j])
    for attempt in range(JITTER_TRIES + 1):
        if _cholesky(A, L, shift):
            break
        shift = JITTER * max(trace, 1e-300) / m if shift == 0.0 else shift * JITTER_GROWTH
    x = rhs.copy()
    for i in range(m):  # L z = rhs
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(m - 1, -1, -1):  # L^T x = z
        s = x[i]
        for k in range(i + 1, m):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
    return x


@njit(nogil=True, cache=True)
def _cd_sweeps(Q, r, a, y, loss_kind, loss_param, max_sweeps):
    """Exact coordinate descent on ``Phi``; ``a`` = alpha_S + h and ``r = c + Q h`` updated in place.

    Returns the largest relative move of the last sweep.
    """
    tau = a.shape[0]
    largest = 0.0
    for sweep in range(max_sweeps):
        largest = 0.0
        for j in range(tau):
            a_new = dual_update(loss_kind, loss_param, y[j], a[j], Q[j, j], r[j])
            delta = a_new - a[j]
            if delta != 0.0:
                a[j] = a_new
                for k in range(tau):
                    r[k] += delta * Q[k, j]
                rel = abs(delta) / (1.0 + abs(a_new))
                if rel > largest:
                    largest = rel
        if largest <= CD_TOL:
            break
    return largest


@njit(nogil=True, cache=True)
def _box_qp(Q, r, a, y, loss_kind, loss_param):
    """The box QP of the hinge losses (docs/references.md, note N7): coordinate descent with active-set Newton steps.

    ``Phi`` is quadratic in ``a = alpha_S + h`` with Hessian ``Q + g I``
    (``g`` = 0 for hinge, ``gamma`` for smoothed hinge, 1/2 for squared
    hinge) on the box ``b = y a`` in ``[0, 1]`` (``[0, inf)`` for squared
    hinge).  Each outer step is one CD sweep (it frees or fixes coordinates
    at the bounds), then the Newton step on the coordinates strictly inside
    the box, either cut at the first bound it meets or projected onto the
    box, whichever lowers ``Phi`` more (``Phi`` is quadratic, so the change
    is computed exactly), and only if it does.  Plain CD needs hundreds of sweeps when the
    rows are strongly correlated (agaricus at lam = 1/n: more than 500 at
    tau = 256).  CD sweeps finish the solve.
    """
    tau = a.shape[0]
    if loss_kind == SMOOTHED_HINGE:
        g, hi = loss_param, 1.0
    elif loss_kind == SQUARED_HINGE:
        g, hi = 0.5, math.inf
    else:
        g, hi = 0.0, 1.0
    free = np.empty(tau, dtype=np.int64)
    move = np.empty(tau)
    best = np.empty(tau)
    for outer in range(BOX_NEWTON_STEPS):
        if _cd_sweeps(Q, r, a, y, loss_kind, loss_param, 1) <= CD_TOL:
            return
        m = 0
        for j in range(tau):
            b = y[j] * a[j]
            if 0.0 < b < hi:
                free[m] = j
                m += 1
        if m == 0:
            continue
        H = np.empty((m, m))
        grad = np.empty(m)
        for p in range(m):
            j = free[p]
            grad[p] = -(r[j] - y[j] + g * a[j])  # minus the gradient of Phi in a_j
            for q in range(m):
                H[p, q] = Q[j, free[q]]
            H[p, p] += g
        step = cholesky_solve(H, grad)
        # two candidates: the step cut at the first bound it meets (Phi
        # decreases along it) and the full step projected onto the box (many
        # bounds at once); the better one is taken if it lowers Phi
        t = 1.0
        for p in range(m):
            j = free[p]
            db = y[j] * step[p]
            b = y[j] * a[j]
            if db < 0.0:
                t = min(t, b / -db)
            elif db > 0.0 and hi < math.inf:
                t = min(t, (hi - b) / db)
        best_change = 0.0
        for candidate in range(2):
            for p in range(m):
                j = free[p]
                scale = t if candidate == 0 else 1.0
                b_new = min(max(y[j] * (a[j] + scale * step[p]), 0.0), hi)
                move[p] = y[j] * b_new - a[j]
            change = 0.0
            for p in range(m):
                hs = 0.0
                for q in range(m):
                    hs += H[p, q] * move[q]
                change += move[p] * (0.5 * hs - grad[p])
            if change < best_change:
                best_change = change
                best[:m] = move[:m]
        if not best_change < 0.0:
            continue
        for p in range(m):
            j = free[p]
            if best[p] != 0.0:
                old = a[j]
                a[j] = y[j] * min(max(y[j] * (old + best[p]), 0.0), hi)
                delta = a[j] - old
                for k in range(tau):
                    r[k] += delta * Q[k, j]
    _cd_sweeps(Q, r, a, y, loss_kind, loss_param, CD_MAX_SWEEPS)


@njit(nogil=True, cache=True)
def _phi_logistic(Q, c, a0, a, y):
    """``Phi(h)`` with ``h = a - a0`` for the logistic conjugate."""
    tau = a.shape[0]
    val = 0.0
    for j in range(tau):
        hj = a[j] - a0[j]
        qh = 0.0
        for k in range(tau):
            qh += Q[j, k] * (a[k] - a0[k])
        val += c[j] * hj + 0.5 * hj * qh + conjugate_value(LOGISTIC, 0.0, y[j], a[j])
    return val


@njit(nogil=True, cache=True)
def _logistic_newton(Q, c, a0, a, y):
    """Damped Newton in ``b = y a`` on ``Phi`` from a point with ``b`` in ``(0, 1)`` (docs/references.md, note N7)."""
    tau = a.shape[0]
    H = np.empty((tau, tau))
    g = np.empty(tau)
    b = np.empty(tau)
    trial = np.empty(tau)
    for it in range(NEWTON_MAX_ITER):
        for j in range(tau):
            b[j] = y[j] * a[j]
        # gradient y (c + Q h) + logit(b); Hessian D(y) Q D(y) + D(1 / (b (1 - b)))
        for j in range(tau):
            r = c[j]
            for k in range(tau):
                r += Q[j, k] * (a[k] - a0[k])
            g[j] = y[j] * r + math.log(b[j] / (1.0 - b[j]))
            for k in range(tau):
                H[j, k] = y[j] * Q[j, k] * y[k]
            H[j, j] += 1.0 / (b[j] * (1.0 - b[j]))
        neg = -g
        step = cholesky_solve(H, neg)
        slope = 0.0
        largest = 0.0
        t_max = 1.0
        for j in range(tau):
            slope += g[j] * step[j]
            largest = max(largest, abs(step[j]))
            if step[j] < 0.0:
                t_max = min(t_max, NEWTON_BOUNDARY * b[j] / -step[j])
            elif step[j] > 0.0:
                t_max = min(t_max, NEWTON_BOUNDARY * (1.0 - b[j]) / step[j])
        if largest <= NEWTON_TOL or not slope < 0.0:
            return it
        phi0 = _phi_logistic(Q, c, a0, a, y)
        t = t_max
        # Below the rounding of Phi the Armijo test cannot see the decrease:
        # there the Newton step is taken as it is (quadratic convergence).
        accepted = -slope <= NEWTON_ROUNDING * (1.0 + abs(phi0))
        for _ in range(60):
            for j in range(tau):
                trial[j] = y[j] * min(max(b[j] + t * step[j], B_MIN), B_MAX)
            if accepted or _phi_logistic(Q, c, a0, trial, y) <= phi0 + NEWTON_ARMIJO * t * slope:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            return it
        for j in range(tau):
            a[j] = trial[j]
        if largest * t <= NEWTON_TOL:
            return it + 1
    return NEWTON_MAX_ITER


@njit(nogil=True, cache=True)
def solve_subproblem(Q, c, alpha_S, y_S, loss_kind, loss_param):
    """New ``alpha_S + h`` with ``h = argmin Phi(h)`` (module docstring; docs/references.md, note N7).

    Returns the new values (not ``h``), so that they lie exactly in the
    conjugate's domain.
    """
    tau = c.shape[0]
    a = alpha_S.copy()
    if tau == 1:  # the closed-form SDCA step (docs/references.md, note N7, tau = 1)
        a[0] = dual_update(loss_kind, loss_param, y_S[0], alpha_S[0], Q[0, 0], c[0])
        return a
    if loss_kind == SQUARED:  # (Q + I) h = y_S - c - alpha_S (docs/references.md, note N7, paper §5)
        A = Q.copy()
        rhs = np.empty(tau)
        for j in range(tau):
            A[j, j] += 1.0
            rhs[j] = y_S[j] - c[j] - alpha_S[j]
        h = cholesky_solve(A, rhs)
        for j in range(tau):
            a[j] = alpha_S[j] + h[j]
        return a
    r = c.copy()
    if loss_kind == LOGISTIC:
        _cd_sweeps(Q, r, a, y_S, loss_kind, loss_param, 1)
        _logistic_newton(Q, c, alpha_S, a, y_S)
        return a
    _box_qp(Q, r, a, y_S, loss_kind, loss_param)
    return a


@njit(nogil=True, cache=True)
def local_sdna(indptr, indices, data, y, alpha, u, delta_w, batches, loss_kind, loss_param, lam_n, sigma,
               track_delta_w):
    """SDNA iterations, one per row of ``batches``; updates ``alpha`` and ``u`` in place.

    For each set ``S``: ``c = X_S u``, ``Q = sigma X_S X_S^T / lam_n``, the
    exact subproblem step ``h`` (:func:`solve_subproblem`), ``alpha_S += h``,
    ``u += sigma X_S^T h / lam_n`` and, with ``track_delta_w``,
    ``delta_w += X_S^T h / lam_n`` (docs/references.md, note N7, lines 5-7).  A set must not
    repeat a row.  Returns the number of coordinates visited.
    """
    n_iter, tau = batches.shape
    inv_lam_n = 1.0 / lam_n
    scratch = np.zeros(u.shape[0])
    Q = np.empty((tau, tau))
    c = np.empty(tau)
    a_S = np.empty(tau)
    y_S = np.empty(tau)
    for t in range(n_iter):
        rows = batches[t]
        for k in range(tau):
            i = rows[k]
            m = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                m += data[p] * u[indices[p]]
            c[k] = m
            a_S[k] = alpha[i]
            y_S[k] = y[i]
        gram_block(indptr, indices, data, rows, sigma * inv_lam_n, scratch, Q)
        a_new = solve_subproblem(Q, c, a_S, y_S, loss_kind, loss_param)
        for k in range(tau):
            delta = a_new[k] - a_S[k]
            if delta != 0.0:
                i = rows[k]
                alpha[i] = a_new[k]
                cw = delta * inv_lam_n
                cs = sigma * cw
                for p in range(indptr[i], indptr[i + 1]):
                    u[indices[p]] += cs * data[p]
                if track_delta_w:
                    for p in range(indptr[i], indptr[i + 1]):
                        delta_w[indices[p]] += cw * data[p]
    return n_iter * tau
