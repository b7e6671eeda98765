"""The elastic net in mini-batch SDCA (``MinibatchSDCA(l1_ratio=rho)``, proximal mini-batch steps).

``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``: one
round of the kernels against a NumPy reference on the same batch (and a fit's
rounds against it on the batches the fit draws); on a9a's first 5000 rows
the certified optimum of serial ``SDCA(l1_ratio=rho)`` and its zeros; the
certificate recomputed here from ``coef_`` and ``dual_coef_``;
``l1_ratio = 0`` is the L2 code bit for bit; what the option refuses.  On the cluster
and out of core: the contract tests' variant ``minibatch_sdca(elastic net)``.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.kernels.prox_sdca import prox_minibatch_sdca_rounds, soft_threshold_vector
from daskdca.kernels.sampling import minibatch_indices
from daskdca.kernels.sdca import minibatch_sdca
from daskdca.losses import get_loss
from daskdca.methods import SDCA, MinibatchSDCA
from daskdca.methods.minibatch import MinibatchPlan, ProxMinibatchPlan
from daskdca.partitions import UNWEIGHTED

import reference_kernels as ref
import reference_prox_sdca as refp
from conftest import load_dataset, signed_labels

LOSS_NAMES = ["hinge", "smoothed_hinge", "squared_hinge", "logistic", "squared"]


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def reference_round(X, y, alpha, v, batch, q, loss, lam_n, threshold):
    """One proximal mini-batch round in NumPy: every row of ``batch`` steps from the margins at
    ``w = soft_threshold(v, c)`` with curvature ``q_i``, then ``v += X_B^T delta / lam_n``."""
    alpha, v = alpha.copy(), v.copy()
    w = refp.soft_threshold(v, threshold)
    margins = np.asarray(X[batch] @ w).ravel()
    new = np.array([ref.dual_update(loss, y[i], alpha[i], q[i], m) for i, m in zip(batch, margins)])
    v = v + np.asarray(X[batch].T @ (new - alpha[batch])).ravel() / lam_n
    alpha[batch] = new
    return alpha, v, refp.soft_threshold(v, threshold)


def _problem(loss_name):
    X, _ = load_dataset("a9a")
    X = sp.csr_matrix(X[:400])
    rng = np.random.default_rng(1)
    y = rng.normal(size=X.shape[0]) if loss_name == "squared" else rng.choice([-1.0, 1.0], X.shape[0])
    return X, y


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_one_round_matches_the_reference(loss_name):
    """One round from a non-zero ``(alpha, v)``: the fused kernel and the partition step (:func:`minibatch_sdca`
    into a zero ``dv``, then ``v + dv`` and the soft threshold) give the same bits, and the NumPy reference the
    same bits for the closed-form losses, and to 1e-12 for logistic (its step is the reference's own Newton solve)."""
    X, y = _problem(loss_name)
    loss = get_loss(loss_name)
    n, d = X.shape
    lam_n, threshold, beta = 0.02 * n, 0.1, 3.0
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    q = beta * sqnorm / lam_n
    rng = np.random.default_rng(2)
    v0 = rng.normal(scale=0.2, size=d)
    alpha0 = np.zeros(n)
    if loss_name != "squared":  # a feasible non-zero start: y_i alpha_i in [0, 1] (squared: any alpha)
        alpha0[::3] = 0.5 * y[::3]
    else:
        alpha0[::3] = rng.normal(size=alpha0[::3].shape[0])
    batch = minibatch_indices(5, 0, 0, n, 40, 0)

    a1, v1, w1 = alpha0.copy(), v0.copy(), soft_threshold_vector(v0, threshold)
    steps = prox_minibatch_sdca_rounds(X.indptr, X.indices, X.data, y, UNWEIGHTED, q, a1, v1, w1, batch[None, :],
                                       int(loss.kind), loss.param, lam_n, threshold, np.zeros(d))
    assert steps == batch.shape[0]

    a2, dv = alpha0.copy(), np.zeros(d)
    minibatch_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, q, a2, soft_threshold_vector(v0, threshold), dv,
                   batch[None, :], int(loss.kind), loss.param, lam_n)
    v2 = v0 + dv
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(w1, soft_threshold_vector(v2, threshold))

    ra, rv, rw = reference_round(X, y, alpha0, v0, batch, q, loss_name, lam_n, threshold)
    if loss_name != "logistic":  # closed-form steps: the same bits (logistic: the two Newton solves differ by ~5e-16)
        np.testing.assert_array_equal(a1, ra)
        np.testing.assert_array_equal(v1, rv)
    assert _rel_err(a1, ra) <= 1e-12
    assert _rel_err(v1, rv) <= 1e-12
    assert _rel_err(w1, rw) <= 1e-12
    np.testing.assert_array_equal(w1 == 0.0, rw == 0.0)
    assert (w1 == 0.0).any() and (w1 != 0.0).any()
    assert not np.array_equal(a1, alpha0)


