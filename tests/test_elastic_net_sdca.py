"""The elastic net in serial SDCA and CoCoA+ (proximal SDCA, ``l1_ratio > 0``).

``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``: the
kernel against the NumPy reference on the same rows; the certificate
recomputed here from the returned duals; the optimum against scikit-learn's
elastic net (``LogisticRegression(solver="saga")`` with ``C = 1/(lam n)``,
``ElasticNet`` with ``alpha = lam``), with its zeros; CoCoA+ on two
partitions, in process and on a cluster; ``l1_ratio = 0`` is the L2 code.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, LogisticRegression

import daskdca
from daskdca.kernels.prox_sdca import prox_local_sdca, soft_threshold_vector
from daskdca.kernels.sampling import permutation_order
from daskdca.kernels.sdca import local_sdca
from daskdca.losses import get_loss
from daskdca.methods import SDCA, CoCoAPlus
from daskdca.methods.sdca import LocalSDCAPlan, ProxSDCAPlan
from daskdca.partitions import UNWEIGHTED, random_row_order

import reference_prox_sdca as ref
from conftest import load_dataset, random_sparse, signed_labels

_SKLEARN = tuple(int(part) for part in sklearn.__version__.split(".")[:2])
LOSS_NAMES = ["hinge", "smoothed_hinge", "squared_hinge", "logistic", "squared"]


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def _kernel_problem(data, loss_name):
    if data == "random":
        X = random_sparse(60, 25, 0.2, seed=0, zero_rows=(3, 17))
    else:
        X, _ = load_dataset("a9a")
        X = X[:300]
    rng = np.random.default_rng(1)
    n = X.shape[0]
    y = rng.choice([-1.0, 1.0], n) if loss_name != "squared" else rng.normal(size=n)
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("data", ["random", "a9a"])
@pytest.mark.parametrize("loss_name", LOSS_NAMES)
@pytest.mark.parametrize("sigma", [1.0, 3.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_prox_kernel_matches_reference(data, loss_name, sigma, weighted):
    """Three passes from a non-zero ``v``: alpha, v, w and delta_v to 1e-12, exact zeros where the reference's are."""
    X, y = _kernel_problem(data, loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n, threshold = 0.05 * n, 0.3
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = permutation_order(4, 0, 0, n, 3 * n, 0)
    v0 = np.random.default_rng(2).normal(scale=0.5, size=d)
    weight = np.random.default_rng(3).uniform(0.0, 2.0, n) if weighted else None
    alpha, u, w_u, dv = np.zeros(n), v0.copy(), soft_threshold_vector(v0, threshold), np.zeros(d)
    steps = prox_local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED if weight is None else weight, sqnorm, alpha,
                            u, w_u, dv, order, int(loss.kind), loss.param, lam_n, sigma, threshold, True)
    ra, ru, rw, rdv = ref.prox_local_sdca(X, y, np.zeros(n), v0, np.zeros(d), order, loss_name, lam_n, sigma,
                                          threshold, weight=weight)
    assert steps == 3 * n
    assert _rel_err(alpha, ra) <= 1e-12
    assert _rel_err(u, ru) <= 1e-12
    assert _rel_err(w_u, rw) <= 1e-12
    assert _rel_err(dv, rdv) <= 1e-12
    np.testing.assert_array_equal(w_u == 0.0, rw == 0.0)
    assert (w_u == 0.0).any() and (w_u != 0.0).any()  # the threshold bites and lets through
    # the maintained w is the soft threshold of the maintained v, bit for bit; delta_v is the dual change's
    np.testing.assert_array_equal(w_u, soft_threshold_vector(u, threshold))
    np.testing.assert_allclose(dv, X.T @ alpha / lam_n, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_prox_kernel_at_threshold_zero_is_the_l2_kernel(loss_name):
    """``c = 0``: ``grad g*`` is the identity and the steps are :func:`local_sdca`'s, bit for bit."""
    X, y = _kernel_problem("a9a", loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = permutation_order(5, 0, 0, n, 2 * n, 0)
    a1, u1, dw1 = np.zeros(n), np.zeros(d), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, a1, u1, dw1, order, int(loss.kind), loss.param,
               0.05 * n, 2.0, True)
    a2, u2, w2, dv2 = np.zeros(n), np.zeros(d), np.zeros(d), np.zeros(d)
    prox_local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, a2, u2, w2, dv2, order, int(loss.kind),
                    loss.param, 0.05 * n, 2.0, 0.0, True)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(u1, u2)
    np.testing.assert_array_equal(dw1, dv2)


