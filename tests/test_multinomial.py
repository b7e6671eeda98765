"""Multinomial logistic regression (daskdca.methods.multinomial, daskdca.kernels.multinomial).

The kernel against the NumPy reference (tests/reference_multinomial.py) on the same row
sequence; the fit against scikit-learn's multinomial ``LogisticRegression`` at the same
objective (``C = 1/(lam n)``: scikit-learn minimises ``C sum_i loss_i + 1/2 ||W||^2``, which is
``C n`` times ours); the certificate recomputed here from the returned duals; the dual never
falls; in process equals the cluster; the estimator's accuracy and errors.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

import daskdca
import reference_multinomial as ref
from conftest import load_dataset
from daskdca import MultinomialSDCA, SDCAClassifier
from daskdca.driver import in_process_partitions
from daskdca.kernels.multinomial import entropy_simplex_step, local_multinomial_sdca, multinomial_objective_sums
from daskdca.kernels.sampling import permutation_order
from daskdca.losses import Softmax
from daskdca.methods import DataInfo
from daskdca.methods.multinomial import MultinomialPlan
from daskdca.methods.protocol import Plan
from daskdca.partitions import OneVsRest, objective_sums_part, rows_from_csr, xt_alpha_part
from daskdca.problem import max_column_nnz

pytestmark = pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")


def _digits(n=None):
    X, y = load_digits(return_X_y=True)
    X, y = X / 16.0, y
    return (X, y) if n is None else (X[:n], y[:n])


def _heart3():
    """heart (real LIBSVM data) relabelled into three classes: absent; present, sex feature < 0; present, >= 0."""
    X, y = load_dataset("heart")
    sex = X[:, 1].toarray().ravel()
    return X, np.where(y < 0, 0, np.where(sex < 0, 1, 2))


def _sklearn_objective(X, y, W, lam, sample_weight=None):
    """Our P(W) (no intercept): the mean weighted softmax loss plus lam/2 ||W||_F^2."""
    Z = np.asarray(X @ W.T)
    top = Z.max(axis=1)
    loss = top + np.log(np.exp(Z - top[:, None]).sum(axis=1)) - Z[np.arange(X.shape[0]), y]
    s = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return (s * loss).sum() / X.shape[0] + lam / 2 * (W ** 2).sum()


def _sklearn_fit(X, y, lam, sample_weight=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LogisticRegression(C=1.0 / (lam * X.shape[0]), fit_intercept=False, tol=1e-12, max_iter=100000)
        return sk.fit(X, y, sample_weight=sample_weight)


# -- the row step and the kernel ----------------------------------------------------------------

def test_the_row_step_is_the_exact_maximiser():
    rng = np.random.default_rng(0)
    beta, t = np.empty(12), np.empty(12)
    worst = 0.0
    for _ in range(300):
        K = int(rng.integers(2, 12))
        m = rng.normal(size=K) * 10 ** rng.uniform(-2, 2)
        beta0 = rng.dirichlet(np.ones(K) * 10 ** rng.uniform(-2, 1))
        sq = 10 ** rng.uniform(-4, 5)
        entropy_simplex_step(m, beta0, sq, beta[:K], t[:K])
        worst = max(worst, np.abs(beta[:K] - ref.entropy_simplex_step(m, beta0, sq)).max())
        assert beta[:K].min() >= 0.0 and beta[:K].sum() == pytest.approx(1.0, abs=1e-15)
    assert worst < 1e-13
    # a zero row (sq = 0): the softmax of the margins
    entropy_simplex_step(np.array([1.0, 2.0, 3.0]), np.full(3, 1 / 3), 0.0, beta[:3], t[:3])
    assert_allclose(beta[:3], np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum(), rtol=1e-15)


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
    local_multinomial_sdca(rows.indptr, rows.indices, rows.data, cls, rows.weight, rows.sqnorm, alpha, u, delta_w,
                           order, lam_n, sigma, True)
    a_ref, u_ref, dw_ref = np.zeros((K, n)), np.zeros((K, d)), np.zeros((K, d))
    ref.local_multinomial_sdca(X, cls, weight, a_ref, u_ref, dw_ref, order, lam_n, sigma, True)
    assert_allclose(alpha, a_ref, rtol=0, atol=1e-12)
    assert_allclose(u, u_ref, rtol=0, atol=1e-12)
    assert_allclose(delta_w, dw_ref, rtol=0, atol=1e-12)
    assert np.all(alpha[:, [3, 17]] == 0.0) if weighted else True
    # the gap sums of the kernel are the reference's P and D
    lam = lam_n / n
    loss_sum, conj_sum = multinomial_objective_sums(rows.indptr, rows.indices, rows.data, cls, rows.weight, alpha,
                                                    u, 0, n)
    primal, dual, _ = ref.objectives(X, cls, weight, alpha, u, lam)
    assert loss_sum / n + lam / 2 * (u ** 2).sum() == pytest.approx(primal, rel=1e-13)
    W_alpha = np.asarray((X.T @ alpha.T).T) / lam_n
    assert -conj_sum / n - lam / 2 * (W_alpha ** 2).sum() == pytest.approx(dual, rel=1e-13)


# -- the fit against scikit-learn, and its certificate -------------------------------------------

@pytest.mark.parametrize("lam", [1e-3, 1e-2])
def test_digits_objective_equals_sklearns_and_the_certificate_holds(lam):
    X, y = _digits()
    n = X.shape[0]
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial", tol=1e-12)
    assert m.converged_ and m.coef_.shape == (10, 64) and m.dual_coef_.shape == (10, n)
    sk = _sklearn_fit(X, y, lam)
    assert m.primal_ == pytest.approx(_sklearn_objective(X, y, sk.coef_, lam), rel=1e-8)
    assert_allclose(m.coef_, sk.coef_, atol=1e-4)
    # the certificate from the returned duals alone: every beta_i in the simplex, W = W(alpha), P - D
    beta = np.eye(10)[y].T - m.dual_coef_
    assert beta.min() >= 0.0 and np.abs(beta.sum(axis=0) - 1.0).max() < 1e-14
    primal, dual, W_alpha = ref.objectives(X, y, None, m.dual_coef_, m.coef_, lam)
    assert_allclose(m.coef_, W_alpha, rtol=1e-12, atol=1e-14)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    assert -1e-12 * m.primal_ <= m.gap_ <= 1e-12 * m.primal_
    assert m.dual_ == pytest.approx(-Softmax(10).conjugate(y, m.dual_coef_).mean() - lam / 2 * (W_alpha ** 2).sum(),
                                    rel=1e-12)


def test_the_dual_never_falls():
    X, y = _heart3()
    m = daskdca.fit(X, y, loss="logistic", lam=1e-3, solver="multinomial", tol=0.0, max_rounds=40)
    duals = np.array([r.dual for r in m.history_])
    primals = np.array([r.primal for r in m.history_])
    assert np.all(np.diff(duals) >= -1e-15 * np.abs(duals[1:]))
    assert np.all(primals >= duals - 1e-15)


def test_heart_three_classes_weighted_equals_sklearn():
    """Real LIBSVM data in three classes, with sample and class weights (scikit-learn weighs the rows' losses
    alike: C sum_i s_i loss_i)."""
    X, y = _heart3()
    n = X.shape[0]
    lam = 1e-3
    rng = np.random.default_rng(4)
    sample_weight = rng.uniform(0.5, 2.0, n)
    class_weight = {0: 1.0, 1: 3.0, 2: 0.5}
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial", tol=1e-12, sample_weight=sample_weight,
                    class_weight=class_weight)
    s = sample_weight * np.array([1.0, 3.0, 0.5])[y]
    sk = _sklearn_fit(X, y, lam, sample_weight=s)
    assert m.converged_
    assert m.primal_ == pytest.approx(_sklearn_objective(X, y, sk.coef_, lam, s), rel=1e-8)
    primal, dual, W_alpha = ref.objectives(X, y, s, m.dual_coef_, m.coef_, lam)
    assert_allclose(m.coef_, W_alpha, rtol=1e-12, atol=1e-14)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)


def test_partitions_run_cocoa_rounds_and_certify():
    X, y = _heart3()
    lam = 1e-2
    one = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial", tol=1e-10)
    three = daskdca.fit(X, y, loss="logistic", lam=lam, solver=MultinomialSDCA(local_iters=2), n_partitions=3,
                        tol=1e-8)
    assert three.converged_ and three.plan_.sigma_prime == 3.0
    assert three.primal_ == pytest.approx(one.primal_, rel=1e-8)
    primal, dual, W_alpha = ref.objectives(X, y, None, three.dual_coef_, three.coef_, lam)
    assert three.primal_ == pytest.approx(primal, rel=1e-12) and three.dual_ == pytest.approx(dual, rel=1e-12)
    again = daskdca.fit(X, y, loss="logistic", lam=lam, solver=MultinomialSDCA(local_iters=2), n_partitions=3,
                        tol=1e-8)
    assert_array_equal(again.dual_coef_, three.dual_coef_)


def test_two_classes_are_the_binary_logistic_fit():
    X, y = load_dataset("heart")
    m = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="multinomial", tol=1e-10)
    b = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="sdca", tol=1e-10)
    assert m.coef_.shape == (13,) and m.primal_ == pytest.approx(b.primal_, rel=1e-9)


def test_the_plan_is_a_protocol_plan_and_the_certificate_sums_are_the_kernels():
    X, y = _heart3()
    problems = OneVsRest((0.0, 1.0, 2.0), (1.0, 1.0, 1.0))
    parts, _ = in_process_partitions(X, y.astype(np.float64), 2, 0, problems=problems)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts), loss=Softmax(3),
                    lam=1e-2, max_column_nnz=max_column_nnz(X))
    plan = MultinomialSDCA().setup(info, None)
    assert isinstance(plan, MultinomialPlan) and isinstance(plan, Plan)
    alpha = np.zeros((3, parts[0].n_rows))
    sums = objective_sums_part(parts[0], alpha, np.zeros((3, 13)), Softmax(3))
    assert sums.shape == (2,) and sums[0] == pytest.approx(parts[0].n_rows * np.log(3)) and sums[1] == 0.0
    assert xt_alpha_part(parts[0], alpha, 1.0).shape == (3, 13)


def test_out_of_core_and_cluster_give_the_in_process_bits(tmp_path):
    """Arrays with a client: the in-process bits.  A store of one block per partition: the same bits in memory
    and out of core; of several blocks per partition (visited block by block out of core): certified from the
    returned duals."""
    distributed = pytest.importorskip("distributed")
    from daskdca.store import write_store

    X, y = _digits(600)
    kwargs = dict(loss="logistic", lam=1e-3, tol=0.0, max_rounds=4, n_partitions=2, solver="multinomial")
    in_process = daskdca.fit(X, y, **kwargs)
    whole = write_store(tmp_path / "whole.zarr", X, y, block_rows=300, seed=2)
    blocks = write_store(tmp_path / "blocks.zarr", X, y, block_rows=100, seed=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
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

def test_estimator_accuracy_on_digits_equals_sklearns():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = SDCAClassifier(loss="logistic", C=1.0, multi_class="multinomial", tol=1e-8).fit(Xtr, ytr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LogisticRegression(C=1.0, max_iter=10000).fit(Xtr, ytr)
    assert clf.converged_.all() and clf.coef_.shape == (10, 64) and clf.intercept_.shape == (10,)
    assert abs(clf.score(Xte, yte) - sk.score(Xte, yte)) <= 0.005
    proba = clf.predict_proba(Xte)
    scores = clf.decision_function(Xte)
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    assert_allclose(proba, expected / expected.sum(axis=1, keepdims=True), rtol=1e-12)
    assert_array_equal(clf.predict(Xte), clf.classes_[np.argmax(proba, axis=1)])
    assert_allclose(clf.to_sklearn().predict_proba(Xte), proba, rtol=1e-10)
    ovr = SDCAClassifier(loss="logistic", C=1.0, tol=1e-8, multi_class="ovr").fit(Xtr, ytr)
    assert ovr.multi_class_ == "ovr" and ovr.coef_.shape == (10, 64) and ovr.primal_.shape == (10,)
    assert not np.allclose(ovr.predict_proba(Xte), proba)


def test_estimator_multinomial_is_the_augmented_problem():
    X, y = _digits(500)
    clf = SDCAClassifier(loss="logistic", C=0.5, multi_class="multinomial", tol=1e-10, keep_dual=True,
                         intercept_scaling=2.0).fit(X, y)
    Xa = np.hstack([X, np.full((X.shape[0], 1), 2.0)])
    W = np.hstack([clf.coef_, clf.intercept_[:, None] / 2.0])
    lam = 1.0 / (0.5 * X.shape[0])
    primal, dual, W_alpha = ref.objectives(Xa, y, None, clf.dual_coef_, W, lam)
    assert_allclose(W, W_alpha, rtol=1e-12, atol=1e-14)
    assert clf.primal_[0] == pytest.approx(primal, rel=1e-12) and clf.dual_[0] == pytest.approx(dual, rel=1e-12)
    assert clf.n_iter_.shape == (1,) and len(clf.history_) == 1


@pytest.mark.parametrize("params, match", [
    (dict(loss="hinge"), "needs loss='logistic'"),
    (dict(loss="logistic", penalty="elasticnet", l1_ratio=0.5), "penalty='l2' only"),
    (dict(loss="logistic", solver="minibatch_sdca"), "runs daskdca.MultinomialSDCA"),
])
def test_estimator_refuses_what_multinomial_cannot_fit(params, match):
    X, y = _digits(200)
    with pytest.raises(ValueError, match=match):
        SDCAClassifier(multi_class="multinomial", **params).fit(X, y)


# -- the estimator's default, multi_class="auto" -----------------------------------------------------

def _iris():
    from sklearn.datasets import load_iris

    return load_iris(return_X_y=True)


def _assert_same_fit(a, b):
    for name in ("coef_", "intercept_", "primal_", "dual_", "gap_", "n_iter_", "classes_"):
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("data", ["iris", "digits"])
def test_the_default_for_logistic_on_more_than_two_classes_is_the_explicit_multinomial_fit(data):
    """As scikit-learn's LogisticRegression: loss="logistic" on K > 2 classes fits the softmax problem by
    default, the very fit (bits) of multi_class="multinomial", and says so in multi_class_."""
    X, y = _iris() if data == "iris" else _digits(600)
    default = SDCAClassifier(loss="logistic", C=0.5, tol=1e-8).fit(X, y)
    explicit = SDCAClassifier(loss="logistic", C=0.5, tol=1e-8, multi_class="multinomial").fit(X, y)
    assert default.get_params()["multi_class"] == "auto"
    assert default.multi_class_ == explicit.multi_class_ == "multinomial"
    assert default.route_.solver == "multinomial" and default.primal_.shape == (1,)
    _assert_same_fit(default, explicit)
    assert_array_equal(default.predict_proba(X), explicit.predict_proba(X))
    assert type(default.to_sklearn()) is LogisticRegression
    # log_loss is logistic's scikit-learn name; cocoa+ runs the multinomial method too
    assert SDCAClassifier(loss="log_loss", C=0.5, tol=1e-6).fit(X, y).multi_class_ == "multinomial"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 5 rounds: only what ran is asked here
        rounds = SDCAClassifier(loss="logistic", C=0.5, solver="cocoa+", max_iter=5).fit(X, y)
    assert rounds.multi_class_ == "multinomial" and rounds.route_.n_partitions == 2


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_the_default_for_the_other_losses_stays_one_vs_rest(loss):
    X, y = _digits(400)
    default = SDCAClassifier(loss, C=0.5, tol=1e-6).fit(X, y)
    ovr = SDCAClassifier(loss, C=0.5, tol=1e-6, multi_class="ovr").fit(X, y)
    assert default.multi_class_ == "ovr" and default.primal_.shape == default.n_iter_.shape == (10,)
    _assert_same_fit(default, ovr)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_two_classes_are_the_binary_fit_whatever_the_default(loss):
    X, y = _digits(400)
    y = np.where(y < 5, "low", "high")
    default = SDCAClassifier(loss, C=0.5, tol=1e-8).fit(X, y)
    assert default.multi_class_ == "ovr" and default.coef_.shape == (1, 64)
    _assert_same_fit(default, SDCAClassifier(loss, C=0.5, tol=1e-8, multi_class="ovr").fit(X, y))
    if loss == "logistic":  # multinomial of two classes: the binary problem too (LogisticRegression's)
        explicit = SDCAClassifier(loss, C=0.5, tol=1e-8, multi_class="multinomial").fit(X, y)
        assert explicit.multi_class_ == "ovr"
        _assert_same_fit(default, explicit)


@pytest.mark.parametrize("params", [
    dict(solver="minibatch_sdca", tol=1e-3, max_iter=200),  # a solver that cannot run the multinomial method
    dict(penalty="elasticnet", l1_ratio=0.5),  # the multinomial problem is L2 only
])
def test_auto_falls_back_to_one_vs_rest_where_multinomial_cannot_run(params):
    X, y = _iris()
    params = dict(loss="logistic", C=0.5, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # minibatch_sdca's ConvergenceWarning: the bits are what is compared
        default = SDCAClassifier(**params).fit(X, y)
        ovr = SDCAClassifier(multi_class="ovr", **params).fit(X, y)
    assert default.multi_class_ == "ovr" and default.primal_.shape == (3,)
    _assert_same_fit(default, ovr)


@pytest.mark.parametrize("data, C", [("iris", 1.0), ("digits", 0.1), ("digits", 10.0)])
def test_the_default_objective_equals_lbfgs_logistic_regression(data, C):
    """The default fit's objective against scikit-learn's (multinomial) LogisticRegression(lbfgs) at the same
    C: scikit-learn minimises C sum_i loss_i + 1/2 ||W||^2, C n times our P(W) with lam = 1/(C n), so C is
    the same number in both."""
    X, y = _iris() if data == "iris" else _digits()
    n = X.shape[0]
    lam = 1.0 / (C * n)
    clf = SDCAClassifier(loss="logistic", C=C, fit_intercept=False, tol=1e-10, max_iter=100_000).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LogisticRegression(solver="lbfgs", C=C, fit_intercept=False, tol=1e-12, max_iter=10000).fit(X, y)
    index = np.searchsorted(clf.classes_, y)
    ours, theirs = _sklearn_objective(X, index, clf.coef_, lam), _sklearn_objective(X, index, sk.coef_, lam)
    assert clf.multi_class_ == "multinomial" and clf.converged_.all()
    assert ours == pytest.approx(clf.primal_[0], rel=1e-12)
    assert abs(ours - theirs) <= 1e-6 * theirs
    assert ours - theirs <= clf.gap_[0] + 1e-15 * theirs  # ours is within its certified gap of the optimum


# -- warm starts -------------------------------------------------------------------------------------

def test_the_warm_start_is_the_given_duals_and_their_W_on_permuted_partitions():
    """InProcess.init puts a (K, n) dual_init (caller's order) into 3 permuted partitions and starts at
    W(alpha) = alpha X / (lam n)."""
    from daskdca.driver import InProcess

    X, y = _heart3()
    n, d = X.shape
    lam = 1e-2
    rng = np.random.default_rng(0)
    beta = rng.dirichlet(np.ones(3), n).T  # any distributions: a feasible point
    s = rng.uniform(0.5, 2.0, n)
    alpha = s * (np.eye(3)[y].T - beta)
    problems = OneVsRest((0.0, 1.0, 2.0), (1.0, 1.0, 1.0))
    parts, order = in_process_partitions(X, y.astype(np.float64), 3, 5, s, problems=problems)
    assert order is not None and not np.array_equal(order, np.arange(n))
    info = DataInfo(n=n, d=d, partition_sizes=tuple(p.n_rows for p in parts), loss=Softmax(3), lam=lam,
                    max_column_nnz=max_column_nnz(X))
    ex = InProcess(parts, info, 5, order, dual_init=alpha)
    plan = ex.setup(MultinomialSDCA())
    G, Ls = ex.init(plan)
    assert_allclose(plan.model(G), np.asarray((X.T @ alpha.T).T) / (lam * n), rtol=1e-12, atol=1e-15)
    assert_array_equal(ex.dual_points(plan, G, Ls), alpha)
    # its certificate is the reference's P and D of that point
    _, _, primal, dual = ex.certify(plan, G, Ls)
    p_ref, d_ref, _ = ref.objectives(X, y, s, alpha, plan.model(G), lam)
    assert primal == pytest.approx(p_ref, rel=1e-12) and dual == pytest.approx(d_ref, rel=1e-12)


@pytest.mark.parametrize("n_partitions", [1, 3])
def test_warm_start_at_the_optimum_certifies_in_one_round(n_partitions):
    X, y = _digits()
    lam = 1e-3
    cold = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial", tol=1e-10)
    assert cold.converged_ and cold.n_rounds_ > 10
    warm = daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial", tol=1e-8, dual_init=cold.dual_coef_,
                       n_partitions=n_partitions)
    assert warm.converged_ and warm.n_rounds_ == 1 and len(warm.history_) == 1
    assert abs(warm.primal_ - cold.primal_) <= max(warm.gap_, cold.gap_) + 1e-15 * cold.primal_
    assert_allclose(warm.dual_coef_, cold.dual_coef_, atol=1e-4)  # back in X's row order


def test_warm_start_from_C_to_10C_reaches_the_cold_objective_in_fewer_rounds():
    """heart in three classes, C = 1 -> 10: the duals at one lam are feasible at any (the simplex does not depend
    on lam).  (The rounds saved depend on the data: on the first 600 digits the warm fit takes about as many as
    the cold one.)"""
    X, y = _heart3()
    n = X.shape[0]
    lam_from, lam_to = 1.0 / n, 0.1 / n
    start = daskdca.fit(X, y, loss="logistic", lam=lam_from, solver="multinomial", tol=1e-10)
    cold = daskdca.fit(X, y, loss="logistic", lam=lam_to, solver="multinomial", tol=1e-10)
    warm = daskdca.fit(X, y, loss="logistic", lam=lam_to, solver="multinomial", tol=1e-10, dual_init=start.dual_coef_)
    assert start.converged_ and cold.converged_ and warm.converged_
    assert warm.primal_ == pytest.approx(cold.primal_, rel=1e-9)
    assert warm.n_rounds_ < cold.n_rounds_
    assert warm.history_[0].gap < cold.history_[0].gap
    primal, dual, _ = ref.objectives(X, y, None, warm.dual_coef_, warm.coef_, lam_to)
    assert warm.primal_ == pytest.approx(primal, rel=1e-12) and warm.dual_ == pytest.approx(dual, rel=1e-12)


def test_weighted_warm_start_from_another_C():
    """sample and class weights: a weighted fit's duals (K duals of row i in s_i times the box) start a fit of the
    same weights at another C."""
    X, y = _heart3()
    n = X.shape[0]
    sample_weight = np.random.default_rng(4).uniform(0.5, 2.0, n)
    sample_weight[[5, 9]] = 0.0
    kwargs = dict(loss="logistic", solver="multinomial", tol=1e-10, sample_weight=sample_weight,
                  class_weight={0: 1.0, 1: 3.0, 2: 0.5})
    start = daskdca.fit(X, y, lam=1.0 / n, **kwargs)
    cold = daskdca.fit(X, y, lam=0.3 / n, **kwargs)
    warm = daskdca.fit(X, y, lam=0.3 / n, dual_init=start.dual_coef_, **kwargs)
    assert warm.converged_ and warm.primal_ == pytest.approx(cold.primal_, rel=1e-9)
    assert np.all(warm.dual_coef_[:, [5, 9]] == 0.0)


def test_warm_start_takes_duals_on_the_simplex_boundary():
    """alpha = 0 (every beta_i = e_{y_i}, a vertex) is the cold start, bit for bit; 0 log 0 = 0."""
    X, y = _heart3()
    kwargs = dict(loss="logistic", lam=1e-2, solver="multinomial", tol=0.0, max_rounds=3, n_partitions=2)
    cold = daskdca.fit(X, y, **kwargs)
    warm = daskdca.fit(X, y, dual_init=np.zeros((3, X.shape[0])), **kwargs)
    assert_array_equal(warm.dual_coef_, cold.dual_coef_)
    assert_array_equal(warm.coef_, cold.coef_)


@pytest.mark.parametrize("case, match", [
    ("shape", r"dual_init has shape \(10, 199\); a multinomial fit of 10 classes .* shape \(10, 200\)"),
    ("nan", r"non-finite value \(nan\) at row 7 \(dual_init\[3, 7\]\)"),
    ("negative", r"infeasible for the multinomial \(softmax\) problem at row 4 \(label 4, class index 4, row "
                 r"weight s_i = 1.0\).* but beta_i\[2\] = -0.25 \(2 rows are infeasible\)\. Equivalently "
                 r"dual_init\[:, 4\] sums to 0.*Pass the dual_coef_ of a multinomial fit"),
    ("sum", r"at row 11 .* but sum\(beta_i\) = 1.5\b"),
    ("above one", r"at row 6 .* but beta_i\[6\] = 1.5"),
])
def test_an_infeasible_dual_init_is_refused_with_the_row_and_the_fix(case, match):
    X, y = _digits(200)
    alpha = np.zeros((10, 200))  # every beta_i = e_{y_i}: feasible
    if case == "shape":
        alpha = np.zeros((10, 199))
    elif case == "nan":
        alpha[3, 7] = np.nan
    elif case == "negative":  # beta moved beyond 0 in class 2 (row 4 is class 4)
        alpha[2, [4, 13]] = 0.25
        alpha[y[[4, 13]], [4, 13]] = -0.25
    elif case == "sum":  # the column no longer sums to 0
        alpha[(y[11] + 1) % 10, 11] = -0.5
    else:  # row 6 is class 6: alpha_{y_i} < 0 puts beta_{y_i} above 1
        alpha[6, 6] = -0.5
    assert case != "above one" or y[6] == 6
    assert case != "negative" or y[4] == 4
    with pytest.raises(ValueError, match=match):
        daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="multinomial", dual_init=alpha)


def test_a_zero_weight_row_needs_zero_duals_and_rounding_is_tolerated():
    X, y = _digits(200)
    weight = np.ones(200)
    weight[9] = 0.0
    alpha = np.zeros((10, 200))
    alpha[y[9], 9], alpha[(y[9] + 1) % 10, 9] = 0.5, -0.5
    with pytest.raises(ValueError, match=r"infeasible at row 9: its weight is 0, so its duals dual_init\[:, 9\] "
                                         r"must be 0"):
        daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="multinomial", dual_init=alpha, sample_weight=weight)
    # a few ulps outside the simplex (rounding) starts a fit
    alpha = np.zeros((10, 200))
    alpha[y, np.arange(200)] = 0.5
    alpha[(y + 1) % 10, np.arange(200)] = -0.5 - 1e-15
    m = daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="multinomial", dual_init=alpha, tol=1e-8)
    assert m.converged_


# -- warm starts out of core and on a cluster ---------------------------------------------------------

def test_warm_start_out_of_core_and_on_a_cluster_gives_the_in_process_bits(tmp_path):
    """A warm start from a fit at another lam: arrays with a client have the in-process bits; a store's fit (its
    duals in the store's row order; one block per partition) has the same bits in memory and out of core."""
    distributed = pytest.importorskip("distributed")
    from daskdca.store import write_store

    X, y = _digits(600)
    kwargs = dict(loss="logistic", lam=1e-3, tol=0.0, max_rounds=3, n_partitions=2, solver="multinomial")
    start = daskdca.fit(X, y, **{**kwargs, "lam": 1e-2, "max_rounds": 20})
    in_process = daskdca.fit(X, y, dual_init=start.dual_coef_, **kwargs)
    assert not np.array_equal(in_process.dual_coef_, daskdca.fit(X, y, **kwargs).dual_coef_)  # not the cold fit
    store = write_store(tmp_path / "digits.zarr", X, y, block_rows=300, seed=2)  # a block per partition
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        on_cluster = daskdca.fit(X, y, client=client, dual_init=start.dual_coef_, **kwargs)
        assert on_cluster.route_.name == "rounds"
        assert_array_equal(on_cluster.coef_, in_process.coef_)
        assert_array_equal(on_cluster.dual_coef_, in_process.dual_coef_)
        assert on_cluster.primal_ == in_process.primal_ and on_cluster.dual_ == in_process.dual_
        store_start = daskdca.fit(store, client=client, **{**kwargs, "lam": 1e-2, "max_rounds": 20})
        in_memory, out_of_core = (daskdca.fit(store, client=client, in_memory=flag, dual_init=store_start.dual_coef_,
                                              **kwargs) for flag in (True, False))
        with pytest.raises(ValueError, match="infeasible for the multinomial"):
            daskdca.fit(store, client=client, dual_init=-store_start.dual_coef_, **kwargs)
    assert_array_equal(in_memory.dual_coef_, out_of_core.dual_coef_)
    assert_array_equal(in_memory.coef_, out_of_core.coef_)
    assert in_memory.primal_ == out_of_core.primal_ and in_memory.dual_ == out_of_core.dual_
    X_stored = sp.vstack([store.read_block(k)[0] for k in range(store.n_blocks)])
    labels = np.asarray(store.group["y"][:]).astype(np.int64)
    p0, d0, _ = ref.objectives(X_stored, labels, None, store_start.dual_coef_,
                               np.asarray((X_stored.T @ store_start.dual_coef_.T).T) / (1e-3 * 600), 1e-3)
    assert out_of_core.history_[0].dual > d0  # the first round started at the given duals and rose from there
    primal, dual, W_alpha = ref.objectives(X_stored, labels, None, out_of_core.dual_coef_, out_of_core.coef_, 1e-3)
    assert_allclose(out_of_core.coef_, W_alpha, rtol=1e-12, atol=1e-14)
    assert out_of_core.primal_ == pytest.approx(primal, rel=1e-12) and out_of_core.dual_ == pytest.approx(dual,
                                                                                                           rel=1e-12)


# -- the estimator's warm start ---------------------------------------------------------------------

def test_estimator_warm_start_refit_across_C():
    """Iris (3 classes, multinomial) with the synthetic intercept feature: the refit at C' starts from the
    multinomial duals at C and reaches the cold fit's objective; at the same C it certifies at once."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    params = dict(loss="logistic", multi_class="multinomial", fit_intercept=True, tol=1e-9, max_iter=5000,
                  solver="sdca")  # warm against cold: "auto" could run Newton on a cold one-vs-rest fit
    cold = SDCAClassifier(C=1.0, **params).fit(X, y)
    clf = SDCAClassifier(C=0.1, warm_start=True, **params).fit(X, y)
    assert not hasattr(clf, "dual_coef_") and clf._warm_multinomial[4].shape == (3, 150)  # kept privately
    assert not hasattr(clf, "_warm_duals")
    clf.set_params(C=1.0).fit(X, y)
    assert clf.primal_[0] == pytest.approx(cold.primal_[0], rel=1e-9)
    assert clf.n_iter_[0] < cold.n_iter_[0]
    clf.fit(X, y)  # same C: starts at its own optimum
    assert clf.n_iter_[0] == 1 and clf.converged_.all()
    # other row weights: each row's distribution beta_i is kept, its duals rescaled onto the new weights
    sample_weight = np.random.default_rng(0).uniform(0.5, 2.0, 150)
    clf.fit(X, y, sample_weight=sample_weight)
    weighted = SDCAClassifier(C=1.0, **params).fit(X, y, sample_weight=sample_weight)
    assert clf.primal_[0] == pytest.approx(weighted.primal_[0], rel=1e-9)
    assert clf.n_iter_[0] < weighted.n_iter_[0]
    # one-vs-rest neither starts from nor keeps the multinomial duals, and warm_start=False drops them
    ovr_cold = SDCAClassifier(C=1.0, **{**params, "multi_class": "ovr"}).fit(X, y)
    clf.set_params(multi_class="ovr").fit(X, y)
    assert_array_equal(clf.n_iter_, ovr_cold.n_iter_)
    assert not hasattr(clf, "_warm_multinomial") and clf._warm_duals[2].shape == (3, 150)
    clf.set_params(multi_class="multinomial", warm_start=False).fit(X, y)
    assert_array_equal(clf.n_iter_, cold.n_iter_)
    assert not hasattr(clf, "_warm_multinomial") and not hasattr(clf, "_warm_duals")

