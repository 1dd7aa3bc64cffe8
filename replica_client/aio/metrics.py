"""``StreamMetrics``: the counters of a :class:`~replica_client.aio.stream.BinlogStream`
(``stream.metrics``), which the stream updates as it passes events."""

from __future__ import annotations

import dataclasses

__all__ = ["StreamMetrics"]


@dataclasses.dataclass(slots=True)
class StreamMetrics:
    """Counters of one :class:`BinlogStream` (``stream.metrics``), since it was opened.

    Attributes:
        events: events received from the primary (filtered ones included,
            artificial events and heartbeats not).
        rows: row images in the rows events handed to the consumer.
        bytes: bytes of the event packets received.
        transactions: transactions (GTID groups) completed.
        reconnects: reconnections after a lost or stalled connection.
        failovers: moves to another primary (``hosts``).
        heartbeats: heartbeats received (the primary had nothing to send).
        last_event_timestamp: the primary's clock (Unix seconds) in the last event.
        seconds_behind_primary: how far the last event lags this machine's clock;
            0 once a heartbeat says the stream is caught up; None before any event.
        snapshot_rows: rows a snapshot read (``op="read"`` changes), in this run.
    """

    events: int = 0
    rows: int = 0
    bytes: int = 0
    transactions: int = 0
    reconnects: int = 0
    failovers: int = 0
    heartbeats: int = 0
    last_event_timestamp: int | None = None
    seconds_behind_primary: float | None = None
    snapshot_rows: int = 0

    def as_dict(self) -> dict[str, int | float | None]:
        """The counters as a plain dict (for logs and metric exporters)."""
        return dataclasses.asdict(self)
