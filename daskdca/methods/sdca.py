"""Serial SDCA and CoCoA+: sequential dual coordinate steps on each partition.

Both maximise the dual

    D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2,   w(alpha) = X^T alpha / (lam n)

of ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``.  Each round, every
partition k runs ``local_iters * n_k`` closed-form coordinate steps on its
local subproblem ``G_k^{sigma'}`` (docs/references.md, note N5): margins
from ``u = w + sigma' delta_w_k``, curvature ``sigma' ||x_i||^2 / (lam n)``;
then ``w += sum_k delta_w_k``.  CoCoA+ with the adding aggregation is safe on
any data with ``sigma' = K`` (Ma et al. 2015, arXiv:1502.03508, §3, gamma = 1);
with one partition ``sigma' = 1`` and the round is an epoch of serial SDCA
(Shalev-Shwartz & Zhang, JMLR 2013), i.e. LIBLINEAR's dual coordinate descent.

The settings, :class:`~daskdca.methods.cocoa.SDCA` and
:class:`~daskdca.methods.cocoa.CoCoAPlus`, live in :mod:`daskdca.methods.cocoa`;
this module holds the plans of the SDCA local solver: :class:`LocalSDCAPlan`,
the line search's :class:`LineSearchPlan`, the momentum search's
:class:`MomentumPlan`, and :class:`ProxSDCAPlan`, the proximal steps of the
elastic net (``l1_ratio > 0``).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np

from daskdca.kernels.prox_sdca import prox_local_sdca, soft_threshold_vector
from daskdca.kernels.sampling import iid_order, permutation_order, sub_block_stream
from daskdca.kernels.sdca import (
    line_conjugate_sums,
    local_sdca,
    movable_rows,
    movable_sdca,
    objective_sums,
    objective_sums_movable,
    plane_conjugate_sums,
    sub_block_bounds,
    threaded_line_search_sdca,
    threaded_local_sdca,
)
from daskdca.methods.base import Contribution, RoundReport, apply_vector, compress, current_thread_budget, dense
from daskdca.methods.dual import DualLocal, DualPlan, sweep_blocks, sweep_blocks_problems, sweep_window
from daskdca.partitions import binary_rows, xt_alpha_part
from daskdca.problem import dual_value, primal_value

__all__ = ["L1_MU_SCALE", "LINE_SEARCH_STEPS", "MOMENTUM_STEPS", "L1Global", "L1ContinuationPlan", "LineSearchGlobal",
           "LineSearchPlan", "LocalSDCAPlan", "MomentumGlobal", "MomentumLocal", "MomentumPlan", "PendingLocal",
           "ProxGlobal", "ProxSDCAPlan", "l1_default_mu0", "l1_dual_scale", "line_search_steps"]

# Candidate steps of the line search along the summed direction: t = j / 8 for
# j = 1..8, and 1/K (averaging, the safe step) whatever K is.
LINE_SEARCH_STEPS = tuple(j / 8 for j in range(1, 9))

#: Candidates ``(a, b)`` of the momentum search (:class:`MomentumPlan`): the move
#: ``a Delta alpha + b M`` of a round, ``Delta alpha`` the round's local steps and
#: ``M`` the last round's move (Polyak's heavy ball, "Some methods of speeding up the
#: convergence of iteration methods", USSR Comput. Math. Math. Phys. 4(5), 1964, with
#: its two weights chosen each round by the dual).  ``(1, 0)`` is CoCoA+'s own step.
#: Measured, not derived: on a9a and ijcnn1 (logistic, lam 1e-5, K = 2, inside Catalyst,
#: to a certified 1e-6) these three took 265 and 67 rounds, as many as with ``(2, 0)``
#: added and as 3 x 3 and 4 x 4 grids of ``a`` up to 3 and ``b`` up to 1.5 (243-276 and
#: 67), against 691 and 158 without the search and 295 and 79 with ``(1, 0), (2, 1)``
#: alone; each candidate costs a conjugate sum a row (benchmarks/RESULTS.md, "CoCoA+
#: rounds with a momentum search").
MOMENTUM_STEPS = ((1.0, 0.0), (1.0, 1.0), (2.0, 1.0))


def line_search_steps(parts):
    """The line search's candidates for a direction summed over ``parts`` parts, ascending.

    :data:`LINE_SEARCH_STEPS` and ``1 / parts`` (averaging, which never
    lowers the dual: Ma et al. 2015 [MSJ+15] §3, ``gamma = 1/K`` with
    ``sigma' = 1``).

    Parameters
    ----------
    parts : int
        The partitions (:class:`LineSearchPlan`) or a partition's sub-blocks
        (``CoCoAPlus(threads=T, inner_aggregation="line_search")``).

    Returns
    -------
    ndarray
        The distinct candidates, ascending; the last is 1.
    """
    return np.unique(np.array(LINE_SEARCH_STEPS + (1.0 / parts,)))


_GAP_THREAD = [None, None]  # (pid, executor): the thread of the overlapped gap sums, one per process

#: The fewest stored values of a partition whose gap sums go to the second core (:func:`gap_thread`): below it
#: the hand-off costs more than the sums (serial SDCA, logistic, on a9a's first rows with 2 threads against 1:
#: 1.24-1.90x the time at 4,160-8,307 values, 0.97-1.17x at 13,858, 0.94-0.96x at 16,624, 0.83-0.96x from 20,781;
#: benchmarks/RESULTS.md, "The gap thread on small data").
GAP_THREAD_MIN_NNZ = 16_384

#: Serial SDCA with shrinking ends a round's passes over the movable rows once a pass's gap terms sum to at most
#: this share of theirs at the round's start (:func:`~daskdca.kernels.sdca.movable_sdca`).  Measured, not derived:
#: on the hinge loss (a9a, w8a, ijcnn1, reuters; lam 1e-3 to 1e-5; to a certified 1e-4 and 1e-6) the default fit
#: took 0.23-0.87x its time where the test ends rounds and 0.98-1.03x where it never does; in a prototype 0.1
#: was more than 5% faster on 9 of 16 cells at lam 1e-3 and 1e-4 and took 3.1x the time on reuters at lam 1e-4 to 1e-6
#: (benchmarks/RESULTS.md, "Hinge: ending a round's passes over the movable rows").
MOVABLE_GAP_SHARE = 0.03


def spare_core():
    """Whether this step may use a second core: its thread budget
    (:func:`~daskdca.methods.base.current_thread_budget`: its share of the fit's ``n_jobs`` in this process or of
    its worker's threads, else the cores this process may use) is at least 2."""
    return current_thread_budget() >= 2


def gap_thread():
    """The one thread (of this process) that computes serial SDCA's gap sums while its steps run, in memory and
    without shrinking (:meth:`LocalSDCAPlan._sweep`); both kernels release the interpreter.  Out of core the
    second core reads the next block ahead, and the sums there run with the steps (benchmarks/RESULTS.md,
    "Serial SDCA's gap sums on a second core")."""
    if _GAP_THREAD[0] != os.getpid():
        _GAP_THREAD[0], _GAP_THREAD[1] = os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="daskdca-gap")
    return _GAP_THREAD[1]


@dataclass(frozen=True)
class LocalSDCAPlan(DualPlan):
    """:class:`CoCoAPlus` resolved for one data set (``sigma'``, sizes)."""

    settings: object  # the CoCoAPlus (or SDCA) settings, daskdca.methods.cocoa
    loss: object
    n: int
    d: int
    lam_n: float
    n_partitions: int
    sigma_prime: float
    eval_every: int = 1
    rounds_per_epoch: float = 1.0
    # The plan of the problem itself (not Catalyst's proximal one): out of core, a round's report certifies
    # its starting state exactly (combine), and the driver certifies the state without reading the data again.
    certifies_rounds: bool = False
    # Serial SDCA may end a round's passes over the movable rows early (_ends_passes_early); not inside
    # Catalyst, whose outer steps each take one round of the inner plan as their fixed budget (reuters, hinge,
    # lam 1e-5 to 1e-6: 193 rounds with the early end against 138 without, benchmarks/RESULTS.md, "Hinge:
    # ending a round's passes over the movable rows").
    ends_passes_early: bool = True
    primal_from_dual = True

    def _order(self, n_rows, rows_to_visit, ctx, stream, row_offset=0):
        """Rows of one sweep: ``local_iters * n_rows`` draws from ``rows_to_visit`` (None: all, shifted by
        ``row_offset``)."""
        s = self.settings
        n_steps = max(1, int(math.ceil(s.local_iters * n_rows)))
        draw = permutation_order if s.sampling == "permutation" else iid_order
        if rows_to_visit is None:
            return draw(ctx.random_state, ctx.round, stream, n_rows, n_steps, row_offset)
        if rows_to_visit.size == 0:
            return rows_to_visit
        return rows_to_visit[draw(ctx.random_state, ctx.round, stream, rows_to_visit.size, n_steps, 0)]

    def local(self, part, local, state, ctx):
        """One round on one partition: gap sums at the round's start, then the local steps.

        With one partition the contribution is the new ``w`` itself (no
        ``delta_w`` to track); otherwise ``delta_w_k``.
        """
        alpha = local.alpha.copy()
        # out of core, X^T alpha of the starting duals comes with the gap sums, block by block (combine)
        xt = np.zeros(self.d) if self.certifies_rounds and part.whole() is None else None
        sums = self._sweep(part, alpha, state.w, ctx, track=self._tracks(), xt=xt)
        return DualLocal(alpha), self._contribution(*sums, xt=xt)

    def combine(self, state, total, ctx):
        """:meth:`DualPlan.combine`; out of core (every partition's ``X_k^T alpha_k`` of the round's start among
        ``total.gathered``, :attr:`certifies_rounds`), the report's dual is ``D(alpha)`` with
        ``w(alpha) = X^T alpha / (lam n)`` rebuilt from them, so ``P(w) - D(alpha)`` certifies the round's
        starting state ``(w, alpha)`` as :meth:`daskdca.driver.InProcess.certify` would, with ``P`` at the
        state's own ``w`` (``RoundReport.certified``)."""
        new_state, report = super().combine(state, total, ctx)
        return new_state, self._certified(report, state, total)

    def _certified(self, report, state, total):
        """Out of core, ``report`` with ``P(w) - D(alpha)`` of the round's start rebuilt from every partition's
        ``X_k^T alpha_k`` (:meth:`combine`); else ``report`` itself."""
        if not self.certifies_rounds or len(total.gathered) != self.n_partitions:
            return report
        w_alpha = total.gathered[0].copy()
        for xt in total.gathered[1:]:  # in partition order
            w_alpha += xt
        w_alpha /= self.lam_n
        lam = self.lam_n / self.n
        primal = primal_value(self.n, lam, total.scalars[0], state.w)
        dual = dual_value(self.n, lam, total.scalars[1], w_alpha)
        return report._replace(primal=primal, dual=dual, certified=True)

    def _tracks(self):
        """Whether the local steps keep ``delta_w`` (with one partition the new ``w`` is the contribution)."""
        return self.n_partitions > 1

    def _contribution(self, loss_sum, conj_sum, n_steps, u, delta_w, xt=None):
        vector = compress(delta_w) if self._tracks() else u
        return Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]), () if xt is None else (xt,))

    def local_problems(self, views, locals_, states, ctx):
        """The round of every one-vs-rest problem of an out-of-core partition, each block read once.

        ``views`` are the problems' :class:`~daskdca.partitions.ClassView`
        of one partition; each problem gets the bits of :meth:`local` on its
        view (:func:`sweep_blocks_problems`).  Returns ``(local, contribution)``
        per problem; :class:`~daskdca.methods.multiclass.OneVsRestPlan` calls it
        for partitions left in the store.
        """
        track = self._tracks()
        alphas = [local.alpha.copy() for local in locals_]
        vectors = [self._start_vectors(state.w, track) for state in states]
        # X^T alpha of each problem's starting duals, as :meth:`local` gathers it out of core (certifies_rounds)
        xts = [np.zeros(self.d) if self.certifies_rounds else None for _ in views]
        problems = [(partial(binary_rows, label=view.label, positive_weight=view.positive_weight), alpha, state.w,
                     self._block_step(u, delta_w, ctx, track))
                    for view, alpha, state, (u, delta_w) in zip(views, alphas, states, vectors)]
        window = self._window()
        if window > 1 and len(views[0].part.block_starts) > 2:
            problems = [(rows_of, alpha, w, self._block_visits(u, ctx), self._segment_steps(u, delta_w, track))
                        for (rows_of, alpha, w, _), (u, delta_w) in zip(problems, vectors)]
            sums = sweep_window(views[0].part, problems, ctx, self.loss, window, xts=xts)
        else:
            sums = sweep_blocks_problems(views[0].part, problems, ctx, self.loss, xts=xts)
        return [(DualLocal(alpha), self._contribution(*total, u, delta_w, xt=xt))
                for alpha, total, (u, delta_w), xt in zip(alphas, sums, vectors, xts)]

    @staticmethod
    def _start_vectors(w, track):
        """``u = w`` and ``delta_w = 0`` (empty when not tracked) at the start of a sweep."""
        return w.copy(), (np.zeros_like(w) if track else np.empty(0))

    def _window(self):
        """Blocks an out-of-core sweep holds at once (:func:`~daskdca.methods.dual.sweep_window`); 1: block
        after block.  The settings' ``window_blocks`` (None: :data:`~daskdca.methods.cocoa.WINDOW_BLOCKS` for
        the one-thread SDCA local solver, else 1)."""
        return getattr(self.settings, "resolved_window_blocks", 1)

    def _block_visits(self, u, ctx):
        """``plan_block`` of :func:`~daskdca.methods.dual.sweep_window`: a block's movable rows at ``u`` when
        it is read (shrinking), in the order :meth:`_order` draws from the block's stream."""
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds

        def plan_block(blk, lo, hi, a, stream):
            visit = (movable_rows(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, u, lo, hi, kind,
                                  param, self.lam_n, self.sigma_prime) if shrink else None)
            order = self._order(hi - lo, visit, ctx, stream)
            return order + lo if visit is None else order

        return plan_block

    def _segment_steps(self, u, delta_w, track):
        """``run`` of :func:`~daskdca.methods.dual.sweep_window`: the local steps on a gathered segment,
        carrying ``u`` and ``delta_w`` from segment to segment."""
        kind, param = int(self.loss.kind), self.loss.param

        def run(seg, a_seg, seq):
            local_sdca(seg.indptr, seg.indices, seg.data, seg.y, seg.weight, seg.sqnorm, a_seg, u, delta_w, seq,
                       kind, param, self.lam_n, self.sigma_prime, track)

        return run

    def _block_step(self, u, delta_w, ctx, track):
        """The out-of-core step of :func:`sweep_blocks`: the block's movable rows (shrinking), one
        permutation, the local steps on ``u`` and ``delta_w`` (carried from block to block)."""
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds

        def step(blk, lo, hi, a, stream):
            if self.settings.threads > 1:
                return self._threaded_steps(blk, lo, hi, a, u, u, delta_w, ctx, stream, track, sums=False)[2]
            visit = (movable_rows(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, u, lo, hi, kind,
                                  param, self.lam_n, self.sigma_prime) if shrink else None)
            order = self._order(hi - lo, visit, ctx, stream)
            if visit is None:
                order = order + lo  # store pieces start at lo = 0; kept general
            local_sdca(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, u, delta_w, order,
                       kind, param, self.lam_n, self.sigma_prime, track)
            return order.shape[0]

        return step

    def _sweep(self, part, alpha, w, ctx, *, track, xt=None):
        """Gap sums at ``(w, alpha)``, then the round's local steps on ``alpha`` (in place).

        Returns ``(loss_sum, conj_sum, n_steps, u, delta_w)`` with
        ``u = w + sigma' delta_w``.  Held in memory, the partition's rows are
        swept with one permutation from the stream ``(random_state, round,
        partition)``; the gap sums and the shrinking test share one pass (both
        need every margin at ``w``).  Out of core, the blocks are visited in a
        seeded random order, each with its own permutation, carrying ``u``
        from one block to the next; with ``xt`` (out of core), ``X^T alpha``
        of the starting duals is added to it as the blocks are read.
        """
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds
        u, delta_w = self._start_vectors(w, track)
        rows = part.whole()
        if rows is not None and self.settings.threads > 1:
            loss_sum, conj_sum, n_steps = self._threaded_steps(rows, 0, rows.n_rows, alpha, w, u, delta_w, ctx,
                                                               ctx.partition, track, sums=True)
            return loss_sum, conj_sum, n_steps, u, delta_w
        if rows is not None:
            # Serial SDCA without shrinking (the steps need no margins first) on a machine with a second core, with
            # values enough to pay the hand-off (GAP_THREAD_MIN_NNZ): the gap sums read the round's starting alpha
            # and w, the steps change alpha (and u, a copy of w), so on a copy of alpha the sums run on the second
            # core while the steps run here, with the same bits.
            overlap = (not shrink and self.n_partitions == 1 and rows.data.shape[0] >= GAP_THREAD_MIN_NNZ
                       and spare_core())
            sums, visit = None, None
            if shrink:
                loss_sum, conj_sum, visit, movable_gap = objective_sums_movable(
                    rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, w, 0, rows.n_rows,
                    kind, param, self.lam_n, self.sigma_prime)
            elif overlap:
                sums = gap_thread().submit(objective_sums, rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                            alpha.copy(), w, 0, rows.n_rows, kind, param)
            else:
                loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha,
                                                    w, 0, rows.n_rows, kind, param)
            order = self._order(rows.n_rows, visit, ctx, ctx.partition)
            if self._ends_passes_early(visit, order, track):
                n_steps = movable_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha,
                                       u, order, visit.size, kind, param, self.lam_n, MOVABLE_GAP_SHARE * movable_gap)
            else:
                n_steps = local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, u,
                                     delta_w, order, kind, param, self.lam_n, self.sigma_prime, track)
            if sums is not None:
                loss_sum, conj_sum = sums.result()
            return loss_sum, conj_sum, n_steps, u, delta_w
        # Out of core a block is read when its turn comes.  Sweeping block
        # after block converges far more slowly than one permutation of the
        # whole partition; a sliding window of blocks whose rows are
        # interleaved (sweep_window) restores the whole sweep's passes.
        window = self._window()
        if window > 1 and len(part.block_starts) > 2:
            problem = (None, alpha, w, self._block_visits(u, ctx), self._segment_steps(u, delta_w, track))
            loss_sum, conj_sum, n_steps = sweep_window(part, [problem], ctx, loss, window,
                                                       xts=None if xt is None else [xt])[0]
            return loss_sum, conj_sum, n_steps, u, delta_w
        loss_sum, conj_sum, n_steps = sweep_blocks(part, alpha, w, ctx, loss, self._block_step(u, delta_w, ctx, track),
                                                   xt=xt)
        return loss_sum, conj_sum, n_steps, u, delta_w

    def _ends_passes_early(self, visit, order, track):
        """Whether serial SDCA's round may end its passes over the movable rows early
        (:func:`~daskdca.kernels.sdca.movable_sdca`): shrinking left at most half the rows movable (so the round
        makes at least two passes over them), one partition stepping on ``w`` itself (``sigma' = 1``),
        permutation sampling (each pass visits every movable row once), and not inside Catalyst
        (:attr:`ends_passes_early`)."""
        return (self.ends_passes_early and visit is not None and 0 < 2 * visit.size <= order.shape[0]
                and self.n_partitions == 1 and self.sigma_prime == 1.0 and not track
                and self.settings.sampling == "permutation")

    def _threaded_steps(self, rows, lo, hi, alpha, w, u, delta_w, ctx, stream, track, *, sums):
        """``CoCoAPlus(threads=T)``: rows ``[lo, hi)`` as ``T`` sub-blocks swept by ``T`` threads.

        Each sub-block ``b`` (contiguous, :func:`~daskdca.kernels.sdca.sub_block_bounds`)
        takes, in its own thread, its gap sums at ``w`` (with ``sums``; out of
        core :func:`~daskdca.methods.dual.sweep_blocks` took them), its
        movable rows at ``w`` (shrinking) and its order of the round, drawn
        as :meth:`_order` draws a partition's from the stream
        ``(random_state, round, sub_block_stream(stream, b))``; then
        :func:`~daskdca.kernels.sdca.threaded_local_sdca` runs the
        ``inner_rounds`` inner rounds (sub-block curvature ``sigma' T``), or
        with ``inner_aggregation="line_search"``
        :func:`~daskdca.kernels.sdca.threaded_line_search_sdca` (curvature
        ``sigma'``, a line search each inner round).  The sums are added in
        sub-block order.  Returns ``(loss_sum, conj_sum, n_steps)``;
        ``alpha``, ``u`` and ``delta_w`` change in place.
        """
        threads = self.settings.threads
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds
        line_search = self.settings.inner_aggregation == "line_search"
        # the shrinking test with the curvature of the steps (a zero step at a bound does not depend on it)
        sigma_sub = self.sigma_prime if line_search else self.sigma_prime * threads
        bounds = sub_block_bounds(lo, hi, threads)

        def prepare(b):
            first, stop = bounds[b], bounds[b + 1]
            loss_sum = conj_sum = 0.0
            visit = None
            if sums and shrink:
                loss_sum, conj_sum, visit, _ = objective_sums_movable(
                    rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, w, first, stop,
                    kind, param, self.lam_n, sigma_sub)
            elif sums:
                loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha,
                                                    w, first, stop, kind, param)
            elif shrink:
                visit = movable_rows(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, w,
                                     first, stop, kind, param, self.lam_n, sigma_sub)
            if stop == first:
                return loss_sum, conj_sum, np.empty(0, dtype=np.int64)
            return loss_sum, conj_sum, self._order(stop - first, visit, ctx, sub_block_stream(stream, b), first)

        with ThreadPoolExecutor(max_workers=threads - 1, thread_name_prefix="daskdca-sub-block") as executor:
            futures = [executor.submit(prepare, b) for b in range(1, threads)]
            prepared = [prepare(0)] + [future.result() for future in futures]
            orders = [order for _, _, order in prepared]
            if line_search:
                n_steps = threaded_line_search_sdca(
                    rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, u, delta_w, orders,
                    kind, param, self.lam_n, self.sigma_prime, self.settings.inner_rounds, track, executor,
                    line_search_steps(threads))
            else:
                n_steps = threaded_local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm,
                                              alpha, u, delta_w, orders, kind, param, self.lam_n, self.sigma_prime,
                                              self.settings.inner_rounds, track, executor)
        loss_sum = conj_sum = 0.0
        for part_loss, part_conj, _ in prepared:
            loss_sum, conj_sum = loss_sum + part_loss, conj_sum + part_conj
        return loss_sum, conj_sum, n_steps


