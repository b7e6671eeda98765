"""Numba kernels of dual-free SDCA (He & Takáč 2015 [HT15]; Shalev-Shwartz 2015 [SS15]).

Every kernel works on one in-memory CSR block ``(indptr, indices, data)``
with labels ``y`` and squared row norms ``sqnorm``, on

    P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2,

keeping one pseudo-dual ``alpha_i`` per row with the invariant
``w = X^T alpha / (lam n)`` (He & Takáč 2015 [HT15] eq. (2)).  The step is driven by the
*dual residue* ``kappa_i = alpha_i + phi_i'(x_i.w)`` (He & Takáč 2015 [HT15] Def. 1):

    alpha_i <- alpha_i - (theta / p_i) kappa_i,
    w       <- w - (theta / p_i) kappa_i x_i / (lam n)        (Alg. 1 lines 8-9).

The kernels take the *local view* ``u = w + sigma' delta_w`` and accumulate
``delta_w`` (the update a partition sends), as the CoCoA+ local solver does
(:func:`daskdca.kernels.sdca.local_sdca`); with one partition ``sigma' = 1``
and ``u = w`` they are the serial algorithms.

Notation for the adaptive probabilities (He & Takáč 2015 [HT15] Lemma 1, eq. (6), case 1:
``beta_i = 1/L~``, ``gamma = lam n``; docs/references.md, note N6):
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
from daskdca.losses import LOGISTIC, conjugate_value, loss_derivative, loss_value

__all__ = ["adaptive_steps", "refreshed_adaptive_steps", "alg3_sample", "alg3_stages", "argsort_desc", "block_columns", "dual_free_steps",
           "minibatch_adaptive_steps", "plus_steps", "residue", "residue_sums", "sumtree_build", "sumtree_draw",
           "sumtree_update", "water_fill", "weighted_order"]


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

    ``O(n)`` build; the root ``tree[1]`` is the total weight (He & Takáč 2015 [HT15] §5.1,
    "binary search tree"; He & Takáč 2015 [HT15] §5.1).
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
def _sumtree_repair(tree, i):
    """Recompute the ancestors of leaf ``i`` from their children (the leaf was written in place)."""
    k = (tree.shape[0] // 2 + i) // 2
    while k >= 1:
        tree[k] = tree[2 * k] + tree[2 * k + 1]
        k //= 2


@njit(nogil=True, cache=True)
def _sumtree_rebuild(tree):
    """Recompute every inner node from the leaves (``O(size)``).

    A node is always its children's sum, so after any mix of rebuilds and
    repairs the tree holds the same bits as :func:`sumtree_build` of its leaves.
    """
    for k in range(tree.shape[0] // 2 - 1, 0, -1):
        tree[k] = tree[2 * k] + tree[2 * k + 1]


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
    [HT15] §3; docs/references.md, note N6): one sum-tree build, then ``O(log n)`` per draw.
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
    feasible; at the optimum ``alpha* = a``, He & Takáč 2015 [HT15] §2), returns
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
    """Dual-free steps with fixed probabilities on the rows of ``order`` (He & Takáč 2015 [HT15] Alg. 1 lines 8-9).

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


# --- exact incremental residues (shared by Algorithms 1 and 4) -------------------------------------------

@njit(nogil=True, cache=True)
def residue(kind, param, y, z, alpha):
    """``alpha + phi'(z)``, bit for bit ``alpha + loss_derivative(kind, param, y, z)``.

    The logistic case is written without the sign branch of
    :func:`daskdca.losses._sigmoid` (``e = exp(-|m|)``, numerator ``1`` or
    ``e``): the same operations on the same operands, so the same bits, but
    no mispredicted branch in the loops that evaluate every residue.
    """
    if kind == LOGISTIC:
        m = -(y * z)
        e = math.exp(-abs(m))
        num = 1.0 if m >= 0.0 else e
        return alpha + -y * (num / (1.0 + e))
    return alpha + loss_derivative(kind, param, y, z)


