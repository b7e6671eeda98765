"""Command line: ``daskdca fit``, ``daskdca predict``, ``daskdca convert``, ``daskdca make-data``.

``daskdca fit`` with no data is the demo of what the library is for: it
writes a generated store of ``--rows`` rows (2 M by default, seeded by
``--random-state``) into a temporary folder, fits it out of core on a
LocalCluster of ``--workers`` processes with a progress bar on the gap,
prints the certificate and the time of the in-memory fit of the same rows
in this process, and removes the folder.  ``--breast-cancer`` fits
scikit-learn's bundled breast-cancer data instead (standardised, and the
command says so).  With a path it reads an svmlight / LIBSVM file (plain,
.gz or .bz2) with scikit-learn's parser, or opens a store.  ``--C`` is
LIBLINEAR's ``C`` (``lam = 1/(C n)``), ``--l1-ratio RHO`` the L1 share of the
penalty (``daskdca.fit``'s ``l1_ratio``: ``lam ((1 - RHO)/2 ||w||^2 + RHO
||w||_1)``), ``--fit-intercept`` LIBLINEAR's regularised intercept, and
``--save MODEL`` writes the fitted model as data
(:mod:`daskdca.saved_model`, never a pickle), which ``daskdca predict MODEL
DATA`` reads to score an svmlight file or a store, block by block.

Every user error (a bad option, a missing file or store, an existing output,
bad data) prints one line ``daskdca: error: <message>`` on stderr and exits
with status 2; ``--debug`` shows the traceback instead.

Each command imports the modules it needs when it runs (the fit, the saved
model, the predictions, and scikit-learn with them), so that the parser, and
``daskdca --help``, start without them.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from daskdca.losses import LOSSES, get_loss
from daskdca.methods import REGISTRY as SOLVERS
from daskdca.problem import with_intercept_column
from daskdca.store import DEFAULT_BLOCK_ROWS, DEFAULT_CHUNK_BYTES
from daskdca.validation import _check_n_jobs, class_weights


# Exceptions that are the user's to fix: one line and exit status 2.
USER_ERRORS = (ValueError, TypeError, OSError)
EXIT_USAGE = 2
# lam when neither --lam nor --C is given
DEFAULT_LAM = 1e-4
# `daskdca fit`'s default budget of passes over the data (--max-epochs; the library's is 1000).  A budget
# only ends fits that have not converged, so a larger one costs nothing to those that do.  Measured on the
# bundled data at the defaults (hinge, lam 1e-4, tol 1e-6, solver auto): heart_scale certifies in 78 passes
# (Catalyst), a9a, w8a, ijcnn1, rcv1_sample1000 and agaricus in 30 to 54, and --breast-cancer (lam n = 0.057,
# Catalyst) in 2,396 (0.3 s), where 1000 passes ended "NOT converged" at a relative gap of 1.7e-4.
DEFAULT_MAX_EPOCHS = 10_000
# The demo (`daskdca fit` with no data): the generated classification store
# (daskdca.datasets.make_classification: uniform feature popularity, unit
# rows, 5% flipped labels) and its defaults.  Uniform popularity, since with
# Zipf-popular features (the generator's default) CoCoA+ crawled below a 1e-5
# gap at K = 2 (200,000 rows: 534 rounds to 1e-6) where serial SDCA took 4
# epochs; logistic, since with hinge it crawled from 1e-3 on.  C = 0.1 (lam =
# 10/n, the same conditioning at any --rows): at 2 M rows it certified 1e-6
# in 5 rounds out of core where C = 0.5 with 30 non-zeros a row took 12 (and
# 490 s in all, on 2 shared cores).
DEMO_ROWS = 2_000_000
DEMO_FEATURES = 100_000
DEMO_NNZ_PER_ROW = 20.0
DEMO_LABEL_NOISE = 0.05
DEMO_C = 0.1
DEMO_LOSS = "logistic"
DEMO_WORKERS = 2
DEMO_BLOCKS_PER_WORKER = 4  # at least: smaller --rows get smaller blocks


class UsageError(Exception):
    """A command-line error found by the parser (bad option or value)."""


class _Parser(argparse.ArgumentParser):
    """argparse with errors raised, so that ``main`` prints them as one line."""

    def error(self, message):
        raise UsageError(f"{self.prog.replace('daskdca ', '', 1) + ': ' if ' ' in self.prog else ''}{message}")


def _load(path, n_features, out=None, index_base=-1):
    """``(X, y, base)`` of the default data (path None) or an svmlight file; one ``data:`` line to ``out``.

    ``base`` is where the file's feature indices start, 1 (LIBSVM's) or 0:
    ``index_base`` when given (a saved model's), else scikit-learn's rule
    for ``zero_based="auto"`` (one-based unless an index is 0), read from
    the file and returned so that a saved model records it (-1 for the
    default data).
    """
    out = sys.stdout if out is None else out
    if path is None:
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        print("data: scikit-learn breast cancer (569 x 30), each column standardised to mean 0, std 1", file=out)
        return X, y, -1
    from sklearn.datasets import load_svmlight_file

    if not os.path.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist.")
    try:
        if index_base == -1:  # the raw indices, then scikit-learn's "auto" rule on them
            X, y = load_svmlight_file(path, zero_based=True)
            base = 1 if X.nnz and int(X.indices.min()) > 0 else 0
            if base == 1:  # column 0 is empty: drop it, as scikit-learn's one-based reading does
                X = sp.csr_matrix((X.data, X.indices - 1, X.indptr), shape=(X.shape[0], max(X.shape[1] - 1, 0)))
            if n_features is not None:
                if X.shape[1] > n_features:
                    raise ValueError(f"n_features was set to {n_features}, but the file holds {X.shape[1]} "
                                     "features")
                X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
        else:
            base = index_base
            X, y = load_svmlight_file(path, n_features=n_features, zero_based=index_base == 0)
    except (OSError, ValueError, OverflowError, EOFError) as exc:
        hint = (" (the model was fitted on a file whose feature indices start at 1, and this one holds an index "
                "0: give the file with the training file's numbering)") if index_base == 1 and "0" in str(exc) \
            else ""
        raise ValueError(f"cannot read {path!r} as svmlight/LIBSVM: {type(exc).__name__}: {exc}{hint}") from exc
    if X.shape[0] == 0:
        raise ValueError(f"{path}: no rows (the file is empty or holds only comments).")
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:  # the fit and the predictions would read them as numbers
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        raise ValueError(f"{path}: non-finite value {float(X.data[bad[0]])!r} in row {row + 1}; remove or fix "
                         "it.")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise ValueError(f"{path}: non-finite label {float(y[bad[0]])!r} in row {int(bad[0]) + 1}; remove or fix "
                         "it.")
    print(f"data: {path} ({X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros)", file=out)
    return X, y, base


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


def _float_at_least_one(text):
    """``make-data --nnz-per-row``: a finite number >= 1, since every generated row draws at least one feature."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 1, got {text!r}") from None
    if not (value >= 1 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 1 (every row draws at least one feature: "
                                         f"1 + Poisson(mean - 1) of them), got {text}; use e.g. 1")
    return value


def _class_weight(text):
    """``balanced`` or ``LABEL:WEIGHT[,LABEL:WEIGHT...]`` (LIBLINEAR's ``-wi``), weights >= 0."""
    if text == "balanced":
        return text
    weights = {}
    for item in text.split(","):
        label, sep, value = item.rpartition(":")
        try:
            weight = float(value)
            label = float(label)
        except ValueError:
            label = None
        if not sep or label is None or not (math.isfinite(weight) and weight >= 0):
            raise argparse.ArgumentTypeError(
                f"must be 'balanced' or LABEL:WEIGHT pairs with weights >= 0 separated by commas "
                f"(e.g. '1:2,-1:0.5'), got {text!r}")
        weights[label] = weight
    return weights


def _row_weights(class_weight, y):
    """Every row's loss weight from ``--class-weight`` (the labels of a file are numbers)."""
    classes = np.unique(y)
    per_class = class_weights(class_weight, y, classes, option="--class-weight")
    return per_class[np.searchsorted(classes, y)]


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
        description="L2-, L1- and elastic-net-regularised linear models by stochastic dual coordinate ascent, "
                    "certified by the duality gap.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "fit",
        help="fit a model, with a progress bar on the duality gap, and print its certificate",
        description="Minimise P(w) = 1/n sum_i loss(y_i, x_i.w) + lam/2 ||w||^2 (with --l1-ratio RHO the penalty "
                    "is lam ((1 - RHO)/2 ||w||^2 + RHO ||w||_1) instead), with a progress bar on the "
                    "relative duality gap (-vv: also primal, dual and gap at every gap evaluation), and print the "
                    "certificate: converged or not, rounds, passes, the fit's time, primal, dual and relative "
                    "gap. Exit status 0 when the fit certified --tol, 1 when it did not within --max-epochs, 2 "
                    "on a user error.",
    )
    p.add_argument("data", nargs="?", default=None,
                   help="svmlight/LIBSVM file (.gz/.bz2 ok) or a daskdca store (directory or URL); "
                        "none: the demo, a generated store of --rows rows written to a temporary folder, "
                        "fitted out of core on a LocalCluster of --workers processes, compared with the "
                        "in-memory fit of the same rows, and removed")
    p.add_argument("--rows", type=_int_at_least(1), default=None,
                   help=f"rows of the demo's generated data (no DATA only; default: {DEMO_ROWS:,}; "
                        f"{DEMO_FEATURES:,} features, about {DEMO_NNZ_PER_ROW:g} non-zeros per row)")
    p.add_argument("--breast-cancer", action="store_true",
                   help="fit scikit-learn's bundled breast-cancer data (569 x 30, each column standardised) "
                        "instead of the demo (no DATA only)")
    p.add_argument("--workers", type=int, default=None,
                   help="fit on a LocalCluster with this many worker processes; 0 fits in memory, in this "
                        "process (the default for a file and --breast-cancer; not for a store, which always runs "
                        "on a cluster: with no --workers, fit starts one sized to the machine; nor for the demo, "
                        f"whose default is {DEMO_WORKERS})")
    p.add_argument("--n-features", type=_int_at_least(1), default=None,
                   help="number of features of the svmlight file (default: largest index seen); not with a "
                        "store, which records its own")
    p.add_argument("--loss", choices=sorted(LOSSES), default=None,
                   help=f"loss (default: hinge; the demo: {DEMO_LOSS}); the regression losses take their "
                        "default parameter (epsilon_insensitive and its square: epsilon 0; huber: delta 1)")
    strength = p.add_mutually_exclusive_group()
    strength.add_argument("--lam", type=_positive_float, default=None,
                          help=f"regularisation lam > 0; LIBLINEAR's C = 1/(lam n) (default: {DEFAULT_LAM:g}; "
                               f"the demo: C = {DEMO_C:g}, i.e. lam = {1 / (DEMO_C * DEMO_ROWS):g} at "
                               f"{DEMO_ROWS:,} rows)")
    strength.add_argument("--C", type=_positive_float, default=None,
                          help="LIBLINEAR's / scikit-learn's C > 0 instead of --lam: lam = 1/(C n), n the rows "
                               "of the data")
    p.add_argument("--l1-ratio", type=float, default=None, metavar="RHO",
                   help="the L1 share RHO in [0, 1] of the penalty lam ((1 - RHO)/2 ||w||^2 + RHO ||w||_1), "
                        "daskdca.fit's l1_ratio: 1 is the L1 penalty lam ||w||_1 (a sparse model), between 0 and 1 "
                        "the elastic net; the certificate is of that penalty, and --save records RHO (default: "
                        "none, the L2 penalty lam/2 ||w||^2); --solver auto picks a method that solves it")
    p.add_argument("--fit-intercept", action="store_true",
                   help="fit LIBLINEAR's intercept: a virtual constant feature of value --intercept-scaling whose "
                        "weight is regularised like the others (in-memory data only, not a store)")
    p.add_argument("--intercept-scaling", type=_positive_float, default=None,
                   help="value s of the constant feature (with --fit-intercept; default: 1); the intercept is "
                        "s times its weight, so a larger s regularises the intercept less")
    p.add_argument("--class-weight", type=_class_weight, default=None, metavar="balanced|LABEL:W,...",
                   help="multiply the loss of each label's rows (LIBLINEAR's -wi; 'balanced': n / (2 count)), "
                        "e.g. '1:5,-1:1' (an svmlight file; a store carries its own weights)")
    p.add_argument("--solver", choices=["auto"] + sorted(SOLVERS), default="auto",
                   help="solver (default: auto, which picks the route and the method and prints why: serial "
                        "SDCA here, the whole fit on one worker, or CoCoA+ rounds)")
    p.add_argument("--tol", type=float, default=1e-6,
                   help="stop when (P - D) <= tol |P| (default: 1e-6)")
    p.add_argument("--max-epochs", type=_positive_float, default=DEFAULT_MAX_EPOCHS,
                   help="the most passes over the data, whatever the solver; a fit that has not converged by "
                        f"then ends with exit status 1 (default: {DEFAULT_MAX_EPOCHS:,})")
    p.add_argument("--max-rounds", type=int, default=None, help="round limit (default: none beyond --max-epochs)")
    p.add_argument("--batch-size", type=int, default=None, help="rows per mini-batch (minibatch_sdca)")
    p.add_argument("--local-iters", type=float, default=1.0,
                   help="passes over each partition per round (default: 1.0; with --solver auto, plain serial "
                        "SDCA on data under 65,536 stored values and rows takes enough to visit that many)")
    p.add_argument("--n-partitions", type=int, default=None,
                   help="row partitions (cocoa+, minibatch_sdca; the demo: one per worker)")
    p.add_argument("--random-state", type=int, default=0,
                   help="seed of all random streams, the demo's generated data included (default: 0)")
    p.add_argument("--n-jobs", type=int, default=None,
                   help="threads of a fit in this process, the same bits for any number (default: the cores "
                        "this process may use; -1: all of them); not with --workers or a store, which run on "
                        "the workers' threads (the demo: its in-memory fit)")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-v", "--verbose", action="count", default=None,
                      help="-v: a progress bar on the log of the relative gap (stderr), updated in place with the "
                           "round, the gap and an ETA, then the summary (the default); -vv: also one line per gap "
                           "record (round, epochs, seconds, primal, dual, gap)")
    talk.add_argument("--quiet", action="store_true", help="no progress bar: print the summary only")
    p.add_argument("--save", metavar="MODEL", default=None,
                   help="write the fitted model to this .npz file (numbers only, no pickle: coef, intercept, "
                        "labels, loss, lam, l1_ratio and the certificate) for `daskdca predict`")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --save file")
    _add_common_options(p)

    r = sub.add_parser(
        "predict",
        help="predict with a model saved by `daskdca fit --save`",
        description="Score an svmlight/LIBSVM file or a daskdca store with a model written by "
                    "`daskdca fit --save`: one value per line, in the data's row order (a store's "
                    "stored order: `daskdca convert --no-shuffle` keeps the file's). A store is read one "
                    "block at a time. Then it prints the predictions' accuracy against the data's labels (a "
                    "classifier) or their R^2 (a regression loss), on stderr when the predictions go to stdout "
                    "(with no --output, or --output -, stdout carries the predictions only), else on stdout. "
                    "Exit status 0 when done, 2 on a user error.",
    )
    r.add_argument("model", help="model file written by `daskdca fit --save`")
    r.add_argument("data", help="svmlight/LIBSVM file (.gz/.bz2 ok) or a daskdca store (directory or URL); it "
                                "may have fewer features than the model (missing ones are zero), not more")
    r.add_argument("--kind", choices=["labels", "scores", "proba"], default="labels",
                   help="labels (default; the predicted targets for a regression loss), scores x.w + b, or "
                        "proba, the probability of the positive label 1/(1 + exp(-score)) (logistic loss only)")
    r.add_argument("--output", metavar="FILE", default=None,
                   help="write the predictions to FILE (written completely, then renamed into place) instead of "
                        "stdout; '-' is stdout, and a device or named pipe (e.g. /dev/null) is written as it is")
    r.add_argument("--overwrite", action="store_true", help="replace an existing --output FILE")
    _add_common_options(r)

    c = sub.add_parser(
        "convert",
        help="convert an svmlight/LIBSVM file or a Parquet dataset into a daskdca zarr store (streaming)",
        description="Convert an svmlight/LIBSVM file (plain, .gz or .bz2) into a zarr store of CSR row "
                    "blocks, streaming: memory is bounded by --chunk-mb of text and one block. A Parquet file "
                    "or dataset (with --label-column) is read by dask.dataframe.read_parquet and written one "
                    "partition at a time: every other column is a numeric feature, and labels that are not "
                    "numbers are stored as class codes with their names.",
    )
    c.add_argument("input", help="svmlight/LIBSVM file, or Parquet file or dataset (with --label-column)")
    c.add_argument("output", help="store path or fsspec URL (must not exist; --overwrite replaces a store)")
    c.add_argument("--n-features", type=_int_at_least(1), default=None,
                   help="number of features (default: the largest index in the file)")
    c.add_argument("--zero-based", choices=["auto", "true", "false"], default="auto",
                   help="index base, as scikit-learn's loader: 'auto' is one-based unless an index 0 occurs")
    c.add_argument("--chunk-mb", type=_positive_float, default=None,
                   help=f"svmlight text parsed per call, in MiB (default: {DEFAULT_CHUNK_BYTES / 2**20:g})")
    c.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="store the rows in a seeded uniform random order, out of core (default: on; real files "
                        "are often sorted by label, which slows distributed solvers; --no-shuffle keeps the "
                        "file's order and writes the rows once instead of twice)")
    c.add_argument("--seed", type=_int_at_least(0), default=None,
                   help="seed of the shuffle (default: 0; not with --no-shuffle)")
    c.add_argument("--renumber-features", action="store_true",
                   help="number features by decreasing frequency (the permutation is stored)")
    c.add_argument("--label-column", metavar="NAME", default=None,
                   help="the label column of a Parquet input (which makes the input Parquet); the other "
                        "columns are the features")
    _add_store_options(c)

    a = sub.add_parser(
        "advise",
        help="print the route and the predicted time of a fit, before fitting",
        description="Print what `daskdca fit --solver auto` would run on DATA (in this process, the whole fit "
                    "on one worker, or rounds across workers), why, and its predicted time, measured by a "
                    "short probe of the chosen method in this process (daskdca.advise).",
    )
    a.add_argument("data", help="svmlight/LIBSVM file (.gz/.bz2 ok) or a daskdca store that fits in memory")
    a.add_argument("--n-features", type=_int_at_least(1), default=None,
                   help="number of features of the svmlight file, as `daskdca fit --n-features` (default: "
                        "largest index seen); not with a store")
    a.add_argument("--loss", choices=sorted(LOSSES), default="hinge", help="loss (default: hinge)")
    a_strength = a.add_mutually_exclusive_group()
    a_strength.add_argument("--lam", type=_positive_float, default=None,
                            help=f"regularisation lam > 0 (default: {DEFAULT_LAM:g})")
    a_strength.add_argument("--C", type=_positive_float, default=None, help="LIBLINEAR's C instead of --lam")
    a.add_argument("--tol", type=float, default=1e-6,
                   help="relative duality gap > 0 the predicted time is to (default: 1e-6); 0, which `daskdca "
                        "fit` takes (it then runs to its --max-epochs budget), has no time to predict")
    a.add_argument("--workers", type=_int_at_least(1), default=None,
                   help="advise for a LocalCluster of this many worker processes (default: no cluster)")
    a.add_argument("--n-jobs", type=int, default=None,
                   help="threads of the fit in this process, as `daskdca fit --n-jobs` (default: the cores this "
                        "process may use); not with --workers or a store")
    _add_common_options(a)

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
    m.add_argument("--nnz-per-row", type=_float_at_least_one, default=50.0,
                   help="mean non-zeros per row, >= 1: every row draws at least one feature (default: 50)")
    m.add_argument("--zipf", type=float, default=1.1,
                   help="Zipf exponent of feature popularity; 0 is uniform (default: 1.1)")
    m.add_argument("--row-norm-spread", type=float, default=0.0,
                   help="log-normal spread of row norms; 0 gives unit rows (default: 0)")
    m.add_argument("--correlation", type=float, default=0.0,
                   help="share of rows that copy a prototype row (default: 0)")
    m.add_argument("--label-noise", type=float, default=None,
                   help="share of flipped labels (--task classification only; default: "
                        "daskdca.datasets.LABEL_NOISE, 0.05)")
    m.add_argument("--noise", type=float, default=None,
                   help="standard deviation of the targets' noise (--task regression only; default: "
                        "daskdca.datasets.TARGET_NOISE, 0.1)")
    m.add_argument("--seed", type=_int_at_least(0), default=0, help="seed (default: 0)")
    _add_store_options(m)
    return parser


