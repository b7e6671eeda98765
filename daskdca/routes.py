"""Which route a fit takes, chosen before anything runs: here, on one worker, or in rounds across workers.

``solver="auto"`` (the default of :func:`daskdca.fit`) solves
``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` by the fastest
certified route this module can tell from the data's shape, ``lam`` and the
cluster, without reading a row:

``"in_process"``
    In-memory X and no client: serial SDCA in this process (Shalev-Shwartz &
    Zhang, JMLR 2013), LIBLINEAR's dual coordinate descent.
``"one_worker"``
    A client, a store or a dask array, and the data fits in one worker's
    memory: the whole serial fit runs as one task on one worker, which reads
    the data itself.  No rounds, so no Dask round trip per epoch; the
    certificate and the bits are those of the same fit in this process on
    in-memory arrays (a store's rows are summed block by block as it holds
    them, which agrees with in-memory arrays to rounding).
``"rounds"``
    The data does not fit in one worker (or the fit needs what only rounds
    give: a checkpoint, a resume, a per-evaluation callback, out-of-core
    reads): CoCoA+ rounds over one partition per worker, fixed at the start
    of the fit.

The method: where the features are few (``d <= NEWTON_MAX_FEATURES``) and
the loss is twice differentiable, the primal Newton method
(:mod:`daskdca.methods.newton`) needs 6-9 rounds to a certified 1e-8 on
real data whatever ``lam``, so it runs the rounds route, and in one process
it runs where SDCA's epochs, which grow like ``1/(lam n)``, cost more
(``lam n < NEWTON_LAM_N``).  On a cluster of several workers, data of at
least ``NEWTON_ROUNDS_MIN_NNZ`` stored values goes to Newton rounds over
all of them even when it fits one: Newton's iterates do not depend on the
partitions, so the workers share each pass.  Otherwise serial SDCA runs, inside Catalyst's
accelerated proximal-point loop (Lin, Mairal & Harchaoui, "Catalyst
acceleration for first-order convex optimization", JMLR 2018, Algorithm 1)
when ``lam n < CATALYST_LAM_N``, and rounds are CoCoA+'s.  With an L1
share ``l1_ratio = rho > 0`` (the penalty ``lam ((1 - rho)/2 ||w||^2 +
rho ||w||_1)``) the routes are the same and the methods their proximal
forms: serial SDCA and CoCoA+ with ``l1_ratio`` (Prox-SDCA, Shalev-Shwartz
& Zhang, Math. Program. 2016), or, for ``rho = 1`` (pure L1),
:class:`~daskdca.methods.l1.L1SDCA` on one partition or in rounds; Catalyst
and Newton take the L2 penalty only.  An explicit ``solver=`` is always
obeyed; the route then only says where it runs.

With two or more threads (a fit's ``n_jobs`` in this process; on the
one-worker route, that worker's threads; in rounds, the fewest of a
worker's) SDCA's sweep of a partition is split over them, hierarchical
CoCoA+ with a line search (``SDCA(threads=T,
inner_aggregation="line_search")``, or ``CoCoAPlus(...)`` in rounds whose
partitions are held in memory: K counts workers, not threads), where a
partition has at least ``THREADED_SWEEP_MIN_NNZ`` stored values and the
column counts say the features overlap little
(:func:`~daskdca.problem.feature_overlap` at most
``THREADED_SWEEP_MAX_OVERLAP``): where sub-blocks of rows share features
their steps add up past the optimum and the threads lose.

The multinomial (softmax) problem of ``K > 2`` classes, which the
estimators fit for ``loss="logistic"`` (:func:`choose_multinomial_route`),
takes the same shape rule: where Newton would run on the binary problem, a
primal method runs, else multinomial SDCA (:mod:`daskdca.methods.multinomial`);
the primal method is Newton (:mod:`daskdca.methods.multinomial_newton`) where
a round's Hessian sums are few (``MULTINOMIAL_NEWTON_MAX_WORK``), else L-BFGS
(:mod:`daskdca.methods.multinomial_lbfgs`).  A warm start goes to multinomial
SDCA, the only one of them that takes duals.

:func:`_resolve_solver` makes the method object of a user's solver name, with
the settings a cluster needs, and :func:`route_method` that of a route's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from daskdca.methods import REGISTRY
from daskdca.methods.cocoa import WINDOW_BLOCKS
from daskdca.methods.l1 import L1SDCA
from daskdca.methods.multinomial_newton import NEWTON_MAX_VARIABLES
from daskdca.methods.newton import NEWTON_LOSSES  # the losses the Newton method takes
from daskdca.problem import feature_overlap

__all__ = ["CATALYST_LAM_N", "MULTINOMIAL_NEWTON_MAX_WORK", "NEWTON_LAM_N", "NEWTON_LOSSES", "NEWTON_MAX_FEATURES",
           "NEWTON_ROUNDS_MIN_NNZ", "ONE_WORKER_MEMORY_FRACTION", "ROUND_MIN_VALUES", "Route",
           "THREADED_SWEEP_INNER_ROUNDS", "THREADED_SWEEP_MAX_OVERLAP", "THREADED_SWEEP_MAX_THREADS",
           "THREADED_SWEEP_MIN_NNZ", "Workers",
           "choose_multinomial_route", "choose_route", "data_bytes", "explicit_route", "fits_one_worker", "lam_n",
           "held_in_memory", "one_worker_capacity", "provisional_method", "round_passes", "route_method",
           "window_for_memory", "with_threads", "WINDOW_BLOCK_COPIES", "WINDOW_MEMORY_SHARE"]

#: Serial SDCA runs inside Catalyst when ``lam n`` (``1/C`` in LIBLINEAR's terms) is below this.  Measured
#: (benchmarks/RESULTS.md, "Catalyst around serial SDCA"): at lam n = 0.03-0.05 (lam 1e-6 on a9a, w8a,
#: ijcnn1) Catalyst was 1.3-33x faster in 5 of 6 cells; at lam n = 0.3-0.5 (lam 1e-5) it won on a9a only and
#: lost on ijcnn1 (1.5x slower); at lam n = 3-5 (lam 1e-4) it lost in 4 of 6 cells.
CATALYST_LAM_N = 0.1

#: The most features for which solver="auto" picks the primal Newton method: a round forms the d x d Hessian
#: (``r_i^2`` work per row of ``r_i`` stored values, ``d^3 / 3`` for its Cholesky) and sends it through the
#: reduction.  Measured (benchmarks/RESULTS.md, "Primal Newton"): at d = 22 (ijcnn1) and d = 123 (a9a) a round
#: costs 20-45 ms on 50,000 rows, and Newton certified 1e-6 in 6-8 rounds where SDCA needed 297-2107 epochs at
#: C = 100 (19-89x faster), while at C = 1 it was 1.3x faster on a9a and 1.9x slower on ijcnn1.  At d = 300
#: (w8a, "Primal Newton against SDCA by lam n") Newton won 2.1-5.5x at lam n <= 1 as on a9a.  300 is the largest
#: d measured; the Cholesky's d^3/3, run by the combine on the driver and on every worker, takes 6 ms a round at
#: d = 300 and 29 ms at d = 512 here, which was not measured against SDCA.
NEWTON_MAX_FEATURES = 300
#: Where Newton may run (few features, a smooth loss), one partition takes it when ``lam n`` is below this.
#: Measured (benchmarks/RESULTS.md, "Primal Newton against SDCA by lam n"; logistic, to a certified 1e-6): at
#: lam n = 0.3 Newton was 1.1-5.2x faster than serial SDCA on a9a, ijcnn1 and a KDD99-shaped set; at lam n = 1
#: 1.9x and 1.3x faster on a9a and the KDD99-shaped set, 1.25x slower on ijcnn1; at lam n = 3 level or slower
#: (1.0x, 0.6x, 0.9x).
NEWTON_LAM_N = 2.0


#: Where primal Newton may run (few features, a smooth loss, no warm start), data of at least this many stored
#: values goes to Newton rounds over all the workers even when it fits one: Newton's iterates are the same
#: whatever the partitions (only the sums' order differs), so K workers share each pass, and a round trip
#: costs milliseconds (benchmarks/RESULTS.md, "Engine: resident rounds") against tens of ms a pass here.
#: Measured (benchmarks/RESULTS.md, "Primal Newton: one worker or rounds over the workers"; 2 workers, logistic,
#: lam n = 1, to 1e-6): rounds lost below 1.3 M stored values (1.3-2.2x the one-worker time on a9a, w8a and a
#: KDD99-shaped set), were level at 4.0 M (1.01x) and won at 13.3 M (0.84x).
NEWTON_ROUNDS_MIN_NNZ = 4_000_000

#: Plain serial SDCA chosen by the route takes enough passes a round that the round visits at least this many
#: stored values and rows (:func:`round_passes`): on small data a round's fixed cost (the driver's Python, the
#: certificate's full pass) outweighs its steps.  Measured (benchmarks/RESULTS.md, "Rounds that cost their
#: arithmetic in this process"; the default ``SDCAClassifier`` on scikit-learn's toy sets, hinge): 0.12-0.93x
#: the time of one pass a round (iris 191 to 23 ms); 262,144 was faster on digits (0.62-0.76x against
#: 0.70-0.93x) and slower on the small standardised sets (0.57-0.95x against 0.45-0.82x).
ROUND_MIN_VALUES = 65_536


#: Serial SDCA's sweep runs on the fit's threads, ``SDCA(threads=T, inner_rounds=THREADED_SWEEP_INNER_ROUNDS,
#: inner_aggregation="line_search")`` (its rows in ``T`` sub-blocks, one thread each; Dünner et al., "Snap ML: A
#: Hierarchical Framework for Machine Learning", NeurIPS 2018, §3), on data of at least this many stored values
#: whose :func:`~daskdca.problem.feature_overlap` is at most ``THREADED_SWEEP_MAX_OVERLAP``.  Measured
#: (benchmarks/RESULTS.md, "Serial SDCA's sweep on the fit's threads"; logistic, to a certified 1e-4, the split
#: on two threads against serial SDCA with its gap sums on the second, 2 cores): on rows of 20 values drawn
#: uniformly from 100,000 features (overlap 0.0002), 0.64-0.72x at 5 M stored values, 0.87-0.90x at 2.5 M and
#: 1.23-1.26x (slower) at 1 M, where the inner rounds' fixed cost outweighs an epoch of 14 ms.
THREADED_SWEEP_MIN_NNZ = 2_500_000
#: The most :func:`~daskdca.problem.feature_overlap` at which the threads split serial SDCA's sweep.  Measured
#: (the same section; 5 M stored values, lam 1e-5): overlap 0.002 (10,000 uniform features) 0.72x in one more
#: epoch (12 against 11), 0.02 (1,000) 0.97x in 17 epochs against 13, 0.039 (500) 1.26x and 0.077 (250) 1.86x
#: slower; on the Zipf-featured store of ``daskdca make-data`` (0.16) and url10 (0.16) 0.92-1.88x.  Where the
#: sub-blocks share features their steps add up past the optimum, which the line search's one step for the
#: whole sum cannot undo, and the epochs grow.
THREADED_SWEEP_MAX_OVERLAP = 0.01
#: The most sub-blocks (threads) the split sweep takes: on the 5 M-value set above 4 and 8 sub-blocks took 8 and
#: 28 epochs against 7 and 27 for 2 (lam 1e-5 and 1e-6; their time was not measured on as many cores); more
#: were not measured.
THREADED_SWEEP_MAX_THREADS = 8
#: Inner rounds a pass of the split sweep: how often the sub-blocks share their steps (``inner_rounds``).
#: Measured ("Threads with a line search", "Reruns on a quiet machine"): 8 took serial SDCA's epochs on the
#: 5 M-value set; 4 took one more, and 16 was slower.
THREADED_SWEEP_INNER_ROUNDS = 8

#: Where L-BFGS would fit the multinomial problem, primal Newton (``"multinomial_newton"``) takes it when a
#: round's Hessian sums, ``sum_i nnz_i^2 K (K + 1) / 2`` additions, are at most this many (1.6 ns an addition
#: here: under 2 ms a round).  Measured (benchmarks/RESULTS.md, "Multinomial Newton on small problems"; C = 1,
#: to a certified 1e-6): on iris and wine Newton certified in 6-8 rounds, at 0.45-1.17x L-BFGS's time, and on
#: wine as loaded where L-BFGS's 1,000 passes ended at a relative gap of 0.49.  Above it, on digits and its
#: cuts to 3 and 5 classes (3.6 M to 380 M additions), L-BFGS certified 2.4-44x faster; on digits' first 16
#: and 32 pixels (8.9 M, 31 M) L-BFGS did not certify in 1,000 passes where Newton did (0.14 s, 0.70 s), and
#: the estimators' ConvergenceWarning names Newton there.
MULTINOMIAL_NEWTON_MAX_WORK = 1 << 20

#: The one-worker route is taken when the data's in-memory size is at most this fraction of the smallest
#: worker's memory limit: loading a store holds its blocks and their joined copy at once (about 2x), and the
#: fit's duals, row norms and ``w`` come on top.
ONE_WORKER_MEMORY_FRACTION = 0.25

#: With no memory limit known (a worker started with ``memory_limit=0``), data up to this size goes to one
#: worker.
ONE_WORKER_UNLIMITED_BYTES = 4 << 30


class Workers(NamedTuple):
    """What the route needs to know of a cluster: its workers' thread counts and memory limits (bytes, 0 if
    none)."""

    nthreads: tuple
    memory_limits: tuple

    @property
    def n_workers(self) -> int:
        return len(self.nthreads)

    @property
    def capacities(self) -> tuple:
        """The most data (bytes) each worker takes for a whole fit (:func:`one_worker_capacity`)."""
        return tuple(one_worker_capacity(m) for m in self.memory_limits)

    @property
    def fit_worker(self) -> int:
        """The index of the worker the one-worker route runs on: the largest capacity, the first (by address)
        among equals."""
        return min(range(self.n_workers), key=lambda k: (-self.capacities[k], k))


def one_worker_capacity(memory_limit):
    """The most data (in-memory bytes) one worker of ``memory_limit`` bytes takes for a whole fit:
    :data:`ONE_WORKER_MEMORY_FRACTION` of its limit, or :data:`ONE_WORKER_UNLIMITED_BYTES` without one (0 or
    None)."""
    limit = int(memory_limit or 0)
    return ONE_WORKER_MEMORY_FRACTION * limit if limit else float(ONE_WORKER_UNLIMITED_BYTES)


class Route(NamedTuple):
    """Where a fit runs and why.

    Attributes
    ----------
    name : {"in_process", "one_worker", "rounds"}
        This process, one task on one worker, or rounds across the workers.
    solver : str
        The registered name of the method to run.
    options : dict
        Settings of that method other than its defaults (e.g. ``{"acceleration": "catalyst"}``).
    n_partitions : int or None
        Partitions of the rows (None: the driver's own default).
    reason : str
        One sentence a user can read: the facts that chose the route.
    """

    name: str
    solver: str
    options: dict
    n_partitions: int | None
    reason: str


def data_bytes(n, nnz, value_itemsize=8, index_itemsize=4):
    """In-memory size of n rows holding nnz stored values as CSR, with the per-row arrays a fit keeps."""
    return int(nnz) * (int(value_itemsize) + int(index_itemsize)) + 24 * int(n)


def round_passes(n, nnz, max_epochs=None):
    """Passes over the rows a round of plain serial SDCA takes: enough that it visits at least
    :data:`ROUND_MIN_VALUES` stored values and rows (``nnz + n``), at least one, and at most the fit's budget
    ``max_epochs`` (whole passes; None: no bound)."""
    passes = max(1, math.ceil(ROUND_MIN_VALUES / max(1, int(nnz) + int(n))))
    return passes if max_epochs is None else max(1, min(passes, math.floor(max_epochs)))


def lam_n(lam, n):
    """``lam n`` to 12 significant digits, as the rules compare it with their bounds: the estimators'
    ``lam = 1 / (C n)`` gives ``lam n`` back as ``1 / C`` only to rounding (C = 10 on 32,561 rows:
    0.09999999999999999), and ``C = 10`` must read as ``lam n = 0.1``, not below it."""
    return float(f"{lam * n:.12g}")


def _serial_solver(lam, n, nnz, newton, passes_given, max_epochs):
    """``(solver, options, why)`` of a fit on one partition, for ``lam n`` (``newton``: Newton may run); plain
    SDCA on ``n`` rows of ``nnz`` stored values takes :func:`round_passes` passes a round (within ``max_epochs``)
    unless ``local_iters`` was given (``passes_given``)."""
    lam_n_ = lam_n(lam, n)
    if newton and lam_n_ < NEWTON_LAM_N:
        return "newton", {}, f"lam n = {lam_n_:.3g} < {NEWTON_LAM_N:g} and few features: primal Newton"
    if lam_n_ < CATALYST_LAM_N:
        return "sdca", {"acceleration": "catalyst"}, f"lam n = {lam_n_:.3g} < {CATALYST_LAM_N:g}: SDCA inside Catalyst"
    why = f"lam n = {lam_n_:.3g} >= {CATALYST_LAM_N:g}: plain SDCA"
    passes = 1 if passes_given else round_passes(n, nnz, max_epochs)
    if passes == 1:
        return "sdca", {}, why
    return "sdca", {"local_iters": passes}, (f"{why}, {passes} passes a round ({int(nnz) + int(n):,} stored values "
                                             f"and rows, under {ROUND_MIN_VALUES:,} a round)")


def _split_options(threads):
    """SDCA's settings that split a partition's sweep over ``threads`` threads with the line search."""
    return {"threads": threads, "inner_rounds": THREADED_SWEEP_INNER_ROUNDS, "inner_aggregation": "line_search"}


def _split_sweep(options, why, *, threads, n, nnz, overlap, partitions=1):
    """``(options, why)`` of SDCA's sweep on each of ``partitions`` partitions split over ``threads`` threads (at
    most :data:`THREADED_SWEEP_MAX_THREADS`) where a partition is large and the features overlap little
    (:data:`THREADED_SWEEP_MIN_NNZ`, :data:`THREADED_SWEEP_MAX_OVERLAP`), else as they are.  ``overlap`` is the
    data's :func:`~daskdca.problem.feature_overlap` (None, no column counts: no split)."""
    if "l1_ratio" in options or threads < 2 or nnz / partitions < THREADED_SWEEP_MIN_NNZ or overlap is None:
        return options, why
    whose = "its sweep" if partitions == 1 else "each partition's sweep"
    if overlap > THREADED_SWEEP_MAX_OVERLAP:
        return options, f"{why}; {whose} on one thread (feature overlap {overlap:.2g} > {THREADED_SWEEP_MAX_OVERLAP:g})"
    threads = min(threads, THREADED_SWEEP_MAX_THREADS, n // partitions)
    why = (f"{why}; {whose} split over {threads} threads ({nnz / partitions / 1e6:.3g} M stored values a partition, "
           f"feature overlap {overlap:.2g} <= {THREADED_SWEEP_MAX_OVERLAP:g})")
    return {**options, **_split_options(threads)}, why


def held_in_memory(size, workers):
    """Whether a cluster fit keeps its partitions in the workers' memory (``in_memory=None``): when the data's
    ``size`` bytes, shared over the workers, take at most :data:`ONE_WORKER_MEMORY_FRACTION` of the smallest
    worker's memory limit each (loading a partition holds its blocks and their joined copy at once, as the
    one-worker route's load does; workers without a limit do not bound it), or no worker has one.  Measured:
    a store of 805 MB in memory on two workers of 900 MiB each (0.43 of a limit each) killed them while they
    loaded it, and at 1 GiB (0.37) a worker peaked at 91% of its limit (benchmarks/RESULTS.md, "Out of core:
    the window within a worker's memory")."""
    limits = [int(m or 0) for m in workers.memory_limits]
    if not limits:
        return False
    limited = [m for m in limits if m]  # each worker with a limit holds its share within it
    return not limited or size <= ONE_WORKER_MEMORY_FRACTION * len(limits) * min(limited)


def _split_rounds(solver, options, why, *, workers, threads, held, n, nnz, overlap):
    """``(options, why)`` of CoCoA+ rounds over one partition per worker with each partition's sweep split over
    the fewest of a worker's threads, hierarchical CoCoA+ (Dünner et al., NeurIPS 2018, §3), by
    :func:`_split_sweep`'s rule, where the partitions are ``held`` in memory (out of core a split sweep gives up
    the sliding window of blocks, :data:`~daskdca.methods.cocoa.WINDOW_BLOCKS`).  ``threads`` given (a resumed
    fit's recorded number) is taken as it is: split over it when it is 2 or more, whatever the rule says now."""
    if solver != "cocoa+" or "l1_ratio" in options:
        return options, why
    if threads is not None:
        if threads < 2:
            return options, why
        why = f"{why}; each partition's sweep split over {threads} threads, as its checkpoint recorded"
        return {**options, **_split_options(threads)}, why
    if not held or not workers.n_workers:
        return options, why
    return _split_sweep(options, why, threads=min(workers.nthreads), n=n, nnz=nnz, overlap=overlap,
                        partitions=workers.n_workers)


def _penalised_solvers(l1_ratio):
    """``(serial solver, its options, why; rounds solver, its options, why)`` for an L1 share ``l1_ratio > 0``:
    the proximal forms of serial SDCA and CoCoA+, or :class:`~daskdca.methods.l1.L1SDCA` for pure L1."""
    if l1_ratio == 1:
        return ("l1_sdca", {}, "l1_ratio = 1, the pure L1 penalty: L1SDCA's sequence of elastic nets",
                "l1_sdca", {}, "L1SDCA's CoCoA+ rounds (l1_ratio = 1, the pure L1 penalty)")
    options = {"l1_ratio": float(l1_ratio)}
    why = f"l1_ratio = {l1_ratio:g}: the elastic net by proximal SDCA; Catalyst and Newton take the L2 penalty only"
    return "sdca", options, why, "cocoa+", options, f"proximal CoCoA+ rounds (l1_ratio = {l1_ratio:g}, the elastic net)"


def _rounds_solver(newton):
    if newton:
        return "newton", "primal Newton rounds (few features: a handful of rounds)"
    return "cocoa+", "CoCoA+ rounds"


#: Out of core on a cluster, the blocks a partition's sweep holds at once (its sliding window,
#: :data:`~daskdca.methods.cocoa.WINDOW_BLOCKS` by default, and the block read ahead) take at most this share of
#: the smallest worker's memory limit, each at :data:`WINDOW_BLOCK_COPIES` times its in-memory size.  Measured: a
#: 2-worker cluster of 700 MiB workers, out of core on a store of 16 blocks of 35,000 rows (4.1 M stored values,
#: 49 MB a block in memory): 389 MiB a worker at its peak holding 1 block, 541 MiB holding 2 (this rule's
#: choice), 585 MiB holding 3, and with 8 every worker went over its limit and was killed by its nanny
#: (benchmarks/RESULTS.md, "Out of core: the window within a worker's memory").
WINDOW_MEMORY_SHARE = 0.5

#: A held block's bytes over its in-memory size (:func:`data_bytes`): the block as read and the copy of its rows
#: gathered into the window's segments (about 100 MiB a block of 49 MB in the measurement above: 389 MiB holding
#: 1 block, 585 MiB holding 3).
WINDOW_BLOCK_COPIES = 2


def window_for_memory(block_bytes, workers, default=WINDOW_BLOCKS):
    """The most store blocks (at most ``default``, at least 1) an out-of-core sweep may hold in the smallest
    worker's memory limit: ``WINDOW_MEMORY_SHARE`` of it over ``WINDOW_BLOCK_COPIES`` times the largest block's
    in-memory size ``block_bytes``, less the block read ahead.  ``default`` when a worker has no limit."""
    limits = [int(m or 0) for m in workers.memory_limits]
    if not limits or not all(limits):
        return default
    fits = math.floor(WINDOW_MEMORY_SHARE * min(limits) / (WINDOW_BLOCK_COPIES * max(1, int(block_bytes)))) - 1
    return max(1, min(int(default), fits))


def fits_one_worker(size, workers):
    """Whether data of ``size`` bytes fits every worker's capacity (:func:`one_worker_capacity`), with room for
    the fit: the fit goes to the worker of the largest (``Workers.fit_worker``), and to another if that one is
    lost."""
    if not workers.n_workers:
        return False
    return size <= min(workers.capacities)


def choose_route(*, on_cluster, n, nnz, lam, d=None, loss_name=None, warm_start=False, sdca_options=(),
                 workers=None, size=None, needs_rounds=(), n_partitions=None, l1_ratio=0.0, n_threads=1,
                 column_nnz=None, rounds_threads=None, max_epochs=None):
    """The route of a ``solver="auto"`` fit.

    Parameters
    ----------
    on_cluster : bool
        Whether the fit has a cluster: a client was given, or X is a store or a dask array.
    n, nnz : int
        Rows and stored values of X.
    lam : float
        The regularisation of ``P(w)``.
    d, loss_name : int and str, optional
        Features and loss: the primal Newton method is considered only when both are given, the loss is in
        :data:`NEWTON_LOSSES` and ``d <= NEWTON_MAX_FEATURES``.
    warm_start : bool
        Whether the fit starts from given duals (``dual_init``), which Newton does not take.
    sdca_options : sequence of str
        The options given that only the dual methods take (e.g. ``"local_iters"``): they ask for SDCA or
        CoCoA+, so Newton is not considered.
    workers : Workers or None
        The cluster's workers now (None without a cluster).
    size : int or None
        The data's in-memory size in bytes (:func:`data_bytes` when None).
    needs_rounds : sequence of str
        The options given that only rounds honour (e.g. ``"checkpoint"``).
    n_partitions : int or None
        Partitions the user asked for; a number above 1 means CoCoA+ rounds.
    l1_ratio : float, default=0.0
        The L1 share ``rho`` in ``[0, 1]`` of the penalty ``lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)``; above 0
        the methods are the proximal ones (:func:`_penalised_solvers`), never Newton or Catalyst.
    n_threads : int, default=1
        The threads of a fit in this process (``n_jobs``); the one-worker route takes its worker's threads.
    column_nnz : array of int or None, default=None
        The rows in which each feature is non-zero (:func:`~daskdca.problem.column_nnz`): with two or more
        threads SDCA's sweep is split over them where the features overlap little
        (:data:`THREADED_SWEEP_MAX_OVERLAP`); None keeps it on one thread.
    rounds_threads : int or None, default=None
        The threads each partition's sweep takes in CoCoA+ rounds: None, the fewest of a worker's; a resumed
        fit gives the number its checkpoint recorded, so that it runs the same method on other workers.
    max_epochs : float or None, default=None
        The fit's budget in passes: plain serial SDCA's passes a round (:func:`round_passes`) stay within it.

    Returns
    -------
    Route
    """
    size = data_bytes(n, nnz) if size is None else int(size)
    newton = (d is not None and loss_name in NEWTON_LOSSES and d <= NEWTON_MAX_FEATURES and not warm_start
              and not sdca_options and l1_ratio == 0)
    if l1_ratio > 0:
        solver, options, why_solver, rounds_solver, rounds_options, why_rounds = _penalised_solvers(l1_ratio)
        # the partitions the user asked for take the proximal rounds
        asked_solver, asked_options, asked_why = rounds_solver, rounds_options, why_rounds
    else:
        solver, options, why_solver = _serial_solver(lam, n, nnz, newton, "local_iters" in sdca_options, max_epochs)
        (rounds_solver, why_rounds), rounds_options = _rounds_solver(newton), {}
        asked_solver, asked_options, asked_why = "cocoa+", {}, "CoCoA+ rounds"
    if n_partitions is not None and n_partitions > 1:
        return Route("rounds" if on_cluster else "in_process", asked_solver, asked_options, n_partitions,
                     f"n_partitions={n_partitions} asks for {n_partitions} partitions: {asked_why}")
    # the rule's statistic, once (a split needs at least THREADED_SWEEP_MIN_NNZ stored values in a partition)
    overlap = None if column_nnz is None or nnz < THREADED_SWEEP_MIN_NNZ else feature_overlap(column_nnz, n)
    if not on_cluster:
        if solver == "sdca":
            options, why_solver = _split_sweep(options, why_solver, threads=n_threads, n=n, nnz=nnz, overlap=overlap)
        return Route("in_process", solver, options, 1,
                     f"in-memory data and no client: one partition here ({why_solver})")
    workers = workers or Workers((), ())
    held = "in_memory=False" not in needs_rounds and held_in_memory(size, workers)
    rounds_options, why_rounds = _split_rounds(rounds_solver, rounds_options, why_rounds, workers=workers,
                                               threads=rounds_threads, held=held, n=n, nnz=nnz, overlap=overlap)
    if needs_rounds:
        return Route("rounds", rounds_solver, rounds_options, None,
                     f"{', '.join(needs_rounds)} given, which only rounds honour: {why_rounds} over "
                     f"{max(1, workers.n_workers)} partition(s), one per worker")
    if newton and workers.n_workers > 1 and nnz >= NEWTON_ROUNDS_MIN_NNZ:
        return Route("rounds", "newton", {}, None,
                     f"few features, a smooth loss and {nnz / 1e6:.3g} M stored values (at least "
                     f"{NEWTON_ROUNDS_MIN_NNZ / 1e6:g} M): primal Newton rounds over the {workers.n_workers} "
                     "workers, one partition each (its iterates do not depend on the partitions, and each "
                     "worker's share of a pass costs more than the round trip)")
    if fits_one_worker(size, workers):
        if solver == "sdca":
            options, why_solver = _split_sweep(options, why_solver, n=n, nnz=nnz, overlap=overlap,
                                               threads=workers.nthreads[workers.fit_worker])
        return Route("one_worker", solver, options, 1,
                     f"the data ({_size_text(size)} in memory) fits one worker (within {_room_text(workers)}): "
                     f"the whole fit is one task, no rounds ({why_solver})")
    room = f"more than {_room_text(workers)}" if workers.n_workers else "the cluster has no workers"
    return Route("rounds", rounds_solver, rounds_options, None,
                 f"the data ({_size_text(size)} in memory) does not fit one worker ({room}): {why_rounds} over "
                 f"{max(1, workers.n_workers)} partitions, one per worker")


def choose_multinomial_route(*, on_cluster, n, d, lam, n_classes, squared_row_nnz, warm_start=False,
                             n_partitions=None):
    """The route of a ``solver="auto"`` fit of the multinomial (softmax) problem of ``K > 2`` classes.

    The binary route's shape rule (:func:`choose_route`), with a primal
    quasi-Newton or Newton method in Newton's place: where
    ``d <= NEWTON_MAX_FEATURES`` and there is no warm start, primal rounds
    run on a cluster, and in one process where ``lam n < NEWTON_LAM_N``;
    otherwise multinomial SDCA (``"multinomial"``: serial SDCA in one
    process, CoCoA+ rounds on a cluster or on ``n_partitions > 1``).  The
    primal method is Newton (``"multinomial_newton"``) where a round's
    Hessian sums, ``squared_row_nnz K (K + 1) / 2`` additions, are at most
    ``MULTINOMIAL_NEWTON_MAX_WORK``, else L-BFGS (``"multinomial_lbfgs"``).

    Parameters
    ----------
    on_cluster : bool
        Whether the fit runs on a cluster (a client was given).
    n, d : int
        Rows and features of X (the synthetic intercept feature counted).
    lam : float
        The regularisation of ``P(W)``.
    n_classes : int
        ``K``, the classes.
    squared_row_nnz : int
        ``sum_i nnz_i^2`` over the rows of X (the intercept counted).
    warm_start : bool, default=False
        Whether the fit starts from given duals, which only multinomial
        SDCA takes.
    n_partitions : int or None, default=None
        Partitions the user asked for; a number above 1 in memory means
        multinomial SDCA's CoCoA+ rounds.

    Returns
    -------
    Route
        ``name`` ``"in_process"`` or ``"rounds"``, ``solver``
        ``"multinomial_newton"``, ``"multinomial_lbfgs"`` or
        ``"multinomial"``, and the reason.
    """
    name = "rounds" if on_cluster else "in_process"
    where = "on the cluster" if on_cluster else "in this process"
    if warm_start:
        return Route(name, "multinomial", {}, n_partitions, f"a warm start (dual_init) given: multinomial SDCA {where} "
                     "(the method that starts from duals)")
    if d > NEWTON_MAX_FEATURES:
        return Route(name, "multinomial", {}, n_partitions, f"d = {d} > {NEWTON_MAX_FEATURES} features: "
                     f"multinomial SDCA {where}")
    if not on_cluster and n_partitions is not None and n_partitions > 1:
        return Route(name, "multinomial", {}, n_partitions, f"n_partitions={n_partitions} asks for "
                     f"{n_partitions} partitions: multinomial SDCA's CoCoA+ rounds")
    if not on_cluster and lam_n(lam, n) >= NEWTON_LAM_N:
        return Route(name, "multinomial", {}, n_partitions, f"lam n = {lam_n(lam, n):.3g} >= {NEWTON_LAM_N:g}: "
                     "multinomial SDCA in this process")
    why = (f"few features (d = {d} <= {NEWTON_MAX_FEATURES})" if on_cluster else
           f"lam n = {lam_n(lam, n):.3g} < {NEWTON_LAM_N:g} and few features (d = {d} <= {NEWTON_MAX_FEATURES})")
    work = int(squared_row_nnz) * n_classes * (n_classes + 1) // 2
    most = NEWTON_MAX_VARIABLES
    if work > MULTINOMIAL_NEWTON_MAX_WORK:
        why_not = f"{work:,} Hessian additions a round (> {MULTINOMIAL_NEWTON_MAX_WORK:,})"
    elif n_classes * d > most:
        why_not = f"K d = {n_classes * d} variables (> newton_max_variables = {most})"
    else:
        return Route(name, "multinomial_newton", {}, n_partitions, f"{why}, and {work:,} Hessian additions a round "
                     f"(<= {MULTINOMIAL_NEWTON_MAX_WORK:,}): primal Newton "
                     + ("rounds on the cluster (one pass in most rounds)" if on_cluster else where))
    return Route(name, "multinomial_lbfgs", {}, n_partitions, f"{why}, and {why_not}: primal L-BFGS "
                 + ("rounds on the cluster (one pass a round)" if on_cluster else where))


def _size_text(nbytes):
    """``nbytes`` for a reason: bytes below 1 KiB, else KiB, MiB or GiB to 3 significant digits."""
    nbytes = int(nbytes)
    if nbytes < 1 << 10:
        return f"{nbytes} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20)):
        if nbytes < 1000 * scale:  # 1000 KiB and up reads as 0.977 MiB, not 1e+03 KiB
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 2**30:.3g} GiB"


