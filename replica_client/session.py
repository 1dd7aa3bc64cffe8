"""One replication connection, sans I/O: wire protocol + binlog decoder + positions.

Bytes in (``receive_data``), stream items out (``next_item``), bytes out
(``data_to_send``). No sockets, clocks, threads or event loops: the asyncio
driver in :mod:`replica_client.aio` (or any other driver) moves the bytes.

For every event packet of the stream the session

* strips the 0x00 status byte and, when semi-sync was negotiated, the 2-byte
  semi-sync header (0xEF, flag) and remembers whether the primary wants an ACK;
* decodes the event with :class:`~replica_client.binlog.decoder.EventDecoder`;
* tracks where the event starts and ends in the primary's binlog: a ROTATE sets
  file and position, a non-zero ``log_pos`` is the end position, a zero
  ``log_pos`` (MariaDB 11.4+ inside transactions) means "start + size", and
  artificial events without a position (fake ROTATE, re-sent FDE) move nothing;
* tracks transaction boundaries: a group opened by a GTID event (or ``BEGIN``)
  ends with XID, ``COMMIT``/``ROLLBACK``, XA PREPARE, or, for a standalone
  GTID group (DDL), with its statement; every event outside a group is a
  boundary too. After a boundary the item carries a :class:`Checkpoint`: the
  file position and MariaDB GTID state from which the stream can resume
  without losing or repeating a transaction;
* builds semi-sync ACKs on request (``ack``): ``0xEF | end position u64 | file``.

Resuming after a reconnect (``resume_skip``): the driver restarts the dump from
the last checkpoint the consumer has passed and tells the session how many
binlog events of the interrupted transaction were already handed out; those
come back as items with ``skipped=True`` (still ACKed if flagged), so no event
is delivered twice.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Final, Literal

from .accel import constructor
from .binlog.constants import EVENT_HEADER_LEN, EventFlag, EventType
from .binlog.decoder import EventDecoder
from .binlog.events import (
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    GtidListEvent,
    QueryEvent,
    RotateEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
)
from .config import DecoderOptions
from .errors import MalformedEventError, ProtocolError, StateError
from .position import FilePos, Gtid, GtidTriple
from .wire.auth import RandomBytes
from .wire.constants import SEMI_SYNC_INDICATOR, SemiSyncFlag
from .wire.packets import build_semisync_ack
from .wire.registration import (
    END_OF_STREAM,
    Flavor,
    RegistrationMachine,
    RegistrationSettings,
    State,
)

__all__ = [
    "END",
    "NEED_DATA",
    "Checkpoint",
    "ReplicaSession",
    "StreamItem",
]


class _Signal(Enum):
    NEED_DATA = auto()
    END = auto()


#: ``next_item()``: more bytes are needed.
NEED_DATA: Final = _Signal.NEED_DATA
#: ``next_item()``: a non-blocking dump reached the end of the binlog.
END: Final = _Signal.END

_HEARTBEATS: Final = frozenset({EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2})
_MYSQL_GTID_TYPES: Final = frozenset(
    {
        EventType.GTID_LOG_EVENT,
        EventType.ANONYMOUS_GTID_LOG_EVENT,
        EventType.GTID_TAGGED_LOG_EVENT,
    }
)
_GROUP_END_QUERIES: Final = ("COMMIT", "ROLLBACK", "XA COMMIT", "XA ROLLBACK")

# Plain ints for the per-event tests (IntEnum/IntFlag operators cost a Python call each).
_HEARTBEAT_CODES: Final = frozenset(int(t) for t in _HEARTBEATS)
_MYSQL_GTID_CODES: Final = frozenset(int(t) for t in _MYSQL_GTID_TYPES)
_ROTATE: Final = int(EventType.ROTATE_EVENT)
_FDE: Final = int(EventType.FORMAT_DESCRIPTION_EVENT)
_GTID_LIST: Final = int(EventType.GTID_LIST_EVENT)
_ARTIFICIAL: Final = int(EventFlag.ARTIFICIAL)
_SYNC: Final = int(SemiSyncFlag.SYNC)
# Events whose place in the binlog is not simply "ends at log_pos".
_PLACE_SPECIAL: Final = _HEARTBEAT_CODES | {_ROTATE, _FDE}

# What an event class means for transaction boundaries (``_group_update``),
# worked out once per class with the isinstance tests below.
_K_OTHER: Final = 0  # rows, TABLE_MAP, ...: no effect
_K_GTID: Final = 1  # MariaDB GTID: a group starts
_K_GTID_LIST: Final = 2
_K_NEUTRAL: Final = 3  # FORMAT_DESCRIPTION, ROTATE
_K_QUERY: Final = 4
_K_END: Final = 5  # XID, XA PREPARE
_KINDS: dict[type[Event], int] = {}


def _kind_of(cls: type[Event]) -> int:
    """What ``cls`` means for transaction boundaries (per event: ``_KINDS.get`` first)."""
    kind = _KINDS.get(cls)
    if kind is not None:
        return kind
    if issubclass(cls, GtidEvent):
        kind = _K_GTID
    elif issubclass(cls, GtidListEvent):
        kind = _K_GTID_LIST
    elif issubclass(cls, FormatDescriptionEvent | RotateEvent):
        kind = _K_NEUTRAL
    elif issubclass(cls, QueryEvent):
        kind = _K_QUERY
    elif issubclass(cls, XidEvent | XaPrepareEvent):
        kind = _K_END
    else:
        kind = _K_OTHER
    _KINDS[cls] = kind
    return kind


class Checkpoint:
    """A resume point between transactions: the next event's position and the GTID state.

    Read-only. ``position`` and ``gtid_state`` are built when first read: a
    stream passes a checkpoint after every transaction and most are never
    looked at.
    """

    __slots__ = ("_file", "_gtids", "_pos", "_position", "_state")

    def __init__(self, position: FilePos, gtid_state: Gtid) -> None:
        self._file = position.file
        self._pos = position.pos
        self._gtids: Mapping[int, GtidTriple] | None = None
        self._position: FilePos | None = position
        self._state: Gtid | None = gtid_state

    @classmethod
    def _at(
        cls, file: str, pos: int, gtids: Mapping[int, GtidTriple], state: Gtid | None
    ) -> Checkpoint:
        # ``gtids`` (domain -> triple) is never mutated afterwards (the session
        # replaces its map on every change), so it is held, not copied;
        # ``state`` is the same as a Gtid when one was built already.
        cp = object.__new__(cls)
        cp._file = file
        cp._pos = pos
        cp._gtids = gtids
        cp._position = None
        cp._state = state
        return cp

    @property
    def position(self) -> FilePos:
        """Where the next event starts."""
        position = self._position
        if position is None:
            position = self._position = FilePos(self._file, self._pos)
        return position

    @property
    def gtid_state(self) -> Gtid:
        """The GTID state after the transactions before this point."""
        state = self._state
        if state is None:
            assert self._gtids is not None
            state = self._state = Gtid.from_domains(self._gtids)
        return state

    def same_as(self, other: Checkpoint) -> bool:
        """Equal to ``other`` (cheaper than ``==`` when neither was read yet)."""
        if self._pos != other._pos or self._file != other._file:
            return False
        if self._gtids is not None and other._gtids is not None:
            return self._gtids is other._gtids or self._gtids == other._gtids
        return self.gtid_state == other.gtid_state

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Checkpoint):
            return NotImplemented
        return self.same_as(other)

    def __hash__(self) -> int:
        return hash((self._file, self._pos, self.gtid_state))

    def __repr__(self) -> str:
        return f"Checkpoint(position={self.position!r}, gtid_state={self.gtid_state!r})"


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One event packet of the stream, with where it sits in the primary's binlog.

    Attributes:
        event: the decoded event; ``None`` when the decoder dropped it (rows of
            a table excluded by the table filter) or it was skipped on resume.
        file: the binlog file the event belongs to.
        start: the event's start position in ``file`` (0 when unknown).
        end: the event's end position (what a semi-sync ACK reports).
        size: bytes of the event, for backpressure accounting.
        needs_ack: the primary waits for a semi-sync ACK of this event.
        checkpoint: set when the stream may resume right after this event.
        countable: a real event of the binlog (not artificial, not a heartbeat);
            only these are counted for ``resume_skip``.
        skipped: already delivered before a reconnect; not for the consumer.
        deliver: the consumer's event-type filter wants it.
    """

    event: Event | None
    file: str
    start: int
    end: int
    size: int
    needs_ack: bool = False
    checkpoint: Checkpoint | None = None
    countable: bool = True
    skipped: bool = False
    deliver: bool = True

    @property
    def for_consumer(self) -> bool:
        """True when the consumer should see this item's event."""
        return self.event is not None and self.deliver and not self.skipped


