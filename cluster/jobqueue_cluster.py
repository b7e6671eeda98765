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
workers it submits hold.  The workers' copy of the key, certificate and CA
goes to a folder of its own inside ``shared_temp_directory`` (a folder the
compute nodes read, created mode 0700; the files are 0600).  They are
deleted when the cluster closes, at the driver's exit (``atexit``), and, after
a driver killed by a signal, by the next ``make_cluster`` on the same host.
Pass your own ``Security`` object to use site certificates instead.  The
dashboard listens on 127.0.0.1 only; reach it with
``ssh -L 8787:localhost:8787``.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import uuid
import weakref

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


# The credential files dask-jobqueue writes (JobQueueCluster._get_worker_security): NamedTemporaryFile
# objects named ".dask-jobqueue.worker.<key>.<random>", kept as the cluster's "_job_<key>" attributes.
_CREDENTIAL_PREFIX = ".dask-jobqueue.worker."
# The folder of one cluster's credentials inside shared_temp_directory: "<host>-<pid>-<8 hex>".
_FOLDER = re.compile(r"^daskdca-(?P<host>.+)-(?P<pid>[0-9]+)-[0-9a-f]{8}$")
_WALLTIME = re.compile(r"^([0-9]+-)?[0-9]+(:[0-9]{1,2}){0,2}$")
_CLASSES = {}


def _remove_credentials(folder, handles):
    """Delete one cluster's credential files and their folder (only files dask-jobqueue wrote there)."""
    for handle in handles:
        with contextlib.suppress(OSError):
            handle.close()  # a NamedTemporaryFile deletes its file on close
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name.startswith(_CREDENTIAL_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))
        os.rmdir(folder)  # fails, and keeps the folder, if anything else is in it


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _remove_stale_credentials(shared):
    """Remove the credential folders that drivers on this host killed by a signal left in ``shared``."""
    host = socket.gethostname()
    with contextlib.suppress(OSError):
        for entry in os.scandir(shared):
            match = _FOLDER.match(entry.name)
            if not match or match["host"] != host or not entry.is_dir(follow_symlinks=False):
                continue
            if int(match["pid"]) != os.getpid() and not _pid_alive(int(match["pid"])):
                _remove_credentials(entry.path, ())


def _secure_class(base):
    """``base`` (SLURMCluster, PBSCluster) whose credential files go when it closes or is collected, and at exit."""
    cls = _CLASSES.get(base)
    if cls is not None:
        return cls

    def __init__(self, *args, credentials_folder, **kwargs):
        try:
            base.__init__(self, *args, **kwargs)
        except BaseException:
            _remove_credentials(credentials_folder, _handles(self))
            raise
        # weakref.finalize runs at garbage collection and, for a cluster still alive then, at interpreter exit
        self._daskdca_credentials = weakref.finalize(self, _remove_credentials, credentials_folder, _handles(self))

    async def _close(self):
        try:
            return await base._close(self)
        finally:
            finalizer = getattr(self, "_daskdca_credentials", None)
            if finalizer is not None:
                finalizer()

    cls = type(base.__name__, (base,), {"__init__": __init__, "_close": _close, "job_cls": _job_class(base.job_cls),
                                        "__module__": __name__, "__doc__": base.__doc__})
    _CLASSES[base] = cls
    return cls


def _job_class(base):
    """``base`` (SLURMJob, PBSJob) whose ``close`` also marks the job closed.

    dask-jobqueue's ``Job.close`` runs the cancel command (``scancel``, ``qdel``) but leaves the job's status
    ``running``, and ``SpecCluster.close`` in current ``distributed`` asserts that each job it closed says
    closed: on a real SLURM, closing a cluster whose jobs had run raised ``AssertionError: Status.running``
    (dask-jobqueue 0.9, distributed 2026.8), after cancelling them.
    """
    from distributed.deploy.spec import ProcessInterface

    async def close(self):
        await base.close(self)
        # the status closed and ``finished()`` answered, as ProcessInterface.close does; harmless if a
        # later dask-jobqueue calls it too
        await ProcessInterface.close(self)

    return type(base.__name__, (base,), {"close": close, "__module__": __name__, "__doc__": base.__doc__})


def _handles(cluster):
    return [value for name, value in vars(cluster).items()
            if name.startswith("_job_") and hasattr(value, "close") and hasattr(value, "name")]


def _check_count(name, value, hint):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}; {hint}")
    return value


def _check_text(name, value, example, optional=False):
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string like {example!r}{' or None' if optional else ''}, "
                         f"got {value!r}.")
    return value


