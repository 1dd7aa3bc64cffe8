"""Soak through the fault proxy: cuts at random byte offsets, stalls past the
heartbeat period, one-byte writes, random splits and delayed reads, while a
writer commits a recorded workload. The stream must deliver exactly the
committed transactions (by GTID, with their rows), each once, in commit order.

CI size: 20k rows, 40 cuts. ``REPLICA_CLIENT_SOAK=full``: 100k rows, 200 cuts.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Callable

import replica_client as rc
from replica_client.testing.pytest_plugin import PrimaryFactory
from tests.faults._workload import (
    Delivery,
    Writer,
    binlog_pos,
    consume,
    master_status,
    prepare_table,
)
from tests.faults.proxy import ConnectionPlan, FaultProxy
from tests.integration._stream_support import DISRUPTIVE, config_for, repl_user

__all__: list[str] = []

FULL = os.environ.get("REPLICA_CLIENT_SOAK") == "full"
ROWS = 100_000 if FULL else 20_000
CUTS = 200 if FULL else 40
STALLS = 10 if FULL else 3
#: binlog bytes per row of this workload, measured (about 95); a low estimate
#: makes the cuts come early rather than run out before the workload ends
BYTES_PER_ROW = 60
HEARTBEAT = 0.5


def _planner(
    rng: random.Random, proxy_ref: list[FaultProxy]
) -> tuple[Callable[[int], ConnectionPlan], dict[str, int]]:
    mean = ROWS * BYTES_PER_ROW // CUTS
    planned = {"stalls": 0}

    def plan(index: int) -> ConnectionPlan:
        proxy = proxy_ref[0]
        if index == 0:
            # connect() first reads the tables' definitions over an SQL connection:
            # like its first replication connection, it is not retried when lost
            return ConnectionPlan()
        one_byte = 3000 if index % 5 == 1 else 0
        split = index % 2 == 0
        delay = 0.002 if index % 7 == 3 else 0.0
        if planned["stalls"] < STALLS and index % 9 == 4:
            planned["stalls"] += 1
            return ConnectionPlan(
                stall_at=rng.randint(1, mean),
                stall_for=3 * HEARTBEAT,
                one_byte=one_byte,
                split=split,
            )
        if proxy.stats.cuts < CUTS:
            # mostly mid-stream cuts; one in eight lands in the first 600 bytes
            # (greeting, auth, registration queries)
            hi = 600 if index % 8 == 5 else 2 * mean
            return ConnectionPlan(
                cut_after=rng.randint(1, hi), one_byte=one_byte, split=split, delay=delay
            )
        return ConnectionPlan(split=split)

    return plan, planned


async def test_soak_through_fault_proxy(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(DISRUPTIVE)
    repl_user(srv)
    prepare_table(srv, "soak")
    start = master_status(srv)
    rng = random.Random(20240817)
    proxy_ref: list[FaultProxy] = []
    plan, planned = _planner(rng, proxy_ref)
    proxy = FaultProxy(srv.port, plan=plan, seed=7)
    proxy_ref.append(proxy)
    writer = Writer(srv, "soak", ROWS, seed=11)
    delivery = Delivery()
    loop = asyncio.get_running_loop()
    final: asyncio.Future[rc.Gtid] = loop.create_future()
    async with proxy:
        cfg = config_for(
            srv,
            port=proxy.port,
            start=start,
            heartbeat_period=HEARTBEAT,
            connect_timeout=10.0,
            reconnect=rc.ReconnectPolicy(initial_delay=0.005, max_delay=0.1, max_attempts=50),
        )
        async with rc.connect(cfg) as stream:
            consumer = asyncio.create_task(consume(stream, delivery, "t", final))
            await asyncio.to_thread(writer.run)
            final.set_result(binlog_pos(srv))
            async with asyncio.timeout(600 if FULL else 150):
                await consumer
            reconnects = stream.reconnects
    stats = proxy.stats
    print(
        f"\nsoak: rows={ROWS} transactions={len(writer.committed)} cuts={stats.cuts} "
        f"stalls={stats.stalls} reconnects={reconnects} connections={stats.connections} "
        f"one_byte_writes={stats.one_byte_writes} bytes_down={stats.bytes_down} "
        f"events={delivery.events}"
    )
    delivered = delivery.with_rows()
    gtids = [g for g, _ in delivered]
    assert len(set(gtids)) == len(gtids), "a transaction was delivered twice"
    assert delivered == writer.committed
    assert sum(len(ids) for _, ids in delivered) == ROWS
    assert stats.cuts >= CUTS
    assert stats.stalls == planned["stalls"] == STALLS
    # cuts that land while reconnecting fail an attempt instead of ending a stream
    assert reconnects >= CUTS // 2
