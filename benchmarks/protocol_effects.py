"""What the method protocol changed, measured.

1. Rows sorted by label: CoCoA+ rounds to a certified relative gap of 1e-4
   with contiguous partitions (the old default) and with the seeded random
   partitions `daskdca.fit` now uses, on sorted and on shuffled rows.
2. Distributed mini-batch SDCA on a 2-worker LocalCluster: epochs of steps
   per second with the gap evaluated every round (the old engine) and once
   per epoch (the new default, ``eval_every=None``).

    python benchmarks/protocol_effects.py [--quick]

Prints a Markdown table for ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

import daskdca
from daskdca.driver import InProcess, run_rounds
from daskdca.losses import get_loss
from daskdca.methods.base import DataInfo
from daskdca.partitions import MemoryPartition, even_sizes, rows_from_csr
from daskdca.problem import max_column_nnz


def sorted_problem(n, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    order = np.argsort(y, kind="stable")
    return sp.csr_matrix(X[order]), y[order]


def contiguous_rounds(X, y, K, lam, tol, max_rounds):
    """CoCoA+ on contiguous row partitions (what daskdca did before random partitions)."""
    offsets = np.concatenate(([0], np.cumsum(even_sizes(X.shape[0], K))))
    parts = [MemoryPartition(rows_from_csr(X[a:b], y[a:b]), np.array([0, b - a]))
             for a, b in zip(offsets[:-1], offsets[1:])]
    info = DataInfo(X.shape[0], X.shape[1], tuple(p.n_rows for p in parts), get_loss("logistic"), lam,
                    max_column_nnz(X))
    executor = InProcess(parts, info, 0)
    t = time.perf_counter()
    result = run_rounds(executor, executor.setup(daskdca.CoCoAPlus()), tol=tol, max_rounds=max_rounds)
    return result.n_rounds, result.converged, time.perf_counter() - t


def random_rounds(X, y, K, lam, tol, max_rounds):
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="cocoa+", n_partitions=K, tol=tol,
                        max_rounds=max_rounds)
    return m.n_rounds_, m.converged_, time.perf_counter() - t


def sorted_table(n, max_rounds):
    X, y = sorted_problem(n)
    shuffle = np.random.default_rng(1).permutation(n)
    lam, tol = 1e-4, 1e-4
    lines = ["| partitions | rows | K | rounds to 1e-4 | converged | seconds |", "|---|---|---|---|---|---|"]
    for K in (2, 4):
        for label, (Xa, ya) in (("sorted", (X, y)), ("shuffled", (X[shuffle], y[shuffle]))):
            for kind, fn in (("contiguous (old)", contiguous_rounds), ("random (new)", random_rounds)):
                rounds, ok, sec = fn(Xa, ya, K, lam, tol, max_rounds)
                lines.append(f"| {kind} | {label} | {K} | {rounds} | {ok} | {sec:.2f} |")
    return "\n".join(lines)


def minibatch_table(n, rounds):
    from distributed import Client, LocalCluster

    from daskdca.store import write_store

    X, y = sorted_problem(n, d=50, seed=2)
    shuffle = np.random.default_rng(3).permutation(n)
    lines = ["| eval_every | rounds | epochs | seconds | epochs/s |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=40) as cluster, \
            Client(cluster) as client:
        store = write_store(f"{tmp}/mb.zarr", X[shuffle], y[shuffle], block_rows=-(-n // 2), shuffle=False)
        for eval_every in (1, None):
            solver = daskdca.MinibatchSDCA(batch_size=256, eval_every=eval_every)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                daskdca.fit(store, loss="logistic", lam=1e-4, solver=solver, tol=0.0, max_rounds=5,
                            client=client)  # warm-up
                t = time.perf_counter()
                m = daskdca.fit(store, loss="logistic", lam=1e-4, solver=solver, tol=0.0, max_rounds=rounds,
                                client=client)
                sec = time.perf_counter() - t
            label = "1 (old engine)" if eval_every == 1 else f"None = {m.plan_.eval_every} (new default)"
            lines.append(f"| {label} | {m.n_rounds_} | {m.n_epochs_:.2f} | {sec:.2f} | {m.n_epochs_ / sec:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller problems (about 1 minute)")
    args = parser.parse_args(argv)
    n = 20_000 if args.quick else 100_000
    print("### CoCoA+ on rows sorted by label (logistic, lam 1e-4, d = 20, n = %d, in process)\n" % n)
    print(sorted_table(n, max_rounds=1000 if args.quick else 3000))
    m = 20_000 if args.quick else 100_000
    print("\n### Distributed mini-batch SDCA, 2-worker LocalCluster (logistic, b = 256, n = %d, d = 50)\n" % m)
    print(minibatch_table(m, rounds=200 if args.quick else 800))


if __name__ == "__main__":
    main()
