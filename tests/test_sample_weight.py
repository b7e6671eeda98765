"""Row weights: ``min_w 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2`` (``sample_weight``, ``class_weight``).

The weighted step is checked against a brute-force 1-D maximisation, the
kernel against the NumPy reference on the same row sequence, and the fits
against LIBLINEAR's per-instance weights (``C_i = C s_i``), against repeated
and removed rows, and against their own certificate recomputed from the
returned duals.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.utils.class_weight import compute_class_weight

import daskdca
from daskdca import SDCAClassifier, SDCARegressor
from daskdca.kernels.sdca import local_sdca
from daskdca.losses import get_loss, weighted_dual_update
from daskdca.methods import CoCoAPlus, MinibatchSDCA

import reference_kernels as ref
from conftest import load_dataset

LOSSES = ["hinge", "smoothed_hinge", "squared_hinge", "logistic", "squared"]
# the solvers whose capabilities.sample_weight is True, with the mini-batch step rules
WEIGHTED_SOLVERS = [("sdca", {}), ("cocoa+", {"n_partitions": 3}), (CoCoAPlus(aggregation="line_search"),
                                                                  {"n_partitions": 3}),
                    (MinibatchSDCA(batch_size=16), {}), (MinibatchSDCA(batch_size=16, step="naive"), {}),
                    (MinibatchSDCA(batch_size=16, step="aggressive"), {})]
SOLVER_IDS = ["sdca", "cocoa+", "cocoa+(line_search)", "minibatch_sdca", "minibatch_sdca(naive)",
              "minibatch_sdca(aggressive)"]


def _int32(X):
    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)


def _weighted_primal(X, y_signed, weight, w, lam, loss):
    return float(np.mean(weight * get_loss(loss).value(y_signed, X @ w)) + 0.5 * lam * w @ w)


def _weighted_dual(X, y_signed, weight, alpha, lam, loss):
    """``D(alpha) = -1/n sum_i s_i phi_i*(-alpha_i / s_i) - lam/2 ||X^T alpha / (lam n)||^2`` from scratch."""
    n = X.shape[0]
    conj = 0.0
    for yi, a, s in zip(y_signed, alpha, weight):
        if s == 0.0:
            assert a == 0.0  # the box of a weight-0 row is {0}
        else:
            conj += s * ref.conjugate(loss, yi, a / s)
    w = X.T @ alpha / (lam * n)
    return -conj / n - 0.5 * lam * float(w @ w)


@pytest.fixture(scope="module")
def heart():
    X, y = load_dataset("heart")
    rng = np.random.default_rng(0)
    return _int32(X), y, rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], X.shape[0])


# --------------------------------------------------------------------------
# the step and the kernel


@pytest.mark.parametrize("loss", LOSSES)
def test_weighted_step_maximises_the_weighted_one_dimensional_dual(loss):
    """``argmax_a -s phi*(-a/s) - q/2 (a - alpha)^2 - m (a - alpha)`` over the box ``s * domain``, by brute force."""
    loss_obj = get_loss(loss)
    rng = np.random.default_rng(3)
    for _ in range(60):
        s = float(rng.choice([0.0, 0.3, 1.0, 2.5, 40.0]))
        y = float(rng.choice([-1.0, 1.0])) if loss != "squared" else float(rng.normal())
        q, m = float(rng.uniform(0.01, 5.0)), float(rng.normal(scale=2.0))
        lo, hi = loss_obj.dual_domain
        b_old = s * float(rng.uniform(0.05, 0.95)) if loss != "squared" else float(rng.normal())
        alpha = (y * b_old) if loss != "squared" else b_old
        alpha = 0.0 if s == 0.0 else alpha
        new = weighted_dual_update(int(loss_obj.kind), loss_obj.param, y, alpha, q, m, s)
        if s == 0.0:
            assert new == 0.0
            continue

        def negative(a):
            return s * ref.conjugate(loss, y, a / s) + q / 2 * (a - alpha) ** 2 + m * (a - alpha)

        if loss == "squared":
            best = scipy.optimize.minimize_scalar(negative, bracket=(alpha - 10, alpha + 10), tol=1e-12).x
        else:  # over b = y a in [lo s, hi s] (hi = inf for squared hinge: a bound far past the optimum)
            top = s * hi if math.isfinite(hi) else s + 10.0 * (1.0 + abs(m)) * (1.0 + s)
            res = scipy.optimize.minimize_scalar(lambda b: negative(y * b), bounds=(lo * s, top), method="bounded",
                                                 options={"xatol": 1e-12})
            best = y * res.x
        assert new == pytest.approx(best, abs=1e-6 * (1.0 + s)), (s, y, q, m, alpha)
        assert negative(new) <= negative(best) + 1e-10 * (1.0 + abs(negative(best)))


@pytest.mark.parametrize("loss", LOSSES)
def test_weighted_local_sdca_matches_the_numpy_reference_on_the_same_rows(loss):
    X, _ = load_dataset("a9a")
    X = sp.csr_matrix(X[:300])
    n, d = X.shape
    rng = np.random.default_rng(1)
    y = rng.choice([-1.0, 1.0], n) if loss != "squared" else rng.normal(size=n)
    weight = rng.choice([0.0, 0.5, 1.0, 3.0], n)
    loss_obj = get_loss(loss)
    lam_n = 0.01 * n
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    order = np.concatenate([rng.permutation(n) for _ in range(3)]).astype(np.int64)
    alpha, u, dw = np.zeros(n), np.zeros(d), np.zeros(d)
    local_sdca(X.indptr, X.indices, X.data, y, weight, sqnorm, alpha, u, dw, order, int(loss_obj.kind),
               loss_obj.param, lam_n, 2.0, True)
    ra, ru, rdw = ref.local_sdca(X, y, np.zeros(n), np.zeros(d), np.zeros(d), order, loss, lam_n, 2.0,
                                 weight=weight)
    np.testing.assert_allclose(alpha, ra, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(u, ru, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(dw, rdw, rtol=1e-12, atol=1e-13)
    assert np.all(alpha[weight == 0] == 0.0)
    if loss in ("hinge", "smoothed_hinge", "logistic"):  # the box [0, s_i]
        b = y * alpha
        assert np.all(b >= 0.0) and np.all(b <= weight) and np.any(b == weight)


# --------------------------------------------------------------------------
# fits


@pytest.mark.parametrize("solver, extra", WEIGHTED_SOLVERS, ids=SOLVER_IDS)
def test_weight_one_gives_the_unweighted_bits(heart, solver, extra):
    X, y, _ = heart
    plain = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=solver, tol=1e-5, **extra)
    ones = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver=solver, tol=1e-5, sample_weight=np.ones(X.shape[0]),
                       **extra)
    np.testing.assert_array_equal(plain.coef_, ones.coef_)
    np.testing.assert_array_equal(plain.dual_coef_, ones.dual_coef_)
    assert plain.n_rounds_ == ones.n_rounds_


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
# naive steps diverge at this batch size, as documented (their unit bits are checked above)
@pytest.mark.parametrize("solver, extra", WEIGHTED_SOLVERS[:4] + WEIGHTED_SOLVERS[5:],
                         ids=SOLVER_IDS[:4] + SOLVER_IDS[5:])
def test_weighted_fit_matches_liblinear_and_its_gap_is_recomputed_from_the_duals(heart, loss, solver, extra):
    X, y, weight = heart
    n = X.shape[0]
    C = 0.5
    lam = 1.0 / (C * n)
    # one mini-batch of 16 rows a round: 1000 epochs reach about 1e-5 on hinge here
    tol = 1e-7 if isinstance(solver, MinibatchSDCA) else 1e-10
    model = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=tol, sample_weight=weight,
                        max_rounds=200000 if isinstance(solver, MinibatchSDCA) else 20000, **extra)
    assert model.converged_
    y_signed = np.where(y == model.classes_[1], 1.0, -1.0)
    alpha = model.dual_coef_
    if model.plan_.primal_from_dual:  # the model is w(alpha); Catalyst's (cocoa+ on 2 partitions) is its iterate
        np.testing.assert_allclose(model.coef_, X.T @ alpha / (lam * n), rtol=1e-10, atol=1e-12)
    primal = _weighted_primal(X, y_signed, weight, model.coef_, lam, loss)
    dual = _weighted_dual(X, y_signed, weight, alpha, lam, loss)
    assert primal == pytest.approx(model.primal_, rel=1e-12)
    assert dual == pytest.approx(model.dual_, rel=1e-12)
    # LIBLINEAR with per-instance weights C_i = C s_i solves the same problem (times C n)
    if loss == "logistic":
        est = LogisticRegression(solver="liblinear", C=C, tol=1e-12, max_iter=100000, fit_intercept=False,
                                 random_state=0)
    else:
        est = LinearSVC(loss=loss, dual=True, C=C, tol=1e-12, max_iter=100000, fit_intercept=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y, sample_weight=weight)
    p_ref = _weighted_primal(X, y_signed, weight, est.coef_.ravel(), lam, loss)
    assert abs(primal - p_ref) <= 100 * tol * abs(p_ref)
    assert primal - p_ref <= model.gap_ + 1e-15  # the gap bounds P(w) - P*


@pytest.mark.parametrize("solver, extra", WEIGHTED_SOLVERS[:2], ids=SOLVER_IDS[:2])
def test_integer_weights_equal_repeated_rows_and_zero_weights_removed_rows(heart, solver, extra):
    X, y, weight = heart
    n, C = X.shape[0], 0.5
    weighted = daskdca.fit(X, y, loss="logistic", lam=1.0 / (C * n), solver=solver, tol=1e-12, sample_weight=weight,
                           **extra)
    # 0.5 is not an integer weight: the repeated fit has every row 2 s_i times, at C / 2
    reps = (2 * weight).astype(int)
    Xr, yr = X[np.repeat(np.arange(n), reps)], np.repeat(y, reps)
    repeated = daskdca.fit(Xr, yr, loss="logistic", lam=1.0 / (C / 2 * Xr.shape[0]), solver=solver, tol=1e-12,
                           **extra)
    y_signed = np.where(y == weighted.classes_[1], 1.0, -1.0)
    lam = 1.0 / (C * n)
    # both minimise C sum_i s_i phi_i + 1/2 ||w||^2: compare in the weighted problem's units
    p_w = _weighted_primal(X, y_signed, weight, weighted.coef_, lam, "logistic")
    p_r = _weighted_primal(X, y_signed, weight, repeated.coef_, lam, "logistic")
    assert abs(p_w - p_r) <= weighted.gap_ + repeated.gap_ * Xr.shape[0] / (2 * n) + 1e-14
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-5, atol=1e-6)
    # rows of weight 0 are rows removed
    keep = weight > 0
    removed = daskdca.fit(X[keep], y[keep], loss="logistic", lam=1.0 / (C * keep.sum()), solver=solver, tol=1e-12,
                          sample_weight=weight[keep], **extra)
    p_k = _weighted_primal(X, y_signed, weight, removed.coef_, lam, "logistic")
    assert abs(p_w - p_k) <= weighted.gap_ + removed.gap_ * keep.sum() / n + 1e-14
    assert np.all(weighted.dual_coef_[~keep] == 0.0)


def test_dual_init_must_lie_in_the_weighted_box(heart):
    X, y, weight = heart
    lam = 1e-2
    first = daskdca.fit(X, y, loss="hinge", lam=lam, tol=1e-8, sample_weight=weight)
    warm = daskdca.fit(X, y, loss="hinge", lam=lam / 2, tol=1e-8, sample_weight=weight, dual_init=first.dual_coef_)
    cold = daskdca.fit(X, y, loss="hinge", lam=lam / 2, tol=1e-8, sample_weight=weight)
    assert warm.converged_ and abs(warm.primal_ - cold.primal_) <= warm.gap_ + cold.gap_
    signs = np.where(y == first.classes_[1], 1.0, -1.0)
    with pytest.raises(ValueError, match=r"row \d+: its sample_weight is 0, so its dual variable must be 0"):
        daskdca.fit(X, y, loss="hinge", lam=lam, sample_weight=weight, dual_init=signs * 0.25)
    half = int(np.flatnonzero(weight == 0.5)[0])
    over = np.where(weight > 0, 0.25, 0.0) * signs
    over[half] = 0.75 * signs[half]  # inside the unweighted box [0, 1], outside [0, 0.5]
    with pytest.raises(ValueError, match=rf"at row {half}: .*sample_weight 0\.5\) must lie in \[0, 0\.5\]"):
        daskdca.fit(X, y, loss="hinge", lam=lam, sample_weight=weight, dual_init=over)


# --------------------------------------------------------------------------
# estimators


def test_class_weight_matches_liblinear_one_vs_rest_on_digits():
    """LIBLINEAR's convention: problem k weighs class k's rows by its class weight and the others by 1."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    n, C = X.shape[0], 0.01
    rng = np.random.default_rng(0)
    sample_weight = rng.uniform(0.0, 3.0, n)
    for class_weight in ("balanced", {0: 3.0, 5: 0.5}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # the squared hinge: LIBLINEAR's primal Newton solver converges tightly (its dual hinge solver
            # stopped up to 1.5e-5 above the optimum here)
            est = LinearSVC(C=C, loss="squared_hinge", dual=False, tol=1e-12, max_iter=200000,
                            class_weight=class_weight, random_state=0).fit(X, y, sample_weight=sample_weight)
        clf = SDCAClassifier("squared_hinge", C=C, tol=1e-10, max_iter=100000, class_weight=class_weight).fit(
            X, y, sample_weight=sample_weight)
        assert clf.converged_.all()
        per_class = compute_class_weight(class_weight, classes=clf.classes_, y=y, sample_weight=sample_weight)
        for k, label in enumerate(clf.classes_):
            ys = np.where(y == label, 1.0, -1.0)
            s = sample_weight * np.where(y == label, per_class[k], 1.0)

            def objective(w, b):
                hinge = np.maximum(0.0, 1.0 - ys * (X @ w + b))
                return float(np.mean(s * hinge * hinge) + 0.5 / (C * n) * (w @ w + b * b))

            ours, theirs = objective(clf.coef_[k], clf.intercept_[k]), objective(est.coef_[k], est.intercept_[k])
            assert ours == pytest.approx(clf.primal_[k], rel=1e-12)
            assert abs(ours - theirs) <= 1e-8 * theirs
            assert ours - theirs <= clf.gap_[k] + 1e-15


def test_binary_class_weight_weighs_each_row_by_its_class(heart):
    X, y, _ = heart
    class_weight = {y.min(): 4.0, y.max(): 0.5}
    clf = SDCAClassifier(loss="logistic", C=0.5, tol=1e-10, fit_intercept=False, class_weight=class_weight).fit(X, y)
    row_weight = np.where(y == y.min(), 4.0, 0.5)
    direct = daskdca.fit(X, y, loss="logistic", lam=1.0 / (0.5 * X.shape[0]), tol=1e-10, sample_weight=row_weight)
    np.testing.assert_array_equal(clf.coef_[0], direct.coef_)


def test_regressor_sample_weight_is_ridge_with_weights(heart):
    X, y, weight = heart
    Xd = X.toarray()
    target = Xd @ np.linspace(-1, 1, Xd.shape[1]) + 0.1 * np.random.default_rng(0).normal(size=Xd.shape[0])
    C = 2.0
    reg = SDCARegressor(C=C, tol=1e-12, fit_intercept=False, max_iter=20000).fit(Xd, target, sample_weight=weight)
    # closed form of min 1/n sum s_i (x_i.w - y_i)^2 / 2 + lam/2 ||w||^2
    n = Xd.shape[0]
    lam = 1.0 / (C * n)
    w = np.linalg.solve(Xd.T @ (weight[:, None] * Xd) / n + lam * np.eye(Xd.shape[1]), Xd.T @ (weight * target) / n)
    np.testing.assert_allclose(reg.coef_, w, rtol=1e-5, atol=1e-7)


def test_warm_start_projects_onto_the_new_weights(heart):
    X, y, weight = heart
    clf = SDCAClassifier(C=0.5, tol=1e-8, warm_start=True, keep_dual=True).fit(X, y)
    clf.fit(X, y, sample_weight=weight)  # the unweighted duals projected onto the weighted box
    cold = SDCAClassifier(C=0.5, tol=1e-8).fit(X, y, sample_weight=weight)
    assert clf.converged_.all()
    assert abs(clf.primal_[0] - cold.primal_[0]) <= clf.gap_[0] + cold.gap_[0]
    ys = np.where(y == clf.classes_[1], 1.0, -1.0)
    b = ys * clf.dual_coef_[0]
    assert np.all(b >= 0) and np.all(b <= weight)


# --------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("sample_weight, match", [
    (np.full(270, -1.0), r"sample_weight must be >= 0, got -1\.0 at row 0 \(270 rows are negative\)"),
    (np.r_[np.ones(269), np.nan], r"non-finite value \(nan\) at row 269"),
    (np.ones(10), r"sample_weight has shape \(10,\) but X has 270 rows"),
    (np.zeros(270), r"zero for every row"),
    ("heavy", r"sample_weight must be None, a float or an array"),
])
def test_bad_sample_weight_names_the_value_and_the_fix(heart, sample_weight, match):
    X, y, _ = heart
    with pytest.raises(ValueError, match=match):
        daskdca.fit(X, y, sample_weight=sample_weight)


