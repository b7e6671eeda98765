"""Side-by-side benchmark suite: daskdca against LIBLINEAR, snapml, dask-ml and SGD.

Usage::

    python benchmarks/suite.py                 # full run (about 35 min on 2 cores)
    python benchmarks/suite.py --quick --out /tmp/bench   # a few minutes; what CI runs

The full run rewrites the section between the ``suite`` markers of
``benchmarks/RESULTS.md`` and the plots in ``benchmarks/plots/``; with
``--out DIR`` it writes ``DIR/RESULTS.md``, ``DIR/plots/*.png`` and
``DIR/results.json`` instead.  It measures and never asserts a timing: the only
way it fails is an exception (a broken system or a broken daskdca).

Every system solves the same problem, with no intercept::

    P(w) = 1/n sum_i loss(y_i, x_i.w) + lam/2 ||w||^2

and every point on every curve is ``P`` recomputed here in NumPy from the
returned coefficients (peers) or from daskdca's round history, whose last point
is checked against the NumPy value.  The mapping of each peer's regulariser to
``lam`` (``C = 1/(lam n)`` for LIBLINEAR and dask-ml, ``regularizer = lam n``
for snapml, ``alpha = lam`` for SGD, ``alpha = lam n`` for scikit-learn's
Ridge) is verified by the best suboptimality each reaches, shown in the tables.

Reference optimum per problem: LIBLINEAR at tol 1e-12, L-BFGS (smooth losses)
or the closed form (ridge), and daskdca's SDCA run to a certified relative gap
of 1e-10.  ``P*`` is the smallest of these primal values; daskdca's dual value
is a certified lower bound on the true optimum, so ``(P* - D)/P*`` bounds the
error of ``P*`` itself.  All are recorded with their disagreement.

Systems (each rep runs every system on a problem in turn, so slow drift of the
machine hits all of them alike):

* ``liblinear-cd``: LIBLINEAR's dual coordinate descent (the solver daskdca's
  SDCA is compared with); ``liblinear-newton``: its primal trust-region Newton
  (logistic); ``sklearn-ridge-sag``: scikit-learn's SAG for ridge.
* ``snapml``: snapml's dual solver with one thread.
* ``sgd``: scikit-learn's SGDClassifier/SGDRegressor, ``learning_rate="optimal"``.
* ``dask-ml``: ``dask_ml.linear_model.LogisticRegression(solver="lbfgs")`` on the
  2-worker LocalCluster, data persisted there as a dense dask array
  (dask-glm cannot take sparse chunks), with ``normalize=False`` (its default
  standardises X, which changes the problem).  Logistic only, and only where
  the dense copy is at most ``--dense-limit`` MB.
* ``daskdca-auto``: ``daskdca.fit(X, y)`` with its default ``solver="auto"``
  (the route it picks for the user); ``daskdca-auto@2w``: the same call with
  the 2-worker LocalCluster's client, the arrays in this process (the route
  picks one worker, rounds or Newton rounds).  Both without a callback (a
  callback asks for rounds), so the budget does not stop them.
* ``daskdca-<solver>``: ``daskdca.fit`` in memory, for every method in
  ``daskdca.methods.REGISTRY`` that takes the problem's loss, with its
  defaults (cocoa+ on its default 2 partitions); ``daskdca-cocoa+@<k>w``: on
  a LocalCluster with k = 1 or 2 worker processes (one thread each, k
  partitions), from a zarr store of 2 blocks on local disk with
  ``in_memory=True``; ``daskdca-<solver>@2w`` likewise on 2 workers for every
  other cluster method (a global mini-batch method on one worker would be the
  same algorithm as in memory, only slower; methods with an ``eval_every``
  record every 50 rounds there, so the budget can stop them).  Cluster
  start-up is not timed, nor the untimed warm-up fits that load the compiled
  kernels on its workers (``warm_up``); everything inside a timed ``fit`` is.

daskdca's in-memory systems run with ``daskdca.fit``'s default ``n_jobs``,
the cores this process may use (2 on the 2-core machine of RESULTS.md):
primal Newton's and L-BFGS's passes and CoCoA+'s partitions use them all,
serial SDCA its gap sums on a second one.  LIBLINEAR and scikit-learn's
solvers are single-threaded, snapml runs one thread.  The tables in
RESULTS.md measured before 2026-11-28's thirteenth session ran every
in-memory daskdca pass on one thread.

Peers that stop on their own tolerance run a ladder (tolerances 1e-1 .. 1e-9,
or epochs / iterations doubling) and a suboptimality counts at the first rung
that reaches it; daskdca runs once and its round history gives the curve,
with all of ``fit``'s set-up and tear-down time added to every point.  Each
system has ``--budget`` seconds per problem and rep.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import math
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import daskdca
from daskdca.methods import REGISTRY

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from epoch_throughput import DATASETS, bench_daskdca, bench_liblinear  # noqa: E402
from references import lbfgs, liblinear, primal_objective, ridge_closed_form  # noqa: E402

TARGETS = (1e-2, 1e-3, 1e-4, 1e-6)
TOL_LADDER = tuple(10.0 ** -k for k in range(1, 10))
MARK_BEGIN = "<!-- suite:begin (written by benchmarks/suite.py; edits here are overwritten) -->"
MARK_END = "<!-- suite:end -->"

# The LIBSVM sets of ../shared/data: name -> (file, n_features)
REAL = DATASETS
# Generated sets: (task, n_rows, n_features, nnz_per_row), written with daskdca.datasets.
GENERATED = {
    "gen100k": ("classification", 100_000, 20_000, 40.0),
    "genreg50k": ("regression", 50_000, 1_000, 20.0),
}


# --------------------------------------------------------------------------- data


@dataclass
class Problem:
    name: str
    X: sp.csr_matrix
    y: np.ndarray
    loss: str
    lam: float
    store: str | None = None  # zarr store for the cluster fits
    p_star: float = math.nan
    reference: dict = field(default_factory=dict)

    @property
    def key(self):
        return f"{self.name}/{self.loss}/{self.lam:g}"

    def objective(self, w):
        return primal_objective(self.X, self.y, np.asarray(w, dtype=np.float64).ravel(), self.lam, self.loss)

    def subopt(self, primal):
        return (primal - self.p_star) / abs(self.p_star)


def load_data(name, data_dir, work_dir):
    """``(X, y)`` in memory (CSR, sorted indices, float64) for a real or generated set."""
    if name in REAL:
        from sklearn.datasets import load_svmlight_file

        fname, d = REAL[name]
        X, y = load_svmlight_file(str(Path(data_dir) / fname), n_features=d)
        y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    else:
        from daskdca import datasets

        task, n, d, per_row = GENERATED[name]
        make = datasets.make_classification if task == "classification" else datasets.make_regression
        X, y = make(str(Path(work_dir) / f"{name}-source.zarr"), n, d, nnz_per_row=per_row, seed=0).read_all()
    X = _int32(sp.csr_matrix(X, dtype=np.float64))  # scikit-learn's SGD takes 32-bit indices only
    X.sort_indices()
    return X, np.asarray(y, dtype=np.float64)


def reference_optimum(problem, max_seconds):
    """Fill ``problem.p_star`` and ``problem.reference`` (see the module docstring)."""
    X, y, lam, loss = problem.X, problem.y, problem.lam, problem.loss
    ref = {}
    t0 = time.perf_counter()
    if loss == "squared":
        if X.shape[1] <= 5000:
            ref["closed form"] = ridge_closed_form(X, y, lam)[1]
    else:
        ref["LIBLINEAR 1e-12"] = liblinear(X, y, lam, loss)[1]
    if loss in ("logistic", "squared"):
        ref["L-BFGS"] = lbfgs(X, y, lam, loss)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = daskdca.fit(X, y, loss=loss, lam=lam, solver="sdca", tol=1e-10, max_rounds=100_000,
                            callback=_wall_cap(time.perf_counter(), max_seconds))
    ref["daskdca sdca"] = problem.objective(model.coef_)
    problem.p_star = min(ref.values())
    problem.reference = {
        "values": ref,
        "daskdca dual (lower bound)": model.dual_,
        "daskdca certified": bool(model.converged_),
        "seconds": time.perf_counter() - t0,
    }


# --------------------------------------------------------------------------- measuring


class PeakRSS:
    """Peak resident memory above the start, of this process (and its children if asked)."""

    def __init__(self, children=False, interval=0.02):
        import psutil

        self._proc, self._children, self._interval = psutil.Process(), children, interval
        self._stop = threading.Event()
        self.peak_mib = 0.0

    def _rss(self):
        total = self._proc.memory_info().rss
        if self._children:
            for child in self._proc.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except Exception:  # a child that exits between listing and reading
                    pass
        return total

    def _watch(self):
        while not self._stop.wait(self._interval):
            self._peak = max(self._peak, self._rss())

    def __enter__(self):
        self._base = self._peak = self._rss()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._rss())
        self.peak_mib = (self._peak - self._base) / 2**20


@dataclass
class Run:
    """One system on one problem in one rep: points ``(seconds, epochs, primal)``."""

    system: str
    rep: int
    points: list
    peak_mib: float
    note: str = ""

    def time_to(self, problem, target):
        hits = [t for t, _, p in self.points if problem.subopt(p) <= target]
        return min(hits) if hits else math.nan

    def epochs_to(self, problem, target):
        hits = [(t, e) for t, e, p in self.points if problem.subopt(p) <= target]
        return min(hits)[1] if hits else math.nan

    def best(self, problem):
        return min(problem.subopt(p) for _, _, p in self.points) if self.points else math.nan


def _wall_cap(start, seconds):
    def callback(record, state):
        return time.perf_counter() - start > seconds

    return callback


def ladder(problem, fit_one, rungs, budget, children=False):
    """Fit fresh at each rung until ``1e-6`` is reached or the budget is spent."""
    points, peak, spent = [], 0.0, 0.0
    for rung in rungs:
        with PeakRSS(children) as mem, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            w, epochs = fit_one(rung)
            seconds = time.perf_counter() - t0
        peak = max(peak, mem.peak_mib)
        points.append((seconds, float(epochs), problem.objective(w)))
        spent += seconds
        if problem.subopt(points[-1][2]) <= TARGETS[-1] or spent > budget:
            break
    return points, peak


# --------------------------------------------------------------------------- systems


def _int32(X):
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)


def liblinear_system(dual):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    def run(problem, rep, budget, ctx):
        X, n = problem.X, problem.X.shape[0]
        C = 1.0 / (problem.lam * n)

        def fit_one(tol):
            if problem.loss == "hinge":
                est = LinearSVC(loss="hinge", dual=True, C=C, tol=tol, max_iter=100_000, fit_intercept=False)
            else:
                est = LogisticRegression(solver="liblinear", dual=dual, C=C, tol=tol, max_iter=100_000,
                                         fit_intercept=False)
            est.fit(X, problem.y)
            return est.coef_, np.max(est.n_iter_) if dual else math.nan

        return ladder(problem, fit_one, TOL_LADDER, budget)

    return run


def ridge_sag_system(problem, rep, budget, ctx):
    from sklearn.linear_model import Ridge

    def fit_one(tol):
        est = Ridge(alpha=problem.lam * problem.X.shape[0], solver="sag", tol=tol, max_iter=100_000,
                    fit_intercept=False, random_state=rep)
        est.fit(problem.X, problem.y)
        return est.coef_, float(np.max(est.n_iter_))

    return ladder(problem, fit_one, TOL_LADDER, budget)


def snapml_system(problem, rep, budget, ctx):
    import snapml

    def fit_one(tol):
        common = dict(regularizer=problem.lam * problem.X.shape[0], tol=tol, max_iter=100_000,
                      fit_intercept=False, n_jobs=1, random_state=rep)
        if problem.loss == "hinge":
            est = snapml.SupportVectorMachine(loss="hinge", **common)
        elif problem.loss == "logistic":
            est = snapml.LogisticRegression(dual=True, **common)
        else:
            est = snapml.LinearRegression(dual=True, **common)
        est.fit(problem.X, problem.y)
        return est.coef_, float(est.n_iter_)

    return ladder(problem, fit_one, TOL_LADDER, budget)


def sgd_system(problem, rep, budget, ctx):
    from sklearn.linear_model import SGDClassifier, SGDRegressor

    def fit_one(epochs):
        common = dict(penalty="l2", alpha=problem.lam, fit_intercept=False, max_iter=epochs, tol=None,
                      random_state=rep)
        if problem.loss == "squared":  # its default schedule ("invscaling"); "optimal" diverges here
            est = SGDRegressor(loss="squared_error", **common)
        else:
            est = SGDClassifier(loss="hinge" if problem.loss == "hinge" else "log_loss",
                                learning_rate="optimal", **common)
        est.fit(problem.X, problem.y)
        return est.coef_, epochs

    return ladder(problem, fit_one, tuple(2**k for k in range(11)), budget)


def daskml_system(problem, rep, budget, ctx):
    from dask_ml.linear_model import LogisticRegression

    Xd, yd = ctx["daskml_data"]
    client = ctx["daskml_client"]

    def fit_one(iters):
        est = LogisticRegression(penalty="l2", C=1.0 / (problem.lam * problem.X.shape[0]), fit_intercept=False,
                                 solver="lbfgs", max_iter=iters, tol=1e-12, solver_kwargs={"normalize": False})
        with client.as_current():  # dask-glm finds its client through get_client()
            est.fit(Xd, yd)
        return est.coef_, math.nan

    return ladder(problem, fit_one, tuple(2**k for k in range(1, 12)), budget, children=True)


def daskdca_system(solver, client=None, n_workers=None):
    """A ``daskdca.fit`` system; ``solver="auto"`` is the user's default call: the arrays as they are, with the
    client where there is one, and no callback (a callback asks for rounds), so the budget does not stop it."""
    def run(problem, rep, budget, ctx):
        cluster = client is not None
        with PeakRSS(children=cluster) as mem, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            common = dict(loss=problem.loss, lam=problem.lam, solver=solver, tol=1e-7, random_state=rep)
            if solver == "auto":
                model = daskdca.fit(problem.X, problem.y, client=client, **common)
            elif cluster:
                model = daskdca.fit(problem.store, client=client, in_memory=True, n_partitions=n_workers,
                                    max_rounds=1_000_000, callback=_wall_cap(start, budget), **common)
            else:
                model = daskdca.fit(problem.X, problem.y, max_rounds=1_000_000, callback=_wall_cap(start, budget),
                                    **common)
            total = time.perf_counter() - start
        history = model.history_
        offset = total - history[-1].seconds
        points = [(r.seconds + offset, r.epochs, r.primal) for r in history]
        # the final point: P of the returned coefficients, recomputed here in NumPy,
        # which must agree with the certified value daskdca reports
        final = problem.objective(model.coef_)
        note = ""
        if abs(final - model.primal_) > 1e-9 * abs(final):
            note = f"reported primal {model.primal_:.12g} != recomputed {final:.12g}"
        points.append((total, model.n_epochs_ if hasattr(model, "n_epochs_") else history[-1].epochs, final))
        return points, mem.peak_mib, note

    return run


def systems_for(problem, args, clients):
    """``{name: run}`` for the systems that take this problem's loss."""
    out = {}
    if problem.loss == "squared":
        out["sklearn-ridge-sag"] = ridge_sag_system
    else:
        out["liblinear-cd"] = liblinear_system(dual=True)
        if problem.loss == "logistic":
            out["liblinear-newton"] = liblinear_system(dual=False)
    out["snapml"] = snapml_system
    out["sgd"] = sgd_system
    dense_mb = problem.X.shape[0] * problem.X.shape[1] * 8 / 2**20
    if problem.loss == "logistic" and dense_mb <= args.dense_limit:
        out["dask-ml"] = daskml_system
    # the default call: solver="auto" in memory, and with the 2-worker client
    out["daskdca-auto"] = daskdca_system("auto")
    if 2 in clients:
        out["daskdca-auto@2w"] = daskdca_system("auto", clients[2])
    # every registered method that takes the loss (and, for primal Newton, the features), in memory with its
    # defaults
    for solver, cls in sorted(REGISTRY.items()):
        if problem.loss in cls.capabilities.losses and not _too_wide(cls(), problem.X.shape[1]):
            out[f"daskdca-{solver}"] = daskdca_system(solver)
    for k, client in clients.items():
        out[f"daskdca-cocoa+@{k}w"] = daskdca_system("cocoa+", client, k)
    # the other cluster methods on 2 workers (on one worker a global mini-batch
    # method is the same algorithm as in memory, only slower)
    for solver, cls in sorted(REGISTRY.items()):
        caps = cls.capabilities
        if (solver != "cocoa+" and caps.cluster and caps.many_partitions and problem.loss in caps.losses
                and not _too_wide(cls(), problem.X.shape[1])):
            out[f"daskdca-{solver}@2w"] = daskdca_system(_recording_often(cls()), clients[2], 2)
    return out


