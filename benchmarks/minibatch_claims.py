"""Takáč et al. 2013 [TBRS13] Figs. 1-2 claims, measured: mini-batch Pegasos and naive/safe/aggressive SDCA.

For each data set (reuters, hinge, lam = 1.25e-4 as for news20 in [TBRS13] §5;
and a generated set of unit-norm rows around a few centres, where
``1/sigma^2`` is small) and each batch size ``b``, every method runs in
process on one partition (seed 0, no shrinking) until its primal
suboptimality ``P(w) - P*`` is <= 1e-3 ([TBRS13] Fig. 1's criterion), measured
every quarter epoch; the number reported is the round (= iteration) of the
first evaluation that meets it, or ``>cap`` when the cap (the smaller of a
round cap and an epoch cap) is reached.  At ``b = 1`` ``beta_b = 1`` pins the
aggressive ``beta`` at 1, the step of safe SDCA, so it is not run there.
``P*`` is the smaller of LIBLINEAR's and a serial daskdca SDCA fit's primal
(the SDCA fit certifies ``P* >= D`` to a relative gap of 1e-9).

* ``pegasos``: :class:`daskdca.methods.pegasos.MinibatchPegasos`, decaying average ([TBRS13] Fig. 2);
* ``naive``, ``safe``, ``aggressive``: :class:`daskdca.methods.MinibatchSDCA` ``step=...``.

Claims checked ([TBRS13] §5): (i) SDCA needs fewer iterations than Pegasos at
b = 1; (ii) safe SDCA's iterations scale like ``beta_b / b`` (reported as
``T(b) b / beta_b``, flat when they do); (iii) naive SDCA diverges or stalls
for ``b >> 1/sigma^2`` while safe converges; (iv) aggressive needs no more
iterations than safe for ``b >= 1/sigma^2``.  Iterations are counted, never
seconds.

    python benchmarks/minibatch_claims.py [--quick]

Writes ``benchmarks/plots/minibatch_fig1.png`` (iterations against b, with
``beta_b / b`` on the right axis) and ``benchmarks/plots/minibatch_fig2.png``
(``P - P*`` against iterations at the largest b) and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.svm import LinearSVC

import daskdca
from daskdca.driver import fit_in_process
from daskdca.kernels.eso import beta_standard
from daskdca.losses import get_loss
from daskdca.methods import MinibatchSDCA
from daskdca.methods.pegasos import MinibatchPegasos

DATA_DIR = Path(os.environ.get("DASKDCA_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TARGET = 1e-3  # P - P* of [TBRS13] Fig. 1
METHODS = ("pegasos", "naive", "safe", "aggressive")


def reuters():
    X, y = load_svmlight_file(str(DATA_DIR / "reuters_lasvm.trn.bz2"), n_features=8315)
    return sp.csr_matrix(X), np.asarray(y, dtype=np.float64), 1.25e-4


def clustered(n=4000, d=200, clusters=8, noise=0.3, seed=0):
    """Unit-norm rows around ``clusters`` random centres, labels a noisy function of the centre."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d))
    labels = rng.integers(clusters, size=n)
    X = centres[labels] + noise * rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 0.2 + 0.6 * (labels % 2), 1.0, -1.0)
    return sp.csr_matrix(X), y, 1e-3


def optimum(X, y, lam):
    """``P*``: the smaller of LIBLINEAR's and a certified serial SDCA fit's primal, and the SDCA fit's dual."""
    n = X.shape[0]
    Xi = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = LinearSVC(loss="hinge", dual=True, C=1.0 / (lam * n), tol=1e-10, max_iter=1_000_000,
                        fit_intercept=False).fit(Xi, y)
        sdca = daskdca.fit(X, y, loss="hinge", lam=lam, solver="sdca", tol=1e-9, random_state=0)
    w = svc.coef_.ravel()
    p_ll = float(np.mean(np.maximum(0.0, 1.0 - y * (X @ w))) + 0.5 * lam * w @ w)
    return min(p_ll, sdca.primal_), sdca.dual_


def method(name, b, eval_every):
    if name == "pegasos":
        return MinibatchPegasos(batch_size=b, eval_every=eval_every)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the naive step's warning
        return MinibatchSDCA(step=name, batch_size=b, eval_every=eval_every, shrinking=False)


