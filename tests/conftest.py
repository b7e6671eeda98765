"""Shared fixtures: the real LIBSVM data in ../shared/data and small generators."""

import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))


def _purge_stale_numba_cache():
    """Drop daskdca's numba cache when any of its sources changed.

    numba keys a cached kernel on its own file only: a kernel in
    ``kernels/sdca.py`` keeps the inlined ``dual_update`` of an older
    ``losses.py`` after that file is edited (and the stale symbol then wins
    in-process).  Installed releases replace all files at once; this guard is
    for working copies.
    """
    package = Path(__file__).resolve().parents[1] / "daskdca"
    digest = hashlib.sha256()
    for src in sorted(package.rglob("*.py")):
        digest.update(src.read_bytes())
    stamp = package / "__pycache__" / "daskdca-sources.sha256"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    for cached in list(package.rglob("*.nbi")) + list(package.rglob("*.nbc")):
        cached.unlink()
    stamp.parent.mkdir(exist_ok=True)
    stamp.write_text(digest.hexdigest())


_purge_stale_numba_cache()

DATA_DIR = Path(os.environ.get("DASKDCA_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
# small files with a copy in the repository (tests/data/README.md): used when DATA_DIR lacks them
BUNDLED_DIR = Path(__file__).resolve().parent / "data"
BUNDLED = frozenset({"heart_scale"})

# name -> (file, n_features), from ../shared/data/README.md
DATASETS = {
    "a9a": ("a9a.gz", 123),
    "w8a": ("w8a.gz", 300),
    "ijcnn1": ("ijcnn1.bz2", 22),
    "reuters": ("reuters_lasvm.trn.bz2", 8315),
    "heart": ("heart_scale", 13),
    "rcv1_1k": ("rcv1_sample1000.svm.gz", 47236),
}

_cache = {}


def data_path(fname):
    """The path of a data file: in DATA_DIR, else its bundled copy (BUNDLED), else the missing DATA_DIR path."""
    path = DATA_DIR / fname
    if not path.exists() and fname in BUNDLED:
        return BUNDLED_DIR / fname
    return path


def require_data(fname):
    """:func:`data_path`, skipping the test when the file is missing (failing it under DASKDCA_REQUIRE_DATA=1)."""
    path = data_path(fname)
    if not path.exists():
        message = f"{path} not found; set DASKDCA_DATA to the shared data directory"
        if os.environ.get("DASKDCA_REQUIRE_DATA") == "1":  # CI: missing data is a failure
            pytest.fail(message)
        pytest.skip(message)
    return path


def load_dataset(name):
    """``(X, y)`` with X as CSR float64, loaded once per session."""
    if name not in _cache:
        from sklearn.datasets import load_svmlight_file

        fname, d = DATASETS[name]
        path = require_data(fname)
        X, y = load_svmlight_file(str(path), n_features=d)
        _cache[name] = (sp.csr_matrix(X), np.asarray(y, dtype=np.float64))
    return _cache[name]


@pytest.fixture(scope="module")
def a9a_5k():
    """The first 5,000 rows of a9a: real data small enough for many penalised fits."""
    X, y = load_dataset("a9a")
    return X[:5000], y[:5000]


def signed_labels(model, y):
    """``y`` as -1/+1, the model's positive class (``classes_[1]``) +1."""
    return np.where(y == model.classes_[1], 1.0, -1.0)


def random_sparse(n, d, density, seed, zero_rows=(), positive=False):
    """A random CSR matrix with a few rows forced to zero."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="lil",
                  data_rvs=(lambda k: rng.uniform(0, 1, k)) if positive else rng.standard_normal)
    for i in zero_rows:
        X[i, :] = 0
    return sp.csr_matrix(X)


def random_labels(n, seed):
    return np.random.default_rng(seed).choice([-1.0, 1.0], n)


class DriverDied(Exception):
    """Raised by :func:`driver_dies_at`'s callback: the driver of a fit dies between two rounds."""


def driver_dies_at(round_index):
    """A fit's ``callback`` that raises :class:`DriverDied` at the first record of round ``round_index`` or later."""

    def die(record, state):
        if record.round >= round_index:
            raise DriverDied

    return die


def plan_on_partitions(X, y, method, loss, lam, n_partitions, seed=5):
    """``method`` set up in process on the drivers' seeded split of ``(X, y)``; returns ``(plan, partitions)``."""
    from daskdca.driver import InProcess, in_process_partitions
    from daskdca.losses import get_loss
    from daskdca.methods.base import DataInfo
    from daskdca.problem import max_column_nnz

    parts, _ = in_process_partitions(X, y, n_partitions, seed)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts),
                    loss=get_loss(loss), lam=lam, max_column_nnz=max_column_nnz(X))
    return InProcess(parts, info, seed).setup(method), parts