@njit(nogil=True, cache=True)
def block_columns(indptr, indices, data, row_start, row_end, d):
    """The rows ``[row_start, row_end)`` by column (CSC): ``(colptr, local row, value, unit)``, rows ascending.

    ``unit`` says every stored value is 1.0 (binary features): then
    ``1.0 * v == v`` exactly and the margin updates skip the values.

    Built once per kernel call in ``O(nnz + d)``: a step on row ``i`` moves
    the margin ``z_j = x_j.u`` only of the rows ``j`` in the columns of
    ``x_i`` (He & Takáč 2015 [HT15] §4 remark, He & Takáč 2015 [HT15] §5.1 "sparse shortcut").
    """
    colptr = np.zeros(d + 1, dtype=np.int64)
    for p in range(indptr[row_start], indptr[row_end]):
        colptr[indices[p] + 1] += 1
    for f in range(d):
        colptr[f + 1] += colptr[f]
    nnz = indptr[row_end] - indptr[row_start]
    rows = np.empty(nnz, dtype=np.int32)
    vals = np.empty(nnz)
    fill = colptr[:d].copy()
    for j in range(row_end - row_start):
        i = row_start + j
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            k = fill[f]
            rows[k] = j
            vals[k] = data[p]
            fill[f] = k + 1
    unit = True
    for k in range(nnz):
        if vals[k] != 1.0:
            unit = False
            break
    return colptr, rows, vals, unit


@njit(nogil=True, cache=True)
def argsort_desc(v):
    """``np.argsort(-v, kind="mergesort")`` (descending, ties by index), by a stable LSD radix sort.

    For ``v >= 0`` the bit patterns order like the values, so sorting the
    complemented patterns ascending with a stable sort gives exactly the
    stable merge sort's permutation in ``O(n)`` (eleven-bit digits; a digit
    all keys share is skipped).  Negative, NaN or short input falls back to
    the merge sort.
    """
    n = v.shape[0]
    if n < 512:
        return np.argsort(-v, kind="mergesort")
    tmp = np.empty(n)
    for i in range(n):
        x = v[i]
        if not (x >= 0.0):
            return np.argsort(-v, kind="mergesort")
        tmp[i] = x if x != 0.0 else 0.0  # -0.0 -> +0.0: equal values, equal keys
    keys = ~tmp.view(np.uint64)
    n_pass = 6
    counts = np.zeros((n_pass, 2048), dtype=np.int64)
    for i in range(n):
        k = keys[i]
        for d in range(n_pass):
            counts[d, np.int64((k >> np.uint64(11 * d)) & np.uint64(2047))] += 1
    idx = np.arange(n)
    out = np.empty(n, dtype=np.int64)
    kbuf = np.empty(n, dtype=np.uint64)
    for d in range(n_pass):
        shift = np.uint64(11 * d)
        single = False
        for c in range(2048):
            if counts[d, c] == n:
                single = True
                break
            if counts[d, c] != 0:
                break
        if single:
            continue
        pos = np.empty(2048, dtype=np.int64)
        acc = 0
        for c in range(2048):
            pos[c] = acc
            acc += counts[d, c]
        for i in range(n):
            k = keys[i]
            c = np.int64((k >> shift) & np.uint64(2047))
            o = pos[c]
            out[o] = idx[i]
            kbuf[o] = k
            pos[c] = o + 1
        idx, out = out, idx
        keys, kbuf = kbuf, keys
    return idx


