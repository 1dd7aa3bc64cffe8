"""One replication connection, sans I/O: wire protocol + binlog decoder + positions.

Bytes in (``receive_data``), stream items out (``next_item``), bytes out
(``data_to_send``). No sockets, clocks, threads or event loops: the asyncio
driver in :mod:`replica_client.aio` (or any other driver) moves the bytes.

For every event packet of the stream the session

* strips the 0x00 status byte and, when semi-sync was negotiated, the 2-byte
  semi-sync header (0xEF, flag) and remembers whether the primary wants an ACK;
* decodes the event with :class:`~replica_client.binlog.decoder.EventDecoder`;
* asks its :class:`~replica_client.binlog.transactions.TransactionTracker`
  where the event sits in the primary's binlog and whether it ends a
  transaction; after a boundary the item carries the tracker's
  :class:`~replica_client.binlog.transactions.Checkpoint`: the file position
  and GTID state from which the stream can resume without losing or repeating
  a transaction;
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
from enum import Enum, auto
from typing import Final, Literal

from .accel import constructor
from .binlog.constants import (
    EVENT_HEADER_LEN,
    TRANSACTION_START_TYPES,
    BinlogChecksumAlg,
    EventFlag,
    EventType,
)
from .binlog.decoder import EventDecoder
from .binlog.events import (
    Event,
    GtidEvent,
    GtidListEvent,
    MysqlGtidEvent,
    TransactionPayloadEvent,
    event_type_name,
)
from .binlog.header import EventHeader
from .binlog.table_bindings import TableDefinitions
from .binlog.transactions import PLACE_SPECIAL, Checkpoint, TransactionTracker
from .config import DecoderOptions
from .delivery import ANY_EVENT, Delivery, ResumePoint, StreamItem
from .errors import MalformedEventError, ProtocolError, StateError
from .position import FilePos, Gtid, MysqlGtidSet
from .receipt import receipt_checked
from .wire.auth import RandomBytes
from .wire.packets import (
    EVENT_OFFSET,
    SEMI_SYNC_EVENT_OFFSET,
    build_semisync_ack,
    semi_sync_ack_requested,
)
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
    "Delivery",
    "ReplicaSession",
    "ResumePoint",
    "StreamItem",
]


class _Signal(Enum):
    NEED_DATA = auto()
    END = auto()


#: ``next_item()``: more bytes are needed.
NEED_DATA: Final = _Signal.NEED_DATA
#: ``next_item()``: a non-blocking dump reached the end of the binlog.
END: Final = _Signal.END

_GTID_LIST: Final = int(EventType.GTID_LIST_EVENT)
_ARTIFICIAL: Final = int(EventFlag.ARTIFICIAL)

#: StreamItem(...) with every field, without the generated __init__ (see accel.constructor).
_new_item: Final = constructor(StreamItem)


def _short_event(payload: bytes, position: int) -> MalformedEventError:
    return MalformedEventError(
        f"event packet of {len(payload)} bytes is shorter than an event header",
        position=position,
    )


class ReplicaSession:
    """Glues :class:`RegistrationMachine` and :class:`EventDecoder` for one connection.

    Args:
        settings: login, registration and dump options.
        decoder_options: options of the binlog decoder.
        event_types: deliver only events of these classes (``None``: all).
        gtid_state: the GTID state at the start position, when known (resume).
        resume_skip: the type codes of the binlog events after the start that were
            delivered before (they come again and are skipped; each must match).
        resume_gtid: the GTID of the transaction those events belong to.
        ack_on_receipt: queue the semi-sync ACK of a flagged event as soon as
            it is received and checked, not when the driver calls ``ack``:
            when :meth:`frame_ahead` frames it after events whose checksums
            it verified and whose place is known, before decoding them;
            otherwise when it is decoded.
        keep_raw: give every item the event's bytes (``StreamItem.raw``).
        definitions: what completes TABLE_MAPs the binlog leaves incomplete (the
            driver's schema tracker); each checkpoint keeps its ``state``.
        random_bytes: randomness for auth nonces (tests inject their own).
    """

    __slots__ = (
        "_ack_on_receipt",
        "_await_gtid_start",
        "_decoder",
        "_decoder_options",
        "_definitions",
        "_early_acks",
        "_ended",
        "_event_types",
        "_framed",
        "_framed_bytes",
        "_keep_raw",
        "_machine",
        "_pending_inner",
        "_resume_gtid",
        "_resume_skip",
        "_seen_since_start",
        "_semi",
        "_skip_from_gtid",
        "_t",
    )

    def __init__(
        self,
        settings: RegistrationSettings,
        *,
        decoder_options: DecoderOptions | None = None,
        event_types: tuple[type[Event], ...] | None = None,
        gtid_state: Gtid | MysqlGtidSet | None = None,
        resume_skip: tuple[int, ...] = (),
        resume_gtid: str | None = None,
        ack_on_receipt: bool = False,
        keep_raw: bool = False,
        definitions: TableDefinitions | None = None,
        random_bytes: RandomBytes = os.urandom,
    ) -> None:
        self._machine = RegistrationMachine(settings, random_bytes=random_bytes)
        self._decoder_options = decoder_options or DecoderOptions()
        self._decoder: EventDecoder | None = None
        self._definitions = definitions
        self._event_types = event_types
        start = settings.start
        if gtid_state is None and isinstance(start, Gtid | MysqlGtidSet):
            gtid_state = start
        self._t = TransactionTracker(start if isinstance(start, FilePos) else None, gtid_state)
        self._t.definitions = definitions
        self._resume_skip = resume_skip
        # A dump by GTID re-sends its header events before the interrupted
        # transaction: counting starts at the first GTID event.
        self._skip_from_gtid = bool(resume_skip) and isinstance(start, Gtid | MysqlGtidSet)
        #: GTID of the interrupted transaction, checked against the re-sent one.
        self._resume_gtid = resume_gtid
        self._ack_on_receipt = ack_on_receipt
        self._keep_raw = keep_raw
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
        # receipt: flagged event payloads ACKed when framed, not decoded yet
        self._early_acks: deque[bytes] = deque()
        self._semi = False
        self._ended = False

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
    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """GTID state after the last transaction next_item returned (not delivered)."""
        return self._t.gtid_state

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
        machine = self._machine
        payload = machine.next_stream_packet()
        if payload is None:
            return NEED_DATA
        if payload is END_OF_STREAM:
            self._ended = True
            return END
        if machine.semi_sync and semi_sync_ack_requested(payload):
            machine.expect_sequence_reset()
        return self._event_item(payload)

    @property
    def ended(self) -> bool:
        """The dump ended (a non-blocking dump's EOF): no item follows."""
        return self._ended and not self._pending_inner

    def next_items(self, out: deque[StreamItem], limit: int) -> int:
        """Append up to ``limit`` next items to ``out``; return their bytes.

        The one call of both drivers: events framed ahead (:meth:`frame_ahead`,
        by the driver or here once the dump streams) are decoded in one loop
        where nothing else is pending, other packets (the handshake's) one by
        one. The items are
        :meth:`next_item`'s, in the same order. Nothing appended and not
        :attr:`ended`: more bytes are needed. On an error the items before
        the bad event are in ``out``.
        """
        before = len(out)
        size = 0
        framed = self._framed
        while (room := limit - (len(out) - before)) > 0:
            if framed and not self._pending_inner:
                size += self._decode_framed(out, room)
                continue
            item = self.next_item()
            if item is NEED_DATA or item is END:
                break
            out.append(item)
            size += item.size
            if not self._pending_inner and self._machine.state is State.STREAMING:
                self.frame_ahead(room - 1)  # what follows in one loop
        return size

    def _decode_framed(self, out: deque[StreamItem], limit: int) -> int:
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
            if (
                self._decoder is not None
                and not self._semi
                and not self._resume_skip
                and not self._await_gtid_start
            ):
                return size + self._decode_plain(out, limit)
            payload = framed.popleft()
            self._framed_bytes -= len(payload)
            item = self._event_item(payload)
            out.append(item)
            size += item.size
            if self._pending_inner:
                break
            limit -= 1
        return size

    def _decode_plain(self, out: deque[StreamItem], limit: int) -> int:
        """:meth:`_decode_framed` once the first event is decoded, for a session
        that neither ACKs (no semi-sync), skips (not resuming) nor waits for its
        GTID start: :meth:`_event_item` of such an event, in one loop (a test
        holds the items equal to :meth:`next_item`'s).
        """
        framed = self._framed
        decoder = self._decoder
        assert decoder is not None
        decode = decoder.decode
        t = self._t
        step = t.step
        types = self._event_types
        keep_raw = self._keep_raw
        size = taken = 0
        try:
            while framed and limit > 0:
                payload = framed.popleft()
                taken += len(payload)
                if len(payload) <= EVENT_HEADER_LEN:
                    raise _short_event(payload, t.pos)
                event = decode(memoryview(payload)[EVENT_OFFSET:], t.pos)
                header = decoder.last_header
                assert header is not None
                file, start, end, countable, boundary = step(header, event)
                out.append(
                    _new_item(
                        event,
                        file,
                        start,
                        end,
                        header[3],
                        False,
                        t.checkpoint() if boundary and t.file else None,
                        countable,
                        False,
                        # (_wanted, inline: this loop runs for every event)
                        event is not None and (types is None or isinstance(event, types)),
                        payload[EVENT_OFFSET:] if keep_raw else None,
                    )
                )
                size += header[3]
                if type(event) is TransactionPayloadEvent and event.events:
                    self._pending_inner.extend(event.events)
                    break
                limit -= 1
        finally:
            self._framed_bytes -= taken
        return size

    def frame_ahead(self, limit: int) -> None:
        """Frame up to ``limit`` more event packets of the received bytes, not decoding them.

        :meth:`next_item` decodes them first, in order. Framed events are
        bytes only, so a driver can count what it holds (``buffered_events``,
        ``buffered_bytes``) and decode just before the consumer asks.
        """
        if limit <= 0 or self._ended:
            return
        machine = self._machine
        framed = self._framed
        semi = machine.semi_sync
        # receipt: ACK before decoding while every framed event is checked here
        early = semi and self._ack_on_receipt and not framed and bool(self._t.file)
        while True:
            payloads = machine.next_stream_events(limit)
            if not payloads:
                return
            framed.extend(payloads)
            self._framed_bytes += sum(map(len, payloads))
            last = receipt_checked(payloads, machine.crc32) if early else None
            early = last is not None
            if not (semi and semi_sync_ack_requested(payloads[-1])):
                return  # framing stopped for another reason than an event to ACK
            machine.expect_sequence_reset()
            if last is not None:
                self._ack_early(payloads[-1], last)
            limit -= len(payloads)
            if limit <= 0:
                return

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
        offset = EVENT_OFFSET
        decoder = self._decoder
        if decoder is None:
            alg = BinlogChecksumAlg.CRC32 if self._machine.crc32 else BinlogChecksumAlg.OFF
            decoder = self._decoder = EventDecoder(
                self._decoder_options, checksum_alg=alg, definitions=self._definitions
            )
            self._semi = self._machine.semi_sync  # negotiated before the first event
        if self._semi:
            requested = semi_sync_ack_requested(payload)
            if requested is None:
                raise ProtocolError("semi-sync negotiated but an event lacks its 0xEF header")
            needs_ack = requested  # (framing allowed the primary's id reset after it)
            offset = SEMI_SYNC_EVENT_OFFSET
        t = self._t
        if len(payload) - offset < EVENT_HEADER_LEN:
            raise _short_event(payload, t.pos)
        # a view, not a copy: the decoder copies out what it keeps (40 MB rows stay one copy)
        event = decoder.decode(memoryview(payload)[offset:], t.pos)
        header = decoder.last_header
        assert header is not None
        type_code, size, flags = header[1], header[3], header[5]
        if type(event) is TransactionPayloadEvent and event.events:
            self._pending_inner.extend(event.events)
        file, start, end, countable, boundary = t.step(header, event)
        if self._await_gtid_start and (
            (flags & _ARTIFICIAL and (type_code == _GTID_LIST or self.flavor is Flavor.MYSQL))
            or (type(event) is GtidListEvent and self._reached(event))
        ):
            self._await_gtid_start = False
        checkpoint = None
        if boundary and t.file and not self._await_gtid_start:
            checkpoint = t.checkpoint()
        skipped = False
        if countable and self._resume_skip:
            if self._skip_from_gtid and type_code not in TRANSACTION_START_TYPES:
                # a dump by GTID sends its header events before the interrupted
                # transaction; a later restart by GTID sends them again: not counted
                countable = False
            else:
                skipped = self._skip(event, type_code)
        if needs_ack and self._ack_on_receipt:
            early = self._early_acks
            if early and early[0] is payload:
                early.popleft()  # ACKed when it was framed
            else:
                self._machine.send_raw_command(build_semisync_ack(file=file, position=end))
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
            event is not None and self._wanted(event),
            bytes(payload[offset:]) if self._keep_raw else None,
        )

    def _reached(self, event: GtidListEvent) -> bool:
        """A MariaDB GTID start: the file's own GTID_LIST (not an artificial one) says its
        events come after the requested state, as when the state ends exactly where a
        file begins (the primary then sends no artificial GTID_LIST)."""
        start = self._machine.start
        if not isinstance(start, Gtid):
            return False
        listed = {g.domain: g.seq for g in event.gtids}
        return all(listed.get(t.domain, -1) >= t.seq for t in start.triples)

    def _ack_early(self, payload: bytes, header: EventHeader) -> None:
        """ACK a flagged event (``payload``, whose ``header`` was checked) framed after
        checked events only, before decoding them.

        The tracker's file is the event's own (no ROTATE or FORMAT_DESCRIPTION
        among them) and its end is its header's ``log_pos``: the place
        :meth:`TransactionTracker.step` would give it.
        """
        _, type_code, _, _, log_pos, _ = header
        if log_pos and type_code not in PLACE_SPECIAL:
            self._machine.send_raw_command(build_semisync_ack(file=self._t.file, position=log_pos))
            self._early_acks.append(payload)

    def _inner_item(self, event: Event) -> StreamItem:
        # Events unpacked from a MySQL TRANSACTION_PAYLOAD: no place of their own.
        t = self._t
        checkpoint = t.checkpoint() if t.observe(event) else None
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

    def _skip(self, event: Event | None, type_code: int) -> bool:
        """Resuming: whether this countable event was delivered before the reconnect.

        The re-sent events must be the ones delivered: the same transaction (GTID)
        and the same event types in the same order; anything else means the
        binlog (or, after a failover, the new primary's copy) differs.
        """
        index = self._seen_since_start
        expected = self._resume_skip
        if index >= len(expected):
            return False
        self._skip_from_gtid = False
        self._seen_since_start = index + 1
        group = self._resume_gtid
        if (
            group is not None
            and isinstance(event, GtidEvent | MysqlGtidEvent)
            and event.gtid != group
        ):
            raise ProtocolError(
                f"after reconnecting, the primary re-sent transaction {event.gtid} "
                f"where {group} was expected; its binlog differs from what was delivered"
            )
        if expected[index] not in (type_code, ANY_EVENT):
            raise ProtocolError(
                f"after reconnecting, event {index + 1} of the interrupted transaction "
                f"{group or ''} is a {event_type_name(type_code)} where a "
                f"{event_type_name(expected[index])} was delivered; the primary's binlog "
                "differs from what was delivered"
            )
        if index + 1 == len(expected):
            self._resume_skip = ()  # all re-sent: what follows is new (and the one loop's)
        return True

    def _wanted(self, event: Event) -> bool:
        types = self._event_types
        return types is None or isinstance(event, types)
