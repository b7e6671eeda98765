"""The zarr store: CSR row blocks that are the partitions of the Dask engine.

Layout (one zarr v3 group, anndata-compatible CSR, spec ``dask-zarr-numba.md`` §4.2)::

    store.zarr/
      zarr.json      attrs: encoding-type="csr_matrix", encoding-version="0.1.0", shape=[n, d],
                            daskdca={format_version, complete, writer, nnz, block_row_offsets,
                                     block_nnz_offsets, block_checksums, checksum,
                                     column_nnz_checksum, label_values, label_mapping,
                                     value_dtype, index_dtype, source, max_row_norm,
                                     shuffled, shuffle_seed, ...}
      data        (nnz,)  float64 | float32   chunks 2**20
      indices     (nnz,)  int32 (int64 when d >= 2**31)
      indptr      (n+1,)  int64               chunks 2**16
      y           (n,)    float64             labels as in the source
      row_sqnorm  (n,)    float64             ||x_i||^2
      sample_weight (n,)  float64             only in a weighted store (attribute weighted=True):
                                              s_i >= 0 multiplying row i's loss
      column_nnz  (d,)    int64               rows containing each feature (sparse ESO bound)
      feature_permutation (d,) int64          only when features were renumbered:
                                              stored column j is source feature [j]

Writes lose nothing (``docs/reliability.md``):

* On a local or POSIX file system a store is built in a temporary sibling
  folder ``<target>.tmp-<16 hex>`` (with a marker file holding an exclusive
  ``flock`` while its writer lives) and published only once complete and
  verified, by one atomic rename (``renameat2(RENAME_NOREPLACE)``), or, to
  replace an existing store with ``overwrite=True``, by one atomic exchange
  (``renameat2(RENAME_EXCHANGE)``; elsewhere two renames, undone on failure).
* On other fsspec URLs (object stores) the store is written in place and the
  ``complete`` attribute, written last, is the commit marker that
  :func:`open_store` requires.
* A folder that is not a daskdca store is never written into; replacing a
  store needs ``overwrite=True``; the output may not be or contain the input.

Reads are verified every time: :meth:`CSRStore.read_block` checks the block's
XXH3-64 checksum (CRC-32C in stores written before 2026-11-26) over every
per-block array (indptr, indices, data, labels, row norms) and the block's
row and non-zero counts, recorded from the data in memory as
it was written, so a deleted chunk (read by zarr as fill values), an altered
chunk, or a consistent rewrite through zarr all raise :class:`StoreError`.
"""

from __future__ import annotations

import bz2
import contextlib
import ctypes
import errno
import gzip
import io
import json
import math
import os
import re
import shutil
import socket
import time
import uuid
import zlib
from dataclasses import dataclass

import google_crc32c
import numpy as np
import scipy.sparse as sp
import xxhash
import zarr
from zarr.codecs import ZstdCodec

from daskdca.problem import check_sample_weight, row_sqnorms

__all__ = [
    "FORMAT_VERSION",
    "StoreError",
    "CSRStore",
    "open_store",
    "write_store",
    "convert_svmlight",
    "rewrite_store",
]

# 2: block checksums (attribute ``checksum``: CHECKSUM_KINDS) over all per-block arrays, recorded from memory,
# block nnz offsets, checksummed column counts (format 1 covered no row norms).
FORMAT_VERSION = 2
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
# The block checksum written (``checksum`` attribute): XXH3-64 runs at 26 GB/s here where CRC-32C runs at
# 6-11, so verifying every read costs 2-3 % of an out-of-core epoch (docs/reliability.md).  Stores
# written with "crc32c-v2" (daskdca before 2026-11-26) are read and verified with CRC-32C.
CHECKSUM = "xxh3-64"
# Temporary folders of a write: "<target>.tmp-<16 hex>" holding this marker file.
TMP_MARKER = ".daskdca-write"
_TMP_SUFFIX = re.compile(r"\.tmp-[0-9a-f]{16}")
_PER_BLOCK_ARRAYS = ("indptr", "indices", "data", "y", "row_sqnorm")


class StoreError(ValueError):
    """A store is missing, incomplete, inconsistent or corrupted."""


# ----------------------------------------------------------------- checks


def _check_int(name, value, *, low, hint=""):
    """An int (numpy ints too, not bool) >= low, or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__}).{hint}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}.{hint}")
    return int(value)


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def _check_storage_options(storage_options):
    if storage_options is not None and not isinstance(storage_options, dict):
        raise TypeError(f"storage_options must be a dict or None, got {type(storage_options).__name__}.")
    return dict(storage_options or {})


def _check_url(url, name="url"):
    if not isinstance(url, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path or URL string, got {type(url).__name__}.")
    url = os.fspath(url)
    if isinstance(url, bytes):
        raise TypeError(f"{name} must be a str path, got bytes.")
    if not url.strip():
        raise ValueError(f"{name} is empty; give the path of the store, e.g. 'data.zarr'.")
    return url


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


# ----------------------------------------------------------------- checksums


def _crc(values, crc=0):
    """CRC-32C (hardware accelerated by google-crc32c, a zarr dependency) of an array's bytes."""
    return google_crc32c.extend(crc, np.ascontiguousarray(values))


class _CRC32C:
    """Block checksums of format 2 as first written: CRC-32C of each array, then of the counts and CRCs."""

    name = "crc32c-v2"

    @staticmethod
    def start():
        return 0

    @staticmethod
    def update(state, values):
        return _crc(values, state)

    @staticmethod
    def digest(state):
        return state

    @staticmethod
    def of(values):
        return _crc(values)

    @staticmethod
    def combine(n_rows, nnz, digests):
        return _crc(np.array([n_rows, nnz, *digests], dtype=np.int64))


