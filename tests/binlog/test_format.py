"""The format a body decoder sees (``binlog/format.py``), taken from real FDEs.

Every FORMAT_DESCRIPTION_EVENT of the fixture binlogs (MySQL 5.0 - 9.x,
MariaDB 10.3 - 11.8) is the oracle for the post-header lengths the decoder
assumes when an FDE does not list a type.
"""

from __future__ import annotations

import gzip
from functools import cache

import pytest

from replica_client.binlog.constants import BinlogChecksumAlg, EventType
from replica_client.binlog.decoder import EventDecoder
from replica_client.binlog.events import FormatDescriptionEvent
from replica_client.binlog.format import (
    DEFAULT_POST_HEADER_LENS,
    BinlogFormat,
    resolve_post_header_lens,
)
from replica_client.binlog.legacy import legacy_format
from replica_client.errors import ProtocolError
from tests.binlog_files import FIXTURES, fixture_events

E = EventType
#: The pre-GA 5.1/5.2 trees wrote 4-byte table ids (post-header 6).
PRE_GA = "rust_mysql_common/ver_5_1-wl2325_r.001"


@cache
def fixture_fdes() -> list[tuple[str, FormatDescriptionEvent]]:
    out: list[tuple[str, FormatDescriptionEvent]] = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix in (".md", ".txt", ".sql"):
            continue
        rel = str(path.relative_to(FIXTURES))
        try:
            events = fixture_events(rel, unknown_events="keep")
        except ProtocolError:  # the negative fixtures (test_all_binlogs covers them)
            continue
        out.extend((rel, e) for _, e in events if isinstance(e, FormatDescriptionEvent))
    return out


def test_fixtures_hold_many_fdes() -> None:
    versions = {fde.server_version.split("-")[0] for _, fde in fixture_fdes()}
    assert len(fixture_fdes()) > 70 and len(versions) > 25
    assert {"5.0.86", "5.5.27", "5.7.30", "8.0.22", "9.6.0", "10.5.15"} <= versions


def test_defaults_are_what_servers_write() -> None:
    listed = 0
    for rel, fde in fixture_fdes():
        for type_code, default in DEFAULT_POST_HEADER_LENS.items():
            n = fde.post_header_len(type_code)
            if not n:
                continue  # this server does not list the type
            listed += 1
            if fde.server_version.startswith("5.2.2-a_drop6") and type_code in (19, 20, 21, 22):
                assert n == 6, rel  # pre-GA: table id u32
            else:
                assert n == default, (rel, E(type_code).name)
    assert listed > 1000


def test_resolve_fills_unlisted_and_zero_lengths() -> None:
    lens = resolve_post_header_lens([56, 11, 0, 0])  # START_V3, QUERY 11, STOP, ROTATE 0
    assert len(lens) == 256
    assert lens[E.START_EVENT_V3] == 56
    assert lens[E.QUERY_EVENT] == 11
    assert lens[E.ROTATE_EVENT] == 8  # listed as 0: the default
    assert lens[E.TABLE_MAP_EVENT] == 8  # not listed
    assert lens[E.XID_EVENT] == 0  # no post-header, no default
    assert BinlogFormat().post_header_len(E.WRITE_ROWS_EVENT) == 10


@pytest.mark.parametrize(
    ("rel", "version", "mariadb", "crc32"),
    [
        ("rust_mysql_common/mariadb-bin.000001", 4, True, True),
        ("mysql-cdc-rs/5.7/02_query/log.bin", 4, False, True),
        ("osheroff-mysql-binlog-connector-java/mysql-bin.checksum-none", 4, False, False),
        ("osheroff-mysql-binlog-connector-java/mysql-bin.sakila.gz", 4, False, False),
    ],
)
def test_format_after_a_real_fde(rel: str, version: int, mariadb: bool, crc32: bool) -> None:
    data = fixture_events(rel)[0][1]
    decoder = EventDecoder()
    decoder.begin_file()
    raw = (FIXTURES / rel).read_bytes()
    if rel.endswith(".gz"):
        raw = gzip.decompress(raw)
    decoder.decode(raw[4 : 4 + data.header.event_size], 4)
    fmt = decoder.format
    assert (fmt.binlog_version, fmt.header_len, fmt.mariadb, fmt.crc32) == (
        version,
        19,
        mariadb,
        crc32,
    )
    assert fmt.checksum_alg == data.checksum_alg
    assert fmt.post_header_lens == resolve_post_header_lens(data.post_header_lengths)
    assert not fmt.pre_ga and not fmt.old_table_map
    assert decoder.fde == data


def test_pre_ga_format() -> None:
    events = fixture_events(PRE_GA)
    fde = events[0][1]
    assert isinstance(fde, FormatDescriptionEvent)
    assert fde.post_header_len(E.TABLE_MAP_EVENT) == 6  # renumbered from type 16
    decoder = EventDecoder()
    decoder.begin_file()
    raw = (FIXTURES / PRE_GA).read_bytes()
    decoder.decode(raw[4 : 4 + fde.header.event_size], 4)
    assert decoder.format.pre_ga and decoder.format.old_table_map


@pytest.mark.parametrize(("version", "header_len"), [(1, 13), (3, 19)])
def test_legacy_formats(version: int, header_len: int) -> None:
    fmt = legacy_format(version)
    assert (fmt.binlog_version, fmt.header_len) == (version, header_len)
    assert fmt.checksum_alg == BinlogChecksumAlg.UNDEF and not fmt.crc32
    assert not fmt.mariadb and fmt.old_table_map
    assert fmt.post_header_len(E.QUERY_EVENT) == 11  # no status variables before v4
    assert fmt.post_header_len(E.LOAD_EVENT) == 18
