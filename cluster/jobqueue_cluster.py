"""dask-jobqueue clusters (SLURM, PBS) for daskdca on HPC.

Usage on a login node::

    from jobqueue_cluster import make_cluster
    cluster = make_cluster("slurm", cores=8, memory="32GB", walltime="02:00:00",
                           numba_cache_dir="/scratch/$USER/numba")
    cluster.scale(jobs=4)
    from distributed import Client
    client = Client(cluster)

or run ``python cluster/fit_store.py STORE --system slurm --jobs 4`` (see
that script).  The store must live on a file system every node can read
(Lustre/GPFS path or an object store URL); ``NUMBA_CACHE_DIR`` must be a
writable directory, node-local or shared (spec dask-zarr-numba.md §5).
"""

from __future__ import annotations

SYSTEMS = ("slurm", "pbs")


def make_cluster(system, *, cores=4, memory="16GB", walltime="01:00:00", processes=None, queue=None,
                 account=None, numba_cache_dir="$TMPDIR/numba-cache", extra_prologue=()):
    """A SLURMCluster or PBSCluster whose workers run daskdca's numba kernels.

    One worker process per core by default (daskdca runs one partition per
    Dask thread; the kernels release the GIL, so threads work too).
    """
    if system not in SYSTEMS:
        raise ValueError(f"unknown batch system {system!r}; use one of {list(SYSTEMS)}.")
    from dask_jobqueue import PBSCluster, SLURMCluster

    cls = SLURMCluster if system == "slurm" else PBSCluster
    prologue = [f"export NUMBA_CACHE_DIR={numba_cache_dir}", "export OMP_NUM_THREADS=1", *extra_prologue]
    return cls(cores=cores, memory=memory, walltime=walltime, processes=processes or cores, queue=queue,
               account=account, job_script_prologue=prologue)
