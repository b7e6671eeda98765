"""A fit's warnings name the user's line, on every route: in this process, on one worker, in rounds, from a store."""

import os
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

import daskdca
from daskdca.store import write_store
from daskdca.user_warnings import warn_at_caller

distributed = pytest.importorskip("distributed")

PACKAGE_DIR = os.path.dirname(os.path.abspath(daskdca.__file__)) + os.sep


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def warned_at(call, category=ConvergenceWarning):
    """``(filename, lineno)`` of each ``category`` warning ``call()`` raised."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call()
    places = [(r.filename, r.lineno) for r in record if issubclass(r.category, category)]
    assert places, f"no {category.__name__} was raised"
    return places


def test_warn_at_caller_names_the_first_frame_outside_the_package():
    places = warned_at(lambda: warn_at_caller("here", UserWarning), UserWarning)
    assert places == [(__file__, places[0][1])]


def test_in_process_fits_warn_at_the_users_line(a9a_5k):
    X, y = a9a_5k
    calls = [
        lambda: daskdca.fit(X, y, lam=1e-6, max_epochs=1),
        lambda: daskdca.fit(X, y, lam=1e-6, max_epochs=1, solver="cocoa+", n_partitions=2),
        lambda: daskdca.SDCAClassifier(max_iter=1).fit(X, y),
        lambda: daskdca.SDCAClassifier(max_iter=1).fit(X, np.where(y > 0, 2, np.arange(y.size) % 2)),  # one-vs-rest
        lambda: daskdca.SDCARegressor(solver="sdca", max_iter=1).fit(X, y),
        lambda: daskdca.SDCAClassifierCV(Cs=2, cv=2, max_iter=1).fit(X, y),
        # the dual-free method's own stop (its gap stalls at lam n = 5e-4), through the driver
        lambda: daskdca.fit(X, y, loss="logistic", lam=1e-7, solver="dfsdca", max_epochs=100),
    ]
    for call in calls:
        assert {filename for filename, _ in warned_at(call)} == {__file__}


def test_a_grid_search_names_scikit_learns_line(a9a_5k):
    X, y = a9a_5k
    search = GridSearchCV(daskdca.SDCAClassifier(max_iter=1), {"C": [1.0]}, cv=2)
    for filename, _ in warned_at(lambda: search.fit(X, y)):
        assert not filename.startswith(PACKAGE_DIR) and "sklearn" in filename


def test_cluster_fits_warn_at_the_users_line(a9a_5k, client, tmp_path):
    X, y = a9a_5k
    store = write_store(tmp_path / "a9a.zarr", X, y, block_rows=1000)
    dense = da.from_array(X.toarray(), chunks=(2500, X.shape[1]))
    calls = [
        lambda: daskdca.fit(X, y, lam=1e-6, max_epochs=1, client=client),  # the one-worker route
        lambda: daskdca.fit(X, y, lam=1e-6, max_epochs=1, client=client, solver="cocoa+"),  # rounds
        lambda: daskdca.fit(dense, y, lam=1e-6, max_epochs=1, client=client),
        lambda: daskdca.fit(store, lam=1e-6, max_epochs=1, client=client),
        lambda: daskdca.fit(store, lam=1e-6, max_epochs=1, client=client, solver="cocoa+"),
        lambda: daskdca.SDCAClassifier(max_iter=1, client=client).fit(X, y),
    ]
    for call in calls:
        assert {filename for filename, _ in warned_at(call)} == {__file__}
