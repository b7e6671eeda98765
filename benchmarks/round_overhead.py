"""What a CoCoA+ round costs on a 2-worker LocalCluster beyond its arithmetic: resident actors against task graphs.

Each case fits the same generated data with ``tol=0`` for at most ``R_SHORT``
and ``R_LONG`` rounds; the difference of the two wall times over the
difference of the rounds the two fits ran is the time of a round without
setup and certificate.  The rounds counted are the fits' own (``n_rounds_``):
a fit whose gap reaches zero in rounding (``P - D <= 0``, which meets
``tol=0``) stops before ``R_LONG``, as the 5 M-value case does after 19
rounds inside Catalyst, and the table prints the rounds of each row.
The same in process (2 partitions in turn, one thread) gives the arithmetic:
``ideal = in-process round / 2`` is a round whose two halves run at once with
no communication, and ``overhead = cluster round - ideal``.  Two cores
stepping at once do not each run as fast as one alone (they share the
memory bus and the last-level cache), so the table also gives the round in
process on two threads (``n_jobs=2``: the two partitions step at once, with
the same bits and no communication), and the overhead against it.

The resident rounds are timed as they run by default (the actors called
straight on their workers) and with their calls through the scheduler (a
second client on the same cluster made with ``direct_to_workers=False``, how
every call went before).

Run: ``python benchmarks/round_overhead.py [--reps 3] [--plain] [--no-momentum] [--allocators]`` (one process,
the cluster started before the clock; medians of the repeats).  The cluster's workers run with the allocator
settings of the clusters daskdca starts (:data:`daskdca.engine.clients.WORKER_MALLOC_ENVIRON`); ``--allocators``
also times the resident rounds on a second cluster with Dask's own (``MALLOC_TRIM_THRESHOLD_=65536``).  Results:
benchmarks/RESULTS.md, "Engine: resident rounds", "The workers' allocator", "Engine: actor calls straight to the
workers", "CoCoA+ rounds with a momentum search" and "Round overhead: the rounds the fits ran" (which corrects the
5 M-value case's times in the others).
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


def seconds_per_round(X, y, client, rounds, solver="cocoa+", n_jobs=1):
    """``(seconds a round, rounds the longer fit ran)`` on ``client``, or in process on ``n_jobs`` threads."""
    kwargs = dict(loss="logistic", lam=1e-4, solver=solver, n_partitions=2, tol=0.0, random_state=0)
    if client is not None:
        kwargs["client"] = client
    else:
        kwargs["n_jobs"] = n_jobs
    times, ran = [], []
    for max_rounds in (R_SHORT, R_LONG):
        with warnings.catch_warnings(), dask.config.set({"daskdca.rounds": rounds}):
            warnings.simplefilter("ignore", ConvergenceWarning)
            t = time.perf_counter()
            model = daskdca.fit(X, y, max_rounds=max_rounds, **kwargs)
            times.append(time.perf_counter() - t)
            ran.append(model.n_rounds_)
    if ran[1] <= ran[0]:
        raise SystemExit(f"the longer fit ran {ran[1]} rounds, the shorter {ran[0]}: no round to time")
    return (times[1] - times[0]) / (ran[1] - ran[0]), ran[1]


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
                rows.setdefault("in process, two threads", []).append(
                    seconds_per_round(X, y, None, "resident", solver, n_jobs=2))
                rows.setdefault("resident", []).append(seconds_per_round(X, y, client, "resident", solver))
                rows.setdefault("resident, calls through the scheduler (before)", []).append(
                    seconds_per_round(X, y, scheduled, "resident", solver))
                rows.setdefault("tasks", []).append(seconds_per_round(X, y, client, "tasks", solver))
                if args.allocators:
                    rows.setdefault("resident, Dask's allocator", []).append(
                        seconds_per_round(X, y, dask_client, "resident", solver))
            inproc_runs = rows.pop("in process (2 partitions in turn)")
            inproc = float(np.median([seconds for seconds, _ in inproc_runs]))
            ideal = inproc / 2
            two_runs = rows.pop("in process, two threads")
            two = float(np.median([seconds for seconds, _ in two_runs]))
            method = ("plain CoCoA+" if args.plain else "CoCoA+") + (" without momentum" if args.no_momentum else "")
            print(f"\n### {name}, logistic, lam 1e-4, 2 partitions, {method}\n")
            print("| rounds | fits' rounds | ms a round | ideal ms (in process / 2) | overhead ms | overhead share "
                  "of the round | overhead against two threads in process, ms (share) |")
            print("|---|---|---:|---:|---:|---:|---:|")
            print(f"| in process, one thread | {ran_text(inproc_runs)} | {1e3 * inproc:.1f} | - | - | - | - |")
            print(f"| in process, two threads | {ran_text(two_runs)} | {1e3 * two:.1f} | {1e3 * ideal:.1f} | "
                  f"{1e3 * (two - ideal):.1f} | {(two - ideal) / two:.0%} | - |")
            for rounds, runs in rows.items():
                per = float(np.median([seconds for seconds, _ in runs]))
                print(f"| 2 workers, {rounds} | {ran_text(runs)} | {1e3 * per:.1f} | {1e3 * ideal:.1f} | "
                      f"{1e3 * (per - ideal):.1f} | {(per - ideal) / per:.0%} | {1e3 * (per - two):.1f} "
                      f"({(per - two) / per:.0%}) |")


def ran_text(runs):
    """The rounds the longer fits ran (``R_SHORT`` to that), one value or the range over the repeats."""
    ran = sorted({rounds for _, rounds in runs})
    return f"{R_SHORT}-{ran[0]}" if len(ran) == 1 else f"{R_SHORT}-({ran[0]}..{ran[-1]})"


if __name__ == "__main__":
    main()
