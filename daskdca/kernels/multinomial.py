"""Numba kernels of multinomial logistic regression (the softmax loss) by dual coordinate ascent.

The problem, for ``K`` classes, ``W`` of shape ``(K, d)`` with rows ``w_k``
and row weights ``s_i`` (1 when unweighted)::

    P(W)     = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2
    D(alpha) = 1/n sum_i s_i H(beta_i) - lam/2 ||W(alpha)||_F^2,
    beta_i   = e_{y_i} - alpha_i / s_i  in the simplex,  H(beta) = -sum_k beta_k log beta_k,
    w_k(alpha) = sum_i alpha_{k i} x_i / (lam n)   (W(alpha) = alpha X / (lam n), alpha of shape (K, n)).

The conjugate of the softmax loss ``l_y(z) = log sum_k exp(z_k) - z_y`` is
the negative entropy ``l_y*(v) = sum_k (v + e_y)_k log (v + e_y)_k`` on the
shifted simplex ``v + e_y in Delta_K`` (derived in docs/references.md, note N11;
the problem is an instance of Shalev-Shwartz & Zhang [SSZ16] eq. (1), vector losses of
``X_i^T w``; [SSZ13] for the dual ``D``), so
``-l_y*(-alpha_i) = H(e_y - alpha_i)``; row ``i``'s dual variables are the
``K`` entries ``alpha_{:, i}``, which sum to 0, with ``alpha_{y_i i}`` in
``[0, s_i]`` and the others in ``[-s_i, 0]``.  ``beta_i`` is the model's
predicted distribution at the optimum: ``beta_i = softmax(W* x_i)``.

The coordinate step of row ``i`` maximises the dual over its ``K`` duals
with the others fixed: with margins ``m = U x_i`` (``U = W``, or CoCoA+'s
``W + sigma' delta_W``) and ``q = sigma' ||x_i||^2 / (lam n)``, the new
``beta`` solves (docs/references.md, note N11)

    max_{beta in Delta_K}  H(beta) + beta.m - s q / 2 ||beta - beta0||^2,

whose optimality conditions are ``log beta_k + s q beta_k = m_k + s q beta0_k - nu``
for one multiplier ``nu``; :func:`entropy_simplex_step` finds ``nu`` by a
monotone Newton iteration and each ``beta_k(nu)`` by an inner one.  Each
step is the exact maximiser (to rounding), so the dual never falls.

Passing the rows to visit in (``order``) lets ``tests/reference_multinomial.py``
run a NumPy reference on the same sequence.  ``lam_n = lam * n`` with ``n``
the rows of the whole problem (docs/references.md, note N0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.losses import row_weight

__all__ = ["entropy_simplex_step", "local_multinomial_sdca", "multinomial_objective_sums", "softmax_loss_row"]

# Stopping rules of the two Newton iterations of entropy_simplex_step: the
# outer one (in nu) stops when sum_k beta_k is 1 to within _SUM_TOL or its
# step no longer moves nu; the inner one (log beta_k) when its step no longer
# moves the iterate (both iterations are monotone, so they end at a fixed
# point of the rounding).  _MAX_ITER bounds both (never reached in the tests:
# about 5-10 outer and 2-4 inner steps on digits and heart).
_SUM_TOL = 4.0 * float(np.finfo(np.float64).eps)
_MAX_ITER = 200


@njit(nogil=True, cache=True)
def _log_root(a, q, t):
    """``t`` solving ``t + q exp(t) = a`` (``beta = exp(t)`` solves ``log beta + q beta = a``), by Newton from
    ``t`` (which must satisfy ``t + q exp(t) >= a``).

    ``phi(t) = t + q e^t`` is convex and increasing, so Newton from the
    right decreases monotonically to the root.
    """
    for _ in range(_MAX_ITER):
        e = q * math.exp(t)
        step = (t + e - a) / (1.0 + e)
        if not step > 0.0:
            break
        t_new = t - step
        if t_new == t:
            break
        t = t_new
    return t


@njit(nogil=True, cache=True)
def entropy_simplex_step(m, beta0, sq, beta, t):
    """``beta = argmax_{b in Delta_K} H(b) + b.m - sq/2 ||b - beta0||^2`` (``H`` the entropy), in place.

    Parameters
    ----------
    m, beta0 : ndarray of shape (K,)
        The row's margins and its current distribution.
    sq : float
        ``s_i q_i`` (weight times curvature, ``>= 0``).
    beta, t : ndarray of shape (K,)
        Output, and a work array (``log beta``).

    Notes
    -----
    With ``c_k = m_k + sq beta0_k``, the maximiser is ``beta_k = b(c_k - nu)``
    where ``b(a)`` solves ``log b + sq b = a`` and ``nu`` makes
    ``G(nu) = sum_k b(c_k - nu) - 1`` vanish.  ``b(.)`` is convex and
    increasing, so ``G`` is convex and decreasing in ``nu``: Newton from
    ``nu_0 = max_k c_k - sq`` (where the largest ``b`` is 1, so ``G >= 0``)
    increases ``nu`` monotonically to the root, and each ``a_k = c_k - nu``
    decreases, so the inner iterations restart from their last root, on its
    right.  ``sq = 0`` (a zero row) is the softmax of ``m``.
    """
    K = m.shape[0]
    if not sq > 0.0:
        top = m[0]
        for k in range(1, K):
            top = max(top, m[k])
        total = 0.0
        for k in range(K):
            beta[k] = math.exp(m[k] - top)
            total += beta[k]
        for k in range(K):
            beta[k] /= total
        return
    c_max = -math.inf
    for k in range(K):
        c_max = max(c_max, m[k] + sq * beta0[k])
    nu = c_max - sq
    for k in range(K):
        a = m[k] + sq * beta0[k] - nu
        t[k] = min(a, 0.0)  # phi(a) >= a and phi(0) = sq >= a: both on the right of the root
    for _ in range(_MAX_ITER):
        total = 0.0
        slope = 0.0
        for k in range(K):
            t[k] = _log_root(m[k] + sq * beta0[k] - nu, sq, t[k])
            b = math.exp(t[k])
            total += b
            slope += b / (1.0 + sq * b)  # -dG/dnu
        excess = total - 1.0
        if not excess > _SUM_TOL:
            break
        nu_new = nu + excess / slope
        if nu_new == nu:
            break
        nu = nu_new
    total = 0.0
    for k in range(K):
        beta[k] = math.exp(t[k])
        total += beta[k]
    for k in range(K):
        beta[k] /= total


@njit(nogil=True, cache=True)
def _row_margins(indptr, indices, data, i, u, m):
    """``m_k = u_k . x_i`` for every class ``k``."""
    for k in range(m.shape[0]):
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * u[k, indices[p]]
        m[k] = acc


@njit(nogil=True, cache=True)
def _row_beta(alpha, cls, i, s, beta):
    """``beta_i = e_{y_i} - alpha_{:, i} / s``, each entry clipped at 0 against rounding."""
    for k in range(beta.shape[0]):
        v = -alpha[k, i] / s
        if k == cls[i]:
            v += 1.0
        beta[k] = max(v, 0.0)


@njit(nogil=True, cache=True)
def softmax_loss_row(m, y):
    """``log sum_k exp(m_k) - m_y`` without overflow."""
    top = m[0]
    for k in range(1, m.shape[0]):
        top = max(top, m[k])
    total = 0.0
    for k in range(m.shape[0]):
        total += math.exp(m[k] - top)
    return top + math.log(total) - m[y]


@njit(nogil=True, cache=True)
def local_multinomial_sdca(indptr, indices, data, cls, weight, sqnorm, alpha, u, delta_w, order, lam_n, sigma,
                           track_delta_w):
    """Sequential dual coordinate steps of the softmax loss; updates ``alpha`` and ``u`` in place.

    For each row ``i`` of ``order`` (row weight ``s = weight[i]``, 1 when
    ``weight`` is empty; rows of weight 0 are skipped): margins
    ``m = u x_i`` (``u`` of shape ``(K, d)``), ``q = sigma ||x_i||^2 / lam_n``,
    ``beta <-`` :func:`entropy_simplex_step` ``(m, beta, s q)``,
    ``alpha_{:, i} <- s (e_{y_i} - beta)`` and, with ``delta = alpha_new - alpha_old``,
    ``u_k += sigma (delta_k / lam_n) x_i``.

    * ``sigma = 1`` and ``u = W``: serial SDCA on the multinomial dual
      ([SSZ13], [SSZ16] eq. (1)), keeping ``W = alpha X / lam_n``.
    * ``sigma = sigma' = K_p`` partitions and ``u = W + sigma' delta_W``: CoCoA+'s
      local subproblem ``G_k^{sigma'}`` ([MSJ+15], adding variant, as
      :func:`daskdca.kernels.sdca.local_sdca`); with ``track_delta_w`` also
      ``delta_w_k += (delta_k / lam_n) x_i``.

    ``cls[i]`` is row ``i``'s class index in ``0 .. K-1``; ``alpha`` has
    shape ``(K, n_rows)``.  Returns the number of rows visited.
    """
    K = alpha.shape[0]
    inv_lam_n = 1.0 / lam_n
    m = np.empty(K)
    beta0 = np.empty(K)
    beta = np.empty(K)
    t = np.empty(K)
    for step in range(order.shape[0]):
        i = order[step]
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        _row_margins(indptr, indices, data, i, u, m)
        _row_beta(alpha, cls, i, s, beta0)
        entropy_simplex_step(m, beta0, s * sigma * sqnorm[i] * inv_lam_n, beta, t)
        start = indptr[i]
        end = indptr[i + 1]
        for k in range(K):
            a_new = s * ((1.0 if k == cls[i] else 0.0) - beta[k])
            a_old = alpha[k, i]
            if a_new != a_old:
                alpha[k, i] = a_new
                c = (a_new - a_old) * inv_lam_n
                cs = sigma * c
                for p in range(start, end):
                    u[k, indices[p]] += cs * data[p]
                if track_delta_w:
                    for p in range(start, end):
                        delta_w[k, indices[p]] += c * data[p]
    return order.shape[0]


@njit(nogil=True, cache=True)
def multinomial_objective_sums(indptr, indices, data, cls, weight, alpha, w, row_start, row_end):
    """One pass over rows ``[row_start, row_end)`` for the duality gap.

    Returns ``(sum_i s_i l_{y_i}(W x_i), sum_i s_i sum_k beta_ik log beta_ik)``
    with ``beta_i = e_{y_i} - alpha_{:, i} / s_i``: the loss sum of ``P(W)``
    and the conjugate sum ``sum_i phi_i*(-alpha_i)`` of ``D(alpha)``
    (module docstring).  Rows of weight 0 add nothing.
    """
    K = alpha.shape[0]
    m = np.empty(K)
    beta = np.empty(K)
    loss_sum = 0.0
    conj_sum = 0.0
    for i in range(row_start, row_end):
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        _row_margins(indptr, indices, data, i, w, m)
        loss_sum += s * softmax_loss_row(m, cls[i])
        _row_beta(alpha, cls, i, s, beta)
        neg_entropy = 0.0
        for k in range(K):
            if beta[k] > 0.0:
                neg_entropy += beta[k] * math.log(beta[k])
        conj_sum += s * neg_entropy
    return loss_sum, conj_sum
