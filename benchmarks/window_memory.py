"""Out of core on workers smaller than the store: the blocks a sweep holds against a worker's memory limit.

A generated store (``daskdca.datasets.make_classification``, Zipf-popular features) larger than one worker's
memory limit is fitted out of core (``in_memory`` left to the route: the store takes more than half the workers'
memory) on a 2-worker, 1-thread LocalCluster whose workers have ``--limit-mib`` each and neither pause nor spill,
so a worker over 95% of its limit is killed by its nanny.  Each ``--windows`` entry is a fit: 0 is the default
(``CoCoAPlus()``, its window bounded by :func:`daskdca.routes.window_for_memory`), any other number
``CoCoAPlus(window_blocks=W)`` as given.  Reported per fit: the window its plan ran, seconds, rounds, whether it
certified the gap, the cluster's process memory at its peak over two (Dask's ``MemorySampler``, every 0.2 s: the
mean of the two workers), whether the workers are the ones it started with, or the error it ended with.
This measures; it asserts nothing.

Run: ``python benchmarks/window_memory.py [--windows 0,8,1] [--limit-mib 700] [--work-dir DIR]`` (the store is
written once into ``--work-dir``, 66 M stored values, about 25 s).  Results: benchmarks/RESULTS.md, "Out of core:
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="0,8,1", help="0: the default window; else window_blocks=W")
    parser.add_argument("--limit-mib", type=int, default=700)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="daskdca-window-")
    path = os.path.join(work, "big.zarr")
    if not os.path.exists(path):
        datasets.make_classification(path, 560_000, 1_000_000, nnz_per_row=120, seed=0, zipf_exponent=0.8,
                                     block_rows=35_000)
    store = daskdca.open_store(path)
    print(f"store: {store.n} x {store.d}, {store.nnz} stored values in {store.n_blocks} blocks; workers of "
          f"{args.limit_mib} MiB; logistic, lam 1e-3, 2 partitions, to a certified 1e-6")
    print("| window asked | window run | seconds | rounds | certified | peak MiB a worker | same workers |")
    print("|---|---:|---:|---:|---|---:|---|")
    config = {"distributed.worker.memory.pause": False, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.target": False}
    for window in (int(v) for v in args.windows.split(",")):
        sampler = MemorySampler()
        solver = CoCoAPlus() if window == 0 else CoCoAPlus(window_blocks=window)
        with dask.config.set(config), \
                distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                         memory_limit=args.limit_mib * 2**20, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            before = set(client.scheduler_info()["workers"])
            t0 = time.perf_counter()
            error = model = None
            with sampler.sample("fit", client=client, measure="process", interval=0.2):
                try:
                    model = daskdca.fit(store, loss="logistic", lam=1e-3, solver=solver, n_partitions=2, tol=1e-6,
                                        client=client)
                except daskdca.ClusterLostError as exc:
                    error = exc
            seconds = time.perf_counter() - t0
            same = set(client.scheduler_info()["workers"]) == before
        peak = sampler.to_pandas()["fit"].max() / 2**20 / 2
        asked = "default" if window == 0 else str(window)
        if error is not None:
            print(f"| {asked} | - | {seconds:.1f} | - | {type(error).__name__}: {str(error)[:160]}... | {peak:.0f} "
                  f"| {same} |", flush=True)
        else:
            print(f"| {asked} | {model.plan_.settings.window_blocks} | {seconds:.1f} | {model.n_rounds_} | "
                  f"{model.converged_} | {peak:.0f} | {same} |", flush=True)


if __name__ == "__main__":
    main()
