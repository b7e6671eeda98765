"""CoCoA+ rounds against the local passes a round makes (``local_iters = H``), in process and on 2 workers.

A round's communication is a smaller share of it when each partition makes
more passes over its rows per round; that pays only if the rounds to the
target fall about as fast as a round's work grows.  For each data set this
fits ``CoCoAPlus(local_iters=H)`` (inside Catalyst, the default) on 2
partitions, logistic, to a certified relative gap ``--tol``, in process and
on a 2-worker 1-thread LocalCluster (the same bits: the same rounds), for
``H`` in ``--passes``.

Run: ``python benchmarks/local_passes.py [--data a9a,ijcnn1] [--passes 1,2,4,8] [--lam 1e-5] [--tol 1e-6]``
(one process, the cluster started and the kernels compiled before the clock).  Results: benchmarks/RESULTS.md,
"CoCoA+ rounds against the local passes per round".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

import daskdca

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from conftest import load_dataset  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="a9a,ijcnn1")
    parser.add_argument("--passes", default="1,2,4,8")
    parser.add_argument("--lam", type=float, default=1e-5)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-rounds", type=int, default=1500)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    from daskdca.engine.clients import _worker_environ

    warnings.simplefilter("ignore", ConvergenceWarning)
    with _worker_environ():
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40)
    with cluster, Client(cluster) as client:
        print(f"logistic, lam {args.lam:g}, to a certified {args.tol:g}, 2 partitions, CoCoA+ inside Catalyst\n")
        print("| data | H (local passes a round) | rounds | passes | in process s | 2 workers s | converged |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for name in args.data.split(","):
            X, y = load_dataset(name)
            for H in [int(h) for h in args.passes.split(",")]:
                kwargs = dict(loss="logistic", lam=args.lam, solver=daskdca.CoCoAPlus(local_iters=H),
                              n_partitions=2, tol=args.tol, random_state=0, max_rounds=args.max_rounds)
                daskdca.fit(X[:500], y[:500], client=client, **kwargs)  # compile on the workers
                t = time.perf_counter()
                here = daskdca.fit(X, y, **kwargs)
                t_here = time.perf_counter() - t
                t = time.perf_counter()
                there = daskdca.fit(X, y, client=client, **kwargs)
                t_there = time.perf_counter() - t
                if there.n_rounds_ != here.n_rounds_:
                    raise RuntimeError(f"{name}, H={H}: {there.n_rounds_} rounds on the cluster, "
                                       f"{here.n_rounds_} in process")
                print(f"| {name} | {H} | {there.n_rounds_} | {there.n_epochs_:.0f} | {t_here:.2f} | {t_there:.2f} | "
                      f"{'yes' if there.converged_ else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
