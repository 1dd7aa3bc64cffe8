"""Rows around the 16 MB packet boundary arrive byte-exact through the live stream."""

from __future__ import annotations

import hashlib

import pytest

import replica_client as rc
from replica_client.binlog.events import WriteRowsEvent
from replica_client.testing.server import MariaDBServer
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []

MB16 = 1 << 24


def _blob(size: int) -> bytes:
    seed = hashlib.sha256(str(size).encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


@pytest.mark.parametrize("size", [MB16 - 1, MB16, 40 * 1024 * 1024], ids=["16MB-1", "16MB", "40MB"])
async def test_large_row_byte_exact(mariadb_primary: MariaDBServer, size: int) -> None:
    srv = mariadb_primary
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_large")
    srv.sql("CREATE TABLE IF NOT EXISTS rc_large.b (id INT PRIMARY KEY, v LONGBLOB)")
    srv.sql("DELETE FROM rc_large.b WHERE id = %s", (size,))
    row = srv.sql("SHOW MASTER STATUS")[0]
    start = rc.FilePos(str(row[0]), int(row[1]))
    data = _blob(size)
    srv.sql("INSERT INTO rc_large.b (id, v) VALUES (%s, %s)", (size, data))
    got: bytes | None = None
    async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
        async for ev in stream:
            if isinstance(ev, WriteRowsEvent) and ev.table.table == "b":
                got = ev.rows[0][1]
    assert got is not None
    assert len(got) == size
    assert got == data
