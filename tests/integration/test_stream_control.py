"""The aiomysql control helpers, and the schema provider on a primary that
writes MINIMAL row metadata (no column names in the binlog)."""

from __future__ import annotations

import ipaddress
import uuid

import replica_client as rc
from replica_client.aio import control
from replica_client.binlog.events import WriteRowsEvent
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []


async def test_server_info_and_positions(mariadb_primary: MariaDBServer) -> None:
    srv = mariadb_primary
    repl_user(srv)
    conn = await control.open_control(config_for(srv))
    try:
        info = await control.server_info(conn)
        assert info.is_mariadb
        assert info.server_id == srv.server_id
        assert info.binlog_format == "ROW"
        assert info.semi_sync_enabled
        filepos, gtid = await control.current_position(conn)
        row = srv.sql("SHOW MASTER STATUS")[0]
        assert filepos == rc.FilePos(str(row[0]), int(row[1]))
        assert gtid == rc.Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
        files = await control.binlog_files(conn)
        assert files[-1][0] == str(row[0])
    finally:
        conn.close()


async def test_control_wrong_password(mariadb_primary: MariaDBServer) -> None:
    try:
        await control.open_control(config_for(mariadb_primary, password="nope"))
    except rc.AuthenticationError as exc:
        assert exc.errno == 1045
    else:
        raise AssertionError("login with a wrong password succeeded")


async def test_schema_provider_names_minimal_metadata(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(ServerVariant(row_metadata="MINIMAL"))
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_names")
    srv.sql("CREATE TABLE IF NOT EXISTS rc_names.p (id INT PRIMARY KEY, label VARCHAR(10))")
    row = srv.sql("SHOW MASTER STATUS")[0]
    start = rc.FilePos(str(row[0]), int(row[1]))
    srv.sql("REPLACE INTO rc_names.p VALUES (1, 'one')")
    provider = control.InformationSchemaProvider(config_for(srv))
    try:
        # without a schema history or a provider: positional names only
        off = config_for(srv, start=start, blocking=False, schema_history="off")
        async with rc.connect(off) as stream:
            plain = [e async for e in stream if isinstance(e, WriteRowsEvent)]
        assert plain[0].table.column_names == ("@1", "@2")
        cfg = config_for(
            srv, start=start, blocking=False, schema_provider=provider, schema_history="off"
        )
        async with rc.connect(cfg) as stream:
            changes = [c async for c in stream.changes()]
        assert changes[0].after == {"id": 1, "label": "one"}
        # the schema history (the default) names them too, with no provider
        async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
            history = [c async for c in stream.changes()]
        assert history[0].after == {"id": 1, "label": "one"}
    finally:
        await provider.aclose()


# MariaDB's UUID, INET4 and INET6 are BINARY(16)/BINARY(4) in the binlog: bytes
# without a provider, typed values equal to SELECT's with one. Values with trailing
# zero bytes (which the binlog strips) included.
_TYPED_ROWS = (
    (1, "123e4567-e89b-12d3-a456-426655440000", "1.2.3.4", "::1"),
    (2, "f47ac10b-58cc-4372-a567-0e02b2c3d479", "255.0.0.1", "2001:db8::ff00:42:8329"),
    (3, "00000000-0000-0000-0000-000000000000", "0.0.0.0", "::ffff:1.2.3.4"),
    (4, "6ccd780c-baba-1026-9564-5b8c656024db", None, "::"),
)


async def test_schema_provider_types_uuid_and_inet(mariadb_primary: MariaDBServer) -> None:
    srv = mariadb_primary
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_types")
    srv.sql("DROP TABLE IF EXISTS rc_types.u")
    srv.sql(
        "CREATE TABLE rc_types.u (id INT PRIMARY KEY, u UUID, a INET4, b INET6, raw BINARY(16))"
    )
    row = srv.sql("SHOW MASTER STATUS")[0]
    start = rc.FilePos(str(row[0]), int(row[1]))
    for values in _TYPED_ROWS:
        srv.sql("INSERT INTO rc_types.u VALUES (%s, %s, %s, %s, UNHEX('0102'))", values)
    selected = {
        r[0]: r[1:]
        for r in srv.sql(
            "SELECT id, CAST(u AS CHAR), CAST(a AS CHAR), CAST(b AS CHAR), HEX(u), HEX(a), HEX(b),"
            " HEX(raw) FROM rc_types.u"
        )
    }
    provider = control.InformationSchemaProvider(config_for(srv))
    try:
        off = config_for(srv, start=start, blocking=False, schema_history="off")
        async with rc.connect(off) as stream:
            plain = [c.after async for c in stream.changes() if c.table == "u"]
        cfg = config_for(
            srv, start=start, blocking=False, schema_provider=provider, schema_history="off"
        )
        async with rc.connect(cfg) as stream:
            typed = [c.after async for c in stream.changes() if c.table == "u"]
    finally:
        await provider.aclose()
    # the schema history (the default) types them as the provider does
    async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
        history = [c.after async for c in stream.changes() if c.table == "u"]
    assert history == typed
    assert len(plain) == len(typed) == len(_TYPED_ROWS)
    for untyped, value in zip(plain, typed, strict=True):
        assert untyped is not None and value is not None
        text_u, text_a, text_b, hex_u, hex_a, hex_b, hex_raw = selected[value["id"]]
        # without a provider: the bytes SELECT HEX() shows
        assert untyped["u"] == bytes.fromhex(hex_u)
        assert untyped["a"] == (None if hex_a is None else bytes.fromhex(hex_a))
        assert untyped["b"] == bytes.fromhex(hex_b)
        # with one: the values SELECT shows as text
        assert value["u"] == uuid.UUID(text_u)
        assert value["a"] == (None if text_a is None else ipaddress.IPv4Address(text_a))
        assert value["b"] == ipaddress.IPv6Address(text_b)
        # a plain BINARY(16) stays bytes either way
        assert value["raw"] == untyped["raw"] == bytes.fromhex(hex_raw)
