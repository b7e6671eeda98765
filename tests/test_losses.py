"""Losses: values, derivatives, conjugates and the closed-form dual step.

The dual step is checked against brute-force 1-D maximisation on thousands
of random cases per loss, as the core issue asks.
"""

import math

import numpy as np
import pytest
import scipy.optimize

from daskdca.losses import (
    LOSSES,
    Hinge,
    Logistic,
    SmoothedHinge,
    Squared,
    SquaredHinge,
    get_loss,
)

import reference_kernels as ref

ALL_LOSSES = [Hinge(), SmoothedHinge(gamma=0.5), SmoothedHinge(gamma=2.0), SquaredHinge(), Logistic(), Squared()]


def _gamma(loss):
    return getattr(loss, "gamma", 1.0)


def _random_cases(loss, size, rng):
    """Labels, feasible alphas, curvatures (some zero) and margins."""
    if loss.is_classification:
        y = rng.choice([-1.0, 1.0], size)
    else:
        y = rng.normal(scale=3.0, size=size)
    lo, hi = loss.dual_domain
    if loss.name == "squared":
        b = rng.normal(scale=3.0, size=size)
        alpha = b
    else:
        hi_draw = 5.0 if math.isinf(hi) else hi
        b = rng.uniform(lo, hi_draw, size)
        b[: size // 10] = lo  # at the bounds
        if not math.isinf(hi):
            b[size // 10: size // 5] = hi
        if loss.name == "logistic":
            b = np.clip(b, 1e-12, 1 - 1e-12)
        alpha = y * b
    q = np.exp(rng.uniform(-6, 6, size))
    q[rng.random(size) < 0.05] = 0.0
    m = rng.normal(scale=3.0, size=size)
    return y, alpha, q, m


def _h(loss, y, alpha, q, m, delta):
    """The 1-D dual objective of one coordinate (in plain Python)."""
    return -ref.conjugate(loss.name, y, alpha + delta, _gamma(loss)) - 0.5 * q * delta**2 - m * delta


def _brute_force_max(loss, y, alpha, q, m, around):
    """Maximise the concave 1-D objective by bounded scalar search on a wide bracket."""
    lo, hi = loss.dual_domain
    if loss.is_classification:
        # feasible interval of delta for b = y (alpha + delta) in [lo, hi]
        b_lo, b_hi = lo, hi
        width = 50.0 * (1.0 + abs(around))
        b_hi = min(b_hi, y * alpha + width) if math.isinf(b_hi) else b_hi
        d1, d2 = y * b_lo - alpha, y * b_hi - alpha
        left, right = min(d1, d2), max(d1, d2)
    else:
        width = 50.0 * (1.0 + abs(around))
        left, right = around - width, around + width

    def neg(d):
        v = _h(loss, y, alpha, q, m, d)
        return -v if math.isfinite(v) else 1e300

    res = scipy.optimize.minimize_scalar(neg, bounds=(left, right), method="bounded",
                                         options={"xatol": 1e-12, "maxiter": 2000})
    best = -res.fun
    for d in (left, right):  # the maximiser may sit on a bound
        best = max(best, _h(loss, y, alpha, q, m, d))
    return best


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=lambda l: f"{l.name}-{_gamma(l)}")
def test_dual_step_matches_brute_force(loss):
    rng = np.random.default_rng(7)
    y, alpha, q, m = _random_cases(loss, 3000, rng)
    delta = loss.dual_step(y, alpha, q, m)
    worst = 0.0
    for i in range(len(y)):
        ours = _h(loss, y[i], alpha[i], q[i], m[i], delta[i])
        assert math.isfinite(ours), f"step left the dual domain at case {i}"
        if q[i] == 0.0 and loss.name in ("hinge",):
            # linear objective: maximiser is b = 1 for a zero row (m = 0 there)
            continue
        best = _brute_force_max(loss, y[i], alpha[i], q[i], m[i], delta[i])
        worst = max(worst, (best - ours) / (1.0 + abs(best)))
    assert worst <= 1e-9


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=lambda l: f"{l.name}-{_gamma(l)}")
def test_dual_step_matches_reference_formula(loss):
    rng = np.random.default_rng(3)
    y, alpha, q, m = _random_cases(loss, 500, rng)
    ours = alpha + loss.dual_step(y, alpha, q, m)
    theirs = np.array([ref.dual_update(loss.name, y[i], alpha[i], q[i], m[i], _gamma(loss))
                       for i in range(len(y))])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


