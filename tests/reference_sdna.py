"""A readable NumPy SDNA (Qu et al. 2016 [QRTF16], Algorithm 3 in CoCoA+ local form), for index-for-index tests.

Each step on a row set ``S`` forms ``c = X_S u`` and
``Q = sigma X_S X_S^T / (lam n)`` densely and minimises

    Phi(h) = c.h + 1/2 h^T Q h + sum_{j in S} phi_j*(-alpha_j - h_j)

(docs/references.md, note N7) by means independent of the numba kernels:
``np.linalg.solve`` for squared loss, and for every other loss exact
coordinate descent with :func:`reference_kernels.dual_update` (the logistic
root by Brent's method) run until it stops moving, instead of the kernels'
capped sweeps and damped Newton.
"""

from __future__ import annotations

import numpy as np

import reference_kernels as ref


def phi(Q, c, alpha_S, y_S, a_new, loss, gamma=1.0):
    """``Phi(h)`` at ``h = a_new - alpha_S``."""
    h = a_new - alpha_S
    conj = sum(ref.conjugate(loss, yj, aj, gamma) for yj, aj in zip(y_S, a_new))
    return float(c @ h + 0.5 * h @ Q @ h + conj)


def solve_subproblem(Q, c, alpha_S, y_S, loss, gamma=1.0, max_sweeps=20_000):
    """New ``alpha_S + h`` with ``h = argmin Phi``."""
    if loss == "squared":
        return alpha_S + np.linalg.solve(Q + np.eye(len(c)), y_S - c - alpha_S)
    a = alpha_S.astype(np.float64).copy()
    r = c.astype(np.float64).copy()
    for _ in range(max_sweeps):
        moved = 0.0
        for j in range(len(a)):
            new = ref.dual_update(loss, y_S[j], a[j], Q[j, j], r[j], gamma)
            delta = new - a[j]
            a[j] = new
            r += delta * Q[:, j]
            moved = max(moved, abs(delta) / (1.0 + abs(new)))
        if moved <= 1e-15:
            break
    return a


def sdna_step(X, y, alpha, u, delta_w, S, loss, lam_n, sigma, gamma=1.0):
    """One SDNA iteration on rows ``S``; returns new ``(alpha, u, delta_w)``."""
    alpha, u, delta_w = alpha.copy(), u.copy(), delta_w.copy()
    XS = X[S].toarray()
    c = XS @ u
    Q = sigma * (XS @ XS.T) / lam_n
    new = solve_subproblem(Q, c, alpha[S], y[S], loss, gamma)
    h = new - alpha[S]
    alpha[S] = new
    u += sigma * (XS.T @ h) / lam_n
    delta_w += (XS.T @ h) / lam_n
    return alpha, u, delta_w


def local_sdna(X, y, alpha, u, delta_w, batches, loss, lam_n, sigma, gamma=1.0):
    """:func:`sdna_step` for every row set of ``batches``."""
    for S in batches:
        alpha, u, delta_w = sdna_step(X, y, alpha, u, delta_w, np.asarray(S), loss, lam_n, sigma, gamma)
    return alpha, u, delta_w
