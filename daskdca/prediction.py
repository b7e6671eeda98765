"""One prediction path for every fitted model: scores, labels, probabilities and the score, on every input.

:class:`~daskdca.api.LinearModel` (what :func:`daskdca.fit` returns), the
scikit-learn estimators and ``daskdca predict`` describe their fitted model
as a :class:`Predictor` (``coef`` with a row per problem, the intercept, the
classes, which probabilities the loss gives) and call the functions here:

- :func:`output`: ``decision_function``, ``predict`` and ``predict_proba``
  on in-memory X (NumPy, SciPy, pydata sparse, pandas), a dask array (lazy,
  one task per row chunk), a dask DataFrame (lazy, on its partitions and
  index) or a store (one verified block at a time, in the store's row order);
- :func:`score`: accuracy (classes) or ``R^2`` (real targets) on the same
  inputs, a store scored against its own labels;
- :func:`store_scores` and :class:`RunningScore`: the scores of a store
  block by block and the accuracy or ``R^2`` summed over blocks (the CLI's).

The arithmetic is one function, :func:`decision_scores`
(``X @ coef.T + intercept``); the owner says how its in-memory X is checked
(``daskdca.fit``'s canonical CSR, or scikit-learn's ``check_array``), so
that every input type gives the in-memory call's labels, and its scores to
rounding (a dask DataFrame's partitions arrive column-major, whose dense
product rounds in another order: about 1e-15 apart).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Callable, NamedTuple, Optional

import numpy as np
from scipy.special import expit, softmax

from daskdca.store import CSRStore, open_store
from daskdca.store.frames import _is_dask_frame, _is_dask_series, _is_pandas_series, _label_kind, series_values
from daskdca.user_warnings import warn_at_caller
from daskdca.validation import _check_X, _is_dask_array, _scipy_if_pydata

__all__ = ["Predictor", "RunningScore", "decision_scores", "labels", "output", "probabilities", "score",
           "store_scores"]


class Predictor(NamedTuple):
    """What a fitted linear model predicts with.

    Attributes
    ----------
    coef : ndarray or scipy sparse matrix of shape (n_problems, n_features)
        One row per problem: one for two classes or real targets, one per
        class for one-vs-rest or multinomial models (sparse after a
        classifier's ``sparsify()``).
    intercept : float, ndarray of shape (n_problems,) or None
        Added to the scores (None: no intercept, nothing added).
    classes : ndarray of shape (n_classes,) or None
        The labels; None for real targets (``predict`` gives the scores).
    proba : {"sigmoid", "softmax"} or None
        The probabilities the loss gives: ``"sigmoid"`` (logistic: the
        sigmoid of the score for two classes, the one-vs-rest sigmoids
        normalised for more), ``"softmax"`` (a multinomial model), or None.
    refusal : str
        Why there are no probabilities when ``proba`` is None.
    name : str
        The model's class name, for messages.
    n_features : int
        The fitted features.
    feature_names : ndarray or None
        The fitted column names (``feature_names_in_``), or None.
    as_csr : bool
        Check each block as :func:`daskdca.fit` checks X (canonical CSR,
        finite), else as scikit-learn's ``check_array`` does (dense stays
        dense): the owner's in-memory arithmetic, so every input type gives
        the in-memory bits.
    check : callable
        ``check(X)``: the owner's check of in-memory X, returning the array
        to score (``validate_data`` for the estimators).
    """

    coef: np.ndarray
    intercept: object
    classes: Optional[np.ndarray]
    proba: Optional[str]
    refusal: str
    name: str
    n_features: int
    feature_names: Optional[np.ndarray]
    as_csr: bool
    check: Callable


def decision_scores(X, coef, intercept):
    """``X @ coef.T + intercept``: shape (n,) for one row of ``coef``, (n, K) for K rows.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n, d)
    coef : ndarray or scipy sparse matrix of shape (k, d)
    intercept : float, ndarray of shape (k,) or None

    Returns
    -------
    scores : ndarray of float64 of shape (n,) or (n, k)
    """
    from sklearn.utils.extmath import safe_sparse_dot  # here: `daskdca.fit` needs no scikit-learn

    scores = np.asarray(safe_sparse_dot(X, coef.T, dense_output=True), dtype=np.float64)
    if intercept is not None:
        scores = scores + intercept
    return scores.ravel() if scores.shape[1] == 1 else scores


def labels(scores, classes):
    """The sign of one score per row picks ``classes[1]``; the largest of a row's scores otherwise."""
    if scores.ndim == 1:
        return classes[(scores > 0).astype(np.intp)]
    return classes[np.argmax(scores, axis=1)]


