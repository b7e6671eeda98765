"""The unregularised intercept (daskdca.intercept and fit_intercept="unregularized"), against Ridge and
LogisticRegression on real data, with its certificate recomputed from the returned dual point."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import load_dataset
from reference_kernels import dual_objective, loss_value
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from daskdca import SDCAClassifier, SDCAClassifierCV, SDCARegressor
import daskdca.intercept as intercept_module
from daskdca.intercept import INTERCEPT_LOSSES, balance_dual, fit_unregularized_intercept

LAM = 1e-4


@pytest.fixture(scope="module")
def a9a():
    X, y = load_dataset("a9a")
    return X, np.where(y > 0, 1.0, -1.0)


def ridge_objective(X, y, w, b, lam, weight=None):
    """``1/n sum_i s_i (x_i.w + b - y_i)^2 / 2 + lam/2 ||w||^2``, the library's squared loss."""
    s = np.ones(X.shape[0]) if weight is None else weight
    r = np.asarray(X @ w).ravel() + b - y
    return 0.5 * float(s @ (r * r)) / X.shape[0] + 0.5 * lam * float(w @ w)


def logistic_objective(X, y, w, b, lam):
    z = y * (np.asarray(X @ w).ravel() + b)
    return float(np.mean(np.logaddexp(0.0, -z))) + 0.5 * lam * float(w @ w)


# --------------------------------------------------------------------------
# against scikit-learn


@pytest.mark.parametrize("weighted", [False, True])
def test_squared_matches_ridge_with_its_unpenalised_intercept(a9a, weighted):
    # a9a's features with its +-1 labels as real targets (a linear probability model); the library's squared loss
    # is (z - y)^2 / 2, so P = (sum_i s_i r_i^2 + lam n ||w||^2) / (2 n): Ridge's objective at alpha = lam n
    X, y = a9a
    n = X.shape[0]
    weight = np.random.default_rng(0).uniform(0.5, 2.0, n) if weighted else None
    fit = fit_unregularized_intercept(X, y, loss="squared", lam=LAM, tol=1e-12, sample_weight=weight)
    ridge = Ridge(alpha=LAM * n, fit_intercept=True, solver="cholesky").fit(X.toarray(), y, sample_weight=weight)
    assert fit.converged
    np.testing.assert_allclose(fit.coef, ridge.coef_, rtol=0, atol=1e-6)
    assert abs(fit.intercept - ridge.intercept_) <= 1e-6
    ours = ridge_objective(X, y, fit.coef, fit.intercept, LAM, weight)
    theirs = ridge_objective(X, y, ridge.coef_, float(ridge.intercept_), LAM, weight)
    assert abs(ours - theirs) <= 1e-9 * theirs
    assert abs(fit.primal - ours) <= 1e-12 * ours


def test_logistic_matches_lbfgs_logistic_regression(a9a):
    # LogisticRegression minimises C sum_i log(1 + exp(-y_i z_i)) + ||w||^2 / 2, its intercept unpenalised: C n P
    # at lam = 1 / (C n)
    X, y = a9a
    n = X.shape[0]
    C = 1.0 / (LAM * n)
    fit = fit_unregularized_intercept(X, y, loss="logistic", lam=LAM, tol=1e-12)
    lr = LogisticRegression(C=C, solver="lbfgs", tol=1e-12, max_iter=10000).fit(X, y)
    ours = logistic_objective(X, y, fit.coef, fit.intercept, LAM)
    theirs = logistic_objective(X, y, lr.coef_.ravel(), float(lr.intercept_[0]), LAM)
    assert fit.converged
    assert abs(ours - theirs) <= 1e-6 * theirs
    assert ours <= theirs + 1e-12 * theirs  # certified to 1e-12: never worse than L-BFGS's stop
    np.testing.assert_allclose(fit.coef, lr.coef_.ravel(), rtol=0, atol=1e-3)
    assert abs(fit.intercept - lr.intercept_[0]) <= 1e-3


# --------------------------------------------------------------------------
# the certificate, recomputed from the returned dual point


