"""The client a cluster fit runs on and what it asks of the workers.

:func:`cluster_client` (the given client, an address, the default one,
or the process's own LocalCluster, started once and reused:
:func:`embedded_client`), :func:`worker_resources` (threads and memory
limits, which the route reads), :func:`local_client` (a LocalCluster on
127.0.0.1 for the command line and the tests), :func:`_check_workers`
(a fit needs at least one worker), :func:`_thread_slots` (the worker
threads alive now, which :class:`daskdca.engine.tasks._Placement` maps
partitions onto) and :class:`_WarmUp`, the worker plugin that compiles the
numba kernels once per worker.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import warnings

import dask
from distributed.diagnostics.plugin import WorkerPlugin

from daskdca.kernels import warm_up

logger = logging.getLogger("daskdca")

__all__ = ["WORKER_MALLOC_ENVIRON", "close_embedded", "cluster_client", "embedded_client", "local_client", "worker_resources"]


#: The glibc allocator settings of the worker processes daskdca starts (:func:`embedded_client`,
#: :func:`local_client`), put in Dask's ``distributed.nanny.pre-spawn-environ``, which sets them before a worker
#: process starts.  Dask's own default there, ``MALLOC_TRIM_THRESHOLD_=65536``
#: (https://distributed.dask.org/en/stable/worker-memory.html, "Automatically trim memory"), also fixes glibc's
#: mmap threshold at its 128 KiB start (setting either turns glibc's dynamic threshold off, mallopt(3)), so each
#: block an out-of-core sweep reads, and each buffer it frees, is mapped and unmapped afresh: its pages are
#: faulted in and zeroed on every read.  These are the values the dynamic threshold reaches at most on 64-bit
#: Linux (32 MiB, trimming above twice that).  Measured (benchmarks/RESULTS.md, "The workers' allocator"): one
#: out-of-core fit of the 1,000,000 x 100,000 store in one process took 4.7-5.1 s with Dask's setting, 3.8-4.2 s with
#: glibc's defaults and 3.3-3.9 s with these.
WORKER_MALLOC_ENVIRON = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


@contextlib.contextmanager
def _worker_environ():
    """:data:`WORKER_MALLOC_ENVIRON` in the nannies' pre-spawn environment (the rest of Dask's kept) while the
    LocalClusters daskdca starts are made.

    A nanny takes a pre-spawn variable from this process's environment when
    it is there, before Dask's config, and every nanny writes its values into
    that environment before it starts a worker (``_get_env_variables`` and
    ``WorkerProcess.start`` in Dask's source,
    https://docs.dask.org/en/latest/_modules/distributed/nanny.html): after any other cluster's nanny in this
    process, Dask's ``MALLOC_TRIM_THRESHOLD_=65536`` would win over the
    config.  So the values go in both while the nannies are made (each keeps
    them for its restarts), and the environment is put back after.
    """
    saved = {name: os.environ.get(name) for name in WORKER_MALLOC_ENVIRON}
    try:
        os.environ.update(WORKER_MALLOC_ENVIRON)
        with dask.config.set({f"distributed.nanny.pre-spawn-environ.{name}": value
                              for name, value in WORKER_MALLOC_ENVIRON.items()}):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# The LocalCluster that fits without a client start: one per process, reused by every later such fit
# (a loop of fits or a grid search starts it once), closed at interpreter exit or by close_embedded().
_EMBEDDED = {"cluster": None, "client": None}
_EMBEDDED_LOCK = threading.Lock()


def _embedded_alive():
    client = _EMBEDDED["client"]
    return client is not None and client.status == "running"


def embedded_client():
    """The process's own LocalCluster client, started on first use (on 127.0.0.1, one thread a worker, no
    dashboard) and reused by every later fit that has no client; closed at exit.

    The cluster starts in a thread of its own, which records it when it is up: a Ctrl-C while this call
    waits for it leaves the start to finish there, and the next call reuses that cluster (an interrupted
    start in this thread left its worker processes running, unknown, until the process exited).
    """
    with _EMBEDDED_LOCK:
        if _embedded_alive():
            return _EMBEDDED["client"]
        starter = _EMBEDDED.get("starter")
        if starter is None or not starter.is_alive():
            close_embedded()
            starter = threading.Thread(target=_start_embedded, name="daskdca-embedded-start", daemon=True)
            _EMBEDDED["starter"], _EMBEDDED["error"] = starter, None
            starter.start()
    starter.join()
    with _EMBEDDED_LOCK:
        if _embedded_alive():
            return _EMBEDDED["client"]
        error = _EMBEDDED.get("error")
    raise error if error is not None else RuntimeError("daskdca: the process's LocalCluster did not start.")


def _start_embedded():
    """Start the process's own LocalCluster and record it (:func:`embedded_client`'s thread)."""
    from distributed import Client, LocalCluster

    n_workers = max(1, min(os.cpu_count() or 1, 8))
    logger.info("daskdca: starting a LocalCluster with %d workers (kept for later fits)", n_workers)
    try:
        with warnings.catch_warnings(), _worker_environ():
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster, set_as_default=False)
    except Exception as exc:  # the caller raises it
        _EMBEDDED["error"] = exc
        return
    with _EMBEDDED_LOCK:
        _EMBEDDED["cluster"], _EMBEDDED["client"] = cluster, client
        if not _EMBEDDED.get("registered"):
            atexit.register(close_embedded)
            _EMBEDDED["registered"] = True


def close_embedded():
    """Close the process's own LocalCluster, if one was started (:func:`embedded_client`)."""
    client, cluster = _EMBEDDED["client"], _EMBEDDED["cluster"]
    _EMBEDDED["client"] = _EMBEDDED["cluster"] = None
    with contextlib.suppress(Exception):
        if client is not None:
            client.close()
    with contextlib.suppress(Exception):
        if cluster is not None:
            cluster.close()