def test_hinge_zero_row_goes_to_upper_bound():
    # x_i = 0 gives q = 0 and m = 0: the objective is linear in b, maximised at b = 1.
    delta = Hinge().dual_step([-1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0])
    np.testing.assert_array_equal(delta, [-1.0, 1.0])


def test_logistic_step_stays_strictly_inside():
    loss = Logistic()
    y = np.array([1.0, -1.0, 1.0, -1.0])
    alpha = np.array([0.5, -0.5, 1e-300, -(1 - 1e-16)])
    q = np.array([1e8, 1e8, 0.0, 1e-8])
    m = np.array([-1e4, -1e4, 1e4, 1e4])
    b_new = y * (alpha + loss.dual_step(y, alpha, q, m))
    assert np.all(b_new > 0.0) and np.all(b_new < 1.0)
    assert np.all(np.isfinite(loss.conjugate(y, y * b_new)))


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=lambda l: f"{l.name}-{_gamma(l)}")
def test_value_and_derivative(loss):
    rng = np.random.default_rng(1)
    n = 400
    y = rng.choice([-1.0, 1.0], n) if loss.is_classification else rng.normal(size=n)
    z = rng.normal(scale=3.0, size=n)
    expected = np.array([ref.loss_value(loss.name, y[i], z[i], _gamma(loss)) for i in range(n)])
    np.testing.assert_allclose(loss.value(y, z), expected, rtol=1e-13, atol=1e-15)
    h = 1e-6
    numeric = (loss.value(y, z + h) - loss.value(y, z - h)) / (2 * h)
    kink = np.abs(y * z - 1.0) < 1e-3  # hinge-type kinks
    if loss.name == "smoothed_hinge":
        kink |= np.abs(y * z - (1.0 - loss.gamma)) < 1e-3
    np.testing.assert_allclose(loss.derivative(y, z)[~kink], numeric[~kink], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=lambda l: f"{l.name}-{_gamma(l)}")
def test_conjugate_is_the_fenchel_conjugate(loss):
    """``phi*(u) = sup_z (z u - phi(z))`` evaluated numerically at ``u = -alpha``."""
    rng = np.random.default_rng(11)
    y, alpha, _, _ = _random_cases(loss, 60, rng)
    ours = loss.conjugate(y, alpha)
    for i in range(len(y)):
        u = -alpha[i]
        res = scipy.optimize.minimize_scalar(
            lambda z, u=u, yi=y[i]: -(z * u - ref.loss_value(loss.name, yi, z, _gamma(loss))),
            bounds=(-60.0, 60.0), method="bounded", options={"xatol": 1e-12})
        numeric = -res.fun
        # hinge-type conjugates at interior points are attained at finite z
        assert ours[i] == pytest.approx(numeric, abs=1e-6), (i, y[i], alpha[i])


@pytest.mark.parametrize("loss", [Hinge(), SmoothedHinge(), SquaredHinge(), Logistic()], ids=lambda l: l.name)
def test_conjugate_is_infinite_outside_domain(loss):
    lo, hi = loss.dual_domain
    outside = [lo - 1e-12] + ([] if math.isinf(hi) else [hi + 1e-12])
    for b in outside:
        assert loss.conjugate([1.0], [b])[0] == math.inf
        assert loss.conjugate([-1.0], [-b])[0] == math.inf


def test_logistic_conjugate_at_zero_is_zero():
    # 0 log 0 = 0: D(0) = 0 for logistic (spec Part E, numerics of lam n)
    assert Logistic().conjugate([1.0, -1.0], [0.0, 0.0]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=lambda l: f"{l.name}-{_gamma(l)}")
def test_gap_terms_nonnegative(loss):
    rng = np.random.default_rng(5)
    y, alpha, _, z = _random_cases(loss, 2000, rng)
    assert np.all(loss.gap_terms(y, alpha, z) >= -1e-12)


def test_constants():
    assert Hinge().lipschitz == 1.0 and Hinge().smoothness == math.inf
    assert SmoothedHinge(gamma=0.25).smoothness == 4.0
    assert Logistic().smoothness == 0.25 and Logistic().lipschitz == 1.0
    assert SquaredHinge().smoothness == 2.0 and SquaredHinge().dual_domain == (0.0, math.inf)
    assert Squared().smoothness == 1.0 and not Squared().is_classification


def test_get_loss_names_and_errors():
    for name in LOSSES:
        assert get_loss(name).name == name
    sh = SmoothedHinge(gamma=0.3)
    assert get_loss(sh) is sh
    with pytest.raises(ValueError, match="Unknown loss 'hinj'.*hinge"):
        get_loss("hinj")
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="gamma"):
            SmoothedHinge(gamma=bad)
