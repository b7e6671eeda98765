"""The default call in memory with ``n_jobs=2`` against ``n_jobs=1``: what a fit's threads buy.

For each data set and ``lam`` (logistic, ``solver="auto"``, to a certified
relative gap of ``--tol``, the default ``1e-6``), the median seconds of ``--reps`` runs of
``daskdca.fit(X, y, loss="logistic", lam=lam, n_jobs=j)`` for ``j = 1`` and
``2``, alternated in one process after a warm-up, the route's method, and
the ratio.  Primal Newton and multinomial L-BFGS sum each pass in fixed row
chunks on the fit's threads; serial SDCA runs its gap sums beside its sweep
only with a second thread, and on large data whose features overlap little
its sweep is split over the threads ("split" beside the method).  All but
the split give the same bits for every ``n_jobs`` (checked here on every
row: ``coef_`` equal).  The multinomial row fits
``SDCAClassifier(loss="logistic", n_jobs=j)`` on generated 7-class data.
With ``--one-worker`` the two fits are the same default call with a client
of one worker of 1 and of 2 threads instead: the one-worker route, whose fit
takes its worker's threads.  Each timed fit gets a LocalCluster of its own,
started for it and warmed by one fit first, so that no other cluster's
processes and event loops run beside it (with both clusters up for the whole
run, the 2-thread fit, which takes both cores, paid for the idle one's).

Run: ``python benchmarks/n_jobs.py [--data a9a,ijcnn1,w8a,kdd,generated,multinomial] [--reps 3] [--tol 1e-6]
[--one-worker]``.
Results: benchmarks/RESULTS.md, "A fit's threads in memory (``n_jobs``)" and (``--one-worker``) "One worker's
threads, again".  The cores and the load average are printed with the table: on a machine shared with other jobs
the threads compete for the same cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import daskdca

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def data_sets(names):
    """``(label, X, y, lams, multinomial)`` for each name."""
    from conftest import load_dataset

    for name in names:
        if name in ("a9a", "ijcnn1", "w8a"):
            X, y = load_dataset(name)
            yield f"{name} ({X.shape[0]:,} x {X.shape[1]}, {X.nnz / 1e6:.2f} M nnz)", X, y, (1e-5, 1e-6), False
        elif name == "kdd":
            from routes import _kdd_like

            X, y = _kdd_like(1_000_000)
            yield f"KDD99-shaped (1,000,000 x 122, {X.nnz / 1e6:.1f} M nnz)", X, y, (1e-6, 1e-7), False
        elif name == "generated":
            from round_overhead import make

            X, y = make(250_000, 100_000, 20)
            yield "generated 250,000 x 100,000 (5 M nnz)", X, y, (1e-5, 1e-6), False
        elif name == "multinomial":
            from multiclass import make_data

            X, y = make_data(200_000, 100, 20, 7)
            yield f"generated 200,000 x 100, 7 classes ({X.nnz / 1e6:.1f} M nnz)", X, y, (1e-5, 1e-6), True
        else:
            raise SystemExit(f"unknown data set {name!r}")


def run(X, y, lam, n_jobs, multinomial, tol, one_worker=False):
    """Seconds, coef_ and the route's method of one default fit with ``n_jobs`` threads (with ``one_worker``:
    with a client of one worker of that many threads, the second fit on a LocalCluster started for the two)."""
    if one_worker:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=1, threads_per_worker=n_jobs, processes=True, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster) as client:
            fit(X, y, lam, {"client": client}, multinomial, tol)  # warm-up: the worker's kernels loaded
            return fit(X, y, lam, {"client": client}, multinomial, tol)
    return fit(X, y, lam, {"n_jobs": n_jobs}, multinomial, tol)


def fit(X, y, lam, where, multinomial, tol):
    """Seconds, coef_ and the route's method of one default fit with the keywords ``where``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        if multinomial:
            model = daskdca.SDCAClassifier(loss="logistic", C=1.0 / (lam * X.shape[0]), fit_intercept=False,
                                           tol=tol, **where).fit(X, y)
        else:
            model = daskdca.fit(X, y, loss="logistic", lam=lam, tol=tol, **where)
        split = " split" if model.route_.options.get("threads", 1) > 1 else ""
        return time.perf_counter() - t, model.coef_, model.route_.solver + split


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="a9a,ijcnn1,w8a,kdd,generated,multinomial")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tol", type=float, default=1e-6, help="the certified relative gap (the default's 1e-6)")
    parser.add_argument("--one-worker", action="store_true",
                        help="a client of one worker of 1 and of 2 threads instead of n_jobs=1 and 2")
    args = parser.parse_args()
    table(args)


def table(args):
    """The table's rows: ``n_jobs`` 1 and 2 (with ``--one-worker``: one worker of 1 and of 2 threads)."""
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; load average before: {os.getloadavg()}")
    what = "1 worker of {} thread(s)" if args.one_worker else "n_jobs={}"
    print(f"| data | lam | method | {what.format(1)} s | {what.format(2)} s | ratio | same bits |")
    print("|---|---|---|---:|---:|---:|---|")
    for label, X, y, lams, multinomial in data_sets(args.data.split(",")):
        for lam in lams:
            for n_jobs in (1, 2):
                run(X, y, lam, n_jobs, multinomial, args.tol)  # warm-up: kernels compiled, pages touched
            seconds = {1: [], 2: []}
            coefs, methods = {}, {}
            for _ in range(args.reps):
                for n_jobs in (1, 2):
                    s, coefs[n_jobs], methods[n_jobs] = run(X, y, lam, n_jobs, multinomial, args.tol,
                                                            args.one_worker)
                    seconds[n_jobs].append(s)
            one, two = np.median(seconds[1]), np.median(seconds[2])
            same = "yes" if np.array_equal(coefs[1], coefs[2]) else "no"
            method = methods[1] if methods[1] == methods[2] else f"{methods[1]} / {methods[2]}"
            print(f"| {label} | {lam:g} | {method} | {one:.3f} | {two:.3f} | {two / one:.2f} | {same} |", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
