"""The Dask engine on LocalCluster: optimum, determinism, faults, resume, out of core."""

import copy
import os
import re
import signal
import warnings

import dask
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

distributed = pytest.importorskip("distributed")

import daskdca  # noqa: E402
from daskdca.engine.clients import WORKER_MALLOC_ENVIRON  # noqa: E402
from daskdca.partitions import random_row_order  # noqa: E402
from daskdca.store import StoreError, convert_svmlight, write_store  # noqa: E402

from conftest import DriverDied, data_path, driver_dies_at, load_dataset  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def _store(tmp_path_factory, name, block_rows):
    X, y = load_dataset(name)
    url = tmp_path_factory.mktemp("stores") / f"{name}-{block_rows}.zarr"
    return write_store(url, X, y, block_rows=block_rows, shuffle=False)


def _in_memory_optimum(name, loss, lam):
    X, y = load_dataset(name)
    return daskdca.fit(X, y, loss=loss, lam=lam, tol=1e-10, max_rounds=5000).primal_


@pytest.mark.parametrize("loss, block_rows", [
    ("hinge", 7770), ("logistic", 7770), pytest.param("hinge", 3885, marks=pytest.mark.slow), ("logistic", 3885),
    ("logistic", 1295),
    pytest.param("hinge", 1295, marks=pytest.mark.slow),  # 47 s; 6 partitions are covered by logistic
], ids=["1-partition-hinge", "1-partition-logistic", "2-partitions-hinge", "2-partitions-logistic",
        "6-partitions-logistic", "6-partitions-hinge"])
def test_cocoa_plus_on_cluster_reaches_the_optimum(client, tmp_path_factory, loss, block_rows):
    store = _store(tmp_path_factory, "reuters", block_rows)
    m = daskdca.fit(store, loss=loss, lam=1e-3, solver="cocoa+", tol=1e-7, max_rounds=3000, client=client)
    assert m.converged_ and m.gap_ <= 1e-7 * m.primal_
    p_star = _in_memory_optimum("reuters", loss, 1e-3)
    assert abs(m.primal_ - p_star) <= 1e-6 * p_star
    X, y = load_dataset("reuters")
    assert m.dual_coef_.shape == (X.shape[0],)
    # the duals come back in the file's row order: read in that order they give the certified dual
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    w_alpha = X.T @ m.dual_coef_ / (1e-3 * X.shape[0])
    dual = -np.mean(daskdca.losses.get_loss(loss).conjugate(ys, m.dual_coef_)) - 0.5e-3 * float(w_alpha @ w_alpha)
    assert dual == pytest.approx(m.dual_, rel=1e-9)


@pytest.mark.parametrize("loss, batch_size, block_rows", [
    pytest.param("logistic", None, 200, marks=pytest.mark.slow),  # 34 s; the contract runs it against in-process
    pytest.param("logistic", None, 1000, marks=pytest.mark.slow),
    pytest.param("logistic", None, 500, marks=pytest.mark.slow),
    pytest.param("hinge", 200, 500, marks=pytest.mark.slow),
])
def test_minibatch_sdca_on_cluster_reaches_the_optimum(client, tmp_path_factory, loss, batch_size, block_rows):
    store = _store(tmp_path_factory, "rcv1_1k", block_rows)
    m = daskdca.fit(store, loss=loss, lam=1e-3, solver="minibatch_sdca", batch_size=batch_size, tol=1e-6,
                    max_rounds=3000, client=client)
    assert m.converged_
    p_star = _in_memory_optimum("rcv1_1k", loss, 1e-3)
    assert abs(m.primal_ - p_star) <= 1e-6 * p_star


@pytest.mark.parametrize("solver, loss, batch_size, n_partitions", [
    ("cocoa+", "logistic", None, 6),
    # 20 s; the contract checks every method out of core against in process, round by round
    pytest.param("minibatch_sdca", "logistic", 250, 2, marks=pytest.mark.slow),
    pytest.param("cocoa+", "hinge", None, 6, marks=pytest.mark.slow),  # 219 rounds twice: 87 s
])
def test_out_of_core_gives_the_in_memory_bits(client, tmp_path_factory, solver, loss, batch_size, n_partitions):
    """Read block by block every round, or held in memory.

    Mini-batch SDCA draws the same rows either way (partitions of 3 blocks
    here).  CoCoA+ sweeps a partition held in memory with one permutation and
    one read block by block a block at a time, so the two agree bit for bit
    when each partition is one block.
    """
    store = _store(tmp_path_factory, "rcv1_1k", 167)  # 6 blocks
    kwargs = dict(loss=loss, lam=1e-3, solver=solver, batch_size=batch_size, n_partitions=n_partitions,
                  tol=1e-5, max_rounds=400, client=client)
    held = daskdca.fit(store, in_memory=True, **kwargs)
    streamed = daskdca.fit(store, in_memory=False, **kwargs)
    assert held.n_rounds_ == streamed.n_rounds_
    np.testing.assert_array_equal(held.dual_coef_, streamed.dual_coef_)
    np.testing.assert_allclose(held.coef_, streamed.coef_, rtol=0, atol=1e-15)
    assert held.converged_
    p_star = _in_memory_optimum("rcv1_1k", loss, 1e-3)
    assert abs(held.primal_ - p_star) <= 1e-5 * p_star


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_cocoa_plus_in_memory_on_cluster_repeats_the_in_process_solver(client, tmp_path_factory, loss):
    """Two partitions of 3 blocks each give the in-process CoCoA+ iterates, bit for bit.

    A regression test: the engine once swept such partitions block after block,
    which took 705 rounds where the in-process solver takes 6 (a9a, logistic,
    lam 1e-3, one partition of 2 blocks; benchmarks/RESULTS.md).
    """
    X, y = load_dataset("reuters")
    # in memory, rows go to partitions by the seeded permutation; the store
    # holds the rows in that order, 6 blocks, so partitions of 3 blocks
    order = random_row_order(X.shape[0], 3)
    store = write_store(tmp_path_factory.mktemp("stores") / "reuters-permuted.zarr", X[order], y[order],
                        block_rows=1295, shuffle=False)
    kwargs = dict(loss=loss, lam=1e-4, solver="cocoa+", n_partitions=2, tol=1e-12, max_rounds=5, random_state=3)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    with pytest.warns(ConvergenceWarning):
        remote = daskdca.fit(store, client=client, in_memory=True, **kwargs)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    # the gap sums are added per partition on the cluster, so they agree to rounding only
    np.testing.assert_allclose([r.primal for r in remote.history_],
                               [r.primal for r in local.history_[:len(remote.history_)]], rtol=1e-12)


