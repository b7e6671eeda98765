"""The primal Newton method: kernels against the NumPy reference, rounds against reference Newton rounds, and
fits against LIBLINEAR (through scikit-learn) and L-BFGS with the gap recomputed from the returned duals.

The contract (same bits in process and on a cluster, kills, resume) is ``tests/test_method_contract.py``'s,
which runs every registered method.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

import daskdca
from daskdca.driver import fit_in_process
from daskdca.kernels.newton import (
    cholesky_solve,
    dual_point,
    ladder_loss_sums,
    newton_sums,
    newton_system,
    packed_size,
)
from daskdca.losses import SmoothedHinge, get_loss
from daskdca.methods import Newton
from daskdca.methods.newton import LADDER
from daskdca.partitions import rows_from_csr

import reference_kernels as ref
import reference_newton as refn
from conftest import DriverDied, driver_dies_at, load_dataset
from references import lbfgs, liblinear, primal_objective, ridge_closed_form

SMOOTH = ["logistic", "squared", "squared_hinge", "smoothed_hinge"]


def _signed(y):
    return np.where(y == np.unique(y)[1], 1.0, -1.0)


def _loss(name, gamma):
    return SmoothedHinge(gamma) if name == "smoothed_hinge" else get_loss(name)


def _unpack(packed, d):
    H = np.zeros((d, d))
    H[np.triu_indices(d)] = packed
    return H + np.triu(H, 1).T


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("loss", SMOOTH)
def test_kernels_match_the_reference(loss, weighted):
    X, y = load_dataset("a9a")
    X, y = X[:2000], _signed(y[:2000])
    n, d = X.shape
    rng = np.random.default_rng(1)
    w, s = 0.3 * rng.standard_normal(d), 0.3 * rng.standard_normal(d)
    weight = rng.uniform(0.0, 3.0, n) if weighted else None
    gamma = 0.5
    lo_ = _loss(loss, gamma)
    rows = rows_from_csr(X, y, weight)
    kind, param = int(lo_.kind), lo_.param
    # two pieces, as a partition read block by block sends them
    sums, out = np.zeros(2), np.zeros(d + packed_size(d))
    for a, b in ((0, 700), (700, n)):
        assert newton_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, w, a, b, kind, param, sums,
                           out) == b - a
    loss_sum, conj_sum, g, H = refn.newton_sums(X, y, w, loss, weight, gamma)
    assert sums[0] == pytest.approx(loss_sum, rel=1e-12) and sums[1] == pytest.approx(conj_sum, rel=1e-12)
    np.testing.assert_allclose(out[:d], g, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(_unpack(out[d:], d), H, rtol=1e-11, atol=1e-11)
    ladder = np.zeros(len(LADDER))
    ladder_loss_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, w, s, 0, n, kind, param,
                     np.array(LADDER), ladder)
    np.testing.assert_allclose(ladder, refn.ladder_sums(X, y, w, s, loss, weight, gamma), rtol=1e-12)
    alpha = dual_point(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, w, 0, n, kind, param)
    expected = -(np.ones(n) if weight is None else weight) * refn.derivatives(loss, y, X @ w, gamma)
    np.testing.assert_allclose(alpha, expected, rtol=1e-12, atol=1e-15)


def test_cholesky_solve_matches_lapack():
    rng = np.random.default_rng(0)
    d = 40
    A = rng.standard_normal((3 * d, d))
    H = A.T @ A
    packed = H[np.triu_indices(d)]
    M = newton_system(packed, d, 1.0 / 7.0, 1e-3)
    np.testing.assert_array_equal(M, M.T)
    np.testing.assert_allclose(M, H / 7.0 + 1e-3 * np.eye(d), rtol=1e-15)
    b = rng.standard_normal(d)
    x, ok = cholesky_solve(M, b)
    assert ok
    np.testing.assert_allclose(x, np.linalg.solve(M, b), rtol=1e-10)
    _, ok = cholesky_solve(-M, b)
    assert not ok


@pytest.mark.parametrize("loss", SMOOTH)
def test_rounds_match_reference_newton_rounds(loss):
    """The point every round hands on, and the one a fit stopped there returns, on heart with two partitions,
    against ``np.linalg.solve`` Newton with the same acceptance rule and ladder
    (``reference_newton.newton_points``)."""
    X, y = load_dataset("heart")
    ys = _signed(y)
    lam, gamma = 1e-3, 0.5
    expected = refn.newton_points(X, ys, lam, loss, 6, gamma=gamma)
    returned = refn.newton_points(X, ys, lam, loss, 6, gamma=gamma, returned=True)
    for rounds in range(1, 7):
        result = fit_in_process(Newton(), X, ys, loss=_loss(loss, gamma), lam=lam, n_partitions=2, random_state=0,
                                tol=0.0, max_rounds=rounds)
        np.testing.assert_allclose(result.global_state.w, expected[rounds - 1], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(result.w, returned[rounds - 1], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("gamma", [1.0, 0.5])
def test_a_flat_generalised_hessian_backtracks_past_the_ladder(gamma, monkeypatch):
    """The smoothed hinge at ``w = 0`` has every margin in its linear piece: its generalised Hessian is ``0``
    and the first Newton step ``-grad P / lam`` is so long at lam 1e-7 that no step of the ladder
    ``1 .. 2^-20`` decreases ``P``.  The backtracking goes on from ``2^-21`` (it went back to ``w = 0`` and
    failed the same way every round, ending at the budget with ``coef_ = 0``): the rounds' points match the
    NumPy reference's, and the fit certifies L-BFGS's optimum, also through the estimator (gamma 1, its smoothed hinge)."""
    from daskdca.methods.newton import NewtonPlan

    X, y = load_dataset("heart")
    ys = _signed(y)
    lam, loss = 1e-7, SmoothedHinge(gamma=gamma)
    expected = refn.newton_points(X, ys, lam, "smoothed_hinge", 8, gamma=gamma)
    returned = refn.newton_points(X, ys, lam, "smoothed_hinge", 8, gamma=gamma, returned=True)
    for rounds in range(1, 9):
        result = fit_in_process(Newton(), X, ys, loss=loss, lam=lam, n_partitions=2, random_state=0, tol=0.0,
                                max_rounds=rounds)
        np.testing.assert_allclose(result.global_state.w, expected[rounds - 1], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(result.w, returned[rounds - 1], rtol=1e-8, atol=1e-10)
    shorter, calls = NewtonPlan._shorter, []
    monkeypatch.setattr(NewtonPlan, "_shorter", lambda plan, state: calls.append(1) or shorter(plan, state))
    model = daskdca.fit(X, y, loss=loss, lam=lam, solver="newton", tol=1e-10)
    assert calls and model.converged_
    primal, dual = _check_certificate(model, X, ys, lam, "smoothed_hinge", gamma)
    _, p_ref = lbfgs(X, ys, lam, "smoothed_hinge", gamma=gamma)
    assert abs(primal - p_ref) <= 1e-8 * p_ref
    if gamma == 1.0:  # the estimators' smoothed hinge
        clf = daskdca.SDCAClassifier(loss="smoothed_hinge", C=1.0 / (lam * X.shape[0]), fit_intercept=False)
        clf.fit(X, y)
        assert clf.route_.solver == "newton" and np.all(clf.converged_)
        assert abs(float(np.ravel(clf.primal_)[0]) - p_ref) <= 1e-6 * p_ref


def test_a_fit_stopped_by_its_budget_returns_a_point_the_line_search_accepts():
    """A round hands on the full Newton step from the accepted point, untested until the next round.  A fit
    stopped by its budget returned that point, however bad: on breast cancer (standardised, squared hinge,
    C = 1e6) 19 rounds gave ``P = 667.8`` where 18 gave 0.0119 and ``w = 0`` gives 1.  It now returns it only
    where Armijo's test accepts it, else the accepted point: the points against the NumPy reference, the
    certified ``P`` never rising with the budget, the rounds' own points unchanged (a longer or resumed fit
    goes on from them), and the certificate from the returned duals."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = sp.csr_matrix((X - X.mean(axis=0)) / X.std(axis=0))
    ys = _signed(y)
    lam, loss, rounds = 1.0 / (1e6 * X.shape[0]), "squared_hinge", 24
    returned = refn.newton_points(X, ys, lam, loss, rounds, returned=True)
    handed_on = refn.newton_points(X, ys, lam, loss, rounds)
    assert sum(not np.array_equal(a, b) for a, b in zip(returned, handed_on)) >= 3  # the case arises
    primals = []
    for r in range(1, rounds + 1):
        seen = []
        result = fit_in_process(Newton(), X, ys, loss=get_loss(loss), lam=lam, n_partitions=2, random_state=0,
                                tol=0.0, max_rounds=r, callback=lambda record, state: seen.append(state.w))
        np.testing.assert_allclose(result.w, returned[r - 1], rtol=1e-8, atol=1e-10)
        np.testing.assert_array_equal(seen[-1], result.w)  # the last record's state is the one returned
        np.testing.assert_allclose(result.global_state.w, handed_on[r - 1], rtol=1e-8, atol=1e-10)
        assert result.primal == pytest.approx(primal_objective(X, ys, result.w, lam, loss), rel=1e-12)
        dual, _ = ref.dual_objective(X, ys, result.alpha, lam, loss)
        assert result.dual == pytest.approx(dual, rel=1e-12)
        primals.append(result.primal)
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(primals, primals[1:]))  # rounding at P*
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = daskdca.SDCAClassifier(loss=loss, C=1e6, max_iter=19).fit(X, y)
    assert clf.route_.solver == "newton" and float(np.ravel(clf.primal_)[0]) < 0.02


