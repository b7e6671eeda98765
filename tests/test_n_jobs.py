"""Threads of a fit in this process: ``daskdca.fit(n_jobs=...)``, the estimators' and the CLI's ``n_jobs``.

The in-process executor runs the partitions' steps on up to ``n_jobs``
threads and gives each step its share (``thread_budget``): primal Newton
and multinomial L-BFGS sum their pass in fixed row chunks on it, serial
SDCA runs its gap sums on a second thread only when the budget has one.
Checked here: the same bits for every ``n_jobs`` (several partitions of
CoCoA+ and Newton, the chunks, serial SDCA), the chunked rounds against the
NumPy references, the threads actually used, the default (the process's
cores, capped by ``NUMBA_NUM_THREADS``), and the values refused.  Where
``solver="auto"`` splits SDCA's sweep over the threads (in memory, and in
rounds over a worker's threads): the route, the certificate, the same bits
for the same threads, and a resume that keeps the recorded threads.
"""

import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
import daskdca.methods.base as base_module
import daskdca.methods.newton as newton_module
import daskdca.methods.sdca as sdca_module
from daskdca import SDCAClassifier, SDCAClassifierCV, SDCARegressor
from daskdca.cli import main as cli_main
from daskdca.driver import fit_in_process
from daskdca.losses import get_loss
from daskdca.methods import CoCoAPlus, Newton
from daskdca.methods.base import current_thread_budget, process_cores, thread_budget, threaded_map

import reference_newton as refn
from conftest import DriverDied, data_path, driver_dies_at, load_dataset, random_labels, random_sparse


def _same_fit(a, b):
    for name in ("w", "alpha"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.primal, a.dual, a.n_rounds) == (b.primal, b.dual, b.n_rounds)
    assert [h.gap for h in a.history] == [h.gap for h in b.history]


def test_threaded_map_keeps_the_order_and_uses_the_budget():
    seen = []

    def work(i):
        seen.append(threading.current_thread().name)
        return i * i

    with thread_budget(1):
        assert current_thread_budget() == 1
        assert threaded_map(work, list(range(5))) == [0, 1, 4, 9, 16]
    assert set(seen) == {threading.current_thread().name}  # one thread: the caller's
    seen.clear()
    with thread_budget(3):
        assert threaded_map(work, list(range(40))) == [i * i for i in range(40)]
    assert all(name.startswith("daskdca-chunk") for name in seen)


def test_process_cores_takes_numba_num_threads_as_a_cap_and_not_omp_num_threads(monkeypatch):
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = process_cores()
    assert cores >= 1
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert process_cores() == 1
    monkeypatch.setenv("NUMBA_NUM_THREADS", "not a number")  # ignored
    assert process_cores() == cores
    monkeypatch.setenv("NUMBA_NUM_THREADS", str(cores + 5))  # a cap, never more than the cores
    assert process_cores() == cores
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert current_thread_budget() == 1  # outside any thread_budget the budget is the process's cores
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    # a Dask nanny writes OMP_NUM_THREADS=1 into the process that starts a LocalCluster: not a cap here
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert process_cores() == cores


@pytest.mark.parametrize("method", [CoCoAPlus(), Newton()], ids=["cocoa+", "newton"])
def test_partitions_on_threads_give_the_bits_of_one_thread(method):
    """Four partitions stepped on 1, 2 and 4 threads: every bit of the fit, its history included, is the same."""
    X, y = random_sparse(600, 30, 0.3, seed=3), random_labels(600, 4)
    fits = [fit_in_process(method, X, y, loss=get_loss("logistic"), lam=1e-3, n_partitions=4, random_state=2,
                           tol=1e-10, max_rounds=30, n_threads=t) for t in (1, 2, 4)]
    for other in fits[1:]:
        _same_fit(fits[0], other)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_newton_chunks_match_the_reference_and_the_threads(monkeypatch, loss):
    """Newton's pass in chunks of 50 rows (heart: 6 chunks, the last short) on 1 and 3 threads: the same bits,
    and each round's point the one of the NumPy reference (``reference_newton.newton_points``)."""
    monkeypatch.setattr(base_module, "CHUNK_ROWS", 50)
    X, y = load_dataset("heart")
    ys = np.where(y > 0, 1.0, -1.0)
    lam = 1e-3
    expected = refn.newton_points(X, ys, lam, loss, 4)
    for rounds in range(1, 5):
        fits = [fit_in_process(Newton(), X, ys, loss=get_loss(loss), lam=lam, n_partitions=1, random_state=0,
                               tol=0.0, max_rounds=rounds, n_threads=t) for t in (1, 3)]
        _same_fit(fits[0], fits[1])
        np.testing.assert_allclose(fits[0].w, expected[rounds - 1], rtol=1e-8, atol=1e-10)


