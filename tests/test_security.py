"""Secure by default: TLS clusters refuse clients without credentials.

``cluster/jobqueue_cluster.make_cluster`` builds SLURM/PBS clusters over TLS
with temporary credentials and a dashboard on 127.0.0.1;
``cluster/fit_store.py --system local`` does the same with a LocalCluster.
A real batch system is not needed: the job script and the scheduler the
cluster object starts on this machine are checked, and a LocalCluster built
the same way (``Security.temporary()``, ``protocol="tls"``) shows that a
client without the credentials, with other credentials, or over plain TCP
is refused.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import ssl
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from distributed import Client, LocalCluster  # noqa: E402
from distributed.security import Security  # noqa: E402

CLUSTER_DIR = Path(__file__).resolve().parents[1] / "cluster"
CONNECT_TIMEOUT = "3s"


def _load(name):
    sys.path.insert(0, str(CLUSTER_DIR))
    try:
        spec = importlib.util.spec_from_file_location(name, CLUSTER_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(CLUSTER_DIR))
    return module


def _inc(x):
    return x + 1


def _non_loopback_address():
    """An address of this machine other than 127.0.0.1, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent; picks the outgoing interface
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ip.startswith("127.") else ip


def _refused(address, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        return s.connect_ex((address, port)) != 0


@pytest.fixture(scope="module")
def tls_cluster():
    """A LocalCluster built as make_cluster / fit_store build theirs: TLS, temporary credentials."""
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls",
                      security=Security.temporary(), host="127.0.0.1", dashboard_address=None) as cluster:
        yield cluster


def test_client_with_the_credentials_runs_tasks(tls_cluster):
    assert tls_cluster.scheduler_address.startswith("tls://")
    with Client(tls_cluster, timeout=CONNECT_TIMEOUT) as client:  # Client(cluster) takes cluster.security
        assert client.submit(_inc, 1).result(timeout=30) == 2


def _tls_without_certificate(address, ca_pem):
    """Speak TLS to ``address`` as a client that trusts ``ca_pem`` but has no certificate of its own."""
    host, port = address.split("://", 1)[1].rsplit(":", 1)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # temporary credentials name no host
    context.load_verify_locations(cadata=ca_pem)  # the server is verified: we know whom we talk to
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with context.wrap_socket(raw) as tls:
            tls.sendall(b"\x00" * 16)
            if not tls.recv(1):  # TLS 1.3 reports the missing client certificate on the first read
                raise ConnectionError("closed by the scheduler")


def test_client_without_credentials_is_refused(tls_cluster):
    """A client that reaches the port and speaks TLS, but holds no certificate: the scheduler hangs up."""
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _tls_without_certificate(tls_cluster.scheduler_address, tls_cluster.security.tls_ca_file)


