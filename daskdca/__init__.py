"""daskdca: L2-regularised linear models by stochastic dual coordinate ascent.

Solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` and certifies
the answer with the duality gap ``P(w) - D(alpha)``.
"""

from daskdca import datasets
from daskdca.advice import Advice, advise
from daskdca.api import LinearModel, fit
from daskdca.losses import (EpsilonInsensitive, Hinge, Huber, Logistic, Loss, SmoothedHinge, Squared,
                            SquaredEpsilonInsensitive, SquaredHinge)
from daskdca.driver import FitState, HistoryRecord
from daskdca.methods import (
    REGISTRY,
    SDCA,
    SDNA,
    SPDC,
    AdaptiveDualFreeSDCA,
    AdaptiveDualFreeSDCAPlus,
    CoCoAPlus,
    CrammerSingerSVM,
    DualFreeSDCA,
    MinibatchPegasos,
    MinibatchSDCA,
    MultinomialSDCA,
)
from daskdca.store import CSRStore, StoreError, convert_svmlight, open_store, rewrite_store, write_store
from daskdca import plot
from daskdca.regpath import RegularizationPath, path
from daskdca.estimators import SDCAClassifier, SDCAClassifierCV, SDCARegressor

__version__ = "0.1.0"

# The cluster errors live in daskdca.engine, the one module that imports Dask; they are
# looked up on first use so that `import daskdca` does not import distributed.
_ENGINE_ERRORS = ("ClusterLostError", "NoWorkersError", "SchedulerLostError")


def __getattr__(name):
    if name in _ENGINE_ERRORS:
        from daskdca import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'daskdca' has no attribute {name!r}")


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