class LineSearchGlobal(NamedTuple):
    """``w``, and the step ``t`` the last combine chose (partitions apply it to their pending steps)."""

    w: np.ndarray
    step: np.ndarray


class PendingLocal(NamedTuple):
    """A partition's duals and its last local direction, applied as ``alpha + t * pending``."""

    alpha: np.ndarray
    pending: np.ndarray


@dataclass(frozen=True)
class LineSearchPlan(LocalSDCAPlan):
    """CoCoA rounds with ``sigma' = 1`` local solves and a dual line search in the combine.

    The dual along the summed direction ``alpha + t Delta alpha`` is
    ``D(t) = -1/n sum_i phi_i*(-alpha_i - t Delta alpha_i) - lam/2 ||w + t Delta w||^2``:
    each partition returns its conjugate sums at the candidate steps, and
    ``||w + t Delta w||^2`` needs only ``w`` and ``Delta w``, which the combine
    has.  The chosen ``t`` reaches the partitions with the next round's
    ``w`` and is applied to their duals at its start.
    """

    # its round applies the last step first and returns line sums: a one-vs-rest fit runs :meth:`local` per problem
    local_problems = None

    def _steps(self):
        return line_search_steps(self.n_partitions)

    def init_global(self):
        return LineSearchGlobal(np.zeros(self.d), np.array(0.0))

    def init_local(self, part, ctx):
        return PendingLocal(np.zeros(part.n_rows), np.zeros(part.n_rows))

    def dual_point(self, part, local, state):
        return local.alpha + float(state.step) * local.pending

    def local(self, part, local, state, ctx):
        """Apply the last step, take the gap sums and the local steps, and the conjugate sums along the line."""
        alpha = local.alpha + float(state.step) * local.pending
        start = alpha.copy()
        loss_sum, conj_sum, n_steps, _, delta_w = self._sweep(part, alpha, state.w, ctx, track=True)
        direction = alpha - start
        y, weight = part.labels()  # out of core: the labels alone, not the blocks again
        line = line_conjugate_sums(y, weight, start, direction, self._steps(), int(self.loss.kind), self.loss.param)
        scalars = np.concatenate(([loss_sum, conj_sum, float(n_steps)], line))
        return PendingLocal(start, direction), Contribution(compress(delta_w), scalars)

    def combine(self, state, total, ctx):
        """The best ``t`` of the candidates for ``D(alpha + t Delta alpha)``; ``w += t Delta w``."""
        w = state.w
        delta = dense(total.vector, self.d)
        loss_sum, conj_sum, steps = total.scalars[:3]
        lam = self.lam_n / self.n
        ww, wd, dd = float(w @ w), float(w @ delta), float(delta @ delta)
        candidates = self._steps()
        duals = [-c / self.n - 0.5 * lam * (ww + 2 * t * wd + t * t * dd) for t, c in zip(candidates, total.scalars[3:])]
        t = float(candidates[int(np.argmax(duals))])
        reg = 0.5 * lam * ww
        report = RoundReport(True, loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))
        return LineSearchGlobal(apply_vector(w, total.vector, scale=t), np.array(t)), report


