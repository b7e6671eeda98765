"""Readable NumPy references for dual-free SDCA (He & Takáč 2015 [HT15]), independent of daskdca.losses.

Problem: ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` with pseudo-duals
``alpha`` and ``w = X^T alpha / (lam n)``; residue ``kappa_i = alpha_i + phi_i'(x_i.w)``.
The step functions replay a given row sequence, so they can be compared
with the numba kernels on exactly the same draws.
"""

import numpy as np

SMOOTHNESS = {"squared": 1.0, "logistic": 0.25, "squared_hinge": 2.0, "smoothed_hinge": 1.0}


def derivative(loss, y, z, gamma=1.0):
    """``phi_i'(z)`` with the label inside the loss (``phi_i(z) = phi(y_i z)``)."""
    y, z = np.asarray(y, dtype=float), np.asarray(z, dtype=float)
    if loss == "squared":
        return z - y
    a = y * z
    if loss == "logistic":
        return -y / (1.0 + np.exp(a))
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - a)
    if loss == "smoothed_hinge":
        return -y * np.clip((1.0 - a) / gamma, 0.0, 1.0)
    raise ValueError(loss)


def dense(X):
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)


def residues(X, y, alpha, w, loss):
    """``kappa = alpha + phi'(X w)``."""
    return alpha + derivative(loss, y, dense(X) @ w)


def c_weights(X, lam_n, loss, sigma=1.0):
    """``c_i = sqrt(sigma ||x_i||^2 gamma + (lam n)^2 beta)``, ``gamma = lam n``, ``beta = 1/L~`` (Lemma 1)."""
    v = (dense(X) ** 2).sum(axis=1)
    return np.sqrt(sigma * v * lam_n + lam_n ** 2 / SMOOTHNESS[loss])


def theta(kappa, p, X, lam_n, loss, sigma=1.0):
    """``Theta(kappa, p)`` of Theorem 1, corrected denominator (docs/references.md, note N6); sums over kappa != 0."""
    beta = 1.0 / SMOOTHNESS[loss]
    v = sigma * (dense(X) ** 2).sum(axis=1)
    on = kappa != 0
    num = lam_n ** 2 * np.sum(beta * kappa[on] ** 2)
    den = np.sum((lam_n ** 2 * beta + v[on] * lam_n) * kappa[on] ** 2 / p[on])
    return num / den


def p_star(kappa, X, lam_n, loss, sigma=1.0):
    """Lemma 1, eq. (6): ``p_i ∝ c_i |kappa_i|``."""
    wts = c_weights(X, lam_n, loss, sigma) * np.abs(kappa)
    return wts / wts.sum()


def theta_lower(X, lam_n, loss):
    """Cor. 1: ``lam / (lam n + L_bar)`` (case 1)."""
    n = X.shape[0]
    L_bar = SMOOTHNESS[loss] * (dense(X) ** 2).sum(axis=1).mean()
    return (lam_n / n) / (lam_n + L_bar)


def fixed_steps(X, y, alpha, u, delta_w, order, step, loss, lam_n, sigma):
    """Dual-free steps on ``order`` with factors ``step[i] = theta / p_i``; updates the arrays in place."""
    A = dense(X)
    for i in order:
        kappa = alpha[i] + derivative(loss, y[i], A[i] @ u)
        da = -step[i] * kappa
        alpha[i] += da
        delta_w += da / lam_n * A[i]
        u += sigma * da / lam_n * A[i]


def adaptive_steps(X, y, alpha, u, delta_w, order, loss, lam_n, sigma=1.0, share=1.0, k2_rest=0.0, d_rest=0.0):
    """Algorithm 1 replayed on ``order``: all residues, ``p*``, ``Theta``, step; returns the thetas."""
    A = dense(X)
    c = c_weights(X, lam_n, loss, sigma)
    base = lam_n ** 2 / SMOOTHNESS[loss]
    thetas = []
    for i in order:
        kappa = alpha + derivative(loss, y, A @ u)
        wts = c * np.abs(kappa)
        S = wts.sum()
        th = base * (np.sum(kappa ** 2) + k2_rest) / (S * S / share + d_rest)
        p_i = share * wts[i] / S
        da = -th * kappa[i] / p_i
        alpha[i] += da
        delta_w += da / lam_n * A[i]
        u += sigma * da / lam_n * A[i]
        thetas.append(th)
    return np.array(thetas)


