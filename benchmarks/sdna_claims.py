"""SDNA's claim (003 Fig. 1): more rows per step help SDNA and hurt mini-batch SDCA, counted in epochs.

Both methods minimise the ridge objective
``P(w) = 1/(2n) sum_i (x_i.w - y_i)^2 + lam/2 ||w||^2`` (squared loss with
``y`` in {-1, +1}, as in spec ``sdna.md`` §5.3; the paper does not state its
loss) at ``lam = 1/n``, on one partition, with ``tau`` in {1, 32, 256}:

* SDNA: ``solver=SDNA(batch_size=tau)``, one round = ``ceil(n / tau)``
  iterations of Algorithm 3 (about one epoch);
* mini-batch SDCA: ``solver="minibatch_sdca", batch_size=tau`` (safe ESO
  weights, seed 000), gap evaluated once per epoch.

Data: agaricus train + test (= UCI mushrooms, 8124 rows, 126 one-hot
features, rows not normalised, like the paper's LIBSVM mushrooms) and a
correlated generated set (spec §5.3.2: n = 2048, d = 1024, rank-20 factor plus
0.3 x noise, unit-norm rows).  Reported: epochs until the certified duality
gap ``P - D`` is at most 1e-6 (at most ``--max-epochs``), and the gap after
20 epochs at tau = 256.  Epochs, not seconds: the machine is shared.

    python benchmarks/sdna_claims.py [--max-epochs 50]

Writes ``benchmarks/plots/sdna_fig1.png`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.methods import SDNA, MinibatchSDCA

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PLOTS = Path(__file__).resolve().parent / "plots"
TAUS = (1, 32, 256)
TARGET = 1e-6
AT_EPOCHS = 20


def agaricus():
    """UCI mushrooms: agaricus train + test, labels 0/1 -> -1/+1."""
    parts = [load_svmlight_file(str(DATA / f), n_features=126) for f in
             ("agaricus.txt.train.gz", "agaricus.txt.test.gz")]
    X = sp.vstack([p[0] for p in parts], format="csr")
    y = np.concatenate([p[1] for p in parts])
    return X, np.where(y > 0, 1.0, -1.0)


def correlated(n=2048, d=1024, rank=20, noise=0.3, seed=0):
    """Spec sdna.md §5.3.2: a rank-``rank`` factor plus ``noise`` x Gaussian noise, unit-norm rows."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d)) / math.sqrt(rank)
    A += noise * rng.standard_normal((n, d))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = np.sign(A @ rng.standard_normal(d))
    y[y == 0] = 1.0
    return sp.csr_matrix(A), y


def run(X, y, solver, max_epochs, rounds_per_epoch):
    """History ``[(epochs, gap)]`` until gap <= TARGET past AT_EPOCHS epochs, or ``max_epochs``."""
    def stop(record, state):
        return record.gap <= TARGET and record.epochs >= AT_EPOCHS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = daskdca.fit(X, y, loss="squared", lam=1.0 / X.shape[0], solver=solver, tol=0.0,
                        max_rounds=max_epochs * rounds_per_epoch, random_state=0, callback=stop)
    return [(r.epochs, r.gap) for r in m.history_]


def epochs_to(history, target=TARGET):
    hits = [e for e, g in history if g <= target]
    return hits[0] if hits else math.inf


def gap_at(history, epochs=AT_EPOCHS):
    after = [(e, g) for e, g in history if e >= epochs]
    return after[0] if after else history[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-epochs", type=int, default=50)
    args = parser.parse_args()
    sets = {"agaricus (mushrooms)": agaricus(), "correlated n=2048 d=1024": correlated()}
    results = {}
    for name, (X, y) in sets.items():
        n = X.shape[0]
        for tau in TAUS:
            per_epoch = -(-n // tau)
            results[name, "SDNA", tau] = run(X, y, SDNA(batch_size=tau), args.max_epochs, 1)
            results[name, "SDCA", tau] = run(X, y, MinibatchSDCA(batch_size=tau), args.max_epochs, per_epoch)
            print(f"{name} tau={tau}: SDNA {epochs_to(results[name, 'SDNA', tau])} "
                  f"SDCA {epochs_to(results[name, 'SDCA', tau])}", flush=True)

    print(f"\nEpochs to a certified duality gap <= {TARGET:g} (squared loss, lam = 1/n, one partition; "
          f"'> {args.max_epochs}' = not reached, with the gap then):\n")
    print("| data | tau | SDNA epochs | mini-batch SDCA epochs |")
    print("|---|---:|---:|---:|")
    for name in sets:
        for tau in TAUS:
            cells = []
            for method in ("SDNA", "SDCA"):
                h = results[name, method, tau]
                e = epochs_to(h)
                cells.append(f"{e:.1f}" if e < math.inf else f"> {h[-1][0]:.0f} (gap {h[-1][1]:.2e})")
            print(f"| {name} | {tau} | {cells[0]} | {cells[1]} |")
    print(f"\nGap after {AT_EPOCHS} epochs at tau = 256:\n")
    print("| data | SDNA gap (epochs) | SDCA gap (epochs) | SDNA / SDCA |")
    print("|---|---:|---:|---:|")
    for name in sets:
        (e1, g1), (e2, g2) = gap_at(results[name, "SDNA", 256]), gap_at(results[name, "SDCA", 256])
        print(f"| {name} | {g1:.3e} ({e1:.2f}) | {g2:.3e} ({e2:.2f}) | {g1 / g2:.2e} |")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = dict(zip(TAUS, ("tab:blue", "tab:orange", "tab:green")))
    for ax, name in zip(axes, sets):
        for tau in TAUS:
            for method, style in (("SDNA", "-"), ("SDCA", "--")):
                e, g = zip(*results[name, method, tau])
                ax.semilogy(e, np.maximum(g, 1e-16), style, color=colors[tau], label=f"{method} tau={tau}")
        ax.axhline(TARGET, color="grey", lw=0.5)
        ax.set_title(name)
        ax.set_xlabel("epochs")
        ax.set_ylabel("duality gap")
        ax.legend(fontsize=7)
    fig.suptitle("003 Fig. 1: SDNA (solid) vs mini-batch SDCA (dashed), squared loss, lam = 1/n")
    fig.tight_layout()
    PLOTS.mkdir(exist_ok=True)
    fig.savefig(PLOTS / "sdna_fig1.png", dpi=110)
    print(f"\nplot: {PLOTS / 'sdna_fig1.png'}")


if __name__ == "__main__":
    main()
