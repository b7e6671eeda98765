"""daskdca.fit's LinearModel has the estimators' prediction surface (one prediction module behind both)."""

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.metrics import accuracy_score, r2_score

import daskdca
from daskdca.store import write_store

from conftest import load_dataset


def test_binary_logistic_probabilities_score_and_store():
    X, y = load_dataset("heart")
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-10)
    scores = model.decision_function(X)
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(proba[:, 1], expit(scores))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert model.score(X, y) == accuracy_score(y, model.predict(X))
    np.testing.assert_array_equal(model.predict(X), np.where(scores > 0, model.classes_[1], model.classes_[0]))


def test_store_input_gives_the_in_memory_predictions(tmp_path):
    X, y = load_dataset("heart")
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-10)
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=100, shuffle=False)
    np.testing.assert_array_equal(np.asarray(model.decision_function(store)), model.decision_function(X))
    np.testing.assert_array_equal(np.asarray(model.predict(store)), model.predict(X))
    assert model.score(store) == model.score(X, y)


def test_multinomial_probabilities_are_the_softmax_of_the_scores():
    X, y = load_dataset("heart")
    labels = np.where(X[:, 0].toarray().ravel() > 0.3, 2.0, y)
    model = daskdca.fit(X, labels, loss="logistic", lam=1e-2, tol=1e-8, solver="multinomial")
    np.testing.assert_allclose(model.predict_proba(X), softmax(model.decision_function(X), axis=1),
                               rtol=1e-12, atol=1e-15)
    assert model.score(X, labels) == accuracy_score(labels, model.predict(X))


def test_regression_score_is_r2_and_hinge_has_no_probabilities():
    X, y = load_dataset("heart")
    ridge = daskdca.fit(X, y, loss="squared", lam=1e-2, tol=1e-10)
    assert ridge.score(X, y) == pytest.approx(r2_score(y, ridge.predict(X)), rel=1e-12)
    svm = daskdca.fit(X, y, loss="hinge", lam=1e-2, tol=1e-8)
    assert not hasattr(svm, "predict_proba")  # as the estimators: only the logistic loss has probabilities
    with pytest.raises(AttributeError, match="predict_proba"):
        svm.predict_proba(X)
