"""One-vs-rest fitted together (daskdca.methods.multiclass): the same bits as K binary fits, fewer reads.

Reference: K separate binary ``daskdca.fit`` calls on ``y == label`` with the
same random_state, run for the same rounds or stopped at the same ``tol``
(each of those is itself tested against LIBLINEAR elsewhere), and the
certificate recomputed here from the returned duals.  On the cluster, in
memory and out of core, and through a checkpoint and resume.
"""

import os

import distributed
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits, load_iris
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight

import daskdca
import daskdca.partitions as partitions
from daskdca.driver import InProcess, run_rounds
from daskdca.losses import get_loss
from daskdca.methods import CoCoAPlus, DataInfo
from daskdca.methods.multiclass import OneVsRestMethod
from daskdca.partitions import OneVsRest, OneVsRestPartition, StorePartition, store_partition_ranges
from daskdca.store import write_store

pytestmark = pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")

ROUNDS = 6


def _iris():
    X, y = load_iris(return_X_y=True)
    return sp.csr_matrix(X / X.max(axis=0)), np.array(["setosa", "versicolor", "virginica"])[y]


def _digits(n=700):
    X, y = load_digits(return_X_y=True)
    return X[:n] / 16.0, y[:n]


def _binary(X, labels, label, **kwargs):
    return daskdca.fit(X, (labels == label).astype(int), tol=0.0, max_rounds=ROUNDS, random_state=3, **kwargs)


def _assert_same_bits(joint, k, binary):
    assert_array_equal(joint.coef_[k], binary.coef_)
    assert_array_equal(joint.dual_coef_[k], binary.dual_coef_)
    assert joint.primal_[k] == binary.primal_ and joint.dual_[k] == binary.dual_
    assert [r.gap[k] for r in joint.history_] == [r.gap for r in binary.history_]


@pytest.mark.parametrize("solver, n_partitions", [
    ("sdca", 1), (CoCoAPlus(), 2), (CoCoAPlus(), 3), (CoCoAPlus(aggregation="line_search"), 3),
    (CoCoAPlus(shrinking=False, sampling="iid"), 2), (CoCoAPlus(acceleration=None), 3),
])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic", "smoothed_hinge"])
def test_joint_fit_has_the_bits_of_k_binary_fits(solver, n_partitions, loss):
    X, labels = _iris()
    joint = daskdca.fit(X, labels, loss=loss, lam=1e-3, solver=solver, n_partitions=n_partitions, tol=0.0,
                        max_rounds=ROUNDS, random_state=3)
    assert list(joint.classes_) == ["setosa", "versicolor", "virginica"]
    assert joint.coef_.shape == (3, 4) and joint.dual_coef_.shape == (3, 150) and joint.gap_.shape == (3,)
    for k, label in enumerate(joint.classes_):
        _assert_same_bits(joint, k, _binary(X, labels, label, loss=loss, lam=1e-3, solver=solver,
                                            n_partitions=n_partitions))


@pytest.mark.parametrize("class_weight", ["balanced", {"setosa": 3.0, "virginica": 0.5}])
def test_class_weight_is_liblinears_one_vs_rest_weighting(class_weight):
    """Problem k weighs class k's rows by its class weight (times sample_weight) and the others by their
    sample_weight alone (LIBLINEAR's Cp = C w_k, Cn = C); 'balanced' counts the sample weights."""
    X, labels = _iris()
    sample_weight = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    # solver="sdca": with tol=0 primal Newton certifies a gap of exactly 0 on one class within ROUNDS, and the
    # joint fit, which runs until every class stops, takes one more round on it than that class's fit alone
    joint = daskdca.fit(X, labels, loss="logistic", lam=1e-3, tol=0.0, max_rounds=ROUNDS, random_state=3,
                        sample_weight=sample_weight, class_weight=class_weight, solver="sdca")
    per_class = compute_class_weight(class_weight, classes=joint.classes_, y=labels, sample_weight=sample_weight)
    for k, label in enumerate(joint.classes_):
        weight = sample_weight * np.where(labels == label, per_class[k], 1.0)
        _assert_same_bits(joint, k, _binary(X, labels, label, loss="logistic", lam=1e-3, sample_weight=weight,
                                             solver="sdca"))


