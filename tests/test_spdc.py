"""SPDC (Zhang & Xiao 2017 [ZX17]): lazy kernel == dense NumPy reference, m = n == Chambolle-Pock, weighted a = 0 ==
Algorithm 1, the step parameters and mixing, fused == single rounds, converged fits against references."""

import math
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.driver import InProcess, in_process_partitions
from daskdca.kernels import spdc as kern
from daskdca.losses import get_loss
from daskdca.methods import SPDC
from daskdca.methods.base import Ctx, DataInfo, add_contributions, tree_reduce
from daskdca.methods.spdc import optimal_mixing, step_parameters, weighted_step_parameters
from daskdca.problem import max_column_nnz

import reference_kernels as ref
import reference_spdc as rs
from references import primal_objective, ridge_closed_form

# loss name -> (kernel kind, param, reference name, reference gamma)
LOSS_CASES = {
    "squared": ("squared", "squared", 1.0),
    "logistic": ("logistic", "logistic", 1.0),
    "smoothed_hinge": ("smoothed_hinge", "smoothed_hinge", 1.0),
    "squared_hinge": ("squared_hinge", "squared_hinge", 1.0),
    "hinge+delta": ("smoothed_hinge", "smoothed_hinge", 0.05),  # (16): hinge + delta/2 y^2
}


def _data(n=60, d=25, density=0.3, seed=0, spread=0.0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.data.shape[0])
    X = sp.csr_matrix(sp.diags(np.exp(spread * rng.standard_normal(n))) @ X)
    w = rng.standard_normal(d)
    return X, X @ w + 0.1 * rng.standard_normal(n), np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)


def _kernel_run(X, b, batches, qs, omegas, loss_case, tau, theta, lam1, lam2):
    name, _, gamma = LOSS_CASES[loss_case]
    loss = get_loss(name) if name != "smoothed_hinge" else daskdca.SmoothedHinge(gamma=gamma)
    n, d = X.shape
    x, xp, u = np.zeros(d), np.zeros(d), np.zeros(d)
    last = np.zeros(d, dtype=np.int64)
    y = np.zeros(n)
    width = max(len(k) for k in batches)
    B = np.full((len(batches), width), -1, dtype=np.int64)
    Q = np.zeros((len(batches), width))
    for i, (k, q) in enumerate(zip(batches, qs)):
        B[i, :len(k)], Q[i, :len(k)] = k, q
    steps = kern.spdc_iterations(X.indptr.astype(np.int64), X.indices, X.data, b, y, x, xp, u, last, 0, B, Q,
                                 np.asarray(omegas, dtype=np.float64), 1.0 / n, tau, theta, lam1, lam2,
                                 int(loss.kind), loss.param, np.zeros(d), np.zeros(d), np.empty(d, dtype=np.int64))
    assert steps == sum(len(k) for k in batches)
    T = len(batches)
    log1p = math.log1p(lam2 * tau)
    return kern.flush(x, xp, u, last, T, tau, lam1, lam2, log1p), y, u