@pytest.mark.parametrize("n, n_partitions", [(402, 4), (400, 3), (10, 4)])
@pytest.mark.parametrize("staged", ["held", "checkpoint"])
def test_arrays_on_the_cluster_cut_the_in_process_partitions(client, tmp_path, n, n_partitions, staged):
    """In-memory arrays on a client are cut into the in-process partitions (sizes that differ by at most one
    row), held on the workers or staged as a store of one block per partition (a checkpoint's), so the bits are the in-process
    ones.  They were runs of ``ceil(n / K)`` rows (402 rows in 4: 101, 101, 101, 99 against 101, 101, 100,
    100 in process), other partitions whenever ``n % K`` is neither 0 nor ``K - 1``."""
    X, y = load_dataset("heart")
    X, y = X[:n], y[:n]
    if n > X.shape[0]:  # heart has 270 rows: repeat them, shifted, to reach n
        reps = -(-n // X.shape[0])
        import scipy.sparse as sp
        X = sp.vstack([X * (1.0 + 0.01 * k) for k in range(reps)]).tocsr()[:n]
        y = np.tile(y, reps)[:n]
    kwargs = dict(loss="logistic", lam=1e-2, solver="cocoa+", n_partitions=n_partitions, tol=1e-12, max_rounds=6,
                  random_state=5)
    extra = {"checkpoint": str(tmp_path / "ck")} if staged == "checkpoint" else {}
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    with pytest.warns(ConvergenceWarning):
        remote = daskdca.fit(X, y, client=client, **kwargs, **extra)
    assert remote.route_.n_partitions == n_partitions
    np.testing.assert_array_equal(remote.coef_, local.coef_)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_)


def test_in_memory_false_on_arrays_is_refused_before_staging(client, monkeypatch):
    """Arrays on a client go to the workers' memory: ``in_memory=False`` is refused before they are staged."""
    from daskdca.store import write

    staged = []
    monkeypatch.setattr(write, "write_blocks_of", lambda *args, **kwargs: staged.append(1))
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match="in_memory=False needs the data in a store every worker can read"):
        daskdca.fit(X, y, client=client, in_memory=False, n_partitions=2)
    assert not staged


def test_many_partitions_per_worker_run_as_one_task_each_with_the_in_process_bits(client, tmp_path_factory):
    """10 partitions on 2 workers: a round is one local task per worker's group of 5 partitions, and the
    reduction over the groups' tree nodes gives the in-process iterates bit for bit.

    The groups (partitions 0-4 and 5-9) do not line up with the fan-in-8 tree
    (partitions 0-7 and 8-9): group 2 sums 8-9 itself, the node over 0-7 and
    the root are tasks of their own.
    """
    X, y = load_dataset("rcv1_1k")
    order = random_row_order(X.shape[0], 6)
    store = write_store(tmp_path_factory.mktemp("stores") / "rcv1-10.zarr", X[order], y[order], block_rows=100,
                        shuffle=False)  # 10 blocks of 100 rows: the in-process partitions of 1,000 rows
    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=10, tol=1e-12, max_rounds=6,
                  random_state=6)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    with (dask.config.set({"daskdca.rounds": "tasks"}), distributed.get_task_stream(client) as stream,
          pytest.warns(ConvergenceWarning)):
        remote = daskdca.fit(store, client=client, in_memory=True, **kwargs)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    np.testing.assert_array_equal(remote.coef_, local.coef_)
    keys = [str(task["key"]) for task in stream.data]
    for rnd in range(1, 6):
        local_tasks = [k for k in keys if k.startswith("daskdca-round-") and f"-r{rnd}-" in k]
        reduce_tasks = [k for k in keys if k.startswith("daskdca-reduce-") and f"-r{rnd}-" in k]
        # one local and one sending task per group; the tree nodes over 0-7 and the root
        assert sorted(k.rsplit("-", 1)[1] for k in local_tasks) == ["g0", "g1", "send0", "send1"]
        assert len(reduce_tasks) == 2


