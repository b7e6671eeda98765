"""Dual-free SDCA (He & Takáč 2015 [HT15]): kernels against NumPy, the step's theory, real data, bad input."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.driver import InProcess, run_rounds
from daskdca.kernels import dual_free as kern
from daskdca.losses import get_loss
from daskdca.methods import REGISTRY, AdaptiveDualFreeSDCA, DualFreeSDCA
from daskdca.methods.base import DataInfo
from daskdca.partitions import StorePartition
from daskdca.problem import max_column_nnz
from daskdca.store import write_store

import reference_dual_free as ref
from conftest import load_dataset, random_sparse
from references import liblinear, primal_objective
import reference_kernels as refk

SMOOTH = ["logistic", "squared", "squared_hinge", "smoothed_hinge"]


def _problem(loss, n=40, d=12, seed=0):
    X = random_sparse(n, d, 0.4, seed)
    X = sp.csr_matrix(sp.diags(np.exp(0.8 * np.random.default_rng(seed + 1).standard_normal(n))) @ X)
    rng = np.random.default_rng(seed + 2)
    y = rng.standard_normal(n) if loss == "squared" else np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def _rows(X):
    X = sp.csr_matrix(X)
    return (X.indptr.astype(np.int64), X.indices, X.data, np.asarray(X.multiply(X).sum(axis=1)).ravel())


def _state(X, y, lam_n, seed):
    """A random pseudo-dual point and its ``w = X^T alpha / (lam n)`` (the invariant, eq. (2))."""
    alpha = np.random.default_rng(seed).standard_normal(X.shape[0]) * 0.3
    return alpha, np.asarray(X.T @ alpha).ravel() / lam_n


# --- kernels against the NumPy reference, on the same row sequence ----------------------------------

@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_fixed_step_kernel_matches_reference(loss, sigma):
    X, y = _problem(loss)
    lam_n = 0.1 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 1)
    u, dw = w.copy(), np.zeros_like(w)
    step = lam_n / (lam_n + sigma * ref.SMOOTHNESS[loss] * sqnorm)
    order = kern.weighted_order(3, 5, 0, lam_n + sqnorm, 200, 0)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    kern.dual_free_steps(indptr, indices, data, y, alpha, u, dw, order, step, int(get_loss(loss).kind), 1.0,
                         sigma, 1.0 / lam_n)
    ref.fixed_steps(X, y, a_ref, u_ref, dw_ref, order, step, loss, lam_n, sigma)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(u, u_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-12, atol=1e-12)
    # T1: the invariant w + delta_w = X^T alpha / (lam n) holds after the steps (sigma' = 1: u = w + delta_w)
    np.testing.assert_allclose(w + dw, X.T @ alpha / lam_n, rtol=0, atol=1e-10 * np.abs(w + dw).max())


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("share, k2_rest, d_rest, sigma", [(1.0, 0.0, 0.0, 1.0), (0.4, 3.0, 50.0, 2.0)])
def test_adaptive_kernel_matches_reference(loss, share, k2_rest, d_rest, sigma):
    X, y = _problem(loss, seed=4)
    lam_n = 0.05 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 2)
    u, dw = w.copy(), np.zeros_like(w)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    n_steps = 60
    order, thetas = np.empty(n_steps, dtype=np.int64), np.empty(n_steps)
    curv, base = sigma * lam_n, lam_n ** 2 / ref.SMOOTHNESS[loss]
    taken = kern.adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, dw, 0, X.shape[0], n_steps, 9, 2, 1,
                                share, k2_rest, d_rest, curv, base, int(get_loss(loss).kind), 1.0, sigma,
                                1.0 / lam_n, order, thetas)
    assert taken == n_steps
    th_ref = ref.adaptive_steps(X, y, a_ref, u_ref, dw_ref, order, loss, lam_n, sigma, share, k2_rest, d_rest)
    np.testing.assert_allclose(thetas, th_ref, rtol=1e-12)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(u, u_ref, rtol=1e-12, atol=1e-12)


def test_residue_sums_match_reference():
    loss = "logistic"
    X, y = _problem(loss)
    lam_n = 0.1 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 5)
    g = np.zeros_like(w)
    ls, cs, S, k2 = kern.residue_sums(indptr, indices, data, y, sqnorm, alpha, w, 0, X.shape[0], 3, 0.0, lam_n,
                                      lam_n ** 2 * 4, 1.0 / lam_n, g)
    kappa = ref.residues(X, y, alpha, w, loss)
    a_hat = -ref.derivative(loss, y, X @ w)
    assert S == pytest.approx(np.sum(ref.c_weights(X, lam_n, loss) * np.abs(kappa)), rel=1e-13)
    assert k2 == pytest.approx(np.sum(kappa ** 2), rel=1e-13)
    assert ls == pytest.approx(primal_objective(X, y, w, 0.0, loss) * X.shape[0], rel=1e-13)
    assert cs == pytest.approx(sum(refk.conjugate(loss, y[i], a_hat[i]) for i in range(len(y))), rel=1e-12)
    np.testing.assert_allclose(g, X.T @ a_hat / lam_n, rtol=1e-12, atol=1e-15)


def _mixed_problem(n=300, d=200, seed=21):
    """Sparse rows (about 2 features each, some empty) plus one column on a third of the rows and a
    binary copy: steps on most rows touch a few residues (the tree-repair path), steps on the rows of
    the wide column touch many (the rebuild path), and the binary copy takes the unit-value updates."""
    rng = np.random.default_rng(seed)
    X = random_sparse(n, d, 0.01, seed, zero_rows=(3, 7)).tolil()
    for i in np.flatnonzero(rng.random(n) < 0.33):
        X[i, 0] = rng.standard_normal()
    X = sp.csr_matrix(X)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    B = X.copy()
    B.data[:] = 1.0
    return X, B, y


# general values with -m slow (11.6 s in a fresh clone; test_adaptive_kernel_matches_reference covers them too)
@pytest.mark.parametrize("binary", [pytest.param(False, marks=pytest.mark.slow), True])
def test_adaptive_kernel_sparse_and_dense_refresh_match_reference(binary):
    """The kept residues (margins moved along the columns of the stepped row, tree repairs or a rebuild)
    give the from-scratch Algorithm 1 of the reference on the same draws; an empty row steps too."""
    X, B, y = _mixed_problem()
    X = B if binary else X
    loss = "logistic"
    lam_n = 0.02 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 6)
    alpha[3] = 0.9  # an empty row with a large residue: it is drawn
    u, dw = w.copy(), np.zeros_like(w)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    n_steps = 150
    order, thetas = np.empty(n_steps, dtype=np.int64), np.empty(n_steps)
    kern.adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, dw, 0, X.shape[0], n_steps, 4, 0, 2, 1.0, 0.0,
                        0.0, lam_n, lam_n ** 2 / ref.SMOOTHNESS[loss], int(get_loss(loss).kind), 1.0, 1.0,
                        1.0 / lam_n, order, thetas)
    wide = set(np.flatnonzero(X[:, 0].toarray().ravel()))
    assert 3 in order and any(int(i) in wide for i in order) and any(int(i) not in wide for i in order)
    th_ref = ref.adaptive_steps(X, y, a_ref, u_ref, dw_ref, order, loss, lam_n)
    np.testing.assert_allclose(thetas, th_ref, rtol=1e-12)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(u, u_ref, rtol=1e-12, atol=1e-12)
    # Algorithm 4 on the same data: touched rows only (no trees), then Theta_b and the Jacobi steps
    alpha, w = _state(X, y, lam_n, 7)
    u, dw = w.copy(), np.zeros_like(w)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    b, n_iter = 3, 40
    batches, thetas = np.empty((n_iter, b), dtype=np.int64), np.empty(n_iter)
    kern.minibatch_adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, dw, 0, X.shape[0], n_iter, b, 4, 1, 2,
                                  1.0, 0.0, 0.0, b * lam_n, lam_n ** 2 / ref.SMOOTHNESS[loss],
                                  int(get_loss(loss).kind), 1.0, 1.0, 1.0 / lam_n, batches, thetas)
    th_ref = ref.minibatch_steps(X, y, a_ref, u_ref, dw_ref, batches, b, loss, lam_n, b * lam_n)
    np.testing.assert_allclose(thetas, th_ref, rtol=1e-10)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-10, atol=1e-12)


def test_residue_is_the_loss_derivative_bit_for_bit():
    """The kernels' branch-free logistic residue has the bits of ``alpha + loss_derivative``."""
    from daskdca.losses import loss_derivative

    rng = np.random.default_rng(0)
    zs = np.concatenate([[0.0, -0.0, 1e-300, -1e-300, 36.0, -36.0, 710.0, -710.0, 800.0, -800.0],
                         rng.standard_normal(300) * 5])
    for name in SMOOTH + ["hinge"]:
        kind, param = int(get_loss(name).kind), 0.7
        for yv in (-1.0, 1.0, 0.3):
            for z in zs:
                a = float(rng.standard_normal())
                got = kern.residue(kind, param, yv, z, a)
                assert np.float64(got).tobytes() == np.float64(a + loss_derivative(kind, param, yv, z)).tobytes()


