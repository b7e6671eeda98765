"""The method contract, for every method in the registry (a new method is tested by registering it).

Same seed, same bits; in process == cluster, in memory and out of core, round
by round; the dual point is feasible; the certificate recomputed here from
the returned duals alone; a killed worker changes nothing.
"""

import dataclasses
import os
import signal
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.losses import get_loss
from daskdca.methods import REGISTRY, VARIANTS
from daskdca.partitions import random_row_order
from daskdca.store import write_store

import reference_kernels as ref
import reference_prox_sdca as ref_prox
from conftest import DriverDied, driver_dies_at, load_dataset
from references import primal_objective

distributed = pytest.importorskip("distributed")

LAM = 1e-2
# every registered method with its defaults, and every registered variant
MAKERS = {**{name: cls for name, cls in REGISTRY.items()}, **VARIANTS}
METHODS = sorted(MAKERS)
CLUSTER_METHODS = [name for name in METHODS if MAKERS[name]().capabilities.cluster]


def _partitions(name):
    return 2 if MAKERS[name]().capabilities.many_partitions else 1


def _loss(name):
    """The logistic loss, or the method's first loss where it has no logistic one (crammer_singer: hinge)."""
    losses = MAKERS[name]().capabilities.losses
    return "logistic" if "logistic" in losses else losses[0]


def _method(name, eval_every=None):
    """The registered settings; ``eval_every`` replaces the method's own where it has one (a round of a
    global mini-batch method is one mini-batch, and its default records once an epoch)."""
    method = MAKERS[name]()
    if eval_every is not None and "eval_every" in {f.name for f in dataclasses.fields(method)}:
        method = dataclasses.replace(method, eval_every=eval_every)
    return method


# When the faults strike: after the first copy of the states (checkpoint_every), well before the fit ends.
# Newton reaches the optimum to rounding in about 6 rounds on heart (its gap is <= 0 from then on, which stops
# even a tol=0 fit), so its faults come earlier; multinomial_newton is Newton on two classes.
FAULT_SCHEDULE = {name: dict(rounds=5, checkpoint_every=2, eval_every=1) for name in ("newton", "multinomial_newton")}


def _schedule(X, y, name, random_state):
    """``(rounds, checkpoint_every, eval_every)`` of the fault tests for method ``name``."""
    if name in FAULT_SCHEDULE:
        s = FAULT_SCHEDULE[name]
        return s["rounds"], s["checkpoint_every"], s["eval_every"]
    rounds = max(20, 2 * _fit(X, y, name, eval_every=5, max_rounds=1, random_state=random_state).plan_.eval_every)
    return rounds, 7, 5


def _fit(X, y, name, eval_every=None, **kwargs):
    with warnings.catch_warnings():  # a fixed number of rounds (serial SDCA may reach a gap <= 0 first)
        warnings.simplefilter("ignore", ConvergenceWarning)
        return daskdca.fit(X, y, loss=_loss(name), lam=LAM, solver=_method(name, eval_every), tol=0.0,
                           n_partitions=_partitions(name), **kwargs)


@pytest.fixture(scope="module")
def heart():
    return load_dataset("heart")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("name", METHODS)
def test_same_seed_same_bits_and_the_certificate_from_the_returned_duals(heart, name):
    X, y = heart
    runs = [_fit(X, y, name, max_rounds=60, random_state=s) for s in (4, 4, 5)]
    np.testing.assert_array_equal(runs[0].dual_coef_, runs[1].dual_coef_)
    np.testing.assert_array_equal(runs[0].coef_, runs[1].coef_)
    assert not np.array_equal(runs[0].dual_coef_, runs[2].dual_coef_)
    m = runs[0]
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    # the dual point is feasible: y alpha in [0, 1] for logistic (and hinge), where the conjugate is finite
    b = ys * m.dual_coef_
    assert np.all((b >= 0) & (b <= 1))
    assert np.all(np.isfinite(get_loss(_loss(name)).conjugate(ys, m.dual_coef_)))
    # the certificate: P(coef_) - D(dual_coef_), D with w(alpha) rebuilt here;
    # for the dual methods coef_ is w(alpha) itself
    rho = float(getattr(m.plan_, "l1_ratio", 0.0))
    if rho == 1:  # the pure L1 problem's: dual_coef_ is the rescaled point beta, ||X^T beta / n||_inf <= lam
        assert np.abs(X.T @ m.dual_coef_).max() / X.shape[0] <= LAM * (1 + 1e-12)
        primal = float(np.mean([ref.loss_value(_loss(name), ys[i], z) for i, z in enumerate(X @ m.coef_)])
                       + LAM * np.abs(m.coef_).sum())
        dual = -float(np.mean([ref.conjugate(_loss(name), ys[i], b) for i, b in enumerate(m.dual_coef_)]))
        w_alpha = m.coef_
    elif rho > 0:  # the elastic net's: D(alpha) with w(alpha) = grad g*(X^T alpha / (lam' n))
        _, dual, w_alpha = ref_prox.elastic_net_certificate(X, ys, m.dual_coef_, LAM, rho, _loss(name))
        primal = ref_prox.elastic_net_primal(X, ys, m.coef_, LAM, rho, _loss(name))
    else:
        dual, w_alpha = ref.dual_objective(X, ys, m.dual_coef_, LAM, _loss(name))
        primal = primal_objective(X, ys, m.coef_, LAM, _loss(name))
    if m.plan_.primal_from_dual:
        np.testing.assert_allclose(m.coef_, w_alpha, rtol=1e-12, atol=1e-14)
    assert m.primal_ == pytest.approx(primal, rel=1e-12) and m.dual_ == pytest.approx(dual, rel=1e-12)
    # a converged fit's gap may round to just below 0
    assert m.gap_ == pytest.approx(primal - dual, rel=1e-9, abs=1e-14) and m.gap_ >= -1e-12 * abs(primal)
    assert m.history_[-1].gap == pytest.approx(m.gap_)


