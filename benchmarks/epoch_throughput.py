"""One SDCA epoch in M nnz/s: daskdca's numba kernel against LIBLINEAR's dual CD.

Usage::

    python benchmarks/epoch_throughput.py [--data-dir ../shared/data] [--repeats 5]

For each data set and loss (hinge, logistic), lam = 1e-4 (C = 1/(lam n)), one core:

* ``daskdca``: :func:`daskdca.kernels.sdca.local_sdca` over one random
  permutation of all rows (no shrinking, so every row is visited), timed on
  epochs 2..repeats+1 of one run (epoch 1 warms the kernel).  Since
  2026-11-26 its logistic step is the sweep's inexact ascent step
  (:func:`daskdca.losses.sweep_dual_update`); ``benchmarks/logistic_step.py``
  times it against the exact step side by side.
* ``gather``: a bare numba loop that only computes ``x_i . w`` over the same
  rows in the same order; the floor any SDCA epoch must pay.
* ``LIBLINEAR``: its dual coordinate descent through scikit-learn
  (``LinearSVC(loss="hinge", dual=True)``; ``LogisticRegression(solver=
  "liblinear", dual=True)``).  ``1 iter`` is ``max_iter=1`` (one pass over all
  rows, plus scikit-learn's conversion of X into LIBLINEAR's format);
  ``marginal`` is ``(t(6 iters) - t(1 iter)) / 5``.  For hinge the later
  passes skip shrunk rows, so its marginal is not a per-nnz rate and
  flatters LIBLINEAR; LIBLINEAR's dual logistic solver does not shrink, so
  for logistic the marginal column is the like-for-like comparison.

Throughput = nnz / seconds per epoch; median over repeats (min, max shown).
This measures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numba import njit

import daskdca
from daskdca.kernels.sampling import permutation_order
from daskdca.kernels.sdca import local_sdca
from daskdca.partitions import UNWEIGHTED

DATASETS = {
    "a9a": ("a9a.gz", 123),
    "w8a": ("w8a.gz", 300),
    "ijcnn1": ("ijcnn1.bz2", 22),
    "reuters": ("reuters_lasvm.trn.bz2", 8315),
    "rcv1_1k": ("rcv1_sample1000.svm.gz", 47236),
}


@njit(nogil=True, cache=True)
def gather_only(indptr, indices, data, w, order):
    total = 0.0
    for t in range(order.shape[0]):
        i = order[t]
        m = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            m += data[p] * w[indices[p]]
        total += m
    return total


def _median_min_max(values):
    v = np.asarray(values)
    return float(np.median(v)), float(v.min()), float(v.max())


def bench_daskdca(X, y, lam, repeats, loss):
    n, d = X.shape
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    alpha, w = np.zeros(n), np.zeros(d)
    kind = int(daskdca.losses.get_loss(loss).kind)
    times, gather_times = [], []
    for epoch in range(repeats + 1):
        order = permutation_order(0, epoch, 0, n, n, 0)
        t0 = time.perf_counter()
        local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0), order,
                   kind, 0.0, lam * n, 1.0, False)
        t1 = time.perf_counter()
        gather_only(X.indptr, X.indices, X.data, w, order)
        t2 = time.perf_counter()
        if epoch > 0:
            times.append(t1 - t0)
            gather_times.append(t2 - t1)
    return times, gather_times


def liblinear_seconds(X32, y, lam, loss, max_iter):
    """Seconds of one LIBLINEAR dual CD fit (hinge: LinearSVC; logistic: dual liblinear) of ``max_iter`` passes."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    C = 1.0 / (lam * X32.shape[0])
    if loss == "hinge":
        est = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-30, max_iter=max_iter, fit_intercept=False)
    else:
        est = LogisticRegression(solver="liblinear", dual=True, C=C, tol=1e-30, max_iter=max_iter,
                                 fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        est.fit(X32, y)
        return time.perf_counter() - t0


def bench_liblinear(X, y, lam, repeats, loss):
    X32 = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)

    def run(max_iter):
        return liblinear_seconds(X32, y, lam, loss, max_iter)

    one, marginal = [], []
    run(1)  # warm-up
    for _ in range(repeats):
        t1 = run(1)
        t6 = run(6)
        one.append(t1)
        marginal.append((t6 - t1) / 5)
    return one, marginal


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lam", type=float, default=1e-4)
    args = parser.parse_args()

    from sklearn.datasets import load_svmlight_file
    import sklearn

    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"daskdca {daskdca.__version__}, {platform.processor() or platform.machine()}")
    print(f"lam={args.lam:g}, one core, median (min-max) of {args.repeats} epochs\n")
    print("| data | loss | nnz | daskdca M nnz/s | gather-only M nnz/s | daskdca / gather | "
          "LIBLINEAR 1 iter M nnz/s | LIBLINEAR marginal M nnz/s | daskdca / LIBLINEAR 1 iter | "
          "daskdca / LIBLINEAR marginal |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (fname, d) in DATASETS.items():
        X, y = load_svmlight_file(str(Path(args.data_dir) / fname), n_features=d)
        X = sp.csr_matrix(X)
        X.sort_indices()
        y = np.where(y == np.unique(y)[1], 1.0, -1.0)
        nnz = X.nnz
        for loss in ("hinge", "logistic"):
            ours, gather = bench_daskdca(X, y, args.lam, args.repeats, loss)
            ll_one, ll_marg = bench_liblinear(X, y, args.lam, args.repeats, loss)
            mo, mo_lo, mo_hi = _median_min_max([nnz / t / 1e6 for t in ours])
            mg, _, _ = _median_min_max([nnz / t / 1e6 for t in gather])
            l1, l1_lo, l1_hi = _median_min_max([nnz / t / 1e6 for t in ll_one])
            lm, _, _ = _median_min_max([nnz / t / 1e6 for t in ll_marg if t > 0])
            note = " (shrinks)" if loss == "hinge" else ""
            print(f"| {name} | {loss} | {nnz:,} | {mo:.0f} ({mo_lo:.0f}-{mo_hi:.0f}) | {mg:.0f} | "
                  f"{mo / mg:.2f} | {l1:.0f} ({l1_lo:.0f}-{l1_hi:.0f}) | {lm:.0f}{note} | {mo / l1:.1f}x | "
                  f"{mo / lm:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