@pytest.mark.parametrize("rounds", ["resident", "tasks"])
def test_a_budget_stop_returns_the_same_point_on_the_cluster(rounds, fault_client):
    """The accepted point a budget stop returns (round 11 of the case above) comes back bit for bit from the
    cluster's rounds, both mechanisms (the executors' ``hold``)."""
    import dask
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = sp.csr_matrix((X - X.mean(axis=0)) / X.std(axis=0))
    kwargs = {"loss": "squared_hinge", "lam": 1.0 / (1e6 * X.shape[0]), "solver": "newton", "n_partitions": 2,
              "tol": 0.0, "max_rounds": 11}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        here = daskdca.fit(X, y, **kwargs)
        with dask.config.set({"daskdca.rounds": rounds}):
            there = daskdca.fit(X, y, client=fault_client, **kwargs)
    assert there.route_.name == "rounds"
    expected = refn.newton_points(X, _signed(y), kwargs["lam"], "squared_hinge", 11, returned=True)[-1]
    handed_on = refn.newton_points(X, _signed(y), kwargs["lam"], "squared_hinge", 11)[-1]
    assert not np.allclose(expected, handed_on)  # round 11 ends on a point the test rejects
    np.testing.assert_allclose(here.coef_, expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(there.coef_, here.coef_)
    np.testing.assert_array_equal(there.dual_coef_, here.dual_coef_)
    assert there.primal_ == here.primal_ and there.dual_ == here.dual_


def _check_certificate(model, X, ys, lam, loss, gamma=1.0):
    """``P(coef_) - D(dual_coef_)`` recomputed here, with ``w(alpha)`` rebuilt from the duals."""
    dual, _ = ref.dual_objective(X, ys, model.dual_coef_, lam, loss, gamma)
    primal = primal_objective(X, ys, model.coef_, lam, loss, gamma)
    assert model.primal_ == pytest.approx(primal, rel=1e-12) and model.dual_ == pytest.approx(dual, rel=1e-12)
    return primal, dual


@pytest.mark.parametrize("C", [1.0, 100.0])
def test_a9a_logistic_reaches_liblinear_in_tens_of_rounds(C):
    X, y = load_dataset("a9a")
    ys = _signed(y)
    n = X.shape[0]
    lam = 1.0 / (C * n)
    model = daskdca.fit(X, y, loss="logistic", lam=lam, solver="newton", tol=1e-8)
    assert model.converged_ and model.n_rounds_ <= 30
    primal, dual = _check_certificate(model, X, ys, lam, "logistic")
    assert -1e-14 * primal <= primal - dual <= 1e-8 * primal
    _, p_ref = liblinear(X, ys, lam, "logistic")
    assert abs(primal - p_ref) <= 1e-8 * p_ref


def test_liblinear_optimum_on_heart_and_the_smooth_losses():
    X, y = load_dataset("heart")
    ys = _signed(y)
    lam = 1.0 / (100.0 * X.shape[0])
    for loss, reference in [("logistic", liblinear), ("squared_hinge", liblinear), ("smoothed_hinge", lbfgs)]:
        model = daskdca.fit(X, y, loss=loss, lam=lam, solver="newton", tol=1e-10, n_partitions=3)
        assert model.converged_, loss
        primal, dual = _check_certificate(model, X, ys, lam, loss)
        assert -1e-14 * primal <= primal - dual <= 1e-10 * primal  # a converged gap may round below 0
        _, p_ref = reference(X, ys, lam, loss)
        assert abs(primal - p_ref) <= 1e-8 * p_ref, loss


def test_squared_loss_is_the_closed_form():
    X, _ = load_dataset("heart")
    target = np.asarray(X @ np.linspace(-1, 1, X.shape[1])).ravel() + 0.1 * np.cos(np.arange(X.shape[0]))
    lam = 1e-4
    model = daskdca.fit(X, target, loss="squared", lam=lam, solver="newton", tol=1e-12)
    w_ref, p_ref = ridge_closed_form(X, target, lam)
    assert model.converged_ and model.n_rounds_ <= 3  # one Newton step is exact for a quadratic
    assert abs(model.primal_ - p_ref) <= 1e-10 * p_ref
    np.testing.assert_allclose(model.coef_, w_ref, rtol=1e-6, atol=1e-8)


def test_sample_weight_is_liblinears_per_instance_c():
    X, y = load_dataset("a9a")
    X, y = X[:5000], y[:5000]
    ys = _signed(y)
    n, C = X.shape[0], 10.0
    lam = 1.0 / (C * n)
    weight = np.random.default_rng(3).uniform(0.0, 2.0, n)
    model = daskdca.fit(X, y, loss="logistic", lam=lam, solver="newton", tol=1e-10, sample_weight=weight,
                        n_partitions=2)
    assert model.converged_
    z = X @ model.coef_
    primal = float(np.mean(weight * refn.loss_values("logistic", ys, z)) + 0.5 * lam * model.coef_ @ model.coef_)
    alpha = model.dual_coef_
    np.testing.assert_allclose(alpha, -weight * refn.derivatives("logistic", ys, z), rtol=1e-12, atol=1e-15)
    w_alpha = X.T @ alpha / (lam * n)
    dual = float(-np.mean(weight * refn.conjugates("logistic", ys, alpha / weight)) - 0.5 * lam * w_alpha @ w_alpha)
    assert model.primal_ == pytest.approx(primal, rel=1e-12) and model.dual_ == pytest.approx(dual, rel=1e-10)
    assert -1e-14 * primal <= primal - dual <= 1e-10 * primal
    est = LogisticRegression(solver="liblinear", C=C, tol=1e-12, max_iter=100000, fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape), ys,
                sample_weight=weight)
    w_ref = est.coef_.ravel()
    p_ref = float(np.mean(weight * refn.loss_values("logistic", ys, X @ w_ref)) + 0.5 * lam * w_ref @ w_ref)
    assert abs(primal - p_ref) <= 1e-8 * p_ref


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # four rounds, tol=0
def test_one_vs_rest_has_the_bits_of_the_binary_fits():
    from sklearn.datasets import load_iris

    X, labels = load_iris(return_X_y=True)
    X = sp.csr_matrix(X / X.max(axis=0))
    kwargs = {"loss": "logistic", "lam": 1e-3, "solver": "newton", "n_partitions": 2, "tol": 0.0, "max_rounds": 4,
              "random_state": 3}
    joint = daskdca.fit(X, labels, **kwargs)
    for k in range(3):
        binary = daskdca.fit(X, (labels == k).astype(int), **kwargs)
        np.testing.assert_array_equal(joint.coef_[k], binary.coef_)
        np.testing.assert_array_equal(joint.dual_coef_[k], binary.dual_coef_)
        assert [r.gap[k] for r in joint.history_] == [r.gap for r in binary.history_]