def step_to(X, y, alpha, w, i, factor, loss, lam_n):
    """The state after one step on row ``i`` with ``theta / p_i = factor`` (new arrays)."""
    A = dense(X)
    kappa = alpha[i] + derivative(loss, y[i], A[i] @ w)
    a2, w2 = alpha.copy(), w.copy()
    a2[i] -= factor * kappa
    w2 -= factor * kappa / lam_n * A[i]
    return a2, w2


def lyapunov(alpha, w, alpha_star, w_star, lam_n, loss):
    """``G = ||alpha - alpha*||_beta^2 + gamma ||w - w*||^2``, ``beta = 1/L~``, ``gamma = lam n`` (eq. (3))."""
    return np.sum((alpha - alpha_star) ** 2) / SMOOTHNESS[loss] + lam_n * np.sum((w - w_star) ** 2)


def solve(X, y, lam, loss, iters=200):
    """``w*`` by Newton's method on ``P`` (smooth losses; small dense problems) and ``alpha* = -phi'(X w*)``."""
    A = dense(X)
    n, d = A.shape
    w = np.zeros(d)
    for _ in range(iters):
        z = A @ w
        g = A.T @ derivative(loss, y, z) / n + lam * w
        if loss == "squared":
            h = np.ones(n)
        elif loss == "logistic":
            s = 1.0 / (1.0 + np.exp(-y * z))
            h = s * (1 - s)
        elif loss == "squared_hinge":
            h = 2.0 * (y * z < 1)
        else:
            a = y * z
            h = ((a < 1) & (a > 0)).astype(float)
        H = A.T @ (h[:, None] * A) / n + lam * np.eye(d)
        step = np.linalg.solve(H, g)
        w = w - step
        if np.abs(step).max() < 1e-15:
            break
    return w, -derivative(loss, y, A @ w)


def water_fill(weights, b):
    """``q = min(1, tau w)`` with ``sum q = b``, ``tau`` by bisection (independent of the kernel's sort)."""
    w = np.asarray(weights, dtype=float)
    if np.count_nonzero(w) <= b:
        return (w > 0).astype(float)
    lo, hi = 0.0, 1.0
    while np.minimum(1.0, hi * w).sum() < b:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.minimum(1.0, mid * w).sum() < b else (lo, mid)
    return np.minimum(1.0, hi * w)


def subset_probabilities(perm, t, i_st, j_st, b):
    """``{subset: P(subset)}`` of Algorithm 3's stages, by enumeration (stage k: top ``i_k - 1`` sorted rows
    plus a uniform ``(b - i_k + 1)``-subset of sorted positions ``i_k..j_k``, 1-based)."""
    from itertools import combinations
    from math import comb

    out = {}
    for tk, i, j in zip(t, i_st, j_st):
        top = [int(perm[k]) for k in range(i - 1)]
        block = [int(perm[k]) for k in range(i - 1, j)]
        for rest in combinations(block, b - i + 1):
            key = tuple(sorted(top + list(rest)))
            out[key] = out.get(key, 0.0) + tk / comb(len(block), b - i + 1)
    return out


