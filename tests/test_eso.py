"""ESO validity of every shipped weight formula, and why it matters.

Weights ``v`` are valid for a sampling when ``M <= Diag(v)`` with
``M_ij = (n/b) P(i, j both sampled) (X X^T)_ij`` (Takáč et al. 2015
[TRS15], Definition 1; docs/references.md, note N1), i.e. ``lambda_max(Diag(v)^-1/2 M Diag(v)^-1/2) <= 1``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from daskdca.kernels import eso
from daskdca.kernels.sampling import minibatch_schedule
from daskdca.kernels.sdca import minibatch_sdca
from daskdca.losses import Hinge
from daskdca.partitions import UNWEIGHTED

import reference_kernels as ref
from conftest import load_dataset

N, D = 48, 30


def _family(name, seed=0):
    rng = np.random.default_rng(seed)
    if name == "gaussian":
        return rng.standard_normal((N, D))
    if name == "sparse":
        return sp.random(N, D, density=0.1, random_state=rng).toarray()
    if name == "identical_e1":  # every row is e_1: sigma^2 = 1
        X = np.zeros((N, D))
        X[:, 0] = 1.0
        return X
    if name == "clustered":  # correlated blocks of rows
        centers = rng.standard_normal((4, D))
        return centers[np.arange(N) % 4] + 0.05 * rng.standard_normal((N, D))
    if name == "positive_sparse":
        return np.abs(sp.random(N, D, density=0.15, random_state=rng).toarray())
    raise ValueError(name)


FAMILIES = ["gaussian", "sparse", "identical_e1", "clustered", "positive_sparse"]


def _exact_sigma2(X):
    norms = np.linalg.norm(X, axis=1)
    Xn = X[norms > 0] / norms[norms > 0, None]
    return np.linalg.eigvalsh(Xn @ Xn.T).max() / X.shape[0]


def _eso_ratio(X, v, pair_prob, b):
    """``lambda_max(Diag(v)^-1/2 M Diag(v)^-1/2)`` over the non-zero rows."""
    n = X.shape[0]
    G = X @ X.T
    M = (n / b) * pair_prob * G
    keep = np.linalg.norm(X, axis=1) > 0
    s = 1.0 / np.sqrt(v[keep])
    return np.linalg.eigvalsh(s[:, None] * M[np.ix_(keep, keep)] * s[None, :]).max()


def _standard_pairs(n, b):
    P = np.full((n, n), b * (b - 1) / (n * (n - 1)))
    np.fill_diagonal(P, b / n)
    return P


def _distributed_pairs(n, b, c):
    s, tau = n // c, b // c
    part = np.arange(n) // s
    P = np.full((n, n), (tau / s) ** 2)
    same = part[:, None] == part[None, :]
    P[same] = tau * (tau - 1) / (s * (s - 1))
    np.fill_diagonal(P, tau / s)
    return P


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("b", [1, 2, 5, 12, 48])
def test_standard_sampling_weights_are_valid(family, b):
    X = _family(family)
    sq = (X * X).sum(axis=1)
    P = _standard_pairs(N, b)
    sigma2 = _exact_sigma2(X)
    assert _eso_ratio(X, eso.beta_standard(N, b, sigma2) * sq, P, b) <= 1 + 1e-9
    # the estimate the solvers use is at least as safe as the exact value
    sigma2_est = eso.sigma2_power(sp.csr_matrix(X))
    assert sigma2_est >= sigma2 * (1 - 1e-9)
    assert _eso_ratio(X, eso.beta_standard(N, b, sigma2_est) * sq, P, b) <= 1 + 1e-9
    assert _eso_ratio(X, eso.v_sparse_standard(sp.csr_matrix(X), b), P, b) <= 1 + 1e-9


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("c, b", [(2, 2), (2, 4), (2, 12), (3, 3), (3, 6), (4, 8), (4, 48), (6, 6), (6, 24)])
def test_distributed_sampling_weights_are_valid(family, c, b):
    X = _family(family)
    sq = (X * X).sum(axis=1)
    P = _distributed_pairs(N, b, c)
    sigma2 = _exact_sigma2(X)
    assert _eso_ratio(X, eso.beta_distributed(N, b, c, sigma2) * sq, P, b) <= 1 + 1e-9
    assert _eso_ratio(X, eso.beta_distributed_tight(N, b, c, sigma2) * sq, P, b) <= 1 + 1e-9


def test_printed_row_nnz_formula_is_invalid():
    """[TRS15] §4.3 prints the sparse weights with row nnz; the check must catch it."""
    X = _family("identical_e1")
    b = 12
    row_nnz = (X != 0).sum(axis=1)
    v_printed = (X * X).sum(axis=1) * (1 + (b - 1) * (row_nnz - 1) / (N - 1))
    assert _eso_ratio(X, v_printed, _standard_pairs(N, b), b) > 5.0


def test_beta_standard_range_and_extremes():
    # 1 <= beta <= b; orthogonal rows give 1, collinear rows give b
    assert eso.beta_standard(100, 10, 1 / 100) == pytest.approx(1.0)
    assert eso.beta_standard(100, 10, 1.0) == pytest.approx(10.0)
    assert eso.beta_standard(100, 100, 0.3) == pytest.approx(30.0)  # b = n: n sigma^2


def test_sigma2_power_bounds_on_real_data():
    X, _ = load_dataset("a9a")
    X = X[:3000]
    exact = _exact_sigma2(X.toarray())
    est = eso.sigma2_power(X)
    assert exact * (1 - 1e-9) <= est <= min(1.0, eso.sigma2_upper_bound_column_nnz(X)) + 1e-12
    assert est <= 1.1 * exact


def _run_minibatch(X, y, lam, v, b, n_iter, seed=0):
    X = sp.csr_matrix(X)
    n, d = X.shape
    lam_n = lam * n
    alpha, w = np.zeros(n), np.zeros(d)
    batches = minibatch_schedule(seed, 0, n_iter, np.array([0, n], dtype=np.int64), b)
    minibatch_sdca(X.indptr, X.indices, X.data, y, UNWEIGHTED, v / lam_n, alpha, w, w, batches,
                   int(Hinge().kind), 0.0, lam_n)
    return alpha, w


def test_seed002_toy_naive_oscillates_safe_converges():
    """[TBRS13] §4.1: Q = [[1, 1], [1, 1]], lam = 1/n = 1/2, b = 2."""
    X = np.array([[1.0], [1.0]])
    y = np.array([1.0, 1.0])
    lam = 0.5
    sq = np.ones(2)
    for n_iter, expected in ((1, [1.0, 1.0]), (2, [0.0, 0.0]), (3, [1.0, 1.0])):
        alpha, _ = _run_minibatch(X, y, lam, sq, 2, n_iter)  # naive: v = ||x||^2
        np.testing.assert_array_equal(alpha, expected)
        dual, _ = ref.dual_objective(sp.csr_matrix(X), y, alpha, lam, "hinge")
        assert dual == pytest.approx(0.0)
    beta = eso.beta_standard(2, 2, eso.sigma2_power(sp.csr_matrix(X)))
    assert beta == pytest.approx(2.0)
    alpha, _ = _run_minibatch(X, y, lam, beta * sq, 2, 1)
    np.testing.assert_allclose(alpha, [0.5, 0.5])
    dual, _ = ref.dual_objective(sp.csr_matrix(X), y, alpha, lam, "hinge")
    assert dual == pytest.approx(0.25)  # the optimum


def test_naive_minibatch_fails_where_safe_converges():
    """Correlated clusters with b >> 1/sigma^2."""
    rng = np.random.default_rng(0)
    n, d, b = 400, 50, 50
    centers = rng.standard_normal((8, d))
    X = centers[rng.integers(0, 8, n)] + 0.1 * rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n))
    lam = 1e-2
    Xs = sp.csr_matrix(X)
    sq = np.ones(n)
    n_iter = 60 * n // b  # 60 epochs
    gaps = {}
    for name, v in (("naive", sq), ("safe", eso.beta_standard(n, b, eso.sigma2_power(Xs)) * sq)):
        alpha, w = _run_minibatch(X, y, lam, v, b, n_iter)
        dual, w_alpha = ref.dual_objective(Xs, y, alpha, lam, "hinge")
        primal = np.maximum(0, 1 - y * (X @ w_alpha)).mean() + lam / 2 * w_alpha @ w_alpha
        gaps[name] = primal - dual
    # measured: naive 0.069, safe 0.0008 (n sigma^2 = 100)
    assert gaps["safe"] < 0.005
    assert gaps["naive"] > 20 * gaps["safe"]


# --- unequal partitions: tau_c-nice inside partition c, independent across them


def _unequal_pairs(sizes, taus):
    """Exact ``P(i, j in S)`` and ``p_i`` for tau_c-nice sampling inside each partition."""
    part = np.repeat(np.arange(len(sizes)), sizes)
    p = (np.asarray(taus) / np.asarray(sizes))[part]
    P = np.outer(p, p)
    for c, (s, t) in enumerate(zip(sizes, taus)):
        idx = np.flatnonzero(part == c)
        P[np.ix_(idx, idx)] = t * (t - 1) / (s * (s - 1)) if s > 1 else 0.0
    np.fill_diagonal(P, p)
    return P, p


def _nonuniform_ratio(X, v, P, p):
    """``lambda_max(Diag(p v)^-1/2 (P o X X^T) Diag(p v)^-1/2)``: <= 1 iff the weights are safe."""
    s = 1.0 / np.sqrt(p * v)
    return np.linalg.eigvalsh(s[:, None] * (P * (X @ X.T)) * s[None, :]).max()


def _short_duplicate_partition(seed=0):
    """Three partitions of 16 random rows and a short one of 4 near-duplicate rows."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((52, D))
    X[48:] = X[48] + 1e-3 * rng.standard_normal((4, D))
    return X, [16, 16, 16, 4]


