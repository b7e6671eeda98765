"""CoCoA+ rounds with and without the momentum search, on 2 workers and as serial SDCA: rounds and seconds.

``CoCoAPlus(momentum=True)`` moves each round by ``a Delta alpha + b M``
(the round's summed local steps and the last move, ``(a, b)`` the candidate
of ``daskdca.methods.sdca.MOMENTUM_STEPS`` with the highest dual), where
``CoCoAPlus()`` moves by ``Delta alpha``.  Each cell fits the same data to a
certified relative gap ``--tols``, ``--loss`` (logistic): CoCoA+ (inside Catalyst, the
default on 2 partitions) with a 2-worker 1-thread LocalCluster, and serial
SDCA (one partition) in this process, each with and without the search,
alternated, the median of ``--reps`` runs.

Run: ``python benchmarks/momentum_rounds.py [--data a9a,w8a,ijcnn1,gen5m] [--lams 1e-5,1e-6] [--tols 1e-4,1e-6]
[--reps 1] [--loss logistic]`` (one process; the cluster started and the kernels compiled before the clock).  ``gen5m`` is
round_overhead.py's generated 250,000 x 100,000 set of 5 M values.

``--grids "1,0 1,1 2,0 2,1; 1,0 1,1 2,1"`` instead counts the rounds of CoCoA+ with the momentum search on
``--partitions`` (2) partitions in this process (the cluster's bits) for each set of candidates ``(a, b)``, put
in place of ``MOMENTUM_STEPS`` for the run (``"1,0"`` alone is CoCoA+ without it); ``--data`` may name
catalyst_rounds.py's URL-shaped ``url10`` and ``url``.  Results: benchmarks/RESULTS.md, "CoCoA+ rounds with a momentum search".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

import daskdca

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import load_dataset  # noqa: E402


def load(name, work_dir):
    if name == "gen5m":
        from round_overhead import make

        return make(250_000, 100_000, 20)
    if name in ("url10", "url"):  # catalyst_rounds.py's URL-shaped sets, written once to work_dir
        from catalyst_rounds import load_data_set

        return load_data_set(name, None, work_dir)
    return load_dataset(name)


def cases(args):
    """``(name, X, y, lam, tol)`` for every data set, ``lam`` and ``tol`` asked for, each set loaded once."""
    for name in args.data.split(","):
        X, y = load(name, args.work_dir)
        for lam in map(float, args.lams.split(",")):
            for tol in map(float, args.tols.split(",")):
                yield name, X, y, lam, tol


def timed(X, y, reps, **kwargs):
    """``(model, median seconds)`` of ``reps`` fits with the same arguments."""
    seconds = []
    for _ in range(reps):
        started = time.perf_counter()
        model = daskdca.fit(X, y, **kwargs)
        seconds.append(time.perf_counter() - started)
    return model, statistics.median(seconds)


def cell(model, seconds):
    return f"{model.n_rounds_}{'' if model.converged_ else ' (not converged)'} / {seconds:.2f} s"


def grid_rounds(args):
    """Rounds in process on ``--partitions`` partitions for each set of candidates of ``--grids``."""
    import daskdca.methods.sdca as sdca

    grids = [tuple(tuple(float(v) for v in pair.split(",")) for pair in grid.split()) for grid in args.grids.split(";")]
    print("| data | lam | tol | K | candidates (a, b) | rounds |")
    print("|---|---|---|---:|---|---:|")
    for name, X, y, lam, tol in cases(args):
        for K in map(int, args.partitions.split(",")):
            for grid in grids:
                sdca.MOMENTUM_STEPS = grid
                started = time.perf_counter()
                m = daskdca.fit(X, y, loss=args.loss, lam=lam, tol=tol, random_state=0, max_rounds=args.max_rounds,
                                solver=daskdca.CoCoAPlus(momentum=True), n_partitions=K,
                                callback=lambda record, state: time.perf_counter() - started > args.max_seconds)
                label = " ".join(f"({a:g}, {b:g})" for a, b in grid)
                rounds = f"{m.n_rounds_}" if m.converged_ else f">{m.n_rounds_}"
                print(f"| {name} | {lam:g} | {tol:g} | {K} | {label} | {rounds} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="a9a,w8a,ijcnn1,gen5m")
    parser.add_argument("--lams", default="1e-5,1e-6")
    parser.add_argument("--tols", default="1e-4,1e-6")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--max-rounds", type=int, default=2000)
    parser.add_argument("--grids", default=None)
    parser.add_argument("--partitions", default="2", help="with --grids: the K partitions of each count")
    parser.add_argument("--max-seconds", type=float, default=float("inf"),
                        help="with --grids: a fit stops after this long (its cell prints '>N', the rounds run)")
    parser.add_argument("--work-dir", default="/tmp/daskdca-bench", help="where url10 and url are written once")
    parser.add_argument("--loss", default="logistic")
    args = parser.parse_args()
    if args.grids:
        return grid_rounds(args)
    from distributed import Client, LocalCluster

    from daskdca.engine.clients import _worker_environ

    warnings.simplefilter("ignore", ConvergenceWarning)
    with _worker_environ():
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40)
    with cluster, Client(cluster) as client:
        print(f"{args.loss}; cells: rounds (epochs for serial SDCA) / seconds, median of "
              f"{args.reps}; ratio: with the search against without\n")
        print("| data | lam | tol | CoCoA+ on 2 workers | with momentum | ratio | serial SDCA | with momentum | ratio |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|")
        for name, X, y, lam, tol in cases(args):
            common = dict(loss=args.loss, lam=lam, tol=tol, random_state=0, max_rounds=args.max_rounds)
            row = []
            for route in ("cluster", "serial"):
                results = []
                for momentum in (False, True):
                    if route == "cluster":
                        kwargs = dict(common, solver=daskdca.CoCoAPlus(momentum=momentum), n_partitions=2,
                                      client=client)
                    else:
                        kwargs = dict(common, solver=daskdca.SDCA(momentum=momentum))
                    few = slice(None, None, max(1, X.shape[0] // 500))  # rows of every class
                    daskdca.fit(X[few], y[few], **dict(kwargs, max_rounds=3))  # compile, warm the workers
                    results.append(timed(X, y, args.reps, **kwargs))
                (off, t_off), (on, t_on) = results
                row += [cell(off, t_off), cell(on, t_on), f"{t_on / t_off:.2f}"]
            print(f"| {name} | {lam:g} | {tol:g} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
