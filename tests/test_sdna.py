"""SDNA (Qu et al. 2016 [QRTF16], solver="sdna"): kernels against the NumPy reference, invariants, LIBLINEAR.

The objective is ``P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2``; SDNA
maximises its dual ``D(alpha)`` exactly over random sets of ``tau`` coordinates.
"""

import itertools
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.kernels import eso
from daskdca.kernels.sdca import local_sdca, minibatch_sdca
from daskdca.kernels.sdna import cholesky_solve, local_sdna, sdna_batches, solve_subproblem
from daskdca.losses import get_loss
from daskdca.methods import SDNA, check_supported
from daskdca.partitions import UNWEIGHTED

import reference_kernels as ref
import reference_sdna as rsdna
from conftest import load_dataset, random_sparse
from references import liblinear, primal_objective

LOSSES = ["hinge", "smoothed_hinge", "squared_hinge", "logistic", "squared"]


def _data(n=40, d=30, seed=0, loss="logistic"):
    X = random_sparse(n, d, 0.3, seed)
    rng = np.random.default_rng(seed + 1)
    y = rng.standard_normal(n) if loss == "squared" else np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def _kernel_args(X, y):
    X = sp.csr_matrix(X)
    return X.indptr.astype(np.int64), X.indices, X.data, np.asarray(y, dtype=np.float64)


def _feasible_alpha(y, loss, seed):
    """A dual point strictly inside the domain (``b = y alpha`` in (0, 1))."""
    b = np.random.default_rng(seed).uniform(0.05, 0.95, y.shape[0])
    return b if loss == "squared" else y * b


# --- the numba kernel against the NumPy reference, on the same index sequence -----------------------------------

