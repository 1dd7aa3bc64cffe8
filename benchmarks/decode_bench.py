"""Decode speed of the binlog file reader on a binlog written by a private primary.

Starts a private MariaDB primary with the test harness, creates a 28-column
table with every common column type (each integer width signed and unsigned,
DECIMAL, FLOAT, DOUBLE, BIT, temporal types, latin1 and utf8mb4 strings,
BLOB, TEXT, ENUM, SET, JSON; about 10% NULLs), inserts ``--rows`` rows in
1000-row transactions (generated server-side with the SEQUENCE engine; the
insert time is not measured), flushes the binary log and times:

- ``rc.open_binlog`` over the files: every event decoded, rows included;
- ``rc.iter_changes`` over the same reader: rows as dicts keyed by column name.

Reports the median of ``--runs`` runs as events/s, rows/s and µs/row, prints
a table and writes JSON (``benchmarks/results/decode.json`` by default; results
are not committed).

Run: ``python benchmarks/decode_bench.py`` (about a minute on a laptop).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import replica_client as rc
from replica_client.binlog.events import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent
from replica_client.testing.server import MariaDBServer, ServerVariant

__all__ = ["COLUMNS", "main"]

SCHEMA = "bench"
TABLE = "all_types"
RESULTS = Path(__file__).resolve().parent / "results" / "decode.json"

#: (name, DDL, server-side expression of ``n``, the row number). 27 columns + id.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("ti", "TINYINT", "(n % 256) - 128"),
    ("tiu", "TINYINT UNSIGNED", "n % 256"),
    ("si", "SMALLINT", "(n % 65536) - 32768"),
    ("siu", "SMALLINT UNSIGNED", "n % 65536"),
    ("mi", "MEDIUMINT", "(n * 7 % 16777216) - 8388608"),
    ("miu", "MEDIUMINT UNSIGNED", "n * 7 % 16777216"),
    ("i", "INT", "(n * 2654435761 % 4294967296) - 2147483648"),
    ("iu", "INT UNSIGNED", "n * 2654435761 % 4294967296"),
    ("bi", "BIGINT", "CAST(CRC32(n) AS SIGNED) * 2147483647 * IF(n % 2, 1, -1)"),
    ("biu", "BIGINT UNSIGNED", "(CAST(CRC32(n) AS UNSIGNED) << 32) | CRC32(n + 1)"),
    ("dec", "DECIMAL(20,6)", "n * 12345.678901 * IF(n % 3, 1, -1)"),
    ("f", "FLOAT", "n / 7"),
    ("d", "DOUBLE", "n * PI()"),
    ("b13", "BIT(13)", "n % 8192"),
    ("dte", "DATE", "DATE('2000-01-01') + INTERVAL (n % 10000) DAY"),
    ("t6", "TIME(6)", "SEC_TO_TIME((n % 300000) - 150000 + (n % 999983) / 1000000)"),
    (
        "dt6",
        "DATETIME(6)",
        "TIMESTAMP('2020-01-01') + INTERVAL n SECOND + INTERVAL (n % 999983) MICROSECOND",
    ),
    ("ts3", "TIMESTAMP(3) NULL DEFAULT NULL", "FROM_UNIXTIME(1600000000 + n + (n % 1000) / 1000)"),
    ("y", "YEAR", "1901 + n % 255"),
    ("ch", "CHAR(20) CHARACTER SET latin1", "CONCAT('c', n)"),
    (
        "vc",
        "VARCHAR(300) CHARACTER SET utf8mb4",
        "CONCAT('värde-', n, REPEAT('ü', n % 40))",
    ),
    ("bl", "BLOB", "REPEAT(UNHEX(MD5(n)), 1 + n % 8)"),
    ("tx", "TEXT CHARACTER SET utf8mb4", "REPEAT(CONCAT('text ', n, ' '), 1 + n % 5)"),
    (
        "e",
        "ENUM('red','green','blue','ç') CHARACTER SET utf8mb4",
        "ELT(1 + n % 4, 'red', 'green', 'blue', 'ç')",
    ),
    ("s", "SET('a','b','c','d')", "n % 16"),
    (
        "j",
        "JSON",
        "JSON_OBJECT('n', n, 'name', CONCAT('x', n), 'tags', JSON_ARRAY(n % 3, 'a'), 'f', n / 3)",
    ),
    ("i2", "INT UNSIGNED", "n"),
)


def create_table(srv: MariaDBServer) -> None:
    cols = ",\n  ".join(f"`{name}` {ddl} NULL" for name, ddl, _ in COLUMNS)
    srv.sql_many(
        [
            f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
            f"DROP TABLE IF EXISTS {SCHEMA}.{TABLE}",
            f"CREATE TABLE {SCHEMA}.{TABLE} (\n  id INT UNSIGNED NOT NULL PRIMARY KEY,\n"
            f"  {cols}\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        ]
    )


def insert_rows(srv: MariaDBServer, rows: int, batch: int) -> None:
    """``rows`` rows, ``batch`` per INSERT ... SELECT (one transaction each)."""
    names = ", ".join(f"`{name}`" for name, _, _ in COLUMNS)
    # About 10% NULLs, spread over the rows differently for each column.
    exprs = ", ".join(
        f"IF((n + {k}) % 10 = 0, NULL, {expr})" for k, (_, _, expr) in enumerate(COLUMNS)
    )
    for offset in range(0, rows, batch):
        count = min(batch, rows - offset)
        srv.sql(
            f"INSERT INTO {SCHEMA}.{TABLE} (id, {names}) "
            f"SELECT n, {exprs} FROM (SELECT CAST(seq + {offset} AS SIGNED) AS n "
            f"FROM {SCHEMA}.seq_1_to_{count}) AS g"
        )


def decode_events(files: Sequence[Path]) -> tuple[int, int]:
    events = rows = 0
    with rc.open_binlog(files) as reader:
        for event in reader:
            events += 1
            if isinstance(event, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
                rows += len(event.rows)
    return events, rows


def decode_changes(files: Sequence[Path]) -> tuple[int, int]:
    changes = 0
    with rc.open_binlog(files) as reader:
        for _ in rc.iter_changes(reader):
            changes += 1
    return 0, changes


def timed(
    fn: Callable[[Sequence[Path]], tuple[int, int]], files: Sequence[Path], runs: int
) -> tuple[list[float], tuple[int, int]]:
    seconds: list[float] = []
    counts = (0, 0)
    for _ in range(runs):
        began = time.perf_counter()
        counts = fn(files)
        seconds.append(time.perf_counter() - began)
    return seconds, counts


def figures(seconds: list[float], events: int, rows: int) -> dict[str, Any]:
    median = statistics.median(seconds)
    return {
        "runs_s": [round(s, 4) for s in seconds],
        "median_s": round(median, 4),
        "events_per_s": round(events / median) if events else None,
        "rows_per_s": round(rows / median),
        "us_per_row": round(median / rows * 1e6, 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    began = time.perf_counter()
    with MariaDBServer(ServerVariant()) as srv:
        # No semi-sync replica will ever answer: do not wait for one.
        srv.sql("SET GLOBAL rpl_semi_sync_master_enabled = OFF")
        version = str(srv.sql("SELECT VERSION()")[0][0])
        create_table(srv)
        srv.sql("FLUSH BINARY LOGS")
        first = srv.binlog_files()[-1].name
        load_began = time.perf_counter()
        insert_rows(srv, args.rows, args.batch)
        load_s = time.perf_counter() - load_began
        srv.sql("FLUSH BINARY LOGS")
        files = [f for f in srv.binlog_files()[:-1] if f.name >= first]
        size = sum(f.stat().st_size for f in files)

        event_s, (events, rows) = timed(decode_events, files, args.runs)
        change_s, (_, changes) = timed(decode_changes, files, args.runs)
    if rows != args.rows or changes != args.rows:
        print(f"expected {args.rows} rows, decoded {rows} rows and {changes} changes")
        return 1

    result = {
        "server": version,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "columns": len(COLUMNS) + 1,
        "rows": rows,
        "events": events,
        "binlog_files": len(files),
        "binlog_bytes": size,
        "insert_s": round(load_s, 2),
        "open_binlog": figures(event_s, events, rows),
        "iter_changes": figures(change_s, events, changes),
        "total_s": round(time.perf_counter() - began, 1),
    }
    dec, chg = result["open_binlog"], result["iter_changes"]
    assert isinstance(dec, dict) and isinstance(chg, dict)
    print(
        f"binlog: {len(files)} file(s), {size / 1e6:.1f} MB, {events} events, {rows} rows, "
        f"{len(COLUMNS) + 1} columns; server {version}; Python {platform.python_version()}"
    )
    print(f"{'':14} {'median s':>9} {'events/s':>10} {'rows/s':>10} {'µs/row':>8}")
    for label, fig in (("open_binlog", dec), ("iter_changes", chg)):
        ev = f"{fig['events_per_s']:,}" if fig["events_per_s"] else "-"
        print(
            f"{label:14} {fig['median_s']:9.3f} {ev:>10} {fig['rows_per_s']:>10,} "
            f"{fig['us_per_row']:8.2f}"
        )
    print(f"(median of {args.runs} runs; insert took {load_s:.1f} s, not measured)")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
