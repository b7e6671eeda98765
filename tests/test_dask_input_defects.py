"""Dask input at the edges: predictions on a dask DataFrame or array with an empty partition, a closed
``distributed.Client`` given as ``client=``, the row named by a missing-label error on dask input (the row
in X, not in its partition), and the dtype of integer labels on dask input."""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import dask.array as da  # noqa: E402

import daskdca  # noqa: E402
from daskdca.engine.clients import cluster_client  # noqa: E402
from daskdca.store.from_dask import dask_frame_input  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Dask currently has limited support:UserWarning")

COLUMNS = list("abcd")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as local:
        yield local


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def frame():
    """300 rows of four float columns and -1/+1 labels of a noisy linear rule."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.standard_normal((300, 4)), columns=COLUMNS)
    y = np.where(df.a - 0.5 * df.b + 0.3 * rng.standard_normal(300) > 0, 1, -1)
    return df, y


def _same_output(got, expected, method):
    """Labels are equal; scores and probabilities equal to rounding (BLAS sums a dense block of rows in an
    order that may depend on the block's height and memory layout)."""
    if method == "predict":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)


def _with_empty_partition(df):
    """``df`` as a dask DataFrame of 3 partitions whose middle one is empty (what a filter leaves), and the
    rows it keeps."""
    ddf = dd.from_pandas(df.assign(row=np.arange(len(df))), npartitions=3)
    kept = (ddf.row < 100) | (ddf.row >= 200)
    filtered = ddf[kept].drop(columns="row")
    keep = (np.arange(len(df)) < 100) | (np.arange(len(df)) >= 200)
    return filtered, keep


# ----------------------------------------------------------------- predictions on empty partitions


@pytest.mark.parametrize("method", ["predict", "decision_function", "predict_proba"])
def test_estimator_predicts_a_dask_frame_with_an_empty_partition(frame, method):
    """An estimator's prediction on a dask DataFrame whose middle partition is empty gives the in-memory
    predictions of the other rows, and an empty output for the empty partition.  Before, scikit-learn's
    ``check_array`` refused the empty partition at compute ("Found array with 0 sample(s)")."""
    df, y = frame
    filtered, keep = _with_empty_partition(df)
    assert filtered.map_partitions(len).compute().tolist() == [100, 0, 100]
    clf = daskdca.SDCAClassifier(loss="logistic").fit(df, y)
    lazy = getattr(clf, method)(filtered)
    got = lazy.compute()
    expected = getattr(clf, method)(df[keep])
    assert len(got) == 200
    _same_output(np.asarray(got), expected, method)
    parts = lazy.map_partitions(len).compute().tolist()
    assert parts == [100, 0, 100]


@pytest.mark.parametrize("method", ["predict", "decision_function", "predict_proba"])
def test_estimator_predicts_a_dask_array_with_an_empty_chunk(frame, method):
    """An estimator's prediction on a dask array with a 0-row chunk gives the in-memory predictions of the
    other rows.  Before, ``check_array`` refused the empty chunk at compute."""
    df, y = frame
    X = df.to_numpy()
    Xd = da.from_array(X, chunks=((100, 0, 200), (4,)))
    clf = daskdca.SDCAClassifier(loss="logistic").fit(X, y)
    got = getattr(clf, method)(Xd).compute()
    assert len(got) == 300
    _same_output(got, getattr(clf, method)(X), method)


def test_three_class_probabilities_of_a_dask_frame_with_an_empty_partition(frame):
    """The 2-D output of a three-class model (a DataFrame with a column per class) on a dask DataFrame with
    an empty partition matches the in-memory probabilities.  Before, the empty partition was refused."""
    df, _ = frame
    y3 = np.digitize(df.a.to_numpy(), [-0.5, 0.5])
    filtered, keep = _with_empty_partition(df)
    clf = daskdca.SDCAClassifier(loss="logistic").fit(df, y3)
    got = clf.predict_proba(filtered).compute()
    assert list(got.columns) == [0, 1, 2]
    assert got.shape == (200, 3)
    _same_output(got.to_numpy(), clf.predict_proba(df[keep]), "predict_proba")


# ----------------------------------------------------------------- a closed client


def test_a_closed_client_is_refused_before_any_work(cluster, frame):
    """A closed ``distributed.Client`` as ``client=`` is refused with a ValueError that says it is closed and
    what to pass instead, by ``daskdca.fit`` and by an estimator.  Before, the fit went on and failed deep in
    the engine with ``AttributeError: 'NoneType' object has no attribute 'register_worker_plugin'``."""
    df, y = frame
    X = df.to_numpy()
    closed = distributed.Client(cluster, set_as_default=False)
    closed.close()
    assert closed.status == "closed"
    with pytest.raises(ValueError, match="the client is closed; pass an open Client or none"):
        daskdca.fit(X, y, lam=1e-2, client=closed)
    with pytest.raises(ValueError, match="the client is closed"):
        daskdca.SDCAClassifier(client=closed).fit(X, y)
    with pytest.raises(ValueError, match="the client is closed"):
        with cluster_client(closed):
            pass


def test_an_open_client_is_still_used(client):
    """An open client passes the new status check and is the one the fit runs on."""
    with cluster_client(client) as active:
        assert active is client


# ----------------------------------------------------------------- the row of a missing label


def _labelled(n=400):
    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.standard_normal((n, 3)), columns=list("abc"))
    df["label"] = np.where(df.a > 0, "yes", "no").astype(object)
    return df


