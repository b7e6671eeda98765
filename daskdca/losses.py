"""Losses, their convex conjugates and the closed-form dual coordinate steps.

Every loss enters the primal problem through the per-example function
``phi_i(z) = phi(y_i z)`` (classification) or ``phi_i(z) = phi(z, y_i)``
(regression), with

    P(w)     = 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2
    D(alpha) = -1/n sum_i phi_i*(-alpha_i) - lam/2 ||w(alpha)||^2,
    w(alpha) = X^T alpha / (lam n).

For the classification losses the dual variable is handled in the variable
``b_i = y_i alpha_i``, so that ``phi_i*(-alpha_i) = phi*(-b_i)`` and the
feasible set of ``b_i`` is the domain of ``phi*(-.)`` (``[0, 1]`` for hinge,
smoothed hinge and logistic, ``[0, inf)`` for squared hinge).

The scalar functions below are compiled with numba and are the single source
of truth: the kernels in :mod:`daskdca.kernels` call them per row, and the
:class:`Loss` objects call their vectorised wrappers.  Formulas follow the
docs/references.md, note N2 (Takáč et al. 2015 [TRS15], Algorithm 1 line 6; hinge
form printed in Takáč et al. 2013 [TBRS13] eq. (15), the others derived there and checked
against brute-force 1-D maximisation).  The regression losses beyond squared
(epsilon-insensitive, its square and Huber's) keep the dual variable as
``alpha`` itself, with the steps of Ho & Lin 2012 [HL12] Algorithm 4 for the
first two (the comment above :func:`_svr_huber_value`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

__all__ = [
    "Loss",
    "Hinge",
    "SmoothedHinge",
    "SquaredHinge",
    "Logistic",
    "Squared",
    "EpsilonInsensitive",
    "SquaredEpsilonInsensitive",
    "Huber",
    "LOSSES",
    "CrammerSinger",
    "Softmax",
    "get_loss",
    "row_weight",
    "weighted_conjugate_value",
    "sweep_dual_update",
    "weighted_dual_update",
    "weighted_loss_value",
    "weighted_sweep_dual_update",
]


class LossKind(IntEnum):
    """Compile-time tag the kernels branch on; users never see it."""

    HINGE = 0
    SMOOTHED_HINGE = 1
    SQUARED_HINGE = 2
    LOGISTIC = 3
    SQUARED = 4
    EPSILON_INSENSITIVE = 5
    SQUARED_EPSILON_INSENSITIVE = 6
    HUBER = 7


# numba freezes module globals as constants, so these compare at no cost.
HINGE = int(LossKind.HINGE)
SMOOTHED_HINGE = int(LossKind.SMOOTHED_HINGE)
SQUARED_HINGE = int(LossKind.SQUARED_HINGE)
LOGISTIC = int(LossKind.LOGISTIC)
SQUARED = int(LossKind.SQUARED)
EPSILON_INSENSITIVE = int(LossKind.EPSILON_INSENSITIVE)
SQUARED_EPSILON_INSENSITIVE = int(LossKind.SQUARED_EPSILON_INSENSITIVE)
HUBER = int(LossKind.HUBER)
# The SVR losses (epsilon-insensitive and its square) and Huber's have the
# largest tags, so the functions below send them to their own helpers
# (``_svr_huber_*``) with one comparison and the other losses keep their code
# path and bits.
_FIRST_SVR_HUBER = EPSILON_INSENSITIVE

# Largest float64 strictly below 1: the logistic dual variable b = y*alpha is
# kept in [B_MIN, B_MAX] so that logit(b) stays finite for the next Newton
# solve (docs/references.md, note N2, "keep b strictly inside (0, 1)").
B_MAX = float(np.nextafter(1.0, 0.0))
B_MIN = 1.0 - B_MAX
# Newton in the logit variable z.  Its curvature ratio |f''/(2 f')| is at most
# 1/2 (f' = 1 + q s(1-s), |f''| = q s(1-s)|1-2s| <= f'), so after a Newton step
# of size h the error is at most h^2/2: a step below _NEWTON_QUADRATIC_STOP
# leaves an error below 1e-16 in z.  _NEWTON_XTOL stops bisection.
_NEWTON_XTOL = 1e-15
_NEWTON_QUADRATIC_STOP = 1e-8
_NEWTON_MAX_ITER = 100
_EPS = float(np.finfo(np.float64).eps)
# The SDCA sweep's logistic step (:func:`_logistic_b_sweep`) takes the cheap
# step toward u = sigmoid(-y m) unless its curvature ratio k = q b(1-b) (b the
# point of the segment [b_old, u] nearest 1/2) exceeds _SWEEP_EXACT_ABOVE_K
# and the segment is wider than _SWEEP_NARROW_WIDTH times its distance to the
# box ends; then it solves exactly.  Both values were chosen on a9a, w8a and
# ijcnn1 at lam 1e-4..1e-6 (benchmarks/RESULTS.md, "The SDCA sweep's
# logistic step", 2026-11-26): with them the epochs to a relative gap of
# 1e-4 and 1e-6 are within 2% of the exact step's, where the same step
# without the fallback needed 2.3-2.5x the epochs to 1e-4 on w8a at lam 1e-5
# and 1e-6.
_SWEEP_EXACT_ABOVE_K = 1.0
_SWEEP_NARROW_WIDTH = 0.5


@njit(nogil=True, cache=True)
def _xlogx(b):
    """``b log b`` with ``0 log 0 = 0``."""
    if b <= 0.0:
        return 0.0
    return b * math.log(b)


@njit(nogil=True, cache=True)
def _log1pexp(t):
    """``log(1 + exp(t))`` without overflow."""
    if t > 0.0:
        return t + math.log1p(math.exp(-t))
    return math.log1p(math.exp(t))


@njit(nogil=True, cache=True)
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


# --- the SVR losses and Huber's: phi_i(z) = h(z - y_i), with the parameter p ---------------------------------
#
# epsilon-insensitive (p = eps >= 0): h(r) = max(0, |r| - eps); h*(u) = eps |u| on |u| <= 1, so
#     phi_i*(-alpha) = -alpha y_i + eps |alpha|,  alpha in [-1, 1];
# its square (LIBLINEAR's L2-loss SVR): h(r) = max(0, |r| - eps)^2; h*(u) = eps |u| + u^2 / 4, so
#     phi_i*(-alpha) = -alpha y_i + eps |alpha| + alpha^2 / 4,  alpha real;
# Huber (p = delta > 0): h(r) = r^2 / 2 for |r| <= delta, delta (|r| - delta / 2) beyond; h*(u) = u^2 / 2 on
#     |u| <= delta, so phi_i*(-alpha) = alpha^2 / 2 - alpha y_i,  alpha in [-delta, delta].
# (phi_i*(u) = u y_i + h*(u) as phi_i is h shifted by y_i.)  The dual steps maximise the concave
# -phi_i*(-a) - q/2 (a - alpha)^2 - m (a - alpha) over a: for the SVR losses on each side of the kink
# of eps |a| at 0 (Ho & Lin 2012 [HL12] Algorithm 4, their one-variable sub-problem with
# ``g_p = G + eps`` and ``g_n = G - eps``), for Huber the squared loss's step clipped to the box.


@njit(nogil=True, cache=True)
def _svr_huber_value(kind, param, y, z):
    """``phi_i(z)`` of the SVR losses and Huber's (the block comment above)."""
    r = abs(z - y)
    if kind == EPSILON_INSENSITIVE:
        return max(0.0, r - param)
    if kind == SQUARED_EPSILON_INSENSITIVE:
        h = max(0.0, r - param)
        return h * h
    # HUBER
    if r <= param:
        return 0.5 * r * r
    return param * (r - 0.5 * param)