def test_a_solver_without_weighted_steps_refuses_them(heart):
    X, y, weight = heart
    for solver in ("sdna", "spdc", "pegasos", CoCoAPlus(local_solver="sdna")):
        with pytest.raises(ValueError, match=r"does not support sample_weight or class_weight.*'cocoa\+'"):
            daskdca.fit(X, y, loss="logistic", solver=solver, sample_weight=weight)


def test_a_float_weight_is_every_row_s_weight(heart):
    X, y, _ = heart
    a = daskdca.fit(X, y, loss="logistic", lam=0.01, tol=1e-10, sample_weight=2.0)
    b = daskdca.fit(X, y, loss="logistic", lam=0.01, tol=1e-10, sample_weight=np.full(X.shape[0], 2.0))
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_class_weight_with_an_unknown_label_raises(heart):
    X, y, _ = heart
    with pytest.raises(ValueError, match="not in class_weight|not found"):
        SDCAClassifier(class_weight={7: 2.0}).fit(X, y)


def test_path_and_cv_carry_the_weights(heart):
    X, y, weight = heart
    Cs = [0.01, 0.1, 1.0]
    res = daskdca.path(X, y, Cs, loss="logistic", tol=1e-10, fit_intercept=False, sample_weight=weight)
    for k, C in enumerate(res.Cs):
        direct = daskdca.fit(X, y, loss="logistic", lam=1.0 / (C * X.shape[0]), tol=1e-10, sample_weight=weight)
        # (each gap, at these tolerances, may be a rounding's width below zero)
        assert abs(res.primal[k] - direct.primal_) <= max(res.gap[k], 0) + max(direct.gap_, 0) + 1e-15
    cv = daskdca.SDCAClassifierCV(Cs=Cs, cv=3, loss="logistic", class_weight="balanced", tol=1e-8).fit(
        X, y, sample_weight=weight)
    refit = SDCAClassifier(loss="logistic", C=cv.C_, class_weight="balanced", tol=1e-8).fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(cv.coef_, refit.coef_)
    assert cv.get_params()["class_weight"] == "balanced"