class _XXH3:
    """Block checksums by XXH3-64 (xxhash): of each array's bytes, then of the counts and the array digests."""

    name = "xxh3-64"

    @staticmethod
    def start():
        return xxhash.xxh3_64()

    @staticmethod
    def update(state, values):
        state.update(np.ascontiguousarray(values))
        return state

    @staticmethod
    def digest(state):
        return state.intdigest()

    @staticmethod
    def of(values):
        return xxhash.xxh3_64_intdigest(np.ascontiguousarray(values))

    @staticmethod
    def combine(n_rows, nnz, digests):
        return xxhash.xxh3_64_intdigest(np.array([n_rows, nnz, *digests], dtype=np.uint64))


CHECKSUM_KINDS = {kind.name: kind for kind in (_CRC32C, _XXH3)}


def _block_checksum(indptr_local, indices, data, y, row_sqnorm, weight=None, kind=_XXH3):
    """Checksum of one block's arrays as stored (``indptr_local`` starts at 0; ``weight`` in a weighted store)."""
    digests = [kind.of(np.asarray(indptr_local, dtype=np.int64)), kind.of(indices), kind.of(data),
               kind.of(np.asarray(y, dtype=np.float64)), kind.of(np.asarray(row_sqnorm, dtype=np.float64))]
    if weight is not None:
        digests.append(kind.of(np.asarray(weight, dtype=np.float64)))
    return kind.combine(len(indptr_local) - 1, len(indices), digests)


# ----------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Meta:
    n: int
    d: int
    nnz: int
    block_row_offsets: tuple
    block_nnz_offsets: tuple
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
        self._arrays = {}

    # pickling: the zarr group is reopened lazily on the other side
    def __getstate__(self):
        return {"url": self.url, "storage_options": self.storage_options, "_meta": self._meta}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._group = None
        self._arrays = {}

    @property
    def group(self):
        """The zarr group (opened on first use)."""
        if self._group is None:
            try:
                self._group = zarr.open_group(self.url, mode="r", storage_options=self.storage_options or None)
            except Exception as exc:  # zarr raises many types for a vanished or damaged store
                raise StoreError(f"cannot open the store {self.url!r} ({type(exc).__name__}: {exc}); "
                                 "it was moved, deleted or damaged after it was opened.") from exc
        return self._group

    def _array(self, name):
        """A zarr array of the store, its metadata read once per handle."""
        arr = self._arrays.get(name)
        if arr is None:
            try:
                arr = self.group[name]
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"array {name!r} of the store {self.url!r} cannot be opened "
                                 f"({type(exc).__name__}: {exc}); convert the data again.") from exc
            self._arrays[name] = arr
        return arr

    n = property(lambda self: self._meta.n)
    d = property(lambda self: self._meta.d)
    nnz = property(lambda self: self._meta.nnz)
    attrs = property(lambda self: self._meta.attrs)
    n_blocks = property(lambda self: len(self._meta.block_row_offsets) - 1)

    @property
    def block_row_offsets(self):
        return np.asarray(self._meta.block_row_offsets, dtype=np.int64)

    @property
    def weighted(self):
        """Whether the store holds row weights (``sample_weight``, written by ``write_store``)."""
        return bool(self.attrs.get("weighted", False))

    @property
    def label_values(self):
        """Sorted distinct labels (None when there are more than 64: regression targets)."""
        values = self.attrs.get("label_values")
        return None if values is None else np.asarray(values)

    def _read_checked(self, name, expected):
        """A whole d-length array, checked against its recorded CRC-32C."""
        values = self._array(name)[:]
        if expected is None or _crc(values) != int(expected):
            raise StoreError(f"array {name!r} of {self.url!r} does not match its checksum: the store was "
                             "modified or a chunk is missing. Convert the data again.")
        return values

    @property
    def column_nnz(self):
        """Rows containing each stored column (verified against its checksum on every read)."""
        return self._read_checked("column_nnz", self.attrs.get("column_nnz_checksum"))

    @property
    def feature_permutation(self):
        """``perm`` with stored column ``j`` = source feature ``perm[j]``, or None (verified)."""
        if not self.attrs.get("renumbered_features"):
            return None
        return self._read_checked("feature_permutation", self.attrs.get("feature_permutation_checksum"))

    @property
    def shuffled(self):
        """Whether the rows are in a seeded uniform random order (the default of every write; generated
        stores draw their rows i.i.d.)."""
        return bool(self.attrs.get("shuffled", self.attrs.get("shuffle_seed") is not None))

    @property
    def row_permutation(self):
        """``perm`` with stored row ``p`` = row ``perm[p]`` of the rows given to the write that shuffled
        them (``write_store``'s X, ``convert_svmlight``'s file), or None when unknown or unshuffled.

        ``fit`` on a store returns ``dual_coef_`` in stored row order; ``dual_coef_[np.argsort(perm)]``
        is in the order of the original rows.
        """
        seed = self.attrs.get("shuffle_seed")
        return None if seed is None else np.random.default_rng(int(seed)).permutation(self.n)

    def to_source_features(self, w):
        """A weight vector in stored column order, returned in the source's feature order."""
        perm = self.feature_permutation
        if perm is None:
            return np.asarray(w)
        out = np.empty_like(np.asarray(w))
        out[perm] = w
        return out

    def _read_raw(self, start, stop, lo=None, hi=None):
        """``(indptr - indptr[0], indices, data, y, row_sqnorm, weight)`` of rows ``[start, stop)``, as stored
        (``weight`` None in an unweighted store)."""
        indptr = self._array("indptr")[start:stop + 1].astype(np.int64, copy=False)
        if lo is None:
            lo, hi = int(indptr[0]), int(indptr[-1])
        elif int(indptr[0]) != lo or int(indptr[-1]) != hi:
            return None
        weight = self._array("sample_weight")[start:stop] if self.weighted else None
        return (indptr - lo, self._array("indices")[lo:hi], self._array("data")[lo:hi],
                self._array("y")[start:stop], self._array("row_sqnorm")[start:stop], weight)

    def read_rows(self, start, stop):
        """Rows ``[start, stop)`` as ``(csr_matrix, y)``, NOT verified (use :meth:`read_block`)."""
        indptr, indices, data, y, _, _ = self._read_raw(start, stop)
        return sp.csr_matrix((data, indices, indptr), shape=(stop - start, self.d)), y

    def _fail(self, k, start, stop, what):
        raise StoreError(f"block {k} of {self.url!r} (rows {start}..{stop - 1}) {what}: the store was modified "
                         "or a chunk is missing or damaged. Convert the data again.")

    def read_block(self, k, *, verify=True, with_sqnorm=False, with_weight=False):
        """Block ``k`` as ``(csr_matrix, y)``, verified on every call.

        Parameters
        ----------
        k : int
            Block index, ``0 <= k < n_blocks``.
        verify : bool, default True
            Check the block's checksum over indptr, indices, data, labels and
            row norms, and its row and non-zero counts (see
            ``docs/reliability.md`` for the cost: 2-3 % of an
            out-of-core epoch).  ``"once"`` (the former per-process cache)
            is accepted and verifies every time too.  ``False`` skips only
            the checksum; the block's bounds are always checked.
        with_sqnorm : bool, default False
            Also return the stored squared row norms.
        with_weight : bool, default False
            Also return the rows' weights (None in an unweighted store); in a
            weighted store they are verified either way.

        Returns
        -------
        X : scipy.sparse.csr_matrix
        y : ndarray of float64
        row_sqnorm : ndarray of float64
            Only with ``with_sqnorm=True``.
        weight : ndarray of float64 or None
            Only with ``with_weight=True``.

        Raises
        ------
        StoreError
            The block does not match its checksum or cannot be read; the
            message names the block and the store.
        """
        if verify not in (True, False, "once"):
            raise ValueError(f"verify must be True or False, got {verify!r}.")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"block index must be an int, got {k!r}.")
        if not 0 <= k < self.n_blocks:
            raise IndexError(f"block {k} out of range: the store has {self.n_blocks} blocks.")
        start, stop = self._meta.block_row_offsets[k], self._meta.block_row_offsets[k + 1]
        lo, hi = self._meta.block_nnz_offsets[k], self._meta.block_nnz_offsets[k + 1]
        try:
            raw = self._read_raw(start, stop, lo, hi)
        except StoreError:
            raise
        except Exception as exc:  # a damaged chunk fails in the codec with the codec's error
            raise StoreError(f"block {k} of {self.url!r} (rows {start}..{stop - 1}) cannot be read "
                             f"({type(exc).__name__}: {exc}); a chunk is damaged. Convert the data again.") \
                from exc
        if raw is None:
            self._fail(k, start, stop, f"has indptr ends other than its non-zeros [{lo}, {hi})")
        indptr, indices, data, y, sqnorm, weight = raw
        kind = CHECKSUM_KINDS[self._meta.attrs["checksum"]]
        if verify and _block_checksum(indptr, indices, data, y, sqnorm, weight, kind) != self._meta.block_checksums[k]:
            self._fail(k, start, stop, "does not match its checksum")
        X = sp.csr_matrix((data, indices, indptr), shape=(stop - start, self.d))
        return (X, y) + ((sqnorm,) if with_sqnorm else ()) + ((weight,) if with_weight else ())

    def iter_blocks(self):
        """Yield ``(X, y)`` of every block in order (each verified)."""
        for k in range(self.n_blocks):
            yield self.read_block(k)

    def read_all(self):
        """The whole store in memory as ``(csr_matrix, y)`` (every block verified)."""
        blocks = [self.read_block(k) for k in range(self.n_blocks)]
        return sp.vstack([b[0] for b in blocks], format="csr"), np.concatenate([b[1] for b in blocks])

    def __repr__(self):
        return f"CSRStore({self.url!r}, n={self.n}, d={self.d}, nnz={self.nnz}, n_blocks={self.n_blocks})"


