"""Threads inside a partition (``SDCA(threads=T, inner_rounds=m)``, hierarchical CoCoA+) against one thread, in memory.

For each data set and ``lam`` (logistic), the time and the epochs to a
certified relative gap of ``1e-4`` of serial SDCA (``T = 1``) and of ``T = 2``
threads with ``m = 1, 2, 4`` inner rounds per round (the sub-blocks' safe
``sigma' = T``, Dünner et al. 2018 §3 on Ma et al. 2015 §3), plain and inside
Catalyst's loop (``acceleration="catalyst"``, whose ``kappa`` counts the ``T``
parts).  ``s/epoch`` is the fit's time over its epochs (setup and
certificates included); the ratio is the time over serial SDCA's.  The
threads pay when ``T`` times the speed of an epoch outweighs the epochs that
the ``T``-fold curvature of the steps adds.

Run: ``python benchmarks/threads.py [--max-epochs 300]`` (one process; every
kernel compiled before the clock).  Results: benchmarks/RESULTS.md,
"Threads inside a partition".  The machine's cores (``os.sched_getaffinity``)
and load are printed with the table: on a machine shared with other jobs the
threads compete for the same cores, so say so beside the numbers.
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
from daskdca.methods import SDCA

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from round_overhead import make  # noqa: E402

TOL = 1e-4
CONFIGS = [("T=1", SDCA()),
           ("T=2, m=1", SDCA(threads=2, inner_rounds=1)),
           ("T=2, m=2", SDCA(threads=2, inner_rounds=2)),
           ("T=2, m=4", SDCA(threads=2, inner_rounds=4)),
           ("T=1, catalyst", SDCA(acceleration="catalyst")),
           ("T=2, m=4, catalyst", SDCA(threads=2, inner_rounds=4, acceleration="catalyst"))]


def data_sets():
    from conftest import load_dataset

    X, y = load_dataset("a9a")
    yield "a9a (32,561 x 123, 0.45 M nnz)", X, np.where(y > 0, 1.0, -1.0)
    X, y = make(250_000, 100_000, 20)
    yield "generated (250,000 x 100,000, 5 M nnz)", X, y


def run(X, y, solver, lam, max_epochs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=TOL, max_rounds=max_epochs,
                        random_state=0)
        return time.perf_counter() - t, m


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-epochs", type=int, default=300)
    parser.add_argument("--lams", type=float, nargs="+", default=[1e-5, 1e-6])
    args = parser.parse_args()
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; load average before: {os.getloadavg()}")
    for name, X, y in data_sets():
        for _, solver in CONFIGS:  # compile before the clock
            run(X[:500], y[:500], solver, 1e-2, 2)
        for lam in args.lams:
            print(f"\n### {name}, logistic, lam {lam:g}, certified relative gap {TOL:g}\n")
            print("| local step | seconds | epochs | s/epoch | time / T=1 | epochs / T=1 | converged |")
            print("|---|---:|---:|---:|---:|---:|---|")
            base = None
            for label, solver in CONFIGS:
                seconds, m = run(X, y, solver, lam, args.max_epochs)
                if base is None:
                    base = (seconds, m.n_epochs_)
                print(f"| {label} | {seconds:.2f} | {m.n_epochs_:g} | {seconds / m.n_epochs_:.4f} | "
                      f"{seconds / base[0]:.2f} | {m.n_epochs_ / base[1]:.2f} | "
                      f"{'yes' if m.converged_ else f'no (gap {m.gap_ / m.primal_:.1e})'} |", flush=True)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