def test_partitions_are_grouped_per_worker_thread_and_regrouped_when_workers_join(tmp_path):
    """A fit started on one worker with 2 threads runs its 4 partitions as 2 tasks a round (one per thread);
    a second such worker joins at round 3, and from the next copy of the states (round 10) the partitions
    run in 4 groups over both workers.  The iterates are the in-process ones, bit for bit."""
    X, y = load_dataset("rcv1_1k")
    order = random_row_order(X.shape[0], 7)
    store = write_store(tmp_path / "rcv1-4.zarr", X[order], y[order], block_rows=250, shuffle=False)
    kwargs = dict(loss="hinge", lam=1e-4, solver="cocoa+", n_partitions=4, tol=1e-12, max_rounds=16,
                  random_state=7)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        def scale_up(record, state):
            if record.round == 3:
                cluster.scale(2)
                c.wait_for_workers(2, timeout=60)

        with (dask.config.set({"daskdca.rounds": "tasks"}), distributed.get_task_stream(c) as stream,
              pytest.warns(ConvergenceWarning)):
            remote = daskdca.fit(store, client=c, in_memory=True, checkpoint_every=10, callback=scale_up,
                                 **kwargs)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    rounds = {}
    for task in stream.data:
        key = str(task["key"])
        if key.startswith("daskdca-round-") and "-send" not in key:
            rnd = int(re.search(r"-r(\d+)-", key).group(1))
            rounds.setdefault(rnd, set()).add((key.rsplit("-", 1)[1], task["worker"]))
    assert {g for g, _ in rounds[5]} == {"g0", "g1"} and len({w for _, w in rounds[5]}) == 1
    assert {g for g, _ in rounds[12]} == {"g0", "g1", "g2", "g3"} and len({w for _, w in rounds[12]}) == 2


def _actors_per_worker(client):
    return sorted(client.run(lambda dask_worker: len(dask_worker.state.actors)).values())


@pytest.mark.parametrize("in_memory", [True, False])
def test_resident_rounds_run_no_round_tasks_and_give_the_in_process_bits(client, tmp_path_factory, in_memory):
    """The default rounds (Dask config daskdca.rounds = "resident"): 10 partitions on 2 workers live in one
    actor per worker (partitions 0-4 and 5-9); a round is a call to each, no task, and the iterates are the
    in-process ones bit for bit, in memory and out of core.  The actors leave with the fit."""
    X, y = load_dataset("rcv1_1k")
    order = random_row_order(X.shape[0], 6)
    store = write_store(tmp_path_factory.mktemp("stores") / "rcv1-10.zarr", X[order], y[order], block_rows=100,
                        shuffle=False)
    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=10, tol=1e-12, max_rounds=6,
                  random_state=6)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    seen = []

    def look(record, state):
        seen.append(_actors_per_worker(client))

    with distributed.get_task_stream(client) as stream, pytest.warns(ConvergenceWarning):
        remote = daskdca.fit(store, client=client, in_memory=in_memory, callback=look, **kwargs)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    np.testing.assert_array_equal(remote.coef_, local.coef_)
    assert [r.primal for r in remote.history_] == [r.primal for r in local.history_]
    keys = [str(task["key"]) for task in stream.data]
    assert not [k for k in keys if k.startswith(("daskdca-round-", "daskdca-reduce-", "daskdca-combine-"))]
    assert [k for k in keys if k.startswith("daskdca-resident-")]
    assert seen and all(counts == [1, 1] for counts in seen)
    assert _actors_per_worker(client) == [0, 0]


def test_resident_rounds_move_to_workers_that_join(tmp_path):
    """A fit started on one worker puts its 4 partitions in one actor; a second worker joins at round 3, and
    from the next copy of the states (round 10) the partitions live in two actors, one per worker.  The
    iterates are the in-process ones, bit for bit."""
    X, y = load_dataset("rcv1_1k")
    order = random_row_order(X.shape[0], 7)
    store = write_store(tmp_path / "rcv1-4.zarr", X[order], y[order], block_rows=250, shuffle=False)
    kwargs = dict(loss="hinge", lam=1e-4, solver="cocoa+", n_partitions=4, tol=1e-12, max_rounds=16,
                  random_state=7)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        seen = {}

        def scale_up(record, state):
            if record.round == 3:
                cluster.scale(2)
                c.wait_for_workers(2, timeout=60)
            seen[record.round] = _actors_per_worker(c)

        with pytest.warns(ConvergenceWarning):
            remote = daskdca.fit(store, client=c, in_memory=True, checkpoint_every=10, callback=scale_up,
                                 **kwargs)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    assert seen[2] == [1] and seen[5] == [0, 1] and seen[12] == [1, 1]


def _count_proxied_calls(dask_scheduler):
    """Count the calls the scheduler passes on to a worker (its ``proxy`` handler: an actor call that does not go
    straight to the actor's worker) in ``dask_scheduler.daskdca_proxied``."""
    if getattr(dask_scheduler, "daskdca_proxied", None) is None:
        handler = dask_scheduler.handlers["proxy"]

        async def proxy(*args, **kwargs):
            dask_scheduler.daskdca_proxied += 1
            return await handler(*args, **kwargs)

        dask_scheduler.handlers["proxy"] = proxy
    dask_scheduler.daskdca_proxied = 0


def _proxied_calls(dask_scheduler):
    return dask_scheduler.daskdca_proxied


@pytest.mark.parametrize("unreachable", [False, True])
def test_resident_calls_go_straight_to_the_workers(client, monkeypatch, caplog, unreachable):
    """With Dask's default client the actors' calls go from this process to their workers, none through the
    scheduler; a client made with ``direct_to_workers=False`` keeps Dask's proxies, whose every call goes
    through the scheduler, and so does a fit whose workers this process cannot reach (here: every direct call
    fails to connect).  The iterates are the in-process ones in each case."""
    from daskdca.engine import resident

    X, y = load_dataset("rcv1_1k")
    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=2, tol=1e-12, max_rounds=6,
                  random_state=3)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    if unreachable:
        class Unreachable:
            async def actor_execute(self, **msg):
                raise OSError("connection refused (the test's unreachable worker)")

        monkeypatch.setattr(resident._DirectActor, "_worker_rpc", property(lambda self: Unreachable()))
    with distributed.Client(client.scheduler.address, direct_to_workers=False, set_as_default=False) as scheduled:
        proxied = {}
        for name, c in (("default", client), ("direct_to_workers=False", scheduled)):
            c.run_on_scheduler(_count_proxied_calls)
            with pytest.warns(ConvergenceWarning), caplog.at_level("INFO", logger="daskdca"):
                remote = daskdca.fit(X, y, client=c, **kwargs)
            proxied[name] = c.run_on_scheduler(_proxied_calls)
            np.testing.assert_array_equal(remote.coef_, local.coef_)
    # at least one call per actor a round when they go through the scheduler
    assert proxied["direct_to_workers=False"] >= 2 * 6
    if unreachable:
        assert proxied["default"] >= 2 * 6 and "calls to the workers go through the scheduler" in caplog.text
    else:
        assert proxied["default"] == 0


