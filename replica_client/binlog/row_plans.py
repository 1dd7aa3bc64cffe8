"""Row-image plans for the optional compiled accelerator. No I/O.

:func:`compile_plan` turns a table definition into the accelerator's
``RowPlan``: one ``(code, a, b, obj, fallback)`` spec per column, where
``code`` names a value layout the C code decodes itself (integers, floats,
temporal types, strings in utf8mb4/utf8mb3/latin-1/binary, ENUM, SET, DECIMAL, BIT)
and ``fallback`` is the column's pure-Python reader (:func:`columns.reader_for`).

The C code hands a value to ``fallback(view, pos)`` whenever it is not sure
to build the very value the Python reader builds: any column type without a
code here (JSON, GEOMETRY, VECTOR, BINARY(n), other charsets, old temporal
formats), invalid dates, DECIMAL digit groups out of range, values that run
past the buffer, latin-1 bytes in 0x80-0x9F. That keeps values *and* errors
identical on both paths; ``tests`` run the decoder suite on each path.

``REPLICA_CLIENT_PURE_PYTHON=1`` in the environment turns the accelerator
off (:data:`ACCELERATED` is then False).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Final, Protocol

from ..accel import speedups
from .charsets import charset_for_collation, encoding_for_collation
from .columns import ColumnReader, typed_binary_converter
from .constants import BINARY_COLLATION, ColumnType
from .decimal import MAX_PRECISION
from .events import MISSING, ColumnInfo, Row
from .table_map import real_string_type

__all__ = ["ACCELERATED", "CONVERSIONS", "LAYOUTS", "RowPlan", "column_spec", "compile_plan"]

T = ColumnType


class RowPlan(Protocol):
    """The accelerator's compiled decoder of one table definition."""

    def decode_rows(
        self, view: memoryview, pos: int, end: int, present: int, null_len: int
    ) -> tuple[tuple[Row, ...], int]: ...

    def decode_update_rows(
        self,
        view: memoryview,
        pos: int,
        end: int,
        present: int,
        null_len: int,
        present_after: int,
        null_len_after: int,
    ) -> tuple[tuple[tuple[Row, Row], ...], int]: ...

    def decode_image(
        self, view: memoryview, pos: int, present: int, null_len: int
    ) -> tuple[Row, int]: ...


_speedups: Final[Any] = speedups()
#: True when row images are decoded by the compiled accelerator.
ACCELERATED: Final = _speedups is not None

#: The accelerator's value layouts by name: the one table of them, ``enum Code`` in
#: ``csrc/rowplan.h`` (``csrc/rowplan.c`` exports its own as ``LAYOUT_CODES``;
#: tests/binlog/test_row_plans.py checks that they agree). ``column_spec`` picks one per column.
LAYOUTS: Final[dict[str, int]] = {
    name: code
    for code, name in enumerate(
        [
            "FALLBACK",
            "I8",
            "U8",
            "I16",
            "U16",
            "I24",
            "U24",
            "I32",
            "U32",
            "I64",
            "U64",
            "FLOAT",
            "DOUBLE",
            "YEAR",
            "DATE",
            "DATETIME2",
            "TIMESTAMP2",
            "TIME2",
            "BIT",
            "STRING",
            "ENUM",
            "DECIMAL",
            "SET",
        ]
    )
}
#: How a STRING layout turns bytes into a value (``csrc/rowplan.h``; exported by
#: ``csrc/rowplan.c`` as ``STRING_CONVERSIONS``).
CONVERSIONS: Final[dict[str, int]] = {"AS_BYTES": 0, "AS_UTF8": 1, "AS_LATIN1": 2, "AS_UTF8MB3": 3}

FALLBACK: Final = LAYOUTS["FALLBACK"]
_INT_CODES: Final[dict[tuple[int, bool], int]] = {
    (t, unsigned): LAYOUTS[("U" if unsigned else "I") + str(bits)]
    for t, bits in ((T.TINY, 8), (T.SHORT, 16), (T.INT24, 24), (T.LONG, 32), (T.LONGLONG, 64))
    for unsigned in (False, True)
}
FLOAT: Final = LAYOUTS["FLOAT"]
DOUBLE: Final = LAYOUTS["DOUBLE"]
YEAR: Final = LAYOUTS["YEAR"]
DATE: Final = LAYOUTS["DATE"]
DATETIME2: Final = LAYOUTS["DATETIME2"]
TIMESTAMP2: Final = LAYOUTS["TIMESTAMP2"]
TIME2: Final = LAYOUTS["TIME2"]
BIT: Final = LAYOUTS["BIT"]
STRING: Final = LAYOUTS["STRING"]
ENUM: Final = LAYOUTS["ENUM"]
DECIMAL: Final = LAYOUTS["DECIMAL"]
SET: Final = LAYOUTS["SET"]

