"""The zarr store: CSR row blocks that are the partitions of the Dask engine.

Layout (one zarr v3 group, anndata-compatible CSR, spec ``dask-zarr-numba.md`` §4.2)::

    store.zarr/
      zarr.json      attrs: encoding-type="csr_matrix", encoding-version="0.1.0", shape=[n, d],
                            daskdca={format_version, complete, nnz, block_row_offsets,
                                     block_checksums, label_values, label_mapping, value_dtype,
                                     index_dtype, source, max_row_norm, mean_row_norm, ...}
      data        (nnz,)  float64 | float32   chunks 2**20
      indices     (nnz,)  int32 (int64 when d >= 2**31)
      indptr      (n+1,)  int64               chunks 2**16
      y           (n,)    float64             labels as in the source
      row_sqnorm  (n,)    float64             ||x_i||^2
      column_nnz  (d,)    int64               rows containing each feature (sparse ESO bound)
      feature_permutation (d,) int64          only when features were renumbered:
                                              stored column j is source feature [j]

A store is valid only once complete: the writer fills the arrays, reads every
block back to compute its CRC32, and only then writes the attributes above in
one update (the ``encoding-type`` and ``complete`` keys included), so an
interrupted write leaves nothing that :func:`open_store` or anndata accepts.
:meth:`CSRStore.read_block` verifies the block's checksum, so a deleted or
altered chunk (which zarr would silently read as fill values) raises.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import math
import os
import uuid
import zlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import zarr
from zarr.codecs import ZstdCodec

__all__ = [
    "FORMAT_VERSION",
    "StoreError",
    "CSRStore",
    "open_store",
    "write_store",
    "convert_svmlight",
    "rewrite_store",
]

FORMAT_VERSION = 1
DEFAULT_BLOCK_ROWS = 2**15
# Chunk sizes measured in spec dask-zarr-numba.md §4.2 (1 Mi elements for the
# nnz arrays: 12-32 ms per 2.3 M-nnz block; 64 Ki for per-row arrays).
NNZ_CHUNK = 2**20
ROW_CHUNK = 2**16
# Text read per parser call when converting svmlight (memory per call is a
# small multiple of this).
DEFAULT_CHUNK_BYTES = 32 * 2**20
# Label values recorded in the attributes (regression targets have many).
MAX_LABEL_VALUES = 64
INT32_LIMIT = 2**31 - 1


# (url, block, checksum) of blocks this process has verified (read_block(verify="once"))
_VERIFIED_BLOCKS = set()


class StoreError(ValueError):
    """A store is missing, incomplete, inconsistent or corrupted."""


def _compressors(compression):
    if compression in (None, "none"):
        return None
    if isinstance(compression, str) and compression.startswith("zstd"):
        level = 3
        if ":" in compression:
            try:
                level = int(compression.split(":", 1)[1])
            except ValueError:
                level = None
        if level is None or not 1 <= level <= 22:
            raise ValueError(f"compression={compression!r}: the zstd level must be 1..22, e.g. 'zstd:3'.")
        return [ZstdCodec(level=level)]
    raise ValueError(f"Unknown compression {compression!r}; use 'zstd' (level 3), 'zstd:LEVEL' or 'none'.")


def _block_checksum(indptr_local, indices, data, y):
    crc = zlib.crc32(np.ascontiguousarray(indptr_local, dtype=np.int64).tobytes())
    crc = zlib.crc32(np.ascontiguousarray(indices).tobytes(), crc)
    crc = zlib.crc32(np.ascontiguousarray(data).tobytes(), crc)
    return zlib.crc32(np.ascontiguousarray(y, dtype=np.float64).tobytes(), crc)


def _remove(url, storage_options):
    """Best-effort removal of a (partial) store."""
    with contextlib.suppress(Exception):
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        if fs.exists(path):
            fs.rm(path, recursive=True)


@dataclass(frozen=True)
class _Meta:
    n: int
    d: int
    nnz: int
    block_row_offsets: tuple
    block_checksums: tuple
    attrs: dict


class CSRStore:
    """Read handle of a complete store; pickles as ``(url, storage_options)``.

    Attributes
    ----------
    n, d, nnz : int
        Rows, features and stored non-zeros.
    n_blocks : int
        Row blocks (the partitions of the Dask engine).
    block_row_offsets : ndarray of int64
        Block ``k`` holds rows ``[offsets[k], offsets[k+1])``.
    attrs : dict
        The ``daskdca`` attribute block.
    """

    def __init__(self, url, storage_options, meta):
        self.url = url
        self.storage_options = dict(storage_options or {})
        self._meta = meta
        self._group = None

    # pickling: the zarr group is reopened lazily on the other side
    def __getstate__(self):
        return {"url": self.url, "storage_options": self.storage_options, "_meta": self._meta}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._group = None

    @property
    def group(self):
        if self._group is None:
            self._group = zarr.open_group(self.url, mode="r", storage_options=self.storage_options or None)
        return self._group

    n = property(lambda self: self._meta.n)
    d = property(lambda self: self._meta.d)
    nnz = property(lambda self: self._meta.nnz)
    attrs = property(lambda self: self._meta.attrs)
    n_blocks = property(lambda self: len(self._meta.block_row_offsets) - 1)

    @property
    def block_row_offsets(self):
        return np.asarray(self._meta.block_row_offsets, dtype=np.int64)

    @property
    def label_values(self):
        """Sorted distinct labels (None when there are more than 64: regression targets)."""
        values = self.attrs.get("label_values")
        return None if values is None else np.asarray(values)

    @property
    def feature_permutation(self):
        """``perm`` with stored column ``j`` = source feature ``perm[j]``, or None."""
        if not self.attrs.get("renumbered_features"):
            return None
        return self.group["feature_permutation"][:]

    def to_source_features(self, w):
        """A weight vector in stored column order, returned in the source's feature order."""
        perm = self.feature_permutation
        if perm is None:
            return np.asarray(w)
        out = np.empty_like(np.asarray(w))
        out[perm] = w
        return out

    def _read_raw(self, start, stop):
        """``(indptr - indptr[0], indices, data, y)`` of rows ``[start, stop)``, as stored."""
        g = self.group
        indptr = g["indptr"][start:stop + 1].astype(np.int64)
        lo, hi = int(indptr[0]), int(indptr[-1])
        return indptr - lo, g["indices"][lo:hi], g["data"][lo:hi], g["y"][start:stop]

    def read_rows(self, start, stop):
        """Rows ``[start, stop)`` as ``(csr_matrix, y)`` (no checksum check)."""
        indptr, indices, data, y = self._read_raw(start, stop)
        return sp.csr_matrix((data, indices, indptr), shape=(stop - start, self.d)), y

    def read_block(self, k, *, verify=True):
        """Block ``k`` as ``(csr_matrix, y)``.

        ``verify=True`` checks the block against its checksum; ``"once"``
        checks it the first time this process reads it (the engine's
        out-of-core rounds re-read every block every round).
        """
        if not 0 <= k < self.n_blocks:
            raise IndexError(f"block {k} out of range: the store has {self.n_blocks} blocks.")
        start, stop = self._meta.block_row_offsets[k], self._meta.block_row_offsets[k + 1]
        indptr, indices, data, y = self._read_raw(start, stop)
        X = sp.csr_matrix((data, indices, indptr), shape=(stop - start, self.d))
        token = (self.url, k, self._meta.block_checksums[k])
        if verify == "once" and token in _VERIFIED_BLOCKS:
            return X, y
        # the checksum covers the arrays as stored (scipy may change index dtypes)
        if _block_checksum(indptr, indices, data, y) != self._meta.block_checksums[k]:
            raise StoreError(
                f"block {k} of {self.url} (rows {start}..{stop - 1}) does not match its checksum: "
                "the store was modified or a chunk is missing. Convert the data again."
            )
        _VERIFIED_BLOCKS.add(token)
        return X, y

    def iter_blocks(self):
        for k in range(self.n_blocks):
            yield self.read_block(k)

    def read_all(self):
        """The whole store in memory as ``(csr_matrix, y)``."""
        blocks = [self.read_block(k) for k in range(self.n_blocks)]
        return sp.vstack([b[0] for b in blocks], format="csr"), np.concatenate([b[1] for b in blocks])

    def __repr__(self):
        return f"CSRStore({self.url!r}, n={self.n}, d={self.d}, nnz={self.nnz}, n_blocks={self.n_blocks})"


