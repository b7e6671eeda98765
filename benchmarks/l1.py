"""Pure L1 against LIBLINEAR and saga: seconds to the same objective accuracy, side by side.

The problem is ``P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1`` with ``lam = 1/(C n)`` and no intercept
(scikit-learn minimises ``C sum_i phi_i + ||w||_1 = C n P1``, so both rank models alike; every objective
here is ``P1``, computed from each estimator's ``coef_`` by the same code).  For each data set (a9a, w8a,
rcv1_1k through ``tests/conftest.py::load_dataset``), logistic loss at ``C`` in {0.1, 1} and squared hinge at
``C = 0.1``:

1. a reference ``P*``: the smaller ``P1`` of ``LogisticRegression(penalty="l1", solver="liblinear")`` (or
   ``LinearSVC(penalty="l1", loss="squared_hinge", dual=False)``) at ``tol=1e-10``, ``max_iter=100000``
   (dropped when it runs past ``--ref-cap``, 20, seconds) and ``SDCAClassifier(penalty="l1", tol=1e-9)``,
   whose dual point certifies how far ``P*`` can be above the true minimum (column "P* within");
2. each peer (liblinear, and saga for logistic) is fitted at ``tol`` = 1e-1, 1e-2, ..., 1e-10 in turn
   until its ``P1`` is within ``--target`` (1e-6) relative of ``P*``; that tol's fit is then timed
   (median of ``--repeats`` after a warm-up).  A ladder fit runs in a forked child killed after ``--cap``
   seconds (the cell then reads '>60 s'); the timed repeats run in this process;
3. ``SDCAClassifier(penalty="l1", tol=1e-6)`` (stops on its certified relative gap) is timed the same way
   and its ``(P - P*)/P*`` reported.

Reported per peer: seconds, daskdca / peer, daskdca's own certified relative gap and epochs, ``(P - P*)/P*``
and nonzero coefficients of each.  It measures and asserts nothing.

Run: ``python benchmarks/l1.py [--sets a9a,w8a,rcv1_1k] [--repeats 3] [--cap 60]``.  Results:
benchmarks/RESULTS.md, "Pure L1 against LIBLINEAR and saga".
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

import daskdca  # noqa: E402

from conftest import load_dataset  # noqa: E402

LADDER = [10.0 ** -k for k in range(1, 11)]
PROBLEMS = (("logistic", 0.1), ("logistic", 1.0), ("squared_hinge", 0.1))


def objective(X, y, w, lam, loss):
    """``P1(w)`` with ``y`` in {-1, +1}."""
    margin = y * (X @ w)
    data = np.logaddexp(0.0, -margin) if loss == "logistic" else np.maximum(0.0, 1.0 - margin) ** 2
    return float(data.mean() + lam * np.abs(w).sum())


def peer(name, loss, C, tol, max_iter=100_000):
    if name == "liblinear" and loss == "logistic":
        return LogisticRegression(penalty="l1", solver="liblinear", C=C, fit_intercept=False, tol=tol,
                                  max_iter=max_iter, random_state=0)
    if name == "saga":
        return LogisticRegression(penalty="l1", solver="saga", C=C, fit_intercept=False, tol=tol,
                                  max_iter=max_iter, random_state=0)
    return LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=C, fit_intercept=False, tol=tol,
                     max_iter=max_iter, random_state=0)


def ours(loss, C, tol):
    return daskdca.SDCAClassifier(loss=loss, penalty="l1", C=C, tol=tol, fit_intercept=False)


def fit_coef(estimator, X, y):
    """Seconds of one fit and the coefficients for the class ``+1``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        estimator.fit(X, y)
        seconds = time.perf_counter() - start
    w = np.asarray(estimator.coef_, dtype=float).ravel()
    return seconds, (w if estimator.classes_[1] == 1 else -w), estimator


def _child(conn, make, X, y):
    seconds, w, _ = fit_coef(make(), X, y)
    conn.send((seconds, w))
    conn.close()


