"""A small, readable NumPy reference of multinomial L-BFGS (daskdca.methods.multinomial_lbfgs), for the tests.

``P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2``; the
two-loop recursion is Nocedal & Wright's Algorithm 7.4 as printed, the line search Armijo
backtracking by halves, one evaluation of P and its gradient a round.
"""

import numpy as np
import scipy.sparse as sp


def random_problem(seed, n=120, d=9, K=4):
    """``(X, cls, weight, W)``: sparse rows, class indices, weights (every 7th 0) and a point with one margin
    whose ``exp`` overflows without the max subtraction."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.5, random_state=seed, format="csr") * 3.0
    cls = rng.integers(0, K, n).astype(np.int64)
    weight = rng.uniform(0.0, 2.0, n)
    weight[::7] = 0.0  # rows of weight 0 add nothing
    W = rng.normal(size=(K, d)) * 2.0
    W[0, 0] = 400.0
    return X, cls, weight, W


def softmax_sums(X, cls, weight, W):
    """``(loss_sum, conj_sum, G)``: the weighted softmax losses, ``sum_i s_i sum_k p_ik log p_ik`` and
    ``G = sum_i s_i (p_i - e_{y_i}) x_i^T`` at ``W`` (``p_i = softmax(W x_i)``)."""
    X = sp.csr_matrix(X)
    n, K = X.shape[0], W.shape[0]
    s = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    Z = np.asarray(X @ W.T)
    top = Z.max(axis=1, keepdims=True)
    log_p = Z - top - np.log(np.exp(Z - top).sum(axis=1, keepdims=True))
    P = np.exp(log_p)
    loss = -log_p[np.arange(n), cls]
    conj = (P * log_p).sum(axis=1)
    R = s[:, None] * (P - np.eye(K)[cls])
    return float((s * loss).sum()), float((s * conj).sum()), np.asarray(X.T @ R).T


def dual_point(X, cls, weight, W):
    """``alpha[:, i] = s_i (e_{y_i} - softmax(W x_i))``, shape (K, n)."""
    X = sp.csr_matrix(X)
    n, K = X.shape[0], W.shape[0]
    s = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    Z = np.asarray(X @ W.T)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return (s[:, None] * (np.eye(K)[cls] - P)).T


def two_loop(g, pairs):
    """``-H g`` from the pairs ``(s, y)``, oldest first (Nocedal & Wright, Algorithm 7.4)."""
    q = g.copy()
    alphas = []
    for s, y in reversed(pairs):
        a = (s @ q) / (s @ y)
        alphas.append(a)
        q = q - a * y
    if pairs:
        s, y = pairs[-1]
        q = (s @ y) / (y @ y) * q
    for (s, y), a in zip(pairs, reversed(alphas)):
        b = (y @ q) / (s @ y)
        q = q + (a - b) * s
    return -q


def lbfgs_points(X, cls, weight, lam, rounds, memory=10, c1=1e-4):
    """The point each of ``rounds`` rounds evaluates (flattened W), by the method's rule."""
    n = X.shape[0]
    K = int(cls.max()) + 1
    D = K * X.shape[1]
    x = np.zeros(D)
    points = []
    base = base_grad = direction = None
    base_primal = step = slope = 0.0
    pairs = []
    for _ in range(rounds):
        points.append(x.copy())
        loss_sum, _, G = softmax_sums(X, cls, weight, x.reshape(K, -1))
        primal = loss_sum / n + lam / 2 * (x @ x)
        if step > 0 and not primal <= base_primal + c1 * step * slope:
            step /= 2
            x = base + step * direction
            continue
        grad = G.ravel() / n + lam * x
        if step > 0:
            s, y = x - base, grad - base_grad
            if s @ y > 0:
                pairs = (pairs + [(s, y)])[-memory:]
        direction = two_loop(grad, pairs)
        if not pairs:
            direction = -grad / max(1.0, np.sqrt(grad @ grad))
        base, base_grad, base_primal, slope, step = x.copy(), grad, primal, grad @ direction, 1.0
        x = x + direction
    return points
