"""Data frames and labels of any type as input: the checks of a frame's columns (numbers only, the rest
refused with the fix), a pandas DataFrame as a NumPy array plus its column names, the label column named
by ``y="column"``, and labels that are not numbers (strings, bools, categories) as class codes plus the
label names a store records.

Neither pandas nor dask is imported here: a frame is recognised by its type's module, and pandas is
imported only inside the functions that read one (daskdca does not need pandas otherwise).  Dask frames
are read partition by partition in :mod:`daskdca.store.from_dask`.
"""

from __future__ import annotations

import os

import math
import numbers

import numpy as np

from daskdca.store.format import MAX_LABEL_VALUES


def _is_pandas_frame(X):
    """Whether ``X`` is a pandas DataFrame (pandas is not imported to tell)."""
    return type(X).__module__.startswith("pandas.") and type(X).__name__ == "DataFrame"


def _is_pandas_series(y):
    return type(y).__module__.startswith("pandas.") and type(y).__name__ == "Series"


def _is_dask_frame(X):
    """Whether ``X`` is a dask DataFrame (dask is not imported to tell)."""
    return type(X).__module__.startswith("dask.dataframe") and type(X).__name__ == "DataFrame"


def _is_dask_series(y):
    return type(y).__module__.startswith("dask.dataframe") and type(y).__name__ == "Series"


