"""Multinomial logistic regression on small problems: primal Newton against L-BFGS, and what the route picks.

Usage::

    python benchmarks/multinomial_newton.py [--reps 5]

For iris, wine and digits (as loaded and standardised) and digits cut to its
first 16 or 32 pixel columns or to its first 3 or 5 classes (which spans a
round's Hessian from 10^4 to 10^8 additions), the softmax problem with the
estimators' intercept column at ``C = 1`` (``lam = 1/n``), to a certified
relative gap of 1e-6 (at most 1,000 passes), by
``daskdca.fit(solver="multinomial_newton")`` and by
``solver="multinomial_lbfgs"``, and by ``LogisticRegression()`` at its
defaults (lbfgs, its own stop at ``tol=1e-4`` on the gradient, at most 100
iterations: not equal accuracy), all in this process, best of ``--reps``.
Reported: a round's Hessian additions (``sum_i nnz_i^2 K (K + 1) / 2``),
seconds, rounds and whether each certified, the route
:func:`daskdca.routes.choose_multinomial_route` picks and the ratio of the
picked one's time to the faster certified one.  This measures; it asserts
nothing.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

import daskdca
from daskdca.routes import MULTINOMIAL_NEWTON_MAX_WORK, choose_multinomial_route
from hinge_vs_liblinear import best_of  # benchmarks/hinge_vs_liblinear.py

TOL = 1e-6


def problems():
    """``(name, X, y)``: the sets as loaded and standardised, and cuts of digits."""
    for name, loader in (("iris", load_iris), ("wine", load_wine), ("digits", load_digits)):
        X, y = loader(return_X_y=True)
        yield name, X, y
        yield f"{name} standardised", StandardScaler().fit_transform(X), y
    X, y = load_digits(return_X_y=True)
    for cols in (16, 32):
        yield f"digits, first {cols} pixels", X[:, :cols], y
    for classes in (3, 5):
        keep = y < classes
        yield f"digits, classes 0-{classes - 1}", X[keep], y[keep]


def fit(X, y, solver, reps):
    n = X.shape[0]
    return best_of(reps, lambda: daskdca.fit(X, y, loss="logistic", lam=1.0 / n, tol=TOL, solver=solver,
                                             max_epochs=1000))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"daskdca {daskdca.__version__}, MULTINOMIAL_NEWTON_MAX_WORK = {MULTINOMIAL_NEWTON_MAX_WORK:,}; "
          f"best of {args.reps}")
    print("| data | K d | Hessian additions a round | Newton: s (rounds, certified) | L-BFGS: s (rounds, certified) "
          "| LogisticRegression: s (n_iter_) | route picks | picked / faster certified |")
    print("|---|---:|---:|---|---|---|---|---:|")
    for name, X, y in problems():
        X = sp.csr_matrix(np.hstack([X, np.ones((X.shape[0], 1))]))  # the estimators' intercept column
        n, d = X.shape
        K = np.unique(y).size
        counts = np.diff(X.indptr).astype(np.int64)
        route = choose_multinomial_route(on_cluster=False, n=n, d=d, lam=1.0 / n, n_classes=K,
                                         squared_row_nnz=int(counts @ counts))
        work = int(counts @ counts) * K * (K + 1) // 2
        runs = {solver: fit(X, y, solver, args.reps) for solver in ("multinomial_newton", "multinomial_lbfgs")}
        peer_s, peer = best_of(args.reps, lambda: LogisticRegression().fit(X[:, :-1], y))
        cells = {s: f"{t:.4f} ({m.n_rounds_}, {'yes' if m.converged_ else 'no'})" for s, (t, m) in runs.items()}
        done = [t for t, m in runs.values() if m.converged_]
        picked = runs[route.solver][0]
        ratio = f"{picked / min(done):.2f}" if done and runs[route.solver][1].converged_ else "not certified"
        print(f"| {name} | {K * d} | {work:,} | {cells['multinomial_newton']} | {cells['multinomial_lbfgs']} | "
              f"{peer_s:.4f} ({int(np.max(peer.n_iter_))}) | {route.solver.replace('multinomial_', '')} | {ratio} |")


if __name__ == "__main__":
    main()