@njit(nogil=True, cache=True)
def _svr_huber_derivative(kind, param, y, z):
    """``phi_i'(z)``; for epsilon-insensitive the subgradient 0 at the tube's edges ``|z - y| = eps``."""
    r = z - y
    if kind == EPSILON_INSENSITIVE:
        if r > param:
            return 1.0
        if r < -param:
            return -1.0
        return 0.0
    if kind == SQUARED_EPSILON_INSENSITIVE:
        if r > param:
            return 2.0 * (r - param)
        if r < -param:
            return 2.0 * (r + param)
        return 0.0
    # HUBER
    return min(max(r, -param), param)


@njit(nogil=True, cache=True)
def _svr_huber_conjugate(kind, param, y, alpha):
    """``phi_i*(-alpha)`` of the SVR losses and Huber's; ``+inf`` outside the box."""
    if kind == EPSILON_INSENSITIVE:
        if alpha < -1.0 or alpha > 1.0:
            return math.inf
        return param * abs(alpha) - alpha * y
    if kind == SQUARED_EPSILON_INSENSITIVE:
        return param * abs(alpha) + 0.25 * alpha * alpha - alpha * y
    # HUBER
    if alpha < -param or alpha > param:
        return math.inf
    return 0.5 * alpha * alpha - alpha * y


@njit(nogil=True, cache=True)
def _svr_huber_step(kind, param, y, alpha, q, m):
    """The new ``alpha`` maximising ``-phi_i*(-a) - q/2 (a - alpha)^2 - m (a - alpha)`` (block comment above).

    SVR losses: with ``c = q`` (``q + 1/2`` for the square, whose conjugate
    adds ``a^2 / 4``), the maximiser on ``a > 0`` is
    ``a+ = alpha + (y - m - eps - g alpha) / c`` and on ``a < 0``
    ``a- = alpha + (y - m + eps - g alpha) / c`` (``g`` = 0, or 1/2 for the
    square); ``a- >= a+``, so the step is ``a+`` if positive, ``a-`` if
    negative, else the kink 0, then clipped to ``[-1, 1]`` for
    epsilon-insensitive (Ho & Lin 2012 [HL12] Algorithm 4).  A zero row
    (``q = 0``) of epsilon-insensitive has a linear objective, maximised at
    ``sign(y - m)`` outside the tube and at 0 inside it.  Huber: the squared
    loss's step clipped to ``[-delta, delta]``.
    """
    if kind == HUBER:
        return min(max(alpha + (y - m - alpha) / (1.0 + q), -param), param)
    g = y - m
    if kind == EPSILON_INSENSITIVE:
        if q == 0.0:
            if g > param:
                return 1.0
            if g < -param:
                return -1.0
            return 0.0
        up = alpha + (g - param) / q
        if up > 0.0:
            return min(up, 1.0)
        down = alpha + (g + param) / q
        if down < 0.0:
            return max(down, -1.0)
        return 0.0
    # SQUARED_EPSILON_INSENSITIVE
    c = q + 0.5
    up = alpha + (g - param - 0.5 * alpha) / c
    if up > 0.0:
        return up
    down = alpha + (g + param - 0.5 * alpha) / c
    if down < 0.0:
        return down
    return 0.0


@njit(nogil=True, cache=True)
def loss_value(kind, param, y, z):
    """``phi_i(z)``: the loss of one example with label/target ``y`` at margin ``z``."""
    if kind == SQUARED:
        r = z - y
        return 0.5 * r * r
    if kind >= _FIRST_SVR_HUBER:
        return _svr_huber_value(kind, param, y, z)
    a = y * z
    if kind == HINGE:
        return max(0.0, 1.0 - a)
    if kind == SMOOTHED_HINGE:
        if a >= 1.0:
            return 0.0
        if a <= 1.0 - param:
            return 1.0 - a - 0.5 * param
        return (1.0 - a) * (1.0 - a) / (2.0 * param)
    if kind == SQUARED_HINGE:
        h = max(0.0, 1.0 - a)
        return h * h
    # LOGISTIC
    return _log1pexp(-a)


@njit(nogil=True, cache=True)
def loss_derivative(kind, param, y, z):
    """``d phi_i / dz`` (a subgradient for hinge: ``-y`` at the kink's left, 0 right)."""
    if kind == SQUARED:
        return z - y
    if kind >= _FIRST_SVR_HUBER:
        return _svr_huber_derivative(kind, param, y, z)
    a = y * z
    if kind == HINGE:
        return -y if a < 1.0 else 0.0
    if kind == SMOOTHED_HINGE:
        if a >= 1.0:
            return 0.0
        if a <= 1.0 - param:
            return -y
        return -y * (1.0 - a) / param
    if kind == SQUARED_HINGE:
        return -2.0 * y * max(0.0, 1.0 - a)
    return -y * _sigmoid(-a)


