"""He & Takáč 2015 [HT15], Figs. 2-5 claim, measured: after 10 epochs adfSDCA's gap is below dfSDCA's and SDCA's.

For each data set, loss (logistic, squared) and lam in {1/n, 1e-4, 1e-6}, fit
with ``tol=0`` for 10 rounds of one epoch each (one partition, seed 0):

* ``adfsdca``: Algorithm 1 (``probabilities="exact"``: exact adaptive probabilities, Theta of Thm 1);
* ``dfsdca``: uniform dual-free SDCA, ``theta = lam / (lam n + L_max)``;
* ``sdca``: serial SDCA (closed-form dual coordinate steps, LIBLINEAR-style).

The number compared is the certified duality gap ``P - D`` of the returned
state (``daskdca.fit``'s ``gap_``; the dual-free methods are certified at the
dual point ``-phi'(Xw)``, SDCA at its own ``alpha``).  Epochs are counted,
never seconds.  Exact adfSDCA costs a pass over the data per step (O(n nnz)
per epoch, [HT15] Table 1), so every data set is a seeded random subset of
``--rows`` rows (rcv1_1k has 1000).

    python benchmarks/dual_free_claims.py [--rows 2000] [--epochs 10]

Also: adfSDCA+ (Algorithm 2, floor 0.5) with s = 1, 10, 20 on the same grid (claim: s = 10 and s = 20
within 3x of each other), and mini-batch adfSDCA (Algorithm 4) with b = 1, 2, 4, 8 on the logistic loss at
lam = 1/n and 1e-4: epochs to a certified relative gap of 1e-4 (claim: b <= 8 needs at most 1.5x the epochs
of b = 1; [HT15] Fig. 5).

Writes ``benchmarks/plots/dual_free_claims.png`` and prints a Markdown table.

``--speed BASE`` instead times one round of each dual-free solver on a9a (logistic, lam 1e-5, one
partition) with the kernels of this checkout and with those of git commit ``BASE`` loaded in the same
process, alternating, in CPU seconds; each round is a fraction ``--speed-frac`` of an epoch for the
adaptive solvers (Algorithm 1 and 4 take minutes per epoch before the kept residues), scaled to one epoch:

    python benchmarks/dual_free_claims.py --speed 6b156ea

``--scale`` instead fits dfSDCA (uniform), adfSDCA and adfSDCA+ (defaults) on the full a9a, w8a and ijcnn1
(logistic, lam 1e-4 and 1e-5) and on a generated 250,000-row logistic problem (lam 1e-4), one partition,
``tol=1e-4``, each fit stopped by a callback after ``--cap`` seconds, and prints seconds and epochs to the
certified relative gap (``--scale-out FILE`` also saves the rows as JSON, ``--scale-before FILE`` adds
those of an earlier run, e.g. of the previous commit, as "before" columns):

    python benchmarks/dual_free_claims.py --scale --cap 120
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

import daskdca
from daskdca.methods import AdaptiveDualFreeSDCA, AdaptiveDualFreeSDCAPlus

DATA_DIR = Path(os.environ.get("DASKDCA_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
# name -> (file, n_features) (shared/data/README.md); agaricus is the 126-feature mushrooms encoding
FILES = {
    "w8a": ("w8a.gz", 300),
    "ijcnn1": ("ijcnn1.bz2", 22),
    "agaricus": ("agaricus.txt.train.gz", 126),
    "rcv1_1k": ("rcv1_sample1000.svm.gz", 47236),
}
SOLVERS = ("adfsdca", "dfsdca", "sdca")
# adfSDCA+ (Algorithm 2) with the importance floor 0.5 (docs/references.md, note N6) and the paper's shrink factors
PLUS = {"s=1": 1.0, "s=10": 10.0, "s=20": 20.0}
BATCHES = (1, 2, 4, 8)
LOSSES = ("logistic", "squared")


def load(name, rows, seed=0):
    """A seeded random subset of ``rows`` rows of a data set, labels in {-1, +1}."""
    fname, d = FILES[name]
    X, y = load_svmlight_file(str(DATA_DIR / fname), n_features=d)
    X, y = sp.csr_matrix(X), np.asarray(y, dtype=np.float64)
    y = np.where(y == y.max(), 1.0, -1.0)  # agaricus is 0/1
    if rows < X.shape[0]:
        keep = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[:rows])
        X, y = X[keep], y[keep]
    return X, y


def optimum(X, y, loss, lam):
    """``P*`` from a tight reference solve (``P - P*`` is reported beside the gap).

    Squared loss: the dual's normal equations ``(I + X X^T / (lam n)) alpha = y`` (exact up to
    rounding).  Logistic: LIBLINEAR's trust-region Newton with ``C = 1/(lam n)`` and ``tol=1e-12``.
    """
    n = X.shape[0]
    if loss == "squared":
        gram = (X @ X.T).toarray()
        alpha = np.linalg.solve(np.eye(n) + gram / (lam * n), y)
        w = np.asarray(X.T @ alpha).ravel() / (lam * n)
    else:
        from sklearn.linear_model import LogisticRegression

        est = LogisticRegression(solver="liblinear", C=1.0 / (lam * n), fit_intercept=False, tol=1e-12,
                                 max_iter=100_000)
        X32 = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X32, y)
        w = est.coef_.ravel()
    return primal(X, y, w, loss, lam)


def primal(X, y, w, loss, lam):
    z = np.asarray(X @ w).ravel()
    values = 0.5 * (z - y) ** 2 if loss == "squared" else np.logaddexp(0.0, -y * z)
    return float(values.mean() + 0.5 * lam * w @ w)


def run_one(X, y, solver, loss, lam, epochs):
    """``(certified gap, primal, [(epoch, gap)] per round)`` after ``epochs`` one-epoch rounds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if solver == "adfsdca":  # the claims are Algorithm 1's (exact probabilities), not the refreshed default
            solver = AdaptiveDualFreeSDCA(probabilities="exact")
        m = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=0.0, max_rounds=epochs, random_state=0,
                        n_partitions=1)
    return m.gap_, m.primal_, [(r.epochs, r.gap) for r in m.history_]


