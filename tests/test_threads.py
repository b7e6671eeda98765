"""Threads inside a partition's local step (``CoCoAPlus(threads=T, inner_rounds=m)``, hierarchical CoCoA+).

The inner rounds, adding and with the line search
(``inner_aggregation="line_search"``), against NumPy references on the same
row sequences, the sub-block streams re-derived here, the same bits on every
rerun (and in another process) for a fixed ``T``, ``T = 1`` the one-thread
code path, the optimum reached and certified from the returned duals, in
process == a 2-worker cluster, bit for bit, and the rounds run with one BLAS
thread.
"""

import dataclasses
import hashlib
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.driver import InProcess, in_process_partitions
from daskdca.kernels.sampling import iid_order, permutation_order, sub_block_stream
from daskdca.kernels.sdca import (_chunk_line_sums, line_conjugate_sums, sub_block_bounds, threaded_line_search_sdca,
                                  threaded_local_sdca)
from daskdca.losses import get_loss
from daskdca.methods import SDCA, CoCoAPlus
from daskdca.methods.base import Ctx, DataInfo, dense
from daskdca.methods.dual import DualGlobal, DualLocal, _block_stream
from daskdca.methods.sdca import LocalSDCAPlan, line_search_steps
from daskdca.partitions import MemoryPartition, random_row_order
from daskdca.problem import max_column_nnz
from daskdca.store import write_store

import reference_kernels as ref
from conftest import load_dataset, plan_on_partitions
from references import lbfgs, primal_objective

distributed = pytest.importorskip("distributed")


def _random(n, d, seed, density=0.4):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.data.shape[0])
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _fit(X, y, solver, loss="logistic", lam=1e-2, K=1, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, n_partitions=K, **kwargs)


