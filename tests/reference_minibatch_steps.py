"""Readable NumPy versions of the naive and aggressive mini-batch SDCA steps and of mini-batch Pegasos.

All solve ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` (Takáč et al.
2013 [TBRS13], eq. (1) with a general loss).  Like ``reference_kernels.py`` they take the
row sequence as input, so the tests feed them and the compiled code the same
batches and compare the iterates, not only the end point.  The dual is
recomputed from scratch here (``reference_kernels.dual_objective``), never
from the maintained ``w``.
"""

from __future__ import annotations

import numpy as np

import reference_kernels as ref

GAMMA = 0.95  # [TBRS13] Algorithm 2


def batch_step(X, y, alpha, w, batch, beta, loss, lam_n):
    """[TBRS13] eq. (15), general loss: the new duals of ``batch`` from one ``w``, ``v_i = beta ||x_i||^2``."""
    margins = np.asarray(X[batch] @ w).ravel()
    sqnorm = np.asarray(X[batch].multiply(X[batch]).sum(axis=1)).ravel()
    return np.array([ref.dual_update(loss, y[i], alpha[i], beta * s / lam_n, m)
                     for i, s, m in zip(batch, sqnorm, margins)])


def naive_minibatch_sdca(X, y, batches, loss, lam_n):
    """[TBRS13] §4.1: every row of a batch takes the serial step (``beta = 1``) from the same ``w``."""
    alpha, w = np.zeros(X.shape[0]), np.zeros(X.shape[1])
    for batch in batches:
        new = batch_step(X, y, alpha, w, batch, 1.0, loss, lam_n)
        w = w + np.asarray(X[batch].T @ (new - alpha[batch])).ravel() / lam_n
        alpha[batch] = new
    return alpha, w


def aggressive_sdca(X, y, batches, loss, lam, beta_b):
    """[TBRS13] Algorithm 2 (docs/references.md, note N3): tentative step, ``rho``, actual step, accept iff ``D`` increases.

    Returns ``(alpha, w, betas, rhos, accepted)`` with one entry per
    iteration in the lists; the dual is evaluated from scratch.
    """
    n = X.shape[0]
    lam_n = lam * n
    alpha, w, beta = np.zeros(n), np.zeros(X.shape[1]), beta_b
    betas, rhos, accepted = [], [], []
    for batch in batches:
        trial = batch_step(X, y, alpha, w, batch, beta, loss, lam_n) - alpha[batch]
        sqnorm = np.asarray(X[batch].multiply(X[batch]).sum(axis=1)).ravel()
        zeta = float(np.sum(sqnorm * trial ** 2))
        direction = np.asarray(X[batch].T @ trial).ravel()
        rho = float(np.clip(direction @ direction / zeta, 1.0, beta_b)) if zeta > 0 else beta
        step = batch_step(X, y, alpha, w, batch, rho, loss, lam_n) - alpha[batch]
        beta = float(np.clip(beta ** GAMMA * rho ** (1 - GAMMA), 1.0, beta_b))
        candidate = alpha.copy()
        candidate[batch] += step
        before, _ = ref.dual_objective(X, y, alpha, lam, loss)
        after, _ = ref.dual_objective(X, y, candidate, lam, loss)
        ok = after > before
        if ok:
            alpha = candidate
            w = w + np.asarray(X[batch].T @ step).ravel() / lam_n
        betas.append(beta)
        rhos.append(rho)
        accepted.append(ok)
    return alpha, w, betas, rhos, accepted


def derivative(loss, y, z):
    """``d phi / dz`` (hinge: ``-y`` when ``y z < 1``, else 0, as chi_i in [TBRS13] eq. (8))."""
    a = y * z
    if loss == "hinge":
        return np.where(a < 1.0, -y, 0.0)
    if loss == "logistic":
        return -y / (1.0 + np.exp(a))
    if loss == "smoothed_hinge":
        return np.where(a >= 1.0, 0.0, np.where(a <= 0.0, -y, -y * (1.0 - a)))
    raise ValueError(loss)


def pegasos(X, y, batches, lam, loss, decay=0.9):
    """[TBRS13] Algorithm 1 with eq. (9) for a general loss, and the decaying average of its Fig. 2.

    ``w^(t+1) = (1 - 1/t) w^(t) - 1/(lam t b) sum_{i in A_t} phi_i'(x_i.w^(t)) x_i``
    and ``w_bar^(t+1) = decay w_bar^(t) + (1 - decay) w^(t+1)``.  Returns
    ``(iterates, averages)``: ``w^(2) ... w^(T+1)`` and the averages after each step.
    """
    w, avg = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    iterates, averages = [], []
    for t, batch in enumerate(batches, start=1):
        g = np.asarray(X[batch].T @ derivative(loss, y[batch], np.asarray(X[batch] @ w).ravel())).ravel()
        w = (1.0 - 1.0 / t) * w - g / (lam * t * len(batch))
        avg = decay * avg + (1.0 - decay) * w
        iterates.append(w)
        averages.append(avg)
    return iterates, averages
