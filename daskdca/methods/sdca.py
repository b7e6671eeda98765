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
import numbers
from dataclasses import dataclass, replace
from functools import partial
from typing import NamedTuple

import numpy as np

from daskdca.kernels.sampling import iid_order, permutation_order
from daskdca.kernels.sdca import (
    line_conjugate_sums,
    local_sdca,
    movable_rows,
    objective_sums,
    objective_sums_movable,
)
from daskdca.losses import LOSSES
from daskdca.methods.base import (
    Capabilities,
    Contribution,
    PlanBase,
    RoundReport,
    apply_vector,
    check_local_iters,
    compress,
    dense,
)
from daskdca.partitions import binary_rows, row_view

__all__ = ["LOCAL_SOLVERS", "SDCA", "CoCoAPlus", "DualGlobal", "DualLocal", "DualPlan", "LocalSDCAPlan"]

_SAMPLINGS = ("permutation", "iid")
#: what may improve a partition's CoCoA+ subproblem (``CoCoAPlus.local_solver``)
LOCAL_SOLVERS = ("sdca", "sdna", "spdc")
_AGGREGATIONS = ("adding", "line_search")
_ACCELERATIONS = ("auto", None, "catalyst")
# Candidate steps of the line search along the summed direction: t = j / 8 for
# j = 1..8, and 1/K (averaging, the safe step) whatever K is.
LINE_SEARCH_STEPS = tuple(j / 8 for j in range(1, 9))


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
    Each round every partition improves its local subproblem ``G_k^{sigma'}``
    with ``sigma' = K`` (the number of partitions) by ``local_iters`` passes
    of a local solver; then ``w += sum_k delta_w_k``.  With one partition
    ``sigma' = 1`` and the local subproblem is the whole dual.  On more than
    one partition the rounds run, by default, inside Catalyst's accelerated
    proximal-point loop (``acceleration``), which needs 10-40x fewer rounds
    where plain CoCoA+ is slow (benchmarks/RESULTS.md, "Catalyst around
    CoCoA+").

    Parameters
    ----------
    local_iters : float, default=1.0
        Rows visited per round, in multiples of the partition's rows (H / n_k).
    sampling : {"permutation", "iid"} or None, default=None
        Of the SDCA local solver: a fresh random permutation for every pass
        (None means this), or rows drawn with replacement.  The other local
        solvers draw their own samples (``local_batch_size`` rows at a time), and
        refuse a value here.
    shrinking : bool or None, default=None
        Of the SDCA local solver: each round, visit only the rows whose step
        at the round's ``w`` is non-zero (LIBLINEAR's shrinking, Hsieh et al.
        2008 §3.2; only hinge-type losses have such rows).  None means True
        for ``local_solver="sdca"`` and False for the others, which visit
        every row and refuse ``shrinking=True``.
    aggregation : {"adding", "line_search"}, default="adding"
        ``"adding"``: ``sigma' = K``, ``w += sum_k delta_w_k`` (safe for any
        data, and the most conservative local model).  ``"line_search"``
        (``local_solver="sdca"`` only): every partition maximises the dual
        restricted to its own rows (``sigma' = 1``); the combine takes the
        step ``t`` along the summed direction that maximises the dual over
        ``LINE_SEARCH_STEPS`` (``1/K`` ... ``1``), from conjugate sums every
        partition returns in the same task.  ``t = 1/K`` is CoCoA's
        averaging, which never lowers the dual (concavity), so neither does
        the line search.
    local_solver : {"sdca", "sdna", "spdc"}, default="sdca"
        What improves each partition's subproblem:

        * ``"sdca"``: sequential closed-form dual coordinate steps
          (LocalSDCA, Ma et al. 2015 Algorithm 2).
        * ``"sdna"``: local SDNA (paper 003 Algorithm 3, spec ``sdna.md``
          §6.4); exactly ``SDNA(batch_size=local_batch_size, local_iters=local_iters)``.
        * ``"spdc"``: local SPDC (paper 004 Algorithm 1, or Algorithm 2 with
          ``local_batch_size`` rows) on the partition's subproblem written as a
          saddle problem (spec ``spdc.md`` §5.5 (B)), restarted every round
          at ``x = w``; the step is kept only where it does not lower the
          subproblem (:class:`daskdca.methods.spdc.LocalSPDCPlan`).  Needs a
          smooth loss: hinge is refused (``solver="spdc"`` smooths it).
    local_batch_size : int or None, default=None
        Rows of one local iteration, for ``local_solver="sdna"`` (``tau``;
        None: 16, paper 003 Fig. 3) and ``"spdc"`` (``m``; None: 1, Algorithm
        1, the most pass-efficient, 004 §2.2); at most the smallest
        partition's rows.  The SDCA local solver takes one row per step and
        refuses it.
    acceleration : {"auto", None, "catalyst"}, default="auto"
        ``"catalyst"``: the rounds run inside Catalyst's accelerated
        proximal-point loop (:mod:`daskdca.methods.catalyst`): each round is
        one CoCoA+ round on ``P(w) + kappa/2 ||w - y_k||^2`` followed by the
        extrapolation of the centre ``y_k``, so the rounds needed grow like
        the square root of the condition number.  The certificate is the
        original problem's, with the iterate ``w`` as the primal point; the
        dual is not monotone.  Needs ``local_solver="sdca"`` and
        ``aggregation="adding"``.  None: plain CoCoA+ (Ma et al. 2015), whose
        dual never falls.  ``"auto"``: ``"catalyst"`` on more than one
        partition with ``local_solver="sdca"`` and ``aggregation="adding"``,
        None otherwise (one partition is serial SDCA).
    kappa : float or None, default=None
        Catalyst's proximal weight (``acceleration="catalyst"`` only); None:
        :func:`daskdca.methods.catalyst.default_kappa`, from ``lam``, ``K``
        and the rows' mean squared norm (0, plain CoCoA+, when ``lam`` is
        large enough).
    """

    local_iters: float = 1.0
    sampling: str | None = None
    shrinking: bool | None = None
    aggregation: str = "adding"
    local_solver: str = "sdca"
    local_batch_size: int | None = None
    acceleration: str | None = "auto"
    kappa: float | None = None
    name = "cocoa+"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=True, cluster=True, shrinking=True,
                                warm_start=True, sample_weight=True, multi_class=True)

    def __post_init__(self):
        if self.local_solver not in LOCAL_SOLVERS:
            raise ValueError(f"Unknown local_solver {self.local_solver!r}; use one of {list(LOCAL_SOLVERS)}.")
        value = self.local_batch_size
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
            raise ValueError(f"local_batch_size must be a positive int or None, got {value!r}.")
        if self.local_solver == "sdca":
            if value is not None:
                raise ValueError(
                    f"local_batch_size={value!r} does not apply to local_solver='sdca' (one row per step); drop it, "
                    "or choose local_solver='sdna' or 'spdc', which take local_batch_size rows per local iteration.")
            # None: the SDCA local solver's defaults (one permutation per pass, shrinking)
            object.__setattr__(self, "sampling", "permutation" if self.sampling is None else self.sampling)
            object.__setattr__(self, "shrinking", True if self.shrinking is None else self.shrinking)
            _check(self.local_iters, self.sampling, self.shrinking)
        else:
            check_local_iters(self.local_iters)
            if self.sampling is not None:
                raise ValueError(
                    f"sampling={self.sampling!r} applies to local_solver='sdca' only; "
                    f"local_solver={self.local_solver!r} draws its own rows (local_batch_size at a time). "
                    "Drop sampling.")
            if self.shrinking is None:
                object.__setattr__(self, "shrinking", False)
            if self.shrinking is not False:
                raise ValueError(
                    f"shrinking={self.shrinking!r}: local_solver={self.local_solver!r} visits every row and has no "
                    "shrinking; drop shrinking (or use local_solver='sdca').")
            # the SDNA and SPDC local steps solve the unweighted subproblem, and their plans are not
            # among those fitted one-vs-rest together
            object.__setattr__(self, "capabilities", replace(self.capabilities, sample_weight=False,
                                                             multi_class=False))
        if self.aggregation not in _AGGREGATIONS:
            raise ValueError(f"Unknown aggregation {self.aggregation!r}; use one of {list(_AGGREGATIONS)}.")
        if self.aggregation == "line_search" and self.local_solver != "sdca":
            raise ValueError(
                f"aggregation='line_search' combines with local_solver='sdca' only (its local solves use "
                f"sigma' = 1 and the SDCA sweep), got local_solver={self.local_solver!r}; use aggregation='adding'.")
        self._check_acceleration()

    def _check_acceleration(self):
        if self.acceleration not in _ACCELERATIONS:
            raise ValueError(f"Unknown acceleration {self.acceleration!r}; use one of {list(_ACCELERATIONS)}.")
        if self.acceleration != "catalyst":
            if self.kappa is not None:
                raise ValueError(f"kappa={self.kappa!r} is Catalyst's proximal weight; it needs "
                                 "acceleration='catalyst' (or drop kappa).")
            return
        if self.local_solver != "sdca" or self.aggregation != "adding":
            raise ValueError(
                f"acceleration='catalyst' runs CoCoA+ rounds with local_solver='sdca' and aggregation='adding', got "
                f"local_solver={self.local_solver!r}, aggregation={self.aggregation!r}; drop acceleration or those.")
        kappa = self.kappa
        if kappa is not None and (isinstance(kappa, bool) or not isinstance(kappa, numbers.Real)
                                  or not math.isfinite(kappa) or kappa <= 0):
            raise ValueError(f"kappa must be a finite number > 0 or None (the default rule), got {kappa!r}.")

    def setup(self, info, ops):
        """The plan for this data: ``sigma' = K`` (adding, gamma = 1; Ma et al. 2015 §3), or the line search.

        ``acceleration="catalyst"`` is :class:`~daskdca.methods.catalyst.CatalystPlan`
        (its default ``kappa`` reads ``sum_i ||x_i||^2`` through ``ops``);
        ``local_solver="sdna"`` is :class:`~daskdca.methods.sdna.SDNA`'s plan
        for the same settings, ``"spdc"`` :class:`~daskdca.methods.spdc.LocalSPDCPlan`.
        """
        K = info.n_partitions
        smallest = int(min(info.partition_sizes))
        if self.local_batch_size is not None and self.local_batch_size > smallest:
            raise ValueError(
                f"local_batch_size={self.local_batch_size} is more than the {smallest} rows of the smallest partition "
                f"(of {K}); use local_batch_size <= {smallest}.")
        if self.local_solver == "sdna":
            from daskdca.methods.sdna import SDNA  # sdna.py imports this module

            return SDNA(batch_size=self.local_batch_size, local_iters=self.local_iters).setup(info, ops)
        if self.local_solver == "spdc":
            from daskdca.methods.spdc import LocalSPDCPlan  # spdc.py imports this module

            return LocalSPDCPlan.for_data(self, info)
        if self.acceleration == "catalyst" or (self.acceleration == "auto" and K > 1 and self.local_solver == "sdca"
                                               and self.aggregation == "adding"):
            from daskdca.methods.catalyst import CatalystPlan, default_kappa  # catalyst.py imports this module

            kappa = (default_kappa(info.lam, info.n, K, ops.sqnorm_sum()) if self.kappa is None
                     else float(self.kappa))
            if kappa > 0.0:
                return CatalystPlan(settings=self, loss=info.loss, n=info.n, d=info.d,
                                    lam_n=(info.lam + kappa) * info.n, n_partitions=K, sigma_prime=float(K),
                                    lam=info.lam, kappa=kappa)
        if self.aggregation == "line_search" and K > 1:
            return LineSearchPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                                  n_partitions=K, sigma_prime=1.0)
        return LocalSDCAPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                             n_partitions=K, sigma_prime=float(K))


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
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=False, cluster=False, shrinking=True,
                                warm_start=True, sample_weight=True, multi_class=True)

    def __post_init__(self):
        if self.local_solver != "sdca" or self.local_batch_size is not None:
            raise ValueError(
                f"solver='sdca' is serial SDCA (one row per step), got local_solver={self.local_solver!r}, "
                f"local_batch_size={self.local_batch_size!r}; drop them, or use solver='sdna' or 'spdc' (or "
                "CoCoAPlus(local_solver=...)) for another solver.")
        super().__post_init__()


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


@dataclass(frozen=True)
class LocalSDCAPlan(DualPlan):
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

        With one partition the contribution is the new ``w`` itself (no
        ``delta_w`` to track); otherwise ``delta_w_k``.
        """
        alpha = local.alpha.copy()
        return DualLocal(alpha), self._contribution(*self._sweep(part, alpha, state.w, ctx, track=self._tracks()))

    def _tracks(self):
        """Whether the local steps keep ``delta_w`` (with one partition the new ``w`` is the contribution)."""
        return self.n_partitions > 1

    def _contribution(self, loss_sum, conj_sum, n_steps, u, delta_w):
        vector = compress(delta_w) if self._tracks() else u
        return Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]))

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
        problems = [(partial(binary_rows, label=view.label, positive_weight=view.positive_weight), alpha, state.w,
                     self._block_step(u, delta_w, ctx, track))
                    for view, alpha, state, (u, delta_w) in zip(views, alphas, states, vectors)]
        sums = sweep_blocks_problems(views[0].part, problems, ctx, self.loss)
        return [(DualLocal(alpha), self._contribution(*total, u, delta_w))
                for alpha, total, (u, delta_w) in zip(alphas, sums, vectors)]

    @staticmethod
    def _start_vectors(w, track):
        """``u = w`` and ``delta_w = 0`` (empty when not tracked) at the start of a sweep."""
        return w.copy(), (np.zeros_like(w) if track else np.empty(0))

    def _block_step(self, u, delta_w, ctx, track):
        """The out-of-core step of :func:`sweep_blocks`: the block's movable rows (shrinking), one
        permutation, the local steps on ``u`` and ``delta_w`` (carried from block to block)."""
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds

        def step(blk, lo, hi, a, stream):
            visit = (movable_rows(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, u, lo, hi, kind,
                                  param, self.lam_n, self.sigma_prime) if shrink else None)
            order = self._order(hi - lo, visit, ctx, stream)
            if visit is None:
                order = order + lo  # store pieces start at lo = 0; kept general
            local_sdca(blk.indptr, blk.indices, blk.data, blk.y, blk.weight, blk.sqnorm, a, u, delta_w, order,
                       kind, param, self.lam_n, self.sigma_prime, track)
            return order.shape[0]

        return step

    def _sweep(self, part, alpha, w, ctx, *, track):
        """Gap sums at ``(w, alpha)``, then the round's local steps on ``alpha`` (in place).

        Returns ``(loss_sum, conj_sum, n_steps, u, delta_w)`` with
        ``u = w + sigma' delta_w``.  Held in memory, the partition's rows are
        swept with one permutation from the stream ``(random_state, round,
        partition)``; the gap sums and the shrinking test share one pass (both
        need every margin at ``w``).  Out of core, the blocks are visited in a
        seeded random order, each with its own permutation, carrying ``u``
        from one block to the next.
        """
        loss = self.loss
        kind, param = int(loss.kind), loss.param
        shrink = self.settings.shrinking and loss.has_active_bounds
        u, delta_w = self._start_vectors(w, track)
        rows = part.whole()
        if rows is not None:
            if shrink:
                loss_sum, conj_sum, visit = objective_sums_movable(
                    rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, w, 0, rows.n_rows,
                    kind, param, self.lam_n, self.sigma_prime)
            else:
                loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha,
                                                    w, 0, rows.n_rows, kind, param)
                visit = None
            order = self._order(rows.n_rows, visit, ctx, ctx.partition)
            local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, u, delta_w, order,
                       kind, param, self.lam_n, self.sigma_prime, track)
            return loss_sum, conj_sum, order.shape[0], u, delta_w
        # Out of core a block is read when its turn comes.  Sweeping block
        # after block converges more slowly than one permutation of the
        # whole partition (a9a, logistic, lam 1e-3, one partition of 2
        # blocks: relative gap 5e-4 after 6 epochs against 2e-8;
        # benchmarks/RESULTS.md, engine section).
        loss_sum, conj_sum, n_steps = sweep_blocks(part, alpha, w, ctx, loss, self._block_step(u, delta_w, ctx, track))
        return loss_sum, conj_sum, n_steps, u, delta_w


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
        return np.unique(np.array(LINE_SEARCH_STEPS + (1.0 / self.n_partitions,)))

    def init_global(self):
        return LineSearchGlobal(np.zeros(self.d), np.array(0.0))

    def init_local(self, part, ctx):
        return PendingLocal(np.zeros(part.n_rows), np.zeros(part.n_rows))

    def dual_point(self, part, local, state):
        return local.alpha + float(state.step) * local.pending

    def _labels_and_weights(self, part):
        """The partition's ``y`` and row weights (empty when unweighted), in its row order."""
        rows = part.whole()
        if rows is not None:
            return rows.y, rows.weight
        ys, weights = [], []
        for blk, lo, hi, _ in part.pieces():  # out of core: one block at a time
            ys.append(blk.y[lo:hi])
            weights.append(blk.weight[lo:hi])
        return np.concatenate(ys), np.concatenate(weights)

    def local(self, part, local, state, ctx):
        """Apply the last step, take the gap sums and the local steps, and the conjugate sums along the line."""
        alpha = local.alpha + float(state.step) * local.pending
        start = alpha.copy()
        loss_sum, conj_sum, n_steps, _, delta_w = self._sweep(part, alpha, state.w, ctx, track=True)
        direction = alpha - start
        y, weight = self._labels_and_weights(part)
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
