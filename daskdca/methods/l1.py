"""The pure L1 method, :class:`L1SDCA`: proximal SDCA on a sequence of elastic nets, certified as the L1 problem.

``P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1``; the reduction and its
certificate are described in :mod:`daskdca.l1`, which fits it
(:func:`daskdca.l1.fit_l1`); the plan is
:class:`~daskdca.methods.sdca.L1ContinuationPlan`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from daskdca.losses import LOSSES, get_loss
from daskdca.methods.base import Capabilities
from daskdca.methods.cocoa import SDCA
from daskdca.methods.sdca import L1ContinuationPlan, l1_default_mu0

__all__ = ["L1SDCA", "check_l1_loss", "default_mu0"]

# the smallest L2 weight of the continuation, relative to lam: below it v = X^T alpha / (mu n) is of order
# lam / mu and the model w = v - lam / mu keeps too few bits
_MU_FLOOR = 1e-12


def check_l1_loss(loss):
    """Check that the rescaled dual point of the L1 certificate is feasible for ``loss``.

    ``beta = s alpha`` with ``s`` in ``(0, 1]`` stays in the conjugate's
    domain when that domain is an interval holding 0, and the certificate's
    guard against rounding (:func:`daskdca.problem.l1_objectives`) needs
    ``phi*(0) = -min phi = 0``.  Both are checked on the loss's own
    conjugate (:meth:`daskdca.losses.Loss.conjugate`).

    Parameters
    ----------
    loss : str or Loss
        The loss (a name of :data:`daskdca.losses.LOSSES` or an instance).

    Returns
    -------
    Loss
        The loss instance.

    Raises
    ------
    ValueError
        When the domain does not hold 0 or ``phi*(0) != 0``.
    """
    loss = get_loss(loss)
    lo, hi = loss.dual_domain
    labels = np.array([1.0, -1.0]) if loss.is_classification else np.array([0.0, 1.0, -2.5])
    at_zero = loss.conjugate(labels, np.zeros(labels.shape[0]))
    if not lo <= 0.0 <= hi or not np.all(at_zero == 0.0):
        raise ValueError(
            f"loss={loss.name!r} cannot be certified for the pure L1 problem: the rescaled dual point s * alpha "
            f"needs a dual domain holding 0 (got {loss.dual_domain}) and phi*(0) = 0 (got {at_zero.tolist()}). "
            "Use penalty='elasticnet' with l1_ratio < 1.")
    return loss


def default_mu0(lam, n, sqnorm_sum, loss):
    """The L2 weight of the subproblems when ``L1SDCA(mu0=None)``: ``max(lam, 0.3 min(L, 2) S / n^2)``.

    ``L`` is the loss's smoothness (``phi''`` at most ``L``; hinge's, infinite,
    counts as 2) and ``S = sum_i ||x_i||^2``, so ``L S / n`` bounds the
    rows' mean curvature (row weights are left out).  A smaller weight takes
    fewer outer steps (the centre moves further each time), a larger one
    better conditions the dual steps (curvature ``||x_i||^2 / (mu n)``);
    Catalyst's ``kappa = L / n`` (Lin, Mairal and Harchaoui, JMLR 2018) is
    this balance for incremental methods, and the factor 0.3 was measured on
    heart_scale and a9a (logistic and squared hinge, ``C`` from 0.05 to 100).

    Parameters
    ----------
    lam : float
        The L1 weight.
    n : int
        The number of rows.
    sqnorm_sum : float
        ``S = sum_i ||x_i||^2``.
    loss : str or Loss
        The loss.

    Returns
    -------
    float
        ``mu0``.
    """
    return l1_default_mu0(lam, n, sqnorm_sum, get_loss(loss).smoothness)


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


@dataclass(frozen=True)
class L1SDCA(SDCA):
    """Pure L1 regularisation ``min_w P1(w) = 1/n sum_i phi_i(x_i.w) + lam ||w||_1``, certified.

    Serial proximal SDCA (Shalev-Shwartz & Zhang 2016, Prox-SDCA) on the
    elastic nets ``P1(w) + mu/2 ||w - z||^2``: with ``z = 0``,
    ``SDCA(l1_ratio=rho)``'s problem at total weight ``lam' = lam + mu`` and
    ``rho = lam / lam'`` (``lam' rho = lam``, ``lam' (1 - rho) = mu``); with a
    centre ``z`` the same steps on ``u = z + X^T alpha / (mu n)``, whose soft
    threshold at ``lam / mu`` is the model.  The duals carry over from one
    subproblem to the next (their box does not depend on the penalty, as
    along :func:`daskdca.path`).  Every gap evaluation measures the L1
    problem's own gap ``P1(w) - D1(beta)`` at the rescaled dual point
    ``beta = s alpha``, ``s = min(1, lam / ||X^T alpha / n||_inf)``,
    ``D1(beta) = -1/n sum_i phi_i*(-beta_i)`` (Ndiaye, Fercoq, Gramfort and
    Salmon, JMLR 2017; :mod:`daskdca.l1`), and the subproblem's gap: when the
    latter is at most ``switch`` times the former, the next subproblem
    starts (centre ``z`` at the current model when ``recentre``,
    ``mu <- max(mu / decrease, mu_min)``).  The fit stops when
    ``P1(w) - D1(beta) <= tol * |P1(w)|``; ``dual_coef_`` is ``beta``, and
    ``primal_``, ``dual_`` and ``gap_`` are recomputed from it and ``coef_``
    alone (:func:`daskdca.problem.l1_objectives`).  ``coef_`` is a soft
    threshold: exact zeros.

    In memory, out of core (store blocks swept one after another) and on a
    cluster; on ``K > 1`` partitions each subproblem's rounds are CoCoA+'s
    (adding, ``sigma' = K``) and the combine decides the next subproblem
    (:class:`~daskdca.methods.sdca.L1ContinuationPlan`).  No one-vs-rest in
    one pass: :class:`~daskdca.SDCAClassifier` fits the classes in turn.

    Parameters
    ----------
    local_iters : float, default=1.0
        Passes over the rows per round.
    sampling : {"permutation", "iid"} or None, default=None
        As :class:`~daskdca.SDCA`.
    shrinking : bool or None, default=None
        As :class:`~daskdca.SDCA` (None means True).
    aggregation : {"adding"}, default="adding"
        Only ``"adding"``.
    local_solver : {"sdca"}, default="sdca"
        Only ``"sdca"``.
    local_batch_size : None, default=None
        Only None.
    acceleration : {"auto", None}, default="auto"
        Plain proximal SDCA either way; ``"catalyst"`` is refused.
    kappa : None, default=None
        Only None.
    l1_ratio : float, default=0.0
        Only 0: the L1 weight is ``lam`` itself.
    threads : int, default=1
        Only 1.
    inner_rounds : int, default=1
        Only 1.
    window_blocks : {1, None}, default=None
        Out of core the blocks are swept one after another (as the elastic
        net's proximal steps are): only 1, or None meaning 1.
    inner_aggregation : {"adding"}, default="adding"
        Only ``"adding"`` (``threads`` is 1).
    momentum : {"auto", False}, default="auto"
        No momentum search for the proximal steps: ``"auto"`` and False
        mean none, True is refused.
    mu0 : float or None, default=None
        The first L2 weight ``mu``; None: :func:`default_mu0`.
    decrease : float, default=1.0
        ``mu`` is divided by it at each new subproblem (>= 1; 1 keeps it).
    switch : float, default=0.5
        ``mu`` falls after a round whose elastic-net gap at ``mu`` is at most
        ``switch`` times its L1 gap (> 0).
    mu_min : float or None, default=None
        The smallest ``mu``; None means ``1e-12 lam``.
    recentre : bool, default=True
        Move the centre ``z`` to the current model at each new subproblem
        (the proximal-point loop); False keeps ``z = 0`` (the plain
        continuation, with ``decrease > 1``).

    See Also
    --------
    fit_l1 : :func:`daskdca.fit` with this solver, refusing the inputs it cannot fit.
    daskdca.SDCA : ``l1_ratio < 1``: the elastic net, certified as such.
    """

    mu0: float | None = None
    decrease: float = 1.0
    switch: float = 0.5
    mu_min: float | None = None
    recentre: bool = True
    name = "l1_sdca"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=True, cluster=True, shrinking=True,
                                warm_start=True, sample_weight=True, multi_class=False)

    def _window_applies(self):
        return False

    def _check_window_blocks(self):
        if self.window_blocks not in (None, 1) or isinstance(self.window_blocks, bool):
            raise ValueError(f"L1SDCA sweeps store blocks one after another (as the elastic net's proximal steps "
                             f"do), got window_blocks={self.window_blocks!r}; use window_blocks=1 or None.")

    def __post_init__(self):
        super().__post_init__()
        if self.l1_ratio != 0:
            raise ValueError(f"L1SDCA solves the pure L1 problem lam ||w||_1 and takes no l1_ratio, got "
                             f"l1_ratio={self.l1_ratio!r}; drop it, or use daskdca.SDCA(l1_ratio=...) for the "
                             "elastic net.")
        if (self.acceleration == "catalyst" or self.aggregation != "adding" or self.threads != 1
                or self.momentum is True):
            raise ValueError(f"L1SDCA runs plain proximal SDCA steps on one thread, got acceleration="
                             f"{self.acceleration!r}, aggregation={self.aggregation!r}, threads={self.threads!r}, "
                             f"momentum={self.momentum!r}; drop them.")
        for field in ("mu0", "mu_min"):
            if getattr(self, field) is not None:
                _check_positive(field, getattr(self, field))
        _check_positive("decrease", self.decrease)
        if self.decrease < 1:
            raise ValueError(f"decrease must be >= 1 (1 keeps mu fixed), got {self.decrease!r}.")
        _check_positive("switch", self.switch)

    def setup(self, info, ops):
        """The plan for this data: :class:`~daskdca.methods.sdca.L1ContinuationPlan` (``sigma' = K``).

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions (``sum_i ||x_i||^2`` for :func:`default_mu0`).

        Returns
        -------
        object
            The plan, :class:`~daskdca.methods.sdca.L1ContinuationPlan`.
        """
        check_l1_loss(info.loss)
        lam = float(info.lam)
        mu0 = default_mu0(lam, info.n, ops.sqnorm_sum(), info.loss) if self.mu0 is None else float(self.mu0)
        mu_min = min(mu0, _MU_FLOOR * lam if self.mu_min is None else float(self.mu_min))
        return L1ContinuationPlan(settings=self, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                                  n_partitions=info.n_partitions, sigma_prime=float(info.n_partitions), lam=lam,
                                  l1_ratio=1.0, threshold=0.0, mu0=mu0,
                                  mu_min=mu_min, decrease=float(self.decrease), switch=float(self.switch),
                                  recentre=bool(self.recentre))
