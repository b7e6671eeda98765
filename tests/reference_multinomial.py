"""A small, readable NumPy reference of multinomial SDCA (daskdca.kernels.multinomial), for the tests.

Notation as there: ``alpha`` of shape (K, n), ``beta_i = e_{y_i} - alpha[:, i] / s_i``,
``W(alpha) = alpha X / (lam n)``.  The row step is solved independently of the
kernel's Newton iterations: ``log b + sq b = a`` is ``b = omega(a + log sq) / sq``
with the Wright omega function, and the multiplier ``nu`` by Brent's method.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq
from scipy.special import wrightomega


def entropy_simplex_step(m, beta0, sq):
    """``argmax_{b in simplex} H(b) + b.m - sq/2 ||b - beta0||^2``."""
    m, beta0 = np.asarray(m, dtype=np.float64), np.asarray(beta0, dtype=np.float64)
    if sq <= 0.0:
        e = np.exp(m - m.max())
        return e / e.sum()
    c = m + sq * beta0

    def b(nu):  # b_k(nu) solves log b + sq b = c_k - nu
        return np.real(wrightomega(c - nu + np.log(sq))) / sq

    # the largest b is 1 at c.max() - sq and 1/K at c.max() + log K - sq/K; one unit more on each side for rounding
    lo, hi = c.max() - sq - 1.0, c.max() + np.log(c.shape[0]) - sq / c.shape[0] + 1.0
    nu = brentq(lambda v: b(v).sum() - 1.0, lo, hi, xtol=1e-15, rtol=8.9e-16, maxiter=500)
    beta = b(nu)
    return beta / beta.sum()


def local_multinomial_sdca(X, cls, weight, alpha, u, delta_w, order, lam_n, sigma, track):
    """The kernel's row steps on CSR ``X`` in the given row order; ``alpha``, ``u``, ``delta_w`` in place."""
    X = sp.csr_matrix(X)
    K = alpha.shape[0]
    for i in order:
        s = 1.0 if weight is None else weight[i]
        if s <= 0:
            continue
        x = X[i]
        m = np.asarray(x @ u.T).ravel()
        beta0 = np.maximum(np.eye(K)[cls[i]] - alpha[:, i] / s, 0.0)
        q = sigma * x.multiply(x).sum() / lam_n
        beta = entropy_simplex_step(m, beta0, s * q)
        new = s * (np.eye(K)[cls[i]] - beta)
        delta = new - alpha[:, i]
        alpha[:, i] = new
        update = np.outer(delta, x.toarray().ravel()) / lam_n
        u += sigma * update
        if track:
            delta_w += update


def objectives(X, cls, weight, alpha, W, lam):
    """``(P(W), D(alpha), W(alpha))`` of the multinomial problem, from scratch."""
    X = sp.csr_matrix(X)
    n = X.shape[0]
    s = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    Z = np.asarray(X @ W.T)
    top = Z.max(axis=1)
    loss = top + np.log(np.exp(Z - top[:, None]).sum(axis=1)) - Z[np.arange(n), cls]
    primal = (s * loss).sum() / n + lam / 2 * (W ** 2).sum()
    W_alpha = np.asarray((X.T @ alpha.T).T) / (lam * n)
    entropy = np.zeros(n)
    for i in range(n):
        if s[i] > 0:
            beta = np.eye(alpha.shape[0])[cls[i]] - alpha[:, i] / s[i]
            beta = beta[beta > 0]
            entropy[i] = -(beta * np.log(beta)).sum()
    dual = (s * entropy).sum() / n - lam / 2 * (W_alpha ** 2).sum()
    return primal, dual, W_alpha
