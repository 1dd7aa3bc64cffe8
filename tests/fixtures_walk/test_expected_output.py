"""Decoded events equal the expected output that came with the fixtures.

* ``mysql-cdc-rs/*/*/dump.txt``: ``mysqlbinlog --hexdump`` (-vvvvvv for 8.0):
  per event its start position, end position, server id, type byte, CRC32,
  the GTID it sets, and the ``### INSERT/UPDATE/DELETE`` rows as ``@n=value``.
* ``mysql-cdc-rs/8.0/*/show.txt``: SHOW BINLOG EVENTS (Pos, Event_type,
  Server_id, End_log_pos, Info).
* ``mariadb-operator-poc/README.expected-metadata.md``: per file the server
  version, size, first/last timestamps, GTID_LIST state, first/last GTID and
  whether the file ends with ROTATE or STOP.

The text files are parsed here; the binlogs are decoded with ``rc.open_binlog``.
Also: the JSON partial-update file yields full after images, and the
TRANSACTION_PAYLOAD files yield their inner rows.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import replica_client as rc
from replica_client.binlog.events import (
    AnonymousGtidEvent,
    MysqlGtidEvent,
    PartialJson,
    PartialUpdateRowsEvent,
    PreviousGtidsEvent,
    TransactionPayloadEvent,
)
from replica_client.binlog.json_binary import apply_json_diffs
from tests.binlog_files import FIXTURES

CDC = FIXTURES / "mysql-cdc-rs"


def _require(path: Path) -> Path:
    if not path.exists():
        raise RuntimeError(f"fixture missing: {path}")
    return path


# -- dump.txt ------------------------------------------------------------------------------


@dataclass
class DumpEvent:
    start: int
    end: int
    server_id: int
    type_code: int = -1
    crc: int | None = None


@dataclass
class DumpRows:
    op: str  # INSERT / UPDATE / DELETE
    table: str
    images: list[list[str]] = field(default_factory=list)


@dataclass
class Dump:
    events: list[DumpEvent]
    gtids: list[str]
    rows: list[DumpRows]


_HEAD = re.compile(
    r"^#\d{6} +\d+:\d\d:\d\d server id (\d+) +end_log_pos (\d+)(?: CRC32 0x([0-9a-f]+))?"
)
_GTID_NEXT = re.compile(r"^SET @@SESSION\.GTID_NEXT= '([^']+)'")
_ROW_OP = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) (\S+)$")
_VALUE = re.compile(r"^###   @(\d+)=(.*?)(?: /\* .* \*/)?$")


def parse_dump(path: Path) -> Dump:
    lines = path.read_text(encoding="utf-8").splitlines()
    events: list[DumpEvent] = []
    gtids: list[str] = []
    rows: list[DumpRows] = []
    image: list[str] | None = None
    crc: int | None = None
    for i, line in enumerate(lines):
        if h := _HEAD.match(line):
            crc = int(h[3], 16) if h[3] else None
            continue
        if line.startswith("# Position"):
            # The hex dump's header row is authoritative (mysqlbinlog prints
            # "# at" twice before INTVAR/RAND/USER_VAR, the second one wrong):
            # position | timestamp[4] | type | server_id[4] | size[4] | log_pos[4] | flags[2]
            cells = lines[i + 1].split()[1:]
            raw = bytes(int(c, 16) for c in cells[1:])
            _ts, type_code, server_id, _size, log_pos, _flags = struct.unpack("<IBIIIH", raw)
            events.append(DumpEvent(int(cells[0], 16), log_pos, server_id, type_code, crc))
            crc = None
            continue
        if (m := _GTID_NEXT.match(line)) and m[1] != "AUTOMATIC":
            gtids.append(m[1])  # AUTOMATIC: mysqlbinlog's trailer, no event
            continue
        if m := _ROW_OP.match(line):
            rows.append(DumpRows(m[1].split()[0], m[2].replace("`", "")))
            image = None
            continue
        if line in ("### SET", "### WHERE"):
            image = []
            rows[-1].images.append(image)
            continue
        if m := _VALUE.match(line):
            assert image is not None
            assert int(m[1]) == len(image) + 1
            image.append(m[2])
    return Dump(events, gtids, rows)


def mysqlbinlog_text(value: Any) -> str:
    """A decoded value as mysqlbinlog -v prints it."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        raise TypeError("no bools in row images")
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "\\'") + "'"
    if isinstance(value, bytes):
        return "'" + value.decode("latin-1") + "'"
    raise TypeError(f"no mysqlbinlog form for {type(value).__name__} in these fixtures")


