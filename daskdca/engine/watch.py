"""The no-worker watchdog's helpers, used by :meth:`daskdca.engine.executor.DaskExecutor.gather` while it waits.

:func:`_unstick_function` makes the function that runs on the scheduler to
send this fit's tasks that Dask leaves in ``no-worker`` behind a soft pin to
a gone worker back to scheduling (:meth:`DaskExecutor._unstick`), and
:func:`_scheduler_noworker_error` names the error Dask's own
``distributed.scheduler.no-workers-timeout`` fails tasks with, so that it
becomes a :class:`~daskdca.engine.errors.NoWorkersError`.
"""

from __future__ import annotations

import contextlib


def _unstick_function():
    """The scheduler-side half of :meth:`DaskExecutor._unstick`, made here so that it pickles by value
    (the scheduler need not import daskdca)."""

    def unstick(run_id, dask_scheduler=None):
        s = dask_scheduler
        if not s.running:
            return 0
        tag = f"-{run_id}-"
        stuck = [ts.key for ts in s.unrunnable if ts.loose_restrictions and tag in str(ts.key)]
        if stuck:
            import time as _time

            s.transitions({key: "processing" for key in stuck}, stimulus_id=f"daskdca-unstick-{_time.time()}")
        return len(stuck)

    return unstick


def _scheduler_noworker_error():
    """The exception type Dask's own ``distributed.scheduler.no-workers-timeout`` fails tasks with (or None)."""
    with contextlib.suppress(ImportError):
        from distributed.scheduler import NoWorkerError

        return NoWorkerError
    return None
