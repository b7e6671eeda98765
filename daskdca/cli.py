"""Command line: ``daskdca fit``, ``daskdca convert``, ``daskdca make-data``.

``daskdca fit`` with no file fits scikit-learn's bundled breast-cancer data
(standardised, and the command says so); with a path it reads an svmlight /
LIBSVM file (plain, .gz or .bz2) with scikit-learn's parser.

Every user error (a bad option, a missing file or store, an existing output,
bad data) prints one line ``daskdca: error: <message>`` on stderr and exits
with status 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

from daskdca.api import fit
from daskdca.losses import LOSSES
from daskdca.methods import REGISTRY as SOLVERS
from daskdca.store import DEFAULT_BLOCK_ROWS, DEFAULT_CHUNK_BYTES


# Exceptions that are the user's to fix: one line and exit status 2.
USER_ERRORS = (ValueError, TypeError, OSError)
EXIT_USAGE = 2


class UsageError(Exception):
    """A command-line error found by the parser (bad option or value)."""


class _Parser(argparse.ArgumentParser):
    """argparse with errors raised, so that ``main`` prints them as one line."""

    def error(self, message):
        raise UsageError(f"{self.prog.replace('daskdca ', '', 1) + ': ' if ' ' in self.prog else ''}{message}")


def _load(path, n_features):
    if path is None:
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        print("data: scikit-learn breast cancer (569 x 30), each column standardised to mean 0, std 1")
        return X, y
    from sklearn.datasets import load_svmlight_file

    if not os.path.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist.")
    try:
        X, y = load_svmlight_file(path, n_features=n_features)
    except (OSError, ValueError, OverflowError, EOFError) as exc:
        raise ValueError(f"cannot read {path!r} as svmlight/LIBSVM: {type(exc).__name__}: {exc}") from exc
    if X.shape[0] == 0:
        raise ValueError(f"{path}: no rows (the file is empty or holds only comments).")
    print(f"data: {path} ({X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros)")
    return X, y


def _looks_like_store(path):
    """A zarr group (a directory with zarr.json, or a URL) rather than a text file."""
    return "://" in path or os.path.isdir(path)


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _int_at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text}")
        return value

    parse.__name__ = f"int >= {low}"
    return parse


def _add_common_options(parser):
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")


def _add_store_options(parser):
    """Options shared by the subcommands that write a store."""
    parser.add_argument("--block-rows", type=_int_at_least(1), default=DEFAULT_BLOCK_ROWS,
                        help=f"rows per block, i.e. per partition (default: {DEFAULT_BLOCK_ROWS})")
    parser.add_argument("--float32", action="store_true", help="store values as float32")
    parser.add_argument("--compression", default="zstd", help="'zstd' (level 3), 'zstd:LEVEL' or 'none'")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing daskdca store at the output path (other folders are never "
                             "replaced); the old store stays intact until the new one is complete")
    _add_common_options(parser)


def build_parser():
    parser = _Parser(
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
                   help="svmlight/LIBSVM file (.gz/.bz2 ok) or a daskdca store (directory or URL); "
                        "default: scikit-learn's breast-cancer set")
    p.add_argument("--workers", type=int, default=None,
                   help="fit on a LocalCluster with this many worker processes (a store always runs on a "
                        "cluster: with no --workers, fit starts one sized to the machine); "
                        "0 fits in memory (default for arrays and files)")
    p.add_argument("--n-features", type=int, default=None,
                   help="number of features of the file (default: largest index seen)")
    p.add_argument("--loss", choices=sorted(LOSSES), default="hinge", help="loss (default: hinge)")
    p.add_argument("--lam", type=_positive_float, default=1e-4,
                   help="regularisation lam > 0; LIBLINEAR's C = 1/(lam n) (default: 1e-4)")
    p.add_argument("--solver", choices=sorted(SOLVERS), default=None,
                   help="solver (default: sdca in memory, cocoa+ on a cluster)")
    p.add_argument("--tol", type=float, default=1e-6,
                   help="stop when (P - D) <= tol |P| (default: 1e-6)")
    p.add_argument("--max-rounds", type=int, default=1000, help="round limit (default: 1000)")
    p.add_argument("--batch-size", type=int, default=None, help="rows per mini-batch (minibatch_sdca)")
    p.add_argument("--local-iters", type=float, default=1.0,
                   help="passes over each partition per round (default: 1.0)")
    p.add_argument("--n-partitions", type=int, default=None, help="row partitions (cocoa+, minibatch_sdca)")
    p.add_argument("--random-state", type=int, default=0, help="seed of all random streams (default: 0)")
    p.add_argument("--quiet", action="store_true", help="print the summary only")
    _add_common_options(p)

    c = sub.add_parser(
        "convert",
        help="convert an svmlight/LIBSVM file into a daskdca zarr store (streaming)",
        description="Convert an svmlight/LIBSVM file (plain, .gz or .bz2) into a zarr store of CSR row "
                    "blocks, streaming: memory is bounded by --chunk-mb of text and one block.",
    )
    c.add_argument("input", help="svmlight/LIBSVM file")
    c.add_argument("output", help="store path or fsspec URL (must not exist; --overwrite replaces a store)")
    c.add_argument("--n-features", type=_int_at_least(1), default=None,
                   help="number of features (default: the largest index in the file)")
    c.add_argument("--zero-based", choices=["auto", "true", "false"], default="auto",
                   help="index base, as scikit-learn's loader: 'auto' is one-based unless an index 0 occurs")
    c.add_argument("--chunk-mb", type=_positive_float, default=DEFAULT_CHUNK_BYTES / 2**20,
                   help="text parsed per call, in MiB (default: %(default)s)")
    c.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="store the rows in a seeded uniform random order, out of core (default: on; real files "
                        "are often sorted by label, which slows distributed solvers; --no-shuffle keeps the "
                        "file's order and writes the rows once instead of twice)")
    c.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the shuffle (default: 0)")
    c.add_argument("--renumber-features", action="store_true",
                   help="number features by decreasing frequency (the permutation is stored)")
    _add_store_options(c)

    m = sub.add_parser(
        "make-data",
        help="write a synthetic store block by block (any size)",
        description="Write synthetic classification or regression data straight into a store, one block "
                    "at a time (memory: one block plus O(features)). See daskdca.datasets.",
    )
    m.add_argument("output", help="store path or fsspec URL (must not exist; --overwrite replaces a store)")
    m.add_argument("--rows", type=_int_at_least(1), required=True, help="number of rows")
    m.add_argument("--features", type=_int_at_least(1), required=True, help="number of features")
    m.add_argument("--task", choices=["classification", "regression"], default="classification")
    m.add_argument("--nnz-per-row", type=float, default=50.0, help="mean non-zeros per row (default: 50)")
    m.add_argument("--zipf", type=float, default=1.1,
                   help="Zipf exponent of feature popularity; 0 is uniform (default: 1.1)")
    m.add_argument("--row-norm-spread", type=float, default=0.0,
                   help="log-normal spread of row norms; 0 gives unit rows (default: 0)")
    m.add_argument("--correlation", type=float, default=0.0,
                   help="share of rows that copy a prototype row (default: 0)")
    m.add_argument("--label-noise", type=float, default=0.05, help="flipped labels (classification)")
    m.add_argument("--noise", type=float, default=0.1, help="target noise std (regression)")
    m.add_argument("--seed", type=_int_at_least(0), default=0, help="seed (default: 0)")
    _add_store_options(m)
    return parser


def _convert(args):
    from daskdca.store import convert_svmlight

    zero_based = {"auto": "auto", "true": True, "false": False}[args.zero_based]
    store = convert_svmlight(args.input, args.output, n_features=args.n_features, zero_based=zero_based,
                             block_rows=args.block_rows, chunk_bytes=max(1, int(args.chunk_mb * 2**20)),
                             compression=args.compression, float32=args.float32, shuffle=args.shuffle,
                             seed=args.seed, renumber_features=args.renumber_features,
                             progress=not args.no_progress, overwrite=args.overwrite)
    print(f"wrote {store.url}: {store.n} rows x {store.d} features, {store.nnz} non-zeros, "
          f"{store.n_blocks} blocks")
    return 0


def _make_data(args):
    from daskdca import datasets

    common = dict(nnz_per_row=args.nnz_per_row, zipf_exponent=args.zipf, row_norm_spread=args.row_norm_spread,
                  correlation=args.correlation, seed=args.seed, block_rows=args.block_rows,
                  compression=args.compression, float32=args.float32, progress=not args.no_progress,
                  overwrite=args.overwrite)
    if args.task == "classification":
        store = datasets.make_classification(args.output, args.rows, args.features,
                                             label_noise=args.label_noise, **common)
    else:
        store = datasets.make_regression(args.output, args.rows, args.features, noise=args.noise, **common)
    print(f"wrote {store.url}: {store.n} rows x {store.d} features, {store.nnz} non-zeros, "
          f"{store.n_blocks} blocks")
    return 0


def main(argv=None):
    """Run the command line; returns the exit status.

    0: done (``fit``: converged); 1: ``fit`` did not converge, or an
    unexpected internal error; 2: a user error, printed as one line
    ``daskdca: error: <message>`` (``--debug`` shows the traceback).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        return _error(str(exc))
    try:
        if args.command == "convert":
            return _convert(args)
        if args.command == "make-data":
            return _make_data(args)
        return _fit(args)
    except KeyboardInterrupt:
        if debug:
            raise
        print("daskdca: interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if debug:
            raise
        return _error(_message(exc))
    except Exception as exc:  # a bug: still one line, with a pointer to --debug
        if debug:
            raise
        print(f"daskdca: error: unexpected {type(exc).__name__}: {exc} (run again with --debug for the "
              "traceback, and please report it)", file=sys.stderr)
        return 1


def _message(exc):
    """One line: the exception's message, with the file name for bare OSErrors."""
    if isinstance(exc, OSError) and exc.filename is not None and str(exc.filename) not in str(exc.args):
        text = f"{exc.strerror or exc}: {exc.filename!r}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _error(message):
    print(f"daskdca: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _fit(args):
    if args.workers is not None and args.workers < 0:
        raise ValueError(f"--workers must be >= 0, got {args.workers}.")
    is_store = args.data is not None and _looks_like_store(args.data)
    if is_store:
        from daskdca.store import open_store

        X, y = open_store(args.data), None
        print(f"data: store {args.data} ({X.n} x {X.d}, {X.nnz} non-zeros, {X.n_blocks} blocks)")
    else:
        X, y = _load(args.data, args.n_features)
    kwargs = dict(loss=args.loss, lam=args.lam, solver=args.solver, tol=args.tol, max_rounds=args.max_rounds,
                  batch_size=args.batch_size, local_iters=args.local_iters, n_partitions=args.n_partitions,
                  random_state=args.random_state, verbose=0 if args.quiet else 1)
    if args.workers:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster) as client:
            print(f"cluster: LocalCluster with {args.workers} workers")
            model = fit(X, y, client=client, **kwargs)
    else:
        model = fit(X, y, **kwargs)
    if is_store:
        X, y = X.read_all()
        y = model.classes_[(y == model.classes_[1]).astype(int)] if model.classes_ is not None else y
    rel = model.gap_ / abs(model.primal_) if model.primal_ else float("inf")
    print(f"{'converged' if model.converged_ else 'NOT converged'} after {model.n_rounds_} rounds "
          f"({model.n_epochs_:.1f} epochs, {model.history_[-1].seconds:.2f} s): "
          f"primal {model.primal_:.10g}  dual {model.dual_:.10g}  relative gap {rel:.2e}")
    if model.classes_ is not None:
        print(f"training accuracy {np.mean(model.predict(X) == y):.4f}")
    return 0 if model.converged_ else 1


if __name__ == "__main__":
    sys.exit(main())