@pytest.mark.parametrize("family", FAMILIES + ["short_duplicates"])
@pytest.mark.parametrize("b", [4, 8, 20, 40])
def test_unequal_partition_weights_are_valid(family, b):
    from daskdca.methods.minibatch import partition_batch_sizes, partition_betas

    if family == "short_duplicates":
        X, sizes = _short_duplicate_partition()
    else:
        X, sizes = _family(family), [20, 14, 9, 5]
    taus = partition_batch_sizes(b, sizes)
    sigma2 = _exact_sigma2(X)
    betas = partition_betas(sizes, taus, sigma2)
    v = np.repeat(betas, sizes) * (X * X).sum(axis=1)
    P, p = _unequal_pairs(sizes, taus)
    keep = v > 0
    assert _nonuniform_ratio(X[keep], v[keep], P[np.ix_(keep, keep)], p[keep]) <= 1 + 1e-10


@pytest.mark.parametrize("taus", [(1, 1, 1, 1), (1, 1, 1, 4), (16, 16, 16, 4), (3, 8, 1, 2)])
def test_unequal_partition_weights_are_valid_for_any_tau(taus):
    from daskdca.methods.minibatch import partition_betas

    X, sizes = _short_duplicate_partition(1)
    sigma2 = _exact_sigma2(X)
    v = np.repeat(partition_betas(sizes, taus, sigma2), sizes) * (X * X).sum(axis=1)
    P, p = _unequal_pairs(sizes, taus)
    assert _nonuniform_ratio(X, v, P, p) <= 1 + 1e-10


