"""Multinomial logistic regression (the softmax loss) by dual coordinate ascent: serial SDCA and CoCoA+ rounds.

For ``K > 2`` classes, with ``W`` of shape ``(K, d)`` (row ``w_k`` scores
class ``k``) and row weights ``s_i`` (``sample_weight`` times the row's
``class_weight``; 1 when unweighted), the method solves

    min_W P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2

by maximising its dual ([SSZ13]; [SSZ16] eq. (1) with vector losses; docs/references.md, note N11)

    D(alpha) = 1/n sum_i s_i H(e_{y_i} - alpha_i / s_i) - lam/2 ||W(alpha)||_F^2,
    w_k(alpha) = 1/(lam n) sum_i alpha_{k i} x_i,

``H(beta) = -sum_k beta_k log beta_k`` the entropy, over ``alpha`` of shape
``(K, n)`` with every ``beta_i = e_{y_i} - alpha_{:, i} / s_i`` in the
probability simplex (so each column of ``alpha`` sums to 0).  At the optimum
``beta_i = softmax(W x_i)``, the model's predicted distribution of row ``i``.

Warm starts (``daskdca.fit(..., dual_init=alpha0)``, ``alpha0`` of shape
``(K, n)``, e.g. a previous multinomial fit's ``dual_coef_``): every
``beta_i`` of ``alpha0`` must lie in the simplex (:func:`check_dual_init`),
a set that does not depend on ``lam``, so the duals of a fit at one ``lam``
start a fit at any other (as LIBLINEAR's warm start across ``C``).  The fit
starts at ``W = alpha0 X / (lam n)``, computed by the drivers' certificate
reduction, and each partition at its columns of ``alpha0``
(:meth:`~daskdca.methods.base.PlanBase.init_global_from`,
:meth:`~daskdca.methods.base.PlanBase.init_local_from`), in process, out of
core and on a cluster alike.  An entry of ``beta_i`` at 0 is allowed: the
certificate takes ``0 log 0 = 0`` and the row step's maximiser lies strictly
inside the simplex whatever its start.

A round is CoCoA+ with the adding aggregation ([MSJ+15], ``sigma' = K_p``
for ``K_p`` partitions, as :class:`~daskdca.methods.cocoa.CoCoAPlus`): each
partition runs ``local_iters * n_k`` exact row steps
(:func:`~daskdca.kernels.multinomial.local_multinomial_sdca`: all ``K`` duals
of one row at a time, the exact maximiser of the dual over them) on its
subproblem, then ``W += sum_k delta_W_k``.  One partition is serial SDCA,
and the dual then never falls.  The states are ``W`` (global) and the
partition's ``alpha`` of shape ``(K, n_k)`` (local); the contribution's
vector is the flattened ``(K d)``-vector ``delta_W_k`` (the new ``W`` itself
on one partition).

The fit runs on one-vs-rest partitions
(:class:`~daskdca.partitions.OneVsRestPartition`, whose rows keep their
stored labels and whose ``problems`` name the classes and their weights)
with :class:`~daskdca.losses.Softmax` as ``DataInfo.loss``, so the drivers'
certificate (``xt_alpha_part`` per class, ``objective_sums_part`` with the
softmax loss) evaluates ``P`` and ``D`` above from the returned duals alone,
in process and on a cluster alike.

Two classes: the softmax problem of ``K = 2`` classes at ``2 lam`` is the
binary logistic problem at ``lam`` (with ``W = (-w/2, w/2)``: the optimum has
``w_0 = -w_1``, and ``||W||_F^2 = ||w||^2 / 2``; the duals agree,
``y_i alpha_i(binary) = beta_i(other class)``), and scikit-learn's
``LogisticRegression`` fits that binary problem for two classes, so
:class:`MultinomialSDCA` on two classes is CoCoA+'s (serial SDCA's, on one
partition) plain logistic fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels.multinomial import local_multinomial_sdca, multinomial_objective_sums
from daskdca.kernels.sampling import permutation_order
from daskdca.losses import Softmax
from daskdca.methods.base import (Capabilities, Contribution, PlanBase, RoundReport, apply_vector, check_local_iters,
                                  compress, dense)
from daskdca.methods.cocoa import CoCoAPlus
from daskdca.methods.dual import DualLocal, _block_stream
from daskdca.partitions import softmax_rows

__all__ = ["MultinomialGlobal", "MultinomialPlan", "MultinomialSDCA", "check_dual_init"]

#: How far a warm start's ``beta_i`` may leave the simplex (an entry below 0 or above 1, a sum away from 1):
#: rounding only.  A fit's own ``dual_coef_`` gives ``beta_i`` back within a few ulps, and the kernels clip
#: an entry below 0 to 0 (:func:`~daskdca.kernels.multinomial.multinomial_objective_sums`).
DUAL_INIT_TOL = 1e-9


def check_dual_init(dual_init, class_index, classes, weight=None):
    """A multinomial warm start as float64 of shape ``(K, n)``, finite and feasible; else a ValueError that names
    the first bad row and the fix.

    Feasible: a row of weight ``s_i = 0`` has ``dual_init[:, i] = 0``; every
    other row's ``beta_i = e_{y_i} - dual_init[:, i] / s_i`` lies in the
    probability simplex (entries in ``[0, 1]``, summing to 1) up to
    :data:`DUAL_INIT_TOL`.  The set does not depend on ``lam``.

    Parameters
    ----------
    dual_init : array-like of shape (n_classes, n_samples)
        The duals, in the rows' order (a multinomial fit's ``dual_coef_``).
    class_index : ndarray of shape (n_samples,)
        Every row's class index ``y_i`` in ``0 .. K-1``.
    classes : ndarray of shape (n_classes,)
        The labels, for the messages.
    weight : ndarray of shape (n_samples,) or None
        The row weights ``s_i`` (``sample_weight`` times the row's class
        weight); None when all are 1.

    Returns
    -------
    ndarray of float64 of shape (n_classes, n_samples)
        ``dual_init``, unchanged.

    Raises
    ------
    ValueError
        The wrong shape, a non-finite value, or an infeasible row (the
        first is named, with the fix).
    """
    n, K = class_index.shape[0], classes.shape[0]
    try:
        alpha = np.asarray(dual_init, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"dual_init must be an array of shape ({K}, {n}) of real numbers, got "
                         f"{type(dual_init).__name__}.") from None
    if alpha.shape != (K, n):
        raise ValueError(f"dual_init has shape {alpha.shape}; a multinomial fit of {K} classes starts from the K "
                         f"duals of every row, shape ({K}, {n}) (a previous multinomial fit's dual_coef_ on the "
                         "same rows).")
    finite = np.isfinite(alpha).all(axis=0)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        k = int(np.flatnonzero(~np.isfinite(alpha[:, i]))[0])
        raise ValueError(f"dual_init contains a non-finite value ({float(alpha[k, i])!r}) at row {i} "
                         f"(dual_init[{k}, {i}]); dual variables must be finite.")
    cls = np.asarray(class_index, dtype=np.intp)
    s = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    pinned = np.flatnonzero((s == 0) & np.any(alpha != 0, axis=0))
    if pinned.size:
        i = int(pinned[0])
        raise ValueError(f"dual_init is infeasible at row {i}: its weight is 0, so its duals dual_init[:, {i}] "
                         f"must be 0, got {alpha[:, i].tolist()!r}. Pass the dual_coef_ of a multinomial fit with "
                         "the same weights.")
    active = s > 0
    beta = -alpha / np.where(active, s, 1.0)
    beta[cls, np.arange(n)] += 1.0
    tol = DUAL_INIT_TOL
    bad = active & ((beta.min(axis=0) < -tol) | (beta.max(axis=0) > 1.0 + tol)
                    | (np.abs(beta.sum(axis=0) - 1.0) > tol))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        b = beta[:, i]
        k = int(np.argmin(b)) if b.min() < -tol else int(np.argmax(b))
        what = (f"beta_i[{k}] = {float(b[k])!r}" if b.min() < -tol or b.max() > 1.0 + tol
                else f"sum(beta_i) = {float(b.sum())!r}")
        more = f" ({int(bad.sum())} rows are infeasible)" if bad.sum() > 1 else ""
        raise ValueError(
            f"dual_init is infeasible for the multinomial (softmax) problem at row {i} (label "
            f"{np.asarray(classes[cls[i]]).item()!r}, "
            f"class index {int(cls[i])}, row weight s_i = {float(s[i])!r}): beta_i = e_(y_i) - dual_init[:, {i}] "
            f"/ s_i must lie in the probability simplex (entries in [0, 1] summing to 1, up to {tol:g}), but "
            f"{what}{more}. Equivalently dual_init[:, {i}] sums to 0, its entry {int(cls[i])} lies in "
            f"[0, s_i] and the others in [-s_i, 0]. Pass the dual_coef_ of a multinomial fit with the same "
            "labels, weights and rows (the simplex does not depend on lam), or project each beta_i onto the "
            "simplex.")
    return alpha


class MultinomialGlobal(NamedTuple):
    """Global state: ``W = alpha X / (lam n)`` of shape ``(K, d)`` (up to rounding)."""

    w: np.ndarray


@dataclass(frozen=True)
class MultinomialPlan(PlanBase):
    """:class:`MultinomialSDCA` resolved for one data set of ``n_classes`` classes (module docstring)."""

    settings: object
    n: int
    d: int
    lam_n: float
    n_partitions: int
    sigma_prime: float
    n_classes: int
    eval_every: int = 1
    rounds_per_epoch: int = 1
    primal_from_dual = True

    def init_global(self):
        return MultinomialGlobal(np.zeros((self.n_classes, self.d)))

    def init_local(self, part, ctx):
        return DualLocal(np.zeros((self.n_classes, part.n_rows)))

    def dual_point(self, part, local, state):
        return local.alpha

    def _order(self, n_rows, ctx, stream):
        """Rows of one sweep: ``ceil(local_iters * n_rows)`` draws, consecutive permutations of the rows."""
        n_steps = max(1, int(math.ceil(self.settings.local_iters * n_rows)))
        return permutation_order(ctx.random_state, ctx.round, stream, n_rows, n_steps, 0)

    def _steps(self, rows, problems, alpha, w, u, delta_w, lo, hi, ctx, stream):
        """Gap sums of rows ``[lo, hi)`` at ``(w, alpha)``, then their local steps; ``(loss_sum, conj_sum, steps)``."""
        cls, weight = softmax_rows(rows, problems)
        loss_sum, conj_sum = multinomial_objective_sums(rows.indptr, rows.indices, rows.data, cls, weight, alpha, w,
                                                        lo, hi)
        order = self._order(hi - lo, ctx, stream) + lo
        local_multinomial_sdca(rows.indptr, rows.indices, rows.data, cls, weight, rows.sqnorm, alpha, u, delta_w,
                               order, self.lam_n, self.sigma_prime, self.n_partitions > 1)
        return loss_sum, conj_sum, order.shape[0]

    def local(self, part, local, state, ctx):
        """One round on one partition: gap sums at the round's start, then ``local_iters`` passes of row steps.

        In memory the rows are swept in one permutation from the stream
        ``(random_state, round, partition)``; out of core the blocks are
        visited in a seeded random order, each with its own permutation, as
        :func:`~daskdca.methods.dual.sweep_blocks` visits them.  The
        contribution is the new ``W`` (one partition) or ``delta_W_k``,
        flattened, and the scalars ``(loss_sum, conj_sum, steps)``.
        """
        alpha = local.alpha.copy()
        w = state.w
        track = self.n_partitions > 1
        u = w.copy()
        delta_w = np.zeros_like(w) if track else np.empty((0, 0))
        rows = part.whole()
        if rows is not None:
            loss_sum, conj_sum, n_steps = self._steps(rows, part.problems, alpha, w, u, delta_w, 0, rows.n_rows, ctx,
                                                      ctx.partition)
        else:
            loss_sum = conj_sum = 0.0
            n_steps = 0
            nb = len(part.block_starts) - 1
            block_order = permutation_order(ctx.random_state, ctx.round, ctx.partition, nb, nb, 0)
            for j, (blk, lo, hi, start) in zip(block_order, part.pieces(block_order)):
                stream = ctx.partition if nb == 1 else _block_stream(ctx.partition, int(j))
                view = alpha[:, start - lo:start - lo + blk.n_rows]  # the block's duals, written in place
                ls, cs, steps = self._steps(blk, part.problems, view, w, u, delta_w, lo, hi, ctx, stream)
                loss_sum, conj_sum, n_steps = loss_sum + ls, conj_sum + cs, n_steps + steps
        vector = compress(delta_w.ravel()) if track else u.ravel()
        return DualLocal(alpha), Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]))

    def combine(self, state, total, ctx):
        """``W += sum_k delta_W_k`` (one partition: the new ``W``); ``P`` and ``D`` of the round's start."""
        w = state.w
        size = self.n_classes * self.d
        if self.n_partitions == 1:
            new_w = dense(total.vector, size).reshape(self.n_classes, self.d).copy()
        else:
            new_w = apply_vector(w.ravel(), total.vector).reshape(self.n_classes, self.d)
        loss_sum, conj_sum, steps = total.scalars
        flat = w.ravel()
        reg = 0.5 * self.lam_n / self.n * float(flat @ flat)
        report = RoundReport(True, loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))
        return MultinomialGlobal(new_w), report


