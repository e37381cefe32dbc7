"""A batch given in columns: ``insert_many(timestamps, values)`` of :class:`mta.Window` and
:class:`mta.Stream` takes each column as a numpy array, an Arrow array, any object with
the buffer protocol (``array.array``, ``memoryview``) or a sequence, and checks it as the
pairs form does. Values come out as Python numbers (``tolist``), so a batch in columns
gives exactly the results of the same batch in pairs."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_list(column: Any, name: str) -> list:
    """``column`` as a list of Python values; ``name`` ("timestamps", "values") names it
    in the errors. Arrow nulls become None (refused by the checks where a value is)."""
    if isinstance(column, list):
        return column
    if isinstance(column, (str, bytes, bytearray)):
        raise TypeError(f"{name} must be an array or a sequence, got {type(column).__name__}")
    ndim = getattr(column, "ndim", None)
    if ndim is not None and hasattr(column, "tolist"):  # numpy arrays
        if ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {column.shape}")
        return column.tolist()
    if hasattr(column, "to_pylist"):  # Arrow arrays and chunked arrays
        return column.to_pylist()
    try:
        view = memoryview(column)
    except TypeError:
        pass
    else:
        if view.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {view.shape}")
        return view.tolist()
    try:
        return list(column)
    except TypeError:
        raise TypeError(f"{name} must be an array or a sequence, got {type(column).__name__}") from None


def numeric_array(column: Any) -> np.ndarray | None:
    """``column`` as a 1-D int64 or float64 numpy array holding the same values, when it is a
    numpy array (or an Arrow array or a pandas Series without nulls) of ints or floats that
    these hold exactly; None for anything else (lists, objects, bools, uint64, other shapes),
    which the general path takes: a masked array too (its hidden values would count; as a
    list they are None, which the checks refuse)."""
    if isinstance(column, np.ma.MaskedArray):
        return None
    if not isinstance(column, np.ndarray):
        if not hasattr(column, "to_numpy"):
            return None
        if hasattr(column, "null_count"):  # Arrow: numbers without nulls convert without a copy
            import pyarrow.types as types
            if column.null_count or not (types.is_integer(column.type) or types.is_floating(column.type)):
                return None
        column = column.to_numpy()
        if not isinstance(column, np.ndarray):
            return None
    if column.ndim != 1:
        return None
    kind, size = column.dtype.kind, column.dtype.itemsize
    if kind == "f" and size <= 8:
        return column.astype(np.float64, copy=False)
    if kind == "i" or (kind == "u" and size < 8):
        return column.astype(np.int64, copy=False)
    return None
