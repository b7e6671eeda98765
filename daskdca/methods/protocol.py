"""The declared protocols between the drivers and the methods: a plan, a method's settings, an executor.

:class:`Plan` lists every attribute and method that the two drivers
(:mod:`daskdca.driver` and :mod:`daskdca.engine`) read from a plan, and
:class:`WarmStartPlan` the two more they read when a fit starts from given
duals (methods whose ``capabilities.warm_start`` is True); :class:`Method` is
what :data:`daskdca.methods.REGISTRY` holds and the API calls ``setup`` on;
:class:`Executor` is what :func:`daskdca.driver.run_rounds` (and the
:class:`~daskdca.driver.FitState` it gives callbacks) calls on an executor.
They are declarations, ``runtime_checkable`` so that ``tests/test_protocol.py``
can check every registered method against them; the drivers do not import
them, and nothing here changes what they do.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from daskdca.methods.base import Capabilities

__all__ = ["Executor", "Method", "Plan", "WarmStartPlan"]


@runtime_checkable
class Plan(Protocol):
    """A method resolved for one data set: what the drivers read from it, and nothing else.

    States are NamedTuples of ndarrays and numbers; a phase is a
    :class:`~daskdca.methods.base.Phase` ``(name, local, combine)``.
    """

    n: int
    """Rows of the problem; the driver counts epochs as a round's ``steps / n``."""
    eval_every: int
    """Most rounds the driver runs in one executor call between gap evaluations."""
    rounds_per_epoch: float
    """Rounds per pass over the rows; ``max_rounds=None`` runs 1000 epochs' worth."""
    primal_from_dual: bool
    """True: the certified model is ``X^T alpha / (lam n)`` of the dual point; False: ``model(global_state)``."""
    l1_ratio: float
    """L1 share of ``lam`` in the certificate (0.0 but the elastic-net plans'); read as ``getattr(plan, "l1_ratio", 0.0)``."""
    fused_rounds: Callable | None
    """``(part, local, state, ctx, n) -> (local, state, report)`` on one partition, or None (the getattr default)."""
    settled: Callable | None
    """``(global_state, primal) -> global_state or None``: for a fit that stops short of ``tol``, a state to
    certify and return instead of one whose point its rounds had not tested yet (``primal`` that point's
    certified objective), or None to keep it; None (the getattr default): always keep it."""

    def measures(self, round_index: int) -> bool:
        """Whether round ``round_index``'s report carries the gap of its starting state."""

    def phases(self) -> tuple:
        """The phases of one round, in order: ``(name, local, combine)`` each."""

    def init_global(self) -> Any:
        """The global state of a fresh fit."""

    def init_local(self, part, ctx) -> Any:
        """Partition ``part``'s local state of a fresh fit."""

    def model(self, global_state) -> Any:
        """The model ``w`` of a global state (the certified primal point where ``primal_from_dual`` is False)."""

    def dual_point(self, part, local, global_state) -> Any:
        """Partition ``part``'s dual-feasible point ``alpha_k`` (its row order), where the certificate starts."""


@runtime_checkable
class WarmStartPlan(Plan, Protocol):
    """The plan of a method whose ``capabilities.warm_start`` is True: it can start from given duals."""

    def init_global_from(self, w) -> Any:
        """The global state of a fit starting at duals ``alpha0``, given ``w = X^T alpha0 / (lam n)``."""

    def init_local_from(self, part, alpha, ctx) -> Any:
        """Partition ``part``'s local state starting at its duals ``alpha`` (its row order)."""


@runtime_checkable
class Method(Protocol):
    """A method's settings: what :data:`~daskdca.methods.REGISTRY` holds and the API and drivers read."""

    name: str
    """The solver's name (``solver=`` in the API, the registry's key)."""
    capabilities: Capabilities
    """What it supports; every "unsupported combination" error is built from it."""

    def setup(self, info, ops) -> Plan:
        """The plan for this data: the constants resolved from ``info`` and ``ops``' reductions (no rows)."""


@runtime_checkable
class Executor(Protocol):
    """Where the rounds run: what :func:`~daskdca.driver.run_rounds` and its ``FitState`` call on an executor."""

    lookahead: bool
    """Whether the driver submits the next stretch of rounds before reading this one's report."""

    def setup(self, method) -> Plan:
        """``method.setup(info, ops)`` with this executor's reductions (called before ``run_rounds``)."""

    def init(self, plan) -> tuple:
        """``(global_state, local_states)`` to start from: the plan's own, or a warm start."""

    def rounds_until_checkpoint(self, r: int) -> int:
        """Rounds from ``r`` to the next checkpoint (a stretch of rounds never crosses one)."""

    def run(self, plan, global_state, local_states, r: int, n: int) -> tuple:
        """Run rounds ``r .. r + n - 1``; ``(global_state, local_states, report handle)``."""

    def reports(self, handles) -> list:
        """The :class:`~daskdca.methods.base.RoundReport` of each handle, in order."""

    def certify(self, plan, global_state, local_states) -> tuple:
        """``(w, alpha, primal, dual)`` of a state, recomputed from its dual point alone (``alpha`` in the caller's
        row order)."""

    def after_rounds(self, plan, global_state, local_states, r: int, epochs: float, history: list) -> tuple:
        """``(global_state, local_states)`` after round ``r`` (a checkpoint may be written here)."""

    def finish(self, plan, global_state, local_states, r: int, epochs: float, history: list) -> None:
        """Called once when the loop ends, with the state returned."""

    def fetch(self, value) -> Any:
        """A state held by the executor (a future on a cluster), here."""

    def hold(self, global_state) -> Any:
        """The executor's handle of a global state made here (what ``fetch`` reverses)."""

    def dual_points(self, plan, global_state, local_states) -> Any:
        """The dual point of a state, in the caller's row order (a callback's ``FitState.alpha``)."""
