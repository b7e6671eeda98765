"""Dask engine: round overhead, out-of-core cost, and a URL-sized fit.

Usage::

    python benchmarks/engine_rounds.py overhead [--rows 400000] [--compression none]
    python benchmarks/engine_rounds.py tasks [--partitions 2 64] [--rounds 60]
    python benchmarks/engine_rounds.py url --store /tmp/url.zarr     # 2 workers capped at 1 GiB
    python benchmarks/engine_rounds.py cost [--workers 1 2 4] [--project 16 64]

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
``MemorySampler`` and seconds per round.

``cost``: the cost model, ``T_round(K) = T_comp / K + L0 + L1 K
+ c d log2(K)``: ``T_comp`` is one serial epoch in process, ``L0 + L1 K``
is fitted to the round time on a tiny store (arithmetic negligible) at 1, 2
and 4 worker processes, and ``c`` to what the latency and the local steps
leave of the round time on the data.  The rounds to the target gap at every
K come from the in-process driver (the same bits as on a cluster), so the
projection to 16 and 64 nodes is ``rounds(K) x T_round(K)``, against serial
SDCA's epochs x ``T_comp``.  It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import tempfile
import time

import numpy as np


def _is_local_task(key):
    """A round's local task: ``...-p{k}`` (one per partition, engines before 2026-11-26) or ``...-g{g}`` (one per
    worker's group of partitions)."""
    return re.search(r"^daskdca-round-.*-r\d+-.*-[pg]\d+$", key) is not None


def _round_overhead(client, n_rounds):
    stream = client.get_task_stream()
    by_round = {}
    for t in stream:
        key = t["key"] if isinstance(t["key"], str) else str(t["key"])
        if _is_local_task(key):
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
                if _is_local_task(key):
                    rnd = int(re.search(r"-r(\d+)-", key).group(1))
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
                                tol=args.tol, max_rounds=args.max_rounds, client=client, in_memory=False,
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


def _cluster_round_seconds(store, n_workers, n_rounds, lam):
    """Median seconds per CoCoA+ round on ``n_workers`` worker processes, one partition per worker, in memory."""
    from distributed import Client, LocalCluster

    import daskdca

    times = []

    def clock(record, state):
        times.append(time.perf_counter())
        return False

    import warnings

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tol 0: a fixed number of rounds
        daskdca.fit(store, loss="logistic", lam=lam, solver="cocoa+", n_partitions=n_workers, tol=0.0,
                    max_rounds=n_rounds, client=client, in_memory=True, callback=clock)
    return float(np.median(np.diff(times)[2:]))  # the first rounds load the partitions and compile


def _in_process_rounds(X, y, K, lam, tol, max_rounds):
    """Rounds and seconds per round of in-process CoCoA+ with K partitions (K = 1: serial SDCA epochs)."""
    import warnings

    import daskdca

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = daskdca.fit(X, y, loss="logistic", lam=lam, solver="sdca" if K == 1 else "cocoa+",
                            n_partitions=K, tol=tol, max_rounds=max_rounds, random_state=0)
    # the gap is recorded every round: the median step between records is one round (setup and compile excluded)
    seconds = np.diff([record.seconds for record in model.history_])
    return model.n_rounds_ if model.converged_ else None, float(np.median(seconds[1:] if seconds.size > 2 else seconds))


