"""The package's public names, imported on first use (``daskdca/__init__.py``), and what a Dask worker imports.

A worker imports the modules its tasks name: the kernels, the methods and the engine.  Before the names were
lazy, every worker start imported the estimators, scikit-learn (scipy.stats with it) and pandas, about 1.3 s
here (benchmarks/RESULTS.md, "Worker start: the imports a worker needs").
"""

import importlib
import subprocess
import sys

import numpy as np
import pytest

import daskdca

# scikit-learn, and the modules of this package that import it or pandas (what other packages import is theirs)
HEAVY = ("sklearn", "daskdca.api", "daskdca.estimators", "daskdca.datasets")


def test_every_public_name_is_its_modules_own_object():
    assert set(daskdca._SOURCES) | set(daskdca._SUBMODULES) == set(daskdca.__all__)
    for name in daskdca.__all__:
        source = daskdca._SOURCES.get(name)
        expected = (getattr(importlib.import_module(source), name) if source is not None
                    else importlib.import_module(f"daskdca.{name}"))
        assert getattr(daskdca, name) is expected, name
    assert set(daskdca.__all__) <= set(dir(daskdca))
    assert daskdca.methods.sdca.MOVABLE_GAP_SHARE > 0  # a submodule by attribute, as before
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        daskdca.not_a_name


def test_import_daskdca_and_a_workers_modules_import_neither_scikit_learn_nor_the_estimators():
    code = ("import sys, daskdca; before = [m for m in %r if m in sys.modules]; "
            "import daskdca.engine, daskdca.methods, daskdca.partitions, daskdca.kernels; daskdca.kernels.warm_up(); "
            "print(before, [m for m in %r if m in sys.modules], 'distributed' in sys.modules)") % (HEAVY + ("distributed",), HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "[]", "True"], out.stdout  # the engine imports distributed, nothing else heavy


def test_workers_of_a_rounds_fit_do_not_import_scikit_learn():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = np.where(X @ rng.standard_normal(5) > 0, 1.0, -1.0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        model = daskdca.fit(X, y, lam=1e-2, solver="cocoa+", client=client)
        assert model.route_.name == "rounds" and model.gap_ <= 1e-6 * abs(model.primal_)
        loaded = client.run(lambda: [m for m in HEAVY if m in sys.modules])
    assert loaded and all(mods == [] for mods in loaded.values()), loaded


def test_the_command_lines_parser_imports_no_fitting_module():
    """``daskdca --help`` builds the parser only: the fitting and prediction modules (scikit-learn with them) are
    imported by the command that runs."""
    code = ("import sys; from daskdca.cli import build_parser; build_parser(); "
            "print([m for m in %r if m in sys.modules])") % (HEAVY + ("daskdca.prediction", "daskdca.saved_model"),)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"], out.stdout


def test_daskdca_fit_imports_no_scikit_learn():
    """``daskdca.fit`` on arrays (no warning to give) imports neither scikit-learn nor pandas: about 1 s of a first
    fit in a process."""
    code = ("import sys, numpy as np, daskdca; rng = np.random.default_rng(0); X = rng.standard_normal((200, 5)); "
            "y = np.where(X @ rng.standard_normal(5) > 0, 1, -1); m = daskdca.fit(X, y, lam=1e-2); "
            "print(m.converged_, [m for m in ('sklearn', 'pandas') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "[]"], out.stdout
