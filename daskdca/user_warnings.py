"""Warnings that name the user's line, whatever the depth of daskdca's own calls (layer 1: no Dask).

``warnings.warn(..., stacklevel=k)`` names the frame ``k`` levels up, so a
fixed ``k`` is right for one call path only: ``daskdca.fit`` reaches the same
warning through two calls in this process and through four on a cluster.
:func:`warn_at_caller` names the first frame outside the package and outside
scikit-learn's ``sklearn/base.py`` (whose ``_fit_context`` decorator wraps the
estimators' ``fit``) instead: the frame Python 3.12's ``warnings.warn(...,
skip_file_prefixes=...)`` names (Python documentation, "warnings — Warning
control", ``warnings.warn``); this walk does the same on Python 3.10 and 3.11.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings

__all__ = ["warn_at_caller", "warn_not_converged"]


@functools.cache
def _skipped():
    """The frames that are daskdca's own calls: its modules, and scikit-learn's module of the estimators' base
    classes and of the ``_fit_context`` decorator around their ``fit`` (imported here, on the first warning, so
    that a Dask worker importing this package's rounds does not import scikit-learn)."""
    import sklearn.base

    return os.path.dirname(os.path.abspath(__file__)) + os.sep, os.path.abspath(sklearn.base.__file__)


def warn_at_caller(message, category):
    """``warnings.warn(message, category)`` attributed to the first caller outside daskdca.

    That frame is the user's own call (``daskdca.fit``, an estimator's
    ``fit`` or ``predict``), or the library that made it (scikit-learn's
    ``GridSearchCV`` or ``Pipeline`` calling ``fit``), so the warning's file
    and line are where the user can act, and ``warnings`` filters by module
    match it.

    Parameters
    ----------
    message : str
        The warning's text.
    category : type of Warning
        Its class (e.g. ``sklearn.exceptions.ConvergenceWarning``).
    """
    frame = sys._getframe(1)
    level = 1  # the frame that called this function
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_skipped()):
        frame = frame.f_back
        level += 1
    # stacklevel=2 names this function's caller (level 1)
    warnings.warn(message, category, stacklevel=level + 1)


def warn_not_converged(message):
    """:func:`warn_at_caller` with scikit-learn's ``ConvergenceWarning``, the class its estimators warn with
    where a fit stops short of its ``tol`` (imported here, on the first such warning, so that ``daskdca.fit`` and
    a Dask worker import no scikit-learn).

    Parameters
    ----------
    message : str
        The warning's text.
    """
    from sklearn.exceptions import ConvergenceWarning

    warn_at_caller(message, ConvergenceWarning)
