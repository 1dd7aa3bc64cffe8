"""The primary misbehaves under a live stream: SIGTERM and SIGKILL restarts,
binlog rotation in a loop and a tiny max_binlog_size, logs purged past the
client's position, and a second replica with the same server_id.

Restart and rotation: the stream delivers every transaction of the primary's
binlog exactly once, in order (compared with a clean read afterwards and with
what the writer saw committed).
"""

from __future__ import annotations

import asyncio
import threading

import pytest

import replica_client as rc
from replica_client.binlog.events import GtidEvent
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer
from tests.faults._workload import (
    Delivery,
    Writer,
    binlog_pos,
    consume,
    master_status,
    prepare_table,
)
from tests.faults.proxy import FaultProxy
from tests.integration._stream_support import DISRUPTIVE, config_for, repl_user

__all__: list[str] = []

_RECONNECT = rc.ReconnectPolicy(initial_delay=0.05, max_delay=0.5, max_attempts=120)


async def _clean_read(
    server: MariaDBServer, start: rc.FilePos
) -> list[tuple[str, tuple[int, ...]]]:
    delivery = Delivery()
    async with rc.connect(config_for(server, start=start, blocking=False)) as stream:
        async for event in stream:
            delivery.feed(event, "t")
    return delivery.with_rows()


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
async def test_primary_restart_mid_stream(
    mariadb_primary_factory: PrimaryFactory, kill: bool
) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    prepare_table(srv, "rc_restart")
    start = master_status(srv)
    writer = Writer(
        srv, "rc_restart", 1_000_000, seed=3, survive=True, max_rows_per_txn=8, pause=0.002
    )
    delivery = Delivery()
    final: asyncio.Future[rc.Gtid] = asyncio.get_running_loop().create_future()
    cfg = config_for(srv, start=start, heartbeat_period=0.5, reconnect=_RECONNECT)
    try:
        async with rc.connect(cfg) as stream:
            consumer = asyncio.create_task(consume(stream, delivery, "t", final))
            writing = asyncio.create_task(asyncio.to_thread(writer.run))
            for _ in range(2):
                await asyncio.sleep(1.5)
                before = len(delivery.transactions)
                await asyncio.to_thread(srv.restart, kill)
                await asyncio.sleep(1.5)
                if consumer.done():
                    consumer.result()  # the stream failed: raise its error
                assert len(delivery.transactions) > before, "the stream did not resume"
            writer.stop.set()
            await writing
            final.set_result(binlog_pos(srv))
            async with asyncio.timeout(60):
                await consumer
            assert stream.reconnects >= 2
    finally:
        writer.stop.set()
    delivered = delivery.with_rows()
    expected = await _clean_read(srv, start)
    assert delivered == expected
    assert len({g for g, _ in delivered}) == len(delivered)
    # every transaction the writer saw committed is there (a SIGKILL may lose
    # the ones whose COMMIT never returned; those are not in `committed`)
    assert set(writer.committed) <= set(delivered)
    assert len(writer.committed) > 100


async def test_rotation_loop_and_tiny_binlogs(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    prepare_table(srv, "rc_rotate")
    old_size = int(srv.sql("SELECT @@GLOBAL.max_binlog_size")[0][0])
    first = master_status(srv)
    srv.sql("SET GLOBAL max_binlog_size = 4096")  # the smallest the server allows
    stop = threading.Event()
    flushes = [0]

    def flush_loop() -> None:
        while not stop.wait(0.02):
            srv.sql("FLUSH BINARY LOGS")
            flushes[0] += 1

    writer = Writer(srv, "rc_rotate", 6000, seed=5)
    delivery = Delivery()
    final: asyncio.Future[rc.Gtid] = asyncio.get_running_loop().create_future()
    rotations = 0
    try:
        async with rc.connect(config_for(srv, start=first, reconnect=_RECONNECT)) as stream:
            consumer = asyncio.create_task(consume(stream, delivery, "t", final))
            flusher = asyncio.create_task(asyncio.to_thread(flush_loop))
            await asyncio.to_thread(writer.run)
            while flushes[0] <= 20:  # however fast the writer was: rotate on
                await asyncio.sleep(0.02)
            stop.set()
            await flusher
            final.set_result(binlog_pos(srv))
            async with asyncio.timeout(60):
                await consumer
    finally:
        stop.set()
        srv.sql(f"SET GLOBAL max_binlog_size = {old_size}")
    files = {str(r[0]) for r in srv.sql("SHOW BINARY LOGS")}
    rotations = len(files)
    assert flushes[0] > 20
    assert rotations > 50
    assert delivery.with_rows() == writer.committed


async def test_purged_past_position_on_reconnect(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    prepare_table(srv, "rc_purge")
    start = master_status(srv)
    srv.sql("INSERT INTO rc_purge.t VALUES (1, 1, 'a')")
    async with FaultProxy(srv.port) as proxy:
        cfg = config_for(srv, port=proxy.port, start=start, reconnect=_RECONNECT)
        async with rc.connect(cfg) as stream:
            async for event in stream:
                if isinstance(event, GtidEvent):
                    break
            proxy.pause()
            proxy.cut_all()
            proxy.resume()
            position = stream.position
            assert position is not None
            # flush until the file the stream must resume from is purged for real
            async with asyncio.timeout(30):
                while position.file in {str(r[0]) for r in srv.sql("SHOW BINARY LOGS")}:
                    srv.sql("FLUSH BINARY LOGS")
                    srv.sql(f"PURGE BINARY LOGS TO '{master_status(srv).file}'")
                    await asyncio.sleep(0.1)
            with pytest.raises(rc.BinlogPositionError) as info:
                async with asyncio.timeout(30):
                    async for _ in stream:
                        pass
    err = info.value
    assert err.errno == 1236
    text = str(err)
    assert "start='earliest'" in text and "re-snapshot" in text
    # where the consumer stands (events received before the cut were still delivered)
    assert stream.position is not None and stream.position.file == position.file


async def test_server_id_taken_by_another_replica(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    first = await rc.connect(config_for(srv, start="now", server_id=4242, reconnect=_RECONNECT))
    try:
        second = await rc.connect(
            config_for(srv, start="now", server_id=4242, reconnect=_RECONNECT)
        )
        try:
            with pytest.raises(rc.ServerIdConflictError) as info:
                async with asyncio.timeout(30):
                    async for _ in first:
                        pass
            assert "server_id" in str(info.value)
            assert "unique" in str(info.value)
            assert first.reconnects == 0  # reported, not reconnect-looped
            assert [int(r[0]) for r in srv.sql("SHOW SLAVE HOSTS")].count(4242) == 1
        finally:
            await second.aclose()
    finally:
        await first.aclose()
