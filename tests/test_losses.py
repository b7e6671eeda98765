"""Losses: values, derivatives, conjugates and the closed-form dual step.

The dual step is checked against brute-force 1-D maximisation on thousands
of random cases per loss.
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


def _extreme_logistic_cases(size, rng):
    """Random logistic cases that reach the corners: ``b`` at 0, at the clamp values and a few ulps inside them,
    ``q`` from 1e-12 to 1e12 (and 0), margins from tiny to 1e4, near and far from the old dual."""
    y = rng.choice([-1.0, 1.0], size)
    b = rng.uniform(0.0, 1.0, size)
    ends = np.array([0.0, 1e-300, float(np.nextafter(0.0, 1.0)), 1.0 - float(np.nextafter(1.0, 0.0)), 1e-16, 1e-8,
                     0.5, 1.0 - 1e-8, 1.0 - 1e-16, float(np.nextafter(1.0, 0.0))])
    pick = rng.random(size) < 0.4
    b[pick] = rng.choice(ends, int(pick.sum()))
    log_b = rng.random(size) < 0.2
    b[log_b] = np.exp(rng.uniform(np.log(1e-16), 0, int(log_b.sum())))
    below = rng.random(size) < 0.05
    b[below] = np.exp(rng.uniform(-700, np.log(1e-16), int(below.sum())))
    q = np.exp(rng.uniform(np.log(1e-12), np.log(1e12), size))
    q[rng.random(size) < 0.03] = 0.0
    m = rng.normal(scale=3.0, size=size) * np.exp(rng.uniform(-20, np.log(3e3), size))
    # margins whose sigmoid sits near b (late in a fit: u close to b_old)
    near = rng.random(size) < 0.3
    bb = np.clip(b[near], 1e-300, 1 - 1e-16)
    m[near] = -y[near] * (np.log(bb) - np.log1p(-bb)) * (1 + rng.normal(scale=1e-3, size=int(near.sum())))
    return y, y * b, q, m


def _logistic_conjugate(b):
    """``b log b + (1 - b) log(1 - b)`` to full precision near 0 as well (``log1p``), for tolerances of 1e-17."""
    return (b * math.log(b) if b > 0 else 0.0) + (1.0 - b) * math.log1p(-b) if b < 1 else 0.0


def _logistic_gap_term(b, c):
    """``phi(c) + phi*(-b) + c b`` with ``phi(c) = log(1 + exp(-c))``, and the rounding of that sum."""
    loss = (-c if c < 0 else 0.0) + math.log1p(math.exp(-abs(c)))
    conj = _logistic_conjugate(b)
    return loss + conj + c * b, 8 * np.finfo(float).eps * (abs(loss) + abs(conj) + abs(c * b))


def _logistic_h_gain(y, alpha, q, m, new):
    """``h(new) - h(alpha)`` of the 1-D logistic dual objective in plain floats, and what rounding can cost.

    The tolerance is the rounding of the terms plus what one misplaced ulp of ``b`` costs where the conjugate's
    curvature ``1 / (b (1 - b))`` is huge (``b`` within a few ulps of 0 or 1, where the sigmoid itself is only
    accurate to an ulp).
    """
    c_new = _logistic_conjugate(y * new)
    c_old = _logistic_conjugate(y * alpha)
    d = new - alpha
    gain = -(c_new - c_old) - 0.5 * q * d * d - m * d
    scale = abs(c_new) + abs(c_old) + 0.5 * q * d * d + abs(m * d)
    b_lo = min(y * new, y * alpha)
    b_hi = max(y * new, y * alpha)
    ulp = 4.0 * float(np.spacing(max(b_hi, 0.5)))  # the spacing of b near 1 bounds that near 0 too (B_MIN = 1 - B_MAX)
    curv = q + 1.0 / max(min(b_lo, 1.0 - b_hi), 1e-300)
    return gain, 8 * np.finfo(float).eps * scale + min(ulp * ulp * curv, ulp * abs(m) + ulp * ulp * curv)


def test_logistic_sweep_step_always_ascends_with_the_sdca_bound():
    """The sweep's logistic step (cheap or exact) never lowers the 1-D dual objective beyond rounding, raises it by
    at least ``4 / (4 + q) g_i`` (``g_i`` the row's gap term: [TRS15] Theorem 2's premise, docs/references.md, note N2), and keeps
    ``b`` strictly inside (0, 1) -- on 200,000 random cases including the corners of ``b``, ``q`` and ``m``.

    An old ``b`` below ``B_MIN`` (reachable only from outside, e.g. ``alpha = 0`` at the start) may have its
    maximiser below ``B_MIN`` too; the clamp then costs the exact step as much, so there the sweep's step is held
    to the exact step's gain instead.
    """
    import daskdca.losses as L

    loss = Logistic()
    rng = np.random.default_rng(11)
    y, alpha, q, m = _extreme_logistic_cases(200_000, rng)
    new = np.array([L.sweep_dual_update(int(loss.kind), 0.0, y[i], alpha[i], q[i], m[i]) for i in range(len(y))])
    exact = np.array([L.dual_update(int(loss.kind), 0.0, y[i], alpha[i], q[i], m[i]) for i in range(len(y))])
    b_new = y * new
    assert np.all(b_new >= L.B_MIN) and np.all(b_new <= L.B_MAX)
    assert np.all(np.isfinite(loss.conjugate(y, new)))
    g, g_tol = np.array([_logistic_gap_term(y[i] * alpha[i], y[i] * m[i]) for i in range(len(y))]).T
    inside = (y * alpha >= L.B_MIN) & (y * alpha <= L.B_MAX)
    assert 0.6 < inside.mean() < 0.95
    # Where sigmoid(-y m) lies outside [B_MIN, B_MAX] the clamp keeps every step (the exact one too) from the
    # point the bound's proof steps toward; the proof then steps toward the clamped point u~ instead and gives
    # the bound with g~ = phi*(b) - phi*(u~) - c (u~ - b) >= 0 in place of g_i.
    u = 0.5 * (1.0 - np.tanh(0.5 * y * m))
    u_clamped = np.clip(u, L.B_MIN, L.B_MAX)
    assert 0.5 < np.mean(u == u_clamped) < 0.95
    worst_ascent = worst_bound = worst_outside = 0.0
    for i in range(len(y)):
        gain, tol = _logistic_h_gain(y[i], alpha[i], q[i], m[i], new[i])
        if inside[i]:
            worst_ascent = max(worst_ascent, -gain - tol)
            if u[i] == u_clamped[i]:
                g_eff, g_tol_eff = g[i], g_tol[i]
            else:
                g_eff, g_tol_eff = _logistic_h_gain(y[i], alpha[i], 0.0, m[i], y[i] * u_clamped[i])
            s = 4.0 / (4.0 + q[i])
            worst_bound = max(worst_bound, s * g_eff - gain - tol - s * g_tol_eff)
        else:  # below B_MIN: the clamp may force a (tiny) descent on the exact step too
            gain_exact, tol_exact = _logistic_h_gain(y[i], alpha[i], q[i], m[i], exact[i])
            worst_outside = max(worst_outside, min(0.0, gain_exact) - gain - tol - tol_exact)
    assert worst_ascent <= 0.0
    assert worst_bound <= 0.0
    assert worst_outside <= 0.0


def test_logistic_sweep_step_takes_both_branches_and_matches_the_reference():
    """The cheap branch and the exact fallback both occur on random cases, agree with the NumPy reference, and the
    exact fallback is the exact step; every other loss's sweep step is its exact step, bit for bit."""
    import daskdca.losses as L

    rng = np.random.default_rng(5)
    loss = Logistic()
    y, alpha, q, m = _random_cases(loss, 3000, rng)
    sweep = alpha + loss.sweep_step(y, alpha, q, m)
    exact = alpha + loss.dual_step(y, alpha, q, m)
    theirs = np.array([ref.sweep_dual_update("logistic", y[i], alpha[i], q[i], m[i]) for i in range(len(y))])
    np.testing.assert_allclose(sweep, theirs, rtol=1e-12, atol=1e-13)
    b, u = y * alpha, 1.0 / (1.0 + np.exp(y * m))
    lo, hi = np.minimum(b, u), np.maximum(b, u)
    b_m = np.clip(0.5, lo, hi)
    fallback = (q * b_m * (1 - b_m) > L._SWEEP_EXACT_ABOVE_K) & (hi - lo > L._SWEEP_NARROW_WIDTH
                                                                    * np.minimum(lo, 1 - hi))
    assert 0.1 < fallback.mean() < 0.9
    np.testing.assert_array_equal(sweep[fallback], exact[fallback])
    assert np.any(sweep[~fallback] != exact[~fallback])
    for other in ALL_LOSSES:
        if other.name == "logistic":
            continue
        y, alpha, q, m = _random_cases(other, 500, rng)
        np.testing.assert_array_equal(other.sweep_step(y, alpha, q, m), other.dual_step(y, alpha, q, m))


def test_logistic_sweep_step_is_exact_without_curvature():
    """``q = 0`` (a zero row): the cheap step is ``u = sigmoid(-y m)``, the exact maximiser."""
    loss = Logistic()
    y = np.array([1.0, -1.0, 1.0])
    alpha = np.array([0.3, -0.9, 0.0])
    m = np.array([0.7, -2.0, 0.0])
    q = np.zeros(3)
    np.testing.assert_allclose(loss.sweep_step(y, alpha, q, m), loss.dual_step(y, alpha, q, m), rtol=0, atol=1e-16)


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
    # 0 log 0 = 0: D(0) = 0 for logistic
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
