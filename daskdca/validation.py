"""The checks of the user's input to ``daskdca.fit``: X, y, the numbers, the seed, the warm start, the class
weights, a store's labels.

Every check raises ``ValueError`` or ``TypeError`` with a message that names
the bad value and the fix (never an ``assert``); the checked value comes
back in the form the drivers take (X as canonical CSR, labels as -1/+1 or
class indices, weights as float64).  :mod:`daskdca.api` calls them, and the
estimators, :mod:`daskdca.prediction` and the CLI share the ones they need
(:func:`class_weights` is the one computation of the classes' weights).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from daskdca.methods import REGISTRY
from daskdca.methods.base import process_cores
from daskdca.partitions import OneVsRest
from daskdca.problem import canonical_csr


def _is_dask_array(X):
    return type(X).__module__.startswith("dask.") and hasattr(X, "map_blocks") and hasattr(X, "chunks")


def _scipy_if_pydata(X):
    """A pydata ``sparse`` array (it has ``to_scipy_sparse``) as scipy CSR: scipy and scikit-learn take scipy's
    sparse types only."""
    if not sp.issparse(X) and hasattr(X, "to_scipy_sparse"):
        return sp.csr_matrix(X.to_scipy_sparse())
    return X


def _first_nonfinite(values):
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if bad.size else None


def _check_X(X):
    """Canonical CSR (float64, or float32 if given) with finite values."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got a sparse array with shape {X.shape}.")
        X = sp.csr_matrix(X)
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must hold real numbers, got a sparse matrix of dtype {X.dtype}; "
                            "for complex data pass the real part (X.real) explicitly.")
        X = canonical_csr(X, None if X.dtype in (np.float32, np.float64) else np.float64)
        bad = _first_nonfinite(X.data)
        if bad is not None:
            row = int(np.searchsorted(X.indptr, bad, side="right") - 1)
            raise ValueError(
                f"X contains a non-finite value ({float(X.data[bad])!r}) at row {row}, column "
                f"{int(X.indices[bad])}; remove or impute NaN/inf first."
            )
        return X
    if hasattr(X, "dask") or not hasattr(X, "__array__") and not isinstance(X, (list, tuple)):
        raise TypeError(
            f"X must be a numpy array or a scipy sparse matrix, got {type(X).__name__}; "
            "convert it with np.asarray(X) or scipy.sparse.csr_matrix(X)."
        )
    try:
        arr = np.asarray(X)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"X could not be read as a 2-D array ({exc}); pass rows of equal length.") from None
    if arr.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features), got shape {arr.shape}; "
            "use X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a single sample."
        )
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"X must hold numbers, got dtype {arr.dtype}.")
    if arr.dtype != np.float32:
        arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        row, col = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"X contains a non-finite value ({float(arr[row, col])!r}) at row {row}, column {col}; "
            "remove or impute NaN/inf first."
        )
    return sp.csr_matrix(arr)


def _check_y(y, n, loss):
    """Labels mapped to {-1, +1} (sorted classes, the second is +1), to class indices ``0 .. K-1`` (as float64)
    for ``K > 2`` classes, or real targets; returns ``(y, classes)`` (``classes`` None for targets)."""
    y = np.asarray(y)
    if y.dtype.kind == "c":
        raise TypeError(f"y must hold real numbers or labels, got dtype {y.dtype}.")
    if y.dtype.kind == "O":
        # labels of one type are fine (strings, or numbers); a mix would sort at random or fail deep inside numpy
        types = sorted({type(v).__name__ for v in y.ravel()})
        if types == ["str"]:
            y = y.astype(str)
        else:
            try:
                numeric = y.astype(np.float64)
            except (TypeError, ValueError):
                raise TypeError(
                    f"y of dtype object holds values of types {types}; pass numeric labels or targets, "
                    "or labels that are all strings (e.g. np.asarray(y, dtype=str)).") from None
            # nan or None must not become a class; labels keep their own values in classes_
            y = numeric if not loss.is_classification or _first_nonfinite(numeric.ravel()) is not None else y
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}; pass y.ravel() for a column vector.")
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries; they must match.")
    if y.dtype.kind in "biuf":
        bad = _first_nonfinite(y.astype(np.float64))
        if bad is not None:
            raise ValueError(f"y contains a non-finite value ({float(y[bad])!r}) at index {bad}; remove those rows.")
    elif not loss.is_classification:
        raise TypeError(f"The {loss.name} loss needs numeric targets, got y of dtype {y.dtype}.")
    if not loss.is_classification:
        return y.astype(np.float64), None
    if y.dtype.kind in "biuf" and y.shape[0] > 0:
        # two numeric labels, the usual case, without np.unique's sort (0.75 ms of a 25 ms fit of a9a's 32,561
        # rows); the same classes and signs
        low, high = y.min(), y.max()
        if low != high and bool(np.all((y == low) | (y == high))):
            return np.where(y == high, 1.0, -1.0), np.array([low, high], dtype=y.dtype)
    classes, index = np.unique(y, return_inverse=True)
    if classes.shape[0] < 2:
        raise ValueError(
            f"The {loss.name} loss needs at least two classes in y, got one: {classes.tolist()}. "
            "Fit data of two or more classes, or use loss='squared' for real-valued targets."
        )
    if classes.shape[0] > 2:
        if y.dtype.kind == "f" and np.any(classes != np.round(classes)):
            raise ValueError(
                f"y holds {classes.shape[0]} distinct real values ({classes[:5].tolist()} ...), which look like "
                f"regression targets, not classes; the {loss.name} loss needs class labels. Use loss='squared' "
                "for real-valued targets, or integer or string labels for classes.")
        return index.astype(np.float64), classes
    return np.where(y == classes[1], 1.0, -1.0), classes