def test_lbfgs_chunks_match_the_reference_and_the_threads(monkeypatch):
    """Multinomial L-BFGS with its pass in chunks of 64 rows (500 digits: 8 chunks) on 1 and 3 threads: the same
    bits, and the points of the NumPy reference (``reference_multinomial_lbfgs.lbfgs_points``)."""
    from sklearn.datasets import load_digits

    import reference_multinomial_lbfgs as ref

    monkeypatch.setattr(base_module, "CHUNK_ROWS", 64)
    X, y = load_digits(return_X_y=True)
    X, y = X[:500] / 16.0, y[:500]
    lam, rounds = 1e-3, 6
    fits = []
    for n_jobs in (1, 3):
        seen = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # tol=0: every round runs
            daskdca.fit(X, y, loss="logistic", lam=lam, solver="multinomial_lbfgs", tol=0.0, max_rounds=rounds,
                        n_jobs=n_jobs, callback=lambda record, state, seen=seen: seen.append(np.array(state.w)))
        fits.append(seen)
    assert len(fits[0]) == rounds
    for a, b in zip(*fits):
        np.testing.assert_array_equal(a, b)
    want = ref.lbfgs_points(sp.csr_matrix(X), y.astype(np.int64), np.ones(X.shape[0]), lam, rounds + 1)[1:]
    for got, point in zip(fits[0], want):
        np.testing.assert_allclose(got.ravel(), point, rtol=1e-12, atol=1e-12 * np.abs(point).max())


def test_newton_chunks_run_on_the_budgets_threads(monkeypatch):
    """With 2 threads the chunks' sums run on the chunk threads; with 1, in the fit's own thread."""
    monkeypatch.setattr(base_module, "CHUNK_ROWS", 50)
    names = []
    original = newton_module.newton_sums

    def spy(*args):
        names.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(newton_module, "newton_sums", spy)
    X, y = load_dataset("heart")
    ys = np.where(y > 0, 1.0, -1.0)
    for threads, chunk_threads in ((1, False), (2, True)):
        names.clear()
        fit_in_process(Newton(), X, ys, loss=get_loss("logistic"), lam=1e-3, n_partitions=1, random_state=0,
                       tol=0.0, max_rounds=2, n_threads=threads)
        assert len(names) == 2 * 6  # two rounds of six chunks
        assert any(name.startswith("daskdca-chunk") for name in names) == chunk_threads


def count_gap_thread_calls(monkeypatch):
    """A list that grows by one each time serial SDCA hands a round's gap sums to the gap thread."""
    submitted = []
    thread = sdca_module.gap_thread

    def counted():
        submitted.append(1)
        return thread()

    monkeypatch.setattr(sdca_module, "gap_thread", counted)
    return submitted


def test_serial_sdca_runs_its_gap_sums_beside_the_sweep_only_with_a_second_thread(monkeypatch):
    """``n_jobs=1``: no gap thread; ``n_jobs=2``: every round's sums go there; the bits are the same."""
    X, y = load_dataset("a9a")
    X, y = X[:3000], np.where(y[:3000] > 0, 1.0, -1.0)
    submitted = count_gap_thread_calls(monkeypatch)
    fits = {}
    for n_jobs in (1, 2):
        submitted.clear()
        fits[n_jobs] = daskdca.fit(X, y, loss="logistic", lam=1e-3, solver="sdca", n_jobs=n_jobs)
        assert (len(submitted) > 0) == (n_jobs == 2)
    np.testing.assert_array_equal(fits[1].coef_, fits[2].coef_)
    np.testing.assert_array_equal(fits[1].dual_coef_, fits[2].dual_coef_)


