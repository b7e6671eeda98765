"""Rounds of CoCoA+ with a searched aggregation, against adding: a prototype measured in process, not a method.

CoCoA+ (Ma et al. 2015, arXiv:1502.03508) adds the K partitions' updates (``gamma = 1``) and makes that safe
by scaling each local subproblem's curvature by ``sigma' = K``; averaging (``gamma = 1/K``, ``sigma' = 1``) is
safe too.  Any ``gamma`` in ``[1/K, 1]`` keeps the duals feasible (a convex combination of feasible points
with the starting one), so a round may take the local steps of ``sigma' = 1`` (each partition as serial SDCA
on its rows) and pick ``gamma`` as the best of a grid on the dual objective ``D(alpha + gamma dalpha)``: it is
never worse than averaging.  Whether it beats adding is the question here: rounds to a relative gap of
1e-4, logistic loss, the library's kernels (``local_sdca``, ``objective_sums``) on seeded random partitions.

    python benchmarks/aggregation_search.py [--data a9a,generated] [--lams 1e-5,1e-6] [--partitions 2,4] [--grid 9]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from daskdca.kernels.sdca import local_sdca, objective_sums
from daskdca.losses import get_loss
from daskdca.partitions import UNWEIGHTED
from daskdca.problem import row_sqnorms

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))

from round_overhead import make  # noqa: E402

GRID = 9  # gamma on [1/K, 1], evenly spaced (--grid)


def objectives(X, y, alpha, w, lam, loss):
    loss_sum, conj_sum = objective_sums(X.indptr, X.indices, X.data, y, UNWEIGHTED, alpha, w, 0, X.shape[0],
                                        loss.kind, loss.param)
    n = X.shape[0]
    return loss_sum / n + 0.5 * lam * float(w @ w), -conj_sum / n - 0.5 * lam * float(w @ w)


def dual_only(X, y, alpha, w, lam, loss):
    _, conj_sum = objective_sums(X.indptr, X.indices, X.data, y, UNWEIGHTED, alpha, np.zeros_like(w), 0,
                                 X.shape[0], loss.kind, loss.param)
    return -conj_sum / X.shape[0] - 0.5 * lam * float(w @ w)


def rounds_to(X, y, lam, K, mode, tol=1e-4, max_rounds=300, seed=0, grid_points=GRID):
    """Rounds to ``tol`` (None: not within ``max_rounds``) and the gammas taken."""
    loss = get_loss("logistic")
    n, d = X.shape
    lam_n = lam * n
    order = np.random.default_rng(seed).permutation(n)
    X, y = X[order], y[order]
    sq = row_sqnorms(X.indptr, X.data)
    bounds = np.linspace(0, n, K + 1).astype(np.int64)
    parts = [(X[a:b], y[a:b], sq[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    alpha, w = np.zeros(n), np.zeros(d)
    sigma = float(K) if mode == "adding" else 1.0
    gammas = []
    for r in range(1, max_rounds + 1):
        dalpha, dw = np.zeros(n), np.zeros(d)
        for k, ((Xk, yk, sqk), a, b) in enumerate(zip(parts, bounds[:-1], bounds[1:])):
            ak, u, delta = alpha[a:b].copy(), w.copy(), np.zeros(d)
            steps = np.random.default_rng((seed, r, k)).permutation(b - a).astype(np.int64)
            local_sdca(Xk.indptr, Xk.indices, Xk.data, yk, UNWEIGHTED, sqk, ak, u, delta, steps, loss.kind,
                       loss.param, lam_n, sigma, True)
            dalpha[a:b] = ak - alpha[a:b]
            dw += delta
        if mode == "adding":
            gamma = 1.0
        else:
            grid = np.linspace(1.0 / K, 1.0, grid_points)
            values = [dual_only(X, y, alpha + g * dalpha, w + g * dw, lam, loss) for g in grid]
            gamma = float(grid[int(np.argmax(values))])
        gammas.append(gamma)
        alpha += gamma * dalpha
        w += gamma * dw
        primal, dual = objectives(X, y, alpha, w, lam, loss)
        if primal - dual <= tol * abs(primal):
            return r, gammas
    return None, gammas


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="a9a,generated")
    parser.add_argument("--lams", default="1e-5,1e-6")
    parser.add_argument("--partitions", default="2,4")
    parser.add_argument("--max-rounds", type=int, default=300)
    parser.add_argument("--grid", type=int, default=GRID, help="gammas tried a round, evenly spaced on [1/K, 1]")
    args = parser.parse_args()
    sets = {}
    for name in args.data.split(","):
        if name == "a9a":
            from conftest import load_dataset

            X, y = load_dataset("a9a")
            sets[name] = (X, np.where(y > 0, 1.0, -1.0))
        else:
            sets[name] = make(250_000, 100_000, 20)
    print("| data | lam | serial epochs | K | adding (sigma' = K) rounds | searched gamma (sigma' = 1) rounds | "
          "gammas taken (median, min, max) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, (X, y) in sets.items():
        for lam in [float(v) for v in args.lams.split(",")]:
            serial, _ = rounds_to(X, y, lam, 1, "adding", max_rounds=args.max_rounds)
            for K in [int(v) for v in args.partitions.split(",")]:
                adding, _ = rounds_to(X, y, lam, K, "adding", max_rounds=args.max_rounds)
                searched, gammas = rounds_to(X, y, lam, K, "search", max_rounds=args.max_rounds,
                                             grid_points=args.grid)
                show = [f">{args.max_rounds}" if v is None else str(v) for v in (serial, adding, searched)]
                print(f"| {name} | {lam:g} | {show[0]} | {K} | {show[1]} | {show[2]} | "
                      f"{np.median(gammas):.3f}, {min(gammas):.3f}, {max(gammas):.3f} |", flush=True)


if __name__ == "__main__":
    main()