def _check_real(name, value, *, low, low_inclusive, hint):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}; {hint}.")
    if value < low or (value == low and not low_inclusive):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {low}, got {value!r}; {hint}.")
    return float(value)


def _check_local_iters(local_iters):
    """``local_iters`` as a Python number (an int stays an int): any real number > 0, NumPy scalars too (the
    methods' own check takes Python numbers only); bool is refused."""
    if isinstance(local_iters, (bool, np.bool_)) or not isinstance(local_iters, numbers.Real) \
            or not math.isfinite(local_iters) or local_iters <= 0:
        raise ValueError(f"local_iters must be a finite number > 0 (passes over each partition per round), "
                         f"got {local_iters!r}; use e.g. local_iters=1.0.")
    return int(local_iters) if isinstance(local_iters, numbers.Integral) else float(local_iters)


def _check_int(name, value, *, low, hint):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}; {hint}.")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}; {hint}.")
    return int(value)


def _resolve_random_state(random_state):
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            f"random_state must be None or a non-negative int, got {type(random_state).__name__}; "
            "every random stream derives from (random_state, round, partition)."
        )
    if not 0 <= random_state < 2**63:
        raise ValueError(f"random_state must be in [0, 2**63), got {random_state!r}.")
    return int(random_state)


class _FitOptions(NamedTuple):
    """The options of ``daskdca.fit`` that :func:`_check_fit_options` checks, in the form the drivers take."""

    lam: float
    tol: float
    max_rounds: int | None
    max_epochs: float | None
    verbose: int
    local_iters: int | float
    n_partitions: int | None
    seed: int


def _check_n_jobs(n_jobs, on_cluster=False):
    """The threads of a fit in this process for ``n_jobs``: None, the cores this process may use
    (:func:`~daskdca.methods.base.process_cores`); ``k >= 1``, k; ``-k``, those cores less ``k - 1`` (joblib's
    convention: -1 is all of them), at least 1.  A cluster fit (``on_cluster``) takes None only."""
    if on_cluster and n_jobs is not None:
        raise ValueError(f"n_jobs={n_jobs!r} sets the threads of a fit in this process; a cluster fit (a client, a "
                         "store or a dask array) runs on its workers' threads. Leave n_jobs=None, or start the "
                         "workers with the threads you want (e.g. LocalCluster(threads_per_worker=...)).")
    if n_jobs is None:
        return process_cores()
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None, a positive int or a negative int (-1: every core this process may "
                         f"use), got {n_jobs!r}; use e.g. n_jobs=None.")
    return int(n_jobs) if n_jobs > 0 else max(1, process_cores() + 1 + int(n_jobs))


#: The largest ``lam`` a fit takes: ``lam n`` stays finite in float64 (up to about 1e308) for any ``n`` below
#: 1e200 rows.
MAX_LAM = 1e100


