"""fit on a store with no client: it starts the process's own LocalCluster once and reuses it.

Kept in its own module: a live client from another module's fixture would
be the default client and be used instead.
"""

import pytest

distributed = pytest.importorskip("distributed")

import daskdca  # noqa: E402
from daskdca.store import write_store  # noqa: E402

from conftest import load_dataset  # noqa: E402


def test_embedded_local_cluster_when_no_client(tmp_path):
    from daskdca.engine import close_embedded, embedded_client

    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    with pytest.raises(ValueError):
        distributed.default_client()  # no client anywhere before the fit
    m = daskdca.fit(str(tmp_path / "h.zarr"), loss="logistic", lam=1e-2, tol=1e-8)
    # the data fits one worker: solver="auto" runs serial SDCA as one task there
    assert m.route_.name == "one_worker" and m.solver.name == "sdca"
    started = embedded_client()
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-10)
    assert m.primal_ == pytest.approx(ref.primal_, rel=1e-7)
    # ten more fits without a client reuse the same cluster: it starts once per process
    for _ in range(10):
        again = daskdca.fit(str(tmp_path / "h.zarr"), loss="logistic", lam=1e-2, tol=1e-8)
        assert embedded_client() is started
        assert again.primal_ == m.primal_  # same route, same bits
    # rounds on it: one partition per worker (2 blocks, at most 2 partitions)
    rounds = daskdca.fit(str(tmp_path / "h.zarr"), loss="logistic", lam=1e-2, tol=1e-8, solver="cocoa+")
    assert rounds.route_.name == "rounds" and rounds.route_.n_partitions == min(2, len(
        started.scheduler_info()["workers"]))
    with pytest.raises(ValueError):
        distributed.default_client()  # the process's own cluster is never the user's default client
    # its workers start with glibc's largest dynamic allocator thresholds, not Dask's 64 KiB trim
    assert_worker_malloc_environ(started)
    close_embedded()
    assert started.status in ("closed", "closing")
    assert store.n_blocks == 2




def assert_worker_malloc_environ(client):
    """Every worker process of ``client`` runs with :data:`daskdca.engine.clients.WORKER_MALLOC_ENVIRON`."""
    import os

    from daskdca.engine.clients import WORKER_MALLOC_ENVIRON

    names = sorted(WORKER_MALLOC_ENVIRON)
    seen = client.run(lambda: {name: os.environ.get(name) for name in names})
    assert seen and all(environ == WORKER_MALLOC_ENVIRON for environ in seen.values())
    assert WORKER_MALLOC_ENVIRON == {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "67108864"}


def test_local_client_workers_use_the_allocator_settings():
    """Also after a cluster with Dask's own settings has started in this process (its nanny leaves
    ``MALLOC_TRIM_THRESHOLD_=65536`` in the process's environment, which a later nanny would read before the
    config), and after a restart; the environment is given back as it was once the cluster has started (a nanny
    writes its values there again at each restart, as Dask's do)."""
    import os

    from daskdca.engine import local_client

    with local_client(1) as client:
        assert_worker_malloc_environ(client)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as dask_client:
        dask_client.wait_for_workers(1, timeout=60)
    before = dict(os.environ)
    with local_client(1) as client:
        assert dict(os.environ) == before
        assert_worker_malloc_environ(client)
        client.restart()  # a nanny's restart keeps them
        assert_worker_malloc_environ(client)


def test_a_ctrl_c_while_the_embedded_cluster_starts_leaves_it_for_the_next_fit(tmp_path):
    """A KeyboardInterrupt while ``daskdca.fit`` started the process's LocalCluster left that cluster's worker
    processes running, unknown to daskdca (three interrupts: 6 orphan workers), and the next fit started
    another.  The start finishes in its own thread and the next fit reuses it."""
    import _thread
    import signal
    import threading
    import time

    from daskdca.engine import close_embedded, embedded_client
    from daskdca.engine.clients import _EMBEDDED

    close_embedded()
    X, y = load_dataset("heart")
    write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    # Python's own Ctrl-C handler (another module's import, e.g. dask_jobqueue's runner, may have replaced it)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            daskdca.fit(str(tmp_path / "h.zarr"), loss="logistic", lam=1e-2, tol=1e-8)
            time.sleep(30)  # a fit faster than the timer: the interrupt lands here
        timer.join()
    finally:
        signal.signal(signal.SIGINT, handler)
    starter = _EMBEDDED.get("starter")
    if starter is not None:
        starter.join(120)
    started = _EMBEDDED["client"]
    try:
        assert started is not None and started.status == "running"
        m = daskdca.fit(str(tmp_path / "h.zarr"), loss="logistic", lam=1e-2, tol=1e-8)
        assert embedded_client() is started and m.converged_
    finally:
        close_embedded()