@pytest.mark.parametrize("loss", INTERCEPT_LOSSES)
def test_certificate_recomputed_from_alpha(a9a, loss):
    X, y = a9a
    n = X.shape[0]
    tol = 1e-10
    fit = fit_unregularized_intercept(X, y, loss=loss, lam=LAM, tol=tol)
    assert fit.converged and fit.n_iter >= 1
    alpha = fit.alpha
    assert abs(float(np.sum(alpha))) <= 1e-12
    assert math.fsum(alpha) == 0.0
    z = np.asarray(X @ fit.coef).ravel() + fit.intercept
    primal = sum(loss_value(loss, y[i], z[i]) for i in range(n)) / n + 0.5 * LAM * float(fit.coef @ fit.coef)
    dual, _ = dual_objective(X, y, alpha, LAM, loss)  # finite: alpha is in every conjugate's domain
    assert math.isfinite(dual)
    gap = primal - dual
    assert abs(primal - fit.primal) <= 1e-12 * primal
    assert abs(dual - fit.dual) <= 1e-12 * primal
    assert abs(gap - fit.gap) <= 1e-12 * primal
    assert -1e-13 * primal <= gap <= tol * primal


def test_certificate_with_row_weights(a9a):
    X, y = a9a
    n = X.shape[0]
    weight = np.random.default_rng(1).uniform(0.0, 3.0, n)
    weight[:100] = 0.0
    fit = fit_unregularized_intercept(X, y, loss="logistic", lam=LAM, tol=1e-10, sample_weight=weight)
    alpha = fit.alpha
    assert fit.converged and math.fsum(alpha) == 0.0
    assert np.all(alpha[:100] == 0.0)
    b = y * alpha
    assert np.all((b >= 0) & (b <= weight))  # the weighted logistic box
    live = weight > 0
    p = b[live] / weight[live]
    entropy = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0) + \
        np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1.0)), 0.0)
    w_alpha = np.asarray(X.T @ alpha).ravel() / (LAM * n)
    dual = -float(weight[live] @ entropy) / n - 0.5 * LAM * float(w_alpha @ w_alpha)
    z = y * (np.asarray(X @ fit.coef).ravel() + fit.intercept)
    primal = float(weight @ np.logaddexp(0.0, -z)) / n + 0.5 * LAM * float(fit.coef @ fit.coef)
    assert abs(primal - fit.primal) <= 1e-12 * primal
    assert abs((primal - dual) - fit.gap) <= 1e-12 * primal
    assert primal - dual <= 1e-10 * primal


def test_balance_dual_moves_entries_toward_zero_onto_the_constraint():
    rng = np.random.default_rng(3)
    for shift in (-0.3, 0.0, 0.4):
        alpha = rng.standard_normal(10_001) + shift
        out = balance_dual(alpha)
        assert math.fsum(out) == 0.0
        assert np.all(np.sign(out) * np.sign(alpha) >= 0)  # no entry changes sign
        assert np.all(np.abs(out) <= np.abs(alpha))  # every entry moves toward 0
    np.testing.assert_array_equal(balance_dual(np.array([0.5, 1.0, 2.0])), np.zeros(3))  # one side: all to 0


def test_an_exact_intercept_is_recovered():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 7))
    y = X @ np.arange(7.0) + 5.0
    fit = fit_unregularized_intercept(sp.csr_matrix(X), y, loss="squared", lam=1e-10, tol=1e-14)
    assert abs(fit.intercept - 5.0) <= 1e-6
    np.testing.assert_allclose(fit.coef, np.arange(7.0), atol=1e-6)


# --------------------------------------------------------------------------
# the estimators


