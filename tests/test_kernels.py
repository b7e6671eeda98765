"""Numba kernels against the pure-NumPy references on the same row sequence."""

import numpy as np
import pytest
import scipy.sparse as sp

from daskdca.kernels.sampling import (
    iid_order,
    minibatch_indices,
    minibatch_schedule,
    permutation_order,
)
from daskdca.kernels.sdca import (
    local_sdca,
    minibatch_sdca,
    movable_rows,
    movable_sdca,
    objective_sums,
    objective_sums_movable,
)
from daskdca.losses import get_loss
from daskdca.partitions import UNWEIGHTED

import reference_kernels as ref
from conftest import load_dataset, random_sparse

LOSS_NAMES = ["hinge", "smoothed_hinge", "squared_hinge", "logistic", "squared"]


def _problem(kind, loss_name):
    if kind == "random":
        X = random_sparse(60, 25, 0.2, seed=0, zero_rows=(3, 17))
    else:  # a slice of real data
        X, _ = load_dataset("a9a")
        X = X[:300]
    rng = np.random.default_rng(1)
    n = X.shape[0]
    y = rng.choice([-1.0, 1.0], n) if loss_name != "squared" else rng.normal(size=n)
    return sp.csr_matrix(X), y


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


@pytest.mark.parametrize("data", ["random", "a9a"])
@pytest.mark.parametrize("loss_name", LOSS_NAMES)
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_local_sdca_matches_reference(data, loss_name, sigma):
    X, y = _problem(data, loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n = 0.05 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = permutation_order(4, 0, 0, n, 3 * n, 0)  # three passes
    rng = np.random.default_rng(2)
    w0 = rng.normal(scale=0.1, size=d)
    alpha, u, dw = np.zeros(n), w0.copy(), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, u, dw, order,
               int(loss.kind), loss.param, lam_n, sigma, True)
    ra, ru, rdw = ref.local_sdca(X, y, np.zeros(n), w0, np.zeros(d), order, loss_name, lam_n, sigma)
    assert _rel_err(alpha, ra) <= 1e-12
    assert _rel_err(u, ru) <= 1e-12
    assert _rel_err(dw, rdw) <= 1e-12
    # delta_w is exactly the update implied by the dual change
    np.testing.assert_allclose(dw, X.T @ alpha / lam_n, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_local_sdca_exact_steps_match_the_exact_reference(sigma):
    """``exact_steps=True``: the logistic sweep takes the exact 1-D maximiser, as before the inexact step."""
    X, y = _problem("a9a", "logistic")
    loss = get_loss("logistic")
    n, d = X.shape
    lam_n = 0.05 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = permutation_order(4, 0, 0, n, 3 * n, 0)
    alpha, u, dw = np.zeros(n), np.zeros(d), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, u, dw, order,
               int(loss.kind), loss.param, lam_n, sigma, True, True)
    ra, ru, rdw = ref.local_sdca(X, y, np.zeros(n), np.zeros(d), np.zeros(d), order, "logistic", lam_n, sigma,
                                 exact_steps=True)
    assert _rel_err(alpha, ra) <= 1e-12
    assert _rel_err(u, ru) <= 1e-12
    inexact = np.zeros(n)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, inexact, np.zeros(d), np.zeros(d), order,
               int(loss.kind), loss.param, lam_n, sigma, False)
    assert _rel_err(inexact, ra) > 1e-6  # the default sweep is another rule


