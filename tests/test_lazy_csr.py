"""Lazy sparse dask arrays (AnnData's ``read_elem_lazy``: row chunks of scipy CSR) are written and fitted
one chunk at a time and never densified.

The chunks here are scipy (or pydata sparse) classes whose ``toarray``,
``todense`` and ``__array__`` raise, so any densifying of a chunk fails the
test; a weak set of live chunks checks that only one is in memory at a time.
"""

import gc
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

import daskdca
from daskdca.store import write_store

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

N, D, ROWS = 600, 40, 150  # four row chunks


class _NoDense:
    """Mixin: densifying this chunk raises (and the live instances are counted)."""

    __hash__ = object.__hash__  # by identity, for the weak set of live chunks

    def toarray(self, *args, **kwargs):
        raise AssertionError(f"a {type(self).__name__} chunk was densified (toarray)")

    def todense(self, *args, **kwargs):
        raise AssertionError(f"a {type(self).__name__} chunk was densified (todense)")

    def __array__(self, *args, **kwargs):
        raise AssertionError(f"a {type(self).__name__} chunk was densified (__array__)")


class NoDenseCSR(_NoDense, sp.csr_matrix):
    pass


class NoDenseCSC(_NoDense, sp.csc_matrix):
    pass


class NoDenseCOO(_NoDense, sp.coo_matrix):
    pass


class NoDenseCSRArray(_NoDense, sp.csr_array):
    pass


def _pydata(kind):
    sparse = pytest.importorskip("sparse")

    class NoDensePydata(_NoDense, getattr(sparse, kind)):
        pass

    def make(block):
        converted = getattr(sparse, kind).from_scipy_sparse(block)
        converted.__class__ = NoDensePydata
        return converted

    return make, sparse.COO.from_numpy(np.zeros((0, 0)))


def _scipy(cls):
    return (lambda block: cls(block)), sp.csr_matrix((0, 0))


CHUNK_TYPES = {
    "csr": lambda: _scipy(NoDenseCSR),
    "csc": lambda: _scipy(NoDenseCSC),
    "coo": lambda: _scipy(NoDenseCOO),
    "csr_array": lambda: _scipy(NoDenseCSRArray),
    "pydata_coo": lambda: _pydata("COO"),
    "pydata_gcxs": lambda: _pydata("GCXS"),
}


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(N, D, density=0.1, format="csr", random_state=seed, data_rvs=rng.standard_normal)
    y = np.where(X @ rng.standard_normal(D) + 0.3 * rng.standard_normal(N) > 0, 1.0, -1.0)
    return X, y


class _Alive:
    """Live chunk objects, and the most that were alive when a new one was made."""

    def __init__(self):
        self.objects = weakref.WeakSet()
        self.most = 0
        self.made = 0

    def track(self, make):
        def build(block):
            self.most = max(self.most, len(self.objects))
            chunk = make(block)
            self.objects.add(chunk)
            self.made += 1
            return chunk
        return build


def _lazy(X, make, meta, rows=ROWS):
    """What ``read_elem_lazy`` builds: row chunks made by tasks, one column chunk, a sparse meta."""
    parts = [da.from_delayed(dask.delayed(make)(X[i:i + rows]), shape=(min(rows, X.shape[0] - i), X.shape[1]),
                             dtype=X.dtype, meta=meta) for i in range(0, X.shape[0], rows)]
    return da.concatenate(parts, axis=0)


def _arrays(store):
    """Every stored array and the block checksums, to compare stores bit for bit."""
    out = {name: np.asarray(store.group[name][:]) for name in ("data", "indices", "indptr", "y", "row_sqnorm",
                                                                "column_nnz")}
    return out, list(store.attrs["block_checksums"])


def _assert_same_store(a, b):
    arrays_a, checks_a = _arrays(a)
    arrays_b, checks_b = _arrays(b)
    for name in arrays_a:
        assert arrays_a[name].dtype == arrays_b[name].dtype, name
        np.testing.assert_array_equal(arrays_a[name], arrays_b[name], err_msg=name)
    assert checks_a == checks_b
    assert (a.n, a.d, a.nnz) == (b.n, b.d, b.nnz)


# the shuffle runs on the staged store, after the chunks were converted: one chunk type is enough for it
@pytest.mark.parametrize("kind, shuffle", [(kind, False) for kind in CHUNK_TYPES] + [("csr", True)])
def test_write_store_streams_sparse_chunks_without_densifying(tmp_path, kind, shuffle):
    X, y = _data()
    make, meta = CHUNK_TYPES[kind]()
    alive = _Alive()
    Xd = _lazy(X, alive.track(make), meta)
    with dask.config.set(scheduler="sync"):
        store = write_store(tmp_path / "lazy.zarr", Xd, y, block_rows=200, shuffle=shuffle, seed=5)
    assert alive.made == N // ROWS  # each chunk computed once
    assert alive.most <= 1, f"{alive.most} chunks were alive when another was made: not streamed"
    reference = write_store(tmp_path / "csr.zarr", X, y, block_rows=200, shuffle=shuffle, seed=5)
    _assert_same_store(store, reference)  # the same bits as from the scipy CSR matrix
    Xs, ys = store.read_all()
    order = store.row_permutation if shuffle else np.arange(N)
    assert (Xs != X[order]).nnz == 0
    np.testing.assert_array_equal(ys, y[order])


