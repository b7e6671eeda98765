"""Independent references: LIBLINEAR (through scikit-learn) and L-BFGS optima.

Every function returns ``(w, P(w))`` for the objective
``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` computed here in plain NumPy,
with no daskdca code involved.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC


def primal_objective(X, y, w, lam, loss, gamma=1.0):
    """``P(w)`` in plain NumPy; ``y`` in {-1, +1} (targets for squared loss)."""
    z = np.asarray(X @ w).ravel()
    a = y * z
    if loss == "hinge":
        values = np.maximum(0.0, 1.0 - a)
    elif loss == "squared_hinge":
        values = np.maximum(0.0, 1.0 - a) ** 2
    elif loss == "logistic":
        values = np.logaddexp(0.0, -a)
    elif loss == "smoothed_hinge":
        values = np.where(a >= 1.0, 0.0,
                          np.where(a <= 1.0 - gamma, 1.0 - a - gamma / 2, (1.0 - a) ** 2 / (2 * gamma)))
    elif loss == "squared":
        values = 0.5 * (z - y) ** 2
    else:
        raise ValueError(loss)
    return float(values.mean() + 0.5 * lam * w @ w)


def _int32(X):
    # liblinear through scikit-learn accepts only 32-bit sparse indices.
    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)


def liblinear(X, y, lam, loss, tol=1e-12, max_iter=100_000):
    """LIBLINEAR with ``C = 1/(lam n)`` and no intercept.

    hinge: dual coordinate descent (the only LIBLINEAR solver for it);
    squared hinge and logistic: the primal trust-region Newton solvers,
    which reach tight tolerances.  ``random_state=0``: otherwise LIBLINEAR
    draws its row order from NumPy's global stream, and in one full run
    (a9a head, hinge, C = 0.01) the order drawn stopped 2e-6 above the
    optimum that six fixed seeds reach to 10 digits.
    """
    n = X.shape[0]
    C = 1.0 / (lam * n)
    X = _int32(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if loss == "hinge":
            est = LinearSVC(loss="hinge", dual=True, C=C, tol=tol, max_iter=max_iter, fit_intercept=False,
                            random_state=0)
        elif loss == "squared_hinge":
            est = LinearSVC(loss="squared_hinge", dual=False, C=C, tol=tol, max_iter=max_iter,
                            fit_intercept=False, random_state=0)
        elif loss == "logistic":
            est = LogisticRegression(solver="liblinear", C=C, tol=tol, max_iter=max_iter, fit_intercept=False,
                                     random_state=0)
        else:
            raise ValueError(loss)
        est.fit(X, y)
    w = est.coef_.ravel().astype(np.float64)
    return w, primal_objective(X, y, w, lam, loss)


def lbfgs(X, y, lam, loss, gamma=1.0):
    """L-BFGS-B on the smooth primal (smoothed hinge, logistic, squared hinge, squared)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    n, d = X.shape

    def fun(w):
        z = X @ w
        a = y * z
        if loss == "smoothed_hinge":
            v = np.where(a >= 1.0, 0.0,
                         np.where(a <= 1.0 - gamma, 1.0 - a - gamma / 2, (1.0 - a) ** 2 / (2 * gamma)))
            dv = np.where(a >= 1.0, 0.0, np.where(a <= 1.0 - gamma, -1.0, -(1.0 - a) / gamma)) * y
        elif loss == "logistic":
            v = np.logaddexp(0.0, -a)
            dv = -y * np.exp(-np.logaddexp(0.0, a))
        elif loss == "squared_hinge":
            h = np.maximum(0.0, 1.0 - a)
            v, dv = h**2, -2.0 * y * h
        elif loss == "squared":
            v, dv = 0.5 * (z - y) ** 2, z - y
        else:
            raise ValueError(loss)
        return v.mean() + 0.5 * lam * w @ w, X.T @ dv / n + lam * w

    res = scipy.optimize.minimize(fun, np.zeros(d), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 100_000, "ftol": 1e-15, "gtol": 1e-11, "maxcor": 30})
    return res.x, primal_objective(X, y, res.x, lam, loss, gamma)


def ridge_closed_form(X, y, lam):
    """``w = (X^T X / n + lam I)^-1 X^T y / n`` for the squared loss."""
    X = sp.csr_matrix(X, dtype=np.float64)
    n, d = X.shape
    A = (X.T @ X).toarray() / n + lam * np.eye(d)
    w = np.linalg.solve(A, X.T @ y / n)
    return w, primal_objective(X, y, w, lam, "squared")
