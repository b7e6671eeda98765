"""The Crammer-Singer multi-class SVM (daskdca.methods.crammer_singer, daskdca.kernels.crammer_singer).

The row step against a Brent reference and a generic QP solver; the kernel against the NumPy reference
(tests/reference_crammer_singer.py) on the same row sequence; the fit against scikit-learn's
``LinearSVC(multi_class="crammer_singer")`` (LIBLINEAR's ``-s 4``) at the same objective (``C = 1/(lam n)``:
LIBLINEAR minimises ``C sum_i loss_i + 1/2 ||W||^2``, which is ``C n`` times ours); the certificate
recomputed here from the returned duals; the dual never falls; in process equals the cluster; the
estimator; the errors.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits, load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import daskdca
import reference_crammer_singer as ref
from conftest import load_dataset
from daskdca import CrammerSingerSVM, SDCAClassifier
from daskdca.driver import in_process_partitions
from daskdca.kernels.crammer_singer import (crammer_singer_objective_sums, crammer_singer_step,
                                            local_crammer_singer_sdca)
from daskdca.kernels.sampling import permutation_order
from daskdca.losses import CrammerSinger
from daskdca.methods import DataInfo
from daskdca.methods.crammer_singer import CrammerSingerPlan
from daskdca.methods.protocol import Plan
from daskdca.partitions import OneVsRest, objective_sums_part, rows_from_csr, xt_alpha_part
from daskdca.problem import max_column_nnz

pytestmark = pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")


def _digits(n=None):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return (X, y) if n is None else (X[:n], y[:n])


def _iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _heart3():
    """heart (real LIBSVM data) relabelled into three classes: absent; present, sex feature < 0; present, >= 0."""
    X, y = load_dataset("heart")
    sex = X[:, 1].toarray().ravel()
    return X, np.where(y < 0, 0, np.where(sex < 0, 1, 2))


def _objective(X, y, W, lam, sample_weight=None):
    """Our P(W) (no intercept): the mean weighted Crammer-Singer loss plus lam/2 ||W||_F^2."""
    return ref.objectives(X, y, sample_weight, np.zeros((W.shape[0], X.shape[0])), W, lam)[0]


def _liblinear(X, y, lam, sample_weight=None, class_weight=None, fit_intercept=False):
    """LIBLINEAR's -s 4 at C = 1/(lam n), to its rounding (dense X: scikit-learn takes int32 indices only)."""
    X = X.toarray() if sp.issparse(X) else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LinearSVC(multi_class="crammer_singer", C=1.0 / (lam * X.shape[0]), fit_intercept=fit_intercept,
                       class_weight=class_weight, tol=1e-10, max_iter=20000)
        return sk.fit(X, y, sample_weight=sample_weight)


# -- the row step and the kernel ----------------------------------------------------------------

def _random_row(rng, classes=(2, 12)):
    K = int(rng.integers(*classes))
    y = int(rng.integers(K))
    s = 10 ** rng.uniform(-1, 1)
    beta = np.eye(K)[rng.integers(K)] if rng.random() < 0.3 else rng.dirichlet(np.ones(K) * 10 ** rng.uniform(-2, 1))
    alpha0 = s * (np.eye(K)[y] - beta)  # a feasible start
    m = rng.normal(size=K) * 10 ** rng.uniform(-2, 2)
    return m, alpha0, y, s, 10 ** rng.uniform(-3, 4)


def test_the_row_step_is_the_exact_maximiser():
    rng = np.random.default_rng(0)
    alpha, work = np.empty(60), np.empty(60)
    worst = worst_qp = 0.0
    for trial in range(1000):
        # up to 11 classes (the insertion sort), and beyond 32 (ndarray.sort) in every tenth trial
        m, alpha0, y, s, q = _random_row(rng, (33, 60) if trial % 10 == 9 else (2, 12))
        K = m.shape[0]
        a = alpha[:K]
        crammer_singer_step(m, alpha0, y, s, q, a, work[:K])
        # feasible: the others <= 0, alpha_y <= s, the sum 0 to the rounding of one sum
        others = np.delete(a, y)
        assert others.max() <= 0.0 and a[y] <= s and abs(a.sum()) <= 1e-15 * K * s
        worst = max(worst, np.abs(a - ref.crammer_singer_step(m, alpha0, y, s, q)).max() / s)
        if trial < 100:  # a generic QP solver (SLSQP, about 1e-9) finds no better value, and the same point
            gain = ref.step_value(m, alpha0, y, q, a)
            # the duals are exact to rounding of size eps |m| / q (the problem's own conditioning), the value
            # to that times |m|
            scale = (1.0 + np.abs(m).max() + q * s) * s * K
            assert gain >= -1e-14 * scale * (1.0 + np.abs(m).max() / q)  # the start is feasible: no loss
            qp, solved = ref.qp_step(m, alpha0, y, s, q)
            if solved:
                assert gain >= ref.step_value(m, alpha0, y, q, qp) - 1e-8 * scale
                if q >= 1e-2:
                    worst_qp = max(worst_qp, np.abs(a - qp).max() / s)
    assert worst < 1e-12
    assert worst_qp < 1e-6
    # a zero row (q = 0): the vertex of the largest m_k + 1[k != y], all of s on it
    crammer_singer_step(np.zeros(3), np.zeros(3), 1, 2.0, 0.0, alpha[:3], work[:3])
    assert_array_equal(alpha[:3], [-2.0, 2.0, 0.0])


