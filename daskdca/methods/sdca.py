"""Serial SDCA and CoCoA+: sequential dual coordinate steps on each partition.

Both maximise the dual

    D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2,   w(alpha) = X^T alpha / (lam n)

of ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``.  Each round, every
partition k runs ``local_iters * n_k`` closed-form coordinate steps on its
local subproblem ``G_k^{sigma'}`` (spec ``minibatch-sdca.md`` §A6): margins
from ``u = w + sigma' delta_w_k``, curvature ``sigma' ||x_i||^2 / (lam n)``;
then ``w += sum_k delta_w_k``.  CoCoA+ with the adding aggregation is safe on
any data with ``sigma' = K`` (Ma et al. 2015, arXiv:1502.03508, §3, gamma = 1);
with one partition ``sigma' = 1`` and the round is an epoch of serial SDCA
(Shalev-Shwartz & Zhang, JMLR 2013), i.e. LIBLINEAR's dual coordinate descent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels.sampling import iid_order, permutation_order
from daskdca.kernels.sdca import local_sdca, movable_rows, objective_sums, objective_sums_movable
from daskdca.losses import LOSSES
from daskdca.methods.base import (
    Capabilities,
    Contribution,
    Phase,
    RoundReport,
    apply_vector,
    check_local_iters,
    compress,
    dense,
)
from daskdca.partitions import row_view

__all__ = ["SDCA", "CoCoAPlus", "DualGlobal", "DualLocal", "LocalSDCAPlan"]

_SAMPLINGS = ("permutation", "iid")


class DualGlobal(NamedTuple):
    """Global state of the dual methods: ``w = X^T alpha / (lam n)`` (up to rounding)."""

    w: np.ndarray


class DualLocal(NamedTuple):
    """Local state of a partition: its dual variables, in the partition's row order."""

    alpha: np.ndarray


def _block_stream(partition, j):
    """Stream id of block ``j`` of an out-of-core partition; never a partition id (bit 62 set)."""
    return (1 << 62) | (partition << 31) | j


def _check(local_iters, sampling, shrinking):
    check_local_iters(local_iters)
    if sampling not in _SAMPLINGS:
        raise ValueError(f"Unknown sampling {sampling!r}; use one of {list(_SAMPLINGS)}.")
    if not isinstance(shrinking, bool):
        raise ValueError(f"shrinking must be True or False, got {shrinking!r}.")


@dataclass(frozen=True)
class CoCoAPlus:
    """CoCoA+ rounds with the adding aggregation (Ma et al. 2015, arXiv:1502.03508).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` through its dual.
    Each round every partition runs ``local_iters * n_k`` sequential SDCA
    steps on its local subproblem with ``sigma' = K`` (the number of
    partitions); then ``w += sum_k delta_w_k``.

    Parameters
    ----------
    local_iters : float, default=1.0
        Local steps per round, in multiples of the partition's rows (H / n_k).
    sampling : {"permutation", "iid"}, default="permutation"
        A fresh random permutation for every pass, or rows drawn with replacement.
    shrinking : bool, default=True
        Each round, visit only the rows whose step at the round's ``w`` is
        non-zero (LIBLINEAR's shrinking, Hsieh et al. 2008 §3.2).  Only
        hinge-type losses have such rows.
    """

    local_iters: float = 1.0
    sampling: str = "permutation"
    shrinking: bool = True
    name = "cocoa+"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=True, cluster=True, shrinking=True)

    def __post_init__(self):
        _check(self.local_iters, self.sampling, self.shrinking)

    def setup(self, info, ops):
        """The plan for this data: ``sigma' = K`` (adding, gamma = 1; Ma et al. 2015 §3)."""
        return LocalSDCAPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                             n_partitions=info.n_partitions, sigma_prime=float(info.n_partitions))


@dataclass(frozen=True)
class SDCA(CoCoAPlus):
    """Serial SDCA (Shalev-Shwartz & Zhang, JMLR 2013), LIBLINEAR-style dual coordinate descent.

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` by maximising its
    dual one coordinate at a time, in closed form, on one partition.  One
    round takes ``local_iters * n`` coordinate steps.  The parameters are
    those of :class:`CoCoAPlus`; with one partition the two are the same
    method (``sigma' = 1``).
    """

    name = "sdca"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=False, cluster=False, shrinking=True)


