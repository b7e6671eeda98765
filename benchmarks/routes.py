"""The Dask route against one core: seconds to a certified gap by route, side by side in one process.

Cases (each timed ``--reps`` times, interleaved, median reported; the LocalClusters are started before the
clock and their start is excluded, except in the "ten fits" case, which is about the start):

- ``a9a``: a9a, logistic, lam 1e-5, to a certified relative gap of 1e-6: serial SDCA in this process
  (``solver="auto"`` without a client), ``solver="auto"`` with a 2-worker client (the whole fit on one
  worker), and the old default, CoCoA+ rounds on 2 workers (``solver="cocoa+"``).
- ``kdd``: a generated set of KDD99's shape (``--kdd-rows`` rows, 122 features, about 14 stored values a
  row, logistic, lam 1e-6 ... see ``--kdd-lam``) to 1e-4: LIBLINEAR single thread (scikit-learn's
  ``LogisticRegression(solver="liblinear")`` at ``C = 1/(lam n)``, no intercept, the first tolerance of a
  ladder whose ``P(w)`` is within 1e-4 of ``P*``), daskdca ``solver="auto"`` in memory and with a
  2-worker client.
- ``store``: a generated 1,000,000 x 100,000 store (20 M stored values, logistic, lam 1e-6) to 1e-4: serial
  SDCA in memory, 1 worker and 2 workers with ``solver="auto"``, and 1 and 2 workers out of core
  (``in_memory=False``: rounds, one partition per worker).
- ``ten``: ten ``daskdca.fit(dask_array)`` calls without a client: the first (which starts the
  process's LocalCluster) and the median of the other nine.
- ``penalised``: a9a, logistic, ``lam = 1/n`` (``C = 1``), to a certified 1e-6, with the pure L1
  (``l1_ratio=1``) and the elastic-net (``l1_ratio=0.5``) penalties: ``solver="auto"`` in this process and
  with a 2-worker client (the route L2 takes), and the proximal methods' rounds across the 2 workers
  (``L1SDCA()``, ``CoCoAPlus(l1_ratio=0.5)``: the old route of a penalised fit with a client).

Usage::

    python benchmarks/routes.py [--cases a9a,kdd,store,ten,penalised] [--reps 3] [--kdd-rows 1000000]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import daskdca  # noqa: E402
from cluster_time import liblinear_ladder_seconds  # noqa: E402  (run as a script: benchmarks/ is on sys.path)
from daskdca.engine import local_client  # noqa: E402

from conftest import load_dataset  # noqa: E402


def timed(call):
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def median_times(calls, reps):
    """Each of ``calls`` (name -> callable) ``reps`` times, interleaved; name -> (median seconds, last result)."""
    seconds = {name: [] for name in calls}
    results = {}
    for _ in range(reps):
        for name, call in calls.items():
            t, results[name] = timed(call)
            seconds[name].append(t)
    return {name: (statistics.median(ts), results[name]) for name, ts in seconds.items()}


def show(title, rows, base):
    print(f"\n### {title}\n")
    print("| route | seconds | ratio to " + base + " | rounds | relative gap | route_ |")
    print("|---|---|---|---|---|---|")
    ref = rows[base][0]
    for name, (t, model) in rows.items():
        if model is None:
            print(f"| {name} | {t:.3f} | {t / ref:.2f} | - | - | - |")
            continue
        rel = float(np.max(np.asarray(model.gap_) / np.abs(np.asarray(model.primal_))))
        route = "-" if model.route_ is None else f"{model.route_.name}, {model.solver.name}"
        print(f"| {name} | {t:.3f} | {t / ref:.2f} | {model.n_rounds_} | {rel:.1e} | {route} |")
    sys.stdout.flush()


def case_a9a(reps):
    X, y = load_dataset("a9a")
    kw = dict(loss="logistic", lam=1e-5, tol=1e-6, random_state=0)
    daskdca.fit(X, y, **kw)  # numba compiled before the clock
    daskdca.fit(X, y, solver="sdca", **kw)
    with local_client(2) as client:
        daskdca.fit(X, y, client=client, **{**kw, "tol": 1e-2})  # the workers compile too
        rows = median_times({
            "in memory, serial SDCA": lambda: daskdca.fit(X, y, solver="sdca", **kw),
            "in memory, auto": lambda: daskdca.fit(X, y, **kw),
            "2 workers, auto": lambda: daskdca.fit(X, y, client=client, **kw),
            "2 workers, cocoa+ rounds": lambda: daskdca.fit(X, y, client=client, solver="cocoa+", **kw),
        }, reps)
    show("a9a, logistic, lam 1e-5, to a certified 1e-6", rows, "in memory, serial SDCA")


def _kdd_like(n_rows, seed=0):
    """KDD99's shape: 122 binary/real features, about 14 stored values a row, labels from a planted model."""
    rng = np.random.default_rng(seed)
    d, per_row = 122, 14
    cols = np.sort(rng.choice(d, size=(n_rows, per_row), replace=True), axis=1)
    data = rng.random((n_rows, per_row))
    indptr = np.arange(0, n_rows * per_row + 1, per_row)
    X = sp.csr_matrix((data.ravel(), cols.ravel(), indptr), shape=(n_rows, d))
    X.sum_duplicates()
    w = rng.standard_normal(d)
    margin = X @ w
    y = np.where(margin + 0.5 * rng.standard_normal(n_rows) > np.median(margin), 1.0, -1.0)
    return X, y


