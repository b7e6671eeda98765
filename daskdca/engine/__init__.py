"""The Dask executor: any method's rounds over store partitions on a cluster.

This is the only package that imports Dask, and it names no method: it runs
the phases a plan returns (:mod:`daskdca.methods.base`) under the round loop
of :mod:`daskdca.driver`.  Each round submits one graph:

    load (once)   round: local steps of group g's partitions, in order, on its worker
                     |                     |
              L_g' (stays there)    the reduction nodes group g holds whole --> nodes spanning groups
                                                              |
                                         combine(G, total) --> G', RoundReport (only this reaches the client)

Partitions are grouped in contiguous runs, one per worker thread
(:class:`_Placement`), and a round runs one local task per group, not per
partition: it calls the method's local step on each of its partitions and
sums their contributions as far as the fixed-order reduction tree over all
partitions allows (:func:`~daskdca.methods.base.tree_reduce_within`), so the
total has the same bits as one task per partition.  64 partitions on 2
one-thread workers make about 8 tasks a round instead of about 150, which is what
keeps the scheduler's per-task bookkeeping (and its memory) from growing
with the partitions.  Local states stay on the workers as the chained output
of each group's previous round (docs/references.md, note N9: futures, not
actors) and come back once, at the end.  A group's output is the pair
``(states', nodes)`` and a combine's the pair ``(G', report)``.  The next
round's local task reads the state half where it lies; one small task per
group, on its worker, passes the nodes on, so only they travel to the
reduction.  Partitions are loaded by tasks that read the store on the worker
(a lost partition is re-read), and every random stream derives from
``(random_state, round, partition)``, so a replayed task gives the same bits.
The certificate and the checkpoint pick single partitions' states out of
the groups.  Every ``checkpoint_every`` rounds the chains restart from a
copy of the states (bounded lineage, docs/references.md, note N9): with
``checkpoint=PATH`` a zarr checkpoint there (``resume=True`` continues from
the last complete one); without it, the states pass through this process and
go back as tasks that hold them, so the round state never depends on a path
that only the driver can see, and a lost task is recomputed from that copy.

Every wait on the cluster goes through :meth:`DaskExecutor.gather`, which
watches it: a fit whose workers are all gone for ``daskdca.no-workers-timeout``
(Dask config, default 10 minutes: a nanny restart or a replaced jobqueue job
comes back well within it) raises :class:`NoWorkersError`, and one whose
client lost the scheduler raises :class:`SchedulerLostError` at once (Dask
cancels every future then); both name what was saved and how to go on.  It
also sends this fit's tasks that Dask leaves in ``no-worker`` behind a soft
pin to a gone worker back to scheduling (:meth:`DaskExecutor._unstick`), so
the only worker's nanny restart, at a new address, no longer hangs a fit.

Task keys start with the kind of task (``daskdca-load``, ``daskdca-round``,
``daskdca-reduce``, ``daskdca-combine``, ``daskdca-certify``,
``daskdca-checkpoint``, ``daskdca-setup``) so the dashboard groups them.

The package's modules: :mod:`~daskdca.engine.errors` (the cluster errors and
the no-workers timeout), :mod:`~daskdca.engine.clients` (clients, workers,
placement slots), :mod:`~daskdca.engine.watch` (the no-worker watchdog),
:mod:`~daskdca.engine.tasks` (the tasks of a round, :class:`_Placement`),
:mod:`~daskdca.engine.checkpoint` and :mod:`~daskdca.engine.executor`
(:class:`DaskExecutor`); this one holds :func:`fit_on_cluster` and
re-exports the names the rest of daskdca uses.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from functools import partial

import dask
import numpy as np

from daskdca.driver import run_rounds, setup_plan

# What the rest of daskdca, the tests and the benchmarks import from here is re-exported below.  A test that
# patches a function must patch the module that looks it up (e.g. daskdca.engine.executor._save_state,
# daskdca.engine.checkpoint._probe_path): patching the name here changes nothing.
from daskdca.engine.checkpoint import (
    CHECKPOINT_FORMAT,
    DEFAULT_CHECKPOINT_EVERY,
    _check_workers_share,
    _checkpoint_meta,
    _clear_checkpoint,
    _prepare_checkpoint,
    _probe_path,
    _save_state,
)
from daskdca.engine.clients import (
    _check_workers,
    _thread_slots,
    _WarmUp,
    close_embedded,
    cluster_client,
    embedded_client,
    local_client,
    worker_resources,
)
from daskdca.engine.errors import (
    DEFAULT_NO_WORKERS_TIMEOUT,
    NO_WORKERS_TIMEOUT_KEY,
    ClusterLostError,
    NoWorkersError,
    SchedulerLostError,
    WorkersLostError,
    configured_no_workers_timeout,
)
from daskdca.engine.executor import DaskExecutor
from daskdca.engine.one_worker import fit_on_one_worker
from daskdca.engine.resident import ROUNDS_KEY, ResidentExecutor, configured_rounds
from daskdca.engine.tasks import _delayed, _held, _pinned, _Placement
from daskdca.methods import with_window_at_most
from daskdca.methods.base import DataInfo
from daskdca.partitions import OneVsRestPartition, StorePartition, store_partition_ranges
from daskdca.routes import Workers, data_bytes, held_in_memory, window_for_memory

logger = logging.getLogger("daskdca")

__all__ = ["ROUNDS_KEY", "ClusterLostError", "DaskExecutor", "NoWorkersError", "ResidentExecutor", "SchedulerLostError",
           "WorkersLostError", "bounded_window", "cluster_client", "configured_no_workers_timeout",
           "default_partitions", "fit_on_cluster", "fit_on_one_worker", "fit_partitions_on_cluster", "local_client",
           "recorded_partitions", "recorded_threads", "worker_resources"]


def _store_fingerprint(store):
    """What identifies the data of a store: shape, block boundaries and stored checksums."""
    attrs = getattr(store, "attrs", None) or store.group.attrs.asdict().get("daskdca", {})
    checksums = attrs.get("block_checksums")
    return {"n": store.n, "d": store.d, "blocks": [int(x) for x in store.block_row_offsets],
            "checksums": checksums}


def recorded_threads(checkpoint):
    """The threads of each partition's sweep (``threads=``) that a checkpoint's fit ran with, or None.

    A resumed ``solver="auto"`` fit takes this number instead of its
    workers' threads (:func:`daskdca.routes.choose_route`'s
    ``rounds_threads``), so that it runs the method its checkpoint recorded
    (the signature holds the method's dataclass ``repr``) whatever the
    workers now.

    Parameters
    ----------
    checkpoint : str or os.PathLike
        The checkpoint a resumed fit continues.

    Returns
    -------
    int or None
        The recorded ``threads``, or None where the checkpoint holds no
        complete fit or its method has no such setting.
    """
    return _recorded_setting(_recorded_solver(checkpoint), "threads")


def recorded_partitions(checkpoint):
    """The number of partitions a checkpoint's fit ran on, or None.

    A resumed fit takes this number where the caller names none (in-memory
    arrays and stores alike, :func:`default_partitions`), so that its bits
    are those of the undisturbed run whatever the workers now.

    Parameters
    ----------
    checkpoint : str or os.PathLike
        The checkpoint a resumed fit continues.

    Returns
    -------
    int or None
        The recorded ``n_partitions`` (at least 1), or None where the
        checkpoint holds no complete fit.
    """
    meta = _checkpoint_meta(os.fspath(checkpoint))
    recorded = (meta or {}).get("signature", {}).get("n_partitions")
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 1 else None


def _recorded_solver(checkpoint):
    """The method's ``repr`` in a checkpoint's signature, or None where it holds no complete fit."""
    meta = _checkpoint_meta(os.fspath(checkpoint))
    solver = (meta or {}).get("signature", {}).get("solver")
    return solver if isinstance(solver, str) else None


def _recorded_setting(solver, name):
    """The integer setting ``name=N`` in a recorded method ``repr`` (:func:`_recorded_solver`), or None."""
    found = re.search(rf"\b{name}=(\d+)", solver) if solver is not None else None
    return int(found.group(1)) if found else None


def default_partitions(store, n_workers, resumed_checkpoint=None):
    """The partitions of a cluster fit when the caller names none: one per worker, at most one per store block.

    The number is fixed at the start of the fit and recorded in the
    checkpoint's signature, so a resumed fit takes the recorded number
    whatever the workers now, and its bits are those of the undisturbed
    run.  More partitions than workers buy nothing on a cluster: a round's
    time is that of its largest group, and CoCoA+'s rounds grow with the
    partitions (``sigma' = K``, Ma et al. 2015, arXiv:1502.03508, §3).

    Parameters
    ----------
    store : CSRStore
        The store to fit (its ``n_blocks`` bounds the number).
    n_workers : int
        The cluster's workers now.
    resumed_checkpoint : str, os.PathLike or None, default=None
        The checkpoint a resumed fit continues; its recorded number wins
        when it is between 1 and the store's blocks.  None for a fresh fit.

    Returns
    -------
    int
        The number of partitions, ``max(1, min(n_workers, store.n_blocks))``
        unless a checkpoint recorded one.
    """
    recorded = None if resumed_checkpoint is None else recorded_partitions(resumed_checkpoint)
    if recorded is not None and recorded <= store.n_blocks:
        return recorded
    return max(1, min(int(n_workers), store.n_blocks))


def _largest_block_bytes(store):
    """The in-memory size (:func:`~daskdca.routes.data_bytes`) of the store's largest block."""
    value, index = store.group["data"].dtype.itemsize, store.group["indices"].dtype.itemsize
    rows, nnz = np.diff(store.block_row_offsets), np.diff(store.block_nnz_offsets)
    return max((data_bytes(r, z, value, index) for r, z in zip(rows, nnz)), default=0)


def bounded_window(method, store, client, resumed_checkpoint=None):
    """``method`` with its out-of-core sweep holding no more blocks than the smallest worker's memory allows.

    A sweep's sliding window of blocks (``CoCoAPlus(window_blocks=None)``:
    :data:`~daskdca.methods.cocoa.WINDOW_BLOCKS`) is bounded by
    :func:`~daskdca.routes.window_for_memory` from the store's largest block
    and the workers' memory limits, fixed at the start of the fit: the
    bounded settings are the fit's (its checkpoint records them), and a
    resumed fit takes the window its checkpoint recorded, so the bits do not
    depend on the workers it resumes on.  A ``window_blocks`` the user gave
    is kept.

    Parameters
    ----------
    method : method object
        The fit's settings.
    store : CSRStore
        The store, read out of core.
    client : distributed.Client
        The cluster.
    resumed_checkpoint : str, os.PathLike or None, default=None
        The checkpoint a resumed fit continues, or None.

    Returns
    -------
    method object
        ``method`` itself, or a copy with ``window_blocks`` set
        (:func:`~daskdca.methods.with_window_at_most`).
    """
    solver = None if resumed_checkpoint is None else _recorded_solver(resumed_checkpoint)
    if solver is not None:
        recorded = _recorded_setting(solver, "window_blocks")
        return method if recorded is None else with_window_at_most(method, recorded)
    block_bytes = _largest_block_bytes(store)
    bounded = with_window_at_most(method, window_for_memory(block_bytes, Workers(*worker_resources(client))))
    if bounded is not method:
        logger.info("daskdca: out of core, each sweep holds fewer blocks (%s) within the workers' memory limits "
                    "(the largest block takes %.0f MiB in memory)", bounded, block_bytes / 2**20)
    return bounded


def fit_on_cluster(store, *, client, method, loss, lam, positive_label, tol, max_rounds, random_state, n_partitions,
                   in_memory, checkpoint, checkpoint_every, resume, verbose, callback, dual_init=None,
                   checkpoint_overwrite=False, max_epochs=None, store_is_local=False, problems=None, row_order=None):
    """Run ``method`` over partitions of the store on the client's cluster.

    The parameters not described here are those of :func:`daskdca.fit`,
    already checked (this function is what a fit with rounds on a cluster
    calls).

    Parameters
    ----------
    store : CSRStore
        A complete store.
    client : distributed.Client
        The cluster.
    method : method object
        The method's settings (e.g. :class:`~daskdca.CoCoAPlus`); for a
        one-vs-rest fit a one-vs-rest method.
    loss : Loss
        The loss the driver evaluates.
    lam : float
        As :func:`daskdca.fit`.
    positive_label : object or None
        The label that maps to +1, as the store holds it; None for the
        regression losses and for more than two classes.
    tol : float
        As :func:`daskdca.fit`.
    max_rounds : int or None
        As :func:`daskdca.fit`.
    random_state : int
        The seed of every random stream.
    n_partitions : int or None
        The number of contiguous runs of blocks (None:
        :func:`default_partitions`).
    in_memory : bool or None
        Whether partitions stay in worker memory (None: when they take
        at most a quarter of each worker's memory limit: :func:`~daskdca.routes.held_in_memory`).
    checkpoint : str, os.PathLike or None
        As :func:`daskdca.fit`.
    checkpoint_every : int
        Rounds between checkpoints (or between copies of the states
        through this process, without a checkpoint).
    resume : bool
        As :func:`daskdca.fit`.
    verbose : int or bool
        As :func:`daskdca.fit`.
    callback : callable or None
        As :func:`daskdca.fit`.
    dual_init : ndarray or None, default=None
        As :func:`daskdca.fit`, checked, in the caller's row order (see
        ``row_order``).
    checkpoint_overwrite : bool, default=False
        ``overwrite`` of :func:`daskdca.fit`.
    max_epochs : float or None, default=None
        As :func:`daskdca.fit`.
    store_is_local : bool, default=False
        The store is a staging copy that only this process can see
        (in-memory arrays); the partitions are read here and travel to the
        workers inside the tasks that hold them (which the scheduler can
        rerun), so no worker reads that path.
    problems : OneVsRest or None, default=None
        For a one-vs-rest fit, the :class:`~daskdca.partitions.OneVsRest`
        of the store's label values.
    row_order : ndarray or None, default=None
        ``row_order[j]`` is the caller's row of the store's ``j``-th row (a
        staged store of in-memory arrays dealt in a seeded random order);
        None: the store's order is the caller's.

    Returns
    -------
    FitResult
        The :class:`daskdca.driver.FitResult`: the store's feature order,
        the caller's row order (a callback's ``FitState.alpha`` too).

    Raises
    ------
    NoWorkersError
        When the cluster is left without workers for
        ``daskdca.no-workers-timeout`` (Dask config, default 10 minutes).
    SchedulerLostError
        When the client lost its scheduler.  Both are
        :class:`ClusterLostError` (a RuntimeError); each names the last
        complete checkpoint (``resume=True`` continues from it) and the fix.
    """
    wait_for_workers = configured_no_workers_timeout()  # a bad setting fails here, before any work
    n_workers = _check_workers(client)
    if n_partitions is None:
        n_partitions = default_partitions(store, n_workers, checkpoint if resume else None)
    ranges = store_partition_ranges(store.n_blocks, n_partitions)
    K = len(ranges)
    run_id = uuid.uuid4().hex[:8]
    client.register_plugin(_WarmUp(), name=_WarmUp.name)
    if store_is_local:
        if in_memory is False:
            raise ValueError("in_memory=False needs the data in a store every worker can read; in-memory "
                             "arrays go to the workers' memory. Write them with daskdca.write_store to a "
                             "shared path and fit that store out of core.")
        in_memory = True
    if in_memory is None:
        raw = data_bytes(store.n, store.nnz, store.group["data"].dtype.itemsize,
                         store.group["indices"].dtype.itemsize)
        in_memory = held_in_memory(raw, Workers(*worker_resources(client)))
    if not in_memory:
        method = bounded_window(method, store, client, checkpoint if resume else None)
    offsets = store.block_row_offsets
    sizes = tuple(int(offsets[b] - offsets[a]) for a, b in ranges)
    column_nnz = store.column_nnz  # checksummed
    info = DataInfo(n=store.n, d=store.d, partition_sizes=sizes, loss=loss, lam=lam,
                    max_column_nnz=int(column_nnz.max(initial=0)), nnz=int(store.nnz))
    placement = _Placement(K, len(_thread_slots(client)))
    sources = [StorePartition(store, a, b, positive_label) for a, b in ranges]
    if problems is not None:
        sources = [OneVsRestPartition(src, problems) for src in sources]
    rounds = configured_rounds()
    if rounds == "resident":
        parts = [src.load() for src in sources] if store_is_local else sources
        mode = "held" if store_is_local else "load" if in_memory else "stream"
    elif store_is_local:
        homes = placement.homes(client)
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "16 GiB"}):
            parts = [client.submit(partial(_held, src.load()), key=f"daskdca-load-{run_id}-{k}", pure=False,
                                   **_pinned(homes[k])) for k, src in enumerate(sources)]
    elif in_memory:
        homes = placement.homes(client)
        parts = client.compute([_delayed(src.load, name=f"daskdca-load-{run_id}-{k}", worker=homes[k])
                                for k, src in enumerate(sources)], optimize_graph=False)
    else:
        parts = sources
    logger.info("daskdca: %s on %d partitions, %d workers, %s", method.name, K, n_workers,
                "in memory" if in_memory else "out of core (blocks re-read every round)")
    ckpt = None if checkpoint is None else os.fspath(checkpoint)
    replaced = None
    if ckpt is not None:
        replaced = _prepare_checkpoint(ckpt, overwrite=checkpoint_overwrite, resume=resume)
        if "://" not in ckpt and not resume:
            try:
                os.makedirs(ckpt, exist_ok=True)
            except OSError as exc:
                raise ValueError(f"checkpoint={ckpt!r}: its folder cannot be made ({type(exc).__name__}: {exc}); "
                                 "pass a path in a folder you can write.") from None
    signature = {"data": _store_fingerprint(store), "loss": repr(loss), "lam": lam,
                 "solver": repr(method) + ("" if problems is None else f" one-vs-rest {problems!r}"),
                 "random_state": random_state, "n_partitions": K}
    if ckpt is not None:
        _check_workers_share(client, ckpt)
    common = dict(run_id=run_id, checkpoint=ckpt, checkpoint_every=checkpoint_every, signature=signature,
                  dual_init=dual_init, no_workers_timeout=wait_for_workers, row_order=row_order)
    if rounds == "resident":
        executor = ResidentExecutor(client, parts, info, random_state, mode=mode, **common)
    else:
        executor = DaskExecutor(client, parts, info, random_state, placement=placement, **common)
    return _run(executor, method, tol=tol, max_rounds=max_rounds, max_epochs=max_epochs, callback=callback,
                verbose=verbose, resume=resume, checkpoint=ckpt, replaced=replaced)


