"""Tests for compressed events (replica_client.binlog.compression).

* MySQL TRANSACTION_PAYLOAD_EVENT: the three server-written fixtures listed in
  ``tests/data/binlogs/MANIFEST.md`` (MySQL 8.0.28, 8.0.31, 8.0.32).
* MariaDB compressed events: real events embedded below, written by a private
  MariaDB 10.11.19 (``--log-bin-compress=ON --log-bin-compress-min-len=10
  --binlog-checksum=CRC32 --binlog-format=ROW``). The same server then wrote the
  same DECIMAL rows uncompressed into a twin table (``p2``/``p7`` next to
  ``t2``/``t7``), which is the oracle for the uncompressed row bytes.
* The integration test makes a fresh compressed binlog with the harness and checks
  every rebuilt event against the uncompressed events ``mariadb-binlog`` prints in
  its ``BINLOG '...'`` statements (the server's own uncompress code).
"""

from __future__ import annotations

import base64
import contextlib
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from replica_client.binlog.compression import (
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    MARIADB_COMPRESSED_TYPES,
    TransactionPayload,
    decompress_payload,
    mariadb_uncompressed_length,
    parse_transaction_payload,
    split_payload_events,
    uncompress_mariadb,
    uncompress_query_event,
    uncompress_rows_event,
    uncompressed_type,
)
from replica_client.errors import LimitExceededError, MalformedEventError
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import ServerVariant
from tests.binlog_files import FIXTURES

HEADER = struct.Struct("<IBIIIH")


