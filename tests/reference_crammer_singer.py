"""A small, readable NumPy reference of the Crammer-Singer dual method (daskdca.kernels.crammer_singer), for the tests.

Notation as there: ``alpha`` of shape (K, n), each column summing to 0 with
``alpha[y_i, i] <= s_i`` and the others ``<= 0``; ``W(alpha) = alpha X / (lam n)``.
The row step is solved independently of the kernel's sort: its optimality
conditions give ``a_k(b) = min(C_k, (b - B_k) / q)``, nondecreasing in the
multiplier ``b``, and Brent's method finds the ``b`` with ``sum_k a_k(b) = 0``;
the duals below their bound at that ``b`` then give ``b`` in closed form.
:func:`qp_step` solves the same K-dimensional QP by scipy's generic SLSQP, for the tests
that check the step is the maximiser.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq, minimize


def _bounds_and_linear(m, alpha0, y, s, q):
    """``(C, B)`` of the row's QP ``min_a q/2 ||a||^2 + B.a``, ``a <= C``, ``sum a = 0``."""
    K = m.shape[0]
    C = np.zeros(K)
    C[y] = s
    G = m + 1.0
    G[y] -= 1.0  # G_k = m_k + 1[k != y]
    return C, G - q * alpha0


def _finish(a, y, s):
    """``alpha_y = -sum_{k != y} alpha_k`` (the equality exactly; the others scaled where that passes ``s``)."""
    others = np.delete(np.arange(a.shape[0]), y)
    total = a[others].sum()
    if -total > s:
        a[others] *= s / -total
        a[y] = s
    else:
        a[y] = 0.0 - total
    return a


def crammer_singer_step(m, alpha0, y, s, q):
    """Row ``i``'s new duals: ``argmax_a a_y - (a - alpha0).m - q/2 ||a - alpha0||^2`` over the row's domain."""
    m, alpha0 = np.asarray(m, dtype=np.float64), np.asarray(alpha0, dtype=np.float64)
    K = m.shape[0]
    if q <= 0.0:  # linear: the vertex s (e_y - e_k) of the largest m_k + 1[k != y]
        g = m + 1.0
        g[y] -= 1.0
        a = np.zeros(K)
        k = int(np.argmax(g))
        if k != y:
            a[y], a[k] = s, -s
        return a
    C, B = _bounds_and_linear(m, alpha0, y, s, q)
    D = B + q * C

    def total(b):
        return np.minimum(C, (b - B) / q).sum()

    # at b = max D every dual sits at its bound (sum = s > 0); at min B - q s every one is <= -s (sum < 0)
    b = brentq(total, B.min() - q * s - 1.0, D.max() + 1.0, xtol=1e-300, rtol=8.9e-16, maxiter=1000)
    free = D > b  # the duals below their bound
    b = (D[free].sum() - q * s) / free.sum()
    return _finish(np.minimum(C, (b - B) / q), y, s)


def qp_step(m, alpha0, y, s, q):
    """The same step by scipy's SLSQP on the QP (a generic solver, to about 1e-9): ``(a, success)``."""
    K = m.shape[0]
    C, B = _bounds_and_linear(np.asarray(m, dtype=np.float64), np.asarray(alpha0, dtype=np.float64), y, s, q)
    res = minimize(lambda a: 0.5 * q * a @ a + B @ a, np.zeros(K), jac=lambda a: q * a + B, method="SLSQP",
                   bounds=[(None, c) for c in C], constraints=[{"type": "eq", "fun": lambda a: a.sum(),
                                                                "jac": lambda a: np.ones(K)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x, bool(res.success)


def step_value(m, alpha0, y, q, a):
    """The dual's increase (times n) when row ``i``'s duals go from ``alpha0`` to ``a``."""
    delta = a - alpha0
    return delta[y] - delta @ m - 0.5 * q * delta @ delta


def local_crammer_singer_sdca(X, cls, weight, alpha, u, delta_w, order, lam_n, sigma, track):
    """The kernel's row steps on CSR ``X`` in the given row order; ``alpha``, ``u``, ``delta_w`` in place."""
    X = sp.csr_matrix(X)
    for i in order:
        s = 1.0 if weight is None else weight[i]
        if s <= 0:
            continue
        x = X[i]
        m = np.asarray(x @ u.T).ravel()
        q = sigma * x.multiply(x).sum() / lam_n
        new = crammer_singer_step(m, alpha[:, i], cls[i], s, q)
        delta = new - alpha[:, i]
        alpha[:, i] = new
        update = np.outer(delta, x.toarray().ravel()) / lam_n
        u += sigma * update
        if track:
            delta_w += update


def objectives(X, cls, weight, alpha, W, lam):
    """``(P(W), D(alpha), W(alpha))`` of the Crammer-Singer problem, from scratch (``D = -inf`` off its domain)."""
    X = sp.csr_matrix(X)
    n = X.shape[0]
    rows = np.arange(n)
    s = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    Z = np.asarray(X @ W.T)
    augmented = Z + 1.0
    augmented[rows, cls] -= 1.0
    loss = augmented.max(axis=1) - Z[rows, cls]
    primal = (s * loss).sum() / n + lam / 2 * (W ** 2).sum()
    W_alpha = np.asarray((X.T @ alpha.T).T) / (lam * n)
    on = s > 0
    others = alpha.copy()
    others[cls, rows] = -np.inf
    feasible = (np.abs(alpha[:, on].sum(axis=0)) <= 1e-12 * s[on]).all() and (alpha[cls, rows] <= s).all() \
        and (others <= 0).all()
    dual = alpha[cls, rows][on].sum() / n - lam / 2 * (W_alpha ** 2).sum() if feasible else -np.inf
    return primal, dual, W_alpha
