"""Multinomial logistic regression by primal Newton (daskdca.methods.multinomial_newton).

The kernel's Hessian and ladder sums against a NumPy reference; the plan's iterates against the
same rule in NumPy; the certified objective against scikit-learn's multinomial
``LogisticRegression`` (``C = 1/(lam n)``) and against L-BFGS, with the gap recomputed here from
the returned duals; the estimator's default on data as loaded.  In process equals the cluster and out of
core for both primal methods in tests/test_multinomial_lbfgs.py.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

import daskdca
import reference_multinomial as ref_sdca
import reference_multinomial_lbfgs as ref_lbfgs
import reference_multinomial_newton as ref
from conftest import load_dataset
from daskdca import SDCAClassifier
from daskdca.kernels.multinomial_lbfgs import softmax_lbfgs_sums
from daskdca.kernels.multinomial_newton import softmax_ladder_sums, softmax_newton_sums
from daskdca.kernels.newton import newton_system, packed_size
from daskdca.methods import MultinomialLBFGS, MultinomialNewton

pytestmark = pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")


def _with_intercept_column(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


# -- the kernels ------------------------------------------------------------------------------------

def test_the_kernel_sums_are_the_reference():
    X, cls, weight, W = ref_lbfgs.random_problem(1)
    n, D = X.shape[0], W.size
    sums, grad, hess = np.zeros(2), np.zeros_like(W), np.zeros(packed_size(D))
    # two calls over two row ranges add up to the whole
    visited = sum(softmax_newton_sums(X.indptr, X.indices, X.data, cls, weight, W, a, b, sums, grad, hess)
                  for a, b in ((0, 50), (50, n)))
    assert visited == n
    # the loss, conjugate and gradient sums are L-BFGS's, bit for bit
    lbfgs_sums, lbfgs_grad = np.zeros(2), np.zeros_like(W)
    for a, b in ((0, 50), (50, n)):
        softmax_lbfgs_sums(X.indptr, X.indices, X.data, cls, weight, W, a, b, lbfgs_sums, lbfgs_grad)
    assert_array_equal(sums, lbfgs_sums)
    assert_array_equal(grad, lbfgs_grad)
    # the packed upper triangle is the reference Hessian (newton_system with 1/n = 1 and lam = 0 unpacks it)
    H = ref.softmax_hessian(X, cls, weight, W)
    assert np.abs(H).max() > 1.0  # the overflowing margin's softmax does not zero every entry
    assert_allclose(newton_system(hess, D, 1.0, 0.0), H, rtol=1e-12, atol=1e-12 * np.abs(H).max())
    # the ladder's loss sums at W + t S
    S = np.random.default_rng(2).normal(size=W.shape)
    steps = np.array([1.0, 0.5, 0.25, 2.0 ** -20])
    out = np.zeros(steps.size)
    softmax_ladder_sums(X.indptr, X.indices, X.data, cls, weight, W, S, 0, n, steps, out)
    assert_allclose(out, ref.ladder_sums(X, cls, weight, W, S, steps), rtol=1e-12)


# -- the plan -------------------------------------------------------------------------------------------

def test_the_iterates_are_the_reference_rule():
    """Rounds 1..8 leave the points of the NumPy reference.  From W = 0 (every p_i uniform, where the softmax's
    curvature is largest) the full steps pass Armijo's test here; the line search is the binary Newton plan's
    (tests/test_newton.py), and its ladder's sums are the reference's (above)."""
    X, y = load_wine(return_X_y=True)
    X = sp.csr_matrix(_with_intercept_column(X))  # the features as loaded: scales from 0.1 to 1,000
    weight = np.random.default_rng(4).uniform(0.5, 1.5, X.shape[0])
    lam, rounds = 1e-4, 8
    seen = []
    daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_newton", tol=0.0, max_rounds=rounds,
                sample_weight=weight, callback=lambda record, state: seen.append(np.array(state.w)))
    want, steps = ref.newton_points(X, y.astype(np.int64), weight, lam, rounds)
    assert len(seen) == rounds and steps == [1.0] * rounds
    for r, (got, point) in enumerate(zip(seen, want)):
        assert_allclose(got.ravel(), point, rtol=1e-9, atol=1e-9 * np.abs(point).max(), err_msg=f"round {r + 1}")


@pytest.mark.parametrize("name, C, scaled", [("iris", 1.0, False), ("iris", 100.0, False), ("wine", 1.0, True),
                                             ("wine", 100.0, True)])
def test_the_certified_objective_is_sklearns(name, C, scaled):
    X, y = (load_iris if name == "iris" else load_wine)(return_X_y=True)
    if scaled:
        X = StandardScaler().fit_transform(X)
    n = X.shape[0]
    lam = 1.0 / (C * n)
    weight = np.random.default_rng(5).uniform(0.5, 2.0, n)
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_newton", tol=1e-10, max_rounds=100,
                    sample_weight=weight)
    assert m.converged_ and m.solver.name == "multinomial_newton" and m.coef_.shape == (3, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LogisticRegression(solver="lbfgs", C=C, fit_intercept=False, tol=1e-12, max_iter=10000)
        sk.fit(X, y, sample_weight=weight)
    cls = np.searchsorted(np.unique(y), y)
    # the gap recomputed here from the returned duals alone
    primal, dual, _ = ref_sdca.objectives(X, cls, weight, m.dual_coef_, m.coef_, lam)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    assert -1e-12 * primal <= primal - dual <= 1e-10 * primal  # at 1e-10 a rounding may take it below 0
    sk_primal, _, _ = ref_sdca.objectives(X, cls, weight, np.zeros((3, n)), sk.coef_, lam)
    assert primal == pytest.approx(sk_primal, rel=1e-7)
    assert dual <= sk_primal * (1 + 1e-12)  # weak duality: scikit-learn's point is no better than the bound


def test_newton_certifies_the_features_as_loaded_where_lbfgs_stops_short():
    """wine as loaded (proline in the hundreds, hue below 2): L-BFGS's 1,000 passes end far from the
    certificate; Newton certifies 1e-8 in a few rounds, at a point no worse than L-BFGS's."""
    X, y = load_wine(return_X_y=True)
    X = _with_intercept_column(X)
    n = X.shape[0]
    lam = 1.0 / n
    newton = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_newton", tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lbfgs = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_lbfgs", tol=1e-8, max_epochs=1000)
    assert newton.converged_ and newton.n_rounds_ <= 20
    assert not lbfgs.converged_ and lbfgs.gap_ > 1e-3 * lbfgs.primal_
    assert newton.primal_ <= lbfgs.primal_
    assert lbfgs.dual_ <= newton.primal_ and newton.dual_ <= lbfgs.primal_  # each certificate bounds the other