def test_small_data_keeps_its_gap_sums_on_the_sweeps_thread(monkeypatch):
    """Below GAP_THREAD_MIN_NNZ stored values the hand-off to the second core costs more than the sums: they run on
    the sweep's thread even with two threads; from the threshold they go to the second core."""
    X, y = load_dataset("a9a")
    submitted = count_gap_thread_calls(monkeypatch)
    rows = int(np.searchsorted(X.indptr, sdca_module.GAP_THREAD_MIN_NNZ))  # the first rows holding that many values
    for n, expected in ((rows - 1, False), (rows, True)):
        submitted.clear()
        assert (X[:n].nnz >= sdca_module.GAP_THREAD_MIN_NNZ) == expected
        daskdca.fit(X[:n], y[:n], loss="logistic", lam=1.0 / n, solver="sdca", tol=1e-3, n_jobs=2)
        assert bool(submitted) == expected


def test_fit_gives_the_same_bits_for_every_n_jobs_and_says_its_threads():
    X, y = load_dataset("a9a")
    models = {j: daskdca.fit(X, y, loss="logistic", lam=1e-6, n_jobs=j) for j in (1, 2, -1, None)}
    assert models[1].route_.solver == "newton"
    for j, model in models.items():
        np.testing.assert_array_equal(model.coef_, models[1].coef_)
        np.testing.assert_array_equal(model.dual_coef_, models[1].dual_coef_)
        threads = {1: 1, 2: 2}.get(j, process_cores())
        assert model.route_.reason.endswith(f"; {threads} thread{'s' if threads > 1 else ''} (n_jobs)")


@pytest.mark.parametrize("bad", [0, 1.5, True, "2"])
def test_bad_n_jobs_is_refused_with_its_value(bad):
    X, y = random_sparse(50, 5, 0.5, seed=1), random_labels(50, 2)
    with pytest.raises(ValueError, match=f"n_jobs must be None, a positive int or a negative int.*got {bad!r}"):
        daskdca.fit(X, y, n_jobs=bad)


def test_n_jobs_on_a_cluster_fit_is_refused_before_anything_starts():
    X, y = random_sparse(50, 5, 0.5, seed=1), random_labels(50, 2)
    with pytest.raises(ValueError, match="n_jobs=2 sets the threads of a fit in this process"):
        daskdca.fit(X, y, n_jobs=2, client="tcp://127.0.0.1:9")  # nothing listens there: the check comes first


