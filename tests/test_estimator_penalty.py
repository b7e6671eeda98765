"""The estimators' penalty="elasticnet": the same optimum as scikit-learn's elastic net, with exact zeros,
certified; the other spellings raise with the fix."""

import numpy as np
import pytest
from sklearn.linear_model import ElasticNet, LogisticRegression

import daskdca
from daskdca import SDCAClassifier, SDCARegressor

from conftest import load_dataset


def _sklearn_logistic_elastic_net(X, y, C, l1_ratio):
    """scikit-learn's elastic-net logistic regression (saga) at a tight tol, without an intercept."""
    import sklearn

    major, minor = (int(p) for p in sklearn.__version__.split(".")[:2])
    kwargs = dict(C=C, l1_ratio=l1_ratio, solver="saga", tol=1e-12, max_iter=200_000, fit_intercept=False)
    if (major, minor) < (1, 8):
        kwargs["penalty"] = "elasticnet"
    return LogisticRegression(**kwargs).fit(X.toarray(), y)


def _objective(X, y, w, lam, l1_ratio):
    z = y * (X @ w)
    return np.mean(np.logaddexp(0, -z)) + lam * ((1 - l1_ratio) / 2 * w @ w + l1_ratio * np.abs(w).sum())


def test_classifier_elastic_net_matches_scikit_learn_with_exact_zeros():
    X, y = load_dataset("heart")
    n, C, ratio = X.shape[0], 0.05, 0.7
    lam = 1 / (C * n)
    ours = SDCAClassifier(loss="logistic", C=C, penalty="elasticnet", l1_ratio=ratio, fit_intercept=False,
                          tol=1e-10).fit(X, y)
    ref = _sklearn_logistic_elastic_net(X, y, C, ratio)
    w, w_ref = ours.coef_.ravel(), ref.coef_.ravel()
    assert np.array_equal(w == 0, w_ref == 0) and (w == 0).any()
    assert _objective(X, y, w, lam, ratio) == pytest.approx(_objective(X, y, w_ref, lam, ratio), rel=1e-8)
    assert ours.gap_ <= 1e-10 * abs(ours.primal_)
    assert ours.primal_ == pytest.approx(_objective(X, y, w, lam, ratio), rel=1e-10)
    # the same as daskdca.fit with the solver object
    direct = daskdca.fit(X, y, loss="logistic", lam=lam, solver=daskdca.SDCA(l1_ratio=ratio), tol=1e-10)
    np.testing.assert_array_equal(direct.coef_, w)


def test_minibatch_sdca_solves_the_same_elastic_net():
    """solver="minibatch_sdca" takes the penalty too (proximal mini-batch steps): the serial fit's certified
    optimum and its zeros."""
    X, y = load_dataset("heart")
    params = dict(loss="logistic", C=0.05, penalty="elasticnet", l1_ratio=0.7, fit_intercept=False, tol=1e-8,
                  max_iter=100_000)
    serial = SDCAClassifier(**params).fit(X, y)
    minibatch = SDCAClassifier(solver="minibatch_sdca", **params).fit(X, y)
    assert minibatch.route_.solver == "minibatch_sdca"
    assert minibatch.gap_ <= 1e-8 * abs(minibatch.primal_)
    assert minibatch.primal_ == pytest.approx(serial.primal_, rel=1e-7)
    w, w_serial = minibatch.coef_.ravel(), serial.coef_.ravel()
    assert np.array_equal(np.abs(w) > 1e-3, np.abs(w_serial) > 1e-3) and (w == 0).any()


def test_elastic_net_with_a_client_takes_the_route_of_l2():
    """solver="auto" with a client: the route L2 takes (here the data fits one worker: the serial fit there, its
    bits); solver="cocoa+": CoCoA+ rounds with the same proximal steps, to the same certified optimum and zeros."""
    from distributed import Client, LocalCluster

    X, y = load_dataset("heart")
    params = dict(loss="logistic", C=0.05, penalty="elasticnet", l1_ratio=0.7, fit_intercept=False, tol=1e-10,
                  max_iter=100_000)
    serial = SDCAClassifier(**params).fit(X, y)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        auto = SDCAClassifier(client=client, **params).fit(X, y)
        rounds = SDCAClassifier(client=client, solver="cocoa+", **params).fit(X, y)
    assert auto.route_.name == "one_worker" and auto.route_.solver == "sdca"
    np.testing.assert_array_equal(auto.coef_, serial.coef_)
    assert rounds.route_.solver == "cocoa+" and rounds.route_.name == "rounds"
    assert rounds.primal_ == pytest.approx(serial.primal_, rel=1e-9)
    assert rounds.gap_ <= 1e-10 * abs(rounds.primal_)
    w, w_serial = rounds.coef_.ravel(), serial.coef_.ravel()
    np.testing.assert_allclose(w, w_serial, atol=1e-4)
    assert np.array_equal(np.abs(w) > 1e-4, np.abs(w_serial) > 1e-4) and (w_serial == 0).any()


