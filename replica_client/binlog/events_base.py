"""The base of every typed event, and the event of a type this decoder does not know. No I/O.

:class:`Event` carries the common header (:class:`~.header.EventHeader`) and
answers what every event is asked (type, timestamp, server, position);
:class:`UnknownEvent` keeps the body of an event of a type the decoder does not
know (marked ignorable, or kept by the options).
Re-exported by :mod:`replica_client.binlog.events`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from .constants import EventFlag
from .header import EventHeader

__all__ = ["Event", "UnknownEvent"]


@dataclass(frozen=True, slots=True)
class Event:
    """Base class of all events. ``header`` is the 19-byte common header."""

    header: EventHeader

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def timestamp(self) -> int:
        """Seconds since the epoch when the statement started on the primary."""
        return self.header.timestamp

    @property
    def server_id(self) -> int:
        return self.header.server_id

    @property
    def log_pos(self) -> int:
        """End position of this event in the primary's binlog (0 if unknown)."""
        return self.header.log_pos

    @property
    def artificial(self) -> bool:
        """True for events the primary made up for the replica (fake ROTATE ...)."""
        return bool(self.header.flags & EventFlag.ARTIFICIAL)

    @property
    def datetime(self) -> _dt.datetime:
        """The header timestamp as an aware UTC datetime."""
        return _dt.datetime.fromtimestamp(self.header.timestamp, _dt.UTC)


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    """An event type this decoder does not know, marked ignorable by the server."""

    body: bytes
