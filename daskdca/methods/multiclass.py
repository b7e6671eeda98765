"""One-vs-rest: K binary problems on the same rows, fitted together, one local step per partition per round.

Problem ``k`` (class ``k`` against the rest) is

    min_{w_k} 1/n sum_i s_ik phi(y_ik x_i.w_k) + lam/2 ||w_k||^2,   y_ik = +1 if row i is of class k, else -1,

with ``s_ik`` the row's ``sample_weight`` times, for class ``k``'s rows, its
class weight (LIBLINEAR's one-vs-rest, ``Cp = C w_k``, ``Cn = C``).  The K
problems share nothing but the rows, so :class:`OneVsRestPlan` runs any
capable method's plan on each of them: its states are the method's states
stacked along a first class axis, and in a round each partition runs the
method's local step of every problem on its rows
(:class:`~daskdca.partitions.OneVsRestPartition`'s class views) and sends
one contribution with all K of them.  Each problem sees the very data,
random streams ``(random_state, round, partition)`` and arithmetic of its
own binary fit, so after the same rounds its bits equal that fit's
(``tests/test_multiclass.py``); the rounds, the tasks and, out of core, the
block reads are shared.  Round reports and the certificate carry one
``(P, D)`` per problem, and the fit stops when every problem's gap meets
``tol``.

Each problem stops where its own binary fit would.  A round measures the
gap of its starting state while its local steps move; when problem ``k``'s
gap meets ``tol`` (at a round the round loop reads), the combine keeps
``k``'s global state of the round's start, and the next local step puts
``k``'s local state back to where that round started
(:class:`OneVsRestLocal`'s ``start``).  From then on ``k`` takes no steps
and reports the ``(P, D)`` it stopped with, while the others go on: its
model, duals and certificate are those of its binary fit with the same
``tol``, and the work of a round falls as problems stop (the first 600
rows of digits, hinge, ``C = 0.5``, ``tol = 1e-8``: the ten problems stop
between rounds 20 and 128).  A stopped problem whose
recorded gap does not meet the fit's ``tol`` (a fit resumed from a
checkpoint with a smaller one) steps on.  Plans of more than one phase
(:class:`~daskdca.methods.newton.NewtonPlan`), whose round passes through
states the loop cannot stop at, step every problem to the end.

A method joins by ``Capabilities.multi_class``: its states must have the
same shapes in every problem (so they stack), which rules out plans whose
states hold a per-problem active set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import numpy as np

from daskdca.methods.base import (Contribution, Phase, PlanBase, RoundReport, SparseDelta, compress, dense,
                                  threaded_map)

__all__ = ["OneVsRestGlobal", "OneVsRestLocal", "OneVsRestMethod", "OneVsRestPlan", "PROBLEM_THREADS_MIN_NNZ",
           "stack_states", "unstack_state"]

#: The fewest stored values of an in-memory partition whose problems' local steps run on the step's threads
#: (:func:`~daskdca.methods.base.threaded_map`), one problem per thread; below it the hand-off costs more than a
#: problem's pass (benchmarks/RESULTS.md, "One-vs-rest: the problems on the fit's
#: threads").
PROBLEM_THREADS_MIN_NNZ = 16_384


def stack_states(states):
    """One NamedTuple of the same type whose fields are the states' fields stacked along a new first axis."""
    first = states[0]
    try:
        return type(first)(*(np.stack([np.asarray(getattr(s, f)) for s in states]) for f in first._fields))
    except ValueError as exc:  # pragma: no cover - guarded by Capabilities.multi_class
        raise ValueError(f"the {type(first).__name__} states of the one-vs-rest problems differ in shape ({exc}); "
                         "this method cannot fit them together.") from None


def unstack_state(state, k):
    """Problem ``k``'s state out of a stacked one."""
    return type(state)(*(np.asarray(values)[k] for values in state))


