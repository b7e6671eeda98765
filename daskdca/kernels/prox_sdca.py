"""Numba kernels of proximal SDCA for the elastic net.

Prox-SDCA of Shalev-Shwartz & Zhang, *Accelerated proximal stochastic dual
coordinate ascent for regularized loss minimization*, Mathematical
Programming 155, 2016 (arXiv:1309.2375) [SSZ16].

The problem

    min_w 1/n sum_i phi_i(x_i.w) + lam ( (1 - rho)/2 ||w||^2 + rho ||w||_1 )

is written as [SSZ16] writes it, ``1/n sum_i phi_i(x_i.w) + lam' g(w)`` with
``lam' = lam (1 - rho)`` and the 1-strongly convex

    g(w) = 1/2 ||w||^2 + c ||w||_1,   c = rho / (1 - rho),

whose conjugate is ``g*(v) = 1/2 sum_j (|v_j| - c)_+^2`` with gradient the
soft threshold ``grad g*(v)_j = sign(v_j) (|v_j| - c)_+``.  The dual keeps
``v = X^T alpha / (lam' n)`` and maps it to the primal ``w = grad g*(v)``
([SSZ16], the Prox-SDCA procedure: ``v^(t) = v^(t-1) + x_i delta / (lam' n)``,
``w^(t) = grad g*(v^(t))``).  Since ``g*`` is 1-smooth, a coordinate step
maximises the lower bound ([SSZ16], Option I)

    -phi_i*(-(alpha_i + delta)) - delta x_i.w - ||x_i||^2 delta^2 / (2 lam' n),

which is the L2 step of :mod:`daskdca.kernels.sdca` at the margin ``x_i.w``
of the thresholded ``w``: the closed forms of :mod:`daskdca.losses` serve
unchanged.  After the step only the coordinates of ``x_i`` change in ``v``,
and only those ``w_j`` are recomputed (direct maintenance, ``O(nnz(x_i))``
per step).  ``rho = 0`` never comes here; the mini-batch rounds share their loop with the L2
kernel (:func:`daskdca.kernels.sdca.minibatch_rounds`), where ``soft_threshold`` lives.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from daskdca.kernels.sdca import minibatch_rounds, soft_threshold
from daskdca.losses import row_weight, weighted_sweep_dual_update

__all__ = ["prox_local_sdca", "prox_minibatch_sdca_rounds", "soft_threshold", "soft_threshold_vector"]


@njit(nogil=True, cache=True)
def soft_threshold_vector(v, c):
    """:func:`soft_threshold` of every coordinate of ``v`` (a new array): the same bits as the kernel's."""
    out = np.empty(v.shape[0])
    for j in range(v.shape[0]):
        out[j] = soft_threshold(v[j], c)
    return out


@njit(nogil=True, cache=True)
def prox_local_sdca(indptr, indices, data, y, weight, sqnorm, alpha, u, w_u, delta_v, order,
                    loss_kind, loss_param, lam_n, sigma, threshold, track_delta_v):
    """Sequential proximal dual coordinate steps; updates ``alpha``, ``u`` and ``w_u`` in place.

    For each row ``i`` of ``order``: margin ``m = x_i.w_u``, curvature
    ``q = sigma ||x_i||^2 / lam_n``, ``alpha_i <-`` the sweep's step on the
    1-D problem of [SSZ16] Option I (:func:`daskdca.losses.weighted_sweep_dual_update`,
    the step of :func:`daskdca.kernels.sdca.local_sdca`: the exact maximiser
    for every loss but logistic, where it is the one-``exp`` ascent step),
    then for every
    ``j`` of the row ``u_j += sigma (delta / lam_n) x_ij`` and
    ``w_u[j] = soft_threshold(u_j, threshold)``.

    ``lam_n = lam' n`` with ``lam' = lam (1 - rho)`` and
    ``threshold = c = rho / (1 - rho)`` (module docstring).

    * ``sigma = 1``, ``u = v``, ``w_u = grad g*(v)``: serial Prox-SDCA
      ([SSZ16], Option I), keeping ``v = X^T alpha / lam_n`` and
      ``w = grad g*(v)``.
    * ``sigma = sigma' = K``, ``u = v + sigma' delta_v``: a CoCoA+ partition's
      steps on its local subproblem
      ``-1/n sum_{i in P_k} phi_i*(-alpha_i) - lam'/K g*(v + K delta_v)``
      (the adding bound, :class:`daskdca.methods.sdca.ProxSDCAPlan`).  With
      ``track_delta_v`` the kernel also accumulates
      ``delta_v += (delta / lam_n) x_i``, the update this partition sends.

    Returns the number of coordinate steps taken.
    """
    inv_lam_n = 1.0 / lam_n
    for t in range(order.shape[0]):
        i = order[t]
        start = indptr[i]
        end = indptr[i + 1]
        m = 0.0
        for p in range(start, end):
            m += data[p] * w_u[indices[p]]
        a_old = alpha[i]
        a_new = weighted_sweep_dual_update(loss_kind, loss_param, y[i], a_old, sigma * sqnorm[i] * inv_lam_n, m,
                                           row_weight(weight, i))
        if a_new != a_old:
            alpha[i] = a_new
            c = (a_new - a_old) * inv_lam_n
            cs = sigma * c
            for p in range(start, end):
                j = indices[p]
                u[j] += cs * data[p]
                w_u[j] = soft_threshold(u[j], threshold)
            if track_delta_v:
                for p in range(start, end):
                    delta_v[indices[p]] += c * data[p]
    return order.shape[0]


@njit(nogil=True, cache=True)
def prox_minibatch_sdca_rounds(indptr, indices, data, y, weight, q, alpha, v, w, batches, loss_kind, loss_param,
                               lam_n, threshold, acc):
    """Proximal mini-batch SDCA iterations on one partition, each a round of its own; updates ``alpha``, ``v``, ``w``.

    Iteration ``t`` (row ``t`` of ``batches``, no row repeated): every row
    ``i`` of the batch takes the L2 mini-batch step of
    :func:`daskdca.kernels.sdca.minibatch_sdca_rounds` at the margin
    ``x_i.w`` of the same start-of-iteration ``w = grad g*(v)`` with
    curvature ``q_i = v_i / lam_n`` (ESO weights, ``lam_n = lam' n``); the
    updates ``(delta_i / lam_n) x_i`` are summed in ``acc`` (a zero
    d-buffer, left zero on return) row after row, then for every touched
    coordinate ``v_j += acc_j`` and ``w_j = soft_threshold(v_j, threshold)``.

    The same bits as one :func:`daskdca.kernels.sdca.minibatch_sdca` call per
    iteration into a zero ``delta_v`` followed by ``v + delta_v`` and
    :func:`soft_threshold_vector` (coordinates with ``acc_j = 0`` keep their
    ``v_j`` and ``w_j``).  Returns the number of coordinate steps taken.
    """
    return minibatch_rounds(indptr, indices, data, y, weight, q, alpha, v, w, batches, loss_kind, loss_param, lam_n,
                            threshold, True, acc)
