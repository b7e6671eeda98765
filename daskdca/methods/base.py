"""The method protocol: what every solver is, and the only thing the drivers know.

Every method solves

    min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2

by rounds.  A round is a sequence of *phases*; a phase is

1. ``local(partition, local_state, global_state, ctx) -> (local_state', Contribution)``
   on every partition (numba work, on the worker that holds the partition);
2. an associative reduce of the contributions, :func:`add_contributions`,
   always summed in the fixed tree order of :func:`tree_reduce`, so that every
   bit of the result is independent of where and when the tasks ran;
3. ``combine(global_state, total, ctx) -> (global_state', RoundReport)``, one
   small task on the global state.

A method object (``SDCA()``, ``CoCoAPlus(...)``, ...) holds the user's
settings; :meth:`setup` resolves the data constants (``sigma^2``, ``beta``,
``sigma'``, batch sizes) once, through an :class:`Ops` object whose reductions
run in process or as Dask tree reductions with the same arithmetic, and
returns a *plan*: the object whose ``phases()``, ``init_global``,
``init_local``, ``model`` and ``dual_point`` the drivers call.  States are
typed NamedTuples of ndarrays and numbers, so checkpoints store their fields
generically.

A local step may run threads of its own, at most :func:`current_thread_budget`
(the executor's :func:`thread_budget`, its share of the fit's or the
worker's threads), and only for work whose bits do not depend on them:
:func:`chunk_sums` sums a pass in fixed row chunks on them.

The certificate never trusts the running state: the driver asks the plan for
a dual point per partition (``alpha_k`` for dual methods, ``-phi'(x_i.w)`` for
primal or dual-free ones, which is always dual-feasible), rebuilds
``w(alpha) = X^T alpha / (lam n)`` from it and evaluates ``P`` and ``D`` from
scratch (:mod:`daskdca.driver`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

__all__ = [
    "Capabilities",
    "Contribution",
    "Ctx",
    "DataInfo",
    "Ops",
    "Phase",
    "PlanBase",
    "RoundReport",
    "SparseDelta",
    "add_contributions",
    "check_l1_ratio",
    "check_local_iters",
    "chunk_sums",
    "compress",
    "current_thread_budget",
    "process_cores",
    "thread_budget",
    "threaded_map",
    "tree_nodes",
    "tree_reduce",
    "tree_reduce_within",
]

# Fan-in of every reduction tree (docs/references.md, note N9: 8 was fastest).
SPLIT_EVERY = 8
# A partition sends a d-vector as (index, value) pairs below this density: at
# 12 bytes per pair against 8 per dense entry, and with the merge cost, sparse
# pays below about 20-30% (docs/references.md, note N9).
SPARSE_DENSITY = 0.25


class Ctx(NamedTuple):
    """Everything a random stream may depend on.

    ``partition`` is -1 in a ``combine`` (a global step).  A named tuple:
    each parameter is also the field of that name.

    Parameters
    ----------
    random_state : int
        The fit's seed.
    round : int
        The round.
    partition : int
        The partition, or -1 in a ``combine``.
    n_partitions : int
        The number of partitions.
    """

    random_state: int
    round: int
    partition: int
    n_partitions: int


class SparseDelta(NamedTuple):
    """A d-vector as (index, value) pairs with unique indices, when few coordinates are non-zero."""

    indices: np.ndarray
    values: np.ndarray
    size: int


class Contribution(NamedTuple):
    """What one partition sends in one phase; summed by :func:`add_contributions`.

    Attributes
    ----------
    vector : ndarray, SparseDelta or None
        A d-vector (dense or sparse), e.g. ``delta_w_k``.
    scalars : ndarray of float64
        A fixed-length array of sums, e.g. ``(loss_sum, conj_sum, n_steps)``.
    gathered : tuple
        Payloads concatenated in partition order (for methods that gather rows).
    """

    vector: object
    scalars: np.ndarray
    gathered: tuple = ()


class RoundReport(NamedTuple):
    """What a round tells the driver (the only values that reach the client).

    ``primal`` and ``dual`` are those of the round's *starting* state (the
    local steps compute the gap sums before they move), valid when
    ``measured``; ``steps`` counts the coordinate steps the round took.
    ``stop``, when not empty, is the method's own reason to end the fit
    (e.g. a gap that stopped falling): the driver certifies the state,
    warns with it on the client and stops, on either executor.  A named
    tuple: each parameter is also the field of that name.

    Parameters
    ----------
    measured : bool
        Whether ``primal`` and ``dual`` were computed in this round.
    primal : float or ndarray
        ``P`` of the round's starting state (one per problem in a
        one-vs-rest fit).
    dual : float or ndarray
        ``D`` of the round's starting state.
    steps : float
        The coordinate steps the round took.
    stop : str, default=""
        The method's reason to end the fit, or empty.
    certified : bool, default=False
        ``primal`` is ``P`` of the starting state's model and ``dual`` is
        ``D`` of its dual point with ``w(alpha)`` rebuilt from the duals
        (as a certificate computes them), so the driver certifies that state
        from this report, without another pass over the data.
    """

    measured: bool
    primal: float
    dual: float
    steps: float
    stop: str = ""
    certified: bool = False


class Phase(NamedTuple):
    """One local step on every partition, a reduce, and a combine on the global state."""

    name: str
    local: Callable
    combine: Callable


class PlanBase:
    """What most plans share; a plan (a frozen dataclass with ``settings`` and ``eval_every``) subclasses
    it and overrides what differs.

    ``name`` is the settings' name, the gap is measured every ``eval_every``
    rounds, a round is one phase ``"round"`` (the plan's ``local``, then its
    ``combine``), and the model is the global state's ``w``.
    """

    # Optional hooks the drivers read with ``getattr(plan, name, default)``: the same defaults, so that a
    # plan is a :class:`daskdca.methods.protocol.Plan` without changing what the drivers do.
    fused_rounds = None
    l1_ratio = 0.0
    settled = None

    @property
    def name(self):
        return self.settings.name

    def measures(self, round_index):
        return round_index % self.eval_every == 0

    def phases(self):
        return (Phase("round", self.local, self.combine),)

    def model(self, state):
        return state.w

    # -- warm start (methods whose capabilities say ``warm_start=True``)
    def init_global_from(self, w):
        """The global state of a fit that starts at the dual point ``alpha0``, given ``w = X^T alpha0 / (lam n)``.

        The driver computes ``w`` once, by the same tree reduction as the
        certificate.  Default: the fresh global state with its field ``w``
        replaced, right for a plan whose only field that depends on the duals
        is ``w``; a plan with others overrides it.
        """
        return self.init_global()._replace(w=np.array(w, dtype=np.float64, copy=True))

    def init_local_from(self, part, alpha, ctx):
        """A partition's local state starting at its duals ``alpha`` (the partition's row order).

        Default: the fresh local state with its field ``alpha`` replaced (the
        plan's ``dual_point`` of that state must then be ``alpha``).
        """
        return self.init_local(part, ctx)._replace(alpha=np.array(alpha, dtype=np.float64, copy=True))


@dataclass(frozen=True)
class Capabilities:
    """What a method supports; every "unsupported combination" error is built from this.

    A frozen dataclass: each parameter is also the attribute of that name.

    Parameters
    ----------
    losses : tuple of str
        Loss names the method accepts.
    many_partitions : bool
        Whether it runs on more than one partition.
    cluster : bool
        Whether it runs on a Dask cluster.
    shrinking : bool
        Whether it offers LIBLINEAR-style shrinking.
    gap_rate : {"linear", "1/t"}, default="linear"
        How its certified gap falls with the epochs: geometrically (the dual
        and primal-dual methods, on smooth losses), or like ``1/t``
        (Pegasos' subgradient steps), for which a ``tol`` below about 1e-3
        takes thousands of epochs.
    warm_start : bool, default=False
        Whether a fit can start from given dual variables
        (``daskdca.fit(dual_init=...)``): the plan's ``init_global_from`` and
        ``init_local_from`` (:class:`PlanBase`) build the starting states.
    sample_weight : bool, default=False
        Whether its steps solve the weighted problem
        ``1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2`` (``Rows.weight``,
        :func:`daskdca.losses.weighted_dual_update`).
    multi_class : bool, default=False
        Whether the K one-vs-rest problems of a multi-class fit can run
        together, one pass per partition per round
        (:mod:`daskdca.methods.multiclass`): its states have the same shapes
        in every problem.
    """

    losses: tuple
    many_partitions: bool
    cluster: bool
    shrinking: bool
    gap_rate: str = "linear"
    warm_start: bool = False
    sample_weight: bool = False
    multi_class: bool = False


class DataInfo(NamedTuple):
    """The data constants a method's ``setup`` may read (no rows).

    ``partition_sizes[k]`` is the row count of partition k; ``max_column_nnz``
    is the largest number of rows in which one feature is non-zero; ``nnz``
    the stored values of all rows (0 where the caller did not say).  A
    named tuple: each parameter is also the field of that name.

    Parameters
    ----------
    n : int
        Rows.
    d : int
        Features.
    partition_sizes : tuple of int
        The row count of each partition.
    loss : Loss
        The loss of the fit (:class:`~daskdca.losses.Softmax` or
        :class:`~daskdca.losses.CrammerSinger` for a multi-class problem).
    lam : float
        The regularisation strength.
    max_column_nnz : int
        The largest number of rows in which one feature is non-zero.
    nnz : int, default=0
        The stored values of all rows (0 where the caller did not say).
    """

    n: int
    d: int
    partition_sizes: tuple
    loss: object
    lam: float
    max_column_nnz: int
    nnz: int = 0

    @property
    def lam_n(self) -> float:
        return self.lam * self.n

    @property
    def n_partitions(self) -> int:
        return len(self.partition_sizes)


class Ops:
    """Reductions over all partitions that a method's ``setup`` may use.

    Each driver passes its own: the in-process driver loops over the
    partitions, the engine runs Dask tasks; both sum in the order of
    :func:`tree_reduce`, so ``setup`` resolves the same constants bit for bit.
    """

    def gram_matvec(self, v):  # pragma: no cover - interface
        """``sum_k X~_k^T X~_k v`` with the rows of X scaled to unit norm."""
        raise NotImplementedError

    def sqnorm_sum(self):  # pragma: no cover - interface
        """``sum_i ||x_i||^2`` over all rows."""
        raise NotImplementedError


def compress(vector):
    """A dense d-vector as a :class:`SparseDelta` when it has few non-zeros."""
    nz = np.flatnonzero(vector)
    if nz.size > SPARSE_DENSITY * vector.shape[0]:
        return vector
    index_dtype = np.int32 if vector.shape[0] <= np.iinfo(np.int32).max else np.int64
    return SparseDelta(nz.astype(index_dtype), vector[nz], vector.shape[0])


def _add_vectors(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, SparseDelta):
        out = np.zeros(a.size)
        out[a.indices] += a.values
    else:
        out = np.array(a, dtype=np.float64, copy=True)
    if isinstance(b, SparseDelta):
        out[b.indices] += b.values
    else:
        out += b
    return out


def add_contributions(*items):
    """Sum contributions left to right: vectors, scalars, and gathered payloads in order.

    A sparse vector is scatter-added (its indices are unique); adding the zeros
    it leaves out would change no bit, so the result equals the dense sum.
    """
    vector = items[0].vector
    scalars = np.array(items[0].scalars, dtype=np.float64, copy=True)
    gathered = tuple(items[0].gathered)
    for item in items[1:]:
        vector = _add_vectors(vector, item.vector)
        scalars += item.scalars
        gathered += tuple(item.gathered)
    return Contribution(vector, scalars, gathered)


def tree_reduce(items, combine, *, node=None):
    """Reduce ``items`` with ``combine`` in a fixed tree of fan-in :data:`SPLIT_EVERY`.

    ``node(combine, children, level, index)`` builds one node (default: call
    ``combine(*children)``); the Dask engine passes one that makes a task, so
    both drivers add the same numbers in the same order.
    """
    if not items:
        raise ValueError("tree_reduce needs at least one item")
    if node is None:
        def node(fn, children, level, index):
            return fn(*children)
    nodes = {(0, k): item for k, item in enumerate(items)}
    root = (0, 0)
    for root, children in tree_nodes(len(items)):
        nodes[root] = node(combine, [nodes.pop(child) for child in children], root[0] - 1, root[1])
    return nodes[root]


def tree_nodes(n_items):
    """The nodes of :func:`tree_reduce` over ``n_items`` in the order it builds them.

    Yields ``((level, index), children)``: node ``(level + 1, i)`` combines
    the nodes ``(level, j)`` of ``children``; the items are ``(0, k)`` and the
    root is the last node yielded (none for a single item).
    """
    level, count = 0, n_items
    while count > 1:
        parents = -(-count // SPLIT_EVERY)
        for i in range(parents):
            yield (level + 1, i), [(level, j) for j in range(i * SPLIT_EVERY, min((i + 1) * SPLIT_EVERY, count))]
        level, count = level + 1, parents


def tree_reduce_within(items, first, n_items, combine):
    """The part of :func:`tree_reduce` over ``n_items`` that ``items`` (items ``first, first + 1, ...``) decide.

    Returns ``{(level, index): value}`` of the largest nodes whose items all
    lie in this run, each computed with the same ``combine`` calls as
    :func:`tree_reduce`; reducing those nodes with the others' (the nodes of
    :func:`tree_nodes` that no run holds whole) gives ``tree_reduce``'s bits.
    The Dask engine computes each worker's run of partitions in one task this way.
    """
    nodes = {(0, first + j): value for j, value in enumerate(items)}
    for key, children in tree_nodes(n_items):
        if all(child in nodes for child in children):
            nodes[key] = combine(*[nodes.pop(child) for child in children])
    return nodes


def apply_vector(w, vector, scale=1.0):
    """``w + scale * vector`` for a dense or sparse vector, as a new array."""
    out = np.array(w, dtype=np.float64, copy=True)
    if vector is None:
        return out
    if isinstance(vector, SparseDelta):
        out[vector.indices] += scale * vector.values if scale != 1.0 else vector.values
    else:
        out += scale * vector if scale != 1.0 else vector
    return out


def dense(vector, size):
    """A dense copy of a dense or sparse vector (zeros for None)."""
    if vector is None:
        return np.zeros(size)
    if isinstance(vector, SparseDelta):
        out = np.zeros(vector.size)
        out[vector.indices] = vector.values
        return out
    return np.asarray(vector, dtype=np.float64)


def check_local_iters(local_iters):
    """``local_iters`` must be a finite number > 0."""
    if isinstance(local_iters, bool) or not (
        isinstance(local_iters, (int, float)) and math.isfinite(local_iters) and local_iters > 0
    ):
        raise ValueError(
            f"local_iters must be a finite number > 0 (passes over each partition per round), "
            f"got {local_iters!r}."
        )


def check_l1_ratio(l1_ratio, method):
    """``l1_ratio`` of a dual method's elastic net: a number in ``[0, 1)``; ``method`` names the method.

    ``l1_ratio = 1`` (pure L1) is refused with the fix: the dual steps need the
    strongly convex part ``lam (1 - l1_ratio)/2 ||w||^2 > 0`` (Shalev-Shwartz &
    Zhang 2016, Prox-SDCA), and adding a small ``eps/2 ||w||^2`` certifies the
    L1 problem only for ``eps`` of order ``tol * lam / max|w*_j|``, where the
    steps crawl (their curvature is ``||x_i||^2 / (eps n)``).
    """
    rho = l1_ratio
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not math.isfinite(rho) or not 0 <= rho <= 1:
        raise ValueError(f"l1_ratio must be a number in [0, 1), got {rho!r}.")
    if rho == 1:
        raise ValueError(
            f"l1_ratio=1 (pure L1) is not supported by {method}: its dual steps need the strongly convex part "
            "lam (1 - l1_ratio)/2 ||w||^2 > 0, and adding a small eps/2 ||w||^2 (Shalev-Shwartz & Zhang 2016) "
            "certifies the L1 problem only for eps of order tol * lam / max|w*_j|, where the dual steps crawl "
            "(their curvature is ||x_i||^2 / (eps n)).  Use daskdca.methods.l1.L1SDCA() (daskdca.l1; penalty='l1' in the "
            "estimators), which certifies the L1 problem through a sequence of elastic nets, or "
            "l1_ratio < 1, e.g. 0.99 (that elastic net is what the fit then solves and certifies).")


# joblib's process workers set this to their share of the cores (joblib's documentation, "Avoiding
# over-subscription of CPU resources": cpu_count() // n_jobs in each worker).  OMP_NUM_THREADS is not read:
# a Dask nanny writes its pre-spawn 1 into this process's environment when it starts a worker (distributed's
# nanny.py, WorkerProcess.start), so a fit after starting a LocalCluster would have one thread.
_THREAD_CAP_VARIABLES = ("NUMBA_NUM_THREADS",)


def process_cores():
    """The cores this process may use: its CPU affinity (the machine's count where there is none), capped by
    ``NUMBA_NUM_THREADS`` where set to a positive integer, as joblib sets it in its process workers so that a
    fit inside a parallel grid search takes its share of the cores, not all.

    Returns
    -------
    int
        At least 1.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity on this platform
        cores = os.cpu_count() or 1
    for name in _THREAD_CAP_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) >= 1:
            cores = min(cores, int(value))
    return max(1, cores)


_THREAD_BUDGET = contextvars.ContextVar("daskdca_thread_budget", default=None)


@contextlib.contextmanager
def thread_budget(n_threads):
    """A context in which a method's local step may use at most ``n_threads`` threads of this process.

    The in-process executor runs each partition's step in it (its share of the ``n_jobs`` of
    :func:`daskdca.fit`), and a worker's resident actor likewise (its share of the worker's threads); outside it
    (the one-worker route's fit) the budget is :func:`process_cores`.  :func:`current_thread_budget` reads it.

    Parameters
    ----------
    n_threads : int
        The threads allowed, at least 1.
    """
    token = _THREAD_BUDGET.set(max(1, int(n_threads)))
    try:
        yield
    finally:
        _THREAD_BUDGET.reset(token)


def current_thread_budget():
    """The threads a local step may use now: the innermost :func:`thread_budget`, else :func:`process_cores`.

    Returns
    -------
    int
        At least 1.
    """
    budget = _THREAD_BUDGET.get()
    return process_cores() if budget is None else budget


_POOLS = {}  # (pid, name, threads) -> the ThreadPoolExecutor that threaded_map runs on
_POOLS_LOCK = threading.Lock()


def threaded_map(fn, items, *, name="daskdca-chunk"):
    """``[fn(item) for item in items]``, on up to :func:`current_thread_budget` threads, in the items' order.

    For work whose result must not depend on the threads: the caller adds
    the results in the order returned, so the bits are those of one thread.
    ``fn`` runs numba kernels that release the interpreter, each call in its
    share of the budget (:func:`thread_budget`).  A ``threaded_map`` inside
    ``fn`` must run on a pool of another ``name``: one pool waiting on
    itself would stall.

    Parameters
    ----------
    fn : callable
        Called once per item.
    items : list
        Its arguments.
    name : str, default="daskdca-chunk"
        The pool's thread names; a pool is kept per process, name and size.

    Returns
    -------
    list
        ``fn(item)`` for each item, in order.
    """
    budget = current_thread_budget()
    threads = min(budget, len(items))
    if threads <= 1:
        return [fn(item) for item in items]
    key = (os.getpid(), name, threads)
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = ThreadPoolExecutor(threads, thread_name_prefix=name)
        pool = _POOLS[key]
    share = max(1, budget // threads)

    def call(item):
        with thread_budget(share):  # a pool thread does not inherit the caller's budget
            return fn(item)

    return list(pool.map(call, items))


#: Rows of one chunk of :func:`chunk_sums`: a pass is summed chunk by chunk, each into its own buffers, the chunks
#: on up to the step's thread budget and added in row order, so the bits depend on this number and never on the
#: threads.  Measured here: a primal Newton round over a9a's 32,561 rows (two chunks, d = 123) takes about 8 ms on
#: one thread (benchmarks/RESULTS.md, "A fit's threads in memory"), against about 0.1 ms to run two chunks on two
#: threads with their d (d + 1) / 2 buffers at d = 300 and 8 us to add one such buffer.
CHUNK_ROWS = 16_384


def chunk_sums(pieces, chunk, size):
    """``sum_c chunk(rows, lo_c, hi_c, extra)`` over the rows of ``pieces``, in chunks of :data:`CHUNK_ROWS`.

    The chunks of one piece (a block out of core, read once) run on
    :func:`threaded_map`'s threads; their results are added in row order, so
    the bits do not depend on the threads.

    Parameters
    ----------
    pieces : iterable
        ``(rows, lo, hi, extra)`` tuples: a partition's ``pieces()``, or pieces with ``extra`` the caller's
        (e.g. their labels).
    chunk : callable
        ``chunk(rows, lo, hi, extra)``: the sums of rows ``[lo, hi)``, a float64 array of ``size``.
    size : int
        The length of the sums.

    Returns
    -------
    ndarray
        The sums over every row.
    """
    total = np.zeros(size)
    for rows, lo, hi, extra in pieces:
        bounds = list(range(lo, hi, CHUNK_ROWS)) + [hi]
        for value in threaded_map(lambda j: chunk(rows, bounds[j], bounds[j + 1], extra), range(len(bounds) - 1)):
            total += value
    return total
