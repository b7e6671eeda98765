"""GridSearchCV over C on a9a: SDCAClassifier against LogisticRegression(solver="liblinear"), side by side.

Both estimators fit LIBLINEAR's problem, logistic loss with the intercept as a regularised synthetic
feature (``fit_intercept=True``, ``intercept_scaling=1``), at their default tolerances: scikit-learn's
``tol=1e-4`` (LIBLINEAR's own stopping rule) and daskdca's certified relative duality gap ``tol=1e-6``.
A grid of ``C`` values times 5 folds, one process (``n_jobs=1``), each search timed once after a warm-up
search that compiles daskdca's kernels; then the same with a 2-worker, 1-thread LocalCluster given as
``client=`` (the cluster started before the clock).  Prints the seconds, the ratio to liblinear and the
best C and score each search found.

Usage::

    python benchmarks/grid_search.py [--Cs 0.01,0.1,1,10] [--folds 5] [--no-cluster]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

import daskdca  # noqa: E402

from conftest import load_dataset  # noqa: E402


def timed_search(estimator, X, y, Cs, folds):
    search = GridSearchCV(estimator, {"C": Cs}, cv=folds, n_jobs=1)
    start = time.perf_counter()
    search.fit(X, y)
    return time.perf_counter() - start, search


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--Cs", default="0.01,0.1,1,10")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--no-cluster", action="store_true")
    args = parser.parse_args()
    Cs = [float(c) for c in args.Cs.split(",")]
    X, y = load_dataset("a9a")
    X.indices, X.indptr = X.indices.astype("int32"), X.indptr.astype("int32")  # liblinear takes 32-bit indices
    print(f"a9a {X.shape[0]} x {X.shape[1]}, logistic, C in {Cs}, {args.folds} folds")
    liblinear = LogisticRegression(solver="liblinear")
    ours = daskdca.SDCAClassifier(loss="logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timed_search(ours, X[:2000], y[:2000], Cs, 2)  # compiles the kernels
        rows = [("LogisticRegression(solver='liblinear')", *timed_search(liblinear, X, y, Cs, args.folds)),
                ("SDCAClassifier(loss='logistic')", *timed_search(ours, X, y, Cs, args.folds))]
        if not args.no_cluster:
            from distributed import Client, LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                clustered = daskdca.SDCAClassifier(loss="logistic", client=client)
                timed_search(clustered, X[:2000], y[:2000], Cs, 2)  # the workers compile too
                rows.append(("SDCAClassifier(loss='logistic', client=2 workers)",
                             *timed_search(clustered, X, y, Cs, args.folds)))
    base = rows[0][1]
    print("| estimator | seconds | ratio to liblinear | best C | best mean accuracy |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds, search in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / base:.2f} | {search.best_params_['C']:g} | "
              f"{search.best_score_:.5f} |")
    routes = {}
    for name, _, search in rows[1:]:
        routes[name] = search.best_estimator_.route_
    for name, route in routes.items():
        print(f"{name}: refit route {route.name}, {route.solver} ({route.reason})")


if __name__ == "__main__":
    main()