# --- fits on real data ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def heart():
    return load_dataset("heart")


def _check_certificate(model, X, y, lam, rho, loss, tol):
    """``P(w) - D(alpha)`` recomputed here from ``dual_coef_`` alone (``w = grad g*(X^T alpha / (lam' n))``):
    within ``tol`` relative, equal to the reported gap, and ``w`` equal to the returned ``coef_``."""
    alpha = np.asarray(model.dual_coef_, dtype=np.float64).ravel()
    primal, dual, w = ref.elastic_net_certificate(X, y, alpha, lam, rho, loss)
    assert primal - dual <= tol * abs(primal)
    assert primal - dual >= -1e-12 * abs(primal)
    assert abs(primal - model.primal_) <= 1e-11 * abs(primal)
    assert abs(dual - model.dual_) <= 1e-11 * abs(primal)
    np.testing.assert_allclose(model.coef_.ravel(), w, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(model.coef_.ravel() == 0.0, w == 0.0)
    return primal


def _saga(X, y, lam, rho):
    """scikit-learn's elastic-net logistic regression: ``C sum_i log(1 + exp(-y_i x_i.w)) + (1 - rho)/2 ||w||^2
    + rho ||w||_1``, which is ``n C`` times ours at ``C = 1 / (lam n)``."""
    X32 = sp.csr_matrix(X)
    X32.indices, X32.indptr = X32.indices.astype(np.int32), X32.indptr.astype(np.int32)
    # scikit-learn 1.8 reads the elastic net from l1_ratio alone and deprecates penalty="elasticnet"
    penalty = {} if _SKLEARN >= (1, 8) else {"penalty": "elasticnet"}
    clf = LogisticRegression(solver="saga", l1_ratio=rho, C=1.0 / (lam * X.shape[0]), tol=1e-12, max_iter=100000,
                             fit_intercept=False, **penalty)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X32, y)
    return clf.coef_.ravel()


@pytest.mark.parametrize("data,lam,rho", [("heart", 1e-2, 0.5), ("a9a_5k", 1e-3, 0.8)])
def test_sdca_elastic_net_logistic_matches_saga(data, lam, rho, request):
    X, y = request.getfixturevalue(data)
    tol = 1e-9
    model = daskdca.fit(X, y, loss="logistic", lam=lam, solver=SDCA(l1_ratio=rho), tol=tol)
    assert model.converged_ and model.gap_ <= tol * abs(model.primal_)
    assert isinstance(model.plan_, ProxSDCAPlan)
    ys = signed_labels(model, y)
    primal = _check_certificate(model, X, ys, lam, rho, "logistic", tol)
    w_ref = _saga(X, ys, lam, rho)
    p_ref = ref.elastic_net_primal(X, ys, w_ref, lam, rho, "logistic")
    assert abs(primal - p_ref) <= 1e-6 * abs(p_ref)
    assert primal <= p_ref + tol * abs(p_ref)  # certified to tol: not worse than the reference beyond it
    w = model.coef_.ravel()
    np.testing.assert_array_equal(w == 0.0, w_ref == 0.0)
    assert (w == 0.0).any()
    np.testing.assert_allclose(w, w_ref, atol=1e-4)


