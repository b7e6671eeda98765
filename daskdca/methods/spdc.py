"""SPDC: Stochastic Primal-Dual Coordinate method (Zhang & Xiao, JMLR 2017 [ZX17]), in global mini-batch rounds.

Solves the saddle problem (paper eq. (4))

    min_x max_y 1/n sum_i (y_i a_i.x - phi_i*(y_i)) + lam/2 ||x||^2

of ``P(x) = 1/n sum_i phi_i(a_i.x) + lam/2 ||x||^2`` (the project's ``P(w)``,
with ``x = w``, ``a_i = x_i``, and the paper's dual ``y_i = -alpha_i``;
docs/references.md, note N8).  A round is one iteration of Algorithm 2 (``batch_size =
m``; ``m = 1`` is Algorithm 1) or of Algorithm 3 (``sampling="weighted"``,
one row per iteration with ``p_k = (1 - a)/n + a ||a_k|| / sum_i ||a_i||``,
eq. (20), and the mixing ``a`` of eq. (25)):

* the sample: ``m`` distinct rows of all ``n`` drawn from one stream of
  ``(random_state, round)`` that every partition computes and filters to its
  own rows (so ``P(i in K) = m/n`` and ``|K| = m`` exactly, the two conditions
  Theorem 1 needs, Zhang & Xiao 2017 [ZX17] Algorithm 2, whatever the partitions); Algorithm 3 draws the
  partition from that stream and the row from the partition's stream
  ``(random_state, round, partition)``;
* the partitions take the dual steps (eq. (9)/(21)) at ``xbar(t)`` and send
  ``sum_k dy_k a_k`` (sparse);
* the combine takes the primal step (eq. (10)/(23)), ``u += sum dy a / n`` and
  the extrapolation ``xbar = x + theta (x - x_prev)``.

The global state keeps ``x`` lazily (docs/references.md, note N8): each coordinate as of its
last touch, so the combine and the fused in-memory loop touch only the
coordinates of the sampled rows (:mod:`daskdca.kernels.spdc`).  Step
parameters are eq. (12) (uniform) or eq. (24) (weighted) from ``R = max_i
||a_i||`` and ``R_bar = 1/n sum_i ||a_i||``.  The protocol's ``setup`` sees no
rows, so round 0 is a *setup round*: every partition sends its ``max ||a_i||``
and ``sum ||a_i||`` (kept in its local state since ``init_local``), the
combine fixes ``tau, sigma, theta`` in the global state, and no step is taken
(the driver never records round 0).

Losses: ``gamma`` is the strong convexity of ``phi_i*`` (``1 /`` the loss's
smoothness).  The hinge loss is not smooth; it runs on the perturbed saddle
function (16) with ``phi* + delta/2 y^2`` (``smoothing = delta``), which is
the smoothed hinge with parameter ``delta`` (docs/references.md, note N8), so ``gamma =
delta``.  The certificate and the reports use the *original* hinge ``P`` and
``D`` (docs/references.md, note N8); the perturbation leaves a gap floor of at most
``delta/4`` times the share of rows whose margin ends in ``(1 - delta, 1)``.

Certificate: the dual point is ``alpha = -y`` (feasible: every dual step is a
prox on ``dom phi*``) and the model the flushed ``x``; the driver computes
``P(x) - D(alpha)`` from scratch (Corollary 4 bounds exactly this pair).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels import spdc as kern
from daskdca.kernels.sdca import objective_sums
from daskdca.kernels.sdna import sdna_batches
from daskdca.losses import HINGE, LOSSES, SMOOTHED_HINGE
from daskdca.methods.base import Capabilities, Contribution, PlanBase, RoundReport, compress, dense
from daskdca.methods.dual import DualLocal, sweep_blocks
from daskdca.methods.sdca import LocalSDCAPlan
from daskdca.partitions import row_view

__all__ = ["LOCAL_BACKTRACK_STEPS", "LocalSPDCPlan", "SPDC", "SPDC_LOSSES", "SPDCGlobal", "SPDCLocal", "SPDCPlan",
           "optimal_mixing", "step_parameters", "weighted_step_parameters"]

_SAMPLINGS = ("uniform", "weighted")
# The losses SPDC takes: every smooth one (gamma = 1 / smoothness > 0, Zhang & Xiao 2017 [ZX17] Assumption A),
# and hinge through the perturbation (16); not epsilon-insensitive, which is not smooth and has no
# perturbation here.
SPDC_LOSSES = tuple(name for name, cls in LOSSES.items()
                    if name == "hinge" or math.isfinite(cls().smoothness))
# params vector of the global state: R, sum_i ||a_i||, tau, sigma, theta, mixing a
_R, _SUM, _TAU, _SIGMA, _THETA, _MIX = range(6)


class SPDCGlobal(NamedTuple):
    """The lazy primal state (docs/references.md, note N8) and the constants fixed by the setup round.

    ``x[j]`` and ``x_prev[j]`` are ``x_j`` at iterations ``last[j]`` and
    ``last[j] - 1``; ``u = 1/n A^T y``; ``t`` the iterations done;
    ``params = (R, sum ||a_i||, tau, sigma, theta, a)`` (all 0 before round 0's
    combine); ``norm_sums[k] = sum_{i in partition k} ||a_i||``.
    """

    x: np.ndarray
    x_prev: np.ndarray
    u: np.ndarray
    last: np.ndarray
    t: np.ndarray
    params: np.ndarray
    norm_sums: np.ndarray


class SPDCLocal(NamedTuple):
    """A partition's duals ``y = -alpha`` and the running sums of its row norms (``cumnorm[-1] = sum ||a_i||``)."""

    y: np.ndarray
    cumnorm: np.ndarray
    max_norm: np.ndarray


