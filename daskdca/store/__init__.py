"""The zarr store: CSR row blocks that are the partitions of the Dask engine.

Layout (one zarr v3 group, anndata-compatible CSR, docs/references.md, note N9)::

    store.zarr/
      zarr.json      attrs: encoding-type="csr_matrix", encoding-version="0.1.0", shape=[n, d],
                            daskdca={format_version, complete, writer, nnz, block_row_offsets,
                                     block_nnz_offsets, block_checksums, checksum,
                                     column_nnz_checksum, label_values, label_mapping,
                                     value_dtype, index_dtype, source, max_row_norm,
                                     shuffled, shuffle_seed, ..., attrs_checksum}
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
  store needs ``overwrite=True``; the output may not be or contain the input,
  nor lie inside a store or a checkpoint folder, nor (a store replaced) hold one.

``attrs_checksum`` (format 3) covers every other attribute of the group except
``complete``; :func:`open_store` verifies it and checks ``label_values``
against ``y`` and ``feature_permutation`` against ``range(d)``.

Reads are verified every time: :meth:`CSRStore.read_block` checks the block's
XXH3-64 checksum (CRC-32C in stores written before 2026-11-26) over every
per-block array (indptr, indices, data, labels, row norms) and the block's
row and non-zero counts, recorded from the data in memory as
it was written, so a deleted chunk (read by zarr as fill values), an altered
chunk, or a consistent rewrite through zarr all raise :class:`StoreError`.

Modules: :mod:`~daskdca.store.format` (constants, argument checks,
:class:`StoreError`, block checksums), :mod:`~daskdca.store.reader`
(:func:`open_store`, :class:`CSRStore`), :mod:`~daskdca.store.publish`
(atomic publication, locks, cleanup), :mod:`~daskdca.store.writer` (the
block writer), :mod:`~daskdca.store.rewrite` (:func:`rewrite_store`),
:mod:`~daskdca.store.from_dask` (dask input, the only module importing dask),
:mod:`~daskdca.store.write` (:func:`write_store`) and
:mod:`~daskdca.store.svmlight` (:func:`convert_svmlight`).  The names other
code imports from ``daskdca.store`` are re-exported here.
"""

# the public API (__all__) and the names other modules, docs/ and tests import from daskdca.store
from daskdca.store.format import (  # noqa: F401
    CHECKSUM_KINDS,
    DEFAULT_BLOCK_ROWS,
    DEFAULT_CHUNK_BYTES,
    FORMAT_VERSION,
    INT32_LIMIT,
    TMP_MARKER,
    StoreError,
    _block_checksum,
)
from daskdca.store.reader import CSRStore, open_store
from daskdca.store.rewrite import rewrite_store
from daskdca.store.svmlight import convert_svmlight
from daskdca.store.write import write_store
from daskdca.store.writer import _writing  # noqa: F401

__all__ = [
    "FORMAT_VERSION",
    "StoreError",
    "CSRStore",
    "open_store",
    "write_store",
    "convert_svmlight",
    "rewrite_store",
]