# --------------------------------------------------------------------------
# the store and the cluster


@pytest.fixture(scope="module")
def client():
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def test_a_weighted_store_keeps_its_weights_with_its_rows_and_checks_them(heart, tmp_path):
    import zarr

    from daskdca.store import StoreError, open_store, rewrite_store, write_store

    X, y, weight = heart
    store = write_store(str(tmp_path / "w.zarr"), X, y, sample_weight=weight, block_rows=50)  # shuffled
    assert store.weighted and not write_store(str(tmp_path / "u.zarr"), X, y).weighted
    perm = store.row_permutation
    got = np.concatenate([store.read_block(k, with_weight=True)[2] for k in range(store.n_blocks)])
    np.testing.assert_array_equal(got, weight[perm])
    with pytest.raises(ValueError, match="weighted store .* not supported yet"):
        rewrite_store(store, str(tmp_path / "r.zarr"), shuffle=True)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        write_store(str(tmp_path / "bad.zarr"), X, y, sample_weight=-weight)
    assert not (tmp_path / "bad.zarr").exists()
    # a changed weight fails the block's checksum, like any other array of the block
    group = zarr.open_group(str(tmp_path / "w.zarr"), mode="r+")
    group["sample_weight"][3] = group["sample_weight"][3] + 1.0
    with pytest.raises(StoreError, match=r"block 0 .* does not match its checksum"):
        open_store(str(tmp_path / "w.zarr")).read_block(0)


