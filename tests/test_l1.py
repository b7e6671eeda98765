"""penalty="l1": the pure L1 problem ``1/n sum_i phi_i(x_i.w) + lam ||w||_1`` (daskdca.l1), against LIBLINEAR,
with its certificate recomputed here from the returned model and the rescaled dual point."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import daskdca
from daskdca import SDCAClassifier, SDCARegressor
from daskdca.l1 import fit_l1
from daskdca.methods.l1 import L1SDCA, check_l1_loss
from daskdca.losses import LOSSES, Logistic
from daskdca.problem import l1_objectives

import reference_kernels as ref
from conftest import load_dataset


# --- a small, readable NumPy reference of the L1 problem and its rescaled dual point -----------------------

def _xlogx(b):
    return np.where(b > 0, b * np.log(np.where(b > 0, b, 1.0)), 0.0)


def loss_values(loss, margins):
    """``phi(a)`` at ``a = y x.w``."""
    if loss == "logistic":
        return np.logaddexp(0.0, -margins)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - margins) ** 2
    raise ValueError(loss)


def conjugates(loss, b):
    """``phi*(-b)`` with ``b = y alpha`` (``inf`` outside the domain)."""
    if loss == "logistic":  # b log b + (1 - b) log(1 - b) on [0, 1]
        inside = (b >= 0) & (b <= 1)
        return np.where(inside, _xlogx(np.clip(b, 0, 1)) + _xlogx(np.clip(1 - b, 0, 1)), np.inf)
    if loss == "squared_hinge":  # -b + b^2 / 4 on b >= 0
        return np.where(b >= 0, -b + b * b / 4, np.inf)
    raise ValueError(loss)


def l1_certificate(X, y, w, alpha, lam, loss):
    """``(P1(w), D1(beta), beta)``: the L1 primal at ``w`` and its dual at ``beta = s alpha``,
    ``s = min(1, lam / ||X^T alpha / n||_inf)`` (Ndiaye et al. 2017), labels ``y`` in {-1, +1}."""
    n = X.shape[0]
    top = np.abs(X.T @ alpha / n).max()
    s = 1.0 if top <= lam else lam / top
    beta = s * alpha
    primal = loss_values(loss, y * (X @ w)).mean() + lam * np.abs(w).sum()
    dual = -conjugates(loss, y * beta).mean()
    return primal, dual, beta


def _liblinear_csr(X):
    """X with the 32-bit indices LIBLINEAR takes."""
    X = sp.csr_matrix(X, copy=True)
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X


def _liblinear_logistic(X, y, C, **kwargs):
    import sklearn

    major, minor = (int(p) for p in sklearn.__version__.split(".")[:2])
    penalty = dict(l1_ratio=1.0) if (major, minor) >= (1, 8) else dict(penalty="l1")
    return LogisticRegression(solver="liblinear", C=C, tol=1e-12, max_iter=1_000_000, **penalty, **kwargs).fit(
        _liblinear_csr(X), y)


def _signed(y):
    return np.where(y == np.unique(y)[1], 1.0, -1.0)


def _check_against_reference(X, y, ours, w_ref, lam, loss, tol):
    """Objectives within 1e-6, the same zeros where the reference's non-zeros are not tiny, and the
    certificate recomputed from ``coef_`` and ``dual_coef_`` alone."""
    ys = _signed(y)
    w = ours.coef_.ravel()
    p_ours = loss_values(loss, ys * (X @ w)).mean() + lam * np.abs(w).sum()
    p_ref = loss_values(loss, ys * (X @ w_ref)).mean() + lam * np.abs(w_ref).sum()
    assert p_ours == pytest.approx(p_ref, rel=1e-6)
    assert p_ours <= p_ref * (1 + 1e-9)
    clear = (w_ref == 0) | (np.abs(w_ref) > 1e-6)
    assert np.array_equal((w == 0)[clear], (w_ref == 0)[clear]) and (w == 0).any()
    primal, dual, beta = l1_certificate(X, ys, w, ours.dual_coef_.ravel(), lam, loss)
    n = X.shape[0]
    assert np.abs(X.T @ beta / n).max() <= lam * (1 + 1e-12)  # feasible for the L1 dual
    assert 0 <= primal - dual <= tol * abs(primal)
    assert primal == pytest.approx(float(ours.primal_[0]), rel=1e-12)
    assert dual == pytest.approx(float(ours.dual_[0]), rel=1e-12)
    assert float(ours.gap_[0]) == pytest.approx(primal - dual, abs=1e-12)


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_logistic_matches_liblinear_on_heart(C):
    X, y = load_dataset("heart")
    n, tol = X.shape[0], 1e-10
    lam = 1 / (C * n)
    ours = SDCAClassifier(loss="logistic", C=C, penalty="l1", fit_intercept=False, tol=tol, keep_dual=True).fit(X, y)
    ref = _liblinear_logistic(X, y, C, fit_intercept=False)
    assert ours.converged_.all() and ours.route_.solver == "l1_sdca"
    _check_against_reference(X, y, ours, ref.coef_.ravel(), lam, "logistic", tol)


def test_logistic_matches_liblinear_on_a9a():
    X, y = load_dataset("a9a")
    C, tol = 0.1, 1e-9
    lam = 1 / (C * X.shape[0])
    ours = SDCAClassifier(loss="logistic", C=C, penalty="l1", fit_intercept=False, tol=tol, keep_dual=True).fit(X, y)
    ref = _liblinear_logistic(X, y, C, fit_intercept=False)
    _check_against_reference(X, y, ours, ref.coef_.ravel(), lam, "logistic", tol)


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_squared_hinge_matches_liblinear_on_heart(C):
    X, y = load_dataset("heart")
    n, tol = X.shape[0], 1e-10
    lam = 1 / (C * n)
    ours = SDCAClassifier(loss="squared_hinge", C=C, penalty="l1", fit_intercept=False, tol=tol,
                          keep_dual=True).fit(X, y)
    # tol=1e-10: at 1e-12 LIBLINEAR's primal coordinate descent never stops and, at C=0.05, ends 1e-3 above
    # the optimum after 1e6 iterations
    ref = LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=C, tol=1e-10, fit_intercept=False,
                    max_iter=1_000_000).fit(_liblinear_csr(X), y)
    _check_against_reference(X, y, ours, ref.coef_.ravel(), lam, "squared_hinge", tol)


def test_regularised_intercept_is_liblinears():
    """fit_intercept=True: LIBLINEAR's synthetic feature, its weight in the L1 term too."""
    X, y = load_dataset("heart")
    C = 1.0
    ours = SDCAClassifier(loss="logistic", C=C, penalty="l1", tol=1e-10, intercept_scaling=2.0).fit(X, y)
    ref = _liblinear_logistic(X, y, C, fit_intercept=True, intercept_scaling=2.0)
    lam, ys = 1 / (C * X.shape[0]), _signed(y)

    def objective(w, b):
        return np.logaddexp(0, -ys * (X @ w + b)).mean() + lam * (np.abs(w).sum() + abs(b / 2.0))

    assert objective(ours.coef_.ravel(), ours.intercept_[0]) == pytest.approx(
        objective(ref.coef_.ravel(), ref.intercept_[0]), rel=1e-9)
    assert ours.primal_[0] == pytest.approx(objective(ours.coef_.ravel(), ours.intercept_[0]), rel=1e-12)
    assert ours.intercept_[0] == pytest.approx(ref.intercept_[0], abs=1e-5) and ours.intercept_[0] != 0


