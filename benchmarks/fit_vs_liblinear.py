"""Time to a certified optimum: every daskdca solver against LIBLINEAR.

Usage::

    python benchmarks/fit_vs_liblinear.py [--data-dir ../shared/data] [--max-rounds 2000]

For a9a, w8a, ijcnn1 and reuters, lam in {1e-3, 1e-5} and the hinge, squared
hinge and logistic losses: LIBLINEAR through scikit-learn at tol 1e-12
(``C = 1/(lam n)``, no intercept; dual CD for hinge, primal Newton for the
others), then ``daskdca.fit(tol=1e-7)`` with each solver (CoCoA+ on 2
partitions).  Reported: wall seconds of each, daskdca's rounds, whether it
certified 1e-7, ``(P - P_LL)/P_LL`` and daskdca's certified relative gap.
A negative ``relP`` with a certified gap means LIBLINEAR stopped above the
optimum.  This measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import daskdca

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from references import liblinear  # noqa: E402

DATASETS = {"a9a": ("a9a.gz", 123), "w8a": ("w8a.gz", 300), "ijcnn1": ("ijcnn1.bz2", 22),
            "reuters": ("reuters_lasvm.trn.bz2", 8315)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--max-rounds", type=int, default=2000)
    parser.add_argument("--tol", type=float, default=1e-7)
    args = parser.parse_args()
    from sklearn.datasets import load_svmlight_file

    warnings.simplefilter("ignore")
    print("| data | lam | loss | solver | LIBLINEAR s | daskdca s | rounds | certified | relP vs LIBLINEAR | rel gap |")
    print("|---|---|---|---|---:|---:|---:|---|---:|---:|")
    for name, (fname, d) in DATASETS.items():
        X, y = load_svmlight_file(str(Path(args.data_dir) / fname), n_features=d)
        for lam in (1e-3, 1e-5):
            for loss in ("hinge", "squared_hinge", "logistic"):
                t0 = time.perf_counter()
                _, p_ll = liblinear(X, np.where(y == np.unique(y)[1], 1.0, -1.0), lam, loss)
                t_ll = time.perf_counter() - t0
                for solver in ("sdca", "minibatch_sdca", "cocoa+"):
                    t0 = time.perf_counter()
                    m = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=args.tol,
                                    max_rounds=args.max_rounds)
                    t = time.perf_counter() - t0
                    print(f"| {name} | {lam:g} | {loss} | {solver} | {t_ll:.2f} | {t:.2f} | {m.n_rounds_} | "
                          f"{'yes' if m.converged_ else 'no'} | {(m.primal_ - p_ll) / p_ll:+.1e} | "
                          f"{m.gap_ / m.primal_:.1e} |", flush=True)


if __name__ == "__main__":
    main()
