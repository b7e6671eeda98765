"""The CoCoA+ and serial SDCA settings, and the local solvers they choose from.

:class:`CoCoAPlus` (and :class:`SDCA`, CoCoA+ on one partition) are the
settings a user passes; their ``setup`` resolves them for the data and picks
the plan of the local solver named by ``local_solver`` from
:data:`LOCAL_SOLVERS`: the SDCA steps of :mod:`daskdca.methods.sdca` (inside
Catalyst's loop, :mod:`daskdca.methods.catalyst`, or with the line search),
SDNA (:mod:`daskdca.methods.sdna`) or local SPDC (:mod:`daskdca.methods.spdc`).
This module sits above them all; none of them imports it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

from daskdca.losses import LOSSES
from daskdca.methods.base import Capabilities, check_l1_ratio, check_local_iters
from daskdca.methods.catalyst import CatalystPlan, default_kappa
from daskdca.methods.sdca import LineSearchPlan, LocalSDCAPlan, MomentumPlan, ProxSDCAPlan
from daskdca.methods.sdna import SDNA, SDNA_LOSSES
from daskdca.methods.spdc import LocalSPDCPlan

__all__ = ["LOCAL_SOLVERS", "SDCA", "WINDOW_BLOCKS", "CoCoAPlus"]

#: Store blocks an out-of-core SDCA sweep holds at once by default (``CoCoAPlus(window_blocks=None)``): with 8,
#: serial SDCA needed the passes of one permutation of all rows on a generated 200,000-row store of 13 blocks
#: (logistic at lam n = 0.2, squared hinge and hinge at lam n = 2; 2 and 4 blocks took up to 1.4x and 1.1x
#: those passes, block after block more than 5x: benchmarks/RESULTS.md, "Out of core: a sliding window of
#: blocks").
WINDOW_BLOCKS = 8

_SAMPLINGS = ("permutation", "iid")
_AGGREGATIONS = ("adding", "line_search")
_ACCELERATIONS = ("auto", None, "catalyst")


def _sdca_plan(settings, info, ops):
    """``local_solver="sdca"``: Catalyst around CoCoA+, the line search, or plain CoCoA+ (``sigma' = K``), the
    adding rounds with the momentum search where asked (:class:`~daskdca.methods.sdca.MomentumPlan`); with
    ``l1_ratio > 0`` the proximal steps of :class:`~daskdca.methods.sdca.ProxSDCAPlan`, always plain
    (the settings refuse the rest)."""
    K = info.n_partitions
    rho = float(settings.l1_ratio)
    # the adding rounds' plan: with momentum, each round's move searched on the plane of its step and the last move
    # (by default on 2 or more partitions for a smooth loss; benchmarks/RESULTS.md, "CoCoA+ rounds with a momentum
    # search")
    auto = settings.momentum == "auto" and K > 1 and math.isfinite(info.loss.smoothness)
    # a round of local_iters passes over every partition is local_iters passes over the data (the budget's unit,
    # daskdca.driver.round_budget); inside Catalyst a round is one outer step whatever its passes
    per_pass = 1.0 / float(settings.local_iters)
    adding = MomentumPlan if settings.momentum is True or auto else LocalSDCAPlan
    if rho > 0.0:
        # lam' = lam (1 - rho) and c = rho / (1 - rho): lam' g(w) = lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)
        # with g(w) = 1/2 ||w||^2 + c ||w||_1, 1-strongly convex (Shalev-Shwartz & Zhang 2016, Prox-SDCA)
        return ProxSDCAPlan(settings=settings, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n * (1.0 - rho),
                            n_partitions=K, sigma_prime=float(K), lam=float(info.lam), l1_ratio=rho,
                            threshold=rho / (1.0 - rho), rounds_per_epoch=per_pass)
    if settings.acceleration == "catalyst" or (settings.acceleration == "auto" and K > 1
                                               and settings.local_solver == "sdca"
                                               and settings.aggregation == "adding"):
        # with threads adding, a step's curvature is sigma' = K T times its row's ([DPS+18] §3 on [MSJ+15] §3):
        # Catalyst's kappa = L / n - mu counts the K T parts (T = 1: the K partitions, bit for bit); with the
        # threads' line search the steps keep sigma' = K
        parts = K * (settings.threads if settings.inner_aggregation == "adding" else 1)
        kappa = (default_kappa(info.lam, info.n, parts, ops.sqnorm_sum()) if settings.kappa is None
                 else float(settings.kappa))
        if kappa > 0.0:
            inner = adding(settings=settings, loss=info.loss, n=info.n, d=info.d, lam_n=(info.lam + kappa) * info.n,
                           n_partitions=K, sigma_prime=float(K), certifies_rounds=True, ends_passes_early=False)
            return CatalystPlan(inner=inner, lam=info.lam, kappa=kappa)
    if settings.aggregation == "line_search" and K > 1:
        return LineSearchPlan(settings=settings, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                              n_partitions=K, sigma_prime=1.0, rounds_per_epoch=per_pass)
    return adding(settings=settings, loss=info.loss, n=info.n, d=info.d, lam_n=info.lam_n,
                  n_partitions=K, sigma_prime=float(K), certifies_rounds=True, rounds_per_epoch=per_pass)


def _sdna_plan(settings, info, ops):
    """``local_solver="sdna"``: exactly ``SDNA(batch_size=local_batch_size, local_iters=local_iters)``'s plan."""
    return SDNA(batch_size=settings.local_batch_size, local_iters=settings.local_iters).setup(info, ops)


def _spdc_plan(settings, info, ops):
    """``local_solver="spdc"``: :class:`~daskdca.methods.spdc.LocalSPDCPlan` (refuses hinge)."""
    return LocalSPDCPlan.for_data(settings, info)


#: what may improve a partition's CoCoA+ subproblem (``CoCoAPlus.local_solver``): name -> plan builder
#: ``(settings, info, ops) -> plan``
LOCAL_SOLVERS = {"sdca": _sdca_plan, "sdna": _sdna_plan, "spdc": _spdc_plan}


def _check(local_iters, sampling, shrinking):
    check_local_iters(local_iters)
    if sampling not in _SAMPLINGS:
        raise ValueError(f"Unknown sampling {sampling!r}; use one of {list(_SAMPLINGS)}.")
    if not isinstance(shrinking, bool):
        raise ValueError(f"shrinking must be True or False, got {shrinking!r}.")


@dataclass(frozen=True)
class CoCoAPlus:
    """CoCoA+ rounds with the adding aggregation (Ma et al. 2015, arXiv:1502.03508).

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` through its dual
    (with ``l1_ratio = rho > 0`` the elastic net
    ``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``).
    Each round every partition improves its local subproblem ``G_k^{sigma'}``
    with ``sigma' = K`` (the number of partitions) by ``local_iters`` passes
    of a local solver; then ``w += sum_k delta_w_k``.  With one partition
    ``sigma' = 1`` and the local subproblem is the whole dual.  On more than
    one partition the rounds run, by default, inside Catalyst's accelerated
    proximal-point loop (``acceleration``), which needs 10-40x fewer rounds
    where plain CoCoA+ is slow (benchmarks/RESULTS.md, "Catalyst around
    CoCoA+").

    Parameters
    ----------
    local_iters : float, default=1.0
        Rows visited per round, in multiples of the partition's rows (H / n_k).
        More passes a round make each round's communication a smaller share
        of it, but inside Catalyst on a9a and ijcnn1 they did not cut the
        rounds (691, 683, 679 and 680 rounds at 1, 2, 4 and 8 passes on a9a),
        so the fit took longer (benchmarks/RESULTS.md, "CoCoA+ rounds against
        the local passes per round").
    sampling : {"permutation", "iid"} or None, default=None
        Of the SDCA local solver: a fresh random permutation for every pass
        (None means this), or rows drawn with replacement.  The other local
        solvers draw their own samples (``local_batch_size`` rows at a time), and
        refuse a value here.
    shrinking : bool or None, default=None
        Of the SDCA local solver: each round, visit only the rows whose step
        at the round's ``w`` is non-zero (LIBLINEAR's shrinking, Hsieh et al.
        2008 §3.2; only hinge-type losses have such rows).  None means True
        for ``local_solver="sdca"`` and False for the others, which visit
        every row and refuse ``shrinking=True``.
    aggregation : {"adding", "line_search"}, default="adding"
        ``"adding"``: ``sigma' = K``, ``w += sum_k delta_w_k`` (safe for any
        data, and the most conservative local model).  ``"line_search"``
        (``local_solver="sdca"`` only): every partition maximises the dual
        restricted to its own rows (``sigma' = 1``); the combine takes the
        step ``t`` along the summed direction that maximises the dual over
        ``LINE_SEARCH_STEPS`` (``1/K`` ... ``1``), from conjugate sums every
        partition returns in the same task.  ``t = 1/K`` is CoCoA's
        averaging, which never lowers the dual (concavity), so neither does
        the line search.  It runs without Catalyst: on sparse data with
        evenly spread features it took 1.5-2.4x fewer rounds than the
        default (Catalyst around adding), where a few features shared by
        most rows it took up to 4x more (benchmarks/RESULTS.md, "CoCoA+'s
        line search against Catalyst on sparse data").
    local_solver : {"sdca", "sdna", "spdc"}, default="sdca"
        What improves each partition's subproblem:

        * ``"sdca"``: sequential closed-form dual coordinate steps
          (LocalSDCA, Ma et al. 2015 [MSJ+15] Algorithm 2).
        * ``"sdna"``: local SDNA (Qu et al. 2016 [QRTF16] Algorithm 3, docs/references.md,
          note N7); exactly ``SDNA(batch_size=local_batch_size, local_iters=local_iters)``.
        * ``"spdc"``: local SPDC (Zhang & Xiao 2017 [ZX17] Algorithm 1, or Algorithm 2 with
          ``local_batch_size`` rows) on the partition's subproblem written as a
          saddle problem (docs/references.md, note N8), restarted every round
          at ``x = w``; the step is kept only where it does not lower the
          subproblem (:class:`daskdca.methods.spdc.LocalSPDCPlan`).  Needs a
          smooth loss: hinge is refused (``solver="spdc"`` smooths it).
    local_batch_size : int or None, default=None
        Rows of one local iteration, for ``local_solver="sdna"`` (``tau``;
        None: 16, Qu et al. 2016 [QRTF16] Fig. 3) and ``"spdc"`` (``m``; None: 1, Algorithm
        1, the most pass-efficient, Zhang & Xiao 2017 [ZX17] §2); at most the smallest
        partition's rows.  The SDCA local solver takes one row per step and
        refuses it.
    acceleration : {"auto", None, "catalyst"}, default="auto"
        ``"catalyst"``: the rounds run inside Catalyst's accelerated
        proximal-point loop (:mod:`daskdca.methods.catalyst`): each round is
        one CoCoA+ round on ``P(w) + kappa/2 ||w - y_k||^2`` followed by the
        extrapolation of the centre ``y_k``, so the rounds needed grow like
        the square root of the condition number.  The certificate is the
        original problem's, with the iterate ``w`` as the primal point; the
        dual is not monotone.  Needs ``local_solver="sdca"`` and
        ``aggregation="adding"``.  None: plain CoCoA+ (Ma et al. 2015), whose
        dual never falls.  ``"auto"``: ``"catalyst"`` on more than one
        partition with ``local_solver="sdca"`` and ``aggregation="adding"``,
        None otherwise (one partition is serial SDCA).
    kappa : float or None, default=None
        Catalyst's proximal weight (``acceleration="catalyst"`` only); None:
        :func:`daskdca.methods.catalyst.default_kappa`, from ``lam``, ``K``
        and the rows' mean squared norm (0, plain CoCoA+, when ``lam`` is
        large enough).
    l1_ratio : float, default=0.0
        ``rho`` in ``[0, 1)``: the elastic net
        ``lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)`` instead of ``lam/2 ||w||^2``,
        solved by proximal SDCA steps (Shalev-Shwartz & Zhang 2016, Prox-SDCA:
        ``v = X^T alpha / (lam (1 - rho) n)``, ``w`` its soft threshold at
        ``rho / (1 - rho)``; :class:`daskdca.methods.sdca.ProxSDCAPlan`) and
        certified by the elastic net's own gap
        (:func:`daskdca.problem.objectives`).  Needs ``local_solver="sdca"``
        and ``aggregation="adding"``; ``acceleration="auto"`` is then plain
        CoCoA+ and ``"catalyst"`` is refused.  One-vs-rest problems are fitted
        one after another (not together).  ``rho = 1`` (pure L1) is refused
        here (``g`` is then not strongly convex): :class:`daskdca.methods.l1.L1SDCA`
        solves it by a sequence of elastic nets, certified as the L1 problem.
        0 is the L2 problem and its code path, bit for bit.
    threads : int, default=1
        Threads that sweep each partition's rows together (hierarchical
        CoCoA+: Dünner et al., "Snap ML: A Hierarchical Framework for Machine
        Learning", NeurIPS 2018 [DPS+18], §3).  With ``T = threads > 1`` a partition's
        rows are cut into ``T`` fixed contiguous sub-blocks (rows reach the
        partitions in a seeded random order); each sub-block sweeps its own
        permutation, drawn from ``(random_state, round, partition)`` and the
        sub-block's index (:func:`daskdca.kernels.sampling.sub_block_stream`),
        in its own thread, with the safe ``sigma' = K T`` of the adding
        aggregation applied to the ``K T`` sub-blocks (Ma et al. 2015 [MSJ+15] §3,
        ``gamma = 1``); the sub-blocks' ``delta_w`` are summed in sub-block
        order, so the bits depend on ``T`` but never on thread timing
        (:func:`daskdca.kernels.sdca.threaded_local_sdca`).  A partition still
        takes about ``local_iters`` passes over its rows per round, and the
        certificate is the same.  1 is the one-thread local step, bit for
        bit.  On one partition it is CoCoA+ over ``T`` in-memory parts: the
        steps' curvature is ``T`` times serial SDCA's, so it pays only where
        the threads' speed outweighs the slower progress per pass
        (benchmarks/RESULTS.md, "Threads inside a partition").  Needs
        ``local_solver="sdca"`` and ``l1_ratio=0``, and at most the smallest
        partition's rows.
    inner_rounds : int, default=1
        ``threads > 1`` only: how often the sub-blocks share their progress
        within a round.  Each sub-block's sequence of the round is cut into
        ``inner_rounds`` consecutive pieces; after each piece the
        sub-blocks' ``delta_w`` are added to the partition's copy of ``w``
        (shared memory, no communication) before the next piece.
    window_blocks : int or None, default=None
        Out of core, how many store blocks a partition's sweep holds at once
        (:func:`daskdca.methods.dual.sweep_window`): each block's visits are
        cut into ``window_blocks`` chunks, and the chunks of neighbouring
        blocks run interleaved in one random order, so that a sweep needs
        about the passes of one permutation of the whole partition instead of
        the many more of block after block (benchmarks/RESULTS.md, "Out of
        core: a sliding window of blocks").  Memory: at most this many blocks
        and one gathered segment.  1: block after block, each with its own
        permutation.  None: :data:`WINDOW_BLOCKS` for the one-thread SDCA
        local solver without an L1 part, else 1; values above 1 need those.
        A partition held in memory, or of one block, is swept whole either
        way (the same bits).
    inner_aggregation : {"adding", "line_search"}, default="adding"
        ``threads > 1`` only: how an inner round adds the sub-blocks' steps.
        ``"adding"``: the safe ``sigma' = K T`` above, every step at once.
        ``"line_search"``: the sub-blocks step with the partition's own
        curvature (``sigma' = K``; on one partition serial SDCA's), and each
        inner round moves along their summed step by the ``t`` of
        :func:`~daskdca.methods.sdca.line_search_steps` that raises the
        partition's subproblem most, never below averaging's ``1/T``
        (:func:`daskdca.kernels.sdca.threaded_line_search_sdca`).  Where
        the sub-blocks' rows share few features ``t`` stays 1 and ``T``
        threads take the passes of one (2 threads: 0.77-0.82x of one
        thread's time on 5 M nnz of evenly spread features); where a few
        features are in most rows the passes grow and the threads lose
        (benchmarks/RESULTS.md, "Threads with a line search").
    momentum : {"auto", True, False}, default="auto"
        With ``aggregation="adding"`` (inside Catalyst or not, on one
        partition too): each round's move is ``a Delta alpha + b M``, the
        round's summed local steps and the last round's move, with the
        ``(a, b)`` of :data:`~daskdca.methods.sdca.MOMENTUM_STEPS` that
        raises the dual most (``(1, 0)``, the plain step, among them); every
        partition returns its conjugate sums at the candidates in the round's
        task, so a round costs no more round trips
        (:class:`~daskdca.methods.sdca.MomentumPlan`).  It follows the slow
        direction along which the partitions' dual errors cancel in ``w``,
        where the rounds stall past a gap of 1e-4: on 2 workers to a
        certified 1e-6, 0.44-0.69x the time on a9a and ijcnn1, 1.08-1.14x
        where no such direction slows the rounds (w8a, a generated set),
        whose conjugate sums it pays for (benchmarks/RESULTS.md, "CoCoA+
        rounds with a momentum search").  True needs
        ``local_solver="sdca"``, ``aggregation="adding"`` and ``l1_ratio=0``.
        ``"auto"``: True on 2 or more partitions where it applies and the
        loss is smooth, else False: with the hinge loss inside Catalyst the
        search took 5.5x the rounds on heart, and on one partition serial
        SDCA's epochs gained on some sets and lost on others.
    """

    local_iters: float = 1.0
    sampling: str | None = None
    shrinking: bool | None = None
    aggregation: str = "adding"
    local_solver: str = "sdca"
    local_batch_size: int | None = None
    acceleration: str | None = "auto"
    kappa: float | None = None
    l1_ratio: float = 0.0
    threads: int = 1
    inner_rounds: int = 1
    window_blocks: int | None = None
    inner_aggregation: str = "adding"
    momentum: bool | str = "auto"
    name = "cocoa+"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=True, cluster=True, shrinking=True,
                                warm_start=True, sample_weight=True, multi_class=True)

    def __post_init__(self):
        if self.local_solver not in LOCAL_SOLVERS:
            raise ValueError(f"Unknown local_solver {self.local_solver!r}; use one of {list(LOCAL_SOLVERS)}.")
        value = self.local_batch_size
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
            raise ValueError(f"local_batch_size must be a positive int or None, got {value!r}.")
        if self.local_solver == "sdca":
            if value is not None:
                raise ValueError(
                    f"local_batch_size={value!r} does not apply to local_solver='sdca' (one row per step); drop it, "
                    "or choose local_solver='sdna' or 'spdc', which take local_batch_size rows per local iteration.")
            # None: the SDCA local solver's defaults (one permutation per pass, shrinking)
            object.__setattr__(self, "sampling", "permutation" if self.sampling is None else self.sampling)
            object.__setattr__(self, "shrinking", True if self.shrinking is None else self.shrinking)
            _check(self.local_iters, self.sampling, self.shrinking)
        else:
            check_local_iters(self.local_iters)
            if self.sampling is not None:
                raise ValueError(
                    f"sampling={self.sampling!r} applies to local_solver='sdca' only; "
                    f"local_solver={self.local_solver!r} draws its own rows (local_batch_size at a time). "
                    "Drop sampling.")
            if self.shrinking is None:
                object.__setattr__(self, "shrinking", False)
            if self.shrinking is not False:
                raise ValueError(
                    f"shrinking={self.shrinking!r}: local_solver={self.local_solver!r} visits every row and has no "
                    "shrinking; drop shrinking (or use local_solver='sdca').")
            # the SDNA and SPDC local steps solve the unweighted subproblem, and their plans are not
            # among those fitted one-vs-rest together; SDNA's subproblem solver takes its own losses
            # (LocalSPDCPlan.for_data refuses the non-smooth ones with the reason)
            losses = SDNA_LOSSES if self.local_solver == "sdna" else self.capabilities.losses
            object.__setattr__(self, "capabilities", replace(self.capabilities, sample_weight=False,
                                                             multi_class=False, losses=losses))
        if self.aggregation not in _AGGREGATIONS:
            raise ValueError(f"Unknown aggregation {self.aggregation!r}; use one of {list(_AGGREGATIONS)}.")
        if self.aggregation == "line_search" and self.local_solver != "sdca":
            raise ValueError(
                f"aggregation='line_search' combines with local_solver='sdca' only (its local solves use "
                f"sigma' = 1 and the SDCA sweep), got local_solver={self.local_solver!r}; use aggregation='adding'.")
        self._check_acceleration()
        self._check_l1_ratio()
        self._check_threads()
        self._check_window_blocks()
        self._check_momentum()

    def _check_momentum(self):
        if not (isinstance(self.momentum, bool) or (isinstance(self.momentum, str) and self.momentum == "auto")):
            raise ValueError(f"momentum must be 'auto', True or False, got {self.momentum!r}.")
        if self.momentum is True and (self.local_solver != "sdca" or self.aggregation != "adding"
                                      or self.l1_ratio != 0):
            raise ValueError(
                f"momentum=True searches the move of CoCoA+'s adding rounds (local_solver='sdca', "
                f"aggregation='adding', l1_ratio=0), got local_solver={self.local_solver!r}, "
                f"aggregation={self.aggregation!r}, l1_ratio={self.l1_ratio!r}; drop momentum or those.")

    @property
    def resolved_window_blocks(self):
        """``window_blocks``, with None resolved (:data:`WINDOW_BLOCKS` or 1; see the class docstring)."""
        if self.window_blocks is not None:
            return self.window_blocks
        return WINDOW_BLOCKS if self._window_applies() else 1

    def _window_applies(self):
        return self.local_solver == "sdca" and self.threads == 1 and self.l1_ratio == 0

    def _check_window_blocks(self):
        value = self.window_blocks
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"window_blocks must be a positive int or None, got {value!r}.")
        if value > 1 and not self._window_applies():
            raise ValueError(
                f"window_blocks={value!r} interleaves the rows of several store blocks in the one-thread SDCA local "
                f"sweep without an L1 part; got local_solver={self.local_solver!r}, threads={self.threads!r}, "
                f"l1_ratio={self.l1_ratio!r}. Use window_blocks=1 (or None) with these.")

    def _check_threads(self):
        for field in ("threads", "inner_rounds"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{field} must be a positive int, got {value!r}.")
        if self.inner_aggregation not in _AGGREGATIONS:
            raise ValueError(f"Unknown inner_aggregation {self.inner_aggregation!r}; use one of {list(_AGGREGATIONS)}.")
        if self.threads == 1:
            if self.inner_rounds != 1:
                raise ValueError(
                    f"inner_rounds={self.inner_rounds!r} is how often the threads of a partition share their steps "
                    "within a round; it needs threads > 1 (one thread's steps are shared at once). Drop inner_rounds "
                    "or set threads.")
            if self.inner_aggregation != "adding":
                raise ValueError(
                    f"inner_aggregation={self.inner_aggregation!r} is how the threads of a partition add their steps; "
                    "it needs threads > 1 (one thread's steps are its own). Drop inner_aggregation or set threads.")
            return
        if self.local_solver != "sdca":
            raise ValueError(
                f"threads={self.threads!r} runs the SDCA local solver on sub-blocks of a partition, got "
                f"local_solver={self.local_solver!r}; use local_solver='sdca' or threads=1.")
        if self.l1_ratio != 0:
            raise ValueError(
                f"threads={self.threads!r} does not take l1_ratio={self.l1_ratio!r}: the proximal (elastic-net) "
                "steps run on one thread per partition. Use threads=1, or more partitions (n_partitions) for "
                "parallel elastic-net steps.")

    def _check_l1_ratio(self):
        check_l1_ratio(self.l1_ratio, type(self).__name__)
        rho = self.l1_ratio
        if rho == 0:
            return
        if self.local_solver != "sdca" or self.aggregation != "adding":
            raise ValueError(
                f"l1_ratio={rho!r} (elastic net) runs proximal SDCA steps with aggregation='adding'; got "
                f"local_solver={self.local_solver!r}, aggregation={self.aggregation!r}. Use local_solver='sdca' and "
                "aggregation='adding', or l1_ratio=0.")
        if self.acceleration == "catalyst":
            raise ValueError(
                f"acceleration='catalyst' does not take l1_ratio={rho!r}: Catalyst's proximal term "
                "kappa/2 ||w - y_k||^2 centres the L2 part away from the L1 term's centre 0, a regulariser the "
                "proximal SDCA steps do not model. Use "
                "acceleration=None (or 'auto', which is then plain CoCoA+), or l1_ratio=0.")
        # its plan keeps v beside w (ProxGlobal), and the one-vs-rest plan certifies with l1_ratio 0
        object.__setattr__(self, "capabilities", replace(self.capabilities, multi_class=False))

    def _check_acceleration(self):
        if self.acceleration not in _ACCELERATIONS:
            raise ValueError(f"Unknown acceleration {self.acceleration!r}; use one of {list(_ACCELERATIONS)}.")
        if self.acceleration != "catalyst":
            if self.kappa is not None:
                raise ValueError(f"kappa={self.kappa!r} is Catalyst's proximal weight; it needs "
                                 "acceleration='catalyst' (or drop kappa).")
            return
        if self.local_solver != "sdca" or self.aggregation != "adding":
            raise ValueError(
                f"acceleration='catalyst' runs CoCoA+ rounds with local_solver='sdca' and aggregation='adding', got "
                f"local_solver={self.local_solver!r}, aggregation={self.aggregation!r}; drop acceleration or those.")
        kappa = self.kappa
        if kappa is not None and (isinstance(kappa, bool) or not isinstance(kappa, numbers.Real)
                                  or not math.isfinite(kappa) or kappa <= 0):
            raise ValueError(f"kappa must be a finite number > 0 or None (the default rule), got {kappa!r}.")

    def setup(self, info, ops):
        """The plan for this data: ``sigma' = K`` (adding, gamma = 1; Ma et al. 2015 §3), or the line search.

        ``acceleration="catalyst"`` is :class:`~daskdca.methods.catalyst.CatalystPlan`
        (its default ``kappa`` reads ``sum_i ||x_i||^2`` through ``ops``);
        ``local_solver="sdna"`` is :class:`~daskdca.methods.sdna.SDNA`'s plan
        for the same settings, ``"spdc"`` :class:`~daskdca.methods.spdc.LocalSPDCPlan`
        (the builders of :data:`LOCAL_SOLVERS`).

        Parameters
        ----------
        info : DataInfo
            The data's constants (sizes, loss, ``lam``; no rows).
        ops : Ops
            The executor's reductions over the partitions
            (:class:`~daskdca.methods.base.Ops`).

        Returns
        -------
        object
            The plan of the local solver and acceleration the settings name.
        """
        K = info.n_partitions
        smallest = int(min(info.partition_sizes))
        if self.local_batch_size is not None and self.local_batch_size > smallest:
            raise ValueError(
                f"local_batch_size={self.local_batch_size} is more than the {smallest} rows of the smallest partition "
                f"(of {K}); use local_batch_size <= {smallest}.")
        if self.threads > smallest:
            raise ValueError(
                f"threads={self.threads} is more than the {smallest} rows of the smallest partition (of {K}); every "
                f"thread sweeps a sub-block of at least one row: use threads <= {smallest}.")
        return LOCAL_SOLVERS[self.local_solver](self, info, ops)


@dataclass(frozen=True)
class SDCA(CoCoAPlus):
    """Serial SDCA (Shalev-Shwartz & Zhang, JMLR 2013), LIBLINEAR-style dual coordinate descent.

    Solves ``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` (with
    ``l1_ratio = rho > 0`` the elastic net
    ``min_w 1/n sum_i phi_i(x_i.w) + lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``,
    by Prox-SDCA, Shalev-Shwartz & Zhang 2016) by maximising its
    dual one coordinate at a time, in closed form, on one partition.  One
    round takes ``local_iters * n`` coordinate steps.  The parameters are
    those of :class:`CoCoAPlus`; with one partition the two are the same
    method (``sigma' = 1``).

    Parameters
    ----------
    local_iters : float, default=1.0
        Passes over the rows per round (at most that many with shrinking).
    sampling : {"permutation", "iid"} or None, default=None
        A fresh random permutation for every pass (None means this), or rows
        drawn with replacement.
    shrinking : bool or None, default=None
        LIBLINEAR's shrinking, as :class:`CoCoAPlus` (None means True).  In
        memory with permutation sampling, a round whose movable rows are at
        most half the rows steps through them pass after pass and ends once a
        pass's gap terms fall to
        :data:`~daskdca.methods.sdca.MOVABLE_GAP_SHARE` of theirs at the
        round's start (:func:`~daskdca.kernels.sdca.movable_sdca`), so it may
        take fewer than ``local_iters * n`` steps (not inside Catalyst,
        ``acceleration="catalyst"``).
    aggregation : {"adding", "line_search"}, default="adding"
        As :class:`CoCoAPlus`.
    local_solver : {"sdca"}, default="sdca"
        Only ``"sdca"``: use ``solver="sdna"`` or ``"spdc"`` (or
        ``CoCoAPlus(local_solver=...)``) for another solver.
    local_batch_size : None, default=None
        Only None: serial SDCA takes one row per step.
    acceleration : {"auto", None, "catalyst"}, default="auto"
        As :class:`CoCoAPlus`; ``"auto"`` is None on one partition, and
        ``"catalyst"`` runs serial SDCA inside Catalyst's loop.
    kappa : float or None, default=None
        As :class:`CoCoAPlus`.
    l1_ratio : float, default=0.0
        As :class:`CoCoAPlus`: ``rho`` in ``[0, 1)`` of the elastic net.
    threads : int, default=1
        As :class:`CoCoAPlus`.
    inner_rounds : int, default=1
        As :class:`CoCoAPlus`.
    window_blocks : int or None, default=None
        As :class:`CoCoAPlus`: out of core, the store blocks a sweep holds
        at once, their rows interleaved.
    inner_aggregation : {"adding", "line_search"}, default="adding"
        As :class:`CoCoAPlus`: how the ``threads`` add their steps.
    momentum : {"auto", True, False}, default="auto"
        As :class:`CoCoAPlus`: True searches each epoch's move on the plane
        of the epoch's steps and the last move; ``"auto"`` is False on one
        partition.

    See Also
    --------
    CoCoAPlus : The same method on several partitions.
    """

    name = "sdca"
    capabilities = Capabilities(losses=tuple(LOSSES), many_partitions=False, cluster=False, shrinking=True,
                                warm_start=True, sample_weight=True, multi_class=True)

    def __post_init__(self):
        if self.local_solver != "sdca" or self.local_batch_size is not None:
            raise ValueError(
                f"solver='sdca' is serial SDCA (one row per step), got local_solver={self.local_solver!r}, "
                f"local_batch_size={self.local_batch_size!r}; drop them, or use solver='sdna' or 'spdc' (or "
                "CoCoAPlus(local_solver=...)) for another solver.")
        super().__post_init__()