def test_classifier_unregularized_is_the_function(a9a):
    X, y = a9a
    n = X.shape[0]
    labels = np.where(y > 0, "yes", "no")  # classes_ = ["no", "yes"]: "yes" is +1
    clf = SDCAClassifier(loss="logistic", C=1.0, fit_intercept="unregularized", tol=1e-10, keep_dual=True)
    clf.fit(X, labels)
    fit = fit_unregularized_intercept(X, y, loss="logistic", lam=1.0 / n, tol=1e-10)
    np.testing.assert_allclose(clf.coef_, fit.coef[np.newaxis, :], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(clf.intercept_, [fit.intercept], rtol=1e-12)
    np.testing.assert_allclose(clf.dual_coef_, fit.alpha[np.newaxis, :], rtol=1e-12, atol=1e-15)
    assert clf.converged_.tolist() == [True] and clf.gap_[0] <= 1e-10 * clf.primal_[0]
    assert clf.n_iter_.tolist() == [fit.n_iter] and clf.multi_class_ == "ovr"
    assert clf.route_.solver == "newton" and "unregularized" in clf.route_.reason
    assert clf.history_[0][-1].gap == clf.gap_[0]
    lr = clf.to_sklearn()
    assert isinstance(lr, LogisticRegression) and lr.fit_intercept is True and lr.solver == "lbfgs"
    np.testing.assert_array_equal(lr.predict(X), clf.predict(X))


def test_regressor_unregularized_is_the_function_and_ridge(a9a):
    X, y = a9a
    n = X.shape[0]
    reg = SDCARegressor(C=10.0, fit_intercept="unregularized", tol=1e-12).fit(X, y)
    fit = fit_unregularized_intercept(X, y, loss="squared", lam=1.0 / (10.0 * n), tol=1e-12)
    np.testing.assert_allclose(reg.coef_, fit.coef, rtol=1e-12, atol=1e-14)
    assert reg.intercept_ == pytest.approx(fit.intercept, rel=1e-12)
    assert reg.converged_ and isinstance(reg.primal_, float) and isinstance(reg.n_iter_, int)
    ridge = reg.to_sklearn()  # Ridge(alpha = 1/C, fit_intercept=True): the same problem, refitted here
    assert ridge.fit_intercept is True
    ridge = Ridge(alpha=ridge.alpha, fit_intercept=True, solver="cholesky").fit(X.toarray(), y)
    np.testing.assert_allclose(reg.coef_, ridge.coef_, rtol=0, atol=1e-6)
    assert abs(reg.intercept_ - ridge.intercept_) <= 1e-6


# --------------------------------------------------------------------------
# errors


# more than 300 features: conjugate gradients on Hessian-vector products


@pytest.mark.parametrize("loss", INTERCEPT_LOSSES)
def test_many_features_take_newton_cg_to_the_dense_newton_optimum(a9a, loss, monkeypatch):
    """The same problem through the Cholesky route and, with the limit set below a9a's 123 features, through
    truncated Newton-CG: the same certified optimum, and the certificate recomputed from alpha."""
    X, y = a9a
    n = X.shape[0]
    dense = fit_unregularized_intercept(X, y, loss=loss, lam=LAM, tol=1e-12)
    monkeypatch.setattr(intercept_module, "MAX_FEATURES", 10)
    cg = fit_unregularized_intercept(X, y, loss=loss, lam=LAM, tol=1e-12)
    assert dense.converged and cg.converged and math.fsum(cg.alpha) == 0.0
    assert abs(cg.primal - dense.primal) <= 2e-12 * dense.primal
    np.testing.assert_allclose(cg.coef, dense.coef, rtol=0, atol=1e-4)
    z = np.asarray(X @ cg.coef).ravel() + cg.intercept
    primal = sum(loss_value(loss, y[i], z[i]) for i in range(n)) / n + 0.5 * LAM * float(cg.coef @ cg.coef)
    dual, _ = dual_objective(X, y, cg.alpha, LAM, loss)
    assert abs(primal - cg.primal) <= 1e-12 * primal and abs(dual - cg.dual) <= 1e-12 * primal
    assert -1e-13 * primal <= primal - dual <= 1e-12 * primal


def test_many_features_match_lbfgs_logistic_regression():
    """rcv1_1k, 47,236 features: the objective of LogisticRegression's L-BFGS (its intercept unpenalised),
    certified; the estimator takes the same route."""
    X, labels = load_dataset("rcv1_1k")
    y = np.where(labels == np.unique(labels)[1], 1.0, -1.0)
    n, C = X.shape[0], 1.0
    lam = 1.0 / (C * n)
    fit = fit_unregularized_intercept(X, y, loss="logistic", lam=lam, tol=1e-10)
    lr = LogisticRegression(C=C, solver="lbfgs", tol=1e-12, max_iter=10000).fit(X, y)
    ours = logistic_objective(X, y, fit.coef, fit.intercept, lam)
    theirs = logistic_objective(X, y, lr.coef_.ravel(), float(lr.intercept_[0]), lam)
    assert fit.converged and fit.gap <= 1e-10 * fit.primal and X.shape[1] > 300
    assert abs(ours - theirs) <= 1e-9 * theirs and abs(fit.primal - ours) <= 1e-12 * ours
    assert abs(fit.intercept - lr.intercept_[0]) <= 1e-4
    model = SDCAClassifier(loss="logistic", C=C, fit_intercept="unregularized", tol=1e-10).fit(X, labels)
    np.testing.assert_array_equal(model.coef_.ravel(), fit.coef)


def test_more_than_two_classes_is_refused():
    X = np.random.default_rng(0).standard_normal((60, 4))
    y = np.repeat([0, 1, 2], 20)
    with pytest.raises(ValueError, match=r"Only binary classification.*got 3 classes; use fit_intercept=True"):
        SDCAClassifier(loss="logistic", fit_intercept="unregularized").fit(X, y)


@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive", "huber"])
def test_unsupported_losses_are_refused(loss):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = rng.choice([-1.0, 1.0], 40)
    with pytest.raises(ValueError, match=r"losses \['logistic', 'squared', 'squared_hinge', 'smoothed_hinge'\]"):
        fit_unregularized_intercept(X, y, loss=loss, lam=0.1)
    est = (SDCAClassifier(loss=loss, fit_intercept="unregularized") if loss == "hinge"
           else SDCARegressor(loss=loss, fit_intercept="unregularized"))
    with pytest.raises(ValueError, match="fit_intercept=True"):
        est.fit(X, y)


def test_bad_input_is_refused():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = rng.choice([-1.0, 1.0], 40)
    for lam in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="lam"):
            fit_unregularized_intercept(X, y, loss="logistic", lam=lam)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"non-finite value \(nan\) at row 3, column 1"):
        fit_unregularized_intercept(bad, y, loss="logistic", lam=0.1)
    with pytest.raises(ValueError, match="non-finite"):
        fit_unregularized_intercept(X, np.where(np.arange(40) == 5, np.nan, y), loss="squared", lam=0.1)
    with pytest.raises(ValueError, match="labels -1 or \\+1"):
        fit_unregularized_intercept(X, (y > 0).astype(float), loss="logistic", lam=0.1)
    with pytest.raises(ValueError, match="sample_weight"):
        fit_unregularized_intercept(X, y, loss="logistic", lam=0.1, sample_weight=-np.ones(40))
    with pytest.raises(InvalidParameterError, match="fit_intercept"):
        SDCAClassifier(fit_intercept="unpenalized").fit(X, y)
    with pytest.raises(InvalidParameterError, match="fit_intercept"):
        SDCAClassifierCV(fit_intercept="unregularized").fit(X, y)
    for kwargs in ({"penalty": "l1"}, {"solver": "sdca"}, {"n_partitions": 2}, {"warm_start": True},
                   {"intercept_scaling": 10.0}):
        with pytest.raises(ValueError, match="fit_intercept='unregularized'"):
            SDCAClassifier(loss="logistic", fit_intercept="unregularized", **kwargs).fit(X, y)
    with pytest.raises(ValueError, match="No scikit-learn estimator"):
        SDCAClassifier(loss="squared_hinge", fit_intercept="unregularized").fit(X, y).to_sklearn()


# scikit-learn's checks of the two estimators with the unregularised intercept (the classifier's tags say it
# fits two classes only, so the checks fit binary data)
@parametrize_with_checks([
    SDCAClassifier(loss="logistic", fit_intercept="unregularized"),
    SDCARegressor(fit_intercept="unregularized"),
])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_docstring_examples():
    import doctest

    import daskdca.intercept

    result = doctest.testmod(daskdca.intercept)
    assert result.attempted > 0 and result.failed == 0
