"""Soak test: memory of a long cluster fit with 64 partitions.

Usage::

    python benchmarks/soak.py [--rounds 1000] [--every 20] [--no-bare] [--plot benchmarks/plots/soak.png]

A generated store (``daskdca.datasets.make_classification`` into a temporary
folder: 64 blocks of 64 rows, 2,000 features, 20 nnz per row, so a round is
dominated by its per-round overhead, not by arithmetic) is fitted with
CoCoA+ (logistic, lam 1e-7, tol 0: it never converges) for ``--rounds``
rounds on a LocalCluster of 2 worker processes x 1 thread, in memory, one
partition per block (64 partitions: 64 local tasks and a tree reduce per
round, the gap evaluated every round).

Every ``--every`` rounds (from the fit's ``callback=``, called at each gap
evaluation) it records the RSS of

- the client process.  The LocalCluster's scheduler runs in this same
  process (LocalCluster starts it in process), so "client" and "scheduler"
  are one RSS: the client/scheduler process;
- each worker process (``client.run`` of ``psutil.Process().memory_info().rss``);

and, to say who grows, counts held by Dask: the scheduler's tasks, task
groups and prefixes, the client's futures, each worker's tasks; and the
size of daskdca's history list.

Then, unless ``--no-bare``, a bare Dask loop with the same task graph shape
per round (64 tasks that each read the previous round's ``w`` and return a
d-vector, a binary tree reduce with the same fan-in, one scalar gathered per
round) runs for the same number of rounds on a fresh LocalCluster of the
same shape, recorded the same way.  Whatever grows in both is Dask's own
per-task bookkeeping; what grows only in the daskdca run is daskdca's.

It prints, per process, RSS at the first sample, at round 200 and at the
end, and the growth from round 200 to the end (target: <= 8 MiB per process
from round 200 to 1,000), and writes the plot.  It measures; it asserts
nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

import numpy as np

MIB = 2**20
N_PARTITIONS = 64


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def _scheduler_counts(dask_scheduler):
    return {"tasks": len(dask_scheduler.tasks), "task_groups": len(dask_scheduler.task_groups),
            "task_prefixes": len(dask_scheduler.task_prefixes)}


def _worker_counts(dask_worker):
    return len(dask_worker.state.tasks)


class Recorder:
    """RSS and Dask counts every ``every`` rounds, keyed by round."""

    def __init__(self, client, every):
        self.client = client
        self.every = every
        self.rounds = []
        self.rss = {}          # process label -> list of bytes
        self.counts = []       # per sample: dict
        self.t0 = time.perf_counter()

    def sample(self, rnd, extra=None):
        worker_rss = self.client.run(_rss)
        labels = {"client/scheduler": _rss()}
        for i, addr in enumerate(sorted(worker_rss)):
            labels[f"worker {i}"] = worker_rss[addr]
        for label, value in labels.items():
            self.rss.setdefault(label, []).append(value)
        counts = self.client.run_on_scheduler(_scheduler_counts)
        counts["client_futures"] = len(self.client.futures)
        counts["worker_tasks"] = sorted(self.client.run(_worker_counts).values())
        counts["seconds"] = round(time.perf_counter() - self.t0, 1)
        if extra:
            counts.update(extra)
        self.rounds.append(rnd)
        self.counts.append(counts)

    def growth(self, start_round):
        """Per process: (rss at first sample, at start_round, at end, growth start->end), MiB."""
        rounds = np.asarray(self.rounds)
        i0 = int(np.searchsorted(rounds, start_round))
        i0 = min(i0, len(rounds) - 1)
        out = {}
        for label, values in self.rss.items():
            v = np.asarray(values) / MIB
            out[label] = (v[0], v[i0], v[-1], v[-1] - v[i0], int(rounds[i0]), int(rounds[-1]))
        return out


def _cluster():
    from distributed import LocalCluster

    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                        host="127.0.0.1")


def run_daskdca(store, rounds, every):
    from distributed import Client

    import daskdca

    with _cluster() as cluster, Client(cluster) as client:
        rec = Recorder(client, every)
        history_ref = {}

        def callback(record, state):
            r = record.round
            if r == 1 or r % every == 0:
                rec.sample(r, {"history_bytes": history_ref.get("bytes", 0)})
            # history grows by one record per evaluation; its size is estimated, not walked
            history_ref["bytes"] = (r + 1) * (sys.getsizeof(record) + sum(sys.getsizeof(x) for x in record))
            return False

        t = time.perf_counter()
        model = daskdca.fit(store, loss="logistic", lam=1e-7, solver="cocoa+", tol=0.0, max_rounds=rounds,
                            random_state=0, client=client, in_memory=True, callback=callback)
        seconds = time.perf_counter() - t
        if rec.rounds[-1] != model.n_rounds_:
            rec.sample(model.n_rounds_)
        print(f"daskdca: {model.n_rounds_} rounds in {seconds:.0f} s ({seconds / model.n_rounds_ * 1e3:.0f} ms "
              f"per round), {len(model.history_)} history records, gap {model.gap_:.3g}")
        return rec, seconds


def _local(w, k, seed):
    rng = np.random.default_rng((seed, k))
    return w * 0.5 / N_PARTITIONS + rng.standard_normal(w.shape[0]) * 1e-3


def _add(*parts):
    return np.sum(parts, axis=0)


def _scalar(w):
    return float(w @ w)


def run_bare(d, rounds, every, fan_in=2):
    """Same task shape per round as CoCoA+ over 64 partitions, no daskdca."""
    from distributed import Client

    with _cluster() as cluster, Client(cluster) as client:
        rec = Recorder(client, every)
        w = client.scatter(np.zeros(d))
        t = time.perf_counter()
        for r in range(1, rounds + 1):
            parts = [client.submit(_local, w, k, r, key=f"bare-local-r{r}-p{k}") for k in range(N_PARTITIONS)]
            level = 0
            while len(parts) > 1:
                parts = [client.submit(_add, *parts[i:i + fan_in], key=f"bare-reduce-r{r}-l{level}-{i}")
                         for i in range(0, len(parts), fan_in)]
                level += 1
            w = parts[0]
            client.submit(_scalar, w, key=f"bare-gap-r{r}").result()
            if r == 1 or r % every == 0:
                rec.sample(r)
        seconds = time.perf_counter() - t
        print(f"bare dask loop: {rounds} rounds in {seconds:.0f} s ({seconds / rounds * 1e3:.0f} ms per round)")
        return rec, seconds


def plot(results, path, start_round):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False, sharey=True)
    for ax, (name, rec) in zip(axes[0], results.items()):
        for label, values in rec.rss.items():
            ax.plot(rec.rounds, np.asarray(values) / MIB, label=label)
        ax.axvline(start_round, color="grey", lw=0.8, ls="--")
        ax.set_title(name)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0][0].set_ylabel("RSS (MiB)")
    fig.suptitle(f"soak: {N_PARTITIONS} partitions, LocalCluster 2 workers x 1 thread "
                 "(the scheduler runs in the client's process)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def report(name, rec, start_round, target_mib):
    print(f"\n{name}: RSS in MiB (first sample, round {start_round}, end) and growth from round {start_round}")
    print("| process | first | at start | end | growth | per 100 rounds | linear to 800 rounds | "
          f"<= {target_mib:g} MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for label, (first, at0, end, grow, r0, r1) in rec.growth(start_round).items():
        per100 = grow / max(r1 - r0, 1) * 100
        linear = grow / max(r1 - r0, 1) * 800
        ok = "yes" if linear <= target_mib else "no"
        print(f"| {label} | {first:.0f} | {at0:.0f} | {end:.0f} | {grow:+.1f} | {per100:+.2f} | {linear:+.1f} | {ok} |")
    c0 = rec.counts[min(int(np.searchsorted(rec.rounds, start_round)), len(rec.counts) - 1)]
    print(f"counts at round {rec.rounds[rec.counts.index(c0)]}: {c0}")
    print(f"counts at round {rec.rounds[-1]}: {rec.counts[-1]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--every", type=int, default=20, help="rounds between samples")
    p.add_argument("--start", type=int, default=200, help="growth is measured from this round to the end")
    p.add_argument("--no-bare", action="store_true", help="skip the bare Dask loop")
    p.add_argument("--plot", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "soak.png"))
    args = p.parse_args()
    if args.rounds < 1 or args.every < 1:
        p.error("--rounds and --every must be >= 1")

    from daskdca import datasets

    workdir = tempfile.mkdtemp(prefix="daskdca-soak-")
    store = datasets.make_classification(os.path.join(workdir, "soak.zarr"), N_PARTITIONS * 64, 2000,
                                         nnz_per_row=20, block_rows=64, seed=16, compression="none")
    print(f"store: {store.n} x {store.d}, {store.nnz:,} nnz, {store.n_blocks} blocks; {args.rounds} rounds, "
          f"a sample every {args.every}; {os.cpu_count()} CPUs")
    results = {}
    gc.collect()
    rec, _ = run_daskdca(store, args.rounds, args.every)
    results["daskdca CoCoA+ (64 partitions)"] = rec
    if not args.no_bare:
        gc.collect()
        bare, _ = run_bare(store.d, args.rounds, args.every)
        results["bare Dask loop (same tasks per round)"] = bare
    for name, r in results.items():
        report(name, r, args.start, 8.0)
    plot(results, args.plot, args.start)
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
