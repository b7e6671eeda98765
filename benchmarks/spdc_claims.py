"""SPDC's claims (Zhang & Xiao 2017 [ZX17], Fig. 1 and Fig. 5), counted in passes over the data.

Fig. 1 (ridge, synthetic): ``n = d = 500``, rows ``a ~ N(0, diag(j^-2))``,
``b = a.1 + N(0, 1)``, ``P(x) = 1/(2n) sum (a_i.x - b_i)^2 + lam/2 ||x||^2``
for ``lam`` in {1e-3, 1e-4, 1e-5, 1e-6}.  SPDC (Algorithm 1, eq. (12)) against
serial SDCA, both from 0, both on one partition; reported: the primal
suboptimality ``P(x) - P*`` (``P*`` from the closed form) after 100 passes.
Claim checked: for ``lam <= 1e-5`` (``kappa = R^2/lam >> n``) SPDC's is below
SDCA's.

Fig. 5 (weighted sampling): generated classification rows
(:func:`daskdca.datasets.make_classification`, log-normal row norms with
``row_norm_spread`` s), scaled so that ``R_bar = 1`` as in [ZX17] §7.3,
smoothed hinge (``gamma = 1``), ``lam = 1e-5``.  Algorithm 1 (uniform,
eq. (12)) against Algorithm 3 (``p_k`` of eq. (20), ``a*`` of eq. (25),
eq. (24)); reported: the duality gap ``P(x) - D(y)`` after 20 and 50 passes.
Claim checked: weighted beats uniform when ``R / R_bar >= 5``.

    python benchmarks/spdc_claims.py [--quick]

``--quick`` runs two ``lam`` of Fig. 1 and one spread of Fig. 5.  Writes
``benchmarks/plots/spdc_claims.png`` and prints Markdown tables.  Passes, not
seconds: the machine is shared.

SPDC across partitions (which design is the cluster default):

    python benchmarks/spdc_claims.py --local-solvers [--quick]

2 partitions, in process, logistic loss on a9a and ijcnn1 (``shared/data``,
or ``$DASKDCA_DATA``): epochs, rounds and seconds to a certified relative gap
of 1e-4 for (a) global mini-batch SPDC (``SPDC()``: one row per partition per
round: design (A)), (b) CoCoA+ with the SPDC local solver (design (B),
docs/references.md, note N8), (c) CoCoA+ with SDCA and (d) CoCoA+ with SDNA, and (a') global
SPDC with 1024 rows a round (design (A)'s best case on a cluster: 32 rounds an
epoch).  Sets and lam: the side-by-side suite's (a9a 1e-3, ijcnn1 1e-4;
``--lam`` sets another on both, ``--quick`` keeps a9a only); each CoCoA+ fit
is capped at ``--budget`` seconds (30), each global one at 12 (they never
come close: one epoch is n/2 rounds).  Every solver is run once on a small
set first, so no time is numba's compilation.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.datasets import make_classification
from daskdca.methods import SPDC, CoCoAPlus
from daskdca.methods.spdc import optimal_mixing

PLOTS = Path(__file__).resolve().parent / "plots"
FIG1_LAMS = (1e-3, 1e-4, 1e-5, 1e-6)
FIG1_PASSES = 100
FIG5_SPREADS = (0.25, 0.5, 1.0)
FIG5_LAM = 1e-5
FIG5_PASSES = (20, 50)


def fig1_data(n=500, d=500, seed=0):
    """[ZX17] §7.1: ``a ~ N(0, diag(j^-2))``, ``b = a.1 + N(0, 1)``."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d)) / np.arange(1, d + 1)
    return sp.csr_matrix(A), A @ np.ones(d) + rng.standard_normal(n)


def ridge_optimum(X, b, lam):
    n, d = X.shape
    A = X.toarray()
    x = np.linalg.solve(A.T @ A / n + lam * np.eye(d), A.T @ b / n)
    return 0.5 * np.mean((A @ x - b) ** 2) + 0.5 * lam * x @ x


