"""CoCoA+ with a per-feature curvature ``sigma_j`` against the library's ``sigma' = K``: rounds to a certified gap.

CoCoA+'s adding aggregation is safe when the local subproblems charge their
updates ``v_k = X_k^T Delta alpha_k / (lam n)`` at least
``||sum_k v_k||^2``; the library charges ``sigma' sum_k ||v_k||^2`` with
``sigma' = K`` (Ma et al. 2015, arXiv:1502.03508, adding variant).  Feature
by feature, ``(sum_k v_kj)^2 <= omega_j sum_k v_kj^2`` (Cauchy-Schwarz over
the ``omega_j`` partitions whose rows hold feature ``j``), so charging
``sum_j omega_j v_kj^2`` is safe too: a row's curvature becomes
``sum_j omega_j x_ij^2 / (lam n)`` and its step moves ``u_j`` by
``omega_j`` times its share, where ``sigma' = K`` charges ``K`` for every
feature.  It can only help where features sit in few of the K partitions.

This is a prototype of that rule outside the library (its own numba local
solver below, the library's losses and gap sums), run in process on the
library's seeded random partitions, plain CoCoA+ (no Catalyst), to a
certified relative gap ``--tol``.  Results: benchmarks/RESULTS.md, "CoCoA+
with a per-feature curvature".

    python benchmarks/feature_sigma.py [--data a9a,gen5m,url10] [--lams 1e-4,1e-6] [--partitions 8,64]
        [--max-rounds 40] [--work-dir DIR]

``gen5m`` and ``url10`` are catalyst_rounds.py's generated sets, written once to ``--work-dir``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from numba import njit

from daskdca.kernels.sdca import local_sdca, objective_sums
from daskdca.losses import get_loss, row_weight, weighted_sweep_dual_update
from daskdca.partitions import even_sizes, random_row_order
from daskdca.problem import row_sqnorms

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))


@njit(nogil=True, cache=True)
def local_sdca_per_feature(indptr, indices, data, y, weight, alpha, u, delta_w, order, loss_kind, loss_param, lam_n,
                           omega):
    """``local_sdca`` with the curvature ``sum_j omega_j x_ij^2 / lam_n`` and ``u += omega * (delta / lam_n) x_i``."""
    inv_lam_n = 1.0 / lam_n
    for t in range(order.shape[0]):
        i = order[t]
        m = 0.0
        q = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            m += data[p] * u[j]
            q += omega[j] * data[p] * data[p]
        a_old = alpha[i]
        a_new = weighted_sweep_dual_update(loss_kind, loss_param, y[i], a_old, q * inv_lam_n, m, row_weight(weight, i))
        if a_new != a_old:
            alpha[i] = a_new
            c = (a_new - a_old) * inv_lam_n
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                u[j] += c * omega[j] * data[p]
                delta_w[j] += c * data[p]


def rounds_to(parts, n, d, lam, K, per_feature, max_rounds, tol, loss):
    """Plain CoCoA+ rounds (adding, ``gamma = 1``) until the gap at a round's start is within ``tol``."""
    lam_n = lam * n
    kind, param = int(loss.kind), loss.param
    no_weight = np.empty(0)
    omega = np.zeros(d)
    for X, _, _, _ in parts:  # the number of partitions holding each feature
        omega[np.unique(X.indices)] += 1.0
    omega = np.maximum(omega, 1.0)
    rng = np.random.default_rng(0)
    w = np.zeros(d)
    for r in range(max_rounds + 1):
        loss_sum = conj_sum = 0.0
        for X, y, alpha, _ in parts:
            ls, cs = objective_sums(X.indptr, X.indices, X.data, y, no_weight, alpha, w, 0, X.shape[0], kind, param)
            loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
        primal = loss_sum / n + 0.5 * lam * (w @ w)
        dual = -conj_sum / n - 0.5 * lam * (w @ w)
        if primal - dual <= tol * abs(primal):
            return str(r), float(omega.mean()), float(omega.max())
        if r == max_rounds:
            break
        total = np.zeros(d)
        for X, y, alpha, sqnorm in parts:
            order = rng.permutation(X.shape[0]).astype(np.int64)
            u, delta_w = w.copy(), np.zeros(d)
            if per_feature:
                local_sdca_per_feature(X.indptr, X.indices, X.data, y, no_weight, alpha, u, delta_w, order, kind,
                                       param, lam_n, omega)
            else:
                local_sdca(X.indptr, X.indices, X.data, y, no_weight, sqnorm, alpha, u, delta_w, order, kind, param,
                           lam_n, float(K), True)
            total += delta_w
        w = w + total
    return f">{max_rounds}", float(omega.mean()), float(omega.max())


def load(name, work_dir):
    if name in ("gen5m", "url10"):
        from catalyst_rounds import load_data_set

        return load_data_set(name, None, work_dir)
    from conftest import load_dataset

    X, y = load_dataset(name)
    return X.tocsr(), np.asarray(y, dtype=np.float64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="a9a,gen5m,url10")
    parser.add_argument("--lams", default="1e-4,1e-6")
    parser.add_argument("--partitions", default="8,64")
    parser.add_argument("--max-rounds", type=int, default=40)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "daskdca-bench-feature-sigma"))
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    loss = get_loss("logistic")
    print("| data | lam | K | mean / max omega_j | rounds, sigma' = K (s) | rounds, per-feature (s) |")
    print("|---|---|---:|---|---:|---:|")
    for name in args.data.split(","):
        X, y = load(name, args.work_dir)
        n, d = X.shape
        for lam in map(float, args.lams.split(",")):
            for K in map(int, args.partitions.split(",")):
                order = random_row_order(n, 0)
                Xp, yp = X[order], y[order]
                offsets = np.concatenate(([0], np.cumsum(even_sizes(n, K))))
                cells = []
                for per_feature in (False, True):
                    parts = []
                    for a, b in zip(offsets[:-1], offsets[1:]):
                        Xk = Xp[a:b]
                        parts.append((Xk, yp[a:b], np.zeros(b - a), row_sqnorms(Xk.indptr, Xk.data)))
                    start = time.perf_counter()
                    rounds, mean, top = rounds_to(parts, n, d, lam, K, per_feature, args.max_rounds, args.tol, loss)
                    cells.append(f"{rounds} ({time.perf_counter() - start:.1f} s)")
                print(f"| {name} | {lam:g} | {K} | {mean:.2f} / {top:.0f} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