def _is_numeric_dtype(dtype):
    """Whether a column of ``dtype`` holds numbers daskdca fits: bool, int or float, NumPy's or pandas'
    nullable ones (``Int64``, ``Float64``, ``boolean``); categories, strings, objects and dates are not."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    if isinstance(dtype, np.dtype):
        return dtype.kind in "biufc"  # complex is refused later, with its own message
    return (is_numeric_dtype(dtype) or is_bool_dtype(dtype)) and getattr(dtype, "name", "") != "category"


def _check_numeric_columns(dtypes, where="X"):
    """Refuse a frame with non-numeric columns, naming them and the fix; ``dtypes`` is ``frame.dtypes``."""
    bad = [(name, dtype) for name, dtype in dtypes.items() if not _is_numeric_dtype(dtype)]
    if not bad:
        return
    names = [name for name, _ in bad]
    shown = ", ".join(f"{name!r} ({dtype})" for name, dtype in bad[:10]) + (" ..." if len(bad) > 10 else "")
    raise ValueError(
        f"{where} has {len(bad)} column{'s' if len(bad) > 1 else ''} that {'are' if len(bad) > 1 else 'is'} not "
        f"numbers: {shown}; daskdca fits numeric features only (bool, int or float). Encode them first (e.g. "
        f"pandas.get_dummies(X, columns={names[:10]!r}) or scikit-learn's OneHotEncoder), or drop them "
        f"(X.drop(columns={names[:10]!r})).")


def _feature_names(columns):
    """The column names as scikit-learn keeps them (``feature_names_in_``): an object array when every name
    is a str, else None (scikit-learn keeps no names then either)."""
    names = list(columns)
    if names and all(isinstance(name, str) for name in names):
        return np.asarray(names, dtype=object)
    return None


def _frame_float_dtype(dtypes):
    """float32 when every column is float32 (as scikit-learn keeps it), else float64."""
    kinds = [np.dtype(dtype) if isinstance(dtype, np.dtype) else None for dtype in dtypes]
    return np.float32 if kinds and all(k == np.float32 for k in kinds) else np.float64


def _check_label_column(columns, y):
    """``y`` as a label column name of a frame with ``columns``: it must be one of them."""
    if y not in list(columns):
        shown = list(columns)[:20]
        raise ValueError(f"y={y!r} names a label column, but X has no column {y!r}; its columns are {shown}"
                         f"{' ...' if len(columns) > 20 else ''}. Pass the name of the label column, or the labels "
                         "themselves as an array.")


PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def is_parquet_path(path):
    """Whether ``path`` (a str or PathLike) names Parquet: a ``.parquet`` / ``.parq`` / ``.pq`` file or a folder
    holding such files (a Parquet dataset); a zarr store is neither."""
    path = os.fspath(path)
    if path.rstrip("/").endswith(PARQUET_SUFFIXES):
        return True
    return os.path.isdir(path) and any(name.endswith(PARQUET_SUFFIXES) for name in os.listdir(path))


def _refuse_label_name(X, y):
    """``y`` of a fit or a write: a str names a column of a DataFrame X (with any other X it is refused), and
    a pandas or dask DataFrame X needs ``y`` (None is refused by :func:`_refuse_missing_labels`)."""
    frame = _is_pandas_frame(X) or _is_dask_frame(X)
    if isinstance(y, str) and not frame:
        raise ValueError(f"y={y!r} names a label column, which needs X to be a pandas or dask DataFrame, got "
                         f"{type(X).__name__}; pass the labels as an array of shape (n_samples,).")
    if y is None and frame:
        _refuse_missing_labels(X)


def _refuse_missing_labels(X):
    """Refuse a pandas or dask DataFrame X given without ``y``: the labels are missing (a label column left in
    X is not a feature to encode).  The message names the columns that could be the labels (those that are
    not numbers, or else X's columns) and both ways to pass them; a dask frame's dtypes are its metadata.

    Parameters
    ----------
    X : pandas.DataFrame or dask.dataframe.DataFrame

    Raises
    ------
    ValueError
        Always.
    """
    kind = "pandas" if _is_pandas_frame(X) else "dask"
    start = f"y is missing: X is a {kind} DataFrame and no labels were given."
    array = "or pass the labels themselves as y=array of shape (n_samples,)"
    candidates = [name for name, dtype in X.dtypes.items() if not _is_numeric_dtype(dtype)]
    if candidates:
        shown = ", ".join(repr(name) for name in candidates[:10]) + (" ..." if len(candidates) > 10 else "")
        raise ValueError(f"{start} If a column of X holds the labels, name it: y={candidates[0]!r} (X's columns "
                         f"that are not numbers, so cannot be features: {shown}); {array}.")
    columns = list(X.columns)
    raise ValueError(f"{start} If a column of X holds the labels, name it: y=\"column name\" (X's columns: "
                     f"{columns[:20]}{' ...' if len(columns) > 20 else ''}); {array}.")


def pandas_input(X, y):
    """A pandas DataFrame ``X`` (and ``y``, possibly its label column's name) as in-memory arrays.

    Parameters
    ----------
    X : pandas.DataFrame
        Features in columns; every column must be numeric.
    y : str, array-like or None
        The name of X's label column (taken out of the features), the
        labels themselves, or None.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        float32 when every column is float32, else float64 (NaN for a
        missing value of a nullable column, refused later as non-finite).
    y : ndarray or the given labels
        The label column as a NumPy array (categories as their values).
    feature_names : ndarray of object or None
        The column names (None unless every name is a str).

    Raises
    ------
    ValueError
        ``y`` names no column, or a feature column is not numeric (the
        message names the columns and the fix).
    """
    if isinstance(y, str):
        _check_label_column(X.columns, y)
        X, y = X.drop(columns=[y]), series_values(X[y])
    elif _is_pandas_series(y):
        y = series_values(y)
    _check_numeric_columns(X.dtypes)
    dtype = _frame_float_dtype(X.dtypes)
    return X.to_numpy(dtype=dtype, na_value=np.nan), y, _feature_names(X.columns)


def series_values(series):
    """A pandas Series' values as NumPy: categories become their values, nullable ones (``Int64``,
    ``boolean``, ``Float64``) NumPy's own integers, booleans or floats, or object arrays with ``None`` for
    a missing value (refused by the label checks)."""
    from pandas.api.types import is_extension_array_dtype

    if getattr(series.dtype, "name", "") == "category":
        codes = series.cat.codes.to_numpy()
        values = np.full(codes.shape, None, dtype=object)  # code -1: a missing value
        values[codes >= 0] = series.cat.categories.to_numpy(dtype=object)[codes[codes >= 0]]
    elif is_extension_array_dtype(series.dtype):
        values = series.to_numpy(dtype=object, na_value=None)
    else:
        return series.to_numpy()
    return _numpy_scalars(values)


def _numpy_scalars(values):
    """An object array of Python numbers of one kind (all booleans, or all other real numbers) with no
    missing value as NumPy's bool, int64 or float64 array (scikit-learn calls an object array of numbers
    an "unknown" target); anything else as given."""
    flat = values.ravel()
    if flat.size == 0 or first_missing_label(flat) is not None:
        return values
    if all(isinstance(v, (bool, np.bool_)) for v in flat):
        return values.astype(bool)
    if all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in flat):
        return np.array(flat.tolist()).reshape(values.shape)
    return values


# ----------------------------------------------------------------- labels of any type


def _missing(value):
    if value is None:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return not math.isfinite(value)
    return type(value).__name__ in ("NAType", "NaTType")


def first_missing_label(values):
    """The position of the first missing label (None, NaN, ``pd.NA``, ``NaT``) in an object array of labels
    (flattened), or None when every label is there."""
    return next((i for i, v in enumerate(values.ravel()) if _missing(v)), None)


def missing_label_error(value, row, where="y"):
    """The ValueError for the missing label ``value`` at ``row`` of X (counted from X's first row)."""
    return ValueError(f"{where} has a missing label ({value!r}) at row {row}; every row needs a label: drop those "
                      "rows or fill them in.")


def _label_kind(values, where="y", first_row=0):
    """``"numeric"``, ``"str"`` or ``"bool"``: what an object array of labels holds; a missing value or a
    mix of types is refused (a mix cannot be sorted as scikit-learn sorts classes).

    Parameters
    ----------
    values : ndarray of object
        Labels: all of y, or one chunk or partition of it.
    where : str, default="y"
        What the labels are, for messages.
    first_row : int, default=0
        The row of X that ``values[0]`` is (a later chunk's or partition's
        offset), so that a missing label is named at its row in X.

    Raises
    ------
    ValueError
        A missing label, named with its row.
    TypeError
        Labels of more than one type.
    """
    flat = values.ravel()
    missing = first_missing_label(flat)
    if missing is not None:
        raise missing_label_error(flat[missing], first_row + missing, where)
    types = {("str" if isinstance(v, str) else "bool" if isinstance(v, (bool, np.bool_))
              else "numeric" if isinstance(v, numbers.Real) else type(v).__name__) for v in flat}
    if len(types) == 1 and types <= {"numeric", "str", "bool"}:
        return types.pop()
    raise TypeError(f"{where} holds labels of the types {sorted(types)}; pass labels of one type: numbers, "
                    "strings or bools (e.g. y.astype(str)).")


def label_kind(y):
    """``"numeric"`` (labels stored as their values), ``"str"`` or ``"bool"`` (stored as class codes with
    their names), for a NumPy array or a dtype-only description ``np.empty(0, dtype)``."""
    y = np.asarray(y)
    if y.dtype.kind in "iuf":
        return "numeric"
    if y.dtype.kind == "b":
        return "bool"
    if y.dtype.kind in "US":
        return "str"
    if y.dtype.kind == "O":
        return _label_kind(y) if y.size else "object"
    raise TypeError(f"y has dtype {y.dtype}; labels are numbers, strings or bools.")


def label_names_of(values):
    """The sorted distinct labels of a non-numeric kind, as the store records them (``label_names``).

    Parameters
    ----------
    values : ndarray
        Labels (or their distinct values): strings, or bools.

    Returns
    -------
    list of str or list of bool
        Sorted as scikit-learn sorts classes; with two, the second is the
        positive class.

    Raises
    ------
    ValueError
        More than ``MAX_LABEL_VALUES`` (64) distinct labels, or a missing one.
    """
    values = np.asarray(values)
    kind = label_kind(values)
    if kind == "str":
        names = sorted({str(v) for v in values.ravel()})
    elif kind == "bool":
        names = sorted({bool(v) for v in values.ravel()})
    else:
        raise ValueError("numeric labels are stored as their values (internal)")
    if len(names) > MAX_LABEL_VALUES:
        raise ValueError(f"y holds {len(names)} distinct {kind} labels ({names[:5]} ...); a store records at most "
                         f"{MAX_LABEL_VALUES} classes, and labels that are not numbers cannot be regression "
                         "targets. Encode them as numbers if they are targets, or merge classes.")
    return names


def label_codes(values, names, first_row=0):
    """Labels as their class codes ``k`` (float64) with ``names[k]`` the label; a label outside ``names`` is
    refused naming its row."""
    values = np.asarray(values)
    if values.dtype.kind == "O" and values.size:
        _label_kind(values, first_row=first_row)
    keys = values.astype(bool) if isinstance(names[0], bool) else values.astype(str)
    table = np.asarray(names, dtype=bool if isinstance(names[0], bool) else str)
    where = np.minimum(np.searchsorted(table, keys), table.shape[0] - 1)
    unknown = np.flatnonzero(table[where] != keys)
    if unknown.size:
        raise ValueError(f"y holds the label {keys[unknown[0]]!r} at row {first_row + int(unknown[0])}, which is "
                         f"not among the labels {names} found in y before writing; y changed while it was read.")
    return where.astype(np.float64)


def encode_labels(y, n):
    """Labels of a store: ``(codes_or_values float64, label_names or None)``.

    Numbers are kept as their values (``label_names`` None), as before;
    strings and bools become the codes ``0 .. K-1`` of their sorted distinct
    values, which are returned as ``label_names``.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.dtype.kind == "c":
        raise TypeError(f"y has complex dtype {y.dtype}; labels and targets are real numbers, strings or bools.")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {y.shape}.")
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries; they must match.")
    kind = label_kind(y) if y.size else "numeric"
    if kind == "numeric":
        try:
            return y.astype(np.float64), None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must hold numbers, strings or bools; got dtype {y.dtype} ({exc}).") from exc
    names = label_names_of(y)
    return label_codes(y, names), names
