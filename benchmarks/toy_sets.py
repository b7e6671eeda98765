"""The default estimators on scikit-learn's toy sets against LIBLINEAR and lbfgs, with and without the round's passes.

Usage::

    python benchmarks/toy_sets.py [--reps 5]

For iris, wine, breast cancer and digits (as loaded, and standardised), and
the losses hinge, squared hinge and logistic: ``SDCAClassifier(loss=loss)``
at its defaults (``C=1``, ``tol=1e-6`` on the certified relative gap,
``max_iter=1000`` passes), as it runs now (serial SDCA on small data takes
:func:`daskdca.routes.round_passes` passes a round) and with one pass a round
(:data:`daskdca.routes.ROUND_MIN_VALUES` set to 0: the code before, bit for
bit), against ``LinearSVC(loss=loss, dual=True)`` (hinge losses) or
``LogisticRegression()`` (lbfgs) at their defaults, all in this process and
best of ``--reps``.  Reported: seconds, the iterations each ran (daskdca's
rounds; the peers' ``n_iter_``), whether daskdca certified ``tol`` on every
problem, and the ratios.  The peers stop on their own criteria (LIBLINEAR's
projected gradient at ``tol=1e-4``, lbfgs's gradient), so a peer at its
``max_iter`` has not converged either; this compares the default calls a
user makes, not equal accuracy.  This measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import daskdca
import daskdca.routes as routes
from hinge_vs_liblinear import best_of  # benchmarks/hinge_vs_liblinear.py

LOADERS = {"iris": load_iris, "wine": load_wine, "breast cancer": load_breast_cancer, "digits": load_digits}
LOSSES = ("hinge", "squared_hinge", "logistic")


def daskdca_fit(X, y, loss, min_values, reps):
    saved = routes.ROUND_MIN_VALUES
    routes.ROUND_MIN_VALUES = min_values
    try:
        return best_of(reps, lambda: daskdca.SDCAClassifier(loss=loss).fit(X, y))
    finally:
        routes.ROUND_MIN_VALUES = saved


def peer_fit(X, y, loss, reps):
    if loss == "logistic":
        return best_of(reps, lambda: LogisticRegression().fit(X, y))
    return best_of(reps, lambda: LinearSVC(loss=loss, dual=True).fit(X, y))


def certified(model):
    return bool(np.all(np.asarray(model.gap_) <= model.tol * np.abs(np.asarray(model.primal_))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"daskdca {daskdca.__version__}, ROUND_MIN_VALUES = {routes.ROUND_MIN_VALUES:,}; best of {args.reps}")
    print("| data | loss | route now | now: s (iterations, certified) | one pass a round: s (iterations, certified) | "
          "peer: s (n_iter_) | now / before | now / peer | before / peer |")
    print("|---|---|---|---|---|---|---:|---:|---:|")
    for name, loader in LOADERS.items():
        X0, y = loader(return_X_y=True)
        for scaled, X in ((False, X0), (True, StandardScaler().fit_transform(X0))):
            label = f"{name} standardised" if scaled else name
            for loss in LOSSES:
                now_s, now = daskdca_fit(X, y, loss, routes.ROUND_MIN_VALUES, args.reps)
                before_s, before = daskdca_fit(X, y, loss, 0, args.reps)
                peer_s, peer = peer_fit(X, y, loss, args.reps)
                route = now.route_.solver + "".join(f", {k}={v}" for k, v in now.route_.options.items())
                print(f"| {label} | {loss} | {route} | {now_s:.4f} ({int(np.max(now.n_iter_))}, "
                      f"{'yes' if certified(now) else 'no'}) | {before_s:.4f} ({int(np.max(before.n_iter_))}, "
                      f"{'yes' if certified(before) else 'no'}) | {peer_s:.4f} ({int(np.max(peer.n_iter_))}) | "
                      f"{now_s / before_s:.2f} | {now_s / peer_s:.2f} | {before_s / peer_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
