"""Dual-free SDCA: uniform, importance and adaptive sampling (He & Takáč 2015 [HT15]).

Solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` for smooth
``phi_i`` with one pseudo-dual ``alpha_i`` per row and the invariant
``w = X^T alpha / (lam n)`` (He & Takáč 2015 [HT15] eq. (2)).  A step needs only
``phi_i'``: with the residue ``kappa_i = alpha_i + phi_i'(x_i.w)``,
``alpha_i -= (theta / p_i) kappa_i`` and ``w -= (theta / p_i) kappa_i x_i / (lam n)``
(He & Takáč 2015 [HT15] Alg. 1 lines 8-9; kernels in :mod:`daskdca.kernels.dual_free`).

* ``dfsdca`` with ``sampling="uniform"``: ``p_i = 1/n``,
  ``theta = lam / (lam n + L_max)`` (He & Takáč 2015 [HT15] §3).
* ``dfsdca`` with ``sampling="importance"``: ``p_i ∝ lam n + L_i``,
  ``theta = lam / (lam n + L_bar)``; then ``theta / p_i = lam n / (lam n + L_i)``
  (docs/references.md, note N6, the fixed-p bound ``theta <= min_i p_i lam n / (lam n + L_i)``).
* ``adfsdca`` (default ``probabilities="refreshed"``): the paper's cheaper
  scheme (§1.1 "practical variant", §4): ``p_i* ∝ c_i |kappa_i|`` (Lemma 1,
  eq. (6)) and ``Theta(kappa, p*)`` recomputed from a pass over the residues
  ``refreshes`` times an epoch, fresh ``kappa_i`` in each step, the step
  factor capped at SDCA's safe step (``O(nnz + n log n)`` an epoch).
  ``probabilities="exact"``: Algorithm 1, ``p_i*`` recomputed from every
  residue before every step, ``theta_t = Theta(kappa, p*)`` of Theorem 1 and
  Lemma 1 (corrected denominator, docs/references.md, note N6 erratum 1), sum-tree sampling
  (``O(n nnz)`` an epoch, Table 1); with ``batch_size = b > 1`` Algorithm 4 (water-filled marginals under
  ``b p_i <= 1``, Algorithm 3's ``b``-subsets, ``Theta_b`` of App. D
  corrected, ESO constant eq. (10)).
* ``adfsdca+``: Algorithm 2, residues once per round, weights mixed with an
  importance floor and divided by ``s`` after each pick (sum-tree, O(log n));
  the step rule is ours (docs/references.md, note N6: the paper gives none), capped at SDCA's
  safe step (the safeguard below).

Safeguards (not in the paper).  (1) Wherever the probabilities are not
exact (``adfsdca`` refreshed, ``adfsdca+``), the step factor ``theta / p_i``
is capped at ``s_i = lam n / (lam n + sigma' L_i)``, SDCA's safe step for an
``L~``-smooth loss (Shalev-Shwartz & Zhang 2013; the step of dfSDCA-IS):
then no step lowers the dual ``D(alpha)`` and ``alpha`` stays in the dual
domain, whatever row a stale distribution picks.  (2) Every method watches
its certified relative gap: when its best value has not fallen by
:data:`STALL_DROP` for :data:`STALL_ROUNDS` measured rounds, it stops
stepping (later rounds are free and unmeasured, the fit returns the last
state) and warns with a ``ConvergenceWarning`` that names ``solver="sdca"``.

Here ``L_i = L~ ||x_i||^2`` with ``L~`` the loss's smoothness (``phi_i'`` is
``L~``-Lipschitz; He & Takáč 2015 [HT15] eq. (1)), case 1 constants ``beta_i = 1/L~``,
``gamma = lam n`` (docs/references.md, note N6 table).

Partitions (docs/references.md, note N6, "experimental"; not analysed in the paper)
---------------------------------------------------------------
A round is about ``local_iters * n`` steps.  Each partition steps on its own
rows with the local view ``u = w + sigma' delta_w`` and ``sigma' = K`` (the
CoCoA+ adding rule, Ma et al. 2015 §3): every ``||x_i||^2`` in the step
constants is multiplied by ``sigma'``.  For the squared loss the importance
step is then exactly the CoCoA+ local SDCA step on ``G_k^{sigma'}`` (docs/references.md,
note N6), for the other losses it is its dual-free analogue.  Each
partition sends ``delta_w_k = X_k^T delta_alpha_k / (lam n)``, so the
invariant holds after the sum.  With one partition (``sigma' = 1``) every
method is exactly the serial algorithm of the paper.

Within a partition the *sampling unit* is the whole partition in memory,
or one store block out of core (blocks are visited in a seeded random
order, ``u`` carried from one to the next).  ``uniform`` and ``importance``
take ``local_iters * n_u`` steps in a unit of ``n_u`` rows; ``p_i`` is the
unit's distribution times ``n_u / n``, which gives ``theta / p_i`` above.
``adfsdca`` needs the residue normaliser ``S = sum_j c_j |kappa_j|`` over all
rows, so its round has two phases: ``residues`` (every unit's ``S_u`` and
``sum kappa^2`` at the round's ``w``, reduced through the contribution's
scalars into the global state) and ``steps`` (unit ``u`` takes
``round(local_iters * n * S_u / S)`` steps, so that a step lands on row ``i``
with probability ``p_i* = c_i |kappa_i| / S`` at the round's start; the
other units' part of Theta is kept at its round-start value).

Certificate: the iterate ``alpha`` is not dual-feasible in general (spec
pitfall P5), so the dual point is ``a_i = -phi_i'(x_i.w)``, always feasible
and equal to ``alpha*`` at the optimum.  Each round measures
``P(w) - D(a)`` of its starting ``w`` in the same pass as the residues.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels import dual_free as kern
from daskdca.kernels.sampling import iid_order, permutation_order
from daskdca.losses import LOSSES
from daskdca.methods.base import (
    Capabilities,
    Contribution,
    Phase,
    PlanBase,
    RoundReport,
    apply_vector,
    check_local_iters,
    compress,
    dense,
)
from daskdca.partitions import row_view

__all__ = ["AdaptiveDualFreeSDCA", "AdaptiveDualFreeSDCAPlus", "DualFreeGlobal", "DualFreeLocal", "DualFreePlan",
           "DualFreeSDCA", "SMOOTH_LOSSES"]

#: The losses with a Lipschitz ``phi'`` (He & Takáč 2015 [HT15] §1, eq. (1): ``L~_i > 0`` finite); hinge is not one.
SMOOTH_LOSSES = tuple(name for name, cls in LOSSES.items() if math.isfinite(cls().smoothness))

_SAMPLINGS = ("uniform", "importance")
# Gap sums kept in the global state by the residue phase (adfsdca, adfsdca+):
# loss_sum, conj_sum, S = sum c |kappa|, sum kappa^2, C = sum c^2, ||w(a)||^2.
_N_SUMS = 6
_PROBABILITIES = ("refreshed", "exact")
#: Stall test (ours; the paper has none): rounds whose certified relative gap does not improve on the best
#: one by the factor ``1 - STALL_DROP``, after which the method stops and warns.
STALL_ROUNDS = 50
STALL_DROP = 0.01
#: Below this certified relative gap no stall is called (the floor of double rounding, not a failure).
STALL_FLOOR = 1e-10


class DualFreeGlobal(NamedTuple):
    """Global state: the primal ``w``, the residue phase's sums at ``w`` (adfsdca; zeros otherwise) and the
    stall watch ``(best relative gap, rounds since it fell, stopped)``."""

    w: np.ndarray
    sums: np.ndarray
    watch: np.ndarray


class DualFreeLocal(NamedTuple):
    """A partition's pseudo-duals ``alpha``; per sampling unit ``(S_u, sum kappa^2, sum c^2)`` at the round's ``w``."""

    alpha: np.ndarray
    unit_sums: np.ndarray


def _block_stream(partition, j):
    """Stream id of block ``j`` of an out-of-core partition; never a partition id (bit 62 set)."""
    return (1 << 62) | (partition << 31) | j


@dataclass(frozen=True)
class DualFreeSDCA:
    """Dual-free SDCA with fixed sampling probabilities (Shalev-Shwartz 2015; He & Takáč 2015 [HT15] §3).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` for a smooth loss
    by steps ``alpha_i -= (theta / p_i) kappa_i``,
    ``w -= (theta / p_i) kappa_i x_i / (lam n)`` on rows drawn i.i.d. from a
    fixed distribution ``p``, where ``kappa_i = alpha_i + phi_i'(x_i.w)``.

    Parameters
    ----------
    sampling : {"uniform", "importance"}, default="uniform"
        ``"uniform"``: ``p_i = 1/n`` and ``theta = lam / (lam n + L_max)``
        (He & Takáč 2015 [HT15] §3).  ``"importance"``: ``p_i ∝ lam n + L_i`` and
        ``theta = lam / (lam n + L_bar)`` (docs/references.md, note N6, dfSDCA-IS), the
        same worst-case rate as adfSDCA's bound (He & Takáč 2015 [HT15] Cor. 1).
    local_iters : float, default=1.0
        Steps per round, in multiples of the rows (one epoch per round by default).
    """

    sampling: str = "uniform"
    local_iters: float = 1.0
    name = "dfsdca"
    capabilities = Capabilities(losses=SMOOTH_LOSSES, many_partitions=True, cluster=True, shrinking=False,
                                warm_start=True)
    adaptive = False

    def __post_init__(self):
        check_local_iters(self.local_iters)
        if self.sampling not in _SAMPLINGS:
            raise ValueError(f"Unknown sampling {self.sampling!r} for solver={self.name!r}; "
                             f"use one of {list(_SAMPLINGS)} (or solver='adfsdca' for adaptive probabilities).")

    def setup(self, info, ops):
        """The plan: ``sigma' = K`` (module docstring) and the loss's smoothness ``L~``.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused: the plan needs no
            sum over the rows.

        Returns
        -------
        DualFreePlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When the loss is not smooth.
        """
        return _plan(self, info)


@dataclass(frozen=True)
class AdaptiveDualFreeSDCA:
    """Adaptive dual-free SDCA, He & Takáč 2015 [HT15] Algorithm 1 (adfSDCA), by default with refreshed probabilities.

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` for a smooth loss.

    ``probabilities="refreshed"`` (default) is the paper's cheaper scheme
    (He & Takáč 2015 [HT15] §1.1 "practical aggressive variant", §4: the exact adaptive
    probabilities are recomputed once per epoch from one pass, not before
    every step): ``refreshes`` times an epoch a pass over the rows computes
    every residue, ``p_i* = c_i |kappa_i| / sum_j c_j |kappa_j|`` (Lemma 1,
    eq. (6)) into a sum-tree and ``Theta(kappa, p*)`` (Theorem 1, corrected,
    docs/references.md, note N6); each step draws from that tree, takes the fresh residue of
    the drawn row and the step factor ``min(Theta / p_i, s_i)``, capped at
    SDCA's safe step ``s_i = lam n / (lam n + L_i)`` because the
    probabilities are stale between refreshes
    (:func:`daskdca.kernels.dual_free.refreshed_adaptive_steps`).  An epoch
    costs ``O(nnz + n log n)`` (Table 1, the adfSDCA+ column).

    ``probabilities="exact"`` is Algorithm 1 as printed: before every step all residues ``kappa_i = alpha_i + phi_i'(x_i.w)`` are
    recomputed, row ``i`` is drawn with
    ``p_i* = c_i |kappa_i| / sum_j c_j |kappa_j|``,
    ``c_i = sqrt(||x_i||^2 lam n + (lam n)^2 / L~)`` (Lemma 1, eq. (6)) from a
    sum-tree, and the step is ``theta_t = Theta(kappa, p*)
    = (lam n)^2 / L~ sum kappa_j^2 / (sum_j c_j |kappa_j|)^2`` (Theorem 1,
    corrected, docs/references.md, note N6), which is at least ``lam / (lam n + L_bar)``
    (Cor. 1).  A step costs up to a pass over the partition (``O(n nnz)`` per
    epoch, He & Takáč 2015 [HT15] Table 1): use it on small data or for the comparison.

    With ``batch_size = b > 1`` it is mini-batch adfSDCA, He & Takáč 2015 [HT15]
    Algorithm 4: each iteration water-fills the marginals
    ``q_i = min(1, tau c_i |kappa_i|)``, ``sum q = b`` (the cap ``b p_i <= 1``,
    docs/references.md, note N6), draws ``b`` distinct rows with exactly those marginals by
    Algorithm 3, and steps all of them from the same ``w`` with
    ``Theta_b`` (App. D, corrected) and the ESO constant
    ``v_i = min(b, max_j |J_j|) ||x_i||^2`` (eq. (10)).

    Parameters
    ----------
    local_iters : float, default=1.0
        Coordinate steps per round, in multiples of the rows (one epoch per round by default).
    batch_size : int or None, default=None
        ``b``, rows per iteration; None or 1 is Algorithm 1, ``b > 1`` Algorithm 4 (always with exact
        probabilities, whatever ``probabilities`` says).
    probabilities : {"refreshed", "exact"}, default="refreshed"
        ``"refreshed"``: recomputed ``refreshes`` times an epoch (§1.1, §4); ``"exact"``: before every
        step (Algorithm 1).
    refreshes : int, default=4
        Passes that refresh the probabilities per epoch (``probabilities="refreshed"``).
    """

    local_iters: float = 1.0
    batch_size: int | None = None
    probabilities: str = "refreshed"
    refreshes: int = 4
    name = "adfsdca"
    capabilities = Capabilities(losses=SMOOTH_LOSSES, many_partitions=True, cluster=True, shrinking=False,
                                warm_start=True)
    adaptive = True
    sampling = "adaptive"

    def __post_init__(self):
        check_local_iters(self.local_iters)
        b = self.batch_size
        if b is not None and (isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {b!r}.")
        if self.probabilities not in _PROBABILITIES:
            raise ValueError(f"Unknown probabilities {self.probabilities!r} for solver='adfsdca'; use one of "
                             f"{list(_PROBABILITIES)}.")
        r = self.refreshes
        if isinstance(r, bool) or not isinstance(r, numbers.Integral) or r < 1:
            raise ValueError(f"refreshes must be a positive int, got {r!r}.")

    def setup(self, info, ops):
        """The plan: ``sigma' = K`` (module docstring), ``L~`` and the ESO factor ``min(b, max_j |J_j|)``.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused: the plan needs no
            sum over the rows.

        Returns
        -------
        DualFreePlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When ``batch_size`` is more than the smallest partition's rows, or the
            loss is not smooth.
        """
        if self.batch_size is not None and self.batch_size > min(info.partition_sizes):
            raise ValueError(f"batch_size={self.batch_size} is more than the {min(info.partition_sizes)} rows of "
                             f"the smallest partition; use batch_size <= {min(info.partition_sizes)}.")
        return _plan(self, info)


@dataclass(frozen=True)
class AdaptiveDualFreeSDCAPlus:
    """Heuristic adaptive dual-free SDCA, He & Takáč 2015 [HT15] Algorithm 2 (adfSDCA+).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` for a smooth loss.
    The residues are recomputed once per round (one epoch), the sampling
    weights ``omega_j = (1 - floor) p*_j + floor p_IS_j`` live in a sum-tree,
    and after each pick the picked weight is divided by ``shrink``
    (``O(log n)``).  The paper gives no step rule; the step is
    ``Theta(kappa_epoch, p^(t))`` with the current normalised ``p`` and the
    fresh residue of the picked row, and the importance floor keeps it stable
    (docs/references.md, note N6: without a floor ``shrink = 1`` diverged on a toy problem).
    Safeguard: the step factor is capped at SDCA's safe step
    ``lam n / (lam n + L_i)``, so no step lowers the dual (without it
    ``s = 1`` diverged on real data, floor or not).
    Cost per epoch ``O(nnz + n log n)`` (He & Takáč 2015 [HT15] Table 1).

    Parameters
    ----------
    shrink : float, default=10.0
        ``s >= 1``, the factor a picked row's weight is divided by (the paper used 1, 10 and 20).
    floor : float, default=0.5
        ``epsilon`` in ``[0, 1)``, the importance-sampling share of the weights (docs/references.md, note N6).
    local_iters : float, default=1.0
        Steps per round, in multiples of the rows.
    """

    shrink: float = 10.0
    floor: float = 0.5
    local_iters: float = 1.0
    name = "adfsdca+"
    capabilities = Capabilities(losses=SMOOTH_LOSSES, many_partitions=True, cluster=True, shrinking=False,
                                warm_start=True)
    adaptive = True
    sampling = "adaptive+"

    def __post_init__(self):
        check_local_iters(self.local_iters)
        if isinstance(self.shrink, bool) or not (isinstance(self.shrink, numbers.Real)
                                                 and math.isfinite(self.shrink) and self.shrink >= 1):
            raise ValueError(f"shrink must be a finite number >= 1, got {self.shrink!r}.")
        if isinstance(self.floor, bool) or not (isinstance(self.floor, numbers.Real) and 0 <= self.floor < 1):
            raise ValueError(f"floor must be a number in [0, 1), got {self.floor!r}.")

    def setup(self, info, ops):
        """The plan: ``sigma' = K`` (module docstring) and the loss's smoothness ``L~``.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused: the plan needs no
            sum over the rows.

        Returns
        -------
        DualFreePlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When the loss is not smooth.
        """
        return _plan(self, info)


def _plan(settings, info):
    smoothness = float(info.loss.smoothness)
    if not (math.isfinite(smoothness) and smoothness > 0):
        raise ValueError(f"solver={settings.name!r} needs a smooth loss (one of {list(SMOOTH_LOSSES)}), "
                         f"got loss={info.loss.name!r}.")
    sigma = float(info.n_partitions)
    lam_n = info.lam_n
    b = int(getattr(settings, "batch_size", None) or 1)
    # ESO (He & Takáč 2015 [HT15] eq. (10)): v_i = min(b, max_j |J_j|) ||x_i||^2; 1 for b = 1
    eso = float(min(b, max(1, int(info.max_column_nnz))))
    return DualFreePlan(settings=settings, loss=info.loss, n=info.n, d=info.d, lam_n=lam_n,
                        n_partitions=info.n_partitions, sigma_prime=sigma, smoothness=smoothness,
                        # c_i^2 = v_i gamma + n^2 lam^2 beta_i with v_i = sigma' ||x_i||^2,
                        # gamma = lam n, beta_i = 1/L~ ([HT15] Thm 1 case 1; docs/references.md, note N6)
                        curv=eso * sigma * lam_n, base=lam_n * lam_n / smoothness, batch_size=b)


@dataclass(frozen=True)
class DualFreePlan(PlanBase):
    """:class:`DualFreeSDCA` or :class:`AdaptiveDualFreeSDCA` resolved for one data set."""

    settings: object
    loss: object
    n: int
    d: int
    lam_n: float
    n_partitions: int
    sigma_prime: float
    smoothness: float
    curv: float
    base: float
    batch_size: int = 1
    eval_every: int = 1
    rounds_per_epoch: int = 1
    primal_from_dual = False

    def init_global(self):
        return DualFreeGlobal(np.zeros(self.d), np.zeros(_N_SUMS), np.array([math.inf, 0.0, 0.0]))

    # --- the stall watch (module docstring, safeguard 2) ------------------------

    def _watched(self, state, w, sums, report):
        """``(next global state, report)`` with the watch moved on by ``report``; the round that stops
        carries the reason in ``report.stop``, which the driver turns into a ConvergenceWarning on the client
        and the end of the fit."""
        best, since, stopped = (float(v) for v in state.watch)
        if report.measured:
            rel = (report.primal - report.dual) / abs(report.primal) if report.primal != 0 else math.inf
            if math.isfinite(rel) and rel < best * (1.0 - STALL_DROP):
                best, since = rel, 0.0
            else:
                since += 1.0
            if since >= STALL_ROUNDS and not (best <= STALL_FLOOR) and not stopped:
                stopped = 1.0
                report = report._replace(stop=(
                    f"solver={self.settings.name!r} stopped: its certified relative duality gap has not fallen "
                    f"below {best:.3e} for {STALL_ROUNDS} rounds, so it cannot converge on this problem "
                    f"(dual-free steps with lam n = {self.lam_n:.3g}); use solver='sdca' (or 'cocoa+'), or "
                    f"solver='dfsdca' with sampling='importance'."))
        return DualFreeGlobal(w, sums, np.array([best, since, stopped])), report

    def _stopped(self, state):
        return state.watch[2] != 0.0

    def init_local(self, part, ctx):
        """``alpha = 0`` (so ``w = 0`` keeps the invariant) and one row of unit sums per sampling unit."""
        return DualFreeLocal(np.zeros(part.n_rows), np.zeros((self._n_units(part), 3)))

    def phases(self):
        if self.settings.adaptive:
            return (Phase("residues", self.local_residues, self.combine_residues),
                    Phase("steps", self.local_steps, self.combine_steps))
        return (Phase("round", self.local_round, self.combine_round),)

    def dual_point(self, part, local, state):
        """``a_i = -phi_i'(x_i.w)`` for the partition's rows (feasible; ``alpha*`` at the optimum)."""
        kind, param = int(self.loss.kind), self.loss.param
        return np.concatenate([kern.dual_point(rows.indptr, rows.indices, rows.data, rows.y, state.w, lo, hi, kind,
                                               param) for rows, lo, hi, _ in part.pieces()])

    # --- sampling units -------------------------------------------------------

    @staticmethod
    def _n_units(part):
        """Sampling units of a partition: the whole partition in memory, else one per store block."""
        return 1 if part.whole() is not None else len(part.block_starts) - 1

    def _visit(self, part, ctx):
        """Yield ``(unit index, rows, lo, hi, start, stream)`` in this round's order, reading blocks as they come."""
        rows = part.whole()
        if rows is not None:
            yield 0, rows, 0, rows.n_rows, 0, ctx.partition
            return
        nb = len(part.block_starts) - 1
        order = permutation_order(ctx.random_state, ctx.round, ctx.partition, nb, nb, 0)
        for j, (blk, lo, hi, start) in zip(order, part.pieces(order)):
            yield int(j), blk, lo, hi, start, ctx.partition if nb == 1 else _block_stream(ctx.partition, int(j))

    def _residues(self, rows, lo, hi, start, alpha, w, g):
        kind, param = int(self.loss.kind), self.loss.param
        return kern.residue_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm,
                                 row_view(alpha, rows, lo, start), w, lo, hi, kind, param, self.curv, self.base,
                                 1.0 / self.lam_n, g)

    def _report(self, w, loss_sum, conj_sum, wa_sq, steps):
        lam = self.lam_n / self.n
        return RoundReport(True, loss_sum / self.n + 0.5 * lam * float(w @ w),
                           -conj_sum / self.n - 0.5 * lam * wa_sq, float(steps))

    # --- dfsdca: one phase ----------------------------------------------------

    def _fixed_steps(self, rows, lo, hi, alpha_view, u, delta_w, ctx, stream):
        """``local_iters * n_u`` steps on one unit with fixed ``p`` (uniform or importance)."""
        kind, param = int(self.loss.kind), self.loss.param
        n_u = hi - lo
        if n_u == 0:
            return 0
        n_steps = max(1, int(math.ceil(self.settings.local_iters * n_u)))
        lipschitz = self.sigma_prime * self.smoothness * rows.sqnorm  # sigma' L_i, L_i = L~ ||x_i||^2 (eq. 1)
        if self.settings.sampling == "uniform":
            # theta = lam / (lam n + L_max) ([HT15] §3), p_i = 1/n: theta / p_i = lam n / (lam n + L_max)
            step = np.full(rows.n_rows, self.lam_n / (self.lam_n + float(lipschitz[lo:hi].max())))
            order = iid_order(ctx.random_state, ctx.round, stream, n_u, n_steps, lo)
        else:
            # p_i ∝ lam n + L_i, theta = lam n_u / sum_u (lam n + L_j): theta / p_i = lam n / (lam n + L_i)
            # (docs/references.md, note N6: theta <= min_i p_i lam n / (lam n + L_i), with equality for every i)
            weights = self.lam_n + lipschitz
            step = self.lam_n / weights
            order = kern.weighted_order(ctx.random_state, ctx.round, stream, weights[lo:hi], n_steps, lo)
        return kern.dual_free_steps(rows.indptr, rows.indices, rows.data, rows.y, alpha_view, u, delta_w, order,
                                    step, kind, param, self.sigma_prime, 1.0 / self.lam_n)

    def local_round(self, part, local, state, ctx):
        """Gap sums at the round's ``w`` and the steps, one unit (block) at a time.

        Sends ``[delta_w_k, g_k]`` (``2d`` values, ``g_k = -X_k^T phi'/(lam n)``
        for the dual objective) and ``(loss_sum, conj_sum, steps)``.
        """
        w = state.w
        if self._stopped(state):
            return local, Contribution(compress(np.zeros(2 * self.d)), np.zeros(3))
        alpha = local.alpha.copy()
        u = w.copy()
        delta_w = np.zeros_like(w)
        g = np.zeros_like(w)
        loss_sum = conj_sum = 0.0
        steps = 0
        for _, rows, lo, hi, start, stream in self._visit(part, ctx):
            ls, cs, _, _ = self._residues(rows, lo, hi, start, alpha, w, g)
            loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
            steps += self._fixed_steps(rows, lo, hi, row_view(alpha, rows, lo, start), u, delta_w, ctx, stream)
        vector = compress(np.concatenate([delta_w, g]))
        return DualFreeLocal(alpha, local.unit_sums), Contribution(vector, np.array([loss_sum, conj_sum,
                                                                                     float(steps)]))

    def combine_round(self, state, total, ctx):
        """``w += sum_k delta_w_k``; the gap of the round's start at the dual point ``-phi'(Xw)``."""
        if self._stopped(state):
            return state, RoundReport(False, math.nan, math.nan, 0.0)
        both = dense(total.vector, 2 * self.d)
        wa = both[self.d:]
        loss_sum, conj_sum, steps = total.scalars
        report = self._report(state.w, loss_sum, conj_sum, float(wa @ wa), steps)
        return self._watched(state, state.w + both[:self.d], state.sums, report)

    # --- adfsdca: residues, then steps ----------------------------------------

    def local_residues(self, part, local, state, ctx):
        """Every unit's ``S_u = sum c_i |kappa_i|`` and ``sum kappa_i^2`` at ``w``, with the gap sums."""
        w = state.w
        if self._stopped(state):
            return local, Contribution(compress(np.zeros(self.d)), np.zeros(5))
        g = np.zeros_like(w)
        unit_sums = np.array(local.unit_sums, dtype=np.float64, copy=True)
        totals = np.zeros(5)
        for j, (rows, lo, hi, start) in enumerate(part.pieces() if part.whole() is None else
                                                  [(part.whole(), 0, part.n_rows, 0)]):
            sums = self._residues(rows, lo, hi, start, local.alpha, w, g)
            c_sq = float(np.sum(self.curv * rows.sqnorm[lo:hi] + self.base))
            totals += np.array(sums + (c_sq,))
            unit_sums[j] = (sums[2], sums[3], c_sq)
        return DualFreeLocal(local.alpha, unit_sums), Contribution(compress(g), totals)

    def combine_residues(self, state, total, ctx):
        """Keep ``(loss_sum, conj_sum, S, sum kappa^2, sum c^2, ||w(a)||^2)`` in the global state for the steps."""
        if self._stopped(state):
            return state, RoundReport(False, math.nan, math.nan, 0.0)
        wa = dense(total.vector, self.d)
        sums = np.concatenate([total.scalars, [float(wa @ wa)]])
        return DualFreeGlobal(state.w, sums, state.watch), RoundReport(False, math.nan, math.nan, 0.0)

    def local_steps(self, part, local, state, ctx):
        """Algorithm 1 on each unit: ``round(local_iters n S_u / S)`` adaptive steps (module docstring)."""
        w = state.w
        s_all, k2_all, c_all = float(state.sums[2]), float(state.sums[3]), float(state.sums[4])
        plus = self.settings.name == "adfsdca+"
        alpha = local.alpha.copy()
        u = w.copy()
        delta_w = np.zeros_like(w)
        steps = 0
        kind, param = int(self.loss.kind), self.loss.param
        if s_all > 0.0 and not self._stopped(state):
            for j, rows, lo, hi, start, stream in self._visit(part, ctx):
                s_u, k2_u, c_u = local.unit_sums[j]
                if plus:
                    eps = self.settings.floor
                    share = (1.0 - eps) * s_u / s_all + eps * c_u / c_all  # the unit's mass of omega
                    n_steps = int(round(self.settings.local_iters * self.n * share))
                    if n_steps == 0:
                        continue
                    # the other units at the round's start: omega >= (1 - eps) p*, so
                    # sum a / omega <= S (S - S_u) / (1 - eps) (a conservative Theta)
                    d_rest = s_all * (s_all - s_u) / (1.0 - eps) if eps < 1.0 else 0.0
                    steps += kern.plus_steps(
                        rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm, row_view(alpha, rows, lo, start),
                        u, delta_w, lo, hi, n_steps, ctx.random_state, ctx.round, stream, share, k2_all - k2_u,
                        d_rest, s_all, c_all, eps, float(self.settings.shrink), self.curv, self.base, kind, param,
                        self.sigma_prime, 1.0 / self.lam_n, np.empty(n_steps, dtype=np.int64), np.empty(n_steps))
                    continue
                if s_u <= 0.0:
                    continue
                share = s_u / s_all
                b = self.batch_size
                n_steps = int(round(self.settings.local_iters * self.n * share / b))
                if n_steps == 0:
                    continue
                if b > 1:
                    steps += kern.minibatch_adaptive_steps(
                        rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm, row_view(alpha, rows, lo, start),
                        u, delta_w, lo, hi, n_steps, b, ctx.random_state, ctx.round, stream, share, k2_all - k2_u,
                        s_all * (s_all - s_u), self.curv, self.base, kind, param, self.sigma_prime,
                        1.0 / self.lam_n, np.empty((n_steps, b), dtype=np.int64), np.empty(n_steps))
                    continue
                order = np.empty(n_steps, dtype=np.int64)
                thetas = np.empty(n_steps)
                if self.settings.probabilities == "refreshed":
                    # refreshes per epoch -> per call: this unit's part of the epoch, at least one
                    n_refresh = max(1, int(round(self.settings.refreshes * n_steps / max(hi - lo, 1))))
                    steps += kern.refreshed_adaptive_steps(
                        rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm, row_view(alpha, rows, lo, start),
                        u, delta_w, lo, hi, n_steps, n_refresh, ctx.random_state, ctx.round, stream, share,
                        k2_all - k2_u, s_all * (s_all - s_u), self.curv, self.base, kind, param, self.sigma_prime,
                        1.0 / self.lam_n, order, thetas)
                    continue
                # the other units at the round's start: sum_b S_b^2 / share_b = S (S - S_u)
                steps += kern.adaptive_steps(rows.indptr, rows.indices, rows.data, rows.y, rows.sqnorm,
                                             row_view(alpha, rows, lo, start), u, delta_w, lo, hi, n_steps,
                                             ctx.random_state, ctx.round, stream, share, k2_all - k2_u,
                                             s_all * (s_all - s_u), self.curv, self.base, kind, param,
                                             self.sigma_prime, 1.0 / self.lam_n, order, thetas)
        return DualFreeLocal(alpha, local.unit_sums), Contribution(compress(delta_w), np.array([float(steps)]))

    def combine_steps(self, state, total, ctx):
        """``w += sum_k delta_w_k``; the gap of the round's start from the residue phase's sums."""
        if self._stopped(state):
            return state, RoundReport(False, math.nan, math.nan, 0.0)
        loss_sum, conj_sum, _, _, _, wa_sq = state.sums
        report = self._report(state.w, loss_sum, conj_sum, wa_sq, total.scalars[0])
        return self._watched(state, apply_vector(state.w, total.vector), state.sums, report)