@pytest.mark.parametrize("lam", [1e-1, 1e-2])
def test_logistic_sweep_raises_the_dual_every_epoch_and_reaches_the_exact_optimum(lam):
    """Serial SDCA (sigma = 1) with the inexact logistic step: every step is an ascent on D itself, so D never
    falls from one epoch to the next; 60 epochs of either step reach the same D* (the gap closes)."""
    X, y = _problem("a9a", "logistic")
    loss = get_loss("logistic")
    n, d = X.shape
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    finals = []
    for exact in (False, True):
        alpha, w = np.zeros(n), np.zeros(d)
        dual = [ref.dual_objective(X, y, alpha, lam, "logistic")[0]]
        for epoch in range(60):
            local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0),
                       permutation_order(1, epoch, 0, n, n, 0), int(loss.kind), loss.param, lam * n, 1.0, False,
                       exact)
            dual.append(ref.dual_objective(X, y, alpha, lam, "logistic")[0])
        assert np.all(np.diff(dual) >= -1e-13 * np.abs(dual[1:]))
        loss_sum, _ = ref.objective_sums(X, y, alpha, w, "logistic")
        primal = loss_sum / n + 0.5 * lam * w @ w
        assert primal - dual[-1] <= 1e-8 * abs(primal)
        finals.append(dual[-1])
    assert abs(finals[0] - finals[1]) <= 1e-8 * abs(finals[1])


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_minibatch_sdca_matches_reference(loss_name):
    X, y = _problem("random", loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n = 0.1 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    q = 4.0 * sqnorm / lam_n
    offsets = np.array([0, 30, 60], dtype=np.int64)
    batches = minibatch_schedule(9, 0, 25, offsets, 4)
    alpha, w = np.zeros(n), np.zeros(d)
    minibatch_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, q, alpha, w, w, batches, int(loss.kind), loss.param,
                   lam_n)
    ra, rw = ref.minibatch_sdca(X, y, q, np.zeros(n), np.zeros(d), batches, loss_name, lam_n)
    assert _rel_err(alpha, ra) <= 1e-12
    assert _rel_err(w, rw) <= 1e-12


def test_minibatch_sdca_separate_output_is_one_partition_delta():
    # The cluster form: margins from w, the update goes to a zero buffer.
    X, y = _problem("random", "hinge")
    loss = get_loss("hinge")
    n, d = X.shape
    lam_n = 0.1 * n
    q = 2.0 * np.asarray(X.multiply(X).sum(axis=1)).ravel() / lam_n
    w = np.random.default_rng(0).normal(size=d) * 0.1
    batch = minibatch_indices(1, 0, 0, n, 8, 0)[None, :]
    alpha = np.zeros(n)
    delta_w = np.zeros(d)
    minibatch_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, q, alpha, w, delta_w, batch, int(loss.kind), 0.0, lam_n)
    ra, rw = ref.minibatch_sdca(X, y, q, np.zeros(n), w, batch, "hinge", lam_n)
    assert _rel_err(alpha, ra) <= 1e-12
    assert _rel_err(w + delta_w, rw) <= 1e-12


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_objective_sums_matches_reference(loss_name):
    X, y = _problem("a9a", loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    rng = np.random.default_rng(3)
    w = rng.normal(scale=0.3, size=d)
    if loss_name == "squared":
        alpha = rng.normal(size=n)
    elif loss_name == "squared_hinge":
        alpha = y * rng.uniform(0, 3, n)
    else:
        alpha = y * rng.uniform(0, 1, n)
    got = objective_sums(X.indptr, X.indices, X.data, y, UNWEIGHTED, alpha, w, 0, n, int(loss.kind), loss.param)
    want = ref.objective_sums(X, y, alpha, w, loss_name)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    part = objective_sums(X.indptr, X.indices, X.data, y, UNWEIGHTED, alpha, w, 100, 200, int(loss.kind), loss.param)
    np.testing.assert_allclose(part, ref.objective_sums(X[100:200], y[100:200], alpha[100:200], w, loss_name),
                               rtol=1e-12)


@pytest.mark.parametrize("loss_name", ["hinge", "smoothed_hinge", "squared_hinge"])
def test_movable_rows_are_exactly_the_rows_whose_step_is_nonzero(loss_name):
    X, y = _problem("a9a", loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n = 0.01 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    alpha = np.zeros(n)
    w = np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0),
               permutation_order(0, 0, 0, n, 5 * n, 0), int(loss.kind), loss.param, lam_n, 1.0, False)
    rows = movable_rows(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, 50, 250,
                        int(loss.kind), loss.param, lam_n, 1.0)
    margins = np.asarray(X @ w).ravel()
    expected = [i for i in range(50, 250)
                if ref.dual_update(loss_name, y[i], alpha[i], sqnorm[i] / lam_n, margins[i]) != alpha[i]]
    assert 0 < len(expected) < 200  # after 5 passes some rows are pinned at a bound
    np.testing.assert_array_equal(rows, expected)


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_objective_sums_movable_is_the_two_kernels_in_one_pass(loss_name):
    X, y = _problem("a9a", loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n = 0.01 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    alpha, w = np.zeros(n), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0),
               permutation_order(0, 0, 0, n, 3 * n, 0), int(loss.kind), loss.param, lam_n, 1.0, False)
    args = (X.indptr, X.indices, X.data, y, UNWEIGHTED)
    loss_sum, conj_sum, rows, _ = objective_sums_movable(*args, sqnorm, alpha, w, 30, 300, int(loss.kind),
                                                         loss.param, lam_n, 1.0)
    assert (loss_sum, conj_sum) == objective_sums(*args, alpha, w, 30, 300, int(loss.kind), loss.param)
    np.testing.assert_array_equal(rows, movable_rows(*args, sqnorm, alpha, w, 30, 300, int(loss.kind),
                                                     loss.param, lam_n, 1.0))
    if loss.has_active_bounds:
        assert 0 < rows.size < 270  # some rows pinned at a bound, some not


