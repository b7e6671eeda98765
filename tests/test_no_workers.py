"""A cluster fit never hangs: a cluster left without workers, a lost scheduler, or a worker that dies every time it
runs the same round ends it with an error that names what happened, what was saved and the fix; workers that come
back change nothing.

Each test starts its own one-worker cluster: the faults here take every worker (or the scheduler) away.
"""

import logging
import os
import signal
import subprocess
import sys
import time
import warnings

import dask
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca import engine

distributed = pytest.importorskip("distributed")

KEY = engine.NO_WORKERS_TIMEOUT_KEY


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 8))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(400) > 0, 1, -1)
    return X, y


def _fit(client, **kwargs):
    X, y = _data()
    with warnings.catch_warnings():  # a fixed number of rounds
        warnings.simplefilter("ignore", ConvergenceWarning)
        return daskdca.fit(X, y, loss="logistic", lam=1e-2, solver="cocoa+", n_partitions=2, tol=0.0,
                           max_rounds=12, random_state=5, checkpoint_every=3, client=client, **kwargs)


@pytest.fixture
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as c, distributed.Client(c) as client:
        client.wait_for_workers(1, timeout=60)
        yield c, client


def _scale_to_zero(cluster, client):
    """Scale the cluster to no worker and wait until the scheduler has none (a round takes milliseconds)."""
    cluster.scale(0)
    deadline = time.monotonic() + 30
    while client.scheduler_info()["workers"] and time.monotonic() < deadline:
        time.sleep(0.05)


def _after_round(k, action):
    """A callback that runs ``action`` once, at the first record after round ``k``, and records when."""
    times = []

    def callback(record, state):
        if not times and record.round > k:
            times.append(time.monotonic())
            action()

    callback.times = times
    return callback


@pytest.mark.parametrize("value,seconds", [(7, 7.0), ("2s", 2.0), ("10 minutes", 600.0), (None, None),
                                           ("none", None), (0, 0.0)])
def test_the_no_workers_timeout_setting_is_read_from_the_dask_config(value, seconds):
    with dask.config.set({KEY: value}):
        assert engine.configured_no_workers_timeout() == seconds


def test_the_default_no_workers_timeout_outlasts_a_worker_replacement():
    assert engine.configured_no_workers_timeout() == 600.0


@pytest.mark.parametrize("value", ["-3s", "soon", float("inf"), [1]])
def test_a_bad_no_workers_timeout_is_named_with_the_fix(value):
    with dask.config.set({KEY: value}), pytest.raises(ValueError) as info:
        engine.configured_no_workers_timeout()
    assert repr(value) in str(info.value) and "'10 minutes'" in str(info.value) and KEY in str(info.value)


def _scaled_to_zero(cluster, client, checkpoint):
    """A fit whose cluster is scaled to zero after round 4, with a 2 s wait for workers: its error."""
    stop = _after_round(4, lambda: _scale_to_zero(cluster, client))
    with dask.config.set({KEY: "2s"}), pytest.raises(engine.NoWorkersError) as info:
        _fit(client, checkpoint=checkpoint, callback=stop)
    waited = time.monotonic() - stop.times[0]
    assert 2.0 <= waited < 10.0  # the configured wait, not forever
    return info.value


@pytest.mark.timeout(60)
def test_a_cluster_scaled_to_zero_raises_naming_the_checkpoint_round_and_the_fix(cluster, tmp_path):
    cluster, client = cluster
    address = client.scheduler.address
    err = _scaled_to_zero(cluster, client, tmp_path / "ck")
    assert isinstance(err, RuntimeError) and isinstance(err, engine.ClusterLostError)
    assert err.checkpoint_round == 3 and err.timeout == 2.0 and err.scheduler_address == address
    assert err.checkpoint == str(tmp_path / "ck")
    message = str(err)
    for part in (address, "no worker for 2 s", "holds round 3", "resume=True", "cluster.scale(n)", KEY):
        assert part in message, part


