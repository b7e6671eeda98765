"""What every dual plan shares: the states ``w`` and ``alpha``, the out-of-core block sweep, the adding combine.

The dual methods (CoCoA+ with any local solver, SDNA, Catalyst's proximal
rounds, mini-batch SDCA's global state) keep ``w = X^T alpha / (lam n)`` as
their global state and the duals ``alpha`` of a partition as its local
state; :func:`sweep_blocks` visits an out-of-core partition's blocks in a
seeded random order for their local solvers (:func:`sweep_window` holds a
sliding window of them and interleaves their rows), and :class:`DualPlan` is the
plan they start from (zero duals, ``alpha`` as the dual point, ``w += sum_k
delta_w_k``).  This module imports only :mod:`daskdca.methods.base`, the
kernels and the partitions, so every method module can build on it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from daskdca.kernels.sampling import permutation_order, sub_block_stream
from daskdca.kernels.sdca import gather_rows, objective_sums, xt_add
from daskdca.methods.base import PlanBase, RoundReport, apply_vector, dense
from daskdca.partitions import UNWEIGHTED, Rows, row_view

__all__ = ["DualGlobal", "DualLocal", "DualPlan", "sweep_blocks", "sweep_blocks_problems", "sweep_window"]


class DualGlobal(NamedTuple):
    """Global state of the dual methods: ``w = X^T alpha / (lam n)`` (up to rounding)."""

    w: np.ndarray


class DualLocal(NamedTuple):
    """Local state of a partition: its dual variables, in the partition's row order."""

    alpha: np.ndarray


def _block_stream(partition, j):
    """Stream id of block ``j`` of an out-of-core partition; never a partition id (bit 62 set)."""
    return (1 << 62) | (partition << 31) | j


def sweep_blocks(part, alpha, w, ctx, loss, step, xt=None):
    """Out of core: every block of ``part`` in a seeded random order, gap sums at ``w``, then ``step``.

    ``step(blk, lo, hi, a, stream) -> n_steps`` runs a local solver on the
    block's rows ``[lo, hi)`` with ``a`` its view of ``alpha``; a one-block
    partition uses the partition's stream (so it gives the in-memory bits).
    With ``xt`` (a d-vector), ``X^T alpha`` of the starting ``alpha`` is
    added to it, block by block before the block's steps (what
    :func:`_start_xt` says).  Returns ``(loss_sum, conj_sum, n_steps)``.
    """
    return sweep_blocks_problems(part, [(None, alpha, w, step)], ctx, loss, xts=None if xt is None else [xt])[0]


def _start_xt(xt, rows, a, lo, hi):
    """Add ``X_b^T a_b`` of a block's rows ``[lo, hi)`` to ``xt`` (when given) as the block is read, before any
    of its rows moves: over a sweep, ``X^T alpha`` of the sweep's starting duals, which with the gap sums at
    ``w`` certify ``(w, alpha)`` exactly (``P(w) - D(alpha)``, ``D`` with ``||X^T alpha / (lam n)||^2``) at
    no extra read of the data."""
    if xt is not None:
        xt_add(rows.indptr, rows.indices, rows.data, a, lo, hi, xt)


def sweep_blocks_problems(part, problems, ctx, loss, xts=None):
    """:func:`sweep_blocks` for several problems on the same rows, each block read once.

    ``problems`` holds ``(rows_of, alpha, w, step)`` per problem:
    ``rows_of(blk)`` is the problem's rows of a block as read (None: the
    block itself), e.g. :func:`~daskdca.partitions.binary_rows` for a
    one-vs-rest problem.  Each problem sees the same blocks in the same
    order, and the same arithmetic, as its own :func:`sweep_blocks`.
    ``xts`` (None, or a d-vector or None per problem): as ``xt`` of
    :func:`sweep_blocks`.  Returns ``(loss_sum, conj_sum, n_steps)`` per
    problem.
    """
    kind, param = int(loss.kind), loss.param
    sums = [[0.0, 0.0, 0] for _ in problems]
    nb = len(part.block_starts) - 1
    block_order = permutation_order(ctx.random_state, ctx.round, ctx.partition, nb, nb, 0)
    xts = [None] * len(problems) if xts is None else xts
    for j, (blk, lo, hi, start) in zip(block_order, part.pieces(block_order)):
        stream = ctx.partition if nb == 1 else _block_stream(ctx.partition, int(j))
        for total, xt, (rows_of, alpha, w, step) in zip(sums, xts, problems):
            rows = blk if rows_of is None else rows_of(blk)
            a = row_view(alpha, rows, lo, start)
            ls, cs = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, a, w, lo, hi, kind,
                                    param)
            total[0], total[1] = total[0] + ls, total[1] + cs
            _start_xt(xt, rows, a, lo, hi)
            total[2] += step(rows, lo, hi, a, stream)
    return [tuple(total) for total in sums]