DUMPS = sorted(_require(CDC).glob("*/*/dump.txt"))


def _binlog_beside(dump: Path) -> Path:
    files = [
        p for p in dump.parent.iterdir() if p.name == "log.bin" or p.name.startswith("binlog.")
    ]
    assert len(files) == 1, files
    return files[0]


def _events_with_positions(path: Path) -> list[tuple[int, int, rc.Event]]:
    out: list[tuple[int, int, rc.Event]] = []
    with rc.open_binlog(path) as reader:
        for event in reader:
            assert reader.event_position is not None and reader.position is not None
            out.append((reader.event_position.pos, reader.position.pos, event))
    return out


def _crc_of(path: Path, start: int, size: int) -> int:
    data = path.read_bytes()
    return int(struct.unpack_from("<I", data, start + size - 4)[0])


@pytest.mark.parametrize("dump_path", DUMPS, ids=lambda p: p.parent.relative_to(CDC).as_posix())
def test_dump_txt(dump_path: Path) -> None:
    dump = parse_dump(dump_path)
    binlog = _binlog_beside(dump_path)
    decoded = _events_with_positions(binlog)
    assert len(dump.events) == len(decoded) > 0
    for expected, (start, end, event) in zip(dump.events, decoded, strict=True):
        assert start == expected.start
        assert event.log_pos == expected.end == end  # a binlog, not a relay log
        assert event.type_code == expected.type_code
        assert event.server_id == expected.server_id
        if expected.crc is not None:
            assert _crc_of(binlog, start, event.header.event_size) == expected.crc

    gtids = [e.gtid or "ANONYMOUS" for _, _, e in decoded if isinstance(e, MysqlGtidEvent)]
    assert gtids == dump.gtids
    assert all(
        isinstance(e, AnonymousGtidEvent)
        for _, _, e in decoded
        if isinstance(e, MysqlGtidEvent) and e.gtid is None
    )

    row_events = [e for _, _, e in decoded if isinstance(e, rc.RowsEvent)]
    if not dump.rows:
        return  # this dump was made without -v
    decoded_rows: list[DumpRows] = []
    for ev in row_events:
        name = f"{ev.schema}.{ev.table_name}"
        if isinstance(ev, rc.UpdateRowsEvent):
            for before, after in ev.rows:
                decoded_rows.append(
                    DumpRows(
                        "UPDATE",
                        name,
                        [[mysqlbinlog_text(v) for v in img] for img in (before, after)],
                    )
                )
        else:
            op = "INSERT" if isinstance(ev, rc.WriteRowsEvent) else "DELETE"
            assert isinstance(ev, (rc.WriteRowsEvent, rc.DeleteRowsEvent))
            for row in ev.rows:
                decoded_rows.append(DumpRows(op, name, [[mysqlbinlog_text(v) for v in row]]))
    assert decoded_rows == dump.rows


def test_dump_txt_row_images_were_compared() -> None:
    total = 0
    for dump_path in DUMPS:
        total += sum(len(r.images) for r in parse_dump(dump_path).rows)
    assert total == 15  # row images printed with -v across the dumps


# -- show.txt --------------------------------------------------------------------------------

_SHOW_ROW = re.compile(r"^\| (\S+) +\| +(\d+) \| (\S+) +\| +(\d+) \| +(\d+) \|(.*)$")
_SHOW_NAMES = {
    "Format_desc": rc.FormatDescriptionEvent,
    "Previous_gtids": PreviousGtidsEvent,
    "Anonymous_Gtid": AnonymousGtidEvent,
    "Gtid": MysqlGtidEvent,
    "Query": rc.QueryEvent,
    "Table_map": rc.TableMapEvent,
    "Write_rows": rc.WriteRowsEvent,
    "Update_rows": rc.UpdateRowsEvent,
    "Delete_rows": rc.DeleteRowsEvent,
    "Xid": rc.XidEvent,
    "Rotate": rc.RotateEvent,
    "Stop": rc.StopEvent,
}

