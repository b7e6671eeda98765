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
from daskdca.driver import InProcess, in_process_partitions, max_column_nnz
from daskdca.losses import get_loss
from daskdca.methods import REGISTRY, VARIANTS, CoCoAPlus, DataInfo
from daskdca.methods.multiclass import OneVsRestMethod
from daskdca.methods.protocol import Executor, Method, Plan, WarmStartPlan

SOURCE = Path(daskdca.__file__).parent
MAKERS = {
    **REGISTRY,
    **VARIANTS,
    "cocoa+(sdna)": lambda: CoCoAPlus(local_solver="sdna"),
    "cocoa+(catalyst)": lambda: CoCoAPlus(acceleration="catalyst"),
    "one-vs-rest(cocoa+)": lambda: OneVsRestMethod(CoCoAPlus(), 3),
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
