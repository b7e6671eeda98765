"""The Dask executor: any method's rounds over store partitions on a cluster.

This is the only module that imports Dask, and it names no method: it runs
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
of each group's previous round (spec ``dask-zarr-numba.md`` §2: futures, not
actors) and come back once, at the end.  A group's output is the pair
``(states', nodes)`` and a combine's the pair ``(G', report)``.  The next
round's local task reads the state half where it lies; one small task per
group, on its worker, passes the nodes on, so only they travel to the
reduction.  Partitions are loaded by tasks that read the store on the worker
(a lost partition is re-read), and every random stream derives from
``(random_state, round, partition)``, so a replayed task gives the same bits.
The certificate and the checkpoint pick single partitions' states out of
the groups.  Every ``checkpoint_every`` rounds the chains restart from a
copy of the states (bounded lineage, spec Appendix A): with
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
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import itertools
import logging
import os
import threading
import time
import uuid
from functools import partial

import dask
import numpy as np
import zarr
from distributed import wait
from distributed.diagnostics.plugin import WorkerPlugin

from daskdca.driver import HistoryRecord, run_rounds, sum_arrays
from daskdca.kernels import warm_up
from daskdca.methods.base import (
    Ctx,
    DataInfo,
    Ops,
    RoundReport,
    add_contributions,
    tree_nodes,
    tree_reduce,
    tree_reduce_within,
)
from daskdca.partitions import (
    OneVsRestPartition,
    StorePartition,
    gram_matvec_part,
    objective_sums_part,
    sqnorm_sum_part,
    store_partition_ranges,
    xt_alpha_part,
)
from daskdca.problem import objectives

logger = logging.getLogger("daskdca")

__all__ = ["ClusterLostError", "DaskExecutor", "NoWorkersError", "SchedulerLostError", "cluster_client",
           "configured_no_workers_timeout", "fit_on_cluster", "local_client"]

# Chains restart from a checkpoint this often unless told otherwise: between
# restarts the scheduler keeps every round's task states (spec §2.4).
DEFAULT_CHECKPOINT_EVERY = 10
CHECKPOINT_FORMAT = 2

# How long a fit waits for a worker when the cluster has none (Dask config key, a timedelta such as
# "10 minutes" or 600, None: forever).  Long enough for a nanny restart or a replaced jobqueue job.
NO_WORKERS_TIMEOUT_KEY = "daskdca.no-workers-timeout"
DEFAULT_NO_WORKERS_TIMEOUT = "10 minutes"


class ClusterLostError(RuntimeError):
    """A cluster fit stopped because its cluster went away; the base of the two cases below.

    Attributes
    ----------
    scheduler_address : str or None
        The address of the scheduler the fit ran on.
    checkpoint : str or None
        The ``checkpoint=`` path of the fit (None without one).
    checkpoint_round : int or None
        The round of the last complete checkpoint at ``checkpoint`` (what
        ``resume=True`` continues from), None when there is none.
    """

    def __init__(self, message, *, scheduler_address=None, checkpoint=None, checkpoint_round=None):
        super().__init__(message)
        self.scheduler_address = scheduler_address
        self.checkpoint = checkpoint
        self.checkpoint_round = checkpoint_round


class NoWorkersError(ClusterLostError):
    """The cluster had no worker for longer than ``daskdca.no-workers-timeout`` while the fit waited on it.

    Attributes
    ----------
    timeout : float
        The seconds waited without a worker.
    """

    def __init__(self, message, *, timeout, **kwargs):
        super().__init__(message, **kwargs)
        self.timeout = timeout


class SchedulerLostError(ClusterLostError):
    """The client lost its connection to the scheduler (or was closed) during the fit."""


def configured_no_workers_timeout():
    """The seconds a cluster fit waits for a worker while it has none (None: forever).

    Read from the Dask config key ``daskdca.no-workers-timeout`` (default
    ``"10 minutes"``), e.g. ``dask.config.set({"daskdca.no-workers-timeout":
    "30 minutes"})`` or the environment variable
    ``DASK_DASKDCA__NO_WORKERS_TIMEOUT``.

    Returns
    -------
    float or None
        Seconds, or None when the key is set to None (wait forever).

    Raises
    ------
    ValueError
        When the value is not a finite duration >= 0.
    """
    from dask.utils import parse_timedelta

    value = dask.config.get(NO_WORKERS_TIMEOUT_KEY, DEFAULT_NO_WORKERS_TIMEOUT)
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", "")):
        return None
    try:
        seconds = parse_timedelta(value, default="seconds")
    except Exception:  # parse_timedelta raises TypeError, ValueError, KeyError or AttributeError
        seconds = None
    if seconds is None or not np.isfinite(seconds) or seconds < 0:
        raise ValueError(f"the Dask config {NO_WORKERS_TIMEOUT_KEY}={value!r} is not a finite duration >= 0; set "
                         "it to seconds or a string such as '10 minutes' (None waits forever), e.g. "
                         f"dask.config.set({{{NO_WORKERS_TIMEOUT_KEY!r}: '10 minutes'}}).")
    return float(seconds)


def _unstick_function():
    """The scheduler-side half of :meth:`DaskExecutor._unstick`, made here so that it pickles by value
    (the scheduler need not import daskdca)."""

    def unstick(run_id, dask_scheduler=None):
        s = dask_scheduler
        if not s.running:
            return 0
        tag = f"-{run_id}-"
        stuck = [ts.key for ts in s.unrunnable if ts.loose_restrictions and tag in str(ts.key)]
        if stuck:
            import time as _time

            s.transitions({key: "processing" for key in stuck}, stimulus_id=f"daskdca-unstick-{_time.time()}")
        return len(stuck)

    return unstick


def _scheduler_noworker_error():
    """The exception type Dask's own ``distributed.scheduler.no-workers-timeout`` fails tasks with (or None)."""
    with contextlib.suppress(ImportError):
        from distributed.scheduler import NoWorkerError

        return NoWorkerError
    return None


