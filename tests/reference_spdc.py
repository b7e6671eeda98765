"""A readable NumPy SPDC (Zhang & Xiao 2017 [ZX17], Algorithms 1-3) and Chambolle-Pock, for index-for-index tests.

Dense and eager: every iteration updates all ``d`` coordinates of ``x``,
``xbar`` and ``u`` exactly as printed in the paper (eq. (5)-(8), (9)-(10),
(21)-(23)), with ``g(x) = lam1 ||x||_1 + lam2/2 ||x||^2``.  The dual step is
:func:`reference_kernels.dual_update` (``y = -alpha``; the logistic root by
Brent's method), not the numba one.
"""

from __future__ import annotations

import numpy as np

import reference_kernels as ref


def prox(a, tau, lam1, lam2):
    """``prox_{tau g}(a)``, coordinate-wise (paper eq. (37))."""
    return np.sign(a) * np.maximum(np.abs(a) - tau * lam1, 0.0) / (1.0 + lam2 * tau)


def dual_prox(loss, b, y, s, z, gamma=1.0):
    """``argmax_beta beta z - phi*(beta) - (beta - y)^2 / (2 s)`` (``y = -alpha``)."""
    return -ref.dual_update(loss, b, -y, 1.0 / s, z, gamma)


def spdc(X, b, batches, steps, omegas, loss, tau, theta, lam1, lam2, y0=None, x0=None, gamma=1.0):
    """SPDC iterations on dense ``X`` (n x d); returns ``x, y, u`` and the list of ``x`` iterates.

    ``batches[t]`` is the sample ``K`` of iteration ``t``, ``steps[t]`` the
    dual step sizes ``s_k`` of its rows (``sigma``, or ``sigma / (p_k n)``),
    ``omegas[t]`` the primal weight of ``sum_k dy_k a_k`` (``1``, ``1/m`` or
    ``1/(p_k n)``).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    y = np.zeros(n) if y0 is None else np.array(y0, dtype=np.float64)
    x = np.zeros(d) if x0 is None else np.array(x0, dtype=np.float64)
    u = X.T @ y / n
    xbar = x.copy()
    iterates = []
    for K, s, omega in zip(batches, steps, omegas):
        K = np.asarray(K)
        dy = np.zeros(len(K))
        for r, k in enumerate(K):
            y_new = dual_prox(loss, b[k], y[k], s[r], X[k] @ xbar, gamma)
            dy[r] = y_new - y[k]
            y[k] = y_new
        delta = X[K].T @ dy
        x_new = prox(x - tau * (u + omega * delta), tau, lam1, lam2)
        u = u + delta / n
        xbar = x_new + theta * (x_new - x)
        x = x_new
        iterates.append(x.copy())
    return x, y, u, iterates


def chambolle_pock(X, b, n_iter, loss, tau, sigma, theta, lam1, lam2, gamma=1.0):
    """Chambolle-Pock (paper (28)-(30)) with ``K = A/n``, ``F*(y) = 1/n sum phi_i*(y_i)``, ``sigma_CP = n sigma``."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    Kop = X / n
    sigma_cp = n * sigma
    y, x = np.zeros(n), np.zeros(d)
    xbar = x.copy()
    for _ in range(n_iter):
        v = y + sigma_cp * (Kop @ xbar)
        # prox of sigma_cp F*: per coordinate argmin phi*(beta)/n + (beta - v)^2 / (2 sigma_cp)
        y = np.array([-ref.dual_update(loss, b[i], -v[i], 1.0 / sigma, 0.0, gamma) for i in range(n)])
        x_new = prox(x - tau * (Kop.T @ y), tau, lam1, lam2)
        xbar = x_new + theta * (x_new - x)
        x = x_new
    return x, y


def idle_steps(x, c, s, tau, lam1, lam2):
    """``s`` steps of ``x <- prox_{tau g}(x - tau c)`` one at a time (paper (35), (38))."""
    for _ in range(s):
        x = float(prox(np.array([x - tau * c]), tau, lam1, lam2)[0])
    return x