def test_callback_reads_the_dual_point_in_the_callers_row_order(client, tmp_path):
    """A callback's ``state.alpha`` on the cluster is the in-process one, in the caller's row order, for in-memory
    arrays held on the workers (whose partitions hold the rows in a seeded random order) and staged as a store
    (a checkpointed fit); the copies of the states every 2 rounds come between the reads."""
    X, y = load_dataset("rcv1_1k")
    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=4, tol=1e-12, max_rounds=8,
                  random_state=4)
    read, seen = [], []
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, callback=lambda record, state: read.append(state.alpha.copy()), **kwargs)
    with pytest.warns(ConvergenceWarning):
        remote = daskdca.fit(X, y, client=client, checkpoint_every=2,
                             callback=lambda record, state: seen.append(state.alpha.copy()), **kwargs)
    np.testing.assert_array_equal(remote.coef_, local.coef_)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_)
    assert len(seen) == len(read) >= 7
    for a, b in zip(seen, read):
        np.testing.assert_array_equal(a, b)
    staged = []  # the arrays staged as a store (a checkpointed fit): the same dual points
    with pytest.warns(ConvergenceWarning):
        daskdca.fit(X, y, client=client, checkpoint=str(tmp_path / "ck"), callback=lambda record, state: staged.append(
            state.alpha.copy()), **kwargs)
    assert len(staged) == len(read)
    for a, b in zip(staged, read):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("in_memory", [True, False])
def test_minibatch_sdca_on_cluster_repeats_the_in_process_solver(client, tmp_path_factory, in_memory):
    """Round by round: the same sigma^2, batches, steps and sums in process and on the cluster.

    Two unequal partitions (1, 2 blocks of the store) in process and on the
    cluster, in memory and out of core: every dual variable, bit for bit.
    """
    X, y = load_dataset("rcv1_1k")
    order = random_row_order(X.shape[0], 5)
    store = write_store(tmp_path_factory.mktemp("stores") / f"rcv1-mb-{in_memory}.zarr", X[order], y[order],
                        block_rows=500, shuffle=False)  # 2 blocks: partitions of 500 and 500 rows
    solver = daskdca.MinibatchSDCA(batch_size=64, eso="spectral", eval_every=3)
    kwargs = dict(loss="logistic", lam=1e-3, solver=solver, n_partitions=2, tol=1e-12, max_rounds=40,
                  random_state=5)
    with pytest.warns(ConvergenceWarning):
        local = daskdca.fit(X, y, **kwargs)
    with pytest.warns(ConvergenceWarning):
        remote = daskdca.fit(store, client=client, in_memory=in_memory, **kwargs)
    assert remote.plan_.sigma2 == local.plan_.sigma2 and remote.plan_.betas == local.plan_.betas
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    assert [r.round for r in remote.history_] == [r.round for r in local.history_] == [3, 6, 9, 12, 15, 18, 21,
                                                                                      24, 27, 30, 33, 36, 39, 40]
    np.testing.assert_allclose([r.primal for r in remote.history_], [r.primal for r in local.history_],
                               rtol=1e-12)


@pytest.mark.slow  # 20 s; the contract's in-process == cluster bits imply it
def test_cluster_runs_are_bit_identical(client, tmp_path_factory):
    store = _store(tmp_path_factory, "reuters", 2590)
    runs = [daskdca.fit(store, loss="hinge", lam=1e-3, solver="cocoa+", tol=1e-5, client=client, random_state=7)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].coef_, runs[1].coef_)
    np.testing.assert_array_equal(runs[0].dual_coef_, runs[1].dual_coef_)


@pytest.mark.slow  # 132 s; tests/test_method_contract.py kills a worker of every method's fit
def test_killed_worker_gives_the_undisturbed_result(tmp_path_factory):
    """Six partitions, a kill at round 6 of a fit to 1e-7, on a cluster of its own."""
    store = _store(tmp_path_factory, "reuters", 1295)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        kwargs = dict(loss="hinge", lam=1e-3, solver="cocoa+", tol=1e-7, client=client, random_state=3,
                      checkpoint_every=4)
        undisturbed = daskdca.fit(store, **kwargs)
        victim = sorted(client.run(os.getpid).items())[0][1]  # SIGKILL by pid: nothing waits on the dying worker
        killed = []

        def kill_one_worker(record, state):
            if record.round == 6 and not killed:
                killed.append(victim)
                os.kill(victim, signal.SIGKILL)
            return False

        disturbed = daskdca.fit(store, callback=kill_one_worker, **kwargs)
    assert killed
    assert disturbed.n_rounds_ == undisturbed.n_rounds_
    np.testing.assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)


