"""scikit-learn estimators on top of :func:`daskdca.fit`.

:class:`SDCAClassifier` and :class:`SDCARegressor` own the parameters and the
fitted attributes; every optimisation goes through the public
``daskdca.fit(X, y, loss=..., lam=..., ...)``, one call per binary problem.
``C`` has LIBLINEAR's meaning, ``lam = 1 / (C n)``, so grids written for
:class:`~sklearn.svm.LinearSVC` and :class:`~sklearn.linear_model.LogisticRegression`
carry over unchanged.

``fit_intercept=True`` is the default, as in those estimators and in
:class:`~sklearn.linear_model.Ridge`.  The intercept is LIBLINEAR's: a
synthetic constant feature of value ``intercept_scaling`` (appended to a
copy of X; the caller's X is never modified) whose weight ``w_b`` is
regularised like the others, with ``intercept_ = intercept_scaling * w_b``.  ``daskdca.fit`` itself has no
intercept; ``fit_intercept=False`` solves exactly its problem.  :class:`SDCAClassifier` (two classes) and
:class:`SDCARegressor` also take ``fit_intercept="unregularized"``: the intercept left out of the penalty, as in
``Ridge`` and ``LogisticRegression(solver="lbfgs")``, solved by primal Newton and certified by
:func:`daskdca.intercept.fit_unregularized_intercept`.
"""

from __future__ import annotations

import inspect
import os
import textwrap
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.model_selection import check_cv
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from daskdca import api
from daskdca.driver import HistoryRecord
from daskdca.intercept import fit_unregularized_intercept
from daskdca.losses import EpsilonInsensitive, Huber, SquaredEpsilonInsensitive, get_loss
from daskdca.prediction import Predictor, is_store, labels_in_memory, proba_kind, proba_refusal
from daskdca.prediction import output as prediction_output
from daskdca.prediction import score as prediction_score
from daskdca.problem import canonical_csr, check_sample_weight, with_intercept_column
from daskdca.regpath import _check_Cs, path
from daskdca.routes import Route
from daskdca.store.frames import _check_numeric_columns, _is_dask_frame, _is_pandas_frame, _refuse_missing_labels
from daskdca.user_warnings import warn_at_caller
from daskdca.validation import _check_weighted_rows, _is_dask_array, _scipy_if_pydata, class_weights

__all__ = ["SDCAClassifier", "SDCAClassifierCV", "SDCARegressor"]

_SOLVERS = ("auto", "sdca", "minibatch_sdca", "cocoa+")

# daskdca.fit (and daskdca.path) warn on their own when they run out of rounds; the estimators
# warn once per fit instead, in terms of max_iter and the gap per class.
_FIT_WARNING = rf"{api.FIT_WARNING}|daskdca\.path reached "


# The parameter entries the estimators share, written once (numpydoc, the name at column 0): each class
# docstring holds a line ``{name}`` where the entry goes, and _with_shared_parameters fills it in when the
# class is made, so the rendered docstrings (help(), Sphinx) are plain numpydoc.
_SHARED_PARAMETERS = {
    # the classifiers' loss (SDCAClassifier, SDCAClassifierCV); SDCARegressor documents its own losses
    "classifier_loss": """loss : {"hinge", "squared_hinge", "smoothed_hinge", "logistic", "log_loss"}, default="hinge"
    ``phi(a)`` with ``a = y x.w``: ``max(0, 1 - a)``; ``max(0, 1 - a)^2``
    (LIBLINEAR's L2-loss SVM); the smoothed hinge with ``gamma = 1``
    (``0`` for ``a >= 1``, ``1/2 - a`` for ``a <= 0``, ``(1 - a)^2 / 2``
    between); ``log(1 + exp(-a))``.""",
    "l1_ratio": """l1_ratio : float in [0, 1) or None, default=None
    The L1 share of the penalty with ``penalty="elasticnet"`` (required
    then); must be None otherwise (``penalty="l1"`` included).""",
    "solver": """solver : {"auto", "sdca", "minibatch_sdca", "cocoa+"}, method object or None, default="auto"
    Passed to :func:`daskdca.fit`: ``"auto"`` (or None) picks the route
    and the method and says why in ``route_``: in this process, serial
    SDCA (inside Catalyst's loop for small ``lam n``) or, for a fit that
    starts cold with few features, a smooth loss and small ``lam n``, the
    primal Newton method; with a ``client``, the whole fit as one task on
    one worker when the data fits there, else CoCoA+ (or Newton) rounds.
    A name or a method object such as
    ``daskdca.SDCA(acceleration="catalyst")`` is run as given; ``"sdca"``
    is serial and runs in this process only (no ``client``).""",
    "tol": """tol : float, default=1e-6
    Relative duality gap at which each fit stops: ``P - D <= tol * |P|``.""",
    "intercept_scaling": """intercept_scaling : float, default=1.0
    ``s`` above: a larger value regularises the intercept less.  Must be
    > 0; unused when ``fit_intercept=False``.""",
    "verbose": """verbose : int or bool, default=0
    What each fit shows (:func:`daskdca.fit`'s ``verbose``).  0 (False):
    nothing.  1 (True): one progress bar on the gap, with an ETA, then one
    summary line.  2: also one line per gap record.""",
    "penalty": """penalty : {"l2", "elasticnet", "l1"}, default="l2"
    The regularisation of ``w`` (the weight of the synthetic intercept
    feature included, see ``fit_intercept``).  ``"l2"``: ``lam/2 ||w||^2``,
    the problem above.  ``"elasticnet"``: ``lam ((1 - l1_ratio)/2 ||w||^2 +
    l1_ratio ||w||_1)``, scikit-learn's elastic net (``alpha = lam`` in
    ``ElasticNet`` and the ``SGD`` estimators, ``C = 1/(lam n)`` in
    ``LogisticRegression``, up to their unregularised intercepts), solved
    by proximal SDCA and certified as that problem, so ``coef_`` can hold
    exact zeros: with ``solver="auto"`` on the route :func:`daskdca.fit`
    chooses for ``"l2"`` (serial in this process, the whole fit on one
    worker where the data fits one given a ``client``, else CoCoA+ rounds;
    CoCoA+ rounds on ``n_partitions`` > 1); serial, in this process and on
    one partition, with ``"sdca"``; CoCoA+ rounds with ``"cocoa+"``;
    proximal mini-batch SDCA with ``"minibatch_sdca"``; a solver object
    raises (give a ``daskdca.SDCA``, ``daskdca.CoCoAPlus`` or
    ``daskdca.MinibatchSDCA`` object its own ``l1_ratio`` instead, with
    ``penalty="l2"``).  ``"l1"``:
    ``lam ||w||_1`` alone, ``LogisticRegression(penalty="l1",
    solver="liblinear")`` and ``LinearSVC(penalty="l1", dual=False)``, solved
    by :class:`daskdca.methods.l1.L1SDCA` (proximal SDCA on ``lam ||w||_1 + mu/2
    ||w - z||^2``, the centre ``z`` moved to the model as it converges) and
    certified as the L1 problem itself: ``primal_``, ``dual_`` and ``gap_``
    are ``P1(w)``, the L1 dual at the rescaled dual point and their
    difference (:mod:`daskdca.l1`), and ``coef_`` holds exact zeros.  With
    ``solver="auto"`` on the route chosen as for ``"l2"`` (on one worker
    where the data fits one given a ``client``); with ``"sdca"``,
    ``"cocoa+"`` or an ``L1SDCA`` object in this process on one partition,
    or with a ``client`` or ``n_partitions`` > 1 in CoCoA+ rounds on each
    subproblem; ``l1_ratio`` must be None.""",
    "max_iter": """max_iter : int, default=1000
    The most passes over the data for each problem, whatever the solver
    (:func:`daskdca.fit`'s ``max_epochs``, as scikit-learn's SAG and SAGA
    count ``max_iter``): a pass is one round of serial SDCA or CoCoA+,
    ``ceil(n / batch_size)`` rounds of ``"minibatch_sdca"``, so ``n_iter_``,
    which counts rounds, can exceed it.  On small data a round of serial
    SDCA holds several passes (``route_.options["local_iters"]``, at most
    ``max_iter``); the fit ends with the round that reaches ``max_iter``,
    past it by fewer than that round's passes.  A fit that reaches it before
    ``tol`` warns with a ``ConvergenceWarning`` naming the relative gap
    reached.""",
    "fit_intercept": """fit_intercept : bool, default=True
    Fit LIBLINEAR's regularised intercept: each row gets a synthetic last
    feature of value ``s = intercept_scaling`` (appended to the copy of X
    the fit uses, never to the caller's X) whose weight ``w_b`` is
    regularised like the others, so the problem solved and certified is
    the one above, with ``intercept_ = b = s w_b``.  The intercept is
    therefore shrunk towards 0, less so for a larger ``s``: it is the
    intercept of ``LinearSVC``, ``LinearSVR`` and
    ``LogisticRegression(solver="liblinear")``, not the unregularised one
    of ``Ridge`` or of ``LogisticRegression``'s other solvers, which it
    approaches as ``s`` grows.  ``primal_``, ``dual_``, ``gap_`` and the
    dual variables are those of this augmented problem.  False fits no
    intercept (``intercept_`` is 0), the problem of :func:`daskdca.fit`
    (and of LIBLINEAR's ``train`` without ``-B``); with the squared loss
    and no row weights, centring X and y and passing False gives
    ``Ridge``'s solution.""",
    "random_state": """random_state : int, RandomState instance or None, default=0
    Seed of the fit's random streams (:func:`daskdca.fit`'s
    ``random_state``: the order of the coordinate steps and the random
    order in which rows are dealt to partitions).  An int serves every
    problem of every fit; a RandomState instance gives one int, drawn from
    it at each call to ``fit``, to all that fit's problems; None lets each
    :func:`daskdca.fit` call draw its own seed (so problems fitted one
    after another get different ones).""",
    "warm_start": """warm_start : bool, default=False
    When True, a fit starts from the dual variables of the previous fit
    (:func:`daskdca.fit`'s ``dual_init``), provided that fit also ran with
    ``warm_start=True`` (only then are they kept), X has the same shape (the
    synthetic intercept feature counted, so switching ``fit_intercept``
    starts cold) and, for classification, y has the same classes;
    otherwise it starts cold, at ``alpha = 0``, as scikit-learn's warm
    starts do when shapes differ.  The duals are first projected onto the
    dual box of the current labels, loss and row weights, which changes
    nothing when those are unchanged.  The box does not depend on ``C`` and
    every fit stops on its own certified gap, so a refit after
    ``set_params(C=...)`` from a nearby start saves passes (``solver="auto"``
    then runs a dual method, never Newton; a method object must support
    warm starts), except with ``penalty="l1"``: its proximal-point
    continuation carries the model in its centre, which starts at 0 (the
    duals alone do not give an L1 model), so a warm start there takes the
    passes of a cold one.  While ``warm_start`` is True the duals (``8 n``
    bytes per problem) are kept privately, whatever ``keep_dual``.""",
    "n_partitions": """n_partitions : int or None, default=None
    Row partitions of each fit (:func:`daskdca.fit`'s ``n_partitions``, at
    most the number of rows), dealt the rows in a seeded random order
    (``dual_coef_`` still follows the rows of X).  In this process (no
    ``client``), None is 1, or 2 for ``solver="cocoa+"``.  With a
    ``client``, None is one partition per worker at the start of the fit
    (unless ``solver="auto"`` runs the whole fit as one task on one
    worker).  ``solver="auto"`` with a number above 1 runs CoCoA+ rounds
    over that many partitions; ``"sdca"`` takes one only.""",
    "n_jobs": """n_jobs : int or None, default=None
    Threads of each fit in this process (:func:`daskdca.fit`'s ``n_jobs``):
    None uses the cores this process may use (capped by
    ``NUMBA_NUM_THREADS`` where set, as in joblib's process workers, so a
    grid search with ``n_jobs`` of its own does not oversubscribe them),
    -1 the same.  The bits are the same for every value, except where
    serial SDCA's sweep is split over the threads (large data whose
    features overlap little, :func:`daskdca.fit`'s ``n_jobs``): the same
    for the same value there.  With a ``client`` the workers' threads run
    the fit, and it must be None.""",
    "client": """client : distributed.Client, str or None, default=None
    Fit on this Dask cluster: a ``Client``, or a scheduler address such as
    ``"tcp://host:8786"``, connected for each :func:`daskdca.fit` call and
    closed after.  X is in memory (a dask array or DataFrame is computed
    first) and travels to the workers inside the fit's tasks, once per
    :func:`daskdca.fit` call (once per problem when problems are fitted one
    after another).  None fits in this process, even where a default client
    exists.  A clone shares the client; an estimator whose ``client`` is not
    None cannot be pickled (set ``client=None`` first).""",
    "keep_dual": """keep_dual : bool, default=False
    Keep the fitted model's dual variables as ``dual_coef_``: ``8 n`` bytes
    per problem (one problem for regression and for two classes, one per class
    otherwise).  By default they are dropped, so the fitted estimator
    pickles in ``O(K d)`` bytes for ``K`` problems of ``d`` features.""",
}