@dataclass(frozen=True)
class LocalSDCAPlan:
    """:class:`CoCoAPlus` resolved for one data set (``sigma'``, sizes)."""

    settings: CoCoAPlus
    loss: object
    n: int
    d: int
    lam_n: float
    n_partitions: int
    sigma_prime: float
    eval_every: int = 1
    rounds_per_epoch: int = 1
    primal_from_dual = True

    @property
    def name(self):
        return self.settings.name

    def measures(self, round_index):
        return True

    def init_global(self):
        return DualGlobal(np.zeros(self.d))

    def init_local(self, part, ctx):
        return DualLocal(np.zeros(part.n_rows))

    def phases(self):
        return (Phase("round", self.local, self.combine),)

    def model(self, state):
        return state.w

    def dual_point(self, part, local, state):
        return local.alpha

    def _order(self, n_rows, rows_to_visit, ctx, stream):
        """Rows of one sweep: ``local_iters * n_rows`` draws from ``rows_to_visit`` (None: all)."""
        s = self.settings
        n_steps = max(1, int(math.ceil(s.local_iters * n_rows)))
        draw = permutation_order if s.sampling == "permutation" else iid_order
        if rows_to_visit is None:
            return draw(ctx.random_state, ctx.round, stream, n_rows, n_steps, 0)
        if rows_to_visit.size == 0:
            return rows_to_visit
        return rows_to_visit[draw(ctx.random_state, ctx.round, stream, rows_to_visit.size, n_steps, 0)]

    def local(self, part, local, state, ctx):
        """One round on one partition: gap sums at the round's start, then the local steps.

        Held in memory, the partition's rows are swept with one permutation
        from the stream ``(random_state, round, partition)``; the gap sums and
        the shrinking test share one pass (both need every margin at ``w``).
        Out of core, the blocks are visited in a seeded random order, each
        with its own permutation, carrying ``u = w + sigma' delta_w`` from one
        block to the next.  With one partition the contribution is the new
        ``w`` itself (no ``delta_w`` to track); otherwise ``delta_w_k``.
        """
        loss, w = self.loss, state.w
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds
        alpha = local.alpha.copy()
        u = w.copy()
        single = self.n_partitions == 1
        delta_w = np.empty(0) if single else np.zeros_like(w)
        rows = part.whole()
        if rows is not None:
            if shrink:
                loss_sum, conj_sum, visit = objective_sums_movable(
                    rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm, alpha, w, 0, rows.n_rows,
                    kind, param, self.lam_n, self.sigma_prime)
            else:
                loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, alpha, w, 0,
                                                    rows.n_rows, kind, param)
                visit = None
            order = self._order(rows.n_rows, visit, ctx, ctx.partition)
            local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm, alpha, u, delta_w, order,
                       kind, param, self.lam_n, self.sigma_prime, not single)
            n_steps = order.shape[0]
        else:
            # Out of core a block is read when its turn comes.  Sweeping block
            # after block converges more slowly than one permutation of the
            # whole partition (a9a, logistic, lam 1e-3, one partition of 2
            # blocks: relative gap 5e-4 after 6 epochs against 2e-8;
            # benchmarks/RESULTS.md, engine section).
            loss_sum = conj_sum = 0.0
            n_steps = 0
            nb = len(part.block_starts) - 1
            block_order = permutation_order(ctx.random_state, ctx.round, ctx.partition, nb, nb, 0)
            for j, (blk, lo, hi, start) in zip(block_order, part.pieces(block_order)):
                a = row_view(alpha, blk, lo, start)
                ls, cs = objective_sums(blk.indptr, blk.indices, blk.data, blk.y, a, w, lo, hi, kind, param)
                loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
                visit = (movable_rows(blk.indptr, blk.indices, blk.data, blk.y, blk.sqnorm, a, u, lo, hi, kind,
                                      param, self.lam_n, self.sigma_prime) if shrink else None)
                # a one-block partition uses the partition's stream, as in memory
                order = self._order(hi - lo, visit, ctx, ctx.partition if nb == 1 else _block_stream(ctx.partition,
                                                                                                      int(j)))
                if visit is None:
                    order = order + lo  # store pieces start at lo = 0; kept general
                local_sdca(blk.indptr, blk.indices, blk.data, blk.y, blk.sqnorm, a, u, delta_w, order,
                           kind, param, self.lam_n, self.sigma_prime, not single)
                n_steps += order.shape[0]
        vector = u if single else compress(delta_w)
        return DualLocal(alpha), Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]))

    def combine(self, state, total, ctx):
        """``w += sum_k delta_w_k`` (one partition: the new ``w``); the gap of the round's start."""
        w = state.w
        new_w = dense(total.vector, self.d).copy() if self.n_partitions == 1 else apply_vector(w, total.vector)
        loss_sum, conj_sum, steps = total.scalars
        reg = 0.5 * self.lam_n / self.n * float(w @ w)
        report = RoundReport(True, loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))
        return DualGlobal(new_w), report
