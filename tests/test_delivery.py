"""AckPolicy: when a semi-sync ACK goes out, by ack_mode, without I/O.

The driver (``BinlogStream``) reports what it does with the items and sends
what the policy says; these tests drive the policy as the driver does, item by
item, and check which items are ACKed and when.
"""

from __future__ import annotations

from collections import deque

import pytest

from replica_client.binlog.events import Event, QueryEvent, RotateEvent, WriteRowsEvent, XidEvent
from replica_client.delivery import AckMode, AckPolicy, StreamItem


def _event(cls: type[Event]) -> Event:
    # the policy looks at the event's class only
    return object.__new__(cls)


def _item(cls: type[Event], *, end: int, needs_ack: bool = False, **kw: object) -> StreamItem:
    return StreamItem(_event(cls), "b.000001", end - 10, end, 10, needs_ack=needs_ack, **kw)  # type: ignore[arg-type]


def _transaction(end: int) -> list[StreamItem]:
    """QUERY(BEGIN), a rows event, XID flagged for an ACK."""
    return [
        _item(QueryEvent, end=end),
        _item(WriteRowsEvent, end=end + 10),
        _item(XidEvent, end=end + 20, needs_ack=True),
    ]


class Driver:
    """The driver's side, as BinlogStream runs it: a queue of received items, the
    consumer taking them, ACKs recorded instead of sent."""

    def __init__(self, mode: AckMode, items: list[StreamItem], *, semi_sync: bool = True) -> None:
        self.policy = AckPolicy(mode)
        self.policy.connected(semi_sync)
        self.queue = deque(items)
        self.acked: list[int] = []

    def pass_item(self, item: StreamItem) -> None:
        if item.needs_ack and self.policy.passed(item):
            self.acked += [i.end for i in self.policy.due()]

    def take(self, *, handed: bool = True) -> StreamItem:
        """The consumer takes the next item (and is handed all of it, or not yet:
        changes of a rows event still to come)."""
        item = self.queue.popleft()
        self.policy.caught_up = False
        self.pass_item(item)
        if handed and self.policy.settling and self.policy.handed_over():
            self.settle()
        return item

    def settle(self) -> None:
        if not self.policy.caught_up:
            return
        while self.queue:
            item = self.queue[0]
            ack, stop = self.policy.at_head(item)
            if ack:
                self.acked.append(item.end)
            if stop:
                return
            self.pass_item(self.queue.popleft())

    def manual_ack(self) -> None:
        self.policy.acked()
        self.acked += [i.end for i in self.policy.due()]
        self.settle()


def test_auto_acks_an_end_that_arrived_once_the_consumer_holds_what_precedes_it() -> None:
    d = Driver("auto", _transaction(100))
    d.take()
    assert d.acked == []  # the XID has arrived, the rows event is not handed out
    d.take()
    # the consumer holds everything before the XID: it is ACKed ahead of the consumer
    assert d.acked == [120]
    assert [type(i.event) for i in d.queue] == [XidEvent]
    d.take()
    assert d.acked == [120]  # once: handing the XID out does not ACK it again


def test_auto_waits_while_the_consumer_has_not_caught_up() -> None:
    d = Driver("auto", _transaction(100))
    d.take()
    d.take(handed=False)  # changes of the rows event still being handed out
    d.settle()  # (bytes arrived meanwhile)
    assert d.acked == []
    d.policy.handed_over()  # the last change handed out
    d.settle()
    assert d.acked == [120]


def test_manual_acks_only_when_asked() -> None:
    d = Driver("manual", _transaction(100) + _transaction(200))
    for _ in range(3):
        d.take()
    assert d.acked == []
    d.manual_ack()
    assert d.acked == [120]
    d.take()
    d.manual_ack()
    assert d.acked == [120]  # the second transaction's end is not handed out yet...
    d.take()
    d.take()
    d.manual_ack()
    assert d.acked == [120, 220]  # ...then it is


def test_manual_acks_a_skipped_event_at_once() -> None:
    """An event re-sent after a reconnect and skipped was handed out before: its ACK
    cannot wait for the consumer."""
    skipped = _item(XidEvent, end=120, needs_ack=True, skipped=True)
    d = Driver("manual", [skipped])
    d.take()
    assert d.acked == [120]


def test_receipt_leaves_acks_to_the_session() -> None:
    d = Driver("receipt", _transaction(100))
    assert not d.policy.settling
    for _ in range(3):
        d.take()
    d.manual_ack()
    assert d.acked == []


def test_without_semi_sync_nothing_settles() -> None:
    d = Driver("auto", _transaction(100), semi_sync=False)
    assert not d.policy.early
    d.take()
    assert d.policy.handed_over() is False


def test_a_changes_consumer_is_not_handed_items_without_changes() -> None:
    """Settling passes the items the consumer is not handed (a ROTATE, a QUERY that
    gives no changes) and stops at one it is."""
    items = [_item(RotateEvent, end=10), *_transaction(100)]
    d = Driver("auto", items)
    d.policy.takes = lambda item: isinstance(item.event, WriteRowsEvent)
    d.policy.handed_over()
    d.settle()
    assert [type(i.event) for i in d.queue] == [WriteRowsEvent, XidEvent]
    assert d.acked == []
    d.take()
    d.settle()
    assert d.acked == [120] and not d.queue  # the XID passed on the way and ACKed


@pytest.mark.parametrize("mode", ["auto", "manual"])
def test_a_new_connection_drops_acks_of_the_old_one(mode: AckMode) -> None:
    d = Driver(mode, _transaction(100))
    d.policy.connected(True)
    for _ in range(2):
        d.take()
    first = _item(XidEvent, end=120, needs_ack=True)
    if mode == "manual":
        d.policy.passed(first)
        d.policy.connected(True)  # reconnected: the old connection's ACK is void
        assert d.policy.due() == []
    else:
        assert d.policy.passed(first) is True


def _merge_passes(d: Driver, item: StreamItem) -> None:
    """The snapshot's merge takes ``item`` from the queue itself."""
    d.policy.caught_up = False
    d.pass_item(d.queue.popleft())
    if item.needs_ack and d.policy.passed_on(item):
        d.acked.append(item.end)


def test_manual_an_end_the_merge_passes_after_an_ack_is_acked_then() -> None:
    """The snapshot's merge takes the stream's items itself, and reads on only once
    the consumer holds every change before. A manual consumer that called ack()
    after the last change of a transaction covered it, though its end had not
    arrived: the end goes out as the merge passes it. Without that ack() it waits
    for the next one."""
    first, second = _transaction(100), _transaction(200)
    d = Driver("manual", first[:2])  # the end arrives later
    for item in first[:2]:
        _merge_passes(d, item)
    d.policy.handed_over()  # the rows' change handed out
    d.manual_ack()  # (the end has not arrived: nothing to ACK yet)
    assert d.acked == []
    d.queue.append(first[2])
    _merge_passes(d, first[2])
    assert d.acked == [120]  # covered by that ack()
    d.queue.extend(second)
    for item in second[:2]:
        _merge_passes(d, item)
    d.policy.handed_over()  # handed out, no ack() since
    _merge_passes(d, second[2])
    assert d.acked == [120]
    d.manual_ack()
    assert d.acked == [120, 220]


@pytest.mark.parametrize("mode", ["auto", "receipt"])
def test_an_end_the_merge_passes_is_not_acked_twice(mode: AckMode) -> None:
    d = Driver(mode, _transaction(100))
    for item in list(d.queue):
        _merge_passes(d, item)
    assert d.acked == ([120] if mode == "auto" else [])