def open_store(url, storage_options=None):
    """Open a complete daskdca store (local path or fsspec URL) for reading.

    Raises
    ------
    StoreError
        If there is no store at ``url``, it is incomplete (an interrupted
        conversion), or its attributes and arrays disagree.
    """
    url = os.fspath(url)
    try:
        group = zarr.open_group(url, mode="r", storage_options=storage_options or None)
    except (FileNotFoundError, zarr.errors.GroupNotFoundError) as exc:
        raise StoreError(f"No daskdca store at {url!r}: {exc}. Create one with `daskdca convert`.") from exc
    attrs = group.attrs.asdict()
    meta = attrs.get("daskdca")
    if not isinstance(meta, dict) or meta.get("complete") is not True:
        raise StoreError(
            f"{url!r} is not a complete daskdca store (no completion marker): an interrupted or "
            "failed conversion left it. Run the conversion again; it overwrites the partial store."
        )
    if meta.get("format_version") != FORMAT_VERSION:
        raise StoreError(f"{url!r} has store format {meta.get('format_version')!r}; "
                         f"this daskdca reads format {FORMAT_VERSION}.")
    try:
        n, d = (int(v) for v in attrs["shape"])
        nnz = int(meta["nnz"])
        offsets = tuple(int(v) for v in meta["block_row_offsets"])
        checksums = tuple(int(v) for v in meta["block_checksums"])
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{url!r} has malformed daskdca attributes ({exc!r}).") from exc
    problems = []
    expected = {"data": (nnz,), "indices": (nnz,), "indptr": (n + 1,), "y": (n,), "row_sqnorm": (n,),
                "column_nnz": (d,)}
    for name, shape in expected.items():
        if name not in group:
            problems.append(f"array {name!r} is missing")
        elif group[name].shape != shape:
            problems.append(f"array {name!r} has shape {group[name].shape}, expected {shape}")
    if attrs.get("encoding-type") != "csr_matrix":
        problems.append(f"encoding-type is {attrs.get('encoding-type')!r}")
    if not offsets or offsets[0] != 0 or offsets[-1] != n or any(b <= a for a, b in zip(offsets, offsets[1:])):
        problems.append("block_row_offsets do not split [0, n) into non-empty blocks")
    if len(checksums) != len(offsets) - 1:
        problems.append("there is not one checksum per block")
    if not problems:
        ends = group["indptr"][[0, n]] if n else np.zeros(2)
        if int(ends[0]) != 0 or int(ends[-1]) != nnz:
            problems.append(f"indptr runs from {int(ends[0])} to {int(ends[-1])}, expected 0 to nnz={nnz}")
    if problems:
        raise StoreError(f"{url!r} is inconsistent ({'; '.join(problems)}); convert the data again.")
    return CSRStore(url, storage_options, _Meta(n, d, nnz, offsets, checksums, meta))


