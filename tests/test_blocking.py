"""The blocking driver: the same session over a plain socket, against a real primary
(and the scripted fake one where a primary cannot be made to send bad bytes)."""

from __future__ import annotations

import socket
import threading

import pytest

import replica_client as rc
from replica_client.binlog.decoder import EventDecoder
from replica_client.binlog.events import RawRowsEvent, WriteRowsEvent, XidEvent
from replica_client.blocking import BlockingReplica
from replica_client.config import DecoderOptions
from replica_client.errors import MalformedEventError
from replica_client.session import ReplicaSession, StreamItem
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from replica_client.tls import client_ssl_context
from replica_client.wire.registration import RegistrationSettings
from tests.fake_primary import BinlogBuilder, FakePrimary, build_event, fake_rotate
from tests.integration._stream_support import (
    REPL_PASSWORD,
    REPL_USER,
    config_for,
    next_server_id,
    repl_user,
)


def _settings(start: rc.FilePos, *, tls: bool = False) -> RegistrationSettings:
    return RegistrationSettings(
        user=REPL_USER,
        password=REPL_PASSWORD.encode(),
        server_id=next_server_id(),
        start=start,
        blocking=False,
        heartbeat_period=0.0,
        tls=tls,
    )


def _write(srv: MariaDBServer) -> rc.FilePos:
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_blocking")
    srv.sql("CREATE TABLE IF NOT EXISTS rc_blocking.t (id INT PRIMARY KEY, v VARCHAR(20))")
    srv.sql("DELETE FROM rc_blocking.t")
    row = srv.sql("SHOW MASTER STATUS")[0]
    start = rc.FilePos(str(row[0]), int(row[1]))
    for i in range(5):
        srv.sql("INSERT INTO rc_blocking.t VALUES (%s, %s)", (i, f"v{i}"))
    return start


async def test_the_same_items_as_the_asyncio_stream(mariadb_primary: MariaDBServer) -> None:
    srv = mariadb_primary
    start = _write(srv)
    with BlockingReplica(ReplicaSession(_settings(start)), srv.host, srv.port) as replica:
        items = list(replica.items())
    events = [i.event for i in items if i.for_consumer]
    async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
        expected = [e async for e in stream]
    assert events == expected
    assert [e.rows for e in events if isinstance(e, WriteRowsEvent)] == [
        ((i, f"v{i}"),) for i in range(5)
    ]
    checkpoints = [i.checkpoint for i in items if isinstance(i.event, XidEvent)]
    assert all(cp is not None for cp in checkpoints) and len(checkpoints) == 5
    assert stream.position == checkpoints[-1].position  # type: ignore[union-attr]


def test_raw_events_and_undecoded_rows(mariadb_primary: MariaDBServer) -> None:
    srv = mariadb_primary
    start = _write(srv)
    session = ReplicaSession(
        _settings(start), decoder_options=DecoderOptions(decode_rows=False), keep_raw=True
    )
    with BlockingReplica(session, srv.host, srv.port) as replica:
        items = list(replica.items())
    raw_rows = [i for i in items if isinstance(i.event, RawRowsEvent)]
    assert len(raw_rows) == 5
    # the kept bytes decode to the rows the asyncio path gives
    decoder = EventDecoder()
    rows = []
    for item in items:
        assert item.raw is not None and len(item.raw) == item.size
        event = decoder.decode(item.raw, item.start)
        if isinstance(event, WriteRowsEvent):
            rows.append(event.rows)
    assert rows == [((i, f"v{i}"),) for i in range(5)]


def test_tls_on_request(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(ServerVariant(tls=True))
    start = _write(srv)
    for host in ("%", "localhost"):
        srv.sql(f"ALTER USER '{REPL_USER}'@'{host}' REQUIRE SSL")
    try:
        ctx = client_ssl_context("verify_identity", str(srv.ca_cert))
        session = ReplicaSession(_settings(start, tls=True))
        with BlockingReplica(session, srv.host, srv.port, ssl_context=ctx) as replica:
            events = [i.event for i in replica.items() if i.for_consumer]
        assert sum(isinstance(e, WriteRowsEvent) for e in events) == 5
        with pytest.raises(rc.AuthenticationError):
            plain = ReplicaSession(_settings(start))
            list(BlockingReplica(plain, srv.host, srv.port).items())
    finally:
        for host in ("%", "localhost"):
            srv.sql(f"ALTER USER '{REPL_USER}'@'{host}' REQUIRE NONE")


def test_unreachable_primary_is_a_lost_connection() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    session = ReplicaSession(_settings(rc.FilePos("mysql-bin.000001", 4)))
    with pytest.raises(rc.ConnectionLostError, match="cannot connect"):
        list(BlockingReplica(session, "127.0.0.1", port, connect_timeout=2).items())


def _serve_once(primary: FakePrimary) -> int:
    """A blocking TCP server for one connection to ``primary``; its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            conn.sendall(primary.greeting())
            while data := conn.recv(65536):
                out = primary.receive(data)
                if out:
                    conn.sendall(out)

    threading.Thread(target=run, daemon=True).start()
    return int(listener.getsockname()[1])


def test_events_before_a_bad_one_are_yielded_before_its_error() -> None:
    # Events arrive in one read and are decoded ahead, a batch at a time: the
    # good ones of the batch that holds the bad one still reach the consumer.
    b = BinlogBuilder()
    b.fde()
    b.gtid_list([(0, 1, 4)])
    for seq in range(5, 9):
        b.transaction(seq)
    bad = build_event(16, b"\x01", log_pos=b.pos + 24)  # an XID without its 8-byte id
    events = [fake_rotate("mysql-bin.000001"), *b.events, bad]
    port = _serve_once(FakePrimary(events=events))
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, blocking=False)
    got: list[StreamItem] = []
    replica = BlockingReplica(ReplicaSession(settings), "127.0.0.1", port)
    with replica, pytest.raises(MalformedEventError) as info:
        for item in replica.items():
            got.append(item)
    assert info.value.event_type == 16
    assert len(got) == len(events) - 1
    last = got[-1]
    assert isinstance(last.event, XidEvent) and last.checkpoint is not None
    assert last.checkpoint.gtid_state == rc.Gtid("0-1-8")