def probabilities(scores, kind="sigmoid"):
    """Class probabilities of the scores: ``kind="sigmoid"`` gives ``[1 - p, p]`` with ``p = expit(score)`` for
    one score per row and the one-vs-rest sigmoids normalised to sum to one for more; ``"softmax"`` the
    softmax of a row's scores (a multinomial model's own probabilities)."""
    if kind == "softmax":
        return softmax(scores, axis=1)
    positive = expit(scores)
    if scores.ndim == 1:
        return np.column_stack([1.0 - positive, positive])
    return positive / positive.sum(axis=1, keepdims=True)


def _block_output(block, *, coef, intercept, classes, kind, as_csr):
    """What a prediction method returns for one block of rows (a dask chunk or partition, a store block)."""
    block = _scipy_if_pydata(block)
    if as_csr:
        block = _check_X(block)
    else:
        from sklearn.utils.validation import check_array

        # an empty block (a partition a filter emptied, a 0-row chunk) gives an empty output: scikit-learn's
        # default of at least one row is for a whole X, not for one of its blocks
        block = check_array(block, accept_sparse="csr", dtype=[np.float64, np.float32], ensure_min_samples=0)
    scores = decision_scores(block, coef, intercept)
    if kind == "predict":
        return scores if classes is None else labels(scores, classes)
    if kind in ("sigmoid", "softmax"):
        return probabilities(scores, kind)
    return scores


def _block_column(block, **settings):
    """:func:`_block_output` of one value per row as a column: ``map_blocks`` then keeps X's blocks as they are
    (dropping the column axis instead would make dask join each row block's column blocks first)."""
    return _block_output(block, **settings)[:, None]


def is_store(X):
    """A daskdca store: its handle, or a path / URL naming one (prediction methods stream it)."""
    return isinstance(X, (str, os.PathLike, CSRStore))


def is_blockwise(X):
    """Whether X is predicted block by block: a dask array or DataFrame, or a store."""
    return _is_dask_array(X) or _is_dask_frame(X) or is_store(X)


def _shape(p, kind):
    """``(kind, n_columns, dtype)`` of a method's output: ``kind`` resolved to the probabilities the model
    gives, ``n_columns`` None for one value per row."""
    if kind == "decision":
        return kind, (None if p.coef.shape[0] == 1 else p.coef.shape[0]), np.float64
    if kind == "predict":
        return kind, None, (np.float64 if p.classes is None else p.classes.dtype)
    if p.proba is None:
        raise AttributeError(p.refusal)
    return p.proba, p.classes.shape[0], np.float64


def output(p, X, kind):
    """A prediction method's output on X: ``kind`` is ``"decision"``, ``"predict"`` or ``"proba"``.

    Parameters
    ----------
    p : Predictor
    X : array-like, sparse matrix, DataFrame, dask array or DataFrame, or a store
        In memory: checked by ``p.check``.  A dask array (chunked along rows
        only) gives a lazy dask array, a dask DataFrame a lazy dask Series (a
        DataFrame with a column per class for 2-D outputs) on its partitions
        and index, a store (a path or URL, an ``os.PathLike`` or a
        :class:`~daskdca.store.CSRStore`) a NumPy array in its row order.
    kind : {"decision", "predict", "proba"}

    Returns
    -------
    ndarray, dask array, dask Series or DataFrame
    """
    kind, n_columns, dtype = _shape(p, kind)
    settings = dict(coef=p.coef, intercept=p.intercept, classes=p.classes, kind=kind, as_csr=p.as_csr)
    if is_store(X):
        return _stream(p, X, settings)[0]
    if _is_dask_frame(X):
        return _map_partitions(p, X, settings, n_columns, dtype)
    if _is_dask_array(X):
        return _map_blocks(p, X, settings, n_columns, dtype)
    scores = decision_scores(p.check(X), p.coef, p.intercept)
    if kind == "predict":
        return scores if p.classes is None else labels(scores, p.classes)
    if kind in ("sigmoid", "softmax"):
        return probabilities(scores, kind)
    return scores


def check_frame_columns(p, columns):
    """A DataFrame's columns against the fitted names (when the fit had them), then their count."""
    _check_names(p, list(columns), "X's columns", "pass the same columns in the same order "
                 "(e.g. X[model.feature_names_in_])")
    _check_count(p, len(columns))


