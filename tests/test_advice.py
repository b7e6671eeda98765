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
