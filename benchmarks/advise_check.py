"""daskdca.advise against the fits it predicts: the route it picks, the fastest route measured, and its
predicted time against the measured one, on the side-by-side suite's real problems, in memory.

For each problem: ``daskdca.advise`` (its probe included in its own time), then the fit it advises
(``solver="auto"``) and the other single-partition candidates (plain SDCA, SDCA inside Catalyst, primal
Newton where the loss takes it), each timed once after a warm-up, to ``--tol``.

Usage::

    python benchmarks/advise_check.py [--tol 1e-4]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

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
    args = parser.parse_args()
    warnings.simplefilter("ignore")
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


if __name__ == "__main__":
    main()
