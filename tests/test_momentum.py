"""CoCoA+ rounds with the momentum search (``CoCoAPlus(momentum=...)``, daskdca.methods.sdca.MomentumPlan).

A partition's round against a NumPy reference on the same row sequence (the
last move applied first, the gap sums at the moved duals, the local steps,
the conjugate sums at every candidate), the combine's choice against the
dual evaluated here at every candidate, the dual never below CoCoA+'s own
step, the optimum reached and certified from the returned duals with fewer
rounds than without it on a9a past 1e-4 (inside Catalyst, plain, and serial
SDCA on one partition), the labels read out of core without the rows, where
``"auto"`` (the default) turns it on, and the options it refuses.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.kernels.sampling import permutation_order
from daskdca.methods import CoCoAPlus
from daskdca.methods.base import Contribution, Ctx, dense
from daskdca.methods.catalyst import CatalystMomentumGlobal, CatalystPlan
from daskdca.methods.sdca import (
    MOMENTUM_STEPS,
    LineSearchPlan,
    LocalSDCAPlan,
    MomentumGlobal,
    MomentumLocal,
    MomentumPlan,
    ProxSDCAPlan,
)
from daskdca.methods.spdc import LocalSPDCPlan
from daskdca.partitions import ClassView, OneVsRestPartition, StorePartition, binary_rows
from daskdca.store import write_store

import reference_kernels as ref
from conftest import load_dataset, plan_on_partitions, random_labels, random_sparse
from references import primal_objective


def _random(n, d, seed):
    return random_sparse(n, d, 0.4, seed), random_labels(n, seed)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_a_partition_round_is_the_reference(loss):
    """The duals move by ``a * pending + b * move`` first; the gap sums, the local steps (``sigma' = K``) and the
    conjugate sums at every ``(a, b)`` of MOMENTUM_STEPS are those of the moved duals."""
    X, y = _random(90, 11, 2)
    lam, K = 0.02, 2
    plan, parts = plan_on_partitions(X, y, CoCoAPlus(momentum=True, acceleration=None), loss, lam, K)
    assert type(plan) is MomentumPlan and plan.sigma_prime == K
    n, d = X.shape
    rng = np.random.default_rng(3)
    w = 0.05 * rng.standard_normal(d)
    step = np.array([2.0, 1.0])
    for k, part in enumerate(parts):
        rows = part.rows
        A = rows.csr()
        b0 = rng.uniform(0.2, 0.4, part.n_rows)  # y alpha: the moved duals stay feasible for both losses
        pending, last = rows.y * rng.uniform(0.0, 0.05, part.n_rows), rows.y * rng.uniform(0.0, 0.05, part.n_rows)
        local = MomentumLocal(rows.y * b0, pending, last)
        new, c = plan.local(part, local, MomentumGlobal(w, np.zeros(d), step), Ctx(7, 4, k, K))
        move = 2.0 * pending + 1.0 * last
        moved = rows.y * b0 + move
        order = permutation_order(7, 4, k, part.n_rows, part.n_rows, 0)
        alpha, _, delta_w = ref.local_sdca(A, rows.y, moved, w, np.zeros(d), order, loss, lam * n, K)
        np.testing.assert_allclose(new.alpha, moved, rtol=0, atol=1e-15)
        np.testing.assert_allclose(new.alpha + new.pending, alpha, rtol=0, atol=1e-12)
        np.testing.assert_allclose(new.move, move, rtol=0, atol=1e-15)
        np.testing.assert_allclose(dense(c.vector, d), delta_w, rtol=0, atol=1e-12)
        loss_sum, conj_sum = ref.objective_sums(A, rows.y, moved, w, loss)
        plane = [sum(ref.conjugate(loss, rows.y[i], moved[i] + a * (alpha[i] - moved[i]) + b * move[i])
                     for i in range(part.n_rows)) for a, b in MOMENTUM_STEPS]
        np.testing.assert_allclose(c.scalars, [loss_sum, conj_sum, part.n_rows, *plane], rtol=1e-12)
        # the partition's dual point under the next combine's choice
        chosen = MomentumGlobal(w, np.zeros(d), np.array([1.0, 1.0]))
        np.testing.assert_allclose(plan.dual_point(part, new, chosen), moved + (alpha - moved) + move, atol=1e-15)


def test_the_combine_takes_the_candidate_with_the_highest_dual():
    """``D(alpha + a Delta alpha + b M) = -conj(a, b)/n - lam/2 ||w + a Delta w + b m||^2``, evaluated here at each
    candidate; ``w`` moves by the best one's ``a Delta w + b m`` and that move is kept."""
    X, y = _random(40, 6, 4)
    lam, K, n, d = 0.1, 2, 40, 6
    plan, _ = plan_on_partitions(X, y, CoCoAPlus(momentum=True, acceleration=None), "logistic", lam, K)
    rng = np.random.default_rng(0)
    w, delta, move = rng.standard_normal(d), rng.standard_normal(d), rng.standard_normal(d)
    for trial in range(20):
        conj = rng.uniform(-3.0, 3.0, len(MOMENTUM_STEPS))
        total = Contribution(delta, np.concatenate(([1.0, 2.0, 40.0], conj)), ())
        duals = [-c / n - 0.5 * lam * np.sum((w + a * delta + b * move) ** 2) for (a, b), c in zip(MOMENTUM_STEPS, conj)]
        best = MOMENTUM_STEPS[int(np.argmax(duals))]
        state, report = plan.combine(MomentumGlobal(w, move, np.zeros(2)), total, None)
        assert tuple(state.step) == best
        np.testing.assert_allclose(state.move, best[0] * delta + best[1] * move, rtol=1e-15)
        np.testing.assert_allclose(state.w, w + state.move, rtol=1e-15)
        assert report.primal == pytest.approx(1.0 / n + 0.5 * lam * w @ w, rel=1e-15)
        assert report.dual == pytest.approx(-2.0 / n - 0.5 * lam * w @ w, rel=1e-15)


def test_plain_rounds_never_lower_the_dual_and_reach_the_optimum():
    """(1, 0), CoCoA+'s safe step, is a candidate: the dual rises every round; the returned duals certify."""
    X, y = load_dataset("a9a")
    X, y = X[:6000], y[:6000]
    lam = 1e-3  # plain CoCoA+: 1,769 rounds to 1e-6 here, with the momentum search 230
    kwargs = dict(loss="logistic", lam=lam, n_partitions=3, tol=1e-6, max_rounds=3000, random_state=1)
    m = daskdca.fit(X, y, solver=CoCoAPlus(momentum=True, acceleration=None), **kwargs)
    plain = daskdca.fit(X, y, solver=CoCoAPlus(acceleration=None, momentum=False), **kwargs)
    assert isinstance(m.plan_, MomentumPlan) and m.converged_ and plain.converged_
    duals = [r.dual for r in m.history_[:-1]]
    assert all(b >= a - 1e-15 * abs(a) for a, b in zip(duals[:-1], duals[1:]))
    assert m.n_rounds_ < 0.5 * plain.n_rounds_
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    dual, w_alpha = ref.dual_objective(X, ys, m.dual_coef_, lam, "logistic")
    np.testing.assert_allclose(m.coef_, w_alpha, rtol=1e-10, atol=1e-13)
    primal = primal_objective(X, ys, m.coef_, lam, "logistic")
    assert primal - dual <= 1e-6 * primal
    assert m.primal_ == pytest.approx(plain.primal_, rel=1e-6)


def test_inside_catalyst_it_cuts_the_rounds_past_1e_4_on_a9a():
    """a9a, logistic, lam 1e-5, K = 2, to a certified 1e-6: Catalyst's rounds stall without it (the partitions'
    dual errors cancel in w); with it far fewer, the same optimum, certified from the returned duals."""
    X, y = load_dataset("a9a")
    lam = 1e-5
    kwargs = dict(loss="logistic", lam=lam, n_partitions=2, tol=1e-6, max_rounds=2000)
    m = daskdca.fit(X, y, solver=CoCoAPlus(momentum=True), **kwargs)
    without = daskdca.fit(X, y, solver=CoCoAPlus(momentum=False), **kwargs)
    assert isinstance(m.plan_, CatalystPlan) and isinstance(m.plan_.inner, MomentumPlan)
    assert m.converged_ and without.converged_
    assert m.n_rounds_ < 0.6 * without.n_rounds_
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    dual, _ = ref.dual_objective(X, ys, m.dual_coef_, lam, "logistic")
    primal = primal_objective(X, ys, m.coef_, lam, "logistic")
    assert primal - dual <= 1e-6 * primal
    assert m.primal_ == pytest.approx(without.primal_, rel=2e-6)


def test_catalyst_keeps_the_move_in_its_state_and_warm_starts():
    X, y = _random(60, 8, 1)
    plan, _ = plan_on_partitions(X, y, CoCoAPlus(momentum=True, acceleration="catalyst"), "logistic", 1e-3, 2)
    state = plan.init_global()
    assert isinstance(state, CatalystMomentumGlobal) and not state.move.any() and not state.step.any()
    w = np.arange(8.0)
    warm = plan.init_global_from(w)
    np.testing.assert_array_equal(warm.w, w)
    assert isinstance(warm, CatalystMomentumGlobal) and not warm.move.any()
    assert plan.local_problems == plan.inner.local_problems  # out of core, one-vs-rest problems share their reads


def test_a_warm_start_and_one_vs_rest_take_it():
    X, y = load_dataset("heart")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold = daskdca.fit(X, y, loss="logistic", lam=1e-3, solver=CoCoAPlus(momentum=True), n_partitions=2, tol=1e-8)
    warm = daskdca.fit(X, y, loss="logistic", lam=1e-3, solver=CoCoAPlus(momentum=True), n_partitions=2, tol=1e-8,
                       dual_init=cold.dual_coef_)
    # it starts at the cold fit's duals (at 0 the first round's gap is about 40 times the primal here)
    assert cold.converged_ and warm.converged_ and warm.history_[0].gap < 1e-3 * warm.primal_
    assert warm.n_rounds_ < cold.n_rounds_
    y3 = np.arange(X.shape[0]) % 3
    m = daskdca.fit(X, y3, loss="logistic", lam=1e-2, solver=CoCoAPlus(momentum=True), n_partitions=2, tol=1e-6)
    assert m.converged_ and m.coef_.shape == (3, X.shape[1])


@pytest.mark.parametrize("kwargs,match", [
    (dict(momentum=True, aggregation="line_search"), "momentum=True searches the move of CoCoA\\+'s adding"),
    (dict(momentum=True, local_solver="spdc"), "momentum=True searches the move"),
    (dict(momentum=True, l1_ratio=0.5, acceleration=None), "momentum=True searches the move"),
    (dict(momentum=1), "momentum must be 'auto', True or False, got 1"),
    (dict(momentum="yes"), "momentum must be 'auto', True or False, got 'yes'"),
])
def test_options_it_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CoCoAPlus(**kwargs)


def test_serial_sdca_takes_it_on_one_partition():
    """One partition: serial SDCA's epochs, each moved by the search (a9a, logistic, lam 1e-5, to 1e-6: 71
    epochs without it, 49 with it, the same optimum, certified from the returned duals)."""
    X, y = load_dataset("a9a")
    lam = 1e-5
    m = daskdca.fit(X, y, loss="logistic", lam=lam, solver=daskdca.SDCA(momentum=True), tol=1e-6, max_rounds=500)
    plain = daskdca.fit(X, y, loss="logistic", lam=lam, solver="sdca", tol=1e-6, max_rounds=500)
    assert isinstance(m.plan_, MomentumPlan) and m.plan_.n_partitions == 1
    assert m.converged_ and plain.converged_ and m.n_rounds_ < 0.8 * plain.n_rounds_
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    dual, w_alpha = ref.dual_objective(X, ys, m.dual_coef_, lam, "logistic")
    np.testing.assert_allclose(m.coef_, w_alpha, rtol=1e-9, atol=1e-12)
    assert primal_objective(X, ys, m.coef_, lam, "logistic") - dual <= 1e-6 * m.primal_
    assert m.primal_ == pytest.approx(plain.primal_, rel=2e-6)


def test_out_of_core_the_labels_come_without_the_rows(tmp_path):
    """A store partition's labels() (the conjugate sums' labels, out of core) are those its verified blocks carry,
    signed, with their weights, also as one binary problem of a one-vs-rest fit; read_block is not called."""
    rng = np.random.default_rng(2)
    X = sp.random(50, 6, density=0.5, random_state=2, format="csr")
    y = rng.integers(0, 3, 50).astype(np.float64)
    weight = rng.uniform(0.5, 2.0, 50)
    store = write_store(str(tmp_path / "s.zarr"), X, y, block_rows=16, sample_weight=weight)
    part = StorePartition(store, 1, store.n_blocks, 2.0)
    expected_y = np.concatenate([blk.y[lo:hi] for blk, lo, hi, _ in part.pieces()])
    expected_w = np.concatenate([blk.weight[lo:hi] for blk, lo, hi, _ in part.pieces()])
    read = []
    original = type(store).read_block
    type(store).read_block = lambda self, *args, **kwargs: read.append(args) or original(self, *args, **kwargs)
    try:
        labels, weights = part.labels()
        view = ClassView(OneVsRestPartition(StorePartition(store, 1, store.n_blocks, None), None), 1.0, 3.0)
        view_y, view_w = view.labels()
    finally:
        type(store).read_block = original
    assert read == []
    np.testing.assert_array_equal(labels, expected_y)
    np.testing.assert_array_equal(weights, expected_w)
    assert set(labels) == {-1.0, 1.0}
    rows = [binary_rows(blk, 1.0, 3.0) for blk, _, _, _ in view.part.pieces()]
    np.testing.assert_array_equal(view_y, np.concatenate([r.y for r in rows]))
    np.testing.assert_array_equal(view_w, np.concatenate([r.weight for r in rows]))


def test_auto_is_on_for_the_adding_rounds_of_two_or_more_partitions_and_a_smooth_loss():
    X, y = _random(60, 8, 1)
    cases = [(CoCoAPlus(), 2, MomentumPlan), (CoCoAPlus(acceleration=None), 3, MomentumPlan),
             (CoCoAPlus(), 1, LocalSDCAPlan), (CoCoAPlus(momentum=False), 2, LocalSDCAPlan),
             (CoCoAPlus(aggregation="line_search"), 2, LineSearchPlan),
             (CoCoAPlus(l1_ratio=0.5), 2, ProxSDCAPlan), (CoCoAPlus(local_solver="spdc"), 2, LocalSPDCPlan)]
    for method, K, expected in cases:
        plan, _ = plan_on_partitions(X, y, method, "logistic", 1e-3, K)
        plan = plan.inner if isinstance(plan, CatalystPlan) else plan
        assert type(plan) is expected, (method, K)
    # not for a loss that is not smooth: with hinge inside Catalyst the search took 5.5x the rounds on heart
    for loss in ("hinge", "epsilon_insensitive"):
        plan, _ = plan_on_partitions(X, y, CoCoAPlus(), loss, 1e-3, 2)
        assert type(plan.inner) is LocalSDCAPlan
    plan, _ = plan_on_partitions(X, y, CoCoAPlus(momentum=True), "hinge", 1e-3, 2)
    assert type(plan.inner) is MomentumPlan