def test_regressor_matches_lasso():
    X, y = load_dataset("heart")
    X = X.toarray()
    n, C = X.shape[0], 0.1
    lam = 1 / (C * n)
    ours = SDCARegressor(C=C, penalty="l1", fit_intercept=False, tol=1e-12).fit(X, y)
    ref = Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=1_000_000).fit(X, y)

    def objective(w):
        r = X @ w - y
        return r @ r / (2 * n) + lam * np.abs(w).sum()

    assert objective(ours.coef_) == pytest.approx(objective(ref.coef_), rel=1e-9)
    assert np.array_equal(ours.coef_ == 0, ref.coef_ == 0) and (ours.coef_ == 0).any()
    assert 0 <= ours.gap_ <= 1e-12 * ours.primal_


def test_three_classes_are_fitted_one_after_another():
    X, y = load_dataset("heart")
    labels = np.where(X[:, 0].toarray().ravel() > 0.3, 2, y)
    model = SDCAClassifier(loss="logistic", C=0.5, penalty="l1", tol=1e-8).fit(X, labels)
    assert model.coef_.shape == (3, X.shape[1]) and (model.coef_ == 0).any()
    assert np.all((model.gap_ >= 0) & (model.gap_ <= 1e-8 * np.abs(model.primal_)))


def test_rescaled_dual_of_any_dual_point_bounds_the_optimum():
    """The certificate from an elastic net's duals (infeasible for the L1 dual before the rescaling) is a
    lower bound on min P1: weak duality, checked against LIBLINEAR's optimum."""
    X, y = load_dataset("heart")
    n, C = X.shape[0], 0.05
    lam = 1 / (C * n)
    ref = _liblinear_logistic(X, y, C, fit_intercept=False)
    best = loss_values("logistic", _signed(y) * (X @ ref.coef_.ravel())).mean() + lam * np.abs(ref.coef_).sum()
    for ratio in (0.2, 0.9):
        en = daskdca.fit(X, y, loss="logistic", lam=lam / ratio, solver=daskdca.SDCA(l1_ratio=ratio), tol=1e-8)
        assert np.abs(X.T @ en.dual_coef_ / n).max() > lam  # the rescaling is needed
        _, dual, beta = l1_certificate(X, _signed(y), en.coef_, en.dual_coef_, lam, "logistic")
        assert dual <= best
        # the library's certificate of the same point agrees (daskdca.problem.l1_objectives)
        sums = [0.0, Logistic().conjugate(_signed(y), beta).sum()]
        assert l1_objectives(n, lam, sums, en.coef_, X.T @ beta / (lam * n))[1] == pytest.approx(dual, rel=1e-12)