def _read_group_attrs(url, storage_options):
    """The group attributes at ``url``, or StoreError with the reason."""
    try:
        group = zarr.open_group(url, mode="r", storage_options=storage_options or None)
    except (FileNotFoundError, zarr.errors.GroupNotFoundError) as exc:
        raise StoreError(f"No daskdca store at {url!r}: {exc}. Create one with `daskdca convert`.") from exc
    except NotADirectoryError as exc:
        raise StoreError(f"No daskdca store at {url!r}: it is a file, not a store folder.") from exc
    except Exception as exc:  # a damaged zarr.json: JSONDecodeError, ValueError, KeyError, ...
        raise StoreError(f"{url!r} is not a readable daskdca store: its zarr.json is damaged "
                         f"({type(exc).__name__}: {exc}). Convert the data again.") from exc
    try:
        return group, group.attrs.asdict()
    except Exception as exc:
        raise StoreError(f"{url!r} has unreadable attributes ({type(exc).__name__}: {exc}).") from exc


def open_store(url, storage_options=None):
    """Open a complete daskdca store (local path or fsspec URL) for reading.

    Parameters
    ----------
    url : str or path
        Local path or fsspec URL of the store.
    storage_options : dict, optional
        fsspec options for a URL.

    Returns
    -------
    CSRStore

    Raises
    ------
    StoreError
        If there is no store at ``url``, it is damaged, incomplete (an
        interrupted write on an object store), of another format version, or
        its attributes and arrays disagree.
    """
    url = _check_url(url)
    storage_options = _check_storage_options(storage_options)
    group, attrs = _read_group_attrs(url, storage_options)
    meta = attrs.get("daskdca")
    if not isinstance(meta, dict) or meta.get("complete") is not True:
        raise StoreError(
            f"{url!r} is not a complete daskdca store (no completion marker): an interrupted or "
            "failed write left it, or it is not a daskdca store. Write it again with overwrite=True "
            "(CLI: --overwrite)."
        )
    if meta.get("format_version") != FORMAT_VERSION:
        raise StoreError(f"{url!r} has store format {meta.get('format_version')!r}; this daskdca reads format "
                         f"{FORMAT_VERSION} (block checksums that cover row norms and detect missing chunks). "
                         "Convert the data again (daskdca convert IN OUT --overwrite, or write_store).")
    try:
        n, d = (int(v) for v in attrs["shape"])
        nnz = int(meta["nnz"])
        offsets = tuple(int(v) for v in meta["block_row_offsets"])
        nnz_offsets = tuple(int(v) for v in meta["block_nnz_offsets"])
        checksums = tuple(int(v) for v in meta["block_checksums"])
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{url!r} has malformed daskdca attributes ({exc!r}); convert the data again.") from exc
    problems = []
    if n < 1 or d < 1:
        problems.append(f"shape is {n} x {d} (a store has at least one row and one feature)")
    expected = {"data": (nnz,), "indices": (nnz,), "indptr": (n + 1,), "y": (n,), "row_sqnorm": (n,),
                "column_nnz": (d,)}
    if meta.get("weighted"):
        expected["sample_weight"] = (n,)
    for name, shape in expected.items():
        try:
            present = name in group
            got = group[name].shape if present else None
        except Exception as exc:  # a damaged array zarr.json
            problems.append(f"array {name!r} cannot be opened ({type(exc).__name__}: {exc})")
            continue
        if not present:
            problems.append(f"array {name!r} is missing")
        elif got != shape:
            problems.append(f"array {name!r} has shape {got}, expected {shape}")
    if attrs.get("encoding-type") != "csr_matrix":
        problems.append(f"encoding-type is {attrs.get('encoding-type')!r}")
    if not offsets or offsets[0] != 0 or offsets[-1] != n or any(b <= a for a, b in zip(offsets, offsets[1:])):
        problems.append("block_row_offsets do not split [0, n) into non-empty blocks")
    if len(nnz_offsets) != len(offsets) or (nnz_offsets and (nnz_offsets[0] != 0 or nnz_offsets[-1] != nnz)) \
            or any(b < a for a, b in zip(nnz_offsets, nnz_offsets[1:])):
        problems.append("block_nnz_offsets do not split [0, nnz) into blocks")
    if len(checksums) != len(offsets) - 1:
        problems.append("there is not one checksum per block")
    if meta.get("checksum") not in CHECKSUM_KINDS:
        problems.append(f"checksum kind is {meta.get('checksum')!r}, expected one of {sorted(CHECKSUM_KINDS)}")
    if problems:
        raise StoreError(f"{url!r} is inconsistent ({'; '.join(problems)}); convert the data again.")
    return CSRStore(url, storage_options, _Meta(n, d, nnz, offsets, nnz_offsets, checksums, meta))


