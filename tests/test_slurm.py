"""The SLURM route on a real scheduler: batch jobs that run TLS workers, fits on them, both scripts, a cancelled job.

Needs a SLURM controller that answers and a node that runs jobs: CI starts a single-node one on its own
machine (``.ci/slurm_up.sh``, then ``DASKDCA_SLURM=1``); ``bash .ci/slurm_up.sh`` does the same on a
Debian machine where you are root.  Skipped, with the reason, when neither ``DASKDCA_SLURM=1`` is set
nor ``sbatch`` is on PATH, or when ``sbatch`` is there but no controller answers; with
``DASKDCA_SLURM=1`` a missing or unready SLURM fails instead.

Every cluster here is :func:`make_cluster` ``("slurm", cores=1, memory="1GB")`` with one or two jobs,
closed by the test that made it: two such jobs fill a two-core node, and a job the test leaves behind would
keep the next test's jobs pending.  The workers share one numba cache folder, so only the first ones
compile the kernels.  About a minute on two cores.
"""

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskdca
from daskdca import engine
from daskdca.partitions import random_row_order
from daskdca.store import write_store

from conftest import DriverDied, driver_dies_at, load_dataset
from references import primal_objective

distributed = pytest.importorskip("distributed")
pytest.importorskip("dask_jobqueue")

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = os.environ.get("DASKDCA_SLURM") == "1"
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(not REQUIRED and shutil.which("sbatch") is None,
                       reason="no SLURM: sbatch is not on PATH and DASKDCA_SLURM=1 is not set "
                              "(bash .ci/slurm_up.sh starts a single-node SLURM here)"),
    # a job that never starts, or a fit that hangs, fails in minutes with every thread's stack printed
    pytest.mark.timeout(240),
]

LAM = 1e-2
# seconds for a submitted job's worker to join: the node is idle, so this is start-up, not queueing
WAIT = 120


def _jobqueue_cluster():
    spec = importlib.util.spec_from_file_location("jobqueue_cluster", ROOT / "cluster" / "jobqueue_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _queue():
    """``{job id: state}`` of every job SLURM knows (``squeue``; running jobs say ``RUNNING``)."""
    out = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, timeout=30, check=True)
    return dict(line.split() for line in out.stdout.splitlines() if line.strip())