def fit_partitions_on_cluster(parts, info, *, client, method, tol, max_rounds, max_epochs, random_state, verbose,
                              callback, dual_init=None, checkpoint_every=None, row_order=None):
    """Run ``method`` over in-memory partitions that this process holds, without a checkpoint.

    This is what ``daskdca.fit`` with a client runs for in-memory arrays.
    Each partition travels once to a worker and stays there for the fit (in the resident actor that holds it,
    or in a task the scheduler can rerun), as :func:`fit_on_cluster` does with a store only this process can
    read, without writing and reading that store first.  The bits are those of the same partitions in
    process.

    Parameters
    ----------
    parts : list of MemoryPartition
        The partitions: :class:`~daskdca.partitions.MemoryPartition` (or
        one-vs-rest views of them).
    info : DataInfo
        Their :class:`~daskdca.methods.DataInfo`.
    client : distributed.Client
        The cluster.
    method : method object
        The method's settings; for a one-vs-rest fit a one-vs-rest method.
    tol : float
        As :func:`daskdca.fit`.
    max_rounds : int or None
        As :func:`daskdca.fit`.
    max_epochs : float or None
        As :func:`daskdca.fit`.
    random_state : int
        The seed of every random stream.
    verbose : int or bool
        As :func:`daskdca.fit`.
    callback : callable or None
        As :func:`daskdca.fit`.
    dual_init : ndarray or None, default=None
        As :func:`daskdca.fit`, checked, in the caller's row order (see
        ``row_order``).
    checkpoint_every : int or None, default=None
        Rounds between copies of the states through this process (10 when
        None).
    row_order : ndarray or None, default=None
        ``row_order[j]`` is the caller's row of the ``j``-th row in
        partition order (:func:`daskdca.partitions.random_row_order`);
        None: the partitions hold the caller's rows in order.

    Returns
    -------
    FitResult
        The :class:`daskdca.driver.FitResult`, in the caller's row order (a
        callback's ``FitState.alpha`` too).

    See Also
    --------
    fit_on_cluster : The same for a store.
    """
    wait_for_workers = configured_no_workers_timeout()
    _check_workers(client)
    run_id = uuid.uuid4().hex[:8]
    client.register_plugin(_WarmUp(), name=_WarmUp.name)
    K = len(parts)
    placement = _Placement(K, len(_thread_slots(client)))
    signature = {"data": {"n": info.n, "d": info.d, "partition_sizes": [int(s) for s in info.partition_sizes]},
                 "loss": repr(info.loss), "lam": info.lam, "solver": repr(method), "random_state": random_state,
                 "n_partitions": K}
    common = dict(run_id=run_id, checkpoint=None,
                  checkpoint_every=DEFAULT_CHECKPOINT_EVERY if checkpoint_every is None else checkpoint_every,
                  signature=signature, dual_init=dual_init, no_workers_timeout=wait_for_workers, row_order=row_order)
    logger.info("daskdca: %s on %d partitions held in memory", method.name, K)
    if configured_rounds() == "resident":
        executor = ResidentExecutor(client, list(parts), info, random_state, mode="held", **common)
    else:
        homes = placement.homes(client)
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "16 GiB"}):
            held = [client.submit(partial(_held, part), key=f"daskdca-load-{run_id}-{k}", pure=False,
                                  **_pinned(homes[k])) for k, part in enumerate(parts)]
        executor = DaskExecutor(client, held, info, random_state, placement=placement, **common)
    return _run(executor, method, tol=tol, max_rounds=max_rounds, max_epochs=max_epochs, callback=callback,
                verbose=verbose, resume=False, checkpoint=None, replaced=None)


def _run(executor, method, *, tol, max_rounds, max_epochs, callback, verbose, resume, checkpoint, replaced):
    """The rounds of ``method`` on ``executor``, from a checkpoint where ``resume``; a resident executor's actors
    are released whatever happens."""
    try:
        plan = setup_plan(executor, method)
        start = executor.resume(plan) if resume else None
        if start is None and checkpoint is not None:
            # a fresh fit removes only an old checkpoint's own entries (asked for by overwrite=True, checked
            # above); the group is created here so that writer tasks only ever create their own arrays
            _clear_checkpoint(checkpoint, replaced)
        return run_rounds(executor, plan, tol=tol, max_rounds=max_rounds, max_epochs=max_epochs, callback=callback,
                          verbose=verbose, start=start)
    finally:
        if isinstance(executor, ResidentExecutor):
            executor.close()