class _Writer:
    """Append rows, re-cut them into blocks of ``block_rows``, finalize atomically."""

    def __init__(self, url, storage_options, *, block_rows, compression, float32, source,
                 index_dtype=np.int32):
        if isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer)) or block_rows < 1:
            raise ValueError(f"block_rows must be a positive int, got {block_rows!r}.")
        self.url = os.fspath(url)
        self.storage_options = storage_options
        self.block_rows = int(block_rows)
        self.value_dtype = np.dtype(np.float32 if float32 else np.float64)
        self.index_dtype = np.dtype(index_dtype)
        self.source = source
        compressors = _compressors(compression)
        self.compression = compression or "none"
        self.group = zarr.open_group(self.url, mode="w", storage_options=storage_options or None)
        self.group.attrs.update({"daskdca": {"format_version": FORMAT_VERSION, "complete": False}})

        def array(name, dtype, chunk):
            return self.group.create_array(name, shape=(0,), chunks=(chunk,), dtype=dtype,
                                           compressors=compressors, fill_value=0)

        self.arrays = {
            "data": array("data", self.value_dtype, NNZ_CHUNK),
            "indices": array("indices", self.index_dtype, NNZ_CHUNK),
            "indptr": array("indptr", np.int64, ROW_CHUNK),
            "y": array("y", np.float64, ROW_CHUNK),
            "row_sqnorm": array("row_sqnorm", np.float64, ROW_CHUNK),
        }
        self.arrays["indptr"].resize((1,))
        self.arrays["indptr"][0:1] = np.zeros(1, dtype=np.int64)
        self.n = 0
        self.nnz = 0
        self.d = 0
        self.block_row_offsets = [0]
        self.column_nnz = np.zeros(0, dtype=np.int64)
        self.labels = set()
        self.too_many_labels = False
        self.min_index = None

    def _append_arrays(self, name, values):
        """Append in slices that end on chunk boundaries (bounds zarr's buffers)."""
        arr = self.arrays[name]
        old = arr.shape[0]
        arr.resize((old + len(values),))
        chunk = arr.chunks[0]
        pos = 0
        while pos < len(values):
            stop = min(len(values), pos + chunk - (old + pos) % chunk)
            arr[old + pos:old + stop] = values[pos:stop]
            pos = stop

    def append(self, X, y):
        """Write rows straight to the arrays; blocks are only row boundaries.

        Memory is bounded by the rows passed in (one parsed text chunk), not
        by the block size.
        """
        if X.shape[0] == 0:
            return
        X = sp.csr_matrix(X)
        X.sort_indices()
        data = X.data.astype(self.value_dtype, copy=False)
        if not np.all(np.isfinite(data)):
            raise ValueError("non-finite value in the data (checked by the caller first)")
        indices = X.indices
        if indices.size:
            low, top = int(indices.min()), int(indices.max())
            if self.index_dtype == np.int32 and top > INT32_LIMIT:
                raise ValueError(f"feature index {top} needs int64 indices; pass n_features >= 2**31.")
            self.min_index = low if self.min_index is None else min(self.min_index, low)
            self.d = max(self.d, top + 1)
        if self.column_nnz.shape[0] < self.d:
            self.column_nnz = np.concatenate([self.column_nnz,
                                              np.zeros(self.d - self.column_nnz.shape[0], dtype=np.int64)])
        np.add.at(self.column_nnz, indices[data != 0], 1)
        row_sqnorm = np.zeros(X.shape[0])
        nonempty = np.flatnonzero(np.diff(X.indptr) > 0)
        if nonempty.size:  # segments between non-empty row starts are exactly those rows
            row_sqnorm[nonempty] = np.add.reduceat(data.astype(np.float64) ** 2, X.indptr[nonempty])
        self._append_arrays("data", data)
        self._append_arrays("indices", indices.astype(self.index_dtype, copy=False))
        self._append_arrays("indptr", X.indptr[1:].astype(np.int64) + self.nnz)
        self._append_arrays("y", np.asarray(y, dtype=np.float64))
        self._append_arrays("row_sqnorm", row_sqnorm)
        if not self.too_many_labels:
            self.labels.update(np.unique(y).tolist())
            if len(self.labels) > MAX_LABEL_VALUES:
                self.too_many_labels = True
                self.labels = set()
        self.n += X.shape[0]
        self.nnz += data.size
        while self.n - self.block_row_offsets[-1] >= self.block_rows:
            self.block_row_offsets.append(self.block_row_offsets[-1] + self.block_rows)

    def _block_checksum_streamed(self, start, stop):
        """CRC32 of a block, read back in chunk-sized slices (zlib.crc32 is incremental)."""
        g = self.group
        indptr = g["indptr"][start:stop + 1]
        lo, hi = int(indptr[0]), int(indptr[-1])
        crc = zlib.crc32(np.ascontiguousarray(indptr - lo, dtype=np.int64).tobytes())
        for name in ("indices", "data"):
            for a in range(lo, hi, NNZ_CHUNK):
                crc = zlib.crc32(np.ascontiguousarray(g[name][a:min(hi, a + NNZ_CHUNK)]).tobytes(), crc)
        return zlib.crc32(np.ascontiguousarray(g["y"][start:stop], dtype=np.float64).tobytes(), crc)

    def finish(self, *, n_features=None, shift_indices=0, extra_attrs=None, feature_permutation=None):
        """Write the last block, the statistics, the checksums and then the marker."""
        if self.block_row_offsets[-1] < self.n:
            self.block_row_offsets.append(self.n)
        if shift_indices:
            self._shift_indices(shift_indices)
        d = self.d if n_features is None else int(n_features)
        if d < self.d:
            raise ValueError(f"feature index {self.d - 1} is beyond n_features={n_features}; "
                             f"pass n_features >= {self.d}.")
        column_nnz = np.zeros(d, dtype=np.int64)
        column_nnz[: self.column_nnz.shape[0]] = self.column_nnz
        cn = self.group.create_array("column_nnz", shape=(d,), chunks=(NNZ_CHUNK,), dtype=np.int64,
                                     compressors=_compressors(self.compression), fill_value=0)
        if d:
            cn[:] = column_nnz
        if feature_permutation is not None:
            fp = self.group.create_array("feature_permutation", shape=(d,), chunks=(NNZ_CHUNK,),
                                         dtype=np.int64, compressors=_compressors(self.compression))
            fp[:] = feature_permutation
        checksums, sqsum, max_sq = [], 0.0, 0.0
        g = self.group
        for k in range(len(self.block_row_offsets) - 1):
            start, stop = self.block_row_offsets[k], self.block_row_offsets[k + 1]
            checksums.append(self._block_checksum_streamed(start, stop))
            sq = g["row_sqnorm"][start:stop]
            sqsum += float(np.sqrt(sq).sum())
            max_sq = max(max_sq, float(sq.max(initial=0.0)))
        labels = None if self.too_many_labels else sorted(self.labels)
        meta = {
            "format_version": FORMAT_VERSION,
            "nnz": int(self.nnz),
            "block_row_offsets": [int(v) for v in self.block_row_offsets],
            "block_checksums": checksums,
            "block_rows": self.block_rows,
            "label_values": labels,
            "label_mapping": ({"-1": labels[0], "+1": labels[1]} if labels is not None and len(labels) == 2
                              else None),
            "value_dtype": self.value_dtype.name,
            "index_dtype": self.index_dtype.name,
            "compression": str(self.compression),
            "source": self.source,
            "max_row_norm": math.sqrt(max_sq),
            "mean_row_norm": sqsum / self.n if self.n else 0.0,
            "renumbered_features": feature_permutation is not None,
        }
        meta.update(extra_attrs or {})
        meta["complete"] = True  # written last, with the anndata keys, in one update
        self.group.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0",
                                 "shape": [int(self.n), int(d)], "daskdca": meta})
        return open_store(self.url, self.storage_options)

    def _shift_indices(self, shift):
        arr = self.arrays["indices"]
        for lo in range(0, arr.shape[0], NNZ_CHUNK):
            hi = min(lo + NNZ_CHUNK, arr.shape[0])
            arr[lo:hi] = arr[lo:hi] - shift
        self.column_nnz = self.column_nnz[shift:]
        self.d = max(0, self.d - shift)
        if self.min_index is not None:
            self.min_index -= shift


