"""Readable NumPy versions of the primal Newton kernels and rounds (``daskdca/kernels/newton.py``).

For ``P(w) = 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2``: the per-row loss,
derivative, (generalised) second derivative and conjugate written out here
with no daskdca code, the sums a partition sends, and whole Newton rounds
(``np.linalg.solve`` for the direction, Armijo on the ladder of steps).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

LADDER = 0.5 ** np.arange(21)
C1 = 1e-4


def _margin(loss, y, z):
    return z if loss == "squared" else y * z


def loss_values(loss, y, z, gamma=1.0):
    """``phi_i(z_i)`` for every row."""
    a = _margin(loss, y, z)
    if loss == "logistic":
        return np.logaddexp(0.0, -a)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - a) ** 2
    if loss == "smoothed_hinge":
        return np.where(a >= 1.0, 0.0, np.where(a <= 1.0 - gamma, 1.0 - a - gamma / 2, (1.0 - a) ** 2 / (2 * gamma)))
    if loss == "squared":
        return 0.5 * (z - y) ** 2
    raise ValueError(loss)


def derivatives(loss, y, z, gamma=1.0):
    """``phi_i'(z_i)``."""
    a = _margin(loss, y, z)
    if loss == "logistic":
        return -y / (1.0 + np.exp(a))
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - a)
    if loss == "smoothed_hinge":
        return -y * np.clip((1.0 - a) / gamma, 0.0, 1.0)
    return z - y


def curvatures(loss, y, z, gamma=1.0):
    """``phi_i''(z_i)``, the generalised one at the kinks (0 on the flat side, as LIBLINEAR's TRON)."""
    a = _margin(loss, y, z)
    if loss == "logistic":
        p = 1.0 / (1.0 + np.exp(-a))
        return p * (1.0 - p)
    if loss == "squared_hinge":
        return np.where(a < 1.0, 2.0, 0.0)
    if loss == "smoothed_hinge":
        return np.where((a < 1.0) & (a > 1.0 - gamma), 1.0 / gamma, 0.0)
    return np.ones_like(z)


def conjugates(loss, y, alpha, gamma=1.0):
    """``phi_i*(-alpha_i)`` on the domain (the tests only evaluate feasible points)."""
    if loss == "squared":
        return 0.5 * alpha**2 - alpha * y
    b = y * alpha
    if loss == "squared_hinge":
        return -b + b**2 / 4
    if loss == "smoothed_hinge":
        return -b + gamma / 2 * b**2
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = np.where(b > 0, b * np.log(np.where(b > 0, b, 1.0)), 0.0)
        ent += np.where(b < 1, (1 - b) * np.log(np.where(b < 1, 1 - b, 1.0)), 0.0)
    return ent


def newton_sums(X, y, w, loss, weight=None, gamma=1.0):
    """``(sum s phi, sum (s phi)*(-alpha), sum s phi' x_i, sum s phi'' x_i x_i^T)`` at ``w``, ``alpha = -s phi'``."""
    X = sp.csr_matrix(X, dtype=np.float64)
    s = np.ones(X.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    z = X @ w
    dphi = derivatives(loss, y, z, gamma)
    # (s phi)*(u) = s phi*(u / s) and alpha / s = -phi'
    conj = s * conjugates(loss, y, -dphi, gamma)
    H = (X.T @ sp.diags(s * curvatures(loss, y, z, gamma)) @ X).toarray()
    return float(np.sum(s * loss_values(loss, y, z, gamma))), float(np.sum(conj)), X.T @ (s * dphi), H


def ladder_sums(X, y, w, direction, loss, weight=None, gamma=1.0, steps=LADDER):
    """``sum_i s_i phi_i(x_i.(w + t s))`` for every ``t`` of the ladder."""
    X = sp.csr_matrix(X, dtype=np.float64)
    s = np.ones(X.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    m, q = X @ w, X @ direction
    return np.array([np.sum(s * loss_values(loss, y, m + t * q, gamma)) for t in steps])


def newton_points(X, y, lam, loss, rounds, weight=None, gamma=1.0, returned=False):
    """The point each of ``rounds`` rounds hands on, from ``w_0 = 0``: ``np.linalg.solve`` for the direction.

    A round evaluates its point; it accepts it when it needs no test (the first round, or a point a ladder
    step reached) or when its full step meets ``P(w + s) <= P(w) + c1 grad.s``, and hands on ``w + s`` from
    the Hessian there; otherwise it hands on the largest ``t`` of the rest of the ladder meeting
    ``P(w + t s) <= P(w) + c1 t grad.s`` from the accepted ``w``; when none does, ``w + 2^-21 s``, tested in
    the next round as a full step of ``2^-21 s`` (``w`` itself, accepted, when that step no longer moves ``w``).

    With ``returned``, the point a fit stopped after each round returns instead: the point handed on where it
    was tested or where the next round's test would accept it, else the accepted ``w`` it started from.
    """
    n, d = X.shape
    point, test = np.zeros(d), False
    base = direction = None
    base_primal = slope = 0.0
    out = []
    for _ in range(rounds):
        loss_sum, _, g, H = newton_sums(X, y, point, loss, weight, gamma)
        primal = loss_sum / n + lam / 2 * point @ point
        if not test or primal <= base_primal + C1 * slope:
            base, base_primal = point, primal
            grad = g / n + lam * point
            direction = np.linalg.solve(H / n + lam * np.eye(d), -grad)
            slope = grad @ direction
            point, test = base + direction, bool(np.any(direction))
        else:
            values = ladder_sums(X, y, base, direction, loss, weight, gamma, steps=LADDER[1:])
            point, test = None, False
            for t, v in zip(LADDER[1:], values):
                trial = base + t * direction
                if v / n + lam / 2 * trial @ trial <= base_primal + C1 * t * slope:
                    point = trial
                    break
            if point is None:  # the backtracking goes on past the ladder's end
                direction, slope = LADDER[-1] / 2 * direction, LADDER[-1] / 2 * slope
                point, test = base + direction, True
                if np.array_equal(point, base):
                    point, test = base, False
        if returned and test:  # what a fit stopped here returns: an untested point only if the test accepts it
            loss_sum = np.sum(loss_values(loss, y, X @ point, gamma) * (1.0 if weight is None else weight))
            accepted = loss_sum / n + lam / 2 * point @ point <= base_primal + C1 * slope
            out.append((point if accepted else base).copy())
        else:
            out.append(point.copy())
    return out
