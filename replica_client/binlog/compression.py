"""Compressed binlog events: MariaDB compressed events and MySQL transaction payloads.

No I/O: bytes in, bytes out. Everything here has an explicit output size limit so
a corrupt or hostile length cannot make us allocate without bound.

MariaDB (``log_bin_compress=ON``, types 165-171) compresses part of one event with
zlib. What is compressed (server ``sql/log_event.cc``: ``query_event_uncompress``,
``row_log_event_uncompress``, ``binlog_buf_uncompress``,
``binlog_get_uncompress_len``):

* QUERY_COMPRESSED_EVENT (165): only the query text. Header, post-header, status
  variables and the NUL-terminated default database stay plain.
* WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT(_V1) (166-171): only the row data. The
  post-header (table id, flags; for the v2 types 169-171 also the extra-data block),
  the column count and the column bitmap(s) -- two for UPDATE -- stay plain.

The compressed part runs to the end of the event body (before the CRC32 trailer)::

    header:u8 = 0x80 | algorithm << 4 | lenlen    (algorithm 0 = zlib; lenlen 1..4)
    uncompressed length: lenlen bytes, big-endian
    zlib stream (RFC 1950, as written by zlib's compress())

:func:`uncompress_query_event` / :func:`uncompress_rows_event` rebuild the plain
event the server itself rebuilds (QUERY_EVENT / WRITE_ROWS_EVENT[_V1] ...), with a
new length and -- when the binlog has checksums -- a fresh CRC32 over the new
bytes. Verify the original event's CRC before calling them.

MySQL TRANSACTION_PAYLOAD_EVENT (type 40, ``binlog_transaction_compression=ON``;
``libbinlogevents`` ``Transaction_payload_event``): the body is a list of
``type, length, value`` fields, each a length-encoded integer, ended by type 0;
then the payload. Field types: 1 = compressed payload size, 2 = compression type
(0 = ZSTD, 255 = NONE), 3 = uncompressed size; unknown types are skipped by their
length. The uncompressed payload is whole events back to back, with normal 19-byte
headers and WITHOUT CRC32 trailers (:func:`split_payload_events`).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Final

import zstandard

from replica_client.codec import read_lenenc_int
from replica_client.errors import LimitExceededError, MalformedEventError

__all__ = [
    "COMPRESSION_NONE",
    "COMPRESSION_ZSTD",
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "MARIADB_COMPRESSED_TYPES",
    "TRANSACTION_PAYLOAD_EVENT",
    "TransactionPayload",
    "decompress_payload",
    "mariadb_uncompressed_length",
    "parse_transaction_payload",
    "split_payload_events",
    "uncompress_mariadb",
    "uncompress_query_event",
    "uncompress_rows_event",
    "uncompressed_type",
]

#: 1 GiB: MariaDB's max_allowed_packet ceiling, and what a replica accepts.
DEFAULT_MAX_UNCOMPRESSED_SIZE: Final = 1 << 30

QUERY_EVENT: Final = 2
QUERY_COMPRESSED_EVENT: Final = 165
TRANSACTION_PAYLOAD_EVENT: Final = 40

#: compressed type -> the plain type the event becomes once uncompressed
MARIADB_COMPRESSED_TYPES: Final = {
    165: 2,  # QUERY_COMPRESSED_EVENT -> QUERY_EVENT
    166: 23,  # WRITE_ROWS_COMPRESSED_EVENT_V1 -> WRITE_ROWS_EVENT_V1
    167: 24,  # UPDATE_ROWS_COMPRESSED_EVENT_V1 -> UPDATE_ROWS_EVENT_V1
    168: 25,  # DELETE_ROWS_COMPRESSED_EVENT_V1 -> DELETE_ROWS_EVENT_V1
    169: 30,  # WRITE_ROWS_COMPRESSED_EVENT -> WRITE_ROWS_EVENT (v2)
    170: 31,  # UPDATE_ROWS_COMPRESSED_EVENT -> UPDATE_ROWS_EVENT
    171: 32,  # DELETE_ROWS_COMPRESSED_EVENT -> DELETE_ROWS_EVENT
}
_UPDATE_TYPES: Final = frozenset({167, 170})

COMPRESSION_ZSTD: Final = 0
COMPRESSION_NONE: Final = 255

_HEADER_LEN: Final = 19
_TYPE_OFFSET: Final = 4
_LEN_OFFSET: Final = 9
_CRC_LEN: Final = 4
_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_EVENT_HEADER: Final = struct.Struct("<IBIIIH")

# Query post-header (MariaDB QUERY_HEADER_LEN = 13): thread id u32, exec time u32,
# db length u8, error code u16, status-vars length u16.
_QUERY_POST_HEADER_LEN: Final = 13
_Q_DB_LEN_OFFSET: Final = 8
_Q_STATUS_VARS_LEN_OFFSET: Final = 11
_ROWS_HEADER_LEN_V1: Final = 8
_ROWS_HEADER_LEN_V2: Final = 10


def uncompressed_type(type_code: int) -> int:
    """The plain event type a MariaDB compressed event type stands for."""
    try:
        return MARIADB_COMPRESSED_TYPES[type_code]
    except KeyError:
        raise MalformedEventError(
            f"event type {type_code} is not a MariaDB compressed event", event_type=type_code
        ) from None


def _check_limit(size: int, max_size: int, what: str) -> None:
    if size > max_size:
        raise LimitExceededError(
            f"{what} declares {size} uncompressed bytes, more than the limit of "
            f"{max_size} (raise max_size if this is expected)"
        )


def mariadb_uncompressed_length(
    view: bytes | bytearray | memoryview, pos: int, end: int | None = None
) -> int:
    """Read the header byte and big-endian length of a MariaDB compressed block.

    Mirrors ``binlog_get_uncompress_len``: the top three bits must be ``100``
    (compressed, algorithm 0 = zlib), the low three bits give 1..4 length bytes; a
    zero length is invalid.
    """
    if end is None:
        end = len(view)
    if pos >= end:
        raise MalformedEventError("compressed block is empty", offset=pos)
    header = view[pos]
    if header & 0x80 == 0:
        raise MalformedEventError(
            f"compressed block header 0x{header:02x} lacks the compressed flag", offset=pos
        )
    algorithm = (header >> 4) & 0x07
    if algorithm != 0:
        raise MalformedEventError(
            f"compressed block uses algorithm {algorithm}; only zlib (0) exists", offset=pos
        )
    lenlen = header & 0x07
    if not 1 <= lenlen <= 4:
        raise MalformedEventError(
            f"compressed block length has {lenlen} bytes; expected 1..4", offset=pos
        )
    if pos + 1 + lenlen > end:
        raise MalformedEventError("truncated compressed block header", offset=pos)
    length = int.from_bytes(view[pos + 1 : pos + 1 + lenlen], "big")
    if length == 0:
        raise MalformedEventError("compressed block declares 0 bytes", offset=pos)
    return length


def uncompress_mariadb(
    view: bytes | bytearray | memoryview,
    pos: int,
    end: int,
    *,
    max_size: int = DEFAULT_MAX_UNCOMPRESSED_SIZE,
) -> bytes:
    """Uncompress the MariaDB compressed block in ``view[pos:end]``.

    ``end`` is where the compressed bytes stop (the CRC32 trailer, or the end of the
    event without checksums). Raises :class:`MalformedEventError` on a bad header,
    corrupt zlib data, trailing bytes or a length mismatch, and
    :class:`~replica_client.errors.LimitExceededError` if the declared size exceeds
    ``max_size``.
    """
    if not 0 <= pos <= end <= len(view):
        raise MalformedEventError(f"bad compressed block bounds {pos}..{end}", offset=pos)
    length = mariadb_uncompressed_length(view, pos, end)
    _check_limit(length, max_size, "MariaDB compressed event")
    start = pos + 1 + (view[pos] & 0x07)
    inflater = zlib.decompressobj()
    try:
        # max_length = length + 1 lets us see a stream that is longer than declared
        # without inflating all of it.
        out = inflater.decompress(view[start:end], length + 1)
    except zlib.error as exc:
        raise MalformedEventError(
            f"corrupt zlib data in compressed event: {exc}", offset=start
        ) from None
    if len(out) != length or not inflater.eof:
        if len(out) > length:
            problem = "holds more"
        elif inflater.eof:
            problem = "ends early"
        else:
            problem = "is truncated"
        raise MalformedEventError(
            f"compressed event declares {length} bytes but the zlib stream {problem}",
            offset=start,
        )
    if inflater.unused_data or inflater.unconsumed_tail:
        raise MalformedEventError("bytes after the end of the zlib stream", offset=start)
    return out


def _rebuild(
    event: bytes | bytearray | memoryview,
    split: int,
    new_type: int,
    checksum: bool,
    max_size: int,
) -> bytes:
    """Plain head + uncompressed tail, new type, new length, new CRC."""
    end = len(event) - (_CRC_LEN if checksum else 0)
    if split >= end:
        raise MalformedEventError("compressed event has no compressed data", offset=split)
    body = uncompress_mariadb(event, split, end, max_size=max_size)
    out = bytearray(event[:split])
    out += body
    new_len = len(out) + (_CRC_LEN if checksum else 0)
    out[_TYPE_OFFSET] = new_type
    _U32.pack_into(out, _LEN_OFFSET, new_len)
    if checksum:
        out += _U32.pack(zlib.crc32(out))
    return bytes(out)


def _event_length(event: bytes | bytearray | memoryview, checksum: bool) -> int:
    if len(event) < _HEADER_LEN + (_CRC_LEN if checksum else 0):
        raise MalformedEventError("event shorter than its header")
    declared: int = _U32.unpack_from(event, _LEN_OFFSET)[0]
    if declared != len(event):
        raise MalformedEventError(f"event length field says {declared} bytes, {len(event)} given")
    return declared


def uncompress_query_event(
    event: bytes | bytearray | memoryview,
    *,
    checksum: bool,
    post_header_len: int = _QUERY_POST_HEADER_LEN,
    max_size: int = DEFAULT_MAX_UNCOMPRESSED_SIZE,
) -> bytes:
    """Turn a whole QUERY_COMPRESSED_EVENT into the equivalent QUERY_EVENT bytes.

    ``checksum``: the binlog has CRC32 trailers. ``post_header_len`` comes from the
    FDE (13 on every MariaDB version).
    """
    _event_length(event, checksum)
    if event[_TYPE_OFFSET] != QUERY_COMPRESSED_EVENT:
        raise MalformedEventError("not a QUERY_COMPRESSED_EVENT", event_type=event[_TYPE_OFFSET])
    ph = _HEADER_LEN
    if ph + max(post_header_len, _QUERY_POST_HEADER_LEN) > len(event):
        raise MalformedEventError("truncated query post-header", event_type=165, offset=ph)
    db_len = event[ph + _Q_DB_LEN_OFFSET]
    status_len = _U16.unpack_from(event, ph + _Q_STATUS_VARS_LEN_OFFSET)[0]
    split = ph + post_header_len + status_len + db_len + 1
    try:
        return _rebuild(event, split, QUERY_EVENT, checksum, max_size)
    except MalformedEventError as exc:
        raise exc.with_context(event_type=QUERY_COMPRESSED_EVENT) from None


def uncompress_rows_event(
    event: bytes | bytearray | memoryview,
    *,
    checksum: bool,
    post_header_len: int | None = None,
    max_size: int = DEFAULT_MAX_UNCOMPRESSED_SIZE,
) -> bytes:
    """Turn a whole WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT(_V1) into the plain event.

    ``post_header_len`` is the FDE's value for this type (8 for the v1 types
    166-168 that MariaDB writes, 10 for the v2 types 169-171); by default it is
    derived from the type.
    """
    _event_length(event, checksum)
    type_code = event[_TYPE_OFFSET]
    new_type = uncompressed_type(type_code)
    if type_code == QUERY_COMPRESSED_EVENT:
        raise MalformedEventError("use uncompress_query_event for QUERY_COMPRESSED_EVENT")
    if post_header_len is None:
        post_header_len = _ROWS_HEADER_LEN_V1 if type_code <= 168 else _ROWS_HEADER_LEN_V2
    end = len(event) - (_CRC_LEN if checksum else 0)
    pos = _HEADER_LEN + _ROWS_HEADER_LEN_V1
    try:
        if post_header_len == _ROWS_HEADER_LEN_V2:
            if pos + 2 > end:
                raise MalformedEventError("truncated rows extra-data length", offset=pos)
            extra = _U16.unpack_from(event, pos)[0]
            if extra < 2:
                raise MalformedEventError(f"rows extra-data length {extra} < 2", offset=pos)
            pos += extra
        width, pos = read_lenenc_int(event, pos, end)
        bitmap = (width + 7) // 8
        pos += bitmap * (2 if type_code in _UPDATE_TYPES else 1)
        if pos >= end:
            raise MalformedEventError("rows event ends before its compressed rows", offset=pos)
        return _rebuild(event, pos, new_type, checksum, max_size)
    except MalformedEventError as exc:
        raise exc.with_context(event_type=type_code) from None


# -- MySQL TRANSACTION_PAYLOAD_EVENT ----------------------------------------------------

_FIELD_END: Final = 0
_FIELD_PAYLOAD_SIZE: Final = 1
_FIELD_COMPRESSION_TYPE: Final = 2
_FIELD_UNCOMPRESSED_SIZE: Final = 3


@dataclass(frozen=True, slots=True)
class TransactionPayload:
    """A parsed TRANSACTION_PAYLOAD_EVENT body.

    ``uncompressed_size`` is 0 when the field is absent (the server always writes
    it for compressed payloads).
    """

    compression_type: int
    payload_size: int
    uncompressed_size: int
    payload: bytes


def parse_transaction_payload(body: bytes | bytearray | memoryview) -> TransactionPayload:
    """Parse the body of a TRANSACTION_PAYLOAD_EVENT (after the 19-byte header, no CRC).

    Byte layout (MySQL ``Transaction_payload_event`` decoding in libbinlogevents,
    ``transaction_payload_event.cpp``)::

        ( type:packed  [length:packed  value:length bytes] )*  type 0 (end)  payload

    ``value`` is itself a length-encoded integer of ``length`` bytes for the known
    fields; the payload runs to the end of the body and must match field 1.
    """
    view = memoryview(body).cast("B") if not isinstance(body, bytes) else memoryview(body)
    end = len(view)
    pos = 0
    fields: dict[int, int] = {}
    while True:
        if pos >= end:
            raise MalformedEventError(
                "transaction payload header has no end marker", event_type=40, offset=pos
            )
        field_type, pos = read_lenenc_int(view, pos, end)
        if field_type == _FIELD_END:
            break
        length, pos = read_lenenc_int(view, pos, end)
        if pos + length > end:
            raise MalformedEventError(
                f"transaction payload field {field_type} runs past the event",
                event_type=40,
                offset=pos,
            )
        if field_type in (_FIELD_PAYLOAD_SIZE, _FIELD_COMPRESSION_TYPE, _FIELD_UNCOMPRESSED_SIZE):
            value, after = read_lenenc_int(view, pos, pos + length)
            if after != pos + length:
                raise MalformedEventError(
                    f"transaction payload field {field_type} has {length} bytes but its "
                    f"value uses {after - pos}",
                    event_type=40,
                    offset=pos,
                )
            fields[field_type] = value
        pos += length
    payload = bytes(view[pos:end])
    if _FIELD_COMPRESSION_TYPE not in fields:
        raise MalformedEventError("transaction payload lacks its compression type", event_type=40)
    size = fields.get(_FIELD_PAYLOAD_SIZE, len(payload))
    if size != len(payload):
        raise MalformedEventError(
            f"transaction payload size field says {size} bytes, the event holds {len(payload)}",
            event_type=40,
            offset=pos,
        )
    return TransactionPayload(
        compression_type=fields[_FIELD_COMPRESSION_TYPE],
        payload_size=size,
        uncompressed_size=fields.get(_FIELD_UNCOMPRESSED_SIZE, 0),
        payload=payload,
    )


def decompress_payload(
    payload: TransactionPayload, *, max_size: int = DEFAULT_MAX_UNCOMPRESSED_SIZE
) -> bytes:
    """Decompress a transaction payload: the inner events, back to back, without CRCs.

    Raises :class:`MalformedEventError` on corrupt data, an unknown compression type
    or a size that disagrees with the uncompressed-size field, and
    :class:`~replica_client.errors.LimitExceededError` beyond ``max_size``.
    """
    declared = payload.uncompressed_size
    if declared:
        _check_limit(declared, max_size, "transaction payload")
    if payload.compression_type == COMPRESSION_NONE:
        out = payload.payload
    elif payload.compression_type == COMPRESSION_ZSTD:
        limit = declared if declared else max_size
        chunks: list[bytes] = []
        total = 0
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(
                payload.payload, read_across_frames=True
            )
            while total <= limit:
                chunk = reader.read(min(limit + 1 - total, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except zstandard.ZstdError as exc:
            raise MalformedEventError(
                f"corrupt zstd data in transaction payload: {exc}", event_type=40
            ) from None
        if total > limit:
            if not declared:
                _check_limit(total, max_size, "transaction payload")
            raise MalformedEventError(
                f"transaction payload inflates beyond its declared {declared} bytes",
                event_type=40,
            )
        out = b"".join(chunks)
    else:
        raise MalformedEventError(
            f"unknown transaction payload compression type {payload.compression_type}",
            event_type=40,
        )
    if declared and len(out) != declared:
        raise MalformedEventError(
            f"transaction payload declares {declared} uncompressed bytes, got {len(out)}",
            event_type=40,
        )
    if not declared:
        _check_limit(len(out), max_size, "transaction payload")
    return out


def split_payload_events(data: bytes | bytearray | memoryview) -> list[memoryview]:
    """Cut an uncompressed transaction payload into its events (no CRC trailers).

    Each returned view starts with the event's 19-byte header and spans
    ``event_size`` bytes. A nested TRANSACTION_PAYLOAD_EVENT is an error, as on the
    server.
    """
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    out: list[memoryview] = []
    pos = 0
    while pos < len(view):
        if pos + _HEADER_LEN > len(view):
            raise MalformedEventError(
                "transaction payload ends inside an event header", event_type=40, offset=pos
            )
        _, type_code, _, size, _, _ = _EVENT_HEADER.unpack_from(view, pos)
        if size < _HEADER_LEN or pos + size > len(view):
            raise MalformedEventError(
                f"inner event of {size} bytes does not fit the transaction payload",
                event_type=40,
                offset=pos,
            )
        if type_code == TRANSACTION_PAYLOAD_EVENT:
            raise MalformedEventError(
                "TRANSACTION_PAYLOAD_EVENT nested in a transaction payload",
                event_type=40,
                offset=pos,
            )
        out.append(view[pos : pos + size])
        pos += size
    return out
