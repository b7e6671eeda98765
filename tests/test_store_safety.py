"""The store: writes that lose nothing, reads verified every time, clear errors.

Every test here fails on the store of commit 5757b9e (rmtree of the target,
checksums once per process without row norms, raw parser tracebacks).
"""

import bz2
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import zarr

from daskdca import datasets
from daskdca.store import (
    TMP_MARKER,
    CSRStore,
    StoreError,
    convert_svmlight,
    open_store,
    rewrite_store,
    write_store,
)

from conftest import random_labels, random_sparse


def _small(seed=0, n=300, d=40):
    return random_sparse(n, d, 0.2, seed), random_labels(n, seed)


def _store(path, seed=0, **kw):
    X, y = _small(seed)
    return write_store(path, X, y, block_rows=kw.pop("block_rows", 100), shuffle=kw.pop("shuffle", False), **kw)


def _svm_text(n, d, label, value, seed=0):
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        cols = np.sort(rng.choice(np.arange(1, d + 1), 30, replace=False))
        lines.append(f"{label} " + " ".join(f"{j}:{value}" for j in cols))
    return "\n".join(lines) + "\n"


def _tree(path):
    """{relative path: bytes} of every file under ``path``."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()}


def _leftovers(parent):
    return sorted(p.name for p in Path(parent).iterdir() if ".tmp-" in p.name or ".buckets-" in p.name)


# ----------------------------------------------------------------- writes that lose nothing


def test_a_users_folder_is_refused_and_its_files_survive(tmp_path):
    project = tmp_path / "project"
    (project / "figs").mkdir(parents=True)
    (project / "paper.tex").write_text("\\documentclass{article}")
    (project / "figs" / "a.png").write_bytes(b"\x89PNG")
    before = _tree(project)
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:1\n-1 2:1\n")
    X, y = _small()
    for write in (lambda ow: write_store(project, X, y, overwrite=ow, shuffle=False),
                  lambda ow: convert_svmlight(svm, project, overwrite=ow, shuffle=False),
                  lambda ow: datasets.make_classification(project, 10, 10, overwrite=ow)):
        for overwrite in (False, True):
            with pytest.raises(FileExistsError, match="not a daskdca store.*[Pp]ick another path"):
                write(overwrite)
    assert _tree(project) == before
    assert _leftovers(tmp_path) == []


def test_replacing_a_store_needs_overwrite(tmp_path):
    url = tmp_path / "s.zarr"
    first = _store(url, seed=0)
    with pytest.raises(FileExistsError, match="existing daskdca store; pass overwrite=True"):
        _store(url, seed=1)
    assert open_store(url)._meta.block_checksums == first._meta.block_checksums
    second = _store(url, seed=1, overwrite=True)
    assert second._meta.block_checksums != first._meta.block_checksums
    np.testing.assert_array_equal(open_store(url).read_all()[1], _small(1)[1])
    assert _leftovers(tmp_path) == []
    # an empty folder holds nothing to lose: it is used
    (tmp_path / "empty.zarr").mkdir()
    assert _store(tmp_path / "empty.zarr").n == 300


@pytest.mark.parametrize("where", ["notes.txt", "results/r.csv", "data/extra"])
def test_overwrite_refuses_a_store_holding_files_of_someone_elses(tmp_path, where):
    """Replacing a store deletes everything in its folder: a file or folder daskdca did not write there (beside
    the arrays, or inside one) makes every writer refuse with ``overwrite=True``, and nothing is changed.  The
    replacement deleted them."""
    url = tmp_path / "s.zarr"
    _store(url)
    (url / where).parent.mkdir(parents=True, exist_ok=True)
    (url / where).write_text("the user's")
    before = _tree(url)
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:1\n-1 2:1\n")
    X, y = _small(1)
    for write in (lambda: write_store(url, X, y, overwrite=True, shuffle=False),
                  lambda: convert_svmlight(svm, url, overwrite=True, shuffle=False),
                  lambda: datasets.make_classification(url, 10, 10, overwrite=True)):
        shown = where if where.startswith("data/") else where.split("/")[0]
        with pytest.raises(ValueError, match=f"also holds '{shown}', which daskdca did not write"):
            write()
    assert _tree(url) == before
    assert _leftovers(tmp_path) == []
    (url / where).unlink()
    if where == "results/r.csv":
        (url / "results").rmdir()
    assert _store(url, seed=1, overwrite=True).n == 300


def test_overwrite_refuses_an_object_store_holding_files_of_someone_elses():
    import fsspec

    url = "memory://daskdca-safety/foreign.zarr"
    X, y = _small(4)
    write_store(url, X, y, block_rows=100, shuffle=False)
    fsspec.filesystem("memory").pipe("/daskdca-safety/foreign.zarr/notes.txt", b"the user's")
    with pytest.raises(ValueError, match="also holds 'notes.txt'"):
        write_store(url, X[:200], y[:200], block_rows=100, overwrite=True, shuffle=False)
    assert open_store(url).n == 300
    assert fsspec.filesystem("memory").cat_file("/daskdca-safety/foreign.zarr/notes.txt") == b"the user's"


def test_a_checkpoint_is_never_written_inside_a_store(tmp_path):
    """A checkpoint inside a store (the one fitted, or any) made that store unreplaceable and held files the
    store does not list; it is refused before anything is written.  Beside the store it is fine."""
    from daskdca.engine.checkpoint import _prepare_checkpoint

    url = tmp_path / "s.zarr"
    _store(url)
    before = _tree(url)
    with pytest.raises(ValueError, match=r"lies inside the daskdca store .*s\.zarr'.*Give a folder outside it"):
        _prepare_checkpoint(url / "ckpt")
    assert _tree(url) == before
    assert _prepare_checkpoint(tmp_path / "beside") == []


@pytest.mark.parametrize("points_to", ["store", "empty", "nothing"])
def test_a_symbolic_link_as_the_output_is_refused(tmp_path, points_to):
    """A link as the output: the write replaced the link with a folder (the store it named unchanged), called
    a link to an empty folder "created by another writer", and a dangling one "a file".  It is refused, naming
    where it points, and nothing changes."""
    target = tmp_path / "real.zarr"
    if points_to == "store":
        _store(target)
    elif points_to == "empty":
        target.mkdir()
    link = tmp_path / "link.zarr"
    link.symlink_to(target)
    before = _tree(tmp_path)
    with pytest.raises(ValueError, match=r"is a symbolic link \(to .*real\.zarr'\); daskdca writes a store at a "
                                         r"real path"):
        _store(link, overwrite=True)
    assert link.is_symlink() and _tree(tmp_path) == before and _leftovers(tmp_path) == []


def test_output_may_not_be_or_contain_the_input(tmp_path):
    folder = tmp_path / "out.zarr"
    folder.mkdir()
    svm = folder / "in.svm"
    svm.write_text("1 1:1\n-1 2:1\n")
    with pytest.raises(ValueError, match="is or contains the input"):
        convert_svmlight(svm, folder, overwrite=True, shuffle=False)
    with pytest.raises(ValueError, match="is or contains the input"):
        convert_svmlight(svm, svm, overwrite=True, shuffle=False)
    assert svm.read_text() == "1 1:1\n-1 2:1\n"
    store = _store(tmp_path / "s.zarr")
    with pytest.raises(ValueError, match="is or contains the input"):
        rewrite_store(store, store.url, overwrite=True)
    with pytest.raises(ValueError, match="lies inside the input"):
        rewrite_store(store, os.path.join(store.url, "sub.zarr"))
    store.read_all()


def test_failed_conversion_keeps_the_old_store_and_the_input(tmp_path):
    url = tmp_path / "s.zarr"
    old = _store(url)
    before = _tree(url)
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n" * 500 + "-1 1:x\n")
    for shuffle in (False, True):
        with pytest.raises(ValueError, match="line 501"):
            convert_svmlight(bad, url, overwrite=True, shuffle=shuffle, block_rows=50, chunk_bytes=300)
    assert _tree(url) == before
    assert open_store(url)._meta.block_checksums == old._meta.block_checksums
    assert bad.exists() and _leftovers(tmp_path) == []


def test_leftovers_are_removed_only_when_ours_and_dead(tmp_path):
    url = tmp_path / "s.zarr"
    ours = tmp_path / "s.zarr.tmp-0123456789abcdef"
    (ours / "store").mkdir(parents=True)
    (ours / TMP_MARKER).write_text(json.dumps({"daskdca_temp": 1, "target": "s.zarr", "pid": 1, "host": "x"}))
    unmarked = tmp_path / "s.zarr.tmp-fedcba9876543210"
    unmarked.mkdir()
    (unmarked / "notes.txt").write_text("mine")
    other_name = tmp_path / "s.zarr.tmp-mine"
    other_name.mkdir()
    (other_name / TMP_MARKER).write_text(json.dumps({"daskdca_temp": 1, "target": "s.zarr"}))
    other_target = tmp_path / "t.zarr.tmp-0123456789abcdef"
    other_target.mkdir()
    (other_target / TMP_MARKER).write_text(json.dumps({"daskdca_temp": 1, "target": "t.zarr"}))
    _store(url)
    assert not ours.exists()
    assert unmarked.exists() and other_name.exists() and other_target.exists()


def test_a_live_writers_temporary_folder_is_left_alone(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    live = tmp_path / "s.zarr.tmp-00000000000000aa"
    live.mkdir()
    marker = live / TMP_MARKER
    marker.write_text(json.dumps({"daskdca_temp": 1, "target": "s.zarr"}))
    fd = os.open(marker, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _store(tmp_path / "s.zarr")
        assert live.exists()
    finally:
        os.close(fd)
    _store(tmp_path / "s.zarr", overwrite=True)
    assert not live.exists()


def test_a_replacement_killed_between_renames_is_undone(tmp_path):
    # the two-rename fallback moves the old store to <tmp>/old first; a kill there
    # must not lose it: the next write puts it back before anything else
    url = tmp_path / "s.zarr"
    old = _store(url)
    tmp = tmp_path / "s.zarr.tmp-00000000000000bb"
    tmp.mkdir()
    (tmp / TMP_MARKER).write_text(json.dumps({"daskdca_temp": 1, "target": "s.zarr", "pid": 1}))
    os.rename(url, tmp / "old")
    with pytest.raises(FileExistsError, match="overwrite"):
        _store(url, seed=3)  # the old store is back, so this needs overwrite
    assert open_store(url)._meta.block_checksums == old._meta.block_checksums


class _Racing:
    """A dask chunk whose computation first runs another complete write to the same path."""

    def __init__(self, other):
        self.other = other

    def __call__(self, block):
        if self.other is not None:
            other, self.other = self.other, None
            other()
        return block


@pytest.mark.parametrize("existing", [False, True])
def test_two_writers_on_one_path_never_mix(tmp_path, existing):
    da = pytest.importorskip("dask.array")
    url = tmp_path / "s.zarr"
    if existing:
        _store(url, seed=9)
    Xa, ya = _small(1)
    Xb, yb = _small(2)
    racing = _Racing(lambda: write_store(url, Xb, yb, block_rows=100, overwrite=existing, shuffle=False))
    dXa = da.from_array(Xa.toarray(), chunks=(100, 40)).map_blocks(racing, dtype=np.float64, meta=np.empty((0, 0)))
    try:
        write_store(url, dXa, ya, block_rows=100, overwrite=existing, shuffle=False)
        a_won = True
    except (FileExistsError, StoreError) as exc:
        assert "another writer" in str(exc)
        a_won = False
    Xs, ys = open_store(url).read_all()
    expect_X, expect_y = (Xa, ya) if a_won else (Xb, yb)
    np.testing.assert_array_equal(Xs.toarray(), expect_X.toarray())
    np.testing.assert_array_equal(ys, expect_y)
    assert existing == a_won  # no store: the first rename wins; a store: the last exchange does
    assert _leftovers(tmp_path) == []


def _convert_cmd(src, url, extra=""):
    return (f"from daskdca.store import convert_svmlight; "
            f"convert_svmlight({str(src)!r}, {str(url)!r}, block_rows=500, chunk_bytes=20000{extra})")


def test_killed_shuffle_conversion_keeps_old_store_and_next_write_cleans(tmp_path):
    src = tmp_path / "big.svm"
    src.write_text(_svm_text(20000, 2000, 1, 0.5))
    url = tmp_path / "big.zarr"
    old = _store(url)
    before = _tree(url)
    proc = subprocess.Popen([sys.executable, "-c", _convert_cmd(src, url, ", shuffle=True, overwrite=True")])
    deadline = time.time() + 90
    while not list(tmp_path.glob("big.zarr.tmp-*/buckets/zarr.json")) and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    assert proc.poll() is None, "conversion finished before it could be killed; make the input larger"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _tree(url) == before  # the old store, byte for byte
    assert open_store(url)._meta.block_checksums == old._meta.block_checksums
    assert len(_leftovers(tmp_path)) == 1
    store = convert_svmlight(src, url, block_rows=10000, chunk_bytes=2**20, overwrite=True, shuffle=True)
    assert store.n == 20000 and _leftovers(tmp_path) == []


def test_concurrent_conversions_give_one_whole_store(tmp_path):
    a, b = tmp_path / "a.svm", tmp_path / "b.svm"
    a.write_text(_svm_text(4000, 500, 1, 1.5, seed=1))
    b.write_text(_svm_text(4000, 500, -1, 2.5, seed=2))
    for trial in range(1):
        url = tmp_path / f"s{trial}.zarr"
        procs = [subprocess.Popen([sys.executable, "-c", _convert_cmd(src, url)], stderr=subprocess.PIPE)
                 for src in (a, b)]
        codes = [p.wait(timeout=120) for p in procs]
        errors = [p.stderr.read().decode() for p in procs]
        assert sorted(codes) in ([0, 1], [1, 1]), errors
        for code, err in zip(codes, errors):
            if code:
                assert "another writer" in err or "existing daskdca store" in err, err
        if 0 in codes:
            X, y = open_store(url).read_all()
            winner = (1.0, 1.5) if codes[0] == 0 else (-1.0, 2.5)
            assert set(np.unique(y)) == {winner[0]} and set(np.unique(X.data)) == {winner[1]}
            assert X.shape[0] == 4000
        assert not list(tmp_path.glob(f"s{trial}.zarr.tmp-*"))


def test_object_store_urls_commit_last_and_need_overwrite():
    url = "memory://daskdca-safety/s.zarr"
    X, y = _small(4)
    store = write_store(url, X, y, block_rows=100, compression="none", shuffle=False)
    with pytest.raises(FileExistsError, match="overwrite"):
        write_store(url, X, y, shuffle=False)
    again = write_store(url, X[:200], y[:200], block_rows=100, overwrite=True, shuffle=False)
    assert again.n == 200 and store.n == 300
    g = zarr.open_group(url, mode="a")
    meta = g.attrs["daskdca"]
    g.attrs["daskdca"] = {**meta, "complete": False}  # as a write killed before its commit marker
    with pytest.raises(StoreError, match="not a complete daskdca store"):
        open_store(url)


# ----------------------------------------------------------------- reads verified every time


@pytest.mark.parametrize("array", ["data", "indices", "indptr", "y", "row_sqnorm"])
def test_a_deleted_chunk_of_any_block_array_raises_on_every_read(tmp_path, array):
    X, y = _small(5, n=400)
    store = write_store(tmp_path / "s.zarr", X, y, block_rows=100, compression="none", shuffle=False)
    for k in range(store.n_blocks):
        store.read_block(k)  # read once: a per-process cache would now trust these blocks
    chunks = sorted(Path(store.url, array, "c").rglob("*"))
    chunks[0].unlink()
    with pytest.raises(StoreError, match=r"block 0 of .*s\.zarr"):
        store.read_block(0)
    with pytest.raises(StoreError, match="block 0"):
        store.read_block(0, verify="once")  # the former per-process cache verifies every time too
    # a deleted chunk of y is caught sooner, by open_store's check of the labels against label_values
    with pytest.raises(StoreError, match="block 0|y holds the label 0.0"):
        open_store(store.url).read_all()


@pytest.mark.parametrize("array, change", [("row_sqnorm", lambda v: v * 0.01), ("y", lambda v: -v),
                                           ("data", lambda v: v * 1.0000001), ("indices", lambda v: v[::-1])])
def test_an_array_rewritten_through_zarr_raises(tmp_path, array, change):
    store = _store(tmp_path / "s.zarr")
    g = zarr.open_group(store.url, mode="a")
    g[array][:] = change(g[array][:])
    with pytest.raises(StoreError, match="block 0 of .*does not match its checksum"):
        open_store(store.url).read_block(0)


@pytest.mark.parametrize("kind", ["xxh3-64", "crc32c-v2"])
def test_each_checksum_kind_verifies_its_blocks(tmp_path, monkeypatch, kind):
    """New stores carry XXH3-64 block checksums; a store written with CRC-32C (daskdca before 2026-11-26) is
    still read and verified with CRC-32C, and a changed array fails either way.  The recorded checksum
    equals the one recomputed from the arrays (incremental digests across chunks = one-shot digests)."""
    from daskdca.store import format as store_format  # CHECKSUM is read from here when a write starts

    from sklearn.datasets import dump_svmlight_file

    monkeypatch.setattr(store_format, "CHECKSUM", kind)
    X, y = _small(8, n=700)
    svm = tmp_path / "s.svm"
    dump_svmlight_file(X, y, str(svm), zero_based=False)
    # 2 KiB of text per parser call: blocks of 256 rows are digested over many appends, one-based indices
    # are shifted afterwards (the index digests redone)
    store = convert_svmlight(svm, tmp_path / "s.zarr", block_rows=256, chunk_bytes=2048, shuffle=False,
                             zero_based=False)
    monkeypatch.undo()
    assert store.attrs["checksum"] == kind
    opened = open_store(store.url)
    for k in range(opened.n_blocks):
        Xb, yb, sq = opened.read_block(k, with_sqnorm=True)
        recomputed = store_format._block_checksum(Xb.indptr, Xb.indices, Xb.data, yb, sq,
                                                  kind=store_format.CHECKSUM_KINDS[kind])
        assert recomputed == opened.attrs["block_checksums"][k]
    g = zarr.open_group(store.url, mode="a")
    g["y"][:] = -g["y"][:]
    with pytest.raises(StoreError, match="block 0 of .*does not match its checksum"):
        open_store(store.url).read_block(0)


def test_an_unknown_checksum_kind_is_refused(tmp_path):
    store = _store(tmp_path / "s.zarr")
    g = zarr.open_group(store.url, mode="a")
    g.attrs["daskdca"] = {**g.attrs["daskdca"], "checksum": "md5"}
    with pytest.raises(StoreError, match="checksum kind is 'md5'"):
        open_store(store.url)


def test_column_counts_and_permutation_are_verified(tmp_path):
    X, y = _small(6)
    store = write_store(tmp_path / "s.zarr", X, y, renumber_features=True, shuffle=False)
    store.column_nnz, store.feature_permutation
    g = zarr.open_group(store.url, mode="a")
    g["column_nnz"][:] = g["column_nnz"][:] + 1
    g["feature_permutation"][:] = g["feature_permutation"][:][::-1]
    with pytest.raises(StoreError, match="column_nnz"):
        store.column_nnz
    with pytest.raises(StoreError, match="feature_permutation"):
        store.feature_permutation


def test_a_damaged_chunk_raises_store_error(tmp_path):
    store = _store(tmp_path / "s.zarr")
    chunk = next(Path(store.url, "data", "c").rglob("*"))
    chunk.write_bytes(b"garbage" * 10)
    with pytest.raises(StoreError, match="block 0 of"):
        open_store(store.url).read_block(0)


def test_blocks_read_back_equal_the_input(tmp_path):
    X, y = _small(7, n=1000)
    store = write_store(tmp_path / "s.zarr", X, y, block_rows=128, shuffle=False)
    for k in range(store.n_blocks):
        Xb, yb, sq = store.read_block(k, with_sqnorm=True)
        a, b = store.block_row_offsets[k:k + 2]
        np.testing.assert_array_equal(Xb.toarray(), X[a:b].toarray())
        np.testing.assert_array_equal(yb, y[a:b])
        np.testing.assert_allclose(sq, np.asarray(X[a:b].multiply(X[a:b]).sum(axis=1)).ravel())


# ----------------------------------------------------------------- bad input, table-driven


def _write_bytes(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _gz(text):
    return gzip.compress(text.encode())


def _convert_text(text, name="f.svm", **kw):
    def run(tmp_path):
        data = text if isinstance(text, bytes) else text.encode()
        return convert_svmlight(_write_bytes(tmp_path, name, data), tmp_path / "o.zarr", **kw)
    return run


def _convert_kw(**kw):
    def run(tmp_path):
        path = _write_bytes(tmp_path, "f.svm", b"1 1:1\n-1 2:1\n")
        return convert_svmlight(path, kw.pop("url", tmp_path / "o.zarr"), **kw)
    return run


def _write(X=None, y=None, **kw):
    def run(tmp_path):
        X0, y0 = _small()
        Xv = X() if callable(X) else (X0 if X is None else X)
        yv = y() if callable(y) else (y0 if y is None else y)
        return write_store(kw.pop("url", tmp_path / "o.zarr"), Xv, yv, **kw)
    return run


def _dask_write(make):
    def run(tmp_path):
        da = pytest.importorskip("dask.array")
        X, y = make(da)
        return write_store(tmp_path / "o.zarr", X, y, block_rows=100, shuffle=False)
    return run


def _in_tmp(fn):
    """Call fn(tmp_path, store) with a fresh store at tmp_path/s.zarr."""
    def run(tmp_path):
        return fn(tmp_path, _store(tmp_path / "s.zarr"))
    return run


def _damaged_json(tmp_path, store, where="zarr.json"):
    Path(store.url, where).write_text("{ not json")
    return open_store(store.url)


def _format_1(tmp_path, store):
    g = zarr.open_group(store.url, mode="a")
    g.attrs["daskdca"] = {**g.attrs["daskdca"], "format_version": 1}
    return open_store(store.url)


def _user_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "paper.tex").write_text("x")
    return tmp_path / "mine"


def _a_file(tmp_path):
    path = tmp_path / "file.txt"
    path.write_text("x")
    return path


_FILE = "1 1:1\n-1 2:1\n"
BAD_INPUT = [
    # convert_svmlight: the file
    ("convert empty file", _convert_text(""), ValueError, "no rows"),
    ("convert comments only", _convert_text("# nothing\n# here\n"), ValueError, "no rows"),
    ("convert blank lines", _convert_text("\n\n\n"), ValueError, "no rows"),
    ("convert index 2**31", _convert_text("1 1:1\n1 2147483648:1\n"), ValueError, "line 2"),
    ("convert index 2**40", _convert_text("1 1099511627776:1\n"), ValueError, "2**31"),
    ("convert index 2**64", _convert_text("1 18446744073709551616:1\n"), ValueError, "line 1"),
    ("convert index 2**31 in .gz", _convert_text(_gz("1 2147483648:1\n"), "f.gz"), ValueError, "f.gz"),
    ("convert no features", _convert_text("1\n-1\n"), ValueError, "no features"),
    ("convert bad value", _convert_text("1 1:x\n"), ValueError, "malformed"),
    ("convert bad label", _convert_text("abc 1:1\n"), ValueError, "malformed"),
    ("convert bad pair", _convert_text("1 1-1\n"), ValueError, "malformed"),
    ("convert nan value", _convert_text("1 1:nan\n"), ValueError, "non-finite"),
    ("convert inf value", _convert_text("1 1:1\n1 2:inf\n"), ValueError, "line 2"),
    ("convert -inf value", _convert_text("1 1:-inf\n"), ValueError, "non-finite"),
    ("convert nan label", _convert_text("nan 1:1\n"), ValueError, "non-finite"),
    ("convert index 0 one-based", _convert_text("1 0:1\n", zero_based=False), ValueError, "one-based"),
    ("convert negative index", _convert_text("1 -3:1\n"), ValueError, "line 1"),
    ("convert beyond n_features", _convert_text("1 7:1\n", n_features=5), ValueError, "beyond"),
    ("convert beyond n_features 0-based", _convert_text("1 5:1\n", n_features=5, zero_based=True), ValueError,
     "beyond"),
    ("convert truncated gz", _convert_text(_gz(_FILE * 200)[:-30], "f.gz"), ValueError, "truncated"),
    ("convert truncated bz2", _convert_text(bz2.compress((_FILE * 200).encode())[:-30], "f.bz2"), ValueError,
     "truncated"),
    ("convert not gzip", _convert_text(b"this is not gzip", "f.gz"), ValueError, "damaged"),
    ("convert binary junk", _convert_text(bytes(range(256)) * 4), ValueError, "f.svm"),
    ("convert input folder", lambda t: convert_svmlight(t, t / "o.zarr", shuffle=False), IsADirectoryError, "folder"),
    ("convert missing input", lambda t: convert_svmlight(t / "nope.svm", t / "o.zarr"), FileNotFoundError,
     "does not exist"),
    # convert_svmlight: the parameters
    ("convert n_features 0", _convert_kw(n_features=0), ValueError, "n_features"),
    ("convert n_features -3", _convert_kw(n_features=-3), ValueError, "n_features"),
    ("convert n_features 2.5", _convert_kw(n_features=2.5), TypeError, "n_features"),
    ("convert n_features str", _convert_kw(n_features="10"), TypeError, "n_features"),
    ("convert block_rows 0", _convert_kw(block_rows=0), ValueError, "block_rows"),
    ("convert block_rows -1", _convert_kw(block_rows=-1), ValueError, "block_rows"),
    ("convert block_rows 1.5", _convert_kw(block_rows=1.5), TypeError, "block_rows"),
    ("convert block_rows True", _convert_kw(block_rows=True), TypeError, "block_rows"),
    ("convert chunk_bytes 0", _convert_kw(chunk_bytes=0), ValueError, "chunk_bytes"),
    ("convert chunk_bytes -1", _convert_kw(chunk_bytes=-1), ValueError, "chunk_bytes"),
    ("convert chunk_bytes 0.5", _convert_kw(chunk_bytes=0.5), TypeError, "chunk_bytes"),
    ("convert zero_based yes", _convert_kw(zero_based="yes"), ValueError, "zero_based"),
    ("convert zero_based 1", _convert_kw(zero_based=1), ValueError, "zero_based"),
    ("convert compression lz4", _convert_kw(compression="lz4"), ValueError, "compression"),
    ("convert zstd level 99", _convert_kw(compression="zstd:99"), ValueError, "level"),
    ("convert seed -1", _convert_kw(seed=-1), ValueError, "seed"),
    ("convert seed 1.5", _convert_kw(seed=1.5, shuffle=True), TypeError, "seed"),
    ("convert shuffle yes", _convert_kw(shuffle="yes"), TypeError, "shuffle"),
    ("convert overwrite yes", _convert_kw(overwrite="yes"), TypeError, "overwrite"),
    ("convert float32 no", _convert_kw(float32="no"), TypeError, "float32"),
    ("convert storage_options str", _convert_kw(storage_options="x"), TypeError, "storage_options"),
    ("convert url None", _convert_kw(url=None), TypeError, "url"),
    ("convert url empty", _convert_kw(url=""), ValueError, "url"),
    ("convert output is a file", lambda t: convert_svmlight(_write_bytes(t, "f.svm", _FILE.encode()),
                                                            _a_file(t), shuffle=False), FileExistsError, "file"),
    ("convert output user folder", lambda t: convert_svmlight(_write_bytes(t, "f.svm", _FILE.encode()),
                                                              _user_folder(t)), FileExistsError, "not a daskdca"),
    ("convert output existing store", _in_tmp(lambda t, s: convert_svmlight(_write_bytes(t, "f.svm", b"1 1:1\n"),
                                                                            s.url)), FileExistsError, "overwrite"),
    ("convert output is input", lambda t: convert_svmlight(_write_bytes(t, "f.svm", b"1 1:1\n"), t / "f.svm",
                                                           overwrite=True, shuffle=False), ValueError, "input"),
    # write_store
    ("write complex sparse X", _write(X=lambda: sp.csr_matrix(np.eye(3) * (1 + 1j)), y=np.ones(3)), TypeError,
     "complex"),
    ("write complex dense X", _write(X=np.eye(3) * 1j, y=np.ones(3)), TypeError, "complex"),
    ("write complex y", _write(X=np.eye(3), y=np.ones(3) * 1j), TypeError, "complex"),
    ("write string X", _write(X=np.array([["a", "b"]]), y=np.ones(1)), TypeError, "dtype"),
    ("write object X", _write(X=np.array([[object()]]), y=np.ones(1)), TypeError, "dtype"),
    ("write 1-D X", _write(X=np.ones(3), y=np.ones(3)), ValueError, "2-D"),
    ("write 3-D X", _write(X=np.ones((2, 2, 2)), y=np.ones(2)), ValueError, "2-D"),
    ("write y longer", _write(y=np.ones(301)), ValueError, "rows"),
    ("write y shorter", _write(y=np.ones(299)), ValueError, "rows"),
    ("write y 2-D", _write(y=np.ones((300, 2))), ValueError, "1-D"),
    ("write y of mixed types", _write(y=np.array(["a"] * 150 + [1] * 150, dtype=object)), TypeError, "one type"),
    ("write 0 rows", _write(X=sp.csr_matrix((0, 5)), y=np.zeros(0)), ValueError, "0 rows"),
    ("write 0 features", _write(X=sp.csr_matrix((5, 0)), y=np.ones(5)), ValueError, "0 features"),
    ("write nan in X", _write(X=np.array([[1.0, np.nan]]), y=np.ones(1)), ValueError, "non-finite"),
    ("write inf in X", _write(X=sp.csr_matrix(np.array([[np.inf, 1.0]])), y=np.ones(1)), ValueError,
     "non-finite"),
    ("write nan in y", _write(X=np.eye(2), y=np.array([1.0, np.nan])), ValueError, "non-finite label"),
    ("write block_rows 0", _write(block_rows=0), ValueError, "block_rows"),
    ("write block_rows -5", _write(block_rows=-5), ValueError, "block_rows"),
    ("write block_rows float", _write(block_rows=10.0), TypeError, "block_rows"),
    ("write seed -1", _write(seed=-1, shuffle=True), ValueError, "seed"),
    ("write shuffle 1", _write(shuffle=1), TypeError, "shuffle"),
    ("write compression bad", _write(compression="gzip"), ValueError, "compression"),
    ("write url is a file", lambda t: write_store(_a_file(t), *_small(), shuffle=False), FileExistsError, "file"),
    ("write url user folder", lambda t: write_store(_user_folder(t), *_small()), FileExistsError, "not a daskdca"),
    ("write existing store", _in_tmp(lambda t, s: write_store(s.url, *_small())), FileExistsError, "overwrite"),
    ("write dask y longer", _dask_write(lambda da: (da.from_array(np.eye(300, 5), chunks=(100, 5)),
                                                    da.ones(301, chunks=100))), ValueError, "rows"),
    ("write dask y shorter", _dask_write(lambda da: (da.from_array(np.eye(300, 5), chunks=(100, 5)),
                                                     da.ones(200, chunks=100))), ValueError, "rows"),
    ("write dask y unknown length", _dask_write(lambda da: (
        da.from_array(np.eye(300, 5), chunks=(100, 5)),
        (lambda v: v[v > 0])(da.ones(400, chunks=100)))), ValueError, "rows"),
    ("write dask numpy y longer", _dask_write(lambda da: (da.from_array(np.eye(300, 5), chunks=(100, 5)),
                                                          np.ones(310))), ValueError, "rows"),
    ("write dask complex X", _dask_write(lambda da: (da.from_array(np.eye(300, 5) * 1j, chunks=(100, 5)),
                                                     np.ones(300))), TypeError, "complex"),
    ("write dask feature chunks", _dask_write(lambda da: (da.from_array(np.eye(300, 6), chunks=(100, 3)),
                                                          np.ones(300))), ValueError, "chunked along features"),
    ("write dask unknown X chunks", _dask_write(lambda da: (
        (lambda v: v[v[:, 0] >= 0])(da.from_array(np.eye(300, 5), chunks=(100, 5))), np.ones(300))), ValueError,
        "compute_chunk_sizes"),
    ("write dask 0 features", _dask_write(lambda da: (da.zeros((300, 0), chunks=(100, 0)), np.ones(300))),
     ValueError, "0 features"),
    # rewrite_store
    ("rewrite not a store", lambda t: rewrite_store(str(t), t / "o.zarr"), TypeError, "CSRStore"),
    ("rewrite onto its input", _in_tmp(lambda t, s: rewrite_store(s, s.url, overwrite=True)), ValueError,
     "input"),
    ("rewrite inside its input", _in_tmp(lambda t, s: rewrite_store(s, os.path.join(s.url, "x"))), ValueError,
     "inside"),
    ("rewrite block_rows 0", _in_tmp(lambda t, s: rewrite_store(s, t / "o.zarr", block_rows=0)), ValueError,
     "block_rows"),
    ("rewrite seed -2", _in_tmp(lambda t, s: rewrite_store(s, t / "o.zarr", seed=-2)), ValueError, "seed"),
    ("rewrite onto user folder", _in_tmp(lambda t, s: rewrite_store(s, _user_folder(t))), FileExistsError,
     "not a daskdca"),
    # open_store
    ("open missing", lambda t: open_store(t / "nope.zarr"), StoreError, "No daskdca store"),
    ("open a file", lambda t: open_store(_a_file(t)), StoreError, "file.txt"),
    ("open user folder", lambda t: open_store(_user_folder(t)), StoreError, "No daskdca store"),
    ("open damaged zarr.json", _in_tmp(_damaged_json), StoreError, "damaged"),
    ("open damaged array json", _in_tmp(lambda t, s: _damaged_json(t, s, "data/zarr.json")), StoreError,
     "data"),
    ("open format 1", _in_tmp(_format_1), StoreError, "format"),
    ("open url None", lambda t: open_store(None), TypeError, "url"),
    ("open url empty", lambda t: open_store(""), ValueError, "url"),
    ("open storage_options list", _in_tmp(lambda t, s: open_store(s.url, storage_options=[1])), TypeError,
     "storage_options"),
    # read_block
    ("read block -1", _in_tmp(lambda t, s: s.read_block(-1)), IndexError, "out of range"),
    ("read block n_blocks", _in_tmp(lambda t, s: s.read_block(s.n_blocks)), IndexError, "out of range"),
    ("read block 1.5", _in_tmp(lambda t, s: s.read_block(1.5)), TypeError, "int"),
    ("read block True", _in_tmp(lambda t, s: s.read_block(True)), TypeError, "int"),
    ("read verify yes", _in_tmp(lambda t, s: s.read_block(0, verify="yes")), ValueError, "verify"),
    # make_classification / make_regression
    ("make existing store", _in_tmp(lambda t, s: datasets.make_classification(s.url, 10, 10)), FileExistsError,
     "overwrite"),
    ("make user folder", lambda t: datasets.make_regression(_user_folder(t), 10, 10), FileExistsError,
     "not a daskdca"),
    ("make block_rows 0", lambda t: datasets.make_classification(t / "o.zarr", 10, 10, block_rows=0), ValueError,
     "block_rows"),
    ("make n_rows 0", lambda t: datasets.make_classification(t / "o.zarr", 0, 10), ValueError, "n_rows"),
    ("make overwrite str", lambda t: datasets.make_classification(t / "o.zarr", 10, 10, overwrite="y"), TypeError,
     "overwrite"),
]


@pytest.mark.parametrize("run, exc, word", [case[1:] for case in BAD_INPUT], ids=[case[0] for case in BAD_INPUT])
def test_bad_input_is_refused_with_a_clear_message(tmp_path, run, exc, word):
    with pytest.raises(exc) as info:
        run(tmp_path)
    assert word in str(info.value)
    # nothing half-written is left: no store at the output, no temporary folders
    assert not (tmp_path / "o.zarr").exists()
    assert _leftovers(tmp_path) == []


def test_the_table_is_big_enough():
    assert len(BAD_INPUT) >= 60


def test_handle_is_a_csrstore(tmp_path):
    assert isinstance(_store(tmp_path / "s.zarr"), CSRStore)
