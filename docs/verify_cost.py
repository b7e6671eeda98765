"""Cost of verifying a block on every read, against an out-of-core epoch over it.

    python docs/verify_cost.py [--rows 32768] [--nnz-per-row 50] [--reps 15]

Writes a synthetic store (one default-size block, zstd), then times, per block:

* ``read``: ``read_block(k, verify=False)`` (zarr reads and zstd decoding);
* ``verify``: the checksum of every per-block array that ``read_block``
  computes (``_block_checksum``), timed alone on the arrays as read, for
  the kind new stores carry (XXH3-64) and for CRC-32C (stores written
  before 2026-11-26);
* ``read+verify``: ``read_block(k)`` as the engine calls it;
* ``epoch``: a numba pass pair over the block's nnz (a dot product and an
  update per row), a lower bound of one SDCA epoch over the block;
* ``sdca hinge`` / ``sdca logistic``: one epoch of the library's kernel
  (:func:`daskdca.kernels.sdca.local_sdca`, lam = 1e-4) over the block.

The verification share is ``verify / (read + epoch)``; medians over reps.
"""

import argparse
import os
import tempfile
import time

import numba
import numpy as np

from daskdca import datasets
from daskdca.kernels.sampling import permutation_order
from daskdca.kernels.sdca import local_sdca
from daskdca.losses import get_loss
from daskdca.partitions import UNWEIGHTED
from daskdca.store import CHECKSUM_KINDS, _block_checksum


@numba.njit(cache=False)
def _epoch(indptr, indices, data, w, scale):
    total = 0.0
    for i in range(len(indptr) - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * w[indices[k]]
        for k in range(indptr[i], indptr[i + 1]):
            w[indices[k]] += scale * acc * data[k]
        total += acc
    return total


def _median(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=32768)
    ap.add_argument("--features", type=int, default=100_000)
    ap.add_argument("--nnz-per-row", type=float, default=50.0)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = datasets.make_classification(os.path.join(tmp, "s.zarr"), args.rows, args.features,
                                             nnz_per_row=args.nnz_per_row, block_rows=args.rows, seed=0)
        X, y, sq = store.read_block(0, with_sqnorm=True)
        indptr = X.indptr.astype(np.int64)
        w = np.zeros(store.d)
        _epoch(indptr, X.indices, X.data, w, 1e-9)
        read = _median(lambda: store.read_block(0, verify=False), args.reps)
        both = _median(lambda: store.read_block(0), args.reps)
        verify = _median(lambda: _block_checksum(indptr, X.indices, X.data, y, sq), args.reps)
        verify_crc = _median(lambda: _block_checksum(indptr, X.indices, X.data, y, sq,
                                                     kind=CHECKSUM_KINDS["crc32c-v2"]), args.reps)
        epoch = _median(lambda: _epoch(indptr, X.indices, X.data, w, 1e-9), args.reps)
        n = X.shape[0]
        order = permutation_order(0, 0, 0, n, n, 0)
        sdca = {}
        for loss in ("hinge", "logistic"):
            alpha, u = np.zeros(n), np.zeros(store.d)
            kind = int(get_loss(loss).kind)

            def one_epoch():
                local_sdca(indptr, X.indices, X.data, y, UNWEIGHTED, sq, alpha, u, np.empty(0), order, kind, 0.0,
                           1e-4 * n, 1.0, False)

            one_epoch()  # compile
            sdca[loss] = _median(one_epoch, args.reps)
    print(f"block: {X.shape[0]} rows, {X.nnz} nnz, "
          f"{(X.data.nbytes + X.indices.nbytes + indptr.nbytes + y.nbytes + sq.nbytes) / 2**20:.1f} MiB")
    print(f"read (no verify)  {read * 1e3:8.2f} ms")
    print(f"read + verify     {both * 1e3:8.2f} ms")
    print(f"verify (XXH3-64)  {verify * 1e3:8.2f} ms  ({X.nnz * 12 / verify / 1e9:.1f} GB/s of nnz arrays)")
    print(f"verify (CRC-32C)  {verify_crc * 1e3:8.2f} ms  ({X.nnz * 12 / verify_crc / 1e9:.1f} GB/s of nnz arrays)")
    print(f"epoch (2 passes)  {epoch * 1e3:8.2f} ms")
    for loss, seconds in sdca.items():
        print(f"sdca {loss:8s}     {seconds * 1e3:8.2f} ms  -> verification share of an out-of-core epoch "
              f"{100 * verify / (read + seconds):.1f}% (CRC-32C {100 * verify_crc / (read + seconds):.1f}%)")
    print(f"verification share of an out-of-core epoch: {100 * verify / (read + epoch):.1f}% "
          f"(of the epoch alone: {100 * verify / epoch:.1f}%); with CRC-32C: {100 * verify_crc / (read + epoch):.1f}%")


if __name__ == "__main__":
    main()
