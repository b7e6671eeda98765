"""The command line: every user error is one line ``daskdca: error: ...`` and exit status 2."""

import gzip
import subprocess
import sys

import pytest

from daskdca.cli import main
from daskdca.store import open_store, write_store

from conftest import random_labels, random_sparse

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
    for argv, word in _cases(tmp_path, svm, store):
        code = main(argv + ["--no-progress"] if argv[:1] in (["convert"], ["make-data"]) else argv)
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert code == 2, (argv, captured.err)
        assert len(lines) == 1 and lines[0].startswith("daskdca: error: "), (argv, captured.err)
        assert word in lines[0], (argv, lines[0])
        assert "Traceback" not in captured.err
    assert not (tmp_path / "o.zarr").exists()
    assert (tmp_path / "mine" / "paper.tex").exists()


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
