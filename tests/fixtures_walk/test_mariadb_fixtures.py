"""The MariaDB binlog fixtures decode to their end, checksums verified, and match
what other tools printed about them.

Files: ``mariadb-operator-poc/domain_id_0/*`` (MariaDB 11.8.5),
``pollen-plus-desktop-mariadb103/*`` (10.3.14) and
``rust_mysql_common/mariadb-bin.000001`` (10.5.15), from the fixtures
directory ``tests/data/binlogs``. The expected
values are read from the files that came with them, never retyped here:

- ``mariadb-operator-poc/README.expected-metadata.md``: per-file metadata printed
  by that project's own Go tool (server id and version, LogPos = file size,
  first/last timestamps, the GTID_LIST "PreviousGTIDs", first/last GTID, and
  whether the file ends with ROTATE or STOP);
- ``MANIFEST.md``: per-file size, FDE server version, checksum algorithm and the
  count of each event type, from an independent scan of the bytes.

A missing fixtures directory fails the tests: they never skip.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.binlog.constants import EventType
from replica_client.binlog.events import (
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    GtidListEvent,
    RotateEvent,
    StopEvent,
    WriteRowsEvent,
)
from tests.binlog_files import FIXTURES

POC = "mariadb-operator-poc"
README = FIXTURES / POC / "README.expected-metadata.md"
MANIFEST = FIXTURES / "MANIFEST.md"

MARIADB_FILES = [
    f"{POC}/domain_id_0/mariadb-repl-bin.000001",
    f"{POC}/domain_id_0/mariadb-repl-bin.000004",
    f"{POC}/domain_id_0/mariadb-repl-bin.000005",
    "pollen-plus-desktop-mariadb103/mysql-bin.000004",
    "pollen-plus-desktop-mariadb103/mysql-bin.000007",
    "pollen-plus-desktop-mariadb103/mysql-bin.000009",
    "rust_mysql_common/mariadb-bin.000001",
]

#: The manifest's event names for the MariaDB event types.
MANIFEST_NAMES: dict[int, str] = {
    EventType.QUERY_EVENT: "QUERY",
    EventType.STOP_EVENT: "STOP",
    EventType.ROTATE_EVENT: "ROTATE",
    EventType.FORMAT_DESCRIPTION_EVENT: "FDE",
    EventType.XID_EVENT: "XID",
    EventType.TABLE_MAP_EVENT: "TABLE_MAP",
    EventType.WRITE_ROWS_EVENT_V1: "WRITE_ROWS_V1",
    EventType.UPDATE_ROWS_EVENT_V1: "UPDATE_ROWS_V1",
    EventType.DELETE_ROWS_EVENT_V1: "DELETE_ROWS_V1",
    EventType.ANNOTATE_ROWS_EVENT: "MARIA_ANNOTATE_ROWS",
    EventType.BINLOG_CHECKPOINT_EVENT: "MARIA_BINLOG_CHECKPOINT",
    EventType.GTID_EVENT: "MARIA_GTID",
    EventType.GTID_LIST_EVENT: "MARIA_GTID_LIST",
}


def test_fixtures_directory_is_present() -> None:
    assert FIXTURES.is_dir(), f"binlog fixtures missing: expected them at {FIXTURES}"
    assert README.is_file() and MANIFEST.is_file()
    for rel in MARIADB_FILES:
        assert (FIXTURES / rel).is_file(), rel


# -- what the fixtures' own documents say --------------------------------------------


def parse_readme(text: str) -> dict[str, dict[str, str]]:
    """``Getting binlog metadata from <path>`` blocks -> file name -> {key: value}."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        m = re.match(r"Getting binlog metadata from (\S+)", line)
        if m:
            current = out.setdefault(Path(m[1]).name, {})
            continue
        m = re.match(r"(\w+): (.*)$", line.strip())
        if current is not None and m and m[1] != "Got":
            current[m[1]] = m[2].strip()
    return out


@dataclass(frozen=True)
class ManifestRow:
    size: int
    server: str
    checksum: str
    events: dict[str, int]
    notes: str


def parse_manifest(text: str) -> dict[str, ManifestRow]:
    """The per-file tables of MANIFEST.md -> ``section/file`` -> row."""
    out: dict[str, ManifestRow] = {}
    section = ""
    for line in text.splitlines():
        m = re.match(r"### `([^`]+)/`", line)
        if m:
            section = m[1]
            continue
        m = re.match(r"\| `([^`]+)` \| (\d+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| (.*) \|$", line)
        if m and section:
            events = {
                name: int(count) for name, count in re.findall(r"([A-Z0-9_]+)\u00d7(\d+)", m[5])
            }
            out[f"{section}/{m[1]}"] = ManifestRow(
                int(m[2]), m[3].strip(), m[4].strip(), events, m[6]
            )
    return out


def _raw(value: str) -> int:
    m = re.search(r"raw:(\d+)", value)
    assert m, value
    return int(m[1])


def _gtid_or_none(value: str) -> str | None:
    return None if value == "<nil>" else value


