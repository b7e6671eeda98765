"""What a user sees: the ``verbose`` levels of daskdca.fit and the estimators, the CLI's defaults and
``predict``'s score and outputs, and SDCAClassifierCV's ``n_jobs`` and ``client``."""

import pickle
import re
import sys
import types
import warnings

import distributed
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils._param_validation import InvalidParameterError

import daskdca
from daskdca import SDCAClassifier, SDCAClassifierCV, driver
from daskdca.cli import main
from daskdca.driver import HistoryRecord, _Progress, progress_bar_class
from daskdca.saved_model import load_model
from daskdca.store import write_store

from conftest import data_path, load_dataset

SUMMARY = re.compile(r"^(NOT )?converged after (\d+) rounds \(([0-9.]+) epochs, ([0-9.]+) s\): primal \S+  dual \S+  "
                     r"relative gap \S+$")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def _bar_states(err):
    """The states the text bar drew, in order: it redraws in place, after a carriage return."""
    return [state.strip() for state in re.split(r"[\r\n]", err) if state.strip()]


@pytest.mark.parametrize("verbose", [0, False, 1, True, 2, 3, np.int64(1), np.True_])
def test_verbose_levels(verbose, capsys):
    X, y = load_dataset("heart")
    model = daskdca.fit(X, y, loss="hinge", lam=1e-3, verbose=verbose)
    out, err = capsys.readouterr()
    if not verbose:
        assert out == "" and err == ""
        return
    lines = out.splitlines()
    records = len(model.history_)
    # 1: the summary line only; 2 and more: one line per gap record above it
    assert len(lines) == (1 if verbose == 1 else records + 1)
    summary = SUMMARY.match(lines[-1])
    assert summary and summary.group(1) is None and int(summary.group(2)) == model.n_rounds_
    assert len(re.findall(r"\d s\)", out)) == 1  # one fit time
    if verbose >= 2:
        assert all(line.startswith("round ") for line in lines[:-1])
        assert lines[-2].startswith(f"round {model.n_rounds_:5d}  epochs")
    # one bar, redrawn in place on one line of stderr, that ends at the last round, at 100 %, with no ETA
    assert err.count("\n") == 1
    states = _bar_states(err)
    final = states[-1]
    assert final.startswith(f"daskdca gap -> {1e-6:g}: 100%|")
    assert f"round {model.n_rounds_:5d}, rel gap {model.gap_ / model.primal_:.2e}" in final
    assert "ETA" not in final and any("ETA" in state for state in states)
    assert "IProgress" not in err


def test_the_bar_estimates_the_eta_from_the_log_gaps_rate(monkeypatch, capsys):
    monkeypatch.setattr(driver, "SHOW_EVERY", 0.0)  # every record drawn
    progress = _Progress(1, 10**-6.5)
    # one decade a second through the later half of the records: 2.5 decades to go, 2.5 s
    for r, rel in enumerate([1e-1, 1e-2, 1e-3, 1e-4], start=1):
        progress.update(HistoryRecord(r, float(r), float(r), 1.0, 1.0 - rel, rel))
    states = _bar_states(capsys.readouterr().err)
    assert states[-1].endswith("round     4, rel gap 1.00e-04, ETA 00:02")
    assert "ETA ?" in states[1]  # one record: no rate yet
    # the percentage is the share of the log-gap done: 3 of the 5.5 decades from 1e-1 to tol
    assert " 54%|" in states[-1]
    # a gap that rises again does not move the bar back
    progress.update(HistoryRecord(5, 5.0, 5.0, 1.0, 1.0 - 1e-3, 1e-3))
    progress.close()
    states = _bar_states(capsys.readouterr().err)
    assert " 54%|" in states[-1] and states[-1].endswith("round     5, rel gap 1.00e-03")


def test_the_bar_is_a_widget_only_where_ipywidgets_imports(monkeypatch):
    import tqdm.auto
    import tqdm.std

    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets raises ImportError
    assert progress_bar_class() is tqdm.std.tqdm
    monkeypatch.setitem(sys.modules, "ipywidgets", types.ModuleType("ipywidgets"))
    assert progress_bar_class() is tqdm.auto.tqdm


@pytest.mark.parametrize("bad", [-1, 1.5, "yes", None])
def test_a_bad_verbose_names_the_value_and_the_levels(bad):
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=r"verbose must be a bool or an int >= 0, got .*0 \(silent\), 1"):
        daskdca.fit(X, y, verbose=bad)


def test_the_estimators_take_verbose_true(capsys):
    X, y = load_dataset("heart")
    clf = SDCAClassifier("logistic", verbose=True).fit(X, y)
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and SUMMARY.match(out.strip())
    assert f"round {clf.n_iter_[0]:5d}" in _bar_states(err)[-1]
    with pytest.raises(InvalidParameterError, match="verbose"):
        SDCAClassifier(verbose=-1).fit(X, y)


def test_the_one_worker_route_shows_the_same_bar_and_summary(client, capsys):
    X, y = load_dataset("heart")
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-8, client=client, verbose=1)
    assert model.route_.name == "one_worker"
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and SUMMARY.match(out.strip())
    final = _bar_states(err)[-1]
    assert "100%|" in final and f"round {model.n_rounds_:5d}" in final


# ---- the command line


def _heart_file():
    return str(data_path("heart_scale"))


