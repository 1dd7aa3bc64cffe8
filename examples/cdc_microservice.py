"""A small CDC service: MariaDB row changes -> Redis Streams, exactly once across restarts.

    REPLICA_CLIENT_PASSWORD=replpass python examples/cdc_microservice.py \\
        mariadb://repl@127.0.0.1:3307 --redis redis://127.0.0.1:6379/0 \\
        --stream-key cdc:shop --tables 'shop.*'

How it avoids loss and duplicates:

* Changes are buffered per binlog transaction. When the stream reaches the
  end of a transaction (``stream.gtid_state`` moves), the service sends one
  Redis ``MULTI``: an ``XADD`` per change *and* a ``SET`` of the checkpoint
  (the GTID state after that transaction) under ``<stream-key>:checkpoint``.
  Redis runs a MULTI/EXEC all or nothing, so the checkpoint is stored exactly
  when the broker has stored the changes: after a crash the two never
  disagree. Only then is the next transaction read.
* On start the service reads the checkpoint and resumes from that GTID state;
  without one it starts at ``--start`` (``now`` or ``earliest``) or
  ``--start-gtid``. The primary re-sends the transactions after the
  checkpoint, so the ones lost in a crash come again and none twice.
* Every entry carries ``gtid`` and ``index`` (the change's place in its
  transaction): ``(gtid, index)`` is a unique key a consumer can check.
* ``--snapshot consistent|chunked`` (first start only): the tables' existing
  rows are published first (``op`` ``r``, one ``MULTI`` per row with the
  snapshot's checkpoint, ``stream.snapshot_state``), then the changes after
  them. Killed during the snapshot, the service resumes it from the
  checkpoint: rows already published are not read again.

For the checkpoint to survive a Redis restart, run Redis with persistence
(``appendonly yes``, ``appendfsync always`` for no loss at all).

SIGTERM / Ctrl-C: finish the transaction being published, log the position, exit 0.
Every ``--metrics-every`` seconds the stream's counters go to the log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as redis

import replica_client as rc
from replica_client.changes import Change
from replica_client.jsonvalues import change_envelope

__all__ = ["CdcService", "main"]

log = logging.getLogger("cdc_microservice")


class CdcService:
    """Streams changes from one primary into one Redis stream, checkpointing in Redis."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stream_key: str = args.stream_key
        self.checkpoint_key = f"{self.stream_key}:checkpoint"
        self.redis: Any = redis.from_url(args.redis)
        self.stopping = asyncio.Event()
        self.published = 0

    def __repr__(self) -> str:
        return f"<CdcService stream={self.stream_key}>"

    async def start_position(self) -> dict[str, Any]:
        """``start=`` or ``snapshot=`` for ``connect``: from the checkpoint, else the options."""
        stored = await self.redis.get(self.checkpoint_key)
        if stored:
            text = stored.decode()
            log.info("resuming from checkpoint %s", text[:200])
            if text.startswith("{"):  # stored during a snapshot
                return {"snapshot": rc.SnapshotState.from_json(text)}
            return {"start": rc.parse_gtid_state(text)}  # MariaDB state or MySQL set
        if self.args.snapshot:
            log.info("no checkpoint under %s: snapshot first", self.checkpoint_key)
            return {"snapshot": self.args.snapshot}
        if self.args.start_gtid:
            return {"start": rc.parse_gtid_state(self.args.start_gtid)}
        log.info("no checkpoint under %s: starting at %s", self.checkpoint_key, self.args.start)
        return {"start": str(self.args.start)}

    @staticmethod
    def checkpoint(stream: rc.BinlogStream) -> str:
        """Where to resume after what was handed out so far (moves at reads and commits)."""
        state = stream.snapshot_state
        return state.to_json() if state is not None else str(stream.gtid_state)

    async def publish(self, changes: list[Change], checkpoint: str) -> None:
        """One transaction's changes and the new checkpoint, all or nothing."""
        async with self.redis.pipeline(transaction=True) as tx:
            for index, change in enumerate(changes):
                envelope = change_envelope(change)
                tx.xadd(
                    self.stream_key,
                    {
                        "gtid": change.gtid or "",
                        "index": index,
                        "table": f"{change.schema}.{change.table}",
                        "op": envelope["op"],
                        "data": json.dumps(envelope, separators=(",", ":")),
                    },
                )
            tx.set(self.checkpoint_key, checkpoint)
            await tx.execute()  # returns once Redis has applied the whole MULTI
        self.published += len(changes)

    async def run(self) -> None:
        dsn = urlsplit(self.args.dsn)
        start = await self.start_position()
        config = rc.ReplicaConfig.from_kwargs(
            host=dsn.hostname or "127.0.0.1",
            port=dsn.port or 3306,
            user=unquote(dsn.username or "root"),
            password=unquote(dsn.password or os.environ.get("REPLICA_CLIENT_PASSWORD", "")),
            server_id=self.args.server_id,
            tables=self.args.tables,
            heartbeat_period=1.0,
            **start,
        )
        log.info("connecting with %r", config)  # the config's repr hides the password
        pending: list[Change] = []
        async with rc.connect(config) as stream:
            committed = self.checkpoint(stream)
            reporter = asyncio.create_task(self.report(stream))
            changes = aiter(stream.changes())
            next_change = asyncio.ensure_future(anext(changes))
            stop = asyncio.ensure_future(self.stopping.wait())
            try:
                while True:
                    done, _ = await asyncio.wait(
                        {next_change, stop}, timeout=0.1, return_when=asyncio.FIRST_COMPLETED
                    )
                    if stop in done:
                        break
                    checkpoint = self.checkpoint(stream)
                    if next_change not in done:
                        # Idle: the stream has passed the end of what it handed out.
                        if checkpoint != committed:
                            await self.publish(pending, checkpoint)
                            pending.clear()
                            committed = checkpoint
                        continue
                    try:
                        change = next_change.result()
                    except StopAsyncIteration:
                        break
                    next_change = asyncio.ensure_future(anext(changes))
                    if change.op == "read":
                        # The checkpoint after a read includes it (and every
                        # transaction handed out before it).
                        pending.append(change)
                        await self.publish(pending, checkpoint)
                        pending.clear()
                        committed = checkpoint
                    elif checkpoint != committed:
                        # The first change of a new transaction: the checkpoint
                        # covers the ones before it, not this one.
                        await self.publish(pending, checkpoint)
                        pending[:] = [change]
                        committed = checkpoint
                    else:
                        pending.append(change)
            finally:
                stop.cancel()
                next_change.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await next_change
                reporter.cancel()
                log.info(
                    "stopped after %d changes; checkpoint %s; %s",
                    self.published,
                    committed[:200],
                    stream.metrics.as_dict(),
                )
        await self.redis.aclose()

    async def report(self, stream: rc.BinlogStream) -> None:
        while True:
            await asyncio.sleep(self.args.metrics_every)
            log.info("metrics %s published=%d", stream.metrics.as_dict(), self.published)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn", help="mariadb://user[:pass]@host:port of the primary")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--stream-key", default="cdc:changes")
    parser.add_argument("--tables", default=None, help="only these tables: db.t,db2.*")
    parser.add_argument("--start", choices=["now", "earliest"], default="now")
    parser.add_argument("--start-gtid", default=None, help="first start after this GTID state")
    parser.add_argument(
        "--snapshot",
        choices=["consistent", "chunked"],
        default=None,
        help="first start: publish the tables' existing rows, then the changes after them",
    )
    parser.add_argument("--server-id", type=int, default=4444)
    parser.add_argument("--metrics-every", type=float, default=30.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    async def run() -> None:
        service = CdcService(args)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, service.stopping.set)
        await service.run()

    asyncio.run(run())


if __name__ == "__main__":
    main()
