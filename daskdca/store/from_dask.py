"""Dask input of a write: the checks of a dask array ``X`` (and ``y``) before anything is written, the
conversion of each computed chunk (NumPy, scipy.sparse or pydata sparse) to CSR without densifying, and
the chunk-by-chunk append to a writer.  Also dask DataFrames (and Parquet, read by
``dask.dataframe.read_parquet``) as dask arrays of their partitions, their label column, and predictions
mapped over their partitions.  The only module of :mod:`daskdca.store` that imports dask, and only
inside its functions, so that importing daskdca does not import dask."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from daskdca.problem import canonical_csr
from daskdca.store.frames import (
    _check_label_column,
    _check_numeric_columns,
    _feature_names,
    _frame_float_dtype,
    _is_dask_frame,
    _is_dask_series,
    _label_kind,
    encode_labels,
    first_missing_label,
    label_codes,
    label_names_of,
    missing_label_error,
    series_values,
)
from daskdca.store.writer import _check_dtype, _check_finite_block


def _is_dask_array(X):
    """Whether ``X`` is a dask array (False where dask is not installed)."""
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is a dependency
        return False
    return isinstance(X, da.Array)


def _check_dask_input(X, y, label_names=None):
    """Checks of a dask array input before anything is written; returns ``(y, label_names)``: ``y`` NumPy
    (labels or their codes) unless dask, and the names of labels that are not numbers (None for numbers),
    found by one pass over a dask ``y`` unless given."""
    _check_dtype("X", X.dtype)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D dask array, got {X.ndim}-D.")
    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError("X must be a dask array with known chunk sizes; call X.compute_chunk_sizes().")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"X is chunked along features ({len(X.chunks[1])} column chunks of "
                         f"{list(X.chunks[1][:4])}{'...' if len(X.chunks[1]) > 4 else ''} columns); daskdca "
                         "reads whole rows, one row chunk at a time: rechunk it to one column chunk with "
                         "X.rechunk({1: -1}) (for a lazy sparse array, whose chunks stay sparse).")
    meta = getattr(X, "_meta", None)
    if meta is not None and _chunk_kind(meta) is None:  # refused before anything is computed or written
        raise TypeError(_unsupported_chunk(meta, "X's chunks (its meta)"))
    if X.shape[0] == 0:
        raise ValueError("X has 0 rows; a store needs at least one row.")
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 features (shape {X.shape}); a store needs at least one column.")
    if hasattr(y, "compute") and hasattr(y, "chunks"):
        if y.dtype.kind == "c":
            _check_dtype("y", y.dtype)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per row), got shape {y.shape}.")
        if any(math.isnan(c) for c in y.chunks[0]):
            y = y.compute_chunk_sizes()  # the length must be known before anything is written
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries; they must match.")
        y = y.rechunk((X.chunks[0],))  # one label chunk per row chunk, computed together with it
        if label_names is None and y.dtype.kind not in "iuf":
            label_names = _dask_label_names(y)
        return y, label_names
    return encode_labels(y, X.shape[0])


def _distinct(values):
    """The distinct labels of one chunk or partition (checked for one type and no missing value), as a set of
    str, bool or float."""
    values = np.asarray(values)
    if not values.size:
        return set()
    kind = _label_kind(values) if values.dtype.kind == "O" else None
    if values.dtype.kind in "iuf" or kind == "numeric":
        return set(np.unique(values.astype(np.float64)).tolist())
    if values.dtype.kind == "b" or kind == "bool":
        return set(np.unique(values.astype(bool)).tolist())
    return set(np.unique(values.astype(str)).tolist())


def _chunk_labels(values):
    """One chunk's or partition's labels, summed up in its task: ``(rows, distinct, missing)``.

    ``distinct`` is :func:`_distinct` of the labels, or None when one is
    missing; ``missing`` is then ``(its row within the chunk, the value)``,
    else None.  The task does not raise for a missing label: only the caller
    knows the chunk's first row in X, and names the row in X
    (:func:`_refuse_missing_label`).
    """
    values = np.asarray(values)
    if values.dtype.kind == "O":
        missing = first_missing_label(values)
        if missing is not None:
            return len(values), None, (missing, values.ravel()[missing])
    return len(values), _distinct(values), None


def _refuse_missing_label(missing, lengths):
    """Raise the missing-label error of the first chunk that has one, at its row in X.

    Parameters
    ----------
    missing : sequence of (int, object) or None
        Each chunk's first missing label, ``(row within the chunk, value)``,
        or None (:func:`_chunk_labels`), in X's row order.
    lengths : sequence of int
        Each chunk's rows.

    Raises
    ------
    ValueError
        When a chunk has a missing label.
    """
    first_row = 0
    for found, rows in zip(missing, lengths):
        if found is not None:
            raise missing_label_error(found[1], first_row + int(found[0]))
        first_row += int(rows)


def _names_of_distinct(values):
    """``label_names`` of the distinct labels found (a set), or None when they are numbers."""
    values = list(values)
    if not values or all(isinstance(v, float) for v in values):
        return None
    return label_names_of(np.asarray(values, dtype=object))


def _dask_label_names(y):
    """The sorted names of a dask array of labels that are not numbers (None when they are numbers): one pass
    over ``y``, its chunks' distinct values computed in parallel and joined here (a few values each)."""
    import dask

    parts = dask.compute(*[dask.delayed(_chunk_labels)(block) for block in y.to_delayed().ravel()])
    _refuse_missing_label([part[2] for part in parts], [part[0] for part in parts])
    return _names_of_distinct(set().union(*(part[1] for part in parts)))


