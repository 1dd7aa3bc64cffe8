"""ChangeStream against a scripted item source and snapshot reader (no server).

While a snapshot runs, the stream's items belong to the snapshot's merge: when
the consumer holds every change (a semi-sync stream may then settle, passing on
by itself the items the consumer does not take, and ACK a transaction's end),
the items the merge must see (a DDL it checks, rows of the seam) are taken, so
settling never passes them on; BEGIN and COMMIT are passed, so that the end of
a transaction handed out is ACKed without waiting for the merge."""

from __future__ import annotations

import datetime as dt
from typing import Any

import replica_client as rc
from replica_client.aio.changes import ChangeStream
from replica_client.binlog.events import QueryEvent, XidEvent
from replica_client.binlog.header import EventHeader
from replica_client.changes import Change
from replica_client.delivery import StreamItem

__all__: list[str] = []

_AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _read(i: int) -> Change:
    return Change("read", "db", "t", None, {"id": i}, None, None, _AT, 0, ("id",), 0)


class _Reader:
    """A snapshot reader that hands out two batches, then says its seam is behind."""

    attached = False

    def __init__(self) -> None:
        self.batches: list[list[Change] | None] = [[_read(1), _read(2)], [_read(3)], None]

    def attach(self, source: Any) -> None:
        self.attached = True

    async def next_batch(self) -> list[Change] | None:
        return self.batches.pop(0)

    def keep(self, change: Change) -> Change | None:
        return change


class _Source:
    """What ChangeStream takes from a BinlogStream, recording the hand-overs."""

    config = rc.ReplicaConfig.from_kwargs(host="h", user="u", server_id=9)
    binlog_format = "ROW"
    position = None
    gtid_state = rc.Gtid("")
    current_gtid = None
    closed = False

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.handed: list[int] = []
        self.taken = 0
        self.over = False

    def serve_changes(self, consumer: ChangeStream) -> Any:
        return self.reader

    def take_buffered(self, changes: bool = False) -> None:
        return None

    async def next_passed(self) -> Any:
        raise StopAsyncIteration  # the stream's end: nothing after the snapshot

    def handed_over(self) -> None:
        self.handed.append(self.taken)

    def passed_on(self, item: Any) -> None:
        pass

    received = False

    def snapshot_over(self) -> None:
        self.over = True

    async def aclose(self) -> None:
        pass


def _query(text: str) -> StreamItem:
    header = EventHeader(0, 2, 1, 0, 0, 0)
    return StreamItem(QueryEvent(header, 1, 0, 0, "db", text), "b.000001", 4, 0, 0)


async def test_a_snapshot_consumer_hands_over_but_takes_what_the_merge_checks() -> None:
    source = _Source(_Reader())
    changes = ChangeStream(source)
    ddl, begin, commit = _query("ALTER TABLE t ADD c INT"), _query("BEGIN"), _query("COMMIT")
    xid = StreamItem(XidEvent(EventHeader(0, 16, 1, 0, 0, 0), 7), "b.000001", 4, 0, 0)
    # while the snapshot runs: the merge checks every statement but BEGIN and COMMIT
    assert [changes.takes(i) for i in (ddl, begin, commit, xid)] == [True, False, False, False]
    got = []
    async for change in changes:
        got.append(change.after)
        source.taken += 1
    assert got == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert source.over
    # the consumer held everything when each batch was emptied: after 2 changes, then 3
    assert source.handed == [1, 2]
    # the snapshot over: a DDL gives no change and is passed on the way
    assert [changes.takes(i) for i in (ddl, begin, commit, xid)] == [False] * 4