def test_argsort_desc_is_the_stable_merge_sort():
    """The radix sort of Algorithm 3 and the water-filling gives ``np.argsort(-v, kind="mergesort")``."""
    rng = np.random.default_rng(1)
    for n in (5, 700, 5000):
        v = rng.exponential(1.0, n) * (rng.random(n) < 0.8)  # zeros
        v[: n // 4] = v[n // 4: 2 * (n // 4)]  # ties
        v[rng.integers(0, n, 3)] = -0.0
        v[rng.integers(0, n, 3)] = 1.0
        v[0] = 1e-310  # subnormal
        np.testing.assert_array_equal(kern.argsort_desc(v), np.argsort(-v, kind="mergesort"))
        v[1] = -0.5  # negative: the merge sort itself
        np.testing.assert_array_equal(kern.argsort_desc(v), np.argsort(-v, kind="mergesort"))


def test_sumtree_draws_the_cdf_interval_and_skips_zero_weights():
    weights = np.array([0.0, 2.0, 0.0, 1.0, 3.0, 0.0, 0.5])
    tree = kern.sumtree_build(weights)
    assert tree[1] == pytest.approx(weights.sum())
    cdf = np.cumsum(weights) / weights.sum()
    for u in np.linspace(0, 1, 1001, endpoint=False):
        i = kern.sumtree_draw(tree, u)
        assert weights[i] > 0
        assert cdf[i] - weights[i] / weights.sum() - 1e-12 <= u < cdf[i] + 1e-12
    kern.sumtree_update(tree, 4, 0.0)
    assert tree[1] == pytest.approx(3.5)
    assert all(kern.sumtree_draw(tree, u) != 4 for u in np.linspace(0, 1, 500, endpoint=False))
    counts = np.bincount(kern.weighted_order(1, 0, 0, weights, 60_000, 0), minlength=weights.size)
    np.testing.assert_allclose(counts / 60_000, weights / weights.sum(), atol=0.01)


# --- the theory of the step -------------------------------------------------------------------------

@pytest.mark.parametrize("loss", SMOOTH)
def test_gradient_identity_and_unbiased_step(loss):
    """T2: ``(1/n) X^T kappa = grad P(w)`` under the invariant; ``E_p[kappa_i x_i / (n p_i)] = grad P`` exactly."""
    X, y = _problem(loss)
    n = X.shape[0]
    lam = 0.05
    alpha, w = _state(X, y, lam * n, 3)
    kappa = ref.residues(X, y, alpha, w, loss)
    grad = X.T @ ref.derivative(loss, y, X @ w) / n + lam * w
    np.testing.assert_allclose(X.T @ kappa / n, grad, rtol=1e-10, atol=1e-12)
    p = ref.p_star(kappa, X, lam * n, loss)
    A = X.toarray()
    expected = sum(p[i] * kappa[i] * A[i] / (n * p[i]) for i in range(n) if p[i] > 0)
    np.testing.assert_allclose(expected, grad, rtol=1e-10, atol=1e-12)
    # the step itself: E[w+] = w - theta/lam grad P, by enumeration with the kernel's step formula
    th = ref.theta(kappa, p, X, lam * n, loss)
    mean_w = sum(p[i] * ref.step_to(X, y, alpha, w, i, th / p[i], loss, lam * n)[1] for i in range(n))
    np.testing.assert_allclose(mean_w, w - th / lam * grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", SMOOTH)
def test_lemma1_p_star_maximises_theta_and_cor1_lower_bound(loss):
    """T3, T4: ``Theta(kappa, p*)`` is the closed form, beats random ``p``, is at least ``lam/(lam n + L_bar)``."""
    X, y = _problem(loss)
    n, lam_n = X.shape[0], 0.05 * X.shape[0]
    rng = np.random.default_rng(0)
    c = ref.c_weights(X, lam_n, loss)
    for _ in range(30):
        kappa = rng.standard_normal(n) * rng.exponential(1.0, n)
        best = ref.theta(kappa, ref.p_star(kappa, X, lam_n, loss), X, lam_n, loss)
        closed = lam_n ** 2 / ref.SMOOTHNESS[loss] * np.sum(kappa ** 2) / np.sum(c * np.abs(kappa)) ** 2
        assert best == pytest.approx(closed, rel=1e-12)
        for _ in range(10):
            assert ref.theta(kappa, rng.dirichlet(np.ones(n)), X, lam_n, loss) <= best * (1 + 1e-12)
        assert best >= ref.theta_lower(X, lam_n, loss) * (1 - 1e-12)


def _contraction_ratio(X, y, loss, lam, seed, probabilities):
    """Worst ``E[G+] / ((1 - theta) G)`` over random states, ``E`` by enumerating every row (T5, T11)."""
    n = X.shape[0]
    lam_n = lam * n
    w_star, a_star = ref.solve(X, y, lam, loss)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(20):
        alpha = a_star + rng.standard_normal(n) * rng.exponential(0.5)
        w = X.T @ alpha / lam_n
        kappa = ref.residues(X, y, alpha, w, loss)
        p, th = probabilities(kappa)
        G = ref.lyapunov(alpha, w, a_star, w_star, lam_n, loss)
        EG = sum(p[i] * ref.lyapunov(*ref.step_to(X, y, alpha, w, i, th / p[i], loss, lam_n), a_star, w_star,
                                     lam_n, loss) for i in range(n) if p[i] > 0)
        worst = max(worst, EG / ((1 - th) * G))
    return worst


@pytest.mark.parametrize("loss", SMOOTH)
def test_one_step_contraction_adaptive_theta(loss):
    """T5: with ``p*`` and ``theta = Theta(kappa, p*)``, ``E[G+] <= (1 - theta) G`` exactly (Thm 1, case 1)."""
    X, y = _problem(loss, n=12, d=5, seed=7)
    X = sp.csr_matrix(X.toarray() * 0.5)  # rows with ||x|| < 1 too (where the printed case-2 constants fail)
    lam = 0.05

    def adaptive(kappa):
        p = ref.p_star(kappa, X, lam * X.shape[0], loss)
        return p, ref.theta(kappa, p, X, lam * X.shape[0], loss)

    assert _contraction_ratio(X, y, loss, lam, 1, adaptive) <= 1.0 + 1e-12


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("sampling", ["uniform", "importance"])
def test_one_step_contraction_fixed_probabilities(loss, sampling):
    """T11: uniform ``theta = lam/(lam n + L_max)`` and importance ``theta = lam/(lam n + L_bar)`` contract."""
    X, y = _problem(loss, n=12, d=5, seed=8)
    n, lam = X.shape[0], 0.05
    L = ref.SMOOTHNESS[loss] * (X.toarray() ** 2).sum(axis=1)

    def fixed(kappa):
        if sampling == "uniform":
            return np.full(n, 1.0 / n), lam / (lam * n + L.max())
        return (lam * n + L) / np.sum(lam * n + L), lam / (lam * n + L.mean())

    assert _contraction_ratio(X, y, loss, lam, 2, fixed) <= 1.0 + 1e-12


def test_squared_loss_importance_step_is_the_sdca_step():
    """T8: ``theta / p_i = lam n / (lam n + ||x_i||^2)`` gives the exact SDCA coordinate maximiser."""
    X, y = _problem("squared")
    lam_n = 0.1 * X.shape[0]
    alpha, w = _state(X, y, lam_n, 6)
    sq = (X.toarray() ** 2).sum(axis=1)
    for i in range(X.shape[0]):
        a2, _ = ref.step_to(X, y, alpha, w, i, lam_n / (lam_n + sq[i]), "squared", lam_n)
        delta = refk.dual_update("squared", y[i], alpha[i], sq[i] / lam_n, X[i] @ w) - alpha[i]
        assert a2[i] - alpha[i] == pytest.approx(delta, rel=1e-12, abs=1e-15)


# --- Algorithm 3 and mini-batch adfSDCA (Algorithm 4) -------------------------------------------

def test_algorithm3_toy_example_exact():
    """[HT15] Fig. 1: q = (0.8, 0.6, 0.4, 0.2), b = 2: t = (0.2, 0.4, 0.4), P{1,2} = 7/15, P{1,3} = 4/15, rest 1/15."""
    perm, t, i_st, j_st, m = kern.alg3_stages(np.array([0.8, 0.6, 0.4, 0.2]), 2, 1e-12)
    assert m == 3
    np.testing.assert_allclose(t, [0.2, 0.4, 0.4], atol=1e-15)
    assert list(i_st) == [2, 2, 1] and list(j_st) == [2, 3, 4]
    probs = ref.subset_probabilities(perm, t, i_st, j_st, 2)
    expected = {(0, 1): 7 / 15, (0, 2): 4 / 15, (0, 3): 1 / 15, (1, 2): 1 / 15, (1, 3): 1 / 15, (2, 3): 1 / 15}
    assert set(probs) == set(expected)
    for key, value in expected.items():
        assert probs[key] == pytest.approx(value, abs=1e-14)
    # the sampler's draws follow them (Monte Carlo, 6 sigma)
    state = np.array([7], dtype=np.uint64)
    out = np.empty(2, dtype=np.int64)
    counts = {}
    draws = 30_000
    for _ in range(draws):
        kern.alg3_sample(perm, t, i_st, j_st, 2, state, out)
        key = tuple(sorted(int(v) for v in out))
        counts[key] = counts.get(key, 0) + 1
    for key, value in expected.items():
        assert abs(counts.get(key, 0) / draws - value) <= 6 * np.sqrt(value * (1 - value) / draws)


def test_algorithm3_inclusion_probabilities_by_enumeration():
    """T6 on random q (n <= 7, every b, some q_i = 0 or 1): |S| = b distinct, marginals q, sum t = 1, m <= n."""
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(2, 8))
        b = int(rng.integers(1, n + 1))
        w = rng.exponential(1.0, n) * (rng.random(n) < 0.85)
        if trial % 7 == 0:
            w[:2] = w[:2] * 50  # forces caps q_i = 1
        if np.count_nonzero(w) < b:
            continue
        q, b_eff = kern.water_fill(w, b)
        assert b_eff == b and q.sum() == pytest.approx(b) and np.all(q <= 1) and np.all(q >= 0)
        np.testing.assert_allclose(q, ref.water_fill(w, b), atol=1e-12)
        perm, t, i_st, j_st, m = kern.alg3_stages(q, b, 1e-12)
        assert m <= n and t.sum() == pytest.approx(1.0, abs=1e-12)
        probs = ref.subset_probabilities(perm, t, i_st, j_st, b)
        marg = np.zeros(n)
        for subset, pr in probs.items():
            assert len(set(subset)) == b
            marg[list(subset)] += pr
        np.testing.assert_allclose(marg, q, atol=1e-9)


def test_water_fill_shrinks_the_batch_to_the_positive_weights():
    q, b = kern.water_fill(np.array([0.0, 2.0, 0.0, 1.0]), 3)
    assert b == 2 and list(q) == [0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("share, k2_rest, d_rest, sigma", [(1.0, 0.0, 0.0, 1.0), (0.5, 2.0, 30.0, 2.0)])
def test_minibatch_kernel_matches_reference(loss, share, k2_rest, d_rest, sigma):
    X, y = _problem(loss, seed=11)
    lam_n = 0.05 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 3)
    u, dw = w.copy(), np.zeros_like(w)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    b, n_iter = 4, 15
    curv = min(b, max_column_nnz(X)) * sigma * lam_n
    batches, thetas = np.empty((n_iter, b), dtype=np.int64), np.empty(n_iter)
    taken = kern.minibatch_adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, dw, 0, X.shape[0], n_iter, b,
                                          5, 1, 0, share, k2_rest, d_rest, curv, lam_n ** 2 / ref.SMOOTHNESS[loss],
                                          int(get_loss(loss).kind), 1.0, sigma, 1.0 / lam_n, batches, thetas)
    assert taken == n_iter * b and all(len(set(row)) == b for row in batches)
    th_ref = ref.minibatch_steps(X, y, a_ref, u_ref, dw_ref, batches, b, loss, lam_n, curv, share, k2_rest, d_rest,
                                 sigma)
    np.testing.assert_allclose(thetas, th_ref, rtol=1e-10)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_minibatch_step_unbiased_and_contracts_by_enumeration(loss):
    """T2 and T5 for Algorithm 4: ``E_S[sum_{i in S} kappa_i x_i / (n q_i)] = grad P`` and
    ``E[G+] <= (1 - Theta_b) G`` over every subset of Algorithm 3 (Thm 4, ESO (10))."""
    X, y = _problem(loss, n=8, d=4, seed=12)
    n, lam, b = X.shape[0], 0.05, 3
    lam_n = lam * n
    A = X.toarray()
    w_star, a_star = ref.solve(X, y, lam, loss)
    curv = min(b, max_column_nnz(X)) * lam_n
    base = lam_n ** 2 / ref.SMOOTHNESS[loss]
    csq = curv * (A ** 2).sum(axis=1) + base
    rng = np.random.default_rng(1)
    for _ in range(10):
        alpha = a_star + rng.standard_normal(n) * 0.5
        w = A.T @ alpha / lam_n
        kappa = ref.residues(X, y, alpha, w, loss)
        q = ref.water_fill(np.sqrt(csq) * np.abs(kappa), b)
        th = base * np.sum(kappa ** 2) / np.sum(csq * kappa ** 2 / q)
        perm, t, i_st, j_st, _ = kern.alg3_stages(q, b, 1e-12)
        probs = ref.subset_probabilities(perm, t, i_st, j_st, b)
        grad = A.T @ ref.derivative(loss, y, A @ w) / n + lam * w
        est = sum(pr * sum(kappa[i] * A[i] / (n * q[i]) for i in S) for S, pr in probs.items())
        np.testing.assert_allclose(est, grad, rtol=1e-9, atol=1e-12)
        G = ref.lyapunov(alpha, w, a_star, w_star, lam_n, loss)
        EG = 0.0
        for S, pr in probs.items():
            a2, w2 = alpha.copy(), w.copy()
            for i in S:
                da = -th * kappa[i] / q[i]
                a2[i] += da
                w2 += da / lam_n * A[i]
            EG += pr * ref.lyapunov(a2, w2, a_star, w_star, lam_n, loss)
        assert EG <= (1 - th) * G * (1 + 1e-12)