def _segment_stream(partition, s):
    """Stream id of segment ``s`` of a windowed sweep of ``partition``: the sub-block stream
    (:func:`~daskdca.kernels.sampling.sub_block_stream`) of index ``2**40 + s``, which no thread's
    sub-block (index below the partition's rows) takes."""
    return sub_block_stream(partition, (1 << 40) + s)


def sweep_window(part, problems, ctx, loss, window, xts=None):
    """:func:`sweep_blocks_problems` holding up to ``window`` blocks at once, their rows interleaved.

    Sweeping block after block takes far more passes than one permutation of
    all rows at small ``lam n``: ``w`` drifts toward the fit of the block at
    hand, and the next block pulls it back.  Interleaving the rows of a few
    neighbouring blocks restores the whole sweep's rate with a bounded memory
    (benchmarks/RESULTS.md, "Out of core: a sliding window of blocks":
    serial SDCA to a certified 1e-4 on 13 blocks, logistic at ``lam n =
    0.2``: 8 passes for the whole permutation, more than 40 block after
    block, 11 / 9 / 8 with 2 / 4 / 8 blocks held).  This is the sliding
    shuffle buffer of block-wise sampling (Xu et al., "In-Database Machine
    Learning with CorgiPile: Stochastic Gradient Descent without Full Data
    Shuffle", SIGMOD 2022), made deterministic.

    The blocks come in :func:`sweep_blocks_problems`' seeded order; each
    block's gap sums at ``w`` and its visits (``plan_block``) are taken when
    it is read.  Its visits are cut into ``window`` consecutive chunks of
    near-equal size (``numpy.array_split``); chunk ``c`` of the block at
    position ``p`` joins segment ``p + c``.  Once block ``p`` is read,
    segment ``p`` is complete: its visits (one chunk of each of the at most
    ``window`` blocks held) run in one random order drawn from the
    segment's own stream (:func:`_segment_stream`), on one CSR block of
    the visited rows: each chunk's rows are copied, once, straight from
    their block when it is read (:func:`~daskdca.kernels.sdca.gather_rows`,
    while the block is in the cache) to the end of the buffer of the segment
    they join (:class:`_SegmentBuffer`, one for each of the ``window``
    segments under way, reused); the duals are written back after.  A block
    leaves memory once its chunks are copied, so the rows of at most
    ``window`` blocks are held (and, in a store, the block read ahead:
    :meth:`~daskdca.partitions.StorePartition.pieces`).  Every
    stream derives from ``(random_state, round, partition)``.

    Parameters
    ----------
    part : StorePartition or MemoryPartition
        The partition, read block by block (:meth:`pieces`).
    problems : list of tuple
        ``(rows_of, alpha, w, plan_block, run)`` per problem: ``rows_of`` and
        ``alpha``, ``w`` as in :func:`sweep_blocks_problems`;
        ``plan_block(rows, lo, hi, a, stream)`` returns the block's visits
        (indices of ``rows`` in ``[lo, hi)``, repeats allowed) with ``a`` its
        view of ``alpha``; ``run(seg, a_seg, seq)`` takes the local steps on
        the gathered :class:`~daskdca.partitions.Rows` ``seg`` with duals
        ``a_seg`` (updated in place), visiting ``seq``.
    ctx : RoundContext
        The round's ``random_state``, ``round`` and ``partition``.
    loss : Loss
        The problem's loss (gap sums).
    window : int
        Blocks held at once, at least 2 (1 is :func:`sweep_blocks_problems`).
    xts : list or None, default=None
        As :func:`sweep_blocks_problems`: ``X^T alpha`` of the starting
        duals, added as each block is read (before any of its chunks runs).

    Returns
    -------
    list of tuple
        ``(loss_sum, conj_sum, n_steps)`` per problem.
    """
    kind, param = int(loss.kind), loss.param
    sums = [[0.0, 0.0, 0] for _ in problems]
    nb = len(part.block_starts) - 1
    block_order = permutation_order(ctx.random_state, ctx.round, ctx.partition, nb, nb, 0)
    n_segments = nb + window - 1
    segments = [[[] for _ in range(n_segments)] for _ in problems]  # the _Chunks per problem and segment
    rings = [[_SegmentBuffer(window) for _ in range(window)] for _ in problems]  # segment s gathers into s % window
    xts = [None] * len(problems) if xts is None else xts
    for p, (j, (blk, lo, hi, start)) in enumerate(zip(block_order, part.pieces(block_order))):
        stream = ctx.partition if nb == 1 else _block_stream(ctx.partition, int(j))
        for total, pending, ring, xt, (rows_of, alpha, w, plan_block, run) in zip(sums, segments, rings, xts,
                                                                                   problems):
            rows = blk if rows_of is None else rows_of(blk)
            a = row_view(alpha, rows, lo, start)
            ls, cs = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, a, w, lo, hi, kind,
                                    param)
            total[0], total[1] = total[0] + ls, total[1] + cs
            _start_xt(xt, rows, a, lo, hi)
            visits = plan_block(rows, lo, hi, a, stream)
            total[2] += visits.shape[0]
            ring[(p + window - 1) % window].clear()  # segment p + window - 1 starts here (its slot held p - 1)
            for c, chunk in enumerate(np.array_split(visits, window)):
                pending[p + c].append(_chunk(rows, a, chunk, ring[(p + c) % window]))
            _run_segment(pending[p], ring[p % window], run, ctx, p)
            pending[p] = None
    for s in range(nb, n_segments):
        for pending, ring, problem in zip(segments, rings, problems):
            _run_segment(pending[s], ring[s % window], problem[4], ctx, s)
            pending[s] = None
    return [tuple(total) for total in sums]


