"""Writing rows into a store: :class:`_Writer` appends rows, cuts them into blocks, checksums them from
memory and, in ``finish``, reads every block back before it writes the completion marker; ``_writing``
gives a writer inside a checked destination.  Also the checks and helpers shared by every write
(finite values, real dtypes, labels, feature order, row-order attributes)."""

from __future__ import annotations

import contextlib
import math
import os
import uuid

import numpy as np
import zarr

from daskdca.problem import add_column_nnz, canonical_csr, row_sqnorms
from daskdca.store import format as _format
from daskdca.store.format import (
    ATTRS_CHECKSUM,
    CHECKSUM_KINDS,
    FORMAT_VERSION,
    INT32_LIMIT,
    LABEL_NAMES_VERSION,
    MAX_LABEL_VALUES,
    NNZ_CHUNK,
    ROW_CHUNK,
    StoreError,
    _attrs_checksum,
    _check_bool,
    _check_int,
    _check_storage_options,
    _check_url,
    _compressors,
    _crc,
)
from daskdca.store.publish import _destination
from daskdca.store.reader import CSRStore, _Meta, open_store


class _Block:
    """Running row and nnz counts and array digests (``crcs``, of checksum ``kind``) of the block being written."""

    def __init__(self, lo, weighted, kind):
        self.lo = lo
        self.rows = 0
        self.nnz = 0
        # running digests of indptr (from its leading 0), indices, data, y, row_sqnorm, and sample_weight in
        # a weighted store
        self.crcs = [kind.update(kind.start(), np.zeros(1, dtype=np.int64))] + \
            [kind.start() for _ in range(5 if weighted else 4)]


