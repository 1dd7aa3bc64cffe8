"""JSON-safe forms of decoded values and changes. No I/O.

One mapping for every JSON output of the project (CLI, Spark, examples):

==================  ==========================================================
Decimal             string, exact (``"12.50"``)
bytes               base64 string
date / datetime     ISO 8601 (TIMESTAMP values carry ``+00:00``)
timedelta (TIME)    the server's text form, ``"-838:59:59"``, ``"12:00:00.5"``
InvalidDate(time)   the server's text form, ``"0000-00-00"``
frozenset (SET)     sorted list of labels
Geometry            ``{"srid": n, "wkb": base64}``
dict / list (JSON)  converted recursively
JSON_NULL           ``null``, like SQL NULL (the ``Change`` tells them apart)
==================  ==========================================================

``change_envelope(change)`` gives a Debezium-like envelope: ``op`` c/u/d,
``before``, ``after`` and ``source`` (server_id, gtid, file, pos, ts_ms, db,
table).
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

from .binlog.events import JSON_NULL, Geometry, InvalidDate, InvalidDatetime
from .changes import Change

__all__ = [
    "OP_CODES",
    "change_envelope",
    "decimal_text",
    "json_row",
    "json_value",
    "set_labels",
    "time_text",
]

#: Change.op -> the one-letter code of the envelope.
#: Change.op -> the envelope's op ("s": a statement logged as SQL text that changed rows).
OP_CODES = {"insert": "c", "update": "u", "delete": "d", "read": "r", "statement": "s"}


def time_text(value: dt.timedelta) -> str:
    """A TIME value as the server prints it (hours may exceed 24, sign first)."""
    us = value // dt.timedelta(microseconds=1)
    sign = "-" if us < 0 else ""
    secs, frac = divmod(abs(us), 1_000_000)
    hours, rem = divmod(secs, 3600)
    text = f"{sign}{hours:02d}:{rem // 60:02d}:{rem % 60:02d}"
    return f"{text}.{frac:06d}".rstrip("0") if frac else text


def decimal_text(value: Decimal) -> str:
    """A DECIMAL value's exact text, never in exponent form: ``format(value, "f")``.

    ``str`` gives the same text whenever it has no exponent (a DECIMAL column's
    value has one only below 1e-6 or when it is a zero of more than 6
    decimals), in about half the time.
    """
    text = str(value)
    return text if "E" not in text else format(value, "f")


def set_labels(value: frozenset[Any] | set[Any]) -> list[Any]:
    """A SET value's JSON form: its labels' forms, sorted."""
    return sorted(json_value(v) for v in value)


def json_value(value: Any) -> Any:
    """A JSON-serialisable form of one decoded value."""
    if value is None or value is JSON_NULL:
        return None
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return time_text(value)
    if isinstance(value, (InvalidDate, InvalidDatetime)):
        return str(value)
    if isinstance(value, Geometry):
        return {"srid": value.srid, "wkb": base64.b64encode(value.wkb).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        return set_labels(value)
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def json_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row image (``Change.before``/``after``) with JSON-safe values."""
    if row is None:
        return None
    return {k: json_value(v) for k, v in row.items()}


def change_envelope(change: Change) -> dict[str, Any]:
    """The Debezium-like envelope of one change (a statement's SQL text is ``statement``)."""
    pos = change.position
    envelope = {
        "op": OP_CODES[change.op],
        "before": json_row(change.before),
        "after": json_row(change.after),
        "source": {
            "server_id": change.server_id,
            "gtid": change.gtid,
            "file": pos.file if pos is not None else None,
            "pos": pos.pos if pos is not None else None,
            "row": change.row_index,
            "ts_ms": int(change.timestamp.timestamp() * 1000),
            "db": change.schema,
            "table": change.table,
        },
    }
    if change.statement is not None:
        envelope["statement"] = change.statement
    return envelope
