"""``daskdca.advise``: the route a fit would take and its predicted time, from a short measured probe.

For ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` and the data at
hand, :func:`advise` tells what ``daskdca.fit(..., solver="auto")`` would
run (the route of :mod:`daskdca.routes` and its reason) and how long it
should take, before the fit.  The prediction is measured, not guessed: the
chosen method runs for a short probe (a few passes, a few seconds at most)
in this process on the same rows, which gives the seconds a pass costs and
the rate at which the certified gap falls; the passes still needed follow
from the probe's gap extrapolated two ways, a geometric decay (the linear
rate these methods have on smooth losses, Shalev-Shwartz & Zhang, JMLR
2013, Theorem 1) and a power law (their Theorem 2's ``O(1/t)`` for
Lipschitz losses, with the exponent the probe shows), whose geometric mean
is the prediction and which bracket it.  A route on the cluster
also pays what is measured there: once, the fixed cost of a fit on the
cluster and the time to move the data at the bandwidth measured by sending
16 MiB to a worker; and for a route with rounds, the cost of each round
beyond its arithmetic.  The fixed cost and the round's cost come from a fit
of a few generated sparse rows with the same ``d``, method and partitions,
run as the route runs it and timed after a first run that loads the
compiled kernels on the workers (so the workers are warm afterwards).
A probe that already meets ``tol`` is itself the prediction.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from typing import NamedTuple

import numpy as np

__all__ = ["Advice", "advise"]

# The probe runs at most this many passes and stops after about this many seconds.  Measured on the suite's
# problems (benchmarks/RESULTS.md, "daskdca.advise against the fits it predicts"): with 6 passes the gap's rate
# in the probe's second half was faster than the fit's later rate at small lam n (w8a hinge 1e-5 to 1e-6: 18
# passes predicted, 138 needed); with 30 the predictions were within 1.7x there.
PROBE_EPOCHS = 30
PROBE_SECONDS = 5.0
#: The fewest rounds of the probe: the extrapolation reads its second half (:func:`_passes_to`).
PROBE_MIN_ROUNDS = 4
# lam n of the generated fit that measures a round's cost on the cluster: small, so that its rounds do not
# converge before their budget (at lam n = 32 a hinge fit of 200 rows converged in its first round)
ROUNDS_PROBE_LAM_N = 1e-3


class Advice(NamedTuple):
    """What :func:`advise` found.

    A named tuple: each parameter is also the field of that name
    (``advice.route``); :func:`advise` builds it, and ``print(advice)``
    gives the plan in three lines.

    Parameters
    ----------
    route : daskdca.routes.Route
        The route and method a ``solver="auto"`` fit takes, and why.
    predicted_seconds : float
        The predicted time of that fit to ``tol`` (inf when the probe saw the gap stop falling).
    predicted_passes : float
        Passes over the data (rounds for a route with rounds) it predicts,
        counted as the fit's history counts them (``HistoryRecord.epochs``:
        coordinate steps over ``n``).
    seconds_per_pass : float
        Measured by the probe.
    round_latency : float
        Seconds a round on the cluster adds to its arithmetic (measured
        there, module docstring), 0 without rounds.
    probe : list of HistoryRecord
        The probe's records (its own fit's history).
    cluster_seconds : float, default=0.0
        Seconds the cluster adds once (0 in process): a fit's fixed cost
        there plus moving the data, both measured (module docstring).
    seconds_range : tuple of float, default=()
        ``(low, high)``: the predicted time with the probe's gap extrapolated
        as a geometric decay and as a power law (the prediction is their
        geometric mean); equal when the probe met ``tol``.
    """

    route: object
    predicted_seconds: float
    predicted_passes: float
    seconds_per_pass: float
    round_latency: float
    probe: list
    cluster_seconds: float = 0.0
    seconds_range: tuple = ()

    def __str__(self):
        r = self.route
        return (f"route: {r.name}, solver {r.solver}{'' if not r.options else f' {r.options}'}\n"
                f"why: {r.reason}\n"
                f"predicted: {self.predicted_seconds:.3g} s{self._range_text()} ({self.predicted_passes:.0f} "
                f"{'rounds' if r.name == 'rounds' else 'passes'} at {self.seconds_per_pass:.3g} s a pass"
                f"{f' + {self.round_latency:.3g} s a round' if self.round_latency else ''}"
                f"{f' + {self.cluster_seconds:.3g} s once on the cluster' if self.cluster_seconds else ''}; "
                f"measured by a probe of {self.probe[-1].round} rounds in this process)")

    def _range_text(self):
        if len(self.seconds_range) != 2 or self.seconds_range[0] == self.seconds_range[1]:
            return ""
        return f" (between {self.seconds_range[0]:.3g} and {self.seconds_range[1]:.3g})"


def _round_latency(client, repeats=5):
    """Median seconds of a bare Dask round trip: one tiny task per worker and a reduce, gathered."""
    workers = sorted(client.scheduler_info().get("workers", {}))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        parts = [client.submit(np.zeros, 8, workers=[w], pure=False) for w in workers]
        total = client.submit(lambda *xs: float(sum(x.sum() for x in xs)), *parts, pure=False)
        total.result()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _bandwidth(client, nbytes=16 << 20):
    """Bytes a second sent from this process to one worker: ``nbytes`` scattered and counted there, less a
    bare round trip's time."""
    worker = sorted(client.scheduler_info().get("workers", {}))[0]
    payload = np.ones(nbytes // 8)
    start = time.perf_counter()
    future = client.scatter(payload, workers=[worker], hash=False)
    client.submit(len, future, workers=[worker], pure=False).result()
    seconds = time.perf_counter() - start
    client.cancel(future)
    return nbytes / max(seconds - _round_latency(client, repeats=3), 1e-4)


def _cluster_costs(active, *, route, method, parts, d, loss_obj, lam_n, random_state, rows=200, row_nnz=8,
                   rounds=8):
    """``(once, per_round)``: the seconds the cluster adds to a fit once and for each round, measured there.

    A fit of ``rows`` generated sparse rows (at least 4 a partition,
    ``row_nnz`` values each) with the same ``d``, method and partitions, run
    as the route runs it and timed on its second run (the first loads the
    compiled kernels on the workers).  Without rounds it has the fit's
    ``lam n``, which picks the route; with rounds, forced by a callback, it
    runs ``rounds`` rounds at ``ROUNDS_PROBE_LAM_N``.  Its rows' arithmetic
    is negligible, so the seconds between its gap records per round (the
    median over its rounds) are what a round of the engine costs at this
    ``d`` beyond the arithmetic, and the rest of its time is the fit's fixed
    cost.  Its rows are held in the workers' memory: the reads of a fit out
    of core are not in the prediction.
    """
    import scipy.sparse as sp

    from daskdca.api import fit

    rows = max(rows, 4 * parts)  # a partition has rows
    rng = np.random.default_rng(0)
    k = min(d, row_nnz)
    columns = np.concatenate([rng.choice(d, size=k, replace=False) for _ in range(rows)])
    X = sp.csr_matrix((rng.standard_normal(rows * k) / math.sqrt(k), columns, np.arange(0, rows * k + 1, k)),
                      shape=(rows, d))
    y = np.where(rng.random(rows) < 0.5, 1.0, -1.0)
    if loss_obj.name in ("squared", "epsilon_insensitive", "squared_epsilon_insensitive", "huber"):
        y = rng.standard_normal(rows)
    has_rounds = route.name == "rounds"
    # the rounds run to their budget at a small lam n (a round's cost does not depend on lam); without rounds,
    # lam n is the fit's, which picks its route
    options = (dict(solver=method, n_partitions=parts, callback=lambda record, state: None, max_rounds=rounds,
                    tol=1e-12, lam=ROUNDS_PROBE_LAM_N / rows) if has_rounds
               else dict(max_epochs=5, tol=1e-3, lam=lam_n / rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            start = time.perf_counter()
            model = fit(X, y, loss=loss_obj, client=active, random_state=random_state, **options)
            seconds = time.perf_counter() - start
    if not has_rounds:
        return seconds, 0.0
    records = model.history_
    # the median over consecutive gap records (a pause of the process or of the cluster falls in one of them)
    per_round = float(np.median([(b.seconds - a.seconds) / (b.round - a.round)
                                 for a, b in zip(records, records[1:]) if b.round > a.round]
                                or [records[-1].seconds / max(records[-1].round, 1)]))
    return max(seconds - records[-1].round * per_round, 0.0), per_round


def _passes_to(history, tol, passes_done):
    """``(low, high)`` passes to reach relative gap ``tol``: the probe's second half (the first passes are often
    faster or slower) extrapolated as a geometric decay, ``gap ~ exp(-c t)`` (the linear rate of smooth losses,
    Shalev-Shwartz & Zhang, JMLR 2013, Theorem 1), and as a power law, ``gap ~ t^-p`` (their Theorem 2 bounds
    the gap of Lipschitz losses by ``O(1/t)``; a fitted ``p`` covers the probe's own decay).  On a geometric
    decay the log-gap's slope against ``log t`` steepens as ``t`` grows, so the power law predicts too many
    passes; where the gap falls more slowly later (a stall, the sublinear phase of the hinge loss) the
    geometric decay predicts too few.  Both inf when the gap stopped falling in the probe.

    A record of a one-vs-rest fit holds one gap per problem; its relative gap is the largest of them, that of
    the problem the fit waits for (it stops when every problem meets ``tol``)."""
    rel = [float(np.max(np.abs(np.asarray(r.gap, dtype=np.float64))
                        / np.maximum(np.abs(np.asarray(r.primal, dtype=np.float64)), 1e-300))) for r in history]
    epochs = [r.epochs for r in history]
    if rel[-1] <= tol:
        return passes_done, passes_done
    half = max(0, len(rel) // 2 - 1)
    span = epochs[-1] - epochs[half]
    if span <= 0 or epochs[half] <= 0 or rel[half] <= 0 or rel[-1] <= 0 or rel[-1] >= rel[half]:
        return math.inf, math.inf
    rate = math.log(rel[-1] / rel[half]) / span  # < 0: log of the gap per pass
    power = math.log(rel[half] / rel[-1]) / math.log(epochs[-1] / epochs[half])  # > 0: the gap's exponent
    geometric = passes_done + math.log(tol / rel[-1]) / rate
    power_law = passes_done * (rel[-1] / tol) ** (1.0 / power)
    return min(geometric, power_law), max(geometric, power_law)


def _check_tol(tol, name="tol", budget="daskdca.fit to its max_epochs budget", example="tol=1e-6"):
    """``tol`` as :func:`daskdca.fit` checks it (a finite number >= 0, with its message), then > 0.

    A fit takes ``tol = 0`` and runs to its budget; advise predicts the
    time to a relative gap of ``tol``, which no extrapolation of the probe
    reaches at 0, so it refuses 0 and says why.

    Parameters
    ----------
    tol : float
        The relative duality gap to advise for.
    name : str, default="tol"
        The name of ``tol`` in the messages (the command line's ``--tol``).
    budget : str, default="daskdca.fit to its max_epochs budget"
        What a fit with ``tol = 0`` runs to, in the message.
    example : str, default="tol=1e-6"
        The fix the message proposes.

    Returns
    -------
    float
        ``tol``.

    Raises
    ------
    ValueError
        ``tol`` is not a finite number > 0.
    """
    from daskdca.validation import _check_real

    tol = _check_real("tol", tol, low=0.0, low_inclusive=True, hint="use e.g. tol=1e-6 (relative duality gap)")
    if tol == 0:
        raise ValueError(f"{name} must be > 0 for advise, got {tol!r}: a tol of 0 runs {budget} rather than to a "
                         f"gap, and advise predicts the time to reach a relative gap of {name}, which no "
                         f"extrapolation of its probe reaches at 0. Give the gap the fit needs, e.g. {example}.")
    return tol


def advise(X, y=None, *, loss="hinge", lam=1e-4, tol=1e-6, client=None, n_partitions=None, checkpoint=None,
           callback=None, in_memory=None, sample_weight=None, random_state=0, n_jobs=None):
    """The route and predicted time of ``daskdca.fit(X, y, solver="auto", ...)``, before the fit.

    The objective is ``P(w) = 1/n sum_i s_i phi_i(x_i.w) + lam/2 ||w||^2``.
    A short probe of the chosen method runs in this process on all the
    rows (at most ``PROBE_EPOCHS`` passes or about ``PROBE_SECONDS``); a
    store is read into this process for it, so advise on stores that fit in
    memory.

    Parameters
    ----------
    X : ndarray, scipy sparse matrix, dask array, or store path/URL/handle
        As :func:`daskdca.fit`; a store or a dask array is read (computed)
        into this process for the probe.
    y : array-like, dask array, or None, default=None
        As :func:`daskdca.fit`; None for a store.  With more than two
        classes (one-vs-rest) the prediction follows the problem with the
        largest relative gap, which the fit waits for.
    loss : str or Loss, default="hinge"
        As :func:`daskdca.fit`.
    lam : float, default=1e-4
        As :func:`daskdca.fit`.
    tol : float, default=1e-6
        As :func:`daskdca.fit`, but > 0: a fit with ``tol=0`` runs to its
        budget, and no time to a zero gap can be predicted.
    client : distributed.Client, str or None, default=None
        As :func:`daskdca.fit`; with a client (or a dask array or a store),
        the route is chosen for the cluster and its round trip and fixed
        cost are measured on it.
    n_partitions : int or None, default=None
        As :func:`daskdca.fit`.
    checkpoint : str or None, default=None
        Only whether it is given matters: a checkpoint needs rounds
        (:mod:`daskdca.routes`).
    callback : callable or None, default=None
        Only whether it is given matters: a callback needs rounds.
    in_memory : bool or None, default=None
        As :func:`daskdca.fit`: False (out of core) needs rounds on a
        cluster, as a checkpoint does; it changes nothing without one.
    sample_weight : array-like of shape (n_samples,) or None, default=None
        As :func:`daskdca.fit`.
    random_state : int or None, default=0
        As :func:`daskdca.fit`; the seed of the probe's fits.
    n_jobs : int or None, default=None
        As :func:`daskdca.fit`: the threads of a fit in this process, with
        which the probe runs.  On a cluster it must be None; there the
        probe of the one-worker route takes that worker's threads (as its
        fit does), and that of the rounds one thread per partition.

    Returns
    -------
    Advice
        The route, the predicted time and the probe's records;
        ``print(advice)`` gives the plan in three lines.

    See Also
    --------
    daskdca.fit : The fit this advice is about.
    """
    from daskdca.api import _is_cluster_input, fit
    from daskdca.losses import get_loss
    from daskdca.problem import column_nnz
    from daskdca.routes import Workers, choose_route, data_bytes, with_threads
    from daskdca.validation import _check_n_jobs, _check_real, _check_X, _check_y
    from daskdca.store import CSRStore, open_store

    loss_obj = get_loss(loss)
    lam = _check_real("lam", lam, low=0.0, low_inclusive=False, hint="LIBLINEAR's C corresponds to lam = 1/(C n)")
    tol = _check_tol(tol)
    on_cluster = client is not None or _is_cluster_input(X)
    n_threads = _check_n_jobs(n_jobs, on_cluster)
    if isinstance(X, (CSRStore, str, os.PathLike)):
        store = X if isinstance(X, CSRStore) else open_store(X)
        X, y = store.read_all()
    elif hasattr(X, "compute"):
        X = X.compute()
        y = np.asarray(y.compute() if hasattr(y, "compute") else y)
    X = _check_X(X)
    n, d = X.shape
    _check_y(y, n, loss_obj)  # the fit's own label checks, before the probe
    if in_memory is not None and not isinstance(in_memory, bool):
        raise ValueError(f"in_memory must be True, False or None, got {in_memory!r}.")
    # what only rounds honour, as daskdca.fit decides it
    needs_rounds = [name for name, given in (("checkpoint", checkpoint is not None), ("callback", callback is not None),
                                             ("in_memory=False", in_memory is False)) if given]
    from daskdca.methods import REGISTRY

    latency = once = 0.0
    if on_cluster:
        from daskdca import engine

        size = data_bytes(n, X.nnz, X.dtype.itemsize, X.indices.dtype.itemsize)
        with engine.cluster_client(client) as active:
            workers = Workers(*engine.worker_resources(active))
            route = choose_route(on_cluster=True, n=n, nnz=X.nnz, lam=lam, d=d, loss_name=loss_obj.name,
                                 workers=workers, needs_rounds=needs_rounds, n_partitions=n_partitions, size=size,
                                 column_nnz=column_nnz(X))
            method = REGISTRY[route.solver](**route.options)
            parts = 1
            if route.name == "rounds":
                # the rounds' bits in this process: one partition per worker (or as asked)
                parts = route.n_partitions or max(1, workers.n_workers)
                route = route._replace(n_partitions=parts)  # as the fit records it
            fixed, latency = _cluster_costs(active, route=route, method=method, parts=parts, d=d, loss_obj=loss_obj,
                                            lam_n=lam * n, random_state=random_state)
            once = fixed + size / _bandwidth(active)
        # the one worker's threads; a pass of one thread per partition, divided by the partitions below
        n_threads = workers.nthreads[workers.fit_worker] if route.name == "one_worker" else 1
    else:
        route = with_threads(choose_route(on_cluster=False, n=n, nnz=X.nnz, lam=lam, d=d, loss_name=loss_obj.name,
                                          n_partitions=n_partitions, n_threads=n_threads, column_nnz=column_nnz(X)),
                             n_threads)
        method = REGISTRY[route.solver](**route.options)
        parts = route.n_partitions or 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the probe stops on its budget, not on tol
        # a one-round probe first (a pass, or a round's passes): it tells how many passes fit in the probe's time
        first = fit(X, y, loss=loss_obj, lam=lam, tol=tol, solver=method, n_partitions=parts, max_epochs=1,
                    sample_weight=sample_weight, random_state=random_state, n_jobs=n_threads)
        per_pass = max(first.history_[-1].seconds / max(first.history_[-1].epochs, 1.0), 1e-6)
        # at least PROBE_MIN_ROUNDS rounds, which a round of several passes (routes.round_passes) needs to extrapolate
        probe_passes = int(max(2, min(PROBE_EPOCHS, PROBE_SECONDS / per_pass),
                               math.ceil(PROBE_MIN_ROUNDS / first.plan_.rounds_per_epoch)))
        probe = first if first.converged_ else fit(
            X, y, loss=loss_obj, lam=lam, tol=tol, solver=method, n_partitions=parts, max_epochs=probe_passes,
            sample_weight=sample_weight, random_state=random_state, n_jobs=n_threads)
    rounds_per_pass = probe.plan_.rounds_per_epoch
    # passes as the driver counts them (coordinate steps over n), the unit _passes_to extrapolates in: serial
    # SDCA's rounds may end early with shrinking (methods/sdca.py), so its rounds over rounds_per_pass can be more
    passes_done = probe.history_[-1].epochs
    per_pass = probe.history_[-1].seconds / max(passes_done, 1e-9)
    low, high = (passes_done, passes_done) if probe.converged_ else _passes_to(probe.history_, tol, passes_done)
    # the two extrapolations bracket the passes needed on the suite's problems (benchmarks/RESULTS.md,
    # "daskdca.advise: two extrapolations of the probe"); the prediction is their geometric mean
    passes = math.sqrt(low * high)

    def seconds(p):
        if route.name == "rounds":  # a round's partitions run side by side on the workers, and it pays its trip
            return p * per_pass / parts + p * rounds_per_pass * latency + once
        return p * per_pass + once

    scale = rounds_per_pass if route.name == "rounds" else 1
    return Advice(route, float(seconds(passes)), float(passes * scale), float(per_pass),
                  float(latency if route.name == "rounds" else 0.0), list(probe.history_), float(once),
                  (float(seconds(low)), float(seconds(high))))