#: StreamItem(...) with every field, without the generated __init__ (see accel.constructor).
_new_item: Final = constructor(StreamItem)


@dataclass(slots=True)
class _Tracker:
    """Position and transaction-boundary tracking."""

    file: str = ""
    pos: int = 0
    #: The GTID state as domain -> triple; ``Gtid`` objects are built only when asked.
    gtids: dict[int, GtidTriple] = field(default_factory=dict)
    gtid_cache: Gtid | None = None
    in_group: bool = False
    standalone: bool = False
    group_gtid: GtidTriple | None = None


class ReplicaSession:
    """Glues :class:`RegistrationMachine` and :class:`EventDecoder` for one connection.

    Args:
        settings: login, registration and dump options.
        decoder_options: options of the binlog decoder.
        event_types: deliver only events of these classes (``None``: all).
        gtid_state: the GTID state at the start position, when known (resume).
        resume_skip: binlog events after the start already delivered earlier.
        resume_gtid: the GTID of the transaction those events belong to.
        ack_on_receipt: queue the semi-sync ACK of a flagged event as soon as
            it is decoded (``next_item``), not when the driver calls ``ack``.
        random_bytes: randomness for auth nonces (tests inject their own).
    """

    __slots__ = (
        "_ack_on_receipt",
        "_await_gtid_start",
        "_decoder",
        "_decoder_options",
        "_ended",
        "_event_types",
        "_framed",
        "_framed_bytes",
        "_last_checkpoint",
        "_machine",
        "_pending_inner",
        "_resume_gtid",
        "_resume_skip",
        "_seen_since_start",
        "_semi",
        "_t",
    )

    def __init__(
        self,
        settings: RegistrationSettings,
        *,
        decoder_options: DecoderOptions | None = None,
        event_types: tuple[type[Event], ...] | None = None,
        gtid_state: Gtid | None = None,
        resume_skip: int = 0,
        resume_gtid: GtidTriple | None = None,
        ack_on_receipt: bool = False,
        random_bytes: RandomBytes = os.urandom,
    ) -> None:
        self._machine = RegistrationMachine(settings, random_bytes=random_bytes)
        self._decoder_options = decoder_options or DecoderOptions()
        self._decoder: EventDecoder | None = None
        self._event_types = event_types
        self._t = _Tracker()
        start = settings.start
        if gtid_state is None and isinstance(start, Gtid):
            gtid_state = start
        if gtid_state is not None:
            self._t.gtids = {g.domain: g for g in gtid_state.triples}
            self._t.gtid_cache = gtid_state
        if isinstance(start, FilePos):
            self._t.file, self._t.pos = start.file, start.pos
        self._resume_skip = resume_skip
        #: GTID of the interrupted transaction, checked against the re-sent one.
        self._resume_gtid = resume_gtid
        self._ack_on_receipt = ack_on_receipt
        self._seen_since_start = 0
        # A MariaDB GTID start: the primary sends the first file's header events,
        # then an artificial GTID_LIST where the requested GTID state begins. File
        # positions before that are not resume points (they would replay
        # transactions the GTID state excludes).
        self._await_gtid_start = isinstance(start, Gtid) or start == "now"
        self._pending_inner: list[Event] = []
        # Event payloads framed ahead in one go, not yet decoded (next_item).
        self._framed: deque[bytes] = deque()
        self._framed_bytes = 0
        self._semi = False
        self._ended = False
        self._last_checkpoint: Checkpoint | None = None

    def __repr__(self) -> str:
        return f"<ReplicaSession {self._machine!r} at {self._t.file}:{self._t.pos}>"

    # -- state --------------------------------------------------------------------------

    @property
    def machine(self) -> RegistrationMachine:
        """The wire-level state machine (handshake results, negotiated options)."""
        return self._machine

    @property
    def streaming(self) -> bool:
        return self._machine.state is State.STREAMING

    @property
    def flavor(self) -> Flavor:
        return self._machine.flavor

    @property
    def semi_sync(self) -> bool:
        return self._machine.semi_sync

    @property
    def tls_requested(self) -> bool:
        return self._machine.tls_requested

    @property
    def position(self) -> FilePos | None:
        """Where the next event starts, after the last event next_item returned.

        Events framed ahead (``frame_ahead``) and not decoded yet do not count.
        """
        t = self._t
        return FilePos(t.file, t.pos) if t.file else None

    @property
    def gtid_state(self) -> Gtid:
        """GTID state after the last transaction next_item returned (not delivered)."""
        t = self._t
        state = t.gtid_cache
        if state is None:
            state = t.gtid_cache = Gtid.from_domains(t.gtids)
        return state

    # -- sans-I/O interface -------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._machine.receive_data(data)

    def data_to_send(self) -> bytes:
        return self._machine.data_to_send()

    def tls_established(self) -> None:
        self._machine.tls_established()

    def ack(self, item: StreamItem) -> None:
        """Queue the semi-sync ACK of ``item``.

        Raises:
            StateError: semi-sync is not negotiated or the primary did not ask
                for an ACK of this event.
        """
        if not self._machine.semi_sync or not item.needs_ack:
            raise StateError("this event does not need a semi-sync ACK")
        self._machine.send_raw_command(build_semisync_ack(file=item.file, position=item.end))

    def next_item(self) -> StreamItem | Literal[_Signal.NEED_DATA, _Signal.END]:
        """Process buffered bytes; return the next stream item or a signal.

        Raises:
            ServerError: an ERR packet (registration or mid-stream).
            ProtocolError: malformed bytes (MalformedEventError for events).
            ConfigError, UnsupportedError: see :class:`RegistrationMachine`.
        """
        if self._pending_inner:
            return self._inner_item(self._pending_inner.pop(0))
        if self._ended:
            return END
        framed = self._framed
        if framed:
            event_payload = framed.popleft()
            self._framed_bytes -= len(event_payload)
            return self._event_item(event_payload)
        payload = self._machine.next_stream_packet()
        if payload is None:
            return NEED_DATA
        if payload is END_OF_STREAM:
            self._ended = True
            return END
        return self._event_item(payload)

    def decode_framed(self, out: deque[StreamItem], limit: int) -> int:
        """Decode up to ``limit`` events framed ahead into ``out``; return their bytes.

        The same items, in the same order, as that many :meth:`next_item` calls
        while framed events are buffered (it stops where :meth:`next_item`
        has something else to do first).
        """
        framed = self._framed
        if self._pending_inner:
            return 0
        size = 0
        while framed and limit > 0:
            payload = framed.popleft()
            self._framed_bytes -= len(payload)
            item = self._event_item(payload)
            out.append(item)
            size += item.size
            if self._pending_inner:
                break
            limit -= 1
        return size

    def frame_ahead(self, limit: int) -> None:
        """Frame up to ``limit`` more event packets of the received bytes, not decoding them.

        :meth:`next_item` decodes them first, in order. Framed events are
        bytes only, so a driver can count what it holds (``buffered_events``,
        ``buffered_bytes``) and decode just before the consumer asks.
        """
        if limit > 0 and not self._ended:
            payloads = self._machine.next_stream_events(limit)
            if payloads:
                self._framed.extend(payloads)
                self._framed_bytes += sum(map(len, payloads))

    @property
    def buffered_events(self) -> int:
        """Event packets framed ahead and not yet decoded."""
        return len(self._framed)

    @property
    def buffered_bytes(self) -> int:
        """Bytes of the event packets framed ahead and not yet decoded."""
        return self._framed_bytes

    # -- internals ----------------------------------------------------------------------

    def _event_item(self, payload: bytes) -> StreamItem:
        needs_ack = False
        offset = 1  # the 0x00 status byte
        decoder = self._decoder
        if decoder is None:
            decoder = self._decoder = EventDecoder(
                self._decoder_options, checksum_alg=self._machine.checksum_alg
            )
            self._semi = self._machine.semi_sync  # negotiated before the first event
        if self._semi:
            if len(payload) < 3 or payload[1] != SEMI_SYNC_INDICATOR:
                raise ProtocolError("semi-sync negotiated but an event lacks its 0xEF header")
            needs_ack = bool(payload[2] & _SYNC)
            if needs_ack:
                self._machine.expect_sequence_reset()
            offset = 3
        t = self._t
        start = t.pos
        if len(payload) - offset < EVENT_HEADER_LEN:
            raise MalformedEventError(
                f"event packet of {len(payload)} bytes is shorter than an event header",
                position=start,
            )
        # a view, not a copy: the decoder copies out what it keeps (40 MB rows stay one copy)
        event = decoder.decode(memoryview(payload)[offset:], start)
        header = decoder.last_header
        assert header is not None
        _, type_code, _, size, log_pos, flags = header
        if type(event) is TransactionPayloadEvent and event.events:
            self._pending_inner.extend(event.events)

        # Where the event sits in the primary's binlog.
        file = t.file
        artificial = flags & _ARTIFICIAL
        countable = not artificial  # a real event of the binlog: not artificial, no heartbeat
        if log_pos and type_code not in _PLACE_SPECIAL:
            end = t.pos = log_pos  # the common case (the last branch but two, first)
        elif type_code in _HEARTBEAT_CODES:
            end = start  # never written to the binlog; moves nothing
            countable = False
        elif type_code == _ROTATE and isinstance(event, RotateEvent):
            end = log_pos or start + size
            t.file, t.pos = event.next_file, event.position
        elif type_code == _FDE and not log_pos:
            # re-sent FDE of a dump that starts past position 4: not in the stream's place
            end = start
            countable = False
        elif log_pos:
            end = t.pos = log_pos
        elif artificial:
            end = start
        else:
            end = t.pos = start + size  # MariaDB 11.4+: log_pos 0 inside transactions
        if event is not None:
            kind = _KINDS.get(type(event))
            if kind is None:
                kind = _kind_of(type(event))
            if kind != _K_OTHER:
                self._group_update(event, type_code, kind)
        if (
            self._await_gtid_start
            and artificial
            and (type_code == _GTID_LIST or self.flavor is Flavor.MYSQL)
        ):
            self._await_gtid_start = False
        checkpoint = None
        if not t.in_group and t.file and not self._await_gtid_start:
            checkpoint = self._checkpoint()
        skipped = False
        if countable and self._resume_skip:
            skipped = self._skip(event)
        if needs_ack and self._ack_on_receipt:
            self._machine.send_raw_command(build_semisync_ack(file=file, position=end))
        types = self._event_types
        return _new_item(
            event,
            file,
            start,
            end,
            size,
            needs_ack,
            checkpoint,
            countable,
            skipped,
            event is not None and (types is None or isinstance(event, types)),
        )

    def _inner_item(self, event: Event) -> StreamItem:
        # Events unpacked from a MySQL TRANSACTION_PAYLOAD: no place of their own.
        t = self._t
        self._group_update(event, event.type_code, _kind_of(type(event)))
        checkpoint = None if t.in_group else self._checkpoint()
        return StreamItem(
            event,
            t.file,
            t.pos,
            t.pos,
            0,
            checkpoint=checkpoint,
            countable=False,
            deliver=self._wanted(event),
        )

    def _skip(self, event: Event | None) -> bool:
        """Resuming: whether this countable event was delivered before the reconnect."""
        self._seen_since_start += 1
        if self._seen_since_start > self._resume_skip:
            return False
        if (
            isinstance(event, GtidEvent)
            and self._resume_gtid is not None
            and event.triple != self._resume_gtid
        ):
            raise ProtocolError(
                f"after reconnecting, the primary re-sent transaction {event.gtid} "
                f"where {self._resume_gtid} was expected; its binlog changed"
            )
        return True

    def _wanted(self, event: Event) -> bool:
        types = self._event_types
        return types is None or isinstance(event, types)

    def _checkpoint(self) -> Checkpoint:
        """The resume point after the current event (reused while nothing moved)."""
        t = self._t
        last = self._last_checkpoint
        if (
            last is not None
            and last._gtids is t.gtids
            and last._pos == t.pos
            and last._file == t.file
        ):
            return last
        last = self._last_checkpoint = Checkpoint._at(t.file, t.pos, t.gtids, t.gtid_cache)
        return last

    def _group_update(self, event: Event, type_code: int, kind: int) -> None:
        """Transaction boundaries: ``kind`` is what ``type(event)`` means for them."""
        t = self._t
        if kind == _K_OTHER:
            return
        if kind == _K_END:  # XID, XA PREPARE (most frequent first)
            if t.in_group:
                self._end_group()
            return
        if kind == _K_GTID:
            assert isinstance(event, GtidEvent)
            t.in_group = True
            t.standalone = bool(event.flags2 & GtidEvent.FL_STANDALONE)
            t.group_gtid = event.triple
            return
        if type_code in _MYSQL_GTID_CODES:
            return  # MySQL: BEGIN follows (or a DDL, which stands alone)
        if kind == _K_GTID_LIST:
            assert isinstance(event, GtidListEvent)
            if not t.in_group:
                missing = [g for g in event.gtids if g.domain not in t.gtids]
                if missing:
                    # a new map, never an update in place: checkpoints hold the old one
                    t.gtids = {**t.gtids, **{g.domain: g for g in missing}}
                    t.gtid_cache = None
            return
        if kind == _K_NEUTRAL:
            return
        if kind == _K_QUERY:
            assert isinstance(event, QueryEvent)
            query = event.query.strip().upper()
            if not t.in_group:
                if query == "BEGIN" or query.startswith("XA START"):
                    t.in_group = True
                    t.standalone = False
                    t.group_gtid = None
                return  # a statement outside a group is its own boundary
            if t.standalone or query.startswith(_GROUP_END_QUERIES):
                self._end_group()

    def _end_group(self) -> None:
        t = self._t
        g = t.group_gtid
        if g is not None:
            # a new map, never an update in place: checkpoints hold the old one
            gtids = t.gtids.copy()
            gtids[g.domain] = g
            t.gtids = gtids
            t.gtid_cache = None
        t.in_group = False
        t.standalone = False
        t.group_gtid = None