@njit(nogil=True, cache=True)
def _refresh(indptr, indices, data, y, alpha, u, row_start, n_rows, nnz_block, colptr, crow, cval, unit, z, kappa, c,
             wts, k2s, du, feats, n_feats, picked, n_picked, rstamp, stamp, touched, loss_kind, loss_param,
             wtree, ktree):
    """Bring ``z``, ``kappa``, ``wts = c |kappa|``, ``k2s = kappa^2`` up to date after steps on ``picked``.

    ``du`` holds what the steps added to ``u`` on the features ``feats[:n_feats]``
    (cleared here).  Only rows sharing a feature with a stepped row (and the
    stepped rows, whose ``alpha`` moved) have a new residue; every other
    residue is unchanged, so this is Algorithm 1 line 5 / Algorithm 4 line 4
    (every ``kappa_i`` at the current ``u``), done in
    ``O(sum_{f in feats} nnz(column f))`` margin updates instead of a pass:

    * if that is more than the block's ``nnz`` (large batches, dense
      columns), every margin is recomputed from ``u`` (a pass);
    * else the margins move by ``x_jf du_f`` along those columns, and if
      that reaches a quarter of the rows every residue is re-evaluated with
      a rebuild of the trees, else only the rows touched, each with an
      ``O(log n)`` repair.

    ``wtree``/``ktree`` are sum-trees whose leaves are ``wts``/``k2s``
    (or empty arrays: no trees).  A tree node is always its children's sum,
    so the choice between re-evaluating every residue and only the touched
    ones changes no bit of the result; a pass recomputes the margins from
    ``u`` (bits of a fresh dot product) where the updates carry them along
    (equal in exact arithmetic, within rounding of each other).
    """
    est = 0
    for k in range(n_feats):
        f = feats[k]
        est += colptr[f + 1] - colptr[f]
    dense = True
    m = 0
    if est > nnz_block:
        for k in range(n_feats):
            du[feats[k]] = 0.0
        for j in range(n_rows):
            i = row_start + j
            zz = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                zz += data[p] * u[indices[p]]
            z[j] = zz
    else:
        dense = 4 * est >= n_rows
        for k in range(n_feats):
            f = feats[k]
            dv = du[f]
            du[f] = 0.0
            if dense and unit:
                for q in range(colptr[f], colptr[f + 1]):
                    z[crow[q]] += dv
            elif dense:
                for q in range(colptr[f], colptr[f + 1]):
                    z[crow[q]] += cval[q] * dv
            else:
                for q in range(colptr[f], colptr[f + 1]):
                    r = crow[q]
                    z[r] += cval[q] * dv
                    if rstamp[r] != stamp:
                        rstamp[r] = stamp
                        touched[m] = r
                        m += 1
        if not dense:
            for k in range(n_picked):
                r = picked[k]
                if rstamp[r] != stamp:
                    rstamp[r] = stamp
                    touched[m] = r
                    m += 1
    trees = wtree.shape[0] > 0
    if dense:
        for j in range(n_rows):
            i = row_start + j
            kap = residue(loss_kind, loss_param, y[i], z[j], alpha[i])
            kappa[j] = kap
            wts[j] = c[j] * abs(kap)
            k2s[j] = kap * kap
        if trees:
            _sumtree_rebuild(wtree)
            _sumtree_rebuild(ktree)
    else:
        for k in range(m):
            j = touched[k]
            i = row_start + j
            kap = residue(loss_kind, loss_param, y[i], z[j], alpha[i])
            kappa[j] = kap
            wts[j] = c[j] * abs(kap)
            k2s[j] = kap * kap
            if trees:
                _sumtree_repair(wtree, j)
                _sumtree_repair(ktree, j)


@njit(nogil=True, cache=True)
def _residue_state(indptr, indices, data, y, sqnorm, alpha, u, row_start, row_end, curv, base, loss_kind,
                   loss_param, size):
    """Margins, ``c_i``, residues, ``c |kappa|`` and ``kappa^2`` of the rows at ``u`` (one pass).

    With ``size > 0`` the last two live in the leaves of sum-trees of that size.
    """
    n_rows = row_end - row_start
    z = np.empty(n_rows)
    c = np.empty(n_rows)
    kappa = np.empty(n_rows)
    wtree = np.zeros(2 * size)
    ktree = np.zeros(2 * size)
    if size > 0:
        wts = wtree[size:size + n_rows]
        k2s = ktree[size:size + n_rows]
    else:
        wts = np.empty(n_rows)
        k2s = np.empty(n_rows)
    for j in range(n_rows):
        i = row_start + j
        zz = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            zz += data[p] * u[indices[p]]
        z[j] = zz
        c[j] = math.sqrt(curv * sqnorm[i] + base)
        kap = residue(loss_kind, loss_param, y[i], zz, alpha[i])
        kappa[j] = kap
        wts[j] = c[j] * abs(kap)
        k2s[j] = kap * kap
    if size > 0:
        _sumtree_rebuild(wtree)
        _sumtree_rebuild(ktree)
    return z, c, kappa, wts, k2s, wtree, ktree