@pytest.mark.parametrize("sigma, weighted", [(1.0, False), (1.0, True), (3.0, True)])
def test_kernel_equals_the_numpy_reference_on_the_same_rows(sigma, weighted):
    X, y = _digits(300)
    X = sp.csr_matrix(X)
    n, d, K = X.shape[0], X.shape[1], 10
    lam_n = 1e-2 * n
    rng = np.random.default_rng(1)
    weight = rng.uniform(0.2, 3.0, n) if weighted else None
    if weighted:
        weight[[3, 17]] = 0.0  # rows of weight 0 are skipped
    rows = rows_from_csr(X, y.astype(np.float64), weight)
    cls = y.astype(np.int64)
    order = np.concatenate([permutation_order(5, r, 0, n, n, 0) for r in range(2)])  # two epochs
    alpha, u, delta_w = np.zeros((K, n)), np.zeros((K, d)), np.zeros((K, d))
    local_crammer_singer_sdca(rows.indptr, rows.indices, rows.data, cls, rows.weight, rows.sqnorm, alpha, u, delta_w,
                              order, lam_n, sigma, True)
    a_ref, u_ref, dw_ref = np.zeros((K, n)), np.zeros((K, d)), np.zeros((K, d))
    ref.local_crammer_singer_sdca(X, cls, weight, a_ref, u_ref, dw_ref, order, lam_n, sigma, True)
    assert_allclose(alpha, a_ref, rtol=0, atol=1e-12)
    assert_allclose(u, u_ref, rtol=0, atol=1e-12)
    assert_allclose(delta_w, dw_ref, rtol=0, atol=1e-12)
    assert np.all(alpha[:, [3, 17]] == 0.0) if weighted else True
    # the gap sums of the kernel are the reference's P and D
    lam = lam_n / n
    loss_sum, conj_sum = crammer_singer_objective_sums(rows.indptr, rows.indices, rows.data, cls, rows.weight,
                                                       alpha, u, 0, n)
    primal, dual, W_alpha = ref.objectives(X, cls, weight, alpha, u, lam)
    assert loss_sum / n + lam / 2 * (u ** 2).sum() == pytest.approx(primal, rel=1e-13)
    assert -conj_sum / n - lam / 2 * (W_alpha ** 2).sum() == pytest.approx(dual, rel=1e-13)


# -- the fit against LIBLINEAR, and its certificate ---------------------------------------------

@pytest.mark.parametrize("data, lam", [(_iris, 1e-2), (_digits, 1e-2), (_heart3, 1e-2)], ids=["iris", "digits",
                                                                                              "heart3"])
def test_objective_equals_liblinears_and_the_certificate_holds(data, lam):
    X, y = data()
    n, K = X.shape[0], 3 if data is not _digits else 10
    m = daskdca.fit(X, y, loss="hinge", lam=lam, solver="crammer_singer", tol=1e-8, max_rounds=10000)
    assert m.converged_ and m.coef_.shape == (K, X.shape[1]) and m.dual_coef_.shape == (K, n)
    sk = _liblinear(X, y, lam)
    p_sk = _objective(X, y, sk.coef_, lam)
    assert m.primal_ == pytest.approx(p_sk, rel=1e-6)
    assert p_sk >= m.dual_ - 1e-12 * m.primal_  # weak duality: our certified dual bounds LIBLINEAR's primal
    # the certificate from the returned duals alone: the dual domain, W = W(alpha), P - D
    alpha = m.dual_coef_
    rows = np.arange(n)
    assert np.abs(alpha.sum(axis=0)).max() <= 1e-14 and alpha[y, rows].max() <= 1.0
    assert np.delete(alpha.T.ravel(), rows * K + y).max() <= 0.0
    primal, dual, W_alpha = ref.objectives(X, y, None, alpha, m.coef_, lam)
    assert_allclose(m.coef_, W_alpha, rtol=1e-12, atol=1e-14)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    assert -1e-12 * m.primal_ <= m.gap_ <= 1e-8 * m.primal_
    assert m.dual_ == pytest.approx(-CrammerSinger(K).conjugate(y, alpha).mean() - lam / 2 * (W_alpha ** 2).sum(),
                                    rel=1e-12)