def test_dask_labels_are_computed_with_their_row_chunk(tmp_path):
    X, y = _data(1)
    make, meta = CHUNK_TYPES["csr"]()
    yd = da.from_array(y, chunks=97)  # chunked unlike X: rechunked to X's rows
    store = write_store(tmp_path / "s.zarr", _lazy(X, make, meta), yd, block_rows=128, shuffle=False)
    _assert_same_store(store, write_store(tmp_path / "r.zarr", X, y, block_rows=128, shuffle=False))


def test_anndata_read_elem_lazy(tmp_path):
    anndata = pytest.importorskip("anndata")
    from anndata.experimental import read_elem_lazy
    zarr = pytest.importorskip("zarr")

    X, y = _data(2)
    group = zarr.open_group(tmp_path / "adata.zarr", mode="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anndata's experimental-API warnings
        anndata.io.write_elem(group, "X", X.astype(np.float32))
        lazy = read_elem_lazy(group["X"], chunks=(ROWS, -1))
    assert sp.issparse(lazy._meta) and lazy.numblocks == (N // ROWS, 1)
    store = write_store(tmp_path / "s.zarr", lazy, y, block_rows=100, shuffle=False)
    reference = write_store(tmp_path / "r.zarr", X.astype(np.float32), y, block_rows=100, shuffle=False)
    _assert_same_store(store, reference)
    with pytest.raises(ValueError, match=r"X\.rechunk\(\{1: -1\}\)"):
        write_store(tmp_path / "c.zarr", lazy.rechunk({1: 10}), y, shuffle=False)


class _Opaque:
    """A chunk type daskdca does not know (shape and dtype only)."""

    def __init__(self, shape):
        self.shape, self.dtype, self.ndim = shape, np.dtype(np.float64), 2

    def __getitem__(self, key):  # dask keeps such a meta (as it keeps e.g. a CuPy one)
        return _Opaque((0, 0))


def test_unsupported_input_is_refused_with_the_fix(tmp_path):
    X, y = _data(3)
    make, meta = CHUNK_TYPES["csr"]()
    lazy = _lazy(X, make, meta)
    out = tmp_path / "o.zarr"
    with pytest.raises(ValueError, match=r"4 column chunks.*X\.rechunk\(\{1: -1\}\)"):
        write_store(out, lazy.rechunk({1: 10}), y, shuffle=False)
    with pytest.raises(ValueError, match=f"X has {N} rows but y has {N - 1} entries"):
        write_store(out, lazy, y[:-1], shuffle=False)
    with pytest.raises(ValueError, match=f"X has {N} rows but y has {N + 1} entries"):
        write_store(out, lazy, da.from_array(np.ones(N + 1), chunks=100), shuffle=False)
    calls = []
    opaque_meta = da.from_delayed(dask.delayed(lambda: calls.append(1) or _Opaque((N, D)))(), shape=(N, D),
                                  dtype=np.float64, meta=_Opaque((0, 0)))
    assert isinstance(opaque_meta._meta, _Opaque)
    with pytest.raises(TypeError, match=r"X's chunks \(its meta\) is a test_lazy_csr\._Opaque.*map_blocks"):
        write_store(out, opaque_meta, y, shuffle=False)
    assert calls == []  # refused from the meta, before any chunk was computed
    opaque_chunks = _lazy(X, lambda b: _Opaque(b.shape), np.empty((0, 0)))
    with pytest.raises(TypeError, match=r"chunk 0 of X is a test_lazy_csr\._Opaque"):
        write_store(out, opaque_chunks, y, shuffle=False)
    wrong = da.concatenate([da.from_delayed(dask.delayed(make)(X[:ROWS - 1]), shape=(ROWS, D), dtype=X.dtype,
                                            meta=meta)] + [_lazy(X[ROWS:], make, meta)], axis=0)
    with pytest.raises(ValueError, match=rf"chunk 0 of X has shape \({ROWS - 1}, {D}\).*declares \({ROWS}, {D}\)"):
        write_store(out, wrong, y, shuffle=False)
    sparse = pytest.importorskip("sparse")
    shifted = _lazy(X, lambda b: sparse.COO.from_scipy_sparse(b) + 1.0, sparse.COO.from_numpy(np.zeros((0, 0))))
    with pytest.raises(ValueError, match=r"fill_value=.*1\.0"):
        write_store(out, shifted, y, shuffle=False)
    complex_chunks = _lazy(X.astype(np.complex128), make, meta)
    with pytest.raises(TypeError, match="complex"):
        write_store(out, complex_chunks, y, shuffle=False)
    assert not out.exists()  # nothing was published by a refused write


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def test_fit_on_a_lazy_csr_array_matches_the_csr_fit(client, tmp_path):
    X, y = _data(4)
    make, meta = CHUNK_TYPES["csr"]()
    kw = dict(loss="logistic", lam=1e-1, solver="cocoa+", tol=1e-8, random_state=3, client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # unshuffled partitions' label fractions
        lazy = daskdca.fit(_lazy(X, make, meta), da.from_array(y, chunks=ROWS), **kw)
        store = write_store(tmp_path / "s.zarr", X, y, block_rows=ROWS, shuffle=False, compression="none")
        from_store = daskdca.fit(store, **kw)
    # the staging store of the lazy array holds the CSR matrix's bits in the same blocks: the same fit
    np.testing.assert_allclose(lazy.coef_, from_store.coef_, rtol=0, atol=1e-12)
    assert lazy.n_rounds_ == from_store.n_rounds_ and lazy.converged_
    np.testing.assert_array_equal(lazy.classes_, [-1.0, 1.0])
    in_memory = daskdca.fit(X, y, loss="logistic", lam=1e-1, tol=1e-10)  # other partitions: same optimum
    assert lazy.primal_ == pytest.approx(in_memory.primal_, rel=1e-7)


def test_memory_is_one_chunk_not_the_dense_array(tmp_path):
    """200k x 500k in 10 row chunks of 20k rows (dense: 80 GB a chunk, sparse: 11.5 MiB).

    Written as ``daskdca.fit`` stages a dask array (a block per chunk,
    unshuffled, uncompressed), the traced peak is a small multiple of one
    chunk's CSR (measured 37 MiB: the chunk being made, its conversion and
    zarr's 8 MiB write buffers), not the 115 MiB of all ten chunks.
    """
    n, d, chunks, per_row = 200_000, 500_000, 10, 50
    rows = n // chunks

    def make(k):
        rng = np.random.default_rng(k)
        indices = np.sort(rng.integers(0, d, size=(rows, per_row)), axis=1).ravel().astype(np.int32)
        indptr = np.arange(0, rows * per_row + 1, per_row, dtype=np.int32)
        return NoDenseCSR((rng.standard_normal(rows * per_row), indices, indptr), shape=(rows, d))

    chunk_bytes = rows * per_row * (8 + 4) + (rows + 1) * 4
    X = da.concatenate([da.from_delayed(dask.delayed(make)(k), shape=(rows, d), dtype=np.float64,
                                        meta=sp.csr_matrix((0, 0))) for k in range(chunks)], axis=0)
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    X0, y0 = _data()
    write_store(tmp_path / "warm.zarr", _lazy(X0, *CHUNK_TYPES["csr"]()), y0, shuffle=False)  # first-use allocations
    gc.collect()
    tracemalloc.start()
    try:
        with dask.config.set(scheduler="sync"):
            store = write_store(tmp_path / "big.zarr", X, y, block_rows=rows, shuffle=False, compression="none")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (store.n, store.d, store.n_blocks) == (n, d, chunks)
    assert n * per_row * 0.99 < store.nnz <= n * per_row  # a few duplicate draws summed
    np.testing.assert_array_equal(store.read_block(7)[1], y[7 * rows:8 * rows])
    assert peak < 4 * chunk_bytes, f"peak {peak / 2**20:.1f} MiB for chunks of {chunk_bytes / 2**20:.1f} MiB"


@pytest.mark.parametrize("kind", ["csr", "pydata_coo"])
def test_estimators_fit_and_predict_on_a_lazy_sparse_array_without_densifying(kind):
    """``SDCAClassifier.fit`` computes the lazy array into memory (sparse), and predictions stay lazy per chunk."""
    from daskdca import SDCAClassifier

    X, y = _data(seed=3)
    make, meta = CHUNK_TYPES[kind]()
    lazy = _lazy(X, make, meta)
    clf = SDCAClassifier("logistic", C=1.0, tol=1e-10).fit(lazy, y)
    direct = SDCAClassifier("logistic", C=1.0, tol=1e-10).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, direct.coef_)
    scores = clf.decision_function(_lazy(X, make, meta))
    assert hasattr(scores, "compute")  # a lazy dask array, one block per chunk
    np.testing.assert_allclose(scores.compute(), direct.decision_function(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(_lazy(X, make, meta)).compute(), direct.predict(X))


def test_the_function_api_model_predicts_on_a_lazy_sparse_array():
    X, y = _data(seed=4)
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-8)
    make, meta = CHUNK_TYPES["csr"]()
    scores = model.decision_function(_lazy(X, make, meta))
    assert hasattr(scores, "compute")
    np.testing.assert_allclose(scores.compute(), model.decision_function(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.predict(_lazy(X, make, meta)).compute(), model.predict(X))
    with pytest.raises(ValueError, match=r"X.rechunk\(\{1: -1\}\)"):
        model.decision_function(da.from_array(X.toarray(), chunks=(100, 20)))
