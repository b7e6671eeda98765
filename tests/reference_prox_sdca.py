"""Readable NumPy versions of the proximal SDCA kernel and of the elastic net's primal and dual.

The problem is ``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``,
written as Shalev-Shwartz & Zhang (2016, Prox-SDCA) write it: ``lam' g(w)`` with
``lam' = lam (1 - rho)``, ``g(w) = 1/2 ||w||^2 + c ||w||_1``, ``c = rho / (1 - rho)``;
``v = X^T alpha / (lam' n)`` and ``w = grad g*(v) = sign(v) (|v| - c)_+``.
The 1-D steps are those of :mod:`reference_kernels` (written independently of
``daskdca.losses``).
"""

from __future__ import annotations

import numpy as np

import reference_kernels as ref


def soft_threshold(v, c):
    """``grad g*(v)``: ``sign(v) (|v| - c)_+`` coordinate by coordinate."""
    return np.sign(v) * np.maximum(np.abs(v) - c, 0.0)


def prox_local_sdca(X, y, alpha, v, delta_v, order, loss, lam_n, sigma, threshold, gamma=1.0, weight=None):
    """Prox-SDCA steps (Option I) on the rows of ``order``: margin at ``w = grad g*(u)``, curvature
    ``sigma ||x_i||^2 / lam_n``, then ``u += sigma delta x_i / lam_n`` and ``delta_v += delta x_i / lam_n``.

    Returns ``(alpha, u, w_u, delta_v)``.
    """
    alpha, u, delta_v = alpha.copy(), v.copy(), delta_v.copy()
    w_u = soft_threshold(u, threshold)
    for i in order:
        row = X[i]
        idx, val = row.indices, row.data
        m = float(val @ w_u[idx])
        q = sigma * float(val @ val) / lam_n
        if weight is None:
            new = ref.sweep_dual_update(loss, y[i], alpha[i], q, m, gamma)
        else:
            new = ref.weighted_sweep_dual_update(loss, y[i], alpha[i], q, m, weight[i], gamma)
        delta = new - alpha[i]
        alpha[i] = new
        u[idx] += sigma * delta / lam_n * val
        w_u[idx] = soft_threshold(u[idx], threshold)
        delta_v[idx] += delta / lam_n * val
    return alpha, u, w_u, delta_v


def elastic_net_primal(X, y, w, lam, rho, loss, gamma=1.0):
    """``P(w) = 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``."""
    z = np.asarray(X @ w).ravel()
    losses = sum(ref.loss_value(loss, y[i], z[i], gamma) for i in range(X.shape[0]))
    return losses / X.shape[0] + lam * (0.5 * (1.0 - rho) * float(w @ w) + rho * float(np.abs(w).sum()))


def elastic_net_certificate(X, y, alpha, lam, rho, loss, gamma=1.0):
    """``(P(w), D(alpha), w)`` from ``alpha`` alone: ``w = grad g*(X^T alpha / (lam' n))`` and
    ``D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam' g*(v)``, ``g*(v) = 1/2 sum_j (|v_j| - c)_+^2``."""
    n = X.shape[0]
    lam_prime, c = lam * (1.0 - rho), rho / (1.0 - rho)
    v = np.asarray(X.T @ alpha).ravel() / (lam_prime * n)
    w = soft_threshold(v, c)
    conj = sum(ref.conjugate(loss, y[i], alpha[i], gamma) for i in range(n))
    dual = -conj / n - 0.5 * lam_prime * float(np.maximum(np.abs(v) - c, 0.0) @ np.maximum(np.abs(v) - c, 0.0))
    return elastic_net_primal(X, y, w, lam, rho, loss, gamma), dual, w
