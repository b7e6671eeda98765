"""The zarr store: round trips, validity, bad input, interrupted writes, generators."""

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
import zarr
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from daskdca import datasets
from daskdca.cli import main as cli_main
from daskdca.store import (
    StoreError,
    convert_svmlight,
    open_store,
    rewrite_store,
    write_store,
)

from conftest import data_path, load_dataset

# every file of ../shared/data with its n_features (from its README)
SHARED_FILES = {
    "a9a.gz": 123, "a9a.t.gz": 123, "w8a.gz": 300, "w8a.t.gz": 300, "ijcnn1.bz2": 22,
    "reuters_lasvm.trn.bz2": 8315, "reuters_lasvm.tst.bz2": 8315, "agaricus.txt.train.gz": 126,
    "agaricus.txt.test.gz": 126, "heart_scale": 13, "rcv1_sample1000.svm.gz": 47236,
}
SKLEARN_FIXTURES = Path(sklearn.__file__).parent / "datasets" / "tests" / "data"


def _shared(name):
    path = data_path(name)
    if not path.exists():
        if os.environ.get("DASKDCA_REQUIRE_DATA") == "1":
            pytest.fail(f"{path} not found")
        pytest.skip(f"{path} not found")
    return path


def _assert_same_csr(A, B):
    """Same values, same indices (explicit zeros included), same structure."""
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    A.sort_indices()
    B.sort_indices()
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


def _exists(path):
    return os.path.exists(path)


