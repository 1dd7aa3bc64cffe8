"""The decoder's state and its one dispatch table (``binlog/decoder.py``).

Real bytes: the fixture binlogs (``tests/data/binlogs``) and the captured
events of ``tests/binlog/*``; the checksum and fuzz suites
(``test_checksums.py``, ``test_fuzz_*.py``) cover corrupted input.
"""

from __future__ import annotations

import ast
import inspect
import struct
import zlib
from pathlib import Path

import pytest

import replica_client.binlog.decoder as decoder_module
from replica_client.accel import speedups
from replica_client.binlog.constants import BinlogChecksumAlg, EventFlag, EventType
from replica_client.binlog.decoder import DECODERS, EventDecoder, OnDecoder, OnTables
from replica_client.binlog.events import (
    Event,
    FormatDescriptionEvent,
    MysqlGtidEvent,
    QueryEvent,
    TableMapEvent,
    UnknownEvent,
    WriteRowsEvent,
)
from replica_client.binlog.format import BinlogFormat
from replica_client.binlog.header import EventHeader
from replica_client.config import DecoderOptions
from replica_client.errors import MalformedEventError, UnknownEventError
from tests.binlog_files import FIXTURES, split_events

E = EventType
ROWS_57 = FIXTURES / "mysql-cdc-rs/5.7/30_write_rows_v2/log.bin"
#: Types no decoder exists for: 0 is not an event, 28 is skipped by its flag.
NOT_DECODED = {E.UNKNOWN_EVENT, E.IGNORABLE_LOG_EVENT}


def _events(path: Path) -> list[tuple[int, bytes]]:
    return [(e.position, e.data) for e in split_events(path.read_bytes())]


# -- the dispatch table -----------------------------------------------------------------


def test_every_known_type_is_an_entry_of_the_one_table() -> None:
    assert set(E) - set(DECODERS) == NOT_DECODED
    assert set(DECODERS) <= set(E)
    assert all(type(code) is int for code in DECODERS)


def test_entries_that_need_state_say_which() -> None:
    on_decoder = {c for c, e in DECODERS.items() if isinstance(e, OnDecoder)}
    on_tables = {c for c, e in DECODERS.items() if isinstance(e, OnTables)}
    assert on_decoder == {
        E.FORMAT_DESCRIPTION_EVENT,
        E.ROTATE_EVENT,
        E.START_ENCRYPTION_EVENT,
        E.TRANSACTION_PAYLOAD_EVENT,
        *range(E.QUERY_COMPRESSED_EVENT, E.DELETE_ROWS_COMPRESSED_EVENT + 1),
    }
    assert on_tables == {
        E.TABLE_MAP_EVENT,
        *range(E.PRE_GA_WRITE_ROWS_EVENT, E.DELETE_ROWS_EVENT_V1 + 1),
        *range(E.WRITE_ROWS_EVENT, E.DELETE_ROWS_EVENT + 1),
        E.PARTIAL_UPDATE_ROWS_EVENT,
    }


def test_stateless_entries_take_only_the_format() -> None:
    for code, entry in DECODERS.items():
        if isinstance(entry, OnDecoder | OnTables):
            continue
        params = list(inspect.signature(entry).parameters)
        assert params == ["fmt", "h", "view", "pos", "end"], (E(code).name, params)


def test_a_stateless_entry_decodes_real_bytes_with_a_bare_format() -> None:
    (_, gtid), *_ = [(p, d) for p, d in _events(ROWS_57) if d[4] == E.GTID_LOG_EVENT]
    header = EventHeader._make(struct.unpack_from("<IBIIIH", gtid))
    fn = DECODERS[E.GTID_LOG_EVENT]
    assert not isinstance(fn, OnDecoder | OnTables)
    event = fn(BinlogFormat(), header, memoryview(gtid), 19, len(gtid) - 4)
    # mysqlbinlog (dump.txt): SET @@SESSION.GTID_NEXT= '80549ecc-...:1'
    assert isinstance(event, MysqlGtidEvent)
    assert event.gtid == "80549ecc-d2f2-11ea-b790-0242ac130002:1"


