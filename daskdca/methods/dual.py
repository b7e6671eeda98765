"""What every dual plan shares: the states ``w`` and ``alpha``, the out-of-core block sweep, the adding combine.

The dual methods (CoCoA+ with any local solver, SDNA, Catalyst's proximal
rounds, mini-batch SDCA's global state) keep ``w = X^T alpha / (lam n)`` as
their global state and the duals ``alpha`` of a partition as its local
state; :func:`sweep_blocks` visits an out-of-core partition's blocks in a
seeded random order for their local solvers, and :class:`DualPlan` is the
plan they start from (zero duals, ``alpha`` as the dual point, ``w += sum_k
delta_w_k``).  This module imports only :mod:`daskdca.methods.base`, the
kernels and the partitions, so every method module can build on it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from daskdca.kernels.sampling import permutation_order
from daskdca.kernels.sdca import objective_sums
from daskdca.methods.base import PlanBase, RoundReport, apply_vector, dense
from daskdca.partitions import row_view

__all__ = ["DualGlobal", "DualLocal", "DualPlan", "sweep_blocks", "sweep_blocks_problems"]


class DualGlobal(NamedTuple):
    """Global state of the dual methods: ``w = X^T alpha / (lam n)`` (up to rounding)."""

    w: np.ndarray


class DualLocal(NamedTuple):
    """Local state of a partition: its dual variables, in the partition's row order."""

    alpha: np.ndarray


def _block_stream(partition, j):
    """Stream id of block ``j`` of an out-of-core partition; never a partition id (bit 62 set)."""
    return (1 << 62) | (partition << 31) | j


def sweep_blocks(part, alpha, w, ctx, loss, step):
    """Out of core: every block of ``part`` in a seeded random order, gap sums at ``w``, then ``step``.

    ``step(blk, lo, hi, a, stream) -> n_steps`` runs a local solver on the
    block's rows ``[lo, hi)`` with ``a`` its view of ``alpha``; a one-block
    partition uses the partition's stream (so it gives the in-memory bits).
    Returns ``(loss_sum, conj_sum, n_steps)``.
    """
    return sweep_blocks_problems(part, [(None, alpha, w, step)], ctx, loss)[0]


def sweep_blocks_problems(part, problems, ctx, loss):
    """:func:`sweep_blocks` for several problems on the same rows, each block read once.

    ``problems`` holds ``(rows_of, alpha, w, step)`` per problem:
    ``rows_of(blk)`` is the problem's rows of a block as read (None: the
    block itself), e.g. :func:`~daskdca.partitions.binary_rows` for a
    one-vs-rest problem.  Each problem sees the same blocks in the same
    order, and the same arithmetic, as its own :func:`sweep_blocks`.
    Returns ``(loss_sum, conj_sum, n_steps)`` per problem.
    """
    kind, param = int(loss.kind), loss.param
    sums = [[0.0, 0.0, 0] for _ in problems]
    nb = len(part.block_starts) - 1
    block_order = permutation_order(ctx.random_state, ctx.round, ctx.partition, nb, nb, 0)
    for j, (blk, lo, hi, start) in zip(block_order, part.pieces(block_order)):
        stream = ctx.partition if nb == 1 else _block_stream(ctx.partition, int(j))
        for total, (rows_of, alpha, w, step) in zip(sums, problems):
            rows = blk if rows_of is None else rows_of(blk)
            a = row_view(alpha, rows, lo, start)
            ls, cs = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, a, w, lo, hi, kind,
                                    param)
            total[0], total[1] = total[0] + ls, total[1] + cs
            total[2] += step(rows, lo, hi, a, stream)
    return [tuple(total) for total in sums]


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

