"""``daskdca.advise``: the route a fit would take and its predicted time, from a short measured probe.

For ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` and the data at
hand, :func:`advise` tells what ``daskdca.fit(..., solver="auto")`` would
run (the route of :mod:`daskdca.routes` and its reason) and how long it
should take, before the fit.  The prediction is measured, not guessed: the
chosen method runs for a short probe (a few passes, a few seconds at most)
in this process on the same rows, which gives the seconds a pass costs and
the rate at which the certified gap falls; the passes still needed follow
from that rate (the linear rate these methods have on smooth losses,
Shalev-Shwartz & Zhang, JMLR 2013, Theorem 1), and a route with rounds adds
the measured latency of a Dask round for each.  A probe that already meets
``tol`` is itself the prediction.  A route on the cluster also pays, once,
what is measured there: the fixed cost of a fit on the cluster (a fit of a
few generated rows with the same ``lam n``, timed after a first one that
loads the compiled kernels on the workers, so the workers are warm
afterwards) and the time to move the data at the bandwidth measured by
sending 16 MiB to a worker.
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
        Passes over the data (rounds for a route with rounds) it predicts.
    seconds_per_pass : float
        Measured by the probe.
    round_latency : float
        Seconds a Dask round adds (measured on the client), 0 without rounds.
    probe : list of HistoryRecord
        The probe's records (its own fit's history).
    cluster_seconds : float, default=0.0
        Seconds the cluster adds once (0 in process): a fit's fixed cost there plus moving the data, both
        measured (module docstring).
    """

    route: object
    predicted_seconds: float
    predicted_passes: float
    seconds_per_pass: float
    round_latency: float
    probe: list
    cluster_seconds: float = 0.0

    def __str__(self):
        r = self.route
        return (f"route: {r.name}, solver {r.solver}{'' if not r.options else f' {r.options}'}\n"
                f"why: {r.reason}\n"
                f"predicted: {self.predicted_seconds:.3g} s ({self.predicted_passes:.0f} "
                f"{'rounds' if r.name == 'rounds' else 'passes'} at {self.seconds_per_pass:.3g} s a pass"
                f"{f' + {self.round_latency:.3g} s a round' if self.round_latency else ''}"
                f"{f' + {self.cluster_seconds:.3g} s once on the cluster' if self.cluster_seconds else ''}; "
                f"measured by a probe of {self.probe[-1].round} rounds in this process)")


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


def _fixed_cluster_seconds(active, *, d, loss_obj, lam_n, random_state, rows=200):
    """Seconds of a fit of ``rows`` generated rows on the cluster with the same ``d`` and ``lam n`` (so the
    same route and method), timed on its second run: the first loads the compiled kernels on the workers."""
    from daskdca.api import fit

    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, d)) / math.sqrt(d)
    y = np.where(np.arange(rows) % 2 == 0, 1.0, -1.0)
    if loss_obj.name in ("squared", "epsilon_insensitive", "squared_epsilon_insensitive", "huber"):
        y = rng.standard_normal(rows)
    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            start = time.perf_counter()
            fit(X, y, loss=loss_obj, lam=lam_n / rows, tol=1e-3, client=active, max_epochs=5,
                random_state=random_state)
            times.append(time.perf_counter() - start)
    return times[-1]