def _is_parquet(path):
    """Whether an input path names Parquet: a .parquet / .parq / .pq file or a folder of them."""
    from daskdca.store.frames import is_parquet_path

    return is_parquet_path(path)


def _convert(args):
    from daskdca.store import convert_svmlight, write_store

    if args.seed is not None and not args.shuffle:
        raise ValueError(f"--seed {args.seed} seeds the shuffle, and --no-shuffle keeps the input's row order; drop "
                         "--seed, or --no-shuffle.")
    seed = 0 if args.seed is None else args.seed
    if args.label_column is not None or _is_parquet(args.input):
        if args.label_column is None:
            raise ValueError(f"{args.input} is Parquet: name its label column with --label-column NAME (the "
                             "other columns are the features).")
        for option, value, default in (("--n-features", args.n_features, None),
                                       ("--zero-based", args.zero_based, "auto"),
                                       ("--chunk-mb", args.chunk_mb, None)):
            if value != default:
                raise ValueError(f"{option} applies to svmlight input only; drop it for the Parquet input "
                                 f"{args.input}.")
        store = write_store(args.output, args.input, args.label_column, block_rows=args.block_rows,
                            compression=args.compression, float32=args.float32, shuffle=args.shuffle,
                            seed=seed, renumber_features=args.renumber_features, overwrite=args.overwrite)
        labels = "" if store.label_names is None else f", labels {store.label_names.tolist()[:10]}"
        print(f"wrote {store.url}: {store.n} rows x {store.d} features, {store.nnz} non-zeros, "
              f"{store.n_blocks} blocks{labels}")
        return 0
    zero_based = {"auto": "auto", "true": True, "false": False}[args.zero_based]
    chunk_bytes = DEFAULT_CHUNK_BYTES if args.chunk_mb is None else max(1, int(args.chunk_mb * 2**20))
    store = convert_svmlight(args.input, args.output, n_features=args.n_features, zero_based=zero_based,
                             block_rows=args.block_rows, chunk_bytes=chunk_bytes,
                             compression=args.compression, float32=args.float32, shuffle=args.shuffle,
                             seed=seed, renumber_features=args.renumber_features,
                             progress=not args.no_progress, overwrite=args.overwrite)
    print(f"wrote {store.url}: {store.n} rows x {store.d} features, {store.nnz} non-zeros, "
          f"{store.n_blocks} blocks")
    return 0