def _reference_inner_rounds(X, y, alpha, u, delta_w, orders, loss, lam_n, sigma, inner_rounds, track):
    """Hierarchical CoCoA+ on one partition, in plain NumPy: per inner round, every sub-block from the same ``u``
    with curvature ``sigma T``, then ``u += sigma sum_b delta_b`` (Dünner et al. 2018 §3; Ma et al. 2015 §3)."""
    T = len(orders)
    alpha, u, delta_w = alpha.copy(), u.copy(), delta_w.copy()
    for j in range(inner_rounds):
        step = np.zeros_like(u)
        for order in orders:
            chunk = order[len(order) * j // inner_rounds:len(order) * (j + 1) // inner_rounds]
            alpha, _, delta_b = ref.local_sdca(X, y, alpha, u, np.zeros_like(u), chunk, loss, lam_n, sigma * T)
            step = step + delta_b
        if track:
            delta_w = delta_w + step
        u = u + sigma * step
    return alpha, u, delta_w


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "squared_hinge"])
@pytest.mark.parametrize("T, m, sigma, track", [(2, 1, 1.0, False), (3, 2, 2.0, True), (4, 3, 3.0, True)])
def test_inner_rounds_match_the_numpy_reference_on_the_same_rows(loss, T, m, sigma, track):
    X, y = _random(60, 9, 0)
    if loss == "squared":
        y = y + 0.2
    n, d, lam_n = X.shape[0], X.shape[1], 0.05 * 60
    rng = np.random.default_rng(1)
    alpha = np.zeros(n) if loss != "squared" else 0.1 * rng.standard_normal(n)
    u, delta_w = 0.1 * rng.standard_normal(d), np.zeros(d)
    bounds = sub_block_bounds(0, n, T)
    orders = [permutation_order(3, 1, sub_block_stream(0, b), bounds[b + 1] - bounds[b], 2 * (bounds[b + 1] - bounds[b]),
                                bounds[b]) for b in range(T)]
    expected = _reference_inner_rounds(X, y, alpha, u, delta_w, orders, loss, lam_n, sigma, m, track)
    kind = int(get_loss(loss).kind)
    a, uu, dw = alpha.copy(), u.copy(), delta_w.copy() if track else np.empty(0)
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    with ThreadPoolExecutor(max_workers=T - 1) as executor:
        steps = threaded_local_sdca(X.indptr, X.indices, X.data, y, np.empty(0), sqnorm, a, uu, dw, orders, kind,
                                    get_loss(loss).param, lam_n, sigma, m, track, executor)
    assert steps == sum(o.shape[0] for o in orders)
    np.testing.assert_allclose(a, expected[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(uu, expected[1], rtol=0, atol=1e-12)
    if track:
        np.testing.assert_allclose(dw, expected[2], rtol=0, atol=1e-12)


def _subproblem(y, alpha, w, delta_w, loss, lam_n, sigma):
    """``n G(alpha)`` of a partition's subproblem up to a constant: ``-sum_i phi_i*(-alpha_i) - lam_n (w.delta_w +
    sigma/2 ||delta_w||^2)`` ([MSJ+15] §3), from ``w`` and ``delta_w`` (not from the kernel's ``u``)."""
    conj = sum(ref.conjugate(loss, y[i], alpha[i]) for i in range(alpha.shape[0]))
    return -conj - lam_n * (w @ delta_w + 0.5 * sigma * delta_w @ delta_w)


def _reference_line_search_rounds(X, y, alpha, w, orders, loss, lam_n, sigma, inner_rounds):
    """Hierarchical CoCoA with a line search, in plain NumPy: per inner round, every sub-block from the same
    ``u = w + sigma delta_w`` with the partition's curvature ``sigma``; then the candidate ``t`` (the largest of the
    best) at which the subproblem is highest, evaluated from scratch.  Returns ``alpha``, ``u``, ``delta_w`` and the
    steps taken."""
    T = len(orders)
    alpha, delta_w = alpha.copy(), np.zeros_like(w)
    steps, chosen = line_search_steps(T), []
    for j in range(inner_rounds):
        u = w + sigma * delta_w
        new_alpha, direction = alpha.copy(), np.zeros_like(w)
        for order in orders:
            chunk = order[len(order) * j // inner_rounds:len(order) * (j + 1) // inner_rounds]
            new_alpha, _, delta_b = ref.local_sdca(X, y, new_alpha, u, np.zeros_like(w), chunk, loss, lam_n, sigma)
            direction = direction + delta_b
        values = [_subproblem(y, alpha + t * (new_alpha - alpha), w, delta_w + t * direction, loss, lam_n, sigma)
                  for t in steps]
        best = max(values)
        t = max(t for t, v in zip(steps, values) if v >= best - 1e-12 * abs(best))
        assert best >= _subproblem(y, alpha, w, delta_w, loss, lam_n, sigma) - 1e-12 * abs(best)  # never descends
        chosen.append(t)
        alpha = new_alpha if t == 1.0 else alpha + t * (new_alpha - alpha)
        delta_w = delta_w + t * direction
    return alpha, w + sigma * delta_w, delta_w, chosen


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "squared_hinge"])
@pytest.mark.parametrize("T, m, sigma, track, density", [(2, 1, 1.0, False, 0.4), (3, 2, 2.0, True, 0.4),
                                                         (2, 3, 1.0, True, 1.0), (3, 4, 1.0, False, 1.0)])
def test_line_search_inner_rounds_match_the_numpy_reference(loss, T, m, sigma, track, density):
    """Each sub-block's rows are drawn twice (a row is on the line once); dense rows make ``t < 1``."""
    X, y = _random(60, 9, 4, density=density)
    if loss == "squared":
        y = y + 0.2
    n, d, lam_n = X.shape[0], X.shape[1], 0.05 * 60
    rng = np.random.default_rng(1)
    alpha = np.zeros(n) if loss != "squared" else 0.1 * rng.standard_normal(n)
    w = 0.1 * rng.standard_normal(d)
    bounds = sub_block_bounds(0, n, T)
    orders = [permutation_order(3, 1, sub_block_stream(0, b), bounds[b + 1] - bounds[b], 2 * (bounds[b + 1] - bounds[b]),
                                bounds[b]) for b in range(T)]
    expected_alpha, expected_u, expected_delta, chosen = _reference_line_search_rounds(X, y, alpha, w, orders, loss,
                                                                                       lam_n, sigma, m)
    kind = int(get_loss(loss).kind)
    a, u, dw = alpha.copy(), w.copy(), np.zeros(d) if track else np.empty(0)
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    with ThreadPoolExecutor(max_workers=T - 1) as executor:
        steps = threaded_line_search_sdca(X.indptr, X.indices, X.data, y, np.empty(0), sqnorm, a, u, dw, orders,
                                          kind, get_loss(loss).param, lam_n, sigma, m, track, executor,
                                          line_search_steps(T))
    assert steps == sum(o.shape[0] for o in orders)
    np.testing.assert_allclose(a, expected_alpha, rtol=0, atol=1e-12)
    np.testing.assert_allclose(u, expected_u, rtol=0, atol=1e-12)
    if track:
        np.testing.assert_allclose(dw, expected_delta, rtol=0, atol=1e-12)
    if density == 1.0 and loss == "logistic":
        assert min(chosen) < 1.0  # the search below t = 1 is exercised


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "squared_hinge"])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_line_searchs_sums_read_the_rows_in_place(loss, weighted):
    """The sub-blocks' conjugate sums along the line, read in place, are those of the gathered rows' copies."""
    rng = np.random.default_rng(4)
    n = 50
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0) + (0.3 if loss == "squared" else 0.0)
    weight = rng.uniform(0.5, 2.0, n) if weighted else np.empty(0)
    rows = rng.permutation(n)[:20]
    # y_i alpha_i / weight_i in (0, 0.95): inside every loss's dual domain, at the start and along the line
    scale = y[rows] * (weight[rows] if weighted else 1.0)
    first = 0.9 * rng.random(20)
    start = scale * first
    alpha = np.zeros(n)
    alpha[rows] = scale * (first + 0.05 * rng.random(20))
    steps = line_search_steps(3)
    kind, param = int(get_loss(loss).kind), get_loss(loss).param
    expected = line_conjugate_sums(y[rows], weight[rows] if weighted else weight, start, alpha[rows] - start, steps,
                                   kind, param)
    got = _chunk_line_sums(y, weight, alpha, rows, start, steps, kind, param)
    np.testing.assert_array_equal(got, expected)
    assert np.isfinite(got).all()  # every step of the ladder (at most 1) stays in the dual domain


