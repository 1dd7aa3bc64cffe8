"""Snapshot speed and memory: ``connect(snapshot=...)`` on a large table, beside ``mariadb-dump``.

Usage (from the repository root)::

    python3 -m benchmarks.snapshot_bench                 # 5,000,000 rows
    python3 -m benchmarks.snapshot_bench --rows 1000000

A private MariaDB primary holds ``bench.snap`` (BIGINT key, INT, VARCHAR(32),
DATETIME, DECIMAL(10,2); rows made server-side with the SEQUENCE engine). In
a fresh process each, ``replica_client`` snapshots it in consistent and in
chunked mode (``async for change in stream.changes()`` until the last read
row, over loopback) and reports rows/s and its peak RSS (``VmHWM``); then
``mariadb-dump --single-transaction --quick`` writes the same table to
``/dev/null`` (its rows/s: the server-side reference). Requirement checked:
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


def _child(args: dict[str, Any]) -> dict[str, Any]:
    from replica_client.aio import connect

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
            snapshot_tables=("bench.snap",),
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
    return {"rows": reads, "seconds": seconds, "peak_rss_mb": peak_rss_kb() / 1024}


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        print(json.dumps(_child(json.loads(opts.child))))
        return 0
    srv = MariaDBServer(
        ServerVariant(
            extra_args=("--innodb-buffer-pool-size=512M", "--innodb-log-file-size=512M")
        )
    )
    srv.start()
    results: dict[str, Any] = {"rows": opts.rows}
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
            step = 500_000
            for low in range(1, opts.rows + 1, step):
                high = min(opts.rows, low + step - 1)
                cur.execute(
                    "INSERT INTO bench.snap SELECT seq, seq % 1000, CONCAT('row-', seq), "
                    "'2024-01-01' + INTERVAL seq SECOND, seq / 100 "
                    f"FROM bench.seq_{low}_to_{high}"
                )
        conn.close()
        args = {
            "host": srv.host,
            "port": srv.port,
            "user": workload.BENCH_USER,
            "password": password,
        }
        for n, mode in enumerate(("consistent", "chunked")):
            results[mode] = _measure({**args, "mode": mode, "server_id": 401 + n})
        results["mariadb_dump_seconds"] = _dump(srv)
    finally:
        srv.close()
    dump_rate = opts.rows / results["mariadb_dump_seconds"]
    print(f"{opts.rows:,} rows; mariadb-dump: {dump_rate:,.0f} rows/s")
    ok = True
    for mode in ("consistent", "chunked"):
        r = results[mode]
        rate = r["rows"] / r["seconds"]
        ok = ok and r["rows"] == opts.rows and r["peak_rss_mb"] < _RSS_LIMIT_MB
        print(
            f"  {mode}: {r['rows']:,} rows in {r['seconds']:.1f} s = {rate:,.0f} rows/s "
            f"({rate / dump_rate:.2f}x mariadb-dump), peak RSS {r['peak_rss_mb']:.0f} MB"
        )
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
