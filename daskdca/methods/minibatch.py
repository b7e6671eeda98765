"""Mini-batch SDCA with safe ESO steps, on partitions of any sizes.

Solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` through its
dual.  A round is one mini-batch iteration (Takáč et al. 2015 [TRS15] Algorithm 1): partition
c draws ``tau_c`` distinct rows from its ``s_c`` rows (stream
``(random_state, round, c)``), every step reads the round's ``w`` with
curvature ``v_i / (lam n)``, and ``w += sum_c delta_w_c``.

Safe weights for unequal partitions
-----------------------------------
The sampling is tau_c-nice inside each partition, independently across
partitions, so with ``p_c = tau_c / s_c``:
``P(i in S) = p_c``, ``P(i, j in S) = tau_c (tau_c - 1) / (s_c (s_c - 1)) =: q_c``
for ``i != j`` in partition c, and ``p_c p_c'`` across partitions.  Weights
``v`` are valid (the dual improves in expectation; Takáč et al. 2015 [TRS15] Def. 1 with
non-uniform marginals) when ``P o G <= Diag(p_i v_i)`` with ``G = X X^T`` and
``P`` the pair-inclusion matrix.  Writing
``P = p p^T + blockdiag_c((q_c - p_c^2) 1 1^T) + Diag(p - q)`` and using
``q_c <= p_c^2`` (so the block term is negative semidefinite under the
Schur product with ``G``) and ``D_p G D_p <= n sigma^2 D_p^2 Diag(G)``
(``sigma^2`` the row-normalised spectral quantity of Takáč et al. 2015 [TRS15] §4) gives

    v_i = beta_c ||x_i||^2,   beta_c = 1 + n sigma^2 tau_c / s_c - (tau_c - 1) / (s_c - 1),

or ``beta_c = b = sum_c tau_c`` for every partition (Cauchy-Schwarz), whichever
has the smaller ``sum_c tau_c beta_c`` (an elementwise minimum of two valid
weight vectors is not valid in general).  With equal partitions this is
exactly ``beta_distributed_tight`` (docs/references.md, note N1).  The weights printed for equal
partitions are invalid when sizes differ: a short partition is sampled at a
higher rate ``p_c`` and its rows then need a larger ``beta`` (a test
measured a 4.9x ESO violation on a short block of duplicate rows).  Choosing
``tau_c`` proportional to ``s_c`` keeps ``p_c`` close to ``b / n`` for every
row.  ``tests/test_eso.py`` checks the formula by ``lambda_max`` with exact
pair-inclusion probabilities.

Naive and aggressive steps (Takáč et al. 2013 [TBRS13] §4.1 and §4.3)
---------------------------------------------------------------------
``step="naive"`` takes the serial step ``v_i = ||x_i||^2`` (``beta = 1``)
for every row of the batch from the same ``w`` (Takáč et al. 2013 [TBRS13] §4.1).  It is
exact SDCA at ``b = 1`` and can diverge for ``b >> 1/sigma^2`` (the
two-identical-rows toy of §4.1 oscillates forever), so it warns.

``step="aggressive"`` is Takáč et al. 2013 [TBRS13] Algorithm 2 (typos fixed, docs/references.md, note N3) as a
round of two phases:

1. ``trial``: each partition commits or drops the previous round's pending
   step (by the flag the last combine set), measures the gap of the round's
   start, draws its ``tau_c`` rows and takes the tentative step with
   ``beta^(t)``; it sends ``delta~_w`` and ``zeta = sum ||x_i||^2 delta~_i^2``.
   The combine sets ``rho = clip_[1, beta_b](||X^T delta~||^2 / zeta)``
   (eq. (23)) and ``beta^(t+1) = (beta^(t))^gamma rho^(1 - gamma)`` with
   ``gamma = 0.95`` (Algorithm 2).
2. ``step``: each partition recomputes the step of the same rows with
   ``beta = rho``, keeps the new values as *pending* and sends ``delta_w``
   and the conjugate change; the combine computes the exact dual change
   ``D(alpha + delta) - D(alpha) = -conj_change / n - lam/2 (2 w.delta_w + ||delta_w||^2)``
   and accepts the step (``w += delta_w``) only if it is > 0.

``dual_point`` applies a pending step that was accepted, so
``w = X^T alpha / (lam n)`` holds after every round, rejected steps
included.  ``beta_b`` is the largest safe ``beta_c`` of the module
docstring above (with one partition Takáč et al. 2013 [TBRS13] eq. (11) exactly).

The elastic net (``l1_ratio = rho > 0``)
----------------------------------------
``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)`` is
solved by the proximal dual of Shalev-Shwartz & Zhang 2016 [SSZ16] (Prox-SDCA),
as :class:`~daskdca.methods.sdca.ProxSDCAPlan` does: ``lam' = lam (1 - rho)``,
``g(w) = 1/2 ||w||^2 + c ||w||_1`` with ``c = rho / (1 - rho)``, the dual state
``v = X^T alpha / (lam' n)`` and the primal point ``w = grad g*(v)``, the soft
threshold of ``v`` at ``c``.  ``g`` is 1-strongly convex, so ``g*`` is
1-smooth:

    g*(v + dv) <= g*(v) + grad g*(v).dv + 1/2 ||dv||^2,

the same quadratic bound the L2 case has with ``g*(v) = 1/2 ||v||^2`` (where
it is an equality).  The ESO argument bounds the dual change of a batch only
through this bound (the expectation of ``||X^T h||^2`` over the sampling), so
the safe weights ``v_i`` above hold verbatim with the margins taken at
``w = grad g*(v)`` instead of ``w = v``: every batch takes the L2 steps at the
margins ``x_i.w`` of the thresholded ``w`` with curvature ``v_i / (lam' n)``,
then ``v += sum_i delta_i x_i / (lam' n)`` and ``w = soft_threshold(v, c)``
(:class:`ProxMinibatchPlan`).  The duals stay feasible and the drivers certify
``P(w) - D(alpha)`` of the elastic net from ``X^T alpha`` recomputed
(:func:`daskdca.problem.objectives` with the plan's ``l1_ratio``).  A partition's
round sends ``dv_k`` as the L2 round sends ``delta_w_k``, so the rounds run
out of core and on a cluster unchanged.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from daskdca.kernels import eso
from daskdca.kernels.prox_sdca import prox_minibatch_sdca_rounds, soft_threshold_vector
from daskdca.kernels.sampling import minibatch_indices, minibatch_schedule
from daskdca.kernels.sdca import (
    minibatch_sdca,
    minibatch_sdca_rounds,
    minibatch_trial_step,
    objective_sums_movable,
)
from daskdca.losses import LOSSES
from daskdca.methods.base import (
    Capabilities,
    Contribution,
    Phase,
    PlanBase,
    RoundReport,
    apply_vector,
    check_l1_ratio,
    compress,
    dense,
)
from daskdca.methods.dual import DualGlobal
from daskdca.methods.sdca import ProxGlobal, ProxStart
from daskdca.partitions import objective_sums_part, row_view

__all__ = ["AggressiveGlobal", "AggressiveLocal", "AggressivePlan", "MinibatchSDCA", "MinibatchLocal",
           "MinibatchPlan", "ProxMinibatchPlan", "partition_batch_sizes", "partition_betas"]

_ESO = ("auto", "spectral", "sparse")
_STEPS = ("safe", "naive", "aggressive")
# The step-size adaptation parameter of [TBRS13] Algorithm 2 (gamma = 0.95; gamma_agg in
# docs/references.md, note N0).
AGGRESSIVE_GAMMA = 0.95


class MinibatchLocal(NamedTuple):
    """A partition's dual variables, its rows' curvatures, and the rows it samples from.

    Attributes
    ----------
    alpha : ndarray (n_k,)
    curvature : ndarray (n_k,)
        ``q_i = v_i / (lam n)`` with the weights ``v`` for sampling from all rows.
    active : ndarray of int64
        The rows the batches are drawn from until the next gap evaluation:
        all rows, or with shrinking those whose step was non-zero there.
    step_curvature : ndarray (n_k,)
        The curvature the steps use: ``curvature`` when ``active`` is every
        row, else the spectral weights for sampling from ``active``.
    """

    alpha: np.ndarray
    curvature: np.ndarray
    active: np.ndarray
    step_curvature: np.ndarray


def _sums_and_movable(part, alpha, w, loss, lam_n):
    """In one pass over the partition's rows: the gap sums ``[loss_sum, conj_sum]`` at ``w``, the rows whose
    step at ``w`` is non-zero (the shrinking test), and every row's ``||x_i||^2``."""
    kind, param = int(loss.kind), loss.param
    loss_sum = conj_sum = 0.0
    found, sqnorm = [], []
    for rows, lo, hi, start in part.pieces():
        a = row_view(alpha, rows, lo, start)
        ls, cs, movable, _ = objective_sums_movable(rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                                    rows.sqnorm, a, w, lo, hi, kind, param, lam_n, 1.0)
        loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
        found.append(movable - lo + start)
        sqnorm.append(rows.sqnorm[lo:hi])
    return np.array([loss_sum, conj_sum]), np.concatenate(found).astype(np.int64), np.concatenate(sqnorm)


