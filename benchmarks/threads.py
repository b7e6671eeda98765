"""Threads inside a partition (``SDCA(threads=T, inner_rounds=m)``, hierarchical CoCoA+) against one thread.

In memory by default (with ``--worker-threads N``, in rounds of one
partition on one worker of ``N`` threads).  For each data set and ``lam``
(logistic), the time and the epochs to a
certified relative gap of ``1e-4`` of serial SDCA (``T = 1``) and of ``T = 2``
threads with ``m = 1, 2, 4`` inner rounds per round (the sub-blocks' safe
``sigma' = T``, Dünner et al. 2018 §3 on Ma et al. 2015 §3), plain and inside
Catalyst's loop (``acceleration="catalyst"``, whose ``kappa`` counts the ``T``
parts), and with ``inner_aggregation="line_search"`` at ``m = 4, 8, 16``
(the sub-blocks step with serial SDCA's curvature and each inner round takes
the best step along their sum).  ``s/epoch`` is the fit's time over its
epochs (setup and certificates included); the ratio is the time over serial
SDCA's (the median of ``--reps`` runs of each).  The threads pay when ``T``
times the speed of an epoch outweighs the epochs that the aggregation adds.

Run: ``python benchmarks/threads.py [--data a9a,generated,store,url10,w8a]
[--configs "LABEL;..."] [--reps 3] [--lams 1e-5 1e-6] [--work-dir DIR] [--worker-threads 2]
[--max-epochs 300]`` (every kernel compiled before the clock).  Results: benchmarks/RESULTS.md, "Threads inside a partition"
and "Threads with a line search".  The machine's cores
(``os.sched_getaffinity``) and load are printed with the table: on a machine
shared with other jobs the threads compete for the same cores, so say so
beside the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.methods import SDCA, CoCoAPlus

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

TOL = 1e-4
CONFIGS = [("T=1", SDCA()),
           ("T=2, m=1", SDCA(threads=2, inner_rounds=1)),
           ("T=2, m=2", SDCA(threads=2, inner_rounds=2)),
           ("T=2, m=4", SDCA(threads=2, inner_rounds=4)),
           ("T=1, catalyst", SDCA(acceleration="catalyst")),
           ("T=2, m=4, catalyst", SDCA(threads=2, inner_rounds=4, acceleration="catalyst"))]
CONFIGS += [(f"T=2, m={m}, line search", SDCA(threads=2, inner_rounds=m, inner_aggregation="line_search"))
            for m in (4, 8, 16)]


def data_sets(names, work_dir):
    """``generated``, ``store`` and ``url10`` as aggregation_search.py makes them (uniform and Zipf-popular
    features), or a suite data set by name."""
    from aggregation_search import data_sets as generated_sets
    from conftest import load_dataset

    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            if name in ("generated", "store", "url10"):
                for label, X, y in generated_sets([name], folder, work_dir):
                    yield (label if "nnz" in label else f"{label}, {X.nnz / 1e6:.1f} M nnz"), X, y
            else:
                X, y = load_dataset(name)
                yield (f"{name} ({X.shape[0]:,} x {X.shape[1]:,}, {X.nnz / 1e6:.2f} M nnz)", X,
                       np.where(y > 0, 1.0, -1.0))


def run(X, y, solver, lam, max_epochs, client=None):
    """Seconds and model of one fit, in this process, or with ``client`` in rounds of one partition on its one
    worker (``CoCoAPlus`` with the same settings: an explicit ``SDCA`` runs in process only)."""
    where = {}
    if client is not None:
        solver = CoCoAPlus(**{field.name: getattr(solver, field.name) for field in dataclasses.fields(CoCoAPlus)})
        where = {"client": client, "n_partitions": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=TOL, max_rounds=max_epochs,
                        random_state=0, **where)
        return time.perf_counter() - t, m


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-epochs", type=int, default=300)
    parser.add_argument("--lams", type=float, nargs="+", default=[1e-5, 1e-6])
    parser.add_argument("--data", default="a9a,generated", help="comma-separated: generated or suite data names")
    parser.add_argument("--configs", default=None,
                        help="semicolon-separated labels of the local steps to run (T=1, the baseline, always runs); default: all")
    parser.add_argument("--reps", type=int, default=1, help="runs of each fit; the table has the median time")
    parser.add_argument("--work-dir", default=None, help="where url10 is written once (default: a temporary folder)")
    parser.add_argument("--worker-threads", type=int, default=None,
                        help="run every fit in rounds of one partition on one worker of a LocalCluster with this "
                             "many threads instead of in this process")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        client = None
        if args.worker_threads is not None:
            from distributed import Client, LocalCluster

            client = stack.enter_context(Client(stack.enter_context(LocalCluster(
                n_workers=1, threads_per_worker=args.worker_threads, processes=True, dashboard_address=None,
                silence_logs=40))))
        tables(args, client)


def tables(args, client):
    configs = CONFIGS if args.configs is None else [CONFIGS[0]] + [
        (label, solver) for label, solver in CONFIGS[1:] if label in args.configs.split(";")]
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; load average before: {os.getloadavg()}")
    for name, X, y in data_sets(args.data.split(","), args.work_dir):
        sample = np.random.default_rng(0).choice(X.shape[0], 2_000, replace=False)  # both classes
        for _, solver in configs:  # compile before the clock
            run(X[sample], y[sample], solver, 1e-2, 2, client)
        for lam in args.lams:
            where = ("in this process" if client is None
                     else f"one partition's rounds on one worker of {args.worker_threads} threads")
            print(f"\n### {name}, logistic, lam {lam:g}, certified relative gap {TOL:g}, {where}\n")
            print("| local step | seconds | epochs | s/epoch | time / T=1 | epochs / T=1 | converged |")
            print("|---|---:|---:|---:|---:|---:|---|")
            base = None
            for label, solver in configs:
                runs = [run(X, y, solver, lam, args.max_epochs, client) for _ in range(args.reps)]
                seconds, m = float(np.median([t for t, _ in runs])), runs[0][1]
                if base is None:
                    base = (seconds, m.n_epochs_)
                print(f"| {label} | {seconds:.2f} | {m.n_epochs_:g} | {seconds / m.n_epochs_:.4f} | "
                      f"{seconds / base[0]:.2f} | {m.n_epochs_ / base[1]:.2f} | "
                      f"{'yes' if m.converged_ else f'no (gap {m.gap_ / m.primal_:.1e})'} |", flush=True)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
