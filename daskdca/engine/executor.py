"""The executor: :class:`DaskExecutor` runs a method's phases on a Dask cluster.

It implements the protocol of :func:`daskdca.driver.run_rounds` (setup,
init, rounds, certificate, checkpoints, resume) by submitting the tasks of
:mod:`daskdca.engine.tasks`, and waits on the cluster only through
:meth:`DaskExecutor.gather`, which watches it (:mod:`daskdca.engine.watch`,
:mod:`daskdca.engine.errors`); :class:`_DaskOps` gives a method's setup its
sums over the partitions.  The package docstring of :mod:`daskdca.engine`
describes the graph of a round.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import logging
import threading
import time
import uuid
from functools import partial

import dask
import numpy as np
from distributed import wait

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
from daskdca.engine.clients import _thread_slots
from daskdca.engine.errors import (
    NO_WORKERS_TIMEOUT_KEY,
    NoWorkersError,
    SchedulerLostError,
    configured_no_workers_timeout,
)
from daskdca.engine.tasks import (
    _combine_task,
    _delayed,
    _dual_point_task,
    _group_local_task,
    _group_of,
    _group_start,
    _member,
    _merge_reports,
    _model_task,
    _pinned,
    _Placement,
    _restart,
    _sent,
    _start,
    _state_of,
    _tree_node,
)
from daskdca.engine.watch import _scheduler_noworker_error, _unstick_function
from daskdca.methods.base import Ctx, DataInfo, Ops, RoundReport, add_contributions, tree_nodes, tree_reduce
from daskdca.partitions import (
    gram_matvec_part,
    in_caller_order,
    in_partition_order,
    objective_sums_part,
    sqnorm_sum_part,
    xt_alpha_part,
)
from daskdca.problem import objectives

logger = logging.getLogger("daskdca")

__all__ = ["DaskExecutor"]


class _DaskOps(Ops):
    def __init__(self, executor):
        self.executor = executor
        self.step = itertools.count()

    def _setup_sum(self, part_fn, args, label, what):
        """``part_fn(partition, *args)`` on every partition's worker, summed by the fixed-order tree."""
        ex = self.executor
        it = next(self.step)
        name = f"daskdca-setup-{ex.run_id}-{label}{it}"
        parts = [_delayed(part_fn, ex.parts[k], *args, name=f"{name}-p{k}", worker=home)
                 for k, home in enumerate(ex.homes(what))]
        total = ex.tree(parts, sum_arrays, f"daskdca-reduce-{ex.run_id}-{label}{it}")
        return ex.gather([ex.client.compute(total, optimize_graph=False)], what)[0]

    def gram_matvec(self, v):
        return self._setup_sum(gram_matvec_part, (v,), "gram", "a setup product")

    def sqnorm_sum(self):
        return float(self._setup_sum(sqnorm_sum_part, (), "sqnorm", "a setup sum")[0])


_FROM_CONFIG = object()


