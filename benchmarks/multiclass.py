"""One-vs-rest fitted together against the K problems fitted one after another, and against LIBLINEAR.

    python benchmarks/multiclass.py [--rows 200000] [--features 2000] [--nnz-per-row 30] [--classes 4]
                                    [--cluster-tol TOL] [--skip-in-memory] [--skip-cluster]

Data: a generated sparse multi-class set (``--rows`` x ``--features``, about
``--nnz-per-row`` non-zeros per row, uniform(0, 1) values, rows scaled to unit
norm; label = the class whose random centroid scores highest, plus Gaussian
noise), held back from the test suite.  Hinge loss.

1. In memory, one process: ``daskdca.fit(X, y)`` (the K problems together,
   serial SDCA, the problems on the fit's threads) against K calls
   ``daskdca.fit(X, y == k)`` and against
   LIBLINEAR's one-vs-rest (``LinearSVC(loss="hinge", dual=True, tol=1e-4,
   fit_intercept=False)``, which stops on its own criterion; its relative
   suboptimality is bounded with daskdca's certified duals,
   ``(P_k(w_liblinear) - D_k(alpha)) / P_k(w_liblinear)``).  daskdca
   stops at ``--tol`` (every problem's relative gap).
2. On a 2-worker LocalCluster (1 thread each), out of core (``in_memory=False``),
   CoCoA+ on 2 partitions for ``--rounds`` rounds (``tol=0``, so every fit runs
   the same rounds and, by tests/test_multiclass.py, the joint fit's problem
   ``k`` has the bits of the binary fit ``k``): one multi-class store against
   K binary stores of the same rows.  With ``--cluster-tol`` every fit runs
   until its gap meets it instead (each problem of the joint fit stops at its
   own round with its binary fit's bits).  Cluster start and store writes are
   not timed.

Prints a Markdown table of seconds and ratios for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp


def make_data(n_rows, n_features, nnz_per_row, n_classes, seed=0):
    rng = np.random.default_rng(seed)
    nnz = rng.poisson(nnz_per_row, n_rows).clip(1, n_features)
    indptr = np.concatenate(([0], np.cumsum(nnz)))
    indices = np.concatenate([rng.choice(n_features, k, replace=False) for k in nnz]).astype(np.int32)
    data = rng.uniform(0.0, 1.0, indptr[-1])
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features))
    X.sort_indices()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / norms) @ X
    centroids = rng.standard_normal((n_classes, n_features))
    scores = np.asarray(X @ centroids.T) + 0.05 * rng.standard_normal((n_rows, n_classes))
    return sp.csr_matrix(X), np.argmax(scores, axis=1)


def hinge_primal(X, s, w, lam):
    """``P(w) = 1/n sum_i max(0, 1 - s_i x_i.w) + lam/2 ||w||^2``."""
    return float(np.mean(np.maximum(0.0, 1.0 - s * (X @ w))) + lam / 2 * w @ w)


def in_memory(X, y, lam, tol):
    import daskdca
    from sklearn.svm import LinearSVC

    K = int(y.max()) + 1
    rows = []
    daskdca.fit(X[:1000], y[:1000], loss="hinge", lam=lam, tol=tol)  # the kernels' first loads, not timed
    t = time.perf_counter()
    joint = daskdca.fit(X, y, loss="hinge", lam=lam, tol=tol)
    rows.append(("daskdca, K problems together (sdca)", time.perf_counter() - t, joint.n_rounds_,
                 float(np.max(joint.gap_ / joint.primal_))))
    t = time.perf_counter()
    fits = [daskdca.fit(X, (y == k).astype(int), loss="hinge", lam=lam, tol=tol) for k in range(K)]
    rows.append(("daskdca, K problems in turn (sdca)", time.perf_counter() - t, sum(f.n_rounds_ for f in fits),
                 max(f.gap_ / f.primal_ for f in fits)))
    C = 1.0 / (lam * X.shape[0])
    t = time.perf_counter()
    est = daskdca.SDCAClassifier("hinge", C=C, tol=tol, fit_intercept=False).fit(X, y)
    rows.append(("SDCAClassifier (the same problems)", time.perf_counter() - t, int(est.n_iter_.max()),
                 float(np.max(est.gap_ / est.primal_))))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-4, fit_intercept=False, max_iter=100000).fit(X, y)
    seconds = time.perf_counter() - t
    # LIBLINEAR stops on its own criterion: bound its relative suboptimality by daskdca's certified duals,
    # (P_k(w_liblinear) - D_k(alpha_daskdca)) / P_k(w_liblinear), the largest over k
    gaps = [(p - joint.dual_[k]) / p for k, p in
            enumerate(hinge_primal(X, np.where(y == k, 1.0, -1.0), ref.coef_[k], lam) for k in range(K))]
    rows.append(("LIBLINEAR one-vs-rest (LinearSVC, tol 1e-4)", seconds, ref.n_iter_, max(gaps)))
    return rows


def on_cluster(X, y, lam, rounds, tol=None):
    """Part 2; with ``tol`` every fit runs until its gap meets it (each problem of the joint fit stopping at its
    own round, as its binary fit does) instead of ``rounds`` rounds."""
    import distributed

    import daskdca

    K = int(y.max()) + 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        multi = daskdca.write_store(os.path.join(tmp, "multi.zarr"), X, y, block_rows=25_000, seed=1)
        binary = [daskdca.write_store(os.path.join(tmp, f"b{k}.zarr"), X, (y == k).astype(int), block_rows=25_000,
                                      seed=1) for k in range(K)]
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=40) as cluster, distributed.Client(cluster) as client:
            kwargs = dict(loss="hinge", lam=lam, tol=0.0, max_rounds=rounds, n_partitions=2, client=client,
                          in_memory=False)
            if tol is not None:
                kwargs.update(tol=tol, max_rounds=None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                daskdca.fit(binary[0], **{**kwargs, "max_rounds": 1})  # warm the workers (numba, imports)
                t = time.perf_counter()
                joint = daskdca.fit(multi, **kwargs)
                rows.append(("daskdca out of core, K problems together", time.perf_counter() - t, joint.n_rounds_,
                             float(np.max(joint.gap_ / joint.primal_))))
                t = time.perf_counter()
                fits = [daskdca.fit(store, **kwargs) for store in binary]
                rows.append(("daskdca out of core, K problems in turn", time.perf_counter() - t,
                             sum(f.n_rounds_ for f in fits), max(f.gap_ / f.primal_ for f in fits)))
            same = all(np.array_equal(joint.coef_[k], fits[k].coef_) for k in range(K))
            if tol is not None:
                print(f"rounds of the binary fits: {[f.n_rounds_ for f in fits]}; the joint fit's epochs "
                      f"{joint.n_epochs_:.1f}")
    return rows, same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=2000)
    parser.add_argument("--nnz-per-row", type=float, default=30.0)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--lam", type=float, default=1e-4)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cluster-tol", type=float, default=None,
                        help="run the cluster fits to this relative gap instead of --rounds rounds")
    parser.add_argument("--skip-in-memory", action="store_true")
    parser.add_argument("--skip-cluster", action="store_true")
    args = parser.parse_args()
    X, y = make_data(args.rows, args.features, args.nnz_per_row, args.classes)
    print(f"data: {X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros, {args.classes} classes "
          f"(counts {np.bincount(y).tolist()}); hinge, lam {args.lam:g}")
    if not args.skip_in_memory:
        rows = in_memory(X, y, args.lam, args.tol)
        print(f"\nin memory, to relative gap {args.tol:g} (every problem):\n")
        print("| fit | seconds | rounds (epochs of one problem) | largest relative gap | vs together |")
        print("|---|---:|---:|---:|---:|")
        for name, seconds, n, gap in rows:
            print(f"| {name} | {seconds:.2f} | {n} | {gap:.2e} | {seconds / rows[0][1]:.2f}x |")
    if args.skip_cluster:
        return
    rows, same = on_cluster(X, y, args.lam, args.rounds, args.cluster_tol)
    each = f"to relative gap {args.cluster_tol:g}" if args.cluster_tol is not None else f"{args.rounds} rounds each"
    print(f"\n2-worker LocalCluster, out of core, CoCoA+ on 2 partitions, {each}:\n")
    print("| fit | seconds | rounds | largest relative gap | vs together |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds, n, gap in rows:
        print(f"| {name} | {seconds:.2f} | {n} | {gap:.2e} | {seconds / rows[0][1]:.2f}x |")
    print(f"\njoint coef == binary coefs, bit for bit: {same}")


if __name__ == "__main__":
    main()