def warm_up(client, n_workers, work):
    """Untimed fits on the cluster before any timed one: a worker's first fit loads the compiled kernels there
    (about 0.3 s), which would otherwise land in the first problem's first timed cluster fit alone."""
    rng = np.random.default_rng(0)
    X = sp.random(400, 50, density=0.1, format="csr", random_state=1)
    y = np.where(rng.random(400) < 0.5, 1.0, -1.0)
    store = str(work / f"warm-up-{n_workers}.zarr")
    daskdca.write_store(store, X, y, block_rows=200, compression="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for loss in ("hinge", "logistic", "squared"):
            target = y if loss != "squared" else rng.standard_normal(400)
            daskdca.fit(X, target, loss=loss, lam=1e-2, tol=1e-3, client=client)
            daskdca.fit(X, target, loss=loss, lam=1e-2, tol=1e-3, client=client, solver="cocoa+",
                        n_partitions=n_workers, callback=lambda record, state: None)
        daskdca.fit(store, loss="logistic", lam=1e-2, tol=1e-3, client=client, in_memory=True,
                    n_partitions=n_workers, solver="cocoa+", callback=lambda record, state: None)


def _too_wide(method, d):
    """Whether the method refuses ``d`` features: primal Newton forms a ``d x d`` Hessian and takes at most
    its ``newton_max_features``."""
    return d > getattr(method, "newton_max_features", d)


def _recording_often(method):
    """A global mini-batch method (one mini-batch a round) records the gap once an epoch by default,
    thousands of cluster rounds apart; every 50 rounds lets the wall-clock cap stop it in time."""
    if "eval_every" in {f.name for f in fields(method)}:
        return replace(method, eval_every=50)
    return method


def run_problem(problem, args, clients, log):
    systems = systems_for(problem, args, clients)
    ctx = {}
    if "dask-ml" in systems:
        import dask.array as da

        client = clients[2]
        rows = -(-problem.X.shape[0] // 2)
        Xd = da.from_array(problem.X.toarray(), chunks=(rows, -1))
        yd = da.from_array((problem.y > 0).astype(np.float64), chunks=(rows,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dask's note on embedding a large array in the graph
            ctx["daskml_data"] = client.persist([Xd, yd])
        ctx["daskml_client"] = client
    runs = []
    for rep in range(args.reps):
        for name, run in systems.items():
            out = run(problem, rep, args.budget, ctx)
            points, peak = out[0], out[1]
            r = Run(name, rep, points, peak, out[2] if len(out) > 2 else "")
            runs.append(r)
            log(f"  rep {rep} {name:28s} best {r.best(problem):9.2e}  t(1e-4) {r.time_to(problem, 1e-4):8.3f}s  "
                f"{r.note}")
    ctx.clear()
    return runs


# --------------------------------------------------------------------------- throughput


def throughput(problem_data, repeats, lam):
    """One-epoch M nnz/s per data set and loss: daskdca kernel, gather-only, LIBLINEAR, snapml."""
    import snapml

    rows = []
    for name, (X, y) in problem_data.items():
        nnz = X.nnz
        for loss in ("hinge", "logistic"):
            ours, gather = bench_daskdca(X, y, lam, repeats, loss)
            _, ll_marginal = bench_liblinear(X, y, lam, repeats, loss)
            snap = []
            for it in range(repeats + 1):
                times = {}
                for max_iter in (1, 6):
                    common = dict(regularizer=lam * X.shape[0], tol=1e-30, max_iter=max_iter, fit_intercept=False,
                                  n_jobs=1, random_state=it)
                    est = (snapml.SupportVectorMachine(**common) if loss == "hinge"
                           else snapml.LogisticRegression(dual=True, **common))
                    t0 = time.perf_counter()
                    est.fit(X, y)
                    times[max_iter] = time.perf_counter() - t0
                if it > 0:
                    snap.append((times[6] - times[1]) / 5)
            rate = lambda ts: [nnz / t / 1e6 for t in ts if t > 0]  # noqa: E731
            rows.append({"data": name, "loss": loss, "nnz": nnz, "daskdca": rate(ours), "gather": rate(gather),
                         "liblinear": rate(ll_marginal), "snapml": rate(snap)})
    return rows


# --------------------------------------------------------------------------- report


def _stats(values):
    v = np.asarray([x for x in values if np.isfinite(x)])
    if len(v) < len(values) or len(v) == 0:
        return None
    return float(np.median(v)), float(v.min()), float(v.max())


def _fmt_stats(s, unit=""):
    if s is None:
        return "-"
    med, lo, hi = s
    return f"{med:.3g}{unit} ({lo:.3g}-{hi:.3g})"


def _fmt(x, spec=".3g"):
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


def report(problems, runs_by_key, tput, meta, plot_dir, rel_plots):
    lines = [MARK_BEGIN, "", "## Side by side with the peers (benchmarks/suite.py)", ""]
    lines += [f"Command: `{meta['command']}`", "",
              f"Date: {meta['date']}. Machine: {meta['machine']}. Versions: {meta['versions']}.",
              f"Repetitions: {meta['reps']}; budget {meta['budget']:g} s per system, problem and rep; "
              f"wall time of the whole run: {meta['wall'] / 60:.1f} min.", "",
              "Times are wall seconds to a relative suboptimality `(P - P*)/P*`, median (min-max) over the reps; "
              "`-` means not reached within the budget in every rep (or not run). `best` is the smallest "
              "suboptimality any rung or round reached (median over reps): a peer whose regulariser were mapped "
              "wrongly would stall far above 1e-6 here. Peak memory is the resident set above the start of the "
              "fit, with the worker processes for cluster systems.", ""]

    lines += ["### Reference optimum", "",
              "| problem | n | d | nnz | P* | (P - P*)/P* of each reference | certified (P* - D)/P* | seconds |",
              "|---|---:|---:|---:|---:|---|---:|---:|"]
    for p in problems:
        ref = p.reference
        parts = ", ".join(f"{k}: {(v - p.p_star) / abs(p.p_star):.1e}" for k, v in ref["values"].items())
        bound = (p.p_star - ref["daskdca dual (lower bound)"]) / abs(p.p_star)
        lines.append(f"| {p.key} | {p.X.shape[0]:,} | {p.X.shape[1]:,} | {p.X.nnz:,} | {p.p_star:.10g} | {parts} | "
                     f"{bound:.1e}{'' if ref['daskdca certified'] else ' (not certified)'} | "
                     f"{ref['seconds']:.1f} |")
    lines.append("")

    ratio_rows = []
    for p in problems:
        runs = runs_by_key[p.key]
        names = list(dict.fromkeys(r.system for r in runs))
        lines += [f"### {p.key}", "",
                  "| system | " + " | ".join(f"s to {t:g}" for t in TARGETS) +
                  " | epochs to 1e-4 | best | peak MiB |",
                  "|---|" + "---:|" * (len(TARGETS) + 3)]
        by_system = {s: [r for r in runs if r.system == s] for s in names}
        for s, rs in by_system.items():
            cells = [_fmt_stats(_stats([r.time_to(p, t) for r in rs])) for t in TARGETS]
            ep = _stats([r.epochs_to(p, 1e-4) for r in rs])
            best = float(np.median([r.best(p) for r in rs]))
            peak = float(np.median([r.peak_mib for r in rs]))
            notes = "; ".join(sorted({r.note for r in rs if r.note}))
            lines.append(f"| {s} | " + " | ".join(cells) + f" | {_fmt(ep[0] if ep else math.nan)} | {best:.1e} | "
                         f"{peak:.0f} |" + (f" {notes}" if notes else ""))
        lines.append("")
        if rel_plots.get(p.key):
            lines += [f"![{p.key}]({rel_plots[p.key]})", ""]
        # ratios against each peer, per rep: the default call (auto) and the best explicit method, in memory and on 2
        # workers
        ours = {"auto, in memory": [s for s in names if s == "daskdca-auto"],
                "auto, 2-worker client": [s for s in names if s == "daskdca-auto@2w"],
                "in memory, best method": [s for s in names if s.startswith("daskdca-") and "@" not in s
                                           and s != "daskdca-auto"],
                "2 workers, best method": [s for s in names if s.startswith("daskdca-") and s.endswith("@2w")
                                           and s != "daskdca-auto@2w"]}
        peers = [s for s in names if not s.startswith("daskdca-")]
        for label, candidates in ours.items():
            if not candidates:
                continue
            for peer in peers:
                cells = []
                for t in TARGETS:
                    ratios = []
                    for rep in range(meta["reps"]):
                        mine = min((r.time_to(p, t) for r in runs if r.rep == rep and r.system in candidates),
                                   default=math.nan)
                        theirs = next(r.time_to(p, t) for r in runs if r.rep == rep and r.system == peer)
                        ratios.append(mine / theirs if np.isfinite(theirs) else math.nan)
                    cells.append(_fmt_stats(_stats(ratios), "x"))
                ratio_rows.append(f"| {p.key} | daskdca {label} | {peer} | " + " | ".join(cells) + " |")

    lines += ["### daskdca's time as a ratio to each peer", "",
              "Per rep, daskdca's time divided by the peer's: `auto` is the default call (`solver=\"auto\"`, "
              "in memory, and with the 2-worker client given); `best method` is the fastest of the group's "
              "explicit methods (in memory: every registered method with its defaults; 2 workers: those on the "
              "2-worker LocalCluster). Median (min-max) over reps. Below 1 daskdca is faster; `-` where either "
              "side did not get there in some rep.", "",
              "| problem | daskdca | peer | " + " | ".join(f"to {t:g}" for t in TARGETS) + " |",
              "|---|---|---|" + "---:|" * len(TARGETS)] + ratio_rows + [""]

    if tput:
        lines += ["### One-epoch throughput (M nnz/s, one core)", "",
                  f"lam = {meta['throughput_lam']:g}. daskdca: one `local_sdca` pass over a permutation of all "
                  "rows; gather: a bare numba loop computing `x_i . w` in the same order; LIBLINEAR and snapml: "
                  "`(t(6 iterations) - t(1)) / 5`, one thread. LIBLINEAR's hinge solver shrinks, so its later "
                  "passes skip rows and its hinge rate is not per nnz of a full pass.", "",
                  "| data | loss | nnz | daskdca | gather | LIBLINEAR | snapml | daskdca/gather | "
                  "daskdca/LIBLINEAR | daskdca/snapml |", "|---|---|---:|" + "---:|" * 7]
        for row in tput:
            med = {k: _stats(row[k]) for k in ("daskdca", "gather", "liblinear", "snapml")}

            def ratio(a, b):
                return f"{med[a][0] / med[b][0]:.2f}" if med[a] and med[b] else "-"

            lines.append(f"| {row['data']} | {row['loss']} | {row['nnz']:,} | {_fmt_stats(med['daskdca'])} | "
                         f"{_fmt_stats(med['gather'])} | {_fmt_stats(med['liblinear'])} | "
                         f"{_fmt_stats(med['snapml'])} | {ratio('daskdca', 'gather')} | "
                         f"{ratio('daskdca', 'liblinear')} | {ratio('daskdca', 'snapml')} |")
        lines.append("")
    lines.append(MARK_END)
    return "\n".join(lines) + "\n"


def plot(problem, runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    floor = 1e-12
    systems = list(dict.fromkeys(r.system for r in runs))
    colours = plt.get_cmap("tab20")
    for index, system in enumerate(systems):
        run = next(r for r in runs if r.system == system and r.rep == 0)
        pts = sorted(run.points)
        t = [q[0] for q in pts]
        e = [q[1] for q in pts]
        s = [max(problem.subopt(q[2]), floor) for q in pts]
        style = "-" if system.startswith("daskdca") else "--"
        marker = "" if system.startswith("daskdca") else "o"
        colour = colours(index % 20)
        axes[0].plot(t, s, style, marker=marker, ms=3, color=colour, label=system)
        if np.all(np.isfinite(e)):
            axes[1].plot(e, s, style, marker=marker, ms=3, color=colour)
    for ax, xlabel in zip(axes, ("seconds (wall)", "epochs (passes over the data)")):
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("(P - P*) / P*")
        for target in TARGETS:
            ax.axhline(target, color="0.85", lw=0.8, zorder=0)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"{problem.key}: suboptimality against time (rep 0)")
    axes[1].set_title("against epochs (systems that count them)")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _versions():
    import importlib.metadata as md

    names = ["numpy", "scipy", "numba", "scikit-learn", "dask", "distributed", "zarr", "snapml", "dask-ml"]
    out = [f"python {platform.python_version()}", f"daskdca {daskdca.__version__}"]
    for name in names:
        try:
            out.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def _machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} {platform.release()}"


# --------------------------------------------------------------------------- main


QUICK = {"problems": [("a9a", "hinge", 1e-3), ("a9a", "logistic", 1e-3), ("genreg50k", "squared", 1e-4)],
         "throughput": ["a9a"], "reps": 3, "budget": 2.0}
FULL = {"problems": [("a9a", "hinge", 1e-3), ("a9a", "logistic", 1e-3), ("a9a", "logistic", 1e-6),
                     ("w8a", "hinge", 1e-5), ("w8a", "logistic", 1e-5), ("ijcnn1", "logistic", 1e-4),
                     ("reuters", "hinge", 1e-5), ("rcv1_1k", "logistic", 1e-3),
                     ("gen100k", "logistic", 1e-4), ("genreg50k", "squared", 1e-4)],
        "throughput": list(REAL), "reps": 3, "budget": 10.0}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the CI-sized suite (a few minutes)")
    parser.add_argument("--out", default=None,
                        help="write DIR/RESULTS.md, DIR/plots and DIR/results.json instead of benchmarks/")
    parser.add_argument("--data-dir", default=str(HERE.parents[1] / "shared" / "data"))
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds per system, problem and rep (default 10; 2 with --quick)")
    parser.add_argument("--only", default=None,
                        help="comma-separated data set names to keep from the chosen suite, e.g. a9a,w8a")
    parser.add_argument("--dense-limit", type=float, default=200.0,
                        help="largest dense copy (MB) handed to dask-ml (default 200)")
    parser.add_argument("--no-throughput", action="store_true", help="skip the one-epoch throughput table")
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else FULL
    args.problems = preset["problems"]
    if args.only:
        keep = set(args.only.split(","))
        unknown = keep - set(REAL) - set(GENERATED)
        if unknown:
            parser.error(f"--only names unknown data sets {sorted(unknown)}; choose from "
                         f"{sorted(REAL) + sorted(GENERATED)}")
        args.problems = [p for p in args.problems if p[0] in keep]
    args.throughput = [] if args.no_throughput else [n for n in preset["throughput"]
                                                    if not args.only or n in args.only.split(",")]
    args.reps = preset["reps"] if args.reps is None else args.reps
    args.budget = preset["budget"] if args.budget is None else args.budget
    if args.reps < 1 or args.budget <= 0:
        parser.error(f"--reps must be >= 1 and --budget > 0, got {args.reps} and {args.budget}")
    return args


def main(argv=None):
    args = parse_args(argv)
    from distributed import Client, LocalCluster

    started = time.perf_counter()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    out_dir = Path(args.out) if args.out else HERE
    plot_dir = out_dir / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    work = Path(tempfile.mkdtemp(prefix="daskdca-bench-"))
    clusters = []
    try:
        clients = {}
        for k in (1, 2):
            cluster = LocalCluster(n_workers=k, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            clusters.append(cluster)
            clients[k] = Client(cluster, set_as_default=False)
            warm_up(clients[k], k, work)
        data, problems, runs_by_key, rel_plots = {}, [], {}, {}
        for name, loss, lam in args.problems:
            if name not in data:
                data[name] = load_data(name, args.data_dir, work)
            X, y = data[name]
            problem = Problem(name, X, y, loss, lam)
            store_path = work / f"{name}.zarr"
            if not store_path.exists():
                daskdca.write_store(str(store_path), X, y, block_rows=-(-X.shape[0] // 2), compression="none")
            problem.store = str(store_path)
            reference_optimum(problem, max_seconds=max(60.0, 5 * args.budget))
            log(f"{problem.key}: n={X.shape[0]} d={X.shape[1]} nnz={X.nnz} P*={problem.p_star:.12g} "
                f"({problem.reference['seconds']:.1f}s)")
            runs = run_problem(problem, args, clients, log)
            runs_by_key[problem.key] = runs
            problems.append(problem)
            fname = f"{name}_{loss}_{lam:g}.png"
            plot(problem, runs, plot_dir / fname)
            rel_plots[problem.key] = f"plots/{fname}"
        tput = throughput({n: data[n] if n in data else load_data(n, args.data_dir, work) for n in args.throughput},
                          repeats=3, lam=1e-4) if args.throughput else []
    finally:
        for cluster in clusters:
            cluster.close()
        shutil.rmtree(work, ignore_errors=True)

    command = "python benchmarks/suite.py " + " ".join(sys.argv[1:] if argv is None else argv)
    meta = {"command": command.strip(), "date": datetime.date.today().isoformat(), "machine": _machine(),
            "versions": _versions(), "reps": args.reps, "budget": args.budget,
            "wall": time.perf_counter() - started, "throughput_lam": 1e-4}
    section = report(problems, runs_by_key, tput, meta, plot_dir, rel_plots)
    results = out_dir / "RESULTS.md"
    if args.out is None and results.exists():
        text = results.read_text()
        if MARK_BEGIN in text and MARK_END in text:
            head, rest = text.split(MARK_BEGIN, 1)
            text = head + section.rstrip("\n") + rest.split(MARK_END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + section
        results.write_text(text)
    else:
        results.write_text("# Benchmark results (benchmarks/suite.py)\n\n" + section)
    raw = {"meta": meta,
           "problems": {p.key: {"p_star": p.p_star, "reference": p.reference} for p in problems},
           "runs": {key: [r.__dict__ for r in rs] for key, rs in runs_by_key.items()},
           "throughput": tput}
    (out_dir / "results.json").write_text(json.dumps(raw, indent=1, default=float))
    log(f"wrote {results} and {plot_dir} in {meta['wall'] / 60:.1f} min")


if __name__ == "__main__":
    main()