def lam_grid(n):
    return (("1/n", 1.0 / n), ("1e-4", 1e-4), ("1e-6", 1e-6))


def run_grid(datasets, losses, rows, epochs):
    records = []
    for name in datasets:
        X, y = load(name, rows)
        for loss in losses:
            for lam_name, lam in lam_grid(X.shape[0]):
                rec = {"data": name, "n": X.shape[0], "loss": loss, "lam_name": lam_name, "lam": lam,
                       "p_star": optimum(X, y, loss, lam)}
                for solver in SOLVERS:
                    rec[solver] = run_one(X, y, solver, loss, lam, epochs)
                for key, shrink in PLUS.items():
                    rec[key] = run_one(X, y, AdaptiveDualFreeSDCAPlus(shrink=shrink), loss, lam, epochs)
                records.append(rec)
                print(f"{name} {loss} lam={lam_name}: " + ", ".join(f"{s} {rec[s][0]:.3e}" for s in SOLVERS),
                      flush=True)
    return records


def markdown(records, epochs):
    lines = ["| data (n) | loss | lam | gap adfSDCA | gap dfSDCA | gap SDCA | adf < df | adf < SDCA | "
             "P-P* adfSDCA | P-P* dfSDCA | P-P* SDCA |", "|---|---|---|---:|---:|---:|---|---|---:|---:|---:|"]
    held_df = held_sdca = sub_df = sub_sdca = 0
    for r in records:
        a, d, s = (r[k][0] for k in SOLVERS)
        pa, pd, ps = (r[k][1] - r["p_star"] for k in SOLVERS)
        held_df += a < d
        held_sdca += a < s
        sub_df += pa < pd
        sub_sdca += pa < ps
        lines.append(f"| {r['data']} ({r['n']}) | {r['loss']} | {r['lam_name']} ({r['lam']:.3g}) | {a:.2e} | "
                     f"{d:.2e} | {s:.2e} | {'yes' if a < d else '**no**'} | {'yes' if a < s else '**no**'} | "
                     f"{pa:.2e} | {pd:.2e} | {ps:.2e} |")
    lines.append("")
    lines.append(f"After {epochs} epochs adfSDCA's certified gap is below uniform dfSDCA's in {held_df} of "
                 f"{len(records)} cases and below SDCA's in {held_sdca} of {len(records)}; by P - P* it is below "
                 f"dfSDCA's in {sub_df} and below SDCA's in {sub_sdca} of {len(records)}.")
    return "\n".join(lines)