# ----------------------------------------------------------------- publishing

try:  # POSIX advisory locks: a temporary folder's writer holds one while it lives
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # pragma: no cover - not glibc >= 2.28
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _load_renameat2()


def _renameat2(src, dst, flags):
    """Linux ``renameat2``; False where the system or file system does not support the flag."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), src, None, dst)


def _local_path(url):
    """The local file-system path of ``url``, or None for another fsspec protocol."""
    if url.startswith("file://"):
        return url[len("file://"):]
    if "://" in url or "::" in url:
        return None
    return url


def _is_daskdca_store_json(text):
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return False
    meta = doc.get("attributes", {}).get("daskdca") if isinstance(doc, dict) else None
    return isinstance(doc.get("attributes"), dict) and isinstance(meta, dict) and "format_version" in meta


def _local_state(path):
    """'missing', 'empty', 'store' (a daskdca store, complete or not), 'file' or 'other'."""
    if not os.path.lexists(path):
        return "missing"
    if not os.path.isdir(path):
        return "file"
    if not os.listdir(path):
        return "empty"
    try:
        with open(os.path.join(path, "zarr.json"), "rb") as f:
            return "store" if _is_daskdca_store_json(f.read()) else "other"
    except OSError:
        return "other"


def _remote_state(url, storage_options):
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **storage_options)
    path = path.rstrip("/")
    try:
        if _is_daskdca_store_json(fs.cat_file(f"{path}/zarr.json")):
            return "store"
    except (FileNotFoundError, OSError):
        pass
    if fs.isfile(path):
        return "file"
    try:
        return "other" if fs.ls(path) else "missing"
    except FileNotFoundError:
        return "missing"


def _lock_nowait(fd):
    """Take the marker's exclusive lock without waiting: True if taken."""
    if fcntl is None:  # pragma: no cover - Windows: liveness from the pid only
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks
        return None
    return True


def _pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


def _remove_marked(path):
    """Remove one of our temporary folders, its marker last (so a killed removal is found again)."""
    for entry in os.scandir(path):
        if entry.name == TMP_MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, TMP_MARKER))
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _clean_leftovers(target):
    """Remove temporary folders of killed writes to ``target``; returns their names.

    Only folders named ``<target name>.tmp-<16 hex>`` that hold our marker
    naming this target, whose writer is gone (its lock can be taken, or,
    without locks, its pid on this host has exited), are touched.  A store
    that a killed replacement had moved aside (``old`` inside the folder)
    goes back to ``target`` if nothing is there.
    """
    parent, name = os.path.split(target)
    removed = []
    try:
        entries = list(os.scandir(parent or "."))
    except OSError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(name) and _TMP_SUFFIX.fullmatch(entry.name[len(name):])):
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(os.path.join(entry.path, TMP_MARKER), os.O_RDWR)
        except OSError:
            continue  # no marker: not ours
        try:
            try:
                info = json.loads(os.read(fd, 4096) or b"{}")
            except ValueError:
                continue
            if not isinstance(info, dict) or info.get("daskdca_temp") != 1 or info.get("target") != name:
                continue
            locked = _lock_nowait(fd)
            if locked is False:
                continue  # its writer is alive
            if locked is None and (info.get("host") != socket.gethostname() or _pid_alive(info.get("pid"))):
                continue
            old = os.path.join(entry.path, "old")
            if os.path.isdir(old) and not os.path.lexists(target):
                os.rename(old, target)  # a replacement killed between its two renames
            _remove_marked(entry.path)
            removed.append(entry.name)
        finally:
            os.close(fd)
    return removed


