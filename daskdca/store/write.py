"""Writing in-memory or dask data: :func:`write_store` checks ``X``, ``y`` and the row weights, shuffles
and renumbers in memory and writes the blocks; a dask array goes chunk by chunk through
:mod:`daskdca.store.from_dask` (and, to be shuffled, through a temporary store and the bucket shuffle of
:mod:`daskdca.store.rewrite`).  A pandas DataFrame becomes a NumPy array and its column names
(:mod:`daskdca.store.frames`); a dask DataFrame, or a Parquet path read by ``dask.dataframe.read_parquet``,
a dask array of its partitions (:func:`~daskdca.store.from_dask.dask_frame_input`)."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from daskdca.problem import canonical_csr, check_sample_weight, column_nnz
from daskdca.store.format import (
    DEFAULT_BLOCK_ROWS,
    INT32_LIMIT,
    _check_bool,
    _check_int,
    _check_source,
    _check_storage_options,
    _check_url,
)
from daskdca.store.frames import _is_dask_frame, _is_pandas_frame, _refuse_label_name, encode_labels, pandas_input
from daskdca.store.from_dask import (
    _append_dask,
    _check_dask_input,
    _is_dask_array,
    _read_parquet,
    dask_frame_input,
    frame_labels_in_memory,
)
from daskdca.store.publish import _destination
from daskdca.store.rewrite import _rewrite_into
from daskdca.store.writer import (
    _check_dtype,
    _check_finite_block,
    _check_writer_args,
    _feature_order,
    _order_attrs,
    _Writer,
    _writing,
)


def write_store(url, X, y, *, block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", float32=False,
                shuffle=True, seed=0, renumber_features=False, storage_options=None, source="arrays",
                overwrite=False, sample_weight=None):
    """Write in-memory or dask data, a data frame or a Parquet dataset to a complete store and return its handle.

    Parameters
    ----------
    url : str or path
        Local path or fsspec URL.  It must not exist, be an empty folder, or
        (with ``overwrite=True``) be a daskdca store; any other folder is
        refused.
    X : scipy sparse matrix, ndarray, dask array, pandas or dask DataFrame, or Parquet path
        Real numbers (complex raises TypeError).  A dask array (one column
        chunk; else ``X.rechunk({1: -1})``) is written one row chunk at a
        time, each converted to CSR without densifying: its chunks may be
        NumPy arrays, scipy.sparse matrices or arrays of any format (CSR,
        CSC, COO, ...; e.g. AnnData's ``read_elem_lazy``) or pydata sparse
        COO/GCXS arrays (fill value 0), and memory holds one chunk's
        sparse form at a time.  A DataFrame's columns are the features
        (every one numeric: a column of categories, strings, objects or
        dates raises ValueError naming it; encode or drop it first), their
        names recorded as the store's ``feature_names``; a dask DataFrame is
        written one partition at a time, after one pass that counts its rows
        (from the label column, or the first column, alone).  A str or
        ``os.PathLike`` X names a Parquet file or dataset (a folder, a glob or
        an fsspec URL, read with ``storage_options``), read lazily by
        ``dask.dataframe.read_parquet`` and written like a dask DataFrame.
    y : array-like, dask array or Series, or str
        The labels or targets, one per row.  A str names X's label column
        (X a DataFrame or Parquet), which is then not a feature.  A dask
        array or Series is computed chunk by chunk with X's row chunks.
        Numbers are stored as they are; strings, bools and categories are
        stored as the codes ``0 .. K-1`` of their sorted distinct values
        (scikit-learn's order: with two, the second is the positive class),
        recorded as the store's ``label_names`` (at most 64; a dask ``y``
        costs one more pass over the labels to find them).
    block_rows : int, default=32768
        Rows per block (partition).
    compression : {"zstd", "zstd:LEVEL", "none"}, default="zstd"
        The arrays' codec: zstd at level 3, zstd at a level of 1 to 22, or
        none.
    float32 : bool, default=False
        Store values as float32.
    shuffle : bool, default True
        Store the rows in a seeded uniform random order, so that every run of
        blocks (a partition) sees the data's distribution: real files are
        often sorted by label, and distributed solvers converge far slower
        on such partitions.  In memory for arrays; dask input goes through
        a temporary store and the out-of-core bucket shuffle of
        :func:`rewrite_store`.  ``shuffle=False`` keeps the given order.
        :attr:`CSRStore.row_permutation` maps stored rows back.
    seed : int, default=0
        Seed of the permutation.
    renumber_features : bool, default=False
        Renumber columns by decreasing frequency and store the permutation.
    storage_options : dict, optional
        The fsspec options of a URL (the output's, and a Parquet input's).
    source : str, default "arrays"
        The name of the data, recorded in the attributes (anything but a str
        raises TypeError before anything is written); for a Parquet X the
        default records its path instead.
    overwrite : bool, default False
        Replace an existing daskdca store at ``url`` (atomically on local
        file systems: the old store stays until the new one is complete).
    sample_weight : array-like of shape (n,) or None, default None
        Row weights ``s_i >= 0`` (finite, not all zero), stored beside ``y``
        (shuffled with the rows, covered by the block checksums): every fit
        on the store solves ``1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2``.
        With a dask array or DataFrame X the weights (in memory or a dask
        array) are written in X's row order: ``shuffle=False`` and
        ``renumber_features=False`` are then required.

    Returns
    -------
    CSRStore
        The handle of the complete store (:func:`open_store`'s).

    Raises
    ------
    FileExistsError
        ``url`` is a file or a folder that is not a daskdca store, or a store
        and ``overwrite`` is False.
    TypeError, ValueError
        Bad arrays or parameters; the message names the value.

    Examples
    --------
    A Parquet dataset with a label column ``"label"`` (CLI: ``daskdca convert
    data.parquet data.zarr --label-column label``)::

        store = daskdca.write_store("data.zarr", "data.parquet", y="label")
        model = daskdca.fit(store)
    """
    url = _check_url(url)
    storage_options = _check_storage_options(storage_options)
    _check_writer_args(block_rows, compression, float32)
    shuffle = _check_bool("shuffle", shuffle)
    renumber_features = _check_bool("renumber_features", renumber_features)
    seed = _check_int("seed", seed, low=0)
    _check_bool("overwrite", overwrite)
    source = _check_source("source", source)
    if isinstance(X, (str, os.PathLike)):
        source = os.fspath(X) if source == "arrays" else source
        X = _read_parquet(os.fspath(X), storage_options)
    data = prepare_input(X, y)
    return write_prepared(url, data, block_rows=block_rows, compression=compression, float32=float32,
                          shuffle=shuffle, seed=seed, renumber_features=renumber_features,
                          storage_options=storage_options, source=source,
                          overwrite=overwrite, sample_weight=sample_weight)


class PreparedInput(NamedTuple):
    """What a write takes, once data frames are arrays: ``X`` (in memory or a dask array), ``y`` (NumPy
    labels or their codes, a dask array, or None), ``feature_names`` and ``label_names`` (or None)."""

    X: object
    y: object
    feature_names: object
    label_names: object


def write_blocks_of(url, X, y, sizes, *, sample_weight=None, source="arrays"):
    """A store of checked in-memory rows whose blocks hold ``sizes`` rows each, in the order given.

    A fit stages its in-memory arrays with it (no shuffle, no compression)
    so that a partition of the rounds, a run of blocks, holds the rows the
    same partition holds in this process (:func:`~daskdca.partitions.even_sizes`):
    blocks of one ``block_rows`` could not cut ``n`` rows into partitions that
    differ by one row.  ``X`` and ``y`` are as :func:`daskdca.fit` checked
    them (CSR, real labels).
    """
    X = canonical_csr(X)
    y = np.asarray(y, dtype=np.float64)
    sizes = [int(size) for size in sizes]
    if any(size < 1 for size in sizes) or sum(sizes) != X.shape[0]:
        raise ValueError(f"block sizes {sizes} must be positive and add up to the {X.shape[0]} rows (internal)")
    index_dtype = np.int64 if X.shape[1] > INT32_LIMIT else np.int32
    with _writing(url, None, block_rows=max(sizes), compression="none", float32=False, source=source,
                  index_dtype=index_dtype, weighted=sample_weight is not None) as w:
        start = 0
        for size in sizes:
            stop = start + size
            w.append(X[start:stop], y[start:stop], None if sample_weight is None else sample_weight[start:stop])
            w.end_block()
            start = stop
        return w.finish(n_features=X.shape[1], extra_attrs=_order_attrs(False, None))


def prepare_input(X, y):
    """``X`` and ``y`` as a :class:`PreparedInput`: a pandas DataFrame as a NumPy array and its column names,
    a dask DataFrame as a dask array of its partitions (:func:`dask_frame_input`), a label column name
    replaced by the column; anything else as given (checked by the write)."""
    _refuse_label_name(X, y)
    if _is_pandas_frame(X):
        X, y, names = pandas_input(X, y)
        return PreparedInput(X, y, names, None)
    if _is_dask_frame(X):
        X, y, names, label_names = dask_frame_input(X, y)
        return PreparedInput(X, y, names, label_names)
    return PreparedInput(X, y, None, None)


def write_prepared(url, data, *, block_rows, compression, float32, shuffle, seed, renumber_features,
                   storage_options, source, overwrite, sample_weight):
    """:func:`write_store` of a :class:`PreparedInput` whose parameters were checked."""
    X, y = data.X, data.y
    if _is_dask_array(X):
        if sample_weight is not None:
            if shuffle or renumber_features:
                raise ValueError("sample_weight with a dask array or DataFrame X is written in X's row and feature "
                                 "order only: pass shuffle=False and renumber_features=False, or X in memory.")
            # one weight a row, like labels given in memory (a dask array of them is computed: n floats)
            weight = sample_weight.compute() if hasattr(sample_weight, "compute") else sample_weight
            sample_weight = check_sample_weight(weight, X.shape[0])
        y, label_names = _check_dask_input(X, y, data.label_names)
        index_dtype = np.int64 if X.shape[1] > INT32_LIMIT else np.int32
        with _destination(url, storage_options, overwrite=overwrite) as dest:
            if not (shuffle or renumber_features):
                w = _Writer(dest.work_url, storage_options, block_rows=block_rows, compression=compression,
                            float32=float32, source=source, index_dtype=index_dtype, dest=dest,
                            weighted=sample_weight is not None)
                return _append_dask(w, X, y, label_names, sample_weight).finish(
                    n_features=X.shape[1], extra_attrs=_order_attrs(False, None), label_names=label_names,
                    feature_names=data.feature_names)
            # rows are permuted out of core: staged as given, then bucket-shuffled like rewrite_store
            w = _Writer(dest.scratch("staged"), storage_options, block_rows=block_rows, compression="none",
                        float32=float32, source=source, index_dtype=index_dtype)
            staged = _append_dask(w, X, y, label_names).finish(n_features=X.shape[1], label_names=label_names,
                                                               feature_names=data.feature_names)
            return _rewrite_into(staged, dest, storage_options, shuffle=shuffle, seed=seed,
                                 renumber_features=renumber_features, block_rows=block_rows,
                                 compression=compression, source_name=source)
    if sp.issparse(X):
        _check_dtype("X", X.dtype)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim}-D.")
        X = canonical_csr(X, np.float64 if X.dtype.kind != "f" else X.dtype)
    else:
        X = np.asarray(X)
        _check_dtype("X", X.dtype)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x features), got shape {X.shape}.")
        X = sp.csr_matrix(X, dtype=np.float64)
    if X.shape[0] == 0:
        raise ValueError("X has 0 rows; a store needs at least one row.")
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 features (shape {X.shape}); a store needs at least one column.")
    if y is not None and hasattr(y, "compute") and hasattr(y, "to_delayed"):
        y = frame_labels_in_memory(y)
    y, label_names = encode_labels(y, X.shape[0])
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
    X = canonical_csr(X)
    _check_finite_block(X, y, 0, "")
    if shuffle:
        perm = np.random.default_rng(seed).permutation(X.shape[0])
        X, y = X[perm], y[perm]
        if sample_weight is not None:
            sample_weight = sample_weight[perm]
    feature_permutation = None
    if renumber_features:
        feature_permutation = _feature_order(column_nnz(X))
        X = X[:, feature_permutation].tocsr()
    index_dtype = np.int64 if X.shape[1] > INT32_LIMIT else np.int32
    with _writing(url, storage_options, overwrite=overwrite, block_rows=block_rows, compression=compression,
                  float32=float32, source=source, index_dtype=index_dtype, weighted=sample_weight is not None) as w:
        for start in range(0, X.shape[0], block_rows):
            w.append(X[start:start + block_rows], y[start:start + block_rows],
                     None if sample_weight is None else sample_weight[start:start + block_rows])
        return w.finish(n_features=X.shape[1], extra_attrs=_order_attrs(shuffle, seed),
                        feature_permutation=feature_permutation, label_names=label_names,
                        feature_names=data.feature_names)