def fit_history(X, y, loss, lam, solver, max_rounds):
    """``[(passes, primal, gap)]`` at every gap evaluation (about once per pass), from 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=0.0, max_rounds=max_rounds)
    return [(r.epochs, r.primal, r.gap) for r in m.history_], m


def at(history, passes, column):
    """The value of ``column`` at the first evaluation at or after ``passes`` passes."""
    after = [h for h in history if h[0] >= passes - 1e-9]
    return (after[0] if after else history[-1])[column]


def fig1(lams):
    X, b = fig1_data()
    n = X.shape[0]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    rows, curves = [], {}
    for lam in lams:
        p_star = ridge_optimum(X, b, lam)
        spdc, _ = fit_history(X, b, "squared", lam, SPDC(), FIG1_PASSES * n + 1)  # +1: the setup round
        sdca, _ = fit_history(X, b, "squared", lam, "sdca", FIG1_PASSES)
        s_spdc = at(spdc, FIG1_PASSES, 1) - p_star
        s_sdca = at(sdca, FIG1_PASSES, 1) - p_star
        # SDCA's P(w(alpha)) jumps from pass to pass: also its best of the last 10 passes
        best = min(p for e, p, _ in sdca if FIG1_PASSES - 10 < e <= FIG1_PASSES + 1e-9) - p_star
        kappa = norms.max() ** 2 / lam
        rows.append((lam, kappa / n, s_spdc, s_sdca, best))
        curves[lam] = ([(e, p - p_star) for e, p, _ in spdc], [(e, p - p_star) for e, p, _ in sdca])
    return rows, curves, float(norms.max()), float(norms.mean())


def fig5_data(spread, n=4000, d=2000, seed=1):
    with tempfile.TemporaryDirectory() as tmp:
        store = make_classification(f"{tmp}/c.zarr", n, d, nnz_per_row=20, row_norm_spread=spread, seed=seed,
                                    binary_values=False)
        X, y = store.read_all()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(X / norms.mean())  # R_bar = 1 ([ZX17] §7.3)
    return X, y, norms.max() / norms.mean()


def fig5(spreads):
    rows, curves = [], {}
    loss = daskdca.SmoothedHinge(gamma=1.0)
    for spread in spreads:
        X, y, ratio = fig5_data(spread)
        n = X.shape[0]
        rounds = max(FIG5_PASSES) * n + 1
        uni, _ = fit_history(X, y, loss, FIG5_LAM, SPDC(), rounds)
        wei, _ = fit_history(X, y, loss, FIG5_LAM, SPDC(sampling="weighted"), rounds)
        mix = optimal_mixing(ratio, 1.0, n, FIG5_LAM, 1.0)  # what the plan used: R = ratio, R_bar = 1
        rows.append((spread, ratio, mix) + tuple((at(uni, p, 2), at(wei, p, 2)) for p in FIG5_PASSES))
        curves[ratio] = ([(e, g) for e, _, g in uni], [(e, g) for e, _, g in wei])
    return rows, curves


def plot(c1, c5, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = max(len(c1), len(c5))
    fig, axes = plt.subplots(2, cols, figsize=(3.6 * cols, 6.4), squeeze=False)
    for ax, (lam, (spdc, sdca)) in zip(axes[0], c1.items()):
        for label, hist in (("SPDC", spdc), ("SDCA", sdca)):
            e, s = zip(*hist)
            ax.semilogy(e, np.maximum(s, 1e-16), label=label)
        ax.set_title(f"Fig. 1 ridge, lam={lam:g}")
        ax.set_xlabel("passes")
        ax.set_ylabel("P(x) - P*")
        ax.legend()
    for ax, (ratio, (uni, wei)) in zip(axes[1], c5.items()):
        for label, hist in (("uniform (Alg. 1)", uni), ("weighted (Alg. 3)", wei)):
            e, g = zip(*hist)
            ax.semilogy(e, np.maximum(g, 1e-16), label=label)
        ax.set_title(f"Fig. 5, R/R_bar={ratio:.1f}, lam={FIG5_LAM:g}")
        ax.set_xlabel("passes")
        ax.set_ylabel("gap P - D")
        ax.legend()
    for ax in list(axes[0][len(c1):]) + list(axes[1][len(c5):]):
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


DATA = Path(os.environ.get("DASKDCA_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
#: data set -> (file, features, lam): the side-by-side suite's settings (benchmarks/suite.py)
LOCAL_SETS = {"a9a": ("a9a.gz", 123, 1e-3), "ijcnn1": ("ijcnn1.bz2", 22, 1e-4)}
GLOBAL_BUDGET = 12.0  # seconds per fit of the global mini-batch rows (a), (a')
LOCAL_TOL = 1e-4
LOCAL_SOLVERS = {
    # the gap every quarter epoch (same iterates), so that the budget can stop them (once an epoch by default)
    "(a) global mini-batch SPDC, m = K": lambda n: SPDC(eval_every=-(-n // 8)),
    "(a') global mini-batch SPDC, m = 1024": lambda n: SPDC(batch_size=1024, eval_every=-(-n // 4096)),
    "(b) CoCoA+, SPDC local": lambda n: CoCoAPlus(local_solver="spdc"),
    "(c) CoCoA+, SDCA local": lambda n: CoCoAPlus(),
    "(d) CoCoA+, SDNA local": lambda n: CoCoAPlus(local_solver="sdna"),
}


def _load(name, lam=None):
    from sklearn.datasets import load_svmlight_file

    fname, d, default_lam = LOCAL_SETS[name]
    lam = default_lam if lam is None else lam
    X, y = load_svmlight_file(str(DATA / fname), n_features=d)
    return sp.csr_matrix(X, dtype=np.float64), np.where(y > 0, 1.0, -1.0), lam


def _to_tol(X, y, lam, solver, budget):
    """``(epochs, rounds, seconds, relative gap, converged)`` of a fit to ``LOCAL_TOL`` on 2 partitions, stopped
    at ``budget`` seconds."""
    start = time.perf_counter()

    def cap(record, state):
        return time.perf_counter() - start > budget

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=solver, tol=LOCAL_TOL, n_partitions=2,
                        max_rounds=10 ** 9, callback=cap)
    return m.n_epochs_, m.n_rounds_, time.perf_counter() - start, m.gap_ / abs(m.primal_), m.converged_


def local_solvers(quick, lam=None, budget=30.0):
    """Table rows ``(set, lam, kappa/n, method, epochs, rounds, seconds, rel gap, converged)``; ``lam`` None: the
    set's own, ``budget`` the seconds of each CoCoA+ fit."""
    X0, y0, _ = _load("a9a")
    for make in LOCAL_SOLVERS.values():  # compile every kernel first
        _to_tol(X0[:2100], y0[:2100], 1e-2, make(2100), 5.0)
    rows = []
    for name in ("a9a",) if quick else tuple(LOCAL_SETS):
        X, y, lam_set = _load(name, lam)
        R2 = float(X.multiply(X).sum(axis=1).max())
        kappa_n = R2 / (lam_set * 4.0 * X.shape[0])  # logistic: gamma = 4
        for label, make in LOCAL_SOLVERS.items():
            cap = GLOBAL_BUDGET if label.startswith("(a") else budget
            rows.append((name, lam_set, kappa_n, label) + _to_tol(X, y, lam_set, make(X.shape[0]), cap))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lam in {1e-3, 1e-6} and one spread (0.5)")
    parser.add_argument("--local-solvers", action="store_true",
                        help="SPDC across 2 partitions: global mini-batch rounds against CoCoA+ local solvers")
    parser.add_argument("--lam", type=float, default=None, help="--local-solvers: this lam on every set")
    parser.add_argument("--budget", type=float, default=30.0, help="--local-solvers: seconds per CoCoA+ fit")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.local_solvers:
        print(f"2 partitions, in process, logistic; to relative gap {LOCAL_TOL:g} (- : not within the budget)\n")
        print("| set | lam | kappa/n | method | epochs | rounds | seconds | rel. gap at stop |")
        print("|---|---|---|---|---|---|---|---|")
        for name, lam, kn, label, epochs, rounds, seconds, gap, ok in local_solvers(args.quick, args.lam,
                                                                                     args.budget):
            shown = (f"{epochs:.0f} | {rounds} | {seconds:.1f}" if ok
                     else f"- (>{epochs:.0f}) | {rounds} | >{seconds:.0f}")
            print(f"| {name} | {lam:g} | {kn:.3g} | {label} | {shown} | {gap:.1e} |")
        print(f"\n{time.perf_counter() - t0:.0f} s")
        return
    lams = (1e-3, 1e-6) if args.quick else FIG1_LAMS
    rows1, c1, R, R_bar = fig1(lams)
    print(f"Fig. 1 ridge n = d = 500, R = {R:.2f}, R_bar = {R_bar:.2f}; P - P* after {FIG1_PASSES} passes\n")
    print("| lam | kappa/n | SPDC | SDCA | SDCA, best of passes 91-100 | SPDC below SDCA (both) |")
    print("|---|---|---|---|---|---|")
    for lam, kn, a, b, best in rows1:
        print(f"| {lam:g} | {kn:.3g} | {a:.2e} | {b:.2e} | {best:.2e} | {'yes' if a < min(b, best) else 'no'} |")
    rows5, c5 = fig5((0.5,) if args.quick else FIG5_SPREADS)
    print(f"\nFig. 5 smoothed hinge, lam = {FIG5_LAM:g}, R_bar = 1; gap P - D after "
          f"{' and '.join(str(p) for p in FIG5_PASSES)} passes\n")
    print("| spread | R/R_bar | a* | " + " | ".join(f"uniform @{p} | weighted @{p}" for p in FIG5_PASSES)
          + " | weighted below uniform |")
    print("|---|---|---|" + "---|---|" * len(FIG5_PASSES) + "---|")
    for spread, ratio, mix, *pairs in rows5:
        cells = " | ".join(f"{u:.2e} | {w:.2e}" for u, w in pairs)
        print(f"| {spread} | {ratio:.1f} | {mix:.3f} | {cells} | {'yes' if pairs[-1][1] < pairs[-1][0] else 'no'} |")
    PLOTS.mkdir(exist_ok=True)
    path = PLOTS / ("spdc_claims_quick.png" if args.quick else "spdc_claims.png")
    plot(c1, c5, path)
    print(f"\nplot: {path.relative_to(PLOTS.parent.parent)}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