def _same_or_inside(a, b):
    """True if path ``a`` is ``b`` or lies inside it."""
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


class _Destination:
    """Where a store is written and how it is published (see the module docstring).

    ``work_url`` is where the new store is built: ``<tmp>/store`` for a local
    target, the target itself for another fsspec URL.  ``scratch(name)``
    gives room for temporary stores (staging, shuffle buckets) removed at the
    end.  Nothing that this object did not create is ever removed.
    """

    def __init__(self, url, storage_options, *, overwrite, inputs=()):
        self.url = url
        self.storage_options = storage_options
        self.overwrite = _check_bool("overwrite", overwrite)
        self.local = _local_path(url)
        self.inputs = [os.fspath(p) for p in inputs if p is not None]
        self.tmp = None
        self._fd = None
        self._scratch = []
        self._wrote_in_place = False
        self.writer_id = uuid.uuid4().hex

    # -- checks before anything is written
    def _check_inputs(self):
        for inp in self.inputs:
            inp_local = _local_path(inp)
            if self.local is not None and inp_local is not None:
                a, b = os.path.realpath(inp_local), os.path.realpath(self.local)
            else:
                a, b = inp.rstrip("/"), self.url.rstrip("/")
            if _same_or_inside(a, b):
                raise ValueError(f"the output {self.url!r} is or contains the input {inp!r}; a write there could "
                                 "destroy its own input. Write the store to another path.")
            if _same_or_inside(b, a):
                raise ValueError(f"the output {self.url!r} lies inside the input {inp!r}. Write the store to "
                                 "another path.")

    def _refuse(self, state, where):
        if state == "file":
            raise FileExistsError(f"{where!r} exists and is a file, not a daskdca store; daskdca will not "
                                  "replace it. Pick another path for the store.")
        if state == "other":
            raise FileExistsError(f"{where!r} exists and is not a daskdca store; daskdca never writes into "
                                  "other folders (nothing was changed). Pick another path, e.g. a new "
                                  "folder name ending in .zarr.")
        if state == "store" and not self.overwrite:
            raise FileExistsError(f"{where!r} is an existing daskdca store; pass overwrite=True (CLI: "
                                  "--overwrite) to replace it, or pick another path.")

    def begin(self):
        """Check the target, clean leftovers of killed writes, create the temporary folder."""
        self._check_inputs()
        if self.local is None:
            self._refuse(_remote_state(self.url, self.storage_options), self.url)
            self.work_url = self.url
            return self
        target = os.path.abspath(self.local)
        self.target = target
        if os.path.isdir(os.path.dirname(target)):
            # first: a store that a killed replacement moved aside goes back before the target is judged
            self.cleaned = _clean_leftovers(target)
        self._refuse(_local_state(target), self.url)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{target}.tmp-{uuid.uuid4().hex[:16]}"
        os.mkdir(tmp)
        self.tmp = tmp
        fd = os.open(os.path.join(tmp, TMP_MARKER), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        self._fd = fd
        _lock_nowait(fd)
        os.write(fd, json.dumps({"daskdca_temp": 1, "target": os.path.basename(target), "pid": os.getpid(),
                                 "host": socket.gethostname(), "started": time.time()}).encode())
        self.work_url = os.path.join(tmp, "store")
        return self

    def scratch(self, name):
        """URL of a temporary location for ``name``, removed when the write ends."""
        if self.tmp is not None:
            return os.path.join(self.tmp, name)
        url = f"{self.url.rstrip('/')}.tmp-{uuid.uuid4().hex[:16]}"
        self._scratch.append(url)
        return url

    def note_in_place_write(self):
        self._wrote_in_place = self.local is None

    def check_before_commit(self, group):
        """Object stores: the attributes still name this writer (else another one started)."""
        if self.local is not None:
            return
        current = group.attrs.asdict().get("daskdca", {})
        if current.get("writer") != self.writer_id:
            raise StoreError(f"another writer started writing {self.url!r} while this one ran; this write is "
                             "abandoned. Write again, one writer per path.")

    def publish(self, checksums):
        """Move the finished store to the target (local) and check what is there now."""
        if self.local is not None:
            self._publish_local()
        store = open_store(self.url, self.storage_options)
        if list(store._meta.block_checksums) != list(checksums):
            raise StoreError(f"another writer replaced {self.url!r} at the same time; the store there now is "
                             "complete but holds the other writer's data.")
        self.close()
        return store

    def _publish_local(self):
        src, target = self.work_url, self.target
        state = _local_state(target)
        if state == "store" and self.overwrite:
            if not _renameat2(src, target, _RENAME_EXCHANGE):
                aside = os.path.join(self.tmp, "old")
                os.rename(target, aside)
                try:
                    os.rename(src, target)
                except BaseException:
                    os.rename(aside, target)
                    raise
            return  # the old store is inside self.tmp now and goes with it
        if state in ("file", "other", "store"):
            raise FileExistsError(f"{self.url!r} was created by another writer while this one ran; nothing was "
                                  "replaced and this write was discarded.")
        if state == "empty":
            with contextlib.suppress(OSError):
                os.rmdir(target)
        try:
            if not _renameat2(src, target, _RENAME_NOREPLACE):
                os.rename(src, target)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                raise FileExistsError(f"{self.url!r} was created by another writer while this one ran; nothing "
                                      "was replaced and this write was discarded.") from exc
            raise

    def close(self):
        """Remove what this write created besides the published store."""
        if self.tmp is not None:
            _remove_marked(self.tmp)
            self.tmp = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for url in self._scratch:
            _remove(url, self.storage_options)
        self._scratch = []

    def abandon(self):
        """After a failure: remove the temporary folder (local) or the partial in-place write."""
        if self._wrote_in_place:
            _remove(self.url, self.storage_options)
        self.close()


def _remove(url, storage_options):
    """Best-effort removal of a store this module created (remote URLs, scratch)."""
    with contextlib.suppress(Exception):
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        if fs.exists(path):
            fs.rm(path, recursive=True)


@contextlib.contextmanager
def _destination(url, storage_options, *, overwrite, inputs=()):
    """A checked destination; its temporary files are removed whatever happens."""
    dest = _Destination(url, storage_options, overwrite=overwrite, inputs=inputs)
    try:
        yield dest.begin()
    except BaseException:
        dest.abandon()
        raise
    else:
        dest.close()


# ----------------------------------------------------------------- writing


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
        self.checksum = CHECKSUM_KINDS[CHECKSUM]  # one kind for the whole write
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
        X = sp.csr_matrix(X)
        X.sort_indices()
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
        np.add.at(self.column_nnz, indices[data != 0], 1)
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

    def finish(self, *, n_features=None, shift_indices=0, extra_attrs=None, feature_permutation=None):
        """Write the statistics and checksums, verify every block, write the marker, publish."""
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
        meta = {
            "format_version": FORMAT_VERSION,
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
        meta.update(extra_attrs or {})
        self._verify_written(d, meta)
        if self.dest is not None:
            self.dest.check_before_commit(self.group)
        meta["complete"] = True  # written last, with the anndata keys, in one update: the commit marker
        self.group.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0",
                                 "shape": [int(self.n), int(d)], "daskdca": meta})
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