def _check_fit_options(*, lam, tol, max_rounds, max_epochs, verbose, local_iters, n_partitions, callback,
                       in_memory, overwrite, random_state):
    """``daskdca.fit``'s numbers, flags and seed, checked in this order (the first bad one raises): ``lam > 0``,
    ``tol >= 0``, ``max_rounds`` an int >= 1 or None, ``max_epochs > 0`` or None, ``verbose``, ``local_iters``,
    ``n_partitions`` an int >= 1 or None, ``callback`` callable or None, ``in_memory`` a bool or None,
    ``overwrite`` a bool, ``random_state`` (None draws a seed).  ``callback``, ``in_memory`` and ``overwrite``
    are only checked (the caller keeps them as given); the others come back as a :class:`_FitOptions`."""
    lam = _check_real("lam", lam, low=0.0, low_inclusive=False, hint="LIBLINEAR's C corresponds to lam = 1/(C n)")
    if lam > MAX_LAM:
        raise ValueError(f"lam must be at most {MAX_LAM:g}, got {lam!r}: lam n and the dual's scale overflow "
                         "float64 long before, and any lam past about 1e10 fits w = 0 on real data; use a smaller "
                         "lam (LIBLINEAR's C corresponds to lam = 1/(C n)).")
    tol = _check_real("tol", tol, low=0.0, low_inclusive=True, hint="use e.g. tol=1e-6 (relative duality gap)")
    if max_rounds is not None:
        max_rounds = _check_int("max_rounds", max_rounds, low=1, hint="use e.g. max_rounds=1000 or None")
    if max_epochs is not None:
        max_epochs = _check_real("max_epochs", max_epochs, low=0.0, low_inclusive=False,
                                 hint="use e.g. max_epochs=100 (passes over the data) or None")
    verbose = _check_verbose(verbose)
    local_iters = _check_local_iters(local_iters)
    if n_partitions is not None:
        n_partitions = _check_int("n_partitions", n_partitions, low=1, hint="use None or a positive int")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}.")
    if in_memory is not None and not isinstance(in_memory, bool):
        raise ValueError(f"in_memory must be True, False or None, got {in_memory!r}.")
    if not isinstance(overwrite, bool):
        raise ValueError(f"overwrite must be True or False, got {overwrite!r}.")
    seed = _resolve_random_state(random_state)
    return _FitOptions(lam, tol, max_rounds, max_epochs, verbose, local_iters, n_partitions, seed)


def _check_warm_start_supported(method, resume, needs="start from given dual variables (dual_init)",
                                fix="drop dual_init"):
    """A ValueError where ``method`` cannot warm-start: ``needs`` says what asked for it, ``fix`` the other way out."""
    if not method.capabilities.warm_start:
        takers = sorted(name for name, cls in REGISTRY.items() if cls.capabilities.warm_start)
        raise ValueError(
            f"solver={method.name!r} cannot {needs}; the solvers that can are {takers}. Use one of them, or {fix}.")
    if resume:
        raise ValueError("dual_init and resume=True both give the starting point; a resumed fit continues "
                         "from its checkpoint. Drop one of them.")


def _check_dual_init(dual_init, y_signed, loss, classes, weight=None):
    """``dual_init`` as float64 of the rows' length, finite and in the loss's dual domain (``y_i alpha_i`` in
    the box of a classification loss, scaled by the row weights ``weight`` when given); a ValueError names the
    first bad row otherwise."""
    n = y_signed.shape[0]
    try:
        alpha = np.asarray(dual_init, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"dual_init must be an array of n_samples={n} real numbers, got "
                         f"{type(dual_init).__name__}.") from None
    if alpha.shape != (n,):
        raise ValueError(f"dual_init has shape {alpha.shape} but X has {n} rows; pass one dual variable per row, "
                         "shape (n_samples,) (a previous fit's dual_coef_ on the same rows).")
    bad = _first_nonfinite(alpha)
    if bad is not None:
        raise ValueError(f"dual_init contains a non-finite value ({float(alpha[bad])!r}) at row {bad}; "
                         "dual variables must be finite.")
    if weight is not None:
        pinned = np.flatnonzero((weight == 0) & (alpha != 0))
        if pinned.size:
            i = int(pinned[0])
            raise ValueError(f"dual_init is infeasible at row {i}: its sample_weight is 0, so its dual variable must "
                             f"be 0, got {float(alpha[i])!r}. Pass the dual_coef_ of a fit with the same weights.")
    lo, hi = loss.dual_domain
    scale = 1.0 if weight is None else weight
    if not loss.is_classification:
        # alpha itself lies in the box of a regression loss (epsilon-insensitive: [-1, 1], Huber: [-delta, delta])
        outside = np.flatnonzero((alpha < lo * scale) | (alpha > hi * scale))
        if outside.size:
            i = int(outside[0])
            s = 1.0 if weight is None else float(weight[i])
            raise ValueError(
                f"dual_init is infeasible for the {loss.name} loss at row {i}: alpha_i = {float(alpha[i])!r}"
                f"{'' if weight is None else f' (sample_weight {s!r})'} must lie in [{lo * s:g}, {hi * s:g}]"
                f"{f' ({outside.size} rows are outside)' if outside.size > 1 else ''}. Pass the dual_coef_ of a fit "
                "with the same loss and rows (its box does not depend on lam), or clip onto the box.")
        return alpha
    b = y_signed * alpha
    outside = np.flatnonzero((b < lo * scale) | (b > hi * scale))
    if outside.size:
        i = int(outside[0])
        label = classes[1] if y_signed[i] > 0 else classes[0]
        s = 1.0 if weight is None else float(weight[i])
        interval = f"[{lo * s:g}, {hi * s:g}]" if math.isfinite(hi) else f"[{lo * s:g}, inf)"
        raise ValueError(
            f"dual_init is infeasible for the {loss.name} loss at row {i}: y_i * alpha_i = {float(b[i])!r} "
            f"(alpha_i = {float(alpha[i])!r}, label {np.asarray(label).item()!r} -> y_i = {int(y_signed[i]):+d}"
            f"{'' if weight is None else f', sample_weight {s!r}'}) must lie in {interval}"
            f"{f' ({outside.size} rows are outside)' if outside.size > 1 else ''}. Pass the dual_coef_ of a fit "
            "with the same loss, labels and rows (its box does not depend on lam), or project onto the box.")
    return alpha