SHOWS = sorted(_require(CDC).glob("8.0/*/show.txt"))


@pytest.mark.parametrize("show_path", SHOWS, ids=lambda p: p.parent.name)
def test_show_binlog_events(show_path: Path) -> None:
    rows = [
        m
        for line in show_path.read_text(encoding="utf-8").splitlines()
        if (m := _SHOW_ROW.match(line))
    ]
    binlog = _binlog_beside(show_path)
    decoded = _events_with_positions(binlog)
    # 19_30's SHOW was taken after the server stopped, its binlog copy before:
    # the extra rows (a STOP) start at the copy's end, so they are not in it.
    extra = rows[len(decoded) :]
    assert all(int(m[2]) >= binlog.stat().st_size for m in extra)
    rows = rows[: len(decoded)]
    assert len(rows) == len(decoded) > 0
    for m, (start, end, event) in zip(rows, decoded, strict=True):
        log_name, pos, type_name, server_id, end_pos, info = m.groups()
        assert log_name == binlog.name
        assert (int(pos), int(end_pos), int(server_id)) == (start, end, event.server_id)
        assert type(event) is _SHOW_NAMES[type_name]
        info = info.strip().rstrip("|").strip()
        if isinstance(event, rc.XidEvent):
            assert info == f"COMMIT /* xid={event.xid} */"
        elif isinstance(event, rc.TableMapEvent):
            assert info == f"table_id: {event.table_id} ({event.schema}.{event.table})"
        elif isinstance(event, rc.RowsEvent):
            assert info.startswith(f"table_id: {event.table_id}")
            assert ("STMT_END_F" in info) == event.statement_end
        elif isinstance(event, rc.QueryEvent):
            first = event.query.splitlines()[0]
            assert first in info
            if event.schema and event.query != "BEGIN":
                assert info.startswith(f"use `{event.schema}`; ")
        elif isinstance(event, rc.FormatDescriptionEvent):
            assert info == f"Server ver: {event.server_version}, Binlog ver: {event.binlog_version}"
        elif isinstance(event, AnonymousGtidEvent):
            assert info == "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'"


# -- mariadb-operator metadata ----------------------------------------------------------------

MARIADB_OP = FIXTURES / "mariadb-operator-poc"


def _operator_metadata() -> dict[str, dict[str, str]]:
    text = _require(MARIADB_OP / "README.expected-metadata.md").read_text(encoding="utf-8")
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if m := re.match(r"Getting binlog metadata from binlogs/(\S+)", line):
            current = out.setdefault(m[1], {})
        elif current is not None and (m := re.match(r"(\w+): (.*)$", line)):
            current[m[1]] = m[2]
    return out


OPERATOR_FILES = sorted(p for p in (MARIADB_OP / "domain_id_0").iterdir())


