"""Serial SDCA in memory with its gap sums on a second core, against the same fit on one core.

Without shrinking (the logistic and squared losses), serial SDCA's round is the gap sums at the round's start
(one pass over the data) then the local steps (another).  The sums read only the starting ``alpha`` and ``w``,
so on a copy of ``alpha`` they run on a second core while the steps run (``daskdca.methods.sdca._sweep``); the
fits have the same bits.  This script times both (the one-core fit by turning the spare core off in the
module), alternated, and checks the bits.

Run: ``python benchmarks/gap_overlap.py [--reps 3]`` (one process; every kernel compiled before the clock).
Results: benchmarks/RESULTS.md, "Serial SDCA's gap sums on a second core".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import daskdca
import daskdca.methods.sdca as sdca_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TOL = 1e-4


def data_sets():
    from conftest import load_dataset
    from round_overhead import make

    X, y = load_dataset("a9a")
    yield "a9a (32,561 x 123, 0.45 M nnz)", X, np.where(y > 0, 1.0, -1.0)
    X, y = make(250_000, 100_000, 20)
    yield "generated (250,000 x 100,000, 5 M nnz)", X, y


def fit(X, y, lam, spare):
    """Seconds and model of serial SDCA to a certified ``TOL``, with or without the second core."""
    original = sdca_module.spare_core
    sdca_module.spare_core = (lambda: True) if spare else (lambda: False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t = time.perf_counter()
            m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="sdca", tol=TOL, random_state=0)
            return time.perf_counter() - t, m
    finally:
        sdca_module.spare_core = original


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--lams", type=float, nargs="+", default=[1e-5, 1e-6])
    args = parser.parse_args()
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; load average before: {os.getloadavg()}")
    print("\n| data | lam | one core s | gap on a second core s | ratio | epochs | same bits |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, X, y in data_sets():
        fit(X[:500], y[:500], 1e-2, True)  # compile before the clock
        fit(X[:500], y[:500], 1e-2, False)
        for lam in args.lams:
            one, two = [], []
            for _ in range(args.reps):
                s1, m1 = fit(X, y, lam, False)
                s2, m2 = fit(X, y, lam, True)
                one.append(s1)
                two.append(s2)
            same = np.array_equal(m1.coef_, m2.coef_) and np.array_equal(m1.dual_coef_, m2.dual_coef_)
            a, b = statistics.median(one), statistics.median(two)
            print(f"| {name} | {lam:g} | {a:.3f} | {b:.3f} | {b / a:.2f} | {m1.n_epochs_:g} | {same} |", flush=True)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