def test_interrupted_fit_resumes_from_checkpoint(client, tmp_path_factory, tmp_path):
    store = _store(tmp_path_factory, "reuters", 2590)
    kwargs = dict(loss="hinge", lam=1e-3, solver="cocoa+", tol=1e-4, client=client, random_state=1,
                  checkpoint_every=5)  # 34 rounds
    uninterrupted = daskdca.fit(store, checkpoint=tmp_path / "a", **kwargs)

    die = driver_dies_at(13)
    with pytest.raises(DriverDied):
        daskdca.fit(store, checkpoint=tmp_path / "b", callback=die, **kwargs)
    resumed = daskdca.fit(store, checkpoint=tmp_path / "b", resume=True, **kwargs)
    assert resumed.n_rounds_ == uninterrupted.n_rounds_
    np.testing.assert_array_equal(resumed.dual_coef_, uninterrupted.dual_coef_)
    np.testing.assert_array_equal(resumed.coef_, uninterrupted.coef_)
    assert [r.round for r in resumed.history_] == [r.round for r in uninterrupted.history_]
    with pytest.raises(ValueError, match="belongs to a different fit"):
        daskdca.fit(store, checkpoint=tmp_path / "b", resume=True, **{**kwargs, "random_state": 2})
    with pytest.raises(ValueError, match="holds no complete daskdca checkpoint"):
        daskdca.fit(store, checkpoint=tmp_path / "empty", resume=True, **kwargs)


def test_a_fit_resumed_past_its_budget_or_its_tol_records_each_round_once(client, tmp_path_factory, tmp_path):
    """A fit stopped by ``max_rounds`` checkpoints its final certified record; resumed with a larger budget it
    listed that round twice (``[1, 2, 3, 4, 4, 5, ...]``), and so did the resume of a fit that had ended."""
    store = _store(tmp_path_factory, "reuters", 2590)
    kwargs = dict(loss="hinge", lam=1e-3, solver="cocoa+", tol=1e-4, client=client, random_state=1)
    uninterrupted = daskdca.fit(store, max_rounds=8, checkpoint=tmp_path / "a", **kwargs)
    with pytest.warns(ConvergenceWarning):
        daskdca.fit(store, max_rounds=4, checkpoint=tmp_path / "b", **kwargs)
    resumed = daskdca.fit(store, max_rounds=8, checkpoint=tmp_path / "b", resume=True, **kwargs)
    rounds = [r.round for r in resumed.history_]
    assert rounds == [r.round for r in uninterrupted.history_] and len(set(rounds)) == len(rounds)
    np.testing.assert_array_equal(resumed.coef_, uninterrupted.coef_)
    again = daskdca.fit(store, max_rounds=8, checkpoint=tmp_path / "a", resume=True, **kwargs)
    assert [r.round for r in again.history_] == [r.round for r in uninterrupted.history_]


@pytest.mark.parametrize("first,then", [("tasks", "resident"), ("resident", "tasks")])
def test_either_round_mechanism_resumes_the_others_checkpoint(client, tmp_path_factory, tmp_path, first, then):
    """The resident and the task executors write the same checkpoint: a fit killed under one resumes under the
    other to the undisturbed bits."""
    store = _store(tmp_path_factory, "heart", 135)
    kwargs = dict(loss="logistic", lam=1e-3, solver="cocoa+", tol=0.0, max_rounds=12, client=client,
                  random_state=4, checkpoint_every=4)

    class DriverDied(Exception):
        pass

    def die(record, state):
        if record.round == 9:
            raise DriverDied

    with pytest.warns(ConvergenceWarning):
        undisturbed = daskdca.fit(store, checkpoint=tmp_path / "a", **kwargs)
    with dask.config.set({"daskdca.rounds": first}), pytest.raises(DriverDied):
        daskdca.fit(store, checkpoint=tmp_path / "b", callback=die, **kwargs)
    with dask.config.set({"daskdca.rounds": then}), pytest.warns(ConvergenceWarning):
        resumed = daskdca.fit(store, checkpoint=tmp_path / "b", resume=True, **kwargs)
    np.testing.assert_array_equal(resumed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)
    assert resumed.n_rounds_ == undisturbed.n_rounds_ == 12


def test_an_unknown_round_mechanism_is_named_with_the_fix(client, tmp_path_factory):
    store = _store(tmp_path_factory, "heart", 135)
    with dask.config.set({"daskdca.rounds": "actors"}), pytest.raises(ValueError, match="'resident'"):
        daskdca.fit(store, loss="logistic", lam=1e-3, solver="cocoa+", client=client)


@pytest.mark.slow
def test_out_of_core_with_workers_smaller_than_the_store(tmp_path):
    import dask
    from distributed.diagnostics import MemorySampler

    from daskdca import datasets

    store = datasets.make_classification(tmp_path / "big.zarr", 560_000, 1_000_000, nnz_per_row=120, seed=0,
                                         zipf_exponent=0.8, block_rows=35_000)
    raw = store.nnz * 12
    limit = 700 * 2**20  # a worker with numba, scipy and zarr loaded is ~300 MiB before any data
    assert raw > limit  # the store does not fit in one worker
    sampler = MemorySampler()
    # No pausing or spilling: a worker over 95% of its limit is killed by its
    # nanny, so finishing with no restart means memory stayed under the limit.
    # (With pausing on, a worker near 80% stops running tasks.)
    with dask.config.set({"distributed.worker.memory.pause": False, "distributed.worker.memory.spill": False,
                          "distributed.worker.memory.target": False}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                     memory_limit=limit, silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        workers_before = set(c.scheduler_info()["workers"])
        with sampler.sample("fit", client=c, measure="process"):
            m = daskdca.fit(store, loss="logistic", lam=1e-3, solver="cocoa+", n_partitions=2, tol=1e-6, client=c)
        assert set(c.scheduler_info()["workers"]) == workers_before  # no worker was killed and restarted
    assert m.converged_
    # the default window (8 blocks of 49 MB here, each held twice) would not fit a 700 MiB worker: bounded
    from daskdca.methods.cocoa import WINDOW_BLOCKS

    assert 1 <= m.plan_.settings.window_blocks < WINDOW_BLOCKS
    assert sampler.to_pandas()["fit"].max() < 2 * limit
    X, y = store.read_all()
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-3, tol=1e-9)
    assert abs(m.primal_ - ref.primal_) <= 1e-6 * ref.primal_


