"""Fit a daskdca store on an HPC cluster started with dask-jobqueue.

    python cluster/fit_store.py /shared/data/url.zarr --system slurm --jobs 4 \
        --loss logistic --lam 1e-6 --tol 1e-3 --checkpoint /shared/ckpt/url

The same script runs on a workstation with ``--system local`` (a LocalCluster).
With ``--checkpoint`` a killed driver can be restarted with ``--resume``.
"""

from __future__ import annotations

import argparse
import logging

from distributed import Client, LocalCluster

import daskdca
from jobqueue_cluster import SYSTEMS, make_cluster


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", help="daskdca store path or URL (readable from every node)")
    p.add_argument("--system", choices=("local",) + SYSTEMS, default="local")
    p.add_argument("--jobs", type=int, default=2, help="batch jobs to start")
    p.add_argument("--cores", type=int, default=4, help="cores per job")
    p.add_argument("--memory", default="16GB", help="memory per job")
    p.add_argument("--walltime", default="01:00:00")
    p.add_argument("--loss", default="logistic")
    p.add_argument("--lam", type=float, default=1e-6)
    p.add_argument("--solver", default="cocoa+", choices=("cocoa+", "minibatch_sdca"))
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--max-rounds", type=int, default=1000)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    if args.system == "local":
        cluster = LocalCluster(n_workers=args.jobs, threads_per_worker=1)
    else:
        cluster = make_cluster(args.system, cores=args.cores, memory=args.memory, walltime=args.walltime)
        cluster.scale(jobs=args.jobs)
    with cluster, Client(cluster) as client:
        model = daskdca.fit(args.store, loss=args.loss, lam=args.lam, solver=args.solver, tol=args.tol,
                            max_rounds=args.max_rounds, client=client, checkpoint=args.checkpoint,
                            resume=args.resume, verbose=1)
    print(model)


if __name__ == "__main__":
    main()
