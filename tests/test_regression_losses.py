"""The regression losses beyond squared: epsilon-insensitive, its square and Huber's.

* the scalar functions: conjugates by brute-force suprema, derivatives by finite differences, the dual steps by
  brute-force 1-D maximisation;
* the numba kernels against the NumPy reference (``tests/reference_kernels.py``, LIBLINEAR's form of the step,
  Ho & Lin 2012 [HL12] Algorithm 4) on the same row sequence;
* on real data (scikit-learn's diabetes set, standardised: 442 x 10), the certified optimum against independent
  solvers: LIBLINEAR through ``LinearSVR(dual=True)`` for the SVR losses, SciPy's L-BFGS on the primal for Huber,
  to 1e-8 relative; the gap recomputed here from the returned duals; CoCoA+ on 2 partitions and the other
  methods that take the losses at the same optimum;
* ``SDCARegressor(loss=...)`` and the errors of the methods that do not take them.
"""

import math

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVR

import daskdca
from daskdca import EpsilonInsensitive, Huber, SDCARegressor, SquaredEpsilonInsensitive
from daskdca.kernels.sampling import minibatch_schedule, permutation_order
from daskdca.kernels.sdca import local_sdca, minibatch_sdca, movable_rows, objective_sums
from daskdca.losses import LOSSES, dual_update, get_loss
from daskdca.methods import SDNA, CoCoAPlus, check_supported
from daskdca.partitions import UNWEIGHTED

import reference_kernels as ref
from conftest import load_dataset, random_sparse

# (loss object, the reference's name, its parameter)
LOSS_CASES = [
    (EpsilonInsensitive(epsilon=0.0), "epsilon_insensitive", 0.0),
    (EpsilonInsensitive(epsilon=0.3), "epsilon_insensitive", 0.3),
    (SquaredEpsilonInsensitive(epsilon=0.0), "squared_epsilon_insensitive", 0.0),
    (SquaredEpsilonInsensitive(epsilon=0.3), "squared_epsilon_insensitive", 0.3),
    (Huber(delta=0.5), "huber", 0.5),
    (Huber(delta=2.0), "huber", 2.0),
]
IDS = [f"{loss.name}-{p:g}" for loss, _, p in LOSS_CASES]


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def _box(loss):
    lo, hi = loss.dual_domain
    return max(lo, -4.0), min(hi, 4.0)


# --- the scalar functions ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, name, p", LOSS_CASES, ids=IDS)
def test_conjugate_is_the_supremum_and_derivative_the_slope(loss, name, p):
    """``phi_i*(-alpha) = sup_z (-alpha z - phi_i(z))`` on a fine grid; ``phi_i'`` by central differences."""
    rng = np.random.default_rng(0)
    z = np.linspace(-40.0, 40.0, 400_001)
    lo, hi = _box(loss)
    for _ in range(25):
        y, alpha = rng.normal(scale=2.0), rng.uniform(lo, hi)
        zs = np.concatenate([z, [y - p, y, y + p]])  # the kinks, where the supremum of the SVR losses sits
        sup = np.max(-alpha * zs - loss.value(np.full_like(zs, y), zs))
        assert loss.conjugate([y], [alpha])[0] == pytest.approx(sup, abs=1e-6)
        assert loss.conjugate([y], [alpha])[0] == pytest.approx(ref.conjugate(name, y, alpha, p), rel=1e-15)
        z0, h = rng.normal(scale=3.0), 1e-6
        slope = (loss.value([y], [z0 + h])[0] - loss.value([y], [z0 - h])[0]) / (2 * h)
        assert loss.derivative([y], [z0])[0] == pytest.approx(slope, abs=1e-6)
        # Fenchel-Young: the gap term vanishes at alpha = -phi'(z)
        a = -loss.derivative([y], [z0])
        assert loss.gap_terms([y], a, [z0])[0] == pytest.approx(0.0, abs=1e-12)
    if math.isfinite(loss.dual_domain[1]):  # outside the box the conjugate is +inf
        assert loss.conjugate([0.3], [loss.dual_domain[1] * 1.001])[0] == math.inf
        assert loss.conjugate([0.3], [loss.dual_domain[0] * 1.001])[0] == math.inf


