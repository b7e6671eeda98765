"""The command line: every user error is one line ``daskdca: error: ...`` and exit status 2."""

import gzip
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import dump_svmlight_file
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

import daskdca
from daskdca import SDCAClassifier
from daskdca.cli import DEFAULT_MAX_EPOCHS, main
from daskdca.saved_model import FORMAT_VERSION, SavedModel, check_model, load_model
from daskdca.store import open_store, write_store

from conftest import DATASETS, data_path, load_dataset, random_labels, random_sparse

SVM = "1 1:1 3:0.5\n-1 2:1\n1 1:0.25 2:2\n"


@pytest.fixture
def svm(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text(SVM)
    return path


@pytest.fixture
def store(tmp_path):
    X, y = random_sparse(50, 6, 0.5, 0), random_labels(50, 0)
    return write_store(tmp_path / "s.zarr", X, y, block_rows=25, shuffle=False)


def _user_folder(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "paper.tex").write_text("x")
    return folder


def _cases(tmp_path, svm, store):
    gz = tmp_path / "t.gz"
    gz.write_bytes(gzip.compress(SVM.encode() * 50)[:-20])
    big = tmp_path / "big.svm"
    big.write_text("1 2147483648:1\n")
    empty = tmp_path / "empty.svm"
    empty.write_text("")
    out = str(tmp_path / "o.zarr")
    model = str(tmp_path / "hinge.npz")
    assert main(["fit", str(svm), "--quiet", "--C", "1", "--save", model]) == 0
    return [
        # (argv, a word of the message)
        (["fit", str(tmp_path / "missing.zarr")], "does not exist"),
        (["fit", str(tmp_path / "missing.svm")], "does not exist"),
        (["fit", str(_user_folder(tmp_path))], "No daskdca store"),
        (["fit", str(svm), "--lam", "-1"], "--lam"),
        (["fit", str(svm), "--lam", "inf"], "--lam"),
        (["fit", str(svm), "--lam", "abc"], "--lam"),
        (["fit", str(svm), "--workers", "-2"], "--workers"),
        (["fit", str(svm), "--loss", "nope"], "--loss"),
        (["fit", str(empty)], "empty.svm"),
        (["fit", str(svm), "--C", "1", "--lam", "1"], "not allowed with"),
        (["fit", str(svm), "--C", "0"], "--C"),
        (["fit", str(svm), "--C", "nan"], "--C"),
        (["fit", store.url, "--fit-intercept"], "--fit-intercept is not supported for a store input yet"),
        (["fit", str(svm), "--intercept-scaling", "2"], "--fit-intercept"),
        (["fit", str(svm), "--fit-intercept", "--intercept-scaling", "0"], "--intercept-scaling"),
        (["fit", str(svm), "--rows", "1000"], "--rows applies without DATA only"),
        (["fit", str(svm), "--breast-cancer"], "--breast-cancer applies without DATA only"),
        (["fit", "--breast-cancer", "--rows", "1000"], "--rows"),
        (["fit", "--rows", "0"], "--rows"),
        (["fit", "--workers", "0"], "--workers 0 does not apply to the demo"),
        (["fit", "--n-features", "5"], "--n-features does not apply to the demo"),
        (["fit", "--breast-cancer", "--n-features", "5"], "not to --breast-cancer"),
        (["fit", store.url, "--n-features", "3"], "--n-features applies to an svmlight file; the store"),
        (["fit", str(svm), "--n-features", "0"], "--n-features"),
        (["advise", store.url, "--n-features", "3"], "records its own features"),
        (["advise", str(svm), "--n-features", "0"], "--n-features"),
        (["fit", "--fit-intercept"], "--fit-intercept does not apply to the demo"),
        (["fit", "--random-state", "-1"], "--random-state"),
        (["fit", str(svm), "--l1-ratio", "1.5"], "got 1.5"),
        (["fit", str(svm), "--l1-ratio", "nan"], "got nan"),
        (["fit", str(svm), "--l1-ratio", "half"], "--l1-ratio"),
        (["fit", str(svm), "--solver", "newton", "--l1-ratio", "0.5"], "l1_ratio applies to"),
        (["fit", "--l1-ratio", "-1"], "got -1.0"),
        (["fit", str(svm), "--overwrite"], "--save"),
        (["fit", str(svm), "--save", model], "--overwrite"),
        (["fit", str(svm), "--save", str(tmp_path / "nofolder" / "m.npz")], "does not exist"),
        (["fit", str(svm), "--save", str(tmp_path)], "folder"),
        (["predict", str(tmp_path / "missing.npz"), str(svm)], "does not exist"),
        (["predict", str(svm), str(svm)], "not a daskdca saved model"),
        (["predict", model, str(tmp_path / "missing.svm")], "does not exist"),
        (["predict", model, str(svm), "--kind", "proba"], "logistic"),
        (["predict", model, str(svm), "--kind", "odds"], "--kind"),
        (["predict", model, str(svm), "--overwrite"], "--output"),
        (["predict", model, str(svm), "--output", str(empty)], "--overwrite"),
        (["predict", model, str(svm), "--output", model], "is the input"),
        (["predict", model, str(empty)], "no rows"),
        (["predict", model], "data"),
        (["convert", str(svm), store.url], "--overwrite"),
        (["convert", str(svm), str(tmp_path / "mine")], "not a daskdca store"),
        (["convert", str(tmp_path), out], "folder"),
        (["convert", str(tmp_path / "nope.svm"), out], "does not exist"),
        (["convert", str(svm), out, "--chunk-mb", "-1"], "--chunk-mb"),
        (["convert", str(svm), out, "--chunk-mb", "0"], "--chunk-mb"),
        (["convert", str(svm), out, "--chunk-mb", "nan"], "--chunk-mb"),
        (["convert", str(svm), out, "--block-rows", "0"], "--block-rows"),
        (["convert", str(svm), out, "--block-rows", "-5"], "--block-rows"),
        (["convert", str(svm), out, "--block-rows", "1e3"], "--block-rows"),
        (["convert", str(svm), out, "--n-features", "0"], "--n-features"),
        (["convert", str(svm), out, "--n-features", "1"], "beyond"),
        (["convert", str(svm), out, "--seed", "-1"], "--seed"),
        (["convert", str(svm), out, "--compression", "lz4"], "compression"),
        (["convert", str(svm), out, "--zero-based", "maybe"], "--zero-based"),
        (["convert", str(svm), str(svm), "--overwrite"], "input"),
        (["convert", str(gz), out], "truncated"),
        (["convert", str(big), out], "2**31"),
        (["convert", str(empty), out], "no rows"),
        (["convert", str(svm)], "output"),
        (["make-data", out, "--rows", "0", "--features", "3"], "--rows"),
        (["make-data", out, "--rows", "10", "--features", "-3"], "--features"),
        (["make-data", out, "--rows", "10", "--features", "3", "--correlation", "2"], "correlation"),
        (["make-data", store.url, "--rows", "10", "--features", "3"], "--overwrite"),
        (["frobnicate"], "invalid choice"),
        ([], "command"),
    ]


def test_every_user_error_is_one_line_and_exit_2(tmp_path, svm, store, capsys):
    cases = _cases(tmp_path, svm, store)
    capsys.readouterr()
    saved = (tmp_path / "hinge.npz").read_bytes()
    for argv, word in cases:
        code = main(argv + ["--no-progress"] if argv[:1] in (["convert"], ["make-data"]) else argv)
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert code == 2, (argv, captured.err)
        assert len(lines) == 1 and lines[0].startswith("daskdca: error: "), (argv, captured.err)
        assert word in lines[0], (argv, lines[0])
        assert "Traceback" not in captured.err
    assert not (tmp_path / "o.zarr").exists()
    assert (tmp_path / "mine" / "paper.tex").exists()
    assert (tmp_path / "hinge.npz").read_bytes() == saved


def test_overwrite_replaces_a_store(tmp_path, svm, store, capsys):
    assert main(["convert", str(svm), store.url, "--overwrite", "--no-progress"]) == 0
    assert open_store(store.url).n == 3
    assert main(["make-data", store.url, "--rows", "20", "--features", "4", "--overwrite", "--no-progress"]) == 0
    assert open_store(store.url).n == 20


def test_debug_shows_the_traceback(tmp_path, svm, store):
    with pytest.raises(FileExistsError, match="overwrite"):
        main(["convert", str(svm), store.url, "--debug"])


def test_python_dash_m_prints_one_line_and_exits_2(tmp_path, svm, store):
    result = subprocess.run([sys.executable, "-m", "daskdca", "convert", str(svm), store.url],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("daskdca: error: ") and "--overwrite" in result.stderr
    debug = subprocess.run([sys.executable, "-m", "daskdca", "convert", str(svm), store.url, "--debug"],
                           capture_output=True, text=True, timeout=120)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "FileExistsError" in debug.stderr


# --------------------------------------------------------------------------
# --C, --fit-intercept, --save and `daskdca predict`, on heart_scale


C, SCALING = 0.5, 3.0


@pytest.fixture(scope="module")
def heart():
    """The real heart_scale file: ``(path, X with 32-bit indices for LIBLINEAR, y)``."""
    X, y = load_dataset("heart")
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return str(data_path(DATASETS["heart"][0])), X, y


@pytest.fixture(scope="module")
def heart_model(heart, tmp_path_factory):
    """``daskdca fit heart_scale --loss logistic --C 0.5 --fit-intercept --intercept-scaling 3 --save``."""
    path = str(tmp_path_factory.mktemp("model") / "heart.npz")
    argv = ["fit", heart[0], "--loss", "logistic", "--C", str(C), "--fit-intercept", "--intercept-scaling",
            str(SCALING), "--tol", "1e-8", "--quiet", "--save", path]
    assert main(argv) == 0
    return path


def _lines(text):
    return np.array([float(line) for line in text.splitlines()])


def test_C_is_lam_one_over_C_n(heart, tmp_path, capsys):
    path, X, _ = heart
    n = X.shape[0]
    argv = ["fit", path, "--loss", "squared_hinge", "--tol", "1e-8", "--quiet", "--save"]
    assert main(argv + [str(tmp_path / "c.npz"), "--C", "2"]) == 0
    assert f"lam {1 / (2 * n):.10g} = 1/(C n) with C = 2, n = {n}" in capsys.readouterr().out
    assert main(argv + [str(tmp_path / "lam.npz"), "--lam", repr(1 / (2.0 * n))]) == 0
    by_c, by_lam = load_model(tmp_path / "c.npz"), load_model(tmp_path / "lam.npz")
    assert by_c.lam == by_lam.lam == 1 / (2.0 * n) and by_c.n_samples == n == 270
    assert_array_equal(by_c.coef, by_lam.coef)
    assert by_c.primal == by_lam.primal and by_c.converged
    code = main(argv + [str(tmp_path / "both.npz"), "--C", "2", "--lam", "1e-3"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("daskdca: error: ") and "--C" in err and "--lam" in err
    assert not (tmp_path / "both.npz").exists()


def test_fit_intercept_is_the_estimators_and_liblinears(heart, heart_model):
    _, X, y = heart
    saved = load_model(heart_model)
    clf = SDCAClassifier("logistic", C=C, fit_intercept=True, intercept_scaling=SCALING, tol=1e-8).fit(X, y)
    assert_allclose(saved.coef, clf.coef_[0], rtol=0, atol=1e-8)
    assert saved.intercept == pytest.approx(clf.intercept_[0], abs=1e-8)
    assert abs(saved.intercept) > 0.1  # heart_scale has an intercept to find
    assert saved.fit_intercept and saved.intercept_scaling == SCALING

    ys = np.where(y == saved.classes[1], 1.0, -1.0)
    lam = 1.0 / (C * X.shape[0])

    def primal(coef, intercept):  # LIBLINEAR's problem divided by C n, written out by hand
        margins = ys * (np.asarray(X @ coef).ravel() + intercept)
        return np.logaddexp(0.0, -margins).mean() + lam / 2 * (coef @ coef + (intercept / SCALING) ** 2)

    # the saved certificate is that of the augmented problem, with intercept = s * w_b
    assert saved.primal == pytest.approx(primal(saved.coef, saved.intercept), rel=1e-12)
    assert saved.converged and saved.gap <= 1e-8 * saved.primal
    ref = LogisticRegression(solver="liblinear", C=C, fit_intercept=True, intercept_scaling=SCALING, tol=1e-12,
                             max_iter=100_000).fit(X, y)
    assert primal(saved.coef, saved.intercept) == pytest.approx(primal(ref.coef_[0], ref.intercept_[0]), rel=1e-6)


def test_saved_file_is_plain_data(heart_model):
    with np.load(heart_model, allow_pickle=False) as data:
        assert str(data["format"]) == "daskdca-linear-model" and int(data["format_version"]) == FORMAT_VERSION
        assert data["coef"].dtype == np.float64 and data["coef"].shape == (13,)
        assert_array_equal(data["classes"], [-1.0, 1.0])
        assert str(data["loss"]) == "logistic" and float(data["lam"]) == 1 / (C * 270)
        assert {"primal", "dual", "gap", "converged", "rounds", "intercept", "n_features"} <= set(data.files)
        assert data["l1_ratio"].dtype == np.float64 and float(data["l1_ratio"]) == 0.0  # no --l1-ratio: L2
        assert all(data[name].dtype.kind != "O" for name in data.files)


def test_predict_on_the_training_file(heart, heart_model, tmp_path, capsys):
    path, X, y = heart
    saved = load_model(heart_model)
    scores = np.asarray(X @ saved.coef).ravel() + saved.intercept
    expected = np.where(np.sign(scores) > 0, 1.0, -1.0)
    clf = SDCAClassifier("logistic", C=C, fit_intercept=True, intercept_scaling=SCALING, tol=1e-8).fit(X, y)

    assert main(["predict", heart_model, path]) == 0  # labels on stdout, nothing else
    captured = capsys.readouterr()
    labels = captured.out.splitlines()
    assert set(labels) == {"-1", "1"} and len(labels) == 270
    assert_array_equal(_lines(captured.out), expected)
    assert_array_equal(_lines(captured.out), clf.predict(X))
    assert "predicted 270 rows" in captured.err

    assert main(["predict", heart_model, path, "--kind", "scores", "--output", str(tmp_path / "s.txt")]) == 0
    assert_array_equal(_lines((tmp_path / "s.txt").read_text()), scores)  # repr: exact round trip
    assert "predicted 270 rows" in capsys.readouterr().out
    assert main(["predict", heart_model, path, "--kind", "proba"]) == 0
    assert_allclose(_lines(capsys.readouterr().out), 1 / (1 + np.exp(-scores)), rtol=1e-15, atol=0)
    assert_allclose(saved.predict_proba(X), clf.predict_proba(X)[:, 1], rtol=1e-12)


def test_predict_on_a_store_is_predict_in_memory(heart, heart_model, tmp_path, capsys):
    path = heart[0]
    assert main(["predict", heart_model, path, "--kind", "scores"]) == 0
    in_memory = _lines(capsys.readouterr().out)
    kept = str(tmp_path / "kept.zarr")
    assert main(["convert", path, kept, "--no-shuffle", "--block-rows", "64", "--no-progress"]) == 0
    assert open_store(kept).n_blocks == 5
    capsys.readouterr()
    assert main(["predict", heart_model, kept, "--kind", "scores"]) == 0
    assert_array_equal(_lines(capsys.readouterr().out), in_memory)
    # shuffled rows and renumbered features: the store's row order, the model's feature order
    store = write_store(tmp_path / "mixed.zarr", *heart[1:], block_rows=100, renumber_features=True)
    mixed = store.url
    assert store.feature_permutation is not None and store.row_permutation is not None
    capsys.readouterr()
    assert main(["predict", heart_model, mixed, "--kind", "scores"]) == 0
    assert_allclose(_lines(capsys.readouterr().out), in_memory[store.row_permutation], rtol=1e-13, atol=1e-13)


def test_fewer_features_pad_more_features_fail(heart, heart_model, tmp_path, capsys):
    _, X, _ = heart
    saved = load_model(heart_model)
    few = tmp_path / "few.svm"  # the first 5 features only
    dump_svmlight_file(X[:, :5], np.ones(X.shape[0]), str(few), zero_based=False)
    assert main(["predict", heart_model, str(few), "--kind", "scores"]) == 0
    assert_allclose(_lines(capsys.readouterr().out), X[:, :5] @ saved.coef[:5] + saved.intercept, rtol=1e-14)
    more = tmp_path / "more.svm"
    more.write_text("1 1:0.5 14:1\n")
    store = write_store(tmp_path / "wide.zarr", sp.random(4, 20, density=0.5, random_state=0, format="csr"),
                        np.ones(4), block_rows=2)
    for data, d in ((more, 14), (store.url, 20)):
        assert main(["predict", heart_model, str(data)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and f"has {d} features but the model was fitted with 13" in captured.err


def test_save_refuses_an_existing_file_and_overwrite_replaces_it(heart, tmp_path, capsys):
    target = tmp_path / "m.npz"
    target.write_bytes(b"precious")
    argv = ["fit", heart[0], "--C", "1", "--tol", "1e-4", "--quiet", "--save", str(target)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("daskdca: error: ") and "--overwrite" in err and "data:" not in err
    assert target.read_bytes() == b"precious"
    assert main(argv + ["--overwrite"]) == 0
    assert load_model(target).loss == "hinge"
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary file left behind
    out = tmp_path / "out.txt"
    out.write_text("keep")
    assert main(["predict", str(target), heart[0], "--output", str(out)]) == 2
    assert out.read_text() == "keep"
    assert main(["predict", str(target), heart[0], "--output", str(out), "--overwrite"]) == 0
    assert len(out.read_text().splitlines()) == 270


def test_an_output_may_not_be_or_lie_inside_an_input(heart, heart_model, tmp_path, capsys):
    """``fit --save`` over its data and ``predict --output`` over its model, its data or into its store are
    refused, ``--overwrite`` or not, and the inputs survive: they turned the data into a zip or the model into
    predictions."""
    data = tmp_path / "train.svm"
    data.write_bytes(open(heart[0], "rb").read())
    model = tmp_path / "m.npz"
    model.write_bytes(open(heart_model, "rb").read())
    store = write_store(tmp_path / "s.zarr", *heart[1:], block_rows=100)
    before = {p: p.read_bytes() for p in (data, model)}
    for argv, what in ((["fit", str(data), "--quiet", "--save", str(data)], "is the input"),
                       (["predict", str(model), str(data), "--output", str(data)], "is the input"),
                       (["predict", str(model), str(data), "--output", str(model)], "is the input"),
                       (["predict", str(model), store.url, "--output", os.path.join(store.url, "p.txt")],
                        "lies inside the input")):
        assert main(argv + ["--overwrite"]) == 2
        assert what in capsys.readouterr().err
    assert {p: p.read_bytes() for p in (data, model)} == before
    assert not os.path.exists(os.path.join(store.url, "p.txt"))


@pytest.mark.parametrize("text, what", [("1 1:nan 2:1\n-1 1:1\n", "non-finite value nan in row 1"),
                                        ("1 1:1\n-1 1:1e400\n", "non-finite value inf in row 2"),
                                        ("1 1:1 2:1\nnan 1:1\n", "non-finite label nan in row 2")])
def test_fit_and_predict_refuse_non_finite_values_in_a_file(heart_model, tmp_path, capsys, text, what):
    """``predict`` read NaN and inf as numbers (a score of nan, a probability of 1, exit 0)."""
    path = tmp_path / "bad.svm"
    path.write_text(text)
    for argv in (["predict", heart_model, str(path), "--kind", "scores"], ["fit", str(path), "--quiet"]):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert what in captured.err and "remove or fix it" in captured.err and captured.out == ""


def test_predict_reads_a_files_indices_as_the_training_files_were_read(heart, tmp_path, capsys):
    """A model fitted on a zero-based file records it (``feature_index_base``); a test file without a feature 0
    was read one-based by detection, every feature one column off (exit 0 with wrong scores).  A one-based
    model refuses a test file holding an index 0."""
    _, X, y = heart
    train = tmp_path / "train0.svm"
    dump_svmlight_file(X, y, str(train), zero_based=True)  # heart has values in column 0: detected zero-based
    model = tmp_path / "m0.npz"
    assert main(["fit", str(train), "--loss", "logistic", "--quiet", "--save", str(model)]) == 0
    saved = load_model(model)
    assert saved.feature_index_base == 0
    test = tmp_path / "test0.svm"
    X_test = X[:20].tolil()
    X_test[:, 0] = 0  # no feature 0 in the test file
    X_test = sp.csr_matrix(X_test)
    X_test.eliminate_zeros()
    dump_svmlight_file(X_test, y[:20], str(test), zero_based=True)
    capsys.readouterr()
    assert main(["predict", str(model), str(test), "--kind", "scores"]) == 0
    assert_allclose(_lines(capsys.readouterr().out), X_test @ saved.coef + saved.intercept, rtol=1e-12, atol=1e-14)
    one = tmp_path / "m1.npz"
    assert main(["fit", heart[0], "--loss", "logistic", "--quiet", "--save", str(one)]) == 0
    assert load_model(one).feature_index_base == 1
    capsys.readouterr()
    assert main(["predict", str(one), str(train)]) == 2
    assert "start at 1, and this one holds an index 0" in capsys.readouterr().err


def test_a_warning_is_one_line_and_the_callers_warnings_come_back(heart, capsys):
    """A fit that stops at its budget warns on stderr as ``daskdca: warning: ConvergenceWarning: ...`` (one line,
    not Python's ``<script>:8: ...`` pointing at the entry script's source), and exits 1; after the command
    the caller's ``warnings.showwarning`` is its own again."""
    import warnings

    before = warnings.showwarning
    assert main(["fit", heart[0], "--quiet", "--tol", "1e-14", "--max-epochs", "2"]) == 1
    err = capsys.readouterr().err.splitlines()
    shown = [line for line in err if "ConvergenceWarning" in line]
    assert len(shown) == 1 and shown[0].startswith("daskdca: warning: ConvergenceWarning: ")
    assert "max_epochs" in shown[0] and warnings.showwarning is before


@pytest.mark.parametrize("rho", [1.0, 0.5])
def test_l1_ratio_fits_and_saves_the_elastic_net(heart, tmp_path, capsys, rho):
    """``--l1-ratio RHO`` is ``daskdca.fit(..., l1_ratio=RHO)``, bit for bit, and the model records RHO."""
    path, X, y = heart
    out = str(tmp_path / "l1.npz")
    small_C = 0.05  # a strong penalty: several exact zeros on heart_scale's 13 features
    assert main(["fit", path, "--loss", "logistic", "--C", str(small_C), "--l1-ratio", str(rho), "--quiet",
                 "--save", out]) == 0
    printed = capsys.readouterr().out
    penalty = ("L1 penalty lam ||w||_1 (l1_ratio 1)" if rho == 1 else
               "elastic-net penalty lam (0.5/2 ||w||^2 + 0.5 ||w||_1) (l1_ratio 0.5)")
    assert f"n = 270, {penalty}; no intercept" in printed
    saved = load_model(out)
    check_model(saved)
    assert saved.l1_ratio == rho and saved.solver == ("l1_sdca" if rho == 1 else "sdca")
    lam = 1.0 / (small_C * X.shape[0])
    ref = daskdca.fit(X, y, loss="logistic", lam=lam, l1_ratio=rho, tol=1e-6, max_epochs=DEFAULT_MAX_EPOCHS,
                      verbose=0)
    assert_array_equal(saved.coef, ref.coef_)
    assert (saved.primal, saved.dual, saved.gap) == (ref.primal_, ref.dual_, ref.gap_) and saved.converged
    assert np.sum(saved.coef == 0.0) >= 5  # exact zeros, not small values
    ys = np.where(y == saved.classes[1], 1.0, -1.0)

    def primal(w):  # the elastic-net objective, written out by hand
        return (np.logaddexp(0.0, -ys * (X @ w)).mean()
                + lam * ((1 - rho) / 2 * (w @ w) + rho * np.abs(w).sum()))

    assert saved.primal == pytest.approx(primal(saved.coef), rel=1e-12)
    assert main(["predict", out, path, "--kind", "scores"]) == 0
    assert_array_equal(_lines(capsys.readouterr().out), X @ saved.coef)


def test_l1_ratio_out_of_range_is_refused_before_the_data_is_read(heart, tmp_path, capsys):
    out = tmp_path / "bad.npz"
    assert main(["fit", heart[0], "--l1-ratio", "1.5", "--save", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    line, = captured.err.splitlines()  # daskdca.fit's own message, one line
    assert line.startswith("daskdca: error: l1_ratio must be a number in [0, 1]") and "got 1.5" in line


class _Canary:
    """Unpickled, it creates a file: proof that a load ran code from the data."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_unknown_version_and_damaged_files_are_refused(heart_model, tmp_path, capsys):
    with np.load(heart_model, allow_pickle=False) as data:
        fields = {name: data[name] for name in data.files}
    future = tmp_path / "future.npz"
    np.savez(future, **{**fields, "format_version": np.array(99)})
    with pytest.raises(ValueError, match="format version 99; this daskdca reads version 1"):
        load_model(future)
    lacking = tmp_path / "lacking.npz"
    np.savez(lacking, **{k: v for k, v in fields.items() if k != "lam"})
    other = tmp_path / "other.npz"
    np.savez(other, coef=fields["coef"])
    text = tmp_path / "text.npz"
    text.write_text("1 1:1\n")
    pickled = tmp_path / "pickled.npz"  # unpickling its coef would create the canary file
    np.savez(pickled, **{**fields, "coef": np.array([_Canary(tmp_path / "canary")], dtype=object)})
    for path, word in ((future, "version 99"), (lacking, "'lam'"), (other, "not a daskdca saved model"),
                       (text, "not a .npz"), (pickled, "allow_pickle=False"),
                       (tmp_path / "none.npz", "does not exist")):
        assert main(["predict", str(path), str(text)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith("daskdca: error: ") and word in captured.err
    assert not (tmp_path / "canary").exists()


def test_labels_must_be_numbers_and_regression_predicts_targets(heart, tmp_path, capsys):
    path, X, y = heart
    model = daskdca.fit(X, np.where(y > 0, "sick", "well"), loss="logistic", lam=1e-2, tol=1e-6)
    with pytest.raises(ValueError, match="not numbers"):
        SavedModel.from_fit(model, n_samples=X.shape[0], tol=1e-6)
    target = str(tmp_path / "ridge.npz")
    assert main(["fit", path, "--loss", "squared", "--C", "1", "--tol", "1e-8", "--quiet", "--save", target]) == 0
    saved = load_model(target)
    assert saved.classes is None
    capsys.readouterr()
    assert main(["predict", target, path]) == 0
    assert_array_equal(_lines(capsys.readouterr().out), X @ saved.coef)
    assert main(["predict", target, path, "--kind", "proba"]) == 2
    assert "logistic" in capsys.readouterr().err


def test_the_demo_fits_a_generated_store_out_of_core_certifies_and_cleans_up(tmp_path, monkeypatch, capsys):
    """`daskdca fit` with no data, the README's main job, on 5,000 rows instead of 2 M."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp puts the demo's folder
    # one worker process holding two partitions: the path of the main job (partitions summed by CoCoA+)
    # without a second worker's start, which took 8 s more on the 2 shared cores of the test machine
    assert main(["fit", "--rows", "5000", "--workers", "1", "--n-partitions", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    folder = re.search(r"^demo: temporary folder (\S+) ", out, re.M).group(1)
    assert os.path.dirname(folder) == str(tmp_path)
    assert f"demo: removed {folder}" in out
    assert list(tmp_path.iterdir()) == []  # the store and the workers' scratch space are gone
    assert "data: wrote 5,000 x 100,000" in out and "seed 0" in out
    assert "LocalCluster with 1 worker process, 1 thread" in out and "out of core (each round re-reads" in out
    assert "2 partitions, logistic loss" in out
    assert "lam 0.002 = 1/(C n) with C = 0.1, n = 5000, tol 1e-06" in out  # the demo's defaults
    number = r"([-+0-9.e]+)"
    certificate = (rf"converged after (\d+) rounds \([0-9.]+ epochs, [0-9.]+ s\): primal {number}  dual {number}  "
                   rf"relative gap {number}$")
    ooc = re.search(rf"^{certificate}", out, re.M)
    memory = re.search(rf"^in memory: {certificate}", out, re.M)
    assert ooc and memory
    results = []
    for found in (ooc, memory):
        primal, dual, rel = (float(found.group(k)) for k in (2, 3, 4))
        assert 0 <= rel <= 1e-6 and dual <= primal
        assert primal - dual <= 1e-6 * primal + 1e-9  # the printed numbers (10 digits) agree with the gap
        results.append((primal, primal - dual))
    # both certify the same problem: each primal is within its own gap of the optimum
    (p1, g1), (p2, g2) = results
    assert abs(p1 - p2) <= max(g1, g2) + 1e-9
    line = re.search(r"^time: out of core on 1 worker: ([0-9.]+) s \((\d+) rounds\); in memory, \d+ threads?: "
                     r"([0-9.]+) s \((\d+) epochs\) \((out of core|in memory) ([0-9.]+)x the", out, re.M)
    assert line and line.group(2) == ooc.group(1) and line.group(4) == memory.group(1)
    # the ratio is the slower over the faster time, named by the slower; all three printed to 0.1
    slower = {"out of core": float(line.group(1)), "in memory": float(line.group(3))}
    slow, fast = slower.pop(line.group(5)), slower.popitem()[1]
    ratio = float(line.group(6))
    assert slow >= fast - 0.1 and ratio >= 1.0
    assert (slow - 0.05) / (fast + 0.05) - 0.05 <= ratio <= (slow + 0.05) / max(fast - 0.05, 1e-12) + 0.05


def test_breast_cancer_is_behind_its_option(capsys):
    assert main(["fit", "--breast-cancer", "--loss", "logistic", "--lam", "1e-3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "breast cancer (569 x 30)" in out and "converged after" in out


def test_class_weight_is_liblinears_wi(heart, tmp_path, capsys):
    """``--class-weight 1:4,-1:0.5`` is LIBLINEAR's ``-w1 4 -w-1 0.5``: LinearSVC(class_weight=...) objectives."""
    path, X, y = heart
    out = str(tmp_path / "weighted.npz")
    assert main(["fit", path, "--loss", "squared_hinge", "--C", "0.5", "--class-weight", "1:4,-1:0.5", "--tol",
                 "1e-10", "--quiet", "--save", out]) == 0
    saved = load_model(out)
    ref = LinearSVC(loss="squared_hinge", dual=False, C=0.5, fit_intercept=False, tol=1e-12,
                    class_weight={1.0: 4.0, -1.0: 0.5}).fit(X, y)
    ys = np.where(y == 1.0, 1.0, -1.0)
    s = np.where(y == 1.0, 4.0, 0.5)

    def primal(w):
        h = np.maximum(0.0, 1.0 - ys * np.asarray(X @ w).ravel())
        return float(np.mean(s * h * h) + 0.5 / (0.5 * X.shape[0]) * w @ w)

    assert saved.primal == pytest.approx(primal(saved.coef), rel=1e-12)
    assert primal(saved.coef) == pytest.approx(primal(ref.coef_[0]), rel=1e-8)
    capsys.readouterr()
    for bad, message in (("1:x", "LABEL:WEIGHT pairs"), ("3:2", "names labels [3.0] that the data does not have")):
        code = main(["fit", path, "--class-weight", bad, "--quiet"])
        assert code == 2 and message in capsys.readouterr().err


def test_more_than_two_classes_are_refused_with_the_python_route(tmp_path, capsys):
    """The saved model holds one weight vector, so `daskdca fit` refuses a multi-class file before fitting."""
    from sklearn.datasets import dump_svmlight_file, load_iris

    X, y = load_iris(return_X_y=True)
    path = str(tmp_path / "iris.svm")
    dump_svmlight_file(X, y, path)
    assert main(["fit", path, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "has 3 labels ([0.0, 1.0, 2.0])" in err and "daskdca.SDCAClassifier" in err