def test_minibatch_fit_converges_with_a_certificate():
    X, y = load_dataset("heart")
    lam = 1e-2
    for K in (1, 2):
        m = _fit(X, y, AdaptiveDualFreeSDCA(batch_size=4), "logistic", lam, tol=1e-7, max_rounds=400,
                 n_partitions=K)
        assert m.converged_
        primal, dual, _ = _certify(m, X, y, lam, "logistic")
        assert 0 <= primal - dual <= 1e-7 * primal
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="adfsdca", batch_size=4, tol=1e-6)
    assert m.converged_ and m.solver.batch_size == 4


# --- adfSDCA+ (Algorithm 2) ----------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("floor, shrink, share, d_rest", [(0.5, 10.0, 1.0, 0.0), (0.0, 20.0, 1.0, 0.0),
                                                          (0.3, 1.0, 0.6, 40.0)])
def test_plus_kernel_matches_reference(loss, floor, shrink, share, d_rest):
    """The incremental ``A`` and the sum-tree give the from-scratch Theta and the same steps."""
    X, y = _problem(loss, seed=13)
    lam_n = 0.05 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 4)
    u, dw = w.copy(), np.zeros_like(w)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    curv, base = lam_n, lam_n ** 2 / ref.SMOOTHNESS[loss]
    kappa = ref.residues(X, y, alpha, w, loss)
    csq = curv * sqnorm + base
    s_all, c_all = np.sum(np.sqrt(csq) * np.abs(kappa)) / share, np.sum(csq) / share
    n_steps = 80
    order, thetas = np.empty(n_steps, dtype=np.int64), np.empty(n_steps)
    kern.plus_steps(indptr, indices, data, y, sqnorm, alpha, u, dw, 0, X.shape[0], n_steps, 3, 0, 0, share, 1.5,
                    d_rest, s_all, c_all, floor, shrink, curv, base, int(get_loss(loss).kind), 1.0, 1.0, 1.0 / lam_n,
                    order, thetas)
    th_ref = ref.plus_steps(X, y, a_ref, u_ref, dw_ref, order, loss, lam_n, curv, s_all, c_all, floor, shrink,
                            share, 1.5, d_rest)
    np.testing.assert_allclose(thetas, th_ref, rtol=1e-10)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-10, atol=1e-12)