def test_what_it_refuses():
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=r"does not support loss='hinge'.*solvers for 'hinge'.*'sdca'"):
        daskdca.fit(X, y, loss="hinge", solver="newton")
    with pytest.raises(ValueError, match=r"at most newton_max_features=10 features, got d=13; use solver='sdca'"):
        daskdca.fit(X, y, loss="logistic", solver=Newton(newton_max_features=10))
    with pytest.raises(ValueError, match="newton_max_features must be a positive int"):
        Newton(newton_max_features=0)


# The contract's fault cases (tests/test_method_contract.py) run 20 rounds at tol=0 with a kill after round 7;
# Newton certifies a gap <= 0 (the optimum to rounding) on heart at lam=1e-2 after 6 rounds and stops there.
# The same faults, within the 4 rounds whose gaps are still positive:
FAULT_LAM, FAULT_ROUNDS, FAULT_CHECKPOINT_EVERY = 1e-2, 4, 2


def _cluster_fit(store, **kwargs):
    return daskdca.fit(store, None, loss="logistic", lam=FAULT_LAM, solver="newton", tol=0.0, n_partitions=2,
                       max_rounds=FAULT_ROUNDS, checkpoint_every=FAULT_CHECKPOINT_EVERY, **kwargs)


@pytest.fixture
def fault_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


