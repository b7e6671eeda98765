"""Routes, budgets and the checkpoint folder rule.

- ``solver="auto"`` picks a route (:mod:`daskdca.routes`), records it on the model, and an explicit solver is
  always obeyed; the one-worker route gives the bits of serial SDCA in this process.
- ``max_epochs`` means passes over the data on every solver.
- A checkpoint folder holds only what daskdca wrote there: other files are refused and never removed, and an
  old checkpoint is replaced only with ``overwrite=True``.
"""

import math
import os
import stat

import dask
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.problem import column_nnz, feature_overlap
from daskdca.routes import (CATALYST_LAM_N, ONE_WORKER_MEMORY_FRACTION, THREADED_SWEEP_INNER_ROUNDS,
                            THREADED_SWEEP_MAX_THREADS, THREADED_SWEEP_MIN_NNZ, Workers, choose_route, data_bytes,
                            round_passes)

from conftest import load_dataset

GiB = 1 << 30


# --- the route rule, table-driven (no cluster needed) ---------------------------------------------------------

ROUTE_CASES = [
    # name, kwargs, expected route, solver, options
    # 11,000 stored values and rows: ceil(65,536 / 11,000) = 6 passes a round (ROUND_MIN_VALUES)
    ("memory no client", dict(on_cluster=False, n=1000, nnz=10_000, lam=1e-3), "in_process", "sdca",
     {"local_iters": 6}),
    ("memory no client, local_iters given", dict(on_cluster=False, n=1000, nnz=10_000, lam=1e-3,
                                                 sdca_options=("local_iters",)), "in_process", "sdca", {}),
    ("memory no client, a round's values", dict(on_cluster=False, n=6_000, nnz=60_000, lam=1e-3), "in_process",
     "sdca", {}),
    ("memory small lam n", dict(on_cluster=False, n=1000, nnz=10_000, lam=1e-5), "in_process", "sdca",
     {"acceleration": "catalyst"}),
    ("memory lam n at the threshold", dict(on_cluster=False, n=1000, nnz=100_000, lam=CATALYST_LAM_N / 1000),
     "in_process", "sdca", {}),
    ("memory partitions asked", dict(on_cluster=False, n=1000, nnz=10, lam=1e-3, n_partitions=3), "in_process",
     "cocoa+", {}),
    ("cluster fits one worker", dict(on_cluster=True, n=10**5, nnz=10**6, lam=1e-4,
                                     workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "one_worker", "sdca", {}),
    ("cluster fits, small lam n", dict(on_cluster=True, n=10**5, nnz=10**6, lam=1e-7,
                                       workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "one_worker", "sdca",
     {"acceleration": "catalyst"}),
    ("cluster too big", dict(on_cluster=True, n=10**8, nnz=10**9, lam=1e-6,
                             workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "rounds", "cocoa+", {}),
    ("smallest worker decides", dict(on_cluster=True, n=10**6, nnz=10**8, lam=1e-6,
                                     workers=Workers((1, 1), (64 * GiB, 1 * GiB))), "rounds", "cocoa+", {}),
    ("no memory limit, small", dict(on_cluster=True, n=10**5, nnz=10**6, lam=1e-4, workers=Workers((2,), (0,))),
     "one_worker", "sdca", {}),
    ("no memory limit, huge", dict(on_cluster=True, n=10**9, nnz=10**10, lam=1e-4, workers=Workers((2,), (0,))),
     "rounds", "cocoa+", {}),
    ("checkpoint needs rounds", dict(on_cluster=True, n=100, nnz=1000, lam=1e-4, needs_rounds=["checkpoint"],
                                     workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "rounds", "cocoa+", {}),
    ("callback needs rounds", dict(on_cluster=True, n=100, nnz=1000, lam=1e-4, needs_rounds=["callback"],
                                   workers=Workers((1,), (4 * GiB,))), "rounds", "cocoa+", {}),
    ("cluster partitions asked", dict(on_cluster=True, n=100, nnz=1000, lam=1e-4, n_partitions=4,
                                      workers=Workers((1,), (4 * GiB,))), "rounds", "cocoa+", {}),
    ("no workers known", dict(on_cluster=True, n=100, nnz=1000, lam=1e-4, workers=Workers((), ())), "rounds",
     "cocoa+", {}),
    # an L1 share: the same routes, the proximal methods (never Catalyst or Newton)
    ("elastic net, small lam n", dict(on_cluster=False, n=1000, nnz=10_000, lam=1e-7, d=10, loss_name="logistic",
                                      l1_ratio=0.5), "in_process", "sdca", {"l1_ratio": 0.5}),
    ("elastic net fits one worker", dict(on_cluster=True, n=10**5, nnz=10**6, lam=1e-7, l1_ratio=0.25,
                                         workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "one_worker", "sdca",
     {"l1_ratio": 0.25}),
    ("elastic net too big", dict(on_cluster=True, n=10**8, nnz=10**9, lam=1e-6, l1_ratio=0.5,
                                 workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "rounds", "cocoa+", {"l1_ratio": 0.5}),
    ("elastic net, partitions asked", dict(on_cluster=False, n=1000, nnz=10, lam=1e-3, n_partitions=3, l1_ratio=0.5),
     "in_process", "cocoa+", {"l1_ratio": 0.5}),
    ("pure L1 in memory", dict(on_cluster=False, n=1000, nnz=10_000, lam=1e-7, d=10, loss_name="logistic",
                               l1_ratio=1.0), "in_process", "l1_sdca", {}),
    ("pure L1 fits one worker", dict(on_cluster=True, n=10**5, nnz=10**6, lam=1e-4, l1_ratio=1.0,
                                     workers=Workers((1, 1), (4 * GiB, 4 * GiB))), "one_worker", "l1_sdca", {}),
    ("pure L1 with a checkpoint", dict(on_cluster=True, n=100, nnz=1000, lam=1e-4, l1_ratio=1.0,
                                       needs_rounds=["checkpoint"], workers=Workers((1,), (4 * GiB,))), "rounds",
     "l1_sdca", {}),
]


@pytest.mark.parametrize("name, kwargs, route, solver, options", ROUTE_CASES, ids=[c[0] for c in ROUTE_CASES])
def test_route_rule(name, kwargs, route, solver, options):
    chosen = choose_route(**kwargs)
    assert (chosen.name, chosen.solver, chosen.options) == (route, solver, options)
    assert chosen.reason  # a sentence the user reads on model.route_


# --- SDCA's sweep of a partition on its threads (the split sweep): in memory, on one worker, in rounds ------

N_SPLIT = 250_000
UNIFORM = np.full(100_000, 50)  # 250,000 rows of 20 values over 100,000 features: overlap 0.0002
SPLIT = {"threads": 2, "inner_rounds": THREADED_SWEEP_INNER_ROUNDS, "inner_aggregation": "line_search"}


def test_feature_overlap_closed_forms():
    # r values a row drawn evenly from d features: r / d
    assert feature_overlap(UNIFORM, N_SPLIT) == pytest.approx(20 / 100_000)
    # a feature in every row adds about 1 / r: here (n^2 + n r c) / (n (n + n r))
    with_ones = np.append(UNIFORM, N_SPLIT)
    expected = (N_SPLIT**2 + 100_000 * 50**2) / (N_SPLIT * 21 * N_SPLIT)
    assert feature_overlap(with_ones, N_SPLIT) == pytest.approx(expected)
    assert feature_overlap(np.zeros(3, dtype=np.int64), 5) == 0.0
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(column_nnz(X), [2, 0, 2])


@pytest.mark.parametrize("index_dtype, value_dtype", [(np.int32, np.float64), (np.int64, np.float32)])
def test_column_nnz_counts_the_non_zero_stored_values(index_dtype, value_dtype):
    # the one-pass count against NumPy's: stored zeros (kept by a CSR built from its arrays) are not counted
    rng = np.random.default_rng(0)
    n, d = 300, 40
    X = sp.random(n, d, density=0.2, format="csr", random_state=1, dtype=np.float64)
    X.data[rng.random(X.nnz) < 0.3] = 0.0
    X = sp.csr_matrix((X.data.astype(value_dtype), X.indices.astype(index_dtype), X.indptr), shape=(n, d))
    assert (X.data == 0).any()
    expected = np.bincount(X.indices[X.data != 0], minlength=d)
    np.testing.assert_array_equal(column_nnz(X), expected)
    np.testing.assert_array_equal(column_nnz(X.toarray()), expected)  # dense input, as CSR
    np.testing.assert_array_equal(column_nnz(sp.csr_matrix((0, d))), np.zeros(d))


SPLIT_CASES = [
    # name, kwargs, route, options
    ("two threads, spread features", dict(n_threads=2), "in_process", SPLIT),
    ("one thread", dict(n_threads=1), "in_process", {}),
    ("no column counts", dict(n_threads=2, column_nnz=None), "in_process", {}),
    ("below the size", dict(n_threads=2, nnz=THREADED_SWEEP_MIN_NNZ - 1), "in_process", {}),
    ("features overlap", dict(n_threads=2, column_nnz=np.append(UNIFORM, N_SPLIT)), "in_process", {}),
    ("threads capped", dict(n_threads=64), "in_process", {**SPLIT, "threads": THREADED_SWEEP_MAX_THREADS}),
    ("inside Catalyst", dict(n_threads=2, lam=1e-7), "in_process", {"acceleration": "catalyst", **SPLIT}),
    ("elastic net stays one thread", dict(n_threads=2, l1_ratio=0.5), "in_process", {"l1_ratio": 0.5}),
    ("the one worker's threads", dict(on_cluster=True, workers=Workers((1, 4, 2), (4 * GiB, 8 * GiB, 8 * GiB))),
     "one_worker", {**SPLIT, "threads": 4}),
    ("a one-thread worker", dict(on_cluster=True, workers=Workers((4, 1), (4 * GiB, 8 * GiB))), "one_worker", {}),
    # rounds: each partition's sweep on the fewest of a worker's threads, where the partitions are held in memory
    ("rounds of one 4-thread worker", dict(on_cluster=True, needs_rounds=["checkpoint"],
                                           workers=Workers((4,), (8 * GiB,))), "rounds", {**SPLIT, "threads": 4}),
    ("rounds on the fewest threads", dict(on_cluster=True, size=3 * GiB // 2, workers=Workers((2, 4), (4 * GiB, 4 * GiB))),
     "rounds", SPLIT),
    ("rounds out of core", dict(on_cluster=True, needs_rounds=["in_memory=False"], workers=Workers((4,), (8 * GiB,))),
     "rounds", {}),
    ("rounds not held in memory", dict(on_cluster=True, size=5 * GiB, workers=Workers((2, 2), (4 * GiB, 4 * GiB))),
     "rounds", {}),
    ("rounds of small partitions", dict(on_cluster=True, size=3 * GiB // 2, workers=Workers((2,) * 4, (2 * GiB,) * 4)),
     "rounds", {}),
    ("a resume keeps its recorded threads", dict(on_cluster=True, needs_rounds=["checkpoint"], rounds_threads=3,
                                                 workers=Workers((1,), (8 * GiB,))), "rounds", {**SPLIT, "threads": 3}),
    ("a resume of one thread", dict(on_cluster=True, needs_rounds=["checkpoint"], rounds_threads=1,
                                    workers=Workers((4,), (8 * GiB,))), "rounds", {}),
]


@pytest.mark.parametrize("name, kwargs, route, options", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_split_sweep_rule(name, kwargs, route, options):
    base = dict(on_cluster=False, n=N_SPLIT, nnz=5_000_000, lam=1e-5, column_nnz=UNIFORM)
    chosen = choose_route(**{**base, **kwargs})
    assert (chosen.name, chosen.solver, chosen.options) == (route, "sdca" if route != "rounds" else "cocoa+", options)
    if "threads" in options:
        assert f"sweep split over {options['threads']} threads" in chosen.reason
    if name == "features overlap":
        assert "its sweep on one thread (feature overlap 0.048 > 0.01)" in chosen.reason


def test_the_one_worker_is_the_one_the_route_counts_threads_of():
    from daskdca.engine.one_worker import _worker_for

    class Client:
        def __init__(self, workers):
            self.workers = workers

        def scheduler_info(self):
            return {"workers": {address: {"nthreads": t, "memory_limit": m} for address, (t, m) in self.workers.items()}}

    workers = {"tcp://b:1": (1, 8 * GiB), "tcp://a:1": (4, 4 * GiB), "tcp://c:1": (2, 8 * GiB)}
    assert Workers((4, 1, 2), (4 * GiB, 8 * GiB, 8 * GiB)).fit_worker == 1  # sorted by address: a, b, c
    assert _worker_for(Client(workers)) == ("tcp://b:1", 1)


def test_one_worker_threshold_is_the_memory_fraction():
    limit = 8 * GiB
    n = 1000
    fits = int(ONE_WORKER_MEMORY_FRACTION * limit)
    workers = Workers((1,), (limit,))
    assert choose_route(on_cluster=True, n=n, nnz=1, lam=1e-3, workers=workers, size=fits).name == "one_worker"
    assert choose_route(on_cluster=True, n=n, nnz=1, lam=1e-3, workers=workers, size=fits + 1).name == "rounds"
    assert data_bytes(10, 100, 8, 4) == 100 * 12 + 240


def test_reason_prints_small_sizes_and_the_memory_share_plainly():
    assert ONE_WORKER_MEMORY_FRACTION == 0.25  # "a quarter" below; another fraction is printed as a percentage
    one = Workers((1,), (int(11.8 * GiB),))
    small = choose_route(on_cluster=True, n=100, nnz=1000, lam=1e-4, workers=one, size=25_000)
    assert small.name == "one_worker"
    assert small.reason.startswith("the data (24.4 KiB in memory) fits one worker (within a quarter of its "
                                   "11.8 GiB memory limit): the whole fit is one task, no rounds")
    assert "0.0 MiB" not in small.reason
    assert "(500 bytes in memory)" in choose_route(on_cluster=True, n=1, nnz=1, lam=1e-4, workers=one,
                                                   size=500).reason
    # 3 significant digits in MiB and GiB; unequal workers: the smallest one's limit decides
    mixed = Workers((1, 1), (64 * GiB, 4 * GiB))
    assert "(1.5 MiB in memory) fits one worker (within a quarter of the smallest worker's 4 GiB memory limit)" in \
        choose_route(on_cluster=True, n=1, nnz=1, lam=1e-4, workers=mixed, size=3 << 19).reason
    big = choose_route(on_cluster=True, n=1, nnz=1, lam=1e-4, workers=mixed, size=int(1.25 * GiB))
    assert big.name == "rounds"
    assert big.reason.startswith("the data (1.25 GiB in memory) does not fit one worker (more than a quarter of "
                                 "the smallest worker's 4 GiB memory limit)")
    unlimited = choose_route(on_cluster=True, n=1, nnz=1, lam=1e-4, workers=Workers((1,), (0,)), size=2048)
    assert "(2 KiB in memory) fits one worker (within 4 GiB, the most one worker takes without a memory limit)" \
        in unlimited.reason


def test_round_passes_and_a_budget_in_passes():
    # a round visits at least ROUND_MIN_VALUES stored values and rows: ceil(65,536 / 3,270) = 21
    assert round_passes(270, 3_000) == 21 and round_passes(10**6, 10**7) == 1 and round_passes(1, 0) == 65_536
    assert round_passes(270, 3_000, max_epochs=5.9) == 5 and round_passes(270, 3_000, max_epochs=0.5) == 1
    X, y = load_dataset("heart")
    passes = round_passes(X.shape[0], X.nnz)
    # max_epochs counts the passes the rounds take (a round with shrinking may end before its passes): the fit
    # stops once they reach it, past it by less than a round's passes
    for budget in (2 * passes + 1, 10 * passes):
        with pytest.warns(ConvergenceWarning):
            short = daskdca.fit(X, y, loss="hinge", lam=1e-2, tol=1e-14, max_epochs=budget)
        assert short.route_.options == {"local_iters": passes}
        assert budget <= short.n_epochs_ < budget + passes
        assert short.history_[-2].epochs < budget  # the last round started with passes left
    # a budget under a round's passes: the round holds the budget
    with pytest.warns(ConvergenceWarning):
        tiny = daskdca.fit(X, y, loss="hinge", lam=1e-2, tol=1e-14, max_epochs=3.5)
    assert tiny.route_.options == {"local_iters": 3} and 3.5 <= tiny.n_epochs_ < 6.5
    with pytest.warns(ConvergenceWarning):
        one_pass = daskdca.fit(X, y, loss="hinge", lam=1e-2, tol=1e-14, max_epochs=3, solver="sdca")
    assert one_pass.n_rounds_ == 3 and one_pass.n_epochs_ == pytest.approx(3)


def test_auto_in_memory_runs_serial_sdca_and_records_why():
    X, y = load_dataset("heart")
    n = X.shape[0]
    plain = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-8)
    assert plain.route_.name == "in_process" and plain.solver.name == "sdca" and plain.solver.acceleration == "auto"
    # auto at lam n >= 0.1 is plain SDCA, on heart's 270 rows with round_passes' passes a round
    passes = round_passes(n, X.nnz)
    assert passes > 1 and plain.route_.options == {"local_iters": passes} and f"{passes} passes a round" in \
        plain.route_.reason
    same = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-8, solver=daskdca.SDCA(local_iters=passes))
    np.testing.assert_array_equal(plain.coef_, same.coef_)
    small_lam = 0.5 * CATALYST_LAM_N / n
    # hinge (no Newton): SDCA inside Catalyst
    small = daskdca.fit(X, y, loss="hinge", lam=small_lam, tol=1e-8)
    assert small.solver.acceleration == "catalyst" and "Catalyst" in small.route_.reason
    catalyst = daskdca.fit(X, y, loss="hinge", lam=small_lam, tol=1e-8, solver=daskdca.SDCA(acceleration="catalyst"))
    np.testing.assert_array_equal(small.coef_, catalyst.coef_)
    # a smooth loss and 13 features: primal Newton
    newton = daskdca.fit(X, y, loss="logistic", lam=small_lam, tol=1e-8)
    assert newton.solver.name == "newton" and "Newton" in newton.route_.reason and newton.converged_
    # ... unless the fit starts from given duals, which Newton does not take
    warm = daskdca.fit(X, y, loss="logistic", lam=small_lam, tol=1e-8, dual_init=plain.dual_coef_)
    assert warm.solver.name == "sdca" and warm.solver.acceleration == "catalyst"
    # an explicit solver is obeyed, and the route says so
    explicit = daskdca.fit(X, y, loss="logistic", lam=small_lam, tol=1e-8, solver="sdca")
    assert explicit.solver.acceleration == "auto" and "given" in explicit.route_.reason


def test_auto_with_an_l1_share_runs_the_proximal_methods():
    from daskdca.methods.l1 import L1SDCA

    X, y = load_dataset("heart")
    kw = dict(loss="logistic", lam=1e-2, tol=1e-8)
    elastic = daskdca.fit(X, y, l1_ratio=0.5, **kw)
    assert elastic.route_.name == "in_process" and "l1_ratio = 0.5" in elastic.route_.reason
    assert elastic.solver == daskdca.SDCA(l1_ratio=0.5)
    named = daskdca.fit(X, y, solver=daskdca.SDCA(l1_ratio=0.5), **kw)
    np.testing.assert_array_equal(elastic.coef_, named.coef_)
    np.testing.assert_array_equal(elastic.dual_coef_, named.dual_coef_)
    assert (elastic.primal_, elastic.gap_) == (named.primal_, named.gap_)
    # a solver named by a string takes the share as its own
    by_name = daskdca.fit(X, y, solver="sdca", l1_ratio=0.5, **kw)
    np.testing.assert_array_equal(elastic.coef_, by_name.coef_)
    # l1_ratio = 1: the pure L1 problem, L1SDCA's bits
    pure = daskdca.fit(X, y, l1_ratio=1.0, **kw)
    assert isinstance(pure.solver, L1SDCA) and pure.converged_
    l1 = daskdca.fit(X, y, solver=L1SDCA(), **kw)
    np.testing.assert_array_equal(pure.coef_, l1.coef_)
    assert (pure.primal_, pure.dual_) == (l1.primal_, l1.dual_)
    assert (pure.coef_ == 0).any()
    # partitions asked: the proximal CoCoA+ rounds
    parts = daskdca.fit(X, y, l1_ratio=0.5, n_partitions=2, **kw)
    rounds = daskdca.fit(X, y, solver=daskdca.CoCoAPlus(l1_ratio=0.5), n_partitions=2, **kw)
    assert parts.solver.name == "cocoa+" and parts.route_.n_partitions == 2
    np.testing.assert_array_equal(parts.coef_, rounds.coef_)
    # 0 is the L2 problem, bit for bit
    np.testing.assert_array_equal(daskdca.fit(X, y, l1_ratio=0.0, **kw).coef_, daskdca.fit(X, y, **kw).coef_)


@pytest.mark.parametrize("kwargs, match", [
    (dict(l1_ratio=1.5), "l1_ratio must be a number in \\[0, 1\\]"),
    (dict(l1_ratio="0.5"), "l1_ratio must be a number"),
    (dict(l1_ratio=True), "l1_ratio must be a number"),
    (dict(l1_ratio=float("nan")), "l1_ratio must be a number"),
    (dict(l1_ratio=0.5, solver=daskdca.SDCA()), "set it on the object"),
    (dict(l1_ratio=0.5, solver="pegasos"), "l1_ratio applies to solver='auto' and"),
    (dict(l1_ratio=1.0, solver="sdca"), "l1_ratio=1 \\(pure L1\\) is not supported"),
])
def test_l1_ratio_is_checked(kwargs, match):
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=match):
        daskdca.fit(X, y, loss="logistic", lam=1e-2, **kwargs)


def test_l1_ratio_with_more_classes_names_the_method_and_the_fix():
    X, y = load_dataset("heart")
    three = np.where(X[:, 0].toarray().ravel() > 0.3, 2.0, y)
    with pytest.raises(ValueError, match=r"solver=SDCA\(.*l1_ratio=0.5.*cannot fit the one-vs-rest.*l1_ratio=0.*"
                                         r"SDCAClassifier"):
        daskdca.fit(X, three, loss="logistic", lam=1e-2, l1_ratio=0.5)


def test_newton_route_rule():
    workers = Workers((1, 1), (4 * GiB, 4 * GiB))
    few = dict(n=10**5, nnz=10**6, d=100, loss_name="logistic")
    assert choose_route(on_cluster=False, lam=1e-3, **few).solver == "sdca"  # lam n = 100: SDCA is quick
    assert choose_route(on_cluster=False, lam=1e-7, **few).solver == "newton"
    assert choose_route(on_cluster=False, lam=1e-7, **{**few, "loss_name": "hinge"}).solver == "sdca"
    assert choose_route(on_cluster=False, lam=1e-7, **{**few, "d": 10**5}).solver == "sdca"
    assert choose_route(on_cluster=False, lam=1e-7, warm_start=True, **few).solver == "sdca"
    # an option only the dual methods take asks for them, in one process and in rounds
    assert choose_route(on_cluster=False, lam=1e-7, sdca_options=("local_iters",), **few).solver == "sdca"
    # the threshold on lam n (routes.NEWTON_LAM_N = 2): Newton at lam n = 1, SDCA at lam n = 3
    assert choose_route(on_cluster=False, lam=1e-5, **few).solver == "newton"
    assert choose_route(on_cluster=False, lam=3e-5, **few).solver == "sdca"
    assert "< 2" in choose_route(on_cluster=False, lam=1e-5, **few).reason
    # several workers and data of at least NEWTON_ROUNDS_MIN_NNZ stored values: Newton rounds over them all even
    # where the data fits one; below it, or with one worker, the one-worker route
    from daskdca.routes import NEWTON_ROUNDS_MIN_NNZ

    fits = dict(n=10**6, d=100, loss_name="logistic", on_cluster=True, lam=1e-7)
    many = choose_route(nnz=NEWTON_ROUNDS_MIN_NNZ, workers=workers, **fits)
    assert (many.name, many.solver, many.n_partitions) == ("rounds", "newton", None)
    assert "Newton rounds over the 2 workers" in many.reason
    assert choose_route(nnz=NEWTON_ROUNDS_MIN_NNZ - 1, workers=workers, **fits).name == "one_worker"
    one = Workers((1,), (8 << 30,))
    assert choose_route(nnz=NEWTON_ROUNDS_MIN_NNZ, workers=one, **fits).name == "one_worker"
    assert choose_route(nnz=NEWTON_ROUNDS_MIN_NNZ, workers=workers, **{**fits, "loss_name": "hinge"}).name == "one_worker"
    # rounds: Newton's handful of rounds whatever lam
    big = dict(n=10**8, nnz=10**9, d=100, loss_name="logistic", workers=workers, on_cluster=True)
    assert choose_route(lam=1e-3, **big).solver == "newton"
    assert choose_route(lam=1e-3, **{**big, "loss_name": "hinge"}).solver == "cocoa+"


# --- budgets: max_epochs means passes on every solver -----------------------------------------------------------

@pytest.mark.parametrize("solver, rounds_per_epoch", [
    ("sdca", lambda n: 1),
    ("cocoa+", lambda n: 1),
    (daskdca.MinibatchSDCA(batch_size=27), lambda n: math.ceil(n / 27)),
    (daskdca.SPDC(batch_size=10), lambda n: math.ceil(n / 10)),
    (daskdca.MinibatchPegasos(batch_size=50), lambda n: math.ceil(n / 50)),
])
@pytest.mark.parametrize("max_epochs", [1, 2.5, 3])
def test_max_epochs_is_passes_over_the_data(solver, rounds_per_epoch, max_epochs):
    X, y = load_dataset("heart")
    n = X.shape[0]
    with pytest.warns(ConvergenceWarning, match="max_epochs"):
        m = daskdca.fit(X, y, loss="smoothed_hinge", lam=1e-6, tol=0.0, solver=solver, max_epochs=max_epochs)
    assert m.n_rounds_ == math.ceil(max_epochs * rounds_per_epoch(n))
    assert not m.converged_


def test_budgets_combine_and_check():
    X, y = load_dataset("heart")
    with pytest.warns(ConvergenceWarning):
        m = daskdca.fit(X, y, lam=1e-6, tol=0.0, max_epochs=5, max_rounds=3)
    assert m.n_rounds_ == 3  # the smaller budget holds
    for bad in (0, -1.0, float("nan"), "10", True):
        with pytest.raises(ValueError, match="max_epochs"):
            daskdca.fit(X, y, max_epochs=bad)


# --- the cluster: one worker gives in-process bits, the embedded cluster, checkpoints ------------------------

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def test_one_worker_route_gives_the_in_process_bits(client, tmp_path):
    X, y = load_dataset("heart")
    here = daskdca.fit(X, y, loss="logistic", lam=1e-3, tol=1e-10)
    there = daskdca.fit(X, y, loss="logistic", lam=1e-3, tol=1e-10, client=client)
    assert there.route_.name == "one_worker"
    np.testing.assert_array_equal(here.coef_, there.coef_)
    np.testing.assert_array_equal(here.dual_coef_, there.dual_coef_)
    assert (here.primal_, here.dual_, here.n_rounds_) == (there.primal_, there.dual_, there.n_rounds_)
    # a store on one worker: the same rows as one partition, certified
    store = daskdca.write_store(tmp_path / "h.zarr", X, y, block_rows=50, shuffle=False)
    on_store = daskdca.fit(store, loss="logistic", lam=1e-3, tol=1e-10, client=client)
    assert on_store.route_.name == "one_worker" and on_store.converged_
    assert on_store.primal_ == pytest.approx(here.primal_, rel=1e-9)
    # a checkpoint needs rounds: the route says so
    ck = daskdca.fit(store, loss="logistic", lam=1e-3, tol=1e-8, client=client, checkpoint=tmp_path / "ck")
    assert ck.route_.name == "rounds" and "checkpoint" in ck.route_.reason
    assert ck.route_.n_partitions == 2  # one per worker


def test_penalised_auto_fits_take_the_one_worker_route(client):
    """With a client, an L1 share routes as L2 does: data that fits one worker is one task there, with the bits
    of the fit in this process (the estimators' penalty='l1' and 'elasticnet' included)."""
    X, y = load_dataset("heart")
    kw = dict(loss="logistic", lam=1e-2, tol=1e-8)
    for rho in (0.5, 1.0):
        here = daskdca.fit(X, y, l1_ratio=rho, **kw)
        there = daskdca.fit(X, y, l1_ratio=rho, client=client, **kw)
        assert there.route_.name == "one_worker" and f"l1_ratio = {rho:g}" in there.route_.reason
        np.testing.assert_array_equal(here.coef_, there.coef_)
        np.testing.assert_array_equal(here.dual_coef_, there.dual_coef_)
        assert (here.primal_, here.dual_, here.n_rounds_) == (there.primal_, there.dual_, there.n_rounds_)
    for params in (dict(penalty="l1"), dict(penalty="elasticnet", l1_ratio=0.5)):
        local = daskdca.SDCAClassifier(loss="logistic", C=1.0, tol=1e-8, **params).fit(X, y)
        remote = daskdca.SDCAClassifier(loss="logistic", C=1.0, tol=1e-8, client=client, **params).fit(X, y)
        assert remote.route_.name == "one_worker"
        np.testing.assert_array_equal(local.coef_, remote.coef_)
        np.testing.assert_array_equal(local.intercept_, remote.intercept_)
    # the cross-validated estimator's paths and refit take the same route
    cv_params = dict(loss="logistic", penalty="l1", Cs=[0.1, 1.0], cv=2, tol=1e-8)
    cv_local = daskdca.SDCAClassifierCV(**cv_params).fit(X, y)
    cv_remote = daskdca.SDCAClassifierCV(client=client, **cv_params).fit(X, y)
    assert cv_remote.route_.name == "one_worker"
    np.testing.assert_array_equal(cv_local.scores_, cv_remote.scores_)
    np.testing.assert_array_equal(cv_local.coef_, cv_remote.coef_)
    # what only rounds honour still takes rounds, with the proximal method
    rounds = daskdca.fit(X, y, l1_ratio=0.5, client=client, callback=lambda record, state: None, **kw)
    assert rounds.route_.name == "rounds" and rounds.solver == daskdca.CoCoAPlus(l1_ratio=0.5) and rounds.converged_


def test_client_address_string(client):
    X, y = load_dataset("heart")
    m = daskdca.fit(X, y, loss="logistic", lam=1e-3, tol=1e-8, client=client.scheduler.address)
    assert m.route_.name == "one_worker" and m.converged_
    # nothing listens on port 9: the fit waits Dask's connect timeout, shortened here
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), \
            pytest.raises(ValueError, match="no Dask scheduler answered"):
        daskdca.fit(X, y, client="tcp://127.0.0.1:9")
    with pytest.raises(TypeError, match="client must be"):
        daskdca.fit(X, y, client=3.5)


def _checkpointed(store, client, path, **kwargs):
    return daskdca.fit(store, loss="logistic", lam=1e-2, tol=1e-8, solver="cocoa+", client=client,
                       checkpoint=path, checkpoint_every=2, **kwargs)


def _setup_user_file(path):
    path.mkdir()
    (path / "notes.txt").write_text("mine")
    return [path / "notes.txt"]


def _setup_store_inside(path):
    path.mkdir()
    X, y = load_dataset("heart")
    daskdca.write_store(path / "data.zarr", X, y)
    return [path / "data.zarr" / "zarr.json"]


def _setup_file_not_folder(path):
    path.write_text("a file")
    return [path]


CHECKPOINT_REFUSALS = [
    # name, setup(path) -> files that must survive, extra fit kwargs, message
    ("user file, fresh fit", _setup_user_file, {}, "holds other files"),
    ("user file, overwrite", _setup_user_file, {"overwrite": True}, "holds other files"),
    ("store inside, fresh fit", _setup_store_inside, {}, "holds other files"),
    ("store inside, overwrite", _setup_store_inside, {"overwrite": True}, "holds other files"),
    ("a file, not a folder", _setup_file_not_folder, {}, "is a file"),
]


@pytest.mark.parametrize("name, setup, kwargs, match", CHECKPOINT_REFUSALS, ids=[c[0] for c in CHECKPOINT_REFUSALS])
def test_checkpoint_folder_with_other_files_is_refused_and_kept(client, tmp_path, name, setup, kwargs, match):
    X, y = load_dataset("heart")
    store = daskdca.write_store(tmp_path / "s.zarr", X, y, block_rows=135)
    path = tmp_path / "ck"
    survivors = setup(path)
    before = {p: p.read_bytes() for p in survivors}
    with pytest.raises(ValueError, match=match):
        _checkpointed(store, client, path, **kwargs)
    assert {p: p.read_bytes() for p in survivors} == before


def test_old_checkpoint_is_replaced_only_on_request(client, tmp_path):
    X, y = load_dataset("heart")
    store = daskdca.write_store(tmp_path / "s.zarr", X, y, block_rows=135)
    path = tmp_path / "ck"
    first = _checkpointed(store, client, path)
    with pytest.raises(ValueError, match="already holds a daskdca checkpoint.*resume=True.*overwrite=True"):
        _checkpointed(store, client, path)
    again = _checkpointed(store, client, path, overwrite=True)  # replaced: same fit, same bits
    np.testing.assert_array_equal(first.coef_, again.coef_)
    # a foreign file put into a checkpoint is never removed, even with overwrite=True
    (path / "mine.txt").write_text("keep")
    for kwargs in ({}, {"overwrite": True}):
        with pytest.raises(ValueError, match="did not write.*'mine.txt'"):
            _checkpointed(store, client, path, **kwargs)
    assert (path / "mine.txt").read_text() == "keep"
    # resume with a foreign file: refused too (it would write beside it)
    with pytest.raises(ValueError, match="did not write"):
        _checkpointed(store, client, path, resume=True)
    os.remove(path / "mine.txt")
    resumed = _checkpointed(store, client, path, resume=True)
    np.testing.assert_array_equal(first.coef_, resumed.coef_)


@pytest.mark.parametrize("kwargs, match", [
    ({"overwrite": True}, "needs checkpoint=PATH"),
    ({"overwrite": True, "resume": True, "checkpoint": "ck"}, "drop one of them"),
    ({"overwrite": "yes"}, "overwrite must be True or False"),
])
def test_overwrite_arguments(client, tmp_path, kwargs, match):
    X, y = load_dataset("heart")
    if "checkpoint" in kwargs:
        kwargs = {**kwargs, "checkpoint": tmp_path / kwargs["checkpoint"]}
    with pytest.raises(ValueError, match=match):
        daskdca.fit(X, y, solver="cocoa+", client=client, **kwargs)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_checkpoint_folder_is_a_clear_error(client, tmp_path):
    X, y = load_dataset("heart")
    path = tmp_path / "ro"
    path.mkdir()
    path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(ValueError, match="cannot be written"):
            daskdca.fit(X, y, solver="cocoa+", client=client, checkpoint=path)
    finally:
        path.chmod(stat.S_IRWXU)


@pytest.mark.parametrize("alias, name", [("log_loss", "logistic"), ("squared_error", "squared")])
def test_scikit_learn_loss_names_are_aliases(alias, name):
    X, y = load_dataset("heart")
    a = daskdca.fit(X, y, loss=alias, lam=1e-2, tol=1e-8)
    b = daskdca.fit(X, y, loss=name, lam=1e-2, tol=1e-8)
    assert a.loss.name == name
    np.testing.assert_array_equal(a.coef_, b.coef_)
    est = (daskdca.SDCAClassifier if name == "logistic" else daskdca.SDCARegressor)
    np.testing.assert_array_equal(est(loss=alias).fit(X, y).coef_, est(loss=name).fit(X, y).coef_)


def test_one_worker_route_shows_its_records_with_verbose(client, capsys):
    X, y = load_dataset("heart")
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-8, client=client, verbose=1)
    assert model.route_.name == "one_worker"
    shown = capsys.readouterr()
    assert f"round {model.n_rounds_:5d}" in shown.out + shown.err  # the last record, as rounds print it


@pytest.mark.parametrize("C,newton", [(10.0, False), (0.5, True)], ids=["catalyst", "newton"])
def test_lam_n_at_a_rules_bound_reads_as_the_bound(C, newton):
    """The estimators' ``lam = 1 / (C n)`` gives ``lam n`` back as ``1 / C`` only to rounding (a9a's n, C = 10:
    0.09999999999999999), which took SDCA inside Catalyst for a rule ``lam n < 0.1`` and said "lam n = 0.1 <
    0.1"; at C = 0.5 Newton for ``lam n < 2``.  At the bound the rules now read the bound."""
    n = 32561
    lam = 1.0 / (C * n)
    assert lam * n < 1.0 / C  # the rounding this is about
    solver, options, why = daskdca.routes._serial_solver(lam, n, 10**6, newton, False, None)
    assert (solver, options) == ("sdca", {})
    assert why.startswith(f"lam n = {1.0 / C:g} >= ")


def test_a_worker_without_a_memory_limit_does_not_lift_the_others_limits():
    """With one worker of no limit and one of 1 GiB, 3 GiB of data went to the one-worker route (the 4 GiB rule
    of workers without a limit), and to the 1 GiB worker, which ranked above "no limit"; and the rounds held
    their partitions in memory whatever the size.  Each worker's capacity now counts: the unlimited worker is
    chosen, data over the limited worker's quarter does not go to one worker, and the limited worker's share
    bounds what rounds hold."""
    from daskdca.routes import Workers, fits_one_worker, held_in_memory

    gib = 1 << 30
    mixed = Workers(nthreads=(1, 1), memory_limits=(0, gib))
    assert mixed.fit_worker == 0
    assert fits_one_worker(0.25 * gib, mixed) and not fits_one_worker(3 * gib, mixed)
    assert held_in_memory(0.5 * gib, mixed) and not held_in_memory(3 * gib, mixed)
    unlimited = Workers(nthreads=(1, 1), memory_limits=(0, 0))
    assert fits_one_worker(3 * gib, unlimited) and held_in_memory(30 * gib, unlimited)
    assert Workers(nthreads=(1, 1), memory_limits=(gib, 32 * gib)).fit_worker == 1
