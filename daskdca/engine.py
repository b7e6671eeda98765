"""The Dask engine: CoCoA+ and distributed mini-batch SDCA rounds over store blocks.

Each round submits one graph: one task per partition that reads the round's
``w`` and its own dual block, runs the local solver (numba, ``nogil``) and
returns ``(alpha_k', delta_w_k, scalars)``; a fixed-order tree of additions
reduces the ``delta_w_k`` on the cluster and a last task forms the next
``w``.  Only the scalars of the duality gap travel to the client each round;
``alpha`` stays on the workers as the chained output of each partition's
previous round (spec ``dask-zarr-numba.md`` §2: futures, not actors), and
``alpha`` and ``w`` come back once, at the end.

Partitions are loaded by tasks that read the store on the worker, so a lost
partition is recomputed by re-reading it, and every random stream derives
from ``(random_state, round, partition)``, so a replayed task gives the same
bits.  Every ``checkpoint_every`` rounds ``alpha`` and ``w`` are written to a
zarr checkpoint and the chains restart from it (bounded lineage, spec
Appendix A); ``resume=True`` continues from the last complete checkpoint.

This module is the only one that knows Dask.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import zarr
from distributed.diagnostics.plugin import WorkerPlugin

from daskdca.kernels import eso
from daskdca.kernels.sampling import minibatch_indices, permutation_order
from daskdca.kernels.sdca import minibatch_sdca, objective_sums
from daskdca.rounds import HistoryRecord
from daskdca.solvers import CoCoAPlus, cocoa_local_update
from daskdca.store import CSRStore

logger = logging.getLogger("daskdca")

__all__ = ["ClusterResult", "fit_on_cluster"]

# Chains restart from a checkpoint this often unless told otherwise: between
# restarts the scheduler keeps every round's task states (spec §2.4).
DEFAULT_CHECKPOINT_EVERY = 10
# Fan-in of the delta_w reduction tree (spec §3.1: 8 was fastest).
SPLIT_EVERY = 8
# A partition sends delta_w as (index, value) pairs below this density: at
# 12 bytes per pair against 8 per dense entry, and with the merge cost,
# sparse pays below about 20-30% (spec §3.3).
SPARSE_DENSITY = 0.25
CHECKPOINT_FORMAT = 1


class Block(NamedTuple):
    """Rows in worker memory: CSR arrays, signed labels and row norms.

    ``block_starts`` are the row offsets, within these rows, of the store
    blocks they came from (``[0, n_rows]`` for a single block).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    y: np.ndarray
    sqnorm: np.ndarray
    n_features: int
    block_starts: np.ndarray

    @property
    def n_rows(self):
        return self.indptr.shape[0] - 1

    def csr(self):
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=(self.n_rows, self.n_features))


class OutOfCore(NamedTuple):
    """A partition left in the store: blocks ``[first, stop)`` are read when needed."""

    store: CSRStore
    first: int
    stop: int

    def block_starts(self):
        offsets = self.store.block_row_offsets[self.first:self.stop + 1]
        return offsets - offsets[0]


def _signed(y, positive_label):
    if positive_label is None:
        return np.asarray(y, dtype=np.float64)
    return np.where(y == positive_label, 1.0, -1.0)


def load_block(store: CSRStore, k: int, positive_label) -> Block:
    """Read store block ``k`` (checksum verified once per worker process) and sign its labels."""
    X, y = store.read_block(k, verify="once")
    start, stop = store.block_row_offsets[k], store.block_row_offsets[k + 1]
    sqnorm = store.group["row_sqnorm"][start:stop]
    return Block(X.indptr.astype(np.int64), X.indices, X.data, _signed(y, positive_label), sqnorm, store.d,
                 np.array([0, stop - start], dtype=np.int64))


def load_partition(store: CSRStore, first: int, stop: int, positive_label) -> Block:
    """Task: read blocks ``[first, stop)`` into one Block kept in worker memory."""
    blocks = [load_block(store, k, positive_label) for k in range(first, stop)]
    if len(blocks) == 1:
        return blocks[0]
    X = sp.vstack([b.csr() for b in blocks], format="csr")
    starts = np.concatenate(([0], np.cumsum([b.n_rows for b in blocks])))
    return Block(X.indptr.astype(np.int64), X.indices, X.data, np.concatenate([b.y for b in blocks]),
                 np.concatenate([b.sqnorm for b in blocks]), store.d, starts)


