"""Reconnect during a workload: the dump thread is KILLed and the primary is
restarted (SIGKILL); the transactions delivered equal those committed, each once."""

from __future__ import annotations

import asyncio
import threading
import time

import pymysql

import replica_client as rc
from replica_client.binlog.events import GtidEvent
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer
from tests.integration._stream_support import DISRUPTIVE, config_for, repl_user

__all__: list[str] = []


def _writer(server: MariaDBServer, stop: threading.Event, committed: list[int]) -> None:
    """Insert until stopped; survive the primary going away."""
    i = 0
    conn: pymysql.connections.Connection | None = None
    while not stop.is_set():
        try:
            if conn is None:
                conn = pymysql.connect(
                    host=server.host,
                    port=server.port,
                    user="root",
                    password=server.password,
                    autocommit=True,
                    connect_timeout=2,
                )
            with conn.cursor() as cur:
                cur.execute("INSERT INTO rc_resume.t (n) VALUES (%s)", (i,))
            committed.append(i)
            i += 1
            time.sleep(0.005)
        except pymysql.err.Error:
            conn = None
            time.sleep(0.2)
    if conn is not None:
        conn.close()


def _kill_dump_threads(server: MariaDBServer) -> int:
    killed = 0
    for row in server.sql("SHOW PROCESSLIST"):
        if row[4] == "Binlog Dump":
            server.sql(f"KILL {int(row[0])}")
            killed += 1
    return killed


async def _read_all(server: MariaDBServer, start: rc.FilePos) -> list[str]:
    cfg = config_for(server, start=start, blocking=False)
    async with rc.connect(cfg) as stream:
        return [ev.gtid async for ev in stream if isinstance(ev, GtidEvent)]


async def test_kill_and_restart_exactly_once(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_resume")
    srv.sql("CREATE TABLE IF NOT EXISTS rc_resume.t (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
    row = srv.sql("SHOW MASTER STATUS")[0]
    start = rc.FilePos(str(row[0]), int(row[1]))
    cfg = config_for(
        srv,
        start=start,
        heartbeat_period=0.5,
        reconnect=rc.ReconnectPolicy(initial_delay=0.05, max_delay=1.0, max_attempts=60),
    )
    delivered: list[str] = []
    stop = threading.Event()
    committed: list[int] = []
    async with rc.connect(cfg) as stream:
        writer = asyncio.create_task(asyncio.to_thread(_writer, srv, stop, committed))

        async def consume(until: float) -> None:
            async with asyncio.timeout(until):
                async for ev in stream:
                    if isinstance(ev, GtidEvent):
                        delivered.append(ev.gtid)
                    # heartbeats (every 0.5 s) wake us up once the writer is done
                    if final_state[0] is not None and stream.gtid_state == final_state[0]:
                        return

        final_state: list[rc.Gtid | None] = [None]
        consumer = asyncio.create_task(consume(120))
        await asyncio.sleep(1.0)
        assert await asyncio.to_thread(_kill_dump_threads, srv) >= 1
        await asyncio.sleep(1.0)
        await asyncio.to_thread(srv.restart, True)
        await asyncio.sleep(1.5)
        assert await asyncio.to_thread(_kill_dump_threads, srv) >= 1
        await asyncio.sleep(1.0)
        stop.set()
        await writer
        final_state[0] = rc.Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
        await consumer
        assert stream.reconnects >= 3
    expected = await _read_all(srv, start)
    assert len(committed) > 50
    assert delivered == expected
    assert len(set(delivered)) == len(delivered)
    # every acknowledged INSERT is in the binlog the stream delivered
    assert len(expected) >= len(committed)
