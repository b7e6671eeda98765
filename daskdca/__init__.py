"""daskdca: L2-regularised linear models by stochastic dual coordinate ascent.

Solves ``min_w P(w) = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` and certifies
the answer with the duality gap ``P(w) - D(alpha)``.
"""

from daskdca import datasets
from daskdca.api import LinearModel, fit
from daskdca.losses import Hinge, Logistic, Loss, SmoothedHinge, Squared, SquaredHinge
from daskdca.driver import FitState, HistoryRecord
from daskdca.methods import (
    REGISTRY,
    SDCA,
    SDNA,
    SPDC,
    AdaptiveDualFreeSDCA,
    AdaptiveDualFreeSDCAPlus,
    CoCoAPlus,
    DualFreeSDCA,
    MinibatchPegasos,
    MinibatchSDCA,
)
from daskdca.store import CSRStore, StoreError, convert_svmlight, open_store, rewrite_store, write_store
from daskdca import plot
from daskdca.regpath import RegularizationPath, path
from daskdca.estimators import SDCAClassifier, SDCAClassifierCV, SDCARegressor

__version__ = "0.1.0"

__all__ = [
    "AdaptiveDualFreeSDCA",
    "AdaptiveDualFreeSDCAPlus",
    "CSRStore",
    "CoCoAPlus",
    "DualFreeSDCA",
    "Hinge",
    "HistoryRecord",
    "LinearModel",
    "Logistic",
    "Loss",
    "MinibatchPegasos",
    "MinibatchSDCA",
    "SDCA",
    "SDNA",
    "SPDC",
    "SDCAClassifier",
    "SDCAClassifierCV",
    "SDCARegressor",
    "FitState",
    "REGISTRY",
    "RegularizationPath",
    "SmoothedHinge",
    "Squared",
    "SquaredHinge",
    "StoreError",
    "convert_svmlight",
    "datasets",
    "fit",
    "open_store",
    "path",
    "plot",
    "rewrite_store",
    "write_store",
]
