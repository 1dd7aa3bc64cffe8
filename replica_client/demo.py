"""``replica-client demo``: decoded changes on screen from a throwaway primary.

Starts a private MariaDB primary from the machine's own install (the same
launcher the test suite uses), connects to it as a replica from "now", writes
a few sample transactions of different kinds (a multi-row INSERT, an UPDATE,
a DELETE, a transaction touching two tables, a DDL), prints each change as it
streams in, then stops the primary and removes its files.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from .jsonvalues import change_envelope

__all__ = ["run_demo"]

_SAMPLE = [
    "CREATE DATABASE IF NOT EXISTS shop",
    "CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(50), email VARCHAR(100))",
    "CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer_id INT, "
    "total DECIMAL(10,2), status ENUM('new','paid','shipped'), tags SET('gift','express'), "
    "created DATETIME(3))",
]


def _transactions(rows: int) -> list[list[str]]:
    customers = ", ".join(f"({i}, 'Customer {i}', 'c{i}@example.com')" for i in range(1, rows + 1))
    orders = ", ".join(
        f"({1 + i % rows}, {10 * i + 0.99:.2f}, 'new', 'gift', '2026-01-0{1 + i % 9} 10:00:00.123')"
        for i in range(1, rows + 1)
    )
    return [
        [f"INSERT INTO shop.customers VALUES {customers}"],
        [
            "BEGIN",
            "INSERT INTO shop.orders (customer_id, total, status, tags, created) VALUES " + orders,
            "UPDATE shop.customers SET email = 'vip@example.com' WHERE id = 1",
            "COMMIT",
        ],
        ["UPDATE shop.orders SET status = 'paid', tags = 'gift,express' WHERE id <= 2"],
        ["DELETE FROM shop.orders WHERE id = 3"],
    ]


async def _stream(srv: Any, expected: int, out: Any) -> int:
    from .aio import connect

    seen = 0
    async with connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        server_id=4242,
        start="now",
        blocking=True,
        semi_sync="auto",
        heartbeat_period=1.0,
    ) as stream:
        loop = asyncio.get_running_loop()
        writer = loop.run_in_executor(None, _write_samples, srv, expected)
        changes = stream.changes()
        while seen < expected:
            change = await asyncio.wait_for(changes.__anext__(), timeout=30)
            seen += 1
            env = change_envelope(change)
            src = env["source"]
            out.write(
                f"{change.op:<6} {change.schema}.{change.table:<10} gtid={src['gtid']:<8} "
                f"before={json.dumps(env['before'], ensure_ascii=False)} "
                f"after={json.dumps(env['after'], ensure_ascii=False)}\n"
            )
            out.flush()
        await writer
        out.write(
            f"-- {seen} changes; resume position {stream.position}, GTID {stream.gtid_state}\n"
        )
    return seen


def _write_samples(srv: Any, _expected: int) -> None:
    for tx in _transactions(_rows_for(_expected)):
        srv.sql_many(tx)


def _rows_for(expected: int) -> int:
    # expected = rows (customers) + rows (orders) + 1 + 2 + 1
    return (expected - 4) // 2


def run_demo(rows: int = 5, out: Any = None) -> int:
    """Run the demo; returns the exit code."""
    from .testing.server import MariaDBServer, ServerVariant

    out = out if out is not None else sys.stdout
    rows = max(rows, 3)
    expected = 2 * rows + 4
    out.write("-- starting a private MariaDB primary from the local install ...\n")
    srv = MariaDBServer(ServerVariant())
    try:
        srv.start()
        out.write(f"-- primary on {srv.host}:{srv.port}; writing sample transactions\n")
        srv.sql_many(_SAMPLE)
        asyncio.run(_stream(srv, expected, out))
    finally:
        srv.close()
        out.write("-- primary stopped\n")
    return 0
