"""Numba kernels of dual-free SDCA (He & Takac, seed 001; Shalev-Shwartz 2015).

Every kernel works on one in-memory CSR block ``(indptr, indices, data)``
with labels ``y`` and squared row norms ``sqnorm``, on

    P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2,

keeping one pseudo-dual ``alpha_i`` per row with the invariant
``w = X^T alpha / (lam n)`` (seed 001 eq. (2)).  The step is driven by the
*dual residue* ``kappa_i = alpha_i + phi_i'(x_i.w)`` (seed 001 Def. 1):

    alpha_i <- alpha_i - (theta / p_i) kappa_i,
    w       <- w - (theta / p_i) kappa_i x_i / (lam n)        (Alg. 1 lines 8-9).

The kernels take the *local view* ``u = w + sigma' delta_w`` and accumulate
``delta_w`` (the update a partition sends), as the CoCoA+ local solver does
(:func:`daskdca.kernels.sdca.local_sdca`); with one partition ``sigma' = 1``
and ``u = w`` they are the serial algorithms.

Notation for the adaptive probabilities (seed 001 Lemma 1, eq. (6), case 1:
``beta_i = 1/L~``, ``gamma = lam n``; spec ``dual-free-sdca.md`` §2.3):
``c_i = sqrt(curv * ||x_i||^2 + base)`` with ``curv = sigma' lam n`` and
``base = (lam n)^2 / L~``; ``p_i* = c_i |kappa_i| / S``, ``S = sum_j c_j |kappa_j|``
and ``Theta(kappa, p*) = base * sum_j kappa_j^2 / S^2``.

No Dask here; the row sequences come from the counter-based streams of
:mod:`daskdca.kernels.sampling`, so a NumPy reference can replay them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.kernels.sampling import _GOLDEN, _S11, _TWO_M53, _mix, stream_seed
from daskdca.losses import conjugate_value, loss_derivative, loss_value

__all__ = ["adaptive_steps", "dual_free_steps", "residue_sums", "sumtree_build", "sumtree_draw",
           "sumtree_update", "weighted_order"]


@njit(nogil=True, cache=True)
def _next_uniform(state):
    """Advance ``state`` (a 1-element uint64 array); a float in [0, 1) on a 2**-53 grid."""
    state[0] += _GOLDEN
    return (_mix(state[0]) >> _S11) * _TWO_M53


@njit(nogil=True, cache=True)
def _tree_size(n):
    size = 1
    while size < n:
        size *= 2
    return size


@njit(nogil=True, cache=True)
def sumtree_build(weights):
    """A sum-tree (array heap) over ``weights``: leaf ``i`` at ``size + i``, node ``k`` = sum of its children.

    ``O(n)`` build; the root ``tree[1]`` is the total weight (seed 001 §5.1,
    "binary search tree"; spec §2.5).
    """
    n = weights.shape[0]
    size = _tree_size(max(n, 1))
    tree = np.zeros(2 * size)
    for i in range(n):
        tree[size + i] = weights[i]
    for k in range(size - 1, 0, -1):
        tree[k] = tree[2 * k] + tree[2 * k + 1]
    return tree


@njit(nogil=True, cache=True)
def sumtree_update(tree, i, weight):
    """Set leaf ``i`` to ``weight`` and repair its ancestors (``O(log n)``)."""
    size = tree.shape[0] // 2
    k = size + i
    tree[k] = weight
    k //= 2
    while k >= 1:
        tree[k] = tree[2 * k] + tree[2 * k + 1]
        k //= 2


@njit(nogil=True, cache=True)
def sumtree_draw(tree, u):
    """The leaf ``i`` with ``sum_{j<i} w_j <= u * total < sum_{j<=i} w_j`` (``O(log n)``).

    Never returns a zero-weight leaf while the total is positive: a branch of
    zero weight is never entered, whatever the rounding of ``u * total``.
    """
    size = tree.shape[0] // 2
    t = u * tree[1]
    k = 1
    while k < size:
        left = tree[2 * k]
        if (t < left or tree[2 * k + 1] <= 0.0) and left > 0.0:
            k = 2 * k
        else:
            t -= left
            k = 2 * k + 1
    return k - size


@njit(nogil=True, cache=True)
def weighted_order(random_state, round_index, stream, weights, n_steps, row_offset):
    """``n_steps`` rows drawn i.i.d. with ``P(i) = weights_i / sum(weights)`` from one stream.

    The fixed-probability sampling of dfSDCA with importance sampling (seed
    001 §3; spec §2.2): one sum-tree build, then ``O(log n)`` per draw.
    """
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, stream)
    tree = sumtree_build(weights)
    out = np.empty(n_steps, dtype=np.int64)
    for t in range(n_steps):
        out[t] = sumtree_draw(tree, _next_uniform(state)) + row_offset
    return out


@njit(nogil=True, cache=True)
def residue_sums(indptr, indices, data, y, sqnorm, alpha, w, row_start, row_end, loss_kind, loss_param,
                 curv, base, inv_lam_n, g_out):
    """One pass over rows ``[row_start, row_end)`` at ``w``: gap sums and residue sums.

    With ``z_i = x_i.w`` and the dual point ``a_i = -phi_i'(z_i)`` (always
    feasible; at the optimum ``alpha* = a``, seed 001 §2), returns
    ``(sum phi_i(z_i), sum phi_i*(-a_i), S, sum kappa_i^2)`` where
    ``kappa_i = alpha_i + phi_i'(z_i)`` and ``S = sum c_i |kappa_i|``; adds
    ``a_i x_i / (lam n)`` to ``g_out`` (so the partitions' ``g`` add up to
    ``w(a) = X^T a / (lam n)`` for the dual objective).
    """
    loss_sum = 0.0
    conj_sum = 0.0
    s_sum = 0.0
    k2_sum = 0.0
    for i in range(row_start, row_end):
        z = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            z += data[p] * w[indices[p]]
        d = loss_derivative(loss_kind, loss_param, y[i], z)
        loss_sum += loss_value(loss_kind, loss_param, y[i], z)
        conj_sum += conjugate_value(loss_kind, loss_param, y[i], -d)
        kappa = alpha[i] + d
        s_sum += math.sqrt(curv * sqnorm[i] + base) * abs(kappa)
        k2_sum += kappa * kappa
        c = -d * inv_lam_n
        if c != 0.0:
            for p in range(indptr[i], indptr[i + 1]):
                g_out[indices[p]] += c * data[p]
    return loss_sum, conj_sum, s_sum, k2_sum


@njit(nogil=True, cache=True)
def dual_point(indptr, indices, data, y, w, row_start, row_end, loss_kind, loss_param):
    """``-phi_i'(x_i.w)`` for rows ``[row_start, row_end)``: the certificate's dual point."""
    out = np.empty(row_end - row_start)
    for i in range(row_start, row_end):
        z = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            z += data[p] * w[indices[p]]
        out[i - row_start] = -loss_derivative(loss_kind, loss_param, y[i], z)
    return out


@njit(nogil=True, cache=True)
def dual_free_steps(indptr, indices, data, y, alpha, u, delta_w, order, step, loss_kind, loss_param, sigma,
                    inv_lam_n):
    """Dual-free steps with fixed probabilities on the rows of ``order`` (seed 001 Alg. 1 lines 8-9).

    ``step[i] = theta / p_i`` is the step factor of row ``i`` (uniform:
    ``theta n``).  For each drawn row: ``kappa = alpha_i + phi_i'(x_i.u)``,
    ``alpha_i -= step_i kappa``, ``delta_w += -step_i kappa x_i / (lam n)``
    and ``u += sigma' (same)``.  Updates ``alpha``, ``u``, ``delta_w`` in
    place; returns the number of steps.
    """
    for t in range(order.shape[0]):
        i = order[t]
        start = indptr[i]
        end = indptr[i + 1]
        m = 0.0
        for p in range(start, end):
            m += data[p] * u[indices[p]]
        kappa = alpha[i] + loss_derivative(loss_kind, loss_param, y[i], m)
        if kappa != 0.0:
            da = -step[i] * kappa
            alpha[i] += da
            c = da * inv_lam_n
            cs = sigma * c
            for p in range(start, end):
                delta_w[indices[p]] += c * data[p]
                u[indices[p]] += cs * data[p]
    return order.shape[0]


@njit(nogil=True, cache=True)
def adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, delta_w, row_start, row_end, n_steps,
                   random_state, round_index, stream, share, k2_rest, d_rest, curv, base, loss_kind, loss_param,
                   sigma, inv_lam_n, order_out, theta_out):
    """Adaptive dual-free SDCA, seed 001 Algorithm 1, on rows ``[row_start, row_end)``.

    Every step recomputes all residues of the rows at ``u`` (Alg. 1 line 5),
    samples ``i`` with ``p_i = share * c_i |kappa_i| / S_loc`` from a
    sum-tree (line 7; ``share`` is this block's part of the round's steps)
    and takes the step ``theta_t = Theta(kappa, p)`` of Theorem 1 (spec §2.3,
    corrected denominator, erratum 1):

        Theta = base (sum_loc kappa^2 + k2_rest) / (S_loc^2 / share + d_rest),

    where ``k2_rest`` and ``d_rest = sum_{other blocks} S_b^2 / share_b`` hold
    the rest of the data at the round's start.  With one block
    (``share = 1``, ``k2_rest = d_rest = 0``) this is exactly
    ``Theta(kappa, p*) = base sum kappa^2 / S^2`` of Lemma 1.  Stops early
    when every residue is zero (exact optimality, pitfall P13).

    The rows drawn and the steps taken go to ``order_out[t]`` and
    ``theta_out[t]`` (for the NumPy reference).  Returns the number of steps.
    """
    n_rows = row_end - row_start
    kappa = np.empty(n_rows)
    weights = np.empty(n_rows)
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, stream)
    for t in range(n_steps):
        s_loc = 0.0
        k2_loc = 0.0
        for j in range(n_rows):
            i = row_start + j
            m = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                m += data[p] * u[indices[p]]
            kap = alpha[i] + loss_derivative(loss_kind, loss_param, y[i], m)
            kappa[j] = kap
            wj = math.sqrt(curv * sqnorm[i] + base) * abs(kap)
            weights[j] = wj
            s_loc += wj
            k2_loc += kap * kap
        if s_loc == 0.0:
            return t
        tree = sumtree_build(weights)
        j = sumtree_draw(tree, _next_uniform(state))
        i = row_start + j
        theta = base * (k2_loc + k2_rest) / (s_loc * s_loc / share + d_rest)
        p_i = share * weights[j] / s_loc
        da = -theta * kappa[j] / p_i
        alpha[i] += da
        c = da * inv_lam_n
        cs = sigma * c
        for p in range(indptr[i], indptr[i + 1]):
            delta_w[indices[p]] += c * data[p]
            u[indices[p]] += cs * data[p]
        order_out[t] = i
        theta_out[t] = theta
    return n_steps
