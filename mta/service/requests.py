"""Requests and replies shared by windows and streams: batches of updates (as messages or
in columns), parameters, the errors that name the field at fault (``columns.ts[2]: ...``),
and results' values."""

from __future__ import annotations

import math
from typing import Any, Mapping

import grpc
import msgpack
import numpy as np

import kvs
from mta.monoid import Record
from mta.service.registry import map_key
from mta.v1 import aggregation_pb2 as pb

#: Longest key of a keyed window or stream, in characters.
MAX_KEY = 1024
#: The message that ends open streams at shutdown (code UNAVAILABLE: retry elsewhere or later).
SHUTTING_DOWN = "server shutting down: open a new stream (to this server once restarted, or another)"


def store_failure(error: kvs.StoreError) -> "BadRequest":
    """UNAVAILABLE (retry later), or FAILED_PRECONDITION when another writer (another server
    on the same store) has taken the window over: retrying here cannot succeed."""
    fenced = any(isinstance(e, (kvs.WindowFenced, kvs.WindowBusy)) for e in (error, error.__cause__))
    return BadRequest(grpc.StatusCode.FAILED_PRECONDITION if fenced else grpc.StatusCode.UNAVAILABLE,
                      f"store: {error}")


class BadRequest(Exception):
    """Maps to a gRPC status; the message starts with the path of the field at fault in
    the request (proto field names, ``[i]`` for repeated fields, ``["key"]`` for maps)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def unpack_payload(payload: bytes, where: str) -> Any:
    try:
        return msgpack.unpackb(payload, use_list=False)
    except Exception:  # noqa: BLE001 - any malformed payload is the client's error
        raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: not valid msgpack") from None


def invalid(where: str, reason: str) -> BadRequest:
    return BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: {reason}")


def same_length(where: str, length: int, n: int) -> None:
    if length != n:
        raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: {length} entries for {n} timestamps")


def param_value(value: pb.Param, where: str) -> Any:
    kind = value.WhichOneof("kind")
    if kind is None:
        raise invalid(where, "no value set (int_value, float_value, string_value or bool_value)")
    return getattr(value, kind)


def update_fault(request: Any, monoid: Any, position: int | None, part: str, reason: str) -> BadRequest:
    """The INVALID_ARGUMENT for the update at ``position`` of a batch (an InsertRequest or a
    StreamInsertRequest), naming its field: the timestamp (``part`` "timestamp") or the
    value (down to the dimension). ``position`` None: the fault is not one update's."""
    columns = request.HasField("columns")
    if position is None:
        return invalid("columns" if columns else "updates", reason)
    if columns:
        batch = request.columns
        if part == "timestamp":
            return invalid(f"columns.{'ts' if len(batch.ts) else 'ts_float'}[{position}]", reason)
        if len(batch.payloads):
            return invalid(f"columns.payloads[{position}]", reason)
        if not len(batch.values) and isinstance(monoid, Record):
            row = {name: column.values[position] for name, column in batch.dimensions.items()}
            name, reason, number = dimension_fault(monoid, row)
            where = "columns.dimensions" if name is None else f"columns.dimensions{map_key(name)}"
            return invalid(f"{where}.values[{position}]" if number else where, reason)
        return invalid(f"columns.values[{position}]", reason)
    update = request.updates[position]
    if part == "timestamp":
        return invalid(f"updates[{position}].{update.WhichOneof('time')}", reason)
    if update.payload:
        return invalid(f"updates[{position}].payload", reason)
    if isinstance(monoid, Record):
        name, reason, _ = dimension_fault(monoid, dict(update.dimensions))
        return invalid(f"updates[{position}].dimensions{'' if name is None else map_key(name)}", reason)
    return invalid(f"updates[{position}].value", reason)


def _no_dimensions(request: Any, values: list, what: str) -> None:
    """Refuse updates of a one-monoid window (or stream) that carry ``dimensions``. Only those with a
    zero (unset) value can: reading a map field costs more than the rest of the rows
    loop, so only they are looked at."""
    for i, value in enumerate(values):
        if not value and request.updates[i].dimensions:
            raise invalid(f"updates[{i}].dimensions",
                           f"{what} has one monoid and no dimensions: send value")


def dimension_fault(monoid: Record, value: Mapping[str, Any]) -> tuple[str | None, str, bool]:
    """Why ``monoid`` cannot lift ``value`` (a mapping it failed on): (the dimension at
    fault, None when one is missing; the reason; whether its number is the fault rather
    than its name)."""
    fields = monoid.fields
    for name in value:
        if name not in fields:
            return name, f"the window has no dimension {name!r} (dimensions: {', '.join(fields)})", False
    for name, dimension in fields.items():
        if name not in value:
            return None, f"dimension {name!r} is missing (dimensions: {', '.join(fields)})", False
        try:
            dimension.lift(value[name])
        except (TypeError, ValueError) as error:
            return name, str(error), True
    raise AssertionError(f"{monoid!r} lifts {value!r}")  # the caller saw it fail