class MomentumGlobal(NamedTuple):
    """``w``, the last round's move of ``w`` and the weights ``(a, b)`` the last combine chose."""

    w: np.ndarray
    move: np.ndarray
    step: np.ndarray


class MomentumLocal(NamedTuple):
    """A partition's duals at the last round's start, that round's local direction and the move before it.

    The duals now are ``alpha + a * pending + b * move`` with the global ``(a, b)``.
    """

    alpha: np.ndarray
    pending: np.ndarray
    move: np.ndarray


@dataclass(frozen=True)
class MomentumPlan(LocalSDCAPlan):
    """CoCoA+ rounds (``sigma' = K``, adding) whose move is searched on the plane of the step and the last move.

    A round's local steps give ``Delta alpha`` (and ``Delta w``); the move is
    ``M = a Delta alpha + b M_prev`` with ``(a, b)`` the candidate of
    :data:`MOMENTUM_STEPS` that maximises the dual
    ``D(alpha + M) = -1/n sum_i phi_i*(-alpha_i - M_i) - lam/2 ||w + a Delta w + b m_prev||^2``
    (``m_prev = X^T M_prev / (lam n)``, the last move of ``w``): every
    partition returns its conjugate sums at the candidates
    (:func:`~daskdca.kernels.sdca.plane_conjugate_sums`) in the round's
    task, and the combine has ``w``, ``Delta w`` and ``m_prev``.  ``(1, 0)``
    is CoCoA+'s own step, so the dual never falls below it.  The chosen
    ``(a, b)`` reaches the partitions with the next round's ``w``; they move
    their duals at its start.  Where the partitions' dual errors cancel in
    ``w`` (rows sharing a common direction), each round's step moves along
    the same slow direction, which the last move carries on (benchmarks/RESULTS.md,
    "Why CoCoA+ rounds stall past 1e-4" and "CoCoA+ rounds with a momentum
    search").  Inside Catalyst (:class:`~daskdca.methods.catalyst.CatalystPlan`)
    the same search runs on each round's proximal problem.
    """

    def _tracks(self):
        """Always ``delta_w``, on one partition too: the search moves ``w`` by ``a Delta w + b m_prev``."""
        return True

    def init_global(self):
        return MomentumGlobal(np.zeros(self.d), np.zeros(self.d), np.zeros(2))

    def init_local(self, part, ctx):
        return MomentumLocal(np.zeros(part.n_rows), np.zeros(part.n_rows), np.zeros(part.n_rows))

    @staticmethod
    def _move(local, state):
        """The last combine's move of this partition's duals, ``a * pending + b * move``."""
        return float(state.step[0]) * local.pending + float(state.step[1]) * local.move

    def dual_point(self, part, local, state):
        return local.alpha + self._move(local, state)

    def local(self, part, local, state, ctx):
        """Move the duals by the last combine's choice, take the gap sums and the local steps, and the conjugate
        sums at the candidates."""
        move = self._move(local, state)
        alpha = local.alpha + move
        start = alpha.copy()
        xt = np.zeros(self.d) if self.certifies_rounds and part.whole() is None else None
        sums = self._sweep(part, alpha, state.w, ctx, track=True, xt=xt)
        direction = alpha - start
        return MomentumLocal(start, direction, move), self._plane(part, start, direction, move,
                                                                  self._contribution(*sums, xt=xt))

    def _plane(self, part, start, direction, move, contribution):
        """``contribution`` with the conjugate sums at every candidate appended to its scalars."""
        y, weight = part.labels()  # out of core: the labels alone, not the blocks again
        plane = plane_conjugate_sums(y, weight, start, direction, move, np.array(MOMENTUM_STEPS),
                                     int(self.loss.kind), self.loss.param)
        return contribution._replace(scalars=np.concatenate((contribution.scalars, plane)))

    def local_problems(self, views, locals_, states, ctx):
        """The round of every one-vs-rest problem of an out-of-core partition, each block read once.

        Each problem's duals move first, then :meth:`LocalSDCAPlan.local_problems`
        sweeps them all, and each problem's conjugate sums are taken on its
        view's labels (:meth:`local`, problem by problem).
        """
        moves = [self._move(local, state) for local, state in zip(locals_, states)]
        starts = [local.alpha + move for local, move in zip(locals_, moves)]
        swept = super().local_problems(views, [DualLocal(start) for start in starts], states, ctx)
        out = []
        for view, start, move, (new, contribution) in zip(views, starts, moves, swept):
            direction = new.alpha - start
            out.append((MomentumLocal(start, direction, move), self._plane(view, start, direction, move, contribution)))
        return out

    def search(self, w, total, move):
        """The best candidate ``(a, b)`` for ``D(alpha + a Delta alpha + b M_prev)`` and the new move of ``w``.

        ``total`` is the round's summed contribution (``Delta w``, then the
        gap sums and the conjugate sums at :data:`MOMENTUM_STEPS`), ``move`` the
        last move of ``w``.  Returns ``(step, new_move)``.
        """
        delta = dense(total.vector, self.d)
        lam = self.lam_n / self.n
        ww, wd, wm = float(w @ w), float(w @ delta), float(w @ move)
        dd, dm, mm = float(delta @ delta), float(delta @ move), float(move @ move)
        duals = [-conj / self.n - 0.5 * lam * (ww + 2 * a * wd + 2 * b * wm + a * a * dd + 2 * a * b * dm + b * b * mm)
                 for (a, b), conj in zip(MOMENTUM_STEPS, total.scalars[3:])]
        a, b = MOMENTUM_STEPS[int(np.argmax(duals))]
        return np.array([a, b]), a * delta + b * move

    def combine(self, state, total, ctx):
        """``w += a Delta w + b m_prev`` with the best ``(a, b)`` (:meth:`search`); the gap of the round's start."""
        w = state.w
        step, move = self.search(w, total, state.move)
        loss_sum, conj_sum, steps = total.scalars[:3]
        reg = 0.5 * self.lam_n / self.n * float(w @ w)
        report = RoundReport(True, loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))
        return MomentumGlobal(w + move, move, step), self._certified(report, state, total)