def _make_data(args):
    from daskdca import datasets

    # each noise applies to its task only: the other one would be dropped without a word
    for option, value, task, other in (("--noise", args.noise, "regression", "--label-noise"),
                                       ("--label-noise", args.label_noise, "classification", "--noise")):
        if value is not None and args.task != task:
            raise ValueError(f"{option} {value:g} applies to --task {task} only, and the task is {args.task}; drop "
                             f"{option} (the {args.task} task's noise is {other}), or give --task {task}.")
    common = dict(nnz_per_row=args.nnz_per_row, zipf_exponent=args.zipf, row_norm_spread=args.row_norm_spread,
                  correlation=args.correlation, seed=args.seed, block_rows=args.block_rows,
                  compression=args.compression, float32=args.float32, progress=not args.no_progress,
                  overwrite=args.overwrite)
    if args.task == "classification":
        store = datasets.make_classification(args.output, args.rows, args.features,
                                             label_noise=datasets.LABEL_NOISE if args.label_noise is None
                                             else args.label_noise, **common)
    else:
        store = datasets.make_regression(args.output, args.rows, args.features,
                                         noise=datasets.TARGET_NOISE if args.noise is None else args.noise, **common)
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
        with warnings.catch_warnings():  # the previous way of showing warnings comes back after the command
            warnings.showwarning = _show_warning
            return _run(args)
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


