"""The problem every method solves, its dual, and the certificate (layer 1: no Dask).

Primal and dual (``docs/architecture.md``)::

    P(w)     = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2
    D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2,   w(alpha) = X^T alpha / (lam n)

Weak duality ``D(alpha) <= P(w)`` holds for every ``w`` and every ``alpha`` in
the conjugates' domain, so ``P(w) - D(alpha)`` bounds ``P(w) - P(w*)``: that
is the certificate every fit reports.  Primal methods certify with the dual
point ``alpha_i = -phi_i'(x_i.w)`` (always in the domain); dual methods with
their own ``alpha`` and ``w = w(alpha)``.  The sums over rows are computed per
partition (:func:`daskdca.partitions.objective_sums_part`) and added by the
drivers' fixed-order tree reduction; this module turns them into ``P``, ``D``
and the stopping quantity.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["canonical_csr", "check_sample_weight", "with_intercept_column", "dual_value", "gap_met", "l1_objectives",
           "add_column_nnz", "column_nnz", "feature_overlap", "max_column_nnz", "objectives", "primal_value",
           "relative_gap"]


def primal_value(n, lam, loss_sum, w):
    """``P(w) = loss_sum / n + lam/2 ||w||^2`` with ``loss_sum = sum_i phi_i(x_i.w)``."""
    return loss_sum / n + 0.5 * lam * float(w @ w)


def dual_value(n, lam, conj_sum, w_alpha):
    """``D(alpha) = -conj_sum / n - lam/2 ||w(alpha)||^2`` with ``conj_sum = sum_i phi_i*(-alpha_i)``."""
    return -conj_sum / n - 0.5 * lam * float(w_alpha @ w_alpha)


def objectives(info, sums, w, w_alpha, l1_ratio=0.0):
    """``(P(w), D(alpha))`` from the row sums ``[loss_sum, conj_sum]`` of ``info``'s problem.

    ``w`` is the model being certified and ``w_alpha = X^T alpha / (lam n)``
    the dual point's vector; they are the same array for the L2 dual methods.
    With ``l1_ratio = rho > 0`` (elastic net: SPDC, and SDCA and CoCoA+ by
    proximal steps) the regulariser is
    ``g(w) = lam rho ||w||_1 + lam (1 - rho)/2 ||w||^2`` and
    ``D(alpha) = -conj_sum/n - g*(X^T alpha / n)``,
    ``g*(v) = sum_j (|v_j| - lam rho)_+^2 / (2 lam (1 - rho))``
    (Zhang & Xiao, SPDC, eq. (1) and its dual); ``rho = 1`` is the pure L1
    problem (:func:`l1_objectives`, ``alpha`` then the rescaled dual point
    ``beta`` of :mod:`daskdca.l1`); the primal point of
    ``alpha`` is then ``grad g*(X^T alpha / n) = sign(w_alpha) (|w_alpha| - rho)_+ / (1 - rho)``,
    which the elastic-net plans return as their model (``primal_from_dual``
    is False for them).

    A one-vs-rest fit passes ``sums`` of shape ``(K, 2)`` and ``w``,
    ``w_alpha`` of shape ``(K, d)``; ``P`` and ``D`` are then arrays of its
    K problems' objectives.  A multinomial fit (one problem, ``W`` of shape
    ``(K, d)``) passes ``sums`` of shape ``(2,)`` with such ``w``: ``P`` and
    ``D`` are then floats, with the Frobenius norms of ``W`` and ``W(alpha)``.
    """
    if np.ndim(sums) == 2:
        pairs = [objectives(info, s, v, va, l1_ratio) for s, v, va in zip(sums, w, w_alpha)]
        return np.array([p for p, _ in pairs]), np.array([d for _, d in pairs])
    if np.ndim(w) == 2:
        w, w_alpha = np.ravel(w), np.ravel(w_alpha)
    if l1_ratio == 0.0:
        return primal_value(info.n, info.lam, sums[0], w), dual_value(info.n, info.lam, sums[1], w_alpha)
    lam, rho = info.lam, float(l1_ratio)
    w = np.asarray(w, dtype=np.float64)
    if rho == 1.0:
        return l1_objectives(info.n, lam, sums, w, w_alpha)
    primal = sums[0] / info.n + lam * rho * float(np.abs(w).sum()) + 0.5 * lam * (1.0 - rho) * float(w @ w)
    excess = np.maximum(np.abs(np.asarray(w_alpha, dtype=np.float64)) - rho, 0.0)  # (|v| - lam rho)_+ / lam
    dual = -sums[1] / info.n - 0.5 * lam * float(excess @ excess) / (1.0 - rho)
    return primal, dual


def l1_objectives(n, lam, sums, w, w_beta):
    """``(P1(w), D1(beta))`` of the pure L1 problem from the row sums ``[loss_sum, conj_sum]`` at ``(w, beta)``.

    ``P1(w) = loss_sum/n + lam ||w||_1`` and
    ``D1(beta) = -conj_sum/n`` where ``beta`` is feasible,
    ``||X^T beta / n||_inf <= lam``, i.e. ``m = ||w_beta||_inf <= 1`` with
    ``w_beta = X^T beta / (lam n)``.  Where rounding leaves ``m > 1``, the
    feasible point is ``beta / m``, and since every loss has
    ``phi_i*(0) = -min phi_i = 0`` (checked by :mod:`daskdca.l1`),
    convexity of ``phi_i*`` gives ``D1(beta / m) >= D1(beta) / m``: that
    lower bound is returned, so ``P1(w) - D1`` always bounds
    ``P1(w) - min P1``.

    Parameters
    ----------
    n : int
        The number of rows.
    lam : float
        The L1 weight.
    sums : array-like of shape (2,)
        ``sum_i phi_i(x_i.w)`` and ``sum_i phi_i*(-beta_i)``.
    w : ndarray of shape (d,)
        The model certified.
    w_beta : ndarray of shape (d,)
        ``X^T beta / (lam n)``.

    Returns
    -------
    tuple of float
        ``(P1(w), D1)``.
    """
    primal = sums[0] / n + lam * float(np.abs(w).sum())
    dual = -sums[1] / n
    m = float(np.max(np.abs(np.asarray(w_beta, dtype=np.float64)), initial=0.0))
    if m > 1.0:
        dual = dual / m
    return primal, dual


def relative_gap(primal, dual):
    """``(P - D) / |P|``, the quantity compared with ``tol`` (``|P|`` floored at 1e-300).

    For the arrays of a one-vs-rest fit, the largest over its problems.
    """
    if np.ndim(primal):
        return float(np.max((np.asarray(primal) - dual) / np.maximum(np.abs(primal), 1e-300)))
    return (primal - dual) / max(abs(primal), 1e-300)


def gap_met(primal, dual, tol):
    """Whether ``P - D <= tol * |P|``: the stopping rule (for every problem of a one-vs-rest fit)."""
    return bool(np.all(np.asarray(primal) - dual <= tol * np.abs(primal)))


def canonical_csr(X, dtype=None):
    """CSR of ``X`` (as ``dtype`` if given) with sorted, duplicate-free indices; the caller's arrays untouched.

    ``scipy.sparse.csr_matrix(X)`` of a CSR matrix shares its ``data``,
    ``indices`` and ``indptr``, so sorting or summing duplicates in place
    would rewrite the caller's matrix (and any other matrix built on the same
    arrays); a matrix that is not canonical is copied first.
    """
    X = sp.csr_matrix(X, dtype=dtype)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # sorts the indices first
    return X


def column_nnz(X):
    """The number of rows in which each feature is non-zero (stored zeros not counted), shape ``(d,)``."""
    X = sp.csr_matrix(X)
    counts = np.zeros(X.shape[1], dtype=np.int64)
    add_column_nnz(X.indices, X.data, counts)
    return counts


@njit(nogil=True, cache=True)
def add_column_nnz(indices, data, counts):
    """Add to ``counts`` (int64, one per feature, changed in place) the non-zero stored values of CSR rows with
    these ``indices`` and ``data``: :func:`column_nnz` in one pass (``np.bincount`` would first copy 32-bit
    indices to 64 bits, and a mask of the non-zero values copy them again), and the store writer's count,
    block after block."""
    for k in range(indices.shape[0]):
        if data[k] != 0:
            counts[indices[k]] += 1


def max_column_nnz(X):
    """The largest number of rows in which one feature is non-zero (the sparse ESO bound's input)."""
    return int(column_nnz(X).max(initial=0))


def feature_overlap(counts, n):
    """``sum_j c_j^2 / (n sum_j c_j)`` for the column counts ``c`` of ``n`` rows: the mean, over the stored
    values, of the share of the rows that hold the same feature (0 for no stored value).

    About ``r / d`` for ``r`` values a row drawn uniformly from ``d`` features; a feature in every row adds
    about ``1 / r``.  It is what two sub-blocks' steps share: their changes to ``w`` add up along the
    features both hold (:data:`daskdca.routes.THREADED_SWEEP_MAX_OVERLAP`).
    """
    counts = np.asarray(counts, dtype=np.float64)
    total = float(counts.sum())
    # NumPy's sum of the squares, not the dot product: BLAS runs a dot product of more than about 10,000
    # values on its threads, which spin for a while after it on the cores a fit's first epoch then sweeps on
    # (:func:`daskdca.driver.one_blas_thread`)
    return float(np.sum(counts * counts)) / (n * total) if total else 0.0


def check_sample_weight(sample_weight, n):
    """Row weights as float64 of shape ``(n,)``: finite, ``>= 0``, not all zero (a float: ``n`` copies).

    A ValueError names the first bad entry and the fix.
    """
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        sample_weight = np.full(n, float(sample_weight))
    try:
        weight = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be None, a float or an array of n_samples={n} non-negative reals, "
                         f"got {type(sample_weight).__name__}.") from None
    if weight.shape != (n,):
        raise ValueError(f"sample_weight has shape {weight.shape} but X has {n} rows; pass one weight per row, "
                         "shape (n_samples,).")
    nonfinite = np.flatnonzero(~np.isfinite(weight))
    if nonfinite.size:
        bad = int(nonfinite[0])
        raise ValueError(f"sample_weight contains a non-finite value ({float(weight[bad])!r}) at row {bad}; "
                         "weights must be finite and >= 0.")
    negative = np.flatnonzero(weight < 0)
    if negative.size:
        i = int(negative[0])
        raise ValueError(f"sample_weight must be >= 0, got {float(weight[i])!r} at row {i}"
                         f"{f' ({negative.size} rows are negative)' if negative.size > 1 else ''}; a weight "
                         "scales the row's loss, so drop such rows or give them weight 0.")
    if not weight.any():
        raise ValueError("sample_weight is zero for every row, which leaves no loss to fit (the solution would be "
                         "w = 0); give some rows a positive weight.")
    return weight


