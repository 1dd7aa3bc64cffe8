"""The shared byte codec (``replica_client/codec.py``), read from packets and events alike.

Byte strings are written out by hand after MariaDB KB "Protocol Data Types";
the real-bytes cases take a TABLE_MAP of a fixture binlog (its column count is
a length-encoded integer) and an OK packet as a MariaDB server sends it.
"""

from __future__ import annotations

import pytest

from replica_client.codec import (
    encode_lenenc_bytes,
    encode_lenenc_int,
    need,
    read_cstring,
    read_lenenc_bytes,
    read_lenenc_bytes_or_null,
    read_lenenc_int,
    read_lenenc_int_or_null,
    server_text,
    u8,
    u16,
    u24,
    u32,
    u48,
    u64,
    until_nul,
)
from replica_client.errors import MalformedEventError, ProtocolError
from replica_client.wire.packets import ResultSetReader, parse_ok
from tests.binlog_files import FIXTURES, split_events

# -- fixed-width integers ------------------------------------------------------------


def test_fixed_width_readers_are_little_endian() -> None:
    raw = bytes(range(1, 9))
    assert u8(raw, 0) == 0x01
    assert u16(raw, 0) == 0x0201
    assert u24(raw, 0) == 0x030201
    assert u32(raw, 0) == 0x04030201
    assert u48(raw, 0) == 0x060504030201
    assert u64(raw, 0) == 0x0807060504030201
    assert u32(memoryview(raw), 4) == 0x08070605


@pytest.mark.parametrize(
    ("reader", "width"), [(u8, 1), (u16, 2), (u24, 3), (u32, 4), (u48, 6), (u64, 8)]
)
def test_fixed_width_readers_raise_with_the_offset(reader: object, width: int) -> None:
    raw = bytes(width + 2)
    with pytest.raises(MalformedEventError) as info:
        reader(raw, 3)  # type: ignore[operator]
    assert info.value.offset == 3


def test_need_refuses_negative_counts() -> None:
    with pytest.raises(MalformedEventError, match="need -1 bytes"):
        need(b"abc", 0, -1, "thing")


# -- length-encoded integers -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "raw"),
    [
        (0, "00"),
        (250, "fa"),
        (251, "fcfb00"),
        (252, "fcfc00"),
        (0xFFFF, "fcffff"),
        (0x10000, "fd000001"),
        (0xFFFFFF, "fdffffff"),
        (0x1000000, "fe0000000100000000"),
        (2**64 - 1, "feffffffffffffffff"),
    ],
)
def test_lenenc_int_round_trip(value: int, raw: str) -> None:
    data = bytes.fromhex(raw)
    assert encode_lenenc_int(value) == data
    assert read_lenenc_int(data, 0) == (value, len(data))
    assert read_lenenc_int_or_null(data, 0) == (value, len(data))
    # behind other bytes, read through a view
    assert read_lenenc_int(memoryview(b"xx" + data), 2) == (value, 2 + len(data))


def test_lenenc_null_marker_only_where_null_is_allowed() -> None:
    assert read_lenenc_int_or_null(b"\xfb", 0) == (None, 1)
    assert read_lenenc_bytes_or_null(b"\xfb", 0) == (None, 1)
    with pytest.raises(MalformedEventError, match="0xfb"):
        read_lenenc_int(b"\xfb", 0)


@pytest.mark.parametrize("raw", ["ff", "ff0000"])
def test_lenenc_prefix_ff_is_never_valid(raw: str) -> None:
    for read in (read_lenenc_int, read_lenenc_int_or_null):
        with pytest.raises(MalformedEventError, match="0xff") as info:
            read(bytes.fromhex("00" + raw), 1)
        assert info.value.offset == 1


@pytest.mark.parametrize("raw", ["", "fc", "fcff", "fdffff", "fe00000000000000"])
def test_truncated_lenenc_int_raises_at_its_offset(raw: str) -> None:
    data = b"\x07" + bytes.fromhex(raw)
    with pytest.raises(MalformedEventError, match="truncated") as info:
        read_lenenc_int(data, 1)
    assert info.value.offset == 1