@njit(nogil=True, cache=True)
def adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, delta_w, row_start, row_end, n_steps,
                   random_state, round_index, stream, share, k2_rest, d_rest, curv, base, loss_kind, loss_param,
                   sigma, inv_lam_n, order_out, theta_out):
    """Adaptive dual-free SDCA, He & Takáč 2015 [HT15] Algorithm 1, on rows ``[row_start, row_end)``.

    Every step uses every residue of the rows at ``u`` (Alg. 1 line 5),
    samples ``i`` with ``p_i = share * c_i |kappa_i| / S_loc`` from a
    sum-tree (line 7; ``share`` is this block's part of the round's steps)
    and takes the step ``theta_t = Theta(kappa, p)`` of Theorem 1 (docs/references.md, note N6,
    corrected denominator, erratum 1):

        Theta = base (sum_loc kappa^2 + k2_rest) / (S_loc^2 / share + d_rest),

    where ``k2_rest`` and ``d_rest = sum_{other blocks} S_b^2 / share_b`` hold
    the rest of the data at the round's start.  With one block
    (``share = 1``, ``k2_rest = d_rest = 0``) this is exactly
    ``Theta(kappa, p*) = base sum kappa^2 / S^2`` of Lemma 1.  Stops early
    when every residue is zero (exact optimality, pitfall P13).

    The residues are exact at every step but kept, not recomputed: one pass
    at the start, then after a step on row ``i`` the margins of the rows that
    share a feature with ``x_i`` move along the columns of ``x_i`` and only
    their residues are re-evaluated (:func:`_refresh`); ``S_loc`` and
    ``sum kappa^2`` are the roots of two sum-trees over ``c_j |kappa_j|`` and
    ``kappa_j^2``.  A step costs ``O(sum_{f in x_i} nnz(column f))`` plus the
    residues that changed, instead of a pass over the block.  Where every row
    shares a feature with every other (a9a), every residue still changes at
    every step: Theta's ``S`` and ``sum kappa^2`` then need all of them, so
    Algorithm 1 stays ``O(n)`` per step (He & Takáč 2015 [HT15] Table 1).

    The rows drawn and the steps taken go to ``order_out[t]`` and
    ``theta_out[t]`` (for the NumPy reference).  Returns the number of steps.
    """
    n_rows = row_end - row_start
    if n_steps <= 0 or n_rows <= 0:
        return 0
    d = u.shape[0]
    size = _tree_size(n_rows)
    z, c, kappa, wts, k2s, wtree, ktree = _residue_state(indptr, indices, data, y, sqnorm, alpha, u, row_start,
                                                         row_end, curv, base, loss_kind, loss_param, size)
    colptr, crow, cval, unit = block_columns(indptr, indices, data, row_start, row_end, d)
    nnz_block = indptr[row_end] - indptr[row_start]
    du = np.zeros(d)
    fstamp = np.full(d, -1, dtype=np.int64)
    feats = np.empty(d, dtype=np.int64)
    rstamp = np.full(n_rows, -1, dtype=np.int64)
    touched = np.empty(n_rows, dtype=np.int64)
    picked = np.empty(1, dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, stream)
    for t in range(n_steps):
        s_loc = wtree[1]
        if s_loc == 0.0:
            return t
        j = sumtree_draw(wtree, _next_uniform(state))
        i = row_start + j
        theta = base * (ktree[1] + k2_rest) / (s_loc * s_loc / share + d_rest)
        p_i = share * wts[j] / s_loc
        da = -theta * kappa[j] / p_i
        alpha[i] += da
        cc = da * inv_lam_n
        cs = sigma * cc
        n_feats = 0
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            delta_w[f] += cc * data[p]
            step = cs * data[p]
            u[f] += step
            du[f] += step
            if fstamp[f] != t:
                fstamp[f] = t
                feats[n_feats] = f
                n_feats += 1
        order_out[t] = i
        theta_out[t] = theta
        picked[0] = j
        _refresh(indptr, indices, data, y, alpha, u, row_start, n_rows, nnz_block, colptr, crow, cval, unit, z, kappa, c,
                 wts, k2s, du, feats, n_feats, picked, 1, rstamp, t, touched, loss_kind, loss_param, wtree, ktree)
    return n_steps


# --- mini-batches with prescribed marginals (He & Takáč 2015 [HT15] §5.2, Algorithms 3 and 4) ------------------------

