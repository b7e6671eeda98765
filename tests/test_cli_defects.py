"""Command-line options that were ignored or misread, and ``advise`` on what ``fit`` refuses.

Each test names what went wrong before its fix: ``daskdca advise`` on more
than two classes (a raw NumPy error with the hinge loss, advice for a fit
that ``daskdca fit`` refuses with the logistic loss), options that left the
written store byte-identical without a word (``make-data --noise`` on a
classification task, ``--label-noise`` on a regression task, ``convert
--seed`` with ``--no-shuffle``, ``make-data --nnz-per-row 0``), ``fit STORE
--workers 0`` on a cluster although the help said that 0 fits in memory,
and ``advise --tol 0`` refused where ``fit --tol 0`` runs.
"""

import math
import warnings

import numpy as np
import pytest

import daskdca
from daskdca import datasets
from daskdca.cli import main
from daskdca.driver import HistoryRecord
from daskdca.store import open_store, write_store

from conftest import load_dataset, random_labels, random_sparse


def _error_line(capsys):
    """The one ``daskdca: error:`` line of the last command (and nothing else on stderr)."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("daskdca: error: "), lines
    return lines[0]


def _three_classes():
    """heart_scale with every third label set to 2: ``(X, y)`` with the labels -1, 1 and 2."""
    X, y = load_dataset("heart")
    y = y.copy()
    y[::3] = 2.0
    return X, y


@pytest.fixture
def heart3(tmp_path):
    """heart_scale with three labels, as an svmlight file."""
    from sklearn.datasets import dump_svmlight_file

    X, y = _three_classes()
    path = tmp_path / "heart3.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return path


@pytest.fixture
def store(tmp_path):
    """A small two-class store."""
    X, y = random_sparse(40, 5, 0.5, 0), random_labels(40, 0)
    return write_store(tmp_path / "s.zarr", X, y, block_rows=20, shuffle=False)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_advise_refuses_more_than_two_classes_with_fits_message(heart3, tmp_path, loss, capsys):
    """`daskdca advise` tells what `daskdca fit` would run, so it refuses a file or a store of three classes with
    fit's own message.  Before, the hinge loss failed with NumPy's "truth value of an array ... is ambiguous",
    and the logistic loss printed advice for a fit that `daskdca fit` refuses ("fits two classes")."""
    X, y = _three_classes()
    three = write_store(tmp_path / "three.zarr", X, y, block_rows=100, shuffle=False)
    for data in (str(heart3), three.url):
        assert main(["fit", data, "--loss", loss, "--quiet"]) == 2
        refused = _error_line(capsys)
        assert "fits two classes" in refused and "3 labels" in refused
        assert main(["advise", data, "--loss", loss]) == 2
        assert _error_line(capsys) == refused
    # a store of labels that are names: refused by fit (a saved model holds numbers), so by advise too
    named = write_store(tmp_path / "named.zarr", X, np.where(y > 0, "yes", "no"), block_rows=100, shuffle=False)
    assert main(["fit", named.url, "--loss", loss, "--quiet"]) == 2
    refused = _error_line(capsys)
    assert "not numbers" in refused
    assert main(["advise", named.url, "--loss", loss]) == 2
    assert _error_line(capsys) == refused
    # a regression loss takes any targets, in advise as in fit
    assert main(["advise", str(heart3), "--loss", "squared", "--lam", "1e-2"]) == 0
    assert "predicted:" in capsys.readouterr().out


def test_python_advise_on_three_classes_extrapolates_the_worst_problem():
    """daskdca.advise takes what daskdca.fit takes, three classes included (one-vs-rest, whose history holds one
    gap per problem): its prediction follows the worst problem, the one the fit waits for.  Before, it failed
    with NumPy's "truth value of an array with more than one element is ambiguous"."""
    from daskdca.advice import _passes_to

    X, y = _three_classes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        advice = daskdca.advise(X, y, loss="hinge", lam=1e-4, tol=1e-9)
    assert np.ndim(advice.probe[-1].gap) == 1 and len(advice.probe[-1].gap) == 3
    assert advice.probe[-1].epochs < advice.predicted_passes < math.inf
    # per-problem gaps: the passes of the problem whose relative gap is the largest at every record
    passes = range(1, 21)
    slow = [0.9 ** t for t in passes]
    history = [HistoryRecord(t, float(t), 0.1 * t, np.array([1.0, 2.0, 1.0]),
                             np.array([1.0 - 0.5 ** t, 2.0 - 2 * 0.6 ** t, 1.0 - g]), np.array([0.5 ** t, 2 * 0.6 ** t, g]))
               for t, g in zip(passes, slow)]
    worst = [HistoryRecord(t, float(t), 0.1 * t, 1.0, 1.0 - g, g) for t, g in zip(passes, slow)]
    assert _passes_to(history, 1e-9, 20.0) == pytest.approx(_passes_to(worst, 1e-9, 20.0), rel=1e-12)
    assert _passes_to(history, slow[-1], 20.0) == (20.0, 20.0)


@pytest.mark.parametrize("argv, option", [
    (["--noise", "5"], "--noise"),
    (["--task", "regression", "--label-noise", "0.5"], "--label-noise"),
])
def test_make_data_refuses_the_noise_of_the_other_task(tmp_path, argv, option, capsys):
    """`make-data --noise` is the regression targets' noise and `--label-noise` the classification labels' flips;
    given with the other task, each is refused, naming the option.  Before, the option was dropped and the store
    was byte-identical to one written without it."""
    out = tmp_path / "o.zarr"
    assert main(["make-data", str(out), "--rows", "20", "--features", "5", "--no-progress"] + argv) == 2
    line = _error_line(capsys)
    assert option in line and "--task" in line
    assert not out.exists()