@pytest.mark.parametrize("loss, name, p", LOSS_CASES, ids=IDS)
def test_dual_step_is_the_exact_one_dimensional_maximiser(loss, name, p):
    """The closed form beats every point of a fine grid of the feasible interval, zero rows (q = 0) included,
    and equals the NumPy reference's (LIBLINEAR's form for the SVR losses)."""
    rng = np.random.default_rng(1)
    lo, hi = _box(loss)
    grid = np.linspace(lo, hi, 400_001)
    kind, param = int(loss.kind), loss.param
    for t in range(200):
        y, m = rng.normal(scale=2.0), rng.normal(scale=2.0)
        q = 0.0 if t % 10 == 0 and name == "epsilon_insensitive" else rng.exponential(2.0)
        alpha = rng.uniform(lo, hi) if t % 3 else 0.0
        new = dual_update(kind, param, y, alpha, q, m)
        assert lo <= new <= hi or not math.isfinite(loss.dual_domain[1])

        def objective(a):
            return -loss.conjugate(np.full_like(a, y), a) - q / 2 * (a - alpha) ** 2 - m * (a - alpha)

        assert objective(np.array([new]))[0] >= objective(grid).max() - 1e-9
        assert new == pytest.approx(ref.dual_update(name, y, alpha, q, m, p), rel=1e-12, abs=1e-14)


def test_constants_names_and_parameters():
    assert EpsilonInsensitive().epsilon == 0.0 and SquaredEpsilonInsensitive().epsilon == 0.0
    assert Huber().delta == 1.0
    e, s, h = EpsilonInsensitive(epsilon=0.2), SquaredEpsilonInsensitive(epsilon=0.2), Huber(delta=1.5)
    assert not (e.is_classification or s.is_classification or h.is_classification)
    assert e.lipschitz == 1.0 and e.smoothness == math.inf and e.dual_domain == (-1.0, 1.0)
    assert s.smoothness == 2.0 and s.lipschitz == math.inf and s.dual_domain == (-math.inf, math.inf)
    assert h.smoothness == 1.0 and h.lipschitz == 1.5 and h.dual_domain == (-1.5, 1.5)
    assert e.has_active_bounds and s.has_active_bounds and h.has_active_bounds
    assert (e.param, s.param, h.param) == (0.2, 0.2, 1.5)
    for name in ("epsilon_insensitive", "squared_epsilon_insensitive", "huber"):
        assert name in LOSSES and get_loss(name).name == name
    for bad in (-0.1, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(ValueError, match=r"EpsilonInsensitive needs a finite epsilon >= 0.*use epsilon=0.0"):
            EpsilonInsensitive(epsilon=bad)
        with pytest.raises(ValueError, match="SquaredEpsilonInsensitive needs a finite epsilon >= 0"):
            SquaredEpsilonInsensitive(epsilon=bad)
    for bad in (0.0, -1.0, float("nan"), float("inf"), None):
        with pytest.raises(ValueError, match=r"Huber needs a finite delta > 0.*use delta=1.0"):
            Huber(delta=bad)


# --- the kernels against the NumPy reference ---------------------------------------------------------------------

def _problem(kind):
    if kind == "random":
        X = random_sparse(60, 25, 0.2, seed=0, zero_rows=(3, 17))
    else:  # a slice of real data, real targets
        X, _ = load_dataset("a9a")
        X = sp.csr_matrix(X[:300])
    y = np.random.default_rng(1).normal(size=X.shape[0])
    return X, y


@pytest.mark.parametrize("data", ["random", "a9a"])
@pytest.mark.parametrize("loss, name, p", LOSS_CASES, ids=IDS)
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_local_sdca_matches_reference(data, loss, name, p, sigma):
    """Serial SDCA (sigma = 1) and the CoCoA+ local solver (sigma' = 3), three passes, step for step."""
    X, y = _problem(data)
    n, d = X.shape
    lam_n = 0.05 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = permutation_order(4, 0, 0, n, 3 * n, 0)
    w0 = np.random.default_rng(2).normal(scale=0.1, size=d)
    alpha, u, dw = np.zeros(n), w0.copy(), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, u, dw, order,
               int(loss.kind), loss.param, lam_n, sigma, True)
    ra, ru, rdw = ref.local_sdca(X, y, np.zeros(n), w0, np.zeros(d), order, name, lam_n, sigma, gamma=p)
    assert _rel_err(alpha, ra) <= 1e-12
    assert _rel_err(u, ru) <= 1e-12
    assert _rel_err(dw, rdw) <= 1e-12
    np.testing.assert_allclose(dw, X.T @ alpha / lam_n, rtol=1e-10, atol=1e-12)
    lo, hi = loss.dual_domain
    assert np.all((alpha >= lo) & (alpha <= hi))
    if name == "epsilon_insensitive":  # some rows at the box, some inside the tube at 0
        assert np.any(np.abs(alpha) == 1.0) or p > 0