@pytest.mark.parametrize("sigma", [1.0, 3.0])
@pytest.mark.parametrize("loss", LOSSES)
def test_kernel_equals_reference_on_the_same_sets(loss, sigma):
    X, y = _data(loss=loss)
    n, d = X.shape
    lam_n = 0.5 * n
    batches = sdna_batches(11, 3, 0, n, 5, 12)
    assert all(np.unique(b).size == 5 for b in batches)
    alpha0 = _feasible_alpha(y, loss, 2)
    u0 = np.random.default_rng(3).standard_normal(d) * 0.1
    alpha, u, dw = alpha0.copy(), u0.copy(), np.zeros(d)
    steps = local_sdna(*_kernel_args(X, y), alpha, u, dw, batches, int(get_loss(loss).kind), 1.0, lam_n, sigma,
                       True)
    assert steps == 60
    a_ref, u_ref, dw_ref = rsdna.local_sdna(X, y, alpha0, u0, np.zeros(d), batches, loss, lam_n, sigma)
    np.testing.assert_allclose(alpha, a_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(u, u_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dw, dw_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("sigma", [1.0, 2.0])
@pytest.mark.parametrize("loss", LOSSES)
def test_tau_one_gives_the_sdca_iterates(loss, sigma):
    """tau = 1: each SDNA step is SDCA's closed-form step (docs/references.md, note N7), index for index.

    Through ``fit`` SDNA(batch_size=1) samples like ``SDCA(sampling="iid")``
    (one uniform row per step, with replacement across steps) but from other
    streams, so the iterates are compared here, on the same row sequence.
    """
    X, y = _data(loss=loss, seed=5)
    n, d = X.shape
    order = np.random.default_rng(0).integers(0, n, 200)
    args = _kernel_args(X, y)
    kind = int(get_loss(loss).kind)
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    a1, u1, w1 = np.zeros(n), np.zeros(d), np.zeros(d)
    a2, u2, w2 = np.zeros(n), np.zeros(d), np.zeros(d)
    local_sdna(*args, a1, u1, w1, order[:, None], kind, 1.0, 2.0, sigma, True)
    local_sdca(*args, UNWEIGHTED, sqnorm, a2, u2, w2, order, kind, 1.0, 2.0, sigma, True, True)  # exact steps
    np.testing.assert_allclose(a1, a2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(u1, u2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w1, w2, rtol=1e-12, atol=1e-14)


# --- the subproblem solvers against brute force ----------------------------------------------------------------------

def _brute_force(Q, c, alpha_S, y_S, loss):
    """``argmin Phi`` by L-BFGS-B in ``b = y (alpha + h)`` with the domain as bounds."""
    conj = lambda a: sum(ref.conjugate(loss, yj, aj) for yj, aj in zip(y_S, a))  # noqa: E731

    def fun(b):
        a = y_S * b
        h = a - alpha_S
        return c @ h + 0.5 * h @ Q @ h + conj(a)

    lo, hi = {"hinge": (0, 1), "smoothed_hinge": (0, 1), "squared_hinge": (0, None),
              "logistic": (1e-12, 1 - 1e-12)}[loss]
    best = None
    for start in (np.full(len(c), 0.5), y_S * alpha_S):
        res = scipy.optimize.minimize(fun, start, method="L-BFGS-B", bounds=[(lo, hi)] * len(c),
                                      options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
        if best is None or res.fun < best.fun:
            best = res
    return y_S * best.x, best.fun


@pytest.mark.parametrize("duplicates", [False, True], ids=["distinct-rows", "duplicate-rows"])
@pytest.mark.parametrize("loss", ["hinge", "smoothed_hinge", "squared_hinge", "logistic"])
def test_subproblem_solvers_against_brute_force(loss, duplicates):
    rng = np.random.default_rng(7)
    XS = rng.standard_normal((5, 3))
    if duplicates:  # Q singular (one-hot data such as mushrooms; docs/references.md, note N7)
        XS[3] = XS[1]
        XS[4] = XS[0]
    Q = XS @ XS.T / 2.0
    c = rng.standard_normal(5)
    y_S = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    alpha_S = _feasible_alpha(y_S, loss, 8)
    a_ours = solve_subproblem(Q, c, alpha_S, y_S, int(get_loss(loss).kind), 1.0)
    phi_ours = rsdna.phi(Q, c, alpha_S, y_S, a_ours, loss)
    a_bf, phi_bf = _brute_force(Q, c, alpha_S, y_S, loss)
    assert np.isfinite(phi_ours)
    assert phi_ours <= phi_bf + 1e-10 * (1 + abs(phi_bf))
    if not (duplicates and loss == "hinge"):  # otherwise the minimiser is not unique
        np.testing.assert_allclose(a_ours, a_bf, atol=1e-5)
    if loss == "logistic":
        b = y_S * a_ours
        assert np.all((b > 0) & (b < 1))


def test_squared_subproblem_is_the_linear_solve_and_cholesky_survives_a_singular_matrix():
    rng = np.random.default_rng(9)
    XS = rng.standard_normal((6, 4))
    Q = XS @ XS.T
    c, alpha_S, y_S = rng.standard_normal(6), rng.standard_normal(6), rng.standard_normal(6)
    a = solve_subproblem(Q, c, alpha_S, y_S, int(get_loss("squared").kind), 0.0)
    np.testing.assert_allclose(a - alpha_S, np.linalg.solve(Q + np.eye(6), y_S - c - alpha_S), rtol=1e-12)
    # rank 4 of 6: the plain factorisation fails, the jitter (note N7) gives a finite least-squares-like answer
    x = cholesky_solve(Q, Q @ np.ones(6))
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(Q @ x, Q @ np.ones(6), atol=1e-6)


# --- invariants of the solves ------------------------------------------------------------------------------------------

def test_squared_loss_with_tau_n_is_optimal_after_one_step():
    X, y = _data(n=60, d=20, loss="squared", seed=3)
    m = daskdca.fit(X, y, loss="squared", lam=0.05, solver=SDNA(batch_size=60), tol=1e-12, max_rounds=3)
    assert m.converged_ and m.n_rounds_ == 1
    assert m.gap_ <= 1e-12 * m.primal_
    # the dual optimum solves (X X^T / (lam n) + I) alpha = y
    Xd = X.toarray()
    alpha_star = np.linalg.solve(Xd @ Xd.T / (0.05 * 60) + np.eye(60), y)
    np.testing.assert_allclose(m.dual_coef_, alpha_star, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_partitions", [1, 2])
@pytest.mark.parametrize("loss", LOSSES)
def test_the_dual_never_decreases(loss, n_partitions):
    X, y = load_dataset("heart")
    with pytest.warns(ConvergenceWarning):
        m = daskdca.fit(X, y, loss=loss, lam=1e-3, solver=SDNA(batch_size=8), tol=0.0, max_rounds=25,
                        n_partitions=n_partitions)
    duals = np.array([r.dual for r in m.history_])
    assert np.all(np.diff(duals) >= -1e-13 * np.abs(duals[1:]))


@pytest.mark.parametrize("loss", LOSSES)
def test_the_sdna_step_rises_at_least_as_much_as_the_minibatch_sdca_step(loss):
    """Same state, same set: SDNA maximises D over the set; safe-ESO mini-batch SDCA is one point of it."""
    X, y = _data(n=60, d=8, loss=loss, seed=11)  # d < tau: correlated rows
    n, d = X.shape
    lam = 0.02
    lam_n = lam * n
    alpha0 = _feasible_alpha(y, loss, 12)
    w0 = np.asarray(X.T @ alpha0).ravel() / lam_n
    kind = int(get_loss(loss).kind)
    args = _kernel_args(X, y)
    sigma2 = eso.sigma2_power(X)
    for t, S in enumerate(sdna_batches(5, 0, 0, n, 12, 6)):
        beta = eso.beta_standard(n, 12, sigma2)
        q = beta * np.asarray(X.multiply(X).sum(axis=1)).ravel() / lam_n
        a_sdca, w_sdca = alpha0.copy(), w0.copy()
        minibatch_sdca(*args, UNWEIGHTED, q, a_sdca, w0, w_sdca, S[None, :], kind, 1.0, lam_n)
        a_sdna, w_sdna = alpha0.copy(), w0.copy()
        local_sdna(*args, a_sdna, w_sdna, np.empty(0), S[None, :], kind, 1.0, lam_n, 1.0, False)
        d0 = ref.dual_objective(X, y, alpha0, lam, loss)[0]
        d_sdca = ref.dual_objective(X, y, a_sdca, lam, loss)[0]
        d_sdna = ref.dual_objective(X, y, a_sdna, lam, loss)[0]
        assert d_sdca >= d0 - 1e-13  # the ESO is safe
        assert d_sdna >= d_sdca - 1e-12 * abs(d_sdca)
        assert d_sdna > d_sdca  # strictly, on correlated rows
        # the increase is exactly -(Phi(h) - Phi(0)) / n (docs/references.md, note N7)
        XS = X[S].toarray()
        Q, c = XS @ XS.T / lam_n, XS @ w0
        dphi = rsdna.phi(Q, c, alpha0[S], y[S], a_sdna[S], loss) - rsdna.phi(Q, c, alpha0[S], y[S], alpha0[S], loss)
        assert d_sdna - d0 == pytest.approx(-dphi / n, rel=1e-9, abs=1e-14)


def test_the_papers_three_by_three_example():
    """[QRTF16] §2.3: sigma_1 = 0.3350, sigma_2 = 1.333e-4, sigma_3 = 0.333e-4 (printed "sigma_2")."""
    M = np.array([[1.0, 0.99, 0.9999], [0.99, 1.0, 0.99], [0.9999, 0.99, 1.0]])
    sets = [(0, 1), (1, 2), (2, 0)]  # 2-nice on {1, 2, 3}: each pair with probability 1/3
    p = np.full(3, 2 / 3)
    v = np.full(3, 2.0)
    E_inv = np.zeros((3, 3))
    E_M = np.zeros((3, 3))
    for S in sets:
        idx = np.ix_(S, S)
        E_inv[idx] += np.linalg.inv(M[idx]) / 3
        E_M[idx] += M[idx] / 3
    G_half = _sqrtm(M)  # G = M
    sigma1 = np.linalg.eigvalsh(G_half @ E_inv @ G_half).min()
    Dp = np.diag(p)
    sigma2 = np.linalg.eigvalsh(G_half @ Dp @ np.linalg.inv(E_M) @ Dp @ G_half).min()
    sigma3 = np.linalg.eigvalsh(G_half @ Dp @ np.diag(1 / v) @ G_half).min()
    np.testing.assert_allclose(E_inv[0], [1683.50, -16.58, -1666.58], atol=0.01)
    assert sigma1 == pytest.approx(0.335008, abs=1e-6)
    assert sigma2 == pytest.approx(1.33320e-4, rel=1e-5)
    assert sigma3 == pytest.approx(3.33333e-5, rel=1e-5)
    assert sigma1 / sigma3 == pytest.approx(10050.25, rel=1e-5)
    assert np.linalg.eigvalsh(Dp @ np.diag(v) - E_M).min() == pytest.approx(0.004464, abs=1e-6)  # ESO (9)
    # Method 1 is exactly SDNA's step on f(x) = x^T M x / 2: it minimises f over the set
    x = np.array([1.0, -2.0, 3.0])
    S = list(sets[0])
    h = np.zeros(3)
    h[S] = -np.linalg.solve(M[np.ix_(S, S)], (M @ x)[S])
    best = scipy.optimize.minimize(lambda z: 0.5 * (x + np.r_[z, 0]) @ M @ (x + np.r_[z, 0]), np.zeros(2)).fun
    assert 0.5 * (x + h) @ M @ (x + h) == pytest.approx(best, abs=1e-8)


def _sqrtm(M):
    vals, vecs = np.linalg.eigh(M)
    return vecs @ np.diag(np.sqrt(vals)) @ vecs.T


# --- distributed form, sampling, bad input ---------------------------------------------------------------------------

def test_local_sdna_keeps_w_equal_to_x_t_alpha_over_lam_n_on_partitions():
    X, y = load_dataset("heart")
    with pytest.warns(ConvergenceWarning):
        m = daskdca.fit(X, y, loss="smoothed_hinge", lam=1e-2, solver=SDNA(batch_size=10, local_iters=2.0),
                        n_partitions=3, tol=0.0, max_rounds=15, random_state=1)
    np.testing.assert_allclose(m.coef_, X.T @ m.dual_coef_ / (1e-2 * X.shape[0]), rtol=1e-12, atol=1e-14)
    assert m.history_[-1].epochs == pytest.approx(15 * 2.0, rel=0.05)


def test_batch_size_larger_than_a_partition_names_the_largest_allowed_value():
    X, y = load_dataset("heart")  # 270 rows: 2 partitions of 135
    with pytest.raises(ValueError, match=r"batch_size <= 135"):
        daskdca.fit(X, y, loss="logistic", solver=SDNA(batch_size=136), n_partitions=2)
    with pytest.raises(ValueError, match=r"batch_size <= 270"):
        daskdca.fit(X, y, loss="logistic", solver=SDNA(batch_size=271))
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            SDNA(batch_size=bad)
    with pytest.raises(ValueError, match="local_iters"):
        SDNA(local_iters=0)


def test_an_unsupported_loss_raises_from_the_capability_table():
    with pytest.raises(ValueError, match=r"solver='sdna' does not support loss='huber'.*'logistic'"):
        check_supported(SDNA(), loss_name="huber", n_partitions=1, on_cluster=False)
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=r"solver='sdna' does not support loss='huber'"):
        daskdca.fit(X, y, loss="huber", solver="sdna")


# --- real data against LIBLINEAR --------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, lam", [("hinge", 1e-2), ("squared_hinge", 1e-3), ("logistic", 1e-3)])
def test_sdna_matches_liblinear_on_a9a(loss, lam):
    """First 3000 rows of a9a.  Hinge at lam = 1e-2: at 1e-3 neither SDNA nor SDCA without shrinking reaches a
    relative gap of 1e-7 in 2000 epochs on this subset (both near 5e-6; SDCA with shrinking needs 327)."""
    X, y = load_dataset("a9a")
    X, y = X[:3000], y[:3000]
    tol = 1e-7
    _, p_ll = liblinear(X, y, lam, loss)
    m = daskdca.fit(X, y, loss=loss, lam=lam, solver=SDNA(batch_size=16), tol=tol, max_rounds=500)
    assert m.converged_
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    dual, w = ref.dual_objective(X, ys, m.dual_coef_, lam, loss)  # the certificate from the duals alone
    primal = primal_objective(X, ys, w, lam, loss)
    assert 0.0 <= primal - dual <= tol * primal
    assert primal == pytest.approx(m.primal_, rel=1e-12)
    assert dual <= p_ll * (1 + 1e-12)  # weak duality against LIBLINEAR's primal
    assert primal - p_ll <= max(1e-6 * p_ll, primal - dual)  # no worse than LIBLINEAR beyond our certificate
    if (p_ll - dual) / p_ll <= 1e-7:  # LIBLINEAR certified by our dual: both must agree
        assert abs(primal - p_ll) <= 1e-6 * p_ll


# --- the claim ([QRTF16] Fig. 1) on small data -------------------------------------------------------------------------

def _epochs_to(X, y, solver, target, max_rounds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = daskdca.fit(X, y, loss="squared", lam=1.0 / X.shape[0], solver=solver, tol=0.0,
                        max_rounds=max_rounds, random_state=0,
                        callback=lambda rec, state: rec.gap <= target)
    hit = [r.epochs for r in m.history_ if r.gap <= target]
    return hit[0] if hit else np.inf


def test_claim_fig1_on_a_small_correlated_set():
    """[QRTF16] Fig. 1 on a rank-10 + noise set (n = 512): with tau = 32 SDNA needs fewer epochs than with tau = 1,
    and mini-batch SDCA more; the benchmark (benchmarks/sdna_claims.py) runs the full claim."""
    rng = np.random.default_rng(0)
    n, d = 512, 128
    A = rng.standard_normal((n, 10)) @ rng.standard_normal((10, d)) + 0.3 * rng.standard_normal((n, d))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    X = sp.csr_matrix(A)
    y = np.sign(A @ rng.standard_normal(d))
    target = 1e-6
    sdna = {tau: _epochs_to(X, y, SDNA(batch_size=tau), target, 200) for tau in (1, 32)}
    sdca = {tau: _epochs_to(X, y, daskdca.methods.MinibatchSDCA(batch_size=tau, eval_every=-(-n // tau)),
                            target, 200 * -(-n // tau)) for tau in (1, 32)}
    assert sdna[32] <= sdna[1] < np.inf
    assert sdca[32] >= sdca[1]
    assert sdna[32] < sdca[32]


def test_sets_are_tau_nice_and_reproducible():
    a = sdna_batches(3, 7, 2, 50, 6, 400)
    np.testing.assert_array_equal(a, sdna_batches(3, 7, 2, 50, 6, 400))
    assert not np.array_equal(a, sdna_batches(3, 8, 2, 50, 6, 400))
    assert all(np.unique(row).size == 6 for row in a)
    counts = np.bincount(a.ravel(), minlength=50)
    assert counts.min() > 0.6 * counts.mean()  # every row drawn, about tau/n of the time
    pairs = {tuple(r) for r in a}
    assert len(pairs) > 390  # fresh sets every iteration
    assert set(itertools.chain.from_iterable(a)) == set(range(50))


def _run_on(parts, X, loss, lam, max_rounds, seed=4):
    from daskdca.driver import InProcess, run_rounds
    from daskdca.methods.base import DataInfo
    from daskdca.problem import max_column_nnz

    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts),
                    loss=get_loss(loss), lam=lam, max_column_nnz=max_column_nnz(X))
    executor = InProcess(parts, info, seed)
    return run_rounds(executor, executor.setup(SDNA(batch_size=8)), tol=0.0, max_rounds=max_rounds)


def test_out_of_core_sweeps_block_by_block_and_one_block_equals_in_memory(tmp_path):
    """Store partitions (``whole()`` is None), run by the in-process driver: 2 partitions of 3 blocks each.

    A one-block partition draws from the partition's stream, so it gives the in-memory bits.
    """
    from daskdca.partitions import MemoryPartition, StorePartition, rows_from_csr
    from daskdca.store import write_store

    X, y = load_dataset("heart")
    lam = 1e-2
    many = write_store(tmp_path / "many.zarr", X, y, block_rows=45, shuffle=False)  # 6 blocks
    res = _run_on([StorePartition(many, 0, 3, 1.0), StorePartition(many, 3, 6, 1.0)], X, "logistic", lam, 40)
    np.testing.assert_allclose(res.w, X.T @ res.alpha / (lam * X.shape[0]), rtol=1e-12, atol=1e-14)
    duals = np.array([r.dual for r in res.history])
    assert np.all(np.diff(duals) >= -1e-13 * np.abs(duals[1:]))
    assert res.gap <= 1e-3 * res.primal
    one = write_store(tmp_path / "one.zarr", X, y, block_rows=135, shuffle=False)  # one block per partition
    stored = _run_on([StorePartition(one, 0, 1, 1.0), StorePartition(one, 1, 2, 1.0)], X, "logistic", lam, 10)
    memory = [MemoryPartition(rows_from_csr(X[a:b], y[a:b]), np.array([0, b - a], dtype=np.int64))
              for a, b in ((0, 135), (135, 270))]
    in_memory = _run_on(memory, X, "logistic", lam, 10)
    np.testing.assert_array_equal(stored.alpha, in_memory.alpha)
    np.testing.assert_array_equal(stored.w, in_memory.w)


def test_an_epochs_gram_work_grows_with_tau_as_the_cost_model_says(monkeypatch):
    """[QRTF16] Fig. 2's cost model: one SDNA round (an epoch) builds ``ceil(n / tau)`` Gram blocks of
    ``tau (tau + 1) / 2`` entries, about ``n (tau + 1) / 2`` entries an epoch, while it visits about ``n`` rows.

    The round's own row sets (the plan's) go through ``local_sdna``'s Python body with ``gram_block``
    counted, and give the compiled kernel's iterates.
    """
    from daskdca.kernels import sdna as kernels
    from daskdca.methods.base import Ctx, DataInfo

    X, y = _data(n=64, d=20, loss="squared")
    n = X.shape[0]
    loss = get_loss("squared")
    info = DataInfo(n=n, d=X.shape[1], partition_sizes=(n,), loss=loss, lam=1.0 / n, max_column_nnz=n)
    args = _kernel_args(X, y)
    taus = (1, 2, 4, 8, 16, 32, 64)
    epochs = {tau: SDNA(batch_size=tau).setup(info, None)._batches(n, Ctx(0, 0, 0, 1), 0) for tau in taus}
    compiled = {}
    for tau in taus:  # before the patch: the compiled kernel binds the real gram_block
        alpha = np.zeros(n)
        local_sdna(*args, alpha, np.zeros(X.shape[1]), np.empty(0), epochs[tau], int(loss.kind), loss.param, 1.0,
                   1.0, False)
        compiled[tau] = alpha
    blocks = []
    real = kernels.gram_block

    def counted(indptr, indices, data, rows, scale, scratch, Q):
        blocks.append(rows.shape[0])
        real(indptr, indices, data, rows, scale, scratch, Q)

    monkeypatch.setattr(kernels, "gram_block", counted)
    entries = []
    for tau in taus:
        blocks.clear()
        alpha = np.zeros(n)
        steps = kernels.local_sdna.py_func(*args, alpha, np.zeros(X.shape[1]), np.empty(0), epochs[tau],
                                           int(loss.kind), loss.param, 1.0, 1.0, False)
        np.testing.assert_allclose(alpha, compiled[tau], rtol=1e-12, atol=1e-14)
        assert blocks == [tau] * -(-n // tau)
        assert n <= steps < n + tau  # one epoch of rows whatever tau is
        entries.append(sum(t * (t + 1) // 2 for t in blocks))
        assert entries[-1] == -(-n // tau) * tau * (tau + 1) // 2
    assert all(b > a for a, b in zip(entries, entries[1:]))
    assert entries[-1] / entries[0] == (64 + 1) / 2