@njit(nogil=True, cache=True)
def water_fill(weights, b):
    """Marginals ``q_i = min(1, tau w_i)`` with ``sum q = b`` (docs/references.md, note N6, the cap ``b p_i <= 1``).

    The maximiser of ``Theta_b`` under ``p_i <= 1/b`` (KKT).  With fewer
    than ``b`` positive weights every positive one gets ``q_i = 1`` and the
    batch shrinks to their number (docs/references.md, note N6, "reduce b to |I_kappa|").
    Returns ``(q, b_eff)``.
    """
    n = weights.shape[0]
    q = np.zeros(n)
    positive = 0
    for i in range(n):
        if weights[i] > 0.0:
            positive += 1
    if positive <= b:
        for i in range(n):
            if weights[i] > 0.0:
                q[i] = 1.0
        return q, positive
    order = argsort_desc(weights)  # = np.argsort(-weights, kind="mergesort"), in O(n)
    tail = np.empty(n + 1)
    tail[n] = 0.0
    for k in range(n - 1, -1, -1):
        tail[k] = tail[k + 1] + weights[order[k]]
    for k in range(b):  # k rows capped at 1; k = b - 1 always satisfies the test
        tau = (b - k) / tail[k]
        if weights[order[k]] * tau <= 1.0 or k == b - 1:
            for j in range(n):
                q[order[j]] = 1.0 if j < k else min(1.0, tau * weights[order[j]])
            return q, b
    return q, b


@njit(nogil=True, cache=True)
def alg3_stages(q, b, tol):
    """Algorithm 3's decomposition of marginals ``q`` (``sum q = b``, ``0 <= q_i <= 1``) into stages.

    The structural form of docs/references.md, note N6 (He & Takáč 2015 [HT15] Alg. 3 with errata 8: the
    current ``q``, ``+inf`` for the first term when ``j = b``, the
    ``q_{n+1} = 0`` sentinel).  Stage ``k`` takes the top ``i_k - 1`` rows of
    the sorted ``q`` for sure and a uniform ``(b - i_k + 1)``-subset of sorted
    positions ``[i_k, j_k]`` (1-based, inclusive), with probability ``t_k``.
    Returns ``(perm, t, i, j, m)``: ``perm`` sorts ``q`` descending, the first
    ``m`` entries of ``t, i, j`` are the stages.
    """
    n = q.shape[0]
    perm = argsort_desc(q)  # = np.argsort(-q, kind="mergesort"), in O(n)
    v = np.zeros(n + 2)  # v[1..n] sorted descending, v[n + 1] = 0
    for k in range(n):
        v[k + 1] = q[perm[k]]
    t_out = np.zeros(2 * n + 2)
    i_out = np.zeros(2 * n + 2, dtype=np.int64)
    j_out = np.zeros(2 * n + 2, dtype=np.int64)
    bv = v[b]
    i = b
    j = b
    while i > 1 and abs(v[i - 1] - bv) <= tol:
        i -= 1
    while j < n and abs(v[j + 1] - bv) <= tol:
        j += 1
    shift = 0.0
    m = 0
    while m < 2 * n + 2:
        r = (b - i + 1) / (j - i + 1)
        t1 = (j - i + 1) / (j - b) * ((v[i - 1] - shift) - bv) if (i > 1 and j > b) else np.inf
        t2 = (j - i + 1) / (b - i + 1) * (bv - v[j + 1])
        t = max(min(t1, t2), 0.0)
        t_out[m] = t
        i_out[m] = i
        j_out[m] = j
        m += 1
        shift += t
        bv -= r * t
        if i == 1 and j == n:
            break
        while i > 1 and abs((v[i - 1] - shift) - bv) <= tol:
            i -= 1
        while j < n and abs(v[j + 1] - bv) <= tol:
            j += 1
        if i == 1 and bv <= tol:
            break
    return perm, t_out[:m], i_out[:m], j_out[:m], m


@njit(nogil=True, cache=True)
def alg3_sample(perm, t, i_st, j_st, b, state, out):
    """One draw of Algorithm 3 (lines 10-12) into ``out[:b]``: stage ``K ~ t``, then its subset."""
    total = 0.0
    for k in range(t.shape[0]):
        total += t[k]
    target = _next_uniform(state) * total
    K = t.shape[0] - 1
    acc = 0.0
    for k in range(t.shape[0]):
        acc += t[k]
        if target < acc and t[k] > 0.0:
            K = k
            break
    i = i_st[K]
    j = j_st[K]
    for k in range(i - 1):
        out[k] = perm[k]
    block = np.arange(i - 1, j)  # 0-based sorted positions of the tied block
    need = b - i + 1
    for k in range(need):  # partial Fisher-Yates
        left = block.shape[0] - k
        r = k + min(np.int64(_next_uniform(state) * left), left - 1)
        tmp = block[k]
        block[k] = block[r]
        block[r] = tmp
        out[i - 1 + k] = perm[block[k]]


