"""Memory while streaming a large binlog, and for one very large row.

Usage (from the repository root)::

    python3 -m benchmarks.memory               # 1 GiB of binlog, one 64 MiB row
    python3 -m benchmarks.memory --gib 0.25 --row-mib 16

A private primary writes (1) ``--gib`` GiB of binlog as 1 MiB rows (LONGBLOB,
built server-side with the SEQUENCE engine) and (2) one row holding a
``--row-mib`` MiB LONGBLOB. Each range is read to its end in a fresh process,
over the network (``connect(..., blocking=False)``) and from the files
(``open_binlog``); the child reports its RSS before reading and its peak RSS
(``VmHWM``) after. Requirements checked: peak RSS < 100 MB while streaming;
peak growth while decoding the big row <= 3x the row. The server's datadir
(and so the binlog) is deleted when the run ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import pymysql

from replica_client.testing.server import MariaDBServer, ServerVariant

from . import workload
from .runners import peak_rss_kb, run_child

__all__ = ["main"]

_MIB = 1 << 20


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _child(mode: str, args: dict[str, Any]) -> dict[str, Any]:
    import replica_client as rc
    from replica_client.aio import connect
    from replica_client.position import FilePos

    events = rows = largest = 0

    def count(event: Any) -> None:
        nonlocal events, rows, largest
        events += 1
        for row in getattr(event, "rows", ()):
            rows += 1
            for value in row:
                if isinstance(value, bytes | str):
                    largest = max(largest, len(value))

    base = _rss_kb()
    if mode == "file":
        with rc.open_binlog(args["paths"]) as stream:
            for event in stream:
                count(event)
    else:

        async def run() -> None:
            async with connect(
                host=args["host"],
                port=args["port"],
                user=args["user"],
                password=args["password"],
                server_id=args["server_id"],
                start=FilePos(args["first"], 4),
                blocking=False,
            ) as stream:
                async for event in stream:
                    count(event)

        asyncio.run(run())
    return {
        "events": events,
        "rows": rows,
        "largest_value": largest,
        "rss_before_mb": base / 1024,
        "peak_rss_mb": peak_rss_kb() / 1024,
    }


def _measure(mode: str, args: dict[str, Any]) -> dict[str, Any]:
    return run_child("benchmarks.memory", mode, json.dumps(args))


def _flush(cur: Any) -> str:
    cur.execute("FLUSH BINARY LOGS")
    cur.execute("SHOW MASTER STATUS")
    return str(cur.fetchone()[0])


def _range(cur: Any, first: str, after: str, datadir: str) -> tuple[str, list[str]]:
    cur.execute("SHOW BINARY LOGS")
    names = [str(r[0]) for r in cur.fetchall() if first <= str(r[0]) < after]
    return names[0], [str(Path(datadir) / n) for n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="binlog to stream, GiB")
    parser.add_argument("--row-mib", type=int, default=64, help="size of the big row, MiB")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        print(json.dumps(_child(opts.child[0], json.loads(opts.child[1]))))
        return 0
    srv = MariaDBServer(
        ServerVariant(
            extra_args=(
                "--rpl-semi-sync-master-enabled=OFF",
                "--innodb-log-file-size=512M",
                "--innodb-buffer-pool-size=256M",
            )
        )
    )
    srv.start()
    results: dict[str, Any] = {}
    try:
        password = secrets.token_hex(8)
        conn = pymysql.connect(
            host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
        )
        workload.create_bench_user(conn, password)
        args: dict[str, Any] = {
            "host": srv.host,
            "port": srv.port,
            "user": workload.BENCH_USER,
            "password": password,
            "server_id": 301,
        }
        with conn.cursor() as cur:
            cur.execute("SELECT @@datadir")
            datadir = str(cur.fetchone()[0])
            cur.execute("CREATE DATABASE IF NOT EXISTS bench")
            cur.execute("CREATE TABLE bench.big (id INT PRIMARY KEY, b LONGBLOB)")
            first = _flush(cur)
            total = int(opts.gib * 1024)
            for start in range(0, total, 16):
                stop = min(total, start + 16) - 1
                cur.execute(
                    "INSERT INTO bench.big SELECT seq, REPEAT(CHAR(65 + seq % 26), 1048576) "
                    f"FROM bench.seq_{start}_to_{stop}"
                )
                cur.execute("TRUNCATE TABLE bench.big")  # keep the datadir small (no row images)
            after = _flush(cur)
            args["first"], args["paths"] = _range(cur, first, after, datadir)
            size = sum(Path(p).stat().st_size for p in args["paths"])
            results["stream_binlog_mb"] = size / 1e6
            for mode in ("net", "file"):
                results[f"stream_{mode}"] = _measure(mode, {**args, "server_id": 302})
            first = _flush(cur)
            cur.execute(f"INSERT INTO bench.big VALUES (-1, REPEAT('z', {opts.row_mib * _MIB}))")
            after = _flush(cur)
            args["first"], args["paths"] = _range(cur, first, after, datadir)
            for mode in ("net", "file"):
                r = _measure(mode, {**args, "server_id": 303})
                r["growth_per_row_size"] = (r["peak_rss_mb"] - r["rss_before_mb"]) / opts.row_mib
                results[f"big_row_{mode}"] = r
        conn.close()
    finally:
        srv.close()
    print(f"streamed {results['stream_binlog_mb']:.0f} MB of binlog:")
    for mode in ("net", "file"):
        r = results[f"stream_{mode}"]
        print(
            f"  {mode}: {r['rows']} rows, RSS before {r['rss_before_mb']:.0f} MB, "
            f"peak {r['peak_rss_mb']:.0f} MB"
        )
    print(f"one {opts.row_mib} MiB row:")
    for mode in ("net", "file"):
        r = results[f"big_row_{mode}"]
        print(
            f"  {mode}: RSS before {r['rss_before_mb']:.0f} MB, peak {r['peak_rss_mb']:.0f} MB, "
            f"growth {r['growth_per_row_size']:.2f}x the row"
        )
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