# SDCAClassifier's and SDCARegressor's fit_intercept: the bool entry above, and the unregularised intercept
_SHARED_PARAMETERS["fit_intercept_or_unregularized"] = _SHARED_PARAMETERS["fit_intercept"].replace(
    "fit_intercept : bool, default=True", 'fit_intercept : bool or {"unregularized"}, default=True', 1) + """
    ``"unregularized"`` leaves the intercept ``b`` out of the penalty:
    ``min_{w,b} 1/n sum_i s_i phi(y_i, x_i.w + b) + lam/2 ||w||^2``, the
    problem of ``Ridge(alpha=1/C)`` and of ``LogisticRegression(C=C)`` with
    its default L-BFGS solver, solved by primal Newton on ``(w, b)`` (its
    directions by conjugate gradients above 300 features) and
    certified by the iterate's dual point made feasible for the constraint
    ``sum_i alpha_i = 0`` that the unpenalised ``b`` puts on the dual
    (:func:`daskdca.intercept.fit_unregularized_intercept`).  It takes the
    losses ``"logistic"``, ``"squared_hinge"`` and ``"smoothed_hinge"``
    (two classes only) or ``"squared"``, ``penalty="l2"`` and
    ``solver="auto"``, and runs in this process (no
    ``client``, at most one partition); neither ``warm_start=True`` nor an
    ``intercept_scaling`` other than 1 applies to it (both raise),
    ``n_iter_`` counts Newton steps, and ``primal_``, ``dual_``, ``gap_`` and ``dual_coef_``
    are those of this problem.  Otherwise a ValueError names the fix
    (``fit_intercept=True`` for the other losses)."""


def _with_shared_parameters(cls):
    """``cls`` with the ``{name}`` lines of its docstring replaced by the shared entries (indented as its
    Parameters section is)."""
    doc = cls.__doc__
    for name, entry in _SHARED_PARAMETERS.items():
        doc = doc.replace("    {" + name + "}\n", textwrap.indent(entry, "    ") + "\n")
    cls.__doc__ = doc
    return cls


def _loss_name(loss):
    """daskdca's name of ``loss`` (scikit-learn's ``"log_loss"`` and ``"squared_error"`` are aliases)."""
    return get_loss(loss).name


def _solver_name(solver):
    """The registered name of ``solver`` (a name, a method object, or None for "auto")."""
    return "auto" if solver is None else solver if isinstance(solver, str) else solver.name


def _seed(random_state):
    """The integer seed (or None) that ``daskdca.fit`` takes, from sklearn's ``random_state``."""
    if random_state is None or isinstance(random_state, Integral):
        return random_state
    # a RandomState instance: draw one seed from it, as sklearn's estimators do
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _squared_row_nnz(X):
    """``sum_i nnz_i^2`` of CSR X: a Newton round's Hessian sums per pair of classes."""
    counts = np.diff(X.indptr).astype(np.int64)
    return int(counts @ counts)


def _in_memory(X):
    """X for ``fit``: a dask array computed into memory chunk by chunk (sparse chunks, e.g. AnnData's
    ``read_elem_lazy``, are joined as CSR and never densified), a dask DataFrame into a pandas one partition
    by partition, pydata sparse as scipy CSR; else as given.  A DataFrame's columns must all be numeric (else
    a ValueError names those that are not, and the fix); scikit-learn keeps their names."""
    if _is_dask_frame(X):
        from daskdca.store.from_dask import frame_in_memory

        return frame_in_memory(X)
    if _is_pandas_frame(X):
        _check_numeric_columns(X.dtypes)
        return X
    if not _is_dask_array(X):
        return _scipy_if_pydata(X)
    chunks = [_scipy_if_pydata(part.compute()) for part in X.to_delayed().ravel()]
    if not all(sp.issparse(chunk) for chunk in chunks):
        return np.concatenate([np.asarray(chunk) for chunk in chunks])
    rows = [sp.csr_matrix(chunk) for chunk in chunks]
    offsets = np.cumsum([0] + [r.nnz for r in rows])
    indptr = np.concatenate([np.zeros(1, dtype=np.int64)]
                            + [r.indptr[1:].astype(np.int64) + offset for r, offset in zip(rows, offsets)])
    return sp.csr_matrix((np.concatenate([r.data for r in rows]), np.concatenate([r.indices for r in rows]), indptr),
                         shape=(sum(r.shape[0] for r in rows), X.shape[1]))


def _lam_of(C, n):
    """``lam = 1 / (C n)``, refused (naming C) where ``C n`` lies outside 1e-300 .. 1e300 (``lam`` underflows
    or overflows, and the fit's sums with it): ``daskdca.fit`` would otherwise report a ``lam`` the caller never
    set."""
    lam = 1.0 / (float(C) * n)
    if not (1e-300 <= float(C) * n <= 1e300):
        shown = C if type(C) in (int, float) else float(C)  # a NumPy scalar shown as its value
        raise ValueError(f"C={shown!r} gives C n = {float(C) * n!r} for the n={n} training rows (lam = 1/(C n) = "
                         f"{lam!r}), where the fit's sums overflow or underflow float64; use a C with C n between "
                         "1e-300 and 1e300 (LIBLINEAR's usual C values are 1e-4 to 1e4).")
    return lam


def _refuse_store(estimator, X):
    """An estimator's ``fit`` takes in-memory data: a store (its path, URL or handle) is refused with the way
    to fit one (strings would otherwise fail inside NumPy as 'could not convert string to float')."""
    if is_store(X):
        name = type(estimator).__name__
        shown = getattr(X, "url", None) or os.fspath(X)
        raise TypeError(f"{name}.fit takes arrays (a NumPy array, a scipy sparse matrix or a dask array) and y, "
                        f"not a store ({shown!r}). Fit a store with daskdca.fit({shown!r}) without y (its labels "
                        f"are stored with the data); {name}'s predict, decision_function and score take a store "
                        "without y.")


def _problem_weights(y, classes, class_weight, sample_weight):
    """Per binary problem, every row's loss weight (None where all are 1), LIBLINEAR's way.

    A row's weight is its ``sample_weight`` times a class weight
    (:func:`daskdca.validation.class_weights`, as :class:`~sklearn.svm.LinearSVC` computes
    it).  With two classes every row gets its own class's weight; with
    ``K > 2`` classes, problem ``k`` (class ``k`` against the rest) weighs
    class ``k``'s rows by its class weight and the others by 1, as
    LIBLINEAR's one-vs-rest does (``Cp = C w_k``, ``Cn = C``) and
    :class:`~sklearn.linear_model.SGDClassifier` too.
    """
    positives = classes[1:] if classes.shape[0] == 2 else classes
    if class_weight is None:
        return [sample_weight] * len(positives)
    # named as class_weight and the class here, not as the sample_weight the rows get below
    per_class = class_weights(class_weight, y, classes, sample_weight)
    base = np.ones(y.shape[0]) if sample_weight is None else sample_weight
    if classes.shape[0] == 2:
        weight = base * per_class[np.searchsorted(classes, y)]
        _check_weighted_rows(weight, class_weight)
        return [weight]
    return [base * np.where(y == label, per_class[k], 1.0) for k, label in enumerate(classes)]


class _ProblemResult:
    """Problem ``k`` of a one-vs-rest :class:`~daskdca.api.LinearModel`, with the attributes of a binary one."""

    @classmethod
    def of(cls, model, k, tol):
        self = cls()
        self.coef_, self.dual_coef_ = model.coef_[k], model.dual_coef_[k]
        self.primal_, self.dual_, self.gap_ = float(model.primal_[k]), float(model.dual_[k]), float(model.gap_[k])
        self.converged_ = self.gap_ <= tol * abs(self.primal_)
        self.route_ = model.route_
        history = [rec._replace(primal=float(rec.primal[k]), dual=float(rec.dual[k]), gap=float(rec.gap[k]))
                   for rec in model.history_]
        self.n_rounds_ = model.n_rounds_
        if getattr(model.plan_, "stops_problems", False):
            # the problem stopped at its first record that met tol (OneVsRestPlan) and reports that state's
            # certificate at the end: its history is that of its own binary fit
            first = next((j for j, rec in enumerate(history) if rec.gap <= tol * abs(rec.primal)), len(history) - 1)
            last = history[-1]
            history = history[:first] + [history[first]._replace(primal=last.primal, dual=last.dual, gap=last.gap)]
            self.n_rounds_ = history[-1].round
        self.history_ = history
        return self


def _logistic_penalty(penalty, l1_ratio):
    """``LogisticRegression``'s arguments for ``penalty`` (``"l2"``, ``"l1"`` or ``"elasticnet"`` of
    ``l1_ratio``): ``l1_ratio`` alone (0, 1 or the ratio) where scikit-learn deprecates ``penalty`` (1.8; it
    goes in 1.10, https://scikit-learn.org/stable/modules/generated/sklearn.linear_model.LogisticRegression.html),
    else ``penalty`` with ``l1_ratio`` for the elastic net."""
    from sklearn.linear_model import LogisticRegression

    if inspect.signature(LogisticRegression).parameters["penalty"].default == "deprecated":
        return {"l1_ratio": {"l2": 0.0, "l1": 1.0}.get(penalty, l1_ratio)}
    return {"penalty": penalty, "l1_ratio": l1_ratio} if penalty == "elasticnet" else {"penalty": penalty}


def _relative_gap(gap, primal):
    return np.asarray(gap, dtype=np.float64) / np.maximum(np.abs(np.asarray(primal, dtype=np.float64)), 1e-300)


