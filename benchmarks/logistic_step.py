"""The SDCA sweep's logistic step against the exact 1-D solve: time to a certified gap, and one epoch.

Usage::

    python benchmarks/logistic_step.py [--data-dir ../shared/data] [--repeats 3]
        [--datasets a9a,w8a,ijcnn1] [--lams 1e-3,1e-4,1e-5,1e-6] [--skip-fit] [--skip-epoch]

Two parts, each run in one process with the variants interleaved (the
machine is shared, so only ratios taken side by side are compared):

* ``fit``: serial SDCA, ``daskdca.fit(X, y, loss="logistic", lam=lam,
  solver=SDCA(), n_partitions=1, tol=1e-6)``, with the sweep's step
  (``after``: :func:`daskdca.kernels.sdca.local_sdca` as it is) and with the
  exact step (``before``: ``local_sdca(..., exact_steps=True)`` put in
  :mod:`daskdca.methods.sdca`'s namespace for that run), alternating,
  ``repeats`` times each.  From ``history_``: the seconds (gap passes and
  driver included) and epochs at the first certified relative gap
  ``(P - D) / P`` at or below 1e-4 and 1e-6.
* ``epoch``: one epoch of ``local_sdca`` (a random permutation of all rows,
  lam = 1e-4, epochs 2..repeats+1 from zero, as in
  ``benchmarks/epoch_throughput.py``) with each step, and LIBLINEAR's dual
  logistic CD marginal pass (``(t(6 iters) - t(1 iter)) / 5`` through
  scikit-learn), interleaved per repeat.

Prints Markdown tables: medians, and the range of the per-repeat ratios.
This measures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import daskdca
import daskdca.methods.sdca as sdca_method
from daskdca.kernels.sampling import permutation_order
from daskdca.kernels.sdca import local_sdca
from daskdca.partitions import UNWEIGHTED

from epoch_throughput import DATASETS, liblinear_seconds  # noqa: E402  (run as a script: benchmarks/ is on sys.path)

TOLS = (1e-4, 1e-6)


def _exact_local_sdca(*args):
    """``local_sdca`` with the exact logistic step (the rule before 2026-11-26)."""
    return local_sdca(*args, True)


def _load(data_dir, name):
    from sklearn.datasets import load_svmlight_file

    fname, d = DATASETS[name]
    X, y = load_svmlight_file(str(Path(data_dir) / fname), n_features=d)
    X = sp.csr_matrix(X)
    X.sort_indices()
    return X, np.where(y == np.unique(y)[1], 1.0, -1.0)


def _fit_once(X, y, lam, exact):
    """Seconds and epochs to each tolerance of :data:`TOLS` (None if not reached) of one fit."""
    sdca_method.local_sdca = _exact_local_sdca if exact else local_sdca
    try:
        model = daskdca.fit(X, y, loss="logistic", lam=lam, solver=daskdca.SDCA(), n_partitions=1, tol=TOLS[-1],
                            max_rounds=3000)
    finally:
        sdca_method.local_sdca = local_sdca
    out = []
    for tol in TOLS:
        hit = next((r for r in model.history_ if r.gap <= tol * abs(r.primal)), None)
        out.append(None if hit is None else (hit.seconds, hit.epochs))
    return out


def _fmt_range(ratios):
    r = np.asarray(ratios)
    return f"{np.median(r):.2f} ({r.min():.2f}-{r.max():.2f})"


def fit_part(args):
    print("| data | lam | tol | before s | after s | before / after (range) | epochs before | epochs after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    warm = True
    for name in args.datasets.split(","):
        X, y = _load(args.data_dir, name)
        if warm:  # load both kernels from numba's cache outside the timings
            for exact in (True, False):
                _fit_once(X, y, 1e-2, exact)
            warm = False
        for lam in (float(v) for v in args.lams.split(",")):
            runs = {True: [], False: []}
            for rep in range(args.repeats):
                for exact in ((True, False) if rep % 2 == 0 else (False, True)):
                    runs[exact].append(_fit_once(X, y, lam, exact))
            for k, tol in enumerate(TOLS):
                before = [r[k] for r in runs[True]]
                after = [r[k] for r in runs[False]]
                if any(v is None for v in before + after):
                    print(f"| {name} | {lam:g} | {tol:g} | "
                          f"{'not reached' if any(v is None for v in before) else np.median([v[0] for v in before])}"
                          f" | {'not reached' if any(v is None for v in after) else np.median([v[0] for v in after])}"
                          " | - | - | - |", flush=True)
                    continue
                ratios = [b[0] / a[0] for b, a in zip(before, after)]
                print(f"| {name} | {lam:g} | {tol:g} | {np.median([v[0] for v in before]):.3f} | "
                      f"{np.median([v[0] for v in after]):.3f} | {_fmt_range(ratios)} | "
                      f"{np.median([v[1] for v in before]):.0f} | {np.median([v[1] for v in after]):.0f} |",
                      flush=True)


def epoch_part(args):
    lam = 1e-4
    print("| data | nnz | exact M nnz/s | sweep M nnz/s | LIBLINEAR marginal M nnz/s | sweep / exact (range) | "
          "exact / LIBLINEAR (range) | sweep / LIBLINEAR (range) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    kind = int(daskdca.losses.get_loss("logistic").kind)
    for name in DATASETS:
        X, y = _load(args.data_dir, name)
        n, d = X.shape
        sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        X32 = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
        state = {exact: (np.zeros(n), np.zeros(d)) for exact in (True, False)}
        times = {True: [], False: [], "ll": []}
        liblinear_seconds(X32, y, lam, "logistic", 1)  # warm-up
        for epoch in range(args.repeats + 1):
            order = permutation_order(0, epoch, 0, n, n, 0)
            for exact in (True, False):
                alpha, w = state[exact]
                t0 = time.perf_counter()
                local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0), order,
                           kind, 0.0, lam * n, 1.0, False, exact)
                if epoch > 0:
                    times[exact].append(time.perf_counter() - t0)
            if epoch > 0:
                t1 = liblinear_seconds(X32, y, lam, "logistic", 1)
                t6 = liblinear_seconds(X32, y, lam, "logistic", 6)
                times["ll"].append((t6 - t1) / 5)
        ex, sw, ll = (np.asarray(times[k]) for k in (True, False, "ll"))
        rate = lambda t: X.nnz / np.median(t) / 1e6  # noqa: E731
        print(f"| {name} | {X.nnz:,} | {rate(ex):.0f} | {rate(sw):.0f} | {rate(ll):.0f} | {_fmt_range(ex / sw)} | "
              f"{_fmt_range(ll / ex)} | {_fmt_range(ll / sw)} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--datasets", default="a9a,w8a,ijcnn1")
    parser.add_argument("--lams", default="1e-3,1e-4,1e-5,1e-6")
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--skip-epoch", action="store_true")
    args = parser.parse_args()
    import sklearn

    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"daskdca {daskdca.__version__}, {platform.processor() or platform.machine()}\n")
    if not args.skip_epoch:
        print(f"One epoch, lam = 1e-4, one core; median of {args.repeats} epochs, ratios > 1: the second is faster\n")
        epoch_part(args)
        print()
    if not args.skip_fit:
        print(f"Serial SDCA to a certified relative gap; median of {args.repeats} fits each\n")
        fit_part(args)


if __name__ == "__main__":
    main()
