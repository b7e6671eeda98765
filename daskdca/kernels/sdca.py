"""Numba local solvers on one in-memory CSR block.

All kernels take the CSR arrays ``(indptr, indices, data)``, labels ``y``,
row weights ``weight`` (the loss of row ``i`` is ``weight[i] phi_i``; an
empty array means every weight is 1, see :func:`daskdca.losses.row_weight`),
squared row norms ``sqnorm``, and an explicit sequence of *row indices* to
visit.  Passing the sequence in (rather than drawing it inside) lets the tests
run a pure-NumPy reference on exactly the same sequence, and lets a partition
stored inside a larger matrix be addressed by its own row range.

Notation (Takáč et al. 2015 [TRS15]; docs/references.md, note N0): ``lam_n = lam * n`` with ``n`` the
number of examples of the *whole* problem, ``w(alpha) = X^T alpha / lam_n``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from daskdca.losses import (row_weight, weighted_conjugate_value, weighted_dual_update, weighted_loss_value,
                            weighted_sweep_dual_update)

__all__ = ["gather_rows", "line_conjugate_sums", "local_sdca", "minibatch_rounds", "minibatch_sdca",
           "minibatch_sdca_rounds", "minibatch_trial_step", "movable_rows", "movable_sdca", "objective_sums",
           "objective_sums_movable", "plane_conjugate_sums", "soft_threshold", "sub_block_bounds",
           "threaded_line_search_sdca", "threaded_local_sdca", "xt_add"]


@njit(nogil=True, cache=True)
def local_sdca(indptr, indices, data, y, weight, sqnorm, alpha, u, delta_w, order,
               loss_kind, loss_param, lam_n, sigma, track_delta_w, exact_steps=False):
    """Sequential dual coordinate steps; updates ``alpha`` and ``u`` in place.

    For each row ``i`` of ``order``: margin ``m = x_i.u``, curvature
    ``q = sigma ||x_i||^2 / lam_n``, ``alpha_i <-`` the sweep's step on the
    1-D dual problem (:func:`daskdca.losses.weighted_sweep_dual_update`),
    then ``u += sigma (delta / lam_n) x_i``.

    The step is the exact maximiser for every loss but logistic, where it is
    an inexact ascent step (one ``exp`` instead of a Newton solve) that
    raises the 1-D objective by at least ``4 / (4 + q)`` times the row's gap
    term, which keeps SDCA's linear rate (Takáč et al. 2015 [TRS15] Theorem 2, docs/references.md, note N2).
    ``exact_steps=True`` takes the exact maximiser for logistic too
    (:func:`daskdca.losses.weighted_dual_update`), as the mini-batch, SDNA
    and SPDC kernels do.

    * ``sigma = 1`` and ``u = w``: serial SDCA (LIBLINEAR's dual CD without
      shrinking), keeping ``w = X^T alpha / lam_n``.
    * ``sigma = sigma' = K`` and ``u = w + sigma' delta_w``: CoCoA+ LocalSDCA
      on the local subproblem ``G_k^{sigma'}`` of Ma et al. 2015
      (arXiv:1502.03508, adding variant, ``gamma = 1``; docs/references.md, note N5).  With
      ``track_delta_w`` the kernel also accumulates
      ``delta_w += (delta / lam_n) x_i``, the update this partition sends.

    Returns the number of coordinate steps taken.
    """
    inv_lam_n = 1.0 / lam_n
    for t in range(order.shape[0]):
        i = order[t]
        start = indptr[i]
        end = indptr[i + 1]
        m = 0.0
        for p in range(start, end):
            m += data[p] * u[indices[p]]
        a_old = alpha[i]
        if exact_steps:
            a_new = weighted_dual_update(loss_kind, loss_param, y[i], a_old, sigma * sqnorm[i] * inv_lam_n, m,
                                         row_weight(weight, i))
        else:
            a_new = weighted_sweep_dual_update(loss_kind, loss_param, y[i], a_old, sigma * sqnorm[i] * inv_lam_n, m,
                                               row_weight(weight, i))
        if a_new != a_old:
            alpha[i] = a_new
            c = (a_new - a_old) * inv_lam_n
            cs = sigma * c
            for p in range(start, end):
                u[indices[p]] += cs * data[p]
            if track_delta_w:
                for p in range(start, end):
                    delta_w[indices[p]] += c * data[p]
    return order.shape[0]


@njit(nogil=True, cache=True)
def movable_sdca(indptr, indices, data, y, weight, sqnorm, alpha, w, order, pass_length, loss_kind, loss_param, lam_n,
                 gap_stop):
    """Serial SDCA on the movable rows, pass after pass, ended once they have converged; ``alpha`` and ``w`` change
    in place.

    Serial dual coordinate ascent on ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` restricted to the
    rows that shrinking left movable: ``order`` holds consecutive passes of ``pass_length`` steps over them (a
    permutation each), and every step is :func:`local_sdca`'s with ``sigma = 1`` and ``u = w`` (the same bits on
    the same rows).  In passes ``j = 1, 2, 4, 8, ...`` after which a whole pass remains, the kernel adds up the
    rows' duality-gap terms ``g_i`` (:func:`objective_sums_movable`) at the margin each row's step reads; when
    such a pass's sum is at most ``gap_stop``, the remaining steps are not taken.  The rows left out of the
    shrunk set then matter more than further passes over the converged ones: a new round tests every row again.
    This is the role of LIBLINEAR's stopping test on its shrunk set, which sweeps the shrunk rows until their
    projected gradients have converged and only then returns to the whole data (Hsieh et al., ICML 2008, §3.2;
    docs/references.md, [HCL+08]); daskdca's test is on the gap terms, the quantity its certificate sums.  Only
    the powers of two carry the sums (they cost about a fifth of a step; benchmarks/RESULTS.md, "Hinge: ending a
    round's passes over the movable rows").

    Returns the number of coordinate steps taken.
    """
    inv_lam_n = 1.0 / lam_n
    n_steps = order.shape[0]
    t = 0
    j = 0
    while t < n_steps:
        j += 1
        stop = min(n_steps, t + pass_length)
        sums = n_steps - stop >= pass_length and (j & (j - 1)) == 0
        gap = 0.0
        for k in range(t, stop):
            i = order[k]
            start = indptr[i]
            end = indptr[i + 1]
            m = 0.0
            for p in range(start, end):
                m += data[p] * w[indices[p]]
            a_old = alpha[i]
            s = row_weight(weight, i)
            if sums:
                gap += (weighted_loss_value(loss_kind, loss_param, y[i], m, s)
                        + weighted_conjugate_value(loss_kind, loss_param, y[i], a_old, s) + a_old * m)
            a_new = weighted_sweep_dual_update(loss_kind, loss_param, y[i], a_old, sqnorm[i] * inv_lam_n, m, s)
            if a_new != a_old:
                alpha[i] = a_new
                c = (a_new - a_old) * inv_lam_n
                for p in range(start, end):
                    w[indices[p]] += c * data[p]
        t = stop
        if sums and gap <= gap_stop:
            break
    return t


@njit(nogil=True, cache=True)
def gather_rows(indptr, indices, data, rows, out_indptr, out_indices, out_data, first_row):
    """Copy the CSR rows ``rows`` (in that order) into ``out_*`` from output row ``first_row`` on.

    ``out_indptr[first_row]`` must already hold the output offset where the
    first copied row starts; ``out_indptr[first_row + 1 + t]`` is set for
    each copied row ``t``.  Returns the output offset after the last row.
    """
    q = out_indptr[first_row]
    for t in range(rows.shape[0]):
        i = rows[t]
        for p in range(indptr[i], indptr[i + 1]):
            out_indices[q] = indices[p]
            out_data[q] = data[p]
            q += 1
        out_indptr[first_row + 1 + t] = q
    return q


def sub_block_bounds(lo, hi, threads):
    """The ``threads + 1`` offsets that cut rows ``[lo, hi)`` into ``threads`` contiguous sub-blocks.

    Sub-block ``b`` is ``[bounds[b], bounds[b + 1])``; sizes differ by at
    most one row (a sub-block is empty only when there are fewer rows than
    threads).
    """
    n = hi - lo
    return [lo + (n * b) // threads for b in range(threads + 1)]


def threaded_local_sdca(indptr, indices, data, y, weight, sqnorm, alpha, u, delta_w, orders,
                        loss_kind, loss_param, lam_n, sigma, inner_rounds, track_delta_w, executor):
    """Hierarchical CoCoA+ local steps: the sub-blocks of ``orders`` in parallel, ``inner_rounds`` times.

    Improves the local subproblem ``G_k^{sigma}`` of a partition whose
    margins are read from ``u = w + sigma delta_w_k`` (as :func:`local_sdca`
    does, with ``sigma = sigma'``) by CoCoA+ on its ``T = len(orders)``
    sub-blocks (Dünner et al., "Snap ML: A Hierarchical Framework for Machine
    Learning", NeurIPS 2018 [DPS+18], §3: the threads of a worker run CoCoA+ on the
    worker's partition).  ``orders[b]`` is the row sequence of sub-block
    ``b`` for the whole call, cut into ``inner_rounds`` consecutive chunks.
    Inner round ``j``: every sub-block ``b`` runs :func:`local_sdca` on its
    ``j``-th chunk from its own copy of ``u`` with ``sigma_sub = sigma * T``,
    tracking its ``delta_b``; then ``step = delta_0 + ... + delta_{T-1}``
    (summed in this order, whatever thread finished first), ``delta_w +=
    step`` (with ``track_delta_w``) and ``u += sigma * step``.

    ``sigma_sub = sigma * T`` is the adding aggregation's safe ``sigma'``
    (Ma et al. 2015 [MSJ+15], arXiv:1502.03508, §3, ``gamma = 1``: ``sigma' = gamma
    K``) applied to the sub-blocks: with ``delta = sum_b delta_b``,
    ``sigma ||delta||^2 <= sigma T sum_b ||delta_b||^2``, so the sub-blocks'
    subproblems, whose quadratic terms are ``lam/2 sigma T ||delta_b||^2``,
    sum to a lower bound of ``G_k^{sigma}`` that is tight at ``delta = 0``:
    every sub-block's ascent is ascent of the partition's subproblem.  On
    one partition (``sigma = 1``, ``u = w``) this is CoCoA+ with ``T``
    parts, and ``u`` becomes the new ``w``.

    ``alpha`` (whose sub-blocks' rows are disjoint, so the threads write
    disjoint entries), ``u`` and ``delta_w`` are updated in place;
    ``executor`` (a :class:`concurrent.futures.Executor` with at least
    ``T - 1`` workers) runs sub-blocks ``1 .. T-1`` while the caller runs
    sub-block 0 (``local_sdca`` releases the GIL).  The result depends only
    on the arguments, never on thread timing.  Returns the number of
    coordinate steps taken.
    """
    threads = len(orders)
    sigma_sub = sigma * threads
    local_u = np.empty((threads, u.shape[0]))
    local_delta = np.empty((threads, u.shape[0]))

    def sweep(b, chunk):
        local_u[b][:] = u
        local_delta[b][:] = 0.0
        local_sdca(indptr, indices, data, y, weight, sqnorm, alpha, local_u[b], local_delta[b], chunk,
                   loss_kind, loss_param, lam_n, sigma_sub, True)

    for j in range(inner_rounds):
        _sweep_sub_blocks(executor, sweep, orders, j, inner_rounds)
        _add_sub_block_deltas(u, delta_w, local_delta, sigma, track_delta_w)
    return sum(order.shape[0] for order in orders)


def _sweep_sub_blocks(executor, sweep, orders, j, inner_rounds):
    """``sweep(b, chunk)`` for every sub-block ``b`` on the ``j``-th of ``inner_rounds`` consecutive chunks of
    ``orders[b]``: sub-blocks ``1 .. T-1`` on ``executor``, 0 here; the results in sub-block order."""
    chunks = [order[(order.shape[0] * j) // inner_rounds:(order.shape[0] * (j + 1)) // inner_rounds]
              for order in orders]
    futures = [executor.submit(sweep, b, chunks[b]) for b in range(1, len(orders))]
    return [sweep(0, chunks[0])] + [future.result() for future in futures]


@njit(nogil=True, cache=True)
def _add_sub_block_deltas(u, delta_w, deltas, sigma, track_delta_w):
    """``step = deltas[0] + ... + deltas[T-1]`` (in this order), ``delta_w += step``, ``u += sigma step``; one pass."""
    for j in range(u.shape[0]):
        step = deltas[0, j]
        for b in range(1, deltas.shape[0]):
            step += deltas[b, j]
        if track_delta_w:
            delta_w[j] += step
        u[j] += sigma * step


def threaded_line_search_sdca(indptr, indices, data, y, weight, sqnorm, alpha, u, delta_w, orders,
                              loss_kind, loss_param, lam_n, sigma, inner_rounds, track_delta_w, executor, steps):
    """Hierarchical CoCoA local steps with a line search: the sub-blocks of ``orders`` in parallel, ``inner_rounds`` times.

    Improves the local subproblem ``G_k^{sigma}`` of a partition whose
    margins are read from ``u = w + sigma delta_w_k`` (as
    :func:`threaded_local_sdca` does), with a line search along the
    sub-blocks' summed direction in place of the adding aggregation's
    ``T``-fold curvature.  Inner round ``j``: every sub-block
    ``b`` runs :func:`local_sdca` on its ``j``-th chunk of ``orders[b]`` from
    its own copy of ``u`` with the partition's curvature ``sigma`` (not
    ``sigma T``), tracking its ``delta_b``; with ``s = delta_0 + ... +
    delta_{T-1}`` (summed in this order) and the chunks' duals moved from
    ``a`` to ``a'``, the subproblem along ``a + t (a' - a)`` changes by

        n (G(t) - G(0)) = -sum_i [phi_i*(-(a_i + t (a'_i - a_i))) - phi_i*(-a_i)]
                          - lam_n (t u.s + sigma t^2 / 2 ||s||^2)

    (the chunks' rows only).  ``t`` is the best of ``steps`` (ascending,
    ending at 1, holding ``1/T``); then ``alpha <- a + t (a' - a)``,
    ``delta_w += t s`` (with ``track_delta_w``) and ``u += sigma t s``.

    The search never lowers ``G``: each sub-block's steps ascend ``G`` along
    its own coordinates (the others held), so by concavity
    ``G(1/T) >= 1/T sum_b G(a + (a'_b - a_b)) >= G(0)`` (``t = 1/T`` is the
    averaging of Ma et al. 2015 [MSJ+15], arXiv:1502.03508, §3, ``gamma = 1/K``
    with ``sigma' = gamma K = 1``), and the search takes the best of the
    candidates.  ``G`` is concave in ``t``: when ``G(1) >= G(steps[-2])``
    every smaller candidate is below too, so the conjugate sums are taken
    at those two steps in the sub-blocks' threads and at the others only
    when ``1`` is not the best.  Where the sub-blocks' rows share few
    features ``t = 1`` and the passes stay those of one thread; where a few
    features are in most rows, the sub-blocks' steps along them add up
    past the optimum, which one ``t`` for the whole step cannot undo, and
    the passes grow (benchmarks/RESULTS.md, "Threads with a line search").

    ``alpha``, ``u`` and ``delta_w`` are updated in place; ``executor`` runs
    sub-blocks ``1 .. T-1`` while the caller runs sub-block 0.  The result
    depends only on the arguments, never on thread timing.  Returns the
    number of coordinate steps taken.
    """
    threads = len(orders)
    d = u.shape[0]
    local_u = np.empty((threads, d))
    local_delta = np.empty((threads, d))
    direction = np.empty(d)
    marks = np.zeros(alpha.shape[0], dtype=np.bool_)  # the sub-blocks' rows are disjoint: no two threads share a mark
    # each sub-block's distinct rows of an inner round and their duals before it, in buffers held for the whole
    # call: arrays made afresh each inner round cost their pages again where the allocator hands freed memory back
    # to the system at once (as a Dask worker's does: MALLOC_TRIM_THRESHOLD_)
    longest = max(-(-order.shape[0] // inner_rounds) for order in orders)  # the longest chunk
    row_buffers = np.empty((threads, longest), dtype=np.int64)
    start_buffers = np.empty((threads, longest))
    top = steps[-2:]

    def sweep(b, chunk):
        count, sums = _line_search_sub_block(indptr, indices, data, y, weight, sqnorm, alpha, u, local_u[b],
                                             local_delta[b], chunk, marks, row_buffers[b], start_buffers[b],
                                             loss_kind, loss_param, lam_n, sigma, top)
        return row_buffers[b][:count], start_buffers[b][:count], sums

    for j in range(inner_rounds):
        swept = _sweep_sub_blocks(executor, sweep, orders, j, inner_rounds)
        us, ss = _sub_block_direction(u, local_delta, direction)
        t = _best_step(swept, y, weight, alpha, steps, us, ss, loss_kind, loss_param, lam_n, sigma)
        for rows, start, _ in swept:
            _move_duals(alpha, rows, start, t)
        _add_line_step(u, delta_w, direction, sigma, t, track_delta_w)
    return sum(order.shape[0] for order in orders)


def _best_step(swept, y, weight, alpha, steps, us, ss, loss_kind, loss_param, lam_n, sigma):
    """The step of :func:`threaded_line_search_sdca`: 1 when ``G(1) >= G(steps[-2])``, else the best of ``steps``
    (the largest of equal ones)."""

    def values(candidates, conj):
        return [-c - lam_n * (t * us + 0.5 * sigma * t * t * ss) for t, c in zip(candidates, conj)]

    top = steps[-2:]
    conj = swept[0][2].copy()
    for _, _, sums in swept[1:]:  # in sub-block order
        conj += sums
    high = values(top, conj)
    if high[1] >= high[0]:
        return 1.0
    rest = steps[:-2]
    conj_rest = np.zeros(rest.shape[0])
    for rows, start, _ in swept:
        conj_rest += _chunk_line_sums(y, weight, alpha, rows, start, rest, loss_kind, loss_param)
    every = np.array(values(rest, conj_rest) + high)
    return float(steps[every.shape[0] - 1 - int(np.argmax(every[::-1]))])  # the largest of equal best steps


@njit(nogil=True, cache=True)
def _line_search_sub_block(indptr, indices, data, y, weight, sqnorm, alpha, u, local_u, local_delta, chunk, marks,
                           rows, start, loss_kind, loss_param, lam_n, sigma, top):
    """One sub-block's inner round of :func:`threaded_line_search_sdca`: its chunk's distinct rows and their duals
    before the steps (into the first ``count`` entries of ``rows`` and ``start``), the steps from a copy of ``u``
    (``delta_b`` in ``local_delta``); returns ``count`` and the conjugate sums at ``top``."""
    local_u[:] = u
    local_delta[:] = 0.0
    count = 0
    for t in range(chunk.shape[0]):  # a row drawn twice (local_iters > 1, iid sampling) is on the line once
        i = chunk[t]
        if not marks[i]:
            marks[i] = True
            rows[count] = i
            count += 1
    for r in range(count):
        marks[rows[r]] = False
        start[r] = alpha[rows[r]]
    local_sdca(indptr, indices, data, y, weight, sqnorm, alpha, local_u, local_delta, chunk, loss_kind, loss_param,
               lam_n, sigma, True)
    return count, _chunk_line_sums(y, weight, alpha, rows[:count], start[:count], top, loss_kind, loss_param)


@njit(nogil=True, cache=True)
def _chunk_line_sums(y, weight, alpha, rows, start, steps, loss_kind, loss_param):
    """:func:`line_conjugate_sums` of the rows ``rows``, from ``start`` towards their duals now (the same sums,
    read in place: no copies of the rows' labels, weights and duals)."""
    out = np.zeros(steps.shape[0])
    for r in range(rows.shape[0]):
        i = rows[r]
        s = row_weight(weight, i)
        direction = alpha[i] - start[r]
        for j in range(steps.shape[0]):
            out[j] += weighted_conjugate_value(loss_kind, loss_param, y[i], start[r] + steps[j] * direction, s)
    return out


@njit(nogil=True, cache=True)
def _move_duals(alpha, rows, start, t):
    """``alpha_i <- start_r + t (alpha_i - start_r)`` for ``i = rows[r]`` (unchanged at ``t = 1``)."""
    if t == 1.0:
        return
    for r in range(rows.shape[0]):
        i = rows[r]
        alpha[i] = start[r] + t * (alpha[i] - start[r])


@njit(nogil=True, cache=True)
def _sub_block_direction(u, deltas, direction):
    """``direction = deltas[0] + ... + deltas[T-1]`` (in this order); returns ``(u.direction, ||direction||^2)``."""
    us = 0.0
    ss = 0.0
    for j in range(u.shape[0]):
        step = deltas[0, j]
        for b in range(1, deltas.shape[0]):
            step += deltas[b, j]
        direction[j] = step
        us += u[j] * step
        ss += step * step
    return us, ss


@njit(nogil=True, cache=True)
def _add_line_step(u, delta_w, direction, sigma, t, track_delta_w):
    """``delta_w += t direction`` (with ``track_delta_w``), ``u += sigma t direction``; one pass."""
    for j in range(u.shape[0]):
        step = t * direction[j]
        if track_delta_w:
            delta_w[j] += step
        u[j] += sigma * step


@njit(nogil=True, cache=True)
def minibatch_sdca(indptr, indices, data, y, weight, q, alpha, w, w_out, batches,
                   loss_kind, loss_param, lam_n):
    """Mini-batch SDCA iterations (Takáč et al. 2015 [TRS15] Algorithm 1), one per row of ``batches``.

    Within an iteration every coordinate of the batch reads the same
    start-of-iteration ``w`` (the margins are all computed before any update
    is applied), with curvature ``q_i = v_i / lam_n`` from safe ESO weights
    ``v`` (see :mod:`daskdca.kernels.eso`).  The updates
    ``(delta_i / lam_n) x_i`` are then added to ``w_out``.

    * In-process, ``w_out is w``: ``batches`` may hold many iterations.
    * On a partition of a cluster, ``w_out`` is a zero buffer that becomes
      this partition's ``delta_w`` for one iteration (``batches`` has one row).

    A batch must not repeat a row.  ``alpha`` is updated in place.
    """
    inv_lam_n = 1.0 / lam_n
    n_iter = batches.shape[0]
    size = batches.shape[1]
    delta = np.empty(size)
    for t in range(n_iter):
        for k in range(size):
            i = batches[t, k]
            m = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                m += data[p] * w[indices[p]]
            a_old = alpha[i]
            a_new = weighted_dual_update(loss_kind, loss_param, y[i], a_old, q[i], m, row_weight(weight, i))
            alpha[i] = a_new
            delta[k] = a_new - a_old
        for k in range(size):
            if delta[k] != 0.0:
                i = batches[t, k]
                c = delta[k] * inv_lam_n
                for p in range(indptr[i], indptr[i + 1]):
                    w_out[indices[p]] += c * data[p]
    return n_iter * size


@njit(nogil=True, cache=True)
def soft_threshold(v, c):
    """``grad g*(v) = sign(v) (|v| - c)_+`` for one coordinate (``+0.0`` inside ``[-c, c]``): the primal
    coordinate of the elastic net's dual point (:mod:`daskdca.kernels.prox_sdca`)."""
    if v > c:
        return v - c
    if v < -c:
        return v + c
    return 0.0


@njit(nogil=True, cache=True)
def minibatch_sdca_rounds(indptr, indices, data, y, weight, q, alpha, w, batches, loss_kind, loss_param, lam_n,
                          acc):
    """Mini-batch SDCA iterations on one partition, each a round of its own.

    Gives the same bits as one :func:`minibatch_sdca` call per iteration into
    a zero ``delta_w`` followed by ``w + delta_w``: each iteration's updates
    are summed in ``acc`` (a zero d-buffer, left zero on return) in the same
    order, then added to ``w`` once per coordinate.  The in-process driver's
    fast path for one partition (many rounds in one call).
    """
    return minibatch_rounds(indptr, indices, data, y, weight, q, alpha, w, w, batches, loss_kind, loss_param, lam_n,
                            0.0, False, acc)


@njit(nogil=True, cache=True)
def minibatch_rounds(indptr, indices, data, y, weight, q, alpha, v, w, batches, loss_kind, loss_param, lam_n,
                     threshold, proximal, acc):
    """The loop of :func:`minibatch_sdca_rounds` and of the elastic net's
    :func:`daskdca.kernels.prox_sdca.prox_minibatch_sdca_rounds`.

    Iteration ``t`` (row ``t`` of ``batches``, no row repeated): every row of
    the batch steps at the margin of the same start-of-iteration ``w``; the
    updates ``(delta_i / lam_n) x_i`` are summed in ``acc`` row after row,
    then every touched coordinate takes its sum: ``w_j += acc_j``, or with
    ``proximal`` ``v_j += acc_j`` and ``w_j = soft_threshold(v_j, threshold)``
    (``v`` is not read without ``proximal``).  Returns the coordinate steps.
    """
    inv_lam_n = 1.0 / lam_n
    size = batches.shape[1]
    delta = np.empty(size)
    for t in range(batches.shape[0]):
        for k in range(size):
            i = batches[t, k]
            m = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                m += data[p] * w[indices[p]]
            a_old = alpha[i]
            a_new = weighted_dual_update(loss_kind, loss_param, y[i], a_old, q[i], m, row_weight(weight, i))
            alpha[i] = a_new
            delta[k] = a_new - a_old
        for k in range(size):
            if delta[k] != 0.0:
                i = batches[t, k]
                c = delta[k] * inv_lam_n
                for p in range(indptr[i], indptr[i + 1]):
                    acc[indices[p]] += c * data[p]
        for k in range(size):
            i = batches[t, k]
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if acc[j] != 0.0:
                    if proximal:
                        v[j] += acc[j]
                        w[j] = soft_threshold(v[j], threshold)
                    else:
                        w[j] += acc[j]
                    acc[j] = 0.0
    return batches.shape[0] * size


@njit(nogil=True, cache=True)
def objective_sums(indptr, indices, data, y, weight, alpha, w, row_start, row_end,
                   loss_kind, loss_param):
    """One pass over rows ``[row_start, row_end)`` for the duality gap.

    Returns ``(sum_i phi_i(x_i.w), sum_i phi_i*(-alpha_i))``; with
    ``||w||^2`` these give ``P(w)`` and ``D(alpha)`` ([TRS15]; docs/references.md, note N0), and the
    Dask engine adds them up over partitions.
    """
    loss_sum = 0.0
    conj_sum = 0.0
    for i in range(row_start, row_end):
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * w[indices[p]]
        s = row_weight(weight, i)
        loss_sum += weighted_loss_value(loss_kind, loss_param, y[i], m, s)
        conj_sum += weighted_conjugate_value(loss_kind, loss_param, y[i], alpha[i], s)
    return loss_sum, conj_sum


@njit(nogil=True, cache=True)
def xt_add(indptr, indices, data, alpha, row_start, row_end, out):
    """``out += X^T alpha`` over rows ``[row_start, row_end)`` (row ``i`` weighted by ``alpha[i]``), row after row."""
    for i in range(row_start, row_end):
        a = alpha[i]
        if a != 0.0:
            for p in range(indptr[i], indptr[i + 1]):
                out[indices[p]] += a * data[p]


@njit(nogil=True, cache=True)
def objective_sums_movable(indptr, indices, data, y, weight, sqnorm, alpha, w, row_start, row_end,
                           loss_kind, loss_param, lam_n, sigma):
    """:func:`objective_sums` and :func:`movable_rows` from one pass, with the movable rows' gap terms.

    Both read the margins ``x_i.w`` of the same ``(w, alpha)``; computing
    each margin once saves one of the three passes of a shrinking SDCA round
    (gap sums, shrinking test, steps).  Returns
    ``(loss_sum, conj_sum, rows, movable_gap)``, the first three bit for bit
    what the two kernels return, and ``movable_gap`` the sum over ``rows``
    of the rows' duality-gap terms
    ``g_i = s_i phi_i(x_i.w) + s_i phi_i*(-alpha_i / s_i) + alpha_i x_i.w``
    (each at least 0 by the Fenchel-Young inequality; a row whose step is
    zero sits at its own 1-D optimum, where its term is 0, so with
    ``w = w(alpha)`` the sum over every row is ``n (P(w) - D(alpha))``).
    """
    out = np.empty(row_end - row_start, dtype=np.int64)
    count = 0
    loss_sum = 0.0
    conj_sum = 0.0
    movable_gap = 0.0
    inv_lam_n = 1.0 / lam_n
    for i in range(row_start, row_end):
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * w[indices[p]]
        s = row_weight(weight, i)
        row_loss = weighted_loss_value(loss_kind, loss_param, y[i], m, s)
        row_conj = weighted_conjugate_value(loss_kind, loss_param, y[i], alpha[i], s)
        loss_sum += row_loss
        conj_sum += row_conj
        a_new = weighted_dual_update(loss_kind, loss_param, y[i], alpha[i], sigma * sqnorm[i] * inv_lam_n, m, s)
        if a_new != alpha[i]:
            out[count] = i
            count += 1
            movable_gap += row_loss + row_conj + alpha[i] * m
    return loss_sum, conj_sum, out[:count], movable_gap


@njit(nogil=True, cache=True)
def movable_rows(indptr, indices, data, y, weight, sqnorm, alpha, w, row_start, row_end,
                 loss_kind, loss_param, lam_n, sigma):
    """Rows of ``[row_start, row_end)`` whose dual step at ``w`` is non-zero.

    A row whose closed-form step is zero at ``w`` sits at a bound of the dual
    domain with its gradient pointing outward (hinge: ``b = 0`` and
    ``y x.w >= 1``, or ``b = 1`` and ``y x.w <= 1``).  Leaving such rows out
    of a round is LIBLINEAR's shrinking (Hsieh et al., ICML 2008, §3.2),
    re-decided from scratch every round so that no row stays out once its
    step becomes non-zero.  ``sigma`` scales the curvature as in
    :func:`local_sdca`.
    """
    out = np.empty(row_end - row_start, dtype=np.int64)
    count = 0
    inv_lam_n = 1.0 / lam_n
    for i in range(row_start, row_end):
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * w[indices[p]]
        a_new = weighted_dual_update(loss_kind, loss_param, y[i], alpha[i], sigma * sqnorm[i] * inv_lam_n, m,
                                     row_weight(weight, i))
        if a_new != alpha[i]:
            out[count] = i
            count += 1
    return out[:count]


@njit(nogil=True, cache=True)
def line_conjugate_sums(y, weight, start, direction, steps, loss_kind, loss_param):
    """``sum_i phi_i*(-(start_i + t direction_i))`` for every ``t`` of ``steps``.

    The conjugate part of the dual along a line, for the line search of
    CoCoA rounds (:class:`daskdca.methods.sdca.LineSearchPlan`); ``+inf`` for
    a step that leaves the dual domain.
    """
    out = np.zeros(steps.shape[0])
    for i in range(y.shape[0]):
        s = row_weight(weight, i)
        for j in range(steps.shape[0]):
            out[j] += weighted_conjugate_value(loss_kind, loss_param, y[i], start[i] + steps[j] * direction[i], s)
    return out


@njit(nogil=True, cache=True)
def plane_conjugate_sums(y, weight, start, first, second, steps, loss_kind, loss_param):
    """``sum_i phi_i*(-(start_i + a first_i + b second_i))`` for every row ``(a, b)`` of ``steps``.

    The conjugate part of the dual on the plane of two directions, for the
    momentum search of CoCoA+ rounds (:class:`daskdca.methods.sdca.MomentumPlan`);
    ``+inf`` for a point outside the dual domain.
    """
    out = np.zeros(steps.shape[0])
    for i in range(y.shape[0]):
        s = row_weight(weight, i)
        for j in range(steps.shape[0]):
            out[j] += weighted_conjugate_value(loss_kind, loss_param, y[i],
                                               start[i] + steps[j, 0] * first[i] + steps[j, 1] * second[i], s)
    return out


@njit(nogil=True, cache=True)
def minibatch_trial_step(indptr, indices, data, y, weight, sqnorm, alpha, w, rows, beta, loss_kind, loss_param,
                         lam_n,
                         new_alpha, delta_w):
    """One mini-batch step with ``v_i = beta ||x_i||^2`` that moves nothing (Takáč et al. 2013 [TBRS13] Algorithm 2).

    For every row ``i = rows[k]`` the step of Takáč et al. 2013 [TBRS13] eq. (15) (general
    loss: Takáč et al. 2015 [TRS15] Algorithm 1 line 6) is taken from the same ``w`` with
    curvature ``q_i = beta ||x_i||^2 / lam_n``; ``new_alpha[k]`` receives the
    new value, ``delta_w += (delta_i / lam_n) x_i``, and ``alpha`` is left
    as it is (the aggressive method accepts or rejects the step globally).
    Returns ``(zeta, conj_change)``: ``zeta = sum ||x_i||^2 delta_i^2`` (the
    denominator of rho, eq. (23) with per-row norms) and
    ``sum phi_i*(-new) - phi_i*(-old)`` (the conjugate part of the dual change).
    """
    inv_lam_n = 1.0 / lam_n
    zeta = 0.0
    conj_change = 0.0
    for k in range(rows.shape[0]):
        i = rows[k]
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * w[indices[p]]
        a_old = alpha[i]
        s = row_weight(weight, i)
        a_new = weighted_dual_update(loss_kind, loss_param, y[i], a_old, beta * sqnorm[i] * inv_lam_n, m, s)
        new_alpha[k] = a_new
        delta = a_new - a_old
        if delta != 0.0:
            zeta += sqnorm[i] * delta * delta
            conj_change += (weighted_conjugate_value(loss_kind, loss_param, y[i], a_new, s)
                            - weighted_conjugate_value(loss_kind, loss_param, y[i], a_old, s))
            c = delta * inv_lam_n
            for p in range(indptr[i], indptr[i + 1]):
                delta_w[indices[p]] += c * data[p]
    return zeta, conj_change