def test_make_data_takes_the_noise_of_its_task(tmp_path, capsys):
    """The noise option of each task still applies, and without it each task keeps its default."""
    common = ["--rows", "20", "--features", "5", "--no-progress"]
    for name, argv, label_noise, noise in (("c", [], 0.05, 0.0),
                                           ("c2", ["--label-noise", "0.5"], 0.5, 0.0),
                                           ("r", ["--task", "regression"], 0.0, 0.1),
                                           ("r2", ["--task", "regression", "--noise", "5"], 0.0, 5.0)):
        path = str(tmp_path / f"{name}.zarr")
        assert main(["make-data", path] + common + argv) == 0
        generator = open_store(path).attrs["generator"]
        assert (generator["label_noise"], generator["noise"]) == (label_noise, noise), name


def test_make_data_refuses_rows_without_features(tmp_path, capsys):
    """`make-data --nnz-per-row` below 1 is refused (every row draws at least one feature), in the command and in
    daskdca.datasets.  Before, 0 (or 0.5) silently wrote one non-zero in every row."""
    out = tmp_path / "o.zarr"
    for value in ("0", "0.5", "nan"):
        assert main(["make-data", str(out), "--rows", "20", "--features", "5", "--nnz-per-row", value,
                     "--no-progress"]) == 2
        line = _error_line(capsys)
        assert "--nnz-per-row" in line and ">= 1" in line and value in line
    assert not out.exists()
    for make in (datasets.make_classification, datasets.make_regression):
        with pytest.raises(ValueError, match=r"nnz_per_row must be a finite number >= 1 .*got 0\.5"):
            make(tmp_path / "p.zarr", 20, 5, nnz_per_row=0.5)
    assert not (tmp_path / "p.zarr").exists()
    assert main(["make-data", str(out), "--rows", "20", "--features", "5", "--nnz-per-row", "1",
                 "--no-progress"]) == 0
    assert open_store(str(out)).nnz == 20


def test_convert_refuses_a_seed_without_the_shuffle(tmp_path, capsys):
    """`convert --seed` seeds the shuffle; with `--no-shuffle` it is refused, naming both options.  Before, it was
    ignored and the store was byte-identical to one written without it."""
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:1 3:0.5\n-1 2:1\n1 1:0.25 2:2\n-1 3:1\n")
    out = tmp_path / "o.zarr"
    assert main(["convert", str(svm), str(out), "--no-shuffle", "--seed", "7", "--no-progress"]) == 2
    line = _error_line(capsys)
    assert "--seed" in line and "--no-shuffle" in line
    assert not out.exists()
    assert main(["convert", str(svm), str(out), "--no-shuffle", "--no-progress"]) == 0
    assert main(["convert", str(svm), str(tmp_path / "s.zarr"), "--seed", "7", "--no-progress"]) == 0


def test_fit_refuses_workers_0_for_a_store(store, tmp_path, capsys):
    """A store always runs on a cluster, so `fit STORE --workers 0` (in memory) is refused, naming the option.
    Before, it started a cluster anyway, although --help said "0 fits in memory"."""
    assert main(["fit", store.url, "--workers", "0", "--quiet"]) == 2
    line = _error_line(capsys)
    assert "--workers 0" in line and "store" in line and "cluster" in line
    # a file: 0 is the in-memory fit, as without --workers
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:1 3:0.5\n-1 2:1\n1 1:0.25 2:2\n-1 3:1\n")
    assert main(["fit", str(svm), "--workers", "0", "--quiet", "--lam", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "cluster:" not in out and "route: in_process" in out


def test_fit_help_says_where_workers_0_applies(capsys):
    """`fit --help` says that 0 is for a file (in memory), not for a store (before: "0 fits in memory (default
    for arrays and files)", and a store with 0 ran on a cluster)."""
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0 fits in memory" in text and "not for a store, which always runs on a cluster" in text


def test_advise_tol_0_is_refused_saying_why_and_tol_checked_as_fit_checks_it(tmp_path, capsys):
    """`advise --tol 0` is refused with the reason (tol 0 runs a fit to its budget, and advise predicts the time
    to a gap of tol, which no extrapolation reaches at 0) and the fix; a negative or non-finite --tol gets fit's
    own message.  Before, both were "must be a finite number > 0", which did not say why 0 differs from fit."""
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:1 3:0.5\n-1 2:1\n1 1:0.25 2:2\n-1 3:1\n")
    assert main(["advise", str(svm), "--tol", "0"]) == 2
    line = _error_line(capsys)
    assert "--tol" in line and "--max-epochs" in line and "--tol 1e-6" in line
    for value in ("-1", "nan", "inf"):
        assert main(["fit", str(svm), "--tol", value, "--quiet"]) == 2
        refused = _error_line(capsys)
        assert main(["advise", str(svm), "--tol", value]) == 2
        assert _error_line(capsys) == refused
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match="tol must be > 0 for advise, got 0.0.*max_epochs.*tol=1e-6"):
        daskdca.advise(X, y, tol=0.0)
    with pytest.raises(ValueError, match="tol must be >= 0.0, got -1.0"):
        daskdca.advise(X, y, tol=-1.0)
