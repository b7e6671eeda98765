"""Out of core on workers smaller than the store: the blocks a sweep holds against a worker's memory limit.

A generated store (``daskdca.datasets.make_classification``, Zipf-popular features) larger than one worker's
memory limit is fitted on a 2-worker, 1-thread LocalCluster whose workers have ``--limit-mib`` each and neither
pause nor spill, so a worker over 95% of its limit is killed by its nanny; ``in_memory`` is left to the route (out of core where a
worker's share of the data takes more than a quarter of its limit, :func:`daskdca.routes.held_in_memory`) or
given.  Each ``--windows`` entry (for each ``--limit-mib``) is a fit: 0 is the default
(``CoCoAPlus()``, its window bounded by :func:`daskdca.routes.window_for_memory`), any other number
``CoCoAPlus(window_blocks=W)`` as given.  Reported per fit: the window its plan ran, seconds, rounds, whether it
certified the gap, the cluster's process memory at its peak over two (Dask's ``MemorySampler``, every 0.2 s: the
mean of the two workers), whether the workers are the ones it started with, or the error it ended with.
This measures; it asserts nothing.

Run: ``python benchmarks/window_memory.py [--windows 0,8,1] [--limit-mib 700,900] [--in-memory auto]
[--work-dir DIR]`` (the store is written once into ``--work-dir``, 66 M stored values, about 25 s).  Results: benchmarks/RESULTS.md, "Out of core:
the window within a worker's memory".
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import dask
import distributed
from distributed.diagnostics import MemorySampler

import daskdca
from daskdca import CoCoAPlus, datasets
from daskdca.engine import worker_resources
from daskdca.routes import Workers, data_bytes, held_in_memory


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="0,8,1", help="0: the default window; else window_blocks=W")
    parser.add_argument("--limit-mib", default="700", help="the workers' memory limits, MiB; a list runs each")
    parser.add_argument("--in-memory", choices=("auto", "true", "false"), default="auto",
                        help="in_memory= of the fits: auto (None, the route's choice), true or false")
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="daskdca-window-")
    path = os.path.join(work, "big.zarr")
    if not os.path.exists(path):
        datasets.make_classification(path, 560_000, 1_000_000, nnz_per_row=120, seed=0, zipf_exponent=0.8,
                                     block_rows=35_000)
    store = daskdca.open_store(path)
    in_memory = {"auto": None, "true": True, "false": False}[args.in_memory]
    print(f"store: {store.n} x {store.d}, {store.nnz} stored values in {store.n_blocks} blocks; "
          f"in_memory={in_memory}; logistic, lam 1e-3, 2 partitions, to a certified 1e-6")
    print("| workers' limit MiB | window asked | held in memory | window run | seconds | rounds | certified | "
          "peak MiB a worker | same workers |")
    print("|---:|---|---|---:|---:|---:|---|---:|---|")
    config = {"distributed.worker.memory.pause": False, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.target": False}
    cases = [(int(limit), int(window)) for limit in args.limit_mib.split(",") for window in args.windows.split(",")]
    for limit_mib, window in cases:
        sampler = MemorySampler()
        solver = CoCoAPlus() if window == 0 else CoCoAPlus(window_blocks=window)
        with dask.config.set(config), \
                distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                         memory_limit=limit_mib * 2**20, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            before = set(client.scheduler_info()["workers"])
            # the engine's own rule for in_memory=None (daskdca.engine.fit_on_cluster)
            size = data_bytes(store.n, store.nnz, store.group["data"].dtype.itemsize,
                              store.group["indices"].dtype.itemsize)
            held = held_in_memory(size, Workers(*worker_resources(client))) if in_memory is None else in_memory
            t0 = time.perf_counter()
            error = model = None
            with sampler.sample("fit", client=client, measure="process", interval=0.2):
                try:
                    model = daskdca.fit(store, loss="logistic", lam=1e-3, solver=solver, n_partitions=2, tol=1e-6,
                                        client=client, in_memory=in_memory)
                except daskdca.ClusterLostError as exc:
                    error = exc
            seconds = time.perf_counter() - t0
            same = set(client.scheduler_info()["workers"]) == before
        peak = sampler.to_pandas()["fit"].max() / 2**20 / 2
        asked = "default" if window == 0 else str(window)
        if error is not None:
            print(f"| {limit_mib} | {asked} | {held} | - | {seconds:.1f} | - | {type(error).__name__}: "
                  f"{str(error)[:160]}... | {peak:.0f} | {same} |", flush=True)
        else:
            window_run = "-" if held else model.plan_.settings.window_blocks
            print(f"| {limit_mib} | {asked} | {held} | {window_run} | {seconds:.1f} | {model.n_rounds_} | "
                  f"{model.converged_} | {peak:.0f} | {same} |", flush=True)


if __name__ == "__main__":
    main()