def minibatch_steps(X, y, alpha, u, delta_w, batches, b, loss, lam_n, curv, share=1.0, k2_rest=0.0, d_rest=0.0,
                    sigma=1.0):
    """Algorithm 4 replayed on given batches: residues, water-filled ``q``, ``Theta_b``, Jacobi steps."""
    A = dense(X)
    base = lam_n ** 2 / SMOOTHNESS[loss]
    csq = curv * (A ** 2).sum(axis=1) + base
    thetas = []
    for batch in batches:
        kappa = alpha + derivative(loss, y, A @ u)
        wts = np.sqrt(csq) * np.abs(kappa)
        q = water_fill(wts, b)
        b_eff = min(b, np.count_nonzero(wts))
        on = wts > 0
        denom = np.sum(csq[on] * kappa[on] ** 2 / (share * q[on]))
        th = b_eff * base * (np.sum(kappa ** 2) + k2_rest) / (b_eff * denom + d_rest)
        rows = [i for i in batch if i >= 0]
        da = {i: -th * kappa[i] / (share * q[i]) for i in rows}
        for i in rows:
            alpha[i] += da[i]
            delta_w += da[i] / lam_n * A[i]
            u += sigma * da[i] / lam_n * A[i]
        thetas.append(th)
    return np.array(thetas)


def plus_steps(X, y, alpha, u, delta_w, order, loss, lam_n, curv, s_all, c_all, floor, shrink, share=1.0,
               k2_rest=0.0, d_rest=0.0, sigma=1.0):
    """Algorithm 2 replayed on ``order``: epoch residues, floored weights, ``Theta(kappa~, p^(t))`` with the
    denominator recomputed from scratch every step, fresh ``kappa_i``, the step factor capped at
    ``base / c_i^2``, ``omega_i /= shrink``; returns thetas."""
    A = dense(X)
    base = lam_n ** 2 / SMOOTHNESS[loss]
    csq = curv * (A ** 2).sum(axis=1) + base
    kappa_ep = alpha + derivative(loss, y, A @ u)
    omega = (1 - floor) * np.sqrt(csq) * np.abs(kappa_ep) / s_all + floor * csq / c_all
    a = csq * kappa_ep ** 2
    thetas = []
    for i in order:
        W = omega.sum()
        on = omega > 0
        th = base * (np.sum(kappa_ep ** 2) + k2_rest) / (W * np.sum(a[on] / omega[on]) / share + d_rest)
        p_i = share * omega[i] / W
        kappa = alpha[i] + derivative(loss, y[i], A[i] @ u)
        da = -min(th / p_i, base / csq[i]) * kappa  # capped at SDCA's safe step lam n / (lam n + sigma' L_i)
        alpha[i] += da
        delta_w += da / lam_n * A[i]
        u += sigma * da / lam_n * A[i]
        omega[i] /= shrink
        thetas.append(th)
    return np.array(thetas)


def safe_step(X, lam_n, loss, sigma=1.0):
    """SDCA's safe step factor ``lam n / (lam n + sigma' L~ ||x_i||^2)`` (the cap of the refreshed steps)."""
    return lam_n / (lam_n + sigma * SMOOTHNESS[loss] * (dense(X) ** 2).sum(axis=1))


def refreshed_steps(X, y, alpha, u, delta_w, order, n_refresh, loss, lam_n, sigma=1.0, share=1.0, k2_rest=0.0,
                    d_rest=0.0):
    """adfSDCA with refreshed probabilities replayed on ``order``: every ``ceil(len(order) / n_refresh)``
    steps all residues, ``p*`` and ``Theta``; between refreshes ``p`` and ``Theta`` stay, the picked row's
    residue is fresh and the step factor is ``min(Theta / p_i, safe_step_i)``; returns the thetas."""
    A = dense(X)
    c = c_weights(X, lam_n, loss, sigma)
    cap = safe_step(X, lam_n, loss, sigma)
    base = lam_n ** 2 / SMOOTHNESS[loss]
    stretch = -(-len(order) // n_refresh)
    thetas = []
    for t, i in enumerate(order):
        if t % stretch == 0:
            kappa_r = alpha + derivative(loss, y, A @ u)
            wts = c * np.abs(kappa_r)
            S = wts.sum()
            th = base * (np.sum(kappa_r ** 2) + k2_rest) / (S * S / share + d_rest)
        p_i = share * wts[i] / S
        kappa = alpha[i] + derivative(loss, y[i], A[i] @ u)
        da = -min(th / p_i, cap[i]) * kappa
        alpha[i] += da
        delta_w += da / lam_n * A[i]
        u += sigma * da / lam_n * A[i]
        thetas.append(th)
    return np.array(thetas)