class _SegmentBuffer:
    """The CSR arrays one segment of :func:`sweep_window` is gathered into, chunk after chunk as its blocks are
    read, kept for the segment ``window`` places later (grown when a segment needs more): each row is copied
    once, out of its block while the block is hot in the cache, and fresh arrays for every chunk would cost
    their page faults again."""

    def __init__(self, window):
        self.window = window  # chunks a segment takes: a fresh buffer makes room for that many of its first
        self.indptr = np.zeros(1, dtype=np.int64)
        self.indices = self.data = None
        self.n_rows = self.nnz = self.n_features = 0

    def clear(self):
        self.n_rows = self.nnz = 0

    def _reserve(self, n_rows, nnz, indices_dtype, data_dtype):
        if self.indptr.shape[0] < n_rows + 1:
            grown = np.zeros(max(n_rows + 1, 2 * self.indptr.shape[0], self.window * n_rows + 1), dtype=np.int64)
            grown[:self.n_rows + 1] = self.indptr[:self.n_rows + 1]
            self.indptr = grown
        if self.indices is None or self.indices.dtype != indices_dtype or self.data.dtype != data_dtype:
            size = nnz if self.nnz else self.window * nnz
            indices, data = np.empty(size, dtype=indices_dtype), np.empty(size, dtype=data_dtype)
            if self.nnz:  # the blocks of one partition share their dtypes; kept exact should they not
                indices[:self.nnz], data[:self.nnz] = self.indices[:self.nnz], self.data[:self.nnz]
            self.indices, self.data = indices, data
        elif self.indices.shape[0] < nnz:
            size = max(nnz, 2 * self.indices.shape[0])
            indices, data = np.empty(size, dtype=indices_dtype), np.empty(size, dtype=data_dtype)
            indices[:self.nnz], data[:self.nnz] = self.indices[:self.nnz], self.data[:self.nnz]
            self.indices, self.data = indices, data

    def append(self, rows, unique):
        """Copy the CSR rows ``unique`` of ``rows`` (in that order) after the rows already here."""
        added = int((rows.indptr[unique + 1] - rows.indptr[unique]).sum())
        self.n_features = rows.n_features
        self._reserve(self.n_rows + unique.shape[0], self.nnz + added, rows.indices.dtype, rows.data.dtype)
        self.indptr[self.n_rows] = self.nnz
        self.nnz = int(gather_rows(rows.indptr, rows.indices, rows.data, unique, self.indptr, self.indices,
                                   self.data, self.n_rows))
        self.n_rows += unique.shape[0]