_AS_BYTES: Final = CONVERSIONS["AS_BYTES"]
_AS_UTF8: Final = CONVERSIONS["AS_UTF8"]
_AS_LATIN1: Final = CONVERSIONS["AS_LATIN1"]
_AS_UTF8MB3: Final = CONVERSIONS["AS_UTF8MB3"]

_PREFIX_SIZES: Final = (1, 2, 3, 4)

Spec = tuple[int, int, int, Any]


def _string_spec(prefix: int, collation: int | None) -> Spec:
    charset = charset_for_collation(collation)
    if charset is None or charset == "binary":  # no charset metadata, or an unknown id
        return (STRING, prefix, _AS_BYTES, None)
    # The flavour-independent encodings; the others (tables that may depend on
    # the flavour) are the Python reader's.
    encoding = encoding_for_collation(collation)
    if encoding == "utf-8":
        return (STRING, prefix, _AS_UTF8, None)
    if encoding == "utf8mb3":
        return (STRING, prefix, _AS_UTF8MB3, None)
    if encoding == "latin1-mysql":
        return (STRING, prefix, _AS_LATIN1, None)
    return (FALLBACK, 0, 0, None)


def column_spec(col: ColumnInfo) -> Spec:
    """(code, a, b, obj) for one column; mirrors :func:`columns.reader_for`."""
    if col.data_type is not None and typed_binary_converter(col) is not None:
        return (FALLBACK, 0, 0, None)  # converted by the reader (UUID, INET, VECTOR)
    t, meta = col.type, col.meta
    if t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG):
        return (_INT_CODES[(t, bool(col.unsigned))], 0, 0, None)
    if t == T.FLOAT:
        return (FLOAT, 0, 0, None)
    if t == T.DOUBLE:
        return (DOUBLE, 0, 0, None)
    if t == T.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        if 0 <= scale <= precision <= MAX_PRECISION and precision > 0:
            return (DECIMAL, precision, scale, Decimal)
        return (FALLBACK, 0, 0, None)
    if t == T.YEAR:
        return (YEAR, 0, 0, None)
    if t in (T.DATE, T.NEWDATE):
        return (DATE, 0, 0, None)
    if t == T.TIME2:
        return (TIME2, meta, 0, None) if 0 <= meta <= 6 else (FALLBACK, 0, 0, None)
    if t == T.DATETIME2:
        return (DATETIME2, meta, 0, None)
    if t == T.TIMESTAMP2:
        return (TIMESTAMP2, meta, 0, dt.UTC)
    if t == T.BIT:
        nbits = (meta & 0xFF) * 8 + (meta >> 8)
        nbytes = (nbits + 7) // 8
        return (BIT, nbytes, 0, None) if nbytes <= 8 else (FALLBACK, 0, 0, None)
    if t in (T.VARCHAR, T.VAR_STRING):
        return _string_spec(1 if meta < 256 else 2, col.collation)
    if t == T.STRING:
        real, length = real_string_type(meta)
        if real == T.ENUM:
            return _enum_spec(length, col.enum_values)
        if real == T.SET:
            return _set_spec(length, col.set_values)
        if col.collation == BINARY_COLLATION:
            return (FALLBACK, 0, 0, None)  # BINARY(n): padded back by the reader
        return _string_spec(1 if length < 256 else 2, col.collation)
    if t == T.ENUM:
        return _enum_spec(meta & 0xFF, col.enum_values)
    if t == T.SET:
        return _set_spec(meta & 0xFF, col.set_values)
    if t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB) and meta in _PREFIX_SIZES:
        return _string_spec(meta, col.collation)
    return (FALLBACK, 0, 0, None)


def _enum_spec(pack_len: int, labels: tuple[str, ...] | None) -> Spec:
    if pack_len not in (1, 2):  # what servers write; other sizes go to the reader
        return (FALLBACK, 0, 0, None)
    return (ENUM, pack_len, 0, None if labels is None else ("", *labels))


def _set_spec(pack_len: int, labels: tuple[str, ...] | None) -> Spec:
    if not 1 <= pack_len <= 8:
        return (FALLBACK, 0, 0, None)
    return (SET, pack_len, 0, labels)


def compile_plan(
    columns: tuple[ColumnInfo, ...], readers: tuple[ColumnReader, ...]
) -> RowPlan | None:
    """The accelerator's plan for these columns, or None when it is not available."""
    if _speedups is None:
        return None
    specs = tuple((*column_spec(col), read) for col, read in zip(columns, readers, strict=True))
    plan: RowPlan = _speedups.RowPlan(specs, MISSING)
    return plan
