"""A consumer much slower than the primary for a while: the stream's memory stays
flat (reading pauses at max_buffered_events, TCP pushes back on the primary's
dump thread) and the primary's other clients keep committing quickly.

CI: 20 s. ``REPLICA_CLIENT_SOAK=full``: 5 minutes.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import tracemalloc

import pymysql

import replica_client as rc
from replica_client.testing.server import MariaDBServer
from tests.faults._workload import master_status
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []

SECONDS = 300.0 if os.environ.get("REPLICA_CLIENT_SOAK") == "full" else 20.0


def _other_client(server: MariaDBServer, stop: threading.Event, latencies: list[float]) -> None:
    conn = pymysql.connect(
        host=server.host,
        port=server.port,
        user="root",
        password=server.password,
        autocommit=True,
    )
    i = 0
    with conn.cursor() as cur:
        while not stop.is_set():
            pad = "y" * 200
            began = time.monotonic()
            values = ",".join(f"({i * 20 + k},{i},'{pad}')" for k in range(20))
            cur.execute(f"INSERT INTO rc_slow.t (id, txn, pad) VALUES {values}")
            latencies.append(time.monotonic() - began)
            i += 1
    conn.close()


async def test_slow_consumer_memory_flat_and_primary_unaffected(
    mariadb_primary: MariaDBServer,
) -> None:
    srv = mariadb_primary
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_slow")
    srv.sql("DROP TABLE IF EXISTS rc_slow.t")
    srv.sql("CREATE TABLE rc_slow.t (id INT PRIMARY KEY, txn INT, pad VARCHAR(255))")
    start = master_status(srv)
    stop = threading.Event()
    latencies: list[float] = []
    samples: list[int] = []
    cfg = config_for(srv, start=start, max_buffered_events=64, heartbeat_period=1.0)
    tracemalloc.start()
    try:
        async with rc.connect(cfg) as stream:
            writer = asyncio.create_task(asyncio.to_thread(_other_client, srv, stop, latencies))
            began = time.monotonic()
            next_sample = began + 1.0
            events = 0
            async for _ in stream:
                events += 1
                await asyncio.sleep(0.002)  # the slow consumer
                now = time.monotonic()
                if now >= next_sample:
                    samples.append(tracemalloc.get_traced_memory()[0])
                    next_sample = now + 1.0
                if now - began > SECONDS:
                    break
            stop.set()
            await writer
            protocol = stream.protocol
            assert protocol is not None
            assert protocol.max_buffered <= 64
    finally:
        stop.set()
        tracemalloc.stop()
    written_rows = len(latencies) * 20
    print(
        f"\nslow consumer: {SECONDS:.0f} s, {events} events consumed, {written_rows} rows "
        f"written by the other client, traced memory "
        f"{min(samples) >> 10}-{max(samples) >> 10} KiB, "
        f"commit latency max {max(latencies) * 1000:.1f} ms"
    )
    # the primary ran far ahead of the consumer: the backlog was real
    assert written_rows > events
    # memory flat: the last third of the run holds no more than the first third + 4 MiB
    third = max(1, len(samples) // 3)
    assert max(samples[-third:]) <= max(samples[:third]) + (4 << 20)
    assert max(samples) < 64 << 20
    # the primary's other client was never held up by the slow replica
    assert max(latencies) < 5.0
