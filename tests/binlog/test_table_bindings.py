"""TABLE_MAP and rows events (``binlog/table_bindings.py``): the table-map state and its rules.

Real bytes: MySQL 5.7 / 8.0 / 9.0 and MariaDB 10.5 fixture logs. The values of
the row images are compared with ``mysqlbinlog -v`` output in
``tests/fixtures_walk/test_expected_output.py``; here the rules of the state:
a statement's TABLE_MAPs, their end at STMT_END, the table filter, the limit.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, cast

import pymysql
import pytest

import replica_client as rc
from replica_client.binlog.decoder import EventDecoder
from replica_client.binlog.events import (
    DeleteRowsEvent,
    PartialJson,
    PartialUpdateRowsEvent,
    RawRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from replica_client.binlog.json_binary import apply_json_diffs
from replica_client.binlog.row_decoders import RowDecoderCache
from replica_client.config import DecoderOptions, TableFilter
from replica_client.errors import LimitExceededError, MalformedEventError
from replica_client.testing.server import MariaDBServer
from tests.binlog_files import FIXTURES, fixture_events, split_events
from tests.binlog_live import SCHEMA, capture, read

WRITE_57 = FIXTURES / "mysql-cdc-rs/5.7/30_write_rows_v2/log.bin"
CRC32_57 = "osheroff-mysql-binlog-connector-java/mysql-bin.checksum-crc32"


def _decoder(**options: Any) -> EventDecoder:
    decoder = EventDecoder(DecoderOptions(**options))
    decoder.begin_file()
    return decoder


def _with_crc(event: bytes) -> bytes:
    return event[:-4] + struct.pack("<I", zlib.crc32(event[:-4]))


def test_rows_find_their_table_map_until_the_statement_ends() -> None:
    decoder = _decoder()
    table_id = None
    for raw in split_events(WRITE_57.read_bytes()):
        event = decoder.decode(raw.data, raw.position)
        if isinstance(event, TableMapEvent):
            table_id = event.table_id
            assert decoder.table(table_id) == event
        elif isinstance(event, RowsEvent):
            assert event.table.table_id == table_id
            assert event.statement_end  # one rows event per statement here
            assert decoder.table(event.table_id) is None  # STMT_END dropped the map
    assert table_id is not None


def test_rows_without_their_table_map_are_an_error() -> None:
    events = split_events(WRITE_57.read_bytes())
    decoder = _decoder()
    for raw in events:
        if raw.type_code == 19:
            continue  # the TABLE_MAP is not fed
        if raw.type_code == 30:
            with pytest.raises(MalformedEventError, match="without a preceding TABLE_MAP") as info:
                decoder.decode(raw.data, raw.position)
            assert (info.value.event_type, info.value.position) == (30, raw.position)
            return
        decoder.decode(raw.data, raw.position)
    pytest.fail("no rows event in the fixture")


def test_excluded_tables_are_never_decoded() -> None:
    events = fixture_events(CRC32_57)
    tables = {(e.schema, e.table) for _, e in events if isinstance(e, TableMapEvent)}
    assert len(tables) > 1
    kept = sorted(tables)[0]
    filtered = fixture_events(CRC32_57, tables=TableFilter.parse(".".join(kept)))
    assert {(e.schema, e.table) for _, e in filtered if isinstance(e, TableMapEvent)} == {kept}
    rows = [e for _, e in filtered if isinstance(e, RowsEvent)]
    assert rows and all((e.schema, e.table_name) == kept for e in rows)
    every = [e for _, e in events if isinstance(e, RowsEvent) and (e.schema, e.table_name) == kept]
    assert [cast(Any, r).rows for r in rows] == [cast(Any, r).rows for r in every]


def test_raw_rows_when_rows_are_not_decoded() -> None:
    events = fixture_events(CRC32_57, decode_rows=False)
    raw = [e for _, e in events if isinstance(e, RawRowsEvent)]
    assert len(raw) == 60  # 34 WRITE, 20 UPDATE, 6 DELETE (MANIFEST.md)
    assert not [e for _, e in events if isinstance(e, RowsEvent)]


def test_one_compiled_decoder_per_table_definition() -> None:
    decoder = _decoder()
    raws = split_events((FIXTURES / CRC32_57).read_bytes())
    maps = [r.data for r in raws if r.type_code == 19]
    for raw in raws:
        decoder.decode(raw.data, raw.position)
    # a definition: the TABLE_MAP after its table id (u48), before the CRC32
    definitions = {data[19 + 6 : -4] for data in maps}
    assert len(maps) == 60 and len(definitions) < len(maps)
    assert len(decoder.table_maps.decoders) == len(definitions)


def test_a_compiled_decoder_serves_only_its_binlog_layout() -> None:
    # The same TABLE_MAP bytes read differently in a MariaDB and a MySQL binlog.
    tm = next(e for _, e in fixture_events(CRC32_57) if isinstance(e, TableMapEvent))
    cache = RowDecoderCache()
    mysql = cache.get(0, b"definition", tm, mariadb=False)
    assert cache.lookup(0, b"definition") is mysql
    assert cache.lookup(1, b"definition") is None
    mariadb = cache.get(1, b"definition", tm, mariadb=True)
    assert mariadb is not mysql and cache.lookup(1, b"definition") is mariadb
    assert cache.lookup(0, b"definition") is None and len(cache) == 0


def test_table_maps_of_one_statement_are_limited() -> None:
    events = split_events(WRITE_57.read_bytes())
    decoder = _decoder(table_map_cache_size=1)
    for raw in events:
        if raw.type_code == 19:
            decoder.decode(raw.data, raw.position)
            other = bytearray(raw.data)
            other[19:25] = (12345).to_bytes(6, "little")  # a second table id
            with pytest.raises(LimitExceededError, match="raise table_map_cache_size"):
                decoder.decode(_with_crc(bytes(other)), raw.position)
            return
        decoder.decode(raw.data, raw.position)
    pytest.fail("no TABLE_MAP in the fixture")


def test_v1_rows_of_mariadb() -> None:
    rows = [
        e
        for _, e in fixture_events("rust_mysql_common/mariadb-bin.000001")
        if isinstance(e, WriteRowsEvent)
    ]
    assert len(rows) == 2
    assert [r.header.type_code for r in rows] == [23, 23]
    assert [r.rows[0][:3] for r in rows] == [(62, "foo", "JSON"), (63, "foo", "JSON")]
    assert rows[0].extra_data == b""


def test_update_and_delete_rows_v2() -> None:
    (update,) = [
        e
        for _, e in fixture_events("mysql-cdc-rs/5.7/31_update_rows_v2/log.bin")
        if isinstance(e, UpdateRowsEvent)
    ]
    ((before, after),) = update.rows
    assert (before[0], before[1], after[1]) == (1, b"abc", b"xd")
    deletes = [
        e
        for _, e in fixture_events("mysql-cdc-rs/5.7/32_delete_rows_v2/log.bin")
        if isinstance(e, DeleteRowsEvent)
    ]
    assert deletes and all(d.rows for d in deletes)


def test_partial_json_update_of_mysql_8() -> None:
    events = [e for _, e in fixture_events("rust_mysql_common/json.binlog.000001")]
    (partial,) = [e for e in events if isinstance(e, PartialUpdateRowsEvent)]
    assert partial.header.type_code == 39
    assert len(partial.json_diffs) == len(partial.rows)
    for (_, after), diffs in zip(partial.rows, partial.json_diffs, strict=True):
        assert set(diffs) == {1}  # the JSON column
        (diff,) = diffs[1]
        assert diff.path == "$.age" and diff.value == after[3]  # age is also a column
        # MINIMAL before image: the document is not there to apply the diff to
        assert isinstance(after[1], PartialJson) and after[1].diffs == diffs[1]
    # the same diff applied to the document the earlier UPDATE left
    full = next(e for e in events if type(e) is UpdateRowsEvent)
    doc = full.rows[0][1][1]
    assert apply_json_diffs(doc, partial.json_diffs[0][1]) == {**doc, "age": 26}


def test_pre_ga_rows_of_mysql_5_1() -> None:
    events = fixture_events("rust_mysql_common/ver_5_1-wl2325_r.001")
    rows = [e for _, e in events if isinstance(e, RowsEvent)]
    assert {r.header.type_code for r in rows} == {20, 21, 22}
    update = next(r for r in rows if isinstance(r, UpdateRowsEvent))
    assert all(len(pair) == 2 for pair in update.rows)


# -- live: the server is the oracle -------------------------------------------------------


def test_table_filter_drops_other_tables_rows(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    srv = mariadb_primary
    srv.sql_many(
        [
            f"CREATE TABLE {SCHEMA}.a (id INT PRIMARY KEY, s VARCHAR(10))",
            f"CREATE TABLE {SCHEMA}.b (id INT PRIMARY KEY, s VARCHAR(10))",
        ]
    )
    statements = [
        f"INSERT INTO {SCHEMA}.a VALUES (1, 'a1'), (2, 'a2')",
        f"INSERT INTO {SCHEMA}.b VALUES (1, 'b1'), (2, 'b2'), (3, 'b3')",
        "BEGIN",
        f"UPDATE {SCHEMA}.b SET s = 'x'",
        f"DELETE FROM {SCHEMA}.a WHERE id = 2",
        "COMMIT",
    ]
    captured = capture(srv, conn, statements)
    unfiltered = [e for _, e in captured.events]
    filtered = [e for _, e in read(srv, captured.name, tables=f"{SCHEMA}.a")]
    maps = [e for e in filtered if isinstance(e, TableMapEvent)]
    assert maps and {(m.schema, m.table) for m in maps} == {(SCHEMA, "a")}
    rows_types = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
    assert all(e.table.table == "a" for e in filtered if isinstance(e, rows_types))
    dropped = [e for e in unfiltered if isinstance(e, TableMapEvent) and e.table == "b"]
    assert len(unfiltered) - len(filtered) > len(dropped)  # maps and rows of b
    path = next(f for f in srv.binlog_files() if f.name == captured.name)
    with rc.open_binlog(path, tables=f"{SCHEMA}.a") as reader:
        changes = list(rc.iter_changes(reader))
    selected = srv.sql(f"SELECT COUNT(*) FROM {SCHEMA}.a")[0][0]
    assert [(c.op, c.table) for c in changes] == [
        ("insert", "a"),
        ("insert", "a"),
        ("delete", "a"),
    ]
    assert selected == 1