@pytest.fixture(scope="module")
def readme() -> dict[str, dict[str, str]]:
    return parse_readme(README.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def manifest() -> dict[str, ManifestRow]:
    return parse_manifest(MANIFEST.read_text(encoding="utf-8"))


def _decode(path: Path) -> list[Event]:
    with rc.open_binlog(path, verify_checksum=True) as reader:
        return list(reader)


def test_readme_parses(readme: dict[str, dict[str, str]]) -> None:
    # Ten files of domain 0 are described, three of them are stored here.
    assert len(readme) >= 10
    stored = sorted(p.name for p in (FIXTURES / POC / "domain_id_0").iterdir())
    assert stored and set(stored) <= set(readme)
    for name in stored:
        assert {"LogPos", "FirstGTID", "LastGTID", "PreviousGTIDs", "StopEvent"} <= set(
            readme[name]
        )


# -- the operator-poc files against the README ------------------------------------------


@pytest.mark.parametrize("rel", [f for f in MARIADB_FILES if f.startswith(POC)])
def test_operator_poc_metadata_matches_readme(rel: str, readme: dict[str, dict[str, str]]) -> None:
    path = FIXTURES / rel
    expected = readme[path.name]
    events = _decode(path)
    fde = events[0]
    assert isinstance(fde, FormatDescriptionEvent)
    assert str(fde.server_id) == expected["ServerId"]
    assert fde.server_version == expected["ServerVersion"]
    assert str(fde.binlog_version) == expected["BinlogVersion"]
    # LogPos: the last event ends where the file ends.
    assert str(events[-1].log_pos) == expected["LogPos"] == str(path.stat().st_size)
    assert events[0].timestamp == _raw(expected["FirstTimestamp"])
    assert events[-1].timestamp == _raw(expected["LastTimestamp"])
    lists = [e for e in events if isinstance(e, GtidListEvent)]
    assert len(lists) == 1
    assert (lists[0].gtid_state or None) == _gtid_or_none(expected["PreviousGTIDs"])
    gtids = [e.gtid for e in events if isinstance(e, GtidEvent)]
    assert (gtids[0] if gtids else None) == _gtid_or_none(expected["FirstGTID"])
    assert (gtids[-1] if gtids else None) == _gtid_or_none(expected["LastGTID"])
    assert str(isinstance(events[-1], RotateEvent)).lower() == expected["RotateEvent"]
    assert str(isinstance(events[-1], StopEvent)).lower() == expected["StopEvent"]
    # The sequence numbers between first and last have no gap.
    seqs = [e.seq_no for e in events if isinstance(e, GtidEvent)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else not gtids


def test_operator_poc_directory_reads_across_files(readme: dict[str, dict[str, str]]) -> None:
    directory = FIXTURES / POC / "domain_id_0"
    files: list[str] = []
    gtid_lists: dict[str, str] = {}
    last_gtid: dict[str, str] = {}
    with rc.open_binlog(directory) as reader:
        for event in reader:
            assert reader.event_position is not None
            name = reader.event_position.file
            if not files or files[-1] != name:
                files.append(name)
            if isinstance(event, GtidListEvent):
                gtid_lists[name] = event.gtid_state
            if isinstance(event, GtidEvent):
                last_gtid[name] = event.gtid
    assert files == sorted(p.name for p in directory.iterdir())
    # Where two stored files are consecutive, the later one's GTID_LIST is the
    # earlier one's last GTID (and both agree with the README).
    for earlier, later in itertools.pairwise(files):
        if int(later.rsplit(".", 1)[1]) == int(earlier.rsplit(".", 1)[1]) + 1:
            assert gtid_lists[later] == last_gtid[earlier] == readme[earlier]["LastGTID"]


# -- every MariaDB fixture against the manifest -------------------------------------------


@pytest.mark.parametrize("rel", MARIADB_FILES)
def test_fixture_decodes_to_the_end_as_the_manifest_says(
    rel: str, manifest: dict[str, ManifestRow]
) -> None:
    path = FIXTURES / rel
    row = manifest[rel]
    assert path.stat().st_size == row.size
    events = _decode(path)
    fde = events[0]
    assert isinstance(fde, FormatDescriptionEvent)
    assert fde.server_version == row.server
    assert row.checksum == "CRC32" and fde.checksum_alg == 1
    counts = Counter(MANIFEST_NAMES.get(e.type_code, f"type {e.type_code}") for e in events)
    assert dict(counts) == row.events
    # Every event's log_pos is where the next one starts (MariaDB 11.4+ writes 0
    # inside a transaction); the last event ends the file.
    version = tuple(int(x) for x in re.findall(r"\d+", fde.server_version)[:2])
    zero = 0
    with rc.open_binlog(path) as reader:
        for event in reader:
            assert reader.position is not None
            assert event.log_pos in (0, reader.position.pos)
            zero += int(event.log_pos == 0)
            if isinstance(event, GtidEvent):
                assert event.log_pos == reader.position.pos
    assert zero == 0 or version >= (11, 4)
    assert events[-1].log_pos == row.size
    # The log-in-use flag is set exactly where the manifest saw it.
    assert bool(fde.header.flags & 0x1) == ("IN_USE" in row.notes)


def test_rows_of_the_10_5_fixture_become_changes() -> None:
    path = FIXTURES / "rust_mysql_common/mariadb-bin.000001"
    with rc.open_binlog(path) as reader:
        events = list(reader)
    with rc.open_binlog(path) as reader:
        changes = list(rc.iter_changes(reader))
    rows = [e for e in events if isinstance(e, WriteRowsEvent)]
    assert len(changes) == sum(len(e.rows) for e in rows) > 0
    gtids = [e.gtid for e in events if isinstance(e, GtidEvent)]
    assert [c.gtid for c in changes if c.gtid is not None] and all(c.gtid in gtids for c in changes)
    for change, event in zip(changes, (e for e in rows for _ in e.rows), strict=True):
        assert (change.schema, change.table) == (event.table.schema, event.table.table)
        assert change.op == "insert"
        assert change.timestamp == event.datetime
        # FULL metadata: the images are keyed by the real column names.
        names = {c.name for c in event.table.columns}
        assert change.after is not None and set(change.after) == names