def _shrunk(loss_name, lam=0.01, passes=5):
    """a9a's first 300 rows after ``passes`` serial passes: ``(X, y, sqnorm, alpha, w, lam_n, movable rows, their
    gap terms' sum)``."""
    X, y = _problem("a9a", loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n = lam * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    alpha, w = np.zeros(n), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0),
               permutation_order(0, 0, 0, n, passes * n, 0), int(loss.kind), loss.param, lam_n, 1.0, False)
    _, _, rows, movable_gap = objective_sums_movable(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, 0,
                                                     n, int(loss.kind), loss.param, lam_n, 1.0)
    return X, y, sqnorm, alpha, w, lam_n, rows, movable_gap


@pytest.mark.parametrize("loss_name", ["hinge", "smoothed_hinge", "squared_hinge"])
def test_the_movable_rows_gap_terms_are_the_duality_gap(loss_name):
    """The movable rows' gap terms sum to ``n (P - D)``: the other rows sit at their 1-D optimum, term 0."""
    X, y, _, alpha, w, lam_n, rows, movable_gap = _shrunk(loss_name)
    z = np.asarray(X @ w).ravel()
    terms = np.array([ref.gap_term(loss_name, y[i], alpha[i], z[i]) for i in range(X.shape[0])])
    assert terms.min() >= -1e-12  # Fenchel-Young
    np.testing.assert_allclose(movable_gap, terms[rows].sum(), rtol=1e-12)
    np.testing.assert_allclose(movable_gap, terms.sum(), rtol=1e-9)
    assert 0 < rows.size < X.shape[0] and movable_gap > 0