@contextlib.contextmanager
def _writing(url, storage_options, **kwargs):
    """A writer whose partial store is removed if anything fails."""
    writer = _Writer(url, storage_options, **kwargs)
    try:
        yield writer
    except BaseException:
        _remove(writer.url, storage_options)
        raise


def _check_finite_block(X, y, first_row, where):
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        raise ValueError(f"non-finite value {float(X.data[bad[0]])!r} at row {first_row + row} "
                         f"(column {int(X.indices[bad[0]])}){where}; remove or fix it before converting.")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise ValueError(f"non-finite label {float(y[bad[0]])!r} at row {first_row + int(bad[0])}{where}.")


def _feature_order(column_nnz):
    """Most frequent feature first; ties keep source order (stable)."""
    return np.argsort(-column_nnz, kind="stable")


def write_store(url, X, y, *, block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", float32=False,
                shuffle=False, seed=0, renumber_features=False, storage_options=None, source="arrays"):
    """Write in-memory or dask data to a complete store and return its handle.

    Parameters
    ----------
    url : str or path
        Local path or fsspec URL; an existing store there is replaced.
    X : scipy sparse matrix, ndarray, or dask array of row chunks
        A dask array is written chunk by chunk (each chunk converted to CSR).
    y : array-like of shape (n,)
    block_rows : int
        Rows per block (partition).
    compression : {"zstd", "zstd:LEVEL", "none"}
    float32 : bool
        Store values as float32.
    shuffle : bool, seed : int
        Permute rows with a seeded uniform permutation first (in memory).
    renumber_features : bool
        Renumber columns by decreasing frequency and store the permutation.
    """
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is a dependency
        da = None
    if da is not None and isinstance(X, da.Array):
        if shuffle or renumber_features:
            raise ValueError("shuffle and renumber_features are not applied to dask arrays on the fly; "
                             "write the store first, then use rewrite_store(open_store(url), new_url, "
                             "shuffle=True, renumber_features=True).")
        return _write_dask(url, X, y, block_rows=block_rows, compression=compression, float32=float32,
                           storage_options=storage_options, source=source)
    X = sp.csr_matrix(X, dtype=np.float64) if not sp.issparse(X) else sp.csr_matrix(X)
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries; they must match.")
    X.sum_duplicates()
    _check_finite_block(X, y, 0, "")
    if shuffle:
        perm = np.random.default_rng(seed).permutation(X.shape[0])
        X, y = X[perm], y[perm]
    feature_permutation = None
    if renumber_features:
        counts = np.bincount(X.indices[X.data != 0], minlength=X.shape[1])
        feature_permutation = _feature_order(counts)
        X = X[:, feature_permutation].tocsr()
    index_dtype = np.int64 if X.shape[1] > INT32_LIMIT else np.int32
    with _writing(url, storage_options, block_rows=block_rows, compression=compression,
                  float32=float32, source=source, index_dtype=index_dtype) as w:
        for start in range(0, X.shape[0], block_rows):
            w.append(X[start:start + block_rows], y[start:start + block_rows])
        extra = {"shuffle_seed": int(seed) if shuffle else None}
        return w.finish(n_features=X.shape[1], extra_attrs=extra, feature_permutation=feature_permutation)