class _WarmUp(WorkerPlugin):
    """Worker plugin: compile (or load from cache) the numba kernels once per worker.

    Registered once per fit (idempotent by name); workers that join later
    (adaptive scaling, jobqueue) run it too.
    """

    name = "daskdca-warm-up"

    def setup(self, worker):
        warm_up()


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


# --- the tasks of a round: outputs are (state, payload) pairs ---------------

def _start(make, *args):
    """Task: a fresh or loaded state, as the ``(state, None)`` pair the round tasks chain on."""
    return make(*args), None


def _held(value):
    """Task: a value that travels inside the task (the scheduler keeps it, so the task can rerun)."""
    return value


def _restart(state):
    """Task: a state copied through the driver, as a pair; the task itself holds the copy."""
    return state, None


def _state_of(out):
    return out[0]


def _group_start(make, ctxs, *parts):
    """Task: a group's fresh local states, as the ``(states, None)`` pair its round tasks chain on."""
    return tuple(make(part, ctx) for part, ctx in zip(parts, ctxs)), None


def _group_of(*outs):
    """Task: the states of single partitions' output pairs as one group's pair."""
    return tuple(out[0] for out in outs), None


def _member(group_out, j):
    """Task: the output pair of a group's ``j``-th partition."""
    return group_out[0][j], None


def _group_local_task(local, first, n_partitions, ctxs, G_out, L_out, *parts):
    """Task: the local steps of a group's partitions, in order, and the part of the reduction tree they decide.

    Returns ``(states', nodes)``: the new local states, and the largest nodes
    of the fixed-order reduction tree over all partitions whose partitions
    all lie in this group (:func:`~daskdca.methods.base.tree_reduce_within`),
    so the total has the bits of one task per partition.
    """
    states, contributions = [], []
    for part, state, ctx in zip(parts, L_out[0], ctxs):
        state, contribution = local(part, state, G_out[0], ctx)
        states.append(state)
        contributions.append(contribution)
    return tuple(states), tree_reduce_within(contributions, first, n_partitions, add_contributions)


def _sent(out):
    """Task, on the group's worker: the reduction nodes of a local output, so that only they travel on
    (the output also holds the partitions' local states, e.g. their duals)."""
    return out[1]


def _tree_node(combine, keys, *sources):
    """Task: one node of the reduction tree that spans groups; a child is ``sources[j][keys[j]]`` (a group's
    node) or ``sources[j]`` itself (another such node) where ``keys[j]`` is None."""
    return combine(*[source if key is None else source[key] for key, source in zip(keys, sources)])