def test_two_class_class_weight_equals_row_weights():
    X, labels = _iris()
    X, labels = X[50:], labels[50:]
    m = daskdca.fit(X, labels, loss="hinge", lam=1e-2, tol=1e-10, class_weight="balanced")
    ref = daskdca.fit(X, labels, loss="hinge", lam=1e-2, tol=1e-10,
                      sample_weight=compute_sample_weight("balanced", labels))
    assert_array_equal(m.coef_, ref.coef_)


def test_the_certificate_recomputed_from_the_returned_duals():
    """Per problem: w = X^T alpha / (lam n), P and D from scratch, and P - D equal to the reported gap."""
    X, y = _digits()
    lam = 1e-3
    m = daskdca.fit(X, y, loss="squared_hinge", lam=lam, tol=1e-8)
    assert m.converged_ and m.classes_.shape == (10,)
    n = X.shape[0]
    for k, label in enumerate(m.classes_):
        s = np.where(y == label, 1.0, -1.0)
        alpha = m.dual_coef_[k]
        w = X.T @ alpha / (lam * n)
        assert_allclose(w, m.coef_[k], rtol=1e-10, atol=1e-13)
        primal = np.mean(np.maximum(0.0, 1.0 - s * (X @ w)) ** 2) + lam / 2 * w @ w
        b = s * alpha  # squared hinge: phi*(-a) = -b + b^2/4 for b = y a >= 0
        assert b.min() >= 0
        dual = np.mean(b - b * b / 4) - lam / 2 * w @ w
        assert_allclose([primal, dual], [m.primal_[k], m.dual_[k]], rtol=1e-10)
        assert primal - dual <= 1e-8 * primal * (1 + 1e-6)


def test_prediction_is_the_largest_score():
    X, labels = _iris()
    m = daskdca.fit(X, labels, loss="logistic", lam=1e-3, tol=1e-8)
    scores = m.decision_function(X)
    assert scores.shape == (150, 3)
    assert_array_equal(m.predict(X), m.classes_[np.argmax(scores, axis=1)])
    assert np.mean(m.predict(X) == labels) > 0.9
    import dask.array as da

    lazy = da.from_array(X.toarray(), chunks=(40, 4))
    assert_allclose(m.decision_function(lazy).compute(), scores, rtol=1e-12)
    assert_array_equal(m.predict(lazy).compute(), m.predict(X))
    assert "primal=[" in repr(m)


def test_warm_start_from_the_duals_of_another_lam():
    X, y = _digits(500)
    first = daskdca.fit(X, y, loss="hinge", lam=1e-2, tol=1e-8)
    cold = daskdca.fit(X, y, loss="hinge", lam=1e-3, tol=1e-8)
    warm = daskdca.fit(X, y, loss="hinge", lam=1e-3, tol=1e-8, dual_init=first.dual_coef_)
    assert warm.converged_
    assert_allclose(warm.primal_, cold.primal_, rtol=1e-7)
    # every problem starts at its own duals: from the optimum's duals the first gap evaluation stops the fit
    # (duals certified to 1e-10, so that every problem's first gap is well under tol=1e-8: cold's own reach
    # 8e-9 on one problem, within the rounding of a restart's first evaluation)
    tight = daskdca.fit(X, y, loss="hinge", lam=1e-3, tol=1e-10)
    again = daskdca.fit(X, y, loss="hinge", lam=1e-3, tol=1e-8, dual_init=tight.dual_coef_)
    assert again.converged_ and again.n_rounds_ == 1
    bad = first.dual_coef_.copy()
    bad[4, 7] = 5.0 * np.sign(bad[4, 7] or 1.0)
    with pytest.raises(ValueError, match=r"dual_init\[4\] \(class 4 against the rest\).*infeasible.*row 7"):
        daskdca.fit(X, y, loss="hinge", lam=1e-3, dual_init=bad)


def test_solvers_that_cannot_fit_the_problems_together_say_which_can():
    X, labels = _iris()
    for solver in ("minibatch_sdca", "pegasos", CoCoAPlus(local_solver="sdna")):
        with pytest.raises(ValueError, match=r"cannot fit the one-vs-rest problems.*\['cocoa\+', 'newton', 'sdca'\]"):
            daskdca.fit(X, labels, solver=solver, n_partitions=2 if solver != "pegasos" else 1)