def class_weights(class_weight, labels, classes, sample_weight=None, *, option="class_weight"):
    """The weight of each class, in ``classes``' order, or None: the one computation of class weights.

    ``daskdca.fit``, the estimators and ``daskdca fit --class-weight`` all
    call it.  It is scikit-learn's ``compute_class_weight`` on the rows'
    labels (``"balanced"``: ``n / (K n_c)``, the row weights counted), with
    the keys of a dict checked against the classes and the weights checked
    by :func:`_check_class_weight_values`.

    Parameters
    ----------
    class_weight : dict, "balanced" or None
        ``{label: weight}`` (labels not named weigh 1) or ``"balanced"``.
    labels : ndarray of shape (n_samples,) or None
        Every row's label, as ``classes`` holds it.
    classes : ndarray of shape (n_classes,) or None
        The sorted distinct labels; None for real targets (refused with a
        class weight).
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        The row weights ``"balanced"`` counts.
    option : str, default="class_weight"
        The name of the option in messages (the CLI's ``--class-weight``).

    Returns
    -------
    per_class : ndarray of float64 of shape (n_classes,) or None
        None when ``class_weight`` is None.
    """
    if class_weight is None:
        return None
    if classes is None:
        raise ValueError(f"class_weight={class_weight!r} needs class labels; a regression loss fits real targets "
                         "(use sample_weight to weigh its rows).")
    if not (isinstance(class_weight, dict) or (isinstance(class_weight, str) and class_weight == "balanced")):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, got {class_weight!r}.")
    if isinstance(class_weight, dict):
        unknown = [key for key in class_weight if not np.any(classes == key)]
        if unknown:
            raise ValueError(f"{option} names labels {unknown!r} that the data does not have: they are not in y "
                             f"(not found among its classes {classes.tolist()}); use those labels as keys.")
    from sklearn.utils.class_weight import compute_class_weight

    per_class = compute_class_weight(class_weight, classes=classes, y=labels, sample_weight=sample_weight)
    return _check_class_weight_values(per_class, classes)


def _check_class_weight_values(per_class, classes):
    """The class weights (``classes``' order) as float64: each finite and >= 0, not all 0; a ValueError names
    class_weight and the class otherwise (not the row weights they become)."""
    per_class = np.asarray(per_class, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(per_class) | (per_class < 0))
    if bad.size:
        label = np.asarray(classes[int(bad[0])]).item()
        raise ValueError(f"class_weight gives class {label!r} the weight {float(per_class[bad[0]])!r}; class "
                         f"weights must be finite and >= 0: give class {label!r} a weight >= 0 (1.0 leaves its "
                         "rows as they are).")
    if not np.any(per_class > 0):
        raise ValueError(f"class_weight gives every class the weight 0 (classes {classes.tolist()}), which leaves "
                         "no loss to fit (the solution would be w = 0); give at least one class a positive weight.")
    return per_class


def _check_weighted_rows(weight, class_weight):
    """Row weights that fold class weights into ``sample_weight`` must keep some row's loss."""
    if class_weight is not None and weight is not None and not np.any(weight > 0):
        raise ValueError(f"class_weight={class_weight!r} times sample_weight is zero for every row, which leaves "
                         "no loss to fit (the solution would be w = 0); give a class whose rows have a positive "
                         "sample_weight a positive class weight.")