def test_rounding_guard_lowers_an_infeasible_dual():
    # ||X^T beta / (lam n)||_inf = 1.5 > 1: beta / 1.5 is feasible and D1(beta / 1.5) >= D1(beta) / 1.5
    primal, dual = l1_objectives(10, 0.1, [3.0, -4.0], np.array([1.0, 0.0]), np.array([1.5, -0.5]))
    assert primal == pytest.approx(0.3 + 0.1) and dual == pytest.approx(0.4 / 1.5)
    assert l1_objectives(10, 0.1, [3.0, -4.0], np.array([1.0, 0.0]), np.array([1.0, -0.5]))[1] == pytest.approx(0.4)


def test_unfinished_fit_warns_with_an_honest_certificate():
    """The plain continuation (centre 0, mu / 10) of the same reduction, stopped early: the gap reported
    is still the L1 problem's, recomputed here."""
    X, y = load_dataset("heart")
    C, n = 0.05, X.shape[0]
    lam = 1 / (C * n)
    solver = L1SDCA(recentre=False, decrease=10.0, mu0=lam)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        model = SDCAClassifier(loss="logistic", C=C, penalty="l1", solver=solver, fit_intercept=False, tol=1e-12,
                               max_iter=50, keep_dual=True).fit(X, y)
    primal, dual, _ = l1_certificate(X, _signed(y), model.coef_.ravel(), model.dual_coef_.ravel(), lam, "logistic")
    assert model.gap_[0] == pytest.approx(primal - dual, abs=1e-12) and model.gap_[0] > 0
    quick = fit_l1(X, y, lam=lam, solver=solver, tol=1e-4)
    assert quick.converged_ and quick.gap_ <= 1e-4 * quick.primal_


