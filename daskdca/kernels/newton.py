"""Numba kernels of the primal Newton method on one in-memory CSR block.

The method solves ``min_w P(w) = 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2``
(``s_i`` the row weights, all 1 when unweighted) by Newton steps with a
backtracking line search (:mod:`daskdca.methods.newton`).  A partition sends,
per round, the sums these kernels compute over its rows:

- :func:`newton_sums`: ``sum s_i phi_i(z_i)``, ``sum (s_i phi_i)*(-alpha_i)``
  at the certificate's dual point ``alpha_i = -s_i phi_i'(z_i)``, the
  gradient sum ``sum s_i phi_i'(z_i) x_i`` and the upper triangle of the
  Hessian sum ``sum s_i phi_i''(z_i) x_i x_i^T`` (``z_i = x_i.w``);
- :func:`ladder_loss_sums`: ``sum s_i phi_i(m_i + t_j q_i)`` for every step
  ``t_j`` of a fixed ladder, from ``m_i = x_i.w`` and ``q_i = x_i.s`` (one pass);
- :func:`dual_point`: ``alpha_i = -s_i phi_i'(x_i.w)``.

:func:`newton_system` and :func:`cholesky_solve` solve the Newton system on
the combined sums.  No Dask, no method.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.losses import (
    LOGISTIC,
    SMOOTHED_HINGE,
    SQUARED,
    SQUARED_HINGE,
    loss_derivative,
    row_weight,
    weighted_conjugate_value,
    weighted_loss_value,
)

__all__ = ["cholesky_solve", "dual_point", "gradient_curvature_sums", "ladder_loss_sums", "loss_curvature",
           "newton_sums", "newton_system", "packed_size"]


def packed_size(d):
    """Length of the row-major upper triangle of a ``d x d`` matrix, ``d (d + 1) / 2``."""
    return d * (d + 1) // 2


@njit(nogil=True, cache=True)
def _packed_index(a, b, d):
    """Position of entry ``(a, b)``, ``a <= b``, in the row-major upper triangle of a ``d x d`` matrix."""
    return a * d - (a * (a - 1)) // 2 + (b - a)


@njit(nogil=True, cache=True)
def loss_curvature(kind, param, y, z):
    """``phi_i''(z)``, the generalised second derivative where ``phi_i'`` has a kink.

    Squared hinge: ``2`` where ``y z < 1``, else 0 (the generalised Hessian
    of Mangasarian, "A finite Newton method for classification", 2002, which
    LIBLINEAR's TRON takes for the L2-loss SVM: Lin, Weng & Keerthi, "Trust
    region Newton method for large-scale logistic regression", JMLR 9, 2008);
    smoothed hinge ``1/gamma``
    where ``1 - gamma < y z < 1``, else 0; logistic
    ``sigma(a) (1 - sigma(a))`` at ``a = y z``; squared 1.  Hinge has none (0).
    """
    if kind == SQUARED:
        return 1.0
    a = y * z
    if kind == LOGISTIC:
        e = math.exp(-abs(a))  # sigma(a)(1 - sigma(a)) = e / (1 + e)^2, even in a, no cancellation
        return e / ((1.0 + e) * (1.0 + e))
    if kind == SQUARED_HINGE:
        return 2.0 if a < 1.0 else 0.0
    if kind == SMOOTHED_HINGE:
        return 1.0 / param if (a < 1.0 and a > 1.0 - param) else 0.0
    return 0.0


@njit(nogil=True, cache=True)
def _logistic_terms(y, z, s):
    """``(s phi(z), s phi'(z), (s phi)*(-alpha), s phi''(z))`` of the logistic loss ``phi(z) = log(1 + e^{-yz})``
    at the dual point ``alpha = -s phi'(z)``, from one ``exp`` and one ``log1p``.

    With ``a = y z``, ``e = exp(-|a|)``, ``l = log1p(e)`` and ``b = sigma(-a)`` (``e / (1 + e)`` for
    ``a >= 0``, else ``1 / (1 + e)``): ``phi = max(-a, 0) + l``, ``phi' = -y b``, ``phi'' = b (1 - b)``, and
    the conjugate ``b log b + (1 - b) log(1 - b)`` with ``log b = -(max(a, 0) + l)`` and
    ``log(1 - b) = -(max(-a, 0) + l)``, that is ``-l - b max(a, 0) - (1 - b) max(-a, 0)``: the values of
    :func:`~daskdca.losses.loss_value`, :func:`~daskdca.losses.loss_derivative`,
    :func:`~daskdca.losses.conjugate_value` and :func:`loss_curvature` for the logistic loss, without their
    six ``exp``/``log`` calls a row.
    """
    if s == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    a = y * z
    e = math.exp(-abs(a))
    log1p_e = math.log1p(e)
    if a >= 0.0:
        b = e / (1.0 + e)
        loss = log1p_e
        conj = -log1p_e - b * a
    else:
        b = 1.0 / (1.0 + e)
        loss = log1p_e - a
        conj = -log1p_e + (1.0 - b) * a
    return s * loss, -s * y * b, s * conj, s * (e / ((1.0 + e) * (1.0 + e)))


@njit(nogil=True, cache=True)
def _row_terms(loss_kind, loss_param, y, z, s):
    """``(s phi(z), s phi'(z), (s phi)*(-alpha), s phi''(z))`` of one row at its margin ``z``, with
    ``alpha = -s phi'(z)`` (:func:`_logistic_terms` for the logistic loss, one ``exp``)."""
    if loss_kind == LOGISTIC:
        return _logistic_terms(y, z, s)
    c = s * loss_derivative(loss_kind, loss_param, y, z)
    return (weighted_loss_value(loss_kind, loss_param, y, z, s), c,
            weighted_conjugate_value(loss_kind, loss_param, y, -c, s), s * loss_curvature(loss_kind, loss_param, y, z))


@njit(nogil=True, cache=True)
def newton_sums(indptr, indices, data, y, weight, w, row_start, row_end, loss_kind, loss_param, sums, out):
    """Newton's sums at ``w`` over rows ``[row_start, row_end)``, added to ``sums`` and ``out`` in place.

    ``sums[0] += sum s_i phi_i(z_i)``, ``sums[1] += sum (s_i phi_i)*(-alpha_i)``
    with ``alpha_i = -s_i phi_i'(z_i)`` (always dual-feasible);
    ``out[:d] += sum s_i phi_i'(z_i) x_i`` (so ``X^T alpha = -out[:d]``) and
    ``out[d:]`` (the row-major upper triangle, :func:`packed_size` entries)
    ``+= sum s_i phi_i''(z_i) x_i x_i^T``.  Returns the rows visited.
    """
    d = w.shape[0]
    for i in range(row_start, row_end):
        start = indptr[i]
        end = indptr[i + 1]
        z = 0.0
        for p in range(start, end):
            z += data[p] * w[indices[p]]
        loss, c, conj, h = _row_terms(loss_kind, loss_param, y[i], z, row_weight(weight, i))
        sums[0] += loss
        sums[1] += conj
        if c != 0.0:
            for p in range(start, end):
                out[indices[p]] += c * data[p]
        if h != 0.0:
            for p in range(start, end):
                a = indices[p]
                v = h * data[p]
                for q in range(p, end):
                    b = indices[q]
                    if a <= b:
                        out[d + _packed_index(a, b, d)] += v * data[q]
                    else:
                        out[d + _packed_index(b, a, d)] += v * data[q]
    return row_end - row_start


@njit(nogil=True, cache=True)
def gradient_curvature_sums(indptr, indices, data, y, weight, w, row_start, row_end, loss_kind, loss_param, grad,
                            curvature):
    """:func:`newton_sums` without the Hessian: ``grad += sum s_i phi_i'(z_i) x_i`` and
    ``curvature[i] = s_i phi_i''(z_i)`` (the diagonal of the Hessian ``X^T diag(curvature) X`` that
    Hessian-vector products read); returns ``sum s_i phi_i(z_i)``.  Rows ``[row_start, row_end)``."""
    loss_sum = 0.0
    for i in range(row_start, row_end):
        start = indptr[i]
        end = indptr[i + 1]
        z = 0.0
        for p in range(start, end):
            z += data[p] * w[indices[p]]
        loss, c, _, h = _row_terms(loss_kind, loss_param, y[i], z, row_weight(weight, i))
        loss_sum += loss
        curvature[i] = h
        if c != 0.0:
            for p in range(start, end):
                grad[indices[p]] += c * data[p]
    return loss_sum


@njit(nogil=True, cache=True)
def ladder_loss_sums(indptr, indices, data, y, weight, w, s, row_start, row_end, loss_kind, loss_param, steps, out):
    """``out[j] += sum s_i phi_i(m_i + steps[j] q_i)``, ``m_i = x_i.w``, ``q_i = x_i.s``, rows ``[row_start, row_end)``.

    One pass over the rows for every step of the ladder; returns the rows visited.
    """
    for i in range(row_start, row_end):
        m = 0.0
        q = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * w[indices[p]]
            q += data[p] * s[indices[p]]
        sw = row_weight(weight, i)
        for j in range(steps.shape[0]):
            out[j] += weighted_loss_value(loss_kind, loss_param, y[i], m + steps[j] * q, sw)
    return row_end - row_start


@njit(nogil=True, cache=True)
def dual_point(indptr, indices, data, y, weight, w, row_start, row_end, loss_kind, loss_param):
    """``alpha_i = -s_i phi_i'(x_i.w)`` for rows ``[row_start, row_end)``: the certificate's dual point."""
    out = np.empty(row_end - row_start)
    for i in range(row_start, row_end):
        z = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            z += data[p] * w[indices[p]]
        out[i - row_start] = -(row_weight(weight, i) * loss_derivative(loss_kind, loss_param, y[i], z))
    return out


@njit(nogil=True, cache=True)
def newton_system(packed, d, inv_n, lam):
    """The full ``d x d`` matrix ``H / n + lam I`` from the upper triangle of ``H`` (:func:`newton_sums`' layout)."""
    M = np.empty((d, d))
    for a in range(d):
        for b in range(a, d):
            v = packed[_packed_index(a, b, d)] * inv_n
            M[a, b] = v
            M[b, a] = v
        M[a, a] += lam
    return M


@njit(nogil=True, cache=True)
def cholesky_solve(M, rhs):
    """``x`` with ``M x = rhs`` for a symmetric positive definite ``M``, by Cholesky ``M = L L^T``.

    Written out (Golub & Van Loan, Matrix Computations, 4th ed., Algorithm
    4.2.1, row by row) rather than through LAPACK, so that the bits do not
    depend on the BLAS threads of the process that runs the combine.  Returns
    ``(x, ok)``; ``ok`` is False (and ``x`` zeros) when a pivot is not positive.
    """
    d = M.shape[0]
    L = np.zeros((d, d))
    x = np.zeros(d)
    for j in range(d):
        for i in range(j, d):
            acc = M[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if not acc > 0.0:
                    return x, False
                L[j, j] = math.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    # L u = rhs, then L^T x = u
    u = np.empty(d)
    for i in range(d):
        acc = rhs[i]
        for k in range(i):
            acc -= L[i, k] * u[k]
        u[i] = acc / L[i, i]
    for i in range(d - 1, -1, -1):
        acc = u[i]
        for k in range(i + 1, d):
            acc -= L[k, i] * x[k]
        x[i] = acc / L[i, i]
    return x, True