@pytest.mark.parametrize("name", sorted(SHARED_FILES))
def test_every_shared_file_round_trips_exactly(tmp_path, name):
    path = _shared(name)
    # small blocks and text chunks put many boundaries inside the file
    store = convert_svmlight(path, tmp_path / "s.zarr", n_features=SHARED_FILES[name], block_rows=3000,
                             chunk_bytes=300_000, shuffle=False)
    X, y = load_svmlight_file(str(path), n_features=SHARED_FILES[name])
    assert (store.n, store.d, store.nnz) == (X.shape[0], X.shape[1], X.nnz)
    offsets = store.block_row_offsets
    assert store.n_blocks == -(-X.shape[0] // 3000)
    for k in range(store.n_blocks):
        Xb, yb = store.read_block(k)
        _assert_same_csr(Xb, X[offsets[k]:offsets[k + 1]])
        np.testing.assert_array_equal(yb, y[offsets[k]:offsets[k + 1]])
    assert store.attrs["label_values"] == sorted(np.unique(y).tolist())
    np.testing.assert_allclose(store.group["row_sqnorm"][:], np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_array_equal(store.group["column_nnz"][:],
                                  np.bincount(X.indices[X.data != 0], minlength=X.shape[1]))


@pytest.mark.parametrize("fixture", ["svmlight_classification.txt", "svmlight_invalid.txt",
                                     "svmlight_invalid_order.txt", "svmlight_multilabel.txt"])
def test_sklearn_fixtures_are_treated_like_sklearn_treats_them(tmp_path, fixture):
    path = SKLEARN_FIXTURES / fixture
    assert path.exists()
    try:
        X, y = load_svmlight_file(str(path))
    except ValueError:
        with pytest.raises(ValueError, match=f"{fixture}: malformed svmlight/LIBSVM data at line"):
            convert_svmlight(path, tmp_path / "s.zarr", shuffle=False)
        assert not _exists(tmp_path / "s.zarr")
        return
    store = convert_svmlight(path, tmp_path / "s.zarr", chunk_bytes=64, shuffle=False)
    Xs, ys = store.read_all()
    _assert_same_csr(Xs, X)  # auto index base, comments, empty rows, explicit zeros
    np.testing.assert_array_equal(ys, y)


def _write_text(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, kwargs, match", [
    ("1 1:1 2:2\n-1 1:x\n", {}, r"malformed svmlight/LIBSVM data at line 2 \(byte offset 10\)"),
    ("1 1:1\n1 2:nan\n", {}, r"non-finite value at line 2 \(byte offset 6\)"),
    ("1 1:1\n1 2:inf\n", {}, r"non-finite value at line 2"),
    ("1 1:1\n-1 0:3\n", {"zero_based": False}, r"feature index 0 at line 2 in a one-based file"),
    ("1 1:1\n-1 -3:3\n", {}, r"at line 2"),
    ("1 1:1\n-1 7:3\n", {"n_features": 5}, r"feature index 7 at line 2 is beyond n_features=5"),
    ("1 1:1\n-1 5:3\n", {"n_features": 5, "zero_based": True}, r"feature index 5 at line 2 is beyond"),
])
def test_bad_files_raise_with_position_and_leave_nothing(tmp_path, text, kwargs, match):
    path = _write_text(tmp_path / "bad.svm", text)
    with pytest.raises(ValueError, match=match):
        convert_svmlight(path, tmp_path / "s.zarr", **kwargs)
    assert not _exists(tmp_path / "s.zarr")
    with pytest.raises(StoreError):
        open_store(tmp_path / "s.zarr")


def test_index_base_follows_sklearn(tmp_path):
    one = _write_text(tmp_path / "one.svm", "1 1:1 3:2\n-1 2:5\n")
    zero = _write_text(tmp_path / "zero.svm", "1 0:1 3:2\n-1 2:5\n")
    for path in (one, zero):
        for zb in ("auto", True, False) if path is one else ("auto", True):
            store = convert_svmlight(path, tmp_path / f"{path.stem}-{zb}.zarr", zero_based=zb, shuffle=False)
            _assert_same_csr(store.read_all()[0], load_svmlight_file(str(path), zero_based=zb)[0])


def test_incomplete_and_tampered_stores_do_not_open(tmp_path):
    X, y = load_svmlight_file(str(_shared("heart_scale")), n_features=13)
    url = tmp_path / "h.zarr"
    write_store(url, X, y, block_rows=100, shuffle=False)
    # a completion marker removed: as an interrupted write leaves it
    g = zarr.open_group(str(url), mode="a")
    meta = g.attrs["daskdca"]
    g.attrs["daskdca"] = {**meta, "complete": False}
    with pytest.raises(StoreError, match="not a complete daskdca store"):
        open_store(url)
    # a shape that disagrees with the arrays
    g.attrs.update({"daskdca": meta, "shape": [271, 13]})
    with pytest.raises(StoreError, match="inconsistent"):
        open_store(url)
    g.attrs["shape"] = [270, 13]
    store = open_store(url)
    # a deleted chunk reads back as zeros in zarr; the checksum catches it
    chunk = next(Path(url, "data", "c").iterdir())
    chunk.unlink()
    with pytest.raises(StoreError, match="does not match its checksum"):
        store.read_block(0)
    with pytest.raises(StoreError, match="No daskdca store"):
        open_store(tmp_path / "missing.zarr")


def test_killed_conversion_leaves_nothing_valid_and_rerun_completes(tmp_path):
    # a text file big enough that conversion takes a while with tiny chunks
    rng = np.random.default_rng(0)
    lines = [f"{1 if rng.random() < .5 else -1} " + " ".join(f"{j}:{rng.random():.6f}"
             for j in sorted(rng.choice(np.arange(1, 2000), 40, replace=False))) for _ in range(20000)]
    path = _write_text(tmp_path / "big.svm", "\n".join(lines) + "\n")
    url = tmp_path / "big.zarr"
    code = (f"from daskdca.store import convert_svmlight; "
            f"convert_svmlight({str(path)!r}, {str(url)!r}, block_rows=500, chunk_bytes=20000, shuffle=False)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 60
    while not list(tmp_path.glob("big.zarr.tmp-*/store/indptr")) and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    assert proc.poll() is None, "conversion finished before it could be killed; make the input larger"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the store is built in a temporary sibling folder and published by one rename:
    # a killed conversion leaves that folder and nothing at the target
    assert not _exists(url)
    assert len(list(tmp_path.glob("big.zarr.tmp-*"))) == 1
    with pytest.raises(StoreError, match="No daskdca store"):
        open_store(url)
    store = convert_svmlight(path, url, block_rows=500, shuffle=False)  # default chunks: the rerun is quick
    X, y = load_svmlight_file(str(path))
    _assert_same_csr(store.read_all()[0], X)
    assert not list(tmp_path.glob("big.zarr.tmp-*"))  # the next write removed the leftover


def test_anndata_opens_the_store(tmp_path):
    anndata_io = pytest.importorskip("anndata.io")
    path = _shared("a9a.gz")
    store = convert_svmlight(path, tmp_path / "a.zarr", n_features=123, block_rows=10000, shuffle=False)
    group = zarr.open_group(str(tmp_path / "a.zarr"), mode="r")
    M = anndata_io.read_elem(group)
    X, _ = load_svmlight_file(str(path), n_features=123)
    assert M.shape == (store.n, 123)
    _assert_same_csr(M, X)
    backed = anndata_io.sparse_dataset(group)
    _assert_same_csr(backed[100:200], X[100:200])


def test_public_names():
    import daskdca

    assert daskdca.open_store is open_store
    assert daskdca.convert_svmlight is convert_svmlight and daskdca.write_store is write_store
    assert daskdca.datasets.make_classification is datasets.make_classification


def test_handle_pickles_cheaply_and_reads_on_the_other_side(tmp_path):
    X, y = load_svmlight_file(str(_shared("heart_scale")), n_features=13)
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=64, shuffle=False)
    store.read_block(0)  # opens the group
    blob = pickle.dumps(store)
    assert len(blob) < 4000
    other = pickle.loads(blob)
    _assert_same_csr(other.read_block(2)[0], store.read_block(2)[0])


def test_memory_url_and_storage_options(tmp_path):
    X, y = load_svmlight_file(str(_shared("heart_scale")), n_features=13)
    store = write_store("memory://daskdca-test/h.zarr", X, y, block_rows=100, compression="none", shuffle=False)
    again = open_store("memory://daskdca-test/h.zarr", storage_options={})
    _assert_same_csr(again.read_all()[0], X)
    assert store.n_blocks == 3


@pytest.mark.parametrize("source", ["scipy", "numpy", "dask"])
def test_write_store_from_arrays(tmp_path, source):
    X, y = load_svmlight_file(str(_shared("heart_scale")), n_features=13)
    if source == "numpy":
        data = X.toarray()
    elif source == "dask":
        da = pytest.importorskip("dask.array")
        data = da.from_array(X, chunks=(50, 13), asarray=False)
    else:
        data = X
    store = write_store(tmp_path / "s.zarr", data, y, block_rows=64, shuffle=False)
    Xs, ys = store.read_all()
    np.testing.assert_array_equal(Xs.toarray(), X.toarray())
    np.testing.assert_array_equal(ys, y)
    assert list(store.block_row_offsets) == [0, 64, 128, 192, 256, 270]


def test_float32_and_compression_options(tmp_path):
    X, y = load_svmlight_file(str(_shared("heart_scale")), n_features=13)
    s32 = write_store(tmp_path / "f.zarr", X, y, float32=True, compression="zstd:1", shuffle=False)
    assert s32.group["data"].dtype == np.float32 and s32.attrs["value_dtype"] == "float32"
    np.testing.assert_array_equal(s32.read_all()[0].toarray(), X.toarray().astype(np.float32))
    raw = write_store(tmp_path / "n.zarr", X, y, compression="none", shuffle=False)
    assert raw.attrs["compression"] == "none"
    with pytest.raises(ValueError, match="Unknown compression 'lz5'"):
        write_store(tmp_path / "x.zarr", X, y, compression="lz5", shuffle=False)
    with pytest.raises(ValueError, match="non-finite value nan at row 2"):
        bad = X.copy().tolil()
        bad[2, 3] = np.nan
        write_store(tmp_path / "y.zarr", bad, y, shuffle=False)
    assert not _exists(tmp_path / "y.zarr")


def test_shuffle_and_renumber_are_seeded_and_reversible(tmp_path):
    path = _shared("w8a.gz")
    X, y = load_svmlight_file(str(path), n_features=300)
    store = convert_svmlight(path, tmp_path / "s.zarr", n_features=300, block_rows=7000, chunk_bytes=500_000,
                             shuffle=True, seed=5, renumber_features=True)
    perm = np.random.default_rng(5).permutation(X.shape[0])
    Xs, ys = store.read_all()
    np.testing.assert_array_equal(ys, y[perm])
    fp = store.feature_permutation
    assert sorted(fp) == list(range(300))
    counts = store.group["column_nnz"][:]
    assert np.all(np.diff(counts) <= 0)  # most frequent first
    _assert_same_csr(Xs[:, np.argsort(fp)], X[perm])
    w = np.arange(300.0)
    np.testing.assert_array_equal(store.to_source_features(w)[fp], w)
    # the same seed twice gives the same store; another seed another order
    again = rewrite_store(open_store(tmp_path / "s.zarr"), tmp_path / "t.zarr", block_rows=7000)
    np.testing.assert_array_equal(again.read_all()[1], ys)
    other = convert_svmlight(path, tmp_path / "o.zarr", n_features=300, shuffle=True, seed=6)
    assert not np.array_equal(other.read_all()[1], ys)
    assert not list(tmp_path.glob("*.tmp-*")) and not list(tmp_path.glob("*.buckets-*"))


def test_every_write_shuffles_by_default_and_records_it(tmp_path):
    """Real files are sorted: a store's rows are in a seeded random order unless asked not to be."""
    da = pytest.importorskip("dask.array")
    X, y = load_dataset("heart")
    order = np.argsort(y, kind="stable")  # sorted by label, as real files often are
    Xs, ys = X[order], y[order]
    text = tmp_path / "sorted.svm"
    dump_svmlight_file(Xs, ys, str(text))
    perm = np.random.default_rng(3).permutation(X.shape[0])
    written = {
        "arrays": write_store(tmp_path / "a.zarr", Xs, ys, block_rows=100, seed=3),
        "dask": write_store(tmp_path / "d.zarr", da.from_array(Xs.toarray(), chunks=(64, 13)),
                            da.from_array(ys, chunks=64), block_rows=100, seed=3),
        "svmlight": convert_svmlight(text, tmp_path / "c.zarr", n_features=13, block_rows=100, seed=3),
    }
    for how, store in written.items():
        assert store.shuffled and store.attrs["shuffle_seed"] == 3, how
        np.testing.assert_array_equal(store.row_permutation, perm)
        Xr, yr = store.read_all()
        np.testing.assert_array_equal(yr, ys[perm], err_msg=how)
        np.testing.assert_allclose(Xr.toarray(), Xs[perm].toarray(), rtol=0, atol=1e-15, err_msg=how)
        # dual_coef_[np.argsort(perm)] is in the written rows' order (the docstring's recipe)
        np.testing.assert_array_equal(yr[np.argsort(store.row_permutation)], ys)
    kept = {
        "arrays": write_store(tmp_path / "a0.zarr", Xs, ys, block_rows=100, shuffle=False),
        "dask": write_store(tmp_path / "d0.zarr", da.from_array(Xs.toarray(), chunks=(64, 13)), ys,
                            block_rows=100, shuffle=False),
        "svmlight": convert_svmlight(text, tmp_path / "c0.zarr", n_features=13, block_rows=100, shuffle=False),
    }
    for how, store in kept.items():
        assert not store.shuffled and store.row_permutation is None, how
        np.testing.assert_array_equal(store.read_all()[1], ys, err_msg=how)
    # a plain rewrite keeps the rows and their record; a shuffling rewrite records its own seed
    copy = rewrite_store(written["arrays"], tmp_path / "r.zarr", block_rows=50)
    assert copy.shuffled and copy.attrs["shuffle_seed"] == 3
    np.testing.assert_array_equal(copy.read_all()[1], written["arrays"].read_all()[1])
    assert not rewrite_store(kept["arrays"], tmp_path / "r0.zarr").shuffled
    again = rewrite_store(kept["arrays"], tmp_path / "r1.zarr", shuffle=True, seed=3)
    assert again.shuffled
    np.testing.assert_array_equal(again.read_all()[1], ys[perm])
    # the command line: shuffled by default, --no-shuffle keeps the file's order
    assert cli_main(["convert", str(text), str(tmp_path / "cli.zarr"), "--n-features", "13", "--no-progress"]) == 0
    assert open_store(tmp_path / "cli.zarr").shuffled
    assert cli_main(["convert", str(text), str(tmp_path / "cli0.zarr"), "--n-features", "13", "--no-progress",
                     "--no-shuffle"]) == 0
    np.testing.assert_array_equal(open_store(tmp_path / "cli0.zarr").read_all()[1], ys)
    assert not list(tmp_path.glob("*.tmp-*"))


def test_parallel_conversion_on_a_cluster_matches_sequential(tmp_path):
    distributed = pytest.importorskip("distributed")
    import gzip
    import shutil

    plain = tmp_path / "a9a.txt"
    with gzip.open(_shared("a9a.gz"), "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        par = convert_svmlight(plain, tmp_path / "p.zarr", n_features=123, chunk_bytes=200_000,
                               block_rows=5000, client=client, shuffle=False)
    seq = convert_svmlight(plain, tmp_path / "s.zarr", n_features=123, block_rows=5000, shuffle=False)
    _assert_same_csr(par.read_all()[0], seq.read_all()[0])
    np.testing.assert_array_equal(par.read_all()[1], seq.read_all()[1])


def test_generated_data_is_deterministic_and_as_asked(tmp_path):
    kw = dict(nnz_per_row=30, zipf_exponent=1.1, row_norm_spread=0.5, correlation=0.3, label_noise=0.1,
              seed=4, block_rows=700)
    a = datasets.make_classification(tmp_path / "a.zarr", 3000, 5000, **kw)
    b = datasets.make_classification(tmp_path / "b.zarr", 3000, 5000, **kw)
    Xa, ya = a.read_all()
    Xb, yb = b.read_all()
    _assert_same_csr(Xa, Xb)
    np.testing.assert_array_equal(ya, yb)
    assert (a.n, a.d, a.n_blocks) == (3000, 5000, 5)
    assert set(np.unique(ya)) == {-1.0, 1.0}
    assert 15 < a.nnz / a.n < 45
    norms = np.sqrt(a.group["row_sqnorm"][:])
    assert norms.max() / norms.mean() > 2  # spread rows (the R / R_bar cases)
    counts = np.sort(a.group["column_nnz"][:])[::-1]
    assert counts[:50].sum() > 0.3 * counts.sum()  # Zipf: the top 1% carry much of the mass
    flat = datasets.make_classification(tmp_path / "c.zarr", 3000, 5000, nnz_per_row=30, zipf_exponent=0.0,
                                        row_norm_spread=0.0, block_rows=700)
    np.testing.assert_allclose(np.sqrt(flat.group["row_sqnorm"][:]), 1.0)
    r = datasets.make_regression(tmp_path / "r.zarr", 500, 40, nnz_per_row=5, noise=0.0, block_rows=100)
    Xr, yr = r.read_all()
    assert r.attrs["label_values"] is None or len(r.attrs["label_values"]) > 2
    with pytest.raises(ValueError, match="correlation must be in"):
        datasets.make_classification(tmp_path / "x.zarr", 10, 10, correlation=2.0)


def test_cli_convert_and_make_data(tmp_path, capsys):
    path = _shared("heart_scale")
    assert cli_main(["convert", str(path), str(tmp_path / "h.zarr"), "--n-features", "13", "--block-rows", "100",
                     "--shuffle", "--seed", "2", "--float32", "--no-progress"]) == 0
    store = open_store(tmp_path / "h.zarr")
    assert (store.n, store.d, store.n_blocks) == (270, 13, 3)
    assert store.attrs["value_dtype"] == "float32" and store.attrs["shuffle_seed"] == 2
    assert cli_main(["make-data", str(tmp_path / "g.zarr"), "--rows", "1000", "--features", "300",
                     "--nnz-per-row", "10", "--no-progress"]) == 0
    assert open_store(tmp_path / "g.zarr").n == 1000
    assert "wrote" in capsys.readouterr().out
    # user errors: one line on stderr and exit status 2 (they raised SystemExit(message) before)
    assert cli_main(["convert", str(tmp_path / "nope.svm"), str(tmp_path / "x.zarr")]) == 2
    assert "daskdca: error: " in capsys.readouterr().err
