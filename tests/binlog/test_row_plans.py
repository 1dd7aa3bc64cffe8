"""replica_client.binlog.row_plans: the one table of value layouts, shared with the accelerator."""

from __future__ import annotations

import importlib

from replica_client.binlog import row_plans
from replica_client.binlog.constants import ColumnType as T
from replica_client.binlog.events import ColumnInfo

_UTF8MB4, _LATIN1, _BINARY, _SJIS = 45, 8, 63, 13


def _col(t: int, meta: int = 0, unsigned: bool = False, collation: int | None = None) -> ColumnInfo:
    return ColumnInfo(0, t, t, meta, True, "c", unsigned, collation)


def test_the_accelerator_uses_the_same_codes() -> None:
    # the compiled module itself, whatever REPLICA_CLIENT_PURE_PYTHON says
    speedups = importlib.import_module("replica_client._speedups")
    assert speedups.LAYOUT_CODES == row_plans.LAYOUTS
    assert speedups.STRING_CONVERSIONS == row_plans.CONVERSIONS


def test_every_layout_is_chosen_for_some_column() -> None:
    layouts = row_plans.LAYOUTS
    cases = {
        "I8": _col(T.TINY),
        "U8": _col(T.TINY, unsigned=True),
        "I16": _col(T.SHORT),
        "U16": _col(T.SHORT, unsigned=True),
        "I24": _col(T.INT24),
        "U24": _col(T.INT24, unsigned=True),
        "I32": _col(T.LONG),
        "U32": _col(T.LONG, unsigned=True),
        "I64": _col(T.LONGLONG),
        "U64": _col(T.LONGLONG, unsigned=True),
        "FLOAT": _col(T.FLOAT, 4),
        "DOUBLE": _col(T.DOUBLE, 8),
        "YEAR": _col(T.YEAR),
        "DATE": _col(T.DATE),
        "DATETIME2": _col(T.DATETIME2, 6),
        "TIMESTAMP2": _col(T.TIMESTAMP2, 3),
        "TIME2": _col(T.TIME2, 2),
        "BIT": _col(T.BIT, (1 << 8) | 0),
        "STRING": _col(T.VARCHAR, 40, collation=_UTF8MB4),
        "ENUM": _col(T.STRING, (T.ENUM << 8) | 1),
        "DECIMAL": _col(T.NEWDECIMAL, (10 << 8) | 2),
        "SET": _col(T.STRING, (T.SET << 8) | 8),
        "FALLBACK": _col(T.JSON, 4),
    }
    assert set(cases) == set(layouts)
    for name, col in cases.items():
        assert row_plans.column_spec(col)[0] == layouts[name], name


def test_strings_convert_in_c_only_where_the_encoding_is_flavour_independent() -> None:
    conv = row_plans.CONVERSIONS
    assert row_plans.column_spec(_col(T.VARCHAR, 300, collation=_UTF8MB4))[1:3] == (
        2,
        conv["AS_UTF8"],
    )
    assert row_plans.column_spec(_col(T.BLOB, 2, collation=_BINARY))[1:3] == (2, conv["AS_BYTES"])
    assert row_plans.column_spec(_col(T.VARCHAR, 10, collation=_LATIN1))[2] == conv["AS_LATIN1"]
    # sjis decodes through the server's own table: the Python reader's job
    assert row_plans.column_spec(_col(T.VARCHAR, 10, collation=_SJIS))[0] == row_plans.FALLBACK
    # BINARY(n) is padded back by the reader
    binary = _col(T.STRING, (T.STRING << 8) | 16, collation=_BINARY)
    assert row_plans.column_spec(binary)[0] == row_plans.FALLBACK