def walk(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """Tiny test-local walker: (offset, type, whole event incl. CRC)."""
    data = path.read_bytes()
    assert data[:4] == b"\xfebin"
    pos = 4
    while pos + HEADER.size <= len(data):
        _, type_code, _, size, _, _ = HEADER.unpack_from(data, pos)
        yield pos, type_code, data[pos : pos + size]
        pos += size


def crc_ok(event: bytes) -> bool:
    return bool(zlib.crc32(event[:-4]) == struct.unpack_from("<I", event, len(event) - 4)[0])


# -- MySQL transaction payloads -----------------------------------------------------------

# file, (compressed size, uncompressed size, inner event types) per payload event
PAYLOAD_FIXTURES = [
    (
        "osheroff-mysql-binlog-connector-java/mysql-bin.compressed",
        [(451, 960, [2, 19, 31, 16])],
    ),
    ("rust_mysql_common/transaction_compression.000001", [(124, 179, [2, 19, 30, 16])]),
    (
        "apecloud-mysql-binlog-connector-rust/mysql-bin.000057",
        [(161, 214, [2, 29, 19, 30, 16]), (516, 1255, [2, 29, 19, 31, 29, 19, 30, 16])],
    ),
]


@pytest.mark.parametrize(("name", "expected"), PAYLOAD_FIXTURES)
def test_transaction_payload_fixtures(
    name: str, expected: list[tuple[int, int, list[int]]]
) -> None:
    seen = []
    for _, type_code, event in walk(FIXTURES / name):
        if type_code != 40:
            continue
        assert crc_ok(event)
        payload = parse_transaction_payload(memoryview(event)[19:-4])
        assert payload.compression_type == COMPRESSION_ZSTD
        data = decompress_payload(payload)
        assert len(data) == payload.uncompressed_size
        inner = split_payload_events(data)
        # Inner events carry no CRC trailer: their sizes add up to the payload exactly,
        # and the last 4 bytes of each are not a CRC32 of the rest.
        assert sum(len(e) for e in inner) == len(data)
        assert not any(crc_ok(bytes(e)) for e in inner)
        # The inner QUERY is the transaction's BEGIN.
        query = bytes(inner[0])
        status_len = struct.unpack_from("<H", query, 19 + 11)[0]
        db_len = query[19 + 8]
        assert query[19 + 13 + status_len + db_len + 1 :] == b"BEGIN"
        seen.append((payload.payload_size, len(data), [e[4] for e in inner]))
    assert seen == expected


def _packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 2**16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 2**24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def _field(kind: int, value: int) -> bytes:
    raw = _packed(value)
    return _packed(kind) + _packed(len(raw)) + raw


def make_payload(inner: bytes, compression: int = 0, extra: bytes = b"") -> bytes:
    data = zstandard.ZstdCompressor().compress(inner) if compression == 0 else inner
    return (
        _field(2, compression)
        + extra
        + _field(3, len(inner))
        + _field(1, len(data))
        + b"\x00"
        + data
    )


def inner_event(type_code: int, body: bytes) -> bytes:
    return HEADER.pack(0, type_code, 1, 19 + len(body), 0, 0) + body


def test_uncompressed_payload_and_unknown_fields() -> None:
    inner = inner_event(2, b"q" * 30) + inner_event(16, b"x" * 8)
    body = make_payload(inner, COMPRESSION_NONE, extra=b"\x09\x02ab")  # field 9 skipped
    payload = parse_transaction_payload(body)
    assert payload == TransactionPayload(COMPRESSION_NONE, len(inner), len(inner), inner)
    assert decompress_payload(payload) == inner
    assert [bytes(e) for e in split_payload_events(inner)] == [inner[:49], inner[49:]]


def test_large_zstd_payload() -> None:
    inner = b"".join(inner_event(30, bytes([i % 251]) * 70000) for i in range(20))
    payload = parse_transaction_payload(make_payload(inner))
    assert payload.uncompressed_size == len(inner) > 2**20
    assert decompress_payload(payload) == inner
    with pytest.raises(LimitExceededError):
        decompress_payload(payload, max_size=2**20)


@pytest.mark.parametrize(
    "body",
    [
        b"",  # no end marker
        b"\x02\x01\x00",  # still no end marker
        b"\x02\x05\x00",  # field runs past the body
        b"\x02\x02\x00\x00\x00",  # value 1 byte, field says 2
        b"\x01\x01\x05\x00abc",  # no compression type
        b"\x02\x01\x00\x01\x01\x05\x00abc",  # payload size 5, 3 bytes present
        b"\xff",  # bad packed integer
    ],
)
def test_malformed_payload_header(body: bytes) -> None:
    with pytest.raises(MalformedEventError):
        parse_transaction_payload(body)


def test_malformed_payload_data() -> None:
    inner = inner_event(2, b"q" * 30)
    good = parse_transaction_payload(make_payload(inner))
    cases = [
        TransactionPayload(7, 3, 3, b"abc"),  # unknown compression
        TransactionPayload(0, 3, 3, b"abc"),  # not zstd
        TransactionPayload(0, good.payload_size, len(inner) + 1, good.payload),  # size lie
        TransactionPayload(0, good.payload_size, len(inner) - 1, good.payload),  # size lie
        TransactionPayload(0, 10, 49, good.payload[:10]),  # truncated frame
        TransactionPayload(255, 3, 4, b"abc"),  # NONE but sizes disagree
    ]
    for payload in cases:
        with pytest.raises(MalformedEventError):
            decompress_payload(payload)
    with pytest.raises(LimitExceededError):
        decompress_payload(good, max_size=10)


@pytest.mark.parametrize(
    "data",
    [
        inner_event(2, b"x")[:10],  # header cut
        inner_event(2, b"xyz")[:-1],  # event cut
        HEADER.pack(0, 2, 1, 5, 0, 0),  # size smaller than a header
        inner_event(40, b""),  # nested payload
    ],
)
def test_malformed_inner_events(data: bytes) -> None:
    with pytest.raises(MalformedEventError):
        split_payload_events(data)


@given(st.binary(max_size=64))
def test_any_payload_bytes_parse_or_raise_malformed(body: bytes) -> None:
    with contextlib.suppress(MalformedEventError, LimitExceededError):
        decompress_payload(parse_transaction_payload(body), max_size=1 << 16)


# -- MariaDB compressed events: real bytes ----------------------------------------------

QUERY_COMPRESSED = bytes.fromhex(
    "9393016ba5020000007e000000b5200000000004000000000000000100002300000000000101000020540000"
    "00000603737464042100210008008109000000000000007700812b789c730e72750c7155087174f271552831"
    "52d04851707175f6f475f4d13033d53136d054f0f30f51f00bf5f1d10400ee6b0a9e19c9244a"
)
WRITE_T2_COMPRESSED = bytes.fromhex(
    "9393016ba6020000008900000001230000000017000000000001000101820193789cfbd7c0800ffc43936644"
    "93aeff8f02fea171d10d973d9b8a47f7ff4746b3f0e9467509866e54abffb57e7df0df7ad649ac98f9f9bf2a"
    "2e798623a96658f11f0914bbd9a3cf8a82300e97ff5862f4eaa8e2743fec2e470b310cdd303b112200cc7dba"
    "8d0584de08"
)
WRITE_P2_PLAIN = bytes.fromhex(
    "c893016b1702000000b40100009605000000001e000000000001000101fe8000000000000000000000000000"
    "00000000000000000000000000000000fe800000000000000000000000000000010000000000000000000000"
    "000000fe7ffffffffffffffffffffffffffffffefffffffffffffffffffffffffffffe800000000000000000"
    "000000000000001dcd650000000000000000000000fe7fffffffffffffffffffffffffffffffe2329affffff"
    "fffffffffffffffffe800000000000000000000000000000000000000000000000000000000001fe7fffffff"
    "fffffffffffffffffffffffffffffffffffffffffffffffffffefe85f5e0ff3b9ac9ff3b9ac9ff3b9ac9ff3b"
    "9ac9ff3b9ac9ff3b9ac9ff03e7fe7a0a1f00c4653600c4653600c4653600c4653600c4653600c4653600fc18"
    "fe800000000000000000000000075bcd15075bcd1500000000000000000000fe7fffffffffffffffffffffff"
    "f8a432eac521974efffffffffffffffffffffe80000000000000000000000100000000000000000000000000"
    "0000000000fe7fffffffffffffffffffffffc4653600c4653600ffffffffffffffffffff4eb27905"
)
WRITE_T7_COMPRESSED = bytes.fromhex(
    "9393016ba60200000043000000712d000000001c0000000000010001018124789cfbd71e7d5694614fa29fe9"
    "f6fdeda67c2607fcfed5ff4705ff00815319513d78c8f0"
)
WRITE_P7_PLAIN = bytes.fromhex(
    "c893016b170200000045000000c8100000000023000000000001000101fe875bcd1500bc614e35b7bf87350e"
    "34c04efe7ffffffffffffffffffffffffffffffffea25b2f8d"
)
DELETE_T1_COMPRESSED = bytes.fromhex(
    "9393016ba80200000087000000ee1f000000001200000000000100040f820f76789cfb3099818181ad28bfdc"
    "d0d87c3fb3c7281805a360a8820606066126eb0f53e059dae218b3e7281805a360880370ce3ef5612a3c675b"
    "9e65f61a05a360140c0f00cae0cc911fa6c132b889c11566ef51300a46c1b002c07c2ec2c000004ec26ea056"
    "255f06"
)


def test_type_mapping() -> None:
    # MariaDB sql/log_event.h: 166-168 are the *_V1 types, 169-171 the v2 types.
    assert MARIADB_COMPRESSED_TYPES == {
        165: 2,
        166: 23,
        167: 24,
        168: 25,
        169: 30,
        170: 31,
        171: 32,
    }
    assert uncompressed_type(166) == 23
    with pytest.raises(MalformedEventError):
        uncompressed_type(23)


def test_query_compressed_event() -> None:
    assert crc_ok(QUERY_COMPRESSED)
    assert QUERY_COMPRESSED[4] == 165
    plain = uncompress_query_event(QUERY_COMPRESSED, checksum=True)
    assert plain[4] == 2
    assert struct.unpack_from("<I", plain, 9)[0] == len(plain)
    assert crc_ok(plain)
    assert plain.endswith(b"CREATE TABLE t2 (d DECIMAL(65,30) NOT NULL)" + plain[-4:])
    # The header, post-header, status variables and db name are untouched.
    split = len(plain) - 4 - len(b"CREATE TABLE t2 (d DECIMAL(65,30) NOT NULL)")
    assert plain[:4] == QUERY_COMPRESSED[:4] and plain[13:split] == QUERY_COMPRESSED[13:split]


@pytest.mark.parametrize(
    ("compressed", "plain"),
    [(WRITE_T2_COMPRESSED, WRITE_P2_PLAIN), (WRITE_T7_COMPRESSED, WRITE_P7_PLAIN)],
)
def test_rows_compressed_equals_uncompressed_twin(compressed: bytes, plain: bytes) -> None:
    assert crc_ok(compressed) and crc_ok(plain)
    assert compressed[4] == 166 and plain[4] == 23
    out = uncompress_rows_event(compressed, checksum=True)
    assert out[4] == 23
    assert len(out) == len(plain)
    assert crc_ok(out)
    # Same rows, same flags, same bitmaps; only the table id (bytes 19..25) differs.
    assert out[25:-4] == plain[25:-4]


def test_delete_rows_compressed() -> None:
    out = uncompress_rows_event(DELETE_T1_COMPRESSED, checksum=True)
    assert out[4] == 25 and crc_ok(out)
    # t1(id INT, name VARCHAR(200), note TEXT, amount DECIMAL(12,3)): width 4, one
    # bitmap, then rows. This is the last of six DELETE events for
    # "DELETE FROM t1 WHERE id BETWEEN 100 AND 150"; `mariadb-binlog -v` on the same
    # file prints @1=147, 148, 149, 150 for it.
    assert out[27] == 4 and out[28] == 0x0F
    assert struct.unpack_from("<i", out, 30)[0] == 147
    assert out.count(bytes([0x00, 0x96, 0, 0, 0])) + out.count(b"\x96\x00\x00\x00") >= 1


def test_without_checksum() -> None:
    stripped = bytearray(WRITE_T2_COMPRESSED[:-4])
    struct.pack_into("<I", stripped, 9, len(stripped))
    out = uncompress_rows_event(bytes(stripped), checksum=False)
    assert out == WRITE_P2_PLAIN[:19][:0] + out[:25] + WRITE_P2_PLAIN[25:-4]
    assert struct.unpack_from("<I", out, 9)[0] == len(out)


def block(payload: bytes, lenlen: int | None = None, header: int | None = None) -> bytes:
    n = len(payload)
    lenlen = lenlen or max(1, (n.bit_length() + 7) // 8)
    head = header if header is not None else 0x80 | lenlen
    return bytes([head]) + n.to_bytes(lenlen, "big") + zlib.compress(payload)


@pytest.mark.parametrize("size", [1, 255, 256, 65535, 65536, 1 << 24])
def test_uncompress_block_sizes(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    raw = b"pre" + block(payload) + b"crc!"
    assert mariadb_uncompressed_length(raw, 3) == size
    assert uncompress_mariadb(raw, 3, len(raw) - 4) == payload


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\x01" + zlib.compress(b"a"),  # not flagged compressed
        b"\x91\x01" + zlib.compress(b"a"),  # algorithm 1
        b"\x80" + zlib.compress(b"a"),  # lenlen 0
        b"\x85\x00\x00\x00\x00\x01" + zlib.compress(b"a"),  # lenlen 5
        b"\x81\x00" + zlib.compress(b""),  # declared 0
        b"\x82\x01",  # truncated length
        b"\x81\x02" + zlib.compress(b"a"),  # declares 2, holds 1
        b"\x81\x01" + zlib.compress(b"ab"),  # declares 1, holds 2
        b"\x81\x01" + zlib.compress(b"a")[:-2],  # truncated stream
        b"\x81\x01" + zlib.compress(b"a") + b"junk",  # trailing bytes
        b"\x81\x01" + b"\x00" * 9,  # not zlib
    ],
)
def test_malformed_blocks(raw: bytes) -> None:
    with pytest.raises(MalformedEventError):
        uncompress_mariadb(raw, 0, len(raw))


def test_block_limit() -> None:
    raw = block(b"a" * 5000)
    with pytest.raises(LimitExceededError):
        uncompress_mariadb(raw, 0, len(raw), max_size=4999)
    assert uncompress_mariadb(raw, 0, len(raw), max_size=5000) == b"a" * 5000


def test_bounds_and_event_checks() -> None:
    with pytest.raises(MalformedEventError):
        uncompress_mariadb(b"abc", 2, 1)
    with pytest.raises(MalformedEventError):
        uncompress_rows_event(WRITE_T2_COMPRESSED[:-1], checksum=True)  # length field
    with pytest.raises(MalformedEventError):
        uncompress_query_event(WRITE_T2_COMPRESSED, checksum=True)  # wrong type
    with pytest.raises(MalformedEventError):
        uncompress_rows_event(QUERY_COMPRESSED, checksum=True)


@given(st.binary(max_size=80), st.sampled_from([165, 166, 167, 168, 169, 170, 171]))
def test_any_event_bytes_uncompress_or_raise(body: bytes, type_code: int) -> None:
    event = bytearray(HEADER.pack(0, type_code, 1, 19 + len(body), 0, 0) + body)
    with contextlib.suppress(MalformedEventError, LimitExceededError):
        if type_code == 165:
            uncompress_query_event(bytes(event), checksum=False, max_size=1 << 16)
        else:
            uncompress_rows_event(bytes(event), checksum=False, max_size=1 << 16)


# -- integration: a fresh compressed binlog ------------------------------------------------


def _binlog_base64_events(path: Path) -> list[bytes]:
    """The events mariadb-binlog prints in BINLOG '...' statements (FDE excluded)."""
    tool = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    assert tool, "mariadb-binlog is needed as the oracle"
    text = subprocess.run(
        [tool, "--no-defaults", str(path)], capture_output=True, text=True, check=True
    ).stdout
    events: list[bytes] = []
    for blob in re.findall(r"BINLOG '\n(.*?)'", text, re.S):
        raw = b""
        acc = ""
        for line in blob.split():
            acc += line
            if len(line) != 76 or line.endswith("="):
                raw += base64.b64decode(acc)
                acc = ""
        pos = 0
        while pos < len(raw):
            size = HEADER.unpack_from(raw, pos)[3]
            if raw[pos + 4] != 15:
                events.append(raw[pos : pos + size])
            pos += size
    return events


@pytest.mark.integration
def test_compressed_binlog_from_server(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(ServerVariant(compress=True))
    statements = [
        "CREATE DATABASE IF NOT EXISTS compr_test",
        "DROP TABLE IF EXISTS compr_test.t",
        "CREATE TABLE compr_test.t (id INT PRIMARY KEY, v VARCHAR(100), b MEDIUMBLOB, n INT)",
        "INSERT INTO compr_test.t SELECT seq, CONCAT('value-', seq), REPEAT('ab', seq), NULL"
        " FROM compr_test.seq_1_to_300",
        "UPDATE compr_test.t SET v = CONCAT(v, '!'), n = id * 2 WHERE id % 3 = 0",
        "DELETE FROM compr_test.t WHERE id > 250",
        "INSERT INTO compr_test.t VALUES (1000, REPEAT('x', 100), REPEAT('y', 70000), 7)",
    ]
    # The server is shared: read only the files that hold these statements.
    srv.sql("FLUSH BINARY LOGS")
    first = srv.binlog_files()[-1]
    srv.sql_many(statements)
    srv.sql("FLUSH BINARY LOGS")
    # the last one is still open
    files = [f for f in srv.binlog_files()[:-1] if f.name >= first.name]
    counts: dict[int, int] = {}
    queries: list[bytes] = []
    for path in files:
        rebuilt: list[bytes] = []
        for _, type_code, event in walk(path):
            assert type_code == 15 or crc_ok(event)
            if type_code == 165:
                plain = uncompress_query_event(event, checksum=True)
                assert crc_ok(plain) and plain[4] == 2
                queries.append(plain)
            elif type_code in MARIADB_COMPRESSED_TYPES:
                plain = uncompress_rows_event(event, checksum=True)
                assert crc_ok(plain) and plain[4] == MARIADB_COMPRESSED_TYPES[type_code]
                rebuilt.append(plain)
            elif type_code in (19, 23, 24, 25):
                rebuilt.append(event)
            else:
                continue
            counts[type_code] = counts.get(type_code, 0) + 1
        oracle = _binlog_base64_events(path)
        assert len(oracle) == len(rebuilt)
        for theirs, ours in zip(oracle, rebuilt, strict=True):
            assert theirs == ours
    assert counts.get(166, 0) > 0 and counts.get(167, 0) > 0 and counts.get(168, 0) > 0
    texts = b"\n".join(queries)
    assert b"CREATE TABLE compr_test.t" in texts
