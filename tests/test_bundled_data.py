"""The bundled copy of heart_scale (tests/data/): small, intact, and used when the shared data is absent."""

import hashlib

import conftest
import numpy as np

SHA256 = "5defa0a4c4c5bdaf3f55ae3828310252e8565c13ee37ce279e0b86d82e7f4ce9"  # as in tests/data/README.md


def test_bundled_copy_is_small_and_intact():
    path = conftest.BUNDLED_DIR / "heart_scale"
    data = path.read_bytes()
    assert len(data) < 64 * 1024
    assert hashlib.sha256(data).hexdigest() == SHA256
    assert SHA256 in (conftest.BUNDLED_DIR / "README.md").read_text(encoding="utf-8")


def test_lookup_falls_back_to_the_bundled_copy_only(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "DATA_DIR", tmp_path)  # a shared data directory without the files
    assert conftest.data_path("heart_scale") == conftest.BUNDLED_DIR / "heart_scale"
    assert conftest.data_path("a9a.gz") == tmp_path / "a9a.gz"  # not bundled: still missing (CI fails on it)
    (tmp_path / "heart_scale").write_bytes((conftest.BUNDLED_DIR / "heart_scale").read_bytes())
    assert conftest.data_path("heart_scale") == tmp_path / "heart_scale"  # the shared copy wins


def test_load_dataset_reads_the_bundled_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "DATA_DIR", tmp_path)
    monkeypatch.setattr(conftest, "_cache", {})
    X, y = conftest.load_dataset("heart")
    assert X.shape == (270, 13)
    assert np.count_nonzero(y == -1) == 150 and np.count_nonzero(y == 1) == 120
