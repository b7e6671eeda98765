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

A method joins by ``Capabilities.multi_class``: its states must have the
same shapes in every problem (so they stack), which rules out plans whose
states hold a per-problem active set.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from daskdca.methods.base import Contribution, Phase, PlanBase, RoundReport, SparseDelta, compress, dense

__all__ = ["OneVsRestMethod", "OneVsRestPlan", "stack_states", "unstack_state"]


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
    return type(state)(*(np.asarray(field)[k] for field in state))


def _split_vector(vector, n_classes, d):
    """The K d-vectors of a flat ``(K d)``-vector (dense or :class:`SparseDelta`), without densifying."""
    if vector is None:
        return [None] * n_classes
    if isinstance(vector, SparseDelta):
        cuts = np.searchsorted(vector.indices, np.arange(n_classes + 1) * d)
        return [SparseDelta((vector.indices[a:b] - k * d).astype(vector.indices.dtype), vector.values[a:b], d)
                for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:]))]
    return [vector[k * d:(k + 1) * d] for k in range(n_classes)]


@dataclass(frozen=True)
class OneVsRestMethod:
    """``method`` on the ``n_classes`` one-vs-rest problems of a multi-class fit (module docstring).

    Parameters
    ----------
    method : method object
        A method whose ``capabilities.multi_class`` is True.
    n_classes : int
        K >= 3, the number of problems.
    """

    method: object
    n_classes: int

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
        return OneVsRestPlan(base=self.method.setup(info, ops), n_classes=self.n_classes, d=info.d)


@dataclass(frozen=True)
class OneVsRestPlan(PlanBase):
    """The plan of :class:`OneVsRestMethod`: ``base`` (one problem's plan) on every problem, states stacked.

    It overrides every member of ``PlanBase`` but its optional hooks, whose defaults it keeps whatever the base
    plan's: no fused rounds (``fused_rounds`` None) and no L1 (``l1_ratio`` 0.0).
    """

    base: object
    n_classes: int
    d: int

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

    # -- states
    def init_global(self):
        return stack_states([self.base.init_global()] * self.n_classes)

    def init_local(self, part, ctx):
        return stack_states([self.base.init_local(part.view(k), ctx) for k in range(self.n_classes)])

    def init_global_from(self, w):
        return stack_states([self.base.init_global_from(w[k]) for k in range(self.n_classes)])

    def init_local_from(self, part, alpha, ctx):
        return stack_states([self.base.init_local_from(part.view(k), alpha[k], ctx) for k in range(self.n_classes)])

    def model(self, state):
        return np.stack([self.base.model(unstack_state(state, k)) for k in range(self.n_classes)])

    def dual_point(self, part, local, state):
        return np.stack([self.base.dual_point(part.view(k), unstack_state(local, k), unstack_state(state, k))
                         for k in range(self.n_classes)])

    # -- rounds
    def phases(self):
        return tuple(Phase(phase.name, partial(self._local, i), partial(self._combine, i))
                     for i, phase in enumerate(self.base.phases()))

    def _local(self, phase_index, part, local, state, ctx):
        """The base phase's local step of every problem on this partition; one contribution for all.

        The K vectors travel as one ``(K d)``-vector (sparse when it has few
        non-zeros), the scalars one problem after the other, and the
        gathered payloads as one entry per partition holding the K tuples.
        Out of core, a base plan with ``local_problems(views, locals, states,
        ctx)`` (same bits as its ``local`` per problem) runs all K problems
        with each block read once.
        """
        views = [part.view(k) for k in range(self.n_classes)]
        locals_ = [unstack_state(local, k) for k in range(self.n_classes)]
        states = [unstack_state(state, k) for k in range(self.n_classes)]
        shared_reads = getattr(self.base, "local_problems", None)
        if shared_reads is not None and len(self.base.phases()) == 1 and part.whole() is None:
            outs = shared_reads(views, locals_, states, ctx)  # out of core: each block read once for all K
        else:
            step = self.base.phases()[phase_index].local
            outs = [step(view, lo, st, ctx) for view, lo, st in zip(views, locals_, states)]
        # a step that leaves every problem's state as it was (a phase with nothing to do) keeps the stacked one
        unchanged = all(out[0] is lo for out, lo in zip(outs, locals_))
        locals_ = [out[0] for out in outs]
        contributions = [out[1] for out in outs]
        vector = None
        if any(c.vector is not None for c in contributions):
            vector = compress(np.concatenate([dense(c.vector, self.d) for c in contributions]))
        scalars = np.concatenate([np.asarray(c.scalars, dtype=np.float64) for c in contributions])
        gathered = (tuple(tuple(c.gathered) for c in contributions),) if any(c.gathered for c in contributions) else ()
        return (local if unchanged else stack_states(locals_)), Contribution(vector, scalars, gathered)

    def _combine(self, phase_index, state, total, ctx):
        """The base phase's combine of every problem; the report holds one ``(P, D)`` per problem."""
        combine = self.base.phases()[phase_index].combine
        vectors = _split_vector(total.vector, self.n_classes, self.d)
        scalars = np.split(np.asarray(total.scalars), self.n_classes)
        states, reports, unchanged = [], [], True
        for k in range(self.n_classes):
            gathered = tuple(item for entry in total.gathered for item in entry[k])
            old = unstack_state(state, k)
            new_state, report = combine(old, Contribution(vectors[k], scalars[k], gathered), ctx)
            unchanged = unchanged and new_state is old
            states.append(new_state)
            reports.append(report)
        report = RoundReport(reports[0].measured, np.array([r.primal for r in reports]),
                             np.array([r.dual for r in reports]),
                             float(sum(r.steps for r in reports)) / self.n_classes)
        return (state if unchanged else stack_states(states)), report
