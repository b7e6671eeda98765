"""CoCoA+'s aggregations by rounds and seconds: adding, adding inside Catalyst (the default) and the line search.

``CoCoAPlus(acceleration=None)`` adds the K partitions' updates with ``sigma' = K`` (Ma et al. 2015,
arXiv:1502.03508); ``CoCoAPlus()`` runs those rounds inside Catalyst on 2 or more partitions;
``CoCoAPlus(aggregation="line_search")`` solves each partition's rows with ``sigma' = 1`` and takes the step
along the summed direction that maximises the dual (``LINE_SEARCH_STEPS``, ``1/K`` ... ``1``).  Each fit runs in
process on K seeded random partitions (the rounds a cluster runs, bit for bit), logistic loss, to a certified
relative gap of 1e-4; serial SDCA in memory is the reference.  Seconds are one process on one core; only the
rounds carry over to a cluster.

    python benchmarks/aggregation_search.py [--data generated,store,a9a,url10] [--lams 1e-5,1e-6] [--partitions 2,4]
        [--solvers adding,catalyst,line_search] [--work-dir DIR]

``url10`` is ``catalyst_rounds.py``'s generated tenth of URL (240,000 x 3,231,961), written once to
``--work-dir`` and read from there after.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import daskdca

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))

from round_overhead import make  # noqa: E402

SOLVERS = {"adding": ("adding", lambda: daskdca.CoCoAPlus(acceleration=None)),
           "catalyst": ("Catalyst (default)", lambda: daskdca.CoCoAPlus()),
           "line_search": ("line search", lambda: daskdca.CoCoAPlus(aggregation="line_search"))}


def data_sets(names, folder, work_dir):
    for name in names:
        if name == "generated":
            X, y = make(250_000, 100_000, 20)
            yield "generated 250,000 x 100,000 (5 M nnz)", X, y
        elif name == "store":
            from daskdca.datasets import make_classification

            store = make_classification(Path(folder) / "store.zarr", 1_000_000, 100_000, nnz_per_row=20.0, seed=0,
                                        block_rows=65_536)
            X, y = store.read_all()
            yield "store 1,000,000 x 100,000 (routes.py's)", X, y
        elif name == "a9a":
            from conftest import load_dataset

            X, y = load_dataset("a9a")
            yield "a9a", X, y
        elif name == "url10":
            from catalyst_rounds import load_data_set

            X, y = load_data_set("url10", None, work_dir)
            yield "url10 240,000 x 3,231,961", X, y
        else:
            raise SystemExit(f"unknown data set {name!r}")


def fit(X, y, lam, solver, K, max_rounds):
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, n_partitions=K, tol=1e-4,
                            max_rounds=max_rounds, random_state=0)
    seconds = time.perf_counter() - started
    rounds = str(model.n_rounds_) if model.converged_ else f">{model.n_rounds_}"
    return f"{rounds} ({seconds:.1f} s)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="generated,store,a9a")
    parser.add_argument("--lams", default="1e-5,1e-6")
    parser.add_argument("--partitions", default="2,4")
    parser.add_argument("--max-rounds", type=int, default=150)
    parser.add_argument("--solvers", default=",".join(SOLVERS), help=f"some of {','.join(SOLVERS)}")
    parser.add_argument("--work-dir", default=None, help="where url10 is written once (default: a temporary folder)")
    args = parser.parse_args()
    solvers = [SOLVERS[name] for name in args.solvers.split(",")]
    lams = [float(v) for v in args.lams.split(",")]
    partitions = [int(v) for v in args.partitions.split(",")]
    print(f"| data | lam | serial SDCA epochs (s) | K | {' | '.join(title for title, _ in solvers)} |")
    print("|---|---|---:|---:|" + "---:|" * len(solvers))
    with tempfile.TemporaryDirectory(prefix="daskdca-aggregation-") as folder:
        for name, X, y in data_sets(args.data.split(","), folder, args.work_dir or folder):
            for lam in lams:
                serial = fit(X, y, lam, "sdca", 1, args.max_rounds)
                for K in partitions:
                    cells = [fit(X, y, lam, make_solver(), K, args.max_rounds) for _, make_solver in solvers]
                    print(f"| {name} | {lam:g} | {serial} | {K} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