@njit(nogil=True, cache=True)
def conjugate_value(kind, param, y, alpha):
    """``phi_i*(-alpha)``; ``+inf`` outside the domain.

    Classification losses are evaluated at ``b = y alpha``.
    """
    if kind == SQUARED:
        return 0.5 * alpha * alpha - alpha * y
    if kind >= _FIRST_SVR_HUBER:
        return _svr_huber_conjugate(kind, param, y, alpha)
    b = y * alpha
    if kind == SQUARED_HINGE:
        if b < 0.0:
            return math.inf
        return -b + 0.25 * b * b
    if b < 0.0 or b > 1.0:
        return math.inf
    if kind == HINGE:
        return -b
    if kind == SMOOTHED_HINGE:
        return -b + 0.5 * param * b * b
    # LOGISTIC: b log b + (1-b) log(1-b)
    return _xlogx(b) + _xlogx(1.0 - b)


@njit(nogil=True, cache=True)
def _logistic_b(y, alpha, q, m):
    """Solve ``log(b/(1-b)) + q (b - b_old) + y m = 0`` for b in (0, 1).

    The left side is increasing in the logit variable ``z = log(b/(1-b))``
    and its root lies in ``[-y m - q, -y m + q]`` because
    ``|q (b - b_old)| <= q``.  Newton in ``z`` safeguarded by bisection
    whenever a step would leave the bracket or fails to halve the previous
    step ("rtsafe", Numerical Recipes 3rd ed. §9.4), so it converges for any
    ``q`` and ``m``.

    Cost: the sigmoid ``s = b(z)`` is carried with ``z``, so the start at
    ``z = logit(b_old)`` needs no ``exp`` (``s = b_old``), and a last Newton
    step ``h`` below :data:`_NEWTON_QUADRATIC_STOP` moves ``s`` to first
    order, ``s - h s (1 - s)`` (``|s''| <= 1/10``: an error below
    ``h^2 / 20``, under the rounding of ``s``).  Late in a fit, where one
    Newton step lands within 1e-8 of the root, a row costs one ``log`` and
    one ``exp`` (a full solve had one ``log`` and three ``exp``).
    """
    b_old = y * alpha
    c = y * m
    if q == 0.0:
        return min(max(_sigmoid(-c), B_MIN), B_MAX)
    lo = -c - q
    hi = -c + q
    inside = 0.0 < b_old < 1.0
    # 1 - b_old is exact for b_old >= 1/2 (Sterbenz), so one log suffices
    z = math.log(b_old / (1.0 - b_old)) if inside else -c
    if inside and lo <= z <= hi:
        s = b_old  # the sigmoid of logit(b_old), without the rounding of an exp
    else:
        z = min(max(z, lo), hi)
        s = _sigmoid(z)
    step_old = hi - lo
    step = step_old
    for _ in range(_NEWTON_MAX_ITER):
        f = z + q * (s - b_old) + c
        # residual at the rounding floor of its own terms: z is a root
        if abs(f) <= 4.0 * _EPS * (abs(z) + abs(c) + q):
            break
        if f > 0.0:
            hi = z
        else:
            lo = z
        fp = 1.0 + q * s * (1.0 - s)
        newton = z - f / fp
        if not (lo < newton < hi) or abs(2.0 * f) > abs(step_old * fp):
            step_old = step
            step = 0.5 * (hi - lo)
            z = lo + step
        else:
            step_old = step
            step = f / fp
            z = newton
            if abs(step) <= _NEWTON_QUADRATIC_STOP * (1.0 + abs(z)):
                s = s - step * s * (1.0 - s)
                break
        s = _sigmoid(z)
        if abs(step) <= _NEWTON_XTOL * (1.0 + abs(z)) or hi - lo <= _NEWTON_XTOL * (1.0 + abs(z)):
            break
    return min(max(s, B_MIN), B_MAX)


@njit(nogil=True, cache=True)
def _logistic_b_sweep(y, alpha, q, m):
    """An inexact logistic dual step that always ascends: ``b`` for :func:`sweep_dual_update`.

    With ``b_old = y alpha``, ``c = y m`` and ``u = sigmoid(-c)`` (the
    maximiser for ``q = 0``, ``-phi'`` of the margin), the step is

        b = b_old + (u - b_old) / (1 + k),   k = q b_m (1 - b_m),

    where ``b_m`` is the point of the segment ``[b_old, u]`` nearest 1/2.
    The conjugate ``b log b + (1-b) log(1-b)`` has curvature
    ``1 / (b (1-b)) >= gamma = 1 / (b_m (1 - b_m))`` on that segment.
    Strong convexity on the segment and the Fenchel equality at ``u`` give,
    for ``b_s = b_old + s (u - b_old)``, ``s`` in [0, 1], the per-coordinate
    bound of Shalev-Shwartz and Zhang's SDCA analysis (JMLR 14, 2013) with
    the segment's ``gamma`` in place of the global ``gamma = 4``:

        h(b_s) - h(b_old) >= s g_i + s/2 (gamma (1 - s) - q s) (u - b_old)^2,

    ``h`` the 1-D dual objective and ``g_i = phi(c) + phi*(-b_old) + c b_old
    >= 0`` the row's gap term.  ``s = gamma / (gamma + q) = 1 / (1 + k)``
    zeroes the second term, so the step raises ``h`` by at least ``s g_i``.
    As ``gamma >= 4``, ``s >= 4 / (4 + q)``: the cheap inexact step of
    docs/references.md, note N2 is the
    special case ``gamma = 4``, and Takáč et al. 2015 [TRS15] Theorem 2 holds for this step as
    it does for that one.  It costs one ``exp`` and no ``log``; late in a fit,
    where ``u`` is close to ``b_old``, it agrees to first order with a Newton
    step in the logit.

    Where ``k`` is large the guaranteed fraction ``1 / (1 + k)`` is small,
    and when the segment is also wide in the logit (``u`` far from ``b_old``
    relative to the distance to the box ends) the step can be many times
    shorter than the exact one (w8a at lam 1e-5: ``b_old`` near 1/2, ``u``
    near 0, ``q`` about 20); there the exact solve :func:`_logistic_b` is
    taken (:data:`_SWEEP_EXACT_ABOVE_K`, :data:`_SWEEP_NARROW_WIDTH`).  The
    exact step raises the objective at least as much as any feasible step,
    so the bound ``s g_i`` holds for every row either way.  The result is
    a convex combination of two points of ``[B_MIN, B_MAX]`` (or the exact
    solve's, clamped the same way), so the conjugate stays finite.
    """
    b_old = y * alpha
    u = min(max(_sigmoid(-y * m), B_MIN), B_MAX)
    lo = min(b_old, u)
    hi = max(b_old, u)
    b_mid = min(max(0.5, lo), hi)
    k = q * b_mid * (1.0 - b_mid)
    if k > _SWEEP_EXACT_ABOVE_K and hi - lo > _SWEEP_NARROW_WIDTH * min(lo, 1.0 - hi):
        return _logistic_b(y, alpha, q, m)
    return min(max(b_old + (u - b_old) / (1.0 + k), B_MIN), B_MAX)