_BODY = b"the body of an event of the type under test"
_FROM_THE_TABLE = b"what the table's entry returned"


def _event_of(type_code: int) -> bytes:
    header = struct.pack("<IBIIIH", 1, type_code, 1, 19 + len(_BODY) + 4, 0, 0)
    return header + _BODY + struct.pack("<I", zlib.crc32(header + _BODY))


def _decoder_for(type_code: int) -> EventDecoder:
    """A decoder that has read a real FDE (MySQL 5.7, CRC32), except for the FDE's own
    type: that one is the event under test."""
    decoder = EventDecoder()
    if type_code != E.FORMAT_DESCRIPTION_EVENT:
        decoder.decode(_events(ROWS_57)[0][1], 4)
    return decoder


@pytest.mark.parametrize("type_code", sorted(DECODERS), ids=lambda code: E(code).name)
def test_decode_looks_types_up_in_the_table_only(
    type_code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every type, the FDE, TRANSACTION_PAYLOAD, START_ENCRYPTION and the
    # compressed types too: a decoder built with another entry for the type
    # decodes it with that entry, and one built without an entry does not know it.
    calls: list[tuple[int, bytes]] = []

    def entry(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
        calls.append((h.type_code, bytes(view[pos:end])))
        return UnknownEvent(h, _FROM_THE_TABLE)

    monkeypatch.setitem(DECODERS, type_code, entry)
    event = _decoder_for(type_code).decode(_event_of(type_code), 1000)
    assert isinstance(event, UnknownEvent)
    assert (event.header.type_code, event.body) == (type_code, _FROM_THE_TABLE)
    assert [code for code, _ in calls] == [type_code]
    assert calls[0][1].startswith(_BODY)  # (an FDE keeps its CRC32 for its entry)

    monkeypatch.delitem(DECODERS, type_code)
    with pytest.raises(UnknownEventError) as info:
        _decoder_for(type_code).decode(_event_of(type_code), 1000)
    assert info.value.event_type == type_code
    assert len(calls) == 1


def test_decoders_of_one_decoder_are_bound_to_its_state() -> None:
    a, b = EventDecoder(), EventDecoder()
    events = _events(ROWS_57)
    for decoder in (a, b):
        decoder.begin_file()
    table_map = None
    for pos, data in events:
        event = a.decode(data, pos)
        if isinstance(event, TableMapEvent):
            table_map = event
            break
    assert table_map is not None
    # only a has seen the TABLE_MAP
    assert a.table(table_map.table_id) == table_map
    assert b.table(table_map.table_id) is None


# -- unknown types -------------------------------------------------------------------------


def _fde_and(event: bytes) -> tuple[bytes, bytes]:
    fde = _events(ROWS_57)[0][1]
    return fde, event[:-4] + struct.pack("<I", zlib.crc32(event[:-4]))


def _unknown_event(flags: int) -> bytes:
    body = b"vendor data"
    header = struct.pack("<IBIIIH", 1, 100, 1, 19 + len(body) + 4, 0, flags)
    return header + body + b"\0\0\0\0"


def test_unknown_type_is_an_error_unless_ignorable_or_kept() -> None:
    fde, event = _fde_and(_unknown_event(0))
    decoder = EventDecoder()
    decoder.decode(fde)
    with pytest.raises(UnknownEventError) as info:
        decoder.decode(event, 1000)
    assert (info.value.event_type, info.value.position) == (100, 1000)
    kept = EventDecoder(DecoderOptions(unknown_events="keep"))
    kept.decode(fde)
    assert kept.decode(event) == UnknownEvent(
        EventHeader(1, 100, 1, len(event), 0, 0), b"vendor data"
    )
    fde, flagged = _fde_and(_unknown_event(EventFlag.IGNORABLE))
    decoder.decode(fde)
    unknown = decoder.decode(flagged)
    assert isinstance(unknown, UnknownEvent) and unknown.body == b"vendor data"


def test_malformed_body_carries_type_position_and_offset() -> None:
    events = _events(ROWS_57)
    decoder = EventDecoder(DecoderOptions(verify_checksum=False))
    decoder.begin_file()
    decoder.decode(events[0][1], events[0][0])
    pos, query = next((p, d) for p, d in events if d[4] == E.QUERY_EVENT)
    cut = bytearray(query)
    cut[19 + 11 : 19 + 13] = struct.pack("<H", 0xFFFF)  # status_len past the end
    with pytest.raises(MalformedEventError) as info:
        decoder.decode(bytes(cut), pos)
    err = info.value
    assert (err.event_type, err.position, err.offset) == (E.QUERY_EVENT, pos, 32)


# -- state: the format, and which prologue decode() takes -----------------------------------

FAST = speedups() is not None


def _mode(decoder: EventDecoder) -> int:
    return decoder._fast_mode


def test_fast_mode_is_derived_in_one_place() -> None:
    tree = ast.parse(inspect.getsource(decoder_module))
    writers = {
        func.name
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef)
        for node in ast.walk(func)
        if isinstance(node, ast.Attribute)
        and node.attr == "_fast_mode"
        and isinstance(node.ctx, ast.Store)
    }
    assert writers == {"_set_format"}


def test_fast_mode_follows_the_state() -> None:
    slow = -1
    crc = EventDecoder(checksum_alg=BinlogChecksumAlg.CRC32)
    assert _mode(crc) == (2 if FAST else slow)
    unverified = EventDecoder(
        DecoderOptions(verify_checksum=False), checksum_alg=BinlogChecksumAlg.CRC32
    )
    assert _mode(unverified) == (1 if FAST else slow)
    plain = EventDecoder()
    assert _mode(plain) == (0 if FAST else slow)
    plain.begin_file()
    assert _mode(plain) == slow  # the first event decides the version
    events = _events(ROWS_57)
    plain.decode(events[0][1], 4)
    assert _mode(plain) == (2 if FAST else slow)  # CRC32 from the FDE
    for pos, data in events[1:]:
        plain.decode(data, pos)
    plain.reset()
    assert _mode(plain) == (2 if FAST else slow)  # the checksum survives a reset


def test_legacy_and_pre_ga_logs_take_the_python_path(tmp_path: Path) -> None:
    import replica_client as rc

    with rc.open_binlog(FIXTURES / "rust_mysql_common/ver_5_1-wl2325_r.001") as reader:
        next(iter(reader))
        assert reader.decoder.format.pre_ga
        assert _mode(reader.decoder) == -1
    v1 = struct.pack("<IBII", 1, E.START_EVENT_V3, 1, 13 + 56) + struct.pack(
        "<H50sI", 1, b"3.23.58", 0
    )
    path = tmp_path / "v1-bin.001"
    path.write_bytes(b"\xfebin" + v1)
    with rc.open_binlog(path) as reader:
        list(reader)
        assert reader.decoder.format.header_len == 13
        assert _mode(reader.decoder) == -1


def test_fde_decoded_through_the_table_sets_the_format() -> None:
    fde_bytes = _events(ROWS_57)[0][1]
    decoder = EventDecoder()
    fde = decoder.decode(fde_bytes)
    assert isinstance(fde, FormatDescriptionEvent) and decoder.fde is fde
    assert decoder.format.crc32 and not decoder.format.mariadb
    assert decoder.checksum_alg == BinlogChecksumAlg.CRC32
    assert (decoder.header_len, decoder.binlog_version) == (19, 4)


def test_rows_of_a_fixture_through_the_whole_decoder() -> None:
    decoder = EventDecoder()
    decoder.begin_file()
    decoded = [decoder.decode(data, pos) for pos, data in _events(ROWS_57)]
    rows = [e for e in decoded if isinstance(e, WriteRowsEvent)]
    queries = [e.query for e in decoded if isinstance(e, QueryEvent)]
    assert rows and all(r.table.table == "boxercrab" for r in rows)
    assert "BEGIN" in queries
