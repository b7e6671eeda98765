"""Naive and aggressive mini-batch SDCA (Takáč et al. 2013 [TBRS13], §4.1 and Algorithm 2) against NumPy references.

The references (``reference_minibatch_steps.py``) get the batches the fit
draws, ``minibatch_indices(random_state, round, partition, ...)``, and the
iterates are compared; the dual is recomputed from scratch from the duals.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.driver import InProcess, in_process_partitions
from daskdca.kernels.sampling import minibatch_indices
from daskdca.losses import get_loss
from daskdca.methods import MinibatchSDCA
from daskdca.methods.base import DataInfo
from daskdca.problem import max_column_nnz

import reference_kernels as ref
import reference_minibatch_steps as refm
from conftest import load_dataset
from references import liblinear, primal_objective


def clustered(n=400, d=50, clusters=5, noise=0.05, seed=0):
    """Unit-norm rows around a few centres: ``n sigma^2`` about ``n / clusters``, so ``1/sigma^2`` is small."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d))
    labels = rng.integers(clusters, size=n)
    X = centres[labels] + noise * rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 0.5 + 0.4 * (labels % 2), 1.0, -1.0)
    return sp.csr_matrix(X), y


def correlated(n=12, d=3, seed=6):
    """A few unit-norm rows around one direction, where the aggressive step is often refused at lam = 0.1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 2.0 * rng.standard_normal(d)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return sp.csr_matrix(X), np.sign(rng.standard_normal(n))


def _fit(X, y, method, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        return daskdca.fit(X, y, solver=method, **kwargs)


def _naive(**kwargs):
    with pytest.warns(UserWarning, match="step='safe'"):
        return MinibatchSDCA(step="naive", **kwargs)


def _batches(seed, n, tau, rounds):
    return [minibatch_indices(seed, r, 0, n, tau, 0) for r in range(rounds)]


def _executor(X, y, method, loss, lam, n_partitions, seed):
    parts, order = in_process_partitions(X, y, n_partitions, seed)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts),
                    loss=get_loss(loss), lam=lam, max_column_nnz=max_column_nnz(X))
    executor = InProcess(parts, info, seed, order)
    return executor, executor.setup(method)


def test_bad_options_raise():
    with pytest.raises(ValueError, match="Unknown step 'bold'"):
        MinibatchSDCA(step="bold")
    with pytest.raises(ValueError, match="takes eso='auto' only"):
        MinibatchSDCA(step="aggressive", eso="sparse")
    with pytest.raises(ValueError, match="takes eso='auto' only"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            MinibatchSDCA(step="naive", eso="spectral")


def test_naive_warns_and_names_the_safe_step():
    with pytest.warns(UserWarning, match="can diverge.*step='safe'"):
        MinibatchSDCA(step="naive")


def test_naive_with_b1_is_serial_sdca():
    X, y = load_dataset("heart")
    lam, rounds, seed = 1e-2, 300, 3
    m = _fit(X, y, _naive(batch_size=1, shrinking=False), loss="hinge", lam=lam, tol=0.0, max_rounds=rounds,
             n_partitions=1, random_state=seed)
    order = np.concatenate(_batches(seed, X.shape[0], 1, rounds))
    n = X.shape[0]
    alpha, u, _ = ref.local_sdca(X, y, np.zeros(n), np.zeros(X.shape[1]), np.zeros(X.shape[1]), order, "hinge",
                                 lam * n, 1.0)
    np.testing.assert_allclose(m.dual_coef_, alpha, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(m.coef_, u, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_naive_matches_the_reference_on_the_same_batches(loss):
    X, y = clustered()
    lam, rounds, seed, b = 1e-3, 40, 1, 16
    m = _fit(X, y, _naive(batch_size=b, shrinking=False), loss=loss, lam=lam, tol=0.0, max_rounds=rounds,
             n_partitions=1, random_state=seed)
    alpha, w = refm.naive_minibatch_sdca(X, y, _batches(seed, X.shape[0], b, rounds), loss, lam * X.shape[0])
    np.testing.assert_allclose(m.dual_coef_, alpha, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(m.coef_, w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_aggressive_matches_the_reference_on_the_same_batches(loss):
    X, y = correlated()
    # logistic: the reference's Brent root differs from the kernel's Newton root in the last bits, and near
    # the optimum a step whose dual gain is ~1e-16 may then be accepted by one and refused by the other
    lam, rounds, seed, b = 0.1, 40 if loss == "hinge" else 20, 6, 8
    executor, plan = _executor(X, y, MinibatchSDCA(step="aggressive", batch_size=b, shrinking=False), loss, lam,
                               1, seed)
    G, Ls = executor.init(plan)
    betas = []
    for r in range(rounds):
        G, Ls, _ = executor.run(plan, G, Ls, r, 1)
        betas.append(float(G.beta))
    alpha, w, ref_betas, _, accepted = refm.aggressive_sdca(X, y, _batches(seed, X.shape[0], b, rounds), loss,
                                                            lam, plan.beta_b)
    assert 0 < sum(accepted) and (loss != "hinge" or sum(accepted) < rounds)  # hinge: both branches run
    np.testing.assert_allclose(betas, ref_betas, rtol=1e-9)
    np.testing.assert_allclose(executor.dual_points(plan, G, Ls), alpha, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(G.w, w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("n_partitions", [1, 3])
def test_aggressive_keeps_the_invariant_and_never_lowers_the_dual(n_partitions, shrinking):
    """After every round, rejected steps included: ``w = X^T alpha / (lam n)`` and ``D`` does not decrease."""
    X, y = correlated()
    lam, rounds, seed = 0.1, 40, 3
    executor, plan = _executor(X, y, MinibatchSDCA(step="aggressive", batch_size=8, shrinking=shrinking), "hinge",
                               lam, n_partitions, seed)
    perm = executor.row_order if executor.row_order is not None else np.arange(X.shape[0])
    Xp, yp = X[perm], y[perm]
    G, Ls = executor.init(plan)
    dual, rejected = 0.0, 0
    for r in range(rounds):
        G, Ls, _ = executor.run(plan, G, Ls, r, 1)
        alpha = np.concatenate([plan.dual_point(p, L, G) for p, L in zip(executor.parts, Ls)])
        new_dual, w_alpha = ref.dual_objective(Xp, yp, alpha, lam, "hinge")
        np.testing.assert_allclose(G.w, w_alpha, rtol=1e-10, atol=1e-13)
        assert new_dual >= dual - 1e-15 * max(1.0, abs(dual))
        # a rejected step that would have moved some duals
        rejected += float(G.accepted) == 0.0 and any(
            not np.array_equal(L.pending, L.alpha[L.batch]) for L in Ls)
        dual = new_dual
        assert 1.0 <= float(G.beta) <= plan.beta_b and 1.0 <= float(G.rho) <= plan.beta_b
    assert rejected > 0


def _run(X, y, method, loss, lam, rounds, seed=0):
    executor, plan = _executor(X, y, method, loss, lam, 1, seed)
    G, Ls = executor.init(plan)
    for r in range(rounds):
        G, Ls, _ = executor.run(plan, G, Ls, r, 1)
    return executor.dual_points(plan, G, Ls), plan


def test_the_002_toy_naive_oscillates_safe_and_aggressive_solve_it():
    """[TBRS13] §4.1: two identical rows, lam = 1/n = 1/2, b = 2; the optimum is alpha = (0.5, 0.5), D = 0.25.

    The API refuses one class, so the plan runs on the in-process executor directly.
    """
    X, y = sp.csr_matrix(np.ones((2, 1))), np.ones(2)
    for rounds, expected in ((1, 1.0), (2, 0.0), (5, 1.0)):
        alpha, _ = _run(X, y, _naive(batch_size=2, shrinking=False), "hinge", 0.5, rounds)
        np.testing.assert_array_equal(alpha, [expected, expected])
        assert ref.dual_objective(X, y, alpha, 0.5, "hinge")[0] == pytest.approx(0.0, abs=1e-15)
    for method in (MinibatchSDCA(batch_size=2, shrinking=False),
                   MinibatchSDCA(step="aggressive", batch_size=2, shrinking=False)):
        alpha, plan = _run(X, y, method, "hinge", 0.5, 3)
        assert plan.sigma2 == pytest.approx(1.0) and max(plan.betas) == pytest.approx(2.0)
        np.testing.assert_allclose(alpha, [0.5, 0.5], rtol=1e-12)
        assert ref.dual_objective(X, y, alpha, 0.5, "hinge")[0] == pytest.approx(0.25, rel=1e-12)


def test_naive_fails_where_safe_and_aggressive_converge():
    """Clustered rows with b >> 1/sigma^2."""
    X, y = clustered()
    lam, b, rounds = 1e-3, 100, 240  # 60 epochs
    methods = {"naive": _naive(batch_size=b), "safe": MinibatchSDCA(batch_size=b),
               "aggressive": MinibatchSDCA(step="aggressive", batch_size=b)}
    fits = {step: _fit(X, y, method, loss="hinge", lam=lam, tol=0.0, max_rounds=rounds, n_partitions=1,
                       random_state=0) for step, method in methods.items()}
    assert 1.0 / fits["safe"].plan_.sigma2 < b / 4
    assert fits["naive"].gap_ > 10 * fits["safe"].gap_
    assert fits["aggressive"].gap_ < fits["safe"].gap_


@pytest.mark.parametrize("step", ["naive", "aggressive"])
@pytest.mark.parametrize("n_partitions", [1, 2])
def test_converged_hinge_fit_matches_liblinear_with_the_gap_from_the_duals(step, n_partitions):
    X, y = load_dataset("heart")
    lam = 1e-2
    method = _naive(batch_size=4) if step == "naive" else MinibatchSDCA(step=step, batch_size=16)
    m = _fit(X, y, method, loss="hinge", lam=lam, tol=1e-6, n_partitions=n_partitions, random_state=0)
    assert m.converged_
    _, p_star = liblinear(X, y, lam, "hinge")
    dual, w_alpha = ref.dual_objective(X, y, m.dual_coef_, lam, "hinge")
    primal = primal_objective(X, y, w_alpha, lam, "hinge")
    np.testing.assert_allclose(m.coef_, w_alpha, rtol=1e-9, atol=1e-12)
    assert primal - dual <= 1e-6 * primal
    # weak duality bounds LIBLINEAR's objective below by our dual, and our primal is no worse than it
    assert dual <= p_star + 1e-12 and primal <= p_star + 1e-6 * p_star


def test_the_batch_a_round_is_worth():
    """batch_size="round": sqrt(r / sigma^2) rows, r = ROUND_SECONDS / (STORED_VALUE_SECONDS * nnz / n), kept
    between 1/sigma^2 and n; fixed by the data alone."""
    from daskdca.methods.minibatch import ROUND_SECONDS, STORED_VALUE_SECONDS, round_batch

    def info(n, nnz):
        return DataInfo(n=n, d=10, partition_sizes=(n,), loss=None, lam=1e-4, max_column_nnz=1, nnz=nnz)

    r = ROUND_SECONDS / (STORED_VALUE_SECONDS * 13)
    assert round_batch(info(50_000, 13 * 50_000), 6) == round(np.sqrt(r * 6))
    assert round_batch(info(100, 1300), 6) == 100  # never more than the rows
    assert round_batch(info(10**6, 10**9), 5000) == 5000  # never fewer than 1/sigma^2 (sqrt(1000 * 5000) < 5000)
    with pytest.raises(ValueError, match="batch_size must be a positive int or None"):
        MinibatchSDCA(batch_size="rounds")