@pytest.mark.slow  # 13 s alone, 22 s in a loaded run: a second worker start and a resumed fit
@pytest.mark.timeout(120)
def test_the_checkpoint_named_by_a_no_workers_error_resumes_to_the_undisturbed_result(cluster, tmp_path):
    cluster, client = cluster
    undisturbed = _fit(client)
    err = _scaled_to_zero(cluster, client, tmp_path / "ck")
    assert err.checkpoint_round == 3
    cluster.scale(1)
    client.wait_for_workers(1, timeout=60)
    resumed = _fit(client, checkpoint=tmp_path / "ck", resume=True)
    assert resumed.n_rounds_ == undisturbed.n_rounds_ == 12
    np.testing.assert_array_equal(resumed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)


@pytest.mark.timeout(60)
def test_without_a_checkpoint_the_error_says_nothing_was_saved(cluster):
    cluster, client = cluster
    stop = _after_round(1, lambda: _scale_to_zero(cluster, client))
    with dask.config.set({KEY: 1}), pytest.raises(engine.NoWorkersError) as info:
        _fit(client, callback=stop)
    assert info.value.checkpoint_round is None and info.value.checkpoint is None
    assert "Nothing was saved" in str(info.value) and "checkpoint=PATH" in str(info.value)


@pytest.mark.timeout(120)
def test_a_nanny_restart_of_the_only_worker_changes_nothing(cluster):
    """SIGKILL of the only worker: its nanny starts a new one at a new address; the soft-pinned tasks of the
    lost worker run there (Dask alone left them in no-worker), and the fit ends with the undisturbed bits."""
    cluster, client = cluster
    undisturbed = _fit(client)
    victim = next(iter(client.run(os.getpid).values()))
    restart = _after_round(4, lambda: os.kill(victim, signal.SIGKILL))
    with dask.config.set({KEY: "60s"}):
        disturbed = _fit(client, callback=restart)
    assert restart.times
    assert next(iter(client.run(os.getpid).values())) != victim  # a new worker process did the rest
    np.testing.assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)


@pytest.mark.timeout(120)
def test_a_worker_that_dies_at_every_try_of_a_round_ends_the_fit(cluster, monkeypatch):
    """The worker running round 3 dies (SIGKILL) every time that round runs, as one its nanny kills for memory
    would: after Dask's distributed.scheduler.allowed-failures losses in a row the fit raises WorkersLostError,
    naming the losses, the setting and the likely cause, instead of restarting the round for ever."""
    from daskdca.engine import resident

    cluster, client = cluster
    real_round = resident.ResidentExecutor._round
    kills = []

    def dying_round(self, G, r, keep):
        if r == 3:
            address = self.addresses[0]
            pid = client.run(os.getpid, workers=[address])[address]
            kills.append(address)
            os.kill(pid, signal.SIGKILL)
        return real_round(self, G, r, keep)

    monkeypatch.setattr(resident.ResidentExecutor, "_round", dying_round)
    with dask.config.set({KEY: "60s", "distributed.scheduler.allowed-failures": 2}), \
            pytest.raises(daskdca.WorkersLostError) as info:
        _fit(client)
    assert len(kills) == 3 and len(info.value.lost) == 3  # two restarts allowed, the third loss ends it
    text = str(info.value)
    assert "allowed-failures = 2" in text and "memory limit" in text and "Nothing was saved" in text
    assert isinstance(info.value, engine.ClusterLostError) and info.value.checkpoint_round is None


