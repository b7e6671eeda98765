"""SPDC kernels: lazy (just-in-time) primal updates and the dual coordinate steps.

Stochastic Primal-Dual Coordinate method (Zhang & Xiao, JMLR 2017 [ZX17])
for ``min_x 1/n sum_i phi_i(a_i.x) + g(x)`` with
``g(x) = lam1 ||x||_1 + lam2/2 ||x||^2`` (``lam1 = 0``: ridge-type L2).

Notation is the paper's (docs/references.md, note N8): ``y`` is the paper's dual,
``y_i = -alpha_i`` in the project's convention, ``u = 1/n A^T y`` and ``b`` the
labels.  The lazy state (docs/references.md, note N8) is

* ``x[j]``  = ``x_j`` at iteration ``last[j]``,
* ``xp[j]`` = ``x_j`` at iteration ``last[j] - 1`` (``x^(-1) = x^(0)``),
* ``u[j]``, constant between touches,

so that an iteration costs the non-zeros of the rows it samples, not ``d``:
a coordinate left idle for ``s`` iterations follows the map
``x <- prox_{tau g}(x - tau u_j)`` (eq. (35)/(38)), applied ``s`` times at once
by :func:`advance` (closed forms (36), (39)-(44) in the stable
``log1p``/``expm1`` forms of docs/references.md, note N8).

An iteration is two halves, which the Dask rounds run on different tasks:
:func:`dual_half` (on the partitions: ``z = a_k.xbar(t)`` with ``xbar`` read
lazily, the dual prox, ``g_j += dy_k a_kj``) and :func:`primal_half` (on the
global state: for every touched ``j``, catch up to ``t``, then the step
``x_j <- prox(x_j - tau (u_j + omega g_j))``, ``u_j += g_j / n``).  The fused
in-memory loop :func:`spdc_iterations` calls the same two functions, so its
bits equal those of one round at a time.

No Dask here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from daskdca.kernels.sampling import _next_below, minibatch_indices, stream_seed
from daskdca.losses import conjugate_value, dual_update

_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53

__all__ = ["GLOBAL_STREAM", "advance", "apply_step", "catch_up", "conjugate_changes", "dual_half", "flush",
           "local_spdc", "pick_partition", "pick_row", "primal_half", "prox", "spdc_iterations", "uniform_schedule",
           "weighted_schedule"]


@njit(nogil=True, cache=True)
def _affine(x, c, k, tau, lam2, log1p_lt):
    """``k`` steps of ``x <- (x - tau c) / (1 + lam2 tau)`` in closed form.

    ``r^k x - tau c S_k`` with ``r^k = exp(-k log1p(lam2 tau))`` and
    ``tau S_k = (1 - r^k) / lam2 = -expm1(-k log1p(lam2 tau)) / lam2``
    (docs/references.md, note N8: the form of (36) without the cancellation of
    ``(x + c/lam2) r^k - c/lam2`` when ``lam2`` is tiny); ``S_k = k`` when
    ``lam2 = 0``.
    """
    if k == 0:
        return x
    if lam2 == 0.0:
        return x - tau * c * k
    e = -k * log1p_lt
    return math.exp(e) * x - c * (-math.expm1(e)) / lam2


@njit(nogil=True, cache=True)
def prox(a, tau, lam1, lam2):
    """``prox_{tau g}(a) = soft(a, tau lam1) / (1 + lam2 tau)`` (paper eq. (34), (37))."""
    t = tau * lam1
    if a > t:
        return (a - t) / (1.0 + lam2 * tau)
    if a < -t:
        return (a + t) / (1.0 + lam2 * tau)
    return 0.0


@njit(nogil=True, cache=True)
def _count_positive(x, cp, s, tau, lam2, log1p_lt):
    """Largest ``j <= s`` with ``_affine(x, cp, j) > 0`` for ``x > 0``, ``cp > 0`` (eq. (42)).

    ``j < log1p(lam2 x / cp) / log1p(lam2 tau)``; the integer boundary is
    then checked by evaluating the sign at ``j`` and ``j + 1`` (docs/references.md, note N8).
    """
    if lam2 == 0.0:
        q = x / (tau * cp)
    else:
        q = math.log1p(lam2 * x / cp) / log1p_lt
    if q > s + 1.0:
        j = s
    else:
        j = min(s, max(0, np.int64(math.ceil(q)) - 1))
    while j > 0 and _affine(x, cp, j, tau, lam2, log1p_lt) <= 0.0:
        j -= 1
    while j < s and _affine(x, cp, j + 1, tau, lam2, log1p_lt) > 0.0:
        j += 1
    return j


@njit(nogil=True, cache=True)
def advance(x, c, s, tau, lam1, lam2, log1p_lt):
    """``s`` idle steps ``x <- prox_{tau g}(x - tau c)`` in O(1) (paper (36), (38)-(44)).

    ``lam1 = 0``: the L2 closed form.  ``lam1 > 0``: at most three affine
    phases (positive, zero, negative), each found from (42)/(44).
    """
    if s <= 0:
        return x
    if lam1 == 0.0:
        return _affine(x, c, s, tau, lam2, log1p_lt)
    for _ in range(4):
        if s == 0:
            return x
        if x == 0.0:
            if c < -lam1:
                return _affine(0.0, c + lam1, s, tau, lam2, log1p_lt)  # (39)
            if c > lam1:
                return _affine(0.0, c - lam1, s, tau, lam2, log1p_lt)  # (40)
            return 0.0
        if x > 0.0:
            if c <= -lam1:
                return _affine(x, c + lam1, s, tau, lam2, log1p_lt)
            j = _count_positive(x, c + lam1, s, tau, lam2, log1p_lt)  # t+ of (41)-(42)
            x = _affine(x, c + lam1, j, tau, lam2, log1p_lt)
            s -= j
            if s == 0:
                return x
            x = prox(x - tau * c, tau, lam1, lam2)  # one step of (38): to 0 or below
            s -= 1
        else:
            if c >= lam1:
                return _affine(x, c - lam1, s, tau, lam2, log1p_lt)
            j = _count_positive(-x, lam1 - c, s, tau, lam2, log1p_lt)  # t- of (43)-(44), mirrored
            x = -_affine(-x, lam1 - c, j, tau, lam2, log1p_lt)
            s -= j
            if s == 0:
                return x
            x = prox(x - tau * c, tau, lam1, lam2)
            s -= 1
    return x


@njit(nogil=True, cache=True)
def catch_up(x, xp, u, last, j, t, tau, lam1, lam2, log1p_lt):
    """``(x_j(t), x_j(t-1))`` from the lazy state (docs/references.md, note N8).

    ``x_j(t-1)`` from the stored anchor in closed form, then ``x_j(t)`` as
    one idle step (35)/(38) from it: one closed form per catch-up, not two.
    """
    s = t - last[j]
    if s <= 0:
        return x[j], xp[j]
    before = advance(x[j], u[j], s - 1, tau, lam1, lam2, log1p_lt)
    return prox(before - tau * u[j], tau, lam1, lam2), before


@njit(nogil=True, cache=True)
def dual_half(indptr, indices, data, b, y, rows, q, x, xp, u, last, t, tau, theta, lam1, lam2, log1p_lt,
              kind, param, g, count, touched, n_touched, write_back):
    """The dual steps of iteration ``t`` on ``rows`` (all read ``xbar(t)``; eq. (5), (9), (21)).

    ``y_k <- argmax_beta beta z - phi_k*(beta) - (beta - y_k)^2 q_k / 2`` with
    ``z = a_k.xbar(t)`` and ``q_k = 1/s_k`` (``1/sigma``, or ``p_k n / sigma``
    for Algorithm 3), computed as ``-dual_update(.., -y_k, q_k, z)`` (the
    project's step in ``alpha = -y``, docs/references.md, note N8).  Adds ``dy_k a_kj`` to
    ``g[j]`` and 1 to ``count[j]`` for every stored entry; appends newly
    touched coordinates to ``touched``.  Returns the new ``n_touched``.

    ``write_back`` (the fused loop, which owns the state) stores each
    catch-up in ``x``, ``xp``, ``last``, so that :func:`primal_half` does not
    compute it again; the values, and so the bits, are the same either way.
    """
    for r in range(rows.shape[0]):
        k = rows[r]
        z = 0.0
        for p in range(indptr[k], indptr[k + 1]):
            j = indices[p]
            xc, xpc = catch_up(x, xp, u, last, j, t, tau, lam1, lam2, log1p_lt)
            if write_back and last[j] != t:
                x[j], xp[j], last[j] = xc, xpc, t
            z += data[p] * (xc + theta * (xc - xpc))
        y_new = -dual_update(kind, param, b[k], -y[k], q[r], z)
        dy = y_new - y[k]
        y[k] = y_new
        for p in range(indptr[k], indptr[k + 1]):
            j = indices[p]
            if count[j] == 0.0:
                touched[n_touched] = j
                n_touched += 1
            count[j] += 1.0
            g[j] += dy * data[p]
    return n_touched


@njit(nogil=True, cache=True)
def primal_half(x, xp, u, last, t, touched, gvals, omega, inv_n, tau, lam1, lam2, log1p_lt):
    """The primal step of iteration ``t`` on the touched coordinates (eq. (34)/(37), then (7)).

    ``x_j(t+1) = prox(x_j(t) - tau (u_j + omega g_j))`` with
    ``omega = 1`` (Alg. 1), ``1/m`` (Alg. 2), ``1/(p_k n)`` (Alg. 3);
    ``u_j += g_j / n``; ``last[j] = t + 1``.
    """
    for r in range(touched.shape[0]):
        j = touched[r]
        xc, _ = catch_up(x, xp, u, last, j, t, tau, lam1, lam2, log1p_lt)
        gj = gvals[r]
        xp[j] = xc
        x[j] = prox(xc - tau * (u[j] + omega * gj), tau, lam1, lam2)
        u[j] += gj * inv_n
        last[j] = t + 1


@njit(nogil=True, cache=True)
def flush(x, xp, u, last, t, tau, lam1, lam2, log1p_lt):
    """``x(t)`` as a new dense array (every coordinate caught up; the state is not changed)."""
    out = np.empty(x.shape[0])
    for j in range(x.shape[0]):
        out[j], _ = catch_up(x, xp, u, last, j, t, tau, lam1, lam2, log1p_lt)
    return out


@njit(nogil=True, cache=True)
def spdc_iterations(indptr, indices, data, b, y, x, xp, u, last, t0, batches, qs, omegas, inv_n, tau, theta,
                    lam1, lam2, kind, param, g, count, touched):
    """``batches.shape[0]`` SPDC iterations from iteration ``t0`` on one in-memory block.

    Row ``i`` of ``batches`` is the sample ``K`` of iteration ``t0 + i``
    (``-1`` pads unused slots), ``qs`` their dual step weights ``1/s`` and
    ``omegas[i]`` the primal weight.  ``g`` and ``count`` are zero scratch
    arrays of length d (left zero); ``touched`` an int64 scratch array of
    length at least d.  Updates ``y``, ``x``, ``xp``, ``u``, ``last`` in place and
    returns the number of dual steps taken.
    """
    log1p_lt = math.log1p(lam2 * tau)
    steps = 0
    gvals = np.empty(touched.shape[0])
    for i in range(batches.shape[0]):
        t = t0 + i
        m = 0
        while m < batches.shape[1] and batches[i, m] >= 0:
            m += 1
        nt = dual_half(indptr, indices, data, b, y, batches[i, :m], qs[i, :m], x, xp, u, last, t, tau, theta,
                       lam1, lam2, log1p_lt, kind, param, g, count, touched, 0, True)
        steps += m
        for r in range(nt):
            j = touched[r]
            gvals[r] = g[j]
            g[j] = 0.0
            count[j] = 0.0
        primal_half(x, xp, u, last, t, touched[:nt], gvals[:nt], omegas[i], inv_n, tau, lam1, lam2, log1p_lt)
    return steps


# --- SPDC as the local solver of CoCoA+ rounds --------------------------------

@njit(nogil=True, cache=True)
def local_spdc(indptr, indices, data, b, y, x, xp, u, last, batches, q, omega, inv_n, tau, theta, lam2, kind, param,
               g, count, touched, acc):
    """``batches.shape[0]`` SPDC iterations from iteration 0 on a CoCoA+ local problem (docs/references.md, note N8).

    The local problem of a block of ``n_b`` rows is the saddle problem
    ``min_x max_y' 1/n_b sum_i (y'_i a_i.x - phi_i*(y'_i)) + g_b(x)`` with
    ``g_b(x) = lam_b/2 ||x - w||^2 - <u~, x>``, ``u~ = 1/n_b sum_i y_i a_i``
    (the round's starting duals): its primal prox is the L2 prox
    ``x <- (x - tau c) / (1 + lam_b tau)`` with the coefficient
    ``c = (u_loc - u~) + omega g - lam_b w``.  So the lazy L2 iteration of
    :func:`dual_half` / :func:`primal_half` runs it unchanged when its ``u`` is
    ``u_loc - u~ - lam_b w``: the caller starts it at ``-lam_b w`` (``u_loc =
    u~`` at the start) with ``x = xp = w``, ``last = 0`` and ``lam2 = lam_b``.

    Row ``i`` of ``batches`` is the sample of iteration ``i`` (no padding),
    every row with dual step weight ``q = 1/sigma`` and primal weight
    ``omega = 1/m``; ``inv_n = 1/n_b``.  ``g``, ``count`` are zero scratch
    d-vectors (left zero), ``touched`` int64 scratch of length d.  Updates
    ``y`` (the paper's duals, ``-alpha``) and the lazy state in place, adds
    ``sum_i (y_i(T) - y_i(0)) a_i`` to ``acc`` and returns the dual steps taken.
    """
    log1p_lt = math.log1p(lam2 * tau)
    gvals = np.empty(touched.shape[0])
    m = batches.shape[1]
    qs = np.full(m, q)
    for i in range(batches.shape[0]):
        nt = dual_half(indptr, indices, data, b, y, batches[i], qs, x, xp, u, last, i, tau, theta, 0.0, lam2,
                       log1p_lt, kind, param, g, count, touched, 0, True)
        for r in range(nt):
            j = touched[r]
            gvals[r] = g[j]
            acc[j] += g[j]
            g[j] = 0.0
            count[j] = 0.0
        primal_half(x, xp, u, last, i, touched[:nt], gvals[:nt], omega, inv_n, tau, 0.0, lam2, log1p_lt)
    return batches.shape[0] * m


@njit(nogil=True, cache=True)
def _between(old, new, t):
    """``old + t (new - old)``, exactly ``new`` at ``t = 1`` and never outside ``[old, new]`` (the dual domain is
    an interval that holds both, so every such point is feasible)."""
    if t >= 1.0:
        return new
    if t <= 0.0:
        return old
    v = old + t * (new - old)
    return min(max(v, min(old, new)), max(old, new))


@njit(nogil=True, cache=True)
def conjugate_changes(b, old, new, lo, hi, steps, kind, param):
    """``sum_{i in [lo, hi)} phi_i*(-a_i(t)) - phi_i*(-old_i)`` for every ``t`` of ``steps``,
    ``a_i(t)`` between ``old_i`` and ``new_i`` (project convention ``alpha``; only rows that moved count).

    Row by row differences, so the sum is accurate to the size of the change, not of the conjugate sums.
    """
    out = np.zeros(steps.shape[0])
    for i in range(lo, hi):
        if new[i] != old[i]:
            c0 = conjugate_value(kind, param, b[i], old[i])
            for j in range(steps.shape[0]):
                out[j] += conjugate_value(kind, param, b[i], _between(old[i], new[i], steps[j])) - c0
    return out


@njit(nogil=True, cache=True)
def apply_step(old, new, lo, hi, t):
    """``old[i] <- old[i] + t (new[i] - old[i])`` for ``i`` in ``[lo, hi)``, as :func:`conjugate_changes`
    evaluates it."""
    for i in range(lo, hi):
        old[i] = _between(old[i], new[i], t)


# --- sampling ---------------------------------------------------------------

#: Stream id of the draws shared by all partitions (the global mini-batch, or
#: Algorithm 3's choice of partition); bit 62 set, so never a partition id.
GLOBAL_STREAM = (1 << 62) | 0x5DC


@njit(nogil=True, cache=True)
def _uniform01(random_state, round_index, partition):
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, partition)
    return _next_below(state, np.int64(1) << 53) * _TWO_M53


@njit(nogil=True, cache=True)
def uniform_schedule(random_state, first_round, n_rounds, n, m):
    """The global samples of rounds ``first_round ...``: ``m`` distinct rows of ``n`` each (m-nice).

    Round ``r`` draws from the stream ``(random_state, r, GLOBAL_STREAM)``, as
    every partition's task of round ``r`` does (each keeps its own rows), so
    ``P(i in K) = m/n`` and ``|K| = m`` exactly (Algorithm 2's conditions,
    Zhang & Xiao 2017 [ZX17] Algorithm 2 and Theorem 1) whatever the partitions.
    """
    out = np.empty((n_rounds, m), dtype=np.int64)
    for i in range(n_rounds):
        out[i] = minibatch_indices(random_state, first_round + i, GLOBAL_STREAM, n, m, 0)
    return out


@njit(nogil=True, cache=True)
def pick_partition(random_state, round_index, cum_mass):
    """Algorithm 3, first level: partition ``c`` with probability ``P_c`` (``cum_mass`` ends at ~1)."""
    target = _uniform01(random_state, round_index, GLOBAL_STREAM) * cum_mass[-1]
    c = np.searchsorted(cum_mass, target, side="right")
    return min(c, cum_mass.shape[0] - 1)


@njit(nogil=True, cache=True)
def pick_row(random_state, round_index, partition, cumnorm, w_uniform, w_norm):
    """Algorithm 3, second level: row ``i`` of the partition with probability ``∝ w_uniform + w_norm ||a_i||``.

    ``cumnorm[i] = sum_{j <= i} ||a_j||``; the cumulative weight
    ``w_uniform (i + 1) + w_norm cumnorm[i]`` is searched by bisection
    (O(log n_k)).
    """
    n_k = cumnorm.shape[0]
    total = w_uniform * n_k + w_norm * cumnorm[n_k - 1]
    target = _uniform01(random_state, round_index, partition) * total
    lo, hi = 0, n_k - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if w_uniform * (mid + 1) + w_norm * cumnorm[mid] > target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(nogil=True, cache=True)
def weighted_schedule(random_state, first_round, n_rounds, cum_mass, partition, cumnorm, w_uniform, w_norm, n,
                      sigma):
    """Algorithm 3's rows of rounds ``first_round ...`` in ``partition`` (``-1``: another partition's round).

    Returns ``(rows (n_rounds, 1), q = p_k n / sigma, omega = 1 / (p_k n))``
    with ``p_k = w_uniform + w_norm ||a_k||`` (eq. (20), (21), (23)); the same
    draws and arithmetic as a round's task.
    """
    rows = np.full((n_rounds, 1), -1, dtype=np.int64)
    qs = np.zeros((n_rounds, 1))
    omegas = np.zeros(n_rounds)
    for i in range(n_rounds):
        r = first_round + i
        if pick_partition(random_state, r, cum_mass) != partition:
            continue
        k = pick_row(random_state, r, partition, cumnorm, w_uniform, w_norm)
        norm = cumnorm[k] - (cumnorm[k - 1] if k > 0 else 0.0)
        pn = (w_uniform + w_norm * norm) * n
        rows[i, 0] = k
        qs[i, 0] = pn / sigma
        omegas[i] = 1.0 / pn
    return rows, qs, omegas