def _write_dask(url, X, y, *, block_rows, compression, float32, storage_options, source):
    if X.ndim != 2 or any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError("X must be a 2-D dask array with known chunk sizes; call X.compute_chunk_sizes().")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"X is chunked along features ({len(X.chunks[1])} chunks); "
                         f"use X.rechunk({{1: {X.shape[1]}}}).")
    y = np.asarray(y, dtype=np.float64).ravel() if not hasattr(y, "compute") else y
    with _writing(url, storage_options, block_rows=block_rows, compression=compression,
                  float32=float32, source=source,
                  index_dtype=np.int64 if X.shape[1] > INT32_LIMIT else np.int32) as w:
        start = 0
        for block in X.to_delayed().ravel():
            chunk = block.compute()
            chunk = sp.csr_matrix(chunk) if not sp.issparse(chunk) else sp.csr_matrix(chunk)
            rows = chunk.shape[0]
            yc = y[start:start + rows]
            yc = np.asarray(yc.compute() if hasattr(yc, "compute") else yc, dtype=np.float64)
            chunk.sum_duplicates()
            _check_finite_block(chunk, yc, start, "")
            w.append(chunk, yc)
            start += rows
        return w.finish(n_features=X.shape[1])


# ----------------------------------------------------------------- svmlight


