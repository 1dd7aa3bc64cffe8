"""The SELECT oracle: a table with every column type, a workload, and a comparison.

A test writes edge and random rows to a private primary (INSERT, UPDATE,
DELETE), snapshots the rows with ``SELECT`` after each phase, decodes the
binlog (from files or the network) and compares every decoded image with the
snapshot of the same row. Values are compared through canonical text forms
that ``SELECT`` produces (``CAST(col AS CHAR)`` for temporal types,
``col + 0e0`` for FLOAT's exact float32 value, ...), so no expected value is
hard-coded: the server is the oracle.
"""

from __future__ import annotations

import datetime as dt
import random
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pymysql

from replica_client.binlog.events import Geometry, InvalidDate, InvalidDatetime
from replica_client.changes import Change

__all__ = ["COLUMNS", "Column", "OracleResult", "Workload", "compare", "connect"]

SCHEMA = "oracle"
TABLE = "all_types"


@dataclass(frozen=True)
class Column:
    name: str
    ddl: str
    kind: str
    fsp: int = 0


COLUMNS: tuple[Column, ...] = (
    Column("ti", "TINYINT", "int"),
    Column("tiu", "TINYINT UNSIGNED", "int"),
    Column("si", "SMALLINT", "int"),
    Column("siu", "SMALLINT UNSIGNED", "int"),
    Column("mi", "MEDIUMINT", "int"),
    Column("miu", "MEDIUMINT UNSIGNED", "int"),
    Column("i", "INT", "int"),
    Column("iu", "INT UNSIGNED", "int"),
    Column("bi", "BIGINT", "int"),
    Column("biu", "BIGINT UNSIGNED", "int"),
    Column("f", "FLOAT", "float"),
    Column("d", "DOUBLE", "double"),
    Column("dec65", "DECIMAL(65,30)", "decimal"),
    Column("dec20", "DECIMAL(20,6)", "decimal"),
    Column("dec10", "DECIMAL(10,2) UNSIGNED", "decimal"),
    Column("dec18", "DECIMAL(18,0)", "decimal"),
    Column("b1", "BIT(1)", "bit"),
    Column("b13", "BIT(13)", "bit"),
    Column("b64", "BIT(64)", "bit"),
    Column("y", "YEAR", "year"),
    Column("dte", "DATE", "date"),
    Column("t0", "TIME", "time", 0),
    Column("t1", "TIME(1)", "time", 1),
    Column("t3", "TIME(3)", "time", 3),
    Column("t6", "TIME(6)", "time", 6),
    Column("dt0", "DATETIME", "datetime", 0),
    Column("dt3", "DATETIME(3)", "datetime", 3),
    Column("dt6", "DATETIME(6)", "datetime", 6),
    Column("ts0", "TIMESTAMP NULL DEFAULT NULL", "timestamp", 0),
    Column("ts3", "TIMESTAMP(3) NULL DEFAULT NULL", "timestamp", 3),
    Column("ts6", "TIMESTAMP(6) NULL DEFAULT NULL", "timestamp", 6),
    Column("c10", "CHAR(10) CHARACTER SET latin1", "text"),
    Column("c100", "CHAR(100) CHARACTER SET utf8mb4", "text"),
    Column("bin8", "BINARY(8)", "bytes"),
    Column("vc", "VARCHAR(300) CHARACTER SET utf8mb4", "text"),
    Column("vcl", "VARCHAR(50) CHARACTER SET latin1", "text"),
    Column("vb", "VARBINARY(300)", "bytes"),
    Column("tt", "TINYTEXT CHARACTER SET utf8mb4", "text"),
    Column("tx", "TEXT CHARACTER SET latin1", "text"),
    Column("mt", "MEDIUMTEXT CHARACTER SET utf8mb4", "text"),
    Column("lt", "LONGTEXT CHARACTER SET utf8mb4", "text"),
    Column("tb", "TINYBLOB", "bytes"),
    Column("bl", "BLOB", "bytes"),
    Column("mb", "MEDIUMBLOB", "bytes"),
    Column("lb", "LONGBLOB", "bytes"),
    Column("e", "ENUM('a','b','ç','🙂') CHARACTER SET utf8mb4", "enum"),
    Column("el", "ENUM('x','Ñ') CHARACTER SET latin1", "enum"),
    Column("s", "SET('x','y','z','w')", "set"),
    Column("j", "JSON", "json"),
    Column("g", "GEOMETRY", "geometry"),
    Column("pt", "POINT", "geometry"),
)