def test_dask_array_and_in_memory_inputs(client):
    da = pytest.importorskip("dask.array")
    X, y = load_dataset("heart")
    Xd = da.from_array(X, chunks=(90, 13), asarray=False)
    # lam 1e-1: about 30 rounds to 1e-8 (1e-2 took 250 rounds a fit)
    m = daskdca.fit(Xd, y, loss="logistic", lam=1e-1, solver="cocoa+", tol=1e-8, client=client)
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-1, tol=1e-10)
    assert m.primal_ == pytest.approx(ref.primal_, rel=1e-7)
    np.testing.assert_array_equal(m.classes_, ref.classes_)
    m2 = daskdca.fit(X, y, loss="logistic", lam=1e-1, solver="cocoa+", tol=1e-8, client=client, n_partitions=3)
    assert m2.primal_ == pytest.approx(ref.primal_, rel=1e-7)
    words = np.where(y > 0, "yes", "no")  # any two labels, as in memory
    m3 = daskdca.fit(X, words, loss="logistic", lam=1e-1, solver="cocoa+", tol=1e-8, client=client)
    np.testing.assert_array_equal(m3.classes_, ["no", "yes"])
    assert m3.primal_ == pytest.approx(ref.primal_, rel=1e-7)
    assert set(m3.predict(X)) <= {"no", "yes"}


@pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")
@pytest.mark.parametrize("solver, loss", [("cocoa+", "logistic"), ("newton", "logistic"), ("cocoa+", "hinge")])
def test_in_memory_arrays_go_to_the_workers_without_a_staged_store(client, monkeypatch, solver, loss):
    """Rounds over arrays given with a client: each partition is sent from here once, with no store written
    (write_store fails if called), and the rounds give the in-process bits of the same two partitions, the
    duals back in X's row order."""
    import daskdca.store

    def no_store(*args, **kwargs):
        raise AssertionError("staged a store")

    X, y = load_dataset("heart")
    kw = dict(loss=loss, lam=1e-2, solver=solver, tol=0.0, max_rounds=6, random_state=4, n_partitions=2)
    ref = daskdca.fit(X, y, **kw)
    monkeypatch.setattr(daskdca.store, "write_store", no_store)
    held = daskdca.fit(X, y, client=client, **kw)
    assert held.route_.name == "rounds" and held.route_.n_partitions == 2
    np.testing.assert_array_equal(held.coef_, ref.coef_)
    np.testing.assert_array_equal(held.dual_coef_, ref.dual_coef_)
    assert [r.gap for r in held.history_] == [r.gap for r in ref.history_]


@pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")
def test_minibatch_sdca_on_a_cluster_takes_the_batch_a_round_is_worth(client):
    """solver="minibatch_sdca" with a client: batch_size "round" (sqrt(r / sigma^2) rows, more than the
    1/sigma^2 of a fit in this process), with the bits of the same method object in process."""
    from daskdca.methods import MinibatchSDCA

    X, y = load_dataset("heart")
    kw = dict(loss="logistic", lam=1e-2, tol=0.0, max_rounds=8, random_state=1, n_partitions=2)
    here = daskdca.fit(X, y, solver="minibatch_sdca", **kw)
    on_cluster = daskdca.fit(X, y, solver="minibatch_sdca", client=client, **kw)
    same = daskdca.fit(X, y, solver=MinibatchSDCA(batch_size="round"), **kw)
    assert on_cluster.solver.batch_size == "round" and here.solver.batch_size is None
    assert on_cluster.plan_.batch_size > here.plan_.batch_size
    assert on_cluster.plan_.batch_size == same.plan_.batch_size
    np.testing.assert_array_equal(on_cluster.coef_, same.coef_)
    np.testing.assert_array_equal(on_cluster.dual_coef_, same.dual_coef_)


def test_renumbered_store_returns_coef_in_source_order(client, tmp_path):
    path = data_path("heart_scale")
    store = convert_svmlight(path, tmp_path / "h.zarr", n_features=13, renumber_features=True, shuffle=True,
                             block_rows=135)
    m = daskdca.fit(store, loss="logistic", lam=1e-1, solver="cocoa+", tol=1e-9, client=client)
    X, y = load_dataset("heart")
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-1, tol=1e-11)
    assert np.linalg.norm(m.coef_ - ref.coef_) <= 1e-4 * np.linalg.norm(ref.coef_)
    # in stored (renumbered) order the vector would be far off: the mapping matters
    stored_order = m.coef_[store.feature_permutation]
    assert np.linalg.norm(stored_order - ref.coef_) > 0.1 * np.linalg.norm(ref.coef_)


