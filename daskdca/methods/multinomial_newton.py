"""Multinomial logistic regression (the softmax loss) by primal Newton, for few classes and few features.

For ``K > 2`` classes, with ``W`` of shape ``(K, d)`` and row weights ``s_i``,
the method solves

    min_W P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2,

the problem of :mod:`daskdca.methods.multinomial_lbfgs` and
:mod:`daskdca.methods.multinomial`, by the rounds of the binary primal
Newton method (:mod:`daskdca.methods.newton`) on the ``K d`` variables of
``W`` flattened row by row: each partition sends its loss, conjugate and
gradient sums and the upper triangle of its ``K d x K d`` Hessian sum
(:mod:`daskdca.kernels.multinomial_newton`), the combine accepts the full
step by Armijo's test and solves ``(H / n + lam I) s = -grad P(W)`` by
Cholesky, and a failed full step searches the same ladder of steps in one
or two more passes.  Where columns differ in scale by orders of magnitude
(features as loaded) the L-BFGS rounds may run a thousand passes without
certifying (benchmarks/RESULTS.md, "Multinomial Newton on small
problems"); the Newton step is unaffected by a linear change of the
features (Nocedal & Wright, Numerical Optimization, 2nd ed., §2.2,
"Scaling"), which only the ``lam`` term breaks, and converges
quadratically near the optimum (their Theorem 3.5).  A round
costs ``O(nnz_i^2 K^2 / 2)`` a row for the Hessian and ``(K d)^3 / 3``
flops for the factorisation, so it pays where ``K d`` is small
(:func:`daskdca.routes.choose_multinomial_route`).

Certificate: as for the L-BFGS rounds, the model is the round's point ``W``
and the dual point ``alpha_{:, i} = s_i (e_{y_i} - softmax(W x_i))``,
always feasible; every round reports ``P(W)`` and ``D(alpha)`` of its
starting point.  Two classes: the binary logistic problem at ``lam`` by
:class:`~daskdca.methods.Newton` itself.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from daskdca.kernels.multinomial_lbfgs import softmax_dual_point
from daskdca.kernels.multinomial_newton import softmax_ladder_sums, softmax_newton_sums
from daskdca.kernels.newton import packed_size
from daskdca.losses import Softmax
from daskdca.methods.base import Capabilities, chunk_sums
from daskdca.methods.multinomial_lbfgs import softmax_pieces
from daskdca.methods.newton import Newton, NewtonPlan

__all__ = ["NEWTON_MAX_VARIABLES", "MultinomialNewton", "MultinomialNewtonPlan"]

#: The largest ``K d`` :class:`MultinomialNewton` accepts by default (its ``newton_max_variables``): the combine
#: factors a ``K d x K d`` matrix each round, as :class:`~daskdca.methods.Newton` does up to 5,000 features.
NEWTON_MAX_VARIABLES = 2000


@dataclass(frozen=True)
class MultinomialNewton:
    """Multinomial logistic regression by primal Newton: ``solver="multinomial_newton"``.

    Solves, for ``K > 2`` classes,
    ``min_W 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2``
    (scikit-learn's multinomial ``LogisticRegression`` with ``C = 1/(lam n)``
    and no intercept) by Newton steps with an Armijo line search on a ladder
    of steps: each round is one pass over every partition for the loss, the
    ``K x d`` gradient and the ``K d x K d`` Hessian at the round's point
    (module docstring).  In memory, out of core and on a cluster (rounds);
    deterministic.  On two classes it fits the binary logistic problem by
    :class:`~daskdca.methods.Newton`.  ``multi_class`` in its capabilities is
    False: it fits the one multinomial problem.

    Parameters
    ----------
    newton_max_variables : int, default=2000
        The largest ``K d`` it accepts (``d`` for two classes): every
        partition sends ``K d (K d + 1) / 2`` Hessian entries each round and
        the combine factors a ``K d x K d`` matrix.  Above it use
        ``solver="multinomial_lbfgs"``.

    References
    ----------
    Nocedal, Wright, "Numerical Optimization", 2nd ed., Springer, 2006,
    eq. (2.15), eq. (3.4) and Algorithm 3.1; Bishop, "Pattern Recognition
    and Machine Learning", Springer, 2006, §4.3.4 (the softmax Hessian).
    """

    newton_max_variables: int = NEWTON_MAX_VARIABLES
    name = "multinomial_newton"
    capabilities = Capabilities(losses=("logistic",), many_partitions=True, cluster=True, shrinking=False,
                                gap_rate="linear", warm_start=False, sample_weight=True, multi_class=False)
    #: the vector loss of the one problem of ``K > 2`` classes (``daskdca.fit`` certifies it)
    multiclass_loss = Softmax

    def __post_init__(self):
        value = self.newton_max_variables
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"newton_max_variables must be a positive int, got {value!r}.")

    def setup(self, info, ops):
        """The plan: the softmax problem of ``K`` classes, or the binary logistic one by :class:`Newton`.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions; unused here.

        Returns
        -------
        MultinomialNewtonPlan or NewtonPlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When the loss is neither the softmax nor the logistic loss, or
            ``K d`` is more than ``newton_max_variables``.
        """
        if not isinstance(info.loss, Softmax):
            if info.loss.name != "logistic":
                raise ValueError(f"solver='multinomial_newton' fits the logistic loss, got loss={info.loss.name!r}.")
            return Newton(newton_max_features=self.newton_max_variables).setup(info, ops)
        n_classes = int(info.loss.n_classes)
        if n_classes * info.d > self.newton_max_variables:
            raise ValueError(f"solver='multinomial_newton' forms a (K d) x (K d) Hessian and accepts at most "
                             f"newton_max_variables={self.newton_max_variables}, got K d = {n_classes} x {info.d} = "
                             f"{n_classes * info.d}; use solver='multinomial_lbfgs' (or raise newton_max_variables).")
        return MultinomialNewtonPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam=float(info.lam),
                                     n_classes=n_classes)


@dataclass(frozen=True)
class MultinomialNewtonPlan(NewtonPlan):
    """:class:`MultinomialNewton` resolved for one data set: :class:`~daskdca.methods.newton.NewtonPlan`'s
    rounds on the ``K d`` variables of ``W`` flattened row by row (module docstring)."""

    n_classes: int = 0

    @property
    def size(self):
        """The variables: ``K d``."""
        return self.n_classes * self.d

    def model(self, state):
        return state.w.reshape(self.n_classes, self.d)

    def dual_point(self, part, local, state):
        """``alpha_{:, i} = s_i (e_{y_i} - softmax(W x_i))`` for the partition's rows, ``(K, n_k)``."""
        w = self.model(state)
        return np.concatenate([softmax_dual_point(rows.indptr, rows.indices, rows.data, cls, weight, w, lo, hi)
                               for rows, lo, hi, (cls, weight) in softmax_pieces(part)], axis=1)

    def _pieces(self, part):
        return softmax_pieces(part)

    def _newton_chunk(self, state, rows, lo, hi, labels):
        """Loss, conjugate and row sums, the flattened gradient and the packed Hessian of rows ``[lo, hi)``."""
        sums = np.zeros(2)
        grad = np.zeros((self.n_classes, self.d))
        hess = np.zeros(packed_size(self.size))
        seen = softmax_newton_sums(rows.indptr, rows.indices, rows.data, labels[0], labels[1], self.model(state),
                                   lo, hi, sums, grad, hess)
        return np.concatenate((sums, [float(seen)], grad.ravel(), hess))

    def _ladder_sums(self, part, state, steps):
        """The softmax loss sum at ``base + t direction`` for every ``t`` of ``steps``, in one pass."""
        shape = (self.n_classes, self.d)
        base, direction = state.base.reshape(shape), state.direction.reshape(shape)

        def chunk(rows, lo, hi, labels):
            out = np.zeros(steps.shape[0])
            softmax_ladder_sums(rows.indptr, rows.indices, rows.data, labels[0], labels[1], base, direction, lo, hi,
                                steps, out)
            return out

        return chunk_sums(softmax_pieces(part), chunk, steps.shape[0])
