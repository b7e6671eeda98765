"""SDNA's claims (Qu et al. 2016 [QRTF16], Figs. 1-3): epochs (Fig. 1), seconds per epoch (Fig. 2) and runtime (Fig. 3) against tau.

Both methods minimise the ridge objective
``P(w) = 1/(2n) sum_i (x_i.w - y_i)^2 + lam/2 ||w||^2`` (squared loss with
``y`` in {-1, +1}; the paper does not state its
loss) at ``lam = 1/n``, on one partition, with ``tau`` in {1, 32, 256}:

* SDNA: ``solver=SDNA(batch_size=tau)``, one round = ``ceil(n / tau)``
  iterations of Algorithm 3 (about one epoch);
* mini-batch SDCA: ``solver="minibatch_sdca", batch_size=tau`` (safe ESO
  weights, [TRS15]), gap evaluated once per epoch.

Data: agaricus train + test (= UCI mushrooms, 8124 rows, 126 one-hot
features, rows not normalised, like the paper's LIBSVM mushrooms) and a
correlated generated set (``correlated()``: n = 2048, d = 1024, rank-20 factor plus
0.3 x noise, unit-norm rows).  Reported: epochs until the certified duality
gap ``P - D`` is at most 1e-6 (at most ``--max-epochs``), and the gap after
20 epochs at tau = 256.  Epochs, not seconds: the machine is shared.

    python benchmarks/sdna_claims.py [--max-epochs 50]

Writes ``benchmarks/plots/sdna_fig1.png`` and prints a Markdown table.

[QRTF16] Figs. 2-3 (``--figs 2,3``), on the same two sets and problem, tau in
{1, 2, 4, ..., 256}, one partition in memory:

* Fig. 2, seconds per epoch: the library's own epoch kernels timed directly,
  with their sampling (``sdna_batches`` + ``local_sdna`` for SDNA, ``ceil(n / tau)``
  iterations; ``minibatch_schedule`` + ``minibatch_sdca_rounds`` for mini-batch
  SDCA, the fused path of an in-memory fit), after one untimed epoch, over
  enough epochs to last about 0.3 s (0.1 s with ``--quick``); no gap pass and
  no setup (mini-batch SDCA's power iteration takes about 9 s on the dense
  correlated set and is not part of an epoch).  Also SDNA's seconds per epoch
  inside a fit (one gap pass per epoch, setup and certificate included), from
  the Fig. 3 runs.
* Fig. 3, SDNA's time to the Fig. 1 target (certified gap ``P - D <= 1e-6``):
  the ``daskdca.fit(..., solver=SDNA(batch_size=tau), tol=0)`` call, stopped by
  a callback at the first gap evaluation under the target.

Times are process CPU seconds (``time.process_time``; the kernels are
single-threaded), with wall seconds beside them: on the shared machine the
wall clock mostly measures the other processes.  Every (tau, method) cell is
measured ``--reps`` times (3; 1 with ``--quick``), the reps in rotation over
all cells, and the minimum is kept.  Numba compilation is warmed up first.

    python benchmarks/sdna_claims.py --figs 2,3 [--quick]

Writes ``benchmarks/plots/sdna_fig2.png`` and ``sdna_fig3.png``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.kernels.sampling import minibatch_schedule
from daskdca.kernels.sdca import minibatch_sdca_rounds
from daskdca.kernels.sdna import local_sdna, sdna_batches
from daskdca.losses import get_loss
from daskdca.methods import SDNA, MinibatchSDCA
from daskdca.methods.sdna import DEFAULT_BATCH_SIZE
from daskdca.partitions import UNWEIGHTED

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
    """A rank-``rank`` factor plus ``noise`` x Gaussian noise, unit-norm rows."""
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


def fig1(args):
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


# ---------------------------------------------------------------- Figs. 2-3

FIG_TAUS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PAPER_BEST = (4, 16, 32)
MIN_TIMED = 0.3  # seconds: a Fig. 2 timing runs enough epochs to last about this long


class EpochTimer:
    """One method's epochs on one data set, run by the library's kernels from a state it keeps.

    ``epoch()`` runs one epoch (``ceil(n / tau)`` iterations of ``tau`` rows,
    the sampling included) and continues from the previous one's state; the
    first call compiles nothing new (the caller warms up) but is not timed.
    """

    def __init__(self, X, y, method, tau, seed=0):
        self.X, self.y, self.method, self.tau = X, y, method, tau
        self.n, self.d = X.shape
        self.lam_n = 1.0  # lam n with lam = 1/n
        self.loss = get_loss("squared")
        self.indptr = X.indptr.astype(np.int64)
        self.alpha = np.zeros(self.n)
        self.w = np.zeros(self.d)
        self.n_iter = -(-self.n // tau)
        self.seed = seed
        self.round = 0
        sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        # Cauchy-Schwarz's safe beta = tau (the fit's ESO weights are smaller;
        # the squared loss's closed-form step costs the same for any curvature)
        self.q = tau * sqnorm / self.lam_n
        self.offsets = np.array([0, self.n], dtype=np.int64)
        self.acc = np.zeros(self.d)
        self.empty = np.empty(0)

    def epoch(self):
        X, kind, param = self.X, int(self.loss.kind), self.loss.param
        if self.method == "SDNA":
            batches = sdna_batches(self.seed, self.round, 0, self.n, self.tau, self.n_iter)
            local_sdna(self.indptr, X.indices, X.data, self.y, self.alpha, self.w, self.empty, batches, kind,
                       param, self.lam_n, 1.0, False)
        else:
            batches = minibatch_schedule(self.seed, self.round * self.n_iter, self.n_iter, self.offsets, self.tau)
            minibatch_sdca_rounds(self.indptr, X.indices, X.data, self.y, UNWEIGHTED, self.q, self.alpha, self.w,
                                  batches, kind, param, self.lam_n, self.acc)
        self.round += 1

    def seconds_per_epoch(self, epochs):
        """``(CPU seconds, wall seconds)`` per epoch over ``epochs`` epochs."""
        c, t = time.process_time(), time.perf_counter()
        for _ in range(epochs):
            self.epoch()
        return (time.process_time() - c) / epochs, (time.perf_counter() - t) / epochs


def time_to_target(X, y, tau, max_epochs):
    """SDNA fit stopped at the first certified gap <= TARGET.

    Returns ``(CPU seconds, epochs, [(wall s, epochs, gap)], fit CPU s per epoch, wall seconds)``: the
    fit call's process CPU and wall time (inf when the target is not reached), and its CPU time over all
    the epochs it ran.
    """
    def stop(record, state):
        # bool(): the driver stops on ``is True`` only, and the gap is a NumPy float
        return bool(record.gap <= TARGET)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        c, t = time.process_time(), time.perf_counter()
        m = daskdca.fit(X, y, loss="squared", lam=1.0 / X.shape[0], solver=SDNA(batch_size=tau), tol=0.0,
                        max_rounds=max_epochs, random_state=0, callback=stop)
        cpu, wall = time.process_time() - c, time.perf_counter() - t
    h = m.history_
    last = h[-1]
    hit = last.gap <= TARGET
    return (cpu if hit else math.inf), (last.epochs if hit else math.inf), \
        [(r.seconds, r.epochs, r.gap) for r in h], cpu / m.n_epochs_, (wall if hit else math.inf)


def _fmt(x, digits=3):
    return "-" if not math.isfinite(x) else f"{x:.{digits}g}"


def figs23(args):
    quick = args.quick
    reps = args.reps if args.reps is not None else (1 if quick else 3)
    sets = {"agaricus (mushrooms)": agaricus(), "correlated n=2048 d=1024": correlated()}
    max_epochs = args.max_epochs if args.max_epochs is not None else 150
    start = time.perf_counter()

    # warm-up: compile (or load from numba's cache) every kernel both figures use
    Xw, yw = correlated(n=64, d=16, rank=4)
    for method in ("SDNA", "SDCA"):
        for tau in (1, 4):
            EpochTimer(Xw, yw, method, tau).epoch()
    for tau in (1, 4):
        time_to_target(Xw, yw, tau, 3)

    timers = {(name, method, tau): EpochTimer(X, y, method, tau)
              for name, (X, y) in sets.items() for method in ("SDNA", "SDCA") for tau in FIG_TAUS}
    n_epochs = {}
    min_timed = MIN_TIMED / 3 if quick else MIN_TIMED
    for key, timer in timers.items():  # one untimed epoch each; it sizes the timings
        t = time.perf_counter()
        timer.epoch()
        first = time.perf_counter() - t
        n_epochs[key] = int(min(50, max(1 if quick else 2, math.ceil(min_timed / max(first, 1e-9)))))

    epoch_s = {key: [] for key in timers}
    target = {(name, tau): [] for name in sets for tau in FIG_TAUS}
    for rep in range(reps):
        for name, (X, y) in sets.items():
            for tau in FIG_TAUS:
                for method in ("SDNA", "SDCA"):
                    key = name, method, tau
                    epoch_s[key].append(timers[key].seconds_per_epoch(n_epochs[key]))
                target[name, tau].append(time_to_target(X, y, tau, max_epochs))
                print(f"rep {rep} {name} tau={tau}: CPU s/epoch SDNA {epoch_s[name, 'SDNA', tau][-1][0]:.4f}, "
                      f"SDCA {epoch_s[name, 'SDCA', tau][-1][0]:.4f}; SDNA to {TARGET:g}: "
                      f"{target[name, tau][-1][0]:.3f} CPU s ({target[name, tau][-1][1]:.1f} epochs)", flush=True)
    wall = time.perf_counter() - start

    def lowest(values, j):
        return min(v[j] for v in values)

    cpu_e = {key: lowest(v, 0) for key, v in epoch_s.items()}
    wall_e = {key: lowest(v, 1) for key, v in epoch_s.items()}
    spread_e = {key: max(v[0] for v in vals) / lowest(vals, 0) for key, vals in epoch_s.items()}
    cpu_t = {key: lowest(v, 0) for key, v in target.items()}
    wall_t = {key: lowest(v, 4) for key, v in target.items()}
    fit_e = {key: lowest(v, 3) for key, v in target.items()}
    epochs_t = {key: v[0][1] for key, v in target.items()}  # the same in every rep (seeded)
    fastest = {key: min(v, key=lambda r: r[4])[2] for key, v in target.items()}
    spread_t = {key: (max(r[0] for r in v) / cpu_t[key]) if math.isfinite(cpu_t[key]) else math.nan
                for key, v in target.items()}

    print(f"\nRun: {reps} rep(s) in rotation, minimum kept; quick={quick}; wall time {wall:.0f} s.")
    print("\nFig. 2: CPU seconds per epoch (process time; squared loss, lam = 1/n, one partition; the epoch "
          "kernels only, min over reps). 'fit' = SDNA's CPU seconds per epoch inside daskdca.fit (Fig. 3 runs: "
          "one gap pass per epoch, setup and certificate included); wall = the kernels' wall seconds (min):\n")
    print("| data | tau | SDNA | SDCA | SDNA / SDCA | SDNA / SDNA(1) | SDCA / SDCA(1) | SDNA fit "
          "| wall SDNA, SDCA | rep spread SDNA, SDCA |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name in sets:
        s1, c1 = cpu_e[name, "SDNA", 1], cpu_e[name, "SDCA", 1]
        for tau in FIG_TAUS:
            a, b = cpu_e[name, "SDNA", tau], cpu_e[name, "SDCA", tau]
            print(f"| {name} | {tau} | {a:.3g} | {b:.3g} | {a / b:.3g} | {a / s1:.3g} | {b / c1:.3g} | "
                  f"{_fmt(fit_e[name, tau])} | {wall_e[name, 'SDNA', tau]:.3g}, {wall_e[name, 'SDCA', tau]:.3g} | "
                  f"{spread_e[name, 'SDNA', tau]:.2f}, {spread_e[name, 'SDCA', tau]:.2f} |")

    print(f"\nFig. 3: SDNA to a certified gap <= {TARGET:g}: CPU and wall seconds of the fit call (min over "
          f"reps; '-' = not reached in {max_epochs} epochs):\n")
    print("| data | tau | CPU s | wall s | epochs | CPU vs best | rep spread (CPU max/min) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    summary = []
    for name in sets:
        times = {tau: cpu_t[name, tau] for tau in FIG_TAUS}
        best_tau = min(times, key=times.get)
        for tau in FIG_TAUS:
            t = times[tau]
            print(f"| {name} | {tau} | {_fmt(t)} | {_fmt(wall_t[name, tau])} | {_fmt(epochs_t[name, tau])} | "
                  f"{_fmt(t / times[best_tau])} | {_fmt(spread_t[name, tau], 2)} |")
        paper = {tau: times[tau] for tau in (1, 4, 16, 32, 64)}
        walls = {tau: wall_t[name, tau] for tau in FIG_TAUS}
        summary.append((name, best_tau, times, min(paper, key=paper.get), min(walls, key=walls.get)))
    print("\n| data | best tau (CPU) | in {4, 16, 32} | best of the paper's {1, 4, 16, 32, 64} | best tau (wall) | "
          f"t(tau={DEFAULT_BATCH_SIZE}) / t(best) | falls to best, rises after |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name, best_tau, times, paper_best, wall_best in summary:
        taus = list(FIG_TAUS)
        k = taus.index(best_tau)
        down = all(times[taus[j]] >= times[taus[j + 1]] for j in range(k))
        up = all(times[taus[j]] <= times[taus[j + 1]] for j in range(k, len(taus) - 1))
        print(f"| {name} | {best_tau} | {'yes' if best_tau in PAPER_BEST else 'no'} | {paper_best} | {wall_best} | "
              f"{times[DEFAULT_BATCH_SIZE] / times[best_tau]:.2f} | {'yes' if down else 'no'}, "
              f"{'yes' if up else 'no'} |")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, name in zip(axes, sets):
        for method, style in (("SDNA", "o-"), ("SDCA", "s--")):
            ax.plot(FIG_TAUS, [cpu_e[name, method, tau] for tau in FIG_TAUS], style, label=f"{method} (epoch kernel)")
        ax.plot(FIG_TAUS, [fit_e[name, tau] for tau in FIG_TAUS], "o:", color="tab:blue", alpha=0.5,
                label="SDNA in a fit (+ gap pass)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("tau")
        ax.set_ylabel("CPU seconds per epoch")
        ax.legend(fontsize=8)
    fig.suptitle(f"003 Fig. 2: CPU seconds per epoch vs tau (min of {reps}, shared 2-core machine)")
    fig.tight_layout()
    fig.savefig(PLOTS / "sdna_fig2.png", dpi=110)

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for j, name in enumerate(sets):
        ax = axes[0, j]
        ax.plot(FIG_TAUS, [cpu_t[name, tau] for tau in FIG_TAUS], "o-", label="CPU")
        ax.plot(FIG_TAUS, [wall_t[name, tau] for tau in FIG_TAUS], "s:", alpha=0.5, label="wall")
        for tau in FIG_TAUS:
            if math.isfinite(cpu_t[name, tau]):
                ax.annotate(f"{epochs_t[name, tau]:.0f} ep", (tau, cpu_t[name, tau]), textcoords="offset points",
                            xytext=(0, -12), fontsize=7, ha="center")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("tau")
        ax.set_ylabel(f"SDNA seconds to gap {TARGET:g}")
        ax.legend(fontsize=8)
        ax = axes[1, j]
        for tau in (1, 4, 16, 32, 64, 256):
            hist = fastest[name, tau]
            ax.semilogy([r[0] for r in hist], np.maximum([r[2] for r in hist], 1e-16), label=f"tau={tau}")
        ax.axhline(TARGET, color="grey", lw=0.5)
        ax.set_xscale("log")
        ax.set_xlabel("wall seconds of the fit's rounds (fastest rep)")
        ax.set_ylabel("duality gap")
        ax.legend(fontsize=7)
    fig.suptitle(f"003 Fig. 3: SDNA runtime to gap {TARGET:g} vs tau (min of {reps}; lower row: gap vs time)")
    fig.tight_layout()
    fig.savefig(PLOTS / "sdna_fig3.png", dpi=110)
    print(f"\nplots: {PLOTS / 'sdna_fig2.png'}, {PLOTS / 'sdna_fig3.png'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figs", default="1", help="which of the paper's figures: 1 (default), 2,3, or 1,2,3")
    parser.add_argument("--max-epochs", type=int, default=None,
                        help="epoch cap of a run (Fig. 1: 50, Fig. 3: 150)")
    parser.add_argument("--quick", action="store_true", help="Figs. 2-3: one rep, timings of about 0.1 s")
    parser.add_argument("--reps", type=int, default=None, help="Figs. 2-3: reps in rotation (3; quick 1)")
    args = parser.parse_args()
    figs = {f.strip() for f in args.figs.split(",")}
    if not figs <= {"1", "2", "3"}:
        parser.error(f"--figs takes 1, 2, 3 separated by commas, got {args.figs!r}")
    if "1" in figs:
        fig1(argparse.Namespace(max_epochs=args.max_epochs if args.max_epochs is not None else 50))
    if figs & {"2", "3"}:
        figs23(args)


if __name__ == "__main__":
    main()
