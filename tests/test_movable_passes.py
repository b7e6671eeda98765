"""Serial SDCA with shrinking ends a round's passes over the movable rows once they have converged
(``daskdca.kernels.sdca.movable_sdca``): fewer steps, the same optimum, the same certificate, the same bits on a
rerun, and only where its conditions hold; and the auto route's rounds of several passes on small data
(``daskdca.routes.round_passes``) reach the same optimum with the same certificate."""

import numpy as np
import pytest

import daskdca
from daskdca.methods import SDCA, CoCoAPlus

import reference_kernels as ref
from conftest import load_dataset
from references import liblinear, primal_objective

LAM = 1e-3  # C = 1/(lam n) = 0.03 on a9a: few rows movable after the first rounds


@pytest.fixture(scope="module")
def a9a():
    X, y = load_dataset("a9a")
    return X, np.where(y > 0, 1.0, -1.0)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_rounds_end_early_at_liblinears_optimum_with_the_certificate_from_the_duals(a9a, loss):
    X, y = a9a
    tol = 1e-8
    m = daskdca.fit(X, y, loss=loss, lam=LAM, solver="sdca", tol=tol, n_jobs=1)
    assert m.converged_
    if loss == "hinge":  # squared hinge leaves more than half the rows movable here: no round can end early
        assert m.n_epochs_ < 0.8 * m.n_rounds_
    _assert_certified_at_liblinears_optimum(X, y, m, LAM, loss, tol)


def _assert_certified_at_liblinears_optimum(X, y, m, lam, loss, tol):
    """The gap recomputed in NumPy from the returned duals within ``tol``, as reported, and LIBLINEAR's optimum
    between the dual and the primal."""
    dual, _ = ref.dual_objective(X, y, m.dual_coef_, lam, loss)
    primal = primal_objective(X, y, m.coef_, lam, loss)
    assert 0 <= primal - dual <= tol * primal
    assert m.gap_ == pytest.approx(primal - dual, rel=1e-6, abs=1e-15)
    _, p_liblinear = liblinear(X, y, lam, loss)
    assert dual <= p_liblinear * (1 + 1e-12) and primal - p_liblinear <= tol * primal


def test_a_rerun_gives_the_same_bits(a9a):
    X, y = a9a
    first = daskdca.fit(X, y, loss="hinge", lam=LAM, solver="sdca", tol=1e-6, n_jobs=1, random_state=3)
    second = daskdca.fit(X, y, loss="hinge", lam=LAM, solver="sdca", tol=1e-6, n_jobs=1, random_state=3)
    assert first.n_epochs_ < first.n_rounds_
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)
    assert first.n_epochs_ == second.n_epochs_


@pytest.mark.parametrize("solver, n_partitions", [(SDCA(shrinking=False), 1), (SDCA(sampling="iid"), 1),
                                                  (CoCoAPlus(acceleration=None), 2),
                                                  (SDCA(acceleration="catalyst", kappa=LAM), 1)])
def test_without_shrinking_permutations_or_one_partition_or_inside_catalyst_every_round_takes_all_its_steps(
        a9a, solver, n_partitions):
    X, y = a9a
    m = daskdca.fit(X, y, loss="hinge", lam=LAM, solver=solver, n_partitions=n_partitions, tol=1e-4, n_jobs=1)
    assert m.n_rounds_ > 1
    assert m.n_epochs_ == pytest.approx(m.n_rounds_, rel=1e-3)


def test_the_one_worker_route_ends_rounds_as_this_process_does(a9a):
    """On a cluster the whole serial fit runs on one worker: the same early ends, the same bits."""
    distributed = pytest.importorskip("distributed")
    X, y = a9a
    here = daskdca.fit(X, y, loss="hinge", lam=LAM, tol=1e-6, n_jobs=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        there = daskdca.fit(X, y, loss="hinge", lam=LAM, tol=1e-6, client=client)
    assert there.route_.name == "one_worker" and here.n_epochs_ < here.n_rounds_
    assert (there.n_rounds_, there.n_epochs_) == (here.n_rounds_, here.n_epochs_)
    np.testing.assert_array_equal(there.coef_, here.coef_)
    np.testing.assert_array_equal(there.dual_coef_, here.dual_coef_)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_small_data_rounds_of_several_passes_reach_liblinears_optimum_with_the_certificate_from_the_duals(loss):
    """The auto route's rounds of several passes on small data (routes.round_passes): heart, 270 rows."""
    X, y = load_dataset("heart")
    y = np.where(y > 0, 1.0, -1.0)
    lam, tol = 1e-2, 1e-8  # lam n = 2.7: plain SDCA (no Newton, no Catalyst)
    m = daskdca.fit(X, y, loss=loss, lam=lam, tol=tol)
    assert m.converged_ and m.route_.options["local_iters"] > 1
    _assert_certified_at_liblinears_optimum(X, y, m, lam, loss, tol)