def _weights_and_problems(class_weight, y_checked, classes, sample_weight):
    """``(sample_weight, problems)`` of labels checked by :func:`_check_y`: two classes fold the class weights
    into the row weights (each row gets its class's, LIBLINEAR's ``-wi``); more make the one-vs-rest
    problems (None for two classes or targets)."""
    if classes is None or classes.shape[0] == 2:
        index = None if classes is None else (y_checked > 0).astype(np.intp)
        per_class = class_weights(class_weight, None if index is None else classes[index], classes, sample_weight)
        if per_class is not None:
            sample_weight = (1.0 if sample_weight is None else sample_weight) * per_class[index]
            _check_weighted_rows(sample_weight, class_weight)
        return sample_weight, None
    index = y_checked.astype(np.intp)
    per_class = class_weights(class_weight, classes[index], classes, sample_weight)
    return sample_weight, _problems(per_class, classes.shape[0])


def _problems(per_class, n_classes, labels=None):
    """The one-vs-rest problems of ``n_classes`` classes: problem ``k`` is the stored label ``labels[k]``
    (None: the class index ``k``) against the rest, its class's rows weighted by ``per_class[k]``."""
    labels = tuple(float(k) for k in range(n_classes)) if labels is None else tuple(float(v) for v in labels)
    weights = (1.0,) * n_classes if per_class is None else tuple(float(c) for c in per_class)
    return OneVsRest(labels, weights)


def _check_dual_init_ovr(dual_init, class_index, loss, classes, weight, problems):
    """``dual_init`` of a one-vs-rest fit: shape ``(K, n)``, row ``k`` feasible for problem ``k``
    (class ``k``'s rows labelled +1, weighted by ``weight`` times its class weight)."""
    n, n_classes = class_index.shape[0], classes.shape[0]
    try:
        alpha = np.asarray(dual_init, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"dual_init must be an array of shape ({n_classes}, {n}) of real numbers, got "
                         f"{type(dual_init).__name__}.") from None
    if alpha.shape != (n_classes, n):
        raise ValueError(f"dual_init has shape {alpha.shape}; a fit of {n_classes} classes starts from one row of "
                         f"dual variables per one-vs-rest problem, shape ({n_classes}, {n}) (a previous fit's "
                         "dual_coef_ on the same rows).")
    for k in range(n_classes):
        positive = class_index == k
        factor = problems.positive_weights[k]
        row_weight = weight
        if factor != 1.0:
            row_weight = np.where(positive, factor, 1.0) * (1.0 if weight is None else weight)
        try:
            _check_dual_init(alpha[k], np.where(positive, 1.0, -1.0), loss,
                             np.array(["the rest", np.asarray(classes[k]).item()], dtype=object), row_weight)
        except ValueError as exc:
            raise ValueError(f"dual_init[{k}] (class {np.asarray(classes[k]).item()!r} against the rest): {exc}") \
                from None
    return alpha


def _check_verbose(verbose):
    """``verbose`` as an int level: a bool (True is 1) or an int >= 0 (levels above 2 show what 2 shows)."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    if not isinstance(verbose, numbers.Integral) or verbose < 0:
        raise ValueError(f"verbose must be a bool or an int >= 0, got {verbose!r}; use 0 (silent), 1 (a progress "
                         "bar on the gap and a summary line) or 2 (also one line per gap record).")
    return int(verbose)


def _store_labels(store, loss_obj, where=None):
    """``(classes, positive_label)`` from the store's labels, checked against the loss: ``classes`` as they
    were given (``store.classes``: the names of labels that are not numbers), ``positive_label`` as ``y``
    stores it (its code for names).

    More than two classes give ``positive_label`` None: the partitions keep
    the stored labels, and each one-vs-rest problem compares with its own.
    ``where`` names the labels in messages (default: the store and its URL;
    ``"y"`` for a fit's own staging store of dask input, which the user never saw).
    """
    values = store.label_values
    names = store.label_names
    where = f"the store {store.url!r}" if where is None else where
    if not loss_obj.is_classification:
        if names is not None and names.dtype.kind != "b":
            raise TypeError(f"The {loss_obj.name} loss needs numeric targets, but {where} holds the labels "
                            f"{names.tolist()[:10]} (stored as class codes); use a classification loss.")
        return None, None
    if values is None or len(values) < 2:
        shown = "more than 64 distinct values" if values is None else f"{len(values)}: {values.tolist()[:10]}"
        raise ValueError(
            f"The {loss_obj.name} loss needs 2 to 64 label values (classes), but {where} has "
            f"{shown}. Use loss='squared' for regression targets, or convert class labels.")
    if len(values) > 2:
        return store.classes, None
    return store.classes, values[1]