@pytest.mark.parametrize("sampling", ["permutation", "iid"])
def test_a_partition_round_is_the_reference_on_the_sub_block_streams(sampling):
    """The plan's round on partition k of K = 2: sub-blocks cut as documented, each drawing from
    ``(random_state, round, sub_block_stream(k, b))``, gap sums at the round's start, ``delta_w_k`` sent."""
    X, y = _random(90, 11, 2)
    lam, K, T, m, local_iters = 0.02, 2, 3, 2, 1.5
    method = CoCoAPlus(threads=T, inner_rounds=m, acceleration=None, momentum=False, sampling=sampling,
                       local_iters=local_iters)
    plan, parts = plan_on_partitions(X, y, method, "logistic", lam, K)
    assert type(plan) is LocalSDCAPlan and plan.sigma_prime == K
    n, d = X.shape
    rng = np.random.default_rng(3)
    w = 0.05 * rng.standard_normal(d)
    draw = permutation_order if sampling == "permutation" else iid_order
    for k, part in enumerate(parts):
        rows = part.rows
        A = rows.csr()
        a0 = 0.5 * rows.y * rng.uniform(0.1, 0.9, part.n_rows)  # y alpha in (0, 1): feasible for logistic
        new, c = plan.local(part, DualLocal(a0.copy()), DualGlobal(w), Ctx(7, 4, k, K))
        bounds = sub_block_bounds(0, part.n_rows, T)
        orders = []
        for b in range(T):
            size = bounds[b + 1] - bounds[b]
            orders.append(draw(7, 4, sub_block_stream(k, b), size, int(np.ceil(local_iters * size)), bounds[b]))
        alpha, _, delta_w = _reference_inner_rounds(A, rows.y, a0, w, np.zeros(d), orders, "logistic", lam * n, K, m,
                                                    True)
        np.testing.assert_allclose(new.alpha, alpha, rtol=0, atol=1e-12)
        np.testing.assert_allclose(dense(c.vector, d), delta_w, rtol=0, atol=1e-12)
        loss_sum, conj_sum = ref.objective_sums(A, rows.y, a0, w, "logistic")
        np.testing.assert_allclose(c.scalars, [loss_sum, conj_sum, sum(o.shape[0] for o in orders)], rtol=1e-12)