@pytest.mark.parametrize("name", METHODS)
def test_a_converged_fit_certifies_the_state_it_returns(heart, name):
    X, y = heart
    # a 1/t method (Pegasos) reaches 1e-3 in about 400 epochs here, 1e-5 in none it can afford; so does the
    # non-smooth hinge loss of a hinge-only method (crammer_singer: CoCoA+'s plain hinge fit on two classes)
    tol = 1e-5 if MAKERS[name]().capabilities.gap_rate == "linear" and _loss(name) == "logistic" else 1e-3
    m = daskdca.fit(X, y, loss=_loss(name), lam=LAM, solver=MAKERS[name](), tol=tol,
                    n_partitions=_partitions(name))
    assert m.converged_ and m.gap_ <= tol * m.primal_
    assert m.history_[-1].round == m.n_rounds_ and m.history_[-1].epochs == m.n_epochs_


@pytest.fixture
def fault_client():
    """A fresh cluster of two workers for each fault test, closed after it.

    A killed worker's nanny may restart it or give up (CI saw both), and a full-suite run once saw the other
    worker's nanny close during the next test on a shared cluster; a cluster per test keeps one test's kill
    out of the next.
    """
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


# cases whose state and fault path are another's (a variant's default, adfsdca+'s adfsdca; crammer_singer on the
# two classes of heart is cocoa+(plain)'s hinge fit, its K > 2 path is tests/test_crammer_singer.py's;
# multinomial_newton on two classes is newton's plan, its K > 2 path is tests/test_multinomial_newton.py's): their
# killed-worker case runs with -m slow
SLOW_FAULT_CASES = {"adfsdca+", "cocoa+(line_search)", "cocoa+(no momentum)", "cocoa+(spdc)", "cocoa+(threads)", "cocoa+(threads, line search)",
                    "minibatch_sdca(no shrinking)", "minibatch_sdca(naive)", "crammer_singer", "multinomial_newton"}


# variants that reach the cluster through their default's code path (crammer_singer on two classes: cocoa+(plain)'s):
# their out-of-core case and their killed-driver case run with -m slow (the in-memory case, which checks the
# variant's own bits, stays)
SLOW_VARIANT_CASES = {"cocoa+(spdc)", "minibatch_sdca(naive)", "crammer_singer"}


# methods whose two-class fit is another method's plan (multinomial_newton: newton's): every case with -m slow
SLOW_TWO_CLASS_CASES = {"multinomial_newton"}


def _cases(name, *values_and_ids, slow_when):
    return [pytest.param(name, value, id=f"{name}-{case_id}",
                         marks=[pytest.mark.slow] if name in SLOW_TWO_CLASS_CASES
                         or (name in SLOW_VARIANT_CASES and value == slow_when) else [])
            for value, case_id in values_and_ids]


@pytest.mark.parametrize("name,in_memory", [case for name in CLUSTER_METHODS for case in _cases(
    name, (True, "in-memory"), (False, "out-of-core"), slow_when=False)])
def test_in_process_equals_cluster_round_by_round(heart, client, tmp_path, name, in_memory):
    """The store holds the rows in the in-process partition order, one block per partition."""
    X, y = heart
    K = _partitions(name)
    order = random_row_order(X.shape[0], 7) if K > 1 else np.arange(X.shape[0])
    store = write_store(tmp_path / "h.zarr", X[order], y[order], block_rows=-(-X.shape[0] // K), shuffle=False)
    local = _fit(X, y, name, max_rounds=40, random_state=7, eval_every=5)
    remote = _fit(store, None, name, max_rounds=40, random_state=7, client=client, in_memory=in_memory,
                  eval_every=5)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    assert [r.round for r in remote.history_] == [r.round for r in local.history_]
    np.testing.assert_allclose([r.primal for r in remote.history_], [r.primal for r in local.history_],
                               rtol=1e-12)


@pytest.mark.timeout(180)  # a hang fails in minutes, with every thread's stack printed
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_FAULT_CASES
                                  else name for name in CLUSTER_METHODS])
