"""A small, readable NumPy reference of multinomial Newton (daskdca.methods.multinomial_newton), for the tests.

``P(W) = 1/n sum_i s_i [log sum_k exp(w_k.x_i) - w_{y_i}.x_i] + lam/2 ||W||_F^2``; the Hessian
of row ``i`` is ``s_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` (Bishop, PRML §4.3.4), the variables
``W`` flattened row by row; a round evaluates one point, accepts its full Newton step by Armijo's
test or backtracks along the ladder ``1/2, ..., 2^-20`` to the first step that passes.
"""

import numpy as np
import scipy.sparse as sp

from reference_multinomial_lbfgs import softmax_sums


def softmax_hessian(X, cls, weight, W):
    """The ``K d x K d`` Hessian sum ``sum_i s_i kron(diag(p_i) - p_i p_i^T, x_i x_i^T)`` at ``W``, block by
    block."""
    X = sp.csr_matrix(X)
    n, K = X.shape[0], W.shape[0]
    s = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    Z = np.asarray(X @ W.T)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    dense = X.toarray()
    d = X.shape[1]
    H = np.zeros((K * d, K * d))
    for k in range(K):  # block (k, j) = sum_i s_i p_ik ([k = j] - p_ij) x_i x_i^T
        for j in range(K):
            c = s * P[:, k] * (float(k == j) - P[:, j])
            H[k * d:(k + 1) * d, j * d:(j + 1) * d] = dense.T @ (c[:, None] * dense)
    return H


def ladder_sums(X, cls, weight, W, S, steps):
    """The weighted softmax loss sum at ``W + t S`` for every ``t`` of ``steps``."""
    return np.array([softmax_sums(X, cls, weight, W + t * S)[0] for t in steps])


def newton_points(X, cls, weight, lam, rounds, c1=1e-4):
    """``(points, steps)``: the point each of ``rounds`` rounds leaves for the next (flattened W), by the
    method's rule, and the step each took (1 for the Newton step, the ladder's for a backtrack, 0 when none
    of the ladder passes and the point stays)."""
    X = sp.csr_matrix(X)
    n = X.shape[0]
    K = int(cls.max()) + 1
    shape = (K, X.shape[1])

    def primal(x):
        return softmax_sums(X, cls, weight, x.reshape(shape))[0] / n + lam / 2 * (x @ x)

    x = np.zeros(K * X.shape[1])
    base = direction = None
    base_primal = slope = 0.0
    points, taken = [], []
    for _ in range(rounds):
        if direction is not None and not primal(x) <= base_primal + c1 * slope:
            steps = [0.5 ** j for j in range(1, 21)]
            passing = [t for t in steps if primal(base + t * direction) <= base_primal + c1 * t * slope]
            x, direction = (base + passing[0] * direction if passing else base), None
            points.append(x.copy())
            taken.append(passing[0] if passing else 0.0)
            continue
        _, _, G = softmax_sums(X, cls, weight, x.reshape(shape))
        grad = G.ravel() / n + lam * x
        H = softmax_hessian(X, cls, weight, x.reshape(shape)) / n + lam * np.eye(x.size)
        base, base_primal, direction = x.copy(), primal(x), np.linalg.solve(H, -grad)
        slope = grad @ direction
        x = x + direction
        points.append(x.copy())
        taken.append(1.0)
    return points, taken
