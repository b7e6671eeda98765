"""The round loop, and the in-process executor that runs a method's phases in one process.

:func:`run_rounds` is the only round loop: it asks an *executor* to run
rounds, records the duality gap, calls the user's callback, stops on a
certified gap and certifies the result.  Two executors run the same phases
of any method: :class:`InProcess` here and the Dask one in
:mod:`daskdca.engine`.  Neither names a method.

Stopping rule: ``P - D <= tol * |P|``.  A method measures the gap of a
round's *starting* state inside that round's local steps (one pass for both),
so the record of state ``r`` arrives with round ``r``.  When it meets ``tol``
(or the callback returns True), the loop certifies state ``r`` itself, which
it still holds: ``w`` rebuilt from the dual point alone,
``X^T alpha / (lam n)``, then ``P`` and ``D`` from scratch.  The model
returned is the state the last record describes.
"""

from __future__ import annotations

import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple

import numpy as np
from threadpoolctl import ThreadpoolController

from daskdca.methods.base import Ctx, DataInfo, Ops, add_contributions, thread_budget, tree_reduce
from daskdca.partitions import (
    MemoryPartition,
    OneVsRestPartition,
    even_sizes,
    gram_matvec_part,
    in_caller_order,
    in_partition_order,
    objective_sums_part,
    random_row_order,
    rows_from_csr,
    sqnorm_sum_part,
    xt_alpha_part,
)
from daskdca.problem import column_nnz, gap_met, objectives, relative_gap
from daskdca.user_warnings import warn_not_converged

__all__ = ["FitResult", "FitState", "HistoryRecord", "InProcess", "fit_in_process", "one_blas_thread", "run_rounds",
           "setup_plan", "sum_arrays"]

logger = logging.getLogger("daskdca")

# max_rounds=None runs at most this many epochs' worth of rounds.
DEFAULT_MAX_EPOCHS = 1000


class HistoryRecord(NamedTuple):
    """One gap evaluation: the state after ``round`` rounds.

    ``primal``, ``dual`` and ``gap`` are floats, or arrays with one entry
    per problem in a one-vs-rest fit (:mod:`daskdca.methods.multiclass`).
    A named tuple: each parameter is also the field of that name
    (``record.gap``).

    Parameters
    ----------
    round : int
        Rounds run before the evaluated state.
    epochs : float
        Coordinate steps so far divided by n (the gap evaluations' passes over the data not counted).
    seconds : float
        Wall-clock seconds since the fit started (a resumed fit counts on
        from its checkpoint's last record).
    primal : float or ndarray of shape (n_classes,)
        ``P(w)`` of the state.
    dual : float or ndarray of shape (n_classes,)
        ``D(alpha)`` of the state.
    gap : float or ndarray of shape (n_classes,)
        ``primal - dual``.
    """

    round: int
    epochs: float
    seconds: float
    primal: float
    dual: float
    gap: float


class FitResult(NamedTuple):
    """What :func:`run_rounds` returns; ``primal``/``dual``/``gap`` are certified.

    ``w`` is the model (for dual methods rebuilt from the duals) and ``alpha``
    the dual point that certifies it, in the executor's row order; a
    one-vs-rest fit puts the class axis first in ``w``, ``alpha``, ``primal``,
    ``dual`` and ``gap``.  ``global_state`` is the state the rounds ended at,
    which a checkpoint keeps; where a fit stops short of ``tol`` the
    certificate may be of the state the plan's ``settled`` hook gave instead.
    """

    w: np.ndarray
    alpha: np.ndarray
    history: list
    converged: bool
    primal: float
    dual: float
    gap: float
    n_rounds: int
    n_epochs: float
    plan: object
    global_state: object
    max_rounds: int