def _split_vector(vector, n_classes, d):
    """The K d-vectors of a flat ``(K d)``-vector (dense or :class:`SparseDelta`), without densifying."""
    if vector is None:
        return [None] * n_classes
    if isinstance(vector, SparseDelta):
        cuts = np.searchsorted(vector.indices, np.arange(n_classes + 1) * d)
        return [SparseDelta((vector.indices[a:b] - k * d).astype(vector.indices.dtype), vector.values[a:b], d)
                for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:]))]
    return [vector[k * d:(k + 1) * d] for k in range(n_classes)]


class OneVsRestGlobal(NamedTuple):
    """The global state of a one-vs-rest fit.  A named tuple: each parameter is also the field of that name.

    Parameters
    ----------
    current : NamedTuple
        The K problems' global states, stacked (:func:`stack_states`).
    stopped : ndarray of bool, shape (K,)
        The problems whose gap met ``tol`` at a measured round: they take no more steps.
    primal, dual : ndarray of float64, shape (K,)
        ``P`` and ``D`` of a stopped problem's state as that round measured them (0 for the others).
    """

    current: tuple
    stopped: np.ndarray
    primal: np.ndarray
    dual: np.ndarray


class OneVsRestLocal(NamedTuple):
    """A partition's local state in a one-vs-rest fit.  A named tuple: each parameter is also the field of
    that name.

    Parameters
    ----------
    current : NamedTuple
        The K problems' local states, stacked.
    start : NamedTuple
        The local states the last local step started from.  A problem that stops at that round's combine
        keeps its global state of the round's start, so its next local step goes back to these.
    """

    current: tuple
    start: tuple


@dataclass(frozen=True)
class OneVsRestMethod:
    """``method`` on the ``n_classes`` one-vs-rest problems of a multi-class fit (module docstring).

    Parameters
    ----------
    method : method object
        A method whose ``capabilities.multi_class`` is True.
    n_classes : int
        K >= 3, the number of problems.
    tol : float or None, default=None
        The fit's stopping tolerance: a problem whose measured gap meets it stops stepping (module
        docstring).  None: every problem steps in every round.
    """

    method: object
    n_classes: int
    tol: float | None = field(default=None, repr=False)  # not the fit's signature: a resume may change tol

    def __post_init__(self):
        if not self.method.capabilities.multi_class:
            raise ValueError(f"solver={self.method!r} cannot fit one-vs-rest problems together "
                             "(Capabilities.multi_class is False).")

    @property
    def name(self):
        return self.method.name

    @property
    def capabilities(self):
        return self.method.capabilities

    def setup(self, info, ops):
        """The method's plan for these rows (its constants depend on X only, so one serves every problem)."""
        return OneVsRestPlan(base=self.method.setup(info, ops), n_classes=self.n_classes, d=info.d, tol=self.tol)