def partition_ranges(n_blocks, n_partitions):
    """Contiguous runs of blocks, as even as possible: ``[(first, stop), ...]``."""
    bounds = np.linspace(0, n_blocks, n_partitions + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _block_stream(partition, j):
    """Stream id of block ``j`` of a partition; never equal to a partition id (bit 62 set)."""
    return (1 << 62) | (partition << 31) | j


@dataclass(frozen=True)
class _Params:
    """What every partition task needs besides its data, its alpha and w."""

    solver: object
    loss: object
    lam_n: float
    random_state: int
    positive_label: object
    sigma_prime: float = 1.0
    tau: int = 0
    beta: float = 1.0


def _pieces(source, alpha, order, params):
    """Yield ``(block, alpha_part, row_start, row_end, local_start)`` per store block.

    In memory the pieces are row ranges of the partition's arrays; out of
    core each block is read when its turn comes and dropped after.
    """
    starts = source.block_starts if isinstance(source, Block) else source.block_starts()
    for j in order:
        lo, hi = int(starts[j]), int(starts[j + 1])
        if isinstance(source, Block):
            yield source, alpha, lo, hi, lo
        else:
            block = load_block(source.store, source.first + int(j), params.positive_label)
            yield block, alpha[lo:hi], 0, hi - lo, lo


def _n_blocks(source):
    return (len(source.block_starts) if isinstance(source, Block) else source.stop - source.first + 1) - 1


def _rows(source):
    starts = source.block_starts if isinstance(source, Block) else source.block_starts()
    return int(starts[-1])


def partition_round(source, alpha, w, round_index, k, params: _Params):
    """Task: one round on partition ``k``.

    Returns ``(alpha_k', delta_w_k, (loss_sum, conj_sum, n_steps))``.  The
    sums are taken at the round's start (``w``, ``alpha_k``), which gives the
    previous round's duality gap without another pass over the data.
    CoCoA+ on a partition held in memory draws one permutation of all its
    rows from the stream ``(random_state, round, k)``, as the in-process
    solver does, so a cluster fit repeats an in-process fit with the same
    partitions.  Out of core it visits the partition's blocks in a seeded
    random order and each block's rows from its own stream, carrying
    ``u = w + sigma' delta_w`` across blocks; that converges more slowly when
    a partition has several blocks (see the comment below).  Mini-batch SDCA
    draws the same rows either way.
    """
    loss = params.loss
    alpha = alpha.copy()
    loss_sum = conj_sum = 0.0
    n_steps = 0
    delta_w = np.zeros_like(w)
    nb = _n_blocks(source)
    if isinstance(params.solver, CoCoAPlus) and isinstance(source, Block):
        # Held in memory: one permutation over all the partition's rows, stream
        # (random_state, round, k), exactly as the in-process CoCoAPlus does.
        # Sweeping block after block instead converges far slower: a9a, logistic,
        # lam 1e-3, one partition of 2 blocks: relative gap 5e-4 after 6 epochs
        # against 2e-8 with one permutation (benchmarks/RESULTS.md, engine section).
        s = params.solver
        n_rows = _rows(source)
        loss_sum, conj_sum = objective_sums(source.indptr, source.indices, source.data, source.y, alpha, w, 0,
                                            n_rows, int(loss.kind), loss.param)
        n_steps = cocoa_local_update(
            source.indptr, source.indices, source.data, source.y, source.sqnorm, alpha, w.copy(), delta_w, 0,
            n_rows, loss=loss, lam_n=params.lam_n, sigma_prime=params.sigma_prime, sampling=s.sampling,
            shrinking=s.shrinking, local_iters=s.local_iters, random_state=params.random_state,
            round_index=round_index, partition=k)
    elif isinstance(params.solver, CoCoAPlus):
        # Out of core a block is read when its turn comes, so the round sweeps
        # whole blocks in a seeded random order, each with its own permutation.
        s = params.solver
        u = w.copy()
        block_order = permutation_order(params.random_state, round_index, k, nb, nb, 0)
        for j, (blk, a, lo, hi, _) in zip(block_order, _pieces(source, alpha, block_order, params)):
            ls, cs = objective_sums(blk.indptr, blk.indices, blk.data, blk.y, a, w, lo, hi,
                                    int(loss.kind), loss.param)
            loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
            n_steps += cocoa_local_update(
                blk.indptr, blk.indices, blk.data, blk.y, blk.sqnorm, a, u, delta_w, lo, hi, loss=loss,
                lam_n=params.lam_n, sigma_prime=params.sigma_prime, sampling=s.sampling, shrinking=s.shrinking,
                local_iters=s.local_iters, random_state=params.random_state, round_index=round_index,
                # a one-block partition uses the partition's stream, as in memory
                partition=k if nb == 1 else _block_stream(k, int(j)))
    else:
        # (C, b)-distributed sampling: tau rows of this partition from its own
        # stream (seed 000 §3); every margin reads the round's w (Algorithm 1),
        # so splitting the batch over blocks changes nothing.
        batch = minibatch_indices(params.random_state, round_index, k, _rows(source), params.tau, 0)
        for blk, a, lo, hi, local in _pieces(source, alpha, range(nb), params):
            ls, cs = objective_sums(blk.indptr, blk.indices, blk.data, blk.y, a, w, lo, hi,
                                    int(loss.kind), loss.param)
            loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
            rows = batch[(batch >= local) & (batch < local + hi - lo)] - local + lo
            if rows.size:
                q = params.beta * blk.sqnorm / params.lam_n
                minibatch_sdca(blk.indptr, blk.indices, blk.data, blk.y, q, a, w, delta_w, rows[None, :],
                               int(loss.kind), loss.param, params.lam_n)
        n_steps = params.tau
    return alpha, _compress(delta_w), (loss_sum, conj_sum, float(n_steps))


class SparseDelta(NamedTuple):
    """A partition's ``delta_w`` as (index, value) pairs, when few coordinates moved."""

    indices: np.ndarray
    values: np.ndarray
    size: int


def _compress(delta_w):
    """Sparse pairs below ``SPARSE_DENSITY`` non-zeros, else the dense vector (spec §3.3)."""
    nz = np.flatnonzero(delta_w)
    if nz.size > SPARSE_DENSITY * delta_w.shape[0]:
        return delta_w
    index_dtype = np.int32 if delta_w.shape[0] <= np.iinfo(np.int32).max else np.int64
    return SparseDelta(nz.astype(index_dtype), delta_w[nz], delta_w.shape[0])


def _add(*items):
    """Sum dense vectors and SparseDeltas in the given order, into a dense buffer.

    A sparse item is scatter-added (its indices are unique); adding the
    zeros it leaves out would change no bit, so the result equals the dense sum.
    """
    out = None
    for item in items:
        if isinstance(item, SparseDelta):
            if out is None:
                out = np.zeros(item.size)
            out[item.indices] += item.values
        elif out is None:
            out = np.array(item, dtype=np.float64, copy=True)
        else:
            out += item
    return out


def _sum_tuples(*parts):
    return tuple(float(sum(p[i] for p in parts)) for i in range(len(parts[0])))


def _sqnorm(w):
    return float(w @ w)


def _xt_alpha(source, alpha, k, params: _Params):
    """Task: ``X_k^T alpha_k / lam_n``, to rebuild w from alpha alone."""
    out = None
    for blk, a, lo, hi, _ in _pieces(source, alpha, range(_n_blocks(source)), params):
        part = np.asarray(blk.csr()[lo:hi].T @ a[lo:hi]).ravel()
        out = part if out is None else out + part
    return out / params.lam_n


def _objective_part(source, alpha, w, k, params: _Params):
    total = (0.0, 0.0)
    for blk, a, lo, hi, _ in _pieces(source, alpha, range(_n_blocks(source)), params):
        ls, cs = objective_sums(blk.indptr, blk.indices, blk.data, blk.y, a, w, lo, hi,
                                int(params.loss.kind), params.loss.param)
        total = (total[0] + ls, total[1] + cs)
    return total


def _power_part(source, v, k, params: _Params):
    """Task: ``X~_k^T X~_k v`` with unit-norm rows (power iteration for sigma^2)."""
    out = np.zeros_like(v)
    for blk, _, lo, hi, _ in _pieces(source, np.zeros(_rows(source)), range(_n_blocks(source)), params):
        norms = np.sqrt(blk.sqnorm[lo:hi])
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        Xn = sp.diags(scale) @ blk.csr()[lo:hi]
        out += np.asarray(Xn.T @ (Xn @ v)).ravel()
    return out


def _save_array(values, url, name):
    g = zarr.open_group(url, mode="a")
    arr = g.create_array(name, shape=values.shape, dtype=np.float64, overwrite=True,
                         chunks=(max(1, min(values.shape[0], 2**20)),))
    arr[:] = values
    return True


def _load_array(url, name):
    return zarr.open_group(url, mode="r")[name][:]


class ClusterResult(NamedTuple):
    """What :func:`fit_on_cluster` returns (certified ``primal``/``dual``/``gap``)."""

    w: np.ndarray
    alpha: np.ndarray
    history: list
    converged: bool
    primal: float
    dual: float
    gap: float
    n_rounds: int
    n_epochs: float


class _WarmUp(WorkerPlugin):
    """Worker plugin: compile (or load from cache) the numba kernels once per worker.

    Registered once per fit (idempotent by name); workers that join later
    (adaptive scaling, jobqueue) run it too.
    """

    name = "daskdca-warm-up"

    def setup(self, worker):
        from daskdca.kernels.sdca import local_sdca, movable_rows

        indptr = np.array([0, 1], dtype=np.int64)
        indices = np.array([0], dtype=np.int32)
        data = np.array([1.0])
        one = np.ones(1)
        for kind in range(5):
            local_sdca(indptr, indices, data, one, one, np.zeros(1), np.zeros(1), np.zeros(1),
                       np.zeros(1, dtype=np.int64), kind, 1.0, 1.0, 1.0, True)
            movable_rows(indptr, indices, data, one, one, np.zeros(1), np.zeros(1), 0, 1, kind, 1.0, 1.0, 1.0)
            objective_sums(indptr, indices, data, one, np.zeros(1), np.zeros(1), 0, 1, kind, 1.0)


def _delayed(func, *args, name, worker=None):
    """A delayed call, soft-pinned to ``worker`` when given (allow_other_workers=True).

    Hard pins hang after a nanny restart gives the worker a new address
    (spec §2.3); soft pins let the scheduler move the task instead.
    """
    import dask

    if worker is None:
        return dask.delayed(func, pure=False)(*args, dask_key_name=name)
    with dask.annotate(workers=[worker], allow_other_workers=True):
        return dask.delayed(func, pure=False)(*args, dask_key_name=name)


class _Placement:
    """Which worker group each partition belongs to, fixed for the whole fit.

    Partition ``k`` is in group ``k * W // K`` (W workers at the start, K
    partitions): contiguous runs of partitions per worker.  The reduction
    first sums each group's ``delta_w`` (on its worker), then the groups in
    a fixed-order tree, so the summation order, and hence every bit of the
    result, does not depend on where tasks actually ran.  Each round the
    groups are mapped onto the workers alive then (sorted addresses).
    """

    def __init__(self, n_partitions, n_workers):
        self.groups = [k * n_workers // n_partitions for k in range(n_partitions)]
        self.n_groups = n_workers

    def homes(self, client):
        alive = sorted(client.scheduler_info().get("workers", {}))
        if not alive:
            return [None] * len(self.groups)
        return [alive[g % len(alive)] for g in self.groups]

    def members(self):
        return [[k for k, g in enumerate(self.groups) if g == group] for group in range(self.n_groups)]


def _reduce_deltas(deltas, placement, homes, name):
    """Per-worker pre-sum, then a fixed-order tree over the groups (spec §3.1)."""
    group_sums = []
    for group, members in enumerate(placement.members()):
        if members:
            group_sums.append(_delayed(_add, *[deltas[k] for k in members], name=f"{name}-g{group}",
                                       worker=homes[members[0]]))
    return _tree_sum(group_sums, f"{name}-tree")


def _tree_sum(items, name, combine=_add):
    """Fixed-order tree of ``combine`` over delayed items (deterministic sums)."""
    level = 0
    while len(items) > 1:
        items = [_delayed(combine, *items[i:i + SPLIT_EVERY], name=f"{name}-l{level}-{i // SPLIT_EVERY}")
                 for i in range(0, len(items), SPLIT_EVERY)]
        level += 1
    return items[0]


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


def _checkpoint_meta(url):
    with contextlib.suppress(Exception):
        meta = zarr.open_group(url, mode="r").attrs.asdict().get("daskdca_checkpoint")
        if isinstance(meta, dict) and meta.get("complete"):
            return meta
    return None


def fit_on_cluster(store: CSRStore, *, client, solver, loss, lam, positive_label, tol, max_rounds,
                   random_state, n_partitions, in_memory, checkpoint, checkpoint_every, resume, verbose, callback):
    """Run CoCoA+ or distributed mini-batch SDCA over partitions of the store.

    See :func:`daskdca.fit` for the parameters; ``store`` is a complete
    store, ``positive_label`` the label that maps to +1 (None for the
    squared loss), ``n_partitions`` the number of contiguous runs of blocks
    (None: one per block), ``in_memory`` whether partitions stay in worker
    memory.
    """
    n, d = store.n, store.d
    ranges = partition_ranges(store.n_blocks, n_partitions or store.n_blocks)
    K = len(ranges)
    lam_n = lam * n
    block_offsets = store.block_row_offsets
    offsets = np.array([block_offsets[a] for a, _ in ranges] + [n], dtype=np.int64)
    run = uuid.uuid4().hex[:8]
    n_workers = _check_workers(client)
    client.register_plugin(_WarmUp(), name=_WarmUp.name)
    if in_memory is None:
        limits = [w.get("memory_limit") or 0 for w in client.scheduler_info()["workers"].values()]
        raw = store.nnz * (store.group["data"].dtype.itemsize + store.group["indices"].dtype.itemsize) + 24 * n
        # keep partitions in memory when they take under half the cluster's memory
        in_memory = not all(limits) or raw < 0.5 * sum(limits)
    params = _Params(solver=solver, loss=loss, lam_n=lam_n, random_state=random_state,
                     positive_label=positive_label)
    placement = _Placement(K, n_workers)
    if in_memory:
        homes = placement.homes(client)
        sources = client.compute([_delayed(load_partition, store, a, b, positive_label,
                                           name=f"daskdca-{run}-load-{k}", worker=homes[k])
                                  for k, (a, b) in enumerate(ranges)], optimize_graph=False)
    else:
        sources = [OutOfCore(store, a, b) for a, b in ranges]
    logger.info("daskdca: %s on %d partitions, %d workers, %s", solver.name, K, n_workers,
                "in memory" if in_memory else "out of core (blocks re-read every round)")

    if isinstance(solver, CoCoAPlus):
        params = replace(params, sigma_prime=float(K))  # adding: sigma' = gamma K, gamma = 1 (Ma et al. 2015)
    else:
        params = _mini_batch_params(client, store, sources, params, solver, run, np.diff(offsets))

    own_checkpoint = checkpoint is None
    ckpt = tempfile.mkdtemp(prefix="daskdca-ckpt-") if own_checkpoint else os.fspath(checkpoint)
    signature = {"store": store.url, "n": n, "d": d, "loss": repr(loss), "lam": lam, "solver": repr(solver),
                 "random_state": random_state, "n_partitions": K}
    try:
        return _run(client, store, sources, params, signature, ckpt, own_checkpoint, tol, max_rounds,
                    checkpoint_every, resume, verbose, callback, run, offsets, placement)
    finally:
        if own_checkpoint:
            shutil.rmtree(ckpt, ignore_errors=True)


def _mini_batch_params(client, store, sources, params, solver, run, sizes):
    """tau, beta for (C, b)-distributed mini-batch SDCA (seed 000 §3, eq. (12))."""
    K = len(sizes)
    sigma2 = _cluster_sigma2(client, store, sources, params, run)
    if solver.batch_size is None:
        tau = max(1, int(round(1.0 / (sigma2 * K))))
    else:
        if solver.batch_size % K:
            raise ValueError(f"batch_size={solver.batch_size} must be a multiple of the {K} partitions "
                             f"((C, b)-distributed sampling); use batch_size={K * max(1, round(solver.batch_size / K))}.")
        tau = solver.batch_size // K
    tau = min(tau, int(sizes.min()))
    s_max = int(sizes.max())  # partitions differ in size a little; the larger size is the safer beta
    beta = eso.beta_distributed_tight(s_max * K, tau * K, K, sigma2)
    logger.info("daskdca: minibatch_sdca with b=%d (tau=%d per partition), sigma^2=%.3g, beta=%.3g",
                tau * K, tau, sigma2, beta)
    return replace(params, tau=tau, beta=beta)


def _cluster_sigma2(client, store, sources, params, run):
    """``sigma^2`` by power iteration, each product a reduction over the partitions.

    Fewer, looser iterations than in memory (each one is a pass over the
    data); the margin and the rigorous column-nnz cap are the same.
    """
    step = itertools.count()

    def gram_matvec(v):
        it = next(step)
        parts = [_delayed(_power_part, sources[k], v, k, params, name=f"daskdca-{run}-power{it}-{k}")
                 for k in range(len(sources))]
        return client.compute(_tree_sum(parts, f"daskdca-{run}-power{it}-sum"), optimize_graph=False).result()

    column_bound = min(1.0, max(1, int(store.group["column_nnz"][:].max(initial=0))) / store.n)
    return eso.sigma2_power_iteration(gram_matvec, store.d, store.n, column_bound, max_iter=100, rtol=1e-6)


def _run(client, store, sources, params, signature, ckpt, own_checkpoint, tol, max_rounds, checkpoint_every,
         resume, verbose, callback, run, offsets, placement):
    n, d, K = store.n, store.d, len(sources)
    start_round, n_epochs, history = 0, 0.0, []
    meta = _checkpoint_meta(ckpt) if resume else None
    if resume and meta is None:
        raise ValueError(f"resume=True but {ckpt!r} holds no complete daskdca checkpoint; "
                         "run once with checkpoint=PATH first.")
    if meta is not None:
        if meta["signature"] != signature:
            raise ValueError(f"checkpoint {ckpt!r} belongs to a different fit ({meta['signature']}); "
                             "use the same data, loss, lam, solver and random_state, or a new path.")
        slot = meta["slot"]
        alphas = [client.submit(_load_array, ckpt, f"{slot}_alpha_{k}", key=f"daskdca-{run}-resume-a{k}")
                  for k in range(K)]
        w = client.submit(_load_array, ckpt, f"{slot}_w", key=f"daskdca-{run}-resume-w")
        start_round, n_epochs = int(meta["round"]), float(meta["n_epochs"])
        history = [HistoryRecord(*r) for r in meta["history"]]
        logger.info("daskdca: resuming from %s at round %d", ckpt, start_round)
    else:
        alphas = [client.submit(np.zeros, int(offsets[k + 1] - offsets[k]), key=f"daskdca-{run}-a0-{k}")
                  for k in range(K)]
        w = client.submit(np.zeros, d, key=f"daskdca-{run}-w0")
        # a fresh run replaces an old checkpoint at that path; the group is
        # created here so that writer tasks only ever create their own arrays
        zarr.open_group(ckpt, mode="w")
    bar = _progress_bar(verbose, max_rounds, start_round)
    t0 = time.perf_counter() - (history[-1].seconds if history else 0.0)
    converged = False
    rnd = start_round
    try:
        while rnd < max_rounds:
            name = f"daskdca-{run}-r{rnd}"
            homes = placement.homes(client)
            outs = [_delayed(partition_round, sources[k], alphas[k], w, rnd, k, params, name=f"{name}-p{k}",
                             worker=homes[k]) for k in range(K)]
            new_alphas = [_delayed(_pick, o, 0, name=f"{name}-alpha{k}", worker=homes[k])
                          for k, o in enumerate(outs)]
            deltas = [_delayed(_pick, o, 1, name=f"{name}-dw{k}", worker=homes[k]) for k, o in enumerate(outs)]
            scalars = [_delayed(_pick, o, 2, name=f"{name}-s{k}") for k, o in enumerate(outs)]
            new_w = _delayed(_add, w, _reduce_deltas(deltas, placement, homes, f"{name}-dwsum"), name=f"{name}-w")
            total = _tree_sum(scalars, f"{name}-ssum", combine=_sum_tuples)
            w_sq = _delayed(_sqnorm, w, name=f"{name}-wsq")
            futures = client.compute(new_alphas + [new_w, total, w_sq], optimize_graph=False)
            alphas, w, total_f, wsq_f = futures[:K], futures[K], futures[K + 1], futures[K + 2]
            loss_sum, conj_sum, steps = total_f.result()
            reg = 0.5 * params.lam_n / n * wsq_f.result()
            # the scalars are those of the round's start, i.e. of the state
            # after `measured` rounds; round 0 measures the starting point
            measured, measured_epochs = rnd, n_epochs
            primal, dual = loss_sum / n + reg, -conj_sum / n - reg
            rnd += 1
            n_epochs += steps / n
            if measured > 0:
                record = HistoryRecord(measured, measured_epochs, time.perf_counter() - t0, primal, dual,
                                       primal - dual)
                history.append(record)
                _report(record, verbose, bar)
                if callback is not None and callback(record, None) is True:
                    break
                if primal - dual <= tol * abs(primal):
                    # certify the newest state (after this round), from alpha alone
                    w_final, primal, dual = _certify(client, store, sources, params, alphas, run, rnd)
                    if primal - dual <= tol * abs(primal):
                        converged = True
                        break
            if checkpoint_every and rnd % checkpoint_every == 0:
                alphas, w = _checkpoint(client, ckpt, alphas, w, rnd, n_epochs, history, signature, run)
        if not converged:
            w_final, primal, dual = _certify(client, store, sources, params, alphas, run, rnd)
            converged = primal - dual <= tol * abs(primal)
        alpha_final = np.concatenate(client.gather(alphas))  # alpha leaves the workers once, here
    finally:
        if bar is not None:
            bar.close()
    if not own_checkpoint:
        _checkpoint(client, ckpt, alphas, w, rnd, n_epochs, history, signature, run)
    return ClusterResult(w_final, alpha_final, history, converged, primal, dual, primal - dual, rnd, n_epochs)


def _pick(out, i):
    return out[i]


def _certify(client, store, sources, params, alphas, run, rnd):
    """``w(alpha)`` rebuilt from alpha on the cluster, then ``P``, ``D`` in one more pass."""
    K = len(sources)
    name = f"daskdca-{run}-cert{rnd}"
    parts = [_delayed(_xt_alpha, sources[k], alphas[k], k, params, name=f"{name}-xt{k}") for k in range(K)]
    w_fut = client.compute(_tree_sum(parts, f"{name}-xtsum"), optimize_graph=False)
    sums = [_delayed(_objective_part, sources[k], alphas[k], w_fut, k, params, name=f"{name}-obj{k}")
            for k in range(K)]
    loss_sum, conj_sum = client.compute(_tree_sum(sums, f"{name}-objsum", combine=_sum_tuples),
                                        optimize_graph=False).result()
    w = w_fut.result()
    n = store.n
    reg = 0.5 * params.lam_n / n * float(w @ w)
    return w, loss_sum / n + reg, -conj_sum / n - reg


def _checkpoint(client, ckpt, alphas, w, rnd, n_epochs, history, signature, run):
    """Write alpha and w to the next slot, mark it complete, restart the chains from it."""
    old = _checkpoint_meta(ckpt)
    slot = f"slot{(int(old['slot'][-1]) + 1) % 2 if old else 0}"
    writes = [client.submit(_save_array, alphas[k], ckpt, f"{slot}_alpha_{k}", key=f"daskdca-{run}-ck{rnd}-a{k}")
              for k in range(len(alphas))]
    writes.append(client.submit(_save_array, w, ckpt, f"{slot}_w", key=f"daskdca-{run}-ck{rnd}-w"))
    client.gather(writes)
    g = zarr.open_group(ckpt, mode="a")
    g.attrs["daskdca_checkpoint"] = {"format": CHECKPOINT_FORMAT, "complete": True, "slot": slot, "round": rnd,
                                     "n_epochs": n_epochs, "signature": signature,
                                     "history": [list(r) for r in history]}
    # The new chains depend on the checkpoint only (not on the writes), so the
    # scheduler can forget the lineage before it; a lost partition is re-read.
    new_alphas = [client.submit(_load_array, ckpt, f"{slot}_alpha_{k}", key=f"daskdca-{run}-ld{rnd}-a{k}")
                  for k in range(len(alphas))]
    new_w = client.submit(_load_array, ckpt, f"{slot}_w", key=f"daskdca-{run}-ld{rnd}-w")
    return new_alphas, new_w


def _progress_bar(verbose, max_rounds, start):
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=max_rounds, initial=start, desc="daskdca rounds", unit="round")


def _report(record, verbose, bar):
    rel = record.gap / max(abs(record.primal), 1e-300)
    line = (f"round {record.round:5d}  epochs {record.epochs:8.2f}  time {record.seconds:8.3f}s  "
            f"primal {record.primal:.10e}  dual {record.dual:.10e}  gap {record.gap:.3e}  rel {rel:.3e}")
    logger.info(line)
    if bar is not None:
        bar.write(line)
        bar.set_postfix(gap=f"{rel:.2e}")
        bar.update(record.round - bar.n)