def _check_names(p, names, what, fix):
    """``names`` (``what``: a frame's columns, a store's recorded feature names) against the fitted names,
    when the fit had them; ``fix`` says what to pass instead."""
    fitted = p.feature_names
    if fitted is not None and names != list(fitted):
        fitted = list(fitted)
        fitted_set, names_set = set(fitted), set(names)
        unseen = [name for name in names if name not in fitted_set]
        missing = [name for name in fitted if name not in names_set]
        if unseen or missing:  # what differs, not only the first names of each side
            differ = "; ".join(part for part in (
                f"not seen at fit: {unseen[:10]}{' ...' if len(unseen) > 10 else ''}" if unseen else "",
                f"seen at fit but missing: {missing[:10]}{' ...' if len(missing) > 10 else ''}" if missing else "")
                if part)
        elif len(names) != len(fitted):
            differ = f"the same names, {len(names)} of them against {len(fitted)} (a name repeated)"
        else:
            first = next(i for i, (a, b) in enumerate(zip(names, fitted)) if a != b)
            differ = f"the same names in another order (first at position {first}: {names[first]!r}, fitted " \
                     f"{fitted[first]!r})"
        raise ValueError(f"The feature names should match those that were passed during fit: {what} differ from "
                         f"the fitted feature names (feature_names_in_), {differ}; {fix}.")


def _check_count(p, d, where=""):
    if d != p.n_features:
        raise ValueError(f"X has {d} features, but {p.name} is expecting {p.n_features} features as input{where}.")


def _map_partitions(p, X, settings, n_columns, dtype):
    """A dask DataFrame: lazy, a dask Series (one value per row) or DataFrame (``n_columns`` columns: the
    classes) on X's partitions and index, one task per partition; X's columns checked from its metadata."""
    from daskdca.store.from_dask import map_frame

    check_frame_columns(p, X.columns)
    names = None
    if n_columns is not None:
        names = list(p.classes) if p.classes is not None and len(p.classes) == n_columns else list(range(n_columns))
    return map_frame(X, partial(_block_output, **settings), columns=list(X.columns), names=names, dtype=dtype)


def _map_blocks(p, X, settings, n_columns, dtype):
    """A dask array: a lazy dask array, one task per block of rows.  Only ``coef``, the intercept and the
    classes travel with the tasks, not the model (an estimator may hold an unpicklable client)."""
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got a dask array of shape {X.shape}.")
    _check_count(p, X.shape[1])
    if X.numblocks[1] != 1:
        raise ValueError(f"{p.name} predicts a dask array block by block of rows, but X is chunked along its "
                         f"{X.shape[1]} columns too ({X.numblocks[1]} column blocks); use X.rechunk({{1: -1}}).")
    if n_columns is None:
        column = X.map_blocks(partial(_block_column, **settings), chunks=(X.chunks[0], (1,)), dtype=dtype,
                              meta=np.empty((0, 0), dtype=dtype))
        return column[:, 0]
    return X.map_blocks(partial(_block_output, **settings), chunks=(X.chunks[0], (n_columns,)), dtype=dtype,
                        meta=np.empty((0, 0), dtype=dtype))


def open_predict_store(p, X):
    """The :class:`~daskdca.store.CSRStore` of a prediction input, checked against the fitted features: their
    count, then the feature names a store written from a frame records, as a DataFrame's columns are checked
    (a store without names gets scikit-learn's warning for arrays when the fit had names)."""
    store = X if isinstance(X, CSRStore) else open_store(X)
    _check_count(p, store.d, where=f" (the store {store.url!r} holds {store.n} x {store.d}); predict on a store "
                 "of the training data's features")
    names = store.feature_names  # a store written from a frame records its columns, in the fitted order
    if names is not None:
        # checked as a DataFrame's columns are: the same names in the same order
        _check_names(p, list(names), f"the feature names recorded by the store {store.url!r}",
                     "predict on a store written from a frame with the fitted columns in the same order "
                     "(e.g. write_store(url, X[model.feature_names_in_], y))")
    elif p.feature_names is not None:
        # scikit-learn's warning for arrays without names: this store has column numbers only
        warn_at_caller(f"X does not have valid feature names, but {p.name} was fitted with feature names",
                       UserWarning)
    return store


def store_coef(store, coef):
    """``coef`` (rows of the fitted features) for the columns of ``store``: a store with renumbered features
    (stored column ``j`` is the fitted feature ``perm[j]``) is scored with ``coef[:, perm]``; a store of fewer
    columns (an svmlight file's largest index) with the first ones."""
    perm = store.feature_permutation
    return coef[:, perm] if perm is not None else coef[:, :store.d]