class ProxGlobal(NamedTuple):
    """Global state of proximal SDCA: ``v = X^T alpha / (lam' n)`` (up to rounding) and ``w = grad g*(v)``."""

    w: np.ndarray
    v: np.ndarray


class ProxStart:
    """The elastic-net plans' starting global state (:class:`ProxSDCAPlan`, and mini-batch SDCA's
    ``ProxMinibatchPlan``), from their ``d``, ``l1_ratio`` and ``threshold``."""

    def init_global(self):
        return ProxGlobal(np.zeros(self.d), np.zeros(self.d))

    def init_global_from(self, w):
        """A warm start at ``alpha0`` given ``w = X^T alpha0 / (lam n)``: ``v = w / (1 - rho)``, ``w = grad g*(v)``."""
        v = np.array(w, dtype=np.float64, copy=True) / (1.0 - self.l1_ratio)
        return ProxGlobal(soft_threshold_vector(v, self.threshold), v)


@dataclass(frozen=True)
class ProxSDCAPlan(ProxStart, LocalSDCAPlan):
    """Serial SDCA and CoCoA+ rounds for the elastic net, by proximal dual steps (``l1_ratio = rho > 0``).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``
    written as ``1/n sum_i phi_i(x_i.w) + lam' g(w)`` with ``lam' = lam (1 - rho)``
    and the 1-strongly convex ``g(w) = 1/2 ||w||^2 + c ||w||_1``,
    ``c = rho / (1 - rho)`` (Shalev-Shwartz & Zhang 2016 [SSZ16], Prox-SDCA;
    :mod:`daskdca.kernels.prox_sdca`).  Its dual is

        D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam' g*(v),   v = X^T alpha / (lam' n),
        g*(v) = 1/2 sum_j (|v_j| - c)_+^2 = 1/2 ||grad g*(v)||^2,

    and the primal point of ``alpha`` is ``w = grad g*(v)``, the soft
    threshold of ``v`` at ``c``.  ``lam_n`` (what the local steps use) is
    ``lam' n``; ``lam`` is the problem's.

    CoCoA+ (adding, ``sigma' = K``): ``g*`` is convex, so
    ``g*(v + sum_k dv_k) <= 1/K sum_k g*(v + K dv_k)`` (Jensen) and
    ``D(alpha + sum_k d_k) >= sum_k H_k(d_k)`` with the local subproblems

        H_k(d) = -1/n sum_{i in P_k} phi_i*(-(alpha_i + d_i)) - lam'/K g*(v + K dv),   dv = X_k^T d / (lam' n),

    which sum to ``D(alpha)`` at ``d = 0``: every local ascent is global
    ascent.  A partition runs Prox-SDCA steps on ``H_k`` (curvature
    ``K ||x_i||^2 / (lam' n)``, margins at ``grad g*(v + K dv)``) and sends
    ``dv_k``; the combine sets ``v += sum_k dv_k`` and ``w = grad g*(v)``.
    One partition (``K = 1``) is serial Prox-SDCA.

    Certificate: the duals are feasible, ``primal_from_dual`` is False and
    the model is ``w = grad g*(v)`` of the state's ``v``; the drivers
    recompute ``P(w)`` and ``D(alpha)`` (from ``X^T alpha``) from scratch with
    the plan's ``l1_ratio`` (:func:`daskdca.problem.objectives`).
    """

    lam: float = 0.0
    l1_ratio: float = 0.0
    threshold: float = 0.0
    primal_from_dual = False
    # not among the plans fitted one-vs-rest together (Capabilities.multi_class is False with l1_ratio > 0)
    local_problems = None

    def local(self, part, local, state, ctx):
        """One round on one partition: gap sums at ``w``, then the proximal steps on ``H_k``.

        With one partition the contribution is the new ``v`` itself;
        otherwise ``dv_k``.
        """
        alpha = local.alpha.copy()
        track = self._tracks()
        u, w_u = state.v.copy(), state.w.copy()
        delta_v = np.zeros(self.d) if track else np.empty(0)
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds
        rows = part.whole()
        if rows is not None:
            if shrink:
                loss_sum, conj_sum, visit, _ = objective_sums_movable(
                    rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, state.w, 0,
                    rows.n_rows, kind, param, self.lam_n, self.sigma_prime)
            else:
                loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha,
                                                    state.w, 0, rows.n_rows, kind, param)
                visit = None
            order = self._order(rows.n_rows, visit, ctx, ctx.partition)
            self._steps(rows, alpha, u, w_u, delta_v, order, track)
            n_steps = order.shape[0]
        else:
            def step(blk, lo, hi, a, stream):
                visit = (movable_rows(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, w_u, lo,
                                      hi, kind, param, self.lam_n, self.sigma_prime) if shrink else None)
                order = self._order(hi - lo, visit, ctx, stream)
                if visit is None:
                    order = order + lo
                self._steps(blk, a, u, w_u, delta_v, order, track)
                return order.shape[0]

            loss_sum, conj_sum, n_steps = sweep_blocks(part, alpha, state.w, ctx, loss, step)
        vector = compress(delta_v) if track else u
        return DualLocal(alpha), Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]))

    def _steps(self, rows, alpha, u, w_u, delta_v, order, track):
        prox_local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, u, w_u, delta_v,
                        order, int(self.loss.kind), self.loss.param, self.lam_n, self.sigma_prime, self.threshold,
                        track)

    def combine(self, state, total, ctx):
        """``v += sum_k dv_k`` (one partition: the new ``v``), ``w = grad g*(v)``; the gap of the round's start.

        ``P(w) = loss_sum/n + lam'/2 ||w||^2 + lam rho ||w||_1`` and
        ``D(alpha) = -conj_sum/n - lam' g*(v) = -conj_sum/n - lam'/2 ||w||^2``
        (``|grad g*(v)_j| = (|v_j| - c)_+``).
        """
        w, v = state.w, state.v
        new_v = dense(total.vector, self.d).copy() if self.n_partitions == 1 else apply_vector(v, total.vector)
        loss_sum, conj_sum, steps = total.scalars
        half_sq = 0.5 * self.lam_n / self.n * float(w @ w)
        l1 = self.lam * self.l1_ratio * float(np.abs(w).sum())
        report = RoundReport(True, loss_sum / self.n + half_sq + l1, -conj_sum / self.n - half_sq, float(steps))
        return ProxGlobal(soft_threshold_vector(new_v, self.threshold), new_v), report



