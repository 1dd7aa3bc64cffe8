"""Every real binlog under tests/data/binlogs decodes to its end.

The fixtures are server-written MySQL 5.0.16 ... 9.6.0, Percona, Aurora and
MariaDB 10.3 / 10.5 / 11.8 binlogs and relay logs (see their MANIFEST.md).
Each file is read with ``rc.open_binlog`` with CRC32 verification on; the
reader must stop exactly at the end of the file. The deliberate negative cases
raise the typed error named below, at the position named below.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections import Counter
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.binlog.constants import BinlogChecksumAlg, EventType
from replica_client.binlog.events import TransactionPayloadEvent
from replica_client.config import DecoderOptions
from replica_client.files import BinlogFileReader, file_spans
from tests.binlog_files import FIXTURES

_SIDECARS = {".md", ".txt", ".sql"}

#: file -> (exception type, position of the failing event or None).
NEGATIVE: dict[str, tuple[type[rc.ReplicaError], int | None]] = {
    # MANIFEST: magic + 10 bytes, the first header is cut.
    "rust_mysql_common/binlog_truncated_event.000001": (rc.TruncatedBinlogError, 4),
    # MANIFEST: FDE then a PREVIOUS_GTIDS cut after 9 bytes.
    "rust_mysql_common/binlog_truncated_prev_gtid_event.000001": (rc.TruncatedBinlogError, 120),
    # MANIFEST: the leading 0xFE was turned into U+FFFD by a text conversion.
    "canal/tsdb/mysql-bin.000001": (rc.MalformedEventError, 0),
    # MANIFEST: a PEM public key.
    "apecloud-mysql-binlog-connector-rust/non-binlog": (rc.MalformedEventError, 0),
    # The MySQL test suite's corrupt relay log: it frames cleanly, but the QUERY
    # event at 91204 has its post-header overwritten with text (its status-vars
    # length says 16949 bytes in a 171-byte event).
    "rust_mysql_common/corrupt-relay-bin.000624": (rc.MalformedEventError, 91204),
}


def _binlog_files() -> list[Path]:
    if not FIXTURES.is_dir():
        raise RuntimeError(f"binlog fixtures missing: {FIXTURES} (see the project README)")
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix not in _SIDECARS)


FILES = _binlog_files()


def _id(p: Path) -> str:
    return p.relative_to(FIXTURES).as_posix()


def test_fixture_set_is_complete() -> None:
    # 137 files including MANIFEST.md and the sidecar text files.
    assert len([p for p in FIXTURES.rglob("*") if p.is_file()]) == 137
    assert len(FILES) == 84
    assert set(NEGATIVE) <= {_id(p) for p in FILES}


def _size(path: Path) -> int:
    if path.suffix == ".gz":
        import gzip

        with gzip.open(path, "rb") as f:
            return len(f.read())
    return path.stat().st_size


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_binlog_decodes_to_the_end(path: Path) -> None:
    name = _id(path)
    reader = rc.open_binlog(path)
    events: list[rc.Event] = []
    if name in NEGATIVE:
        error, position = NEGATIVE[name]
        with pytest.raises(error) as info:
            events.extend(reader)
        assert type(info.value) is error
        assert isinstance(info.value, rc.MalformedEventError)
        assert info.value.position == position
        if name.endswith("corrupt-relay-bin.000624"):
            assert len(events) == 872
            assert info.value.event_type == EventType.QUERY_EVENT
        return
    events.extend(reader)
    assert events, "no events decoded"
    assert reader.position is not None
    assert reader.position.pos == _size(path), "reading stopped before the end"
    first = events[0]
    if isinstance(first, rc.FormatDescriptionEvent):
        # Checksums were verified wherever the server wrote them.
        assert reader.decoder.checksum_alg in (
            BinlogChecksumAlg.CRC32,
            BinlogChecksumAlg.OFF,
            BinlogChecksumAlg.UNDEF,
        )
    # Nothing is skipped: every event of the file has a typed class; only the
    # ignorable Aurora event is an UnknownEvent.
    unknown = [e for e in events if isinstance(e, rc.UnknownEvent)]
    if name.endswith("aurora-padding"):
        assert [e.type_code for e in unknown] == [100]
    else:
        assert unknown == []


def test_totals() -> None:
    """A summary that fails if a file silently decodes to fewer events."""
    counts: Counter[str] = Counter()
    for path in FILES:
        if _id(path) in NEGATIVE:
            continue
        for event in rc.open_binlog(path):
            counts[type(event).__name__] += 1
            if isinstance(event, TransactionPayloadEvent):
                counts["inner"] += len(event.events)
    assert counts["FormatDescriptionEvent"] == 82  # 77 files, 5 relay logs with two
    assert counts["TransactionPayloadEvent"] == 4
    assert counts["inner"] == 21  # also counted by type: yielded in place
    assert counts["PartialUpdateRowsEvent"] == 1
    assert counts["MysqlGtidEvent"] == 199
    assert counts["AnonymousGtidEvent"] == 923
    assert counts["PreviousGtidsEvent"] == 53
    assert counts["IncidentEvent"] == 1
    assert counts["StartEventV3"] == 0  # no v1/v3 fixture: see tests/binlog/test_legacy.py
    assert sum(counts.values()) - counts["inner"] == 11297


# -- spans: one file read by several tasks (the Spark batch source) --------------------


def _read_span(path: Path, span: tuple[int, int] | None) -> list[tuple[object, ...]]:
    with BinlogFileReader([path], DecoderOptions(), span=span) as reader:
        return [
            (reader.event_position, type(event).__name__, repr(getattr(event, "rows", None)))
            for event in reader
        ]


@pytest.mark.parametrize("path", [p for p in FILES if _id(p) not in NEGATIVE], ids=_id)
def test_spans_that_tile_a_file_read_each_event_once(path: Path) -> None:
    whole = _read_span(path, None)
    size = _size(path)
    for span_bytes in (size // 2, size // 3, size // 7, 2048, 1):
        spans = file_spans(path, max(span_bytes, 1))
        assert spans[0][0] == 0 and spans[-1][1] == size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        read = [_read_span(path, span) for span in spans]
        assert [event for events in read for event in events] == whole, span_bytes
        # each span after the first starts at a transaction's GTID event
        for (lo, _), events in zip(spans[1:], read[1:], strict=True):
            assert events[0][1] in _OPENS_TRANSACTION
            assert events[0][0] == rc.FilePos(path.name.removesuffix(".gz"), lo)


_OPENS_TRANSACTION = {"GtidEvent", "MysqlGtidEvent", "AnonymousGtidEvent"}


def test_files_are_cut_where_a_transaction_starts_after_the_span_size() -> None:
    # Cut in two exactly when a GTID event starts in the second half, the file
    # has one FORMAT_DESCRIPTION_EVENT (not a relay log) and is not encrypted.
    cut = 0
    for path in FILES:
        if _id(path) in NEGATIVE:
            continue
        size = _size(path)
        events = _read_span(path, None)
        opens = [
            where.pos
            for where, kind, _ in events
            if kind in _OPENS_TRANSACTION and isinstance(where, rc.FilePos)
        ]
        fdes = sum(kind == "FormatDescriptionEvent" for _, kind, _ in events)
        spans = file_spans(path, size // 2)
        expected = fdes == 1 and any(pos >= size // 2 for pos in opens)
        assert len(spans) == (2 if expected else 1), _id(path)
        cut += expected
        if expected:  # a span must start at a transaction: anything else is refused
            lo, hi = spans[1]
            with pytest.raises(rc.ConfigError, match=f"no transaction starts at {lo + 1}"):
                _read_span(path, (lo + 1, hi))
    assert cut == 38


# -- the vendor event policy -------------------------------------------------------------

AURORA = FIXTURES / "osheroff-mysql-binlog-connector-java" / "mysql-bin.aurora-padding"
_AURORA_EVENT_AT = 281


def _aurora_without_ignorable_flag(tmp_path: Path) -> Path:
    data = bytearray(AURORA.read_bytes())
    pos = _AURORA_EVENT_AT
    assert data[pos + 4] == 100
    size = struct.unpack_from("<I", data, pos + 9)[0]
    flags = struct.unpack_from("<H", data, pos + 17)[0]
    assert flags & 0x80
    struct.pack_into("<H", data, pos + 17, flags & ~0x80)
    end = pos + size - 4
    struct.pack_into("<I", data, end, zlib.crc32(data[pos:end]))
    out = tmp_path / "aurora-unflagged"
    out.write_bytes(bytes(data))
    return out


def test_aurora_type_100_is_kept_because_it_is_ignorable() -> None:
    events = list(rc.open_binlog(AURORA))
    vendor = [e for e in events if isinstance(e, rc.UnknownEvent)]
    assert len(vendor) == 1
    assert vendor[0].type_code == 100
    assert vendor[0].header.flags & 0x80
    assert len(vendor[0].body) == 928 - 19 - 4


def test_unflagged_vendor_event_is_an_error_unless_kept(tmp_path: Path) -> None:
    path = _aurora_without_ignorable_flag(tmp_path)
    with pytest.raises(rc.UnknownEventError) as info:
        list(rc.open_binlog(path))
    assert info.value.event_type == 100
    assert info.value.position == _AURORA_EVENT_AT
    kept = list(rc.open_binlog(path, options=rc.DecoderOptions(unknown_events="keep")))
    vendor = [e for e in kept if isinstance(e, rc.UnknownEvent)]
    assert [e.type_code for e in vendor] == [100]
    with pytest.raises(rc.ConfigError):
        rc.DecoderOptions(unknown_events="skip")
