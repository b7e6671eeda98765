"""Acceptance on real LIBSVM data: every solver against LIBLINEAR.

For each (data set, lam, loss) LIBLINEAR runs once at tol 1e-12 with
``C = 1/(lam n)`` and no intercept.  A daskdca fit must then

* certify itself: the gap ``P(coef_) - D(dual_coef_)`` recomputed here
  (``D`` from ``dual_coef_`` alone) is ``>= 0`` and ``<= tol |P|``;
* be no worse than LIBLINEAR: ``P(coef_) - P_LL <= max(1e-6 P_LL, gap)``;
* agree with it: ``|P(coef_) - P_LL| <= 1e-6 P_LL`` whenever LIBLINEAR itself
  converged, which the certificate decides (``P_LL - D(dual_coef_)`` is an
  upper bound on LIBLINEAR's suboptimality).

Where LIBLINEAR stops early (hinge at large C: reuters and w8a at lam=1e-5)
its value is only an upper bound and the certificate is what proves
optimality; the test then checks ``D(dual_coef_) <= P_LL`` (weak duality
against an independent primal point).
"""

import numpy as np
import pytest

import daskdca

import reference_kernels as ref
from conftest import load_dataset
from references import liblinear, primal_objective

DATASETS = ["a9a", "w8a", "ijcnn1", "reuters"]
LOSSES = ["hinge", "squared_hinge", "logistic"]
TOL = 1e-7

# (data, lam, loss) whose certified tolerance is looser within the round
# budget of this suite; measured rounds and gaps are in benchmarks/RESULTS.md.
LOOSER_TOL = {
    ("reuters", 1e-5, "hinge"): 1e-4,
    ("w8a", 1e-5, "hinge"): 1e-6,
}

# Mini-batch SDCA within its default 1000 epochs (a round is one mini-batch):
# w8a, lam 1e-5, squared hinge reaches a relative gap of 3.0e-7.
MINIBATCH_LOOSER_TOL = {("w8a", 1e-5, "squared_hinge"): 1e-6}

# Heavy cases run only with ``-m slow`` (the default run and CI leave them out);
# SLOW_MINIBATCH only for mini-batch SDCA (serial SDCA stays in the default run).
SLOW = {("w8a", 1e-5, "hinge"), ("reuters", 1e-5, "hinge"), ("a9a", 1e-5, "squared_hinge")}
SLOW_MINIBATCH = {("w8a", 1e-5, "squared_hinge")}

_references = {}


def _reference(name, lam, loss):
    key = (name, lam, loss)
    if key not in _references:
        X, y = load_dataset(name)
        _references[key] = liblinear(X, y, lam, loss)[1]
    return _references[key]


def _cases(solvers):
    for name in DATASETS:
        for lam in (1e-3, 1e-5):
            for loss in LOSSES:
                for solver in solvers:
                    slow = (name, lam, loss) in SLOW or (solver == "minibatch_sdca"
                                                         and (name, lam, loss) in SLOW_MINIBATCH)
                    marks = [pytest.mark.slow] if slow else []
                    yield pytest.param(name, lam, loss, solver, marks=marks,
                                       id=f"{name}-{lam:g}-{loss}-{solver}")


def _check(name, lam, loss, solver, tol, max_rounds, **fit_args):
    X, y = load_dataset(name)
    p_ll = _reference(name, lam, loss)
    m = daskdca.fit(X, y, loss=loss, lam=lam, solver=solver, tol=tol, max_rounds=max_rounds, **fit_args)
    assert m.converged_
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    # the certificate: P(coef_) - D(dual_coef_), D with w(alpha) rebuilt here; coef_ is w(alpha) itself for the
    # plans whose primal point is the dual's (primal_from_dual), Catalyst's iterate for CoCoA+ inside Catalyst
    dual, w_alpha = ref.dual_objective(X, ys, m.dual_coef_, lam, loss)
    w = m.coef_.ravel()
    if m.plan_.primal_from_dual:
        np.testing.assert_allclose(w, w_alpha, rtol=1e-12, atol=1e-14)
    primal = primal_objective(X, ys, w, lam, loss)
    assert 0.0 <= primal - dual <= tol * abs(primal)
    assert primal == pytest.approx(m.primal_, rel=1e-12) and dual == pytest.approx(m.dual_, rel=1e-12)
    # no worse than LIBLINEAR beyond what our own certificate allows
    assert primal - p_ll <= max(1e-6 * p_ll, primal - dual)
    assert dual <= p_ll * (1 + 1e-12)
    liblinear_certified_gap = (p_ll - dual) / p_ll
    if liblinear_certified_gap <= 1e-7:  # LIBLINEAR converged: both must agree
        assert abs(primal - p_ll) <= 1e-6 * p_ll
    return m


@pytest.mark.parametrize("name, lam, loss, solver", _cases(["sdca", "minibatch_sdca"]))
def test_dual_coordinate_ascent_matches_liblinear(name, lam, loss, solver):
    tol = LOOSER_TOL.get((name, lam, loss), TOL)
    if solver == "minibatch_sdca":
        tol = max(tol, MINIBATCH_LOOSER_TOL.get((name, lam, loss), tol))
    # a mini-batch round is one mini-batch: None allows it 1000 epochs
    _check(name, lam, loss, solver, tol, max_rounds=5000 if solver == "sdca" else None)


@pytest.mark.parametrize("name, loss", [
    # a9a (the largest set, 21 s for logistic alone) runs with -m slow; the other sets check every loss
    pytest.param(d, l, marks=[pytest.mark.slow] if d == "a9a" else [])
    for d in DATASETS for l in LOSSES
])
def test_cocoa_plus_matches_liblinear(name, loss):
    """CoCoA+ on 2 partitions at lam = 1e-3, certified to 1e-6.

    A relative gap of 1e-6 is what implies ``P`` within 1e-6 of the optimum;
    a9a needs thousands of rounds for it.  At lam = 1e-5 CoCoA+ needs far more rounds than this suite can give: its
    round count grows like ``K sigma_k / (lam n)`` (Ma et al. 2015, Thm. 2),
    and on these correlated data sets the measured gap after 2000 rounds was
    1e-4 to 1e-1 (benchmarks/RESULTS.md).
    """
    _check(name, 1e-3, loss, "cocoa+", 1e-6, max_rounds=20000, n_partitions=2)
