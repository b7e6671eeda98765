"""daskdca.advise and `daskdca advise`: the route a fit takes, said before the fit, with a measured prediction."""

import math
import warnings

import pytest

import daskdca
from daskdca.cli import main

from conftest import data_path, load_dataset


@pytest.mark.parametrize("loss, C", [("logistic", 1.0), ("logistic", 100.0), ("hinge", 1.0), ("hinge", 100.0),
                                     ("squared_hinge", 10.0)])
def test_advice_names_the_route_and_method_the_fit_takes(loss, C):
    X, y = load_dataset("heart")
    lam = 1.0 / (C * X.shape[0])
    advice = daskdca.advise(X, y, loss=loss, lam=lam, tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = daskdca.fit(X, y, loss=loss, lam=lam, tol=1e-8)
    assert advice.route == model.route_
    assert advice.route.solver == model.solver.name
    assert advice.predicted_seconds > 0 and advice.seconds_per_pass > 0
    assert math.isfinite(advice.predicted_passes) or not model.converged_
    assert advice.probe and advice.probe[-1].round >= 1
    text = str(advice)
    assert text.startswith(f"route: {model.route_.name}") and "predicted:" in text


def test_advice_checks_its_input():
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match="lam must be > 0"):
        daskdca.advise(X, y, lam=0.0)
    with pytest.raises(ValueError, match="rows"):
        daskdca.advise(X, y[:-1], lam=1e-3)
    with pytest.raises(ValueError, match="tol must be > 0"):
        daskdca.advise(X, y, lam=1e-3, tol=0.0)


def test_cli_advise_prints_the_plan(capsys):
    assert main(["advise", str(data_path("heart_scale")), "--loss", "logistic", "--C", "100"]) == 0
    out = capsys.readouterr().out
    assert "route: in_process, solver newton" in out and "predicted:" in out and "why:" in out
    # `daskdca fit`'s --n-features: the file read as the fit reads it
    assert main(["advise", str(data_path("heart_scale")), "--n-features", "20", "--loss", "logistic"]) == 0
    assert "(270 x 20, " in capsys.readouterr().out


def test_advice_on_a_cluster_adds_the_measured_cost_of_the_cluster():
    """With a client the prediction adds the cluster's fixed cost and the data's move, both measured there; the
    route is the fit's, and in process nothing is added."""
    from distributed import Client, LocalCluster

    X, y = load_dataset("heart")
    local = daskdca.advise(X, y, loss="logistic", lam=1e-2, tol=1e-6)
    assert local.cluster_seconds == 0.0 and "on the cluster" not in str(local)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        advice = daskdca.advise(X, y, loss="logistic", lam=1e-2, tol=1e-6, client=client)
        model = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-6, client=client)
    assert advice.route == model.route_ and advice.route.name == "one_worker"
    assert advice.cluster_seconds > 0
    passes_part = advice.predicted_passes * advice.seconds_per_pass
    assert advice.predicted_seconds == pytest.approx(passes_part + advice.cluster_seconds, rel=1e-12)
    assert "once on the cluster" in str(advice)


def test_advise_out_of_core_is_the_fits_route(tmp_path):
    """``in_memory=False`` asks for rounds on a cluster, in ``advise`` as in ``fit``: the same route either way."""
    from distributed import Client, LocalCluster

    from daskdca.store import write_store

    X, y = load_dataset("heart")
    store = write_store(tmp_path / "heart.zarr", X, y, block_rows=100)
    with pytest.raises(ValueError, match="in_memory must be True, False or None"):
        daskdca.advise(X, y, in_memory="no")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        held = daskdca.advise(store, loss="logistic", lam=1e-2, tol=1e-4, client=client)
        streamed = daskdca.advise(store, loss="logistic", lam=1e-2, tol=1e-4, client=client, in_memory=False)
        model = daskdca.fit(store, loss="logistic", lam=1e-2, tol=1e-4, client=client, in_memory=False)
    assert held.route.name == "one_worker"
    assert streamed.route == model.route_ and streamed.route.name == "rounds"