class FitState:
    """What a callback sees: the state a record describes.

    ``global_state`` and ``local_states`` are the executor's handles of the
    method's states (in process the states themselves; on a cluster the
    resident executor's version number of the local states, or Dask futures
    with the task executor); ``w`` and ``alpha`` (the dual point, in the
    caller's row order) are computed when first read.  The round loop
    builds it for the callback; a callback only reads it.

    Parameters
    ----------
    executor : object
        The executor that holds the states (in process, or on a cluster).
    plan : object
        The method's plan for the data (the model's ``plan_``).
    global_state : object
        The executor's handle of the method's global state.
    local_states : object
        The executor's handles of the partitions' local states.
    round_index : int
        Rounds run before this state (``record.round``).
    n_epochs : float
        Passes over the data so far (``record.epochs``).

    Attributes
    ----------
    w : ndarray
        The model of the state (for the dual methods rebuilt from the
        duals), fetched when first read.
    alpha : ndarray
        The dual point of the state, in the caller's row order, gathered
        when first read.
    global_state, local_states : object
        As given.
    round : int
        ``round_index``.
    n_epochs : float
        As given.
    """

    def __init__(self, executor, plan, global_state, local_states, round_index, n_epochs):
        self._executor, self._plan = executor, plan
        self.global_state, self.local_states = global_state, local_states
        self.round, self.n_epochs = round_index, n_epochs
        self._w = self._alpha = None

    @property
    def w(self):
        if self._w is None:
            self._w = self._plan.model(self._executor.fetch(self.global_state))
        return self._w

    @property
    def alpha(self):
        if self._alpha is None:
            self._alpha = self._executor.dual_points(self._plan, self.global_state, self.local_states)
        return self._alpha


def sum_arrays(*items):
    """Left-to-right sum of arrays (the combine of every tree reduction of arrays)."""
    out = np.array(items[0], dtype=np.float64, copy=True)
    for item in items[1:]:
        out += item
    return out


def progress_bar_class():
    """The tqdm class of a fit's bar: ``tqdm.auto``'s (a widget in a notebook) where ipywidgets is importable,
    else the plain text bar, so that a notebook without ipywidgets gets text, not tqdm's "IProgress not
    found" warning."""
    try:
        import ipywidgets  # noqa: F401  (only whether it imports)
    except ImportError:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


# the least seconds between two redraws of a fit's progress bar
SHOW_EVERY = 0.1