def test_weighted_fits_on_a_cluster_in_memory_out_of_core_and_from_arrays(heart, tmp_path, client):
    from daskdca.store import write_store

    X, y, weight = heart
    lam = 0.1  # 52 CoCoA+ rounds to 1e-9 (443 at lam = 1e-2: 110 s of cluster rounds for this test)
    reference = daskdca.fit(X, y, loss="logistic", lam=lam, tol=1e-9, sample_weight=weight)
    store = write_store(str(tmp_path / "w.zarr"), X, y, sample_weight=weight, block_rows=135)
    for in_memory in (True, False):
        model = daskdca.fit(store, loss="logistic", lam=lam, tol=1e-9, client=client, n_partitions=2,
                            in_memory=in_memory)
        assert model.converged_ and abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_
        # the certificate from the returned duals, in the store's row order
        perm = store.row_permutation
        ys = np.where(y[perm] == model.classes_[1], 1.0, -1.0)
        assert _weighted_dual(X[perm], ys, weight[perm], model.dual_coef_, lam, "logistic") == pytest.approx(
            model.dual_, rel=1e-12)
    # in-memory arrays with a client: the partitions of the in-process fit, so the same bits
    on_cluster = daskdca.fit(X, y, loss="logistic", lam=lam, tol=1e-8, client=client, n_partitions=2,
                             sample_weight=weight)
    in_process = daskdca.fit(X, y, loss="logistic", lam=lam, tol=1e-8, solver="cocoa+", n_partitions=2,
                             sample_weight=weight)
    np.testing.assert_array_equal(on_cluster.coef_, in_process.coef_)
    np.testing.assert_array_equal(on_cluster.dual_coef_, in_process.dual_coef_)
    with pytest.raises(ValueError, match="a store carries its own row weights"):
        daskdca.fit(store, loss="logistic", client=client, sample_weight=weight)
    with pytest.raises(ValueError, match="does not support sample_weight"):
        daskdca.fit(store, loss="logistic", solver="sdna", client=client)


def test_weights_of_a_dask_array_are_checked_as_in_memory(heart):
    """A dask array X takes weights (tests/test_dataframe_inputs.py fits with them); a wrong shape is refused
    with the same message as in memory."""
    import dask.array as da

    X, y, weight = heart
    with pytest.raises(ValueError, match=r"sample_weight has shape \(269,\) but X has 270 rows"):
        daskdca.fit(da.from_array(X.toarray(), chunks=(100, -1)), y, sample_weight=weight[:-1])