@pytest.mark.parametrize("loss, name, p", LOSS_CASES, ids=IDS)
def test_weighted_local_sdca_matches_reference(loss, name, p):
    X, y = _problem("random")
    n, d = X.shape
    lam_n = 0.05 * n
    weight = np.random.default_rng(5).uniform(0.0, 3.0, n)
    weight[[4, 9]] = 0.0
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = permutation_order(4, 0, 0, n, 3 * n, 0)
    alpha, u = np.zeros(n), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, weight, sqnorm, alpha, u, np.zeros(d), order,
               int(loss.kind), loss.param, lam_n, 1.0, False)
    ra, ru, _ = ref.local_sdca(X, y, np.zeros(n), np.zeros(d), np.zeros(d), order, name, lam_n, 1.0, gamma=p,
                               weight=weight)
    assert _rel_err(alpha, ra) <= 1e-12 and _rel_err(u, ru) <= 1e-12
    assert alpha[4] == 0.0 and alpha[9] == 0.0
    lo, hi = loss.dual_domain
    if math.isfinite(hi):
        assert np.all((alpha >= lo * weight) & (alpha <= hi * weight))


@pytest.mark.parametrize("loss, name, p", LOSS_CASES, ids=IDS)
def test_minibatch_sdca_and_objective_sums_match_reference(loss, name, p):
    X, y = _problem("random")
    n, d = X.shape
    lam_n = 0.1 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    q = 4.0 * sqnorm / lam_n
    batches = minibatch_schedule(9, 0, 25, np.array([0, 30, 60], dtype=np.int64), 4)
    alpha, w = np.zeros(n), np.zeros(d)
    minibatch_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, q, alpha, w, w, batches, int(loss.kind), loss.param,
                   lam_n)
    ra, rw = ref.minibatch_sdca(X, y, q, np.zeros(n), np.zeros(d), batches, name, lam_n, gamma=p)
    assert _rel_err(alpha, ra) <= 1e-12 and _rel_err(w, rw) <= 1e-12
    got = objective_sums(X.indptr, X.indices, X.data, y, UNWEIGHTED, alpha, w, 0, n, int(loss.kind), loss.param)
    np.testing.assert_allclose(got, ref.objective_sums(X, y, alpha, w, name, gamma=p), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss, name, p", [LOSS_CASES[1], LOSS_CASES[3], LOSS_CASES[4]],
                         ids=[IDS[1], IDS[3], IDS[4]])
def test_movable_rows_are_the_rows_whose_step_is_nonzero(loss, name, p):
    """Shrinking: after some passes, rows inside the tube at 0 (or at the box) have a zero step and are left out."""
    X, y = _problem("a9a")
    n, d = X.shape
    lam_n = 0.01 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    alpha, w = np.zeros(n), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0),
               permutation_order(0, 0, 0, n, 5 * n, 0), int(loss.kind), loss.param, lam_n, 1.0, False)
    rows = movable_rows(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, 50, 250,
                        int(loss.kind), loss.param, lam_n, 1.0)
    margins = np.asarray(X @ w).ravel()
    steps = [dual_update(int(loss.kind), loss.param, y[i], alpha[i], sqnorm[i] / lam_n, margins[i])
             for i in range(n)]
    expected = [i for i in range(50, 250) if steps[i] != alpha[i]]
    assert 0 < len(expected) < 200
    np.testing.assert_array_equal(rows, expected)
    # the rows left out: the reference's step is zero there too, and they are mostly at the kink 0 or at the box
    # (a row stepped last in the sweep may sit at its interior optimum to the bit)
    left_out = sorted(set(range(50, 250)) - set(expected))
    for i in left_out:
        assert ref.dual_update(name, y[i], alpha[i], sqnorm[i] / lam_n, margins[i], p) == pytest.approx(
            alpha[i], rel=1e-12, abs=1e-15)
    pinned = [i for i in left_out if alpha[i] == 0.0 or abs(alpha[i]) == loss.dual_domain[1]]
    assert len(pinned) >= 0.9 * len(left_out) > 0