@njit(nogil=True, cache=True)
def minibatch_adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, delta_w, row_start, row_end, n_iter, b,
                             random_state, round_index, stream, share, k2_rest, d_rest, curv, base, loss_kind,
                             loss_param, sigma, inv_lam_n, batches_out, theta_out):
    """Mini-batch adfSDCA, He & Takáč 2015 [HT15] Algorithm 4, on rows ``[row_start, row_end)``.

    Each iteration: all residues at ``u`` (line 4), ``c_i |kappa_i|`` with the
    ESO constant already in ``curv`` (eq. (10)), capped water-filled
    marginals ``q`` (docs/references.md, note N6), a ``b``-subset with those marginals by
    Algorithm 3 (line 6), the step of App. D (corrected, erratum 2)

        Theta_b = b base (sum kappa^2 + k2_rest) / (b sum_i c_i^2 kappa_i^2 / (share q_i) + d_rest),

    and ``alpha_i -= Theta_b kappa_i / (share q_i)`` for every ``i`` of the
    subset, all read at the same ``u`` (lines 7-10).  ``batches_out[t]`` gets
    the rows (``-1`` pads a shrunken batch), ``theta_out[t]`` the step.

    The residues are kept exact as in :func:`adaptive_steps` (only the rows
    sharing a feature with the batch are re-evaluated, or a pass when that
    is cheaper); the sorts of the water-filling and of Algorithm 3 are the
    ``O(n)`` radix sort :func:`argsort_desc`.  Returns the number of
    coordinate steps.
    """
    n_rows = row_end - row_start
    if n_iter <= 0 or n_rows <= 0:
        return 0
    d = u.shape[0]
    z, c, kappa, wts, k2s, wtree, ktree = _residue_state(indptr, indices, data, y, sqnorm, alpha, u, row_start,
                                                         row_end, curv, base, loss_kind, loss_param, 0)
    colptr, crow, cval, unit = block_columns(indptr, indices, data, row_start, row_end, d)
    nnz_block = indptr[row_end] - indptr[row_start]
    du = np.zeros(d)
    fstamp = np.full(d, -1, dtype=np.int64)
    feats = np.empty(d, dtype=np.int64)
    rstamp = np.full(n_rows, -1, dtype=np.int64)
    touched = np.empty(n_rows, dtype=np.int64)
    chosen = np.empty(b, dtype=np.int64)
    steps_b = np.empty(b)
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, stream)
    steps = 0
    for t in range(n_iter):
        s_loc = 0.0
        k2_loc = 0.0
        for jj in range(n_rows):
            s_loc += wts[jj]
            k2_loc += k2s[jj]
        if s_loc == 0.0:
            return steps
        q, b_eff = water_fill(wts, b)
        denom = 0.0
        for jj in range(n_rows):
            if wts[jj] > 0.0:
                denom += (curv * sqnorm[row_start + jj] + base) * kappa[jj] * kappa[jj] / (share * q[jj])
        theta = b_eff * base * (k2_loc + k2_rest) / (b_eff * denom + d_rest)
        perm, ts, i_st, j_st, _ = alg3_stages(q, b_eff, 1e-12)
        alg3_sample(perm, ts, i_st, j_st, b_eff, state, chosen)
        for k in range(b):
            batches_out[t, k] = -1
        for k in range(b_eff):
            jj = chosen[k]
            batches_out[t, k] = row_start + jj
            steps_b[k] = -theta * kappa[jj] / (share * q[jj])  # the step, from the iteration's u
        n_feats = 0
        for k in range(b_eff):
            i = row_start + chosen[k]
            da = steps_b[k]
            alpha[i] += da
            cc = da * inv_lam_n
            cs = sigma * cc
            for p in range(indptr[i], indptr[i + 1]):
                f = indices[p]
                delta_w[f] += cc * data[p]
                step = cs * data[p]
                u[f] += step
                du[f] += step
                if fstamp[f] != t:
                    fstamp[f] = t
                    feats[n_feats] = f
                    n_feats += 1
        theta_out[t] = theta
        steps += b_eff
        _refresh(indptr, indices, data, y, alpha, u, row_start, n_rows, nnz_block, colptr, crow, cval, unit, z, kappa, c,
                 wts, k2s, du, feats, n_feats, chosen, b_eff, rstamp, t, touched, loss_kind, loss_param, wtree,
                 ktree)
    return steps