@pytest.mark.timeout(180)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_killed_worker_changes_nothing(fault_client, tmp_path):
    import os
    import signal

    from daskdca.store import write_store

    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    undisturbed = _cluster_fit(store, client=fault_client, random_state=3)
    assert all(r.gap > 0 for r in undisturbed.history_) and undisturbed.n_rounds_ == FAULT_ROUNDS
    victim = min(fault_client.run(os.getpid).items())[1]
    killed = []

    def kill_one_worker(record, state):
        if not killed and record.round > FAULT_CHECKPOINT_EVERY:
            assert record.round < FAULT_ROUNDS
            killed.append(victim)
            os.kill(victim, signal.SIGKILL)
        return False

    disturbed = _cluster_fit(store, client=fault_client, random_state=3, callback=kill_one_worker)
    assert killed and disturbed.n_rounds_ == FAULT_ROUNDS
    np.testing.assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)


@pytest.mark.timeout(180)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_killed_driver_resumes_to_the_undisturbed_result(fault_client, tmp_path):
    from daskdca.store import write_store

    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    undisturbed = _cluster_fit(store, client=fault_client, random_state=2, checkpoint=tmp_path / "a")

    die = driver_dies_at(FAULT_ROUNDS // 2)
    with pytest.raises(DriverDied):
        _cluster_fit(store, client=fault_client, random_state=2, checkpoint=tmp_path / "b", callback=die)
    resumed = _cluster_fit(store, client=fault_client, random_state=2, checkpoint=tmp_path / "b", resume=True)
    assert resumed.n_rounds_ == undisturbed.n_rounds_ == FAULT_ROUNDS
    np.testing.assert_array_equal(resumed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)
    assert [r.round for r in resumed.history_] == [r.round for r in undisturbed.history_]


@pytest.mark.parametrize("scale", [1.0, 40.0, 1e4])
def test_the_line_search_takes_the_largest_step_of_the_whole_ladder(scale):
    """The full step is tested on the Newton pass, the ladder's next three steps in a second pass where it fails
    and the rest in a third only where those fail too; the step taken is the largest one meeting Armijo's
    condition over all 21, computed here in plain NumPy.  A direction stretched by ``scale`` makes the first
    steps fail (40: a step from the third pass, t = 1/16; 1e4: one near the ladder's end)."""
    from daskdca.driver import InProcess, in_process_partitions
    from daskdca.methods.base import DataInfo
    from daskdca.methods.newton import ARMIJO_C1, LADDER_FIRST

    X, y = load_dataset("heart")
    lam, loss = 1e-3, get_loss("logistic")
    parts, _ = in_process_partitions(X, y, 1, 0)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=(X.shape[0],), loss=loss, lam=lam,
                    max_column_nnz=X.shape[0])
    executor = InProcess(parts, info, 0)
    plan = executor.setup(Newton())
    G, Ls = executor.init(plan)
    G, Ls, _ = executor.run(plan, G, Ls, 0, 2)  # two rounds: an accepted w that is not zero, and its direction
    assert not G.searching and np.any(G.base) and np.any(G.direction)
    state = G._replace(direction=scale * G.direction, slope=scale * G.slope)
    state = state._replace(w=state.base + state.direction)  # the round's point: the full (stretched) step
    # the reference: every step's objective, the largest step meeting Armijo's condition
    Xd = X.toarray()

    def objective(v):
        return float(np.mean(np.logaddexp(0.0, -y * (Xd @ v)))) + 0.5 * lam * float(v @ v)

    expected, index = state.base, len(LADDER)
    for j, t in enumerate(LADDER):
        trial = state.base + t * state.direction
        if objective(trial) <= objective(state.base) + ARMIJO_C1 * t * state.slope:
            expected, index = trial, j
            break
    for phase in plan.phases():
        L, contribution = phase.local(parts[0], Ls[0], state, executor.ctx(2, 0))
        state, report = phase.combine(state, contribution, executor.ctx(2, -1))
    accepted = state.base if index == 0 else state.w  # a full step is accepted at once, a ladder step next round
    np.testing.assert_allclose(accepted, expected, rtol=1e-12, atol=1e-15)
    passes = 1 if index == 0 else 2 if index < LADDER_FIRST else 3
    assert report.steps == passes * X.shape[0]
    assert (index == 0) == (scale == 1.0) and (scale < 1e4 or passes == 3)
