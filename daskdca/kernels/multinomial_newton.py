"""Numba kernels of multinomial logistic regression by primal Newton, on one in-memory CSR block.

The problem, for ``K`` classes, ``W`` of shape ``(K, d)`` with rows ``w_k``
and row weights ``s_i`` (1 when unweighted)::

    P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2

(:mod:`daskdca.methods.multinomial_newton`).  Its ``K d`` variables are
numbered ``v = k d + j`` (``W`` flattened row by row); the Hessian of row
``i``'s loss is ``s_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` with
``p_i = softmax(W x_i)``: block ``(k, l)`` is
``s_i p_ik ([k = l] - p_il) x_i x_i^T`` (Bishop, Pattern Recognition and
Machine Learning, Springer, 2006, §4.3.4, eq. (4.110)).

- :func:`softmax_newton_sums`: the sums of
  :func:`~daskdca.kernels.multinomial_lbfgs.softmax_lbfgs_sums` (loss,
  conjugate at the certificate's dual point, gradient) and the upper
  triangle of the Hessian sum, in the packed layout of
  :func:`daskdca.kernels.newton.newton_system` for ``K d`` variables;
- :func:`softmax_ladder_sums`: the loss sum at ``W + t S`` for every step
  ``t`` of a ladder, from ``W x_i`` and ``S x_i`` (one pass).

No Dask, no method.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.kernels.multinomial_lbfgs import _softmax_row, softmax_lbfgs_sums
from daskdca.kernels.newton import _packed_index
from daskdca.losses import row_weight

__all__ = ["softmax_ladder_sums", "softmax_newton_sums"]


@njit(nogil=True, cache=True)
def softmax_newton_sums(indptr, indices, data, cls, weight, w, row_start, row_end, sums, grad, hess):
    """:func:`softmax_lbfgs_sums`' sums at ``W`` over rows ``[row_start, row_end)`` and the Hessian's.

    ``sums`` and ``grad`` as there; ``hess`` (the row-major upper triangle of
    the ``K d x K d`` Hessian sum, ``packed_size(K d)`` entries) ``+= sum_i
    s_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` (module docstring).  Rows of
    weight 0 add nothing.  Returns the rows visited.
    """
    seen = softmax_lbfgs_sums(indptr, indices, data, cls, weight, w, row_start, row_end, sums, grad)
    K = w.shape[0]
    d = w.shape[1]
    size = K * d
    wt = np.ascontiguousarray(w.T)
    m = np.empty(K)
    p = np.empty(K)
    for i in range(row_start, row_end):
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        _softmax_row(indptr, indices, data, i, wt, m, p)
        start = indptr[i]
        end = indptr[i + 1]
        for k in range(K):
            for h in range(k, K):
                c = s * p[k] * ((1.0 if k == h else 0.0) - p[h])
                if c == 0.0:
                    continue
                for a in range(start, end):
                    u = k * d + indices[a]
                    v = c * data[a]
                    if k == h:  # the diagonal block: each unordered pair of the row's entries once
                        for b in range(a, end):
                            t = k * d + indices[b]
                            if u <= t:
                                hess[_packed_index(u, t, size)] += v * data[b]
                            else:
                                hess[_packed_index(t, u, size)] += v * data[b]
                    else:  # block (k, h), k < h: every ordered pair, all above the diagonal
                        for b in range(start, end):
                            hess[_packed_index(u, h * d + indices[b], size)] += v * data[b]
    return seen


@njit(nogil=True, cache=True)
def softmax_ladder_sums(indptr, indices, data, cls, weight, w, direction, row_start, row_end, steps, out):
    """``out[j] += sum_i s_i [log sum_k exp(z_ik) - z_{i y_i}]``, ``z_i = W x_i + steps[j] S x_i``.

    ``W`` and ``S`` (``direction``) of shape ``(K, d)``; rows ``[row_start,
    row_end)``, those of weight 0 adding nothing.  One pass for every step of
    the ladder; returns the rows visited.
    """
    K = w.shape[0]
    wt = np.ascontiguousarray(w.T)
    st = np.ascontiguousarray(direction.T)
    a = np.empty(K)
    b = np.empty(K)
    z = np.empty(K)
    for i in range(row_start, row_end):
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        for k in range(K):
            a[k] = 0.0
            b[k] = 0.0
        for q in range(indptr[i], indptr[i + 1]):
            v = data[q]
            j = indices[q]
            for k in range(K):
                a[k] += v * wt[j, k]
                b[k] += v * st[j, k]
        y = cls[i]
        for j in range(steps.shape[0]):
            top = a[0] + steps[j] * b[0]
            for k in range(K):
                z[k] = a[k] + steps[j] * b[k]
                top = max(top, z[k])
            total = 0.0
            for k in range(K):
                total += math.exp(z[k] - top)
            out[j] += s * (top + math.log(total) - z[y])
    return row_end - row_start