def test_the_dual_never_falls():
    X, y = _heart3()
    m = daskdca.fit(X, y, loss="hinge", lam=1e-3, solver="crammer_singer", tol=0.0, max_rounds=40)
    duals = np.array([r.dual for r in m.history_])
    primals = np.array([r.primal for r in m.history_])
    assert np.all(np.diff(duals) >= -1e-15 * np.abs(duals[1:]))
    assert np.all(primals >= duals - 1e-15)


def test_heart_three_classes_weighted_equals_liblinear():
    """Sample and class weights: LIBLINEAR's -s 4 (scikit-learn's build) weighs each row's loss by both, C s_i."""
    X, y = _heart3()
    n = X.shape[0]
    lam = 1e-2
    rng = np.random.default_rng(4)
    sample_weight = rng.uniform(0.5, 2.0, n)
    class_weight = {0: 1.0, 1: 3.0, 2: 0.5}
    m = daskdca.fit(X, y, loss="hinge", lam=lam, solver="crammer_singer", tol=1e-8, sample_weight=sample_weight,
                    class_weight=class_weight, max_rounds=10000)
    s = sample_weight * np.array([1.0, 3.0, 0.5])[y]
    sk = _liblinear(X, y, lam, sample_weight=sample_weight, class_weight=class_weight)
    assert m.converged_
    assert m.primal_ == pytest.approx(_objective(X, y, sk.coef_, lam, s), rel=1e-6)
    primal, dual, W_alpha = ref.objectives(X, y, s, m.dual_coef_, m.coef_, lam)
    assert_allclose(m.coef_, W_alpha, rtol=1e-12, atol=1e-14)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    assert m.dual_coef_[y, np.arange(n)].max() <= s.max() and np.all(m.dual_coef_[y, np.arange(n)] <= s)


def test_partitions_run_cocoa_rounds_and_certify():
    X, y = _heart3()
    lam = 1e-2
    one = daskdca.fit(X, y, loss="hinge", lam=lam, solver="crammer_singer", tol=1e-9, max_rounds=10000)
    three = daskdca.fit(X, y, loss="hinge", lam=lam, solver=CrammerSingerSVM(local_iters=2), n_partitions=3,
                        tol=1e-7, max_rounds=10000)
    assert three.converged_ and three.plan_.sigma_prime == 3.0 and isinstance(three.plan_, CrammerSingerPlan)
    assert three.primal_ == pytest.approx(one.primal_, rel=1e-7)
    primal, dual, W_alpha = ref.objectives(X, y, None, three.dual_coef_, three.coef_, lam)
    assert three.primal_ == pytest.approx(primal, rel=1e-12) and three.dual_ == pytest.approx(dual, rel=1e-12)
    again = daskdca.fit(X, y, loss="hinge", lam=lam, solver=CrammerSingerSVM(local_iters=2), n_partitions=3,
                        tol=1e-7, max_rounds=10000)
    assert_array_equal(again.dual_coef_, three.dual_coef_)


def test_two_classes_are_the_binary_hinge_fit():
    """daskdca.fit: the binary hinge problem at lam (the Crammer-Singer one at 2 lam), as the multinomial does."""
    X, y = load_dataset("heart")
    m = daskdca.fit(X, y, loss="hinge", lam=1e-2, solver="crammer_singer", tol=1e-10)
    b = daskdca.fit(X, y, loss="hinge", lam=1e-2, solver="sdca", tol=1e-10)
    assert m.coef_.shape == (13,) and m.primal_ == pytest.approx(b.primal_, rel=1e-9)