def write_store(url, X, y, *, block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", float32=False,
                shuffle=True, seed=0, renumber_features=False, storage_options=None, source="arrays",
                overwrite=False, sample_weight=None):
    """Write in-memory or dask data to a complete store and return its handle.

    Parameters
    ----------
    url : str or path
        Local path or fsspec URL.  It must not exist, be an empty folder, or
        (with ``overwrite=True``) be a daskdca store; any other folder is
        refused.
    X : scipy sparse matrix, ndarray, or dask array of row chunks
        Real numbers (complex raises TypeError).  A dask array (one column
        chunk; else ``X.rechunk({1: -1})``) is written one row chunk at a
        time, each converted to CSR without densifying: its chunks may be
        NumPy arrays, scipy.sparse matrices or arrays of any format (CSR,
        CSC, COO, ...; e.g. AnnData's ``read_elem_lazy``) or pydata sparse
        COO/GCXS arrays (fill value 0), and memory holds one chunk's
        sparse form at a time.
    y : array-like or dask array of shape (n,)
        A dask array is computed chunk by chunk with X's row chunks.
    block_rows : int
        Rows per block (partition).
    compression : {"zstd", "zstd:LEVEL", "none"}
    float32 : bool
        Store values as float32.
    shuffle : bool, default True
        Store the rows in a seeded uniform random order, so that every run of
        blocks (a partition) sees the data's distribution: real files are
        often sorted by label, and distributed solvers converge far slower
        on such partitions.  In memory for arrays; a dask array goes through
        a temporary store and the out-of-core bucket shuffle of
        :func:`rewrite_store`.  ``shuffle=False`` keeps the given order.
        :attr:`CSRStore.row_permutation` maps stored rows back.
    seed : int
        Seed of the permutation.
    renumber_features : bool
        Renumber columns by decreasing frequency and store the permutation.
    storage_options : dict, optional
        fsspec options for a URL.
    source : str
        Recorded in the attributes.
    overwrite : bool, default False
        Replace an existing daskdca store at ``url`` (atomically on local
        file systems: the old store stays until the new one is complete).
    sample_weight : array-like of shape (n,) or None, default None
        Row weights ``s_i >= 0`` (finite, not all zero), stored beside ``y``
        (shuffled with the rows, covered by the block checksums): every fit
        on the store solves ``1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2``.
        In-memory X only for now (a dask X with weights raises).

    Returns
    -------
    CSRStore

    Raises
    ------
    FileExistsError
        ``url`` is a file or a folder that is not a daskdca store, or a store
        and ``overwrite`` is False.
    TypeError, ValueError
        Bad arrays or parameters; the message names the value.
    """
    url = _check_url(url)
    storage_options = _check_storage_options(storage_options)
    _check_writer_args(block_rows, compression, float32)
    shuffle = _check_bool("shuffle", shuffle)
    renumber_features = _check_bool("renumber_features", renumber_features)
    seed = _check_int("seed", seed, low=0)
    _check_bool("overwrite", overwrite)
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is a dependency
        da = None
    if da is not None and isinstance(X, da.Array):
        if sample_weight is not None:
            raise ValueError("sample_weight with a dask array X is not supported yet; pass X in memory (e.g. "
                             "X.compute()) with sample_weight, or write the store without weights.")
        y = _check_dask_input(X, y)
        index_dtype = np.int64 if X.shape[1] > INT32_LIMIT else np.int32
        with _destination(url, storage_options, overwrite=overwrite) as dest:
            if not (shuffle or renumber_features):
                w = _Writer(dest.work_url, storage_options, block_rows=block_rows, compression=compression,
                            float32=float32, source=source, index_dtype=index_dtype, dest=dest)
                return _append_dask(w, X, y).finish(n_features=X.shape[1], extra_attrs=_order_attrs(False, None))
            # rows are permuted out of core: staged as given, then bucket-shuffled like rewrite_store
            w = _Writer(dest.scratch("staged"), storage_options, block_rows=block_rows, compression="none",
                        float32=float32, source=source, index_dtype=index_dtype)
            staged = _append_dask(w, X, y).finish(n_features=X.shape[1])
            return _rewrite_into(staged, dest, storage_options, shuffle=shuffle, seed=seed,
                                 renumber_features=renumber_features, block_rows=block_rows,
                                 compression=compression, source_name=source)
    if sp.issparse(X):
        _check_dtype("X", X.dtype)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim}-D.")
        X = sp.csr_matrix(X, dtype=np.float64 if X.dtype.kind != "f" else X.dtype)
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
    if y is not None and hasattr(y, "compute") and hasattr(y, "chunks"):
        y = y.compute()
    y = _as_labels(y, X.shape[0])
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
    X.sum_duplicates()
    _check_finite_block(X, y, 0, "")
    if shuffle:
        perm = np.random.default_rng(seed).permutation(X.shape[0])
        X, y = X[perm], y[perm]
        if sample_weight is not None:
            sample_weight = sample_weight[perm]
    feature_permutation = None
    if renumber_features:
        counts = np.bincount(X.indices[X.data != 0], minlength=X.shape[1])
        feature_permutation = _feature_order(counts)
        X = X[:, feature_permutation].tocsr()
    index_dtype = np.int64 if X.shape[1] > INT32_LIMIT else np.int32
    with _writing(url, storage_options, overwrite=overwrite, block_rows=block_rows, compression=compression,
                  float32=float32, source=source, index_dtype=index_dtype, weighted=sample_weight is not None) as w:
        for start in range(0, X.shape[0], block_rows):
            w.append(X[start:start + block_rows], y[start:start + block_rows],
                     None if sample_weight is None else sample_weight[start:start + block_rows])
        return w.finish(n_features=X.shape[1], extra_attrs=_order_attrs(shuffle, seed),
                        feature_permutation=feature_permutation)


