"""Seconds to a 1e-4 relative suboptimality on a 2-worker LocalCluster, LIBLINEAR and in memory.

For each problem on the generated 5 M nnz set (``catalyst_rounds.GENERATED["gen5m"]``), side by side in one
process:

- LIBLINEAR through scikit-learn, single thread, no intercept, ``C = 1/(lam n)``: dual coordinate
  descent (logistic and hinge) and the primal trust-region Newton solver (logistic), each at a
  ladder of tolerances; the time is that of the first tolerance whose ``P(w)`` is within 1e-4 of
  ``P*`` (relative).
- daskdca in memory: serial SDCA, ``tol=1e-4`` (the certificate, which implies the same bound).
- daskdca on a 2-worker LocalCluster (``threads_per_worker=1``, started before the clock; its
  start is excluded): ``daskdca.fit(X, y, client=client, n_partitions=2,
  tol=1e-4)``, the default cluster method, everything else included (sending the rows to the
  workers, setup, rounds, certificate).

``P*`` is that of a serial SDCA fit certified to 1e-9.  Each time is the median of ``--reps``.

Usage::

    python benchmarks/cluster_time.py [--reps 3] [--lams 1e-4,1e-5,1e-6] [--losses logistic,hinge]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import daskdca  # noqa: E402
from catalyst_rounds import load_data_set  # noqa: E402
from references import _int32, primal_objective  # noqa: E402

TOLERANCES = tuple(10.0 ** -k for k in range(1, 9))


def liblinear_ladder_seconds(X, y, loss, lam, p_star, dual):
    """Seconds of the first LIBLINEAR tolerance on the ladder that reaches ``P* (1 + 1e-4)`` (None: none)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    C = 1.0 / (lam * X.shape[0])
    for tol in TOLERANCES:
        if loss == "logistic":
            est = LogisticRegression(solver="liblinear", dual=dual, C=C, tol=tol, max_iter=100_000,
                                     fit_intercept=False, random_state=0)
        else:
            est = LinearSVC(loss="hinge", dual=True, C=C, tol=tol, max_iter=100_000, fit_intercept=False,
                            random_state=0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        seconds = time.perf_counter() - start
        if primal_objective(X, y, est.coef_.ravel(), lam, loss) <= p_star * (1 + 1e-4):
            return seconds
    return None


def _daskdca_seconds(X, y, loss, lam, client):
    start = time.perf_counter()
    m = daskdca.fit(X, y, loss=loss, lam=lam, tol=1e-4, client=client, n_partitions=2 if client else None,
                    max_rounds=2000)
    return time.perf_counter() - start, m


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--losses", default="logistic,hinge")
    parser.add_argument("--lams", default="1e-4,1e-5,1e-6")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--work-dir", default="/tmp/daskdca-bench")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    X, y = load_data_set("gen5m", args.data_dir, args.work_dir)
    X = _int32(X)
    y = np.where(y > 0, 1.0, -1.0)
    print("| loss | lam | LIBLINEAR dual CD s | LIBLINEAR Newton s | daskdca in memory s | daskdca 2 workers s "
          "| rounds | 2 workers / best LIBLINEAR | 2 workers / in memory |")
    print("|" + "---|" * 9)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        _daskdca_seconds(X[:2000], y[:2000], "logistic", 1e-3, client)  # warm the workers' numba
        _daskdca_seconds(X[:2000], y[:2000], "logistic", 1e-3, None)
        for loss in args.losses.split(","):
            for lam in (float(v) for v in args.lams.split(",")):
                reference = daskdca.fit(X, y, loss=loss, lam=lam, tol=1e-9, max_rounds=20_000)
                p_star = reference.primal_
                cells = {"cd": [], "newton": [], "memory": [], "cluster": []}
                rounds = None
                for _ in range(args.reps):
                    cells["cd"].append(liblinear_ladder_seconds(X, y, loss, lam, p_star, dual=True))
                    if loss == "logistic":
                        cells["newton"].append(liblinear_ladder_seconds(X, y, loss, lam, p_star, dual=False))
                    cells["memory"].append(_daskdca_seconds(X, y, loss, lam, None)[0])
                    seconds, m = _daskdca_seconds(X, y, loss, lam, client)
                    cells["cluster"].append(seconds if m.converged_ else None)
                    rounds = m.n_rounds_
                med = {k: (statistics.median(v) if v and None not in v else None) for k, v in cells.items()}
                best = min(v for v in (med["cd"], med["newton"]) if v is not None) if (
                    med["cd"] is not None or med["newton"] is not None) else None

                def fmt(v):
                    return "-" if v is None else f"{v:.2f}"

                ratio_ll = fmt(med["cluster"] / best) if med["cluster"] and best else "-"
                ratio_mem = fmt(med["cluster"] / med["memory"]) if med["cluster"] and med["memory"] else "-"
                print(f"| {loss} | {lam:g} | {fmt(med['cd'])} | {fmt(med['newton'])} | {fmt(med['memory'])} | "
                      f"{fmt(med['cluster'])} | {rounds} | {ratio_ll} | {ratio_mem} |", flush=True)


if __name__ == "__main__":
    main()