def _run(args):
    """The subcommand ``args.command``; its exit status."""
    if args.command == "convert":
        return _convert(args)
    if args.command == "make-data":
        return _make_data(args)
    if args.command == "predict":
        return _predict(args)
    if args.command == "advise":
        return _advise(args)
    return _fit(args)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning on the command line: one line ``daskdca: warning: <category>: <message>`` on stderr, as errors
    are shown; Python's default names the line of source it points at, here the ``daskdca`` script's own."""
    print(f"daskdca: warning: {category.__name__}: {' '.join(str(message).split())}",
          file=sys.stderr if file is None else file)


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


def _store_blocks(store, saved):
    """Yield ``(scores, y)`` of each block of ``store`` under ``saved``, one verified block at a time."""
    from daskdca.prediction import store_coef, store_scores

    saved.check_n_features(store.d, where=f"the store {store.url!r}")
    return store_scores(store, store_coef(store, saved.coef[np.newaxis, :]), saved.intercept)


def _lam(args, n, default_C=None):
    """``(lam, text)`` from --C, --lam or the default (``default_C``, else DEFAULT_LAM)."""
    C = args.C if args.C is not None else (default_C if args.lam is None else None)
    if C is not None:
        lam = 1.0 / (C * n)
        return lam, f"lam {lam:.10g} = 1/(C n) with C = {C:g}, n = {n}"
    lam = DEFAULT_LAM if args.lam is None else args.lam
    return lam, f"lam {lam:.10g} (LIBLINEAR's C = 1/(lam n) = {1.0 / (lam * n):.6g})"


def _penalty_text(l1_ratio):
    """The penalty of a fit with L1 share ``l1_ratio`` for the ``model:`` line ('' for the L2 penalty)."""
    if l1_ratio == 0:
        return ""
    if l1_ratio == 1:
        return ", L1 penalty lam ||w||_1 (l1_ratio 1)"
    return (f", elastic-net penalty lam ({1 - l1_ratio:.6g}/2 ||w||^2 + {l1_ratio:.6g} ||w||_1) (l1_ratio "
            f"{l1_ratio:.6g})")


def _verbosity(args):
    """``daskdca.fit``'s ``verbose``: 0 with --quiet, else the count of -v, 1 without one."""
    if args.quiet:
        return 0
    return 1 if args.verbose is None else args.verbose