def test_the_plan_is_a_protocol_plan_and_the_certificate_sums_are_the_kernels():
    X, y = _heart3()
    problems = OneVsRest((0.0, 1.0, 2.0), (1.0, 1.0, 1.0))
    parts, _ = in_process_partitions(X, y.astype(np.float64), 2, 0, problems=problems)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts),
                    loss=CrammerSinger(3), lam=1e-2, max_column_nnz=max_column_nnz(X))
    plan = CrammerSingerSVM().setup(info, None)
    assert isinstance(plan, CrammerSingerPlan) and isinstance(plan, Plan)
    alpha = np.zeros((3, parts[0].n_rows))
    sums = objective_sums_part(parts[0], alpha, np.zeros((3, 13)), CrammerSinger(3))
    # at W = 0 every row's loss is 1 (the max over the other classes), and alpha = 0 adds 0
    assert sums.shape == (2,) and sums[0] == parts[0].n_rows and sums[1] == 0.0
    assert xt_alpha_part(parts[0], alpha, 1.0).shape == (3, 13)
    # duals off the domain have an infinite conjugate (a damaged checkpoint is refused on it)
    alpha[0, 0] = 0.5
    assert objective_sums_part(parts[0], alpha, np.zeros((3, 13)), CrammerSinger(3))[1] == np.inf


