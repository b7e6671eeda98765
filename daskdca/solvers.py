"""Solvers: small objects with ``init_state`` and ``update`` (one round).

Every solver maximises the dual of

    P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2

and keeps ``w == X^T alpha / (lam n)`` after every round.  A *round* is one
communication round over the partitions: each partition runs a local step
that reads the round's ``w`` and its own rows of ``alpha`` and returns its
update of ``w``; the updates are summed in partition order (so results are
deterministic) and applied.  The protocol follows jaxopt's
``init_state``/``update`` with a typed, immutable state (``NamedTuple``), so
warm starts, checkpoints and callbacks need nothing solver-specific.

The partition-level methods (``local_step``) use only the kernels of
:mod:`daskdca.kernels`; the Dask engine maps the same methods over blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from daskdca.kernels import eso
from daskdca.kernels.sampling import iid_order, minibatch_schedule, permutation_order
from daskdca.kernels.sdca import local_sdca, minibatch_sdca, movable_rows, objective_sums_movable
from daskdca.problem import Problem

__all__ = [
    "SDCAState",
    "MinibatchSDCAState",
    "Solver",
    "SDCA",
    "CoCoAPlus",
    "MinibatchSDCA",
    "SOLVERS",
]

_SAMPLINGS = ("permutation", "iid")


class SDCAState(NamedTuple):
    """State of the dual methods.

    Attributes
    ----------
    w : ndarray (d,)
        Primal iterate, equal to ``X^T alpha / (lam n)`` up to rounding.
    alpha : ndarray (n,)
        Dual variables in the order of the rows of X.
    round : int
        Rounds completed.
    n_epochs : float
        Coordinate steps taken divided by n (evaluation passes not counted).
    random_state : int
        Root of every random stream ``(random_state, round, partition)``.
    movable : ndarray or None
        Rows whose dual step at this ``(w, alpha)`` is non-zero, when the
        round loop's gap pass found them (:meth:`SDCA.measure`); the next
        round's shrinking uses them instead of a pass of its own.  None when
        not known.
    """

    w: np.ndarray
    alpha: np.ndarray
    round: int
    n_epochs: float
    random_state: int
    movable: np.ndarray | None = None


class MinibatchSDCAState(NamedTuple):
    """:class:`SDCAState` plus the data constants of the safe step.

    Attributes
    ----------
    batch_size : int
        Rows drawn per iteration, ``b``.
    sigma2 : float
        Row-normalised spectral quantity (seed 000 §4), with safety margin.
    v : ndarray (n,)
        ESO weights for the full row set.
    iteration : int
        Mini-batch iterations completed; iteration ``j`` draws partition
        ``c``'s rows from the stream ``(random_state, j, c)``.
    """

    w: np.ndarray
    alpha: np.ndarray
    round: int
    n_epochs: float
    random_state: int
    batch_size: int
    sigma2: float
    v: np.ndarray
    iteration: int = 0


class Solver(Protocol):
    """What the round loop needs from a method."""

    name: str

    def init_state(self, problem: Problem, random_state: int, alpha_init=None): ...

    def update(self, problem: Problem, state): ...

    # Optional: ``measure(problem, state) -> (primal, dual, state)``, the
    # objectives of ``state`` plus whatever the next ``update`` can reuse from
    # the same pass (:meth:`SDCA.measure`); without it the round loop calls
    # ``problem.objectives``.


def _check_common(local_iters, sampling, shrinking):
    if isinstance(local_iters, bool) or not (
        isinstance(local_iters, (int, float)) and math.isfinite(local_iters) and local_iters > 0
    ):
        raise ValueError(
            f"local_iters must be a finite number > 0 (passes over each partition per round), "
            f"got {local_iters!r}."
        )
    if sampling not in _SAMPLINGS:
        raise ValueError(f"Unknown sampling {sampling!r}; use one of {list(_SAMPLINGS)}.")
    if not isinstance(shrinking, bool):
        raise ValueError(f"shrinking must be True or False, got {shrinking!r}.")


def _dual_init(problem, alpha_init):
    """A feasible starting ``alpha`` (zeros, or a checked copy of ``alpha_init``)."""
    if alpha_init is None:
        return np.zeros(problem.n)
    alpha = np.array(alpha_init, dtype=np.float64)
    if alpha.shape != (problem.n,):
        raise ValueError(f"alpha_init must have shape ({problem.n},), got {alpha.shape}.")
    conj = problem.loss.conjugate(problem.y, alpha)
    if not np.all(np.isfinite(conj)):
        bad = int(np.flatnonzero(~np.isfinite(conj))[0])
        raise ValueError(
            f"alpha_init[{bad}] = {alpha[bad]!r} is outside the dual domain of the "
            f"{problem.loss.name} loss (y*alpha must lie in {problem.loss.dual_domain})."
        )
    return alpha


def _n_steps(local_iters, n_rows):
    return max(1, int(math.ceil(local_iters * n_rows)))


def round_order(indptr, indices, data, y, sqnorm, alpha, w, row_start, row_end, *, loss, lam_n, sigma,
                sampling, shrinking, local_iters, random_state, round_index, partition, movable=None):
    """Rows visited by one round's sequential steps on rows ``[row_start, row_end)``.

    ``local_iters * n_k`` steps drawn from those rows, or, with shrinking (and
    a loss with active bounds), from those of them whose step at ``w`` is
    non-zero (:func:`daskdca.kernels.sdca.movable_rows`).  The draws come
    from the stream ``(random_state, round_index, partition)``.  ``movable``:
    those rows when a pass at the same ``(w, alpha)`` already found them.
    """
    n_steps = _n_steps(local_iters, row_end - row_start)
    draw = permutation_order if sampling == "permutation" else iid_order
    if not (shrinking and loss.has_active_bounds):
        return draw(random_state, round_index, partition, row_end - row_start, n_steps, row_start)
    if movable is not None:
        rows = movable
    else:
        rows = movable_rows(indptr, indices, data, y, sqnorm, alpha, w, row_start, row_end,
                            int(loss.kind), loss.param, lam_n, sigma)
    if rows.size == 0:
        return rows
    return rows[draw(random_state, round_index, partition, rows.size, n_steps, 0)]


def cocoa_local_update(indptr, indices, data, y, sqnorm, alpha, u, delta_w, row_start, row_end, *, loss,
                       lam_n, sigma_prime, sampling, shrinking, local_iters, random_state, round_index,
                       partition):
    """CoCoA+ LocalSDCA on rows ``[row_start, row_end)``; updates their ``alpha`` in place.

    Runs the round's sequential steps on the local subproblem
    ``G_k^{sigma'}``: margins from ``u = w + sigma' delta_w``, curvature
    ``sigma' ||x_i||^2 / lam_n``; ``u`` and ``delta_w`` are updated in place
    (``delta_w += X_k^T delta_alpha_k / lam_n``), so a partition read block
    by block can carry them from one block to the next.  Returns the number
    of steps.  The in-process solver and the Dask engine both call this.
    """
    order = round_order(indptr, indices, data, y, sqnorm, alpha, u, row_start, row_end, loss=loss,
                        lam_n=lam_n, sigma=sigma_prime, sampling=sampling, shrinking=shrinking,
                        local_iters=local_iters, random_state=random_state, round_index=round_index,
                        partition=partition)
    local_sdca(indptr, indices, data, y, sqnorm, alpha, u, delta_w, order,
               int(loss.kind), loss.param, lam_n, sigma_prime, True)
    return order.shape[0]


@dataclass(frozen=True)
class SDCA:
    """Serial SDCA (Shalev-Shwartz & Zhang, JMLR 2013), LIBLINEAR-style dual CD.

    Maximises ``D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||X^T alpha/(lam n)||^2``
    one coordinate at a time, in closed form.  One round takes
    ``local_iters * n`` coordinate steps.

    Parameters
    ----------
    local_iters : float, default=1.0
        Coordinate steps per round, in multiples of n.
    sampling : {"permutation", "iid"}, default="permutation"
        A fresh random permutation for every pass, or rows drawn with replacement.
    shrinking : bool, default=True
        Each round, visit only the rows whose step at the round's ``w`` is
        non-zero (LIBLINEAR's shrinking, Hsieh et al. 2008 §3.2).  Only
        hinge-type losses have such rows; for logistic and squared loss
        every row is visited either way.
    """

    local_iters: float = 1.0
    sampling: str = "permutation"
    shrinking: bool = True
    name = "sdca"

    def __post_init__(self):
        _check_common(self.local_iters, self.sampling, self.shrinking)

    def init_state(self, problem, random_state, alpha_init=None):
        if problem.n_partitions != 1:
            raise ValueError(
                f"solver='sdca' is serial and uses one partition, got n_partitions="
                f"{problem.n_partitions}; use solver='cocoa+' or 'minibatch_sdca' for partitions."
            )
        alpha = _dual_init(problem, alpha_init)
        return SDCAState(problem.w_from_alpha(alpha), alpha, 0, 0.0, int(random_state))

    def update(self, problem, state):
        alpha = state.alpha.copy()
        w = state.w.copy()
        indptr, indices, data = problem.csr_arrays
        order = round_order(indptr, indices, data, problem.y, problem.sqnorm, alpha, w, 0, problem.n,
                            loss=problem.loss, lam_n=problem.lam_n, sigma=1.0, sampling=self.sampling,
                            shrinking=self.shrinking, local_iters=self.local_iters,
                            random_state=state.random_state, round_index=state.round, partition=0,
                            movable=state.movable)
        local_sdca(indptr, indices, data, problem.y, problem.sqnorm, alpha, w, np.empty(0), order,
                   int(problem.loss.kind), problem.loss.param, problem.lam_n, 1.0, False)
        return state._replace(w=w, alpha=alpha, round=state.round + 1,
                              n_epochs=state.n_epochs + order.shape[0] / problem.n, movable=None)

    def measure(self, problem, state):
        """``(P(w), D(alpha), state)``; with shrinking, the same pass finds the next round's rows.

        The gap sums and the shrinking test both need every margin
        ``x_i.w`` of this state, so one pass gives both
        (:func:`~daskdca.kernels.sdca.objective_sums_movable`) and the state
        carries the rows to the next :meth:`update`, which then takes two
        passes over the data instead of three.  The rows are the ones
        :meth:`update` would find itself, so the iterates do not change.
        """
        if not (self.shrinking and problem.loss.has_active_bounds):
            return (*problem.objectives(state.w, state.alpha), state)
        indptr, indices, data = problem.csr_arrays
        loss_sum, conj_sum, rows = objective_sums_movable(
            indptr, indices, data, problem.y, problem.sqnorm, state.alpha, state.w, 0, problem.n,
            int(problem.loss.kind), problem.loss.param, problem.lam_n, 1.0)
        primal, dual = problem.objectives_from_sums(loss_sum, conj_sum, state.w)
        return primal, dual, state._replace(movable=rows)


@dataclass(frozen=True)
class CoCoAPlus:
    """CoCoA+ with the adding aggregation (Ma et al. 2015, arXiv:1502.03508).

    Each round, every partition k approximately maximises its local
    subproblem ``G_k^{sigma'}`` (spec ``minibatch-sdca.md`` §A6) with
    ``local_iters * n_k`` sequential SDCA steps on its own rows, all other
    duals fixed; then ``w += sum_k delta_w_k``.  Safe for any data with
    ``sigma' = K`` (the number of partitions) and aggregation ``gamma = 1``.

    Parameters
    ----------
    local_iters : float, default=1.0
        Local steps per round, in multiples of the partition's rows (H / n_k).
    sampling : {"permutation", "iid"}, default="permutation"
        Order of the local steps.
    shrinking : bool, default=True
        As in :class:`SDCA`, per partition, judged at the round's ``w``.
    """

    local_iters: float = 1.0
    sampling: str = "permutation"
    shrinking: bool = True
    name = "cocoa+"

    def __post_init__(self):
        _check_common(self.local_iters, self.sampling, self.shrinking)

    def init_state(self, problem, random_state, alpha_init=None):
        alpha = _dual_init(problem, alpha_init)
        return SDCAState(problem.w_from_alpha(alpha), alpha, 0, 0.0, int(random_state))

    def local_step(self, problem, alpha, w, round_index, partition, random_state):
        """LocalSDCA on one partition; updates that partition's rows of ``alpha`` in place.

        Returns ``(delta_w_k, n_steps)`` with ``delta_w_k = X_k^T delta_alpha_k / (lam n)``.
        """
        indptr, indices, data = problem.csr_arrays
        delta_w = np.zeros_like(w)
        n_steps = cocoa_local_update(
            indptr, indices, data, problem.y, problem.sqnorm, alpha, w.copy(), delta_w,
            int(problem.partition_offsets[partition]), int(problem.partition_offsets[partition + 1]),
            loss=problem.loss, lam_n=problem.lam_n,
            # adding: gamma = 1, sigma' = gamma K (Ma et al. 2015, §3)
            sigma_prime=float(problem.n_partitions), sampling=self.sampling, shrinking=self.shrinking,
            local_iters=self.local_iters, random_state=random_state, round_index=round_index,
            partition=partition)
        return delta_w, n_steps

    def update(self, problem, state):
        alpha = state.alpha.copy()
        w_sum = np.zeros_like(state.w)
        n_steps = 0
        for k in range(problem.n_partitions):
            delta_w, steps = self.local_step(problem, alpha, state.w, state.round, k, state.random_state)
            w_sum += delta_w
            n_steps += steps
        return state._replace(w=state.w + w_sum, alpha=alpha, round=state.round + 1,
                              n_epochs=state.n_epochs + n_steps / problem.n)


@dataclass(frozen=True)
class MinibatchSDCA:
    """Mini-batch SDCA with safe ESO steps (seed 000 Algorithm 1; seed 002 §4.2).

    Each iteration draws ``tau = batch_size / K`` distinct rows from each of
    the K partitions ((C, b)-distributed sampling; standard tau-nice sampling
    when K = 1), computes every dual step from the same start-of-iteration
    ``w`` with curvature ``v_i / (lam n)``, and adds all updates to ``w``.
    The weights ``v`` satisfy the ESO, so the dual increases in expectation.
    One round runs ``ceil(local_iters * n / batch_size)`` iterations.

    Parameters
    ----------
    batch_size : int or None, default=None
        Rows per iteration, a multiple of the number of partitions.  None
        picks about ``1/sigma^2``, the largest size with ``beta <= 2``
        (seed 000 §6: linear speed-up while ``b = O(1/sigma^2)``).
    eso : {"auto", "spectral", "sparse"}, default="auto"
        ``"spectral"``: ``v_i = beta ||x_i||^2`` with ``sigma^2`` from power
        iteration (``beta_std`` for one partition, the tight ``beta_dist``
        for several); ``"sparse"``: column-nnz weights (one partition only);
        ``"auto"``: the smaller of the two by ``sum(v)``.
    local_iters : float, default=1.0
        Coordinate steps per round, in multiples of n.
    shrinking : bool, default=True
        With one partition, draw each round's batches only from rows whose
        step at the round's ``w`` is non-zero; the ESO weights are then the
        spectral ones for tau-nice sampling of that row set (``beta`` with
        ``n_a - 1`` in the denominator, since ``n_a sigma_A^2 <= n sigma^2``).
        Needs ``n_partitions=1``.
    """

    batch_size: int | None = None
    eso: str = "auto"
    local_iters: float = 1.0
    shrinking: bool = True
    name = "minibatch_sdca"

    def __post_init__(self):
        _check_common(self.local_iters, "permutation", self.shrinking)
        if self.eso not in ("auto", "spectral", "sparse"):
            raise ValueError(f"Unknown eso {self.eso!r}; use one of ['auto', 'spectral', 'sparse'].")
        if self.batch_size is not None and (
            isinstance(self.batch_size, bool)
            or not isinstance(self.batch_size, (int, np.integer))
            or self.batch_size < 1
        ):
            raise ValueError(f"batch_size must be a positive int or None, got {self.batch_size!r}.")

    def _batch_size(self, problem, sigma2):
        k = problem.n_partitions
        min_rows = int(np.diff(problem.partition_offsets).min())
        if self.batch_size is None:
            tau = max(1, int(round(1.0 / (sigma2 * k))))
            return k * min(tau, min_rows)
        b = int(self.batch_size)
        if b % k != 0:
            raise ValueError(
                f"batch_size={b} must be a multiple of n_partitions={k} "
                f"((C, b)-distributed sampling draws b/C rows per partition); "
                f"use batch_size={k * max(1, round(b / k))}."
            )
        if b // k > min_rows:
            raise ValueError(
                f"batch_size={b} asks for {b // k} rows per partition but the smallest "
                f"partition has {min_rows}; use batch_size <= {k * min_rows}."
            )
        return b

    def eso_weights(self, problem, sigma2, batch_size):
        """ESO-valid weights ``v`` (shape (n,)) for the full row set."""
        b = batch_size
        k = problem.n_partitions
        if k == 1:
            v_spectral = eso.beta_standard(problem.n, b, sigma2) * problem.sqnorm
        else:
            # Partitions differ in size by at most one row; the largest size
            # gives the larger (more conservative) beta.
            s_max = int(np.diff(problem.partition_offsets).max())
            v_spectral = eso.beta_distributed_tight(s_max * k, b, k, sigma2) * problem.sqnorm
        if self.eso == "spectral":
            return v_spectral
        if k > 1:
            if self.eso == "sparse":
                raise ValueError(
                    "eso='sparse' is implemented for one partition only; use eso='spectral' "
                    f"or n_partitions=1 (got n_partitions={k})."
                )
            return v_spectral
        v_sparse = eso.v_sparse_standard(problem.X, b)
        if self.eso == "sparse" or v_sparse.sum() < v_spectral.sum():
            return v_sparse
        return v_spectral

    def init_state(self, problem, random_state, alpha_init=None):
        if self.shrinking and problem.n_partitions > 1 and problem.loss.has_active_bounds:
            raise ValueError(
                "MinibatchSDCA(shrinking=True) needs n_partitions=1 (the distributed sampling "
                f"needs equal partitions); got n_partitions={problem.n_partitions}. "
                "Use shrinking=False or one partition."
            )
        alpha = _dual_init(problem, alpha_init)
        sigma2 = eso.sigma2_power(problem.X)
        b = self._batch_size(problem, sigma2)
        v = self.eso_weights(problem, sigma2, b)
        return MinibatchSDCAState(problem.w_from_alpha(alpha), alpha, 0, 0.0, int(random_state),
                                  b, sigma2, v)

    def _active_set(self, problem, state):
        """``(rows, v)``: the rows to sample this round and their ESO weights."""
        if not (self.shrinking and problem.loss.has_active_bounds):
            return None, state.v
        indptr, indices, data = problem.csr_arrays
        rows = movable_rows(indptr, indices, data, problem.y, state.v, state.alpha, state.w, 0,
                            problem.n, int(problem.loss.kind), problem.loss.param, problem.lam_n, 1.0)
        if rows.size == problem.n:
            return None, state.v
        n_a = rows.size
        b = min(state.batch_size, n_a)
        # tau-nice sampling of b rows out of the n_a active ones; the row set's
        # spectral quantity obeys n_a sigma_A^2 <= n sigma^2 (seed 000 eq. (12)),
        # and beta never needs to exceed b (Cauchy-Schwarz, spec §A4).
        beta = min(float(b), 1.0 + (b - 1) * (problem.n * state.sigma2 - 1.0) / max(1, n_a - 1))
        return rows, beta * problem.sqnorm

    def update(self, problem, state):
        rows, v = self._active_set(problem, state)
        if rows is not None and rows.size == 0:
            return state._replace(round=state.round + 1)
        alpha = state.alpha.copy()
        w = state.w.copy()
        if rows is None:
            b = state.batch_size
            offsets = problem.partition_offsets
        else:
            b = min(state.batch_size, rows.size)
            offsets = np.array([0, rows.size], dtype=np.int64)
        n_iter = _n_steps(self.local_iters * problem.n / b, 1)
        k = offsets.shape[0] - 1
        # Iteration j of the run draws partition c's rows from the stream
        # (random_state, j, c), as one cluster round per iteration would.
        batches = minibatch_schedule(state.random_state, state.iteration, n_iter, offsets, b // k)
        if rows is not None:
            batches = rows[batches]
        indptr, indices, data = problem.csr_arrays
        minibatch_sdca(indptr, indices, data, problem.y, v / problem.lam_n, alpha, w, w, batches,
                       int(problem.loss.kind), problem.loss.param, problem.lam_n)
        return state._replace(w=w, alpha=alpha, round=state.round + 1, iteration=state.iteration + n_iter,
                              n_epochs=state.n_epochs + batches.size / problem.n)


SOLVERS = {cls.name: cls for cls in (SDCA, MinibatchSDCA, CoCoAPlus)}
