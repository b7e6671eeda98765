"""The methods, one module each, and the registry the API and the tests read.

Adding a method: write ``methods/<name>.py`` with a settings dataclass that
has ``name``, ``capabilities`` and ``setup(info, ops) -> plan``, and a plan
with ``phases()``, ``init_global()``, ``init_local(part, ctx)``,
``model(state)``, ``dual_point(part, local, state)``, ``measures(round)``
(see :mod:`daskdca.methods.base`); then add the class to :data:`REGISTRY`.
The drivers, the API's error messages and the contract tests
(``tests/test_method_contract.py``) pick it up from there.
"""

from __future__ import annotations

import dataclasses

from daskdca.methods.base import Capabilities, Ctx, DataInfo, RoundReport
from daskdca.methods.cocoa import SDCA, CoCoAPlus
from daskdca.methods.crammer_singer import CrammerSingerSVM
from daskdca.methods.dual_free import AdaptiveDualFreeSDCA, AdaptiveDualFreeSDCAPlus, DualFreeSDCA
from daskdca.methods.l1 import L1SDCA
from daskdca.methods.minibatch import MinibatchSDCA
from daskdca.methods.multinomial import MultinomialSDCA
from daskdca.methods.multinomial_lbfgs import MultinomialLBFGS
from daskdca.methods.multiclass import OneVsRestMethod
from daskdca.methods.multinomial_newton import MultinomialNewton
from daskdca.methods.newton import Newton
from daskdca.methods.pegasos import MinibatchPegasos
from daskdca.methods.sdna import SDNA
from daskdca.methods.spdc import SPDC

__all__ = [
    "AdaptiveDualFreeSDCA",
    "AdaptiveDualFreeSDCAPlus",
    "DualFreeSDCA",
    "REGISTRY",
    "SOLVERS",
    "VARIANTS",
    "Capabilities",
    "CoCoAPlus",
    "CrammerSingerSVM",
    "Ctx",
    "DataInfo",
    "MinibatchPegasos",
    "MinibatchSDCA",
    "MultinomialLBFGS",
    "MultinomialNewton",
    "MultinomialSDCA",
    "Newton",
    "RoundReport",
    "SDCA",
    "SDNA",
    "SPDC",
    "capability_table",
    "check_supported",
    "takes_l1_ratio",
    "with_window_at_most",
]

#: Name -> settings class, for every method a user can ask for by name.
REGISTRY = {cls.name: cls for cls in (SDCA, CoCoAPlus, MinibatchSDCA, SDNA, DualFreeSDCA, AdaptiveDualFreeSDCA,
                                      AdaptiveDualFreeSDCAPlus, SPDC, MinibatchPegasos, Newton,
                                      MultinomialSDCA, MultinomialLBFGS, MultinomialNewton, CrammerSingerSVM)}
#: The same dict as :data:`REGISTRY`.
SOLVERS = REGISTRY

#: Settings other than a method's defaults that change its algorithm; the
#: contract tests run each of them beside the REGISTRY defaults.
VARIANTS = {
    "cocoa+(line_search)": lambda: CoCoAPlus(aggregation="line_search"),
    "cocoa+(no momentum)": lambda: CoCoAPlus(momentum=False),
    "cocoa+(plain)": lambda: CoCoAPlus(acceleration=None),
    "cocoa+(spdc)": lambda: CoCoAPlus(local_solver="spdc"),
    "cocoa+(threads)": lambda: CoCoAPlus(threads=2, inner_rounds=2),
    "cocoa+(threads, line search)": lambda: CoCoAPlus(threads=2, inner_rounds=2, inner_aggregation="line_search"),
    "minibatch_sdca(no shrinking)": lambda: MinibatchSDCA(shrinking=False),
    "minibatch_sdca(naive)": lambda: MinibatchSDCA(step="naive"),
    "minibatch_sdca(aggressive)": lambda: MinibatchSDCA(step="aggressive"),
    "minibatch_sdca(elastic net)": lambda: MinibatchSDCA(l1_ratio=0.5),
    "l1_sdca": L1SDCA,
}


def with_window_at_most(method, blocks):
    """``method`` with its out-of-core sweep holding at most ``blocks`` store blocks at once.

    Where the settings leave ``window_blocks`` to its default (None) and that
    default holds more than ``blocks`` (``CoCoAPlus(window_blocks=None)``:
    :data:`~daskdca.methods.cocoa.WINDOW_BLOCKS`), the same settings with
    ``window_blocks=blocks``; a one-vs-rest method's own method likewise; any
    other method, and a ``window_blocks`` the user gave, as they are.

    Parameters
    ----------
    method : method object
        The fit's settings.
    blocks : int
        The most blocks, at least 1.

    Returns
    -------
    method object
        ``method`` itself, or the bounded copy.
    """
    if isinstance(method, OneVsRestMethod):
        inner = with_window_at_most(method.method, blocks)
        return method if inner is method else dataclasses.replace(method, method=inner)
    if ("window_blocks" in {f.name for f in dataclasses.fields(method)} and method.window_blocks is None
            and method.resolved_window_blocks > blocks):
        return dataclasses.replace(method, window_blocks=int(blocks))
    return method


