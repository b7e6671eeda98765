"""daskdca: L2-regularised linear models by stochastic dual coordinate ascent.

Solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` and certifies
the answer with the duality gap ``P(w) - D(alpha)``.

The public names below are imported on first use (PEP 562, a module
``__getattr__``): a Dask worker imports the kernels, methods and engine that
its tasks name, not the estimators and scikit-learn, the data sets and
pandas, which took it about 1.3 s of every worker start here
(benchmarks/RESULTS.md, "Worker start: the imports a worker needs").
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: each public name and the module that defines it
_SOURCES = {
    "Advice": "daskdca.advice", "advise": "daskdca.advice",
    "LinearModel": "daskdca.api", "fit": "daskdca.api",
    **{name: "daskdca.losses" for name in ("EpsilonInsensitive", "Hinge", "Huber", "Logistic", "Loss",
                                           "SmoothedHinge", "Squared", "SquaredEpsilonInsensitive",
                                           "SquaredHinge")},
    "FitState": "daskdca.driver", "HistoryRecord": "daskdca.driver",
    **{name: "daskdca.methods" for name in ("REGISTRY", "SDCA", "SDNA", "SPDC", "AdaptiveDualFreeSDCA",
                                            "AdaptiveDualFreeSDCAPlus", "CoCoAPlus", "CrammerSingerSVM",
                                            "DualFreeSDCA", "MinibatchPegasos", "MinibatchSDCA",
                                            "MultinomialSDCA")},
    **{name: "daskdca.store" for name in ("CSRStore", "StoreError", "convert_svmlight", "open_store",
                                          "rewrite_store", "write_store")},
    "RegularizationPath": "daskdca.regpath", "path": "daskdca.regpath",
    **{name: "daskdca.estimators" for name in ("SDCAClassifier", "SDCAClassifierCV", "SDCARegressor")},
    # the cluster errors live in daskdca.engine, the one package that imports Dask
    **{name: "daskdca.engine" for name in ("ClusterLostError", "NoWorkersError", "SchedulerLostError",
                                           "WorkersLostError")},
}
#: public submodules, imported on first use as the names are
_SUBMODULES = ("datasets", "plot")

if TYPE_CHECKING:  # what static tools and IDEs read: the same names, imported at once
    from daskdca import datasets, plot
    from daskdca.advice import Advice, advise
    from daskdca.api import LinearModel, fit
    from daskdca.driver import FitState, HistoryRecord
    from daskdca.engine import ClusterLostError, NoWorkersError, SchedulerLostError, WorkersLostError
    from daskdca.estimators import SDCAClassifier, SDCAClassifierCV, SDCARegressor
    from daskdca.losses import (EpsilonInsensitive, Hinge, Huber, Logistic, Loss, SmoothedHinge, Squared,
                                SquaredEpsilonInsensitive, SquaredHinge)
    from daskdca.methods import (REGISTRY, SDCA, SDNA, SPDC, AdaptiveDualFreeSDCA, AdaptiveDualFreeSDCAPlus,
                                 CoCoAPlus, CrammerSingerSVM, DualFreeSDCA, MinibatchPegasos, MinibatchSDCA,
                                 MultinomialSDCA)
    from daskdca.regpath import RegularizationPath, path
    from daskdca.store import CSRStore, StoreError, convert_svmlight, open_store, rewrite_store, write_store


def __getattr__(name):
    """A public name (or submodule) imported on its first use, then kept in this module's namespace."""
    if name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name]), name)
    elif name in _SUBMODULES or (not name.startswith("__") and importlib.util.find_spec(f"daskdca.{name}")):
        value = importlib.import_module(f"daskdca.{name}")
    else:
        raise AttributeError(f"module 'daskdca' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    """The public names and the version, not this module's own imports."""
    return sorted(set(__all__) | {"__version__"})


__all__ = [
    "Advice",
    "AdaptiveDualFreeSDCA",
    "AdaptiveDualFreeSDCAPlus",
    "CSRStore",
    "ClusterLostError",
    "CoCoAPlus",
    "CrammerSingerSVM",
    "DualFreeSDCA",
    "EpsilonInsensitive",
    "Hinge",
    "Huber",
    "HistoryRecord",
    "LinearModel",
    "Logistic",
    "Loss",
    "MinibatchPegasos",
    "MinibatchSDCA",
    "MultinomialSDCA",
    "NoWorkersError",
    "SDCA",
    "SDNA",
    "SPDC",
    "SDCAClassifier",
    "SDCAClassifierCV",
    "SDCARegressor",
    "SchedulerLostError",
    "WorkersLostError",
    "FitState",
    "REGISTRY",
    "RegularizationPath",
    "SmoothedHinge",
    "Squared",
    "SquaredEpsilonInsensitive",
    "SquaredHinge",
    "StoreError",
    "convert_svmlight",
    "advise",
    "datasets",
    "fit",
    "open_store",
    "path",
    "plot",
    "rewrite_store",
    "write_store",
]