#: What a Dask round costs and what a stored value costs a step, for the batch a round is worth
#: (``batch_size="round"``): a resident round's overhead was 4.2-8.8 ms at d = 100 to 100,000
#: (benchmarks/RESULTS.md, "Engine: resident rounds"), and a serial SDCA pass ran at 80-560 M stored
#: values a second on one core ("One-epoch throughput").
ROUND_SECONDS = 5e-3
STORED_VALUE_SECONDS = 5e-9


def round_batch(info, b_sigma):
    """The batch a Dask round is worth: ``sqrt(r b_sigma)``, between ``b_sigma = 1/sigma^2`` and ``n``, with
    ``r = ROUND_SECONDS / (STORED_VALUE_SECONDS * nnz / n)`` the rows whose steps cost a round's overhead.

    A round of ``b`` rows costs ``L + b c`` (``L`` the overhead, ``c`` a row's steps) and moves the dual
    about as far as ``b / beta_b`` serial steps, ``beta_b = 1 + (b - 1) / b_sigma`` up to the bound's constants
    ([TRS15] eq. (12)); the time per serial step's progress, ``(L + b c)(1 / b + 1 / b_sigma)``, is least at
    ``b = sqrt(b_sigma L / c)``.  Fixed by the data alone (not by a timing), so a rerun or a resumed fit takes
    the same batch and the same bits.
    """
    per_row = STORED_VALUE_SECONDS * max(1.0, info.nnz / info.n) if info.nnz else STORED_VALUE_SECONDS
    rows = ROUND_SECONDS / per_row
    return int(min(info.n, max(b_sigma, round(math.sqrt(rows * b_sigma)))))


