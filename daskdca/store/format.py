"""The store format: version, layout constants, argument checks, :class:`StoreError` and block checksums.

Every other module of :mod:`daskdca.store` builds on this one: the constants
of the layout (block and chunk sizes, the temporary-folder marker), the
checks of the arguments that every write and read takes, and the block
checksum kinds (XXH3-64, and CRC-32C of stores written before 2026-11-26).
``CHECKSUM``, the kind new stores are written with, is read from this module
when a write starts (patch it here).
"""

from __future__ import annotations

import json
import os
import re

import google_crc32c
import numpy as np
import xxhash
from zarr.codecs import ZstdCodec

# 2: block checksums (attribute ``checksum``: CHECKSUM_KINDS) over all per-block arrays, recorded from memory,
# block nnz offsets, checksummed column counts (format 1 covered no row norms).
# 3: format 2 plus the attribute checksum ``attrs_checksum`` (ATTRS_CHECKSUM), required.  Format 2 stores
# are still read (their attributes are not covered until rewritten); a format-3 store without it is refused.
# Rule: bump the version whenever a reader of the old version would misread a new store, or a new
# guarantee must not be removable by editing the store back into an older format.
# 4: format 3 plus ``label_names`` (LABEL_NAMES_VERSION): labels that are not numbers (strings, bools) are
# stored as the codes 0 .. K-1 of the sorted names; written only by stores of such labels (a format-3 reader
# would take the codes for the labels), every other store is still written as format 3.
FORMAT_VERSION = 3
LABEL_NAMES_VERSION = 4
READ_VERSIONS = (2, 3, 4)
DEFAULT_BLOCK_ROWS = 2**15
# Chunk sizes measured in docs/references.md, note N9 (1 Mi elements for the
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
# The attribute checksum: an XXH3-64 of the canonical JSON of every attribute a fit or a prediction can
# depend on (the group's top-level ANNDATA_ATTRS and every key of the ``daskdca`` block except ``complete``,
# written after it as the commit marker, and the record itself), one per attribute (to name what changed)
# and one over all of them.
ATTRS_CHECKSUM = "attrs_checksum"
ANNDATA_ATTRS = ("encoding-type", "encoding-version", "shape")
_NOT_COVERED = ("complete", ATTRS_CHECKSUM)


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


def _check_source(name, value, *, optional=False):
    """The text recorded as a store's ``source`` attribute: a str (or None where ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str (the name of the data, recorded in the store's attributes), got "
                        f"{value!r} ({type(value).__name__}); pass e.g. {name}={str(value)!r}.")
    return value


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


# ----------------------------------------------------------------- attribute checksum


def _canonical_json(value):
    """The canonical JSON bytes of an attribute value (sorted keys, no spaces, ASCII; tuples as lists)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _covered_attrs(attrs):
    """``{name: value}`` of the attributes the attribute checksum covers (see ``ATTRS_CHECKSUM``)."""
    meta = attrs.get("daskdca")
    covered = {name: attrs.get(name) for name in ANNDATA_ATTRS}
    if isinstance(meta, dict):
        covered.update({key: value for key, value in meta.items() if key not in _NOT_COVERED})
    return covered


def _attrs_checksum(attrs, kind=_XXH3):
    """The attribute checksum record of a store's group attributes ``attrs`` (the ``daskdca`` block inside)."""
    covered = _covered_attrs(attrs)

    def digest(value):
        return int(kind.of(np.frombuffer(_canonical_json(value), dtype=np.uint8)))

    return {"kind": kind.name, "attributes": {name: digest(value) for name, value in covered.items()},
            "all": digest(covered)}


def _changed_attrs(attrs):
    """The covered attributes that differ from the stored record: ``[]`` when all match, None without a record.

    An attribute added or removed since the write counts as changed; a
    record that itself was edited is named ``attrs_checksum``.
    """
    meta = attrs.get("daskdca") if isinstance(attrs.get("daskdca"), dict) else {}
    record = meta.get(ATTRS_CHECKSUM)
    if record is None:
        return None
    if not (isinstance(record, dict) and record.get("kind") in CHECKSUM_KINDS
            and isinstance(record.get("attributes"), dict)):
        return [ATTRS_CHECKSUM]
    fresh = _attrs_checksum(attrs, CHECKSUM_KINDS[record["kind"]])
    if fresh["all"] == record.get("all") and fresh["attributes"] == record["attributes"]:
        return []
    stored = record["attributes"]
    changed = [name for name in sorted(set(fresh["attributes"]) | set(stored))
               if fresh["attributes"].get(name) != stored.get(name)]
    return changed or [ATTRS_CHECKSUM]
