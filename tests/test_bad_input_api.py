"""Bad input at the API entry points: a clear error, never a silent wrong result.

One table, ``CASES``: (entry point, input, exception type, a word of the
message).  The entry points are ``daskdca.fit`` in memory (``fit``),
``daskdca.fit`` with a client (``fit_client``, one module-scoped
2-worker LocalCluster), ``SDCAClassifier().fit`` (``clf``) and
``SDCARegressor().fit`` (``reg``).  Every case asserts the exception type and
a word of the message; a few also check what must survive (a user's file in
a refused checkpoint folder).

    python -m pytest tests/test_bad_input_api.py -q
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca.store import StoreError

from conftest import load_dataset

N, D = 40, 5


def _data():
    rng = np.random.default_rng(16)
    X = rng.standard_normal((N, D))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(N) > 0, 1, -1)
    t = X @ np.arange(1.0, D + 1) + 0.1 * rng.standard_normal(N)
    return X, y, t


X0, Y0, T0 = _data()


def with_value(a, index, value):
    a = np.array(a, dtype=np.result_type(a, type(value)))
    a[index] = value
    return a


def _dask_X(chunks=10):
    da = pytest.importorskip("dask.array")
    return da.from_array(X0, chunks=(chunks, D))


def _dask_y(values, chunks=10):
    da = pytest.importorskip("dask.array")
    return da.from_array(np.asarray(values), chunks=chunks)


def _object_labels():
    y = Y0.astype(object)
    y[3] = "a"
    return y


def _object_labels_with_nan():
    y = np.where(Y0 > 0, 1.0, 0.0).astype(object)
    y[::2] = np.nan  # two "classes", 1.0 and nan, if nan were taken as a label
    y[1::4] = 1.0
    return y


def _object_targets_with_none():
    t = T0.astype(object)
    t[7] = None
    return t


def _ragged():
    return [[1.0, 2.0], [3.0]] * (N // 2)


def _user_folder(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "paper.tex").write_text("precious")
    return folder


def _keeps_user_file(tmp_path):
    assert (tmp_path / "mine" / "paper.tex").read_text() == "precious"
    assert sorted(os.listdir(tmp_path / "mine")) == ["paper.tex"]


def _fit_checkpoint(tmp_path, client):
    """A short checkpointed fit to resume from."""
    ckpt = tmp_path / "ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 3 rounds on purpose
        daskdca.fit(X0, Y0, loss="squared_hinge", lam=1e-2, tol=0.0, max_rounds=3, client=client,
                    checkpoint=str(ckpt), random_state=0)
    return str(ckpt)


# (id, entry point, build(ctx) -> (args, kwargs), exception, word of the message[, check after])
# ctx: {"tmp_path": ..., "client": ...}.  For clf / reg, kwargs are the estimator's parameters and
# args are (X, y).
def c(id_, entry, build, exc, word, after=None):
    return pytest.param(entry, build, exc, word, after, id=f"{entry}-{id_}")


XY = lambda **kw: lambda ctx: ((X0, Y0), kw)  # noqa: E731

CASES = [
    # --- daskdca.fit in memory: the arrays
    c("nan-X", "fit", lambda ctx: ((with_value(X0, (3, 1), np.nan), Y0), {}), ValueError, "non-finite"),
    c("inf-X", "fit", lambda ctx: ((with_value(X0, (5, 2), np.inf), Y0), {}), ValueError, "non-finite"),
    c("dual_init-short", "fit", XY(dual_init=np.zeros(len(Y0) - 1)), ValueError, "shape"),
    c("dual_init-nan", "fit", XY(dual_init=with_value(np.zeros(len(Y0)), 2, np.nan)), ValueError, "row 2"),
    c("dual_init-outside-box", "fit", XY(dual_init=np.full(len(Y0), 5.0)), ValueError, "infeasible"),
    c("dual_init-solver", "fit", XY(dual_init=np.zeros(len(Y0)), solver="spdc"), ValueError, "dual_init"),
    c("-inf-sparse-X", "fit", lambda ctx: ((sp.csr_matrix(with_value(X0, (5, 2), -np.inf)), Y0), {}),
      ValueError, "non-finite"),
    c("nan-y", "fit", lambda ctx: ((X0, with_value(Y0, 4, np.nan)), {}), ValueError, "non-finite"),
    c("inf-target", "fit", lambda ctx: ((X0, with_value(T0, 4, np.inf)), {"loss": "squared"}),
      ValueError, "non-finite"),
    c("three-classes-serial-only-solver", "fit", lambda ctx: ((X0, with_value(Y0, 0, 7)), {"solver": "pegasos"}),
      ValueError, "one-vs-rest"),
    c("one-class", "fit", lambda ctx: ((X0, np.ones(N)), {}), ValueError, "at least two classes"),
    c("real-targets-with-hinge", "fit", lambda ctx: ((X0, T0), {}), ValueError, "regression targets"),
    c("class_weight-unknown-label", "fit", XY(class_weight={5: 2.0}), ValueError, "not in y"),
    c("class_weight-negative", "fit", XY(class_weight={1: -2.0}), ValueError, ">= 0"),
    c("class_weight-string", "fit", XY(class_weight="even"), ValueError, "balanced"),
    c("class_weight-regression", "fit", lambda ctx: ((X0, T0), {"loss": "squared", "class_weight": "balanced"}),
      ValueError, "class labels"),
    c("dual_init-multi-class-shape", "fit", lambda ctx: ((X0, with_value(Y0, 0, 7)), {"dual_init": np.zeros(N)}),
      ValueError, "per one-vs-rest problem"),
    c("y-shorter", "fit", lambda ctx: ((X0, Y0[:-1]), {}), ValueError, "rows"),
    c("y-longer", "fit", lambda ctx: ((X0, np.r_[Y0, 1]), {}), ValueError, "rows"),
    c("y-2d", "fit", lambda ctx: ((X0, np.c_[Y0, Y0]), {}), ValueError, "1-D"),
    c("complex-y", "fit", lambda ctx: ((X0, T0 + 1j), {"loss": "squared"}), TypeError, "complex"),
    c("y-missing", "fit", lambda ctx: ((X0, None), {}), ValueError, "y is required"),
    c("complex-X", "fit", lambda ctx: ((X0 + 1j, Y0), {}), TypeError, "complex"),
    c("complex-sparse-X", "fit", lambda ctx: ((sp.csr_matrix(X0 + 1j), Y0), {}), TypeError, "complex"),
    c("string-X", "fit", lambda ctx: ((X0.astype(str), Y0), {}), TypeError, "dtype"),
    c("ragged-X", "fit", lambda ctx: ((_ragged(), Y0), {}), ValueError, "X"),
    c("dict-X", "fit", lambda ctx: (({"a": 1}, Y0), {}), TypeError, "X must be"),
    c("empty-X", "fit", lambda ctx: ((np.empty((0, D)), np.empty(0)), {}), ValueError, "empty"),
    c("no-features", "fit", lambda ctx: ((np.empty((N, 0)), Y0), {}), ValueError, "empty"),
    c("3d-X", "fit", lambda ctx: ((X0.reshape(N, D, 1), Y0), {}), ValueError, "2-D"),
    c("1d-X", "fit", lambda ctx: ((X0[:, 0], Y0), {}), ValueError, "2-D"),
    c("object-y-mixed", "fit", lambda ctx: ((X0, _object_labels()), {}), TypeError, "object"),
    c("object-y-nan", "fit", lambda ctx: ((X0, _object_labels_with_nan()), {}), ValueError, "non-finite"),
    c("object-target-none", "fit", lambda ctx: ((X0, _object_targets_with_none()), {"loss": "squared"}),
      ValueError, "non-finite"),
    c("string-targets", "fit", lambda ctx: ((X0, Y0.astype(str)), {"loss": "squared"}), TypeError, "numeric"),
    # --- daskdca.fit in memory: the parameters
    c("lam-0", "fit", XY(lam=0.0), ValueError, "lam"),
    c("lam-negative", "fit", XY(lam=-1e-3), ValueError, "lam"),
    c("lam-nan", "fit", XY(lam=float("nan")), ValueError, "lam"),
    c("lam-inf", "fit", XY(lam=float("inf")), ValueError, "lam"),
    c("lam-str", "fit", XY(lam="1e-3"), ValueError, "lam"),
    c("lam-bool", "fit", XY(lam=True), ValueError, "lam"),
    c("tol-negative", "fit", XY(tol=-1e-6), ValueError, "tol"),
    c("tol-nan", "fit", XY(tol=float("nan")), ValueError, "tol"),
    c("max_rounds-0", "fit", XY(max_rounds=0), ValueError, "max_rounds"),
    c("max_rounds-1.5", "fit", XY(max_rounds=1.5), ValueError, "max_rounds"),
    c("n_partitions-0", "fit", XY(solver="cocoa+", n_partitions=0), ValueError, "n_partitions"),
    c("n_partitions-1.5", "fit", XY(solver="cocoa+", n_partitions=1.5), ValueError, "n_partitions"),
    c("n_partitions-over-n", "fit", XY(solver="cocoa+", n_partitions=N + 1), ValueError, "n_partitions"),
    c("n_partitions-sdca", "fit", XY(solver="sdca", n_partitions=2), ValueError, "partition"),
    c("in_memory-no", "fit", XY(in_memory="no"), ValueError, "in_memory"),
    c("in_memory-1", "fit", XY(in_memory=1), ValueError, "in_memory"),
    c("solver-unknown", "fit", XY(solver="sgd"), ValueError, "solver"),
    c("solver-int", "fit", XY(solver=3), ValueError, "solver"),
    c("loss-unknown", "fit", XY(loss="hingee"), ValueError, "loss"),
    c("loss-none", "fit", XY(loss=None), ValueError, "loss"),
    c("batch_size-0", "fit", XY(solver="minibatch_sdca", batch_size=0), ValueError, "batch_size"),
    c("batch_size-negative", "fit", XY(solver="minibatch_sdca", batch_size=-4), ValueError, "batch_size"),
    c("batch_size-over-n", "fit", XY(solver="minibatch_sdca", batch_size=N + 1), ValueError, "batch_size"),
    c("batch_size-1.5", "fit", XY(solver="minibatch_sdca", batch_size=1.5), ValueError, "batch_size"),
    c("batch_size-sdca", "fit", XY(solver="sdca", batch_size=8), ValueError, "batch_size"),
    c("local_iters-0", "fit", XY(solver="cocoa+", local_iters=0), ValueError, "local_iters"),
    c("local_iters-negative", "fit", XY(solver="cocoa+", local_iters=-1.0), ValueError, "local_iters"),
    c("local_iters-nan", "fit", XY(solver="cocoa+", local_iters=float("nan")), ValueError, "local_iters"),
    c("local_iters-minibatch", "fit", XY(solver="minibatch_sdca", local_iters=2.0), ValueError, "local_iters"),
    c("random_state-negative", "fit", XY(random_state=-1), ValueError, "random_state"),
    c("random_state-float", "fit", XY(random_state=1.5), TypeError, "random_state"),
    c("random_state-str", "fit", XY(random_state="0"), TypeError, "random_state"),
    c("callback-not-callable", "fit", XY(callback=3), TypeError, "callable"),
    c("verbose-negative", "fit", XY(verbose=-1), ValueError, "verbose"),
    c("checkpoint-in-memory", "fit", XY(checkpoint="/tmp/x"), ValueError, "cluster"),
    c("resume-in-memory", "fit", XY(resume=True), ValueError, "cluster"),
    c("storage_options-in-memory", "fit", XY(storage_options={}), ValueError, "cluster"),
    c("squared-loss-sdca-str-y", "fit", lambda ctx: ((X0, np.where(Y0 > 0, "b", "a")), {"loss": "squared"}),
      TypeError, "numeric"),
    # --- daskdca.fit on a cluster
    c("dask-y-longer", "fit_client", lambda ctx: ((_dask_X(), _dask_y(np.r_[Y0, 1, -1])), {}),
      ValueError, "rows"),
    c("dask-y-shorter", "fit_client", lambda ctx: ((_dask_X(), _dask_y(Y0[:-3])), {}), ValueError, "rows"),
    c("numpy-y-longer-dask-X", "fit_client", lambda ctx: ((_dask_X(), np.r_[Y0, 1]), {}), ValueError, "rows"),
    c("dask-n_partitions-over-chunks", "fit_client", lambda ctx: ((_dask_X(), _dask_y(Y0)), {"n_partitions": 1000}),
      ValueError, "n_partitions"),
    c("dask-nan-X", "fit_client",
      lambda ctx: ((_dask_y(with_value(X0, (2, 2), np.nan)).rechunk((10, D)), _dask_y(Y0)), {}),
      ValueError, "non-finite"),
    c("client-nan-X", "fit_client", lambda ctx: ((with_value(X0, (2, 2), np.nan), Y0), {}),
      ValueError, "non-finite"),
    c("client-n_partitions-over-n", "fit_client", XY(n_partitions=N + 1), ValueError, "n_partitions"),
    c("client-in_memory-no", "fit_client", XY(in_memory="no"), ValueError, "in_memory"),
    c("client-checkpoint_every-0", "fit_client", XY(checkpoint_every=0), ValueError, "checkpoint_every"),
    c("checkpoint-user-folder", "fit_client",
      lambda ctx: ((X0, Y0), {"checkpoint": str(_user_folder(ctx["tmp_path"]))}),
      ValueError, "checkpoint", _keeps_user_file),
    c("resume-without-checkpoint", "fit_client", XY(resume=True), ValueError, "checkpoint"),
    c("resume-other-lam", "fit_client",
      lambda ctx: ((X0, Y0), {"loss": "squared_hinge", "lam": 1e-3, "resume": True, "random_state": 0,
                              "checkpoint": _fit_checkpoint(ctx["tmp_path"], ctx["client"])}),
      ValueError, "lam"),
    c("store-with-y", "fit_client", lambda ctx: ((str(ctx["tmp_path"] / "none.zarr"), Y0), {}),
      ValueError, "y must be None"),
    c("store-missing", "fit_client", lambda ctx: ((str(ctx["tmp_path"] / "none.zarr"),), {}),
      StoreError, "none.zarr"),
    # --- SDCAClassifier().fit
    c("nan-X", "clf", lambda ctx: ((with_value(X0, (1, 1), np.nan), Y0), {}), ValueError, "NaN"),
    c("inf-X", "clf", lambda ctx: ((with_value(X0, (1, 1), np.inf), Y0), {}), ValueError, "infinity"),
    c("nan-y", "clf", lambda ctx: ((X0, with_value(Y0, 1, np.nan)), {}), ValueError, "NaN"),
    c("one-class", "clf", lambda ctx: ((X0, np.ones(N)), {}), ValueError, "class"),
    c("y-shorter", "clf", lambda ctx: ((X0, Y0[:-2]), {}), ValueError, "inconsistent"),
    c("complex-X", "clf", lambda ctx: ((X0 + 1j, Y0), {}), ValueError, "omplex"),
    c("empty-X", "clf", lambda ctx: ((np.empty((0, D)), np.empty(0)), {}), ValueError, "0 sample"),
    c("3d-X", "clf", lambda ctx: ((X0.reshape(N, D, 1), Y0), {}), ValueError, "dim"),
    c("real-targets", "clf", lambda ctx: ((X0, T0), {}), ValueError, "continuous"),
    c("object-y-mixed", "clf", lambda ctx: ((X0, _object_labels()), {}), (TypeError, ValueError), "y"),
    c("C-0", "clf", XY(C=0.0), ValueError, "C"),
    c("C-negative", "clf", XY(C=-1.0), ValueError, "C"),
    c("C-str", "clf", XY(C="1"), (TypeError, ValueError), "C"),
    c("tol-negative", "clf", XY(tol=-1.0), ValueError, "tol"),
    c("max_iter-0", "clf", XY(max_iter=0), ValueError, "max_iter"),
    c("max_iter-1.5", "clf", XY(max_iter=1.5), (TypeError, ValueError), "max_iter"),
    c("loss-unknown", "clf", XY(loss="foo"), ValueError, "loss"),
    c("solver-unknown", "clf", XY(solver="foo"), ValueError, "solver"),
    c("random_state-negative", "clf", XY(random_state=-1), ValueError, "random_state"),
    c("n_partitions-0", "clf", XY(n_partitions=0), ValueError, "n_partitions"),
    c("intercept_scaling-0", "clf", XY(fit_intercept=True, intercept_scaling=0.0), ValueError, "intercept_scaling"),
    # --- SDCARegressor().fit
    c("nan-X", "reg", lambda ctx: ((with_value(X0, (1, 1), np.nan), T0), {}), ValueError, "NaN"),
    c("nan-y", "reg", lambda ctx: ((X0, with_value(T0, 1, np.nan)), {}), ValueError, "NaN"),
    c("inf-y", "reg", lambda ctx: ((X0, with_value(T0, 1, np.inf)), {}), ValueError, "infinity"),
    c("y-longer", "reg", lambda ctx: ((X0, np.r_[T0, 1.0]), {}), ValueError, "inconsistent"),
    c("string-y", "reg", lambda ctx: ((X0, T0.astype(str).astype(object) + "x"), {}), ValueError, "float"),
    c("complex-X", "reg", lambda ctx: ((X0 + 1j, T0), {}), ValueError, "omplex"),
    c("C-0", "reg", lambda ctx: ((X0, T0), {"C": 0.0}), ValueError, "C"),
    c("tol-nan", "reg", lambda ctx: ((X0, T0), {"tol": float("nan")}), ValueError, "tol"),
    c("loss-hinge", "reg", lambda ctx: ((X0, T0), {"loss": "hinge"}), ValueError, "loss"),
    c("max_iter-0", "reg", lambda ctx: ((X0, T0), {"max_iter": 0}), ValueError, "max_iter"),
]


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def _run(entry, args, kwargs, request):
    if entry == "fit":
        return daskdca.fit(*args, **kwargs)
    if entry == "fit_client":
        return daskdca.fit(*args, client=request.getfixturevalue("client"), **kwargs)
    estimator = daskdca.SDCAClassifier if entry == "clf" else daskdca.SDCARegressor
    return estimator(**kwargs).fit(*args)


def test_bad_input_table_size():
    assert len(CASES) >= 50
    assert {p.values[0] for p in CASES} == {"fit", "fit_client", "clf", "reg"}


@pytest.mark.parametrize("entry, build, exc, word, after", CASES)
def test_bad_input(entry, build, exc, word, after, tmp_path, request):
    ctx = {"tmp_path": tmp_path,
           "client": request.getfixturevalue("client") if entry == "fit_client" else None}
    args, kwargs = build(ctx)
    with pytest.raises(exc) as info:
        _run(entry, args, kwargs, request)
    assert word.lower() in str(info.value).lower(), f"{word!r} not in: {info.value}"
    # a message for a person, not a library's internals: it says what to change
    assert len(str(info.value)) >= 15, str(info.value)
    if after is not None:
        after(tmp_path)


def test_one_row_to_predict_is_offered_reshape_1_minus_1():
    """A 1-D X at prediction was told ``X.reshape(-1, 1)`` alone, which makes a row's values samples of one
    feature; scikit-learn offers both."""
    X, y = load_dataset("heart")
    model = daskdca.fit(X, y, loss="logistic", lam=1e-2)
    with pytest.raises(ValueError, match=r"X\.reshape\(1, -1\) for a single sample"):
        model.predict(X.toarray()[0])


def test_the_default_budget_is_named_as_such():
    """A fit given no budget that ran out of it said "reached max_rounds=250" (its 1000 default passes in rounds of
    4 on small data), a budget the user never gave."""
    X, y = load_dataset("heart")
    with pytest.warns(ConvergenceWarning, match=r"daskdca\.fit reached max_rounds=\d+ \(the default budget of 1000 "
                                                r"passes\)"):
        daskdca.fit(X, y, loss="hinge", lam=1e-9, tol=1e-15, solver="sdca")


def test_local_iters_on_a_solver_without_local_passes_names_those_with_them():
    """It said "(a round is one mini-batch)" to a Newton fit, whose round is a pass."""
    X, y = load_dataset("heart")
    with pytest.raises(ValueError, match=r"local_iters applies to solver=\[.*'cocoa\+'.*\] only \(passes over a "
                                         r"partition a round\), got solver='newton' with local_iters=3"):
        daskdca.fit(X, y, loss="logistic", solver="newton", local_iters=3)


def test_a_checkpoint_path_where_no_folder_can_be_made_is_refused_first(tmp_path):
    """A checkpoint under a file, an empty one, bytes or a number failed in ``os.makedirs`` with a raw
    NotADirectoryError, FileNotFoundError or TypeError, after the data had been staged on the workers; each is
    refused before any work, naming ``checkpoint=``."""
    X, y = load_dataset("heart")
    store = tmp_path / "heart.zarr"
    daskdca.write_store(str(store), X, y)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    for checkpoint, error, match in ((a_file / "ckpt", ValueError, r"checkpoint=.*notes\.txt.*a file, where no "
                                                                    r"folder can be made"),
                                     ("", ValueError, "checkpoint='' names no folder"),
                                     (b"ckpt", TypeError, "checkpoint must be a folder path or URL"),
                                     (123, TypeError, "checkpoint must be a folder path or URL")):
        with pytest.raises(error, match=match):
            daskdca.fit(str(store), loss="logistic", lam=1e-2, checkpoint=checkpoint)
    assert a_file.read_text() == "mine"
