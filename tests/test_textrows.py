"""Text result rows (snapshot/textrows.py): the compiled plan, the Python plan and the
per-column conversions (``TablePlan.converters``) give the same values, of the same
types, and the same errors, for the texts MariaDB/MySQL write for each column type.

The compiled module is imported by name (the suite needs it built), so the compiled
plan is checked in the pure-Python run too; what ``text_plan`` picks follows
``REPLICA_CLIENT_PURE_PYTHON``.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replica_client.accel import speedups
from replica_client.errors import ProtocolError
from replica_client.snapshot import plan_table, select_sql
from replica_client.snapshot.plan import SESSION_SQL, TablePlan
from replica_client.snapshot.textrows import (
    ACCELERATED,
    PythonTextRowPlan,
    TextCode,
    TextColumn,
    text_row_plan,
)
from replica_client.testing.server import DatabaseServer

__all__: list[str] = []

COMPILED: ModuleType = importlib.import_module("replica_client._speedups")

BINARY, LATIN1, UTF8MB3, UTF8MB4 = 63, 8, 33, 45

# -- the texts servers write ---------------------------------------------------------------


def _ascii(s: str) -> bytes:
    return s.encode("ascii")


def _frac(us: int, digits: int) -> str:
    return "" if digits == 0 else "." + f"{us:06d}"[:digits]


_INTS = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 10**18, -(10**18) + 1]),
).map(lambda n: _ascii(str(n)))
_YEARS = st.integers(0, 2155).map(lambda y: _ascii(f"{y:04d}"))


def _render_float(x: float, form: int) -> bytes:
    text = (repr(x), f"{x:.17g}", f"{x:g}", f"{x:.15g}")[form]
    return _ascii(text.replace("e+", "e"))  # the servers write 1e308, not 1e+308


_DOUBLES = st.builds(
    _render_float, st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 3)
)
_FLOATS = st.builds(
    _render_float,
    st.one_of(st.floats(width=32, allow_nan=False, allow_infinity=False), st.floats(-3e38, 3e38)),
    st.integers(0, 3),
)


@st.composite
def _decimals(draw: st.DrawFn) -> bytes:
    scale = draw(st.sampled_from([0, 2, 10, 30]))
    whole = draw(st.integers(0, 10**35 - 1))
    frac = draw(st.integers(0, 10**scale - 1))
    sign = "-" if draw(st.booleans()) and (whole or frac) else ""
    return _ascii(f"{sign}{whole}." + f"{frac:0{scale}d}" if scale else f"{sign}{whole}")


_VALID_DATES = st.dates().map(lambda d: (d.year, d.month, d.day))
_DATE_PARTS = st.one_of(
    _VALID_DATES,
    st.tuples(st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31)),
    st.just((0, 0, 0)),
)
_DATES = _DATE_PARTS.map(lambda p: _ascii(f"{p[0]:04d}-{p[1]:02d}-{p[2]:02d}"))


@st.composite
def _datetimes(draw: st.DrawFn, dates: st.SearchStrategy[tuple[int, int, int]]) -> bytes:
    y, m, d = draw(dates)
    if draw(st.integers(0, 9)) == 0:
        return b"0000-00-00 00:00:00"
    h, mi, s = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    us, digits = draw(st.integers(0, 999999)), draw(st.integers(0, 6))
    return _ascii(f"{y:04d}-{m:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}{_frac(us, digits)}")


@st.composite
def _times(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([b"-838:59:59.000000", b"838:59:59", b"-00:00:00.000001"]))
    sign = "-" if draw(st.booleans()) else ""
    h, m, s = draw(st.integers(0, 838)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    us, digits = draw(st.integers(0, 999999)), draw(st.integers(0, 6))
    return _ascii(f"{sign}{h:02d}:{m:02d}:{s:02d}{_frac(us, digits)}")


_UTF8 = st.one_of(
    st.text(max_size=40).map(lambda s: s.encode("utf-8")),
    st.text(alphabet="a\u00e9\u20ac\U0001f600\U00010348", max_size=8).map(str.encode),
    st.binary(max_size=12),  # not UTF-8 (mostly): kept as bytes
)
_SET_LABELS = st.lists(st.sampled_from(["a", "b", "c\u00e9"]), unique=True).map(
    lambda labels: ",".join(labels).encode()
)

#: (name, DATA_TYPE, COLUMN_TYPE, collation, code, texts) of one column per case.
CASES: list[tuple[str, str, str, int, TextCode, st.SearchStrategy[bytes]]] = [
    ("i", "bigint", "bigint unsigned", BINARY, TextCode.INT, _INTS),
    ("y", "year", "year(4)", BINARY, TextCode.INT, _YEARS),
    ("vb", "varbinary", "varbinary(400)", BINARY, TextCode.BYTES, st.binary(max_size=300)),
    ("tb", "varchar", "varchar(40)", BINARY, TextCode.BYTES, st.binary(max_size=40)),
    ("u4", "varchar", "varchar(40)", UTF8MB4, TextCode.UTF8, _UTF8),
    ("j", "json", "longtext", UTF8MB4, TextCode.UTF8, _UTF8),
    ("u3", "text", "text", UTF8MB3, TextCode.UTF8MB3, _UTF8),
    ("l1", "varchar", "varchar(40)", LATIN1, TextCode.LATIN1, st.binary(max_size=20)),
    ("d", "double", "double", BINARY, TextCode.DOUBLE, _DOUBLES),
    ("f", "float", "float", BINARY, TextCode.FLOAT32, _FLOATS),
    ("dec", "decimal", "decimal(65,30)", BINARY, TextCode.DECIMAL, _decimals()),
    ("dt", "date", "date", BINARY, TextCode.DATE, _DATES),
    ("dtm", "datetime", "datetime(6)", BINARY, TextCode.DATETIME, _datetimes(_DATE_PARTS)),
    # (a TIMESTAMP is valid or all zero)
    ("ts", "timestamp", "timestamp(6)", BINARY, TextCode.TIMESTAMP, _datetimes(_VALID_DATES)),
    ("tm", "time", "time(6)", BINARY, TextCode.TIME, _times()),
    ("b", "bit", "bit(10)", BINARY, TextCode.FALLBACK, st.binary(min_size=1, max_size=2)),
    ("s", "set", "set('a','b','cé')", UTF8MB4, TextCode.FALLBACK, _SET_LABELS),
]
PLAN = plan_table("s", "t", [c[:3] for c in CASES], ["i"], labels=True, mariadb=True)
COLLATIONS = [c[3] for c in CASES]
COLUMNS = PLAN.text_columns(COLLATIONS)


def lenenc(value: bytes | None, wide: bool = False) -> bytes:
    """One length-encoded string (``wide``: with the 8-byte length, also valid)."""
    if value is None:
        return b"\xfb"
    n = len(value)
    if wide:
        return b"\xfe" + n.to_bytes(8, "little") + value
    if n < 0xFB:
        return bytes([n]) + value
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little") + value
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little") + value
    return b"\xfe" + n.to_bytes(8, "little") + value


# -- comparing outcomes ------------------------------------------------------------------------


def _key(value: Any) -> Any:
    """Equal keys: the same value of the same type (-0.0 is not 0.0, 1.50 is not 1.5)."""
    if isinstance(value, tuple):
        return (type(value), tuple(_key(v) for v in value))
    if isinstance(value, list):
        return [_key(v) for v in value]
    if isinstance(value, frozenset):
        return (frozenset, sorted(value))
    return (type(value), repr(value))


def _outcome(run: Callable[[], Any]) -> Any:
    try:
        return ("value", _key(run()))
    except Exception as exc:  # the same error, with the same words, on each path
        return ("error", type(exc), str(exc))


def _by_converters(
    converters: Sequence[Callable[[bytes], Any]], rows: Sequence[Sequence[bytes | None]]
) -> list[tuple[Any, ...]]:
    return [
        tuple(None if v is None else f(v) for f, v in zip(converters, row, strict=True))
        for row in rows
    ]


def _check(columns: Sequence[TextColumn], payloads: list[bytes], expected: Any) -> None:
    python = text_row_plan(columns, None)
    compiled = text_row_plan(columns, COMPILED)
    assert isinstance(python, PythonTextRowPlan)
    assert not isinstance(compiled, PythonTextRowPlan)
    assert _outcome(lambda: python.parse(payloads)) == expected
    assert _outcome(lambda: compiled.parse(payloads)) == expected
    buffers: Any = [bytearray(p) for p in payloads]  # (any buffer: the compiled plan's)
    assert _outcome(lambda: compiled.parse(buffers)) == expected


# -- the codes ---------------------------------------------------------------------------------


def test_the_compiled_plan_uses_the_same_codes() -> None:
    assert {c.name: c.value for c in TextCode} == COMPILED.TEXT_CODES


def test_every_code_is_chosen_for_some_column() -> None:
    assert [c.code for c in COLUMNS] == [case[4] for case in CASES]
    assert {c[4] for c in CASES} == set(TextCode)
    assert len(PLAN.converters(COLLATIONS)) == len(COLUMNS)
    mysql = plan_table(
        "s",
        "t",
        [("j", "json", "json"), ("e", "enum", "enum('x')"), ("k", "char", "char(2)")],
        [],
        labels=False,
        mariadb=False,
    )
    codes = [c.code for c in mysql.text_columns([BINARY, BINARY, 13])]  # 13: sjis
    assert codes == [TextCode.FALLBACK, TextCode.INT, TextCode.FALLBACK]


def test_text_plan_is_compiled_with_the_accelerator() -> None:
    plan = PLAN.text_plan(COLLATIONS)
    assert (speedups() is not None) == ACCELERATED
    assert isinstance(plan, PythonTextRowPlan) != ACCELERATED


# -- values ------------------------------------------------------------------------------------

_ROW = st.tuples(*(st.one_of(st.none(), case[5]) for case in CASES))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ROW, max_size=4), st.booleans())
def test_rows_are_the_converters_values(rows: list[tuple[bytes | None, ...]], wide: bool) -> None:
    payloads = [b"".join(lenenc(v, wide and i % 2 == 0) for i, v in enumerate(r)) for r in rows]
    converters = PLAN.converters(COLLATIONS)  # the per-column conversions of the reader
    _check(COLUMNS, payloads, _outcome(lambda: _by_converters(converters, rows)))


_GARBAGE = st.one_of(
    st.binary(max_size=30),
    st.text(alphabet="0123456789-:. eE+_xn", max_size=30).map(str.encode),
    st.sampled_from([b"", b"-", b"1e400", b"-1e400", b"3.5e38", b"2024-01-01 24:00:00", b"1:2:3"]),
)


@settings(max_examples=300)
@given(st.sampled_from(range(len(CASES))), _GARBAGE)
def test_any_text_gives_the_converters_value_or_error(index: int, text: bytes) -> None:
    columns = [COLUMNS[index]]
    converters = [columns[0].convert]
    _check(columns, [lenenc(text)], _outcome(lambda: _by_converters(converters, [[text]])))


def test_edge_values() -> None:
    cases = {
        "i": [b"18446744073709551615", b"-9223372036854775808", b"-0", b"000123"],
        "f": [b"3.4028234663852886e38", b"1e39", b"-0", b"1.401298464324817e-45"],
        "d": [b"1.7976931348623157e308", b"-2.2250738585072014e-308", b"1e-7", b"inf"],
        "dec": [b"-" + b"9" * 35 + b"." + b"9" * 30, b"0.000000000000000000000000000001"],
        "dt": [b"0000-00-00", b"2024-02-29", b"2023-02-29", b"2024-00-15"],
        "dtm": [b"0000-00-00 00:00:00", b"9999-12-31 23:59:59.999999", b"2024-01-01 00:00:00.5"],
        "ts": [b"0000-00-00 00:00:00", b"1970-01-01 00:00:01", b"2038-01-19 03:14:07.99"],
        "tm": [b"-838:59:59.000000", b"838:59:59", b"-00:00:00.000001", b"00:00:00.1"],
        "u4": ["\U0001f600\u00e9".encode(), b"\xff\xfe", b"\xed\xa0\x80", b"a\xc3"],
        "u3": ["\U0001f600".encode(), "\uffff".encode(), b"\xc3\xa9"],
        "l1": [b"caf\xe9", b"\x80\x9f", b""],
    }
    names = [c[0] for c in CASES]
    for name, texts in cases.items():
        columns = [COLUMNS[names.index(name)]]
        for text in texts:
            convert = [columns[0].convert]
            expected = _outcome(lambda t=text, f=convert: _by_converters(f, [[t]]))  # type: ignore[misc]
            _check(columns, [lenenc(text)], expected)
    (value,) = text_row_plan([COLUMNS[names.index("tm")]], COMPILED).parse([lenenc(b"1:00:00")])[0]
    assert value.total_seconds() == 3600


# -- malformed payloads ----------------------------------------------------------------------


@settings(max_examples=200)
@given(_ROW, st.booleans())
def test_a_cut_or_longer_payload_is_a_protocol_error(
    row: tuple[bytes | None, ...], wide: bool
) -> None:
    payload = b"".join(lenenc(v, wide) for v in row)
    for cut in sorted({0, 1, len(payload) // 2, len(payload) - 1}):
        errors = []
        for plan in (text_row_plan(COLUMNS, None), text_row_plan(COLUMNS, COMPILED)):
            with pytest.raises(ProtocolError) as info:
                plan.parse([payload, payload[:cut]])
            errors.append(str(info.value))
            assert "text row 1:" in errors[-1]
        assert errors[0] == errors[1]
    for extra in (b"\x00", b"\xfb", b"abc"):
        python = _outcome(lambda e=extra: text_row_plan(COLUMNS, None).parse([payload + e]))  # type: ignore[misc]
        compiled = _outcome(lambda e=extra: text_row_plan(COLUMNS, COMPILED).parse([payload + e]))  # type: ignore[misc]
        assert python == compiled
        assert python[:2] == ("error", ProtocolError)


def test_length_prefixes() -> None:
    column = [TextColumn(TextCode.BYTES, bytes)]
    for plan in (text_row_plan(column, None), text_row_plan(column, COMPILED)):
        big = b"x" * 70000
        rows = [b"\xfc\x03\x00abc", b"\xfd\x03\x00\x00abc", lenenc(big), b"\x00", b"\xfb"]
        assert plan.parse(rows) == [(b"abc",), (b"abc",), (big,), (b"",), (None,)]
        for bad, words in [
            (b"\xff", "column 0 has no length (first byte 0xff)"),
            (b"\xfc\x03", "column 0 runs past the end of its 2 bytes"),
            (b"\xfe" + b"\xff" * 8 + b"abc", "column 0 runs past the end of its 12 bytes"),
            (b"", "column 0 runs past the end of its 0 bytes"),
            (b"\x00\x00", "1 byte(s) after its last column"),
        ]:
            with pytest.raises(
                ProtocolError,
                match=f"^text row 0: {words}$".replace("(", r"\(").replace(")", r"\)"),
            ):
                plan.parse([bad])
        assert plan.parse([]) == []


def test_a_conversion_error_is_the_conversions_own() -> None:
    bad = [TextColumn(TextCode.FALLBACK, lambda raw: 1 / 0)]
    for plan in (text_row_plan(bad, None), text_row_plan(bad, COMPILED)):
        with pytest.raises(ZeroDivisionError):
            plan.parse([b"\x01x"])
    assert text_row_plan(bad, COMPILED).parse([b"\xfb"]) == [(None,)]


def test_float32_is_rounded_as_struct_rounds() -> None:
    plan = text_row_plan([TextColumn(TextCode.FLOAT32, float)], COMPILED)  # rounding is C's
    for x in (0.1, 1 / 3, 3.4028234663852886e38, 1e-46, -2.5e-39):
        (value,) = plan.parse([lenenc(_ascii(repr(x)))])[0]
        assert value == struct.unpack("<f", struct.pack("<f", x))[0]


# -- a live server -----------------------------------------------------------------------------

_LIVE_COLUMNS = [
    ("id", "INT PRIMARY KEY", ["1", "2", "3"]),
    ("bi", "BIGINT", ["-9223372036854775808", "9223372036854775807", "0"]),
    ("bu", "BIGINT UNSIGNED", ["18446744073709551615", "0", "1"]),
    ("ti", "TINYINT", ["-128", "127", "NULL"]),
    ("yr", "YEAR", ["0", "2155", "1901"]),
    ("u4", "VARCHAR(32) CHARACTER SET utf8mb4", ["'h\u00e9llo\U0001f600'", "''", "NULL"]),
    ("u3", "VARCHAR(32) CHARACTER SET utf8mb3", ["'\u03a9mega'", "'x'", "''"]),
    ("l1", "VARCHAR(32) CHARACTER SET latin1", ["'caf\u00e9'", "'\u20ac'", "''"]),
    ("vb", "VARBINARY(300)", ["x'00ff'", "REPEAT('a', 260)", "''"]),
    ("db", "DOUBLE", ["1.7976931348623157e308", "-2.2250738585072014e-308", "0.1"]),
    ("fl", "FLOAT", ["3.4028234e38", "-1.1754944e-38", "0.1"]),
    (
        "dc",
        "DECIMAL(65,30)",
        ["-" + "9" * 35 + "." + "9" * 30, "0.000000000000000000000000000001", "0"],
    ),
    ("d2", "DECIMAL(10,2)", ["-12.5", "12345678.99", "0"]),
    ("da", "DATE", ["'0000-00-00'", "'2024-02-29'", "'2023-02-00'"]),
    ("t0", "DATETIME", ["'0000-00-00 00:00:00'", "'9999-12-31 23:59:59'", "'2024-01-01'"]),
    ("t1", "DATETIME(1)", ["'2024-01-01 00:00:00.5'", "'1000-01-01 00:00:00'", "NULL"]),
    ("t3", "DATETIME(3)", ["'2024-06-01 12:34:56.789'", "'0000-00-00 00:00:00'", "NULL"]),
    ("t6", "DATETIME(6)", ["'9999-12-31 23:59:59.999999'", "'2024-02-30 00:00:00'", "NULL"]),
    (
        "ts",
        "TIMESTAMP(6) NULL",
        ["'0000-00-00 00:00:00'", "'2038-01-19 03:14:07.999999'", "'1970-01-01 00:00:01'"],
    ),
    ("tm", "TIME(6)", ["'-838:59:59'", "'838:59:59'", "'-00:00:00.000001'"]),
    ("t2", "TIME(2)", ["'00:00:00.5'", "'-01:02:03.04'", "'12:00:00'"]),
    ("bt", "BIT(10)", ["b'1111111111'", "0", "NULL"]),
    ("st", "SET('a','b','c')", ["'a,c'", "''", "NULL"]),
    ("en", "ENUM('x','y')", ["'y'", "'x'", "NULL"]),
    ("js", "JSON", ["'{\"a\": [1, 2.5, null]}'", "'null'", "NULL"]),
    ("uu", "UUID", ["'123e4567-e89b-12d3-a456-426614174000'", "NULL", "NULL"]),
]


def _live_rows(srv: DatabaseServer, plan: TablePlan) -> tuple[list[int], list[tuple[Any, ...]]]:
    conn = pymysql.connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        use_unicode=False,
        conv=dict(pymysql.converters.encoders),  # no decoders: every value as its bytes
    )
    try:
        with conn.cursor() as cur:
            for sql in SESSION_SQL:
                cur.execute(sql)
            cur.execute(select_sql(plan, None, None, None))
            rows = list(cur.fetchall())
            collations = [f.charsetnr for f in cur._result.fields]
    finally:
        conn.close()
    return collations, rows


@pytest.mark.integration
def test_a_live_servers_rows(mariadb_primary: DatabaseServer) -> None:
    srv = mariadb_primary
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_textrows")
    srv.sql("DROP TABLE IF EXISTS rc_textrows.t")
    srv.sql(
        "CREATE TABLE rc_textrows.t ("
        + ", ".join(f"`{name}` {kind}" for name, kind, _ in _LIVE_COLUMNS)
        + ")"
    )
    names = ", ".join(f"`{name}`" for name, _, _ in _LIVE_COLUMNS)
    srv.sql_many(
        ["SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'"]
        + [
            f"INSERT INTO rc_textrows.t ({names}) VALUES ("
            + ", ".join(values[i] for _, _, values in _LIVE_COLUMNS)
            + ")"
            for i in range(3)
        ]
    )
    described = srv.sql(
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = 'rc_textrows' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"
    )
    columns = [tuple(str(v.decode() if isinstance(v, bytes) else v) for v in r) for r in described]
    plan = plan_table("rc_textrows", "t", columns, ["id"], labels=True, mariadb=True)  # type: ignore[arg-type]
    collations, rows = _live_rows(srv, plan)
    text_columns = plan.text_columns(collations)
    codes = {c.name: t.code for c, t in zip(plan.columns, text_columns, strict=True)}
    assert codes["u4"] == TextCode.UTF8 and codes["t6"] == TextCode.DATETIME
    payloads = [b"".join(lenenc(v) for v in row) for row in rows]
    expected = _by_converters(plan.converters(collations), rows)
    _check(text_columns, payloads, _outcome(lambda: expected))
    first = dict(zip((c.name for c in plan.columns), expected[0], strict=True))
    assert first["u4"] == "h\u00e9llo\U0001f600" and first["l1"] == "caf\u00e9"
    assert first["bu"] == 2**64 - 1 and str(first["da"]) == "0000-00-00"
    assert first["tm"].total_seconds() == -(838 * 3600 + 59 * 60 + 59)
