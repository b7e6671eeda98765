"""SDNA: Stochastic Dual Newton Ascent (Qu, Richtárik, Takáč, Fercoq 2016 [QRTF16]), in CoCoA+ rounds.

Maximises the dual

    D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2,   w(alpha) = X^T alpha / (lam n)

of ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``.  Each round, every
partition k runs ``ceil(local_iters * n_k / tau_k)`` local SDNA iterations
(Algorithm 3) on the CoCoA+ local subproblem ``G_k^{sigma'}`` with
``sigma' = K`` (Ma et al. 2015, arXiv:1502.03508, adding, gamma = 1;
docs/references.md, note N7): each iteration draws ``tau_k = min(tau, n_k)`` rows
tau-nice, and maximises the subproblem exactly over them
(:mod:`daskdca.kernels.sdna`).  Then ``w += sum_k delta_w_k``.  With one
partition ``sigma' = 1`` and a round is ``ceil(local_iters n / tau)``
iterations of the paper's Algorithm 3.

Sampling: iteration ``t`` of a round draws from its own stream, a function of
``(random_state, round, partition, t)`` only
(:func:`~daskdca.kernels.sdna.sdna_batches`).  With ``tau = 1`` the sets are
single rows drawn uniformly with replacement across iterations, i.e. the
distribution of ``SDCA(sampling="iid")``, and each step is SDCA's closed-form
step; the draws come from different streams, so the iterates agree step for
step only on the same index sequence (tested at the kernel level).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from daskdca.kernels.sdca import objective_sums
from daskdca.kernels.sdna import local_sdna, sdna_batches
from daskdca.losses import EPSILON_INSENSITIVE, LOSSES
from daskdca.methods.base import Capabilities, Contribution, check_local_iters, compress
from daskdca.methods.dual import DualLocal, DualPlan, sweep_blocks

__all__ = ["SDNA", "SDNAPlan", "SDNA_LOSSES"]

# The paper's single-core optimum (Qu et al. 2016 [QRTF16] §6, Fig. 3: runtime improved up to
# tau = 16 on both data sets, then deteriorated).  Measured here (squared loss,
# one partition, benchmarks/RESULTS.md "SDNA", Figs. 2-3): tau = 16 took 1.28x
# the best time on agaricus (best tau 4) and 1.8-2.1x on the correlated set
# (best tau 1).  Kept until hinge, logistic and the cluster, where a round's
# fewer epochs at larger tau also save Dask round trips, are measured.
DEFAULT_BATCH_SIZE = 16

# The losses whose tau-row subproblem the kernel solves (docs/references.md, note N7): Cholesky for squared,
# the box QP in b = y alpha for the hinge losses, damped Newton for logistic.  The SVR losses and Huber's
# (a kink of eps |alpha| at 0, or a box around 0 in alpha) have no solver there yet.
SDNA_LOSSES = tuple(name for name, cls in LOSSES.items() if int(cls.kind) < EPSILON_INSENSITIVE)


@dataclass(frozen=True)
class SDNA:
    """Stochastic Dual Newton Ascent ([QRTF16] Algorithm 3) as the local solver of CoCoA+ rounds.

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` through its dual.
    Every local iteration draws ``tau`` rows (tau-nice) and maximises the dual
    exactly over them: Cholesky for squared loss, coordinate descent on the
    cached ``tau x tau`` Gram block for the hinge losses, damped Newton for
    logistic (docs/references.md, note N7).  With several partitions each runs
    local SDNA on the CoCoA+ subproblem with ``sigma' = K`` (docs/references.md, note N7).

    Parameters
    ----------
    batch_size : int or None, default=None
        ``tau``, the rows of one local iteration; at most the size of the
        smallest partition.  None: 16, the paper's single-core optimum
        ([QRTF16] Fig. 3), or the smallest partition's size if that is smaller.
    local_iters : float, default=1.0
        Rows visited per round, in multiples of the partition's rows:
        ``ceil(local_iters * n_k / tau_k)`` iterations of ``tau_k`` rows.
    """

    batch_size: int | None = None
    local_iters: float = 1.0
    name = "sdna"
    capabilities = Capabilities(losses=SDNA_LOSSES, many_partitions=True, cluster=True, shrinking=False,
                                warm_start=True)

    def __post_init__(self):
        value = self.batch_size
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {value!r}.")
        check_local_iters(self.local_iters)

    def setup(self, info, ops):
        """Check ``tau`` against the partitions; ``sigma' = K`` (Ma et al. 2015 §3, gamma = 1).

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`); unused here.

        Returns
        -------
        SDNAPlan
            The plan of the rounds.

        Raises
        ------
        ValueError
            When ``batch_size`` is more than the smallest partition's rows.
        """
        smallest = int(min(info.partition_sizes))
        if self.batch_size is not None and self.batch_size > smallest:
            raise ValueError(
                f"batch_size={self.batch_size} is more than the {smallest} rows of the smallest partition "
                f"(of {info.n_partitions}); use batch_size <= {smallest}.")
        tau = self.batch_size if self.batch_size is not None else min(DEFAULT_BATCH_SIZE, smallest)
        return SDNAPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                        n_partitions=info.n_partitions, sigma_prime=float(info.n_partitions), tau=int(tau))


@dataclass(frozen=True)
class SDNAPlan(DualPlan):
    """:class:`SDNA` resolved for one data set (``sigma'``, ``tau``)."""

    settings: SDNA
    loss: object
    n: int
    d: int
    lam_n: float
    n_partitions: int
    sigma_prime: float
    tau: int
    eval_every: int = 1
    rounds_per_epoch: int = 1
    primal_from_dual = True

    def _batches(self, n_rows, ctx, stream):
        """The round's row sets of ``n_rows`` rows: ``ceil(local_iters n_rows / tau)`` sets of ``tau``."""
        tau = min(self.tau, n_rows)
        n_iter = max(1, int(math.ceil(self.settings.local_iters * n_rows / tau)))
        return sdna_batches(ctx.random_state, ctx.round, stream, n_rows, tau, n_iter)

    def local(self, part, local, state, ctx):
        """One round on one partition: gap sums at the round's start, then local SDNA.

        In memory the partition's rows are sampled as one set (stream
        ``(random_state, round, partition)``).  Out of core the blocks are
        visited in a seeded random order, as CoCoA+ does, each with
        ``tau_b = min(tau, n_b)`` and its own stream, carrying
        ``u = w + sigma' delta_w`` from block to block; a one-block partition
        uses the partition's stream, so it gives the in-memory bits.
        """
        loss, w = self.loss, state.w
        kind, param = int(loss.kind), loss.param
        alpha = local.alpha.copy()
        u = w.copy()
        single = self.n_partitions == 1
        delta_w = np.empty(0) if single else np.zeros_like(w)
        rows = part.whole()
        if rows is not None:
            loss_sum, conj_sum = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, alpha, w, 0,
                                                rows.n_rows, kind, param)
            batches = self._batches(rows.n_rows, ctx, ctx.partition)
            n_steps = local_sdna(rows.indptr, rows.indices, rows.data, rows.y, alpha, u, delta_w, batches,
                                 kind, param, self.lam_n, self.sigma_prime, not single)
        else:
            def step(blk, lo, hi, a, stream):
                batches = self._batches(hi - lo, ctx, stream) + lo
                return local_sdna(blk.indptr, blk.indices, blk.data, blk.y, a, u, delta_w, batches,
                                  kind, param, self.lam_n, self.sigma_prime, not single)

            loss_sum, conj_sum, n_steps = sweep_blocks(part, alpha, w, ctx, loss, step)
        vector = u if single else compress(delta_w)
        return DualLocal(alpha), Contribution(vector, np.array([loss_sum, conj_sum, float(n_steps)]))