def test_plus_converges_with_the_floor_on_one_and_two_partitions():
    """With the importance floor every shrink converges (docs/references.md, note N6; s = 1 without it diverges there and here)."""
    X, y = load_dataset("heart")
    lam = 1e-2
    for shrink in (1.0, 10.0, 20.0):
        for K in (1, 2):
            m = _fit(X, y, REGISTRY["adfsdca+"](shrink=shrink), "logistic", lam, tol=1e-7, max_rounds=400,
                     n_partitions=K)
            assert m.converged_
            primal, dual, _ = _certify(m, X, y, lam, "logistic")
            assert 0 <= primal - dual <= 1e-7 * primal


# --- fits: real data against LIBLINEAR, the certificate from the returned dual point -----------------

def _fit(X, y, solver, loss, lam, **kwargs):
    return daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, **kwargs)


def _certify(m, X, y, lam, loss):
    """``P(coef_) - D(dual_coef_)`` recomputed here, ``w(alpha)`` rebuilt from the dual point alone."""
    ys = np.where(y == m.classes_[1], 1.0, -1.0) if loss != "squared" else y
    dual, _ = refk.dual_objective(X, ys, m.dual_coef_, lam, loss)
    primal = primal_objective(X, ys, m.coef_, lam, loss)
    return primal, dual, ys