def _connects_from_another_process(address, security):
    """Whether a fresh process gets a working Client to ``address`` (``security``: "none" or "other").

    Raises when the child did not report either way (so a broken child cannot pass as "refused").

    The attempt runs in a subprocess with a hard limit: a refused client can
    otherwise leave Dask's connection loop retrying in this process, and a
    client that never connects within the limit counts as refused.
    """
    code = (
        "import sys\n"
        "from distributed import Client\n"
        "from distributed.security import Security\n"
        f"kwargs = {{'security': Security.temporary()}} if {security!r} == 'other' else {{}}\n"
        "try:\n"
        f"    with Client({address!r}, timeout={CONNECT_TIMEOUT!r}, **kwargs) as c:\n"
        "        c.submit(abs, -1).result(timeout=10)\n"
        "        print('CONNECTED')\n"
        "except BaseException as exc:\n"
        "    print('REFUSED', type(exc).__name__)\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90).stdout
    except subprocess.TimeoutExpired:
        return False
    if "CONNECTED" not in out and "REFUSED" not in out:
        raise AssertionError(f"the client process reported nothing: {out!r}")
    return "CONNECTED" in out


def test_client_without_tls_settings_cannot_connect(tls_cluster):
    assert not _connects_from_another_process(tls_cluster.scheduler_address, "none")


def test_client_with_other_temporary_credentials_is_refused(tls_cluster):
    assert not _connects_from_another_process(tls_cluster.scheduler_address, "other")


def test_plain_tcp_is_refused(tls_cluster):
    """Dask's own protocol in the clear (what a tcp:// client sends first) gets the connection closed."""
    host, port = tls_cluster.scheduler_address.split("://", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"\x00" * 64)
        try:
            answer = raw.recv(64)
        except ConnectionResetError:
            answer = b""
    assert answer == b"" or answer[:1] == b"\x15"  # closed, or a TLS alert record


# --- make_cluster: TLS in the job script and the scheduler --------------------------------------------------

@pytest.fixture(scope="module")
def jobqueue_cluster_module():
    pytest.importorskip("dask_jobqueue")
    return _load("jobqueue_cluster")


@pytest.mark.parametrize("system, directive", [("slurm", "#SBATCH"), ("pbs", "#PBS")])
def test_make_cluster_uses_tls_with_temporary_credentials(jobqueue_cluster_module, tmp_path, system, directive):
    tls_dir = tmp_path / "tls"
    cluster = jobqueue_cluster_module.make_cluster(system, cores=2, memory="4GB", numba_cache_dir="/scratch/nb",
                                                   shared_temp_directory=str(tls_dir))
    try:
        script = cluster.job_script()
        assert directive in script
        assert cluster.scheduler_address.startswith("tls://")
        assert cluster.security.require_encryption
        worker_line = next(line for line in script.splitlines() if "distributed.cli.dask_worker" in line)
        assert f" {cluster.scheduler_address} " in worker_line
        assert "--protocol tls://" in worker_line
        for option in ("--tls-ca-file", "--tls-cert", "--tls-key"):
            assert option in worker_line
        # the workers' copy of the temporary key: in the private folder, readable by the user only
        key_file = worker_line.split("--tls-key ", 1)[1].split()[0]
        assert Path(key_file).parent.parent == tls_dir  # in this cluster's own folder, removed when it closes
        assert stat.S_IMODE(os.stat(Path(key_file).parent).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(key_file).st_mode) & 0o077 == 0
        assert stat.S_IMODE(os.stat(tls_dir).st_mode) == 0o700
        # no client without the credentials gets in
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _tls_without_certificate(cluster.scheduler_address, cluster.security.tls_ca_file)
    finally:
        cluster.close()


def test_make_cluster_dashboard_listens_on_localhost_only(jobqueue_cluster_module, tmp_path):
    cluster = jobqueue_cluster_module.make_cluster("slurm", shared_temp_directory=str(tmp_path / "tls"),
                                                   dashboard_address="127.0.0.1:0")
    try:
        port = cluster.scheduler.http_server.port
        assert not _refused("127.0.0.1", port)
        outside = _non_loopback_address()
        if outside is None:
            pytest.skip("this machine has no non-loopback address to try the dashboard on")
        assert _refused(outside, port), f"the dashboard answers on {outside}:{port}"
    finally:
        cluster.close()


def test_make_cluster_uses_a_given_security_object(jobqueue_cluster_module, tmp_path):
    security = Security.temporary()
    cluster = jobqueue_cluster_module.make_cluster("pbs", shared_temp_directory=str(tmp_path / "tls"),
                                                   security=security)
    try:
        assert cluster.security is security
        with Client(cluster, timeout=CONNECT_TIMEOUT) as client:  # the user's credentials get in
            assert client.scheduler_info()["address"].startswith("tls://")
    finally:
        cluster.close()


@pytest.mark.parametrize("security, error, word", [
    (False, TypeError, "Security"),
    ("tls", TypeError, "Security"),
    (True, TypeError, "Security"),
    (Security(), ValueError, "encryption"),
])
def test_make_cluster_refuses_a_cluster_without_tls(jobqueue_cluster_module, tmp_path, security, error, word):
    with pytest.raises(error, match=word):
        jobqueue_cluster_module.make_cluster("slurm", security=security, shared_temp_directory=str(tmp_path))


def test_make_cluster_refuses_a_folder_others_can_write(jobqueue_cluster_module, tmp_path):
    shared = tmp_path / "open"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(PermissionError, match="chmod 700"):
        jobqueue_cluster_module.make_cluster("slurm", shared_temp_directory=str(shared))


# --- fit_store.py --system local --------------------------------------------------------------------------

def test_fit_store_local_cluster_is_tls_on_localhost_and_fits(tmp_path):
    import daskdca

    fit_store = _load("fit_store")
    with fit_store.make_local_cluster(1, dashboard_address="127.0.0.1:0") as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        port = cluster.scheduler.http_server.port
        outside = _non_loopback_address()
        if outside is not None:
            assert _refused(outside, port)
            assert _refused(outside, int(cluster.scheduler_address.rsplit(":", 1)[1]))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _tls_without_certificate(cluster.scheduler_address, cluster.security.tls_ca_file)
        rng = np.random.default_rng(0)
        X = rng.standard_normal((60, 4))
        y = np.where(X[:, 0] > 0, 1, -1)
        with Client(cluster, timeout=CONNECT_TIMEOUT) as client:
            model = daskdca.fit(X, y, loss="squared_hinge", lam=1e-2, tol=1e-6, client=client, max_rounds=200)
        assert model.converged_