#: The ``distributed.Client.status`` values of a client that can no longer run a fit: ``client.close()`` sets
#: ``"closing"``, then ``"closed"`` (a client that lost its scheduler and reconnects says ``"connecting"``).
_CLOSED_STATUSES = ("closing", "closed")
# distributed.Client.status while it tries to reach a scheduler that went away
_DISCONNECTED_STATUSES = ("connecting",)


def _in_event_loop():
    """Whether this thread is running an asyncio event loop (a coroutine called us)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def cluster_client(client):
    """The client a cluster fit runs on.

    A context manager: ``with cluster_client(client) as active: ...``.

    Parameters
    ----------
    client : distributed.Client, str, os.PathLike or None
        A :class:`distributed.Client` (used as it is), a scheduler address
        such as ``"tcp://10.0.0.5:8786"`` (connected for the fit and closed
        after), or None: the default client (e.g. ``Client()`` in a
        notebook), else the process's own LocalCluster
        (:func:`embedded_client`), started once and reused.

    Yields
    ------
    distributed.Client
        The client to run on, for the duration of the ``with`` block.

    Raises
    ------
    ValueError
        When no scheduler answers at an address within Dask's connect
        timeout (the config value ``distributed.comm.timeouts.connect``),
        or when the client given is closed or closing (its ``status``).
    TypeError
        When ``client`` is neither a client, an address nor None.
    """
    from distributed import Client, default_client

    if isinstance(client, (str, os.PathLike)):
        address = os.fspath(client)
        try:
            # Dask's connect timeout (``distributed.comm.timeouts.connect``, 30 s by default) bounds the wait
            connected = Client(address, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"client={address!r}: no Dask scheduler answered there ({type(exc).__name__}: "
                             f"{exc}); pass the address a scheduler listens on (e.g. 'tcp://host:8786'), a "
                             "distributed.Client, or None.") from None
        with connected:
            yield connected
        return
    if client is not None:
        if not (hasattr(client, "submit") and hasattr(client, "scheduler_info")):
            raise TypeError(f"client must be a distributed.Client, a scheduler address string or None, got "
                            f"{type(client).__name__}.")
        status = getattr(client, "status", None)
        if status in _CLOSED_STATUSES:  # refused before the route reads the workers it cached when open
            raise ValueError(f"client={client!r} has status {status!r}: the client is closed; pass an open Client "
                             "or none (client=None fits on the default client or the process's own LocalCluster).")
        if status in _DISCONNECTED_STATUSES:
            from daskdca.engine.errors import SchedulerLostError

            raise SchedulerLostError(
                f"client={client!r} has status {status!r}: it is not connected to its scheduler (the scheduler is "
                "gone or unreachable); restart the scheduler, or pass a connected Client or none.",
                scheduler_address=getattr(getattr(client, "scheduler", None), "address", None))
        if getattr(client, "asynchronous", False) and _in_event_loop():
            raise ValueError(
                f"client={client!r} is an asynchronous Client and this call runs in its event loop: a fit blocks "
                "until it ends, and would block the loop the client needs; call it in a thread, e.g. "
                "`await asyncio.to_thread(daskdca.fit, X, y, client=client)`, or pass a synchronous Client.")
        yield client
        return
    try:
        found = default_client()
    except ValueError:  # no default client
        found = None
    # one yield: an error raised by the fit inside the block goes to the caller as it is
    yield found if found is not None else embedded_client()


@contextlib.contextmanager
def local_client(n_workers, *, scratch=None):
    """A client on a LocalCluster of ``n_workers`` processes (1 thread each) on 127.0.0.1, no dashboard.

    A context manager: the cluster and the client are closed when the
    ``with`` block ends.

    Parameters
    ----------
    n_workers : int
        Worker processes to start.
    scratch : str, os.PathLike or None, default=None
        A folder for the scheduler's and the workers' scratch space (Dask's
        ``temporary-directory`` and the workers' ``local_directory``), so
        nothing is left in the system's temporary folder; None keeps Dask's
        defaults.

    Yields
    ------
    distributed.Client
        A client connected to the new cluster.
    """
    from distributed import Client, LocalCluster

    config = {} if scratch is None else {"temporary-directory": os.fspath(scratch)}
    with warnings.catch_warnings(), dask.config.set(config), _worker_environ():
        # without a dashboard the scheduler still serves its health routes on 127.0.0.1, at 8787
        # or, when that is taken, any free port; that move is no news here
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, local_directory=scratch, silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        yield client


def _workers_now(client):
    """The scheduler's workers now (address -> their info), in one call to it; with none in view, waits up to 10 s
    for one (:func:`worker_resources`)."""
    workers = client.scheduler_info().get("workers", {})
    if workers:
        return workers
    try:
        client.wait_for_workers(1, timeout=10)
    except Exception as exc:
        raise ValueError(
            f"the Dask client {client} has no workers; start some (e.g. LocalCluster(n_workers=2) "
            "or cluster.scale(...)) before fitting."
        ) from exc
    return client.scheduler_info().get("workers", {})


def _check_workers(client):
    return len(_workers_now(client))


def _resources(workers):
    """``(nthreads, memory_limits)`` of ``workers`` (address -> info, :func:`_workers_now`), sorted by address."""
    addresses = sorted(workers)
    return (tuple(int(workers[a].get("nthreads") or 1) for a in addresses),
            tuple(int(workers[a].get("memory_limit") or 0) for a in addresses))


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


def worker_resources(client):
    """``(nthreads, memory_limits)`` of the workers now, sorted by address.

    A cluster started just before (``Client(n_workers=2)``, then at once a
    fit) may not have registered a worker yet, and the client refreshes its
    view of the scheduler only from time to time: with no worker in view,
    this waits up to 10 s for one (``Client.wait_for_workers``, which also
    refreshes the view), as every cluster fit does before its first round.

    Parameters
    ----------
    client : distributed.Client
        The client whose scheduler is asked.

    Returns
    -------
    nthreads : tuple of int
        Each worker's threads (1 where the scheduler reports none).
    memory_limits : tuple of int
        Each worker's memory limit in bytes (0: none).

    Raises
    ------
    ValueError
        No worker joined within the 10 s.
    """
    return _resources(_workers_now(client))
