"""SqlConnection: the asyncio client connection over the project's own wire protocol.

Against the scripted fake primary over a real socket, its bytes written in
random pieces: statements collected, a result set streamed in batches with
reading paused and resumed, an error among the rows, a lost connection, and
the control layer's procedures answered over it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

import replica_client.aio as rca
from replica_client.aio.sql import SqlConnection, drive_sql
from replica_client.codec import read_lenenc_bytes_or_null
from replica_client.control.procedure import Query, QueryFailed
from replica_client.errors import ConnectionLostError, ServerError
from tests.fake_primary import FakePrimary, FakeServer, serve

__all__: list[str] = []

_ROWS: list[list[str | None] | None] = [
    [str(i), None if i % 7 == 0 else "x" * (i % 300)] for i in range(3000)
]
_ROWS[1500] = ["1500", "y" * 20_000]  # a row longer than the reading pause threshold


def _cfg(server: FakeServer) -> rca.ReplicaConfig:
    return rca.ReplicaConfig.from_kwargs(
        host="127.0.0.1",
        port=server.port,
        user="repl",
        password="secret",
        server_id=42,
        connect_timeout=5,
    )


def _values(payload: bytes) -> tuple[str | None, ...]:
    out, pos = [], 0
    while pos < len(payload):
        value, pos = read_lenenc_bytes_or_null(payload, pos)
        out.append(None if value is None else bytes(value).decode())
    return tuple(out)


async def test_statements_and_a_streamed_result_set() -> None:
    server = await serve(lambda _: FakePrimary(results={"SELECT * FROM t": (["id", "v"], _ROWS)}))
    conn = await SqlConnection.open(_cfg(server))
    conn._high_bytes = 4096  # pause reading early: the rows come in many reads
    try:
        assert await conn.rows("SELECT UNIX_TIMESTAMP()") == [("1700000000",)]
        assert await conn.rows("SET @x = 1") == []
        columns = await conn.stream("SELECT * FROM t")
        assert [c.name for c in columns] == ["id", "v"] and conn.reading_rows
        rows: list[tuple[str | None, ...]] = []
        async with asyncio.timeout(30):  # (reading paused for good would hang here)
            while (batch := await conn.next_rows(100)) is not None:
                assert 0 < len(batch) <= 100
                rows.extend(_values(p) for p in batch)
        assert rows == [tuple(r) for r in _ROWS if r is not None]
        assert not conn.reading_rows and await conn.next_rows(100) is None
        # the connection goes on
        assert await conn.rows("SELECT UNIX_TIMESTAMP()") == [("1700000000",)]
        assert server.primaries[0].queries[-1] == "SELECT UNIX_TIMESTAMP()"
    finally:
        conn.close()
        server.server.close()  # type: ignore[union-attr]


async def test_an_error_among_the_rows_ends_the_statement() -> None:
    rows: list[list[str | None] | None] = [["1", "a"], ["2", "b"], None]
    server = await serve(lambda _: FakePrimary(results={"SELECT * FROM t": (["id", "v"], rows)}))
    conn = await SqlConnection.open(_cfg(server))
    try:
        await conn.stream("SELECT * FROM t")
        got: list[bytes] = []
        with pytest.raises(ServerError) as info:
            while (batch := await conn.next_rows(1)) is not None:
                got.extend(batch)
        assert info.value.errno == 1317 and len(got) == 2 and not conn.reading_rows
        assert await conn.rows("SELECT UNIX_TIMESTAMP()") == [("1700000000",)]
    finally:
        conn.close()
        server.server.close()  # type: ignore[union-attr]


async def test_a_refused_login_and_a_lost_connection() -> None:
    server = await serve(lambda _: FakePrimary(password=b"other"))
    with pytest.raises(ServerError) as info:
        await SqlConnection.open(_cfg(server))
    assert info.value.errno == 1045
    server.server.close()  # type: ignore[union-attr]

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    gone = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = gone.sockets[0].getsockname()[1]
    cfg = rca.ReplicaConfig.from_kwargs(
        host="127.0.0.1", port=port, user="repl", password="secret", server_id=42
    )
    with pytest.raises(ConnectionLostError):
        await SqlConnection.open(cfg)
    gone.close()


async def test_the_control_layer_asks_over_it() -> None:
    def procedure() -> Generator[Query, Any, tuple[Any, Any]]:
        rows = yield Query("SELECT %s", ("UNIX_TIMESTAMP()",))  # (not this: a literal)
        now = yield Query("SELECT UNIX_TIMESTAMP()")
        refused = yield Query("SELECT no_such_thing", tolerate=frozenset({1064}))
        return (rows, now), refused

    server = await serve(lambda _: FakePrimary())
    conn = await SqlConnection.open(_cfg(server))
    try:
        with pytest.raises(ServerError):  # a refusal not tolerated: raised
            await drive_sql(procedure(), conn)
        queries = server.primaries[0].queries
        assert queries[-1] == "SELECT CONVERT(X'554e49585f54494d455354414d502829' USING utf8mb4)"

        def answered() -> Generator[Query, Any, tuple[Any, Any]]:
            now = yield Query("SELECT UNIX_TIMESTAMP()")
            refused = yield Query("SELECT no_such_thing", tolerate=frozenset({1064}))
            return now, refused

        now, refused = await drive_sql(answered(), conn)
        assert now == [("1700000000",)]
        assert isinstance(refused, QueryFailed) and refused.errno == 1064
    finally:
        conn.close()
        server.server.close()  # type: ignore[union-attr]