@njit(nogil=True, cache=True)
def dual_update(kind, param, y, alpha, q, m):
    """Closed-form maximiser of the 1-D dual problem of one coordinate.

    Returns the new value ``alpha + delta`` where ``delta`` maximises
    ``-phi_i*(-(alpha + delta)) - q/2 delta^2 - m delta``
    (Takáč et al. 2015 [TRS15] Algorithm 1 line 6 with ``q = v_i/(lam n)``, ``m = x_i.w``).
    Returning the new value rather than ``delta`` keeps it exactly inside the
    conjugate's domain (``alpha + (new - alpha)`` can round out of it).
    """
    if kind == SQUARED:
        return alpha + (y - m - alpha) / (1.0 + q)
    if kind >= _FIRST_SVR_HUBER:
        return _svr_huber_step(kind, param, y, alpha, q, m)
    b = y * alpha
    ym = y * m
    if kind == HINGE:
        if q == 0.0:  # zero row: the objective is linear in b, maximised at b = 1
            b_new = 1.0
        else:
            b_new = min(max(b + (1.0 - ym) / q, 0.0), 1.0)
    elif kind == SMOOTHED_HINGE:
        b_new = min(max(b + (1.0 - ym - param * b) / (q + param), 0.0), 1.0)
    elif kind == SQUARED_HINGE:
        b_new = max(0.0, b + (1.0 - ym - 0.5 * b) / (q + 0.5))
    else:
        b_new = _logistic_b(y, alpha, q, m)
    return y * b_new


@njit(nogil=True, cache=True)
def sweep_dual_update(kind, param, y, alpha, q, m):
    """The step of the sequential SDCA sweep (:func:`daskdca.kernels.sdca.local_sdca`).

    :func:`dual_update` for every loss but logistic, whose 1-D problem has no
    closed form; for logistic the inexact step of :func:`_logistic_b_sweep`,
    which raises the 1-D objective by at least ``g_i / (1 + k) >= 4 g_i /
    (4 + q)`` (``g_i`` the row's gap term) at the cost of one ``exp``, and
    falls back to the exact solve where that fraction is small and the step
    would be far from exact.  Kept apart from :func:`dual_update` because the
    mini-batch (ESO), SDNA and SPDC steps, the shrinking test and their
    references use the exact maximiser; a sequential sweep only needs an
    ascent step whose gain has that lower bound (Takáč et al. 2015 [TRS15] Theorem 2 with
    ``s_i >= 4 / (4 + q_i)``, docs/references.md, note N2).

    Parameters
    ----------
    kind, param : int, float
        The loss tag (:class:`LossKind`) and its parameter.
    y, alpha : float
        The row's label and dual variable (``b = y alpha`` in the domain).
    q, m : float
        The curvature ``sigma ||x_i||^2 / (lam n)`` and the margin ``x_i.u``.

    Returns
    -------
    float
        The new ``alpha``, strictly inside the conjugate's domain for
        logistic, as :func:`dual_update` returns it.
    """
    if kind == LOGISTIC:
        return y * _logistic_b_sweep(y, alpha, q, m)
    return dual_update(kind, param, y, alpha, q, m)


# Per-row weights (``sample_weight``, ``class_weight``): the weighted loss
# ``s_i phi_i`` has the conjugate ``(s phi_i)*(u) = s phi_i*(u / s)``, so its
# dual box is ``s_i`` times the unweighted one (hinge: ``y_i alpha_i`` in
# ``[0, s_i]``), and with ``alpha = s beta`` the 1-D dual problem
# ``-s phi_i*(-(alpha + delta)/s) - q/2 delta^2 - m delta`` is ``s`` times the
# unweighted problem in ``beta`` with curvature ``s q``.  ``s = 1`` takes the
# unweighted code path (the same bits); ``s = 0`` pins ``alpha_i`` at 0.

@njit(nogil=True, cache=True)
def row_weight(weight, i):
    """``s_i`` of row ``i``; an empty ``weight`` array means an unweighted problem (every ``s_i = 1``).

    Parameters
    ----------
    weight : ndarray of shape (n,) or (0,)
        The rows' weights, or an empty array.
    i : int
        The row.

    Returns
    -------
    float
        ``weight[i]``, or 1.0 for an empty ``weight``.
    """
    if weight.shape[0] == 0:
        return 1.0
    return weight[i]


@njit(nogil=True, cache=True)
def weighted_loss_value(kind, param, y, z, s):
    """``s phi_i(z)``.

    Parameters
    ----------
    kind, param : int, float
        The loss tag (:class:`LossKind`) and its parameter.
    y, z : float
        The row's label (or target) and margin.
    s : float
        The row's weight.

    Returns
    -------
    float
        The weighted loss.
    """
    if s == 1.0:
        return loss_value(kind, param, y, z)
    return s * loss_value(kind, param, y, z)


@njit(nogil=True, cache=True)
def weighted_conjugate_value(kind, param, y, alpha, s):
    """``(s phi_i)*(-alpha) = s phi_i*(-alpha / s)``; for ``s = 0``: 0 at ``alpha = 0``, else ``+inf``.

    Parameters
    ----------
    kind, param : int, float
        The loss tag (:class:`LossKind`) and its parameter.
    y, alpha : float
        The row's label (or target) and dual variable.
    s : float
        The row's weight.

    Returns
    -------
    float
        The weighted conjugate value.
    """
    if s == 1.0:
        return conjugate_value(kind, param, y, alpha)
    if s == 0.0:
        return 0.0 if alpha == 0.0 else math.inf
    return s * conjugate_value(kind, param, y, alpha / s)


