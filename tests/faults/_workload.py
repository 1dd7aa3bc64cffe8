"""A recorded write workload and a consumer that checks delivery against it.

The writer commits transactions of a few multi-row INSERT statements each
(random sizes, so transactions span several binlog events) and records every
commit's GTID (``@@last_gtid``) with the row ids it wrote, in commit order.
The consumer collects, per GTID event the stream hands out, the ids of the
rows that follow it. Exactly-once delivery in commit order means the two
lists are equal.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass, field

import pymysql

import replica_client as rc
from replica_client.binlog.events import GtidEvent, WriteRowsEvent
from replica_client.testing.server import MariaDBServer

__all__ = ["Delivery", "Writer", "binlog_pos", "consume", "master_status", "prepare_table"]


def prepare_table(server: MariaDBServer, schema: str) -> None:
    server.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    server.sql(f"DROP TABLE IF EXISTS {schema}.t")
    server.sql(f"CREATE TABLE {schema}.t (id INT PRIMARY KEY, txn INT NOT NULL, pad VARCHAR(40))")


def master_status(server: MariaDBServer) -> rc.FilePos:
    row = server.sql("SHOW MASTER STATUS")[0]
    return rc.FilePos(str(row[0]), int(row[1]))


def binlog_pos(server: MariaDBServer) -> rc.Gtid:
    return rc.Gtid(str(server.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))


@dataclass
class Writer:
    """Commits ``rows`` rows into ``schema.t`` (run ``run`` in a thread).

    With ``survive=True`` connection errors (the primary restarting) are waited
    out; a transaction whose COMMIT failed is retried with new ids, and its
    outcome is unknown (``uncertain``), so the caller compares with the binlog.
    """

    server: MariaDBServer
    schema: str
    rows: int
    seed: int = 0
    survive: bool = False
    max_rows_per_txn: int = 30
    pause: float = 0.0
    #: (gtid, ids) of each transaction known to be committed, in commit order.
    committed: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    uncertain: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def _connect(self) -> pymysql.connections.Connection[pymysql.cursors.Cursor]:
        return pymysql.connect(
            host=self.server.host,
            port=self.server.port,
            user="root",
            password=self.server.password,
            autocommit=False,
            connect_timeout=2,
        )

    def run(self) -> None:
        rng = random.Random(self.seed)
        next_id = 0
        txn = 0
        conn = None
        while next_id < self.rows and not self.stop.is_set():
            size = min(rng.randint(1, self.max_rows_per_txn), self.rows - next_id)
            ids = list(range(next_id, next_id + size))
            statements: list[list[int]] = []
            while ids:
                cut = rng.randint(1, len(ids))
                statements.append(ids[:cut])
                ids = ids[cut:]
            try:
                if conn is None:
                    conn = self._connect()
                with conn.cursor() as cur:
                    for part in statements:
                        values = ",".join(f"({i},{txn},'{'x' * (i % 37)}')" for i in part)
                        cur.execute(f"INSERT INTO {self.schema}.t (id, txn, pad) VALUES {values}")
                    try:
                        conn.commit()
                    except pymysql.err.Error:
                        self.uncertain += 1
                        raise
                    cur.execute("SELECT @@last_gtid")
                    row = cur.fetchone()
                    assert row is not None
                    gtid = str(row[0])
            except pymysql.err.Error:
                if not self.survive:
                    raise
                conn = None
                next_id += size  # the ids may or may not be in the binlog: never reuse them
                txn += 1
                time.sleep(0.2)
                continue
            self.committed.append((gtid, tuple(range(next_id, next_id + size))))
            next_id += size
            txn += 1
            if self.pause:
                time.sleep(self.pause)
        if conn is not None:
            conn.close()


@dataclass
class Delivery:
    """What a stream handed out: (gtid, row ids) per transaction, in order."""

    transactions: list[tuple[str, list[int]]] = field(default_factory=list)
    events: int = 0

    def feed(self, event: rc.Event, table: str) -> None:
        self.events += 1
        if isinstance(event, GtidEvent):
            self.transactions.append((event.gtid, []))
        elif isinstance(event, WriteRowsEvent) and event.table_name == table:
            assert self.transactions, "rows before any GTID event"
            self.transactions[-1][1].extend(int(r[0]) for r in event.rows)

    def with_rows(self) -> list[tuple[str, tuple[int, ...]]]:
        return [(g, tuple(ids)) for g, ids in self.transactions if ids]


async def consume(
    stream: rc.BinlogStream,
    delivery: Delivery,
    table: str,
    final: asyncio.Future[rc.Gtid],
) -> None:
    """Feed ``delivery`` until the stream has passed the GTID state ``final`` resolves to."""
    async for event in stream:
        delivery.feed(event, table)
        if final.done() and stream.gtid_state == final.result():
            return
