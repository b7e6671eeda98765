"""``daskdca.path`` and ``SDCAClassifierCV``: certified warm-started paths and C chosen by cross-validation.

References: LIBLINEAR through scikit-learn (``LogisticRegression(liblinear)``,
``LinearSVC``) at ``C``, the objective written out in NumPy
(``references.primal_objective``), the certificate recomputed from the
returned duals with :mod:`daskdca.problem`, and ``GridSearchCV`` over
:class:`SDCAClassifier` on the same folds.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import daskdca
from daskdca import SDCAClassifier, SDCAClassifierCV
from daskdca.losses import get_loss
from daskdca.problem import dual_value

from conftest import load_dataset
from references import _int32, liblinear, primal_objective


# One instance (logistic, so predict_proba is checked too), two C, two folds and a loose tol keep the ~55
# checks fast: each fit of a check is a path of 2 fits per fold and class, then the refit (the checks test
# the estimator's contract, not its accuracy; the default grid of 10 C and 5 folds would cost 25 fits each).
# The sample-weight equivalence checks cannot pass for a solver that stops on a gap (rtol 1e-7 on the predictions
# needs a gap near 1e-17): the reason in full is in tests/test_estimators.py, _expected_failed_checks; the
# weights themselves are tested in tests/test_sample_weight.py.
@parametrize_with_checks(
    [SDCAClassifierCV(Cs=[0.1, 1.0], cv=2, loss="logistic", tol=1e-4, fit_intercept=True)],
    expected_failed_checks=lambda estimator: {
        "check_sample_weight_equivalence_on_dense_data": "sample_weight equals repeating rows only to the gap",
        "check_sample_weight_equivalence_on_sparse_data": "sample_weight equals repeating rows only to the gap"})
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _a9a_head(n=2000):
    X, y = load_dataset("a9a")
    return X[:n], y[:n]


@pytest.mark.parametrize("loss, Cs", [("logistic", [1.0, 0.01, 0.1]), ("hinge", [0.01, 0.001, 0.003])])
def test_every_point_matches_liblinear_and_its_gap_is_recomputed_from_the_duals(loss, Cs):
    X, y = _a9a_head()
    n = X.shape[0]
    # Cs in any order in, ascending out; no intercept: LIBLINEAR's reference, w(alpha) and the certificate
    # below are those of X itself
    res = daskdca.path(X, y, Cs, loss=loss, tol=1e-9, keep_dual=True, fit_intercept=False)
    np.testing.assert_array_equal(res.Cs, sorted(Cs))
    np.testing.assert_allclose(res.lams, 1.0 / (res.Cs * n))
    assert res.converged.all() and res.dual_coef.shape == (3, n)
    np.testing.assert_array_equal(res.classes, [-1.0, 1.0])
    np.testing.assert_array_equal(res.intercept, 0.0)
    loss_obj = get_loss(loss)
    for k, C in enumerate(res.Cs):
        lam = res.lams[k]
        alpha = res.dual_coef[k]
        # the certificate from the duals alone: w(alpha) = X^T alpha / (lam n), P and D from scratch
        w_alpha = X.T @ alpha / (lam * n)
        np.testing.assert_allclose(res.coef[k], w_alpha, rtol=1e-10, atol=1e-12)
        primal = primal_objective(X, y, w_alpha, lam, loss)
        dual = dual_value(n, lam, float(loss_obj.conjugate(y, alpha).sum()), w_alpha)
        assert primal == pytest.approx(res.primal[k], rel=1e-12)
        assert dual == pytest.approx(res.dual[k], rel=1e-12)
        assert 0.0 <= res.gap[k] <= 1e-9 * abs(res.primal[k]) + 1e-15
        # against LIBLINEAR at the same C (C = 1/(lam n))
        _, p_ref = liblinear(X, y, lam, loss)
        assert abs(res.primal[k] - p_ref) <= 1e-6 * abs(p_ref)
        # the gap bounds P(w) - P*, and P* <= LIBLINEAR's objective
        assert res.primal[k] - p_ref <= res.gap[k] + 1e-15


def test_intercept_point_matches_liblinear_logistic_regression():
    X, y = load_dataset("heart")
    n, s = X.shape[0], 2.0
    res = daskdca.path(X, y, [0.1, 1.0], loss="logistic", fit_intercept=True, intercept_scaling=s, tol=1e-10)
    for k, C in enumerate(res.Cs):
        ref = LogisticRegression(solver="liblinear", C=C, fit_intercept=True, intercept_scaling=s, tol=1e-12,
                                 max_iter=100_000).fit(_int32(X), y)
        lam = 1.0 / (C * n)

        def objective(w, b):  # LIBLINEAR's problem / (C n): b = s * w_b is regularised as w_b
            z = y * (np.asarray(X @ w).ravel() + b)
            return np.logaddexp(0.0, -z).mean() + 0.5 * lam * (w @ w + (b / s) ** 2)

        p_ref = objective(ref.coef_.ravel(), float(ref.intercept_[0]))
        assert objective(res.coef[k], res.intercept[k]) == pytest.approx(res.primal[k], rel=1e-12)
        assert abs(res.primal[k] - p_ref) <= 1e-6 * abs(p_ref)
        assert res.intercept[k] == pytest.approx(float(ref.intercept_[0]), abs=1e-4)


def test_l1_ratio_gives_the_penalised_path_of_the_solver_objects():
    """``path(l1_ratio=rho)`` is the path of ``SDCA(l1_ratio=rho)``, and of ``L1SDCA()`` for ``rho = 1``: the same
    bits at every C, each point certified as its own problem."""
    from daskdca.methods.l1 import L1SDCA

    X, y = load_dataset("heart")
    Cs = [0.01, 0.1, 1.0]
    for rho, method in ((0.5, daskdca.SDCA(l1_ratio=0.5)), (1.0, L1SDCA())):
        auto = daskdca.path(X, y, Cs, loss="logistic", tol=1e-8, l1_ratio=rho)
        named = daskdca.path(X, y, Cs, loss="logistic", tol=1e-8, solver=method)
        np.testing.assert_array_equal(auto.coef, named.coef)
        np.testing.assert_array_equal(auto.gap, named.gap)
        assert auto.converged.all() and (auto.coef == 0).any()


def test_the_warm_started_path_takes_fewer_rounds_than_cold_fits():
    X, y = _a9a_head()
    n = X.shape[0]
    Cs = np.logspace(-2, 1, 7)
    res = daskdca.path(X, y, Cs, loss="logistic", tol=1e-8, fit_intercept=False)  # daskdca.fit's problem
    # the path runs SDCA warm-started from C to C; its cold counterparts are SDCA's too (solver="auto" would run
    # primal Newton where lam n < 2)
    cold = [daskdca.fit(X, y, loss="logistic", lam=1.0 / (C * n), tol=1e-8, solver="sdca").n_rounds_ for C in Cs]
    assert res.converged.all()
    assert res.n_rounds.sum() < sum(cold)


@pytest.mark.parametrize("Cs, match", [([], "non-empty 1-D"), ([[0.1, 1.0]], "non-empty 1-D"), ("1.0", "1-D"),
                                       ([0.1, 0.0], r"got 0\.0"), ([1.0, np.inf], "got inf"),
                                       ([True], "got True")])
def test_bad_grids_raise(Cs, match):
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=match):
        daskdca.path(X, y, Cs)


def test_dask_input_a_store_with_an_intercept_and_cold_only_solvers_raise(tmp_path):
    da = pytest.importorskip("dask.array")
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match="daskdca.path takes arrays or a store, got X of type Array"):
        daskdca.path(da.from_array(X.toarray(), chunks=(100, 13)), y, [1.0])
    store = daskdca.write_store(str(tmp_path / "heart.zarr"), X, y)
    with pytest.raises(ValueError, match="on a store needs fit_intercept=False"):
        daskdca.path(store, None, [1.0])
    with pytest.raises(ValueError, match="solver='spdc' cannot start each fit of a path from the previous C's dual"):
        daskdca.path(X, y, [0.1, 1.0], loss="logistic", solver="spdc")


def test_a_path_on_a_store_is_the_in_memory_path(tmp_path):
    """Each point of a store's path, warm-started in the store's row order on a cluster, has the objective of the
    in-memory path's point (the same problem) within the two certified gaps."""
    distributed = pytest.importorskip("distributed")
    X, y = load_dataset("heart")
    store = daskdca.write_store(str(tmp_path / "heart.zarr"), X, y, block_rows=135)
    Cs = [0.01, 0.1]
    here = daskdca.path(X, y, Cs, loss="logistic", tol=1e-7, fit_intercept=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        there = daskdca.path(store, None, Cs, loss="logistic", tol=1e-7, fit_intercept=False, client=client,
                             keep_dual=True)
    assert there.converged.all() and there.dual_coef.shape == (2, X.shape[0])
    assert np.all(np.abs(there.primal - here.primal) <= there.gap + here.gap + 1e-15)


# --- SDCAClassifierCV --------------------------------------------------------------


@pytest.mark.parametrize("loss, scoring", [("logistic", None), ("hinge", "roc_auc")])
def test_cv_picks_the_C_of_a_grid_search_on_the_same_folds(loss, scoring):
    X, y = load_dataset("heart")
    Cs = [0.001, 0.01, 0.1, 1.0]
    folds = StratifiedKFold(5)
    cv = SDCAClassifierCV(Cs=Cs, cv=folds, scoring=scoring, loss=loss, tol=1e-9).fit(X, y)
    grid = GridSearchCV(SDCAClassifier(loss, tol=1e-9), {"C": Cs}, cv=folds, scoring=scoring).fit(X, y)
    split_scores = np.array([grid.cv_results_[f"split{f}_test_score"] for f in range(5)])
    np.testing.assert_allclose(cv.scores_, split_scores, atol=1e-12)
    assert len(set(np.round(split_scores.mean(axis=0), 12))) > 1  # the grid does discriminate
    assert cv.C_ == grid.best_params_["C"]
    assert cv.best_score_ == pytest.approx(grid.best_score_, abs=1e-12)
    np.testing.assert_array_equal(cv.Cs_, Cs)
    # the refit is SDCAClassifier's fit at C_ (same seed, same start): the same model
    ref = SDCAClassifier(loss, C=cv.C_, tol=1e-9).fit(X, y)
    np.testing.assert_array_equal(cv.coef_, ref.coef_)
    assert cv.to_sklearn().C == cv.C_


def test_cv_multiclass_one_C_for_all_classes():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    cv = SDCAClassifierCV(Cs=[0.01, 1.0], cv=3, loss="logistic", fit_intercept=True, tol=1e-6).fit(X, y)
    assert cv.coef_.shape == (3, 4) and cv.scores_.shape == (3, 2) and cv.C_ in (0.01, 1.0)
    assert cv.C_ == 1.0  # iris is far better separated at C = 1 than at 0.01
    assert cv.predict_proba(X).shape == (150, 3)


def test_cv_default_grid_and_clone():
    est = SDCAClassifierCV(cv=3, tol=1e-3)
    twin = clone(est)
    assert twin.get_params() == est.get_params() and "C" not in est.get_params()
    X, y = load_dataset("heart")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # C up to 1e4 on hinge: loose tol is enough here
        est.set_params(max_iter=20).fit(X, y)
    np.testing.assert_allclose(est.Cs_, np.logspace(-4, 4, 10))
    assert est.scores_.shape == (3, 10)


@pytest.mark.filterwarnings("ignore:daskdca.path reached")
def test_max_epochs_bounds_the_passes_of_every_fit_along_the_path():
    """max_epochs counts passes over the data whatever the solver: 2 passes are 2 rounds of serial SDCA (one
    round of 2 passes where the route gives the small data several passes a round) and about 2 n / batch_size
    rounds of mini-batch SDCA."""
    X, y = _a9a_head()
    res = daskdca.path(X, y, [0.1, 1.0], loss="logistic", tol=1e-12, max_epochs=2, fit_intercept=False)
    assert res.n_rounds.tolist() == [1, 1] and not res.converged.any()
    one_pass = daskdca.path(X, y, [0.1, 1.0], loss="logistic", tol=1e-12, max_epochs=2, fit_intercept=False,
                            solver="sdca")
    assert one_pass.n_rounds.tolist() == [2, 2] and not one_pass.converged.any()
    batched = daskdca.path(X, y, [0.1, 1.0], loss="logistic", tol=1e-12, max_epochs=2, fit_intercept=False,
                           solver=daskdca.MinibatchSDCA(batch_size=100))
    assert (batched.n_rounds > 2).all() and (batched.n_rounds <= 2 * X.shape[0] // 100 + 1).all()


def test_a_path_short_of_tol_warns_once_naming_its_cs_and_budget():
    """Each fit short of ``tol`` warned on its own ("daskdca.fit reached max_rounds=250", a budget the user never
    gave, and no C); the path warns once, naming the Cs, their gaps and the budget (the default one here)."""
    X, y = _a9a_head()
    with pytest.warns(ConvergenceWarning) as caught:
        res = daskdca.path(X, y, [1e-3, 1e3, 1e4], loss="logistic", tol=1e-14, fit_intercept=False)
    short = [C for C, ok in zip(res.Cs, res.converged) if not ok]
    assert short and len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("daskdca.path reached its budget (the default budget of 1000 passes) at C = "
                              + ", ".join(f"{C:g}" for C in short) + " with relative duality gaps ")
    assert "max_rounds=" not in message
    with pytest.warns(ConvergenceWarning, match=r"daskdca\.path reached its budget \(max_epochs=2\) at C = 0\.1, 1 "):
        daskdca.path(X, y, [0.1, 1.0], loss="logistic", tol=1e-12, max_epochs=2, fit_intercept=False)


def test_a_path_of_a_solver_without_warm_starts_says_why_it_needs_them():
    """It said "or drop dual_init", which a path's caller never gave."""
    X, y = _a9a_head()
    with pytest.raises(ValueError, match=r"solver='newton' cannot start each fit of a path from the previous C's "
                                         r"dual variables; the solvers that can are .*fit each C with daskdca\.fit"):
        daskdca.path(X, y, [0.1, 1.0], loss="logistic", solver="newton")