def _store_parts(store, n_partitions, problems):
    ranges = store_partition_ranges(store.n_blocks, n_partitions)
    return [OneVsRestPartition(StorePartition(store, a, b, None), problems) for a, b in ranges]


def test_out_of_core_reads_each_block_once_per_round(tmp_path, monkeypatch):
    """In process on store partitions: one round reads every block once for all K problems (not K times),
    and each problem gets the bits of its binary out-of-core fit."""
    X, y = _digits(900)
    store = write_store(tmp_path / "digits.zarr", X, y, block_rows=150, seed=1)
    K, lam, loss = 10, 1e-3, get_loss("hinge")
    problems = OneVsRest(tuple(float(v) for v in store.label_values), (1.0,) * K)
    parts = _store_parts(store, 2, problems)
    info = DataInfo(n=store.n, d=store.d, partition_sizes=tuple(p.n_rows for p in parts), loss=loss, lam=lam,
                    max_column_nnz=int(store.column_nnz.max()))
    reads = []
    real = partitions.load_block_rows
    monkeypatch.setattr(partitions, "load_block_rows", lambda s, k, label: reads.append(k) or real(s, k, label))
    executor = InProcess(parts, info, 5)
    plan = executor.setup(OneVsRestMethod(CoCoAPlus(), K))
    G, Ls = executor.init(plan)
    reads.clear()
    executor.run(plan, G, Ls, 0, 1)
    assert sorted(reads) == list(range(store.n_blocks))
    monkeypatch.setattr(partitions, "load_block_rows", real)
    joint = run_rounds(InProcess(parts, info, 5), plan, tol=0.0, max_rounds=4)
    for k in (0, 6):
        label = store.label_values[k]
        binary = [StorePartition(store, p.part.first, p.part.stop, label) for p in parts]
        ex = InProcess(binary, info, 5)
        ref = run_rounds(ex, ex.setup(CoCoAPlus()), tol=0.0, max_rounds=4)
        assert_array_equal(joint.w[k], ref.w)
        assert_array_equal(joint.alpha[k], ref.alpha)
        assert joint.gap[k] == ref.gap


@pytest.mark.parametrize("solver, n_partitions", [
    ("sdca", 1), (CoCoAPlus(), 3), (CoCoAPlus(aggregation="line_search"), 2),
])
@pytest.mark.parametrize("loss, tol", [("hinge", 1e-4), ("logistic", 1e-6)])
def test_each_problem_stops_at_its_own_round_with_its_binary_fits_bits(solver, n_partitions, loss, tol):
    """With a tol, each problem stops where its binary fit with that tol stops (OneVsRestPlan): the same model,
    duals and certificate, and its records up to there; the others go on."""
    X, y = _digits(400)
    kwargs = dict(loss=loss, lam=1e-2, solver=solver, n_partitions=n_partitions, tol=tol, random_state=3)
    joint = daskdca.fit(X, y, **kwargs)
    assert joint.converged_ and joint.plan_.stops_problems
    stops = []
    for k, label in enumerate(joint.classes_):
        binary = daskdca.fit(X, (y == label).astype(int), **kwargs)
        assert binary.converged_
        assert_array_equal(joint.coef_[k], binary.coef_)
        assert_array_equal(joint.dual_coef_[k], binary.dual_coef_)
        assert joint.primal_[k] == binary.primal_ and joint.dual_[k] == binary.dual_
        measured = {r.round: r.gap for r in binary.history_[:-1]}  # the last record is the certified one
        assert {r.round: r.gap[k] for r in joint.history_ if r.round in measured} == measured
        # after it stopped, the problem reports the gap it stopped with
        assert len({r.gap[k] for r in joint.history_[:-1] if r.round >= binary.n_rounds_}) <= 1
        stops.append(binary.n_rounds_)
    assert joint.n_rounds_ == max(stops) and min(stops) < max(stops)