def store_scores(store, coef, intercept):
    """Yield ``(scores, y)`` of each block of ``store``, one verified block at a time, in its row order.

    Parameters
    ----------
    store : CSRStore
    coef : ndarray of shape (k, store.d)
        Already in the store's column order (:func:`store_coef`).
    intercept : float, ndarray of shape (k,) or None
    """
    for k in range(store.n_blocks):
        block, y = store.read_block(k)  # verified against its checksum
        yield decision_scores(block, coef, intercept), y


def _stream(p, X, settings, *, with_labels=False):
    """A prediction method on a store, one verified block at a time; returns ``(out, labels)``, the store's
    labels as they were given when ``with_labels`` (else None).  Memory is one block plus the output."""
    store = open_predict_store(p, X)
    if with_labels and p.classes is not None:
        # before any block is read: the stored labels (verified at open) against the classes, by value
        check_known_labels(p, store.classes, f"The store {store.url!r}")
    settings = dict(settings, coef=store_coef(store, settings["coef"]))
    offsets = store.block_row_offsets
    out = stored = None
    if with_labels:
        stored = np.empty(store.n, dtype=np.float64)
    for k in range(store.n_blocks):
        block, y = store.read_block(k)  # verified against its checksum
        values = _block_output(block, **settings)
        if out is None:
            out = np.empty((store.n,) + values.shape[1:], dtype=values.dtype)
        out[offsets[k]:offsets[k + 1]] = values
        if with_labels:
            stored[offsets[k]:offsets[k + 1]] = y
    if with_labels:
        stored = store.labels_of(stored)  # the labels as given (names stored as their codes)
    return out, stored


def labels_in_memory(y):
    """Labels for ``fit`` and ``score``: a dask array or Series computed into memory one chunk or partition at
    a time, a pandas Series' categories as their values; else as given."""
    if _is_dask_series(y) or _is_dask_array(y):
        from daskdca.store.from_dask import frame_labels_in_memory

        return frame_labels_in_memory(y)
    if _is_pandas_series(y):
        values = series_values(y)
        if values.dtype == object:
            _label_kind(values)  # a missing value or a mix of types, named before scikit-learn's checks read them
        return values
    return y


def score(p, X, y=None, sample_weight=None, *, predict):
    """Accuracy (a model with classes) or ``R^2`` (real targets) of the predictions on X.

    Parameters
    ----------
    p : Predictor
    X : array-like, sparse matrix, DataFrame, dask array or DataFrame, or a store
        A store is streamed block by block and scored against its own labels.
    y : array-like of shape (n_samples,) or None, default=None
        True labels or targets; required for arrays, None for a store.
    sample_weight : array-like of shape (n_samples,) or None, default=None
        Row weights (for a store, in its stored row order).
    predict : callable
        The owner's ``predict`` (arrays and DataFrames are predicted through it).

    Returns
    -------
    score : float
    """
    from sklearn.metrics import accuracy_score, r2_score

    metric = r2_score if p.classes is None else accuracy_score
    if is_store(X):
        if y is not None:
            raise ValueError(f"{p.name}.score got y with a store {getattr(X, 'url', X)!r}; a store is scored "
                             "against its own labels: call score(store) without y.")
        settings = dict(coef=p.coef, intercept=p.intercept, classes=p.classes, kind="predict", as_csr=p.as_csr)
        predictions, stored = _stream(p, X, settings, with_labels=True)
        return float(metric(stored, predictions, sample_weight=sample_weight))
    if y is None:
        raise ValueError(f"{p.name}.score(X, y) needs y with array X; only a store (its path or a CSRStore) "
                         "carries its own labels.")
    y = labels_in_memory(y)
    if p.classes is not None:
        values = np.asarray(y)
        if values.ndim == 1:  # other shapes get scikit-learn's own error
            check_known_labels(p, distinct_labels(values, p.classes), "y")
    predictions = predict(X)
    if _is_dask_frame(X):  # the lazy predictions, computed partition by partition
        predictions = series_values(predictions.compute())
    return float(metric(y, predictions, sample_weight=sample_weight))


def _label_values_text(values, limit=10):
    values = list(values)
    shown = [np.asarray(v).item() for v in values[:limit]]
    return f"{shown}{' ...' if len(values) > limit else ''}"


def distinct_labels(y, classes):
    """The distinct values of labels ``y``; labels of dtype object as numbers when ``classes`` are numbers and
    they convert, else as strings (a mix of types cannot be sorted)."""
    if y.dtype.kind == "O":
        if classes.dtype.kind in "biuf":
            try:
                return np.unique(y.astype(np.float64))
            except (TypeError, ValueError):
                pass
        return np.unique(y.astype(str))
    return np.unique(y)


