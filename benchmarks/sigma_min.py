"""CoCoA+ with the data-dependent safe sigma'_min against the default sigma' = K.

CoCoA+ with adding (gamma = 1) uses ``sigma' = K`` (K partitions), which is
safe for any data.  The safe value for the data at hand is (Ma et al. 2015,
"Adding vs. Averaging in Distributed Primal-Dual Optimization", ICML,
arXiv:1502.03508, §3; Ma et al. 2017, "Distributed optimization with
arbitrary local solvers", Optimization Methods & Software)::

    sigma'_min = gamma * max_{alpha != 0} ||A alpha||^2 / sum_k ||A alpha_[k]||^2

(``A`` has the rows ``x_i`` as columns, ``alpha_[k]`` keeps partition k's
coordinates); any ``sigma' >= sigma'_min`` is safe.  Equivalently
``sigma'_min = lambda_max(sum_k P_k)`` with ``P_k`` the orthogonal projector of
R^d onto the span of partition k's rows, so ``1 <= sigma'_min <= K``, and
``sigma'_min = K`` exactly when some non-zero vector lies in every partition's
row span.

For each data set and K it takes the seeded random partitions of an in-process
fit with ``n_partitions=K, random_state=0`` (``daskdca.driver.in_process_partitions``),
computes an orthonormal basis ``Q_k`` of each partition's row span by a
pivoted QR of the dense ``X_k^T`` (restricted to the features the partition
uses; rank cut at 1e-10 of the largest ``|R_jj|``), and ``lambda_max(sum_k
Q_k Q_k^T)``: densely for ``d <= 2000``, else by Lanczos on that operator.  A
(data, K) cell whose QR would need more than ``--max-gflop`` (about 60 s
here) or 2 GiB is skipped.  Then it counts the rounds of plain CoCoA+
(``CoCoAPlus(acceleration=None)``, logistic loss) to a certified relative gap
``--tol`` with ``sigma' = K`` and with ``sigma' = sigma'_min`` (``>N``: not
certified in ``--max-rounds``), and checks each certificate in NumPy from
``coef_`` and ``dual_coef_``.  Where ``sigma'_min`` comes out as ``K`` to the
last bit the two fits are the same, and it runs one.

Usage::

    python benchmarks/sigma_min.py                # the table (benchmarks/RESULTS.md); --out FILE writes it there too
    python benchmarks/sigma_min.py --self-check   # sigma'_min against a brute-force generalized eigenvalue
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.linalg as spl
from scipy.special import xlogy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import daskdca  # noqa: E402
from daskdca.driver import in_process_partitions  # noqa: E402
from suite import load_data  # noqa: E402

RANK_CUT = 1e-10


def partition_rows(X, K, random_state=0):
    """The CSR rows of each of the K partitions of an in-process fit (the library's own assignment)."""
    parts, _ = in_process_partitions(X, np.ones(X.shape[0]), K, random_state)
    return [p.whole().csr() for p in parts]


def qr_cost(blocks):
    """``(flop, bytes)`` of the pivoted QRs of the dense ``X_k^T`` on the features each partition uses."""
    flop = mem = 0.0
    for Xk in blocks:
        n_k, d_k = Xk.shape[0], np.unique(Xk.indices).size
        flop += 2.0 * d_k * n_k * min(d_k, n_k)
        mem = max(mem, 3.0 * 8 * d_k * n_k)  # X_k^T, Q, R
    return flop, mem


def span_basis(Xk):
    """``(features, Q)``: an orthonormal basis of the span of ``Xk``'s rows, on the features they use."""
    cols = np.unique(Xk.indices)
    Q, R, _ = sl.qr(Xk[:, cols].T.toarray(), mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > RANK_CUT * diag[0])) if diag.size else 0
    return cols, Q[:, :rank]


def sigma_min(blocks, d, dense_limit=2000):
    """``lambda_max(sum_k P_k)`` for the row blocks ``blocks`` (each ``n_k x d``)."""
    bases = [span_basis(Xk) for Xk in blocks]
    if d <= dense_limit:
        M = np.zeros((d, d))
        for cols, Q in bases:
            M[np.ix_(cols, cols)] += Q @ Q.T
        return float(np.linalg.eigvalsh(M)[-1])

    def matvec(v):
        v = np.ravel(v)
        out = np.zeros(d)
        for cols, Q in bases:
            out[cols] += Q @ (Q.T @ v[cols])
        return out

    op = spl.LinearOperator((d, d), matvec=matvec, dtype=np.float64)
    return float(spl.eigsh(op, k=1, which="LA", tol=1e-12, return_eigenvectors=False)[0])


@dataclass(frozen=True)
class CoCoAPlusSigma(daskdca.CoCoAPlus):
    """Plain CoCoA+ whose local subproblems use ``sigma' = sigma_prime`` (None: the library's ``K``)."""

    sigma_prime: float | None = None

    def setup(self, info, ops):
        plan = super().setup(info, ops)  # acceleration=None: LocalSDCAPlan(..., sigma_prime=K)
        return plan if self.sigma_prime is None else replace(plan, sigma_prime=float(self.sigma_prime))


