"""Serial SDCA's epochs to a certified gap under the visiting orders an out-of-core sweep can take.

An out-of-core partition is read one store block at a time.  Sweeping block after block (a random block
order, a permutation inside each block: today's out-of-core sweep, ``daskdca.methods.dual.sweep_blocks``)
takes far more epochs than one permutation of all rows at small ``lam n``.  This script measures, on a
generated store loaded into memory, the epochs serial SDCA (the ``local_sdca`` kernel, ``sigma = 1``) needs
to a certified relative gap under:

- ``whole``: one permutation of all rows an epoch (the in-memory sweep);
- ``blocks``: a random block order, each block's rows permuted, one block after another;
- ``window:W``: a sliding window of ``W`` blocks.  Block ``j`` (position ``p`` in the epoch's random block
  order) is held from segment ``p`` to segment ``p + W - 1``; its permuted rows are cut into ``W`` chunks of
  (near) equal size, chunk ``c`` going to segment ``p + c``; each segment's rows (a chunk of each of the
  at most ``W`` blocks held) are visited in a random order.  At most ``W`` blocks are in memory at once,
  every row is visited once an epoch, and each block is read once an epoch.

Every order comes from a generator seeded by ``(0, epoch)``.  It measures and asserts nothing.

Run: ``python benchmarks/visit_order.py [--rows 200000 --features 20000 --nnz 20 --block-rows 16384]``.
Results: benchmarks/RESULTS.md, "Out of core: a sliding window of blocks".
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from daskdca import datasets, store
from daskdca.kernels.sdca import local_sdca
from daskdca.losses import get_loss


def block_order(kind, blocks, rng):
    """The epoch's row order under ``kind`` (``whole``, ``blocks`` or ``window:W``)."""
    n = int(blocks[-1][-1]) + 1
    if kind == "whole":
        return rng.permutation(n)
    positions = rng.permutation(len(blocks))
    if kind == "blocks":
        return np.concatenate([rng.permutation(blocks[b]) for b in positions])
    W = int(kind.split(":")[1])
    segments = [[] for _ in range(len(blocks) + W - 1)]
    for p, b in enumerate(positions):
        for c, chunk in enumerate(np.array_split(rng.permutation(blocks[b]), W)):
            segments[p + c].append(chunk)
    return np.concatenate([rng.permutation(np.concatenate(s)) for s in segments if s])


def epochs_to_gap(X, y, loss_name, lam, kind, blocks, tol, cap):
    """Epochs of serial SDCA from zero until the relative gap is at most ``tol`` (``>cap`` if never)."""
    n, d = X.shape
    loss = get_loss(loss_name)
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    alpha, w, unused = np.zeros(n), np.zeros(d), np.zeros(0)
    gap = np.inf
    for epoch in range(1, cap + 1):
        order = block_order(kind, blocks, np.random.default_rng((0, epoch))).astype(np.int64)
        local_sdca(X.indptr, X.indices, X.data, y, unused, sqnorm, alpha, w, unused, order, int(loss.kind),
                   loss.param, lam * n, 1.0, False)
        w_alpha = X.T @ alpha / (lam * n)
        reg = 0.5 * lam * float(w_alpha @ w_alpha)
        primal = float(loss.value(y, X @ w_alpha).mean()) + reg
        dual = -float(loss.conjugate(y, alpha).mean()) - reg
        gap = (primal - dual) / abs(primal)
        if gap <= tol:
            return str(epoch)
    return f">{cap} ({gap:.1e})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=20_000)
    parser.add_argument("--nnz", type=float, default=20.0)
    parser.add_argument("--block-rows", type=int, default=16_384)
    parser.add_argument("--problems", default="logistic:1e-6,squared_hinge:1e-5,hinge:1e-5")
    parser.add_argument("--orders", default="whole,blocks,window:2,window:4,window:8")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--cap", type=int, default=40)
    parser.add_argument("--work-dir", default="/tmp/daskdca-bench")
    args = parser.parse_args(argv)
    path = Path(args.work_dir) / f"visit-{args.rows}x{args.features}-{args.nnz:g}-{args.block_rows}.zarr"
    source = (store.open_store(str(path)) if path.exists() else
              datasets.make_classification(str(path), args.rows, args.features, nnz_per_row=args.nnz, seed=0,
                                           block_rows=args.block_rows))
    X, y = source.read_all()
    X, y = X.tocsr(), np.where(np.asarray(y) > 0, 1.0, -1.0)
    starts = list(range(0, X.shape[0], args.block_rows)) + [X.shape[0]]
    blocks = [np.arange(lo, hi) for lo, hi in zip(starts[:-1], starts[1:])]
    orders = args.orders.split(",")
    print(f"{X.shape[0]:,} x {X.shape[1]:,}, {X.nnz:,} stored values, {len(blocks)} blocks of {args.block_rows} rows; "
          f"epochs of serial SDCA to a certified {args.tol:g}\n")
    print("| loss | lam | lam n | " + " | ".join(orders) + " |")
    print("|---|---|---|" + "---|" * len(orders))
    for problem in args.problems.split(","):
        loss_name, lam = problem.split(":")
        lam = float(lam)
        cells = []
        for kind in orders:
            started = time.perf_counter()
            cells.append(epochs_to_gap(X, y, loss_name, lam, kind, blocks, args.tol, args.cap))
            print(f"  {loss_name} {lam:g} {kind}: {cells[-1]} ({time.perf_counter() - started:.0f} s)", flush=True)
        print(f"| {loss_name} | {lam:g} | {lam * X.shape[0]:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
