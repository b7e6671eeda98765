"""Why CoCoA+ inside Catalyst slows down past a relative gap of 1e-4 (a9a, logistic, lam 1e-5, K = 2: 42 rounds to
1e-4, 691 to 1e-6; serial SDCA 47 and 71 epochs).

Two parts, both in process (the cluster's bits; rounds do not depend on the load):

``--diagnose`` (a9a, logistic, lam 1e-5, K = 2):

1. the gap of the default fit split into ``P(w) - P*`` and ``P* - D(alpha)`` (``P*`` from serial SDCA at a
   relative gap of 1e-12), and the rounds that restarted (primal rose);
2. plain CoCoA+ (``acceleration=None``) on the *inner* problem, ``lam' = lam + kappa``, with 1 and 4 local passes:
   its rounds slow down past 1e-4 at the same per-round rate as the Catalyst fit;
3. the error of the duals split by partition: ``mean_i (b_i - b_i*)`` over each partition's rows
   (``b_i = y_i alpha_i``), late in the Catalyst fit.  Opposite shifts on the two partitions are the slow mode of
   the adding aggregation (``sigma' = K``): ``X_1^T d_1 + X_2^T d_2 ~ 0`` (no effect on ``w``), so the gap term
   comes from the conjugates, while each partition's own ``||X_k^T d_k||^2`` is large (the rows share a large
   common component, ``lambda_max(X^T X / n)`` against ``mean ||x_i||^2``) and ``sigma'`` charges it.

Default (the table): for each data set, loss, lam and K, the rounds of the default method (Catalyst around
CoCoA+) to a certified relative gap of 1e-4 and 1e-6, serial SDCA's epochs to the same, and (K = 2) plain
CoCoA+'s rounds on the inner problem ``lam + kappa`` to 1e-6.  ``>N``: not reached in ``--max-rounds`` rounds
or ``--max-seconds``.

Usage::

    python benchmarks/catalyst_stall.py --diagnose
    python benchmarks/catalyst_stall.py                      # the table (a9a, w8a, ijcnn1; about 15 min here)
    python benchmarks/catalyst_stall.py --datasets a9a --losses logistic --lams 1e-5 --ks 2
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
from daskdca.partitions import even_sizes, random_row_order  # noqa: E402
from suite import load_data  # noqa: E402

DATA_DIR = HERE.parents[1] / "shared" / "data"


def _fit(X, y, loss, lam, solver, K, tol, max_rounds, max_seconds, callback=None, **kwargs):
    start = time.perf_counter()

    def cb(record, state):
        if callback is not None:
            callback(record, state)
        return time.perf_counter() - start > max_seconds

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, n_partitions=K, tol=tol, max_rounds=max_rounds,
                           random_state=0, callback=cb, **kwargs)


def _first(m, tol):
    """Rounds to a relative gap ``tol`` (from the history), or ``>N``."""
    for r in m.history_:
        if r.gap <= tol * abs(r.primal):
            return str(r.round)
    return f">{m.n_rounds_}"


def diagnose(args):
    X, y = load_data("a9a", args.data_dir, None)
    n, lam, K = X.shape[0], 1e-5, 2
    ref = {}
    _fit(X, y, "logistic", lam, "sdca", 1, 1e-12, 5000, 600,
         callback=lambda rec, st: ref.update(P=rec.primal, b=y * st.alpha))
    p_star, b_star = ref["P"], ref["b"]
    snaps = {}
    late = (100, 300, 600)

    def keep(rec, st):
        if rec.round in late:
            snaps[rec.round] = y * st.alpha

    m = _fit(X, y, "logistic", lam, "cocoa+", K, 1e-6, 2000, 600, callback=keep)
    kappa = m.plan_.kappa
    primals = np.array([r.primal for r in m.history_])
    rose = np.concatenate(([False], primals[1:] > primals[:-1]))
    print(f"a9a logistic lam {lam:g} K {K}: kappa {kappa:.4g} (lam' / lam = {(lam + kappa) / lam:.0f}), "
          f"{m.n_rounds_} rounds to 1e-6, P* {p_star:.12g}")
    print("| round | rel gap | (P - P*)/P* | (P* - D)/P* | restarts in the last 50 rounds |")
    print("|---|---|---|---|---|")
    for r in m.history_:
        if r.round in (10, 20, 30, 40, 50, 100, 200, 300, 400, 500, 600) or r.round == m.n_rounds_:
            i = r.round - 1
            print(f"| {r.round} | {r.gap / r.primal:.2e} | {(r.primal - p_star) / p_star:.2e} | "
                  f"{(p_star - r.dual) / p_star:.2e} | {int(rose[max(0, i - 49):i + 1].sum())} |")
    lam_prime = lam + kappa
    print(f"\nplain CoCoA+ (acceleration=None), K = {K}, on the inner problem lam' = {lam_prime:.4g} "
          "(serial SDCA for comparison): relative gap after r rounds")
    rounds = (10, 20, 40, 80, 150, 300)
    print("| method | " + " | ".join(f"r={r}" for r in rounds) + " |")
    print("|---|" + "---|" * len(rounds))
    for name, solver, k in [("serial SDCA", "sdca", 1),
                            ("CoCoA+, 1 local pass", daskdca.CoCoAPlus(acceleration=None), K),
                            ("CoCoA+, 4 local passes", daskdca.CoCoAPlus(acceleration=None, local_iters=4), K)]:
        p = _fit(X, y, "logistic", lam_prime, solver, k, 1e-13, max(rounds), 600)
        gaps = {r.round: r.gap / r.primal for r in p.history_}
        print(f"| {name} | " + " | ".join(f"{gaps[r]:.1e}" if r in gaps else "-" for r in rounds) + " |")
    order = random_row_order(n, 0)
    offsets = np.concatenate(([0], np.cumsum(even_sizes(n, K))))
    print("\nthe Catalyst fit's dual error by partition, b = y alpha (b* from serial SDCA at 1e-12)")
    print("| round | " + " | ".join(f"mean(b - b*), partition {k}" for k in range(K))
          + " | rms(b - b*) | share of sum (b - b*)^2 in the partition means |")
    print("|---|" + "---|" * (K + 2))
    for r in late:
        if r not in snaps:
            continue
        err = snaps[r] - b_star
        means = [float(err[order[a:b]].mean()) for a, b in zip(offsets[:-1], offsets[1:])]
        share = sum((b - a) * mu * mu for mu, a, b in zip(means, offsets[:-1], offsets[1:])) / float(err @ err)
        print(f"| {r} | " + " | ".join(f"{mu:+.2e}" for mu in means)
              + f" | {np.sqrt(np.mean(err ** 2)):.2e} | {share:.2f} |")
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    top = _top_eig(X)
    print(f"\nmean ||x_i||^2 = {sq.mean():.2f}; lambda_max(X^T X / n) = {top:.2f}")


def _top_eig(X, iters=100):
    v = np.ones(X.shape[1]) / np.sqrt(X.shape[1])
    for _ in range(iters):
        v = X.T @ (X @ v)
        v /= np.linalg.norm(v)
    return float(v @ (X.T @ (X @ v))) / X.shape[0]


def table(args):
    print("| data | loss | lam | K | kappa / lam | Catalyst to 1e-4 | Catalyst to 1e-6 | serial SDCA to 1e-4 | "
          "serial SDCA to 1e-6 | plain CoCoA+ on lam + kappa to 1e-6 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        X, y = load_data(name, args.data_dir, None)
        for loss in args.losses.split(","):
            for lam in [float(v) for v in args.lams.split(",")]:
                serial = _fit(X, y, loss, lam, "sdca", 1, 1e-6, args.max_rounds, args.max_seconds)
                for K in [int(k) for k in args.ks.split(",")]:
                    m = _fit(X, y, loss, lam, "cocoa+", K, 1e-6, args.max_rounds, args.max_seconds)
                    kappa = getattr(m.plan_, "kappa", 0.0)
                    inner = "-"
                    if K == 2 and kappa > 0:
                        p = _fit(X, y, loss, lam + kappa, daskdca.CoCoAPlus(acceleration=None), K, 1e-6,
                                 args.max_rounds, args.max_seconds)
                        inner = _first(p, 1e-6)
                    print(f"| {name} | {loss} | {lam:g} | {K} | {kappa / lam:.0f} | {_first(m, 1e-4)} | "
                          f"{_first(m, 1e-6)} | {_first(serial, 1e-4)} | {_first(serial, 1e-6)} | {inner} |",
                          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--datasets", default="a9a,w8a,ijcnn1")
    ap.add_argument("--losses", default="logistic,hinge")
    ap.add_argument("--lams", default="1e-4,1e-5,1e-6")
    ap.add_argument("--ks", default="2,4")
    ap.add_argument("--max-rounds", type=int, default=2000)
    ap.add_argument("--max-seconds", type=float, default=30.0)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    args = ap.parse_args(argv)
    diagnose(args) if args.diagnose else table(args)


if __name__ == "__main__":
    main()