@njit(nogil=True, cache=True)
def weighted_dual_update(kind, param, y, alpha, q, m, s):
    """:func:`dual_update` for the loss ``s phi_i``: ``s * dual_update(alpha / s, s q, m)``.

    Rounding is monotone, so ``y alpha / s`` of a value this returns stays
    in the unweighted domain and the conjugate stays finite.

    Parameters
    ----------
    kind, param : int, float
        The loss tag (:class:`LossKind`) and its parameter.
    y, alpha : float
        The row's label (or target) and dual variable.
    q, m : float
        The curvature and the margin, as :func:`dual_update` takes them.
    s : float
        The row's weight.

    Returns
    -------
    float
        The new ``alpha`` (0 for ``s = 0``).
    """
    if s == 1.0:
        return dual_update(kind, param, y, alpha, q, m)
    if s == 0.0:
        return 0.0
    return s * dual_update(kind, param, y, alpha / s, s * q, m)


@njit(nogil=True, cache=True)
def weighted_sweep_dual_update(kind, param, y, alpha, q, m, s):
    """:func:`sweep_dual_update` for the loss ``s phi_i``: ``s * sweep_dual_update(alpha / s, s q, m)``.

    The same scaling as :func:`weighted_dual_update`; ``s = 1`` takes the
    unweighted path, ``s = 0`` pins ``alpha_i`` at 0.

    Parameters
    ----------
    kind, param : int, float
        The loss tag (:class:`LossKind`) and its parameter.
    y, alpha : float
        The row's label (or target) and dual variable.
    q, m : float
        The curvature and the margin, as :func:`sweep_dual_update` takes them.
    s : float
        The row's weight.

    Returns
    -------
    float
        The new ``alpha`` (0 for ``s = 0``).
    """
    if s == 1.0:
        return sweep_dual_update(kind, param, y, alpha, q, m)
    if s == 0.0:
        return 0.0
    return s * sweep_dual_update(kind, param, y, alpha / s, s * q, m)


@njit(nogil=True, cache=True)
def _map_loss_value(kind, param, y, z):
    out = np.empty(z.shape[0])
    for i in range(z.shape[0]):
        out[i] = loss_value(kind, param, y[i], z[i])
    return out


@njit(nogil=True, cache=True)
def _map_loss_derivative(kind, param, y, z):
    out = np.empty(z.shape[0])
    for i in range(z.shape[0]):
        out[i] = loss_derivative(kind, param, y[i], z[i])
    return out


@njit(nogil=True, cache=True)
def _map_conjugate(kind, param, y, alpha):
    out = np.empty(alpha.shape[0])
    for i in range(alpha.shape[0]):
        out[i] = conjugate_value(kind, param, y[i], alpha[i])
    return out


@njit(nogil=True, cache=True)
def _map_dual_step(kind, param, y, alpha, q, m, sweep):
    """Every row's step: :func:`sweep_dual_update`'s if ``sweep``, else :func:`dual_update`'s."""
    out = np.empty(alpha.shape[0])
    for i in range(alpha.shape[0]):
        if sweep:
            out[i] = sweep_dual_update(kind, param, y[i], alpha[i], q[i], m[i]) - alpha[i]
        else:
            out[i] = dual_update(kind, param, y[i], alpha[i], q[i], m[i]) - alpha[i]
    return out


def _as_f64(a):
    return np.ascontiguousarray(np.atleast_1d(np.asarray(a, dtype=np.float64)))


@dataclass(frozen=True)
class Loss:
    """A per-example loss ``phi_i`` with everything dual coordinate ascent needs.

    Subclasses fix ``kind`` and the constants; the methods are vectorised over
    examples and take the labels (``y`` in {-1, +1}) or targets explicitly.

    Attributes
    ----------
    name : str
        The name accepted by :func:`daskdca.fit`.
    is_classification : bool
        True when labels must be in {-1, +1}.
    lipschitz : float
        ``L`` with ``|phi(a) - phi(b)| <= L |a - b|`` (``inf`` if none).
    smoothness : float
        Lipschitz constant of ``phi'`` (``inf`` for hinge). The conjugate is
        ``1/smoothness``-strongly convex (Takáč et al. 2015 [TRS15] assumption (ii)).
    dual_domain : tuple of float
        Feasible interval of ``b = y alpha`` (of ``alpha`` for the regression
        losses).
    has_active_bounds : bool
        True when a dual step can stop at a bound of the domain (or, for the
        epsilon-insensitive losses, at the kink of ``eps |alpha|`` at 0: a row
        inside the tube), so that rows can be left out of a round
        (shrinking).  False for logistic (its steps stay strictly inside
        (0, 1)) and squared loss (no bounds).
    """

    kind = None
    name = None
    is_classification = True
    lipschitz = math.inf
    smoothness = math.inf
    dual_domain = (0.0, 1.0)
    has_active_bounds = True

    @property
    def param(self) -> float:
        """The scalar the kernels receive (``gamma`` for smoothed hinge)."""
        return 0.0

    def value(self, y, z):
        """``phi_i(z_i)`` for every example.

        Parameters
        ----------
        y : array-like of shape (n,)
            Labels in {-1, +1} (classification losses) or real targets.
        z : array-like of shape (n,)
            Margins ``z_i = x_i.w``.

        Returns
        -------
        ndarray of shape (n,)
            The losses.
        """
        y, z = _as_f64(y), _as_f64(z)
        return _map_loss_value(int(self.kind), self.param, y, z)

    def derivative(self, y, z):
        """``phi_i'(z_i)`` (a subgradient where ``phi`` has a kink).

        Parameters
        ----------
        y : array-like of shape (n,)
            Labels in {-1, +1} (classification losses) or real targets.
        z : array-like of shape (n,)
            Margins ``z_i = x_i.w``.

        Returns
        -------
        ndarray of shape (n,)
            The derivatives.
        """
        y, z = _as_f64(y), _as_f64(z)
        return _map_loss_derivative(int(self.kind), self.param, y, z)

    def conjugate(self, y, alpha):
        """``phi_i*(-alpha_i)`` for every example (``inf`` outside the domain).

        Parameters
        ----------
        y : array-like of shape (n,)
            Labels in {-1, +1} (classification losses) or real targets.
        alpha : array-like of shape (n,)
            Dual variables (labels inside, as in ``dual_coef_``).

        Returns
        -------
        ndarray of shape (n,)
            The conjugate values.
        """
        y, alpha = _as_f64(y), _as_f64(alpha)
        return _map_conjugate(int(self.kind), self.param, y, alpha)

    def dual_step(self, y, alpha, q, m):
        """Maximiser ``delta`` of ``-phi_i*(-(alpha+delta)) - q/2 delta^2 - m delta``.

        Parameters
        ----------
        y : array-like of shape (n,)
            Labels in {-1, +1} (classification losses) or real targets.
        alpha : array-like of shape (n,)
            Dual variables before the step.
        q : array-like of shape (n,)
            The curvature of each 1-D problem (SDCA's ``||x_i||^2 / (lam n)``).
        m : array-like of shape (n,)
            Its linear coefficient (SDCA's ``x_i.w``).

        Returns
        -------
        ndarray of shape (n,)
            The steps ``delta`` (:func:`dual_update`'s new value less ``alpha``).
        """
        y, alpha, q, m = (_as_f64(a) for a in (y, alpha, q, m))
        return _map_dual_step(int(self.kind), self.param, y, alpha, q, m, False)

    def sweep_step(self, y, alpha, q, m):
        """The step ``delta`` the sequential SDCA sweep takes (:func:`sweep_dual_update`).

        Equal to :meth:`dual_step` for every loss but logistic, where it is
        an inexact step that raises the same 1-D objective by at least
        ``4 / (4 + q)`` times the row's gap term.

        Parameters
        ----------
        y : array-like of shape (n,)
            Labels in {-1, +1} (classification losses) or real targets.
        alpha : array-like of shape (n,)
            Dual variables before the step.
        q : array-like of shape (n,)
            The curvature of each 1-D problem (SDCA's ``||x_i||^2 / (lam n)``).
        m : array-like of shape (n,)
            Its linear coefficient (SDCA's ``x_i.w``).

        Returns
        -------
        ndarray of shape (n,)
            The steps ``delta``.
        """
        y, alpha, q, m = (_as_f64(a) for a in (y, alpha, q, m))
        return _map_dual_step(int(self.kind), self.param, y, alpha, q, m, True)

    def gap_terms(self, y, alpha, z):
        """Per-example gap ``phi_i(z_i) + phi_i*(-alpha_i) + alpha_i z_i >= 0``.

        Their mean is ``P(w) - D(alpha)`` only when ``z = X w(alpha)``.

        Parameters
        ----------
        y : array-like of shape (n,)
            Labels in {-1, +1} (classification losses) or real targets.
        alpha : array-like of shape (n,)
            Dual variables.
        z : array-like of shape (n,)
            Margins ``z_i = x_i.w``.

        Returns
        -------
        ndarray of shape (n,)
            The gap terms.
        """
        return self.value(y, z) + self.conjugate(y, alpha) + _as_f64(alpha) * _as_f64(z)