def _order_attrs(shuffle, seed, source=None):
    """The row-order attributes of a new store: shuffled by this write, or as ``source``'s rows."""
    if shuffle:
        return {"shuffled": True, "shuffle_seed": int(seed)}
    if source is not None:  # same rows in the same order: the source's record holds
        return {"shuffled": source.shuffled, "shuffle_seed": source.attrs.get("shuffle_seed")}
    return {"shuffled": False, "shuffle_seed": None}


def _check_dask_input(X, y):
    """Checks of a dask array input before anything is written; returns ``y`` (NumPy unless dask)."""
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
    else:
        y = _as_labels(y, X.shape[0])
    return y


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


def _append_dask(w, X, y):
    """Append a dask array's row chunks to writer ``w``, one chunk in memory at a time; returns ``w``.

    Each chunk is computed (with its labels when ``y`` is a dask array
    chunked like X's rows), converted to CSR by :func:`_chunk_as_csr`
    without densifying, checked and appended before the next is computed:
    memory is one chunk's sparse form plus the writer's buffers.
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
        yc = np.asarray(yc, dtype=np.float64)
        if yc.shape != (rows,):
            raise ValueError(f"chunk {k} of y has shape {yc.shape} but X's chunk {k} has {rows} rows; "
                             "they must match.")
        chunk.sum_duplicates()
        _check_finite_block(chunk, yc, start, "")
        w.append(chunk, yc)
        del chunk, yc  # the next chunk is computed without this one alive
        start += rows
    return w


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
            try:
                buf = f.read(chunk_bytes)
            except (EOFError, zlib.error, OSError) as exc:  # gzip.BadGzipFile is an OSError
                raise ValueError(f"{path}: the compressed file is truncated or damaged after {offset + len(rest)} "
                                 f"bytes of text ({type(exc).__name__}: {exc}); copy or download it again."
                                 ) from None
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
        except OverflowError:
            return (f" at {_where(first_line, k, base_offset + pos)}: a feature index or value is too large "
                    f"(scikit-learn's svmlight parser reads indices up to 2**31 - 1 = {INT32_LIMIT})")
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
    except (ValueError, OverflowError):
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
                     chunk_bytes=DEFAULT_CHUNK_BYTES, compression="zstd", float32=False, shuffle=True,
                     seed=0, renumber_features=False, storage_options=None, client=None, progress=None,
                     overwrite=False):
    """Convert an svmlight/LIBSVM file (plain, .gz, .bz2) into a store, streaming.

    Memory is bounded by ``chunk_bytes`` of text and one block, not by the
    file.  Parsing uses scikit-learn's svmlight parser; ``zero_based``
    follows :func:`sklearn.datasets.load_svmlight_file` (``"auto"``: one-based
    unless an index 0 occurs).  A malformed line, a non-finite value, an
    index 0 in a one-based file, an index beyond ``n_features`` or beyond
    2**31 - 1 raises with the file, line and byte offset; a truncated
    compressed file, an empty file and a file without features raise too.

    Rows are shuffled by default (seeded, uniform over all rows; see
    :func:`write_store` for why): the data goes through a temporary store and
    an external bucket shuffle inside the write's temporary folder, so memory
    stays bounded by about one block; the text is parsed once and the rows
    are written twice.  ``shuffle=False`` keeps the file's order and writes
    once.  With a Dask ``client`` and a plain-text file, byte ranges are
    parsed on the workers.

    Parameters
    ----------
    path : str or path
        The svmlight/LIBSVM file.
    url : str or path
        The store to write (see :func:`write_store` for what may be there).
    n_features : int, optional
        Number of features (default: the largest index in the file).
    zero_based : {"auto", True, False}
    block_rows : int
        Rows per block.
    chunk_bytes : int
        Text parsed per parser call.
    compression : {"zstd", "zstd:LEVEL", "none"}
    float32 : bool
    shuffle : bool, default True
        Store the rows in a seeded uniform random order (:func:`write_store`).
    seed : int
    renumber_features : bool
    storage_options : dict, optional
    client : distributed.Client, optional
    progress : bool, optional
    overwrite : bool, default False
        Replace an existing daskdca store at ``url``; the old store stays
        intact until the new one is complete (local file systems).

    Returns
    -------
    CSRStore
    """
    if zero_based not in (True, False, "auto") or isinstance(zero_based, (int, float)) and \
            not isinstance(zero_based, bool):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}.")
    chunk_bytes = _check_int("chunk_bytes", chunk_bytes, low=1, hint=" Text per parser call, e.g. 33554432.")
    if n_features is not None:
        n_features = _check_int("n_features", n_features, low=1, hint=" Or None for the largest index seen.")
    url = _check_url(url)
    storage_options = _check_storage_options(storage_options)
    _check_writer_args(block_rows, compression, float32)
    shuffle = _check_bool("shuffle", shuffle)
    renumber_features = _check_bool("renumber_features", renumber_features)
    seed = _check_int("seed", seed, low=0)
    path = _check_url(path, "path")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a folder; convert needs an svmlight/LIBSVM file (plain, .gz or "
                                ".bz2). A daskdca store is used directly, without converting.")
    with _destination(url, storage_options, overwrite=overwrite, inputs=[path]) as dest:
        if shuffle or renumber_features:
            staged = _convert_into(path, dest.scratch("staged"), None, storage_options, n_features=n_features,
                                   zero_based=zero_based, block_rows=block_rows, chunk_bytes=chunk_bytes,
                                   compression="none", float32=float32, client=client, progress=progress)
            return _rewrite_into(staged, dest, storage_options, shuffle=shuffle, seed=seed,
                                 renumber_features=renumber_features, block_rows=block_rows,
                                 compression=compression, source_name=os.path.basename(path))
        return _convert_into(path, dest.work_url, dest, storage_options, n_features=n_features,
                             zero_based=zero_based, block_rows=block_rows, chunk_bytes=chunk_bytes,
                             compression=compression, float32=float32, client=client, progress=progress)


def _convert_into(path, work_url, dest, storage_options, *, n_features, zero_based, block_rows, chunk_bytes,
                  compression, float32, client, progress):
    """Parse ``path`` into a store at ``work_url`` (published through ``dest`` when given)."""
    index_dtype = np.int64 if n_features is not None and n_features > INT32_LIMIT else np.int32
    pieces = (_parallel_pieces(client, path, chunk_bytes) if client is not None
              else _iter_svmlight(path, chunk_bytes))
    # largest raw index allowed (indices are shifted only at the end, see _index_shift)
    raw_limit = None if n_features is None else (n_features - 1 if zero_based is True else n_features)
    w = _Writer(work_url, storage_options, block_rows=block_rows, compression=compression, float32=float32,
                source=os.path.basename(path), index_dtype=index_dtype, dest=dest)
    bar = _progress(progress, path)
    try:
        _convert_pieces(pieces, w, bar, path, zero_based, raw_limit, n_features)
    finally:
        if bar is not None:
            bar.close()
    if w.n == 0:
        raise ValueError(f"{path}: no rows (the file is empty or holds only comments); nothing to convert.")
    shift = _index_shift(zero_based, w.min_index, path)
    if n_features is not None and w.d - shift > n_features:
        raise ValueError(f"{path}: feature index {w.d - 1} is beyond n_features={n_features} "
                         f"({'one' if shift else 'zero'}-based); pass a larger n_features.")
    if n_features is None and w.d - shift < 1:
        raise ValueError(f"{path}: no features (d = 0): every row is empty. Pass n_features to convert rows "
                         "without features.")
    return w.finish(n_features=n_features, shift_indices=shift, extra_attrs=_order_attrs(False, None))


def _convert_pieces(pieces, w, bar, path, zero_based, raw_limit, n_features):
    """Check and append parsed pieces (indices still raw: shifted at the end)."""
    for X, y, end_offset, line in pieces:
        if X.indices.size and int(X.indices.min()) < (1 if zero_based is False else 0):
            low = int(X.indices.min())
            row = int(np.searchsorted(X.indptr, int(np.argmin(X.indices)), side="right") - 1)
            where = f"line {line + row + 1}" if line is not None else f"a line before byte {end_offset}"
            if zero_based is False:
                raise ValueError(f"{path}: feature index {low} at {where} in a one-based file (zero_based=False); "
                                 "LIBSVM indices start at 1. Pass zero_based=True or 'auto' if the file is "
                                 "zero-based.")
            raise ValueError(f"{path}: negative feature index {low} at {where}; indices start at 0 or 1.")
        if raw_limit is not None and X.indices.size and int(X.indices.max()) > raw_limit:
            top = int(X.indices.max())
            row = int(np.searchsorted(X.indptr, int(np.argmax(X.indices)), side="right") - 1)
            where = f"line {line + row + 1}" if line is not None else f"a line after byte {end_offset}"
            raise ValueError(f"{path}: feature index {top} at {where} is beyond n_features={n_features}; "
                             "pass a larger n_features.")
        w.append(X, y)
        if bar is not None:
            bar.update(end_offset - bar.n)


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
    seed : int
    renumber_features : bool
    block_rows : int
    compression : {"zstd", "zstd:LEVEL", "none"}
    storage_options : dict, optional
    source_name : str, optional
        Recorded as the source (default: the source store's).
    overwrite : bool, default False
        Replace an existing daskdca store at ``url``.

    Returns
    -------
    CSRStore
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
    w = _Writer(dest.work_url, storage_options, block_rows=block_rows, compression=compression,
                float32=value_dtype == np.float32, source=source_name or store.attrs.get("source"),
                index_dtype=index_dtype, dest=dest)
    if not shuffle:
        for X, y in store.iter_blocks():
            w.append(renumbered(X), y)
        return w.finish(n_features=d, feature_permutation=feature_permutation, extra_attrs=extra)
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
    return w.finish(n_features=d, feature_permutation=feature_permutation, extra_attrs=extra)