def _wait_until_gone(job_ids, timeout=30):
    """Wait until none of ``job_ids`` is in the queue (a cancelled job is KillWait seconds in COMPLETING)."""
    deadline = time.monotonic() + timeout
    while set(job_ids) & set(_queue()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return set(job_ids) & set(_queue())


@pytest.fixture(scope="module", autouse=True)
def slurm():
    """Skip (fail under DASKDCA_SLURM=1) unless a controller answers and this module's jobs can start now."""
    problem = None
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        problem = "sbatch or sinfo is not on PATH"
    else:
        try:
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            out = None
        states = out.stdout.split() if out is not None and out.returncode == 0 else []
        if out is None or out.returncode != 0:
            problem = (f"sbatch is on PATH but no SLURM controller answers (sinfo: "
                       f"{'timed out' if out is None else out.stderr.strip()[-300:]})")
        elif "idle" not in states and "mixed" not in states:
            problem = f"SLURM has no node that can start a job now (node states: {states})"
        elif _queue():
            problem = f"SLURM already has jobs {_queue()}: this module needs the node's CPUs to itself"
    if problem is not None:
        if REQUIRED:
            pytest.fail(problem + " (DASKDCA_SLURM=1: SLURM should be up; see .ci/slurm_up.sh)")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def numba_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("numba-cache")


@pytest.fixture(scope="module")
def heart():
    return load_dataset("heart")


def _job_logs(folder):
    """The last lines of the jobs' output files (slurm-<job id>.out) in ``folder``, for a failure message."""
    return "\n".join(f"---- {log.name}\n{log.read_text()[-2000:]}" for log in sorted(folder.glob("slurm-*.out")))


@contextlib.contextmanager
def _slurm_client(tmp_path, numba_cache, jobs):
    """A make_cluster("slurm") cluster of ``jobs`` one-core jobs, every worker joined; closed, and its jobs
    gone from the queue, on exit.  The jobs are submitted from ``tmp_path``, where their output files go."""
    module = _jobqueue_cluster()
    cluster = module.make_cluster("slurm", cores=1, memory="1GB", walltime="00:10:00", numba_cache_dir=str(numba_cache),
                                  shared_temp_directory=str(tmp_path / "tls"), dashboard_address=None)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # sbatch runs in this process's folder, and SLURM writes slurm-<id>.out there
    try:
        with cluster, distributed.Client(cluster) as client:
            cluster.scale(jobs=jobs)
            try:
                client.wait_for_workers(jobs, timeout=WAIT)
            except TimeoutError:
                pytest.fail(f"{jobs} workers did not join in {WAIT} s; queue {_queue()}\n{_job_logs(tmp_path)}")
            job_ids = [job.job_id for job in cluster.workers.values()]
            yield cluster, client
    finally:
        os.chdir(cwd)
    assert not _wait_until_gone(job_ids), f"jobs {job_ids} still queued after the cluster closed"


def _job_of_each_worker(client):
    """``{worker address: SLURM job id}``, as each worker's own environment says."""
    return client.run(os.getenv, "SLURM_JOB_ID")


def _fixed_rounds(X, y=None, *, max_rounds, random_state, client=None, in_memory=None, n_partitions=None,
                  checkpoint=None, checkpoint_every=None, resume=False, callback=None):
    """CoCoA+ (logistic) for exactly ``max_rounds`` rounds (tol=0; its ConvergenceWarning is expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return daskdca.fit(X, y, loss="logistic", lam=LAM, solver="cocoa+", tol=0.0, max_rounds=max_rounds,
                           random_state=random_state, client=client, in_memory=in_memory, n_partitions=n_partitions,
                           checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
                           callback=callback)


def _labels(y):
    return np.where(y == np.unique(y)[1], 1.0, -1.0)


def test_two_tls_worker_jobs_fit_the_in_process_bits(heart, tmp_path, numba_cache):
    """make_cluster("slurm"): two batch jobs whose workers speak TLS; a certified fit on them has the bits
    of the same fit in this process; closing the cluster cancels the jobs and removes the credentials."""
    X, y = heart
    with _slurm_client(tmp_path, numba_cache, jobs=2) as (cluster, client):
        assert client.scheduler_info()["address"].startswith("tls://")
        assert all(address.startswith("tls://") for address in client.scheduler_info()["workers"])
        jobs = _job_of_each_worker(client)
        submitted = {job.job_id for job in cluster.workers.values()}
        assert sorted(jobs.values()) == sorted(submitted) and len(submitted) == 2, (jobs, submitted)
        queue = _queue()
        assert all(queue.get(job) == "RUNNING" for job in submitted), queue
        # the workers' copy of the temporary credentials, in this cluster's private folder
        assert len([f for _, _, files in os.walk(tmp_path / "tls") for f in files]) == 3
        model = daskdca.fit(X, y, loss="logistic", lam=LAM, solver="cocoa+", tol=1e-6, client=client)
    local = daskdca.fit(X, y, loss="logistic", lam=LAM, solver="cocoa+", tol=1e-6)
    assert model.converged_ and model.gap_ <= 1e-6 * model.primal_
    # the certificate, from the returned coefficients alone
    assert model.primal_ == pytest.approx(primal_objective(X, _labels(y), model.coef_, LAM, "logistic"), rel=1e-12)
    np.testing.assert_array_equal(model.coef_, local.coef_)
    np.testing.assert_array_equal(model.dual_coef_, local.dual_coef_)
    assert model.n_rounds_ == local.n_rounds_
    assert not set(submitted) & set(_queue())
    assert list((tmp_path / "tls").iterdir()) == []


def test_out_of_core_with_a_checkpoint_on_slurm_workers(heart, tmp_path, numba_cache):
    """Out of core, checkpointed: the in-process bits (rows stored in the in-process partition order), a
    complete checkpoint of the last round, and a fit whose driver dies that resumes to the same bits."""
    X, y = heart
    rounds, seed = 20, 7
    order = random_row_order(X.shape[0], seed)
    store = write_store(tmp_path / "h.zarr", X[order], y[order], block_rows=-(-X.shape[0] // 2), shuffle=False)
    local = _fixed_rounds(X, y, n_partitions=2, max_rounds=rounds, random_state=seed)

    die = driver_dies_at(10)
    with _slurm_client(tmp_path, numba_cache, jobs=2) as (_, client):
        kwargs = dict(client=client, in_memory=False, max_rounds=rounds, random_state=seed, checkpoint_every=3)
        undisturbed = _fixed_rounds(store, checkpoint=tmp_path / "a", **kwargs)
        with pytest.raises(DriverDied):
            _fixed_rounds(store, checkpoint=tmp_path / "b", callback=die, **kwargs)
        resumed = _fixed_rounds(store, checkpoint=tmp_path / "b", resume=True, **kwargs)
    assert undisturbed.n_rounds_ == resumed.n_rounds_ == rounds
    np.testing.assert_array_equal(undisturbed.dual_coef_, local.dual_coef_[order])
    np.testing.assert_array_equal(undisturbed.coef_, local.coef_)
    meta = engine._checkpoint_meta(str(tmp_path / "a"))
    assert meta is not None and meta["round"] == rounds
    np.testing.assert_array_equal(resumed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)
    assert resumed.primal_ == undisturbed.primal_ and resumed.gap_ == undisturbed.gap_


@pytest.mark.parametrize("in_memory", [None, False], ids=["default", "out-of-core"])
def test_a_worker_job_cancelled_mid_fit_changes_nothing(heart, tmp_path, numba_cache, in_memory):
    """``scancel`` of one of the two worker jobs after the first copy of the states (checkpoint_every): the
    fit goes on on the other job's worker and ends with the bits of the undisturbed fit."""
    X, y = heart
    store = write_store(tmp_path / "h.zarr", X, y, block_rows=135, shuffle=False)
    rounds, every = 20, 7
    cancelled = []
    with _slurm_client(tmp_path, numba_cache, jobs=2) as (_, client):
        kwargs = dict(client=client, in_memory=in_memory, max_rounds=rounds, random_state=3, checkpoint_every=every)
        undisturbed = _fixed_rounds(store, **kwargs)
        address, job = sorted(_job_of_each_worker(client).items())[0]

        def cancel_one_job(record, state):
            if not cancelled and record.round > every:
                assert record.round < rounds
                subprocess.run(["scancel", job], check=True, timeout=30)
                cancelled.append(job)
                # the rest of the fit runs without that worker: wait until the scheduler has lost it
                deadline = time.monotonic() + 60
                while address in client.scheduler_info()["workers"] and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert address not in client.scheduler_info()["workers"], f"job {job} cancelled, worker still there"
            return False

        disturbed = _fixed_rounds(store, callback=cancel_one_job, **kwargs)
        assert cancelled and not _wait_until_gone(cancelled)
        assert len(client.scheduler_info()["workers"]) == 1
    assert disturbed.n_rounds_ == undisturbed.n_rounds_ == rounds
    np.testing.assert_array_equal(disturbed.dual_coef_, undisturbed.dual_coef_)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)


