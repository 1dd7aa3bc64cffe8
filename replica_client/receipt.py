"""What a replica checks of event packets it received before it may ACK them on receipt.

With ``ack_on_receipt`` (semi-sync), :meth:`ReplicaSession.frame_ahead
<replica_client.session.ReplicaSession.frame_ahead>` ACKs a flagged event
before decoding it when every event framed with it passes these checks. No I/O.
"""

from __future__ import annotations

from typing import Final

from .binlog.constants import HEARTBEAT_TYPES
from .binlog.decoder import whole_event_head
from .binlog.header import EventHeader
from .binlog.transactions import PLACE_SPECIAL
from .wire.packets import SEMI_SYNC_EVENT_OFFSET

__all__ = ["receipt_checked"]

#: Events that move the stream's place (file, or where positions count from).
_MOVES_PLACE: Final = PLACE_SPECIAL - HEARTBEAT_TYPES


def receipt_checked(payloads: list[bytes], crc32: bool) -> EventHeader | None:
    """The header of the last of ``payloads`` (semi-sync event packets) when every
    one's checksum holds and none moves the stream's place; None otherwise.

    What a replica checks of events it receives before it may ACK them
    (``ack_mode="receipt"``); the decoder checks everything again.
    """
    crc_mode = 2 if crc32 else 0
    header = None
    for payload in payloads:
        # (after the semi-sync header; this runs before every receipt ACK)
        header = whole_event_head(memoryview(payload)[SEMI_SYNC_EVENT_OFFSET:], crc_mode)
        if header is None or header[1] in _MOVES_PLACE:
            return None
    return header