class _Blocks:
    """A partition read block by block (``whole()`` is None), as out of core, from rows in memory."""

    def __init__(self, part, starts):
        self.mp = MemoryPartition(part.rows, np.asarray(starts, dtype=np.int64))
        self.n_rows, self.block_starts = self.mp.n_rows, self.mp.block_starts

    def whole(self):
        return None

    def pieces(self, order=None):
        return self.mp.pieces(order)


def test_out_of_core_blocks_each_run_the_sub_blocks_on_the_block_stream():
    """Blocks in the seeded block order; each block's rows cut into T sub-blocks drawing from
    ``sub_block_stream(block stream, b)``, carrying ``u`` and ``delta_w`` from block to block."""
    X, y = _random(80, 10, 4)
    lam, K, T, m = 0.03, 2, 2, 3
    plan, parts = plan_on_partitions(X, y, CoCoAPlus(threads=T, inner_rounds=m, acceleration=None, momentum=False), "logistic", lam, K)
    n, d = X.shape
    w = 0.05 * np.random.default_rng(5).standard_normal(d)
    k, part = 1, parts[1]
    starts = [0, 11, 25, part.n_rows]
    new, c = plan.local(_Blocks(part, starts), DualLocal(np.zeros(part.n_rows)), DualGlobal(w), Ctx(3, 2, k, K))
    A, yk = part.rows.csr(), part.rows.y
    alpha, u, delta_w = np.zeros(part.n_rows), w.copy(), np.zeros(d)
    nb = len(starts) - 1
    for j in permutation_order(3, 2, k, nb, nb, 0):
        bounds = sub_block_bounds(starts[j], starts[j + 1], T)
        orders = [permutation_order(3, 2, sub_block_stream(_block_stream(k, int(j)), b), bounds[b + 1] - bounds[b],
                                    bounds[b + 1] - bounds[b], bounds[b]) for b in range(T)]
        alpha, u, delta_w = _reference_inner_rounds(A, yk, alpha, u, delta_w, orders, "logistic", lam * n, K, m, True)
    np.testing.assert_allclose(new.alpha, alpha, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dense(c.vector, d), delta_w, rtol=0, atol=1e-12)
    # one block is the in-memory round, bit for bit
    one, c1 = plan.local(_Blocks(part, [0, part.n_rows]), DualLocal(np.zeros(part.n_rows)), DualGlobal(w),
                         Ctx(3, 2, k, K))
    mem, cm = plan.local(part, DualLocal(np.zeros(part.n_rows)), DualGlobal(w), Ctx(3, 2, k, K))
    np.testing.assert_array_equal(one.alpha, mem.alpha)
    np.testing.assert_array_equal(dense(c1.vector, d), dense(cm.vector, d))


def test_sub_block_streams_are_distinct_from_partition_and_block_streams():
    ids = {sub_block_stream(s, b) for s in (0, 1, 2, (1 << 62) | (1 << 31) | 3) for b in range(8)}
    assert len(ids) == 32
    assert all((1 << 61) <= i < (1 << 62) for i in ids)  # bit 61 set, bit 62 clear: no partition, no block stream
    assert sub_block_stream(5, 1) == sub_block_stream(5, 1)


@pytest.fixture(scope="module")
def heart():
    X, y = load_dataset("heart")
    return X, np.where(y > 0, 1.0, -1.0)


@pytest.mark.parametrize("solver, K", [(SDCA(threads=2), 1), (CoCoAPlus(threads=2, inner_rounds=3), 2),
                                       (CoCoAPlus(threads=3, aggregation="line_search"), 2),
                                       (SDCA(threads=3, inner_rounds=4, inner_aggregation="line_search"), 1)])
def test_same_bits_on_every_rerun(heart, solver, K):
    X, y = heart
    runs = [_fit(X, y, solver, K=K, tol=0.0, max_rounds=15, random_state=4) for _ in range(3)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.coef_, runs[0].coef_)
        np.testing.assert_array_equal(other.dual_coef_, runs[0].dual_coef_)
        assert [r.primal for r in other.history_] == [r.primal for r in runs[0].history_]