def _check_fit_args(args):
    from daskdca.api import _l1_ratio_options
    from daskdca.saved_model import check_output_path

    if args.workers is not None and args.workers < 0:
        raise ValueError(f"--workers must be >= 0, got {args.workers}.")
    if args.workers == 0 and args.data is not None and _looks_like_store(args.data):
        raise ValueError(f"--workers 0 (in memory) does not apply to the store {args.data}, which always runs on "
                         "a cluster (with no --workers, fit starts one sized to the machine); drop --workers 0, or "
                         "give --workers 1 or more.")
    if args.intercept_scaling is not None and not args.fit_intercept:
        raise ValueError(f"--intercept-scaling {args.intercept_scaling:g} applies with --fit-intercept only; "
                         "add --fit-intercept or drop --intercept-scaling.")
    if args.overwrite and args.save is None:
        raise ValueError("--overwrite applies to --save only; add --save MODEL or drop --overwrite.")
    # daskdca.fit's own check of l1_ratio (and of the solver it configures), before any data is read or generated
    _l1_ratio_options(args.l1_ratio, args.solver, args.solver == "auto")
    if args.data is not None:
        for given, option in ((args.rows is not None, "--rows"), (args.breast_cancer, "--breast-cancer")):
            if given:
                raise ValueError(f"{option} applies without DATA only (the demo); drop {option} or DATA.")
    elif args.breast_cancer and args.rows is not None:
        raise ValueError("--rows sets the demo's generated rows; it does not apply with --breast-cancer.")
    if args.n_features is not None and args.breast_cancer:
        raise ValueError("--n-features applies to an svmlight file, not to --breast-cancer (30 features); drop "
                         "--n-features.")
    _refuse_n_features_of_store(args)
    if args.save is not None:
        # before the fit, not after it
        check_output_path(args.save, overwrite=args.overwrite, inputs=[args.data] if args.data else [])