def markdown_plus(records, epochs):
    """adfSDCA+ (s = 1, 10, 20; floor 0.5): gaps after ``epochs`` epochs, s = 10 vs 20 within 3x, vs dfSDCA."""
    lines = ["| data (n) | loss | lam | gap s=1 | gap s=10 | gap s=20 | s=20/s=10 | within 3x | gap adfSDCA | "
             "gap dfSDCA | s=10 < dfSDCA |", "|---|---|---|---:|---:|---:|---:|---|---:|---:|---|"]
    within = beats = 0
    for r in records:
        g1, g10, g20 = (r[k][0] for k in PLUS)
        ratio = g20 / g10
        ok = 1 / 3 <= ratio <= 3
        within += ok
        beats += g10 < r["dfsdca"][0]
        lines.append(f"| {r['data']} ({r['n']}) | {r['loss']} | {r['lam_name']} | {g1:.2e} | {g10:.2e} | {g20:.2e} | "
                     f"{ratio:.3g} | {'yes' if ok else '**no**'} | {r['adfsdca'][0]:.2e} | {r['dfsdca'][0]:.2e} | "
                     f"{'yes' if g10 < r['dfsdca'][0] else '**no**'} |")
    lines.append("")
    lines.append(f"adfSDCA+ s=10 and s=20 are within 3x of each other in {within} of {len(records)} cases; s=10's "
                 f"gap is below uniform dfSDCA's in {beats} of {len(records)}.")
    return "\n".join(lines)


def minibatch_epochs(datasets, rows, tol, max_epochs):
    """Epochs of mini-batch adfSDCA (Algorithm 4) to a certified relative gap ``tol``, logistic loss."""
    records = []
    for name in datasets:
        X, y = load(name, rows)
        for lam_name, lam in lam_grid(X.shape[0])[:2]:
            rec = {"data": name, "n": X.shape[0], "lam_name": lam_name}
            for b in BATCHES:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=AdaptiveDualFreeSDCA(batch_size=b),
                                    tol=tol, max_rounds=max_epochs, random_state=0, n_partitions=1)
                rec[b] = (m.n_epochs_ if m.converged_ else None, m.gap_ / m.primal_)
            records.append(rec)
            print(f"minibatch {name} lam={lam_name}: " + ", ".join(f"b={b} {rec[b][0]}" for b in BATCHES),
                  flush=True)
    return records


def markdown_minibatch(records, tol, max_epochs):
    head = " | ".join(f"b={b}" for b in BATCHES)
    lines = [f"| data (n) | lam | {head} | max ratio b<=8 / b=1 | at most 1.5x |",
             "|---|---|" + "---:|" * len(BATCHES) + "---:|---|"]
    held = 0
    for r in records:
        cells = [f"{r[b][0]:.0f}" if r[b][0] is not None else f">{max_epochs} ({r[b][1]:.1e})" for b in BATCHES]
        base = r[1][0]
        others = [r[b][0] for b in BATCHES[1:]]
        if base is None or any(e is None for e in others):
            ratio, ok = "-", False
        else:
            ratio = max(others) / base
            ok = ratio <= 1.5
            ratio = f"{ratio:.2f}"
        held += ok
        lines.append(f"| {r['data']} ({r['n']}) | {r['lam_name']} | {' | '.join(cells)} | {ratio} | "
                     f"{'yes' if ok else '**no**'} |")
    lines.append("")
    lines.append(f"Epochs to a certified relative gap of {tol:g} (at most {max_epochs}); the claim holds in {held} "
                 f"of {len(records)} cases.")
    return "\n".join(lines)