def test_cli_defaults_converge_on_heart_scale_and_breast_cancer(capsys):
    for argv in (["fit", _heart_file()], ["fit", "--breast-cancer"]):
        assert main(argv) == 0, argv
        out, err = capsys.readouterr()
        lines = out.splitlines()
        # data, the summary (daskdca.fit's, -v being the default), route, model and training accuracy
        assert len(lines) == 5 and SUMMARY.match(lines[1]) and lines[1].startswith("converged after")
        assert lines[2].startswith("route: ") and lines[4].startswith("training accuracy")
        assert "100%|" in _bar_states(err)[-1] and err.count("\n") == 1


def test_cli_verbosity_flags(capsys):
    heart = _heart_file()
    assert main(["fit", heart, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and len(out.splitlines()) == 5 and SUMMARY.match(out.splitlines()[2])  # after route:
    assert main(["fit", heart, "-v"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5
    assert main(["fit", heart, "-vv"]) == 0
    out, _ = capsys.readouterr()
    rounds = [line for line in out.splitlines() if line.startswith("round ")]
    assert len(out.splitlines()) == 5 + len(rounds) and len(rounds) >= 2
    assert main(["fit", heart, "-v", "--quiet"]) == 2
    assert "not allowed with" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "-vv: also one line per gap record" in text and "exit status 1" in text


@pytest.fixture
def heart_models(tmp_path):
    heart = _heart_file()
    paths = {}
    for loss in ("hinge", "squared"):
        paths[loss] = str(tmp_path / f"{loss}.npz")
        assert main(["fit", heart, "--quiet", "--loss", loss, "--save", paths[loss]]) == 0
    return paths


def test_predict_prints_the_accuracy_or_r2(heart_models, tmp_path, capsys):
    heart = _heart_file()
    X, y = load_dataset("heart")
    capsys.readouterr()
    assert main(["predict", heart_models["hinge"], heart]) == 0
    out, err = capsys.readouterr()
    predicted = np.array(out.split(), dtype=np.float64)
    correct = int(np.sum(predicted == y))
    assert f"accuracy {accuracy_score(y, predicted):.4f} ({correct} of 270 rows right)" in err
    assert main(["predict", heart_models["squared"], heart, "--kind", "scores"]) == 0
    out, err = capsys.readouterr()
    assert f"R^2 {r2_score(y, np.array(out.split(), dtype=np.float64)):.4f} (" in err
    # a store, block by block: the same R^2 as the file's
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=64, shuffle=False)
    assert main(["predict", heart_models["squared"], store.url]) == 0
    assert f"R^2 {r2_score(y, np.array(out.split(), dtype=np.float64)):.4f} (" in capsys.readouterr().err
    # labels that are not the model's classes: no accuracy, and why
    other = tmp_path / "other.svm"
    other.write_text("0 1:1\n1 2:1\n")
    assert main(["predict", heart_models["hinge"], str(other)]) == 0
    assert "no accuracy: the data's label 0 is not one of the model's classes [-1, 1]" in capsys.readouterr().err


def test_predict_output_dash_is_stdout_and_dev_null_is_accepted(heart_models, capsys):
    heart = _heart_file()
    capsys.readouterr()
    assert main(["predict", heart_models["hinge"], heart, "--output", "-"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 270 and set(out.split()) <= {"-1", "1"}  # the predictions only
    assert "to stdout" in err and "accuracy" in err
    assert main(["predict", heart_models["hinge"], heart, "--output", "/dev/null"]) == 0
    out, err = capsys.readouterr()
    assert "predicted 270 rows (labels)" in out and "to /dev/null" in out and "accuracy" in out and err == ""
    assert main(["predict", heart_models["hinge"], heart, "--output", "-", "--overwrite"]) == 2
    assert "--overwrite applies to --output FILE only" in capsys.readouterr().err
    saved = load_model(heart_models["hinge"])
    assert saved.classes is not None


# ---- SDCAClassifierCV: n_jobs and client


def _iris():
    X, y = load_iris(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _same_bits(a, b):
    assert_array_equal(a.scores_, b.scores_)
    assert a.C_ == b.C_ and a.best_score_ == b.best_score_
    for name in ("coef_", "intercept_", "primal_", "dual_", "gap_", "n_iter_"):
        assert_array_equal(getattr(a, name), getattr(b, name))


def test_classifier_cv_n_jobs_gives_the_same_bits():
    X, y = _iris()  # 3 classes x 3 folds: 9 paths
    params = dict(Cs=[0.1, 1.0, 10.0], cv=3, loss="logistic", tol=1e-8)
    one = SDCAClassifierCV(**params).fit(X, y)
    two = SDCAClassifierCV(**params, n_jobs=2).fit(X, y)
    _same_bits(one, two)
    assert SDCAClassifierCV().get_params()["n_jobs"] is None
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        SDCAClassifierCV(n_jobs="two").fit(X, y)


def test_classifier_cv_on_a_client(client):
    X, y = load_dataset("heart")
    params = dict(Cs=[0.1, 1.0], cv=2, loss="logistic", tol=1e-8)
    here = SDCAClassifierCV(**params).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on the way either
        there = SDCAClassifierCV(**params, client=client).fit(X, y)
    # every fit on one worker: the in-process bits (tests/test_routes.py), the refit included
    assert there.route_.name == "one_worker"
    _same_bits(here, there)
    _same_bits(here, SDCAClassifierCV(**params, client=client, n_jobs=2).fit(X, y))
    address = SDCAClassifierCV(**params, client=client.scheduler.address).fit(X, y)
    _same_bits(here, address)
    twin = clone(there)
    assert twin.client is client
    with pytest.raises(TypeError, match="set_params\\(client=None\\)"):
        pickle.dumps(there)
    with pytest.raises(InvalidParameterError, match="client"):
        SDCAClassifierCV(client=3).fit(X, y)