@pytest.mark.parametrize("loss_name", ["squared_hinge", "logistic"])
def test_fit_rounds_match_the_reference_on_the_same_batches(loss_name):
    """A fit's rounds (one partition: the fused kernel) replayed in NumPy on the batches it draws."""
    X, y = _problem(loss_name)
    n = X.shape[0]
    lam, rho, b, rounds, seed = 1e-2, 0.5, 8, 60, 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = daskdca.fit(X, y, loss=loss_name, lam=lam, tol=0.0, max_rounds=rounds, n_partitions=1, random_state=seed,
                        solver=MinibatchSDCA(l1_ratio=rho, batch_size=b, eso="spectral", shrinking=False))
    plan = m.plan_
    assert isinstance(plan, ProxMinibatchPlan)
    lam_n, threshold = lam * (1.0 - rho) * n, rho / (1.0 - rho)
    assert plan.lam_n == lam_n and plan.threshold == threshold and plan.l1_ratio == rho
    q = plan.betas[0] * np.asarray(X.multiply(X).sum(axis=1)).ravel() / lam_n
    alpha, v = np.zeros(n), np.zeros(X.shape[1])
    for r in range(rounds):
        alpha, v, w = reference_round(X, y, alpha, v, minibatch_indices(seed, r, 0, n, b, 0), q, loss_name, lam_n,
                                      threshold)
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    np.testing.assert_array_equal(ys, y)
    assert _rel_err(np.ravel(m.dual_coef_), alpha) <= 1e-10
    assert _rel_err(np.ravel(m.coef_), w) <= 1e-10
    assert (w == 0.0).any()


# --- fits on real data ------------------------------------------------------------------------------------------

def _check_certificate(model, X, y, lam, rho, loss, tol):
    """``P(w) - D(alpha)`` recomputed in NumPy from ``dual_coef_`` and ``coef_``: the model's gap, within ``tol``."""
    alpha = np.asarray(model.dual_coef_, dtype=np.float64).ravel()
    w = np.ravel(model.coef_)
    primal_w = refp.elastic_net_primal(X, y, w, lam, rho, loss)
    primal, dual, w_alpha = refp.elastic_net_certificate(X, y, alpha, lam, rho, loss)
    np.testing.assert_allclose(w, w_alpha, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(w == 0.0, w_alpha == 0.0)
    assert abs(primal_w - model.primal_) <= 1e-11 * abs(primal_w)
    assert abs(dual - model.dual_) <= 1e-11 * abs(primal_w)
    assert abs((primal_w - dual) - model.gap_) <= 1e-11 * abs(primal_w)
    assert -1e-12 * abs(primal_w) <= primal_w - dual <= tol * abs(primal_w)
    return primal_w


@pytest.mark.parametrize("loss_name", ["logistic", "squared_hinge"])
def test_reaches_the_serial_optimum_and_its_zeros(a9a_5k, loss_name):
    X, y = a9a_5k
    lam, rho, tol = 1e-3, 0.5, 1e-6
    model = daskdca.fit(X, y, loss=loss_name, lam=lam, solver=MinibatchSDCA(l1_ratio=rho), tol=tol)
    assert isinstance(model.plan_, ProxMinibatchPlan)
    assert model.converged_ and model.gap_ <= tol * abs(model.primal_)
    ys = signed_labels(model, y)
    primal = _check_certificate(model, X, ys, lam, rho, loss_name, tol)
    serial = daskdca.fit(X, y, loss=loss_name, lam=lam, solver=SDCA(l1_ratio=rho), tol=1e-10)
    assert abs(primal - serial.primal_) <= 1e-6 * abs(serial.primal_)
    # the zeros: the same, but for coordinates whose serial v_j lies within 1e-8 of the threshold c
    lam_prime, c = lam * (1.0 - rho), rho / (1.0 - rho)
    v = np.asarray(X.T @ np.ravel(serial.dual_coef_)).ravel() / (lam_prime * X.shape[0])
    differ = (np.ravel(model.coef_) == 0.0) != (np.ravel(serial.coef_) == 0.0)
    assert np.all(np.abs(np.abs(v[differ]) - c) <= 1e-8)
    assert (serial.coef_ == 0.0).any() and (serial.coef_ != 0.0).any()


# the squared hinge with -m slow (7.6 s; the logistic case runs the same rounds)
@pytest.mark.parametrize("loss_name", ["logistic", pytest.param("squared_hinge", marks=pytest.mark.slow)])
def test_two_partitions_reach_the_serial_optimum(loss_name):
    """Two in-process partitions (the partition step and the combine, not the fused kernel)."""
    X, y = load_dataset("heart")
    lam, rho, tol = 1e-2, 0.5, 1e-8
    model = daskdca.fit(X, y, loss=loss_name, lam=lam, solver=MinibatchSDCA(l1_ratio=rho), tol=tol, n_partitions=2)
    assert model.converged_ and model.plan_.n_partitions == 2
    primal = _check_certificate(model, X, signed_labels(model, y), lam, rho, loss_name, tol)
    serial = daskdca.fit(X, y, loss=loss_name, lam=lam, solver=SDCA(l1_ratio=rho), tol=1e-10)
    assert abs(primal - serial.primal_) <= 2 * tol * abs(serial.primal_)
    np.testing.assert_array_equal(model.coef_ == 0.0, serial.coef_ == 0.0)
    assert (serial.coef_ == 0.0).any()


def test_warm_start_and_naive_step():
    """``dual_init`` (``v = X^T alpha0 / (lam' n)``) and ``step='naive'`` with ``batch_size=1`` (serial steps)."""
    X, y = load_dataset("heart")
    rho, tol = 0.5, 1e-8
    first = daskdca.fit(X, y, loss="logistic", lam=3e-2, solver=MinibatchSDCA(l1_ratio=rho), tol=tol)
    cold = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=MinibatchSDCA(l1_ratio=rho), tol=tol)
    warm = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=MinibatchSDCA(l1_ratio=rho), tol=tol,
                       dual_init=first.dual_coef_)
    _check_certificate(warm, X, signed_labels(warm, y), 1e-2, rho, "logistic", tol)
    assert abs(warm.primal_ - cold.primal_) <= 2 * tol * abs(cold.primal_)
    assert warm.n_rounds_ < cold.n_rounds_
    with pytest.warns(UserWarning, match="step='safe'"):
        naive = MinibatchSDCA(l1_ratio=rho, step="naive", batch_size=1)
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=naive, tol=tol)
    assert model.converged_
    _check_certificate(model, X, signed_labels(model, y), 1e-2, rho, "logistic", tol)


