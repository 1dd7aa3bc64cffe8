"""Live streams from the private MariaDB primary: start positions, blocking and
non-blocking dumps, changes, auth plugins, TLS and typed errors."""

from __future__ import annotations

import asyncio
import secrets

import pytest

import replica_client as rc
from replica_client.binlog.events import (
    Event,
    GtidEvent,
    QueryEvent,
    RotateEvent,
    WriteRowsEvent,
    XidEvent,
)
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from replica_client.wire.constants import OK_MARKER
from replica_client.wire.registration import RegistrationMachine
from tests.integration._stream_support import DISRUPTIVE, config_for, repl_user

__all__: list[str] = []


@pytest.fixture(scope="module")
def primary(mariadb_primary: MariaDBServer) -> MariaDBServer:
    repl_user(mariadb_primary)
    mariadb_primary.sql("CREATE DATABASE IF NOT EXISTS rc_stream")
    mariadb_primary.sql(
        "CREATE TABLE IF NOT EXISTS rc_stream.items "
        "(id INT PRIMARY KEY AUTO_INCREMENT, tag VARCHAR(40), n INT)"
    )
    return mariadb_primary


def _master_status(server: MariaDBServer) -> rc.FilePos:
    row = server.sql("SHOW MASTER STATUS")[0]
    return rc.FilePos(str(row[0]), int(row[1]))


def _gtid_pos(server: MariaDBServer) -> rc.Gtid:
    return rc.Gtid(str(server.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0] or ""))


def _insert(server: MariaDBServer, tag: str, count: int) -> None:
    for i in range(count):
        server.sql("INSERT INTO rc_stream.items (tag, n) VALUES (%s, %s)", (tag, i))


def _tags(events: list[Event]) -> list[tuple[str, int]]:
    out = []
    for ev in events:
        if isinstance(ev, WriteRowsEvent) and ev.table.table == "items":
            out += [(row[1], row[2]) for row in ev.rows]
    return out


async def _collect(cfg: rc.ReplicaConfig) -> tuple[list[Event], rc.BinlogStream]:
    async with rc.connect(cfg) as stream:
        events = [ev async for ev in stream]
    return events, stream


async def test_earliest_non_blocking_ends_at_eof(primary: MariaDBServer) -> None:
    tag = secrets.token_hex(4)
    _insert(primary, tag, 3)
    end = _master_status(primary)
    events, stream = await _collect(config_for(primary, start="earliest", blocking=False))
    assert isinstance(events[0], RotateEvent) and events[0].artificial
    assert _tags(events)[-3:] == [(tag, 0), (tag, 1), (tag, 2)]
    assert stream.position == end
    assert stream.gtid_state == _gtid_pos(primary)


async def test_from_file_position(primary: MariaDBServer) -> None:
    start = _master_status(primary)
    tag = secrets.token_hex(4)
    _insert(primary, tag, 2)
    events, stream = await _collect(config_for(primary, start=start, blocking=False))
    assert _tags(events) == [(tag, 0), (tag, 1)]
    assert sum(isinstance(e, XidEvent) for e in events) == 2
    assert stream.position == _master_status(primary)


async def test_from_gtid_state(primary: MariaDBServer) -> None:
    state = _gtid_pos(primary)
    tag = secrets.token_hex(4)
    _insert(primary, tag, 2)
    events, stream = await _collect(config_for(primary, start=state, blocking=False))
    gtids = [e.gtid for e in events if isinstance(e, GtidEvent)]
    assert len(gtids) == 2
    assert _tags(events) == [(tag, 0), (tag, 1)]
    assert stream.gtid_state == _gtid_pos(primary)
    assert stream.position == _master_status(primary)


async def test_now_blocking_delivers_live_commits(primary: MariaDBServer) -> None:
    _insert(primary, "before", 1)
    tag = secrets.token_hex(4)
    async with rc.connect(config_for(primary, start="now")) as stream:
        writer = asyncio.create_task(asyncio.to_thread(_insert, primary, tag, 3))
        got: list[tuple[str, int]] = []
        async with asyncio.timeout(20):
            async for ev in stream:
                got += _tags([ev])
                if len(got) == 3 and isinstance(ev, XidEvent):
                    break
        await writer
    assert got == [(tag, 0), (tag, 1), (tag, 2)]
    assert stream.gtid_state == _gtid_pos(primary)


async def test_changes(primary: MariaDBServer) -> None:
    start = _master_status(primary)
    tag = secrets.token_hex(4)
    _insert(primary, tag, 1)
    primary.sql("UPDATE rc_stream.items SET n = 99 WHERE tag = %s", (tag,))
    primary.sql("DELETE FROM rc_stream.items WHERE tag = %s", (tag,))
    async with rc.connect(config_for(primary, start=start, blocking=False)) as stream:
        changes = [c async for c in stream.changes()]
    assert [c.op for c in changes] == ["insert", "update", "delete"]
    assert changes[0].after is not None and changes[0].after["tag"] == tag
    assert changes[1].after is not None and changes[1].after["n"] == 99
    assert changes[2].before is not None and changes[2].before["n"] == 99
    assert all(c.gtid for c in changes)
    assert changes[0].position is not None and changes[0].position.file == start.file


