"""Peak memory of streaming svmlight -> zarr conversion against a whole-file load.

Usage::

    python benchmarks/convert_memory.py [--rows 400000] [--chunk-mb 8] [--workdir /tmp/daskdca-bench]

Writes a synthetic LIBSVM text file (Zipf features, ~60 nnz per row), then in
fresh subprocesses measures peak resident memory (``ru_maxrss``) of

* ``baseline``: importing numpy, scipy, scikit-learn, zarr and daskdca;
* ``convert``: ``daskdca.store.convert_svmlight`` with ``chunk_bytes`` set;
* ``load``: ``sklearn.datasets.load_svmlight_file`` of the whole file.

It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

CHILD = r"""
import resource, sys, time
import numpy, scipy.sparse, sklearn.datasets, zarr, daskdca.store
mode, path, out, chunk = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t0 = time.perf_counter()
if mode == "convert":
    daskdca.store.convert_svmlight(path, out, chunk_bytes=chunk, block_rows=32768)
elif mode == "load":
    sklearn.datasets.load_svmlight_file(path)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - t0)
"""


def write_text(path, rows, n_features, nnz_per_row, seed=0):
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, n_features + 1, dtype=float) ** -1.1)
    cdf /= cdf[-1]
    with open(path, "w") as f:
        for start in range(0, rows, 10000):
            lines = []
            for _ in range(min(10000, rows - start)):
                k = 1 + rng.poisson(nnz_per_row - 1)
                cols = np.unique(np.searchsorted(cdf, rng.random(k))) + 1
                vals = rng.random(cols.shape[0])
                label = "+1" if rng.random() < 0.5 else "-1"
                lines.append(label + " " + " ".join(f"{c}:{v:.6f}" for c, v in zip(cols, vals)))
            f.write("\n".join(lines) + "\n")


def run(mode, path, out, chunk):
    res = subprocess.run([sys.executable, "-c", CHILD, mode, path, out, str(chunk)],
                         capture_output=True, text=True, check=True)
    kib, seconds = res.stdout.split()
    return int(kib) / 1024, float(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--features", type=int, default=100_000)
    parser.add_argument("--nnz-per-row", type=int, default=60)
    parser.add_argument("--chunk-mb", type=float, default=8.0)
    parser.add_argument("--workdir", default="/tmp/daskdca-bench")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    path = os.path.join(args.workdir, "synthetic.svm")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        write_text(path, args.rows, args.features, args.nnz_per_row)
        print(f"wrote {path} in {time.perf_counter() - t0:.0f} s")
    size_mb = os.path.getsize(path) / 2**20
    chunk = int(args.chunk_mb * 2**20)
    base, _ = run("none", path, "", chunk)
    conv, t_conv = run("convert", path, os.path.join(args.workdir, "synthetic.zarr"), chunk)
    load, t_load = run("load", path, "", chunk)
    print(f"text file: {size_mb:.0f} MiB ({size_mb / args.chunk_mb:.0f}x the chunk of {args.chunk_mb:g} MiB)")
    print("| run | peak RSS MiB | above baseline MiB | seconds |")
    print("|---|---:|---:|---:|")
    print(f"| baseline (imports) | {base:.0f} | 0 | - |")
    print(f"| convert_svmlight, chunk {args.chunk_mb:g} MiB | {conv:.0f} | {conv - base:.0f} | {t_conv:.1f} |")
    print(f"| load_svmlight_file (whole file) | {load:.0f} | {load - base:.0f} | {t_load:.1f} |")


if __name__ == "__main__":
    main()
