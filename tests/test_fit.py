"""``daskdca.fit``: contract, certificate, invariants, determinism and bad input."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.losses import SmoothedHinge, get_loss
from daskdca.validation import _check_y

import reference_kernels as ref
from conftest import load_dataset
from references import lbfgs, primal_objective, ridge_closed_form

SOLVERS = ["sdca", "minibatch_sdca", "cocoa+"]


def _rounds(solver, epochs):
    """``max_rounds`` worth ``epochs`` epochs: a mini-batch round is one mini-batch, not an epoch."""
    return None if solver == "minibatch_sdca" else epochs


@pytest.fixture(scope="module")
def heart():
    return load_dataset("heart")


def _signed(y, classes):
    return np.where(y == classes[1], 1.0, -1.0)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic", "smoothed_hinge"])
def test_certificate_recomputed_from_dual_coef(heart, solver, loss):
    X, y = heart
    # CoCoA+ (2 partitions, so inside Catalyst's loop) takes 41-1,142 rounds to 1e-8 here for random_state
    # 0-2 (hinge the most); plain CoCoA+ took 2,174 to over 5,000 to 1e-6 (its local models over-charge the
    # directions in which partitions cancel; heart has n = 270 rows in d = 13).
    tol = 1e-8
    m = daskdca.fit(X, y, loss=loss, lam=1e-2, solver=solver, tol=tol, max_rounds=_rounds(solver, 20000))
    assert m.converged_
    ys = _signed(y, m.classes_)
    dual, w_alpha = ref.dual_objective(X, ys, m.dual_coef_, 1e-2, loss)
    primal = primal_objective(X, ys, m.coef_, 1e-2, loss)
    gap = primal - dual
    assert 0 <= gap <= tol * abs(primal)
    if m.plan_.primal_from_dual:  # the model is w(alpha); Catalyst's (CoCoA+ on 2 partitions) is its iterate
        np.testing.assert_allclose(m.coef_, w_alpha, rtol=1e-12, atol=1e-14)
    assert m.primal_ == pytest.approx(primal, rel=1e-12)
    assert m.dual_ == pytest.approx(dual, rel=1e-12)
    assert m.gap_ == pytest.approx(gap, rel=1e-6, abs=1e-15)
    # labels inside the loss: y_i alpha_i in the conjugate's domain
    b = ys * m.dual_coef_
    assert b.min() >= 0.0 and (loss == "squared_hinge" or b.max() <= 1.0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_invariant_w_equals_xt_alpha_every_round(solver, loss):
    X, y = load_dataset("a9a")
    X, y = X[:4000], y[:4000]
    lam = 1e-4
    checked = []

    def check(record, state):
        w_alpha = X.T @ state.alpha / (lam * X.shape[0])
        err = np.linalg.norm(state.w - w_alpha) / max(np.linalg.norm(w_alpha), 1e-300)
        checked.append(err)
        assert err <= 1e-10, (record.round, err)

    if solver == "minibatch_sdca":  # evaluate (and call back) every round, not once per epoch
        solver = daskdca.MinibatchSDCA(eval_every=1)
    if solver == "cocoa+":  # Catalyst's w is c_k + X^T alpha / (lam' n): test_catalyst.py replays it
        solver = daskdca.CoCoAPlus(acceleration=None)
    daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=1e-12, max_rounds=15, callback=check)
    assert len(checked) == 15


@pytest.mark.parametrize("solver", SOLVERS)
def test_same_random_state_is_bit_identical(solver):
    X, y = load_dataset("a9a")
    X, y = X[:5000], y[:5000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        runs = [daskdca.fit(X, y, lam=1e-4, solver=solver, tol=1e-12, max_rounds=5, random_state=s)
                for s in (3, 3, 4)]
    np.testing.assert_array_equal(runs[0].coef_, runs[1].coef_)
    np.testing.assert_array_equal(runs[0].dual_coef_, runs[1].dual_coef_)
    assert [r[3:] for r in runs[0].history_] == [r[3:] for r in runs[1].history_]
    assert not np.array_equal(runs[0].dual_coef_, runs[2].dual_coef_)


def test_ridge_matches_closed_form():
    X, y = load_diabetes(return_X_y=True)
    lam = 1e-3
    w_ref, p_ref = ridge_closed_form(X, y, lam)
    for solver in SOLVERS:
        m = daskdca.fit(X, y, loss="squared", lam=lam, solver=solver, tol=1e-10, max_rounds=_rounds(solver, 20000))
        assert m.converged_ and m.classes_ is None
        assert m.primal_ == pytest.approx(p_ref, rel=1e-9)
        np.testing.assert_allclose(m.coef_, w_ref, rtol=1e-4, atol=1e-4 * np.abs(w_ref).max())
        np.testing.assert_allclose(m.predict(X), X @ m.coef_)


@pytest.mark.parametrize("gamma", [0.5, 1.0])
def test_smoothed_hinge_matches_lbfgs(heart, gamma):
    X, y = heart
    lam = 1e-3
    _, p_ref = lbfgs(X, y, lam, "smoothed_hinge", gamma=gamma)
    for solver in SOLVERS:
        m = daskdca.fit(X, y, loss=SmoothedHinge(gamma=gamma), lam=lam, solver=solver, tol=1e-9,
                        max_rounds=_rounds(solver, 20000))
        assert m.converged_
        # the certificate brackets the optimum; L-BFGS's value must lie above D
        assert m.dual_ <= p_ref + 1e-12
        assert m.primal_ == pytest.approx(p_ref, rel=1e-6)


def test_breast_cancer_quickstart_converges():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    m = daskdca.fit(X, y, loss="logistic", lam=1e-3, tol=1e-8)
    assert m.converged_
    assert (m.predict(X) == y).mean() > 0.95
    assert set(np.unique(m.predict(X))) == {0, 1}


def test_labels_any_two_values_sorted_second_is_positive():
    X, y01 = load_dataset("heart")
    y_pm = np.where(y01 > 0, 1.0, -1.0)
    base = daskdca.fit(X, y_pm, lam=1e-2)
    for labels in (np.array([3, 7]), np.array(["no", "yes"]), np.array([False, True])):
        y = np.where(y_pm > 0, labels[1], labels[0])
        m = daskdca.fit(X, y, lam=1e-2)
        np.testing.assert_array_equal(m.classes_, labels)
        np.testing.assert_array_equal(m.coef_, base.coef_)
        np.testing.assert_array_equal(m.predict(X), np.where(X @ m.coef_ > 0, labels[1], labels[0]))


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "coo", "float32"])
def test_input_formats_give_the_same_fit(heart, fmt):
    X, y = heart
    conv = {"dense": lambda a: a.toarray(), "csr": sp.csr_matrix, "csc": sp.csc_matrix,
            "coo": sp.coo_matrix, "float32": lambda a: a.astype(np.float32)}[fmt]
    m = daskdca.fit(conv(X), y, lam=1e-2, tol=1e-9)
    base = daskdca.fit(X, y, lam=1e-2, tol=1e-9)
    if fmt == "float32":
        assert m.primal_ == pytest.approx(base.primal_, rel=1e-5)
        assert m.coef_.dtype == np.float64 and m.dual_coef_.dtype == np.float64
    else:
        np.testing.assert_array_equal(m.coef_, base.coef_)


def test_history_and_counters(heart):
    X, y = heart
    m = daskdca.fit(X, y, lam=1e-2, solver="cocoa+", n_partitions=3, local_iters=2.0, tol=1e-4, max_rounds=20000)
    assert m.n_rounds_ == len(m.history_) == m.history_[-1].round
    assert [r.round for r in m.history_] == list(range(1, m.n_rounds_ + 1))
    assert all(np.diff([r.seconds for r in m.history_]) >= 0)
    assert all(r.gap == pytest.approx(r.primal - r.dual) for r in m.history_)
    assert m.n_epochs_ > 0 and m.history_[-1].epochs == m.n_epochs_
    assert m.history_[-1].gap == pytest.approx(m.gap_)


def test_not_converging_warns_and_returns_certificate(heart):
    X, y = heart
    with pytest.warns(ConvergenceWarning, match="max_rounds=2"):
        m = daskdca.fit(X, y, lam=1e-6, tol=1e-12, max_rounds=2)
    assert not m.converged_ and m.n_rounds_ == 2
    assert m.gap_ > 0 and np.isfinite(m.gap_)


def test_callback_can_stop(heart):
    X, y = heart
    seen = []
    m = daskdca.fit(X, y, lam=1e-6, tol=1e-14, max_rounds=100,
                    callback=lambda rec, state: seen.append(rec.round) or rec.round == 3)
    assert seen == [1, 2, 3] and m.n_rounds_ == 3
    # a NumPy bool stops too (a comparison of the record's floats is one)
    m = daskdca.fit(X, y, lam=1e-6, tol=1e-14, max_rounds=100,
                    callback=lambda rec, state: np.float64(rec.round) >= 2)
    assert m.n_rounds_ == 2


def test_predict_validates_features(heart):
    X, y = heart
    m = daskdca.fit(X, y, lam=1e-2)
    with pytest.raises(ValueError, match="X has 5 features but the model was fitted with 13"):
        m.decision_function(np.ones((2, 5)))


@pytest.mark.parametrize("kwargs, match", [
    ({"lam": 0.0}, "lam must be > 0"),
    ({"lam": -1.0}, "lam must be > 0"),
    ({"lam": float("nan")}, "lam must be a finite"),
    ({"lam": 1e308}, r"lam must be at most 1e\+100, got 1e\+308"),  # lam n overflowed to inf
    ({"loss": "hinj"}, "Unknown loss 'hinj'.*'hinge'"),
    ({"solver": "sgd"}, "Unknown solver 'sgd'.*'cocoa\\+'.*'minibatch_sdca'.*'sdca'"),
    ({"tol": -1.0}, "tol must be >= 0"),
    ({"max_rounds": 0}, "max_rounds must be >= 1"),
    ({"solver": "sdca", "n_partitions": 2}, "solver='sdca' is serial"),
    ({"solver": "cocoa+", "n_partitions": 1000}, "n_partitions=1000 is more than the 270 rows"),
    ({"batch_size": 8}, r"batch_size applies to solver=\[.*'minibatch_sdca'.*\] only"),
    ({"solver": "minibatch_sdca", "batch_size": 300}, "batch_size=300 is more than the 270 rows"),
    ({"solver": "minibatch_sdca", "local_iters": 2.0}, r"local_iters applies to solver=\[.*\] only .*got solver=.minibatch_sdca."),
    ({"n_partitions": 0}, "n_partitions must be >= 1"),
    ({"solver": "cocoa+", "loss": "hinge", "max_rounds": 1.5}, "max_rounds must be an integer"),
    ({"local_iters": 0}, "local_iters must be a finite number > 0"),
    ({"random_state": 1.5}, "random_state must be None or a non-negative int"),
    ({"callback": 3}, "callback must be callable"),
])
def test_bad_parameters_raise_with_the_value_and_fix(heart, kwargs, match):
    X, y = heart
    with pytest.raises((ValueError, TypeError), match=match):
        daskdca.fit(X, y, **kwargs)


def test_bad_data_raise_with_the_position():
    X = np.ones((5, 3))
    y = np.array([1, -1, 1, -1, 1])
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"non-finite value \(nan\) at row 2, column 1"):
        daskdca.fit(Xn, y)
    Xs = sp.csr_matrix(X)
    Xs.data[7] = np.inf
    with pytest.raises(ValueError, match=r"non-finite value \(inf\) at row 2, column 1"):
        daskdca.fit(Xs, y)
    with pytest.raises(ValueError, match=r"y contains a non-finite value \(inf\) at index 1"):
        daskdca.fit(X, np.array([1.0, np.inf, 1.0, -1.0, 1.0]), loss="squared")
    with pytest.raises(ValueError, match="X has 5 rows but y has 4"):
        daskdca.fit(X, y[:4])
    with pytest.raises(ValueError, match="solver='pegasos'.*cannot fit the one-vs-rest problems"):
        daskdca.fit(X, np.array([0, 1, 2, 0, 1]), solver="pegasos")
    with pytest.raises(ValueError, match="at least two classes in y, got one"):
        daskdca.fit(X, np.ones(5))
    with pytest.raises(ValueError, match="X is empty"):
        daskdca.fit(np.ones((0, 3)), np.ones(0))
    with pytest.raises(ValueError, match="X must be 2-D"):
        daskdca.fit(np.ones(5), y)
    with pytest.raises(ValueError, match="y must be 1-D"):
        daskdca.fit(X, y[:, None])
    with pytest.raises(TypeError, match="numeric targets"):
        daskdca.fit(X, np.array(list("abcde")), loss="squared")


def test_solver_objects_and_their_conflicts(heart):
    X, y = heart
    m = daskdca.fit(X, y, lam=1e-2, solver=daskdca.MinibatchSDCA(batch_size=4, eso="sparse"), tol=1e-4)
    assert m.converged_ and m.plan_.batch_size == 4
    with pytest.raises(ValueError, match="set them on the object"):
        daskdca.fit(X, y, solver=daskdca.SDCA(), local_iters=2.0)
    with pytest.raises(ValueError, match="Unknown sampling"):
        daskdca.SDCA(sampling="cyclic")
    with pytest.raises(ValueError, match="eso='sparse' is implemented for one partition only"):
        daskdca.fit(X, y, solver=daskdca.MinibatchSDCA(eso="sparse"), n_partitions=2)
    with pytest.raises(ValueError, match=r"solver='sdca' is serial.*use one of \[.*'cocoa\+'.*'minibatch_sdca'"):
        daskdca.fit(X, y, solver=daskdca.SDCA(), n_partitions=2)
    m = daskdca.fit(X, y, lam=1e-2, solver=daskdca.SDCA(sampling="iid", shrinking=False), tol=1e-6,
                    max_rounds=5000)
    assert m.converged_


def test_cocoa_line_search_never_lowers_the_dual_and_takes_fewer_rounds():
    """The line search includes t = 1/K (averaging), so the dual rises every round."""
    X, y = load_dataset("a9a")
    X, y = X[:8000], y[:8000]
    kwargs = dict(loss="logistic", lam=1e-4, n_partitions=4, tol=1e-4, max_rounds=2000)
    adding = daskdca.fit(X, y, solver=daskdca.CoCoAPlus(acceleration=None, momentum=False), **kwargs)
    searched = daskdca.fit(X, y, solver=daskdca.CoCoAPlus(aggregation="line_search"), **kwargs)
    assert adding.converged_ and searched.converged_
    duals = [r.dual for r in searched.history_[:-1]]
    assert all(b >= a - 1e-15 * abs(a) for a, b in zip(duals[:-1], duals[1:]))
    assert searched.n_rounds_ < adding.n_rounds_
    assert searched.primal_ == pytest.approx(adding.primal_, rel=1e-4)


@pytest.mark.parametrize("y", [np.array([0, 1, 1, 0]), np.array([-1.0, 1.0, 1.0]), np.array([7, 3, 7], dtype=np.uint8),
                               np.array([True, False, True]), np.array([2.5, 2.5, -4.0]), np.array([5, 5, 5, 9])])
def test_two_numeric_labels_map_as_numpys_unique_maps_them(y):
    """Two numeric labels take a path without a sort; the classes and the signs are np.unique's."""
    signs, classes = _check_y(y, y.shape[0], get_loss("hinge"))
    want = np.unique(y)
    np.testing.assert_array_equal(classes, want)
    assert classes.dtype == want.dtype
    np.testing.assert_array_equal(signs, np.where(y == want[1], 1.0, -1.0))
