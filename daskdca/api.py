"""``daskdca.fit``: validate input, pick a method and a driver, return a certified model.

This module names no method's internals: it builds the method object from
the registry (:mod:`daskdca.methods`), checks the combination against the
method's capabilities, and hands it to the in-process driver
(:mod:`daskdca.driver`) or the Dask engine (:mod:`daskdca.engine`).
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import time
import types

import numpy as np

from daskdca.driver import DEFAULT_MAX_EPOCHS, fit_in_process
from daskdca.losses import get_loss
from daskdca.methods import REGISTRY, check_supported, takes_l1_ratio
from daskdca.methods.multiclass import OneVsRestMethod
from daskdca.methods.multinomial import MultinomialSDCA
from daskdca.methods.multinomial import check_dual_init as _check_dual_init_multinomial
from daskdca.methods.multinomial_lbfgs import MultinomialLBFGS
from daskdca.methods.multinomial_newton import MultinomialNewton
from daskdca.partitions import even_sizes, random_row_order, store_partition_ranges
from daskdca.problem import check_sample_weight, column_nnz, relative_gap
from daskdca.routes import (Workers, _resolve_solver, _sdca_options, choose_route, data_bytes, explicit_route,
                            provisional_method, route_method, with_threads)
from daskdca.prediction import Predictor, check_frame_columns, proba_kind, proba_refusal
from daskdca.prediction import output as prediction_output
from daskdca.prediction import score as prediction_score
from daskdca.store import CSRStore, open_store
from daskdca.store.frames import _is_dask_frame, _is_pandas_frame, _refuse_label_name, is_parquet_path, pandas_input
from daskdca.user_warnings import warn_at_caller, warn_not_converged
from daskdca.validation import (
    _check_dual_init,
    _check_dual_init_ovr,
    _check_fit_options,
    _check_n_jobs,
    _check_int,
    _check_warm_start_supported,
    _check_X,
    _check_y,
    _problems,
    _store_labels,
    _weights_and_problems,
    class_weights,
)

__all__ = ["fit", "LinearModel"]

# In-memory CoCoA+ splits the rows into this many partitions unless told
# otherwise.  A fixed number (not the CPU count) keeps results identical on
# every machine for a given random_state.
DEFAULT_COCOA_PARTITIONS = 2


def _has_proba(model):
    """``predict_proba`` exists for the logistic loss only; an AttributeError says why otherwise."""
    if model.loss.name != "logistic":
        raise AttributeError(proba_refusal(type(model).__name__, model.loss.name))
    return True


class _AvailableIf:
    """A method that exists on an instance where ``check(instance)`` holds (``check`` raises the AttributeError
    that ``hasattr`` reads otherwise), as scikit-learn's ``available_if``; here so that ``daskdca.fit`` imports
    no scikit-learn (about 1 s of a first fit; benchmarks/RESULTS.md, "A first fit and the command line without
    scikit-learn")."""

    def __init__(self, method, check):
        self.method, self.check = method, check
        functools.update_wrapper(self, method)

    def __get__(self, instance, owner=None):
        if instance is None:  # the class's attribute: the function itself (its documentation)
            return self.method
        self.check(instance)
        return types.MethodType(self.method, instance)


def _available_if(check):
    """Decorate a method with :class:`_AvailableIf`."""
    return functools.partial(_AvailableIf, check=check)


class LinearModel:
    """A fitted regularised linear model with its duality-gap certificate.

    The model solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``, or
    with an L1 share ``rho`` (the solver's ``l1_ratio``; 1 for
    :class:`~daskdca.methods.l1.L1SDCA`) ``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 -
    rho)/2 ||w||^2 + rho ||w||_1)``, whose primal and dual the certificate
    reports.  :func:`daskdca.fit` builds it; the parameters are what it is
    built from, the attributes what to read.

    Parameters
    ----------
    loss : Loss
        The fitted loss (``loss``).
    lam : float
        The regularisation strength (``lam``).
    solver : method object
        The method that ran (``solver``).
    classes : ndarray of shape (n_classes,) or None
        The original labels (``classes_``).
    result : FitResult
        The round loop's :class:`~daskdca.driver.FitResult`: ``dual_coef_``,
        ``primal_``, ``dual_``, ``gap_``, ``converged_``, ``history_``,
        ``n_rounds_``, ``n_epochs_`` and ``plan_`` come from it.
    random_state : int
        The seed of all random streams (``random_state_``).
    n_features : int
        The fitted number of features (``n_features_in_``).
    coef : ndarray of shape (n_features,) or (n_classes, n_features)
        The model ``w`` (``coef_``).
    route : daskdca.routes.Route or None, default=None
        Where the fit ran and why (``route_``).
    feature_names : array-like of str or None, default=None
        The column names (``feature_names_in_``, absent when None).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_classes, n_features)
        The model ``w``; for plain SDCA and CoCoA+ without Catalyst
        (``CoCoAPlus(acceleration=None)``; ``"cocoa+"`` on two or more
        partitions runs inside it) ``w = X^T dual_coef_ / (lam n)``,
        rebuilt from the dual variables; for a primal iterate (Newton,
        L-BFGS, Pegasos, SDCA or CoCoA+ inside Catalyst: ``route_``) the point that
        ``dual_coef_`` certifies, equal to that only as the gap closes.  With more than two classes, row
        ``k`` is one-vs-rest problem ``k`` (``classes_[k]`` against the rest).
    dual_coef_ : ndarray of shape (n_samples,) or (n_classes, n_samples)
        The dual point that certifies ``coef_``, in the order of the rows of X
        (labels inside the loss: for hinge ``alpha_i y_i`` lies in [0, 1]).
    primal_, dual_, gap_ : float, or ndarray of shape (n_classes,)
        ``P(coef_)``, ``D(dual_coef_)`` and ``P - D``, computed from
        ``dual_coef_`` alone; ``gap_ >= P(coef_) - min P`` (per problem).
    n_rounds_ : int
        Rounds behind ``coef_``.  With more than two classes a one-vs-rest
        problem stops stepping at its first evaluation that meets ``tol``
        (its binary fit's round; :mod:`daskdca.methods.multiclass`), and the
        fit ends when the last one does.
    n_epochs_ : float
        Coordinate steps behind ``coef_`` divided by n (gap evaluations not
        counted); with one-vs-rest problems, a round's steps are the mean over
        the problems that stepped in it.
    converged_ : bool
        Whether ``gap_ <= tol * |primal_|`` (for every problem).
    history_ : list of HistoryRecord
        ``(round, epochs, seconds, primal, dual, gap)`` per evaluation; the
        last one is the certificate.  A one-vs-rest problem that stopped
        keeps the values it stopped with until that last record.
    classes_ : ndarray of shape (n_classes,) or None
        Original labels for classification; with two, ``classes_[1]`` maps
        to +1.
    loss, lam, solver, random_state_ :
        What was fitted: the :class:`~daskdca.losses.Loss`, ``lam``, the
        method object and the integer seed of all random streams.
    plan_ :
        The method resolved for the data (e.g. ``plan_.batch_size``,
        ``plan_.sigma2``, ``plan_.sigma_prime``).
    route_ : daskdca.routes.Route
        Where the fit ran and why: ``route_.name`` is ``"in_process"``,
        ``"one_worker"`` or ``"rounds"``, ``route_.reason`` the facts that
        chose it (:mod:`daskdca.routes`).
    feature_names_in_ : ndarray of shape (n_features,)
        The column names of a fitted pandas or dask DataFrame (or of the
        frame a store was written from), when they are all strings; absent
        otherwise, as in scikit-learn.
    """

    def __init__(self, *, loss, lam, solver, classes, result, random_state, n_features, coef, route=None,
                 feature_names=None):
        self.loss = loss
        self.lam = lam
        self.solver = solver
        self.classes_ = classes
        self.random_state_ = random_state
        self.n_features_in_ = n_features
        self.plan_ = result.plan
        self.coef_ = coef
        self.dual_coef_ = result.alpha
        self.primal_ = result.primal
        self.dual_ = result.dual
        self.gap_ = result.gap
        self.converged_ = result.converged
        self.history_ = result.history
        self.n_rounds_ = result.n_rounds
        self.n_epochs_ = result.n_epochs
        self.route_ = route
        if feature_names is not None:
            self.feature_names_in_ = np.asarray(feature_names, dtype=object)

    def _predictor(self):
        """The :class:`~daskdca.prediction.Predictor` of this model (one row of ``coef`` per problem, no
        intercept; X checked as :func:`daskdca.fit` checks it, so every input gives the in-memory bits)."""
        return Predictor(coef=np.atleast_2d(self.coef_), intercept=None, classes=self.classes_,
                         proba=proba_kind(self.loss.name, isinstance(self.solver, (MultinomialSDCA, MultinomialLBFGS,
                                                                                   MultinomialNewton))),
                         refusal=proba_refusal(type(self).__name__, self.loss.name), name=type(self).__name__,
                         n_features=self.n_features_in_, feature_names=getattr(self, "feature_names_in_", None),
                         as_csr=True, check=self._check_in_memory)

    def _check_in_memory(self, X):
        """In-memory X as :func:`daskdca.fit` checks it (canonical CSR, finite), with the fitted columns."""
        if _is_pandas_frame(X):
            check_frame_columns(self._predictor(), X.columns)
            X = pandas_input(X, None)[0]
        X = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features but the model was fitted with {self.n_features_in_}; "
                             "pass data with the same columns.")
        return X

    def decision_function(self, X):
        """``X @ coef_`` (``X @ coef_.T``, one column per class, for more than two) for new data X.

        Parameters
        ----------
        X : ndarray, scipy sparse matrix, pandas or dask DataFrame, dask array, or store path/URL/handle
            In-memory X is checked as :func:`daskdca.fit` checks it.  A dask
            array (one column chunk; its chunks dense or sparse, e.g.
            AnnData's ``read_elem_lazy``) gives a lazy dask array, one task
            per row chunk, never densified.  A dask DataFrame gives a lazy
            dask Series (a DataFrame with a column per class for more than
            two) on its partitions and index.  A DataFrame's columns must be
            the fitted ones (``feature_names_in_``).  A daskdca store (a path
            or URL, an ``os.PathLike`` or a :class:`~daskdca.store.CSRStore`)
            is read one verified block at a time and gives a NumPy array in
            the store's row order.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes), or its lazy dask counterpart
            The scores ``X @ coef_`` (``X @ coef_.T``).
        """
        return prediction_output(self._predictor(), X, "decision")

    def predict(self, X):
        """Class labels (classification losses) or predicted targets (regression losses).

        Two classes: the sign of the score picks ``classes_[1]``; more: the
        class of the largest score.

        Parameters
        ----------
        X : ndarray, scipy sparse matrix, pandas or dask DataFrame, dask array, or store path/URL/handle
            As in :meth:`decision_function`; lazy for a dask array (a dask
            array) or a dask DataFrame (a dask Series on its partitions and
            index).

        Returns
        -------
        ndarray of shape (n_samples,), or its lazy dask counterpart
            The predicted labels (elements of ``classes_``) or targets.
        """
        return prediction_output(self._predictor(), X, "predict")

    @_available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (``loss="logistic"`` only; other losses have no such method).

        Two classes: ``P(classes_[1]) = 1 / (1 + exp(-score))``.  More: the
        one-vs-rest probabilities normalised to sum to one per row; for a
        multinomial model, the softmax of the scores, its own probabilities.

        Parameters
        ----------
        X : ndarray, scipy sparse matrix, pandas or dask DataFrame, dask array, or store path/URL/handle
            As in :meth:`decision_function`.

        Returns
        -------
        ndarray of shape (n_samples, n_classes), or its lazy dask counterpart
            The probability of each class, in the order of ``classes_``.
        """
        return prediction_output(self._predictor(), X, "proba")

    def score(self, X, y=None, sample_weight=None):
        """Accuracy (classification losses) or ``R^2`` (regression losses) of the predictions on X.

        Parameters
        ----------
        X : ndarray, scipy sparse matrix, pandas or dask DataFrame, dask array, or store path/URL/handle
            A store is streamed block by block and scored against its own labels.
        y : array-like of shape (n_samples,) or None, default=None
            True labels or targets; required for arrays, None for a store.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights (for a store, in its stored row order).

        Returns
        -------
        float
            The accuracy, or ``R^2``.
        """
        return prediction_score(self._predictor(), X, y, sample_weight, predict=self.predict)

    def __repr__(self):
        def shown(value, spec):
            return (f"[{', '.join(format(float(v), spec) for v in value)}]" if np.ndim(value)
                    else format(value, spec))

        return (f"LinearModel(loss={self.loss.name!r}, lam={self.lam!r}, solver={self.solver.name!r}, "
                f"primal={shown(self.primal_, '.6g')}, gap={shown(self.gap_, '.3g')}, converged={self.converged_})")


def _l1_ratio_options(l1_ratio, solver, auto):
    """``(rho, options)``: the L1 share of the penalty (0.0 for None) and the options it adds to a solver named
    by a string (None for ``solver="auto"``, whose route decides, and where none is given); refuses an
    ``l1_ratio`` outside ``[0, 1]``, with a solver object, or with a named solver without one."""
    if l1_ratio is None:
        return 0.0, None
    if isinstance(l1_ratio, bool) or not isinstance(l1_ratio, numbers.Real) or not math.isfinite(l1_ratio) or \
            not 0 <= l1_ratio <= 1:
        raise ValueError(f"l1_ratio must be a number in [0, 1] (the L1 share of the penalty; 1 is pure L1), got "
                         f"{l1_ratio!r}.")
    rho = float(l1_ratio)
    if auto:
        return rho, None
    if not isinstance(solver, str):
        raise ValueError(f"l1_ratio={l1_ratio!r} configures solver='auto' or a solver given by name; with a solver "
                         f"object ({solver!r}) set it on the object instead (e.g. daskdca.SDCA(l1_ratio=0.5)).")
    if solver not in REGISTRY:
        return rho, None  # _resolve_solver names the solvers there are
    takers = sorted(name for name, cls in REGISTRY.items() if takes_l1_ratio(cls))
    if solver not in takers:
        raise ValueError(f"l1_ratio applies to solver='auto' and {takers}, got solver={solver!r} with "
                         f"l1_ratio={l1_ratio!r}; drop l1_ratio or change the solver.")
    return rho, {"l1_ratio": rho}


def _default_partitions(method, on_cluster):
    if method.capabilities.many_partitions and method.name == "cocoa+" and not on_cluster:
        return DEFAULT_COCOA_PARTITIONS
    return None if on_cluster else 1


def _is_cluster_input(X):
    if isinstance(X, (str, os.PathLike, CSRStore)):
        return True
    return type(X).__module__.startswith("dask.") and hasattr(X, "dask")


#: The start of the ConvergenceWarning of a fit that spent its budget (:func:`_warn_not_converged`), which
#: ``daskdca.path`` and the estimators filter to warn once in their own terms.
FIT_WARNING = r"daskdca\.fit reached max_rounds="


def _budget_words(max_epochs, max_rounds):
    """The budget a user gave (``max_epochs`` or ``max_rounds``), or the default one, as a warning names it."""
    if max_epochs is not None:
        return f"max_epochs={max_epochs:g}"
    return f"max_rounds={max_rounds}" if max_rounds is not None else f"the default budget of {DEFAULT_MAX_EPOCHS} passes"


def _warn_not_converged(result, tol, max_epochs=None, max_rounds=None):
    """The ConvergenceWarning of a fit that spent its budget short of ``tol``, naming the budget the user gave
    (``max_epochs`` or ``max_rounds``), or the default one."""
    if not result.converged and result.n_rounds >= result.max_rounds:
        budget = "" if max_rounds is not None and max_epochs is None else f" ({_budget_words(max_epochs, max_rounds)})"
        warn_not_converged(
            f"daskdca.fit reached max_rounds={result.max_rounds}{budget} with relative duality gap "
            f"{relative_gap(result.primal, result.dual):.3e} > tol={tol:g}"
            f"{' (the largest of its one-vs-rest problems)' if np.ndim(result.primal) else ''}; "
            "increase max_epochs (or max_rounds) or tol."
        )


def fit(X, y=None, *, loss="hinge", lam=1e-4, solver="auto", tol=1e-6, max_epochs=None, max_rounds=None,
        batch_size=None, local_iters=1.0, n_partitions=None, random_state=0, verbose=0,
        callback=None, client=None, in_memory=None, checkpoint=None, checkpoint_every=None,
        resume=False, overwrite=False, storage_options=None, dual_init=None, sample_weight=None,
        class_weight=None, l1_ratio=None, n_jobs=None):
    """Fit ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` by dual coordinate ascent.

    The dual is ``D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2``
    with ``w(alpha) = X^T alpha / (lam n)``; labels sit inside the loss,
    ``phi_i(z) = phi(y_i z)``.  LIBLINEAR's ``C`` equals ``1/(lam n)``.
    There is no intercept.  The fit stops when the duality gap, recomputed
    from the dual variables alone, satisfies ``P - D <= tol * |P|``.  With
    ``l1_ratio = rho`` the penalty is ``lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``
    and the certificate that problem's.

    Parameters
    ----------
    X : ndarray, scipy sparse matrix, dask array, pandas or dask DataFrame, Parquet path, or store path/URL/handle
        Training data of shape (n_samples, n_features); CSC and COO are
        converted to CSR.  float32 values are kept as float32; ``w``,
        ``alpha`` and all sums are float64.  A DataFrame's columns are the
        features and must all be numeric (a column of categories, strings,
        objects or dates raises ValueError naming it: encode or drop it
        first); their names become the model's ``feature_names_in_``.  A
        pandas DataFrame is fitted as its values (the bits of the NumPy
        array); a dask DataFrame goes to the cluster like a dask array, one
        partition at a time, never computed whole into this process (one
        pass counts its partitions' rows first).  A path (or fsspec URL)
        naming Parquet (a ``.parquet``, ``.parq`` or ``.pq`` file, or a
        folder of them) is read lazily as a dask DataFrame
        (``storage_options`` passed on) and fitted as one, with ``y`` its
        label column's name.
    y : array-like, dask array or Series, str, or None
        A str names X's label column (X a DataFrame: ``fit(df, y="label")``),
        which is then not a feature.  Labels may be numbers, strings, bools
        or categories, on every input; dask labels that are not numbers cost
        one more pass over them (their sorted distinct values are found
        before the data is staged).  Otherwise of shape (n_samples,):
        Two distinct labels (sorted, the second becomes +1) for the
        classification losses, or ``K > 2`` labels: then the K one-vs-rest
        problems (class ``k`` against the rest, each the objective above with
        labels +1 for class ``k``, -1 for the others) are fitted together, one
        pass per partition per round (:mod:`daskdca.methods.multiclass`; the
        solvers whose ``capabilities.multi_class`` is True); with
        ``loss="logistic", solver="multinomial"`` (or a
        :class:`~daskdca.methods.MultinomialSDCA`), the one multinomial
        logistic problem ``min_W 1/n sum_i [log sum_k exp(w_k.x_i) -
        w_{y_i}.x_i] + lam/2 ||W||_F^2`` instead (:mod:`daskdca.methods.multinomial`); with
        ``loss="hinge", solver="crammer_singer"`` (or a
        :class:`~daskdca.methods.CrammerSingerSVM`), the one Crammer-Singer
        multi-class SVM problem ``min_W 1/n sum_i max_k (1[k != y_i] +
        w_k.x_i - w_{y_i}.x_i) + lam/2 ||W||_F^2`` (LIBLINEAR's ``-s 4``;
        :mod:`daskdca.methods.crammer_singer`).  Real targets
        for the regression losses (``"squared"``, ``"epsilon_insensitive"``,
        ``"squared_epsilon_insensitive"``, ``"huber"``).  None for a store (its labels are stored with
        the data, at most 64 distinct values).
    loss : {"hinge", "smoothed_hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive", \
"squared_epsilon_insensitive", "huber"} or Loss, default="hinge"
        A name, or an instance such as ``daskdca.losses.SmoothedHinge(gamma=0.5)``,
        ``daskdca.EpsilonInsensitive(epsilon=0.1)`` or ``daskdca.Huber(delta=1.35)``
        (a name takes the loss's default parameter: ``epsilon = 0``,
        ``delta = 1``).  The regression losses beyond squared run on the
        solvers whose ``capabilities.losses`` name them (serial SDCA, CoCoA+
        and mini-batch SDCA take all three).
    lam : float, default=1e-4
        Regularisation strength, ``lam > 0``.
    solver : "auto", str or method object, default="auto"
        ``"auto"`` (or None) picks the route and the method from the data's
        size, ``lam`` and the cluster (:mod:`daskdca.routes`; the model's
        ``route_`` says which and why): serial SDCA in this process for
        in-memory X without a client; with a client, a store or a dask
        array, the whole serial fit as one task on one worker when the data
        fits there, else CoCoA+ rounds over one partition per worker; serial
        SDCA runs inside Catalyst's loop when ``lam n < 0.1``.  A name in
        ``daskdca.methods.REGISTRY`` or a method object such as
        ``CoCoAPlus(local_solver="sdna")`` is always run as given:
        ``"sdca"``: serial SDCA; ``"cocoa+"``: CoCoA+ rounds over
        ``n_partitions`` partitions of the rows; ``"minibatch_sdca"``:
        mini-batch SDCA with safe ESO steps; ``"pegasos"``, ``"sdna"``,
        ``"dfsdca"``, ``"adfsdca"``, ``"adfsdca+"``, ``"spdc"``: see the
        README's solver table.  On a cluster ``"spdc"`` with a smooth loss
        runs SPDC as CoCoA+'s local solver (measured faster than its global
        mini-batch rounds); pass ``SPDC(...)`` for those.
        ``daskdca.methods.capability_table()`` says what each supports.
    tol : float, default=1e-6
        Relative duality gap at which to stop.
    max_epochs : float or None, default=None
        The most passes over the data, whatever the solver: a pass is
        ``1 / local_iters`` of a round of serial SDCA or CoCoA+ (one outer
        step inside Catalyst), ``ceil(n / batch_size)`` rounds of the
        mini-batch methods.  Reaching it warns with
        ``ConvergenceWarning``.  With ``max_rounds`` too, the smaller budget
        holds; with neither, 1000 passes.  The fit ends with the round that
        reaches it: where a round holds several passes (small data: the
        route's ``local_iters``, at most the budget) or the budget is not
        whole, past it by less than a round.
    max_rounds : int or None, default=None
        The most rounds (what a round is depends on the solver; ``max_epochs``
        means the same on every one).
    batch_size : int, "round" or None, default=None
        Rows per round (``"minibatch_sdca"`` only); see
        :class:`~daskdca.methods.MinibatchSDCA`.  None: about
        ``1/sigma^2`` in this process, and on a cluster ``"round"``, the
        batch a Dask round is worth.
    local_iters : float, default=1.0
        Passes over each partition's rows per round (``"sdca"``, ``"cocoa+"``).
        Where it is not given, ``solver="auto"`` gives plain serial SDCA on
        small data :func:`daskdca.routes.round_passes` passes a round (its
        ``route_.options`` say how many).
    n_partitions : int or None, default=None
        In memory, rows go to partitions by a seeded random permutation
        (``dual_coef_`` still follows the rows of X): 1 for ``"sdca"`` and
        ``"minibatch_sdca"``, 2 for ``"cocoa+"`` when None.  On a cluster a
        partition is a run of whole store blocks (of a dask array's row
        chunks); None: one per worker at the start of the fit (at most one
        per block), recorded in the checkpoint so that a resumed fit keeps
        it.
    random_state : int or None, default=0
        Seed of every random stream ``(random_state, round, partition)``; None
        draws one (kept in ``model.random_state_``).
    verbose : int or bool, default=0
        What the fit shows.  0 (False): nothing.  1 (True): one progress bar
        on the log of the relative gap on its way to ``tol`` (stderr),
        updated in place with the current round, the relative gap and an
        ETA from the log-gap's rate, then one summary line on stdout:
        converged or not, rounds, epochs, the fit's wall-clock seconds,
        primal, dual and relative gap.  2 (and more): also one line per gap
        evaluation (round, epochs, seconds, primal, dual, gap) above the
        bar.  The bar is a notebook widget where ipywidgets is installed,
        text otherwise.
    callback : callable or None, default=None
        ``callback(record, state)`` after every gap evaluation, in memory and
        on a cluster; ``state`` is a :class:`~daskdca.driver.FitState` of the
        recorded round (``state.w``, ``state.alpha``, the method's states).
        A true return value (``True``, or a NumPy ``True`` such as
        ``record.gap <= 1e-3``) stops the fit at that state; None goes on.
    client : distributed.Client, str or None, default=None
        Run on this Dask cluster (a ``Client``, or a scheduler address such
        as ``"tcp://host:8786"``, connected for the fit).  X given as a store
        path/URL, a :class:`~daskdca.store.CSRStore` or a dask array always
        runs on a cluster: this client, else the default client (e.g.
        ``Client()`` in a notebook), else the process's own LocalCluster on
        127.0.0.1, started by the first such fit and reused by the later ones
        (closed at exit, or by ``daskdca.engine.close_embedded()``).
        In-memory X with a client is put in a seeded random row order and
        sent to the workers inside the tasks that hold its partitions (no
        file is shared with them).
    in_memory : bool or None, default=None
        Cluster only: keep partitions in worker memory (True) or re-read each
        block from the store every round (False, out of core).  None keeps
        them when each worker's share takes at most a quarter of its memory
        limit (loading holds about twice the share).
    checkpoint : str or None, default=None
        Cluster only: directory (or URL) for the zarr checkpoint of the
        method's states, written every ``checkpoint_every`` rounds and at the
        end.  Without it the states are copied through this process every
        ``checkpoint_every`` rounds into tasks that hold them (bounded task
        lineage, a lost state recomputed from the copy), and no file is
        written.
    checkpoint_every : int or None, default=None
        Rounds between checkpoints (10 when None).
    resume : bool, default=False
        Continue from the last complete checkpoint at ``checkpoint``.
    overwrite : bool, default=False
        Replace an old daskdca checkpoint at ``checkpoint`` with this fit's.
        A checkpoint folder holds only what daskdca wrote there: a folder
        with anything else in it is refused whatever this says, and only
        daskdca's own entries are ever removed.
    storage_options : dict or None, default=None
        The fsspec options of a store or Parquet URL.
    dual_init : array-like of shape (n_samples,) or (n_classes, n_samples), or None, default=None
        Warm start: the dual variables to start from, in the order of the
        rows of X (the order of ``dual_coef_``; for a store, its row order),
        labels inside the loss as in ``dual_coef_``.  Each must be feasible:
        ``y_i alpha_i`` in [0, 1] for hinge, smoothed hinge and logistic, in
        [0, inf) for squared hinge (``y_i`` in {-1, +1} after the label
        mapping above), any real for the squared losses (squared and squared
        epsilon-insensitive), ``alpha_i`` in [-1, 1] for epsilon-insensitive
        and in [-delta, delta] for Huber.  The fit starts at
        ``w = X^T dual_init / (lam n)``.  The box does not depend on ``lam``,
        so the ``dual_coef_`` of a fit at one ``lam`` (or ``C``) starts a fit
        at any other: see :func:`daskdca.path`.  A multinomial fit
        (``solver="multinomial"``) takes shape ``(n_classes, n_samples)``
        with each row's ``beta_i = e_{y_i} - dual_init[:, i] / s_i`` in the
        simplex (a multinomial fit's ``dual_coef_``).  Supported by the
        solvers whose ``capabilities.warm_start`` is True; None starts at
        ``alpha = 0`` (``w = 0``).
    sample_weight : array-like of shape (n_samples,), float or None, default=None
        Row weights ``s_i >= 0`` (a float: the same for every row): the fit
        solves ``min_w 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2``, whose
        dual box is ``s_i`` times the unweighted one (hinge:
        ``y_i alpha_i`` in ``[0, s_i]``); the certificate is that problem's.
        With ``lam = 1/(C n)`` this is LIBLINEAR's per-instance weights
        (``C_i = C s_i``), so an integer weight equals repeating the row.
        ``n`` stays the number of rows.  For in-memory X, with or without
        a client, and for a dask array or DataFrame X (the weights in
        memory or a dask array, one a row, staged with the rows); a store
        carries its own weights (``write_store(..., sample_weight=...)``)
        and refuses this argument.
        Supported by the solvers whose ``capabilities.sample_weight`` is
        True (``"sdca"``, ``"cocoa+"``, ``"minibatch_sdca"``, ``"newton"``,
        ``"multinomial"``, ``"multinomial_lbfgs"``, ``"multinomial_newton"``,
        ``"crammer_singer"``).
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes' losses, LIBLINEAR's way (the weights of
        :class:`~sklearn.svm.LinearSVC`, computed by scikit-learn's
        ``compute_class_weight``; ``"balanced"`` is ``n / (K n_c)``, counting
        ``sample_weight``).  With two classes each row's loss is multiplied by
        its class's weight (times its ``sample_weight``); with more, problem
        ``k`` multiplies the loss of class ``k``'s rows by its weight and
        leaves the other rows at their ``sample_weight``.  In-memory X, or a
        store of more than two classes (a two-class store needs its row
        weights stored: ``write_store(..., sample_weight=...)``).
    l1_ratio : float in [0, 1] or None, default=None
        The L1 share ``rho`` of the penalty, which becomes
        ``lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)`` (scikit-learn's elastic
        net with ``alpha = lam``; ``rho = 1`` is the pure L1 penalty
        ``lam ||w||_1``); the fit certifies that problem's gap.  None is 0,
        the problem above.  With ``solver="auto"`` the route is chosen as for
        ``rho = 0`` (:mod:`daskdca.routes`) and runs the proximal methods:
        serial SDCA or CoCoA+ with ``l1_ratio`` (Prox-SDCA) for ``rho < 1``,
        :class:`~daskdca.methods.l1.L1SDCA` for ``rho = 1`` (as
        :func:`daskdca.l1.fit_l1`).  A solver named by a string takes it when
        its method has an ``l1_ratio`` (``"sdca"``, ``"cocoa+"``,
        ``"minibatch_sdca"``, ``"spdc"``; ``rho < 1``); a solver object
        carries its own.  Two classes, or a regression loss (more classes:
        :class:`daskdca.SDCAClassifier` with ``penalty``, one problem after
        another).
    n_jobs : int or None, default=None
        Threads of a fit in this process: the partitions' steps run at
        once on up to ``n_jobs`` threads, and a step uses its share for
        its own (primal Newton's row chunks; serial SDCA's gap sums beside
        its sweep), with the same bits for every ``n_jobs``.  None: the
        cores this process may use (its CPU affinity, capped by
        ``NUMBA_NUM_THREADS`` where set, as joblib's process workers set
        it); -1 the same, ``-k`` that less ``k - 1``.  With
        ``solver="auto"`` on at least
        :data:`~daskdca.routes.THREADED_SWEEP_MIN_NNZ` stored values whose
        features overlap little (:func:`~daskdca.problem.feature_overlap`
        at most :data:`~daskdca.routes.THREADED_SWEEP_MAX_OVERLAP`),
        serial SDCA's sweep is split over the threads (``SDCA(threads=T,
        inner_aggregation="line_search")``): the bits are then the same
        for the same ``n_jobs`` only.  A cluster fit uses its workers'
        threads: ``n_jobs`` must be None there.

    Returns
    -------
    LinearModel
        On a cluster, ``dual_coef_`` is gathered once at the end, in the
        store's row order; ``coef_`` is in the source's feature order (the
        store's renumbering undone).  With more than two classes, ``coef_``
        and ``dual_coef_`` have a row per class and ``primal_``, ``dual_``,
        ``gap_`` an entry per class; the fit stops when every problem's gap
        meets ``tol``.  A multinomial fit has ``coef_`` of shape
        ``(n_classes, n_features)``, ``dual_coef_`` of shape
        ``(n_classes, n_samples)`` (``e_{y_i} - dual_coef_[:, i]`` is row
        ``i``'s distribution ``beta_i``) and one ``primal_``, ``dual_``, ``gap_``;
        so has a Crammer-Singer fit (there ``dual_coef_[:, i]`` sums to 0, its
        ``y_i`` entry in ``[0, s_i]``, the others ``<= 0``).

    Raises
    ------
    ValueError, TypeError
        Bad input or an unsupported combination; the message names the value
        and the fix.
    daskdca.store.StoreError
        A store block does not match its checksum or cannot be read.
    daskdca.ClusterLostError
        On a cluster: no worker for the Dask config key
        ``daskdca.no-workers-timeout`` (``NoWorkersError``, default 10
        minutes), or the scheduler was lost (``SchedulerLostError``); the
        message says what the last checkpoint holds (``resume=True``).
    """
    started = time.perf_counter()  # the summary's fit time: the whole call, setup and certificate included
    loss_obj = get_loss(loss)
    options = _check_fit_options(lam=lam, tol=tol, max_rounds=max_rounds, max_epochs=max_epochs, verbose=verbose,
                                 local_iters=local_iters, n_partitions=n_partitions, callback=callback,
                                 in_memory=in_memory, overwrite=overwrite, random_state=random_state)
    lam, tol, max_rounds, max_epochs = options.lam, options.tol, options.max_rounds, options.max_epochs
    verbose, local_iters, n_partitions, seed = options.verbose, options.local_iters, options.n_partitions, options.seed
    if isinstance(X, (str, os.PathLike)) and is_parquet_path(X):
        # Parquet: read lazily as a dask DataFrame (y names its label column), then fitted as one
        from daskdca.store.from_dask import _read_parquet

        X = _read_parquet(os.fspath(X), storage_options)
        storage_options = None
    _refuse_label_name(X, y)
    feature_names = None
    if _is_pandas_frame(X):  # in memory: its values and column names (a dask DataFrame is staged below)
        X, y, feature_names = pandas_input(X, y)
    on_cluster = client is not None or _is_cluster_input(X)
    n_threads = _check_n_jobs(n_jobs, on_cluster)
    auto = solver is None or (isinstance(solver, str) and solver == "auto")
    l1_ratio, named_options = _l1_ratio_options(l1_ratio, solver, auto)
    if auto and batch_size is not None:  # the routes' solvers take no batch: the same error as solver="sdca"
        _resolve_solver("sdca", batch_size=batch_size, local_iters=local_iters, on_cluster=on_cluster)
    if auto:
        method = provisional_method(rounds=on_cluster or (n_partitions or 1) > 1, l1_ratio=l1_ratio,
                                    local_iters=local_iters, on_cluster=on_cluster, loss_name=loss_obj.name)
    else:
        method = _resolve_solver(solver, batch_size=batch_size, local_iters=local_iters, on_cluster=on_cluster,
                                 loss_name=loss_obj.name, options=named_options)
    if n_partitions is None and not auto:
        n_partitions = _default_partitions(method, on_cluster)
    # on a cluster None means one partition per worker: several, as far as the check goes
    check_supported(method, loss_name=loss_obj.name, on_cluster=on_cluster,
                    n_partitions=2 if on_cluster and n_partitions is None else (n_partitions or 1),
                    sample_weight=sample_weight is not None or class_weight is not None)
    if dual_init is not None:
        _check_warm_start_supported(method, resume)
    if on_cluster:
        model = _fit_cluster(X, y, loss_obj=loss_obj, lam=lam, method=None if auto else method,
                             l1_ratio=l1_ratio, local_iters=local_iters, tol=tol, max_rounds=max_rounds,
                             max_epochs=max_epochs, n_partitions=n_partitions, seed=seed, verbose=verbose, callback=callback,
                             client=client, in_memory=in_memory, checkpoint=checkpoint,
                             checkpoint_every=checkpoint_every, resume=resume, overwrite=overwrite,
                             storage_options=storage_options, dual_init=dual_init, sample_weight=sample_weight,
                             class_weight=class_weight, feature_names=feature_names)
        return _summarised(verbose, started, model)
    for name, value, default in (("in_memory", in_memory, None), ("checkpoint", checkpoint, None),
                                 ("checkpoint_every", checkpoint_every, None), ("resume", resume, False),
                                 ("overwrite", overwrite, False), ("storage_options", storage_options, None)):
        if value is not default:
            raise ValueError(f"{name}={value!r} applies to cluster fits only; pass a store, a dask array "
                             "or client=... to fit on a Dask cluster.")
    if y is None:
        raise ValueError("y is required when X is an array: pass the labels as y=array of shape (n_samples,); "
                         "only a store (its path or a CSRStore) carries its own labels.")
    X = _check_X(X)
    n, d = X.shape
    if n == 0 or d == 0:
        raise ValueError(f"X is empty (shape {X.shape}); it needs at least one row and one feature.")
    y_signed, classes = _check_y(y, n, loss_obj)
    counts = column_nnz(X)  # the route's overlap and the driver's sparse ESO input
    if auto:
        route = choose_route(on_cluster=False, n=n, nnz=X.nnz, lam=lam, d=d, loss_name=loss_obj.name,
                             warm_start=dual_init is not None, sdca_options=_sdca_options(local_iters),
                             n_partitions=n_partitions, l1_ratio=l1_ratio, n_threads=n_threads,
                             column_nnz=counts, max_epochs=max_epochs)
        method = route_method(route.solver, route.options, local_iters=local_iters, on_cluster=False,
                              loss_name=loss_obj.name)
        n_partitions = _default_partitions(method, False) if n_partitions is None else n_partitions
    else:
        route = explicit_route(method.name, on_cluster=False, n_partitions=n_partitions)
    route = with_threads(route, n_threads)
    if n_partitions > n:
        raise ValueError(f"n_partitions={n_partitions} is more than the {n} rows of X; use at most {n}.")
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, n)
    sample_weight, problems = _weights_and_problems(class_weight, y_signed, classes, sample_weight)
    method_run, dual_init = _problems_and_start(method, problems, dual_init, y_signed, loss_obj, classes,
                                                sample_weight, n_partitions, tol)
    result = fit_in_process(method_run, X, y_signed, loss=_driver_loss(method, problems, loss_obj), lam=lam,
                            n_partitions=n_partitions,
                            random_state=seed, tol=tol, max_rounds=max_rounds, max_epochs=max_epochs,
                            callback=callback, verbose=verbose, dual_init=dual_init, sample_weight=sample_weight,
                            problems=problems, n_threads=n_threads, column_counts=counts)
    _warn_not_converged(result, tol, max_epochs, max_rounds)
    return _summarised(verbose, started, LinearModel(
        loss=loss_obj, lam=lam, solver=method, classes=classes, result=result, random_state=seed, n_features=d,
        coef=result.w, route=route, feature_names=feature_names))


def _summary_line(model, seconds):
    """One line on a fit: converged or not, rounds, epochs, ``seconds``, primal, dual and relative gap.

    ``daskdca.fit`` prints it at the end of a fit with ``verbose >= 1``
    (``seconds``: the fit's wall-clock time), and ``daskdca fit --quiet``
    prints it instead.  For a one-vs-rest fit: the sums of the problems'
    primals and duals, and the largest relative gap.
    """
    rel = relative_gap(model.primal_, model.dual_)
    primal, dual = float(np.sum(model.primal_)), float(np.sum(model.dual_))
    many = f" (sums over {np.size(model.primal_)} one-vs-rest problems, the largest gap)" \
        if np.ndim(model.primal_) else ""
    return (f"{'converged' if model.converged_ else 'NOT converged'} after {model.n_rounds_} rounds "
            f"({model.n_epochs_:.1f} epochs, {seconds:.2f} s): primal {primal:.10g}  dual {dual:.10g}  "
            f"relative gap {rel:.2e}{many}")


def _summarised(verbose, started, model):
    """``model``, after its summary line on stdout when ``verbose >= 1`` (the fit's time since ``started``)."""
    if verbose:
        print(_summary_line(model, time.perf_counter() - started), flush=True)
    return model


def _problems_and_start(method, problems, dual_init, y_checked, loss_obj, classes, sample_weight, n_partitions,
                        tol):
    """The method to run (one-vs-rest around ``method`` for more than two classes, each problem stopping at
    ``tol``) and the checked warm start."""
    if problems is not None:
        check_supported(method, loss_name=loss_obj.name, on_cluster=False, n_partitions=n_partitions,
                        multi_class=not _fits_one_problem(method))
        if dual_init is not None:
            dual_init = _check_dual_init_classes(method, dual_init, y_checked, loss_obj, classes, sample_weight,
                                                 problems)
        return _run_method(method, problems, tol), dual_init
    if dual_init is not None:
        dual_init = _check_dual_init(dual_init, y_checked, loss_obj, classes, sample_weight)
    return method, dual_init


def _check_dual_init_classes(method, dual_init, class_index, loss_obj, classes, weight, problems):
    """``dual_init`` of a fit of ``K > 2`` classes, checked: the ``K`` duals of every row of the one multinomial
    problem (:func:`daskdca.methods.multinomial.check_dual_init`, row ``i`` weighted by ``weight`` times its
    class's weight), else a row of duals per one-vs-rest problem."""
    if not isinstance(method, MultinomialSDCA):
        return _check_dual_init_ovr(dual_init, class_index, loss_obj, classes, weight, problems)
    index = np.asarray(class_index).astype(np.intp)
    factor = np.asarray(problems.positive_weights, dtype=np.float64)[index]
    if weight is not None or np.any(factor != 1.0):
        weight = (1.0 if weight is None else np.asarray(weight, dtype=np.float64)) * factor
    return _check_dual_init_multinomial(dual_init, index, classes, weight)


def _fits_one_problem(method):
    """Whether ``method`` fits ``K > 2`` classes as one problem of a vector loss, its ``multiclass_loss``
    (:class:`~daskdca.methods.MultinomialSDCA`, :class:`~daskdca.methods.CrammerSingerSVM`), rather than
    the K one-vs-rest problems."""
    return getattr(method, "multiclass_loss", None) is not None


def _run_method(method, problems, tol):
    """The method the drivers run: ``method`` itself for one problem or a fit of one multi-class problem
    (:func:`_fits_one_problem`, on ``K > 2`` classes), else the K one-vs-rest problems around it, each of
    which stops once its gap meets ``tol``."""
    if problems is None or _fits_one_problem(method):
        return method
    return OneVsRestMethod(method, problems.n_classes, tol=float(tol))


def _driver_loss(method, problems, loss_obj):
    """The loss the drivers step and certify with: the method's ``multiclass_loss`` of the K classes for a
    fit of one multi-class problem (:class:`~daskdca.losses.Softmax` for a multinomial fit,
    :class:`~daskdca.losses.CrammerSinger` for a Crammer-Singer one), else ``loss_obj``."""
    if problems is not None and _fits_one_problem(method):
        return method.multiclass_loss(problems.n_classes)
    return loss_obj


def _check_checkpoint_path(checkpoint):
    """Refuse, before any work, a ``checkpoint`` that is not a path or URL, or a local path where no folder can be
    made (under a file, or in a folder this process cannot write); the engine makes the folder later."""
    if checkpoint is None:
        return
    if not isinstance(checkpoint, (str, os.PathLike)) or isinstance(os.fspath(checkpoint), bytes):
        raise TypeError(f"checkpoint must be a folder path or URL (str or os.PathLike), got {checkpoint!r}.")
    path = os.fspath(checkpoint)
    if not path:
        raise ValueError("checkpoint='' names no folder; pass a folder path or URL such as 'fit.ckpt'.")
    if "://" in path:
        return
    ancestor = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise ValueError(f"checkpoint={path!r} lies under {ancestor!r}, a file, where no folder can be made; pass a "
                         "path in a folder.")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"checkpoint={path!r}: the folder {ancestor!r} is not writable by this process; pass a "
                         "path in a folder you can write.")


def _fit_cluster(X, y, *, loss_obj, lam, method, l1_ratio, local_iters, tol, max_rounds, max_epochs, n_partitions, seed,
                 verbose, callback, client, in_memory, checkpoint, checkpoint_every, resume, overwrite,
                 storage_options, dual_init, sample_weight, class_weight, feature_names):
    """A fit with a cluster: ``method`` None is ``solver="auto"``, which picks the route here, once the data's
    size and the workers are known."""
    from daskdca import engine

    if checkpoint_every is None:
        checkpoint_every = engine.DEFAULT_CHECKPOINT_EVERY
    checkpoint_every = _check_int("checkpoint_every", checkpoint_every, low=1, hint="use e.g. 10")
    _check_checkpoint_path(checkpoint)
    if resume and checkpoint is None:
        raise ValueError("resume=True needs checkpoint=PATH (the checkpoint of the interrupted fit).")
    if overwrite and checkpoint is None:
        raise ValueError("overwrite=True replaces an old checkpoint, so it needs checkpoint=PATH; drop overwrite.")
    if overwrite and resume:
        raise ValueError("overwrite=True replaces the checkpoint that resume=True would continue; drop one of them.")
    if y is not None and isinstance(X, (str, os.PathLike, CSRStore)):
        raise ValueError("y must be None for a store: its labels are stored with the data.")
    if sample_weight is not None and isinstance(X, (str, os.PathLike, CSRStore)):
        raise ValueError("sample_weight must be None for a store: a store carries its own row weights "
                         "(daskdca.write_store(url, X, y, sample_weight=...)), which every fit on it uses.")
    # what only rounds honour: the one-worker route runs the whole fit as one task
    needs_rounds = [name for name, given in (("checkpoint", checkpoint is not None), ("callback", callback is not None),
                                             ("in_memory=False", in_memory is False)) if given]
    with engine.cluster_client(client) as active:
        workers = Workers(*engine.worker_resources(active))
        job = _ClusterJob(loss_obj=loss_obj, lam=lam, method=method, local_iters=local_iters, seed=seed,
                          workers=workers, needs_rounds=needs_rounds, n_partitions=n_partitions, l1_ratio=l1_ratio)
        job.verbose = verbose
        job.callback, job.checkpoint_every = callback, checkpoint_every
        # a resumed fit runs the method its checkpoint recorded: the same threads a partition
        job.rounds_threads = engine.recorded_threads(checkpoint) if resume else None
        # and its partitions, which in-memory arrays otherwise take one per worker now
        job.recorded_partitions = engine.recorded_partitions(checkpoint) if resume else None
        job.feature_names = feature_names
        job.max_epochs = max_epochs  # the route keeps a round's passes within it
        fit_args = dict(tol=tol, max_rounds=max_rounds, max_epochs=max_epochs, random_state=seed)
        try:  # the staging folder goes whatever happens
            if not isinstance(X, (str, os.PathLike, CSRStore)) and not hasattr(X, "chunks") and not _is_dask_frame(X):
                model = _fit_arrays_on_cluster(job, X, y, active, fit_args, dual_init=dual_init,
                                               sample_weight=sample_weight, class_weight=class_weight)
                if model is not None:
                    return model
            if job.staged is not None:
                store = job.staged
            elif isinstance(X, CSRStore):
                store = X
            elif isinstance(X, (str, os.PathLike)):
                store = open_store(X, storage_options)
            else:
                store = job.stage_dask(X, y, sample_weight)
            return _fit_store_on_cluster(job, store, active, fit_args, verbose=verbose, callback=callback,
                                         in_memory=in_memory, checkpoint=checkpoint,
                                         checkpoint_every=checkpoint_every, resume=resume, overwrite=overwrite,
                                         dual_init=dual_init, class_weight=class_weight)
        finally:
            job.cleanup()


def _show_records(result, verbose, tol):
    """The one-worker route's gap records, shown as the rounds route shows them live (``verbose`` > 0), when
    the task returns: the whole fit ran in one task, so there was nothing to show before."""
    if not verbose:
        return
    from daskdca.driver import _Progress

    progress = _Progress(verbose, tol)
    try:
        for record in result.history:
            progress.update(record)
    finally:
        progress.close()


class _ClusterJob:
    """What a cluster fit carries between its steps: the route's inputs, the staging folder, the arrays' own
    labels, rows order and problems."""

    def __init__(self, *, loss_obj, lam, method, local_iters, seed, workers, needs_rounds, n_partitions, l1_ratio):
        self.loss_obj, self.lam, self.method, self.local_iters = loss_obj, lam, method, local_iters
        self.l1_ratio = l1_ratio  # the L1 share solver="auto" solves with
        self.seed, self.workers, self.needs_rounds, self.n_partitions = seed, workers, needs_rounds, n_partitions
        self.tmpdir = None
        self.staged = None  # the staging store of in-memory arrays that go to rounds
        self.dask_staged = False  # the store is this fit's staging of dask input (messages name X and y)
        self.label_dtype = None  # an integer dtype of dask input's labels, which the staged store holds as float64
        self.route_ = None  # the route chosen for them
        self.verbose = 0
        self.callback = self.checkpoint_every = None
        self.recorded_partitions = None
        self.array_classes = self.problems = self.row_order = self.dual_init = None
        self.feature_names = None  # a DataFrame's column names
        self.store_partitions = n_partitions
        self.rounds_threads = None  # the threads a partition's sweep takes in rounds (None: the workers')
        self.max_epochs = None  # the fit's budget in passes

    def route(self, *, n, nnz, d, warm_start, size=None, column_counts=None):
        """The route (and ``self.method``): the user's solver, or the one ``solver="auto"`` picks
        (``column_counts``: the rows holding each feature, :func:`~daskdca.problem.column_nnz`)."""
        if self.method is not None:
            return explicit_route(self.method.name, on_cluster=True, n_partitions=self.n_partitions)
        route = choose_route(on_cluster=True, n=n, nnz=nnz, lam=self.lam, d=d, loss_name=self.loss_obj.name,
                             warm_start=warm_start, sdca_options=_sdca_options(self.local_iters),
                             workers=self.workers, size=size,
                             needs_rounds=self.needs_rounds, n_partitions=self.n_partitions, l1_ratio=self.l1_ratio,
                             column_nnz=column_counts, rounds_threads=self.rounds_threads,
                             max_epochs=self.max_epochs)
        self.method = route_method(route.solver, route.options, local_iters=self.local_iters, on_cluster=True,
                                   loss_name=self.loss_obj.name)
        return route

    def staging_folder(self):
        import tempfile

        if self.tmpdir is None:
            self.tmpdir = tempfile.mkdtemp(prefix="daskdca-data-")
        return self.tmpdir

    def stage_dask(self, X, y, sample_weight):
        """A dask array's chunks (a dask DataFrame's partitions), through this process, into a staging store
        the workers then read; labels that are not numbers are stored as codes with their names."""
        from daskdca.store.write import prepare_input, write_prepared

        if y is None:
            raise ValueError("y is required when X is an array or a DataFrame (for a DataFrame, the labels or the "
                             "name of its label column, y='label'); labels come from the store only for stores.")
        data = prepare_input(X, y)
        if data.feature_names is not None:
            self.feature_names = data.feature_names
        if any(math.isnan(size) for size in data.X.chunks[0]):
            raise ValueError("X must be a dask array with known chunk sizes; call X.compute_chunk_sizes() (or "
                             "make it with a DataFrame's to_dask_array(lengths=True)).")
        rows = int(max(data.X.chunks[0]))  # a block per dask chunk (regular chunks); partitions are runs of them
        self.dask_staged = True
        # the store holds numbers as float64: integer labels get their own dtype back on the model
        label_dtype = getattr(data.y, "dtype", None)
        self.label_dtype = label_dtype if label_dtype is not None and label_dtype.kind in "iu" else None
        return write_prepared(os.path.join(self.staging_folder(), "data.zarr"), data, block_rows=rows,
                              compression="none", float32=False, shuffle=False, seed=0, renumber_features=False,
                              storage_options={}, source="daskdca.fit input", overwrite=False,
                              sample_weight=sample_weight)

    def cleanup(self):
        import shutil

        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None


def _fit_arrays_on_cluster(job, X, y, client, fit_args, *, dual_init, sample_weight, class_weight):
    """In-memory arrays with a client: the whole fit on one worker (a LinearModel), or None after staging them
    for rounds (``job.staged``: the store, rows in the seeded partition order)."""
    from daskdca import engine
    from daskdca.store.write import write_blocks_of

    if y is None:
        raise ValueError("y is required when X is an array: pass the labels as y=array of shape (n_samples,); "
                         "only a store (its path or a CSRStore) carries its own labels.")
    if "in_memory=False" in job.needs_rounds:  # refused before any staging (the engine refuses it too)
        raise ValueError("in_memory=False needs the data in a store every worker can read; in-memory arrays go "
                         "to the workers' memory. Write them with daskdca.write_store to a shared path and fit "
                         "that store out of core.")
    X = _check_X(X)
    n, d = X.shape
    # labels are mapped here (any two values, sorted, the second is +1) and the store gets -1/+1; the
    # original classes are restored on the model
    y, job.array_classes = _check_y(y, n, job.loss_obj)
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, n)
    sample_weight, job.problems = _weights_and_problems(class_weight, y, job.array_classes, sample_weight)
    if dual_init is not None and job.problems is not None:
        dual_init = _check_dual_init_classes(job.method, dual_init, y, job.loss_obj, job.array_classes, sample_weight,
                                             job.problems)
    elif dual_init is not None:
        dual_init = _check_dual_init(dual_init, y, job.loss_obj, job.array_classes, sample_weight)
    counts = column_nnz(X)
    route = job.route(n=n, nnz=X.nnz, d=d, warm_start=dual_init is not None,
                      size=data_bytes(n, X.nnz, X.dtype.itemsize, X.indices.dtype.itemsize), column_counts=counts)
    if route.name == "one_worker":
        from daskdca.driver import in_process_partitions
        from daskdca.methods.base import DataInfo

        method_run = _run_method(job.method, job.problems, fit_args["tol"])
        [part], _ = in_process_partitions(X, y, 1, job.seed, sample_weight, job.problems)
        info = DataInfo(n=n, d=d, partition_sizes=(n,), loss=_driver_loss(job.method, job.problems, job.loss_obj),
                        lam=job.lam,
                        max_column_nnz=int(counts.max(initial=0)), nnz=int(X.nnz))
        result = engine.fit_on_one_worker(part, info, client=client, method=method_run, dual_init=dual_init,
                                          ship=True, **fit_args)
        _show_records(result, job.verbose, fit_args["tol"])
        _warn_not_converged(result, fit_args["tol"], fit_args["max_epochs"], fit_args["max_rounds"])
        return LinearModel(loss=job.loss_obj, lam=job.lam, solver=job.method, classes=job.array_classes,
                           result=result, random_state=job.seed, n_features=d, coef=result.w, route=route,
                           feature_names=job.feature_names)
    parts = next(k for k in (job.n_partitions, job.recorded_partitions, max(1, job.workers.n_workers)) if k is not None)
    if parts > n:
        raise ValueError(f"n_partitions={parts} is more than the {n} rows of X; use at most {n}.")
    if parts > 1:  # rows go to partitions in a seeded random order, as in memory
        job.row_order = random_row_order(n, job.seed)
        X, y = X[job.row_order], np.asarray(y)[job.row_order]
        if sample_weight is not None:
            sample_weight = sample_weight[job.row_order]
    job.dual_init = dual_init
    job.store_partitions = parts
    if "checkpoint" not in job.needs_rounds:
        # no checkpoint to fingerprint the data with: the partitions go to the workers straight from here, the
        # rows a staged store would have held (the same bits), without writing and reading that store
        return _fit_held_arrays(job, X, y, sample_weight, counts, parts, route, client, fit_args)
    # the rows are already in the in-process partition order (above): one block per partition, of its size
    store = write_blocks_of(os.path.join(job.staging_folder(), "data.zarr"), X, y, even_sizes(n, parts),
                            sample_weight=sample_weight, source="daskdca.fit input")
    job.staged = store
    job.route_ = route
    return None


def _fit_held_arrays(job, X, y, sample_weight, counts, parts, route, client, fit_args):
    """Rounds over in-memory arrays (rows already in the partition order) held on the workers: ``parts`` runs of
    rows of :func:`~daskdca.partitions.even_sizes`, as in this process, each sent once to a worker
    (:func:`daskdca.engine.fit_partitions_on_cluster`); ``counts`` is X's :func:`~daskdca.problem.column_nnz`
    (the route's, which the rows' order does not change).  Returns the LinearModel."""
    import scipy.sparse as sp

    from daskdca import engine
    from daskdca.methods.base import DataInfo
    from daskdca.partitions import MemoryPartition, OneVsRestPartition, rows_from_csr

    n, d = X.shape
    offsets = np.concatenate(([0], np.cumsum(even_sizes(n, parts))))  # the in-process partitions' rows
    method = job.method
    check_supported(method, loss_name=job.loss_obj.name, on_cluster=True, n_partitions=2,
                    sample_weight=sample_weight is not None,
                    multi_class=job.problems is not None and not _fits_one_problem(method))
    X = sp.csr_matrix(X)
    partitions = []
    for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        first, last = X.indptr[lo], X.indptr[hi]  # rows lo..hi as views of X's arrays (a row slice copies them)
        rows = sp.csr_matrix((X.data[first:last], X.indices[first:last], X.indptr[lo:hi + 1] - first),
                             shape=(hi - lo, d))
        part = MemoryPartition(rows_from_csr(rows, y[lo:hi], None if sample_weight is None else sample_weight[lo:hi]),
                               np.array([0, hi - lo], dtype=np.int64))
        partitions.append(part if job.problems is None else OneVsRestPartition(part, job.problems))
    fit_loss = _driver_loss(method, job.problems, job.loss_obj)
    info = DataInfo(n=n, d=d, partition_sizes=tuple(p.n_rows for p in partitions), loss=fit_loss, lam=job.lam,
                    max_column_nnz=int(counts.max(initial=0)), nnz=int(X.nnz))
    result = engine.fit_partitions_on_cluster(partitions, info, client=client,
                                              method=_run_method(method, job.problems, fit_args["tol"]),
                                              verbose=job.verbose, callback=job.callback,
                                              dual_init=job.dual_init, checkpoint_every=job.checkpoint_every,
                                              row_order=job.row_order, **fit_args)
    _warn_not_converged(result, fit_args["tol"], fit_args["max_epochs"], fit_args["max_rounds"])
    return LinearModel(loss=job.loss_obj, lam=job.lam, solver=method, classes=job.array_classes, result=result,
                       random_state=job.seed, n_features=d, coef=result.w,
                       route=route._replace(n_partitions=len(partitions)), feature_names=job.feature_names)


def _fit_store_on_cluster(job, store, client, fit_args, *, verbose, callback, in_memory, checkpoint,
                          checkpoint_every, resume, overwrite, dual_init, class_weight):
    """A store (given, or staged from arrays) on the cluster: one worker or rounds; returns the LinearModel."""
    from daskdca import engine
    from daskdca.methods.base import DataInfo
    from daskdca.partitions import OneVsRestPartition, StorePartition

    staged_arrays = job.staged is not None  # in-memory arrays, staged where only this process can read them
    if job.staged is None and job.store_partitions is not None and job.store_partitions > store.n_blocks:
        if job.dask_staged:
            raise ValueError(
                f"n_partitions={job.store_partitions} but X has only {store.n_blocks} row chunks (a partition is a "
                f"run of whole chunks); use n_partitions <= {store.n_blocks} or rechunk X: "
                f"X.rechunk({{0: {-(-store.n // job.store_partitions)}}}).")
        raise ValueError(
            f"n_partitions={job.store_partitions} but the store has only {store.n_blocks} blocks (a partition is "
            f"a run of whole blocks); use n_partitions <= {store.n_blocks} or convert again with "
            f"block_rows={-(-store.n // job.store_partitions)}.")
    classes, positive = _store_labels(store, job.loss_obj, where="y" if job.dask_staged else None)
    if classes is not None and job.label_dtype is not None and classes.dtype.kind == "f":
        classes = classes.astype(job.label_dtype)  # whole numbers, exact in float64 up to 2**53
    multi = classes is not None and classes.shape[0] > 2
    problems = job.problems
    if staged_arrays:
        classes = job.array_classes
        dual_init = job.dual_init
    else:
        if multi or dual_init is not None or class_weight is not None:
            y_stored = np.asarray(store.group["y"][:])  # the stored labels, in the store's row order
            weight = np.asarray(store.group["sample_weight"][:]) if store.weighted else None
        if multi:
            stored = store.label_values  # the labels as y stores them (codes when the labels are names)
            class_index = np.searchsorted(stored, y_stored)
            problems = _problems(class_weights(class_weight, classes[class_index], classes, weight),
                                 classes.shape[0], labels=stored)
            if dual_init is not None:
                dual_init = _check_dual_init_classes(job.method, dual_init, class_index, job.loss_obj, classes,
                                                     weight, problems)
        else:
            if class_weight is not None:
                raise ValueError(
                    f"class_weight={class_weight!r} with a two-class store needs row weights, which a store "
                    "carries itself: write them with daskdca.write_store(url, X, y, sample_weight=...) (e.g. "
                    "sklearn's compute_sample_weight(class_weight, y)), or fit in-memory arrays.")
            if dual_init is not None:
                signed = (y_stored.astype(np.float64) if positive is None
                          else np.where(y_stored == positive, 1.0, -1.0))
                dual_init = _check_dual_init(dual_init, signed, job.loss_obj, classes, weight)
    if job.staged is not None:
        route = job.route_
    else:
        size = data_bytes(store.n, store.nnz, store.group["data"].dtype.itemsize,
                          store.group["indices"].dtype.itemsize)
        route = job.route(n=store.n, nnz=store.nnz, d=store.d, warm_start=dual_init is not None, size=size,
                          column_counts=store.column_nnz)
    method = job.method
    rounds = route.name == "rounds"  # the one-worker route runs the in-process driver, on one partition
    check_supported(method, loss_name=job.loss_obj.name, on_cluster=rounds, n_partitions=2 if rounds else 1,
                    sample_weight=store.weighted or class_weight is not None,
                    multi_class=multi and not _fits_one_problem(method))
    method_run = _run_method(method, problems, fit_args["tol"])
    fit_loss = _driver_loss(method, problems, job.loss_obj)
    if route.name == "one_worker":
        source = StorePartition(store, 0, store.n_blocks, positive)
        if problems is not None:
            source = OneVsRestPartition(source, problems)
        info = DataInfo(n=store.n, d=store.d, partition_sizes=(store.n,), loss=fit_loss, lam=job.lam,
                        max_column_nnz=int(store.column_nnz.max(initial=0)), nnz=int(store.nnz))
        result = engine.fit_on_one_worker(source, info, client=client, method=method_run, dual_init=dual_init,
                                          **fit_args)
        _show_records(result, verbose, fit_args["tol"])
    else:
        n_partitions = job.store_partitions or engine.default_partitions(
            store, job.workers.n_workers, checkpoint if resume else None)
        if not staged_arrays:
            _warn_if_partitions_differ(store, positive, n_partitions, dask_input=job.dask_staged)
        result = engine.fit_on_cluster(
            store, client=client, method=method_run, loss=fit_loss, lam=job.lam, positive_label=positive,
            n_partitions=n_partitions, in_memory=in_memory, checkpoint=checkpoint,
            checkpoint_every=checkpoint_every, resume=resume, checkpoint_overwrite=overwrite, verbose=verbose,
            callback=callback, dual_init=dual_init, store_is_local=staged_arrays, problems=problems,
            row_order=job.row_order, **fit_args)
        route = route._replace(n_partitions=n_partitions)
        if job.store_partitions is None and n_partitions < max(1, job.workers.n_workers):
            # the reason counted one partition per worker; a partition is a run of whole blocks (chunks)
            blocks = f"X has {store.n_blocks} row chunk(s)" if job.dask_staged else \
                f"the store has {store.n_blocks} block(s)"
            route = route._replace(reason=f"{route.reason}; {n_partitions} ran, as {blocks}")
    _warn_not_converged(result, fit_args["tol"], fit_args["max_epochs"], fit_args["max_rounds"])
    coef = result.w
    if store.feature_permutation is not None:
        coef = np.empty_like(result.w)
        coef[..., store.feature_permutation] = result.w
    names = job.feature_names if job.feature_names is not None else store.feature_names
    return LinearModel(loss=job.loss_obj, lam=job.lam, solver=method, classes=classes, result=result,
                       random_state=job.seed, n_features=store.d, coef=coef, route=route, feature_names=names)


# An unshuffled store whose partitions' positive fractions differ by more than
# this warns: CoCoA+ then converges far slower (benchmarks/RESULTS.md, "Method protocol": a file sorted by
# label took 159 s against 0.17 s for serial SDCA).
LABEL_FRACTION_SPREAD = 0.1
# ... and by more than this many binomial standard errors of the smallest partition's fraction (a spread that
# random rows reach by chance in about 1 of 10,000 pairs of partitions: two fractions' difference has twice the
# variance, so 5.5 standard errors of one are 3.9 of the difference).
CHANCE_SPREAD = 5.5


def _warn_if_partitions_differ(store, positive, n_partitions, dask_input=False):
    """Warn when an unshuffled store's partitions (with ``dask_input``, the runs of X's row chunks) see different
    label proportions."""
    if positive is None or store.shuffled:
        return
    ranges = store_partition_ranges(store.n_blocks, n_partitions or store.n_blocks)
    if len(ranges) < 2:
        return
    y = np.asarray(store.group["y"][:])  # labels only, for this check
    offsets = store.block_row_offsets
    fractions = [float(np.mean(y[offsets[a]:offsets[b]] == positive)) for a, b in ranges]
    # small partitions of shuffled rows spread by chance: a fraction of m random rows has the binomial
    # standard error sqrt(p (1 - p) / m); a spread within CHANCE_SPREAD of them says nothing
    p, fewest = float(np.mean(y == positive)), min(int(offsets[b] - offsets[a]) for a, b in ranges)
    spread = max(LABEL_FRACTION_SPREAD, CHANCE_SPREAD * math.sqrt(p * (1 - p) / max(fewest, 1)))
    if max(fractions) - min(fractions) <= spread:
        return
    if dask_input:
        warn_at_caller(
            f"The {len(ranges)} partitions of X (runs of its row chunks, in their order) have positive-label "
            f"fractions from {min(fractions):.2f} to {max(fractions):.2f}; distributed solvers converge far "
            "slower on such partitions. Shuffle the rows before the fit (for a dask DataFrame, "
            "df.shuffle(on=...) or a random column to sort by), or fit the arrays in memory, whose rows go to "
            "partitions in a seeded random order.", UserWarning)
    else:
        warn_at_caller(
            f"The store {store.url!r} was not shuffled and its {len(ranges)} partitions have positive-label "
            f"fractions from {min(fractions):.2f} to {max(fractions):.2f}; distributed solvers converge far "
            "slower on such partitions. Rewrite it shuffled: daskdca.rewrite_store(store, NEW_URL, shuffle=True) "
            "or `daskdca convert FILE NEW_URL` (which shuffles by default).", UserWarning)
