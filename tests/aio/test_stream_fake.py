"""The asyncio stream against an in-process scripted fake primary.

The fake server writes its bytes in random pieces (``split=True``), so the
driver sees packets cut at arbitrary points.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import uuid

import pytest

import replica_client.aio as rca
from replica_client.binlog.events import (
    Event,
    GtidEvent,
    QueryEvent,
    RotateEvent,
    TableMapEvent,
    WriteRowsEvent,
    XidEvent,
)
from replica_client.errors import (
    AuthenticationError,
    BinlogPositionError,
    ConfigError,
    ConnectionLostError,
    ReplicaTimeoutError,
    StateError,
)
from replica_client.position import FilePos, Gtid, MysqlGtidSet
from replica_client.wire.framing import MAX_CHUNK
from tests.fake_primary import (
    BinlogBuilder,
    FakePrimary,
    FakeServer,
    build_event,
    fake_rotate,
    gtid_body,
    query_body,
    serve,
)

__all__: list[str] = []


def _binlog(n: int = 5) -> BinlogBuilder:
    b = BinlogBuilder()
    b.fde()
    b.gtid_list([(0, 1, 0)])
    for seq in range(1, n + 1):
        b.transaction(seq, f"INSERT INTO t VALUES ({seq})")
    return b


def _cfg(server: FakeServer, **kw: object) -> rca.ReplicaConfig:
    options: dict[str, object] = {
        "host": "127.0.0.1",
        "port": server.port,
        "user": "repl",
        "password": "secret",
        "server_id": 42,
        "blocking": False,
        "heartbeat_period": 0,
        "connect_timeout": 5,
        # the fake primary speaks the replication protocol only, not SQL: no
        # definitions are read from it
        "schema_history": "off",
    }
    options.update(kw)
    return rca.ReplicaConfig.from_kwargs(**options)


async def _collect(stream: rca.BinlogStream) -> list[Event]:
    return [ev async for ev in stream]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_mariadb_stream_random_splits(seed: int) -> None:
    b = _binlog()
    server = await serve(lambda i: FakePrimary(binlog=b))
    server.seed = seed
    async with server.server, rca.connect(_cfg(server)) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
        assert isinstance(events[0], RotateEvent)
        assert sum(isinstance(e, XidEvent) for e in events) == 5
        assert stream.position == FilePos(b.file, b.pos)
        assert stream.gtid_state == Gtid("0-1-5")
        assert stream.flavor is not None and stream.flavor.value == "mariadb"


async def test_await_form_and_aclose() -> None:
    b = _binlog(1)
    server = await serve(lambda i: FakePrimary(binlog=b, end="hold"))
    async with server.server:  # type: ignore[union-attr]
        stream = await rca.connect(_cfg(server, blocking=True))
        first = await stream.__anext__()
        assert isinstance(first, RotateEvent)
        await stream.aclose()
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()


async def test_mysql_flavor_binlog_dump_gtid() -> None:
    b = BinlogBuilder()
    b.fde()
    sid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    # (a dump by GTID set sends no anonymous transaction: each has its GTID event)
    b.add(33, b"\x01" + uuid.UUID(sid).bytes + struct.pack("<q", 6))
    b.add(2, query_body("BEGIN"))
    b.add(2, query_body("INSERT INTO t VALUES (1)"))
    b.add(16, struct.pack("<Q", 9))
    primary = FakePrimary(flavor="mysql", events=[fake_rotate(b.file), *b.events])
    server = await serve(lambda i: primary)
    cfg = _cfg(server, start=MysqlGtidSet(f"{sid}:1-5"))
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
    assert [type(e).__name__ for e in events] == [
        "RotateEvent",
        "FormatDescriptionEvent",
        "MysqlGtidEvent",
        "QueryEvent",
        "QueryEvent",
        "XidEvent",
    ]
    assert primary.dump is not None and primary.dump[0] == 0x1E
    assert MysqlGtidSet(f"{sid}:1-5").encode() in primary.dump
    assert any(q.startswith("SET @master_binlog_checksum") and "@source_binlog_checksum" in q
               for q in primary.queries)
    assert any("@replica_uuid" in q for q in primary.queries)
    assert stream.position == FilePos(b.file, b.pos)
    assert stream.gtid_state == MysqlGtidSet(f"{sid}:1-6")


async def test_mysql_semi_sync_variables() -> None:
    b = _binlog(2)
    xids = {i + 1 for i, ev in enumerate(b.events) if ev[4] == 16}
    primary = FakePrimary(
        flavor="mysql", events=[fake_rotate(b.file), *b.events], semi_sync=True, ack_flags=xids,
        end="hold",
    )
    server = await serve(lambda i: primary)
    async with server.server, rca.connect(  # type: ignore[union-attr]
        _cfg(server, blocking=True, semi_sync="on")
    ) as stream:
        n = 0
        async for ev in stream:
            n += isinstance(ev, XidEvent)
            if n == 2:
                break
        await asyncio.sleep(0.05)
    assert "SET @rpl_semi_sync_replica=1, @rpl_semi_sync_slave=1" in primary.queries
    assert len(primary.acks) == 2


async def test_err_mid_stream() -> None:
    b = _binlog(3)
    primary = FakePrimary(events=[fake_rotate(b.file), *b.events[:5]], end="err")
    server = await serve(lambda i: primary)
    async with server.server, rca.connect(_cfg(server)) as stream:  # type: ignore[union-attr]
        seen: list[Event] = []
        with pytest.raises(BinlogPositionError) as info:
            async for ev in stream:
                seen.append(ev)
    assert len(seen) == 6  # everything before the ERR was delivered
    assert info.value.errno == 1236
    assert "Could not find first log" in info.value.message


async def test_wrong_password_is_typed() -> None:
    server = await serve(lambda i: FakePrimary(password=b"other"))
    async with server.server:  # type: ignore[union-attr]
        with pytest.raises(AuthenticationError) as info:
            await rca.connect(_cfg(server, password="secret-pw"))
    assert "secret-pw" not in str(info.value)


@pytest.mark.parametrize("plugin", ["parsec", "client_ed25519", "caching_sha2_password"])
async def test_auth_plugins_over_asyncio(plugin: str) -> None:
    b = _binlog(1)
    server = await serve(lambda i: FakePrimary(binlog=b, auth=plugin))
    async with server.server, rca.connect(_cfg(server)) as stream:  # type: ignore[union-attr]
        assert len(await _collect(stream)) == len(b.events) + 1


@pytest.mark.parametrize(
    "payload_size", [MAX_CHUNK - 1, MAX_CHUNK, MAX_CHUNK + 1, 40 * 1024 * 1024]
)
async def test_sixteen_megabyte_packets(payload_size: int) -> None:
    # payload = status byte + event; the event is a QUERY whose text fills the rest
    b = BinlogBuilder()
    b.fde()
    empty = len(build_event(2, query_body(b""), log_pos=0))
    text = bytes([0x61 + i % 26 for i in range(26)]) * ((payload_size - 1 - empty) // 26 + 1)
    text = text[: payload_size - 1 - empty]
    big = b.add(2, query_body(text))
    assert len(big) + 1 == payload_size
    server = await serve(lambda i: FakePrimary(binlog=b))
    async with server.server, rca.connect(_cfg(server)) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
    query = events[-1]
    assert isinstance(query, QueryEvent)
    assert query.query_bytes == text


async def test_eof_ends_non_blocking_iteration() -> None:
    b = _binlog(0)
    server = await serve(lambda i: FakePrimary(binlog=b))
    async with server.server, rca.connect(_cfg(server)) as stream:  # type: ignore[union-attr]
        assert len(await _collect(stream)) == 3
        assert await _collect(stream) == []


@pytest.mark.parametrize("cut", [4, 5, 6, 7, 8, 9, 11])
async def test_reconnect_mid_transaction_exactly_once(cut: int) -> None:
    """The first connection dies after ``cut`` event packets; nothing is lost or repeated."""
    b = _binlog(4)
    server = await serve(lambda i: FakePrimary(binlog=b), close_after_events={0: cut})
    cfg = _cfg(server, reconnect=rca.ReconnectPolicy(initial_delay=0.01))
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
    real = [e for e in events if not e.artificial and e.log_pos]
    # every real event of the binlog exactly once, in order
    assert [e.log_pos for e in real] == [
        int.from_bytes(ev[13:17], "little") for ev in b.events
    ]
    gtids = [e.gtid for e in events if isinstance(e, GtidEvent)]
    assert gtids == ["0-1-1", "0-1-2", "0-1-3", "0-1-4"]
    assert stream.reconnects == 1
    assert stream.gtid_state == Gtid("0-1-4")
    assert len(server.primaries) == 2
    dump = server.primaries[1].dump
    assert dump is not None
    resumed_at = int.from_bytes(dump[1:5], "little")
    assert resumed_at in (4, *b.starts)


@pytest.mark.parametrize(("first", "second"), [(5, 3), (6, 3), (6, 4), (9, 3), (10, 4)])
async def test_second_cut_while_skipping_exactly_once(first: int, second: int) -> None:
    """The resumed dump dies again while it is still re-sending events the
    consumer already had: the next resume must skip all of them again."""
    b = _binlog(4)
    server = await serve(
        lambda i: FakePrimary(binlog=b), close_after_events={0: first, 1: second}
    )
    cfg = _cfg(server, reconnect=rca.ReconnectPolicy(initial_delay=0.01))
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
    real = [e for e in events if not e.artificial and e.log_pos]
    assert [e.log_pos for e in real] == [
        int.from_bytes(ev[13:17], "little") for ev in b.events
    ]
    assert [e.gtid for e in events if isinstance(e, GtidEvent)] == [
        "0-1-1",
        "0-1-2",
        "0-1-3",
        "0-1-4",
    ]
    assert stream.reconnects == 2


async def test_eof_of_a_blocking_dump_reconnects() -> None:
    """A primary that shuts down ends a blocking dump with an EOF packet: that is
    a lost connection to resume from, not the end of the stream."""
    b = _binlog(3)
    server = await serve(lambda i: FakePrimary(binlog=b, end="eof" if i == 0 else "hold"))
    cfg = _cfg(server, blocking=True, reconnect=rca.ReconnectPolicy(initial_delay=0.01))
    gtids: list[str] = []
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]

        async def consume() -> None:
            async for event in stream:
                if isinstance(event, GtidEvent):
                    gtids.append(event.gtid)

        consumer = asyncio.create_task(consume())
        async with asyncio.timeout(10):
            while stream.reconnects < 1:
                assert not consumer.done(), "the stream ended at the primary's EOF"
                await asyncio.sleep(0.01)
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
        assert stream.gtid_state == Gtid("0-1-3")
    assert gtids == ["0-1-1", "0-1-2", "0-1-3"]


async def test_reconnect_gives_up() -> None:
    b = _binlog(2)
    server = await serve(lambda i: FakePrimary(binlog=b), close_after_events={0: 3})
    cfg = _cfg(server, reconnect=rca.ReconnectPolicy(initial_delay=0.01, max_attempts=2))
    async with server.server:  # type: ignore[union-attr]
        stream = await rca.connect(cfg)
        await stream.__anext__()
    # the server is gone now
    with pytest.raises(ConnectionLostError, match="gave up reconnecting"):
        async for _ in stream:
            pass


async def test_no_reconnect_raises_connection_lost() -> None:
    b = _binlog(2)
    server = await serve(lambda i: FakePrimary(binlog=b), close_after_events={0: 3})
    cfg = _cfg(server, reconnect=rca.ReconnectPolicy(enabled=False))
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        with pytest.raises(ConnectionLostError):
            async for _ in stream:
                pass


async def test_heartbeat_stall_times_out() -> None:
    b = _binlog(1)
    server = await serve(lambda i: FakePrimary(binlog=b, end="hold"))
    cfg = _cfg(
        server, blocking=True, heartbeat_period=0.1, reconnect=rca.ReconnectPolicy(enabled=False)
    )
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        with pytest.raises(ReplicaTimeoutError, match="no data from the primary"):
            async for _ in stream:
                pass


async def test_heartbeat_stall_reconnects() -> None:
    b = _binlog(2)
    server = await serve(lambda i: FakePrimary(binlog=b, end="hold" if i == 0 else "eof"))
    cfg = _cfg(server, heartbeat_period=0.1, reconnect=rca.ReconnectPolicy(initial_delay=0.01))
    # blocking for the first connection (it stalls), the stream then resumes
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
    assert [e.gtid for e in events if isinstance(e, GtidEvent)] == ["0-1-1", "0-1-2"]


async def test_backpressure_pauses_reading() -> None:
    b = _binlog(400)  # 1200 events
    server = await serve(lambda i: FakePrimary(binlog=b), split=False)
    cfg = _cfg(server, max_buffered_events=64)
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        protocol = stream.protocol
        assert protocol is not None
        await asyncio.sleep(0.2)  # a slow consumer: let the primary write ahead
        assert protocol.paused
        assert protocol.buffered_items <= 64
        events = await _collect(stream)
    assert len(events) == len(b.events) + 1
    assert protocol.max_buffered <= 64


async def test_semi_sync_auto_and_manual_acks() -> None:
    b = _binlog(3)
    events = [fake_rotate(b.file), *b.events]
    xids = {i for i, ev in enumerate(events) if ev[4] == 16}
    for mode in ("auto", "manual"):
        primary = FakePrimary(events=events, semi_sync=True, ack_flags=xids, end="hold")
        server = await serve(lambda i, p=primary: p)  # type: ignore[misc]
        cfg = _cfg(server, blocking=True, semi_sync="auto", ack_mode=mode)
        async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
            assert stream.semi_sync
            n = 0
            async for ev in stream:
                if isinstance(ev, XidEvent):
                    n += 1
                    await asyncio.sleep(0.02)
                    if mode == "manual":
                        assert len(primary.acks) == n - 1
                        await stream.ack()
                    await asyncio.sleep(0.02)
                    assert len(primary.acks) == n
                if n == 3:
                    break
            if mode == "auto":
                with pytest.raises(StateError):
                    await stream.ack()
        positions = [int.from_bytes(a[1:9], "little") for a in primary.acks]
        assert positions == [int.from_bytes(events[i][13:17], "little") for i in sorted(xids)]


async def test_semi_sync_receipt_acks_before_the_consumer_takes_events() -> None:
    b = _binlog(3)
    events = [fake_rotate(b.file), *b.events]
    xids = {i for i, ev in enumerate(events) if ev[4] == 16}
    primary = FakePrimary(events=events, semi_sync=True, ack_flags=xids, end="hold")
    server = await serve(lambda i, p=primary: p)  # type: ignore[misc]
    cfg = _cfg(server, blocking=True, semi_sync="auto", ack_mode="receipt")
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        assert stream.semi_sync
        async with asyncio.timeout(5):
            while len(primary.acks) < len(xids):  # nothing taken from the stream yet
                await asyncio.sleep(0.01)
        taken = 0
        async for ev in stream:
            if isinstance(ev, XidEvent):
                taken += 1
                if taken == 3:
                    break
        with pytest.raises(StateError):
            await stream.ack()
    # each flagged event ACKed once, on receipt, not again when handed out
    positions = [int.from_bytes(a[1:9], "little") for a in primary.acks]
    assert positions == [int.from_bytes(events[i][13:17], "little") for i in sorted(xids)]


def _rows_transaction(b: BinlogBuilder, seq: int, table_id: int, table: str, value: int) -> None:
    """GTID, TABLE_MAP of ``app.<table>`` (one INT column), WRITE_ROWS v1 of one row
    holding ``value``, XID: one MariaDB row-based transaction."""
    b.add(162, gtid_body(seq))
    b._in_trx = True
    tid = struct.pack("<Q", table_id)[:6]
    name = table.encode()
    table_map = (
        tid
        + b"\x01\x00"  # flags
        + b"\x03app\x00"
        + bytes([len(name)])
        + name
        + b"\x00"
        + b"\x01\x03"  # one column: INT
        + b"\x00"  # no metadata
        + b"\x01"  # nullable
    )
    b.add(19, table_map)
    # table id | flags (STMT_END_F) | 1 column | columns present | null bits | INT
    b.add(23, tid + b"\x01\x00" + b"\x01" + b"\x01" + b"\x00" + struct.pack("<i", value))
    b._in_trx = False
    b.add(16, struct.pack("<Q", seq))


async def test_table_filter_and_event_types() -> None:
    b = BinlogBuilder()
    b.fde()
    b.gtid_list([(0, 1, 0)])
    _rows_transaction(b, 1, 70, "kept", 1)
    _rows_transaction(b, 2, 71, "other", 2)
    _rows_transaction(b, 3, 70, "kept", 3)
    _rows_transaction(b, 4, 72, "kept_not", 4)  # the pattern is the whole name
    server = await serve(lambda i: FakePrimary(binlog=b))
    cfg = _cfg(server, tables="app.kept", event_types=(XidEvent, TableMapEvent, WriteRowsEvent))
    async with server.server, rca.connect(cfg) as stream:  # type: ignore[union-attr]
        events = await _collect(stream)
    # rows of the table inside the filter arrive; of the tables outside it, never
    # (neither their rows nor their TABLE_MAPs); of the other events, only XIDs
    maps = [e for e in events if isinstance(e, TableMapEvent)]
    rows = [e for e in events if isinstance(e, WriteRowsEvent)]
    assert [(m.schema, m.table) for m in maps] == [("app", "kept"), ("app", "kept")]
    assert [(r.table.table, r.rows) for r in rows] == [("kept", ((1,),)), ("kept", ((3,),))]
    assert [type(e) for e in events] == [
        *(TableMapEvent, WriteRowsEvent, XidEvent),  # 1: app.kept
        XidEvent,  # 2: app.other
        *(TableMapEvent, WriteRowsEvent, XidEvent),  # 3: app.kept
        XidEvent,  # 4: app.kept_not
    ]
    assert stream.gtid_state == Gtid("0-1-4")


async def test_connect_refused_is_connection_lost() -> None:
    server = await serve(lambda i: FakePrimary())
    port = server.port
    server.server.close()  # type: ignore[union-attr]
    await server.server.wait_closed()  # type: ignore[union-attr]
    cfg = rca.ReplicaConfig(user="repl", server_id=4, port=port, connect_timeout=2)
    with pytest.raises(ConnectionLostError, match="cannot connect"):
        await rca.connect(cfg)


def test_config_hides_password() -> None:
    cfg = rca.ReplicaConfig(user="repl", server_id=4, password="hunter2")
    assert "hunter2" not in repr(cfg)
    assert "hunter2" not in repr(cfg.registration_settings())


@pytest.mark.parametrize("mode", ["auto", "manual", "receipt"])
def test_ack_modes_accepted(mode: str) -> None:
    cfg = rca.ReplicaConfig(user="u", server_id=9, ack_mode=mode)  # type: ignore[arg-type]
    assert cfg.ack_mode == mode


def test_unknown_ack_mode_refused() -> None:
    with pytest.raises(ConfigError, match="ack_mode must be 'auto', 'manual' or 'receipt'"):
        rca.ReplicaConfig(user="u", server_id=9, ack_mode="later")  # type: ignore[arg-type]
