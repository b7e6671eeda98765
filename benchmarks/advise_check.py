"""daskdca.advise against the fits it predicts: the route it picks, the fastest route measured, and its
predicted time against the measured one, on the side-by-side suite's real problems, in memory.

For each problem: ``daskdca.advise`` (its probe included in its own time), then the fit it advises
(``solver="auto"``) and the other single-partition candidates (plain SDCA, SDCA inside Catalyst, primal
Newton where the loss takes it), each timed once after a warm-up, to ``--tol``.

With ``--rounds``, the route with rounds on a 2-worker 1-thread LocalCluster instead (a callback asks for
rounds, as a checkpoint would): for each problem ``daskdca.advise`` and the fit it predicts, after a warm-up
fit on the cluster, with the predicted and measured rounds and the cost of a round beyond its arithmetic
that ``advise`` measured, against the measured seconds a round; ``--generated`` adds round_overhead.py's
generated 250,000 x 100,000 set (5 M nnz, logistic, lam 1e-5 and 1e-6), where ``d`` is large.

Usage::

    python benchmarks/advise_check.py [--tol 1e-4] [--rounds [--generated]]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import daskdca  # noqa: E402
from daskdca.routes import NEWTON_LOSSES  # noqa: E402

from conftest import load_dataset  # noqa: E402

# the suite's problems (benchmarks/suite.py), by data set, loss and lam
PROBLEMS = [("a9a", "hinge", 1e-3), ("a9a", "logistic", 1e-3), ("a9a", "logistic", 1e-6), ("w8a", "hinge", 1e-5),
            ("w8a", "logistic", 1e-5), ("ijcnn1", "logistic", 1e-4), ("reuters", "hinge", 1e-5),
            ("rcv1_1k", "logistic", 1e-3)]


def timed_fit(X, y, **kw):
    start = time.perf_counter()
    model = daskdca.fit(X, y, **kw)
    return time.perf_counter() - start, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--rounds", action="store_true", help="the route with rounds on a 2-worker LocalCluster")
    parser.add_argument("--generated", action="store_true", help="with --rounds: add a generated 5 M nnz set")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.rounds:
        return rounds_check(args.tol, args.generated)
    print("| problem | advised | predicted s | measured s | measured / predicted | fastest candidate | "
          "its s |")
    print("|---|---|---|---|---|---|---|")
    for name, loss, lam in PROBLEMS:
        X, y = load_dataset(name)
        kw = dict(loss=loss, lam=lam, tol=args.tol)
        candidates = {"sdca": "sdca", "sdca+catalyst": daskdca.SDCA(acceleration="catalyst")}
        if loss in NEWTON_LOSSES and X.shape[1] <= 5000:
            candidates["newton"] = "newton"
        for solver in candidates.values():  # warm-up: numba compiled before any clock
            daskdca.fit(X, y, solver=solver, max_epochs=1, **{**kw, "tol": 1e-1})
        advice = daskdca.advise(X, y, **kw)
        measured, model = timed_fit(X, y, **kw)
        times = {label: timed_fit(X, y, solver=solver, **kw)[0] for label, solver in candidates.items()}
        best = min(times, key=times.get)
        advised = model.solver.name + ("+catalyst" if getattr(model.solver, "acceleration", None) == "catalyst"
                                       else "")
        print(f"| {name} {loss} {lam:g} | {advised} | {advice.predicted_seconds:.3f} | {measured:.3f} | "
              f"{measured / advice.predicted_seconds:.2f} | {best} | {times[best]:.3f} |")
        sys.stdout.flush()


def rounds_check(tol, generated):
    from distributed import Client, LocalCluster

    from round_overhead import make

    problems = [(name, loss, lam, lambda name=name: load_dataset(name)) for name, loss, lam in PROBLEMS]
    if generated:
        problems += [("generated 5 M nnz", "logistic", lam, lambda: make(250_000, 100_000, 20)) for lam in (1e-5, 1e-6)]

    print("| problem | solver | predicted s | measured s | measured / predicted | rounds predicted / measured | "
          "round beyond its arithmetic, ms (advise) | measured ms a round | advise's own s |")
    print("|---|---|---|---|---|---|---|---|---|")
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as client:
        for name, loss, lam, load in problems:
            X, y = load()
            kw = dict(loss=loss, lam=lam, client=client, callback=lambda record, state: None)
            daskdca.fit(X, y, tol=1e-1, **kw)  # warm-up: the kernels compiled on the workers before any clock
            started = time.perf_counter()
            advice = daskdca.advise(X, y, tol=tol, **kw)
            advising = time.perf_counter() - started
            measured, model = timed_fit(X, y, tol=tol, **kw)
            first, last = model.history_[0], model.history_[-1]
            per_round = (last.seconds - first.seconds) / max(last.round - first.round, 1)
            print(f"| {name} {loss} {lam:g} | {model.solver.name} | {advice.predicted_seconds:.3f} | {measured:.3f} | "
                  f"{measured / advice.predicted_seconds:.2f} | {advice.predicted_passes:.0f} / {model.n_rounds_} | "
                  f"{advice.round_latency * 1e3:.1f} | {per_round * 1e3:.1f} | {advising:.1f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
