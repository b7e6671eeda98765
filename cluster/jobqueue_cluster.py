"""dask-jobqueue clusters (SLURM, PBS) for daskdca on HPC, secure by default.

Usage on a login node::

    from jobqueue_cluster import make_cluster
    cluster = make_cluster("slurm", cores=8, memory="32GB", walltime="02:00:00",
                           numba_cache_dir="/scratch/$USER/numba")
    cluster.scale(jobs=4)
    from distributed import Client
    client = Client(cluster)          # picks up the cluster's TLS credentials

or run ``python cluster/fit_store.py STORE --system slurm --jobs 4`` (see
that script).  The store must live on a file system every node can read
(Lustre/GPFS path or an object store URL); ``NUMBA_CACHE_DIR`` must be a
writable directory, node-local or shared (spec dask-zarr-numba.md §5).

Security (``docs/reliability.md``, "Security model"): a Dask scheduler
port executes any Python it is sent.  On a shared login node the scheduler
therefore speaks TLS with mutual authentication: by default temporary
credentials (``distributed.security.Security.temporary()``, a fresh CA and
key made in memory for this cluster), which only this process and the
workers it submits hold.  The workers' copy of the key goes to
``shared_temp_directory`` (a folder the compute nodes read, created mode
0700; the files are 0600 and deleted when the cluster closes).  Pass your
own ``Security`` object to use site certificates instead.  The dashboard
listens on 127.0.0.1 only; reach it with ``ssh -L 8787:localhost:8787``.
"""

from __future__ import annotations

import os

SYSTEMS = ("slurm", "pbs")
DEFAULT_SHARED_TEMP_DIRECTORY = "~/.daskdca/tls"
DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8787"


def _private_directory(path):
    """Create ``path`` (user only, 0700) if missing; refuse one that others can write."""
    full = os.path.expanduser(os.path.expandvars(path))
    os.makedirs(full, mode=0o700, exist_ok=True)
    mode = os.stat(full).st_mode
    if mode & 0o022:
        raise PermissionError(
            f"shared_temp_directory {full!r} is writable by group or others (mode {oct(mode & 0o777)}); "
            "the workers' TLS key is written there. Use a folder only you can write (chmod 700).")
    return path


def make_cluster(system, *, cores=4, memory="16GB", walltime="01:00:00", processes=None, queue=None,
                 account=None, numba_cache_dir="$TMPDIR/numba-cache", extra_prologue=(), security=None,
                 shared_temp_directory=DEFAULT_SHARED_TEMP_DIRECTORY,
                 dashboard_address=DEFAULT_DASHBOARD_ADDRESS, interface=None, scheduler_host=None):
    """A SLURMCluster or PBSCluster whose workers run daskdca's numba kernels, over TLS.

    One worker process per core by default (daskdca runs one partition per
    Dask thread; the kernels release the GIL, so threads work too).

    Parameters
    ----------
    security : distributed.security.Security or None
        None (default): TLS with temporary credentials made for this cluster
        (dask-jobqueue's ``security=True``; needs the ``cryptography``
        package).  A ``Security`` object: used as given (e.g. site
        certificates).  There is no option without TLS.
    shared_temp_directory : str
        Folder, readable on the compute nodes, for the workers' copy of the
        temporary credentials (``~`` and ``$VARS`` are expanded on each node).
        Created with mode 0700 when missing.
    dashboard_address : str or None
        Where the dashboard listens: 127.0.0.1 by default (tunnel it over
        ssh); None turns it off.
    interface, scheduler_host : str or None
        Network interface of the workers and scheduler (e.g. ``"ib0"``), or a
        host name or address for the scheduler alone.  The scheduler must be
        reachable from the compute nodes, so it listens on the login node's
        network; TLS is what keeps others out.
    """
    if system not in SYSTEMS:
        raise ValueError(f"unknown batch system {system!r}; use one of {list(SYSTEMS)}.")
    from distributed.security import Security

    if security is None:
        try:
            import cryptography  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "make_cluster uses TLS with temporary credentials, which needs the 'cryptography' package: "
                "pip install cryptography (it is in daskdca's dev extra), or pass security=Security(...) "
                "with your site's certificates.") from exc
        security = Security.temporary()
    elif not isinstance(security, Security):
        raise TypeError(
            f"security must be None (TLS with temporary credentials) or a distributed.security.Security, "
            f"got {security!r}; a scheduler without TLS lets anyone who reaches its port run code as you.")
    if not security.require_encryption:
        raise ValueError("security must require encryption (Security(require_encryption=True, ...)); "
                         "a scheduler without TLS lets anyone who reaches its port run code as you.")
    if dashboard_address is not None and not isinstance(dashboard_address, str):
        raise TypeError(f"dashboard_address must be a string like '127.0.0.1:8787' or None, "
                        f"got {dashboard_address!r}.")
    from dask_jobqueue import PBSCluster, SLURMCluster

    cls = SLURMCluster if system == "slurm" else PBSCluster
    prologue = [f"export NUMBA_CACHE_DIR={numba_cache_dir}", "export OMP_NUM_THREADS=1", *extra_prologue]
    scheduler_options = {"dashboard_address": dashboard_address, "dashboard": dashboard_address is not None}
    if scheduler_host is not None:
        scheduler_options["host"] = scheduler_host
    return cls(cores=cores, memory=memory, walltime=walltime, processes=processes or cores, queue=queue,
               account=account, job_script_prologue=prologue, security=security, protocol="tls://",
               shared_temp_directory=_private_directory(shared_temp_directory), interface=interface,
               scheduler_options=scheduler_options)