def check_known_labels(p, values, what):
    """Labels are compared with predictions by value: every distinct label value of ``what`` must be one of the
    fitted classes (docs/reliability.md, "Bad input"), else a 0/1 set scored by a -1/+1 model counts every 0
    as wrong without a word.  ``values`` are the distinct labels (None: more than 64 distinct values)."""
    name, classes = p.name, p.classes
    if values is None:
        raise ValueError(f"{what} has more than 64 distinct label values, but this {name} was fitted on the "
                         f"classes {_label_values_text(classes)}; score data labelled with those classes.")
    values = np.asarray(values)
    numeric = values.dtype.kind in "biuf", classes.dtype.kind in "biuf"
    if numeric[0] != numeric[1]:
        unknown = values
    elif numeric[0]:
        unknown = values[~np.isin(values.astype(np.float64), classes.astype(np.float64))]
    else:
        unknown = values[~np.isin(values.astype(str), classes.astype(str))]
    if unknown.size == 0:
        return
    fix = "relabel them with the model's classes or fit on the same encoding"
    if values.shape[0] == classes.shape[0] and numeric[0] == numeric[1] and (
            not numeric[0] or np.all(np.isfinite(values.astype(np.float64)))):
        mapping = ", ".join(f"{np.asarray(a).item()!r}: {np.asarray(b).item()!r}"
                            for a, b in zip(np.sort(values), classes))
        fix = f"relabel them with the model's classes (e.g. the map {{{mapping}}}) or fit on the same encoding"
    dtype = "" if numeric[1] else f" (labels of dtype {classes.dtype})"
    raise ValueError(f"{what} holds the label values {_label_values_text(values)}, but this {name} was fitted on "
                     f"the classes {_label_values_text(classes)}{dtype}; {_label_values_text(unknown)} are not "
                     f"among those classes, so predictions cannot be compared with those labels: {fix}.")


class RunningScore:
    """The predictions' accuracy (``classes`` given) or ``R^2`` (None) against the data's labels, summed block by
    block; ``R^2``'s total sum of squares merges the blocks' means and squared deviations exactly.

    Parameters
    ----------
    classes : ndarray or None
        The model's classes; None for real targets.
    label_text : callable, default=str
        How a label is written in :meth:`line`.
    """

    def __init__(self, classes, label_text=str):
        self.classes = classes
        self.label_text = label_text
        self.rows = self.correct = 0
        self.mean = self.deviations = self.residuals = 0.0
        self.foreign = None  # a label of the data that is not one of the model's classes

    def add(self, predicted, scores, y):
        """One block: its predicted labels (or targets) ``predicted``, ``scores`` and the data's labels ``y``."""
        if self.classes is not None:
            if self.foreign is None and not np.isin(y, self.classes).all():
                self.foreign = y[~np.isin(y, self.classes)][0]
            self.correct += int(np.sum(predicted == y))
        elif y.size:
            n, mean = y.size, float(np.mean(y))
            delta = mean - self.mean
            total = self.rows + n
            self.deviations += float(np.sum((y - mean) ** 2)) + delta * delta * self.rows * n / total
            self.mean += delta * n / total
            self.residuals += float(np.sum((y - scores) ** 2))
        self.rows += y.size

    def line(self):
        """``accuracy ...`` or ``R^2 ...``, or why there is none."""
        if not self.rows:
            return "no score: the data has no rows"
        if self.classes is not None:
            if self.foreign is not None:
                return (f"no accuracy: the data's label {self.label_text(self.foreign)} is not one of the model's "
                        f"classes [{', '.join(self.label_text(c) for c in self.classes)}]")
            return f"accuracy {self.correct / self.rows:.4f} ({self.correct} of {self.rows} rows right)"
        if self.deviations <= 0:
            return "no R^2: the data's targets are all equal"
        return f"R^2 {1.0 - self.residuals / self.deviations:.4f} (1 - residual / total sum of squares, {self.rows} rows)"


def proba_kind(loss_name, multinomial):
    """The probabilities a model of the loss ``loss_name`` gives: ``"softmax"`` for a multinomial model,
    ``"sigmoid"`` for the logistic loss, None for the others (their scores are not log-odds)."""
    if loss_name != "logistic":
        return None
    return "softmax" if multinomial else "sigmoid"


def proba_refusal(name, loss):
    """Why a model of ``loss`` (not the logistic one) has no ``predict_proba``."""
    return (f"predict_proba and predict_log_proba need loss='logistic'; this {name} has loss={loss!r}, whose "
            "decision_function is not a log-odds.")
