"""Mini-batch Pegasos (Takáč et al. 2013 [TBRS13], Algorithm 1) against a NumPy reference, its norm bound, and the cluster.

``MinibatchPegasos`` is not in the registry (the contract test asks every
registered method for a certified relative gap of 1e-5 on logistic heart in
1000 epochs, which a 1/(lam t) subgradient method cannot reach), so these
tests run it through the drivers directly.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from daskdca.driver import fit_in_process
from daskdca.kernels.sampling import minibatch_indices
from daskdca.losses import get_loss
from daskdca.methods.pegasos import MinibatchPegasos
from daskdca.partitions import random_row_order
from daskdca.store import write_store

import reference_kernels as ref
import reference_minibatch_steps as refm
from conftest import load_dataset
from references import lbfgs, primal_objective


def _unit_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / norms) @ X)


def _fit(X, y, method, loss, lam, rounds, seed, n_partitions=1, tol=0.0):
    return fit_in_process(method, X, y, loss=get_loss(loss), lam=lam, n_partitions=n_partitions, random_state=seed,
                          tol=tol, max_rounds=rounds)


def test_bad_options_raise():
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match="Lipschitz loss"):
        _fit(X, y, MinibatchPegasos(), "squared_hinge", 1e-2, 5, 0)
    with pytest.raises(ValueError, match="Unknown averaging 'tail'"):
        MinibatchPegasos(averaging="tail")
    with pytest.raises(ValueError, match="needs horizon=T"):
        MinibatchPegasos(averaging="suffix")
    with pytest.raises(ValueError, match="applies to it only"):
        MinibatchPegasos(horizon=10)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        MinibatchPegasos(batch_size=0)
    with pytest.raises(ValueError, match="more than the 270 rows"):
        _fit(X, y, MinibatchPegasos(batch_size=271), "hinge", 1e-2, 5, 0)


@pytest.mark.parametrize("loss", ["hinge", "logistic", "smoothed_hinge"])
@pytest.mark.parametrize("averaging", ["decay", "last"])
def test_kernel_matches_the_reference_on_the_same_batches(loss, averaging):
    X, y = load_dataset("heart")
    lam, b, rounds, seed = 1e-2, 8, 60, 3
    result = _fit(X, y, MinibatchPegasos(batch_size=b, averaging=averaging), loss, lam, rounds, seed)
    batches = [minibatch_indices(seed, r, 0, X.shape[0], b, 0) for r in range(rounds)]
    iterates, averages = refm.pegasos(X, y, batches, lam, loss, decay=0.9 if averaging == "decay" else 0.0)
    np.testing.assert_allclose(result.global_state.w, iterates[-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.w, averages[-1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("rounds", [41, 60])
def test_suffix_average_is_theorem_1s_average(rounds):
    """``1/(T - floor(T/2)) sum_{t=floor(T/2)+1}^{T} w^(t)``, odd and even T (docs/references.md, note N4)."""
    X, y = load_dataset("heart")
    lam, b, seed = 1e-2, 8, 1
    result = _fit(X, y, MinibatchPegasos(batch_size=b, averaging="suffix", horizon=rounds), "hinge", lam, rounds,
                  seed)
    batches = [minibatch_indices(seed, r, 0, X.shape[0], b, 0) for r in range(rounds)]
    iterates, _ = refm.pegasos(X, y, batches, lam, "hinge")
    # iterates[j] is w^(j+2); the suffix is w^(floor(T/2)+1) .. w^(T)
    expected = np.mean(iterates[rounds // 2 - 1:rounds - 1], axis=0)
    np.testing.assert_allclose(result.w, expected, rtol=1e-10, atol=1e-12)


def test_the_certificate_is_recomputed_from_the_returned_duals():
    X, y = load_dataset("heart")
    lam = 1e-2
    result = _fit(X, y, MinibatchPegasos(batch_size=16), "logistic", lam, 200, 0, n_partitions=2)
    alpha = result.alpha  # in the caller's row order
    z = np.asarray(X @ result.w).ravel()
    np.testing.assert_allclose(alpha, -refm.derivative("logistic", y, z), rtol=1e-12, atol=1e-15)
    dual, _ = ref.dual_objective(X, y, alpha, lam, "logistic")
    assert result.primal == pytest.approx(primal_objective(X, y, result.w, lam, "logistic"), rel=1e-12)
    assert result.dual == pytest.approx(dual, rel=1e-12)
    assert result.gap >= 0.0


def test_expected_squared_norm_obeys_the_theorem_1_bound():
    """[TBRS13] eq. (13): ``E||w^(t)||^2 <= beta_b / (lam^2 b)`` (rows of norm <= 1), over 40 seeds."""
    X, y = load_dataset("heart")
    X = _unit_rows(X)
    lam, b = 0.1, 8
    for rounds in (5, 40):
        norms = []
        for seed in range(40):
            result = _fit(X, y, MinibatchPegasos(batch_size=b, averaging="last"), "hinge", lam, rounds, seed)
            norms.append(float(result.global_state.w @ result.global_state.w))
        bound = result.plan.beta_b / (lam * lam * b)
        assert np.mean(norms) <= bound, (rounds, np.mean(norms), bound)


def test_converges_to_the_lbfgs_optimum_on_a_smooth_loss():
    X, y = load_dataset("heart")
    lam = 1e-2
    _, p_star = lbfgs(X, y, lam, "logistic")
    result = _fit(X, y, MinibatchPegasos(batch_size=64), "logistic", lam, 3000, 0, n_partitions=2)
    assert 0.0 <= result.primal - p_star <= 1e-4 * p_star
    assert result.dual <= p_star + 1e-12 and result.gap <= 1e-3 * result.primal


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("in_memory", [True, False], ids=["in-memory", "out-of-core"])
def test_in_process_equals_cluster_round_by_round(tmp_path, client, in_memory):
    from daskdca import engine
    from daskdca.store import open_store

    X, y = load_dataset("heart")
    K, lam, seed = 2, 1e-2, 7
    order = random_row_order(X.shape[0], seed)
    write_store(tmp_path / "h.zarr", X[order], y[order], block_rows=-(-X.shape[0] // K), shuffle=False)
    method = MinibatchPegasos(batch_size=8, eval_every=10)
    local = _fit(X, y, method, "hinge", lam, 40, seed, n_partitions=K)
    remote = engine.fit_on_cluster(open_store(tmp_path / "h.zarr"), client=client, method=method,
                                   loss=get_loss("hinge"), lam=lam, positive_label=1.0, tol=0.0, max_rounds=40,
                                   random_state=seed, n_partitions=K, in_memory=in_memory, checkpoint=None,
                                   checkpoint_every=15, resume=False, verbose=0, callback=None)
    np.testing.assert_array_equal(remote.w, local.w)
    np.testing.assert_array_equal(remote.alpha, local.alpha[order])
    assert [r.round for r in remote.history] == [r.round for r in local.history]
    np.testing.assert_allclose([r.primal for r in remote.history], [r.primal for r in local.history], rtol=1e-12)
