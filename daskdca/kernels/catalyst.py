"""Numba kernels of Catalyst's combine (:class:`daskdca.methods.catalyst.CatalystPlan`).

Catalyst (Lin, Mairal & Harchaoui, "Catalyst acceleration for first-order
convex optimization: from theory to practice", JMLR 18(212), 2018, Algorithm 1)
moves the proximal centre by extrapolation after every round,

    y_k = x_k + beta (x_k - x_{k-1}),   c_k = kappa y_k / (lam + kappa),

and the round's iterate is kept as ``w = c_k + X^T alpha / (lam' n)``.  The
combine runs on the driver and, to the same bits, on every worker that holds
partitions, once a round; on d-vectors of 1e5 and more its NumPy form (six
passes and five temporary vectors) is a visible part of a round.  These
kernels do the same element-wise arithmetic, in the same order, in one pass
each, so the bits are those of the NumPy expressions (no fast-math: numba
contracts no multiply-add).
"""

from __future__ import annotations

from numba import njit

__all__ = ["dual_vector", "extrapolate"]


@njit(nogil=True, cache=True)
def dual_vector(w, centre, ratio, out):
    """``out = (w - centre) * ratio``: ``X^T alpha / (lam n)`` from ``w = centre + X^T alpha / (lam' n)`` with
    ``ratio = lam' / lam``."""
    for j in range(w.shape[0]):
        out[j] = (w[j] - centre[j]) * ratio


@njit(nogil=True, cache=True)
def extrapolate(x, previous, centre, beta, scale, new_centre, new_w):
    """``new_centre = scale * (x + beta * (x - previous))`` and ``new_w = x + (new_centre - centre)``, with
    ``scale = kappa / (lam + kappa)``: the next centre and the iterate kept around it."""
    for j in range(x.shape[0]):
        c = scale * (x[j] + beta * (x[j] - previous[j]))
        new_centre[j] = c
        new_w[j] = x[j] + (c - centre[j])
