"""Numba kernels of mini-batch Pegasos (Takáč et al. 2013 [TBRS13] Algorithm 1) on one in-memory CSR block.

The method solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``
by subgradient steps.  The kernels take the rows to visit as input (the
tests feed a NumPy reference the same rows).  No Dask, no method.
"""

from __future__ import annotations

from numba import njit

from daskdca.losses import conjugate_value, loss_derivative, loss_value

__all__ = ["certificate_sums", "subgradient_sum"]


@njit(nogil=True, cache=True)
def subgradient_sum(indptr, indices, data, y, w, rows, loss_kind, loss_param, out):
    """``out += sum_{i in rows} phi_i'(x_i.w) x_i`` ([TBRS13] eq. (8) times ``-b``); returns the rows used.

    For the hinge loss ``phi_i'(z) = -y_i`` when ``y_i z < 1`` (strictly) and 0
    otherwise: the indicator ``chi_i(w)`` of Takáč et al. 2013 [TBRS13] eq. (8).
    """
    for k in range(rows.shape[0]):
        i = rows[k]
        z = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            z += data[p] * w[indices[p]]
        g = loss_derivative(loss_kind, loss_param, y[i], z)
        if g != 0.0:
            for p in range(indptr[i], indptr[i + 1]):
                out[indices[p]] += g * data[p]
    return rows.shape[0]


@njit(nogil=True, cache=True)
def certificate_sums(indptr, indices, data, y, w, row_start, row_end, loss_kind, loss_param, inv_lam_n, g):
    """Gap sums of ``w`` at the dual point ``a_i = -phi_i'(x_i.w)`` for rows ``[row_start, row_end)``.

    Returns ``(sum phi_i(x_i.w), sum phi_i*(-a_i))`` and adds
    ``a_i x_i / (lam n)`` to ``g`` (its total is ``w(a)``, for the dual).
    """
    loss_sum = 0.0
    conj_sum = 0.0
    for i in range(row_start, row_end):
        z = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            z += data[p] * w[indices[p]]
        a = -loss_derivative(loss_kind, loss_param, y[i], z)
        loss_sum += loss_value(loss_kind, loss_param, y[i], z)
        conj_sum += conjugate_value(loss_kind, loss_param, y[i], a)
        if a != 0.0:
            c = a * inv_lam_n
            for p in range(indptr[i], indptr[i + 1]):
                g[indices[p]] += c * data[p]
    return loss_sum, conj_sum
