"""Pure L1 on K partitions: rounds of ``L1SDCA`` to a certified relative gap, K = 1, 2, 4 (in process).

``P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1`` by :class:`daskdca.methods.l1.L1SDCA`: elastic-net
subproblems with a moving centre, each by serial proximal SDCA on one partition or by CoCoA+ rounds
(adding, ``sigma' = K``) on K; the certificate is the L1 problem's at the rescaled duals.  In process the
rounds are the cluster's (the same bits).  Reported per data set and K: rounds, certified relative gap,
whether certified within ``--max-rounds``, seconds (numba compiled before the clock) and nonzeros.  It
measures and asserts nothing.

Run: ``python benchmarks/l1_partitions.py [--sets heart,w8a,a9a,rcv1_1k] [--lam 1e-4] [--tol 1e-6]``.
Results: benchmarks/RESULTS.md, "Pure L1 on K partitions".
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import daskdca  # noqa: E402
from daskdca.methods.l1 import L1SDCA  # noqa: E402

from conftest import load_dataset  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="heart,w8a,a9a,rcv1_1k")
    parser.add_argument("--partitions", default="1,2,4")
    parser.add_argument("--lam", type=float, default=1e-4)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-rounds", type=int, default=1000)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # a capped fit warns; the table says so
    X, y = load_dataset("heart")
    daskdca.fit(X, y, loss="logistic", lam=0.01, solver=L1SDCA(), n_partitions=2, max_rounds=3)  # compile
    print(f"logistic, lam {args.lam:g}, to a certified relative gap {args.tol:g}, at most {args.max_rounds} rounds\n")
    print("| data | n x d | K | rounds | certified relative gap | certified | seconds | nonzeros |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for name in args.sets.split(","):
        X, y = load_dataset(name)
        for K in (int(k) for k in args.partitions.split(",")):
            start = time.perf_counter()
            m = daskdca.fit(X, y, loss="logistic", lam=args.lam, solver=L1SDCA(), tol=args.tol, n_partitions=K,
                            max_rounds=args.max_rounds)
            seconds = time.perf_counter() - start
            print(f"| {name} | {X.shape[0]:,} x {X.shape[1]:,} | {K} | {m.n_rounds_} | {m.gap_ / m.primal_:.2e} | "
                  f"{'yes' if m.converged_ else 'no'} | {seconds:.2f} | {int(np.count_nonzero(m.coef_))} |",
                  flush=True)


if __name__ == "__main__":
    main()