def resolve_batch_sizes(info, ops, batch_size):
    """``(sigma^2, tau_c)`` of a global mini-batch method: ``sigma^2`` by power iteration through ``ops``
    ([TRS15] eq. (12) bound), a batch of ``batch_size`` rows (default ``1/sigma^2``; ``"round"``:
    :func:`round_batch`) split as ``tau_c``."""
    n = info.n
    if isinstance(batch_size, numbers.Integral) and batch_size > n:
        raise ValueError(f"batch_size={batch_size} is more than the {n} rows; use batch_size <= {n}.")
    column_bound = min(1.0, max(1, int(info.max_column_nnz)) / n)
    sigma2 = eso.sigma2_power_iteration(ops.gram_matvec, info.d, n, column_bound)
    b_sigma = max(1, int(round(1.0 / sigma2)))
    b = b_sigma if batch_size is None else round_batch(info, b_sigma) if batch_size == "round" else batch_size
    return sigma2, partition_batch_sizes(b, info.partition_sizes)


def partition_batch_sizes(batch_size, sizes):
    """``tau_c``: about ``batch_size * s_c / n`` rows from partition c, at least 1, at most ``s_c``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    taus = np.rint(batch_size * sizes / n).astype(np.int64)
    return np.clip(taus, 1, sizes)


def partition_betas(sizes, taus, sigma2):
    """``beta_c = 1 + n sigma^2 tau_c / s_c - (tau_c - 1) / (s_c - 1)``, or ``b`` for all (module docstring).

    With one partition the sampling is tau-nice and the exact
    ``beta = 1 + (b - 1)(n sigma^2 - 1) / (n - 1)`` of Takáč et al. 2015 [TRS15] eq. (12) is
    used (smaller: it keeps the block term the bound above drops).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    taus = np.asarray(taus, dtype=np.float64)
    n, b = sizes.sum(), taus.sum()
    if sizes.shape[0] == 1:
        return np.array([min(b, max(1.0, eso.beta_standard(int(n), int(b), sigma2)))])
    within = np.where(sizes > 1, (taus - 1.0) / np.maximum(sizes - 1.0, 1.0), 0.0)
    beta = np.maximum(1.0, 1.0 + n * sigma2 * taus / sizes - within)
    # Both beta and the constant b are valid; an elementwise minimum of two
    # valid weight vectors need not be, so take one of them whole: the one
    # with the smaller expected weight sum_c tau_c beta_c.
    return beta if taus @ beta <= b * b else np.full_like(beta, b)