def _rows(monoid: Any, request: Any, what: str) -> tuple[list[str], list, list]:
    """Keys, timestamps and values of ``request.updates``."""
    record = isinstance(monoid, Record)
    keys, timestamps, values = [], [], []
    for i, update in enumerate(request.updates):
        kind = update.WhichOneof("time")
        if kind is None:
            raise invalid(f"updates[{i}].ts", "required (ts or ts_float)")
        if update.payload:
            values.append(unpack_payload(update.payload, f"updates[{i}].payload"))
        elif record:
            values.append(dict(update.dimensions))
        else:
            values.append(update.value)
        timestamps.append(getattr(update, kind))
        keys.append(update.key)
    if not record and not all(values):
        _no_dimensions(request, values, what)
    return keys, timestamps, values


def _columns(monoid: Any, columns: pb.Columns, what: str, arrays: bool) -> tuple[list[str], Any, Any]:
    """Keys, timestamps and values of a batch in columns (``arrays``: numbers as numpy
    arrays, read straight from the message's packed fields, about ten times faster than
    lists of them)."""
    if columns.ts and columns.ts_float:
        raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, "columns.ts, columns.ts_float: send one of them")
    column = np.array if arrays else _as_list
    timestamps = column(columns.ts, np.int64) if columns.ts else column(columns.ts_float, np.float64)
    n = len(timestamps)
    used = [name for name in ("values", "dimensions", "payloads") if len(getattr(columns, name))]
    if len(used) > 1:
        raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"columns.{used[0]}, columns.{used[1]}: send one")
    record = isinstance(monoid, Record)
    if used == ["dimensions"] and not record:
        raise invalid("columns.dimensions", f"{what} has one monoid and no dimensions: send values")
    if used == ["values"] and record:  # as for updates, whose value a window with dimensions does not read
        raise invalid("columns.values", f"{what} has dimensions: send columns.dimensions")
    if used == ["dimensions"] or (not used and record):
        names = list(columns.dimensions)
        series = [columns.dimensions[name].values for name in names]
        for name, column in zip(names, series):
            same_length(f"columns.dimensions{map_key(name)}.values", len(column), n)
        values = [dict(zip(names, row)) for row in zip(*series)] if names else [{}] * n
    elif used == ["payloads"]:
        same_length("columns.payloads", len(columns.payloads), n)
        values = [unpack_payload(p, f"columns.payloads[{i}]") for i, p in enumerate(columns.payloads)]
    else:
        values = column(columns.values, np.float64)
        same_length("columns.values", len(values), n)
    keys = list(columns.keys)
    if keys:
        same_length("columns.keys", len(keys), n)
    return keys, timestamps, values


def _as_list(field: Any, dtype: Any) -> list:
    return list(field)


def read_batch(request: Any, monoid: Any, keyed: bool, what: str,
               arrays: bool = False) -> tuple[list[str], Any, Any, str]:
    """Keys, timestamps and values of a batch (``request.updates`` or ``request.columns``)
    for ``what`` (e.g. "window 'w'"), and the path of an update's key (``{}``: its index).
    Keys are checked: none for an unkeyed resource, 1 to MAX_KEY characters for a keyed one.
    Timestamps and values are as sent (the resource checks them); ``arrays``: numbers sent
    in columns come as numpy arrays (``mta.Window.check`` takes them in numpy)."""
    if request.HasField("columns"):
        if request.updates:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, "updates, columns: send one of them, not both")
        keys, timestamps, values = _columns(monoid, request.columns, what, arrays)
        where = "columns.keys[{}]"
    else:
        keys, timestamps, values = _rows(monoid, request, what)
        where = "updates[{}].key"
    if not keyed:
        if any(keys):
            i = next(i for i, key in enumerate(keys) if key)
            raise invalid(where.format(i), f"{what} is not keyed")
        return keys, timestamps, values, where
    keys = keys or [""] * len(timestamps)
    for i, key in enumerate(keys):
        if not key or len(key) > MAX_KEY:
            raise invalid(where.format(i), f"1 to {MAX_KEY} characters in keyed {what}, got {len(key)}")
    return keys, timestamps, values, where


def fill_values(result: Any, lowered: Any, record: bool) -> None:
    """Put an aggregate (``monoid.lower``'s, a dict for a Record) into ``result.values`` (by
    dimension, "value" for one monoid) where it is a finite number; if any other
    dimension has something (e.g. a plugin monoid's result), all of them go to
    ``result.payload`` in msgpack."""
    values = lowered if record else {"value": lowered}
    other = False
    for dimension, value in values.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            result.values[dimension] = value
        elif value is not None and not (isinstance(value, float) and math.isinf(value)):
            other = True
    if other:
        result.payload = msgpack.packb(values, default=str)