@dataclass(frozen=True)
class Hinge(Loss):
    """``phi(a) = max(0, 1 - a)``, ``a = y z``; conjugate ``phi*(-b) = -b`` on [0, 1]."""

    kind = LossKind.HINGE
    name = "hinge"
    lipschitz = 1.0


@dataclass(frozen=True)
class SmoothedHinge(Loss):
    """Smoothed hinge with parameter ``gamma > 0`` (Takáč et al. 2015 [TRS15] §3).

    ``phi(a) = 0`` if ``a >= 1``; ``1 - a - gamma/2`` if ``a <= 1 - gamma``;
    ``(1 - a)^2 / (2 gamma)`` otherwise. Conjugate ``-b + gamma/2 b^2`` on [0, 1].

    Parameters
    ----------
    gamma : float, default=1.0
        The width of the smoothed part; ``phi'`` is ``1/gamma``-Lipschitz.
        Must be finite and ``> 0``.
    """

    gamma: float = 1.0
    kind = LossKind.SMOOTHED_HINGE
    name = "smoothed_hinge"
    lipschitz = 1.0

    def __post_init__(self):
        if not (isinstance(self.gamma, (int, float)) and math.isfinite(self.gamma) and self.gamma > 0):
            raise ValueError(
                f"SmoothedHinge needs a finite gamma > 0, got gamma={self.gamma!r}; "
                "use gamma=1.0 (the default) or another positive value."
            )

    @property
    def param(self) -> float:
        """``gamma``, the scalar the kernels receive."""
        return float(self.gamma)

    @property
    def smoothness(self) -> float:
        """``1 / gamma``, the Lipschitz constant of ``phi'``."""
        return 1.0 / float(self.gamma)


@dataclass(frozen=True)
class SquaredHinge(Loss):
    """``phi(a) = max(0, 1 - a)^2`` (LIBLINEAR's L2-loss SVM); conjugate ``-b + b^2/4``, ``b >= 0``."""

    kind = LossKind.SQUARED_HINGE
    name = "squared_hinge"
    smoothness = 2.0
    dual_domain = (0.0, math.inf)


@dataclass(frozen=True)
class Logistic(Loss):
    """``phi(a) = log(1 + exp(-a))``; conjugate ``b log b + (1-b) log(1-b)`` on [0, 1]."""

    kind = LossKind.LOGISTIC
    name = "logistic"
    lipschitz = 1.0
    smoothness = 0.25
    has_active_bounds = False


@dataclass(frozen=True)
class Squared(Loss):
    """``phi_i(z) = (z - y_i)^2 / 2`` (ridge); conjugate ``alpha^2/2 - alpha y_i``."""

    kind = LossKind.SQUARED
    name = "squared"
    is_classification = False
    smoothness = 1.0
    dual_domain = (-math.inf, math.inf)
    has_active_bounds = False


def _check_loss_parameter(cls_name, field, value, *, positive, default):
    """A clear error unless ``value`` is a finite real ``> 0`` (``positive``) or ``>= 0``."""
    ok = (isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool)
          and math.isfinite(value) and (value > 0 if positive else value >= 0))
    if not ok:
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{cls_name} needs a finite {field} {bound}, got {field}={value!r}; use "
                         f"{field}={default!r} (the default) or another value {bound}.")