# --- real data: the certified optimum against independent solvers ------------------------------------------------

def _diabetes():
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return sp.csr_matrix(X), (y - y.mean()) / y.std()


def _primal(X, y, w, lam, name, p):
    z = np.asarray(X @ w).ravel()
    return sum(ref.loss_value(name, y[i], z[i], p) for i in range(X.shape[0])) / X.shape[0] + 0.5 * lam * w @ w


def _certificate(model, X, y, lam, name, p, weight=None):
    """``(P(coef_), D(dual_coef_))`` recomputed with the NumPy reference, ``D`` from the returned duals alone
    (``w(alpha) = X^T alpha / (lam n)`` rebuilt here; Catalyst's model is its iterate, certified against it)."""
    alpha = np.asarray(model.dual_coef_, dtype=np.float64)
    n = X.shape[0]
    s = np.ones(n) if weight is None else weight
    w_alpha = np.asarray(X.T @ alpha).ravel() / (lam * n)
    w = np.asarray(model.coef_, dtype=np.float64)
    z = np.asarray(X @ w).ravel()
    primal = sum(s[i] * ref.loss_value(name, y[i], z[i], p) for i in range(n)) / n + 0.5 * lam * w @ w
    conj = sum(0.0 if s[i] == 0 else s[i] * ref.conjugate(name, y[i], alpha[i] / s[i], p) for i in range(n))
    dual = -conj / n - 0.5 * lam * w_alpha @ w_alpha
    return primal, dual


def _reference_optimum(X, y, lam, name, p, weight=None):
    """The optimal primal value by a solver that shares no code with daskdca."""
    n = X.shape[0]
    if name == "huber":
        Xd = X.toarray()
        s = np.ones(n) if weight is None else weight

        def fun(w):
            r = Xd @ w - y
            a = np.abs(r)
            value = np.where(a <= p, 0.5 * r * r, p * a - 0.5 * p * p)
            grad = Xd.T @ (s * np.clip(r, -p, p)) / n + lam * w
            return float(s @ value) / n + 0.5 * lam * w @ w, grad

        res = scipy.optimize.minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                                      options={"maxiter": 20_000, "ftol": 1e-16, "gtol": 1e-14, "maxcor": 30})
        return res.fun
    # LinearSVR minimises C sum_i s_i h(r_i) + ||w||^2 / 2: n C times P with C = 1 / (lam n).  LIBLINEAR's dual
    # CD (-s 13) for epsilon-insensitive; for its square the primal trust-region Newton (-s 11), which reaches
    # tol=1e-12 in milliseconds where the dual CD (-s 12) runs out of iterations (its answer agrees to 1e-12)
    svr = LinearSVR(C=1.0 / (lam * n), epsilon=p, loss=name, fit_intercept=False,
                    dual=name == "epsilon_insensitive", tol=1e-12, max_iter=1_000_000).fit(X, y, sample_weight=weight)
    w = svr.coef_
    z = np.asarray(X @ w).ravel()
    s = np.ones(n) if weight is None else weight
    return sum(s[i] * ref.loss_value(name, y[i], z[i], p) for i in range(n)) / n + 0.5 * lam * w @ w


REAL_CASES = [
    (EpsilonInsensitive(epsilon=0.1), "epsilon_insensitive", 0.1, 1.0),
    (EpsilonInsensitive(epsilon=0.0), "epsilon_insensitive", 0.0, 0.2),
    (SquaredEpsilonInsensitive(epsilon=0.2), "squared_epsilon_insensitive", 0.2, 1.0),
    (Huber(delta=0.5), "huber", 0.5, 1.0),
    (Huber(delta=1.35), "huber", 1.35, 0.1),
]
REAL_IDS = [f"{loss.name}-{p:g}-C{C:g}" for loss, _, p, C in REAL_CASES]


