"""Mini-batch Pegasos (Takáč et al. 2013 [TBRS13] Algorithm 1), certified through a dual point.

Solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` for a
Lipschitz ``phi_i`` by stochastic subgradient steps.  Round ``r`` is
iteration ``t = r + 1`` of Algorithm 1 (the iterate starts at ``w^(1) = 0``):
partition c draws ``tau_c`` distinct rows from the stream
``(random_state, round, c)`` (about ``b s_c / n``, as
:class:`~daskdca.methods.minibatch.MinibatchSDCA` does, so the batch
``A_t`` of ``b = sum_c tau_c`` rows is (C, b)-distributed), sends
``sum_{i in A_t^c} phi_i'(x_i.w^(t)) x_i``, and the combine takes

    w^(t+1) = (1 - eta_t lam) w^(t) - (eta_t / b) sum_{i in A_t} phi_i'(x_i.w^(t)) x_i,   eta_t = 1 / (lam t)

(Takáč et al. 2013 [TBRS13] eq. (9); for the hinge loss ``-phi_i' = y_i chi_i``, eq. (8)).

The model returned is an average of the iterates: ``averaging="decay"``,
``w_bar^(t+1) = 0.9 w_bar^(t) + 0.1 w^(t+1)`` (the averaging of Takáč et al. 2013 [TBRS13]'s
Fig. 2 experiments); ``"suffix"`` with ``horizon=T``, Theorem 1's
``w_bar^(T) = 1/(T - floor(T/2)) sum_{t = floor(T/2)+1}^{T} w^(t)`` (docs/references.md, note N4:
not ``2/T``, which is exact only for even ``T``), exact when the fit runs
``max_rounds=T`` rounds (before ``floor(T/2)`` rounds the model is the
iterate; after ``T`` rounds it stays ``w_bar^(T)``); or ``"last"``, the iterate.

Certificate: Pegasos has no dual iterate; the dual point is
``a_i = -phi_i'(x_i.w_bar)`` (always dual-feasible for a Lipschitz loss,
and ``alpha*`` at the optimum for a smooth one), and the gap
``P(w_bar) - D(a)`` is measured every ``eval_every`` rounds in the same
pass.  For the hinge loss ``a`` jumps between 0 and ``y_i`` at the margin, so
the gap does not go to zero even at ``w*``: use a smooth loss (smoothed
hinge, logistic) when the certificate must reach a tolerance.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from daskdca.kernels import eso
from daskdca.kernels.dual_free import dual_point
from daskdca.kernels.pegasos import certificate_sums, subgradient_sum
from daskdca.kernels.sampling import minibatch_indices
from daskdca.methods.base import Capabilities, Contribution, PlanBase, RoundReport, compress, dense
from daskdca.methods.minibatch import resolve_batch_sizes

__all__ = ["MinibatchPegasos", "PegasosGlobal", "PegasosPlan"]

# Losses with a Lipschitz phi_i, for which Takáč et al. 2013 [TBRS13] §1 says all its results hold (L = 1 for each).
LIPSCHITZ_LOSSES = ("hinge", "smoothed_hinge", "logistic")
_AVERAGING = ("decay", "suffix", "last")
# The averaging weight of Takáč et al. 2013 [TBRS13] §5 (Fig. 2): w_bar <- 0.9 w_bar + 0.1 w.
DECAY = 0.9


class PegasosGlobal(NamedTuple):
    """The iterate ``w^(t)`` and the model ``w_bar`` (the average the method returns)."""

    w: np.ndarray
    average: np.ndarray


class PegasosLocal(NamedTuple):
    """Pegasos keeps nothing per partition; one empty field keeps the state a NamedTuple of arrays."""

    unused: np.ndarray


@dataclass(frozen=True)
class MinibatchPegasos:
    """Mini-batch Pegasos (Takáč et al. 2013 [TBRS13] Algorithm 1, eq. (9)).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` for a Lipschitz
    loss with step ``eta_t = 1/(lam t)`` and mini-batches of about
    ``batch_size`` rows drawn across all partitions (module docstring).

    Parameters
    ----------
    batch_size : int or None, default=None
        Rows per iteration, ``b``.  None picks about ``1/sigma^2``, where
        ``beta_b <= 2`` and the speed-up ``b / beta_b`` of Theorem 1 is
        nearly linear (Takáč et al. 2013 [TBRS13] §3).
    averaging : {"decay", "suffix", "last"}, default="decay"
        The model returned: the decaying average ``0.9 w_bar + 0.1 w`` of
        Takáč et al. 2013 [TBRS13] Fig. 2, Theorem 1's suffix average over the iterates
        ``floor(T/2)+1 .. T`` (needs ``horizon``), or the last iterate.
    eval_every : int or None, default=None
        Rounds between gap evaluations (each a pass over the data).  None:
        ``ceil(n / b)``, once per epoch of drawn rows.
    horizon : int or None, default=None
        ``T`` of the suffix average (run the fit with ``max_rounds=T``);
        only with ``averaging="suffix"``.
    """

    batch_size: int | None = None
    averaging: str = "decay"
    eval_every: int | None = None
    horizon: int | None = None
    name = "pegasos"
    # Takáč et al. 2013 [TBRS13] Theorem 1: E[P(w_bar)] - P* = O(beta_b / (lam b T)), a 1/t rate
    capabilities = Capabilities(losses=LIPSCHITZ_LOSSES, many_partitions=True, cluster=True, shrinking=False,
                                gap_rate="1/t")

    def __post_init__(self):
        if self.averaging not in _AVERAGING:
            raise ValueError(f"Unknown averaging {self.averaging!r}; use one of {list(_AVERAGING)}.")
        if (self.averaging == "suffix") != (self.horizon is not None):
            raise ValueError("averaging='suffix' needs horizon=T (the number of rounds the fit runs), and "
                             f"horizon applies to it only; got averaging={self.averaging!r}, "
                             f"horizon={self.horizon!r}.")
        for field in ("batch_size", "eval_every", "horizon"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                                      or value < 1):
                raise ValueError(f"{field} must be a positive int or None, got {value!r}.")

    def setup(self, info, ops):
        """Compute ``sigma^2`` (power iteration through ``ops``), ``beta_b`` ([TBRS13] eq. (11)) and ``tau_c``.

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`).

        Returns
        -------
        PegasosPlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When the loss is not Lipschitz.
        """
        if info.loss.name not in LIPSCHITZ_LOSSES:
            raise ValueError(f"solver='pegasos' needs a Lipschitz loss (one of {list(LIPSCHITZ_LOSSES)}), "
                             f"got loss={info.loss.name!r}.")
        n = info.n
        sigma2, taus = resolve_batch_sizes(info, ops, self.batch_size)
        b_eff = int(taus.sum())
        rounds_per_epoch = max(1, -(-n // b_eff))
        return PegasosPlan(settings=self, loss=info.loss, n=n, d=info.d, lam_n=info.lam_n, sigma2=float(sigma2),
                           beta_b=float(min(b_eff, max(1.0, eso.beta_standard(n, b_eff, sigma2)))),
                           taus=tuple(int(t) for t in taus), batch_size=b_eff,
                           eval_every=int(self.eval_every or rounds_per_epoch), rounds_per_epoch=rounds_per_epoch)


@dataclass(frozen=True)
class PegasosPlan(PlanBase):
    """:class:`MinibatchPegasos` resolved for one data set (``PlanBase``'s name, measuring and one "round"
    phase; the model is the averaged iterate)."""

    settings: MinibatchPegasos
    loss: object
    n: int
    d: int
    lam_n: float
    sigma2: float
    beta_b: float
    taus: tuple
    batch_size: int
    eval_every: int
    rounds_per_epoch: int
    primal_from_dual = False

    @property
    def lam(self):
        return self.lam_n / self.n

    def init_global(self):
        return PegasosGlobal(np.zeros(self.d), np.zeros(self.d))  # w^(1) = 0

    def init_local(self, part, ctx):
        return PegasosLocal(np.zeros(0))

    def model(self, state):
        return state.average

    def dual_point(self, part, local, state):
        """``a_i = -phi_i'(x_i.w_bar)`` for the partition's rows (module docstring)."""
        kind, param = int(self.loss.kind), self.loss.param
        return np.concatenate([dual_point(rows.indptr, rows.indices, rows.data, rows.y, state.average, lo, hi, kind,
                                          param) for rows, lo, hi, _ in part.pieces()])

    def local(self, part, local, state, ctx):
        """Gap sums of ``w_bar`` on evaluation rounds, then the subgradient sum of this partition's rows."""
        kind, param = int(self.loss.kind), self.loss.param
        measured = self.measures(ctx.round)
        loss_sum = conj_sum = 0.0
        g = np.zeros(self.d)
        if measured:
            for rows, lo, hi, _ in part.pieces():
                ls, cs = certificate_sums(rows.indptr, rows.indices, rows.data, rows.y, state.average, lo, hi, kind,
                                          param, 1.0 / self.lam_n, g)
                loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
        tau = min(self.taus[ctx.partition], part.n_rows)
        s = np.zeros(self.d)
        if tau > 0:
            batch = minibatch_indices(ctx.random_state, ctx.round, ctx.partition, part.n_rows, tau, 0)
            blocks = np.unique(np.searchsorted(part.block_starts, batch, side="right") - 1)
            for rows, lo, hi, start in part.pieces(blocks):
                inside = batch[(batch >= start) & (batch < start + hi - lo)]
                if inside.size:
                    subgradient_sum(rows.indptr, rows.indices, rows.data, rows.y, state.w, inside - start + lo, kind,
                                    param, s)
        vector = np.concatenate([s, g]) if measured else s
        return local, Contribution(compress(vector), np.array([loss_sum, conj_sum, float(measured), float(tau)]))

    def combine(self, state, total, ctx):
        """[TBRS13] eq. (9) with ``eta_t = 1/(lam t)``, ``t = round + 1``; the average; the report of the start."""
        loss_sum, conj_sum, measured, steps = total.scalars
        both = dense(total.vector, 2 * self.d if measured > 0 else self.d)
        t = ctx.round + 1
        eta = 1.0 / (self.lam * t)
        # (1 - eta lam) = 1 - 1/t, exactly 0 at t = 1 (docs/references.md, note N4 pitfall)
        w = (1.0 - 1.0 / t) * state.w - (eta / self.batch_size) * both[:self.d]
        if self.settings.averaging == "decay":
            average = DECAY * state.average + (1.0 - DECAY) * w
        elif self.settings.averaging == "suffix":
            # w is w^(t+1); Theorem 1 averages w^(j) for j = floor(T/2)+1 .. T
            horizon = self.settings.horizon
            k = t + 1 - horizon // 2
            if k <= 0:
                average = w
            elif t + 1 <= horizon:
                average = state.average + (w - state.average) / k
            else:  # w^(T+1) and later are not in Theorem 1's average
                average = state.average
        else:
            average = w
        if measured > 0:
            wa = both[self.d:]
            wbar = state.average
            report = RoundReport(True, loss_sum / self.n + 0.5 * self.lam * float(wbar @ wbar),
                                 -conj_sum / self.n - 0.5 * self.lam * float(wa @ wa), float(steps))
        else:
            report = RoundReport(False, math.nan, math.nan, float(steps))
        return PegasosGlobal(w, average), report