_BITS_SCRIPT = """
import sys, hashlib, warnings
sys.path.insert(0, "tests")
import numpy as np
import daskdca
from daskdca.methods import SDCA
from conftest import load_dataset
X, y = load_dataset("heart")
warnings.simplefilter("ignore")
m = daskdca.fit(X, y, loss="hinge", lam=1e-2, solver=SDCA(threads=2, inner_rounds=2), tol=0.0, max_rounds=15,
                random_state=4)
print(hashlib.sha256(m.coef_.tobytes() + m.dual_coef_.tobytes()).hexdigest())
"""


def test_same_bits_in_another_process(heart):
    X, y = heart
    m = _fit(X, y, SDCA(threads=2, inner_rounds=2), loss="hinge", tol=0.0, max_rounds=15, random_state=4)
    here = hashlib.sha256(m.coef_.tobytes() + m.dual_coef_.tobytes()).hexdigest()
    out = subprocess.run([sys.executable, "-c", _BITS_SCRIPT], capture_output=True, text=True, check=True,
                         cwd=str(Path(__file__).resolve().parents[1]))
    assert out.stdout.strip().splitlines()[-1] == here


@pytest.mark.parametrize("solver, K", [(SDCA(), 1), (CoCoAPlus(), 2), (CoCoAPlus(aggregation="line_search"), 3)])
def test_one_thread_is_the_existing_code_path_bit_for_bit(heart, monkeypatch, solver, K):
    X, y = heart
    before = _fit(X, y, solver, loss="hinge", K=K, tol=0.0, max_rounds=10, random_state=2)

    def refuse(*args, **kwargs):
        raise AssertionError("threads=1 must not take the threaded path")

    monkeypatch.setattr(LocalSDCAPlan, "_threaded_steps", refuse)
    one = _fit(X, y, dataclasses.replace(solver, threads=1, inner_rounds=1), loss="hinge", K=K,
               tol=0.0, max_rounds=10, random_state=2)
    np.testing.assert_array_equal(one.coef_, before.coef_)
    np.testing.assert_array_equal(one.dual_coef_, before.dual_coef_)
    # and T = 2 is a different algorithm (the reference tests above say which)
    monkeypatch.undo()
    two = _fit(X, y, dataclasses.replace(solver, threads=2), loss="hinge", K=K, tol=0.0, max_rounds=10,
               random_state=2)
    assert not np.array_equal(two.dual_coef_, before.dual_coef_)


def _certified(X, y, m, lam, loss):
    """The gap recomputed from the returned duals alone."""
    dual, w_alpha = ref.dual_objective(X, y, m.dual_coef_, lam, loss)
    primal = primal_objective(X, y, m.coef_, lam, loss)
    return primal, dual, w_alpha


@pytest.mark.parametrize("solver, K", [(SDCA(threads=2, inner_rounds=4), 1), (CoCoAPlus(threads=2), 2),
                                       (CoCoAPlus(threads=2, inner_rounds=2, acceleration=None), 2),
                                       (SDCA(threads=2, inner_rounds=4, inner_aggregation="line_search"), 1),
                                       (CoCoAPlus(threads=2, inner_rounds=2, inner_aggregation="line_search"), 2),
                                       (CoCoAPlus(threads=2, aggregation="line_search", inner_aggregation="line_search"),
                                        2)])
def test_reaches_the_optimum_certified_on_heart(heart, solver, K):
    X, y = heart
    lam, loss = 1e-2, "logistic"
    _, P_star = lbfgs(X, y, lam, loss)
    m = _fit(X, y, solver, loss=loss, lam=lam, K=K, tol=1e-8, max_rounds=3000)
    assert m.converged_
    primal, dual, _ = _certified(X, y, m, lam, loss)
    assert m.gap_ == pytest.approx(primal - dual, rel=1e-6, abs=1e-14)
    assert primal - dual <= 1e-8 * primal and dual <= P_star * (1 + 1e-12)
    assert abs(primal - P_star) <= 1e-7 * P_star