class _Writer:
    """Append rows, cut them into blocks of ``block_rows``, checksum them from memory, publish.

    The checksums are computed from the rows as they are appended (not read
    back), and :meth:`finish` reads every block back and compares before it
    writes the completion marker: what is published is what was written.
    """

    def __init__(self, url, storage_options, *, block_rows, compression, float32, source,
                 index_dtype=np.int32, dest=None, weighted=False):
        self.block_rows = _check_int("block_rows", block_rows, low=1)
        self.weighted = weighted
        self.checksum = CHECKSUM_KINDS[_format.CHECKSUM]  # one kind for the whole write
        self.url = os.fspath(url)
        self.storage_options = storage_options
        self.value_dtype = np.dtype(np.float32 if float32 else np.float64)
        self.index_dtype = np.dtype(index_dtype)
        self.source = source
        self.dest = dest
        compressors = _compressors(compression)
        self.compression = compression or "none"
        if dest is not None:
            dest.note_in_place_write()
        self.group = zarr.open_group(self.url, mode="w", storage_options=storage_options or None)
        self.writer_id = dest.writer_id if dest is not None else uuid.uuid4().hex
        self.group.attrs.update({"daskdca": {"format_version": FORMAT_VERSION, "complete": False,
                                             "writer": self.writer_id}})

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
        if weighted:
            self.arrays["sample_weight"] = array("sample_weight", np.float64, ROW_CHUNK)
        self.arrays["indptr"].resize((1,))
        self.arrays["indptr"][0:1] = np.zeros(1, dtype=np.int64)
        self.n = 0
        self.nnz = 0
        self.d = 0
        self.blocks = []
        self.current = _Block(0, weighted, self.checksum)
        self.column_nnz = np.zeros(0, dtype=np.int64)
        self.labels = set()
        self.too_many_labels = False
        self.min_index = None
        self.norm_sum = 0.0
        self.max_sq = 0.0

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

    def append(self, X, y, weight=None):
        """Write rows straight to the arrays; blocks are only row boundaries.

        Memory is bounded by the rows passed in (one parsed text chunk), not
        by the block size.  ``weight`` (checked by the caller) is required in
        a weighted store and refused otherwise.
        """
        if (weight is not None) != self.weighted:
            raise ValueError("row weights go with a weighted store only (internal)")
        if X.shape[0] == 0:
            return
        X = canonical_csr(X)
        data = np.ascontiguousarray(X.data.astype(self.value_dtype, copy=False))
        if not np.all(np.isfinite(data)):
            raise ValueError("non-finite value in the data (checked by the caller first)")
        indices = X.indices
        if indices.size:
            low, top = int(indices.min()), int(indices.max())
            if low < 0:
                raise ValueError(f"negative feature index {low}; feature indices start at 0.")
            if self.index_dtype == np.int32 and top > INT32_LIMIT:
                raise ValueError(f"feature index {top} needs int64 indices; pass n_features >= 2**31.")
            self.min_index = low if self.min_index is None else min(self.min_index, low)
            self.d = max(self.d, top + 1)
        if self.column_nnz.shape[0] < self.d:
            self.column_nnz = np.concatenate([self.column_nnz,
                                              np.zeros(self.d - self.column_nnz.shape[0], dtype=np.int64)])
        add_column_nnz(indices, data, self.column_nnz)
        row_sqnorm = row_sqnorms(X.indptr, data)
        indices = np.ascontiguousarray(indices.astype(self.index_dtype, copy=False))
        ends = X.indptr[1:].astype(np.int64) + self.nnz
        y = np.ascontiguousarray(np.asarray(y, dtype=np.float64))
        self._append_arrays("data", data)
        self._append_arrays("indices", indices)
        self._append_arrays("indptr", ends)
        self._append_arrays("y", y)
        self._append_arrays("row_sqnorm", row_sqnorm)
        if weight is not None:
            weight = np.ascontiguousarray(weight, dtype=np.float64)
            self._append_arrays("sample_weight", weight)
        self._checksum_rows(X.indptr, ends, indices, data, y, row_sqnorm, weight)
        self.norm_sum += float(np.sqrt(row_sqnorm).sum())
        self.max_sq = max(self.max_sq, float(row_sqnorm.max(initial=0.0)))
        if not self.too_many_labels:
            self.labels.update(np.unique(y).tolist())
            if len(self.labels) > MAX_LABEL_VALUES:
                self.too_many_labels = True
                self.labels = set()
        self.n += X.shape[0]
        self.nnz += data.size

    def _checksum_rows(self, indptr, ends, indices, data, y, row_sqnorm, weight):
        """Feed appended rows to the running block digests, closing full blocks."""
        m, pos = len(y), 0
        while pos < m:
            block = self.current
            take = min(self.block_rows - block.rows, m - pos)
            a, b = int(indptr[pos]), int(indptr[pos + take])
            c, update = block.crcs, self.checksum.update
            c[0] = update(c[0], ends[pos:pos + take] - block.lo)
            c[1] = update(c[1], indices[a:b])
            c[2] = update(c[2], data[a:b])
            c[3] = update(c[3], y[pos:pos + take])
            c[4] = update(c[4], row_sqnorm[pos:pos + take])
            if weight is not None:
                c[5] = update(c[5], weight[pos:pos + take])
            block.rows += take
            block.nnz += b - a
            pos += take
            if block.rows == self.block_rows:
                self.blocks.append(block)
                self.current = _Block(block.lo + block.nnz, self.weighted, self.checksum)

    def end_block(self):
        """Close the block being filled here, short of ``block_rows`` (nothing when it is empty): the rows
        appended next start a new block."""
        block = self.current
        if block.rows:
            self.blocks.append(block)
            self.current = _Block(block.lo + block.nnz, self.weighted, self.checksum)

    def finish(self, *, n_features=None, shift_indices=0, extra_attrs=None, feature_permutation=None,
               label_names=None, feature_names=None):
        """Write the statistics and checksums, verify every block, write the marker, publish.

        ``label_names`` (labels that are not numbers, appended as their codes
        ``0 .. K-1``) and ``feature_names`` (a frame's column names, in the
        source's feature order) are recorded as attributes when given.
        """
        if self.current.rows:
            self.blocks.append(self.current)
            self.current = _Block(self.nnz, self.weighted, self.checksum)
        if self.n == 0:
            raise ValueError(f"no rows to write from {self.source}; a store needs at least one row.")
        if shift_indices:
            self._shift_indices(shift_indices)
        d = self.d if n_features is None else int(n_features)
        if d < self.d:
            raise ValueError(f"feature index {self.d - 1} is beyond n_features={n_features}; "
                             f"pass n_features >= {self.d}.")
        if d < 1:
            raise ValueError(f"no features (d = 0) in {self.source}: every row is empty. Pass n_features to "
                             "keep empty rows.")
        column_nnz = np.zeros(d, dtype=np.int64)
        column_nnz[: self.column_nnz.shape[0]] = self.column_nnz
        cn = self.group.create_array("column_nnz", shape=(d,), chunks=(NNZ_CHUNK,), dtype=np.int64,
                                     compressors=_compressors(self.compression), fill_value=0)
        cn[:] = column_nnz
        perm_checksum = None
        if feature_permutation is not None:
            feature_permutation = np.ascontiguousarray(feature_permutation, dtype=np.int64)
            fp = self.group.create_array("feature_permutation", shape=(d,), chunks=(NNZ_CHUNK,),
                                         dtype=np.int64, compressors=_compressors(self.compression))
            fp[:] = feature_permutation
            perm_checksum = _crc(feature_permutation)
        row_offsets, nnz_offsets = [0], [0]
        for block in self.blocks:
            row_offsets.append(row_offsets[-1] + block.rows)
            nnz_offsets.append(nnz_offsets[-1] + block.nnz)
        kind = self.checksum
        checksums = [kind.combine(b.rows, b.nnz, [kind.digest(c) for c in b.crcs]) for b in self.blocks]
        labels = None if self.too_many_labels else sorted(self.labels)
        if label_names is not None and labels != [float(k) for k in range(len(label_names))]:
            raise ValueError(f"the label codes written {labels} are not 0 .. {len(label_names) - 1} of the label "
                             f"names {list(label_names)} (internal)")
        if feature_names is not None and len(feature_names) != (self.d if n_features is None else int(n_features)):
            raise ValueError(f"{len(feature_names)} feature names for {n_features} features (internal)")
        meta = {
            "format_version": FORMAT_VERSION if label_names is None else LABEL_NAMES_VERSION,
            "writer": self.writer_id,
            "nnz": int(self.nnz),
            "block_row_offsets": row_offsets,
            "block_nnz_offsets": nnz_offsets,
            "checksum": kind.name,
            "block_checksums": checksums,
            "column_nnz_checksum": _crc(column_nnz),
            "feature_permutation_checksum": perm_checksum,
            "block_rows": self.block_rows,
            "label_values": labels,
            "label_mapping": ({"-1": labels[0], "+1": labels[1]} if labels is not None and len(labels) == 2
                              else None),
            "value_dtype": self.value_dtype.name,
            "index_dtype": self.index_dtype.name,
            "compression": str(self.compression),
            "source": self.source,
            "max_row_norm": math.sqrt(self.max_sq),
            "mean_row_norm": self.norm_sum / self.n,
            "renumbered_features": feature_permutation is not None,
            "weighted": self.weighted,
        }
        if label_names is not None:
            meta["label_names"] = [str(v) if isinstance(v, str) else bool(v) for v in label_names]
        if feature_names is not None:
            meta["feature_names"] = [str(v) for v in feature_names]
        meta.update(extra_attrs or {})
        top = {"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": [int(self.n), int(d)]}
        # every attribute a result depends on, covered from the values in memory (verified by open_store)
        meta[ATTRS_CHECKSUM] = _attrs_checksum({**top, "daskdca": meta})
        self._verify_written(d, meta)
        if self.dest is not None:
            self.dest.check_before_commit(self.group)
        meta["complete"] = True  # written last, with the anndata keys, in one update: the commit marker
        self.group.attrs.update({**top, "daskdca": meta})
        if self.dest is not None:
            return self.dest.publish(checksums)
        return open_store(self.url, self.storage_options)

    def _verify_written(self, d, meta):
        """Read every block back and compare with the checksums computed in memory."""
        handle = CSRStore(self.url, self.storage_options,
                          _Meta(self.n, d, self.nnz, tuple(meta["block_row_offsets"]),
                                tuple(meta["block_nnz_offsets"]), tuple(meta["block_checksums"]), meta))
        for k in range(len(self.blocks)):
            try:
                handle.read_block(k)
            except StoreError as exc:
                raise StoreError(f"the data written to {self.url!r} did not read back intact ({exc}); "
                                 "nothing was published. Check the disk and write again.") from exc
        if _crc(handle._array("column_nnz")[:]) != meta["column_nnz_checksum"]:
            raise StoreError(f"column_nnz written to {self.url!r} did not read back intact; nothing was published.")

    def _shift_indices(self, shift):
        """Subtract ``shift`` from every stored index (one-based files) and redo the index digests."""
        arr = self.arrays["indices"]
        bounds = np.cumsum([0] + [b.nnz for b in self.blocks])
        kind = self.checksum
        for block in self.blocks:
            block.crcs[1] = kind.start()
        j = 0
        for lo in range(0, arr.shape[0], NNZ_CHUNK):
            hi = min(lo + NNZ_CHUNK, arr.shape[0])
            values = np.ascontiguousarray(arr[lo:hi] - np.asarray(shift, dtype=arr.dtype))
            arr[lo:hi] = values
            a = lo
            while a < hi:
                while bounds[j + 1] <= a:
                    j += 1
                b = min(hi, int(bounds[j + 1]))
                self.blocks[j].crcs[1] = kind.update(self.blocks[j].crcs[1], values[a - lo:b - lo])
                a = b
        self.column_nnz = self.column_nnz[shift:]
        self.d = max(0, self.d - shift)
        if self.min_index is not None:
            self.min_index -= shift