def row_sqnorms(indptr, data):
    """``||x_i||^2`` of every CSR row in float64, each row's squares summed in the order of NumPy's
    ``np.add.reduceat(data.astype(np.float64) ** 2, starts)``: the row's first square plus the pairwise sum of
    the rest (NumPy's ``pairwise_sum``: sequential below 8 terms, eight running sums up to 128, halves above).

    The one formula of the store writer (``row_sqnorm``, checksummed) and of
    :func:`daskdca.partitions.rows_from_csr`, so a block read from a store and
    the same rows held as an array give the same bits.  One numba pass with no
    temporary (``reduceat`` squared every value into a new array first).
    """
    indptr = np.asarray(indptr)
    out = np.zeros(indptr.shape[0] - 1)
    _row_sqnorms(indptr, np.asarray(data), out)
    return out


@njit(nogil=True, cache=True)
def _row_sqnorms(indptr, data, out):
    """:func:`row_sqnorms` into ``out``."""
    for i in range(out.shape[0]):
        start = indptr[i]
        length = indptr[i + 1] - start
        if length > 0:
            out[i] = _sq(data[start]) + _pairwise_sqsum(data, start + 1, length - 1)


@njit(nogil=True, cache=True)
def _sq(value):
    """``value^2`` in float64."""
    v = np.float64(value)
    return v * v


