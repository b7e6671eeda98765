"""Rounds of CoCoA+ with and without Catalyst against serial SDCA's epochs.

For each problem (data set, loss, lam) it fits, in process and side by side:

- serial SDCA (``solver="sdca"``, one partition): epochs to a certified relative gap ``tol``;
- plain CoCoA+ (``CoCoAPlus(acceleration=None)``) and CoCoA+ inside Catalyst
  (``CoCoAPlus(acceleration="catalyst")``) on K = 2 and 4 seeded random
  partitions: rounds to the same certificate (one round = one pass over every
  partition, so rounds and epochs are the same count).

A certified relative gap ``(P - D) / |P| <= tol`` bounds the relative
suboptimality by ``tol``.  Each fit stops at ``--max-rounds`` or after
``--max-seconds``; such a cell prints ``>N`` (the rounds it ran).  Round counts
do not depend on the machine's load.

With ``--serial`` it compares, instead, serial SDCA with and without Catalyst
(``SDCA(acceleration="catalyst")``, one partition): epochs and seconds to the
certificate, after one warm-up fit so that no cell pays numba's compilation.

Usage::

    python benchmarks/catalyst_rounds.py                     # the RESULTS table (about 15 min here)
    python benchmarks/catalyst_rounds.py --datasets a9a --lams 1e-5 --plot benchmarks/plots/catalyst_a9a.png
    python benchmarks/catalyst_rounds.py --serial --datasets a9a,w8a,ijcnn1 --lams 1e-4,1e-5,1e-6
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import daskdca  # noqa: E402
from suite import load_data  # noqa: E402

# A generated set of at least 5 M non-zeros (the cluster benchmarks ask for that): rows, features, and the generator's
# nnz_per_row (about 30 distinct features a row remain: 5.0 M nnz in all).
GENERATED = {"gen5m": (170_000, 20_000, 40.0), "url10": (240_000, 3_231_961, 115.0),
             "url": (2_396_130, 3_231_961, 155.0)}


def load_data_set(name, data_dir, work_dir):
    """``(X, y)`` of a suite data set (``suite.load_data``), of the generated 5 M nnz set ``gen5m``, or of
    ``url10``, a generated set of a tenth of URL's rows and all its features (240,000 x 3,231,961, about 115
    stored values a row as in URL: about 28 M), or of ``url``, URL's full size (2,396,130 rows, about 257 M)."""
    if name not in GENERATED:
        return load_data(name, data_dir, work_dir)
    from daskdca import datasets, store

    n, d, per_row = GENERATED[name]
    path = Path(work_dir) / f"{name}-source.zarr"
    # written once; a later run reads it (its blocks are checksummed)
    source = (store.open_store(str(path)) if path.exists()
              else datasets.make_classification(str(path), n, d, nnz_per_row=per_row, seed=0))
    X, y = source.read_all()
    print(f"{name}: {X.shape[0]} x {X.shape[1]}, {X.nnz / 1e6:.2f} M nnz", file=sys.stderr)
    return X.tocsr(), np.asarray(y, dtype=np.float64)


def _fit(X, y, loss, lam, solver, K, tol, max_rounds, max_seconds):
    start = time.perf_counter()

    def out_of_time(record, state):
        return time.perf_counter() - start > max_seconds

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a capped fit warns; the table says '>N'
        m = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, n_partitions=K, tol=tol, max_rounds=max_rounds,
                        random_state=0, callback=out_of_time)
    return m, time.perf_counter() - start


def _cell(m):
    return f"{m.n_rounds_}" if m.converged_ else f">{m.n_rounds_}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="a9a,w8a,ijcnn1,reuters,gen5m")
    parser.add_argument("--losses", default="logistic,hinge")
    parser.add_argument("--lams", default="1e-3,1e-4,1e-5,1e-6")
    parser.add_argument("--partitions", default="2,4")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-rounds", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--work-dir", default="/tmp/daskdca-bench")
    parser.add_argument("--plot", default=None, help="gap against rounds of the first problem, to this PNG")
    parser.add_argument("--serial", action="store_true", help="serial SDCA with and without Catalyst instead")
    args = parser.parse_args(argv)
    if args.serial:
        return _serial(args)
    Ks = [int(k) for k in args.partitions.split(",")]
    header = ["data", "loss", "lam", "serial SDCA epochs"]
    for K in Ks:
        header += [f"K={K} CoCoA+", f"K={K} Catalyst", f"K={K} Catalyst / serial"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    plotted = False
    for name in args.datasets.split(","):
        X, y = load_data_set(name, args.data_dir, args.work_dir)
        for loss in args.losses.split(","):
            for lam in (float(v) for v in args.lams.split(",")):
                fit = lambda solver, K: _fit(X, y, loss, lam, solver, K, args.tol, args.max_rounds,  # noqa: E731
                                             args.max_seconds)
                serial, _ = fit("sdca", 1)
                row = [name, loss, f"{lam:g}", _cell(serial)]
                histories = {"serial SDCA": serial.history_}
                for K in Ks:
                    plain, _ = fit(daskdca.CoCoAPlus(acceleration=None), K)
                    accelerated, _ = fit(daskdca.CoCoAPlus(acceleration="catalyst"), K)
                    ratio = (f"{accelerated.n_rounds_ / serial.n_rounds_:.2f}"
                             if accelerated.converged_ and serial.converged_ else "-")
                    row += [_cell(plain), _cell(accelerated), ratio]
                    histories[f"CoCoA+, K={K}"] = plain.history_
                    histories[f"Catalyst CoCoA+, K={K}"] = accelerated.history_
                print("| " + " | ".join(row) + " |", flush=True)
                if args.plot and not plotted:
                    _plot(histories, f"{name}, {loss}, lam {lam:g}", args.plot)
                    plotted = True


def _serial(args):
    print("| data | loss | lam | SDCA epochs | SDCA s | Catalyst SDCA epochs | Catalyst SDCA s | time ratio |")
    print("|" + "---|" * 8)
    warmed = False
    for name in args.datasets.split(","):
        X, y = load_data_set(name, args.data_dir, args.work_dir)
        for loss in args.losses.split(","):
            if not warmed:  # numba compiles every kernel once per process
                for solver in (daskdca.SDCA(), daskdca.SDCA(acceleration="catalyst")):
                    _fit(X, y, loss, 1e-3, solver, 1, args.tol, 5, args.max_seconds)
            for lam in (float(v) for v in args.lams.split(",")):
                plain, t_plain = _fit(X, y, loss, lam, daskdca.SDCA(), 1, args.tol, args.max_rounds,
                                      args.max_seconds)
                accelerated, t_acc = _fit(X, y, loss, lam, daskdca.SDCA(acceleration="catalyst"), 1, args.tol,
                                          args.max_rounds, args.max_seconds)
                print(f"| {name} | {loss} | {lam:g} | {_cell(plain)} | {t_plain:.2f} | {_cell(accelerated)} | "
                      f"{t_acc:.2f} | {t_acc / t_plain:.2f} |", flush=True)
        warmed = True


def _plot(histories, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, history in histories.items():
        rounds = [r.round for r in history]
        gaps = [max(r.gap / abs(r.primal), 1e-12) for r in history]
        ax.semilogy(rounds, gaps, label=label)
    ax.set_xlabel("rounds (epochs for serial SDCA)")
    ax.set_ylabel("certified relative gap")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