@njit(nogil=True, cache=True)
def plus_steps(indptr, indices, data, y, sqnorm, alpha, u, delta_w, row_start, row_end, n_steps, random_state,
               round_index, stream, share, k2_rest, d_rest, s_all, c_all, floor, shrink, curv, base, loss_kind,
               loss_param, sigma, inv_lam_n, order_out, theta_out):
    """Heuristic adfSDCA+, [HT15] Algorithm 2, on rows ``[row_start, row_end)`` (docs/references.md, note N6).

    Residues ``kappa~`` once at the start (lines 5-7), weights
    ``omega_j = (1 - floor) c_j |kappa~_j| / s_all + floor c_j^2 / c_all`` (the
    adaptive ``p*`` mixed with the importance floor ``p_IS ∝ c_j^2 ∝ lam n + L_j``;
    ``s_all = sum c |kappa~|`` and ``c_all = sum c^2`` over all rows) in a sum-tree.
    Each step draws ``i`` (line 9) with ``p_i = share omega_i / W``, takes the
    fresh residue ``kappa_i`` at ``u`` and the step
    ``theta_t = Theta(kappa~, p^(t)) = base (sum kappa~^2 + k2_rest) / (W A / share + d_rest)``,
    ``A = sum_j c_j^2 kappa~_j^2 / omega_j`` kept incrementally (docs/references.md, note N6),
    then shrinks ``omega_i <- omega_i / shrink`` in ``O(log n)`` (line 12).

    Safeguard: the step factor is ``min(theta_t / p_i, s_i)`` with SDCA's safe
    step ``s_i = base / c_i^2 = lam n / (lam n + sigma' L_i)`` (see
    :func:`refreshed_adaptive_steps`), so no step lowers the dual ``D(alpha)``
    and a row of tiny ``p_i`` cannot throw ``alpha_i`` out of the dual
    domain (docs/references.md, note N6).  Returns the number of steps.
    """
    n_rows = row_end - row_start
    weights = np.empty(n_rows)
    a = np.empty(n_rows)
    k2_loc = 0.0
    for jj in range(n_rows):
        i = row_start + jj
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * u[indices[p]]
        kap = residue(loss_kind, loss_param, y[i], m, alpha[i])
        csq = curv * sqnorm[i] + base
        weights[jj] = (1.0 - floor) * math.sqrt(csq) * abs(kap) / s_all + floor * csq / c_all
        a[jj] = csq * kap * kap
        k2_loc += kap * kap
    big_a = 0.0
    for jj in range(n_rows):
        if weights[jj] > 0.0:
            big_a += a[jj] / weights[jj]
    tree = sumtree_build(weights)
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, stream)
    for t in range(n_steps):
        total = tree[1]
        if total <= 0.0:
            return t
        jj = sumtree_draw(tree, _next_uniform(state))
        i = row_start + jj
        theta = base * (k2_loc + k2_rest) / (total * big_a / share + d_rest)
        p_i = share * weights[jj] / total
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * u[indices[p]]
        kappa = residue(loss_kind, loss_param, y[i], m, alpha[i])
        da = -min(theta / p_i, base / (curv * sqnorm[i] + base)) * kappa  # the safeguard (SAFE_STEP)
        alpha[i] += da
        c = da * inv_lam_n
        cs = sigma * c
        for p in range(indptr[i], indptr[i + 1]):
            delta_w[indices[p]] += c * data[p]
            u[indices[p]] += cs * data[p]
        big_a += (shrink - 1.0) * a[jj] / weights[jj]
        weights[jj] /= shrink
        sumtree_update(tree, jj, weights[jj])
        order_out[t] = i
        theta_out[t] = theta
    return n_steps


# --- adaptive probabilities refreshed a few times an epoch ([HT15] §1.1 "practical variant", §4)