@pytest.mark.parametrize("loss_name", ["hinge", "smoothed_hinge", "squared_hinge"])
@pytest.mark.parametrize("weighted", [False, True])
def test_movable_sdca_against_the_reference(loss_name, weighted):
    """The passes over the movable rows end early where the reference ends them, with the same steps."""
    X, y, sqnorm, alpha, w, lam_n, rows, movable_gap = _shrunk(loss_name)
    loss = get_loss(loss_name)
    weight = np.random.default_rng(4).uniform(0.5, 2.0, X.shape[0]) if weighted else None
    order = rows[permutation_order(0, 1, 0, rows.size, 40 * rows.size, 0)]
    a, u = alpha.copy(), w.copy()
    steps = movable_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED if weight is None else weight, sqnorm, a, u,
                         order, rows.size, int(loss.kind), loss.param, lam_n, 0.03 * movable_gap)
    ref_alpha, ref_w, ref_steps = ref.movable_sdca(X, y, alpha, w, order, rows.size, loss_name, lam_n,
                                                   0.03 * movable_gap, weight=weight)
    assert steps == ref_steps
    assert steps % rows.size == 0 and steps < order.size  # whole passes, ended early
    np.testing.assert_allclose(a, ref_alpha, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(u, ref_w, rtol=1e-10, atol=1e-12)


def test_movable_sdca_that_never_stops_is_local_sdca_bit_for_bit():
    X, y, sqnorm, alpha, w, lam_n, rows, _ = _shrunk("hinge")
    loss = get_loss("hinge")
    order = rows[permutation_order(0, 1, 0, rows.size, X.shape[0], 0)]
    a1, u1, a2, u2 = alpha.copy(), w.copy(), alpha.copy(), w.copy()
    steps = movable_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, a1, u1, order, rows.size,
                         int(loss.kind), loss.param, lam_n, -1.0)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, a2, u2, np.empty(0), order, int(loss.kind),
               loss.param, lam_n, 1.0, False)
    assert steps == order.size
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(u1, u2)


def test_permutation_order_blocks_are_permutations_and_deterministic():
    order = permutation_order(5, 2, 3, 40, 100, 1000)
    assert order.shape == (100,)
    for start in (0, 40):
        assert sorted(order[start:start + 40]) == list(range(1000, 1040))
    assert set(order[80:]) <= set(range(1000, 1040)) and len(set(order[80:])) == 20
    np.testing.assert_array_equal(order, permutation_order(5, 2, 3, 40, 100, 1000))
    for other in ((6, 2, 3), (5, 3, 3), (5, 2, 4)):  # any component of the key changes the stream
        assert not np.array_equal(order, permutation_order(*other, 40, 100, 1000))


def test_one_permutation_is_the_first_of_several():
    # a draw of exactly one permutation (shuffled in place) takes the same draws as the first of several
    for n, offset in ((1, 0), (2, 7), (40, 1000), (1001, 0)):
        one = permutation_order(5, 2, 3, n, n, offset)
        np.testing.assert_array_equal(one, permutation_order(5, 2, 3, n, 2 * n + 1, offset)[:n])
        assert sorted(one) == list(range(offset, offset + n))


def test_iid_order_is_uniform():
    draws = iid_order(1, 0, 0, 10, 200_000, 0)
    counts = np.bincount(draws, minlength=10)
    # 5-sigma band of a binomial(200000, 0.1)
    assert np.all(np.abs(counts - 20_000) < 5 * np.sqrt(200_000 * 0.1 * 0.9))


def test_minibatch_indices_are_distinct_sorted_and_uniform():
    counts = np.zeros(50)
    for r in range(4000):
        batch = minibatch_indices(3, r, 0, 50, 7, 100)
        assert len(set(batch)) == 7 and np.all(np.diff(batch) > 0)
        assert batch.min() >= 100 and batch.max() < 150
        counts[batch - 100] += 1
    expected = 4000 * 7 / 50
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))


def test_minibatch_schedule_draws_each_partition_from_its_own_stream():
    offsets = np.array([0, 10, 25], dtype=np.int64)
    sched = minibatch_schedule(8, 5, 3, offsets, 4)
    assert sched.shape == (3, 8)
    for t in range(3):
        np.testing.assert_array_equal(sched[t, :4], minibatch_indices(8, 5 + t, 0, 10, 4, 0))
        np.testing.assert_array_equal(sched[t, 4:], minibatch_indices(8, 5 + t, 1, 15, 4, 10))
