"""Numba kernels of multinomial logistic regression by primal L-BFGS, on one in-memory CSR block.

The problem, for ``K`` classes, ``W`` of shape ``(K, d)`` with rows ``w_k``
and row weights ``s_i`` (1 when unweighted)::

    P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2

(:mod:`daskdca.methods.multinomial_lbfgs`).  A partition sends, per round,
the sums :func:`softmax_lbfgs_sums` computes over its rows at one point
``W``: the loss sum, the conjugate sum at the dual point
``alpha_{:, i} = s_i (e_{y_i} - p_i)``, ``p_i = softmax(W x_i)``, and the
gradient sum ``G = sum_i s_i (p_i - e_{y_i}) x_i^T`` (``K x d``, so that
``alpha X = -G``).  :func:`softmax_dual_point` returns that dual point,
:func:`logistic_lbfgs_sums` the same sums for the binary logistic loss
(two classes), and :func:`two_loop_direction` is the L-BFGS two-loop
recursion (Nocedal & Wright, Numerical Optimization, 2nd ed., Algorithm
7.4), written out so that its bits do not depend on BLAS threads.  No Dask,
no method.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.kernels.newton import _logistic_terms
from daskdca.losses import row_weight

__all__ = ["flat_dot", "logistic_lbfgs_sums", "softmax_dual_point", "softmax_lbfgs_sums", "two_loop_direction"]


@njit(nogil=True, cache=True)
def _softmax_row(indptr, indices, data, i, wt, m, p):
    """Margins ``m_k = w_k.x_i`` (from ``wt = W^T``, ``(d, K)``, so that a feature's K weights are adjacent)
    and ``p = softmax(m)`` (the largest margin subtracted); returns ``(top, log_total)`` with
    ``log p_k = m_k - top - log_total``.  Each ``m_k`` adds the row's terms in their stored order."""
    K = m.shape[0]
    for k in range(K):
        m[k] = 0.0
    for q in range(indptr[i], indptr[i + 1]):
        v = data[q]
        j = indices[q]
        for k in range(K):
            m[k] += v * wt[j, k]
    top = m[0]
    for k in range(1, K):
        top = max(top, m[k])
    total = 0.0
    for k in range(K):
        p[k] = math.exp(m[k] - top)
        total += p[k]
    for k in range(K):
        p[k] /= total
    return top, math.log(total)


@njit(nogil=True, cache=True)
def softmax_lbfgs_sums(indptr, indices, data, cls, weight, w, row_start, row_end, sums, grad):
    """The softmax loss's sums at ``W`` over rows ``[row_start, row_end)``, added to ``sums`` and ``grad`` in place.

    ``sums[0] += sum_i s_i [log sum_k exp(m_ik) - m_{i y_i}]`` (``m_i = W x_i``),
    ``sums[1] += sum_i s_i sum_k p_ik log p_ik`` (the conjugate sum at the dual
    point ``alpha_{:, i} = s_i (e_{y_i} - p_i)``, ``p_i = softmax(m_i)``) and
    ``grad[k, j] += sum_i s_i (p_ik - [k = y_i]) x_ij``.  ``cls[i]`` is row
    ``i``'s class index; rows of weight 0 add nothing.  Returns the rows visited.
    """
    K = w.shape[0]
    d = w.shape[1]
    wt = np.empty((d, K))  # W^T and the gradient's transpose: a row's K entries of one feature are adjacent
    gt = np.zeros((d, K))
    for k in range(K):
        for j in range(d):
            wt[j, k] = w[k, j]
    m = np.empty(K)
    p = np.empty(K)
    c = np.empty(K)
    for i in range(row_start, row_end):
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        top, log_total = _softmax_row(indptr, indices, data, i, wt, m, p)
        y = cls[i]
        sums[0] += s * (top + log_total - m[y])
        neg_entropy = 0.0
        for k in range(K):
            if p[k] > 0.0:
                neg_entropy += p[k] * (m[k] - top - log_total)
            c[k] = s * (p[k] - (1.0 if k == y else 0.0))
        sums[1] += s * neg_entropy
        for q in range(indptr[i], indptr[i + 1]):
            v = data[q]
            j = indices[q]
            for k in range(K):
                gt[j, k] += c[k] * v
    for k in range(K):
        for j in range(d):
            grad[k, j] += gt[j, k]
    return row_end - row_start


@njit(nogil=True, cache=True)
def softmax_dual_point(indptr, indices, data, cls, weight, w, row_start, row_end):
    """``alpha_{:, i} = s_i (e_{y_i} - softmax(W x_i))`` for rows ``[row_start, row_end)``, shape ``(K, rows)``:
    the certificate's dual point (every ``beta_i = e_{y_i} - alpha_{:, i} / s_i`` in the simplex)."""
    K = w.shape[0]
    wt = np.ascontiguousarray(w.T)
    out = np.zeros((K, row_end - row_start))
    m = np.empty(K)
    p = np.empty(K)
    for i in range(row_start, row_end):
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        _softmax_row(indptr, indices, data, i, wt, m, p)
        for k in range(K):
            out[k, i - row_start] = s * ((1.0 if k == cls[i] else 0.0) - p[k])
    return out


@njit(nogil=True, cache=True)
def logistic_lbfgs_sums(indptr, indices, data, y, weight, w, row_start, row_end, sums, grad):
    """The binary logistic loss's sums at ``w`` over rows ``[row_start, row_end)``, added in place.

    ``sums[0] += sum s_i phi_i(z_i)``, ``sums[1] += sum (s_i phi_i)*(-alpha_i)``
    at ``alpha_i = -s_i phi_i'(z_i)`` and ``grad += sum s_i phi_i'(z_i) x_i``
    (``z_i = x_i.w``, ``phi_i(z) = log(1 + exp(-y_i z))``), as
    :func:`~daskdca.kernels.newton.newton_sums` without the Hessian.  Returns the rows visited.
    """
    for i in range(row_start, row_end):
        z = 0.0
        for q in range(indptr[i], indptr[i + 1]):
            z += data[q] * w[indices[q]]
        loss, c, conj, _ = _logistic_terms(y[i], z, row_weight(weight, i))
        sums[0] += loss
        sums[1] += conj
        if c != 0.0:
            for q in range(indptr[i], indptr[i + 1]):
                grad[indices[q]] += c * data[q]
    return row_end - row_start


@njit(nogil=True, cache=True)
def flat_dot(a, b):
    """``a.b`` of two 1-d arrays, summed in index order (no BLAS, so the same bits in every process)."""
    acc = 0.0
    for j in range(a.shape[0]):
        acc += a[j] * b[j]
    return acc


@njit(nogil=True, cache=True)
def two_loop_direction(grad, S, Y, n_pairs):
    """The L-BFGS direction ``-H grad`` by the two-loop recursion (Nocedal & Wright, Algorithm 7.4).

    Parameters
    ----------
    grad : ndarray of shape (D,)
        The gradient at the current point.
    S, Y : ndarray of shape (m, D)
        The pairs ``s_j = x_{j+1} - x_j`` and ``y_j = g_{j+1} - g_j``, the
        oldest first; only the first ``n_pairs`` rows are read, and each has
        ``s_j.y_j > 0``.
    n_pairs : int
        Pairs stored (0: the direction is ``-grad``).

    Returns
    -------
    ndarray of shape (D,)
        ``-H_k grad`` with ``H_k^0 = gamma I``, ``gamma = s.y / y.y`` of the
        newest pair (their eq. (7.20)).
    """
    D = grad.shape[0]
    q = grad.copy()
    a = np.zeros(n_pairs)
    rho = np.zeros(n_pairs)
    for j in range(n_pairs - 1, -1, -1):
        rho[j] = 1.0 / flat_dot(S[j], Y[j])
        a[j] = rho[j] * flat_dot(S[j], q)
        for t in range(D):
            q[t] -= a[j] * Y[j, t]
    gamma = 1.0
    if n_pairs > 0:
        last = n_pairs - 1
        gamma = flat_dot(S[last], Y[last]) / flat_dot(Y[last], Y[last])
    for t in range(D):
        q[t] *= gamma
    for j in range(n_pairs):
        b = rho[j] * flat_dot(Y[j], q)
        for t in range(D):
            q[t] += S[j, t] * (a[j] - b)
    for t in range(D):
        q[t] = -q[t]
    return q
