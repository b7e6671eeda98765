"""Seeing a fit: convergence curves and the history as a table.

Both functions read ``history_``, the ``(round, epochs, seconds, primal,
dual, gap)`` records that every fit keeps, from a :class:`daskdca.LinearModel`
(returned by :func:`daskdca.fit`), an :class:`~daskdca.SDCARegressor` or an
:class:`~daskdca.SDCAClassifier` (one list of records per binary problem).
matplotlib and pandas are optional: they are imported when called.
"""

from __future__ import annotations

import numpy as np

__all__ = ["convergence", "history_frame"]

_X_AXES = {"seconds": "seconds", "epochs": "epochs"}
_X_LABELS = {"seconds": "time (s)", "epochs": "epochs (passes over the data)"}
# log scale: a gap of exactly zero (or a rounding-level negative one) is drawn here
_GAP_FLOOR = float(np.finfo(np.float64).eps)


def _problems(model):
    """``[(label or None, records), ...]``: one entry per binary problem of the model."""
    history = getattr(model, "history_", None)
    if history is None:
        raise TypeError(
            f"Expected a fitted daskdca model (LinearModel, SDCAClassifier or SDCARegressor) with a "
            f"history_ attribute, got {type(model).__name__}; fit it first."
        )
    history = list(history)
    if history and isinstance(history[0], (list, tuple)) and not hasattr(history[0], "_fields"):
        # SDCAClassifier: one list per problem; binary -> classes_[1], OvR -> every class
        classes = list(model.classes_)
        labels = classes[1:] if len(classes) == 2 else classes
        return [(label, list(records)) for label, records in zip(labels, history)]
    return [(None, history)]


def _as_items(models):
    """``[(label, model), ...]`` from one model, a list of models or a dict ``{label: model}``."""
    if isinstance(models, dict):
        return [(str(label), model) for label, model in models.items()]
    if hasattr(models, "history_"):
        models = [models]
    items = []
    for model in models:
        solver = getattr(model, "solver", None)
        name = getattr(solver, "name", solver)
        loss = getattr(model, "loss", None)
        loss = getattr(loss, "name", loss)
        parts = [type(model).__name__] + [str(p) for p in (loss, name) if p is not None]
        items.append((" ".join(parts), model))
    return items


def convergence(models, x="seconds", ax=None):
    """Draw the relative duality gap ``(P - D) / |P|`` of each fit on a log scale.

    Parameters
    ----------
    models : model, list of models or dict of {label: model}
        Fitted :class:`~daskdca.LinearModel`, :class:`~daskdca.SDCAClassifier`
        or :class:`~daskdca.SDCARegressor` objects.  A multi-class classifier
        gives one curve per class (its one-vs-rest problems).
    x : {"seconds", "epochs"}, default="seconds"
        Horizontal axis: wall-clock seconds since the fit started, or passes
        over the data.
    ax : matplotlib Axes or None, default=None
        Where to draw; None creates a new figure.

    Returns
    -------
    matplotlib Axes
        The axes drawn on, with a legend of the fits.

    See Also
    --------
    history_frame : The same records as a table.

    Notes
    -----
    A gap of exactly zero, or a negative one at rounding level, cannot be
    drawn on a log scale: such points are drawn at machine epsilon (2.2e-16).
    """
    if x not in _X_AXES:
        raise ValueError(f"x must be one of {sorted(_X_AXES)}, got {x!r}.")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "daskdca.plot.convergence needs matplotlib, which is not installed; "
            "install it with `pip install matplotlib` (or `pip install daskdca[bench]`)."
        ) from exc
    items = _as_items(models)
    if not items:
        raise ValueError("models is empty; pass at least one fitted model.")
    if ax is None:
        _, ax = plt.subplots()
    for label, model in items:
        for problem, records in _problems(model):
            if not records:
                continue
            xs = np.array([getattr(r, _X_AXES[x]) for r in records], dtype=np.float64)
            primal = np.array([r.primal for r in records], dtype=np.float64)
            gap = np.array([r.gap for r in records], dtype=np.float64)
            rel = np.maximum(gap / np.maximum(np.abs(primal), 1e-300), _GAP_FLOOR)
            name = label if problem is None else f"{label} (class {np.asarray(problem).item()!r})"
            ax.plot(xs, rel, marker=".", label=name)
    ax.set_yscale("log")
    ax.set_xlabel(_X_LABELS[x])
    ax.set_ylabel("relative duality gap (P - D) / |P|")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return ax


def history_frame(model):
    """The fit's history as a pandas DataFrame, one row per gap evaluation.

    Parameters
    ----------
    model : LinearModel, SDCAClassifier or SDCARegressor
        A fitted model.

    Returns
    -------
    pandas.DataFrame
        Columns ``round, epochs, seconds, primal, dual, gap, relative_gap``;
        for an :class:`~daskdca.SDCAClassifier` a leading ``class`` column
        names the problem's positive class (``classes_[1]`` for two classes,
        each class for one-vs-rest).

    See Also
    --------
    convergence : The relative gap of the same records, drawn.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            "daskdca.plot.history_frame needs pandas, which is not installed; install it with "
            "`pip install \"daskdca[dataframe]\"`, or read model.history_ (a list of records) directly."
        ) from exc
    columns = ["round", "epochs", "seconds", "primal", "dual", "gap"]
    frames = []
    problems = _problems(model)
    for label, records in problems:
        frame = pd.DataFrame([[getattr(r, c) for c in columns] for r in records], columns=columns)
        frame["relative_gap"] = frame["gap"] / frame["primal"].abs().clip(lower=1e-300)
        if label is not None:
            frame.insert(0, "class", [label] * len(frame))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
