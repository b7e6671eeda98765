"""A primal Newton method with a backtracking line search, for many rows and few features.

Solves

    min_w P(w) = 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2

(``s_i`` the row weights, 1 when unweighted) for a twice differentiable
``phi_i`` (logistic, squared; squared hinge and smoothed hinge through their
generalised Hessian).  Where ``n >> d`` and ``C = 1/(lam n)`` is large a dual
coordinate method needs many epochs, and LIBLINEAR's primal trust-region
Newton solver is 20-95x faster; the ``d x d`` Hessian is then small.

A round is one pass in most rounds, and at most three phases:

1. **newton**: every partition sends, at the round's point ``c`` (the model:
   the last accepted point plus its full Newton step), its loss sum, its
   conjugate sum at the dual point ``alpha_i = -s_i phi_i'(x_i.c)``, its
   gradient sum ``g_k = sum s_i phi_i'(x_i.c) x_i`` (the contribution's
   d-vector) and its Hessian sum ``H_k = X_k^T D_k X_k``,
   ``D_ii = s_i phi_i''(x_i.c)`` (the upper triangle, after the three sums
   in the contribution's scalars); the tree reduce adds them.  The combine
   records ``P(c)`` and ``D(alpha)`` (with ``X^T alpha = -g``,
   ``w(alpha) = -g / (lam n)``), and accepts ``c`` when the full step
   ``t = 1`` meets Armijo's sufficient decrease from the accepted point
   ``w``

       P(w + t s) <= P(w) + c1 t grad P(w).s,   c1 = 1e-4

   (Nocedal & Wright, Numerical Optimization, 2nd ed., eq. (3.4); ``c1 =
   1e-4`` is their suggested value, §3.1).  Accepted, ``c`` becomes ``w``
   and the combine solves

       (H / n + lam I) s = -(g / n + lam w)

   by Cholesky in float64 (the Newton direction, eq. (2.15)): the next
   round's point is ``w + s``.  Near the optimum ``t = 1`` is always taken
   (for ``c1 < 1/2``, their Theorem 3.6), so a round is this one pass: the loss at the full
   step and the Newton system there come from the same pass.
2. **line search**: only when ``t = 1`` failed, every partition sends
   ``sum s_i phi_i(x_i.w + t x_i.s)`` for the next three steps ``t`` of the
   fixed ladder ``1, 1/2, ..., 2^-20`` (one pass); the combine takes the
   largest meeting Armijo's condition as the next round's point.
3. **line search, the rest**: only when those failed too, the same sums for
   the other seventeen (a second pass); when no step of the ladder decreases
   ``P`` enough, the next round's point is ``w + 2^-21 s``, tested there as
   a full step, and the backtracking goes on (a generalised Hessian that is
   far too flat); at the rounding floor, where that step no longer moves
   ``w``, the next point is ``w``.

The step taken is the largest of the ladder meeting Armijo's condition,
evaluated in at most three passes instead of one over all 21 steps.  A
point reached by a ladder step is accepted without a test in the next round
(its decrease was tested), which only solves the Newton system there.  A
fit that stops short of ``tol`` returns the round's point only where that
test accepts it (or it needs none), else the accepted point
(:meth:`NewtonPlan.settled`).

Certificate: like :mod:`~daskdca.methods.pegasos`, the model is the round's
point ``c`` and the dual point ``alpha_i = -s_i phi_i'(x_i.c)``, always
feasible, ``alpha*`` at the optimum; every round reports ``P(c)`` and
``D(alpha)`` from phase 1's sums (the gap of the state the round starts
from, as the drivers expect), so the driver stops on the certified gap,
which it recomputes from the dual point alone.  The gap falls quadratically near the optimum (Nocedal &
Wright Theorem 3.5); the registry says "linear", the rate the drivers know.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np

from daskdca.kernels.newton import (
    cholesky_solve,
    dual_point,
    ladder_loss_sums,
    newton_sums,
    newton_system,
    packed_size,
)
from daskdca.methods.base import (
    Capabilities,
    Contribution,
    Phase,
    PlanBase,
    RoundReport,
    chunk_sums,
    compress,
    dense,
)

__all__ = ["Newton", "NewtonGlobal", "NewtonLocal", "NewtonPlan"]

# Twice differentiable losses (squared hinge and smoothed hinge through the generalised Hessian).
NEWTON_LOSSES = ("logistic", "squared", "squared_hinge", "smoothed_hinge")
# Armijo's sufficient-decrease constant c1 (Nocedal & Wright, Numerical Optimization, 2nd ed., eq. (3.4);
# "c1 = 1e-4" is the value they suggest in §3.1).
ARMIJO_C1 = 1e-4
# The backtracking ladder t = 1, 1/2, ..., 2^-20 (Nocedal & Wright Algorithm 3.1 with rho = 1/2, cut at 21
# trials).  t = 1 is tested on the Newton pass at the full step; the next LADDER_FIRST - 1 steps in one pass when
# it fails, the rest in another only when those fail too (rare: near the optimum t = 1 passes).  Measured on a
# 1,000,000 x 122 logistic set: 0.22 s for the Newton pass, 0.09 s for a pass over 4 steps, 0.29 s over all 21.
LADDER = tuple(0.5 ** j for j in range(21))
LADDER_FIRST = 4


class NewtonGlobal(NamedTuple):
    """The round's point ``w`` (the model), the accepted point ``base`` with ``P(base)``, its direction ``s``
    and slope ``grad P(base).s`` (a zero ``s``: ``w`` is accepted without a test), ``searching`` (1.0 while
    the line search runs) and ``(P(w), D(alpha), rows, passes)``: phase 1's gap sums and the round's passes."""

    w: np.ndarray
    base: np.ndarray
    base_primal: float
    direction: np.ndarray
    slope: float
    searching: float
    sums: np.ndarray


class NewtonLocal(NamedTuple):
    """Newton keeps nothing per partition; one empty field keeps the state a NamedTuple of arrays."""

    unused: np.ndarray


@dataclass(frozen=True)
class Newton:
    """Primal Newton with an Armijo line search on a ladder of steps, for ``n >> d``.

    Solves ``min_w 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2`` for a twice
    differentiable loss: each round every partition sends its gradient and
    ``d x d`` Hessian sums at the full Newton step from the last accepted
    point; where that step meets Armijo's condition the combine accepts it
    and solves ``(H / n + lam I) s = -grad P(w)`` by Cholesky for the next
    one, and where it does not, one or two more passes pick the largest step
    ``t in {1/2, ..., 2^-20}`` that does (module docstring).  Every round
    reports the gap at its starting point.

    Parameters
    ----------
    newton_max_features : int, default=5000
        The largest ``d`` it accepts: every partition sends ``d (d + 1) / 2``
        Hessian entries each round and the combine factors a ``d x d``
        matrix (``d^3 / 3`` flops).  Above it use ``solver="sdca"``.
    """

    newton_max_features: int = 5000
    name = "newton"
    capabilities = Capabilities(losses=NEWTON_LOSSES, many_partitions=True, cluster=True, shrinking=False,
                                gap_rate="linear", warm_start=False, sample_weight=True, multi_class=True)

    def __post_init__(self):
        value = self.newton_max_features
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"newton_max_features must be a positive int, got {value!r}.")

    def setup(self, info, ops):
        """Check the loss and ``d``; nothing else depends on the data.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused here.

        Returns
        -------
        NewtonPlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When the loss is not twice differentiable, or ``d`` is more than
            ``newton_max_features``.
        """
        if info.loss.name not in NEWTON_LOSSES:
            raise ValueError(f"solver='newton' needs a twice differentiable loss (one of {list(NEWTON_LOSSES)}), "
                             f"got loss={info.loss.name!r}; use solver='sdca' for it.")
        if info.d > self.newton_max_features:
            raise ValueError(f"solver='newton' forms a d x d Hessian and accepts at most newton_max_features="
                             f"{self.newton_max_features} features, got d={info.d}; use solver='sdca' (or raise "
                             "newton_max_features).")
        return NewtonPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam=float(info.lam))


@dataclass(frozen=True)
class NewtonPlan(PlanBase):
    """:class:`Newton` resolved for one data set (``PlanBase``'s name, model ``w`` and measuring every
    ``eval_every`` rounds; three phases a round, the third without a pass in most rounds).

    The rounds read the problem through ``size`` (the variables), :meth:`_pieces`, :meth:`_newton_chunk` and
    :meth:`_ladder_sums`, which :class:`~daskdca.methods.multinomial_newton.MultinomialNewtonPlan` overrides
    for the softmax problem's ``K d`` variables."""

    settings: Newton
    loss: object
    n: int
    d: int
    lam: float
    eval_every = 1  # phase 1's sums are the gap's: every round is measured
    rounds_per_epoch = 1
    primal_from_dual = False

    def phases(self):
        return (Phase("newton", self.local_newton, self.combine_newton),
                Phase("line_search", self.local_line_search, self.combine_line_search),
                Phase("line_search_rest", self.local_line_search_rest, self.combine_line_search_rest))

    @property
    def size(self):
        """The variables: ``d``."""
        return self.d

    def init_global(self):
        size = self.size
        return NewtonGlobal(np.zeros(size), np.zeros(size), math.inf, np.zeros(size), 0.0, 0.0, np.zeros(4))

    def init_local(self, part, ctx):
        return NewtonLocal(np.zeros(0))

    def dual_point(self, part, local, state):
        """``alpha_i = -s_i phi_i'(x_i.w)`` for the partition's rows (module docstring)."""
        kind, param = int(self.loss.kind), self.loss.param
        return np.concatenate([dual_point(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, state.w, lo, hi,
                                          kind, param) for rows, lo, hi, _ in part.pieces()])

    def local_newton(self, part, local, state, ctx):
        """Loss, conjugate, gradient and Hessian sums of this partition's rows at ``w``, chunk by chunk on the
        step's threads (:func:`~daskdca.methods.base.chunk_sums`)."""
        size = self.size
        total = chunk_sums(self._pieces(part), partial(self._newton_chunk, state), 3 + size + packed_size(size))
        # the gradient is the d-vector (sparse when it has few non-zeros); the Hessian's upper triangle rides in
        # the scalars after the loss, conjugate and row sums, so that the one-vs-rest wrapper, which splits
        # vectors by d and scalars evenly, carries it
        return local, Contribution(compress(total[3:3 + size]), np.concatenate((total[:3], total[3 + size:])))

    def _pieces(self, part):
        """The partition's ``(rows, lo, hi, extra)`` pieces as :meth:`_newton_chunk` reads them."""
        return part.pieces()

    def _newton_chunk(self, state, rows, lo, hi, _):
        """Loss, conjugate and row sums, gradient and packed Hessian of rows ``[lo, hi)`` at ``state.w``."""
        sums = np.zeros(2)
        out = np.zeros(self.d + packed_size(self.d))
        seen = newton_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, state.w, lo, hi,
                           int(self.loss.kind), self.loss.param, sums, out)
        return np.concatenate((sums, [float(seen)], out))

    def combine_newton(self, state, total, ctx):
        """``P(w)`` and ``D(alpha)`` kept for the report; ``w`` accepted when it needs no test or ``t = 1`` meets
        Armijo's condition, and then the next point ``w + (H / n + lam I)^-1 (-grad P(w))``."""
        loss_sum, conj_sum, rows = total.scalars[:3]
        d, n, lam, w = self.size, self.n, self.lam, state.w
        g = dense(total.vector, d)
        w_alpha = g / (-lam * n)  # X^T alpha / (lam n) with X^T alpha = -g
        primal = loss_sum / n + 0.5 * lam * float(w @ w)
        dual = -conj_sum / n - 0.5 * lam * float(w_alpha @ w_alpha)
        sums = np.array([primal, dual, rows, 1.0])  # the gap's sums, and the passes of this round so far
        if np.any(state.direction) and not primal <= state.base_primal + ARMIJO_C1 * state.slope:
            return state._replace(searching=1.0, sums=sums), RoundReport(False, math.nan, math.nan, 0.0)
        grad = g / n + lam * w
        direction, ok = cholesky_solve(newton_system(np.ascontiguousarray(total.scalars[3:]), d, 1.0 / n, lam), -grad)
        if not ok:  # H/n + lam I is positive definite; only non-finite sums get here
            direction = np.zeros(d)
        return (NewtonGlobal(w + direction, w, primal, direction, float(grad @ direction), 0.0, sums),
                RoundReport(False, math.nan, math.nan, 0.0))

    def _ladder_sums(self, part, state, steps):
        """``sum s_i phi_i(x_i.base + t x_i.s)`` for every ``t`` of ``steps``, in one pass."""
        kind, param = int(self.loss.kind), self.loss.param

        def chunk(rows, lo, hi, _):
            out = np.zeros(steps.shape[0])
            ladder_loss_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, state.base, state.direction,
                             lo, hi, kind, param, steps, out)
            return out

        return chunk_sums(part.pieces(), chunk, steps.shape[0])

    def _armijo(self, state, steps, sums):
        """The first of ``steps`` meeting Armijo's condition (eq. (3.4)) given their loss ``sums``, or None."""
        w, s, n, lam = state.base, state.direction, self.n, self.lam
        for t, loss_sum in zip(steps, sums):
            trial = w + t * s
            if loss_sum / n + 0.5 * lam * float(trial @ trial) <= state.base_primal + ARMIJO_C1 * t * state.slope:
                return trial
        return None

    def settled(self, state, primal):
        """For a fit that stops short of ``tol`` (its budget, a callback): the accepted point ``base`` in place of
        the round's point ``w`` where ``w`` is untested (a non-zero direction) and its certified objective
        ``primal`` fails the Armijo test the next round would have made; else None (``w`` is kept).

        The rounds hand on ``w`` untested, so a budget could end on a rejected full step far above ``P(base)``
        (breast cancer, squared hinge, ``C = 1e6``: ``P = 667.8`` after 19 rounds, 0.0119 after 18).  A fit's
        returned ``P`` so never rises with its budget (to rounding); a longer or resumed fit goes on from ``w`` as
        before.
        """
        if not np.any(state.direction) or float(primal) <= state.base_primal + ARMIJO_C1 * state.slope:
            return None
        return self._stepped(state, state.base)

    def _stepped(self, state, point):
        """The next round's point ``point``, accepted there without a test (its decrease was tested here)."""
        return state._replace(w=point, direction=np.zeros(self.size), slope=0.0, searching=0.0)

    def local_line_search(self, part, local, state, ctx):
        """Only where ``t = 1`` failed: the loss sums of the ladder's next steps, in one pass."""
        if not state.searching:
            return local, Contribution(None, np.zeros(LADDER_FIRST - 1))
        return local, Contribution(None, self._ladder_sums(part, state, np.array(LADDER[1:LADDER_FIRST])))

    def combine_line_search(self, state, total, ctx):
        """The largest of those steps meeting Armijo's condition, if any, becomes the next point."""
        if not state.searching:
            return state, RoundReport(False, math.nan, math.nan, 0.0)
        state = state._replace(sums=state.sums + np.array([0.0, 0.0, 0.0, 1.0]))  # this pass
        trial = self._armijo(state, LADDER[1:LADDER_FIRST], total.scalars)
        return (state if trial is None else self._stepped(state, trial)), RoundReport(False, math.nan, math.nan,
                                                                                     0.0)

    def local_line_search_rest(self, part, local, state, ctx):
        """Only where the first steps all failed: the loss sums of the rest of :data:`LADDER`, in one pass."""
        if not state.searching:
            return local, Contribution(None, np.zeros(len(LADDER) - LADDER_FIRST))
        return local, Contribution(None, self._ladder_sums(part, state, np.array(LADDER[LADDER_FIRST:])))

    def combine_line_search_rest(self, state, total, ctx):
        """The largest remaining step meeting Armijo's condition; where none does, the backtracking goes on from
        the ladder's last step (:meth:`_shorter`).  The report of the round's point."""
        primal, dual, rows, passes = state.sums
        if state.searching:
            passes += 1.0
            trial = self._armijo(state, LADDER[LADDER_FIRST:], total.scalars)
            state = self._shorter(state) if trial is None else self._stepped(state, trial)
        return state, RoundReport(True, float(primal), float(dual), float(passes * rows))

    def _shorter(self, state):
        """The next round's point when no step of the ladder met Armijo's condition: ``base + t s`` with ``t`` half
        the ladder's last step, tested as a full step there (its direction and slope scaled by ``t``), so that
        the backtracking of Nocedal & Wright's Algorithm 3.1 goes on past ``2^-20``.

        A generalised Hessian can be far too flat for the step it gives: the smoothed hinge at ``w = 0`` has
        every margin in its linear piece, ``phi'' = 0``, and the Newton step ``-grad P / lam`` is longer than
        ``2^20`` times any step that decreases ``P``; going back to ``base`` would solve the same system and
        fail the same way every round.  Where the scaled step no longer moves ``base`` (the rounding floor, at
        the optimum) the next point is ``base``, accepted without a test.
        """
        t = LADDER[-1] * 0.5
        direction = t * state.direction
        point = state.base + direction
        if np.array_equal(point, state.base):
            return self._stepped(state, state.base)
        return state._replace(w=point, direction=direction, slope=t * state.slope, searching=0.0)
