"""Fits with the process's BLAS on its own threads against one BLAS thread while the rounds run.

``daskdca.driver.run_rounds`` runs with one BLAS thread (``daskdca.driver.one_blas_thread``): NumPy's
OpenBLAS splits a dot product of more than about 10,000 values over its threads, which then spin for a while
on the cores the library's own threads need (serial SDCA's gap sums on a second core, ``CoCoAPlus(threads=T)``'s
sub-blocks, and on a LocalCluster the workers' processes).  This runs the same fits both ways in one process,
alternated: "BLAS threads" replaces ``one_blas_thread`` by a context that changes nothing (the library before
this change); "one BLAS thread" is the library as it is.  Every fit is logistic, ``random_state=0``, to a
certified relative gap of ``1e-4``; cells are the median seconds of ``--reps`` runs and the ratio is one
BLAS thread over BLAS threads.

    python benchmarks/blas_threads.py [--reps 3] [--cases serial,threads,cluster]

Results: benchmarks/RESULTS.md, "One BLAS thread while the rounds run".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import daskdca
import daskdca.driver
from daskdca.methods import SDCA

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from round_overhead import make  # noqa: E402

ONE_BLAS_THREAD = daskdca.driver.one_blas_thread


def fit_seconds(X, y, lam, solver, client, blas_threads):
    """Seconds of one fit; ``blas_threads``: run the rounds with the BLAS as the process has it."""
    daskdca.driver.one_blas_thread = contextlib.nullcontext if blas_threads else ONE_BLAS_THREAD
    kwargs = {} if client is None else {"client": client, "n_partitions": 2}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            started = time.perf_counter()
            model = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=1e-4, random_state=0, **kwargs)
            return time.perf_counter() - started, model
    finally:
        daskdca.driver.one_blas_thread = ONE_BLAS_THREAD


def cases(names, client):
    from conftest import load_dataset

    X, y = make(250_000, 100_000, 20)
    a9a, labels = load_dataset("a9a")
    generated = "generated 250,000 x 100,000, 5 M nnz"
    if "serial" in names:
        for lam in (1e-5, 1e-6):
            yield f"{generated}, serial SDCA, lam {lam:g}", X, y, lam, "sdca", None
        yield "a9a, serial SDCA inside Catalyst, lam 1e-6", a9a, labels, 1e-6, SDCA(acceleration="catalyst"), None
    if "threads" in names:
        solver = SDCA(threads=2, inner_rounds=8, inner_aggregation="line_search")
        for lam in (1e-5, 1e-6):
            yield f"{generated}, SDCA(threads=2, inner_rounds=8, line search), lam {lam:g}", X, y, lam, solver, None
    if "cluster" in names:
        for lam in (1e-5, 1e-6):
            yield (f"{generated}, CoCoA+ in Catalyst (the default), resident rounds on a 2-worker 1-thread "
                   f"LocalCluster, lam {lam:g}", X, y, lam, "cocoa+", client)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cases", default="serial,threads,cluster")
    args = parser.parse_args()
    names = args.cases.split(",")
    from threadpoolctl import threadpool_info

    blas = [(lib["internal_api"], lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; BLAS libraries (threads): {blas}; "
          f"load average before: {os.getloadavg()}")
    with contextlib.ExitStack() as stack:
        client = None
        if "cluster" in names:
            from distributed import Client, LocalCluster

            cluster = stack.enter_context(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                       dashboard_address=None, silence_logs=40))
            client = stack.enter_context(Client(cluster))
        print("\n| fit | BLAS threads s | one BLAS thread s | ratio | epochs (rounds) |")
        print("|---|---:|---:|---:|---|")
        for label, X, y, lam, solver, on in cases(names, client):
            fit_seconds(X[:2000], y[:2000], 1e-3, solver, on, False)  # compile (and warm the workers) first
            times = {True: [], False: []}
            for _ in range(args.reps):
                for blas_threads in (True, False):
                    seconds, model = fit_seconds(X, y, lam, solver, on, blas_threads)
                    times[blas_threads].append(seconds)
            before, after = float(np.median(times[True])), float(np.median(times[False]))
            print(f"| {label} | {before:.2f} | {after:.2f} | {after / before:.2f} | "
                  f"{model.n_epochs_:g} ({model.n_rounds_}) |", flush=True)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
