"""Multinomial logistic regression: ``SDCAClassifier``'s default against scikit-learn's lbfgs and saga.

Measures the seconds each solver takes to fit the same multinomial (softmax) logistic problem to the same
relative accuracy of its objective, no intercept in any of them:

``P(W) = 1/n sum_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2`` with ``lam = 1/(C n)``;
scikit-learn's ``LogisticRegression`` minimises ``C sum_i loss_i + 1/2 ||W||_F^2 = C n P(W)``, so ``C`` is
the same number in both.

- daskdca: ``SDCAClassifier(loss="logistic", C=C, fit_intercept=False, tol=--target)``, its default
  ``multi_class="auto"`` (the multinomial problem here, checked through ``multi_class_``) and
  ``solver="auto"`` (primal L-BFGS where the route takes it, else multinomial SDCA: the row names
  ``route_.solver``), which stops at a certified relative duality gap ``P - D <= target * P``, so
  ``P - P* <= target * P``.  ``--with-sdca`` adds a row for ``solver="sdca"`` (multinomial SDCA, the
  default before the L-BFGS route), its ratio also daskdca's default over it.
- ``LogisticRegression(solver="lbfgs")`` and ``LogisticRegression(solver="saga")`` (``C``,
  ``fit_intercept=False``, ``max_iter`` large): their own stopping rules say nothing about ``P``, so each
  takes the first ``tol`` of the ladder ``1e-2, 1e-3, ..., 1e-12`` whose ``P(W)`` is within ``target * P_ref``
  of the reference ``P_ref`` (the smaller of an untimed lbfgs fit at ``tol=1e-14`` and daskdca's fit;
  daskdca's certified dual ``D`` bounds ``P*`` from below, and the table shows ``P_ref - D``).  A solver
  that reaches no rung (or stops at its epoch cap) is reported with its last rung and marked.

Epoch caps (``--max-epochs``; by default none on digits, 1,000 passes over the data for daskdca and saga
on the generated set; it was 60 while the default was multinomial SDCA, whose 1e-6 there takes about 10
minutes a fit at ``C=1`` and hours at ``C=100`` on the machine of benchmarks/RESULTS.md, so pass
``--max-epochs 60`` with ``--with-sdca``): a capped fit is marked "target not reached", and its
``P - P_best`` column says how far it got.  One untimed daskdca fit on a few rows first compiles
the numba kernels.

Every timed fit runs ``--reps`` times (the ladder's fit at the chosen ``tol`` is the first), median
reported, in this one process, with BLAS limited to ``--blas-threads`` threads (1 by default: daskdca's
serial SDCA runs on one core, and so does each peer).  The table gives, per data set and ``C``, each
solver's median seconds, its ratio (daskdca seconds / peer seconds), and its final objective minus the
best objective seen in that row's fits, relative to it, so that the accuracies compared are visible.

Data (no network): digits (1,797 x 64, 10 classes, scaled by 1/16 as in the test suite) and
``make_classification(n_samples=200_000, n_features=50, n_informative=30, n_classes=5, random_state=0)``.

Usage::

    python benchmarks/multinomial.py [--data digits,generated] [--Cs 1,100] [--reps 3] [--target 1e-6] [--with-sdca]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np

LADDER = tuple(10.0 ** -k for k in range(2, 13))
#: passes over the data that daskdca and saga may take, per data set (--max-epochs overrides)
MAX_EPOCHS = {"digits": 100_000, "generated": 1000}


def load(name):
    from sklearn.datasets import load_digits, make_classification

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X / 16.0, y
    if name == "generated":
        return make_classification(n_samples=200_000, n_features=50, n_informative=30, n_classes=5,
                                   random_state=0)
    raise ValueError(f"unknown data set {name!r}: digits or generated")


def objective(X, index, W, lam):
    """``P(W)`` above (labels as class indices)."""
    Z = X @ W.T
    top = Z.max(axis=1)
    loss = top + np.log(np.exp(Z - top[:, None]).sum(axis=1)) - Z[np.arange(X.shape[0]), index]
    return float(loss.mean() + lam / 2 * (W ** 2).sum())


def timed(fit):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs / saga's ConvergenceWarning: their objective is what is judged
        model = fit()
    return time.perf_counter() - start, model


def daskdca_fit(X, y, C, target, reps, max_epochs, solver="auto"):
    from daskdca import SDCAClassifier

    runs = [timed(lambda: SDCAClassifier(loss="logistic", C=C, fit_intercept=False, tol=target,
                                         max_iter=max_epochs, solver=solver).fit(X, y)) for _ in range(reps)]
    model = runs[-1][1]
    assert model.multi_class_ == "multinomial", model.multi_class_  # the default ran the softmax problem
    return statistics.median(t for t, _ in runs), model


def sklearn_model(solver, C, tol, max_epochs):
    from sklearn.linear_model import LogisticRegression

    max_iter = 100_000 if solver == "lbfgs" else max_epochs  # saga's iterations are epochs
    return LogisticRegression(solver=solver, C=C, fit_intercept=False, tol=tol, max_iter=max_iter, random_state=0)


def ladder_fit(X, y, index, lam, C, solver, p_ref, target, reps, max_epochs):
    """``(median seconds, setting, P, reached)``: the first ``tol`` of the ladder within ``target`` of ``p_ref``
    (or the last one tried: the ladder's end, or a fit stopped by its iteration cap)."""
    for tol in LADDER:
        seconds, model = timed(lambda: sklearn_model(solver, C, tol, max_epochs).fit(X, y))
        p = objective(X, index, model.coef_, lam)
        reached = p <= p_ref * (1 + target)
        capped = int(np.max(model.n_iter_)) >= sklearn_model(solver, C, tol, max_epochs).max_iter
        if reached or capped or tol == LADDER[-1]:
            times = [seconds] + [timed(lambda: sklearn_model(solver, C, tol, max_epochs).fit(X, y))[0]
                                 for _ in range(reps - 1)]
            setting = f"tol={tol:g}, {int(np.max(model.n_iter_))} iterations" + (" (cap)" if capped else "")
            return statistics.median(times), setting, p, reached
    raise AssertionError("unreachable")


def run(name, C, args):
    X, y = load(name)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    lam = 1.0 / (C * n)
    classes = np.unique(y)
    index = np.searchsorted(classes, y)
    max_epochs = args.max_epochs or MAX_EPOCHS[name]
    _, reference = timed(lambda: sklearn_model("lbfgs", C, 1e-14, max_epochs).fit(X, y))
    p_lbfgs_tight = objective(X, index, reference.coef_, lam)
    t_ours, ours = daskdca_fit(X, y, C, args.target, args.reps, max_epochs)
    p_ours = objective(X, index, ours.coef_, lam)
    dual = float(ours.dual_[0])
    p_ref = min(p_lbfgs_tight, p_ours)
    epochs = int(ours.n_iter_[0])
    solver_name = {"multinomial_lbfgs": "primal L-BFGS", "multinomial": "multinomial SDCA"}.get(
        ours.route_.solver, ours.route_.solver)
    rows = [(f"daskdca default ({solver_name})", t_ours,
             f"tol={args.target:g}, {epochs} passes" + (" (cap)" if not ours.converged_[0] else ""), p_ours,
             bool(ours.converged_[0]))]
    if args.with_sdca:  # the explicit multinomial SDCA (the default before the L-BFGS route)
        t_sdca, sdca = daskdca_fit(X, y, C, args.target, args.reps, max_epochs, solver="sdca")
        rows.append(("daskdca solver='sdca' (multinomial SDCA)", t_sdca,
                     f"tol={args.target:g}, {int(sdca.n_iter_[0])} epochs" + (" (cap)" if not sdca.converged_[0]
                                                                              else ""),
                     objective(X, index, sdca.coef_, lam), bool(sdca.converged_[0])))
    for solver in args.peers.split(","):
        seconds, setting, p, reached = ladder_fit(X, y, index, lam, C, solver, p_ref, args.target, args.reps,
                                                  max_epochs)
        rows.append((f"LogisticRegression({solver})", seconds, setting, p, reached))
    best = min([p_lbfgs_tight] + [r[3] for r in rows])
    print(f"\n{name} ({n} x {X.shape[1]}, {classes.shape[0]} classes), C={C:g} (lam={lam:.3g}, lam n={lam * n:g}): "
          f"best P = {best:.12g}; daskdca's certified D = {dual:.12g} (best P - D = {(best - dual) / best:.1e}, "
          "relative)", file=sys.stderr)
    lines = []
    for label, seconds, setting, p, reached in rows:
        ratio = "-" if label.startswith("daskdca default") else f"{t_ours / seconds:.2f}"
        mark = "" if reached else " (target not reached)"
        lines.append(f"| {name} | {C:g} | {label} | {setting}{mark} | {seconds:.3f} | {ratio} | "
                     f"{(p - best) / best:.1e} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="digits,generated", help="comma-separated: digits, generated")
    parser.add_argument("--Cs", default="1,100", help="comma-separated C values (lam = 1/(C n))")
    parser.add_argument("--peers", default="lbfgs,saga", help="LogisticRegression solvers to compare")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--target", type=float, default=1e-6,
                        help="relative accuracy of the objective every solver must reach")
    parser.add_argument("--max-epochs", type=int, default=0,
                        help="passes over the data for daskdca and saga (0: the per-data default, MAX_EPOCHS)")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--with-sdca", action="store_true",
                        help="also time solver='sdca' (multinomial SDCA, the default before the L-BFGS route)")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from daskdca import SDCAClassifier

    X, y = load("digits")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SDCAClassifier(loss="logistic", max_iter=2).fit(X[:300], y[:300])  # compiles the kernels, untimed

    header = ["| data | C | solver | setting | seconds (median) | daskdca / peer | (P - P_best) / P_best |",
              "|---|---:|---|---|---:|---:|---:|"]
    lines = []
    with threadpool_limits(limits=args.blas_threads):
        for name in args.data.split(","):
            for C in (float(c) for c in args.Cs.split(",")):
                lines += run(name, C, args)
                sys.stderr.flush()
    print("\n".join(header + lines))


if __name__ == "__main__":
    main()
