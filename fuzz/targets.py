"""Fuzz targets shared by the atheris entry points and the CI test.

The invariant every target checks: hostile bytes raise only the typed errors
named below, nothing else (no IndexError, struct.error, UnicodeDecodeError,
RecursionError, ...). Hangs and memory are bounded by the fuzzer's
``-timeout`` and ``-rss_limit_mb`` and by the decoder's own limits, which the
targets set low (1 MB events, 64 table maps, 1 MB packets).

* :func:`decoder_one_input`: first byte: checksum verification and whether to
  repair every event's size/CRC32 (so mutated bodies get past the checksum);
  second byte: the FORMAT_DESCRIPTION to prime the decoder with; the rest is a
  run of binlog events for :meth:`EventDecoder.iter_decode`. Only ``ProtocolError``.
* :func:`session_one_input`: first byte picks a mode: the rest is everything the
  primary sends (greeting, auth, registration replies, events), or the replies
  of a recorded registration followed by the rest as the event stream. Only
  ``ProtocolError``, plus the typed answers a well-formed but hostile server
  can provoke: ``ServerError`` (ERR packets), ``UnsupportedError`` (an auth
  plugin we do not have), ``ConfigError`` (the primary claims our server_id).
* :func:`framer_one_input`: any bytes through ``PacketFramer``. Only ``ProtocolError``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from replica_client.binlog.constants import EventType
from replica_client.binlog.decoder import EventDecoder
from replica_client.config import DecoderOptions
from replica_client.errors import (
    ConfigError,
    ProtocolError,
    ServerError,
    UnsupportedError,
)
from replica_client.session import END, NEED_DATA, ReplicaSession
from replica_client.wire.framing import PacketFramer
from replica_client.wire.registration import RegistrationSettings
from tests.fake_primary import BinlogBuilder, FakePrimary

__all__ = [
    "FIXTURES",
    "decoder_one_input",
    "decoder_seeds",
    "framer_one_input",
    "session_one_input",
    "session_seeds",
]

#: The repository's real binlogs of many servers (tests/data/binlogs).
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "binlogs"
_MAGIC = b"\xfebin"
_U32 = struct.Struct("<I")
_LIMITS = DecoderOptions(max_event_size=1 << 20, table_map_cache_size=64)
_SETTINGS = RegistrationSettings(user="repl", password=b"secret", server_id=42, blocking=False)
_SESSION_ERRORS = (ProtocolError, ServerError, UnsupportedError, ConfigError)


def _split(data: bytes, pos: int = 4) -> Iterator[bytes]:
    while pos + 19 <= len(data):
        size = _U32.unpack_from(data, pos + 9)[0]
        if size < 19 or pos + size > len(data):
            return
        yield data[pos : pos + size]
        pos += size


def _synthetic() -> bytes:
    b = BinlogBuilder()
    b.fde()
    b.gtid_list([(0, 1, 0)])
    for seq in range(1, 4):
        b.transaction(seq, f"INSERT INTO t VALUES ({seq})")
    b.ddl(4)
    b.rotate("mysql-bin.000002")
    return _MAGIC + b"".join(b.events)


@cache
def _fdes() -> tuple[bytes | None, ...]:
    """None (no FDE yet), a synthetic MariaDB FDE, and the FDEs of the fixtures."""
    out: list[bytes | None] = [None, next(_split(_synthetic()))]
    if FIXTURES.is_dir():
        for path in sorted(FIXTURES.rglob("*")):
            if not path.is_file() or path.stat().st_size < 100:
                continue
            with path.open("rb") as f:
                head = f.read(4096)
            if head[:4] != _MAGIC:
                continue
            first = next(_split(head), None)
            if (
                first is not None
                and first[4] == EventType.FORMAT_DESCRIPTION_EVENT
                and first not in out
            ):
                out.append(first)
    return tuple(out)


def _repair(data: bytes) -> bytes:
    """Set each event's size field to what remains when it is implausible, and its CRC32."""
    buf = bytearray(data)
    pos = 0
    while pos + 23 <= len(buf):
        size = _U32.unpack_from(buf, pos + 9)[0]
        if size < 23 or pos + size > len(buf):
            size = len(buf) - pos
            _U32.pack_into(buf, pos + 9, size)
        _U32.pack_into(buf, pos + size - 4, zlib.crc32(buf[pos : pos + size - 4]))
        pos += size
    return bytes(buf)


