"""The library streams from every server flavour the harness offers.

A smoke test, not the oracle: per flavour (MariaDB 10.11, 11.8, MySQL 9.7), a
replication user made by ``create_user`` with the flavour's default auth plugin
streams one inserted row through ``replica_client.connect``: from the binlog
position taken before the insert, non-blocking (the stream ends at the binlog's
end), and from "now", blocking, with the row written after the stream is
registered. On MariaDB 11.8 a ``parsec`` user streams too. A seeded table is
snapshotted through the plugin's helpers, then its next change streams.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

import replica_client as rc
from replica_client.testing.pytest_plugin import (
    PrimaryFactory,
    open_snapshot,
    take_changes,
    take_snapshot,
)
from replica_client.testing.server import DatabaseServer, ServerVariant

__all__: list[str] = []

SERVERS = {
    "mariadb-10.11": ServerVariant(),
    "mariadb-11.8": ServerVariant(flavor="mariadb", version="11.8"),
    "mysql-9.7": ServerVariant(flavor="mysql", version="9.7"),
}
PASSWORD = "smoke-Pw-17"
_server_ids = itertools.count(41000)


@pytest.fixture(params=list(SERVERS))
def primary(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> DatabaseServer:
    server = mariadb_primary_factory(SERVERS[str(request.param)])
    server.create_user("smoke_repl", PASSWORD)
    server.sql("CREATE TABLE IF NOT EXISTS test.smoke (id INT PRIMARY KEY, v VARCHAR(40))")
    return server


def connect(server: DatabaseServer, user: str = "smoke_repl", **options: Any) -> Any:
    return rc.connect(
        host=server.host,
        port=server.port,
        user=user,
        password=PASSWORD,
        server_id=next(_server_ids),
        heartbeat_period=1.0,
        connect_timeout=20.0,
        **options,
    )


async def rows_until_end(server: DatabaseServer, start: rc.FilePos, user: str) -> list[Any]:
    out = []
    async with asyncio.timeout(30), connect(server, user, start=start, blocking=False) as stream:
        async for change in stream.changes():
            out.append((change.op, change.schema, change.table, change.before, change.after))
    return out


async def test_streams_a_row_from_the_current_position(primary: DatabaseServer) -> None:
    start = rc.FilePos(*primary.binlog_position())
    primary.sql("INSERT INTO test.smoke VALUES (1, 'from-position')")
    assert await rows_until_end(primary, start, "smoke_repl") == [
        ("insert", "test", "smoke", None, {"id": 1, "v": "from-position"})
    ]


async def test_streams_a_row_written_after_now(primary: DatabaseServer) -> None:
    async with connect(primary, start="now") as stream:
        primary.sql("INSERT INTO test.smoke VALUES (2, 'after-now')")
        changes = await take_changes(stream, 1, timeout=20)
    assert [(c.op, c.table, c.after) for c in changes] == [
        ("insert", "smoke", {"id": 2, "v": "after-now"})
    ]


async def test_a_parsec_user_streams_from_mariadb_11_8(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    server = mariadb_primary_factory(SERVERS["mariadb-11.8"])
    server.create_user("smoke_parsec", PASSWORD, plugin="parsec")
    server.sql("CREATE TABLE IF NOT EXISTS test.smoke (id INT PRIMARY KEY, v VARCHAR(40))")
    start = rc.FilePos(*server.binlog_position())
    server.sql("INSERT INTO test.smoke VALUES (3, 'parsec')")
    assert await rows_until_end(server, start, "smoke_parsec") == [
        ("insert", "test", "smoke", None, {"id": 3, "v": "parsec"})
    ]


@pytest.mark.parametrize("mode", ["consistent", "chunked"])
async def test_the_plugin_snapshots_a_seeded_table(primary: DatabaseServer, mode: str) -> None:
    primary.sql_many(
        [
            "DROP TABLE IF EXISTS test.seeded",
            "CREATE TABLE test.seeded (id INT PRIMARY KEY, v VARCHAR(40))",
            "INSERT INTO test.seeded VALUES (2, 'b'), (1, 'a'), (3, NULL)",
        ]
    )
    async with asyncio.timeout(60):
        stream = await open_snapshot(primary, "test.seeded", snapshot=mode, snapshot_chunk_rows=2)
        async with stream:
            reads = await take_snapshot(stream)
            primary.sql("UPDATE test.seeded SET v = 'c' WHERE id = 3")
            [change] = await take_changes(stream, 1)
    assert [(c.op, c.after) for c in reads] == [
        ("read", {"id": 1, "v": "a"}),
        ("read", {"id": 2, "v": "b"}),
        ("read", {"id": 3, "v": None}),
    ]
    assert (change.op, change.before, change.after) == (
        "update",
        {"id": 3, "v": None},
        {"id": 3, "v": "c"},
    )