def logistic_certificate(X, y, lam, w, alpha):
    """``(P(w), D(alpha))`` in NumPy, with ``alpha_i = y_i b_i``, ``b_i`` in [0, 1]."""
    n = X.shape[0]
    primal = np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.5 * lam * w @ w
    b = np.clip(y * alpha, 0.0, 1.0)
    entropy = -(xlogy(b, b) + xlogy(1.0 - b, 1.0 - b))  # -phi*(-alpha_i)
    v = X.T @ alpha / (lam * n)
    return primal, np.mean(entropy) - 0.5 * lam * v @ v


def rounds(X, y, lam, K, s, tol, max_rounds):
    """Rounds of plain CoCoA+ with ``sigma' = s`` to a certified ``tol`` (``>N`` if not), the certificate checked."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a capped fit warns; the table says '>N'
        m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=CoCoAPlusSigma(acceleration=None, sigma_prime=s),
                        n_partitions=K, tol=tol, max_rounds=max_rounds, random_state=0)
    P, D = logistic_certificate(X, y, lam, np.ravel(m.coef_), np.ravel(m.dual_coef_))
    if not (abs(P - float(m.primal_)) <= 1e-9 * abs(P) and abs(D - float(m.dual_)) <= 1e-9 * abs(P)):
        raise AssertionError(f"certificate does not check: fit P={m.primal_} D={m.dual_}, NumPy P={P} D={D}")
    if m.converged_ and (P - D) > tol * abs(P) * (1 + 1e-9):
        raise AssertionError(f"converged_ with relative gap {(P - D) / abs(P):.3g} > {tol}")
    return f"{m.n_rounds_}" if m.converged_ else f">{m.n_rounds_}"


def self_check():
    """sigma'_min of both code paths against the generalized eigenvalue of ``(A^T A, blockdiag(A_k^T A_k))``."""
    rng = np.random.default_rng(0)
    ok = True
    for n, d, K in ((12, 8, 3), (20, 12, 4), (9, 30, 3)):
        X = sp.random(n, d, density=0.5, random_state=rng, format="csr")
        X = sp.csr_matrix(X + sp.csr_matrix((np.ones(n), (np.arange(n), rng.integers(0, d, n))), shape=(n, d)))
        blocks = partition_rows(X, K)
        A = np.hstack([Xk.toarray().T for Xk in blocks])  # d x n, partition after partition
        B = sl.block_diag(*[Xk.toarray() @ Xk.toarray().T for Xk in blocks])
        brute = float(sl.eigh(A.T @ A, B, eigvals_only=True)[-1])
        dense, lanczos = sigma_min(blocks, d), sigma_min(blocks, d, dense_limit=0)
        good = abs(dense - brute) < 1e-8 * K and abs(lanczos - brute) < 1e-8 * K
        ok &= good
        print(f"n={n} d={d} K={K}: brute force {brute:.12f}, dense {dense:.12f}, Lanczos {lanczos:.12f}: "
              f"{'ok' if good else 'MISMATCH'}")
    # n_k >= d and rows in general position: every partition spans R^d, so sigma'_min = K
    X = sp.csr_matrix(rng.standard_normal((40, 5)))
    full = sigma_min(partition_rows(X, 4), 5)
    ok &= abs(full - 4) < 1e-10
    print(f"n=40 d=5 K=4 (n_k > d): {full:.12f} (expected 4)")
    print("self-check", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="a9a,w8a,ijcnn1,reuters,rcv1_1k")
    parser.add_argument("--partitions", default="2,4,8,16,32,64")
    parser.add_argument("--lams", default="1e-4,1e-5")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-rounds", type=int, default=300)
    parser.add_argument("--max-gflop", type=float, default=100.0, help="skip a cell whose QRs need more")
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--work-dir", default="/tmp/daskdca-bench")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    parser.add_argument("--self-check", action="store_true")
    args = parser.parse_args(argv)
    if args.self_check:
        return self_check()
    lams = [float(v) for v in args.lams.split(",")]
    header = ["data", "d", "K", "sigma'_min", "sigma'_min / K"]
    for lam in lams:
        header += [f"rounds sigma'=K, lam {lam:g}", f"rounds sigma'_min, lam {lam:g}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    print("\n".join(lines), flush=True)
    for name in args.datasets.split(","):
        try:
            X, y = load_data(name, args.data_dir, args.work_dir)
        except (OSError, KeyError) as error:
            print(f"{name}: not loaded ({error})", file=sys.stderr)
            continue
        d = X.shape[1]
        for K in (int(k) for k in args.partitions.split(",")):
            blocks = partition_rows(X, K)
            flop, mem = qr_cost(blocks)
            row = [name, str(d), str(K)]
            if flop > args.max_gflop * 1e9 or mem > 2 * 2**30:
                row += [f"skipped ({flop / 1e9:.0f} GFLOP, {mem / 2**30:.1f} GiB)", "-"] + ["-"] * 2 * len(lams)
            else:
                start = time.perf_counter()
                s = min(sigma_min(blocks, d), float(K))  # K is always safe; clip rounding above it
                print(f"{name} K={K}: sigma'_min {s:.6f} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
                row += [f"{s:.4f}", f"{s / K:.3f}"]
                for lam in lams:
                    plain = rounds(X, y, lam, K, None, args.tol, args.max_rounds)
                    # sigma'_min = K to the last bit is the same plan, and so the same fit
                    row += [plain, plain if s == K else rounds(X, y, lam, K, s, args.tol, args.max_rounds)]
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