def _combine_task(combine, G_out, key, total, ctx):
    """Task: the combine on the global state (``total[key]`` where ``key`` is a group's node); returns
    ``(G', report)``."""
    return combine(G_out[0], total if key is None else total[key], ctx)


def _dual_point_task(dual_point, part, L_out, G_out):
    return dual_point(part, L_out[0], G_out[0])


def _model_task(model, G_out):
    return model(G_out[0])


def _pinned(home):
    """``submit`` options that soft-pin a task to ``home`` (none while no worker is alive)."""
    return {"workers": [home], "allow_other_workers": True} if home else {}


def _no_combine(*children):
    """A combine that computes nothing: :func:`tree_reduce_within` on placeholders tells which nodes a group holds."""
    return None


def _merge_reports(first, *rest):
    """Task: the first round's report (from its combine's output) with the steps of every round."""
    report = first[1]
    return report._replace(steps=report.steps + sum(out[1].steps for out in rest))


def _thread_slots(client):
    """One entry per worker thread of the cluster now: each worker's address, ``nthreads`` times, sorted."""
    workers = client.scheduler_info().get("workers", {})
    return [address for address in sorted(workers) for _ in range(max(1, int(workers[address].get("nthreads") or 1)))]


class _Placement:
    """Which worker thread each partition runs on: contiguous runs of partitions, one per thread.

    Partition ``k`` is in group ``k * S // K`` (S worker threads at the start,
    K partitions); each round the groups are mapped onto the threads alive
    then (:func:`_thread_slots`), and each group's local steps run as one
    task, so a worker with several threads runs several groups at once.
    When the number of threads has changed, the executor regroups at the
    next copy of the states (every ``checkpoint_every`` rounds), so workers
    that join later (adaptive scaling, jobqueue jobs that start late) get
    partitions.  Placement and grouping only steer where and in which tasks
    the work runs: the reduction tree is fixed by partition order, so no bit
    depends on them.
    """

    def __init__(self, n_partitions, n_slots):
        self.n_slots = n_slots
        self.groups = [k * n_slots // n_partitions for k in range(n_partitions)]
        # the partitions of each (non-empty) group, in order: each round runs one task per group
        self.members = [[k for k in range(n_partitions) if self.groups[k] == g] for g in sorted(set(self.groups))]
        # the nodes of the reduction tree each group's task computes whole (placeholders: only the keys matter)
        self.held = [list(tree_reduce_within([None] * len(ks), ks[0], n_partitions, _no_combine))
                     for ks in self.members]

    def homes(self, client):
        """The worker of each partition now (None while no worker is alive)."""
        slots = _thread_slots(client)
        if not slots:
            return [None] * len(self.groups)
        return [slots[g % len(slots)] for g in self.groups]


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


# --- checkpoints: the fields of every state, generically --------------------

def _class_path(obj):
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


def _class_from_path(path):
    module, _, name = path.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _save_state(out, url, prefix):
    """Task: write each field of the NamedTuple state of ``out`` as a zarr array; returns its class path."""
    state = out[0]
    group = zarr.open_group(url, mode="a")
    for field in state._fields:
        values = np.asarray(getattr(state, field))
        scalar = values.ndim == 0
        if scalar:  # a 0-d field (e.g. a step size) is stored as one element
            values = values.reshape(1)
        arr = group.create_array(f"{prefix}_{field}", shape=values.shape, dtype=values.dtype, overwrite=True,
                                 chunks=tuple(max(1, min(s, 2**20)) for s in values.shape))
        arr[...] = values
        arr.attrs["daskdca_scalar"] = scalar
    return _class_path(state)


def _load_state(url, prefix, class_path):
    """Task: the state written by :func:`_save_state`, with the shapes it was written with."""
    cls = _class_from_path(class_path)
    group = zarr.open_group(url, mode="r")
    names = [f"{prefix}_{f}" for f in cls._fields]
    missing = [name for name in names if name not in group]
    if missing:
        raise ValueError(f"checkpoint {url!r} is missing the arrays {missing}; it is damaged. "
                         "Start a new fit (resume=False) or use another checkpoint path.")
    fields = []
    for name in names:
        arr = group[name]
        values = arr[...]
        fields.append(values.reshape(()) if arr.attrs.get("daskdca_scalar", False) else values)
    return cls(*fields)


def _check_resumed(out, fresh, where):
    """Task: a loaded state (in its output pair) against a freshly initialised one of the same plan; returns ``out``.

    Every float field must be finite, and one that starts with values (duals,
    ``w``, row norms) keeps its initial shape; a field that starts empty (a
    round's pending steps) and an integer or boolean field (an active set, a
    batch) keep their rank.
    """
    state = out[0]
    if type(state) is not type(fresh):
        raise ValueError(f"{where} holds a {type(state).__name__}, this fit's method keeps a "
                         f"{type(fresh).__name__}; the checkpoint is damaged. Start a new fit (resume=False).")
    for field, value, init in zip(state._fields, state, fresh):
        value, init = np.asarray(value), np.asarray(init)
        bad = value.ndim != init.ndim
        if value.dtype.kind == "f":
            bad = bad or (init.size and value.shape != init.shape) or not np.all(np.isfinite(value))
        if bad or value.dtype.kind != init.dtype.kind:
            raise ValueError(f"{where}: field {field!r} has shape {value.shape} and dtype {value.dtype} "
                             f"(the method starts it as {init.shape}, {init.dtype}, finite); the checkpoint is "
                             "damaged. Start a new fit (resume=False) or use another checkpoint path.")
    return out


def _check_resumed_local(plan, part, L_out, G_out, ctx, info, where):
    """Task: the loaded local state, checked like :func:`_check_resumed` and its dual point in the
    loss's dual domain (a finite conjugate), so the certificate of the resumed fit means something."""
    L_out = _check_resumed(L_out, plan.init_local(part, ctx), where)
    alpha = plan.dual_point(part, L_out[0], G_out[0])
    conj_sum = objective_sums_part(part, alpha, np.zeros(np.shape(alpha)[:-1] + (info.d,)), info.loss)[..., 1]
    if not np.all(np.isfinite(conj_sum)):
        raise ValueError(f"{where}: the dual variables lie outside the dual domain of the {info.loss.name} loss "
                         "(an infinite conjugate); the checkpoint is damaged. Start a new fit (resume=False).")
    return L_out


def _probe_path(url, token):
    """Worker task: read the driver's probe file under ``url`` and write one of its own; None or the error."""
    try:
        with open(os.path.join(url, f".daskdca-probe-{token}")) as f:
            if f.read() != token:
                return f"{url!r} holds a different probe file here: not the folder this process writes"
        mine = os.path.join(url, f".daskdca-probe-{token}-{uuid.uuid4().hex[:8]}")
        with open(mine, "w") as f:
            f.write(token)
        os.remove(mine)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _check_workers_share(client, url):
    """Every worker can read what this process writes under the local checkpoint folder ``url``, and write there.

    The workers write the checkpoint and read it back, so a folder they cannot
    see would fail only mid-fit.
    """
    if "://" in str(url) or not os.path.isdir(url):
        return  # an fsspec URL is shared by definition; a missing folder fails in resume's own check
    token = uuid.uuid4().hex
    probe = os.path.join(url, f".daskdca-probe-{token}")
    with open(probe, "w") as f:
        f.write(token)
    try:
        answers = client.run(_probe_path, url, token)
    finally:
        os.remove(probe)
    failed = {worker: error for worker, error in answers.items() if error}
    if failed:
        raise ValueError(f"checkpoint={url!r}, but {len(failed)} of {len(answers)} workers cannot use it "
                         f"({'; '.join(f'{w}: {e}' for w, e in sorted(failed.items()))}); give a path on a file "
                         "system shared by this process and every worker (or no checkpoint: the round state "
                         "then stays in Dask).")


def _checkpoint_meta(url):
    with contextlib.suppress(Exception):
        meta = zarr.open_group(url, mode="r").attrs.asdict().get("daskdca_checkpoint")
        if isinstance(meta, dict) and meta.get("complete"):
            return meta
    return None


def _prepare_checkpoint(url):
    """Refuse a local folder that holds anything but a daskdca checkpoint (it would be overwritten)."""
    if "://" in str(url) or not os.path.exists(url):
        return
    if not os.path.isdir(url):
        raise ValueError(f"checkpoint={url!r} is a file; give a directory path for the checkpoint.")
    if os.listdir(url) and _checkpoint_meta(url) is None:
        raise ValueError(
            f"checkpoint={url!r} is a folder that holds other files, not a daskdca checkpoint; "
            "daskdca will not write into it. Give a new or empty folder.")


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

    ``no_workers_timeout``: seconds to wait for a worker while the cluster
    has none (None: forever); by default :func:`configured_no_workers_timeout`.
    """

    # rounds are futures: the driver submits the next stretch before it reads a report, so the workers
    # need not wait for this process between rounds
    lookahead = True

    def __init__(self, client, parts, info: DataInfo, random_state, *, placement, run_id, checkpoint,
                 checkpoint_every, signature, dual_init=None, no_workers_timeout=_FROM_CONFIG):
        self.client, self.parts, self.info, self.seed = client, parts, info, int(random_state)
        self.placement, self.run_id = placement, run_id
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.signature = signature
        self.dual_init = dual_init  # the store's row order; None: the method's own start
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
        """The placement's worker of each partition now (after checking that the scheduler is still there)."""
        self._check_scheduler(what)
        return self.placement.homes(self.client)

    def group_homes(self, what):
        """The placement's worker of each group of partitions now."""
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
        """``(G, Ls)``: the global state's future and one future per group of partitions (``Ls`` stays opaque
        to the round loop: each holds the states of its group's partitions, in order)."""
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
        """Submit ``n`` rounds as one graph; returns futures of the new state pairs and of the merged report.

        ``G`` is a future of a ``(state, payload)`` pair and ``Ls`` one of
        ``(states, payload)`` per group of partitions (module docstring); a
        round's last combine output carries its report.  A round is one local
        task per group (its partitions' local steps and the part of the
        reduction tree they decide), one task per group that passes those nodes
        on, the tree nodes that span groups, and the combine.
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
        """The state of an output pair (a future on the cluster)."""
        return (self.gather([value], "a state")[0] if hasattr(value, "result") else value)[0]

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
        return np.concatenate(self.gather(self._compute(self._dual_points(plan, G, Ls, name)), "the dual point"),
                              axis=-1)

    def certify(self, plan, G, Ls):
        """``(w, alpha, P, D)``: ``w(alpha)`` rebuilt from the dual point on the cluster, then one more pass."""
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
        return np.asarray(w_v, dtype=np.float64), alpha, primal, dual

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
        g = zarr.open_group(url, mode="a")
        g.attrs["daskdca_checkpoint"] = {
            "format": CHECKPOINT_FORMAT, "complete": True, "slot": slot, "round": r, "n_epochs": epochs,
            "signature": self.signature, "local_class": classes[0], "global_class": classes[-1],
            "history": [[np.asarray(value).tolist() for value in rec] for rec in history]}
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
        """``(G, Ls, round, n_epochs, history)`` from the last complete checkpoint, checked against ``plan``."""
        url = self.checkpoint
        meta = _checkpoint_meta(url)
        if meta is None:
            raise ValueError(f"resume=True but {url!r} holds no complete daskdca checkpoint; "
                             "run once with checkpoint=PATH first.")
        if meta.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"checkpoint {url!r} has format {meta.get('format')!r}, this daskdca writes "
                             f"{CHECKPOINT_FORMAT}; start a new fit (resume=False).")
        if meta["signature"] != self.signature:
            differ = sorted(k for k in set(meta["signature"]) | set(self.signature)
                            if meta["signature"].get(k) != self.signature.get(k))
            raise ValueError(f"checkpoint {url!r} belongs to a different fit (these differ: {differ}); "
                             "use the same data, loss, lam, solver and random_state, or a new path.")
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
        # a one-vs-rest fit's records hold lists (one value per problem), which become arrays again
        history = [HistoryRecord(*(np.asarray(v) if isinstance(v, list) else v for v in rec))
                   for rec in meta["history"]]
        logger.info("daskdca: resuming from %s at round %d", url, meta["round"])
        self.submitted = int(meta["round"])
        return G, self._grouped(Ls, name), int(meta["round"]), float(meta["n_epochs"]), history


def _store_fingerprint(store):
    """What identifies the data of a store: shape, block boundaries and stored checksums."""
    attrs = getattr(store, "attrs", None) or store.group.attrs.asdict().get("daskdca", {})
    checksums = attrs.get("block_checksums")
    return {"n": store.n, "d": store.d, "blocks": [int(x) for x in store.block_row_offsets],
            "checksums": checksums}


def fit_on_cluster(store, *, client, method, loss, lam, positive_label, tol, max_rounds, random_state, n_partitions,
                   in_memory, checkpoint, checkpoint_every, resume, verbose, callback, dual_init=None,
                   store_is_local=False, problems=None):
    """Run ``method`` over partitions of the store on the client's cluster.

    See :func:`daskdca.fit` for the parameters (``dual_init`` checked, in the
    store's row order); ``store`` is a complete
    store, ``positive_label`` the label that maps to +1 (None for the
    squared loss, and for a one-vs-rest fit, whose ``problems`` is a
    :class:`~daskdca.partitions.OneVsRest` of the store's label values and
    ``method`` a one-vs-rest method), ``n_partitions`` the number of contiguous runs of blocks
    (None: one per block), ``in_memory`` whether partitions stay in worker
    memory.  ``store_is_local``: the store is a staging copy that only this
    process can see (in-memory arrays); the partitions are read here and
    travel to the workers inside the tasks that hold them (which the
    scheduler can rerun), so no worker reads that path.  Returns a
    :class:`daskdca.driver.FitResult` in the store's row and feature order.

    A cluster left without workers for ``daskdca.no-workers-timeout`` (Dask
    config, default 10 minutes) raises :class:`NoWorkersError`, a client that
    lost its scheduler :class:`SchedulerLostError` (both
    :class:`ClusterLostError`, a RuntimeError); each names the last complete
    checkpoint (``resume=True`` continues from it) and the fix.
    """
    ranges = store_partition_ranges(store.n_blocks, n_partitions or store.n_blocks)
    K = len(ranges)
    run_id = uuid.uuid4().hex[:8]
    wait_for_workers = configured_no_workers_timeout()  # a bad setting fails here, before any work
    n_workers = _check_workers(client)
    client.register_plugin(_WarmUp(), name=_WarmUp.name)
    if store_is_local:
        if in_memory is False:
            raise ValueError("in_memory=False needs the data in a store every worker can read; in-memory "
                             "arrays go to the workers' memory. Write them with daskdca.write_store to a "
                             "shared path and fit that store out of core.")
        in_memory = True
    if in_memory is None:
        limits = [w.get("memory_limit") or 0 for w in client.scheduler_info()["workers"].values()]
        raw = store.nnz * (store.group["data"].dtype.itemsize + store.group["indices"].dtype.itemsize) + 24 * store.n
        # keep partitions in memory when they take under half the cluster's memory
        in_memory = not all(limits) or raw < 0.5 * sum(limits)
    offsets = store.block_row_offsets
    sizes = tuple(int(offsets[b] - offsets[a]) for a, b in ranges)
    column_nnz = store.column_nnz  # checksummed
    info = DataInfo(n=store.n, d=store.d, partition_sizes=sizes, loss=loss, lam=lam,
                    max_column_nnz=int(column_nnz.max(initial=0)))
    placement = _Placement(K, len(_thread_slots(client)))
    sources = [StorePartition(store, a, b, positive_label) for a, b in ranges]
    if problems is not None:
        sources = [OneVsRestPartition(src, problems) for src in sources]
    if store_is_local:
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
    if ckpt is not None and not resume:
        _prepare_checkpoint(ckpt)
        if "://" not in ckpt:
            os.makedirs(ckpt, exist_ok=True)
    signature = {"data": _store_fingerprint(store), "loss": repr(loss), "lam": lam,
                 "solver": repr(method) + ("" if problems is None else f" one-vs-rest {problems!r}"),
                 "random_state": random_state, "n_partitions": K}
    executor = DaskExecutor(client, parts, info, random_state, placement=placement, run_id=run_id,
                            checkpoint=ckpt, checkpoint_every=checkpoint_every, signature=signature,
                            dual_init=dual_init, no_workers_timeout=wait_for_workers)
    if ckpt is not None:
        _check_workers_share(client, ckpt)
    plan = executor.setup(method)
    start = executor.resume(plan) if resume else None
    if start is None and ckpt is not None:
        # a fresh fit replaces an old checkpoint at that path (only a daskdca one, checked above);
        # the group is created here so that writer tasks only ever create their own arrays
        zarr.open_group(ckpt, mode="w")
    return run_rounds(executor, plan, tol=tol, max_rounds=max_rounds, callback=callback, verbose=verbose,
                      start=start)