def test_out_of_core_and_cluster_give_the_in_process_bits(tmp_path):
    """Arrays with a client: the in-process bits.  A store of one block per partition: the same bits in memory
    and out of core; of several blocks per partition (visited block by block out of core): certified from the
    returned duals; a checkpoint resumes to the straight bits."""
    distributed = pytest.importorskip("distributed")
    from daskdca.store import write_store

    X, y = _digits(600)
    kwargs = dict(loss="hinge", lam=1e-3, tol=0.0, max_rounds=4, n_partitions=2, solver="crammer_singer")
    in_process = daskdca.fit(X, y, **kwargs)
    whole = write_store(tmp_path / "whole.zarr", X, y, block_rows=300, seed=2)
    blocks = write_store(tmp_path / "blocks.zarr", X, y, block_rows=100, seed=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        on_cluster = daskdca.fit(X, y, client=client, **kwargs)
        assert_array_equal(on_cluster.coef_, in_process.coef_)
        assert_array_equal(on_cluster.dual_coef_, in_process.dual_coef_)
        assert on_cluster.primal_ == in_process.primal_ and on_cluster.dual_ == in_process.dual_
        in_memory, out_of_core = (daskdca.fit(whole, client=client, in_memory=flag, **kwargs) for flag in (True, False))
        assert_array_equal(in_memory.dual_coef_, out_of_core.dual_coef_)
        assert_array_equal(in_memory.coef_, out_of_core.coef_)
        block_by_block = daskdca.fit(blocks, client=client, in_memory=False, **kwargs)
        # a checkpoint stores W (K, d) and every partition's alpha (K, n_k); a resumed fit has the straight bits
        ckpt = str(tmp_path / "ckpt")
        straight = daskdca.fit(blocks, client=client, **{**kwargs, "max_rounds": 6})
        daskdca.fit(blocks, client=client, checkpoint=ckpt, checkpoint_every=2, **{**kwargs, "max_rounds": 3})
        resumed = daskdca.fit(blocks, client=client, checkpoint=ckpt, checkpoint_every=2, resume=True,
                              **{**kwargs, "max_rounds": 6})
        assert_array_equal(resumed.dual_coef_, straight.dual_coef_)
        assert_array_equal(resumed.coef_, straight.coef_)
    for store, m in ((whole, out_of_core), (blocks, block_by_block)):
        X_stored = sp.vstack([store.read_block(k)[0] for k in range(store.n_blocks)])
        labels = np.asarray(store.group["y"][:]).astype(np.int64)
        primal, dual, W_alpha = ref.objectives(X_stored, labels, None, m.dual_coef_, m.coef_, 1e-3)
        assert_allclose(m.coef_, W_alpha, rtol=1e-12, atol=1e-14)
        assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
        assert m.dual_ > m.history_[0].dual


# -- the estimator ----------------------------------------------------------------------------------

def test_estimator_on_digits_is_liblinears_model():
    X, y = _digits()
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    C = 0.1
    clf = SDCAClassifier(C=C, multi_class="crammer_singer", tol=1e-8, max_iter=10000).fit(Xtr, ytr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LinearSVC(C=C, multi_class="crammer_singer", tol=1e-10, max_iter=20000).fit(Xtr, ytr)
    assert clf.converged_.all() and clf.coef_.shape == (10, 64) and clf.intercept_.shape == (10,)
    # the same objective (the intercept a regularised synthetic column, as LIBLINEAR's bias)
    Xa = np.hstack([Xtr, np.ones((Xtr.shape[0], 1))])
    lam = 1.0 / (C * Xtr.shape[0])
    p_sk = _objective(Xa, ytr, np.hstack([sk.coef_, sk.intercept_[:, None]]), lam)
    assert clf.primal_[0] == pytest.approx(p_sk, rel=1e-6) and p_sk >= clf.dual_[0] - 1e-12
    assert abs(clf.score(Xte, yte) - sk.score(Xte, yte)) <= 0.01
    scores = clf.decision_function(Xte)
    assert_array_equal(clf.predict(Xte), clf.classes_[np.argmax(scores, axis=1)])
    back = clf.to_sklearn()
    assert back.multi_class == "crammer_singer" and back.C == C
    assert_array_equal(back.predict(Xte), clf.predict(Xte))
    assert not hasattr(clf, "predict_proba")
    ovr = SDCAClassifier(C=C, tol=1e-8).fit(Xtr, ytr)
    assert not np.allclose(ovr.decision_function(Xte), scores)


def test_estimator_crammer_singer_is_the_augmented_problem():
    X, y = _iris()
    clf = SDCAClassifier(C=0.5, multi_class="crammer_singer", tol=1e-10, keep_dual=True, intercept_scaling=2.0,
                         max_iter=10000).fit(X, y)
    Xa = np.hstack([X, np.full((X.shape[0], 1), 2.0)])
    W = np.hstack([clf.coef_, clf.intercept_[:, None] / 2.0])
    lam = 1.0 / (0.5 * X.shape[0])
    primal, dual, W_alpha = ref.objectives(Xa, y, None, clf.dual_coef_, W, lam)
    assert_allclose(W, W_alpha, rtol=1e-12, atol=1e-14)
    assert clf.primal_[0] == pytest.approx(primal, rel=1e-12) and clf.dual_[0] == pytest.approx(dual, rel=1e-12)
    assert clf.n_iter_.shape == (1,) and len(clf.history_) == 1


def test_estimator_two_classes_are_liblinears_two_class_problem():
    """LinearSVC(multi_class="crammer_singer") on two classes solves -s 4 at C: the hinge problem at 2 C, with
    coef_ = w_1 - w_0; the estimator fits the same problem (primal_ its objective)."""
    X, y = load_dataset("heart")
    X = X.toarray()
    C = 0.05
    clf = SDCAClassifier(C=C, multi_class="crammer_singer", fit_intercept=False, tol=1e-10).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LinearSVC(C=C, multi_class="crammer_singer", fit_intercept=False, tol=1e-10, max_iter=50000).fit(X, y)
    n = X.shape[0]
    lam = 1.0 / (C * n)
    assert clf.coef_.shape == sk.coef_.shape == (1, 13)
    # P(W) of W = (-w/2, w/2) is the mean hinge loss of w plus lam/4 ||w||^2
    w = sk.coef_.ravel()
    p_sk = np.maximum(0.0, 1.0 - np.where(y > 0, 1.0, -1.0) * (X @ w)).mean() + lam / 4 * w @ w
    assert clf.primal_[0] == pytest.approx(p_sk, rel=1e-6)
    assert_array_equal(clf.to_sklearn().predict(X), sk.predict(X))


@pytest.mark.parametrize("params, match", [
    (dict(loss="logistic"), "needs loss='hinge'"),
    (dict(loss="squared_hinge"), "needs loss='hinge'"),
    (dict(penalty="elasticnet", l1_ratio=0.5), "penalty='l2' only"),
    (dict(solver="minibatch_sdca"), "runs daskdca.CrammerSingerSVM"),
    (dict(solver=daskdca.MultinomialSDCA()), "runs daskdca.CrammerSingerSVM"),
])
def test_estimator_refuses_what_crammer_singer_cannot_fit(params, match):
    X, y = _digits(200)
    with pytest.raises(ValueError, match=match):
        SDCAClassifier(multi_class="crammer_singer", **params).fit(X, y)


def test_bad_input_is_refused_by_name():
    X, y = _digits(200)
    with pytest.raises(ValueError, match="solver='crammer_singer' does not support loss='logistic'"):
        daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="crammer_singer")
    with pytest.raises(ValueError, match="solver='crammer_singer' cannot start from given dual variables"):
        daskdca.fit(X, y, loss="hinge", lam=1e-2, solver="crammer_singer", dual_init=np.zeros((10, 200)))
    with pytest.raises(ValueError, match="crammer_singer"):
        SDCAClassifier(multi_class="crammer-singer").fit(X, y)
    with pytest.raises(ValueError, match="local_iters"):
        CrammerSingerSVM(local_iters=0)
    with pytest.raises(ValueError, match="CrammerSinger needs n_classes"):
        CrammerSinger(1)
