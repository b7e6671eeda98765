"""The pure L1 problem, solved by a certified reduction to the elastic net.

    P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1

(scikit-learn's ``LogisticRegression(penalty="l1", solver="liblinear", C)``
and ``LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C)`` with
``C = 1 / (lam n)``, intercept included: LIBLINEAR's synthetic feature is
in the L1 term too).  The dual methods need a strongly convex part, so
:class:`~daskdca.methods.l1.L1SDCA` solves a sequence of elastic nets

    P1(w) + mu/2 ||w - z||^2

by proximal SDCA (with ``z = 0`` this is ``SDCA(l1_ratio=rho)``'s problem at
total weight ``lam + mu`` and ``rho = lam / (lam + mu)``), each warm-started
at the last one's duals (their box does not depend on the penalty), and
certifies the L1 problem itself at every gap evaluation with the rescaled
dual point

    beta = s alpha,   s = min(1, lam / ||X^T alpha / n||_inf),
    D1(beta) = -1/n sum_i phi_i*(-beta_i)   (feasible: ||X^T beta / n||_inf <= lam),

the dual point of glmnet and of Gap Safe screening (Ndiaye, Fercoq, Gramfort
and Salmon, "Gap Safe screening rules for sparsity enforcing penalties",
JMLR 18(128), 2017: their dual point obtained by rescaling a residual).  ``beta``
lies in the conjugates' domain because every loss's domain is an interval
holding 0 (checked, :func:`check_l1_loss`).  By weak duality
``P1(w) - D1(beta) >= P1(w) - min P1`` for any ``alpha``, whatever the
subproblems were; the fit stops when it is ``<= tol * |P1(w)|``.  ``w`` is
the soft-thresholded model of the subproblem, so ``coef_`` holds exact zeros.

The sequence: when a subproblem's own gap is at most ``switch`` (0.5) times
the L1 gap, the L1 gap is mostly the L2 term's doing, and the next
subproblem starts, by default with the centre ``z`` moved to the current
model and ``mu`` kept (a proximal-point outer loop, as Catalyst's, Lin,
Mairal and Harchaoui, JMLR 2018: the L2 term vanishes at the solution, so
``mu`` need not).  ``L1SDCA(recentre=False, decrease=10, mu0=lam)`` is
the plain continuation ``z = 0``, ``mu = lam, lam/10, ...``: its
certificate is as sound, but it needs ``mu`` of order ``tol * lam``, where
the dual steps (curvature ``||x_i||^2 / (mu n)``) crawl and each fall of
``mu`` multiplies ``w = soft(X^T alpha / (mu n), lam / mu)`` by 10 (on
heart_scale, logistic, ``C = 0.05``: 3e-6 after 3000 epochs, where the
default reaches 1e-10 in 42).

Every input :func:`daskdca.fit` takes, in memory, out of core and on a
cluster: with ``K > 1`` partitions each subproblem's rounds are CoCoA+'s
(adding, ``sigma' = K``), and the next subproblem is decided from the
round's summed gaps (:class:`~daskdca.methods.sdca.L1ContinuationPlan`).
"""

from __future__ import annotations

from daskdca import api
from daskdca.methods.l1 import L1SDCA

__all__ = ["fit_l1"]


def fit_l1(X, y, *, loss="logistic", lam=1e-4, tol=1e-6, solver=None, max_epochs=None, max_rounds=None,
           random_state=0, verbose=0, callback=None, dual_init=None, sample_weight=None, class_weight=None,
           n_partitions=None, client=None, in_memory=None):
    """Fit ``min_w P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1`` and certify it by the L1 problem's gap.

    :func:`daskdca.fit` with :class:`~daskdca.methods.l1.L1SDCA` (or ``solver``, an ``L1SDCA``
    object).  LIBLINEAR's ``C`` of
    ``LogisticRegression(penalty="l1", solver="liblinear")`` is
    ``1 / (lam n)``.  The returned model's ``primal_``, ``dual_`` and ``gap_``
    are ``P1(coef_)``, ``D1(dual_coef_)`` and their difference, computed
    from scratch (:mod:`daskdca.l1`).

    Parameters
    ----------
    X : array-like, sparse matrix, dask array or DataFrame, CSRStore or str
        Training data, as :func:`daskdca.fit` takes it.
    y : array-like of shape (n_samples,) or None
        Two labels, or real targets for a regression loss (None for a store).
    loss : str or Loss, default="logistic"
        As in :func:`daskdca.fit`.
    lam : float, default=1e-4
        The L1 weight ``lam > 0``.
    tol : float, default=1e-6
        Stop when ``P1 - D1 <= tol * |P1|``.
    solver : L1SDCA or None, default=None
        The settings (None: ``L1SDCA()``).
    max_epochs, max_rounds : int or None, default=None
        As in :func:`daskdca.fit` (for the whole continuation).
    random_state : int or None, default=0
        As in :func:`daskdca.fit`.
    verbose : int or bool, default=0
        As in :func:`daskdca.fit`.
    callback : callable or None, default=None
        As in :func:`daskdca.fit`.
    dual_init : array-like of shape (n_samples,) or None, default=None
        A feasible dual point to start from (e.g. an earlier fit's ``dual_coef_``).
    sample_weight : array-like of shape (n_samples,), float or None, default=None
        As in :func:`daskdca.fit`.
    class_weight : dict, "balanced" or None, default=None
        As in :func:`daskdca.fit`.
    n_partitions, client, in_memory : default=None
        As in :func:`daskdca.fit`: with ``K > 1`` partitions the rounds are
        CoCoA+'s on every subproblem.

    Returns
    -------
    LinearModel
        The certified model.

    Raises
    ------
    ValueError
        For more than two classes, a loss without a feasible rescaling
        (:func:`daskdca.methods.l1.check_l1_loss`), or a solver other than an
        ``L1SDCA`` object; the message names the fix.

    See Also
    --------
    daskdca.SDCAClassifier : ``penalty="l1"`` runs this fit.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from daskdca.l1 import fit_l1
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = fit_l1(StandardScaler().fit_transform(X), y, lam=0.01, tol=1e-8)
    >>> bool(model.converged_), bool((model.coef_ == 0).any())
    (True, True)
    """
    if solver is None:
        solver = L1SDCA()
    elif not isinstance(solver, L1SDCA):
        raise ValueError(f"fit_l1 runs an L1SDCA object, got solver={solver!r}; pass daskdca.methods.l1.L1SDCA(...) or "
                         "None.")
    return api.fit(X, y, loss=loss, lam=lam, solver=solver, tol=tol, max_epochs=max_epochs, max_rounds=max_rounds,
                   random_state=random_state, verbose=verbose, callback=callback, dual_init=dual_init,
                   sample_weight=sample_weight, class_weight=class_weight, n_partitions=n_partitions, client=client,
                   in_memory=in_memory)