def test_a_killed_worker_changes_nothing(heart, fault_client, tmp_path, name):
    X, y = heart
    client = fault_client
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    # the kill comes at the first record after round 7 (checkpoint_every), so the fit must go on past it
    rounds, every, eval_every = _schedule(X, y, name, 3)
    kwargs = dict(max_rounds=rounds, random_state=3, client=client, checkpoint_every=every, eval_every=eval_every)
    undisturbed = _fit(store, None, name, **kwargs)
    # SIGKILL by process id: no message to the dying worker that could wait on its answer
    victim = sorted(client.run(os.getpid).items())[0][1]
    killed = []

    def kill_one_worker(record, state):
        # after the chains restarted from the states copied through the driver (no checkpoint path):
        # the lost states are recomputed from the tasks that hold those copies
        if not killed and record.round > kwargs["checkpoint_every"]:
            assert record.round < rounds
            killed.append(victim)
            os.kill(victim, signal.SIGKILL)
        return False

    disturbed = _fit(store, None, name, callback=kill_one_worker, **kwargs)
    assert killed
    assert disturbed.n_rounds_ == undisturbed.n_rounds_ == rounds
    np.testing.assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)


# the write path is the engine's, not the method's: one method in the default run, every other with -m slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", [name if name == "cocoa+" else pytest.param(name, marks=pytest.mark.slow)
                                  for name in CLUSTER_METHODS])
def test_a_worker_killed_while_writing_a_checkpoint_changes_nothing(heart, fault_client, tmp_path, monkeypatch,
                                                                     name):
    """The worker writing partition 0's part of the second checkpoint dies in that task (SIGKILL of its own
    process); the write is redone elsewhere, the fit ends with the undisturbed bits, and its checkpoint is
    complete and holds the last round."""
    from daskdca import engine
    from daskdca.engine import executor as engine_executor  # where each executor looks _save_state up
    from daskdca.engine import resident as engine_resident

    X, y = heart
    client = fault_client
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    rounds, every, eval_every = _schedule(X, y, name, 4)
    kwargs = dict(max_rounds=rounds, random_state=4, client=client, checkpoint_every=every, eval_every=eval_every)
    undisturbed = _fit(store, None, name, checkpoint=tmp_path / "a", **kwargs)
    marker = str(tmp_path / "killed")
    real_save = engine._save_state

    def save_or_die(out, url, prefix):  # a closure: pickled by value, so the workers need not import tests/
        if prefix == "slot1_local0" and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return real_save(out, url, prefix)

    monkeypatch.setattr(engine_executor, "_save_state", save_or_die)
    monkeypatch.setattr(engine_resident, "_save_state", save_or_die)
    disturbed = _fit(store, None, name, checkpoint=tmp_path / "b", **kwargs)
    monkeypatch.undo()
    assert os.path.exists(marker)
    np.testing.assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)
    meta = engine._checkpoint_meta(str(tmp_path / "b"))
    assert meta["complete"] and meta["round"] == rounds


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  if name in SLOW_VARIANT_CASES | SLOW_TWO_CLASS_CASES else name
                                  for name in CLUSTER_METHODS])
def test_a_killed_driver_resumes_to_the_undisturbed_result(heart, client, tmp_path, name):
    """The driver dies mid-fit (the callback raises); a new fit with resume=True from the checkpoint ends
    with the undisturbed bits and history."""
    X, y = heart
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    rounds, every, eval_every = _schedule(X, y, name, 2)
    die_at = rounds // 2
    if name not in FAULT_SCHEDULE:
        # a checkpoint every 3 rounds, a record every 5 (where the method has eval_every): the checkpoint of
        # round 9 is written before the reports of rounds 6-8 are read, and the driver dies at the record of
        # round 10, so the fit resumes from that checkpoint
        every, die_at = 3, 10
    kwargs = dict(max_rounds=rounds, random_state=2, client=client, checkpoint_every=every, eval_every=eval_every)
    undisturbed = _fit(store, None, name, checkpoint=tmp_path / "a", **kwargs)

    die = driver_dies_at(die_at)
    with pytest.raises(DriverDied):
        _fit(store, None, name, checkpoint=tmp_path / "b", callback=die, **kwargs)
    resumed = _fit(store, None, name, checkpoint=tmp_path / "b", resume=True, **kwargs)
    assert resumed.n_rounds_ == undisturbed.n_rounds_ == rounds
    np.testing.assert_array_equal(resumed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)
    # every field of the result, the epochs count included (docs/reliability.md, "Checkpoints and resume")
    for field in ("n_rounds_", "n_epochs_", "primal_", "dual_", "gap_", "converged_"):
        np.testing.assert_array_equal(getattr(resumed, field), getattr(undisturbed, field), err_msg=field)
    assert len(resumed.history_) == len(undisturbed.history_)
    for got, want in zip(resumed.history_, undisturbed.history_):
        for field in got._fields:
            if field != "seconds":  # wall-clock time differs between runs
                np.testing.assert_array_equal(getattr(got, field), getattr(want, field),
                                              err_msg=f"history record of round {want.round}: {field}")