def _room_text(workers):
    """What :func:`fits_one_worker` compares the data with, in words: ``ONE_WORKER_MEMORY_FRACTION`` of the
    smallest worker's memory limit, or ``ONE_WORKER_UNLIMITED_BYTES`` where that is more than a worker with no
    limit takes."""
    limits = [int(m or 0) for m in workers.memory_limits]
    if min(workers.capacities) == ONE_WORKER_UNLIMITED_BYTES and not all(limits):
        return f"{_size_text(ONE_WORKER_UNLIMITED_BYTES)}, the most one worker takes without a memory limit"
    limits = [m for m in limits if m]
    share = {0.5: "half", 0.25: "a quarter"}.get(ONE_WORKER_MEMORY_FRACTION, f"{ONE_WORKER_MEMORY_FRACTION:.0%}")
    whose = "its" if len(set(limits)) == 1 else "the smallest worker's"
    return f"{share} of {whose} {_size_text(min(limits))} memory limit"


def with_threads(route, n_threads):
    """``route`` with the threads of a fit in this process (``n_jobs``) at the end of its reason."""
    return route._replace(reason=f"{route.reason}; {n_threads} thread{'s' if n_threads > 1 else ''} (n_jobs)")


def explicit_route(solver_name, *, on_cluster, n_partitions):
    """The route of a fit whose solver the user named: where it runs, never what runs."""
    if not on_cluster:
        return Route("in_process", solver_name, {}, n_partitions, f"solver={solver_name!r} given: run as asked, "
                     "in this process")
    return Route("rounds", solver_name, {}, n_partitions, f"solver={solver_name!r} given: run as asked, in rounds "
                 "on the cluster")