class _Chunk(NamedTuple):
    """A chunk of :func:`sweep_window`: the distinct rows ``unique`` of one block's chunk of visits (their
    CSR entries copied into the segment's :class:`_SegmentBuffer` while the block is hot in the cache; their
    labels, norms and weights here), the block's duals ``a`` and the visits as positions in ``unique``
    (``visits``)."""

    y: np.ndarray
    sqnorm: np.ndarray
    weight: np.ndarray
    a: np.ndarray
    unique: np.ndarray
    visits: np.ndarray


def _distinct(visits):
    """``numpy.unique(visits, return_inverse=True)``, without its second sort when no row repeats (a
    permutation's chunk, the usual case)."""
    order = np.argsort(visits)
    unique = visits[order]
    if unique.shape[0] > 1 and not (unique[1:] > unique[:-1]).all():
        found, inverse = np.unique(visits, return_inverse=True)
        return found, inverse.ravel()
    inverse = np.empty(visits.shape[0], dtype=np.intp)
    inverse[order] = np.arange(visits.shape[0])
    return unique, inverse


def _chunk(rows, a, visits, buffer):
    """Copy the rows ``visits`` touch (once each, in row order) out of ``rows`` into ``buffer``; their
    :class:`_Chunk`."""
    unique, inverse = _distinct(visits)
    buffer.append(rows, unique)
    weight = rows.weight[unique] if rows.weight.shape[0] else UNWEIGHTED
    return _Chunk(rows.y[unique], rows.sqnorm[unique], weight, a, unique, inverse)


def _run_segment(chunks, buffer, run, ctx, s):
    """Segment ``s`` of :func:`sweep_window`: its chunks, laid end to end in ``buffer``, visited in one random
    order of the segment's stream; the duals go back to their blocks after."""
    chunks = [c for c in chunks if c.visits.shape[0]]  # an empty chunk copied no row
    if not chunks:
        return
    seq, row = [], 0
    for c in chunks:
        seq.append(c.visits + row)
        row += c.unique.shape[0]
    weighted = chunks[0].weight.shape[0] > 0
    seg = Rows(buffer.indptr[:buffer.n_rows + 1], buffer.indices[:buffer.nnz], buffer.data[:buffer.nnz],
               np.concatenate([c.y for c in chunks]), np.concatenate([c.sqnorm for c in chunks]),
               buffer.n_features,
               np.concatenate([c.weight for c in chunks]) if weighted else UNWEIGHTED)
    a_seg = np.concatenate([c.a[c.unique] for c in chunks])
    seq = np.concatenate(seq)
    seq = seq[permutation_order(ctx.random_state, ctx.round, _segment_stream(ctx.partition, s), seq.shape[0],
                                seq.shape[0], 0)]
    run(seg, a_seg, seq)
    row = 0
    for c in chunks:
        c.a[c.unique] = a_seg[row:row + c.unique.shape[0]]
        row += c.unique.shape[0]


class DualPlan(PlanBase):
    """A dual method's plan: ``alpha = 0`` and ``w = 0`` to start, ``alpha`` itself certifies."""

    def init_global(self):
        return DualGlobal(np.zeros(self.d))

    def init_local(self, part, ctx):
        return DualLocal(np.zeros(part.n_rows))

    def dual_point(self, part, local, state):
        return local.alpha

    def combine(self, state, total, ctx):
        """``w += sum_k delta_w_k`` (one partition: the new ``w``); the gap of the round's start.

        The adding combine of CoCoA+ and of the methods that run on its
        subproblems (SDNA); ``total.scalars`` is ``(loss_sum, conj_sum,
        steps)`` of the partitions' local steps.
        """
        w = state.w
        new_w = dense(total.vector, self.d).copy() if self.n_partitions == 1 else apply_vector(w, total.vector)
        loss_sum, conj_sum, steps = total.scalars
        reg = 0.5 * self.lam_n / self.n * float(w @ w)
        report = RoundReport(True, loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))
        return DualGlobal(new_w), report

