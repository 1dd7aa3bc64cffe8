"""The aiomysql control connection, and the schema provider on a primary that
writes MINIMAL row metadata (no column names in the binlog)."""

from __future__ import annotations

import replica_client as rc
from replica_client import control
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
        # without the provider: positional names only
        async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
            plain = [e async for e in stream if isinstance(e, WriteRowsEvent)]
        assert plain[0].table.column_names == ("@1", "@2")
        cfg = config_for(srv, start=start, blocking=False, schema_provider=provider)
        async with rc.connect(cfg) as stream:
            changes = [c async for c in stream.changes()]
        assert changes[0].after == {"id": 1, "label": "one"}
    finally:
        await provider.aclose()