class DaskExecutor:
    """Runs a method's phases on a Dask cluster (see the module docstring).

    The executor of :func:`daskdca.driver.run_rounds` that submits each
    stretch of rounds as one graph of tasks (``daskdca.rounds = "tasks"``);
    :func:`fit_on_cluster` builds it.

    Parameters
    ----------
    client : distributed.Client
        The cluster.
    parts : list
        One entry per partition, in order: a partition source that the
        tasks read (:class:`~daskdca.partitions.StorePartition`, or a
        one-vs-rest one), or a future of a partition held on a worker.
    info : DataInfo
        The data constants of the partitions.
    random_state : int
        The seed of every random stream ``(random_state, round, partition)``.
    placement : _Placement
        Which worker thread each partition's tasks run on.
    run_id : str
        A fresh name for this fit's task keys.
    checkpoint : str or None
        The checkpoint folder or URL; None: the states are copied through
        this process instead.
    checkpoint_every : int
        Rounds between checkpoints (or copies of the states).
    signature : dict
        What identifies the fit (data, loss, lam, solver, seed,
        partitions), written with a checkpoint and checked on resume.
    dual_init : ndarray or None, default=None
        A warm start's dual point, in the caller's row order; None: the
        method's own start.
    no_workers_timeout : float or None, optional
        Seconds to wait for a worker while the cluster has none (None:
        forever); by default :func:`configured_no_workers_timeout`.
    row_order : ndarray or None, default=None
        ``row_order[j]`` is the caller's row of the ``j``-th row in
        partition order (in-memory arrays dealt to partitions in a seeded
        random order); None: the partitions hold the rows in the caller's
        order (a store).  Dual points come back in the caller's order.
    """

    # rounds are futures: the driver submits the next stretch before it reads a report, so the workers
    # need not wait for this process between rounds
    lookahead = True

    def __init__(self, client, parts, info: DataInfo, random_state, *, placement, run_id, checkpoint,
                 checkpoint_every, signature, dual_init=None, no_workers_timeout=_FROM_CONFIG, row_order=None):
        self.client, self.parts, self.info, self.seed = client, parts, info, int(random_state)
        self.placement, self.run_id = placement, run_id
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.signature = signature
        self.row_order = row_order
        # in the partitions' row order; None: the method's own start
        self.dual_init = None if dual_init is None else in_partition_order(dual_init, row_order)
        if no_workers_timeout is _FROM_CONFIG:
            no_workers_timeout = configured_no_workers_timeout()
        self.no_workers_timeout = no_workers_timeout
        # how often a wait looks at the cluster: a fast gather never does
        self.poll = 1.0 if no_workers_timeout is None else min(1.0, max(0.05, no_workers_timeout / 10))
        self.scheduler_address = None
        with contextlib.suppress(Exception):
            self.scheduler_address = client.scheduler.address
        self.submitted = 0  # rounds submitted so far (for the messages)
        self.can_unstick = True

    # -- waiting on the cluster: never forever
    def gather(self, futures, what, *, fetch=True):
        """The results of ``futures``, or with ``fetch=False`` a wait until they are done, watching the cluster.

        The wait runs in a helper thread; this one looks at the cluster every
        ``self.poll`` seconds while it lasts (a fast wait never does).  A fit
        whose workers survive or come back gets the same results as a plain
        ``client.gather``.

        Parameters
        ----------
        futures : iterable of distributed.Future
            This fit's futures.
        what : str
            What is waited on, for the error message (e.g. "the rounds' reports").
        fetch : bool, default=True
            Return the results (``client.gather``); False only waits
            (``distributed.wait``) and returns its answer.

        Returns
        -------
        list or DoneAndNotDoneFutures
            The results in the order of ``futures``, or ``wait``'s answer.

        Raises
        ------
        NoWorkersError
            The cluster had no worker for ``self.no_workers_timeout`` seconds
            (the futures are cancelled), or the scheduler's own
            ``distributed.scheduler.no-workers-timeout`` failed a task.
        SchedulerLostError
            The client lost its scheduler (or was closed).
        Exception
            A task's own error, as ``client.gather`` raises it.
        """
        futures = list(futures)
        if not futures:
            return []
        self._check_scheduler(what)
        call = self.client.gather if fetch else wait
        box = {}
        done = threading.Event()

        def waiter():
            try:
                box["value"] = call(futures)
            except BaseException as exc:  # handed to the fit's thread below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=waiter, name=f"daskdca-wait-{self.run_id}", daemon=True).start()
        since = None  # when the cluster was first seen without a worker in this wait
        while not done.wait(self.poll):
            self._check_scheduler(what)
            n_workers = self._n_workers()
            if n_workers:
                since = None
                self._unstick()
                continue
            if n_workers is None or self.no_workers_timeout is None:  # None: cannot tell, so no verdict
                continue
            now = time.monotonic()
            since = now if since is None else since
            if now - since >= self.no_workers_timeout:
                with contextlib.suppress(Exception):
                    self.client.cancel(futures)  # so the helper thread's wait ends too
                raise self._no_workers(what, now - since, self.no_workers_timeout)
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, concurrent.futures.CancelledError):
                self._check_scheduler(what, cause=exc)
            noworker = _scheduler_noworker_error()
            if noworker is not None and isinstance(exc, noworker):
                raise self._no_workers(what, exc.timeout, exc.timeout, own=False) from exc
            raise exc
        return box["value"]

    def _unstick(self):
        """Put this fit's tasks that wait in ``no-worker`` behind a soft pin to a gone worker back to scheduling.

        Dask's scheduler (up to 2026.8 at least) reschedules a ``no-worker``
        task with worker restrictions, when a worker joins, only if the
        restrictions name that worker, even with ``allow_other_workers=True``;
        so after every worker was gone at once (a nanny restart of the only
        worker: new address) the soft-pinned tasks waited forever beside the
        new worker.  Runs on the scheduler; where that is not allowed the
        executor stops trying.
        """
        if not self.can_unstick:
            return
        try:
            moved = self.client.run_on_scheduler(_unstick_function(), self.run_id)
        except Exception as exc:  # e.g. distributed.scheduler.pickle: false
            self.can_unstick = False
            logger.debug("daskdca: cannot reschedule soft-pinned tasks on the scheduler (%s)", exc)
            return
        if moved:
            logger.info("daskdca: %d tasks soft-pinned to a lost worker rescheduled on the workers alive", moved)

    def homes(self, what):
        """The placement's worker of each partition now (after checking that the scheduler is still there).

        Parameters
        ----------
        what : str
            What the fit waits on, for the message of a lost scheduler.

        Returns
        -------
        list
            One worker address per partition (None while no worker is
            alive).
        """
        self._check_scheduler(what)
        return self.placement.homes(self.client)

    def group_homes(self, what):
        """The placement's worker of each group of partitions now.

        Parameters
        ----------
        what : str
            What the fit waits on, for the message of a lost scheduler.

        Returns
        -------
        list
            One worker address per group (the worker of its first
            partition).
        """
        homes = self.homes(what)
        return [homes[ks[0]] for ks in self.placement.members]

    def _n_workers(self):
        """The number of workers the scheduler knows now; None when that cannot be asked."""
        try:
            try:
                info = self.client.scheduler_info(n_workers=0)
            except TypeError:  # distributed before n_workers=
                info = self.client.scheduler_info()
        except Exception:
            return None
        n = info.get("n_workers")
        return len(info.get("workers", {})) if n is None else int(n)

    def _saved(self):
        """``(round, sentence)``: the last complete checkpoint's round (or None) and what to do with it."""
        if self.checkpoint is None:
            return None, ("Nothing was saved: without checkpoint= the round states lived on the cluster. Fit "
                          "again from the start, with checkpoint=PATH (a folder every worker can write) to make "
                          "a fit resumable.")
        meta = _checkpoint_meta(self.checkpoint)
        if meta is None:
            return None, (f"checkpoint={self.checkpoint!r} holds no complete checkpoint yet (the first is written "
                          f"after {self.checkpoint_every} rounds), so resume=True has nothing to continue from: "
                          "fit again from the start.")
        return int(meta["round"]), (f"The checkpoint {self.checkpoint!r} holds round {meta['round']}: fit again "
                                    "with the same arguments and resume=True to continue from there.")

    def _no_workers(self, what, waited, timeout, own=True):
        ckpt_round, saved = self._saved()
        setting = (f"daskdca.no-workers-timeout = {timeout:g} s" if own else
                   f"the scheduler's own distributed.scheduler.no-workers-timeout = {timeout:g} s")
        return NoWorkersError(
            f"the Dask cluster of scheduler {self.scheduler_address} had no worker for {waited:.0f} s "
            f"({setting}) while the fit waited on {what} (rounds submitted: {self.submitted}); its workers are gone "
            f"and none came back (ended or preempted jobqueue jobs, killed worker processes, cluster.scale(0)). "
            f"{saved} Fix: give the cluster workers (cluster.scale(n); check the jobs' walltime and memory) before "
            f"fitting again; to wait longer for replacements, set e.g. "
            f"dask.config.set({{{NO_WORKERS_TIMEOUT_KEY!r}: '30 minutes'}}) (None waits forever).",
            timeout=timeout, scheduler_address=self.scheduler_address, checkpoint=self.checkpoint,
            checkpoint_round=ckpt_round)

    def _check_scheduler(self, what, cause=None):
        """Raise :class:`SchedulerLostError` when the client is no longer connected to its scheduler.

        On a lost connection Dask cancels every future of the client, so the
        fit cannot go on even when the client reconnects.
        """
        status = self.client.status
        if status == "running":
            return
        ckpt_round, saved = self._saved()
        raise SchedulerLostError(
            f"the Dask client lost its scheduler at {self.scheduler_address} (client status {status!r}) while "
            f"the fit waited on {what} (rounds submitted: {self.submitted}); Dask cancels every task of the fit "
            f"then. {saved} Fix: check that the scheduler is running and reachable (killed, out of memory, "
            "walltime), then fit again with a Client connected to a running scheduler.",
            scheduler_address=self.scheduler_address, checkpoint=self.checkpoint,
            checkpoint_round=ckpt_round) from cause

    # -- graph helpers
    def ctx(self, r, k):
        return Ctx(self.seed, r, k, len(self.parts))

    def tree(self, items, combine, name):
        def node(fn, children, level, index):
            return _delayed(fn, *children, name=f"{name}-l{level}-{index}")

        return tree_reduce(items, combine, node=node)

    def _compute(self, items):
        return self.client.compute(items, optimize_graph=False)

    # -- protocol of daskdca.driver.run_rounds
    def setup(self, method):
        return method.setup(self.info, _DaskOps(self))

    def init(self, plan):
        """Start the method's states on the cluster (from ``dual_init`` for a warm start).

        Parameters
        ----------
        plan : object
            The method's plan for the data.

        Returns
        -------
        G : distributed.Future
            The global state's future.
        Ls : list of distributed.Future
            One future per group of partitions (opaque to the round loop:
            each holds the states of its group's partitions, in order).
        """
        if self.dual_init is not None:
            return self._warm_init(plan, self.homes("the initial states"))
        homes = self.group_homes("the initial states")
        G = self.client.submit(_start, plan.init_global, key=f"daskdca-setup-{self.run_id}-global0", pure=False)
        Ls = [self.client.submit(_group_start, plan.init_local, tuple(self.ctx(0, k) for k in ks),
                                 *[self.parts[k] for k in ks], key=f"daskdca-setup-{self.run_id}-local0-g{g}",
                                 pure=False, **_pinned(homes[g]))
              for g, ks in enumerate(self.placement.members)]
        return G, Ls

    def _warm_init(self, plan, homes):
        """A warm start: each partition's slice of ``dual_init``, and ``w = X^T alpha / (lam n)`` by the
        certificate's tree reduction (as :meth:`daskdca.driver.InProcess.init`)."""
        name = f"daskdca-setup-{self.run_id}-warm"
        bounds = np.concatenate(([0], np.cumsum(self.info.partition_sizes)))
        alphas = [np.asarray(self.dual_init[..., a:b], dtype=np.float64) for a, b in zip(bounds[:-1], bounds[1:])]
        xt = [_delayed(xt_alpha_part, self.parts[k], alphas[k], self.info.lam_n, name=f"{name}-xt{k}",
                       worker=homes[k]) for k in range(len(self.parts))]
        w = self.tree(xt, sum_arrays, f"{name}-xtsum")
        G = _delayed(_start, plan.init_global_from, w, name=f"daskdca-setup-{self.run_id}-global0")
        Ls = [_delayed(_start, plan.init_local_from, self.parts[k], alphas[k], self.ctx(0, k),
                       name=f"daskdca-setup-{self.run_id}-local0-{k}", worker=homes[k])
              for k in range(len(self.parts))]
        groups = [_delayed(_group_of, *[Ls[k] for k in ks], name=f"daskdca-setup-{self.run_id}-local0-g{g}",
                           worker=homes[ks[0]]) for g, ks in enumerate(self.placement.members)]
        futures = self._compute(groups + [G])
        return futures[-1], futures[:-1]

    def rounds_until_checkpoint(self, r):
        return self.checkpoint_every - r % self.checkpoint_every

    def _reduce_groups(self, sent, name):
        """``(source, key)`` of the reduction total: the nodes of the fixed-order tree over all partitions
        that no group holds whole become tasks here, fed by the groups' nodes (``sent``).  ``key`` is None
        when ``source`` is the total itself, else the total is ``source[key]`` (one group holds it)."""
        # tree node -> (delayed that holds it, its key in that or None)
        have = {key: (sent[g], key) for g, keys in enumerate(self.placement.held) for key in keys}
        root = (0, 0)
        for root, children in tree_nodes(len(self.parts)):
            if root not in have and all(child in have for child in children):
                sources = [have[child] for child in children]
                have[root] = (_delayed(_tree_node, add_contributions, tuple(key for _, key in sources),
                                       *[source for source, _ in sources], name=f"{name}-l{root[0]}-{root[1]}"),
                              None)
        return have[root]

    def run(self, plan, G, Ls, r, n):
        """Submit ``n`` rounds as one graph.

        A round's last combine output carries its report.  A round is one local
        task per group (its partitions' local steps and the part of the
        reduction tree they decide), one task per group that passes those nodes
        on, the tree nodes that span groups, and the combine.

        Parameters
        ----------
        plan : object
            The method's plan for the data.
        G : distributed.Future
            A future of the global ``(state, payload)`` pair.
        Ls : list of distributed.Future
            One future of ``(states, payload)`` per group of partitions
            (module docstring).
        r : int
            The first round's index.
        n : int
            Rounds to submit.

        Returns
        -------
        G : distributed.Future
            The new global pair's future.
        Ls : list of distributed.Future
            The new pairs of the groups.
        report : distributed.Future
            The future of the rounds' merged report.
        """
        n_groups = len(self.placement.members)
        ends = []
        self.submitted = r + n
        for j in range(n):
            rnd = r + j
            homes = self.group_homes(f"round {rnd}")
            for phase in plan.phases():
                tag = f"{self.run_id}-r{rnd}-{phase.name}"
                Ls = [_delayed(_group_local_task, phase.local, ks[0], len(self.parts),
                               tuple(self.ctx(rnd, k) for k in ks), G, Ls[g], *[self.parts[k] for k in ks],
                               name=f"daskdca-round-{tag}-g{g}", worker=homes[g])
                      for g, ks in enumerate(self.placement.members)]
                sent = [_delayed(_sent, out, name=f"daskdca-round-{tag}-send{g}", worker=homes[g])
                        for g, out in enumerate(Ls)]
                total, key = self._reduce_groups(sent, f"daskdca-reduce-{tag}")
                G = _delayed(_combine_task, phase.combine, G, key, total, self.ctx(rnd, -1),
                             name=f"daskdca-combine-{tag}")
            ends.append(G)
        report = _delayed(_merge_reports, *ends, name=f"daskdca-combine-{self.run_id}-r{r}-report{n}")
        futures = self._compute(Ls + [G, report])
        return futures[n_groups], futures[:n_groups], futures[n_groups + 1]

    def reports(self, handles):
        return [RoundReport(*rep) for rep in self.gather(handles, "the rounds' reports")] if handles else []

    def fetch(self, value):
        """The state of an output pair (a future on the cluster).

        Parameters
        ----------
        value : distributed.Future or tuple
            An output pair ``(state, payload)``, or a future of one.

        Returns
        -------
        object
            The pair's state, gathered into this process.
        """
        return (self.gather([value], "a state")[0] if hasattr(value, "result") else value)[0]

    def hold(self, state):
        """A global state made in this process, as the future of an output pair (what :meth:`fetch` reverses).

        Parameters
        ----------
        state : NamedTuple
            The global state.

        Returns
        -------
        distributed.Future
            The future of the pair ``(state, None)``.
        """
        return self.client.submit(partial(_restart, state), key=f"daskdca-hold-{self.run_id}-{uuid.uuid4().hex[:6]}",
                                  pure=False)

    def _per_partition(self, Ls, name):
        """Delayed output pairs of each partition, picked out of the groups' futures ``Ls``."""
        return [_delayed(_member, Ls[g], j, name=f"{name}-member{k}")
                for g, ks in enumerate(self.placement.members) for j, k in enumerate(ks)]

    def _dual_points(self, plan, G, Ls, name):
        outs = self._per_partition(Ls, name)
        return [_delayed(_dual_point_task, plan.dual_point, self.parts[k], outs[k], G, name=f"{name}-dual{k}")
                for k in range(len(self.parts))]

    def dual_points(self, plan, G, Ls):
        name = f"daskdca-certify-{self.run_id}-{uuid.uuid4().hex[:6]}"
        return in_caller_order(np.concatenate(
            self.gather(self._compute(self._dual_points(plan, G, Ls, name)), "the dual point"), axis=-1),
            self.row_order)

    def certify(self, plan, G, Ls):
        """Certify the states: ``w(alpha)`` rebuilt from the dual point on the cluster, then one more pass.

        Parameters
        ----------
        plan : object
            The method's plan for the data.
        G : distributed.Future
            The global pair's future.
        Ls : list of distributed.Future
            The groups' pairs.

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
        info, K = self.info, len(self.parts)
        name = f"daskdca-certify-{self.run_id}-{uuid.uuid4().hex[:6]}"
        alphas = self._dual_points(plan, G, Ls, name)
        xt = [_delayed(xt_alpha_part, self.parts[k], alphas[k], info.lam_n, name=f"{name}-xt{k}") for k in range(K)]
        w_alpha = self.tree(xt, sum_arrays, f"{name}-xtsum")
        w = w_alpha if plan.primal_from_dual else _delayed(_model_task, plan.model, G, name=f"{name}-model")
        sums = [_delayed(objective_sums_part, self.parts[k], alphas[k], w, info.loss, name=f"{name}-obj{k}")
                for k in range(K)]
        total = self.tree(sums, sum_arrays, f"{name}-objsum")
        futures = self._compute([w_alpha, w, total] + alphas)
        w_alpha_v, w_v, total_v = self.gather(futures[:3], "the certificate")
        # the dual point leaves the workers here
        alpha = np.concatenate(self.gather(futures[3:], "the dual point"), axis=-1)
        primal, dual = objectives(info, total_v, np.asarray(w_v, dtype=np.float64), w_alpha_v,
                                  getattr(plan, "l1_ratio", 0.0))
        return np.asarray(w_v, dtype=np.float64), in_caller_order(alpha, self.row_order), primal, dual

    def after_rounds(self, plan, G, Ls, r, epochs, history):
        if r % self.checkpoint_every:
            return G, Ls
        if self.checkpoint is None:
            return self._restart_from_copy(G, Ls, r)
        return self._write_checkpoint(G, Ls, r, epochs, history)

    def finish(self, plan, G, Ls, r, epochs, history):
        if self.checkpoint is not None:
            self._write_checkpoint(G, Ls, r, epochs, history)

    def _restart_from_copy(self, G, Ls, r):
        """Without a checkpoint path: copy the states through this process and restart the chains from tasks
        that hold the copies (the scheduler keeps a task's arguments, so a lost state is recomputed from
        them, and the lineage before them is forgotten)."""
        name = f"daskdca-checkpoint-{self.run_id}-r{r}"
        states = self.gather([self.client.submit(_state_of, out, key=f"{name}-copy{k}", pure=False)
                              for k, out in enumerate([G] + Ls)], f"the states of round {r}")
        local = [state for group in states[1:] for state in group]  # one per partition, in order
        self._regroup(r)
        states = states[:1] + [tuple(local[k] for k in ks) for ks in self.placement.members]
        homes = self.group_homes(f"the states of round {r}")
        # the states travel inside the tasks on purpose: that copy is what makes them recomputable
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "16 GiB"}):
            G = self.client.submit(partial(_restart, states[0]), key=f"{name}-G", pure=False)
            Ls = [self.client.submit(partial(_restart, state), key=f"{name}-{k}", pure=False, **_pinned(homes[k]))
                  for k, state in enumerate(states[1:])]
        return G, Ls

    def _write_checkpoint(self, G, Ls, r, epochs, history):
        """Write the states to the next slot, mark it complete, restart the chains from it."""
        url = self.checkpoint
        old = _checkpoint_meta(url)
        slot = f"slot{(int(old['slot'][-1]) + 1) % 2 if old else 0}"
        name = f"daskdca-checkpoint-{self.run_id}-r{r}"
        members = self.client.compute(self._per_partition(Ls, name), optimize_graph=False)
        writes = [self.client.submit(_save_state, L, url, f"{slot}_local{k}", key=f"{name}-save{k}", pure=False)
                  for k, L in enumerate(members)]
        writes.append(self.client.submit(_save_state, G, url, f"{slot}_global", key=f"{name}-saveG", pure=False))
        classes = self.gather(writes, f"the checkpoint of round {r}")
        _mark_complete(url, slot=slot, round_index=r, n_epochs=epochs, signature=self.signature,
                       local_class=classes[0], global_class=classes[-1], history=history)
        # The new chains depend on the checkpoint only (not on the writes), so the
        # scheduler can forget the lineage before it; a lost partition is re-read.
        G, Ls = self._load(slot, classes[-1], classes[0], f"{name}-load")
        self._regroup(r)
        return G, self._grouped(Ls, f"{name}-load")

    def _load(self, slot, global_class, local_class, name):
        """The global state's future and one future per partition, read from the checkpoint's ``slot``."""
        homes = self.homes("the checkpoint's states")
        Ls = [self.client.submit(_start, _load_state, self.checkpoint, f"{slot}_local{k}", local_class,
                                 key=f"{name}{k}", pure=False, **_pinned(homes[k]))
              for k in range(len(self.parts))]
        G = self.client.submit(_start, _load_state, self.checkpoint, f"{slot}_global", global_class, key=f"{name}G",
                               pure=False)
        return G, Ls

    def _regroup(self, r):
        """Group the partitions for the worker threads alive now, when their number changed since the grouping."""
        try:
            n_slots = len(_thread_slots(self.client))
        except Exception:  # the scheduler cannot be asked now: keep the grouping (the next wait reports why)
            return
        if n_slots and n_slots != self.placement.n_slots:
            logger.info("daskdca: %d worker threads now (%d before); from round %d the %d partitions run in "
                        "%d groups", n_slots, self.placement.n_slots, r, len(self.parts), min(n_slots, len(self.parts)))
            self.placement = _Placement(len(self.parts), n_slots)

    def _grouped(self, Ls, name):
        """One future per group from one per partition (the partitions' output pairs)."""
        homes = self.group_homes("the checkpoint's states")
        return [self.client.submit(_group_of, *[Ls[k] for k in ks], key=f"{name}-g{g}", pure=False,
                                   **_pinned(homes[g])) for g, ks in enumerate(self.placement.members)]

    def resume(self, plan):
        """Load the last complete checkpoint onto the workers, checked against ``plan``.

        Parameters
        ----------
        plan : object
            The method's plan for the data.

        Returns
        -------
        G : distributed.Future
            The global pair's future.
        Ls : list of distributed.Future
            The groups' pairs.
        round : int
            The checkpoint's round.
        n_epochs : float
            Passes over the data up to it.
        history : list of HistoryRecord
            The records of the fit up to it.
        """
        url = self.checkpoint
        meta = _resumable_meta(url, self.signature)
        name = f"daskdca-checkpoint-{self.run_id}-resume"
        G, Ls = self._load(meta["slot"], meta["global_class"], meta["local_class"], name)
        G = self.client.submit(_check_resumed, G, plan.init_global(), f"checkpoint {url!r}, global state",
                               key=f"{name}-checkG", pure=False)
        homes = self.homes("the checkpoint's states")
        Ls = [self.client.submit(_check_resumed_local, plan, self.parts[k], Ls[k], G, self.ctx(0, k),
                                 self.info, f"checkpoint {url!r}, partition {k}", key=f"{name}-check{k}",
                                 pure=False, **_pinned(homes[k]))
              for k in range(len(self.parts))]
        # the states stay on the workers; a damaged checkpoint raises here, naming what is wrong
        self.gather([G] + Ls, "the checkpoint's states", fetch=False)
        for future in [G] + Ls:
            if future.status == "error":
                future.result()
        history = _history_of(meta)
        logger.info("daskdca: resuming from %s at round %d", url, meta["round"])
        self.submitted = int(meta["round"])
        return G, self._grouped(Ls, name), int(meta["round"]), float(meta["n_epochs"]), history