@pytest.mark.parametrize("missing, npartitions", [(310, 2), (300, 4), (50, 2)])
def test_missing_label_of_a_dask_frame_names_its_row_in_X(client, missing, npartitions):
    """A missing label (None) in a dask DataFrame's label column is named at its row in X.  Before, the row was
    counted within its partition: row 310 of two 200-row partitions was called row 110, row 300 of four
    100-row partitions row 0."""
    df = _labelled()
    df.loc[missing, "label"] = None
    with pytest.raises(ValueError, match=rf"missing label \(None\) at row {missing};"):
        daskdca.fit(dd.from_pandas(df, npartitions=npartitions), "label", loss="logistic", lam=1e-2,
                    client=client)


def test_missing_nullable_label_of_a_dask_frame_names_its_row_in_X(client):
    """A ``pd.NA`` in a nullable ``Int64`` label column (read as None) is named at its row in X, not in its
    partition (row 110 before)."""
    df = _labelled()
    df["label"] = pd.array(np.where(df.a > 0, 1, 0), dtype="Int64")
    df.loc[310, "label"] = pd.NA
    with pytest.raises(ValueError, match=r"missing label \(None\) at row 310;"):
        daskdca.fit(dd.from_pandas(df, npartitions=2), "label", loss="logistic", lam=1e-2, client=client)


def test_missing_label_of_a_dask_series_names_its_row_in_X(client):
    """A missing label in a dask Series ``y`` of strings (not a column of X) is named at its row in X.
    Before, its chunk's distinct labels were checked with no row offset."""
    df = _labelled()
    df.loc[310, "label"] = None
    X = dd.from_pandas(df[["a", "b", "c"]], npartitions=2)
    y = dd.from_pandas(df["label"], npartitions=2)
    with pytest.raises(ValueError, match=r"missing label \(None\) at row 310;"):
        daskdca.fit(X, y, loss="logistic", lam=1e-2, client=client)


# ----------------------------------------------------------------- integer labels


def test_integer_label_column_keeps_its_dtype_in_the_dask_array():
    """The labels of a dask DataFrame (its label column, or a dask Series) are declared with their own dtype
    (int64 here), so what reads them can tell integer labels from float ones.  Before, numeric labels were
    declared float64."""
    df = _labelled(40)
    df["label"] = np.where(df.a > 0, 7, 3)
    X, y, _, _ = dask_frame_input(dd.from_pandas(df, npartitions=2), "label")
    assert y.dtype == np.int64
    assert y.compute().dtype == np.int64
    np.testing.assert_array_equal(y.compute(), df.label.to_numpy())
    _, y, _, _ = dask_frame_input(dd.from_pandas(df[["a", "b", "c"]], npartitions=2),
                                  dd.from_pandas(df["label"], npartitions=2))
    assert y.dtype == np.int64 and y.compute().dtype == np.int64


def test_integer_labels_on_dask_input_give_integer_classes(client):
    """``daskdca.fit`` on a dask array with integer labels {3, 7} gives ``classes_`` of the labels' dtype,
    as a NumPy fit does.  They came back as float64 [3., 7.]."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((200, 4))
    y = np.where(X[:, 0] > 0, 7, 3)
    model = daskdca.fit(da.from_array(X, chunks=(100, 4)), y, loss="logistic", lam=1e-2, client=client)
    assert model.classes_.dtype == y.dtype
    np.testing.assert_array_equal(model.classes_, [3, 7])


# ----------------------------------------------------------------- an asynchronous client, a lost scheduler


def test_an_asynchronous_client_in_its_event_loop_is_refused_not_waited_on(frame):
    """``daskdca.fit`` called in the event loop of a ``Client(asynchronous=True)`` blocked the loop the client
    needs, and so waited on itself for ever; it is refused at once, naming ``asyncio.to_thread``, which works."""
    import asyncio

    df, y = frame
    X = df.to_numpy()

    async def main():
        async with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, asynchronous=True,
                                            dashboard_address=None) as cluster, \
                distributed.Client(cluster, asynchronous=True) as client:
            with pytest.raises(ValueError, match=r"asynchronous Client .* asyncio\.to_thread\(daskdca\.fit"):
                daskdca.fit(X, y, lam=1e-2, client=client)
            with pytest.raises(ValueError, match="asynchronous Client"):
                daskdca.SDCAClassifier(client=client).fit(X, y)
            model = await asyncio.wait_for(asyncio.to_thread(daskdca.fit, X, y, lam=1e-2, client=client), 120)
            assert model.converged_

    asyncio.run(main())


def test_a_client_whose_scheduler_is_gone_is_refused_at_once(frame, tmp_path):
    """A client whose scheduler died (status "connecting": it tries to reconnect) waited 28 s for workers, then
    said to start some, and the next call said the client "is closed"; it raises ``SchedulerLostError`` at once."""
    import subprocess
    import sys
    import time

    df, y = frame
    X = df.to_numpy()
    file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--no-dashboard", "--scheduler-file", str(file)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        client = distributed.Client(scheduler_file=str(file), set_as_default=False, timeout=60)
        try:
            scheduler.kill()
            while client.status != "connecting" and time.monotonic() < deadline:
                time.sleep(0.1)
            assert client.status == "connecting"
            started = time.monotonic()
            with pytest.raises(daskdca.SchedulerLostError, match="not connected to its scheduler"):
                daskdca.fit(X, y, lam=1e-2, client=client)
            assert time.monotonic() - started < 10
        finally:
            client.close(timeout=5)
    finally:
        scheduler.kill()
        scheduler.wait()
