"""The one-worker route: the whole serial fit as one task on one worker, with no rounds.

When the data fits in one worker's memory, serial SDCA on that worker
needs one task where rounds would need a Dask round trip per epoch
(:mod:`daskdca.routes`).  The task reads the store itself (a store that only
this process can see, the staging copy of in-memory arrays, is read here and
sent to the worker instead) and runs :func:`daskdca.driver.run_rounds` with
the in-process executor on the worker's threads (its step's thread budget,
as a resident actor gives one), so the certificate and the bits are those
of serial SDCA on the store's rows in this process.  A killed worker reruns the
task from the start on another worker (Dask retries it), which gives the
same bits.
"""

from __future__ import annotations

import logging
import uuid

from daskdca.driver import InProcess, run_rounds, setup_plan
from daskdca.engine.clients import _resources, _workers_now
from daskdca.engine.errors import configured_no_workers_timeout
from daskdca.engine.executor import DaskExecutor
from daskdca.routes import Workers

logger = logging.getLogger("daskdca")

__all__ = ["fit_on_one_worker"]


def _fit_task(source, info, method, random_state, tol, max_rounds, max_epochs, dual_init, n_threads):
    """Task: load ``source`` (a store partition, or one already in memory) and run the whole fit on the
    ``n_threads`` threads of the worker it was placed on."""
    part = source if source.whole() is not None else source.load()
    executor = InProcess([part], info, random_state, dual_init=dual_init, n_threads=n_threads)
    return run_rounds(executor, setup_plan(executor, method), tol=tol, max_rounds=max_rounds, max_epochs=max_epochs)


def _worker_for(client):
    """``(address, nthreads)`` of the worker with the most memory (the first by address among equals): where
    the whole fit goes, and its threads; the addresses and the resources from one view of the scheduler (a
    worker that joins or leaves between two calls would shift one against the other)."""
    workers = _workers_now(client)
    chosen = Workers(*_resources(workers))
    address = sorted(workers)[chosen.fit_worker]
    return address, chosen.nthreads[chosen.fit_worker]


def fit_on_one_worker(source, info, *, client, method, random_state, tol, max_rounds, max_epochs, dual_init=None,
                      ship=False):
    """Run ``method`` on one partition holding every row, in one task on one worker.

    Parameters
    ----------
    source : partition
        All the rows as one partition: a :class:`~daskdca.partitions.StorePartition` (or its
        one-vs-rest wrapper) that the worker reads, or an in-memory partition.
    info : DataInfo
        The data constants, ``partition_sizes == (info.n,)``.
    client : distributed.Client
        The cluster.
    method : method object
        The method's settings (e.g. :class:`~daskdca.SDCA`).
    random_state : int
        The seed of every random stream.
    tol : float
        As :func:`daskdca.fit`.
    max_rounds : int or None
        As :func:`daskdca.fit`.
    max_epochs : float or None
        As :func:`daskdca.fit`.
    dual_init : ndarray or None, default=None
        As :func:`daskdca.fit`, in the rows' order.
    ship : bool, default=False
        The rows are read here (if not already in memory) and sent to the worker: for data only this
        process can see.

    Returns
    -------
    FitResult
        As the in-process driver returns it for the same partition.
    """
    wait_for_workers = configured_no_workers_timeout()  # a bad setting fails here, before any work
    run_id = uuid.uuid4().hex[:8]
    worker, n_threads = _worker_for(client)  # waits up to 10 s for a first worker, as every cluster fit does
    if ship:
        rows = source if source.whole() is not None else source.load()
        # hash=False: a fresh key for every fit; the same rows scattered again under the key of a fit that has
        # just released it can wait forever on the scheduler (a path over C fits the same rows in turn)
        [source] = client.scatter([rows], workers=[worker], direct=True, hash=False)
    logger.info("daskdca: %s on one worker (%s), %d rows, no rounds", method.name, worker, info.n)
    future = client.submit(_fit_task, source, info, method, random_state, tol, max_rounds, max_epochs, dual_init,
                           n_threads, key=f"daskdca-one-worker-{run_id}-fit", pure=False, workers=[worker],
                           allow_other_workers=True)
    # the executor's watched wait: no worker for daskdca.no-workers-timeout, or a lost scheduler, raises
    # instead of waiting forever; its rounds machinery is not used
    watcher = DaskExecutor(client, [], info, random_state, placement=None, run_id=run_id, checkpoint=None,
                           checkpoint_every=1, signature=None, no_workers_timeout=wait_for_workers)
    [result] = watcher.gather([future], "the one-worker fit")
    return result