def _refuse_n_features_of_store(args):
    """``--n-features`` reads an svmlight file; a store records its features, and the option would be ignored."""
    if args.n_features is not None and args.data is not None and _looks_like_store(args.data):
        raise ValueError(f"--n-features applies to an svmlight file; the store {args.data} records its own "
                         "features. Drop --n-features.")


def _check_fit_labels(data, loss, store, y):
    """Refuse the labels that `daskdca fit` cannot fit (and so `daskdca advise`, which tells what fit would run).

    Parameters
    ----------
    data : str
        The DATA argument, for the messages.
    loss : str
        The loss name: a regression loss takes any targets.
    store : daskdca.store.CSRStore or None
        The opened store, or None for a file (then ``y``).
    y : ndarray or None
        The labels of a file, or None for a store.

    Raises
    ------
    ValueError
        A store whose labels are names (a saved model holds numbers), or more than two classes for a
        classification loss (a saved model holds one weight vector).
    """
    if store is not None and store.label_names is not None and store.label_names.dtype.kind != "b":
        raise ValueError(f"the store {data} holds the labels {store.label_names.tolist()[:10]}, which are not "
                         "numbers, and a saved model holds numeric labels only; fit it in Python "
                         "(daskdca.fit(daskdca.open_store(PATH))), or write the store with numeric labels.")
    labels = store.label_values if store is not None else np.unique(y)
    if get_loss(loss).is_classification and labels is not None and len(labels) > 2:
        raise ValueError(f"`daskdca fit` fits two classes, and {data} has {len(labels)} labels "
                         f"({labels.tolist()[:10]}{' ...' if len(labels) > 10 else ''}); the saved model holds one "
                         "weight vector. Fit the one-vs-rest problems in Python (daskdca.fit(X, y) or "
                         "daskdca.SDCAClassifier), or binarise the labels.")


def _advise(args):
    """``daskdca advise``: the route, its reason and the predicted time; exit status 0."""
    from daskdca.advice import _check_tol, advise

    _refuse_n_features_of_store(args)
    # before the data is read; tol as `daskdca fit --tol` takes it, then > 0 (the message says why)
    _check_tol(args.tol, name="--tol", budget="`daskdca fit` to its --max-epochs budget", example="--tol 1e-6")
    if _looks_like_store(args.data):
        from daskdca.store import open_store

        X, y = open_store(args.data), None
        n = X.n
        _check_fit_labels(args.data, args.loss, X, None)
    else:
        X, y, _ = _load(args.data, args.n_features)
        n = X.shape[0]
        _check_fit_labels(args.data, args.loss, None, y)
    lam, lam_text = _lam(args, n)
    print(f"problem: {args.loss} loss, {lam_text}, tol {args.tol:g}")
    if args.workers:
        from daskdca.engine import local_client

        with local_client(args.workers) as client:
            print(f"cluster: LocalCluster with {args.workers} workers on 127.0.0.1")
            print(advise(X, y, loss=args.loss, lam=lam, tol=args.tol, client=client, n_jobs=args.n_jobs))
    else:
        print(advise(X, y, loss=args.loss, lam=lam, tol=args.tol, n_jobs=args.n_jobs))
    return 0


def _fit(args):
    """``daskdca fit``: the demo without DATA, else a fit of DATA with its summary line; exit status 0."""
    from daskdca.api import _summary_line, fit
    from daskdca.prediction import decision_scores
    from daskdca.saved_model import SavedModel, save_model

    _check_fit_args(args)
    if args.data is None and not args.breast_cancer:
        return _demo(args)
    loss = "hinge" if args.loss is None else args.loss
    scaling = (1.0 if args.intercept_scaling is None else args.intercept_scaling) if args.fit_intercept else None
    is_store = args.data is not None and _looks_like_store(args.data)
    if is_store:
        if args.class_weight is not None:
            raise ValueError("--class-weight applies to an svmlight file: a store's row weights are part of the "
                             "store (daskdca.write_store(url, X, y, sample_weight=...)). Fit the file with "
                             "--class-weight instead.")
        if args.fit_intercept:
            raise ValueError("--fit-intercept is not supported for a store input yet; a store cannot be "
                             "augmented with the constant feature without rewriting it. Fit the svmlight file "
                             "in memory with --fit-intercept, or drop --fit-intercept.")
        from daskdca.store import open_store

        X, y = open_store(args.data), None
        n = X.n
        _check_fit_labels(args.data, loss, X, None)
        print(f"data: store {args.data} ({X.n} x {X.d}, {X.nnz} non-zeros, {X.n_blocks} blocks)")
    else:
        X, y, index_base = _load(args.data, args.n_features)
        n = X.shape[0]
        _check_fit_labels(args.data, loss, None, y)
        if scaling is not None:
            X = with_intercept_column(X, scaling)
    lam, lam_text = _lam(args, n)
    kwargs = dict(loss=loss, lam=lam, solver=args.solver, tol=args.tol, max_rounds=args.max_rounds,
                  max_epochs=args.max_epochs, batch_size=args.batch_size, local_iters=args.local_iters, n_partitions=args.n_partitions,
                  random_state=args.random_state, verbose=_verbosity(args), l1_ratio=args.l1_ratio,
                  n_jobs=args.n_jobs)
    if args.class_weight is not None:
        kwargs["sample_weight"] = _row_weights(args.class_weight, y)
    if args.workers:
        from daskdca.engine import local_client

        with local_client(args.workers) as client:
            print(f"cluster: LocalCluster with {args.workers} workers on 127.0.0.1")
            started = time.perf_counter()
            model = fit(X, y, client=client, **kwargs)
            seconds = time.perf_counter() - started
    else:
        started = time.perf_counter()
        model = fit(X, y, **kwargs)
        seconds = time.perf_counter() - started
    saved = SavedModel.from_fit(model, n_samples=n, tol=args.tol, intercept_scaling=scaling,
                                feature_index_base=-1 if is_store else index_base)
    print(f"route: {model.route_.name}, {model.solver.name} ({model.route_.reason})")
    if not kwargs["verbose"]:  # with -v daskdca.fit printed this line, with the same time
        print(_summary_line(model, seconds))
    intercept = (f"; intercept {saved.intercept:.10g} (intercept_scaling {scaling:g}, regularised)"
                 if scaling is not None else "; no intercept")
    print(f"model: {loss} loss, {lam_text}{_penalty_text(saved.l1_ratio)}{intercept}")
    if saved.classes is not None:
        if is_store:
            correct = sum(int(np.sum(saved.labels_of(scores) == stored)) for scores, stored in _store_blocks(X, saved))
        else:
            correct = int(np.sum(saved.labels_of(decision_scores(X, np.atleast_2d(model.coef_), None)) == y))
        print(f"training accuracy {correct / n:.4f}")
    if args.save is not None:
        save_model(args.save, saved, overwrite=args.overwrite)
        print(f"saved the model to {args.save}")
    return 0 if model.converged_ else 1


