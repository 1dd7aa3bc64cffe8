"""Column values the server writes in corners of the type system, on real bytes.

Events copied from binlog files (ROW, ``binlog_row_metadata=FULL``, CRC32),
each test saying what the server was given and what ``SELECT`` shows.
"""

from __future__ import annotations

import hashlib
import zlib

import pytest

import replica_client as rc
from replica_client.binlog.events import Geometry, WriteRowsEvent
from replica_client.errors import MalformedEventError
from tests.binlog_files import decode_hex_events

#: MariaDB 10.11.19 / 11.8.9, sql_mode='':
#:   CREATE TABLE eg (id INT PRIMARY KEY, g GEOMETRY NOT NULL, p POINT);
#:   INSERT INTO eg VALUES (1, NULL, NULL), (2, POINT(1,2), POINT(3,4));
#: SELECT id, HEX(g), g IS NULL, HEX(p), p IS NULL gives
#:   (1, '', 0, NULL, 1), (2, '00000000' '0101000000' '000000000000F03F' '0000000000000040', 0,
#:    '00000000' '0101000000' '0000000000000840' '0000000000001040', 0)
EMPTY_GEOMETRY: dict[str, tuple[str, ...]] = {
    "10.11": (
        (
            "97a2046b0f01000000fc000000000100000000040031302e31312e31392d4d6172696144422d302b6465"
            "62313275312d6c6f6700000000000000000000000000000000000000000000000013380d000800120004"
            "040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "0000000000000000000000000000000000000000000000000000041304000d0808080a0a0a015333baf0"
        ),
        (
            "97a2046b130100000044000000a303000000001c00000000000100017000026567000303ffff02040404"
            "01010002013f07020001040702696401670170080100b0aec784"
        ),
        (
            "97a2046b1701000000690000000c04000000001c000000000001000307fc0100000000000000f8020000"
            "0019000000000000000101000000000000000000f03f0000000000000040190000000000000001010000"
            "0000000000000008400000000000001040dab51ff0"
        ),
    ),
    "11.8": (
        (
            "97a2046b0f01000000fc000000000100000000040031312e382e392d4d6172696144422d302b64656231"
            "3375312066726f6d2044656269616e2d6c6f67000000000000000000000000000013380d000800120004"
            "040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "0000000000000000000000000000000000000000000000000000041304000d0808080a0a0a01f33d0d71"
        ),
        (
            "97a2046b1301000000440000000000000000001f00000000000100017000026567000303ffff02040404"
            "01010002013f07020001040702696401670170080100ade254ed"
        ),
        (
            "97a2046b1701000000690000000000000000001f000000000001000307fc0100000000000000f8020000"
            "0019000000000000000101000000000000000000f03f0000000000000040190000000000000001010000"
            "0000000000000008400000000000001040690776fd"
        ),
    ),
}


@pytest.mark.parametrize("version", sorted(EMPTY_GEOMETRY))
def test_empty_geometry_is_empty_bytes_not_an_error(version: str) -> None:
    *_, event = decode_hex_events(*EMPTY_GEOMETRY[version])
    assert isinstance(event, WriteRowsEvent)
    point = bytes.fromhex("0101000000")
    assert event.rows == (
        (1, b"", None),
        (
            2,
            Geometry(0, point + bytes.fromhex("000000000000f03f0000000000000040")),
            Geometry(0, point + bytes.fromhex("00000000000008400000000000001040")),
        ),
    )


