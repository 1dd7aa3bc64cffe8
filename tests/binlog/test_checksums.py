"""CRC32 verification and truncation, on a binlog written by the private primary.

Every event of a real file gets one byte flipped at several places (header
fields, body, the CRC trailer itself) and must raise ``ChecksumMismatchError``
naming that event's position and type, after the events before it decoded.
Every single-bit flip of the small events is caught. The FORMAT_DESCRIPTION_EVENT
of the active log (LOG_EVENT_BINLOG_IN_USE_F set, CRC computed with it clear)
verifies. With verification off, a flipped body byte decodes or raises a
``ProtocolError``, nothing else. A file cut inside an event raises
``TruncatedBinlogError`` naming where that event starts.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.binlog.constants import EventType
from replica_client.binlog.decoder import EventDecoder
from replica_client.binlog.events import Event, FormatDescriptionEvent, GtidEvent, XidEvent
from replica_client.config import DecoderOptions
from replica_client.errors import (
    ChecksumMismatchError,
    MalformedEventError,
    ProtocolError,
    TruncatedBinlogError,
)
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.binlog_files import BinlogBytes, RawEvent, capture, show_binlog_events

FDE = EventType.FORMAT_DESCRIPTION_EVENT
SIZE_FIELD = range(9, 13)  # event_size u32 in the common header
STATEMENTS = [
    "CREATE DATABASE IF NOT EXISTS ck",
    "DROP TABLE IF EXISTS ck.t",
    "CREATE TABLE ck.t (id INT PRIMARY KEY, v VARCHAR(40), d DECIMAL(10,2), ts DATETIME(6))",
    "INSERT INTO ck.t VALUES (1,'a',1.5,NOW(6)),(2,'bb',NULL,NULL),(3,'ccc',-2.25,'2020-01-01')",
    "BEGIN",
    "UPDATE ck.t SET v = CONCAT(v, '!') WHERE id < 3",
    "DELETE FROM ck.t WHERE id = 3",
    "COMMIT",
    "INSERT INTO ck.t VALUES (4, REPEAT('x', 40), 99999999.99, '1999-12-31 23:59:59.999999')",
]


@pytest.fixture(scope="module")
def binlog(mariadb_primary: MariaDBServer) -> BinlogBytes:
    captured = capture(mariadb_primary, STATEMENTS)
    # The framing used below is the server's own.
    shown = show_binlog_events(mariadb_primary, captured.name)
    assert [(e.position, e.end) for e in captured.events] == [(p, end) for p, _, end in shown]
    return captured


def _read_all(path: Path, *, verify: bool = True) -> list[Event]:
    with rc.open_binlog(path, verify_checksum=verify) as reader:
        return list(reader)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _flipped(data: bytes, offset: int, mask: int = 0xFF) -> bytes:
    out = bytearray(data)
    out[offset] ^= mask
    return bytes(out)


def _fde_structural(event: RawEvent) -> set[int]:
    # header_length (must be 19) is checked before the CRC: a flip there is
    # caught as a malformed FDE rather than as a CRC mismatch.
    return {19 + 56}


def _flip_offsets(event: RawEvent) -> Iterator[int]:
    n = len(event.data)
    header = [0, 3, 5, 8, 13, 16, 17, 18]  # timestamp, server_id, log_pos, flags
    if event.type_code != FDE:
        header.append(4)  # type code: the CRC is checked before dispatch
    body = [19, 19 + (n - 23) // 2, n - 5]  # for the FDE, n - 5 is the algorithm byte
    crc = [n - 4, n - 3, n - 1]
    skip = _fde_structural(event) if event.type_code == FDE else set()
    for offset in dict.fromkeys(header + body + crc):
        if offset not in skip:
            yield offset


# -- the clean file -----------------------------------------------------------------


def test_clean_file_decodes_with_checksums(binlog: BinlogBytes, tmp_path: Path) -> None:
    path = _write(tmp_path, binlog.name, binlog.data)
    events = binlog.events
    with rc.open_binlog(path) as reader:
        positions = []
        for _ in reader:
            assert reader.event_position is not None
            positions.append(reader.event_position.pos)
    assert positions == [e.position for e in events]
    assert events[0].type_code == FDE
    assert events[0].flags & 0x1 == 0  # closed log
    assert events[-1].type_code == EventType.ROTATE_EVENT
    types = {e.type_code for e in events}
    assert {EventType.GTID_EVENT, EventType.QUERY_EVENT, EventType.TABLE_MAP_EVENT} <= types
    assert {EventType.XID_EVENT, EventType.WRITE_ROWS_EVENT_V1} <= types


# -- one flipped byte per place, every event ------------------------------------------


def test_every_event_byte_flip_raises_checksum_mismatch(
    binlog: BinlogBytes, tmp_path: Path
) -> None:
    events = binlog.events
    tried = 0
    for index, event in enumerate(events):
        for offset in _flip_offsets(event):
            data = _flipped(binlog.data, event.position + offset)
            path = _write(tmp_path, binlog.name, data)
            decoded: list[Event] = []
            with (
                pytest.raises(ChecksumMismatchError) as info,
                rc.open_binlog(path) as reader,
            ):
                decoded.extend(reader)
            err = info.value
            where = f"event {index} at {event.position}, byte {offset}"
            assert err.position == event.position, where
            assert err.event_type == data[event.position + 4], where
            assert str(event.position) in str(err), where
            assert len(decoded) == index, where
            tried += 1
    assert tried >= 10 * len(events)


def test_fde_structural_bytes_flipped_are_malformed(binlog: BinlogBytes, tmp_path: Path) -> None:
    fde = binlog.events[0]
    for offset in sorted(_fde_structural(fde)):
        path = _write(tmp_path, binlog.name, _flipped(binlog.data, fde.position + offset))
        with pytest.raises(MalformedEventError) as info:
            _read_all(path)
        assert info.value.position == fde.position


def test_single_bit_flips_of_small_events_are_all_caught(binlog: BinlogBytes) -> None:
    events = binlog.events
    fde = events[0]
    small = [e for e in events if e.type_code != FDE and len(e.data) <= 64]
    kinds = {e.type_code for e in small}
    assert {EventType.GTID_EVENT, EventType.XID_EVENT, EventType.ROTATE_EVENT} <= kinds
    flips = 0
    for event in small:
        for bit in range(len(event.data) * 8):
            decoder = EventDecoder()
            decoder.decode(fde.data, fde.position)
            data = _flipped(event.data, bit >> 3, 1 << (bit & 7))
            expected = MalformedEventError if bit >> 3 in SIZE_FIELD else ChecksumMismatchError
            with pytest.raises(expected) as info:
                decoder.decode(data, event.position)
            assert info.value.position == event.position
            flips += 1
    assert flips == sum(len(e.data) * 8 for e in small)


# -- the active log's FDE -----------------------------------------------------------


def test_active_log_fde_with_in_use_flag_verifies(binlog: BinlogBytes, tmp_path: Path) -> None:
    active = binlog.active_events
    fde = active[0]
    assert fde.type_code == FDE
    assert fde.flags & 0x1, "the active log's FDE should carry LOG_EVENT_BINLOG_IN_USE_F"
    whole = binlog.active[: active[-1].end]
    path = _write(tmp_path, binlog.active_name, whole)
    events = _read_all(path)
    assert len(events) == len(active)
    assert events[0].header.flags & 0x1
    # The CRC was computed with the flag clear: clearing it keeps the CRC valid ...
    path = _write(tmp_path, binlog.active_name, _flipped(whole, fde.position + 17, 0x01))
    assert len(_read_all(path)) == len(active)
    # ... and so does setting it on the closed log's FDE.
    closed = binlog.events[0]
    path = _write(tmp_path, binlog.name, _flipped(binlog.data, closed.position + 17, 0x01))
    assert len(_read_all(path)) == len(binlog.events)
    # Any other flag bit is covered by the CRC.
    for bit in range(1, 16):
        offset = fde.position + 17 + (bit >> 3)
        path = _write(tmp_path, binlog.active_name, _flipped(whole, offset, 1 << (bit & 7)))
        with pytest.raises(ChecksumMismatchError) as info:
            _read_all(path)
        assert info.value.position == fde.position


def test_fde_algorithm_byte_cannot_switch_verification_off(
    binlog: BinlogBytes, mariadb_primary_factory: PrimaryFactory, tmp_path: Path
) -> None:
    # CRC32 -> OFF by one bit: the FDE's own CRC catches it.
    fde = binlog.events[0]
    alg_at = fde.position + len(fde.data) - 5
    assert binlog.data[alg_at] == 1
    path = _write(tmp_path, binlog.name, _flipped(binlog.data, alg_at, 0x01))
    with pytest.raises(ChecksumMismatchError) as info:
        _read_all(path)
    assert info.value.position == fde.position
    # A binlog_checksum=NONE primary still writes a valid CRC on its FDE.
    none = capture(mariadb_primary_factory(ServerVariant(checksum="NONE")), STATEMENTS)
    none_fde = none.events[0]
    assert none_fde.data[-5] == 0
    path = _write(tmp_path, none.name, none.data)
    events = _read_all(path)
    assert len(events) == len(none.events)
    assert isinstance(events[0], FormatDescriptionEvent)
    assert events[0].checksum_alg == 0
    # OFF -> CRC32 by one bit would strip four bytes off every event: caught.
    path = _write(tmp_path, none.name, _flipped(none.data, none_fde.end - 5, 0x01))
    with pytest.raises(ChecksumMismatchError) as info:
        _read_all(path)
    assert info.value.position == none_fde.position


# -- verification off ----------------------------------------------------------------


def test_body_flip_without_verification_decodes_or_raises_protocol_error(
    binlog: BinlogBytes,
) -> None:
    events = binlog.events
    fde = events[0]
    outcomes = {"decoded": 0, "protocol_error": 0}
    for event in events[1:]:
        for offset in range(19, len(event.data) - 4):
            decoder = EventDecoder(DecoderOptions(verify_checksum=False))
            decoder.decode(fde.data, fde.position)
            try:
                decoder.decode(_flipped(event.data, offset), event.position)
            except ProtocolError:
                outcomes["protocol_error"] += 1
            else:
                outcomes["decoded"] += 1
    assert outcomes["decoded"] > 0
    # Fixed-width fields decode to exactly the flipped value.
    decoder = EventDecoder(DecoderOptions(verify_checksum=False))
    decoder.decode(fde.data, fde.position)
    for event in events:
        if event.type_code == EventType.XID_EVENT:
            original = struct.unpack_from("<Q", event.data, 19)[0]
            got = decoder.decode(_flipped(event.data, 19), event.position)
            assert isinstance(got, XidEvent)
            assert got.xid == original ^ 0xFF
        elif event.type_code == EventType.GTID_EVENT:
            seq_no, domain = struct.unpack_from("<QI", event.data, 19)
            got = decoder.decode(_flipped(event.data, 19 + 8), event.position)
            assert isinstance(got, GtidEvent)
            assert (got.seq_no, got.domain_id) == (seq_no, domain ^ 0xFF)
    # The same flip with verification on is a checksum error.
    checked = EventDecoder()
    checked.decode(fde.data, fde.position)
    xid = next(e for e in events if e.type_code == EventType.XID_EVENT)
    with pytest.raises(ChecksumMismatchError):
        checked.decode(_flipped(xid.data, 19), xid.position)


# -- truncation -----------------------------------------------------------------------


def test_truncated_inside_the_last_events(binlog: BinlogBytes, tmp_path: Path) -> None:
    events = binlog.events
    last = events[-4:]
    cuts = 0
    for index, event in enumerate(events[-4:], start=len(events) - 4):
        for cut in range(event.position + 1, event.end):
            path = _write(tmp_path, binlog.name, binlog.data[:cut])
            decoded: list[Event] = []
            with pytest.raises(TruncatedBinlogError) as info, rc.open_binlog(path) as reader:
                decoded.extend(reader)
            assert info.value.position == event.position, cut
            assert str(event.position) in str(info.value)
            assert len(decoded) == index
            cuts += 1
    assert cuts == sum(len(e.data) - 1 for e in last)


def test_truncated_inside_the_file_header(binlog: BinlogBytes, tmp_path: Path) -> None:
    fde = binlog.events[0]
    for cut in range(fde.position + 1, fde.end):
        path = _write(tmp_path, binlog.name, binlog.data[:cut])
        with pytest.raises(TruncatedBinlogError) as info:
            _read_all(path)
        assert info.value.position == fde.position
    for cut in range(4):
        path = _write(tmp_path, binlog.name, binlog.data[:cut])
        with pytest.raises(MalformedEventError) as bad_magic:
            _read_all(path)
        assert bad_magic.value.position == 0