def _chunk_kind(chunk):
    """How a dask chunk becomes CSR without densifying: ``"dense"``, ``"scipy"``, ``"pydata"`` or None."""
    if isinstance(chunk, np.ndarray):
        return "dense"  # already dense: CSR is the smaller form
    if sp.issparse(chunk):
        return "scipy"  # any format (CSR, CSC, COO, ...), matrix or array
    if hasattr(chunk, "to_scipy_sparse") and any(c.__module__.split(".")[0] == "sparse"
                                                 for c in type(chunk).__mro__):
        return "pydata"  # pydata sparse COO / GCXS
    return None


def _unsupported_chunk(chunk, what):
    """The TypeError message for a chunk (or meta) ``chunk`` of a type :func:`_chunk_kind` does not know."""
    return (f"{what} is a {type(chunk).__module__}.{type(chunk).__name__}; daskdca reads dask chunks that are "
            "scipy.sparse matrices or arrays (CSR, CSC, COO, ...), pydata sparse COO/GCXS arrays or NumPy "
            "arrays, and never densifies sparse ones. Convert the chunks to scipy.sparse CSR first, e.g. "
            "X.map_blocks(to_csr, dtype=X.dtype, meta=scipy.sparse.csr_matrix((0, 0))).")


def _chunk_as_csr(chunk, k, shape):
    """One computed dask chunk as a scipy CSR matrix, never through a dense array.

    Parameters
    ----------
    chunk : ndarray, scipy sparse matrix or array, or pydata sparse array
        Chunk ``k`` (row-chunk number) of the dask array.
    k : int
        The chunk's number, for messages.
    shape : tuple of int
        The chunk's shape as the dask array declares it.

    Returns
    -------
    scipy.sparse.csr_matrix
        Float64 for dense chunks, the chunk's dtype otherwise.

    Raises
    ------
    TypeError
        An unsupported chunk type, complex or non-numeric values.
    ValueError
        A chunk whose shape differs from the declared one, or a pydata
        sparse chunk with a non-zero fill value.
    """
    kind = _chunk_kind(chunk)
    if kind is None:
        raise TypeError(_unsupported_chunk(chunk, f"chunk {k} of X"))
    _check_dtype("X", chunk.dtype)
    if tuple(chunk.shape) != tuple(shape):
        raise ValueError(f"chunk {k} of X has shape {tuple(chunk.shape)} but the dask array declares "
                         f"{tuple(shape)} for it; fix the shape given to da.from_delayed / map_blocks (its rows "
                         "are matched with the labels y).")
    if kind == "dense":
        return sp.csr_matrix(chunk, dtype=np.float64)
    if kind == "pydata":
        fill = chunk.fill_value
        if fill != 0:
            raise ValueError(f"chunk {k} of X is a pydata sparse array with fill_value={fill!r}; only "
                             "fill_value=0 can be written without densifying. Build the chunks with "
                             "fill_value=0 (store the shift separately), or pass scipy.sparse chunks.")
        chunk = chunk.to_scipy_sparse()  # COO -> coo, GCXS -> csr / csc: the stored entries only
    return sp.csr_matrix(chunk)


