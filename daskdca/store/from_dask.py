"""Dask input of a write: the checks of a dask array ``X`` (and ``y``) before anything is written, the
conversion of each computed chunk (NumPy, scipy.sparse or pydata sparse) to CSR without densifying, and
the chunk-by-chunk append to a writer.  The only module of :mod:`daskdca.store` that imports dask, and only
inside its functions, so that importing daskdca does not import dask."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from daskdca.store.writer import _as_labels, _check_dtype, _check_finite_block


def _is_dask_array(X):
    """Whether ``X`` is a dask array (False where dask is not installed)."""
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is a dependency
        return False
    return isinstance(X, da.Array)


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