def capped_fit(make, X, y, cap):
    """``(seconds, coef)`` of one fit in a forked child, or None when it runs past ``cap`` seconds."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, make, X, y))
    proc.start()
    child.close()
    result = parent.recv() if parent.poll(cap) else None
    if result is None:
        proc.kill()
    proc.join()
    return result


def timed(make, X, y, repeats):
    """Median seconds of ``repeats`` fits after a warm-up, and the last fit's coefficients and estimator."""
    fit_coef(make(), X, y)
    runs = [fit_coef(make(), X, y) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), runs[-1][1], runs[-1][2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="a9a,w8a,rcv1_1k")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0, help="seconds a ladder fit may take")
    parser.add_argument("--ref-cap", type=float, default=20.0, help="seconds the liblinear reference may take")
    parser.add_argument("--target", type=float, default=1e-6, help="relative accuracy a peer must reach")
    args = parser.parse_args()
    rows = []
    for name in args.sets.split(","):
        X, y = load_dataset(name)
        X = X.copy()
        X.indices, X.indptr = X.indices.astype("int32"), X.indptr.astype("int32")  # liblinear's 32-bit indices
        y = np.where(y > 0, 1.0, -1.0)
        n = X.shape[0]
        for loss, C in PROBLEMS:
            lam = 1.0 / (C * n)
            _, w_ref, model = fit_coef(ours(loss, C, 1e-9), X, y)  # also compiles the kernels
            candidates = [objective(X, y, w_ref, lam, loss)]
            ref = capped_fit(lambda: peer("liblinear", loss, C, 1e-10), X, y, args.ref_cap)
            if ref is not None:
                candidates.append(objective(X, y, ref[1], lam, loss))
            p_star = min(candidates)
            source = "daskdca" if ref is None or candidates[0] <= candidates[1] else "liblinear"
            source += "" if ref is not None else " (liblinear ref >{:g} s)".format(args.ref_cap)
            gap = (p_star - float(np.ravel(model.dual_)[0])) / p_star  # P* - min P1 <= P* - D1(beta)
            certified = f"{gap:.1e}, from {source}"
            t_ours, w_ours, fitted = timed(lambda: ours(loss, C, 1e-6), X, y, args.repeats)
            gap_ours = float(np.ravel(fitted.gap_)[0]) / abs(float(np.ravel(fitted.primal_)[0]))
            t_ours = (t_ours, f"{gap_ours:.1e} ({int(np.ravel(fitted.n_iter_)[0])})")
            rel_ours = (objective(X, y, w_ours, lam, loss) - p_star) / p_star
            nnz_ours = int(np.count_nonzero(w_ours))
            if nnz_ours == 0:
                print(f"{name} {loss} C={C:g}: w = 0 is optimal (lam >= lam_max); skipped", flush=True)
                rows.append((name, loss, C, certified, t_ours, rel_ours, nnz_ours, "(w = 0 optimal)", "-", None,
                             None, None))
                continue
            for peer_name in ("liblinear", "saga") if loss == "logistic" else ("liblinear",):
                found, outcome = None, ">60 s" if args.cap == 60 else f">{args.cap:g} s"
                for tol in LADDER:
                    res = capped_fit(lambda: peer(peer_name, loss, C, tol), X, y, args.cap)
                    if res is None:
                        outcome = f"{outcome} at tol {tol:g}"
                        break
                    if (objective(X, y, res[1], lam, loss) - p_star) / p_star <= args.target:
                        found = tol
                        break
                else:
                    outcome = "not reached at 1e-10"
                if found is None:
                    rows.append((name, loss, C, certified, t_ours, rel_ours, nnz_ours, peer_name, outcome, None,
                                 None, None))
                else:
                    t_peer, w_peer, _ = timed(lambda: peer(peer_name, loss, C, found), X, y, args.repeats)
                    rows.append((name, loss, C, certified, t_ours, rel_ours, nnz_ours, peer_name, f"{found:g}",
                                 t_peer, (objective(X, y, w_peer, lam, loss) - p_star) / p_star,
                                 int(np.count_nonzero(w_peer))))
                print(rows[-1], flush=True)
    print()
    print("| data | loss | C | P* within (certified), from | daskdca s (tol 1e-6) | daskdca gap/P (epochs) | "
          "daskdca (P-P*)/P* | daskdca nnz | "
          "peer | peer tol | peer s | daskdca / peer | peer (P-P*)/P* | peer nnz |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for name, loss, C, cert, (t_o, gap_o), rel_o, nnz_o, pname, ptol, t_p, rel_p, nnz_p in rows:
        peer_cells = ("-", "-", "-", "-") if t_p is None else (f"{t_p:.3f}", f"{t_o / t_p:.2f}", f"{rel_p:.1e}",
                                                              str(nnz_p))
        print(f"| {name} | {loss} | {C:g} | {cert} | {t_o:.3f} | {gap_o} | {rel_o:.1e} | {nnz_o} | {pname} | {ptol} | "
              + " | ".join(peer_cells) + " |")


if __name__ == "__main__":
    main()
