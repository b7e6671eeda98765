"""A fit, a prediction and a store write never modify the caller's matrix.

``scipy.sparse.csr_matrix(X)`` of a CSR matrix shares ``X``'s arrays, so
sorting its indices or summing its duplicates in place rewrote the caller's
matrix, and any other matrix built on the same arrays.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import daskdca
from daskdca.problem import canonical_csr


def _unsorted_with_duplicates():
    """A 6 x 4 CSR matrix whose rows hold unsorted indices and a duplicate, and a second one on the same arrays."""
    rng = np.random.default_rng(0)
    indptr = np.array([0, 2, 4, 5, 7, 8, 10])
    indices = np.array([2, 0, 3, 3, 1, 3, 0, 2, 1, 0])  # row 1 holds column 3 twice
    data = rng.uniform(0.5, 2.0, indices.size)
    X = sp.csr_matrix((data, indices, indptr), shape=(6, 4))
    other = sp.csr_matrix((data * 10, indices, indptr), shape=(6, 4))
    return X, other


def _arrays(X):
    return X.indptr.copy(), X.indices.copy(), X.data.copy()


def _assert_same(X, before):
    for now, then in zip((X.indptr, X.indices, X.data), before):
        np.testing.assert_array_equal(now, then)


Y = np.array([0, 1, 0, 1, 1, 0])


def test_canonical_csr_copies_only_what_it_must():
    X, other = _unsorted_with_duplicates()
    before, other_dense = _arrays(X), other.toarray()
    C = canonical_csr(X)
    assert C.has_canonical_format
    np.testing.assert_array_equal(C.toarray(), X.toarray())
    _assert_same(X, before)
    np.testing.assert_array_equal(other.toarray(), other_dense)
    # a canonical matrix is not copied
    assert np.shares_memory(canonical_csr(C).data, C.data)


@pytest.mark.parametrize("call", ["fit", "predict", "estimator", "write_store"])
def test_the_callers_matrix_is_untouched(call, tmp_path):
    X, other = _unsorted_with_duplicates()
    before, other_dense = _arrays(X), other.toarray()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if call == "fit":
            daskdca.fit(X, Y, loss="hinge", lam=0.1)
        elif call == "predict":
            model = daskdca.fit(X.toarray(), Y, loss="hinge", lam=0.1)
            _assert_same(X, before)
            np.testing.assert_array_equal(model.predict(X), model.predict(X.toarray()))
        elif call == "estimator":
            clf = daskdca.SDCAClassifier(C=1.0).fit(X, Y)
            clf.decision_function(X)
        else:
            daskdca.write_store(str(tmp_path / "s.zarr"), X, Y)
    _assert_same(X, before)
    np.testing.assert_array_equal(other.toarray(), other_dense)
