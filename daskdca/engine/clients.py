"""The client a cluster fit runs on and what it asks of the workers.

:func:`cluster_client` (the given client, the default one, or a
LocalCluster of its own), :func:`local_client` (a LocalCluster on
127.0.0.1 for the command line and the tests), :func:`_check_workers`
(a fit needs at least one worker), :func:`_thread_slots` (the worker
threads alive now, which :class:`daskdca.engine.tasks._Placement` maps
partitions onto) and :class:`_WarmUp`, the worker plugin that compiles the
numba kernels once per worker.
"""

from __future__ import annotations

import contextlib
import logging
import os

import dask
from distributed.diagnostics.plugin import WorkerPlugin

from daskdca.kernels import warm_up

logger = logging.getLogger("daskdca")

__all__ = ["cluster_client", "local_client"]


@contextlib.contextmanager
def cluster_client(client):
    """The given client, the default one, or a LocalCluster started (and closed) here."""
    if client is not None:
        yield client
        return
    from distributed import Client, LocalCluster, default_client

    with contextlib.suppress(ValueError):
        yield default_client()
        return
    n_workers = max(1, min(os.cpu_count() or 1, 8))
    logger.info("daskdca: starting a LocalCluster with %d workers", n_workers)
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as new_client:
        yield new_client


@contextlib.contextmanager
def local_client(n_workers, *, scratch=None):
    """A client on a LocalCluster of ``n_workers`` processes (1 thread each) on 127.0.0.1, no dashboard.

    ``scratch``: a folder for the scheduler's and the workers' scratch space
    (Dask's ``temporary-directory`` and the workers' ``local_directory``),
    so nothing is left in the system's temporary folder.
    """
    import warnings

    from distributed import Client, LocalCluster

    config = {} if scratch is None else {"temporary-directory": os.fspath(scratch)}
    with warnings.catch_warnings(), dask.config.set(config):
        # without a dashboard the scheduler still serves its health routes on 127.0.0.1, at 8787
        # or, when that is taken, any free port; that move is no news here
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, local_directory=scratch, silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        yield client


def _check_workers(client):
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        try:
            client.wait_for_workers(1, timeout=10)
        except Exception as exc:
            raise ValueError(
                f"the Dask client {client} has no workers; start some (e.g. LocalCluster(n_workers=2) "
                "or cluster.scale(...)) before fitting."
            ) from exc
    return len(client.scheduler_info().get("workers", {}))


def _thread_slots(client):
    """One entry per worker thread of the cluster now: each worker's address, ``nthreads`` times, sorted."""
    workers = client.scheduler_info().get("workers", {})
    return [address for address in sorted(workers) for _ in range(max(1, int(workers[address].get("nthreads") or 1)))]


class _WarmUp(WorkerPlugin):
    """Worker plugin: compile (or load from cache) the numba kernels once per worker.

    Registered once per fit (idempotent by name); workers that join later
    (adaptive scaling, jobqueue) run it too.
    """

    name = "daskdca-warm-up"

    def setup(self, worker):
        warm_up()
