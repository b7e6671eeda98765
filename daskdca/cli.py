"""Command line: ``daskdca fit [DATA] ...``.

``daskdca fit`` with no file fits scikit-learn's bundled breast-cancer data
(standardised, and the command says so); with a path it reads an svmlight /
LIBSVM file (plain, .gz or .bz2) with scikit-learn's parser.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from daskdca.api import fit
from daskdca.losses import LOSSES
from daskdca.solvers import SOLVERS


def _load(path, n_features):
    if path is None:
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        print("data: scikit-learn breast cancer (569 x 30), each column standardised to mean 0, std 1")
        return X, y
    from sklearn.datasets import load_svmlight_file

    try:
        X, y = load_svmlight_file(path, n_features=n_features)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"daskdca: cannot read {path!r} as svmlight/LIBSVM: {exc}") from exc
    print(f"data: {path} ({X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros)")
    return X, y


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def build_parser():
    parser = argparse.ArgumentParser(
        prog="daskdca",
        description="L2-regularised linear models by stochastic dual coordinate ascent, "
                    "certified by the duality gap.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "fit",
        help="fit a model and print primal, dual and gap per round",
        description="Minimise P(w) = 1/n sum_i loss(y_i, x_i.w) + lam/2 ||w||^2 and print "
                    "primal, dual and duality gap after every round.",
    )
    p.add_argument("data", nargs="?", default=None,
                   help="svmlight/LIBSVM file (.gz/.bz2 ok); default: scikit-learn's breast-cancer set")
    p.add_argument("--n-features", type=int, default=None,
                   help="number of features of the file (default: largest index seen)")
    p.add_argument("--loss", choices=sorted(LOSSES), default="hinge", help="loss (default: hinge)")
    p.add_argument("--lam", type=_positive_float, default=1e-4,
                   help="regularisation lam > 0; LIBLINEAR's C = 1/(lam n) (default: 1e-4)")
    p.add_argument("--solver", choices=sorted(SOLVERS), default="sdca", help="solver (default: sdca)")
    p.add_argument("--tol", type=float, default=1e-6,
                   help="stop when (P - D) <= tol |P| (default: 1e-6)")
    p.add_argument("--max-rounds", type=int, default=1000, help="round limit (default: 1000)")
    p.add_argument("--batch-size", type=int, default=None, help="rows per mini-batch (minibatch_sdca)")
    p.add_argument("--local-iters", type=float, default=1.0,
                   help="passes over each partition per round (default: 1.0)")
    p.add_argument("--n-partitions", type=int, default=None, help="row partitions (cocoa+, minibatch_sdca)")
    p.add_argument("--random-state", type=int, default=0, help="seed of all random streams (default: 0)")
    p.add_argument("--quiet", action="store_true", help="print the summary only")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    X, y = _load(args.data, args.n_features)
    try:
        model = fit(X, y, loss=args.loss, lam=args.lam, solver=args.solver, tol=args.tol,
                    max_rounds=args.max_rounds, batch_size=args.batch_size, local_iters=args.local_iters,
                    n_partitions=args.n_partitions, random_state=args.random_state,
                    verbose=0 if args.quiet else 1)
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"daskdca: {exc}") from exc
    rel = model.gap_ / abs(model.primal_) if model.primal_ else float("inf")
    print(f"{'converged' if model.converged_ else 'NOT converged'} after {model.n_rounds_} rounds "
          f"({model.n_epochs_:.1f} epochs, {model.history_[-1].seconds:.2f} s): "
          f"primal {model.primal_:.10g}  dual {model.dual_:.10g}  relative gap {rel:.2e}")
    if model.classes_ is not None:
        print(f"training accuracy {np.mean(model.predict(X) == y):.4f}")
    return 0 if model.converged_ else 1


if __name__ == "__main__":
    sys.exit(main())