def test_a_plan_of_several_phases_steps_every_problem_to_the_end():
    """Newton's round passes through states the round loop cannot stop at: no problem stops early, and each
    problem has the bits of its binary fit run for the joint fit's rounds."""
    X, y = _digits(300)
    kwargs = dict(loss="logistic", lam=1e-2, solver="newton", random_state=3)
    joint = daskdca.fit(X, y, tol=1e-8, **kwargs)
    assert not joint.plan_.stops_problems
    for k in (0, 5):
        binary = daskdca.fit(X, (y == joint.classes_[k]).astype(int), tol=0.0, max_rounds=joint.n_rounds_,
                             **kwargs)
        assert_array_equal(joint.coef_[k], binary.coef_)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def test_cluster_arrays_and_stores_give_the_in_process_and_binary_bits(client, tmp_path):
    X, y = _digits(600)
    kwargs = dict(loss="logistic", lam=1e-3, tol=0.0, max_rounds=4, n_partitions=2)
    on_cluster = daskdca.fit(X, y, client=client, class_weight={3: 2.0}, **kwargs)
    in_process = daskdca.fit(X, y, solver="cocoa+", class_weight={3: 2.0}, **kwargs)
    assert_array_equal(on_cluster.coef_, in_process.coef_)
    assert_array_equal(on_cluster.dual_coef_, in_process.dual_coef_)
    store = write_store(tmp_path / "m.zarr", X, y, block_rows=100, seed=2)
    for in_memory in (True, False):
        joint = daskdca.fit(store, client=client, in_memory=in_memory, **kwargs)
        for k in (1, 8):
            binary_store = write_store(tmp_path / f"b{k}{in_memory}.zarr", X, (y == k).astype(int), block_rows=100,
                                       seed=2)
            ref = daskdca.fit(binary_store, client=client, in_memory=in_memory, **kwargs)
            assert_array_equal(joint.coef_[k], ref.coef_)
            assert_array_equal(joint.dual_coef_[k], ref.dual_coef_)


def test_checkpoint_and_resume_keep_the_bits(client, tmp_path):
    X, y = _digits(600)
    store = write_store(tmp_path / "m.zarr", X, y, block_rows=150, seed=2)
    kwargs = dict(loss="hinge", lam=1e-3, tol=0.0, n_partitions=2, client=client)
    straight = daskdca.fit(store, max_rounds=8, **kwargs)
    ckpt = os.fspath(tmp_path / "ckpt")
    daskdca.fit(store, max_rounds=4, checkpoint=ckpt, checkpoint_every=2, **kwargs)
    resumed = daskdca.fit(store, max_rounds=8, checkpoint=ckpt, checkpoint_every=2, resume=True, **kwargs)
    assert_array_equal(resumed.coef_, straight.coef_)
    assert_array_equal(resumed.dual_coef_, straight.dual_coef_)
    # the records of rounds 1-3 were read back from the checkpoint: one gap per problem, as written
    assert [r.round for r in resumed.history_[:3]] == [1, 2, 3]
    for old, new in zip(straight.history_[:3], resumed.history_[:3]):
        assert new.gap.shape == (10,)
        assert_array_equal(new.gap, old.gap)
    with pytest.raises(ValueError, match="different fit"):
        daskdca.fit(store, max_rounds=8, checkpoint=ckpt, resume=True, class_weight={0: 2.0}, **kwargs)


