"""Multinomial logistic regression (the softmax loss) by primal L-BFGS, for many rows and few features.

For ``K > 2`` classes, with ``W`` of shape ``(K, d)`` (row ``w_k`` scores
class ``k``) and row weights ``s_i`` (``sample_weight`` times the row's
``class_weight``; 1 when unweighted), the method solves

    min_W P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2,

the problem :mod:`daskdca.methods.multinomial` solves by dual coordinate
ascent (its docstring has the dual ``D(alpha)``, ``alpha`` of shape
``(K, n)``).  Where ``n >> d`` and ``C = 1/(lam n)`` is large, dual
coordinate steps need hundreds of epochs; a quasi-Newton method on the
``K d`` primal variables needs tens to hundreds of passes, as scikit-learn's
``LogisticRegression(solver="lbfgs")``.

A round is one pass over every partition: at the round's point ``W`` (the
trial point ``W_k + t p_k``) each partition sends its loss sum, its
conjugate sum at the dual point ``alpha_{:, i} = s_i (e_{y_i} - p_i)``,
``p_i = softmax(W x_i)``, and its gradient sum
``G = sum_i s_i (p_i - e_{y_i}) x_i^T`` (``K x d``, float64), added by the
tree reduce.  The combine, on the driver, records ``P(W)`` and
``D(alpha)`` (``alpha X = -G``, so ``W(alpha) = -G / (lam n)``) and tests
Armijo's sufficient decrease from the accepted point ``W_k``,

    P(W_k + t p_k) <= P(W_k) + c1 t grad P(W_k).p_k,   c1 = 1e-4

(Nocedal & Wright, Numerical Optimization, 2nd ed., eq. (3.4)):

- accepted: the pair ``s = W - W_k``, ``y = grad P(W) - grad P(W_k)``
  joins the memory of the last ``m = 10`` pairs (dropped when
  ``s.y <= 0``, which the strong convexity of ``P`` rules out but for
  rounding), the direction ``p = -H grad P(W)`` comes from the two-loop
  recursion (their Algorithm 7.4, ``H^0 = (s.y / y.y) I``, eq. (7.20);
  Liu & Nocedal, "On the limited memory BFGS method for large scale
  optimization", Math. Programming 45, 1989), and the next round's point
  is ``W + p`` (step 1);
- rejected: the step halves along the same direction (backtracking, their
  Algorithm 3.1 with ``rho = 1/2``), and the next round's point is
  ``W_k + (t / 2) p_k``.  Below ``2^-30`` the memory is cleared and the
  next round starts again from ``W_k`` (a rounding floor, at the optimum).

The first round and a restart accept their point without a test; with no
pair stored the direction is ``-grad P / max(1, ||grad P||)`` (a first step
of length at most 1, as L-BFGS-B takes).  Nothing is random: the iterates
depend on the partitions only through the order of the gradient's sums.

Certificate: as :mod:`~daskdca.methods.newton` certifies binary fits, the
model is the round's point ``W`` and the dual point
``alpha_{:, i} = s_i (e_{y_i} - softmax(W x_i))``, always feasible (each
``beta_i = softmax(W x_i)`` lies in the simplex) and ``alpha*`` at the
optimum; every round reports ``P(W)`` and ``D(alpha)`` of its starting
point, and the drivers recompute the gap from that dual point alone
(``primal_from_dual`` is False: the primal point is ``W``, not
``W(alpha)``), in process, out of core and on a cluster alike.

Two classes: the plan runs the same L-BFGS rounds on the binary logistic
problem at ``lam`` (``w`` a d-vector; the softmax problem of two classes at
``2 lam``, :mod:`daskdca.methods.multinomial`), certified by Newton's dual
point ``alpha_i = -s_i phi_i'(x_i.w)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels.multinomial_lbfgs import (
    flat_dot,
    logistic_lbfgs_sums,
    softmax_dual_point,
    softmax_lbfgs_sums,
    two_loop_direction,
)
from daskdca.kernels.newton import dual_point as logistic_dual_point
from daskdca.losses import LOGISTIC, Softmax
from daskdca.methods.base import Capabilities, Contribution, PlanBase, RoundReport, chunk_sums, compress, dense
from daskdca.partitions import softmax_rows

__all__ = ["LBFGS_MEMORY", "MultinomialLBFGS", "MultinomialLBFGSGlobal", "MultinomialLBFGSLocal",
           "MultinomialLBFGSPlan", "softmax_pieces"]

#: Pairs ``(s, y)`` the L-BFGS memory keeps (Nocedal & Wright §7.2: "between 3 and 20" is usual).
LBFGS_MEMORY = 10
#: Armijo's sufficient-decrease constant (Nocedal & Wright eq. (3.4), their suggested 1e-4, §3.1).
ARMIJO_C1 = 1e-4
#: The smallest trial step; below it the memory is cleared and the search restarts from the accepted point.
MIN_STEP = 0.5 ** 30


def softmax_pieces(part):
    """``(rows, lo, hi, (cls, weight))`` of every piece of a partition of the softmax problem: the rows' class
    indices and weights (``softmax_rows``, computed once per distinct block)."""
    source = labels = None
    for rows, lo, hi, _ in part.pieces():
        if rows is not source:
            source, labels = rows, softmax_rows(rows, part.problems)
        yield rows, lo, hi, labels


class MultinomialLBFGSGlobal(NamedTuple):
    """The round's point ``w`` (the model: ``(K, d)``, a d-vector for two classes), the accepted point
    ``base`` (flattened) with ``P(base)`` and ``grad P(base)``, the direction, the trial ``step`` along it
    (0: ``w`` is accepted without a test), the slope ``grad P(base).direction``, and the memory: the pairs
    ``S``, ``Y`` (``(m, K d)``, the oldest first) of which the first ``pairs`` are stored."""

    w: np.ndarray
    base: np.ndarray
    base_primal: float
    base_grad: np.ndarray
    direction: np.ndarray
    step: float
    slope: float
    S: np.ndarray
    Y: np.ndarray
    pairs: float


class MultinomialLBFGSLocal(NamedTuple):
    """L-BFGS keeps nothing per partition; one empty field keeps the state a NamedTuple of arrays."""

    unused: np.ndarray


@dataclass(frozen=True)
class MultinomialLBFGS:
    """Multinomial logistic regression by primal L-BFGS: ``solver="multinomial_lbfgs"``.

    Solves, for ``K > 2`` classes,
    ``min_W 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2``
    (scikit-learn's multinomial ``LogisticRegression`` with ``C = 1/(lam n)``
    and no intercept) by L-BFGS with an Armijo backtracking line search: each
    round is one pass over every partition for the loss and the ``K x d``
    gradient at a trial point; the combine accepts or halves the step and
    computes the next direction by the two-loop recursion.  In memory, out
    of core and on a cluster (rounds); deterministic.  Certified by the dual
    point ``alpha_{:, i} = s_i (e_{y_i} - softmax(W x_i))``
    (:mod:`daskdca.methods.multinomial_lbfgs`).  On two classes it fits the
    binary logistic problem by the same rounds.  ``multi_class`` in its
    capabilities is False: it fits the one multinomial problem.  It takes no
    warm start (use :class:`~daskdca.methods.MultinomialSDCA` for
    ``dual_init``).

    Parameters
    ----------
    memory : int, default=10
        Pairs ``(s, y)`` kept; the global state holds ``2 memory K d``
        floats, sent to every worker each round on a cluster.

    References
    ----------
    Nocedal, Wright, "Numerical Optimization", 2nd ed., Springer, 2006,
    Algorithm 7.4 (the two-loop recursion), eq. (7.20) and Algorithm 3.1;
    Liu, Nocedal, "On the limited memory BFGS method for large scale
    optimization", Math. Programming 45, 1989.
    """

    memory: int = LBFGS_MEMORY
    name = "multinomial_lbfgs"
    capabilities = Capabilities(losses=("logistic",), many_partitions=True, cluster=True, shrinking=False,
                                gap_rate="linear", warm_start=False, sample_weight=True, multi_class=False)
    #: the vector loss of the one problem of ``K > 2`` classes (``daskdca.fit`` certifies it)
    multiclass_loss = Softmax

    def __post_init__(self):
        value = self.memory
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"memory must be a positive int, got {value!r}.")

    def setup(self, info, ops):
        """The plan: the softmax problem of ``K`` classes, or the binary logistic one.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused here.

        Returns
        -------
        MultinomialLBFGSPlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When the loss is neither the softmax nor the logistic loss.
        """
        if isinstance(info.loss, Softmax):
            n_classes = int(info.loss.n_classes)
        elif info.loss.name == "logistic":
            n_classes = 0  # the binary problem: w is a d-vector
        else:
            raise ValueError(f"solver='multinomial_lbfgs' fits the logistic loss, got loss={info.loss.name!r}.")
        return MultinomialLBFGSPlan(settings=self, n=info.n, d=info.d, lam=float(info.lam), n_classes=n_classes)


@dataclass(frozen=True)
class MultinomialLBFGSPlan(PlanBase):
    """:class:`MultinomialLBFGS` resolved for one data set (``n_classes`` 0: the binary problem); one phase a
    round, one pass (module docstring)."""

    settings: MultinomialLBFGS
    n: int
    d: int
    lam: float
    n_classes: int
    eval_every = 1  # every round's sums are the gap's
    rounds_per_epoch = 1
    primal_from_dual = False

    @property
    def shape(self):
        """The model's shape: ``(K, d)``, or ``(d,)`` for two classes."""
        return (self.n_classes, self.d) if self.n_classes else (self.d,)

    @property
    def size(self):
        return max(self.n_classes, 1) * self.d

    def init_global(self):
        D, m = self.size, self.settings.memory
        return MultinomialLBFGSGlobal(np.zeros(self.shape), np.zeros(D), math.inf, np.zeros(D), np.zeros(D), 0.0,
                                      0.0, np.zeros((m, D)), np.zeros((m, D)), 0.0)

    def init_local(self, part, ctx):
        return MultinomialLBFGSLocal(np.zeros(0))

    def _labelled(self, part):
        """``(rows, lo, hi, cls, weight)`` of every piece: the class indices and weights of the softmax loss
        (:func:`softmax_pieces`), or the binary rows' labels and weights."""
        if not self.n_classes:
            return ((rows, lo, hi, rows.y, rows.weight) for rows, lo, hi, _ in part.pieces())
        return ((rows, lo, hi, cls, weight) for rows, lo, hi, (cls, weight) in softmax_pieces(part))

    def dual_point(self, part, local, state):
        """``alpha_{:, i} = s_i (e_{y_i} - softmax(W x_i))`` (``(K, n_k)``), or ``-s_i phi_i'(x_i.w)``."""
        w = state.w
        if not self.n_classes:
            return np.concatenate([logistic_dual_point(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, w,
                                                       lo, hi, LOGISTIC, 0.0)
                                   for rows, lo, hi, _, _ in self._labelled(part)])
        return np.concatenate([softmax_dual_point(rows.indptr, rows.indices, rows.data, cls, weight, w, lo, hi)
                               for rows, lo, hi, cls, weight in self._labelled(part)], axis=1)

    def local(self, part, local, state, ctx):
        """Loss, conjugate and gradient sums of this partition's rows at the round's point, in one pass, chunk by
        chunk on the step's threads (:func:`~daskdca.methods.base.chunk_sums`)."""
        kernel = softmax_lbfgs_sums if self.n_classes else logistic_lbfgs_sums
        size = int(np.prod(self.shape))

        def chunk(rows, lo, hi, labels):
            sums = np.zeros(2)
            grad = np.zeros(self.shape)
            seen = kernel(rows.indptr, rows.indices, rows.data, labels[0], labels[1], state.w, lo, hi, sums, grad)
            return np.concatenate((sums, [float(seen)], grad.ravel()))

        pieces = ((rows, lo, hi, (cls, weight)) for rows, lo, hi, cls, weight in self._labelled(part))
        total = chunk_sums(pieces, chunk, 3 + size)  # on the step's threads, the bits of one thread
        return local, Contribution(compress(total[3:]), total[:3])

    def combine(self, state, total, ctx):
        """``P`` and ``D`` of the round's point for the report; Armijo's test of the trial step, then the next
        trial point (module docstring)."""
        loss_sum, conj_sum, rows = (float(v) for v in total.scalars)
        n, lam = self.n, self.lam
        g_sum = dense(total.vector, self.size)
        x = state.w.ravel()
        w_alpha = g_sum / (-lam * n)  # W(alpha) = alpha X / (lam n) with alpha X = -G
        primal = loss_sum / n + 0.5 * lam * flat_dot(x, x)
        dual = -conj_sum / n - 0.5 * lam * flat_dot(w_alpha, w_alpha)
        report = RoundReport(True, primal, dual, rows)
        if state.step > 0.0 and not primal <= state.base_primal + ARMIJO_C1 * state.step * state.slope:
            step = 0.5 * state.step
            if step < MIN_STEP:  # no decrease to be had along p: start again from the accepted point
                return (state._replace(w=state.base.reshape(self.shape).copy(), step=0.0, slope=0.0, pairs=0.0),
                        report)
            trial = state.base + step * state.direction
            return state._replace(w=trial.reshape(self.shape), step=step), report
        grad = g_sum / n + lam * x
        S, Y, pairs = state.S, state.Y, int(state.pairs)
        if state.step > 0.0:
            s = x - state.base
            y = grad - state.base_grad
            if flat_dot(s, y) > 0.0:
                S, Y = S.copy(), Y.copy()
                if pairs == S.shape[0]:  # full: drop the oldest
                    S[:-1], Y[:-1] = S[1:].copy(), Y[1:].copy()
                    pairs -= 1
                S[pairs], Y[pairs] = s, y
                pairs += 1
        direction = two_loop_direction(grad, S, Y, pairs)
        slope = flat_dot(grad, direction)
        if pairs == 0 or not slope < 0.0:  # no memory (or, by rounding, no descent): scaled steepest descent
            pairs = 0
            direction = -grad / max(1.0, math.sqrt(flat_dot(grad, grad)))
            slope = flat_dot(grad, direction)
        trial = x + direction
        return (MultinomialLBFGSGlobal(trial.reshape(self.shape), x.copy(), primal, grad, direction, 1.0, slope, S,
                                       Y, float(pairs)), report)