class _Progress:
    """What a fit shows while it runs, by ``verbose`` level; every record goes to the ``daskdca`` logger too.

    0: nothing.  1: one bar on the log of the relative gap, from the first
    record's down to ``tol``, updated in place with the current round, the
    relative gap and an ETA: the log-gap still to go over its rate through
    the later half of the records so far (the first rounds fall fastest).
    The bar's percentage follows the smallest gap so far, so it never moves
    back while the gap of a non-monotone method does.  2: the bar and one
    line per gap record (round, epochs, seconds, primal, dual, gap), written
    to stdout above it.  The summary line of the fit is the API's
    (:func:`daskdca.api.fit`).
    """

    def __init__(self, verbose, tol):
        self.verbose, self.tol = verbose, max(float(tol), 1e-300)
        self.bar = None
        self.points = []  # (seconds, log10 of the smallest relative gap so far), one per record
        self.last = None  # (round, relative gap) of the latest record
        self.shown = -math.inf  # when the bar was last redrawn (time.monotonic)

    def update(self, record):
        rel = relative_gap(record.primal, record.dual)
        if np.ndim(record.primal):  # a one-vs-rest fit: the sums over its problems, the largest relative gap
            primal, dual, gap = float(np.sum(record.primal)), float(np.sum(record.dual)), float(np.sum(record.gap))
        else:
            primal, dual, gap = record.primal, record.dual, record.gap
        line = (f"round {record.round:5d}  epochs {record.epochs:8.2f}  time {record.seconds:8.3f}s  "
                f"primal {primal:.10e}  dual {dual:.10e}  gap {gap:.3e}  rel {rel:.3e}")
        logger.info(line)
        if not self.verbose:
            return
        log_rel = math.log10(max(rel, 1e-300)) if math.isfinite(rel) else math.inf
        best = min(log_rel, self.points[-1][1]) if self.points else log_rel
        self.points.append((record.seconds, best))
        self.last = (record.round, rel)
        if self.bar is None:
            # from the first record's gap (at least 10 tol, so that a first record near tol still moves the bar)
            self.start = max(best, math.log10(self.tol) + 1.0) if math.isfinite(best) else math.log10(self.tol) + 1.0
            self.bar = progress_bar_class()(total=100, desc=f"daskdca gap -> {self.tol:g}",
                                            bar_format="{desc}: {percentage:3.0f}%|{bar}|{postfix}")
        if self.verbose >= 2:
            self.bar.write(line)
        span = self.start - math.log10(self.tol)
        done = (self.start - best) / span if span > 0 else 1.0
        self.bar.n = int(100 * min(1.0, max(0.0, done)))
        # redrawn at most every SHOW_EVERY seconds (fast rounds would flood a notebook or a log); close() draws
        # the last record
        redraw = time.monotonic() - self.shown >= SHOW_EVERY
        self.bar.set_postfix_str(f"round {record.round:5d}, rel gap {rel:.2e}, ETA {self._eta(best)}",
                                 refresh=redraw)
        if redraw:
            self.shown = time.monotonic()

    def _eta(self, best):
        """The seconds left at the log-gap's rate over the later half of the records, as tqdm writes them;
        "?" until that rate is known and positive, "0:00" once ``tol`` is met."""
        to_go = best - math.log10(self.tol)
        if to_go <= 0:
            return self.bar.format_interval(0)
        seconds, log_now = self.points[-1]
        since, log_then = self.points[len(self.points) // 2] if len(self.points) > 2 else self.points[0]
        if seconds <= since or log_then <= log_now or not math.isfinite(log_then):
            return "?"
        return self.bar.format_interval(to_go * (seconds - since) / (log_then - log_now))

    def close(self):
        if self.bar is not None:
            round_index, rel = self.last
            self.bar.set_postfix_str(f"round {round_index:5d}, rel gap {rel:.2e}")  # the final state: no ETA
            self.bar.close()


def _certified_record(record, primal, dual, seconds):
    return record._replace(seconds=seconds, primal=primal, dual=dual, gap=primal - dual)


def _certify_settled(executor, plan, G, Ls, tol):
    """``(certificate, G')``: ``executor.certify`` of ``(G, Ls)`` and ``G' = G``; where that falls short of
    ``tol``, of the state the plan's ``settled`` hook gives instead (a point its rounds had tested,
    :class:`daskdca.methods.protocol.Plan`), if any, held by the executor as ``G'``.

    The certificate is what the fit returns; the rounds' own state ``G`` is what a checkpoint keeps, so a
    resumed or longer fit goes on as it would have.
    """
    certificate = executor.certify(plan, G, Ls)
    settle = getattr(plan, "settled", None)
    if settle is None or gap_met(certificate[2], certificate[3], tol):
        return certificate, G
    state = settle(executor.fetch(G), certificate[2])
    if state is None:
        return certificate, G
    held = executor.hold(state)
    return executor.certify(plan, held, Ls), held


def _rounds_to_run(plan, executor, r, max_rounds):
    """Rounds to run in one call: up to the next gap evaluation, checkpoint or ``max_rounds``."""
    n = 1
    while r + n < max_rounds and not plan.measures(r + n) and n < plan.eval_every:
        n += 1
    return max(1, min(n, executor.rounds_until_checkpoint(r)))


def round_budget(plan, max_rounds=None, max_epochs=None):
    """The most rounds a fit may run: ``max_rounds``, the rounds of ``max_epochs`` passes over the data, or both
    (the smaller); neither means :data:`DEFAULT_MAX_EPOCHS` passes.

    A pass is ``plan.rounds_per_epoch`` rounds: ``1 / local_iters`` of a
    round of serial SDCA or CoCoA+ (one round inside Catalyst, an outer
    step), ``ceil(n / batch)`` rounds of the mini-batch methods, so a budget
    means the same on every solver.  Where a round holds several passes
    (``rounds_per_epoch < 1``) a round with shrinking may end early, so the
    passes are counted as they run (:func:`epoch_budget`), and the rounds
    are bounded by the passes: every round reads every row at least once,
    for its gap.
    """
    epochs = max_epochs if max_epochs is not None or max_rounds is not None else DEFAULT_MAX_EPOCHS
    per_round = 1.0 if plan.rounds_per_epoch < 1 else plan.rounds_per_epoch
    budgets = [int(max_rounds)] if max_rounds is not None else []
    if epochs is not None:
        budgets.append(max(1, math.ceil(float(epochs) * per_round)))
    return min(budgets)


def epoch_budget(plan, max_rounds=None, max_epochs=None):
    """The passes after which a fit whose rounds hold several passes stops (None: the rounds' budget alone).

    Counted from the rounds' steps (``steps / n``), so the last round may
    take the fit past it by less than a round's passes.
    """
    if plan.rounds_per_epoch >= 1:
        return None
    if max_epochs is not None:
        return float(max_epochs)
    return None if max_rounds is not None else float(DEFAULT_MAX_EPOCHS)


_BLAS = []  # this process's ThreadpoolController, made on the first fit


def one_blas_thread():
    """A context in which this process's BLAS runs on one thread (its setting is restored on exit).

    :func:`run_rounds` runs in it, and the method's setup before it
    (:func:`setup_plan`).  A multi-threaded BLAS (OpenBLAS, as
    NumPy ships it) splits a dot product of more than about 10,000 values
    over its threads, so the bits of ``w @ w`` in a combine would depend on
    the machine's cores; and its threads spin for a while after each call,
    on the cores that the library's own threads sweep on
    (``CoCoAPlus(threads=T)``; serial SDCA's gap sums on a second core):
    two sub-block threads on 2 cores took about 2x their time after every
    combine's ``w @ w``, and a 2-worker LocalCluster's rounds 1.5x
    (benchmarks/RESULTS.md, "One BLAS thread while the rounds run").  A Dask worker already runs its BLAS on one thread
    (Dask's ``distributed.nanny.pre-spawn-environ``).  A ``callback`` runs
    inside it too.
    """
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


def setup_plan(executor, method):
    """``executor.setup(method)`` on one BLAS thread (:func:`one_blas_thread`), as the rounds after it run: a
    setup's products (a power iteration's norms) would otherwise leave BLAS threads spinning into the first
    epoch."""
    with one_blas_thread():
        return executor.setup(method)


def run_rounds(executor, plan, *, tol, max_rounds, max_epochs=None, callback: Callable | None = None, verbose=0,
               start=None):
    """Run ``plan``'s rounds on ``executor`` until the certified relative gap is ``<= tol``.

    At most :func:`round_budget` rounds (``max_rounds`` and ``max_epochs``
    None: 1000 passes over the data).  ``start`` is
    ``(global_state, local_states, round, n_epochs, history)``
    (a resumed fit), or None for a fresh one.  ``callback(record, state)``
    is called after every gap evaluation with a :class:`FitState`; a true
    return value (``True``, a NumPy ``True``) stops the loop, None or a false
    one goes on.  The rounds run with one BLAS thread (:func:`one_blas_thread`).
    """
    with one_blas_thread():
        return _run_rounds(executor, plan, tol=tol, max_rounds=max_rounds, max_epochs=max_epochs, callback=callback,
                           verbose=verbose, start=start)


def _run_rounds(executor, plan, *, tol, max_rounds, max_epochs, callback, verbose, start):
    most_epochs = epoch_budget(plan, max_rounds, max_epochs)
    max_rounds = round_budget(plan, max_rounds, max_epochs)
    if start is None:
        G, Ls = executor.init(plan)
        r, epochs, history = 0, 0.0, []
    else:
        G, Ls, r, epochs, history = start
        history = list(history)
    t0 = time.perf_counter() - (history[-1].seconds if history else 0.0)
    if history and history[-1].round == r:
        # the record a finished fit's certificate left at the round it resumes from: the rounds measure that
        # state again (or the final certificate does), as they would have without the stop
        history.pop()
    progress = _Progress(verbose, tol)
    pending = []
    converged = finished = False
    ahead = None  # the next stretch, submitted while this one's report is on its way (executor.lookahead)
    try:
        while r < max_rounds:
            if ahead is None:
                n = _rounds_to_run(plan, executor, r, max_rounds)
                new_G, new_Ls, handle = executor.run(plan, G, Ls, r, n)
            else:
                n, (new_G, new_Ls, handle), ahead = ahead[0], ahead[1], None
            # Look one stretch ahead where the states stay where they are in between (no checkpoint at r + n):
            # the cluster starts it as soon as this one's combine is done, without waiting for this process
            # to read the report.  Its states and report are dropped if this stretch stops the fit.
            if executor.lookahead and r + n < max_rounds and executor.rounds_until_checkpoint(r) > n:
                n_next = _rounds_to_run(plan, executor, r + n, max_rounds)
                ahead = (n_next, executor.run(plan, new_G, new_Ls, r + n, n_next))
            if plan.measures(r):
                reports = executor.reports(pending + [handle])
                pending = []
                epochs += sum(rep.steps for rep in reports[:-1]) / plan.n
                rep = reports[-1]
                if rep.measured and r > 0:
                    record = HistoryRecord(r, epochs, time.perf_counter() - t0, rep.primal, rep.dual,
                                           rep.primal - rep.dual)
                    history.append(record)
                    progress.update(record)
                    # any true value stops (a NumPy bool such as ``record.gap <= x`` too); None goes on
                    stop = callback is not None and bool(callback(record, FitState(executor, plan, G, Ls, r, epochs)))
                    if getattr(rep, "stop", ""):  # the method's own reason to end the fit (RoundReport.stop)
                        warn_not_converged(rep.stop)
                        stop = True
                    if stop or gap_met(record.primal, record.dual, tol):
                        if getattr(rep, "certified", False):  # the report certifies (G, Ls) itself (RoundReport.certified)
                            w = np.array(plan.model(executor.fetch(G)), dtype=np.float64)
                            alpha, primal, dual = executor.dual_points(plan, G, Ls), rep.primal, rep.dual
                        else:
                            (w, alpha, primal, dual), _ = _certify_settled(executor, plan, G, Ls, tol)
                        history[-1] = _certified_record(record, primal, dual, time.perf_counter() - t0)
                        converged = gap_met(primal, dual, tol)
                        if converged or stop:
                            finished = True
                            break
                epochs += rep.steps / plan.n
            else:
                pending.append(handle)
            G, Ls = new_G, new_Ls
            at_checkpoint = executor.rounds_until_checkpoint(r) == n
            r += n
            if most_epochs is not None and epochs >= most_epochs - 1e-9:
                max_rounds = r  # the passes' budget is spent (epoch_budget)
            if at_checkpoint and pending:
                # A checkpoint records the epochs so far, and a resumed fit counts on from them
                # (docs/reliability.md, "Checkpoints and resume"): the steps of the rounds whose reports were
                # not read yet go in first, or a fit resumed from here would miss them.
                epochs += sum(rep.steps for rep in executor.reports(pending)) / plan.n
                pending = []
            G, Ls = executor.after_rounds(plan, G, Ls, r, epochs, history)
        if not finished:
            epochs += sum(rep.steps for rep in executor.reports(pending)) / plan.n
            (w, alpha, primal, dual), certified = _certify_settled(executor, plan, G, Ls, tol)
            converged = gap_met(primal, dual, tol)
            history.append(HistoryRecord(r, epochs, time.perf_counter() - t0, primal, dual, primal - dual))
            progress.update(history[-1])
            if callback is not None:  # the last evaluation, of the state returned; nothing left to stop
                callback(history[-1], FitState(executor, plan, certified, Ls, r, epochs))
    finally:
        progress.close()
    executor.finish(plan, G, Ls, r, epochs, history)
    return FitResult(w, alpha, history, converged, primal, dual, primal - dual, r, epochs, plan,
                     executor.fetch(G), max_rounds)


class _InProcessOps(Ops):
    def __init__(self, parts):
        self.parts = parts

    def gram_matvec(self, v):
        return tree_reduce([gram_matvec_part(p, v) for p in self.parts], sum_arrays)

    def sqnorm_sum(self):
        return float(tree_reduce([sqnorm_sum_part(p) for p in self.parts], sum_arrays)[0])


class InProcess:
    """Runs a method's phases on partitions held in this process.

    ``row_order[j]`` is the caller's row of the ``j``-th row in partition
    order (None: the same order); dual points come back in the caller's order.
    ``dual_init`` (caller's order, checked feasible by the API) is the dual
    point a warm start begins at, None for the method's own start.
    A method with ``fused_rounds`` runs stretches of rounds on a single
    partition in one call (the same bits as one round at a time).
    ``n_threads`` (the ``n_jobs`` of :func:`daskdca.fit`) is this fit's
    threads: up to that many run the partitions' local steps at once, as a
    Dask worker's threads run its partitions (the kernels release the
    interpreter), and each step may use its share for its own threads
    (:func:`~daskdca.methods.base.thread_budget`: serial SDCA's gap sums on
    a second thread, Newton's row chunks).  Each step reads only its own
    partition, state and random stream, and the reduce adds their results
    in partition order, so the bits are those of one thread.  None (a Dask
    worker's one-worker fit): one partition at a time, and the steps' own
    threads bounded by the process's cores.
    """

    # a round runs when submitted here, so running the next one before reading a report gains nothing
    lookahead = False

    def __init__(self, parts, info: DataInfo, random_state, row_order=None, dual_init=None, n_threads=None):
        self.parts, self.info, self.seed, self.row_order = parts, info, int(random_state), row_order
        self.dual_init = dual_init
        self.budget = None if n_threads is None else max(1, int(n_threads))
        self.n_threads = 1 if n_threads is None else max(1, min(self.budget, len(parts)))
        self.pool = None

    def _map(self, fn, *columns):
        """``[fn(part, *row) ...]`` over the partitions, on ``n_threads`` threads, in partition order; each
        step may use its share of the budget (:func:`~daskdca.methods.base.thread_budget`)."""
        rows = list(zip(self.parts, *columns))
        if self.budget is None:
            return [fn(*row) for row in rows]
        share = max(1, self.budget // self.n_threads)

        def step(row):
            with thread_budget(share):
                return fn(*row)

        if self.n_threads == 1:
            return [step(row) for row in rows]
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="daskdca-partition")
        return list(self.pool.map(step, rows))

    def setup(self, method):
        return method.setup(self.info, _InProcessOps(self.parts))

    def ctx(self, r, k):
        return Ctx(self.seed, r, k, len(self.parts))

    def init(self, plan):
        """The starting states: the method's own, or a warm start at ``dual_init``.

        A warm start splits ``dual_init`` (put in partition order) by
        partition and computes ``w = X^T alpha / (lam n)`` once, by the
        certificate's tree reduction; the plan builds its states from both.
        """
        if self.dual_init is None:
            return plan.init_global(), [plan.init_local(p, self.ctx(0, k)) for k, p in enumerate(self.parts)]
        alpha = in_partition_order(np.asarray(self.dual_init, dtype=np.float64), self.row_order)
        bounds = np.concatenate(([0], np.cumsum([p.n_rows for p in self.parts])))
        alphas = [alpha[..., a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        w = tree_reduce([xt_alpha_part(p, a, self.info.lam_n) for p, a in zip(self.parts, alphas)], sum_arrays)
        return plan.init_global_from(w), [plan.init_local_from(p, a, self.ctx(0, k))
                                          for k, (p, a) in enumerate(zip(self.parts, alphas))]

    def rounds_until_checkpoint(self, r):
        return 1 << 62

    def run(self, plan, G, Ls, r, n):
        fused = getattr(plan, "fused_rounds", None)
        if fused is not None and len(self.parts) == 1 and self.parts[0].whole() is not None:
            L, G, report = self._map(lambda part: fused(part, Ls[0], G, self.ctx(r, 0), n))[0]
            return G, [L], report
        first = None
        steps = 0.0
        for j in range(n):
            for phase in plan.phases():
                outs = self._map(phase.local, Ls, [G] * len(Ls), [self.ctx(r + j, k) for k in range(len(Ls))])
                Ls = [o[0] for o in outs]
                total = tree_reduce([o[1] for o in outs], add_contributions)
                G, report = phase.combine(G, total, self.ctx(r + j, -1))
            first = report if first is None else first
            steps += report.steps
        return G, Ls, first._replace(steps=steps)

    def reports(self, handles):
        return list(handles)

    def after_rounds(self, plan, G, Ls, r, epochs, history):
        return G, Ls

    def finish(self, plan, G, Ls, r, epochs, history):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def fetch(self, value):
        return value

    def hold(self, state):
        return state

    def dual_points(self, plan, G, Ls):
        return in_caller_order(np.concatenate([plan.dual_point(p, L, G) for p, L in zip(self.parts, Ls)], axis=-1),
                               self.row_order)

    def certify(self, plan, G, Ls):
        """``(w, alpha, P, D)`` from the dual point alone (module docstring)."""
        info = self.info
        alphas = [np.asarray(plan.dual_point(p, L, G), dtype=np.float64) for p, L in zip(self.parts, Ls)]
        w_alpha = tree_reduce(self._map(xt_alpha_part, alphas, [info.lam_n] * len(alphas)), sum_arrays)
        w = w_alpha if plan.primal_from_dual else np.asarray(plan.model(G), dtype=np.float64)
        sums = tree_reduce(self._map(objective_sums_part, alphas, [w] * len(alphas), [info.loss] * len(alphas)),
                           sum_arrays)
        primal, dual = objectives(info, sums, w, w_alpha, getattr(plan, "l1_ratio", 0.0))
        return w, in_caller_order(np.concatenate(alphas, axis=-1), self.row_order), primal, dual


def in_process_partitions(X, y, n_partitions, random_state, weight=None, problems=None):
    """Partitions of the rows of X: one as given, or several by a seeded random permutation.

    ``weight`` (None: unweighted) are the rows' loss weights.  ``problems``
    (a :class:`~daskdca.partitions.OneVsRest`, ``y`` then holds class
    indices) makes them one-vs-rest partitions.  Returns
    ``(parts, row_order)``; ``row_order`` is None for one partition.
    """
    if problems is not None:
        parts, order = in_process_partitions(X, y, n_partitions, random_state, weight)
        return [OneVsRestPartition(p, problems) for p in parts], order
    if n_partitions == 1:
        return [MemoryPartition(rows_from_csr(X, y, weight), np.array([0, X.shape[0]], dtype=np.int64))], None
    order = random_row_order(X.shape[0], random_state)
    Xp, yp = X[order], np.asarray(y)[order]
    wp = None if weight is None else np.asarray(weight)[order]
    offsets = np.concatenate(([0], np.cumsum(even_sizes(X.shape[0], n_partitions))))
    parts = [MemoryPartition(rows_from_csr(Xp[a:b], yp[a:b], None if wp is None else wp[a:b]),
                             np.array([0, b - a], dtype=np.int64))
             for a, b in zip(offsets[:-1], offsets[1:])]
    return parts, order


def fit_in_process(method, X, y, *, loss, lam, n_partitions, random_state, tol, max_rounds, max_epochs=None,
                   callback=None, verbose=0, dual_init=None, sample_weight=None, problems=None, n_threads=None,
                   column_counts=None):
    """Fit ``method`` on in-memory CSR data (validated, labels signed) in this process.

    ``dual_init`` (checked, in the rows' order) starts a warm fit there;
    ``sample_weight`` (checked, or None) weighs the rows' losses.  With
    ``problems`` (a :class:`~daskdca.partitions.OneVsRest`; ``y`` holds class
    indices, ``method`` is a one-vs-rest method) the K problems are fitted
    together and the result's ``w``, ``alpha``, ``primal``, ``dual`` and
    ``gap`` carry the class axis first.  ``n_threads`` is the fit's threads
    (:class:`InProcess`; the same bits for any number).  ``column_counts``
    is :func:`~daskdca.problem.column_nnz` of X where the caller has it
    (None: counted here).
    """
    parts, order = in_process_partitions(X, y, n_partitions, random_state, sample_weight, problems)
    counts = column_nnz(X) if column_counts is None else column_counts
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts), loss=loss,
                    lam=lam, max_column_nnz=int(counts.max(initial=0)), nnz=int(X.nnz))
    executor = InProcess(parts, info, random_state, order, dual_init=dual_init, n_threads=n_threads)
    return run_rounds(executor, setup_plan(executor, method), tol=tol, max_rounds=max_rounds, max_epochs=max_epochs,
                      callback=callback, verbose=verbose)