def _check_writer_args(block_rows, compression, float32):
    _check_int("block_rows", block_rows, low=1, hint=" Rows per block, e.g. 32768.")
    _compressors(compression)
    _check_bool("float32", float32)


@contextlib.contextmanager
def _writing(url, storage_options, *, overwrite=False, inputs=(), **writer_kwargs):
    """A writer into a checked destination: nothing is published unless ``finish`` returns."""
    url = _check_url(url)
    storage_options = _check_storage_options(storage_options)
    _check_writer_args(writer_kwargs["block_rows"], writer_kwargs.get("compression"),
                       writer_kwargs.get("float32", False))
    with _destination(url, storage_options, overwrite=overwrite, inputs=inputs) as dest:
        yield _Writer(dest.work_url, storage_options, dest=dest, **writer_kwargs)


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


def _check_dtype(name, dtype):
    """Real numbers only: complex values would lose their imaginary part."""
    if dtype.kind == "c":
        raise TypeError(f"{name} has complex dtype {dtype}; daskdca fits real data only (the imaginary part "
                        "would be dropped). Pass the real part (np.real) or split it into two features.")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} has dtype {dtype}; numbers (bool, int or float) are needed.")


def _as_labels(y, n):
    y = np.asarray(y)
    if y.dtype.kind == "c":
        _check_dtype("y", y.dtype)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {y.shape}.")
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must hold numbers; got dtype {y.dtype} ({exc}).") from exc
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries; they must match.")
    return y


def _order_attrs(shuffle, seed, source=None):
    """The row-order attributes of a new store: shuffled by this write, or as ``source``'s rows."""
    if shuffle:
        return {"shuffled": True, "shuffle_seed": int(seed)}
    if source is not None:  # same rows in the same order: the source's record holds
        return {"shuffled": source.shuffled, "shuffle_seed": source.attrs.get("shuffle_seed")}
    return {"shuffled": False, "shuffle_seed": None}
