"""Rewriting a store: :func:`rewrite_store` copies a complete store into a new one, optionally with its rows
shuffled by an external bucket shuffle (memory about one block) and its features renumbered by frequency;
``_rewrite_into`` is also the shuffle step of :func:`~daskdca.store.write_store` (dask input) and
:func:`~daskdca.store.convert_svmlight`."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import zarr

from daskdca.store.format import (
    DEFAULT_BLOCK_ROWS,
    NNZ_CHUNK,
    _check_bool,
    _check_int,
    _check_source,
    _check_storage_options,
    _check_url,
)
from daskdca.store.publish import _destination
from daskdca.store.reader import CSRStore
from daskdca.store.writer import (
    _check_writer_args,
    _feature_order,
    _order_attrs,
    _Writer,
)


class _BucketArrays:
    """Rows bound for one output block, appended piecewise to uncompressed arrays."""

    def __init__(self, group, j, value_dtype, index_dtype):
        def array(name, dtype):
            return group.create_array(f"{name}_{j}", shape=(0,), chunks=(NNZ_CHUNK,), dtype=dtype,
                                      compressors=None, fill_value=0)

        self.arrays = {"data": array("data", value_dtype), "indices": array("indices", index_dtype),
                       "row_nnz": array("row_nnz", np.int64), "y": array("y", np.float64),
                       "pos": array("pos", np.int64)}

    def append(self, **values):
        for name, vals in values.items():
            arr = self.arrays[name]
            old = arr.shape[0]
            arr.resize((old + len(vals),))
            if len(vals):
                arr[old:old + len(vals)] = vals

    def read(self, d):
        a = {name: arr[:] for name, arr in self.arrays.items()}
        indptr = np.concatenate(([0], np.cumsum(a["row_nnz"])))
        X = sp.csr_matrix((a["data"], a["indices"], indptr), shape=(len(a["row_nnz"]), d))
        order = np.argsort(a["pos"], kind="stable")
        return X[order], a["y"][order]


def rewrite_store(store, url, *, shuffle=False, seed=0, renumber_features=False,
                  block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", storage_options=None, source_name=None,
                  overwrite=False):
    """Copy a complete store into a new one, optionally shuffled and renumbered.

    Shuffling is an external bucket shuffle: the seeded permutation ``perm``
    puts source row ``perm[p]`` at output position ``p``; each source block is
    split into buckets, one per output block, written to a temporary group
    inside the write's temporary folder; each bucket is then read back, put
    in output order and written.  Memory stays about one block; the data is
    written twice.

    With ``renumber_features`` the stored column ``j`` is the ``j``-th most
    frequent source feature (ties keep source order) and the permutation is
    stored as ``feature_permutation``.

    Parameters
    ----------
    store : CSRStore
        The source (every block is verified as it is read).
    url : str or path
        The new store; it may not be, or lie inside, the source.
    shuffle : bool, default False
        Permute the rows (seeded, uniform); without it the rows keep the
        source's order and its record of how they were shuffled.
    seed : int, default=0
        Seed of the permutation (``shuffle`` only).
    renumber_features : bool, default=False
        Renumber the columns by decreasing frequency (above).
    block_rows : int, default=32768
        Rows per block of the new store.
    compression : {"zstd", "zstd:LEVEL", "none"}, default="zstd"
        The arrays' codec, as :func:`write_store` takes it.
    storage_options : dict, optional
        The fsspec options of ``url`` (the source store keeps its own).
    source_name : str, optional
        Recorded as the source (default: the source store's).
    overwrite : bool, default False
        Replace an existing daskdca store at ``url``.

    Returns
    -------
    CSRStore
        The handle of the new, complete store.
    """
    if not isinstance(store, CSRStore):
        raise TypeError(f"rewrite_store needs a CSRStore (from open_store), got {type(store).__name__}.")
    if store.weighted:
        raise ValueError(f"rewrite_store of a weighted store ({store.url!r}) is not supported yet: its row "
                         "weights would be lost. Write the rows again with write_store(..., sample_weight=...).")
    url = _check_url(url)
    storage_options = _check_storage_options(storage_options)
    _check_writer_args(block_rows, compression, False)
    shuffle = _check_bool("shuffle", shuffle)
    renumber_features = _check_bool("renumber_features", renumber_features)
    seed = _check_int("seed", seed, low=0)
    source_name = _check_source("source_name", source_name, optional=True)
    with _destination(url, storage_options, overwrite=overwrite, inputs=[store.url]) as dest:
        return _rewrite_into(store, dest, storage_options, shuffle=shuffle, seed=seed,
                             renumber_features=renumber_features, block_rows=block_rows, compression=compression,
                             source_name=source_name)


def _rewrite_into(store, dest, storage_options, *, shuffle, seed, renumber_features, block_rows, compression,
                  source_name):
    n, d = store.n, store.d
    feature_permutation = remap = None
    if renumber_features:
        feature_permutation = _feature_order(store.column_nnz)
        remap = np.empty(d, dtype=np.int64)
        remap[feature_permutation] = np.arange(d)

    def renumbered(X):
        if remap is None:
            return X
        return sp.csr_matrix((X.data, remap[X.indices], X.indptr), shape=X.shape)

    value_dtype = np.dtype(store.attrs.get("value_dtype", "float64"))
    index_dtype = np.dtype(store.attrs.get("index_dtype", "int32"))
    extra = _order_attrs(shuffle, seed, source=store)
    # the labels' names and the frame's column names (source feature order, as coef_) go with the rows
    label_names, feature_names = store.attrs.get("label_names"), store.attrs.get("feature_names")
    w = _Writer(dest.work_url, storage_options, block_rows=block_rows, compression=compression,
                float32=value_dtype == np.float32, source=source_name or store.attrs.get("source"),
                index_dtype=index_dtype, dest=dest)
    if not shuffle:
        for X, y in store.iter_blocks():
            w.append(renumbered(X), y)
        return w.finish(n_features=d, feature_permutation=feature_permutation, extra_attrs=extra,
                    label_names=label_names, feature_names=feature_names)
    perm = np.random.default_rng(seed).permutation(n)
    inverse = np.empty(n, dtype=np.int64)
    inverse[perm] = np.arange(n)
    n_out = max(1, -(-n // block_rows))
    group = zarr.open_group(dest.scratch("buckets"), mode="w", storage_options=storage_options or None)
    buckets = [_BucketArrays(group, j, value_dtype, index_dtype) for j in range(n_out)]
    offsets = store.block_row_offsets
    for k in range(store.n_blocks):
        X, y = store.read_block(k)
        position = inverse[offsets[k]:offsets[k + 1]]
        target = position // block_rows
        for j in np.unique(target):
            rows = np.flatnonzero(target == j)
            sub = X[rows]
            buckets[j].append(data=sub.data, indices=sub.indices, row_nnz=np.diff(sub.indptr),
                              y=y[rows], pos=position[rows] % block_rows)
    for j in range(n_out):
        X, y = buckets[j].read(d)
        w.append(renumbered(X), y)
    return w.finish(n_features=d, feature_permutation=feature_permutation, extra_attrs=extra,
                    label_names=label_names, feature_names=feature_names)