def test_stopped_problems_out_of_core_through_a_resume_and_a_smaller_tol(client, tmp_path):
    """Out of core on the cluster (each block read once for the problems still stepping) each problem stops with
    its binary fit's bits; a checkpoint written after some have stopped resumes to the same bits, and a resume
    with a smaller tol steps the stopped ones on to it."""
    X, y = _digits(600)
    store = write_store(tmp_path / "m.zarr", X, y, block_rows=150, seed=2)
    kwargs = dict(loss="squared_hinge", lam=1e-2, n_partitions=2, client=client, in_memory=False)
    straight = daskdca.fit(store, tol=1e-6, **kwargs)
    met = [next(r.round for r in straight.history_ if r.gap[k] <= 1e-6 * abs(r.primal[k])) for k in range(10)]
    first, last = int(np.argmin(met)), int(np.argmax(met))
    for k in (first, last):
        binary = daskdca.fit(write_store(tmp_path / f"b{k}.zarr", X, (y == k).astype(int), block_rows=150, seed=2),
                             tol=1e-6, **kwargs)
        assert_array_equal(straight.coef_[k], binary.coef_)
        assert_array_equal(straight.dual_coef_[k], binary.dual_coef_)
        # the rounds' reports certify themselves out of core (X^T alpha gathered as the blocks are read), for
        # the problems together as for one
        assert straight.primal_[k] == binary.primal_ and straight.dual_[k] == binary.dual_
        assert binary.n_rounds_ == met[k]
    assert met[first] < met[last] == straight.n_rounds_
    ckpt = os.fspath(tmp_path / "ckpt")
    halfway = (met[first] + met[last]) // 4 * 2  # an even round, for checkpoint_every=2
    assert met[first] < halfway < met[last]  # problem ``first`` has stopped there, ``last`` has not
    daskdca.fit(store, tol=1e-6, max_rounds=halfway, checkpoint=ckpt, checkpoint_every=2, **kwargs)
    resumed = daskdca.fit(store, tol=1e-6, checkpoint=ckpt, checkpoint_every=2, resume=True, **kwargs)
    assert_array_equal(resumed.coef_, straight.coef_)
    assert_array_equal(resumed.dual_coef_, straight.dual_coef_)
    tighter = daskdca.fit(store, tol=1e-9, checkpoint=ckpt, checkpoint_every=2, resume=True, **kwargs)
    assert tighter.converged_ and tighter.n_rounds_ > straight.n_rounds_
    assert np.all(tighter.gap_ <= 1e-9 * np.abs(tighter.primal_))


