"""CoCoA+ rounds inside a Catalyst outer loop: accelerated proximal-point steps on the primal.

Solves

    min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2

by the Catalyst scheme of Lin, Mairal & Harchaoui ("Catalyst acceleration for
first-order convex optimization: from theory to practice", JMLR 18(212),
2018; Algorithm 1 with the strongly convex choice ``alpha_0 = sqrt(q)``): each
outer step approximately solves the proximal problem

    min_w P(w) + kappa/2 ||w - y_k||^2
      = 1/n sum_i phi_i(x_i.w) + (lam + kappa)/2 ||w - c_k||^2 + const,   c_k = kappa y_k / (lam + kappa),

then extrapolates ``y_{k+1} = x_{k+1} + beta (x_{k+1} - x_k)`` with
``beta = (1 - sqrt(q)) / (1 + sqrt(q))``, ``q = lam / (lam + kappa)``.

The proximal problem is an L2 problem with ``lam' = lam + kappa`` and a shifted
centre; its dual has the same box as the original's and
``w(alpha) = c_k + X^T alpha / (lam' n)``.  So one CoCoA+ round of
:class:`~daskdca.methods.sdca.LocalSDCAPlan` solves it unchanged, with
``lam' n`` in its steps and the shifted ``w`` as its global state, and a new
centre only moves ``w`` by ``c_{k+1} - c_k`` (the duals stay where they are:
warm started).  One outer step is one round: Catalyst's fixed-budget inner
stopping rule, one pass of the inner method per outer step, with a CoCoA+
round as the pass.  With one round per proximal problem the extrapolation can
overshoot (hinge at a small ``n lam``), so it restarts whenever a round's
primal rises (O'Donoghue & Candès, Found. Comput. Math. 15, 2015).

The certificate is the original problem's: the duals ``alpha`` are feasible
for it, ``D(alpha)`` uses ``X^T alpha / (lam n)``, and the primal is evaluated
at the iterate ``w`` (``primal_from_dual = False``); the drivers recompute both
from scratch, except out of core, where the inner plan adds each block's
``X_b^T alpha_b`` of the round's start as the block is read
(:attr:`~daskdca.methods.sdca.LocalSDCAPlan.certifies_rounds`) and the round's
report is that certificate itself (``RoundReport.certified``).  The dual of
the original problem is not monotone over the rounds (each outer step
changes the problem the local steps ascend); the certified gap is what the
fit stops on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels.catalyst import catalyst_step
from daskdca.methods.base import PlanBase, RoundReport, apply_vector, dense
from daskdca.methods.sdca import LocalSDCAPlan, MomentumPlan
from daskdca.problem import dual_value, primal_value

__all__ = ["KAPPA_SCALE", "CatalystGlobal", "CatalystMomentumGlobal", "CatalystPlan", "default_kappa"]

#: ``kappa = KAPPA_SCALE * K * mean ||x_i||^2 / n - lam``: Catalyst's choice
#: for incremental methods, ``kappa = L / n - mu`` (JMLR 2018, with ``L`` the
#: rows' squared norm, the curvature of a dual step), where a CoCoA+ row's
#: curvature is ``sigma' = K`` times its own.  The factor 2 was measured, not derived:
#: rounds to 1e-4 on a9a, ijcnn1 and w8a at lam 1e-4 to 1e-6, K = 2 and 4,
#: against a factor 1 (benchmarks/RESULTS.md, "Catalyst around CoCoA+").
KAPPA_SCALE = 2.0


def default_kappa(lam, n, n_partitions, sqnorm_sum):
    """Catalyst's ``kappa`` for CoCoA+ with ``n_partitions`` partitions (0: no acceleration pays).

    ``sqnorm_sum`` is ``sum_i ||x_i||^2``.  When ``lam`` alone already makes a
    round's local problem well conditioned the rule gives 0, and the plan is
    plain CoCoA+.
    """
    return max(0.0, KAPPA_SCALE * n_partitions * sqnorm_sum / (n * n) - lam)


class CatalystGlobal(NamedTuple):
    """Global state: the iterate ``w`` (``= centre + X^T alpha / (lam' n)``), the centre ``c_k``, and ``x_k``.

    ``previous`` is the iterate at the last outer step, for the extrapolation;
    ``last_primal`` the primal of the last round's start (``inf`` at first),
    for the restart.
    """

    w: np.ndarray
    centre: np.ndarray
    previous: np.ndarray
    last_primal: np.ndarray


class CatalystMomentumGlobal(NamedTuple):
    """:class:`CatalystGlobal` with the inner rounds' momentum (:class:`~daskdca.methods.sdca.MomentumPlan`):
    the last move of the iterate and the weights ``(a, b)`` the last combine chose."""

    w: np.ndarray
    centre: np.ndarray
    previous: np.ndarray
    last_primal: np.ndarray
    move: np.ndarray
    step: np.ndarray


@dataclass(frozen=True)
class CatalystPlan(PlanBase):
    """Catalyst around an inner CoCoA+ plan: the inner plan's local steps on the proximal problems, and the
    extrapolation in the combine.

    ``inner`` is the :class:`~daskdca.methods.sdca.LocalSDCAPlan` of the
    proximal problems (its ``lam_n`` is ``(lam + kappa) n``), or its
    :class:`~daskdca.methods.sdca.MomentumPlan`, whose search then picks
    each round's move and whose move joins the global state; the local
    steps, the partitions' states, their dual points and the one-vs-rest
    sweeps are the inner plan's, unchanged: they read only the iterate
    ``state.w`` of :class:`CatalystGlobal` (and the momentum's ``state.step``
    of :class:`CatalystMomentumGlobal`).  This plan adds the centre to the
    global state, the original problem's report and the extrapolation
    (:meth:`combine`).  ``lam`` is the original problem's.
    """

    inner: LocalSDCAPlan
    lam: float
    kappa: float
    primal_from_dual = False

    # -- what the drivers read, as the inner plan has it
    @property
    def settings(self):
        return self.inner.settings

    @property
    def loss(self):
        return self.inner.loss

    @property
    def n(self):
        return self.inner.n

    @property
    def d(self):
        return self.inner.d

    @property
    def lam_n(self):
        """``(lam + kappa) n``, the proximal problems' (what the local steps use)."""
        return self.inner.lam_n

    @property
    def n_partitions(self):
        return self.inner.n_partitions

    @property
    def sigma_prime(self):
        return self.inner.sigma_prime

    @property
    def eval_every(self):
        return self.inner.eval_every

    @property
    def rounds_per_epoch(self):
        return self.inner.rounds_per_epoch

    def init_local(self, part, ctx):
        return self.inner.init_local(part, ctx)

    def init_local_from(self, part, alpha, ctx):
        return self.inner.init_local_from(part, alpha, ctx)

    def dual_point(self, part, local, state):
        return self.inner.dual_point(part, local, state)

    def local(self, part, local, state, ctx):
        """The inner plan's round on one partition, from the iterate ``state.w``."""
        return self.inner.local(part, local, state, ctx)

    @property
    def local_problems(self):
        """The inner plan's one-vs-rest sweep (:meth:`~daskdca.methods.sdca.LocalSDCAPlan.local_problems`, or
        :meth:`~daskdca.methods.sdca.MomentumPlan.local_problems`)."""
        return self.inner.local_problems

    @property
    def extrapolation(self):
        """``beta = (1 - sqrt(q)) / (1 + sqrt(q))``, ``q = lam / (lam + kappa)`` (JMLR 2018, Algorithm 1)."""
        root_q = math.sqrt(self.lam / (self.lam + self.kappa))
        return (1.0 - root_q) / (1.0 + root_q)

    @property
    def _momentum(self):
        """Whether the inner rounds search their move with momentum (:class:`~daskdca.methods.sdca.MomentumPlan`)."""
        return isinstance(self.inner, MomentumPlan)

    def _state(self, w, centre, previous, last_primal, move=None, step=None):
        if not self._momentum:
            return CatalystGlobal(w, centre, previous, last_primal)
        return CatalystMomentumGlobal(w, centre, previous, last_primal,
                                      np.zeros(self.d) if move is None else move,
                                      np.zeros(2) if step is None else step)

    def init_global(self):
        return self._state(np.zeros(self.d), np.zeros(self.d), np.zeros(self.d), np.array(np.inf))

    def init_global_from(self, w):
        """A warm start at ``alpha0`` with ``w = X^T alpha0 / (lam n)``: ``x_0 = y_0 = w``.

        Then ``c_0 = kappa w / lam'`` and the iterate ``c_0 + X^T alpha0 / (lam' n)`` is ``w`` itself.
        """
        w = np.array(w, dtype=np.float64, copy=True)
        return self._state(w, (self.kappa / (self.lam + self.kappa)) * w, w.copy(), np.array(np.inf))

    def combine(self, state, total, ctx):
        """The CoCoA+ step on the proximal problem, the original problem's gap at the round's start, the new centre.

        The extrapolation restarts (``y_k = x_k``) in a round whose starting
        primal is above the last round's: the function restart of
        O'Donoghue & Candès (Found. Comput. Math. 15, 2015, §3.2).
        """
        w, centre = state.w, state.centre
        move = step = None
        if self._momentum:  # x = w + a Delta w + b m_prev, the inner plan's search on the proximal problem
            step, move = self.inner.search(w, total, state.move)
            x = w + move
        else:
            x = dense(total.vector, self.d).copy() if self.n_partitions == 1 else apply_vector(w, total.vector)
        loss_sum, conj_sum, steps = total.scalars[:3]
        lam_prime = self.lam + self.kappa
        primal = loss_sum / self.n + 0.5 * self.lam * float(w @ w)
        beta = 0.0 if primal > float(state.last_primal) else self.extrapolation
        # w_alpha = X^T alpha / (lam n) of the round's start, from w = centre + X^T alpha / (lam' n); the new
        # centre (kappa / lam') (x + beta (x - x_k)) and the iterate x + (new_centre - centre), in one pass
        w_alpha, new_centre, new_w = catalyst_step(w, centre, x, state.previous, lam_prime / self.lam, beta,
                                                   self.kappa / lam_prime)
        dual = -conj_sum / self.n - 0.5 * self.lam * float(w_alpha @ w_alpha)
        report = RoundReport(True, primal, dual, float(steps))
        if self.inner.certifies_rounds and len(total.gathered) == self.n_partitions:
            # out of core: X^T alpha of the round's start, summed in partition order, certifies (w, alpha) exactly
            xt = total.gathered[0].copy()
            for part_xt in total.gathered[1:]:
                xt += part_xt
            report = report._replace(primal=primal_value(self.n, self.lam, loss_sum, w),
                                     dual=dual_value(self.n, self.lam, conj_sum, xt / (self.lam * self.n)),
                                     certified=True)
        return self._state(new_w, new_centre, x, np.array(primal), move, step), report
