"""Snapshot speed and memory: ``connect(snapshot=...)`` on a large table, beside ``mariadb-dump``.

Usage (from the repository root)::

    python3 -m benchmarks.snapshot_bench                 # 5,000,000 rows
    python3 -m benchmarks.snapshot_bench --rows 1000000

A private MariaDB primary holds ``bench.snap`` (BIGINT key, INT, VARCHAR(32),
DATETIME, DECIMAL(10,2); rows made server-side with the SEQUENCE engine) and
``bench.wide`` (30 columns of mixed types: integers, DECIMAL, DOUBLE, FLOAT,
DATE, DATETIME(6), TIMESTAMP, TIME, VARCHAR, TEXT, JSON, BLOB, ENUM;
``--wide-rows``). In a fresh process each, ``replica_client`` snapshots
``bench.snap`` in consistent and in chunked mode and ``bench.wide`` in
consistent mode (``async for change in stream.changes()`` until the last read
row, over loopback) and reports rows/s, MB/s of row data (the table's
``DATA_LENGTH``) and its peak RSS (``VmHWM``); PyMySQL's ``SSCursor`` reads
the same rows typed by PyMySQL (the everyday Python alternative); then
``mariadb-dump --single-transaction --quick`` writes ``bench.snap`` to
``/dev/null`` (text, untyped: the server-side reference). Requirement checked:
peak RSS < 150 MB whatever the table size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql

from replica_client.testing.server import MariaDBServer, ServerVariant

from . import workload
from .runners import peak_rss_kb, run_child

__all__ = ["main"]

_RSS_LIMIT_MB = 150


def _pymysql_child(args: dict[str, Any]) -> dict[str, Any]:
    import pymysql.cursors

    reads = 0
    began = time.perf_counter()
    conn = pymysql.connect(
        host=args["host"], port=args["port"], user=args["user"], password=args["password"]
    )
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute(f"SELECT * FROM {args['table']} ORDER BY id")
        while batch := cur.fetchmany(1000):
            reads += len(batch)
    conn.close()
    seconds = time.perf_counter() - began
    return _result(reads, seconds)


def _result(rows: int, seconds: float) -> dict[str, Any]:
    """A reader's figures: rows, wall seconds, its CPU seconds, peak RSS."""
    return {
        "rows": rows,
        "seconds": seconds,
        "cpu_seconds": time.process_time(),
        "peak_rss_mb": peak_rss_kb() / 1024,
    }


