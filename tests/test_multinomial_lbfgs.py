"""Multinomial logistic regression by primal L-BFGS (daskdca.methods.multinomial_lbfgs).

The kernel's sums and the two-loop recursion against a NumPy reference; the plan's iterates against
the same rule in NumPy; the certified objective against scikit-learn's multinomial
``LogisticRegression(solver="lbfgs")`` (``C = 1/(lam n)``: scikit-learn minimises
``C sum_i loss_i + 1/2 ||W||^2``, ``C n`` times ours), with the gap recomputed here from the
returned duals; the route of the estimator's default; in process equals the cluster.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression

import daskdca
import reference_multinomial as ref_sdca
import reference_multinomial_lbfgs as ref
from conftest import load_dataset
from daskdca import SDCAClassifier
from daskdca.kernels.multinomial_lbfgs import (logistic_lbfgs_sums, softmax_dual_point, softmax_lbfgs_sums,
                                               two_loop_direction)
from daskdca.kernels.newton import newton_sums, packed_size
from daskdca.losses import LOGISTIC
from daskdca.methods import MultinomialLBFGS, MultinomialSDCA
from daskdca.routes import MULTINOMIAL_NEWTON_MAX_WORK, NEWTON_LAM_N, NEWTON_MAX_FEATURES, choose_multinomial_route

pytestmark = pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")


# -- the kernels ------------------------------------------------------------------------------------

def test_the_kernel_sums_and_dual_point_are_the_reference():
    X, cls, weight, W = ref.random_problem(1)
    n = X.shape[0]
    sums, grad = np.zeros(2), np.zeros_like(W)
    # two calls over two row ranges add up to the whole
    visited = sum(softmax_lbfgs_sums(X.indptr, X.indices, X.data, cls, weight, W, a, b, sums, grad)
                  for a, b in ((0, 50), (50, n)))
    loss_sum, conj_sum, G = ref.softmax_sums(X, cls, weight, W)
    assert visited == n and np.all(np.isfinite(sums))
    assert sums[0] == pytest.approx(loss_sum, rel=1e-12) and sums[1] == pytest.approx(conj_sum, rel=1e-12)
    assert_allclose(grad, G, rtol=1e-12, atol=1e-12)
    alpha = softmax_dual_point(X.indptr, X.indices, X.data, cls, weight, W, 0, n)
    assert_allclose(alpha, ref.dual_point(X, cls, weight, W), rtol=1e-12, atol=1e-15)
    assert_allclose(alpha.sum(axis=0), 0.0, atol=1e-12)  # every column sums to 0: beta_i in the simplex
    assert_allclose(alpha @ X.toarray(), -G, rtol=1e-12, atol=1e-12)  # alpha X = -G: W(alpha) = -G / (lam n)
    # the conjugate sum is the certificate's at that dual point (the SDCA reference's D(alpha))
    lam = 0.1
    _, dual, _ = ref_sdca.objectives(X, cls, weight, alpha, W, lam)
    w_alpha = -G / (lam * n)
    assert dual == pytest.approx(-sums[1] / n - lam / 2 * (w_alpha ** 2).sum(), rel=1e-12)


def test_the_binary_kernel_is_newtons_without_the_hessian():
    X, cls, weight, W = ref.random_problem(2, K=2)
    y = np.where(cls == 1, 1.0, -1.0)
    w = W[1] / 4.0
    d = X.shape[1]
    sums, grad = np.zeros(2), np.zeros(d)
    logistic_lbfgs_sums(X.indptr, X.indices, X.data, y, weight, w, 0, X.shape[0], sums, grad)
    newton, out = np.zeros(2), np.zeros(d + packed_size(d))
    newton_sums(X.indptr, X.indices, X.data, y, weight, w, 0, X.shape[0], LOGISTIC, 0.0, newton, out)
    assert_array_equal(sums, newton)
    assert_array_equal(grad, out[:d])


def test_the_two_loop_recursion_is_algorithm_7_4():
    rng = np.random.default_rng(3)
    D, m = 12, 5
    A = rng.normal(size=(D, D))
    H = A @ A.T + np.eye(D)  # y = H s: every pair has s.y > 0
    S = rng.normal(size=(m, D))
    Y = S @ H
    g = rng.normal(size=D)
    for pairs in (0, 1, 3, m):
        got = two_loop_direction(g, S, Y, pairs)
        want = ref.two_loop(g, [(S[j], Y[j]) for j in range(pairs)])
        assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        assert g @ got < 0  # a descent direction
    # the secant equation of the newest pair: H y_last = s_last (Nocedal & Wright eq. (6.6))
    for pairs in (1, 3, m):
        assert_allclose(-two_loop_direction(Y[pairs - 1], S, Y, pairs), S[pairs - 1], rtol=1e-9, atol=1e-11)


# -- the plan -------------------------------------------------------------------------------------------

def _digits(n=None, scale=16.0):
    X, y = load_digits(return_X_y=True)
    X = X / scale
    return (X, y) if n is None else (X[:n], y[:n])


def test_the_iterates_are_the_reference_rule():
    """Rounds 1..12 lead to the points of the NumPy reference (accepted steps and backtracks alike)."""
    X, y = _digits(500, scale=1.0)  # raw digits: the first steps backtrack
    weight = np.random.default_rng(4).uniform(0.5, 1.5, X.shape[0])
    lam, rounds = 1e-3, 12
    seen = []
    daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_lbfgs", tol=0.0, max_rounds=rounds,
                sample_weight=weight, callback=lambda record, state: seen.append(np.array(state.w)))
    # the state after round r (a callback's) is the point round r + 1 evaluates
    want = ref.lbfgs_points(sp.csr_matrix(X), y.astype(np.int64), weight, lam, rounds + 1)[1:]
    assert len(seen) == rounds
    # the rule is exercised both ways: round 2's trial failed Armijo's test, and round 3 tried half the step
    jumps = [np.linalg.norm(b - a) for a, b in zip(want, want[1:])]
    assert jumps[1] == pytest.approx(jumps[0] / 2, rel=1e-9)
    for r, (got, point) in enumerate(zip(seen, want)):
        assert_allclose(got.ravel(), point, rtol=1e-12, atol=1e-12 * np.abs(point).max(), err_msg=f"round {r + 1}")


@pytest.mark.parametrize("name, C", [("iris", 1.0), ("iris", 100.0), ("digits", 1.0),
                                     pytest.param("digits", 100.0, marks=pytest.mark.slow)])
def test_the_certified_objective_is_sklearns(name, C):
    X, y = load_iris(return_X_y=True) if name == "iris" else _digits(scale=16.0 if C == 1.0 else 1.0)
    n = X.shape[0]
    lam = 1.0 / (C * n)
    weight = np.random.default_rng(5).uniform(0.5, 2.0, n)
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_lbfgs", tol=1e-9, max_rounds=5000,
                    sample_weight=weight)
    assert m.converged_ and m.solver.name == "multinomial_lbfgs" and m.coef_.shape == (np.unique(y).size, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LogisticRegression(solver="lbfgs", C=C, fit_intercept=False, tol=1e-12, max_iter=10000)
        sk.fit(X, y, sample_weight=weight)
    cls = np.searchsorted(np.unique(y), y)
    # the gap recomputed here from the returned duals alone
    primal, dual, _ = ref_sdca.objectives(X, cls, weight, m.dual_coef_, m.coef_, lam)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    assert 0.0 <= primal - dual <= 1e-9 * primal
    sk_primal, _, _ = ref_sdca.objectives(X, cls, weight, np.zeros((cls.max() + 1, n)), sk.coef_, lam)
    assert primal == pytest.approx(sk_primal, rel=1e-6)
    assert dual <= sk_primal + 1e-12 * sk_primal  # weak duality: scikit-learn's point is no better than the bound


# -- the route ------------------------------------------------------------------------------------------

def test_the_route_rule():
    few, many = NEWTON_MAX_FEATURES, NEWTON_MAX_FEATURES + 1
    small_lam = (NEWTON_LAM_N / 2) / 1000
    big_lam = (NEWTON_LAM_N * 2) / 1000
    # three classes: a round's Hessian takes 6 sum_i nnz_i^2 additions
    heavy = dict(n_classes=3, squared_row_nnz=MULTINOMIAL_NEWTON_MAX_WORK // 6 + 1)
    light = dict(n_classes=3, squared_row_nnz=MULTINOMIAL_NEWTON_MAX_WORK // 6)
    cases = [
        (dict(on_cluster=False, n=1000, d=few, lam=small_lam, **heavy), "in_process", "multinomial_lbfgs"),
        (dict(on_cluster=False, n=1000, d=few, lam=small_lam, **light), "in_process", "multinomial_newton"),
        (dict(on_cluster=False, n=1000, d=few, lam=big_lam, **light), "in_process", "multinomial"),
        (dict(on_cluster=False, n=1000, d=many, lam=small_lam, **light), "in_process", "multinomial"),
        (dict(on_cluster=False, n=1000, d=few, lam=small_lam, warm_start=True, **light), "in_process", "multinomial"),
        (dict(on_cluster=False, n=1000, d=few, lam=small_lam, n_partitions=2, **light), "in_process", "multinomial"),
        (dict(on_cluster=True, n=1000, d=few, lam=big_lam, **heavy), "rounds", "multinomial_lbfgs"),
        (dict(on_cluster=True, n=1000, d=few, lam=big_lam, **light), "rounds", "multinomial_newton"),
        (dict(on_cluster=True, n=1000, d=many, lam=small_lam, **light), "rounds", "multinomial"),
        (dict(on_cluster=True, n=1000, d=few, lam=small_lam, warm_start=True, **light), "rounds", "multinomial"),
        # K d above what MultinomialNewton takes: L-BFGS, however light the rows
        (dict(on_cluster=False, n=1000, d=few, lam=small_lam, n_classes=7, squared_row_nnz=1), "in_process",
         "multinomial_lbfgs"),
    ]
    for kwargs, where, solver in cases:
        route = choose_multinomial_route(**kwargs)
        assert (route.name, route.solver) == (where, solver), kwargs
        assert route.reason
    # the reason says which limit sent the fit to L-BFGS
    assert "Hessian additions a round (>" in choose_multinomial_route(**cases[0][0]).reason
    assert "K d = 2100 variables (> newton_max_variables = 2000)" in choose_multinomial_route(**cases[-1][0]).reason


def test_the_estimator_default_takes_lbfgs_on_digits_and_an_explicit_solver_is_obeyed():
    X, y = _digits(scale=1.0)
    est = SDCAClassifier(loss="logistic", C=1.0, tol=1e-6).fit(X, y)
    assert est.multi_class_ == "multinomial"
    assert est.route_.solver == "multinomial_lbfgs" and "L-BFGS" in est.route_.reason
    assert est.converged_.all() and est.gap_[0] <= 1e-6 * est.primal_[0]
    assert est.score(X, y) > 0.99
    # the objective is the one multinomial SDCA certifies (with the intercept column): a short SDCA fit is no
    # better, and its dual bound is no higher than L-BFGS's primal
    sdca = SDCAClassifier(loss="logistic", C=1.0, tol=1e-6, solver="sdca", max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdca.fit(X, y)
    assert sdca.route_.solver == "multinomial" and sdca.dual_[0] <= est.primal_[0] <= sdca.primal_[0]
    # daskdca.fit(solver="multinomial") runs multinomial SDCA
    m = daskdca.fit(X[:300], y[:300], loss="logistic", lam=1e-2, solver="multinomial", max_rounds=2, tol=0.0)
    assert isinstance(m.solver, MultinomialSDCA) and m.route_.solver == "multinomial"
    # a MultinomialLBFGS object runs as given, as does a warm refit through multinomial SDCA
    obj = SDCAClassifier(loss="logistic", solver=MultinomialLBFGS(memory=5)).fit(X[:300], y[:300])
    assert obj.route_.solver == "multinomial_lbfgs" and obj.multi_class_ == "multinomial"
    warm = SDCAClassifier(loss="logistic", C=1.0, warm_start=True).fit(X[:300], y[:300])
    assert warm.route_.solver == "multinomial_lbfgs"
    warm.set_params(C=2.0).fit(X[:300], y[:300])
    assert warm.route_.solver == "multinomial" and "warm start" in warm.route_.reason


# -- the cluster ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver, rounds", [("multinomial_lbfgs", 15), ("multinomial_newton", 6)])
def test_cluster_and_out_of_core_give_the_in_process_bits(tmp_path, solver, rounds):
    """Both primal methods of the softmax problem (tests/test_multinomial_newton.py tests Newton's rounds)."""
    distributed = pytest.importorskip("distributed")
    from daskdca.store import write_store

    X, y = load_dataset("heart")
    sex = X[:, 1].toarray().ravel()
    y3 = np.where(y < 0, 0, np.where(sex < 0, 1, 2))
    kwargs = dict(loss="logistic", lam=1e-2, tol=0.0, max_rounds=rounds, n_partitions=2, solver=solver)
    in_process = daskdca.fit(X, y3, **kwargs)
    blocks = write_store(tmp_path / "blocks.zarr", X, y3, block_rows=50, seed=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        on_cluster = daskdca.fit(X, y3, client=client, **kwargs)
        in_memory, out_of_core = (daskdca.fit(blocks, client=client, in_memory=flag, **kwargs)
                                  for flag in (True, False))
        if solver == "multinomial_newton":
            # the estimator's default with a client: primal rounds on the cluster, whatever lam n (Newton's: a
            # round's Hessian on heart is small, routes.MULTINOMIAL_NEWTON_MAX_WORK)
            est = SDCAClassifier(loss="logistic", C=0.1, client=client).fit(X, y3)  # lam n = 10
            assert est.route_.solver == solver and est.route_.name == "rounds" and est.converged_.all()
    assert_array_equal(on_cluster.coef_, in_process.coef_)
    assert_array_equal(on_cluster.dual_coef_, in_process.dual_coef_)
    assert on_cluster.primal_ == in_process.primal_ and on_cluster.dual_ == in_process.dual_
    assert [r.primal for r in on_cluster.history_] == [r.primal for r in in_process.history_]
    # a store read block by block out of core: the bits of the same store in memory, certified from its duals
    assert_array_equal(out_of_core.coef_, in_memory.coef_)
    assert_array_equal(out_of_core.dual_coef_, in_memory.dual_coef_)
    X_stored = sp.vstack([blocks.read_block(k)[0] for k in range(blocks.n_blocks)])
    labels = np.asarray(blocks.group["y"][:]).astype(np.int64)
    primal, dual, _ = ref_sdca.objectives(X_stored, labels, None, out_of_core.dual_coef_, out_of_core.coef_, 1e-2)
    assert out_of_core.primal_ == pytest.approx(primal, rel=1e-12) and out_of_core.dual_ == pytest.approx(dual,
                                                                                                           rel=1e-12)
    # the iterates do not depend on the partitions but through the order of the sums
    assert_allclose(out_of_core.coef_, in_process.coef_, rtol=1e-9, atol=1e-12)


def test_a_model_of_the_lbfgs_solver_gives_softmax_probabilities():
    """``daskdca.fit(solver="multinomial_lbfgs")``'s model predicts the softmax of its scores, as a multinomial
    SDCA model does (not one-vs-rest sigmoids normalised)."""
    from scipy.special import softmax
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0, y[:300]
    m = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-8, solver="multinomial_lbfgs")
    np.testing.assert_allclose(m.predict_proba(X), softmax(m.decision_function(X), axis=1), rtol=1e-12, atol=1e-15)