#: The account's (server) plugin -> the client plugin that must authenticate it.
_CLIENT_PLUGIN = {"mysql_native_password": "mysql_native_password", "ed25519": "client_ed25519"}


def _authenticated_with(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The client plugin of every login that the server accepted from here on: the
    plugin the registration machine ran when the server's OK ended authentication."""
    used: list[str] = []
    on_auth_packet = RegistrationMachine._on_auth_packet

    def spy(self: RegistrationMachine, payload: bytes) -> None:
        if payload[:1] == bytes((OK_MARKER,)) and self._auth is not None:
            used.append(self._auth.name)
        on_auth_packet(self, payload)

    monkeypatch.setattr(RegistrationMachine, "_on_auth_packet", spy)
    return used


@pytest.mark.parametrize("plugin", ["mysql_native_password", "ed25519"])
async def test_auth_plugins_stream(
    primary: MariaDBServer, plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "rc_" + plugin[:6]
    primary.create_user(name, "pw-" + plugin, plugin=plugin)
    accounts = primary.sql("SELECT DISTINCT plugin FROM mysql.user WHERE user = %s", (name,))
    assert [str(row[0]) for row in accounts] == [plugin]
    used = _authenticated_with(monkeypatch)
    cfg = config_for(primary, user=name, password="pw-" + plugin, start="now", blocking=False)
    events, _ = await _collect(cfg)
    assert isinstance(events[0], RotateEvent)
    # the server greets with mysql_native_password: an ed25519 account switches;
    # two logins: the SQL connection that reads the tables' definitions, the replica's
    assert used == [_CLIENT_PLUGIN[plugin]] * 2


async def test_wrong_password(primary: MariaDBServer) -> None:
    with pytest.raises(rc.AuthenticationError) as info:
        await rc.connect(config_for(primary, password="not-the-password"))
    assert info.value.errno == 1045
    assert "not-the-password" not in str(info.value)


async def test_unknown_file_position(primary: MariaDBServer) -> None:
    cfg = config_for(primary, start=rc.FilePos("mysql-bin.999999", 4), blocking=False)
    with pytest.raises(rc.BinlogPositionError) as info:
        await _collect(cfg)
    assert info.value.errno == 1236
    assert "start='earliest'" in str(info.value)


async def test_unknown_gtid(primary: MariaDBServer) -> None:
    cfg = config_for(
        primary, start=rc.Gtid("0-77-999999999"), blocking=False, gtid_strict_mode=True
    )
    with pytest.raises(rc.BinlogPositionError) as info:
        await _collect(cfg)
    assert info.value.errno == 1236


async def test_primary_server_id_refused(primary: MariaDBServer) -> None:
    with pytest.raises(rc.ConfigError, match="primary's own server_id"):
        await rc.connect(config_for(primary, server_id=primary.server_id))


async def test_purged_position(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    first = _master_status(srv)
    # the primary keeps files its crash recovery still needs (binlog checkpoint),
    # so flush and purge until the first file is really gone
    async with asyncio.timeout(30):
        while first.file in [str(r[0]) for r in srv.sql("SHOW BINARY LOGS")]:
            srv.sql("FLUSH BINARY LOGS")
            current = _master_status(srv)
            srv.sql(f"PURGE BINARY LOGS TO '{current.file}'")
            await asyncio.sleep(0.2)
    with pytest.raises(rc.BinlogPositionError):
        await _collect(config_for(srv, start=rc.FilePos(first.file, 4), blocking=False))


async def test_tls_stream(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(ServerVariant(tls=True))
    repl_user(srv)
    srv.sql("ALTER USER 'rc_repl'@'%' REQUIRE SSL")
    assert srv.ca_cert is not None
    cfg = config_for(srv, start="now", blocking=False, tls="verify_ca", tls_ca=str(srv.ca_cert))
    events, _ = await _collect(cfg)
    assert isinstance(events[0], RotateEvent)
    # the account REQUIRES SSL, so the stream above ran over TLS; without TLS it is refused
    with pytest.raises(rc.AuthenticationError):
        await rc.connect(config_for(srv, start="now", blocking=False))


async def test_annotate_rows_flag(primary: MariaDBServer) -> None:
    start = _master_status(primary)
    _insert(primary, "annotated", 1)
    events, _ = await _collect(config_for(primary, start=start, blocking=False))
    assert any(type(e).__name__ == "AnnotateRowsEvent" for e in events)
    events, _ = await _collect(
        config_for(primary, start=start, blocking=False, annotate_rows=False)
    )
    assert not any(type(e).__name__ == "AnnotateRowsEvent" for e in events)
    assert any(isinstance(e, QueryEvent | GtidEvent) for e in events)


async def test_unix_socket(primary: MariaDBServer) -> None:
    cfg = config_for(primary, unix_socket=primary.socket, start="now", blocking=False)
    events, stream = await _collect(cfg)
    assert isinstance(events[0], RotateEvent)
    assert stream.config.address == primary.socket
