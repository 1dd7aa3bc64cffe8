"""The control layer's questions against the three servers, through every runner.

One procedure, three ways of answering it: the project's own client
connection, blocking (``control.blocking.run``: the stream's failover and
history, the Spark driver and its snapshot tasks) and over asyncio
(``aio.sql.drive_sql``: the snapshot reader), and aiomysql
(``aio.control.drive_async``: the command line, the information_schema
provider). All must give the same
answer, and the answer must be the server's: the binlog end moves by exactly
the transaction written, its GTID state names that transaction, and a snapshot
point is where the snapshot's reads stand (a row written after it is not seen
in its transaction, and is after the point).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from replica_client.aio.control import drive_async, open_control
from replica_client.aio.sql import SqlConnection as AsyncSqlConnection
from replica_client.aio.sql import drive_sql
from replica_client.control.blocking import SqlConnection, run
from replica_client.control.primary import (
    BinlogEnd,
    binlog_files,
    current_end,
    primary_state,
    server_facts,
    snapshot_point,
)
from replica_client.control.procedure import Procedure
from replica_client.position import Gtid, MysqlGtidSet
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import config_for, repl_user

pytestmark = pytest.mark.integration

SERVERS = (
    ServerVariant(),
    ServerVariant(flavor="mariadb", version="11.8"),
    ServerVariant(flavor="mysql", version="9.7"),
    ServerVariant.server_defaults("mysql", "9.7"),
)


@pytest.fixture(params=SERVERS, ids=[v.label for v in SERVERS])
def server(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[MariaDBServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS ctl")
    srv.sql("CREATE TABLE IF NOT EXISTS ctl.t (id INT PRIMARY KEY)")
    yield srv


def _root(srv: MariaDBServer) -> SqlConnection:
    """A client connection over the project's own protocol, as the snapshot's (the
    Spark tasks' and the stream's) with the server's own account."""
    return SqlConnection(dataclasses.replace(config_for(srv), user=srv.user, password=srv.password))


def _by_every_runner(srv: MariaDBServer, make: Any) -> list[Any]:
    """``make()``'s procedure answered by the three runners: blocking (the Spark tasks'
    and the binlog scans'), asyncio over aiomysql, asyncio over the project's own
    protocol (the snapshot reader's)."""
    own = run(config_for(srv), make())

    async def by_aiomysql() -> Any:
        conn = await open_control(config_for(srv), use_unicode=False, conv={})
        try:
            return await drive_async(make(), conn)
        finally:
            conn.close()

    async def by_sql() -> Any:
        conn = await AsyncSqlConnection.open(config_for(srv))
        try:
            return await drive_sql(make(), conn)
        finally:
            conn.close()

    return [own, asyncio.run(by_aiomysql()), asyncio.run(by_sql())]


def _exact_end() -> Procedure[BinlogEnd]:
    return current_end(exact=True)


def test_every_runner_gives_the_servers_answers(server: MariaDBServer) -> None:
    srv = server
    facts = _by_every_runner(srv, server_facts)
    assert facts[0] == facts[1] == facts[2]
    assert facts[0].mariadb == (srv.variant.flavor == "mariadb")
    assert facts[0].server_id == int(srv.sql("SELECT @@GLOBAL.server_id")[0][0])
    assert facts[0].binlog_format == str(srv.sql("SELECT @@GLOBAL.binlog_format")[0][0])
    states = _by_every_runner(srv, primary_state)
    assert states[0] == states[1] == states[2] and not states[0].read_only
    files = _by_every_runner(srv, binlog_files)
    assert files[0] == files[1] == files[2]
    assert files[0][-1][0] == srv.binlog_files()[-1].name

    before = _by_every_runner(srv, _exact_end)
    assert before[0] == before[1] == before[2]
    srv.sql("INSERT INTO ctl.t VALUES (%s)", (len(srv.sql("SELECT id FROM ctl.t")) + 1,))
    after = _by_every_runner(srv, _exact_end)
    assert after[0] == after[1] == after[2]
    start, end = before[0], after[0]
    assert start.position is not None and end.position is not None
    assert end.position.order > start.position.order
    # the GTID state at the new end holds exactly one transaction more
    if isinstance(end.gtid, Gtid):
        assert isinstance(start.gtid, Gtid)
        grown = {t.domain: t.seq for t in end.gtid.triples}
        had = {t.domain: t.seq for t in start.gtid.triples}
        assert sum(grown.values()) - sum(had.values()) == 1
        assert end.gtid == Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
    else:
        assert isinstance(end.gtid, MysqlGtidSet)
        executed = str(srv.sql("SELECT @@GLOBAL.gtid_executed")[0][0]).replace("\n", "")
        assert end.gtid == MysqlGtidSet(executed) and end.gtid != start.gtid


def test_a_snapshot_point_is_where_its_reads_stand(server: MariaDBServer) -> None:
    srv = server
    conn = _root(srv)
    config = config_for(srv)
    try:
        facts = run(config, server_facts(), conn=conn)
        point = run(config, snapshot_point(facts), conn=conn)
        seen = int(str(conn.rows("SELECT COUNT(*) FROM ctl.t")[0][0]))
        # written after the point: not in the snapshot's reads, and after the point
        srv.sql("INSERT INTO ctl.t VALUES (%s)", (10_000 + seen,))
        assert int(str(conn.rows("SELECT COUNT(*) FROM ctl.t")[0][0])) == seen
        end = run(config_for(srv), current_end(exact=True))
        # (nothing commits here meanwhile: the read lock never gives way)
        assert point is not None and point.position is not None and end.position is not None
        assert point.position.order < end.position.order
        assert run(config_for(srv), primary_state()).gtid_state == end.gtid
    finally:
        conn.close()
    assert seen == int(srv.sql("SELECT COUNT(*) FROM ctl.t")[0][0]) - 1
