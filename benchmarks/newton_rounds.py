"""Primal Newton on a 2-worker cluster: the whole fit on one worker against rounds over both, by data size.

``solver="auto"`` picks primal Newton where the features are few and the loss smooth; on a cluster it
then runs either the one-worker route (the data sent to one worker, the whole fit one task there) or
Newton rounds over every worker (each holds a share of the rows, a round sends its gradient and Hessian
sums), by ``routes.NEWTON_ROUNDS_MIN_NNZ``.  This script times both for the same fit, in one process:
KDD99-shaped generated sets of several sizes (``routes.py``'s generator, 122 features, about 13 stored
values a row) and a9a and w8a, logistic, ``lam n = 1``, to a certified 1e-6, medians of ``--reps``
after a warm-up; the in-memory fit is the baseline.  The cluster (2 workers x 1 thread) starts before
the clock.

Usage::

    python benchmarks/newton_rounds.py [--rows 100000,300000,1000000] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import daskdca  # noqa: E402
from daskdca import routes  # noqa: E402

from conftest import load_dataset  # noqa: E402
from routes import _kdd_like  # noqa: E402  (benchmarks/routes.py)


def timed(call, reps):
    times, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000,300000,1000000")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    sets = [(name, *load_dataset(name)) for name in ("a9a", "w8a")]
    sets += [(f"KDD99-shaped {int(r):,}", *_kdd_like(int(r))) for r in args.rows.split(",")]
    print("| data | stored values | in memory s | one worker s (ratio) | rounds over 2 workers s (ratio) | rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    with warnings.catch_warnings(), LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        warnings.simplefilter("ignore")
        for name, X, y in sets:
            kw = dict(loss="logistic", lam=1.0 / X.shape[0], tol=1e-6)
            seconds = {}
            for label, threshold in (("one_worker", float("inf")), ("rounds", 0)):
                routes.NEWTON_ROUNDS_MIN_NNZ = threshold
                daskdca.fit(X, y, client=client, **kw)  # warm-up: the workers load the kernels
                seconds[label], model = timed(lambda: daskdca.fit(X, y, client=client, **kw), args.reps)
                assert model.route_.name == label and model.route_.solver == "newton", model.route_
            base, model = timed(lambda: daskdca.fit(X, y, **kw), args.reps)
            print(f"| {name} | {X.nnz:,} | {base:.3f} | {seconds['one_worker']:.3f} "
                  f"({seconds['one_worker'] / base:.2f}) | {seconds['rounds']:.3f} ({seconds['rounds'] / base:.2f}) "
                  f"| {model.n_rounds_} |", flush=True)


if __name__ == "__main__":
    main()