class _SDCAMixin:
    """What both estimators share: parameters, the call to ``daskdca.fit``, pickling."""

    _common_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions(set(_SOLVERS)), None, HasMethods(["setup"])],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "n_partitions": [Interval(Integral, 1, None, closed="left"), None],
        "n_jobs": [Integral, None],
        "client": [None, str, HasMethods(["submit", "scheduler_info"])],
        "verbose": ["verbose"],
        "keep_dual": ["boolean"],
    }

    _penalty_constraints: dict = {
        "penalty": [StrOptions({"l2", "l1", "elasticnet"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="both"), None],
    }

    def _fit_solver(self):
        """``(solver, l1_ratio)`` for :func:`daskdca.fit`, with ``penalty``, ``l1_ratio`` and ``solver`` checked
        together.

        ``penalty="l2"``: ``solver`` and None.  With ``solver="auto"``,
        ``"l1"`` and ``"elasticnet"`` give ``"auto"`` and the penalty's L1
        share (1 for pure L1), so the fit chooses the route and the proximal
        method as for ``"l2"`` (:mod:`daskdca.routes`).  A named solver gives
        its method with ``l1_ratio`` (Prox-SDCA, Shalev-Shwartz & Zhang 2016):
        ``"sdca"`` and ``"cocoa+"`` give :class:`daskdca.methods.l1.L1SDCA`
        for ``"l1"`` (an ``L1SDCA`` object is taken as it is), and
        ``SDCA``, ``CoCoAPlus`` or ``MinibatchSDCA`` with ``l1_ratio`` for
        ``"elasticnet"``.
        """
        from daskdca.methods.base import check_l1_ratio
        from daskdca.methods.cocoa import SDCA, CoCoAPlus
        from daskdca.methods.minibatch import MinibatchSDCA

        if self.penalty == "l2":
            if self.l1_ratio is not None:
                raise ValueError(f"l1_ratio={self.l1_ratio!r} is used only with penalty='elasticnet'; set "
                                 "penalty='elasticnet' or leave l1_ratio=None.")
            return self.solver, None
        if self.penalty == "l1":
            # the pure L1 problem: daskdca.methods.l1.L1SDCA, certified by the rescaled dual point
            from daskdca.methods.l1 import L1SDCA

            if self.l1_ratio is not None:
                raise ValueError(f"penalty='l1' is the pure L1 penalty lam ||w||_1 and takes no l1_ratio, got "
                                 f"l1_ratio={self.l1_ratio!r}; leave l1_ratio=None, or use penalty='elasticnet' "
                                 "with l1_ratio in [0, 1).")
            if isinstance(self.solver, L1SDCA):
                return self.solver, None
            if self.solver is None or isinstance(self.solver, str):
                name = _solver_name(self.solver)
                if name == "auto":
                    return "auto", 1.0
                if name in ("sdca", "cocoa+"):
                    return L1SDCA(), None
            raise ValueError(f"penalty='l1' is solved by solver='auto', 'sdca' or 'cocoa+' (daskdca.methods.l1.L1SDCA) "
                             f"or an L1SDCA object, not solver={self.solver!r}.")
        if self.l1_ratio is None:
            raise ValueError("penalty='elasticnet' needs l1_ratio in [0, 1), the L1 share of the penalty "
                             "(e.g. l1_ratio=0.5).")
        if self.solver is not None and not isinstance(self.solver, str):
            raise ValueError(f"penalty='elasticnet' with the solver object {self.solver!r}: set l1_ratio on the "
                             "object (e.g. daskdca.SDCA(l1_ratio=0.5)) and leave penalty='l2'.")
        rho = float(self.l1_ratio)
        methods = {"sdca": SDCA, "cocoa+": CoCoAPlus, "minibatch_sdca": MinibatchSDCA}
        name = _solver_name(self.solver)
        if name == "auto":
            check_l1_ratio(rho, SDCA.__name__)  # l1_ratio = 1 is penalty='l1', refused with the fix
            return "auto", rho
        if name in methods:
            return methods[name](l1_ratio=rho), None
        raise ValueError(f"penalty='elasticnet' is solved by solver='auto', 'sdca', 'cocoa+' or 'minibatch_sdca', "
                         f"not solver={self.solver!r}.")

    def _unregularized(self):
        """Whether ``fit_intercept="unregularized"``: the intercept left out of the penalty."""
        return isinstance(self.fit_intercept, str) and self.fit_intercept == "unregularized"

    def _fit_unregularized(self, X, y, loss, C, sample_weight):
        """``fit_intercept="unregularized"``: :func:`~daskdca.intercept.fit_unregularized_intercept` at
        ``lam = 1 / (C n)`` on X (no synthetic column), after refusing, with the fix, what it does not run;
        returns its :class:`~daskdca.intercept.InterceptFit` and the route."""
        if self.penalty != "l2" or self.l1_ratio is not None:
            raise ValueError(f"fit_intercept='unregularized' is solved with penalty='l2' (and l1_ratio=None) only, "
                             f"got penalty={self.penalty!r}, l1_ratio={self.l1_ratio!r}; use penalty='l2', or "
                             "fit_intercept=True (the regularised synthetic feature) with this penalty.")
        if not (self.solver is None or (isinstance(self.solver, str) and self.solver == "auto")):
            raise ValueError(f"fit_intercept='unregularized' runs its own primal Newton solver and takes "
                             f"solver='auto' only, got solver={self.solver!r}; use solver='auto', or "
                             "fit_intercept=True with this solver.")
        if self.warm_start:
            raise ValueError("fit_intercept='unregularized' starts its primal Newton solver cold (it takes no dual "
                             "start), got warm_start=True; use warm_start=False, or fit_intercept=True to warm-start.")
        if self.intercept_scaling != 1.0:
            raise ValueError(f"fit_intercept='unregularized' fits b itself, unscaled and unpenalised, so "
                             f"intercept_scaling={self.intercept_scaling!r} has no meaning there; leave it at 1.0, or "
                             "use fit_intercept=True (LIBLINEAR's scaled synthetic feature).")
        if self.client is not None or (self.n_partitions or 1) > 1:
            where = "a client" if self.client is not None else f"n_partitions={self.n_partitions!r}"
            raise ValueError(f"fit_intercept='unregularized' is fitted in this process on one partition, got "
                             f"{where}; drop it, or use fit_intercept=True to fit on a cluster.")
        lam = _lam_of(C, X.shape[0])
        fit = fit_unregularized_intercept(canonical_csr(X), y, loss=loss, lam=lam, tol=self.tol, max_iter=self.max_iter,
                                          sample_weight=sample_weight)
        route = Route("in_process", "newton", {"fit_intercept": "unregularized"}, 1,
                      f"fit_intercept='unregularized': primal Newton on (w, b) with b not penalised, d={X.shape[1]} "
                      "<= 300 features, certified with the dual constraint sum(alpha) = 0.")
        for attr in ("_warm_duals", "_warm_multinomial"):  # Newton starts cold; no duals kept for a next fit
            if hasattr(self, attr):
                delattr(self, attr)
        return fit, route

    def _with_bias(self, X):
        """X (canonical CSR) with LIBLINEAR's synthetic feature when ``fit_intercept``: a last column whose
        every value is ``intercept_scaling``, whose weight ``w_b`` gives ``intercept_ = intercept_scaling * w_b``.
        """
        if not self.fit_intercept:
            return X
        return with_intercept_column(X, self.intercept_scaling)

    def _split_bias(self, w):
        """``(coef, intercept)`` from the weights of the (possibly augmented) problem."""
        w = np.asarray(w, dtype=np.float64)
        if not self.fit_intercept:
            return w.copy(), 0.0
        return w[:-1].copy(), float(self.intercept_scaling * w[-1])

    def _warm_starts(self, X, classes, signs, weights):
        """Per binary problem, the duals to start from: the previous fit's when ``warm_start`` and the
        problem's shape (rows, features with the synthetic one) and classes are unchanged, else None.

        The previous duals are projected onto the dual box of the current
        labels, loss and row weights (``y_i alpha_i`` clipped to ``s_i`` times
        the loss's box), so a refit on relabelled or reweighted rows or with
        another loss still starts from a feasible point; on the same labels,
        weights and loss the projection changes nothing.
        """
        previous = getattr(self, "_warm_duals", None)
        if not self.warm_start or previous is None:
            return [None] * len(signs)
        shape, old_classes, duals = previous
        same_classes = (classes is None) == (old_classes is None) and (
            classes is None or (classes.shape == old_classes.shape and np.array_equal(classes, old_classes)))
        if shape != X.shape or not same_classes or duals.shape[0] != len(signs):
            return [None] * len(signs)
        loss = self._fit_loss()
        starts = []
        for sign, alpha, weight in zip(signs, duals, weights):
            scale = 1.0 if weight is None else weight
            lo, hi = loss.dual_domain
            if loss.is_classification:
                alpha = sign * np.clip(sign * alpha, lo * scale, hi * scale)
            else:
                # alpha itself lies in a regression loss's box ([-1, 1] for epsilon-insensitive, [-delta, delta]
                # for Huber, every real for the squared losses); a row of weight 0 has its dual pinned at 0
                if np.isfinite(hi):
                    alpha = np.clip(alpha, lo * scale, hi * scale)
                if weight is not None:
                    alpha = np.where(weight == 0, 0.0, alpha)
            starts.append(alpha)
        return starts

    def _fit_threads(self):
        """:func:`daskdca.fit`'s ``n_jobs``: the threads of each fit."""
        return self.n_jobs

    def _fit_loss(self):
        """The :class:`~daskdca.losses.Loss` the fit solves (a name's default parameters)."""
        return get_loss(self.loss)

    def _keep_warm_duals(self, X, classes, models):
        """Keep every problem's duals privately for the next fit when ``warm_start`` (``keep_dual`` decides
        only the public ``dual_coef_``); drop them otherwise, so the pickle stays small."""
        if self.warm_start:
            duals = np.stack([np.asarray(m.dual_coef_, dtype=np.float64) for m in models])
            self._warm_duals = (X.shape, None if classes is None else np.array(classes, copy=True), duals)
        elif hasattr(self, "_warm_duals"):
            del self._warm_duals
        if hasattr(self, "_warm_multinomial"):
            del self._warm_multinomial  # a multinomial fit's duals, no start for these problems

    def _dca_fit(self, X, y, loss, lam, seed, *, client, dual_init, sample_weight, class_weight=None, solver=None,
                 n_partitions=None):
        """One ``daskdca.fit`` call with this estimator's parameters (the fit's own warning muted); ``solver``
        and ``n_partitions`` replace the estimator's (a multinomial fit's)."""
        n = X.shape[0]
        n_partitions = self.n_partitions if n_partitions is None else n_partitions
        # in memory, daskdca.fit's documented default is 2 partitions for "cocoa+", else 1
        partitions = n_partitions
        if partitions is None:
            partitions = 2 if _solver_name(self.solver) == "cocoa+" and client is None else 1
        if n < partitions:
            raise ValueError(
                f"n_samples={n} is fewer than the {partitions} row partitions of solver={self.solver!r}; "
                f"set n_partitions <= {n} or fit more samples."
            )
        solver, l1_ratio = self._fit_solver() if solver is None else (solver, None)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_FIT_WARNING, category=ConvergenceWarning)
            return api.fit(
                X, y, loss=loss, lam=lam, solver=solver, tol=self.tol,
                max_epochs=self.max_iter, n_partitions=n_partitions, random_state=seed, client=client,
                verbose=int(self.verbose), dual_init=dual_init, sample_weight=sample_weight,
                class_weight=class_weight, l1_ratio=l1_ratio, n_jobs=self._fit_threads(),
            )

    def _warn_unconverged(self, labels, fix="increase max_iter or tol"):
        """One ConvergenceWarning naming the gap reached and the tol asked, per unfinished problem, and ``fix``,
        at the line that called ``fit`` (:func:`~daskdca.user_warnings.warn_at_caller`)."""
        converged = np.atleast_1d(self.converged_)
        if converged.all():
            return
        rel = np.atleast_1d(_relative_gap(self.gap_, self.primal_))
        parts = [f"{label}: {r:.3e}" for label, r, ok in zip(labels, rel, converged) if not ok]
        warn_at_caller(
            f"{type(self).__name__} reached max_iter={self.max_iter} passes over the data before the relative "
            f"duality gap fell to tol={self.tol:g} ({'; '.join(parts)}); {fix}.",
            ConvergenceWarning,
        )

    def _validate_X_predict(self, X):
        check_is_fitted(self)
        if _is_pandas_frame(X):
            _check_numeric_columns(X.dtypes)
        return validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)

    def _predictor(self):
        """The fitted model as a :class:`~daskdca.prediction.Predictor` (scikit-learn's check of in-memory
        X, dense kept dense); every prediction method and :meth:`score` go through it."""
        check_is_fitted(self)
        classes = getattr(self, "classes_", None)
        multinomial = getattr(self, "_multinomial", False)
        proba = None if classes is None else proba_kind(_loss_name(self.loss), multinomial)
        coef = self.coef_ if sp.issparse(self.coef_) else np.atleast_2d(self.coef_)  # sparse after sparsify()
        return Predictor(coef=coef, intercept=self.intercept_, classes=classes, proba=proba,
                         refusal=proba_refusal(type(self).__name__, self.loss), name=type(self).__name__,
                         n_features=self.n_features_in_, feature_names=getattr(self, "feature_names_in_", None),
                         as_csr=False, check=self._validate_X_predict)

    def score(self, X, y=None, sample_weight=None):
        """Accuracy (classifier) or ``R^2`` (regressor) of the predictions on X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, DataFrame} of shape (n_samples, n_features), or a store
            A daskdca store (a path or URL string, an ``os.PathLike``, or a
            :class:`~daskdca.store.CSRStore`) is streamed block by block and
            scored against its own labels.
        y : array-like of shape (n_samples,) or None, default=None
            True labels or targets; required for arrays, and must be None
            for a store (whose labels are used).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights (for a store, in its stored row order).

        Returns
        -------
        float
            ``accuracy_score`` for :class:`SDCAClassifier`, ``r2_score`` for
            :class:`SDCARegressor`.
        """
        return prediction_score(self._predictor(), X, y, sample_weight, predict=self.predict)

    def history_frame(self):
        """``history_`` as a pandas DataFrame (needs pandas); see :func:`daskdca.plot.history_frame`."""
        from daskdca.plot import history_frame

        return history_frame(self)

    def __sklearn_clone__(self):
        # A distributed.Client is a connection, not a parameter value: it
        # cannot be deep-copied, so a clone (GridSearchCV, cross_validate)
        # shares it and copies everything else.
        if self.client is None:
            return super().__sklearn_clone__()
        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(**{k: clone(v, safe=False) for k, v in params.items()}, client=client)

    def __getstate__(self):
        if self.client is not None:
            raise TypeError(
                f"This {type(self).__name__} holds client={self.client!r}, which cannot be pickled; call "
                "set_params(client=None) before pickling (the fitted model does not need the client)."
            )
        return super().__getstate__()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        if tags.classifier_tags is not None and self._unregularized():
            tags.classifier_tags.multi_class = False  # the unregularised intercept fits two classes only
        return tags


def _check_logistic(estimator):
    if _loss_name(estimator.loss) != "logistic":
        raise AttributeError(proba_refusal(type(estimator).__name__, estimator.loss))
    return True


