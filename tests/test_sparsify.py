"""``SDCAClassifier.sparsify`` and ``densify``: ``coef_`` as a SciPy CSR matrix, as scikit-learn's LinearSVC
keeps it, with every prediction path and ``to_sklearn`` taking it as it is."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from daskdca import SDCAClassifier, write_store


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("loss, classes", [("squared_hinge", 2), ("squared_hinge", 3), ("logistic", 2),
                                           ("logistic", 3)])
def test_sparsify_keeps_every_prediction_and_densify_restores_the_array(iris, tmp_path, loss, classes):
    da = pytest.importorskip("dask.array")
    X, y = iris
    keep = y < classes
    X, y = X[keep], y[keep]
    clf = SDCAClassifier(loss=loss, penalty="l1", C=0.05).fit(X, y)
    dense = clf.coef_.copy()
    assert 0 < np.count_nonzero(dense) < dense.size  # an L1 model with zero weights: what sparsify is for
    scores, labels = clf.decision_function(X), clf.predict(X)
    proba = clf.predict_proba(X) if loss == "logistic" else None

    assert clf.sparsify() is clf
    assert type(clf.coef_) is type(LinearSVC().fit(X, y).sparsify().coef_)  # scipy.sparse.csr_matrix
    assert clf.coef_.nnz == np.count_nonzero(dense)
    np.testing.assert_array_equal(clf.coef_.toarray(), dense)
    store = write_store(tmp_path / "x.zarr", X, np.where(y == y[0], 1.0, -1.0), shuffle=False)
    for Xi in (X, sp.csr_matrix(X), da.from_array(X, chunks=40), store):
        got = clf.decision_function(Xi)
        np.testing.assert_allclose(np.asarray(got), scores, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(np.asarray(clf.predict(Xi)), labels)
        if proba is not None:
            np.testing.assert_allclose(np.asarray(clf.predict_proba(Xi)), proba, rtol=1e-12, atol=1e-12)
    assert clf.score(X, y) == np.mean(labels == y)
    sk = clf.to_sklearn()
    # LinearSVC, LogisticRegression or one-vs-rest LogisticRegressions, sparse as their own sparsify() leaves them
    assert all(sp.issparse(est.coef_) for est in getattr(sk, "estimators_", [sk]))
    np.testing.assert_array_equal(sk.predict(X), labels)

    assert clf.densify() is clf
    assert isinstance(clf.coef_, np.ndarray)
    np.testing.assert_array_equal(clf.coef_, dense)
    assert clf.densify().coef_ is clf.coef_  # a dense coef_ stays as it is


def test_sparsify_and_densify_need_a_fitted_model():
    for method in ("sparsify", "densify"):
        with pytest.raises(NotFittedError):
            getattr(SDCAClassifier(), method)()


def test_a_fit_after_sparsify_sets_an_array_again(iris):
    X, y = iris
    clf = SDCAClassifier(warm_start=True).fit(X, y).sparsify()
    assert isinstance(clf.fit(X, y).coef_, np.ndarray)
