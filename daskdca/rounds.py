"""The round loop: update, evaluate the duality gap, stop on a certified gap.

Stopping rule: ``P(w) - D(alpha) <= tol * |P(w)|``.  The per-round gap uses
the solver's running ``w``; before the loop stops, ``w`` is rebuilt from
``alpha`` alone (``X^T alpha / (lam n)``) and the gap is recomputed from it,
so the gap that stops the loop, and the one reported, is a certificate that
does not rely on incrementally maintained state.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, NamedTuple

from daskdca.problem import Problem
from daskdca.solvers import SDCAState, Solver

__all__ = ["HistoryRecord", "RunResult", "run_rounds"]

logger = logging.getLogger("daskdca")


class HistoryRecord(NamedTuple):
    """One gap evaluation."""

    round: int
    epochs: float
    seconds: float
    primal: float
    dual: float
    gap: float


class RunResult(NamedTuple):
    """What :func:`run_rounds` returns; ``primal``/``dual``/``gap`` are certified."""

    state: SDCAState
    history: list
    converged: bool
    primal: float
    dual: float
    gap: float


def _reached(primal, dual, tol):
    return primal - dual <= tol * abs(primal)


def run_rounds(
    solver: Solver,
    problem: Problem,
    state: SDCAState,
    *,
    tol: float,
    max_rounds: int,
    callback: Callable | None = None,
    verbose: int = 0,
) -> RunResult:
    """Run rounds of ``solver`` from ``state`` until the relative gap is ``<= tol``.

    ``callback(record, state)`` is called after every evaluation; a return
    value of ``True`` stops the loop (``converged`` then says whether the
    certified gap met ``tol``).
    """
    history = []
    start = time.perf_counter()
    converged = False
    stop_requested = False
    measure = getattr(solver, "measure", None)
    for _ in range(max_rounds):
        state = solver.update(problem, state)
        if measure is not None:
            primal, dual, state = measure(problem, state)
        else:
            primal, dual = problem.objectives(state.w, state.alpha)
        if _reached(primal, dual, tol):
            w, primal, dual = problem.certified_objectives(state.alpha)
            state = _with_w(state, w)
            converged = _reached(primal, dual, tol)
        record = HistoryRecord(state.round, state.n_epochs, time.perf_counter() - start,
                               primal, dual, primal - dual)
        history.append(record)
        _report(record, verbose)
        if callback is not None:
            stop_requested = callback(record, state) is True
        if converged or stop_requested:
            break
    if not converged:
        w, primal, dual = problem.certified_objectives(state.alpha)
        state = _with_w(state, w)
        converged = _reached(primal, dual, tol)
    return RunResult(state, history, converged, primal, dual, primal - dual)


def _with_w(state, w):
    """``state`` with ``w`` rebuilt from alpha; rows found at the old ``w`` are dropped."""
    if getattr(state, "movable", None) is not None:
        state = state._replace(movable=None)
    return state._replace(w=w)


def _report(record, verbose):
    line = (f"round {record.round:5d}  epochs {record.epochs:8.2f}  time {record.seconds:8.3f}s  "
            f"primal {record.primal:.10e}  dual {record.dual:.10e}  "
            f"gap {record.gap:.3e}  rel {record.gap / max(abs(record.primal), 1e-300):.3e}")
    logger.info(line)
    if verbose:
        print(line, flush=True)