#: MySQL 9.7.4, sql_mode='':
#:   CREATE TABLE jn (id INT PRIMARY KEY, j JSON, k JSON NOT NULL);
#:   INSERT IGNORE INTO jn VALUES (1, 'null', '[]'), (2, NULL, NULL), (3, '"null"', 'null');
#: SELECT id, j IS NULL, JSON_TYPE(j), CAST(k AS CHAR), JSON_TYPE(k) gives
#:   (1, 0, 'NULL', '[]', 'ARRAY'), (2, 1, NULL, 'null', 'NULL'), (3, 0, 'STRING', 'null', 'NULL')
#: (NULL into the NOT NULL column is stored as the JSON null document).
JSON_NULL_DOCUMENTS = (
    (
        "98a2046b0f010000007b0000007f00000000000400392e372e342d320000000000000000000000000000"
        "00000000000000000000000000000000000000000000000000000000000000000013000d000800000000"
        "0400040000006300041a08000000000000020000000a0a0a2a2a001234000a28000001bc95162e"
    ),
    (
        "98a2046b1301000000400000004903000000006100000000000100017000026a6e000303f5f502040402"
        "0101000407026964016a016b0801000c01e0687927da"
    ),
    (
        "98a2046b1e01000000550000009e03000000006100000000001100020003ff0001000000020000000400"
        "0500000002000004000202000000000000000003000000060000000c046e756c6c02000000040072abab"
        "c2"
    ),
)


def test_json_null_document_is_not_sql_null() -> None:
    *_, event = decode_hex_events(*JSON_NULL_DOCUMENTS)
    assert isinstance(event, WriteRowsEvent)
    assert event.rows == (
        (1, rc.JSON_NULL, []),
        (2, None, rc.JSON_NULL),
        (3, "null", rc.JSON_NULL),
    )
    assert event.rows[1][1] is None
    assert event.rows[0][1] is rc.JSON_NULL


#: MariaDB 10.11.19 / 11.8.9 column compression (types 141 VARCHAR_COMPRESSED and
#: 140 BLOB_COMPRESSED in the TABLE_MAP, values deflated in the row image):
#:   CREATE TABLE cz (id INT PRIMARY KEY, v VARCHAR(300) COMPRESSED CHARSET utf8mb4,
#:                    t TEXT COMPRESSED CHARSET utf8mb4, b BLOB COMPRESSED,
#:                    vb VARBINARY(50) COMPRESSED);
#:   INSERT INTO cz VALUES (1, REPEAT('abc', 50), REPEAT('xyzé', 100), 'short', 'x'),
#:     (2, '', '', '', ''), (3, NULL, NULL, NULL, NULL),
#:     (4, 'ü', REPEAT('🙂', 70), REPEAT(x'00ff', 200), REPEAT('y', 50));
#: SELECT id, MD5(v), MD5(t), MD5(b), MD5(vb) gives COMPRESSED_MD5 (the same on both).
COMPRESSED_COLUMNS: dict[str, tuple[str, ...]] = {
    "10.11": (
        (
            "1aa4046b0f01000000fc000000000100000000040031302e31312e31392d4d6172696144422d302b6465"
            "62313275312d6c6f6700000000000000000000000000000000000000000000000013380d000800120004"
            "040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "0000000000000000000000000000000000000000000000000000041304000d0808080a0a0a01ffd438b3"
        ),
        (
            "1aa4046b13010000004e0000009304000000001f0000000000010001700002637a0005038d8c8c8d06b1"
            "04020233001e01010003042d2d3f3f040c026964017601740162027662080100d36e8a2f"
        ),
        (
            "1aa4046b1701000000ba0000004d05000000001f00000000000100051fe0010000000a0089964b4c4a4e"
            "1c7c08000f008a01f4aba8ac3abcb262941849040006000073686f7274020078e0020000000000000000"
            "0000fe03000000e004000000030000c3bc0d008a0118fb307f66d387518c81010c008a019063f8cf300a"
            "071104003300797979797979797979797979797979797979797979797979797979797979797979797979"
            "7979797979797979797979797979bce4af7d"
        ),
    ),
    "11.8": (
        (
            "1aa4046b0f01000000fc000000000100000000040031312e382e392d4d6172696144422d302b64656231"
            "3375312066726f6d2044656269616e2d6c6f67000000000000000000000000000013380d000800120004"
            "040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "0000000000000000000000000000000000000000000000000000041304000d0808080a0a0a015fda8f32"
        ),
        (
            "1aa4046b130100000052000000000000000000240000000000010001700002637a0005038d8c8c8d06b1"
            "04020233001e0101000308fc0009fc00093f3f040c02696401760174016202766208010021288b9d"
        ),
        (
            "1aa4046b1701000000ba0000000000000000002400000000000100051fe0010000000a0089964b4c4a4e"
            "1c7c08000f008a01f4aba8ac3abcb262941849040006000073686f7274020078e0020000000000000000"
            "0000fe03000000e004000000030000c3bc0d008a0118fb307f66d387518c81010c008a019063f8cf300a"
            "071104003300797979797979797979797979797979797979797979797979797979797979797979797979"
            "7979797979797979797979797979a5d06a91"
        ),
    ),
}
_EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e"
COMPRESSED_MD5 = {
    1: (
        "278d86d27fdb35a382e68a3194dffd06",
        "b70715eb7af3b7388b4f008874ff6961",
        "4f09daa9d95bcb166a302407a0e0babe",
        "9dd4e461268c8034f5c8564e155c67a6",
    ),
    2: (_EMPTY_MD5,) * 4,
    3: (None,) * 4,
    4: (
        "c03410a5204b21cd8229ff754688d743",
        "e809518af89f14d5c728eab3bf8dcda9",
        "17f8241e25be90c7939351d9c0804952",
        "92bba6d17f878d060515e78d0d2195b7",
    ),
}