#: ``mu0 = max(lam, L1_MU_SCALE * min(L, 2) * S / n^2)``, ``S`` the rows' squared norms summed (:func:`l1_default_mu0`).
L1_MU_SCALE = 0.3


def l1_default_mu0(lam, n, sqnorm_sum, smoothness):
    """The L2 weight of :class:`L1ContinuationPlan`'s subproblems: ``max(lam, L1_MU_SCALE min(L, 2) S / n^2)``.

    ``L = smoothness`` is the loss's (``phi'' <= L``; hinge's, infinite,
    counts as 2) and ``S = sum_i ||x_i||^2``.  A smaller weight takes fewer
    outer steps, a larger one better conditions the dual steps (curvature
    ``||x_i||^2 / (mu n)``); Catalyst's ``kappa = L / n`` (Lin, Mairal and
    Harchaoui, JMLR 2018) is this balance for incremental methods, and the
    factor 0.3 was measured on heart_scale and a9a (logistic and squared
    hinge, ``C`` from 0.05 to 100).  Row weights are left out: on
    scikit-learn's class-weight check (weights 1000 and 1e-4) counting them
    made a logistic fit 20 times slower (its heavy rows end far from the
    curvature's peak) where it sped a squared-hinge fit up.
    """
    return max(float(lam), L1_MU_SCALE * min(float(smoothness), 2.0) * float(sqnorm_sum) / (float(n) * n))