def step_parameters(R, n, m, lam, gamma):
    """``(tau, sigma, theta)`` of paper eq. (12) for mini-batch size ``m``.

    ``tau = sqrt(m gamma / (n lam)) / (2R)``, ``sigma = sqrt(n lam / (m gamma)) / (2R)``,
    ``theta = 1 - 1 / (n/m + 2R sqrt(n / (m lam gamma)))``; ``sigma tau = 1/(4R^2)``.
    """
    tau = math.sqrt(m * gamma / (n * lam)) / (2.0 * R)
    sigma = math.sqrt(n * lam / (m * gamma)) / (2.0 * R)
    theta = 1.0 - 1.0 / (n / m + 2.0 * R * math.sqrt(n / (m * lam * gamma)))
    return tau, sigma, theta


def optimal_mixing(R, R_bar, n, lam, gamma):
    """The mixing ``a*`` of paper eq. (25) (0 when ``rho <= sqrt(n / kappa)``).

    ``rho = R / R_bar - 1``, ``kappa = R^2 / (lam gamma)``; ``a*`` minimises
    ``n / (1 - a) + sqrt(n kappa) / (1 + a rho)`` ([ZX17] eq. (12); docs/references.md, note N8, which also notes
    the erratum in the paper's prose: ``a*`` grows with ``kappa``).
    """
    rho = R / R_bar - 1.0
    kappa = R * R / (lam * gamma)
    if rho <= math.sqrt(n / kappa):
        return 0.0
    h = math.sqrt(rho) * (kappa / n) ** 0.25
    return (h - 1.0) / (h + rho)


def weighted_step_parameters(R, R_bar, n, lam, gamma, mix):
    """``(tau, sigma, theta)`` of paper eq. (24), with ``R_a = 1 / ((1 - a)/R + a/R_bar)``."""
    R_a = 1.0 / ((1.0 - mix) / R + mix / R_bar)
    tau = math.sqrt(gamma / (n * lam)) / (2.0 * R_a)
    sigma = math.sqrt(n * lam / gamma) / (2.0 * R_a)
    theta = 1.0 - 1.0 / (n / (1.0 - mix) + R_a * math.sqrt(n / (lam * gamma)))
    return tau, sigma, theta


def _positive_int_or_none(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}.")


