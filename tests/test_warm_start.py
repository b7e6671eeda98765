"""Warm starts: ``daskdca.fit(dual_init=...)`` begins at given duals and ``w = X^T alpha / (lam n)``.

References: the cold fit of the same problem (its certified optimum), and
``X^T alpha / (lam n)`` written out with SciPy for the starting ``w``.
"""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.driver import InProcess, in_process_partitions
from daskdca.losses import get_loss
from daskdca.methods import REGISTRY, CoCoAPlus, DataInfo, MinibatchSDCA
from daskdca.problem import max_column_nnz

from conftest import load_dataset

WARM = sorted(name for name, cls in REGISTRY.items() if cls.capabilities.warm_start)
COLD_ONLY = sorted(name for name, cls in REGISTRY.items() if not cls.capabilities.warm_start)


def _a9a_head(n=3000):
    X, y = load_dataset("a9a")
    return X[:n], y[:n]


def test_the_required_methods_support_warm_starts():
    # the methods that must warm-start; a method that drops out must say so here
    assert {"sdca", "cocoa+", "minibatch_sdca", "sdna"} <= set(WARM)


@pytest.mark.parametrize("solver", WARM)
def test_warm_start_at_the_optimum_certifies_at_the_first_evaluation(solver):
    X, y = load_dataset("heart")
    lam = 1e-2
    cold = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=1e-9)
    assert cold.converged_ and cold.n_rounds_ > 1
    warm = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=1e-6, dual_init=cold.dual_coef_)
    # the first gap evaluation (round 1; once an epoch for global mini-batches) already certifies
    assert warm.converged_ and len(warm.history_) == 1
    assert warm.n_rounds_ == max(1, warm.plan_.eval_every) < cold.n_rounds_
    # both primals lie within their certified gaps above P* (Catalyst's cold model is its iterate, the warm
    # start begins at w(alpha), so the two points differ)
    assert abs(warm.primal_ - cold.primal_) <= max(warm.gap_, cold.gap_) + 1e-15 * abs(cold.primal_)


@pytest.mark.parametrize("method", [CoCoAPlus(), CoCoAPlus(aggregation="line_search"),
                                    CoCoAPlus(local_solver="sdna"), CoCoAPlus(local_solver="spdc"),
                                    MinibatchSDCA(step="aggressive"), CoCoAPlus(acceleration=None)],
                         ids=["cocoa+", "cocoa+(line_search)", "cocoa+(sdna)", "cocoa+(spdc)",
                              "minibatch_sdca(aggressive)", "cocoa+(plain)"])
