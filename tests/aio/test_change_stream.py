"""ChangeStream against a scripted item source and snapshot reader (no server).

While a snapshot runs, the stream's items belong to the snapshot's merge: the
consumer's hand-over (which lets a semi-sync stream settle, passing items on
by itself) must wait until the snapshot is over, or the merge would miss the
items settling took (a DDL it must check, rows of the seam)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import replica_client as rc
from replica_client.aio.changes import ChangeStream
from replica_client.changes import Change

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

    def snapshot_over(self) -> None:
        self.over = True

    async def aclose(self) -> None:
        pass


async def test_no_hand_over_while_a_snapshot_runs() -> None:
    source = _Source(_Reader())
    changes = ChangeStream(source)
    got = []
    async for change in changes:
        got.append(change.after)
        source.taken += 1
    assert got == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert source.over
    assert source.handed == []  # each batch emptied while the reader was active
