"""Readable pure-NumPy versions of the numba kernels, for index-for-index tests.

Like scikit-learn's ``test_sag.py``, the tests feed these and the compiled
kernels the same row sequence and compare the iterates, rather than only the
end point.  The formulas are written out independently of ``daskdca.losses``
(docs/references.md, note N2); the logistic root is found by Brent's
method instead of the kernels' Newton iteration.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize

B_MAX = float(np.nextafter(1.0, 0.0))

# The regression losses beyond squared: phi_i(z) = h(z - y_i) with the loss's parameter passed as ``gamma``
# (epsilon for the two SVR losses, delta for Huber); the dual variable is alpha itself.
SVR_HUBER = ("epsilon_insensitive", "squared_epsilon_insensitive", "huber")


def _svr_huber_conjugate(loss, y, alpha, p):
    """``phi_i*(-alpha) = -alpha y + h*(-alpha)`` with ``h*`` the conjugate of the residual's loss."""
    if loss == "epsilon_insensitive":
        return -alpha * y + p * abs(alpha) if abs(alpha) <= 1.0 else math.inf
    if loss == "squared_epsilon_insensitive":
        return -alpha * y + p * abs(alpha) + alpha * alpha / 4
    return -alpha * y + alpha * alpha / 2 if abs(alpha) <= p else math.inf


def _svr_huber_loss(loss, y, z, p):
    r = abs(z - y)
    if loss == "epsilon_insensitive":
        return max(0.0, r - p)
    if loss == "squared_epsilon_insensitive":
        return max(0.0, r - p) ** 2
    return r * r / 2 if r <= p else p * r - p * p / 2


def _svr_huber_step(loss, y, alpha, q, m, p):
    """LIBLINEAR's form of the step (Ho & Lin 2012 [HL12] Algorithm 4), as a minimisation over ``d = a - alpha`` of
    ``H/2 d^2 + G d + eps |alpha + d|`` with ``G = m - y + 2 l alpha``, ``H = q + 2 l`` (``l`` = 0 for
    epsilon-insensitive, 1/4 for its square): ``d = -(G + eps)/H`` if that leaves ``a > 0``, ``-(G - eps)/H`` if
    that leaves ``a < 0``, else ``a = 0``; then the box.  Huber: the unconstrained maximiser
    ``(y - m + q alpha) / (1 + q)`` of its quadratic, clipped to ``[-delta, delta]``."""
    if loss == "huber":
        return float(np.clip((y - m + q * alpha) / (1.0 + q), -p, p))
    ell = 0.0 if loss == "epsilon_insensitive" else 0.25
    G = m - y + 2 * ell * alpha
    H = q + 2 * ell
    if H == 0.0:  # a zero row of epsilon-insensitive: minimise (m - y) a + eps |a| on [-1, 1]
        return 1.0 if y - m > p else -1.0 if y - m < -p else 0.0
    g_p, g_n = G + p, G - p
    if g_p < H * alpha:
        a = alpha - g_p / H
    elif g_n > H * alpha:
        a = alpha - g_n / H
    else:
        a = 0.0
    return float(np.clip(a, -1.0, 1.0)) if loss == "epsilon_insensitive" else a


def conjugate(loss, y, alpha, gamma=1.0):
    """``phi_i*(-alpha)``; ``inf`` outside the domain."""
    if loss in SVR_HUBER:
        return _svr_huber_conjugate(loss, y, alpha, gamma)
    if loss == "squared":
        return 0.5 * alpha * alpha - alpha * y
    b = y * alpha
    if loss == "squared_hinge":
        return -b + b * b / 4 if b >= 0 else math.inf
    if not 0.0 <= b <= 1.0:
        return math.inf
    if loss == "hinge":
        return -b
    if loss == "smoothed_hinge":
        return -b + gamma / 2 * b * b
    ent = 0.0
    for p in (b, 1.0 - b):
        if p > 0:
            ent += p * math.log(p)
    return ent


