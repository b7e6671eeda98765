"""The cost model, refitted: time to a certified relative gap of 1e-4 on 1 to 64 nodes.

Usage::

    python benchmarks/cost_model.py                       # measures one core's throughput here (~10 s)
    python benchmarks/cost_model.py --recorded            # one core's throughput as recorded in RESULTS.md
    python benchmarks/cost_model.py --node-speedup 8 --plot benchmarks/plots/cost_model.png

It projects, it measures only one core's epoch; nothing here ran on more than one machine.

The model
---------
With ``N`` nodes, ``K = N`` workers and one partition per worker::

    T(N)       = rounds(K) * T_round(K) + setup
    T_round(K) = T_comp / K + latency(d) + c * d * log2(K)          (K >= 2)
    T(1)       = epochs_serial * T_comp + setup                      (serial SDCA in process)
    T_comp     = nnz / r_sweep + nnz / r_gap

* ``r_sweep`` and ``r_gap`` are one core's rates (nnz a second) of the SDCA sweep
  (:func:`daskdca.kernels.sdca.local_sdca`, logistic) and of the gap pass
  (:func:`daskdca.kernels.sdca.objective_sums`) that certifies every round.  Measured here on a small set
  from :func:`daskdca.datasets.make_classification` shaped like the problem (row density and ``d``: the
  cache misses on ``w`` depend on ``d``), or, with ``--recorded``, the a9a figures of benchmarks/RESULTS.md
  ("The SDCA sweep's logistic step", 2026-11-26: sweep 4.3 ms and gap pass 1.9 ms for 451,592 nnz,
  i.e. 105 and 238 M nnz/s).
* **A node is one core.**  Within a node the 16 cores are modelled as threads that do not pay:
  benchmarks/RESULTS.md, "Threads inside a partition" (2026-11-27), measured ``T = 2`` threads at 1.6-2.2x
  one thread's time to 1e-4 (the ``T``-fold safe ``sigma'`` costs more epochs than the threads save), and
  "Threads with a line search" (2026-11-28) at 0.77-0.82x on evenly spread features but 1.7-2.1x on url10,
  whose popular features make the epochs grow.  So ``T_comp`` per node uses one core's throughput.  ``--node-speedup S`` adds an **assumed** (not measured)
  variant where a node's cores divide ``T_comp`` by ``S`` with the rounds unchanged (what a hierarchical
  scheme such as Snap ML's, [DPS+18] §3, aims at; daskdca's threads have not shown it).
* ``latency(d)`` and ``c`` are fitted to the resident rounds (one Dask actor per worker) of
  benchmarks/RESULTS.md, "One BLAS thread while the rounds run" (2026-11-28,
  ``benchmarks/round_overhead.py --reps 3`` and ``--plain``, 2 workers, calls straight to the workers, one
  BLAS thread in the driver): overhead a round 2.8 ms at d = 100 and 3.8 ms at d = 100,000 for plain
  CoCoA+; 2.75 ms and 4.65 ms inside Catalyst (the medians of four runs; 4.3, 8.8, 4.2 and 11.7 ms in the
  fifth session's refit, "Engine: resident rounds, one actor per worker").  All four are at K = 2, one level of
  the reduction (``log2 K = 1``), so they fix ``latency(d) + c d`` only: the split is a choice.  Default
  (``--latency-share 0``): the intercept is the latency and the whole slope in ``d`` is ``c``, per level
  (pessimistic for large K); ``--latency-share 1`` puts the slope in ``latency(d)`` and ``c = 0``.
  The resident engine is a star (the driver receives K contributions and sends K totals), not a tree;
  ``--topology star`` replaces ``log2 K`` by ``K - 1`` (equal at K = 2).
* ``rounds(K)``: measured, plain CoCoA+ and inside Catalyst, logistic, tol 1e-4 certified, lam 1e-4 and
  1e-6, K = 1, 2, 4, ..., 64; serial SDCA's epochs for N = 1.  For the URL-sized problem on a generated
  set of URL's full size, benchmarks/RESULTS.md, "Rounds against K on a URL-shaped set at full size"
  (2,396,130 x 3,231,961, 257.7 M nnz); for the Criteo-sized problem those of url10, "Rounds against K on
  a URL-shaped set, a tenth of its rows" (240,000 x 3,231,961, 19.85 M nnz), an assumption, not a
  measurement.  A K between two measured ones is interpolated linearly in ``log2 K``.  Cells that stopped
  at a seconds cap (``>N``) were not measured: from them the model gives a lower bound ``>=`` only.
* ``setup``: ``--setup-s`` (default 0) plus, with ``--load-mb-s``, each node's share of the data read at
  that rate.  By default the tables are the rounds' time alone.
* The old model (benchmarks/RESULTS.md, "Engine: a cost model fitted here and projected to 16 and 64
  nodes", 2026-11-23, task graphs): ``T_round(K) = T_comp / K + 0.0315 + 0.0079 K + 2.9e-7 d log2(K)`` s,
  printed beside the new one with the same ``T_comp`` and rounds.

Problems: URL-sized, 2,396,130 rows x 3,231,961 features, about 277 M nnz; Criteo-sized, 4e9 rows x 39 nnz
a row, d = 2^24 hashed features (``--criteo-d``).  Memory per node: 12 bytes a stored value (float64 value,
int32 index) plus three d-vectors of float64; nodes that need more than ``--node-ram-gb`` are marked
(they would run out of core, at another cost not modelled here).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np

# rounds to a certified relative gap of 1e-4, url10 (benchmarks/RESULTS.md, "Rounds against K on a
# URL-shaped set, a tenth of its rows"); ("gt", n) is a cell that stopped at the 60 s cap after n rounds
ROUNDS = {
    1e-4: {
        "serial": 3,
        "plain": {1: 3, 2: 4, 4: 4, 8: 6, 16: 8, 32: 33, 64: ("gt", 35)},
        "catalyst": {1: 3, 2: 4, 4: 4, 8: 6, 16: 6, 32: 12, 64: 23},
    },
    1e-6: {
        "serial": 6,
        "plain": {1: 6, 2: ("gt", 57), 4: ("gt", 51), 8: ("gt", 53), 16: ("gt", 38), 32: ("gt", 44),
                  64: ("gt", 26)},
        "catalyst": {1: 16, 2: 20, 4: 26, 8: 37, 16: ("gt", 44), 32: ("gt", 41), 64: ("gt", 32)},
    },
}

# the same at URL's full size (benchmarks/RESULTS.md, "Rounds against K on a URL-shaped set at full size")
ROUNDS_URL = {
    1e-4: {
        "serial": 3,
        "plain": {1: 3, 2: 3, 4: 3, 8: 4, 16: 4, 32: 4, 64: 5},
        "catalyst": {1: 3, 2: 3, 4: 3, 8: 4, 16: 4, 32: 4, 64: 5},
    },
    1e-6: {
        "serial": 4,
        "plain": {1: 4, 2: ("gt", 16), 4: ("gt", 20), 8: ("gt", 20), 16: ("gt", 21), 32: ("gt", 17),
                  64: ("gt", 18)},
        "catalyst": {1: 4, 2: 15, 4: 20, 8: 20, 16: 19, 32: ("gt", 22), 64: ("gt", 20)},
    },
}

# resident-round overhead (s) at K = 2 against d (benchmarks/RESULTS.md, "One BLAS thread while the rounds run")
RESIDENT = {"plain": ((100, 2.8e-3), (100_000, 3.8e-3)), "catalyst": ((100, 2.75e-3), (100_000, 4.65e-3))}

# the 2026-11-23 model (task graphs): L0 + L1 K + c d log2 K
OLD = {"L0": 0.0315, "L1": 0.0079, "c": 2.9e-7}

# a9a, logistic, 2026-11-26: sweep 4.3 ms, gap pass 1.9 ms for 451,592 nnz
RECORDED_RATES = (451_592 / 4.3e-3, 451_592 / 1.9e-3)

PROBLEMS = {
    "url": {"label": "URL-sized, 2,396,130 x 3,231,961, 277 M nnz", "n": 2_396_130, "d": 3_231_961,
            "nnz": 277e6, "probe": (40_000, 3_231_961, 170.0), "rounds": ROUNDS_URL},
    "criteo": {"label": "Criteo-sized, 4e9 rows x 39 nnz, d = 2^24", "n": 4e9, "d": 2 ** 24, "nnz": 4e9 * 39,
               "probe": (80_000, 2 ** 24, 48.0)},
}

NODES = (1, 2, 4, 8, 16, 32, 64)


def measure_rates(n_rows, d, nnz_per_row, lams, seed=3):
    """One core's sweep and gap-pass rates (nnz/s) on a generated set shaped like the problem.

    Returns ``{lam: (r_sweep, r_gap)}``: medians of epochs 2 and 3 of a run from zero (epoch 1 loads the
    compiled kernels and has the first, larger steps).
    """
    import daskdca
    from daskdca import datasets
    from daskdca.kernels.sampling import permutation_order
    from daskdca.kernels.sdca import local_sdca, objective_sums
    from daskdca.partitions import UNWEIGHTED

    with tempfile.TemporaryDirectory(prefix="daskdca-cost-") as workdir:
        store = datasets.make_classification(os.path.join(workdir, "probe.zarr"), n_rows, d,
                                             nnz_per_row=nnz_per_row, seed=seed, compression="none")
        X, y = store.read_all()
    n = X.shape[0]
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    kind = int(daskdca.losses.get_loss("logistic").kind)
    rates = {}
    for lam in lams:
        alpha, w = np.zeros(n), np.zeros(d)
        sweep, gap = [], []
        for epoch in range(3):
            order = permutation_order(0, epoch, 0, n, n, 0)
            t0 = time.perf_counter()
            local_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, sqnorm, alpha, w, np.empty(0), order,
                       kind, 0.0, lam * n, 1.0, False)
            t1 = time.perf_counter()
            objective_sums(X.indptr, X.indices, X.data, y, UNWEIGHTED, alpha, w, 0, n, kind, 0.0)
            t2 = time.perf_counter()
            if epoch > 0:
                sweep.append(X.nnz / (t1 - t0))
                gap.append(X.nnz / (t2 - t1))
        rates[lam] = (float(np.median(sweep)), float(np.median(gap)))
    return rates, X.nnz


def fit_overhead(method, latency_share):
    """``(latency, c)`` from the two resident points of ``method`` (both at K = 2, one reduction level)."""
    (d0, t0), (d1, t1) = RESIDENT[method]
    slope = (t1 - t0) / (d1 - d0)
    intercept = t0 - slope * d0
    return intercept, slope * latency_share, slope * (1.0 - latency_share)


def rounds_at(table, K):
    """``(rounds, is_lower_bound)`` at K from a measured table; interpolated in log2 K; None outside it."""
    ks = sorted(table)
    if K < ks[0] or K > ks[-1]:
        return None, False

    def cell(k):
        v = table[k]
        return (v[1], True) if isinstance(v, tuple) else (v, False)

    if K in table:
        return cell(K)
    lo = max(k for k in ks if k < K)
    hi = min(k for k in ks if k > K)
    (r0, b0), (r1, b1) = cell(lo), cell(hi)
    f = (math.log2(K) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    value = r0 + f * (r1 - r0)
    if b0 or b1:  # a bound on either side: only a lower bound, and no larger than the smaller cell
        return min(r0, r1, value), True
    return value, False


def round_seconds(t_comp, K, d, latency, lat_d, c, topology):
    levels = math.log2(K) if topology == "tree" else K - 1
    return t_comp / K + latency + lat_d * d + c * d * levels


def old_round_seconds(t_comp, K, d):
    return t_comp / K + OLD["L0"] + OLD["L1"] * K + OLD["c"] * d * math.log2(K)


def project(problem, lam, rates, args, speedup=1.0, old=False, latency_share=None, topology=None):
    """Rows ``{N: {...}}`` of the projection of ``problem`` at ``lam``."""
    latency_share = args.latency_share if latency_share is None else latency_share
    topology = args.topology if topology is None else topology
    r_sweep, r_gap = rates
    t_comp = (problem["nnz"] / r_sweep + problem["nnz"] / r_gap) / speedup
    d = problem["d"]
    table = problem.get("rounds", ROUNDS)[lam]
    out = {}
    for N in args.nodes:
        bytes_node = problem["nnz"] / N * 12 + 3 * d * 8
        setup = args.setup_s + (bytes_node / (args.load_mb_s * 1e6) if args.load_mb_s else 0.0)
        row = {"gb": bytes_node / 1e9, "setup": setup}
        if N == 1:
            e = table["serial"]
            row["serial"] = e
            row["time"] = {"plain": (e * t_comp + setup, False), "catalyst": (e * t_comp + setup, False)}
            row["t_round"] = {"plain": t_comp, "catalyst": t_comp}
            row["rounds"] = {"plain": (e, False), "catalyst": (e, False)}
        else:
            row["time"], row["t_round"], row["rounds"] = {}, {}, {}
            for method in ("plain", "catalyst"):
                latency, lat_d, c = fit_overhead(method, latency_share)
                tr = old_round_seconds(t_comp, N, d) if old else round_seconds(t_comp, N, d, latency, lat_d, c,
                                                                                 topology)
                r, bound = rounds_at(table[method], N)
                row["t_round"][method] = tr
                row["rounds"][method] = (r, bound)
                row["time"][method] = (None, False) if r is None else (r * tr + setup, bound)
        out[N] = row
    return out


def best(row):
    """The smaller measured time of the two methods, else the smaller lower bound (flagged)."""
    known = [t for t, b in row["time"].values() if t is not None and not b]
    if known:
        return min(known), False
    bounds = [t for t, b in row["time"].values() if t is not None]
    return (min(bounds), True) if bounds else (None, False)


def fmt(value, bound=False, digits=3):
    if value is None:
        return "-"
    text = f"{value:.{digits}g}" if value < 100 else f"{value:,.0f}"
    return (">= " + text) if bound else text


def fmt_rounds(r):
    value, bound = r
    if value is None:
        return "-"
    text = f"{value:g}" if float(value).is_integer() else f"{value:.1f}"
    return (">= " + text) if bound else text


def print_table(name, problem, lam, rates, args):
    main = project(problem, lam, rates, args)
    fast = project(problem, lam, rates, args, speedup=args.node_speedup)
    old = project(problem, lam, rates, args, old=True)
    t1 = best(main[1])[0] if 1 in main else None
    print(f"\n#### {problem['label']}, logistic, lam {lam:g}, to a certified 1e-4\n")
    print(f"one core: sweep {rates[0] / 1e6:.1f} M nnz/s, gap pass {rates[1] / 1e6:.1f} M nnz/s; "
          f"T_comp = {problem['nnz'] / rates[0] + problem['nnz'] / rates[1]:.4g} s a pass over all the data\n")
    print(f"| nodes | rounds, plain | rounds, Catalyst | T_round plain (s) | T_round Catalyst (s) | time plain (s) | "
          f"time Catalyst (s) | best (s) | 1 node / best | 16 cores at {args.node_speedup:g}x (assumed), best (s) | "
          f"old model, best (s) | GB a node |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for N in args.nodes:
        row = main[N]
        b, bb = best(row)
        fb, fbb = best(fast[N])
        ob, obb = best(old[N])
        rp = f"{row['serial']} (serial SDCA)" if N == 1 else fmt_rounds(row["rounds"]["plain"])
        rc = f"{row['serial']} (serial SDCA)" if N == 1 else fmt_rounds(row["rounds"]["catalyst"])
        ratio = "-" if b is None or t1 is None else (f"<= {t1 / b:.2f}x" if bb else f"{t1 / b:.2f}x")
        ram = "" if row["gb"] <= args.node_ram_gb else f" (over {args.node_ram_gb:g})"
        print(f"| {N} | {rp} | {rc} | {fmt(row['t_round']['plain'])} | {fmt(row['t_round']['catalyst'])} | "
              f"{fmt(*row['time']['plain'])} | {fmt(*row['time']['catalyst'])} | {fmt(b, bb)} | {ratio} | "
              f"{fmt(fb, fbb)} | {fmt(ob, obb)} | {fmt(row['gb'])}{ram} |")
    return main, fast, old


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorded", action="store_true",
                        help="use the recorded a9a rates (105 M nnz/s sweep, 238 M nnz/s gap) instead of measuring")
    parser.add_argument("--probe-scale", type=float, default=1.0,
                        help="scale the probe sets' rows (40,000 URL-shaped, 80,000 Criteo-shaped)")
    parser.add_argument("--lams", type=float, nargs="+", default=[1e-4, 1e-6], choices=sorted(ROUNDS))
    parser.add_argument("--nodes", type=int, nargs="+", default=list(NODES))
    parser.add_argument("--node-speedup", type=float, default=8.0,
                        help="ASSUMED speed-up of a node's 16 cores over one, rounds unchanged (default 8)")
    parser.add_argument("--latency-share", type=float, default=0.0,
                        help="share of the resident overhead's d-slope put in latency(d) instead of c (default 0)")
    parser.add_argument("--topology", choices=("tree", "star"), default="tree",
                        help="w-transfer levels: log2 K (tree, default) or K - 1 (star: the driver's K messages)")
    parser.add_argument("--criteo-d", type=int, default=2 ** 24, help="hashed features of the Criteo-sized problem")
    parser.add_argument("--setup-s", type=float, default=0.0, help="constant setup (s), default 0")
    parser.add_argument("--load-mb-s", type=float, default=0.0,
                        help="if set, setup adds each node's data share read at this rate (MB/s)")
    parser.add_argument("--node-ram-gb", type=float, default=256.0)
    parser.add_argument("--plot", default=None, help="write a plot here (matplotlib, Agg), e.g. "
                        "benchmarks/plots/cost_model.png")
    args = parser.parse_args()
    if any(N < 1 or N > 64 for N in args.nodes):
        parser.error("--nodes must be within 1..64 (the measured rounds stop at K = 64)")
    PROBLEMS["criteo"]["d"] = args.criteo_d
    PROBLEMS["criteo"]["label"] = f"Criteo-sized, 4e9 rows x 39 nnz, d = {args.criteo_d:,}"

    rates = {}
    started = time.perf_counter()
    for name, problem in PROBLEMS.items():
        if args.recorded:
            rates[name] = {lam: RECORDED_RATES for lam in args.lams}
            continue
        rows, d, per_row = problem["probe"]
        rows = max(1000, int(rows * args.probe_scale))
        d = problem["d"] if name == "criteo" else d
        rates[name], nnz = measure_rates(rows, d, per_row, args.lams)
        print(f"measured on a generated {rows:,} x {d:,} set, {nnz:,} nnz "
              f"({nnz / rows:.1f} a row), logistic, one core: "
              + "; ".join(f"lam {lam:g}: sweep {s / 1e6:.1f}, gap {g / 1e6:.1f} M nnz/s"
                          for lam, (s, g) in rates[name].items()), flush=True)
    if not args.recorded:
        print(f"(measurements: {time.perf_counter() - started:.1f} s, {os.cpu_count()} cores here, load average "
              f"{os.getloadavg()[0]:.2f})")
    else:
        print("rates: recorded, a9a logistic 2026-11-26 (sweep 105, gap 238 M nnz/s)")

    print("\nfitted (resident rounds, K = 2, RESULTS.md 2026-11-28): "
          + "; ".join(f"{m}: latency {fit_overhead(m, args.latency_share)[0] * 1e3:.2f} ms + "
                      f"{fit_overhead(m, args.latency_share)[1]:.3g} s x d, c = {fit_overhead(m, args.latency_share)[2]:.3g} s "
                      f"a value a level" for m in ("plain", "catalyst"))
          + f"; topology {args.topology}")
    print(f"old (task graphs, 2026-11-23): L0 {OLD['L0']} s + L1 {OLD['L1']} s x K, c = {OLD['c']:g} s a value a level")

    results = {}
    for name, problem in PROBLEMS.items():
        for lam in args.lams:
            results[name, lam] = print_table(name, problem, lam, rates[name][lam], args)

    print("\n#### The 16-node target (URL-sized, lam 1e-4: time to 1e-4 falls from 1 to 16 nodes)\n")
    if 1e-4 in args.lams and 1 in args.nodes and 16 in args.nodes:
        main_rows = results["url", 1e-4][0]
        t1, _ = best(main_rows[1])
        t16, b16 = best(main_rows[16])
        verdict = "falls" if t16 < t1 else "does not fall"
        print(f"- model as fitted: 1 node {t1:.3g} s, 16 nodes {t16:.3g} s{' (lower bound)' if b16 else ''}: "
              f"{verdict} ({t1 / t16:.2f}x)")
        for label, kw in (("d-slope all in latency(d) (c = 0)", {"latency_share": 1.0}),
                          ("star topology (K - 1 transfers)", {"topology": "star"})):
            rows = project(PROBLEMS["url"], 1e-4, rates["url"][1e-4], args, **kw)
            a, _ = best(rows[1])
            b, _ = best(rows[16])
            print(f"- {label}: 1 node {a:.3g} s, 16 nodes {b:.3g} s ({a / b:.2f}x)")
        rows = results["url", 1e-4][2]
        a, _ = best(rows[1])
        b, _ = best(rows[16])
        print(f"- old constants (task graphs): 1 node {a:.3g} s, 16 nodes {b:.3g} s ({a / b:.2f}x)")

    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
            return
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, name in zip(axes, PROBLEMS):
            for lam, color in zip(args.lams, ("C0", "C1", "C2")):
                main_rows, fast_rows, old_rows = results[name, lam]
                for rows, style, label in ((main_rows, "-", "model"), (fast_rows, ":",
                                           f"16 cores at {args.node_speedup:g}x (assumed)"),
                                           (old_rows, "--", "old constants")):
                    pts = [(N, best(rows[N])) for N in args.nodes if best(rows[N])[0] is not None]
                    meas = [(N, t) for N, (t, b) in pts if not b]
                    bnds = [(N, t) for N, (t, b) in pts if b]
                    if meas:
                        ax.plot(*zip(*meas), style, marker="o", color=color, label=f"lam {lam:g}, {label}")
                    if bnds:
                        ax.plot(*zip(*bnds), linestyle="none", marker="^", color=color)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("nodes N (K = N partitions)")
            ax.set_ylabel("projected seconds to certified 1e-4")
            ax.set_title(PROBLEMS[name]["label"], fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=6, loc="upper left")
        fig.suptitle("daskdca cost model (projection from a 2-core machine; triangles: lower bounds)", fontsize=10)
        fig.tight_layout()
        os.makedirs(os.path.dirname(args.plot) or ".", exist_ok=True)
        fig.savefig(args.plot, dpi=110)
        print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()