def test_reaches_the_optimum_certified_on_a9a():
    X, y = load_dataset("a9a")
    y = np.where(y > 0, 1.0, -1.0)
    lam = 1e-3
    for loss, solver in (("hinge", SDCA(threads=2, inner_rounds=4)), ("logistic", CoCoAPlus(threads=2)),
                         ("hinge", SDCA(threads=2, inner_rounds=8, inner_aggregation="line_search")),
                         ("logistic", CoCoAPlus(threads=2, inner_rounds=8, inner_aggregation="line_search"))):
        m = _fit(X, y, solver, loss=loss, lam=lam, K=1 if isinstance(solver, SDCA) else 2, tol=1e-4,
                 max_rounds=2000)
        assert m.converged_
        primal, dual, w_alpha = _certified(X, y, m, lam, loss)
        if m.plan_.primal_from_dual:
            np.testing.assert_allclose(m.coef_, w_alpha, rtol=1e-10, atol=1e-13)
        assert m.gap_ == pytest.approx(primal - dual, rel=1e-6) and primal - dual <= 1e-4 * primal


def test_unsupported_settings_raise_with_the_fix():
    cases = [
        (dict(threads=0), "threads must be a positive int"),
        (dict(threads=2.0), "threads must be a positive int"),
        (dict(threads=True), "threads must be a positive int"),
        (dict(inner_rounds=0, threads=2), "inner_rounds must be a positive int"),
        (dict(inner_rounds=2), "needs threads > 1"),
        (dict(threads=2, local_solver="spdc"), "use local_solver='sdca' or threads=1"),
        (dict(threads=2, local_solver="sdna"), "use local_solver='sdca' or threads=1"),
        (dict(threads=2, l1_ratio=0.5), "does not take l1_ratio=0.5"),
        (dict(threads=2, inner_aggregation="averaging"), "Unknown inner_aggregation 'averaging'"),
        (dict(inner_aggregation="line_search"), "it needs threads > 1"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            CoCoAPlus(**kwargs)
    X, y = _random(7, 3, 0)
    with pytest.raises(ValueError, match="threads=4 is more than the 3 rows .* use threads <= 3"):
        daskdca.fit(X, y, loss="logistic", solver=CoCoAPlus(threads=4), n_partitions=2)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("in_memory", [True, False])
@pytest.mark.parametrize("inner_aggregation", ["adding", "line_search"])
def test_in_process_equals_a_two_worker_cluster_bit_for_bit(heart, client, tmp_path, in_memory, inner_aggregation):
    """The store holds the rows in the in-process partition order, one block per partition."""
    X, y = heart
    order = random_row_order(X.shape[0], 7)
    store = write_store(tmp_path / "h.zarr", X[order], y[order], block_rows=-(-X.shape[0] // 2), shuffle=False)
    solver = CoCoAPlus(threads=2, inner_rounds=2, inner_aggregation=inner_aggregation)
    local = _fit(X, y, solver, K=2, tol=0.0, max_rounds=12, random_state=7)
    remote = _fit(store, None, solver, K=2, tol=0.0, max_rounds=12, random_state=7, client=client,
                  in_memory=in_memory)
    np.testing.assert_array_equal(remote.dual_coef_, local.dual_coef_[order])
    np.testing.assert_array_equal(remote.coef_, local.coef_)
    np.testing.assert_allclose([r.primal for r in remote.history_], [r.primal for r in local.history_], rtol=1e-12)


@pytest.mark.parametrize("solver, K", [(SDCA(threads=2, inner_rounds=2), 1), (CoCoAPlus(threads=3), 2),
                                       (SDCA(threads=2, inner_rounds=3, inner_aggregation="line_search"), 1)])
def test_one_vs_rest_fitted_together_has_the_bits_of_the_binary_fits(solver, K):
    rng = np.random.default_rng(6)
    X = sp.random(150, 8, density=0.5, random_state=rng, format="csr")
    labels = np.array(["a", "b", "c"])[rng.integers(0, 3, 150)]
    joint = _fit(X, labels, solver, loss="hinge", lam=1e-3, K=K, tol=0.0, max_rounds=6, random_state=3)
    for k, label in enumerate(joint.classes_):
        binary = _fit(X, (labels == label).astype(int), solver, loss="hinge", lam=1e-3, K=K, tol=0.0, max_rounds=6,
                      random_state=3)
        np.testing.assert_array_equal(joint.coef_[k], binary.coef_)
        np.testing.assert_array_equal(joint.dual_coef_[k], binary.dual_coef_)


class _OutOfCore:
    """A partition read block by block (``whole()`` is None), as a store partition is."""

    def __init__(self, part, n_blocks):
        from daskdca.partitions import MemoryPartition

        self.mp = MemoryPartition(part.rows, np.linspace(0, part.n_rows, n_blocks + 1).astype(np.int64))
        self.n_rows, self.block_starts = self.mp.n_rows, self.mp.block_starts

    def whole(self):
        return None

    def pieces(self, order=None):
        return self.mp.pieces(order)


@pytest.mark.parametrize("where", ["in memory", "window"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_gap_sums_on_a_second_core_keep_the_bits(monkeypatch, loss, where):
    """Serial SDCA without shrinking computes a round's gap sums on a second core while its steps run, in memory:
    the same fit, bit for bit, as on one core, and the thread is used; out of core (where the second core reads
    ahead) it is not."""
    import daskdca.methods.sdca as sdca_module
    from daskdca.driver import run_rounds

    X, y = load_dataset("a9a")
    X, y = X[:3000].tocsr(), (np.where(y[:3000] > 0, 1.0, -1.0) if loss == "logistic" else np.asarray(y[:3000], float))
    submitted = []
    thread = sdca_module.gap_thread

    def counted():
        submitted.append(1)
        return thread()

    def run(spare):
        monkeypatch.setattr(sdca_module, "spare_core", lambda: spare)
        parts, _ = in_process_partitions(X, y, 1, 0)
        if where != "in memory":
            parts = [_OutOfCore(parts[0], 6)]
        info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=(X.shape[0],), loss=get_loss(loss), lam=1e-3,
                        max_column_nnz=max_column_nnz(X))
        executor = InProcess(parts, info, 0)
        method = SDCA()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the squared loss on 1e-6: past 40 rounds here
            return run_rounds(executor, executor.setup(method), tol=1e-6, max_rounds=40)

    monkeypatch.setattr(sdca_module, "gap_thread", counted)
    one = run(False)
    assert not submitted
    two = run(True)
    # in memory every sweep's sums (the rounds kept, and the one that measured the last of a converged fit) went there
    assert len(submitted) == ((two.n_rounds + (1 if two.converged else 0)) if where == "in memory" else 0)
    assert one.n_rounds == two.n_rounds and one.converged == two.converged
    for name in ("w", "alpha"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name), err_msg=name)
    assert (one.primal, one.dual) == (two.primal, two.dual)
    assert [h.gap for h in one.history] == [h.gap for h in two.history]


def _blas_threads(threadpoolctl):
    """Each BLAS library's thread count now."""
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


def test_rounds_run_with_one_blas_thread_and_restore_it():
    """The BLAS runs on one thread while the rounds run (its spinning threads would take the sub-blocks' cores, and
    a threaded dot's bits depend on the thread count), and the caller's setting comes back after the fit."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X, y = _random(300, 20_000, 3, density=0.002)  # d above OpenBLAS's threshold for a threaded dot
    seen = []

    def callback(record, state):
        seen.append(_blas_threads(threadpoolctl))

    fits = []
    for threads in (2, 1):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            before = _blas_threads(threadpoolctl)
            fits.append(_fit(X, y, SDCA(threads=2, inner_rounds=2, inner_aggregation="line_search"), tol=0.0,
                             max_rounds=5, random_state=1, callback=callback))
            after = _blas_threads(threadpoolctl)
        assert after == before
    assert seen and all(counts == [1] * len(counts) for counts in seen)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert [r.primal for r in fits[0].history_] == [r.primal for r in fits[1].history_]


def test_a_fits_setup_runs_with_one_blas_thread_too(monkeypatch):
    """The method's setup (its products: a power iteration's norms, Catalyst's constants) runs on one BLAS thread as
    the rounds do: BLAS threads left spinning after a threaded dot took the cores of the first epoch's sub-blocks."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X, y = _random(300, 20_000, 3, density=0.002)
    seen = []
    setup = SDCA.setup

    def recording_setup(self, info, ops):
        seen.append(_blas_threads(threadpoolctl))
        return setup(self, info, ops)

    monkeypatch.setattr(SDCA, "setup", recording_setup)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        _fit(X, y, SDCA(threads=2, inner_rounds=2, inner_aggregation="line_search"), tol=0.0, max_rounds=2)
    assert seen and all(counts == [1] * len(counts) for counts in seen)