def case_kdd(reps, n_rows, lam):
    X, y = _kdd_like(n_rows)
    kw = dict(loss="logistic", lam=lam, tol=1e-4, random_state=0)
    star = daskdca.fit(X, y, loss="logistic", lam=lam, tol=1e-10, solver="newton")

    daskdca.fit(X, y, **kw)
    with local_client(2) as client:
        daskdca.fit(X, y, client=client, **kw)
        calls = {
            # LIBLINEAR's primal trust-region Newton, the first tolerance of the ladder within 1e-4 of P*
            "LIBLINEAR (liblinear), 1 thread": lambda: liblinear_ladder_seconds(X, y, "logistic", lam, star.primal_,
                                                                                dual=False),
            "in memory, auto": lambda: daskdca.fit(X, y, **kw),
            "2 workers, auto": lambda: daskdca.fit(X, y, client=client, **kw),
            "in memory, serial SDCA": lambda: daskdca.fit(X, y, solver="sdca", **kw),
            "in memory, primal Newton": lambda: daskdca.fit(X, y, solver="newton", **kw),
            "2 workers, primal Newton rounds": lambda: daskdca.fit(X, y, client=client, solver="newton",
                                                                   n_partitions=2, **kw),
        }
        seconds = {name: [] for name in calls}
        results = {}
        for _ in range(reps):
            for name, call in calls.items():
                t, results[name] = timed(call)
                if name.startswith("LIBLINEAR"):
                    t = results[name]  # the ladder's own timing of the fit that reached P* (1 + 1e-4)
                seconds[name].append(t)
    rows = {name: (statistics.median(ts), None if name.startswith("LIBLINEAR") else results[name])
            for name, ts in seconds.items()}
    show(f"KDD99-shaped, {n_rows:,} x 122, {X.nnz:,} stored values, logistic, lam {lam:g}, to 1e-4", rows,
         "LIBLINEAR (liblinear), 1 thread")


def case_store(reps, folder):
    from daskdca.datasets import make_classification

    store = make_classification(Path(folder) / "store.zarr", 1_000_000, 100_000, nnz_per_row=20.0, seed=0,
                                block_rows=65_536)
    X, y = store.read_all()
    kw = dict(loss="logistic", lam=1e-6, tol=1e-4, random_state=0)
    daskdca.fit(X, y, **kw)
    rows = {}
    calls = {"in memory, serial SDCA": lambda: daskdca.fit(X, y, **kw)}
    with local_client(1) as one:
        daskdca.fit(store, client=one, **{**kw, "tol": 1e-1})
        calls["1 worker, auto"] = lambda: daskdca.fit(store, client=one, **kw)
        calls["1 worker, out of core"] = lambda: daskdca.fit(store, client=one, in_memory=False, **kw)
        rows.update(median_times(calls, reps))
    calls = {}
    with local_client(2) as two:
        daskdca.fit(store, client=two, **{**kw, "tol": 1e-1})
        calls["2 workers, auto"] = lambda: daskdca.fit(store, client=two, **kw)
        calls["2 workers, out of core"] = lambda: daskdca.fit(store, client=two, in_memory=False, **kw)
        rows.update(median_times(calls, reps))
    show(f"1,000,000 x 100,000 store, {store.nnz:,} stored values, logistic, lam 1e-6, to 1e-4", rows,
         "in memory, serial SDCA")


def case_penalised(reps):
    from daskdca.methods.l1 import L1SDCA

    X, y = load_dataset("a9a")
    base = dict(loss="logistic", lam=1.0 / X.shape[0], tol=1e-6, random_state=0)
    for rho, rounds_method in ((1.0, L1SDCA()), (0.5, daskdca.CoCoAPlus(l1_ratio=0.5))):
        kw = {**base, "l1_ratio": rho}
        daskdca.fit(X, y, **kw)  # numba compiled before the clock
        with local_client(2) as client:
            daskdca.fit(X, y, client=client, **{**kw, "tol": 1e-2})  # the workers compile too
            daskdca.fit(X, y, client=client, solver=rounds_method, **{**base, "tol": 1e-2})
            rows = median_times({
                "in memory, auto": lambda: daskdca.fit(X, y, **kw),
                "2 workers, auto": lambda: daskdca.fit(X, y, client=client, **kw),
                "2 workers, rounds": lambda: daskdca.fit(X, y, client=client, solver=rounds_method, **base),
            }, reps)
        show(f"a9a, logistic, C = 1, l1_ratio {rho:g}, to a certified 1e-6", rows, "in memory, auto")


def case_ten():
    import dask.array as da

    from daskdca.engine import close_embedded

    X, y = load_dataset("heart")
    Xd = da.from_array(X.toarray(), chunks=(90, -1))
    yd = da.from_array(y, chunks=90)
    seconds = []
    for _ in range(10):
        t, model = timed(lambda: daskdca.fit(Xd, yd, loss="logistic", lam=1e-3, tol=1e-8))
        seconds.append(t)
    close_embedded()
    print("\n### Ten daskdca.fit(dask_array) calls without a client (heart)\n")
    print(f"first (starts the process's LocalCluster): {seconds[0]:.2f} s; the other nine: median "
          f"{statistics.median(seconds[1:]):.2f} s, max {max(seconds[1:]):.2f} s; route {model.route_.name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="a9a,kdd,store,ten,penalised")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--kdd-rows", type=int, default=1_000_000)
    parser.add_argument("--kdd-lam", type=float, default=1e-6)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    cases = args.cases.split(",")
    if "a9a" in cases:
        case_a9a(args.reps)
    if "kdd" in cases:
        case_kdd(args.reps, args.kdd_rows, args.kdd_lam)
    if "store" in cases:
        with tempfile.TemporaryDirectory(prefix="daskdca-routes-") as folder:
            case_store(args.reps, folder)
    if "ten" in cases:
        case_ten()
    if "penalised" in cases:
        case_penalised(args.reps)


if __name__ == "__main__":
    main()