@pytest.mark.parametrize("lam1", [0.0, 0.2], ids=["l2", "elastic-net"])
@pytest.mark.parametrize("m", [1, 7], ids=["alg1", "alg2-m7"])
@pytest.mark.parametrize("loss_case", sorted(LOSS_CASES))
def test_lazy_kernel_equals_the_dense_reference_on_the_same_index_sequence(loss_case, m, lam1):
    X, target, labels = _data()
    b = target if loss_case == "squared" else labels
    n = X.shape[0]
    lam2 = 1e-2
    gamma = 1.0 / get_loss(LOSS_CASES[loss_case][0]).smoothness if loss_case != "hinge+delta" else 0.05
    R = float(np.sqrt(X.multiply(X).sum(axis=1)).max())
    tau, sigma, theta = step_parameters(R, n, m, lam2, gamma)
    rng = np.random.default_rng(1)
    T = 300
    batches = [np.sort(rng.choice(n, m, replace=False)) for _ in range(T)]
    qs = [np.full(m, 1.0 / sigma)] * T
    omegas = [1.0 / m] * T
    x, y, u = _kernel_run(X, b, batches, qs, omegas, loss_case, tau, theta, lam1, lam2)
    _, refname, g = LOSS_CASES[loss_case]
    x_ref, y_ref, u_ref, _ = rs.spdc(X.toarray(), b, batches, [np.full(m, sigma)] * T, omegas, refname, tau, theta,
                                     lam1, lam2, gamma=g)
    np.testing.assert_allclose(x, x_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(y, y_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(u, u_ref, rtol=0, atol=1e-12)
    # invariant u = A^T y / n
    np.testing.assert_allclose(u, X.T @ y / n, rtol=0, atol=1e-12)
    if lam1 > 0:
        assert np.any(x_ref == 0.0) and np.array_equal(x == 0.0, x_ref == 0.0)


def test_weighted_steps_equal_the_dense_reference_and_alpha_zero_is_algorithm_1():
    X, _, labels = _data(spread=1.0)
    n = X.shape[0]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    R, R_bar, lam, gamma = norms.max(), norms.mean(), 1e-2, 1.0
    mix = optimal_mixing(R, R_bar, n, lam, gamma)
    assert mix > 0
    tau, sigma, theta = weighted_step_parameters(R, R_bar, n, lam, gamma, mix)
    p = (1 - mix) / n + mix * norms / norms.sum()  # eq. (20)
    rng = np.random.default_rng(2)
    ks = rng.choice(n, 300, p=p / p.sum())
    batches = [np.array([k]) for k in ks]
    x, y, _ = _kernel_run(X, labels, batches, [np.array([p[k] * n / sigma]) for k in ks],
                          [1.0 / (p[k] * n) for k in ks], "smoothed_hinge", tau, theta, 0.0, lam)
    x_ref, y_ref, _, _ = rs.spdc(X.toarray(), labels, batches, [np.array([sigma / (p[k] * n)]) for k in ks],
                                 [1.0 / (p[k] * n) for k in ks], "smoothed_hinge", tau, theta, 0.0, lam)
    np.testing.assert_allclose(x, x_ref, atol=1e-10)
    np.testing.assert_allclose(y, y_ref, atol=1e-10)
    # a = 0: p_k = 1/n, so the step sigma/(p_k n) = sigma and the weight 1/(p_k n) = 1: [ZX17] Algorithm 1
    p0 = np.full(n, (1.0 - 0.0) / n + 0.0 * norms / norms.sum())
    tau, sigma, theta = step_parameters(R, n, 1, lam, gamma)
    weighted = rs.spdc(X.toarray(), labels, batches, [np.array([sigma / (p0[k] * n)]) for k in ks],
                       [1.0 / (p0[k] * n) for k in ks], "smoothed_hinge", tau, theta, 0.0, lam)
    uniform = rs.spdc(X.toarray(), labels, batches, [np.array([sigma])] * len(ks), [1.0] * len(ks),
                      "smoothed_hinge", tau, theta, 0.0, lam)
    np.testing.assert_allclose(weighted[0], uniform[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(weighted[1], uniform[1], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("loss_case", ["squared", "logistic", "smoothed_hinge"])
def test_m_equals_n_is_chambolle_pock(loss_case):
    X, target, labels = _data(n=40, d=15)
    b = target if loss_case == "squared" else labels
    n = X.shape[0]
    lam = 1e-2
    R = float(np.sqrt(X.multiply(X).sum(axis=1)).max())
    gamma = 1.0 / get_loss(loss_case).smoothness
    tau, sigma, theta = step_parameters(R, n, n, lam, gamma)
    T = 40
    batches = [np.arange(n)] * T
    x, y, _ = _kernel_run(X, b, batches, [np.full(n, 1.0 / sigma)] * T, [1.0 / n] * T, loss_case, tau, theta, 0.0,
                          lam)
    x_cp, y_cp = rs.chambolle_pock(X.toarray(), b, T, loss_case, tau, sigma, theta, 0.0, lam)
    np.testing.assert_allclose(x, x_cp, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y, y_cp, rtol=0, atol=1e-12)


def test_idle_steps_in_closed_form_equal_stepping_one_at_a_time():
    rng = np.random.default_rng(3)
    cases = [(0.0, 0.5, 0.5, 1e-2, 0.3, 7), (1.0, -0.5, 0.5, 1e-2, 0.3, 0), (1.0, -0.5, 0.5, 1e-2, 0.3, 1),
             (0.3, 0.2, 0.0, 0.0, 0.5, 40), (0.3, 0.2, 0.1, 0.0, 0.5, 40), (2.0, 0.05, 0.1, 1e-12, 0.5, 100),
             (-2.0, -0.5, 0.1, 1e-12, 0.5, 100)]
    for _ in range(3000):
        cases.append((float(rng.normal() * rng.choice([0, 1, 10])), float(rng.normal()),
                      float(rng.choice([0.0, abs(rng.normal())])), float(rng.choice([0.0, 1e-12, 1e-3, 0.5])),
                      float(rng.uniform(0.01, 2.0)), int(rng.integers(0, 60))))
    for x0, c, lam1, lam2, tau, s in cases:
        got = kern.advance(x0, c, s, tau, lam1, lam2, math.log1p(lam2 * tau))
        want = rs.idle_steps(x0, c, s, tau, lam1, lam2)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (x0, c, lam1, lam2, tau, s)
        assert (got == 0.0) == (want == 0.0) or abs(want) < 1e-12


def test_step_parameters_identities_and_the_optimal_mixing():
    R, R_bar, n, lam, gamma = 3.2, 1.15, 500, 1e-5, 1.0
    for m in (1, 8, n):
        tau, sigma, theta = step_parameters(R, n, m, lam, gamma)
        assert sigma * tau == pytest.approx(1.0 / (4 * R * R), rel=1e-14)
        assert 0 < theta < 1 and 1 - theta == pytest.approx(1 / (n / m + 2 * R * math.sqrt(n / (m * lam * gamma))))
    kappa = R * R / (lam * gamma)
    mix = optimal_mixing(R, R_bar, n, lam, gamma)
    rho = R / R_bar - 1
    h = lambda a: n / (1 - a) + math.sqrt(n * kappa) / (1 + a * rho)  # noqa: E731
    best = scipy.optimize.minimize_scalar(h, bounds=(0, 1 - 1e-12), method="bounded", options={"xatol": 1e-12})
    assert mix == pytest.approx(best.x, abs=1e-6)
    tau, sigma, theta = weighted_step_parameters(R, R_bar, n, lam, gamma, mix)
    R_a = 1 / ((1 - mix) / R + mix / R_bar)
    assert sigma * tau * R_a ** 2 == pytest.approx(0.25, rel=1e-14) and 0 < theta < 1
    # well conditioned (kappa <= n / rho^2): uniform sampling, a* = 0
    assert optimal_mixing(R, R_bar, n, 10.0, gamma) == 0.0


def _plan_and_parts(X, y, method, loss, lam, K, seed=5):
    parts, _ = in_process_partitions(X, y, K, seed)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts),
                    loss=get_loss(loss), lam=lam, max_column_nnz=max_column_nnz(X))
    return InProcess(parts, info, seed).setup(method), parts


@pytest.mark.parametrize("method", [SPDC(), SPDC(batch_size=6), SPDC(sampling="weighted")],
                         ids=["alg1", "alg2", "alg3"])
def test_fused_rounds_give_the_bits_of_single_rounds(method):
    X, _, labels = _data(spread=0.7)
    plan, parts = _plan_and_parts(X, labels, method, "logistic", 1e-2, 1)
    G, L = plan.init_global(), plan.init_local(parts[0], Ctx(5, 0, 0, 1))
    fused_L, fused_G, report = plan.fused_rounds(parts[0], L, G, Ctx(5, 0, 0, 1), 50)
    for r in range(50):
        L, c = plan.local(parts[0], L, G, Ctx(5, r, 0, 1))
        G, _ = plan.combine(G, tree_reduce([c], add_contributions), Ctx(5, r, -1, 1))
    assert int(G.t) == int(fused_G.t) == 49
    for field in G._fields:
        np.testing.assert_array_equal(getattr(G, field), getattr(fused_G, field))
    np.testing.assert_array_equal(L.y, fused_L.y)
    assert report.steps == 49 * plan.m


def test_the_sample_does_not_depend_on_the_partitions():
    """m-nice over all rows from one stream: one and three partitions sample the same rows (up to order)."""
    X, _, labels = _data(n=61)
    one, _ = _plan_and_parts(X, labels, SPDC(batch_size=5), "logistic", 1e-2, 1)
    three, parts = _plan_and_parts(X, labels, SPDC(batch_size=5), "logistic", 1e-2, 3)
    G = one.init_global()._replace(params=np.array([1.0, 1.0, 1.0, 1.0, 0.5, 0.0]))
    L = [three.init_local(p, Ctx(5, 0, k, 3)) for k, p in enumerate(parts)]
    for r in range(1, 20):
        rows = [three._sample(L[k], G, 5, r, k)[0] + three.offsets[k] for k in range(3)]
        np.testing.assert_array_equal(np.concatenate(rows), one._sample(None, G, 5, r, 0)[0])


def test_weighted_sampling_draws_rows_with_the_probabilities_of_eq_20():
    X, _, labels = _data(n=30, spread=1.5)
    plan, parts = _plan_and_parts(X, labels, SPDC(sampling="weighted"), "squared", 1e-6, 3)
    Ls = [plan.init_local(p, Ctx(5, 0, k, 3)) for k, p in enumerate(parts)]
    G = plan._with_parameters(plan.init_global(), [float(L.max_norm) for L in Ls],
                              [float(L.cumnorm[-1]) for L in Ls])
    mix = float(G.params[5])
    assert 0 < mix < 1
    norms = np.concatenate([np.diff(L.cumnorm, prepend=0.0) for L in Ls])
    p = (1 - mix) / 30 + mix * norms / norms.sum()
    counts = np.zeros(30)
    for r in range(20000):
        hits = [(k, plan._sample(Ls[k], G, 9, r, k)) for k in range(3)]
        hits = [(k, s) for k, s in hits if s[0].shape[0]]
        assert len(hits) == 1
        k, (rows, q, omega) = hits[0]
        i = plan.offsets[k] + rows[0]
        counts[i] += 1
        assert omega == pytest.approx(1 / (p[i] * 30)) and q[0] == pytest.approx(p[i] * 30 / G.params[3])
    assert np.abs(counts / 20000 - p).max() < 4 * np.sqrt(p.max() / 20000)


def _certificate(X, y, m, lam, loss):
    ys = y if loss == "squared" else np.where(y == m.classes_[1], 1.0, -1.0)
    dual, _ = ref.dual_objective(X, ys, m.dual_coef_, lam, loss)
    primal = primal_objective(X, ys, m.coef_, lam, loss)
    return primal, dual


# weighted sampling on 3 partitions with -m slow (8 s; alg3 on one partition and alg2 on three cover its parts)
@pytest.mark.parametrize("method, K", [(SPDC(), 1), (SPDC(batch_size=4), 1), (SPDC(sampling="weighted"), 1),
                                       (SPDC(batch_size=4), 3),
                                       pytest.param(SPDC(sampling="weighted"), 3, marks=pytest.mark.slow)],
                         ids=["alg1", "alg2", "alg3", "alg2-3-partitions", "alg3-3-partitions"])
def test_converged_ridge_matches_the_closed_form(method, K):
    X, target, _ = _data(n=200, d=30, density=0.4, seed=4, spread=0.5)
    lam = 1e-2
    w, P = ridge_closed_form(X, target, lam)
    tol = 1e-10 if K == 1 else 1e-7  # several partitions: one round at a time in Python (no fused loop)
    m = daskdca.fit(X, target, loss="squared", lam=lam, solver=method, tol=tol, n_partitions=K)
    assert m.converged_
    primal, dual = _certificate(X, target, m, lam, "squared")
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    assert primal - dual <= tol * primal and primal - P <= tol * P
    np.testing.assert_allclose(m.coef_, w, atol=math.sqrt(tol) * np.abs(w).max())


def test_logistic_fit_is_certified_and_matches_lbfgs(heart):
    from references import lbfgs

    X, y = heart
    lam = 1e-3
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="spdc", tol=1e-8, n_partitions=2)
    assert m.converged_
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    _, P = lbfgs(X, ys, lam, "logistic")
    primal, dual = _certificate(X, y, m, lam, "logistic")
    assert primal - dual <= 1e-8 * primal and abs(primal - P) <= 1e-7 * P


def test_hinge_runs_on_the_perturbed_problem_and_is_certified_on_the_true_one(heart):
    X, y = heart
    lam = 1e-2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = daskdca.fit(X, y, loss="hinge", lam=lam, solver=SPDC(smoothing=0.1), tol=1e-6, max_rounds=150 * 270)
    primal, dual = _certificate(X, y, m, lam, "hinge")
    assert m.gap_ == pytest.approx(primal - dual, rel=1e-9)
    # the perturbation's floor is at most delta/4 (module docstring); 150 passes reach it
    assert 0 <= m.gap_ <= 0.1 / 4


@pytest.fixture(scope="module")
def heart():
    from conftest import load_dataset

    return load_dataset("heart")


def test_bad_input_raises_with_the_fix():
    X, target, labels = _data(n=20)
    with pytest.raises(ValueError, match="use batch_size <= 20"):
        daskdca.fit(X, target, loss="squared", solver="spdc", batch_size=21)
    with pytest.raises(ValueError, match="one row per round"):
        SPDC(sampling="weighted", batch_size=4)
    with pytest.raises(ValueError, match="Unknown sampling"):
        SPDC(sampling="importance")
    for bad in (-0.1, 1.0, float("nan"), True):
        with pytest.raises(ValueError, match="l1_ratio must be"):
            SPDC(l1_ratio=bad)
    with pytest.raises(ValueError, match="smoothing must be"):
        SPDC(smoothing=0.0)
    with pytest.raises(ValueError, match="batch_size must be"):
        SPDC(batch_size=0)
    with pytest.raises(ValueError, match=r"local_iters applies to solver=\[.*\] only .*got solver=.spdc."):
        daskdca.fit(X, target, loss="squared", solver="spdc", local_iters=2.0)
    m = daskdca.fit(X, target, loss="squared", lam=0.1, solver="spdc", batch_size=20, tol=1e-8)
    assert m.plan_.m == 20 and m.converged_


def test_elastic_net_kernel_converges_to_sklearns_elastic_net_with_a_zero_gap():
    """The elastic-net prox (37) and its lazy forms (38)-(44), run to convergence (fit refuses l1_ratio: the
    drivers certify L2 only), against scikit-learn's coordinate descent on the same objective."""
    from sklearn.linear_model import ElasticNet

    X, target, _ = _data(n=80, d=30, density=0.5, seed=6)
    n = X.shape[0]
    alpha, ratio = 0.05, 0.5
    lam1, lam2 = alpha * ratio, alpha * (1 - ratio)
    R = float(np.sqrt(X.multiply(X).sum(axis=1)).max())
    tau, sigma, theta = step_parameters(R, n, 1, lam2, 1.0)
    T = 200 * n
    ks = np.random.default_rng(7).integers(0, n, T)
    x, y, u = _kernel_run(X, target, [[k] for k in ks], [[1.0 / sigma]] * T, [1.0] * T, "squared", tau, theta,
                          lam1, lam2)
    w = ElasticNet(alpha=alpha, l1_ratio=ratio, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(
        X.toarray(), target).coef_
    np.testing.assert_allclose(x, w, atol=1e-7)
    assert np.array_equal(x == 0.0, w == 0.0) and np.any(w == 0.0)
    # gap of (1): P(x) - D(y), D(y) = -1/n sum phi*(y_i) - g*(-u), g*(v) = sum (|v_j| - lam1)_+^2 / (2 lam2)
    primal = 0.5 * np.mean((X @ x - target) ** 2) + lam1 * np.abs(x).sum() + 0.5 * lam2 * x @ x
    dual = -np.mean(0.5 * y ** 2 + target * y) - np.sum(np.maximum(np.abs(u) - lam1, 0.0) ** 2) / (2 * lam2)
    assert -1e-13 <= primal - dual <= 1e-10  # converged: the gap rounds to about +-1e-15


@pytest.mark.parametrize("partitions", [1, 2])
def test_an_elastic_net_fit_is_sklearns_elastic_net_and_its_gap_is_certified(partitions):
    """``SPDC(l1_ratio=0.5)`` through ``daskdca.fit`` solves ``1/n sum (x_i.w - b_i)^2/2 + g(w)``, ``g`` the
    elastic net: its objective equals scikit-learn's ElasticNet optimum (same objective with alpha = lam), its
    zeros are ElasticNet's, and the gap recomputed here from the returned duals bounds P(coef_) - P*."""
    from sklearn.linear_model import ElasticNet

    X, target, _ = _data(n=80, d=30, density=0.5, seed=6)
    n, lam, rho = X.shape[0], 0.05, 0.5
    m = daskdca.fit(X, target, loss="squared", lam=lam, solver=SPDC(l1_ratio=rho), tol=1e-9,
                    n_partitions=partitions, max_rounds=2_000_000)
    assert m.converged_
    star = ElasticNet(alpha=lam, l1_ratio=rho, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(
        X.toarray(), target).coef_

    def primal(w):
        return 0.5 * np.mean((X @ w - target) ** 2) + lam * rho * np.abs(w).sum() + 0.5 * lam * (1 - rho) * w @ w

    p_star = primal(star)
    assert primal(m.coef_) - p_star <= 1e-8 * abs(p_star)
    # P is lam (1 - rho)-strongly convex: ||w - w*||^2 <= 2 (P(w) - P*) / (lam (1 - rho)) <= 2 gap / (lam (1 - rho))
    assert np.sum((m.coef_ - star) ** 2) <= 2 * m.gap_ / (lam * (1 - rho)) + 1e-12
    assert np.any(star == 0.0) and np.all(np.abs(m.coef_[star == 0.0]) < 1e-6)
    # the certificate from the returned duals alone: D(alpha) = -1/n sum phi*(-alpha_i) - g*(X^T alpha / n)
    alpha = m.dual_coef_
    v = X.T @ alpha / n
    conj = 0.5 * alpha ** 2 - target * alpha  # squared loss: phi_i*(-a) = a^2/2 - b_i a
    dual = -np.mean(conj) - np.sum(np.maximum(np.abs(v) - lam * rho, 0.0) ** 2) / (2 * lam * (1 - rho))
    np.testing.assert_allclose(m.primal_ - m.dual_, primal(m.coef_) - dual, rtol=1e-6, atol=1e-14)
    assert primal(m.coef_) - p_star <= (primal(m.coef_) - dual) + 1e-12
    assert m.gap_ <= 1e-9 * abs(m.primal_)


def test_lemma_3_and_inequalities_15_at_random_points():
    """Ridge: ``P(x) <= f(x, y*) + R^2/(2 gamma) ||x - x*||^2``, ``D(y) >= f(x*, y) - R^2/(2 lam n) ||y - y*||^2``
    and (15), with ``(x*, y*)`` from the closed form."""
    X, b, _ = _data(n=50, d=20, seed=8)
    A = X.toarray()
    n, lam = A.shape[0], 0.05
    x_star, _ = ridge_closed_form(X, b, lam)
    y_star = A @ x_star - b  # y* = phi'(a.x*)
    R = np.linalg.norm(A, axis=1).max()

    def f(x, y):
        return np.mean(y * (A @ x) - (0.5 * y ** 2 + b * y)) + 0.5 * lam * x @ x

    def P(x):
        return 0.5 * np.mean((A @ x - b) ** 2) + 0.5 * lam * x @ x

    def D(y):
        u = A.T @ y / n
        return -np.mean(0.5 * y ** 2 + b * y) - u @ u / (2 * lam)

    assert P(x_star) == pytest.approx(D(y_star), rel=1e-10) == pytest.approx(f(x_star, y_star), rel=1e-10)
    rng = np.random.default_rng(9)
    for _ in range(500):
        x = x_star + rng.standard_normal(20) * rng.choice([1e-3, 1.0, 10.0])
        y = y_star + rng.standard_normal(50) * rng.choice([1e-3, 1.0, 10.0])
        slack = 1e-10 * (1 + abs(P(x)) + abs(D(y)))
        assert P(x) <= f(x, y_star) + R ** 2 / 2 * np.sum((x - x_star) ** 2) + slack
        assert D(y) >= f(x_star, y) - R ** 2 / (2 * lam * n) * np.sum((y - y_star) ** 2) - slack
        assert lam / 2 * np.sum((x - x_star) ** 2) <= f(x, y_star) - f(x_star, y_star) + slack
        assert 1 / (2 * n) * np.sum((y - y_star) ** 2) <= f(x_star, y_star) - f(x_star, y) + slack


@pytest.mark.slow
@pytest.mark.parametrize("in_memory", [True, False], ids=["in-memory", "out-of-core"])
def test_weighted_and_mini_batch_in_process_equal_the_cluster(heart, tmp_path, in_memory):
    """The contract test's check for the variants it does not run (Algorithm 2 and 3), 3 partitions."""
    distributed = pytest.importorskip("distributed")
    from daskdca.partitions import random_row_order
    from daskdca.store import write_store

    X, y = heart
    order = random_row_order(X.shape[0], 7)
    store = write_store(tmp_path / "h.zarr", X[order], y[order], block_rows=90, shuffle=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        for method in (SPDC(batch_size=8, eval_every=10), SPDC(sampling="weighted", eval_every=10)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                local = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=method, tol=0.0, n_partitions=3,
                                    max_rounds=40, random_state=7)
                # n_partitions: a store fit on a cluster otherwise takes one partition per worker (2 here)
                remote = daskdca.fit(store, None, loss="logistic", lam=1e-2, solver=method, tol=0.0, max_rounds=40,
                                     random_state=7, client=client, in_memory=in_memory, n_partitions=3)
            assert remote.plan_.n_partitions == local.plan_.n_partitions == 3
            np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
            np.testing.assert_array_equal(remote.coef_, local.coef_)
            assert [r.round for r in remote.history_] == [r.round for r in local.history_]


def _theorem_1_run(loss, m, seeds, passes=(5, 10, 20), lam=1e-2):
    """Mean and standard error over ``seeds`` runs of Theorem 1's ``Delta^(t)`` (eq. (11)) after ``passes`` passes
    of Algorithm 1/2 (the lazy kernel, eq. (12)) from ``x = 0, y = 0``, and the bound ``theta^t (Delta^(0) +
    ||y(0) - y*||^2 / (4 m sigma))``.  ``(x*, y*)``: the closed form (squared) or L-BFGS (the paper's smoothed
    hinge, ``gamma = 1``), with ``y* = phi'(a.x*)``."""
    from references import lbfgs

    X, target, labels = _data(n=80, d=30, density=0.3, seed=0)
    A = X.toarray()
    n, d = A.shape
    if loss == "squared":
        b = target
        x_star, _ = ridge_closed_form(X, b, lam)
        y_star = A @ x_star - b

        def conj(y):
            return 0.5 * y * y + b * y
    else:
        b = labels
        x_star, _ = lbfgs(X, b, lam, "smoothed_hinge")
        z = b * (A @ x_star)
        y_star = np.where(z >= 1, 0.0, np.where(z <= 0, -b, -b * (1 - z)))

        def conj(y):  # b y + y^2/2 on b y in [-1, 0]; the iterates stay there
            return b * y + 0.5 * y * y

    def f(x, y):
        return np.mean(y * (A @ x) - conj(y)) + 0.5 * lam * x @ x

    gamma = 1.0
    f_star = f(x_star, y_star)
    tau, sigma, theta = step_parameters(np.linalg.norm(A, axis=1).max(), n, m, lam, gamma)

    def delta(x, y):  # eq. (11)
        return ((1 / (2 * tau) + lam / 2) * np.sum((x - x_star) ** 2)
                + (1 / (4 * sigma) + gamma / 2) * np.sum((y - y_star) ** 2) / m
                + f(x, y_star) - f_star + n / m * (f_star - f(x_star, y)))

    bound0 = delta(np.zeros(d), np.zeros(n)) + np.sum(y_star ** 2) / (4 * m * sigma)
    loss_obj = get_loss(loss)
    checkpoints = [p * n // m for p in passes]
    values = np.zeros((seeds, len(checkpoints)))
    indptr = X.indptr.astype(np.int64)
    for s in range(seeds):
        rng = np.random.default_rng(100 + s)
        x, xp, u, y = np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(n)
        last = np.zeros(d, dtype=np.int64)
        t = 0
        for c, T in enumerate(checkpoints):
            k = T - t
            # |K| = m distinct rows, P(i in K) = m/n (the two conditions of [ZX17] Theorem 1)
            K = np.argsort(rng.random((k, n)), axis=1)[:, :m] if m > 1 else rng.integers(0, n, (k, 1))
            kern.spdc_iterations(indptr, X.indices, X.data, b, y, x, xp, u, last, t, K.astype(np.int64),
                                 np.full(K.shape, 1 / sigma), np.full(k, 1 / m), 1 / n, tau, theta, 0.0, lam,
                                 int(loss_obj.kind), loss_obj.param, np.zeros(d), np.zeros(d),
                                 np.empty(d, dtype=np.int64))
            t = T
            values[s, c] = delta(kern.flush(x, xp, u, last, t, tau, 0.0, lam, math.log1p(lam * tau)), y)
    bounds = np.array([theta ** T for T in checkpoints]) * bound0
    return values.mean(axis=0), values.std(axis=0) / math.sqrt(seeds), bounds


def _check_theorem_1(mean, se, bounds):
    # the bound holds with three standard errors to spare, at every t
    assert np.all(mean + 3 * se <= bounds), (mean, se, bounds)
    # and it is not vacuous: Delta falls, and the bound stays within a factor 50 of it
    assert np.all(np.diff(mean) < 0) and np.all(bounds / mean < 50)


@pytest.mark.parametrize("loss, m", [("squared", 1), ("smoothed_hinge", 8)], ids=["alg1-squared", "alg2-m8-hinge"])
def test_theorem_1_bound_holds_in_expectation_by_monte_carlo(loss, m):
    """``E[Delta^(t)] <= theta^t (Delta^(0) + ||y(0) - y*||^2 / (4 m sigma))`` (Theorem 1, eq. (11)-(12)), the mean
    over 40 seeds at 5, 10 and 20 passes; n = 80, d = 30, lam = 1e-2 (the bound falls 13x over 20 passes)."""
    _check_theorem_1(*_theorem_1_run(loss, m, seeds=40))


@pytest.mark.slow
@pytest.mark.parametrize("loss, m", [("squared", 1), ("squared", 8), ("smoothed_hinge", 1), ("smoothed_hinge", 8)])
def test_theorem_1_bound_holds_in_expectation_over_many_seeds(loss, m):
    _check_theorem_1(*_theorem_1_run(loss, m, seeds=400))