def test_fit_l1_is_daskdca_fit_with_l1sdca():
    X, y = load_dataset("heart")
    lam = 1 / (0.05 * X.shape[0])
    model = fit_l1(X, y, loss="squared_hinge", lam=lam, tol=1e-9)
    direct = daskdca.fit(X, y, loss="squared_hinge", lam=lam, solver=L1SDCA(), tol=1e-9)
    np.testing.assert_array_equal(model.coef_, direct.coef_)
    assert model.converged_ and model.gap_ <= 1e-9 * model.primal_


def test_every_loss_has_a_feasible_rescaling():
    for name in LOSSES:
        check_l1_loss(name)

    class Shifted(Logistic):
        dual_domain = (0.5, 1.0)

    with pytest.raises(ValueError, match="elasticnet"):
        check_l1_loss(Shifted())


@pytest.mark.parametrize("kwargs,match", [
    (dict(l1_ratio=0.5), "leave l1_ratio=None"),
    (dict(l1_ratio=1.0), "leave l1_ratio=None"),
    (dict(solver="minibatch_sdca"), "solver='auto', 'sdca' or 'cocoa\\+'"),
    (dict(solver=daskdca.SDCA()), "L1SDCA object"),
])
def test_estimator_refuses_what_it_cannot_fit_with_the_fix(kwargs, match):
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=match):
        SDCAClassifier(loss="logistic", penalty="l1", **kwargs).fit(X, y)