def test_the_estimator_default_takes_newton_where_the_hessian_is_small_and_refusals_name_the_fix():
    X, y = load_wine(return_X_y=True)
    est = SDCAClassifier(loss="logistic").fit(X, y)
    assert est.multi_class_ == "multinomial" and est.route_.solver == "multinomial_newton"
    assert "Hessian additions" in est.route_.reason and "primal Newton" in est.route_.reason
    assert est.converged_.all() and 0.0 <= est.gap_[0] <= 1e-6 * est.primal_[0]
    # an explicit object is obeyed, and probabilities are the softmax's
    obj = SDCAClassifier(loss="logistic", solver=MultinomialLBFGS()).fit(X[:60], y[:60])
    assert obj.route_.solver == "multinomial_lbfgs"
    from scipy.special import softmax

    assert_allclose(est.predict_proba(X), softmax(est.decision_function(X), axis=1), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="newton_max_variables=10.*K d = 3 x 14 = 42.*multinomial_lbfgs"):
        SDCAClassifier(loss="logistic", solver=MultinomialNewton(newton_max_variables=10)).fit(X, y)
    with pytest.raises(ValueError, match="'multinomial_newton' does not support loss='squared'"):
        daskdca.fit(X, (y == 1) * 2.0 - 1, loss="squared", lam=1e-2, solver="multinomial_newton")
    with pytest.raises(ValueError, match="newton_max_variables must be a positive int"):
        MultinomialNewton(newton_max_variables=0)


def test_two_classes_are_newtons_binary_fit():
    X, y = load_dataset("heart")
    a = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="multinomial_newton", tol=1e-10)
    b = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="newton", tol=1e-10)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_where_lbfgs_stops_short_the_warning_names_newton_and_newton_certifies():
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning

    X, y = load_digits(return_X_y=True)
    X = X[:, :16]  # the first 16 pixels: a round's Hessian is too costly for the default, and L-BFGS stalls
    with pytest.warns(ConvergenceWarning, match=r"or pass solver=daskdca.methods.MultinomialNewton\(\), whose "
                                                r"Newton steps on all 170 weights"):
        lbfgs = SDCAClassifier(loss="logistic").fit(X, y)
    assert lbfgs.route_.solver == "multinomial_lbfgs" and not lbfgs.converged_[0]
    newton = SDCAClassifier(loss="logistic", solver=MultinomialNewton()).fit(X, y)
    assert newton.route_.solver == "multinomial_newton" and newton.converged_[0] and newton.n_iter_[0] <= 30
    assert newton.primal_[0] <= lbfgs.primal_[0]