def _passes_to(history, tol, passes_done):
    """Passes to reach relative gap ``tol``, extrapolating the probe's last geometric rate."""
    rel = [abs(r.gap) / max(abs(r.primal), 1e-300) for r in history]
    epochs = [r.epochs for r in history]
    if rel[-1] <= tol:
        return passes_done
    # the rate of the second half of the probe (the first passes are often faster or slower)
    half = max(0, len(rel) // 2 - 1)
    span = epochs[-1] - epochs[half]
    if span <= 0 or rel[half] <= 0 or rel[-1] <= 0 or rel[-1] >= rel[half]:
        return math.inf
    rate = math.log(rel[-1] / rel[half]) / span  # < 0: log of the gap per pass
    return passes_done + math.log(tol / rel[-1]) / rate


def advise(X, y=None, *, loss="hinge", lam=1e-4, tol=1e-6, client=None, n_partitions=None, checkpoint=None,
           callback=None, in_memory=None, sample_weight=None, random_state=0):
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
        As :func:`daskdca.fit`; None for a store.
    loss : str or Loss, default="hinge"
        As :func:`daskdca.fit`.
    lam : float, default=1e-4
        As :func:`daskdca.fit`.
    tol : float, default=1e-6
        As :func:`daskdca.fit`.
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
    from daskdca.routes import Workers, choose_route, data_bytes
    from daskdca.validation import _check_real, _check_X, _check_y
    from daskdca.store import CSRStore, open_store

    loss_obj = get_loss(loss)
    lam = _check_real("lam", lam, low=0.0, low_inclusive=False, hint="LIBLINEAR's C corresponds to lam = 1/(C n)")
    tol = _check_real("tol", tol, low=0.0, low_inclusive=False, hint="use e.g. tol=1e-6 (relative duality gap)")
    on_cluster = client is not None or _is_cluster_input(X)
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
    workers = None
    latency = once = 0.0
    if on_cluster:
        from daskdca import engine

        size = data_bytes(n, X.nnz, X.dtype.itemsize, X.indices.dtype.itemsize)
        with engine.cluster_client(client) as active:
            workers = Workers(*engine.worker_resources(active))
            route = choose_route(on_cluster=True, n=n, nnz=X.nnz, lam=lam, d=d, loss_name=loss_obj.name,
                                 workers=workers, needs_rounds=needs_rounds, n_partitions=n_partitions, size=size)
            if route.name == "rounds":
                latency = _round_latency(active)
            once = (_fixed_cluster_seconds(active, d=d, loss_obj=loss_obj, lam_n=lam * n, random_state=random_state)
                    + size / _bandwidth(active))
    else:
        route = choose_route(on_cluster=False, n=n, nnz=X.nnz, lam=lam, d=d, loss_name=loss_obj.name,
                             n_partitions=n_partitions)
    from daskdca.methods import REGISTRY

    method = REGISTRY[route.solver](**route.options)
    if route.name == "rounds":
        # the rounds' bits in this process: one partition per worker (or as asked)
        parts = route.n_partitions or max(1, workers.n_workers if workers else 1)
        route = route._replace(n_partitions=parts)  # as the fit records it
    else:
        parts = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the probe stops on its budget, not on tol
        # a one-pass probe first: it tells how many passes fit in the probe's time
        first = fit(X, y, loss=loss_obj, lam=lam, tol=tol, solver=method, n_partitions=parts, max_epochs=1,
                    sample_weight=sample_weight, random_state=random_state)
        per_pass = max(first.history_[-1].seconds, 1e-6)
        probe_passes = int(max(2, min(PROBE_EPOCHS, PROBE_SECONDS / per_pass)))
        probe = first if first.converged_ else fit(
            X, y, loss=loss_obj, lam=lam, tol=tol, solver=method, n_partitions=parts, max_epochs=probe_passes,
            sample_weight=sample_weight, random_state=random_state)
    rounds_per_pass = probe.plan_.rounds_per_epoch
    passes_done = probe.n_rounds_ / rounds_per_pass
    per_pass = probe.history_[-1].seconds / max(passes_done, 1e-9)
    passes = passes_done if probe.converged_ else _passes_to(probe.history_, tol, passes_done)
    if route.name == "rounds":
        # the partitions of a round run side by side on the workers; each round pays the Dask round trip
        rounds = passes * rounds_per_pass
        return Advice(route, float(passes * per_pass / parts + rounds * latency + once), float(rounds),
                      float(per_pass), float(latency), list(probe.history_), float(once))
    return Advice(route, float(passes * per_pass + once), float(passes), float(per_pass), 0.0, list(probe.history_),
                  float(once))