@pytest.mark.parametrize("loss, name, p, C", REAL_CASES, ids=REAL_IDS)
def test_serial_sdca_and_cocoa_reach_the_reference_optimum_on_diabetes(loss, name, p, C):
    """P at the certified optimum equals LIBLINEAR's (LinearSVR, dual CD) or L-BFGS's to 1e-8 relative; the gap
    recomputed from the returned duals is within the tol; CoCoA+ on 2 partitions reaches the same P."""
    X, y = _diabetes()
    n = X.shape[0]
    lam = 1.0 / (C * n)
    best = _reference_optimum(X, y, lam, name, p)
    for solver, K in (("sdca", 1), ("cocoa+", 2)):
        model = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, n_partitions=K, tol=1e-11,
                            max_epochs=50_000)
        assert model.converged_, (solver, model)
        primal, dual = _certificate(model, X, y, lam, name, p)
        assert primal - dual <= 1e-10 * abs(primal)
        assert dual <= best * (1 + 1e-12)  # weak duality against the reference
        assert abs(model.primal_ - best) <= 1e-8 * abs(best), (solver, model.primal_, best)
        assert abs(primal - model.primal_) <= 1e-12 * abs(primal)
        lo, hi = loss.dual_domain
        assert np.all((model.dual_coef_ >= lo) & (model.dual_coef_ <= hi))


def test_weighted_epsilon_insensitive_matches_liblinear_weights():
    """sample_weight s_i: LIBLINEAR's instance weights (LinearSVR(...).fit(sample_weight=s)), C_i = s_i C."""
    X, y = _diabetes()
    n = X.shape[0]
    lam = 1.0 / n
    weight = np.random.default_rng(0).uniform(0.2, 3.0, n)
    weight[::17] = 0.0
    best = _reference_optimum(X, y, lam, "epsilon_insensitive", 0.1, weight=weight)
    model = daskdca.fit(X, y, loss=EpsilonInsensitive(epsilon=0.1), lam=lam, solver="sdca", tol=1e-11,
                        max_epochs=50_000, sample_weight=weight)
    primal, dual = _certificate(model, X, y, lam, "epsilon_insensitive", 0.1, weight=weight)
    assert primal - dual <= 1e-10 * abs(primal)
    assert abs(model.primal_ - best) <= 1e-8 * abs(best)
    assert np.all(model.dual_coef_[::17] == 0.0)


@pytest.mark.parametrize("loss, name, p, solver, lam_n", [
    (EpsilonInsensitive(epsilon=0.1), "epsilon_insensitive", 0.1, "minibatch_sdca", 1.0),
    (SquaredEpsilonInsensitive(epsilon=0.2), "squared_epsilon_insensitive", 0.2, "minibatch_sdca", 1.0),
    (Huber(delta=0.5), "huber", 0.5, "minibatch_sdca", 1.0),
    (SquaredEpsilonInsensitive(epsilon=0.2), "squared_epsilon_insensitive", 0.2, "dfsdca", 10.0),
    (Huber(delta=0.5), "huber", 0.5, "dfsdca", 10.0),
    (Huber(delta=0.5), "huber", 0.5, "spdc", 1.0),
    (Huber(delta=0.5), "huber", 0.5, CoCoAPlus(local_solver="spdc"), 1.0),
], ids=["eps-minibatch", "sqeps-minibatch", "huber-minibatch", "sqeps-dfsdca", "huber-dfsdca", "huber-spdc",
        "huber-cocoa+(spdc)"])
def test_the_other_methods_that_take_the_losses_reach_the_same_optimum(loss, name, p, solver, lam_n):
    """Mini-batch SDCA (safe ESO steps, batch 8), dual-free SDCA (smooth losses; at lam n = 10, as its uniform
    steps stall at lam n = 1 and say so), SPDC and CoCoA+ with the SPDC local solver (smooth losses): the
    certified P agrees with the reference to the tol."""
    X, y = _diabetes()
    n = X.shape[0]
    lam = lam_n / n
    best = _reference_optimum(X, y, lam, name, p)
    # epsilon-insensitive is Lipschitz, not smooth: a sublinear rate; SPDC's rounds are one row each
    tol = 1e-6 if name == "epsilon_insensitive" else 1e-8 if "spdc" in repr(solver) else 1e-9
    K = 2 if isinstance(solver, CoCoAPlus) else 1
    model = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, n_partitions=K, tol=tol, max_epochs=20_000,
                        batch_size=8 if solver == "minibatch_sdca" else None)
    assert model.converged_, model
    assert model.primal_ - best <= 2 * tol * abs(best) and best - model.primal_ <= 1e-8 * abs(best)


