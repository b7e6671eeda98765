"""The benchmark harness's bookkeeping: time to a target, the ladder, the ratios it reports.

The harness itself runs in CI in its quick mode (``.ci/run``); these tests
check, on made-up runs, that the numbers it prints are the ones it measured.
"""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

SUITE = Path(__file__).resolve().parents[1] / "benchmarks" / "suite.py"


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("bench_suite", SUITE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.fixture
def problem(suite):
    # P(w) = mean(0.5 (x_i.w - y_i)^2) + lam/2 w^2 with one feature: P* at w* = 1/(1 + lam)
    X = sp.csr_matrix(np.ones((4, 1)))
    p = suite.Problem("toy", X, np.ones(4), "squared", 1.0)
    p.p_star = p.objective(np.array([0.5]))
    return p


def _w_with_subopt(problem, target):
    """A one-feature w whose relative suboptimality is ``target`` (P is quadratic in w)."""
    # P(w) = 0.5 (w - 1)^2 + 0.5 w^2 = w^2 - w + 0.5, P* = 0.25 at w = 0.5: P - P* = (w - 0.5)^2
    return np.array([0.5 + math.sqrt(target * problem.p_star)])


def test_time_to_takes_the_fastest_point_that_reaches_the_target(suite, problem):
    points = [(3.0, 30.0, problem.p_star * (1 + 0.9e-3)), (1.0, 10.0, problem.p_star * (1 + 0.9e-2)),
              (5.0, 50.0, problem.p_star * (1 + 1e-7))]
    run = suite.Run("x", 0, points, 0.0)
    assert run.time_to(problem, 1e-2) == 1.0
    assert run.time_to(problem, 1e-3) == 3.0
    assert run.time_to(problem, 1e-6) == 5.0
    assert math.isnan(run.time_to(problem, 1e-8))
    assert run.epochs_to(problem, 1e-3) == 30.0
    assert run.best(problem) == pytest.approx(1e-7)


def test_ladder_stops_at_the_first_rung_that_reaches_1e6(suite, problem):
    subopts = {1: 1e-2, 2: 1e-5, 3: 0.9e-6, 4: 1e-12}
    seen = []

    def fit_one(rung):
        seen.append(rung)
        return _w_with_subopt(problem, subopts[rung]), float(rung)

    points, _ = suite.ladder(problem, fit_one, (1, 2, 3, 4), budget=1e9)
    assert seen == [1, 2, 3]
    assert [p[1] for p in points] == [1.0, 2.0, 3.0]
    np.testing.assert_allclose([problem.subopt(p[2]) for p in points], [1e-2, 1e-5, 0.9e-6], rtol=1e-6)


def test_ladder_stops_when_the_budget_is_spent(suite, problem):
    seen = []

    def fit_one(rung):
        seen.append(rung)
        return _w_with_subopt(problem, 1e-2), float(rung)

    suite.ladder(problem, fit_one, (1, 2, 3), budget=0.0)
    assert seen == [1]


def test_report_gives_medians_ratios_and_dashes(suite, problem):
    problem.reference = {"values": {"closed form": problem.p_star}, "daskdca dual (lower bound)": problem.p_star,
                         "daskdca certified": True, "seconds": 0.1}
    good = problem.p_star * (1 + 1e-7)
    runs = []
    for rep, (mine, theirs) in enumerate([(1.0, 2.0), (2.0, 2.0), (3.0, 1.0)]):
        runs.append(suite.Run("daskdca-sdca", rep, [(mine, 1.0, good)], 1.0))
        # the default call has rows of its own, and is not a candidate of the best method (it would win the third rep)
        runs.append(suite.Run("daskdca-auto", rep, [(2 * theirs, 1.0, good)], 1.0))
        runs.append(suite.Run("peer", rep, [(theirs, 1.0, good)], 1.0))
        runs.append(suite.Run("stuck", rep, [(0.5, 1.0, problem.p_star * 1.5)], 1.0))
    meta = {"command": "c", "date": "d", "machine": "m", "versions": "v", "reps": 3, "budget": 1.0, "wall": 60.0,
            "throughput_lam": 1e-4}
    text = suite.report([problem], {problem.key: runs}, [], meta, None, {})
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    # median (min-max) of the per-rep times
    assert "| daskdca-sdca | 2 (1-3) |" in rows["daskdca-sdca"]
    assert rows["stuck"].startswith("| stuck | - | - | - | - |")
    ratio_rows = [line for line in text.splitlines() if "| daskdca in memory, best method | peer |" in line]
    # per-rep ratios 0.5, 1 and 3: median 1 (0.5-3)
    assert ratio_rows and "| 1x (0.5-3) |" in ratio_rows[0]
    auto_rows = [line for line in text.splitlines() if "| daskdca auto, in memory | peer |" in line]
    assert auto_rows and "| 2x (2-2) |" in auto_rows[0]
    stuck_rows = [line for line in text.splitlines() if "| daskdca in memory, best method | stuck |" in line]
    assert stuck_rows and stuck_rows[0].endswith("| - | - | - | - |")
    assert text.startswith(suite.MARK_BEGIN) and text.rstrip().endswith(suite.MARK_END)


def test_unknown_data_set_is_refused(suite):
    with pytest.raises(SystemExit):
        suite.parse_args(["--only", "a9a,nosuchset"])