def _run_script(args, tmp_path):
    """Run a script of this repository with this Python; HOME is ``tmp_path`` so that the default credentials
    folder (~/.daskdca/tls) is the test's own."""
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=200, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    return out


def _optimum(X, y):
    """A lower bound on min P: the dual value of a tight in-process fit."""
    return daskdca.fit(X, y, loss="logistic", lam=LAM, solver="cocoa+", tol=1e-10, max_rounds=1000).dual_


def test_the_slurm_example_script_fits_a_store(heart, tmp_path, numba_cache):
    """examples/slurm_cluster.py, for real: one job, an out-of-core fit with a checkpoint; the coefficients it
    saves are within its tolerance of the optimum."""
    X, y = heart
    write_store(tmp_path / "h.zarr", X, y, block_rows=135)
    tol = 1e-6
    out = _run_script([ROOT / "examples" / "slurm_cluster.py", tmp_path / "h.zarr", "--jobs", 1, "--cores", 1,
                       "--memory", "1GB", "--walltime", "00:10:00", "--numba-cache-dir", numba_cache,
                       "--loss", "logistic", "--lam", LAM, "--tol", tol, "--checkpoint", tmp_path / "ckpt",
                       "--output", tmp_path / "coef.npy", "--wait-seconds", WAIT], tmp_path)
    assert "#SBATCH" in out.stdout and "converged True" in out.stdout, out.stdout[-3000:]
    coef = np.load(tmp_path / "coef.npy")
    assert coef.shape == (X.shape[1],)
    primal = primal_objective(X, _labels(y), coef, LAM, "logistic")
    assert primal - _optimum(X, y) <= tol * primal
    assert engine._checkpoint_meta(str(tmp_path / "ckpt")) is not None
    # its credentials folder (the default, under HOME) is empty again
    assert [f for _, _, files in os.walk(tmp_path / ".daskdca") for f in files] == []


def test_fit_store_script_on_slurm(heart, tmp_path, numba_cache):
    """cluster/fit_store.py --system slurm: one job, the store fitted to its tolerance."""
    X, y = heart
    write_store(tmp_path / "h.zarr", X, y, block_rows=135)
    tol = 1e-6
    out = _run_script([ROOT / "cluster" / "fit_store.py", tmp_path / "h.zarr", "--system", "slurm", "--jobs", 1,
                       "--cores", 1, "--memory", "1GB", "--walltime", "00:10:00", "--numba-cache-dir", numba_cache,
                       "--loss", "logistic", "--lam", LAM, "--tol", tol,
                       "--dashboard-address", "127.0.0.1:0", "--shared-temp-directory", tmp_path / "tls"], tmp_path)
    # the last line is the model: LinearModel(loss='logistic', ..., primal=..., gap=..., converged=True)
    model = out.stdout.strip().splitlines()[-1]
    assert "converged=True" in model, out.stdout[-3000:]
    primal = float(re.search(r"primal=([-+0-9.eE]+)", model).group(1))
    assert primal == pytest.approx(_optimum(X, y), rel=1e-5)
    assert list((tmp_path / "tls").iterdir()) == []
