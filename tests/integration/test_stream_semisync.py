"""Semi-sync against the private primary (rpl_semi_sync_master_enabled=ON, 500 ms timeout):
1000 commits while streaming are all acknowledged in time."""

from __future__ import annotations

import asyncio

import pymysql
import pytest

import replica_client as rc
from replica_client.binlog.events import WriteRowsEvent, XidEvent
from replica_client.testing.server import MariaDBServer
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []

COMMITS = 1000


def _status(server: MariaDBServer, name: str) -> int:
    rows = server.sql("SHOW GLOBAL STATUS LIKE %s", (name,))
    return int(rows[0][1])


def _commit_many(server: MariaDBServer, n: int) -> None:
    conn = pymysql.connect(
        host=server.host, port=server.port, user="root", password=server.password, autocommit=True
    )
    try:
        with conn.cursor() as cur:
            for i in range(n):
                cur.execute("INSERT INTO rc_semisync.t (n) VALUES (%s)", (i,))
    finally:
        conn.close()


async def _warm_up(srv: MariaDBServer, stream: rc.BinlogStream, ack_mode: str) -> None:
    """Wait until our replica is connected and the primary's semi-sync status is ON.

    Commits made while no semi-sync replica was connected (set-up, other tests)
    timed out and switched the primary to asynchronous mode; it switches back
    once our ACKs catch up.
    """
    async with asyncio.timeout(10):
        while _status(srv, "Rpl_semi_sync_master_clients") != 1:
            await asyncio.sleep(0.05)
    async with asyncio.timeout(30):
        while srv.sql("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_status'")[0][1] != "ON":
            await asyncio.to_thread(_commit_many, srv, 1)
            async for ev in stream:
                if isinstance(ev, XidEvent):
                    if ack_mode == "manual":
                        await stream.ack()
                    break


@pytest.mark.parametrize("ack_mode", ["auto", "receipt"])
async def test_semi_sync_thousand_commits(mariadb_primary: MariaDBServer, ack_mode: str) -> None:
    srv = mariadb_primary
    repl_user(srv)
    assert srv.sql("SELECT @@GLOBAL.rpl_semi_sync_master_enabled")[0][0] == 1
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_semisync")
    srv.sql("CREATE TABLE IF NOT EXISTS rc_semisync.t (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
    cfg = config_for(srv, start="now", semi_sync="on", ack_mode=ack_mode)
    async with rc.connect(cfg) as stream:
        assert stream.semi_sync
        await _warm_up(srv, stream, ack_mode)
        yes_before = _status(srv, "Rpl_semi_sync_master_yes_tx")
        no_before = _status(srv, "Rpl_semi_sync_master_no_tx")
        writer = asyncio.create_task(asyncio.to_thread(_commit_many, srv, COMMITS))
        xids = 0
        async with asyncio.timeout(120):
            async for ev in stream:
                if isinstance(ev, XidEvent):
                    xids += 1
                    if xids == COMMITS:
                        break
        await writer
        assert _status(srv, "Rpl_semi_sync_master_clients") == 1
        stats = srv.sql("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%'")
        assert _status(srv, "Rpl_semi_sync_master_yes_tx") - yes_before == COMMITS, stats
        assert _status(srv, "Rpl_semi_sync_master_no_tx") - no_before == 0


async def _consume(stream: rc.BinlogStream, style: str, ack_mode: str, n: int) -> int:
    """Read the next ``n`` inserts and stop right after the last one, asking for nothing more."""
    seen = 0
    if style == "changes":
        async for change in stream.changes():
            if change.table == "t":
                seen += 1
                if ack_mode == "manual":
                    await stream.ack()
                if seen == n:
                    break
    else:
        async for event in stream:
            if isinstance(event, WriteRowsEvent) and event.table.table == "t":
                seen += len(event.rows)
                if ack_mode == "manual":
                    await stream.ack()
                if seen == n:
                    break
    return seen


@pytest.mark.parametrize("style", ["events", "changes"])
@pytest.mark.parametrize("ack_mode", ["auto", "receipt", "manual"])
async def test_every_commit_acked_when_the_consumer_stops_after_the_last_change(
    mariadb_primary: MariaDBServer, ack_mode: str, style: str
) -> None:
    # The consumer never asks for the event after the last row: the end of each
    # transaction must still be ACKed as soon as it arrives (auto, receipt), or
    # when the consumer calls ack() after the rows (manual).
    srv = mariadb_primary
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_semisync")
    srv.sql("CREATE TABLE IF NOT EXISTS rc_semisync.t (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
    cfg = config_for(srv, start="now", semi_sync="on", ack_mode=ack_mode)
    async with rc.connect(cfg) as stream:
        assert stream.semi_sync
        await _warm_up(srv, stream, ack_mode)
        yes_before = _status(srv, "Rpl_semi_sync_master_yes_tx")
        no_before = _status(srv, "Rpl_semi_sync_master_no_tx")
        writer = asyncio.create_task(asyncio.to_thread(_commit_many, srv, COMMITS))
        async with asyncio.timeout(120):
            assert await _consume(stream, style, ack_mode, COMMITS) == COMMITS
            await writer
        stats = srv.sql("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%'")
        assert _status(srv, "Rpl_semi_sync_master_yes_tx") - yes_before == COMMITS, stats
        assert _status(srv, "Rpl_semi_sync_master_no_tx") - no_before == 0, stats