# --- the estimator --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, epsilon", [("epsilon_insensitive", 0.1), ("squared_epsilon_insensitive", 0.2)])
def test_regressor_with_an_intercept_is_linear_svr(loss, epsilon):
    """SDCARegressor(loss, epsilon, C, intercept_scaling) and LinearSVR(same, dual=True) solve one problem (the
    intercept regularised as a synthetic feature, LIBLINEAR's): the objectives agree to 1e-8 relative."""
    X, y = _diabetes()
    C, s = 0.5, 2.0
    reg = SDCARegressor(loss=loss, epsilon=epsilon, C=C, intercept_scaling=s, tol=1e-11, max_iter=50_000).fit(X, y)
    svr = LinearSVR(loss=loss, epsilon=epsilon, C=C, intercept_scaling=s, dual=loss == "epsilon_insensitive",
                    tol=1e-12, max_iter=1_000_000).fit(X, y)  # the primal Newton (-s 11) for the square, as above

    def objective(coef, intercept):
        r = np.asarray(X @ coef).ravel() + intercept - y
        h = np.maximum(0.0, np.abs(r) - epsilon)
        return C * np.sum(h if loss == "epsilon_insensitive" else h * h) + 0.5 * (coef @ coef + (intercept / s) ** 2)

    ours, theirs = objective(reg.coef_, reg.intercept_), objective(svr.coef_, float(svr.intercept_[0]))
    assert reg.converged_ and ours <= theirs * (1 + 1e-8) and theirs <= ours * (1 + 1e-8)
    back = reg.to_sklearn()
    assert isinstance(back, LinearSVR) and back.get_params()["epsilon"] == epsilon
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))


def test_regressor_passes_its_parameter_to_the_fit():
    """With fit_intercept=False the estimator is daskdca.fit with the loss object of its parameter, bit for bit."""
    X, y = _diabetes()
    n = X.shape[0]
    for params, loss in ((dict(loss="huber", huber_delta=0.7), Huber(delta=0.7)),
                         (dict(loss="epsilon_insensitive", epsilon=0.25), EpsilonInsensitive(epsilon=0.25)),
                         (dict(loss="squared_epsilon_insensitive", epsilon=0.25),
                          SquaredEpsilonInsensitive(epsilon=0.25))):
        reg = SDCARegressor(C=2.0, fit_intercept=False, tol=1e-8, keep_dual=True, **params).fit(X, y)
        model = daskdca.fit(X, y, loss=loss, lam=1.0 / (2.0 * n), tol=1e-8, max_epochs=1000)
        np.testing.assert_array_equal(reg.coef_, model.coef_)
        np.testing.assert_array_equal(reg.dual_coef_, model.dual_coef_)
        assert reg.primal_ == model.primal_
    with pytest.raises(ValueError, match="loss='huber'"):
        SDCARegressor(loss="huber").fit(X, y).to_sklearn()
    for bad in (dict(epsilon=-0.1), dict(huber_delta=0.0), dict(loss="absolute")):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SDCARegressor(**bad).fit(X, y)


@pytest.mark.parametrize("params, match", [
    (dict(loss="huber", epsilon=0.5), r"epsilon=0\.5 is the tube .* loss='huber' does not have; Huber's threshold is "
                                      r"huber_delta .*: use huber_delta=0\.5"),
    (dict(loss="squared", epsilon=0.1), r"epsilon=0\.1 is the tube .* loss='squared' does not have; leave"),
    (dict(loss="epsilon_insensitive", huber_delta=2.0), r"huber_delta=2\.0 is loss='huber''s threshold"),
])
def test_regressor_refuses_a_parameter_its_loss_does_not_use(params, match):
    """``epsilon`` with Huber (scikit-learn's SGDRegressor reads it as Huber's threshold) or the squared loss, and
    ``huber_delta`` with another loss, were silently ignored."""
    X, y = _diabetes()
    with pytest.raises(ValueError, match=match):
        SDCARegressor(**params).fit(X, y)