def connect(host: str, port: int, user: str, password: str) -> pymysql.connections.Connection:
    """A connection that returns exact text for the oracle (UTC, permissive sql_mode)."""
    conn = pymysql.connect(
        host=host, port=port, user=user, password=password, charset="utf8mb4", autocommit=True
    )
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute("SET sql_mode = 'NO_ENGINE_SUBSTITUTION'")
    return conn


def _select_expr(c: Column, full_metadata: bool) -> str:
    n = f"`{c.name}`"
    if c.kind in ("int", "decimal", "date", "time", "datetime", "timestamp"):
        return f"CAST({n} AS CHAR)"
    if c.kind == "float":
        return f"{n} + 0e0"
    if c.kind in ("bit", "year"):
        return f"CAST({n} + 0 AS CHAR)"
    if c.kind in ("enum", "set") and not full_metadata:
        return f"CAST({n} + 0 AS CHAR)"
    return n


def _fmt_time(value: dt.timedelta, fsp: int) -> str:
    us = value // dt.timedelta(microseconds=1)
    sign = "-" if us < 0 else ""
    us = abs(us)
    secs, frac = divmod(us, 1_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    text = f"{sign}{h:02d}:{m:02d}:{s:02d}"
    return text + (f".{frac:06d}"[: fsp + 1] if fsp else "")


def _fmt_datetime(value: Any, fsp: int) -> str:
    if isinstance(value, InvalidDatetime):
        base = (
            f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
            f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
        )
        us = value.microsecond
    else:
        assert isinstance(value, dt.datetime)
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        base = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.year < 1000:
            base = f"{value.year:04d}" + base[len(str(value.year)) :]
        us = value.microsecond
    return base + (f".{us:06d}"[: fsp + 1] if fsp else "")


def canonical_decoded(c: Column, value: Any, full_metadata: bool) -> Any:
    """The decoded value in the form the SELECT expression gives."""
    if value is None:
        return None
    k = c.kind
    if k in ("int", "bit", "year"):
        return str(value)
    if k in ("float", "double"):
        return float(value)
    if k == "decimal":
        assert isinstance(value, Decimal)
        return format(value, "f")
    if k == "date":
        assert isinstance(value, (dt.date, InvalidDate))
        return str(value) if isinstance(value, InvalidDate) else f"{value.year:04d}-{value:%m-%d}"
    if k == "time":
        return _fmt_time(value, c.fsp)
    if k in ("datetime", "timestamp"):
        if k == "timestamp" and not isinstance(value, InvalidDatetime):
            assert value.tzinfo is not None, "TIMESTAMP must decode to an aware datetime"
        return _fmt_datetime(value, c.fsp)
    if k == "enum":
        return str(value)
    if k == "set":
        if not full_metadata:
            return str(value)
        assert isinstance(value, frozenset)
        return value
    if k == "geometry":
        assert isinstance(value, Geometry)
        return value.srid.to_bytes(4, "little") + value.wkb
    return value


def canonical_selected(c: Column, value: Any, full_metadata: bool) -> Any:
    if value is None:
        return None
    if c.kind in ("float", "double"):
        return float(value)
    if c.kind == "set" and full_metadata:
        return frozenset(value.split(",")) if value else frozenset()
    if c.kind == "set" and isinstance(value, (set, frozenset)):
        return frozenset(value)
    return value


# -- the workload -----------------------------------------------------------------------


def _rand_text(rng: random.Random, n: int, alphabet: str) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


_UTF8_ALPHABET = string.ascii_letters + "äöüßçñ€漢字🙂😀 "
_LATIN1_ALPHABET = string.ascii_letters + "äöüßçñ€Ñ "


def _random_row(rng: random.Random) -> dict[str, Any]:
    """A random row; about 10% NULLs."""

    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.1 else v

    def dec(p: int, s: int, unsigned: bool = False) -> str:
        intpart = rng.randrange(10 ** (p - s))
        frac = rng.randrange(10**s) if s else 0
        sign = "" if unsigned or rng.random() < 0.5 else "-"
        return f"{sign}{intpart}.{frac:0{s}d}" if s else f"{sign}{intpart}"

    def time_val(fsp: int) -> str:
        h, m, s = rng.randrange(839), rng.randrange(60), rng.randrange(60)
        frac = f".{rng.randrange(10**fsp):0{fsp}d}" if fsp else ""
        sign = "-" if rng.random() < 0.3 else ""
        return f"{sign}{h}:{m:02d}:{s:02d}{frac}"

    def dt_val(fsp: int, lo: int = 1000, hi: int = 9999) -> str:
        y, mo, d = rng.randint(lo, hi), rng.randint(1, 12), rng.randint(1, 28)
        h, mi, s = rng.randrange(24), rng.randrange(60), rng.randrange(60)
        frac = f".{rng.randrange(10**fsp):0{fsp}d}" if fsp else ""
        return f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}{frac}"

    return {
        "ti": maybe(rng.randint(-128, 127)),
        "tiu": maybe(rng.randint(0, 255)),
        "si": maybe(rng.randint(-32768, 32767)),
        "siu": maybe(rng.randint(0, 65535)),
        "mi": maybe(rng.randint(-(2**23), 2**23 - 1)),
        "miu": maybe(rng.randint(0, 2**24 - 1)),
        "i": maybe(rng.randint(-(2**31), 2**31 - 1)),
        "iu": maybe(rng.randint(0, 2**32 - 1)),
        "bi": maybe(rng.randint(-(2**63), 2**63 - 1)),
        "biu": maybe(rng.randint(0, 2**64 - 1)),
        "f": maybe(rng.uniform(-1e6, 1e6)),
        "d": maybe(rng.uniform(-1e100, 1e100) * rng.random()),
        "dec65": maybe(dec(65, 30)),
        "dec20": maybe(dec(20, 6)),
        "dec10": maybe(dec(10, 2, unsigned=True)),
        "dec18": maybe(dec(18, 0)),
        "b1": maybe(rng.randint(0, 1)),
        "b13": maybe(rng.randint(0, 2**13 - 1)),
        "b64": maybe(rng.randint(0, 2**64 - 1)),
        "y": maybe(rng.choice([0, *range(1901, 2156)])),
        "dte": maybe(dt_val(0)[:10]),
        "t0": maybe(time_val(0)),
        "t1": maybe(time_val(1)),
        "t3": maybe(time_val(3)),
        "t6": maybe(time_val(6)),
        "dt0": maybe(dt_val(0)),
        "dt3": maybe(dt_val(3)),
        "dt6": maybe(dt_val(6)),
        "ts0": maybe(dt_val(0, 1971, 2037)),
        "ts3": maybe(dt_val(3, 1971, 2037)),
        "ts6": maybe(dt_val(6, 1971, 2037)),
        "c10": maybe(_rand_text(rng, rng.randint(0, 10), _LATIN1_ALPHABET).rstrip()),
        "c100": maybe(_rand_text(rng, rng.randint(0, 100), _UTF8_ALPHABET).rstrip()),
        "bin8": maybe(rng.randbytes(rng.randint(0, 8))),
        "vc": maybe(_rand_text(rng, rng.randint(0, 300), _UTF8_ALPHABET)),
        "vcl": maybe(_rand_text(rng, rng.randint(0, 50), _LATIN1_ALPHABET)),
        "vb": maybe(rng.randbytes(rng.randint(0, 300))),
        "tt": maybe(_rand_text(rng, rng.randint(0, 60), _UTF8_ALPHABET)),
        "tx": maybe(_rand_text(rng, rng.randint(0, 2000), _LATIN1_ALPHABET)),
        "mt": maybe(_rand_text(rng, rng.randint(0, 3000), _UTF8_ALPHABET)),
        "lt": maybe(_rand_text(rng, rng.randint(0, 3000), _UTF8_ALPHABET)),
        "tb": maybe(rng.randbytes(rng.randint(0, 255))),
        "bl": maybe(rng.randbytes(rng.randint(0, 3000))),
        "mb": maybe(rng.randbytes(rng.randint(0, 3000))),
        "lb": maybe(rng.randbytes(rng.randint(0, 3000))),
        "e": maybe(rng.choice(["a", "b", "ç", "🙂"])),
        "el": maybe(rng.choice(["x", "Ñ"])),
        "s": maybe(",".join(sorted(rng.sample(["x", "y", "z", "w"], rng.randint(0, 4))))),
        "j": maybe(f'{{"k": {rng.randrange(10**9)}, "arr": [1, 2.5, "x"], "n": null}}'),
        "g": maybe(  # x below 90: MySQL reads SRID 4326 points latitude first
            (f"POINT({rng.randrange(90)} {rng.randrange(100)})", rng.choice([0, 4326]))
        ),
        "pt": maybe((f"POINT({rng.random():f} {rng.random():f})", 0)),
    }


