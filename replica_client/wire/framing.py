"""MySQL packet framing. No I/O: feed bytes, take whole payloads; frame payloads to send.

Layout of one chunk (MariaDB KB "0 - Packet"):

    payload_length u24 LE | sequence_id u8 | payload[payload_length]

A payload of 2**24-1 bytes or more is sent as several chunks; every chunk of
exactly ``MAX_CHUNK`` bytes is followed by another one (possibly empty), so a
payload of exactly ``MAX_CHUNK`` bytes ends with an empty chunk. Sequence ids
increase by one per chunk, modulo 256, within one command exchange; a new
command starts again at 0.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from ..accel import speedups
from ..errors import PacketSequenceError, PacketTooLargeError
from .packets import semi_sync_ack_requested

__all__ = ["ACCELERATED", "DEFAULT_MAX_PACKET_SIZE", "MAX_CHUNK", "PacketFramer", "frame_payload"]

#: A chunk this long means "another chunk follows".
MAX_CHUNK: Final = 0xFF_FF_FF
#: Largest reassembled payload accepted by default: 1 GiB + room for headers.
DEFAULT_MAX_PACKET_SIZE: Final = (1 << 30) + 64

_HDR: Final = struct.Struct("<HBB")  # payload length (low 16 bits, high 8 bits), sequence id
_unpack_hdr: Final = _HDR.unpack_from
_pack_hdr: Final = _HDR.pack
# Compact the receive buffer only once the consumed prefix is this large and at
# least half of the buffer: ``del buf[:n]`` moves the tail, so doing it per
# packet would make a burst of small packets quadratic.
_COMPACT_MIN: Final = 1 << 16

_FramePacket = Callable[[bytearray, int, int, int], "bytes | None"]


def _load_frame_packet() -> _FramePacket | None:
    # The compiled accelerator's frame_packet(buf, pos, seq, max_payload): the
    # single-chunk fast path of next_packet in one call, None for every other
    # case.
    fn: _FramePacket | None = getattr(speedups(), "frame_packet", None)
    return fn


_frame_packet: Final = _load_frame_packet()
_FrameEvents = Callable[
    [bytearray, int, int, int, bool, int, bool], "tuple[list[bytes], int, int]"
]


def _frame_events_py(
    buf: bytearray,
    pos: int,
    seq: int,
    max_payload: int,
    semi_sync: bool,
    limit: int,
    rows: bool = False,
) -> tuple[list[bytes], int, int]:
    # The loop of the accelerator's frame_events (see PacketFramer.next_events and
    # next_rows).
    payloads: list[bytes] = []
    size = len(buf)
    with memoryview(buf) as view:  # released before buf can be resized
        while size - pos >= 4 and len(payloads) < limit:
            low, high, chunk_seq = _unpack_hdr(buf, pos)
            length = low | (high << 16)
            end = pos + 4 + length
            if (
                length >= MAX_CHUNK
                or length > max_payload
                or chunk_seq != seq
                or end > size
                or length == 0
                or (
                    # a row: not an EOF (0xFE, under 9 bytes) or ERR (0xFF) packet
                    (buf[pos + 4] == 0xFF or (buf[pos + 4] == 0xFE and length < 9))
                    if rows
                    else buf[pos + 4] != 0  # an event: the 0x00 status byte
                )
            ):
                break
            payload = view[pos + 4 : end].tobytes()
            payloads.append(payload)
            pos = end
            seq = (seq + 1) & 0xFF
            if semi_sync and semi_sync_ack_requested(payload):
                break  # the primary may restart its ids after an event to ACK
    return payloads, pos, seq


# frame_events(buf, pos, seq, max_payload, semi_sync, limit): a run of whole
# event packets in one call (see PacketFramer.next_events).
_frame_events: Final[_FrameEvents] = getattr(speedups(), "frame_events", _frame_events_py)
#: True when the single-chunk framing fast path runs in the compiled accelerator.
ACCELERATED: Final = _frame_packet is not None


def frame_payload(payload: bytes, seq: int) -> tuple[bytes, int]:
    """Frame ``payload`` as chunks starting at sequence id ``seq``.

    Returns the bytes to send and the sequence id after the last chunk.
    """
    size = len(payload)
    if size < MAX_CHUNK:
        return _pack_hdr(size & 0xFFFF, size >> 16, seq) + payload, (seq + 1) & 0xFF
    parts: list[bytes] = []
    view = memoryview(payload)
    pos = 0
    while True:
        n = min(MAX_CHUNK, size - pos)
        parts.append(_pack_hdr(n & 0xFFFF, n >> 16, seq))
        parts.append(view[pos : pos + n].tobytes())
        seq = (seq + 1) & 0xFF
        pos += n
        if n < MAX_CHUNK:
            break
    view.release()
    return b"".join(parts), seq


class PacketFramer:
    """Turns a byte stream into logical packet payloads, and frames outgoing ones.

    One sequence counter is shared by both directions, as in the protocol: a
    command resets it to 0, the server's reply continues from there, and a
    client reply inside the same exchange (auth data) takes the next id.
    """

    __slots__ = ("_alt_seq", "_buf", "_max_payload", "_parts", "_parts_len", "_pos", "_seq")

    def __init__(self, *, max_payload: int = DEFAULT_MAX_PACKET_SIZE) -> None:
        self._buf = bytearray()
        self._pos = 0  # start of the unconsumed bytes in _buf
        self._parts: list[bytes] = []  # chunks of a payload still being reassembled
        self._parts_len = 0
        self._seq = 0  # the sequence id the next chunk (either direction) must carry
        self._alt_seq = -1  # a second id accepted for the next chunk only (see allow_reset)
        self._max_payload = max_payload

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as payloads."""
        return len(self._buf) - self._pos + self._parts_len

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes read from the transport."""
        self._buf += data

    def command(self, payload: bytes) -> bytes:
        """Frame ``payload`` as a new command (sequence id 0)."""
        out, self._seq = frame_payload(payload, 0)
        return out

    def reply(self, payload: bytes) -> bytes:
        """Frame ``payload`` as the client's next packet in the current exchange."""
        out, self._seq = frame_payload(payload, self._seq)
        return out

    def allow_reset(self, seq: int = 1) -> None:
        """Accept ``seq`` as well as the expected id for the next chunk.

        After a semi-sync event that asks for an ACK, the primary restarts its
        numbering as if the replica's ACK (sequence 0) had been read, so the next
        event packet carries id 1 (MariaDB ``Repl_semi_sync_master::flush_net``).
        """
        self._alt_seq = seq

    def next_events(self, semi_sync: bool, limit: int) -> list[bytes]:
        """Up to ``limit`` whole binlog-event packets buffered, in order, in one go.

        Takes single-chunk packets with the expected sequence ids whose payload
        starts with the 0x00 status byte, and stops before anything else (and,
        with ``semi_sync``, after an event that asks for an ACK; the first packet
        may carry the id :meth:`allow_reset` allowed). An empty list means
        "nothing taken": :meth:`next_packet` frames, checks and reports
        every other packet, as it would have for these.
        """
        if self._parts or limit <= 0:
            return []
        buf = self._buf
        pos = self._pos
        seq = self._seq
        if self._alt_seq != -1:
            # the first chunk may carry the reset id (allow_reset) instead
            if len(buf) - pos < 4:
                return []
            if buf[pos + 3] == self._alt_seq:
                seq = self._alt_seq
        payloads, pos, seq = _frame_events(
            buf, pos, seq, self._max_payload, semi_sync, limit, False
        )
        if payloads:
            self._alt_seq = -1
            self._pos = pos
            self._seq = seq
            self._compact()
        return payloads

    def next_rows(self, limit: int) -> list[bytes]:
        """Up to ``limit`` whole row packets of a text result set, in order, in one go.

        Takes single-chunk packets with the expected sequence ids that are neither
        EOF nor ERR packets, and stops before anything else: :meth:`next_packet`
        frames, checks and reports every other packet (a row split in chunks, the
        result set's end).
        """
        if self._parts or limit <= 0:
            return []
        payloads, pos, seq = _frame_events(
            self._buf, self._pos, self._seq, self._max_payload, False, limit, True
        )
        if payloads:
            self._alt_seq = -1
            self._pos = pos
            self._seq = seq
            self._compact()
        return payloads

    def next_packet(self) -> bytes | None:
        """Return the next complete payload, or None when more bytes are needed.

        Raises:
            PacketSequenceError: a chunk carries an unexpected sequence id.
            PacketTooLargeError: the payload would exceed ``max_payload``.
        """
        buf = self._buf
        pos = self._pos
        if _frame_packet is not None:
            if not self._parts:
                chunk = _frame_packet(buf, pos, self._seq, self._max_payload)
                if chunk is not None:
                    end = pos + 4 + len(chunk)
                    self._alt_seq = -1
                    self._seq = (self._seq + 1) & 0xFF
                    self._pos = end
                    if end == len(buf) or (end >= _COMPACT_MIN and end * 2 >= len(buf)):
                        del buf[:end]
                        self._pos = 0
                    return chunk
        elif len(buf) - pos >= 4 and not self._parts:
            # Fast path: one whole single-chunk packet with the expected id. Anything
            # else (incomplete, split, too large, other id) takes the full loop below.
            low, high, seq = _unpack_hdr(buf, pos)
            length = low | (high << 16)
            end = pos + 4 + length
            if (
                end <= len(buf)
                and length < MAX_CHUNK
                and seq == self._seq
                and length <= self._max_payload
            ):
                self._alt_seq = -1
                self._seq = (seq + 1) & 0xFF
                view = memoryview(buf)
                chunk = view[pos + 4 : end].tobytes()  # the one copy of this packet
                view.release()  # before buf can be resized
                self._pos = end
                if end == len(buf) or (end >= _COMPACT_MIN and end * 2 >= len(buf)):
                    del buf[:end]
                    self._pos = 0
                return chunk
        try:
            while len(buf) - self._pos >= 4:
                pos = self._pos
                low, high, seq = _unpack_hdr(buf, pos)
                length = low | (high << 16)
                if self._parts_len + length > self._max_payload:
                    raise PacketTooLargeError(self._parts_len + length, self._max_payload)
                end = pos + 4 + length
                if len(buf) < end:
                    return None  # chunk body not complete yet
                if seq not in (self._seq, self._alt_seq):
                    raise PacketSequenceError(expected=self._seq, received=seq)
                self._alt_seq = -1
                self._seq = (seq + 1) & 0xFF
                with memoryview(buf) as view:  # released before buf can be resized
                    chunk = view[pos + 4 : end].tobytes()  # the one copy of this chunk
                self._pos = end
                if length < MAX_CHUNK and not self._parts:
                    return chunk  # common case: a single chunk
                self._parts_len += length
                self._parts.append(chunk)
                if length == MAX_CHUNK:
                    continue  # more chunks follow
                payload = b"".join(self._parts)
                self._parts.clear()
                self._parts_len = 0
                return payload
            return None
        finally:
            self._compact()

    def _compact(self) -> None:
        pos = self._pos
        if pos and (pos == len(self._buf) or (pos >= _COMPACT_MIN and pos * 2 >= len(self._buf))):
            del self._buf[:pos]
            self._pos = 0
