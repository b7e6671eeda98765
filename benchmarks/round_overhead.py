"""What a CoCoA+ round costs on a 2-worker LocalCluster beyond its arithmetic: resident actors against task graphs.

Each case fits the same generated data with ``tol=0`` for ``R_SHORT`` and
``R_LONG`` rounds; the difference of the two wall times over
``R_LONG - R_SHORT`` is the time of a round without setup and certificate.
The same in process (2 partitions in turn, one thread) gives the arithmetic:
``ideal = in-process round / 2`` is a round whose two halves run at once with
no communication, and ``overhead = cluster round - ideal``.

The resident rounds are timed as they run by default (the actors called
straight on their workers) and with their calls through the scheduler (a
second client on the same cluster made with ``direct_to_workers=False``, how
every call went before).

Run: ``python benchmarks/round_overhead.py [--reps 3] [--plain] [--no-momentum] [--allocators]`` (one process,
the cluster started before the clock; medians of the repeats).  The cluster's workers run with the allocator
settings of the clusters daskdca starts (:data:`daskdca.engine.clients.WORKER_MALLOC_ENVIRON`); ``--allocators``
also times the resident rounds on a second cluster with Dask's own (``MALLOC_TRIM_THRESHOLD_=65536``).  Results:
benchmarks/RESULTS.md, "Engine: resident rounds", "The workers' allocator", "Engine: actor calls straight to the
workers" and "CoCoA+ rounds with a momentum search".
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings

import dask
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca

R_SHORT, R_LONG = 10, 110


def make(n, d, nnz_per_row, seed=0):
    rng = np.random.default_rng(seed)
    indptr = np.arange(0, (n + 1) * nnz_per_row, nnz_per_row)
    indices = np.sort(rng.integers(0, d, size=(n, nnz_per_row)), axis=1).ravel()
    X = sp.csr_matrix((rng.standard_normal(n * nnz_per_row), indices, indptr), shape=(n, d))
    X.sum_duplicates()
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def seconds_per_round(X, y, client, rounds, solver="cocoa+"):
    kwargs = dict(loss="logistic", lam=1e-4, solver=solver, n_partitions=2, tol=0.0, random_state=0)
    if client is not None:
        kwargs["client"] = client
    else:
        kwargs["n_jobs"] = 1  # the in-process row is one thread's round, halved for the ideal of 2 workers
    times = []
    for max_rounds in (R_SHORT, R_LONG):
        with warnings.catch_warnings(), dask.config.set({"daskdca.rounds": rounds}):
            warnings.simplefilter("ignore", ConvergenceWarning)
            t = time.perf_counter()
            daskdca.fit(X, y, max_rounds=max_rounds, **kwargs)
            times.append(time.perf_counter() - t)
    return (times[1] - times[0]) / (R_LONG - R_SHORT)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--plain", action="store_true",
                        help="plain CoCoA+ (acceleration=None) instead of the default, CoCoA+ inside Catalyst")
    parser.add_argument("--no-momentum", action="store_true",
                        help="CoCoA+ without its momentum search (momentum=False; the default searches each move)")
    parser.add_argument("--allocators", action="store_true",
                        help="also the resident rounds on workers with Dask's allocator setting")
    args = parser.parse_args()
    momentum = "auto" if not args.no_momentum else False
    solver = daskdca.CoCoAPlus(acceleration=None if args.plain else "auto", momentum=momentum)
    from distributed import Client, LocalCluster

    from daskdca.engine.clients import _worker_environ

    cases = [("d = 100, 2,000 rows x 5 nnz", make(2_000, 100, 5)),
             ("d = 100,000, 2,000 rows x 5 nnz", make(2_000, 100_000, 5)),
             ("d = 100,000, 250,000 rows x 20 nnz (5 M nnz)", make(250_000, 100_000, 20))]

    def cluster():
        return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                            silence_logs=40)

    with contextlib.ExitStack() as stack:
        with _worker_environ():
            client = stack.enter_context(Client(stack.enter_context(cluster())))
        scheduled = stack.enter_context(Client(client.scheduler.address, direct_to_workers=False,
                                               set_as_default=False))
        dask_client = None
        if args.allocators:
            # Dask's own setting, written out: the nannies above left daskdca's values in this process's environment
            with dask.config.set({f"distributed.nanny.pre-spawn-environ.{name}": value for name, value in
                                  (("MALLOC_TRIM_THRESHOLD_", "65536"), ("MALLOC_MMAP_THRESHOLD_", "131072"))}):
                dask_client = stack.enter_context(Client(stack.enter_context(cluster())))
        for name, (X, y) in cases:
            seconds_per_round(X[:200], y[:200], client, "resident", solver)  # compile on the workers before the clock
            if args.allocators:
                seconds_per_round(X[:200], y[:200], dask_client, "resident", solver)
            rows = {}
            for _ in range(args.reps):
                rows.setdefault("in process (2 partitions in turn)", []).append(
                    seconds_per_round(X, y, None, "resident", solver))
                rows.setdefault("resident", []).append(seconds_per_round(X, y, client, "resident", solver))
                rows.setdefault("resident, calls through the scheduler (before)", []).append(
                    seconds_per_round(X, y, scheduled, "resident", solver))
                rows.setdefault("tasks", []).append(seconds_per_round(X, y, client, "tasks", solver))
                if args.allocators:
                    rows.setdefault("resident, Dask's allocator", []).append(
                        seconds_per_round(X, y, dask_client, "resident", solver))
            inproc = float(np.median(rows.pop("in process (2 partitions in turn)")))
            ideal = inproc / 2
            method = ("plain CoCoA+" if args.plain else "CoCoA+") + (" without momentum" if args.no_momentum else "")
            print(f"\n### {name}, logistic, lam 1e-4, 2 partitions, {method}\n")
            print("| rounds | ms a round | ideal ms (in process / 2) | overhead ms | overhead share of the round |")
            print("|---|---:|---:|---:|---:|")
            print(f"| in process, one thread | {1e3 * inproc:.1f} | - | - | - |")
            for rounds, values in rows.items():
                per = float(np.median(values))
                print(f"| 2 workers, {rounds} | {1e3 * per:.1f} | {1e3 * ideal:.1f} | {1e3 * (per - ideal):.1f} | "
                      f"{(per - ideal) / per:.0%} |")


if __name__ == "__main__":
    main()