_SOLVERS = {"uniform": DualFreeSDCA(), "importance": DualFreeSDCA(sampling="importance"),
            "adaptive": AdaptiveDualFreeSDCA(), "adaptive-b8": AdaptiveDualFreeSDCA(batch_size=8),
            "adaptive+": REGISTRY["adfsdca+"]()}


@pytest.mark.parametrize("name, rows, solver", [
    pytest.param(name, 2000, solver, id=f"{key}-{name}") for key, solver in _SOLVERS.items()
    for name in (("w8a",) if key == "adaptive-b8" else ("a9a", "w8a"))])
def test_real_data_matches_liblinear_with_a_certificate(name, rows, solver):
    X, y = load_dataset(name)
    X, y = X[:rows], y[:rows]
    lam = 1e-3
    m = _fit(X, y, solver, "logistic", lam, tol=1e-7, max_rounds=400)
    assert m.converged_
    primal, dual, ys = _certify(m, X, y, lam, "logistic")
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-10)
    assert 0 <= primal - dual <= 1e-7 * primal
    _, p_ll = liblinear(X, ys, lam, "logistic")
    assert primal <= p_ll * (1 + 1e-7) and primal >= dual
    assert p_ll >= dual  # LIBLINEAR's objective is above our certified lower bound


@pytest.mark.parametrize("solver, partitions", [("dfsdca", (1, 2)), ("adfsdca", (1,))])
def test_squared_loss_matches_ridge(solver, partitions):
    """Against the closed-form ridge solution.  adfsdca is left out on 2 partitions only for time: with
    sigma' = 2 a9a needs ~1600 rounds (CoCoA+: 1848 rounds, the same sigma' = K rule) at O(n nnz) each."""
    X, y = load_dataset("a9a")
    X, y = X[:1500], y[:1500]
    lam = 1e-2
    n = X.shape[0]
    A = X.toarray()
    w_star = np.linalg.solve(A.T @ A / n + lam * np.eye(A.shape[1]), A.T @ y / n)
    p_star = primal_objective(X, y, w_star, lam, "squared")
    for K in partitions:
        m = _fit(X, y, solver, "squared", lam, tol=1e-6, max_rounds=2000, n_partitions=K)
        assert m.converged_
        primal, dual, _ = _certify(m, X, y, lam, "squared")
        assert dual <= p_star * (1 + 1e-12) and primal >= p_star * (1 - 1e-12)
        assert primal - p_star <= 1e-6 * p_star