def _edge_rows() -> list[dict[str, Any]]:
    big = "9" * 35 + "." + "9" * 30
    return [
        {  # minimum values, zero dates, empty strings next to NULLs
            "ti": -128, "tiu": 0, "si": -32768, "siu": 0, "mi": -(2**23), "miu": 0,
            "i": -(2**31), "iu": 0, "bi": -(2**63), "biu": 0,
            "f": -3.4028234e38, "d": -1.7976931348623157e308,
            "dec65": "-" + big, "dec20": "-99999999999999.999999", "dec10": "0.00",
            "dec18": "-999999999999999999",
            "b1": 0, "b13": 0, "b64": 0, "y": 0, "dte": "0000-00-00",
            "t0": "-838:59:59", "t1": "-00:00:00.1", "t3": "-838:59:58.999",
            "t6": "-00:00:00.000001",
            "dt0": "0000-00-00 00:00:00", "dt3": "1000-01-01 00:00:00.000",
            "dt6": "0000-00-00 00:00:00.000000",
            "ts0": "1970-01-01 00:00:01", "ts3": "0000-00-00 00:00:00", "ts6": None,
            "c10": "", "c100": None, "bin8": b"", "vc": "", "vcl": None, "vb": b"",
            "tt": "", "tx": None, "mt": "", "lt": None, "tb": b"", "bl": b"", "mb": None,
            "lb": b"", "e": "a", "el": None, "s": "", "j": "[]", "g": None, "pt": None,
        },
        {  # maximum values, emoji, latin1, big BLOBs
            "ti": 127, "tiu": 255, "si": 32767, "siu": 65535, "mi": 2**23 - 1,
            "miu": 2**24 - 1, "i": 2**31 - 1, "iu": 2**32 - 1, "bi": 2**63 - 1,
            "biu": 2**64 - 1, "f": 3.4028234e38, "d": 1.7976931348623157e308,
            "dec65": big, "dec20": "99999999999999.999999", "dec10": "99999999.99",
            "dec18": "999999999999999999",
            "b1": 1, "b13": 2**13 - 1, "b64": 2**64 - 1, "y": 2155, "dte": "9999-12-31",
            "t0": "838:59:59", "t1": "838:59:59.0", "t3": "838:59:59.000",
            "t6": "838:59:59.000000",
            "dt0": "9999-12-31 23:59:59", "dt3": "9999-12-31 23:59:59.999",
            "dt6": "9999-12-31 23:59:59.999999",
            "ts0": "2038-01-19 03:14:07", "ts3": "2038-01-19 03:14:07.999",
            "ts6": "2038-01-19 03:14:07.999999",
            "c10": "Ñandú €", "c100": "😀🙂 emoji ✓ 漢字", "bin8": b"\x00\xff\x00abc",
            "vc": "🙂" * 300, "vcl": "café Ñ € ÿ", "vb": bytes(range(256)) + b"\x00" * 44,
            "tt": "x" * 255, "tx": "é" * 65535, "mt": "🙂" * 20000, "lt": "L" * 70000,
            "tb": b"\xff" * 255, "bl": b"\x01" * 65535, "mb": bytes(70000),
            "lb": bytes(range(256)) * 280, "e": "🙂", "el": "Ñ", "s": "x,y,z,w",
            "j": '{"a": [1, 2.5, "x", true, null], "b": {"c": "🙂"}}',
            "g": ("LINESTRING(0 0, 1 1, 2 5)", 4326), "pt": ("POINT(1.5 -2.25)", 0),
        },
        {  # partly-zero dates, fractional edges, whitespace
            "ti": 0, "tiu": 1, "si": -1, "siu": 1, "mi": -1, "miu": 1, "i": -1, "iu": 1,
            "bi": -1, "biu": 1, "f": 0.1, "d": -0.0, "dec65": "-0.000000000000000000000000000001",
            "dec20": "-0.000001", "dec10": "0.01", "dec18": "0",
            "b1": 1, "b13": 4096, "b64": 2**63, "y": 1901, "dte": "2020-00-15",
            "t0": "00:00:00", "t1": "-00:00:00.9", "t3": "-01:00:00.001",
            "t6": "-838:59:58.999999",
            "dt0": "2020-01-00 10:00:00", "dt3": "2020-00-00 00:00:00.001",
            "dt6": "1000-01-01 00:00:00.000001",
            "ts0": None, "ts3": "1970-01-01 00:00:01.001", "ts6": "2000-02-29 12:00:00.5",
            "c10": "  lead", "c100": "tab\there", "bin8": b"\x00" * 8, "vc": " trailing  ",
            "vcl": "", "vb": b"\x00", "tt": None, "tx": "", "mt": None, "lt": "",
            "tb": None, "bl": None, "mb": b"", "lb": None, "e": "ç", "el": "x", "s": "w",
            "j": '"just a string"', "g": ("POLYGON((0 0, 1 0, 1 1, 0 0))", 0),
            "pt": ("POINT(0 0)", 4326),
        },
        {name: None for name in (c.name for c in COLUMNS)},
    ]  # fmt: skip