def _md5(value: object) -> str | None:
    if value is None:
        return None
    data = value.encode() if isinstance(value, str) else value
    assert isinstance(data, bytes)
    return hashlib.md5(data).hexdigest()


@pytest.mark.parametrize("version", sorted(COMPRESSED_COLUMNS))
def test_mariadb_compressed_columns_are_inflated(version: str) -> None:
    *_, event = decode_hex_events(*COMPRESSED_COLUMNS[version])
    assert isinstance(event, WriteRowsEvent)
    assert [c.type for c in event.table.columns] == [3, 141, 140, 140, 141]
    decoded = {row[0]: tuple(_md5(v) for v in row[1:]) for row in event.rows}
    assert decoded == COMPRESSED_MD5
    # text columns are text, binary ones bytes
    first = event.rows[0]
    assert isinstance(first[1], str) and isinstance(first[2], str)
    assert isinstance(first[3], bytes) and isinstance(first[4], bytes)


@pytest.mark.parametrize(
    ("offset", "byte", "message"),
    [
        (1, 0x97, "inflates to 150 bytes, header says 151"),  # the original length
        (2, 0xFF, "compressed column value: Error -3"),  # deflate block type 3: invalid
    ],
)
def test_a_corrupt_compressed_value_is_a_malformed_event(
    offset: int, byte: int, message: str
) -> None:
    fde, table_map, rows = COMPRESSED_COLUMNS["10.11"]
    raw = bytearray(bytes.fromhex(rows))
    # the first row's v: 2-byte length, header 0x89 (raw deflate, 1 length byte), 150
    start = raw.index(bytes.fromhex("89964b"))
    raw[start + offset] = byte
    raw[-4:] = zlib.crc32(raw[:-4]).to_bytes(4, "little")
    with pytest.raises(MalformedEventError, match=message):
        decode_hex_events(fde, table_map, raw.hex())


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (bytes.fromhex("0000803F00000040"), [1.0, 2.0]),
        (b"", []),
        # what MySQL 9.7 keeps after ALTER ... CHANGE c c VECTOR of a GEOMETRY column
        # (SELECT HEX() shows these 25 bytes): not float32s, they stay bytes
        (bytes(range(25)), bytes(range(25))),
    ],
)
def test_mysql_vector_values(raw: bytes, value: list[float] | bytes) -> None:
    from replica_client.binlog.columns import reader_for
    from replica_client.binlog.constants import ColumnType as T
    from replica_client.binlog.events import ColumnInfo

    col = ColumnInfo(0, T.VECTOR, T.VECTOR, 4, True, "v")
    row = len(raw).to_bytes(4, "little") + raw
    assert reader_for(col, False)(memoryview(row), 0) == (value, len(row))