def test_sdca_elastic_net_squared_matches_sklearn_elastic_net(heart):
    """``ElasticNet``: ``1/(2n) ||y - Xw||^2 + alpha rho ||w||_1 + alpha (1 - rho)/2 ||w||^2`` is ours with
    ``phi_i(z) = (z - y_i)^2 / 2`` at ``alpha = lam``."""
    X, _ = heart
    n, d = X.shape
    y = X @ np.linspace(-1.0, 1.0, d) + 0.1 * np.random.default_rng(0).normal(size=n)
    lam, rho, tol = 1e-2, 0.5, 1e-10
    model = daskdca.fit(X, y, loss="squared", lam=lam, solver=SDCA(l1_ratio=rho), tol=tol)
    primal = _check_certificate(model, X, y, lam, rho, "squared", tol)
    en = ElasticNet(alpha=lam, l1_ratio=rho, fit_intercept=False, tol=1e-14, max_iter=100000).fit(X.toarray(), y)
    p_ref = ref.elastic_net_primal(X, y, en.coef_, lam, rho, "squared")
    assert abs(primal - p_ref) <= 1e-6 * abs(p_ref)
    np.testing.assert_array_equal(model.coef_.ravel() == 0.0, en.coef_ == 0.0)
    assert (en.coef_ == 0.0).any()


@pytest.mark.parametrize("loss_name", ["hinge", "squared_hinge"])
def test_sdca_elastic_net_certifies_the_hinge_losses(heart, loss_name):
    """The non-smooth and the box-bounded duals (shrinking on): the same certificate from the duals alone."""
    X, y = heart
    tol = 1e-6
    model = daskdca.fit(X, y, loss=loss_name, lam=1e-2, solver=SDCA(l1_ratio=0.7), tol=tol)
    assert model.converged_
    _check_certificate(model, X, signed_labels(model, y), 1e-2, 0.7, loss_name, tol)


def test_cocoa_two_partitions_reach_the_serial_optimum(heart):
    X, y = heart
    lam, rho, tol = 1e-2, 0.5, 1e-9
    serial = daskdca.fit(X, y, loss="logistic", lam=lam, solver=SDCA(l1_ratio=rho), tol=tol)
    cocoa = daskdca.fit(X, y, loss="logistic", lam=lam, solver=CoCoAPlus(l1_ratio=rho), tol=tol, n_partitions=2)
    assert isinstance(cocoa.plan_, ProxSDCAPlan) and cocoa.plan_.sigma_prime == 2.0  # plain CoCoA+, not Catalyst
    ys = signed_labels(cocoa, y)
    primal = _check_certificate(cocoa, X, ys, lam, rho, "logistic", tol)
    assert abs(primal - serial.primal_) <= 2 * tol * abs(primal)
    np.testing.assert_array_equal(cocoa.coef_ == 0.0, serial.coef_ == 0.0)
    np.testing.assert_allclose(cocoa.coef_, serial.coef_, atol=1e-4)
    # the adding bound makes every round dual ascent (module docstring of the plan: Jensen on g*)
    duals = [r.dual for r in cocoa.history_]
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(duals, duals[1:]))


def test_warm_start_from_another_lam(heart):
    """``dual_init``: ``v = X^T alpha0 / (lam' n)`` from the driver's ``X^T alpha0 / (lam n)``; same optimum."""
    X, y = heart
    rho, tol = 0.5, 1e-9
    first = daskdca.fit(X, y, loss="logistic", lam=3e-2, solver=SDCA(l1_ratio=rho), tol=tol)
    cold = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=SDCA(l1_ratio=rho), tol=tol)
    warm = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=SDCA(l1_ratio=rho), tol=tol,
                       dual_init=first.dual_coef_)
    _check_certificate(warm, X, signed_labels(warm, y), 1e-2, rho, "logistic", tol)
    assert abs(warm.primal_ - cold.primal_) <= 2 * tol * abs(cold.primal_)
    assert warm.n_epochs_ < cold.n_epochs_


@pytest.mark.parametrize("solver", [SDCA, lambda **kw: CoCoAPlus(acceleration=None, **kw)])
def test_l1_ratio_zero_is_the_l2_code_bit_for_bit(heart, solver):
    X, y = heart
    kwargs = dict(loss="logistic", lam=1e-2, tol=1e-8, n_partitions=1 if solver is SDCA else 2)
    plain = daskdca.fit(X, y, solver=solver(), **kwargs)
    zero = daskdca.fit(X, y, solver=solver(l1_ratio=0.0), **kwargs)
    assert type(zero.plan_) is type(plain.plan_) and not isinstance(zero.plan_, ProxSDCAPlan)
    assert isinstance(zero.plan_, LocalSDCAPlan)
    np.testing.assert_array_equal(zero.coef_, plain.coef_)
    np.testing.assert_array_equal(zero.dual_coef_, plain.dual_coef_)
    assert [(r.primal, r.dual) for r in zero.history_] == [(r.primal, r.dual) for r in plain.history_]