def _server_cpu(pid: int | None) -> float:
    """CPU seconds the server process has used (user + system)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child(args: dict[str, Any]) -> dict[str, Any]:
    from replica_client.aio import connect

    if args["mode"] == "pymysql":
        return _pymysql_child(args)
    reads = 0

    async def run() -> None:
        nonlocal reads
        async with connect(
            host=args["host"],
            port=args["port"],
            user=args["user"],
            password=args["password"],
            server_id=args["server_id"],
            snapshot=args["mode"],
            snapshot_tables=(args["table"],),
            blocking=False,
        ) as stream:
            async for change in stream.changes():
                if change.op == "read":
                    reads += 1
                elif stream.snapshot_state is None:
                    break

    began = time.perf_counter()
    asyncio.run(run())
    seconds = time.perf_counter() - began
    return _result(reads, seconds)


def _measure(args: dict[str, Any]) -> dict[str, Any]:
    return run_child("benchmarks.snapshot_bench", json.dumps(args))


def _dump(srv: MariaDBServer) -> float:
    tool = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    if tool is None:
        raise SystemExit("mariadb-dump is not installed")
    began = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(
            [
                tool,
                f"--host={srv.host}",
                f"--port={srv.port}",
                f"--user={srv.user}",
                f"--password={srv.password}",
                "--single-transaction",
                "--quick",
                "bench",
                "snap",
            ],
            stdout=sink,
            check=True,
        )
    return time.perf_counter() - began


_WIDE_COLUMNS = (
    "id BIGINT PRIMARY KEY, i1 TINYINT, i2 SMALLINT, i3 MEDIUMINT, i4 INT, i5 BIGINT UNSIGNED, "
    "d1 DECIMAL(12,2), d2 DECIMAL(20,6), d3 DECIMAL(38,10), f1 DOUBLE, f2 FLOAT, "
    "t1 DATE, t2 DATETIME(6), t3 TIMESTAMP(3) NULL, t4 TIME(3), y1 YEAR, "
    "s1 VARCHAR(16), s2 VARCHAR(64), s3 VARCHAR(255), s4 CHAR(8), x1 TEXT, x2 TEXT, "
    "j1 JSON, b1 VARBINARY(32), b2 BLOB, e1 ENUM('a','b','c'), n1 INT NULL, n2 VARCHAR(10) NULL, "
    "u1 INT UNSIGNED, k1 BIT(8)"
)
_WIDE_VALUES = (
    "seq, seq % 100, seq % 30000, seq % 8000000, seq, seq * 1000, "
    "seq / 100, seq / 7, seq / 3, seq / 11, seq / 13, "
    "'2020-01-01' + INTERVAL (seq % 3650) DAY, '2024-01-01' + INTERVAL seq SECOND "
    "+ INTERVAL (seq % 1000000) MICROSECOND, '2024-01-01' + INTERVAL seq SECOND, "
    "SEC_TO_TIME(seq % 86400), 2000 + seq % 100, "
    "CONCAT('s', seq), REPEAT('v', seq % 64), REPEAT('w', 100 + seq % 100), "
    "LPAD(seq % 1000, 8, '0'), "
    "REPEAT('text ', 10 + seq % 20), CONCAT('x', seq), "
    "JSON_OBJECT('id', seq, 'tag', CONCAT('t', seq % 10)), UNHEX(MD5(seq)), REPEAT('b', seq % 50), "
    "ELT(1 + seq % 3, 'a', 'b', 'c'), IF(seq % 5, seq, NULL), IF(seq % 3, NULL, 'n'), "
    "seq % 4000000000, seq % 256"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--wide-rows", type=int, default=500_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        print(json.dumps(_child(json.loads(opts.child))))
        return 0
    srv = MariaDBServer(
        ServerVariant(extra_args=("--innodb-buffer-pool-size=512M", "--innodb-log-file-size=512M"))
    )
    srv.start()
    results: dict[str, Any] = {"rows": opts.rows, "wide_rows": opts.wide_rows}
    try:
        password = secrets.token_hex(8)
        conn = pymysql.connect(
            host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
        )
        workload.create_bench_user(conn, password)
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS bench")
            cur.execute(
                "CREATE TABLE bench.snap (id BIGINT PRIMARY KEY, a INT, b VARCHAR(32), "
                "c DATETIME, d DECIMAL(10,2))"
            )
            cur.execute(f"CREATE TABLE bench.wide ({_WIDE_COLUMNS})")
            step = 500_000
            for table, rows, values in (
                (
                    "snap",
                    opts.rows,
                    "seq, seq % 1000, CONCAT('row-', seq), "
                    "'2024-01-01' + INTERVAL seq SECOND, seq / 100",
                ),
                ("wide", opts.wide_rows, _WIDE_VALUES),
            ):
                for low in range(1, rows + 1, step):
                    high = min(rows, low + step - 1)
                    cur.execute(
                        f"INSERT INTO bench.{table} SELECT {values} FROM bench.seq_{low}_to_{high}"
                    )
            cur.execute("ANALYZE TABLE bench.snap, bench.wide")
            cur.execute(
                "SELECT TABLE_NAME, DATA_LENGTH FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = 'bench'"
            )
            sizes = {str(name): int(length) for name, length in cur.fetchall()}
        conn.close()
        args = {
            "host": srv.host,
            "port": srv.port,
            "user": workload.BENCH_USER,
            "password": password,
        }
        runs = (
            ("consistent", "bench.snap"),
            ("chunked", "bench.snap"),
            ("pymysql", "bench.snap"),
            ("wide consistent", "bench.wide"),
            ("wide pymysql", "bench.wide"),
        )
        for n, (name, table) in enumerate(runs):
            mode = name.split()[-1]
            server_before = _server_cpu(srv.pid)
            results[name] = _measure({**args, "mode": mode, "table": table, "server_id": 401 + n})
            results[name]["server_cpu_seconds"] = _server_cpu(srv.pid) - server_before
        results["mariadb_dump_seconds"] = _dump(srv)
    finally:
        srv.close()
    dump_rate = opts.rows / results["mariadb_dump_seconds"]
    print(f"{opts.rows:,} rows of bench.snap; mariadb-dump: {dump_rate:,.0f} rows/s")
    ok = True
    for name, table in runs:
        r = results[name]
        rate = r["rows"] / r["seconds"]
        short = table.split(".")[1]
        expected = opts.rows if short == "snap" else opts.wide_rows
        ok = ok and r["rows"] == expected and r["peak_rss_mb"] < _RSS_LIMIT_MB
        mb_s = sizes.get(short, 0) / 1e6 / r["seconds"]
        pymysql_rate = results["wide pymysql" if short == "wide" else "pymysql"]
        ratio = rate / (pymysql_rate["rows"] / pymysql_rate["seconds"])
        print(
            f"  {name}: {r['rows']:,} rows in {r['seconds']:.1f} s = {rate:,.0f} rows/s, "
            f"{mb_s:.0f} MB/s ({ratio:.2f}x PyMySQL SSCursor"
            + (f", {rate / dump_rate:.2f}x mariadb-dump" if short == "snap" else "")
            + f"), peak RSS {r['peak_rss_mb']:.0f} MB"
        )
        # CPU a second of reading takes, in the reader and in the server: what more
        # connections at once could gain on this machine's cores
        reader, server = r["cpu_seconds"] / r["seconds"], r["server_cpu_seconds"] / r["seconds"]
        print(
            f"    CPU per second of reading: reader {reader:.2f}, server {server:.2f}; "
            f"ceiling for parallel readers on {os.cpu_count()} cores: "
            f"{(os.cpu_count() or 1) / (reader + server):.2f}x"
        )
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