def loss_value(loss, y, z, gamma=1.0):
    if loss in SVR_HUBER:
        return _svr_huber_loss(loss, y, z, gamma)
    a = y * z
    if loss == "hinge":
        return max(0.0, 1.0 - a)
    if loss == "squared_hinge":
        return max(0.0, 1.0 - a) ** 2
    if loss == "logistic":
        return float(np.logaddexp(0.0, -a))
    if loss == "smoothed_hinge":
        if a >= 1.0:
            return 0.0
        if a <= 1.0 - gamma:
            return 1.0 - a - gamma / 2
        return (1.0 - a) ** 2 / (2 * gamma)
    return 0.5 * (z - y) ** 2


def dual_update(loss, y, alpha, q, m, gamma=1.0):
    """New ``alpha`` maximising ``-phi*(-(alpha+d)) - q/2 d^2 - m d``."""
    if loss in SVR_HUBER:
        return _svr_huber_step(loss, y, alpha, q, m, gamma)
    if loss == "squared":
        return alpha + (y - m - alpha) / (1.0 + q)
    b = y * alpha
    if loss == "hinge":
        b_new = 1.0 if q == 0 else float(np.clip(b + (1.0 - y * m) / q, 0.0, 1.0))
    elif loss == "smoothed_hinge":
        b_new = float(np.clip(b + (1.0 - y * m - gamma * b) / (q + gamma), 0.0, 1.0))
    elif loss == "squared_hinge":
        b_new = max(0.0, b + (1.0 - y * m - b / 2) / (q + 0.5))
    elif loss == "logistic":
        # logit(b) + q (b - b_old) + y m = 0, solved in z = logit(b) on its bracket.
        sig = lambda z: 0.5 * (1.0 + math.tanh(0.5 * z))  # noqa: E731
        f = lambda z: z + q * (sig(z) - b) + y * m  # noqa: E731
        lo, hi = -y * m - q - 1e-9, -y * m + q + 1e-9
        z = scipy.optimize.brentq(f, lo, hi, xtol=1e-15, rtol=8.9e-16, maxiter=500)
        b_new = min(max(sig(z), 1.0 - B_MAX), B_MAX)
    else:
        raise ValueError(loss)
    return y * b_new


# The SDCA sweep's logistic rule (daskdca.losses._logistic_b_sweep): the cheap step unless k > 1 and the segment is
# wider than 0.5 times its distance to the box ends (benchmarks/RESULTS.md, 2026-11-26).
SWEEP_EXACT_ABOVE_K = 1.0
SWEEP_NARROW_WIDTH = 0.5


def sweep_dual_update(loss, y, alpha, q, m, gamma=1.0):
    """The step of the sequential sweep: :func:`dual_update`, except for logistic the ascent step
    ``b + (u - b) / (1 + q b_m (1 - b_m))`` toward ``u = sigmoid(-y m)`` (``b_m`` the point of ``[b, u]`` nearest
    1/2), or the exact root where that ``k`` exceeds 1 and the segment is wide."""
    if loss != "logistic":
        return dual_update(loss, y, alpha, q, m, gamma)
    b = y * alpha
    u = min(max(0.5 * (1.0 - math.tanh(0.5 * y * m)), 1.0 - B_MAX), B_MAX)
    lo, hi = min(b, u), max(b, u)
    b_m = float(np.clip(0.5, lo, hi))
    k = q * b_m * (1.0 - b_m)
    if k > SWEEP_EXACT_ABOVE_K and hi - lo > SWEEP_NARROW_WIDTH * min(lo, 1.0 - hi):
        return dual_update(loss, y, alpha, q, m, gamma)
    return y * min(max(b + (u - b) / (1.0 + k), 1.0 - B_MAX), B_MAX)


def weighted_sweep_dual_update(loss, y, alpha, q, m, s, gamma=1.0):
    """:func:`sweep_dual_update` for the loss ``s phi``, as :func:`weighted_dual_update`."""
    if s == 0.0:
        return 0.0
    return s * sweep_dual_update(loss, y, alpha / s, s * q, m, gamma)


def weighted_dual_update(loss, y, alpha, q, m, s, gamma=1.0):
    """The step for the loss ``s phi``: with ``alpha = s beta`` the 1-D problem is ``s`` times the unweighted one in
    ``beta`` with curvature ``s q``; ``s = 0`` pins ``alpha`` at 0."""
    if s == 0.0:
        return 0.0
    return s * dual_update(loss, y, alpha / s, s * q, m, gamma)