def test_regressor_elastic_net_matches_scikit_learn():
    X, y = load_dataset("heart")
    X = X.toarray()
    n, C, ratio = X.shape[0], 0.1, 0.5
    lam = 1 / (C * n)
    ours = SDCARegressor(C=C, penalty="elasticnet", l1_ratio=ratio, fit_intercept=False, tol=1e-12).fit(X, y)
    ref = ElasticNet(alpha=lam, l1_ratio=ratio, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(X, y)

    def objective(w):
        r = X @ w - y
        return r @ r / (2 * n) + lam * ((1 - ratio) / 2 * w @ w + ratio * np.abs(w).sum())

    assert objective(ours.coef_) == pytest.approx(objective(ref.coef_), rel=1e-9)
    assert np.array_equal(ours.coef_ == 0, ref.coef_ == 0)


def test_three_classes_fit_one_problem_after_another():
    X, y = load_dataset("heart")
    labels = np.where(X[:, 0].toarray().ravel() > 0.3, 2, y)
    model = SDCAClassifier(loss="logistic", C=0.05, penalty="elasticnet", l1_ratio=0.5, tol=1e-8).fit(X, labels)
    assert model.coef_.shape == (3, X.shape[1]) and (model.coef_ == 0).any()
    assert np.all(np.asarray(model.gap_) <= 1e-8 * np.abs(model.primal_))


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", None), ("elasticnet", 0.5)])
def test_cross_validation_takes_the_penalty_along_its_paths(penalty, l1_ratio):
    """SDCAClassifierCV(penalty=...): every fold's path is the penalised one (the fold's fit at a C equals
    SDCAClassifier's with that penalty, exact zeros included), and the refit is SDCAClassifier's at C_."""
    from sklearn.model_selection import StratifiedKFold

    X, y = load_dataset("heart")
    Cs, folds = [0.01, 0.1, 1.0], StratifiedKFold(3)
    params = dict(loss="logistic", penalty=penalty, l1_ratio=l1_ratio, tol=1e-10, max_iter=100_000)
    cv = daskdca.SDCAClassifierCV(Cs=Cs, cv=folds, **params).fit(X, y)
    refit = SDCAClassifier(C=cv.C_, **params).fit(X, y)
    np.testing.assert_allclose(cv.coef_, refit.coef_, rtol=0, atol=1e-6)
    assert (cv.coef_ == 0).any()
    train, test = next(folds.split(X, y))
    fold = SDCAClassifier(C=Cs[0], **params).fit(X[train], y[train])
    assert cv.scores_[0, 0] == pytest.approx(fold.score(X[test], y[test]), abs=1e-12)
    with pytest.raises(ValueError, match="needs l1_ratio"):
        daskdca.SDCAClassifierCV(Cs=Cs, loss="logistic", penalty="elasticnet").fit(X, y)


@pytest.mark.parametrize("kwargs,match", [
    (dict(penalty="l1", l1_ratio=0.5), "leave l1_ratio=None"),  # penalty="l1" alone: tests/test_l1.py
    (dict(penalty="elasticnet"), "needs l1_ratio"),
    (dict(penalty="l2", l1_ratio=0.5), "only with penalty='elasticnet'"),
    (dict(penalty="elasticnet", l1_ratio=0.5, solver=daskdca.SDCA()), "set l1_ratio on the object"),
    (dict(penalty="elasticnet", l1_ratio=1.0), "l1_ratio"),
])
def test_unsupported_penalties_raise_with_the_fix(kwargs, match):
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=match):
        SDCAClassifier(loss="logistic", **kwargs).fit(X, y)