def _demo(args):
    """``daskdca fit`` with no data: generate a store, fit it out of core on a LocalCluster, compare in memory.

    Everything is written into one temporary folder (the store and the
    workers' scratch space), removed at the end, also after an error or
    Ctrl-C.  The in-memory fit runs after the cluster is closed, so that the
    two do not share the cores.
    """
    import shutil
    import tempfile

    from daskdca.api import _summary_line, fit
    from daskdca.datasets import make_classification
    from daskdca.engine import local_client
    from daskdca.prediction import decision_scores
    from daskdca.saved_model import SavedModel, save_model

    for given, option, why in ((args.workers == 0, "--workers 0", "the demo fits on a LocalCluster; use "
                                "--workers 1 or more"),
                               (args.n_features is not None, "--n-features", "it applies to an svmlight file"),
                               (args.fit_intercept, "--fit-intercept", "the demo's data is a store, which "
                                "cannot be augmented with the constant feature"),
                               (args.class_weight is not None, "--class-weight", "the demo's generated store "
                                "has no row weights")):
        if given:
            raise ValueError(f"{option} does not apply to the demo (no DATA): {why}.")
    workers = DEMO_WORKERS if args.workers is None else args.workers
    rows = DEMO_ROWS if args.rows is None else args.rows
    loss = DEMO_LOSS if args.loss is None else args.loss
    seed = args.random_state
    if seed < 0:
        raise ValueError(f"--random-state must be >= 0 (it seeds the generated data), got {seed}.")
    n_partitions = workers if args.n_partitions is None else args.n_partitions
    # at least DEMO_BLOCKS_PER_WORKER blocks a worker, so that small --rows still split into partitions
    block_rows = max(1, min(DEFAULT_BLOCK_ROWS, -(-rows // (DEMO_BLOCKS_PER_WORKER * max(workers, n_partitions)))))
    lam, lam_text = _lam(args, rows, default_C=DEMO_C)
    folder = tempfile.mkdtemp(prefix="daskdca-demo-")
    try:
        path = os.path.join(folder, "data.zarr")
        print(f"demo: temporary folder {folder} (the store and the workers' scratch space; removed at the end)")
        print(f"data: generating {rows:,} rows x {DEMO_FEATURES:,} features with daskdca.datasets.make_classification "
              f"(about {DEMO_NNZ_PER_ROW:g} non-zeros a row, features equally popular, unit-norm rows, labels "
              f"sign(x.w_true) with {DEMO_LABEL_NOISE:.0%} flipped, seed {seed}) into {path}", flush=True)
        started = time.perf_counter()
        store = make_classification(path, rows, DEMO_FEATURES, nnz_per_row=DEMO_NNZ_PER_ROW, zipf_exponent=0.0,
                                    label_noise=DEMO_LABEL_NOISE, seed=seed, block_rows=block_rows,
                                    progress=not args.quiet)
        print(f"data: wrote {store.n:,} x {store.d:,}, {store.nnz:,} non-zeros, {store.n_blocks} blocks of "
              f"{block_rows:,} rows in {time.perf_counter() - started:.1f} s")
        kwargs = dict(loss=loss, lam=lam, tol=args.tol, max_rounds=args.max_rounds, max_epochs=args.max_epochs,
                      random_state=seed, l1_ratio=args.l1_ratio)
        # the scheduler's and the workers' scratch space goes to the folder too, not to a
        # dask-scratch-space left behind in the system's temporary folder
        with local_client(workers, scratch=folder) as client:
            print(f"cluster: LocalCluster with {workers} worker process{'es' if workers > 1 else ''}, 1 thread "
                  f"each, on 127.0.0.1 (no dashboard)")
            print(f"fit: out of core (each round re-reads the blocks from the store), {n_partitions} "
                  f"partition{'s' if n_partitions > 1 else ''}, "
                  f"{loss} loss, {lam_text}, tol {args.tol:g}", flush=True)
            started = time.perf_counter()
            model = fit(store, client=client, in_memory=False, solver=args.solver, batch_size=args.batch_size,
                        local_iters=args.local_iters, n_partitions=n_partitions,
                        verbose=_verbosity(args), **kwargs)
            cluster_seconds = time.perf_counter() - started
        if not _verbosity(args):  # with -v daskdca.fit printed this line
            print(_summary_line(model, cluster_seconds))
        started = time.perf_counter()
        X, y = store.read_all()
        read_seconds = time.perf_counter() - started
        print(f"in memory: read the {X.shape[0]:,} rows into this process in {read_seconds:.1f} s; fitting them "
              f"with daskdca.fit's in-memory default (serial SDCA), the same loss, lam, penalty and tol", flush=True)
        started = time.perf_counter()
        local = fit(X, y, n_jobs=args.n_jobs, **kwargs)
        local_seconds = time.perf_counter() - started
        print(f"in memory: {_summary_line(local, local_seconds)}")
        saved = SavedModel.from_fit(model, n_samples=rows, tol=args.tol)
        correct = int(np.sum(saved.labels_of(decision_scores(X, np.atleast_2d(model.coef_), None)) == y))
        del X, y
        print(f"model: {loss} loss, {lam_text}{_penalty_text(saved.l1_ratio)}; no intercept; training accuracy "
              f"{correct / rows:.4f}")
        if cluster_seconds >= local_seconds:
            ratio = f"out of core {cluster_seconds / max(local_seconds, 1e-9):.1f}x the in-memory time"
        else:
            ratio = f"in memory {local_seconds / cluster_seconds:.1f}x the out-of-core time"
        threads = _check_n_jobs(args.n_jobs)  # the in-memory fit's threads, as daskdca.fit took them
        print(f"time: out of core on {workers} worker{'s' if workers > 1 else ''}: {cluster_seconds:.1f} s "
              f"({model.n_rounds_} rounds); in memory, {threads} thread{'s' if threads > 1 else ''}: "
              f"{local_seconds:.1f} s ({local.n_rounds_} epochs) ({ratio})")
        if args.save is not None:
            save_model(args.save, saved, overwrite=args.overwrite)
            print(f"saved the out-of-core model to {args.save}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"demo: removed {folder}")
    return 0 if model.converged_ else 1


def _number_text(value):
    """A label as written in svmlight files: integral values without '.0', others exactly (repr)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _output_kind(output):
    """``"stdout"`` (no --output, or ``-``), ``"device"`` (an existing file that is not a regular one, such as
    /dev/null or a named pipe: written as it is) or ``"file"`` (written atomically)."""
    if output is None or output == "-":
        return "stdout"
    if os.path.exists(output) and not os.path.isfile(output) and not os.path.isdir(output):
        return "device"
    return "file"


def _predict(args):
    """``daskdca predict``: scores, labels or probabilities of DATA under a saved model; exit status 0."""
    from daskdca.prediction import RunningScore, decision_scores, labels
    from daskdca.saved_model import atomic_output, check_output_path, load_model

    saved = load_model(args.model)
    if args.kind == "proba":
        saved.proba_of(np.zeros(0))  # the loss check, before reading any data
    output = _output_kind(args.output)
    if output == "file":
        check_output_path(args.output, overwrite=args.overwrite, inputs=[args.model, args.data])
    elif args.overwrite:
        raise ValueError(f"--overwrite applies to --output FILE only (not {args.output or 'stdout'!r}); drop "
                         "--overwrite.")
    # stdout carries the predictions only when they go there
    log = sys.stderr if output == "stdout" else sys.stdout
    score = RunningScore(saved.classes, _number_text)
    if _looks_like_store(args.data):
        from daskdca.store import open_store

        store = open_store(args.data)
        print(f"data: store {args.data} ({store.n} x {store.d}, {store.nnz} non-zeros, {store.n_blocks} blocks)",
              file=log)
        # labels stored as names (codes in y) are not the saved model's numbers
        score = score if store.label_names is None else None
        blocks = _store_blocks(store, saved)
    else:
        X, y, _ = _load(args.data, None, out=log, index_base=saved.feature_index_base)
        saved.check_n_features(X.shape[1], where=f"{args.data!r}")
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], saved.n_features))
        blocks = iter([(decision_scores(X, saved.coef[np.newaxis, :], saved.intercept), y)])
    if args.kind == "labels" and saved.classes is not None:
        words = np.array([_number_text(c) for c in saved.classes], dtype=object)

        def lines(scores):
            return labels(scores, words).tolist()
    elif args.kind == "proba":
        def lines(scores):
            return list(map(repr, saved.proba_of(scores).tolist()))
    else:
        def lines(scores):
            return list(map(repr, scores.tolist()))

    def write(handle):
        rows = 0
        for scores, y in blocks:
            if scores.size:
                handle.write("\n".join(lines(scores)) + "\n")
            if score is not None:
                score.add(scores if saved.classes is None else saved.labels_of(scores), scores, y)
            rows += scores.size
        return rows

    if output == "stdout":
        try:
            rows = write(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. `daskdca predict ... | head`: the reader has what it wanted
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return 0
    elif output == "device":
        with open(args.output, "w", encoding="utf-8") as handle:
            rows = write(handle)
    else:
        with atomic_output(args.output, overwrite=args.overwrite, mode="w") as handle:
            rows = write(handle)
    where = "stdout" if output == "stdout" else args.output
    print(f"predicted {rows} rows ({args.kind}) with {args.model} to {where}", file=log)
    if score is not None:
        print(score.line(), file=log)
    else:
        print("no accuracy: the store's labels are names, the saved model's classes numbers", file=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
