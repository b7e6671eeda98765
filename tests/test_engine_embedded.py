"""fit on a store with no client: it starts a LocalCluster and closes it again.

Kept in its own module: a live client from another module's fixture would
be the default client and be used instead.
"""

import pytest

distributed = pytest.importorskip("distributed")

import daskdca  # noqa: E402
from daskdca.store import write_store  # noqa: E402

from conftest import load_dataset  # noqa: E402


def test_embedded_local_cluster_when_no_client(tmp_path):
    X, y = load_dataset("heart")
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    with pytest.raises(ValueError):
        distributed.default_client()  # no client anywhere before the fit
    m = daskdca.fit(str(tmp_path / "h.zarr"), loss="logistic", lam=1e-2, tol=1e-8)  # cocoa+ by default
    assert m.solver.name == "cocoa+"
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-10)
    assert m.primal_ == pytest.approx(ref.primal_, rel=1e-7)
    with pytest.raises(ValueError):
        distributed.default_client()  # the LocalCluster it started is closed again
    assert store.n_blocks == 2


