"""The rows of a text result set (``COM_QUERY``) turned into values. No I/O.

Each row packet's payload is one length-encoded string per column (a length
prefix: one byte below ``0xfb``, or ``0xfc`` + 2, ``0xfd`` + 3, ``0xfe`` + 8
bytes little-endian; ``0xfb`` alone is NULL). :func:`parse_rows` reads them
and converts each value with its column's :class:`TextColumn` (made by
``TablePlan.text_columns`` in ``plan.py``): the value the binlog decoder gives
for that column, ``None`` for NULL.

One typing rule, two implementations: a :class:`TextColumn` holds a
:class:`TextCode`, which the compiled accelerator's ``TextRowPlan``
(``csrc/textrows.c``) parses itself, and the Python conversion, which it
calls for :attr:`TextCode.FALLBACK` columns and for any value it is not sure to
build identically (zero or invalid dates, texts not in the server's usual
form, ...). :func:`text_row_plan` picks the compiled plan when the accelerator
is loaded (``REPLICA_CLIENT_PURE_PYTHON=1`` turns it off); both give the same
values, of the same types, and raise :class:`~replica_client.errors.ProtocolError`
on a payload that ends inside a value or has bytes after the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from types import ModuleType
from typing import Any, Final, Protocol

from ..accel import speedups
from ..errors import ProtocolError

__all__ = [
    "ACCELERATED",
    "PythonTextRowPlan",
    "TextCode",
    "TextColumn",
    "TextRowPlan",
    "parse_rows",
    "text_row_plan",
]


class TextCode(IntEnum):
    """How a column's text becomes its value (``enum TextCode`` in ``csrc/textrows.c``,
    exported as ``TEXT_CODES``; a test checks that both agree)."""

    #: The Python conversion, always.
    FALLBACK = 0
    #: Integers, YEAR, ENUM/SET as index / bit mask: ``int``.
    INT = 1
    #: Binary strings and texts in a binary or unknown character set: ``bytes``.
    BYTES = 2
    #: utf8mb4 text: ``str``, or ``bytes`` when it is not valid UTF-8.
    UTF8 = 3
    #: utf8mb3 text: as UTF8, and ``bytes`` for a character above U+FFFF.
    UTF8MB3 = 4
    #: latin1 text (the server's: cp1252 in 0x80-0x9F, which goes to the Python conversion).
    LATIN1 = 5
    #: DOUBLE: ``float``.
    DOUBLE = 6
    #: FLOAT (selected as a double): ``float`` rounded to single precision.
    FLOAT32 = 7
    #: DECIMAL: ``Decimal``.
    DECIMAL = 8
    #: DATE: ``date`` (``InvalidDate`` by the Python conversion).
    DATE = 9
    #: DATETIME: naive ``datetime`` (``InvalidDatetime`` by the Python conversion).
    DATETIME = 10
    #: TIMESTAMP read at UTC: aware ``datetime`` in UTC.
    TIMESTAMP = 11
    #: TIME: ``timedelta``.
    TIME = 12


@dataclass(frozen=True, slots=True)
class TextColumn:
    """One column of a text result: its code and its Python conversion."""

    code: TextCode
    convert: Callable[[bytes], Any]


class TextRowPlan(Protocol):
    """The parser of one table's text rows (Python or compiled)."""

    def parse(self, payloads: Sequence[bytes]) -> list[tuple[Any, ...]]:
        """The rows of these row-packet payloads: values in column order, None for NULL.

        Raises:
            ProtocolError: a payload ends inside a value or has bytes after the last one.
        """
        ...


_speedups: Final[ModuleType | None] = speedups()
#: True when :func:`text_row_plan` gives the compiled accelerator's plan.
ACCELERATED: Final = _speedups is not None and hasattr(_speedups, "TextRowPlan")


@dataclass(frozen=True, slots=True)
class PythonTextRowPlan:
    """The pure-Python :class:`TextRowPlan`."""

    columns: tuple[TextColumn, ...]

    def parse(self, payloads: Sequence[bytes]) -> list[tuple[Any, ...]]:
        return parse_rows(self, payloads)


def text_row_plan(
    columns: Sequence[TextColumn], accelerator: ModuleType | None = _speedups
) -> TextRowPlan:
    """The plan of these columns: the compiled one when ``accelerator`` (by default the
    loaded accelerator, if any) is given, else :class:`PythonTextRowPlan`."""
    if accelerator is None:
        return PythonTextRowPlan(tuple(columns))
    specs = tuple((int(c.code), c.convert) for c in columns)
    plan: TextRowPlan = accelerator.TextRowPlan(specs, ProtocolError)
    return plan


def _past_end(row: int, column: int, size: int) -> ProtocolError:
    return ProtocolError(f"text row {row}: column {column} runs past the end of its {size} bytes")


def _long_length(payload: bytes, pos: int, row: int, column: int) -> tuple[int, int]:
    """(length, start) of a value whose length prefix at ``pos`` is 0xfc, 0xfd or 0xfe."""
    first = payload[pos]
    width = 2 if first == 0xFC else 3 if first == 0xFD else 8 if first == 0xFE else 0
    if not width:
        raise ProtocolError(f"text row {row}: column {column} has no length (first byte 0xff)")
    start = pos + 1 + width
    if start > len(payload):
        raise _past_end(row, column, len(payload))
    return int.from_bytes(payload[pos + 1 : start], "little"), start


def parse_rows(plan: PythonTextRowPlan, payloads: Sequence[bytes]) -> list[tuple[Any, ...]]:
    """The rows of ``payloads`` (one text row packet's payload each), by ``plan``."""
    converts = [c.convert for c in plan.columns]
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    for row, payload in enumerate(payloads):
        pos = 0
        size = len(payload)
        values: list[Any] = []
        for column, convert in enumerate(converts):
            if pos >= size:
                raise _past_end(row, column, size)
            n = payload[pos]
            if n < 0xFB:
                start = pos + 1
            elif n == 0xFB:
                values.append(None)
                pos += 1
                continue
            else:
                n, start = _long_length(payload, pos, row, column)
            pos = start + n
            if pos > size:
                raise _past_end(row, column, size)
            values.append(convert(payload[start:pos]))
        if pos != size:
            raise ProtocolError(f"text row {row}: {size - pos} byte(s) after its last column")
        append(tuple(values))
    return rows