def _open_text(path):
    path = os.fspath(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


def _iter_text_chunks(path, chunk_bytes):
    """Yield ``(byte_offset, bytes)`` pieces of the decompressed text, cut at line ends."""
    with _open_text(path) as f:
        offset = 0
        rest = b""
        while True:
            buf = f.read(chunk_bytes)
            if not buf:
                if rest:
                    yield offset, rest
                return
            buf = rest + buf
            cut = buf.rfind(b"\n")
            if cut < 0:
                rest = buf
                continue
            piece, rest = buf[:cut + 1], buf[cut + 1:]
            yield offset, piece
            offset += len(piece)


def _where(first_line, k, byte_offset):
    """'line L (byte offset B)', or just the byte offset when line numbers are unknown."""
    if first_line is None:  # a byte range parsed on a worker: earlier lines were not counted
        return f"the line at byte offset {byte_offset}"
    return f"line {first_line + k + 1} (byte offset {byte_offset})"


def _locate_error(piece, base_offset, first_line, parse_line):
    """Re-parse a failing piece line by line to name the line and byte offset."""
    pos = 0
    for k, line in enumerate(piece.splitlines(keepends=True)):
        try:
            parse_line(line)
        except ValueError as exc:
            return f" at {_where(first_line, k, base_offset + pos)}: {exc}"
        pos += len(line)
    return f" in bytes {base_offset}..{base_offset + len(piece)}"


def _parse_piece(piece, offset, first_line, path):
    """Parse one piece with scikit-learn's parser, with raw (unshifted) indices."""
    from sklearn.datasets import load_svmlight_file

    def parse(buf):
        # zero_based=True keeps the file's indices as they are; the 'auto' and
        # one-based shifts are applied by the caller over the whole file.
        return load_svmlight_file(io.BytesIO(buf), zero_based=True, dtype=np.float64)

    try:
        X, y = parse(piece) if piece.strip() else (sp.csr_matrix((0, 0)), np.zeros(0))
    except ValueError:
        raise ValueError(f"{path}: malformed svmlight/LIBSVM data"
                         f"{_locate_error(piece, offset, first_line, parse)}") from None
    X = sp.csr_matrix(X)
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size or not np.all(np.isfinite(y)):
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1) if bad.size else \
            int(np.flatnonzero(~np.isfinite(y))[0])
        line_start = sum(len(line) for line in piece.splitlines(keepends=True)[:row])
        raise ValueError(f"{path}: non-finite value at {_where(first_line, row, offset + line_start)}; "
                         "remove or fix it.")
    return X, y, piece.count(b"\n")


def _iter_svmlight(path, chunk_bytes):
    line = 0
    for offset, piece in _iter_text_chunks(path, chunk_bytes):
        X, y, n_lines = _parse_piece(piece, offset, line, path)
        yield X, y, offset + len(piece), line
        line += n_lines