@pytest.mark.timeout(120)
def test_a_worker_that_dies_loading_its_partition_ends_the_fit(cluster):
    """A worker that dies each time its actor loads its partition (its memory limit too small for it): Dask's
    scheduler starts the actor on allowed-failures + 1 workers, then the executor raises WorkersLostError, naming
    Dask's KilledWorker, with the memory hint and the fix."""
    from daskdca.engine.resident import ResidentExecutor

    cluster, client = cluster

    class DyingSource:  # defined here: pickled by value, so the worker needs no tests/ on its path
        def load(self):
            os.kill(os.getpid(), signal.SIGKILL)

    with dask.config.set({KEY: "60s"}), pytest.raises(daskdca.WorkersLostError) as info:
        ResidentExecutor(client, [DyingSource()], None, 0, mode="load", run_id="dying", checkpoint=None,
                         checkpoint_every=10, signature={})
    assert len(info.value.lost) == 1 and "every worker that started an actor died" in info.value.lost[0]
    assert "the partitions" in str(info.value) and "memory limit" in str(info.value)


@pytest.mark.timeout(60)
def test_the_schedulers_own_no_workers_timeout_gives_the_same_error(tmp_path):
    with dask.config.set({"distributed.scheduler.no-workers-timeout": "1s"}):
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.CRITICAL)
    with cluster, distributed.Client(cluster) as client:
        stop = _after_round(1, lambda: _scale_to_zero(cluster, client))
        with dask.config.set({KEY: None}), pytest.raises(engine.NoWorkersError) as info:
            _fit(client, callback=stop)
    assert "distributed.scheduler.no-workers-timeout" in str(info.value) and info.value.timeout == 1.0


@pytest.mark.timeout(90)
def test_a_killed_scheduler_raises_scheduler_lost_error(tmp_path):
    """The scheduler (a process of its own) dies by SIGKILL mid-fit: SchedulerLostError within seconds,
    naming its address and the checkpoint's round (Dask alone cancelled the futures only when the client
    gave up reconnecting, 30 s later, with 'cancelled for reason: unknown')."""
    bindir = os.path.dirname(sys.executable)
    scheduler_file = tmp_path / "scheduler.json"
    quiet = dict(start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [subprocess.Popen([os.path.join(bindir, "dask"), "scheduler", "--scheduler-file", str(scheduler_file),
                               "--host", "127.0.0.1", "--port", "0", "--no-dashboard"], **quiet)]
    try:
        deadline = time.monotonic() + 30
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        procs.append(subprocess.Popen([os.path.join(bindir, "dask"), "worker", "--scheduler-file",
                                       str(scheduler_file), "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                                      **quiet))
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=30) as client:
            client.wait_for_workers(1, timeout=30)
            address = client.scheduler.address
            def kill_scheduler():
                os.killpg(procs[0].pid, signal.SIGKILL)
                # the rounds go straight to the worker, so they could run on to the end of the fit before the
                # client has seen its scheduler go: wait until it has
                deadline = time.monotonic() + 5
                while client.status == "running" and time.monotonic() < deadline:
                    time.sleep(0.01)

            kill = _after_round(4, kill_scheduler)
            with pytest.raises(engine.SchedulerLostError) as info:
                _fit(client, checkpoint=tmp_path / "ck", callback=kill)
            assert time.monotonic() - kill.times[0] < 10.0
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    err = info.value
    assert isinstance(err, engine.ClusterLostError) and err.scheduler_address == address
    assert err.checkpoint_round == 3
    for part in (address, "lost its scheduler", "holds round 3", "resume=True"):
        assert part in str(err), part


@pytest.mark.timeout(60)
def test_worker_resources_waits_for_a_worker_to_register():
    """A cluster whose worker registers after the client connected: the plan waits for it (refreshing the client's
    view of the scheduler) instead of planning on no worker."""
    import threading

    from distributed import Client, LocalCluster

    from daskdca.engine.clients import worker_resources

    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        assert client.scheduler_info().get("workers", {}) == {}
        timer = threading.Timer(0.5, cluster.scale, args=(1,))
        timer.start()
        nthreads, limits = worker_resources(client)
        timer.join()
    assert len(nthreads) == 1 and len(limits) == 1