def cost(args):
    """Fit ``T_round(K) = T_comp / K + L0 + L1 K + c d log2(K)`` to measurements here; project rounds x T_round."""
    from daskdca import datasets

    workdir = tempfile.mkdtemp(prefix="daskdca-bench-")
    big = datasets.make_classification(os.path.join(workdir, "big.zarr"), args.rows, args.features,
                                       nnz_per_row=args.nnz_per_row, block_rows=args.rows // 4, seed=1)
    tiny = datasets.make_classification(os.path.join(workdir, "tiny.zarr"), 4096, 2000, nnz_per_row=20,
                                        block_rows=1024, seed=1)
    X, y = big.read_all()
    print(f"data: {big.n:,} x {big.d:,}, {big.nnz:,} nnz (4 blocks); logistic, lam {args.lam:g}; "
          f"{os.cpu_count()} cores here")
    # rounds to the target gap: exact, from the in-process driver (the same bits as on a cluster)
    rounds, comp = {}, {}
    for K in sorted(set([1, *args.workers, *args.project])):
        rounds[K], comp[K] = _in_process_rounds(X, y, K, args.lam, args.tol, args.max_rounds)
        shown = rounds[K] if rounds[K] is not None else f"> {args.max_rounds}"
        print(f"in process, K = {K}: rounds to relative gap {args.tol:g}: {shown}; {comp[K]:.3f} s per round "
              "(all partitions, one after another)", flush=True)
    cores = os.cpu_count() or 1
    rows = []
    for W in args.workers:
        t_big = _cluster_round_seconds(big, W, args.rounds, args.lam)
        t_tiny = _cluster_round_seconds(tiny, W, args.rounds, args.lam)
        compute = comp[W] / min(W, cores)  # partitions run in parallel on at most `cores` cores
        rows.append((W, t_big, t_tiny, compute))
        print(f"cluster, {W} workers: {t_big:.3f} s per round on the data ({compute:.3f} s of it the local "
              f"steps), {t_tiny:.4f} s per round on a 4,096 x 2,000 store", flush=True)
    W = np.array([r[0] for r in rows], dtype=float)
    tiny_t = np.array([r[2] for r in rows])
    L1, L0 = np.polyfit(W, tiny_t, 1)  # the per-round latency: L0 + L1 K
    moved = np.array([r[1] - r[3] - (L0 + L1 * r[0]) for r in rows])  # what the latency does not explain
    levels = np.log2(W)
    c = float(np.sum(moved[levels > 0] / levels[levels > 0]) / max(1, np.sum(levels > 0))) / big.d
    t_comp1 = comp[1]
    print()
    print(f"model: T_round(K) = {t_comp1:.3f} s / K + {L0:.4f} s + {L1:.4f} s x K + {c:.3e} s x d x log2(K) "
          f"(d = {big.d:,})")
    print("| K | rounds to tol | T_round measured (s) | T_round model (s) | time to tol (s) | vs serial SDCA |")
    print("|---:|---:|---:|---:|---:|---:|")
    serial = rounds[1] * t_comp1 if rounds[1] is not None else None
    for K in sorted(rounds):
        model_t = t_comp1 / K + L0 + L1 * K + c * big.d * math.log2(K) if K > 1 else t_comp1
        measured = next((f"{r[1]:.3f}" for r in rows if r[0] == K), "")
        total = rounds[K] * model_t if rounds[K] is not None else None
        ratio = f"{total / serial:.2f}x" if total is not None and serial else ""
        print(f"| {K} | {rounds[K] if rounds[K] is not None else f'> {args.max_rounds}'} | {measured} | "
              f"{model_t:.3f} | {'' if total is None else f'{total:.1f}'} | {ratio} |")


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
    u.add_argument("--tol", type=float, default=1e-4, help="relative duality gap to certify (default 1e-4)")
    c = sub.add_parser("cost")
    c.add_argument("--rows", type=int, default=200_000)
    c.add_argument("--features", type=int, default=100_000)
    c.add_argument("--nnz-per-row", type=float, default=25.0)
    c.add_argument("--lam", type=float, default=1e-4)
    c.add_argument("--tol", type=float, default=1e-4)
    c.add_argument("--max-rounds", type=int, default=400)
    c.add_argument("--rounds", type=int, default=12, help="cluster rounds timed per configuration")
    c.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    c.add_argument("--project", type=int, nargs="+", default=[16, 64])
    args = parser.parse_args()
    {"overhead": overhead, "tasks": tasks, "url": url, "cost": cost}[args.what](args)


if __name__ == "__main__":
    main()