def _index_shift(zero_based, min_index, path):
    """How much to subtract from raw indices, following scikit-learn's loader."""
    if zero_based is True:
        return 0
    if zero_based is False:
        if min_index is not None and min_index < 1:
            raise ValueError(f"{path}: feature index {min_index} in a one-based file (zero_based=False); "
                             "LIBSVM indices start at 1. Pass zero_based=True if the file is zero-based.")
        return 1
    # 'auto' (scikit-learn's heuristic): one-based unless some index is 0
    return 1 if min_index is not None and min_index > 0 else 0


def convert_svmlight(path, url, *, n_features=None, zero_based="auto", block_rows=DEFAULT_BLOCK_ROWS,
                     chunk_bytes=DEFAULT_CHUNK_BYTES, compression="zstd", float32=False, shuffle=False,
                     seed=0, renumber_features=False, storage_options=None, client=None, progress=None):
    """Convert an svmlight/LIBSVM file (plain, .gz, .bz2) into a store, streaming.

    Memory is bounded by ``chunk_bytes`` of text and one block, not by the
    file.  Parsing uses scikit-learn's svmlight parser; ``zero_based``
    follows :func:`sklearn.datasets.load_svmlight_file` (``"auto"``: one-based
    unless an index 0 occurs).  A malformed line, a non-finite value, an
    index 0 in a one-based file or an index beyond ``n_features`` raises with
    its line and byte offset, and no valid store is left behind.

    With ``shuffle`` (seeded, uniform over all rows) or ``renumber_features``
    the data goes through a temporary store next to ``url`` and an external
    bucket shuffle, so memory stays bounded by about one block.  With a Dask
    ``client`` and a plain-text file, byte ranges are parsed on the workers.
    """
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}.")
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes!r}.")
    if n_features is not None and (isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer))
                                   or n_features < 1):
        raise ValueError(f"n_features must be a positive int or None, got {n_features!r}.")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist.")
    if shuffle or renumber_features:
        tmp = f"{os.fspath(url).rstrip('/')}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            staged = convert_svmlight(path, tmp, n_features=n_features, zero_based=zero_based,
                                      block_rows=block_rows, chunk_bytes=chunk_bytes, compression="none",
                                      float32=float32, storage_options=storage_options, client=client,
                                      progress=progress)
            return rewrite_store(staged, url, shuffle=shuffle, seed=seed, renumber_features=renumber_features,
                                 block_rows=block_rows, compression=compression, storage_options=storage_options,
                                 source_name=os.path.basename(path))
        finally:
            _remove(tmp, storage_options)
    index_dtype = np.int64 if n_features is not None and n_features > INT32_LIMIT else np.int32
    pieces = (_parallel_pieces(client, path, chunk_bytes) if client is not None
              else _iter_svmlight(path, chunk_bytes))
    # largest raw index allowed (indices are shifted only at the end, see _index_shift)
    raw_limit = None if n_features is None else (n_features - 1 if zero_based is True else n_features)
    with _writing(url, storage_options, block_rows=block_rows, compression=compression, float32=float32,
                  source=os.path.basename(path), index_dtype=index_dtype) as w:
        bar = _progress(progress, path)
        for X, y, end_offset, line in pieces:
            if zero_based is False and X.indices.size and int(X.indices.min()) < 1:
                row = int(np.searchsorted(X.indptr, int(np.argmin(X.indices)), side="right") - 1)
                where = f"line {line + row + 1}" if line is not None else f"a line before byte {end_offset}"
                raise ValueError(f"{path}: feature index {int(X.indices.min())} at {where} in a one-based "
                                 "file (zero_based=False); LIBSVM indices start at 1. Pass zero_based=True "
                                 "or 'auto' if the file is zero-based.")
            if raw_limit is not None and X.indices.size and int(X.indices.max()) > raw_limit:
                top = int(X.indices.max())
                row = int(np.searchsorted(X.indptr, int(np.argmax(X.indices)), side="right") - 1)
                where = f"line {line + row + 1}" if line is not None else f"a line after byte {end_offset}"
                raise ValueError(f"{path}: feature index {top} at {where} is beyond n_features={n_features}; "
                                 "pass a larger n_features.")
            w.append(X, y)
            if bar is not None:
                bar.update(end_offset - bar.n)
        if bar is not None:
            bar.close()
        shift = _index_shift(zero_based, w.min_index, path)
        if n_features is not None and w.d - shift > n_features:
            raise ValueError(f"{path}: feature index {w.d - 1} is beyond n_features={n_features} "
                             f"({'one' if shift else 'zero'}-based); pass a larger n_features.")
        return w.finish(n_features=n_features, shift_indices=shift)