@dataclass(frozen=True)
class MultinomialSDCA:
    """Multinomial logistic regression by dual coordinate ascent: ``solver="multinomial"``.

    Solves, for ``K > 2`` classes,
    ``min_W 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2``
    (scikit-learn's multinomial ``LogisticRegression`` with ``C = 1/(lam n)``
    and no intercept) by exact dual steps on all ``K`` dual variables of one
    row at a time: serial SDCA on one partition, CoCoA+ rounds
    (``sigma' = K_p``, adding) on ``K_p`` partitions, in memory, out of core and on a
    cluster.  The dual, ``W(alpha)`` and the certificate are in
    :mod:`daskdca.methods.multinomial`.  On two classes it fits the binary
    logistic problem (the same problem; module docstring).  ``multi_class`` in
    its capabilities is False: it fits the one multinomial problem, never the
    ``K`` one-vs-rest problems, which :func:`daskdca.fit` then does not wrap
    around it.  It warm-starts (``dual_init`` of shape ``(K, n)``, a previous
    multinomial fit's ``dual_coef_`` at any ``lam``; :func:`check_dual_init`)
    in process, out of core and on a cluster.

    Parameters
    ----------
    local_iters : float, default=1.0
        Passes over each partition's rows per round.

    References
    ----------
    Shalev-Shwartz, Zhang, "Accelerated proximal stochastic dual coordinate
    ascent for regularized loss minimization", Math. Programming 155, 2016,
    eq. (1) (vector-valued losses) [SSZ16]; Shalev-Shwartz, Zhang,
    "Stochastic dual coordinate ascent methods for regularized loss
    minimization", JMLR 14, 2013 [SSZ13].
    """

    local_iters: float = 1.0
    name = "multinomial"
    capabilities = Capabilities(losses=("logistic",), many_partitions=True, cluster=True, shrinking=False,
                                warm_start=True, sample_weight=True, multi_class=False)
    #: the vector loss of the one problem of ``K > 2`` classes (``daskdca.fit`` certifies it)
    multiclass_loss = Softmax

    def __post_init__(self):
        check_local_iters(self.local_iters)

    def setup(self, info, ops):
        """The plan for this data: multinomial rounds, or plain CoCoA+'s for two classes.

        :class:`MultinomialPlan` for the softmax loss of ``K`` classes
        (``sigma' = K_p``, [MSJ+15] §3, ``gamma = 1``); for two classes
        (``info.loss`` the binary logistic loss) plain CoCoA+'s plan.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); only CoCoA+'s plan of two classes may use them.

        Returns
        -------
        object
            ``MultinomialPlan``, or CoCoA+'s plan.
        """
        K = info.n_partitions
        if isinstance(info.loss, Softmax):
            return MultinomialPlan(settings=self, n=info.n, d=info.d, lam_n=info.lam_n, n_partitions=K,
                                   sigma_prime=float(K), n_classes=int(info.loss.n_classes))
        return CoCoAPlus(acceleration=None, local_iters=self.local_iters).setup(info, ops)