@dataclass(frozen=True)
class EpsilonInsensitive(Loss):
    """``phi_i(z) = max(0, |z - y_i| - epsilon)`` (scikit-learn's ``LinearSVR``, LIBLINEAR ``-s 13``).

    Conjugate ``phi_i*(-alpha) = epsilon |alpha| - alpha y_i`` on
    ``alpha`` in ``[-1, 1]``; the dual step is the closed form of Ho & Lin
    2012 [HL12] Algorithm 4 (L1-loss SVR).  ``epsilon = 0`` is the absolute
    loss ``|z - y_i|`` (least absolute deviations).  Lipschitz with ``L = 1``,
    not smooth.

    Parameters
    ----------
    epsilon : float, default=0.0
        Half-width of the tube, in the units of ``y``, inside which errors
        cost nothing (``LinearSVR``'s ``epsilon``, LIBLINEAR's ``-p``).
        Must be finite and ``>= 0``.
    """

    epsilon: float = 0.0
    kind = LossKind.EPSILON_INSENSITIVE
    name = "epsilon_insensitive"
    is_classification = False
    lipschitz = 1.0
    dual_domain = (-1.0, 1.0)

    def __post_init__(self):
        _check_loss_parameter("EpsilonInsensitive", "epsilon", self.epsilon, positive=False, default=0.0)

    @property
    def param(self) -> float:
        """``epsilon``, the scalar the kernels receive."""
        return float(self.epsilon)


@dataclass(frozen=True)
class SquaredEpsilonInsensitive(Loss):
    """``phi_i(z) = max(0, |z - y_i| - epsilon)^2`` (``LinearSVR``'s squared loss, LIBLINEAR ``-s 12``).

    Conjugate ``phi_i*(-alpha) = epsilon |alpha| + alpha^2 / 4 - alpha y_i``
    for every real ``alpha``; the dual step is the closed form of Ho & Lin
    2012 [HL12] Algorithm 4 (L2-loss SVR, their ``lambda = 1/(2C)`` being
    the ``1/2`` of ``alpha^2 / 4``'s curvature here).  No ``1/2`` in front,
    as ``LinearSVR`` and LIBLINEAR write it: ``phi'`` is 2-Lipschitz
    (``smoothness = 2``).

    Parameters
    ----------
    epsilon : float, default=0.0
        Half-width of the tube, in the units of ``y``.  Must be finite and
        ``>= 0``; with 0 the loss is ``(z - y_i)^2``, twice the squared loss.
    """

    epsilon: float = 0.0
    kind = LossKind.SQUARED_EPSILON_INSENSITIVE
    name = "squared_epsilon_insensitive"
    is_classification = False
    smoothness = 2.0
    dual_domain = (-math.inf, math.inf)

    def __post_init__(self):
        _check_loss_parameter("SquaredEpsilonInsensitive", "epsilon", self.epsilon, positive=False, default=0.0)

    @property
    def param(self) -> float:
        """``epsilon``, the scalar the kernels receive."""
        return float(self.epsilon)


@dataclass(frozen=True)
class Huber(Loss):
    """Huber's loss with threshold ``delta``: ``phi_i(z) = h(z - y_i)`` of the residual.

    ``h(r) = r^2 / 2`` for ``|r| <= delta`` and ``delta (|r| - delta / 2)``
    beyond.  The shape of scikit-learn's ``SGDRegressor(loss="huber", epsilon=delta)``;
    ``HuberRegressor`` fits twice this function of residuals divided by a
    scale it estimates, which this loss does not.  Conjugate
    ``phi_i*(-alpha) = alpha^2 / 2 - alpha y_i`` on ``alpha`` in
    ``[-delta, delta]`` (the squared loss's, on a box), so the dual step is
    the squared loss's step clipped to the box.  ``phi'`` is 1-Lipschitz
    (``smoothness = 1``) and ``phi`` is ``delta``-Lipschitz.

    Parameters
    ----------
    delta : float, default=1.0
        Where the loss turns from quadratic to linear, in the units of ``y``
        (scale or standardise ``y`` first).  Must be finite and ``> 0``.
    """

    delta: float = 1.0
    kind = LossKind.HUBER
    name = "huber"
    is_classification = False
    smoothness = 1.0

    def __post_init__(self):
        _check_loss_parameter("Huber", "delta", self.delta, positive=True, default=1.0)

    @property
    def param(self) -> float:
        """``delta``, the scalar the kernels receive."""
        return float(self.delta)

    @property
    def lipschitz(self) -> float:
        """``delta``: ``|phi'| <= delta``."""
        return float(self.delta)

    @property
    def dual_domain(self) -> tuple:
        """``(-delta, delta)``, the feasible interval of ``alpha``."""
        return (-float(self.delta), float(self.delta))


#: Name -> loss class, for every loss :func:`daskdca.fit` accepts by name.
LOSSES = {cls.name: cls for cls in (Hinge, SmoothedHinge, SquaredHinge, Logistic, Squared, EpsilonInsensitive,
                                    SquaredEpsilonInsensitive, Huber)}


#: scikit-learn's names of the same losses (``SGDClassifier``, ``LogisticRegression``, ``Ridge``)
LOSS_ALIASES = {"log_loss": "logistic", "squared_error": "squared"}


def get_loss(loss) -> Loss:
    """Return the :class:`Loss` for a name, or pass a :class:`Loss` instance through.

    Parameters
    ----------
    loss : str or Loss
        A name of :data:`LOSSES` (or scikit-learn's name of the same loss,
        :data:`LOSS_ALIASES`), which gets the loss with its default
        parameter, or a :class:`Loss` instance.

    Returns
    -------
    Loss
        The loss.

    Raises
    ------
    ValueError
        For an unknown name or any other value.
    """
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str) and loss in LOSS_ALIASES:
        loss = LOSS_ALIASES[loss]
    if isinstance(loss, str) and loss in LOSSES:
        return LOSSES[loss]()
    raise ValueError(
        f"Unknown loss {loss!r}; use one of {sorted(LOSSES)} or a daskdca.losses.Loss "
        "instance such as SmoothedHinge(gamma=0.5) or EpsilonInsensitive(epsilon=0.1)."
    )