def _append_dask(w, X, y, label_names=None, weight=None):
    """Append a dask array's row chunks to writer ``w``, one chunk in memory at a time; returns ``w``.

    ``weight`` (checked, in memory, one a row; None: unweighted) goes with each chunk's rows.

    Each chunk is computed (with its labels when ``y`` is a dask array
    chunked like X's rows), converted to CSR by :func:`_chunk_as_csr`
    without densifying, checked and appended before the next is computed:
    memory is one chunk's sparse form plus the writer's buffers.  Labels
    that are not numbers are appended as their codes in ``label_names``.
    """
    import dask

    blocks = X.to_delayed().ravel()
    labels = y.to_delayed().ravel() if hasattr(y, "to_delayed") else None
    start = 0
    for k, block in enumerate(blocks):
        rows = X.chunks[0][k]
        if labels is None:
            chunk = block.compute()
            yc = y[start:start + rows]
        else:
            chunk, yc = dask.compute(block, labels[k])
        chunk = _chunk_as_csr(chunk, k, (rows, X.shape[1]))
        if label_names is not None and labels is not None:
            yc = label_codes(yc, label_names, first_row=start)
        elif labels is not None and np.asarray(yc).dtype.kind == "O":
            yc = encode_labels(yc, len(yc))[0]  # object chunks of numbers
        yc = np.asarray(yc, dtype=np.float64)
        if yc.shape != (rows,):
            raise ValueError(f"chunk {k} of y has shape {yc.shape} but X's chunk {k} has {rows} rows; "
                             "they must match.")
        chunk = canonical_csr(chunk)  # a persisted chunk may be the user's own matrix
        _check_finite_block(chunk, yc, start, "")
        w.append(chunk, yc, None if weight is None else weight[start:start + rows])
        del chunk, yc  # the next chunk is computed without this one alive
        start += rows
    return w


# ----------------------------------------------------------------- dask DataFrames and Parquet


def _read_parquet(path, storage_options=None):
    """A Parquet file or dataset (a folder, a glob, an fsspec URL) as a dask DataFrame, read lazily."""
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover - dask[dataframe] is optional
        raise ImportError(f"reading the Parquet data {path!r} needs dask.dataframe and pyarrow ({exc}); install "
                          "them with pip install 'daskdca[dataframe]'.") from None
    try:
        return dd.read_parquet(path, storage_options=storage_options or None)
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"X={path!r} could not be read as Parquet ({type(exc).__name__}: {exc}); a path as X must "
                         "name a Parquet file or dataset. Convert an svmlight file with convert_svmlight, and a "
                         "store with rewrite_store.") from exc


def _partition_block(part, columns, dtype):
    """One computed partition's feature columns as a NumPy array (NaN for a missing value)."""
    return part[columns].to_numpy(dtype=dtype, na_value=np.nan)


def _length_and_labels(part, label):
    """One partition's ``(rows, distinct, missing)``: for a ``label`` column name, that column's distinct values
    or its first missing label (:func:`_chunk_labels`); else ``(rows, None, None)``."""
    if label is None:
        return len(part), None, None
    return _chunk_labels(series_values(part[label]))