def test_cluster_bad_input(client, tmp_path):
    X, y = load_dataset("heart")
    write_store(tmp_path / "h.zarr", X, y, block_rows=100, shuffle=False)
    with pytest.raises(StoreError, match="No daskdca store"):
        daskdca.fit(tmp_path / "nothing.zarr", client=client)
    import zarr

    g = zarr.open_group(str(tmp_path / "h.zarr"), mode="a")
    g.attrs["daskdca"] = {**g.attrs["daskdca"], "complete": False}
    with pytest.raises(StoreError, match="not a complete daskdca store"):
        daskdca.fit(tmp_path / "h.zarr", client=client)
    reg = write_store(tmp_path / "r.zarr", X, np.linspace(0, 1, X.shape[0]), block_rows=100, shuffle=False)
    with pytest.raises(ValueError, match="needs 2 to 64 label values.*more than 64"):
        daskdca.fit(reg, loss="hinge", client=client)
    with pytest.raises(ValueError, match="n_partitions=500 is more than the 270 rows"):
        daskdca.fit(X, y, solver="cocoa+", n_partitions=500, client=client)
    three_blocks = write_store(tmp_path / "h2.zarr", X, y, block_rows=100, shuffle=False)
    with pytest.raises(ValueError, match="n_partitions=4 but the store has only 3 blocks"):
        daskdca.fit(three_blocks, solver="cocoa+", n_partitions=4, client=client)
    with pytest.raises(ValueError, match="solver='sdca' is serial"):
        daskdca.fit(reg, loss="squared", solver="sdca", client=client)
    with pytest.raises(ValueError, match="y must be None for a store"):
        daskdca.fit(reg, y, loss="squared", solver="cocoa+", client=client)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as empty, \
            distributed.Client(empty) as no_workers:
        with pytest.raises(ValueError, match="has no workers"):
            daskdca.fit(reg, loss="squared", solver="cocoa+", client=no_workers)


def test_cluster_warns_when_not_converged(client, tmp_path):
    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=100, shuffle=False)
    with pytest.warns(ConvergenceWarning, match="max_rounds=3"):
        m = daskdca.fit(store, lam=1e-5, solver="cocoa+", tol=1e-12, max_rounds=3, client=client)
    assert not m.converged_ and m.n_rounds_ == 3 and np.isfinite(m.gap_) and m.gap_ > 0


def test_jobqueue_configs_build_their_job_scripts():
    jobqueue = pytest.importorskip("dask_jobqueue")
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "jobqueue_cluster", Path(__file__).resolve().parents[1] / "cluster" / "jobqueue_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for kind in ("slurm", "pbs"):
        cluster = module.make_cluster(kind, cores=4, memory="16GB", walltime="01:00:00",
                                      numba_cache_dir="/scratch/$USER/numba")
        try:
            script = cluster.job_script()
        finally:
            cluster.close()
        assert "export NUMBA_CACHE_DIR=/scratch/$USER/numba" in script
        # the workers' allocator settings reach their nannies through Dask's config from the environment
        [line] = [line for line in script.splitlines() if "PRE_SPAWN_ENVIRON" in line]
        name, value = line.removeprefix("export ").split("=", 1)
        merged = dask.config.update(copy.deepcopy(dask.config.config),
                                    dask.config.collect_env({name: value.strip('"')}))
        environ = merged["distributed"]["nanny"]["pre-spawn-environ"]
        assert {key: environ[key] for key in WORKER_MALLOC_ENVIRON} == WORKER_MALLOC_ENVIRON
        assert "OMP_NUM_THREADS" in environ  # Dask's own entries kept
        assert ("#SBATCH" in script) if kind == "slurm" else ("#PBS" in script)
        assert "distributed.cli.dask_worker" in script
    with pytest.raises(ValueError, match="unknown batch system 'lsf'"):
        module.make_cluster("lsf")
    assert jobqueue is not None