def _check_n_classes(owner, n_classes):
    """Refuse a multi-class loss's ``n_classes`` unless it is an int >= 2 (a ValueError naming ``owner``)."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"{owner} needs n_classes, an int >= 2, got {n_classes!r}.")


@dataclass(frozen=True)
class Softmax:
    """The softmax (multinomial logistic) loss of ``K`` classes, ``l_y(z) = log sum_k exp(z_k) - z_y``, ``z in R^K``.

    Not a :class:`Loss`: it takes a ``K``-vector of margins ``z = W x`` per
    example, not one margin.  The fits of multinomial logistic regression
    (``daskdca.fit(..., solver="multinomial")`` on more than two classes)
    carry it as their ``DataInfo.loss``, so that the certificate
    (:func:`daskdca.partitions.objective_sums_part`) evaluates this problem:
    ``P(W) = 1/n sum_i s_i l_{y_i}(W x_i) + lam/2 ||W||_F^2``.  Its conjugate
    is the negative entropy on the shifted simplex,
    ``l_y*(v) = sum_k (v + e_y)_k log (v + e_y)_k`` for ``v + e_y`` in the
    simplex, ``inf`` elsewhere (docs/references.md, note N11), so
    ``l_y*(-alpha) = sum_k beta_k log beta_k`` with ``beta = e_y - alpha``
    (:mod:`daskdca.kernels.multinomial`).

    Parameters
    ----------
    n_classes : int
        ``K >= 2``.
    """

    n_classes: int
    name = "multinomial"
    is_classification = True
    # the steps stay strictly inside the simplex: no rows to shrink away
    has_active_bounds = False
    smoothness = 1.0  # the softmax's Hessian diag(p) - p p^T has norm <= 1 (its conjugate is 1-strongly convex)

    def __post_init__(self):
        _check_n_classes("Softmax", self.n_classes)

    def value(self, y, Z):
        """``l_{y_i}(z_i)`` for every example.

        Parameters
        ----------
        y : array-like of int, of shape (n,)
            Class indices in ``0 .. K - 1``.
        Z : array-like of shape (n, K)
            Margins, one row per example.

        Returns
        -------
        ndarray of shape (n,)
            The losses.
        """
        Z = np.asarray(Z, dtype=np.float64)
        top = Z.max(axis=1)
        lse = top + np.log(np.exp(Z - top[:, None]).sum(axis=1))
        return lse - Z[np.arange(Z.shape[0]), np.asarray(y, dtype=np.intp)]

    def conjugate(self, y, alpha):
        """``l_{y_i}*(-alpha_i) = sum_k beta_ik log beta_ik`` with ``beta_i = e_{y_i} - alpha_i``.

        Parameters
        ----------
        y : array-like of int, of shape (n,)
            Class indices in ``0 .. K - 1``.
        alpha : array-like of shape (K, n)
            Dual variables, as the fits store them.

        Returns
        -------
        ndarray of shape (n,)
            The conjugate values (``inf`` where ``beta_i`` leaves the simplex
            by more than 1e-12).
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        y = np.asarray(y, dtype=np.intp)
        beta = -alpha.T.copy()
        beta[np.arange(beta.shape[0]), y] += 1.0
        outside = (beta.min(axis=1) < -1e-12) | (np.abs(beta.sum(axis=1) - 1.0) > 1e-12)
        positive = np.clip(beta, 0.0, None)
        values = np.where(positive > 0, positive * np.log(np.where(positive > 0, positive, 1.0)), 0.0).sum(axis=1)
        return np.where(outside, np.inf, values)


@dataclass(frozen=True)
class CrammerSinger:
    """The Crammer-Singer multi-class hinge loss of ``K`` classes, ``l_y(z) = max_k (1[k != y] + z_k - z_y)``.

    Not a :class:`Loss`: it takes a ``K``-vector of margins ``z = W x`` per
    example, as :class:`Softmax` does.  The fits of the Crammer-Singer
    multi-class SVM (``daskdca.fit(..., loss="hinge", solver="crammer_singer")``
    on more than two classes; LIBLINEAR's ``-s 4``) carry it as their
    ``DataInfo.loss``, so that the certificate
    (:func:`daskdca.partitions.objective_sums_part`) evaluates this problem:
    ``P(W) = 1/n sum_i s_i l_{y_i}(W x_i) + lam/2 ||W||_F^2``.  Its conjugate
    is linear on the shifted simplex, ``l_y*(v) = -(1 - (v + e_y)_y)`` for
    ``v + e_y`` in the simplex, ``inf`` elsewhere (docs/references.md, note
    N12), so ``l_y*(-alpha) = -alpha_y`` for ``alpha`` with ``e_y - alpha``
    in the simplex (:mod:`daskdca.kernels.crammer_singer`).

    Parameters
    ----------
    n_classes : int
        ``K >= 2``.
    """

    n_classes: int
    name = "crammer_singer"
    is_classification = True
    has_active_bounds = True  # as the hinge loss: duals sit at their bounds (the method does not shrink)
    smoothness = math.inf

    def __post_init__(self):
        _check_n_classes("CrammerSinger", self.n_classes)

    def value(self, y, Z):
        """``l_{y_i}(z_i)`` for every example.

        Parameters
        ----------
        y : array-like of int, of shape (n,)
            Class indices in ``0 .. K - 1``.
        Z : array-like of shape (n, K)
            Margins, one row per example.

        Returns
        -------
        ndarray of shape (n,)
            The losses.
        """
        Z = np.asarray(Z, dtype=np.float64)
        y = np.asarray(y, dtype=np.intp)
        rows = np.arange(Z.shape[0])
        augmented = Z + 1.0
        augmented[rows, y] -= 1.0
        return augmented.max(axis=1) - Z[rows, y]

    def conjugate(self, y, alpha):
        """``l_{y_i}*(-alpha_i) = -alpha_{y_i i}`` where ``beta_i = e_{y_i} - alpha_i`` lies in the simplex.

        Parameters
        ----------
        y : array-like of int, of shape (n,)
            Class indices in ``0 .. K - 1``.
        alpha : array-like of shape (K, n)
            Dual variables, as the fits store them.

        Returns
        -------
        ndarray of shape (n,)
            The conjugate values (``inf`` where ``beta_i`` leaves the simplex
            by more than 1e-12).
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        y = np.asarray(y, dtype=np.intp)
        beta = -alpha.T.copy()
        rows = np.arange(beta.shape[0])
        beta[rows, y] += 1.0
        outside = (beta.min(axis=1) < -1e-12) | (np.abs(beta.sum(axis=1) - 1.0) > 1e-12)
        return np.where(outside, np.inf, -alpha.T[rows, y])