def run(X, y, lam, name, b, p_star, cap):
    """Rounds until ``P - P* <= TARGET`` (None past ``cap``), the history ``(round, P - P*)`` and seconds."""
    n = X.shape[0]
    eval_every = max(1, -(-n // b) // 4)
    trace = []

    def callback(record, state):
        trace.append((record.round, record.primal - p_star))
        return bool(record.primal - p_star <= TARGET)  # the driver stops on `is True`

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_in_process(method(name, b, eval_every), X, y, loss=get_loss("hinge"), lam=lam, n_partitions=1,
                                random_state=0, tol=0.0, max_rounds=cap, callback=callback)
    hit = next((r for r, sub in trace if sub <= TARGET), None)
    return hit, trace, result, time.perf_counter() - t0


def measure(datasets, batches, round_cap, epoch_cap):
    rows = []
    for label, (X, y, lam) in datasets.items():
        p_star, d_star = optimum(X, y, lam)
        n = X.shape[0]
        sigma2 = None
        for b in batches:
            cap = min(round_cap, epoch_cap * -(-n // b))
            for name in METHODS:
                if name == "aggressive" and b == 1:
                    continue
                hit, trace, result, secs = run(X, y, lam, name, b, p_star, cap)
                sigma2 = result.plan.sigma2
                rows.append(dict(data=label, n=n, lam=lam, b=b, method=name, rounds=hit, cap=cap, trace=trace,
                                 final=trace[-1][1] if trace else math.nan, sigma2=sigma2,
                                 beta_b=float(min(b, max(1.0, beta_standard(n, b, sigma2)))), p_star=p_star,
                                 d_star=d_star, seconds=secs))
                print(f"{label:10s} b={b:5d} {name:10s} rounds={hit if hit is not None else '>' + str(cap):>8} "
                      f"final P-P*={rows[-1]['final']:.2e}  ({secs:.1f}s)", flush=True)
    return rows


def markdown(rows):
    out = []
    for label in dict.fromkeys(r["data"] for r in rows):
        rs = [r for r in rows if r["data"] == label]
        r0 = rs[0]
        out.append(f"\n**{label}** (n = {r0['n']}, lam = {r0['lam']:g}, sigma^2 = {r0['sigma2']:.4f}, "
                   f"1/sigma^2 = {1 / r0['sigma2']:.1f}, P* = {r0['p_star']:.6f}, certified D = {r0['d_star']:.6f})\n")
        out.append("| b | beta_b | beta_b/b | " + " | ".join(f"{m} iters" for m in METHODS)
                   + " | safe T(b) b/beta_b | naive P-P* at stop |")
        out.append("|---:|---:|---:|" + "---:|" * len(METHODS) + "---:|---:|")
        for b in dict.fromkeys(r["b"] for r in rs):
            by = {r["method"]: r for r in rs if r["b"] == b}
            cells = [("=safe" if m not in by else str(by[m]["rounds"]) if by[m]["rounds"] is not None
                      else f">{by[m]['cap']}") for m in METHODS]
            safe = by["safe"]
            scaled = f"{safe['rounds'] * b / safe['beta_b']:.0f}" if safe["rounds"] is not None else "-"
            out.append(f"| {b} | {safe['beta_b']:.2f} | {safe['beta_b'] / b:.3g} | " + " | ".join(cells)
                       + f" | {scaled} | {by['naive']['final']:.2e} |")
    return "\n".join(out)


def plot(rows, fig1, fig2):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(r["data"] for r in rows))
    fig, axes = plt.subplots(1, len(labels), figsize=(5.5 * len(labels), 4), squeeze=False)
    for ax, label in zip(axes[0], labels):
        rs = [r for r in rows if r["data"] == label]
        bs = sorted(dict.fromkeys(r["b"] for r in rs))
        for m in METHODS:
            its = [next((r["rounds"] for r in rs if r["b"] == b and r["method"] == m), None) for b in bs]
            ax.plot([b for b, t in zip(bs, its) if t is not None], [t for t in its if t is not None], "o-", label=m)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("mini-batch size b")
        ax.set_ylabel(f"iterations to P - P* <= {TARGET:g}")
        ax.set_title(label)
        right = ax.twinx()
        right.plot(bs, [next(r["beta_b"] for r in rs if r["b"] == b) / b for b in bs], "k:", label="beta_b / b")
        right.set_yscale("log")
        right.set_ylabel("beta_b / b (dotted)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(fig1, dpi=90)
    fig, axes = plt.subplots(1, len(labels), figsize=(5.5 * len(labels), 4), squeeze=False)
    for ax, label in zip(axes[0], labels):
        rs = [r for r in rows if r["data"] == label]
        b = max(r["b"] for r in rs)
        for r in (r for r in rs if r["b"] == b):
            if r["trace"]:
                rounds, sub = zip(*r["trace"])
                ax.plot(rounds, np.maximum(sub, 1e-8), label=r["method"])
        ax.axhline(TARGET, color="k", lw=0.5)
        ax.set_yscale("log")
        ax.set_xlabel("iterations")
        ax.set_ylabel("P(w) - P*")
        ax.set_title(f"{label}, b = {b}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(fig2, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="b in {4, 64, 256}, caps 20000 rounds and 40 epochs")
    args = parser.parse_args()
    batches = (4, 64, 256) if args.quick else (1, 16, 64, 256, 1024)
    round_cap, epoch_cap = (20_000, 40) if args.quick else (120_000, 100)
    datasets = {"reuters": reuters(), "clustered": clustered()}
    rows = measure(datasets, batches, round_cap, epoch_cap)
    out = Path(__file__).resolve().parent / "plots"
    out.mkdir(exist_ok=True)
    plot(rows, out / "minibatch_fig1.png", out / "minibatch_fig2.png")
    print(markdown(rows))


if __name__ == "__main__":
    main()