def test_out_of_core_blocks_converge_with_a_certificate(tmp_path):
    """One partition of 3 store blocks, in process: blocks are the sampling units; certified from the dual point."""
    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=100, shuffle=False)
    parts = [StorePartition(store, 0, store.n_blocks, 1.0)]
    lam, loss = 1e-2, get_loss("logistic")
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=(X.shape[0],), loss=loss, lam=lam,
                    max_column_nnz=max_column_nnz(X))
    for method in (DualFreeSDCA(sampling="importance"), AdaptiveDualFreeSDCA(), REGISTRY["adfsdca+"]()):
        ex = InProcess(parts, info, 0)
        plan = ex.setup(method)
        res = run_rounds(ex, plan, tol=1e-6, max_rounds=500)
        assert res.converged
        ys = np.where(y == 1.0, 1.0, -1.0)
        dual, _ = refk.dual_objective(X, ys, res.alpha, lam, "logistic")
        assert res.primal - dual <= 1e-6 * res.primal


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["dfsdca", "adfsdca", "adfsdca+"])
def test_hinge_raises_and_names_the_smooth_alternatives(solver):
    X, y = load_dataset("heart")
    with pytest.raises(ValueError) as err:
        daskdca.fit(X, y, loss="hinge", solver=solver)
    message = str(err.value)
    assert "hinge" in message
    for loss in ("logistic", "squared", "smoothed_hinge", "squared_hinge"):
        assert loss in message


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="sampling"):
        DualFreeSDCA(sampling="adaptive")
    with pytest.raises(ValueError, match="sampling"):
        DualFreeSDCA(sampling=None)
    for bad in (0, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match="local_iters"):
            DualFreeSDCA(local_iters=bad)
        with pytest.raises(ValueError, match="local_iters"):
            AdaptiveDualFreeSDCA(local_iters=bad)
    with pytest.raises(ValueError, match="batch_size"):
        daskdca.fit(*load_dataset("heart"), loss="logistic", solver="dfsdca", batch_size=4)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="batch_size"):
            AdaptiveDualFreeSDCA(batch_size=bad)
    with pytest.raises(ValueError, match="batch_size"):
        daskdca.fit(*load_dataset("heart"), loss="logistic", solver="adfsdca", batch_size=271)
    for bad in (0.5, float("inf"), True, "10"):
        with pytest.raises(ValueError, match="shrink"):
            REGISTRY["adfsdca+"](shrink=bad)
    for bad in (1.0, -0.1, float("nan"), True):
        with pytest.raises(ValueError, match="floor"):
            REGISTRY["adfsdca+"](floor=bad)
    assert {"dfsdca", "adfsdca", "adfsdca+"} <= set(REGISTRY)


