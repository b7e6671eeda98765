"""Fit a daskdca store on an HPC cluster started with dask-jobqueue.

    python cluster/fit_store.py /shared/data/url.zarr --system slurm --jobs 4 \
        --loss logistic --lam 1e-6 --tol 1e-3 --checkpoint /shared/ckpt/url

The same script runs on a workstation with ``--system local`` (a LocalCluster).
With ``--checkpoint`` a killed driver can be restarted with ``--resume``.

Every cluster it starts speaks TLS with temporary credentials (a local port
is reachable by every user of the machine, and a scheduler port runs any
code it is sent), and its dashboard listens on 127.0.0.1 only: reach it with
``ssh -L 8787:localhost:8787 login-node``.  The local cluster's scheduler
listens on 127.0.0.1 too.
"""

from __future__ import annotations

import argparse
import logging

from distributed import Client, LocalCluster
from distributed.security import Security

import daskdca
from jobqueue_cluster import DEFAULT_DASHBOARD_ADDRESS, DEFAULT_SHARED_TEMP_DIRECTORY, SYSTEMS, make_cluster


def make_local_cluster(n_workers, *, dashboard_address=DEFAULT_DASHBOARD_ADDRESS):
    """A LocalCluster on 127.0.0.1 over TLS with temporary credentials, dashboard on 127.0.0.1."""
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, host="127.0.0.1", protocol="tls",
                        security=Security.temporary(), dashboard_address=dashboard_address)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", help="daskdca store path or URL (readable from every node)")
    p.add_argument("--system", choices=("local",) + SYSTEMS, default="local")
    p.add_argument("--jobs", type=int, default=2, help="batch jobs to start")
    p.add_argument("--cores", type=int, default=4, help="cores per job")
    p.add_argument("--memory", default="16GB", help="memory per job")
    p.add_argument("--walltime", default="01:00:00")
    p.add_argument("--numba-cache-dir", default="$TMPDIR/numba-cache",
                   help="writable folder on the nodes for numba's compiled kernels (default: %(default)s)")
    p.add_argument("--loss", default="logistic")
    p.add_argument("--lam", type=float, default=1e-6)
    p.add_argument("--solver", default="cocoa+", choices=("cocoa+", "minibatch_sdca"))
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--max-rounds", type=int, default=1000)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--dashboard-address", default=DEFAULT_DASHBOARD_ADDRESS,
                   help="where the dashboard listens (default: %(default)s, localhost only; tunnel it over ssh)")
    p.add_argument("--shared-temp-directory", default=DEFAULT_SHARED_TEMP_DIRECTORY,
                   help="folder the compute nodes read, for the workers' temporary TLS credentials "
                        "(default: %(default)s)")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    if args.system == "local":
        cluster = make_local_cluster(args.jobs, dashboard_address=args.dashboard_address)
    else:
        cluster = make_cluster(args.system, cores=args.cores, memory=args.memory, walltime=args.walltime,
                               numba_cache_dir=args.numba_cache_dir, dashboard_address=args.dashboard_address,
                               shared_temp_directory=args.shared_temp_directory)
        cluster.scale(jobs=args.jobs)
    with cluster, Client(cluster) as client:
        model = daskdca.fit(args.store, loss=args.loss, lam=args.lam, solver=args.solver, tol=args.tol,
                            max_rounds=args.max_rounds, client=client, checkpoint=args.checkpoint,
                            resume=args.resume, verbose=1)
    print(model)


if __name__ == "__main__":
    main()