def decoder_one_input(data: bytes) -> None:
    if len(data) < 3:
        return
    fdes = _fdes()
    mode = data[0]
    fde = fdes[data[1] % len(fdes)]
    verify = bool(mode & 0x10)
    body = _repair(data[2:]) if mode & 0x20 else data[2:]
    decoder = EventDecoder(
        DecoderOptions(
            verify_checksum=verify,
            max_event_size=_LIMITS.max_event_size,
            table_map_cache_size=_LIMITS.table_map_cache_size,
        )
    )
    try:
        if fde is not None:
            decoder.decode(fde, 4)
        for _ in decoder.iter_decode(body, 4):
            pass
    except ProtocolError:
        pass


@cache
def _transcript() -> tuple[bytes, bytes]:
    """What a FakePrimary sends a session: (everything up to the dump, the event stream)."""
    b = BinlogBuilder()
    b.fde()
    b.gtid_list([(0, 1, 0)])
    for seq in range(1, 3):
        b.transaction(seq, f"INSERT INTO t VALUES ({seq})")
    primary = FakePrimary(events=b.events)
    session = ReplicaSession(_SETTINGS, random_bytes=lambda n: b"\x11" * n)
    sent = [primary.greeting()]
    while True:
        session.receive_data(sent[-1])
        while session.next_item() not in (NEED_DATA, END):
            pass
        out = session.data_to_send()
        if not out:
            break
        sent.append(primary.receive(out))
    registration = b"".join(sent[:-1])
    return registration, sent[-1]


def session_one_input(data: bytes) -> None:
    if not data:
        return
    registration, _ = _transcript()
    stream = data[1:]
    incoming = registration + stream if data[0] & 1 else stream
    session = ReplicaSession(_SETTINGS, decoder_options=_LIMITS, random_bytes=lambda n: b"\x11" * n)
    # feed in two pieces, split where the first byte says, to cover partial packets
    cut = data[0] * len(incoming) // 256
    try:
        for piece in (incoming[:cut], incoming[cut:]):
            session.receive_data(piece)
            while session.next_item() not in (NEED_DATA, END):
                pass
            session.data_to_send()
    except _SESSION_ERRORS:
        pass


def framer_one_input(data: bytes) -> None:
    framer = PacketFramer(max_payload=1 << 16)
    try:
        framer.receive_data(data)
        while framer.next_packet() is not None:
            pass
    except ProtocolError:
        pass


def decoder_seeds() -> list[bytes]:
    """Seed inputs: windows of real fixture files and a synthetic log."""
    seeds: list[bytes] = []
    files = [_synthetic()]
    if FIXTURES.is_dir():
        files += [
            p.read_bytes()[:200_000]
            for p in sorted(FIXTURES.rglob("*"))
            if p.is_file() and p.read_bytes()[:4] == _MAGIC
        ]
    fdes = _fdes()
    for data in files:
        events = list(_split(data))
        fde_index = fdes.index(events[0]) if events and events[0] in fdes else 0
        for i in range(1, len(events), 8):
            window = b"".join(events[i : i + 8])
            if len(window) <= 16_384:
                seeds.append(bytes([0x10, fde_index]) + window)
                seeds.append(bytes([0x30, fde_index]) + window)
    return seeds


def session_seeds() -> list[bytes]:
    registration, stream = _transcript()
    return [b"\x00" + registration + stream, b"\x01" + stream, b"\x81" + stream]