def test_equal_partition_beta_fails_on_a_short_duplicate_partition():
    """Today's failure: the equal-partition beta (larger size) with tau rows from every partition."""
    X, sizes = _short_duplicate_partition()
    tau = 4  # (C, b)-distributed sampling: the same tau from each partition, b = 16
    sigma2 = _exact_sigma2(X)
    beta = eso.beta_distributed_tight(max(sizes) * len(sizes), tau * len(sizes), len(sizes), sigma2)
    v = beta * (X * X).sum(axis=1)
    P, p = _unequal_pairs(sizes, [tau] * len(sizes))
    assert _nonuniform_ratio(X, v, P, p) > 1.5


def test_minibatch_converges_with_a_short_partition_of_duplicates():
    """Partitions of (100, 100, 100, 10) rows, the short one ten duplicates, b = 40."""
    import daskdca
    from daskdca.driver import InProcess, run_rounds
    from daskdca.methods.base import DataInfo
    from daskdca.partitions import MemoryPartition, rows_from_csr
    from daskdca.problem import max_column_nnz

    X, y = load_dataset("a9a")
    X, y = X[:310].toarray(), y[:310].copy()
    X[300:], y[300:] = X[0], y[0]
    sizes = [100, 100, 100, 10]
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    parts = [MemoryPartition(rows_from_csr(sp.csr_matrix(X[a:b]), y[a:b]), np.array([0, b - a]))
             for a, b in zip(bounds[:-1], bounds[1:])]
    info = DataInfo(310, X.shape[1], tuple(sizes), Hinge(), 1e-3, max_column_nnz(sp.csr_matrix(X)))
    executor = InProcess(parts, info, 0)
    plan = executor.setup(daskdca.MinibatchSDCA(batch_size=40))
    assert plan.taus == (13, 13, 13, 1)  # about b s_c / n from each: every row sampled at about b / n
    # The equal-partition beta left a relative gap of 0.84 and a primal 2.7x the
    # optimum after 4,000 rounds here; the safe step converges,
    # slowly (beta ~ 20 on these correlated rows): 1e-1 in about 7,200 rounds.
    result = run_rounds(executor, plan, tol=5e-2, max_rounds=20_000)
    assert result.converged and result.gap <= 5e-2 * result.primal
    ref_model = daskdca.fit(X, y, loss="hinge", lam=1e-3, tol=1e-8, max_rounds=5000)
    assert result.dual <= ref_model.primal_ <= result.primal <= ref_model.primal_ * (1 + 5e-2)
