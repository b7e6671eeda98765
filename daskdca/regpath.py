"""``daskdca.path``: certified solutions along a grid of ``C``, each fit warm-started from the last.

(The module is ``regpath`` so that the function does not shadow it in ``daskdca``.)

For each ``C`` (LIBLINEAR's, ``lam = 1 / (C n)``) it solves

    min_w P_C(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2

with :func:`daskdca.fit`; with ``fit_intercept=True`` (the default, as in
the estimators) each row gets LIBLINEAR's constant feature of value
``intercept_scaling``, regularised like the others, so ``w`` has one more
coordinate and ``intercept = intercept_scaling * w_b``.  The dual box of every loss (``y_i alpha_i`` in
[0, 1] for hinge) does not depend on ``lam``, so the duals of one ``C`` are a
feasible start for the next: the grid is solved from the smallest ``C`` (the
strongest regularisation, the fastest fit, the sparsest duals) upwards, each
fit starting at the previous one's duals, and each stopping on its own
certified gap.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from typing import NamedTuple

import numpy as np

from daskdca.api import FIT_WARNING, _budget_words, _is_cluster_input, fit
from daskdca.problem import relative_gap, with_intercept_column
from daskdca.routes import _resolve_solver
from daskdca.store import CSRStore, open_store
from daskdca.user_warnings import warn_not_converged
from daskdca.validation import _check_warm_start_supported, _check_X, _resolve_random_state

__all__ = ["RegularizationPath", "path", "with_intercept_column"]


class RegularizationPath(NamedTuple):
    """What :func:`path` returns: one entry per ``C``, in ascending order of ``C``.

    A named tuple: each parameter is also the field of that name
    (``result.coef``); :func:`path` builds it.

    Parameters
    ----------
    Cs : ndarray of shape (n_Cs,)
        The grid, sorted ascending (the order the fits ran in).
    lams : ndarray of shape (n_Cs,)
        ``lam = 1 / (C n)`` of each fit.
    coef : ndarray of shape (n_Cs, n_features), or (n_Cs, n_classes, n_features)
        ``w`` of each fit (without the intercept's weight); with more than
        two classes, one row per one-vs-rest problem (:func:`daskdca.fit`).
    intercept : ndarray of shape (n_Cs,) or (n_Cs, n_classes)
        ``intercept_scaling * w_b`` with ``fit_intercept``, else zeros.
    primal, dual, gap : ndarray of shape (n_Cs,) or (n_Cs, n_classes)
        The certified ``P_C(w)``, ``D_C(alpha)`` and ``P - D >= P_C(w) - min P_C``,
        recomputed from the duals alone (with ``fit_intercept``, of the
        problem with the synthetic feature).
    n_rounds : ndarray of int of shape (n_Cs,)
        Rounds each fit took from its warm start.
    converged : ndarray of bool of shape (n_Cs,)
        Whether each fit reached ``gap <= tol * |primal|`` (every problem's).
    classes : ndarray of shape (n_classes,) or None
        The labels (with two, ``classes[1]`` is +1), None for regression.
    dual_coef : ndarray of shape (n_Cs, n_samples), (n_Cs, n_classes, n_samples), or None
        The duals of each fit, in X's row order (``keep_dual=True`` only).
    """

    Cs: np.ndarray
    lams: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    gap: np.ndarray
    n_rounds: np.ndarray
    converged: np.ndarray
    classes: object
    dual_coef: object


def _check_Cs(Cs):
    """The grid as float64, sorted ascending; every C finite and > 0."""
    if isinstance(Cs, (str, bytes)) or np.ndim(Cs) != 1 or len(Cs) == 0:
        raise ValueError(f"Cs must be a non-empty 1-D sequence of C values > 0, got {Cs!r}; "
                         "e.g. Cs=np.logspace(-3, 1, 9).")
    for c in Cs:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, numbers.Real) or not math.isfinite(c) or c <= 0:
            raise ValueError(f"Every C in Cs must be a finite real number > 0, got {c!r}; "
                             "C is LIBLINEAR's inverse regularisation strength, lam = 1 / (C n).")
    return np.sort(np.asarray(Cs, dtype=np.float64))


def path(X, y, Cs, *, loss="hinge", solver=None, tol=1e-6, max_rounds=None, max_epochs=None, fit_intercept=True,
         intercept_scaling=1.0, n_partitions=None, random_state=0, keep_dual=False, verbose=0, sample_weight=None,
         client=None, l1_ratio=None):
    """Solve ``min 1/n sum_i phi_i(x_i.w + b) + lam/2 (||w||^2 + (b/s)^2)`` for each ``lam = 1 / (C n)``, C in Cs.

    ``b`` is LIBLINEAR's regularised intercept, ``s = intercept_scaling``
    (``fit_intercept=True``, the default); ``b = 0`` with ``fit_intercept=False``.

    The fits run from the smallest ``C`` up; each starts at the previous
    fit's dual variables (``daskdca.fit(dual_init=...)``), which are feasible
    for every ``C`` (the dual box does not depend on ``lam``), and stops on
    its own duality gap, so every point of the path carries a certificate.
    The first fit starts at ``alpha = 0``.  In memory, on a cluster
    (``client``), or on a store (each fit a cluster fit, in memory or out of
    core as :func:`daskdca.fit` decides, warm-started in the store's row
    order).

    Parameters
    ----------
    X : ndarray, scipy sparse matrix, or store path/URL/handle
        Training data of shape (n_samples, n_features), as for
        :func:`daskdca.fit` (arrays converted to CSR once).  A store needs
        ``fit_intercept=False`` (it cannot be augmented with the constant
        feature without rewriting it); a dask array is refused (write it as
        a store first).
    y : array-like of shape (n_samples,) or None
        Two labels (the sorted second one is +1) or real targets for
        ``loss="squared"``; None for a store.
    Cs : array-like of shape (n_Cs,)
        LIBLINEAR's ``C`` values (``> 0``), in any order; they are solved
        and returned in ascending order.
    loss : str or Loss, default="hinge"
        As in :func:`daskdca.fit`.
    solver : str, method object or None, default=None
        As in :func:`daskdca.fit` (None: ``"auto"``, whose route for a
        warm-started fit is a dual method: the first ``C``, cold, may take
        primal Newton); a solver given must support warm starts
        (``capabilities.warm_start``).  An elastic-net solver object
        (``daskdca.SDCA(l1_ratio=0.5)``, ``daskdca.CoCoAPlus(l1_ratio=0.5)``)
        gives the elastic-net path, ``lam ((1 - l1_ratio)/2 ||w||^2 +
        l1_ratio ||w||_1)`` at each ``lam``, warm-started along it; so does
        ``l1_ratio`` below.
    tol : float, default=1e-6
        Relative duality gap at which each fit stops.
    max_rounds, max_epochs : int or None, default=None
        Per fit, as in :func:`daskdca.fit`: the most rounds, and the most
        passes over the data (whatever the method).
    fit_intercept : bool, default=True
        Add LIBLINEAR's synthetic feature of value ``s = intercept_scaling``
        (regularised like the others, never written into X), as the
        estimators do by default: each fit solves ``min 1/n sum_i
        phi_i(x_i.w + b) + lam/2 (||w||^2 + (b/s)^2)`` with ``b = s w_b``,
        and the certified objective is that of this augmented problem.
        False fits no intercept (``b = 0``): the problem of :func:`daskdca.fit`.
    intercept_scaling : float, default=1.0
        Value of the synthetic feature; ``intercept = intercept_scaling * w_b``.
        Must be > 0; unused when ``fit_intercept=False``.
    n_partitions : int or None, default=None
        As in :func:`daskdca.fit`.
    random_state : int or None, default=0
        Seed of every fit's random streams (the same for each ``C``); None
        draws one for the whole path.
    keep_dual : bool, default=False
        Return every fit's duals (``n_Cs * n_samples`` floats).
    verbose : int or bool, default=0
        Passed to each fit (:func:`daskdca.fit`: a bar and a summary line
        per fit at 1, also a line per gap record at 2).
    sample_weight : array-like of shape (n_samples,), float or None, default=None
        Row weights ``s_i`` of every fit, as in :func:`daskdca.fit` (the loss
        term becomes ``1/n sum_i s_i phi_i``; the dual box scales by ``s_i``
        and still does not depend on ``lam``, so the warm starts stay
        feasible).  A store carries its own weights instead.
    client : distributed.Client or None, default=None
        Run every fit on this Dask cluster (a store always runs on one: this
        client, else the default client, else the process's own LocalCluster,
        started once).
    l1_ratio : float in [0, 1] or None, default=None
        As in :func:`daskdca.fit`: the L1 share of every fit's penalty, with
        ``solver=None`` (``"auto"``) or a solver named by a string; 1 is the
        pure L1 path (each point certified as the L1 problem).

    Returns
    -------
    RegularizationPath
        Per ``C`` (ascending): ``coef``, ``intercept``, the certified
        ``primal``, ``dual`` and ``gap``, ``n_rounds``, ``converged``.

    Raises
    ------
    ValueError
        For a dask array, a store with ``fit_intercept=True``, bad ``Cs``, or
        a solver without warm starts.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> import daskdca
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> res = daskdca.path(StandardScaler().fit_transform(X), y, [0.01, 0.1, 1.0], loss="logistic")
    >>> bool(res.converged.all()), res.coef.shape
    (True, (3, 30))
    """
    is_store = isinstance(X, (str, os.PathLike, CSRStore))
    if _is_cluster_input(X) and not is_store:
        raise ValueError(
            f"daskdca.path takes arrays or a store, got X of type {type(X).__name__}. Write it as a store first "
            "(daskdca.write_store(url, X, y)) and pass the store, or call daskdca.fit for each C (smallest first) "
            "with dual_init=previous.dual_coef_.")
    on_cluster = is_store or client is not None
    Cs = _check_Cs(Cs)
    if Cs.shape[0] > 1:  # before the first fit, not after it
        default = "cocoa+" if on_cluster else "sdca"
        method = _resolve_solver(default if solver in (None, "auto") else solver, batch_size=None, local_iters=1.0,
                                 on_cluster=on_cluster)
        _check_warm_start_supported(method, resume=False,
                                    needs="start each fit of a path from the previous C's dual variables",
                                    fix="fit each C with daskdca.fit")
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise ValueError(f"fit_intercept must be True or False, got {fit_intercept!r}.")
    if fit_intercept and (isinstance(intercept_scaling, bool) or not isinstance(intercept_scaling, numbers.Real)
                          or not math.isfinite(intercept_scaling) or intercept_scaling <= 0):
        raise ValueError(f"intercept_scaling must be a finite real number > 0, got {intercept_scaling!r}.")
    if not isinstance(keep_dual, (bool, np.bool_)):
        raise ValueError(f"keep_dual must be True or False, got {keep_dual!r}.")
    if is_store:
        if fit_intercept:
            raise ValueError("daskdca.path on a store needs fit_intercept=False: a store cannot be augmented with "
                             "the constant feature without rewriting it. Pass fit_intercept=False, or fit the "
                             "arrays.")
        X = X if isinstance(X, CSRStore) else open_store(X)
        n = X.n
    else:
        X = _check_X(X)
        if fit_intercept:
            X = with_intercept_column(X, intercept_scaling)
        n = X.shape[0]
    seed = _resolve_random_state(random_state)
    models = []
    alpha = None
    for C in Cs:
        with warnings.catch_warnings():  # one warning below names every C short of tol
            warnings.filterwarnings("ignore", message=FIT_WARNING)
            model = fit(X, y, loss=loss, lam=1.0 / (C * n), solver=solver, tol=tol, max_rounds=max_rounds,
                        max_epochs=max_epochs, n_partitions=n_partitions, random_state=seed, verbose=verbose,
                        dual_init=alpha, sample_weight=sample_weight, client=client, l1_ratio=l1_ratio)
        alpha = model.dual_coef_
        models.append(model)
    short = [(C, m) for C, m in zip(Cs, models) if not m.converged_]
    if short:
        gaps = ", ".join(f"{float(np.max(relative_gap(m.primal_, m.dual_))):.3e}" for _, m in short)
        warn_not_converged(f"daskdca.path reached its budget ({_budget_words(max_epochs, max_rounds)}) at C = "
                           f"{', '.join(f'{C:g}' for C, _ in short)} with relative duality gaps {gaps} > tol={tol:g}; "
                           "increase max_epochs (or max_rounds) or tol (the path's converged says which C).")
    W = np.stack([np.asarray(m.coef_, dtype=np.float64) for m in models])
    if fit_intercept:  # the last coordinate of w (of every class's w) is the synthetic feature's
        coef, intercept = W[..., :-1].copy(), float(intercept_scaling) * W[..., -1]
    else:
        coef, intercept = W, np.zeros(W.shape[:-1])
    return RegularizationPath(
        Cs=Cs, lams=np.array([m.lam for m in models]), coef=coef, intercept=intercept,
        primal=np.array([m.primal_ for m in models]), dual=np.array([m.dual_ for m in models]),
        gap=np.array([m.gap_ for m in models]), n_rounds=np.array([m.n_rounds_ for m in models], dtype=np.int64),
        converged=np.array([bool(m.converged_) for m in models]), classes=models[0].classes_,
        dual_coef=np.stack([m.dual_coef_ for m in models]) if keep_dual else None)