@pytest.mark.parametrize("n_partitions", [2, 4])
def test_partitions_reach_the_serial_certified_optimum(n_partitions):
    """On K > 1 partitions each subproblem's rounds are CoCoA+'s: the serial fit's certified L1 optimum and its
    zeros, certified from the returned (rescaled) duals; fit_l1 passes n_partitions through. The store and
    cluster routes: the contract tests' variant "l1_sdca" (tests/test_method_contract.py), against these bits."""
    X, y = load_dataset("heart")
    n, lam, tol = X.shape[0], 0.01, 1e-9
    serial = fit_l1(X, y, lam=lam, tol=tol)
    rounds = fit_l1(X, y, lam=lam, tol=tol, n_partitions=n_partitions)
    assert rounds.converged_ and rounds.plan_.n_partitions == n_partitions == rounds.plan_.sigma_prime
    ys = np.where(y == rounds.classes_[1], 1.0, -1.0)
    assert np.abs(X.T @ rounds.dual_coef_).max() / n <= lam * (1 + 1e-12)  # beta is feasible for the L1 dual
    primal = np.mean(np.logaddexp(0.0, -ys * (X @ rounds.coef_))) + lam * np.abs(rounds.coef_).sum()
    dual = -np.mean([ref.conjugate("logistic", ys[i], b) for i, b in enumerate(rounds.dual_coef_)])
    assert rounds.primal_ == pytest.approx(primal, rel=1e-12) and rounds.dual_ == pytest.approx(dual, rel=1e-12)
    assert primal - dual <= tol * primal
    assert rounds.primal_ == pytest.approx(serial.primal_, rel=2 * tol)
    np.testing.assert_array_equal(rounds.coef_ == 0, serial.coef_ == 0)
    direct = daskdca.fit(X, y, loss="logistic", lam=lam, tol=tol, solver=L1SDCA(), n_partitions=n_partitions)
    np.testing.assert_array_equal(direct.coef_, rounds.coef_)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="takes no l1_ratio"):
        L1SDCA(l1_ratio=0.5)
    with pytest.raises(ValueError, match="decrease must be >= 1"):
        L1SDCA(decrease=0.5)
    with pytest.raises(ValueError, match="catalyst"):
        L1SDCA(acceleration="catalyst")
    with pytest.raises(ValueError, match="momentum=True; drop them"):
        L1SDCA(momentum=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L1SDCA(mu0=0.1, switch=0.2, mu_min=1e-9)


# scikit-learn's estimator checks with penalty="l1"; the two weight-equivalence checks need a gap below
# float64's reach, as for penalty="l2" (tests/test_estimators.py, _expected_failed_checks)
_WEIGHT_EQUIVALENCE = "sample_weight equals repeating rows only to the gap"


@parametrize_with_checks([
    SDCAClassifier(loss="logistic", penalty="l1"),
    SDCAClassifier(loss="squared_hinge", penalty="l1"),
    SDCARegressor(penalty="l1", fit_intercept=False),
], expected_failed_checks=lambda est: {"check_sample_weight_equivalence_on_dense_data": _WEIGHT_EQUIVALENCE,
                                        "check_sample_weight_equivalence_on_sparse_data": _WEIGHT_EQUIVALENCE})
@pytest.mark.filterwarnings("ignore:SDCAClassifier reached max_iter")  # class weights 1000 and 1e-4: slow, still right
def test_sklearn_estimator_checks_with_l1(estimator, check):
    check(estimator)


def _l1_share(est):
    """The L1 share of a scikit-learn linear model's penalty: its ``penalty`` where it has one, else (scikit-learn
    1.8 deprecates LogisticRegression's) its ``l1_ratio``."""
    penalty = getattr(est, "penalty", "deprecated")
    return est.l1_ratio if penalty in ("deprecated", "elasticnet") else {"l1": 1.0, "l2": 0.0}[penalty]


def test_to_sklearn_names_the_same_penalty():
    """to_sklearn after an L1 or elastic-net fit: the scikit-learn estimator of the same objective (LIBLINEAR's L1
    logistic and squared-hinge SVM, saga's elastic net, Lasso with alpha = lam), predictions identical; the L1
    hinge and elastic-net SVMs, which scikit-learn has no estimator for, raise."""
    X, y = load_dataset("heart")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for loss, kind in (("logistic", LogisticRegression), ("squared_hinge", LinearSVC)):
            clf = SDCAClassifier(loss=loss, C=0.05, penalty="l1", tol=1e-8).fit(X, y)
            est = clf.to_sklearn()
            assert isinstance(est, kind) and _l1_share(est) == 1.0
            np.testing.assert_array_equal(est.predict(X), clf.predict(X))
            with warnings.catch_warnings():  # scikit-learn 1.8 deprecates LogisticRegression's penalty
                warnings.simplefilter("error", FutureWarning)
                clone(est).fit(X.toarray(), y)  # (liblinear takes 32-bit sparse indices only)
        net = SDCAClassifier(loss="logistic", C=0.05, penalty="elasticnet", l1_ratio=0.5, tol=1e-8).fit(X, y)
        est = net.to_sklearn()
        assert (_l1_share(est), est.solver) == (0.5, "saga")
        np.testing.assert_array_equal(est.predict(X), net.predict(X))
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            clone(est).set_params(max_iter=5).fit(X.toarray(), y)
        for loss, penalty, ratio in (("hinge", "l1", None), ("squared_hinge", "elasticnet", 0.5)):
            svm = SDCAClassifier(loss=loss, C=0.05, penalty=penalty, l1_ratio=ratio, tol=1e-6).fit(X, y)
            with pytest.raises(ValueError, match="No scikit-learn estimator fits"):
                svm.to_sklearn()
        reg = SDCARegressor(C=0.05, penalty="l1", tol=1e-8).fit(X, y)
        lasso = reg.to_sklearn()
        assert isinstance(lasso, Lasso) and lasso.alpha == pytest.approx(1.0 / (0.05 * X.shape[0]), rel=1e-15)
        np.testing.assert_array_equal(lasso.predict(X), reg.predict(X))
