"""Values of row images that Python's own types cannot hold. No I/O.

``MISSING`` (a column absent from a MINIMAL/NOBLOB image, unlike SQL NULL),
zero and partly-zero dates, and spatial values. Re-exported by
:mod:`replica_client.binlog.events` and the package.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final, NamedTuple

__all__ = ["MISSING", "Geometry", "InvalidDate", "InvalidDatetime", "Missing", "Row"]


class Missing(Enum):
    """Marks a column absent from a MINIMAL/NOBLOB row image (unlike SQL NULL)."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


#: The value of a column that is not part of a row image (binlog_row_image=MINIMAL).
MISSING: Final = Missing.MISSING

#: One row image: values in table column order (``MISSING`` where absent).
Row = tuple[Any, ...]


class InvalidDate(NamedTuple):
    """A DATE the server stores but Python's ``date`` cannot hold.

    Zero dates (``0000-00-00``) and partly-zero dates (``2024-00-15``) that
    MariaDB accepts without NO_ZERO_DATE / NO_ZERO_IN_DATE. Never confused with
    NULL (which is ``None``). ``str()`` gives the server's text form.
    """

    year: int
    month: int
    day: int

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"


class InvalidDatetime(NamedTuple):
    """A DATETIME/TIMESTAMP that Python's ``datetime`` cannot hold (zero parts)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    microsecond: int

    def __str__(self) -> str:
        text = (
            f"{self.year:04d}-{self.month:02d}-{self.day:02d} "
            f"{self.hour:02d}:{self.minute:02d}:{self.second:02d}"
        )
        return f"{text}.{self.microsecond:06d}" if self.microsecond else text


class Geometry(NamedTuple):
    """A spatial value as stored by the server: SRID and the WKB bytes."""

    srid: int
    wkb: bytes