# --- the claim, small: after 10 epochs adfSDCA's gap is below uniform dfSDCA's ---------------------

def test_adaptive_gap_below_uniform_after_ten_epochs_on_heart():
    """[HT15] Figs. 2/4, small: heart, logistic, lam = 1/n, 10 epochs, one partition."""
    X, y = load_dataset("heart")
    lam = 1.0 / X.shape[0]
    gaps = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for key, solver in (("adfsdca", AdaptiveDualFreeSDCA()), ("dfsdca", DualFreeSDCA())):
            m = _fit(X, y, solver, "logistic", lam, tol=0.0, max_rounds=10, random_state=0)
            gaps[key] = m.gap_
    assert gaps["adfsdca"] < gaps["dfsdca"]


# --- refreshed adaptive probabilities ([HT15] §1.1, §4) and the safeguards --------------------------

@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("n_refresh, share, k2_rest, d_rest, sigma", [(1, 1.0, 0.0, 0.0, 1.0), (3, 0.4, 3.0, 50.0, 2.0)])
def test_refreshed_kernel_matches_reference(loss, n_refresh, share, k2_rest, d_rest, sigma):
    """Refreshes every ``ceil(steps / n_refresh)`` steps, fresh residue, capped step: the reference's steps."""
    X, y = _problem(loss, seed=4)
    lam_n = 0.05 * X.shape[0]
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = _state(X, y, lam_n, 2)
    u, dw = w.copy(), np.zeros_like(w)
    a_ref, u_ref, dw_ref = alpha.copy(), u.copy(), dw.copy()
    n_steps = 70
    order, thetas = np.empty(n_steps, dtype=np.int64), np.empty(n_steps)
    curv, base = sigma * lam_n, lam_n ** 2 / ref.SMOOTHNESS[loss]
    taken = kern.refreshed_adaptive_steps(indptr, indices, data, y, sqnorm, alpha, u, dw, 0, X.shape[0], n_steps,
                                          n_refresh, 9, 2, 1, share, k2_rest, d_rest, curv, base,
                                          int(get_loss(loss).kind), 1.0, sigma, 1.0 / lam_n, order, thetas)
    assert taken == n_steps
    th_ref = ref.refreshed_steps(X, y, a_ref, u_ref, dw_ref, order, n_refresh, loss, lam_n, sigma, share, k2_rest,
                                 d_rest)
    np.testing.assert_allclose(thetas, th_ref, rtol=1e-12)
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(u, u_ref, rtol=1e-11, atol=1e-12)
    # the draws follow p* of the refresh: rows with a zero residue at the first refresh are never drawn there
    assert len(np.unique(order)) > 1


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_capped_steps_never_lower_the_dual(loss):
    """The safeguard: with the step factor capped at ``lam n / (lam n + L_i)``, every step of adfSDCA+ with
    ``s = 1`` and no floor (the divergent setting) keeps ``D(alpha)`` from falling."""
    X, y = _problem(loss, seed=7)
    n = X.shape[0]
    lam = 1e-3
    lam_n = lam * n
    indptr, indices, data, sqnorm = _rows(X)
    alpha, w = np.zeros(n), np.zeros(X.shape[1])
    curv, base = lam_n, lam_n ** 2 / ref.SMOOTHNESS[loss]
    kind = int(get_loss(loss).kind)
    duals = [refk.dual_objective(X, y, alpha, lam, loss)[0]]
    for r in range(6):
        kappa = ref.residues(X, y, alpha, w, loss)
        csq = curv * sqnorm + base
        s_all, c_all = np.sum(np.sqrt(csq) * np.abs(kappa)), np.sum(csq)
        for t in range(n):  # one step per call: the dual after every step
            dw = np.zeros_like(w)
            kern.plus_steps(indptr, indices, data, y, sqnorm, alpha, w, dw, 0, n, 1, 0, r * n + t, 0, 1.0, 0.0,
                            0.0, s_all, c_all, 0.0, 1.0, curv, base, kind, 1.0, 1.0, 1.0 / lam_n,
                            np.empty(1, dtype=np.int64), np.empty(1))
            duals.append(refk.dual_objective(X, y, alpha, lam, loss)[0])
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]))
    assert duals[-1] > duals[0]


