"""Execute the example notebooks in examples/ and check examples/slurm_cluster.py.

    python .ci/run_examples.py                    # every examples/*.ipynb, then the SLURM script
    python .ci/run_examples.py 03_out_of_core     # only notebooks whose name contains this

Each notebook runs top to bottom in a fresh kernel of this Python (nbclient),
from the examples/ folder, with a time limit per cell; any error fails it.
Figures use matplotlib's Agg backend.  The committed notebooks must carry no
outputs (they are run here, not stored in git): one that does fails too.
The SLURM script is checked here to import without side effects, to answer
--help, and to stop with a clear message when no `sbatch` is on PATH.  Its real
run, batch jobs and a fit, is tests/test_slurm.py's (on the single-node SLURM
that .ci/run starts with .ci/slurm_up.sh before the tests), so it is not
repeated here even where `sbatch` is on PATH.  Prints the seconds each item took and closes with
'examples: N passed, M failed'; exits 1 when any failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SLURM_SCRIPT = EXAMPLES / "slurm_cluster.py"


def _has_outputs(nb):
    return [i for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]


def run_notebook(path, *, timeout, kernel_name, ipc_dir, save_dir=None):
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = nbformat.read(path, as_version=4)
    dirty = _has_outputs(nb)
    if dirty:
        raise AssertionError(f"{path.name}: code cells {dirty} carry outputs or execution counts; "
                             "commit notebooks with their outputs stripped")
    # the kernel talks over Unix sockets in a private folder, not over a local TCP port
    config = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(ipc_dir) / path.stem)}})
    client = NotebookClient(nb, config=config, timeout=timeout, kernel_name=kernel_name,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()  # raises CellExecutionError (with the cell and its traceback) on any error
    finally:
        if save_dir is not None:
            nbformat.write(nb, Path(save_dir) / path.name)


def check_slurm_script():
    # import without running anything
    spec = importlib.util.spec_from_file_location("slurm_cluster_example", SLURM_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main)
    run = subprocess.run([sys.executable, str(SLURM_SCRIPT), "--help"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and "usage:" in run.stdout, (run.returncode, run.stdout, run.stderr)
    if shutil.which("sbatch") is None:
        run = subprocess.run([sys.executable, str(SLURM_SCRIPT), "some.zarr"], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 2 and "sbatch" in run.stderr, (run.returncode, run.stdout, run.stderr)


def _python_kernel(directory):
    """A kernelspec named python3 for this interpreter, found before any other python3 (JUPYTER_PATH)."""
    spec_dir = Path(directory) / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (daskdca examples)", "language": "python"}))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(directory), os.environ.get("JUPYTER_PATH")]))
    return "python3"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="run only notebooks whose file name contains one of these")
    p.add_argument("--timeout", type=int, default=300, help="seconds per cell (default: %(default)s)")
    p.add_argument("--save", metavar="DIR", default=None,
                   help="also write the executed notebooks, with their outputs, into DIR (to look at them)")
    args = p.parse_args()

    os.environ.setdefault("MPLBACKEND", "Agg")  # set it to see the figures in --save output
    os.environ.setdefault("DASKDCA_DATA", str(ROOT.parent / "shared" / "data"))
    notebooks = sorted(EXAMPLES.glob("*.ipynb"))
    if args.names:
        notebooks = [nb for nb in notebooks if any(name in nb.name for name in args.names)]
    items = [(nb.name, run_notebook, nb) for nb in notebooks]
    if not args.names or any(name in SLURM_SCRIPT.name for name in args.names):
        items.append((SLURM_SCRIPT.name, None, None))

    passed = failed = 0
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as jupyter_dir, tempfile.TemporaryDirectory() as ipc_dir:
        os.chmod(ipc_dir, 0o700)
        kernel_name = _python_kernel(jupyter_dir)
        for name, runner, path in items:
            t0 = time.perf_counter()
            try:
                if runner is None:
                    check_slurm_script()
                else:
                    runner(path, timeout=args.timeout, kernel_name=kernel_name, ipc_dir=ipc_dir,
                           save_dir=args.save)
            except Exception:
                failed += 1
                print(f"FAILED {name} after {time.perf_counter() - t0:.1f} s", flush=True)
                traceback.print_exc()
            else:
                passed += 1
                print(f"ok     {name}  {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"examples: {passed} passed, {failed} failed")
    return 1 if failed or not items else 0


if __name__ == "__main__":
    sys.exit(main())