def capability_table():
    """One line per method: what it supports (used in error messages and the README).

    Returns
    -------
    str
        A line per method of :data:`REGISTRY`, sorted by name: its losses,
        partitions, cluster, shrinking, sample weights, one-vs-rest in one
        pass and how its gap falls.

    See Also
    --------
    Capabilities : What each line reads.
    """
    lines = []
    for name, cls in sorted(REGISTRY.items()):
        c = cls.capabilities
        lines.append(f"{name}: losses {', '.join(c.losses)}; "
                     f"{'many partitions' if c.many_partitions else 'one partition'}; "
                     f"{'cluster' if c.cluster else 'in memory only'}; "
                     f"shrinking {'yes' if c.shrinking else 'no'}; "
                     f"sample weights {'yes' if c.sample_weight else 'no'}; "
                     f"one-vs-rest in one pass {'yes' if c.multi_class else 'no'}; gap falls {c.gap_rate}")
    return "\n".join(lines)


def takes_l1_ratio(method_class):
    """Whether a method class has an ``l1_ratio`` setting (an L1 share of the penalty).

    Parameters
    ----------
    method_class : type
        A method's settings class (a value of :data:`REGISTRY`, or
        :class:`~daskdca.methods.l1.L1SDCA`).

    Returns
    -------
    bool
        True where ``method_class`` is a dataclass with an ``l1_ratio`` field.
    """
    return "l1_ratio" in getattr(method_class, "__dataclass_fields__", {})


def _supporting(predicate):
    return sorted(name for name, cls in REGISTRY.items() if predicate(cls.capabilities))


def check_supported(method, *, loss_name, n_partitions, on_cluster, sample_weight=False, multi_class=False):
    """Raise a ValueError that lists the alternatives when ``method`` cannot run this fit.

    Parameters
    ----------
    method : method object
        The method's settings; its ``capabilities`` are checked.
    loss_name : str
        The loss's name.
    n_partitions : int or None
        The partitions of the fit (anything but 1 needs
        ``many_partitions``).
    on_cluster : bool
        Whether the fit runs on a Dask cluster.
    sample_weight : bool, default=False
        Whether the fit has row weights (``sample_weight`` or
        ``class_weight``).
    multi_class : bool, default=False
        Whether the fit runs the one-vs-rest problems of more than two
        classes together.

    Raises
    ------
    ValueError
        When the method does not support the fit, naming the solvers that
        do.

    See Also
    --------
    capability_table : What each method supports.
    """
    c = method.capabilities
    # a method whose settings narrowed its class's capabilities (SDCA(l1_ratio=0.5)) is shown whole
    who = method.name if c == getattr(type(method), "capabilities", c) else method
    if multi_class and not c.multi_class:
        raise ValueError(
            f"solver={who!r} cannot fit the one-vs-rest problems of more than two classes together; the "
            f"solvers that can: {_supporting(lambda cap: cap.multi_class)} (CoCoAPlus with local_solver='sdca', "
            "and l1_ratio=0: the problems fitted together are certified with the L2 penalty). "
            "Use one of them, binarise y, or use daskdca.SDCAClassifier, which fits the problems one after "
            "another with any solver.")
    if sample_weight and not c.sample_weight:
        raise ValueError(
            f"solver={method!r} does not support sample_weight or class_weight (its steps solve the unweighted "
            f"problem); the solvers that do: {_supporting(lambda cap: cap.sample_weight)} "
            "(CoCoAPlus with local_solver='sdca').")
    if loss_name not in c.losses:
        raise ValueError(
            f"solver={who!r} does not support loss={loss_name!r} (it supports {list(c.losses)}); "
            f"solvers for {loss_name!r}: {_supporting(lambda cap: loss_name in cap.losses)}.")
    if on_cluster and not c.cluster:
        raise ValueError(
            f"solver={method.name!r} is serial and runs in memory only; on a cluster use one of "
            f"{_supporting(lambda cap: cap.cluster)} (or fit in-memory data without a client).")
    if n_partitions != 1 and not c.many_partitions:
        raise ValueError(
            f"solver={method.name!r} is serial and uses one partition, got n_partitions={n_partitions}; "
            f"use one of {_supporting(lambda cap: cap.many_partitions)} for partitions.")