def plot(records, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["data"], r["loss"]) for r in records})
    lams = [name for name, _ in lam_grid(1)]
    fig, axes = plt.subplots(len(keys), len(lams), figsize=(4 * len(lams), 2.6 * len(keys)), squeeze=False)
    for i, key in enumerate(keys):
        for j, lam_name in enumerate(lams):
            ax = axes[i][j]
            for r in records:
                if (r["data"], r["loss"]) == key and r["lam_name"] == lam_name:
                    for solver, style in zip(SOLVERS, ("-o", "--s", ":^")):
                        hist = r[solver][2]
                        ax.semilogy([h[0] for h in hist], [max(h[1], 1e-17) for h in hist], style, ms=3,
                                    label=solver)
            ax.set_title(f"{key[0]} {key[1]} lam={lam_name}", fontsize=8)
            ax.set_xlabel("epochs", fontsize=7)
            ax.set_ylabel("duality gap", fontsize=7)
            ax.tick_params(labelsize=6)
            if i == 0 and j == 0:
                ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def speed(base, frac, reps=2):
    """Per-epoch CPU seconds of each dual-free solver with this checkout's kernels and with ``base``'s."""
    import importlib.util
    import subprocess
    import sys
    import tempfile
    import time

    import daskdca.methods.dual_free as methods_df

    root = Path(os.environ.get("DASKDCA_REPO", Path(__file__).resolve().parents[1]))
    source = subprocess.run(["git", "show", f"{base}:daskdca/kernels/dual_free.py"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "dual_free_base.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("dual_free_base", path)
    old = importlib.util.module_from_spec(spec)
    sys.modules["dual_free_base"] = old
    spec.loader.exec_module(old)
    kernels = {"before": old, "after": methods_df.kern}
    X, y = load_svmlight_file(str(DATA_DIR / "a9a.gz"), n_features=123)
    X, y = sp.csr_matrix(X), np.asarray(y, dtype=np.float64)
    cases = [("dfsdca", {}, 1.0), ("adfsdca+", {}, 1.0), ("adfsdca", {}, frac),
             ("adfsdca", {"batch_size": 4}, 4 * frac)]
    rows = []
    for solver, extra, f in cases:
        times = {"before": [], "after": []}
        for rep in range(reps + 1):  # rep 0 compiles
            for name, kern in kernels.items():
                methods_df.kern = kern
                t0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    daskdca.fit(X, y, loss="logistic", lam=1e-5, solver=solver, tol=0.0, max_rounds=1,
                                local_iters=f, n_partitions=1, **extra)
                if rep:
                    times[name].append((time.process_time() - t0) / f)
        methods_df.kern = kernels["after"]
        label = solver + (f" b={extra['batch_size']}" if extra else "")
        rows.append((label, f, min(times["before"]), min(times["after"])))
    lines = ["| solver | epoch fraction timed | s/epoch before | s/epoch after | before/after |",
             "|---|---:|---:|---:|---:|"]
    for label, f, tb, ta in rows:
        lines.append(f"| {label} | {f:g} | {tb:.3g} | {ta:.3g} | {tb / ta:.2f} |")
    return "\n".join(lines)


SCALE_FILES = {"a9a": ("a9a.gz", 123), "w8a": ("w8a.gz", 300), "ijcnn1": ("ijcnn1.bz2", 22)}
SCALE_SOLVERS = ("dfsdca", "adfsdca", "adfsdca+")


def scale_problems(gen_rows=250_000):
    """``(label, X, y, lam)``: the real sets at lam 1e-4 and 1e-5, and one generated store read back."""
    import tempfile

    from daskdca.datasets import make_classification

    for name, (fname, d) in SCALE_FILES.items():
        X, y = load_svmlight_file(str(DATA_DIR / fname), n_features=d)
        X, y = sp.csr_matrix(X), np.where(np.asarray(y) == np.max(y), 1.0, -1.0)
        for lam in (1e-4, 1e-5):
            yield f"{name} ({X.shape[0]})", X, y, lam
    with tempfile.TemporaryDirectory() as tmp:
        store = make_classification(str(Path(tmp) / "gen.zarr"), gen_rows, 20_000, nnz_per_row=30.0, seed=1)
        X, y = store.read_all()
        yield f"generated ({X.shape[0]})", sp.csr_matrix(X), np.asarray(y, dtype=np.float64), 1e-4


def scale_fit(X, y, solver, lam, tol, cap):
    """One fit stopped after ``cap`` seconds: ``(seconds, epochs, relative gap, converged, warnings)``."""
    import time

    t0 = time.perf_counter()

    def stop(record, state):
        return time.perf_counter() - t0 > cap

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=tol, callback=stop, random_state=0)
    seconds = time.perf_counter() - t0
    rel = float(m.gap_) / abs(float(m.primal_))
    notes = [str(w.message)[:60] for w in caught if "max_rounds" not in str(w.message)]
    return seconds, float(m.n_epochs_), rel, bool(m.converged_), notes


def scale(tol, cap, out=None, before=None):
    import json

    rows = []
    Xw, yw = load("w8a", 500)
    for solver in SCALE_SOLVERS:  # numba compiles outside the timed fits
        scale_fit(Xw, yw, solver, 1e-3, tol, cap)
    for label, X, y, lam in scale_problems():
        for solver in SCALE_SOLVERS:
            sec, ep, rel, conv, notes = scale_fit(X, y, solver, lam, tol, cap)
            rows.append(dict(data=label, lam=lam, solver=solver, seconds=sec, epochs=ep, rel_gap=rel,
                             converged=conv, notes=notes))
            print(rows[-1], flush=True)
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
    old = {}
    if before:
        old = {(r["data"], r["lam"], r["solver"]): r for r in json.loads(Path(before).read_text())}

    def cell(r):
        if r is None:
            return "-"
        text = f"{r['seconds']:.1f} s / {r['epochs']:.0f} ep"
        return text if r["converged"] else f">{text} (gap {r['rel_gap']:.1e})"

    lines = [f"Seconds / epochs to a certified relative gap of {tol:g} (logistic, one partition, cap {cap:g} s; "
             "'>' = stopped by the cap or the stall test, with the relative gap reached)", "",
             "| data (n) | lam | solver | before | after |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['data']} | {r['lam']:g} | {r['solver']} | "
                     f"{cell(old.get((r['data'], r['lam'], r['solver'])))} | {cell(r)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", metavar="BASE", help="time the kernels against git commit BASE's instead")
    parser.add_argument("--speed-frac", type=float, default=0.03)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=list(FILES))
    parser.add_argument("--losses", nargs="+", default=list(LOSSES))
    parser.add_argument("--minibatch-tol", type=float, default=1e-4)
    parser.add_argument("--minibatch-max-epochs", type=int, default=40)
    parser.add_argument("--scale", action="store_true", help="full-size data: seconds and epochs to the tol")
    parser.add_argument("--cap", type=float, default=120.0, help="--scale: seconds per fit")
    parser.add_argument("--scale-tol", type=float, default=1e-4)
    parser.add_argument("--scale-out", help="--scale: save the rows as JSON")
    parser.add_argument("--scale-before", help="--scale: a JSON of an earlier run, shown as 'before'")
    args = parser.parse_args()
    if args.scale:
        print(scale(args.scale_tol, args.cap, args.scale_out, args.scale_before))
        return
    if args.speed:
        print(speed(args.speed, args.speed_frac))
        return
    records = run_grid(args.datasets, args.losses, args.rows, args.epochs)
    out = Path(__file__).resolve().parent / "plots" / "dual_free_claims.png"
    plot(records, out)
    mb = minibatch_epochs(args.datasets, args.rows, args.minibatch_tol, args.minibatch_max_epochs)
    print()
    print(markdown(records, args.epochs))
    print()
    print(markdown_plus(records, args.epochs))
    print()
    print(markdown_minibatch(mb, args.minibatch_tol, args.minibatch_max_epochs))
    print(f"\nplot: {out.relative_to(out.parents[2])}")


if __name__ == "__main__":
    main()
