"""Random in-memory partitions: sorted files cost CoCoA+ nothing (issue 10)."""

import numpy as np
import pytest
import scipy.sparse as sp

import daskdca
from daskdca.partitions import even_sizes, random_row_order


def _sorted_by_label(n=20_000, d=20, seed=0):
    """A generated logistic problem with all negatives first, as many real files are."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    order = np.argsort(y, kind="stable")
    return sp.csr_matrix(X[order]), y[order]


# 4 partitions repeats the 2-partition case's check (suite time): it runs with -m slow
@pytest.mark.parametrize("n_partitions", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_cocoa_on_sorted_rows_needs_no_more_rounds_than_on_shuffled_rows(n_partitions):
    X, y = _sorted_by_label()
    shuffle = np.random.default_rng(1).permutation(X.shape[0])
    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=n_partitions, tol=1e-4)
    on_sorted = daskdca.fit(X, y, **kwargs)
    on_shuffled = daskdca.fit(X[shuffle], y[shuffle], **kwargs)
    assert on_sorted.converged_ and on_shuffled.converged_
    assert on_sorted.n_rounds_ <= 1.5 * on_shuffled.n_rounds_
    # results stay in the caller's row order
    np.testing.assert_allclose(on_sorted.coef_, X.T @ on_sorted.dual_coef_ / (1e-4 * X.shape[0]), rtol=1e-9)


def test_random_partitions_are_seeded_and_cover_every_row_once():
    order = random_row_order(1000, 3)
    np.testing.assert_array_equal(np.sort(order), np.arange(1000))
    np.testing.assert_array_equal(order, random_row_order(1000, 3))
    assert not np.array_equal(order, random_row_order(1000, 4))
    assert list(even_sizes(10, 3)) == [4, 3, 3]