@dataclass(frozen=True)
class MinibatchSDCA:
    """Mini-batch SDCA with safe ESO steps (Takáč et al. 2015 [TRS15] Algorithm 1; Takáč et al. 2013 [TBRS13] §4.2).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` through its dual.
    Each round draws about ``batch_size`` rows, ``tau_c`` from partition c in
    proportion to its size, takes every dual step from the round's ``w`` with
    safe weights ``v`` (module docstring) and adds all updates to ``w``.

    Parameters
    ----------
    batch_size : int, "round" or None, default=None
        Rows per round, ``b``.  None picks about ``1/sigma^2``, the largest
        size with ``beta <= 2`` (Takáč et al. 2015 [TRS15] §6: linear speed-up while
        ``b = O(1/sigma^2)``).  ``"round"`` picks the batch a Dask round is
        worth, ``sqrt(r / sigma^2)`` with ``r`` the rows whose steps cost a
        round's overhead (:func:`round_batch`); ``daskdca.fit`` gives
        ``solver="minibatch_sdca"`` on a cluster that default.
    eso : {"auto", "spectral", "sparse"}, default="auto"
        ``"spectral"``: ``v_i = beta_c ||x_i||^2``; ``"sparse"``: the
        column-nnz weights of docs/references.md, note N1 (one partition only); ``"auto"``: with
        one partition the smaller of the two by ``sum(v)``, else spectral.
    eval_every : int or None, default=None
        Rounds between duality-gap evaluations (each one is a pass over the
        data).  None: once per ``ceil(n / b)`` rounds, i.e. once per epoch of
        steps.  The stop is certified from the duals either way.
    shrinking : bool, default=True
        At each gap evaluation, every partition keeps only the rows whose step
        at ``w`` is non-zero (Hsieh et al. 2008 §3.2) and draws its batches
        from them until the next evaluation, with the spectral weights for
        that row set: ``beta_c`` of the module docstring with ``s_c`` the
        active count (``n sigma^2`` still bounds ``lambda_max`` of any subset).
        Only hinge-type losses have such rows.
    step : {"safe", "naive", "aggressive"}, default="safe"
        ``"safe"``: the ESO weights above (Takáč et al. 2013 [TBRS13] eq. (15) with
        ``beta = beta_b``).  ``"naive"``: ``beta = 1`` (Takáč et al. 2013 [TBRS13] §4.1); it
        can diverge when ``b >> 1/sigma^2`` and warns.  ``"aggressive"``:
        Takáč et al. 2013 [TBRS13] Algorithm 2, ``beta`` adapted in ``[1, beta_b]`` and
        non-improving steps rejected (two reductions a round; module
        docstring).  ``eso`` other than "auto" applies to ``"safe"`` only.
    l1_ratio : float, default=0.0
        ``rho`` in ``[0, 1)``: with ``rho > 0`` the elastic net
        ``1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``
        by proximal mini-batch steps (module docstring, "The elastic net"),
        in memory, out of core and on a cluster, with ``step="safe"`` or
        ``"naive"``.
        ``rho = 0`` is the L2 problem (the same code).
    """

    batch_size: int | str | None = None
    eso: str = "auto"
    eval_every: int | None = None
    shrinking: bool = True
    step: str = "safe"
    l1_ratio: float = 0.0
    name = "minibatch_sdca"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=True, cluster=True, shrinking=True,
                                warm_start=True, sample_weight=True)

    def __post_init__(self):
        if not isinstance(self.shrinking, bool):
            raise ValueError(f"shrinking must be True or False, got {self.shrinking!r}.")
        if self.eso not in _ESO:
            raise ValueError(f"Unknown eso {self.eso!r}; use one of {list(_ESO)}.")
        if self.step not in _STEPS:
            raise ValueError(f"Unknown step {self.step!r}; use one of {list(_STEPS)}.")
        if self.step != "safe" and self.eso != "auto":
            raise ValueError(f"eso={self.eso!r} sets the safe step's weights; step={self.step!r} takes "
                             "eso='auto' only.")
        if self.step == "naive":
            warnings.warn("MinibatchSDCA(step='naive') adds the serial steps of the whole batch (beta = 1) and "
                          "can diverge or stall when batch_size >> 1/sigma^2 (Takáč et al. 2013 [TBRS13] §4.1, docs/references.md); use step='safe' "
                          "(the default) or step='aggressive' for a step that converges.", UserWarning,
                          stacklevel=3)
        for field in ("batch_size", "eval_every"):
            value = getattr(self, field)
            if field == "batch_size" and value == "round":
                continue
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                                      or value < 1):
                raise ValueError(f"{field} must be a positive int or None, got {value!r}.")
        self._check_l1_ratio()

    def _check_l1_ratio(self):
        check_l1_ratio(self.l1_ratio, "MinibatchSDCA")
        rho = self.l1_ratio
        if rho == 0:
            return
        if self.step == "aggressive":
            raise ValueError(
                f"step='aggressive' does not take l1_ratio={rho!r}: its acceptance test measures the dual change of "
                "the L2 regulariser.  Use step='safe' (the default) for the elastic net, or l1_ratio=0.")

    def setup(self, info, ops):
        """Compute ``sigma^2`` by power iteration (through ``ops``), then ``tau_c`` and ``beta_c``.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`).

        Returns
        -------
        MinibatchPlan
            The plan of the rounds (``AggressivePlan``, its subclass, for
            ``step="aggressive"``).
        """
        K, n = info.n_partitions, info.n
        if self.eso == "sparse" and K > 1:
            raise ValueError("eso='sparse' is implemented for one partition only; use eso='spectral' "
                             f"or n_partitions=1 (got n_partitions={K}).")
        sigma2, taus = resolve_batch_sizes(info, ops, self.batch_size)
        betas = partition_betas(info.partition_sizes, taus, sigma2)
        if self.step == "naive":
            betas = np.ones_like(betas)  # v_i = ||x_i||^2, the serial step (Takáč et al. 2013 [TBRS13] eq. (14))
        b_eff = int(taus.sum())
        eval_every = self.eval_every if self.eval_every is not None else max(1, -(-n // b_eff))
        if self.l1_ratio > 0:
            rho = float(self.l1_ratio)
            # lam' = lam (1 - rho), c = rho / (1 - rho) (module docstring, "The elastic net")
            return ProxMinibatchPlan(settings=self, loss=info.loss, n=n, d=info.d, lam_n=info.lam_n * (1.0 - rho),
                                     n_partitions=K, sigma2=float(sigma2), taus=tuple(int(t) for t in taus),
                                     betas=tuple(float(x) for x in betas), batch_size=b_eff,
                                     eval_every=int(eval_every), rounds_per_epoch=max(1, -(-n // b_eff)),
                                     lam=float(info.lam), l1_ratio=rho, threshold=rho / (1.0 - rho))
        plan = AggressivePlan if self.step == "aggressive" else MinibatchPlan
        return plan(settings=self, loss=info.loss, n=n, d=info.d, lam_n=info.lam_n, n_partitions=K,
                             sigma2=float(sigma2), taus=tuple(int(t) for t in taus),
                             betas=tuple(float(x) for x in betas), batch_size=b_eff, eval_every=int(eval_every),
                             rounds_per_epoch=max(1, -(-n // b_eff)))


@dataclass(frozen=True)
class MinibatchPlan(PlanBase):
    """:class:`MinibatchSDCA` resolved for one data set (a warm start: ``PlanBase``'s, which keeps the fresh
    curvatures and all rows active, and sets ``w`` and ``alpha``)."""

    settings: MinibatchSDCA
    loss: object
    n: int
    d: int
    lam_n: float
    n_partitions: int
    sigma2: float
    taus: tuple
    betas: tuple
    batch_size: int
    eval_every: int
    rounds_per_epoch: int
    primal_from_dual = True

    @property
    def name(self):
        return self.settings.name

    def measures(self, round_index):
        return round_index % self.eval_every == 0

    def init_global(self):
        return DualGlobal(np.zeros(self.d))

    def init_local(self, part, ctx):
        """Zero duals and the curvature of the partition's rows (one pass over its norms)."""
        sqnorm = np.concatenate([rows.sqnorm[lo:hi] for rows, lo, hi, _ in part.pieces()])
        v_spectral = self.betas[ctx.partition] * sqnorm
        v = v_spectral
        if self.n_partitions == 1 and self.settings.eso != "spectral" and self.settings.step == "safe":
            X = sp.vstack([rows.csr(lo, hi) for rows, lo, hi, _ in part.pieces()], format="csr")
            v_sparse = eso.v_sparse_standard(X, self.batch_size)
            if self.settings.eso == "sparse" or v_sparse.sum() < v_spectral.sum():
                v = v_sparse
        curvature = v / self.lam_n
        return MinibatchLocal(np.zeros(part.n_rows), curvature, np.arange(part.n_rows, dtype=np.int64), curvature)

    def phases(self):
        return (Phase("round", self.local, self.combine),)

    def model(self, state):
        return state.w

    def dual_point(self, part, local, state):
        return local.alpha

    def _shrinks(self):
        return self.settings.shrinking and self.loss.has_active_bounds

    def _evaluate(self, part, local, w, k):
        """Gap sums at ``w`` and, with shrinking, the new active rows and their curvature."""
        if not self._shrinks():
            return objective_sums_part(part, local.alpha, w, self.loss), local
        sums, active, sqnorm = _sums_and_movable(part, local.alpha, w, self.loss, self.lam_n)
        if active.shape[0] == part.n_rows:
            return sums, local._replace(active=active, step_curvature=local.curvature)
        tau = min(self.taus[k], max(1, active.shape[0]))
        if self.settings.step == "naive":
            beta = 1.0  # the serial step on any row set
        elif self.n_partitions == 1:
            beta = partition_betas([max(1, active.shape[0])], [tau], self._active_sigma2(active.shape[0]))[0]
        else:
            # beta_c of the module docstring for tau rows out of the active ones;
            # n sigma^2 bounds lambda_max of the normalised Gram matrix of any row subset
            a = active.shape[0]
            beta = max(1.0, 1.0 + self.n * self.sigma2 * tau / max(1, a) - (tau - 1.0) / max(1.0, a - 1.0))
        step_curvature = beta * sqnorm / self.lam_n
        return sums, local._replace(active=active, step_curvature=step_curvature)

    def _active_sigma2(self, n_active):
        """``sigma_A^2`` bound for a row subset of size ``n_A``: ``n_A sigma_A^2 <= n sigma^2`` ([TRS15] eq. (12))."""
        return min(1.0, self.n * self.sigma2 / max(1, n_active))

    def local(self, part, local, state, ctx):
        """One mini-batch iteration on one partition (gap sums first on evaluation rounds).

        Out of core only the blocks that hold a drawn row are read (all of
        them on an evaluation round).
        """
        w = state.w
        local = local._replace(alpha=local.alpha.copy())
        measured = self.measures(ctx.round)
        sums = np.zeros(2)
        if measured:
            sums, local = self._evaluate(part, local, w, ctx.partition)
        active = local.active
        tau = min(self.taus[ctx.partition], active.shape[0])
        delta_w = np.zeros_like(w)
        if tau > 0:
            batch = active[minibatch_indices(ctx.random_state, ctx.round, ctx.partition, active.shape[0], tau, 0)]
            starts = part.block_starts
            blocks = np.unique(np.searchsorted(starts, batch, side="right") - 1)
            for rows, lo, hi, start in part.pieces(blocks):
                inside = batch[(batch >= start) & (batch < start + hi - lo)]
                if inside.size:
                    minibatch_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                   row_view(local.step_curvature, rows, lo, start),
                                   row_view(local.alpha, rows, lo, start), w, delta_w,
                                   (inside - start + lo)[None, :], int(self.loss.kind), self.loss.param,
                                   self.lam_n)
        scalars = np.array([sums[0], sums[1], float(tau), float(measured)])
        return local, Contribution(compress(delta_w), scalars)

    def _report(self, measured, loss_sum, conj_sum, w, steps):
        """``P(w) = loss_sum/n + lam/2 ||w||^2`` and ``D(alpha) = -conj_sum/n - lam/2 ||w||^2``."""
        reg = 0.5 * self.lam_n / self.n * float(w @ w)
        return RoundReport(bool(measured), loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))

    def combine(self, state, total, ctx):
        loss_sum, conj_sum, steps, measured = total.scalars
        report = self._report(measured > 0, loss_sum, conj_sum, state.w, steps)
        return type(state)(apply_vector(state.w, total.vector)), report

    def fused_rounds(self, part, local, state, ctx, n_rounds):
        """``n_rounds`` rounds on a single in-memory partition in one kernel call.

        The same bits as :meth:`local` and :meth:`combine` once per round
        (:meth:`_rounds_kernel`); returns the new local and global states and
        the report of the first round with the steps of all of them.
        """
        rows = part.whole()
        new_state = type(state)(*(field.copy() for field in state))
        local = local._replace(alpha=local.alpha.copy())
        measured = self.measures(ctx.round)
        sums = np.zeros(2)
        if measured:
            sums, local = self._evaluate(part, local, state.w, 0)
        active = local.active
        tau = min(self.taus[0], active.shape[0])
        steps = 0
        if tau > 0:
            batches = active[minibatch_schedule(ctx.random_state, ctx.round, n_rounds,
                                                np.array([0, active.shape[0]], dtype=np.int64), tau)]
            steps = self._rounds_kernel(rows, local, new_state, batches)
        return local, new_state, self._report(measured, sums[0], sums[1], state.w, steps)

    def _rounds_kernel(self, rows, local, state, batches):
        """The rounds of ``batches`` on ``rows``, in place on ``local.alpha`` and ``state.w``
        (:func:`~daskdca.kernels.sdca.minibatch_sdca_rounds`); returns the coordinate steps."""
        return minibatch_sdca_rounds(rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                     local.step_curvature, local.alpha, state.w, batches, int(self.loss.kind),
                                     self.loss.param, self.lam_n, np.zeros_like(state.w))


@dataclass(frozen=True)
class ProxMinibatchPlan(ProxStart, MinibatchPlan):
    """:class:`MinibatchSDCA` with ``l1_ratio = rho > 0`` (the elastic net) resolved for one data set.

    The rounds of :class:`MinibatchPlan` on the proximal dual of Shalev-Shwartz &
    Zhang 2016 [SSZ16] (module docstring, "The elastic net"): ``lam_n`` is
    ``lam' n = lam (1 - rho) n`` (the steps' curvature ``v_i / (lam' n)``), the
    global state is :class:`~daskdca.methods.sdca.ProxGlobal` ``(w, v)`` with
    ``v = X^T alpha / (lam' n)`` (up to rounding) and ``w = grad g*(v)``, the
    soft threshold of ``v`` at ``threshold = rho / (1 - rho)``.  A partition's
    round is :meth:`MinibatchPlan.local` unchanged: the L2 steps at the margins
    of ``state.w``, sending ``dv_k = sum_i delta_i x_i / (lam' n)``; the combine
    sets ``v += sum_k dv_k`` and ``w = grad g*(v)``.

    Certificate: the duals are feasible, ``primal_from_dual`` is False and the
    model is ``w``; the drivers recompute ``P(w)`` and ``D(alpha)`` from
    ``X^T alpha`` with the plan's ``l1_ratio`` (:func:`daskdca.problem.objectives`).
    """

    lam: float = 0.0
    l1_ratio: float = 0.0
    threshold: float = 0.0
    primal_from_dual = False

    def _report(self, measured, loss_sum, conj_sum, w, steps):
        """``P(w) = loss_sum/n + lam'/2 ||w||^2 + lam rho ||w||_1`` and
        ``D(alpha) = -conj_sum/n - lam' g*(v) = -conj_sum/n - lam'/2 ||w||^2``."""
        half_sq = 0.5 * self.lam_n / self.n * float(w @ w)
        l1 = self.lam * self.l1_ratio * float(np.abs(w).sum())
        return RoundReport(bool(measured), loss_sum / self.n + half_sq + l1, -conj_sum / self.n - half_sq,
                           float(steps))

    def combine(self, state, total, ctx):
        """``v += sum_k dv_k``, ``w = grad g*(v)``; the gap of the round's start."""
        loss_sum, conj_sum, steps, measured = total.scalars
        report = self._report(measured > 0, loss_sum, conj_sum, state.w, steps)
        new_v = apply_vector(state.v, total.vector)
        return ProxGlobal(soft_threshold_vector(new_v, self.threshold), new_v), report

    def _rounds_kernel(self, rows, local, state, batches):
        """The rounds of ``batches`` on ``rows``, in place on ``local.alpha``, ``state.v`` and ``state.w``
        (:func:`~daskdca.kernels.prox_sdca.prox_minibatch_sdca_rounds`); returns the coordinate steps."""
        return prox_minibatch_sdca_rounds(rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                          local.step_curvature, local.alpha, state.v, state.w, batches,
                                          int(self.loss.kind), self.loss.param, self.lam_n, self.threshold,
                                          np.zeros_like(state.w))


class AggressiveGlobal(NamedTuple):
    """The aggressive method's global state (Takáč et al. 2013 [TBRS13] Algorithm 2).

    Attributes
    ----------
    w : ndarray (d,)
        ``w(alpha)`` of the committed duals plus the pending step if accepted.
    beta : float
        ``beta^(t)``, the step size of the next tentative step, in ``[1, beta_b]``.
    rho : float
        The step size of this round's actual step (set by the ``trial`` combine).
    accepted : float
        1.0 when the last round's step was accepted (its pending values count), else 0.0.
    sums : ndarray (4,)
        ``(loss_sum, conj_sum, measured, steps)`` of the round's start, carried to its report.
    """

    w: np.ndarray
    beta: float
    rho: float
    accepted: float
    sums: np.ndarray


class AggressiveLocal(NamedTuple):
    """A partition's committed duals, the rows it samples from, and the round's step.

    Attributes
    ----------
    alpha : ndarray (n_k,)
        Committed duals.
    sqnorm : ndarray (n_k,)
        ``||x_i||^2`` of the partition's rows.
    active : ndarray of int64
        The rows the batches are drawn from (all, or the shrinking set).
    batch : ndarray of int64
        This round's rows (partition-local).
    pending : ndarray (len(batch),) or (0,)
        The new duals of ``batch`` after the ``step`` phase; they count when
        the global state says ``accepted``.
    """

    alpha: np.ndarray
    sqnorm: np.ndarray
    active: np.ndarray
    batch: np.ndarray
    pending: np.ndarray


_NO_ROWS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class AggressivePlan(MinibatchPlan):
    """:class:`MinibatchSDCA` with ``step="aggressive"`` resolved for one data set (module docstring)."""

    fused_rounds = None  # two phases a round; no single-partition fast path

    @property
    def beta_b(self):
        """The upper clip of ``beta`` (Takáč et al. 2013 [TBRS13] Algorithm 2): the largest safe ``beta_c``."""
        return max(self.betas)

    def init_global(self):
        # beta^(0) = beta_b (Algorithm 2, "Initialize")
        return AggressiveGlobal(np.zeros(self.d), float(self.beta_b), float(self.beta_b), 0.0, np.zeros(4))

    def init_local(self, part, ctx):
        sqnorm = np.concatenate([rows.sqnorm[lo:hi] for rows, lo, hi, _ in part.pieces()])
        return AggressiveLocal(np.zeros(part.n_rows), sqnorm, np.arange(part.n_rows, dtype=np.int64), _NO_ROWS,
                               np.zeros(0))

    def phases(self):
        return (Phase("trial", self.local_trial, self.combine_trial),
                Phase("step", self.local_step, self.combine_step))

    @staticmethod
    def _committed(local, state):
        """The partition's duals with the last round's step applied if it was accepted."""
        if float(state.accepted) > 0.0 and local.pending.shape[0]:
            alpha = local.alpha.copy()
            alpha[local.batch] = local.pending
            return alpha
        return local.alpha

    def dual_point(self, part, local, state):
        return self._committed(local, state)

    def _evaluate(self, part, local, w, k):
        """Gap sums at ``w`` and, with shrinking, the rows whose step at ``w`` is non-zero."""
        if not self._shrinks():
            return objective_sums_part(part, local.alpha, w, self.loss), local
        sums, active, _ = _sums_and_movable(part, local.alpha, w, self.loss, self.lam_n)
        return sums, local._replace(active=active)

    def _steps(self, part, local, w, beta):
        """The step of ``local.batch`` with ``v_i = beta ||x_i||^2``: ``(new duals, delta_w, zeta, conj change)``."""
        batch = local.batch
        new_alpha = np.empty(batch.shape[0])
        delta_w = np.zeros_like(w)
        zeta = conj_change = 0.0
        if batch.shape[0]:
            blocks = np.unique(np.searchsorted(part.block_starts, batch, side="right") - 1)
            for rows, lo, hi, start in part.pieces(blocks):
                inside = (batch >= start) & (batch < start + hi - lo)
                if not inside.any():
                    continue
                out = np.empty(int(inside.sum()))
                z, c = minibatch_trial_step(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm,
                                            row_view(local.alpha, rows, lo, start), w, batch[inside] - start + lo,
                                            float(beta), int(self.loss.kind), self.loss.param, self.lam_n, out,
                                            delta_w)
                new_alpha[inside] = out
                zeta, conj_change = zeta + z, conj_change + c
        return new_alpha, delta_w, zeta, conj_change

    def local_trial(self, part, local, state, ctx):
        """Commit or drop the last step, gap sums, draw the batch, tentative step with ``beta^(t)``."""
        w = state.w
        local = local._replace(alpha=self._committed(local, state), batch=_NO_ROWS, pending=np.zeros(0))
        measured = self.measures(ctx.round)
        sums = np.zeros(2)
        if measured:
            sums, local = self._evaluate(part, local, w, ctx.partition)
        active = local.active
        tau = min(self.taus[ctx.partition], active.shape[0])
        if tau > 0:
            local = local._replace(
                batch=active[minibatch_indices(ctx.random_state, ctx.round, ctx.partition, active.shape[0], tau, 0)])
        _, delta_w, zeta, _ = self._steps(part, local, w, state.beta)
        scalars = np.array([sums[0], sums[1], float(measured), float(tau), zeta])
        return local, Contribution(compress(delta_w), scalars)

    def combine_trial(self, state, total, ctx):
        """``rho = clip_[1, beta_b](||sum delta~_i x_i||^2 / zeta)`` (eq. (23)) and the next ``beta``."""
        loss_sum, conj_sum, measured, steps, zeta = total.scalars
        beta, beta_b = float(state.beta), float(self.beta_b)
        if zeta > 0.0:
            dw = dense(total.vector, self.d)  # = X^T delta~ / (lam n)
            rho = min(beta_b, max(1.0, self.lam_n * self.lam_n * float(dw @ dw) / zeta))
        else:
            rho = beta  # no tentative movement: nothing to learn about the curvature
        # beta^(t+1) = (beta^(t))^gamma rho^(1 - gamma) (Algorithm 2)
        new_beta = min(beta_b, max(1.0, math.exp(AGGRESSIVE_GAMMA * math.log(beta)
                                                 + (1.0 - AGGRESSIVE_GAMMA) * math.log(rho))))
        report = RoundReport(False, math.nan, math.nan, 0.0)
        return AggressiveGlobal(state.w, new_beta, rho, 0.0,
                                np.array([loss_sum, conj_sum, measured, steps])), report

    def local_step(self, part, local, state, ctx):
        """The actual step of the same rows with ``beta = rho``, kept pending."""
        new_alpha, delta_w, _, conj_change = self._steps(part, local, state.w, state.rho)
        return local._replace(pending=new_alpha), Contribution(compress(delta_w), np.array([conj_change]))

    def combine_step(self, state, total, ctx):
        """Accept the step iff it increases ``D`` (Algorithm 2); the report of the round's start."""
        w = state.w
        dw = dense(total.vector, self.d)
        lam = self.lam_n / self.n
        gain = -float(total.scalars[0]) / self.n - 0.5 * lam * (2.0 * float(w @ dw) + float(dw @ dw))
        accepted = gain > 0.0
        loss_sum, conj_sum, measured, steps = state.sums
        reg = 0.5 * lam * float(w @ w)
        report = RoundReport(bool(measured > 0), loss_sum / self.n + reg, -conj_sum / self.n - reg, float(steps))
        return AggressiveGlobal(w + dw if accepted else w, state.beta, state.rho, float(accepted),
                                state.sums), report