@pytest.mark.timeout(180)
def test_a_killed_worker_changes_nothing_after_some_problems_stopped(tmp_path):
    """Out of core on a fresh 2-worker cluster, a worker is killed (SIGKILL) after some problems have stopped and
    before the others have: the fit ends with the undisturbed bits, each problem at its own round."""
    import signal

    X, y = _digits(600)
    store = write_store(tmp_path / "m.zarr", X, y, block_rows=150, seed=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as fault_client:
        fault_client.wait_for_workers(2, timeout=60)
        kwargs = dict(loss="squared_hinge", lam=1e-2, tol=1e-6, n_partitions=2, client=fault_client,
                      in_memory=False, checkpoint_every=2, random_state=5)
        undisturbed = daskdca.fit(store, **kwargs)
        met = [next(r.round for r in undisturbed.history_ if r.gap[k] <= 1e-6 * abs(r.primal[k])) for k in range(10)]
        kill_after = (min(met) + max(met)) // 2
        assert min(met) < kill_after < max(met) == undisturbed.n_rounds_
        victim = sorted(fault_client.run(os.getpid).items())[0][1]
        killed = []

        def kill_one_worker(record, state):
            if not killed and record.round >= kill_after:
                killed.append(record.round)
                os.kill(victim, signal.SIGKILL)
            return False

        disturbed = daskdca.fit(store, callback=kill_one_worker, **kwargs)
    assert killed and killed[0] < undisturbed.n_rounds_
    assert disturbed.n_rounds_ == undisturbed.n_rounds_
    assert_array_equal(disturbed.coef_, undisturbed.coef_)
    assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    assert_array_equal(disturbed.gap_, undisturbed.gap_)


def test_path_of_a_multi_class_problem_is_the_fits_along_the_grid():
    """daskdca.path with K > 2 labels: (n_Cs, K, d) coefficients, each C's fit the warm-started joint fit."""
    X, labels = _iris()
    Cs = [0.1, 1.0]
    res = daskdca.path(X, labels, Cs, loss="logistic", tol=1e-9, keep_dual=True)
    assert res.coef.shape == (2, 3, 4) and res.intercept.shape == (2, 3) and res.gap.shape == (2, 3)
    assert res.dual_coef.shape == (2, 3, 150) and res.converged.all()
    from daskdca.regpath import with_intercept_column

    Xb = with_intercept_column(X, 1.0)
    for c, C in enumerate(Cs):
        m = daskdca.fit(Xb, labels, loss="logistic", lam=1.0 / (C * 150), tol=1e-9)
        assert_allclose(res.primal[c], m.primal_, rtol=1e-8)
        lam = 1.0 / (C * 150)
        for k in range(3):  # strong convexity: ||w - w*||^2 <= 2 gap / lam for each of the two
            # a certified gap can round to just below 0 (primal Newton here: lam n < 2, few features)
            bound = np.sqrt(2 * max(res.gap[c, k], 0.0) / lam) + np.sqrt(2 * max(m.gap_[k], 0.0) / lam)
            w_path = np.r_[res.coef[c, k], res.intercept[c, k]]
            assert np.linalg.norm(w_path - m.coef_[k]) <= bound


def test_a_checkpoint_writes_and_checks_the_wrapped_states(tmp_path):
    """engine/checkpoint.py writes a NamedTuple field's fields under its name, reads it back with its class, and
    refuses a damaged field inside it as it refuses one at the top."""
    from daskdca.engine.checkpoint import _check_resumed, _load_state, _save_state
    from daskdca.methods.dual import DualGlobal, DualLocal
    from daskdca.methods.multiclass import OneVsRestGlobal

    state = OneVsRestGlobal(DualGlobal(np.arange(6.0).reshape(3, 2)), np.array([True, False, True]),
                            np.array([1.0, 0.0, 2.0]), np.array([0.5, 0.0, 1.5]))
    url = os.fspath(tmp_path / "ckpt")
    class_path = _save_state((state, None), url, "slot0_global")
    back = _load_state(url, "slot0_global", class_path)
    assert type(back) is OneVsRestGlobal and type(back.current) is DualGlobal
    for field in ("stopped", "primal", "dual"):
        assert_array_equal(getattr(back, field), getattr(state, field))
    assert_array_equal(back.current.w, state.current.w)
    fresh = OneVsRestGlobal(DualGlobal(np.zeros((3, 2))), np.zeros(3, dtype=bool), np.zeros(3), np.zeros(3))
    assert _check_resumed((back, None), fresh, "here")[0] is back
    damaged = back._replace(current=DualGlobal(np.array([[0.0, np.nan]] * 3)))
    with pytest.raises(ValueError, match=r"here, field 'current': field 'w' .* the checkpoint is damaged"):
        _check_resumed((damaged, None), fresh, "here")
    with pytest.raises(ValueError, match=r"here, field 'current' holds a DualLocal"):
        _check_resumed((back._replace(current=DualLocal(np.zeros((3, 2)))), None), fresh, "here")


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_the_problems_on_the_fits_threads_keep_the_bits_of_one_thread(loss, monkeypatch):
    """In memory, with rows of at least PROBLEM_THREADS_MIN_NNZ values, the problems' local steps run on the fit's
    n_jobs threads, one problem per thread: the bits of n_jobs=1."""
    import daskdca.methods.base as base
    import daskdca.methods.multiclass as multiclass

    rng = np.random.default_rng(4)
    X = rng.standard_normal((3000, 8))
    y = np.argmax(X[:, :4] + 0.5 * rng.standard_normal((3000, 4)), axis=1)
    assert X.size >= multiclass.PROBLEM_THREADS_MIN_NNZ
    rounds_on_threads = []

    class CountedPool(base.ThreadPoolExecutor):
        def map(self, fn, *iterables):
            if self._thread_name_prefix == "daskdca-problem":
                rounds_on_threads.append(self._max_workers)
            return super().map(fn, *iterables)

    monkeypatch.setattr(base, "ThreadPoolExecutor", CountedPool)
    monkeypatch.setattr(base, "_POOLS", {})
    kwargs = dict(loss=loss, lam=1e-3, tol=1e-8, solver="sdca", random_state=2)
    one = daskdca.fit(X, y, n_jobs=1, **kwargs)
    assert rounds_on_threads == []
    two = daskdca.fit(X, y, n_jobs=2, **kwargs)
    # the rounds that stepped two or more problems ran them on two threads
    assert len(rounds_on_threads) >= 2 and set(rounds_on_threads) == {2}
    assert one.converged_ and two.converged_
    assert_array_equal(one.coef_, two.coef_)
    assert_array_equal(one.dual_coef_, two.dual_coef_)
    assert_array_equal(one.gap_, two.gap_)
    assert [r.round for r in one.history_] == [r.round for r in two.history_]
