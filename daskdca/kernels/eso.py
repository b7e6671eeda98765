"""Safe step weights for mini-batch SDCA: Expected Separable Overapproximation.

Weights ``v`` are *valid* for a sampling ``S`` with ``E|S| = b`` when, for all t,

    E ||X^T t_[S]||^2 <= (b/n) sum_i v_i t_i^2          (Takáč et al. 2015 [TRS15] Def. 1, eq. (4))

which is the matrix inequality ``M <= Diag(v)`` with
``M_ij = (n/b) P(i, j in S) (X X^T)_ij`` (Takáč et al. 2015 [TRS15] Def. 1).
Every formula shipped here is checked against that inequality by
``lambda_max`` in ``tests/test_eso.py``.

The spectral quantity is the row-normalised one of Takáč et al. 2015 [TRS15] §4:
``sigma^2 = lambda_max(D^-1/2 X X^T D^-1/2) / n`` with ``D = diag(X X^T)``,
so ``1/n <= sigma^2 <= 1``.  Errata applied (docs/references.md, note N1): the printed
row-nnz ``omega`` bound and sparse weights are invalid; the column-nnz forms
below are the corrected ones.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from daskdca.problem import column_nnz, max_column_nnz

__all__ = [
    "sigma2_upper_bound_column_nnz",
    "sigma2_power",
    "sigma2_power_iteration",
    "beta_standard",
    "v_sparse_standard",
    "beta_distributed",
    "beta_distributed_tight",
]

# Power iteration under-estimates lambda_max; the estimate is inflated by this
# factor before use (docs/references.md, note N1) and then capped by the
# rigorous column-nnz bound and by 1.
SIGMA2_SAFETY_MARGIN = 1.05


def _row_normalised(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    keep = norms > 0
    scale = np.zeros_like(norms)
    scale[keep] = 1.0 / norms[keep]
    return sp.diags(scale) @ X, int(keep.sum())


def sigma2_upper_bound_column_nnz(X):
    """Rigorous bound ``sigma^2 <= max_j omega_j / n`` (docs/references.md, note N1, corrected omega).

    ``omega_j`` is the number of rows in which feature ``j`` is non-zero.
    """
    return min(1.0, max(1, max_column_nnz(X)) / X.shape[0])


def sigma2_power_iteration(gram_matvec, d, n, column_bound, *, max_iter=300, rtol=1e-7, seed=0):
    """``sigma^2`` by power iteration on ``A = X~^T X~`` given ``v -> A v``, with the safety margin.

    ``X~`` has the rows of X scaled to unit norm.  Returns
    ``min(margin * lambda_est / n, column_bound, 1)``, never below ``1/n``;
    see ``SIGMA2_SAFETY_MARGIN``.  ``gram_matvec`` may be a distributed
    reduction (the Dask engine passes one).
    """
    rng = np.random.default_rng(seed)
    v = np.ones(d) + 0.1 * rng.standard_normal(d)
    v /= np.linalg.norm(v)
    estimate = 0.0
    for _ in range(max_iter):
        Av = gram_matvec(v)
        new_estimate = float(v @ Av)
        norm = np.linalg.norm(Av)
        if norm == 0.0:
            break
        v = Av / norm
        done = abs(new_estimate - estimate) <= rtol * new_estimate
        estimate = new_estimate
        if done:
            break
    sigma2 = SIGMA2_SAFETY_MARGIN * estimate / n
    return float(max(1.0 / n, min(sigma2, column_bound, 1.0)))


def sigma2_power(X, *, max_iter=300, rtol=1e-7, seed=0):
    """``sigma^2`` of an in-memory matrix (see :func:`sigma2_power_iteration`)."""
    Xn, n_nonzero = _row_normalised(X)
    n, d = Xn.shape
    if n_nonzero == 0:
        return 1.0 / n
    return sigma2_power_iteration(lambda v: Xn.T @ (Xn @ v), d, n, sigma2_upper_bound_column_nnz(X),
                                  max_iter=max_iter, rtol=rtol, seed=seed)


def beta_standard(n, batch_size, sigma2):
    """``beta`` for tau-nice sampling of ``b`` rows out of ``n`` (Takáč et al. 2015 [TRS15] eq. (12)).

    ``v_i = beta ||x_i||^2`` with ``beta = 1 + (b - 1)(n sigma^2 - 1) / max(1, n - 1)``.
    """
    return 1.0 + (batch_size - 1) * (n * sigma2 - 1.0) / max(1, n - 1)


def v_sparse_standard(X, batch_size):
    """Column-nnz weights for tau-nice sampling (docs/references.md, note N1, corrected form).

    ``v_i = sum_j x_ij^2 (1 + (b - 1)(omega_j - 1) / max(1, n - 1))`` with
    ``omega_j`` the number of rows containing feature ``j``.  The form printed
    in Takáč et al. 2015 [TRS15] §4.3 uses row nnz and is invalid.
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    n = X.shape[0]
    omega = column_nnz(X).astype(np.float64)
    col_factor = 1.0 + (batch_size - 1) * (omega - 1.0) / max(1, n - 1)
    sq = X.multiply(X).tocsr()
    return np.asarray(sq @ col_factor).ravel()


def beta_distributed(n, batch_size, n_partitions, sigma2):
    """``beta`` for (C, b)-distributed sampling as printed in Takáč et al. 2015 [TRS15] eq. (12).

    ``b = C``: ``1 + b sigma^2``; ``b >= 2C``:
    ``b/(b-C) (1 + (b-C)(n sigma^2 - 1)/max(C, n-C))``; otherwise the
    any-``b`` bound ``2 (1 + b sigma^2)``.  Requires equal partitions of size
    ``n/C`` and ``tau = b/C`` rows drawn from each.
    """
    b, c = batch_size, n_partitions
    if b == c:
        return 1.0 + b * sigma2
    if b >= 2 * c:
        return b / (b - c) * (1.0 + (b - c) * (n * sigma2 - 1.0) / max(c, n - c))
    return 2.0 * (1.0 + b * sigma2)


def beta_distributed_tight(n, batch_size, n_partitions, sigma2):
    """Tighter ``beta`` for (C, b)-distributed sampling (docs/references.md, note N1, derived and checked).

    ``beta = 1 + b sigma^2 - (tau - 1)/(s - 1)`` with ``tau = b/C`` rows
    drawn from each partition of ``s = n/C`` rows; equals the paper's value
    at ``b = C``.  Never below 1.
    """
    tau = batch_size / n_partitions
    s = n / n_partitions
    within = (tau - 1.0) / (s - 1.0) if s > 1 else 0.0
    return max(1.0, 1.0 + batch_size * sigma2 - within)