def test_the_start_is_the_given_duals_and_their_w_on_permuted_partitions(method):
    """InProcess.init puts ``dual_init`` (caller's order) into 3 permuted partitions and starts at ``w(alpha)``."""
    X, y = load_dataset("heart")
    n, d = X.shape
    lam = 1e-2
    alpha = y * np.random.default_rng(0).uniform(0, 1, n)  # feasible for logistic: y_i alpha_i in [0, 1]
    parts, order = in_process_partitions(X, y, 3, random_state=5)
    assert order is not None and not np.array_equal(order, np.arange(n))
    info = DataInfo(n=n, d=d, partition_sizes=tuple(p.n_rows for p in parts), loss=get_loss("logistic"), lam=lam,
                    max_column_nnz=max_column_nnz(X))
    ex = InProcess(parts, info, 5, order, dual_init=alpha)
    plan = ex.setup(method)
    G, Ls = ex.init(plan)
    np.testing.assert_allclose(plan.model(G), X.T @ alpha / (lam * n), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(ex.dual_points(plan, G, Ls), alpha)


@pytest.mark.parametrize("loss, C_from, C_to", [("logistic", 0.1, 1.0), ("hinge", 0.03, 0.3)])
def test_warm_start_from_another_C_gives_the_cold_answer_in_fewer_rounds(loss, C_from, C_to):
    """C -> 10 C on 3000 a9a rows: a feasible point at one lam is feasible at any (LIBLINEAR's box).

    Counted over six seeds: on the hinge loss one seed's rounds vary by 2x (136-280 cold rounds for seeds 0-5),
    and a single seed's warm fit can take more rounds than its cold one (seed 1: 176 against 136, and seeds 0
    and 1 since serial SDCA's rounds may end their passes over the movable rows early, which changes the
    starting point the warm fits get); the six warm fits together take 11-14% fewer rounds."""
    X, y = _a9a_head()
    n = X.shape[0]
    lam_from, lam_to = 1.0 / (C_from * n), 1.0 / (C_to * n)
    # solver="sdca" throughout: the rounds of a warm and a cold fit are compared, and solver="auto" would run
    # primal Newton cold (few features, lam n < 2) and SDCA warm
    cold_rounds = warm_rounds = 0
    for seed in range(6):
        start = daskdca.fit(X, y, loss=loss, lam=lam_from, tol=1e-9, solver="sdca", random_state=seed)
        cold = daskdca.fit(X, y, loss=loss, lam=lam_to, tol=1e-9, solver="sdca", random_state=seed)
        warm = daskdca.fit(X, y, loss=loss, lam=lam_to, tol=1e-9, solver="sdca", random_state=seed,
                           dual_init=start.dual_coef_)
        assert cold.converged_ and warm.converged_
        assert abs(warm.primal_ - cold.primal_) <= 1e-8 * abs(cold.primal_)
        cold_rounds, warm_rounds = cold_rounds + cold.n_rounds_, warm_rounds + warm.n_rounds_
    assert warm_rounds < cold_rounds


def test_warm_start_keeps_the_caller_row_order_with_cocoa_partitions():
    """cocoa+ in memory permutes rows into partitions; dual_init and dual_coef_ stay in X's row order."""
    X, y = load_dataset("heart")
    cold = daskdca.fit(X, y, loss="squared_hinge", lam=1e-2, solver="sdca", tol=1e-10)
    warm = daskdca.fit(X, y, loss="squared_hinge", lam=1e-2, solver="cocoa+", n_partitions=3, random_state=7,
                       tol=1e-6, dual_init=cold.dual_coef_)
    assert warm.n_rounds_ == 1 and warm.converged_
    np.testing.assert_allclose(warm.dual_coef_, cold.dual_coef_, atol=1e-4)


def test_regression_warm_start_takes_any_real_duals():
    X, y = load_dataset("heart")
    target = np.asarray(X @ np.linspace(-1, 1, X.shape[1])).ravel()
    cold = daskdca.fit(X, target, loss="squared", lam=1e-3, tol=1e-10)
    warm = daskdca.fit(X, target, loss="squared", lam=1e-3, tol=1e-8, dual_init=-5.0 * np.ones(X.shape[0]))
    assert warm.converged_
    assert abs(warm.primal_ - cold.primal_) <= 1e-7 * abs(cold.primal_)


# --- bad input -----------------------------------------------------------------

def _small():
    X, y = load_dataset("heart")
    return X[:20], y[:20]


def test_wrong_length_raises():
    X, y = _small()
    with pytest.raises(ValueError, match=r"dual_init has shape \(19,\) but X has 20 rows"):
        daskdca.fit(X, y, lam=0.1, dual_init=np.zeros(19))
    with pytest.raises(ValueError, match=r"dual_init has shape \(20, 1\)"):
        daskdca.fit(X, y, lam=0.1, dual_init=np.zeros((20, 1)))


def test_non_finite_names_the_row():
    X, y = _small()
    alpha = np.zeros(20)
    alpha[7] = np.nan
    with pytest.raises(ValueError, match="non-finite value .* at row 7"):
        daskdca.fit(X, y, lam=0.1, dual_init=alpha)
    with pytest.raises(ValueError, match="real numbers"):
        daskdca.fit(X, y, lam=0.1, dual_init=["a"] * 20)


@pytest.mark.parametrize("loss, value, interval", [("hinge", 1.5, r"\[0, 1\]"), ("logistic", -0.25, r"\[0, 1\]"),
                                                   ("smoothed_hinge", 1.0001, r"\[0, 1\]"),
                                                   ("squared_hinge", -1.0, r"\[0, inf\)")])
def test_infeasible_names_the_first_bad_row_and_the_interval(loss, value, interval):
    X, y = _small()
    y_signed = np.where(y > 0, 1.0, -1.0)
    alpha = 0.5 * y_signed
    alpha[[4, 11]] = value * y_signed[[4, 11]]  # y_i alpha_i = value outside the box
    with pytest.raises(ValueError, match=rf"infeasible for the {loss} loss at row 4: y_i \* alpha_i = "
                                         rf"{value!r}.*must lie in {interval} \(2 rows are outside\)"):
        daskdca.fit(X, y, loss=loss, lam=0.1, dual_init=alpha)


def test_the_label_mapping_decides_the_sign():
    """Labels {3, 8}: 8 maps to +1, so a row of class 3 needs alpha_i <= 0."""
    X, y = _small()
    labels = np.where(y > 0, 8, 3)
    alpha = np.where(labels == 8, 0.5, -0.5)
    with pytest.warns(ConvergenceWarning):  # two rounds only: feasible is all this checks
        daskdca.fit(X, labels, lam=0.1, dual_init=alpha, max_rounds=2)
    first3 = int(np.flatnonzero(labels == 3)[0])
    alpha[first3] = 0.5
    with pytest.raises(ValueError, match=rf"at row {first3}: .*label 3 -> y_i = -1"):
        daskdca.fit(X, labels, lam=0.1, dual_init=alpha)


@pytest.mark.parametrize("solver", COLD_ONLY)
def test_a_method_without_warm_starts_raises_and_lists_those_with(solver):
    X, y = _small()
    with pytest.raises(ValueError, match=rf"solver='{solver}' cannot start from given dual variables .*"
                                         rf"{re.escape(str(WARM))}"):
        losses = REGISTRY[solver].capabilities.losses  # crammer_singer takes hinge only
        daskdca.fit(X, y, loss="logistic" if "logistic" in losses else losses[0], lam=0.1, solver=solver,
                    dual_init=np.zeros(20))


def test_dual_init_with_resume_raises():
    X, y = _small()
    with pytest.raises(ValueError, match="dual_init and resume=True"):
        daskdca.fit(X, y, lam=0.1, dual_init=np.zeros(20), resume=True, checkpoint="unused")


# --- on a cluster ----------------------------------------------------------------

def test_cluster_warm_start_from_the_in_memory_optimum():
    distributed = pytest.importorskip("distributed")
    X, y = load_dataset("heart")
    lam = 1e-2
    ref = daskdca.fit(X, y, loss="logistic", lam=lam, tol=1e-10)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            warm = daskdca.fit(sp.csr_matrix(X), y, loss="logistic", lam=lam, solver="cocoa+", client=client,
                               n_partitions=2, tol=1e-6, dual_init=ref.dual_coef_)
    assert warm.n_rounds_ == 1 and warm.converged_
    assert abs(warm.primal_ - ref.primal_) <= 1e-8 * abs(ref.primal_)
    np.testing.assert_allclose(warm.dual_coef_, ref.dual_coef_, atol=1e-4)  # back in X's row order


# --- estimators ------------------------------------------------------------------

def test_classifier_warm_start_refit_across_C_one_vs_rest_with_intercept():
    """Iris (3 classes, one-vs-rest) with the synthetic intercept feature: the refit at C' starts from the
    duals at C, per class, and reaches the cold fit's objectives; a refit at the same C certifies at once."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    params = dict(loss="logistic", fit_intercept=True, tol=1e-9, max_iter=5000, solver="sdca",
                  multi_class="ovr")  # warm against cold; one-vs-rest asked for (the logistic default is multinomial)
    cold = daskdca.SDCAClassifier(C=1.0, **params).fit(X, y)
    clf = daskdca.SDCAClassifier(C=0.1, warm_start=True, **params).fit(X, y)
    assert not hasattr(clf, "dual_coef_") and clf._warm_duals[2].shape == (3, 150)  # kept privately
    clf.set_params(C=1.0).fit(X, y)
    np.testing.assert_allclose(clf.primal_, cold.primal_, rtol=1e-8)
    assert (clf.n_iter_ < cold.n_iter_).all()
    clf.fit(X, y)  # same C: starts at its own optimum
    assert (clf.n_iter_ == 1).all() and clf.converged_.all()
    clf.set_params(warm_start=False).fit(X, y)  # cold again, and the private duals are dropped
    np.testing.assert_array_equal(clf.n_iter_, cold.n_iter_)
    assert not hasattr(clf, "_warm_duals")


def test_classifier_warm_start_starts_cold_on_other_data():
    X, y = load_dataset("heart")
    clf = daskdca.SDCAClassifier("logistic", C=1.0, warm_start=True, tol=1e-8).fit(X, y)
    # the default fit_intercept=True: the duals kept are those of the problem with the synthetic feature
    assert clf.fit_intercept and clf._warm_duals[0] == (X.shape[0], X.shape[1] + 1)
    no_intercept = daskdca.SDCAClassifier("logistic", C=1.0, tol=1e-8, fit_intercept=False).fit(X, y).n_iter_
    np.testing.assert_array_equal(clf.set_params(fit_intercept=False).fit(X, y).n_iter_, no_intercept)  # cold
    clf.set_params(fit_intercept=True).fit(X, y)
    cold_rounds = daskdca.SDCAClassifier("logistic", C=1.0, tol=1e-8).fit(X[:200], y[:200]).n_iter_
    np.testing.assert_array_equal(clf.fit(X[:200], y[:200]).n_iter_, cold_rounds)  # other shape: cold
    relabelled = np.where(y[:200] > 0, 5, 7)
    assert clf.fit(X[:200], relabelled).n_iter_[0] > 1  # other classes: cold


def test_classifier_warm_start_projects_onto_the_new_box():
    """squared_hinge's duals (y_i alpha_i up to 2 and more) start a hinge fit once clipped to [0, 1]."""
    X, y = load_dataset("heart")
    clf = daskdca.SDCAClassifier("squared_hinge", C=1.0, warm_start=True, keep_dual=True, tol=1e-8).fit(X, y)
    ys = np.where(y > 0, 1.0, -1.0)
    assert (ys * clf.dual_coef_[0]).max() > 1.0
    clf.set_params(loss="hinge", C=0.01).fit(X, y)
    cold = daskdca.SDCAClassifier("hinge", C=0.01, tol=1e-8).fit(X, y)
    assert clf.primal_[0] == pytest.approx(cold.primal_[0], rel=1e-7)


def test_regressor_warm_start_refit():
    X, y = load_dataset("heart")
    target = np.asarray(X @ np.linspace(-1, 1, X.shape[1])).ravel() + 0.1 * y
    reg = daskdca.SDCARegressor(C=0.1, warm_start=True, tol=1e-10).fit(X, target)
    cold = daskdca.SDCARegressor(C=1.0, tol=1e-10).fit(X, target)
    reg.set_params(C=1.0).fit(X, target)
    assert reg.primal_ == pytest.approx(cold.primal_, rel=1e-8)
    assert reg.fit(X, target).n_iter_ == 1