@dataclass(frozen=True)
class OneVsRestPlan(PlanBase):
    """The plan of :class:`OneVsRestMethod`: ``base`` (one problem's plan) on every problem, states stacked.

    It overrides every member of ``PlanBase`` but two of its optional hooks, whose defaults it keeps whatever the
    base plan's: no fused rounds (``fused_rounds`` None) and no L1 (``l1_ratio`` 0.0); ``settled`` runs the base
    plan's on each problem.
    """

    base: object
    n_classes: int
    d: int
    tol: float | None = None

    # -- what the drivers read, as the base plan has it
    @property
    def settings(self):
        return self.base.settings

    @property
    def name(self):
        return self.base.name

    @property
    def n(self):
        return self.base.n

    @property
    def eval_every(self):
        return self.base.eval_every

    @property
    def rounds_per_epoch(self):
        return self.base.rounds_per_epoch

    @property
    def primal_from_dual(self):
        return self.base.primal_from_dual

    def measures(self, round_index):
        return self.base.measures(round_index)

    @property
    def stops_problems(self):
        """Whether a problem stops once its gap meets ``tol`` (module docstring): with a ``tol`` and a base
        plan of one phase, whose round starts and ends at a state the round loop can stop at."""
        return self.tol is not None and len(self.base.phases()) == 1

    # -- states
    def _wrap_global(self, states):
        zeros = np.zeros(self.n_classes)
        return OneVsRestGlobal(stack_states(states), np.zeros(self.n_classes, dtype=bool), zeros, zeros.copy())

    @staticmethod
    def _wrap_local(states):
        stacked = stack_states(states)
        return OneVsRestLocal(stacked, stacked)

    def init_global(self):
        return self._wrap_global([self.base.init_global()] * self.n_classes)

    def init_local(self, part, ctx):
        return self._wrap_local([self.base.init_local(part.view(k), ctx) for k in range(self.n_classes)])

    def init_global_from(self, w):
        return self._wrap_global([self.base.init_global_from(w[k]) for k in range(self.n_classes)])

    def init_local_from(self, part, alpha, ctx):
        return self._wrap_local([self.base.init_local_from(part.view(k), alpha[k], ctx)
                                 for k in range(self.n_classes)])

    def model(self, state):
        return np.stack([self.base.model(unstack_state(state.current, k)) for k in range(self.n_classes)])

    def settled(self, state, primal):
        """The base plan's ``settled`` on each problem with its ``primal``; None where it keeps every one."""
        settle = self.base.settled
        if settle is None:
            return None
        current = [unstack_state(state.current, k) for k in range(self.n_classes)]
        primal = np.broadcast_to(np.asarray(primal, dtype=np.float64), (self.n_classes,))
        settled = [settle(st, p) for st, p in zip(current, primal)]
        if all(st is None for st in settled):
            return None
        return state._replace(current=stack_states([c if st is None else st for c, st in zip(current, settled)]))

    def _locals(self, local, state):
        """Each problem's local state at its global state: a stopped problem's from where its last step started."""
        return [unstack_state(local.start if state.stopped[k] else local.current, k) for k in range(self.n_classes)]

    def dual_point(self, part, local, state):
        locals_ = self._locals(local, state)
        return np.stack([self.base.dual_point(part.view(k), locals_[k], unstack_state(state.current, k))
                         for k in range(self.n_classes)])

    def _met(self, primal, dual):
        """Per problem, whether ``P - D <= tol |P|`` (:func:`daskdca.problem.gap_met`)."""
        primal = np.asarray(primal, dtype=np.float64)
        return primal - np.asarray(dual, dtype=np.float64) <= self.tol * np.abs(primal)

    def _stepping(self, state):
        """The problems that step this round: those not stopped, and a stopped one whose recorded gap does not
        meet this fit's ``tol`` (a fit resumed from a checkpoint with a smaller one)."""
        if not self.stops_problems:
            return np.ones(self.n_classes, dtype=bool)
        return ~state.stopped | ~self._met(state.primal, state.dual)

    # -- rounds
    def phases(self):
        return tuple(Phase(phase.name, partial(self._local, i), partial(self._combine, i))
                     for i, phase in enumerate(self.base.phases()))

    def _local(self, phase_index, part, local, state, ctx):
        """The base phase's local step of every problem that steps on this partition; one contribution for all.

        The K vectors travel as one ``(K d)``-vector (sparse when it has few
        non-zeros), the scalars one problem after the other (zeros for a
        problem that does not step), and the gathered payloads as one entry
        per partition holding the K tuples.  Out of core, a base plan with
        ``local_problems(views, locals, states, ctx)`` (same bits as its
        ``local`` per problem) runs the problems with each block read once.
        """
        K = self.n_classes
        stepping = self._stepping(state)
        starts = self._locals(local, state)
        active = [k for k in range(K) if stepping[k]]
        views = [part.view(k) for k in active]
        states = [unstack_state(state.current, k) for k in active]
        shared_reads = getattr(self.base, "local_problems", None)
        rows = part.whole()
        if not active:
            outs = []
        elif shared_reads is not None and len(self.base.phases()) == 1 and rows is None:
            outs = shared_reads(views, [starts[k] for k in active], states, ctx)  # out of core: each block once
        else:
            step = self.base.phases()[phase_index].local
            calls = [(view, starts[k], st, ctx) for k, view, st in zip(active, views, states)]
            if rows is None or rows.data.shape[0] < PROBLEM_THREADS_MIN_NNZ:
                outs = [step(*call) for call in calls]
            else:  # the problems share only the read-only rows: the bits of one thread (a Newton step's chunk
                # sums run on the chunks' own pool)
                outs = threaded_map(lambda call: step(*call), calls, name="daskdca-problem")
        out_of = dict(zip(active, outs))
        reverted = bool(np.any(state.stopped)) and self.stops_problems
        # a step that leaves every problem's state as it was (a phase with nothing to do) keeps the stacked one
        if not reverted and all(out_of[k][0] is starts[k] for k in active) and len(active) == K:
            new_local = local
        else:
            current = stack_states([out_of[k][0] if k in out_of else starts[k] for k in range(K)])
            if not self.stops_problems:
                new_local = OneVsRestLocal(current, current)
            else:
                new_local = OneVsRestLocal(current, stack_states(starts) if reverted else local.current)
        contributions = [out[1] for out in outs]
        width = len(np.atleast_1d(contributions[0].scalars)) if contributions else 0
        vector = None
        if any(c.vector is not None for c in contributions):
            vector = compress(np.concatenate([dense(out_of[k][1].vector if k in out_of else None, self.d)
                                              for k in range(K)]))
        scalars = np.concatenate([np.asarray(out_of[k][1].scalars, dtype=np.float64) if k in out_of
                                  else np.zeros(width) for k in range(K)])
        gathered = ((tuple(tuple(out_of[k][1].gathered) if k in out_of else () for k in range(K)),)
                    if any(c.gathered for c in contributions) else ())
        return new_local, Contribution(vector, scalars, gathered)

    def _combine(self, phase_index, state, total, ctx):
        """The base phase's combine of every problem that steps; the report holds one ``(P, D)`` per problem.

        A problem whose measured gap of the round's start meets ``tol``
        (at a round the round loop reads, past round 0, as the loop's own
        stopping rule) keeps that state and stops; a stopped problem reports
        the ``(P, D)`` it stopped with.  The round's steps are the mean over
        the problems that stepped, so a budget of passes (``max_epochs``)
        bounds each problem's own passes, as in its binary fit.
        """
        K = self.n_classes
        combine = self.base.phases()[phase_index].combine
        stepping = self._stepping(state)
        vectors = _split_vector(total.vector, K, self.d)
        scalars = np.split(np.asarray(total.scalars), K)
        stopped, primal, dual = state.stopped.copy(), state.primal.copy(), state.dual.copy()
        states, reports, unchanged = [], [], True
        for k in range(K):
            old = unstack_state(state.current, k)
            if not stepping[k]:
                states.append(old)
                continue
            gathered = tuple(item for entry in total.gathered for item in entry[k])
            new_state, report = combine(old, Contribution(vectors[k], scalars[k], gathered), ctx)
            reports.append(report)
            stops = (self.stops_problems and report.measured and ctx.round > 0 and self.base.measures(ctx.round)
                     and bool(self._met(report.primal, report.dual)))
            if stops:  # the round loop would stop this problem's own fit at its starting state: it stays there
                new_state = old
                primal[k], dual[k] = report.primal, report.dual
            stopped[k] = stops
            unchanged = unchanged and new_state is old
            states.append(new_state)
        measured = all(r.measured for r in reports) if reports else True
        current = state.current if unchanged else stack_states(states)
        at = iter(reports)
        pairs = [(primal[k], dual[k]) if not stepping[k] else next(at)[1:3] for k in range(K)]
        # certified (RoundReport.certified) when every problem's report is: a stopped problem's (P, D) came
        # from a report of the same plan on the state it kept
        report = RoundReport(measured, np.array([p for p, _ in pairs], dtype=np.float64),
                             np.array([q for _, q in pairs], dtype=np.float64),
                             float(sum(r.steps for r in reports)) / max(len(reports), 1),
                             certified=bool(reports) and all(getattr(r, "certified", False) for r in reports))
        if unchanged and all(np.array_equal(a, b) for a, b in
                             ((stopped, state.stopped), (primal, state.primal), (dual, state.dual))):
            return state, report
        return OneVsRestGlobal(current, stopped, primal, dual), report