def test_estimators_pass_n_jobs_and_the_cv_keeps_its_own_for_the_paths(monkeypatch):
    X, y = load_dataset("heart")
    one = SDCAClassifier(loss="logistic", C=10.0, n_jobs=1).fit(X, y)
    two = SDCAClassifier(loss="logistic", C=10.0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    assert one.route_.reason.endswith("; 1 thread (n_jobs)") and two.route_.reason.endswith("; 2 threads (n_jobs)")
    reg = SDCARegressor(C=1.0, n_jobs=1).fit(X, y)
    assert reg.route_.reason.endswith("; 1 thread (n_jobs)")
    given = []
    fit = daskdca.api.fit

    def spy(*args, **kwargs):
        given.append(kwargs.get("n_jobs"))
        return fit(*args, **kwargs)

    monkeypatch.setattr(daskdca.api, "fit", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SDCAClassifierCV(Cs=2, cv=2, n_jobs=2, loss="logistic").fit(X, y)
    # the CV's n_jobs runs its paths (in processes, where the spy does not reach); its refit here takes the
    # default threads, not the CV's n_jobs
    assert given and all(value is None for value in given)


def test_cli_n_jobs(capsys):
    heart = str(data_path("heart_scale"))
    assert cli_main(["fit", heart, "--loss", "logistic", "--n-jobs", "1", "--quiet"]) == 0
    assert cli_main(["fit", heart, "--loss", "logistic", "--n-jobs", "0", "--quiet"]) == 2
    assert "n_jobs must be None, a positive int or a negative int" in capsys.readouterr().err


def test_advise_probes_with_the_fits_threads_and_names_them():
    X, y = load_dataset("heart")
    advice = daskdca.advise(X, y, loss="logistic", lam=1e-3, n_jobs=1)
    assert advice.route == daskdca.fit(X, y, loss="logistic", lam=1e-3, n_jobs=1).route_
    assert advice.route.reason.endswith("; 1 thread (n_jobs)")
    with pytest.raises(ValueError, match="n_jobs=2 sets the threads of a fit in this process"):
        daskdca.advise(X, y, loss="logistic", lam=1e-3, n_jobs=2, client="tcp://127.0.0.1:9")


def test_split_sweep_runs_on_the_fits_threads_certified_with_the_same_bits_each_run(monkeypatch):
    """With ``n_jobs >= 2`` on data whose features overlap little, ``solver="auto"`` splits serial SDCA's sweep over
    the threads (the size threshold lowered here so that a small set takes it): the route says so, the model
    runs ``SDCA(threads=2, inner_aggregation="line_search")``, its gap holds from the returned duals, reruns
    give the same bits, and ``n_jobs=1`` is plain serial SDCA."""
    import daskdca.routes as routes_module
    import reference_kernels as ref
    from references import primal_objective

    monkeypatch.setattr(routes_module, "THREADED_SWEEP_MIN_NNZ", 0)
    # one pass a round, as on data of the split's size (far above ROUND_MIN_VALUES)
    monkeypatch.setattr(routes_module, "ROUND_MIN_VALUES", 0)
    X = random_sparse(3000, 20_000, 3e-4, seed=4)  # about 6 values a row over 20,000 features
    y = random_labels(3000, 5)
    lam, tol = 1e-3, 1e-6
    runs = [daskdca.fit(X, y, loss="logistic", lam=lam, tol=tol, n_jobs=2, random_state=1) for _ in range(2)]
    model = runs[0]
    assert model.route_.options == {"threads": 2, "inner_rounds": 8, "inner_aggregation": "line_search"}
    assert "its sweep split over 2 threads" in model.route_.reason
    assert (model.solver.threads, model.solver.inner_aggregation) == (2, "line_search")
    np.testing.assert_array_equal(runs[1].coef_, model.coef_)
    np.testing.assert_array_equal(runs[1].dual_coef_, model.dual_coef_)
    assert model.converged_
    dual, w_alpha = ref.dual_objective(X, y, model.dual_coef_, lam, "logistic")
    primal = primal_objective(X, y, model.coef_, lam, "logistic")
    np.testing.assert_allclose(model.coef_, w_alpha, rtol=1e-10, atol=1e-13)
    assert primal - dual <= tol * primal
    one = daskdca.fit(X, y, loss="logistic", lam=lam, tol=tol, n_jobs=1, random_state=1)
    assert one.route_.options == {} and one.solver.threads == 1
    assert abs(one.primal_ - model.primal_) <= 2 * tol * one.primal_


@pytest.fixture(scope="module")
def two_thread_worker():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def test_rounds_split_a_partition_over_its_workers_threads_and_a_resume_keeps_them(two_thread_worker, monkeypatch,
                                                                                    tmp_path):
    """CoCoA+ rounds (a checkpoint asks for them) on one worker of 2 threads, on data whose features overlap
    little (the size threshold lowered): the partition's sweep is split over the worker's 2 threads, the
    checkpoint records them, and a fit resumed from it runs the same method to the same bits."""
    import daskdca.routes as routes_module
    from daskdca import engine

    monkeypatch.setattr(routes_module, "THREADED_SWEEP_MIN_NNZ", 0)
    X = random_sparse(3000, 20_000, 3e-4, seed=4)
    y = random_labels(3000, 5)
    store = daskdca.write_store(tmp_path / "s.zarr", X, y, block_rows=1000, shuffle=False)
    kwargs = dict(loss="logistic", lam=1e-4, tol=1e-8, client=two_thread_worker, random_state=1, checkpoint_every=2)
    whole = daskdca.fit(store, checkpoint=tmp_path / "a", **kwargs)
    assert whole.route_.name == "rounds"
    assert whole.route_.options == {"threads": 2, "inner_rounds": 8, "inner_aggregation": "line_search"}
    assert "sweep split over 2 threads" in whole.route_.reason
    assert whole.converged_ and whole.n_rounds_ > 4
    assert engine.recorded_threads(tmp_path / "a") == 2

    die = driver_dies_at(3)
    with pytest.raises(DriverDied):
        daskdca.fit(store, checkpoint=tmp_path / "b", callback=die, **kwargs)
    resumed = daskdca.fit(store, checkpoint=tmp_path / "b", resume=True, **kwargs)
    assert resumed.route_.options == whole.route_.options
    assert "as its checkpoint" in resumed.route_.reason
    assert resumed.n_rounds_ == whole.n_rounds_
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    np.testing.assert_array_equal(resumed.dual_coef_, whole.dual_coef_)
