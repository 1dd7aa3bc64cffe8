"""The benchmark workloads, written to a private primary.

``bulk``: a 28-column table holding every column type the decoder has a
reader for (every integer width signed and unsigned, DECIMAL(20,6), FLOAT,
DOUBLE, BIT(13), DATE, TIME(6), DATETIME(6), TIMESTAMP(3), YEAR, CHAR latin1,
VARCHAR(300) utf8mb4, BLOB, TEXT, ENUM, SET, JSON), about 10% NULLs;
``rows`` inserted in 1000-row transactions, then ``rows // 10`` updated and
``rows // 20`` deleted, also 1000 rows per transaction.

``small``: ``count`` single-row transactions on a 5-column table.

Values come from a seeded ``random.Random``: the same arguments write the same
rows. Each workload is written between two ``FLUSH BINARY LOGS`` so that its
events sit in binlog files of their own (:class:`BinlogRange`), without
ANNOTATE_ROWS events (not every peer asks for them; see ``_no_annotations``).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql

__all__ = [
    "BENCH_USER",
    "BinlogRange",
    "BULK_DDL",
    "SMALL_DDL",
    "create_bench_user",
    "write_bulk",
    "write_small",
]

BENCH_USER = "bench"

BULK_DDL = """
CREATE TABLE bench.bulk (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED,
  si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED,
  version INT UNSIGNED NOT NULL,
  dec20 DECIMAL(20,6),
  f FLOAT, d DOUBLE,
  b13 BIT(13),
  dte DATE, tm TIME(6), dtm DATETIME(6), ts TIMESTAMP(3) NULL, yr YEAR,
  ch CHAR(16) CHARACTER SET latin1,
  vc VARCHAR(300) CHARACTER SET utf8mb4,
  bl BLOB, tx TEXT CHARACTER SET utf8mb4,
  en ENUM('new','paid','shipped','returned'),
  st SET('a','b','c','d','e'),
  js JSON
) ENGINE=InnoDB
"""

SMALL_DDL = """
CREATE TABLE bench.small (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  n INT NOT NULL,
  name VARCHAR(64) CHARACTER SET utf8mb4,
  amount DECIMAL(12,2),
  at DATETIME(6)
) ENGINE=InnoDB
"""

_WORDS = ("alpha", "beta", "gamma", "delta", "épée", "naïve", "日本", "🙂", "zeta", "omega")


@dataclass(frozen=True, slots=True)
class BinlogRange:
    """The binlog files one workload was written to, and what it wrote."""

    files: tuple[str, ...]
    directory: str
    rows: int
    transactions: int

    @property
    def first(self) -> str:
        return self.files[0]

    def paths(self) -> list[Path]:
        return [Path(self.directory) / name for name in self.files]


def _lit(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, Decimal)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'" if value else "''"
    escaped = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return "'" + escaped + "'"


def _text(rnd: random.Random, limit: int) -> str:
    out: list[str] = []
    size = 0
    target = rnd.randrange(0, limit)
    while size < target:
        w = rnd.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:limit]


def _bulk_row(rnd: random.Random, row_id: int) -> str:
    r = rnd.random
    ri = rnd.randrange

    def maybe(make: Callable[[], Any]) -> Any:
        return None if r() < 0.1 else make()

    values: list[Any] = [
        row_id,
        maybe(lambda: ri(-128, 128)),
        maybe(lambda: ri(0, 256)),
        maybe(lambda: ri(-32768, 32768)),
        maybe(lambda: ri(0, 65536)),
        maybe(lambda: ri(-(1 << 23), 1 << 23)),
        maybe(lambda: ri(0, 1 << 24)),
        maybe(lambda: ri(-(1 << 31), 1 << 31)),
        maybe(lambda: ri(0, 1 << 32)),
        maybe(lambda: ri(-(1 << 63), 1 << 63)),
        maybe(lambda: ri(0, 1 << 64)),
        0,
        maybe(lambda: Decimal(ri(-(10**20) + 1, 10**20)).scaleb(-6)),
        maybe(lambda: round(rnd.uniform(-1e6, 1e6), 3)),
        maybe(lambda: rnd.uniform(-1e12, 1e12)),
        maybe(lambda: ri(0, 1 << 13)),
        maybe(lambda: dt.date(1970, 1, 1) + dt.timedelta(days=ri(0, 40000))),
        maybe(lambda: f"{ri(-838, 839)}:{ri(0, 60):02}:{ri(0, 60):02}.{ri(0, 10**6):06}"),
        maybe(
            lambda: (
                (dt.datetime(1990, 1, 1) + dt.timedelta(seconds=ri(0, 10**9))).isoformat(" ")
                + f".{ri(0, 10**6):06}"
            )
        ),
        maybe(
            lambda: (
                (dt.datetime(2000, 1, 1) + dt.timedelta(seconds=ri(0, 10**9))).isoformat(" ")
                + f".{ri(0, 1000):03}"
            )
        ),
        maybe(lambda: ri(1901, 2156)),
        maybe(lambda: "latin-" + "".join(rnd.choice("abcdéü") for _ in range(ri(0, 10)))),
        maybe(lambda: _text(rnd, 300)),
        maybe(lambda: rnd.randbytes(ri(0, 200))),
        maybe(lambda: _text(rnd, 400)),
        maybe(lambda: rnd.choice(("new", "paid", "shipped", "returned"))),
        maybe(lambda: ",".join(c for c in "abcde" if r() < 0.4)),
        maybe(lambda: f'{{"id": {row_id}, "tags": ["x", "y"], "ok": true, "n": null}}'),
    ]
    return "(" + ",".join(_lit(v) for v in values) + ")"


def _no_annotations(conn: pymysql.connections.Connection[Any]) -> None:
    # Every decoder must get the same bytes: replica_client and mariadb-binlog
    # ask for ANNOTATE_ROWS events, the incumbents do not (and the bulk
    # INSERTs would add a megabyte of SQL text per transaction).
    with conn.cursor() as cur:
        cur.execute("SET SESSION binlog_annotate_row_events = OFF")


def _flush(conn: pymysql.connections.Connection[Any]) -> str:
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def _files_between(
    conn: pymysql.connections.Connection[Any], first: str, after_last: str
) -> tuple[str, ...]:
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        names = [str(row[0]) for row in cur.fetchall()]
    return tuple(n for n in names if first <= n < after_last)


def _datadir(conn: pymysql.connections.Connection[Any]) -> str:
    with conn.cursor() as cur:
        cur.execute("SELECT @@datadir")
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def write_bulk(conn: pymysql.connections.Connection[Any], rows: int, seed: int = 7) -> BinlogRange:
    """Insert ``rows`` rows in 1000-row transactions, update a tenth, delete a twentieth."""
    rnd = random.Random(seed)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS bench")
        cur.execute("DROP TABLE IF EXISTS bench.bulk")
        cur.execute(BULK_DDL)
    _no_annotations(conn)
    first = _flush(conn)
    batch = 1000
    txns = 0
    with conn.cursor() as cur:
        for start in range(0, rows, batch):
            values = ",".join(_bulk_row(rnd, i) for i in range(start, min(rows, start + batch)))
            cur.execute("INSERT INTO bench.bulk VALUES " + values)
            txns += 1
        updated = rows // 10
        for start in range(0, updated, batch):
            cur.execute(
                "UPDATE bench.bulk SET version = version + 1, iu = id, "
                "vc = CONCAT('upd ', id) WHERE id >= %s AND id < %s",
                (start, min(updated, start + batch)),
            )
            txns += 1
        deleted = rows // 20
        for start in range(rows - deleted, rows, batch):
            cur.execute(
                "DELETE FROM bench.bulk WHERE id >= %s AND id < %s",
                (start, min(rows, start + batch)),
            )
            txns += 1
    after = _flush(conn)
    return BinlogRange(
        _files_between(conn, first, after), _datadir(conn), rows + updated + deleted, txns
    )


def write_small(
    conn: pymysql.connections.Connection[Any], count: int, seed: int = 11
) -> BinlogRange:
    """``count`` single-row INSERT transactions (autocommit), sent 100 statements per round trip."""
    rnd = random.Random(seed)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS bench")
        cur.execute("DROP TABLE IF EXISTS bench.small")
        cur.execute(SMALL_DDL)
    _no_annotations(conn)
    first = _flush(conn)
    base = dt.datetime(2024, 1, 1)
    with conn.cursor() as cur:
        for start in range(0, count, 100):
            stmts = []
            for i in range(start, min(count, start + 100)):
                at = base + dt.timedelta(microseconds=rnd.randrange(10**12))
                stmts.append(
                    "INSERT INTO bench.small VALUES "
                    f"({i},{rnd.randrange(-(10**9), 10**9)},{_lit(_text(rnd, 64))},"
                    f"{Decimal(rnd.randrange(-(10**9), 10**9)).scaleb(-2)},'{at.isoformat(' ')}')"
                )
            cur.execute(";".join(stmts))
            while cur.nextset():
                pass
    after = _flush(conn)
    return BinlogRange(_files_between(conn, first, after), _datadir(conn), count, count)


def create_bench_user(conn: pymysql.connections.Connection[Any], password: str) -> None:
    """A replication user with mysql_native_password (every peer can log in with it)."""
    with conn.cursor() as cur:
        for host in ("%", "localhost"):
            account = f"'{BENCH_USER}'@'{host}'"
            # '%' in the host must be doubled where PyMySQL interpolates arguments.
            cur.execute(
                f"CREATE OR REPLACE USER {account.replace('%', '%%')} "
                "IDENTIFIED VIA mysql_native_password USING PASSWORD(%s)",
                (password,),
            )
            cur.execute(
                f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, SELECT "
                f"ON *.* TO {account}"
            )
