"""The Crammer-Singer multi-class SVM by dual coordinate ascent: serial steps and CoCoA+ rounds.

For ``K > 2`` classes, with ``W`` of shape ``(K, d)`` (row ``w_k`` scores
class ``k``) and row weights ``s_i`` (``sample_weight`` times the row's
``class_weight``; 1 when unweighted), the method solves

    min_W P(W) = 1/n sum_i s_i max_k (1[k != y_i] + w_k.x_i - w_{y_i}.x_i) + lam/2 ||W||_F^2

(LIBLINEAR's ``-s 4``, which minimises ``C sum_i s_i max_k (...) + 1/2 ||W||_F^2``,
``C n`` times ``P`` at ``C = 1/(lam n)``; scikit-learn's
``LinearSVC(multi_class="crammer_singer")``) by maximising its dual
(Keerthi, Sundararajan, Chang, Hsieh & Lin, KDD 2008 [KSC+08];
docs/references.md, note N12)

    D(alpha) = 1/n sum_i alpha_{y_i i} - lam/2 ||W(alpha)||_F^2,
    w_k(alpha) = 1/(lam n) sum_i alpha_{k i} x_i,

over ``alpha`` of shape ``(K, n)`` with every column summing to 0,
``alpha_{y_i i} <= s_i`` and ``alpha_{k i} <= 0`` for ``k != y_i``
(``beta_i = e_{y_i} - alpha_{:, i} / s_i`` in the probability simplex; LIBLINEAR's
duals are ``C alpha``).  The duality gap is ``P(W(alpha)) - D(alpha)``,
computed from the duals alone.

A round is CoCoA+ with the adding aggregation ([MSJ+15], ``sigma' = K_p``
for ``K_p`` partitions, as :class:`~daskdca.methods.cocoa.CoCoAPlus`): each
partition runs ``local_iters * n_k`` exact row steps
(:func:`~daskdca.kernels.crammer_singer.local_crammer_singer_sdca`: all ``K``
duals of one row at a time, the exact maximiser of the dual over them by
[KSC+08]'s sort-based solver, LIBLINEAR's ``solve_sub_problem``) on its
subproblem, then ``W += sum_k delta_W_k``.  One partition is the serial
sequential dual method of [KSC+08] (LIBLINEAR's ``Solver_MCSVM_CS`` without
its shrinking), and the dual then never falls.  States, contributions, row
orders and the out-of-core block sweeps are the multinomial method's
(:class:`~daskdca.methods.multinomial.MultinomialPlan`, whose plan this one
extends with the Crammer-Singer row steps and gap sums).

The fit runs on one-vs-rest partitions
(:class:`~daskdca.partitions.OneVsRestPartition`, whose rows keep their
stored labels and whose ``problems`` name the classes and their weights)
with :class:`~daskdca.losses.CrammerSinger` as ``DataInfo.loss``, so the
drivers' certificate (``xt_alpha_part`` per class, ``objective_sums_part``
with the Crammer-Singer loss) evaluates ``P`` and ``D`` above from the
returned duals alone, in process and on a cluster alike.

Two classes: the Crammer-Singer problem of ``K = 2`` classes at ``2 lam`` is
the binary hinge problem at ``lam`` (``W = (-w/2, w/2)``: every ``W(alpha)``
has ``w_0 = -w_1``, since each column of ``alpha`` sums to 0, ``||W||_F^2 =
||w||^2 / 2``, and ``max(1[0 != y] + ...)`` is ``max(0, 1 - y w.x)``), so,
as :class:`~daskdca.methods.MultinomialSDCA` does for the logistic loss,
:class:`CrammerSingerSVM` on two classes is CoCoA+'s (serial SDCA's, on one
partition) plain hinge fit at ``lam``.  scikit-learn's ``LinearSVC`` with
``multi_class="crammer_singer"`` and ``C`` fits the problem of two classes
at ``C`` itself, the hinge problem at ``2 C``; the estimator
``SDCAClassifier(multi_class="crammer_singer")`` does the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from daskdca.kernels.crammer_singer import crammer_singer_objective_sums, local_crammer_singer_sdca
from daskdca.losses import CrammerSinger
from daskdca.methods.base import Capabilities, check_local_iters
from daskdca.methods.cocoa import CoCoAPlus
from daskdca.methods.multinomial import MultinomialPlan
from daskdca.partitions import softmax_rows

__all__ = ["CrammerSingerPlan", "CrammerSingerSVM"]


@dataclass(frozen=True)
class CrammerSingerPlan(MultinomialPlan):
    """:class:`CrammerSingerSVM` resolved for one data set of ``n_classes`` classes (module docstring).

    The multinomial plan's states, rounds and reports, with the
    Crammer-Singer row steps and gap sums: the global state is ``W`` of shape
    ``(K, d)``, each partition's ``alpha`` of shape ``(K, n_k)``, and a
    round reports ``P`` and ``D`` at its start (``loss_sum / n + lam/2 ||W||^2``
    and ``-conj_sum / n - lam/2 ||W||^2``).
    """

    def _steps(self, rows, problems, alpha, w, u, delta_w, lo, hi, ctx, stream):
        """Gap sums of rows ``[lo, hi)`` at ``(w, alpha)``, then their local steps; ``(loss_sum, conj_sum, steps)``."""
        cls, weight = softmax_rows(rows, problems)
        loss_sum, conj_sum = crammer_singer_objective_sums(rows.indptr, rows.indices, rows.data, cls, weight, alpha,
                                                           w, lo, hi)
        order = self._order(hi - lo, ctx, stream) + lo
        local_crammer_singer_sdca(rows.indptr, rows.indices, rows.data, cls, weight, rows.sqnorm, alpha, u, delta_w,
                                  order, self.lam_n, self.sigma_prime, self.n_partitions > 1)
        return loss_sum, conj_sum, order.shape[0]


@dataclass(frozen=True)
class CrammerSingerSVM:
    """The Crammer-Singer multi-class SVM by dual coordinate ascent: ``solver="crammer_singer"``.

    Solves, for ``K > 2`` classes,
    ``min_W P(W) = 1/n sum_i max_k (1[k != y_i] + w_k.x_i - w_{y_i}.x_i) + lam/2 ||W||_F^2``
    (rows weighted by ``s_i`` when weighted; LIBLINEAR's ``-s 4`` and
    scikit-learn's ``LinearSVC(multi_class="crammer_singer")`` with
    ``C = 1/(lam n)`` and no intercept) through its dual
    ``D(alpha) = 1/n sum_i alpha_{y_i i} - lam/2 ||W(alpha)||_F^2``,
    ``W(alpha) = alpha X / (lam n)`` (``alpha`` of shape ``(K, n)``, each
    column summing to 0, ``alpha_{y_i i} <= s_i``, the others ``<= 0``), by
    exact steps on all ``K`` dual variables of one row at a time (the
    sequential dual method of Keerthi et al. 2008): serially on one
    partition, CoCoA+ rounds (``sigma' = K_p``, adding) on ``K_p``
    partitions, in memory, out of core and on a cluster.  The certificate
    ``P(W(alpha)) - D(alpha)`` is computed from the returned duals alone
    (:mod:`daskdca.methods.crammer_singer`).  On two classes it fits the
    binary hinge problem at ``lam`` (the Crammer-Singer problem at
    ``2 lam``; module docstring).  ``multi_class`` in its capabilities is
    False: it fits the one Crammer-Singer problem, never the ``K``
    one-vs-rest problems, which :func:`daskdca.fit` then does not wrap
    around it.

    Parameters
    ----------
    local_iters : float, default=1.0
        Passes over each partition's rows per round.

    References
    ----------
    Keerthi, Sundararajan, Chang, Hsieh, Lin, "A sequential dual method for
    large scale multi-class linear SVMs", KDD 2008 [KSC+08]; Crammer,
    Singer, "On the algorithmic implementation of multiclass kernel-based
    vector machines", JMLR 2, 2001 [CS01]; Fan et al., "LIBLINEAR: a library
    for large linear classification", JMLR 9, 2008 [FCH+08], Appendix.
    """

    local_iters: float = 1.0
    name = "crammer_singer"
    capabilities = Capabilities(losses=("hinge",), many_partitions=True, cluster=True, shrinking=False,
                                warm_start=False, sample_weight=True, multi_class=False)
    #: the vector loss of the one problem of ``K > 2`` classes (``daskdca.fit`` certifies it)
    multiclass_loss = CrammerSinger

    def __post_init__(self):
        check_local_iters(self.local_iters)

    def setup(self, info, ops):
        """The plan for this data: Crammer-Singer rounds, or plain CoCoA+'s for two classes.

        :class:`CrammerSingerPlan` for the Crammer-Singer loss of ``K``
        classes (``sigma' = K_p``, [MSJ+15] §3, ``gamma = 1``); for two
        classes (``info.loss`` the binary hinge loss) plain CoCoA+'s plan.

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
            ``CrammerSingerPlan``, or CoCoA+'s plan.
        """
        K = info.n_partitions
        if isinstance(info.loss, CrammerSinger):
            return CrammerSingerPlan(settings=self, n=info.n, d=info.d, lam_n=info.lam_n, n_partitions=K,
                                     sigma_prime=float(K), n_classes=int(info.loss.n_classes))
        return CoCoAPlus(acceleration=None, local_iters=self.local_iters).setup(info, ops)
