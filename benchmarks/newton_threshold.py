"""Where primal Newton overtakes serial SDCA in one process: seconds to a certified 1e-6 against ``lam n``.

For a9a (d = 123), ijcnn1 (d = 22) and a KDD99-shaped generated set (200,000 x 122, ``routes.py``'s
generator), logistic loss, ``lam n`` in {0.3, 1, 3, 10}: ``daskdca.fit(solver="newton")`` and
``daskdca.fit(solver="sdca")`` (each stops on its certified gap).  Medians of ``--repeats`` runs after a
warm-up.  It measures and asserts nothing.

Run: ``python benchmarks/newton_threshold.py [--repeats 3]``.  Results: benchmarks/RESULTS.md, "Primal Newton
against SDCA by lam n".
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

import daskdca
from routes import _kdd_like

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def seconds(X, y, lam, solver, repeats):
    times, fit = [], None
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            fit = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=1e-6)
            times.append(time.perf_counter() - t)
    return statistics.median(times), fit


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--sets", default="a9a,ijcnn1,kdd", help="a9a, ijcnn1, w8a (d = 300) and kdd")
    args = parser.parse_args()
    wanted = args.sets.split(",")
    sets = []
    for name, d in (("a9a.gz", 123), ("ijcnn1.bz2", 22), ("w8a.gz", 300)):
        if name.split(".")[0] in wanted:
            X, y = load_svmlight_file(str(args.data_dir / name), n_features=d)
            sets.append((name.split(".")[0], sp.csr_matrix(X), y))
    if "kdd" in wanted:
        sets.append(("KDD99-shaped 200k",) + _kdd_like(200_000))
    print("| data | lam n | Newton s (rounds) | SDCA s (epochs) | SDCA / Newton |")
    print("|---|---:|---:|---:|---:|")
    for name, X, y in sets:
        n = X.shape[0]
        seconds(X, y, 1.0 / n, "newton", 1)  # compile
        seconds(X, y, 1.0 / n, "sdca", 1)
        for lam_n in (0.3, 1.0, 3.0, 10.0):
            tn, fn = seconds(X, y, lam_n / n, "newton", args.repeats)
            ts, fs = seconds(X, y, lam_n / n, "sdca", args.repeats)
            print(f"| {name} | {lam_n:g} | {tn:.3f} ({fn.n_rounds_}) | {ts:.3f} ({fs.n_rounds_}) | {ts / tn:.2f} |")


if __name__ == "__main__":
    main()
