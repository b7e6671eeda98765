"""Converting svmlight/LIBSVM text (plain, .gz, .bz2): a streaming parser over scikit-learn's that names the
line and byte offset of a malformed line, :func:`convert_svmlight`, and the parsing of byte ranges of a
plain-text file on the workers of a Dask ``client`` (the client is passed in; nothing here imports dask)."""

from __future__ import annotations

import bz2
import gzip
import io
import os
import uuid
import zlib

import numpy as np
import scipy.sparse as sp

from daskdca.store.format import (
    DEFAULT_BLOCK_ROWS,
    DEFAULT_CHUNK_BYTES,
    INT32_LIMIT,
    _check_bool,
    _check_int,
    _check_storage_options,
    _check_url,
)
from daskdca.store.publish import _destination
from daskdca.store.rewrite import _rewrite_into
from daskdca.store.writer import _check_writer_args, _order_attrs, _Writer


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
    zero_based : {"auto", True, False}, default="auto"
        Whether the file's feature indices start at 0 (``"auto"``: one-based
        unless an index 0 occurs).
    block_rows : int, default=32768
        Rows per block.
    chunk_bytes : int, default=33554432
        Text parsed per parser call.
    compression : {"zstd", "zstd:LEVEL", "none"}, default="zstd"
        The arrays' codec, as :func:`write_store` takes it.
    float32 : bool, default=False
        Store values as float32.
    shuffle : bool, default True
        Store the rows in a seeded uniform random order (:func:`write_store`).
    seed : int, default=0
        Seed of the permutation.
    renumber_features : bool, default=False
        Renumber columns by decreasing frequency and store the permutation
        (:func:`rewrite_store`).
    storage_options : dict, optional
        The fsspec options of ``url``.
    client : distributed.Client, optional
        Parse byte ranges of a plain-text file on this client's workers,
        which must be able to read ``path`` (a compressed file raises).
    progress : bool, optional
        Show a progress bar of the text parsed (tqdm).
    overwrite : bool, default False
        Replace an existing daskdca store at ``url``; the old store stays
        intact until the new one is complete (local file systems).

    Returns
    -------
    CSRStore
        The handle of the complete store.
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
