"""Numba kernels of the Crammer-Singer multi-class SVM by dual coordinate ascent (LIBLINEAR's ``-s 4``).

The problem, for ``K`` classes, ``W`` of shape ``(K, d)`` with rows ``w_k``
and row weights ``s_i`` (1 when unweighted)::

    P(W)     = 1/n sum_i s_i max_k (1[k != y_i] + w_k.x_i - w_{y_i}.x_i) + lam/2 ||W||_F^2
    D(alpha) = 1/n sum_i alpha_{y_i i} - lam/2 ||W(alpha)||_F^2,
    w_k(alpha) = sum_i alpha_{k i} x_i / (lam n)   (W(alpha) = alpha X / (lam n), alpha of shape (K, n)),

over ``alpha`` with, for every row ``i``, ``sum_k alpha_{k i} = 0``,
``alpha_{y_i i} <= s_i`` and ``alpha_{k i} <= 0`` for ``k != y_i`` (so
``alpha_{y_i i}`` lies in ``[0, s_i]``).  This is LIBLINEAR's dual
(Fan et al. 2008 [FCH+08], Appendix; Keerthi, Sundararajan, Chang, Hsieh & Lin,
"A sequential dual method for large scale multi-class linear SVMs", KDD 2008
[KSC+08]): LIBLINEAR minimises ``C sum_i s_i max_k (...) + 1/2 ||W||_F^2``,
which is ``C n`` times ``P`` at ``C = 1/(lam n)``, and its duals are
``C alpha``.  The conjugate of ``l_y(z) = max_k (1[k != y] + z_k - z_y)`` is
``l_y*(v) = -(1 - (v + e_y)_y)`` on the shifted simplex ``v + e_y in Delta_K``
(docs/references.md, note N12), so ``s_i l_{y_i}*(-alpha_i / s_i) = -alpha_{y_i i}``:
the dual's loss term is linear, and ``beta_i = e_{y_i} - alpha_{:, i} / s_i`` is a
distribution over the classes (at the optimum, on the classes that attain
the row's max).

The coordinate step of row ``i`` maximises the dual over its ``K`` duals
with the others fixed ([KSC+08]'s sequential dual method; Crammer & Singer,
"On the algorithmic implementation of multiclass kernel-based vector
machines", JMLR 2, 2001 [CS01], for its per-example subproblem): with margins ``m = U x_i`` (``U = W``, or CoCoA+'s
``W + sigma' delta_W``), ``q = sigma' ||x_i||^2 / (lam n)`` and
``G_k = m_k + 1[k != y_i]``, the new duals solve

    min_a  q/2 ||a||^2 + B.a   s.t.  a_k <= C_k,  sum_k a_k = 0,
    B_k = G_k - q alpha_{k i},  C_{y_i} = s_i,  C_k = 0 (k != y_i),

whose solution is ``a_k = min(C_k, (b - B_k) / q)`` for the one ``b`` with
``sum_k a_k = 0``; :func:`crammer_singer_step` finds ``b`` exactly by the
sort of ``D_k = B_k + q C_k`` ([KSC+08]'s exact subproblem solver, which
LIBLINEAR's ``Solver_MCSVM_CS::solve_sub_problem`` implements), so the dual
never falls.

Passing the rows to visit in (``order``) lets ``tests/reference_crammer_singer.py``
run a NumPy reference on the same sequence.  ``lam_n = lam * n`` with ``n``
the rows of the whole problem (docs/references.md, note N0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.losses import row_weight

__all__ = ["crammer_singer_loss_row", "crammer_singer_objective_sums", "crammer_singer_step",
           "local_crammer_singer_sdca"]

# A row's duals count as feasible in crammer_singer_objective_sums when they break the constraints by at most
# this fraction of the row's weight; the steps keep sum_k alpha_k = 0 and the bounds to rounding (a few ulps).
_FEASIBLE_TOL = 1e-12

# Up to this many classes the step sorts by insertion (about 20x faster than numba's sort for 10 classes,
# which took half the step's time on digits); beyond it, quadratic, it calls ndarray.sort.
_INSERTION_SORT_MAX = 32


@njit(nogil=True, cache=True)
def crammer_singer_step(m, alpha0, y, s, q, alpha, work):
    """Row ``i``'s new duals, the exact maximiser of the dual over them (module docstring), in place.

    Parameters
    ----------
    m : ndarray of shape (K,)
        The row's margins ``U x_i``.
    alpha0 : ndarray of shape (K,)
        Its current duals (feasible).
    y : int
        Its class, ``0 .. K-1``.
    s : float
        Its weight (``> 0``).
    q : float
        ``sigma' ||x_i||^2 / lam_n`` (``>= 0``).
    alpha, work : ndarray of shape (K,)
        Output, and a work array.

    Notes
    -----
    With ``D_k = B_k + q C_k`` sorted in decreasing order ``D_(0) >= D_(1) >= ...``,
    ``b = (sum_{j<r} D_(j) - q s) / r`` for the first ``r`` with
    ``b >= D_(r)`` (or ``r = K``): the ``r`` largest ``D`` are the duals
    below their bound ([KSC+08]; LIBLINEAR's ``solve_sub_problem`` runs the
    same loop).  The duals of the other classes are
    ``min(0, (b - B_k) / q)`` and ``alpha_y = -sum_{k != y} alpha_k``, so the
    equality holds to the rounding of one sum; where rounding takes that
    past ``s`` the others are scaled by ``s / -sum`` (a few ulps).  ``q = 0``
    (a zero row: the dual is linear in the row's duals) gives the vertex
    ``alpha = s (e_y - e_k)`` of the largest ``G_k`` (the first on ties;
    ``alpha = 0`` when that is ``y``).
    """
    K = m.shape[0]
    if not q > 0.0:
        top = 0
        best = -math.inf
        for k in range(K):
            g = m[k] + (0.0 if k == y else 1.0)
            if g > best:
                best = g
                top = k
        for k in range(K):
            alpha[k] = 0.0
        if top != y:
            alpha[y] = s
            alpha[top] = -s
        return
    qs = q * s
    for k in range(K):  # work: D_k in increasing order, so D_(j) is work[K - 1 - j]
        d = m[k] + (0.0 if k == y else 1.0) - q * alpha0[k]  # B_k
        if k == y:
            d += qs  # D_k
        if K > _INSERTION_SORT_MAX:
            work[k] = d
            continue
        j = k
        while j > 0 and work[j - 1] > d:
            work[j] = work[j - 1]
            j -= 1
        work[j] = d
    if K > _INSERTION_SORT_MAX:
        work.sort()
    b = work[K - 1] - qs
    r = 1
    while r < K and b < r * work[K - 1 - r]:
        b += work[K - 1 - r]
        r += 1
    b /= r
    total = 0.0
    for k in range(K):
        if k != y:
            a = (b - (m[k] + 1.0 - q * alpha0[k])) / q
            a = min(a, 0.0)
            alpha[k] = a
            total += a
    if -total <= s:
        alpha[y] = 0.0 - total  # +0.0, not -0.0, when every other dual is 0
    else:
        scale = s / -total
        for k in range(K):
            if k != y:
                alpha[k] *= scale
        alpha[y] = s


@njit(nogil=True, cache=True)
def _row_margins(indptr, indices, data, i, u, m):
    """``m_k = u_k . x_i`` for every class ``k`` (each sum in the row's order; the row read once, which
    measured 1.5x faster than a pass per class on digits)."""
    K = m.shape[0]
    for k in range(K):
        m[k] = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        v = data[p]
        j = indices[p]
        for k in range(K):
            m[k] += v * u[k, j]


@njit(nogil=True, cache=True)
def crammer_singer_loss_row(m, y):
    """``max_k (1[k != y] + m_k) - m_y`` (``>= 0``)."""
    top = m[y]
    for k in range(m.shape[0]):
        if k != y:
            top = max(top, m[k] + 1.0)
    return top - m[y]


@njit(nogil=True, cache=True)
def local_crammer_singer_sdca(indptr, indices, data, cls, weight, sqnorm, alpha, u, delta_w, order, lam_n, sigma,
                              track_delta_w):
    """Sequential dual coordinate steps of the Crammer-Singer loss; updates ``alpha`` and ``u`` in place.

    For each row ``i`` of ``order`` (row weight ``s = weight[i]``, 1 when
    ``weight`` is empty; rows of weight 0 are skipped): margins
    ``m = u x_i`` (``u`` of shape ``(K, d)``), ``q = sigma ||x_i||^2 / lam_n``,
    ``alpha_{:, i} <-`` :func:`crammer_singer_step` ``(m, alpha_{:, i}, y_i, s, q)``
    and, with ``delta = alpha_new - alpha_old``, ``u_k += sigma (delta_k / lam_n) x_i``.

    * ``sigma = 1`` and ``u = W``: serial dual coordinate ascent, one row's
      ``K`` duals at a time ([KSC+08]'s sequential dual method, LIBLINEAR's
      ``Solver_MCSVM_CS`` without its shrinking), keeping ``W = alpha X / lam_n``.
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
    alpha0 = np.empty(K)
    alpha_new = np.empty(K)
    work = np.empty(K)
    for step in range(order.shape[0]):
        i = order[step]
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        _row_margins(indptr, indices, data, i, u, m)
        for k in range(K):
            alpha0[k] = alpha[k, i]
        crammer_singer_step(m, alpha0, cls[i], s, sigma * sqnorm[i] * inv_lam_n, alpha_new, work)
        start = indptr[i]
        end = indptr[i + 1]
        for k in range(K):
            a_new = alpha_new[k]
            a_old = alpha0[k]
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
def crammer_singer_objective_sums(indptr, indices, data, cls, weight, alpha, w, row_start, row_end):
    """One pass over rows ``[row_start, row_end)`` for the duality gap.

    Returns ``(sum_i s_i l_{y_i}(W x_i), -sum_i alpha_{y_i i})``: the loss
    sum of ``P(W)`` and the conjugate sum ``sum_i s_i l_{y_i}*(-alpha_i / s_i)``
    of ``D(alpha)`` (module docstring).  The conjugate sum is ``inf`` when a
    row's duals leave the dual domain (``sum_k alpha_k = 0``,
    ``alpha_k <= 0`` for ``k != y``, ``alpha_y <= s``) by more than
    ``1e-12 s``.  Rows of weight 0 add nothing.
    """
    K = alpha.shape[0]
    m = np.empty(K)
    loss_sum = 0.0
    conj_sum = 0.0
    for i in range(row_start, row_end):
        s = row_weight(weight, i)
        if not s > 0.0:
            continue
        y = cls[i]
        _row_margins(indptr, indices, data, i, w, m)
        loss_sum += s * crammer_singer_loss_row(m, y)
        tol = _FEASIBLE_TOL * s
        total = 0.0
        feasible = alpha[y, i] <= s + tol
        for k in range(K):
            total += alpha[k, i]
            if k != y and not alpha[k, i] <= tol:
                feasible = False
        if not (feasible and abs(total) <= tol):
            conj_sum = math.inf
        conj_sum -= alpha[y, i]
    return loss_sum, conj_sum