@pytest.mark.parametrize("path", OPERATOR_FILES, ids=lambda p: p.name)
def test_mariadb_operator_metadata(path: Path) -> None:
    expected = _operator_metadata()[f"domain_id_0/{path.name}"]
    events = list(rc.open_binlog(path))
    fde = events[0]
    assert isinstance(fde, rc.FormatDescriptionEvent)
    assert fde.server_version == expected["ServerVersion"]
    assert str(fde.binlog_version) == expected["BinlogVersion"]
    assert fde.server_id == int(expected["ServerId"])
    assert path.stat().st_size == int(expected["LogPos"])

    def raw_ts(key: str) -> int:
        m = re.search(r"raw:(\d+)", expected[key])
        assert m is not None
        return int(m[1])

    assert events[0].timestamp == raw_ts("FirstTimestamp")
    assert events[-1].timestamp == raw_ts("LastTimestamp")
    lists = [e for e in events if isinstance(e, rc.GtidListEvent)]
    assert len(lists) == 1
    assert (lists[0].gtid_state or "<nil>") == expected["PreviousGTIDs"]
    gtids = [e.gtid for e in events if isinstance(e, rc.GtidEvent)]
    assert (gtids[0] if gtids else "<nil>") == expected["FirstGTID"]
    assert (gtids[-1] if gtids else "<nil>") == expected["LastGTID"]
    assert isinstance(events[-1], rc.RotateEvent) == (expected["RotateEvent"] == "true")
    assert isinstance(events[-1], rc.StopEvent) == (expected["StopEvent"] == "true")
    # GTIDs of a file are consecutive sequence numbers
    seqs = [e.seq_no for e in events if isinstance(e, rc.GtidEvent)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else True


# -- JSON partial update and transaction payloads ------------------------------------------------


def test_partial_json_update_gives_full_after_images() -> None:
    path = _require(FIXTURES / "rust_mysql_common" / "json.binlog.000001")
    docs: dict[int, Any] = {}
    partial: list[PartialUpdateRowsEvent] = []
    full_after: dict[int, Any] = {}
    for event in rc.open_binlog(path):
        if isinstance(event, PartialUpdateRowsEvent):
            partial.append(event)
            for (before, after), diffs in zip(event.rows, event.json_diffs, strict=True):
                key = before[0]
                value = after[1]
                assert isinstance(value, PartialJson)  # MINIMAL before image: no base
                assert diffs[1] == value.diffs
                docs[key] = apply_json_diffs(docs[key], value.diffs)
                full_after[key] = (docs[key], after[2], after[3])
        elif isinstance(event, rc.WriteRowsEvent):
            for row in event.rows:
                docs[row[0]] = row[1]
        elif isinstance(event, rc.UpdateRowsEvent):
            for _, after in event.rows:
                docs[after[0]] = after[1]
    assert len(partial) == 1
    assert len(full_after) == 6
    for doc, name, age in full_after.values():
        # the JSON document agrees with the plain columns updated alongside it
        assert doc["name"] == name and doc["age"] == age
    assert full_after[1][0] == {"age": 26, "data": "xxxxxxxxxx", "name": "Joe"}


PAYLOAD_FILES = [
    "osheroff-mysql-binlog-connector-java/mysql-bin.compressed",
    "apecloud-mysql-binlog-connector-rust/mysql-bin.000057",
    "rust_mysql_common/transaction_compression.000001",
]


@pytest.mark.parametrize("name", PAYLOAD_FILES)
def test_transaction_payload_yields_inner_rows_in_place(name: str) -> None:
    path = _require(FIXTURES / name)
    events = list(rc.open_binlog(path))
    payloads = [i for i, e in enumerate(events) if isinstance(e, TransactionPayloadEvent)]
    assert payloads
    for i in payloads:
        payload = events[i]
        assert isinstance(payload, TransactionPayloadEvent)
        inner = list(payload.events)
        assert events[i + 1 : i + 1 + len(inner)] == inner
        assert any(isinstance(e, rc.RowsEvent) for e in inner)
        assert isinstance(inner[-1], (rc.XidEvent, rc.QueryEvent))
        assert payload.uncompressed_size == sum(e.header.event_size for e in inner)
    changes = list(rc.iter_changes(events))
    assert changes
    if name.endswith("mysql-bin.compressed"):
        assert [c.op for c in changes] == ["update"]
        assert [type(e).__name__ for e in events[payloads[0] + 1 : payloads[0] + 5]] == [
            "QueryEvent",
            "TableMapEvent",
            "UpdateRowsEvent",
            "XidEvent",
        ]
    if name.endswith("000057"):
        gtid_changes = {c.gtid for c in changes}
        assert None not in gtid_changes and all(":" in g for g in gtid_changes if g)


def test_mysql_gtids_reach_changes() -> None:
    path = _require(FIXTURES / "rust_mysql_common" / "binlog_transaction_with_GTID_TAG.000001")
    changes = list(rc.iter_changes(rc.open_binlog(path)))
    assert [(c.op, c.gtid, c.after) for c in changes] == [
        (
            "insert",
            "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3",
            {"@1": 3, "@2": 100, "@3": Decimal("250.00")},
        )
    ]
    prev = [e for e in rc.open_binlog(path) if isinstance(e, PreviousGtidsEvent)]
    assert prev[0].gtid_set == (
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13,55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:1-2"
    )


def test_time2_hour_beyond_255() -> None:
    path = _require(FIXTURES / "rust_mysql_common" / "time_issue.000001")
    rows = [e for e in rc.open_binlog(path) if isinstance(e, rc.WriteRowsEvent)]
    assert rows[0].rows == ((-dt.timedelta(hours=507, minutes=48, seconds=27),),)
