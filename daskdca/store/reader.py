"""Reading a store: :func:`open_store` checks a complete store's attributes and arrays and returns a
:class:`CSRStore`, the picklable read handle whose :meth:`~CSRStore.read_block` verifies every block it
reads against its recorded checksum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import zarr

from daskdca.store.format import (
    ATTRS_CHECKSUM,
    CHECKSUM_KINDS,
    LABEL_NAMES_VERSION,
    MAX_LABEL_VALUES,
    READ_VERSIONS,
    ROW_CHUNK,
    StoreError,
    _block_checksum,
    _changed_attrs,
    _check_storage_options,
    _check_url,
    _crc,
)


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

    Open one with :func:`open_store`, which checks the store and reads
    ``meta``; the constructor checks nothing.

    Parameters
    ----------
    url : str
        The store's path or URL.
    storage_options : dict or None
        The fsspec options of ``url``.
    meta : object
        The store's metadata as :func:`open_store` read and checked it
        (shape, block offsets, block checksums, attributes).

    Attributes
    ----------
    n, d, nnz : int
        Rows, features and stored non-zeros.
    n_blocks : int
        Row blocks (the partitions of the Dask engine).
    block_row_offsets : ndarray of int64
        Block ``k`` holds rows ``[offsets[k], offsets[k+1])``.
    block_nnz_offsets : ndarray of int64
        Block ``k`` holds stored values ``[offsets[k], offsets[k+1])``.
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
    def block_nnz_offsets(self):
        """Block ``k`` holds stored values ``[offsets[k], offsets[k+1])`` (checked when the store was opened)."""
        return np.asarray(self._meta.block_nnz_offsets, dtype=np.int64)

    @property
    def weighted(self):
        """Whether the store holds row weights (``sample_weight``, written by ``write_store``)."""
        return bool(self.attrs.get("weighted", False))

    @property
    def label_values(self):
        """Sorted distinct labels as stored in ``y``.

        None when there are more than 64 (regression targets); the codes
        ``0 .. K-1`` when the labels are names (:attr:`label_names`).
        """
        values = self.attrs.get("label_values")
        return None if values is None else np.asarray(values)

    @property
    def label_names(self):
        """The labels of a store written from labels that are not numbers (strings or bools), sorted.

        Stored label ``k`` is ``label_names[k]``; None when ``y`` holds the
        labels themselves.
        """
        names = self.attrs.get("label_names")
        return None if names is None else np.asarray(names, dtype=object if isinstance(names[0], str) else bool)

    @property
    def classes(self):
        """The distinct labels as they were given.

        :attr:`label_names` when recorded, else :attr:`label_values` (None
        for more than 64 values).
        """
        names = self.label_names
        return self.label_values if names is None else names

    def labels_of(self, y):
        """Stored labels ``y`` (a block's, or the whole ``y`` array) as the labels that were given.

        Parameters
        ----------
        y : array-like
            Labels as the store holds them.

        Returns
        -------
        ndarray
            ``y`` itself when the labels are numbers, else the names of
            the codes (:attr:`label_names`).
        """
        names = self.label_names
        return np.asarray(y) if names is None else names[np.asarray(y).astype(np.intp)]

    @property
    def feature_names(self):
        """The column names of the frame the store was written from, as an object array.

        In the source's feature order, as ``coef_``; None when the store
        was written from arrays or a file.
        """
        names = self.attrs.get("feature_names")
        return None if names is None else np.asarray(names, dtype=object)

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
        perm = self._read_checked("feature_permutation", self.attrs.get("feature_permutation_checksum"))
        problem = _permutation_problem(perm, self.d)
        if problem:
            raise StoreError(f"feature_permutation of {self.url!r} {problem}; the store is inconsistent. "
                             "Convert the data again.")
        return perm

    @property
    def shuffled(self):
        """Whether the rows are in a seeded uniform random order.

        The default of every write; generated stores draw their rows i.i.d.
        """
        return bool(self.attrs.get("shuffled", self.attrs.get("shuffle_seed") is not None))

    @property
    def row_permutation(self):
        """``perm`` with stored row ``p`` = row ``perm[p]`` of the rows given to the write, or None.

        The rows given to the write that shuffled them (``write_store``'s
        X, ``convert_svmlight``'s file); None when unknown or unshuffled.
        ``fit`` on a store returns ``dual_coef_`` in stored row order; ``dual_coef_[np.argsort(perm)]``
        is in the order of the original rows.
        """
        seed = self.attrs.get("shuffle_seed")
        return None if seed is None else np.random.default_rng(int(seed)).permutation(self.n)

    def to_source_features(self, w):
        """A weight vector in stored column order, returned in the source's feature order.

        Parameters
        ----------
        w : array-like of shape (d,)
            Weights in the stored column order.

        Returns
        -------
        ndarray of shape (d,)
            The same weights in the source's feature order (``w`` itself
            when the features were not renumbered).
        """
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
        """Read rows ``[start, stop)``, NOT verified (use :meth:`read_block`).

        Parameters
        ----------
        start : int
            The first row.
        stop : int
            One past the last row.

        Returns
        -------
        X : scipy.sparse.csr_matrix
            The rows, of shape (stop - start, d).
        y : ndarray
            Their labels, as stored.
        """
        indptr, indices, data, y, _, _ = self._read_raw(start, stop)
        return sp.csr_matrix((data, indices, indptr), shape=(stop - start, self.d)), y

    def read_labels(self, start, stop):
        """The labels and row weights of rows ``[start, stop)``, NOT verified, without the rows themselves.

        For a choice that a verified read of the same rows checks later (the
        conjugate sums of CoCoA+'s momentum and line searches, out of core):
        a wrong label there can only pick a worse step, or one outside the
        dual domain, which the next round's verified gap sums see, never a
        false certificate; certify with :meth:`read_block`.

        Parameters
        ----------
        start : int
            The first row.
        stop : int
            One past the last row.

        Returns
        -------
        y : ndarray
            The labels, as stored.
        weight : ndarray of float64 or None
            The rows' weights; None in an unweighted store.
        """
        weight = self._array("sample_weight")[start:stop] if self.weighted else None
        return self._array("y")[start:stop], weight

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
            The block's rows.
        y : ndarray of float64
            Their labels, as stored.
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
        """Yield ``(X, y)`` of every block in order (each verified).

        Yields
        ------
        X : scipy.sparse.csr_matrix
            A block's rows.
        y : ndarray
            Their labels, as stored.
        """
        for k in range(self.n_blocks):
            yield self.read_block(k)

    def read_all(self):
        """Read the whole store into memory (every block verified).

        Returns
        -------
        X : scipy.sparse.csr_matrix
            All rows, in the stored order.
        y : ndarray
            Their labels, as stored.
        """
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


def _permutation_problem(perm, d):
    """Why ``perm`` is not a permutation of ``range(d)``, or None."""
    perm = np.asarray(perm)
    if perm.shape != (d,) or perm.dtype.kind not in "iu":
        return f"has shape {perm.shape} and dtype {perm.dtype}, not {d} integers"
    if d and (int(perm.min()) < 0 or int(perm.max()) >= d):
        return f"holds {int(perm.min())}..{int(perm.max())}, outside 0..{d - 1}"
    seen = np.zeros(d, dtype=bool)
    seen[perm] = True
    if not seen.all():
        return f"is not a permutation of range({d}): feature {int(np.flatnonzero(~seen)[0])} is missing"
    return None


def _label_problem(y_array, n, label_values):
    """Why the stored labels disagree with the ``label_values`` attribute, or None.

    Reads ``y`` (8 bytes a row) in pieces of 16 row chunks; with
    ``label_values`` None (more than 64 distinct values, a regression target)
    it stops as soon as 65 distinct values are seen, usually in the first
    piece.
    """
    step = 16 * ROW_CHUNK
    if label_values is None:
        seen = set()
        for lo in range(0, n, step):
            y = y_array[lo:min(n, lo + step)]
            if not np.all(np.isfinite(y)):
                return f"y holds the non-finite value {float(y[~np.isfinite(y)][0])!r}"
            seen.update(np.unique(y).tolist())
            if len(seen) > MAX_LABEL_VALUES:
                return None
        return (f"label_values is None (more than {MAX_LABEL_VALUES} distinct labels) but y holds "
                f"{len(seen)} distinct values")
    try:
        values = np.asarray(label_values, dtype=np.float64)
    except (TypeError, ValueError):
        return f"label_values is {label_values!r}, not a list of numbers"
    if values.ndim != 1 or not values.size or not np.all(np.isfinite(values)) \
            or np.any(np.diff(values) <= 0):
        return f"label_values {label_values!r} is not a sorted list of distinct finite numbers"
    hit = np.zeros(values.size, dtype=bool)
    for lo in range(0, n, step):
        y = y_array[lo:min(n, lo + step)]
        if values.size <= 8:  # a few comparisons beat a binary search per row (1-2 ns a row each)
            found = np.zeros(y.shape, dtype=bool)
            for j, value in enumerate(values):
                equal = y == value
                hit[j] |= bool(equal.any())
                found |= equal
        else:
            where = np.minimum(np.searchsorted(values, y), values.size - 1)
            found = values[where] == y
            hit[where[found]] = True
        if not found.all():
            return f"y holds the label {float(y[~found][0])!r}, which label_values {values.tolist()} lacks"
    if not hit.all():
        return f"label_values {values.tolist()} names {values[~hit].tolist()}, which no row of y holds"
    return None


def _label_names_problems(meta, labels):
    """Disagreements of ``label_names`` with the format version and ``label_values`` (the codes 0 .. K-1)."""
    names = meta.get("label_names")
    version = meta.get("format_version")
    if names is None:
        if version == LABEL_NAMES_VERSION:
            return [f"format {version} records label names, but label_names is missing"]
        return []
    if version != LABEL_NAMES_VERSION:
        return [f"label_names is recorded in a format-{version} store (only format {LABEL_NAMES_VERSION} has them)"]
    kinds = {type(v) for v in names} if isinstance(names, list) else set()
    if not names or kinds not in ({str}, {bool}) or len(set(names)) != len(names) or names != sorted(names):
        return [f"label_names {names!r} is not a sorted list of distinct strings or bools"]
    if labels != [float(k) for k in range(len(names))] and labels != list(range(len(names))):
        return [f"label_values {labels!r} are not the codes 0 .. {len(names) - 1} of label_names {names!r}"]
    return []


def _meta_problems(group, meta, n, d):
    """Disagreements between the ``daskdca`` attributes and each other or the arrays (cheap: y and
    feature_permutation are read, nothing else)."""
    problems = []
    for name in ("weighted", "renumbered_features", "shuffled"):
        if name in meta and not isinstance(meta[name], bool):
            problems.append(f"{name} is {meta[name]!r}, not true or false")
    seed = meta.get("shuffle_seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        problems.append(f"shuffle_seed is {seed!r}, not null or an int >= 0")
    for name, array in (("value_dtype", "data"), ("index_dtype", "indices")):
        if name in meta:
            try:
                got = group[array].dtype
            except Exception:  # reported by the array checks
                continue
            if str(meta[name]) != str(got):
                problems.append(f"{name} is {meta[name]!r} but the array {array!r} holds {got}")
    labels = meta.get("label_values")
    problems.extend(_label_names_problems(meta, labels))
    names = meta.get("feature_names")
    if names is not None and not (isinstance(names, list) and len(names) == d
                                  and all(isinstance(v, str) for v in names)):
        problems.append(f"feature_names is not a list of {d} strings")
    mapping = meta.get("label_mapping")
    if "label_mapping" in meta:
        want = {"-1": labels[0], "+1": labels[1]} if isinstance(labels, list) and len(labels) == 2 else None
        if mapping != want:
            problems.append(f"label_mapping {mapping!r} does not match label_values {labels!r}")
    if "label_values" in meta:
        try:
            problem = _label_problem(group["y"], n, labels)
        except Exception as exc:  # a damaged y chunk
            problem = f"y cannot be read ({type(exc).__name__}: {exc})"
        if problem:
            problems.append(problem)
    if meta.get("renumbered_features") is True:
        try:
            perm = group["feature_permutation"][:]
        except Exception as exc:
            problems.append(f"renumbered_features is true but feature_permutation cannot be read "
                            f"({type(exc).__name__}: {exc})")
        else:
            problem = _permutation_problem(perm, d)
            if problem:
                problems.append(f"feature_permutation {problem}")
            elif meta.get("feature_permutation_checksum") is None or _crc(perm) != int(meta["feature_permutation_checksum"]):
                problems.append("feature_permutation does not match its checksum")
    return problems


def open_store(url, storage_options=None):
    """Open a complete daskdca store (local path or fsspec URL) for reading.

    Parameters
    ----------
    url : str or path
        Local path or fsspec URL of the store.
    storage_options : dict, optional
        The fsspec options of a URL.

    Returns
    -------
    CSRStore
        The read handle, checked (the blocks are verified as they are
        read).

    Raises
    ------
    StoreError
        If there is no store at ``url``, it is damaged, incomplete (an
        interrupted write on an object store), of another format version, or
        its attributes and arrays disagree.

    See Also
    --------
    write_store : Write a store from in-memory or dask arrays.
    convert_svmlight : Write a store from a LIBSVM file.
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
    version = meta.get("format_version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise StoreError(f"{url!r} has store format {version!r}; this daskdca reads formats "
                         f"{', '.join(map(str, READ_VERSIONS))} (block checksums that cover row norms and detect "
                         "missing chunks). Convert the data again (daskdca convert IN OUT --overwrite, or "
                         "write_store).")
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
    changed = _changed_attrs(attrs)
    if changed is None and version >= 3:
        raise StoreError(f"{url!r} is a format-{version} store without its attribute checksum "
                         f"({ATTRS_CHECKSUM!r}): it was removed after the write. Convert the data again "
                         "(daskdca convert IN OUT --overwrite, or write_store(..., overwrite=True)).")
    if changed:
        raise StoreError(f"{url!r}: the attributes {changed} were changed, added or removed after the store was "
                         f"written (they do not match the attribute checksum {ATTRS_CHECKSUM!r}); a fit or a "
                         "prediction would silently use the changed values. Convert the data again from its "
                         "source (daskdca convert IN OUT --overwrite, or write_store(..., overwrite=True)).")
    problems = _meta_problems(group, meta, n, d)
    if problems:
        raise StoreError(f"{url!r} is inconsistent ({'; '.join(problems)}); convert the data again.")
    return CSRStore(url, storage_options, _Meta(n, d, nnz, offsets, nnz_offsets, checksums, meta))