def _resolve_solver(solver, *, batch_size, local_iters, on_cluster, loss_name=None, options=None):
    """The method object for ``solver`` (a registered name or a method object).

    On a cluster ``"spdc"`` for a smooth loss means SPDC as CoCoA+'s local
    solver, which reached a relative gap of 1e-4 where SPDC's global
    mini-batch rounds (one Dask round per mini-batch) did not finish an epoch
    in the same time (``benchmarks/RESULTS.md``, SPDC section).  The object
    ``SPDC(...)`` always runs the global rounds.
    """
    if isinstance(solver, tuple(REGISTRY.values())):
        if batch_size is not None or local_iters != 1.0:
            raise ValueError(
                "batch_size and local_iters configure a solver given by name; with a solver "
                f"object ({solver!r}) set them on the object instead."
            )
        return solver
    if not (isinstance(solver, str) and solver in REGISTRY):
        raise ValueError(f"Unknown solver {solver!r}; use one of {sorted(REGISTRY)}.")
    cls = REGISTRY[solver]
    if batch_size is not None and "batch_size" not in cls.__dataclass_fields__:
        takers = sorted(name for name, c in REGISTRY.items() if "batch_size" in c.__dataclass_fields__)
        raise ValueError(
            f"batch_size applies to solver={takers} only, got solver={solver!r} "
            f"with batch_size={batch_size!r}; drop batch_size or change the solver."
        )
    if local_iters != 1.0 and "local_iters" not in cls.__dataclass_fields__:
        takers = sorted(name for name, c in REGISTRY.items() if "local_iters" in c.__dataclass_fields__)
        raise ValueError(
            f"local_iters applies to solver={takers} only (passes over a partition a round), got "
            f"solver={solver!r} with local_iters={local_iters!r}; drop local_iters or change the solver.")
    options = dict(options or {})
    if "batch_size" in cls.__dataclass_fields__:
        # on a cluster a round costs milliseconds: the batch a round is worth (MinibatchSDCA's "round")
        options["batch_size"] = "round" if batch_size is None and on_cluster and solver == "minibatch_sdca" \
            else batch_size
    if "local_iters" in cls.__dataclass_fields__:
        # a route's own passes a round (_serial_solver) stand where the user gave none (local_iters = 1.0)
        options["local_iters"] = options.get("local_iters", 1.0) if local_iters == 1.0 else local_iters
    if on_cluster and "eso" in cls.__dataclass_fields__:
        options["eso"] = "spectral"
    if on_cluster and solver == "spdc" and loss_name != "hinge":
        return REGISTRY["cocoa+"](local_solver="spdc", local_batch_size=batch_size)
    return cls(**options)