@_with_shared_parameters
class SDCAClassifier(_SDCAMixin, ClassifierMixin, BaseEstimator):
    """Linear classifier trained by stochastic dual coordinate ascent, with a duality-gap certificate.

    For labels ``y_i`` in {-1, +1} it solves, with the default
    ``fit_intercept=True`` and ``s = intercept_scaling``,

    ``min_{w,b}  P(w, b) = 1/n sum_i phi(y_i (x_i.w + b)) + lam/2 (||w||^2 + (b/s)^2)``  with  ``lam = 1 / (C n)``,

    which is LIBLINEAR's ``min 1/2 (||w||^2 + w_b^2) + C sum_i phi(y_i (x_i.w +
    s w_b))`` divided by ``C n`` (``b = s w_b``: LIBLINEAR's regularised
    intercept, see ``fit_intercept``); with ``fit_intercept=False``, ``b = 0``
    and the problem is ``min_w 1/n sum_i phi(y_i x_i.w) + lam/2 ||w||^2``,
    that of :func:`daskdca.fit`.  ``C`` means what it means in
    :class:`~sklearn.svm.LinearSVC` and
    :class:`~sklearn.linear_model.LogisticRegression` (whose defaults also fit
    an intercept), so their grids carry over.  The dual is ``D(alpha) = -1/n
    sum_i phi*(-y_i alpha_i) - lam/2 ||w(alpha)||^2`` with ``w(alpha) = X^T
    alpha / (lam n) = C X^T alpha``, X with the synthetic column when
    ``fit_intercept``.  Each fit stops when the duality gap, recomputed from
    the dual variables alone, satisfies ``P - D <= tol * |P|``; ``gap_`` then
    bounds ``P(coef_, intercept_) - min P``.

    With two classes, ``classes_[1]`` is the positive class (+1).  With
    ``K > 2`` classes and ``multi_class="ovr"`` (and by default for the
    losses other than logistic) it fits ``K`` one-vs-rest problems (class
    ``k`` against the rest, each with the same ``C``, exactly as
    ``LinearSVC`` does).  The ``K`` problems are fitted together, by one
    :func:`daskdca.fit` call, when the solver can (``"auto"``, ``"sdca"``
    and ``"cocoa+"`` with ``penalty="l2"``: ``capabilities.multi_class``;
    each problem stops at its own round with the bits of its own fit, and
    in memory the problems step on the ``n_jobs`` threads), else one after
    another, each by its own call.

    With ``loss="logistic"`` and ``multi_class="multinomial"`` (or the
    default ``"auto"`` where it can: see ``multi_class``), ``K > 2``
    classes are one multinomial (softmax) problem instead, scikit-learn's
    default multi-class ``LogisticRegression``: with ``W`` of shape
    ``(K, d + 1)`` (the synthetic intercept column last, ``s = intercept_scaling``),

    ``min_W  P(W) = 1/n sum_i [log sum_k exp(w_k.x_i + b_k) - (w_{y_i}.x_i + b_{y_i})] + lam/2 ||W||_F^2``,

    ``b_k = s w_{k,b}``, solved by its dual ``D(alpha) = 1/n sum_i H(e_{y_i} -
    alpha_i) - lam/2 ||W(alpha)||_F^2`` (``H`` the entropy, ``alpha`` of shape
    ``(K, n)``, ``w_k(alpha) = C X^T alpha_k``) with
    :class:`~daskdca.methods.MultinomialSDCA` and certified by ``P - D``.

    With ``loss="hinge"`` and ``multi_class="crammer_singer"``, ``K > 2``
    classes are one Crammer-Singer multi-class SVM problem instead,
    ``LinearSVC(multi_class="crammer_singer")`` (LIBLINEAR's ``-s 4``):

    ``min_W  P(W) = 1/n sum_i max_k (1[k != y_i] + w_k.x_i + b_k - w_{y_i}.x_i - b_{y_i}) + lam/2 ||W||_F^2``,

    solved by its dual ``D(alpha) = 1/n sum_i alpha_{y_i i} - lam/2
    ||W(alpha)||_F^2`` (each column of ``alpha`` summing to 0, its ``y_i``
    entry in ``[0, s_i]``, the others ``<= 0``) with
    :class:`~daskdca.methods.CrammerSingerSVM` and certified by ``P - D``.

    Parameters
    ----------
    {classifier_loss}
    C : float, default=1.0
        Inverse regularisation strength as in LIBLINEAR: ``lam = 1 / (C n)``
        with ``n`` the number of training rows.  Must be > 0.
    {penalty}
    {l1_ratio}
    {solver}
    {tol}
    {max_iter}
    {fit_intercept_or_unregularized}
    {intercept_scaling}
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes' losses, as in ``LinearSVC``: a dict
        ``{label: weight}`` (missing labels weigh 1), or ``"balanced"``,
        ``n_samples / (n_classes * count(label))`` (counts weighted by
        ``sample_weight``).  With two classes each row's loss is multiplied
        by its class's weight; with ``K > 2``, problem ``k`` weighs class
        ``k``'s rows by its weight and the rest by 1 (LIBLINEAR's
        one-vs-rest); the multinomial and Crammer-Singer problems weigh each
        row's loss by its class's weight (as ``LogisticRegression`` and
        ``LinearSVC(multi_class="crammer_singer")``).  The objectives above then read ``1/n sum_i s_i
        phi(...)`` with ``s_i`` the row's weight (times ``sample_weight``).
    multi_class : {"auto", "ovr", "multinomial", "crammer_singer"}, default="auto"
        How ``K > 2`` classes are fitted.  ``"auto"``: ``"multinomial"`` for
        ``loss="logistic"`` (or ``"log_loss"``) with ``penalty="l2"`` (and
        ``l1_ratio=None``) and a solver that runs it (``"auto"``, ``"sdca"``,
        ``"cocoa+"`` or a :class:`~daskdca.methods.MultinomialSDCA` object),
        as scikit-learn's ``LogisticRegression`` does by default; ``"ovr"``
        otherwise: the other losses, the elastic net, and an explicit solver
        that cannot run the multinomial problem (``"minibatch_sdca"``, another
        method object).  ``fit`` records what it resolved to in
        ``multi_class_``.  ``"ovr"``, ``K`` one-vs-rest binary
        problems; ``"multinomial"`` (``loss="logistic"`` only, ``penalty="l2"``),
        one softmax problem (above), as scikit-learn's ``LogisticRegression``
        fits them: for ``solver="auto"`` by primal Newton
        (:class:`~daskdca.methods.MultinomialNewton`, where a round's
        Hessian is small) or L-BFGS (:class:`~daskdca.methods.MultinomialLBFGS`)
        where the binary route would take Newton (``d <= 300`` features and,
        without a client, ``lam n < 2``; no warm start), else by
        :class:`~daskdca.methods.MultinomialSDCA` (``route_`` says which and
        why: :func:`daskdca.routes.choose_multinomial_route`); serial SDCA
        for ``"sdca"``, CoCoA+ rounds for ``"cocoa+"``, or a
        ``MultinomialSDCA``, ``MultinomialLBFGS`` or ``MultinomialNewton``
        object as given; with
        ``warm_start=True`` a refit starts from the previous multinomial
        fit's duals (each row's distribution ``beta_i`` kept, as ``alpha_i =
        s_i (e_{y_i} - beta_i)`` for the current labels and row weights;
        :func:`daskdca.fit`'s ``dual_init`` of shape ``(K, n)``).  Two classes are the binary
        problem either way (the softmax problem of two classes at ``2 lam``
        is the binary logistic one at ``lam``, and ``LogisticRegression``
        fits that one too).  ``"crammer_singer"`` (``loss="hinge"`` only,
        ``penalty="l2"``), one Crammer-Singer problem (above), as
        ``LinearSVC(multi_class="crammer_singer")`` fits them, run by
        :class:`~daskdca.methods.CrammerSingerSVM` (the same solvers, or a
        ``CrammerSingerSVM`` object); it starts cold whatever ``warm_start``.  Its two classes
        are, as in ``LinearSVC``, the Crammer-Singer problem of two classes
        at ``C``, which is the binary hinge problem at ``2 C`` (with
        ``coef_`` the difference ``w_1 - w_0``): that binary problem is
        fitted, and ``primal_`` is ``P(W)`` above.
    {random_state}
    {warm_start}
    {n_partitions}
    {n_jobs}
    {client}
    {verbose}
    {keep_dual}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The sorted class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        ``w`` of each problem: one row for two classes (for ``classes_[1]``),
        one row per class otherwise.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``intercept_scaling * w_b`` with ``fit_intercept``, else zeros.
    dual_coef_ : ndarray of shape (1, n_samples) or (n_classes, n_samples)
        Only with ``keep_dual=True``: ``alpha`` of each problem, labels
        inside the loss (for hinge ``y_i alpha_i`` lies in [0, 1]).  Where
        plain SDCA ran, or CoCoA+ without Catalyst
        (``solver=daskdca.CoCoAPlus(acceleration=None)``: ``"cocoa+"`` on two
        or more partitions runs inside Catalyst), ``coef_[k] = C * X.T @
        dual_coef_[k]`` and, with ``fit_intercept``, ``intercept_[k] = C *
        intercept_scaling**2 * dual_coef_[k].sum()``; where the model is a
        primal iterate (Newton, L-BFGS, SDCA or CoCoA+ inside Catalyst:
        ``route_``), ``dual_coef_`` is the dual point that certifies it, and
        the two agree only as the gap closes.
    primal_, dual_, gap_ : ndarray of shape (1,) or (n_classes,)
        ``P(coef_[k], intercept_[k])``, ``D(dual_coef_[k])`` and their difference per
        problem, certified from the dual variables alone; multiply by
        ``C n`` for LIBLINEAR's objective values.  A multinomial or
        Crammer-Singer fit of ``K > 2`` classes has one problem: ``P(W)``,
        ``D(alpha)`` with ``alpha = dual_coef_`` of shape
        ``(n_classes, n_samples)``.
    converged_ : ndarray of bool of shape (1,) or (n_classes,)
        Whether each problem reached ``gap <= tol * |primal|``.
    n_iter_ : ndarray of int of shape (1,) or (n_classes,)
        Rounds taken per problem.
    route_ : daskdca.routes.Route
        Where the fit ran and why (:mod:`daskdca.routes`); the first problem's with K fits in turn.
    multi_class_ : {"ovr", "multinomial", "crammer_singer"}
        The problem the fit solved: ``"multinomial"`` or ``"crammer_singer"``
        for that one problem of ``K > 2`` classes (``multi_class`` given, or
        what ``"auto"`` resolved to), ``"ovr"`` for the one-vs-rest problems
        and for the binary problem of two classes (whatever ``multi_class``,
        but ``"crammer_singer"``, whose two-class problem is the binary hinge
        one at ``2 C``: ``"crammer_singer"`` then).
    history_ : list of list of HistoryRecord
        Per problem, one ``(round, epochs, seconds, primal, dual, gap)``
        record per gap evaluation; see :func:`daskdca.plot.convergence`.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names (a DataFrame).

    See Also
    --------
    daskdca.fit : The function every fit goes through.
    sklearn.svm.LinearSVC, sklearn.linear_model.LogisticRegression :
        The LIBLINEAR models with the same objectives; :meth:`to_sklearn`
        returns one.

    References
    ----------
    Shalev-Shwartz, Zhang, "Stochastic dual coordinate ascent methods for
    regularized loss minimization", JMLR 2013.  Hsieh et al., "A dual
    coordinate descent method for large-scale linear SVM", ICML 2008.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from daskdca import SDCAClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = SDCAClassifier(loss="logistic", C=1.0).fit(X, y)
    >>> bool(clf.converged_.all()), clf.coef_.shape
    (True, (1, 30))
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions({"hinge", "squared_hinge", "smoothed_hinge", "logistic", "log_loss"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "multi_class": [StrOptions({"auto", "ovr", "multinomial", "crammer_singer"})],
        **_SDCAMixin._common_constraints,
        **_SDCAMixin._penalty_constraints,
        "fit_intercept": ["boolean", StrOptions({"unregularized"})],
    }

    def __init__(self, loss="hinge", C=1.0, *, penalty="l2", l1_ratio=None, solver="auto", tol=1e-6, max_iter=1000,
                 fit_intercept=True, intercept_scaling=1.0, class_weight=None, multi_class="auto", random_state=0,
                 warm_start=False, n_partitions=None, n_jobs=None, client=None, verbose=0, keep_dual=False):
        self.loss = loss
        self.C = C
        self.penalty = penalty
        self.multi_class = multi_class
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_partitions = n_partitions
        self.n_jobs = n_jobs
        self.client = client
        self.verbose = verbose
        self.keep_dual = keep_dual

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit one binary problem (two classes), one per class (one-vs-rest) or one multi-class problem.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data; sparse input is used as CSR, float32 stays float32.
            A dask array is computed into memory first, sparse chunks (e.g.
            AnnData's ``read_elem_lazy``) staying sparse, and a dask DataFrame
            one partition at a time (to fit on the cluster from a store, a
            dask array or a dask DataFrame, call :func:`daskdca.fit` for now).
            A DataFrame's columns must all be numeric (others raise ValueError
            naming them: encode or drop them first); their names are kept as
            ``feature_names_in_``.
        y : array-like, pandas or dask Series, or dask array of shape (n_samples,)
            Class labels (numbers, strings, bools or categories), at least two
            distinct values.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Row weights ``s_i >= 0`` multiplying each row's loss (LIBLINEAR's
            per-instance ``C_i = C s_i``; an integer weight equals repeating
            the row), combined with ``class_weight``.  ``lam = 1/(C n)``
            keeps ``n`` the number of rows.  With a client the weights travel
            with the rows to the workers.

        Returns
        -------
        SDCAClassifier
            The fitted estimator (``self``).
        """
        joint = self._multinomial_solver(self.multi_class)  # an explicit value's refusals come before the data's
        X, y, classes = self._validate_classification(X, y)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        self._class_weights = class_weights(self.class_weight, y, classes, sample_weight)  # for to_sklearn
        if self._unregularized():
            return self._fit_binary_unregularized(X, y, classes, sample_weight)
        resolved = self._resolve_multi_class(classes.shape[0])
        self._crammer_singer = resolved == "crammer_singer"
        # what ran: the joint problem of K > 2 classes, else the binary or one-vs-rest ones (Crammer-Singer's
        # two classes are the binary hinge problem at 2 C, still that problem)
        self.multi_class_ = resolved if classes.shape[0] > 2 or self._crammer_singer else "ovr"
        if self.multi_class_ != "ovr" and classes.shape[0] > 2:
            return self._fit_multinomial(X, y, classes, joint or self._multinomial_solver(self.multi_class_),
                                         sample_weight=sample_weight)
        weights = _problem_weights(y, classes, self.class_weight, sample_weight)
        # the Crammer-Singer problem of two classes at C is the binary hinge problem at 2 C
        # (daskdca.methods.crammer_singer), which LinearSVC(multi_class="crammer_singer") fits too
        C = 2.0 * self.C if self._crammer_singer else self.C
        return self._fit_one_vs_rest(X, y, classes, C, client=self.client, weights=weights,
                                     sample_weight=sample_weight)

    def _fit_binary_unregularized(self, X, y, classes, sample_weight):
        """``fit_intercept="unregularized"``: the binary problem with the intercept out of the penalty
        (:meth:`_fit_unregularized`); sets the fitted attributes as :meth:`_fit_one_vs_rest` does."""
        if classes.shape[0] != 2:
            # scikit-learn's words for a binary-only classifier (its check_classifier_not_supporting_multiclass)
            raise ValueError(f"Only binary classification is supported with fit_intercept='unregularized' (two "
                             f"classes), got {classes.shape[0]} classes; use fit_intercept=True (LIBLINEAR's "
                             "regularised intercept) for more classes, or fit one binary problem per class yourself.")
        weight, = _problem_weights(y, classes, self.class_weight, sample_weight)
        sign = np.where(y == classes[1], 1.0, -1.0)
        fit, route = self._fit_unregularized(X, sign, self.loss, self.C, weight)
        self.classes_ = classes
        self.multi_class_ = "ovr"
        self._crammer_singer = False
        self._multinomial = False
        self.coef_ = fit.coef[np.newaxis, :].copy()
        self.intercept_ = np.array([fit.intercept])
        self.primal_ = np.array([fit.primal])
        self.dual_ = np.array([fit.dual])
        self.gap_ = np.array([fit.gap])
        self.converged_ = np.array([fit.converged])
        self.n_iter_ = np.array([fit.n_iter])
        self.history_ = [[HistoryRecord(*record) for record in fit.history]]
        self.route_ = route
        if self.keep_dual:
            self.dual_coef_ = fit.alpha[np.newaxis, :].copy()
        elif hasattr(self, "dual_coef_"):
            del self.dual_coef_  # from an earlier fit with keep_dual=True
        self._warn_unconverged([f"class {np.asarray(classes[1]).item()!r}"])
        return self

    def _resolve_multi_class(self, n_classes):
        """What ``multi_class`` means for ``n_classes`` classes: the value given, or for ``"auto"``
        ``"multinomial"`` where the softmax problem applies and the solver runs it (``loss="logistic"``,
        ``K > 2``, ``penalty="l2"`` without ``l1_ratio``, and ``solver`` ``"auto"``, ``"sdca"``, ``"cocoa+"``
        or a ``MultinomialSDCA``, ``MultinomialLBFGS`` or ``MultinomialNewton`` object:
        :meth:`_multinomial_solver`'s), else ``"ovr"``."""
        from daskdca.methods import MultinomialLBFGS, MultinomialNewton, MultinomialSDCA

        if self.multi_class != "auto":
            return self.multi_class
        runs_it = isinstance(self.solver, (MultinomialSDCA, MultinomialLBFGS, MultinomialNewton)) or (
            (self.solver is None or isinstance(self.solver, str)) and _solver_name(self.solver) in
            ("auto", "sdca", "cocoa+"))
        if (n_classes > 2 and _loss_name(self.loss) == "logistic" and self.penalty == "l2"
                and self.l1_ratio is None and runs_it):
            return "multinomial"
        return "ovr"

    def _multinomial_solver(self, kind):
        """``(method, n_partitions)`` that fits ``multi_class`` ``kind``, ``"multinomial"`` or
        ``"crammer_singer"`` (None for ``"ovr"`` and ``"auto"``, resolved later); a ValueError names a
        combination it cannot fit and the fix.  The method is None for ``"multinomial"`` with
        ``solver="auto"``: :meth:`_fit_multinomial` picks it by
        :func:`daskdca.routes.choose_multinomial_route` once the data is known."""
        from daskdca.methods import CrammerSingerSVM, MultinomialLBFGS, MultinomialNewton, MultinomialSDCA

        if kind in ("ovr", "auto"):
            return None
        method_class, loss, what = {
            "multinomial": (MultinomialSDCA, "logistic", "the softmax (multinomial logistic) loss"),
            "crammer_singer": (CrammerSingerSVM, "hinge", "the Crammer-Singer multi-class hinge loss"),
        }[kind]
        if _loss_name(self.loss) != loss:
            raise ValueError(f"multi_class={kind!r} is {what} and needs loss={loss!r}, got loss={self.loss!r}; "
                             f"use loss={loss!r} or multi_class='ovr'.")
        if self.penalty != "l2":
            raise ValueError(f"multi_class={kind!r} is solved and certified with penalty='l2' only, got "
                             f"penalty={self.penalty!r}; use penalty='l2' or multi_class='ovr'.")
        if isinstance(self.solver, method_class) or (kind == "multinomial" and isinstance(
                self.solver, (MultinomialLBFGS, MultinomialNewton))):
            return self.solver, self.n_partitions
        name = _solver_name(self.solver)
        if name == "auto" and kind == "multinomial":
            return None, self.n_partitions  # the route's choice (_fit_multinomial)
        if name in ("auto", "sdca"):
            return method_class(), self.n_partitions
        if name == "cocoa+":  # CoCoA+ rounds, on 2 partitions in memory as for solver="cocoa+"
            return method_class(), (2 if self.n_partitions is None and self.client is None else self.n_partitions)
        cls = method_class.__name__
        raise ValueError(f"multi_class={kind!r} runs daskdca.{cls} (solver='auto' or 'sdca': serial "
                         f"SDCA; 'cocoa+': CoCoA+ rounds; or a {cls} object), got solver={self.solver!r}; "
                         "use one of those, or multi_class='ovr'.")

    def _fit_multinomial(self, X, y, classes, joint, *, sample_weight):
        """The multinomial or Crammer-Singer problem of ``K > 2`` classes at ``lam = 1 / (C n)`` (one
        ``daskdca.fit``), with the synthetic intercept column; sets the fitted attributes, one entry per
        problem (one problem)."""
        from daskdca.methods import REGISTRY
        from daskdca.methods.multinomial_newton import NEWTON_MAX_VARIABLES
        from daskdca.routes import choose_multinomial_route

        method, n_partitions = joint
        n = X.shape[0]
        lam = _lam_of(self.C, n)
        X = self._with_bias(canonical_csr(X))
        start, index, weight = self._multinomial_start(X, y, classes, sample_weight)
        route = None
        if method is None:  # solver="auto": primal Newton or L-BFGS where few features make them win, else SDCA
            route = choose_multinomial_route(on_cluster=self.client is not None, n=n, d=X.shape[1], lam=lam,
                                             n_classes=classes.shape[0], squared_row_nnz=_squared_row_nnz(X),
                                             warm_start=start is not None, n_partitions=n_partitions)
            method = REGISTRY[route.solver]()
        model = self._dca_fit(X, y, self.loss, lam, _seed(self.random_state), client=self.client, dual_init=start,
                              sample_weight=sample_weight, class_weight=self.class_weight, solver=method,
                              n_partitions=n_partitions)
        self.classes_ = classes
        W = np.asarray(model.coef_, dtype=np.float64)
        if self.fit_intercept:
            self.coef_, self.intercept_ = W[:, :-1].copy(), self.intercept_scaling * W[:, -1]
        else:
            self.coef_, self.intercept_ = W.copy(), np.zeros(classes.shape[0])
        self.primal_ = np.array([model.primal_], dtype=np.float64)
        self.dual_ = np.array([model.dual_], dtype=np.float64)
        self.gap_ = np.array([model.gap_], dtype=np.float64)
        self.converged_ = np.array([bool(model.converged_)])
        self.n_iter_ = np.array([int(model.n_rounds_)])
        self.history_ = [list(model.history_)]
        # where it ran (the fit's), and why this method (the multinomial route's reason, for solver="auto")
        self.route_ = model.route_ if route is None else model.route_._replace(reason=route.reason)
        if self.keep_dual:
            self.dual_coef_ = np.asarray(model.dual_coef_, dtype=np.float64)
        elif hasattr(self, "dual_coef_"):
            del self.dual_coef_  # from an earlier fit with keep_dual=True
        if hasattr(self, "_warm_duals"):
            del self._warm_duals  # the one-vs-rest duals are no start for the multinomial problem
        if self.warm_start and self.multi_class_ == "multinomial":
            self._warm_multinomial = (X.shape, np.array(classes, copy=True), index, weight,
                                      np.asarray(model.dual_coef_, dtype=np.float64))
        elif hasattr(self, "_warm_multinomial"):
            del self._warm_multinomial
        self._multinomial = self.multi_class_ == "multinomial"  # softmax probabilities
        fix = "increase max_iter or tol"
        # L-BFGS slows where features differ in scale; Newton's steps do not
        if self.route_.solver == "multinomial_lbfgs" and classes.shape[0] * X.shape[1] <= NEWTON_MAX_VARIABLES:
            fix += (", or pass solver=daskdca.methods.MultinomialNewton(), whose Newton steps on all "
                    f"{classes.shape[0] * X.shape[1]} weights certify in tens of rounds where L-BFGS stalls")
        self._warn_unconverged([f"the {self.multi_class_} problem"], fix)
        return self

    def _multinomial_start(self, X, y, classes, sample_weight):
        """``(dual_init, class_index, row_weight)`` of a multinomial fit: the previous multinomial fit's duals
        when ``warm_start`` and X's shape (the synthetic intercept feature counted) and the classes are
        unchanged, else None (a cold start; always for ``multi_class="crammer_singer"``).

        The previous duals are mapped onto the current labels and row
        weights ``s_i`` (``sample_weight`` times the class weight) through
        each row's distribution ``beta_i = e_{y_i} - alpha_i / s_i``, which
        stays: ``alpha_i = s_i (e_{y_i} - beta_i)`` with the current
        ``y_i`` and ``s_i`` (a row of old weight 0 starts cold, at
        ``alpha_i = 0``).  On the same labels and weights the duals are
        reused as they are.
        """
        index = np.searchsorted(classes, y).astype(np.intp)
        per_class = class_weights(self.class_weight, y, classes, sample_weight)
        weight = sample_weight
        if per_class is not None:
            weight = (1.0 if sample_weight is None else sample_weight) * per_class[index]
        weight = None if weight is None else np.asarray(weight, dtype=np.float64)
        previous = getattr(self, "_warm_multinomial", None)
        if not self.warm_start or self.multi_class_ != "multinomial" or previous is None:
            return None, index, weight
        shape, old_classes, old_index, old_weight, alpha = previous
        if shape != X.shape or classes.shape != old_classes.shape or not np.array_equal(classes, old_classes):
            return None, index, weight
        same_weight = (weight is None) == (old_weight is None) and (weight is None or np.array_equal(weight,
                                                                                                     old_weight))
        if same_weight and np.array_equal(index, old_index):
            return alpha, index, weight
        n, K = X.shape[0], classes.shape[0]
        s_old = np.ones(n) if old_weight is None else old_weight
        rows = np.arange(n)
        beta = -alpha / np.where(s_old > 0, s_old, 1.0)
        beta[old_index, rows] += 1.0
        beta = np.clip(beta, 0.0, 1.0)
        beta[:, s_old == 0] = np.eye(K)[:, index[s_old == 0]]  # no distribution kept: alpha_i = 0
        beta /= beta.sum(axis=0)
        start = -beta
        start[index, rows] += 1.0
        return start * (1.0 if weight is None else weight), index, weight

    def _validate_classification(self, X, y):
        _refuse_store(self, X)
        if y is None and (_is_pandas_frame(X) or _is_dask_frame(X)):
            _refuse_missing_labels(X)  # a DataFrame with its label column left in: name the column
        X, y = validate_data(self, _in_memory(X), labels_in_memory(y), accept_sparse="csr",
                             dtype=[np.float64, np.float32])
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in y, but y contains only "
                f"one class: {classes[0]!r}."
            )
        return X, y, classes

    def _fits_classes_together(self):
        """Whether the one-vs-rest problems are fitted together, with a solver that can
        (``Capabilities.multi_class``): each problem stops at its own round with the bits of its binary fit
        either way (:mod:`daskdca.methods.multiclass`), and together they share the rounds and the block reads
        on a cluster and the fit's threads in this process (benchmarks/RESULTS.md, "One-vs-rest: the problems
        on the fit's threads")."""
        from daskdca.methods import REGISTRY

        if self.penalty != "l2":  # the one-vs-rest plan certifies the L2 problem only
            return False
        if self.solver is not None and not isinstance(self.solver, str):
            return self.solver.capabilities.multi_class
        # "auto" runs serial SDCA or CoCoA+, which fit the problems together alike
        name = "sdca" if self.solver in (None, "auto") else self.solver
        return REGISTRY[name].capabilities.multi_class

    def _fit_one_vs_rest(self, X, y, classes, C, *, client, weights, sample_weight):
        """The binary problem (two classes) or one per class at ``lam = 1 / (C n)``, with each problem's row
        weights (:func:`_problem_weights`); sets the fitted attributes.

        More than two classes are one ``daskdca.fit`` of the K problems
        together when the solver can (each problem stops at its own round
        with the bits of its binary fit), else K fits in turn
        (:meth:`_fits_classes_together`).
        """
        n = X.shape[0]
        lam = _lam_of(C, n)
        X = self._with_bias(canonical_csr(X))
        seed = _seed(self.random_state)
        positives = classes[1:] if classes.shape[0] == 2 else classes
        signs = [np.where(y == label, 1.0, -1.0) for label in positives]
        starts = self._warm_starts(X, classes, signs, weights)
        if classes.shape[0] > 2 and self._fits_classes_together():
            # the K problems in one fit, one pass per partition per round (daskdca.methods.multiclass)
            start = None if any(a is None for a in starts) else np.stack(starts)
            model = self._dca_fit(X, y, self.loss, lam, seed, client=client, dual_init=start,
                                  sample_weight=sample_weight, class_weight=self.class_weight)
            models = [_ProblemResult.of(model, k, self.tol) for k in range(classes.shape[0])]
        else:
            models = [self._dca_fit(X, sign, self.loss, lam, seed, client=client, dual_init=start,
                                    sample_weight=weight)
                      for sign, start, weight in zip(signs, starts, weights)]

        self.classes_ = classes
        self._multinomial = False
        parts = [self._split_bias(m.coef_) for m in models]
        self.coef_ = np.stack([coef for coef, _ in parts])
        self.intercept_ = np.array([intercept for _, intercept in parts])
        self.primal_ = np.array([m.primal_ for m in models], dtype=np.float64)
        self.dual_ = np.array([m.dual_ for m in models], dtype=np.float64)
        self.gap_ = np.array([m.gap_ for m in models], dtype=np.float64)
        self.converged_ = np.array([bool(m.converged_) for m in models])
        self.n_iter_ = np.array([int(m.n_rounds_) for m in models])
        self.history_ = [list(m.history_) for m in models]
        self.route_ = models[0].route_
        if self.keep_dual:
            self.dual_coef_ = np.stack([np.asarray(m.dual_coef_, dtype=np.float64) for m in models])
        elif hasattr(self, "dual_coef_"):
            del self.dual_coef_  # from an earlier fit with keep_dual=True
        self._keep_warm_duals(X, classes, models)
        self._warn_unconverged([f"class {np.asarray(label).item()!r}" for label in positives])
        return self

    def decision_function(self, X):
        """Signed scores ``X @ coef_.T + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, DataFrame} of shape (n_samples, n_features), or a store
            A dask array (chunked along rows only) gives a lazy dask array,
            a dask DataFrame a lazy dask Series (a DataFrame with a column
            per class for 2-D outputs) on its partitions and index.
            A daskdca store (a path or URL string, an ``os.PathLike``, or a
            :class:`~daskdca.store.CSRStore`, e.g. opened with
            ``storage_options``) is read one verified block at a time and
            gives a NumPy array in the store's row order (for a shuffled
            store, ``store.row_permutation`` maps it back).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The scores; for two classes, positive scores mean ``classes_[1]``.
        """
        return prediction_output(self._predictor(), X, "decision")

    def predict(self, X):
        """Class labels: the sign of the score for two classes, its argmax for more.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, DataFrame} of shape (n_samples, n_features), or a store
            A dask array (chunked along rows only) gives a lazy dask array,
            a dask DataFrame a lazy dask Series (a DataFrame with a column
            per class for 2-D outputs) on its partitions and index.
            A daskdca store (a path or URL string, an ``os.PathLike``, or a
            :class:`~daskdca.store.CSRStore`, e.g. opened with
            ``storage_options``) is read one verified block at a time and
            gives a NumPy array in the store's row order (for a shuffled
            store, ``store.row_permutation`` maps it back).

        Returns
        -------
        ndarray of shape (n_samples,)
            The predictions.
        """
        return prediction_output(self._predictor(), X, "predict")

    @available_if(_check_logistic)
    def predict_proba(self, X):
        """Class probabilities (``loss="logistic"`` only).

        Two classes: ``P(classes_[1]) = 1 / (1 + exp(-score))``.  More: the
        one-vs-rest probabilities of each class, normalised to sum to one per
        row, as scikit-learn's one-vs-rest logistic regression does; after a
        multinomial fit (``multi_class_ == "multinomial"``: the default for
        more than two classes, or ``multi_class="multinomial"``), the softmax
        of the scores, the model's own probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, DataFrame} of shape (n_samples, n_features), or a store
            A dask array (chunked along rows only) gives a lazy dask array,
            a dask DataFrame a lazy dask Series (a DataFrame with a column
            per class for 2-D outputs) on its partitions and index.
            A daskdca store (a path or URL string, an ``os.PathLike``, or a
            :class:`~daskdca.store.CSRStore`, e.g. opened with
            ``storage_options``) is read one verified block at a time and
            gives a NumPy array in the store's row order (for a shuffled
            store, ``store.row_permutation`` maps it back).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The probability of each class, in the order of ``classes_``.
        """
        return prediction_output(self._predictor(), X, "proba")

    @available_if(_check_logistic)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` (``loss="logistic"`` only).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, DataFrame} of shape (n_samples, n_features), or a store
            As in :meth:`predict_proba`.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The logarithms of the probabilities.
        """
        return np.log(self.predict_proba(X))  # lazy for a dask array too

    def densify(self):
        """Make ``coef_`` a NumPy array again after :meth:`sparsify` (it is one after every fit).

        As scikit-learn's ``LinearSVC.densify``.

        Returns
        -------
        self
            The fitted estimator.
        """
        check_is_fitted(self)
        if sp.issparse(self.coef_):
            self.coef_ = self.coef_.toarray()
        return self

    def sparsify(self):
        """Store ``coef_`` as a SciPy CSR matrix, for a model with mostly zero weights (an L1 penalty's).

        As scikit-learn's ``LinearSVC.sparsify``: a model of K problems
        and d features keeps its non-zero weights only, and every prediction
        method, :meth:`score` and :meth:`to_sklearn` take it as it is.  A
        fit (with ``warm_start`` too) sets a NumPy array again; so does
        :meth:`densify`.

        Returns
        -------
        self
            The fitted estimator.
        """
        check_is_fitted(self)
        self.coef_ = sp.csr_matrix(self.coef_)
        return self

    def to_sklearn(self):
        """The equivalent fitted scikit-learn estimator.

        ``LinearSVC`` for hinge and squared hinge (with
        ``multi_class="crammer_singer"`` after a Crammer-Singer fit), ``LogisticRegression``
        (liblinear) for logistic with two classes, and for more classes a
        ``OneVsRestClassifier`` of binary ``LogisticRegression`` (scikit-learn's
        own multi-class logistic regression is multinomial, a different
        model); after a multinomial fit (``multi_class_ == "multinomial"``,
        the default for more than two classes), a
        multinomial ``LogisticRegression`` (lbfgs; its intercept is not
        penalised, so refitting it changes the intercept a little).  The hyperparameters are those that fit the same objective
        (``C``, and ``fit_intercept`` and ``intercept_scaling`` as here: LIBLINEAR
        fits the same regularised intercept; ``class_weight`` as the fitted
        weights of each class, a dict, ``"balanced"`` included, and each
        one-vs-rest logistic problem ``{0: 1, 1: w_k}``, which a refit of the
        ``OneVsRestClassifier`` cannot keep: it warns); ``coef_``, ``intercept_`` and
        ``classes_`` are copied, so predictions are identical.  With
        ``penalty="l1"``: ``LinearSVC(penalty="l1", dual=False)`` (squared
        hinge) or ``LogisticRegression(penalty="l1", solver="liblinear")``;
        with ``penalty="elasticnet"`` (logistic):
        ``LogisticRegression(penalty="elasticnet", solver="saga", l1_ratio)``,
        whose intercept is not penalised.  After ``fit_intercept="unregularized"``
        (logistic): ``LogisticRegression(C)`` with its default L-BFGS solver,
        which solves the same problem; the other losses raise.

        Returns
        -------
        LinearSVC, LogisticRegression or OneVsRestClassifier
            The fitted scikit-learn estimator.

        Raises
        ------
        ValueError
            For ``loss="smoothed_hinge"``, which no scikit-learn estimator fits,
            and for the L1 hinge or elastic-net SVMs (neither has one).
        """
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.preprocessing import LabelBinarizer
        from sklearn.svm import LinearSVC

        check_is_fitted(self)
        seed = self.random_state if isinstance(self.random_state, Integral) else None
        penalty = getattr(self, "penalty", "l2")
        unregularized = self._unregularized()
        if unregularized and _loss_name(self.loss) != "logistic":
            raise ValueError(f"No scikit-learn estimator fits loss={self.loss!r} with an unregularised intercept "
                             "(LinearSVC penalises it); use coef_ and intercept_, which predict as "
                             "X @ coef_.T + intercept_.")
        if _loss_name(self.loss) in ("hinge", "squared_hinge"):
            if penalty == "elasticnet" or (penalty == "l1" and _loss_name(self.loss) == "hinge"):
                raise ValueError(
                    f"No scikit-learn estimator fits loss={self.loss!r} with penalty={penalty!r} (LinearSVC's L1 "
                    "penalty takes loss='squared_hinge' only, and it has no elastic net); use coef_ and "
                    "intercept_, which predict as X @ coef_.T + intercept_.")
            multi_class = "crammer_singer" if getattr(self, "_crammer_singer", False) else "ovr"
            l1 = dict(penalty="l1", dual=False) if penalty == "l1" else {}  # LIBLINEAR's primal L1 squared-hinge SVM
            est = LinearSVC(loss=_loss_name(self.loss), C=self._fitted_C(), fit_intercept=self.fit_intercept,
                            intercept_scaling=self.intercept_scaling, tol=self.tol, max_iter=self.max_iter,
                            random_state=seed, multi_class=multi_class, class_weight=self._sklearn_class_weight(),
                            **l1)
            est.n_iter_ = int(self.n_iter_.max())
            return self._copy_fitted(est, self.classes_, self.coef_, self.intercept_)
        if _loss_name(self.loss) != "logistic":
            raise ValueError(
                f"No scikit-learn estimator fits loss={self.loss!r}; to_sklearn supports 'hinge', "
                "'squared_hinge' (LinearSVC) and 'logistic' (LogisticRegression)."
            )

        if getattr(self, "_multinomial", False):
            est = LogisticRegression(C=self._fitted_C(), fit_intercept=self.fit_intercept, tol=self.tol,
                                     max_iter=self.max_iter, random_state=seed,
                                     class_weight=self._sklearn_class_weight())
            est.n_iter_ = np.array([int(self.n_iter_[0])])
            return self._copy_fitted(est, self.classes_, self.coef_, self.intercept_)

        def make_logistic(class_weight):
            if unregularized:  # L-BFGS leaves the intercept out of the penalty: the same problem
                return LogisticRegression(C=self._fitted_C(), fit_intercept=True, tol=self.tol, max_iter=self.max_iter,
                                          random_state=seed, class_weight=class_weight)
            if penalty == "elasticnet":  # saga: the same elastic net, but its intercept is not penalised
                return LogisticRegression(C=self._fitted_C(), fit_intercept=self.fit_intercept,
                                          **_logistic_penalty(penalty, self.l1_ratio), solver="saga", tol=self.tol,
                                          max_iter=self.max_iter, random_state=seed, class_weight=class_weight)
            return LogisticRegression(C=self._fitted_C(), fit_intercept=self.fit_intercept,
                                      **_logistic_penalty(penalty, None), intercept_scaling=self.intercept_scaling,
                                      solver="liblinear", tol=self.tol, max_iter=self.max_iter, random_state=seed,
                                      class_weight=class_weight)

        def logistic(classes, coef, intercept, n_iter, class_weight):
            est = make_logistic(class_weight)
            est.n_iter_ = np.array([n_iter])
            return self._copy_fitted(est, classes, coef, intercept)

        if self.classes_.shape[0] == 2:
            return logistic(self.classes_, self.coef_, self.intercept_, self.n_iter_[0], self._sklearn_class_weight())
        if getattr(self, "_class_weights", None) is not None and np.ptp(self._class_weights) > 0:
            warn_at_caller("to_sklearn: each binary LogisticRegression in estimators_ holds its problem's class "
                           "weights, but a OneVsRestClassifier gives every problem the one estimator it "
                           "clones, so refitting the returned model would not weigh the classes as this fit "
                           "did; use its fitted estimators_ as they are.", UserWarning)
        ovr = OneVsRestClassifier(make_logistic(None))
        ovr.estimators_ = [logistic(np.array([0, 1]), self.coef_[k:k + 1], self.intercept_[k:k + 1], self.n_iter_[k],
                                    self._sklearn_class_weight(k)) for k in range(self.classes_.shape[0])]
        ovr.label_binarizer_ = LabelBinarizer(sparse_output=True).fit(self.classes_)
        ovr.classes_ = ovr.label_binarizer_.classes_
        self._copy_fitted(ovr, None, None, None)
        return ovr

    def _sklearn_class_weight(self, k=None):
        """The fitted class weights as scikit-learn's ``class_weight`` dict (None without them): ``{label:
        weight}`` for every class, or for the binary problem ``k`` of a one-vs-rest fit ``{0: 1, 1: w_k}``
        (its rows of class ``k`` weigh ``w_k``, the rest 1: :func:`_problem_weights`).  Explicit weights, so
        that ``"balanced"`` keeps the weights of the rows it was fitted on."""
        per_class = getattr(self, "_class_weights", None)
        if per_class is None:
            return None
        if k is not None:
            return {0: 1.0, 1: float(per_class[k])}
        return {label: float(weight) for label, weight in zip(self.classes_.tolist(), per_class)}

    def _fitted_C(self):
        """The ``C`` of the fitted model (``C_`` for the cross-validated estimator)."""
        return self.C

    def _copy_fitted(self, est, classes, coef, intercept):
        if classes is not None:
            est.classes_ = np.array(classes, copy=True)
            est.coef_ = coef.copy() if sp.issparse(coef) else np.array(coef, dtype=np.float64, copy=True)
            est.intercept_ = np.array(intercept, dtype=np.float64, copy=True)
        est.n_features_in_ = self.n_features_in_
        if hasattr(self, "feature_names_in_"):
            est.feature_names_in_ = self.feature_names_in_.copy()
        return est


@_with_shared_parameters
class SDCAClassifierCV(SDCAClassifier):
    """Linear classifier by SDCA with ``C`` chosen by cross-validation along warm-started regularisation paths.

    For labels ``y_i`` in {-1, +1} and each ``C`` of the grid it solves, on
    every training fold of ``n`` rows,

    ``min_{w,b}  P(w, b) = 1/n sum_i phi(y_i (x_i.w + b)) + lam/2 (||w||^2 + (b/s)^2)``  with  ``lam = 1 / (C n)``

    (with ``penalty="l1"`` or ``"elasticnet"`` that penalty of ``(w, b/s)``
    in place of the L2 one, as :class:`SDCAClassifier`; by default
    ``fit_intercept=True``: LIBLINEAR's regularised intercept
    ``b = s w_b``, ``s = intercept_scaling``; ``b = 0`` with
    ``fit_intercept=False``; with ``K > 2`` classes, ``K`` one-vs-rest
    problems, class ``k`` against the rest, for every loss: there is no
    ``multi_class``, and no multinomial path), by :func:`daskdca.path`: from
    the smallest ``C`` up, each fit starting at the previous one's duals
    and stopping on its own certified gap ``P - D <= tol * |P|``.  It
    scores every fold's models on the held-out rows, picks the ``C`` with
    the best mean score (the smallest such ``C`` on ties, as
    ``GridSearchCV`` over an ascending grid does) and refits on all rows
    with it, as :class:`SDCAClassifier` (``C=C_``, ``multi_class="ovr"``)
    would.  One ``C`` serves
    every class, unlike :class:`~sklearn.linear_model.LogisticRegressionCV`,
    which picks one per class.  X is in memory; with a ``client`` every fit
    runs on the cluster.

    Parameters
    ----------
    Cs : int or array-like of float, default=10
        The grid of ``C`` (LIBLINEAR's, ``> 0``), or for an int ``k``,
        ``np.logspace(-4, 4, k)`` (as ``LogisticRegressionCV``).
    cv : int, cross-validation generator or iterable, default=5
        As in scikit-learn (an int gives ``StratifiedKFold(cv)``), resolved by
        :func:`sklearn.model_selection.check_cv`.
    scoring : str, callable or None, default=None
        A scikit-learn scorer name or ``scorer(estimator, X, y)``; None scores
        by accuracy (:meth:`score`).
    {classifier_loss}
    {penalty}
        Every fit along the paths takes it (an L1 or elastic-net path over
        ``C``, warm-started as the L2 one), and so does the refit.
    {l1_ratio}
    solver : {"auto", "sdca", "minibatch_sdca", "cocoa+"}, method object or None, default="auto"
        The solver of every fit along the paths and of the refit (see
        :func:`daskdca.fit`); it must support warm starts
        (``capabilities.warm_start``: the four names do).  ``"auto"`` (or
        None) picks the route and the method of each fit as
        :func:`daskdca.fit` does (a warm-started fit runs a dual method, never
        the primal Newton method); the refit's ``route_`` says which and why.
        A name or a method object is run as given; ``"sdca"`` is serial and
        runs in this process only (no ``client``).
    {tol}
    max_iter : int, default=1000
        The most passes over the data of each fit, along the paths and in
        the refit (:func:`daskdca.path`'s and :func:`daskdca.fit`'s
        ``max_epochs``), whatever the solver.  Fits along the paths that stop there are
        counted in one ``ConvergenceWarning``; a refit that does warns with
        the relative gap it reached.
    {fit_intercept}
    {intercept_scaling}
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes' losses, as in ``LinearSVC``: a dict
        ``{label: weight}`` (missing labels weigh 1), or ``"balanced"``,
        ``n_samples / (n_classes * count(label))`` (counts weighted by
        ``sample_weight``), computed on each training fold's rows for the
        paths and on all rows for the refit.  With two classes each row's
        loss is multiplied by its class's weight; with ``K > 2``, problem
        ``k`` weighs class ``k``'s rows by its weight and the rest by 1
        (LIBLINEAR's one-vs-rest).
    random_state : int, RandomState instance or None, default=0
        Seed of the fits' random streams (:func:`daskdca.fit`'s
        ``random_state``).  An int serves every fit along the paths and the
        refit; a RandomState instance gives one int, drawn from it at each
        call to ``fit``, to all of them; None lets each path draw one seed
        for all its fits, and each :func:`daskdca.fit` call of the refit its
        own.
    {n_partitions}
    n_jobs : int or None, default=None
        The paths (one per training fold and one-vs-rest problem) run in
        parallel by joblib on this many workers, as scikit-learn's CV
        estimators do: None is 1 (unless in a
        :func:`joblib.parallel_config` context), -1 all the cores.
        Processes by default, threads with a ``client`` (they only wait for
        the cluster).  The results are the same bits for every ``n_jobs``:
        each path runs exactly as it would alone, and the scores and the
        refit run in this process.
    client : distributed.Client, str or None, default=None
        Run every fit along the paths and the refit on this Dask cluster: a
        ``Client``, or a scheduler address such as ``"tcp://host:8786"``,
        connected for each :func:`daskdca.fit` call and closed after.  Each
        training fold (all rows for the refit) travels to the workers inside
        its fits' tasks.  None fits in this process, even where a default
        client exists.  A clone shares the client; an estimator whose
        ``client`` is not None cannot be pickled (set ``client=None`` first).
    {verbose}
    {keep_dual}

    Attributes
    ----------
    Cs_ : ndarray of shape (n_Cs,)
        The grid, ascending.
    C_ : float
        The chosen ``C``.
    scores_ : ndarray of shape (n_folds, n_Cs)
        The score of each fold's model at each ``C``.
    best_score_ : float
        The mean score over the folds at ``C_``.
    classes_ : ndarray of shape (n_classes,)
        The sorted class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        ``w`` of each problem of the refit on all rows at ``C_``: one row for
        two classes (for ``classes_[1]``), one row per class otherwise.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``intercept_scaling * w_b`` with ``fit_intercept``, else zeros.
    dual_coef_ : ndarray of shape (1, n_samples) or (n_classes, n_samples)
        Only with ``keep_dual=True``: the refit's ``alpha`` of each problem,
        with ``coef_[k] = C_ * X.T @ dual_coef_[k]`` and, with
        ``fit_intercept``, ``intercept_[k] = C_ * intercept_scaling**2 *
        dual_coef_[k].sum()`` where the refit ran plain SDCA (as
        :class:`SDCAClassifier` says).
    primal_, dual_, gap_ : ndarray of shape (1,) or (n_classes,)
        The refit's ``P(coef_[k], intercept_[k])``, ``D(dual_coef_[k])`` and
        their difference per problem, certified from the dual variables
        alone.
    converged_ : ndarray of bool of shape (1,) or (n_classes,)
        Whether each problem of the refit reached ``gap <= tol * |primal|``.
    n_iter_ : ndarray of int of shape (1,) or (n_classes,)
        Rounds the refit took per problem.
    route_ : daskdca.routes.Route
        Where the refit ran and why (:mod:`daskdca.routes`); the first
        problem's when the problems are fitted one after another.
    history_ : list of list of HistoryRecord
        The refit's records per problem, one ``(round, epochs, seconds,
        primal, dual, gap)`` per gap evaluation.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names (a DataFrame).

    See Also
    --------
    daskdca.path : The warm-started path each fold runs.
    SDCAClassifier : The same model at one given ``C`` (the refit's).
    sklearn.linear_model.LogisticRegressionCV : The same idea for logistic regression, one ``C`` per class.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from daskdca import SDCAClassifierCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = SDCAClassifierCV(Cs=[0.01, 0.1, 1.0], cv=3, loss="logistic").fit(StandardScaler().fit_transform(X), y)
    >>> float(clf.C_) in (0.01, 0.1, 1.0), clf.scores_.shape
    (True, (3, 3))
    """

    _parameter_constraints: dict = {
        **{k: v for k, v in SDCAClassifier._parameter_constraints.items()
           if k not in ("C", "warm_start", "multi_class")},
        "fit_intercept": ["boolean"],  # the paths fit LIBLINEAR's intercept (daskdca.path) or none
        "Cs": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "n_jobs": [Integral, None],
    }

    # the paths warm-start by construction: no warm_start parameter; their binary problems are one-vs-rest
    warm_start = False
    multi_class = "ovr"

    def _fit_threads(self):
        """None: ``n_jobs`` runs the paths here, and each fit takes the cores its process may use."""
        return None

    def __init__(self, Cs=10, *, cv=5, scoring=None, loss="hinge", penalty="l2", l1_ratio=None, solver="auto",
                 tol=1e-6, max_iter=1000, fit_intercept=True, intercept_scaling=1.0, class_weight=None, random_state=0,
                 n_partitions=None, n_jobs=None, client=None, verbose=0, keep_dual=False):
        self.Cs = Cs
        self.cv = cv
        self.scoring = scoring
        self.loss = loss
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.n_partitions = n_partitions
        self.n_jobs = n_jobs
        self.client = client
        self.verbose = verbose
        self.keep_dual = keep_dual

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Cross-validate ``C`` along warm-started paths, then refit on all rows with the best.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (in memory).
        y : array-like of shape (n_samples,)
            Class labels, at least two distinct values.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Row weights ``s_i >= 0`` multiplying each row's loss in every fit
            (LIBLINEAR's per-instance ``C_i = C s_i``; the training folds'
            rows keep theirs), combined with ``class_weight``; the held-out
            scores are unweighted.

        Returns
        -------
        SDCAClassifierCV
            The fitted estimator (``self``).
        """
        X, y, classes = self._validate_classification(X, y)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        Cs = np.logspace(-4, 4, self.Cs) if isinstance(self.Cs, Integral) else _check_Cs(self.Cs)
        folds = list(check_cv(self.cv, y, classifier=True).split(X, y))
        for C in Cs:  # every fit's lam = 1/(C n), from the smallest training fold to all rows, named as C
            for n in {min(len(train) for train, _ in folds), X.shape[0]}:
                _lam_of(C, n)
        scorer = check_scoring(self, scoring=self.scoring)
        solver, l1_ratio = self._fit_solver()  # the L2, elastic-net or L1 problem of every path (checked here)
        X = canonical_csr(X)
        seed = _seed(self.random_state)
        scores = np.empty((len(folds), Cs.shape[0]))
        positives = classes[1:] if classes.shape[0] == 2 else classes
        problems = []  # (training rows, +1/-1 labels, row weights): one path per training fold and problem
        for f, (train, test) in enumerate(folds):
            y_train = y[train]
            present = np.unique(y_train)
            if present.shape[0] != classes.shape[0]:
                raise ValueError(
                    f"The training rows of fold {f} hold {present.shape[0]} of the {classes.shape[0]} classes; "
                    "every class needs rows in every training fold. Use fewer folds (cv) or a stratified split.")
            weights = _problem_weights(y_train, classes, self.class_weight,
                                       None if sample_weight is None else sample_weight[train])
            problems += [(train, y_train == label, weight) for label, weight in zip(positives, weights)]
        # every path runs as it would alone (its own data, seed and streams), so any n_jobs gives the same bits;
        # with a client the jobs only wait for the cluster, so threads
        with warnings.catch_warnings():  # sklearn's Parallel carries this filter into its workers
            warnings.filterwarnings("ignore", message=_FIT_WARNING, category=ConvergenceWarning)
            paths = Parallel(n_jobs=self.n_jobs, prefer=None if self.client is None else "threads")(
                delayed(path)(X[train], labels, Cs, loss=self.loss, solver=solver, tol=self.tol,
                              max_epochs=self.max_iter, fit_intercept=self.fit_intercept,
                              intercept_scaling=self.intercept_scaling, n_partitions=self.n_partitions,
                              random_state=seed, verbose=int(self.verbose), sample_weight=weight,
                              client=self.client, l1_ratio=l1_ratio)
                for train, labels, weight in problems)
        unconverged = sum(int((~p.converged).sum()) for p in paths)
        for f, (_, test) in enumerate(folds):
            fold = paths[f * positives.shape[0]:(f + 1) * positives.shape[0]]
            for c in range(Cs.shape[0]):
                model = self._fold_model(classes, [p.coef[c] for p in fold], [p.intercept[c] for p in fold])
                scores[f, c] = scorer(model, X[test], y[test])
        if unconverged:
            warn_at_caller(
                f"{unconverged} of the {len(folds) * Cs.shape[0] * len(positives)} cross-validation fits reached "
                f"max_iter={self.max_iter} passes over the data before the relative duality gap fell to "
                f"tol={self.tol:g}; increase max_iter or tol.", ConvergenceWarning)
        mean = scores.mean(axis=0)
        best = int(np.argmax(mean))  # the first (smallest C) of equal means
        self.Cs_, self.scores_ = Cs, scores
        self.C_, self.best_score_ = float(Cs[best]), float(mean[best])
        self._class_weights = class_weights(self.class_weight, y, classes, sample_weight)  # for to_sklearn
        return self._fit_one_vs_rest(X, y, classes, self.C_, client=self.client,
                                     weights=_problem_weights(y, classes, self.class_weight, sample_weight),
                                     sample_weight=sample_weight)

    def _fold_model(self, classes, coefs, intercepts):
        """A fitted :class:`SDCAClassifier` holding one fold's solution at one ``C``, for the scorer."""
        model = SDCAClassifier(loss=self.loss, fit_intercept=self.fit_intercept,
                               intercept_scaling=self.intercept_scaling)
        model.classes_ = classes
        model.coef_ = np.stack(coefs)
        model.intercept_ = np.array(intercepts, dtype=np.float64)
        model.n_features_in_ = self.n_features_in_
        return model

    def _fitted_C(self):
        return self.C_


@_with_shared_parameters
class SDCARegressor(_SDCAMixin, RegressorMixin, BaseEstimator):
    """Ridge, linear SVR or Huber regression by stochastic dual coordinate ascent, certified by the duality gap.

    It solves, with the default ``fit_intercept=True`` and ``s = intercept_scaling``,

    ``min_{w,b}  P(w, b) = 1/n sum_i h(x_i.w + b - y_i) + lam/2 (||w||^2 + (b/s)^2)``  with  ``lam = 1 / (C n)``,

    where ``h(r)`` is ``r^2 / 2`` (``loss="squared"``), ``max(0, |r| -
    epsilon)`` (``"epsilon_insensitive"``), ``max(0, |r| - epsilon)^2``
    (``"squared_epsilon_insensitive"``) or Huber's ``r^2 / 2`` for ``|r| <=
    delta`` and ``delta (|r| - delta/2)`` beyond (``"huber"``, ``delta =
    huber_delta``); LIBLINEAR's convention for ``C`` and its regularised
    intercept ``b = s w_b`` (see ``fit_intercept``).  With
    ``fit_intercept=False`` (``b = 0``) the squared loss gives scikit-learn's
    :class:`~sklearn.linear_model.Ridge` objective ``||y - X w||^2 + alpha
    ||w||^2`` with ``alpha = 1 / C`` and no intercept, divided by ``2 n``, and
    the epsilon-insensitive losses :class:`~sklearn.svm.LinearSVR`'s ``C
    sum_i h(r_i) + ||w||^2 / 2`` with the same ``C``, divided by ``C n``
    (with an intercept too: LinearSVR regularises it the same way).  The
    dual is ``D(alpha) = -1/n sum_i h_i*(-alpha_i) - lam/2 ||w(alpha)||^2``
    with ``w(alpha) = C X^T alpha``, X with the synthetic column when
    ``fit_intercept``, and ``h_i*(-alpha_i)`` the conjugate of
    :class:`~daskdca.losses.Squared`, :class:`~daskdca.losses.EpsilonInsensitive`,
    :class:`~daskdca.losses.SquaredEpsilonInsensitive` or
    :class:`~daskdca.losses.Huber` (``alpha_i`` in ``[-1, 1]`` for
    epsilon-insensitive, in ``[-delta, delta]`` for Huber).  The fit stops
    when the duality gap, recomputed from the dual variables alone,
    satisfies ``P - D <= tol * |P|``.

    Parameters
    ----------
    loss : {"squared", "squared_error", "epsilon_insensitive", "squared_epsilon_insensitive", "huber"}, \
default="squared"
        ``h`` above; ``"squared_error"`` is scikit-learn's name of
        ``"squared"``, the other names are ``LinearSVR``'s and
        ``SGDRegressor``'s.  ``solver="minibatch_sdca"`` and ``"cocoa+"``
        take every one of them.
    C : float, default=1.0
        Inverse regularisation strength, ``lam = 1 / (C n)`` (Ridge's
        ``alpha = 1 / C``, LinearSVR's ``C``).  Must be > 0.
    epsilon : float, default=0.0
        Half-width of the tube of the epsilon-insensitive losses, in the
        units of ``y`` (``LinearSVR``'s ``epsilon``, with its default 0:
        the absolute loss ``|r|``, or ``r^2``).  Must be >= 0; used only by
        ``loss="epsilon_insensitive"`` and ``"squared_epsilon_insensitive"``
        (the fit refuses another loss with a non-zero one).
    huber_delta : float, default=1.0
        Huber's threshold ``delta``, in the units of ``y``: residuals beyond
        it cost linearly (``SGDRegressor(loss="huber", epsilon=delta)``'s
        loss; ``HuberRegressor`` instead divides residuals by a scale it
        fits, so scale or standardise ``y`` first).  Must be > 0; used only
        by ``loss="huber"`` (the fit refuses another loss with one other
        than 1.0).
    {penalty}
    {l1_ratio}
    {solver}
    {tol}
    {max_iter}
    {fit_intercept_or_unregularized}
    {intercept_scaling}
    {random_state}
    {warm_start}
    {n_partitions}
    {n_jobs}
    {client}
    {verbose}
    {keep_dual}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        ``intercept_scaling * w_b`` with ``fit_intercept``, else 0.0.
    dual_coef_ : ndarray of shape (n_samples,)
        Only with ``keep_dual=True``.  Where plain SDCA ran, or CoCoA+
        without Catalyst (as :class:`SDCAClassifier` says), ``coef_ = C *
        X.T @ dual_coef_`` and, with ``fit_intercept``, ``intercept_ = C *
        intercept_scaling**2 * dual_coef_.sum()``; where the model is a primal
        iterate (SDCA or CoCoA+ inside Catalyst, Newton: ``route_``), the dual
        point that certifies it, the two agreeing only as the gap closes.
    primal_, dual_, gap_ : float
        Certified ``P(coef_, intercept_)``, ``D(dual_coef_)`` and ``P - D``.
    converged_ : bool
    n_iter_ : int
        Rounds taken.
    route_ : daskdca.routes.Route
        Where the fit ran and why (:mod:`daskdca.routes`).
    history_ : list of HistoryRecord
        One ``(round, epochs, seconds, primal, dual, gap)`` record per gap
        evaluation.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    See Also
    --------
    daskdca.fit : The function every fit goes through.
    sklearn.linear_model.Ridge, sklearn.svm.LinearSVR, sklearn.linear_model.SGDRegressor :
        The scikit-learn regressors of the same objectives (:meth:`to_sklearn`
        returns a ``Ridge`` or a ``LinearSVR``).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from daskdca import SDCARegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = SDCARegressor(C=10.0).fit(X, y)  # fit_intercept=True: no need to centre y
    >>> bool(reg.converged_), reg.coef_.shape, bool(reg.intercept_ > 100.0)
    (True, (10,), True)
    >>> svr = SDCARegressor(loss="epsilon_insensitive", epsilon=5.0, C=10.0).fit(X, y)
    >>> bool(svr.converged_)
    True
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions({"squared", "squared_error", "epsilon_insensitive", "squared_epsilon_insensitive",
                             "huber"})],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "huber_delta": [Interval(Real, 0, None, closed="neither")],
        **_SDCAMixin._common_constraints,
        **_SDCAMixin._penalty_constraints,
        "fit_intercept": ["boolean", StrOptions({"unregularized"})],
    }

    def __init__(self, loss="squared", C=1.0, *, epsilon=0.0, huber_delta=1.0, penalty="l2", l1_ratio=None,
                 solver="auto", tol=1e-6, max_iter=1000, fit_intercept=True, intercept_scaling=1.0, random_state=0,
                 warm_start=False, n_partitions=None, n_jobs=None, client=None, verbose=0, keep_dual=False):
        self.loss = loss
        self.C = C
        self.epsilon = epsilon
        self.huber_delta = huber_delta
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_partitions = n_partitions
        self.n_jobs = n_jobs
        self.client = client
        self.verbose = verbose
        self.keep_dual = keep_dual

    def _fit_loss(self):
        """The loss object with this estimator's ``epsilon`` or ``huber_delta``; a ValueError where the loss does
        not use the one that differs from its default."""
        name = _loss_name(self.loss)
        if self.epsilon != 0.0 and name not in ("epsilon_insensitive", "squared_epsilon_insensitive"):
            huber = (f"; Huber's threshold is huber_delta (SGDRegressor's epsilon for loss='huber'): use "
                     f"huber_delta={self.epsilon!r}") if name == "huber" else ""
            raise ValueError(f"epsilon={self.epsilon!r} is the tube of the epsilon-insensitive losses, which "
                             f"loss={self.loss!r} does not have{huber}; leave epsilon=0.0 for it.")
        if self.huber_delta != 1.0 and name != "huber":
            raise ValueError(f"huber_delta={self.huber_delta!r} is loss='huber''s threshold, which "
                             f"loss={self.loss!r} does not have; leave huber_delta=1.0 for it.")
        if name == "epsilon_insensitive":
            return EpsilonInsensitive(epsilon=float(self.epsilon))
        if name == "squared_epsilon_insensitive":
            return SquaredEpsilonInsensitive(epsilon=float(self.epsilon))
        if name == "huber":
            return Huber(delta=float(self.huber_delta))
        return get_loss(name)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the regression problem of ``loss``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            A dask array is computed into memory first (sparse chunks stay
            sparse), a dask DataFrame one partition at a time; a DataFrame's
            numeric columns' names are kept as ``feature_names_in_``.
        y : array-like of shape (n_samples,)
            Real targets.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Row weights ``s_i >= 0``: the problem becomes
            ``min 1/n sum_i s_i h(x_i.w + b - y_i) + lam/2 (||w||^2 + (b/s)^2)``
            (``Ridge``'s ``sample_weight`` up to its unregularised intercept;
            LIBLINEAR's instance weights for the epsilon-insensitive losses).

        Returns
        -------
        SDCARegressor
            The fitted estimator (``self``).
        """
        _refuse_store(self, X)
        if y is None and (_is_pandas_frame(X) or _is_dask_frame(X)):
            _refuse_missing_labels(X)  # a DataFrame with its label column left in: name the column
        X, y = validate_data(self, _in_memory(X), labels_in_memory(y), accept_sparse="csr",
                             dtype=[np.float64, np.float32], y_numeric=True)
        lam = _lam_of(self.C, X.shape[0])
        self._n_fit_rows = X.shape[0]  # lam's n, for to_sklearn's Lasso and ElasticNet (alpha = lam)
        if self._unregularized():
            return self._fit_regression_unregularized(X, y, sample_weight)
        X = self._with_bias(canonical_csr(X))
        y = np.asarray(y, dtype=np.float64)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        start, = self._warm_starts(X, None, [y], [sample_weight])
        model = self._dca_fit(X, y, self._fit_loss(), lam, _seed(self.random_state), client=self.client,
                              dual_init=start, sample_weight=sample_weight)
        self.coef_, self.intercept_ = self._split_bias(model.coef_)
        self.primal_ = float(model.primal_)
        self.dual_ = float(model.dual_)
        self.gap_ = float(model.gap_)
        self.converged_ = bool(model.converged_)
        self.n_iter_ = int(model.n_rounds_)
        self.history_ = list(model.history_)
        self.route_ = model.route_
        if self.keep_dual:
            self.dual_coef_ = np.asarray(model.dual_coef_, dtype=np.float64).copy()
        elif hasattr(self, "dual_coef_"):
            del self.dual_coef_
        self._keep_warm_duals(X, None, [model])
        self._warn_unconverged(["gap"])
        return self

    def _fit_regression_unregularized(self, X, y, sample_weight):
        """``fit_intercept="unregularized"``: the intercept out of the penalty (:meth:`_fit_unregularized`)."""
        y = np.asarray(y, dtype=np.float64)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        fit, route = self._fit_unregularized(X, y, self._fit_loss(), self.C, sample_weight)
        self.coef_, self.intercept_ = fit.coef.copy(), float(fit.intercept)
        self.primal_, self.dual_, self.gap_ = fit.primal, fit.dual, fit.gap
        self.converged_ = bool(fit.converged)
        self.n_iter_ = int(fit.n_iter)
        self.history_ = [HistoryRecord(*record) for record in fit.history]
        self.route_ = route
        if self.keep_dual:
            self.dual_coef_ = fit.alpha.copy()
        elif hasattr(self, "dual_coef_"):
            del self.dual_coef_
        self._warn_unconverged(["gap"])
        return self

    def predict(self, X):
        """``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, DataFrame} of shape (n_samples, n_features), or a store
            A dask array (chunked along rows only) gives a lazy dask array,
            a dask DataFrame a lazy dask Series (a DataFrame with a column
            per class for 2-D outputs) on its partitions and index.
            A daskdca store (a path or URL string, an ``os.PathLike``, or a
            :class:`~daskdca.store.CSRStore`, e.g. opened with
            ``storage_options``) is read one verified block at a time and
            gives a NumPy array in the store's row order (for a shuffled
            store, ``store.row_permutation`` maps it back).

        Returns
        -------
        ndarray of shape (n_samples,)
            The predictions.
        """
        return prediction_output(self._predictor(), X, "predict")

    def to_sklearn(self):
        """The equivalent fitted scikit-learn estimator: ``Ridge``, ``Lasso``, ``ElasticNet`` or ``LinearSVR``.

        :class:`~sklearn.linear_model.Ridge` (``alpha = 1 / C``), or
        :class:`~sklearn.svm.LinearSVR` for the epsilon-insensitive losses.
        ``fit_intercept`` is copied.  Without an intercept, refitting the
        returned ``Ridge`` solves the same problem.  With one, ``Ridge`` has no
        ``intercept_scaling``: its own fit would leave the intercept
        unregularised (the limit of a large ``intercept_scaling``), a different
        problem, so only the fitted model (``coef_``, ``intercept_``) is
        equivalent.  ``LinearSVR(C, epsilon, loss, intercept_scaling,
        dual=True)`` solves this estimator's problem, intercept included (both
        are LIBLINEAR's).  ``loss="huber"`` has no scikit-learn estimator of
        the same problem and raises.  With ``penalty="l1"`` or
        ``"elasticnet"`` (squared loss): ``Lasso`` or ``ElasticNet`` with
        ``alpha = lam = 1 / (C n)`` (and ``l1_ratio``), the same objective up
        to the intercept, which they do not penalise; the other losses raise.
        After ``fit_intercept="unregularized"``: ``Ridge(alpha=1 / C,
        fit_intercept=True)``, the same problem, intercept included.

        Returns
        -------
        Ridge, Lasso, ElasticNet or LinearSVR
            The fitted scikit-learn estimator.
            With ``coef_`` and ``intercept_`` copied, so predictions are identical.
        """
        from sklearn.linear_model import ElasticNet, Lasso, Ridge
        from sklearn.svm import LinearSVR

        check_is_fitted(self)
        name = _loss_name(self.loss)
        if self.penalty != "l2":
            if name != "squared":
                raise ValueError(
                    f"No scikit-learn estimator fits loss={self.loss!r} with penalty={self.penalty!r}; use coef_ "
                    "and intercept_, which predict as X @ coef_ + intercept_.")
            # 1/n sum (x_i.w - y_i)^2 / 2 + lam (rho ||w||_1 + (1 - rho)/2 ||w||^2): Lasso's and ElasticNet's
            # objective with alpha = lam = 1 / (C n); their intercept is not penalised
            alpha = 1.0 / (self.C * self._n_fit_rows)
            est = (Lasso(alpha=alpha, fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter)
                   if self.penalty == "l1" else
                   ElasticNet(alpha=alpha, l1_ratio=self.l1_ratio, fit_intercept=self.fit_intercept, tol=self.tol,
                              max_iter=self.max_iter))
            est.coef_ = self.coef_.copy()
            est.intercept_ = self.intercept_
            est.n_iter_ = int(np.max(self.n_iter_))
            est.dual_gap_ = 0.0
            est.n_features_in_ = self.n_features_in_
            if hasattr(self, "feature_names_in_"):
                est.feature_names_in_ = self.feature_names_in_.copy()
            return est
        if name == "huber":
            raise ValueError(
                "No scikit-learn estimator solves loss='huber' with a fixed threshold and this regularised "
                "intercept (HuberRegressor also fits a scale; SGDRegressor(loss='huber') does not certify a "
                "solution); use coef_ and intercept_, which predict as X @ coef_ + intercept_.")
        if name in ("epsilon_insensitive", "squared_epsilon_insensitive"):
            est = LinearSVR(C=self.C, epsilon=self.epsilon, loss=name, fit_intercept=self.fit_intercept,
                            intercept_scaling=self.intercept_scaling, dual=True, tol=self.tol,
                            max_iter=self.max_iter)
            est.coef_ = self.coef_.copy()
            est.intercept_ = np.array([self.intercept_]) if self.fit_intercept else 0.0  # as LinearSVR sets it
            est.n_iter_ = self.n_iter_
            est.n_features_in_ = self.n_features_in_
            if hasattr(self, "feature_names_in_"):
                est.feature_names_in_ = self.feature_names_in_.copy()
            return est
        # Ridge's own intercept is not penalised: with fit_intercept="unregularized", the same problem
        est = Ridge(alpha=1.0 / self.C, fit_intercept=bool(self.fit_intercept), tol=self.tol, max_iter=self.max_iter)
        est.coef_ = self.coef_.copy()
        est.intercept_ = self.intercept_
        est.n_iter_ = None
        est.solver_ = "auto"
        est.n_features_in_ = self.n_features_in_
        if hasattr(self, "feature_names_in_"):
            est.feature_names_in_ = self.feature_names_in_.copy()
        return est
