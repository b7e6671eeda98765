"""Serial SDCA's sweep split over the fit's threads, against serial SDCA on the same threads: where it pays.

``solver="auto"`` splits serial SDCA's sweep over ``T`` threads
(``SDCA(threads=T, inner_rounds=THREADED_SWEEP_INNER_ROUNDS,
inner_aggregation="line_search")``) on at least ``THREADED_SWEEP_MIN_NNZ``
stored values whose feature overlap (:func:`daskdca.problem.feature_overlap`)
is at most ``THREADED_SWEEP_MAX_OVERLAP`` (:mod:`daskdca.routes`).  This
measures the two inputs of that rule on generated sets of ``r`` values a row
drawn uniformly from ``d`` features (``benchmarks/round_overhead.py``'s
``make``), whose overlap is about ``r / d``: for each shape and ``lam``
(``--loss``, logistic by default, to a certified ``--tol``), the median
seconds and the epochs of serial SDCA (``SDCA()``, its gap sums on a second
thread) and of the split sweep, both with ``n_jobs=T``, alternated in one
process after a warm-up.  A
shape ``NxDxR+ones`` adds a feature of value 1 in every row (an intercept's),
and ``--catalyst`` runs both inside Catalyst (``acceleration="catalyst"``).
With ``--partitions K`` the two are CoCoA+ rounds over ``K`` partitions
(``CoCoAPlus()``, the rounds route's default, against the same with the
split), in this process with ``n_jobs=1``: the partitions step one after
another and each split step on its ``T`` threads, as ``K`` workers of ``T``
threads would step each (the bits are the cluster's; a round's time is not).

Run: ``python benchmarks/split_sweep.py [--shapes 250000x100000x20,...] [--lams 1e-5,1e-6] [--threads 2]
[--reps 3] [--tol 1e-4] [--loss logistic] [--catalyst] [--partitions K]``.  Results: benchmarks/RESULTS.md,
"Serial SDCA's sweep on the fit's threads".  The cores and the load average are printed with the table: on a
machine shared with other jobs the threads compete for the same cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.methods import SDCA, CoCoAPlus
from daskdca.problem import column_nnz, feature_overlap
from daskdca.routes import THREADED_SWEEP_INNER_ROUNDS

sys.path.insert(0, str(Path(__file__).resolve().parent))


def data_set(shape):
    """``(X, y)`` for ``NxDxR`` (``+ones``: with a column of ones)."""
    from round_overhead import make

    dims, _, ones = shape.partition("+")
    n, d, r = (int(float(v)) for v in dims.split("x"))
    X, y = make(n, d, r)
    if ones:
        X = sp.hstack([X, np.ones((n, 1))], format="csr")
    return X, y


def run(X, y, loss, solver, lam, tol, n_jobs, partitions):
    """Seconds and epochs (rounds on several partitions) of one fit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        model = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=tol, max_epochs=500, random_state=0,
                            n_jobs=n_jobs, n_partitions=partitions)
        return time.perf_counter() - t, model.n_epochs_


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="250000x100000x20")
    parser.add_argument("--lams", default="1e-5,1e-6")
    parser.add_argument("--threads", default="2", help="comma-separated T")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--loss", default="logistic")
    parser.add_argument("--catalyst", action="store_true", help="both inside Catalyst")
    parser.add_argument("--partitions", type=int, default=1, help="K > 1: CoCoA+ rounds over K partitions")
    args = parser.parse_args()
    K = args.partitions
    acceleration = "catalyst" if args.catalyst else None if K == 1 else "auto"
    method = SDCA if K == 1 else CoCoAPlus
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; load average before: {os.getloadavg()}")
    print(f"to a certified {args.tol:g}, {args.loss}{', inside Catalyst' if args.catalyst else ''}; seconds (epochs)")
    if K == 1:
        print("| data | overlap | M nnz | lam | T | serial SDCA, n_jobs=T | split sweep, n_jobs=T | ratio |")
    else:
        print(f"| data | overlap | M nnz | lam | T | CoCoA+ on {K} partitions, n_jobs=1 | split, n_jobs=1 | ratio |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for shape in args.shapes.split(","):
        X, y = data_set(shape)
        overlap = feature_overlap(column_nnz(X), X.shape[0])
        for lam in (float(v) for v in args.lams.split(",")):
            for threads in (int(v) for v in args.threads.split(",")):
                solvers = {"serial": method(acceleration=acceleration),
                           "split": method(threads=threads, inner_rounds=THREADED_SWEEP_INNER_ROUNDS,
                                           inner_aggregation="line_search", acceleration=acceleration)}
                n_jobs = threads if K == 1 else 1
                for solver in solvers.values():
                    run(X, y, args.loss, solver, lam, args.tol, n_jobs, K)  # warm-up: kernels compiled, pages touched
                seconds = {name: [] for name in solvers}
                epochs = {}
                for _ in range(args.reps):
                    for name, solver in solvers.items():
                        s, epochs[name] = run(X, y, args.loss, solver, lam, args.tol, n_jobs, K)
                        seconds[name].append(s)
                one, split = np.median(seconds["serial"]), np.median(seconds["split"])
                print(f"| {shape} | {overlap:.2g} | {X.nnz / 1e6:.2f} | {lam:g} | {threads} | {one:.3f} "
                      f"({epochs['serial']:g}) | {split:.3f} ({epochs['split']:g}) | {split / one:.2f} |", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