def _insert(cur: Any, row: dict[str, Any]) -> None:
    names, marks, args = [], [], []
    for c in COLUMNS:
        v = row.get(c.name)
        names.append(f"`{c.name}`")
        if c.kind == "geometry" and v is not None:
            marks.append("ST_GeomFromText(%s, %s)")
            args.extend(v)
        else:
            marks.append("%s")
            args.append(v)
    cur.execute(
        f"INSERT INTO {SCHEMA}.{TABLE} ({', '.join(names)}) VALUES ({', '.join(marks)})", args
    )


@dataclass
class Workload:
    """Snapshots of the table after each phase, keyed by id."""

    after_insert: dict[int, dict[str, Any]] = field(default_factory=dict)
    after_update: dict[int, dict[str, Any]] = field(default_factory=dict)
    updated: set[int] = field(default_factory=set)
    deleted: set[int] = field(default_factory=set)
    inserted: int = 0


def snapshot(conn: Any, full_metadata: bool) -> dict[int, dict[str, Any]]:
    exprs = ", ".join(_select_expr(c, full_metadata) for c in COLUMNS)
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, {exprs} FROM {SCHEMA}.{TABLE} ORDER BY id")
        rows = cur.fetchall()
    return {
        r[0]: {
            c.name: canonical_selected(c, v, full_metadata)
            for c, v in zip(COLUMNS, r[1:], strict=True)
        }
        for r in rows
    }