def test_lenenc_int_stops_at_the_end_bound() -> None:
    # the 8 value bytes are there, but past ``end`` (a CRC32 trailer, say)
    data = bytes.fromhex("fe0100000000000000")
    assert read_lenenc_int(data, 0) == (1, 9)
    with pytest.raises(MalformedEventError, match="truncated"):
        read_lenenc_int(data, 0, 5)


def test_lenenc_bytes() -> None:
    assert encode_lenenc_bytes(b"abc") == b"\x03abc"
    assert read_lenenc_bytes(b"\x03abcd", 0) == (b"abc", 4)
    assert read_lenenc_bytes_or_null(b"\x00", 0) == (b"", 1)
    long = b"x" * 300
    assert read_lenenc_bytes(encode_lenenc_bytes(long), 0) == (long, 303)
    with pytest.raises(MalformedEventError, match="overruns") as info:
        read_lenenc_bytes(b"\x05abc", 0)
    assert info.value.offset == 1
    with pytest.raises(MalformedEventError, match="overruns"):
        read_lenenc_bytes(b"\x03abcd", 0, 3)


# -- NUL-terminated strings --------------------------------------------------------------


def test_cstring() -> None:
    assert read_cstring(b"ab\0cd\0", 0) == (b"ab", 3)
    assert read_cstring(b"ab\0cd\0", 3) == (b"cd", 6)
    assert read_cstring(memoryview(b"\0"), 0) == (b"", 1)
    with pytest.raises(MalformedEventError, match="NUL") as info:
        read_cstring(b"xabc", 1)
    assert info.value.offset == 1
    with pytest.raises(MalformedEventError, match="NUL"):
        read_cstring(b"ab\0", 0, 2)  # the NUL is past the bound


def test_until_nul() -> None:
    assert until_nul(b"5.7.30-log\0\0\0") == b"5.7.30-log"
    assert until_nul(memoryview(b"no nul")) == b"no nul"
    assert until_nul(b"") == b""


# -- server text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", [b"", b"mysql-bin.000001", "sch\u00e9ma \U0001f642".encode(), b"\xff\xfe bytes"]
)
def test_server_text_loses_no_byte(raw: bytes) -> None:
    text = server_text(raw)
    try:
        assert text.encode("utf-8") == raw
    except AssertionError:
        # not UTF-8: the latin-1 fallback maps every byte to one character
        assert text.encode("latin-1") == raw
    assert server_text(memoryview(raw)) == text


def test_server_text_is_utf8_first() -> None:
    assert server_text("\u00e9".encode()) == "\u00e9"  # not 'Ã©'
    assert server_text(b"\xe9") == "\u00e9"  # latin-1 fallback, never U+FFFD


# -- the same codec on real bytes -------------------------------------------------------------


def test_table_map_column_count_of_a_fixture() -> None:
    # 5.7 TABLE_MAP: table_id u48 | flags u16 | db_len u8 | db NUL | table_len u8 | table NUL
    # | column count (lenenc) | types ...
    data = (FIXTURES / "mysql-cdc-rs/5.7/19_table_map/log.bin").read_bytes()
    event = next(e.data for e in split_events(data) if e.type_code == 19)
    pos = 19 + 8
    db_len = event[pos]
    pos += 1 + db_len + 1
    table_len = event[pos]
    pos += 1 + table_len + 1
    count, after = read_lenenc_int(event, pos)
    assert 0 < count < 251 and after == pos + 1
    assert len(event) - 4 > after + count  # the type bytes follow


def test_wire_reports_codec_errors_as_its_packets_errors() -> None:
    ok = parse_ok(bytes.fromhex("00fc2c01fb0200000000"))  # 300 rows, NULL insert id
    assert (ok.affected_rows, ok.last_insert_id, ok.status) == (300, 0, 2)
    with pytest.raises(ProtocolError, match="truncated OK packet") as info:
        parse_ok(bytes.fromhex("00fd0100"))
    assert not isinstance(info.value, MalformedEventError)
    reader = ResultSetReader()
    reader.feed(b"\x01")  # one column
    reader.in_rows = True
    reader.column_count = 1
    with pytest.raises(ProtocolError, match="truncated result set row"):
        reader.feed(b"\x05ab")
