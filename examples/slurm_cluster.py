"""Fit a daskdca store on a SLURM (or PBS) cluster with dask-jobqueue, step by step.

Run it on a login node, with the store on a file system every compute node reads:

    python examples/slurm_cluster.py /scratch/$USER/train.zarr --jobs 4 --cores 8 --memory 32GB \\
        --loss logistic --lam 1e-6 --tol 1e-3 --checkpoint /scratch/$USER/ckpt

(make a store with `daskdca convert FILE.svm STORE` or `daskdca make-data STORE --rows ... --features ...`).
What it does:

1. `cluster/jobqueue_cluster.make_cluster` builds a SLURMCluster (or PBSCluster) whose
   workers speak TLS with temporary credentials and find a writable NUMBA_CACHE_DIR;
2. `cluster.scale(jobs=N)` submits N batch jobs, and the script waits for their workers;
3. `daskdca.fit(store, client=client, in_memory=False)` fits out of core. Its default
   `solver="auto"` picks the route from the data (`daskdca/routes.py`); only rounds across the
   workers honour `in_memory=False` (and `checkpoint=`), so it runs rounds: primal Newton's where
   the store has at most 256 features and the loss is smooth (logistic, squared, squared_hinge,
   smoothed_hinge), CoCoA+'s otherwise; `model.route_.reason` says which and why. It checkpoints
   every 10 rounds when `--checkpoint` is given (rerun with `--resume` after an interruption);
4. it prints the certificate and saves `coef_` to `--output` (an .npy file).

The dashboard listens on 127.0.0.1 only: `ssh -L 8787:localhost:8787 LOGIN-NODE`.
`cluster/fit_store.py` is the same fit as a maintained command with more options (and
`--system local`). Without a batch system (no `sbatch` / `qsub` on PATH) this script stops
with a message and exit status 2; importing it does nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

SUBMIT_COMMAND = {"slurm": "sbatch", "pbs": "qsub"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("store", help="daskdca store path or URL, readable from every compute node")
    p.add_argument("--system", choices=sorted(SUBMIT_COMMAND), default="slurm", help="batch system")
    p.add_argument("--jobs", type=int, default=2, help="batch jobs to submit")
    p.add_argument("--cores", type=int, default=4, help="cores per job (one worker process each)")
    p.add_argument("--memory", default="16GB", help="memory per job")
    p.add_argument("--walltime", default="01:00:00", help="walltime per job")
    p.add_argument("--queue", default=None, help="partition / queue")
    p.add_argument("--account", default=None, help="account to charge")
    p.add_argument("--numba-cache-dir", default="$TMPDIR/numba-cache",
                   help="writable folder on the nodes for numba's compiled kernels")
    p.add_argument("--loss", default="logistic")
    p.add_argument("--lam", type=float, default=1e-6, help="regularisation (C = 1/(lam n))")
    p.add_argument("--tol", type=float, default=1e-3, help="relative duality gap to stop at")
    p.add_argument("--max-rounds", type=int, default=1000)
    p.add_argument("--checkpoint", default=None, help="folder for the round state (shared file system)")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    p.add_argument("--output", default="coef.npy", help="where to save coef_")
    p.add_argument("--wait-seconds", type=float, default=1800, help="how long to wait for the first worker")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    submit = SUBMIT_COMMAND[args.system]
    if shutil.which(submit) is None:
        print(f"slurm_cluster.py: no `{submit}` on PATH, so there is no {args.system.upper()} scheduler to "
              f"submit workers to. Run this on the cluster's login node; to try daskdca on this machine, "
              f"use `python cluster/fit_store.py STORE --system local` or examples/01_quickstart.ipynb.",
              file=sys.stderr)
        return 2

    # Imported here so that importing this file (or --help) needs neither dask-jobqueue nor a cluster.
    import numpy as np
    from distributed import Client

    import daskdca

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
    from jobqueue_cluster import make_cluster

    # 1. The cluster: nothing is submitted yet; TLS credentials are made for this cluster.
    cluster = make_cluster(args.system, cores=args.cores, memory=args.memory, walltime=args.walltime,
                           queue=args.queue, account=args.account, numba_cache_dir=args.numba_cache_dir)
    print(cluster.job_script())  # the batch script each job runs

    with cluster, Client(cluster) as client:
        # 2. Submit the jobs and wait until a first worker has joined (queues can be slow).
        cluster.scale(jobs=args.jobs)
        client.wait_for_workers(1, timeout=args.wait_seconds)
        print(f"{len(client.scheduler_info()['workers'])} workers; dashboard {cluster.dashboard_link}")

        # 3. The fit, out of core: each worker re-reads its blocks of the store every round.
        t0 = time.perf_counter()
        model = daskdca.fit(args.store, loss=args.loss, lam=args.lam, tol=args.tol, max_rounds=args.max_rounds,
                            in_memory=False, client=client, checkpoint=args.checkpoint, resume=args.resume,
                            verbose=1)
        seconds = time.perf_counter() - t0

    # 4. The certificate: gap_ = P - D bounds P(coef_) - min P.
    print(model)
    print(f"{model.n_rounds_} rounds in {seconds:.0f} s; primal {model.primal_:.8g}, dual {model.dual_:.8g}, "
          f"relative gap {model.gap_ / abs(model.primal_):.2e} (tol {args.tol:g}), converged {model.converged_}")
    np.save(args.output, model.coef_)
    print(f"coef_ saved to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
