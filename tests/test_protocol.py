"""The declared protocols (daskdca.methods.protocol) against every registered method's plan and the executors.

Every entry of the registry, every registered variant and the other CoCoA+
local solvers is set up in process on a small problem; its plan must be a
:class:`~daskdca.methods.protocol.Plan` (a :class:`WarmStartPlan` where the
method says ``warm_start``), with every attribute the protocol lists.  The
protocols must list every attribute the drivers read from a plan and
everything ``run_rounds`` calls on an executor (read from the drivers' source).
"""

import re
import typing
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import daskdca
from daskdca.driver import InProcess, in_process_partitions
from daskdca.losses import get_loss
from daskdca.methods import REGISTRY, VARIANTS, CoCoAPlus, DataInfo
from daskdca.methods.base import PlanBase
from daskdca.methods.multiclass import OneVsRestMethod, OneVsRestPlan
from daskdca.methods.protocol import Executor, Method, Plan, WarmStartPlan
from daskdca.methods.spdc import SPDCPlan
from daskdca.problem import max_column_nnz

SOURCE = Path(daskdca.__file__).parent
MAKERS = {
    **REGISTRY,
    **VARIANTS,
    "cocoa+(sdna)": lambda: CoCoAPlus(local_solver="sdna"),
    "cocoa+(catalyst)": lambda: CoCoAPlus(acceleration="catalyst"),
    "one-vs-rest(cocoa+)": lambda: OneVsRestMethod(CoCoAPlus(), 3),
    "one-vs-rest(cocoa+, stopping at tol)": lambda: OneVsRestMethod(CoCoAPlus(), 3, tol=1e-3),
}


def _members(proto):
    """Every attribute and method a protocol (and the protocols it extends) declares."""
    names = set()
    for base in proto.__mro__:
        if base is proto or (getattr(base, "_is_protocol", False) and base is not typing.Protocol):
            names |= set(base.__dict__.get("__annotations__", {}))
            names |= {k for k, v in base.__dict__.items() if not k.startswith("_") and callable(v)}
    return names


def _problem(n_partitions):
    rng = np.random.default_rng(0)
    X = sp.random(60, 8, density=0.5, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.data.shape[0])
    y = np.where(rng.standard_normal(60) > 0, 1.0, -1.0)
    parts, order = in_process_partitions(X, y, n_partitions, 3)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts),
                    loss=get_loss("logistic"), lam=1e-3, max_column_nnz=max_column_nnz(X))
    return InProcess(parts, info, 3, order)


def _plans():
    for name, make in sorted(MAKERS.items()):
        method = make()
        for K in ((1, 2) if method.capabilities.many_partitions else (1,)):
            executor = _problem(K)
            yield name, K, method, executor, executor.setup(method)


PLANS = list(_plans())


@pytest.mark.parametrize("name, K, method, executor, plan", PLANS, ids=[f"{p[0]}-K{p[1]}" for p in PLANS])
def test_every_plan_is_a_plan(name, K, method, executor, plan):
    assert isinstance(method, Method)
    assert isinstance(plan, Plan)
    for attr in _members(Plan):
        assert hasattr(plan, attr), f"{type(plan).__name__} has no {attr}"
    if method.capabilities.warm_start:
        assert isinstance(plan, WarmStartPlan)
        for attr in _members(WarmStartPlan):
            assert hasattr(plan, attr), f"{type(plan).__name__} has no {attr}"
    # the optional hooks read with getattr(plan, name, default) have a value of the protocol's type
    assert plan.fused_rounds is None or callable(plan.fused_rounds)
    assert isinstance(plan.l1_ratio, float)
    assert isinstance(executor, Executor)


def test_the_plans_cover_every_kind_of_plan():
    kinds = {type(plan).__name__ for *_, plan in PLANS}
    assert kinds >= {"LocalSDCAPlan", "LineSearchPlan", "CatalystPlan", "SDNAPlan", "LocalSPDCPlan", "SPDCPlan",
                     "MinibatchPlan", "AggressivePlan", "DualFreePlan", "PegasosPlan", "OneVsRestPlan"}


def test_every_plan_subclasses_plan_base():
    for name, K, _, _, plan in PLANS:
        assert isinstance(plan, PlanBase), f"{name} (K={K}): {type(plan).__name__} is not a PlanBase"


def test_plan_base_leaves_spdc_and_one_vs_rest_as_they_were():
    """SPDCPlan and OneVsRestPlan subclass PlanBase without a change in what the drivers read from them."""
    spdc = next(plan for *_, plan in PLANS if type(plan) is SPDCPlan)
    assert spdc.fused_rounds.__func__ is SPDCPlan.fused_rounds  # its own fused rounds, not PlanBase's None
    assert spdc.l1_ratio == 0.0 and spdc.name == "spdc" and [p.name for p in spdc.phases()] == ["round"]
    assert [spdc.measures(r) for r in range(4)] == [r % spdc.eval_every == 0 for r in range(4)]
    ovr = next(plan for *_, plan in PLANS if type(plan) is OneVsRestPlan)
    assert ovr.fused_rounds is None and ovr.l1_ratio == 0.0 and ovr.name == ovr.base.name
    # one-vs-rest keeps its own warm start: the base plan's, problem by problem
    assert OneVsRestPlan.init_global_from is not PlanBase.init_global_from
    assert OneVsRestPlan.init_local_from is not PlanBase.init_local_from
    w = np.arange(3.0 * ovr.d).reshape(3, ovr.d)
    np.testing.assert_array_equal(ovr.init_global_from(w).current.w, w)
    assert not ovr.init_global_from(w).stopped.any()
    # SPDC still cannot start from given duals: daskdca.fit refuses before any plan is built
    assert not REGISTRY["spdc"].capabilities.warm_start
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((20, 3)), np.where(rng.standard_normal(20) > 0, 1, -1)
    with pytest.raises(ValueError, match="solver='spdc' cannot start from given dual variables"):
        daskdca.fit(X, y, loss="logistic", lam=0.1, solver="spdc", dual_init=np.zeros(20))


def _driver_sources():
    files = [SOURCE / "driver.py", SOURCE / "engine.py", *sorted((SOURCE / "engine").glob("*.py"))]
    return {path: path.read_text() for path in files if path.exists()}


def test_the_plan_protocol_lists_everything_the_drivers_read():
    read = set()
    for text in _driver_sources().values():
        read |= set(re.findall(r"\bplan\.(\w+)", text)) | set(re.findall(r"_plan\.(\w+)", text))
        read |= set(re.findall(r"getattr\(plan, \"(\w+)\"", text))
    assert read and read <= _members(WarmStartPlan), read - _members(WarmStartPlan)


def test_the_executor_protocol_lists_what_run_rounds_calls():
    text = (SOURCE / "driver.py").read_text()
    called = set(re.findall(r"\bexecutor\.(\w+)", text)) | set(re.findall(r"_executor\.(\w+)", text))
    assert called and called <= _members(Executor), called - _members(Executor)


def test_the_dask_executor_has_the_executor_protocol():
    pytest.importorskip("distributed")
    from daskdca.engine import DaskExecutor

    for attr in _members(Executor):
        assert hasattr(DaskExecutor, attr), f"DaskExecutor has no {attr}"
