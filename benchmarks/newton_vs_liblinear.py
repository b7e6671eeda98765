"""Time to a certified relative gap of 1e-6: primal Newton, SDCA and LIBLINEAR, where n >> d.

Usage::

    python benchmarks/newton_vs_liblinear.py [--data-dir ../shared/data] [--repeats 3] [--tol 1e-6]

For a9a (d = 123) and ijcnn1 (d = 22), logistic loss, ``C`` in {1, 100}
(``lam = 1/(C n)``, no intercept): ``daskdca.fit(solver="newton")`` and
``daskdca.fit(solver="sdca")`` with ``tol`` (each stops on its certified gap,
recomputed from its duals), and scikit-learn's
``LogisticRegression(solver="liblinear")`` (LIBLINEAR's primal trust-region
Newton) at the same ``tol``, whose stopping rule is a gradient norm, not a
gap: its column ``relP`` is ``(P_LL - P*)/P*`` with ``P*`` from a Newton fit
at ``tol=1e-12``.  Seconds are the median of ``--repeats`` runs after a
warm-up (numba compiled); the int32 copy LIBLINEAR needs is made outside the
timer.  Ratios: SDCA / Newton and Newton / LIBLINEAR.  This measures; it
asserts nothing.
"""

from __future__ import annotations

import argparse
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import daskdca

DATASETS = {"a9a": ("a9a.gz", 123), "ijcnn1": ("ijcnn1.bz2", 22)}


def _median_seconds(run, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def _primal(X, ys, w, lam):
    return float(np.mean(np.logaddexp(0.0, -ys * (X @ w))) + 0.5 * lam * w @ w)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-rounds", type=int, default=5000, help="SDCA's cap (epochs)")
    args = parser.parse_args()
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import LogisticRegression

    warnings.simplefilter("ignore")
    tol = args.tol
    print("| data | n x d | C | Newton s | rounds | SDCA s | epochs | LIBLINEAR s | LL relP | SDCA/Newton | "
          "Newton/LL |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (fname, d) in DATASETS.items():
        X, y = load_svmlight_file(str(Path(args.data_dir) / fname), n_features=d)
        X = sp.csr_matrix(X, dtype=np.float64)
        n = X.shape[0]
        ys = np.where(y == np.unique(y)[1], 1.0, -1.0)
        X32 = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
        for C in (1.0, 100.0):
            lam = 1.0 / (C * n)
            p_star = daskdca.fit(X, y, loss="logistic", lam=lam, solver="newton", tol=1e-12).primal_

            newton = partial(daskdca.fit, X, y, loss="logistic", lam=lam, solver="newton", tol=tol)
            sdca = partial(daskdca.fit, X, y, loss="logistic", lam=lam, solver="sdca", tol=tol,
                           max_rounds=args.max_rounds)
            liblinear = partial(LogisticRegression(solver="liblinear", C=C, tol=tol, max_iter=100_000,
                                                   fit_intercept=False, random_state=0).fit, X32, ys)
            newton(), liblinear()  # warm-up
            t_nt, m_nt = _median_seconds(newton, args.repeats)
            t_sd, m_sd = _median_seconds(sdca, args.repeats)
            t_ll, est = _median_seconds(liblinear, args.repeats)  # fit returns the estimator
            rel_ll = (_primal(X, ys, est.coef_.ravel(), lam) - p_star) / p_star
            sd_mark = "" if m_sd.converged_ else " (not certified)"
            nt_mark = "" if m_nt.converged_ else " (not certified)"
            print(f"| {name} | {n} x {d} | {C:g} | {t_nt:.3f}{nt_mark} | {m_nt.n_rounds_} | {t_sd:.3f}{sd_mark} | "
                  f"{m_sd.n_epochs_:.0f} | {t_ll:.3f} | {rel_ll:.1e} | {t_sd / t_nt:.1f} | {t_nt / t_ll:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