def local_sdca(X, y, alpha, u, delta_w, order, loss, lam_n, sigma, gamma=1.0, weight=None, exact_steps=False):
    """Sequential steps with margins from ``u`` and curvature ``sigma ||x_i||^2 / lam_n`` (row losses weighted by
    ``weight``, None: all 1); the sweep's step, or the exact maximiser with ``exact_steps``."""
    step, weighted_step = ((dual_update, weighted_dual_update) if exact_steps
                           else (sweep_dual_update, weighted_sweep_dual_update))
    alpha, u, delta_w = alpha.copy(), u.copy(), delta_w.copy()
    for i in order:
        row = X[i]
        xi_idx, xi_val = row.indices, row.data
        m = float(xi_val @ u[xi_idx])
        q = sigma * float(xi_val @ xi_val) / lam_n
        if weight is None:
            new = step(loss, y[i], alpha[i], q, m, gamma)
        else:
            new = weighted_step(loss, y[i], alpha[i], q, m, weight[i], gamma)
        delta = new - alpha[i]
        alpha[i] = new
        u[xi_idx] += sigma * delta / lam_n * xi_val
        delta_w[xi_idx] += delta / lam_n * xi_val
    return alpha, u, delta_w


def gap_term(loss, y, alpha, z, gamma=1.0, s=1.0):
    """A row's duality-gap term ``s phi(z) + s phi*(-alpha / s) + alpha z`` (0 for a row of weight 0)."""
    if s == 0.0:
        return 0.0
    return s * loss_value(loss, y, z, gamma) + s * conjugate(loss, y, alpha / s, gamma) + alpha * z


def movable_sdca(X, y, alpha, w, order, pass_length, loss, lam_n, gap_stop, gamma=1.0, weight=None):
    """Serial steps (``sigma = 1``, margins from ``w``) in passes of ``pass_length`` rows of ``order``; after
    passes 1, 2, 4, 8, ... that leave a whole pass to go, stop if the pass's gap terms (each at the margin its
    step read) sum to at most ``gap_stop``.  Returns ``(alpha, w, steps)``."""
    alpha, w = alpha.copy(), w.copy()
    t, j = 0, 0
    while t < len(order):
        j += 1
        stop = min(len(order), t + pass_length)
        checked = len(order) - stop >= pass_length and j & (j - 1) == 0
        gap = 0.0
        for i in order[t:stop]:
            row = X[i]
            m = float(row.data @ w[row.indices])
            s = 1.0 if weight is None else weight[i]
            gap += gap_term(loss, y[i], alpha[i], m, gamma, s)
            q = float(row.data @ row.data) / lam_n
            new = weighted_sweep_dual_update(loss, y[i], alpha[i], q, m, s, gamma)
            w[row.indices] += (new - alpha[i]) / lam_n * row.data
            alpha[i] = new
        t = stop
        if checked and gap <= gap_stop:
            break
    return alpha, w, t


def minibatch_sdca(X, y, q, alpha, w, batches, loss, lam_n, gamma=1.0):
    """[TRS15] Algorithm 1: every row of a batch reads the same ``w``."""
    alpha, w = alpha.copy(), w.copy()
    for batch in batches:
        margins = np.asarray(X[batch] @ w).ravel()
        new = np.array([dual_update(loss, y[i], alpha[i], q[i], m, gamma) for i, m in zip(batch, margins)])
        delta = new - alpha[batch]
        alpha[batch] = new
        w = w + np.asarray(X[batch].T @ delta).ravel() / lam_n
    return alpha, w


def objective_sums(X, y, alpha, w, loss, gamma=1.0):
    z = np.asarray(X @ w).ravel()
    loss_sum = sum(loss_value(loss, y[i], z[i], gamma) for i in range(X.shape[0]))
    conj_sum = sum(conjugate(loss, y[i], alpha[i], gamma) for i in range(X.shape[0]))
    return loss_sum, conj_sum


def dual_objective(X, y, alpha, lam, loss, gamma=1.0):
    """``D(alpha)`` from ``alpha`` alone, with ``w(alpha) = X^T alpha / (lam n)`` rebuilt here."""
    n = X.shape[0]
    w = np.asarray(X.T @ alpha).ravel() / (lam * n)
    conj = sum(conjugate(loss, y[i], alpha[i], gamma) for i in range(n))
    return -conj / n - 0.5 * lam * w @ w, w
