"""The compiled accelerator decodes row images exactly as the pure-Python path.

Differential property test: random tables drawn from every column layout the
accelerator decodes itself (and some it hands to the Python readers), random
presence bitmaps and random bytes; both paths must give the same rows (same
types, same values, MISSING/None in the same places) and the same end
position, or both must raise an error the event decoder reports as
MalformedEventError. The whole decoder suite also runs once per path
(``scripts/test.sh``, ``REPLICA_CLIENT_PURE_PYTHON=1``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replica_client.binlog import rowplan
from replica_client.binlog.constants import ColumnType as T
from replica_client.binlog.decoder import _DECODE_ERRORS
from replica_client.binlog.events import ColumnInfo, TableMapEvent
from replica_client.binlog.header import EventHeader
from replica_client.binlog.rows import RowDecoder
from replica_client.errors import MalformedEventError


def test_accelerator_is_built() -> None:
    # The suite runs the decoder on both paths; without the extension the
    # "accelerated" run would silently be a second pure run. scripts/test.sh
    # leaves this module out of its REPLICA_CLIENT_PURE_PYTHON=1 run.
    assert rowplan.ACCELERATED, (
        "replica_client._speedups is not built or is switched off "
        "(install with a C compiler and the Python headers; unset REPLICA_CLIENT_PURE_PYTHON)"
    )


_UTF8MB4, _LATIN1, _BINARY, _SJIS = 45, 8, 63, 13
_LABELS = ("new", "paid", "shipped")

# (type, real_type, meta, unsigned, collation, enum_values, set_values)
_COLUMNS: list[tuple[int, int, int, bool | None, int | None, Any, Any]] = [
    *[
        (t, t, 0, u, None, None, None)
        for t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG)
        for u in (False, True, None)
    ],
    (T.FLOAT, T.FLOAT, 4, None, None, None, None),
    (T.DOUBLE, T.DOUBLE, 8, None, None, None, None),
    *[
        (T.NEWDECIMAL, T.NEWDECIMAL, (p << 8) | s, None, None, None, None)
        for p, s in ((1, 0), (5, 2), (10, 0), (18, 9), (20, 6), (38, 10), (65, 30), (9, 9))
    ],
    (T.YEAR, T.YEAR, 0, None, None, None, None),
    (T.DATE, T.DATE, 0, None, None, None, None),
    *[(T.TIME2, T.TIME2, f, None, None, None, None) for f in range(7)],
    *[(T.DATETIME2, T.DATETIME2, f, None, None, None, None) for f in range(7)],
    *[(T.TIMESTAMP2, T.TIMESTAMP2, f, None, None, None, None) for f in range(7)],
    # BIT metadata: bits % 8 in the high byte, whole bytes in the low byte
    *[
        (T.BIT, T.BIT, ((bits % 8) << 8) | (bits // 8), None, None, None, None)
        for bits in (1, 7, 8, 13, 64, 65)
    ],
    *[
        (T.VARCHAR, T.VARCHAR, m, None, c, None, None)
        for m in (20, 300)
        for c in (_UTF8MB4, _LATIN1, _BINARY, _SJIS, None)
    ],
    *[
        (T.STRING, T.STRING, (0xFE << 8) | 16, None, c, None, None)
        for c in (_UTF8MB4, _LATIN1, _BINARY)
    ],
    *[(T.BLOB, T.BLOB, m, None, c, None, None) for m in (1, 2, 3, 4) for c in (_UTF8MB4, _BINARY)],
    (T.STRING, T.ENUM, (T.ENUM << 8) | 1, None, None, _LABELS, None),
    (T.STRING, T.ENUM, (T.ENUM << 8) | 2, None, None, None, None),
    (T.STRING, T.SET, (T.SET << 8) | 1, None, None, None, _LABELS),
    (T.STRING, T.SET, (T.SET << 8) | 8, None, None, None, None),
    (T.JSON, T.JSON, 4, None, None, None, None),
]


def _table(picks: list[int]) -> TableMapEvent:
    cols = tuple(
        ColumnInfo(i, t, real, meta, True, f"c{i}", unsigned, coll, enums, sets)
        for i, (t, real, meta, unsigned, coll, enums, sets) in enumerate(_COLUMNS[p] for p in picks)
    )
    header = EventHeader(0, 19, 1, 0, 0, 0)
    return TableMapEvent(header, 1, 0, "db", "t", cols)


def _typed(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_typed(v) for v in value)
    return (type(value).__name__, repr(value))


def _outcome(call: Callable[[RowDecoder], object], decoder: RowDecoder) -> Any:
    try:
        return ("ok", _typed(call(decoder)))
    except MalformedEventError:
        return ("error",)
    except _DECODE_ERRORS:
        return ("error",)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(_COLUMNS) - 1), min_size=1, max_size=8),
    data=st.binary(max_size=120),
    present_seed=st.integers(0, 255),
    after_seed=st.integers(0, 255),
    full=st.booleans(),
)
def test_accelerated_rows_equal_pure_rows(
    picks: list[int], data: bytes, present_seed: int, after_seed: int, full: bool
) -> None:
    table = _table(picks)
    fast = RowDecoder(table)
    pure = RowDecoder(table)
    pure._plan = None
    assert fast._plan is not None
    n = len(picks)
    everything = (1 << n) - 1
    present = everything if full else present_seed & everything
    after = everything if full else after_seed & everything
    view = memoryview(data)
    end = len(data)
    calls: list[Callable[[RowDecoder], object]] = [
        lambda d: d.decode_rows(view, 0, end, present),
        lambda d: d.decode_update_rows(view, 0, end, present, after),
        lambda d: d.decode_image(view, 0, present),
    ]
    for call in calls:
        assert _outcome(call, fast) == _outcome(call, pure)
