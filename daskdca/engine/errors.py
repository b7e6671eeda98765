"""The errors a cluster fit raises when its cluster goes away, and how long it waits for a worker.

:class:`ClusterLostError` and its three cases, :class:`NoWorkersError` (no
worker for ``daskdca.no-workers-timeout``) and :class:`SchedulerLostError`
(the client lost its scheduler), which :meth:`daskdca.engine.executor.DaskExecutor.gather`
raises, and :class:`WorkersLostError` (a worker lost more times in a row than
Dask allows a task), which the resident rounds raise; and
:func:`configured_no_workers_timeout`, which reads that Dask config key;
``daskdca`` re-exports the errors lazily.
"""

from __future__ import annotations

import dask
import numpy as np

__all__ = ["ClusterLostError", "NoWorkersError", "SchedulerLostError", "WorkersLostError",
           "configured_no_workers_timeout", "DEFAULT_NO_WORKERS_TIMEOUT", "NO_WORKERS_TIMEOUT_KEY"]

# How long a fit waits for a worker when the cluster has none (Dask config key, a timedelta such as
# "10 minutes" or 600, None: forever).  Long enough for a nanny restart or a replaced jobqueue job.
NO_WORKERS_TIMEOUT_KEY = "daskdca.no-workers-timeout"
DEFAULT_NO_WORKERS_TIMEOUT = "10 minutes"


class ClusterLostError(RuntimeError):
    """A cluster fit stopped because its cluster went away; the base of the two cases below.

    The fit raises it; a caller catches it and reads its attributes.

    Parameters
    ----------
    message : str
        The error's text: what happened and the fix.
    scheduler_address : str or None, default=None
        Kept as the attribute of the same name.
    checkpoint : str or None, default=None
        Kept as the attribute of the same name.
    checkpoint_round : int or None, default=None
        Kept as the attribute of the same name.

    Attributes
    ----------
    scheduler_address : str or None
        The address of the scheduler the fit ran on.
    checkpoint : str or None
        The ``checkpoint=`` path of the fit (None without one).
    checkpoint_round : int or None
        The round of the last complete checkpoint at ``checkpoint`` (what
        ``resume=True`` continues from), None when there is none.
    """

    def __init__(self, message, *, scheduler_address=None, checkpoint=None, checkpoint_round=None):
        super().__init__(message)
        self.scheduler_address = scheduler_address
        self.checkpoint = checkpoint
        self.checkpoint_round = checkpoint_round


class NoWorkersError(ClusterLostError):
    """The cluster had no worker for longer than ``daskdca.no-workers-timeout`` while the fit waited on it.

    Parameters
    ----------
    message : str
        The error's text: what happened and the fix.
    timeout : float
        Kept as the attribute of the same name.
    **kwargs
        ``scheduler_address``, ``checkpoint`` and ``checkpoint_round``, as
        :class:`ClusterLostError` takes them.

    Attributes
    ----------
    timeout : float
        The seconds waited without a worker.
    scheduler_address, checkpoint, checkpoint_round
        As :class:`ClusterLostError`.
    """

    def __init__(self, message, *, timeout, **kwargs):
        super().__init__(message, **kwargs)
        self.timeout = timeout


class SchedulerLostError(ClusterLostError):
    """The client lost its connection to the scheduler (or was closed) during the fit.

    Parameters
    ----------
    message : str
        The error's text: what happened and the fix.
    scheduler_address : str or None, default=None
        Kept as the attribute of the same name.
    checkpoint : str or None, default=None
        Kept as the attribute of the same name.
    checkpoint_round : int or None, default=None
        Kept as the attribute of the same name.

    Attributes
    ----------
    scheduler_address, checkpoint, checkpoint_round
        As :class:`ClusterLostError`.
    """


class WorkersLostError(ClusterLostError):
    """The fit lost a worker more times in a row than Dask's ``distributed.scheduler.allowed-failures``.

    Raised where the resident rounds (the default) would otherwise replace a
    worker that dies every time it runs the same step, for ever: the case
    of Dask's ``KilledWorker`` for a task.

    Parameters
    ----------
    message : str
        The error's text: what happened and the fix.
    lost : tuple of str
        Kept as the attribute of the same name.
    **kwargs
        ``scheduler_address``, ``checkpoint`` and ``checkpoint_round``, as
        :class:`ClusterLostError` takes them.

    Attributes
    ----------
    lost : tuple of str
        What each loss was, in order (the worker's address and how the call
        found it gone).
    scheduler_address, checkpoint, checkpoint_round
        As :class:`ClusterLostError`.
    """

    def __init__(self, message, *, lost, **kwargs):
        super().__init__(message, **kwargs)
        self.lost = tuple(lost)


def configured_no_workers_timeout():
    """The seconds a cluster fit waits for a worker while it has none (None: forever).

    Read from the Dask config key ``daskdca.no-workers-timeout`` (default
    ``"10 minutes"``), e.g. ``dask.config.set({"daskdca.no-workers-timeout":
    "30 minutes"})`` or the environment variable
    ``DASK_DASKDCA__NO_WORKERS_TIMEOUT``.

    Returns
    -------
    float or None
        Seconds, or None when the key is set to None (wait forever).

    Raises
    ------
    ValueError
        When the value is not a finite duration >= 0.
    """
    from dask.utils import parse_timedelta

    value = dask.config.get(NO_WORKERS_TIMEOUT_KEY, DEFAULT_NO_WORKERS_TIMEOUT)
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", "")):
        return None
    try:
        seconds = parse_timedelta(value, default="seconds")
    except Exception:  # parse_timedelta raises TypeError, ValueError, KeyError or AttributeError
        seconds = None
    if seconds is None or not np.isfinite(seconds) or seconds < 0:
        raise ValueError(f"the Dask config {NO_WORKERS_TIMEOUT_KEY}={value!r} is not a finite duration >= 0; set "
                         "it to seconds or a string such as '10 minutes' (None waits forever), e.g. "
                         f"dask.config.set({{{NO_WORKERS_TIMEOUT_KEY!r}: '10 minutes'}}).")
    return float(seconds)