def _check_arguments(system, cores, processes, memory, walltime, queue, account, numba_cache_dir, extra_prologue,
                     interface, scheduler_host):
    """The arguments of :func:`make_cluster`, checked before anything starts (ValueError naming the value)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown batch system {system!r}; use one of {list(SYSTEMS)}.")
    _check_count("cores", cores, "the cores of one batch job, e.g. cores=8.")
    if processes is not None:
        _check_count("processes", processes, f"the worker processes of one job, 1..cores={cores}, or None for "
                     "one per core.")
        if processes > cores:
            raise ValueError(f"processes={processes} is more than cores={cores}: each worker process would get "
                             f"int({cores}/{processes}) = 0 threads and never run a task. Use processes <= cores.")
    _check_text("memory", memory, "16GB")
    from dask.utils import parse_bytes

    try:
        size = parse_bytes(memory)
    except (ValueError, TypeError):
        size = None
    if not size or size <= 0:
        raise ValueError(f"memory must be an amount > 0 like '16GB', got {memory!r}.")
    _check_text("walltime", walltime, "01:00:00")
    if not _WALLTIME.match(walltime):
        raise ValueError(f"walltime must be like 'HH:MM:SS' (or 'D-HH:MM:SS' on SLURM), got {walltime!r}.")
    _check_text("queue", queue, "normal", optional=True)
    _check_text("account", account, "myproject", optional=True)
    _check_text("numba_cache_dir", numba_cache_dir, "$TMPDIR/numba-cache")
    if isinstance(extra_prologue, str) or not isinstance(extra_prologue, (list, tuple)) \
            or not all(isinstance(line, str) for line in extra_prologue):
        raise ValueError(f"extra_prologue must be a list of shell lines, e.g. ['module load python'], got "
                         f"{extra_prologue!r}.")
    _check_text("interface", interface, "ib0", optional=True)
    _check_text("scheduler_host", scheduler_host, "login1", optional=True)


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

    Other parameters: ``cores`` (int >= 1) and ``processes`` (None, one per
    core, or an int in 1..cores) per job, ``memory`` (e.g. ``"16GB"``),
    ``walltime`` (``"HH:MM:SS"``), ``queue`` and ``account`` (str or None),
    ``numba_cache_dir`` (a path, expanded on the nodes) and
    ``extra_prologue`` (a list of shell lines).

    Returns
    -------
    dask_jobqueue.SLURMCluster or dask_jobqueue.PBSCluster
        Its temporary credential files are removed when it closes, when it is
        garbage collected and at interpreter exit.

    Raises
    ------
    ValueError, TypeError
        A bad argument (the message names it and the fix), or a ``security``
        without TLS.
    PermissionError
        ``shared_temp_directory`` is writable by group or others.
    """
    _check_arguments(system, cores, processes, memory, walltime, queue, account, numba_cache_dir, extra_prologue,
                     interface, scheduler_host)
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

    cls = _secure_class(SLURMCluster if system == "slurm" else PBSCluster)
    from daskdca.engine.clients import WORKER_MALLOC_ENVIRON

    # the allocator settings of daskdca's own LocalClusters, in the Dask config the workers' nannies read (Dask's
    # config from the environment: a literal dict, merged into its default pre-spawn environment)
    malloc = repr(dict(sorted(WORKER_MALLOC_ENVIRON.items())))
    prologue = [f"export NUMBA_CACHE_DIR={numba_cache_dir}", "export OMP_NUM_THREADS=1",
                f'export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON="{malloc}"', *extra_prologue]
    scheduler_options = {"dashboard_address": dashboard_address, "dashboard": dashboard_address is not None}
    if scheduler_host is not None:
        scheduler_options["host"] = scheduler_host
    shared = _private_directory(shared_temp_directory)
    full = os.path.expanduser(os.path.expandvars(shared))
    _remove_stale_credentials(full)
    # one folder per cluster, so that what this cluster wrote is removed as a whole and a killed driver's
    # folder is recognised by its host and pid
    name = f"daskdca-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.mkdir(os.path.join(full, name), 0o700)
    return cls(cores=cores, memory=memory, walltime=walltime, processes=processes or cores, queue=queue,
               account=account, job_script_prologue=prologue, security=security, protocol="tls://",
               shared_temp_directory=f"{shared.rstrip('/')}/{name}", interface=interface,
               scheduler_options=scheduler_options, credentials_folder=os.path.join(full, name))