def test_regressor_warm_start_projects_the_previous_duals_onto_the_new_box():
    """A refit with a smaller Huber delta starts from the previous duals clipped to [-delta, delta]."""
    X, y = _diabetes()
    reg = SDCARegressor(loss="squared", C=1.0, warm_start=True, tol=1e-9, keep_dual=True).fit(X, y)
    assert np.max(np.abs(reg.dual_coef_)) > 0.4
    reg.set_params(loss="huber", huber_delta=0.4).fit(X, y)
    assert reg.converged_ and np.max(np.abs(reg.dual_coef_)) <= 0.4
    cold = SDCARegressor(loss="huber", huber_delta=0.4, C=1.0, tol=1e-9).fit(X, y)
    assert abs(reg.primal_ - cold.primal_) <= 2e-9 * abs(cold.primal_)


# --- what the other methods say ----------------------------------------------------------------------------------

def test_methods_that_cannot_take_the_losses_say_so():
    X, y = _diabetes()
    lam = 1e-2
    for loss in ("epsilon_insensitive", "squared_epsilon_insensitive", "huber"):
        with pytest.raises(ValueError, match=rf"solver='sdna' does not support loss='{loss}'.*solvers for '{loss}'"):
            check_supported(SDNA(), loss_name=loss, n_partitions=1, on_cluster=False)
        with pytest.raises(ValueError, match=rf"local_solver='sdna'.*does not support loss='{loss}'"):
            daskdca.fit(X, y, loss=loss, lam=lam, solver=CoCoAPlus(local_solver="sdna"), n_partitions=2)
        for solver in ("newton", "pegasos"):
            with pytest.raises(ValueError, match=rf"solver='{solver}' does not support loss='{loss}'"):
                daskdca.fit(X, y, loss=loss, lam=lam, solver=solver)
    with pytest.raises(ValueError, match=r"solver='spdc' does not support loss='epsilon_insensitive'"):
        daskdca.fit(X, y, loss="epsilon_insensitive", lam=lam, solver="spdc")
    with pytest.raises(ValueError, match=r"local_solver='spdc' needs a smooth loss.*'epsilon_insensitive'"):
        daskdca.fit(X, y, loss="epsilon_insensitive", lam=lam, solver=CoCoAPlus(local_solver="spdc"),
                    n_partitions=2)
    with pytest.raises(ValueError, match=r"does not support loss='epsilon_insensitive'"):
        daskdca.fit(X, y, loss="epsilon_insensitive", lam=lam, solver="dfsdca")


def test_dual_init_outside_the_box_is_refused_with_the_row():
    X, y = _diabetes()
    n = X.shape[0]
    start = np.zeros(n)
    start[7] = 1.5
    with pytest.raises(ValueError, match=r"infeasible for the epsilon_insensitive loss at row 7: alpha_i = 1.5 must "
                                         r"lie in \[-1, 1\]"):
        daskdca.fit(X, y, loss="epsilon_insensitive", lam=1e-2, dual_init=start)
    with pytest.raises(ValueError, match=r"huber loss at row 7.*\[-0.5, 0.5\]"):
        daskdca.fit(X, y, loss=Huber(delta=0.5), lam=1e-2, dual_init=start)
    warm = daskdca.fit(X, y, loss="squared_epsilon_insensitive", lam=1e-2, dual_init=start, tol=1e-8)
    assert warm.converged_  # every real is feasible for the squared tube


def test_regression_losses_refuse_class_labels_and_targets_go_through():
    X, y = _diabetes()
    with pytest.warns(ConvergenceWarning):
        daskdca.fit(X, y, loss="huber", lam=1e-3, max_rounds=1, tol=1e-14)
    with pytest.raises(TypeError, match="The huber loss needs numeric targets"):
        daskdca.fit(X, np.array(["a", "b"] * 221, dtype=object).astype(str), loss="huber", lam=1e-2)
