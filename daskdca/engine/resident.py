"""Resident rounds: each worker's partitions and their local states stay in one Dask actor for the whole fit.

:class:`ResidentExecutor` runs the protocol of :func:`daskdca.driver.run_rounds`
as :class:`~daskdca.engine.executor.DaskExecutor` does, with the round as
direct calls instead of a graph of tasks:

    this process                                     worker j's actor (_Resident)
    total_{r-1} -- step(phase, total, round) ----->  G_r = combine(G_{r-1}, total_{r-1}) (the driver's bits),
                                                     local steps of its run of partitions (its threads)
                <-- the tree nodes its run decides -- keeps the new local states (version r + 1)
    rest of the fixed-order tree -> total_r; combine(G_r, total_r) -> G_{r+1}, RoundReport

A Dask round of tasks costs tens of milliseconds of scheduling before any
arithmetic (benchmarks/RESULTS.md, "Engine: round overhead"); a call to an
actor (Dask's documentation, "Actors") goes from this process to the worker
and back without the scheduler (:class:`_DirectActor`), which is how XGBoost's and LightGBM's Dask
interfaces keep their iterations off the scheduler too (one long-lived
worker-side object per worker, fed through a communication layer).  The global state lives in
this process, and a copy of it in each actor, which receives the reduced
total the driver combined last (its non-zero entries when it is mostly
zeros) and makes the same combine, or the whole state after a restart; it
runs the method's local step on each of its partitions (on as many threads as its worker has) and sums their
contributions as far as :func:`~daskdca.methods.base.tree_reduce_within`
allows; this process completes the same fixed-order tree and calls the
method's combine.  So the bits are those of :class:`daskdca.driver.InProcess`
and of the task executor, whatever the placement.

Faults.  An actor dies with its worker.  Every ``checkpoint_every`` rounds
(and at the start) the local states are copied into this process; when a
call finds its worker gone, the executor places the partitions on the workers
alive (waiting up to ``daskdca.no-workers-timeout`` for one), gives the new
actors the copied states and replays the rounds since the copy (every random
stream derives from ``(random_state, round, partition)``, so the replay has
the same bits), then goes on.  The copy is also where partitions move to
workers that joined.  With ``checkpoint=PATH`` the actors write their
states to the checkpoint (the same format as the task executor's, so either
resumes the other's).

Dask config ``daskdca.rounds``: ``"resident"`` (default) or ``"tasks"``
(:class:`~daskdca.engine.executor.DaskExecutor`, one graph of tasks a round).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor

import dask
import numpy as np
from distributed import Actor, KilledWorker

from daskdca.driver import sum_arrays
from daskdca.engine.checkpoint import (
    _check_resumed,
    _check_resumed_local,
    _checkpoint_meta,
    _history_of,
    _load_state,
    _mark_complete,
    _resumable_meta,
    _save_state,
)
from daskdca.engine.errors import WorkersLostError
from daskdca.engine.executor import DaskExecutor
from daskdca.methods.base import Ctx, Ops, add_contributions, thread_budget, tree_nodes, tree_reduce, tree_reduce_within
from daskdca.partitions import (
    gram_matvec_part,
    in_caller_order,
    objective_sums_part,
    sqnorm_sum_part,
    xt_alpha_part,
)
from daskdca.problem import objectives

logger = logging.getLogger("daskdca")

__all__ = ["ROUNDS_KEY", "ResidentExecutor", "configured_rounds"]

#: The Dask config key that picks how rounds run on a cluster (module docstring).
ROUNDS_KEY = "daskdca.rounds"
ROUND_MECHANISMS = ("resident", "tasks")


def configured_rounds():
    """``"resident"`` or ``"tasks"``: the Dask config ``daskdca.rounds`` (default ``"resident"``)."""
    value = dask.config.get(ROUNDS_KEY, "resident")
    if value not in ROUND_MECHANISMS:
        raise ValueError(f"dask config {ROUNDS_KEY!r} = {value!r}; use one of {ROUND_MECHANISMS} "
                         f"(e.g. dask.config.set({{{ROUNDS_KEY!r}: 'resident'}})).")
    return value


# --- the actor -------------------------------------------------------------------------------------------

class _Resident:
    """One worker's contiguous run of partitions (``first, first + 1, ...`` of ``n_partitions``) and their
    local states by version (a round number, or a phase's intermediate key).

    ``mode``: ``"load"`` reads each source here once (``source.load()``),
    ``"held"`` takes them as loaded partitions, ``"stream"`` keeps them as
    they are (out of core: a local step reads its blocks).
    """

    def __init__(self, sources, first, n_partitions, mode, n_threads):
        self.parts = [source.load() for source in sources] if mode == "load" else list(sources)
        self.first, self.n_partitions = int(first), int(n_partitions)
        self.n_threads = max(1, min(int(n_threads), len(self.parts)))
        # each step's thread budget: the worker's threads shared by the partitions stepping at once
        self.share = max(1, int(n_threads) // self.n_threads)
        self.pool = None
        self.plan = None
        self.versions = {}
        self.G = None  # the global state of the last step

    def _map(self, fn, *columns):
        """``[fn(part, *row) ...]`` over the partitions, on the worker's threads (the kernels release the GIL),
        each with its share of them as its thread budget (:func:`~daskdca.methods.base.thread_budget`)."""
        rows = list(zip(self.parts, *columns))

        def call(row):
            with thread_budget(self.share):
                return fn(*row)

        if self.n_threads == 1 or len(rows) == 1:
            return [call(row) for row in rows]
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="daskdca-resident")
        return list(self.pool.map(call, rows))

    def set_plan(self, plan):
        self.plan = plan

    def ping(self):
        """True: the answer of a call that does nothing (:meth:`ResidentExecutor._call_directly` asks it)."""
        return True

    def sums(self, fn, args):
        """``fn(partition, *args)`` of each partition, in order."""
        return self._map(lambda part: fn(part, *args))

    def start(self, version, ctxs):
        self.versions = {version: tuple(self._map(self.plan.init_local, ctxs))}

    def xt(self, alphas, lam_n):
        return self._map(lambda part, alpha: xt_alpha_part(part, alpha, lam_n), alphas)

    def start_from(self, version, alphas, ctxs):
        self.versions = {version: tuple(self._map(self.plan.init_local_from, alphas, ctxs))}

    def put(self, version, states):
        self.versions = {version: tuple(states)}

    def states(self, version):
        return self.versions[version]

    def step(self, phase_index, global_spec, ctxs, source, target, keep):
        """The local step of phase ``phase_index`` on every partition from version ``source``; the new states
        become version ``target``, versions outside ``keep`` are dropped, and the tree nodes this run of
        partitions decides are returned.

        ``global_spec`` is ``("full", G)``, the global state itself, or
        ``("combine", j, total, ctx)``: the state the driver has just made by
        ``phases()[j].combine(G, total, ctx)`` from the one this actor used
        last, made here the same way (the same function on the same numbers,
        so the same bits), which sends one reduced contribution instead of
        the whole state.
        """
        if global_spec[0] == "full":
            self.G = global_spec[1]
        else:
            _, j, total, ctx = global_spec
            self.G = self.plan.phases()[j].combine(self.G, _unpack(total), ctx)[0]
        G = self.G
        local = self.plan.phases()[phase_index].local
        outs = self._map(lambda part, state, ctx: local(part, state, G, ctx), self.versions[source], ctxs)
        self.versions[target] = tuple(out[0] for out in outs)
        for key in [key for key in self.versions if key not in keep]:
            del self.versions[key]
        return tree_reduce_within([out[1] for out in outs], self.first, self.n_partitions, add_contributions)

    def dual_points(self, version, G):
        return self._map(lambda part, state: self.plan.dual_point(part, state, G), self.versions[version])

    def certify_xt(self, version, G, lam_n):
        alphas = self.dual_points(version, G)
        return alphas, self._map(lambda part, alpha: xt_alpha_part(part, alpha, lam_n), alphas)

    def certify_sums(self, version, G, w, loss):
        alphas = self.dual_points(version, G)
        return self._map(lambda part, alpha: objective_sums_part(part, alpha, w, loss), alphas)

    def save(self, save, version, url, slot):
        """Write each partition's state of ``version`` with ``save`` (the checkpoint's writer); class paths."""
        return [save((state, None), url, f"{slot}_local{self.first + j}")
                for j, state in enumerate(self.versions[version])]

    def load(self, load, version, url, slot, local_class, G, ctxs, info):
        """Read each partition's state from the checkpoint's ``slot`` and check it (a damaged one raises)."""
        states = []
        for j, (part, ctx) in enumerate(zip(self.parts, ctxs)):
            k = self.first + j
            out = (load(url, f"{slot}_local{k}", local_class), None)
            out = _check_resumed_local(self.plan, part, out, (G, None), ctx, info,
                                       f"checkpoint {url!r}, partition {k}")
            states.append(out[0])
        self.versions = {version: tuple(states)}


#: A total's vector travels as its bitwise non-zero entries when they are at most this share of it (an index and
#: a value, 16 bytes, against 8 for a dense entry).
PACK_DENSITY = 0.25


def _pack(total):
    """``total`` with a dense vector that is mostly zeros sent as ``("packed", shape, indices, values)``.

    Lossless: the entries whose bits are not all zero (``-0.0`` included)
    are kept, so :func:`_unpack` rebuilds the same array bit for bit, and the
    actor's combine sees what the driver's did.
    """
    vector = total.vector
    if not isinstance(vector, np.ndarray) or vector.dtype != np.float64 or vector.size == 0:
        return total
    flat = np.ascontiguousarray(vector).reshape(-1)
    nz = np.flatnonzero(flat.view(np.uint64))
    if nz.size > PACK_DENSITY * flat.size:
        return total
    return total._replace(vector=("packed", vector.shape, nz, flat[nz]))


def _unpack(total):
    vector = total.vector
    if not (isinstance(vector, tuple) and len(vector) == 4 and vector[0] == "packed"):
        return total
    _, shape, nz, values = vector
    flat = np.zeros(int(np.prod(shape)), dtype=np.float64)
    flat[nz] = values
    return total._replace(vector=flat.reshape(shape))


class _DirectActor(Actor):
    """A proxy of an actor whose calls go from this process to the actor's worker, not through the scheduler.

    Dask's own proxy hands a call to the scheduler, which passes it on to
    the worker, unless its client was made with ``direct_to_workers=True``
    (the setting Dask's gathers and scatters read too); a round is one call
    per worker, so the scheduler's hop there and back was a share of every
    round (benchmarks/RESULTS.md, "Engine: actor calls straight to the
    workers").  The call itself is Dask's: the worker's ``actor_execute``
    over the client's connection pool.
    """

    @property
    def _worker_rpc(self):
        return self._client.rpc(self._address)


class _WorkerLost(Exception):
    """Internal: a call found its actor's worker gone."""


class _ResidentOps(Ops):
    def __init__(self, executor):
        self.executor = executor

    def _sum(self, fn, args, what):
        ex = self.executor
        per_group = ex._call_all("sums", [(fn, args)] * len(ex.actors), what)
        return tree_reduce([value for values in per_group for value in values], sum_arrays)

    def gram_matvec(self, v):
        return self._sum(gram_matvec_part, (v,), "a setup product")

    def sqnorm_sum(self):
        return float(self._sum(sqnorm_sum_part, (), "a setup sum")[0])


# --- the executor -----------------------------------------------------------------------------------------

class ResidentExecutor(DaskExecutor):
    """Runs a method's phases on a Dask cluster with one resident actor per worker (module docstring).

    The executor of :func:`daskdca.driver.run_rounds` for
    ``daskdca.rounds = "resident"`` (the default); :func:`fit_on_cluster`
    builds it, and its actors start on the workers when it is built.

    Parameters
    ----------
    client : distributed.Client
        The cluster.
    sources : list
        The partitions' sources, in order
        (:class:`~daskdca.partitions.StorePartition` or one-vs-rest ones),
        or the partitions themselves (``mode="held"``).
    info : DataInfo
        The data constants of the partitions.
    random_state : int
        The seed of every random stream ``(random_state, round, partition)``.
    mode : {"load", "held", "stream"}
        How the actors hold the partitions: ``"load"`` reads each source on
        its worker once, ``"held"`` takes them as loaded partitions,
        ``"stream"`` keeps the sources (out of core: a local step reads its
        blocks).
    run_id : str
        As :class:`DaskExecutor`.
    checkpoint : str or None
        As :class:`DaskExecutor`.
    checkpoint_every : int
        Rounds between copies of the local states into this process (and
        checkpoints, with ``checkpoint``).
    signature : dict
        As :class:`DaskExecutor`.
    dual_init : ndarray or None, default=None
        As :class:`DaskExecutor`.
    no_workers_timeout : float or None, default=None
        Seconds to wait for a worker while the cluster has none (None:
        forever).
    row_order : ndarray or None, default=None
        As :class:`DaskExecutor`.
    """

    # the global state lives here, so the next round cannot start before this process has combined
    lookahead = False

    def __init__(self, client, sources, info, random_state, *, mode, run_id, checkpoint, checkpoint_every,
                 signature, dual_init=None, no_workers_timeout=None, row_order=None):
        super().__init__(client, sources, info, random_state, placement=None, run_id=run_id,
                         checkpoint=checkpoint, checkpoint_every=checkpoint_every, signature=signature,
                         dual_init=dual_init, no_workers_timeout=no_workers_timeout, row_order=row_order)
        self.mode = mode
        self.plan = None
        self.actors = []      # one Actor proxy per group
        self.futures = []     # the futures that keep them alive
        self.addresses = []   # each group's worker
        self.members = []     # each group's partitions (contiguous runs)
        self.generation = 0
        self.copy = None      # (round, G, one local state per partition): where a lost actor restarts from
        self.live = {}        # version -> global state of that version, for the versions the driver may hold
        self.pending = None   # ("combine", phase, total, ctx) that made self.last_global from the actors' state
        self.last_global = None
        self.losses = []      # the workers lost since a call was last answered (_count_loss)
        while True:
            try:
                self._place()
                break
            except _WorkerLost as lost:  # a worker died starting its actor (loading its partitions)
                self._count_loss(lost, "the partitions")
        self.losses = []

    # -- placement and the actors' lives
    def _workers(self):
        """``{address: nthreads}`` of the workers now.

        A lost scheduler raises first (:meth:`_check_scheduler`): the rounds
        go straight to the workers, so a round can end after the scheduler
        died, and asking it for its workers would wait out the client's
        connect timeout (30 s by default).
        """
        self._check_scheduler("the list of workers")
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        return {a: max(1, int(workers[a].get("nthreads") or 1)) for a in sorted(workers)}

    def _place(self, what="the partitions"):
        """Start one actor per worker alive now, each holding a contiguous run of partitions.

        With no worker alive the actors wait for one as any task does, watched
        by :meth:`DaskExecutor.gather` (``daskdca.no-workers-timeout``, or the
        scheduler's own no-workers timeout).
        """
        self._release()
        self.pending = self.last_global = None  # new actors hold no global state
        self._check_scheduler(what)
        workers = self._workers()
        K, W = len(self.parts), max(1, len(workers))
        groups = [k * W // K for k in range(K)] if K >= W else list(range(K))
        self.members = [[k for k in range(K) if groups[k] == g] for g in sorted(set(groups))]
        addresses = list(workers)
        self.generation += 1
        futures = []
        # in-memory arrays ("held") travel inside the actors' tasks on purpose, as the task executor's do
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "16 GiB"}):
            for g, ks in enumerate(self.members):
                home = addresses[g % W] if addresses else None
                pin = {"workers": [home], "allow_other_workers": True} if home else {}
                futures.append(self.client.submit(
                    _Resident, [self.parts[k] for k in ks], ks[0], K, self.mode, workers.get(home, 1), actor=True,
                    pure=False, key=f"daskdca-resident-{self.run_id}-{self.generation}-g{g}", **pin))
        self.futures = futures
        try:
            self.actors = self.gather(futures, what)
        except KilledWorker as exc:  # Dask started an actor on allowed-failures + 1 workers, and each one died
            self._count_loss(_WorkerLost(f"every worker that started an actor died ({exc})"), what, final=True)
        except RuntimeError as exc:  # Dask's "Worker holding Actor was lost": a worker died starting its actor
            if "Actor was lost" not in str(exc):
                raise
            raise _WorkerLost(f"a worker was lost while its actor started ({exc})") from exc
        for actor, future in zip(self.actors, futures):
            # an Actor proxy binds itself to Dask's default client, which this fit's client need not be (the
            # process's embedded cluster never is): bind it to this fit's client and future
            actor._client, actor._future = self.client, future
        self.addresses = [actor._address for actor in self.actors]
        self.n_slots = len(workers)
        if self.client.direct_to_workers is not False:
            self._call_directly(what)
        if self.plan is not None:
            self._call_all("set_plan", [(self.plan,)] * len(self.actors), what)

    def _call_directly(self, what):
        """Call the actors straight on their workers (:class:`_DirectActor`) when this process reaches them.

        A client made with ``direct_to_workers=False`` (or Dask's config
        ``distributed.client.direct-to-workers: false``) keeps Dask's proxies,
        whose calls go through the scheduler, as its gathers do.  A worker
        this process cannot connect to keeps them too: one ``ping`` per actor
        tells.
        """
        scheduled = self.actors
        direct = []
        for actor, future in zip(scheduled, self.futures):
            proxy = _DirectActor(actor._cls, actor._address, actor.key)
            proxy._client, proxy._future = self.client, future
            direct.append(proxy)
        self.actors = direct
        try:
            self._call_all("ping", [()] * len(direct), what)
        except _WorkerLost as exc:
            logger.info("daskdca: calls to the workers go through the scheduler (%s)", exc)
            self.actors = scheduled

    def _release(self):
        if self.futures:
            with contextlib.suppress(Exception):
                self.client.cancel(self.futures)
        self.actors, self.futures, self.addresses = [], [], []

    def close(self):
        """Release the actors (their partitions and states leave the workers' memory)."""
        self._release()

    # -- calls
    def _call_all(self, method, args, what):
        """``actor.method(*args[g])`` on every group's actor at once; the answers in group order.

        Raises :class:`_WorkerLost` when an actor's worker is gone, the
        cluster errors of :class:`DaskExecutor` when the scheduler is lost,
        and a method's own error as it is.
        """
        self._check_scheduler(what)
        calls = []
        for g, (actor, a) in enumerate(zip(self.actors, args)):
            try:
                calls.append(getattr(actor, method)(*a))
            except RuntimeError as exc:  # the proxy knows its worker is gone ("Worker holding Actor was lost")
                raise _WorkerLost(f"worker {self.addresses[g]} lost ({exc})") from exc
        answers = []
        for g, call in enumerate(calls):
            while True:
                try:
                    answers.append(call.result(timeout=self.poll))
                    break
                except (TimeoutError, asyncio.TimeoutError):
                    self._check_scheduler(what)
                    if self.addresses[g] not in self._workers():
                        raise _WorkerLost(f"worker {self.addresses[g]} left while the fit waited on {what}") from None
                except OSError as exc:
                    raise _WorkerLost(f"worker {self.addresses[g]} unreachable ({exc})") from exc
                except RuntimeError as exc:
                    if "Actor was lost" in str(exc) or self.addresses[g] not in self._workers():
                        raise _WorkerLost(f"worker {self.addresses[g]} lost ({exc})") from exc
                    raise
        return answers

    def _robust(self, what, action):
        """``action()``, after restarting the actors from the last copy whenever a worker was lost."""
        while True:
            try:
                answer = action()
            except _WorkerLost as lost:
                self._count_loss(lost, what)
                logger.info("daskdca: %s; the partitions restart on the workers alive from the copy of round %d",
                            lost, self.copy[0])
                self._restore(what)
            else:
                self.losses = []
                return answer

    def _restore(self, what):
        """New actors on the workers alive, given the copied states, then the rounds since the copy replayed
        up to every version the driver may still hold."""
        while True:
            try:
                self._place(what)
                r0, G, states = self.copy
                self._call_all("put", [(r0, tuple(states[k] for k in ks)) for ks in self.members], what)
                for r in range(r0, max(self.live, default=r0)):
                    G, _ = self._round(G, r, {v for v in self.live if v <= r})
                return
            except _WorkerLost as lost:
                self._count_loss(lost, what)
                logger.info("daskdca: %s while restarting; trying again", lost)

    def _count_loss(self, lost, what, final=False):
        """Count a lost worker; raise :class:`WorkersLostError` when more than Dask's
        ``distributed.scheduler.allowed-failures`` were lost in a row, with no call answered between them, or at
        once with ``final`` (Dask's scheduler gave up on an actor's start itself: ``KilledWorker``).

        A worker that dies every time it runs the same step (its nanny kills it
        for memory, most often) would otherwise be replaced and killed again
        for ever; Dask gives a task the same number of tries before it raises
        ``KilledWorker`` (https://distributed.dask.org/en/stable/killed.html).
        """
        self.losses.append(str(lost))
        allowed = int(dask.config.get("distributed.scheduler.allowed-failures", 3))
        if len(self.losses) <= allowed and not final:
            return
        ckpt_round, saved = self._saved()
        try:
            workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
            limits = sorted({int(w.get("memory_limit") or 0) for w in workers.values()})
        except Exception:  # the scheduler cannot be asked now: the message goes without the limits
            limits = []
        memory = (f" The workers' memory limits now: {', '.join(f'{m / 2**20:.0f} MiB' for m in limits)}."
                  if limits and all(limits) else "")
        raise WorkersLostError(
            f"the fit lost its workers while it waited on {what}, with no call answered in between: "
            f"{'; '.join(self.losses)}. More losses in a row than Dask's distributed.scheduler.allowed-failures "
            f"= {allowed} end a fit, as they end a task (KilledWorker). A worker that dies "
            f"every time it runs the same step is most often killed by its nanny for going over its memory "
            f"limit (https://distributed.dask.org/en/stable/killed.html; the workers' logs say).{memory} {saved} "
            "Fix: give the workers more memory (LocalCluster(memory_limit=...), the jobqueue job's memory), or "
            "more workers; out of core, a sweep holding fewer blocks at once (CoCoAPlus(window_blocks=1)) or a "
            "store written in smaller blocks (daskdca.rewrite_store(..., block_rows=...)).",
            lost=tuple(self.losses), scheduler_address=self.scheduler_address, checkpoint=self.checkpoint,
            checkpoint_round=ckpt_round)

    def ctx(self, r, k):
        return Ctx(self.seed, r, k, len(self.parts))

    def _ctxs(self, r, ks):
        return tuple(self.ctx(r, k) for k in ks)

    def _total(self, nodes_per_group):
        """The fixed-order tree's total from the nodes each group decided (as the task executor's tree)."""
        have = {}
        for nodes in nodes_per_group:
            have.update(nodes)
        root = (0, 0)
        for root, children in tree_nodes(len(self.parts)):
            if root not in have:
                have[root] = add_contributions(*[have.pop(child) for child in children])
        return have[root]

    def _round(self, G, r, keep):
        """Round ``r`` from version ``r`` (kept with ``keep``); returns ``(G', report)`` (version ``r + 1``).

        The actors get the global state whole only when theirs is not the
        one the driver made last; else the reduced total it was made from
        (:meth:`_Resident.step`).
        """
        phases = self.plan.phases()
        source = r
        for i, phase in enumerate(phases):
            target = r + 1 if i == len(phases) - 1 else (r, phase.name)
            spec = self.pending if self.pending is not None and G is self.last_global else ("full", G)
            nodes = self._call_all("step", [(i, spec, self._ctxs(r, ks), source, target, keep | {target})
                                            for ks in self.members], f"round {r}")
            total = self._total(nodes)
            G, report = phase.combine(G, total, self.ctx(r, -1))
            self.pending, self.last_global = ("combine", i, _pack(total), self.ctx(r, -1)), G
            source = target
        return G, report

    # -- protocol of daskdca.driver.run_rounds
    def setup(self, method):
        plan = self._robust("a setup sum", lambda: method.setup(self.info, _ResidentOps(self)))
        self.plan = plan
        self._robust("the plan", lambda: self._call_all("set_plan", [(plan,)] * len(self.actors), "the plan"))
        return plan

    def _take_copy(self, r, G):
        per_group = self._robust(f"the states of round {r}", lambda: self._call_all(
            "states", [(r,)] * len(self.actors), f"the states of round {r}"))
        self.copy = (r, G, [state for states in per_group for state in states])

    def init(self, plan):
        if self.dual_init is not None:
            return self._warm_init(plan)

        def start():
            self._call_all("start", [(0, self._ctxs(0, ks)) for ks in self.members], "the initial states")

        self._robust("the initial states", start)
        G = plan.init_global()
        self.live = {0: G}
        self._take_copy(0, G)
        return G, 0

    def _warm_init(self, plan):
        bounds = np.concatenate(([0], np.cumsum(self.info.partition_sizes)))
        alphas = [np.asarray(self.dual_init[..., a:b], dtype=np.float64) for a, b in zip(bounds[:-1], bounds[1:])]
        lam_n = self.info.lam_n

        def start():
            xts = self._call_all("xt", [([alphas[k] for k in ks], lam_n) for ks in self.members], "the warm start")
            G = plan.init_global_from(tree_reduce([x for xs in xts for x in xs], sum_arrays))
            self._call_all("start_from", [(0, [alphas[k] for k in ks], self._ctxs(0, ks)) for ks in self.members],
                           "the warm start")
            return G

        G = self._robust("the warm start", start)
        self.live = {0: G}
        self._take_copy(0, G)
        return G, 0

    def run(self, plan, G, Ls, r, n):
        """Run rounds ``r .. r + n - 1`` from version ``Ls`` (= ``r``).

        Parameters
        ----------
        plan : object
            The method's plan for the data.
        G : object
            The global state (it lives in this process).
        Ls : int
            The version of the local states the actors hold (the round
            ``r``).
        r : int
            The first round's index.
        n : int
            Rounds to run.

        Returns
        -------
        G : object
            The new global state.
        Ls : int
            The new version, ``r + n``.
        report : RoundReport
            The first round's report with the steps of all ``n``.
        """
        self.live = {r: G}

        def stretch():
            G_now, first, steps = G, None, 0.0
            for rnd in range(r, r + n):
                G_now, report = self._round(G_now, rnd, {r})
                first = report if first is None else first
                steps += report.steps
            return G_now, first._replace(steps=steps)

        G_new, report = self._robust(f"round {r}", stretch)
        self.live = {r: G, r + n: G_new}
        return G_new, r + n, report

    def reports(self, handles):
        return list(handles)

    def fetch(self, value):
        return value

    def hold(self, state):
        return state

    def dual_points(self, plan, G, Ls):
        per_group = self._robust("the dual point", lambda: self._call_all(
            "dual_points", [(Ls, G)] * len(self.actors), "the dual point"))
        return in_caller_order(np.concatenate([a for alphas in per_group for a in alphas], axis=-1), self.row_order)

    def certify(self, plan, G, Ls):
        """Certify the states: ``w(alpha)`` rebuilt from the dual point, then one more pass (as the task executor).

        Parameters
        ----------
        plan : object
            The method's plan for the data.
        G : object
            The global state.
        Ls : int
            The version of the local states.

        Returns
        -------
        w : ndarray
            The model (for the dual methods ``w(alpha)``).
        alpha : ndarray
            The dual point, in the caller's row order.
        P : float or ndarray
            The primal objective ``P(w)``.
        D : float or ndarray
            The dual objective ``D(alpha)``.
        """
        info = self.info

        def sums():
            per_group = self._call_all("certify_xt", [(Ls, G, info.lam_n)] * len(self.actors), "the certificate")
            alphas = [a for group in per_group for a in group[0]]
            w_alpha = tree_reduce([x for group in per_group for x in group[1]], sum_arrays)
            w = w_alpha if plan.primal_from_dual else np.asarray(plan.model(G), dtype=np.float64)
            parts = self._call_all("certify_sums", [(Ls, G, w, info.loss)] * len(self.actors), "the certificate")
            return alphas, w_alpha, w, tree_reduce([s for group in parts for s in group], sum_arrays)

        alphas, w_alpha, w, total = self._robust("the certificate", sums)
        primal, dual = objectives(info, total, np.asarray(w, dtype=np.float64), w_alpha,
                                  getattr(plan, "l1_ratio", 0.0))
        return np.asarray(w, dtype=np.float64), in_caller_order(np.concatenate(alphas, axis=-1), self.row_order), \
            primal, dual

    def after_rounds(self, plan, G, Ls, r, epochs, history):
        if r % self.checkpoint_every:
            return G, Ls
        self._take_copy(r, G)
        self.live = {r: G}
        try:
            moved = len(self._workers()) != self.n_slots
        except Exception:  # the scheduler cannot be asked now: keep the placement (the next call says why)
            moved = False
        if moved:
            logger.info("daskdca: %d workers now (%d before); from round %d the partitions are placed on them",
                        len(self._workers()), self.n_slots, r)
            self._restore(f"the states of round {r}")
        if self.checkpoint is not None:
            self._write_checkpoint(G, Ls, r, epochs, history)
        return G, Ls

    def finish(self, plan, G, Ls, r, epochs, history):
        if self.checkpoint is not None:
            self._write_checkpoint(G, Ls, r, epochs, history)

    def _write_checkpoint(self, G, Ls, r, epochs, history):
        """Each actor writes its partitions' states to the next slot; this process writes the global state and
        marks the slot complete (the layout of the task executor's checkpoints)."""
        url = self.checkpoint
        old = _checkpoint_meta(url)
        slot = f"slot{(int(old['slot'][-1]) + 1) % 2 if old else 0}"
        what = f"the checkpoint of round {r}"
        if self.copy is None or self.copy[0] != r:
            self._take_copy(r, G)
            self.live = {**self.live, r: G}
        # the writer is looked up here at each call, so what the workers run is this module's _save_state now
        classes = self._robust(what, lambda: self._call_all("save", [(_save_state, Ls, url, slot)] * len(self.actors),
                                                            what))
        global_class = _save_state((G, None), url, f"{slot}_global")
        _mark_complete(url, slot=slot, round_index=r, n_epochs=epochs, signature=self.signature,
                       local_class=classes[0][0], global_class=global_class, history=history)

    def resume(self, plan):
        """Load the last complete checkpoint into the actors, checked against ``plan``.

        Parameters
        ----------
        plan : object
            The method's plan for the data.

        Returns
        -------
        G : object
            The global state.
        version : int
            The version of the local states the actors now hold (the
            round).
        round : int
            The checkpoint's round.
        n_epochs : float
            Passes over the data up to it.
        history : list of HistoryRecord
            The records of the fit up to it.
        """
        url = self.checkpoint
        meta = _resumable_meta(url, self.signature)
        r, slot = int(meta["round"]), meta["slot"]
        G = _check_resumed((_load_state(url, f"{slot}_global", meta["global_class"]), None), plan.init_global(),
                           f"checkpoint {url!r}, global state")[0]
        self._robust("the checkpoint's states", lambda: self._call_all(
            "load", [(_load_state, r, url, slot, meta["local_class"], G, self._ctxs(0, ks), self.info)
                     for ks in self.members], "the checkpoint's states"))
        history = _history_of(meta)
        logger.info("daskdca: resuming from %s at round %d", url, r)
        self.submitted = r
        self.live = {r: G}
        self._take_copy(r, G)
        return G, r, r, float(meta["n_epochs"]), history