@njit(nogil=True, cache=True)
def refreshed_adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, delta_w, row_start, row_end, n_steps,
                             n_refresh, random_state, round_index, stream, share, k2_rest, d_rest, curv, base,
                             loss_kind, loss_param, sigma, inv_lam_n, order_out, theta_out):
    """adfSDCA with the adaptive distribution refreshed ``n_refresh`` times a call, on rows ``[row_start, row_end)``.

    The paper's cheaper scheme (He & Takáč 2015 [HT15] §1.1 "practical aggressive variant"
    and §4: "we only re-compute the exact adaptive probabilities once per
    epoch"): the ``n_steps`` steps are cut into ``n_refresh`` stretches of
    ``ceil(n_steps / n_refresh)``.  At the start of each, one pass computes
    every residue ``kappa~`` at ``u`` (Alg. 1 line 5), ``p*`` of Lemma 1,
    eq. (6), goes into a sum-tree, and ``Theta = Theta(kappa~, p*)`` of
    Theorem 1 (corrected, docs/references.md, note N6):

        Theta = base (sum_loc kappa~^2 + k2_rest) / (S_loc^2 / share + d_rest),

    with ``share``, ``k2_rest``, ``d_rest`` as in :func:`adaptive_steps`.
    Each step then draws ``i`` with ``p_i = share c_i |kappa~_i| / S_loc``
    (``O(log n)``), takes the *fresh* residue ``kappa_i`` at ``u`` and

        alpha_i -= min(Theta / p_i, s_i) kappa_i,   s_i = base / c_i^2 = lam n / (lam n + sigma' L_i),

    where ``s_i`` is SDCA's safe step for an ``L~``-smooth loss (Shalev-Shwartz
    & Zhang 2013 [SSZ13], and of dfSDCA-IS, docs/references.md, note N6): a step
    ``alpha_i <- (1 - s) alpha_i + s u_i`` with ``0 <= s <= s_i`` never lowers
    the dual ``D(alpha)`` (strong concavity along the coordinate) and keeps
    ``alpha`` in the dual domain.  The probabilities are stale between
    refreshes, so Theorem 1 does not cover ``Theta / p_i`` alone (a row whose
    residue grew after a refresh has a tiny ``p_i``: adfSDCA+ with ``s = 1``
    diverges so, docs/references.md, note N6); the cap is the safeguard.  Cost per call
    ``O(n_refresh (nnz + n) + n_steps (log n + nnz(x_i)))``: with a fixed
    ``n_refresh`` an epoch is ``O(nnz + n log n)`` (He & Takáč 2015 [HT15] Table 1,
    adfSDCA+ column), not Algorithm 1's ``O(n nnz)``.

    ``order_out[t]``/``theta_out[t]`` get the row and ``Theta``; stops early
    when every residue of a refresh is zero (pitfall P13).  Returns the number
    of steps.
    """
    n_rows = row_end - row_start
    if n_steps <= 0 or n_rows <= 0:
        return 0
    stretch = (n_steps + n_refresh - 1) // n_refresh
    c = np.empty(n_rows)
    for jj in range(n_rows):
        c[jj] = math.sqrt(curv * sqnorm[row_start + jj] + base)
    wts = np.empty(n_rows)
    tree = np.zeros(2 * _tree_size(n_rows))
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, stream)
    theta = 0.0
    s_loc = 0.0
    for t in range(n_steps):
        if t % stretch == 0:
            k2_loc = 0.0
            for jj in range(n_rows):
                i = row_start + jj
                m = 0.0
                for p in range(indptr[i], indptr[i + 1]):
                    m += data[p] * u[indices[p]]
                kap = residue(loss_kind, loss_param, y[i], m, alpha[i])
                wts[jj] = c[jj] * abs(kap)
                k2_loc += kap * kap
            tree = sumtree_build(wts)
            s_loc = tree[1]
            if s_loc == 0.0:
                return t
            theta = base * (k2_loc + k2_rest) / (s_loc * s_loc / share + d_rest)
        jj = sumtree_draw(tree, _next_uniform(state))
        i = row_start + jj
        p_i = share * wts[jj] / s_loc
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * u[indices[p]]
        kappa = residue(loss_kind, loss_param, y[i], m, alpha[i])
        da = -min(theta / p_i, base / (c[jj] * c[jj])) * kappa
        alpha[i] += da
        cc = da * inv_lam_n
        cs = sigma * cc
        for p in range(indptr[i], indptr[i + 1]):
            delta_w[indices[p]] += cc * data[p]
            u[indices[p]] += cs * data[p]
        order_out[t] = i
        theta_out[t] = theta
    return n_steps