def test_unshuffled_store_with_sorted_labels_warns(client, tmp_path):
    X, y = load_dataset("heart")
    order = np.argsort(y, kind="stable")
    sorted_store = write_store(tmp_path / "sorted.zarr", X[order], y[order], block_rows=135, shuffle=False)
    with pytest.warns(UserWarning, match=r"not shuffled.*fractions from 0\.00 to 0\.89.*rewrite_store") as record:
        daskdca.fit(sorted_store, loss="logistic", lam=1e-1, tol=1e-4, client=client, solver="cocoa+")
    assert {r.filename for r in record if "not shuffled" in str(r.message)} == {__file__}  # the user's line
    shuffled = write_store(tmp_path / "shuffled.zarr", X[order], y[order], block_rows=135, shuffle=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        daskdca.fit(shuffled, loss="logistic", lam=1e-1, tol=1e-4, client=client)


def _interrupted_checkpoint(client, tmp_path):
    """A heart store and a checkpoint of 6 rounds of CoCoA+ (logistic), as a killed driver leaves it."""
    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    kwargs = dict(loss="logistic", lam=1e-3, solver="cocoa+", tol=1e-12, client=client, random_state=0,
                  checkpoint=tmp_path / "ck", checkpoint_every=3)
    with pytest.warns(ConvergenceWarning):
        daskdca.fit(store, max_rounds=6, **kwargs)
    import zarr

    group = zarr.open_group(str(tmp_path / "ck"), mode="a")
    return store, kwargs, group, group.attrs["daskdca_checkpoint"]["slot"]


@pytest.mark.parametrize("damage, match", [
    ("infeasible", r"partition 0: the dual variables lie outside the dual domain of the logistic loss"),
    ("short", r"partition 1: field 'alpha' has shape \(100,\)"),
    ("nan w", r"global state: field 'w' has shape \(13,\).*finite"),
    ("missing", r"is missing the arrays"),
])
def test_resume_refuses_a_damaged_checkpoint(client, tmp_path, damage, match):
    """Resume checks the arrays it loads: present, of the method's shapes, finite, duals in the loss's domain."""
    store, kwargs, group, slot = _interrupted_checkpoint(client, tmp_path)
    if damage == "infeasible":  # logistic needs y_i alpha_i in [0, 1]
        group[f"{slot}_local0_alpha"][:] = 5.0
    elif damage == "short":
        group.create_array(f"{slot}_local1_alpha", shape=(100,), dtype="float64", overwrite=True)[:] = 0.0
    elif damage == "nan w":
        w = group[f"{slot}_global_w"]
        w[0] = np.nan
    else:
        del group[f"{slot}_local1_alpha"]
    with pytest.raises(ValueError, match=match):
        daskdca.fit(store, resume=True, max_rounds=12, **kwargs)
    # the same checkpoint undamaged resumes (checked on a fresh one: the damage above is permanent)
    if damage == "infeasible":
        store, kwargs, group, slot = _interrupted_checkpoint(client, tmp_path / "again")
        with pytest.warns(ConvergenceWarning):
            m = daskdca.fit(store, resume=True, max_rounds=12, **kwargs)
        assert m.n_rounds_ == 12


def test_workers_that_cannot_use_the_checkpoint_folder_are_named(tmp_path, monkeypatch):
    """A checkpoint folder the workers cannot see fails at the start, naming them; without checkpoint= the round
    state stays in Dask, so the same workers fit, and nothing is written to the driver's temporary folder."""
    from daskdca.engine import checkpoint as engine_checkpoint  # where _check_workers_share looks _probe_path up

    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    elsewhere = tmp_path / "another-machine"
    elsewhere.mkdir()
    probe = engine_checkpoint._probe_path
    # in-process workers run the patched task: they look in a folder of their own, as on another node
    monkeypatch.setattr(engine_checkpoint, "_probe_path", lambda url, token: probe(str(elsewhere), token))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        with pytest.raises(ValueError, match=r"checkpoint=.*but 2 of 2 workers cannot use it.*FileNotFoundError"
                                             r".*shared by this process and every worker"):
            daskdca.fit(store, loss="logistic", lam=1e-2, solver="cocoa+", client=c, checkpoint=tmp_path / "ck")
        scratch = tmp_path / "driver-tmp"
        scratch.mkdir()
        with dask.config.set({"temporary-directory": str(scratch)}):
            # 25 rounds: the chains restart twice from the states copied through the driver (every 10)
            with pytest.warns(ConvergenceWarning):
                on_cluster = daskdca.fit(store, loss="logistic", lam=1e-2, solver="cocoa+", client=c, tol=0.0,
                                         max_rounds=25)
    with pytest.warns(ConvergenceWarning):
        in_process = daskdca.fit(store, loss="logistic", lam=1e-2, solver="cocoa+", tol=0.0, max_rounds=25)
    np.testing.assert_array_equal(on_cluster.coef_, in_process.coef_)
    assert on_cluster.n_rounds_ == 25
    assert list(scratch.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == []  # the probe files are gone
    monkeypatch.undo()


def test_arrays_resumed_on_fewer_workers_keep_the_recorded_partitions(tmp_path):
    """A checkpointed fit of in-memory arrays on 2 workers, resumed on 1, was refused ("belongs to a different
    fit (these differ: ['data', 'n_partitions'])"): the arrays took one partition per worker now.  The resume takes
    the checkpoint's partitions, as a store's does, and ends with the undisturbed fit's bits."""
    X, y = load_dataset("heart")
    kwargs = dict(loss="logistic", lam=1e-3, solver="cocoa+", tol=1e-10, max_rounds=12, checkpoint_every=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as two, distributed.Client(two) as client:
            undisturbed = daskdca.fit(X, y, client=client, checkpoint=str(tmp_path / "a"), **kwargs)
            with pytest.raises(DriverDied):
                daskdca.fit(X, y, client=client, checkpoint=str(tmp_path / "b"), callback=driver_dies_at(5),
                            **kwargs)
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as one, distributed.Client(one) as client:
            resumed = daskdca.fit(X, y, client=client, checkpoint=str(tmp_path / "b"), resume=True, **kwargs)
    assert undisturbed.route_.n_partitions == resumed.route_.n_partitions == 2
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)
    assert resumed.primal_ == undisturbed.primal_ and resumed.n_rounds_ == undisturbed.n_rounds_


@pytest.mark.slow
def test_a_one_worker_fit_of_shipped_rows_survives_its_worker(tmp_path):
    """The one-worker route sends in-memory rows to its worker, which Dask cannot recompute: a kill of that worker
    cancelled the fit with Dask's raw ``FutureCancelledError``.  The rows go to a worker again, and the fit ends
    with the undisturbed fit's bits."""
    import threading
    import time

    X, y = load_dataset("a9a")
    kwargs = dict(loss="hinge", lam=1e-6, tol=1e-12, max_epochs=400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=50) as cluster, distributed.Client(cluster) as client:
            undisturbed = daskdca.fit(X, y, client=client, **kwargs)
            assert undisturbed.route_.name == "one_worker"
            killed = []

            def kill_the_busy_worker():
                deadline = time.monotonic() + 60
                while not killed and time.monotonic() < deadline:
                    busy = [w for w, keys in client.processing().items() if any("one-worker" in k for k in keys)]
                    if busy:
                        time.sleep(0.5)
                        pid = client.run(os.getpid, workers=busy)[busy[0]]
                        os.kill(pid, signal.SIGKILL)
                        killed.append(busy[0])
                    time.sleep(0.05)

            killer = threading.Thread(target=kill_the_busy_worker)
            killer.start()
            again = daskdca.fit(X, y, client=client, **kwargs)
            killer.join()
    assert killed
    np.testing.assert_array_equal(again.coef_, undisturbed.coef_)
    assert again.primal_ == undisturbed.primal_