# --- what the elastic net refuses ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(l1_ratio=1.0), "l1_ratio=1"),
    (dict(l1_ratio=1.5), r"in \[0, 1\)"),
    (dict(l1_ratio=-0.1), r"in \[0, 1\)"),
    (dict(l1_ratio=float("nan")), r"in \[0, 1\)"),
    (dict(l1_ratio=True), r"in \[0, 1\)"),
    (dict(l1_ratio="0.5"), r"in \[0, 1\)"),
    (dict(l1_ratio=0.5, acceleration="catalyst"), "catalyst"),
    (dict(l1_ratio=0.5, aggregation="line_search"), "aggregation='adding'"),
    (dict(l1_ratio=0.5, local_solver="sdna"), "local_solver='sdca'"),
    (dict(l1_ratio=0.5, local_solver="spdc"), "local_solver='sdca'"),
])
def test_bad_combinations_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CoCoAPlus(**kwargs)


def test_sdca_refuses_l1_ratio_one():
    with pytest.raises(ValueError, match="pure L1"):
        SDCA(l1_ratio=1)


def test_more_than_two_classes_are_refused_together(heart):
    """The one-vs-rest plan certifies with ``l1_ratio = 0``: the elastic net is not fitted K problems at once."""
    X, y = heart
    labels = np.arange(X.shape[0]) % 3
    assert not SDCA(l1_ratio=0.5).capabilities.multi_class and SDCA().capabilities.multi_class
    with pytest.raises(ValueError, match="one-vs-rest"):
        daskdca.fit(X, labels, loss="logistic", lam=1e-2, solver=SDCA(l1_ratio=0.5))


# --- on a cluster: the same bits as in process ------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("in_memory", [True, False])
def test_cocoa_elastic_net_in_process_equals_cluster(heart, client, tmp_path, in_memory):
    """Two partitions, rounds on the cluster (in memory, and out of core through the block sweep)."""
    from daskdca.store import write_store

    X, y = heart
    order = random_row_order(X.shape[0], 7)
    store = write_store(tmp_path / "h.zarr", X[order], y[order], block_rows=-(-X.shape[0] // 2), shuffle=False)
    kwargs = dict(loss="logistic", lam=1e-2, solver=CoCoAPlus(l1_ratio=0.5), tol=0.0, max_rounds=30, random_state=7,
                  n_partitions=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        local = daskdca.fit(X, y, **kwargs)
        remote = daskdca.fit(store, None, client=client, in_memory=in_memory, **kwargs)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    np.testing.assert_array_equal(remote.coef_, local.coef_)
    assert (local.coef_ == 0.0).any()
    assert [r.round for r in remote.history_] == [r.round for r in local.history_]
    np.testing.assert_allclose([r.primal for r in remote.history_], [r.primal for r in local.history_], rtol=1e-12)


def test_a_path_over_C_warm_starts_the_elastic_net():
    """daskdca.path with an elastic-net solver object: each C's fit is the cold fit's certified optimum (the same
    zeros), reached in fewer rounds in all than the cold fits."""
    from conftest import load_dataset

    X, y = load_dataset("heart")
    n, Cs = X.shape[0], [0.01, 0.1, 1.0]
    solver = daskdca.SDCA(l1_ratio=0.5)
    res = daskdca.path(X, y, Cs, loss="logistic", solver=solver, tol=1e-10, fit_intercept=False)
    assert res.converged.all() and (res.coef[0] == 0).sum() > (res.coef[-1] == 0).sum()
    cold_rounds = 0
    for c, C in enumerate(Cs):
        cold = daskdca.fit(X, y, loss="logistic", lam=1.0 / (C * n), solver=solver, tol=1e-10)
        cold_rounds += cold.n_rounds_
        assert res.primal[c] == pytest.approx(cold.primal_, rel=1e-9)
        np.testing.assert_array_equal(res.coef[c] == 0, cold.coef_ == 0)
    assert res.n_rounds.sum() < cold_rounds