def provisional_method(*, rounds, l1_ratio, local_iters, on_cluster, loss_name):
    """The method whose capabilities check a ``solver="auto"`` fit's input before its route is known: the
    rounds' method (``rounds``: a cluster or several partitions) or the serial one, for the L1 share
    ``l1_ratio`` (:func:`_penalised_solvers` above 0); the route picks between them (and Newton or Catalyst,
    which accept the same input) once the data is known."""
    if l1_ratio > 0:
        serial, serial_options, _, many, many_options, _ = _penalised_solvers(l1_ratio)
        solver, options = (many, many_options) if rounds else (serial, serial_options)
    else:
        solver, options = ("cocoa+" if rounds else "sdca"), None
    return route_method(solver, options, local_iters=local_iters, on_cluster=on_cluster, loss_name=loss_name)


def route_method(solver, options, *, local_iters, on_cluster, loss_name):
    """The method object of a route's ``solver`` name and ``options``: :func:`_resolve_solver`'s, and
    :class:`~daskdca.methods.l1.L1SDCA` for ``"l1_sdca"`` (pure L1, which a user asks for with ``l1_ratio=1``
    or an ``L1SDCA`` object, not by name)."""
    if solver == L1SDCA.name:
        return L1SDCA(local_iters=local_iters, **(options or {}))
    return _resolve_solver(solver, batch_size=None, local_iters=local_iters, on_cluster=on_cluster,
                           loss_name=loss_name, options=options)


def _sdca_options(local_iters):
    """The options given that only the dual methods take, which ask ``solver="auto"`` for SDCA or CoCoA+."""
    return ("local_iters",) if local_iters != 1.0 else ()