def run_workload(
    conn: Any, *, random_rows: int = 200, seed: int = 42, full_metadata: bool = True
) -> Workload:
    """Create the table, INSERT edge + random rows, UPDATE some, DELETE some."""
    rng = random.Random(seed)
    cols = ",\n  ".join(f"`{c.name}` {c.ddl}" for c in COLUMNS)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        cur.execute(f"DROP TABLE IF EXISTS {SCHEMA}.{TABLE}")
        cur.execute(
            f"CREATE TABLE {SCHEMA}.{TABLE} (\n  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,\n"
            f"  {cols}\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        )
        rows = _edge_rows() + [_random_row(rng) for _ in range(random_rows)]
        for start in range(0, len(rows), 50):
            cur.execute("BEGIN")
            for row in rows[start : start + 50]:
                _insert(cur, row)
            cur.execute("COMMIT")
    w = Workload(inserted=len(rows))
    w.after_insert = snapshot(conn, full_metadata)
    ids = sorted(w.after_insert)
    with conn.cursor() as cur:
        # Updates: several columns, to NULL and from NULL, one multi-row statement.
        for i in ids[: len(ids) // 3]:
            new = _random_row(rng)
            sets, args = [], []
            for c in rng.sample(COLUMNS, 6):
                v = new[c.name]
                if c.kind == "geometry" and v is not None:
                    sets.append(f"`{c.name}` = ST_GeomFromText(%s, %s)")
                    args.extend(v)
                else:
                    sets.append(f"`{c.name}` = %s")
                    args.append(v)
            cur.execute(f"UPDATE {SCHEMA}.{TABLE} SET {', '.join(sets)} WHERE id = %s", (*args, i))
            w.updated.add(i)
        # One multi-row statement over rows not updated above (each row is
        # updated at most once, so every image has a snapshot to match).
        first = ids[len(ids) // 3]
        cur.execute(
            f"UPDATE {SCHEMA}.{TABLE} SET vc = 'multi' WHERE MOD(id, 17) = 0 AND id >= %s", (first,)
        )
        w.updated.update(i for i in ids if i % 17 == 0 and i >= first)
    w.after_update = snapshot(conn, full_metadata)
    with conn.cursor() as cur:
        doomed = [i for i in ids if i % 5 == 0] + [ids[0], ids[1], ids[2], ids[3]]
        cur.execute("BEGIN")
        for i in doomed:
            cur.execute(f"DELETE FROM {SCHEMA}.{TABLE} WHERE id = %s", (i,))
        cur.execute("COMMIT")
        w.deleted = set(doomed)
    return w


@dataclass
class OracleResult:
    compared_images: int = 0
    mismatches: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _compare_image(
    res: OracleResult,
    what: str,
    image: dict[str, Any],
    expected: dict[str, Any],
    full: bool,
    minimal_image: bool,
) -> None:
    res.compared_images += 1
    names = {c.name: c for c in COLUMNS}
    keyed = (
        image if full else {COLUMNS[int(k[1:]) - 2].name: v for k, v in image.items() if k != "@1"}
    )
    if not minimal_image:
        missing = set(names) - set(keyed)
        if missing:
            res.mismatches.append(f"{what}: columns missing from a FULL image: {sorted(missing)}")
    for name, value in keyed.items():
        if name == "id":
            continue
        c = names[name]
        got = canonical_decoded(c, value, full)
        want = expected[name]
        if got != want:
            res.mismatches.append(
                f"{what} column {name}: decoded {got!r:.200} != SELECT {want!r:.200}"
            )


def compare(
    changes: Iterable[Change],
    w: Workload,
    *,
    full_metadata: bool = True,
    minimal_image: bool = False,
) -> OracleResult:
    """Compare every decoded image of the oracle table with the snapshots."""
    res = OracleResult()
    id_key = "id" if full_metadata else "@1"
    for ch in changes:
        if ch.schema != SCHEMA or ch.table != TABLE:
            continue
        res.counts[ch.op] = res.counts.get(ch.op, 0) + 1
        if ch.op == "insert":
            assert ch.after is not None
            i = ch.after[id_key]
            _compare_image(
                res, f"insert id={i}", ch.after, w.after_insert[i], full_metadata, minimal_image
            )
        elif ch.op == "update":
            assert ch.before is not None and ch.after is not None
            i = ch.before[id_key]
            _compare_image(
                res,
                f"update-before id={i}",
                ch.before,
                w.after_insert[i],
                full_metadata,
                minimal_image,
            )
            _compare_image(
                res,
                f"update-after id={i}",
                ch.after,
                w.after_update[i],
                full_metadata,
                minimal_image,
            )
        else:
            assert ch.before is not None
            i = ch.before[id_key]
            _compare_image(
                res, f"delete id={i}", ch.before, w.after_update[i], full_metadata, minimal_image
            )
    return res