def l1_dual_scale(lam, xt_alpha_n_inf):
    """``s = min(1, lam / ||X^T alpha / n||_inf)``: the factor that makes ``beta = s alpha`` feasible for the L1 dual.

    The L1 problem's dual constraint is ``||X^T beta / n||_inf <= lam``
    (Ndiaye, Fercoq, Gramfort & Salmon, JMLR 2017, the rescaled dual point);
    ``s = 1`` where ``alpha`` already satisfies it (``alpha = 0`` included).
    """
    if xt_alpha_n_inf <= lam:
        return 1.0
    return lam / xt_alpha_n_inf


class L1Global(NamedTuple):
    """Global state of :class:`L1ContinuationPlan`.

    ``w = grad g*(u)``, the soft threshold of ``u = z + X^T alpha / (mu n)`` at
    ``lam / mu``; ``z`` the centre of the L2 term and ``mu`` its weight.
    """

    w: np.ndarray
    u: np.ndarray
    z: np.ndarray
    mu: float


@dataclass(frozen=True)
class L1ContinuationPlan(ProxSDCAPlan):
    """Prox-SDCA on ``P1(w) + mu/2 ||w - z||^2`` (serial, or CoCoA+ rounds on K partitions), ``mu`` and ``z``
    updated, certified as the L1 problem ``P1``.

    ``P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1``.  With ``z = 0`` the
    subproblem is the elastic net of :class:`ProxSDCAPlan` at total weight
    ``lam + mu`` and ``l1_ratio = lam / (lam + mu)`` (``lam' = mu``, threshold
    ``c = lam / mu``).  With a centre ``z`` the regulariser
    ``lam ||w||_1 + mu/2 ||w - z||^2`` is ``mu g_z`` with the 1-strongly
    convex ``g_z(w) = c ||w||_1 + 1/2 ||w - z||^2``, whose conjugate's gradient
    is the soft threshold of ``z + v`` at ``c`` (``v = X^T alpha / (mu n)``):
    the same steps (:func:`~daskdca.kernels.prox_sdca.prox_local_sdca`) on
    ``u = z + v`` ([SSZ16]'s Prox-SDCA; with the centre moved to the current
    model it is their proximal-point outer loop, as in Catalyst).

    Each round measures, at its starting state, the L1 gap
    ``P1(w) - D1(beta)`` with ``beta = s alpha`` (:func:`l1_dual_scale`,
    ``X^T alpha / n = mu (u - z)``) and ``D1(beta) = -1/n sum_i phi_i*(-beta_i)``,
    and the subproblem's gap ``1/n sum_i [phi_i(x_i.w) + phi_i*(-alpha_i)] + (X^T alpha / n).w``
    (``w = grad g_z*(v)``).  When the latter is at most ``switch`` times the
    former (the L1 gap is then mostly the L2 term's doing, not the
    optimisation's error), the round ends with the next subproblem: ``z``
    the round's model when ``recentre``, ``mu <- max(mu / decrease, mu_min)``;
    the duals stay (their box does not depend on the penalty, as along
    :func:`daskdca.path`) and ``u`` is recomputed from scratch (on ``K > 1``
    partitions, where no partition holds all the rows, carried over rescaled:
    :meth:`combine`).  The dual point the drivers
    certify is ``beta`` (``dual_point``), and
    :func:`daskdca.problem.objectives` with ``l1_ratio = 1`` recomputes
    ``P1(w)`` and ``D1(beta)`` from scratch.
    """

    mu0: float = 0.0
    mu_min: float = 0.0
    decrease: float = 10.0
    switch: float = 0.5
    recentre: bool = True

    def init_global(self):
        return L1Global(np.zeros(self.d), np.zeros(self.d), np.zeros(self.d), float(self.mu0))

    def init_global_from(self, w):
        """A warm start at ``alpha0`` given ``w = X^T alpha0 / (lam n)``: ``z = 0``, ``u = w lam / mu0``."""
        u = np.array(w, dtype=np.float64, copy=True) * (self.lam / self.mu0)
        return L1Global(soft_threshold_vector(u, self.lam / self.mu0), u, np.zeros(self.d), float(self.mu0))

    def scale(self, state):
        """``s`` of the state (:func:`l1_dual_scale`), from ``X^T alpha / n = mu (u - z)``."""
        xta_inf = float(state.mu) * float(np.max(np.abs(state.u - state.z), initial=0.0))
        return l1_dual_scale(self.lam, xta_inf)

    def dual_point(self, part, local, state):
        """``beta = s alpha``, feasible for the L1 dual (its box holds 0 and is an interval)."""
        return self.scale(state) * local.alpha

    def local(self, part, local, state, ctx):
        """The gap sums at the round's start (``alpha`` and ``beta``), then the proximal steps.

        One partition: the steps on ``u`` itself, the next subproblem decided
        here from the round's sums (:meth:`_next_mu`), and the
        contribution is ``u`` and ``z`` of the round's end (stacked) with the
        scalars ``(loss_sum, lam ||w||_1, conj_sum(beta), n_steps, next mu)``.
        ``K > 1`` partitions (CoCoA+, adding, ``sigma' = K``: the elastic net's
        argument of :class:`ProxSDCAPlan` holds for ``g_z``): the steps on
        ``u + K du_k`` and the contribution ``du_k = X_k^T delta_k / (mu n)``
        with ``(loss_sum, conj_sum(alpha), conj_sum(beta), n_steps)``; the
        combine decides the next subproblem.  Out of core the blocks are swept
        as :func:`~daskdca.methods.dual.sweep_blocks` sweeps them.
        """
        alpha = local.alpha.copy()
        mu = float(state.mu)
        u, w_u = state.u.copy(), state.w.copy()
        rows = part.whole()
        if self.n_partitions > 1:
            delta_u = np.zeros(self.d)
            loss_sum, conj_alpha, conj_beta, n_steps = self._sweep(part, alpha, state, ctx, u, w_u, delta_u)
            scalars = np.array([loss_sum, conj_alpha, conj_beta, float(n_steps)])
            return DualLocal(alpha), Contribution(compress(delta_u), scalars)
        if rows is None:
            loss_sum, conj_alpha, conj_beta, n_steps = self._sweep(part, alpha, state, ctx, u, w_u, None)
        else:
            loss_sum, conj_alpha, conj_beta, n_steps = self._whole(rows, alpha, state, ctx, u, w_u)
        l1 = self.lam * float(np.abs(state.w).sum())
        next_mu, z = self._next_mu(state, loss_sum, l1, conj_alpha, conj_beta), state.z
        if next_mu is not None:
            # the duals stay, u = z + X^T alpha / (mu n) afresh (no drift carried over)
            z = w_u if self.recentre else z
            u = z + xt_alpha_part(part, alpha, next_mu * self.n)
        else:
            next_mu = mu
        scalars = np.array([loss_sum, l1, conj_beta, float(n_steps), next_mu])
        return DualLocal(alpha), Contribution(np.concatenate([u, z]), scalars)

    def _next_mu(self, state, loss_sum, l1, conj_alpha, conj_beta):
        """The next subproblem's ``mu`` when the round's start closes this one, else None.

        It closes when the subproblem's gap
        ``1/n sum_i [phi_i(x_i.w) + phi_i*(-alpha_i)] + mu (u - z).w`` is at
        most ``switch`` times the L1 gap ``P1(w) - D1(beta)`` (and ``mu`` can
        still fall, or the centre move).
        """
        n, mu = self.n, float(state.mu)
        gap_l1 = loss_sum / n + l1 + conj_beta / n
        gap_sub = loss_sum / n + conj_alpha / n + mu * float((state.u - state.z) @ state.w)
        if gap_sub <= self.switch * gap_l1 and (self.recentre or mu > self.mu_min):
            return max(mu / self.decrease, self.mu_min)
        return None

    def _whole(self, rows, alpha, state, ctx, u, w_u):
        """One partition in memory: the round's sums and serial steps on ``u``; returns
        ``(loss_sum, conj_sum(alpha), conj_sum(beta), n_steps)``."""
        loss = self.loss
        mu = float(state.mu)
        kind, param = int(loss.kind), loss.param
        if self.settings.shrinking and loss.has_active_bounds:
            loss_sum, conj_alpha, visit, _ = objective_sums_movable(
                rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, state.w, 0,
                rows.n_rows, kind, param, mu * self.n, 1.0)
        else:
            loss_sum, conj_alpha = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha,
                                                  state.w, 0, rows.n_rows, kind, param)
            visit = None
        s = self.scale(state)
        conj_beta = conj_alpha if s == 1.0 else float(
            line_conjugate_sums(rows.y, rows.weight, alpha, alpha, np.array([s - 1.0]), kind, param)[0])
        order = self._order(rows.n_rows, visit, ctx, ctx.partition)
        prox_local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, u, w_u,
                        np.empty(0), order, kind, param, mu * self.n, 1.0, self.lam / mu, False)
        return loss_sum, conj_alpha, conj_beta, order.shape[0]

    def _sweep(self, part, alpha, state, ctx, u, w_u, delta_u):
        """The round's sums and steps block by block (:func:`~daskdca.methods.dual.sweep_blocks`): curvature
        ``sigma' ||x_i||^2 / (mu n)`` with ``sigma' = K``, margins at the soft threshold of the local ``u``;
        ``delta_u`` (None with one partition) gathers ``X_k^T delta_k / (mu n)``.  Returns
        ``(loss_sum, conj_sum(alpha), conj_sum(beta), n_steps)``, the sums at the round's start."""
        loss = self.loss
        mu = float(state.mu)
        kind, param = int(loss.kind), loss.param
        lam_n, sigma = mu * self.n, float(self.sigma_prime)
        shrink = self.settings.shrinking and loss.has_active_bounds
        track = delta_u is not None
        s = self.scale(state)
        conj_beta = [0.0]

        def step(blk, lo, hi, a, stream):
            if s != 1.0:  # beta = s alpha of the block's rows, before any of them moves
                conj_beta[0] += float(line_conjugate_sums(blk.y[lo:hi], blk.weight[lo:hi], a[lo:hi], a[lo:hi],
                                                          np.array([s - 1.0]), kind, param)[0])
            visit = (movable_rows(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, w_u, lo, hi,
                                  kind, param, lam_n, sigma) if shrink else None)
            order = self._order(hi - lo, visit, ctx, stream)
            if visit is None:
                order = order + lo
            prox_local_sdca(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, u, w_u,
                            delta_u if track else np.empty(0), order, kind, param, lam_n, sigma, self.lam / mu,
                            track)
            return order.shape[0]

        loss_sum, conj_alpha, n_steps = sweep_blocks(part, alpha, state.w, ctx, loss, step)
        return loss_sum, conj_alpha, conj_alpha if s == 1.0 else conj_beta[0], n_steps

    def combine(self, state, total, ctx):
        """``u``, ``z`` and ``mu`` of the round's end, ``w = grad g_z*``; the L1 gap of the round's start.

        With ``K > 1`` partitions ``u += sum_k du_k``, and the next subproblem
        is decided here (:meth:`_next_mu`); ``u - z = X^T alpha / (mu n)``
        is carried over rescaled by ``mu / mu'`` (a partition holds only its own
        rows to recompute it).
        """
        if self.n_partitions == 1:
            loss_sum, l1, conj_beta, steps, next_mu = total.scalars
            uz = dense(total.vector, 2 * self.d)
            u, z = uz[:self.d].copy(), uz[self.d:].copy()
        else:
            loss_sum, conj_alpha, conj_beta, steps = total.scalars
            l1 = self.lam * float(np.abs(state.w).sum())
            u, z, mu = apply_vector(state.u, total.vector), state.z, float(state.mu)
            next_mu = self._next_mu(state, loss_sum, l1, conj_alpha, conj_beta)
            if next_mu is None:
                next_mu = mu
            else:
                new_z = soft_threshold_vector(u, self.lam / mu) if self.recentre else z
                u = new_z + (u - z) * (mu / next_mu)
                z = new_z
        report = RoundReport(True, loss_sum / self.n + l1, -conj_beta / self.n, float(steps))
        return L1Global(soft_threshold_vector(u, self.lam / next_mu), u, z, float(next_mu)), report