@njit(nogil=True, cache=True)
def _pairwise_sqsum(data, lo, n):
    """``sum_{p < n} data[lo + p]^2`` (squares in float64) in the order of NumPy's ``pairwise_sum``
    (``numpy/_core/src/umath/loops_utils.h.src``): sequential below 8 terms, eight running sums combined as
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` then the rest up to 128, above that the two halves
    (the first a multiple of 8 long) summed so and added."""
    if n < 8:
        total = 0.0
        for p in range(lo, lo + n):
            total += _sq(data[p])
        return total
    if n <= 128:
        r0, r1, r2, r3 = _sq(data[lo]), _sq(data[lo + 1]), _sq(data[lo + 2]), _sq(data[lo + 3])
        r4, r5, r6, r7 = _sq(data[lo + 4]), _sq(data[lo + 5]), _sq(data[lo + 6]), _sq(data[lo + 7])
        p = lo + 8
        stop = lo + n - n % 8
        while p < stop:
            r0 += _sq(data[p])
            r1 += _sq(data[p + 1])
            r2 += _sq(data[p + 2])
            r3 += _sq(data[p + 3])
            r4 += _sq(data[p + 4])
            r5 += _sq(data[p + 5])
            r6 += _sq(data[p + 6])
            r7 += _sq(data[p + 7])
            p += 8
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while p < lo + n:
            total += _sq(data[p])
            p += 1
        return total
    half = n // 2
    half -= half % 8
    return _pairwise_sqsum(data, lo, half) + _pairwise_sqsum(data, lo + half, n - half)


def with_intercept_column(X, intercept_scaling):
    """X with LIBLINEAR's synthetic intercept feature: a last column whose every value is ``intercept_scaling``.

    Its weight ``w_b`` is regularised like the others and the intercept is
    ``b = intercept_scaling * w_b``.  The one home of that column: the
    estimators, :func:`daskdca.path` and ``daskdca fit --fit-intercept`` call
    it.  The caller's X is never modified.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n, d)
        The data.
    intercept_scaling : float
        The column's value ``s``.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix of shape (n, d + 1)
        CSR for sparse X, a dense array (X's dtype) for dense X.
    """
    column = np.full((X.shape[0], 1), intercept_scaling, dtype=X.dtype)
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(column)], format="csr")
    return np.hstack([X, column])