def test_advice_for_rounds_adds_the_rounds_measured_cost_and_probes_the_fits_partitions():
    """A route with rounds adds, for each round, what a round of the engine costs on the cluster beyond its
    arithmetic (measured there with the route's method and partitions), and the probe runs the fit's own
    partitions: its first record is the fit's, in process (whose bits the cluster's rounds give) and on it."""
    from distributed import Client, LocalCluster

    X, y = load_dataset("heart")
    kw = dict(loss="logistic", lam=1e-3, tol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        in_process = daskdca.advise(X, y, n_partitions=3, **kw)
        model = daskdca.fit(X, y, n_partitions=3, **kw)
    assert in_process.route == model.route_ and model.route_.n_partitions == 3
    assert in_process.probe[0] == model.history_[0]._replace(seconds=in_process.probe[0].seconds)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        callback = lambda record, state: None  # noqa: E731 (a callback needs rounds)
        advice = daskdca.advise(X, y, client=client, callback=callback, **kw)
        model = daskdca.fit(X, y, client=client, callback=callback, **kw)
    assert advice.route == model.route_ and advice.route.name == "rounds" and advice.route.n_partitions == 2
    assert advice.probe[0] == model.history_[0]._replace(seconds=advice.probe[0].seconds)
    assert advice.round_latency > 0 and advice.cluster_seconds > 0
    arithmetic = advice.predicted_passes / model.plan_.rounds_per_epoch * advice.seconds_per_pass / 2
    assert advice.predicted_seconds == pytest.approx(
        arithmetic + advice.predicted_passes * advice.round_latency + advice.cluster_seconds, rel=1e-12)
    assert "a round" in str(advice)


@pytest.mark.parametrize("decay", ["geometric", "power"])
def test_the_two_extrapolations_are_exact_on_their_own_decay(decay):
    """A probe whose gap falls exactly as ``0.5^t`` (or as ``t^-2``): that model's extrapolation gives the
    passes to ``tol`` exactly, and the other one brackets it on its side."""
    from daskdca.advice import _passes_to
    from daskdca.driver import HistoryRecord

    passes = range(1, 21)
    gaps = [0.5 ** t if decay == "geometric" else float(t) ** -2 for t in passes]
    history = [HistoryRecord(t, float(t), 0.1 * t, 1.0, 1.0 - g, g) for t, g in zip(passes, gaps)]
    tol = 1e-9
    low, high = _passes_to(history, tol, 20.0)
    exact = math.log2(1 / tol) if decay == "geometric" else tol ** -0.5
    # geometric: the power law's slope steepens, so it predicts more; power: the geometric rate predicts fewer
    assert (low if decay == "geometric" else high) == pytest.approx(exact, rel=1e-9)
    assert low < high
    done = _passes_to(history, gaps[-1], 20.0)
    assert done == (20.0, 20.0)


def test_the_prediction_lies_in_its_range():
    X, y = load_dataset("heart")
    advice = daskdca.advise(X, y, loss="hinge", lam=1e-5, tol=1e-9)
    low, high = advice.seconds_range
    assert low <= advice.predicted_seconds <= high
    assert (low < high) == ("between" in str(advice))


@pytest.mark.parametrize("tol", [1e-6, 1e-12])
def test_advice_counts_passes_as_the_driver_does_where_rounds_end_early(tol):
    # serial SDCA with shrinking ends a round once the movable rows' gap is small, so on a9a's hinge at lam 1e-3
    # its rounds outnumber its passes (coordinate steps over n); the prediction extrapolates and times passes
    X, y = load_dataset("a9a")
    advice = daskdca.advise(X, y, loss="hinge", lam=1e-3, tol=tol)
    assert advice.route.solver == "sdca"
    last = advice.probe[-1]
    assert last.epochs < last.round - 1  # rounds that ended early: the case this test is about
    assert advice.seconds_per_pass * last.epochs == pytest.approx(last.seconds, rel=1e-9)
    if last.gap <= tol * last.primal:  # met in the probe (tol 1e-6): the passes are the probe's own
        assert advice.predicted_passes == pytest.approx(last.epochs, rel=1e-12)
    else:
        assert last.epochs < advice.predicted_passes < math.inf