def test_refreshed_is_the_default_and_exact_stays_an_option():
    assert AdaptiveDualFreeSDCA().probabilities == "refreshed"
    X, y = load_dataset("heart")
    for probabilities in ("refreshed", "exact"):
        m = _fit(X, y, AdaptiveDualFreeSDCA(probabilities=probabilities), "logistic", 1e-2, tol=1e-7,
                 max_rounds=400)
        assert m.converged_
        primal, dual, _ = _certify(m, X, y, 1e-2, "logistic")
        assert 0 <= primal - dual <= 1e-7 * primal
    for bad in ("stale", None):
        with pytest.raises(ValueError, match="probabilities"):
            AdaptiveDualFreeSDCA(probabilities=bad)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="refreshes"):
            AdaptiveDualFreeSDCA(refreshes=bad)


def test_a_stalled_fit_stops_early_and_names_sdca():
    """A gap that cannot fall (tol below the rounding floor is excluded; here lam is tiny and the budget
    large) stops after the stall window with a ConvergenceWarning naming solver='sdca'."""
    from daskdca.methods import dual_free as df

    X, y = load_dataset("heart")
    with pytest.warns(ConvergenceWarning, match="solver='sdca'"):
        m = _fit(X, y, DualFreeSDCA(), "squared", 1e-9, tol=1e-12, max_rounds=3000)
    assert not m.converged_
    assert m.n_epochs_ < 3000 - df.STALL_ROUNDS
    assert m.n_rounds_ < 3000 - df.STALL_ROUNDS  # the driver ends the fit there, not after no-op rounds
    primal, dual, _ = _certify(m, X, y, 1e-9, "squared")
    assert m.gap_ == pytest.approx(primal - dual, rel=1e-8)