@dataclass(frozen=True)
class SPDC:
    """Stochastic Primal-Dual Coordinate method (Zhang & Xiao 2017 [ZX17], Algorithms 1-3).

    Solves ``min_x 1/n sum_i phi_i(x_i.x) + lam/2 ||x||^2`` through the saddle
    problem (4): every round samples rows, takes their dual prox steps at the
    extrapolated point ``xbar``, then a primal prox step and the
    extrapolation.  ``O(n/m + sqrt(kappa n/m))`` rounds per accuracy digit
    with ``kappa = R^2/(lam gamma)`` (Theorem 1): for ``kappa > n`` it needs
    far fewer passes than SDCA's ``O(n + kappa)`` steps.

    Parameters
    ----------
    batch_size : int or None, default=None
        ``m``, rows per round (Algorithm 2), at most ``n``.  None: the number
        of partitions, the paper's choice for wall-clock time ("m equal to the
        number of processors", Zhang & Xiao 2017 [ZX17] §2); on one partition that is 1, Algorithm 1,
        the most pass-efficient.
    sampling : {"uniform", "weighted"}, default="uniform"
        ``"weighted"``: Algorithm 3, ``p_k`` of eq. (20) with the mixing of
        eq. (25) and the parameters of eq. (24); one row per round (the paper
        gives no parameters for weighted mini-batches).
    l1_ratio : float, default=0.0
        Elastic net ``g(x) = lam l1_ratio ||x||_1 + lam (1 - l1_ratio)/2 ||x||^2``
        (primal prox eq. (37), lazy forms (38)-(44) in the kernel): the fit
        then solves and certifies ``1/n sum_i phi_i(x_i.w) + g(w)`` (the
        drivers read the plan's ``l1_ratio``; :func:`daskdca.problem.objectives`).
    smoothing : float, default=1e-2
        ``delta`` of the perturbation (16), used for ``loss="hinge"`` only:
        SPDC then runs on the smoothed hinge with ``gamma = delta``.  Rounds
        grow like ``1/sqrt(delta)`` (Table 1) and the certified hinge gap
        stalls at a floor of at most ``delta/4``.  On w8a at ``lam = 1e-4``
        the gap after 100 passes was 7.3e-4, 4.0e-4 and 5.9e-3 for
        ``delta`` = 0.1, 0.01 and 0.001 (``benchmarks/RESULTS.md``, "SPDC");
        serial SDCA solves hinge without a floor and was far faster there.
    eval_every : int or None, default=None
        Rounds between gap evaluations; None: once per epoch, ``ceil(n/m)``.
    """

    batch_size: int | None = None
    sampling: str = "uniform"
    l1_ratio: float = 0.0
    smoothing: float = 1e-2
    eval_every: int | None = None
    name = "spdc"
    capabilities = Capabilities(losses=SPDC_LOSSES, many_partitions=True, cluster=True, shrinking=False)

    def __post_init__(self):
        _positive_int_or_none("batch_size", self.batch_size)
        _positive_int_or_none("eval_every", self.eval_every)
        if self.sampling not in _SAMPLINGS:
            raise ValueError(f"Unknown sampling {self.sampling!r} for solver='spdc'; use one of {list(_SAMPLINGS)}.")
        if self.sampling == "weighted" and self.batch_size not in (None, 1):
            raise ValueError(f"sampling='weighted' is Algorithm 3, one row per round; got batch_size="
                             f"{self.batch_size} (the paper gives no step parameters for weighted mini-batches). "
                             "Use batch_size=None or sampling='uniform'.")
        for field, low_open in (("l1_ratio", False), ("smoothing", True)):
            value = getattr(self, field)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            if not ok or value < 0 or (low_open and value == 0) or (field == "l1_ratio" and value >= 1):
                bound = "in [0, 1)" if field == "l1_ratio" else "a finite number > 0"
                raise ValueError(f"{field} must be {bound}, got {value!r}.")

    @property
    def weighted_sampling(self):
        return self.sampling == "weighted"

    def setup(self, info, ops):
        """Check ``m`` and the options; the step parameters wait for the setup round (module docstring).

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused here.

        Returns
        -------
        SPDCPlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When ``batch_size`` is more than the rows, or the loss is neither
            smooth nor hinge.
        """
        n = info.n
        m = info.n_partitions if self.batch_size is None else int(self.batch_size)
        if self.weighted_sampling:
            m = 1  # Algorithm 3 (checked in __post_init__)
        if m > n:
            raise ValueError(f"batch_size={m} is more than the {n} rows (a round samples m distinct rows of "
                             f"all partitions); use batch_size <= {n}.")
        loss = info.loss
        if int(loss.kind) == HINGE:
            kind, param, gamma = SMOOTHED_HINGE, float(self.smoothing), float(self.smoothing)  # eq. (16)
        elif not math.isfinite(float(loss.smoothness)):
            raise ValueError(f"solver='spdc' needs a smooth loss (Zhang & Xiao 2017 [ZX17] Assumption A) or hinge, "
                             f"got loss={loss.name!r}; use solver='sdca' or 'cocoa+' for it, or one of "
                             f"{list(SPDC_LOSSES)}.")
        else:
            kind, param, gamma = int(loss.kind), float(loss.param), 1.0 / float(loss.smoothness)
        eval_every = self.eval_every if self.eval_every is not None else -(-n // m)
        offsets = np.concatenate(([0], np.cumsum(info.partition_sizes))).astype(np.int64)
        # g(x) = lam1 ||x||_1 + lam/2 ||x||^2 with lam1 = lam_total l1_ratio, lam = lam_total (1 - l1_ratio):
        # the kernels' prox (37) and the step parameters (12)/(24) take the strong convexity lam
        ratio = float(self.l1_ratio)
        return SPDCPlan(settings=self, loss=loss, n=n, d=info.d, lam=float(info.lam) * (1.0 - ratio),
                        lam1=float(info.lam) * ratio, l1_ratio=ratio, m=m,
                        weighted=self.sampling == "weighted", step_kind=kind, step_param=param, gamma=gamma,
                        offsets=tuple(int(o) for o in offsets), eval_every=int(eval_every),
                        rounds_per_epoch=-(-n // m))


@dataclass(frozen=True)
class SPDCPlan(PlanBase):
    """:class:`SPDC` resolved for one data set (``m``, ``gamma``, the dual step's loss); ``PlanBase``'s name,
    measuring every ``eval_every`` rounds and one "round" phase.  Its states hold no ``w`` or ``alpha``, so
    ``PlanBase``'s warm-start defaults do not apply: ``capabilities.warm_start`` is False, and ``daskdca.fit``
    refuses ``dual_init`` before any plan is built."""

    settings: SPDC
    loss: object
    n: int
    d: int
    lam: float
    m: int
    weighted: bool
    step_kind: int
    step_param: float
    gamma: float
    offsets: tuple
    eval_every: int
    rounds_per_epoch: int
    lam1: float = 0.0
    l1_ratio: float = 0.0
    primal_from_dual = False

    @property
    def n_partitions(self):
        return len(self.offsets) - 1

    # --- states ---------------------------------------------------------------

    def init_global(self):
        d = self.d
        return SPDCGlobal(np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(d, dtype=np.int64),
                          np.zeros((), dtype=np.int64), np.zeros(6), np.zeros(self.n_partitions))

    def init_local(self, part, ctx):
        """``y = 0`` and the partition's row norms (one pass over its rows)."""
        norms = np.sqrt(np.concatenate([rows.sqnorm[lo:hi] for rows, lo, hi, _ in part.pieces()]))
        max_norm = np.asarray(float(norms.max(initial=0.0)))
        return SPDCLocal(np.zeros(part.n_rows), np.cumsum(norms), max_norm)

    def _lazy(self, state):
        """``(tau, lam1, lam2, log1p(lam2 tau))`` for the kernels."""
        tau = float(state.params[_TAU])
        return tau, self.lam1, self.lam, math.log1p(self.lam * tau)

    def model(self, state):
        """``x(t)``: every coordinate caught up to the state's iteration (flush)."""
        tau, lam1, lam2, l1p = self._lazy(state)
        return kern.flush(state.x, state.x_prev, state.u, state.last, int(state.t), tau, lam1, lam2, l1p)

    def dual_point(self, part, local, state):
        """``alpha = -y`` (feasible for the original loss)."""
        return -local.y

    # --- the setup round ------------------------------------------------------

    def _with_parameters(self, state, norm_max, norm_sums):
        """The global state with eq. (12) or (24) parameters from ``R`` and ``R_bar``."""
        n = self.n
        R = max(norm_max)
        total = 0.0
        for s in norm_sums:
            total += s
        if R == 0.0:  # every row is zero: x -> 0 whatever the steps; any R > 0 will do
            R = total = 1.0
        R_bar = total / n
        if self.weighted:
            mix = optimal_mixing(R, R_bar, n, self.lam, self.gamma)
            tau, sigma, theta = weighted_step_parameters(R, R_bar, n, self.lam, self.gamma, mix)
        else:
            mix = 0.0
            tau, sigma, theta = step_parameters(R, n, self.m, self.lam, self.gamma)
        params = np.array([R, total, tau, sigma, theta, mix])
        return state._replace(params=params, norm_sums=np.array(norm_sums, dtype=np.float64))

    # --- sampling -------------------------------------------------------------

    def _weights(self, state):
        """Algorithm 3's ``p_i = w_uniform + w_norm ||a_i||`` (eq. (20))."""
        mix, total = float(state.params[_MIX]), float(state.params[_SUM])
        return (1.0 - mix) / self.n, mix / total

    def _cum_mass(self, state):
        w_uniform, w_norm = self._weights(state)
        sizes = np.diff(np.asarray(self.offsets, dtype=np.float64))
        return np.cumsum(w_uniform * sizes + w_norm * state.norm_sums)

    def _sample(self, local, state, random_state, round_index, k):
        """This partition's rows of the round (partition-local, sorted), their ``q = 1/s``, and ``omega``.

        Uniform: ``q = 1/sigma``, ``omega = 1/m`` (eq. (9)-(10)); the combine
        applies ``omega`` itself, so 0 is sent.  Weighted: the picked row's
        ``q = p_k n / sigma`` and ``omega = 1/(p_k n)`` (eq. (21), (23)).
        """
        sigma = float(state.params[_SIGMA])
        if self.weighted:
            if kern.pick_partition(random_state, round_index, self._cum_mass(state)) != k:
                return np.empty(0, dtype=np.int64), np.empty(0), 0.0
            w_uniform, w_norm = self._weights(state)
            i = kern.pick_row(random_state, round_index, k, local.cumnorm, w_uniform, w_norm)
            norm = local.cumnorm[i] - (local.cumnorm[i - 1] if i > 0 else 0.0)
            pn = (w_uniform + w_norm * norm) * self.n
            return np.array([i], dtype=np.int64), np.array([pn / sigma]), 1.0 / pn
        lo, hi = self.offsets[k], self.offsets[k + 1]
        batch = kern.uniform_schedule(random_state, round_index, 1, self.n, self.m)[0]
        rows = batch[(batch >= lo) & (batch < hi)] - lo
        return rows, np.full(rows.shape[0], 1.0 / sigma), 0.0

    # --- one round ------------------------------------------------------------

    def _gap_sums(self, part, local, x):
        """``[sum_i phi_i(a_i.x), sum_i phi_i*(y_i)]`` over the partition (original loss)."""
        kind, param = int(self.loss.kind), self.loss.param
        alpha = -local.y
        loss_sum = conj_sum = 0.0
        for rows, lo, hi, start in part.pieces():
            ls, cs = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                    row_view(alpha, rows, lo, start), x, lo, hi, kind, param)
            loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
        return loss_sum, conj_sum

    def local(self, part, local, state, ctx):
        """Gap sums at the round's start (on evaluation rounds), then the dual steps of the round's rows.

        Sends ``[g, count]`` (``g_j = sum_k dy_k a_kj``, ``count_j`` the
        sampled entries in column ``j``, so the combine knows every touched
        coordinate) and ``(loss_sum, conj_sum, steps, measured, omega)``.  In
        the setup round it sends its norm statistics instead.
        """
        measured = self.measures(ctx.round)
        sums = self._gap_sums(part, local, self.model(state)) if measured else (0.0, 0.0)
        ready = state.params[_TAU] > 0.0
        if not ready:
            stats = ((float(local.max_norm), float(local.cumnorm[-1]) if local.cumnorm.shape[0] else 0.0),)
            return local, Contribution(None, np.array([sums[0], sums[1], 0.0, float(measured), 0.0]), stats)
        rows, qs, omega = self._sample(local, state, ctx.random_state, ctx.round, ctx.partition)
        y = local.y.copy()
        d = self.d
        g, count = np.zeros(d), np.zeros(d)
        if rows.shape[0]:
            tau, lam1, lam2, l1p = self._lazy(state)
            theta = float(state.params[_THETA])
            t = int(state.t)
            touched = np.empty(d, dtype=np.int64)
            starts = part.block_starts
            blocks = np.unique(np.searchsorted(starts, rows, side="right") - 1)
            for blk, lo, hi, start in part.pieces(blocks):
                inside = (rows >= start) & (rows < start + hi - lo)
                kern.dual_half(blk.indptr, blk.indices, blk.data, blk.y, row_view(y, blk, lo, start),
                               rows[inside] - start + lo, qs[inside], state.x, state.x_prev, state.u, state.last, t,
                               tau, theta, lam1, lam2, l1p, self.step_kind, self.step_param, g, count, touched, 0,
                               False)
        vector = compress(np.concatenate([g, count]))
        scalars = np.array([sums[0], sums[1], float(rows.shape[0]), float(measured), omega])
        return local._replace(y=y), Contribution(vector, scalars)

    def _report(self, state, scalars):
        """``P(x)`` and ``D(y) = -1/n sum phi*(y_i) - g*(u)`` of the round's start, with
        ``g*(u) = sum_j (|u_j| - lam1)_+^2 / (2 lam)`` (``||u||^2 / (2 lam)`` when ``lam1 = 0``)."""
        loss_sum, conj_sum, steps, measured = scalars[:4]
        if not measured > 0:
            return RoundReport(False, math.nan, math.nan, float(steps))
        x = self.model(state)
        primal = loss_sum / self.n + self.lam1 * float(np.abs(x).sum()) + 0.5 * self.lam * float(x @ x)
        excess = np.maximum(np.abs(state.u) - self.lam1, 0.0)
        dual = -conj_sum / self.n - 0.5 * float(excess @ excess) / self.lam
        return RoundReport(bool(measured > 0), primal, dual, float(steps))

    def combine(self, state, total, ctx):
        """The primal step on the touched coordinates, ``u += g/n``, ``t += 1`` (or the setup round's parameters)."""
        report = self._report(state, total.scalars)
        if not state.params[_TAU] > 0.0:
            stats = total.gathered
            return self._with_parameters(state, [s[0] for s in stats], [s[1] for s in stats]), report
        both = dense(total.vector, 2 * self.d)
        touched = np.flatnonzero(both[self.d:])
        omega = 1.0 / self.m if not self.weighted else float(total.scalars[4])
        x, xp, u, last = state.x.copy(), state.x_prev.copy(), state.u.copy(), state.last.copy()
        tau, lam1, lam2, l1p = self._lazy(state)
        kern.primal_half(x, xp, u, last, int(state.t), touched, both[:self.d][touched], omega, 1.0 / self.n,
                         tau, lam1, lam2, l1p)
        return state._replace(x=x, x_prev=xp, u=u, last=last, t=np.asarray(int(state.t) + 1, dtype=np.int64)), report

    def fused_rounds(self, part, local, state, ctx, n_rounds):
        """``n_rounds`` rounds on one in-memory partition in one kernel call (the same bits as :meth:`local`
        and :meth:`combine` once per round): the lazy loop of :func:`~daskdca.kernels.spdc.spdc_iterations`."""
        rows = part.whole()
        measured = self.measures(ctx.round)
        sums = self._gap_sums(part, local, self.model(state)) if measured else (0.0, 0.0)
        report = self._report(state, np.array([sums[0], sums[1], 0.0, float(measured)]))
        first = ctx.round
        if not state.params[_TAU] > 0.0:
            state = self._with_parameters(state, [float(local.max_norm)],
                                          [float(local.cumnorm[-1]) if local.cumnorm.shape[0] else 0.0])
            first, n_rounds = first + 1, n_rounds - 1
        if n_rounds == 0:
            return local, state, report
        sigma, theta = float(state.params[_SIGMA]), float(state.params[_THETA])
        if self.weighted:
            w_uniform, w_norm = self._weights(state)
            batches, qs, omegas = kern.weighted_schedule(ctx.random_state, first, n_rounds, self._cum_mass(state), 0,
                                                         local.cumnorm, w_uniform, w_norm, self.n, sigma)
        else:
            batches = kern.uniform_schedule(ctx.random_state, first, n_rounds, self.n, self.m)
            qs = np.full(batches.shape, 1.0 / sigma)
            omegas = np.full(n_rounds, 1.0 / self.m)
        y = local.y.copy()
        x, xp, u, last = state.x.copy(), state.x_prev.copy(), state.u.copy(), state.last.copy()
        tau, lam1, lam2, _ = self._lazy(state)
        d = self.d
        steps = kern.spdc_iterations(rows.indptr, rows.indices, rows.data, rows.y, y, x, xp, u, last, int(state.t),
                                     batches, qs, omegas, 1.0 / self.n, tau, theta, lam1, lam2, self.step_kind,
                                     self.step_param, np.zeros(d), np.zeros(d), np.empty(d, dtype=np.int64))
        new_state = state._replace(x=x, x_prev=xp, u=u, last=last,
                                   t=np.asarray(int(state.t) + n_rounds, dtype=np.int64))
        return local._replace(y=y), new_state, report._replace(steps=float(steps))


# --- SPDC as the local solver of CoCoA+ rounds ----------------------------------

#: Steps ``t`` the safeguard of a local SPDC solve tries when the full step lowers the local subproblem:
#: ``1/2, 1/4, ..., 2^-10`` (and 0, which keeps the round's start).
LOCAL_BACKTRACK_STEPS = tuple(0.5 ** j for j in range(1, 11))


@dataclass(frozen=True)
class LocalSPDCPlan(LocalSDCAPlan):
    """CoCoA+ rounds (adding, ``sigma' = K``) with SPDC as the local solver (docs/references.md, note N8).

    Maximises ``D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2``,
    the dual of ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``.  Partition
    ``k`` (``n_k`` rows) maximises its CoCoA+ subproblem (Ma et al. 2015,
    arXiv:1502.03508, gamma = 1)

        G_k(d) = -1/n sum_{i in P_k} phi_i*(-(alpha_i + d_i)) - lam <w, dw> - lam sigma'/2 ||dw||^2,
        dw = X_k^T d / (lam n),

    which in the paper's variables (``y = -alpha``) is the SPDC saddle problem
    on the partition's own rows with ``n -> n_k``,
    ``lam -> lam_k = n lam / (n_k sigma')`` and
    ``g_k(x) = lam_k/2 ||x - w||^2 - <u~_k, x>``, ``u~_k = 1/n_k sum_{P_k} y_i a_i``
    (docs/references.md, note N8, derived there and checked against a direct solve).  A
    round runs ``ceil(local_iters n_k / m)`` iterations of Algorithm 1
    (``m = 1``) or 2 (``m`` distinct rows per iteration) on it from ``x = w``
    and ``y' = y``, with the step parameters of eq. (12) for ``R_k = max_{P_k}
    ||a_i||``, ``n_k``, ``m``, ``lam_k`` and ``gamma = 1 / smoothness`` of the loss
    (:func:`daskdca.kernels.spdc.local_spdc`, lazy: an iteration costs the
    non-zeros of its rows).  Every round restarts the primal at the new
    ``w`` (the local problem changes with ``w``), so with one partition
    (``sigma' = 1``, the local problem is the whole saddle problem (4)) a
    round is ``n/m`` SPDC iterations from ``x = w(alpha)``, not a
    continuation of the last round's ``x`` and extrapolation.

    Safeguard: SPDC's last iterate need not improve the subproblem (Theorem 1
    bounds it in expectation only), while CoCoA+'s ``D(alpha + sum_k d_k) >=
    D(alpha) + sum_k (G_k(d_k) - G_k(0))`` turns every local improvement into
    dual ascent.  So a partition keeps the SPDC step ``d`` when ``G_k(d) >=
    G_k(0)``, else the best ``t d`` of :data:`LOCAL_BACKTRACK_STEPS` that
    improves it, else nothing: the dual never decreases.  ``G_k(t d)`` needs
    the conjugates of the moved rows and ``<w, dw>``, ``||dw||^2``, all at hand
    on the partition.  Every ``alpha + t d`` lies between two feasible duals,
    so the certificate (``P(w(alpha)) - D(alpha)`` from the returned duals) is
    valid after every round.

    Out of core the blocks are visited in a seeded random order, each one's
    subproblem solved as above given the partition's ``w + sigma' dw`` so far
    (exact block ascent on ``G_k``; ``n_b``, ``R_b``, ``lam_b`` of the block),
    as SDCA and SDNA do; a one-block partition gives the in-memory bits.
    Samples: iteration ``t`` of a round draws ``m`` distinct rows from the
    stream ``(random_state, round, partition or block, t)``
    (:func:`daskdca.kernels.sdna.sdna_batches`).
    """

    m: int = 1
    gamma: float = 1.0
    # its own local step; not among the plans fitted one-vs-rest together (Capabilities.multi_class)
    local_problems = None

    @classmethod
    def for_data(cls, settings, info):
        """The plan of ``CoCoAPlus(local_solver="spdc", ...)`` for ``info``; refuses hinge."""
        loss = info.loss
        if int(loss.kind) == HINGE:
            raise ValueError(
                "local_solver='spdc' needs a smooth loss (Zhang & Xiao 2017 [ZX17] Assumption A: phi_i* strongly convex), got "
                "loss='hinge'; use local_solver='sdca' or 'sdna' for hinge, loss='smoothed_hinge', or "
                "solver='spdc', which smooths the hinge (eq. (16)).")
        if not math.isfinite(float(loss.smoothness)):
            raise ValueError(
                f"local_solver='spdc' needs a smooth loss (Zhang & Xiao 2017 [ZX17] Assumption A: phi_i* strongly "
                f"convex), got loss={loss.name!r}; use local_solver='sdca' for it.")
        m = 1 if settings.local_batch_size is None else int(settings.local_batch_size)  # checked by the settings
        K = info.n_partitions
        return cls(settings=settings, loss=loss, n=info.n, d=info.d, lam_n=info.lam_n, n_partitions=K,
                   sigma_prime=float(K), m=m, gamma=1.0 / float(loss.smoothness))

    def local(self, part, local, state, ctx):
        """One round on one partition: gap sums at ``(w, alpha)``, then the safeguarded local SPDC solve(s)."""
        loss, w = self.loss, state.w
        kind, param = int(loss.kind), loss.param
        alpha = local.alpha.copy()
        w_eff = w.copy()  # w + sigma' dw so far
        delta_w = np.zeros(self.d)
        rows = part.whole()
        if rows is not None:
            loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha, w, 0,
                                                rows.n_rows, kind, param)
            n_steps = self._solve(rows, 0, rows.n_rows, alpha, w_eff, delta_w, ctx, ctx.partition)
        else:
            loss_sum, conj_sum, n_steps = sweep_blocks(
                part, alpha, w, ctx, self.loss,
                lambda blk, lo, hi, a, stream: self._solve(blk, lo, hi, a, w_eff, delta_w, ctx, stream))
        vector = w_eff if self.n_partitions == 1 else compress(delta_w)
        return DualLocal(alpha), Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]))

    def local_parameters(self, rows, lo, hi):
        """``(m_b, lam_b, tau, sigma, theta)`` of eq. (12) for the block's rows ``[lo, hi)``."""
        n_b = hi - lo
        m = min(self.m, n_b)
        R = math.sqrt(float(rows.sqnorm[lo:hi].max()))
        if R == 0.0:  # zero rows: x never moves from w, any R > 0 will do
            R = 1.0
        lam_b = self.lam_n / (n_b * self.sigma_prime)  # n lam / (n_b sigma') (docs/references.md, note N8)
        tau, sigma, theta = step_parameters(R, n_b, m, lam_b, self.gamma)
        return m, lam_b, tau, sigma, theta

    def _solve(self, rows, lo, hi, alpha, w_eff, delta_w, ctx, stream):
        """Local SPDC on rows ``[lo, hi)`` of ``rows``; ``alpha`` (aligned with ``rows``), ``w_eff`` and
        ``delta_w`` updated in place.  Returns the dual steps taken."""
        n_b = hi - lo
        if n_b == 0:
            return 0
        kind, param = int(self.loss.kind), self.loss.param
        m, lam_b, tau, sigma, theta = self.local_parameters(rows, lo, hi)
        n_iter = max(1, int(math.ceil(self.settings.local_iters * n_b / m)))
        batches = sdna_batches(ctx.random_state, ctx.round, stream, n_b, m, n_iter) + lo
        d = self.d
        y = -alpha
        x, xp, u = w_eff.copy(), w_eff.copy(), -lam_b * w_eff
        acc = np.zeros(d)
        steps = kern.local_spdc(rows.indptr, rows.indices, rows.data, rows.y, y, x, xp, u, np.zeros(d, dtype=np.int64),
                                batches, 1.0 / sigma, 1.0 / m, 1.0 / n_b, tau, theta, lam_b, kind, param, np.zeros(d),
                                np.zeros(d), np.empty(d, dtype=np.int64), acc)
        t = self._safeguard(rows.y, alpha, -y, lo, hi, w_eff, acc)
        kern.apply_step(alpha, -y, lo, hi, t)
        if t > 0.0:
            dw = (-t / self.lam_n) * acc  # X_b^T (t d) / (lam n), d = -(y' - y)
            delta_w += dw
            w_eff += self.sigma_prime * dw
        return steps

    def local_gains(self, b, old, new, lo, hi, w_eff, acc, steps):
        """``n (G(t d) - G(0))`` of the block's subproblem for every ``t`` of ``steps`` (``d = new - old``,
        ``acc = -X_b^T d``): ``-sum_i [phi_i*(-(old_i + t d_i)) - phi_i*(-old_i)] + t <w_eff, acc>
        - sigma' t^2 ||acc||^2 / (2 lam n)``."""
        steps = np.asarray(steps, dtype=np.float64)
        conj = kern.conjugate_changes(b, old, new, lo, hi, steps, int(self.loss.kind), self.loss.param)
        return -conj + steps * float(w_eff @ acc) - self.sigma_prime * steps ** 2 * float(acc @ acc) / (2 * self.lam_n)

    def _safeguard(self, b, old, new, lo, hi, w_eff, acc):
        """1 when the SPDC step does not lower the subproblem, else the best improving step of
        :data:`LOCAL_BACKTRACK_STEPS`, else 0."""
        gains = self.local_gains(b, old, new, lo, hi, w_eff, acc, (1.0,) + LOCAL_BACKTRACK_STEPS)
        if gains[0] >= 0.0:
            return 1.0
        best = int(np.argmax(gains))
        return float(LOCAL_BACKTRACK_STEPS[best - 1]) if gains[best] > 0.0 else 0.0
