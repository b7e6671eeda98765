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
same bits; rows sent from here (``ship``), which Dask cannot recompute, are
sent again to another worker, up to Dask's
``distributed.scheduler.allowed-failures`` times in a row.
"""

from __future__ import annotations

import logging
import uuid

import dask

from daskdca.driver import InProcess, run_rounds, setup_plan
from daskdca.engine.clients import _resources, _workers_now
from daskdca.engine.errors import WorkersLostError, configured_no_workers_timeout
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
    from distributed.client import FutureCancelledError

    wait_for_workers = configured_no_workers_timeout()  # a bad setting fails here, before any work
    run_id = uuid.uuid4().hex[:8]
    rows = (source if source.whole() is not None else source.load()) if ship else None
    # the executor's watched wait: no worker for daskdca.no-workers-timeout, or a lost scheduler, raises
    # instead of waiting forever; its rounds machinery is not used
    watcher = DaskExecutor(client, [], info, random_state, placement=None, run_id=run_id, checkpoint=None,
                           checkpoint_every=1, signature=None, no_workers_timeout=wait_for_workers)
    allowed = int(dask.config.get("distributed.scheduler.allowed-failures", 3))
    lost = []
    while True:
        worker, n_threads = _worker_for(client)  # waits up to 10 s for a first worker, as every cluster fit does
        if ship:
            # hash=False: a fresh key for every fit; the same rows scattered again under the key of a fit that
            # has just released it can wait forever on the scheduler (a path over C fits the same rows in turn)
            [source] = client.scatter([rows], workers=[worker], direct=True, hash=False)
        logger.info("daskdca: %s on one worker (%s), %d rows, no rounds", method.name, worker, info.n)
        future = client.submit(_fit_task, source, info, method, random_state, tol, max_rounds, max_epochs,
                               dual_init, n_threads, key=f"daskdca-one-worker-{run_id}-fit{len(lost)}", pure=False,
                               workers=[worker], allow_other_workers=True)
        try:
            [result] = watcher.gather([future], "the one-worker fit")
            return result
        except FutureCancelledError as exc:
            # the worker holding the rows sent from here left (killed, retired, scaled down): Dask cannot make
            # them again, and cancels the fit; they are sent again, to a worker there is now
            if not ship:
                raise
            lost.append(f"worker {worker} ({exc})")
            if len(lost) > allowed:
                raise WorkersLostError(
                    f"the one-worker fit lost the worker holding its rows {len(lost)} times in a row: "
                    f"{'; '.join(lost)}. More losses than Dask's distributed.scheduler.allowed-failures = "
                    f"{allowed} end a fit, as they end a task (KilledWorker); a worker that dies every time most "
                    "often goes over its memory limit (https://distributed.dask.org/en/stable/killed.html). Fix: "
                    "give the workers more memory, or fit in this process (client=None).",
                    lost=tuple(lost), scheduler_address=watcher.scheduler_address) from None
            logger.info("daskdca: the one-worker fit lost %s; its rows go to a worker again", worker)
