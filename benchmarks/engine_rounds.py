"""Dask engine: round overhead, out-of-core cost, and a URL-sized fit.

Usage::

    python benchmarks/engine_rounds.py overhead [--rows 400000] [--compression none]
    python benchmarks/engine_rounds.py tasks [--partitions 2 64] [--rounds 60]
    python benchmarks/engine_rounds.py url --store /tmp/url.zarr     # 2 workers capped at 1 GiB

``overhead``: a generated store (Zipf features, 50 nnz per row), a
LocalCluster of 2 workers x 1 thread, CoCoA+ (logistic, lam 1e-4,
local_iters 1, 2 partitions) for 12 rounds, in memory then out of core.
Round overhead = 1 - (longest partition task of the round) / (round wall
time), from the scheduler's task stream; per-epoch time is the median round
time (one round = one pass over every partition).

``tasks``: a tiny generated store (4,096 x 2,000, 64 blocks) where a
round's arithmetic is negligible, CoCoA+ with 2 and 64 partitions for 60
rounds (tol 0): tasks per round (from the task stream; keys of round
tasks carry ``-r<round>``) and the median seconds per round, i.e. the
engine's per-round cost.

``url``: ``daskdca make-data`` output of URL size (2.4 M x 3.2 M, about
280 M nnz) fitted with 2 workers whose memory limit is 1 GiB each, out of
core, 2 partitions, to relative gap 1e-3; peak worker memory from
``MemorySampler`` and seconds per round.  It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time

import numpy as np


def _round_overhead(client, n_rounds):
    stream = client.get_task_stream()
    by_round = {}
    for t in stream:
        key = t["key"] if isinstance(t["key"], str) else str(t["key"])
        if "-p" in key and "-r" in key and "daskdca-" in key:
            parts = key.split("-")
            rnd = next((p for p in parts if p.startswith("r") and p[1:].isdigit()), None)
            if rnd is None:
                continue
            start = min(s["start"] for s in t["startstops"] if s["action"] == "compute")
            stop = max(s["stop"] for s in t["startstops"] if s["action"] == "compute")
            by_round.setdefault(int(rnd[1:]), []).append(stop - start)
    return by_round


def overhead(args):
    from distributed import Client, LocalCluster, get_task_stream

    import daskdca
    from daskdca import datasets

    workdir = tempfile.mkdtemp(prefix="daskdca-bench-")
    store = datasets.make_classification(os.path.join(workdir, "s.zarr"), args.rows, 100_000, nnz_per_row=50,
                                         block_rows=args.rows // 8, seed=1, compression=args.compression)
    print(f"store: {store.n} x {store.d}, {store.nnz:,} nnz, {store.n_blocks} blocks, "
          f"compression {args.compression}")
    results = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        for mode, in_memory in (("in memory", True), ("out of core", False)):
            times = []

            def clock(record, state, times=times):
                times.append(time.perf_counter())
                return False

            with get_task_stream(client) as ts:
                daskdca.fit(store, loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=2, tol=1e-12,
                            max_rounds=12, client=client, in_memory=in_memory, callback=clock)
            round_times = np.diff(times)[1:]  # drop the first (loading, compile)
            tasks = {}
            for t in ts.data:
                key = str(t["key"])
                if "-r" in key and "-p" in key:
                    rnd = int(key.split("-r")[1].split("-")[0])
                    compute = [s for s in t["startstops"] if s["action"] == "compute"]
                    tasks.setdefault(rnd, []).append(sum(s["stop"] - s["start"] for s in compute))
            longest = np.array([max(tasks[r]) for r in sorted(tasks)][2:len(round_times) + 2])
            share = 1 - longest[:len(round_times)] / round_times[:len(longest)]
            results[mode] = (float(np.median(round_times)), float(np.median(share)))
    print("| mode | seconds per round (= per epoch) | round overhead share |")
    print("|---|---:|---:|")
    for mode, (sec, share) in results.items():
        print(f"| {mode} | {sec:.3f} | {share:.0%} |")
    print(f"out of core / in memory per epoch: {results['out of core'][0] / results['in memory'][0]:.2f}x")


def tasks(args):
    """Per-round cost where the arithmetic is negligible: tasks per round and seconds per round."""
    from distributed import Client, LocalCluster, get_task_stream

    import daskdca
    from daskdca import datasets

    workdir = tempfile.mkdtemp(prefix="daskdca-bench-")
    store = datasets.make_classification(os.path.join(workdir, "t.zarr"), 4096, 2000, nnz_per_row=20,
                                         block_rows=64, seed=1)
    print(f"store: {store.n} x {store.d}, {store.nnz:,} nnz, {store.n_blocks} blocks; "
          f"daskdca from {os.path.dirname(daskdca.__file__)}")
    print("| partitions | tasks per round | seconds per round (median) |")
    print("|---:|---:|---:|")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        for K in args.partitions:
            times = []

            def clock(record, state, times=times):
                times.append(time.perf_counter())
                return False

            with get_task_stream(client) as ts:
                daskdca.fit(store, loss="logistic", lam=1e-7, solver="cocoa+", n_partitions=K, tol=0.0,
                            max_rounds=args.rounds, client=client, in_memory=True, callback=clock)
            rounds = [str(t["key"]) for t in ts.data if "-r" in str(t["key"]) and "daskdca-" in str(t["key"])]
            per_round = len(rounds) / args.rounds
            print(f"| {K} | {per_round:.1f} | {np.median(np.diff(times)[5:]):.4f} |", flush=True)


def url(args):
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    import daskdca
    from daskdca.store import open_store

    store = open_store(args.store)
    print(f"store: {store.n:,} x {store.d:,}, {store.nnz:,} nnz, {store.n_blocks} blocks")
    sampler = MemorySampler()
    times = []

    def clock(record, state):
        times.append((time.perf_counter(), record.gap / record.primal))
        print(f"round {record.round}: rel gap {record.gap / record.primal:.3e}", flush=True)
        return False

    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        with sampler.sample("fit", client=client, measure="process", interval=0.5):
            model = daskdca.fit(store, loss="logistic", lam=args.lam, solver="cocoa+", n_partitions=2,
                                tol=1e-3, max_rounds=args.max_rounds, client=client, in_memory=False,
                                callback=clock)
    total = time.perf_counter() - t0
    df = sampler.to_pandas()
    per_worker_peak = df["fit"].max() / 2
    round_seconds = np.diff([t for t, _ in times])
    print(f"converged: {model.converged_}, rounds {model.n_rounds_}, relative gap "
          f"{model.gap_ / model.primal_:.2e}, total {total:.0f} s")
    print(f"seconds per round: median {np.median(round_seconds):.1f} (min {round_seconds.min():.1f}, "
          f"max {round_seconds.max():.1f})")
    print(f"peak process memory, both workers together: {df['fit'].max() / 2**20:.0f} MiB "
          f"(about {per_worker_peak / 2**20:.0f} MiB per worker; limit 1024 MiB each)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--rows", type=int, default=400_000)
    o.add_argument("--compression", default="zstd", help="store compression: zstd, zstd:LEVEL or none")
    t = sub.add_parser("tasks")
    t.add_argument("--partitions", type=int, nargs="+", default=[2, 64])
    t.add_argument("--rounds", type=int, default=60)
    u = sub.add_parser("url")
    u.add_argument("--store", default="/tmp/url.zarr")
    u.add_argument("--lam", type=float, default=1e-5)
    u.add_argument("--max-rounds", type=int, default=60)
    args = parser.parse_args()
    {"overhead": overhead, "tasks": tasks, "url": url}[args.what](args)


if __name__ == "__main__":
    main()
