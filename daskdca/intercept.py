"""An unregularised intercept, solved exactly by primal Newton and certified by a feasible dual point.

The estimators' ``fit_intercept=True`` is LIBLINEAR's regularised intercept
(a synthetic feature whose weight is penalised like the others).  This
module solves the problem with the intercept ``b`` left out of the penalty,
the problem of :class:`~sklearn.linear_model.Ridge` and of
:class:`~sklearn.linear_model.LogisticRegression`'s L-BFGS solver, on the
primal Newton route (Cholesky on the Hessian for ``d <= 300`` features,
conjugate gradients on Hessian-vector products above):
:func:`fit_unregularized_intercept`, which the estimators call for
``fit_intercept="unregularized"``.  No Dask: one process, in memory.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from daskdca.kernels.newton import (
    cholesky_solve,
    dual_point,
    gradient_curvature_sums,
    ladder_loss_sums,
    newton_sums,
    newton_system,
    packed_size,
)
from daskdca.losses import get_loss
from daskdca.problem import check_sample_weight
from daskdca.validation import _check_int, _check_real, _check_X

__all__ = ["CG_MAX_ITER", "INTERCEPT_LOSSES", "MAX_FEATURES", "InterceptFit", "balance_dual",
           "fit_unregularized_intercept"]

#: The losses with a Newton step (``daskdca.methods.newton``: twice differentiable, or through the
#: generalised Hessian) whose conjugate's domain is an interval containing 0.
INTERCEPT_LOSSES = ("logistic", "squared", "squared_hinge", "smoothed_hinge")
#: The most features (``d``, the intercept not counted) for which the ``(d + 1) x (d + 1)`` Hessian is formed
#: densely and factored; above, each Newton direction is found by conjugate gradients on Hessian-vector products.
MAX_FEATURES = 300
#: The most conjugate-gradient iterations of one truncated Newton direction (each one Hessian-vector product,
#: two reads of the rows); the forcing term of Nocedal & Wright, Numerical Optimization, 2nd ed., Algorithm 7.1
#: (``min(0.5, sqrt(||g||)) ||g||``) usually stops it far sooner.
CG_MAX_ITER = 250
# Armijo's sufficient-decrease constant and the backtracking ladder t = 1, 1/2, ..., 2^-30 (Nocedal & Wright,
# Numerical Optimization, 2nd ed., eq. (3.4) and Algorithm 3.1 with rho = 1/2), as daskdca.methods.newton.
_ARMIJO_C1 = 1e-4
_LADDER = np.array([0.5 ** j for j in range(31)])


class InterceptFit(NamedTuple):
    """The result of :func:`fit_unregularized_intercept`.

    A named tuple: each parameter is also the field of that name
    (``fit.gap``).

    Parameters
    ----------
    coef : ndarray of shape (d,)
        ``w``.
    intercept : float
        ``b`` (not penalised).
    alpha : ndarray of shape (n,)
        The certificate's dual point: ``-s_i phi_i'(x_i.w + b)`` made feasible
        for ``sum_i alpha_i = 0`` by :func:`balance_dual` (labels inside, as
        in the library's ``dual_coef_``).
    primal : float
        ``P(w, b)``.
    dual : float
        ``D(alpha)``, a lower bound on ``min P``.
    gap : float
        ``primal - dual``, an upper bound on ``P(w, b) - min P``.
    n_iter : int
        Newton steps taken.
    converged : bool
        Whether ``gap <= tol * |primal|``.
    history : tuple of tuple
        One ``(round, passes, seconds, primal, dual, gap)`` per certificate
        evaluated (the fields of :class:`~daskdca.HistoryRecord`).
    """

    coef: np.ndarray
    intercept: float
    alpha: np.ndarray
    primal: float
    dual: float
    gap: float
    n_iter: int
    converged: bool
    history: tuple


def balance_dual(alpha):
    """``alpha`` moved onto ``sum_i alpha_i = 0`` by shrinking toward 0 the side with the larger total.

    With ``p`` the sum of the positive entries and ``m`` that of the
    absolute values of the negative ones, the entries of the larger side are
    multiplied by ``min(p, m) / max(p, m)``; the rounding left by that
    product (measured by :func:`math.fsum`, the exactly rounded sum) is then
    taken off entries that it moves toward 0 (the smallest that can take it;
    where even that one's ulp is larger, it moves one ulp and the entries of
    the other side take the rest), until ``math.fsum`` is 0 (a few steps).  Every entry moves toward 0 only, so it stays in any
    interval containing 0 and its own value (each loss's dual domain).

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        A dual point.

    Returns
    -------
    ndarray of shape (n,)
        A new array whose entries sum to 0 (to the rounding of the last
        correction, in practice exactly under :func:`math.fsum`).
    """
    alpha = np.array(alpha, dtype=np.float64, copy=True)
    positive, negative = alpha > 0, alpha < 0
    p, m = math.fsum(alpha[positive]), -math.fsum(alpha[negative])
    if p > m:
        alpha[positive] *= m / p
    elif m > p:
        alpha[negative] *= p / m
    for _ in range(64):
        r = math.fsum(alpha)
        if r == 0.0:
            break
        # take r off an entry it moves toward 0 (a positive one for r > 0), the smallest that keeps its sign
        magnitude = alpha if r > 0 else -alpha
        candidates = np.flatnonzero(magnitude >= 2.0 * abs(r))
        if candidates.size == 0:
            break
        j = candidates[np.argmin(magnitude[candidates])]
        moved = alpha[j] - r
        # r below half an ulp of alpha[j]: move alpha[j] one ulp toward 0 instead, which leaves a residual of the
        # other sign for an entry of the other side (fine enough, in practice) to take
        alpha[j] = moved if moved != alpha[j] else np.nextafter(alpha[j], 0.0)
    return alpha


def _truncated_newton(Xa, curvature, n, penalty, grad):
    """``(direction, Hessian-vector products)``: conjugate gradients on ``H p = -grad``, with
    ``H = Xa^T diag(curvature) Xa / n + diag(penalty)`` applied as products, stopped at the residual
    ``min(0.5, sqrt(||grad||)) ||grad||`` or at a direction of non-positive curvature (Nocedal & Wright,
    Numerical Optimization, 2nd ed., Algorithm 7.1, line search Newton-CG: every iterate is a descent direction,
    ``-grad`` when the first has no curvature)."""
    XaT = Xa.T.tocsr()
    g_norm = float(np.linalg.norm(grad))
    forcing = min(0.5, math.sqrt(g_norm)) * g_norm
    p = np.zeros_like(grad)
    r = grad.copy()  # residual H p + grad
    d = -r
    rr = float(r @ r)
    products = 0
    for _ in range(CG_MAX_ITER):
        Hd = np.asarray(XaT @ (curvature * (Xa @ d))).ravel() / n + penalty * d
        products += 1
        dHd = float(d @ Hd)
        if dHd <= 0.0:
            return (p if products > 1 else -grad), products
        step = rr / dHd
        p += step * d
        r += step * Hd
        rr_next = float(r @ r)
        if math.sqrt(rr_next) <= forcing:
            break
        d = -r + (rr_next / rr) * d
        rr = rr_next
    return p, products


def _conjugate_sum(loss, y, alpha, weight):
    """``sum_i (s_i phi_i)*(-alpha_i) = sum_i s_i phi_i*(-alpha_i / s_i)`` (0 for a row of weight 0 at 0)."""
    if weight is None:
        return math.fsum(loss.conjugate(y, alpha))
    live = weight > 0
    values = weight[live] * loss.conjugate(y[live], alpha[live] / weight[live])
    if np.any(alpha[~live] != 0):
        return math.inf
    return math.fsum(values)


def _check_labels(y, n, loss):
    """``y`` as float64 of shape ``(n,)``, finite; -1/+1 for a classification loss."""
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must hold real numbers (-1/+1 labels for a classification loss, targets for "
                         "regression).") from None
    if y.shape != (n,):
        raise ValueError(f"y has shape {y.shape} but X has {n} rows; pass one label or target per row.")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise ValueError(f"y contains a non-finite value ({float(y[bad[0]])!r}) at index {int(bad[0])}; remove "
                         "those rows.")
    if loss.is_classification and not np.all(np.abs(y) == 1.0):
        i = int(np.flatnonzero(np.abs(y) != 1.0)[0])
        raise ValueError(f"The {loss.name} loss needs labels -1 or +1, got {float(y[i])!r} at index {i}; map the "
                         "two classes to -1 and +1 (the estimators do it for you).")
    return y


def fit_unregularized_intercept(X, y_signed_or_targets, *, loss, lam, tol=1e-10, max_iter=100, sample_weight=None):
    """Fit ``min_{w,b} 1/n sum_i s_i phi(y_i, x_i.w + b) + lam/2 ||w||^2`` with ``b`` not penalised, certified.

    The problem is::

        min_{w,b} P(w,b) = 1/n sum_i s_i phi(y_i, x_i.w + b) + lam/2 ||w||^2      (b NOT penalised)

    with the row weights ``s_i`` (1 by default) and the library's loss
    ``phi`` (:mod:`daskdca.losses`: ``phi(y z)`` for labels ``y`` in
    {-1, +1}, ``(z - y)^2 / 2`` for ``"squared"``).  Its dual is::

        D(alpha) = -1/n sum_i (s_i phi_i)*(-alpha_i) - lam/2 ||X^T alpha / (lam n)||^2
                   subject to sum_i alpha_i = 0,

    derived from ``s_i phi_i(z) >= -alpha_i z - (s_i phi_i)*(-alpha_i)`` (Fenchel-Young),
    ``P(w, b) >= 1/n sum_i [-alpha_i (x_i.w + b) - (s_i phi_i)*(-alpha_i)] + lam/2 ||w||^2``,
    whose minimum over ``b`` is ``-inf`` unless ``sum_i alpha_i = 0`` (the
    stationarity of the Lagrangian in ``b``, ``1/n sum_i s_i phi_i'(z_i) = 0``
    at the optimum), and whose minimum over ``w``, at
    ``w = X^T alpha / (lam n)``, gives the last term (the problem of
    ``daskdca.problem`` with the constraint in place of the intercept's
    penalty).

    The solver is primal Newton on ``(w, b)``: the library's Newton kernels
    (``daskdca.kernels.newton``) on X with a last column of ones give the
    loss, gradient and Hessian sums; the system
    ``(H / n + diag(lam, ..., lam, 0)) s = -grad P`` is solved by Cholesky
    for ``d <= 300`` (:data:`MAX_FEATURES`; where the intercept's curvature
    vanishes, as for a squared hinge with every margin past 1, its 0 is
    replaced by ``lam``, still a descent direction), and above by conjugate
    gradients on Hessian-vector products, truncated by Nocedal & Wright's
    forcing term (line search Newton-CG, their Algorithm 7.1; LIBLINEAR's
    primal solver is the trust-region form of the same, Lin, Weng & Keerthi,
    JMLR 2008); the step is the largest of ``1, 1/2, ..., 2^-30`` meeting
    Armijo's condition.  At every iterate the certificate is the dual point
    ``alpha_i = -s_i phi_i'(x_i.w + b)`` (as the Newton route certifies)
    made feasible by :func:`balance_dual`: the side (positive or negative
    entries) with the larger total is scaled toward 0 so that the sum is 0;
    every loss here has a conjugate domain that is an interval containing 0,
    so the point stays feasible, and ``P(w, b) - D(alpha) >= P(w, b) - min P``.
    At the optimum the sum is already 0 and the gap vanishes.  The fit stops
    when ``P - D <= tol * |P|``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
        The data (a ``(d + 1) x (d + 1)`` Hessian is formed for
        ``d <= 300``; above, Hessian-vector products).
    y_signed_or_targets : array-like of shape (n,)
        Labels in {-1, +1} for a classification loss, real targets for
        ``"squared"``.
    loss : {"logistic", "squared", "squared_hinge", "smoothed_hinge"} or Loss
        The loss (a name, scikit-learn's ``"log_loss"`` and ``"squared_error"``
        included, or a :class:`~daskdca.losses.Loss` of those kinds).
    lam : float
        ``lam > 0``, the weight of ``||w||^2 / 2`` (``1 / (C n)`` in
        LIBLINEAR's and scikit-learn's ``C``).
    tol : float, default=1e-10
        Stop when the relative gap ``(P - D) / |P|`` is at most ``tol``
        (``>= 0``).
    max_iter : int, default=100
        The most Newton steps (each with at most :data:`CG_MAX_ITER`
        conjugate-gradient iterations above 300 features).
    sample_weight : array-like of shape (n,), float or None, default=None
        Row weights ``s_i >= 0``, not all 0.

    Returns
    -------
    InterceptFit
        ``coef``, ``intercept``, the feasible dual point ``alpha``,
        ``primal``, ``dual``, ``gap``, ``n_iter``, ``converged`` and the
        ``history`` of the certificates.

    Raises
    ------
    ValueError
        For another loss (use ``fit_intercept=True``, the regularised
        synthetic feature, with the other solvers), ``lam <= 0``,
        non-finite values in X, y or the numbers, labels other than -1/+1
        for a classification loss, or bad row weights.

    References
    ----------
    Nocedal, Wright, "Numerical Optimization", 2nd ed., 2006: Newton's
    direction (eq. (2.15)) and Armijo's condition (eq. (3.4)).
    Shalev-Shwartz, Zhang, "Stochastic dual coordinate ascent methods for
    regularized loss minimization", JMLR 2013: the dual ``D``.

    Examples
    --------
    >>> import numpy as np
    >>> from daskdca.intercept import fit_unregularized_intercept
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 5))
    >>> y = X @ np.arange(5.0) + 3.0
    >>> fit = fit_unregularized_intercept(X, y, loss="squared", lam=1e-6, tol=1e-12)
    >>> bool(fit.converged), round(fit.intercept, 3), bool(abs(fit.alpha.sum()) < 1e-12)
    (True, 3.0, True)
    """
    loss_obj = get_loss(loss)
    if loss_obj.name not in INTERCEPT_LOSSES:
        raise ValueError(f"The unregularised intercept is solved by primal Newton for the losses "
                         f"{list(INTERCEPT_LOSSES)}, got loss={loss_obj.name!r}; use fit_intercept=True (the "
                         "regularised synthetic feature) for it.")
    lam = _check_real("lam", lam, low=0.0, low_inclusive=False, hint="lam = 1/(C n) must be > 0")
    tol = _check_real("tol", tol, low=0.0, low_inclusive=True, hint="use e.g. tol=1e-10")
    max_iter = _check_int("max_iter", max_iter, low=1, hint="use e.g. max_iter=100")
    X = _check_X(X).astype(np.float64)
    n, d = X.shape
    if n == 0:
        raise ValueError("X has no rows; fit at least one.")
    y = _check_labels(y_signed_or_targets, n, loss_obj)
    weight = None if sample_weight is None else check_sample_weight(sample_weight, n)
    kernel_weight = np.zeros(0) if weight is None else weight

    Xa = sp.hstack([X, sp.csr_matrix(np.ones((n, 1)))], format="csr")
    Xa.sum_duplicates()
    Xa.sort_indices()
    indptr, indices, data = Xa.indptr, Xa.indices, Xa.data
    kind, param = int(loss_obj.kind), loss_obj.param
    D = d + 1
    penalty = np.full(D, lam)
    penalty[d] = 0.0  # b is not penalised
    v = np.zeros(D)  # (w, b)
    start = time.perf_counter()
    history = []
    passes = 0
    n_iter = 0
    dense = d <= MAX_FEATURES
    while True:
        if dense:
            sums = np.zeros(2)
            out = np.zeros(D + packed_size(D))
            newton_sums(indptr, indices, data, y, kernel_weight, v, 0, n, kind, param, sums, out)
            loss_sum = sums[0]
        else:
            grad_sum, curvature = np.zeros(D), np.empty(n)
            loss_sum = gradient_curvature_sums(indptr, indices, data, y, kernel_weight, v, 0, n, kind, param, grad_sum,
                                               curvature)
        passes += 1
        w = v[:d]
        primal = loss_sum / n + 0.5 * lam * float(w @ w)
        alpha = balance_dual(dual_point(indptr, indices, data, y, kernel_weight, v, 0, n, kind, param))
        w_alpha = np.asarray(X.T @ alpha, dtype=np.float64).ravel() / (lam * n)
        dual = -_conjugate_sum(loss_obj, y, alpha, weight) / n - 0.5 * lam * float(w_alpha @ w_alpha)
        gap = primal - dual
        history.append((n_iter, float(passes), time.perf_counter() - start, float(primal), float(dual), float(gap)))
        converged = bool(gap <= tol * abs(primal))
        if converged or n_iter >= max_iter:
            break
        if dense:
            grad = out[:D] / n + penalty * v
            M = newton_system(np.ascontiguousarray(out[D:]), D, 1.0 / n, 0.0)
            M[np.arange(d), np.arange(d)] += lam
            direction, ok = cholesky_solve(M, -grad)
            if not ok:  # no curvature along b (e.g. squared hinge with every margin past 1): lam stands in for it
                M[d, d] += lam
                direction, ok = cholesky_solve(M, -grad)
            if not ok:
                direction = -grad
        else:
            grad = grad_sum / n + penalty * v
            direction, products = _truncated_newton(Xa, curvature, n, penalty, grad)
            passes += 2 * products
        slope = float(grad @ direction)
        # -slope / 2 is the decrease a Newton step predicts (about P - min P): below P's rounding, no step can
        # lower P, and Armijo's test would accept steps that change nothing (tol=0 would run to max_iter)
        if not (-slope > 4.0 * np.finfo(np.float64).eps * abs(primal)):
            break
        trial_sums = np.zeros(_LADDER.shape[0])
        ladder_loss_sums(indptr, indices, data, y, kernel_weight, v, direction, 0, n, kind, param, _LADDER, trial_sums)
        passes += 1
        step = None
        for t, loss_sum in zip(_LADDER, trial_sums):
            trial = v + t * direction
            if loss_sum / n + 0.5 * lam * float(trial[:d] @ trial[:d]) <= primal + _ARMIJO_C1 * t * slope:
                step = trial
                break
        if step is None:
            break  # no step decreases P enough: the rounding floor
        v = step
        n_iter += 1
    return InterceptFit(coef=v[:d].copy(), intercept=float(v[d]), alpha=alpha, primal=float(primal),
                        dual=float(dual), gap=float(gap), n_iter=n_iter, converged=converged,
                        history=tuple(history))