@pytest.mark.parametrize("n_partitions", [1, 2])
def test_l1_ratio_zero_is_the_l2_code_bit_for_bit(n_partitions):
    X, y = load_dataset("heart")
    kwargs = dict(loss="squared_hinge", lam=1e-2, tol=1e-6, n_partitions=n_partitions)
    plain = daskdca.fit(X, y, solver=MinibatchSDCA(), **kwargs)
    zero = daskdca.fit(X, y, solver=MinibatchSDCA(l1_ratio=0.0), **kwargs)
    assert type(zero.plan_) is MinibatchPlan and type(plain.plan_) is MinibatchPlan
    np.testing.assert_array_equal(zero.coef_, plain.coef_)
    np.testing.assert_array_equal(zero.dual_coef_, plain.dual_coef_)
    assert [(r.primal, r.dual) for r in zero.history_] == [(r.primal, r.dual) for r in plain.history_]
    assert MinibatchSDCA(l1_ratio=0.0).capabilities == MinibatchSDCA.capabilities


# --- what the elastic net refuses ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(l1_ratio=1.0), "l1_ratio=1.*L1SDCA.*penalty='l1'"),
    (dict(l1_ratio=1), "l1_ratio=1.*daskdca.l1"),
    (dict(l1_ratio=1.5), r"in \[0, 1\)"),
    (dict(l1_ratio=-0.1), r"in \[0, 1\)"),
    (dict(l1_ratio=float("nan")), r"in \[0, 1\)"),
    (dict(l1_ratio=True), r"in \[0, 1\)"),
    (dict(l1_ratio="0.5"), r"in \[0, 1\)"),
    (dict(l1_ratio=0.5, step="aggressive"), "step='safe'"),
])
def test_bad_l1_ratio_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MinibatchSDCA(**kwargs)


def test_the_elastic_net_runs_where_the_l2_rounds_run():
    """The option keeps every route of mini-batch SDCA (the contract tests run ``MinibatchSDCA(l1_ratio=0.5)``
    on the cluster, in memory and out of core, against the in-process bits, with kills and resumes)."""
    assert MinibatchSDCA(l1_ratio=0.5).capabilities == MinibatchSDCA().capabilities