def dask_frame_input(X, y):
    """A dask DataFrame ``X`` (and ``y``: its label column's name, a dask Series, or labels in memory) as a
    dask array of its partitions, without computing it into this process.

    One pass computes every partition's length (and, for a label column that
    is not numbers, its distinct labels), from the very partitions the
    array's chunks are (a column read alone may be partitioned otherwise,
    e.g. by ``read_parquet``); the data is read again, one partition at a
    time, when the array's chunks are computed.

    Parameters
    ----------
    X : dask.dataframe.DataFrame
        Features in columns, every one numeric (else a ValueError names the
        columns that are not, and the fix).
    y : str, dask Series, array-like or None
        The name of X's label column (taken out of the features), a dask
        Series of labels (its partitions may differ from X's), the labels in
        memory, or None.

    Returns
    -------
    X : dask array of shape (n_samples, n_features)
        One row chunk per partition, float32 when every column is float32,
        else float64.
    y : dask array, the given labels, or None
    feature_names : ndarray of object or None
    label_names : list or None
        The sorted distinct labels of a label column that is not numbers.
    """
    import dask
    import dask.array as da

    label = None
    if isinstance(y, str):
        _check_label_column(X.columns, y)
        label, y = y, None
    columns = [c for c in X.columns if c != label]
    if not columns:
        raise ValueError(f"X has no feature column beside the label column {label!r}; a store needs at least one.")
    _check_numeric_columns(X.dtypes[columns])
    dtype = _frame_float_dtype(X.dtypes[columns])
    distinct = label is not None and not _numeric_label_dtype(X.dtypes[label])
    parts = X.to_delayed()
    jobs = [dask.delayed(_length_and_labels)(part, label if distinct else None) for part in parts]
    y_parts = y.to_delayed() if _is_dask_series(y) else []
    jobs += [dask.delayed(_length_and_labels)(part, None) for part in y_parts]  # in the same pass
    counts = dask.compute(*jobs)
    lengths = [int(c[0]) for c in counts[:len(parts)]]
    if distinct:  # named at its row in X, which only the partitions' lengths together give
        _refuse_missing_label([c[2] for c in counts[:len(parts)]], lengths)
    blocks = [da.from_delayed(dask.delayed(_partition_block)(part, columns, dtype), shape=(rows, len(columns)),
                              dtype=dtype) for part, rows in zip(parts, lengths) if rows]
    if not blocks:
        raise ValueError("X has 0 rows; a store needs at least one row.")
    array = da.concatenate(blocks, axis=0)
    label_names = None
    if label is not None:
        # a numeric column keeps its own dtype (integer labels stay integers until they are stored)
        labels = [da.from_delayed(dask.delayed(series_values)(part[label]), shape=(rows,),
                                  dtype=object if distinct else X.dtypes[label])
                  for part, rows in zip(parts, lengths) if rows]
        y = da.concatenate(labels)
        if distinct:
            label_names = _names_of_distinct(set().union(*(c[1] for c in counts[:len(parts)])))
    elif _is_dask_series(y):
        y_lengths = [int(c[0]) for c in counts[len(parts):]]
        kind = y.dtype if _numeric_label_dtype(y.dtype) else object
        y = da.concatenate([da.from_delayed(dask.delayed(series_values)(part), shape=(rows,), dtype=kind)
                            for part, rows in zip(y_parts, y_lengths) if rows])
    return array, y, _feature_names(columns), label_names


def _numeric_label_dtype(dtype):
    """Whether a label column of ``dtype`` holds numbers (stored as their values)."""
    return isinstance(dtype, np.dtype) and dtype.kind in "iuf"


def frame_in_memory(X):
    """A dask DataFrame computed into a pandas DataFrame one partition at a time (the estimators fit in
    memory); its columns are checked first, from its metadata."""
    import pandas as pd

    _check_numeric_columns(X.dtypes)
    return pd.concat([part.compute() for part in X.to_delayed()])


def frame_labels_in_memory(y):
    """A dask Series or array of labels computed into memory, one partition or chunk at a time."""
    if _is_dask_series(y):
        return np.concatenate([series_values(part.compute()) for part in y.to_delayed()])
    return np.concatenate([np.asarray(part.compute()) for part in y.to_delayed().ravel()])


def map_frame(X, function, *, columns, names, dtype):
    """``function`` over a dask DataFrame's partitions: a lazy dask Series (``names`` None) or DataFrame with
    the columns ``names``, with X's partitions and index.

    Parameters
    ----------
    X : dask.dataframe.DataFrame
        Numeric columns only (checked from the metadata).
    function : callable
        Maps one partition's features, a NumPy array, to a 1-D or 2-D array.
    columns : list
        X's columns as given (their order is the features').
    names : list or None
        The output's columns (None: one value per row, a Series).
    dtype : dtype
        The output's dtype.
    """
    import pandas as pd

    _check_numeric_columns(X.dtypes)
    float_dtype = _frame_float_dtype(X.dtypes)
    if names is None:
        meta = pd.Series(np.empty(0, dtype=dtype), index=X._meta.index)
    else:
        meta = pd.DataFrame(np.empty((0, len(names)), dtype=dtype), columns=list(names), index=X._meta.index)
    return X.map_partitions(_frame_output, function=function, columns=list(columns), dtype=float_dtype,
                            names=None if names is None else list(names), meta=meta)


def _frame_output(part, *, function, columns, dtype, names):
    """One partition's output as a pandas Series or DataFrame on the partition's index."""
    import pandas as pd

    values = function(_partition_block(part, columns, dtype))
    if names is None:
        return pd.Series(np.asarray(values).reshape(-1), index=part.index)
    return pd.DataFrame(np.asarray(values), index=part.index, columns=names)


def _is_dask_input(X):
    """A dask array or a dask DataFrame."""
    return _is_dask_array(X) or _is_dask_frame(X)