def _progress(progress, path):
    if not progress:
        return None
    from tqdm.auto import tqdm

    # bytes of (decompressed) text; the total is known for plain files only
    total = None if path.endswith((".gz", ".bz2")) else os.path.getsize(path)
    return tqdm(desc=f"converting {os.path.basename(path)}", unit="B", unit_scale=True, total=total)


def _parse_range(path, offset, length):
    """Worker task: parse the lines that start in ``[offset, offset + length)``."""
    with open(path, "rb") as f:
        f.seek(offset)
        if offset:
            f.readline()  # the line that started before this range belongs to the previous one
            start = f.tell()
        else:
            start = 0
        piece = f.read(max(0, offset + length - start))
        piece += f.readline() if piece and not piece.endswith(b"\n") else b""
    if start >= offset + length and offset:
        return sp.csr_matrix((0, 0)), np.zeros(0), start
    X, y, _ = _parse_piece(piece, start, None, path)
    return X, y, start + len(piece)


def _parallel_pieces(client, path, chunk_bytes):
    """Parse byte ranges of a plain-text file on the workers, yield them in order.

    At most two ranges per worker are in flight, so the client holds a
    bounded number of parsed pieces.
    """
    if path.endswith((".gz", ".bz2")):
        raise ValueError(f"parallel conversion needs a plain-text file (byte ranges); {path!r} is "
                         "compressed. Decompress it first or convert without a client.")
    size = os.path.getsize(path)
    ranges = [(o, min(chunk_bytes, size - o)) for o in range(0, size, chunk_bytes)]
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    window = 2 * n_workers
    futures = []
    for k, (o, length) in enumerate(ranges):
        futures.append(client.submit(_parse_range, path, o, length, pure=False,
                                     key=f"daskdca-parse-{uuid.uuid4().hex[:8]}-{k}"))
        if len(futures) > window:
            X, y, end = futures.pop(0).result()
            yield X, y, end, None
    for fut in futures:
        X, y, end = fut.result()
        yield X, y, end, None


# ----------------------------------------------------------------- rewrite


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
                  block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", storage_options=None, source_name=None):
    """Copy a complete store into a new one, optionally shuffled and renumbered.

    Shuffling is an external bucket shuffle: the seeded permutation ``perm``
    puts source row ``perm[p]`` at output position ``p``; each source block is
    split into buckets, one per output block, written to a temporary group
    next to ``url``; each bucket is then read back, put in output order and
    written.  Memory stays about one block; the data is written twice.

    With ``renumber_features`` the stored column ``j`` is the ``j``-th most
    frequent source feature (ties keep source order) and the permutation is
    stored as ``feature_permutation``.
    """
    if not isinstance(store, CSRStore):
        raise TypeError(f"rewrite_store needs a CSRStore (from open_store), got {type(store).__name__}.")
    n, d = store.n, store.d
    feature_permutation = remap = None
    if renumber_features:
        feature_permutation = _feature_order(store.group["column_nnz"][:])
        remap = np.empty(d, dtype=np.int64)
        remap[feature_permutation] = np.arange(d)

    def renumbered(X):
        if remap is None:
            return X
        return sp.csr_matrix((X.data, remap[X.indices], X.indptr), shape=X.shape)

    value_dtype = np.dtype(store.attrs.get("value_dtype", "float64"))
    index_dtype = np.dtype(store.attrs.get("index_dtype", "int32"))
    extra = {"shuffle_seed": int(seed) if shuffle else None}
    with _writing(url, storage_options, block_rows=block_rows, compression=compression,
                  float32=value_dtype == np.float32, source=source_name or store.attrs.get("source"),
                  index_dtype=index_dtype) as w:
        if not shuffle:
            for X, y in store.iter_blocks():
                w.append(renumbered(X), y)
            return w.finish(n_features=d, feature_permutation=feature_permutation, extra_attrs=extra)
        perm = np.random.default_rng(seed).permutation(n)
        inverse = np.empty(n, dtype=np.int64)
        inverse[perm] = np.arange(n)
        n_out = max(1, -(-n // block_rows))
        tmp = f"{os.fspath(url).rstrip('/')}.buckets-{uuid.uuid4().hex[:8]}"
        try:
            group = zarr.open_group(tmp, mode="w", storage_options=storage_options or None)
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
        finally:
            _remove(tmp, storage_options)
        return w.finish(n_features=d, feature_permutation=feature_permutation, extra_attrs=extra)
